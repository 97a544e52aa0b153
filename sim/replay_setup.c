/* replay_setup.c: what the replay builds before its actors run (replay.c
 * calls it; replay_priv.h lists the replay's files): the simulated ranks
 * (all, or fast mode's TP-rank-0 representatives), each rank's collective
 * groups (built once and shared), the NIC-sharing factors of the fast mode
 * and whether scaling by them is exact, the seconds of each op that takes
 * time without a message (COMPUTE, fast mode's TP sleeps), the room for
 * outstanding sends and async jobs, the message table; and freeing it all.
 *
 * What it is not: the replay of the ops (replay_rank.c), the collective
 * algorithms and their closed forms (coll.h), the cost model
 * (core/cost.h), or the groups' members (core/schedule.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "replay_priv.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cost.h"
#include "sim_log.h"

XBT_LOG_EXTERNAL_DEFAULT_CATEGORY(ocsim_replay); /* replay.c's (nothing logged here) */

/* ---- fast mode's TP sleeps --------------------------------------------- */

/* Fast mode: seconds of one TP collective as a sleep (replay.h): the
 * closed-form estimate (coll.h) of the algorithm full mode would run for
 * this kind and size, with NCCL's terms where they apply
 * (oc_coll_cost_s), times the op's count. */
static double tp_sleep_s(const struct replay *R, const struct rgroup *G,
                         const struct oc_op *op, const struct oc_sim_coll_opts *o)
{
    const struct oc_sim_group *g = &G->g;
    if (g->size < 2)
        return 0;
    const double S = (double)llround(op->bytes);
    const enum oc_coll_kind kind = (enum oc_coll_kind)op->coll;
    const struct oc_coll_algo *a = oc_coll_pick(g, kind, o->algo, S, o);
    /* count repetitions, less what the GEMMs hide under the overlap */
    return oc_tpo_op_s(&R->tpo, R->l, op, oc_coll_cost_s(g, a, kind, S, o, NULL, NULL));
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
    /* Symmetric mode: a message across nodes stands for every lockstepped
     * flow on its NIC (ksym); a group reaching other replicas sends its
     * ring steps to its members' images and to loops (replay_sym.c). */
    if (R->sym && !(G >= R->tpshape && G < R->tpshape + R->gpn)) { /* not fast TP sleeps */
        G->kflow = oc_xmalloc((size_t)n * sizeof *G->kflow);
        int ghosts = 0;
        for (int64_t i = 0; i < n; i++) {
            G->kflow[i] = R->ksym[members[i]];
            ghosts |= R->sim_of[members[i]] < 0;
        }
        G->tx.flow_scale = G->kflow;
        if (ghosts)
            oc_rp_sym_loops(R, G);
    }
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
    /* TP and embedding groups are per (dp, cp): index them by dp*c + cp */
    const int64_t p = l->pp, c_n = l->cp > 1 ? l->cp : 1, d = l->dp * c_n, v = l->vchunks;
    const int64_t dc = c.dp * c_n + c.cp;
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
                const int64_t off = buf[0] % R->gpn +
                                    R->gpn * oc_topology_group_of_rank(R->topo, buf[0]);
                G = rk->tp = &R->tpshape[off];
                snprintf(name, sizeof name, "tp~%" PRId64, off);
            } else {
                G = rk->tp = &R->tpg[c.pp * d + dc];
                snprintf(name, sizeof name, "tp.%" PRId64 ".%" PRId64, c.pp, dc);
            }
            break;
        case OC_GROUP_DP:
            if (op->async && op->tag >= 0) {
                /* a ZeRO-2/3 stream (core/schedule_zero.h) */
                if (op->tag > 1)
                    return oc_fail(st, "rank %" PRId64 ": DP stream %" PRId64 " outside 0..1",
                                   rk->rank, op->tag);
                if (rk->zs[op->tag])
                    continue;
                G = rk->zs[op->tag] = &R->zsg[(c.tp * p + c.pp) * 2 + op->tag];
                snprintf(name, sizeof name, "dpz%d.%" PRId64 ".%" PRId64, (int)op->tag, c.tp,
                         c.pp);
            } else if (op->async) {
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
            G = rk->emb = &R->embg[c.tp * d + dc];
            snprintf(name, sizeof name, "emb.%" PRId64 ".%" PRId64, c.tp, dc);
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

/* The node group whose device times rank rk's compute. In fast mode rk
 * stands for its TP group (TP rank 0, the others not simulated): the
 * slowest group among its members, so the group waits as the real one
 * does for its slowest rank (a TP group inside one node has one group). */
static int rank_group(const struct replay *R, const struct oc_topology *t,
                      const struct rrank *rk)
{
    int g = oc_topology_group_of_rank(t, rk->rank);
    if (!R->fast || R->all_ranks || t->n_groups < 2)
        return g;
    for (int64_t i = 1; i < R->l->tp; i++) {
        struct oc_coord c = rk->c;
        c.tp = i;
        const int gi = oc_topology_group_of_rank(t, oc_layout_rank(R->l, c));
        if (t->groups[gi].device.peak_flops_16bit * t->groups[gi].device.gemm_efficiency <
            t->groups[g].device.peak_flops_16bit * t->groups[g].device.gemm_efficiency)
            g = gi;
    }
    return g;
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
        else if (R->tp_sleeps && op->kind == OC_OP_COLLECTIVE && op->group == OC_GROUP_TP)
            c[i] = tp_sleep_s(R, rk->tp, op, &R->copts);
    }
    return c;
}

