/* bound_zero.c: ZeRO-2/3's terms of the step's lower bound (see
 * bound_zero.h and bound.h: what they charge and why each is a bound). */
#include "bound_zero.h"

#include "bound.h"
#include "bound_geom.h"
#include "memory.h"
#include "placement.h"

static double dmax(double a, double b) { return a > b ? a : b; }

/* One layer's ZeRO-2/3 all-gather of its weights (*ag1) and reduce-scatter
 * of its gradients (*rs1) at the DP-collective bound; 0 where the layout
 * has none (ZeRO 0-1, no DP, or CP, which ZeRO-2/3 refuse). */
int oc_bound_zero_layer_colls(const struct oc_model *m, const struct oc_layout *l,
                            const struct oc_topology *t, int forced, double *ag1,
                            double *rs1)
{
    *ag1 = *rs1 = 0;
    if (l->zero < 2 || l->dp < 2 || l->cp > 1)
        return 0;
    struct oc_bound_geom g;
    oc_bound_dp_geom(l, t, &g);
    const struct oc_mem_param_bytes pb = oc_mem_param_bytes(l);
    const double P = (double)oc_model_layer_params_tp(m, l->tp);
    struct oc_layout a = *l;
    /* forced: one stage's own group (its NICs, oc_bound_dp_geom's share); else summed
     * over the stages that share a node (its NICs, plain groups) */
    const double share = forced ? g.share : (double)g.groups;
    if (!forced)
        a.coll = OC_COLL_CHOICE_AUTO;
    *ag1 = oc_bound_forced_coll_s(&a, t, 1, pb.weight * P, l->dp, g.per_node, share);
    *rs1 = oc_bound_forced_coll_s(&a, t, 1, pb.grad * P, l->dp, g.per_node, share);
    return 1;
}

/* The forced tree's ZeRO-2/3 unit collectives summed on the links, under
 * overlap (`units` layer units of every micro-batch): the reduce-scatters
 * (stream 1) and ZeRO-3's gathers (stream 0) run at once, and the tree's
 * root leader's NIC carries them in opposite directions: a reduce-scatter
 * takes c S in and sends (N - per_node)/N S out, an all-gather the
 * reverse (oc_bound_forced_coll_s, whose per-collective term adds the two
 * phases, one after the other). So the sum is bounded per direction: the
 * larger of the bytes in and the bytes out over the flow's hop (with the
 * tree term's margin), and at least the sum of the DP-collective bounds
 * (each direction of a node's NICs carries that much of every
 * collective). Charging the two phases' sum of every collective went 1.2 %
 * over the simulation of gpt3-1.3b tp2-pp4-dp2-mb1-v2-first4-last4 zero3
 * coll=tree order=tp-pp-dp on 16 dgx-a100 (tools/check-bound.sh). */
static double zero_tree_sum_s(const struct oc_model *m, const struct oc_layout *l,
                              const struct oc_topology *t, double units)
{
    struct oc_bound_geom g;
    oc_bound_dp_geom(l, t, &g);
    const struct oc_mem_param_bytes pb = oc_mem_param_bytes(l);
    const double P = (double)oc_model_layer_params_tp(m, l->tp);
    const double Sg = pb.grad * P, Sw = pb.weight * P, z3 = l->zero == 3 ? 2.0 : 0.0;
    const int64_t n = l->dp, nodes = (n + g.per_node - 1) / g.per_node;
    const double py = units * (oc_bound_group_coll_s(t, 1, Sg, n, g.per_node, g.share) +
                               z3 * oc_bound_group_coll_s(t, 1, Sw, n, g.per_node, g.share));
    const double hop = oc_bound_flow_Bps(t, g.share);
    if (nodes < 2 || !(hop > 0))
        return py;
    const double c = nodes >= 3 ? 2.0 : 1.0, f = (double)(n - g.per_node) / (double)n;
    const double in = units * (c * Sg + z3 * f * Sw), out = units * (f * Sg + z3 * c * Sw);
    return dmax(py, OC_BOUND_TREE_SAFETY * dmax(in, out) / hop);
}

/* ZeRO-2/3 (core/schedule_zero.h): the DP collectives of layer units
 * every micro-batch, of the stage's layers (its extra unit not counted).
 * *blocking_s gets those on the compute stream: without overlap every
 * gather and reduce-scatter; with it, the first layer's gather of every
 * (micro-batch, chunk, direction) under ZeRO-3. Returns the bound of all of
 * them on the DP links, which they share (a throughput bound: the sum of
 * each collective's bytes over the capacity it must cross). */
double oc_bound_zero_units_s(const struct oc_model *m, const struct oc_layout *l,
                           const struct oc_topology *t, const int64_t *nl, int64_t stage,
                           int forced, double *blocking_s)
{
    *blocking_s = 0;
    double ag1, rs1;
    if (!oc_bound_zero_layer_colls(m, l, t, forced, &ag1, &rs1))
        return 0;
    const int64_t nmb = oc_layout_num_micro_batches(l), v = oc_place_chunks_per_stage(l);
    double all = 0, layers = 0;
    for (int64_t ch = 0; ch < v; ch++) {
        const int64_t n = nl[stage * v + ch];
        if (n < 1)
            continue;
        layers += (double)n;
        const double per_mb = (double)n * (rs1 + (l->zero == 3 ? 2 * ag1 : 0));
        all += (double)nmb * per_mb;
        if (!l->overlap_grad_reduce)
            *blocking_s += (double)nmb * per_mb;
        else if (l->zero == 3)
            *blocking_s += (double)nmb * 2 * ag1;
    }
    if (forced && l->coll == OC_COLL_CHOICE_TREE && l->overlap_grad_reduce)
        all = zero_tree_sum_s(m, l, t, (double)nmb * layers);
    return all;
}

double oc_bound_zero_blocking_s(const struct oc_model *m, const struct oc_layout *l,
                              const struct oc_topology *t, const int64_t *nl, int64_t stage)
{
    double b;
    oc_bound_zero_units_s(m, l, t, nl, stage, 1, &b);
    return b;
}

/* ZeRO-2/3's unit collectives of local chunk `ch` that block the compute
 * stream, per micro-batch, in the forward (*zf) and the backward (*zb):
 * zero_units_s's blocking terms by direction (ZeRO-3 gathers a layer's
 * parameters before its forward and again before its backward; ZeRO-2/3
 * reduce-scatter its gradients after its backward). */
void oc_bound_zero_chunk_s(const struct oc_model *m, const struct oc_layout *l,
                         const struct oc_topology *t, int64_t n, double *zf, double *zb)
{
    *zf = *zb = 0;
    double ag1, rs1;
    if (n < 1 || !oc_bound_zero_layer_colls(m, l, t, 1, &ag1, &rs1))
        return;
    if (!l->overlap_grad_reduce) {
        *zf = l->zero == 3 ? (double)n * ag1 : 0;
        *zb = (double)n * (rs1 + (l->zero == 3 ? ag1 : 0));
    } else if (l->zero == 3) {
        *zf = *zb = ag1;
    }
}

