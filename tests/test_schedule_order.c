/* test_schedule_order.c: the order of the per-rank op lists of
 * core/schedule.c and core/schedule_order.c: each stage's unit order against
 * hand derivations (1F1B, GPipe, interleaved), SEND/RECV matching over a
 * spread of layouts, and a round-robin replay that must finish without
 * deadlock (and does detect one where it should).
 *
 * Built on the tiny GPT of test_util.h (h 64, a 4, L 8, f 256, V 512,
 * P 128, tied embeddings) with s = 32, b = 1; the layouts and checkers are
 * in schedule_fixtures.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "model.h"
#include "schedule.h"
#include "schedule_fixtures.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Unit orders                                                          */

static void check_order(const struct oc_layout *l, int64_t m, int64_t stage,
                        const char *expect)
{
    struct oc_unit *u = NULL;
    int64_t n = oc_schedule_stage_order(l, m, stage, &u);
    char got[1024] = "";
    size_t k = 0;
    for (int64_t i = 0; i < n && k + 16 < sizeof got; i++) {
        if (l->schedule == OC_SCHED_INTERLEAVED)
            k += (size_t)snprintf(got + k, sizeof got - k, "%s%c%d.%d",
                                  i ? " " : "", u[i].backward ? 'B' : 'F',
                                  u[i].chunk, u[i].mb);
        else
            k += (size_t)snprintf(got + k, sizeof got - k, "%s%c%d",
                                  i ? " " : "", u[i].backward ? 'B' : 'F',
                                  u[i].mb);
    }
    free(u);
    CU_ASSERT_STRING_EQUAL(got, expect);
    if (strcmp(got, expect) != 0)
        fprintf(stderr, "\n  stage %lld: got    %s\n           expect %s\n",
                (long long)stage, got, expect);
}

