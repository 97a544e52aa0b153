/* replay.c: one training step of one layout replayed on SimGrid, op list by
 * op list (see replay.h for the semantics, the figures and the two
 * fidelities). What this file is: the actors that replay the schedule core's
 * ops, the NIC-sharing factors of the fast mode, and the timeline of
 * simulated op times that core/step_metrics.c turns into struct
 * oc_metrics. What it is not: the figures' definitions
 * (core/step_metrics.h), the platform (platform.c), the engine (engine.c)
 * or the collective algorithms (the table of coll.h, which runs them in
 * either fidelity).
 *
 * Log category ocsim_replay: --log=ocsim_replay.thres:debug prints one
 * line per replayed op (rank, op index, kind, simulated start and end).
 *
 * Letters: t, p, d = TP, PP, DP sizes; v = model chunks per stage; k = the
 * members of a TP group that share the sender's NIC (fast mode scaling).
 *
 * Two SimGrid 3.32 behaviours shape this file: the lazy network update
 * shares links wrongly on the generated platform (so network/optim:Full,
 * see oc_replay_run), and an actor's activities are kept in a list that is
 * scanned on every completion and that a finished comm leaves only when
 * waited for (so sends are reaped by waiting, see reap_sends).
 */
#define _POSIX_C_SOURCE 200809L

#include "replay.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/host.h>

#include "coll.h"
#include "cost.h"
#include "engine.h"
#include "sim_log.h"
#include "step_metrics.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_replay, ocsim,
                                "ocsim: replay of the schedule's op lists");

/* ---- state ------------------------------------------------------------- */

/* A collective group, built once before the run and shared read-only by its
 * members (and their helpers), with the transport its collectives use
 * (coll.h): in fast mode k[i] is member i's NIC-sharing factor, by which
 * the transport scales messages across nodes. */
struct rgroup {
    int ready;
    struct oc_sim_group g;
    int64_t *k; /* (N) fast mode only, else NULL */
    struct oc_coll_tx tx;
};

struct rrank;

/* One async collective in flight (a DP gradient bucket). */
struct ajob {
    struct rrank *rk;
    const struct oc_op *op;
    int64_t idx; /* op index in the rank's list */
    struct rgroup *G;
    int64_t me;
    double start_s, end_s;
    struct oc_sim_async *h;
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
    int64_t tp_me, dp_me, emb_me;
    sg_comm_t *sends; /* outstanding sends, cap = SEND ops */
    int64_t *send_key; /* their message keys */
    int64_t nsends;
    struct ajob *jobs; /* cap = async ops */
    int64_t njobs, jobs_cap, jobs_waited;
    double *tl_start, *tl_end; /* its timeline rows (core/step_metrics.h
                                  derives every figure from them) */
};

struct replay {
    const struct oc_model *m;
    const struct oc_layout *l;
    const struct oc_schedule *s;
    int fast;
    int all_ranks; /* fast mode, but every rank simulated (no scaling) */
    int64_t world, gpn; /* ranks, GPUs per node */
    struct oc_sim_coll_opts copts;
    const struct oc_sim_platform *plat;
    struct rrank *rk; /* (nsim) */
    int64_t nsim;
    int64_t *sim_of;  /* (world) index into rk, or -1 */
    int64_t *knic;    /* (world) fast: NIC-sharing factor of each rank */
    struct rgroup *tpg, *dpg, *embg, *bucketg;
    struct rgroup *tpshape; /* (gpn) fast mode's TP groups, by offset in a node */
    struct rgroup **bucket_ptrs;
    double **costs;   /* distinct cost arrays, freed at the end */
    int64_t ncosts;
    /* messages, keyed by src * tagspan + tag */
    int64_t tagspan;
    unsigned char *m_done; /* the receiver has the message */
    int err;
    char errmsg[OC_MSG_MAX];
};

static void rp_error(struct replay *R, const struct oc_status *st)
{
    if (!R->err) {
        R->err = 1;
        snprintf(R->errmsg, sizeof R->errmsg, "%s", st->msg);
    }
}

/* ---- collectives ------------------------------------------------------- */

/* Fast mode: seconds of one TP collective as a sleep (replay.h): the
 * closed-form estimate (coll.h) of the algorithm full mode would run for
 * this kind and size, times the op's count. */
static double tp_sleep_s(const struct rgroup *G, const struct oc_op *op,
                         const struct oc_sim_coll_opts *o)
{
    const struct oc_sim_group *g = &G->g;
    if (g->size < 2)
        return 0;
    const double S = (double)llround(op->bytes);
    const enum oc_coll_kind kind = (enum oc_coll_kind)op->coll;
    const struct oc_coll_algo *a = oc_coll_pick(g, kind, o->algo, S, o);
    return (double)(op->count > 1 ? op->count : 1) * a->estimate_s(g, kind, S, o);
}

