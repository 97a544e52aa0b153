/* bound.c: the closed-form lower bound of a layout's simulated step time
 * (see bound.h for what it charges and why each term is a lower bound). */
#include "bound.h"

#include "compress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bound_geom.h"
#include "bound_walk.h"
#include "bound_zero.h"
#include "cost.h"
#include "mbsplit.h"
#include "memory.h"
#include "placement.h"
#include "schedule.h"
#include "schedule_bucket.h"
#include "schedule_cp.h"
#include "tp_overlap.h"

static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

/* Gradient compression and local SGD (compress.h) replace the DP
 * gradient reduction by their own exchange (fewer bytes, another
 * collective): the bound then counts no DP gradient term at all (0 is a
 * lower bound of any exchange); the distributed optimizer's weight
 * all-gather and the optimizer step stay. 1 where the terms below hold. */
static int dp_grads_bounded(const struct oc_layout *l) { return !oc_gc_on(l); }
static double dmax(double a, double b) { return a > b ? a : b; }

/* Whether the step ends with the distributed optimizer's all-gather of the
 * updated weights over DP, after the optimizer (core/schedule.c, emit_rank):
 * ZeRO-1 unless --overlap-param-gather moves it into the next forward,
 * ZeRO-2 always (ZeRO-3 gathers per unit in the next step). */
static int weights_gathered(const struct oc_layout *l)
{
    return (l->zero == 1 && !l->overlap_param_gather) || (l->zero == 2 && l->dp > 1);
}

/* What an all-reduce over n members of one node moves per member, in
 * buffers: the ring's 2(n-1)/n, or where the switch reduces (NVLS,
 * sim/coll_nvls.c) the (n+1)/n it needs, whichever is less. */
static double node_allreduce_moved(const struct oc_topology *t, int64_t n)
{
    const double ring = 2.0 * (double)(n - 1) / (double)n;
    const double nvls = (double)(n + 1) / (double)n;
    return t->intra_nvls && nvls < ring ? nvls : ring;
}

double oc_bound_group_coll_s(const struct oc_topology *t, int kind, double bytes,
                             int64_t n, int64_t per_node, double groups_per_node)
{
    if (n < 2 || bytes <= 0)
        return 0;
    if (per_node < 1)
        per_node = 1;
    if (!(groups_per_node >= 1))
        groups_per_node = 1;
    /* Patarasuk and Yuan 2009: an all-reduce sends and receives at least
     * 2(N-1)/N * S per member over its link; a reduce-scatter or an
     * all-gather (N-1)/N * S (each member's 1/N of the result needs the
     * other N-1 members' parts of it, or gives its part to them). Across
     * nodes, the node as one member (its reduction inside is free): its
     * NICs carry at least that with G nodes for N. Any algorithm moves as
     * much, save NVLS inside a node (node_allreduce_moved): ring, tree and
     * hierarchical alike. */
    const double moved = kind == 0 ? 2.0 : 1.0;
    const int64_t nodes = (n + per_node - 1) / per_node;
    double s;
    if (nodes <= 1) {
        s = (kind == 0 ? node_allreduce_moved(t, n) : (double)(n - 1) / (double)n) * bytes /
            oc_topology_intra_Bps(t);
    } else {
        /* The node as one member whose reduction inside is free: G members
         * on the node's NICs, shared by the groups leaving it at once. */
        const double node_Bps = (double)t->nics_per_node * t->nic_bandwidth_Bps /
                                groups_per_node;
        s = moved * (double)(nodes - 1) / (double)nodes * bytes / node_Bps;
    }
    return OC_BOUND_COMM_SAFETY * s;
}

/* The same collective under the layout's forced algorithm (bound.h): at
 * least oc_bound_group_coll_s, and where the group spans nodes, what the
 * forced algorithm's own route must carry over one flow between nodes,
 * at most one NIC (and the node's NICs shared by the groups leaving it
 * at once; no oversubscription: sim/platform.c gives a lone flow the
 * whole NIC):
 *   ring  every hop of the flat ring carries 2(N-1)/N * S for an
 *         all-reduce, (N-1)/N * S for a reduce-scatter or all-gather
 *         (coll_ring.c), and some hop leaves a node;
 *   tree  a binary tree of the nodes' leaders (node k's children 2k+1
 *         and 2k+2, coll_tree.c), whose root runs its two phases one
 *         after the other: it posts its first broadcast or scatter
 *         message only once its reduce or gather has taken every chunk
 *         from its children (tree_run: the reduce loop, then the
 *         broadcast loop). With c = min(2, nodes - 1) children leaders,
 *         through the root leader's NIC: an all-reduce takes c S in
 *         (reduce), then sends c S out (broadcast): 2 S on 2 nodes, 4 S
 *         from 3; a reduce-scatter takes c S in, then scatters the shards
 *         of every member outside the root's node, at least
 *         (N - per_node) / N S out; an all-gather gathers those shards in,
 *         then broadcasts c S out. The group's nodes counted at their
 *         fewest, ceil(N / per_node): the factor only grows with nodes.
 * Automatic and hierarchical: oc_bound_group_coll_s alone. Valid for one
 * group's collectives, one after the other or summed (they cross the same
 * hop); not for the sum over the groups of several stages (other rings,
 * other NICs: node_share_s keeps the node's capacity bound). */
