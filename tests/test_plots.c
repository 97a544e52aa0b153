/* test_plots.c: the plots in reports/ (plots.h): the ranking every report
 * uses, the gnuplot scripts, data and images of a sweep and of one
 * pipeline, what happens without gnuplot, and the helpers every plot
 * writer shares (plot_write.h).
 *
 * Fixtures (tests/report_fixtures.h): the hand-made sweep of five
 * simulated and three rejected layouts, ranked by hand, and the hand-made
 * two-stage timeline. Files go to the scratch folder.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "paths.h" /* oc_mkdir_p */
#include "plot_write.h"
#include "plots.h"
#include "report_fixtures.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Ranking                                                              */

static void test_rank(void)
{
    build_sweep();
    int64_t order[5];
    CU_ASSERT_EQUAL(oc_report_rank(sweep, 5, order), 4);
    CU_ASSERT_EQUAL(order[0], IA);
    CU_ASSERT_EQUAL(order[1], IB);
    CU_ASSERT_EQUAL(order[2], ID);
    CU_ASSERT_EQUAL(order[3], IC);
    CU_ASSERT_EQUAL(order[4], IE);
    CU_ASSERT_EQUAL(oc_reject_kind_of("out of memory: x"), OC_REJECT_MEMORY);
    CU_ASSERT_EQUAL(oc_reject_kind_of("TP*PP*DP = 32 does not match 64 cards"), OC_REJECT_RULE);
}

/* ------------------------------------------------------------------ */
/* Plots                                                                */

static void test_plot_sweep(void)
{
    build_sweep();
    char dir[512], p[600], row[1024];
    snprintf(dir, sizeof dir, "%s/sweep", oc_test_dir);
    struct oc_status st = {{0}};
    struct oc_plot_opts po = OC_PLOT_OPTS_DEFAULT;
    int rc = oc_plot_sweep(dir, sweep, 5, rejected, 3, &po, &st);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "plot_sweep: %s\n", st.msg);

    /* throughput: the 4 that fit, best first. */
    path_in(p, sizeof p, "sweep", "throughput.dat");
    CU_ASSERT_EQUAL(count_rows(p, -1), 4);
    CU_ASSERT_EQUAL(data_row(p, 0, row, sizeof row), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(row, "1 \"tp2-pp4-dp2-mb1-1f1b\" 1200000 "));
    CU_ASSERT_EQUAL(data_row(p, 3, row, sizeof row), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(row, "4 \"tp1-pp16-dp1-mb1-1f1b\" 800000 "));
    /* memory: 5 simulated + 2 rejected for memory (the rule-breaker has no
     * peak), the rejected ones smallest first: 85 GB then 90 GB. */
    path_in(p, sizeof p, "sweep", "memory.dat");
    CU_ASSERT_EQUAL(count_rows(p, -1), 7);
    CU_ASSERT_EQUAL(data_row(p, 4, row, sizeof row), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(row, "\"tp1-pp1-dp16-mb1-1f1b\" 1.2e+11 0 sim"));
    CU_ASSERT_EQUAL(data_row(p, 5, row, sizeof row), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(row, "\"tp1-pp4-dp4-mb1-1f1b\" 8.5e+10 0 closed-form"));
    /* breakdown of A: compute 1.2, bubble 0.1 x 2.0 = 0.2, exposed 0.3,
     * other 2.0 - 1.2 - 0.2 - 0.3 = 0.3. */
    path_in(p, sizeof p, "sweep", "breakdown.dat");
    CU_ASSERT_EQUAL(count_rows(p, -1), 4);
    CU_ASSERT_EQUAL(data_row(p, 0, row, sizeof row), 0);
    double c, b, e, o, s;
    CU_ASSERT_EQUAL(sscanf(strchr(row + 3, '"') + 1, "%lf %lf %lf %lf %lf", &c, &b, &e, &o, &s), 5);
    OC_ASSERT_REL(c, 1.2, 1e-9);
    OC_ASSERT_REL(b, 0.2, 1e-9);
    OC_ASSERT_REL(e, 0.3, 1e-9);
    OC_ASSERT_REL(o, 0.3, 1e-9);
    /* bubble: 5 points in 4 blocks, (pp, v) sorted: pp1 (B, E), pp2 (D),
     * pp4 (A), pp16 (C). */
    path_in(p, sizeof p, "sweep", "bubble.dat");
    CU_ASSERT_EQUAL(count_rows(p, -1), 5);
    CU_ASSERT_EQUAL(count_rows(p, 0), 2);
    CU_ASSERT_EQUAL(count_rows(p, 1), 1);
    CU_ASSERT_EQUAL(count_rows(p, 3), 1);
    path_in(p, sizeof p, "sweep", "bubble.gp");
    char *gp = oc_test_read_file(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gp);
    CU_ASSERT_PTR_NOT_NULL(strstr(gp, "(16-1.0)/(1*x+16-1.0)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(gp, "index 3 using 1:2"));
    free(gp);

    static const char *const names[] = {"throughput", "memory", "breakdown", "bubble"};
    for (int i = 0; i < 4; i++) {
        char f[64];
        snprintf(f, sizeof f, "%s.gp", names[i]);
        path_in(p, sizeof p, "sweep", f);
        CU_ASSERT(file_exists(p));
        snprintf(f, sizeof f, "%s.png", names[i]);
        path_in(p, sizeof p, "sweep", f);
        CU_ASSERT(is_png(p));
        snprintf(f, sizeof f, "%s.svg", names[i]);
        path_in(p, sizeof p, "sweep", f);
        CU_ASSERT(file_exists(p));
    }
}

static void test_plot_no_gnuplot(void)
{
    build_sweep();
    char dir[512], p[600];
    snprintf(dir, sizeof dir, "%s/nognuplot", oc_test_dir);
    struct oc_status st = {{0}};
    struct oc_plot_opts po = OC_PLOT_OPTS_DEFAULT;
    po.gnuplot = "/nonexistent/ocsim-no-gnuplot";
    CU_ASSERT_EQUAL(oc_plot_sweep(dir, sweep, 5, rejected, 3, &po, &st), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "not found"));
    path_in(p, sizeof p, "nognuplot", "throughput.gp");
    CU_ASSERT(file_exists(p));
    path_in(p, sizeof p, "nognuplot", "throughput.dat");
    CU_ASSERT_EQUAL(count_rows(p, -1), 4);
    path_in(p, sizeof p, "nognuplot", "throughput.png");
    CU_ASSERT(!file_exists(p));
    /* The output folder cannot be made: a failure, not a warning. */
    CU_ASSERT_EQUAL(oc_plot_sweep("/proc/ocsim-cannot", sweep, 5, NULL, 0, &po, &st), -1);
}

