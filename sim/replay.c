/* replay.c: one training step of one layout replayed on SimGrid, op list by
 * op list (see replay.h for the semantics, the figures and the two
 * fidelities). What this file is: the entry points (oc_replay_run and its
 * forked form), the engine's start, and the timeline of simulated op
 * times that the actors fill and core/step_metrics.c turns into struct
 * oc_metrics. The actors that replay the schedule core's ops are in
 * replay_rank.c, the ranks' groups, the NIC-sharing factors of the fast
 * mode and the op costs in replay_setup.c (replay_priv.h: what they
 * share). What it is not: the figures' definitions
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
 * Two SimGrid 3.32 behaviours shape the replay: the lazy network update
 * shares links wrongly on the generated platform (so network/optim:Full,
 * see oc_replay_run), and an actor's activities are kept in a list that is
 * scanned on every completion and that a finished comm leaves only when
 * waited for (so sends are reaped by waiting, see reap_sends in
 * replay_rank.c).
 */
#define _POSIX_C_SOURCE 200809L

#include "replay_priv.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "mbsplit.h"
#include "sim_log.h"
#include "step_metrics.h"

XBT_LOG_EXTERNAL_CATEGORY(ocsim_steady);
XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_replay, ocsim,
                                "ocsim: replay of the schedule's op lists");

enum oc_sim_fidelity oc_replay_fidelity_used(const struct oc_replay_opts *o)
{
    if (!o)
        return OC_SIM_FAST;
    if (o->fidelity == OC_SIM_FULL || o->platform_file)
        return OC_SIM_FULL;
    /* noise makes the replicas unlike: no symmetric mode (replay.h) */
    return o->fidelity == OC_SIM_SYM && !o->var ? OC_SIM_SYM : OC_SIM_FAST;
}

/* ---- the run ----------------------------------------------------------- */

/* The timeline the actors fill and every figure comes from: rows for the
 * simulated ranks; one that is not simulated is stood for by the TP-rank-0
 * rank of its group. */
static void replay_timeline(struct replay *R, struct oc_timeline *tl)
{
    const int64_t world = R->world;
    unsigned char *record = NULL;
    if (R->fast) {
        record = oc_xcalloc((size_t)world, 1);
        for (int64_t r = 0; r < world; r++) {
            const struct oc_coord c = oc_layout_coord(R->l, r);
            /* a folded CP ring's other CP ranks get their image's rows
             * after the run (fold_rows): their ring steps' ends are there */
            record[r] = R->sim_of[r] >= 0 || (R->cpfold && c.tp == 0 && c.dp < R->dpmod);
        }
    }
    oc_timeline_init(tl, R->s, record);
    free(record);
    for (int64_t r = 0; r < world; r++)
        if (!tl->start_s[r]) {
            struct oc_coord c = oc_layout_coord(R->l, r);
            c.tp = 0;
            if (R->sym) /* replica 0 (one node's replicas) for every replica */
                c.dp %= R->dpmod;
            tl->proxy[r] = oc_layout_rank(R->l, c);
        }
    for (int64_t i = 0; i < R->nsim; i++) {
        R->rk[i].tl_start = tl->start_s[R->rk[i].rank];
        R->rk[i].tl_end = tl->end_s[R->rk[i].rank];
    }
}

/* A folded CP ring (replay_sym.c): every CP rank of replica 0 ran its
 * image's ops (checked alike) at the same times, so it gets the image's
 * rows; a ring step's SEND then finds its RECV on the next CP rank. */
static void fold_rows(const struct replay *R, struct oc_timeline *tl)
{
    for (int64_t r = 0; R->cpfold && r < R->world; r++) {
        if (R->sim_of[r] >= 0 || !tl->start_s[r])
            continue;
        const int64_t img = oc_rp_sym_image(R, r);
        const size_t n = (size_t)R->s->ranks[r].n;
        OC_ASSERT(R->sim_of[img] >= 0 && R->s->ranks[img].n == (int64_t)n);
        memcpy(tl->start_s[r], tl->start_s[img], n * sizeof(double));
        memcpy(tl->end_s[r], tl->end_s[img], n * sizeof(double));
    }
}

/* The grain of the schedule a replay runs: chunk for FAST and SYM (unless
 * the layer_grain test hook), layer for FULL (replay.h). */
