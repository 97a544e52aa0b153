/* test_exec_cuda_order.c: the cuda backend's check that NCCL can pair the
 * schedule's pipeline messages (exec/cuda/backend_cuda.h,
 * oc_backend_cuda_check_p2p_order). NCCL matches ncclSend and ncclRecv
 * between two ranks by their order, not by a tag, so for every ordered pair
 * (A, B) the sends of A to B must come in the order in which B posts its
 * receives from A. Pure over the schedule: no GPU needed (built only where
 * the cuda backend is).
 *
 * What must hold: every schedule the core builds (gpipe, 1f1b, interleaved
 * v2 and v4, PP 2, 4 and 8, several micro-batch counts, layer and chunk
 * grain) passes; a schedule with two of one sender's messages to the same
 * peer swapped fails, naming the pair and the tags; one with a send removed
 * fails ("fewer").
 */
#include <stdio.h>
#include <string.h>

#include "backend_cuda.h"
#include "layout.h"
#include "model.h"
#include "schedule.h"
#include "test_util.h"

static struct oc_model tiny;

static int build(struct oc_schedule *s, const char *layout, int64_t gb,
                 enum oc_grain grain)
{
    struct oc_status st = {{0}};
    struct oc_layout l;
    oc_layout_default(&l);
    l.global_batch = gb;
    l.seq_length = 32;
    l.sequence_parallel = 0;
    if (oc_layout_parse(&l, layout, &st) != 0) {
        fprintf(stderr, "%s: %s\n", layout, st.msg);
        return -1;
    }
    struct oc_schedule_opts o = {grain, 1};
    if (oc_schedule_build(s, &tiny, &l, &o, &st) != 0) {
        fprintf(stderr, "%s: %s\n", layout, st.msg);
        return -1;
    }
    return 0;
}

static void test_core_schedules_pass(void)
{
    static const char *const layouts[] = {
        "tp1-pp2-dp1-gpipe", "tp1-pp2-dp1-1f1b",  "tp1-pp4-dp1-1f1b",
        "tp1-pp8-dp1-1f1b",  "tp1-pp4-dp1-gpipe", "tp2-pp2-dp2-1f1b",
        "tp1-pp2-dp1-v2",    "tp1-pp2-dp1-v4",    "tp1-pp4-dp1-v2",
        "tp1-pp2-dp2-v2",
    };
    static const int64_t gbs[] = {4, 8, 16};
    int checked = 0;
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        for (size_t g = 0; g < sizeof gbs / sizeof gbs[0]; g++)
            for (int grain = 0; grain < 2; grain++) {
                struct oc_schedule s;
                /* interleaved needs m % pp == 0: some combinations are refused */
                if (build(&s, layouts[i], gbs[g],
                          grain ? OC_GRAIN_CHUNK : OC_GRAIN_LAYER) != 0)
                    continue;
                struct oc_status st = {{0}};
                int rc = oc_backend_cuda_check_p2p_order(&s, &st);
                if (rc != 0)
                    fprintf(stderr, "%s gb %lld: %s\n", layouts[i], (long long)gbs[g], st.msg);
                CU_ASSERT_EQUAL(rc, 0);
                checked++;
                oc_schedule_free(&s);
            }
    /* 10 layouts x 3 batches x 2 grains, minus the interleaved ones whose
     * micro-batch count is not a multiple of PP: most must have run */
    CU_ASSERT(checked >= 40);
}

/* The k-th SEND of rank r (any peer), or NULL. */
static struct oc_op *nth_send(struct oc_schedule *s, int64_t r, int k)
{
    for (int64_t i = 0; i < s->ranks[r].n; i++)
        if (s->ranks[r].ops[i].kind == OC_OP_SEND && k-- == 0)
            return &s->ranks[r].ops[i];
    return NULL;
}

static void test_swapped_and_missing_fail(void)
{
    struct oc_schedule s;
    CU_ASSERT_EQUAL_FATAL(build(&s, "tp1-pp2-dp1-1f1b", 8, OC_GRAIN_LAYER), 0);
    /* rank 0 (stage 0) sends only activations to rank 1: swap the tags of
     * its first two sends (micro-batches 0 and 1) */
    struct oc_op *a = nth_send(&s, 0, 0), *b = nth_send(&s, 0, 1);
    CU_ASSERT_FATAL(a && b && a->peer == 1 && b->peer == 1 && a->tag != b->tag);
    int64_t t = a->tag;
    a->tag = b->tag;
    b->tag = t;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_backend_cuda_check_p2p_order(&s, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "from rank 0 to rank 1 are out of order"));
    /* undo, then turn the last send into a wait: one message fewer (8
     * micro-batches: sends 0..7 of rank 0 go to rank 1) */
    b->tag = a->tag;
    a->tag = t;
    memset(&st, 0, sizeof st);
    CU_ASSERT_EQUAL(oc_backend_cuda_check_p2p_order(&s, &st), 0);
    struct oc_op *last = nth_send(&s, 0, 7);
    CU_ASSERT_FATAL(last != NULL && nth_send(&s, 0, 8) == NULL);
    last->kind = OC_OP_WAIT;
    CU_ASSERT_EQUAL(oc_backend_cuda_check_p2p_order(&s, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "rank 0 sends fewer messages to rank 1"));
    oc_schedule_free(&s);
}

static int setup(void)
{
    struct oc_status st = {{0}};
    return oc_model_load("tiny", &tiny, &st);
}

static CU_TestInfo tests[] = {
    {"every core schedule pairs in order", test_core_schedules_pass},
    {"swapped or missing messages fail", test_swapped_and_missing_fail},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"cuda_p2p_order", setup, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
