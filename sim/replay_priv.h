/* replay_priv.h: what the files of the replay share, and nothing else:
 * the state of one replay (struct replay), its simulated ranks, their
 * collective groups and async jobs, and the functions one file calls in
 * another (prefix oc_rp_).
 *
 *   replay.c        the entry points (oc_replay_run, forked), the engine's
 *                   start, the timeline the actors fill and its metrics
 *   replay_setup.c  the simulated ranks, their groups and NIC-sharing
 *                   factors, op costs and send / job lists
 *   replay_rank.c   the actor of one rank: its ops replayed in order
 *   replay_sym.c    the symmetric mode: whether it holds, its NIC factors
 *                   ksym, the loops of the groups reaching other replicas
 *   replay_steady.c the steady-state fold: a reduced run's timeline
 *                   unfolded to every micro-batch
 *
 * Letters: t, p, d = TP, PP, DP sizes; v = model chunks per stage; k = the
 * members of a TP group that share the sender's NIC (fast mode scaling).
 *
 * What it is not: an interface for anything outside the replay (callers
 * use replay.h).
 *
 *   oc_rp_ranks(R, t, buf, cap);                       // who is simulated
 *   if (oc_rp_prepare(R, t, o, buf, cap, st) != 0) ...  // groups, costs
 *   oc_sim_actor_create(name, R->rk[i].host, oc_rp_rank_main, &R->rk[i]);
 *   ... oc_sim_engine_run ...;  oc_rp_free(R);
 */
#ifndef OC_SIM_REPLAY_PRIV_H
#define OC_SIM_REPLAY_PRIV_H

#include <stdint.h>

#include <simgrid/mutex.h>
#include <simgrid/semaphore.h>

#include "coll.h"
#include "engine.h"
#include "replay.h"
#include "tp_overlap.h"

/* ---- state ------------------------------------------------------------- */

/* A collective group, built once before the run and shared read-only by its
 * members (and their helpers), with the transport its collectives use
 * (coll.h): in fast mode k[i] is member i's NIC-sharing factor, by which
 * the transport scales messages across nodes. */
struct rgroup {
    int ready;
    struct oc_sim_group g;
    int64_t *k; /* (N) fast mode only, else NULL */
    int64_t *kflow; /* (N) symmetric mode: the members' ksym, else NULL */
    struct oc_coll_tx tx;
    /* symmetric mode, a group with members not simulated (replay_sym.c):
     * image (N) as in struct oc_coll_tx; loops (2N) member i's loop inside
     * a node [i] and across nodes [N + i], NULL where it needs none */
    int64_t *image;
    struct oc_coll_loop **loops;
    struct oc_coll_in **ins; /* (N) ~in receivers (coll.h), or NULL */
};

struct rrank;

/* One async collective in flight (a DP gradient bucket, or a ZeRO-2/3
 * stream's gather or reduce-scatter: core/schedule_zero.h). */
struct ajob {
    struct rrank *rk;
    const struct oc_op *op;
    int64_t idx; /* op index in the rank's list */
    struct rgroup *G;
    int64_t me;
    double start_s, end_s;
    struct oc_sim_async *h;
};

/* The context-parallel ring's receive, posted with the ring step's send
 * (TransformerEngine posts both on its P2P stream before the step's
 * attention, core/schedule_cp.h) and waited for at the RECV op; a rank has
 * at most one in flight. One helper actor per rank, started at its first
 * ring step, receives every block in turn (go: a block is posted; done:
 * it arrived): an actor per step cost a stack's mmap, mprotect and munmap
 * each, most of a CP replay's wall time. */
struct kvrecv {
    struct rrank *rk;
    const struct oc_op *op; /* the RECV in flight, NULL when none */
    double post_s, end_s;   /* posted; the block arrived */
    sg_sem_t go, done;
    int stop;               /* the rank ended: the helper returns */
    struct oc_sim_async *h; /* the helper, NULL until the first step */
};