static enum oc_grain replay_grain(const struct oc_replay_opts *o)
{
    return oc_replay_fidelity_used(o) != OC_SIM_FULL && !o->layer_grain ? OC_GRAIN_CHUNK
                                                                        : OC_GRAIN_LAYER;
}

/* A filled timeline's figures: a SEND ends when its message arrived
 * (timeline.h), then step_metrics.h. */
static void timeline_figures(struct oc_timeline *tl, const struct oc_model *m,
                             const struct oc_layout *l, const struct oc_topology *t,
                             struct oc_metrics *out)
{
    oc_timeline_send_arrivals(tl);
    oc_metrics_init(out, l);
    oc_step_metrics(tl, out);
    oc_metrics_finish(out, m, t);
}

/* After the run: an async collective ends when it completed (timeline.h);
 * then the figures. */
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
    fold_rows(R, tl);
    timeline_figures(tl, R->m, R->l, t, out);
    out->sim_micro_batches = R->s->num_micro_batches;
    /* which forced collective choices would have run this very replay */
    out->coll_same = 0;
    if (R->copts.algo == OC_SIM_ALGO_AUTO) {
        const unsigned same = oc_coll_same_as_auto();
        out->coll_same = (1u << OC_COLL_CHOICE_AUTO) |
                         ((same >> OC_SIM_ALGO_RING & 1u) << OC_COLL_CHOICE_RING) |
                         ((same >> OC_SIM_ALGO_HIER & 1u) << OC_COLL_CHOICE_HIER) |
                         ((same >> OC_SIM_ALGO_TREE & 1u) << OC_COLL_CHOICE_TREE);
    }
}

/* Everything after the schedule is built and the engine started. The
 * timeline goes to tl_out when it is not NULL. */
static int replay_body(struct replay *R, const struct oc_topology *t,
                       const struct oc_replay_opts *o, struct oc_metrics *out,
                       struct oc_timeline *tl_out, struct oc_status *st)
{
    /* the DP group holds d*c ranks under context parallelism */
    const int64_t tp = R->l->tp, d = R->l->dp * (R->l->cp > 1 ? R->l->cp : 1);
    const int64_t cap = (tp > d ? tp : d) + 2;
    int64_t *buf = oc_xmalloc((size_t)cap * sizeof *buf);
    oc_rp_ranks(R, t, buf, cap);
    int rc = oc_rp_sym_recheck(R, buf, cap, st);
    if (R->var)
        oc_rp_var_links(R);
    if (rc == 0)
        rc = oc_rp_prepare(R, t, o, buf, cap, st);
    free(buf);
    if (rc != 0)
        return -1;

