/* test_mbsplit.c: unequal micro-batch counts per DP replica
 * (core/mbsplit.h) against hand-worked values.
 *
 * - Hamilton's largest-remainder apportionment by hand: 16 micro-batches
 *   over a replica and one 3x slower are 12 and 4; ties to the lower
 *   index; a share below the floor raised from the largest; the
 *   interleaved step of PP.
 * - The label part: runs parsed, merged and written back; the rules
 *   (count of replicas, the batch, a zero, the even split, interleaved,
 *   ZeRO-2/3), one message each.
 * - The schedule: each rank runs its own replica's micro-batches.
 * - On two one-GPU nodes, the second's device every rate / 3 of the
 *   first's (about 2.7x slower per micro-batch: launch costs do not
 *   scale), communication free: the speed split of 16 is 12/4, and the
 *   simulated step of mbs=12/4 is max over replicas of m_r x p_r (pp1:
 *   no fill or drain) plus the same tail as the even split's 8 x p_1;
 *   both bounds stay below it.
 * - On a uniform cluster the speed split is the even one, the layout
 *   byte for byte unchanged (so today's numbers).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bound.h"
#include "bound_groups.h"
#include "mbsplit.h"
#include "metrics.h"
#include "replay.h"
#include "schedule.h"
#include "test_util.h"
#include "topology.h"

static void test_apportion(void)
{
    int64_t out[3];
    const double w3[2] = {3.0, 1.0}; /* speeds: replica 1 three times slower */
    CU_ASSERT_EQUAL_FATAL(oc_mbs_apportion(w3, 2, 16, 1, out), 0);
    CU_ASSERT(out[0] == 12 && out[1] == 4);
    /* interleaved pp2: units of 2; 8 units -> 6, 2 */
    CU_ASSERT_EQUAL_FATAL(oc_mbs_apportion(w3, 2, 16, 2, out), 0);
    CU_ASSERT(out[0] == 12 && out[1] == 4);
    /* 10 over 1:1:1: quotas 3.33 each, the one left to the lowest index */
    const double e[3] = {1, 1, 1};
    CU_ASSERT_EQUAL_FATAL(oc_mbs_apportion(e, 3, 10, 1, out), 0);
    CU_ASSERT(out[0] == 4 && out[1] == 3 && out[2] == 3);
    /* 4 over 1000:1: quotas 3.996 and 0.004 -> 4, 0 -> the floor: 3, 1 */
    const double far[2] = {1000, 1};
    CU_ASSERT_EQUAL_FATAL(oc_mbs_apportion(far, 2, 4, 1, out), 0);
    CU_ASSERT(out[0] == 3 && out[1] == 1);
    /* 7 over 2 in units of 2; 1 over 2 replicas; a weight of 0 */
    CU_ASSERT_EQUAL(oc_mbs_apportion(w3, 2, 7, 2, out), -1);
    CU_ASSERT_EQUAL(oc_mbs_apportion(w3, 2, 1, 1, out), -1);
    const double z[2] = {1, 0};
    CU_ASSERT_EQUAL(oc_mbs_apportion(z, 2, 8, 1, out), -1);
}

static struct oc_layout lay(const char *s, int64_t G)
{
    struct oc_layout l;
    struct oc_status st = {{0}};
    oc_layout_default(&l);
    CU_ASSERT_EQUAL_FATAL(oc_layout_parse(&l, s, &st), 0);
    l.global_batch = G;
    l.seq_length = 1024;
    return l;
}

static void test_label(void)
{
    struct oc_layout l = lay("tp1-pp1-dp5-mb2-mbs=12/12/4x2/3", 2 * 35);
    CU_ASSERT_TRUE(oc_mbs_on(&l));
    CU_ASSERT_EQUAL(l.mbs[0].count, 12);
    CU_ASSERT_EQUAL(l.mbs[0].len, 2); /* 12/12 merged into one run */
    CU_ASSERT_EQUAL(oc_mbs_replica(&l, 1), 12);
    CU_ASSERT_EQUAL(oc_mbs_replica(&l, 3), 4);
    CU_ASSERT_EQUAL(oc_mbs_replica(&l, 4), 3);
    CU_ASSERT_EQUAL(oc_mbs_min(&l), 3);
    CU_ASSERT_EQUAL(oc_layout_num_micro_batches(&l), 12); /* the most */
    char b[160];
    oc_layout_format(&l, b, sizeof b);
    CU_ASSERT_STRING_EQUAL(b, "tp1-pp1-dp5-mb2-1f1b-mbs=12x2/4x2/3");
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_mbs_check(&l, &st), 0);
    struct oc_layout back;
    oc_layout_default(&back);
    CU_ASSERT_EQUAL_FATAL(oc_layout_parse(&back, b, &st), 0);
    back.global_batch = l.global_batch, back.seq_length = l.seq_length;
    CU_ASSERT_EQUAL(oc_layout_cmp_except(&back, &l, 0), 0);
    /* no part: even, G/(d*b) each */
    struct oc_layout e = lay("tp1-pp1-dp4-mb2", 64);
    CU_ASSERT_FALSE(oc_mbs_on(&e));
    CU_ASSERT_EQUAL(oc_mbs_replica(&e, 3), 8);
}

