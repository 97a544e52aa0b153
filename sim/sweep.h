/* sweep.h: simulate many layouts in parallel, one SimGrid engine per child
 * process (SimGrid runs once per process), and hand each result back as it
 * finishes, so a caller can write its CSV row at once and an interrupted
 * sweep keeps what it finished.
 *
 *   static void done(void *ctx, int64_t i, const struct oc_metrics *mt,
 *                    const char *err) { ...write row i... }
 *   struct oc_sweep_opts so = { .jobs = 2, .replay = ro, .on_done = done };
 *   oc_sweep_run(layouts, n, &model, &topo, &so, &st);
 *
 * Workers: `jobs` processes, each taking the next layout index (handed
 * out in order, while opts.more agrees) from a shared pipe and running it in a fresh child (oc_replay_run_forked); the
 * parent collects results with poll(2) in finishing order.
 *
 * Many machines: under an MPI launcher (mpirun, srun; sim/sweep_mpi.h),
 * rank 0's oc_sweep_run also hands layouts to the job slots of the other
 * ranks, in the same index order and through the same opts.more (only
 * rank 0 decides); `jobs` then counts rank 0's own workers, and at most
 * all the ranks' slots are out at once. on_done, the return value and the
 * stop are as here; a serving rank lost mid-sweep fails its layouts in
 * flight. A process may call oc_sweep_run many times.
 *
 * Stopping: with opts.stop_fd, the sweep stops as soon as that descriptor
 * becomes readable (the read end of a pipe a SIGINT/SIGTERM handler writes
 * a byte to: a flag alone could be set just before poll sleeps). It then
 * kills every worker and its simulation (SIGKILL to the worker's process
 * group), reaps them all, and returns 1; the results handed to on_done
 * before are the sweep's finished part, nothing after. Each worker has a
 * process group of its own, so a Ctrl-C at the terminal reaches only the
 * caller, which decides; and on Linux a worker dies with its parent
 * (PR_SET_PDEATHSIG) and the caller reaps the orphaned simulations
 * (PR_SET_CHILD_SUBREAPER, for the sweep's duration): no zombies, no
 * SimGrid left running.
 *
 * Test hooks (environment, read by oc_sweep_run; for the tests of an
 * interrupted or failing sweep, tests/sweep_interrupt.sh):
 *   OCSIM_TEST_SWEEP_DELAY_MS=N  every simulation starts N ms late, so
 *                                that a sweep is surely mid-run;
 *   OCSIM_TEST_SWEEP_KILL=I,J    the simulations of layouts I and J (0-based
 *                                indices into `layouts`) die by SIGKILL, as
 *                                a child the kernel's OOM killer took.
 */
#ifndef OC_SIM_SWEEP_H
#define OC_SIM_SWEEP_H

#include <stdint.h>

#include "layout.h"
#include "metrics.h"
#include "model.h"
#include "replay.h"
#include "status.h"
#include "topology.h"

/* Called in the parent for each layout as it finishes: mt on success, or
 * NULL and err (one line) when its simulation failed. */
typedef void (*oc_sweep_done_fn)(void *ctx, int64_t index,
                                 const struct oc_metrics *mt, const char *err);

/* Asked in the parent before layout `next` is handed out (they are handed
 * out in index order, at most `jobs` ahead of the results): positive to
 * hand it out, negative to pass over it (the caller settles it: no
 * on_done comes for it), 0 to hand out no more (those out still finish
 * and reach on_done; the sweep then returns 0). */
typedef int (*oc_sweep_more_fn)(void *ctx, int64_t next);

/* Asked before each hand-out, ahead of the next new index: a layout the
 * caller passed over earlier in this sweep (more < 0) that it now wants
 * simulated, or -1 (none now). `waiting` tells whether one may still come
 * (from a result in flight): the hand-out stays open while it says so,
 * after the last new index. Both NULL: none. */
typedef int64_t (*oc_sweep_extra_fn)(void *ctx);
typedef int (*oc_sweep_waiting_fn)(void *ctx);

struct oc_sweep_opts {
    int jobs;                     /* parallel simulations; <= 0: online cores */
    double wall_limit_s;          /* per layout; 0: none */
    struct oc_replay_opts replay;
    oc_sweep_done_fn on_done;
    oc_sweep_more_fn more;        /* NULL: every layout */
    oc_sweep_extra_fn extra;      /* NULL: none */
    oc_sweep_waiting_fn waiting;  /* NULL: none */
    void *ctx;                    /* of on_done, more, extra and waiting */
    const int *stop_fd;           /* readable: stop (see above); NULL: never */
};

/* Returns 0 when every layout handed out was attempted (some may have
 * failed: see on_done; all of them unless `more` stopped the hand-out), 1 when stop_fd stopped it (every process it started is gone),
 * -1 with st->msg when the sweep itself could not run. */
int oc_sweep_run(const struct oc_layout *layouts, int64_t n,
                 const struct oc_model *m, const struct oc_topology *t,
                 const struct oc_sweep_opts *o, struct oc_status *st);

#endif