/* One simulated rank. */
struct rrank {
    struct replay *R;
    int64_t rank;
    struct oc_coord c;
    sg_host_t host;
    const struct oc_rank_ops *ops;
    const double *cost_s; /* (ops->n) COMPUTE seconds; fast: also TP sleeps */
    struct rgroup *tp, *dp, *emb;
    struct rgroup **bucket; /* (v) async DP buckets, or NULL */
    /* ZeRO-2/3 async streams (op tag 0 gather, 1 reduce-scatter): a DP
     * transport each, and a lock that runs the stream's collectives one
     * after the other in issue order, as one NCCL stream does */
    struct rgroup *zs[2];
    sg_mutex_t zmx[2];
    int64_t tp_me, dp_me, emb_me;
    sg_comm_t *sends; /* outstanding sends, cap = SEND ops */
    int64_t *send_key; /* their message keys */
    int64_t nsends;
    struct ajob *jobs; /* cap = async ops */
    int64_t njobs, jobs_cap, jobs_waited;
    struct kvrecv kv; /* the ring's receive (op != NULL: in flight) */
    double *tl_start, *tl_end; /* its timeline rows (core/step_metrics.h
                                  derives every figure from them) */
};

struct replay {
    const struct oc_model *m;
    const struct oc_layout *l;
    const struct oc_schedule *s;
    int fast;
    /* TP collectives as sleeps of their closed-form time: fast mode, and
     * under the TP-communication overlap (tp_overlap.h), whose exposed
     * time is that of the closed form next to the GEMMs */
    int tp_sleeps;
    struct oc_tpo tpo;
    int all_ranks; /* fast mode, but every rank simulated (no scaling) */
    int sym_asked; /* OC_SIM_SYM asked */
    int sym;       /* symmetric mode runs: fast mode, replica dp 0 only */
    char sym_why[160]; /* why it fell back to fast, when asked */
    int cpfold;        /* sym: CP rank 0 of each stage stands for its CP group */
    int64_t dpmod;     /* sym: DP ranks 0..dpmod-1 simulated (image: dp mod dpmod) */
    struct oc_coll_in **ins; /* sym: every ~in receiver made, and its rank */
    int64_t *in_owner, nins, cap_ins;
    char fold_why[160]; /* why the CP ring was not folded, when tried */
    int64_t *ksym; /* (world) sym: ranks of the rank's stage and CP rank on its NIC */
    struct oc_coll_loop **loops; /* sym: every loop made, and its rank */
    int64_t *loop_owner, nloops, cap_loops;
    int64_t world, gpn; /* ranks, GPUs per node */
    /* fast mode's TP groups by shape: gpn offsets per node group
     * (topology.h; 1 without groups), and the topology to find a node's */
    int64_t tshapes;
    const struct oc_topology *topo;
    struct oc_sim_coll_opts copts;
    const struct oc_sim_platform *plat;
    struct rrank *rk; /* (nsim) */
    int64_t nsim;
    int64_t *sim_of;  /* (world) index into rk, or -1 */
    int64_t *knic;    /* (world) fast: NIC-sharing factor of each rank */
    struct rgroup *tpg, *dpg, *embg, *bucketg, *zsg;
    struct rgroup *tpshape; /* (gpn) fast mode's TP groups, by offset in a node */
    struct rgroup **bucket_ptrs;
    double **costs;   /* distinct cost arrays, freed at the end */
    int64_t ncosts;
    /* messages, keyed by src * tagspan + tag */
    int64_t tagspan;
    unsigned char *m_done; /* the receiver has the message */
    int err;
    char errmsg[OC_MSG_MAX];
    /* stragglers and jitter (replay_var.c): NULL when off */
    const struct oc_variability *var;
    int64_t var_step;
    unsigned char *slow; /* (world) the slow devices, or NULL */
};

/* replay_setup.c */
void oc_rp_ranks(struct replay *R, const struct oc_topology *t, int64_t *buf, int64_t cap);
int oc_rp_prepare(struct replay *R, const struct oc_topology *t,
                  const struct oc_replay_opts *o, int64_t *buf, int64_t cap,
                  struct oc_status *st);
