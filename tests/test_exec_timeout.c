/* test_exec_timeout.c: ocsim-exec's --timeout auto (exec/timeout.h): the
 * value given as is, the floor, ten times the closed form's step, a
 * checkpoint shard's write and read with its bytes worked by hand, the
 * bound, and the line the run prints.
 *
 * Shard bytes by hand (12 per parameter: fp32 weights, AdamW's two
 * moments; 4 + 8/d under ZeRO-1). A GPT layer of hidden h and MLP width f
 * holds 4h^2 + 2hf matrix weights, 3h + f + 2h biases and 4h LayerNorm
 * weights; the embedding V*h + P*h, the final norm 2h (tied head).
 *   tiny (h 64, f 256, L 8, V 512, P 128): a layer 16384 + 32768 + 448 +
 *     128 + 256 = 49984; all 8 = 399872, + 40960 + 128 = 440960 params,
 *     5 291 520 B (one stage); pp2: stage 0 = 4 layers + the embedding =
 *     240 896 params (stage 1: 4 layers + norm + the tied copy, 232 832).
 *   wide (h 1024, f 4096, L 48, V 1024, P 128): a layer 4 194 304 +
 *     8 388 608 + 9216 + 4096 = 12 596 224; 48 of them 604 618 752, +
 *     1 179 648 + 2048 = 605 800 448 params, 7 269 605 376 B: written at
 *     3 s/GB in 21.8088 s, so auto = 218.088 s; read at 8 s/GB, 581.568 s.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "closed_form.h"
#include "test_util.h"
#include "timeout.h"
#include "topology.h"

#define WEEK_S 604800.0

static struct oc_topology topo(void)
{
    struct oc_topology t;
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_topology_load("h100-100g", &t, &st), st.msg);
    return t;
}

static void test_given_and_floor(void)
{
    struct oc_timeout to;
    char line[512];
    oc_timeout_plan(&to, 5.0, WEEK_S, NULL, NULL, NULL, 0, 0);
    CU_ASSERT_EQUAL(to.timeout_s, 5.0);
    CU_ASSERT_EQUAL(to.automatic, 0);
    oc_timeout_describe(&to, line, sizeof line);
    CU_ASSERT_STRING_EQUAL(line, "5 s per wait (--timeout)");
    /* --calibrate, --netbw: nothing predicted, the floor */
    oc_timeout_plan(&to, 0, WEEK_S, NULL, NULL, NULL, 0, 0);
    CU_ASSERT_EQUAL(to.timeout_s, 60.0);
    oc_timeout_describe(&to, line, sizeof line);
    CU_ASSERT_STRING_EQUAL(line, "60 s per wait (auto: the floor; nothing predicted for "
                                 "this mode)");
}

/* tiny on an H100 predicts a step of well under a second: the floor, and
 * the line says the factor's value is less. */
static void test_tiny_floor(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    const struct oc_topology t = topo();
    struct oc_layout l = oc_test_layout(2, 2, 2, 1, 8, 32);
    struct oc_timeout to;
    oc_timeout_plan(&to, 0, WEEK_S, &m, &l, &t, 0, 0);
    CU_ASSERT_EQUAL(to.timeout_s, 60.0);
    CU_ASSERT(to.step_s > 0 && to.step_s < 0.1);
    char line[512];
    oc_timeout_describe(&to, line, sizeof line);
    oc_test_msg_has(line, "60 s per wait (auto: the floor; 10 x the predicted step, ");
    oc_test_msg_has(line, " on h100-100g, is less)");
    /* the shard: 440960 params, one stage; pp2: stage 0's 240896 */
    l = oc_test_layout(1, 1, 1, 1, 8, 32);
    oc_timeout_plan(&to, 0, WEEK_S, &m, &l, &t, 1, 0);
    CU_ASSERT_EQUAL(to.ckpt_bytes, 12.0 * 440960);
    OC_ASSERT_REL(to.ckpt_s, 3.0 * 5291520e-9, 1e-12);
    CU_ASSERT_EQUAL(to.timeout_s, 60.0);
    l = oc_test_layout(1, 2, 1, 1, 8, 32);
    oc_timeout_plan(&to, 0, WEEK_S, &m, &l, &t, 0, 1);
    CU_ASSERT_EQUAL(to.ckpt_bytes, 12.0 * 240896);
    OC_ASSERT_REL(to.ckpt_s, 8.0 * 12.0 * 240896e-9, 1e-12);
    /* ZeRO-1 over dp 2: the moments halved, 4 + 4 bytes */
    l = oc_test_layout(1, 1, 2, 1, 8, 32);
    l.zero = 1;
    oc_timeout_plan(&to, 0, WEEK_S, &m, &l, &t, 1, 0);
    CU_ASSERT_EQUAL(to.ckpt_bytes, 8.0 * 440960);
}