/* A non-TP collective (or a TP one in full mode), `count` times, through
 * the group's transport: every message its own size in full mode, scaled
 * by the hop's NIC-sharing factor in fast mode (group_build). */
static void run_coll(struct replay *R, const struct rgroup *G, int64_t me,
                     const struct oc_op *op)
{
    struct oc_status st = {{0}};
    const int64_t n = op->count > 1 ? op->count : 1;
    for (int64_t i = 0; i < n; i++)
        if (oc_coll_run(&G->tx, me, (enum oc_coll_kind)op->coll, op->bytes, 0, &st) != 0) {
            rp_error(R, &st);
            return;
        }
}

/* ---- actors ------------------------------------------------------------ */

static void async_main(void *arg)
{
    struct ajob *j = arg;
    if (j->rk->R->fast && j->op->group == OC_GROUP_TP) {
        /* fast mode's TP collectives are sleeps (none is async today) */
        if (j->rk->cost_s[j->idx] > 0)
            sg_actor_sleep_for(j->rk->cost_s[j->idx]);
    } else {
        run_coll(j->rk->R, j->G, j->me, j->op);
    }
    j->end_s = oc_sim_now_s();
}

/* Which group, and which member of it, an op of rank rk uses. */
static struct rgroup *op_group(const struct rrank *rk, const struct oc_op *op,
                               int64_t *me)
{
    switch (op->group) {
    case OC_GROUP_TP:
        *me = rk->tp_me;
        return rk->tp;
    case OC_GROUP_DP:
        *me = rk->dp_me;
        if (op->async) {
            OC_ASSERT(rk->bucket && op->chunk >= 0 &&
                      op->chunk < rk->R->l->vchunks);
            return rk->bucket[op->chunk];
        }
        return rk->dp;
    case OC_GROUP_EMBED:
        *me = rk->emb_me;
        return rk->emb;
    default:
        return NULL;
    }
}

/* How many real flows a PP message a -> b stands for (fast mode; 1 in
 * full mode and inside a node): see replay.h. */
static int64_t pp_scale(const struct replay *R, int64_t a, int64_t b)
{
    if (!R->fast || a / R->gpn == b / R->gpn)
        return 1;
    return R->knic[a] > R->knic[b] ? R->knic[a] : R->knic[b];
}

/* Release the sends whose receiver already has the message (the receiver
 * marks m_done): sg_comm_wait on a finished comm returns at once. Letting
 * a step's 2*m sends pile up until the final WAIT made long runs
 * quadratic (SimGrid 3.32 keeps an actor's unfinished activities in a list
 * it scans on every completion), and sg_comm_test is no cure: a finished
 * comm released by a test stays in that list. The WAIT semantics are
 * unchanged. */
static void reap_sends(struct rrank *rk)
{
    const struct replay *R = rk->R;
    int64_t k = 0;
    for (int64_t i = 0; i < rk->nsends; i++) {
        if (R->m_done[rk->send_key[i]]) {
            sg_comm_wait(rk->sends[i]);
        } else {
            rk->sends[k] = rk->sends[i];
            rk->send_key[k++] = rk->send_key[i];
        }
    }
    rk->nsends = k;
}

static void wait_outstanding(struct rrank *rk)
{
    for (; rk->jobs_waited < rk->njobs; rk->jobs_waited++) {
        struct ajob *j = &rk->jobs[rk->jobs_waited];
        oc_sim_async_wait(j->h);
        j->h = NULL;
    }
    oc_sim_wait_all(rk->sends, rk->nsends);
    rk->nsends = 0;
}

/* The per-op trace (debug level of ocsim_replay): rank, op index, kind
 * (for a collective its kind, group and count; an async one is only
 * started here), simulated start and end. */
static void trace_op(const struct rrank *rk, int64_t i, const struct oc_op *op, double t0)
{
    char what[96] = "";
    if (op->kind == OC_OP_COLLECTIVE)
        snprintf(what, sizeof what, " %s %s x%d%s", oc_coll_name((enum oc_coll_kind)op->coll),
                 oc_group_name((enum oc_group)op->group), op->count > 1 ? (int)op->count : 1,
                 op->async ? " async" : "");
    else if (op->kind == OC_OP_SEND || op->kind == OC_OP_RECV)
        snprintf(what, sizeof what, " peer %" PRId64 " tag %" PRId64, (int64_t)op->peer,
                 (int64_t)op->tag);
    XBT_DEBUG("rank %" PRId64 " op %" PRId64 " %s%s: %.9f -> %.9f s", rk->rank, i,
              oc_op_kind_name((enum oc_op_kind)op->kind), what, t0, oc_sim_now_s());
}

