/* replay.h: simulate one training step of one layout with SimGrid by
 * replaying the schedule core's per-rank op lists (core/schedule.h), and
 * turn the per-op timeline it records (core/timeline.h, returned on
 * request) into the figures of core/metrics.h (core/step_metrics.h). It does not decide what a layout
 * means (core/ does), build the platform (platform.c) or implement the
 * collective algorithms (coll.h, collective.c).
 *
 *   struct oc_replay_opts o = { .fidelity = OC_SIM_FAST };   // all else 0
 *   struct oc_metrics mt;
 *   struct oc_status st = {{0}};
 *   // In a sweep: every simulation in its own child process.
 *   if (oc_replay_run_forked(&model, &topo, &layout, &o, &mt, 60.0, &st) != 0)
 *       fprintf(stderr, "ocsim: %s\n", st.msg);               // one line
 *   printf("%.3f s, bubble %.1f %%\n", mt.step_time_s, 100 * mt.bubble_fraction);
 *
 *   // In a process of its own (SimGrid runs once per process), with the
 *   // schedule and the per-op times:
 *   struct oc_schedule s;  struct oc_timeline tl;
 *   if (oc_replay_run(&model, &topo, &layout, &o, &mt, &s, &tl, &st) == 0) {
 *       ... tl.start_s[r][i], tl.end_s[r][i] for s.ranks[r].ops[i] ...
 *   }
 *   oc_timeline_free(&tl);  oc_schedule_free(&s);   // also after a failure
 *
 * Replay (one SimGrid actor per simulated rank, its ops in order):
 *   COMPUTE     oc_sim_compute_s of oc_cost_op_s (core/cost.h); costs are
 *               computed into arrays before the run.
 *   SEND        oc_sim_send_async on channel "pp", not waited for; the comm
 *               completes at the next WAIT (or the rank's end).
 *   RECV        oc_sim_recv, blocking.
 *   COLLECTIVE  the group's collective, `count` times, with the algorithm
 *               of opts.algo where it applies (collective.h: every kind,
 *               ZeRO's reduce-scatter and all-gather included), else the
 *               ring; AUTO picks per kind and size. Groups are built once
 *               and shared: "tp.<pp>.<dp>", "dp.<tp>.<pp>", "emb.<tp>.<dp>",
 *               and for each async DP bucket (overlap_grad_reduce, one per
 *               model chunk) "dpb<chunk>.<tp>.<pp>", since one member may
 *               not have two collectives of one group in flight. An async
 *               collective runs in a helper actor (oc_sim_async_start).
 *   WAIT        waits for every async collective and send in flight.
 *   ALLOC/FREE  no time.
 *
 * Figures: every op's start and end go into a timeline (core/timeline.h;
 * a SEND ends when its message arrived, an async collective when its
 * helper finished), and core/step_metrics.h derives every figure from it,
 * by the definitions the executor's measurements use too. In a replay a
 * rank's time is all COMPUTE, RECV, blocking collective or WAIT, so for
 * every rank compute_s + exposed_comm_s + bubble_s = step_time_s. A RECV's
 * transfer starts at the later of the send's issue and the receive's post
 * (SimGrid matches sender and receiver before data moves), so its wait
 * before the send was issued is bubble and the rest exposed. Peak memory
 * is the running sum of the ALLOC/FREE ops (no time in the replay); the
 * means per stage are over the simulated ranks.
 *
 * Fidelity:
 *   OC_SIM_FULL  layer-grain schedule, every rank an actor, every
 *       collective through collective.h (opts.algo, opts.coarse).
 *   OC_SIM_FAST  chunk-grain schedule (one compute op per chunk, its TP
 *       collectives merged with a count; under cp > 1 one op per part,
 *       the attention as one merged ring, core/schedule_cp.h), and only
 *       the TP-rank-0
 *       representative of each TP group simulated (the members of a TP
 *       group run identical op lists in lockstep). Its figures stand for
 *       every rank of its group (and its timeline for theirs: tl.proxy).
 *       - TP collectives are not messages but a sleep of their closed form
 *         on the group's hops (route latency and bandwidth between TP
 *         neighbours): the estimate (coll.h) of the algorithm that FULL
 *         would run for that kind and size (inside a node the ring's,
 *         unless one is forced). Exact for a ring inside one node of the
 *         generated platform, where every GPU has its own NVLink link.
 *       - A representative's PP message or DP/embedding collective message
 *         stands for the t identical flows of its TP group: when the hop
 *         crosses nodes its bytes are multiplied by k, the number of
 *         members of the TP group that use the sender's NIC (GPU g uses
 *         NIC g % nics_per_node; the larger of sender's and receiver's
 *         k). Max-min sharing of k equal flows over a NIC equals one flow
 *         of k times the bytes, so this is exact when those flows run at
 *         once on otherwise idle links. Hops inside a node are not scaled
 *         (each GPU has its own link).
 *       - The scaling is used only where it reproduces every link's load:
 *         for each stage, every NIC must carry as many real flows as the
 *         sum of k of the representatives on it, and, when uplinks are
 *         shared (switch_levels > 1 with oversubscription), every node's
 *         uplink too. Otherwise (a TP group across nodes, several NICs
 *         with oversubscribed uplinks, GPUs that do not split evenly over
 *         the NICs) every rank is simulated, unscaled, still at chunk grain
 *         with TP sleeps.
 *       - DP and embedding collectives run the same algorithms as FULL
 *         (the table of coll.h, message for message, chosen as FULL
 *         would), with a transport that scales each hop's sizes.
 *       In the cases it claims (TP inside a node) FAST and FULL agree to
 *       rounding (the tests hold them to 1e-6). Not claimed: a TP group
 *       across nodes (its sleep is the estimate on the slowest hop), PP or
 *       DP traffic inside a node while TP collectives run (FULL sees the
 *       NVLink shared, FAST's TP sleep does not), and skewed arrivals
 *       under the coarse ring.
 *       With a user platform file the sharing cannot be computed: FAST
 *       falls back to FULL (oc_replay_fidelity_used says which ran).
 *   OC_SIM_SYM  FAST for one data-parallel replica (replay_sym.c): on a
 *       uniform cluster every replica runs the same ops at the same
 *       times, so only replica dp 0's TP-rank-0 ranks are actors, on a
 *       platform reduced to their nodes (platform.h). Its PP messages and
 *       collectives across nodes carry the bytes of every lockstepped flow
 *       of their stage on the NIC; a collective of a group reaching other
 *       replicas (DP x CP, ZeRO's, the buckets) runs the algorithm FAST
 *       picks, each ring step of a simulated member as one message to the
 *       replica-0 image of its successor (with CP, replica 0's members
 *       form a block of the ring; the block's last sends to its first),
 *       or to its twin host through its own links where that image is
 *       itself, which by symmetry loads every link as the real step does. Cost: the pipeline's op lists and the
 *       ring's steps, not the cards (llama2-70b tp8-pp8-dp256 on 16384
 *       cards: 0.3 s against about 250 s in FAST). Where the replicas are
 *       not alike (a TP group across nodes, a replica straddling nodes
 *       differently from another, a tree, a flat ring with several
 *       members per node across nodes whose node blocks do not tile it,
 *       a broadcast across replicas; with CP too, a CP ring hop crossing
 *       nodes unlike its image's) FAST runs instead: the reason is at
 *       debug level of log category ocsim_sym. With CP, where every CP
 *       ring hop is of one kind, CP rank 0 of each stage stands for its
 *       CP group too (its ring steps to its twin host; replay_sym.c,
 *       "Folding the CP ring"). A flat ring across nodes with several
 *       members per node: the replicas on replica 0's nodes stand for
 *       all, the step into the next node goes to the first one's ~in
 *       twin (replay_sym.c, "One node's replicas").
 *       tests/sym_fast.sh holds it equal to FAST (1e-6; the 9
 *       printed digits agree) and the default 64- and 1024-card sweeps
 *       give sweep.csv byte for byte. Where FAST simulates every rank only
 *       because its check of the NICs asks every NIC to match (8 NICs per
 *       node, TP 8), SYM's own checks ask only the NICs replica 0 uses, and
 *       SYM stands for that every-rank run (equal too).
 *
 * SimGrid settings: network/optim:Full unless the user's cfg sets
 * network/optim. SimGrid 3.32's default lazy update gives flows wrong
 * shares when flows in both directions cross a FATPIPE link (the generated
 * platform's fabric link): 8 flows through one NIC each ran at the NIC's
 * full rate. The full update costs about 30 % more wall time.
 *
 * Trace: opts.log "ocsim_replay.thres:debug" (ocsim --log) prints one line
 * per replayed op to stderr: rank, op index, kind (a collective's kind,
 * group and count), simulated start and end; "ocsim_coll.thres:debug"
 * adds the algorithm each collective picks and runs.
 *
 * Speed (2 cores shared, one simulation per core; see the report of the
 * change for the numbers): FAST runs llama2-70b tp8-pp8-dp1 with 512
 * micro-batches on 64 cards in about 0.1 s (7168 messages), FULL in 18 s
 * with coarse rings (2.7 M messages) and 60 s without (18.7 M).
 *
 * uniform_stages (a test hook): the embedding, the LM head and the
 * optimizer step cost 0 s, so that every stage computes the same, as in
 * the textbook pipeline of core/closed_form.h (which has no optimizer).
 *
 * Errors: one line in st->msg: an invalid layout, a missing platform file,
 * a --cfg SimGrid would refuse, an actor that did not finish (deadlock).
 */
