/* test_hetero.c: heterogeneous clusters, node groups of unlike devices
 * (core/topology.h "node_groups", core/topology_groups.c, the stage split
 * by each stage's device in core/stage_split.c, core/bound_groups.c and
 * the simulator's per-rank device, sim/replay_setup.c).
 *
 * Worked by hand:
 *   - mixed-h100-a100: ranks 0..31 on the H100 nodes, 32..63 on the A100
 *     nodes; the composite device has H100's 989e12 FLOP/s on 132 SMs
 *     (H100 has both the best per-SM rate, 989e12/132 = 7.49e12 against
 *     312e12/108 = 2.89e12, and the most SMs), H100's 3.35e12 B/s HBM,
 *     A100's efficiency 0.8 (the higher), the smaller memory, H100's
 *     85520809984 bytes, and H100's NVLink 370.8e9 B/s.
 *   - a two-stage 1F1B pipeline, stage 0 on a fast device (per micro-batch
 *     w0 = f0 + b0), stage 1 on a slow one (w1 >= w0), free communication,
 *     no embedding, head or optimizer cost: stage 1 starts when stage 0's
 *     first forward ends (f0) and then never waits (stage 0's forward of
 *     micro-batch j ends at f0 + (j-1)*w1 + w0 <= f0 + j*w1), so it ends
 *     at f0 + m*w1, and stage 0's last backward follows:
 *         step = m*w1 + f0 + b0 = m*w1 + w0.
 *   - two DP replicas, one per device, same conditions: the replicas meet
 *     only in the gradient all-reduce (free), so the step is the slow
 *     replica's m*(f+b) of all layers: the pace of the slowest.
 *   - the split of llama2-70b's 80 layers over 2 stages whose devices run
 *     every kernel 1:3 (peak and HBM divided by 3): stage times f*a and
 *     (80-f)*3a balance at f = 60; the head (about 0.3 of a layer) on the
 *     slow stage adds 0.9a: 60/20 gives max(60a, 60.9a), 61/19 gives 61a,
 *     59/21 63.9a, so 60/20; with the slow device first, 20/60 (60a
 *     against 60.3a; 21/59 gives 63a).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bound.h"
#include "bound_groups.h"
#include "cost.h"
#include "metrics.h"
#include "placement.h"
#include "replay.h"
#include "stage_split.h"
#include "test_util.h"
#include "topology.h"

static struct oc_device h100(void)
{
    struct oc_device d = {"H100-like", 989e12, 80e9, 3.35e12, 132, 0.75};
    return d;
}

static struct oc_device a100(void)
{
    struct oc_device d = {"A100-like", 312e12, 80e9, 2.039e12, 108, 0.8};
    return d;
}

/* Two groups of one node each, gpn GPUs per node, devices d0 then d1;
 * communication free (1e20 B/s, no latency) unless net. */
static struct oc_topology two_groups(int64_t gpn, struct oc_device d0,
                                     struct oc_device d1, int net)
{
    struct oc_topology t;
    memset(&t, 0, sizeof t);
    strcpy(t.name, "two-groups");
    t.gpus_per_node = gpn;
    t.nics_per_node = 1;
    t.switch_levels = 1;
    t.oversubscription = 1;
    t.inter_latency_s = net ? 5e-7 : 0;
    t.n_groups = 2;
    const struct oc_device d[2] = {d0, d1};
    for (int g = 0; g < 2; g++) {
        struct oc_node_group *ng = &t.groups[g];
        snprintf(ng->name, sizeof ng->name, "g%d", g);
        ng->nodes = 1;
        ng->device = d[g];
        ng->intra_bandwidth_Bps = net ? 100e9 : 1e20;
        ng->intra_latency_s = net ? 1e-6 : 0;
        ng->nic_bandwidth_Bps = net ? 25e9 : 1e20;
        ng->nic_latency_s = net ? 2e-6 : 0;
    }
    oc_topology_groups_compose(&t);
    return t;
}

static struct oc_model load_model(const char *name)
{
    struct oc_model m;
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_model_load(name, &m, &st), st.msg);
    return m;
}

