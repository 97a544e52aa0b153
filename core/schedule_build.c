/* schedule_build.c: a layout's schedule from core/schedule.c's rank lists:
 * what a schedule needs of its layout, the per-layout context, the
 * stages' shared data, and the builder that emits ranks one at a time
 * (schedule.h: oc_schedule_build, oc_schedule_builder_*). What each rank's
 * list holds is schedule.c's. */
#include "schedule.h"
#include "schedule_priv.h"

#include <string.h>

#include "mbsplit.h"
#include "placement.h"
#include "compress.h"

/* One stage_info per (replica micro-batch count, stage), at
 * [k * p + stage] for counts[k]: the unit order follows each replica's m
 * (mbsplit.h); one count when even. x->m is left the most. */
static struct stage_info *stage_infos(struct ctx *x, int64_t *counts, int *nc)
{
    const int64_t most = x->m;
    *nc = oc_mbs_distinct(x->l, counts);
    struct stage_info *si = oc_xcalloc((size_t)(*nc * x->p), sizeof *si);
    for (int k = 0; k < *nc; k++) {
        x->m = counts[k];
        for (int64_t i = 0; i < x->p; i++)
            oc_sch_stage_info_init(x, i, &si[k * x->p + i]);
    }
    x->m = most;
    return si;
}

/* What a schedule needs of its layout and options: 0 with *nm_out the
 * micro-batches (the most of any replica), or -1 with st->msg. */
static int check_layout(const struct oc_model *m, const struct oc_layout *l,
                        const struct oc_schedule_opts *o, int64_t *nm_out,
                        struct oc_status *st)
{
    if (o->grain != OC_GRAIN_LAYER && o->grain != OC_GRAIN_CHUNK)
        return oc_fail(st, "schedule: unknown grain %d", (int)o->grain);
    if (l->tp < 1 || l->pp < 1 || l->dp < 1 || l->micro_batch < 1 ||
        l->seq_length < 1 || l->vchunks < 1)
        return oc_fail(st, "schedule: layout tp%lld-pp%lld-dp%lld-mb%lld-v%lld "
                           "with seq %lld has a size below 1",
                       (long long)l->tp, (long long)l->pp, (long long)l->dp,
                       (long long)l->micro_batch, (long long)l->vchunks,
                       (long long)l->seq_length);
    int interleaved = l->schedule == OC_SCHED_INTERLEAVED;
    if (!interleaved && l->vchunks != 1)
        return oc_fail(st, "schedule: v%lld needs the interleaved schedule",
                       (long long)l->vchunks);
    int64_t nm = oc_layout_num_micro_batches(l); /* the most of any replica */
    if (oc_mbs_on(l) ? oc_mbs_check(l, st) != 0
                     : nm < 1 || nm * l->dp * l->micro_batch != l->global_batch)
        return oc_mbs_on(l) ? oc_fail(st, "schedule: %s", st->msg)
                            : oc_fail(st, "schedule: global batch %lld is not a positive "
                                          "multiple of DP*micro-batch = %lld",
                                      (long long)l->global_batch,
                                      (long long)(l->dp * l->micro_batch));
    if (oc_place_check_split(l, m, st) != 0)
        return oc_fail(st, "schedule: %s", st->msg);
    if (interleaved && !oc_mbs_on(l) && nm % l->pp != 0)
        return oc_fail(st, "schedule: the interleaved schedule needs the %lld "
                           "micro-batches to be a multiple of PP %lld",
                       (long long)nm, (long long)l->pp);
    *nm_out = nm;
    return 0;
}

static void ctx_init(struct ctx *xp, const struct oc_model *m, const struct oc_layout *l,
                     const struct oc_schedule_opts *o, int64_t nm)
{
    struct ctx x;
    memset(&x, 0, sizeof x);
    x.model = m;
    x.l = l;
    x.t = l->tp;
    x.p = l->pp;
    x.d = l->dp;
    x.v = l->vchunks;
    x.m = nm;
    /* the largest chunk's layers: the CP ring's tags are unique per
     * (micro-batch, chunk, layer of the chunk) under uneven stages too */
    x.lc = oc_place_max_chunk_layers(l, m);
    x.grain = o->grain;
    x.cp = l->cp > 1 ? l->cp : 1;
    x.dg = x.d * x.cp;
    x.cp_tag_base = 2 * nm * x.v;
    x.emit_memory = o->emit_memory;
    x.sp = l->sequence_parallel && l->tp > 1;
    x.recompute = l->recompute;
    x.logits_bytes = oc_mem_logits_bytes(m, l);
    /* A CP rank holds s/c tokens (schedule_cp.h); its attention scores
     * are s/c queries against all s keys, so every part's FLOPs divide by
     * c. */
    double sd = (double)oc_layout_local_seq(l), bd = (double)l->micro_batch;
    const double sfull = (double)l->seq_length, cd = (double)x.cp;
    double hd = (double)m->hidden_size, td = (double)l->tp;
    /* TP splits the GEMMs, the attention heads and the vocabulary evenly
     * (Shoeybi et al. 2019): per-rank FLOPs are the part's over t. */
    x.attn_flops = oc_model_attn_fwd_flops(m, l->micro_batch, l->seq_length) / td / cd;
    x.mlp_flops = oc_model_mlp_fwd_flops(m, l->micro_batch, l->seq_length) / td / cd;
    x.head_flops = oc_model_head_fwd_flops(m, l->micro_batch, l->seq_length) / td / cd;
    x.embed_flops = 0.0;
    /* Selective recompute re-runs QK^T and softmax*V: 4*b*s^2*h
     * (Korthikanti et al. 2022, section 5). */
    x.sel_flops = 4.0 * bd * sd * sfull * hd / td;
    /* TP collectives move the s*b*h activation (Korthikanti et al. 2022,
     * section 4.2.2) at the run's element size; pipeline messages too, a 1/t
     * sequence shard under SP (Megatron-LM p2p tensor shape). */
    x.pb = oc_mem_param_bytes(l);
    x.tp_bytes = oc_layout_act_bytes(l) * sd * bd * hd;
    x.ce_bytes = 4.0 * sd * bd;
    x.p2p_bytes = x.sp ? x.tp_bytes / td : x.tp_bytes;
    oc_zero_ctx_init(&x.zc, m, l, o->grain, o->emit_memory);
    /* ZeRO-2/3 reduce per unit instead (schedule_zero.c) */
    x.dp_async = x.dg > 1 && l->overlap_grad_reduce && !x.zc.on && !oc_gc_on(l);
    x.bucket_size = oc_dp_bucket_size(l);
    x.bucket_cap = oc_dp_buckets_cap(m, l);
    x.pg = oc_pg_on(l) && !x.zc.on;
    x.embed_grad_bytes = x.pb.grad * (double)m->vocab_size * hd / td;
    *xp = x;
}