    struct oc_timeline local;
    struct oc_timeline *tl = tl_out ? tl_out : &local;
    replay_timeline(R, tl);
    for (int64_t i = 0; i < R->nsim; i++) {
        char name[32];
        snprintf(name, sizeof name, "rank%" PRId64, R->rk[i].rank);
        oc_sim_actor_create(name, R->rk[i].host, oc_rp_rank_main, &R->rk[i]);
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

/* Starts the engine on the generated (or user's) platform for `cards`
 * cards with the user's cfg, and network/optim:Full unless the user sets
 * it: SimGrid 3.32's default lazy update lets flows that were matched
 * while their sender waited elsewhere ignore the sharing of a link (8
 * equal flows through one NIC each got the whole NIC); the full update
 * shares them as max-min says. */
static int engine_start(const struct oc_topology *t, int64_t cards,
                        const struct oc_replay_opts *o, const int64_t *twins,
                        int64_t ntwins, int reduced, struct oc_status *st)
{
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
    struct oc_sim_engine_opts eo = {.topo = t, .cards = cards,
                                    .platform_file = o->platform_file,
                                    .twins = o->platform_file ? NULL : twins,
                                    .ntwins = o->platform_file ? 0 : ntwins,
                                    .reduced = reduced,
                                    .cfg = cfg, .n_cfg = ncfg, .log = o->log};
    int rc = oc_sim_engine_init(&eo, st);
    free(cfg);
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
    if (o->fidelity != OC_SIM_FAST && o->fidelity != OC_SIM_FULL && o->fidelity != OC_SIM_SYM)
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
    R.fast = oc_replay_fidelity_used(o) != OC_SIM_FULL;
    /* one replica stands for all only when all run on one node type
     * (node groups, topology.h) and the same micro-batches (mbsplit.h):
     * else fast mode, every replica */
    R.sym_asked = oc_replay_fidelity_used(o) == OC_SIM_SYM && t->n_groups < 2 &&
                  !oc_mbs_on(l);
    R.world = world;
    R.var = o->var;
    R.var_step = o->var_step;
    R.slow = o->var ? oc_var_slow_set(o->var, world) : NULL;
    R.gpn = t->gpus_per_node > 0 ? t->gpus_per_node : 1;
    /* The layout's collective algorithm, where it names one, else the
     * replay's (--collective). */
    static const enum oc_sim_algo of_layout[] = {
        [OC_COLL_CHOICE_AUTO] = OC_SIM_ALGO_AUTO, [OC_COLL_CHOICE_RING] = OC_SIM_ALGO_RING,
        [OC_COLL_CHOICE_HIER] = OC_SIM_ALGO_HIER, [OC_COLL_CHOICE_TREE] = OC_SIM_ALGO_TREE,
    };
    R.copts.algo = l->coll != OC_COLL_CHOICE_AUTO ? of_layout[l->coll] : o->algo;
    oc_coll_same_reset(); /* every choice of this replay from here */
    R.copts.coarse = o->coarse;
    /* the reductions run at the device's memory bandwidth (collective.h) */
    R.copts.reduce_Bps = oc_cost_mem_Bps(t);
    R.copts.nccl = t->nccl_version > 0; /* core/nccl_model.h */
    R.copts.nvls = t->intra_nvls;       /* sim/coll_nvls.c */

    struct oc_schedule local;
    struct oc_schedule *s = sched_out ? sched_out : &local;
    memset(&local, 0, sizeof local);
    const struct oc_schedule_opts so = {replay_grain(o), 1, NULL};
    /* The symmetric mode decides before the engine starts whether it holds
     * (it runs on a reduced platform, replay_sym.c). Else the engine
     * first: a bad platform file or --cfg fails before the schedule is
     * built. */
    int64_t ntwins = 0;
    int64_t *twins = NULL;
    if (R.sym_asked) {
        /* without a schedule to hand back (or one only for the timeline),
         * the ranks the symmetric mode reads and records; all where it
         * does not hold */
        unsigned char *only = !sched_out || o->records_only ? oc_rp_sym_only(&R) : NULL;
        struct oc_schedule_opts so_sym = so;
        so_sym.only = only;
        if (oc_schedule_build(s, m, l, &so_sym, st) != 0) {
            free(only);
            oc_schedule_free(s);
            return -1;
        }
        R.s = s;
        oc_rp_sym_plan(&R, t);
        if (R.sym) {
            twins = oc_rp_sym_twins(&R, &ntwins);
        } else if (only) {
            oc_schedule_free(s);
            R.s = NULL;
        }
        free(only);
    }
    const int started = engine_start(t, world, o, twins, ntwins, R.sym, st);
    free(twins);
    if (started != 0) {
        oc_rp_free(&R);
        oc_schedule_free(s);
        return -1;
    }
    R.plat = oc_sim_engine_platform();
    OC_ASSERT(R.plat && R.plat->cards == world);
    if (o->platform_file)
        R.gpn = R.plat->gpus_per_node;

    if (!R.s && oc_schedule_build(s, m, l, &so, st) != 0) {
        free(R.slow);
        oc_schedule_free(s);
        return -1;
    }
    R.s = s;
    int rc = replay_body(&R, t, o, out, tl, st);
    oc_rp_free(&R);
    if (rc != 0 || !sched_out)
        oc_schedule_free(s);
    if (rc != 0 && tl)
        oc_timeline_free(tl);
    return rc;
}

/* ---- forked ------------------------------------------------------------ */

struct check_job {
    const struct oc_topology *t;
    int64_t cards;
    const struct oc_replay_opts *o;
};

static int check_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    (void)out;
    const struct check_job *j = arg;
    /* A generated platform is built reduced to two nodes (platform.h):
     * what SimGrid judges here (the cfg, the topology's numbers) is the
     * same, and 16384 cards would take seconds to load in full. */
    const int64_t first = 0;
    return engine_start(j->t, j->cards, j->o, &first, 1, 1, st);
}

int oc_replay_check_forked(const struct oc_topology *t, int64_t cards,
                           const struct oc_replay_opts *o, struct oc_status *st)
{
    OC_ASSERT(t && cards > 0);
    const struct oc_replay_opts defaults = {0};
    struct check_job j = {t, cards, o ? o : &defaults};
    struct oc_sim_buf buf = {0};
    int rc = oc_sim_fork_run(check_child, &j, NULL, &buf, st);
    oc_sim_buf_free(&buf);
    return rc;
}

struct fork_job {
    const struct oc_model *m;
    const struct oc_topology *t;
    const struct oc_layout *l;
    const struct oc_replay_opts *o;
};

static int steady_here(const struct oc_model *m, const struct oc_topology *t,
                       const struct oc_layout *l, const struct oc_replay_opts *o,
                       struct oc_metrics *out, struct oc_status *st);

/* The child of oc_replay_run_forked: the metrics, or (the fold did not
 * hold after its reduced run here) one byte asking for the full replay. */
static int fork_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    const struct fork_job *j = arg;
    struct oc_metrics *mt = oc_xmalloc(sizeof *mt);
    int rc = steady_here(j->m, j->t, j->l, j->o, mt, st);
    if (rc == 0)
        oc_sim_buf_append(out, mt, sizeof *mt);
    else if (rc == 1) {
        const char full = 'F';
        oc_sim_buf_append(out, &full, 1);
        rc = 0;
    }
    free(mt);
    return rc;
}

