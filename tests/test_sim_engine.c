/* test_sim_engine.c: the log settings of sim/ (engine.h, sim_log.h) reach
 * SimGrid where the simulation runs: in the child of oc_sim_fork_run,
 * through simgrid_init's argv, from the engine's opts.log or from
 * $OCSIM_LOG; and $OCSIM_LOG reaches a process that never starts SimGrid
 * through oc_sim_log_setup.
 *
 * The child reports which priorities its categories let through, so the
 * checks read thresholds, not log text. Settings at VERBOSE are used where
 * the child would otherwise print its DEBUG trace into the test's output
 * (nothing in sim/ logs at VERBOSE).
 *
 * And the stack canary (engine.c, trampoline): with no guard page, an
 * actor that writes past half of its stack fails its simulation with a
 * message, and one that stays below runs.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "sim_log.h"
#include "test_util.h"
#include "topology.h"

XBT_LOG_EXTERNAL_CATEGORY(ocsim_engine);
XBT_LOG_EXTERNAL_CATEGORY(ocsim_platform);
XBT_LOG_EXTERNAL_CATEGORY(ocsim_sweep);

/* Two GPUs on one node: the smallest platform the engine loads. */
static struct oc_topology topo2(void)
{
    struct oc_topology t;
    memset(&t, 0, sizeof t);
    strcpy(t.name, "test");
    t.gpus_per_node = 2;
    t.intra_bandwidth_Bps = 100e9;
    t.intra_latency_s = 1e-6;
    t.nics_per_node = 1;
    t.nic_bandwidth_Bps = 25e9;
    t.nic_latency_s = 1e-6;
    t.inter_latency_s = 1e-6;
    t.switch_levels = 1;
    t.oversubscription = 1;
    return t;
}

/* Which priorities the categories let through, seen in the child. */
struct levels {
    int32_t engine_debug, engine_verbose, engine_info, engine_error;
    int32_t platform_verbose;
};

struct job {
    const char *log; /* the engine's opts.log */
    int reset;       /* 1: "ocsim" back at error before the engine starts,
                        so that only simgrid_init's argv can raise it */
};

/* In the child: start the engine and report. */
static int levels_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    const struct job *j = arg;
    if (j->reset)
        xbt_log_control_set("ocsim.thres:error");
    struct oc_topology t = topo2();
    struct oc_sim_engine_opts eo = {.topo = &t, .cards = 2, .log = j->log};
    if (oc_sim_engine_init(&eo, st) != 0)
        return -1;
    struct levels l = {
        XBT_LOG_ISENABLED(ocsim_engine, xbt_log_priority_debug),
        XBT_LOG_ISENABLED(ocsim_engine, xbt_log_priority_verbose),
        XBT_LOG_ISENABLED(ocsim_engine, xbt_log_priority_info),
        XBT_LOG_ISENABLED(ocsim_engine, xbt_log_priority_error),
        XBT_LOG_ISENABLED(ocsim_platform, xbt_log_priority_verbose),
    };
    oc_sim_buf_append(out, &l, sizeof l);
    return 0;
}

