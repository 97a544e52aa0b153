/* test_goodput.c: core/goodput.c against values worked by hand from Young
 * 1974 and Daly 2006, the seeded failure simulation against Daly's closed
 * form over many trials, its determinism and bookkeeping, and the
 * checkpoint size of a layout against memory.h's bytes per parameter, and
 * the plot's data and script. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "goodput.h"
#include "memory.h"
#include "plot_goodput.h"
#include "test_util.h"

/* Young: sqrt(2 delta M), delta 60 s, M 24 h: sqrt(10,368,000) s. */
static void test_young(void)
{
    OC_ASSERT_REL(oc_goodput_young_interval(60, 86400), 3219.937887599697, 1e-12);
    CU_ASSERT_EQUAL(oc_goodput_young_interval(0, 86400), 0);
}

/* Daly: x = 60 / 172800 = 3.4722e-4, sqrt(x) = 0.0186339;
 * 3219.938 * (1 + 0.0062113 + 0.0000386) - 60 = 3180.062 s. And delta >=
 * 2M: tau = M. */
static void test_daly(void)
{
    OC_ASSERT_REL(oc_goodput_daly_interval(60, 86400), 3180.0621135984475, 1e-12);
    CU_ASSERT_EQUAL(oc_goodput_daly_interval(200, 100), 100);
    CU_ASSERT_EQUAL(oc_goodput_daly_interval(250, 100), 100);
    /* below Young's by 2 delta / 3 when delta << M: y (1 + sqrt(x)/3) -
     * delta, and y sqrt(x) = delta */
    const double y = oc_goodput_young_interval(1, 1e6), d = oc_goodput_daly_interval(1, 1e6);
    CU_ASSERT_DOUBLE_EQUAL(y - d, 2.0 / 3.0, 1e-3);
}

/* M 10 h, delta 10 min, R 20 min, tau 1 h: 3600 / (36000 e^(1/30)
 * (e^(4200/36000) - 1)) = 3600 / (36000 * 1.033895 * 0.123745) = 0.78162. */
static void test_expected(void)
{
    const struct oc_goodput_params p = {36000, 600, 1200};
    OC_ASSERT_REL(oc_goodput_expected(&p, 3600), 0.7816217025533971, 1e-12);
    /* no failures in sight: tau / (tau + delta) */
    const struct oc_goodput_params q = {1e15, 600, 1200};
    OC_ASSERT_REL(oc_goodput_expected(&q, 3600), 3600.0 / 4200.0, 1e-6);
    /* no save, no restart: tau / (M (e^(tau/M) - 1)) < 1, falling in tau */
    const struct oc_goodput_params z = {36000, 0, 0};
    CU_ASSERT(oc_goodput_expected(&z, 60) > oc_goodput_expected(&z, 3600));
    CU_ASSERT(oc_goodput_expected(&z, 60) < 1);
}

/* The exact optimum is a maximum; with delta / M = 7e-4, Daly's estimate
 * is within 0.1 % of it and Young's (first order) within 3 %. */
static void test_best(void)
{
    const struct oc_goodput_params p = {86400, 60, 600};
    const double b = oc_goodput_best_interval(&p), g = oc_goodput_expected(&p, b);
    CU_ASSERT(g >= oc_goodput_expected(&p, b * 1.01));
    CU_ASSERT(g >= oc_goodput_expected(&p, b * 0.99));
    OC_ASSERT_REL(oc_goodput_daly_interval(60, 86400), b, 1e-3);
    OC_ASSERT_REL(oc_goodput_young_interval(60, 86400), b, 3e-2);
    /* the restart does not move the optimum (e^(R/M) is a factor) */
    const struct oc_goodput_params r = {86400, 60, 0};
    OC_ASSERT_REL(oc_goodput_best_interval(&r), b, 1e-6);
}

/* The simulated mean over many trials against the closed form: within
 * four standard errors of the trials' spread, plus the horizon's end
 * effect (at most one segment, (tau + delta) / H). The failures: a Poisson
 * process of rate 1/M over the wall time, within 4 standard errors. */