double oc_bound_forced_coll_s(const struct oc_layout *l, const struct oc_topology *t, int kind,
                              double bytes, int64_t n, int64_t per_node, double groups)
{
    const double py = oc_bound_group_coll_s(t, kind, bytes, n, per_node, groups);
    if (n < 2 || bytes <= 0 || per_node < 1 ||
        (l->coll != OC_COLL_CHOICE_RING && l->coll != OC_COLL_CHOICE_TREE))
        return py;
    if ((n + per_node - 1) / per_node < 2) /* inside one node: as auto's */
        return py;
    const double hop = oc_bound_flow_Bps(t, groups);
    if (!(hop > 0))
        return py;
    const double moved = kind == 0 ? 2.0 : 1.0;
    const int64_t nodes = (n + per_node - 1) / per_node;
    const double c = nodes >= 3 ? 2.0 : 1.0; /* the root's children leaders */
    const double through = kind == 0 ? 2.0 * c
                                     : c + (double)(n - per_node) / (double)n;
    const double s = l->coll == OC_COLL_CHOICE_RING
                         ? OC_BOUND_COMM_SAFETY * moved * (double)(n - 1) / (double)n * bytes / hop
                         : OC_BOUND_TREE_SAFETY * through * bytes / hop; /* bound.h */
    return dmax(py, s);
}

/* Layers of chunk ch of `stage` whose gradients surely start their DP
 * reduction after the chunk's last backward: all of them, but under
 * --overlap-grad-reduce without ZeRO-2/3 only its last bucket's (the
 * chunk's first layers: schedule_bucket.h; the others start during that
 * backward). ZeRO-2/3 reduce-scatter each layer unit's gradients after
 * its backward (schedule_zero.h): without overlap on the compute stream,
 * inside the backward (zero_blocking_s charges them in the stage's work,
 * so none here: charging them again put the bound of gpt3-1.3b
 * tp1-pp1-dp16-mb2-zero3-noovl on 16 h100-100g at 0.379 s over its
 * simulated 0.363 s); with overlap async, and at layer grain only the
 * chunk's first layer's is surely issued after its last compute. */
static double late_layers(const struct oc_model *m, const struct oc_layout *l, int64_t stage,
                          int64_t ch)
{
    const int64_t n = oc_place_chunk_layers(l, m, stage, ch).count;
    if (l->zero >= 2)
        return l->overlap_grad_reduce && n > 0 ? 1.0 : 0.0;
    if (!l->overlap_grad_reduce || n < 1)
        return (double)n;
    struct oc_dp_bucket *b = oc_xmalloc((size_t)oc_dp_buckets_cap(m, l) * sizeof *b);
    const int64_t nb = oc_dp_buckets(m, l, stage, ch, oc_dp_bucket_size(l), b);
    const double late = (double)b[nb - 1].layer_count;
    free(b);
    return late;
}

/* Per-stage terms of the bound: one forward and one backward of chunk 0
 * (the fill and drain each stage adds to the later ones), the stage's
 * compute over the step, and its tail after the last backward. */
struct stage_terms {
    double f0, b0, work, tail;
};

/* TP: two all-reduce equivalents per layer in each direction, at the
 * ring's bandwidth term on the fastest hop (bound.h). Under context
 * parallelism on the rank's s/c tokens, as the schedule's (schedule.c). */
static double tp_allreduce_s(const struct oc_model *m, const struct oc_layout *l,
                             const struct oc_topology *t)
{
    if (l->tp < 2)
        return 0;
    const double S = oc_layout_act_bytes(l) * (double)l->micro_batch *
                     (double)oc_layout_local_seq(l) * (double)m->hidden_size;
    return OC_BOUND_COMM_SAFETY * node_allreduce_moved(t, l->tp) * S /
           oc_topology_intra_Bps(t);
}

