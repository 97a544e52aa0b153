/* test_report_md.c: the sweep report in reports/ (report_md.h): the
 * explanation of why the best layout beats the runner-up, the ranked table
 * and report.md, with and without gnuplot.
 *
 * Fixtures (tests/report_fixtures.h): the hand-made sweep of five
 * simulated and three rejected layouts, whose figures are chosen so that
 * every sentence of the explanation is known by hand, the tiny model and
 * a 16-GPU topology. Files go to the scratch folder.
 */
#define _XOPEN_SOURCE 700 /* open_memstream */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_fixtures.h"
#include "report_md.h"
#include "test_util.h"

static void test_explain(void)
{
    build_sweep();
    struct oc_topology t = topo16();
    char text[4096];
    /* A vs B: step 2.0 vs 2.4 s, 1.2 vs 1.0 M tok/s = 20.0% more. The
     * differences: exposed comm 0.9 - 0.3 = 0.6 s, bubble 0 - 0.2 = -0.2 s,
     * compute and other 0: exposed comm saves 0.6 s, more than the 0.4 s
     * gap, and A gives back 200 ms of bubble. DP comm differs most (0.2 vs 0.8 s).
     * Placement (TP fastest, then DP): A's DP group of rank 0 is {0, 2},
     * one node; B's is {0, 8}, two nodes of 8 GPUs. */
    oc_report_explain(text, sizeof text, &sweep[IA], &sweep[IB], &t);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "**tp2-pp4-dp2-mb1-1f1b**"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "20.0% more than the runner-up **tp8-pp1-dp2-mb1-1f1b**"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "Most of the difference is exposed communication"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "(it saves 600 ms, more than the whole gap)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "DP gradient reduction: 200 ms vs 800 ms"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "Its DP groups (dp2) stay inside one node on NVLink"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(text, "the runner-up's DP groups (dp2) span 2 nodes and cross the 100 Gb/s network"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "It gives back 200 ms in pipeline bubble"));
    CU_ASSERT_PTR_NULL(strstr(text, "within 1%"));

    /* D vs C: D 2.667 s with bubble 0.11 (0.293 s), C 3.0 s with bubble
     * 0.30 (0.9 s): bubble differs most (0.607 of 0.333 s). Closed form:
     * D pp2, m 8: 1/9 = 11.1%; C pp16, m 32: 15/47 = 31.9%. */
    oc_report_explain(text, sizeof text, &sweep[ID], &sweep[IC], &t);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "Most of the difference is pipeline bubble"));
    /* bubble saves 0.9 - 0.29337 = 0.60663 s of the 0.333 s gap as well. */
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "(it saves 607 ms, more than the whole gap)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "gives 11.1% and 31.9%"));

    /* Within 1%: the caution. */
    struct oc_metrics *near = malloc(sizeof *near);
    *near = sweep[IB];
    near->tokens_per_s = 1.195e6;
    near->step_time_s = 2.0084;
    oc_report_explain(text, sizeof text, &sweep[IA], near, &t);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "within 1%"));
    free(near);
    /* Alone. */
    oc_report_explain(text, sizeof text, &sweep[IA], NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "only simulated layout that fits"));
}

static void test_print_table(void)
{
    build_sweep();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    oc_report_print_table(f, sweep, 5, 2);
    fclose(f);
    /* Header, A, B, then "... 3 more layouts (4 of 5 fit in memory)". */
    char *l1 = strchr(buf, '\n') + 1, *l2 = strchr(l1, '\n') + 1, *l3 = strchr(l2, '\n') + 1;
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "tokens/s"));
    CU_ASSERT_EQUAL(strncmp(l1, "   1  tp2-pp4-dp2-mb1-1f1b", 26), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(l1, "1.20 Mtok/s"));
    CU_ASSERT_PTR_NOT_NULL(strstr(l1, "45.0%"));
    CU_ASSERT_PTR_NOT_NULL(strstr(l1, "60.0 GB"));
    CU_ASSERT_EQUAL(strncmp(l2, "   2  tp8-pp1-dp2-mb1-1f1b", 26), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(l3, "3 more layouts (4 of 5 fit in memory)"));
    /* Columns line up: every row as long as the header. */
    CU_ASSERT_EQUAL(strchr(buf, '\n') - buf, strchr(l1, '\n') - l1);
    CU_ASSERT_EQUAL(strchr(l1, '\n') - l1, strchr(l2, '\n') - l2);
    free(buf);
}

