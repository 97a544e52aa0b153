/* test_sim_collective.c: the collectives as messages (sim/collective.c,
 * sim/coll_*.c) against closed forms worked out by hand below, the
 * automatic choice of an algorithm and the algorithm names. Every
 * simulation runs in a child through oc_sim_fork_run: SimGrid allows one
 * engine per process. The test platform (topo(): Bi, li, Bn, ln) and the
 * jobs are in sim_fixtures.h; the platform itself is tested in
 * test_sim_platform.c, the engine's inputs and failures in
 * test_sim_engine_inputs.c.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "closed_form.h"
#include "collective.h"
#include "engine.h"
#include "sim_fixtures.h"
#include "test_util.h"
#include "topology.h"

/* ---- ring collectives against the closed forms -------------------------- */

/* Ring all-reduce of N = 8 on one node (hop: li, Bi) and on 8 nodes of one
 * GPU (hop: ln, Bn); oc_cf_ring_allreduce_s = 2(N-1)/N*S/B + 2(N-1)*l.
 * By hand, one node, S = 1e6: 1.75e6/1e11 + 14*2e-6 = 17.5e-6 + 28e-6
 * = 45.5e-6 s; 8 nodes, S = 1e9: 1.75e9/25e9 + 14*4e-6 = 0.070056 s. */
static void test_ring_allreduce(void)
{
    struct oc_topology one = topo(8, 1, 1, 1), spread = topo(1, 1, 1, 1);
    const double sizes[2] = {1e6, 1e9};
    for (int i = 0; i < 2; i++) {
        struct job j = {.topo = &one, .cards = 8, .kind = JOB_ALLREDUCE, .n = 8,
                        .bytes = sizes[i], .opts = {.algo = OC_SIM_ALGO_RING}};
        OC_ASSERT_REL(sim_time(&j), oc_cf_ring_allreduce_s(8, sizes[i], BI, LI, 0), REL);
        j.topo = &spread;
        OC_ASSERT_REL(sim_time(&j), oc_cf_ring_allreduce_s(8, sizes[i], BN, LN, 0), REL);
    }
    OC_ASSERT_REL(oc_cf_ring_allreduce_s(8, 1e6, BI, LI, 0), 45.5e-6, 1e-9);
    OC_ASSERT_REL(oc_cf_ring_allreduce_s(8, 1e9, BN, LN, 0), 0.070056, 1e-9);
}

/* All-gather and reduce-scatter, N = 8: (N-1)/N*S/B + (N-1)*l. By hand on
 * 8 nodes, S = 1e6: 0.875e6/25e9 + 7*4e-6 = 35e-6 + 28e-6 = 63e-6 s. */
static void test_ring_allgather_reducescatter(void)
{
    struct oc_topology one = topo(8, 1, 1, 1), spread = topo(1, 1, 1, 1);
    const double sizes[2] = {1e6, 1e9};
    for (int i = 0; i < 2; i++) {
        struct job j = {.topo = &spread, .cards = 8, .kind = JOB_ALLGATHER, .n = 8,
                        .bytes = sizes[i]};
        OC_ASSERT_REL(sim_time(&j), oc_cf_ring_allgather_s(8, sizes[i], BN, LN), REL);
        j.kind = JOB_REDUCESCATTER;
        OC_ASSERT_REL(sim_time(&j), oc_cf_ring_reducescatter_s(8, sizes[i], BN, LN, 0), REL);
        j.topo = &one;
        OC_ASSERT_REL(sim_time(&j), oc_cf_ring_reducescatter_s(8, sizes[i], BI, LI, 0), REL);
    }
    OC_ASSERT_REL(oc_cf_ring_allgather_s(8, 1e6, BN, LN), 63e-6, 1e-9);
}

/* Coarse mode: one message + sleeps equals the message-level ring on these
 * uncontended uniform rings (collective.h), for all three collectives and
 * for the hierarchical all-reduce (2 nodes x 4, 4 NICs). */