static void rank_main(void *arg)
{
    struct rrank *rk = arg;
    struct replay *R = rk->R;
    const struct oc_op *ops = rk->ops->ops;
    const int64_t n = rk->ops->n;
    struct oc_status st = {{0}};
    for (int64_t i = 0; i < n; i++) {
        const struct oc_op *op = &ops[i];
        const double t0 = oc_sim_now_s();
        switch (op->kind) {
        case OC_OP_COMPUTE:
            oc_sim_compute_s(rk->cost_s[i]);
            break;
        case OC_OP_SEND: {
            const int64_t key = rk->rank * R->tagspan + op->tag;
            const double bytes = op->bytes * (double)pp_scale(R, rk->rank, op->peer);
            sg_comm_t c = oc_sim_send_async("pp", rk->rank, op->peer, op->tag, bytes, &st);
            reap_sends(rk);
            if (!c) {
                rp_error(R, &st);
            } else {
                rk->sends[rk->nsends] = c;
                rk->send_key[rk->nsends++] = key;
            }
            break;
        }
        case OC_OP_RECV: {
            const int64_t key = op->peer * R->tagspan + op->tag;
            const double bytes = op->bytes * (double)pp_scale(R, op->peer, rk->rank);
            if (oc_sim_recv("pp", op->peer, rk->rank, op->tag, bytes, &st) != 0)
                rp_error(R, &st);
            R->m_done[key] = 1;
            break;
        }
        case OC_OP_COLLECTIVE: {
            int64_t me = 0;
            struct rgroup *G = op_group(rk, op, &me);
            OC_ASSERT(G && G->ready);
            if (op->async) {
                OC_ASSERT(rk->njobs < rk->jobs_cap);
                struct ajob *j = &rk->jobs[rk->njobs++];
                *j = (struct ajob){rk, op, i, G, me, t0, t0, NULL};
                j->h = oc_sim_async_start("dp-bucket", rk->host, async_main, j);
                break;
            }
            if (R->fast && op->group == OC_GROUP_TP) {
                if (rk->cost_s[i] > 0)
                    sg_actor_sleep_for(rk->cost_s[i]);
            } else {
                run_coll(R, G, me, op);
            }
            break;
        }
        case OC_OP_WAIT:
            wait_outstanding(rk);
            break;
        default: /* ALLOC, FREE: no time (step_metrics.h reads their bytes) */
            break;
        }
        rk->tl_start[i] = t0;
        rk->tl_end[i] = oc_sim_now_s();
        if (XBT_LOG_ISENABLED(ocsim_replay, xbt_log_priority_debug))
            trace_op(rk, i, op, t0);
    }
    /* The schedule's WAIT completes every send and async collective before
     * the optimizer; this only keeps a list without one from leaving
     * activities behind. */
    wait_outstanding(rk);
}

/* ---- set-up ------------------------------------------------------------ */

static int group_build(struct replay *R, struct rgroup *G, const char *name,
                       const int64_t *members, int64_t n, struct oc_status *st)
{
    if (G->ready)
        return 0;
    if (oc_sim_group_init(&G->g, name, members, n, R->plat, st) != 0)
        return -1;
    G->ready = 1;
    if (R->fast) {
        G->k = oc_xmalloc((size_t)n * sizeof *G->k);
        for (int64_t i = 0; i < n; i++)
            G->k[i] = R->knic[members[i]];
    }
    oc_coll_tx_init(&G->tx, &G->g, G->k, &R->copts);
    return 0;
}

static int64_t index_of(const int64_t *a, int64_t n, int64_t x)
{
    for (int64_t i = 0; i < n; i++)
        if (a[i] == x)
            return i;
    OC_ASSERT(!"rank is not a member of its own group");
    return -1;
}

