/* test_schedule_memory.c: the memory ops of core/schedule.c against
 * core/memory.c: activations and logits in flight per stage (Narayanan et
 * al. 2021 for 1F1B and GPipe, Megatron-LM's warm-up for interleaved),
 * ALLOC/FREE balance per buffer, and the replayed peak against
 * oc_memory_stage over a spread of layouts.
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
    struct oc_schedule_opts o = {OC_GRAIN_LAYER, 0};
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
}


static CU_TestInfo tests[] = {
    {"inflight", test_inflight},
    {"alloc_free_balance", test_alloc_free_balance},
    {"memory_peak_closed_form", test_memory_peak_closed_form},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"schedule_memory", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