static void test_coarse_matches(void)
{
    struct oc_topology spread = topo(1, 1, 1, 1), two = topo(4, 4, 1, 1);
    const enum job_kind kinds[3] = {JOB_ALLREDUCE, JOB_ALLGATHER, JOB_REDUCESCATTER};
    const double sizes[2] = {1e6, 1e9};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 2; i++) {
            struct job j = {.topo = &spread, .cards = 8, .kind = kinds[k], .n = 8,
                            .bytes = sizes[i], .opts = {.algo = OC_SIM_ALGO_RING}};
            double fine = sim_time(&j);
            j.opts.coarse = 1;
            double coarse = sim_time(&j);
            OC_ASSERT_REL(coarse, fine, REL);
        }
    struct job h = {.topo = &two, .cards = 8, .kind = JOB_ALLREDUCE, .n = 8,
                    .bytes = 1e9, .opts = {.algo = OC_SIM_ALGO_HIER}};
    double fine = sim_time(&h);
    h.opts.coarse = 1;
    OC_ASSERT_REL(sim_time(&h), fine, REL);
}

/* Coarse mode is refused where hops differ: a flat ring over 2 nodes x 4
 * mixes NVLink and NIC hops, so coarse must give the message-level time
 * (equal to the bit), not l_max-based sleeps. */
static void test_coarse_falls_back(void)
{
    struct oc_topology two = topo(4, 1, 1, 1);
    struct job j = {.topo = &two, .cards = 8, .kind = JOB_ALLREDUCE, .n = 8,
                    .bytes = 1e8, .opts = {.algo = OC_SIM_ALGO_RING}};
    double fine = sim_time(&j);
    j.opts.coarse = 1;
    CU_ASSERT_EQUAL(sim_time(&j), fine);
}

/* Hierarchical all-reduce, 2 nodes (M = 2) x 4 GPUs (L = 4), 4 NICs per
 * node so the 4 inter-node rings do not share a NIC:
 *   intra reduce-scatter  (L-1)/L*S/Bi + (L-1)*li
 *   inter all-reduce      2(M-1)/M*(S/L)/Bn + 2(M-1)*ln
 *   intra all-gather      (L-1)/L*S/Bi + (L-1)*li
 * S = 1e9: 2*(0.75e9/1e11 + 3*2e-6) + (2.5e8/25e9 + 2*4e-6)
 *        = 2*7.506e-3 + 10.008e-3 = 0.025020 s
 * S = 1e6: 2*(7.5e-6 + 6e-6) + (10e-6 + 8e-6) = 45e-6 s */
static void test_hier_allreduce(void)
{
    struct oc_topology two = topo(4, 4, 1, 1);
    struct job j = {.topo = &two, .cards = 8, .kind = JOB_ALLREDUCE, .n = 8,
                    .bytes = 1e9, .opts = {.algo = OC_SIM_ALGO_HIER}};
    OC_ASSERT_REL(sim_time(&j), 0.025020, REL);
    j.bytes = 1e6;
    OC_ASSERT_REL(sim_time(&j), 45e-6, REL);
    /* The same sums from the closed-form functions. */
    OC_ASSERT_REL(2 * oc_cf_ring_reducescatter_s(4, 1e9, BI, LI, 0) +
                      oc_cf_ring_allreduce_s(2, 1e9 / 4, BN, LN, 0),
                  0.025020, 1e-9);
    /* The flat ring on the same GPUs is slower: every step waits on a NIC
     * hop, 14*(ln + 1.25e8/25e9) = 0.070056 s. */
    j.bytes = 1e9;
    j.opts.algo = OC_SIM_ALGO_RING;
    OC_ASSERT_REL(sim_time(&j), 0.070056, REL);
}

/* Tree all-reduce, 4 nodes x 1 GPU, S = 1e6 in one chunk, l = ln, B = Bn.
 * Tree: node 0 has children 1 and 2, node 1 has child 3.
 *   reduce:    3->1 and 2->0 at once on disjoint links  l + S/B
 *              then 1->0                                 l + S/B
 *   broadcast: 0->1 and 0->2 share node 0's NIC          l + 2S/B
 *              then 1->3                                 l + S/B
 * total 4l + 5S/B = 16e-6 + 5*40e-6 = 216e-6 s. */