/* The groups rank rk's ops use, built on first use and shared. */
static int rank_groups(struct replay *R, struct rrank *rk, int64_t *buf,
                       int64_t cap, struct oc_status *st)
{
    const struct oc_layout *l = R->l;
    const struct oc_coord c = rk->c;
    const int64_t p = l->pp, d = l->dp, v = l->vchunks;
    char name[96];
    for (int64_t i = 0; i < rk->ops->n; i++) {
        const struct oc_op *op = &rk->ops->ops[i];
        if (op->kind != OC_OP_COLLECTIVE)
            continue;
        struct rgroup *G = NULL;
        int64_t n = 0;
        switch (op->group) {
        case OC_GROUP_TP:
            if (rk->tp)
                continue;
            n = oc_schedule_group(l, rk->rank, OC_GROUP_TP, buf, cap);
            rk->tp_me = index_of(buf, n, rk->rank);
            if (R->fast) {
                /* Fast mode only reads a TP group's route figures (for its
                 * sleeps), and on the generated platform a group moved by
                 * whole nodes has the same figures: one group per offset
                 * of its first GPU in a node saves a route search from
                 * every GPU of the cluster. */
                const int64_t off = buf[0] % R->gpn;
                G = rk->tp = &R->tpshape[off];
                snprintf(name, sizeof name, "tp~%" PRId64, off);
            } else {
                G = rk->tp = &R->tpg[c.pp * d + c.dp];
                snprintf(name, sizeof name, "tp.%" PRId64 ".%" PRId64, c.pp, c.dp);
            }
            break;
        case OC_GROUP_DP:
            if (op->async) {
                if (op->chunk < 0 || op->chunk >= v)
                    return oc_fail(st, "rank %" PRId64 ": DP bucket of chunk %d outside "
                                       "0..%" PRId64, rk->rank, (int)op->chunk, v - 1);
                if (!rk->bucket)
                    rk->bucket = &R->bucket_ptrs[rk->rank * v];
                if (rk->bucket[op->chunk])
                    continue;
                G = rk->bucket[op->chunk] = &R->bucketg[(c.tp * p + c.pp) * v + op->chunk];
                snprintf(name, sizeof name, "dpb%d.%" PRId64 ".%" PRId64, (int)op->chunk,
                         c.tp, c.pp);
            } else {
                if (rk->dp)
                    continue;
                G = rk->dp = &R->dpg[c.tp * p + c.pp];
                snprintf(name, sizeof name, "dp.%" PRId64 ".%" PRId64, c.tp, c.pp);
            }
            n = oc_schedule_group(l, rk->rank, OC_GROUP_DP, buf, cap);
            rk->dp_me = index_of(buf, n, rk->rank);
            break;
        case OC_GROUP_EMBED:
            if (rk->emb)
                continue;
            G = rk->emb = &R->embg[c.tp * d + c.dp];
            snprintf(name, sizeof name, "emb.%" PRId64 ".%" PRId64, c.tp, c.dp);
            n = oc_schedule_group(l, rk->rank, OC_GROUP_EMBED, buf, cap);
            rk->emb_me = index_of(buf, n, rk->rank);
            break;
        default:
            return oc_fail(st, "rank %" PRId64 ": collective op %" PRId64 " has no group",
                           rk->rank, i);
        }
        OC_ASSERT(n <= cap);
        if (group_build(R, G, name, buf, n, st) != 0)
            return -1;
    }
    return 0;
}

/* NIC-sharing factor of every rank (fast mode, replay.h): the members of
 * its TP group on its node that use its NIC (GPU g uses NIC
 * g % nics_per_node, platform.h). */
static void nic_factors(struct replay *R, const struct oc_topology *t,
                        int64_t *buf, int64_t cap)
{
    const int64_t K = t->nics_per_node > 0 ? t->nics_per_node : 1;
    for (int64_t r = 0; r < R->world; r++) {
        const int64_t n = oc_schedule_group(R->l, r, OC_GROUP_TP, buf, cap);
        OC_ASSERT(n <= cap);
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++)
            k += buf[i] / R->gpn == r / R->gpn && buf[i] % K == r % K;
        R->knic[r] = k > 0 ? k : 1;
    }
}

/* Does scaling the representatives' flows reproduce every link's load
 * (replay.h)? Stages run at different times, but the ranks of one stage
 * in lockstep, so per stage: on every NIC (node n, NIC x), the GPUs of the
 * stage that use it must equal the sum of k over the stage's
 * representatives that use it; when the uplinks are shared (two switch
 * levels or more and oversubscription, platform.h), the same for each
 * node's uplink. A TP group across nodes, or GPUs of one node that do not
 * split evenly into its NICs, fail it. */
