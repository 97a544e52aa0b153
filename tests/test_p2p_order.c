/* test_p2p_order.c: the order rules of pipeline messages
 * (core/p2p_order.h): that NCCL can pair a schedule's messages
 * (oc_p2p_check_pairs) and that they cannot deadlock on the cuda backend's
 * streams (oc_p2p_check_deadlock). NCCL matches ncclSend and ncclRecv
 * between two ranks by their order, not by a tag, so for every ordered pair
 * (A, B) the sends of A to B must come in the order in which B posts its
 * receives from A; and an ncclSend holds its stream until the receive runs,
 * so the order of messages on a stream decides whether the ranks wait for
 * each other forever. Pure over the schedule: built and run without CUDA.
 *
 * What must hold: every schedule the core builds (gpipe, 1f1b, interleaved
 * v2..v4; PP 2..8; micro-batch counts below, equal to and above PP, and
 * not multiples of it where the schedule allows; TP and DP above 1 in both
 * rank orders, so that world ranks are not stage numbers; overlapped DP
 * reductions; layer and chunk grain) passes both, with the number of
 * messages the pipeline needs; a schedule with two of one sender's messages
 * to the same peer swapped fails, naming the pair and the tags; one with a
 * send removed fails ("fewer"); one whose receive moved ahead of the send
 * it answers is refused as a deadlock; hand-built op lists that deadlock
 * under the direction-stream rules are refused with the ranks and ops of
 * the cycle; and the former design (one pp stream, each run of messages one
 * NCCL group: OC_P2P_RULES_GROUPED) deadlocks every interleaved schedule
 * with m > p, as a CPU emulation of CUDA and NCCL showed (/tmp/emu-e2e,
 * groupcheck.py: every interleaved layout hung, 1f1b and gpipe did not),
 * while the direction rules run it.
 */
#include <stdio.h>
#include <string.h>

#include "layout.h"
#include "model.h"
#include "p2p_order.h"
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
    struct oc_schedule_opts o = {grain, 1, NULL};
    if (oc_schedule_build(s, &tiny, &l, &o, &st) != 0) {
        fprintf(stderr, "%s: %s\n", layout, st.msg);
        return -1;
    }
    return 0;
}

/* The cuda backend's check: pairs, then the direction streams. */
static int check_order(const struct oc_schedule *s, struct oc_status *st)
{
    return oc_p2p_check_order(s, OC_P2P_RULES_DIRECTION, st);
}

/* SEND ops over all ranks. */
static int64_t count_sends(const struct oc_schedule *s)
{
    int64_t n = 0;
    for (int64_t r = 0; r < s->nranks; r++)
        for (int64_t i = 0; i < s->ranks[r].n; i++)
            n += s->ranks[r].ops[i].kind == OC_OP_SEND;
    return n;
}

/* The shapes of the sweep beyond (schedule, p, m): TP and DP sizes, the
 * rank order, overlapped DP reductions (an async collective between two
 * units ends a run of messages early). */
struct shape {
    int64_t tp, dp;
    enum oc_rank_order order;
    int overlap;
};

/* Builds the schedule of tiny with p*v layers (one per chunk) or refuses
 * it like oc_schedule_build; 0 or -1 with st. */
static int build_swept(struct oc_schedule *s, const struct shape *sh,
                       enum oc_schedule_kind kind, int64_t p, int64_t v,
                       int64_t m, enum oc_grain grain, struct oc_status *st)
{
    struct oc_model model = tiny;
    model.num_hidden_layers = p * v;
    struct oc_layout l;
    oc_layout_default(&l);
    l.tp = sh->tp;
    l.pp = p;
    l.dp = sh->dp;
    l.micro_batch = 1;
    l.global_batch = m * sh->dp;
    l.seq_length = 32;
    l.schedule = kind;
    l.vchunks = v;
    l.order = sh->order;
    l.overlap_grad_reduce = sh->overlap;
    l.sequence_parallel = 0;
    struct oc_schedule_opts o = {grain, 1, NULL};
    return oc_schedule_build(s, &model, &l, &o, st);
}

/* Every schedule the core builds passes the cuda backend's check, and
 * carries 2*m*(p*v - 1) messages per (tp, dp) pipeline: one activation and
 * one gradient across each boundary between consecutive global chunks per
 * micro-batch. Under the former grouped rules exactly the interleaved ones
 * with more micro-batches than stages deadlock (found by this sweep: with
 * m == p they complete). Interleaved layouts whose m is not a multiple of p are refused
 * by the core (Megatron-LM's rule), so they cannot reach a backend. */