static void test_tree_allreduce(void)
{
    struct oc_topology spread = topo(1, 1, 1, 1);
    struct job j = {.topo = &spread, .cards = 4, .kind = JOB_ALLREDUCE, .n = 4,
                    .bytes = 1e6,
                    .opts = {.algo = OC_SIM_ALGO_TREE, .chunk_bytes = 1e6}};
    OC_ASSERT_REL(sim_time(&j), 216e-6, REL);
}

/* The nine (algorithm, kind) pairs of the closed-form tests. */
static const struct {
    enum oc_sim_algo algo;
    enum oc_coll_kind coll;
    enum job_kind job;
} pairs[9] = {
    {OC_SIM_ALGO_RING, OC_COLL_ALLREDUCE, JOB_ALLREDUCE},
    {OC_SIM_ALGO_RING, OC_COLL_REDUCESCATTER, JOB_REDUCESCATTER},
    {OC_SIM_ALGO_RING, OC_COLL_ALLGATHER, JOB_ALLGATHER},
    {OC_SIM_ALGO_HIER, OC_COLL_ALLREDUCE, JOB_ALLREDUCE},
    {OC_SIM_ALGO_HIER, OC_COLL_REDUCESCATTER, JOB_REDUCESCATTER},
    {OC_SIM_ALGO_HIER, OC_COLL_ALLGATHER, JOB_ALLGATHER},
    {OC_SIM_ALGO_TREE, OC_COLL_ALLREDUCE, JOB_ALLREDUCE},
    {OC_SIM_ALGO_TREE, OC_COLL_REDUCESCATTER, JOB_REDUCESCATTER},
    {OC_SIM_ALGO_TREE, OC_COLL_ALLGATHER, JOB_ALLGATHER},
};

/* Every pair on 2 nodes x 2 GPUs, 2 NICs a node, S = 4e6 in chunks of 1e6,
 * reductions at mem_Bps: the simulation, the estimate from the group's
 * measured hops and, for the rings, the coarse mode all give want_s[i]. */
static void check_pairs(double mem_Bps, const double want_s[9])
{
    struct oc_topology t = topo(2, 2, 1, 1);
    for (size_t i = 0; i < 9; i++) {
        struct job j = {.topo = &t, .cards = 4, .kind = pairs[i].job, .n = 4, .bytes = 4e6,
                        .opts = {.algo = pairs[i].algo, .chunk_bytes = 1e6,
                                 .reduce_Bps = mem_Bps}};
        OC_ASSERT_REL(sim_time(&j), want_s[i], REL);
        j.kind = JOB_ESTIMATE;
        j.coll = pairs[i].coll;
        struct job_result r;
        struct oc_status st = {{0}};
        CU_ASSERT_EQUAL_FATAL(sim(&j, &r, &st), 0);
        OC_ASSERT_REL(r.estimate_s, want_s[i], REL);
        /* the coarse rings give the same on these equal hops */
        if (pairs[i].algo != OC_SIM_ALGO_TREE) {
            j.kind = pairs[i].job;
            j.opts.coarse = 1;
            OC_ASSERT_REL(sim_time(&j), want_s[i], REL);
        }
    }
}

/* Every algorithm and collective kind against its closed form
 * (core/closed_form.h), 2 nodes x 2 GPUs with 2 NICs per node (GPU g uses
 * NIC g % 2), S = 4e6 in C = 4 pipeline chunks of 1e6. No two flows share
 * a link: the flat ring's two NIC hops leave by NIC 1 and enter by NIC 0,
 * the hierarchical rings across nodes use NIC 0 (members 0, 2) and NIC 1
 * (1, 3), the tree's one tree hop joins the leaders 0 and 2. Hops: li =
 * 2e-6 s, Bi = 100e9 in a node; ln = 4e-6 s, Bn = 25e9 across. By hand:
 *   ring  all-reduce 2*(3/4)*4e6/25e9 + 6*4e-6           = 264e-6 s
 *         reduce-scatter = all-gather (3/4)*4e6/25e9 + 3*4e-6
 *                                                        = 132e-6 s
 *   hier  reduce-scatter = all-gather: in the node (1/2)*4e6/1e11 + 2e-6
 *         = 22e-6, across (1/2)*2e6/25e9 + 4e-6 = 44e-6  =  66e-6 s
 *         all-reduce = reduce-scatter + all-gather       = 132e-6 s
 *   tree  per chunk a chain hop 2e-6 + 1e6/1e11 = 12e-6, a tree hop
 *         4e-6 + 1e6/25e9 = 44e-6; a pipelined phase over the deepest
 *         path (3 -> 2 -> 0): 12e-6 + 44e-6 + 3*44e-6    = 188e-6 s;
 *         scatter or gather: the tree hop carries node 1's two shards,
 *         4e-6 + 2e6/25e9 = 84e-6, its chain hop one, 12e-6: 96e-6 s;
 *         all-reduce 2*188e-6                            = 376e-6 s
 *         reduce-scatter = all-gather 188e-6 + 96e-6     = 284e-6 s
 * The simulation, the closed-form functions and the estimate from the
 * group's measured hops all give these; the three algorithms differ. */