/* One attention part's time under context parallelism (schedule_cp.h):
 * c slices of its compute, and before each of the first c-1 a K/V block
 * (twice that in the backward) sent to the next CP rank while the slice
 * runs; the next slice waits for the block, and every rank for its
 * predecessor's, so each of the c-1 steps takes at least the slice and the
 * slowest hop's transfer: (c-1) max(a/c, x) + a/c. The hop: inside a node
 * at the intra-node bandwidth; a ring whose TP x CP block spans nodes
 * crosses a NIC, shared by the TP members in lockstep on it. Without CP,
 * the part's compute a. */
static double cp_attn_s(const struct oc_model *m, const struct oc_layout *l,
                        const struct oc_topology *t, double a, enum oc_phase ph)
{
    if (l->cp <= 1 || ph == OC_PHASE_RECOMPUTE)
        return a;
    const int64_t gpn = t->gpus_per_node > 0 ? t->gpus_per_node : 1;
    const int64_t U = l->tp * l->cp, c = l->cp;
    struct oc_cp_ring r;
    oc_cp_ring_init(&r, m, l, 0);
    const double kv = oc_cp_step_bytes(&r, ph);
    double x;
    if (U > gpn && t->nic_bandwidth_Bps > 0) {
        const int64_t K = t->nics_per_node > 0 ? t->nics_per_node : 1;
        const int64_t k = l->tp <= gpn && gpn % l->tp == 0 && l->tp / K > 1 ? l->tp / K : 1;
        x = (double)k * kv / t->nic_bandwidth_Bps;
    } else {
        x = kv / oc_topology_intra_Bps(t);
    }
    x *= OC_BOUND_COMM_SAFETY;
    const double slice = a / (double)c;
    return (double)(c - 1) * dmax(slice, x) + slice;
}

/* One layer's forward, backward and recompute, and the TP term, the same
 * for every chunk of a layout: computed once per bound (the K/V ring's
 * sizes in cp_attn_s are most of it under CP). */
struct layer_s {
    double lf, lb, lr, tp_ar;
    double tp_f, tp_b;  /* a layer's TP collectives, forward and backward:
                           2 tp_ar, or under the TP-communication overlap
                           what the GEMMs leave of them (tp_overlap.h) */
    const int64_t *nl; /* nl[stage * v + ch]: the layers of a chunk */
};

static void layer_costs(const struct oc_model *m, const struct oc_layout *l,
                        const struct oc_topology *t, const struct oc_cost *c,
                        struct layer_s *ls)
{
    ls->lf = cp_attn_s(m, l, t, c->part_s[OC_PART_ATTN][OC_PHASE_FWD], OC_PHASE_FWD) +
             c->part_s[OC_PART_MLP][OC_PHASE_FWD];
    ls->lb = cp_attn_s(m, l, t, c->part_s[OC_PART_ATTN][OC_PHASE_BWD], OC_PHASE_BWD) +
             c->part_s[OC_PART_MLP][OC_PHASE_BWD];
    ls->lr = c->part_s[OC_PART_ATTN][OC_PHASE_RECOMPUTE] +
             c->part_s[OC_PART_MLP][OC_PHASE_RECOMPUTE];
    ls->tp_ar = tp_allreduce_s(m, l, t);
    /* The overlap's exposed time grows with the collective's, so the ring's
     * bandwidth term (below the simulated collective) gives a bound. */
    struct oc_tpo tpo;
    oc_tpo_init(&tpo, m, l, t);
    ls->tp_f = oc_tpo_layer_s(&tpo, OC_PHASE_FWD, 0.5 * ls->tp_ar, 0.5 * ls->tp_ar);
    ls->tp_b = oc_tpo_layer_s(&tpo, OC_PHASE_BWD, 0.5 * ls->tp_ar, 0.5 * ls->tp_ar);
}

/* One forward (*f) and one backward (*b, its recompute included) of local
 * chunk `ch` of `stage` for one micro-batch: compute from the cost table
 * (on s/c tokens under context parallelism, cost.c), the TP terms and the
 * CP ring's steps (cp_attn_s), per layer in *ls. */
