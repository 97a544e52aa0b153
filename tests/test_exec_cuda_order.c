/* test_exec_cuda_order.c: the cuda backend's checks that NCCL can pair the
 * schedule's pipeline messages and that they cannot deadlock on the
 * backend's streams (exec/cuda/backend_cuda.h,
 * oc_backend_cuda_check_p2p_order and _check_p2p_deadlock). NCCL matches
 * ncclSend and ncclRecv between two ranks by their order, not by a tag, so
 * for every ordered pair (A, B) the sends of A to B must come in the order
 * in which B posts its receives from A; and an ncclSend holds its stream
 * until the receive runs, so the order of messages on a stream decides
 * whether the ranks wait for each other forever. Pure over the schedule:
 * no GPU needed (built only where the cuda backend is).
 *
 * What must hold: every schedule the core builds (gpipe, 1f1b, interleaved
 * v2 and v4, PP 2, 4 and 8, several micro-batch counts, layer and chunk
 * grain) passes both; a schedule with two of one sender's messages to the
 * same peer swapped fails, naming the pair and the tags; one with a send
 * removed fails ("fewer"); hand-built op lists that deadlock under the
 * direction-stream rules are refused with the ranks and ops of the cycle;
 * and the former design (one pp stream, each run of messages one NCCL
 * group: OC_CUDA_P2P_GROUPED) deadlocks the interleaved schedule, as a CPU
 * emulation of CUDA and NCCL showed (/tmp/emu-e2e, groupcheck.py: every
 * interleaved layout hung, 1f1b and gpipe did not), while the new rules
 * run it.
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
        "tp1-pp2-dp2-v2",    "tp2-pp4-dp1-v2",    "tp2-pp2-dp1-v4",
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
    /* 12 layouts x 3 batches x 2 grains, minus the interleaved ones whose
     * micro-batch count is not a multiple of PP: most must have run */
    CU_ASSERT(checked >= 50);
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

/* The former design, one pp stream with each run of messages one NCCL
 * group: the interleaved schedule deadlocks, 1f1b and gpipe do not (the
 * emulation's finding); the direction streams run all of them. */
static void test_grouped_rules_deadlock_interleaved(void)
{
    static const struct {
        const char *layout;
        int deadlocks; /* under OC_CUDA_P2P_GROUPED */
    } cases[] = {
        {"tp1-pp2-dp1-v2", 1}, {"tp2-pp2-dp1-v2", 1}, {"tp1-pp4-dp1-v2", 1},
        {"tp2-pp2-dp1-v4", 1}, {"tp1-pp2-dp1-1f1b", 0}, {"tp1-pp4-dp1-1f1b", 0},
        {"tp1-pp2-dp2-1f1b", 0}, {"tp1-pp2-dp1-gpipe", 0}, {"tp1-pp4-dp1-gpipe", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct oc_schedule s;
        CU_ASSERT_EQUAL_FATAL(build(&s, cases[i].layout, 8, OC_GRAIN_LAYER), 0);
        struct oc_status st = {{0}};
        int rc = oc_backend_cuda_check_p2p_deadlock(&s, OC_CUDA_P2P_GROUPED, &st);
        if (rc != -cases[i].deadlocks)
            fprintf(stderr, "%s grouped: rc %d: %s\n", cases[i].layout, rc, st.msg);
        CU_ASSERT_EQUAL(rc, -cases[i].deadlocks);
        if (cases[i].deadlocks)
            CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "(one grouped stream), a cycle of waits"));
        memset(&st, 0, sizeof st);
        CU_ASSERT_EQUAL(oc_backend_cuda_check_p2p_deadlock(&s, OC_CUDA_P2P_DIRECTION, &st), 0);
        oc_schedule_free(&s);
    }
    /* The cycle of the file comment of backend_cuda.c (tp1-pp2-dp1-v2, 8
     * micro-batches): rank 0's send of message 5 (op 45) heads its stream,
     * rank 1's group {send 3 (op 51), receive 4 (op 53)} heads its own. */
    struct oc_schedule s;
    CU_ASSERT_EQUAL_FATAL(build(&s, "tp1-pp2-dp1-v2", 8, OC_GRAIN_LAYER), 0);
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_backend_cuda_check_p2p_deadlock(&s, OC_CUDA_P2P_GROUPED, &st), -1);
    fprintf(stderr, "  (expected) %s\n", st.msg);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "op 45 (SEND to rank 1)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "op 51 (SEND to rank 0)"));
    oc_schedule_free(&s);
}

/* A hand-built op list: rank r's ops, n of them. */
struct hand {
    struct oc_op ops[3][4];
    struct oc_rank_ops ranks[3];
    struct oc_schedule s;
};

static struct oc_op hop(enum oc_op_kind kind, int64_t peer, int64_t tag)
{
    struct oc_op o;
    memset(&o, 0, sizeof o);
    o.kind = (uint8_t)kind;
    o.mb = -1;
    o.peer = peer;
    o.tag = tag;
    return o;
}

static void hand_init(struct hand *h, int64_t nranks)
{
    memset(h, 0, sizeof *h);
    h->s.nranks = nranks;
    h->s.ranks = h->ranks;
    for (int64_t r = 0; r < nranks; r++)
        h->ranks[r].ops = h->ops[r];
}

static void hand_add(struct hand *h, int64_t r, struct oc_op o)
{
    OC_ASSERT(h->ranks[r].n < 4);
    h->ops[r][h->ranks[r].n++] = o;
    h->ranks[r].cap = h->ranks[r].n;
}

/* Two ranks that first receive from each other and then, after a compute
 * op (the end of the run: p2p_end waits for the receive), send: each
 * waits for the other's send, on any streams. With the receive and the
 * send in one run (no op between) the same messages complete: the run's
 * receive and send are on different direction streams, and the program
 * waits for the receive only after both were enqueued. */
