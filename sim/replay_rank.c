/* replay_rank.c: the actor of one simulated rank of the replay (replay.c
 * starts one per simulated rank; replay_priv.h lists the replay's files):
 * its op list in order, COMPUTE as simulated compute, SEND / RECV on the
 * "pp" channel, collectives through the group's transport (coll.h) or, in
 * fast mode, TP collectives as sleeps, async DP buckets in helper actors,
 * the CP ring's receives in one helper per rank, WAIT; each op's start
 * and end into the rank's timeline rows, and the per-op trace at debug
 * level of ocsim_replay.
 *
 * What it is not: the groups, costs and lists it runs with (replay_setup.c,
 * built before the run), the collective algorithms (coll.h), or the
 * figures made of the timeline (replay.c, core/step_metrics.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "replay_priv.h"

#include <inttypes.h>
#include <stdio.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/semaphore.h>

#include "sim_log.h"

XBT_LOG_EXTERNAL_DEFAULT_CATEGORY(ocsim_replay); /* replay.c: the trace's category */

static void rp_error(struct replay *R, const struct oc_status *st)
{
    if (!R->err) {
        R->err = 1;
        snprintf(R->errmsg, sizeof R->errmsg, "%s", st->msg);
    }
}

/* ---- collectives ------------------------------------------------------- */

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
    const int64_t stream = j->op->group == OC_GROUP_DP ? j->op->tag : -1;
    if (stream >= 0) {
        /* a ZeRO stream runs its collectives in issue order; the op's
         * time starts when it runs, not while it queues */
        sg_mutex_lock(j->rk->zmx[stream]);
        j->start_s = oc_sim_now_s();
    }
    if (j->rk->R->tp_sleeps && j->op->group == OC_GROUP_TP) {
        /* fast mode's TP collectives are sleeps (none is async today) */
        if (j->rk->cost_s[j->idx] > 0)
            sg_actor_sleep_for(j->rk->cost_s[j->idx]);
    } else {
        run_coll(j->rk->R, j->G, j->me, j->op);
    }
    j->end_s = oc_sim_now_s();
    if (stream >= 0)
        sg_mutex_unlock(j->rk->zmx[stream]);
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
        if (op->async && op->tag >= 0) {
            OC_ASSERT(op->tag <= 1 && rk->zs[op->tag]);
            return rk->zs[op->tag];
        }
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
    /* symmetric mode: every lockstepped flow of the stage on the NIC
     * (replay_sym.c) */
    const int64_t *k = R->sym ? R->ksym : R->knic;
    return k[a] > k[b] ? k[a] : k[b];
}

/* ---- the context-parallel ring ------------------------------------------ */

/* Where a ring step's block comes from: the previous CP rank, or, where
 * the ring is folded (replay_sym.c), the rank itself: its step went out
 * through its own links to its twin, where its helper receives it (the
 * block from the previous CP rank arrives at that moment, by symmetry). */
static int64_t kv_src(const struct rrank *rk, const struct oc_op *op)
{
    return rk->R->cpfold ? rk->rank : op->peer;
}

static void kv_main(void *arg)
{
    struct kvrecv *k = arg;
    struct replay *R = k->rk->R;
    for (;;) {
        sg_sem_acquire(k->go);
        if (k->stop)
            return;
        const struct oc_op *op = k->op;
        struct oc_status st = {{0}};
        const double bytes = op->bytes * (double)pp_scale(R, op->peer, k->rk->rank);
        if (oc_sim_recv("pp", kv_src(k->rk, op), k->rk->rank, op->tag, bytes, &st) != 0)
            rp_error(R, &st);
        k->end_s = oc_sim_now_s();
        sg_sem_release(k->done);
    }
}

/* A ring step's SEND (op i) posts the step's RECV, the next KV RECV in the
 * list, to the rank's helper, so that the block's transfer overlaps the
 * step's attention. */
static void kv_post(struct rrank *rk, int64_t i)
{
    const struct oc_op *ops = rk->ops->ops;
    int64_t j = i + 1;
    while (j < rk->ops->n && !(ops[j].kind == OC_OP_RECV && ops[j].p2p == OC_P2P_KV))
        j++;
    struct kvrecv *k = &rk->kv;
    OC_ASSERT(j < rk->ops->n && !k->op);
    if (!k->h) {
        k->rk = rk;
        k->go = sg_sem_init(0);
        k->done = sg_sem_init(0);
        sg_host_t host = rk->host;
        if (rk->R->cpfold) {
            /* the twin of the hop's kind (every CP hop is of one kind) */
            const struct oc_sim_platform *P = rk->R->plat;
            host = rk->rank / rk->R->gpn == ops[i].peer / rk->R->gpn ? P->twin_nv[rk->rank]
                                                                     : P->twin_net[rk->rank];
            OC_ASSERT(host);
        }
        k->h = oc_sim_async_start("cp-ring", host, kv_main, k);
    }
    k->op = &ops[j];
    k->post_s = oc_sim_now_s();
    sg_sem_release(k->go);
}

