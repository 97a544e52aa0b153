/* test_nccl.c: NCCL's latency and protocol terms (core/nccl_model.h) against
 * values worked by hand from NCCL 2.18's tables (src/graph/tuning.cc, as
 * transcribed in core/nccl_model.c), the closed form that takes the cheapest
 * protocol, the simulator's collectives under opts.nccl against that
 * closed form (sim/coll.c), and the topology fields that switch them on
 * (NCCL's achieved NVLink bandwidth, the "nccl" section). Test platform:
 * sim_fixtures.h (Bi = 100e9, li = 2e-6, Bn = 25e9, ln = 4e-6). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <string.h>

#include "closed_form.h"
#include "nccl_model.h"
#include "sim_fixtures.h"
#include "test_util.h"
#include "topology.h"

/* Latency: baseLat + steps x max(0, hwLat - route latency).
 * Ring, 14 NVLink steps whose route already pays 1 us:
 *   LL     6.6 + 14 x max(0, 0.6 - 1)  =  6.6 us
 *   LL128  14  + 14 x (1.9 - 1)        = 26.6 us
 *   Simple 8.4 + 14 x (3.4 - 1)        = 42.0 us
 * Ring, 4 network steps of route 4 us: LL 6.6 (2.7 < 4), LL128 14.0
 * (4.0 - 4 = 0), Simple 8.4 + 4 x 10 = 48.4 us.
 * Tree, 2 NVLink steps of 2 us and 2 network steps of 6 us, Simple:
 *   0 + 2 x (28 - 2) + 2 x (50 - 6) = 140 us. */
static void test_latency_tables(void)
{
    struct oc_nccl_steps s = {OC_NCCL_RING, 14, 0, 1e-6, 0};
    OC_ASSERT_REL(oc_nccl_latency_s(&s, OC_NCCL_LL), 6.6e-6, 1e-12);
    OC_ASSERT_REL(oc_nccl_latency_s(&s, OC_NCCL_LL128), 26.6e-6, 1e-12);
    OC_ASSERT_REL(oc_nccl_latency_s(&s, OC_NCCL_SIMPLE), 42.0e-6, 1e-12);
    s = (struct oc_nccl_steps){OC_NCCL_RING, 0, 4, 0, 4e-6};
    OC_ASSERT_REL(oc_nccl_latency_s(&s, OC_NCCL_LL), 6.6e-6, 1e-12);
    OC_ASSERT_REL(oc_nccl_latency_s(&s, OC_NCCL_LL128), 14.0e-6, 1e-12);
    OC_ASSERT_REL(oc_nccl_latency_s(&s, OC_NCCL_SIMPLE), 48.4e-6, 1e-12);
    s = (struct oc_nccl_steps){OC_NCCL_TREE, 2, 2, 2e-6, 6e-6};
    OC_ASSERT_REL(oc_nccl_latency_s(&s, OC_NCCL_SIMPLE), 140e-6, 1e-12);
    /* bytes on the wire per byte of data: 1 / NCCL's bandwidth factor */
    OC_ASSERT_REL(oc_nccl_wire(OC_NCCL_LL, OC_NCCL_RING), 4.0, 1e-15);
    OC_ASSERT_REL(oc_nccl_wire(OC_NCCL_LL128, OC_NCCL_RING), 1.0 / 0.92, 1e-15);
    OC_ASSERT_REL(oc_nccl_wire(OC_NCCL_SIMPLE, OC_NCCL_RING), 1.0, 1e-15);
    OC_ASSERT_REL(oc_nccl_wire(OC_NCCL_SIMPLE, OC_NCCL_TREE), 1.0 / 0.92, 1e-15);
    CU_ASSERT_EQUAL(oc_nccl_ring_steps(OC_COLL_ALLREDUCE, 8), 14);
    CU_ASSERT_EQUAL(oc_nccl_ring_steps(OC_COLL_ALLGATHER, 8), 7);
    CU_ASSERT_STRING_EQUAL(oc_nccl_proto_name(OC_NCCL_LL128), "LL128");
}