static void test_closed_forms(void)
{
    const struct oc_cf_levels v = {2, 2, BI, LI, BN, LN, 0};
    const double S = 4e6;
    const double want[9] = {264e-6, 132e-6, 132e-6, 132e-6, 66e-6, 66e-6,
                            376e-6, 284e-6, 284e-6};
    const double cf[9] = {
        oc_cf_ring_allreduce_s(4, S, BN, LN, 0), oc_cf_ring_reducescatter_s(4, S, BN, LN, 0),
        oc_cf_ring_allgather_s(4, S, BN, LN),    oc_cf_hier_allreduce_s(&v, S),
        oc_cf_hier_reducescatter_s(&v, S),       oc_cf_hier_allgather_s(&v, S),
        oc_cf_tree_allreduce_s(&v, S, 4),        oc_cf_tree_reducescatter_s(&v, S, 4),
        oc_cf_tree_allgather_s(&v, S, 4),
    };
    for (size_t i = 0; i < 9; i++)
        OC_ASSERT_REL(cf[i], want[i], 1e-9);
    check_pairs(0, want);
}

/* The reductions (collective.h), memory at M = 20 GB/s, on the group and
 * S of test_closed_forms, against the closed forms with mem_Bps M, worked
 * by hand in test_closed_form.c's test_reduction: ring AR 582e-6, RS
 * 450e-6, AG 132e-6; hier AR 516e-6, RS 450e-6, AG 66e-6; tree AR
 * 1138e-6, RS 1046e-6, AG 284e-6. At an H100's 3.35 TB/s the transfers
 * hide every reduction: the times are those without, to the bit. On 8
 * nodes x 1 (uniform hops) the coarse ring charges the same reductions
 * as the message-level one (7 reduce steps of 1.25e8 bytes: 5.004e-3 s
 * moving, 18.75e-3 s reducing; 7 all-gather steps of 5.004e-3 s). */
static void test_reductions(void)
{
    const double M = 20e9;
    const double want[9] = {582e-6, 450e-6, 132e-6, 516e-6, 450e-6, 66e-6,
                            1138e-6, 1046e-6, 284e-6};
    const double free_s[9] = {264e-6, 132e-6, 132e-6, 132e-6, 66e-6, 66e-6,
                              376e-6, 284e-6, 284e-6};
    check_pairs(M, want);
    struct oc_topology t = topo(2, 2, 1, 1);
    for (size_t i = 0; i < 9; i++) {
        struct job j = {.topo = &t, .cards = 4, .kind = pairs[i].job, .n = 4, .bytes = 4e6,
                        .opts = {.algo = pairs[i].algo, .chunk_bytes = 1e6,
                                 .reduce_Bps = 3.35e12}};
        const double gpu = sim_time(&j);
        OC_ASSERT_REL(gpu, free_s[i], REL);
        j.opts.reduce_Bps = 0;
        CU_ASSERT_EQUAL(gpu, sim_time(&j));
    }
    struct oc_topology spread = topo(1, 1, 1, 1);
    struct job j = {.topo = &spread, .cards = 8, .kind = JOB_ALLREDUCE, .n = 8, .bytes = 1e9,
                    .opts = {.algo = OC_SIM_ALGO_RING, .reduce_Bps = M}};
    const double fine = sim_time(&j);
    OC_ASSERT_REL(fine, oc_cf_ring_allreduce_s(8, 1e9, BN, LN, M), REL);
    OC_ASSERT_REL(fine, 7 * 18.75e-3 + 7 * 5.004e-3, 1e-9);
    j.opts.coarse = 1;
    OC_ASSERT_REL(sim_time(&j), fine, REL);
}

