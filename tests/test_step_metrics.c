/* test_step_metrics.c: the one definition of a step's metrics
 * (core/step_metrics.c) on timelines made by hand, every figure against a
 * value worked out in the comments from step_metrics.h's definitions.
 *
 * oc_step_metrics reads only the ops' kinds, groups, async flags, peers,
 * tags and ALLOC/FREE bytes, and the layout only to put ranks into stages;
 * so the schedules here are written op by op (tp1-pp2-dp2: ranks 0 and 1
 * are stage 0, ranks 2 and 3 stage 1, pipeline pairs 0-2 and 1-3). A TP
 * op on a TP group of one is still a TP op to the function, which is all
 * the test needs of it. Times are multiples of 0.5 s, so every sum is
 * exact and the figures are compared to 1e-12. */
#include <math.h>
#include <string.h>

#include "layout.h"
#include "metrics.h"
#include "schedule.h"
#include "step_metrics.h"
#include "test_util.h"
#include "timeline.h"

#define EPS 1e-12

/* One op of a hand-made list and its interval. */
struct hop {
    enum oc_op_kind kind;
    enum oc_group group; /* COLLECTIVE */
    int async;           /* COLLECTIVE */
    int64_t peer, tag;   /* SEND / RECV */
    double bytes;        /* ALLOC / FREE */
    double start, end, inner;
};

#define COMPUTE(a, b) {OC_OP_COMPUTE, 0, 0, -1, -1, 0, a, b, 0}
#define TP(a, b, in) {OC_OP_COLLECTIVE, OC_GROUP_TP, 0, -1, -1, 0, a, b, in}
#define DP_ASYNC(a, b) {OC_OP_COLLECTIVE, OC_GROUP_DP, 1, -1, -1, 0, a, b, 0}
#define SEND(peer, tag, t) {OC_OP_SEND, 0, 0, peer, tag, 0, t, t, 0}
#define RECV(peer, tag, a, b) {OC_OP_RECV, 0, 0, peer, tag, 0, a, b, 0}
#define WAIT(a, b) {OC_OP_WAIT, 0, 0, -1, -1, 0, a, b, 0}
#define ALLOC(by, t) {OC_OP_ALLOC, 0, 0, -1, -1, by, t, t, 0}
#define FREE(by, t) {OC_OP_FREE, 0, 0, -1, -1, by, t, t, 0}

struct hand {
    struct oc_schedule s;
    struct oc_timeline tl;
    struct oc_metrics mt;
};

/* Builds the schedule of `layout` from lists[r] (n[r] ops) and a timeline
 * with their times; record NULL: every rank recorded. inner: with the
 * lists' inner times (else inner_s NULL). peak_mem_bytes stays NULL (the
 * ALLOC / FREE sums). */
static void hand_init(struct hand *h, const char *layout, const struct hop *const *lists,
                      const int64_t *n, const unsigned char *record, int inner)
{
    struct oc_status st = {{0}};
    memset(h, 0, sizeof *h);
    oc_layout_default(&h->s.layout);
    CU_ASSERT_EQUAL_FATAL(oc_layout_parse(&h->s.layout, layout, &st), 0);
    h->s.nranks = oc_layout_world(&h->s.layout);
    h->s.ranks = oc_xcalloc((size_t)h->s.nranks, sizeof *h->s.ranks);
    for (int64_t r = 0; r < h->s.nranks; r++) {
        struct oc_rank_ops *ro = &h->s.ranks[r];
        ro->n = ro->cap = n[r];
        ro->ops = oc_xcalloc((size_t)n[r], sizeof *ro->ops);
        for (int64_t i = 0; i < n[r]; i++) {
            struct oc_op *op = &ro->ops[i];
            const struct hop *x = &lists[r][i];
            op->kind = (uint8_t)x->kind;
            op->group = (uint8_t)x->group;
            op->async = (uint8_t)x->async;
            op->coll = OC_COLL_ALLREDUCE;
            op->count = 1;
            op->peer = x->peer;
            op->tag = x->tag;
            op->bytes = x->bytes;
            op->stage = (int32_t)oc_layout_coord(&h->s.layout, r).pp;
        }
    }
    oc_timeline_init(&h->tl, &h->s, record);
    if (inner) {
        oc_timeline_measured(&h->tl);
        free(h->tl.peak_mem_bytes);
        h->tl.peak_mem_bytes = NULL;
    }
    for (int64_t r = 0; r < h->s.nranks; r++)
        for (int64_t i = 0; h->tl.start_s[r] && i < n[r]; i++) {
            h->tl.start_s[r][i] = lists[r][i].start;
            h->tl.end_s[r][i] = lists[r][i].end;
            if (inner)
                h->tl.inner_s[r][i] = lists[r][i].inner;
        }
    oc_metrics_init(&h->mt, &h->s.layout);
}

