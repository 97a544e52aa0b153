/* test_sim_steady.c: the steady-state fold (sim/replay_steady.c).
 *
 *   - the plan's window and reduced run by hand (1f1b and interleaved),
 *     and where it does not apply (gpipe, one stage, too few
 *     micro-batches);
 *   - the unfold of a timeline that is linear in the micro-batch (op q of
 *     micro-batch j at j P + q / 1000 s) is the full schedule's linear
 *     timeline, every op; an op off its period, an op of no
 *     micro-batch inside the window and an op too long for a repeating
 *     state each break it (-1, and why);
 *   - simulated: the figures of a folded replay equal the full replay's
 *     to 1e-9 of the step, on layouts covering 1f1b, interleaved, CP,
 *     ZeRO-1/2/3, DP overlap on and off, full recompute, DP across nodes,
 *     fast and sym fidelity and a forced tree (sym falls back to fast);
 *     sim_micro_batches says the fold ran;
 *   - the figures read rank by rank without the full schedule (a sweep's)
 *     equal those of the unfolded timeline (`ocsim simulate`'s) bit for
 *     bit, on 1f1b, interleaved, CP and ZeRO-3.
 *
 * Model gpt3-1.3b (24 layers), sequence 2048, bf16, topology h100-100g
 * (8 GPUs and one 100 Gb/s NIC per node).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "replay_priv.h"
#include "schedule.h"
#include "test_util.h"
#include "timeline.h"

static struct oc_layout lay(const char *s, int64_t global_batch)
{
    struct oc_layout l;
    struct oc_status st = {{0}};
    oc_layout_default(&l);
    CU_ASSERT_EQUAL_FATAL(oc_layout_parse(&l, s, &st), 0);
    l.global_batch = global_batch;
    l.seq_length = 2048;
    return l;
}

static struct oc_model model(void)
{
    struct oc_model m;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_model_load("gpt3-1.3b", &m, &st), 0);
    return m;
}

static struct oc_topology topo(void)
{
    struct oc_topology t;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("h100-100g", &t, &st), 0);
    return t;
}

/* ---- the plan ----------------------------------------------------------- */

/* 1f1b, p = 4: K = 1, W = 4: c0 = 5, c1 = 5 + 4 + 2 = 11, m1 = 11 + 1 + 4
 * + 1 = 17, so m >= 34. Interleaved, p = 4: K = 4, W = 8: c0 = 12, c1 =
 * 12 + 12 = 24, m1 = 24 + 4 + 8 + 4 = 40, so m >= 80 (and D a multiple
 * of 4). */
static void test_plan(void)
{
    struct oc_rp_steady sp;
    struct oc_layout l = lay("tp2-pp4-dp2-mb1-1f1b", 2 * 64);
    CU_ASSERT_EQUAL(oc_rp_steady_plan(&l, &sp), 1);
    CU_ASSERT_EQUAL(sp.K, 1);
    CU_ASSERT_EQUAL(sp.c0, 5);
    CU_ASSERT_EQUAL(sp.c1, 11);
    CU_ASSERT_EQUAL(sp.m1, 17);
    CU_ASSERT_EQUAL(sp.D, 47);
    l.global_batch = 2 * 34;
    CU_ASSERT_EQUAL(oc_rp_steady_plan(&l, &sp), 1);
    l.global_batch = 2 * 33;
    CU_ASSERT_EQUAL(oc_rp_steady_plan(&l, &sp), 0);
    l = lay("tp2-pp4-dp1-mb1-v2", 80);
    CU_ASSERT_EQUAL(oc_rp_steady_plan(&l, &sp), 1);
    CU_ASSERT_EQUAL(sp.K, 4);
    CU_ASSERT_EQUAL(sp.c0, 12);
    CU_ASSERT_EQUAL(sp.c1, 24);
    CU_ASSERT_EQUAL(sp.m1, 40);
    CU_ASSERT_EQUAL(sp.D, 40);
    l.global_batch = 76;
    CU_ASSERT_EQUAL(oc_rp_steady_plan(&l, &sp), 0);
    l = lay("tp2-pp4-dp2-mb1-gpipe", 2 * 64);
    CU_ASSERT_EQUAL(oc_rp_steady_plan(&l, &sp), 0);
    l = lay("tp8-pp1-dp2-mb1-1f1b", 2 * 64);
    CU_ASSERT_EQUAL(oc_rp_steady_plan(&l, &sp), 0);
}