struct oc_schedule_builder {
    struct oc_layout l; /* the ctx points here */
    struct ctx x;
    int64_t counts[OC_MBS_MAX_RUNS];
    int nc;
    struct stage_info *si;
};

int oc_schedule_builder_new(struct oc_schedule_builder **out, const struct oc_model *m,
                            const struct oc_layout *l, const struct oc_schedule_opts *o,
                            struct oc_status *st)
{
    *out = NULL;
    struct oc_schedule_opts defaults = {OC_GRAIN_LAYER, 1, NULL};
    if (!o)
        o = &defaults;
    int64_t nm = 0;
    if (check_layout(m, l, o, &nm, st) != 0)
        return -1;
    struct oc_schedule_builder *b = oc_xcalloc(1, sizeof *b);
    b->l = *l;
    ctx_init(&b->x, m, &b->l, o, nm);
    b->si = stage_infos(&b->x, b->counts, &b->nc);
    *out = b;
    return 0;
}

int64_t oc_schedule_builder_ranks(const struct oc_schedule_builder *b)
{
    return oc_layout_world(&b->l);
}

int64_t oc_schedule_builder_micro_batches(const struct oc_schedule_builder *b)
{
    return b->x.m;
}

void oc_schedule_builder_rank(struct oc_schedule_builder *b, int64_t r,
                              struct oc_rank_ops *ro)
{
    const struct ctx *x = &b->x;
    OC_ASSERT(r >= 0 && r < oc_layout_world(&b->l));
    const struct oc_coord cr = oc_layout_coord(&b->l, r);
    const int k = oc_mbs_count_index(&b->l, b->counts, b->nc, cr.dp);
    struct stage_info *me = &b->si[k * x->p + cr.pp];
    if (me->count < 0) { /* every rank of a (count, stage) has the same ops */
        struct oc_rank_ops counted = {0, 0, NULL};
        oc_sch_emit_rank(x, me, r, &counted);
        me->count = counted.n;
    }
    if (ro->cap < me->count) {
        ro->ops = oc_xrealloc(ro->ops, (size_t)me->count * sizeof *ro->ops);
        ro->cap = me->count;
    }
    ro->n = 0;
    oc_sch_emit_rank(x, me, r, ro);
    OC_ASSERT(ro->n == me->count);
}

void oc_schedule_builder_free(struct oc_schedule_builder *b)
{
    if (!b)
        return;
    oc_sch_stage_info_free(b->si, b->nc * b->x.p);
    free(b);
}

int oc_schedule_build(struct oc_schedule *s, const struct oc_model *m,
                      const struct oc_layout *l,
                      const struct oc_schedule_opts *o, struct oc_status *st)
{
    memset(s, 0, sizeof *s);
    struct oc_schedule_builder *b;
    if (oc_schedule_builder_new(&b, m, l, o, st) != 0)
        return -1;
    s->nranks = oc_layout_world(l);
    s->num_micro_batches = b->x.m;
    s->layout = *l;
    s->ranks = oc_xcalloc((size_t)s->nranks, sizeof *s->ranks);
    for (int64_t r = 0; r < s->nranks; r++)
        if (!o || !o->only || o->only[r])
            oc_schedule_builder_rank(b, r, &s->ranks[r]);
    oc_schedule_builder_free(b);
    return 0;
}

void oc_schedule_free(struct oc_schedule *s)
{
    if (!s)
        return;
    if (s->ranks)
        for (int64_t r = 0; r < s->nranks; r++)
            free(s->ranks[r].ops);
    free(s->ranks);
    s->ranks = NULL;
    s->nranks = 0;
}