static void test_report_md(void)
{
    build_sweep();
    struct oc_model m;
    oc_test_tiny_model(&m);
    struct oc_topology t = topo16();
    struct oc_report_ctx ctx = {
        .command_line = "ocsim sweep --cards 16 --model tiny",
        .model = &m,
        .topo = &t,
        .cards = 16,
        .global_batch = 64,
        .seq_length = 32,
        .method = "test fixture",
        .csv_name = "sweep.csv",
    };
    char dir[512], p[600];
    snprintf(dir, sizeof dir, "%s/report", oc_test_dir);
    struct oc_status st = {{0}};
    int rc = oc_report_sweep(dir, sweep, 5, rejected, 3, &ctx, &st);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "report: %s\n", st.msg);
    path_in(p, sizeof p, "report", "report.md");
    char *md = oc_test_read_file(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(md);
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "ocsim sweep --cards 16 --model tiny"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "## Chosen layout\n\n`tp2-pp4-dp2-mb1-1f1b`"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "| 1 | tp2-pp4-dp2-mb1-1f1b | 1.20 Mtok/s | 2.00 s |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "| 2 | tp8-pp1-dp2-mb1-1f1b |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "| 5 | tp1-pp1-dp16-mb1-1f1b |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "| 120 GB | no |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "the runner-up **tp8-pp1-dp2-mb1-1f1b**"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "exceeds the device | 2 |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "invalid layout: breaks a layout rule"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "- `tp16-pp1-dp1-mb1-1f1b`: TP 16 spans nodes of 8 GPUs"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "8 candidates: 5 simulated (4 fit in memory), 3 rejected"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "(throughput.png)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "(bubble.png)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "Not modelled"));
    /* Ranking order in the file: A's row before B's before E's. */
    char *ra = strstr(md, "| 1 | tp2-pp4"), *rb = strstr(md, "| 2 | tp8-pp1"),
         *re = strstr(md, "| 5 | tp1-pp1-dp16");
    CU_ASSERT(ra && rb && re && ra < rb && rb < re);
    free(md);
    path_in(p, sizeof p, "report", "throughput.png");
    CU_ASSERT(is_png(p));

    /* Without gnuplot: report.md is still written, the result is a warning
     * and the report says the plots were not rendered. */
    struct oc_plot_opts po = OC_PLOT_OPTS_DEFAULT;
    po.gnuplot = "/nonexistent/ocsim-no-gnuplot";
    ctx.plot = &po;
    snprintf(dir, sizeof dir, "%s/report-nognuplot", oc_test_dir);
    CU_ASSERT_EQUAL(oc_report_sweep(dir, sweep, 5, rejected, 3, &ctx, &st), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "not found"));
    path_in(p, sizeof p, "report-nognuplot", "report.md");
    md = oc_test_read_file(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(md);
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "Not rendered"));
    CU_ASSERT_PTR_NULL(strstr(md, "(throughput.png)"));
    free(md);

    /* A sweep's report: the rejected are counted (rejected_counted), rej
     * holds examples only; the counts come from ctx, the examples from
     * rej, and the report names rejected.csv when it was written, else
     * --rejected-csv. */
    snprintf(dir, sizeof dir, "%s/report-counted", oc_test_dir);
    ctx.no_plots = 1;
    ctx.rejected_counted = 1;
    ctx.rejected_rule = 1000;
    ctx.rejected_memory = 2000;
    CU_ASSERT_EQUAL(oc_report_sweep(dir, sweep, 5, rejected, 3, &ctx, &st), 0);
    path_in(p, sizeof p, "report-counted", "report.md");
    md = oc_test_read_file(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(md);
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "exceeds the device | 2000 |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "(divisibility, TP inside a node, ...) | 1000 |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "3005 candidates: 5 simulated (4 fit in memory), 3000 rejected"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "- `tp16-pp1-dp1-mb1-1f1b`: TP 16 spans nodes of 8 GPUs"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "`--rejected-csv` writes every one"));
    free(md);
    ctx.rejected_csv = "rejected.csv";
    CU_ASSERT_EQUAL(oc_report_sweep(dir, sweep, 5, rejected, 3, &ctx, &st), 0);
    md = oc_test_read_file(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(md);
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "[rejected.csv](rejected.csv)"));
    free(md);
    ctx.rejected_counted = 0;
    ctx.rejected_csv = NULL;

    /* Nothing fits: no chosen layout, no crash. */
    snprintf(dir, sizeof dir, "%s/report-none", oc_test_dir);
    ctx.no_plots = 1;
    CU_ASSERT_EQUAL(oc_report_sweep(dir, sweep + IE, 1, NULL, 0, &ctx, &st), 0);
    path_in(p, sizeof p, "report-none", "report.md");
    md = oc_test_read_file(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(md);
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "None: no simulated layout fits"));
    free(md);
}

