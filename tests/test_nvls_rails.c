/* test_nvls_rails.c: NCCL's NVLS all-reduce inside a node (sim/coll_nvls.c)
 * and its multi-rail ring across nodes (sim/coll_rails.c): their closed
 * forms (core/closed_form.h) against values worked by hand, the simulator
 * against the closed forms where no two flows share a link, NCCL's terms
 * for NVLS and the ring's split of steps (core/nccl_model.h), the
 * automatic choice, the bound's NVLS term (core/bound.h) and the topology
 * field. Test platform: sim_fixtures.h (Bi = 100e9, li = 2e-6, Bn = 25e9,
 * ln = 4e-6). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <string.h>

#include "bound.h"
#include "closed_form.h"
#include "nccl_model.h"
#include "sim_fixtures.h"
#include "test_util.h"
#include "topology.h"

/* NVLS, one node of 8, S = 1e6: each member sends S + S/8 and receives as
 * much over its own link: 9/8 x 1e6/1e11 + 2e-6 = 11.25 + 2 = 13.25 us
 * (the ring: 1.75e6/1e11 + 14 x 2e-6 = 45.5 us). N = 2: 3/2 x S/B + l. */
static void test_nvls_closed_form(void)
{
    OC_ASSERT_REL(oc_cf_nvls_allreduce_s(8, 1e6, BI, LI), 13.25e-6, 1e-12);
    OC_ASSERT_REL(oc_cf_nvls_allreduce_s(2, 1e6, BI, LI), 15e-6 + 2e-6, 1e-12);
    CU_ASSERT_EQUAL(oc_cf_nvls_allreduce_s(1, 1e6, BI, LI), 0);
}

/* The simulated NVLS (one exchange of 9/56 S to each other member; S =
 * 5.6e6 makes it 900000 bytes exactly) equals the closed form, 9/8 x
 * 5.6e6/1e11 + 2e-6 = 65 us; with NCCL's terms: Simple only, S x 6/5 on
 * the wire and 25 us less the route's 2 us: 9/8 x 6.72e6/1e11 + 2 + 23 =
 * 100.6 us. Forced without a switch that reduces (opts.nvls 0), the ring
 * runs: 1.75 x 5.6e6/1e11 + 14 x 2e-6 = 126 us. */
static void test_nvls_sim(void)
{
    struct oc_topology one = topo(8, 1, 1, 1);
    struct job j = {.topo = &one, .cards = 8, .kind = JOB_ALLREDUCE, .n = 8, .bytes = 5.6e6,
                    .opts = {.algo = OC_SIM_ALGO_NVLS, .nvls = 1}};
    OC_ASSERT_REL(sim_time(&j), 65e-6, REL);
    OC_ASSERT_REL(oc_cf_nvls_allreduce_s(8, 5.6e6, BI, LI), 65e-6, 1e-12);
    j.bytes = 5.6e9;
    OC_ASSERT_REL(sim_time(&j), oc_cf_nvls_allreduce_s(8, 5.6e9, BI, LI), REL);
    j.bytes = 5.6e6;
    j.opts.nccl = 1;
    OC_ASSERT_REL(sim_time(&j), 100.6e-6, REL);
    j.kind = JOB_ESTIMATE;
    j.coll = OC_COLL_ALLREDUCE;
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(sim(&j, &r, &st), 0);
    OC_ASSERT_REL(r.estimate_s, 100.6e-6, REL);
    j.kind = JOB_ALLREDUCE;
    j.opts = (struct oc_sim_coll_opts){.algo = OC_SIM_ALGO_NVLS, .nvls = 0};
    OC_ASSERT_REL(sim_time(&j), 126e-6, REL);
}