/* Chain broadcast, 4 GPUs of one node, S = 4e6 in C = 4 chunks of 1e6:
 * (N-1 + C-1) * (li + 1e6/Bi) = 6 * (2e-6 + 10e-6) = 72e-6 s. */
static void test_broadcast(void)
{
    struct oc_topology one = topo(4, 1, 1, 1);
    struct job j = {.topo = &one, .cards = 4, .kind = JOB_BROADCAST, .n = 4,
                    .bytes = 4e6, .opts = {.chunk_bytes = 1e6}};
    OC_ASSERT_REL(sim_time(&j), 72e-6, REL);
}

/* Point-to-point gpu0 -> gpu5 on 2 nodes x 4: ln + S/Bn = 4e-6 + 1e6/25e9
 * = 44e-6 s. A receiver expecting another size gets an error. */
static void test_p2p(void)
{
    struct oc_topology two = topo(4, 1, 1, 1);
    struct job j = {.topo = &two, .cards = 8, .kind = JOB_P2P, .n = 2,
                    .ranks = {0, 5}, .have_ranks = 1, .bytes = 1e6, .recv_bytes = 1e6};
    OC_ASSERT_REL(sim_time(&j), 44e-6, 1e-9);
    j.recv_bytes = 2e6;
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(sim(&j, &r, &st), 0);
    CU_ASSERT_EQUAL(r.failed, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.msg, "1000000 bytes sent"));
}

/* An all-reduce started asynchronously overlaps compute: one node of 8,
 * the ring takes 45.5e-6 s (test_ring_allreduce); with 1e-4 s of compute
 * the member is done at 1e-4 s, with 1e-5 s at 45.5e-6 s. */
static void test_async_overlap(void)
{
    struct oc_topology one = topo(8, 1, 1, 1);
    struct job j = {.topo = &one, .cards = 8, .kind = JOB_ASYNC, .n = 8, .bytes = 1e6,
                    .compute_s = 1e-4, .opts = {.algo = OC_SIM_ALGO_RING}};
    OC_ASSERT_REL(sim_time(&j), 1e-4, REL);
    j.compute_s = 1e-5;
    OC_ASSERT_REL(sim_time(&j), 45.5e-6, REL);
}

/* CM02 caps a flow at TCP-gamma / (2 * route latency), 4 MiB / 2 ms =
 * 2.1e9 B/s by default on a route of 1 ms: the engine turns the cap off
 * (network/TCP-gamma:0), so 1e8 bytes over a NIC route with 1e-3 s NIC
 * latency take ln + S/Bn = (1e-3 + 1e-6) + 1e8/25e9 = 5.001e-3 s, not
 * about 0.049 s. */
static void test_no_tcp_window_cap(void)
{
    struct oc_topology far = topo(1, 1, 1, 1);
    far.nic_latency_s = 1e-3;
    struct job j = {.topo = &far, .cards = 2, .kind = JOB_P2P, .n = 2,
                    .bytes = 1e8, .recv_bytes = 1e8};
    OC_ASSERT_REL(sim_time(&j), 5.001e-3, REL);
}

/* Same simulation twice: the same time to the last bit (a pipelined tree
 * and the flat ring over shared NICs: many events, contention). */
static void test_determinism(void)
{
    struct oc_topology two = topo(4, 1, 1, 1);
    struct job j = {.topo = &two, .cards = 8, .kind = JOB_ALLREDUCE, .n = 8,
                    .bytes = 3.3e7, .repeat = 3,
                    .opts = {.algo = OC_SIM_ALGO_TREE, .chunk_bytes = 1e6}};
    double a = sim_time(&j), b = sim_time(&j);
    CU_ASSERT(memcmp(&a, &b, sizeof a) == 0);
    j.opts.algo = OC_SIM_ALGO_RING;
    a = sim_time(&j);
    b = sim_time(&j);
    CU_ASSERT(memcmp(&a, &b, sizeof a) == 0);
    CU_ASSERT(a > 0);
}