static void test_plot_pipeline(void)
{
    struct hand h;
    build_hand(&h, NULL);
    char dir[512], p[600], row[1024];
    snprintf(dir, sizeof dir, "%s/pipe", oc_test_dir);
    struct oc_status st = {{0}};
    int rc = oc_plot_pipeline(dir, &h.tl, NULL, NULL, &st);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "plot_pipeline: %s\n", st.msg);
    path_in(p, sizeof p, "pipe", "pipeline.dat");
    /* Boxes: the 10 + 9 timed ops of the two ranks (stage 0 is rank 0,
     * stage 1 rank 1). Labels: F0 F1 B0 B1 on each stage, all wider than
     * 1.2% of the 9.5 ms step. */
    CU_ASSERT_EQUAL(count_rows(p, 0), 19);
    CU_ASSERT_EQUAL(count_rows(p, 1), 8);
    /* Rank 0 waits for mb0's gradient from 2 ms; rank 1 sent it at 3.5 ms,
     * so the drawn transfer is 3.5 to 4 ms and 2 to 3.5 ms stays empty. */
    int found = 0, found1 = 0;
    for (int k = 0; data_row(p, k, row, sizeof row) == 0; k++) {
        long long stage, op;
        double ylo, yhi, a, b;
        long rgb;
        char kind[16];
        if (sscanf(row, "%lld %lf %lf %lf %lf %ld %15s %lld", &stage, &ylo, &yhi, &a, &b, &rgb,
                   kind, &op) != 8)
            continue;
        if (stage == 0 && op == 7) {
            found = 1;
            OC_ASSERT_REL(a, 3.5e-3, 1e-9);
            OC_ASSERT_REL(b, 4e-3, 1e-9);
            CU_ASSERT_STRING_EQUAL(kind, "pp");
        }
        if (stage == 1 && op == 1) { /* rank 0 sent act mb0 at 1 ms */
            found1 = 1;
            OC_ASSERT_REL(a, 1e-3, 1e-9);
            OC_ASSERT_REL(b, 2.2e-3, 1e-9);
        }
    }
    CU_ASSERT(found && found1);
    path_in(p, sizeof p, "pipe", "pipeline.png");
    CU_ASSERT(is_png(p));
    path_in(p, sizeof p, "pipe", "pipeline.svg");
    CU_ASSERT(file_exists(p));
    free_hand(&h);
}

/* A gnuplot that exits 0 but leaves its images cut short, as the real one
 * does on a full disk (a PNG stopped at a page, an empty SVG): an error
 * naming the image, and no image under its name, not even an empty one.
 * One that fails (exit 1) after a partial image: a warning, no image. */