static void hand_free(struct hand *h)
{
    oc_timeline_free(&h->tl);
    oc_schedule_free(&h->s);
}

static void check_stage(const struct oc_stage_metrics *g, double compute, double bubble,
                        double exposed, double tp, double pp, double dp, double peak)
{
    CU_ASSERT_DOUBLE_EQUAL(g->compute_s, compute, EPS);
    CU_ASSERT_DOUBLE_EQUAL(g->bubble_s, bubble, EPS);
    CU_ASSERT_DOUBLE_EQUAL(g->exposed_comm_s, exposed, EPS);
    CU_ASSERT_DOUBLE_EQUAL(g->tp_comm_s, tp, EPS);
    CU_ASSERT_DOUBLE_EQUAL(g->pp_comm_s, pp, EPS);
    CU_ASSERT_DOUBLE_EQUAL(g->dp_comm_s, dp, EPS);
    CU_ASSERT_DOUBLE_EQUAL(g->peak_mem_bytes, peak, EPS);
}

/* ---- 2 stages x 2 ranks: one forward and one backward each ------------ */

/* Rank 0 (stage 0): forward, a blocking TP all-reduce with 0.5 s of inner
 * compute (the part resuming after it), sends its activation to rank 2 at
 * 3, posts the gradient's RECV at 3; rank 2 sends it at 7 and it arrives
 * at 8: wait min(7, 8) - 3 = 4 (bubble), transfer 8 - 7 = 1 (exposed).
 * Backward, then the async DP reduction [10, 12.5] under 1 s of compute
 * [10, 11]: 1 s hidden, the WAIT [11, 12.5] exposes the other 1.5 s.
 *   end 13; compute 2 + 0.5 (inner) + 2 + 1 + 0.5 = 6; bubble 4 + (13 -
 *   13) = 4; exposed (1 - 0.5) + 1 + 1.5 = 3; tp 0.5; dp 2.5; pp: its
 *   SEND arrived at 4.5 (rank 2's RECV end), sent 3, posted 0: 4.5 - 3 =
 *   1.5; memory 100 + 50 = 150 at the peak. 6 + 4 + 3 = 13 = the step. */
static const struct hop rank0[] = {
    ALLOC(100, 0),   COMPUTE(0, 2),    TP(2, 3, 0.5),   SEND(2, 0, 3),
    ALLOC(50, 3),    RECV(2, 1, 3, 8), COMPUTE(8, 10),  DP_ASYNC(10, 12.5),
    FREE(50, 10),    COMPUTE(10, 11),  WAIT(11, 12.5),  COMPUTE(12.5, 13),
};
/* Rank 1 (stage 0): the same shape; its TP all-reduce has no inner
 * compute; its gradient is sent at 8 and arrives at 9: wait min(8, 9) -
 * 3 = 5, transfer 1. Its DP reduction [10, 12.5] under 1.5 s of compute:
 * the WAIT [11.5, 12.5] exposes 1 s.
 *   end 13; compute 2.5 + 1 + 1.5 + 0.5 = 5.5; bubble 5; exposed 0.5 + 1
 *   + 1 = 2.5; tp 0.5; dp 2.5; pp: its activation to rank 3 was sent at 3
 *   and arrived at 6 over a slow link, rank 3 posted at 0: 6 - 3 = 3;
 *   memory 150. 5.5 + 5 + 2.5 = 13. */