static void chunk_fb(const struct oc_model *m, const struct oc_layout *l,
                     const struct oc_cost *c, const struct layer_s *ls, int64_t stage,
                     int64_t ch, double *fo, double *bo)
{
    const double lf = ls->lf, lb = ls->lb, lr = ls->lr;
    const int64_t n = ls->nl[stage * oc_place_chunks_per_stage(l) + ch];
    int64_t nrec = n;
    if (l->recompute == OC_RECOMPUTE_FULL && l->recompute_layers > 0)
        nrec = imin(l->recompute_layers, n);
    double f = (double)n * (lf + ls->tp_f);
    double b = (double)n * (lb + ls->tp_b) + (double)nrec * lr;
    if (l->recompute == OC_RECOMPUTE_FULL)
        b += (double)nrec * ls->tp_f;
    if (oc_place_holds_embed(l, stage, ch)) {
        f += c->part_s[OC_PART_EMBED][OC_PHASE_FWD];
        b += c->part_s[OC_PART_EMBED][OC_PHASE_BWD];
    }
    if (oc_place_holds_head(l, stage, ch)) {
        f += c->part_s[OC_PART_HEAD][OC_PHASE_FWD];
        b += c->part_s[OC_PART_HEAD][OC_PHASE_BWD];
    }
    *fo = f;
    *bo = b;
}

static void stage_terms(const struct oc_model *m, const struct oc_layout *l,
                        const struct oc_topology *t, const struct oc_cost *c,
                        const struct layer_s *ls, int64_t stage, struct stage_terms *st)
{
    const int64_t nmb = oc_layout_num_micro_batches(l);
    const int64_t v = oc_place_chunks_per_stage(l);
    memset(st, 0, sizeof *st);
    double per_mb = 0;
    for (int64_t ch = 0; ch < v; ch++) {
        double f, b;
        chunk_fb(m, l, c, ls, stage, ch, &f, &b);
        if (ch == 0) {
            st->f0 = f;
            st->b0 = b;
        }
        per_mb += f + b;
    }
    st->work = (double)nmb * per_mb + oc_bound_zero_blocking_s(m, l, t, ls->nl, stage);

    /* The tail: DP reduction not overlapped, the weight all-gather of the
     * distributed optimizer, AdamW over the rank's (shard of) parameters. */
    const int64_t params = oc_mem_stage_params(m, l, stage);
    const struct oc_mem_param_bytes pb = oc_mem_param_bytes(l);
    struct oc_bound_geom g;
    oc_bound_grad_geom(l, t, &g);
    const int64_t gn = g.n, per_node = g.per_node;
    const double groups = g.share; /* the stage's own groups */
    const double opt_params = l->zero >= 1 ? (double)params / (double)gn : (double)params;
    st->tail = opt_params * c->optimizer_s_per_param;
    if (gn > 1) {
        const int kind = l->zero >= 1 ? 1 : 0;
        double reduced = dp_grads_bounded(l) ? (double)params : 0.0;
        if (l->overlap_grad_reduce || l->zero >= 2) {
            /* only the chunk-0 bucket (overlap: its last DP bucket)
             * surely starts after the last backward */
            reduced = late_layers(m, l, stage, 0) * (double)oc_model_layer_params_tp(m, l->tp);
        }
        if (!dp_grads_bounded(l))
            reduced = 0;
        if (reduced > 0)
            st->tail += oc_bound_forced_coll_s(l, t, kind, pb.grad * reduced, gn, per_node,
                                               groups);
        if (weights_gathered(l))
            st->tail += oc_bound_forced_coll_s(l, t, 1, pb.weight * (double)params, gn, per_node, groups);
    }
}

/* Whether stages i and j of one (tp, cp, dp) replica sit in different
 * nodes: 1 yes, 0 no, -1 it depends on the replica (not charged). */
static int stages_cross(const struct oc_layout *l, int64_t gpn, int64_t i, int64_t j)
{
    const int64_t U = l->tp * l->cp;
    const int64_t S = l->order == OC_ORDER_TP_DP_PP ? U * l->dp : U; /* stage stride */
    if (S % gpn == 0)
        return 1;
    if (gpn % S != 0)
        return -1;
    const int64_t q = gpn / S; /* stages per node */
    if (l->order == OC_ORDER_TP_PP_DP && l->pp % q != 0)
        return -1;
    return i / q != j / q;
}

/* The pipeline messages that leave a node, over the cluster's NICs: every
 * (micro-batch, global chunk boundary) sends an activation forward and a
 * gradient back from each of the t*cp*d ranks of the sending stage, of
 * core/schedule.c's size (b*s*h elements, / t under SP). All of it crosses
 * some node's NICs within the step, whatever the schedule: the step is at
 * least those bytes over the aggregate NIC bandwidth (max-min sharing
 * cannot beat the links' capacity). Boundaries whose crossing depends on
 * the replica are not charged. */