#ifndef OC_SIM_REPLAY_H
#define OC_SIM_REPLAY_H

#include <stdint.h>

#include "collective.h"
#include "layout.h"
#include "metrics.h"
#include "model.h"
#include "schedule.h"
#include "status.h"
#include "timeline.h"
#include "topology.h"
#include "variability.h"

enum oc_sim_fidelity { OC_SIM_FAST, OC_SIM_FULL, OC_SIM_SYM };

struct oc_replay_opts {
    enum oc_sim_fidelity fidelity; /* default FAST (0) */
    enum oc_sim_algo algo;         /* every collective's algorithm, AUTO default */
    int coarse;                    /* merge ring steps (collective.h) */
    const char *platform_file;     /* a user's SimGrid XML, or NULL */
    const char *const *cfg;        /* user --cfg=... strings */
    int64_t n_cfg;
    const char *log;               /* xbt log settings (engine.h), or NULL */
    int uniform_stages;            /* test hook (see above) */
    int layer_grain;               /* test hook: FAST and SYM replay the
                                      layer-grain schedule (tests hold
                                      the chunk grain to it) */
    int records_only;              /* internal: sched_out needs only the ops of
                                      the ranks the timeline records */
    int steady;                    /* oc_replay_run_steady (and _forked): the
                                      steady-state fold where it holds
                                      (below) */
    /* Stragglers and jitter (core/variability.h, sim/replay_var.c): when
     * not NULL, step var_step of the seeded noise is applied (every
     * COMPUTE op times its multiplier, every link's bandwidth over its
     * divisor). The symmetric mode and the steady-state fold assume every
     * replica and every period alike, which noise breaks: SYM runs as
     * FAST and the fold is off (also with every CV 0, so that the ideal
     * step of a noisy run is the same replay without noise). */
    const struct oc_variability *var;
    int64_t var_step;
};