static const struct hop rank1[] = {
    ALLOC(100, 0),   COMPUTE(0, 2.5),  TP(2.5, 3, 0),   SEND(3, 0, 3),
    ALLOC(50, 3),    RECV(3, 1, 3, 9), COMPUTE(9, 10),  DP_ASYNC(10, 12.5),
    FREE(50, 10),    COMPUTE(10, 11.5), WAIT(11.5, 12.5), COMPUTE(12.5, 13),
};
/* Rank 2 (stage 1): posts the activation's RECV at 0; sent at 3, arrived
 * at 4.5: wait 3, transfer 1.5. Forward, backward, sends the gradient at
 * 7, DP reduction [7, 10.5] under 1 s of compute, WAIT [8, 10.5].
 *   end 11; compute 1.5 + 1 + 1 + 0.5 = 4; bubble 3 + (13 - 11) = 5;
 *   exposed 1.5 + 2.5 = 4; tp 0; dp 3.5; pp: arrived 8, sent 7, posted 3:
 *   1; memory 120 + 60 = 180. 4 + 5 + 4 = 13. */
static const struct hop rank2[] = {
    ALLOC(120, 0),   RECV(0, 0, 0, 4.5), ALLOC(60, 4.5), COMPUTE(4.5, 6),
    COMPUTE(6, 7),   FREE(60, 7),        SEND(0, 1, 7),  DP_ASYNC(7, 10.5),
    COMPUTE(7, 8),   WAIT(8, 10.5),      COMPUTE(10.5, 11),
};
/* Rank 3 (stage 1): the slow link: RECV posted at 0, sent at 3, arrived
 * at 6: wait 3 (bubble), transfer 3 (exposed, not bubble). Gradient sent
 * at 8, DP reduction [8, 10.5] under 0.5 s of compute, WAIT [8.5, 10.5].
 *   end 11; compute 1 + 1 + 0.5 + 0.5 = 3; bubble 3 + 2 = 5; exposed 3 +
 *   2 = 5; tp 0; dp 2.5; pp: arrived 9, sent 8, posted 3: 1; memory 130
 *   + 60 = 190. 3 + 5 + 5 = 13. */
static const struct hop rank3[] = {
    ALLOC(130, 0),   RECV(1, 0, 0, 6),   ALLOC(60, 6),   COMPUTE(6, 7),
    COMPUTE(7, 8),   FREE(60, 8),        SEND(1, 1, 8),  DP_ASYNC(8, 10.5),
    COMPUTE(8, 8.5), WAIT(8.5, 10.5),    COMPUTE(10.5, 11),
};

#define N(a) ((int64_t)(sizeof(a) / sizeof(a)[0]))
static const struct hop *const four[] = {rank0, rank1, rank2, rank3};
static const int64_t four_n[] = {N(rank0), N(rank1), N(rank2), N(rank3)};

/* oc_step_metrics on the four ranks above (record: NULL or which are
 * recorded; inner: with rank 0's inner compute; peak: measured peaks or
 * NULL), against the step and each stage's {compute, bubble, exposed, tp,
 * pp, dp, peak memory}. Every rank's time is compute, bubble or exposed,
 * so each stage's three add up to the step. */
static void check_four(const unsigned char *record, int inner, const double *peak,
                       double step, const double *want0, const double *want1)
{
    struct hand h;
    hand_init(&h, "tp1-pp2-dp2", four, four_n, record, inner);
    if (peak) {
        h.tl.peak_mem_bytes = oc_xcalloc(4, sizeof(double));
        memcpy(h.tl.peak_mem_bytes, peak, 4 * sizeof(double));
    }
    oc_step_metrics(&h.tl, &h.mt);
    CU_ASSERT_DOUBLE_EQUAL(h.mt.step_time_s, step, EPS);
    for (int k = 0; k < 2; k++) {
        const double *w = k == 0 ? want0 : want1;
        const struct oc_stage_metrics *g = &h.mt.stage[k];
        check_stage(g, w[0], w[1], w[2], w[3], w[4], w[5], w[6]);
        CU_ASSERT_DOUBLE_EQUAL(g->compute_s + g->bubble_s + g->exposed_comm_s, step, EPS);
    }
    hand_free(&h);
}

/* Step 13 (ranks 0 and 1 end last). Stage 0 = means of ranks 0 and 1:
 * compute (6 + 5.5) / 2 = 5.75, bubble (4 + 5) / 2 = 4.5, exposed (3 +
 * 2.5) / 2 = 2.75, tp 0.5, pp (1.5 + 3) / 2 = 2.25, dp 2.5, peak 150.
 * Stage 1 = ranks 2 and 3: compute 3.5, bubble 5, exposed 4.5, tp 0, pp
 * 1, dp 3, peak 190. */
