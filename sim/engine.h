/* engine.h: start SimGrid for one simulation, create counted actors, run,
 * and run a whole simulation in a forked child process that sends its
 * result back through a pipe. It is not the replay (sim/replay.c) and it
 * holds no model of GPUs or collectives.
 *
 * SimGrid allows one engine per process (a second simgrid_init aborts) and
 * aborts the process on bad input, so every simulation runs in a child:
 *
 *   static int sim(void *arg, struct oc_sim_buf *out, struct oc_status *st)
 *   {   // runs in the child
 *       const struct job *j = arg;
 *       struct oc_sim_engine_opts o = { .topo = &j->topo, .cards = 8,
 *                                       .cfg = j->cfg, .n_cfg = j->n_cfg };
 *       if (oc_sim_engine_init(&o, st) != 0) return -1;
 *       const struct oc_sim_platform *p = oc_sim_engine_platform();
 *       for (int64_t r = 0; r < 8; r++)
 *           oc_sim_actor_create("rank", p->hosts[r], rank_main, &ctx[r]);
 *       if (oc_sim_engine_run(st) != 0) return -1;       // deadlock -> -1
 *       double t = oc_sim_now_s();
 *       oc_sim_buf_append(out, &t, sizeof t);
 *       return 0;
 *   }
 *   ...   // in the parent, which never calls simgrid_init itself:
 *   struct oc_sim_buf res = {0};
 *   if (oc_sim_fork_run(sim, &job, NULL, &res, &st) != 0)
 *       fprintf(stderr, "ocsim: %s\n", st.msg);          // one line
 *   oc_sim_buf_free(&res);
 *
 * Defaults given to SimGrid, each overridden by a user --cfg with the same
 * key (the user's value wins):
 *   network/model:CM02        a message of S bytes on a route with latency
 *                             l and bottleneck B takes l + S/B (the default
 *                             LV08 applies latency and bandwidth factors,
 *                             10% off for 1 GB and 8x off for 1 MB)
 *   network/crosstraffic:0    no ACK traffic in the reverse direction
 *   network/TCP-gamma:0       CM02 otherwise caps a flow at
 *                             TCP-gamma / (2 * latency) (4 MiB by default:
 *                             8 GB/s at 0.25 ms); 0 turns the cap off
 *   contexts/stack-size:256   KiB per actor (1024 in Asan builds)
 *   contexts/guard-size:0     no guard page below an actor's stack (Asan
 *                             builds keep SimGrid's); a canary half-way
 *                             down each stack fails the simulation when
 *                             an actor reaches it (engine.c, trampoline)
 * and logs at "root.thresh:error" unless opts.log says otherwise.
 *
 * Logging. sim/ has one XBT log category per file under the parent
 * category "ocsim", declared once in engine.c: ocsim_engine (this file),
 * ocsim_platform, ocsim_sweep, and those of the replay and the collectives.
 * They trace at DEBUG (what ran, in which process, with which result); a
 * user error is never logged, it comes back as the one-line oc_status
 * message. The settings (xbt log control, several separated by spaces:
 * "ocsim_engine.thres:debug ocsim_sweep.thres:debug", or "ocsim.thres:debug"
 * for all of sim/) are opts.log, else $OCSIM_LOG. They reach SimGrid
 * through simgrid_init's argv, after "root.thresh:error", in the child
 * where the simulation runs; oc_sim_log_setup applies $OCSIM_LOG in a
 * process that never starts SimGrid (the sweep's parent and workers, the
 * parent of oc_sim_fork_run). With $OCSIM_LOG set, oc_sim_fork_run lets the
 * child write to the terminal (as keep_stderr), so the trace is seen.
 */
#ifndef OC_SIM_ENGINE_H
#define OC_SIM_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include <simgrid/forward.h>

#include "platform.h"
#include "status.h"
#include "topology.h"

struct oc_sim_engine_opts {
    /* The platform: a user's XML file when platform_file is set (topo, if
     * given, then only supplies gpus_per_node; 1 without it), else one
     * generated from topo for `cards` GPUs. */
    const struct oc_topology *topo;
    int64_t cards;
    const char *platform_file;
    /* Generated platform only: GPUs that get twins (platform.h), or NULL. */
    const int64_t *twins;
    int64_t ntwins;
    int reduced; /* only the twins' nodes (platform.h) */
    /* SimGrid configuration, each "key:value" or "--cfg=key:value". */
    const char *const *cfg;
    int64_t n_cfg;
    /* xbt log control ("root.thresh:info", several separated by spaces),
     * applied after "root.thresh:error"; NULL: $OCSIM_LOG, and without it
     * SimGrid stays quiet but for errors and critical messages. */
    const char *log;
};