static struct levels child_levels(const char *log, int reset)
{
    struct job j = {log, reset};
    struct levels l;
    memset(&l, 0, sizeof l);
    struct oc_sim_buf buf = {0};
    struct oc_status st = {{0}};
    int rc = oc_sim_fork_run(levels_child, &j, NULL, &buf, &st);
    if (rc != 0)
        fprintf(stderr, "\n  %s\n", st.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL_FATAL(buf.len, sizeof l);
    memcpy(&l, buf.data, sizeof l);
    oc_sim_buf_free(&buf);
    return l;
}

static void test_log_default_quiet(void)
{
    unsetenv("OCSIM_LOG");
    CU_ASSERT_PTR_NULL(oc_sim_log_env());
    /* root.thresh:error, inherited through "ocsim": errors only. */
    struct levels l = child_levels(NULL, 0);
    CU_ASSERT_EQUAL(l.engine_error, 1);
    CU_ASSERT_EQUAL(l.engine_info, 0);
    CU_ASSERT_EQUAL(l.engine_verbose, 0);
    CU_ASSERT_EQUAL(l.platform_verbose, 0);
}

static void test_log_opts(void)
{
    unsetenv("OCSIM_LOG");
    /* One category on; its sibling stays at the root's error. */
    struct levels l = child_levels("ocsim_engine.thres:verbose", 0);
    CU_ASSERT_EQUAL(l.engine_verbose, 1);
    CU_ASSERT_EQUAL(l.engine_debug, 0);
    CU_ASSERT_EQUAL(l.platform_verbose, 0);
    /* The parent category sets both children; two settings in one string. */
    l = child_levels("ocsim.thres:verbose ocsim_engine.thres:error", 0);
    CU_ASSERT_EQUAL(l.platform_verbose, 1);
    CU_ASSERT_EQUAL(l.engine_verbose, 0);
    CU_ASSERT_EQUAL(l.engine_error, 1);
}

static void test_log_env(void)
{
    /* An empty $OCSIM_LOG is none. */
    setenv("OCSIM_LOG", "", 1);
    CU_ASSERT_PTR_NULL(oc_sim_log_env());
    setenv("OCSIM_LOG", "ocsim.thres:verbose", 1);
    CU_ASSERT_STRING_EQUAL(oc_sim_log_env(), "ocsim.thres:verbose");
    struct levels l = child_levels(NULL, 0);
    CU_ASSERT_EQUAL(l.engine_verbose, 1);
    CU_ASSERT_EQUAL(l.platform_verbose, 1);
    CU_ASSERT_EQUAL(l.engine_debug, 0);
    /* The child inherits what oc_sim_fork_run applied in this process;
     * with that undone, simgrid_init's argv alone carries $OCSIM_LOG. */
    l = child_levels(NULL, 1);
    CU_ASSERT_EQUAL(l.engine_verbose, 1);
    CU_ASSERT_EQUAL(l.platform_verbose, 1);
    /* opts.log wins over $OCSIM_LOG. */
    l = child_levels("ocsim.thres:error", 0);
    CU_ASSERT_EQUAL(l.engine_verbose, 0);
    CU_ASSERT_EQUAL(l.platform_verbose, 0);
    /* This process never starts SimGrid: oc_sim_log_setup applies it here
     * (oc_sim_fork_run above already did, once per process). */
    oc_sim_log_setup();
    CU_ASSERT_TRUE(XBT_LOG_ISENABLED(ocsim_sweep, xbt_log_priority_verbose));
    CU_ASSERT_FALSE(XBT_LOG_ISENABLED(ocsim_sweep, xbt_log_priority_debug));
    unsetenv("OCSIM_LOG");
}

/* An actor that writes `kib` KiB of its stack. */
static void stack_user(void *arg)
{
    const size_t n = (size_t)*(const int *)arg * 1024;
    volatile char buf[n];
    for (size_t i = 0; i < n; i += 16) /* the canary is 64 bytes */
        buf[i] = (char)i;
    (void)buf[n - 1];
}

/* In the child: 512 KiB stacks without a guard page (the canary at 256
 * KiB below the first frame), one actor writing arg KiB. */
static int stack_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    (void)out;
    static const char *const cfg[] = {"contexts/stack-size:512", "contexts/guard-size:0"};
    struct oc_topology t = topo2();
    struct oc_sim_engine_opts eo = {.topo = &t, .cards = 2, .cfg = cfg, .n_cfg = 2};
    if (oc_sim_engine_init(&eo, st) != 0)
        return -1;
    oc_sim_actor_create("deep", oc_sim_engine_platform()->hosts[0], stack_user, arg);
    return oc_sim_engine_run(st);
}

static void test_stack_canary(void)
{
    unsetenv("OCSIM_LOG");
    struct oc_sim_buf buf = {0};
    struct oc_status st = {{0}};
    int kib = 128; /* a quarter of the stack: runs */
    CU_ASSERT_EQUAL(oc_sim_fork_run(stack_child, &kib, NULL, &buf, &st), 0);
    kib = 320; /* past half (256 KiB), inside the 512: the canary is hit */
    CU_ASSERT_EQUAL(oc_sim_fork_run(stack_child, &kib, NULL, &buf, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "actor deep used more than half of its 512 KiB stack"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "contexts/stack-size"));
    oc_sim_buf_free(&buf);
}

static CU_TestInfo stack_tests[] = {
    {"a stack overrun fails the simulation", test_stack_canary},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo log_tests[] = {
    {"no setting: errors only", test_log_default_quiet},
    {"the engine's opts.log", test_log_opts},
    {"$OCSIM_LOG", test_log_env},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"sim_log", NULL, NULL, NULL, NULL, log_tests},
    {"sim_stack", NULL, NULL, NULL, NULL, stack_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