static void test_every_core_schedule_passes(void)
{
    static const struct shape shapes[] = {
        {1, 1, OC_ORDER_TP_DP_PP, 0}, {2, 1, OC_ORDER_TP_DP_PP, 0},
        {2, 1, OC_ORDER_TP_PP_DP, 0}, {1, 2, OC_ORDER_TP_DP_PP, 1},
        {1, 2, OC_ORDER_TP_PP_DP, 0}, {2, 3, OC_ORDER_TP_DP_PP, 1},
        {2, 3, OC_ORDER_TP_PP_DP, 1},
    };
    static const struct {
        enum oc_schedule_kind kind;
        int64_t v;
    } scheds[] = {
        {OC_SCHED_GPIPE, 1}, {OC_SCHED_1F1B, 1}, {OC_SCHED_INTERLEAVED, 2},
        {OC_SCHED_INTERLEAVED, 3}, {OC_SCHED_INTERLEAVED, 4},
    };
    int64_t checked = 0, refused = 0, interleaved = 0, fewer_mb = 0;
    for (size_t k = 0; k < sizeof scheds / sizeof scheds[0]; k++)
        for (int64_t p = 2; p <= 8; p++) {
            const int64_t ms[] = {1, 2, p - 1, p, p + 1, 2 * p, 2 * p + 3, 3 * p};
            for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++)
                for (size_t h = 0; h < sizeof shapes / sizeof shapes[0]; h++)
                    for (int grain = 0; grain < 2; grain++) {
                        const int64_t m = ms[mi], v = scheds[k].v;
                        const int inter = scheds[k].kind == OC_SCHED_INTERLEAVED;
                        /* the same m twice (p - 1 == 2 or p == 2): once */
                        int dup = 0;
                        for (size_t j = 0; j < mi; j++)
                            dup |= ms[j] == m;
                        if (dup)
                            continue;
                        struct oc_schedule s;
                        struct oc_status st = {{0}};
                        int rc = build_swept(&s, &shapes[h], scheds[k].kind, p, v, m,
                                             grain ? OC_GRAIN_CHUNK : OC_GRAIN_LAYER,
                                             &st);
                        if (inter && m % p != 0) {
                            CU_ASSERT_EQUAL(rc, -1);
                            CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "multiple of PP"));
                            refused++;
                            continue;
                        }
                        CU_ASSERT_EQUAL_FATAL(rc, 0);
                        CU_ASSERT_EQUAL(count_sends(&s), 2 * m * (p * v - 1) *
                                                             shapes[h].tp * shapes[h].dp);
                        rc = check_order(&s, &st);
                        if (rc != 0)
                            fprintf(stderr, "%s p%lld v%lld m%lld tp%lld dp%lld: %s\n",
                                    oc_schedule_name(scheds[k].kind), (long long)p,
                                    (long long)v, (long long)m, (long long)shapes[h].tp,
                                    (long long)shapes[h].dp, st.msg);
                        CU_ASSERT_EQUAL(rc, 0);
                        /* the former design: interleaved deadlocks once a
                         * stage runs steady 1F1B pairs (m > p) */
                        rc = oc_p2p_check_deadlock(&s, OC_P2P_RULES_GROUPED, &st);
                        CU_ASSERT_EQUAL(rc, inter && m > p ? -1 : 0);
                        checked++;
                        interleaved += inter;
                        fewer_mb += m < p;
                        oc_schedule_free(&s);
                    }
        }
    /* 5 schedules x 7 PP x 5..8 distinct m x 7 shapes x 2 grains, less the
     * refused interleaved ones (m not a multiple of p): counted by hand */
    fprintf(stderr, "  checked %lld schedules (%lld interleaved, %lld with m < p), "
                    "%lld refused\n", (long long)checked, (long long)interleaved,
            (long long)fewer_mb, (long long)refused);
    CU_ASSERT_EQUAL(checked + refused, 5 * 14 * (7 * 8 - 2 - 1 - 1));
    CU_ASSERT_EQUAL(interleaved, 3 * 14 * 7 * 3);
    /* gpipe and 1f1b with m < p: 1, 2, 3 and 3 x 5 values of m for p = 2..8 */
    CU_ASSERT_EQUAL(fewer_mb, 2 * 14 * (1 + 2 + 3 * 5));
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
    CU_ASSERT_EQUAL(check_order(&s, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "from rank 0 to rank 1 are out of order"));
    /* undo, then turn the last send into a wait: one message fewer (8
     * micro-batches: sends 0..7 of rank 0 go to rank 1) */
    b->tag = a->tag;
    a->tag = t;
    memset(&st, 0, sizeof st);
    CU_ASSERT_EQUAL(check_order(&s, &st), 0);
    struct oc_op *last = nth_send(&s, 0, 7);
    CU_ASSERT_FATAL(last != NULL && nth_send(&s, 0, 8) == NULL);
    last->kind = OC_OP_WAIT;
    CU_ASSERT_EQUAL(check_order(&s, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "rank 0 sends fewer messages to rank 1"));
    oc_schedule_free(&s);
}