static struct oc_layout lay(const char *s, int64_t G, int64_t seq)
{
    struct oc_layout l;
    struct oc_status st = {{0}};
    oc_layout_default(&l);
    CU_ASSERT_EQUAL_FATAL(oc_layout_parse(&l, s, &st), 0);
    l.global_batch = G;
    l.seq_length = seq;
    return l;
}

static struct oc_metrics *sim(const struct oc_model *m, const struct oc_topology *t,
                              const struct oc_layout *l, enum oc_sim_fidelity f, int uniform)
{
    struct oc_metrics *mt = calloc(1, sizeof *mt);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mt);
    struct oc_replay_opts o;
    memset(&o, 0, sizeof o);
    o.fidelity = f;
    o.uniform_stages = uniform;
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_replay_run_forked(m, t, l, &o, mt, 120.0, &st), st.msg);
    return mt;
}

/* f + b of one layer, one micro-batch, on group g's device (the work the
 * replay charges a layer under uniform_stages: forward, backward and
 * recompute, cost.h). */
static double layer_work_s(const struct oc_model *m, const struct oc_layout *l,
                           const struct oc_topology *t, int g)
{
    struct oc_topology v;
    struct oc_cost c;
    oc_topology_group_view(t, g, &v);
    oc_cost_init(&c, m, l, &v);
    double w = 0;
    for (int ph = OC_PHASE_FWD; ph <= OC_PHASE_RECOMPUTE; ph++)
        w += c.part_s[OC_PART_ATTN][ph] + c.part_s[OC_PART_MLP][ph];
    return w;
}

static void test_mixed_file(void)
{
    struct oc_topology t;
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_topology_load("mixed-h100-a100", &t, &st), st.msg);
    CU_ASSERT_EQUAL(t.n_groups, 2);
    CU_ASSERT_EQUAL(oc_topology_group_cards(&t), 64);
    CU_ASSERT_EQUAL(oc_topology_group_of_rank(&t, 0), 0);
    CU_ASSERT_EQUAL(oc_topology_group_of_rank(&t, 31), 0);
    CU_ASSERT_EQUAL(oc_topology_group_of_rank(&t, 32), 1);
    CU_ASSERT_EQUAL(oc_topology_group_of_node(&t, 7), 1);
    CU_ASSERT_STRING_EQUAL(oc_topology_device_of_rank(&t, 5)->name, "H100 SXM5 80GB");
    CU_ASSERT_STRING_EQUAL(oc_topology_device_of_rank(&t, 40)->name, "A100 SXM4 80GB");
    CU_ASSERT_EQUAL(oc_topology_device_of_rank(&t, 63)->sm_count, 108);
    /* the composite (see the head comment) */
    CU_ASSERT_STRING_EQUAL(t.device.name, "H100 SXM5 80GB + A100 SXM4 80GB");
    CU_ASSERT_EQUAL(t.device.peak_flops_16bit, 989e12);
    CU_ASSERT_EQUAL(t.device.sm_count, 132);
    CU_ASSERT_EQUAL(t.device.hbm_bandwidth_Bps, 3.35e12);
    CU_ASSERT_EQUAL(t.device.gemm_efficiency, 0.8);
    CU_ASSERT_EQUAL(t.device.memory_bytes, 85520809984.0);
    CU_ASSERT_EQUAL(oc_topology_intra_Bps(&t), 370.8e9);
    /* a view is the group's node type, uniform */
    struct oc_topology v;
    oc_topology_group_view(&t, 1, &v);
    CU_ASSERT_EQUAL(v.n_groups, 0);
    CU_ASSERT_EQUAL(v.device.peak_flops_16bit, 312e12);
    CU_ASSERT_EQUAL(oc_topology_intra_Bps(&v), 240e9);
    CU_ASSERT_EQUAL(v.nic_bandwidth_Bps, 25e9);
    /* MFU's denominator: 32 of each */
    OC_ASSERT_REL(oc_topology_peak_sum(&t, 64), 32 * 989e12 + 32 * 312e12, 1e-15);
    /* --cards: at most the groups' GPUs */
    CU_ASSERT_EQUAL(oc_topology_check_cards(&t, 64, &st), 0);
    CU_ASSERT_EQUAL(oc_topology_check_cards(&t, 16, &st), 0);
    const char *subs[] = {"--cards 65", "64 GPUs", NULL};
    oc_test_expect_fail(oc_topology_check_cards(&t, 65, &st), st.msg, subs);
}