/* The fidelity that runs for these options: FULL when asked, or when a
 * platform file is given (FAST and SYM need the generated platform).
 * NULL: FAST. SYM may still fall back to FAST when the layout is not
 * symmetric (see above; oc_replay_run's sym_used says). */
enum oc_sim_fidelity oc_replay_fidelity_used(const struct oc_replay_opts *o);

/* In the current process (SimGrid: once per process): build the schedule
 * (chunk grain for FAST, layer grain for FULL) into *sched_out, start the
 * engine on the generated (or user's) platform for t*p*d cards, replay,
 * and fill *out (oc_metrics_init, oc_step_metrics, oc_metrics_finish). When
 * tl is not NULL it is initialised on *sched_out (oc_timeline_init) and
 * filled with every op's start and end; tl needs sched_out. sched_out may be NULL
 * when tl is. The caller frees both, also after a failure (they are then
 * left empty). o may be NULL (defaults). Returns 0, or -1 with st->msg. */
int oc_replay_run(const struct oc_model *m, const struct oc_topology *t,
                  const struct oc_layout *l, const struct oc_replay_opts *o,
                  struct oc_metrics *out, struct oc_schedule *sched_out,
                  struct oc_timeline *tl, struct oc_status *st);

/* oc_replay_run, with the steady-state fold where o->steady asks for it
 * and it applies (replay_steady.c): the replay of fewer micro-batches runs
 * in a forked child (SimGrid once per process), its timeline comes back
 * and is unfolded here to *sched_out's every op (with neither sched_out
 * nor tl asked for, the figures are read from it rank by rank, without
 * the full schedule: the same figures, bit for bit); where the fold does
 * not hold, oc_replay_run here. out->sim_micro_batches says which ran. */
int oc_replay_run_steady(const struct oc_model *m, const struct oc_topology *t,
                         const struct oc_layout *l, const struct oc_replay_opts *o,
                         struct oc_metrics *out, struct oc_schedule *sched_out,
                         struct oc_timeline *tl, struct oc_status *st);

/* oc_replay_run_steady in a forked child (oc_sim_fork_run), metrics only:
 * what a sweep calls. wall_limit_s > 0 kills the child after that much wall time. */
int oc_replay_run_forked(const struct oc_model *m, const struct oc_topology *t,
                         const struct oc_layout *l,
                         const struct oc_replay_opts *o,
                         struct oc_metrics *out, double wall_limit_s,
                         struct oc_status *st);

/* Starts SimGrid in a forked child exactly as oc_replay_run would for
 * `cards` cards (the platform file or the generated platform, the user's
 * cfg), loads the platform and simulates nothing: what only SimGrid can
 * judge (a --cfg key or value it does not know, a platform file it cannot
 * parse) fails here with SimGrid's line, before a sweep starts hundreds of
 * simulations that would each fail the same way. Returns 0 or -1 with
 * st->msg. */
int oc_replay_check_forked(const struct oc_topology *t, int64_t cards,
                           const struct oc_replay_opts *o, struct oc_status *st);

#endif
