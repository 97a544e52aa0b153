/* test_schedule_memory.c: the memory ops of core/schedule.c against
 * core/memory.c: activations and logits in flight per stage (Narayanan et
 * al. 2021 for 1F1B and GPipe, Megatron-LM's warm-up for interleaved),
 * ALLOC/FREE balance per buffer, and the replayed peak against
 * oc_memory_stage over a spread of layouts; and, independent of
 * memory.c, every ALLOC's bytes and the peak of one layout worked by
 * hand from the papers (test_bytes_by_hand).
 *
 * Built on the tiny GPT of test_util.h with s = 32, b = 1; the layouts are
 * in schedule_fixtures.h.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "layout.h"
#include "memory.h"
#include "model.h"
#include "schedule.h"
#include "schedule_fixtures.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Memory                                                               */

/* Largest number of ALLOC'd and not yet FREE'd buffers of `buf`. */
static int64_t max_live(const struct oc_rank_ops *r, int buf)
{
    int64_t live = 0, peak = 0;
    for (int64_t i = 0; i < r->n; i++) {
        const struct oc_op *o = &r->ops[i];
        if (o->buf != buf)
            continue;
        if (o->kind == OC_OP_ALLOC)
            live++;
        else if (o->kind == OC_OP_FREE)
            live--;
        if (live > peak)
            peak = live;
    }
    return peak;
}

static double replay_peak_bytes(const struct oc_rank_ops *r)
{
    double cur = 0, peak = 0;
    for (int64_t i = 0; i < r->n; i++) {
        const struct oc_op *o = &r->ops[i];
        if (o->kind == OC_OP_ALLOC)
            cur += o->bytes;
        else if (o->kind == OC_OP_FREE)
            cur -= o->bytes;
        if (cur > peak)
            peak = cur;
    }
    return peak;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static void test_inflight(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    for (int i = 0; i < NCONFIGS; i++) {
        struct oc_layout l = make_layout(&configs[i]);
        int64_t nm = configs[i].m, p = l.pp, v = l.vchunks;
        struct oc_schedule s;
        build(&s, &m, &l, OC_GRAIN_LAYER);
        for (int64_t r = 0; r < s.nranks; r++) {
            int64_t i_st = oc_layout_coord(&l, r).pp, expect;
            /* Narayanan et al. 2021, section 2.2: 1F1B holds p - i, GPipe m;
             * interleaved: Megatron-LM's warm-up + 1 chunk-micro-batches. */
            if (l.schedule == OC_SCHED_GPIPE)
                expect = nm;
            else if (l.schedule == OC_SCHED_1F1B)
                expect = min64(p - i_st, nm);
            else
                expect = min64((p - i_st - 1) * 2 + (v - 1) * p + 1, nm * v);
            int64_t got = max_live(&s.ranks[r], OC_BUF_ACTIVATIONS);
            CU_ASSERT_EQUAL(got, expect);
            if (got != expect)
                fprintf(stderr, "\n  config %d rank %lld: %lld in flight, "
                                "expected %lld\n", i, (long long)r,
                        (long long)got, (long long)expect);
            /* logits live from head forward to head backward: as many as
             * activations on the last stage, none elsewhere */
            int64_t lg = max_live(&s.ranks[r], OC_BUF_LOGITS);
            if (i_st == p - 1 && l.schedule != OC_SCHED_INTERLEAVED)
                CU_ASSERT_EQUAL(lg, expect);
            if (i_st != p - 1)
                CU_ASSERT_EQUAL(lg, 0);
        }
        oc_schedule_free(&s);
    }
}

static void test_alloc_free_balance(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    for (int i = 0; i < NCONFIGS; i++) {
        struct oc_layout l = make_layout(&configs[i]);
        for (int g = 0; g < 2; g++) {
            struct oc_schedule s;
            build(&s, &m, &l, (enum oc_grain)g);
            for (int64_t r = 0; r < s.nranks; r++) {
                double bal[OC_BUF_COUNT] = {0};
                int64_t nal[OC_BUF_COUNT] = {0}, nfr[OC_BUF_COUNT] = {0};
                for (int64_t k = 0; k < s.ranks[r].n; k++) {
                    const struct oc_op *o = &s.ranks[r].ops[k];
                    if (o->kind == OC_OP_ALLOC) {
                        bal[o->buf] += o->bytes;
                        nal[o->buf]++;
                        CU_ASSERT(o->bytes > 0);
                    } else if (o->kind == OC_OP_FREE) {
                        bal[o->buf] -= o->bytes;
                        nfr[o->buf]++;
                    }
                }
                int64_t units = s.num_micro_batches * l.vchunks;
                CU_ASSERT_EQUAL(nal[OC_BUF_ACTIVATIONS], units);
                CU_ASSERT_EQUAL(nfr[OC_BUF_ACTIVATIONS], units);
                CU_ASSERT(fabs(bal[OC_BUF_ACTIVATIONS]) < 1e-6);
                CU_ASSERT_EQUAL(nal[OC_BUF_LOGITS], nfr[OC_BUF_LOGITS]);
                CU_ASSERT(fabs(bal[OC_BUF_LOGITS]) < 1e-6);
                /* weights, gradients, optimizer states: allocated once,
                 * never freed */
                for (int b = OC_BUF_WEIGHTS; b <= OC_BUF_OPTIMIZER; b++) {
                    CU_ASSERT_EQUAL(nal[b], 1);
                    CU_ASSERT_EQUAL(nfr[b], 0);
                }
            }
            oc_schedule_free(&s);
        }
    }
    /* emit_memory = 0: no ALLOC/FREE at all */
    struct oc_layout l = make_layout(&configs[1]);
    struct oc_schedule s;
    struct oc_schedule_opts o = {OC_GRAIN_LAYER, 0, NULL};
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_schedule_build(&s, &m, &l, &o, &st), 0);
    for (int64_t r = 0; r < s.nranks; r++) {
        CU_ASSERT_EQUAL(count_ops(&s.ranks[r], OC_OP_ALLOC, -1, -1), 0);
        CU_ASSERT_EQUAL(count_ops(&s.ranks[r], OC_OP_FREE, -1, -1), 0);
    }
    oc_schedule_free(&s);
}