/* A node group missing its node count, or of 0 nodes: one line naming the
 * field (the CLI's exit 2 is tests/badinput/cases.tsv's). */
static void test_bad_groups(void)
{
    struct oc_topology t;
    struct oc_status st = {{0}};
    static const char head[] =
        "{\"gpus_per_node\": 8, \"nic\": {\"count_per_node\": 1, \"bandwidth_Bps\": 25e9, "
        "\"latency_s\": 1e-6}, \"inter_node\": {\"latency_s\": 1e-7, \"switch_levels\": 1, "
        "\"oversubscription\": 1}, \"node_groups\": [{\"name\": \"a\", %s \"device\": "
        "{\"peak_flops_16bit\": 1e15, \"memory_bytes\": 8e10, \"hbm_bandwidth_Bps\": 3e12, "
        "\"sm_count\": 132, \"gemm_efficiency\": 0.75}, \"intra_node\": {\"bandwidth_Bps\": "
        "4e11, \"latency_s\": 1e-6}}]}";
    char text[1024];
    snprintf(text, sizeof text, head, "\"nodes\": 2,");
    oc_test_expect_ok(oc_topology_parse(text, strlen(text), "g.json", &t, &st), st.msg);
    CU_ASSERT_EQUAL(t.n_groups, 1);
    CU_ASSERT_EQUAL(t.device.peak_flops_16bit, 1e15);
    CU_ASSERT_EQUAL(oc_topology_group_cards(&t), 16);
    snprintf(text, sizeof text, head, "");
    const char *miss[] = {"g.json", "node_groups[0].nodes", "missing", NULL};
    oc_test_expect_fail(oc_topology_parse(text, strlen(text), "g.json", &t, &st), st.msg, miss);
    snprintf(text, sizeof text, head, "\"nodes\": 0,");
    const char *zero[] = {"g.json", "node_groups[0].nodes", "positive", NULL};
    oc_test_expect_fail(oc_topology_parse(text, strlen(text), "g.json", &t, &st), st.msg, zero);
}

/* Two stages, fast then slow: step = m*w1 + w0 (head comment). */
static void test_two_stage_closed_form(void)
{
    struct oc_model mu = load_model("gpt-50m");
    mu.tie_word_embeddings = 0; /* no embedding all-reduce */
    const struct oc_topology t = two_groups(1, h100(), a100(), 0);
    const struct oc_layout l = lay("tp1-pp2-dp1-mb4-1f1b", 32, 1024);
    const double m8 = 8, n = 4; /* micro-batches, layers per stage */
    const double w0 = n * layer_work_s(&mu, &l, &t, 0), w1 = n * layer_work_s(&mu, &l, &t, 1);
    CU_ASSERT_TRUE(w1 > 1.5 * w0); /* A100-like is the slow one */
    for (int f = 0; f < 2; f++) {
        struct oc_metrics *mt = sim(&mu, &t, &l, f ? OC_SIM_FULL : OC_SIM_FAST, 1);
        OC_ASSERT_REL(mt->step_time_s, m8 * w1 + w0, 1e-6);
        /* each stage computes on its own device */
        OC_ASSERT_REL(mt->stage[0].compute_s, m8 * w0, 1e-6);
        OC_ASSERT_REL(mt->stage[1].compute_s, m8 * w1, 1e-6);
        free(mt);
    }
}

