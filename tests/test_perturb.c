/* test_perturb.c: the confidence of the choice (core/perturb.h): the
 * first-order step model worked by hand, a winner that flips with known
 * factors, the 2 % rule, a probability worked from the normal
 * distribution, determinism and the report's text. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perturb.h"
#include "report_confidence.h"
#include "test_util.h"

/* A layout with the given breakdown (seconds) and 1000 tokens per step. */
static struct oc_metrics layout(int64_t tp, double compute, double bubble, double tp_comm,
                                double net_comm, double exposed, double other)
{
    struct oc_metrics m;
    memset(&m, 0, sizeof m);
    m.layout = oc_test_layout(tp, 1, 1, 1, 1, 1000);
    m.step_time_s = compute + bubble + exposed + other;
    m.compute_s = compute;
    m.bubble_fraction = bubble / m.step_time_s;
    m.tp_comm_s = tp_comm;
    m.dp_comm_s = net_comm;
    m.exposed_comm_s = exposed;
    m.tokens_per_s = 1000 / m.step_time_s;
    m.fits = 1;
    return m;
}

/* A compute-bound layout A (1.0 s compute, 0.1 s of exposed DP traffic)
 * and a communication-bound B (0.8 s compute, 0.35 s exposed): A wins as
 * simulated (1.10 s against 1.15 s). A network twice as fast: A 1.0 +
 * 0.05 = 1.05 s, B 0.8 + 0.175 = 0.975 s, B wins; compute 20 % slower and
 * the network as modelled: A 1.3 s, B 1.31 s, A still wins. */
