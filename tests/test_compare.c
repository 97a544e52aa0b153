/* test_compare.c: `ocsim compare`'s library (reports/compare.h): the error
 * formula, the tolerance verdicts, reading ops.csv, the per-class totals
 * and both ways of pairing ops, the whole comparison of two hand-written
 * result folders, compare.csv and the scatter files. The CSV reader under
 * it is tested in test_csv_read.c.
 *
 * Fixtures: tests/data/compare/pred (a prediction shaped like `ocsim
 * simulate --fidelity fast`: chunk grain, ranks 0 and 2 only) and
 * tests/data/compare/meas (a measurement shaped like ocsim-exec: layer
 * grain, ranks 0-3, a recompute op). Durations in milliseconds, read off
 * the files:
 *
 *   pred rank 0 (stage 0): fwd 10, tp 1, send 1, recv 37, bwd 20, tp 1,
 *                          embed all-reduce 3, wait 0, optimizer 3
 *   pred rank 2 (stage 1): recv 13, fwd 12, tp 1, bwd 22, tp 1, send 1,
 *                          embed 3, wait 0, optimizer 3
 *   meas rank 0 (stage 0): fwd embed 1, attn 4, tp 1, mlp 6, tp 1, send 1,
 *                          recv 40, bwd mlp 12, tp 1, attn 8, tp 1,
 *                          embed 2, embed all-reduce 3, wait 0, optimizer 4
 *   meas rank 1:           as rank 0 but fwd attn 6, bwd attn 10
 *   meas rank 2 (stage 1): recv 14, fwd attn 5, tp 1, mlp 7, tp 1, head 2,
 *                          bwd head 3, mlp 12, tp 1, recompute attn 2,
 *                          bwd attn 9, tp 1, send 1, embed 3, wait 0, opt 4
 *   meas rank 3:           as rank 2
 *
 * Class totals, mean per rank (sum over the ranks present / their count):
 *   pred (2 ranks): fwd (10+12)/2 = 11, bwd (20+22)/2 = 21, opt 3,
 *                   tp (1+1+1+1)/2 = 2, pp (1+37+13+1)/2 = 26, dp 3
 *   meas (4 ranks): fwd (11+13+14+14)/4 = 13, bwd (22+24+26+26)/4 = 24.5
 *                   (recompute counted as bwd), opt 4, tp 4, pp
 *                   (41+41+15+15)/4 = 28, dp 3
 * Metrics files: pred step 0.08 s, bubble_fraction 0.25; meas step 0.1 s,
 * bubble_fraction 0.3 (see the files for the rest).
 */
#define _XOPEN_SOURCE 700
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compare.h"
#include "csv_read.h"
#include "schedule.h"
#include "test_util.h"

#define DATA OC_TEST_DATA "/compare"
#define MS 1e-3

static int suite_init(void) { return oc_test_dir_make("compare"); }

/* oc_test_dir/sub, created. */
static void sub_dir(char *buf, size_t n, const char *sub)
{
    snprintf(buf, n, "%s/%s", oc_test_dir, sub);
    mkdir(buf, 0777);
}

/* ------------------------------------------------------------------ */
/* Error formula and verdicts                                           */

static void test_error_formula(void)
{
    /* (measured - predicted) / measured * 100 */
    OC_ASSERT_REL(oc_cmp_error_pct(80, 100), 20.0, 1e-12);  /* (100-80)/100 */
    OC_ASSERT_REL(oc_cmp_error_pct(100, 80), -25.0, 1e-12); /* (80-100)/80 */
    OC_ASSERT_REL(oc_cmp_error_pct(11, 13), 200.0 / 13, 1e-12);
    CU_ASSERT(isnan(oc_cmp_error_pct(0, 0)));
    CU_ASSERT(isnan(oc_cmp_error_pct(1e-13, -1e-13))); /* both ~0 */
    CU_ASSERT(isnan(oc_cmp_error_pct(NAN, 1)));
    CU_ASSERT(isnan(oc_cmp_error_pct(1, INFINITY)));
    /* Measured ~0, predicted not: (0 - p) / 0 keeps the sign of -p. */
    CU_ASSERT(isinf(oc_cmp_error_pct(1, 0)) && oc_cmp_error_pct(1, 0) < 0);
    CU_ASSERT(isinf(oc_cmp_error_pct(-1, 0)) && oc_cmp_error_pct(-1, 0) > 0);
    /* Predicted 0, measured not: the whole measurement is missed, 100 %. */
    OC_ASSERT_REL(oc_cmp_error_pct(0, 5), 100.0, 1e-12);

    CU_ASSERT_TRUE(oc_cmp_within(14.9, 15));
    CU_ASSERT_TRUE(oc_cmp_within(-15, 15)); /* inclusive */
    CU_ASSERT_FALSE(oc_cmp_within(15.1, 15));
    CU_ASSERT_FALSE(oc_cmp_within(-25, 15));
    CU_ASSERT_FALSE(oc_cmp_within(-INFINITY, 15));
    CU_ASSERT_TRUE(oc_cmp_within(NAN, 15)); /* n/a never fails */
}

