/* compare_pair.c: the per-op pairing of `ocsim compare` (see compare.h):
 * one point per op when both ops.csv hold the same schedule at the same
 * grain, else one point per (stage, micro-batch, chunk, phase) aggregate of
 * the compute ops, mean per rank of the stage.
 *
 * What it is not: reading ops.csv (compare_read.c) or drawing the points
 * (compare_report.c); the pairs feed the scatter plot and the median error
 * line, not the verdict.
 */
#define _POSIX_C_SOURCE 200809L
#include "compare.h"

#include <stdlib.h>
#include <string.h>

#include "schedule.h"

/* ------------------------------------------------------------------ */
/* Pairing                                                              */

const char *oc_cmp_pairing_name(enum oc_cmp_pairing p)
{
    switch (p) {
    case OC_CMP_PAIR_NONE: return "none";
    case OC_CMP_PAIR_OP: return "by op";
    case OC_CMP_PAIR_AGGREGATE: return "by aggregate";
    }
    return "?";
}

static int same_schedule(const struct oc_cmp_ops *a, const struct oc_cmp_ops *b)
{
    if (a->n != b->n || a->n == 0)
        return 0;
    for (int64_t i = 0; i < a->n; i++) {
        const struct oc_cmp_op *x = &a->ops[i], *y = &b->ops[i];
        if (x->rank != y->rank || x->op != y->op || x->kind != y->kind ||
            x->phase != y->phase || x->part != y->part || x->mb != y->mb)
            return 0;
    }
    return 1;
}

/* One compute op folded into its aggregate key. */
struct agg {
    int32_t stage, mb, chunk, phase;
    int64_t rank;
    double dur_s;
};

static int cmp_agg_key(const struct agg *a, const struct agg *b)
{
    if (a->stage != b->stage)
        return a->stage < b->stage ? -1 : 1;
    if (a->mb != b->mb)
        return a->mb < b->mb ? -1 : 1;
    if (a->chunk != b->chunk)
        return a->chunk < b->chunk ? -1 : 1;
    return (a->phase > b->phase) - (a->phase < b->phase);
}

static int cmp_agg(const void *pa, const void *pb) { return cmp_agg_key(pa, pb); }

static int cmp_stage_rank(const void *pa, const void *pb)
{
    const struct agg *a = pa, *b = pb;
    if (a->stage != b->stage)
        return a->stage < b->stage ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* The (stage, mb, chunk, phase) sums of a side, each divided by the ranks
 * of its stage present: sorted, unique keys in *out (malloc'd). */
static int64_t aggregate(const struct oc_cmp_ops *ops, struct agg **out)
{
    struct agg *v = oc_xmalloc((size_t)(ops->n > 0 ? ops->n : 1) * sizeof *v);
    int64_t n = 0;
    for (int64_t i = 0; i < ops->n; i++) {
        const struct oc_cmp_op *o = &ops->ops[i];
        if (o->kind != OC_OP_COMPUTE)
            continue;
        /* Chunk grain merges the recompute into the backward op. */
        int32_t ph = o->phase == OC_PHASE_RECOMPUTE ? OC_PHASE_BWD : o->phase;
        v[n++] = (struct agg){o->stage, o->mb, o->chunk, ph, o->rank, o->dur_s};
    }
    /* Ranks present per stage: (stage, count) pairs in stage order, looked
     * up by bisection (the stage numbers come from a file: an array indexed
     * by them would let one row ask for gigabytes). */
    struct agg *sr = oc_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *sr);
    memcpy(sr, v, (size_t)n * sizeof *sr);
    qsort(sr, (size_t)n, sizeof *sr, cmp_stage_rank);
    int32_t *stage_of = oc_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *stage_of);
    int64_t *ranks = oc_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *ranks);
    int64_t ns = 0;
    for (int64_t i = 0; i < n; i++) {
        if (i > 0 && sr[i].stage == sr[i - 1].stage && sr[i].rank == sr[i - 1].rank)
            continue;
        if (ns == 0 || stage_of[ns - 1] != sr[i].stage) {
            stage_of[ns] = sr[i].stage;
            ranks[ns++] = 0;
        }
        ranks[ns - 1]++;
    }
    free(sr);
    /* Sum per key. */
    qsort(v, (size_t)n, sizeof *v, cmp_agg);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (k > 0 && cmp_agg_key(&v[k - 1], &v[i]) == 0)
            v[k - 1].dur_s += v[i].dur_s;
        else
            v[k++] = v[i];
    }
    for (int64_t i = 0; i < k; i++) {
        int64_t lo = 0, hi = ns - 1; /* every key's stage is among them */
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (stage_of[mid] < v[i].stage)
                lo = mid + 1;
            else
                hi = mid;
        }
        OC_ASSERT(ns > 0 && stage_of[lo] == v[i].stage);
        v[i].dur_s /= (double)ranks[lo];
    }
    free(stage_of);
    free(ranks);
    *out = v;
    return k;
}