/* $OCSIM_LOG, or NULL when unset or empty. */
const char *oc_sim_log_env(void);
/* Applies $OCSIM_LOG to this process's log categories, once per process.
 * For processes that never call oc_sim_engine_init (which reads it
 * itself); a no-op without $OCSIM_LOG. */
void oc_sim_log_setup(void);

/* Minimal check of one --cfg string before SimGrid sees it: "key:value"
 * (optionally prefixed by "--cfg="), key of [A-Za-z0-9/_.-], non-empty
 * value, no spaces. contexts/nthreads other than 1 is refused (the actor
 * bookkeeping below is not thread-safe). SimGrid still aborts on a key it
 * does not know; in a child that becomes an error line. */
int oc_sim_cfg_check(const char *s, struct oc_status *st);

/* Check of the log settings (opts.log, $OCSIM_LOG) before SimGrid sees
 * them (log_check.c): each space-separated setting CATEGORY.OPTION:VALUE
 * with a known option, a threshold a priority name, an appender's folder
 * present. SimGrid aborts with a backtrace on the settings refused here. */
int oc_sim_log_check(const char *spec, struct oc_status *st);

/* simgrid_init with the defaults above and the user's cfg, then load and
 * seal the platform. Once per process (a second call fails cleanly instead
 * of letting SimGrid abort). */
int oc_sim_engine_init(const struct oc_sim_engine_opts *o, struct oc_status *st);

/* The loaded platform (NULL before oc_sim_engine_init). */
const struct oc_sim_platform *oc_sim_engine_platform(void);

/* Create an actor running fn(arg) on host. Actors created this way are
 * counted, so oc_sim_engine_run can tell that each one returned; use it for
 * every actor, also for helper actors created from inside the simulation
 * (an async collective, a send side stream). name is copied. */
typedef void (*oc_sim_actor_fn)(void *arg);
sg_actor_t oc_sim_actor_create(const char *name, sg_host_t host,
                               oc_sim_actor_fn fn, void *arg);

/* Start fn(arg) in a helper actor on host and go on; oc_sim_async_wait,
 * from an actor, blocks until fn returned and frees the handle. For an
 * async collective or a side stream:
 *
 *   struct oc_sim_async *a = oc_sim_async_start("dp-bucket", host, run_ar, &c);
 *   oc_sim_compute_s(bwd_s);          // overlaps the all-reduce
 *   oc_sim_async_wait(a);             // the replay's OC_OP_WAIT
 *
 * Every handle must be waited for once (an unwaited one leaks; the helper
 * itself is counted like any actor). */
struct oc_sim_async;
struct oc_sim_async *oc_sim_async_start(const char *name, sg_host_t host,
                                        oc_sim_actor_fn fn, void *arg);
void oc_sim_async_wait(struct oc_sim_async *a);

/* Run the simulation to its end. Fails, naming up to four of them, when an
 * actor created by oc_sim_actor_create did not return: SimGrid then found
 * a deadlock (it prints "Deadlock detected" and returns normally). Once per
 * process. */
int oc_sim_engine_run(struct oc_status *st);

/* Simulated time now, seconds. */
double oc_sim_now_s(void);

/* From inside an actor: compute for `seconds` on the actor's host
 * (sg_actor_execute of seconds * host speed; concurrent computations on one
 * host share it). */
void oc_sim_compute_s(double seconds);

/* A growable result buffer: the child appends, the parent reads. */
struct oc_sim_buf {
    unsigned char *data;
    size_t len, cap;
};
void oc_sim_buf_append(struct oc_sim_buf *b, const void *p, size_t n);
void oc_sim_buf_free(struct oc_sim_buf *b);

/* Runs in the child: simulate, append the result to out, return 0; or
 * return -1 with st->msg set (the parent gets that line). */
typedef int (*oc_sim_child_fn)(void *arg, struct oc_sim_buf *out,
                               struct oc_status *st);

struct oc_sim_fork_opts {
    double wall_limit_s; /* kill the child after this much wall time; 0: none */
    int keep_stderr;     /* 1: the child writes to our stdout and stderr
                            (debugging with a log setting; also when
                            $OCSIM_LOG is set); 0: both are read through
                            a pipe and only quoted when the child
                            crashes */
};

/* fork; in the child run fn(arg, &buf, &st) and send rc, st.msg or buf back
 * through a pipe, then _exit. In the parent wait for it and fill out (which
 * must be empty or zeroed). Fails with one line when fn failed, the child
 * crashed (signal or exit code, quoting SimGrid's first critical or error line), left
 * without a result, or ran past the wall limit. NULL opts: defaults. */
int oc_sim_fork_run(oc_sim_child_fn fn, void *arg,
                    const struct oc_sim_fork_opts *opts, struct oc_sim_buf *out,
                    struct oc_status *st);

#endif