/* Multi-rail ring, 2 nodes x 4 GPUs with 4 NICs (GPU g on NIC g), N = 8,
 * L = 4, S = 8e6, chunk c = S/N = 1e6. A step sends 3/4 c to the node
 * neighbour and c/4 across, at once:
 *   max(2e-6 + 0.75e6/1e11, 4e-6 + 0.25e6/25e9) = max(9.5, 14) = 14 us
 *   all-reduce 14 steps = 196 us; reduce-scatter = all-gather 7 x 14 = 98 us
 * (the two-level ring: 66 + 88 + 66 = 220 us; the flat ring 616 us).
 * With reductions at M = 20e9 each reduce-scatter step waits for 3c/M =
 * 150 us less the 14 us the step hid: 136 us more, 7 of them:
 *   all-reduce 196 + 952 = 1148 us, reduce-scatter 98 + 952 = 1050 us. */
static void test_rails_closed_form(void)
{
    struct oc_cf_levels v = {4, 2, BI, LI, BN, LN, 0};
    OC_ASSERT_REL(oc_cf_rails_allreduce_s(&v, 8e6), 196e-6, 1e-9);
    OC_ASSERT_REL(oc_cf_rails_reducescatter_s(&v, 8e6), 98e-6, 1e-9);
    OC_ASSERT_REL(oc_cf_rails_allgather_s(&v, 8e6), 98e-6, 1e-9);
    OC_ASSERT_REL(oc_cf_hier_allreduce_s(&v, 8e6), 220e-6, 1e-9);
    v.mem_Bps = 20e9;
    OC_ASSERT_REL(oc_cf_rails_allreduce_s(&v, 8e6), 1148e-6, 1e-9);
    OC_ASSERT_REL(oc_cf_rails_reducescatter_s(&v, 8e6), 1050e-6, 1e-9);
}

/* The simulated multi-rail ring against its closed form, every kind, with
 * and without reductions, message by message and coarse (the NIC hop is
 * the slower in latency and bandwidth: the coarse ring is exact). */
static void test_rails_sim(void)
{
    struct oc_topology two = topo(4, 4, 1, 1);
    const enum job_kind kinds[3] = {JOB_ALLREDUCE, JOB_REDUCESCATTER, JOB_ALLGATHER};
    const double want[2][3] = {{196e-6, 98e-6, 98e-6}, {1148e-6, 1050e-6, 98e-6}};
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 3; k++)
            for (int coarse = 0; coarse < 2; coarse++) {
                struct job j = {.topo = &two, .cards = 8, .kind = kinds[k], .n = 8,
                                .bytes = 8e6,
                                .opts = {.algo = OC_SIM_ALGO_RAILS, .coarse = coarse,
                                         .reduce_Bps = m ? 20e9 : 0}};
                OC_ASSERT_REL(sim_time(&j), want[m][k], REL);
            }
}

static enum oc_sim_algo choose(const struct oc_topology *t, int64_t n, double bytes,
                               int nvls)
{
    struct job j = {.topo = t, .cards = n, .kind = JOB_CHOOSE, .n = n, .bytes = bytes,
                    .opts = {.nvls = nvls}};
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(sim(&j, &r, &st), 0);
    return (enum oc_sim_algo)r.algo;
}

/* Automatic choice: one node of 8 with a switch that reduces, 1e9 bytes:
 * NVLS 11.252 ms against the ring's 17.528 ms; without it the ring. Two
 * nodes of 4 (4 NICs), S = 8e6: rails 196 us, hier 220 us: rails (11 %
 * faster). S = 5.5e6, by the closed forms above: rails 14 x (4 us + S/8 /
 * 1e11) = 152.25 us, hier 6 x (2 us + S/4 / 1e11) + 2 x (4 us + S/8 /
 * 25e9) = 157.5 us: rails 3.3 % faster, under OC_COLL_RAILS_MARGIN: hier. */