/* ---- automatic choice and names ----------------------------------------- */

static enum oc_sim_algo choose(const struct oc_topology *t, int64_t cards, int64_t n,
                               double bytes)
{
    struct job j = {.topo = t, .cards = cards, .kind = JOB_CHOOSE, .n = n, .bytes = bytes};
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(sim(&j, &r, &st), 0);
    return (enum oc_sim_algo)r.algo;
}

/* Estimates (collective.c), by hand:
 * 8 nodes x 1, S = 1e3: ring 14*(4e-6 + 125/25e9) = 56.07e-6 s; tree
 *   (1 chunk, depth log2 8 = 3) 2*3*(4e-6 + 2*1e3/25e9) = 24.48e-6 s: tree.
 * 8 nodes x 1, S = 1e9: ring 0.070056 s; tree 64 chunks of 15.6e6,
 *   2*(3+63)*(4e-6 + 2*15.6e6/25e9) = 0.165 s: ring.
 * 2 nodes x 4 (4 NICs), S = 1e9: ring 0.070056 s, hier 0.025020 s,
 *   rails (test_nvls_rails.c) 14 x max(2e-6 + 0.75 x 1.25e8/1e11,
 *   4e-6 + 1.25e8/(4 x 25e9)) = 0.017556 s: rails.
 * 1 node x 8: ring whatever the size. */
static void test_auto_choice(void)
{
    struct oc_topology spread = topo(1, 1, 1, 1), two = topo(4, 4, 1, 1),
                       one = topo(8, 1, 1, 1);
    CU_ASSERT_EQUAL(choose(&spread, 8, 8, 1e3), OC_SIM_ALGO_TREE);
    CU_ASSERT_EQUAL(choose(&spread, 8, 8, 1e9), OC_SIM_ALGO_RING);
    CU_ASSERT_EQUAL(choose(&two, 8, 8, 1e9), OC_SIM_ALGO_RAILS);
    CU_ASSERT_EQUAL(choose(&one, 8, 8, 1e3), OC_SIM_ALGO_RING);
    CU_ASSERT_EQUAL(choose(&one, 8, 8, 1e9), OC_SIM_ALGO_RING);
}

static enum oc_sim_algo choose_kind(const struct oc_topology *t, int64_t cards, int64_t n,
                                    enum oc_coll_kind coll, enum oc_sim_algo asked,
                                    double bytes)
{
    struct job j = {.topo = t, .cards = cards, .kind = JOB_CHOOSE, .n = n, .bytes = bytes,
                    .coll = coll, .opts = {.algo = asked}};
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(sim(&j, &r, &st), 0);
    return (enum oc_sim_algo)r.algo;
}

/* The estimate of one algorithm (forced) for `coll` of `bytes`. */
static double estimate(const struct oc_topology *t, int64_t n, enum oc_coll_kind coll,
                       enum oc_sim_algo algo, double bytes)
{
    struct job j = {.topo = t, .cards = n, .kind = JOB_ESTIMATE, .n = n, .bytes = bytes,
                    .coll = coll, .opts = {.algo = algo}};
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(sim(&j, &r, &st), 0);
    return r.estimate_s;
}

/* Both sides of the ring/tree crossover, 8 nodes x 1 (every hop LN = 4e-6
 * s, BN = 25e9 B/s), sizes under 512 KiB (one tree chunk). The tree's
 * depth is log2 8 = 3 and a leader's two child nodes share its NIC, so
 * every tree hop carries twice its bytes (the fan-in of closed_form.h):
 *   all-reduce  ring 14*(LN + S/(8*BN)) = 56e-6 + 7e-11*S
 *               tree 2*3*(LN + 2*S/BN)  = 24e-6 + 4.8e-10*S
 *               equal at S = 32e-6/4.1e-10 = 78 048.8 bytes;
 *     S = 78 000: ring 61.46e-6, tree 61.44e-6 s: tree;
 *     S = 78 100: ring 61.467e-6, tree 61.488e-6 s: ring.
 *   reduce-scatter and all-gather
 *               ring 7*(LN + S/(8*BN))  = 28e-6 + 3.5e-11*S
 *               tree reduce (or broadcast) 3*(LN + 2*S/BN) plus the
 *               scatter (or gather) down 0-1-3-7, whose hops carry 4, 2
 *               and 1 shards of S/8: 3*LN + 2*7*(S/8)/BN
 *                                       = 24e-6 + 3.1e-10*S
 *               equal at S = 4e-6/2.75e-10 = 14 545.5 bytes;
 *     S = 14 500: ring 28.5075e-6, tree 28.495e-6 s: tree;
 *     S = 14 600: ring 28.511e-6, tree 28.526e-6 s: ring.
 * With the fan-in taken as 1 the crossovers would move to 188 235 and
 * 33 333 bytes, and the tree would win above both. */