static void test_two_stages(void)
{
    const double s0[7] = {5.75, 4.5, 2.75, 0.5, 2.25, 2.5, 150};
    const double s1[7] = {3.5, 5, 4.5, 0, 1, 3, 190};
    check_four(NULL, 1, NULL, 13, s0, s1);
}

/* Without inner times (the simulator's timeline), rank 0's TP op is all
 * communication: compute 6 - 0.5 = 5.5, tp 1, exposed 3 + 0.5 = 3.5, so
 * stage 0: compute (5.5 + 5.5) / 2 = 5.5, tp (1 + 0.5) / 2 = 0.75,
 * exposed (3.5 + 2.5) / 2 = 3. Measured peaks (1000, 3000, 2000, 500)
 * replace the ops' sums: stage 0 max 3000, stage 1 max 2000. */
static void test_inner_and_measured_memory(void)
{
    const double peak[4] = {1000, 3000, 2000, 500};
    const double s0[7] = {5.5, 4.5, 3, 0.75, 2.25, 2.5, 3000};
    const double s1[7] = {3.5, 5, 4.5, 0, 1, 3, 2000};
    check_four(NULL, 0, peak, 13, s0, s1);
}

/* The fast simulator records one rank per TP group; here ranks 0 and 2,
 * ranks 1 and 3 are not recorded. The stages are then ranks 0 and 2 alone,
 * and the step is theirs: 13 (rank 0), rank 2 idles 13 - 11 = 2 as before.
 * Stage 0 = rank 0: 6, 4, 3, 0.5, 1.5, 2.5, 150; stage 1 = rank 2: 4, 5,
 * 4, 0, 1, 3.5, 180. */
static void test_recorded_ranks_only(void)
{
    const unsigned char record[4] = {1, 0, 1, 0};
    const double s0[7] = {6, 4, 3, 0.5, 1.5, 2.5, 150};
    const double s1[7] = {4, 5, 4, 0, 1, 3.5, 180};
    check_four(record, 1, NULL, 13, s0, s1);
}

/* A SEND's end is the arrival, whatever the producer wrote: the figures
 * read the RECV. oc_timeline_send_arrivals sets rank 0's SEND (op 3) to
 * 4.5, rank 1's to 6, rank 2's (op 6) to 8, rank 3's to 9; a SEND whose
 * RECV is not recorded keeps its end. */
static void test_send_arrivals(void)
{
    struct hand h;
    hand_init(&h, "tp1-pp2-dp2", four, four_n, NULL, 0);
    h.tl.end_s[0][3] = 3.25; /* the send call returned at 3.25 */
    oc_step_metrics(&h.tl, &h.mt);
    CU_ASSERT_DOUBLE_EQUAL(h.mt.stage[0].pp_comm_s, 2.25, EPS);
    oc_timeline_send_arrivals(&h.tl);
    CU_ASSERT_DOUBLE_EQUAL(h.tl.end_s[0][3], 4.5, EPS);
    CU_ASSERT_DOUBLE_EQUAL(h.tl.end_s[1][3], 6, EPS);
    CU_ASSERT_DOUBLE_EQUAL(h.tl.end_s[2][6], 8, EPS);
    CU_ASSERT_DOUBLE_EQUAL(h.tl.end_s[3][6], 9, EPS);
    struct oc_metrics *again = oc_xmalloc(sizeof *again);
    oc_metrics_init(again, &h.s.layout);
    oc_step_metrics(&h.tl, again);
    CU_ASSERT_DOUBLE_EQUAL(again->stage[0].pp_comm_s, 2.25, EPS);
    CU_ASSERT_DOUBLE_EQUAL(again->step_time_s, 13, EPS);
    free(again);
    hand_free(&h);

    const unsigned char record[4] = {1, 1, 0, 1};
    hand_init(&h, "tp1-pp2-dp2", four, four_n, record, 0);
    oc_timeline_send_arrivals(&h.tl);
    CU_ASSERT_DOUBLE_EQUAL(h.tl.end_s[0][3], 3, EPS); /* rank 2 not recorded */
    CU_ASSERT_DOUBLE_EQUAL(h.tl.end_s[1][3], 6, EPS);
    hand_free(&h);
}

/* The partners of the messages: rank 0's SEND (op 3, tag 0) is rank 2's
 * RECV (op 1) and back; rank 0's RECV (op 5, tag 1) is rank 2's SEND (op
 * 6); a compute op has none. */