static void test_auto(void)
{
    struct oc_topology one = topo(8, 1, 1, 1), two = topo(4, 4, 1, 1);
    CU_ASSERT_EQUAL(choose(&one, 8, 1e9, 1), OC_SIM_ALGO_NVLS);
    CU_ASSERT_EQUAL(choose(&one, 8, 1e9, 0), OC_SIM_ALGO_RING);
    CU_ASSERT_EQUAL(choose(&two, 8, 8e6, 0), OC_SIM_ALGO_RAILS);
    CU_ASSERT_EQUAL(choose(&two, 8, 5.5e6, 0), OC_SIM_ALGO_HIER);
}

/* NCCL's split of a ring's steps across nodes: 24 ranks on 3 nodes, an
 * all-reduce's 46 steps are 2 x 3 = 6 on the network and 40 on NVLink; a
 * reduce-scatter's 23 are 2 and 21; one node: none on the network; 2 ranks
 * on 2 nodes: both steps (2 x 2 = 4 capped at 2). */
static void test_split_steps(void)
{
    int64_t nvl, net;
    oc_nccl_split_steps(OC_COLL_ALLREDUCE, 24, 3, &nvl, &net);
    CU_ASSERT(nvl == 40 && net == 6);
    oc_nccl_split_steps(OC_COLL_REDUCESCATTER, 24, 3, &nvl, &net);
    CU_ASSERT(nvl == 21 && net == 2);
    oc_nccl_split_steps(OC_COLL_ALLREDUCE, 8, 1, &nvl, &net);
    CU_ASSERT(nvl == 14 && net == 0);
    oc_nccl_split_steps(OC_COLL_ALLREDUCE, 2, 2, &nvl, &net);
    CU_ASSERT(nvl == 0 && net == 2);
    CU_ASSERT(oc_nccl_proto_ok(OC_NCCL_NVLS, OC_NCCL_SIMPLE));
    CU_ASSERT(!oc_nccl_proto_ok(OC_NCCL_NVLS, OC_NCCL_LL128));
    OC_ASSERT_REL(oc_nccl_wire(OC_NCCL_SIMPLE, OC_NCCL_NVLS), 1.2, 1e-15);
    const struct oc_nccl_steps s = {OC_NCCL_NVLS, 1, 0, 1e-6, 0};
    OC_ASSERT_REL(oc_nccl_latency_s(&s, OC_NCCL_SIMPLE), 24e-6, 1e-12);
}

/* The topology field and the bound: a DGX H100's switch reduces, a DGX
 * A100's does not. The bound of an all-reduce of 1e9 bytes over the 8
 * GPUs of an H100 node is what NVLS must move, 9/8 x 1e9/370.8e9 (the
 * ring's 7/4 on the A100, at 240e9); a reduce-scatter keeps 7/8. */
static void test_topology_and_bound(void)
{
    struct oc_topology h, a;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("dgx-h100", &h, &st), 0);
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("dgx-a100", &a, &st), 0);
    CU_ASSERT_EQUAL(h.intra_nvls, 1);
    CU_ASSERT_EQUAL(a.intra_nvls, 0);
    OC_ASSERT_REL(oc_bound_group_coll_s(&h, 0, 1e9, 8, 8, 1), 1.125e9 / 370.8e9, 1e-12);
    OC_ASSERT_REL(oc_bound_group_coll_s(&a, 0, 1e9, 8, 8, 1), 1.75e9 / 240e9, 1e-12);
    OC_ASSERT_REL(oc_bound_group_coll_s(&h, 1, 1e9, 8, 8, 1), 0.875e9 / 370.8e9, 1e-12);
}

static CU_TestInfo tests[] = {
    {"NVLS closed form", test_nvls_closed_form},
    {"NVLS simulated = closed form, NCCL's terms", test_nvls_sim},
    {"multi-rail ring closed form", test_rails_closed_form},
    {"multi-rail ring simulated = closed form", test_rails_sim},
    {"automatic choice", test_auto},
    {"NCCL's step split and NVLS tables", test_split_steps},
    {"topology field and bound", test_topology_and_bound},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"nvls_rails", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