static void check_mean(const struct oc_goodput_params *p, double tau, double h, int n)
{
    double sum = 0, sum2 = 0;
    int64_t failures = 0;
    for (int i = 0; i < n; i++) {
        struct oc_goodput_run r;
        oc_goodput_simulate(p, tau, h, 42, i, &r);
        const double f = r.useful_s / h;
        sum += f, sum2 += f * f;
        failures += r.failures;
    }
    const double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
    const double e = oc_goodput_expected(p, tau);
    CU_ASSERT(sd > 0);
    CU_ASSERT(fabs(mean - e) <= 4 * sd / sqrt(n) + (tau + p->save_s) / h);
    const double fm = (double)failures / n, lambda = h / p->mtbf_s;
    CU_ASSERT(fabs(fm - lambda) <= 4 * sqrt(lambda / n));
}

static void test_simulate_mean(void)
{
    /* a year, M 10 h, save 5 min, restart 15 min, hourly saves: ~876
     * failures a run */
    const struct oc_goodput_params p = {10 * 3600.0, 300, 900};
    check_mean(&p, 3600, 365 * 86400.0, 400);
    /* restarts as long as half the MTBF: failures during restarts matter
     * (e^(R/M) = 1.65 against the 1.5 of restarts that cannot fail) */
    const struct oc_goodput_params q = {2 * 3600.0, 120, 3600};
    check_mean(&q, 1800, 365 * 86400.0, 400);
}

/* Same seed and trial, same run; another seed or trial, another run; the
 * parts add up to the horizon. */
static void test_simulate_seed(void)
{
    const struct oc_goodput_params p = {42 * 3600.0, 60, 600};
    struct oc_goodput_run a, b, c, d;
    oc_goodput_simulate(&p, 1800, 30 * 86400.0, 7, 3, &a);
    oc_goodput_simulate(&p, 1800, 30 * 86400.0, 7, 3, &b);
    oc_goodput_simulate(&p, 1800, 30 * 86400.0, 8, 3, &c);
    oc_goodput_simulate(&p, 1800, 30 * 86400.0, 7, 4, &d);
    CU_ASSERT(memcmp(&a, &b, sizeof a) == 0);
    CU_ASSERT(a.useful_s != c.useful_s || a.failures != c.failures);
    CU_ASSERT(a.useful_s != d.useful_s || a.failures != d.failures);
    const struct oc_goodput_run *runs[] = {&a, &c, &d};
    for (int i = 0; i < 3; i++)
        OC_ASSERT_REL(runs[i]->useful_s + runs[i]->save_s + runs[i]->lost_s +
                          runs[i]->restart_s,
                      30 * 86400.0, 1e-12);
    CU_ASSERT(a.failures > 0 && a.lost_s > 0 && a.restart_s >= 600 * (double)a.failures - 1e-6);
}

/* No failure within the run: 30 days of 3000 s + 600 s segments are 720
 * whole segments, so useful is exactly 720 * 3000 s. */
static void test_simulate_no_failure(void)
{
    const struct oc_goodput_params p = {1e18, 600, 600};
    struct oc_goodput_run r;
    oc_goodput_simulate(&p, 3000, 30 * 86400.0, 1, 0, &r);
    CU_ASSERT_EQUAL(r.failures, 0);
    OC_ASSERT_REL(r.useful_s, 720 * 3000.0, 1e-12);
    OC_ASSERT_REL(r.save_s, 720 * 600.0, 1e-12);
    /* the horizon inside the compute of a segment: that compute counts */
    oc_goodput_simulate(&p, 3000, 3600 + 1000, 1, 0, &r);
    OC_ASSERT_REL(r.useful_s, 4000, 1e-12);
}

/* Linear between closest ranks: of 1..5, p5 at 0.2 -> 1.2, p95 at 3.8 -> 4.8. */
static void test_stats(void)
{
    double v[] = {5, 1, 4, 2, 3};
    struct oc_goodput_stats s;
    oc_goodput_stats(v, 5, &s);
    OC_ASSERT_REL(s.mean, 3, 1e-15);
    OC_ASSERT_REL(s.p5, 1.2, 1e-12);
    OC_ASSERT_REL(s.p50, 3, 1e-15);
    OC_ASSERT_REL(s.p95, 4.8, 1e-12);
    CU_ASSERT_EQUAL(s.min, 1);
    CU_ASSERT_EQUAL(s.max, 5);
}

/* The checkpoint of tiny, tp1-pp1, bf16 (2 + 12 bytes per parameter): P
 * parameters; dp4 replicated: one writer, 14 P; ZeRO-1: the optimizer
 * sharded, rank 0 writes 2 P + 3 P, the others 3 P; two GPUs per node: the
 * first node 5 P + 3 P. ZeRO-3: every rank 14 P / 4. */