/* A 175B-class layout predicts a step of seconds: ten of them, above the
 * floor; a smaller bound caps it and the line says so. */
static void test_step_above_floor(void)
{
    struct oc_model m = oc_test_gpt("gpt3-175b-like", 12288, 96, 96, 49152, 50257, 2048);
    const struct oc_topology t = topo();
    struct oc_layout l = oc_test_layout(8, 8, 1, 1, 1536, 2048);
    struct oc_cf_step e;
    oc_cf_step(&m, &l, &t, &e);
    CU_ASSERT_FATAL(e.step_s > 6.0); /* the case this test is for */
    struct oc_timeout to;
    oc_timeout_plan(&to, 0, WEEK_S, &m, &l, &t, 0, 0);
    CU_ASSERT_EQUAL(to.timeout_s, 10.0 * e.step_s);
    CU_ASSERT_EQUAL(to.capped, 0);
    char line[512], want[512];
    oc_timeout_describe(&to, line, sizeof line);
    snprintf(want, sizeof want, " per wait (auto: 10 x the predicted step, %.3g s on "
                                "h100-100g)", e.step_s);
    oc_test_msg_has(line, want);
    oc_timeout_plan(&to, 0, 100.0, &m, &l, &t, 0, 0);
    CU_ASSERT_EQUAL(to.timeout_s, 100.0);
    CU_ASSERT_EQUAL(to.capped, 1);
    oc_timeout_describe(&to, line, sizeof line);
    oc_test_msg_has(line, "100 s per wait (auto: the most allowed; 10 x the predicted step");
}

/* wide: a 7.27 GB shard outlasts its step; the save's and the load's rates. */
static void test_checkpoint_above_floor(void)
{
    struct oc_model m = oc_test_gpt("wide", 1024, 8, 48, 4096, 1024, 128);
    const struct oc_topology t = topo();
    struct oc_layout l = oc_test_layout(1, 1, 1, 1, 1, 128);
    struct oc_timeout to;
    oc_timeout_plan(&to, 0, WEEK_S, &m, &l, &t, 1, 0);
    CU_ASSERT_EQUAL(to.ckpt_bytes, 7269605376.0);
    OC_ASSERT_REL(to.timeout_s, 218.08816128, 1e-12);
    char line[512];
    oc_timeout_describe(&to, line, sizeof line);
    CU_ASSERT_STRING_EQUAL(line, "218 s per wait (auto: 10 x a checkpoint shard's write of "
                                 "7.27 GB, 21.8 s at 3 s/GB)");
    oc_timeout_plan(&to, 0, WEEK_S, &m, &l, &t, 1, 1); /* --load and --save: the read */
    OC_ASSERT_REL(to.timeout_s, 581.56843008, 1e-12);
    /* no checkpoint: the step, under a second here: the floor */
    oc_timeout_plan(&to, 0, WEEK_S, &m, &l, &t, 0, 0);
    CU_ASSERT_EQUAL(to.timeout_s, 60.0);
    CU_ASSERT_EQUAL(to.ckpt_s, 0);
}

static CU_TestInfo tests[] = {
    {"given and floor", test_given_and_floor},
    {"tiny: the floor, shard bytes", test_tiny_floor},
    {"a long step", test_step_above_floor},
    {"a large checkpoint shard", test_checkpoint_above_floor},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"exec_timeout", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