/* Failed simulations counted by reason (the message up to its first ": ",
 * a deadlock without its time), the first in rej's order quoted whole; and
 * report.md of an interrupted sweep with failures. */
static void test_failures_interrupted(void)
{
    build_sweep();
    struct oc_rejected_layout rej[5];
    memset(rej, 0, sizeof rej);
    const char *reasons[5] = {
        "TP 16 spans nodes of 8 GPUs",
        "simulation failed: simulation crashed (signal 9, Killed): quoted line one",
        "simulation failed: simulation deadlocked at t=1.5 s: 2 of 8 actors never finished (rank0, rank1)",
        "simulation failed: simulation crashed (signal 9, Killed): another quoted line",
        "simulation failed: simulation deadlocked at t=2.25 s: 1 of 8 actors never finished (rank3)",
    };
    for (int i = 0; i < 5; i++) {
        rej[i].layout = layout_of(16 >> i, 1, 1 << i, 1);
        rej[i].kind = i == 0 ? OC_REJECT_RULE : OC_REJECT_FAILED;
        rej[i].peak_mem_bytes = -1;
        snprintf(rej[i].reason, sizeof rej[i].reason, "%s", reasons[i]);
    }
    char text[1024];
    /* 4 failed of 9 attempted: 2 crashed, 2 deadlocked; the first failed is
     * rej[1], tp8-pp1-dp2. */
    CU_ASSERT_EQUAL(oc_report_failures(text, sizeof text, rej, 5, 9, 0), 4);
    oc_test_msg_has(text, "4 of 9 simulations failed (2 x simulation crashed (signal 9, Killed); "
                          "2 x simulation deadlocked); the first, tp8-pp1-dp2-mb1-1f1b: "
                          "simulation crashed (signal 9, Killed): quoted line one");
    CU_ASSERT_EQUAL(oc_report_failures(text, sizeof text, rej, 1, 5, 1), 0);
    CU_ASSERT_STRING_EQUAL(text, "");
    CU_ASSERT_EQUAL(oc_report_failures(text, sizeof text, rej, 2, 1, 1), 1);
    oc_test_msg_has(text, "1 of 1 simulation failed (1 x simulation crashed (signal 9, Killed)); "
                          "the first, `tp8-pp1-dp2-mb1-1f1b`: ");

    /* Interrupted with 3 left: 5 simulated + 4 failed = 9 of 12 attempted;
     * 1 rejected before simulation. */
    struct oc_topology t = topo16();
    struct oc_report_ctx ctx = {
        .topo = &t, .cards = 16, .global_batch = 64, .seq_length = 32,
        .no_plots = 1, .interrupted_by = "SIGINT", .pending = 3,
    };
    char dir[512], p[600];
    snprintf(dir, sizeof dir, "%s/report-interrupted", oc_test_dir);
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_report_sweep(dir, sweep, 5, rej, 5, &ctx, &st), 0);
    path_in(p, sizeof p, "report-interrupted", "report.md");
    char *md = oc_test_read_file(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(md);
    oc_test_msg_has(md, "**Interrupted by SIGINT: 9 of 12 layouts simulated.** The tables and "
                        "plots below hold those (the 1 rejected before simulation are "
                        "counted); the other 3 were not simulated.");
    oc_test_msg_has(md, "**Simulations failed:** 4 of 9 simulations failed (2 x simulation "
                        "crashed (signal 9, Killed); 2 x simulation deadlocked); the first, "
                        "`tp8-pp1-dp2-mb1-1f1b`:");
    oc_test_msg_has(md, "| Layouts | 13 candidates: 5 simulated (4 fit in memory), 4 failed in "
                        "simulation, 1 rejected before simulation, 3 not simulated "
                        "(interrupted) |");
    free(md);
}

static CU_TestInfo report_tests[] = {
    {"explanation", test_explain},
    {"ranked table", test_print_table},
    {"report.md", test_report_md},
    {"failures and interruption", test_failures_interrupted},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"report_md", suite_init, oc_test_dir_remove, NULL, NULL, report_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