static int scaling_exact(const struct replay *R, const struct oc_topology *t)
{
    const int64_t K = t->nics_per_node > 0 ? t->nics_per_node : 1;
    const int64_t nodes = (R->world + R->gpn - 1) / R->gpn, p = R->l->pp;
    if (nodes < 2)
        return 1; /* no NIC on any route */
    const int shared_up = t->switch_levels > 1 && t->oversubscription > 1;
    int64_t *nic = oc_xcalloc((size_t)(2 * nodes * K * p), sizeof *nic);
    int64_t *up = oc_xcalloc((size_t)(2 * nodes * p), sizeof *up);
    for (int64_t r = 0; r < R->world; r++) {
        const struct oc_coord c = oc_layout_coord(R->l, r);
        const int64_t n = r / R->gpn, x = r % K;
        const int64_t ni = 2 * ((n * K + x) * p + c.pp), ui = 2 * (n * p + c.pp);
        nic[ni]++;
        up[ui]++;
        if (c.tp == 0) {
            nic[ni + 1] += R->knic[r];
            up[ui + 1] += R->knic[r];
        }
    }
    int ok = 1;
    for (int64_t i = 0; ok && i < nodes * K * p; i++)
        ok = nic[2 * i] == nic[2 * i + 1];
    for (int64_t i = 0; ok && shared_up && i < nodes * p; i++)
        ok = up[2 * i] == up[2 * i + 1];
    free(nic);
    free(up);
    return ok;
}

/* Seconds of every op of rank rk that takes simulated time without a
 * message: COMPUTE from the cost model; in fast mode the TP sleeps too. */
static double *op_costs(const struct replay *R, const struct rrank *rk,
                        const struct oc_cost *cost, int uniform)
{
    const int64_t n = rk->ops->n;
    double *c = oc_xcalloc((size_t)(n > 0 ? n : 1), sizeof *c);
    for (int64_t i = 0; i < n; i++) {
        const struct oc_op *op = &rk->ops->ops[i];
        if (op->kind == OC_OP_COMPUTE)
            c[i] = uniform && op->phase == OC_PHASE_OPTIMIZER
                       ? 0
                       : oc_cost_op_s(cost, op, R->l, R->m);
        else if (R->fast && op->kind == OC_OP_COLLECTIVE && op->group == OC_GROUP_TP)
            c[i] = tp_sleep_s(rk->tp, op, &R->copts);
    }
    return c;
}

static void replay_free(struct replay *R)
{
    const int64_t p = R->l->pp, d = R->l->dp, t = R->l->tp, v = R->l->vchunks;
    struct rgroup *sets[5] = {R->tpg, R->dpg, R->embg, R->bucketg, R->tpshape};
    const int64_t sizes[5] = {p * d, t * p, t * d, t * p * v, R->gpn};
    for (int k = 0; k < 5; k++) {
        for (int64_t i = 0; sets[k] && i < sizes[k]; i++) {
            if (sets[k][i].ready)
                oc_sim_group_free(&sets[k][i].g);
            free(sets[k][i].k);
        }
        free(sets[k]);
    }
    for (int64_t i = 0; i < R->nsim; i++) {
        free(R->rk[i].sends);
        free(R->rk[i].send_key);
        free(R->rk[i].jobs);
    }
    for (int64_t i = 0; i < R->ncosts; i++)
        free(R->costs[i]);
    free(R->costs);
    free(R->rk);
    free(R->sim_of);
    free(R->knic);
    free(R->bucket_ptrs);
    free(R->m_done);
}

enum oc_sim_fidelity oc_replay_fidelity_used(const struct oc_replay_opts *o)
{
    if (!o)
        return OC_SIM_FAST;
    return o->fidelity == OC_SIM_FULL || o->platform_file ? OC_SIM_FULL : OC_SIM_FAST;
}

/* ---- the run ----------------------------------------------------------- */

/* The simulated ranks: all, or the TP-rank-0 representatives (fast mode,
 * when scaling their flows reproduces every link's load), and the arrays
 * their groups will live in. */
static void replay_ranks(struct replay *R, const struct oc_topology *t,
                         int64_t *buf, int64_t cap)
{
    const struct oc_layout *l = R->l;
    const int64_t world = R->world, p = l->pp, d = l->dp, tp = l->tp,
                  v = l->vchunks;
    R->tpg = oc_xcalloc((size_t)(p * d), sizeof *R->tpg);
    R->dpg = oc_xcalloc((size_t)(tp * p), sizeof *R->dpg);
    R->embg = oc_xcalloc((size_t)(tp * d), sizeof *R->embg);
    R->bucketg = oc_xcalloc((size_t)(tp * p * v), sizeof *R->bucketg);
    R->tpshape = oc_xcalloc((size_t)R->gpn, sizeof *R->tpshape);
    R->bucket_ptrs = oc_xcalloc((size_t)(world * v), sizeof *R->bucket_ptrs);
    R->sim_of = oc_xmalloc((size_t)world * sizeof *R->sim_of);
    R->knic = oc_xmalloc((size_t)world * sizeof *R->knic);
    if (R->fast) {
        nic_factors(R, t, buf, cap);
        R->all_ranks = !scaling_exact(R, t);
    }
    if (!R->fast || R->all_ranks)
        for (int64_t r = 0; r < world; r++)
            R->knic[r] = 1;

    R->rk = oc_xcalloc((size_t)world, sizeof *R->rk);
    for (int64_t r = 0; r < world; r++) {
        const struct oc_coord c = oc_layout_coord(l, r);
        R->sim_of[r] = -1;
        if (R->fast && !R->all_ranks && c.tp != 0)
            continue;
        struct rrank *rk = &R->rk[R->nsim];
        R->sim_of[r] = R->nsim++;
        rk->R = R;
        rk->rank = r;
        rk->c = c;
        rk->host = R->plat->hosts[r];
        rk->ops = &R->s->ranks[r];
    }
}