static double p2p_nic_bound_s(const struct oc_layout *l, const struct oc_model *m,
                              const struct oc_topology *t)
{
    const int64_t gpn = t->gpus_per_node > 0 ? t->gpus_per_node : 1;
    const int64_t world = oc_layout_world(l);
    if (l->pp < 2 || l->cp > 1 || world <= gpn || t->nics_per_node < 1 ||
        !(t->nic_bandwidth_Bps > 0))
        return 0;
    const int64_t v = oc_place_chunks_per_stage(l);
    int64_t crossing = 0;
    for (int64_t g = 0; g + 1 < l->pp * v; g++) {
        const int c = stages_cross(l, gpn, g % l->pp, (g + 1) % l->pp);
        crossing += c == 1;
    }
    const double msg = oc_layout_act_bytes(l) * (double)l->micro_batch *
                       (double)l->seq_length * (double)m->hidden_size /
                       (l->sequence_parallel && l->tp > 1 ? (double)l->tp : 1.0);
    /* every replica's micro-batches: d*m when even, the sum of the
     * counts (G/b) under an unequal split (mbsplit.h), not d times the most */
    const double bytes = oc_mbs_on(l) ? (double)crossing * 2.0 *
                                            (double)(l->global_batch / l->micro_batch) *
                                            (double)l->tp * msg
                                      : (double)crossing * 2.0 *
                                            (double)oc_layout_num_micro_batches(l) *
                                            (double)(l->tp * l->dp) * msg;
    const double nodes = (double)((world + gpn - 1) / gpn);
    return OC_BOUND_COMM_SAFETY * bytes /
           (nodes * (double)t->nics_per_node * t->nic_bandwidth_Bps);
}

/* ---- the pipeline's critical path ----------------------------------------- */

/* One pipeline message (the sender's `msg` bytes) from stage i to stage j at
 * its bound: inside a node at the intra-node bandwidth; across nodes over
 * one NIC, shared by every rank of the sending stage on that NIC: where
 * the crossing does not depend on the replica (stages_cross), a node holds
 * min(S, gpn) ranks of the stage (S = its contiguous block of ranks), and
 * they send at the same moments: the members of a TP (x CP) group are in
 * lockstep (their collectives synchronise them) and the DP replicas run the
 * same ops at the same costs over links of the same shape (the symmetry
 * symmetric mode rests on, replay_sym.c; fast and symmetric modes send them
 * as one flow of that many messages, replay.h). Where crossing depends on
 * the replica, as inside a node. No latency. */
static double hop_s(const struct oc_layout *l, const struct oc_topology *t, double msg,
                    int64_t i, int64_t j)
{
    const int64_t gpn = t->gpus_per_node > 0 ? t->gpus_per_node : 1;
    const int cross = oc_layout_world(l) > gpn ? stages_cross(l, gpn, i, j) : 0;
    if (cross == 1 && t->nic_bandwidth_Bps > 0) {
        const int64_t K = t->nics_per_node > 0 ? t->nics_per_node : 1;
        const int64_t U = l->tp * (l->cp > 0 ? l->cp : 1);
        const int64_t S = l->order == OC_ORDER_TP_DP_PP ? U * l->dp : U;
        const int64_t on_nic = imin(S, gpn) / K;
        return OC_BOUND_COMM_SAFETY * (double)(on_nic > 1 ? on_nic : 1) * msg /
               t->nic_bandwidth_Bps;
    }
    return OC_BOUND_COMM_SAFETY * msg / oc_topology_intra_Bps(t);
}

/* How many consecutive stages of one replica a node holds whole, each
 * stage's gradient group leaving the node (below): q = gpn / (tp*cp)
 * under tp-pp-dp with whole TP x CP blocks in a node and q dividing pp;
 * else 1. */
static int64_t node_stages(const struct oc_layout *l, const struct oc_topology *t)
{
    const int64_t gpn = t->gpus_per_node > 0 ? t->gpus_per_node : 1;
    const int64_t U = l->tp * (l->cp > 0 ? l->cp : 1);
    if (l->order != OC_ORDER_TP_PP_DP || gpn % U != 0 || l->dp < 2)
        return 1;
    const int64_t q = gpn / U;
    return q >= 2 && l->pp % q == 0 ? q : 1;
}

/* Stages that share a node's NICs for their DP traffic: under tp-pp-dp
 * with whole TP x CP blocks in a node, a node holds q = gpn / (tp*cp)
 * consecutive stages of one replica (when q divides pp), and each of
 * their gradient groups leaves the node. Their reductions (and the
 * distributed optimizer's gathers) all cross the node's NICs: for every
 * moment T among the stages' bucket-ready times, the buckets ready at T or
 * later and the gathers of the stages whose last bucket is ready at T or
 * later cross after T (a gather follows its stage's reductions), at the
 * group bound of each (oc_bound_group_coll_s is linear in the bytes, the
 * groups' shapes are alike). ready[j*v + c]: stage j's chunk c bucket,
 * nl[j*v + c] its layers. 0 where the stages do not share a node this
 * way. */