static void push_point(struct oc_cmp_pairs *p, int64_t *cap, const char *label,
                       enum oc_cmp_class cls, double pred_s, double meas_s)
{
    if (p->n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        p->pts = oc_xrealloc(p->pts, (size_t)*cap * sizeof *p->pts);
    }
    struct oc_cmp_point *q = &p->pts[p->n++];
    snprintf(q->label, sizeof q->label, "%s", label);
    q->cls = cls;
    q->pred_s = pred_s;
    q->meas_s = meas_s;
}

void oc_cmp_pair(const struct oc_cmp_ops *pred, const struct oc_cmp_ops *meas,
                 struct oc_cmp_pairs *out)
{
    memset(out, 0, sizeof *out);
    int64_t cap = 0;
    char label[64];
    if (same_schedule(pred, meas)) {
        out->mode = OC_CMP_PAIR_OP;
        for (int64_t i = 0; i < pred->n; i++) {
            const struct oc_cmp_op *x = &pred->ops[i];
            snprintf(label, sizeof label, "r%lld op%lld %s %s %s mb%d",
                     (long long)x->rank, (long long)x->op,
                     oc_op_kind_name((enum oc_op_kind)x->kind),
                     oc_phase_name((enum oc_phase)x->phase),
                     oc_part_name((enum oc_part)x->part), x->mb);
            push_point(out, &cap, label, oc_cmp_class_of(x), x->dur_s,
                       meas->ops[i].dur_s);
        }
        return;
    }
    out->mode = OC_CMP_PAIR_AGGREGATE;
    struct agg *a, *b;
    int64_t na = aggregate(pred, &a), nb = aggregate(meas, &b);
    int64_t i = 0, j = 0;
    while (i < na || j < nb) {
        int c = i == na ? 1 : j == nb ? -1 : cmp_agg_key(&a[i], &b[j]);
        if (c < 0) {
            out->unmatched_pred++, i++;
            continue;
        }
        if (c > 0) {
            out->unmatched_meas++, j++;
            continue;
        }
        snprintf(label, sizeof label, "stage %d mb %d chunk %d %s", a[i].stage,
                 a[i].mb, a[i].chunk, oc_phase_name((enum oc_phase)a[i].phase));
        enum oc_cmp_class cls = a[i].phase == OC_PHASE_FWD         ? OC_CMP_FWD
                                : a[i].phase == OC_PHASE_OPTIMIZER ? OC_CMP_OPT
                                                                   : OC_CMP_BWD;
        push_point(out, &cap, label, cls, a[i].dur_s, b[j].dur_s);
        i++, j++;
    }
    free(a);
    free(b);
}

void oc_cmp_pairs_free(struct oc_cmp_pairs *p)
{
    free(p->pts);
    memset(p, 0, sizeof *p);
}