/* Checks rank rk's pipeline ops (a peer that is simulated, a tag) and
 * makes room for its outstanding sends and async collectives; *maxtag
 * grows to its largest tag. */
static int rank_lists(struct replay *R, struct rrank *rk, int64_t *maxtag,
                      struct oc_status *st)
{
    int64_t nsend = 0, nasync = 0;
    for (int64_t j = 0; j < rk->ops->n; j++) {
        const struct oc_op *op = &rk->ops->ops[j];
        if (op->kind == OC_OP_SEND || op->kind == OC_OP_RECV) {
            if (op->tag < 0 || op->peer < 0 || op->peer >= R->world || op->peer == rk->rank)
                return oc_fail(st, "rank %" PRId64 " op %" PRId64 ": point-to-point with "
                                   "peer %" PRId64 " and tag %" PRId64,
                               rk->rank, j, op->peer, op->tag);
            if (R->sim_of[op->peer] < 0)
                return oc_fail(st, "rank %" PRId64 " op %" PRId64 ": peer %" PRId64
                                   " is not simulated (fast mode needs pipeline peers of "
                                   "the same TP rank)", rk->rank, j, op->peer);
            if (op->tag > *maxtag)
                *maxtag = op->tag;
            nsend += op->kind == OC_OP_SEND;
        } else if (op->kind == OC_OP_COLLECTIVE && op->async) {
            nasync++;
        }
    }
    rk->sends = oc_xmalloc((size_t)(nsend > 0 ? nsend : 1) * sizeof *rk->sends);
    rk->send_key = oc_xmalloc((size_t)(nsend > 0 ? nsend : 1) * sizeof *rk->send_key);
    rk->jobs = oc_xcalloc((size_t)(nasync > 0 ? nasync : 1), sizeof *rk->jobs);
    rk->jobs_cap = nasync;
    return 0;
}

/* Per simulated rank its groups, op costs and lists; then the message
 * table. */
static int replay_prepare(struct replay *R, const struct oc_topology *t,
                          const struct oc_replay_opts *o, int64_t *buf,
                          int64_t cap, struct oc_status *st)
{
    struct oc_cost cost;
    oc_cost_init(&cost, R->m, R->l, t);
    if (o->uniform_stages)
        for (int ph = 0; ph <= OC_PHASE_OPTIMIZER; ph++)
            cost.part_s[OC_PART_EMBED][ph] = cost.part_s[OC_PART_HEAD][ph] = 0;
    R->costs = oc_xcalloc((size_t)(R->nsim > 0 ? R->nsim : 1), sizeof *R->costs);
    double **stage_cost = oc_xcalloc((size_t)R->l->pp, sizeof *stage_cost);
    int64_t maxtag = -1;
    int rc = 0;
    for (int64_t i = 0; i < R->nsim && rc == 0; i++) {
        struct rrank *rk = &R->rk[i];
        rc = rank_groups(R, rk, buf, cap, st);
        if (rc != 0)
            break;
        /* Full mode: the ranks of a stage run the same compute ops, so
         * they share one cost array; fast mode adds per-group TP sleeps. */
        if (!R->fast && stage_cost[rk->c.pp]) {
            rk->cost_s = stage_cost[rk->c.pp];
        } else {
            double *c = op_costs(R, rk, &cost, o->uniform_stages);
            R->costs[R->ncosts++] = c;
            rk->cost_s = c;
            if (!R->fast)
                stage_cost[rk->c.pp] = c;
        }
        rc = rank_lists(R, rk, &maxtag, st);
    }
    free(stage_cost);
    if (rc != 0)
        return -1;
    R->tagspan = maxtag + 1 > 0 ? maxtag + 1 : 1;
    R->m_done = oc_xcalloc((size_t)R->world * (size_t)R->tagspan, 1);
    return 0;
}