/* The replayed peak equals memory.c's: its closed form for GPipe and 1F1B,
 * its own replay of Megatron-LM's unit order for interleaved. */
static void test_memory_peak_closed_form(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    int checked = 0;
    for (int i = 0; i < NCONFIGS; i++) {
        struct oc_layout l = make_layout(&configs[i]);
        for (int g = 0; g < 2; g++) {
            struct oc_schedule s;
            build(&s, &m, &l, (enum oc_grain)g);
            for (int64_t r = 0; r < s.nranks; r++) {
                struct oc_mem_breakdown b;
                oc_memory_stage(&m, &l, oc_layout_coord(&l, r).pp, &b);
                double got = replay_peak_bytes(&s.ranks[r]);
                OC_ASSERT_REL(got, b.total_bytes, 1e-9);
                checked++;
            }
            oc_schedule_free(&s);
        }
    }
    CU_ASSERT(checked > 100);
    /* uneven stages (placement.h): the schedule's ALLOC/FREE follow each
     * stage's layers as memory.c does, under 1F1B, GPipe and v2 */
    const struct {
        struct cfg c;
        int64_t first, last;
    } uneven[] = {
        {{1, 4, 1, 8, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0, OC_ORDER_TP_DP_PP}, 1, 3},
        {{2, 2, 2, 3, OC_SCHED_GPIPE, 1, 1, OC_RECOMPUTE_SELECTIVE, 1, 1, OC_ORDER_TP_DP_PP}, 6, 2},
        {{1, 2, 1, 4, OC_SCHED_INTERLEAVED, 2, 0, OC_RECOMPUTE_FULL, 0, 0, OC_ORDER_TP_DP_PP}, 2, 6},
        {{1, 3, 1, 5, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0, OC_ORDER_TP_PP_DP}, 2, 0},
    };
    for (size_t i = 0; i < sizeof uneven / sizeof uneven[0]; i++) {
        struct oc_layout l = make_layout(&uneven[i].c);
        l.first_stage_layers = uneven[i].first;
        l.last_stage_layers = uneven[i].last;
        for (int g = 0; g < 2; g++) {
            struct oc_schedule s;
            build(&s, &m, &l, (enum oc_grain)g);
            for (int64_t r = 0; r < s.nranks; r++) {
                struct oc_mem_breakdown b;
                oc_memory_stage(&m, &l, oc_layout_coord(&l, r).pp, &b);
                OC_ASSERT_REL(replay_peak_bytes(&s.ranks[r]), b.total_bytes, 1e-9);
            }
            oc_schedule_free(&s);
        }
    }
}