/* The rank ended: its helper returns. */
static void kv_stop(struct rrank *rk)
{
    struct kvrecv *k = &rk->kv;
    if (!k->h)
        return;
    OC_ASSERT(!k->op);
    k->stop = 1;
    sg_sem_release(k->go);
    oc_sim_async_wait(k->h);
    k->h = NULL;
    sg_sem_destroy(k->go);
    sg_sem_destroy(k->done);
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
        if (j->h)
            oc_sim_async_wait(j->h);
        j->h = NULL;
    }
    oc_sim_wait_all(rk->sends, rk->nsends);
    rk->nsends = 0;
}

/* A WAIT with a tag (core/schedule_zero.h): the outstanding async DP
 * collectives of ZeRO stream `stream` only. */
static void wait_stream(struct rrank *rk, int64_t stream)
{
    for (int64_t i = rk->jobs_waited; i < rk->njobs; i++) {
        struct ajob *j = &rk->jobs[i];
        if (j->h && j->op->group == OC_GROUP_DP && j->op->tag == stream) {
            oc_sim_async_wait(j->h);
            j->h = NULL;
        }
    }
    while (rk->jobs_waited < rk->njobs && !rk->jobs[rk->jobs_waited].h)
        rk->jobs_waited++;
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

void oc_rp_rank_main(void *arg)
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
            /* a folded CP ring's step: to the rank's own twin (kv_src) */
            const int64_t dst = R->cpfold && op->p2p == OC_P2P_KV ? rk->rank : op->peer;
            sg_comm_t c = oc_sim_send_async("pp", rk->rank, dst, op->tag, bytes, &st);
            reap_sends(rk);
            if (!c) {
                rp_error(R, &st);
            } else {
                rk->sends[rk->nsends] = c;
                rk->send_key[rk->nsends++] = key;
            }
            if (op->p2p == OC_P2P_KV)
                kv_post(rk, i);
            break;
        }
        case OC_OP_RECV: {
            if (op->p2p == OC_P2P_KV) {
                const int64_t key = kv_src(rk, op) * R->tagspan + op->tag;
                /* The ring's receive, posted with the step's send: its
                 * timeline row runs from the post to the block's arrival,
                 * the rank waits only for what the compute did not hide
                 * (core/step_metrics.h). */
                OC_ASSERT(rk->kv.h && rk->kv.op == op);
                sg_sem_acquire(rk->kv.done);
                rk->kv.op = NULL;
                R->m_done[key] = 1;
                rk->tl_start[i] = rk->kv.post_s;
                rk->tl_end[i] = rk->kv.end_s;
                continue;
            }
            const double bytes = op->bytes * (double)pp_scale(R, op->peer, rk->rank);
            if (oc_sim_recv("pp", op->peer, rk->rank, op->tag, bytes, &st) != 0)
                rp_error(R, &st);
            R->m_done[op->peer * R->tagspan + op->tag] = 1;
            break;
        }
        case OC_OP_COLLECTIVE: {
            int64_t me = 0;
            struct rgroup *G = op_group(rk, op, &me);
            OC_ASSERT(G && G->ready);
            if (op->async) {
                OC_ASSERT(rk->njobs < rk->jobs_cap);
                if (op->group == OC_GROUP_DP && op->tag >= 0 && !rk->zmx[op->tag])
                    rk->zmx[op->tag] = sg_mutex_init();
                struct ajob *j = &rk->jobs[rk->njobs++];
                *j = (struct ajob){rk, op, i, G, me, t0, t0, NULL};
                j->h = oc_sim_async_start("dp-bucket", rk->host, async_main, j);
                break;
            }
            if (R->tp_sleeps && op->group == OC_GROUP_TP) {
                if (rk->cost_s[i] > 0)
                    sg_actor_sleep_for(rk->cost_s[i]);
            } else {
                run_coll(R, G, me, op);
            }
            break;
        }
        case OC_OP_WAIT:
            if (op->tag >= 0)
                wait_stream(rk, op->tag);
            else
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
    kv_stop(rk);
    if (R->sym)
        oc_rp_sym_stop(rk);
    for (int s = 0; s < 2; s++)
        if (rk->zmx[s]) {
            sg_mutex_destroy(rk->zmx[s]);
            rk->zmx[s] = NULL;
        }
}