static void test_two_ranks_receive_first_refused(void)
{
    struct hand h;
    hand_init(&h, 2);
    for (int64_t r = 0; r < 2; r++) {
        hand_add(&h, r, hop(OC_OP_RECV, 1 - r, 7));
        hand_add(&h, r, hop(OC_OP_COMPUTE, -1, 0));
        hand_add(&h, r, hop(OC_OP_SEND, 1 - r, 7));
    }
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_backend_cuda_check_p2p_order(&h.s, &st), -1);
    fprintf(stderr, "  (expected) %s\n", st.msg);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "pipeline messages would deadlock on the "
                                          "cuda backend (direction streams), a cycle"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "rank 0 cannot pass op 1 (the end of a p2p "
                                          "run) before op 0 (RECV from rank 1) completes"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "rank 0's op 0 (RECV from rank 1) needs its "
                                          "SEND, which rank 1 has not reached"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "rank 1 cannot pass op 1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "rank 1's op 0 (RECV from rank 0) needs its "
                                          "SEND, which rank 0 has not reached"));
    /* one run: RECV, SEND, then the compute op */
    for (int64_t r = 0; r < 2; r++) {
        h.ops[r][1] = hop(OC_OP_SEND, 1 - r, 7);
        h.ops[r][2] = hop(OC_OP_COMPUTE, -1, 0);
    }
    memset(&st, 0, sizeof st);
    CU_ASSERT_EQUAL(oc_backend_cuda_check_p2p_order(&h.s, &st), 0);
    CU_ASSERT_EQUAL(oc_backend_cuda_check_p2p_deadlock(&h.s, OC_CUDA_P2P_GROUPED, &st), 0);
    /* a WAIT between the send and the receive: the host waits for the
     * send, whose receive the peer has not reached (blocked the same way) */
    for (int64_t r = 0; r < 2; r++) {
        h.ops[r][0] = hop(OC_OP_SEND, 1 - r, 7);
        h.ops[r][1] = hop(OC_OP_WAIT, -1, 0);
        h.ops[r][2] = hop(OC_OP_RECV, 1 - r, 7);
    }
    memset(&st, 0, sizeof st);
    CU_ASSERT_EQUAL(oc_backend_cuda_check_p2p_order(&h.s, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "rank 0 waits at op 1 (WAIT) for op 0 (SEND "
                                          "to rank 1)"));
}

/* A deadlock of the direction streams alone (a stream is FIFO): rank 0
 * sends to rank 2 and then to rank 1, both on its up stream; rank 1
 * forwards to rank 2 after receiving from rank 0 (a compute op between);
 * rank 2 receives from rank 1 and then from rank 0 in one run, both on its
 * up stream. Rank 0's send to 2 waits for rank 2's receive from 0, behind
 * its receive from 1, whose send rank 1 reaches only after its receive
 * from 0, whose send is behind rank 0's send to 2. As NCCL groups (one
 * group per run) the same lists complete: rank 0's two sends are posted
 * together, as are rank 2's receives. */
static void test_direction_fifo_deadlock_refused(void)
{
    struct hand h;
    hand_init(&h, 3);
    hand_add(&h, 0, hop(OC_OP_SEND, 2, 1));
    hand_add(&h, 0, hop(OC_OP_SEND, 1, 1));
    hand_add(&h, 1, hop(OC_OP_RECV, 0, 1));
    hand_add(&h, 1, hop(OC_OP_COMPUTE, -1, 0));
    hand_add(&h, 1, hop(OC_OP_SEND, 2, 1));
    hand_add(&h, 2, hop(OC_OP_RECV, 1, 1));
    hand_add(&h, 2, hop(OC_OP_RECV, 0, 1));
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_backend_cuda_check_p2p_order(&h.s, &st), -1);
    fprintf(stderr, "  (expected) %s\n", st.msg);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "(direction streams), a cycle of waits"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "rank 0's op 0 (SEND to rank 2) needs its RECV, "
                                          "but rank 2's up stream is at op 0 (RECV from "
                                          "rank 1)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "rank 1's op 0 (RECV from rank 0) needs its "
                                          "SEND, but rank 0's up stream is at op 0 (SEND "
                                          "to rank 2)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "rank 2's op 0 (RECV from rank 1) needs its "
                                          "SEND, which rank 1 has not reached"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "rank 1 cannot pass op 1 (the end of a p2p "
                                          "run) before op 0 (RECV from rank 0) completes"));
    memset(&st, 0, sizeof st);
    CU_ASSERT_EQUAL(oc_backend_cuda_check_p2p_deadlock(&h.s, OC_CUDA_P2P_GROUPED, &st), 0);
    /* rank 0 sending to rank 1 first: no cycle */
    h.ops[0][0] = hop(OC_OP_SEND, 1, 1);
    h.ops[0][1] = hop(OC_OP_SEND, 2, 1);
    memset(&st, 0, sizeof st);
    CU_ASSERT_EQUAL(oc_backend_cuda_check_p2p_order(&h.s, &st), 0);
}

static int setup(void)
{
    struct oc_status st = {{0}};
    return oc_model_load("tiny", &tiny, &st);
}

static CU_TestInfo tests[] = {
    {"every core schedule pairs in order", test_core_schedules_pass},
    {"swapped or missing messages fail", test_swapped_and_missing_fail},
    {"grouped one-stream rules deadlock interleaved",
     test_grouped_rules_deadlock_interleaved},
    {"two ranks receiving first are refused", test_two_ranks_receive_first_refused},
    {"a direction stream's order can deadlock", test_direction_fifo_deadlock_refused},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"cuda_p2p_order", setup, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