/* ------------------------------------------------------------------ */
/* ops.csv, classes, pairing                                            */

static void read_ops(const char *path, struct oc_cmp_ops *ops)
{
    struct oc_status st = {{0}};
    int rc = oc_cmp_ops_read(path, ops, &st);
    if (rc)
        fprintf(stderr, "\n  %s\n", st.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
}

static void test_class_totals(void)
{
    struct oc_cmp_ops p, m;
    read_ops(DATA "/pred/ops.csv", &p);
    read_ops(DATA "/meas/ops.csv", &m);
    CU_ASSERT_EQUAL(p.n, 18);
    CU_ASSERT_EQUAL(m.n, 62); /* 15 + 15 + 16 + 16 */
    /* Sorted by (rank, op): rank 2's first op follows rank 0's last. */
    CU_ASSERT_EQUAL(p.ops[9].rank, 2);
    CU_ASSERT_EQUAL(p.ops[9].op, 0);
    CU_ASSERT_EQUAL(p.ops[9].kind, OC_OP_RECV);
    OC_ASSERT_REL(p.ops[3].dur_s, 37 * MS, 1e-9);

    double s[OC_CMP_NCLASS];
    CU_ASSERT_EQUAL(oc_cmp_class_totals(&p, s), 2);
    OC_ASSERT_REL(s[OC_CMP_FWD], 11 * MS, 1e-9);
    OC_ASSERT_REL(s[OC_CMP_BWD], 21 * MS, 1e-9);
    OC_ASSERT_REL(s[OC_CMP_OPT], 3 * MS, 1e-9);
    OC_ASSERT_REL(s[OC_CMP_TP], 2 * MS, 1e-9);
    OC_ASSERT_REL(s[OC_CMP_PP], 26 * MS, 1e-9);
    OC_ASSERT_REL(s[OC_CMP_DP], 3 * MS, 1e-9);
    CU_ASSERT_EQUAL(oc_cmp_class_totals(&m, s), 4);
    OC_ASSERT_REL(s[OC_CMP_FWD], 13 * MS, 1e-9);
    OC_ASSERT_REL(s[OC_CMP_BWD], 24.5 * MS, 1e-9);
    OC_ASSERT_REL(s[OC_CMP_OPT], 4 * MS, 1e-9);
    OC_ASSERT_REL(s[OC_CMP_TP], 4 * MS, 1e-9);
    OC_ASSERT_REL(s[OC_CMP_PP], 28 * MS, 1e-9);
    OC_ASSERT_REL(s[OC_CMP_DP], 3 * MS, 1e-9);

    /* Classes of single ops: meas rank 2 op 9 is the recompute, op 13 the
     * embedding all-reduce, op 14 the wait. */
    const struct oc_cmp_op *r2 = &m.ops[30]; /* ranks 0 and 1: 15 ops each */
    CU_ASSERT_EQUAL_FATAL(r2->rank, 2);
    CU_ASSERT_EQUAL(r2[9].phase, OC_PHASE_RECOMPUTE);
    CU_ASSERT_EQUAL(oc_cmp_class_of(&r2[9]), OC_CMP_BWD);
    CU_ASSERT_EQUAL(r2[13].group, OC_GROUP_EMBED);
    CU_ASSERT_EQUAL(oc_cmp_class_of(&r2[13]), OC_CMP_DP);
    CU_ASSERT_EQUAL(oc_cmp_class_of(&r2[14]), OC_CMP_OTHER);
    CU_ASSERT_EQUAL(oc_cmp_class_of(&r2[12]), OC_CMP_PP);
    CU_ASSERT_EQUAL(oc_cmp_class_of(&r2[2]), OC_CMP_TP);
    oc_cmp_ops_free(&p);
    oc_cmp_ops_free(&m);
}

static void test_ops_errors(void)
{
    char dir[300], path[400];
    struct oc_cmp_ops o;
    struct oc_status st = {{0}};
    sub_dir(dir, sizeof dir, "badops");
    static const char hdr[] = "rank,op,kind,phase,part,mb,stage,chunk,group,start_s,end_s\n";
    char text[512];

    snprintf(path, sizeof path, "%s/nokind.csv", dir);
    oc_test_write_file(path, "rank,op,phase,part,mb,stage,chunk,group,start_s,end_s\n");
    CU_ASSERT_EQUAL(oc_cmp_ops_read(path, &o, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "no column 'kind'"));

    snprintf(path, sizeof path, "%s/kind.csv", dir);
    snprintf(text, sizeof text, "%s0,0,compute,fwd,attn,0,0,0,,0,1\n0,1,teleport,fwd,attn,0,0,0,,1,2\n", hdr);
    oc_test_write_file(path, text);
    CU_ASSERT_EQUAL(oc_cmp_ops_read(path, &o, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "kind.csv:3: column 'kind': 'teleport' is not one"));

    snprintf(path, sizeof path, "%s/time.csv", dir);
    snprintf(text, sizeof text, "%s0,0,compute,fwd,attn,0,0,0,,2,1\n", hdr);
    oc_test_write_file(path, text);
    CU_ASSERT_EQUAL(oc_cmp_ops_read(path, &o, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "time.csv:2: end_s 1 before start_s 2"));

    snprintf(path, sizeof path, "%s/twice.csv", dir);
    snprintf(text, sizeof text, "%s0,4,compute,fwd,attn,0,0,0,,0,1\n0,4,compute,fwd,mlp,0,0,0,,1,2\n", hdr);
    oc_test_write_file(path, text);
    CU_ASSERT_EQUAL(oc_cmp_ops_read(path, &o, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "rank 0 op 4 appears twice"));

    snprintf(path, sizeof path, "%s/num.csv", dir);
    snprintf(text, sizeof text, "%s0,0,compute,fwd,attn,0,0,0,,0,1e-3x\n", hdr);
    oc_test_write_file(path, text);
    CU_ASSERT_EQUAL(oc_cmp_ops_read(path, &o, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "num.csv:2: column 'end_s': '1e-3x' is not a number"));
}

static struct oc_cmp_ops copy_ops(const struct oc_cmp_ops *a)
{
    struct oc_cmp_ops b = {a->n, malloc((size_t)a->n * sizeof *a->ops)};
    memcpy(b.ops, a->ops, (size_t)a->n * sizeof *a->ops);
    return b;
}

static void test_pair_aggregate(void)
{
    struct oc_cmp_ops p, m;
    read_ops(DATA "/pred/ops.csv", &p);
    read_ops(DATA "/meas/ops.csv", &m);
    struct oc_cmp_pairs pr;
    oc_cmp_pair(&p, &m, &pr);
    CU_ASSERT_EQUAL(pr.mode, OC_CMP_PAIR_AGGREGATE);
    CU_ASSERT_EQUAL_FATAL(pr.n, 6);
    CU_ASSERT_EQUAL(pr.unmatched_pred, 0);
    CU_ASSERT_EQUAL(pr.unmatched_meas, 0);
    /* Keys sorted by (stage, mb, chunk, phase): the optimizer (mb -1)
     * first. Predicted: one rank per stage. Measured, stage 0 over ranks 0
     * and 1: fwd (1+4+6 + 1+6+6)/2 = 12, bwd (12+8+2 + 12+10+2)/2 = 23,
     * opt 4; stage 1 over ranks 2 and 3: fwd 5+7+2 = 14, bwd with the
     * recompute 3+12+2+9 = 26, opt 4. */
    static const double want[6][2] = {{3, 4}, {10, 12}, {20, 23}, {3, 4}, {12, 14}, {22, 26}};
    static const enum oc_cmp_class cls[6] = {OC_CMP_OPT, OC_CMP_FWD, OC_CMP_BWD,
                                             OC_CMP_OPT, OC_CMP_FWD, OC_CMP_BWD};
    for (int i = 0; i < 6; i++) {
        OC_ASSERT_REL(pr.pts[i].pred_s, want[i][0] * MS, 1e-9);
        OC_ASSERT_REL(pr.pts[i].meas_s, want[i][1] * MS, 1e-9);
        CU_ASSERT_EQUAL(pr.pts[i].cls, cls[i]);
    }
    CU_ASSERT_STRING_EQUAL(pr.pts[2].label, "stage 0 mb 0 chunk 0 bwd");
    oc_cmp_pairs_free(&pr);

    /* Ranks present count per stage: without rank 1 (its 15 ops come
     * after rank 0's 15), stage 0 is rank 0 alone: fwd 11, bwd 22. */
    struct oc_cmp_ops m0 = copy_ops(&m);
    memmove(&m0.ops[15], &m0.ops[30], 32 * sizeof *m0.ops);
    m0.n = 47;
    oc_cmp_pair(&m, &m0, &pr);
    CU_ASSERT_EQUAL(pr.mode, OC_CMP_PAIR_AGGREGATE);
    CU_ASSERT_EQUAL_FATAL(pr.n, 6);
    OC_ASSERT_REL(pr.pts[1].pred_s, 12 * MS, 1e-9);
    OC_ASSERT_REL(pr.pts[1].meas_s, 11 * MS, 1e-9);
    OC_ASSERT_REL(pr.pts[2].meas_s, 22 * MS, 1e-9);
    OC_ASSERT_REL(pr.pts[4].meas_s, 14 * MS, 1e-9); /* stage 1 unchanged */
    oc_cmp_pairs_free(&pr);
    free(m0.ops);

    /* A key on one side only: pred rank 2's forward (op 1) moved to
     * micro-batch 1 leaves (1, 1, 0, fwd) predicted only and (1, 0, 0,
     * fwd) measured only; 5 keys pair. */
    struct oc_cmp_ops p1 = copy_ops(&p);
    CU_ASSERT_EQUAL_FATAL(p1.ops[10].kind, OC_OP_COMPUTE);
    p1.ops[10].mb = 1;
    oc_cmp_pair(&p1, &m, &pr);
    CU_ASSERT_EQUAL(pr.n, 5);
    CU_ASSERT_EQUAL(pr.unmatched_pred, 1);
    CU_ASSERT_EQUAL(pr.unmatched_meas, 1);
    oc_cmp_pairs_free(&pr);
    free(p1.ops);
    oc_cmp_ops_free(&p);
    oc_cmp_ops_free(&m);
}

static void test_pair_by_op(void)
{
    struct oc_cmp_ops m;
    read_ops(DATA "/meas/ops.csv", &m);
    /* The same schedule measured twice as slow: one point per op. */
    struct oc_cmp_ops m2 = copy_ops(&m);
    for (int64_t i = 0; i < m2.n; i++)
        m2.ops[i].dur_s *= 2;
    struct oc_cmp_pairs pr;
    oc_cmp_pair(&m, &m2, &pr);
    CU_ASSERT_EQUAL(pr.mode, OC_CMP_PAIR_OP);
    CU_ASSERT_EQUAL_FATAL(pr.n, 62);
    for (int64_t i = 0; i < pr.n; i++)
        CU_ASSERT_DOUBLE_EQUAL(pr.pts[i].meas_s, 2 * pr.pts[i].pred_s, 1e-15);
    /* Point 6 is rank 0 op 6, the 40 ms backward RECV. */
    CU_ASSERT_STRING_EQUAL(pr.pts[6].label, "r0 op6 recv bwd all mb0");
    CU_ASSERT_EQUAL(pr.pts[6].cls, OC_CMP_PP);
    OC_ASSERT_REL(pr.pts[6].pred_s, 40 * MS, 1e-9);
    oc_cmp_pairs_free(&pr);

    /* Same keys but one op of another phase: not the same schedule, so the
     * aggregate pairing, over compute only: rank 0 op 1 (fwd attn, 4 ms)
     * relabelled bwd moves 4 ms from stage 0's fwd mean to its bwd mean:
     * fwd (1+6 + 13)/2 = 10 measured against 12, bwd (22+4 + 24)/2 = 25
     * against 23. */
    m2.ops[1].phase = OC_PHASE_BWD;
    for (int64_t i = 0; i < m2.n; i++)
        m2.ops[i].dur_s /= 2;
    oc_cmp_pair(&m, &m2, &pr);
    CU_ASSERT_EQUAL(pr.mode, OC_CMP_PAIR_AGGREGATE);
    CU_ASSERT_EQUAL_FATAL(pr.n, 6);
    OC_ASSERT_REL(pr.pts[1].meas_s, 10 * MS, 1e-9);
    OC_ASSERT_REL(pr.pts[2].meas_s, 25 * MS, 1e-9);
    oc_cmp_pairs_free(&pr);
    free(m2.ops);
    oc_cmp_ops_free(&m);
}

/* ------------------------------------------------------------------ */
/* The whole comparison                                                 */

static int run_cmp(const char *pred, const char *meas, double tol, int mem,
                   struct oc_compare *c, struct oc_status *st)
{
    struct oc_compare_opts o = OC_COMPARE_OPTS_DEFAULT;
    o.predicted = pred;
    o.measured = meas;
    o.tolerance_pct = tol;
    o.check_memory = mem;
    return oc_compare_run(&o, c, st);
}

static void expect_row(const struct oc_compare *c, const char *name, double pred,
                       double meas, double err, int checked, int within)
{
    const struct oc_cmp_row *r = oc_compare_row(c, name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    OC_ASSERT_REL(r->pred, pred, 1e-9);
    OC_ASSERT_REL(r->meas, meas, 1e-9);
    if (isnan(err)) {
        CU_ASSERT(isnan(r->err_pct));
    } else {
        OC_ASSERT_REL(r->err_pct, err, 1e-6);
    }
    CU_ASSERT_EQUAL(r->checked, checked);
    CU_ASSERT_EQUAL(r->within, within);
    if (r->checked != checked || r->within != within)
        fprintf(stderr, "\n  row %s: checked %d within %d\n", name, r->checked, r->within);
}

static void test_compare_folders(void)
{
    struct oc_compare c;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(run_cmp(DATA "/pred", DATA "/meas", 15, 0, &c, &st), 0);
    CU_ASSERT_STRING_EQUAL(c.pred_metrics, DATA "/pred/simulate.csv");
    CU_ASSERT_STRING_EQUAL(c.meas_metrics, DATA "/meas/measured.csv");
    CU_ASSERT_STRING_EQUAL(c.meas_ops, DATA "/meas/ops.csv");
    CU_ASSERT_EQUAL(c.nrows, OC_CMP_NMETRICS + OC_CMP_NCLASS + 1);
    CU_ASSERT_EQUAL(c.pairs.mode, OC_CMP_PAIR_AGGREGATE);
    CU_ASSERT_EQUAL(c.pred_ranks, 2);
    CU_ASSERT_EQUAL(c.meas_ranks, 4);
    /* Metrics: error = (meas - pred) / meas * 100. Only the step time is
     * checked: 20 % > 15 %. */
    expect_row(&c, "step_time_s", 0.08, 0.1, 20, 1, 0);
    expect_row(&c, "tokens_per_s", 1600, 1280, -25, 0, 1);
    expect_row(&c, "bubble_fraction", 0.25, 0.3, 100.0 * 0.05 / 0.3, 0, 1);
    expect_row(&c, "compute_s", 0.035, 0.0415, 100.0 * 6.5 / 41.5, 0, 1);
    expect_row(&c, "exposed_comm_s", 0, 0, NAN, 0, 1); /* both 0: n/a */
    expect_row(&c, "peak_mem_bytes", 1e6, 1.25e6, 20, 0, 1);
    /* Classes. Checked when >= 5 % of the step on either side (pred step
     * 80 ms, meas 100 ms): forward 11/80 = 13.75 %, error 2/13 = 15.38 %
     * > 15: fails; backward 21/80, 3.5/24.5 = 14.29 %: passes; optimizer
     * 3/80 = 3.75 %, 4/100: reported only though 25 % off; tp 2/80, 4/100:
     * reported only though 50 % off; pp 26/80, 2/28 = 7.14 %: passes;
     * dp 3/80: reported; bubble 0.25*80 = 20 ms vs 0.3*100 = 30 ms,
     * 33.3 %: fails. */
    expect_row(&c, "forward_s", 11 * MS, 13 * MS, 200.0 / 13, 1, 0);
    expect_row(&c, "backward_s", 21 * MS, 24.5 * MS, 350.0 / 24.5, 1, 1);
    expect_row(&c, "optimizer_s", 3 * MS, 4 * MS, 25, 0, 1);
    expect_row(&c, "tp_s", 2 * MS, 4 * MS, 50, 0, 1);
    expect_row(&c, "pp_s", 26 * MS, 28 * MS, 200.0 / 28, 1, 1);
    expect_row(&c, "dp_s", 3 * MS, 3 * MS, 0, 0, 1);
    expect_row(&c, "bubble_s", 20 * MS, 30 * MS, 100.0 / 3, 1, 0);
    CU_ASSERT_EQUAL(c.nfail, 3); /* step, forward, bubble */
    oc_compare_free(&c);

    /* 16 %: forward (15.38 %) passes; step and bubble do not. */
    CU_ASSERT_EQUAL_FATAL(run_cmp(DATA "/pred", DATA "/meas", 16, 0, &c, &st), 0);
    CU_ASSERT_EQUAL(c.nfail, 2);
    oc_compare_free(&c);
    /* The memory, 20 % off, counts with check_memory. */
    CU_ASSERT_EQUAL_FATAL(run_cmp(DATA "/pred", DATA "/meas", 16, 1, &c, &st), 0);
    CU_ASSERT_EQUAL(c.nfail, 3);
    expect_row(&c, "peak_mem_bytes", 1e6, 1.25e6, 20, 1, 0);
    oc_compare_free(&c);
    /* 35 %: everything checked passes; the 50 % tp_s is reported only. */
    CU_ASSERT_EQUAL_FATAL(run_cmp(DATA "/pred", DATA "/meas", 35, 0, &c, &st), 0);
    CU_ASSERT_EQUAL(c.nfail, 0);
    oc_compare_free(&c);

    /* A file instead of a folder: the metrics only, bubble_s still. */
    CU_ASSERT_EQUAL_FATAL(run_cmp(DATA "/pred/simulate.csv", DATA "/meas", 15, 0, &c, &st), 0);
    CU_ASSERT_EQUAL(c.pred_ops[0], '\0');
    CU_ASSERT_EQUAL(c.nrows, OC_CMP_NMETRICS + 1);
    CU_ASSERT_EQUAL(c.pairs.mode, OC_CMP_PAIR_NONE);
    CU_ASSERT_PTR_NULL(oc_compare_row(&c, "forward_s"));
    CU_ASSERT_PTR_NOT_NULL(oc_compare_row(&c, "bubble_s"));
    CU_ASSERT_EQUAL(c.nfail, 2); /* step, bubble */
    CU_ASSERT_EQUAL(c.nnotes, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(c.notes[0], "no per-op comparison"));
    oc_compare_free(&c);
}

static const char metrics_hdr[] =
    "tp,pp,dp,micro_batch,num_micro_batches,schedule,vchunks,recompute,step_time_s,"
    "tokens_per_s,tflops_per_gpu,mfu,bubble_fraction,compute_s,tp_comm_s,pp_comm_s,"
    "dp_comm_s,exposed_comm_s,peak_mem_bytes,device_mem_bytes,fits,reason\n";

static void test_compare_sweep_row(void)
{
    /* A sweep.csv: a rejected layout (no metrics), another layout, the
     * measured one (tp2-pp2-dp1, m = 1, 1f1b) with full recompute, and
     * the same with selective (the measured run's): that row is taken. */
    char dir[300], path[400], text[2048];
    sub_dir(dir, sizeof dir, "sweep");
    snprintf(path, sizeof path, "%s/sweep.csv", dir);
    snprintf(text, sizeof text,
             "# ocsim sweep\n%s"
             "4,1,1,1,1,1f1b,1,selective,,,,,,,,,,,,2e9,0,\"out of memory: 3 GB > 2 GB\"\n"
             "1,2,2,1,1,1f1b,1,selective,0.05,2560,0.2,0.4,0.2,0.03,0,0.02,0.004,0,9e5,2e9,1,\n"
             "2,2,1,1,1,1f1b,1,full,0.07,1828,0.1,0.2,0.25,0.035,0.002,0.026,0.003,0,8e5,2e9,1,\n"
             "2,2,1,1,1,1f1b,1,selective,0.09,1422,0.1,0.2,0.25,0.035,0.002,0.026,0.003,0,1e6,2e9,1,\n",
             metrics_hdr);
    oc_test_write_file(path, text);
    struct oc_compare c;
    struct oc_status st = {{0}};
    int rc = run_cmp(dir, DATA "/meas", 15, 0, &c, &st);
    if (rc)
        fprintf(stderr, "\n  %s\n", st.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_STRING_EQUAL(c.pred.recompute, "selective");
    CU_ASSERT_EQUAL(c.pred.line, 6);
    /* (0.1 - 0.09) / 0.1 = 10 %: within. */
    expect_row(&c, "step_time_s", 0.09, 0.1, 10, 1, 1);
    oc_compare_free(&c);
    /* Either side may be the sweep. */
    CU_ASSERT_EQUAL_FATAL(run_cmp(DATA "/meas", dir, 15, 0, &c, &st), 0);
    CU_ASSERT_EQUAL(c.meas.line, 6);
    oc_compare_free(&c);
}

/* Bad input: -1 and one line naming the problem. */
static void cmp_fails(const char *pred, const char *meas, const char *want)
{
    struct oc_compare c;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(run_cmp(pred, meas, 15, 0, &c, &st), -1);
    oc_test_msg_has(st.msg, want);
    CU_ASSERT(oc_test_msg_is_clean(st.msg));
}

static void test_compare_bad_input(void)
{
    char dir[300], path[400], text[2048];
    cmp_fails("/nonexistent/pred", DATA "/meas", "/nonexistent/pred: No such file");
    sub_dir(dir, sizeof dir, "empty");
    cmp_fails(dir, DATA "/meas", "holds no simulate.csv, measured.csv or sweep.csv");

    /* mfu column missing. */
    sub_dir(dir, sizeof dir, "nomfu");
    snprintf(path, sizeof path, "%s/simulate.csv", dir);
    oc_test_write_file(path, "tp,pp,dp,micro_batch,num_micro_batches,schedule,vchunks,recompute,"
                     "step_time_s\n2,2,1,1,1,1f1b,1,selective,0.08\n");
    cmp_fails(dir, DATA "/meas", "simulate.csv: no column 'tokens_per_s'");

    /* A number that does not parse, with its line. */
    sub_dir(dir, sizeof dir, "badnum");
    snprintf(path, sizeof path, "%s/measured.csv", dir);
    snprintf(text, sizeof text,
             "%s2,2,1,1,1,1f1b,1,selective,0.1,1280,0.08,0.16,0.3,0.0415,0.004,0.028,"
             "0.003,0,12.5MB,2e9,1,\n",
             metrics_hdr);
    oc_test_write_file(path, text);
    cmp_fails(DATA "/pred", dir, "measured.csv:2: column 'peak_mem_bytes': '12.5MB' is not a number");

    /* Another layout. */
    sub_dir(dir, sizeof dir, "other");
    snprintf(path, sizeof path, "%s/measured.csv", dir);
    snprintf(text, sizeof text,
             "%s1,2,2,1,1,1f1b,1,selective,0.1,1280,0.08,0.16,0.3,0.0415,0.004,0.028,"
             "0.003,0,1e6,2e9,1,\n",
             metrics_hdr);
    oc_test_write_file(path, text);
    cmp_fails(DATA "/pred", dir, "are different layouts (tp2-pp2-dp1-mb1");

    /* A sweep without the layout. */
    sub_dir(dir, sizeof dir, "sweep_other");
    snprintf(path, sizeof path, "%s/sweep.csv", dir);
    snprintf(text, sizeof text,
             "%s1,2,2,1,1,1f1b,1,selective,0.05,2560,0.2,0.4,0.2,0.03,0,0.02,0.004,0,9e5,2e9,1,\n"
             "4,1,1,1,1,1f1b,1,selective,0.05,2560,0.2,0.4,0.2,0.03,0,0.02,0.004,0,9e5,2e9,1,\n",
             metrics_hdr);
    oc_test_write_file(path, text);
    cmp_fails(dir, DATA "/meas", "sweep.csv: no row with the layout of");
    cmp_fails(dir, dir, "both hold several layouts");

    /* A broken ops.csv next to good metrics. */
    sub_dir(dir, sizeof dir, "badops2");
    snprintf(path, sizeof path, "%s/simulate.csv", dir);
    snprintf(text, sizeof text,
             "%s2,2,1,1,1,1f1b,1,selective,0.08,1600,0.1,0.2,0.25,0.035,0.002,0.026,"
             "0.003,0,1000000,2e9,1,\n",
             metrics_hdr);
    oc_test_write_file(path, text);
    snprintf(path, sizeof path, "%s/ops.csv", dir);
    oc_test_write_file(path, "rank,op\n0,0\n");
    cmp_fails(dir, DATA "/meas", "ops.csv: no column 'kind'");
}

/* Defect 3 of issue 11: NaN or inf in a measured or predicted quantity
 * passed as "within tolerance" (its error is n/a), a zero step time gave an
 * error of -inf and exit 1; each is now bad input naming the file, the
 * line and the column. */
static void test_compare_not_finite(void)
{
    static const struct {
        const char *step, *mfu, *bubble, *want;
    } cases[] = {
        {"nan", "0.16", "0.3", "measured.csv:2: column 'step_time_s': 'nan' is not a finite number"},
        {"inf", "0.16", "0.3", "measured.csv:2: column 'step_time_s': 'inf' is not a finite number"},
        {"-inf", "0.16", "0.3", "column 'step_time_s': '-inf' is not a finite number"},
        {"0", "0.16", "0.3", "measured.csv:2: column 'step_time_s': '0' is not positive"},
        {"-0.1", "0.16", "0.3", "column 'step_time_s': '-0.1' is not positive"},
        {"0.1", "NaN", "0.3", "measured.csv:2: column 'mfu': 'NaN' is not a finite number"},
        {"0.1", "-0.5", "0.3", "measured.csv:2: column 'mfu': '-0.5' is negative"},
        {"0.1", "0.16", "1.5", "column 'bubble_fraction': '1.5' is above 1"},
    };
    char dir[300], path[400], text[2048];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "notfinite%zu", i);
        sub_dir(dir, sizeof dir, name);
        snprintf(path, sizeof path, "%s/measured.csv", dir);
        snprintf(text, sizeof text,
                 "%s2,2,1,1,1,1f1b,1,selective,%s,1280,0.08,%s,%s,0.0415,0.004,0.028,"
                 "0.003,0,1250000,2e9,1,\n",
                 metrics_hdr, cases[i].step, cases[i].mfu, cases[i].bubble);
        oc_test_write_file(path, text);
        cmp_fails(DATA "/pred", dir, cases[i].want);
        /* the prediction's side is read by the same code */
        cmp_fails(dir, DATA "/meas", cases[i].want);
    }
    /* an ops.csv with a time that is not finite names the column */
    sub_dir(dir, sizeof dir, "notfinite_ops");
    snprintf(path, sizeof path, "%s/ops.csv", dir);
    oc_test_write_file(path, "rank,op,kind,phase,part,mb,stage,chunk,group,start_s,end_s\n"
                             "0,0,compute,fwd,attn,0,0,0,,0,nan\n");
    struct oc_cmp_ops ops;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_cmp_ops_read(path, &ops, &st), -1);
    oc_test_msg_has(st.msg, "ops.csv:2: column 'end_s': nan is not a finite number");
}