/* The timeline the actors fill and every figure comes from: rows for the
 * simulated ranks; one that is not simulated is stood for by the TP-rank-0
 * rank of its group. */
static void replay_timeline(struct replay *R, struct oc_timeline *tl)
{
    const int64_t world = R->world;
    unsigned char *record = NULL;
    if (R->fast) {
        record = oc_xcalloc((size_t)world, 1);
        for (int64_t r = 0; r < world; r++)
            record[r] = R->sim_of[r] >= 0;
    }
    oc_timeline_init(tl, R->s, record);
    free(record);
    for (int64_t r = 0; r < world; r++)
        if (R->sim_of[r] < 0) {
            struct oc_coord c = oc_layout_coord(R->l, r);
            c.tp = 0;
            tl->proxy[r] = oc_layout_rank(R->l, c);
        }
    for (int64_t i = 0; i < R->nsim; i++) {
        R->rk[i].tl_start = tl->start_s[R->rk[i].rank];
        R->rk[i].tl_end = tl->end_s[R->rk[i].rank];
    }
}

/* After the run: a SEND ends when its message arrived, an async collective
 * when it completed (timeline.h); then the figures (step_metrics.h). */
static void replay_metrics(const struct replay *R, const struct oc_topology *t,
                           struct oc_timeline *tl, struct oc_metrics *out)
{
    for (int64_t i = 0; i < R->nsim; i++) {
        const struct rrank *rk = &R->rk[i];
        for (int64_t j = 0; j < rk->njobs; j++) {
            rk->tl_start[rk->jobs[j].idx] = rk->jobs[j].start_s;
            rk->tl_end[rk->jobs[j].idx] = rk->jobs[j].end_s;
        }
    }
    oc_timeline_send_arrivals(tl);
    oc_metrics_init(out, R->l);
    oc_step_metrics(tl, out);
    oc_metrics_finish(out, R->m, t);
}

/* Everything after the schedule is built and the engine started. The
 * timeline goes to tl_out when it is not NULL. */
static int replay_body(struct replay *R, const struct oc_topology *t,
                       const struct oc_replay_opts *o, struct oc_metrics *out,
                       struct oc_timeline *tl_out, struct oc_status *st)
{
    const int64_t tp = R->l->tp, d = R->l->dp;
    const int64_t cap = (tp > d ? tp : d) + 2;
    int64_t *buf = oc_xmalloc((size_t)cap * sizeof *buf);
    replay_ranks(R, t, buf, cap);
    int rc = replay_prepare(R, t, o, buf, cap, st);
    free(buf);
    if (rc != 0)
        return -1;

    struct oc_timeline local;
    struct oc_timeline *tl = tl_out ? tl_out : &local;
    replay_timeline(R, tl);
    for (int64_t i = 0; i < R->nsim; i++) {
        char name[32];
        snprintf(name, sizeof name, "rank%" PRId64, R->rk[i].rank);
        oc_sim_actor_create(name, R->rk[i].host, rank_main, &R->rk[i]);
    }
    rc = oc_sim_engine_run(st);
    if (rc != 0 || R->err) {
        if (R->err)
            oc_fail(st, "%s", R->errmsg);
        rc = -1;
    } else {
        replay_metrics(R, t, tl, out);
    }
    if (!tl_out)
        oc_timeline_free(&local);
    return rc;
}

int oc_replay_run(const struct oc_model *m, const struct oc_topology *t,
                  const struct oc_layout *l, const struct oc_replay_opts *o,
                  struct oc_metrics *out, struct oc_schedule *sched_out,
                  struct oc_timeline *tl, struct oc_status *st)
{
    OC_ASSERT(m && t && l && out);
    const struct oc_replay_opts defaults = {0};
    if (!o)
        o = &defaults;
    memset(out, 0, sizeof *out);
    if (sched_out)
        memset(sched_out, 0, sizeof *sched_out);
    if (tl)
        memset(tl, 0, sizeof *tl);
    if (tl && !sched_out)
        return oc_fail(st, "replay: a timeline needs sched_out (the schedule it indexes)");
    if (o->fidelity != OC_SIM_FAST && o->fidelity != OC_SIM_FULL)
        return oc_fail(st, "replay: unknown fidelity %d", (int)o->fidelity);
    if (o->algo < 0 || o->algo >= OC_SIM_ALGO_COUNT)
        return oc_fail(st, "replay: unknown collective algorithm %d", (int)o->algo);
    if (l->pp > OC_MAX_STAGES)
        return oc_fail(st, "replay: PP %" PRId64 " exceeds the %d stages metrics hold",
                       l->pp, OC_MAX_STAGES);
    const int64_t world = oc_layout_world(l);
    if (oc_layout_validate(l, m, t, world, st) != 0)
        return -1;