static double node_share_s(const struct oc_model *m, const struct oc_layout *l,
                           const struct oc_topology *t, const double *ready,
                           const int64_t *nl)
{
    const int64_t p = l->pp, v = oc_place_chunks_per_stage(l), q = node_stages(l, t);
    if (q < 2 || l->zero > 1)
        return 0;
    struct oc_bound_geom g;
    oc_bound_grad_geom(l, t, &g);
    /* several stages' groups on the node: all its NICs (not oc_bound_dp_geom's share) */
    const int64_t gn = g.n, per_node = g.per_node;
    const double groups = (double)g.groups;
    if (gn < 2 || per_node >= gn)
        return 0;
    const struct oc_mem_param_bytes pb = oc_mem_param_bytes(l);
    const double P = (double)oc_model_layer_params_tp(m, l->tp);
    const int kind = l->zero >= 1 ? 1 : 0;
    double best = 0;
    for (int64_t k0 = 0; k0 < p; k0 += q) {
        for (int64_t a = k0 * v; a < (k0 + q) * v; a++) {
            const double T = ready[a];
            double grad = 0, weight = 0;
            for (int64_t j = k0; j < k0 + q; j++) {
                double last = 0;
                for (int64_t c = 0; c < v; c++) {
                    last = dmax(last, ready[j * v + c]);
                    if (ready[j * v + c] >= T)
                        grad += late_layers(m, l, j, c) * P;
                }
                if (l->zero == 1 && !l->overlap_param_gather && last >= T)
                    weight += (double)oc_place_stage_layers(l, m, j) * P;
            }
            if (!dp_grads_bounded(l))
                grad = 0;
            const double s = T + (grad > 0 ? oc_bound_group_coll_s(t, kind, pb.grad * grad, gn,
                                                                   per_node, groups)
                                            : 0.0) +
                             oc_bound_group_coll_s(t, 1, pb.weight * weight, gn, per_node,
                                                   groups);
            best = dmax(best, s);
        }
    }
    return best;
}

/* Under --overlap-grad-reduce without ZeRO-2/3: every bucket of a chunk
 * fires during the chunk's last backward (schedule_bucket.h), so none
 * starts before that backward starts (bstart), and a stage's buckets run
 * one after the other on its DP stream. For every chunk ch of stage i, the
 * buckets of the chunks whose last backward starts at bstart[ch] or later
 * (all their layers' gradients, embedding and head not counted) cross the
 * DP links after bstart[ch]: the stage's reductions end no earlier than
 * that plus their bound. Tighter than the chunk's last bucket after its
 * last backward's end where the reduction outlasts a backward (1024
 * cards, DP 16: 2.6 s of reduction against a 30 ms backward). nl: the
 * chunks' layers, as path_bound_s has them. */
static double buckets_after_start_s(const struct oc_model *m, const struct oc_layout *l,
                                    const struct oc_topology *t, const struct oc_bound_walk *w,
                                    const int64_t *nl, int64_t i, int kind, int64_t gn,
                                    int64_t per_node, double groups)
{
    const int64_t p = l->pp, v = oc_place_chunks_per_stage(l);
    const double P = (double)oc_model_layer_params_tp(m, l->tp);
    const struct oc_mem_param_bytes pb = oc_mem_param_bytes(l);
    double done = 0;
    for (int64_t ch = 0; ch < v; ch++) {
        const double T = w->bstart[ch * p + i];
        double layers = 0;
        for (int64_t c2 = 0; c2 < v; c2++)
            if (w->bstart[c2 * p + i] >= T)
                layers += (double)nl[i * v + c2];
        done = dmax(done, T + oc_bound_forced_coll_s(l, t, kind, pb.grad * layers * P, gn,
                                                     per_node, groups));
    }
    return done;
}

/* The step along the pipeline's critical path: every stage runs its units
 * in core/schedule.c's order (oc_schedule_stage_order), each no earlier
 * than the unit before it ends and than the message it consumes arrives
 * (the forward of global chunk g after that of g-1 on its stage, the
 * backward of g after that of g+1, the last chunk's backward after its own
 * forward), a message's transfer after both its producer's end and the
 * receiver's previous unit (it posts the RECV then), every unit at
 * chunk_fb's bound plus its blocking ZeRO collectives and every message at
 * hop_s's; then, per stage, the DP reduction no earlier than its gradients
 * are ready (a chunk's bucket is posted after its last backward, ZeRO-2/3's
 * reductions start in it: those of the chunks ready at T or later all cross
 * the DP links after T; without overlap after the stage's last unit), the distributed
 * optimizer's weight all-gather and the AdamW step after it. Each stage's
 * replay does at least this much, in this order, so the step is at least
 * the latest end. 0 where the unit order is not walked (it never stalls
 * for a valid layout). */