/* The A100 rows of validation/nccl_allreduce_busbw_8gpu.csv by hand: 8
 * GPUs, NCCL's NVLink 3 figure 240e9 B/s, route latency 1 us, reductions
 * free. S = 1 MiB = 1048576:
 *   LL     6.6 us + 14 us + 1.75 x 4S/240e9 (30.583 us)        = 51.18 us
 *   LL128  26.6 us + 14 us + 1.75 x S/0.92/240e9 (8.3107 us)    = 48.911 us
 *   Simple 42.0 us + 14 us + 1.75 x S/240e9 (7.6459 us)         = 63.65 us
 * LL128 wins: 48.9107 us, nccl-tests busbw 1.75 S / t = 37.52 GB/s
 * (measured 36.22). S = 8 GiB: Simple, 56 us + 1.75 x 8589934592/240e9
 * = 56e-6 + 0.06263493973 s (busbw 239.8 GB/s, measured 231.58). Without
 * NCCL's terms: the plain ring. */
static void test_ring_closed_form(void)
{
    enum oc_nccl_proto p;
    const double S = 1048576;
    const double t = oc_nccl_ring_s(1, OC_COLL_ALLREDUCE, 8, S, 240e9, 1e-6, 0, 0, &p);
    CU_ASSERT_EQUAL(p, OC_NCCL_LL128);
    OC_ASSERT_REL(t, 26.6e-6 + 14e-6 + 1.75 * S / 0.92 / 240e9, 1e-12);
    OC_ASSERT_REL(t, 48.9107e-6, 1e-5);
    OC_ASSERT_REL(oc_busbw_allreduce(8, S, t) / 1e9, 37.517, 1e-4);
    const double G = 8589934592.0;
    const double big = oc_nccl_ring_s(1, OC_COLL_ALLREDUCE, 8, G, 240e9, 1e-6, 0, 0, &p);
    CU_ASSERT_EQUAL(p, OC_NCCL_SIMPLE);
    OC_ASSERT_REL(big, 56e-6 + 0.06263493973, 1e-9);
    CU_ASSERT_EQUAL(oc_nccl_ring_s(0, OC_COLL_ALLREDUCE, 8, S, 240e9, 1e-6, 0, 0, &p),
                    oc_cf_ring_allreduce_s(8, S, 240e9, 1e-6, 0));
    CU_ASSERT_EQUAL(p, OC_NCCL_SIMPLE);
    /* a reduce-scatter plus an all-gather pay the latency twice: more
     * than the all-reduce of the same bytes */
    const double rs = oc_nccl_ring_s(1, OC_COLL_REDUCESCATTER, 8, S, 240e9, 1e-6, 0, 0, NULL);
    const double ag = oc_nccl_ring_s(1, OC_COLL_ALLGATHER, 8, S, 240e9, 1e-6, 0, 0, NULL);
    CU_ASSERT(rs + ag > t);
}

/* The simulator under opts.nccl against the closed form, and by hand.
 * One node of 8 (Bi, li = 2 us), S = 1.84e6 (S/0.92 = 2e6 bytes exactly):
 *   LL128  14 us + 0 (1.9 < 2) + 1.75 x 2e6/1e11 (35 us) + 14 x 2 us = 77.0 us
 *   Simple 8.4 + 14 x 1.4 = 28 us + 32.2 us + 28 us              = 88.2 us
 *   LL     6.6 us + 1.75 x 7.36e6/1e11 (128.8 us) + 28 us        = 163.4 us
 * -> LL128, 77 us. Eight nodes of one GPU (Bn, ln = 4 us), S = 1e9:
 *   Simple 8.4 + 14 x (14 - 4) = 148.4 us + 1.75e9/25e9 + 14 x 4 us
 *          = 0.0702044 s; LL128 0.0761 s -> Simple. */