void oc_rp_free(struct replay *R);

/* replay_sym.c: the symmetric mode */
/* The GPUs that get twins (replica dp 0's TP-rank-0 ranks, CP rank 0 only
 * where folded: the simulated ones); *n their count. */
int64_t *oc_rp_sym_twins(const struct replay *R, int64_t *n);
/* The simulated rank that stands for rank r (its image). */
int64_t oc_rp_sym_image(const struct replay *R, int64_t r);
/* The ranks whose ops the symmetric mode's plan reads and its replay
 * records (TP rank 0 of the replicas on replica 0's nodes; a world-sized
 * 0/1 array to free): struct oc_schedule_opts.only. */
unsigned char *oc_rp_sym_only(const struct replay *R);
/* Before the engine starts, on R->s: does the symmetric mode hold (sets
 * R->sym and R->ksym, or R->sym_why)? */
void oc_rp_sym_plan(struct replay *R, const struct oc_topology *t);
/* After the engine started: the algorithms picked on the real route
 * figures can run on loops too (0), or -1 and st. */
int oc_rp_sym_recheck(struct replay *R, int64_t *buf, int64_t cap, struct oc_status *st);
/* A group with members that are not simulated: its members' images, the
 * loops its simulated members need and their receivers. */
void oc_rp_sym_loops(struct replay *R, struct rgroup *G);
/* At the end of a rank's actor: the receivers of its loops leave. */
void oc_rp_sym_stop(struct rrank *rk);
void oc_rp_sym_free(struct replay *R);

/* replay_steady.c: the steady-state fold (symmetry in time). The plan
 * for a layout: K the period in micro-batches, the window [c0, c1) of
 * verified micro-batches, m1 the reduced run's micro-batches, D = m - m1
 * the inserted ones. */
struct oc_rp_steady {
    int64_t K, c0, c1, m1, D;
};
/* 1 and *sp where the fold applies to l (1f1b or interleaved, 2 m1 <= m). */
int oc_rp_steady_plan(const struct oc_layout *l, struct oc_rp_steady *sp);
/* The full schedule's timeline *tl from the reduced run's (s1, tl1),
 * after the checks of replay_steady.c: 0, or -1 with why (tl then
 * freed). */
int oc_rp_steady_unfold(const struct oc_schedule *s1, const struct oc_timeline *tl1,
                        const struct oc_schedule *s, struct oc_timeline *tl,
                        const struct oc_rp_steady *sp, char *why, size_t nwhy);
/* The full run's step figures (oc_step_metrics's: step time, stage table)
 * without its schedule or timeline: the full lists of l are built one
 * recorded rank at a time (schedule.h's builder, options so) and each op
 * is read at its image's times shifted as oc_rp_steady_unfold would
 * write them, so the figures equal those of the unfolded timeline bit for
 * bit. 0 with mt's step figures; 1 when the fold does not hold (why); -1
 * with st->msg. */
int oc_rp_steady_figures(const struct oc_model *m, const struct oc_layout *l,
                         const struct oc_schedule_opts *so, const struct oc_schedule *s1,
                         const struct oc_timeline *tl1, const struct oc_rp_steady *sp,
                         struct oc_metrics *mt, struct oc_status *st, char *why,
                         size_t nwhy);

/* replay_var.c: stragglers and jitter (core/variability.h) */
/* Multiplies rank rk's COMPUTE costs c (its op list's) by their noise. */
void oc_rp_var_costs(const struct replay *R, const struct rrank *rk, double *c);
/* Every link's bandwidth over its divisor of this step (after the engine
 * started, before the costs: fast mode's TP sleeps read the routes). */
void oc_rp_var_links(const struct replay *R);

/* replay_rank.c: the actor of one simulated rank (arg: its struct rrank) */
void oc_rp_rank_main(void *arg);

#endif
