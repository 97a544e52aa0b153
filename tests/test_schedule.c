/* test_schedule.c: the per-rank op lists of core/schedule.c: op counts
 * against hand counts (1F1B, sequence parallel + full recompute, selective
 * recompute), interleaved = 1F1B work, chunk grain = layer grain totals, op
 * fields, the DP reduction (blocking, overlapped, ZeRO-1), groups, names,
 * errors, the shipped "tiny" model, build speed. The unit orders, message
 * matching and replay are in test_schedule_order.c, the memory ops in
 * test_schedule_memory.c.
 *
 * Built on the tiny GPT of test_util.h (h 64, a 4, L 8, f 256, V 512,
 * P 128, tied embeddings) with s = 32, b = 1; the layouts, counters and
 * checkers are in schedule_fixtures.h.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "layout.h"
#include "memory.h"
#include "model.h"
#include "schedule.h"
#include "schedule_bucket.h"
#include "schedule_fixtures.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Hand counts                                                          */

static void test_counts_by_hand(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    /* t = 2, p = 2, d = 2, m = 4, 1F1B, layer grain, no SP, no recompute,
     * no ZeRO, no overlap; L = 8 so Lc = 4: stage 0 layers 0-3 (+ embedding),
     * stage 1 layers 4-7 (+ head). Tied embeddings. */
    struct oc_layout l = make_layout(&configs[1]);
    struct oc_schedule s;
    build(&s, &m, &l, OC_GRAIN_LAYER);
    CU_ASSERT_EQUAL(s.nranks, 8);
    CU_ASSERT_EQUAL(s.num_micro_batches, 4);
    double tpb = 32.0 * 1 * 64 * 2; /* s*b*h*2 = 4096 bytes */
    for (int64_t r = 0; r < s.nranks; r++) {
        const struct oc_rank_ops *ro = &s.ranks[r];
        int64_t st = oc_layout_coord(&l, r).pp;
        int64_t params = oc_mem_stage_params(&m, &l, st);
        /* 4 micro-batches x 4 layers of each part in each direction */
        CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_ATTN), 16);
        CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_MLP), 16);
        CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_BWD, OC_PART_ATTN), 16);
        CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_BWD, OC_PART_MLP), 16);
        CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_RECOMPUTE, -1), 0);
        CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_OPTIMIZER, OC_PART_ALL), 1);
        CU_ASSERT_EQUAL(count_ops(ro, OC_OP_WAIT, -1, -1), 1);
        /* TP all-reduces of s*b*h*2 per micro-batch: stage 0: 1 (embedding)
         * + 4 layers x 2 forward + 4 x 2 backward = 17; stage 1: 8 + 8 + 1
         * (head input gradient) = 17. Times 4 micro-batches = 68. */
        CU_ASSERT_EQUAL(count_coll(ro, OC_COLL_ALLREDUCE, OC_GROUP_TP, tpb), 68);
        CU_ASSERT_EQUAL(count_coll(ro, OC_COLL_ALLGATHER, OC_GROUP_TP, -1), 0);
        CU_ASSERT_EQUAL(count_coll(ro, OC_COLL_REDUCESCATTER, OC_GROUP_TP, -1), 0);
        /* one blocking DP all-reduce of the 16-bit gradients */
        CU_ASSERT_EQUAL(count_coll(ro, OC_COLL_ALLREDUCE, OC_GROUP_DP, 2.0 * params), 1);
        /* tied embedding: V*h/t*2 = 512*64/2*2 = 32768 bytes, both stages */
        CU_ASSERT_EQUAL(count_coll(ro, OC_COLL_ALLREDUCE, OC_GROUP_EMBED, 32768.0), 1);
        CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COLLECTIVE, -1, -1) ,
                        st == 0 ? 68 + 2 : 68 + 4 + 2);
        if (st == 0) {
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_EMBED), 4);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_BWD, OC_PART_EMBED), 4);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, -1, OC_PART_HEAD), 0);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_SEND, OC_PHASE_FWD, -1), 4);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_RECV, OC_PHASE_BWD, -1), 4);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_RECV, OC_PHASE_FWD, -1), 0);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_SEND, OC_PHASE_BWD, -1), 0);
            /* 3 state buffers + 4 activations; 4 frees */
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_ALLOC, -1, -1), 7);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_FREE, -1, -1), 4);
            /* 73 compute + 70 collective + 8 p2p + 11 memory + 1 wait */
            CU_ASSERT_EQUAL(ro->n, 163);
        } else {
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_HEAD), 4);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_BWD, OC_PART_HEAD), 4);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, -1, OC_PART_EMBED), 0);
            /* cross-entropy: one op of 3 all-reduces of s*b*4 = 128 bytes
             * per micro-batch */
            CU_ASSERT_EQUAL(count_coll(ro, OC_COLL_ALLREDUCE, OC_GROUP_TP, 128.0), 12);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_RECV, OC_PHASE_FWD, -1), 4);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_SEND, OC_PHASE_BWD, -1), 4);
            /* 3 + 4 activations + 4 logits; 8 frees */
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_ALLOC, -1, -1), 11);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_FREE, -1, -1), 8);
            /* 73 compute + 74 collective + 8 p2p + 19 memory + 1 wait */
            CU_ASSERT_EQUAL(ro->n, 175);
        }
        /* FLOPs per TP rank. Layer forward (model.h, GPT block, f = 4h):
         * 24*b*s*h^2 + 4*b*s^2*h = 24*32*4096 + 4*1024*64 = 3 407 872, over
         * t = 2: 1 703 936. Forward + backward = 3x, 4 layers, 4 micro-
         * batches: 81 788 928. Head (stage 1): 2*b*s*h*V / t = 1 048 576
         * forward, x3 x4 = 12 582 912. */
        double fl = 0;
        for (int64_t k = 0; k < ro->n; k++)
            if (ro->ops[k].kind == OC_OP_COMPUTE)
                fl += ro->ops[k].flops;
        OC_ASSERT_REL(fl, st == 0 ? 81788928.0 : 81788928.0 + 12582912.0, 1e-12);
        /* pipeline messages carry s*b*h*2 bytes */
        for (int64_t k = 0; k < ro->n; k++)
            if (ro->ops[k].kind == OC_OP_SEND || ro->ops[k].kind == OC_OP_RECV)
                CU_ASSERT_EQUAL(ro->ops[k].bytes, tpb);
        /* optimizer: 28 bytes per parameter, unsharded */
        const struct oc_op *opt = &ro->ops[ro->n - 1];
        CU_ASSERT_EQUAL(opt->kind, OC_OP_COMPUTE);
        CU_ASSERT_EQUAL(opt->phase, OC_PHASE_OPTIMIZER);
        OC_ASSERT_REL(opt->hbm_bytes, 28.0 * params, 1e-12);
        CU_ASSERT_EQUAL(ro->ops[ro->n - 2].kind, OC_OP_WAIT);
    }
    /* The first forward unit of rank 0 (tp0, pp0, dp0), op by op. */
    const struct oc_rank_ops *r0 = &s.ranks[0];
    static const struct { int kind, phase, part, layer; } head[] = {
        {OC_OP_ALLOC, OC_PHASE_FWD, OC_PART_ALL, -1},      /* weights */
        {OC_OP_ALLOC, OC_PHASE_FWD, OC_PART_ALL, -1},      /* grads */
        {OC_OP_ALLOC, OC_PHASE_FWD, OC_PART_ALL, -1},      /* optimizer */
        {OC_OP_ALLOC, OC_PHASE_FWD, OC_PART_ALL, 0},       /* activations */
        {OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_EMBED, -1},
        {OC_OP_COLLECTIVE, OC_PHASE_FWD, OC_PART_EMBED, -1},
        {OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_ATTN, 0},
        {OC_OP_COLLECTIVE, OC_PHASE_FWD, OC_PART_ATTN, 0},
        {OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_MLP, 0},
        {OC_OP_COLLECTIVE, OC_PHASE_FWD, OC_PART_MLP, 0},
        {OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_ATTN, 1},
    };
    for (size_t k = 0; k < sizeof head / sizeof head[0]; k++) {
        CU_ASSERT_EQUAL(r0->ops[k].kind, head[k].kind);
        CU_ASSERT_EQUAL(r0->ops[k].phase, head[k].phase);
        CU_ASSERT_EQUAL(r0->ops[k].part, head[k].part);
        CU_ASSERT_EQUAL(r0->ops[k].layer_first, head[k].layer);
    }
    CU_ASSERT_EQUAL(r0->ops[0].buf, OC_BUF_WEIGHTS);
    CU_ASSERT_EQUAL(r0->ops[0].mb, -1);
    CU_ASSERT_EQUAL(r0->ops[3].buf, OC_BUF_ACTIVATIONS);
    CU_ASSERT_EQUAL(r0->ops[3].mb, 0);
    CU_ASSERT_EQUAL(r0->ops[3].layer_count, 4);
    oc_schedule_free(&s);
}