    struct replay R;
    memset(&R, 0, sizeof R);
    R.m = m;
    R.l = l;
    R.fast = oc_replay_fidelity_used(o) == OC_SIM_FAST;
    R.world = world;
    R.gpn = t->gpus_per_node > 0 ? t->gpus_per_node : 1;
    R.copts.algo = o->algo;
    R.copts.coarse = o->coarse;

    /* The engine first: a bad platform file or --cfg fails before the
     * schedule is built. network/optim:Full unless the user sets it:
     * SimGrid 3.32's default lazy update lets flows that were matched while
     * their sender waited elsewhere ignore the sharing of a link (8 equal
     * flows through one NIC each got the whole NIC); the full update
     * shares them as max-min says. */
    if (o->n_cfg < 0 || (o->n_cfg > 0 && !o->cfg))
        return oc_fail(st, "replay: %" PRId64 " cfg strings but no array", o->n_cfg);
    const char **cfg = oc_xmalloc((size_t)(o->n_cfg + 1) * sizeof *cfg);
    int64_t ncfg = 0, user_optim = 0;
    for (int64_t i = 0; i < o->n_cfg; i++) {
        const char *kv = strncmp(o->cfg[i], "--cfg=", 6) == 0 ? o->cfg[i] + 6 : o->cfg[i];
        user_optim |= strncmp(kv, "network/optim:", 14) == 0;
    }
    if (!user_optim)
        cfg[ncfg++] = "network/optim:Full";
    for (int64_t i = 0; i < o->n_cfg; i++)
        cfg[ncfg++] = o->cfg[i];
    struct oc_sim_engine_opts eo = {.topo = t, .cards = world,
                                    .platform_file = o->platform_file,
                                    .cfg = cfg, .n_cfg = ncfg, .log = o->log};
    int erc = oc_sim_engine_init(&eo, st);
    free(cfg);
    if (erc != 0)
        return -1;
    R.plat = oc_sim_engine_platform();
    OC_ASSERT(R.plat && R.plat->cards == world);
    if (o->platform_file)
        R.gpn = R.plat->gpus_per_node;

    struct oc_schedule local;
    struct oc_schedule *s = sched_out ? sched_out : &local;
    const struct oc_schedule_opts so = {R.fast ? OC_GRAIN_CHUNK : OC_GRAIN_LAYER, 1};
    if (oc_schedule_build(s, m, l, &so, st) != 0) {
        oc_schedule_free(s);
        return -1;
    }
    R.s = s;
    int rc = replay_body(&R, t, o, out, tl, st);
    replay_free(&R);
    if (rc != 0 || !sched_out)
        oc_schedule_free(s);
    if (rc != 0 && tl)
        oc_timeline_free(tl);
    return rc;
}

/* ---- forked ------------------------------------------------------------ */

struct fork_job {
    const struct oc_model *m;
    const struct oc_topology *t;
    const struct oc_layout *l;
    const struct oc_replay_opts *o;
};

static int fork_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    const struct fork_job *j = arg;
    struct oc_metrics *mt = oc_xmalloc(sizeof *mt);
    int rc = oc_replay_run(j->m, j->t, j->l, j->o, mt, NULL, NULL, st);
    if (rc == 0)
        oc_sim_buf_append(out, mt, sizeof *mt);
    free(mt);
    return rc;
}

int oc_replay_run_forked(const struct oc_model *m, const struct oc_topology *t,
                         const struct oc_layout *l,
                         const struct oc_replay_opts *o,
                         struct oc_metrics *out, double wall_limit_s,
                         struct oc_status *st)
{
    OC_ASSERT(m && t && l && out);
    memset(out, 0, sizeof *out);
    struct fork_job j = {m, t, l, o};
    struct oc_sim_fork_opts fo = {wall_limit_s > 0 ? wall_limit_s : 0, 0};
    struct oc_sim_buf buf = {0};
    if (oc_sim_fork_run(fork_child, &j, &fo, &buf, st) != 0) {
        oc_sim_buf_free(&buf);
        return -1;
    }
    int rc = 0;
    if (buf.len != sizeof *out)
        rc = oc_fail(st, "replay: the simulation sent %zu bytes, expected %zu", buf.len,
                     sizeof *out);
    else
        memcpy(out, buf.data, sizeof *out);
    oc_sim_buf_free(&buf);
    return rc;
}