/* ---- the unfold of a linear timeline ------------------------------------ */

#define PER 1.0

/* Op x of a rank: micro-batch j's q-th op at j PER + q / 1000, lasting
 * 1e-4 s; an op of no micro-batch before every op of micro-batches at
 * -1 + q / 1000, after them at M PER + 10 + q / 1000 (M micro-batches). */
static void linear(const struct oc_schedule *s, struct oc_timeline *tl)
{
    const int64_t M = s->num_micro_batches;
    int64_t *seen = calloc((size_t)M, sizeof *seen);
    for (int64_t r = 0; r < s->nranks; r++) {
        const struct oc_rank_ops *ro = &s->ranks[r];
        memset(seen, 0, (size_t)M * sizeof *seen);
        int64_t before = 0, after = 0, any = 0;
        for (int64_t x = 0; x < ro->n; x++) {
            const int32_t j = ro->ops[x].mb;
            double t0;
            if (j >= 0) {
                t0 = (double)j * PER + (double)seen[j]++ / 1000.0;
                any = 1;
            } else if (!any) {
                t0 = -1.0 + (double)before++ / 1000.0;
            } else {
                t0 = (double)M * PER + 10.0 + (double)after++ / 1000.0;
            }
            tl->start_s[r][x] = t0;
            tl->end_s[r][x] = t0 + 1e-4;
        }
    }
    free(seen);
}

struct unfold_case {
    struct oc_model m;
    struct oc_layout l, l1;
    struct oc_rp_steady sp;
    struct oc_schedule s, s1;
    struct oc_timeline tl1, want;
};

static void case_init(struct unfold_case *c)
{
    struct oc_status st = {{0}};
    c->m = model();
    c->l = lay("tp2-pp4-dp2-mb1-1f1b", 2 * 64);
    CU_ASSERT_EQUAL_FATAL(oc_rp_steady_plan(&c->l, &c->sp), 1);
    c->l1 = c->l;
    c->l1.global_batch = c->sp.m1 * 2;
    const struct oc_schedule_opts so = {OC_GRAIN_CHUNK, 1, NULL};
    CU_ASSERT_EQUAL_FATAL(oc_schedule_build(&c->s, &c->m, &c->l, &so, &st), 0);
    CU_ASSERT_EQUAL_FATAL(oc_schedule_build(&c->s1, &c->m, &c->l1, &so, &st), 0);
    oc_timeline_init(&c->tl1, &c->s1, NULL);
    linear(&c->s1, &c->tl1);
    oc_timeline_init(&c->want, &c->s, NULL);
    linear(&c->s, &c->want);
}

static void case_free(struct unfold_case *c)
{
    oc_timeline_free(&c->tl1);
    oc_timeline_free(&c->want);
    oc_schedule_free(&c->s);
    oc_schedule_free(&c->s1);
}

static void test_unfold_linear(void)
{
    struct unfold_case c;
    case_init(&c);
    struct oc_timeline tl;
    char why[256] = "";
    CU_ASSERT_EQUAL_FATAL(oc_rp_steady_unfold(&c.s1, &c.tl1, &c.s, &tl, &c.sp, why, sizeof why),
                          0);
    int64_t bad = 0, n = 0;
    for (int64_t r = 0; r < c.s.nranks; r++)
        for (int64_t x = 0; x < c.s.ranks[r].n; x++, n++)
            bad += fabs(tl.start_s[r][x] - c.want.start_s[r][x]) > 1e-9 ||
                   fabs(tl.end_s[r][x] - c.want.end_s[r][x]) > 1e-9;
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(n > 16 * 64); /* every op of 16 ranks' 64 micro-batches */
    oc_timeline_free(&tl);
    case_free(&c);
}