/* Defect 7: cells, headers and the schedule names are shown escaped; a
 * schedule or recompute cell must be a name ocsim writes. */
static void test_compare_cells_escaped(void)
{
    char dir[300], path[400], text[2048];
    sub_dir(dir, sizeof dir, "esc");
    snprintf(path, sizeof path, "%s/measured.csv", dir);
    snprintf(text, sizeof text,
             "%s2,2,1,1,1,\"1f1b\n\x1b[2J\",1,selective,0.1,1280,0.08,0.16,0.3,0.0415,0.004,"
             "0.028,0.003,0,1250000,2e9,1,\n",
             metrics_hdr);
    oc_test_write_file(path, text);
    cmp_fails(DATA "/pred", dir, "measured.csv:2: column 'schedule': '1f1b\\n\\x1b[2J' is not "
                                 "one of the names ocsim writes (gpipe, 1f1b, interleaved)");
    snprintf(text, sizeof text,
             "%s2,2,1,1,1,1f1b,1,selective,\"0.1\xff\",1280,0.08,0.16,0.3,0.0415,0.004,0.028,"
             "0.003,0,1250000,2e9,1,\n",
             metrics_hdr);
    oc_test_write_file(path, text);
    cmp_fails(DATA "/pred", dir, "column 'step_time_s': '0.1\\xff' is not a number");
}