static void test_partners(void)
{
    struct hand h;
    hand_init(&h, "tp1-pp2-dp2", four, four_n, NULL, 0);
    int64_t **p = oc_timeline_partners(&h.s);
    CU_ASSERT_EQUAL(p[0][3], 1);
    CU_ASSERT_EQUAL(p[2][1], 3);
    CU_ASSERT_EQUAL(p[0][5], 6);
    CU_ASSERT_EQUAL(p[2][6], 5);
    CU_ASSERT_EQUAL(p[1][3], 1);
    CU_ASSERT_EQUAL(p[3][6], 5);
    CU_ASSERT_EQUAL(p[0][1], -1);
    oc_timeline_partners_free(p, h.s.nranks);
    hand_free(&h);
}

/* ---- one message, three ways (tp1-pp2-dp1: rank 0 stage 0, rank 1 stage
 * 1). Rank 0 computes [0, 2], sends at 2 and waits for its send until the
 * data is there; rank 1 posts its RECV at `post`, computes 1 s after the
 * arrival. */
static void one_message(double post, double arrive, double *bubble1, double *exposed1,
                        double *pp0, double *step)
{
    const struct hop r0[] = {COMPUTE(0, 2), SEND(1, 0, 2), WAIT(2, arrive)};
    const struct hop r1[] = {RECV(0, 0, post, arrive), COMPUTE(arrive, arrive + 1)};
    const struct hop *const lists[] = {r0, r1};
    const int64_t n[] = {N(r0), N(r1)};
    struct hand h;
    hand_init(&h, "tp1-pp2-dp1", lists, n, NULL, 0);
    oc_step_metrics(&h.tl, &h.mt);
    *bubble1 = h.mt.stage[1].bubble_s;
    *exposed1 = h.mt.stage[1].exposed_comm_s;
    *pp0 = h.mt.stage[0].pp_comm_s;
    *step = h.mt.step_time_s;
    CU_ASSERT_DOUBLE_EQUAL(h.mt.stage[0].compute_s, 2, EPS);
    CU_ASSERT_DOUBLE_EQUAL(h.mt.stage[1].compute_s, 1, EPS);
    CU_ASSERT_DOUBLE_EQUAL(h.mt.stage[1].pp_comm_s, 0, EPS); /* on the sender */
    /* the sender: its WAIT [2, arrive] is exposed, it idles 1 s at the end */
    CU_ASSERT_DOUBLE_EQUAL(h.mt.stage[0].exposed_comm_s, arrive - 2, EPS);
    CU_ASSERT_DOUBLE_EQUAL(h.mt.stage[0].bubble_s, 1, EPS);
    hand_free(&h);
}

/* A fast link: posted 0, sent 2, arrived 2.5: bubble 2, transfer 0.5.
 * A slow link: arrived 5: bubble still 2 (the wait for the sender), the 3 s
 * of transfer are exposed, not bubble; pp 3 on the sender; step 6.
 * A late receiver: posted 4, after the send (2), arrived 4.5: no bubble,
 * transfer 0.5 from the post (the sender's data waited for it), pp 0.5. */
static void test_slow_link_is_not_bubble(void)
{
    double bubble, exposed, pp, step;
    one_message(0, 2.5, &bubble, &exposed, &pp, &step);
    CU_ASSERT_DOUBLE_EQUAL(bubble, 2, EPS);
    CU_ASSERT_DOUBLE_EQUAL(exposed, 0.5, EPS);
    CU_ASSERT_DOUBLE_EQUAL(pp, 0.5, EPS);
    CU_ASSERT_DOUBLE_EQUAL(step, 3.5, EPS);
    one_message(0, 5, &bubble, &exposed, &pp, &step);
    CU_ASSERT_DOUBLE_EQUAL(bubble, 2, EPS);
    CU_ASSERT_DOUBLE_EQUAL(exposed, 3, EPS);
    CU_ASSERT_DOUBLE_EQUAL(pp, 3, EPS);
    CU_ASSERT_DOUBLE_EQUAL(step, 6, EPS);
    one_message(4, 4.5, &bubble, &exposed, &pp, &step);
    CU_ASSERT_DOUBLE_EQUAL(bubble, 0, EPS);
    CU_ASSERT_DOUBLE_EQUAL(exposed, 0.5, EPS);
    CU_ASSERT_DOUBLE_EQUAL(pp, 0.5, EPS);
    CU_ASSERT_DOUBLE_EQUAL(step, 5.5, EPS);
}