/* The schedule's memory ops on the tiny GPT (h 64, a 4, L 8, f 256, V 512,
 * P 128, dropout, tied) worked by hand from the formulas' sources, not
 * from memory.c: tp2-pp2-dp2, 1F1B, m = 4, s = 128, b = 1, no sequence
 * parallelism, no recompute, classic attention, bf16, no ZeRO.
 * - A layer's activations (Korthikanti et al. 2022, section 4.1, tensor
 *   parallel): sbh*(10 + 24/t + 5as/(ht)) with sbh = 128*64 = 8 192 and
 *   5as/(ht) = 5*4*128/(64*2) = 20: 8 192 * 42 = 344 064 bytes.
 * - First stage: the embedding's dropout mask, sbh = 8 192 bytes (section
 *   4.3); last stage: the final norm's and the LM head's inputs, 4sbh =
 *   32 768, and the fp32 softmax of the vocab-parallel cross-entropy,
 *   4sbV/t = 4*128*512/2 = 131 072 (the LOGITS buffer).
 * - So one micro-batch's ALLOC of activations is 4 layers * 344 064 +
 *   8 192 = 1 384 448 bytes on stage 0, 4 * 344 064 + 32 768 = 1 409 024
 *   on stage 1.
 * - Parameters of a TP rank's layer: the GEMMs' (64*192 + 64*64 +
 *   2*64*256)/2 = 24 576, the column-parallel biases (192 + 256)/2 = 224,
 *   the row-parallel ones whole, 64 + 64, the two LayerNorms 256: 25 184.
 *   Stage 0: 4 layers + its half of wte (256*64 = 16 384) + wpe whole
 *   (8 192) = 125 312; stage 1: 4 layers + the final norm (128) + its copy
 *   of the tied embedding's half (16 384) = 117 248. Weights 2, gradients
 *   2, AdamW 12 bytes each (ZeRO section 3.1).
 * - In flight under 1F1B (Narayanan et al. 2021, 2.2): min(p - i, m), 2 on
 *   stage 0, 1 on stage 1: peaks 16*125 312 + 2*1 384 448 = 4 773 888
 *   and 16*117 248 + 1 409 024 + 131 072 = 3 416 064 bytes. */
static void test_bytes_by_hand(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    const struct cfg c = {2, 2, 2, 4, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE,
                          0, 0, OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    l.seq_length = 128;
    l.attention = OC_ATTN_CLASSIC;
    const double act[2] = {1384448, 1409024}, params[2] = {125312, 117248};
    const double peak[2] = {4773888, 3416064};
    for (int g = 0; g < 2; g++) {
        struct oc_schedule s;
        build(&s, &m, &l, (enum oc_grain)g);
        for (int64_t r = 0; r < s.nranks; r++) {
            const int64_t st = oc_layout_coord(&l, r).pp;
            int64_t n_act = 0, n_logits = 0, bad = 0;
            for (int64_t k = 0; k < s.ranks[r].n; k++) {
                const struct oc_op *o = &s.ranks[r].ops[k];
                if (o->kind != OC_OP_ALLOC)
                    continue;
                double want = -1;
                switch (o->buf) {
                case OC_BUF_ACTIVATIONS: want = act[st]; n_act++; break;
                case OC_BUF_LOGITS: want = 131072; n_logits++; break;
                case OC_BUF_WEIGHTS: want = 2 * params[st]; break;
                case OC_BUF_GRADS: want = 2 * params[st]; break;
                case OC_BUF_OPTIMIZER: want = 12 * params[st]; break;
                default: break;
                }
                bad += want >= 0 && o->bytes != want;
            }
            CU_ASSERT_EQUAL(bad, 0);
            CU_ASSERT_EQUAL(n_act, 4);
            CU_ASSERT_EQUAL(n_logits, st == 1 ? 4 : 0);
            CU_ASSERT_EQUAL(replay_peak_bytes(&s.ranks[r]), peak[st]);
        }
        oc_schedule_free(&s);
    }
}

static CU_TestInfo tests[] = {
    {"inflight", test_inflight},
    {"alloc_free_balance", test_alloc_free_balance},
    {"memory_peak_closed_form", test_memory_peak_closed_form},
    {"bytes by hand (Korthikanti, ZeRO)", test_bytes_by_hand},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"schedule_memory", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