/* Two DP replicas on unlike devices run at the pace of the slow one. */
static void test_dp_pace_of_slowest(void)
{
    struct oc_model m = load_model("gpt-50m");
    m.tie_word_embeddings = 0;
    const struct oc_topology t = two_groups(1, h100(), a100(), 0);
    const struct oc_layout l = lay("tp1-pp1-dp2-mb4-1f1b", 32, 1024);
    const double slow = 4 * 8 * layer_work_s(&m, &l, &t, 1); /* m = 4, 8 layers */
    const double fast = 4 * 8 * layer_work_s(&m, &l, &t, 0);
    struct oc_metrics *mt = sim(&m, &t, &l, OC_SIM_FAST, 1);
    /* plus at most the gradient all-reduce (its reduction at HBM speed;
     * the links are free) */
    CU_ASSERT_TRUE(mt->step_time_s >= slow * (1 - 1e-9));
    CU_ASSERT_TRUE(mt->step_time_s <= slow + mt->dp_comm_s * (1 + 1e-9));
    OC_ASSERT_REL(mt->step_time_s, slow, 5e-3);
    CU_ASSERT_TRUE(mt->step_time_s > 1.5 * fast);
    free(mt);
}

/* The bounds stay below the simulation, the groups' one above the
 * composite's on this layout (its compute is the slow stage's). */
static void test_bound_below(void)
{
    const struct oc_model m = load_model("gpt-50m");
    const struct oc_topology t = two_groups(2, h100(), a100(), 1);
    const char *layouts[] = {"tp2-pp2-dp1-mb1-1f1b", "tp1-pp2-dp2-mb1-1f1b",
                             "tp1-pp4-dp1-mb1-1f1b-first2-last2", "tp2-pp1-dp2-mb1-1f1b"};
    for (int i = 0; i < 4; i++) {
        const struct oc_layout l = lay(layouts[i], 16, 1024);
        struct oc_metrics *mt = sim(&m, &t, &l, OC_SIM_FAST, 0);
        struct oc_bound b;
        oc_bound_step(&m, &l, &t, &b);
        const double g = oc_bound_groups_s(&m, &l, &t);
        CU_ASSERT_TRUE(b.step_s <= mt->step_time_s);
        CU_ASSERT_TRUE(g <= mt->step_time_s);
        CU_ASSERT_TRUE(g > 0.5 * mt->step_time_s);
        if (i == 0)
            CU_ASSERT_TRUE(g > b.step_s);
        free(mt);
    }
}

/* Fast mode (TP rank 0 of each group, TP collectives as sleeps from the
 * group's routes) gives the full replay's step where the groups' NVLink
 * differ: each node's TP sleeps from its own links. */
static void test_fast_equals_full(void)
{
    const struct oc_model m = load_model("gpt-50m");
    struct oc_topology t = two_groups(2, h100(), a100(), 1);
    t.groups[1].intra_bandwidth_Bps = 20e9; /* a slow node fabric */
    oc_topology_groups_compose(&t);
    const char *layouts[] = {"tp2-pp2-dp1-mb1-1f1b", "tp2-pp1-dp2-mb1-1f1b"};
    for (int i = 0; i < 2; i++) {
        const struct oc_layout l = lay(layouts[i], 16, 1024);
        struct oc_metrics *a = sim(&m, &t, &l, OC_SIM_FAST, 0);
        struct oc_metrics *b = sim(&m, &t, &l, OC_SIM_FULL, 0);
        OC_ASSERT_REL(a->step_time_s, b->step_time_s, 1e-6);
        free(a);
        free(b);
    }
}

