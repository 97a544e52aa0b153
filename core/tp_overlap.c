/* tp_overlap.c: the TP collectives under --tp-comm-overlap (see
 * tp_overlap.h for the model and its sources). */
#include "tp_overlap.h"

#include <string.h>

#include "cost.h"
#include "memory.h"
#include "status.h"

static double dmax(double a, double b) { return a > b ? a : b; }

double oc_tpo_ring_exchange_s(double C, double G, int64_t t)
{
    OC_ASSERT(t >= 1);
    return dmax(0.0, C - G * (double)(t - 1) / (double)t);
}

double oc_tpo_pipeline_s(double C, double G, int64_t n, double sm_slow)
{
    OC_ASSERT(n >= 1 && sm_slow >= 1.0);
    const double Gs = G * sm_slow;
    return dmax(C / (double)n, C - Gs * (double)(n - 1) / (double)n) + (Gs - G);
}

double oc_tpo_bulk_s(double C, double G, double sm_slow)
{
    OC_ASSERT(sm_slow >= 1.0);
    const double Gs = G * sm_slow;
    return dmax(0.0, C - Gs) + (Gs - G);
}

void oc_tpo_init(struct oc_tpo *o, const struct oc_model *m,
                 const struct oc_layout *l, const struct oc_topology *t)
{
    memset(o, 0, sizeof *o);
    o->t = l->tp;
    o->on = l->tp_comm_overlap && l->tp > 1 && l->sequence_parallel;
    if (!o->on)
        return;
    const int64_t sms = t->device.sm_count;
    /* a device without the SMs to spare (or none given): no margin */
    o->sm_slow = sms > OC_TPO_COMM_SMS ? (double)sms / (double)(sms - OC_TPO_COMM_SMS) : 1.0;
    const enum oc_part parts[2] = {OC_PART_ATTN, OC_PART_MLP};
    for (int i = 0; i < 2; i++) {
        struct oc_gemm g[2];
        const int n = oc_cost_part_gemms(m, l, parts[i], g);
        OC_ASSERT(n == 2);
        /* first GEMM (QKV, fc1): consumes the all-gather; last (output
         * projection, fc2): produces the reduce-scatter */
        o->ag_fwd[i] = oc_cost_gemm_s(t, g[0]);
        o->rs_fwd[i] = oc_cost_gemm_s(t, g[1]);
        o->ag_bwd[i] = oc_cost_gemm_s(t, oc_gemm_dgrad(g[1]));
        o->rs_bwd[i] = oc_cost_gemm_s(t, oc_gemm_wgrad(g[0]));
    }
}

/* One all-gather (ag) or reduce-scatter of part i (0 attention, 1 MLP) in
 * phase ph, C seconds alone. */
static double one_s(const struct oc_tpo *o, int ag, int i, enum oc_phase ph, double C)
{
    if (ph == OC_PHASE_BWD)
        return ag ? oc_tpo_ring_exchange_s(C, o->ag_bwd[i], o->t)
                  : oc_tpo_bulk_s(C, o->rs_bwd[i], o->sm_slow);
    return ag ? oc_tpo_ring_exchange_s(C, o->ag_fwd[i], o->t)
              : oc_tpo_pipeline_s(C, o->rs_fwd[i], OC_TPO_PIPELINE_SPLITS, o->sm_slow);
}

double oc_tpo_layer_s(const struct oc_tpo *o, enum oc_phase phase, double ag_s,
                      double rs_s)
{
    if (!o->on)
        return 2.0 * (ag_s + rs_s);
    double s = 0;
    for (int i = 0; i < 2; i++)
        s += one_s(o, 1, i, phase, ag_s) + one_s(o, 0, i, phase, rs_s);
    return s;
}

double oc_tpo_op_s(const struct oc_tpo *o, const struct oc_layout *l,
                   const struct oc_op *op, double coll_s)
{
    const int64_t n = op->count > 1 ? op->count : 1;
    const double whole = (double)n * coll_s;
    if (!o->on || op->group != OC_GROUP_TP ||
        (op->coll != OC_COLL_ALLGATHER && op->coll != OC_COLL_REDUCESCATTER))
        return whole;
    const int ag = op->coll == OC_COLL_ALLGATHER;
    const enum oc_phase ph = (enum oc_phase)op->phase;
    if (op->part == OC_PART_ATTN || op->part == OC_PART_MLP)
        return (double)(n - 1) * coll_s +
               one_s(o, ag, op->part == OC_PART_MLP, ph, coll_s);
    if (op->part != OC_PART_CHUNK)
        return whole; /* embedding, head */
    /* A chunk-grain op (schedule.c, merged_range): per layer one of each
     * part's in the phase, and in a backward unit the recomputed layers'
     * forward ones; the rest (embedding, head) as they are. */
    int64_t L = op->layer_count > 0 ? op->layer_count : 0;
    int64_t rec = 0;
    if (ph == OC_PHASE_BWD && l->recompute == OC_RECOMPUTE_FULL)
        rec = oc_mem_recomputed_layers(l, L);
    /* a piece of a backward (its DP buckets, schedule_bucket.h) under
     * rfull<k> may hold fewer recomputed layers than min(k, L): what the
     * count leaves */
    if (L > n / 2)
        L = n / 2;
    if (rec > (n - 2 * L) / 2)
        rec = (n - 2 * L) / 2;
    const int64_t rest = n - 2 * L - 2 * rec;
    double s = (double)rest * coll_s;
    for (int i = 0; i < 2; i++)
        s += (double)L * one_s(o, ag, i, ph, coll_s) +
             (double)rec * one_s(o, ag, i, OC_PHASE_FWD, coll_s);
    return s;
}
