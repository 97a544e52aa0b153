/* sim_fixtures.h: what the suites of sim/ that run simulations share
 * (test_sim_collective, test_sim_platform, test_sim_engine_inputs,
 * test_sim_attribution): the test platform and one simulation job run in
 * a child through oc_sim_fork_run (SimGrid allows one engine per process).
 *
 * Test platform (topo()), numbers picked to keep the hand sums short:
 *   intra node  Bi = 100e9 B/s per direction, li = 2e-6 s GPU to GPU
 *   NIC         Bn = 25e9 B/s per direction, 3e-6 s; fabric 1e-6 s per
 *               switch; one switch level: ln = 3e-6 + 1*1e-6 = 4e-6 s
 *   (two levels: 3e-6 + 3*1e-6 = 6e-6 s)
 *
 *   struct oc_topology t = topo(8, 1, 1, 1);
 *   struct job j = {.topo = &t, .cards = 8, .kind = JOB_ALLREDUCE, .n = 8,
 *                   .bytes = 1e6, .opts = {.algo = OC_SIM_ALGO_RING}};
 *   OC_ASSERT_REL(sim_time(&j), by_hand_s, REL);
 *
 * What it is not: a test; sim and sim_time assert only that the child
 * answered (and sim_time that the job succeeded).
 */
#ifndef OC_SIM_FIXTURES_H
#define OC_SIM_FIXTURES_H

#include <stdint.h>

#include "collective.h"
#include "status.h"
#include "topology.h"

/* Simulated time is deterministic and CM02 gives l + S/B exactly: the
 * closed forms must hold to REL (the plan asks for 1 %; the simulation
 * meets them to rounding, about 1e-15). */
#define REL 1e-6

#define BI 100e9
#define LI 2e-6
#define BN 25e9
#define LN 4e-6


/* gpus_per_node GPUs and nics NICs per node, `levels` switch levels,
 * oversubscription oversub, the links above. */
struct oc_topology topo(int64_t gpus_per_node, int64_t nics,
                        int64_t levels, double oversub);

/* ---- one simulation job, run in a child --------------------------------- */

enum job_kind {
    JOB_ALLREDUCE,
    JOB_ALLGATHER,
    JOB_REDUCESCATTER,
    JOB_BROADCAST,
    JOB_P2P,      /* member 0 sends `bytes` to member 1, which expects recv_bytes */
    JOB_DEADLOCK, /* every member waits for a message nobody sends */
    JOB_CHOOSE,   /* no simulation: the algorithm that runs (coll, opts.algo) */
    JOB_ESTIMATE, /* no simulation: oc_sim_coll_estimate_s (coll, opts.algo) */
    JOB_ABORT,    /* the child crashes */
    JOB_ASYNC,    /* an async all-reduce overlapping compute_s of compute */
};

struct job {
    const struct oc_topology *topo;
    int64_t cards;
    const char *platform_file;
    const char *const *cfg;
    int64_t n_cfg;
    enum job_kind kind;
    int64_t n;         /* group members: ranks 0..n-1 unless ranks given */
    int64_t ranks[16];
    int have_ranks;
    double bytes, recv_bytes;
    int64_t repeat;    /* back-to-back calls (default 1) */
    double compute_s;  /* JOB_ASYNC */
    enum oc_coll_kind coll; /* JOB_CHOOSE, JOB_ESTIMATE (0: all-reduce) */
    struct oc_sim_coll_opts opts;
};

struct job_result {
    double time_s;  /* when the last member finished */
    int32_t failed; /* members whose call returned -1 */
    int32_t algo;   /* JOB_CHOOSE */
    double estimate_s; /* JOB_ESTIMATE */
    char msg[256];  /* first failure */
};

/* Run a job in a child; 0 and *r filled, or -1 and st->msg. */
int sim(const struct job *j, struct job_result *r, struct oc_status *st);
/* A job that must succeed; returns its time. */
double sim_time(const struct job *j);
/* Non-empty and without a newline. */
int one_line(const char *s);

#endif