static double path_bound_s(const struct oc_model *m, const struct oc_layout *l,
                           const struct oc_topology *t, const struct oc_cost *c,
                           const struct layer_s *ls)
{
    const int64_t p = l->pp, v = oc_place_chunks_per_stage(l), G = p * v;
    const int64_t nm = oc_layout_num_micro_batches(l);
    double *f = oc_xcalloc((size_t)G, sizeof *f), *b = oc_xcalloc((size_t)G, sizeof *b);
    double *hop = oc_xcalloc((size_t)G, sizeof *hop);
    const int64_t *nl = ls->nl;
    /* ZeRO-2/3 under overlap: one layer's gather and reduce-scatter at the
     * forced algorithm's term (one collective's phases run one after the
     * other, and each stream runs one collective at a time) */
    double ag1 = 0, rs1 = 0;
    const int zs_on = l->overlap_grad_reduce &&
                      oc_bound_zero_layer_colls(m, l, t, 1, &ag1, &rs1) && rs1 > 0;
    for (int64_t g = 0; g < G; g++) {
        const int64_t i = g % p, ch = g / p;
        double zf, zb;
        chunk_fb(m, l, c, ls, i, ch, &f[g], &b[g]);
        oc_bound_zero_chunk_s(m, l, t, nl[i * v + ch], &zf, &zb);
        f[g] += zf;
        b[g] += zb;
        /* ZeRO-3 under overlap: a unit's layers wait for their gathers,
         * which run one after the other on stream 0 from the unit's start
         * (the first blocking, the next ones prefetched: schedule_zero.h) */
        if (zs_on && l->zero == 3) {
            f[g] = dmax(f[g], (double)nl[i * v + ch] * ag1);
            b[g] = dmax(b[g], (double)nl[i * v + ch] * ag1);
        }
    }
    const double msg = oc_layout_act_bytes(l) * (double)l->micro_batch *
                       (double)oc_layout_local_seq(l) * (double)m->hidden_size /
                       (l->sequence_parallel && l->tp > 1 ? (double)l->tp : 1.0);
    for (int64_t g = 0; g + 1 < G; g++)
        hop[g] = hop_s(l, t, msg, g % p, (g + 1) % p);

    /* the units in order (bound_walk.c; a walk of the same inputs is
     * reused): ZeRO-2/3 reduce inside a backward unit, layer by layer, so
     * a chunk's gradients are ready from its last backward's start; else
     * the chunk's bucket is posted after it; under ZeRO-2/3 with overlap
     * the reduce-scatters queue on their stream (bound_walk.h) */
    struct oc_bound_zstream zs = {NULL, ls->lb, 0};
    double *zl = NULL;
    if (zs_on) {
        zl = oc_xcalloc((size_t)G, sizeof *zl);
        for (int64_t g = 0; g < G; g++)
            zl[g] = (double)nl[(g % p) * v + g / p];
        zs.layers = zl;
        zs.rs = rs1;
    }
    struct oc_bound_walk w;
    const int walked = oc_bound_walk_run(l, nm, f, b, hop, zl ? &zs : NULL, &w);
    free(zl);
    const double *clk = walked ? w.clk : NULL;
    const double *lastb = walked ? (l->zero >= 2 ? w.bstart : w.bend) : NULL;
    double step = 0;
    if (walked) {
        const struct oc_mem_param_bytes pb = oc_mem_param_bytes(l);
        struct oc_bound_geom g;
        oc_bound_grad_geom(l, t, &g);
        const int64_t gn = g.n, per_node = g.per_node;
        const double groups = g.share; /* each stage's own groups */
        const int kind = l->zero >= 1 ? 1 : 0;
        const double P = (double)oc_model_layer_params_tp(m, l->tp);
        for (int64_t i = 0; i < p; i++) {
            const int64_t params = oc_mem_stage_params(m, l, i);
            const double opt_params =
                l->zero >= 1 ? (double)params / (double)gn : (double)params;
            double done = clk[i];
            if (gn > 1 && dp_grads_bounded(l)) {
                if (!l->overlap_grad_reduce && l->zero < 2) {
                    done += oc_bound_forced_coll_s(l, t, kind, pb.grad * (double)params, gn, per_node,
                                         groups);
                } else {
                    for (int64_t ch = 0; ch < v; ch++) {
                        const double T = lastb[ch * p + i];
                        double after = 0;
                        for (int64_t c2 = 0; c2 < v; c2++)
                            if (lastb[c2 * p + i] >= T)
                                after += late_layers(m, l, i, c2) * P;
                        done = dmax(done, T + oc_bound_forced_coll_s(l, t, kind, pb.grad * after, gn,
                                                           per_node, groups));
                    }
                    if (l->zero < 2)
                        done = dmax(done, buckets_after_start_s(m, l, t, &w, nl, i, kind,
                                                                gn, per_node, groups));
                }
            }
            /* the WAIT before the optimizer waits for the ZeRO stream */
            done = dmax(done, w.zend[i]);
            double end = done + opt_params * c->optimizer_s_per_param;
            if (gn > 1 && weights_gathered(l))
                end += oc_bound_forced_coll_s(l, t, 1, pb.weight * (double)params, gn, per_node, groups);
            step = dmax(step, end);
        }
        /* the DP traffic of the stages that share a node's NICs */
        double *ready = oc_xcalloc((size_t)G, sizeof *ready);
        for (int64_t i = 0; i < p; i++)
            for (int64_t ch = 0; ch < v; ch++)
                ready[i * v + ch] = l->overlap_grad_reduce ? lastb[ch * p + i] : clk[i];
        step = dmax(step, node_share_s(m, l, t, ready, nl));
        free(ready);
    }
    free(f);
    free(b);
    free(hop);
    return step;
}