/* The first op of micro-batch `j` on rank 0 of the reduced run. */
static int64_t first_op(const struct oc_schedule *s, int64_t j)
{
    for (int64_t x = 0; x < s->ranks[0].n; x++)
        if (s->ranks[0].ops[x].mb == j)
            return x;
    CU_FAIL_FATAL("no op of that micro-batch");
    return -1;
}

static void expect_broken(struct unfold_case *c, const char *needle)
{
    struct oc_timeline tl;
    char why[256] = "";
    CU_ASSERT_EQUAL(oc_rp_steady_unfold(&c->s1, &c->tl1, &c->s, &tl, &c->sp, why, sizeof why),
                    -1);
    if (!strstr(why, needle))
        fprintf(stderr, "expected \"%s\" in: %s\n", needle, why);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, needle));
}

static void test_unfold_broken(void)
{
    struct unfold_case c;
    /* an op of micro-batch c0 + 2 starts 1 ms late */
    case_init(&c);
    c.tl1.start_s[0][first_op(&c.s1, c.sp.c0 + 2)] += 1e-3;
    expect_broken(&c, "the period");
    case_free(&c);
    /* the first op of every micro-batch lasts ten periods: periodic, but
     * no moment of repeating state (ops of the window in flight together
     * with those before it) */
    case_init(&c);
    for (int64_t j = 0; j < c.sp.m1; j++)
        c.tl1.end_s[0][first_op(&c.s1, j)] += 10 * PER;
    expect_broken(&c, "no moment of repeating state");
    case_free(&c);
    /* an op of no micro-batch between the window's ops (the same op in
     * every micro-batch, so the periods still match) */
    case_init(&c);
    for (int64_t j = 0; j < c.sp.m1; j++)
        c.s1.ranks[0].ops[first_op(&c.s1, j)].mb = -1;
    expect_broken(&c, "lies in the window");
    case_free(&c);
}

/* ---- simulated: folded = full ------------------------------------------- */

static void same(const struct oc_metrics *a, const struct oc_metrics *b)
{
    const double tol = 1e-9 * b->step_time_s;
    CU_ASSERT_DOUBLE_EQUAL(a->step_time_s, b->step_time_s, tol);
    CU_ASSERT_DOUBLE_EQUAL(a->compute_s, b->compute_s, tol);
    CU_ASSERT_DOUBLE_EQUAL(a->bubble_fraction * a->step_time_s,
                           b->bubble_fraction * b->step_time_s, tol);
    CU_ASSERT_DOUBLE_EQUAL(a->tp_comm_s, b->tp_comm_s, tol);
    CU_ASSERT_DOUBLE_EQUAL(a->pp_comm_s, b->pp_comm_s, tol);
    CU_ASSERT_DOUBLE_EQUAL(a->dp_comm_s, b->dp_comm_s, tol);
    CU_ASSERT_DOUBLE_EQUAL(a->cp_comm_s, b->cp_comm_s, tol);
    CU_ASSERT_DOUBLE_EQUAL(a->exposed_comm_s, b->exposed_comm_s, tol);
    CU_ASSERT_EQUAL(a->peak_mem_bytes, b->peak_mem_bytes);
    CU_ASSERT_EQUAL(a->nstages, b->nstages);
    for (int64_t i = 0; i < a->nstages && i < b->nstages; i++) {
        const struct oc_stage_metrics *x = &a->stage[i], *y = &b->stage[i];
        CU_ASSERT_DOUBLE_EQUAL(x->compute_s, y->compute_s, tol);
        CU_ASSERT_DOUBLE_EQUAL(x->bubble_s, y->bubble_s, tol);
        CU_ASSERT_DOUBLE_EQUAL(x->pp_comm_s, y->pp_comm_s, tol);
        CU_ASSERT_DOUBLE_EQUAL(x->dp_comm_s, y->dp_comm_s, tol);
        CU_ASSERT_DOUBLE_EQUAL(x->cp_comm_s, y->cp_comm_s, tol);
        CU_ASSERT_DOUBLE_EQUAL(x->exposed_comm_s, y->exposed_comm_s, tol);
        CU_ASSERT_EQUAL(x->peak_mem_bytes, y->peak_mem_bytes);
    }
}