static void test_plot_cut_image(void)
{
    build_sweep();
    char fake[600], dir[512], p[600];
    snprintf(fake, sizeof fake, "%s/fake-gnuplot.sh", oc_test_dir);
    oc_test_write_file(fake, "#!/bin/sh\n"
                             "n=$(basename \"$1\" .gp)\n"
                             "printf '\\211PNG\\r\\n\\032\\n\\0\\0\\0\\rIHDR' >\"$n.png\"\n"
                             ": >\"$n.svg\"\n"
                             "exit ${FAKE_GNUPLOT_EXIT:-0}\n");
    CU_ASSERT_EQUAL_FATAL(chmod(fake, 0755), 0);
    struct oc_plot_opts po = OC_PLOT_OPTS_DEFAULT;
    po.gnuplot = fake;
    struct oc_status st = {{0}};
    snprintf(dir, sizeof dir, "%s/cut", oc_test_dir);
    CU_ASSERT_EQUAL(oc_plot_sweep(dir, sweep, 5, rejected, 3, &po, &st), -1);
    snprintf(p, sizeof p, "%s/throughput.png: cannot write", dir);
    oc_test_msg_has(st.msg, p);
    static const char *const gone[] = {"throughput.png", "throughput.svg", "memory.png",
                                       "memory.svg"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
        path_in(p, sizeof p, "cut", gone[i]);
        CU_ASSERT(!file_exists(p));
    }
    char cmd[700]; /* no temporary or render folder left */
    snprintf(cmd, sizeof cmd, "test -z \"$(find '%s' -name '*.tmp')\"", dir);
    CU_ASSERT_EQUAL(system(cmd), 0);
    path_in(p, sizeof p, "cut", "throughput.gp"); /* the script and data stay */
    CU_ASSERT(file_exists(p));

    setenv("FAKE_GNUPLOT_EXIT", "1", 1);
    snprintf(dir, sizeof dir, "%s/cut1", oc_test_dir);
    CU_ASSERT_EQUAL(oc_plot_sweep(dir, sweep, 5, rejected, 3, &po, &st), 1);
    oc_test_msg_has(st.msg, "plots not rendered");
    path_in(p, sizeof p, "cut1", "throughput.png");
    CU_ASSERT(!file_exists(p));
    path_in(p, sizeof p, "cut1", "throughput.svg");
    CU_ASSERT(!file_exists(p));
    unsetenv("FAKE_GNUPLOT_EXIT");
}

/* ------------------------------------------------------------------ */
/* What every plot writer shares                                        */

static void test_gp_helpers(void)
{
    char dir[512], p[600];
    snprintf(dir, sizeof dir, "%s/gp", oc_test_dir);
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_mkdir_p(dir, &st), 0);
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "t.gp", &st);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    /* Quotes and backslashes escaped, a newline as a space. */
    oc_gp_str(f, "a \"b\" \\c\nd");
    fputc('\n', f);
    oc_gp_script_begin(f, "t", "a test", "ocsim compare", 640, 480);
    oc_gp_script_end(f, "t", 640, 480);
    CU_ASSERT_EQUAL(oc_gp_close(&of, &st), 0);
    path_in(p, sizeof p, "gp", "t.gp");
    char *text = oc_test_read_file(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_STRING_EQUAL(
        text, "\"a \\\"b\\\" \\\\c d\"\n"
              "# t.gp: a test.\n"
              "# Written by ocsim compare. Restyle it and rerun in this folder: gnuplot t.gp\n"
              "# Data: t.dat. Makes t.png and t.svg.\n"
              "set encoding utf8\n"
              "set terminal pngcairo size 640,480 font \"sans,10\" noenhanced\n"
              "set output 't.png'\n"
              "set terminal svg size 640,480 dynamic font \"sans,10\" noenhanced "
              "background rgb 'white'\n"
              "set output 't.svg'\n"
              "replot\n"
              "unset output\n");
    free(text);
    CU_ASSERT_EQUAL(oc_gp_rgb(OC_GP_FWD), 0x3b75af);
    oc_gp_remove(dir, "t"); /* t.gp goes, the others were never there */
    CU_ASSERT(!file_exists(p));
    CU_ASSERT_PTR_NULL(oc_gp_open(&of, "/nonexistent-ocsim", "x.dat", &st));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "/nonexistent-ocsim/x.dat: cannot write"));

    /* Sizes below 200 px and top_n below 1 fall back to the defaults. */
    struct oc_plot_opts o = OC_PLOT_OPTS_DEFAULT;
    o.top_n = 0;
    o.width_px = 150;
    o.height_px = 300;
    struct oc_plot_opts r = oc_plot_opts_fill(&o);
    CU_ASSERT_EQUAL(r.top_n, 30);
    CU_ASSERT_EQUAL(r.width_px, 1200);
    CU_ASSERT_EQUAL(r.height_px, 300);
    CU_ASSERT_EQUAL(oc_plot_opts_fill(NULL).height_px, 700);
}

static CU_TestInfo plot_tests[] = {
    {"ranking", test_rank},
    {"sweep plots", test_plot_sweep},
    {"sweep plots without gnuplot", test_plot_no_gnuplot},
    {"pipeline plot", test_plot_pipeline},
    {"a cut image is not published", test_plot_cut_image},
    {"gnuplot file helpers", test_gp_helpers},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"plots", suite_init, oc_test_dir_remove, NULL, NULL, plot_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