static void test_ckpt_size(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    struct oc_layout l = oc_test_layout(1, 1, 4, 1, 8, 128);
    const double P = (double)oc_mem_stage_params(&m, &l, 0);
    CU_ASSERT(P > 0);
    struct oc_goodput_ckpt c;
    l.zero = 0;
    oc_goodput_ckpt_size(&m, &l, 8, &c);
    OC_ASSERT_REL(c.total_bytes, 14 * P, 1e-12);
    CU_ASSERT_EQUAL(c.writers, 1);
    CU_ASSERT_EQUAL(c.nodes, 1);
    OC_ASSERT_REL(c.max_node_bytes, 14 * P, 1e-12);

    l.zero = 1;
    oc_goodput_ckpt_size(&m, &l, 2, &c);
    OC_ASSERT_REL(c.total_bytes, 14 * P, 1e-12);
    CU_ASSERT_EQUAL(c.writers, 4);
    CU_ASSERT_EQUAL(c.nodes, 2);
    OC_ASSERT_REL(c.max_rank_bytes, 5 * P, 1e-12);
    OC_ASSERT_REL(c.max_node_bytes, 8 * P, 1e-12);
    /* 8 P at 10 GB/s per node against 14 P at 100 GB/s: the node binds */
    OC_ASSERT_REL(oc_goodput_io_s(&c, 10e9, 100e9), 8 * P / 10e9, 1e-12);
    OC_ASSERT_REL(oc_goodput_io_s(&c, 10e9, 1e9), 14 * P / 1e9, 1e-12);

    l.zero = 3;
    oc_goodput_ckpt_size(&m, &l, 8, &c);
    OC_ASSERT_REL(c.total_bytes, 14 * P, 1e-12);
    OC_ASSERT_REL(c.max_rank_bytes, 14 * P / 4, 1e-12);

    /* tp2: two ranks each write their shard, the total is the model's */
    struct oc_layout t = oc_test_layout(2, 1, 1, 1, 8, 128);
    oc_goodput_ckpt_size(&m, &t, 8, &c);
    CU_ASSERT_EQUAL(c.writers, 2);
    OC_ASSERT_REL(c.total_bytes, 2 * 14 * (double)oc_mem_stage_params(&m, &t, 0), 1e-12);
}

/* The plot's data has one row per point, in minutes and percent; the
 * script marks the asked interval only when there is one. */
static void test_plot(void)
{
    const struct oc_goodput_point pts[] = {
        {600, 0.95, 0.951, 0.94, 0.96}, {1800, 0.97, 0.969, 0.96, 0.98},
        {3600, 0.96, 0.961, 0.95, 0.97}};
    struct oc_plot_opts po = OC_PLOT_OPTS_DEFAULT;
    po.no_render = 1;
    struct oc_status st = {{0}};
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/plot", oc_test_dir);
    oc_test_expect_ok(oc_plot_goodput(dir, pts, 3, 600, 1800, "t", &po, &st), st.msg);
    snprintf(path, sizeof path, "%s/goodput.dat", dir);
    char *dat = oc_test_read_file(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dat);
    CU_ASSERT_PTR_NOT_NULL(strstr(dat, "\n30 97 96.9 96 98\n"));
    int rows = 0;
    for (const char *c = dat; *c; c++)
        rows += *c == '\n' && c[1] && c[1] != '#';
    CU_ASSERT_EQUAL(rows, 3);
    free(dat);
    snprintf(path, sizeof path, "%s/goodput.gp", dir);
    char *gp = oc_test_read_file(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gp);
    CU_ASSERT_PTR_NOT_NULL(strstr(gp, "\"asked\" at 10,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(gp, "\"best\" at 30,"));
    free(gp);
    oc_test_expect_ok(oc_plot_goodput(dir, pts, 3, 0, 1800, "t", &po, &st), st.msg);
    gp = oc_test_read_file(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gp);
    CU_ASSERT_PTR_NULL(strstr(gp, "asked"));
    free(gp);
}

static int init(void) { return oc_test_dir_make("goodput"); }

static CU_TestInfo tests[] = {
    {"young", test_young},
    {"daly", test_daly},
    {"expected", test_expected},
    {"best", test_best},
    {"simulate_mean", test_simulate_mean},
    {"simulate_seed", test_simulate_seed},
    {"simulate_no_failure", test_simulate_no_failure},
    {"stats", test_stats},
    {"ckpt_size", test_ckpt_size},
    {"plot", test_plot},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"goodput", init, oc_test_dir_remove, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