static void test_step_by_hand(void)
{
    struct oc_metrics a = layout(1, 1.0, 0, 0, 0.1, 0.1, 0);
    struct oc_metrics b = layout(2, 0.8, 0, 0, 0.5, 0.35, 0);
    struct oc_perturb_factors one = {1, 1, 1, 1};
    CU_ASSERT_DOUBLE_EQUAL(oc_perturb_step(&a, &one), 1.10, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(oc_perturb_step(&b, &one), 1.15, 1e-12);
    struct oc_perturb_factors fast_net = {1, 1, 0.5, 1};
    CU_ASSERT_DOUBLE_EQUAL(oc_perturb_step(&a, &fast_net), 1.05, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(oc_perturb_step(&b, &fast_net), 0.975, 1e-12);
    struct oc_perturb_factors slow_gpu = {1.2, 1, 1, 1};
    CU_ASSERT_DOUBLE_EQUAL(oc_perturb_step(&a, &slow_gpu), 1.30, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(oc_perturb_step(&b, &slow_gpu), 1.31, 1e-12);
    /* bubble and other scale with compute; exposed split 1:3 between TP
     * (k_tp) and the network (k_net) by tp_comm_s : dp_comm_s */
    struct oc_metrics c = layout(8, 1.0, 0.2, 0.1, 0.3, 0.4, 0.1);
    struct oc_perturb_factors f = {2, 3, 5, 0.5};
    CU_ASSERT_DOUBLE_EQUAL(oc_perturb_step(&c, &f),
                           0.5 * (2 * (1.0 + 0.2 + 0.1) + 3 * 0.1 + 5 * 0.3), 1e-12);
}

/* Only the network uncertain (s = 0.3): B wins when 0.2 c > 0.25 k_net,
 * i.e. ln k_net < ln 0.8 = -0.2231, z < -0.7438: Phi(-0.7438) = 0.2285.
 * Over 4000 draws the count is binomial, sd sqrt(4000 x 0.23 x 0.77) =
 * 27, so 0.2285 +- 0.03 holds with margin. */
static void test_flip_probability(void)
{
    struct oc_metrics m[2] = {layout(1, 1.0, 0, 0, 0.1, 0.1, 0),
                              layout(2, 0.8, 0, 0, 0.5, 0.35, 0)};
    struct oc_perturb_spread sp = {0, 0, 0.3, 0};
    struct oc_perturb_result r;
    oc_perturb_run(m, 2, 4000, 1234, &sp, &r);
    CU_ASSERT_EQUAL(r.n, 2);
    CU_ASSERT_EQUAL(r.best[0] + r.best[1], 4000);
    CU_ASSERT_DOUBLE_EQUAL((double)r.best[1] / 4000, 0.2285, 0.03);
    /* no spread: A always best, B never within 2 % (1.10/1.15 = 0.957) */
    struct oc_perturb_spread none = {0, 0, 0, 0};
    oc_perturb_run(m, 2, 50, 1, &none, &r);
    CU_ASSERT_EQUAL(r.best[0], 50);
    CU_ASSERT_EQUAL(r.within[0], 50);
    CU_ASSERT_EQUAL(r.within[1], 0);
    CU_ASSERT_DOUBLE_EQUAL(r.chosen_worst_ratio, 1, 0);
}

/* The 2 % rule: steps 1.0, 1.019 (1/1.019 = 0.9814 of the best's
 * tokens/s: within) and 1.021 (0.9794: not). */
static void test_within_rule(void)
{
    struct oc_metrics m[3] = {layout(1, 1.0, 0, 0, 0, 0, 0), layout(2, 1.019, 0, 0, 0, 0, 0),
                              layout(4, 1.021, 0, 0, 0, 0, 0)};
    struct oc_perturb_spread none = {0, 0, 0, 0};
    struct oc_perturb_result r;
    oc_perturb_run(m, 3, 10, 7, &none, &r);
    CU_ASSERT_EQUAL(r.best[0], 10);
    CU_ASSERT_EQUAL(r.within[1], 10);
    CU_ASSERT_EQUAL(r.within[2], 0);
}

/* The same input and seed: the same counts, bit for bit; another seed
 * draws other factors (two layouts 1 % apart with a per-layout spread of
 * 5 %: the count of either is far from certain, so two seeds agreeing to
 * the draw would be a broken stream). More layouts than OC_PERTURB_TOP
 * are cut to it; none gives an empty result. */
static void test_determinism(void)
{
    struct oc_metrics m[12];
    for (int i = 0; i < 12; i++)
        m[i] = layout(1 << (i % 4), 1.0 + 0.01 * i, 0.05, 0.02, 0.05, 0.04, 0);
    struct oc_perturb_spread sp = OC_PERTURB_SPREAD_DEFAULT;
    struct oc_perturb_result a, b, c;
    oc_perturb_run(m, 12, 300, 1234, &sp, &a);
    oc_perturb_run(m, 12, 300, 1234, &sp, &b);
    oc_perturb_run(m, 12, 300, 99, &sp, &c);
    CU_ASSERT_EQUAL(a.n, OC_PERTURB_TOP);
    CU_ASSERT(memcmp(&a, &b, sizeof a) == 0);
    CU_ASSERT(memcmp(a.best, c.best, sizeof a.best) != 0);
    int64_t total = 0;
    for (int i = 0; i < OC_PERTURB_TOP; i++) {
        total += a.best[i];
        CU_ASSERT(a.within[i] >= a.best[i]);
    }
    CU_ASSERT_EQUAL(total, 300);
    CU_ASSERT(a.best[0] > 0 && a.best[0] < 300);
    struct oc_perturb_result e;
    oc_perturb_run(NULL, 0, 200, 1, &sp, &e);
    CU_ASSERT_EQUAL(e.n, 0);
    CU_ASSERT_EQUAL(e.best[0], 0);
}

/* Identical results share their layout factor: the chosen layout and a
 * variant with the same result bit for bit (its label differs) tie in
 * every draw, so the chosen one (first) is the best in every draw where
 * either would be; without the twin the counts of the others are
 * unchanged (the twin's draw is still made). */
static void test_identical_variants(void)
{
    struct oc_metrics m[3] = {layout(1, 1.0, 0.05, 0.02, 0.05, 0.04, 0),
                              layout(1, 1.0, 0.05, 0.02, 0.05, 0.04, 0),
                              layout(2, 1.01, 0.05, 0.02, 0.05, 0.04, 0)};
    m[1].layout.coll = OC_COLL_CHOICE_HIER;
    struct oc_perturb_spread sp = OC_PERTURB_SPREAD_DEFAULT;
    struct oc_perturb_result r;
    oc_perturb_run(m, 3, 400, 1234, &sp, &r);
    CU_ASSERT_EQUAL(r.best[1], 0);
    CU_ASSERT_EQUAL(r.within[1], r.within[0]);
    CU_ASSERT_EQUAL(r.best[0] + r.best[2], 400);
    CU_ASSERT(r.best[0] > 200);
}

/* What the report says (reports/report_confidence.h): the line with the
 * chosen layout's shares, the section's table, and the memory paragraph's
 * margin = device - peak - reserve. */
static void test_report_text(void)
{
    struct oc_metrics m[2] = {layout(1, 1.0, 0, 0, 0.1, 0.1, 0),
                              layout(2, 0.8, 0, 0, 0.5, 0.35, 0)};
    struct oc_perturb_spread none = {0, 0, 0, 0};
    struct oc_perturb_result r;
    oc_perturb_run(m, 2, 50, 1, &none, &r);
    char lay[128], want[512], line[512];
    oc_layout_format(&m[0].layout, lay, sizeof lay);
    snprintf(want, sizeof want,
             "confidence: %s is the best in 100%% of 50 perturbed cost models and within 2%% "
             "of the best in 100%% (top 2 layouts, seed 1)", lay);
    oc_report_confidence_line(line, sizeof line, &r);
    CU_ASSERT_STRING_EQUAL(line, want);
    oc_report_confidence_line(line, sizeof line, NULL);
    CU_ASSERT_STRING_EQUAL(line, "");
    char path[] = "/tmp/ocsim-test-perturb-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    FILE *f = fdopen(fd, "w");
    oc_report_confidence_md(f, &r);
    m[0].peak_mem_bytes = 70e9;
    m[0].reserve_bytes = 6e9;
    m[0].device_mem_bytes = 85.5e9;
    struct oc_topology t;
    memset(&t, 0, sizeof t);
    t.reserve.mode = OC_RESERVE_FIXED;
    t.reserve.bytes = 6e9;
    struct oc_model model = oc_test_gpt("g", 64, 4, 2, 256, 512, 128);
    oc_report_memory_md(f, &m[0], &model, &t);
    fclose(f);
    char *text = oc_test_read_file(path);
    unlink(path);
    CU_ASSERT_FATAL(text != NULL);
    oc_test_msg_has(text, "## Confidence of the choice");
    snprintf(want, sizeof want, "| 1 | `%s` | 909 tok/s | 100.0%% | 100.0%% |", lay);
    oc_test_msg_has(text, want);
    oc_layout_format(&m[1].layout, lay, sizeof lay);
    snprintf(want, sizeof want, "| 2 | `%s` | 870 tok/s | 0.0%% | 0.0%% |", lay);
    oc_test_msg_has(text, want);
    oc_test_msg_has(text, "peak 70.0 GB (stage 0) + reserve 6.00 GB of 85.5 GB: margin 9.50 GB");
    free(text);
}

static CU_TestInfo tests[] = {
    {"identical variants share their factor", test_identical_variants},
    {"report text", test_report_text},
    {"first-order step by hand", test_step_by_hand},
    {"winner flips with the network", test_flip_probability},
    {"the 2 % rule", test_within_rule},
    {"deterministic", test_determinism},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {{"perturb", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
int main(void) { return oc_test_run(suites); }