static void test_auto_crossover(void)
{
    struct oc_topology spread = topo(1, 1, 1, 1);
    const enum oc_sim_algo au = OC_SIM_ALGO_AUTO, ring = OC_SIM_ALGO_RING,
                           tree = OC_SIM_ALGO_TREE;
    const enum oc_coll_kind ar = OC_COLL_ALLREDUCE;
    OC_ASSERT_REL(estimate(&spread, 8, ar, ring, 78000), 61.46e-6, 1e-9);
    OC_ASSERT_REL(estimate(&spread, 8, ar, tree, 78000), 61.44e-6, 1e-9);
    OC_ASSERT_REL(estimate(&spread, 8, ar, ring, 78100), 61.467e-6, 1e-9);
    OC_ASSERT_REL(estimate(&spread, 8, ar, tree, 78100), 61.488e-6, 1e-9);
    CU_ASSERT_EQUAL(choose_kind(&spread, 8, 8, ar, au, 78000), tree);
    CU_ASSERT_EQUAL(choose_kind(&spread, 8, 8, ar, au, 78100), ring);
    const enum oc_coll_kind zero[2] = {OC_COLL_REDUCESCATTER, OC_COLL_ALLGATHER};
    for (int k = 0; k < 2; k++) {
        OC_ASSERT_REL(estimate(&spread, 8, zero[k], ring, 14500), 28.5075e-6, 1e-9);
        OC_ASSERT_REL(estimate(&spread, 8, zero[k], tree, 14500), 28.495e-6, 1e-9);
        OC_ASSERT_REL(estimate(&spread, 8, zero[k], ring, 14600), 28.511e-6, 1e-9);
        OC_ASSERT_REL(estimate(&spread, 8, zero[k], tree, 14600), 28.526e-6, 1e-9);
        CU_ASSERT_EQUAL(choose_kind(&spread, 8, 8, zero[k], au, 14500), tree);
        CU_ASSERT_EQUAL(choose_kind(&spread, 8, 8, zero[k], au, 14600), ring);
    }
}

/* The choice for reduce-scatter and all-gather (ZeRO's), estimates by hand:
 * 2 nodes x 4 (4 NICs), S = 1e9: ring 7/8*1e9/25e9 + 7*4e-6 = 0.035028 s;
 *   hier 0.75e9/1e11 + 3*2e-6 + 0.5*2.5e8/25e9 + 4e-6 = 0.012510 s;
 *   rails 7 x max(2e-6 + 0.75 x 1.25e8/1e11, 4e-6 + 1.25e8/(4 x 25e9))
 *   = 0.008778 s: rails.
 * 8 nodes x 1, S = 1e3: ring 7*(4e-6 + 125/25e9) = 28.035e-6 s; hier (one
 *   member per node) is the ring and loses the tie; tree, one chunk, depth
 *   3, a leader's two child nodes sharing its NIC (each tree hop charged
 *   twice its bytes): reduce 3*(4e-6 + 2*1e3/25e9) = 12.24e-6, then the
 *   scatter down the deepest path 0-1-3-7, whose hops carry the shards of
 *   4, 2 and 1 nodes (125 bytes each): 3*4e-6 + 2*7*125/25e9 = 12.07e-6;
 *   24.31e-6 s: tree. S = 1e9: the tree's pipelined reduce alone takes
 *   (3+63)*(4e-6 + 2*15.6e6/25e9) = 0.083 s: ring.
 * Forced: inside one node the tree serves only all-reduce, the two-level
 * ring has one level (the flat ring), and no algorithm but the ring
 * broadcasts: the ring runs there. */