/* ---- the steady-state fold (replay_steady.c) ---------------------------- */

struct reduced_job {
    const struct oc_model *m;
    const struct oc_topology *t;
    const struct oc_layout *l1;
    const struct oc_replay_opts *o1;
};

/* In a child: the reduced replay; back come its metrics, then per rank
 * its op count (-1: not recorded) and proxy, and a recorded rank's
 * starts and ends. */
static int reduced_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    const struct reduced_job *j = arg;
    struct oc_metrics *mt1 = oc_xmalloc(sizeof *mt1);
    struct oc_schedule s1;
    struct oc_timeline tl1;
    int rc = oc_replay_run(j->m, j->t, j->l1, j->o1, mt1, &s1, &tl1, st);
    if (rc == 0) {
        oc_sim_buf_append(out, mt1, sizeof *mt1);
        for (int64_t r = 0; r < s1.nranks; r++) {
            const int64_t n = tl1.start_s[r] ? s1.ranks[r].n : -1;
            oc_sim_buf_append(out, &n, sizeof n);
            oc_sim_buf_append(out, &tl1.proxy[r], sizeof tl1.proxy[r]);
            if (n > 0) {
                oc_sim_buf_append(out, tl1.start_s[r], (size_t)n * sizeof(double));
                oc_sim_buf_append(out, tl1.end_s[r], (size_t)n * sizeof(double));
            }
        }
        oc_timeline_free(&tl1);
    }
    oc_schedule_free(&s1);
    free(mt1);
    return rc;
}

/* The reduced run's timeline on s1 from what reduced_child sent: 0, or -1
 * where the bytes do not fit s1 (an internal error). */
static int reduced_timeline(const struct oc_sim_buf *b, const struct oc_model *m,
                            const struct oc_layout *l1, const struct oc_schedule_opts *so,
                            struct oc_schedule *s1, struct oc_metrics *mt1,
                            struct oc_timeline *tl1, struct oc_status *st)
{
    const int64_t world = oc_layout_world(l1);
    size_t at = 0;
    const unsigned char *d = (const unsigned char *)b->data;
#define TAKE(dst, bytes)                                                       \
    do {                                                                       \
        if (at + (bytes) > b->len)                                             \
            goto short_read;                                                   \
        memcpy((dst), d + at, (bytes));                                        \
        at += (bytes);                                                         \
    } while (0)
    unsigned char *record = oc_xcalloc((size_t)world, 1);
    int64_t *n = oc_xmalloc((size_t)world * sizeof *n);
    memset(tl1, 0, sizeof *tl1);
    memset(s1, 0, sizeof *s1);
    TAKE(mt1, sizeof *mt1);
    /* first pass: which ranks are recorded, the only ones s1 needs */
    size_t save = at;
    for (int64_t r = 0; r < world; r++) {
        int64_t proxy;
        TAKE(&n[r], sizeof n[r]);
        TAKE(&proxy, sizeof proxy);
        record[r] = n[r] >= 0;
        if (n[r] > 0)
            at += 2 * (size_t)n[r] * sizeof(double);
    }
    if (at != b->len)
        goto short_read;
    at = save;
    struct oc_schedule_opts so1 = *so;
    so1.only = record;
    if (oc_schedule_build(s1, m, l1, &so1, st) != 0) {
        free(record);
        free(n);
        return -1;
    }
    for (int64_t r = 0; r < world; r++)
        if (n[r] >= 0 && n[r] != s1->ranks[r].n)
            goto short_read;
    oc_timeline_init(tl1, s1, record);
    for (int64_t r = 0; r < s1->nranks; r++) {
        at += sizeof n[r];
        TAKE(&tl1->proxy[r], sizeof tl1->proxy[r]);
        if (n[r] > 0) {
            TAKE(tl1->start_s[r], (size_t)n[r] * sizeof(double));
            TAKE(tl1->end_s[r], (size_t)n[r] * sizeof(double));
        }
    }
#undef TAKE
    free(record);
    free(n);
    return 0;
short_read:
    free(record);
    free(n);
    if (tl1->start_s)
        oc_timeline_free(tl1);
    return oc_fail(st, "replay: the reduced run sent %zu bytes that do not fit its schedule",
                   b->len);
}