/* An eager send (MPI's small messages): rank 0's WAIT is over at 2.5,
 * while its message arrives at 5 (rank 1 posted at 0, computes [5, 6]).
 * The SEND's end is the arrival (5, after oc_timeline_send_arrivals), but
 * a rank ends with the ops it waits through: rank 0 ends at 2.5 and idles
 * 6 - 2.5 = 3.5 (bubble), exposed 0.5 (its WAIT), pp 5 - 2 = 3. */
static void test_rank_end_is_its_own(void)
{
    const struct hop r0[] = {COMPUTE(0, 2), SEND(1, 0, 2), WAIT(2, 2.5)};
    const struct hop r1[] = {RECV(0, 0, 0, 5), COMPUTE(5, 6)};
    const struct hop *const lists[] = {r0, r1};
    const int64_t n[] = {N(r0), N(r1)};
    struct hand h;
    hand_init(&h, "tp1-pp2-dp1", lists, n, NULL, 0);
    oc_timeline_send_arrivals(&h.tl);
    CU_ASSERT_DOUBLE_EQUAL(h.tl.end_s[0][1], 5, EPS);
    oc_step_metrics(&h.tl, &h.mt);
    CU_ASSERT_DOUBLE_EQUAL(h.mt.step_time_s, 6, EPS);
    check_stage(&h.mt.stage[0], 2, 3.5, 0.5, 0, 3, 0, 0);
    check_stage(&h.mt.stage[1], 1, 2, 3, 0, 0, 0, 0);
    hand_free(&h);
}

/* ---- DP overlap (tp1-pp1-dp2: one stage of two ranks). Both reduce
 * their gradients asynchronously over [4, 7] (3 s of dp_comm each).
 * Rank 0 computes [4, 6] under it, so 2 s are hidden and its WAIT [6, 7]
 * exposes 1; the optimizer [7, 7.5]; end 7.5. Rank 1 computes [4, 7.5],
 * hiding all 3 s (WAIT [7.5, 7.5] empty), optimizer [7.5, 8]; end 8.
 *   step 8; rank 0: compute 4 + 2 + 0.5 = 6.5, exposed 1, bubble 8 - 7.5
 *   = 0.5; rank 1: compute 4 + 3.5 + 0.5 = 8, exposed 0, bubble 0.
 *   Stage: compute 7.25, bubble 0.25, exposed 0.5, dp 3: hidden 3 - 0.5 =
 *   2.5 on average (2 and 3). */
static void test_dp_overlap(void)
{
    const struct hop r0[] = {COMPUTE(0, 4), DP_ASYNC(4, 7), COMPUTE(4, 6),
                             WAIT(6, 7), COMPUTE(7, 7.5)};
    const struct hop r1[] = {COMPUTE(0, 4), DP_ASYNC(4, 7), COMPUTE(4, 7.5),
                             WAIT(7.5, 7.5), COMPUTE(7.5, 8)};
    const struct hop *const lists[] = {r0, r1};
    const int64_t n[] = {N(r0), N(r1)};
    struct hand h;
    hand_init(&h, "tp1-pp1-dp2", lists, n, NULL, 0);
    oc_step_metrics(&h.tl, &h.mt);
    CU_ASSERT_DOUBLE_EQUAL(h.mt.step_time_s, 8, EPS);
    check_stage(&h.mt.stage[0], 7.25, 0.25, 0.5, 0, 0, 3, 0);
    CU_ASSERT_DOUBLE_EQUAL(h.mt.stage[0].dp_comm_s - h.mt.stage[0].exposed_comm_s, 2.5, EPS);
    hand_free(&h);
}

static CU_TestInfo tests[] = {
    {"2 stages x 2 ranks, every figure", test_two_stages},
    {"inner compute and measured memory", test_inner_and_measured_memory},
    {"only recorded ranks count", test_recorded_ranks_only},
    {"SEND ends are arrivals", test_send_arrivals},
    {"message partners", test_partners},
    {"a slow link is transfer, not bubble", test_slow_link_is_not_bubble},
    {"DP overlap hides what compute covers", test_dp_overlap},
    {"a rank ends with its own ops", test_rank_end_is_its_own},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {{"step_metrics", NULL, NULL, NULL, NULL, tests},
                                CU_SUITE_INFO_NULL};

int main(void) { return oc_test_run(suites); }