static void test_order_1f1b(void)
{
    struct cfg c = {1, 4, 1, 8, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0,
                    OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    /* p = 4, m = 8. Stage 0: warm-up min(p-0-1, m) = 3 forwards (F0 F1 F2),
     * then m - 3 = 5 pairs (F3 B0)(F4 B1)(F5 B2)(F6 B3)(F7 B4), then the
     * remaining backwards B5 B6 B7. */
    check_order(&l, 8, 0, "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
    /* Stage 1: warm-up 2. */
    check_order(&l, 8, 1, "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
    /* Stage 3 (last): no warm-up, strict alternation. */
    check_order(&l, 8, 3, "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
    /* m = 2 < p - 1 = 3 at stage 0: warm-up capped at m, then drain. */
    check_order(&l, 2, 0, "F0 F1 B0 B1");
}

static void test_order_gpipe(void)
{
    struct cfg c = {1, 4, 1, 3, OC_SCHED_GPIPE, 1, 0, OC_RECOMPUTE_NONE, 0, 0,
                    OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    /* All forwards, then all backwards in micro-batch order, every stage. */
    check_order(&l, 3, 0, "F0 F1 F2 B0 B1 B2");
    check_order(&l, 3, 3, "F0 F1 F2 B0 B1 B2");
}

static void test_order_interleaved(void)
{
    struct cfg c = {1, 2, 1, 4, OC_SCHED_INTERLEAVED, 2, 0, OC_RECOMPUTE_NONE,
                    0, 0, OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    /* Megatron-LM, p = 2, v = 2, m = 4: total = m*v = 8 units per direction.
     * Forward k: chunk (k/p)%v, micro-batch (k/(p*v))*p + k%p:
     *   k 0..7 -> c0.0 c0.1 c1.0 c1.1 c0.2 c0.3 c1.2 c1.3
     * Backward k: chunk v-1-(k/p)%v, same micro-batch:
     *   k 0..7 -> c1.0 c1.1 c0.0 c0.1 c1.2 c1.3 c0.2 c0.3
     * Stage 0: warm-up min((2-0-1)*2 + (2-1)*2, 8) = 4 forwards (k 0..3);
     * then pairs (F4 B0)(F5 B1)(F6 B2)(F7 B3); then B4..B7. Written as
     * direction, chunk.micro-batch: */
    check_order(&l, 4, 0,
                "F0.0 F0.1 F1.0 F1.1 F0.2 B1.0 F0.3 B1.1 F1.2 B0.0 F1.3 B0.1 "
                "B1.2 B1.3 B0.2 B0.3");
    /* Stage 1: warm-up min(0 + 2, 8) = 2 (k 0, 1); pairs (F2 B0) .. (F7 B5);
     * then B6 B7. */
    check_order(&l, 4, 1,
                "F0.0 F0.1 F1.0 B1.0 F1.1 B1.1 F0.2 B0.0 F0.3 B0.1 F1.2 B1.2 "
                "F1.3 B1.3 B0.2 B0.3");
    /* m == p = 2: stage 0 warm-up min(4, 4) = 4, i.e. every forward first. */
    check_order(&l, 2, 0, "F0.0 F0.1 F1.0 F1.1 B1.0 B1.1 B0.0 B0.1");
}


/* The warm-up counts and units behind the orders above, by hand. */
static void test_warmup_and_units(void)
{
    struct cfg c = {1, 4, 1, 8, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0,
                    OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    /* 1F1B, p = 4: min(p-i-1, m) */
    CU_ASSERT_EQUAL(oc_schedule_warmup(&l, 8, 0), 3);
    CU_ASSERT_EQUAL(oc_schedule_warmup(&l, 8, 3), 0);
    CU_ASSERT_EQUAL(oc_schedule_warmup(&l, 2, 0), 2);
    struct oc_unit u = oc_schedule_unit(&l, 5, 1);
    CU_ASSERT(u.mb == 5 && u.chunk == 0 && u.backward == 1);
    /* GPipe: every forward first */
    l.schedule = OC_SCHED_GPIPE;
    CU_ASSERT_EQUAL(oc_schedule_warmup(&l, 3, 0), 3);
    CU_ASSERT_EQUAL(oc_schedule_warmup(&l, 3, 3), 3);
    /* Interleaved p = 2, v = 2: min((2-i-1)*2 + (2-1)*2, m*v): stage 0 4,
     * stage 1 2; m = 1 caps stage 0 at m*v = 2. Forward k = 5: chunk
     * (5/2)%2 = 0, micro-batch (5/4)*2 + 5%2 = 3; backward k = 5: chunk
     * 2-1-0 = 1. */
    l.pp = 2;
    l.schedule = OC_SCHED_INTERLEAVED;
    l.vchunks = 2;
    CU_ASSERT_EQUAL(oc_schedule_warmup(&l, 4, 0), 4);
    CU_ASSERT_EQUAL(oc_schedule_warmup(&l, 4, 1), 2);
    CU_ASSERT_EQUAL(oc_schedule_warmup(&l, 1, 0), 2);
    u = oc_schedule_unit(&l, 5, 0);
    CU_ASSERT(u.mb == 3 && u.chunk == 0 && u.backward == 0);
    u = oc_schedule_unit(&l, 5, 1);
    CU_ASSERT(u.mb == 3 && u.chunk == 1 && u.backward == 1);
}

/* ------------------------------------------------------------------ */
/* Point-to-point matching and the replay                               */


static void test_p2p_matching(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    for (int i = 0; i < NCONFIGS; i++) {
        struct oc_layout l = make_layout(&configs[i]);
        for (int g = 0; g < 2; g++) {
            struct oc_schedule s;
            build(&s, &m, &l, (enum oc_grain)g);
            /* Messages: each micro-batch crosses p*v - 1 chunk boundaries
             * forward and as many backward, in every (tp, dp) pipeline. */
            int64_t expect = 2 * l.global_batch / l.dp * (l.pp * l.vchunks - 1) *
                             l.tp * l.dp;
            int64_t n = check_p2p(&s);
            CU_ASSERT_EQUAL(n, expect);
            if (n != expect)
                fprintf(stderr, "\n  config %d grain %d: %lld messages, "
                                "expected %lld\n",
                        i, g, (long long)n, (long long)expect);
            oc_schedule_free(&s);
        }
    }
}

static void test_replay_no_deadlock(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    for (int i = 0; i < NCONFIGS; i++) {
        struct oc_layout l = make_layout(&configs[i]);
        for (int g = 0; g < 2; g++) {
            struct oc_schedule s;
            build(&s, &m, &l, (enum oc_grain)g);
            int ok = check_collectives(&s);
            CU_ASSERT(ok);
            int done = simulate(&s, 0);
            CU_ASSERT(done);
            if (!ok || !done)
                fprintf(stderr, "\n  config %d grain %d: collectives %d, "
                                "replay finished %d\n", i, g, ok, done);
            /* every list ends with the optimizer step or the weight
             * all-gather that follows it */
            for (int64_t r = 0; r < s.nranks; r++) {
                const struct oc_op *e = &s.ranks[r].ops[s.ranks[r].n - 1];
                CU_ASSERT(e->phase == OC_PHASE_OPTIMIZER);
            }
            oc_schedule_free(&s);
        }
    }
}

/* The replay can fail: a hand-made cycle (each rank receives before it
 * sends) deadlocks, and 1F1B with blocking (rendezvous) sends deadlocks as
 * schedule.h says, while the same lists finish with non-blocking sends. */
static void test_replay_detects_deadlock(void)
{
    struct cfg c = {1, 2, 1, 1, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0,
                    OC_ORDER_TP_DP_PP};
    struct oc_schedule s;
    memset(&s, 0, sizeof s);
    s.nranks = 2;
    s.layout = make_layout(&c);
    struct oc_rank_ops ro[2];
    struct oc_op ops[2][2];
    memset(ops, 0, sizeof ops);
    for (int r = 0; r < 2; r++) {
        ops[r][0].kind = OC_OP_RECV;
        ops[r][0].peer = 1 - r;
        ops[r][0].tag = 1 - r;
        ops[r][1].kind = OC_OP_SEND;
        ops[r][1].peer = 1 - r;
        ops[r][1].tag = r;
        ro[r].n = ro[r].cap = 2;
        ro[r].ops = ops[r];
    }
    s.ranks = ro;
    CU_ASSERT_EQUAL(check_p2p(&s), 2);
    CU_ASSERT_FALSE(simulate(&s, 0));

    struct oc_model m;
    oc_test_tiny_model(&m);
    struct cfg c2 = {1, 4, 1, 8, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0,
                     OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c2);
    struct oc_schedule s2;
    build(&s2, &m, &l, OC_GRAIN_CHUNK);
    CU_ASSERT_TRUE(simulate(&s2, 0));
    CU_ASSERT_FALSE(simulate(&s2, 1));
    oc_schedule_free(&s2);
}


static CU_TestInfo tests[] = {
    {"order_1f1b", test_order_1f1b},
    {"order_gpipe", test_order_gpipe},
    {"order_interleaved", test_order_interleaved},
    {"warmup_and_units", test_warmup_and_units},
    {"p2p_matching", test_p2p_matching},
    {"replay_no_deadlock", test_replay_no_deadlock},
    {"replay_detects_deadlock", test_replay_detects_deadlock},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"schedule_order", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