/* Sequence parallel + full recompute, t = 2, p = 2, d = 1, m = 2. */
static void test_counts_sp_full(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    struct cfg c = {2, 2, 1, 2, OC_SCHED_1F1B, 1, 1, OC_RECOMPUTE_FULL, 0, 0,
                    OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    for (int g = 0; g < 2; g++) {
        struct oc_schedule s;
        build(&s, &m, &l, (enum oc_grain)g);
        const struct oc_rank_ops *r0 = &s.ranks[rank_of(&l, 0, 0, 0)];
        const struct oc_rank_ops *r1 = &s.ranks[rank_of(&l, 1, 1, 0)];
        /* Per micro-batch, SP puts an all-gather before and a reduce-scatter
         * after each part, in forward, recompute and backward:
         *   layers: 4 x 2 parts x (fwd + recompute + bwd) = 24 AG, 24 RS
         *   stage 0: embedding RS (fwd), AG (bwd)  -> 25 AG, 25 RS
         *   stage 1: head AG (fwd), RS (bwd)       -> 25 AG, 25 RS
         * x 2 micro-batches = 50 each. */
        CU_ASSERT_EQUAL(count_coll(r0, OC_COLL_ALLGATHER, OC_GROUP_TP, 4096.0), 50);
        CU_ASSERT_EQUAL(count_coll(r0, OC_COLL_REDUCESCATTER, OC_GROUP_TP, 4096.0), 50);
        CU_ASSERT_EQUAL(count_coll(r1, OC_COLL_ALLGATHER, OC_GROUP_TP, 4096.0), 50);
        CU_ASSERT_EQUAL(count_coll(r1, OC_COLL_REDUCESCATTER, OC_GROUP_TP, 4096.0), 50);
        CU_ASSERT_EQUAL(count_coll(r0, OC_COLL_ALLREDUCE, OC_GROUP_TP, -1), 0);
        CU_ASSERT_EQUAL(count_coll(r1, OC_COLL_ALLREDUCE, OC_GROUP_TP, 128.0), 6);
        /* SP pipeline messages: s*b*h*2 / t = 2048 bytes */
        for (int64_t k = 0; k < r0->n; k++)
            if (r0->ops[k].kind == OC_OP_SEND)
                CU_ASSERT_EQUAL(r0->ops[k].bytes, 2048.0);
        if (g == OC_GRAIN_LAYER) {
            CU_ASSERT_EQUAL(count_ops(r0, OC_OP_COMPUTE, OC_PHASE_RECOMPUTE, OC_PART_ATTN), 8);
            CU_ASSERT_EQUAL(count_ops(r0, OC_OP_COMPUTE, OC_PHASE_RECOMPUTE, OC_PART_MLP), 8);
        } else {
            /* one compute per unit (2 micro-batches x fwd, bwd) + optimizer;
             * stage 1's forward unit: AG x9 (8 layer + head), compute,
             * RS x8, CE x3; its backward: AG x16, compute, RS x17 (16 + head) */
            CU_ASSERT_EQUAL(count_ops(r1, OC_OP_COMPUTE, -1, -1), 5);
            int64_t n_ag9 = 0, n_rs8 = 0, n_ag16 = 0, n_rs17 = 0;
            for (int64_t k = 0; k < r1->n; k++) {
                const struct oc_op *o = &r1->ops[k];
                if (o->kind != OC_OP_COLLECTIVE || o->group != OC_GROUP_TP)
                    continue;
                n_ag9 += o->coll == OC_COLL_ALLGATHER && o->count == 9 && o->phase == OC_PHASE_FWD;
                n_rs8 += o->coll == OC_COLL_REDUCESCATTER && o->count == 8 && o->phase == OC_PHASE_FWD;
                n_ag16 += o->coll == OC_COLL_ALLGATHER && o->count == 16 && o->phase == OC_PHASE_BWD;
                n_rs17 += o->coll == OC_COLL_REDUCESCATTER && o->count == 17 && o->phase == OC_PHASE_BWD;
            }
            CU_ASSERT_EQUAL(n_ag9, 2);
            CU_ASSERT_EQUAL(n_rs8, 2);
            CU_ASSERT_EQUAL(n_ag16, 2);
            CU_ASSERT_EQUAL(n_rs17, 2);
        }
        /* FLOPs: full recompute adds one forward: 4x the forward per layer:
         * 1 703 936 x 4 x 4 layers x 2 micro-batches = 54 525 952 (stage 0). */
        double fl = 0;
        for (int64_t k = 0; k < r0->n; k++)
            if (r0->ops[k].kind == OC_OP_COMPUTE)
                fl += r0->ops[k].flops;
        OC_ASSERT_REL(fl, 54525952.0, 1e-12);
        oc_schedule_free(&s);
    }
}

/* Selective recompute: one RECOMPUTE ATTN per layer per micro-batch with the
 * scores' 4*b*s^2*h / t = 4*1024*64/2 = 131 072 FLOPs. */
static void test_selective_recompute(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    struct cfg c = {2, 2, 1, 2, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_SELECTIVE, 0,
                    0, OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    struct oc_schedule s;
    build(&s, &m, &l, OC_GRAIN_LAYER);
    const struct oc_rank_ops *r = &s.ranks[0];
    CU_ASSERT_EQUAL(count_ops(r, OC_OP_COMPUTE, OC_PHASE_RECOMPUTE, OC_PART_ATTN), 8);
    CU_ASSERT_EQUAL(count_ops(r, OC_OP_COMPUTE, OC_PHASE_RECOMPUTE, OC_PART_MLP), 0);
    for (int64_t k = 0; k < r->n; k++) {
        const struct oc_op *o = &r->ops[k];
        if (o->kind == OC_OP_COMPUTE && o->phase == OC_PHASE_RECOMPUTE) {
            CU_ASSERT_EQUAL(o->flops, 131072.0);
            /* right before the same layer's attention backward */
            CU_ASSERT_EQUAL(r->ops[k + 1].kind, OC_OP_COMPUTE);
            CU_ASSERT_EQUAL(r->ops[k + 1].phase, OC_PHASE_BWD);
            CU_ASSERT_EQUAL(r->ops[k + 1].part, OC_PART_ATTN);
            CU_ASSERT_EQUAL(r->ops[k + 1].layer_first, o->layer_first);
        }
    }
    oc_schedule_free(&s);
}

/* ------------------------------------------------------------------ */
/* Same work under every schedule; chunk grain = layer grain            */

struct work {
    int32_t mb, layer, phase, part;
    double flops;
};

static int work_cmp(const void *a, const void *b)
{
    const struct work *x = a, *y = b;
    if (x->mb != y->mb)
        return x->mb - y->mb;
    if (x->layer != y->layer)
        return x->layer - y->layer;
    if (x->phase != y->phase)
        return x->phase - y->phase;
    return x->part - y->part;
}

/* Compute ops of the pipeline (tp 0, dp 0), sorted. */
static int64_t pipeline_work(const struct oc_schedule *s, struct work **out)
{
    const struct oc_layout *l = &s->layout;
    int64_t n = 0;
    for (int64_t st = 0; st < l->pp; st++)
        n += s->ranks[rank_of(l, 0, st, 0)].n;
    struct work *w = malloc((size_t)n * sizeof *w);
    int64_t k = 0;
    for (int64_t st = 0; st < l->pp; st++) {
        const struct oc_rank_ops *r = &s->ranks[rank_of(l, 0, st, 0)];
        for (int64_t i = 0; i < r->n; i++) {
            const struct oc_op *o = &r->ops[i];
            if (o->kind == OC_OP_COMPUTE && o->phase != OC_PHASE_OPTIMIZER)
                w[k++] = (struct work){o->mb, o->layer_first, o->phase,
                                       o->part, o->flops};
        }
    }
    qsort(w, (size_t)k, sizeof *w, work_cmp);
    *out = w;
    return k;
}

static void test_interleaved_same_work(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    struct cfg base = {2, 2, 1, 4, OC_SCHED_1F1B, 1, 1, OC_RECOMPUTE_SELECTIVE,
                       0, 0, OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&base);
    struct oc_schedule s;
    build(&s, &m, &l, OC_GRAIN_LAYER);
    struct work *ref;
    int64_t nref = pipeline_work(&s, &ref);
    /* 4 micro-batches x 8 layers x (2 fwd + 2 bwd + 1 recompute) + 4 x
     * (embed fwd, bwd, head fwd, bwd) = 160 + 16 */
    CU_ASSERT_EQUAL(nref, 176);
    oc_schedule_free(&s);
    const int64_t vs[] = {2, 4};
    for (int i = 0; i < 2; i++) {
        struct oc_layout li = l;
        li.schedule = OC_SCHED_INTERLEAVED;
        li.vchunks = vs[i];
        build(&s, &m, &li, OC_GRAIN_LAYER);
        struct work *w;
        int64_t n = pipeline_work(&s, &w);
        CU_ASSERT_EQUAL_FATAL(n, nref);
        double fa = 0, fb = 0;
        for (int64_t k = 0; k < n; k++) {
            CU_ASSERT_EQUAL(work_cmp(&w[k], &ref[k]), 0);
            CU_ASSERT_EQUAL(w[k].flops, ref[k].flops);
            fa += w[k].flops;
            fb += ref[k].flops;
        }
        OC_ASSERT_REL(fa, fb, 1e-12);
        free(w);
        oc_schedule_free(&s);
    }
    free(ref);
}

struct totals {
    double flops, hbm, p2p_bytes, mem[OC_BUF_COUNT][2];
    double coll_bytes[4][4]; /* [group][coll]: sum of bytes*count */
    int64_t coll_n[4][4];    /* [group][coll]: sum of count */
    int64_t n_send, n_recv, n_alloc, n_free, n_wait;
};

static void rank_totals(const struct oc_rank_ops *r, struct totals *t)
{
    memset(t, 0, sizeof *t);
    for (int64_t i = 0; i < r->n; i++) {
        const struct oc_op *o = &r->ops[i];
        switch (o->kind) {
        case OC_OP_COMPUTE:
            t->flops += o->flops;
            t->hbm += o->hbm_bytes;
            break;
        case OC_OP_SEND:
            t->n_send++;
            t->p2p_bytes += o->bytes;
            break;
        case OC_OP_RECV:
            t->n_recv++;
            t->p2p_bytes += o->bytes;
            break;
        case OC_OP_COLLECTIVE:
            t->coll_bytes[o->group][o->coll] += o->bytes * o->count;
            t->coll_n[o->group][o->coll] += o->count;
            break;
        case OC_OP_ALLOC:
            t->n_alloc++;
            t->mem[o->buf][0] += o->bytes;
            break;
        case OC_OP_FREE:
            t->n_free++;
            t->mem[o->buf][1] += o->bytes;
            break;
        case OC_OP_WAIT:
            t->n_wait++;
            break;
        }
    }
}

static void test_chunk_grain_totals(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    for (int i = 0; i < NCONFIGS; i++) {
        struct oc_layout l = make_layout(&configs[i]);
        struct oc_schedule a, b;
        build(&a, &m, &l, OC_GRAIN_LAYER);
        build(&b, &m, &l, OC_GRAIN_CHUNK);
        for (int64_t r = 0; r < a.nranks; r++) {
            struct totals x, y;
            rank_totals(&a.ranks[r], &x);
            rank_totals(&b.ranks[r], &y);
            CU_ASSERT(x.flops > 0);
            OC_ASSERT_REL(y.flops, x.flops, 1e-12);
            OC_ASSERT_REL(y.hbm, x.hbm, 1e-12);
            CU_ASSERT_EQUAL(y.p2p_bytes, x.p2p_bytes);
            CU_ASSERT_EQUAL(y.n_send, x.n_send);
            CU_ASSERT_EQUAL(y.n_recv, x.n_recv);
            CU_ASSERT_EQUAL(y.n_alloc, x.n_alloc);
            CU_ASSERT_EQUAL(y.n_free, x.n_free);
            CU_ASSERT_EQUAL(y.n_wait, x.n_wait);
            CU_ASSERT(memcmp(y.mem, x.mem, sizeof x.mem) == 0);
            CU_ASSERT(memcmp(y.coll_n, x.coll_n, sizeof x.coll_n) == 0);
            for (int g = 0; g < 4; g++)
                for (int c = 0; c < 4; c++)
                    OC_ASSERT_REL(y.coll_bytes[g][c], x.coll_bytes[g][c], 1e-12);
            /* one compute op per unit, plus the optimizer */
            CU_ASSERT_EQUAL(count_ops(&b.ranks[r], OC_OP_COMPUTE, -1, OC_PART_CHUNK),
                            2 * a.num_micro_batches * l.vchunks);
            CU_ASSERT_EQUAL(count_ops(&b.ranks[r], OC_OP_COMPUTE, -1, -1),
                            2 * a.num_micro_batches * l.vchunks + 1);
        }
        oc_schedule_free(&a);
        oc_schedule_free(&b);
    }
}

/* ------------------------------------------------------------------ */
/* Op fields                                                            */

static void test_op_fields(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    for (int i = 0; i < NCONFIGS; i++) {
        struct oc_layout l = make_layout(&configs[i]);
        struct oc_schedule s;
        build(&s, &m, &l, OC_GRAIN_LAYER);
        for (int64_t r = 0; r < s.nranks; r++) {
            int64_t st = oc_layout_coord(&l, r).pp;
            for (int64_t k = 0; k < s.ranks[r].n; k++) {
                const struct oc_op *o = &s.ranks[r].ops[k];
                CU_ASSERT_EQUAL(o->stage, st);
                CU_ASSERT(o->chunk >= 0 && o->chunk < l.vchunks);
                CU_ASSERT(o->mb >= -1 && o->mb < s.num_micro_batches);
                int per_mb = !(o->kind == OC_OP_WAIT ||
                               o->phase == OC_PHASE_OPTIMIZER ||
                               (o->kind == OC_OP_COLLECTIVE &&
                                o->group != OC_GROUP_TP) ||
                               ((o->kind == OC_OP_ALLOC || o->kind == OC_OP_FREE) &&
                                o->buf <= OC_BUF_OPTIMIZER));
                CU_ASSERT_EQUAL(o->mb >= 0, per_mb);
                if (o->kind == OC_OP_COLLECTIVE)
                    CU_ASSERT(o->count >= 1 && o->bytes > 0);
                /* a layer op's layer sits in this stage's chunk */
                if (o->kind == OC_OP_COMPUTE &&
                    (o->part == OC_PART_ATTN || o->part == OC_PART_MLP)) {
                    int64_t lc = 8 / (l.pp * l.vchunks);
                    CU_ASSERT_EQUAL(o->layer_first / lc,
                                    o->chunk * l.pp + st);
                    CU_ASSERT_EQUAL(o->layer_count, 1);
                }
            }
        }
        oc_schedule_free(&s);
    }
}

/* ------------------------------------------------------------------ */
/* DP buckets (schedule_bucket.h): gpt3-1.3b tp2-pp2-dp8, the case */

/* h = 2048, f = 8192, L = 24, V = 50 257 (25 129 rows a TP rank), P =
 * 2048, tied. Megatron-Core's bucket: max(40M, 1M * 8) = 40M parameters.
 * A layer's TP shard Pl is about 25.2M (12h^2/2 plus biases and norms), so
 * two layers close a bucket. Stage 0 (layers 0-11 and the embedding,
 * 25 129*2048 + 2048*2048 = 55 658 496) walked backwards: [10-11], [8-9],
 * ..., [0-1] + embedding: 6 buckets. Stage 1 (layers 12-23 and the head:
 * final norm 2*2048 plus the tied copy 25 129*2048 = 51 468 288): layer
 * 23 + head (76.7M) alone, then [21-22] ... [13-14], and [12] left at the
 * end: 7 buckets. Each sums to the stage's parameters; in the schedule,
 * each bucket's async all-reduce follows its first layer's attention
 * backward (its TP all-reduce) of the last micro-batch, the embedding's
 * backward for stage 0's last. */
static void test_dp_buckets(void)
{
    struct oc_model m;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_model_load("gpt3-1.3b", &m, &st), 0);
    struct cfg c = {2, 2, 8, 4, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE,
                    0, 1, OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    CU_ASSERT_EQUAL(oc_dp_bucket_size(&l), 40000000);
    const double Pl = (double)oc_model_layer_params_tp(&m, 2);
    CU_ASSERT_FATAL(Pl > 20e6 && Pl < 40e6);
    struct oc_dp_bucket b[12];
    const int64_t n0 = oc_dp_buckets(&m, &l, 0, 0, 40000000, b);
    CU_ASSERT_EQUAL_FATAL(n0, 6);
    for (int64_t j = 0; j < 6; j++) {
        CU_ASSERT_EQUAL(b[j].layer_first, 10 - 2 * j);
        CU_ASSERT_EQUAL(b[j].layer_count, 2);
        CU_ASSERT_EQUAL(b[j].head, 0);
        CU_ASSERT_EQUAL(b[j].embed, j == 5);
        OC_ASSERT_REL(b[j].params, 2 * Pl + (j == 5 ? 55658496.0 : 0.0), 1e-15);
    }
    const int64_t n1 = oc_dp_buckets(&m, &l, 1, 0, 40000000, b);
    CU_ASSERT_EQUAL_FATAL(n1, 7);
    const int64_t first[7] = {23, 21, 19, 17, 15, 13, 12}, count[7] = {1, 2, 2, 2, 2, 2, 1};
    double sum1 = 0;
    for (int64_t j = 0; j < 7; j++) {
        CU_ASSERT_EQUAL(b[j].layer_first, first[j]);
        CU_ASSERT_EQUAL(b[j].layer_count, count[j]);
        CU_ASSERT_EQUAL(b[j].head, j == 0);
        CU_ASSERT_EQUAL(b[j].embed, 0);
        sum1 += b[j].params;
    }
    OC_ASSERT_REL(b[0].params, Pl + 51468288.0, 1e-15);
    OC_ASSERT_REL(sum1, (double)oc_mem_stage_params(&m, &l, 1), 1e-15);

    struct oc_schedule s;
    build(&s, &m, &l, OC_GRAIN_LAYER);
    for (int64_t r = 0; r < s.nranks; r++) {
        const struct oc_rank_ops *ro = &s.ranks[r];
        const int64_t stage = oc_layout_coord(&l, r).pp;
        int64_t nb = 0;
        double bytes = 0;
        for (int64_t k = 0; k < ro->n; k++) {
            const struct oc_op *o = &ro->ops[k];
            if (o->kind != OC_OP_COLLECTIVE || o->group != OC_GROUP_DP)
                continue;
            CU_ASSERT_EQUAL(o->async, 1);
            bytes += o->bytes;
            nb++;
            /* the compute before it (past its TP all-reduce) */
            int64_t q = k - 1;
            while (q > 0 && ro->ops[q].kind != OC_OP_COMPUTE)
                q--;
            const struct oc_op *pc = &ro->ops[q];
            CU_ASSERT_EQUAL(pc->phase, OC_PHASE_BWD);
            CU_ASSERT_EQUAL(pc->mb, 3);
            if (stage == 0 && o->layer_first == 0) {
                CU_ASSERT_EQUAL(pc->part, OC_PART_EMBED);
            } else {
                CU_ASSERT_EQUAL(pc->part, OC_PART_ATTN);
                CU_ASSERT_EQUAL(pc->layer_first, o->layer_first);
            }
        }
        CU_ASSERT_EQUAL(nb, stage == 0 ? 6 : 7);
        OC_ASSERT_REL(bytes, 2.0 * (double)oc_mem_stage_params(&m, &l, stage), 1e-12);
    }
    oc_schedule_free(&s);

    /* chunk grain: the merged backward split in the same places, the
     * pieces' FLOPs summing to the unit's */
    build(&s, &m, &l, OC_GRAIN_CHUNK);
    const struct oc_rank_ops *ro = &s.ranks[0];
    double piece = 0, whole = 0;
    int64_t nb = 0;
    for (int64_t k = 0; k < ro->n; k++) {
        const struct oc_op *o = &ro->ops[k];
        if (o->kind == OC_OP_COMPUTE && o->phase == OC_PHASE_BWD)
            *(o->mb == 3 ? &piece : o->mb == 2 ? &whole : &(double){0}) += o->flops;
        if (o->kind == OC_OP_COLLECTIVE && o->group == OC_GROUP_DP) {
            nb++;
            CU_ASSERT_EQUAL(ro->ops[k - 1].kind == OC_OP_COMPUTE ||
                                ro->ops[k - 1].group == OC_GROUP_TP, 1);
        }
    }
    CU_ASSERT_EQUAL(nb, 6);
    OC_ASSERT_REL(piece, whole, 1e-12);
    oc_schedule_free(&s);
}

/* ------------------------------------------------------------------ */
/* DP: blocking vs overlapped, ZeRO-1                                   */

static void test_dp_reduction(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    /* overlap + ZeRO-1, interleaved v2: one async reduce-scatter per chunk,
     * right after that chunk's last backward; the chunks' bytes add up to
     * the stage's 2*params; WAIT; optimizer over params/d; all-gather. */
    struct cfg c = {1, 2, 2, 4, OC_SCHED_INTERLEAVED, 2, 0, OC_RECOMPUTE_NONE,
                    1, 1, OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    struct oc_schedule s;
    build(&s, &m, &l, OC_GRAIN_CHUNK);
    for (int64_t r = 0; r < s.nranks; r++) {
        const struct oc_rank_ops *ro = &s.ranks[r];
        int64_t st = oc_layout_coord(&l, r).pp;
        double params = (double)oc_mem_stage_params(&m, &l, st);
        double sum = 0;
        int64_t n_async = 0, seen_chunk[2] = {0, 0};
        for (int64_t k = 0; k < ro->n; k++) {
            const struct oc_op *o = &ro->ops[k];
            if (o->kind == OC_OP_COLLECTIVE && o->group == OC_GROUP_DP &&
                o->async) {
                n_async++;
                sum += o->bytes;
                CU_ASSERT_EQUAL(o->coll, OC_COLL_REDUCESCATTER);
                seen_chunk[o->chunk]++;
                /* the tiny model's chunk is one bucket (far below
                 * Megatron's 40M parameters): issued right after the
                 * compute (or its TP collective) of the chunk's last
                 * backward, of the last micro-batch, inside the unit (only
                 * its send and the activations' FREE after it) */
                const struct oc_op *pv = &ro->ops[k - 1];
                CU_ASSERT(pv->kind == OC_OP_COMPUTE ||
                          (pv->kind == OC_OP_COLLECTIVE && pv->group == OC_GROUP_TP));
                CU_ASSERT_EQUAL(pv->phase, OC_PHASE_BWD);
                CU_ASSERT_EQUAL(pv->chunk, o->chunk);
                CU_ASSERT_EQUAL(pv->mb, 3);
                for (int64_t j = k + 1; j < ro->n; j++)
                    CU_ASSERT(!(ro->ops[j].mb >= 0 && ro->ops[j].chunk == o->chunk &&
                                ro->ops[j].kind != OC_OP_SEND &&
                                ro->ops[j].kind != OC_OP_FREE));
            }
        }
        CU_ASSERT_EQUAL(n_async, 2);
        CU_ASSERT_EQUAL(seen_chunk[0], 1);
        CU_ASSERT_EQUAL(seen_chunk[1], 1);
        OC_ASSERT_REL(sum, 2.0 * params, 1e-12);
        CU_ASSERT_EQUAL(count_coll(ro, OC_COLL_ALLREDUCE, OC_GROUP_DP, -1), 0);
        const struct oc_op *ag = &ro->ops[ro->n - 1];
        const struct oc_op *opt = &ro->ops[ro->n - 2];
        CU_ASSERT_EQUAL(ag->kind, OC_OP_COLLECTIVE);
        CU_ASSERT_EQUAL(ag->coll, OC_COLL_ALLGATHER);
        CU_ASSERT_EQUAL(ag->group, OC_GROUP_DP);
        CU_ASSERT_EQUAL(ag->bytes, 2.0 * params);
        CU_ASSERT_EQUAL(opt->phase, OC_PHASE_OPTIMIZER);
        OC_ASSERT_REL(opt->hbm_bytes, 28.0 * params / 2, 1e-12);
        CU_ASSERT_EQUAL(ro->ops[ro->n - 3].kind, OC_OP_WAIT);
        /* ZeRO-1: optimizer states 12*params/d */
        CU_ASSERT_EQUAL(ro->ops[2].buf, OC_BUF_OPTIMIZER);
        OC_ASSERT_REL(ro->ops[2].bytes, 12.0 * params / 2, 1e-12);
    }
    oc_schedule_free(&s);

    /* d = 1: no DP collective at all */
    struct cfg c1 = {2, 2, 1, 4, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 1, 1,
                     OC_ORDER_TP_DP_PP};
    l = make_layout(&c1);
    build(&s, &m, &l, OC_GRAIN_LAYER);
    for (int64_t r = 0; r < s.nranks; r++)
        for (int k = 0; k < 4; k++)
            CU_ASSERT_EQUAL(count_coll(&s.ranks[r], k, OC_GROUP_DP, -1), 0);
    oc_schedule_free(&s);
}

/* An fp32 run against the same layout in bf16: the same ops in the same
 * order; every pipeline message, TP, DP and embedding collective twice the
 * bytes (the cross-entropy's fp32 all-reduces stay s*b*4 = 128); weights and
 * gradients 4 bytes per parameter, optimizer states 8 (12 in bf16), /d
 * under ZeRO-1; the optimizer's 28 HBM bytes per parameter either way. */
static void test_fp32_bytes(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    struct cfg zero = {2, 2, 2, 4, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 1, 1,
                       OC_ORDER_TP_DP_PP};
    const struct cfg *cs[2] = {&configs[1], &zero};
    for (int i = 0; i < 2; i++) {
        struct oc_layout l16 = make_layout(cs[i]), l32 = l16;
        l32.precision = OC_PREC_FP32;
        struct oc_schedule a, b;
        build(&a, &m, &l16, OC_GRAIN_LAYER);
        build(&b, &m, &l32, OC_GRAIN_LAYER);
        int64_t n_ce = 0, n_doubled = 0;
        for (int64_t r = 0; r < a.nranks; r++) {
            const struct oc_rank_ops *x = &a.ranks[r], *y = &b.ranks[r];
            CU_ASSERT_EQUAL_FATAL(x->n, y->n);
            for (int64_t k = 0; k < x->n; k++) {
                const struct oc_op *o = &x->ops[k], *q = &y->ops[k];
                CU_ASSERT_EQUAL(o->kind, q->kind);
                CU_ASSERT_EQUAL(o->hbm_bytes, q->hbm_bytes);
                const int msg = o->kind == OC_OP_SEND || o->kind == OC_OP_RECV ||
                                o->kind == OC_OP_COLLECTIVE;
                if (msg && o->bytes == 128.0) {
                    CU_ASSERT_EQUAL(q->bytes, 128.0);
                    n_ce++;
                } else if (msg || (o->kind == OC_OP_ALLOC && o->buf <= OC_BUF_GRADS)) {
                    CU_ASSERT_EQUAL(q->bytes, 2.0 * o->bytes);
                    n_doubled++;
                } else if (o->kind == OC_OP_ALLOC && o->buf == OC_BUF_OPTIMIZER) {
                    OC_ASSERT_REL(q->bytes, o->bytes * 8.0 / 12.0, 1e-12);
                    const double p = (double)oc_mem_stage_params(
                        &m, &l32, oc_layout_coord(&l32, r).pp);
                    OC_ASSERT_REL(q->bytes, 8.0 * p / (i == 1 ? 2.0 : 1.0), 1e-12);
                }
            }
        }
        CU_ASSERT(n_ce > 0 && n_doubled > 0);
        oc_schedule_free(&a);
        oc_schedule_free(&b);
    }
}

/* ------------------------------------------------------------------ */
/* Groups, names, errors, speed                                          */

static void test_groups(void)
{
    struct cfg c = {2, 2, 2, 4, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0,
                    OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    int64_t g[4];
    /* tp-dp-pp: rank = tp + 2*(dp + 2*pp); rank 5 = (tp1, dp0, pp1) */
    CU_ASSERT_EQUAL(oc_schedule_group(&l, 5, OC_GROUP_TP, g, 4), 2);
    CU_ASSERT(g[0] == 4 && g[1] == 5);
    CU_ASSERT_EQUAL(oc_schedule_group(&l, 5, OC_GROUP_DP, g, 4), 2);
    CU_ASSERT(g[0] == 5 && g[1] == 7);
    CU_ASSERT_EQUAL(oc_schedule_group(&l, 5, OC_GROUP_EMBED, g, 4), 2);
    CU_ASSERT(g[0] == 1 && g[1] == 5);
    /* tp-pp-dp: rank = tp + 2*(pp + 2*dp); rank 5 = (tp1, pp0, dp1) */
    l.order = OC_ORDER_TP_PP_DP;
    CU_ASSERT_EQUAL(oc_schedule_group(&l, 5, OC_GROUP_TP, g, 4), 2);
    CU_ASSERT(g[0] == 4 && g[1] == 5);
    CU_ASSERT_EQUAL(oc_schedule_group(&l, 5, OC_GROUP_DP, g, 4), 2);
    CU_ASSERT(g[0] == 1 && g[1] == 5);
    CU_ASSERT_EQUAL(oc_schedule_group(&l, 5, OC_GROUP_EMBED, g, 4), 2);
    CU_ASSERT(g[0] == 5 && g[1] == 7);
    /* the count is returned even when cap is smaller */
    g[1] = -7;
    CU_ASSERT_EQUAL(oc_schedule_group(&l, 5, OC_GROUP_DP, g, 1), 2);
    CU_ASSERT_EQUAL(g[1], -7);
}

static void test_names(void)
{
    CU_ASSERT_STRING_EQUAL(oc_op_kind_name(OC_OP_COMPUTE), "compute");
    CU_ASSERT_STRING_EQUAL(oc_op_kind_name(OC_OP_SEND), "send");
    CU_ASSERT_STRING_EQUAL(oc_op_kind_name(OC_OP_WAIT), "wait");
    CU_ASSERT_STRING_EQUAL(oc_phase_name(OC_PHASE_RECOMPUTE), "recompute");
    CU_ASSERT_STRING_EQUAL(oc_phase_name(OC_PHASE_OPTIMIZER), "optimizer");
    CU_ASSERT_STRING_EQUAL(oc_part_name(OC_PART_ATTN), "attn");
    CU_ASSERT_STRING_EQUAL(oc_part_name(OC_PART_CHUNK), "chunk");
    CU_ASSERT_STRING_EQUAL(oc_part_name(OC_PART_ALL), "all");
    CU_ASSERT_STRING_EQUAL(oc_coll_name(OC_COLL_REDUCESCATTER), "reducescatter");
    CU_ASSERT_STRING_EQUAL(oc_coll_name(OC_COLL_BROADCAST), "broadcast");
    CU_ASSERT_STRING_EQUAL(oc_group_name(OC_GROUP_EMBED), "embed");
    CU_ASSERT_STRING_EQUAL(oc_buf_name(OC_BUF_ACTIVATIONS), "activations");
    CU_ASSERT_STRING_EQUAL(oc_buf_name(OC_BUF_COMM), "comm");
    CU_ASSERT_STRING_EQUAL(oc_buf_name((enum oc_buf)99), "?");
}

static void test_errors(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    struct oc_schedule s;
    struct oc_status st = {{0}};
    /* interleaved needs m % p == 0: m = 3, p = 2 */
    struct cfg c = {1, 2, 1, 3, OC_SCHED_INTERLEAVED, 2, 0, OC_RECOMPUTE_NONE,
                    0, 0, OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    CU_ASSERT_EQUAL(oc_schedule_build(&s, &m, &l, NULL, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "multiple of PP 2"));
    CU_ASSERT_PTR_NULL(s.ranks);
    /* 8 layers do not split over p*v = 3 */
    struct cfg c2 = {1, 3, 1, 3, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0,
                     OC_ORDER_TP_DP_PP};
    l = make_layout(&c2);
    CU_ASSERT_EQUAL(oc_schedule_build(&s, &m, &l, NULL, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "num_hidden_layers 8 is not divisible by PP 3"));
    /* pp2 with first2 and last2: no stage between takes the other 4 */
    l.pp = 2;
    l.dp = 1;
    l.first_stage_layers = 2;
    l.last_stage_layers = 2;
    CU_ASSERT_EQUAL(oc_schedule_build(&s, &m, &l, NULL, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "first2 + last2 must be the 8 layers"));
    l.first_stage_layers = l.last_stage_layers = 0;
    /* G not a multiple of d*b */
    struct cfg c3 = {1, 2, 2, 4, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0,
                     OC_ORDER_TP_DP_PP};
    l = make_layout(&c3);
    l.global_batch = 7;
    CU_ASSERT_EQUAL(oc_schedule_build(&s, &m, &l, NULL, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "global batch 7"));
    /* NULL opts means layer grain with memory ops */
    l.global_batch = 8;
    CU_ASSERT_EQUAL_FATAL(oc_schedule_build(&s, &m, &l, NULL, &st), 0);
    CU_ASSERT_EQUAL(count_ops(&s.ranks[0], OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_ATTN), 16);
    CU_ASSERT_EQUAL(count_ops(&s.ranks[0], OC_OP_ALLOC, -1, -1), 7);
    oc_schedule_free(&s);
    oc_schedule_free(&s); /* freeing twice is harmless */
}

/* The shipped "tiny" model loads to the same dimensions as the fixture and
 * gives the same schedule. */
static void test_loaded_tiny(void)
{
    struct oc_model a, b;
    struct oc_status st = {{0}};
    oc_test_tiny_model(&a);
    CU_ASSERT_EQUAL_FATAL(oc_model_load("tiny", &b, &st), 0);
    struct oc_layout l = make_layout(&configs[5]);
    struct oc_schedule x, y;
    build(&x, &a, &l, OC_GRAIN_LAYER);
    build(&y, &b, &l, OC_GRAIN_LAYER);
    CU_ASSERT_EQUAL_FATAL(x.nranks, y.nranks);
    for (int64_t r = 0; r < x.nranks; r++) {
        CU_ASSERT_EQUAL_FATAL(x.ranks[r].n, y.ranks[r].n);
        CU_ASSERT(memcmp(x.ranks[r].ops, y.ranks[r].ops,
                         (size_t)x.ranks[r].n * sizeof *x.ranks[r].ops) == 0);
    }
    CU_ASSERT(check_p2p(&y) > 0);
    CU_ASSERT(simulate(&y, 0));
    oc_schedule_free(&x);
    oc_schedule_free(&y);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 64 ranks (t8 p8 d1), m = 512, chunk grain: builds, with the time printed
 * for information only. Speed is measured by the benchmark scripts, not
 * asserted by a timed test that would flake on a loaded machine. */
static void test_build_speed(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    struct cfg c = {8, 8, 1, 512, OC_SCHED_1F1B, 1, 1, OC_RECOMPUTE_SELECTIVE,
                    1, 1, OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    struct oc_schedule s;
    double t0 = now_s();
    build(&s, &m, &l, OC_GRAIN_CHUNK);
    double dt = now_s() - t0;
    int64_t total = 0;
    for (int64_t r = 0; r < s.nranks; r++)
        total += s.ranks[r].n;
    fprintf(stderr, "\n  64 ranks, m = 512, chunk grain: %lld ops in %.1f ms\n",
            (long long)total, dt * 1e3);
    CU_ASSERT_EQUAL(s.nranks, 64);
    oc_schedule_free(&s);
}

static CU_TestInfo tests[] = {
    {"counts_by_hand", test_counts_by_hand},
    {"counts_sp_full", test_counts_sp_full},
    {"selective_recompute", test_selective_recompute},
    {"interleaved_same_work", test_interleaved_same_work},
    {"chunk_grain_totals", test_chunk_grain_totals},
    {"op_fields", test_op_fields},
    {"dp_buckets", test_dp_buckets},
    {"dp_reduction", test_dp_reduction},
    {"fp32 bytes", test_fp32_bytes},
    {"groups", test_groups},
    {"names", test_names},
    {"errors", test_errors},
    {"loaded_tiny", test_loaded_tiny},
    {"build_speed", test_build_speed},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"schedule", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