static void refused(const char *s, int64_t G, const char *needle)
{
    struct oc_layout l;
    struct oc_status st = {{0}};
    oc_layout_default(&l);
    if (oc_layout_parse(&l, s, &st) == 0) {
        l.global_batch = G;
        CU_ASSERT_EQUAL(oc_mbs_check(&l, &st), -1);
    }
    oc_test_msg_has(st.msg, needle);
}

static void test_rules(void)
{
    struct oc_layout l;
    struct oc_status st = {{0}};
    oc_layout_default(&l);
    CU_ASSERT_EQUAL(oc_mbs_parse(&l, "0/4", &st), -1);
    oc_test_msg_has(st.msg, "a replica's count is 0");
    CU_ASSERT_EQUAL(oc_mbs_parse(&l, "12//4", &st), -1);
    oc_test_msg_has(st.msg, "expected counts joined by '/'");
    CU_ASSERT_EQUAL(oc_mbs_parse(&l, "3x", &st), -1);
    CU_ASSERT_EQUAL(oc_mbs_parse(&l, "1/2/1/2/1/2/1/2/1/2/1/2/1/2/1/2/1", &st), -1);
    oc_test_msg_has(st.msg, "more than 16 runs");
    refused("tp1-pp1-dp3-mbs=12/4", 16, "names 2 replicas, DP is 3");
    refused("tp1-pp1-dp2-mbs=12/5", 16, "17 micro-batches x micro-batch size 1 = 17 "
                                        "sequences, not the global batch 16");
    refused("tp1-pp1-dp2-mbs=8x2", 16, "is the even split");
    refused("tp1-pp2-dp2-v2-mbs=9/7", 16, "multiple of PP 2 (9 is not)");
    refused("tp1-pp1-dp2-zero2-mbs=12/4", 16, "ZeRO-2 reduces");
}

/* Forward micro-batches of rank r's compute ops (distinct). */
static int64_t fwd_mbs(const struct oc_schedule *s, int64_t r)
{
    int64_t most = -1, n = 0;
    for (int64_t i = 0; i < s->ranks[r].n; i++) {
        const struct oc_op *o = &s->ranks[r].ops[i];
        if (o->kind == OC_OP_COMPUTE && o->phase == OC_PHASE_FWD && o->mb > most)
            most = o->mb, n++;
    }
    return n;
}

static void test_schedule_per_replica(void)
{
    struct oc_model m;
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_model_load("gpt-50m", &m, &st), st.msg);
    /* tp-dp-pp: ranks 0, 1 are stage 0 of replicas 0, 1; ranks 2, 3 stage 1 */
    const struct oc_layout l = lay("tp1-pp2-dp2-mbs=3/1", 4);
    struct oc_schedule s;
    struct oc_schedule_opts o = {OC_GRAIN_CHUNK, 1, NULL};
    oc_test_expect_ok(oc_schedule_build(&s, &m, &l, &o, &st), st.msg);
    CU_ASSERT_EQUAL(fwd_mbs(&s, 0), 3);
    CU_ASSERT_EQUAL(fwd_mbs(&s, 2), 3);
    CU_ASSERT_EQUAL(fwd_mbs(&s, 1), 1);
    CU_ASSERT_EQUAL(fwd_mbs(&s, 3), 1);
    oc_schedule_free(&s);
}

/* Two one-GPU nodes, group 1's device every rate / 3 of group 0's;
 * communication free (as tests/test_hetero.c's two_groups). */
static struct oc_topology one_and_third(void)
{
    struct oc_topology t;
    memset(&t, 0, sizeof t);
    strcpy(t.name, "one-and-third");
    t.gpus_per_node = 1;
    t.nics_per_node = 1;
    t.switch_levels = 1;
    t.oversubscription = 1;
    t.n_groups = 2;
    for (int g = 0; g < 2; g++) {
        struct oc_node_group *ng = &t.groups[g];
        const double k = g ? 3.0 : 1.0;
        const struct oc_device d = {"H100-like", 989e12 / k, 80e9, 3.35e12 / k, 132, 0.75};
        snprintf(ng->name, sizeof ng->name, "g%d", g);
        ng->nodes = 1;
        ng->device = d;
        ng->intra_bandwidth_Bps = 1e20;
        ng->nic_bandwidth_Bps = 1e20;
    }
    oc_topology_groups_compose(&t);
    return t;
}