static void test_sim_matches(void)
{
    struct oc_topology one = topo(8, 1, 1, 1), spread = topo(1, 1, 1, 1);
    struct job j = {.topo = &one, .cards = 8, .kind = JOB_ALLREDUCE, .n = 8,
                    .bytes = 1.84e6, .opts = {.algo = OC_SIM_ALGO_RING, .nccl = 1}};
    const double s1 = sim_time(&j);
    OC_ASSERT_REL(s1, 77.0e-6, REL);
    OC_ASSERT_REL(s1, oc_nccl_ring_s(1, OC_COLL_ALLREDUCE, 8, 1.84e6, BI, LI, 0, 0, NULL), REL);
    j.opts.nccl = 0;
    OC_ASSERT_REL(sim_time(&j), oc_cf_ring_allreduce_s(8, 1.84e6, BI, LI, 0), REL);
    j = (struct job){.topo = &spread, .cards = 8, .kind = JOB_ALLREDUCE, .n = 8,
                     .bytes = 1e9, .opts = {.algo = OC_SIM_ALGO_RING, .nccl = 1}};
    const double s8 = sim_time(&j);
    OC_ASSERT_REL(s8, 0.0702044, REL);
    OC_ASSERT_REL(s8, oc_nccl_ring_s(1, OC_COLL_ALLREDUCE, 8, 1e9, BN, LN, 0, 1, NULL), REL);
    /* the estimate the automatic choice compares holds the same terms */
    j.kind = JOB_ESTIMATE;
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(sim(&j, &r, &st), 0);
    OC_ASSERT_REL(r.estimate_s, 0.0702044, REL);
}

/* The two-level ring under NCCL's terms: 2 nodes of 2 GPUs (topo(2, 2)),
 * S = 3.68e6 (S/0.92 = 4e6), reductions free. NCCL's steps: 2(L-1) = 2 on
 * NVLink (route 2 us), 2(M-1) = 2 on the network (route 4 us).
 *   plain(X) = 2 (X/2/Bi + li) + 2 (1/2)(X/2)/Bn + 2 ln
 *   LL128  14 + 0 + 0 us + plain(4e6) = 14 + 44 + 88 = 146.0 us
 *   Simple 8.4 + 2 x 1.4 + 2 x 10 = 31.2 us + plain(3.68e6) (122.4 us)
 *          = 153.6 us
 *   LL     6.6 us + plain(14.72e6) (453.6 us) = 460.2 us
 * -> LL128, 146 us, simulated and estimated alike. */
static void test_hier(void)
{
    struct oc_topology t = topo(2, 2, 1, 1);
    struct job j = {.topo = &t, .cards = 4, .kind = JOB_ALLREDUCE, .n = 4, .bytes = 3.68e6,
                    .opts = {.algo = OC_SIM_ALGO_HIER, .nccl = 1}};
    OC_ASSERT_REL(sim_time(&j), 146.0e-6, REL);
    j.kind = JOB_ESTIMATE;
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(sim(&j, &r, &st), 0);
    OC_ASSERT_REL(r.estimate_s, 146.0e-6, REL);
}

/* The shipped DGX A100 file: NCCL's NVLink 3 figure, 12 links x 20 GB/s,
 * and the NCCL section; an achieved rate above the line rate is refused. */
static void test_topology_fields(void)
{
    struct oc_topology t;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("dgx-a100", &t, &st), 0);
    OC_ASSERT_REL(oc_topology_intra_Bps(&t), 12 * 20e9, 1e-12);
    OC_ASSERT_REL(t.intra_bandwidth_Bps, 300e9, 1e-12);
    CU_ASSERT(t.nccl_version > 0);
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("dgx-h100", &t, &st), 0);
    OC_ASSERT_REL(oc_topology_intra_Bps(&t), 18 * 20.6e9, 1e-12);
    t.intra_achieved_Bps = 500e9;
    CU_ASSERT_EQUAL(oc_topology_check(&t, "x.json", &st), -1);
    CU_ASSERT(strstr(st.msg, "intra_node.achieved_Bps") != NULL);
    t.intra_achieved_Bps = 0; /* absent: the line rate */
    OC_ASSERT_REL(oc_topology_intra_Bps(&t), 450e9, 1e-12);
}

static CU_TestInfo tests[] = {
    {"latency tables", test_latency_tables},
    {"ring closed form", test_ring_closed_form},
    {"simulator matches", test_sim_matches},
    {"two-level ring", test_hier},
    {"topology fields", test_topology_fields},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"nccl", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