static void test_auto_choice_kinds(void)
{
    struct oc_topology spread = topo(1, 1, 1, 1), two = topo(4, 4, 1, 1),
                       one = topo(8, 1, 1, 1);
    const enum oc_coll_kind zero[2] = {OC_COLL_REDUCESCATTER, OC_COLL_ALLGATHER};
    const enum oc_sim_algo au = OC_SIM_ALGO_AUTO;
    for (int k = 0; k < 2; k++) {
        CU_ASSERT_EQUAL(choose_kind(&two, 8, 8, zero[k], au, 1e9), OC_SIM_ALGO_RAILS);
        CU_ASSERT_EQUAL(choose_kind(&spread, 8, 8, zero[k], au, 1e3), OC_SIM_ALGO_TREE);
        CU_ASSERT_EQUAL(choose_kind(&spread, 8, 8, zero[k], au, 1e9), OC_SIM_ALGO_RING);
        CU_ASSERT_EQUAL(choose_kind(&one, 8, 8, zero[k], au, 1e3), OC_SIM_ALGO_RING);
        CU_ASSERT_EQUAL(choose_kind(&one, 8, 8, zero[k], OC_SIM_ALGO_TREE, 1e3),
                        OC_SIM_ALGO_RING);
        CU_ASSERT_EQUAL(choose_kind(&one, 8, 8, zero[k], OC_SIM_ALGO_HIER, 1e3),
                        OC_SIM_ALGO_RING);
        CU_ASSERT_EQUAL(choose_kind(&two, 8, 8, zero[k], OC_SIM_ALGO_TREE, 1e9),
                        OC_SIM_ALGO_TREE);
    }
    CU_ASSERT_EQUAL(choose_kind(&one, 8, 8, OC_COLL_ALLREDUCE, OC_SIM_ALGO_TREE, 1e3),
                    OC_SIM_ALGO_TREE);
    CU_ASSERT_EQUAL(choose_kind(&two, 8, 8, OC_COLL_BROADCAST, OC_SIM_ALGO_HIER, 1e3),
                    OC_SIM_ALGO_RING);
    /* a forced algorithm that does not apply has no estimate */
    struct job j = {.topo = &one, .cards = 8, .kind = JOB_ESTIMATE, .n = 8, .bytes = 1e3,
                    .coll = OC_COLL_ALLGATHER, .opts = {.algo = OC_SIM_ALGO_TREE}};
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(sim(&j, &r, &st), 0);
    CU_ASSERT_EQUAL(r.estimate_s, -1);
}

static void test_algo_names(void)
{
    struct oc_status st = {{0}};
    enum oc_sim_algo a = OC_SIM_ALGO_AUTO;
    const char *names[] = {"auto", "ring", "tree", "hier", "nvls", "rails"};
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_EQUAL(oc_sim_algo_from_name(names[i], &a, &st), 0);
        CU_ASSERT_EQUAL(a, (enum oc_sim_algo)i);
        CU_ASSERT_STRING_EQUAL(oc_sim_algo_name(a), names[i]);
    }
    CU_ASSERT_EQUAL(oc_sim_algo_from_name("butterfly", &a, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "butterfly"));
}

static CU_TestInfo tests[] = {
    {"ring all-reduce", test_ring_allreduce},
    {"ring all-gather, reduce-scatter", test_ring_allgather_reducescatter},
    {"coarse equals message level", test_coarse_matches},
    {"coarse falls back on mixed rings", test_coarse_falls_back},
    {"hierarchical all-reduce", test_hier_allreduce},
    {"tree all-reduce", test_tree_allreduce},
    {"every algorithm and kind = closed form", test_closed_forms},
    {"reductions = closed form", test_reductions},
    {"chain broadcast", test_broadcast},
    {"point-to-point", test_p2p},
    {"async overlap", test_async_overlap},
    {"no TCP window cap", test_no_tcp_window_cap},
    {"determinism", test_determinism},
    {"automatic choice", test_auto_choice},
    {"automatic choice, reduce-scatter and all-gather", test_auto_choice_kinds},
    {"automatic choice both sides of the ring/tree crossover", test_auto_crossover},
    {"algorithm names", test_algo_names},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sim_collective", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