static struct oc_metrics *sim(const struct oc_model *m, const struct oc_topology *t,
                              const struct oc_layout *l)
{
    struct oc_metrics *mt = calloc(1, sizeof *mt);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mt);
    struct oc_replay_opts o;
    memset(&o, 0, sizeof o);
    o.fidelity = OC_SIM_FAST;
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_replay_run_forked(m, t, l, &o, mt, 120.0, &st), st.msg);
    return mt;
}

static void test_speed_closed_form(void)
{
    struct oc_model m;
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_model_load("gpt-50m", &m, &st), st.msg);
    m.tie_word_embeddings = 0; /* no embedding all-reduce */
    const struct oc_topology t = one_and_third();
    struct oc_layout even = lay("tp1-pp1-dp2-mb4", 64); /* 16 micro-batches */
    /* each replica's seconds per micro-batch on its device (pp1: its one
     * stage, embedding and head included); the rates / 3 make it about
     * 3x (a per-kernel launch cost does not scale: cost_overhead.h) */
    double p[2];
    oc_mbs_periods(&m, &even, &t, p);
    CU_ASSERT_TRUE(p[1] > 2.6 * p[0] && p[1] < 3.0 * p[0]);
    /* speeds 1/p: quotas 16 p1/(p0+p1) in (11.6, 12) and the rest: 12/4 */
    struct oc_layout speed = even;
    oc_test_expect_ok(oc_mbs_speed(&speed, &m, &t, &st), st.msg);
    CU_ASSERT_EQUAL(oc_mbs_replica(&speed, 0), 12);
    CU_ASSERT_EQUAL(oc_mbs_replica(&speed, 1), 4);
    oc_test_expect_ok(oc_layout_validate(&speed, &m, &t, 2, &st), st.msg);
    struct oc_metrics *ev = sim(&m, &t, &even), *sp = sim(&m, &t, &speed);
    /* the step is max over replicas of m_r x p_r (pp1: no fill or
     * drain), then the gradient all-reduce (free links: its reduction)
     * and the optimizer of the replica that finishes last */
    const double want_even = 8 * p[1], want_speed = fmax(12 * p[0], 4 * p[1]);
    const double tail_even = ev->step_time_s - want_even, tail_speed = sp->step_time_s - want_speed;
    CU_ASSERT_TRUE(tail_even >= 0 && tail_even < 0.05 * want_even);
    CU_ASSERT_TRUE(tail_speed >= 0 && tail_speed < 0.05 * want_speed);
    /* the same tail (the A100-like replica finishes last in both) */
    OC_ASSERT_REL(tail_speed, tail_even, 1e-3);
    CU_ASSERT_TRUE(ev->step_time_s / sp->step_time_s > 1.8);
    /* the bounds: below, and the groups' one counts each replica's own m */
    struct oc_bound b;
    oc_bound_step(&m, &speed, &t, &b);
    CU_ASSERT_TRUE(b.step_s <= sp->step_time_s);
    const double bg = oc_bound_groups_s(&m, &speed, &t);
    CU_ASSERT_TRUE(bg <= sp->step_time_s);
    OC_ASSERT_REL(bg, 0.999 * want_speed, 1e-9);
    free(ev);
    free(sp);
}

/* On like devices the speed split is the even one: the layout unchanged. */
static void test_uniform_is_even(void)
{
    struct oc_model m;
    struct oc_topology t;
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_model_load("gpt-50m", &m, &st), st.msg);
    oc_test_expect_ok(oc_topology_load("dgx-h100", &t, &st), st.msg);
    const struct oc_layout l = lay("tp8-pp2-dp4-mb1", 64);
    struct oc_layout s = l;
    oc_test_expect_ok(oc_mbs_speed(&s, &m, &t, &st), st.msg);
    CU_ASSERT_EQUAL(memcmp(&s, &l, sizeof s), 0);
}

static CU_TestInfo tests[] = {
    {"largest-remainder apportionment", test_apportion},
    {"label part", test_label},
    {"rules", test_rules},
    {"schedule per replica", test_schedule_per_replica},
    {"speed split and its closed form", test_speed_closed_form},
    {"uniform cluster: even", test_uniform_is_even},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"mbsplit", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