/* The fold from the reduced run's schedule s1, timeline tl1 and metrics
 * mt1 (each freed here): 1 when it held (out, and sched_out and tl_out
 * where given, filled), 0 when it does not hold (nothing filled), -1 with
 * st->msg. */
static int steady_unfold(const struct oc_model *m, const struct oc_topology *t,
                         const struct oc_layout *l, const struct oc_replay_opts *o,
                         const struct oc_rp_steady *sp, struct oc_schedule *s1,
                         struct oc_timeline *tl1, struct oc_metrics *mt1,
                         struct oc_metrics *out, struct oc_schedule *sched_out,
                         struct oc_timeline *tl_out, struct oc_status *st)
{
    const struct oc_schedule_opts so = {replay_grain(o), 1, NULL};
    char why[256] = "";
    /* test hook (tests/test_sim_steady.c): the fold taken as not holding */
    const int broken = getenv("OCSIM_TEST_STEADY_BREAK") != NULL;
    if (broken)
        snprintf(why, sizeof why, "OCSIM_TEST_STEADY_BREAK is set");
    int rc = 0, held = 0;
    if (!sched_out && !tl_out) {
        /* figures only: no full schedule or timeline (replay_priv.h) */
        if (!broken) {
            oc_metrics_init(out, l);
            rc = oc_rp_steady_figures(m, l, &so, s1, tl1, sp, out, st, why, sizeof why);
            held = rc == 0;
            if (held)
                oc_metrics_finish(out, m, t);
            rc = rc < 0 ? -1 : 0;
        }
    } else {
        struct oc_schedule s_local;
        struct oc_timeline tl_local;
        struct oc_schedule *s = sched_out ? sched_out : &s_local;
        struct oc_timeline *tl = tl_out ? tl_out : &tl_local;
        rc = oc_schedule_build(s, m, l, &so, st);
        if (rc == 0 && !broken && oc_rp_steady_unfold(s1, tl1, s, tl, sp, why, sizeof why) == 0) {
            held = 1;
            timeline_figures(tl, m, l, t, out);
            if (!tl_out)
                oc_timeline_free(tl);
        }
        if (rc == 0 && (!held || !sched_out))
            oc_schedule_free(s);
    }
    if (held) {
        out->coll_same = mt1->coll_same;
        out->sim_micro_batches = sp->m1;
    }
    oc_timeline_free(tl1);
    oc_schedule_free(s1);
    free(mt1);
    if (rc == 0 && !held)
        XBT_CDEBUG(ocsim_steady, "steady-state fold does not hold, the full replay runs: %s",
                   why);
    return rc != 0 ? -1 : held;
}

/* The reduced run's layout and options (the plan sp holds). */
static void steady_reduced(const struct oc_layout *l, const struct oc_replay_opts *o,
                           const struct oc_rp_steady *sp, struct oc_layout *l1,
                           struct oc_replay_opts *o1)
{
    *l1 = *l;
    l1->global_batch = sp->m1 * l1->dp * l1->micro_batch;
    *o1 = *o;
    o1->steady = 0;
    o1->records_only = 1; /* its schedule goes no further than its timeline */
}

