/* test_sim_engine_inputs.c: the engine's inputs and failures (sim/engine.c,
 * the groups of sim/collective.c): --cfg checks and passthrough, a user's
 * platform file, a deadlock, a crash and a hang of the child of
 * oc_sim_fork_run, each one error line, and the group checks. The test
 * platform and the jobs are in sim_fixtures.h; the log settings are tested
 * in test_sim_engine.c.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collective.h"
#include "engine.h"
#include "sim_fixtures.h"
#include "test_util.h"
#include "topology.h"

/* ---- engine: inputs and failures ---------------------------------------- */

static void test_cfg_check(void)
{
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_sim_cfg_check("network/model:CM02", &st), 0);
    CU_ASSERT_EQUAL(oc_sim_cfg_check("--cfg=network/TCP-gamma:0", &st), 0);
    CU_ASSERT_EQUAL(oc_sim_cfg_check("network/model", &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_EQUAL(oc_sim_cfg_check(":CM02", &st), -1);
    CU_ASSERT_EQUAL(oc_sim_cfg_check("network/model:", &st), -1);
    CU_ASSERT_EQUAL(oc_sim_cfg_check("net work:x", &st), -1);
    CU_ASSERT_EQUAL(oc_sim_cfg_check("contexts/nthreads:4", &st), -1);
    CU_ASSERT_EQUAL(oc_sim_cfg_check("contexts/nthreads:1", &st), 0);
}

/* A user --cfg wins over ocsim's default: with the LV08 model SimGrid's
 * latency factor (13.01) and bandwidth factor (0.97) make a 1 MB message
 * slower than CM02's ln + S/Bn = 44e-6 s. A malformed or unknown key is an
 * error line, not an abort of the test. */
static void test_cfg_passthrough(void)
{
    struct oc_topology two = topo(4, 1, 1, 1);
    struct job j = {.topo = &two, .cards = 8, .kind = JOB_P2P, .n = 2,
                    .ranks = {0, 5}, .have_ranks = 1, .bytes = 1e6, .recv_bytes = 1e6};
    const char *lv08[] = {"network/model:LV08"};
    j.cfg = lv08;
    j.n_cfg = 1;
    CU_ASSERT(sim_time(&j) > 44e-6 * 1.05);

    struct job_result r;
    struct oc_status st = {{0}};
    const char *bad[] = {"network/model"};
    j.cfg = bad;
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "key:value"));

    const char *unknown[] = {"network/no-such-key:1"};
    j.cfg = unknown;
    memset(&st, 0, sizeof st);
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "crashed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "no-such-key"));

    /* A value SimGrid refuses only while loading the platform: the child
     * aborts then, quoting SimGrid, and leaves no temporary platform file
     * behind (TMPDIR points at an empty directory of ours). */
    char dir[] = "/tmp/ocsim-test-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    const char *old_tmp = getenv("TMPDIR");
    char saved[4096] = "";
    if (old_tmp)
        snprintf(saved, sizeof saved, "%s", old_tmp);
    setenv("TMPDIR", dir, 1);
    const char *late[] = {"network/maxmin-selective-update:no"};
    j.cfg = late;
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "selective update"));
    if (old_tmp)
        setenv("TMPDIR", saved, 1);
    else
        unsetenv("TMPDIR");
    CU_ASSERT_EQUAL(rmdir(dir), 0); /* fails unless empty */
}

/* A user's platform: two hosts joined by one 1e9 B/s split-duplex link of
 * 1e-3 s. Named gpu0/gpu1 it runs: ring all-reduce of 1e6 over 2 members =
 * 2*(1/2)*1e6/1e9 + 2*1e-3 = 3e-3 s (CM02 applies to user files too).
 * Named a/b, or asked for 3 cards, it is refused with one line; a missing
 * file is refused before SimGrid sees it. */