static int count_data_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += line[0] != '#' && line[0] != '\n';
    fclose(f);
    return n;
}

static void test_compare_outputs(void)
{
    struct oc_compare c;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(run_cmp(DATA "/pred", DATA "/meas", 15, 0, &c, &st), 0);
    char dir[300], path[400];
    sub_dir(dir, sizeof dir, "out");

    /* compare.csv reads back with its own reader: 17 rows, '#' lines
     * first. */
    snprintf(path, sizeof path, "%s/compare.csv", dir);
    CU_ASSERT_EQUAL_FATAL(oc_compare_write_csv(path, &c, &st), 0);
    struct oc_csv_table t;
    CU_ASSERT_EQUAL_FATAL(oc_csv_read(path, &t, &st), 0);
    CU_ASSERT_EQUAL(t.ncols, 5);
    CU_ASSERT_EQUAL(t.nrows, 17);
    CU_ASSERT_STRING_EQUAL(oc_csv_table_header(&t, 4), "within");
    CU_ASSERT_STRING_EQUAL(oc_csv_table_cell(&t, 0, 0), "step_time_s");
    double e = 0;
    CU_ASSERT_EQUAL(oc_csv_table_f64(&t, 0, 3, &e, &st), 0);
    OC_ASSERT_REL(e, 20, 1e-6);
    CU_ASSERT_STRING_EQUAL(oc_csv_table_cell(&t, 0, 4), "no");
    CU_ASSERT_STRING_EQUAL(oc_csv_table_cell(&t, 1, 4), "-");         /* tokens/s */
    CU_ASSERT_STRING_EQUAL(oc_csv_table_cell(&t, 8, 0), "exposed_comm_s");
    CU_ASSERT_STRING_EQUAL(oc_csv_table_cell(&t, 8, 3), "");          /* n/a */
    CU_ASSERT_STRING_EQUAL(oc_csv_table_cell(&t, 8, 4), "n/a");
    CU_ASSERT_STRING_EQUAL(oc_csv_table_cell(&t, 11, 0), "backward_s");
    CU_ASSERT_STRING_EQUAL(oc_csv_table_cell(&t, 11, 4), "yes");
    CU_ASSERT_EQUAL(t.line[0], 5); /* after four '#' lines */
    oc_csv_table_free(&t);

    /* The scatter script and data, not rendered: the 6 aggregate pairs in
     * three class blocks (optimizer, forward, backward), the y = x line. */
    struct oc_plot_opts po = OC_PLOT_OPTS_DEFAULT;
    po.no_render = 1;
    CU_ASSERT_EQUAL(oc_compare_plot(dir, &c, &po, &st), 0);
    snprintf(path, sizeof path, "%s/scatter.dat", dir);
    CU_ASSERT_EQUAL(count_data_lines(path), 6);
    snprintf(path, sizeof path, "%s/scatter.gp", dir);
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char gp[8192];
    size_t n = fread(gp, 1, sizeof gp - 1, f);
    gp[n] = '\0';
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL(strstr(gp, "plot x with lines"));
    CU_ASSERT_PTR_NOT_NULL(strstr(gp, "index 2 using 1:2"));
    CU_ASSERT_PTR_NULL(strstr(gp, "index 3"));
    CU_ASSERT_PTR_NOT_NULL(strstr(gp, "set logscale xy"));
    /* The band of 15 %: y = x/1.15 and y = x/0.85. */
    CU_ASSERT_PTR_NOT_NULL(strstr(gp, "x/(1+0.15)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(gp, "x/(1-0.15)"));
    snprintf(path, sizeof path, "%s/scatter.png", dir);
    CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0);

    /* gnuplot missing: scripts kept, a warning (1). */
    po.no_render = 0;
    po.gnuplot = "/nonexistent/gnuplot";
    CU_ASSERT_EQUAL(oc_compare_plot(dir, &c, &po, &st), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "was not found"));
    snprintf(path, sizeof path, "%s/scatter.dat", dir);
    CU_ASSERT_EQUAL(access(path, F_OK), 0);

    /* The printed table names the pairing and the verdict. */
    snprintf(path, sizeof path, "%s/table.txt", dir);
    f = fopen(path, "w+");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    oc_compare_print(f, &c);
    rewind(f);
    char out[8192];
    n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "pairing: by aggregate"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "BEYOND TOLERANCE: 3 of 5 checked rows"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "(measured - predicted) / measured"));
    oc_compare_free(&c);
}

static CU_TestInfo cmp_tests[] = {
    {"error formula and verdicts", test_error_formula},
    {"class totals", test_class_totals},
    {"ops.csv errors", test_ops_errors},
    {"pairing by aggregate", test_pair_aggregate},
    {"pairing by op", test_pair_by_op},
    {"two folders", test_compare_folders},
    {"a row of a sweep", test_compare_sweep_row},
    {"bad input", test_compare_bad_input},
    {"not finite, zero, negative (defect 3)", test_compare_not_finite},
    {"cells escaped (defect 7)", test_compare_cells_escaped},
    {"compare.csv, scatter, table", test_compare_outputs},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"compare", suite_init, oc_test_dir_remove, NULL, NULL, cmp_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
