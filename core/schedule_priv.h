/* schedule_priv.h: what core/schedule.c (the ops of one rank) and
 * core/schedule_build.c (the layout's context and the builder) share;
 * nothing outside core/schedule*.c includes it. */
#ifndef OC_SCHEDULE_PRIV_H
#define OC_SCHEDULE_PRIV_H

#include <stdint.h>

#include "memory.h"
#include "schedule.h"
#include "schedule_bucket.h"
#include "schedule_cp.h"
#include "schedule_pgather.h"
#include "schedule_zero.h"

/* One unit's compute and TP collectives merged (OC_GRAIN_CHUNK). */
struct unit_sum {
    double flops, hbm_bytes;
    int64_t n_ar, n_ag, n_rs; /* TP collectives of tp_bytes each, by kind */
    int64_t n_ce;             /* cross-entropy all-reduces of ce_bytes */
    struct oc_cp_unit cpu;    /* cp > 1: the compute by part (schedule_cp.h) */
};

/* Where ops go: appended to `out` (counted only while out->ops is NULL), or,
 * when `sum` is set, merged into it (only COMPUTE and TP COLLECTIVE ops). */
struct sink {
    struct oc_rank_ops *out;
    struct unit_sum *sum;
    const struct oc_cp_ring *ring; /* cp > 1: the rank's CP ring */
};

struct ctx {
    const struct oc_model *model;
    const struct oc_layout *l;
    int64_t t, p, d, v, m, lc;
    int64_t cp, dg;      /* CP size; the gradient group DP*CP */
    int64_t cp_tag_base; /* CP ring tags lie above the pipeline's 2*m*v */
    enum oc_grain grain;
    int emit_memory;
    int sp; /* sequence parallel in effect (t > 1) */
    enum oc_recompute recompute;
    double logits_bytes; /* memory.c, one micro-batch */
    /* forward FLOPs per TP rank, one micro-batch */
    double attn_flops, mlp_flops, head_flops, embed_flops, sel_flops;
    double tp_bytes, ce_bytes, p2p_bytes, embed_grad_bytes;
    struct oc_mem_param_bytes pb; /* per parameter, the run's precision */
    struct oc_zero_ctx zc;        /* ZeRO-2/3 per-unit ops (schedule_zero.h) */
    int dp_async;                 /* DP buckets during the last backward */
    int64_t bucket_size, bucket_cap; /* schedule_bucket.h */
    int pg; /* the weight all-gather under the first forward (schedule_pgather.h) */
};

/* Per-stage data shared by every rank of the stage. */
struct stage_info {
    struct oc_unit *order;
    int64_t nunits;
    int64_t *last_bwd;       /* v entries: index of the chunk's last backward */
    double *act_bytes;       /* v entries: memory.c's chunk activations */
    struct unit_sum *sums;   /* 2*v entries: [chunk*2 + backward] */
    /* dp_async: v*bucket_cap entries each, [chunk*cap + j]: the chunk's
     * DP buckets (schedule_bucket.h) and their share of its backward */
    struct oc_dp_bucket *bk;
    struct unit_sum *bsums;
    int64_t *nbk;            /* v entries */
    /* pg: the stage's chain of weight-gather buckets (schedule_pgather.h),
     * where each chunk's start in it, and each chunk's first forward */
    struct oc_pg_item *pg;
    int64_t npg, *pg0, *first_fwd;
    int64_t count;           /* ops per rank, -1 until counted */
};

/* Rank `rank`'s ops into out (counted only while out->ops is NULL). */
void oc_sch_emit_rank(const struct ctx *x, const struct stage_info *si, int64_t rank,
                      struct oc_rank_ops *out);
/* The data every rank of `stage` shares (its unit order, merged sums,
 * buckets), and its release for p of them. */
void oc_sch_stage_info_init(const struct ctx *x, int64_t stage, struct stage_info *si);
void oc_sch_stage_info_free(struct stage_info *si, int64_t p);

#endif