static void test_user_platform(void)
{
    char dir[] = "/tmp/ocsim-test-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char good[64], bad[64], none[64];
    snprintf(good, sizeof good, "%s/good.xml", dir);
    snprintf(bad, sizeof bad, "%s/bad.xml", dir);
    snprintf(none, sizeof none, "%s/none.xml", dir);
    const char *fmt =
        "<?xml version='1.0'?>\n"
        "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        "<platform version=\"4.1\">\n<zone id=\"z\" routing=\"Full\">\n"
        "  <host id=\"%s\" speed=\"1Gf\"/>\n  <host id=\"%s\" speed=\"1Gf\"/>\n"
        "  <link id=\"l\" bandwidth=\"1e9Bps\" latency=\"1e-3s\" sharing_policy=\"SPLITDUPLEX\"/>\n"
        "  <route src=\"%s\" dst=\"%s\"><link_ctn id=\"l\" direction=\"UP\"/></route>\n"
        "</zone>\n</platform>\n";
    char text[1024];
    snprintf(text, sizeof text, fmt, "gpu0", "gpu1", "gpu0", "gpu1");
    oc_test_write_file(good, text);
    snprintf(text, sizeof text, fmt, "a", "b", "a", "b");
    oc_test_write_file(bad, text);

    struct job j = {.platform_file = good, .cards = 2, .kind = JOB_ALLREDUCE, .n = 2,
                    .bytes = 1e6, .opts = {.algo = OC_SIM_ALGO_RING}};
    OC_ASSERT_REL(sim_time(&j), 3e-3, 1e-9);

    struct job_result r;
    struct oc_status st = {{0}};
    j.platform_file = bad;
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "no host \"gpu0\""));

    j.platform_file = good;
    j.cards = 3;
    j.n = 3;
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "no host \"gpu2\""));

    j.platform_file = none;
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "cannot open platform file"));

    /* Without the DOCTYPE line SimGrid's parser fails: caught first. */
    oc_test_write_file(none, strstr(text, "<platform"));
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "DOCTYPE"));
    /* A parse error aborts SimGrid in the child: one line quoting it. */
    snprintf(text, sizeof text, fmt, "gpu0", "gpu1", "gpu0", "gpu1");
    *strstr(text, "</zone>") = ' ';
    oc_test_write_file(none, text);
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "crashed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "none.xml:"));
    unlink(none);

    unlink(good);
    unlink(bad);
    rmdir(dir);
}

/* Every member waits for a message nobody sends: SimGrid reports a
 * deadlock and returns; the engine turns that into an error line. */
static void test_deadlock(void)
{
    struct oc_topology one = topo(4, 1, 1, 1);
    struct job j = {.topo = &one, .cards = 4, .kind = JOB_DEADLOCK, .n = 4};
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "deadlocked"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "4 of 4 actors"));
}

/* A child that crashes is an error line naming the signal. */
static void test_crash(void)
{
    struct job j = {.kind = JOB_ABORT};
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "signal 6"));
}

static int hang_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    (void)arg;
    (void)out;
    (void)st;
    sleep(30);
    return 0;
}

/* A child that runs past the wall limit (0.3 s) is killed and reported. */
static void test_wall_limit(void)
{
    struct oc_sim_buf buf = {0};
    struct oc_status st = {{0}};
    struct oc_sim_fork_opts fo = {.wall_limit_s = 0.3};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CU_ASSERT_EQUAL(oc_sim_fork_run(hang_child, NULL, &fo, &buf, &st), -1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "wall-clock limit"));
    CU_ASSERT((double)(t1.tv_sec - t0.tv_sec) < 10);
    CU_ASSERT_EQUAL(buf.len, 0);
}

/* Group checks: a rank out of range or twice is refused. */
static int group_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    (void)arg;
    struct oc_topology t = topo(4, 1, 1, 1);
    struct oc_sim_engine_opts eo = {.topo = &t, .cards = 8};
    if (oc_sim_engine_init(&eo, st) != 0)
        return -1;
    /* A second engine in one process is refused, not aborted. */
    int32_t v[6];
    v[0] = oc_sim_engine_init(&eo, st);
    struct oc_sim_group g;
    const int64_t dup[3] = {0, 1, 1}, far[2] = {0, 8}, odd[3] = {0, 1, 4};
    v[1] = oc_sim_group_init(&g, "g", dup, 3, oc_sim_engine_platform(), st);
    v[2] = oc_sim_group_init(&g, "g", far, 2, oc_sim_engine_platform(), st);
    /* 0,1 on node 0 and 4 on node 1: 2 nodes, uneven (per_node 0). */
    v[3] = oc_sim_group_init(&g, "g", odd, 3, oc_sim_engine_platform(), st);
    v[4] = (int32_t)g.nodes;
    v[5] = (int32_t)g.per_node;
    oc_sim_group_free(&g);
    oc_sim_buf_append(out, v, sizeof v);
    return 0;
}

static void test_group_checks(void)
{
    struct oc_sim_buf buf = {0};
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_sim_fork_run(group_child, NULL, NULL, &buf, &st), 0);
    int32_t v[6];
    CU_ASSERT_EQUAL_FATAL(buf.len, sizeof v);
    memcpy(v, buf.data, sizeof v);
    CU_ASSERT_EQUAL(v[0], -1);
    CU_ASSERT_EQUAL(v[1], -1);
    CU_ASSERT_EQUAL(v[2], -1);
    CU_ASSERT_EQUAL(v[3], 0);
    CU_ASSERT_EQUAL(v[4], 2);
    CU_ASSERT_EQUAL(v[5], 0);
    oc_sim_buf_free(&buf);
}

static CU_TestInfo tests[] = {
    {"cfg check", test_cfg_check},
    {"cfg passthrough", test_cfg_passthrough},
    {"user platform", test_user_platform},
    {"deadlock", test_deadlock},
    {"crash", test_crash},
    {"wall limit", test_wall_limit},
    {"group checks", test_group_checks},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sim_engine_inputs", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