void oc_bound_step(const struct oc_model *m, const struct oc_layout *l,
                   const struct oc_topology *t, struct oc_bound *out)
{
    struct oc_cost c;
    oc_cost_init(&c, m, l, t);
    oc_bound_step_cost(m, l, t, &c, out);
}

void oc_bound_step_cost(const struct oc_model *m, const struct oc_layout *l,
                        const struct oc_topology *t, const struct oc_cost *cost,
                        struct oc_bound *out)
{
    memset(out, 0, sizeof *out);
    const struct oc_cost c = *cost;
    const int64_t p = l->pp;
    struct stage_terms st0;
    struct layer_s ls;
    layer_costs(m, l, t, &c, &ls);
    /* the chunks' layers, read per chunk (and per pair of chunks in the
     * path's tail) */
    const int64_t v = oc_place_chunks_per_stage(l);
    int64_t *nl = oc_xcalloc((size_t)(p * v), sizeof *nl);
    for (int64_t i = 0; i < p; i++)
        for (int64_t ch = 0; ch < v; ch++)
            nl[i * v + ch] = oc_place_chunk_layers(l, m, i, ch).count;
    ls.nl = nl;
    double fill = 0, drain = 0;
    for (int64_t i = 0; i < p; i++) {
        struct stage_terms st;
        stage_terms(m, l, t, &c, &ls, i, &st);
        if (i == 0)
            st0 = st;
        /* after stage i's last backward: stages i-1..0 each run the
         * backward of that unit, then stage 0 its tail; stage i its own */
        const double after = dmax(drain + st0.tail, st.tail);
        const double total = fill + st.work + after;
        if (total > out->step_s) {
            out->step_s = total;
            out->compute_s = st.work;
            out->pipeline_s = fill + drain;
            out->tail_s = after - drain;
            out->stage = i;
        }
        fill += st.f0;
        drain += st.b0;
    }
    /* the pipeline's critical path, messages and DP tail in order */
    out->path_s = path_bound_s(m, l, t, &c, &ls);
    if (out->path_s > out->step_s)
        out->step_s = out->path_s;
    /* the NICs' throughput bounds the step whatever overlaps */
    out->p2p_nic_s = p2p_nic_bound_s(l, m, t);
    if (out->p2p_nic_s > out->step_s)
        out->step_s = out->p2p_nic_s;
    /* so do the DP links under ZeRO-2/3: every stage's unit collectives,
     * and those of all the stages that share a node's NICs */
    const int64_t q = node_stages(l, t);
    for (int64_t k0 = 0; k0 < p; k0 += q) {
        double z = 0, blocking;
        for (int64_t i = k0; i < k0 + q && i < p; i++) {
            z += oc_bound_zero_units_s(m, l, t, nl, i, 0, &blocking);
            /* one stage's own group under the forced algorithm */
            out->zero_link_s =
                dmax(out->zero_link_s, oc_bound_zero_units_s(m, l, t, nl, i, 1, &blocking));
        }
        out->zero_link_s = dmax(out->zero_link_s, z);
    }
    if (out->zero_link_s > out->step_s)
        out->step_s = out->zero_link_s;
    free(nl);
}