void oc_rp_free(struct replay *R)
{
    const int64_t p = R->l->pp, d = R->l->dp * (R->l->cp > 1 ? R->l->cp : 1), t = R->l->tp,
                  v = R->l->vchunks;
    struct rgroup *sets[6] = {R->tpg, R->dpg, R->embg, R->bucketg, R->tpshape, R->zsg};
    const int64_t sizes[6] = {p * d, t * p, t * d, t * p * v, R->gpn * R->tshapes, t * p * 2};
    for (int k = 0; k < 6; k++) {
        for (int64_t i = 0; sets[k] && i < sizes[k]; i++) {
            if (sets[k][i].ready)
                oc_sim_group_free(&sets[k][i].g);
            free(sets[k][i].k);
            free(sets[k][i].kflow);
            free(sets[k][i].image);
            free(sets[k][i].loops);
            free(sets[k][i].ins);
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
    free(R->slow);
    free(R->rk);
    free(R->sim_of);
    free(R->knic);
    free(R->ksym);
    oc_rp_sym_free(R);
    free(R->bucket_ptrs);
    free(R->m_done);
}

/* ---- the simulated ranks, their lists, the message table --------------- */

/* The simulated ranks: all, or the TP-rank-0 representatives (fast mode,
 * when scaling their flows reproduces every link's load), and the arrays
 * their groups will live in. */
void oc_rp_ranks(struct replay *R, const struct oc_topology *t,
                 int64_t *buf, int64_t cap)
{
    const struct oc_layout *l = R->l;
    const int64_t world = R->world, p = l->pp, d = l->dp * (l->cp > 1 ? l->cp : 1),
                  tp = l->tp, v = l->vchunks;
    R->tpg = oc_xcalloc((size_t)(p * d), sizeof *R->tpg);
    R->dpg = oc_xcalloc((size_t)(tp * p), sizeof *R->dpg);
    R->embg = oc_xcalloc((size_t)(tp * d), sizeof *R->embg);
    R->bucketg = oc_xcalloc((size_t)(tp * p * v), sizeof *R->bucketg);
    R->zsg = oc_xcalloc((size_t)(tp * p * 2), sizeof *R->zsg);
    /* TP shapes per node group: unlike groups have unlike NVLink */
    R->topo = t;
    R->tshapes = t->n_groups > 1 ? t->n_groups : 1;
    R->tpshape = oc_xcalloc((size_t)(R->gpn * R->tshapes), sizeof *R->tpshape);
    R->bucket_ptrs = oc_xcalloc((size_t)(world * v), sizeof *R->bucket_ptrs);
    R->sim_of = oc_xmalloc((size_t)world * sizeof *R->sim_of);
    R->knic = oc_xmalloc((size_t)world * sizeof *R->knic);
    if (R->fast) {
        nic_factors(R, t, buf, cap);
        R->all_ranks = !scaling_exact(R, t);
    }
    /* symmetric mode (decided before the engine, replay_sym.c): its own
     * checks of the NICs replace fast mode's */
    if (R->sym)
        R->all_ranks = 0;
    if (!R->fast || R->all_ranks)
        for (int64_t r = 0; r < world; r++)
            R->knic[r] = 1;

    R->rk = oc_xcalloc((size_t)world, sizeof *R->rk);
    for (int64_t r = 0; r < world; r++) {
        const struct oc_coord c = oc_layout_coord(l, r);
        R->sim_of[r] = -1;
        if (R->fast && !R->all_ranks &&
            (c.tp != 0 || (R->sym && c.dp >= R->dpmod) || (R->cpfold && c.cp != 0)))
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
            /* folded CP ring (replay_sym.c): a step goes to the rank's
             * own twin */
            if (R->sim_of[op->peer] < 0 && !(R->cpfold && op->p2p == OC_P2P_KV))
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
int oc_rp_prepare(struct replay *R, const struct oc_topology *t,
                  const struct oc_replay_opts *o, int64_t *buf,
                  int64_t cap, struct oc_status *st)
{
    oc_tpo_init(&R->tpo, R->m, R->l, t);
    R->tp_sleeps = R->fast || R->tpo.on;
    /* one cost table per node type: a rank's compute runs at its own
     * device's rates (node groups, topology.h); the views outlive the
     * tables that point at them */
    const int ng = t->n_groups > 0 ? t->n_groups : 1;
    struct oc_topology *view = oc_xmalloc((size_t)ng * sizeof *view);
    struct oc_cost *cost = oc_xmalloc((size_t)ng * sizeof *cost);
    for (int g = 0; g < ng; g++) {
        oc_topology_group_view(t, g, &view[g]);
        oc_cost_init(&cost[g], R->m, R->l, &view[g]);
        if (o->uniform_stages)
            for (int ph = 0; ph <= OC_PHASE_OPTIMIZER; ph++)
                cost[g].part_s[OC_PART_EMBED][ph] = cost[g].part_s[OC_PART_HEAD][ph] = 0;
    }
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
         * they share one cost array (on one node type); fast mode adds
         * per-group TP sleeps. */
        const int share = !R->tp_sleeps && !R->var && t->n_groups < 2;
        if (share && stage_cost[rk->c.pp]) {
            rk->cost_s = stage_cost[rk->c.pp];
        } else {
            double *c = op_costs(R, rk, &cost[rank_group(R, t, rk)], o->uniform_stages);
            if (R->var) /* its own noise: its own array */
                oc_rp_var_costs(R, rk, c);
            R->costs[R->ncosts++] = c;
            rk->cost_s = c;
            if (share)
                stage_cost[rk->c.pp] = c;
        }
        rc = rank_lists(R, rk, &maxtag, st);
    }
    free(stage_cost);
    free(cost);
    free(view);
    if (rc != 0)
        return -1;
    R->tagspan = maxtag + 1 > 0 ? maxtag + 1 : 1;
    R->m_done = oc_xcalloc((size_t)R->world * (size_t)R->tagspan, 1);
    return 0;
}