/* A core schedule with one receive moved ahead: in tp1-pp2-dp1-1f1b, rank
 * 0 (stage 0) receives the gradient of micro-batch 0 from rank 1 after it
 * sent the activation. Moved to the front of its list, before the first
 * forward, the receive is a run of its own that the program cannot pass
 * until it completes; rank 1 waits for that activation first. The pairs
 * still match (same messages, same order per pair): only the deadlock
 * check refuses it. */
static void test_receive_moved_ahead_refused(void)
{
    struct oc_schedule s;
    CU_ASSERT_EQUAL_FATAL(build(&s, "tp1-pp2-dp1-1f1b", 4, OC_GRAIN_LAYER), 0);
    struct oc_rank_ops *r0 = &s.ranks[0];
    int64_t j = 0;
    while (j < r0->n && r0->ops[j].kind != OC_OP_RECV)
        j++;
    CU_ASSERT_FATAL(j < r0->n && r0->ops[j].peer == 1 && r0->ops[j].mb == 0 &&
                    r0->ops[j].p2p == OC_P2P_GRAD);
    const struct oc_op moved = r0->ops[j];
    memmove(&r0->ops[1], &r0->ops[0], (size_t)j * sizeof *r0->ops);
    r0->ops[0] = moved;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_p2p_check_pairs(&s, &st), 0);
    CU_ASSERT_EQUAL(check_order(&s, &st), -1);
    fprintf(stderr, "  (expected) %s\n", st.msg);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "(direction streams), a cycle of waits"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "before op 0 (RECV from rank 1) completes"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "rank 1's op 3 (RECV from rank 0) needs its "
                                          "SEND, which rank 0 has not reached"));
    oc_schedule_free(&s);
}

/* The direction of a message is the same at both ends: up from a lower to
 * a higher world rank. With TP 2 in order tp-dp-pp, stage 0's rank 1 sends
 * its activations to rank 3 (up) and receives the gradients from rank 3
 * (down at rank 3's end as well: from 3 to 1). */
static void test_stream_of(void)
{
    CU_ASSERT_EQUAL(oc_p2p_stream_of(0, 1), OC_P2P_UP);
    CU_ASSERT_EQUAL(oc_p2p_stream_of(1, 3), OC_P2P_UP);
    CU_ASSERT_EQUAL(oc_p2p_stream_of(3, 1), OC_P2P_DOWN);
    CU_ASSERT_EQUAL(oc_p2p_stream_of(7, 0), OC_P2P_DOWN);
    struct oc_schedule s;
    CU_ASSERT_EQUAL_FATAL(build(&s, "tp2-pp2-dp1-1f1b", 2, OC_GRAIN_LAYER), 0);
    int64_t up = 0, down = 0;
    for (int64_t i = 0; i < s.ranks[1].n; i++) {
        const struct oc_op *o = &s.ranks[1].ops[i];
        if (o->kind == OC_OP_SEND) {
            CU_ASSERT(o->peer == 3 && o->p2p == OC_P2P_ACT);
            up += oc_p2p_stream_of(1, o->peer) == OC_P2P_UP;
        } else if (o->kind == OC_OP_RECV) {
            CU_ASSERT(o->peer == 3 && o->p2p == OC_P2P_GRAD);
            down += oc_p2p_stream_of(o->peer, 1) == OC_P2P_DOWN;
        }
    }
    CU_ASSERT_EQUAL(up, 2);
    CU_ASSERT_EQUAL(down, 2);
    oc_schedule_free(&s);
}

/* The former design, one pp stream with each run of messages one NCCL
 * group: the interleaved schedule deadlocks, 1f1b and gpipe do not (the
 * emulation's finding); the direction streams run all of them. */