static void folded_equals_full(const char *label, int64_t cards, int64_t global_batch,
                               enum oc_sim_fidelity fid)
{
    const struct oc_model m = model();
    const struct oc_topology t = topo();
    struct oc_status st = {{0}};
    struct oc_layout l = lay(label, global_batch);
    CU_ASSERT_EQUAL_FATAL(oc_layout_world(&l), cards);
    struct oc_rp_steady sp;
    CU_ASSERT_EQUAL_FATAL(oc_rp_steady_plan(&l, &sp), 1);
    struct oc_replay_opts o = {.fidelity = fid, .steady = 1};
    struct oc_metrics *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    int rc = oc_replay_run_forked(&m, &t, &l, &o, a, 120.0, &st);
    if (rc != 0)
        fprintf(stderr, "%s: %s\n", label, st.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    o.steady = 0;
    CU_ASSERT_EQUAL_FATAL(oc_replay_run_forked(&m, &t, &l, &o, b, 120.0, &st), 0);
    if (a->sim_micro_batches != sp.m1)
        fprintf(stderr, "%s: the fold did not hold (%lld micro-batches simulated)\n", label,
                (long long)a->sim_micro_batches);
    CU_ASSERT_EQUAL(a->sim_micro_batches, sp.m1);
    CU_ASSERT_EQUAL(b->sim_micro_batches, oc_layout_num_micro_batches(&l));
    same(a, b);
    free(a);
    free(b);
}

static void test_sim_1f1b(void)
{
    folded_equals_full("tp2-pp4-dp2-mb1-1f1b", 16, 2 * 40, OC_SIM_SYM);
    folded_equals_full("tp2-pp4-dp2-mb1-1f1b", 16, 2 * 40, OC_SIM_FAST);
    folded_equals_full("tp1-pp4-dp4-mb1-1f1b-noovl", 16, 4 * 40, OC_SIM_SYM);
    folded_equals_full("tp1-pp4-dp4-mb1-1f1b-rfull", 16, 4 * 40, OC_SIM_SYM);
}

static void test_sim_interleaved(void)
{
    folded_equals_full("tp2-pp4-dp1-mb1-v2", 8, 80, OC_SIM_SYM);
    folded_equals_full("tp2-pp4-dp2-mb1-v2", 16, 2 * 80, OC_SIM_FAST);
}

static void test_sim_cp_zero(void)
{
    folded_equals_full("tp1-pp4-dp2-cp2-mb1-1f1b", 16, 2 * 40, OC_SIM_SYM);
    folded_equals_full("tp2-pp4-dp2-mb1-1f1b-zero2", 16, 2 * 40, OC_SIM_SYM);
    folded_equals_full("tp2-pp4-dp2-mb1-1f1b-zero3", 16, 2 * 40, OC_SIM_SYM);
    folded_equals_full("tp2-pp4-dp2-mb1-1f1b-coll=tree", 16, 2 * 40, OC_SIM_SYM);
}

/* The figures without the full schedule (oc_rp_steady_figures, when no
 * schedule or timeline is asked for: what a sweep runs) equal those of the
 * unfolded timeline (what `ocsim simulate` runs) bit for bit: the same op
 * times read in the same order. */
static void rank_by_rank_equals_unfolded(const char *label, int64_t cards, int64_t global_batch,
                                         enum oc_sim_fidelity fid)
{
    const struct oc_model m = model();
    const struct oc_topology t = topo();
    struct oc_status st = {{0}};
    struct oc_layout l = lay(label, global_batch);
    CU_ASSERT_EQUAL_FATAL(oc_layout_world(&l), cards);
    struct oc_replay_opts o = {.fidelity = fid, .steady = 1};
    struct oc_metrics *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    struct oc_schedule s;
    struct oc_timeline tl;
    int rc = oc_replay_run_steady(&m, &t, &l, &o, a, NULL, NULL, &st);
    if (rc != 0)
        fprintf(stderr, "%s: %s\n", label, st.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL_FATAL(oc_replay_run_steady(&m, &t, &l, &o, b, &s, &tl, &st), 0);
    struct oc_rp_steady sp;
    CU_ASSERT_EQUAL_FATAL(oc_rp_steady_plan(&l, &sp), 1);
    CU_ASSERT_EQUAL(a->sim_micro_batches, sp.m1);
    CU_ASSERT_EQUAL(b->sim_micro_batches, sp.m1);
    CU_ASSERT_EQUAL(a->step_time_s, b->step_time_s);
    CU_ASSERT_EQUAL(a->compute_s, b->compute_s);
    CU_ASSERT_EQUAL(a->bubble_fraction, b->bubble_fraction);
    CU_ASSERT_EQUAL(a->pp_comm_s, b->pp_comm_s);
    CU_ASSERT_EQUAL(a->cp_comm_s, b->cp_comm_s);
    CU_ASSERT_EQUAL(a->dp_comm_s, b->dp_comm_s);
    CU_ASSERT_EQUAL(a->tp_comm_s, b->tp_comm_s);
    CU_ASSERT_EQUAL(a->exposed_comm_s, b->exposed_comm_s);
    CU_ASSERT_EQUAL(a->peak_mem_bytes, b->peak_mem_bytes);
    for (int64_t i = 0; i < a->nstages; i++)
        CU_ASSERT_EQUAL(memcmp(&a->stage[i], &b->stage[i], sizeof a->stage[i]), 0);
    oc_timeline_free(&tl);
    oc_schedule_free(&s);
    free(a);
    free(b);
}

static void test_rank_by_rank(void)
{
    rank_by_rank_equals_unfolded("tp2-pp4-dp2-mb1-1f1b", 16, 2 * 40, OC_SIM_SYM);
    rank_by_rank_equals_unfolded("tp2-pp4-dp2-mb1-v2", 16, 2 * 80, OC_SIM_FAST);
    rank_by_rank_equals_unfolded("tp1-pp4-dp2-cp2-mb1-1f1b", 16, 2 * 40, OC_SIM_SYM);
    rank_by_rank_equals_unfolded("tp2-pp4-dp2-mb1-1f1b-zero3", 16, 2 * 40, OC_SIM_SYM);
}

/* A fold that does not hold after its reduced run (the test hook) in a
 * forked replay: the reduced run ran SimGrid in the child, so the full
 * replay runs in a second child (replay.c, oc_replay_run_forked); its
 * figures are the full run's. */
static void test_sim_no_fold_forked(void)
{
    const struct oc_model m = model();
    const struct oc_topology t = topo();
    struct oc_status st = {{0}};
    struct oc_layout l = lay("tp2-pp4-dp2-mb1-1f1b", 2 * 40);
    struct oc_replay_opts o = {.fidelity = OC_SIM_SYM, .steady = 1};
    struct oc_metrics *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    setenv("OCSIM_TEST_STEADY_BREAK", "1", 1);
    const int rc = oc_replay_run_forked(&m, &t, &l, &o, a, 120.0, &st);
    unsetenv("OCSIM_TEST_STEADY_BREAK");
    if (rc != 0)
        fprintf(stderr, "no fold: %s\n", st.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(a->sim_micro_batches, oc_layout_num_micro_batches(&l));
    o.steady = 0;
    CU_ASSERT_EQUAL_FATAL(oc_replay_run_forked(&m, &t, &l, &o, b, 120.0, &st), 0);
    same(a, b);
    CU_ASSERT_EQUAL(a->step_time_s, b->step_time_s);
    free(a);
    free(b);
}

static CU_TestInfo tests[] = {
    {"plan: window and reduced run by hand", test_plan},
    {"a fold that does not hold, forked: the full replay's figures", test_sim_no_fold_forked},
    {"unfold of a linear timeline = the full linear timeline", test_unfold_linear},
    {"off-period op, long op, op of no micro-batch in the window: no fold",
     test_unfold_broken},
    {"folded = full: 1f1b, sym and fast, overlap off, full recompute", test_sim_1f1b},
    {"folded = full: interleaved", test_sim_interleaved},
    {"folded = full: CP, ZeRO-2, ZeRO-3, forced tree", test_sim_cp_zero},
    {"figures rank by rank = the unfolded timeline's, bit for bit", test_rank_by_rank},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sim_steady", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