/* 80 layers over two stages whose devices run 1:3 (head comment). */
static void test_split_by_speed(void)
{
    const struct oc_model m = load_model("llama2-70b");
    struct oc_device fast = h100(), slow = h100();
    fast.memory_bytes = slow.memory_bytes = 1e15; /* no memory limit */
    slow.peak_flops_16bit /= 3;
    slow.hbm_bandwidth_Bps /= 3;
    struct oc_layout l = lay("tp8-pp2-dp1-mb1-1f1b", 64, 4096);
    int64_t f[OC_SPLIT_MAX], e[OC_SPLIT_MAX];
    struct oc_topology t = two_groups(8, fast, slow, 1);
    int n = oc_stage_split_options_on(&m, &l, &t, f, e, OC_SPLIT_MAX);
    CU_ASSERT_TRUE_FATAL(n >= 2);
    CU_ASSERT_EQUAL(f[0], 0); /* even first */
    CU_ASSERT_EQUAL(f[1], 60);
    CU_ASSERT_EQUAL(e[1], 20);
    t = two_groups(8, slow, fast, 1);
    n = oc_stage_split_options_on(&m, &l, &t, f, e, OC_SPLIT_MAX);
    CU_ASSERT_TRUE_FATAL(n >= 2);
    CU_ASSERT_EQUAL(f[1], 20);
    CU_ASSERT_EQUAL(e[1], 60);
    /* the slowest device of a stage: stage 0 spans both nodes under
     * tp-pp-dp with dp 2 and pp 1 */
    const double w[2] = {1.0, 3.0};
    struct oc_layout l2 = lay("tp8-pp1-dp2", 16, 4096);
    CU_ASSERT_EQUAL(oc_stage_group_slowest(&t, &l2, w, 0, 1), 1);
}

/* A uniform file written as one node group simulates the same. */
static void test_one_group_same(void)
{
    struct oc_topology plain, grouped;
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_topology_load("h100-100g", &plain, &st), st.msg);
    char path[512];
    snprintf(path, sizeof path, "%s/one-group.json", oc_test_dir);
    oc_test_write_file(path,
        "{\"name\": \"one-group\", \"gpus_per_node\": 8,\n"
        " \"nic\": {\"name\": \"n\", \"count_per_node\": 1, \"bandwidth_Bps\": 12.5e9, \"latency_s\": 2e-6},\n"
        " \"inter_node\": {\"latency_s\": 3e-7, \"switch_levels\": 1, \"oversubscription\": 1},\n"
        " \"nccl\": {\"version\": 2.18},\n"
        " \"node_groups\": [{\"name\": \"h100\", \"nodes\": 4,\n"
        "   \"device\": {\"name\": \"H100 SXM5 80GB\", \"peak_flops_16bit\": 989e12,\n"
        "     \"memory_bytes\": 85520809984, \"hbm_bandwidth_Bps\": 3.35e12, \"sm_count\": 132,\n"
        "     \"gemm_efficiency\": 0.75},\n"
        "   \"intra_node\": {\"name\": \"nv\", \"bandwidth_Bps\": 450e9, \"latency_s\": 1e-6,\n"
        "     \"achieved_Bps\": 370.8e9}}]}\n");
    oc_test_expect_ok(oc_topology_load(path, &grouped, &st), st.msg);
    const struct oc_model m = load_model("tiny");
    const struct oc_layout l = lay("tp4-pp2-dp4-mb1-1f1b", 32, 128);
    for (int f = 0; f < 2; f++) {
        const enum oc_sim_fidelity fid = f ? OC_SIM_SYM : OC_SIM_FAST;
        struct oc_metrics *a = sim(&m, &plain, &l, fid, 0), *b = sim(&m, &grouped, &l, fid, 0);
        CU_ASSERT_EQUAL(a->step_time_s, b->step_time_s);
        CU_ASSERT_EQUAL(a->peak_mem_bytes, b->peak_mem_bytes);
        CU_ASSERT_EQUAL(a->mfu, b->mfu);
        CU_ASSERT_EQUAL(a->exposed_comm_s, b->exposed_comm_s);
        free(a);
        free(b);
    }
}

static int init(void) { return oc_test_dir_make("hetero"); }

static CU_TestInfo tests[] = {
    {"mixed-h100-a100: groups, ranks, composite", test_mixed_file},
    {"bad node groups: one line", test_bad_groups},
    {"two stages on unlike devices: m*w1 + w0", test_two_stage_closed_form},
    {"DP replicas: the pace of the slowest", test_dp_pace_of_slowest},
    {"bounds below the simulation", test_bound_below},
    {"fast mode = full on unlike NVLink", test_fast_equals_full},
    {"split by each stage's device: 60/20", test_split_by_speed},
    {"one group equals the plain file", test_one_group_same},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"hetero", init, oc_test_dir_remove, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