static void test_grouped_rules_deadlock_interleaved(void)
{
    static const struct {
        const char *layout;
        int deadlocks; /* under OC_P2P_RULES_GROUPED */
    } cases[] = {
        {"tp1-pp2-dp1-v2", 1}, {"tp2-pp2-dp1-v2", 1}, {"tp1-pp4-dp1-v2", 1},
        {"tp2-pp2-dp1-v4", 1}, {"tp1-pp2-dp1-1f1b", 0}, {"tp1-pp4-dp1-1f1b", 0},
        {"tp1-pp2-dp2-1f1b", 0}, {"tp1-pp2-dp1-gpipe", 0}, {"tp1-pp4-dp1-gpipe", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct oc_schedule s;
        CU_ASSERT_EQUAL_FATAL(build(&s, cases[i].layout, 8, OC_GRAIN_LAYER), 0);
        struct oc_status st = {{0}};
        int rc = oc_p2p_check_deadlock(&s, OC_P2P_RULES_GROUPED, &st);
        if (rc != -cases[i].deadlocks)
            fprintf(stderr, "%s grouped: rc %d: %s\n", cases[i].layout, rc, st.msg);
        CU_ASSERT_EQUAL(rc, -cases[i].deadlocks);
        if (cases[i].deadlocks)
            CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "(one grouped stream), a cycle of waits"));
        memset(&st, 0, sizeof st);
        CU_ASSERT_EQUAL(oc_p2p_check_deadlock(&s, OC_P2P_RULES_DIRECTION, &st), 0);
        oc_schedule_free(&s);
    }
    /* The cycle of the file comment of backend_cuda_comm.c (tp1-pp2-dp1-v2, 8
     * micro-batches): rank 0's send of message 5 (op 45) heads its stream,
     * rank 1's group {send 3 (op 51), receive 4 (op 53)} heads its own. */
    struct oc_schedule s;
    CU_ASSERT_EQUAL_FATAL(build(&s, "tp1-pp2-dp1-v2", 8, OC_GRAIN_LAYER), 0);
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_p2p_check_deadlock(&s, OC_P2P_RULES_GROUPED, &st), -1);
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
    CU_ASSERT_EQUAL(check_order(&h.s, &st), -1);
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
    CU_ASSERT_EQUAL(check_order(&h.s, &st), 0);
    CU_ASSERT_EQUAL(oc_p2p_check_deadlock(&h.s, OC_P2P_RULES_GROUPED, &st), 0);
    /* a WAIT between the send and the receive: the host waits for the
     * send, whose receive the peer has not reached (blocked the same way) */
    for (int64_t r = 0; r < 2; r++) {
        h.ops[r][0] = hop(OC_OP_SEND, 1 - r, 7);
        h.ops[r][1] = hop(OC_OP_WAIT, -1, 0);
        h.ops[r][2] = hop(OC_OP_RECV, 1 - r, 7);
    }
    memset(&st, 0, sizeof st);
    CU_ASSERT_EQUAL(check_order(&h.s, &st), -1);
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
    CU_ASSERT_EQUAL(check_order(&h.s, &st), -1);
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
    CU_ASSERT_EQUAL(oc_p2p_check_deadlock(&h.s, OC_P2P_RULES_GROUPED, &st), 0);
    /* rank 0 sending to rank 1 first: no cycle */
    h.ops[0][0] = hop(OC_OP_SEND, 1, 1);
    h.ops[0][1] = hop(OC_OP_SEND, 2, 1);
    memset(&st, 0, sizeof st);
    CU_ASSERT_EQUAL(check_order(&h.s, &st), 0);
}

static int setup(void)
{
    struct oc_status st = {{0}};
    return oc_model_load("tiny", &tiny, &st);
}

static CU_TestInfo tests[] = {
    {"every core schedule passes", test_every_core_schedule_passes},
    {"swapped or missing messages fail", test_swapped_and_missing_fail},
    {"a receive moved ahead of its send is refused",
     test_receive_moved_ahead_refused},
    {"a message's stream by direction", test_stream_of},
    {"grouped one-stream rules deadlock interleaved",
     test_grouped_rules_deadlock_interleaved},
    {"two ranks receiving first are refused", test_two_ranks_receive_first_refused},
    {"a direction stream's order can deadlock", test_direction_fifo_deadlock_refused},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"p2p_order", setup, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