int oc_replay_run_steady(const struct oc_model *m, const struct oc_topology *t,
                         const struct oc_layout *l, const struct oc_replay_opts *o,
                         struct oc_metrics *out, struct oc_schedule *sched_out,
                         struct oc_timeline *tl_out, struct oc_status *st)
{
    struct oc_rp_steady sp;
    /* noise makes the periods unlike: no fold (replay.h) */
    if (!o || !o->steady || o->var || !oc_rp_steady_plan(l, &sp))
        return oc_replay_run(m, t, l, o, out, sched_out, tl_out, st);
    memset(out, 0, sizeof *out);
    if (sched_out)
        memset(sched_out, 0, sizeof *sched_out);
    if (tl_out)
        memset(tl_out, 0, sizeof *tl_out);
    struct oc_layout l1;
    struct oc_replay_opts o1;
    steady_reduced(l, o, &sp, &l1, &o1);
    struct reduced_job j = {m, t, &l1, &o1};
    struct oc_sim_buf buf = {0};
    /* a log asked for in the options shows, as the caller's own */
    const struct oc_sim_fork_opts fo = {0, o->log != NULL};
    if (oc_sim_fork_run(reduced_child, &j, &fo, &buf, st) != 0) {
        oc_sim_buf_free(&buf);
        return -1;
    }
    const struct oc_schedule_opts so = {replay_grain(o), 1, NULL};
    struct oc_metrics *mt1 = oc_xmalloc(sizeof *mt1);
    struct oc_schedule s1;
    struct oc_timeline tl1;
    int rc = reduced_timeline(&buf, m, &l1, &so, &s1, mt1, &tl1, st);
    oc_sim_buf_free(&buf);
    if (rc != 0) {
        oc_schedule_free(&s1);
        free(mt1);
        return -1;
    }
    rc = steady_unfold(m, t, l, o, &sp, &s1, &tl1, mt1, out, sched_out, tl_out, st);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    /* the fold does not hold: every micro-batch, here */
    return oc_replay_run(m, t, l, o, out, sched_out, tl_out, st);
}

/* In a forked child that has not run SimGrid: the fold's reduced run in
 * this very process (no second fork, no copy of its timeline), metrics
 * only. 1 when the fold does not hold: SimGrid has run here, so the
 * caller forks the full replay. */
static int steady_here(const struct oc_model *m, const struct oc_topology *t,
                       const struct oc_layout *l, const struct oc_replay_opts *o,
                       struct oc_metrics *out, struct oc_status *st)
{
    struct oc_rp_steady sp;
    if (!o || !o->steady || o->var || !oc_rp_steady_plan(l, &sp))
        return oc_replay_run(m, t, l, o, out, NULL, NULL, st);
    memset(out, 0, sizeof *out);
    struct oc_layout l1;
    struct oc_replay_opts o1;
    steady_reduced(l, o, &sp, &l1, &o1);
    struct oc_metrics *mt1 = oc_xmalloc(sizeof *mt1);
    struct oc_schedule s1;
    struct oc_timeline tl1;
    if (oc_replay_run(m, t, &l1, &o1, mt1, &s1, &tl1, st) != 0) {
        free(mt1);
        return -1;
    }
    const int rc = steady_unfold(m, t, l, o, &sp, &s1, &tl1, mt1, out, NULL, NULL, st);
    return rc < 0 ? -1 : rc == 0;
}

int oc_replay_run_forked(const struct oc_model *m, const struct oc_topology *t,
                         const struct oc_layout *l,
                         const struct oc_replay_opts *o,
                         struct oc_metrics *out, double wall_limit_s,
                         struct oc_status *st)
{
    OC_ASSERT(m && t && l && out);
    memset(out, 0, sizeof *out);
    struct oc_replay_opts full;
    struct fork_job j = {m, t, l, o};
    struct oc_sim_fork_opts fo = {wall_limit_s > 0 ? wall_limit_s : 0, 0};
    struct oc_sim_buf buf = {0};
    if (oc_sim_fork_run(fork_child, &j, &fo, &buf, st) != 0) {
        oc_sim_buf_free(&buf);
        return -1;
    }
    if (buf.len == 1 && o && o->steady) {
        /* the fold did not hold: every micro-batch, in a fresh child */
        oc_sim_buf_free(&buf);
        full = *o;
        full.steady = 0;
        j.o = &full;
        if (oc_sim_fork_run(fork_child, &j, &fo, &buf, st) != 0) {
            oc_sim_buf_free(&buf);
            return -1;
        }
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
