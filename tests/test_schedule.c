/* test_schedule.c: the per-rank op lists of core/schedule.c.
 *
 * Built on a tiny GPT-style model filled in code (h 64, a 4, L 8, f 256,
 * V 512, P 128, tied embeddings) with s = 32, b = 1. Checks: unit orders
 * against hand derivations, SEND/RECV matching, a round-robin replay that
 * must finish without deadlock, activations in flight, memory replay against
 * oc_memory_stage, op counts against hand counts, interleaved = 1F1B work,
 * chunk grain = layer grain totals, groups, names, errors, build speed.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "layout.h"
#include "memory.h"
#include "model.h"
#include "schedule.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Fixtures                                                             */

struct cfg {
    int64_t t, p, d, m;
    enum oc_schedule_kind sched;
    int64_t v;
    int sp;
    enum oc_recompute rc;
    int shard, overlap;
    enum oc_rank_order order;
};

static struct oc_layout make_layout(const struct cfg *c)
{
    struct oc_layout l;
    oc_layout_default(&l);
    l.tp = c->t;
    l.pp = c->p;
    l.dp = c->d;
    l.micro_batch = 1;
    l.seq_length = 32;
    l.global_batch = c->m * c->d;
    l.schedule = c->sched;
    l.vchunks = c->v;
    l.sequence_parallel = c->sp;
    l.recompute = c->rc;
    l.shard_optimizer = c->shard;
    l.overlap_grad_reduce = c->overlap;
    l.order = c->order;
    return l;
}

/* A spread of layouts: every schedule, m below, at and above p, SP on and
 * off, each recompute mode, both rank orders, ZeRO-1 and overlap. */
static const struct cfg configs[] = {
    {1, 1, 1, 4, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0, OC_ORDER_TP_DP_PP},
    {2, 2, 2, 4, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0, OC_ORDER_TP_DP_PP},
    {2, 4, 1, 8, OC_SCHED_1F1B, 1, 1, OC_RECOMPUTE_SELECTIVE, 0, 0, OC_ORDER_TP_DP_PP},
    {1, 4, 2, 3, OC_SCHED_GPIPE, 1, 0, OC_RECOMPUTE_NONE, 1, 1, OC_ORDER_TP_PP_DP},
    {1, 4, 1, 2, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_FULL, 0, 0, OC_ORDER_TP_DP_PP},
    {2, 2, 2, 4, OC_SCHED_INTERLEAVED, 2, 1, OC_RECOMPUTE_FULL, 1, 1, OC_ORDER_TP_DP_PP},
    {1, 2, 1, 4, OC_SCHED_INTERLEAVED, 4, 0, OC_RECOMPUTE_NONE, 0, 0, OC_ORDER_TP_DP_PP},
    {1, 4, 1, 4, OC_SCHED_INTERLEAVED, 2, 0, OC_RECOMPUTE_SELECTIVE, 0, 0, OC_ORDER_TP_DP_PP},
    {2, 4, 1, 8, OC_SCHED_INTERLEAVED, 2, 1, OC_RECOMPUTE_NONE, 0, 1, OC_ORDER_TP_PP_DP},
    {1, 2, 2, 6, OC_SCHED_INTERLEAVED, 2, 0, OC_RECOMPUTE_NONE, 1, 0, OC_ORDER_TP_PP_DP},
    {4, 2, 1, 4, OC_SCHED_GPIPE, 1, 1, OC_RECOMPUTE_FULL, 0, 0, OC_ORDER_TP_DP_PP},
    {1, 8, 1, 16, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0, OC_ORDER_TP_DP_PP},
    {1, 4, 1, 12, OC_SCHED_INTERLEAVED, 2, 0, OC_RECOMPUTE_NONE, 0, 0, OC_ORDER_TP_DP_PP},
    {2, 2, 2, 8, OC_SCHED_GPIPE, 1, 1, OC_RECOMPUTE_SELECTIVE, 1, 1, OC_ORDER_TP_PP_DP},
};
#define NCONFIGS ((int)(sizeof configs / sizeof configs[0]))

static void build(struct oc_schedule *s, const struct oc_model *m,
                  const struct oc_layout *l, enum oc_grain g)
{
    struct oc_schedule_opts o = {g, 1};
    struct oc_status st = {{0}};
    int rc = oc_schedule_build(s, m, l, &o, &st);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
}

/* Ops of one rank matching kind/phase/part (-1: any). */
static int64_t count_ops(const struct oc_rank_ops *r, int kind, int phase,
                         int part)
{
    int64_t n = 0;
    for (int64_t i = 0; i < r->n; i++) {
        const struct oc_op *o = &r->ops[i];
        if ((kind < 0 || o->kind == kind) && (phase < 0 || o->phase == phase) &&
            (part < 0 || o->part == part))
            n++;
    }
    return n;
}

/* Sum of `count` over collectives of one kind, group and payload. */
static int64_t count_coll(const struct oc_rank_ops *r, int coll, int group,
                          double bytes)
{
    int64_t n = 0;
    for (int64_t i = 0; i < r->n; i++) {
        const struct oc_op *o = &r->ops[i];
        if (o->kind == OC_OP_COLLECTIVE && o->coll == coll &&
            o->group == group && (bytes < 0 || o->bytes == bytes))
            n += o->count;
    }
    return n;
}

static int64_t rank_of(const struct oc_layout *l, int64_t tp, int64_t pp,
                       int64_t dp)
{
    struct oc_coord c = {tp, pp, dp};
    return oc_layout_rank(l, c);
}

/* ------------------------------------------------------------------ */
/* Unit orders                                                          */

static void check_order(const struct oc_layout *l, int64_t m, int64_t stage,
                        const char *expect)
{
    struct oc_unit *u = NULL;
    int64_t n = oc_schedule_stage_order(l, m, stage, &u);
    char got[1024] = "";
    size_t k = 0;
    for (int64_t i = 0; i < n && k + 16 < sizeof got; i++) {
        if (l->schedule == OC_SCHED_INTERLEAVED)
            k += (size_t)snprintf(got + k, sizeof got - k, "%s%c%d.%d",
                                  i ? " " : "", u[i].backward ? 'B' : 'F',
                                  u[i].chunk, u[i].mb);
        else
            k += (size_t)snprintf(got + k, sizeof got - k, "%s%c%d",
                                  i ? " " : "", u[i].backward ? 'B' : 'F',
                                  u[i].mb);
    }
    free(u);
    CU_ASSERT_STRING_EQUAL(got, expect);
    if (strcmp(got, expect) != 0)
        fprintf(stderr, "\n  stage %lld: got    %s\n           expect %s\n",
                (long long)stage, got, expect);
}

static void test_order_1f1b(void)
{
    struct cfg c = {1, 4, 1, 8, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0,
                    OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    /* p = 4, m = 8. Stage 0: warm-up min(p-0-1, m) = 3 forwards (F0 F1 F2),
     * then m - 3 = 5 pairs (F3 B0)(F4 B1)(F5 B2)(F6 B3)(F7 B4), then the
     * remaining backwards B5 B6 B7. */
    check_order(&l, 8, 0, "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
    /* Stage 1: warm-up 2. */
    check_order(&l, 8, 1, "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
    /* Stage 3 (last): no warm-up, strict alternation. */
    check_order(&l, 8, 3, "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
    /* m = 2 < p - 1 = 3 at stage 0: warm-up capped at m, then drain. */
    check_order(&l, 2, 0, "F0 F1 B0 B1");
}

static void test_order_gpipe(void)
{
    struct cfg c = {1, 4, 1, 3, OC_SCHED_GPIPE, 1, 0, OC_RECOMPUTE_NONE, 0, 0,
                    OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    /* All forwards, then all backwards in micro-batch order, every stage. */
    check_order(&l, 3, 0, "F0 F1 F2 B0 B1 B2");
    check_order(&l, 3, 3, "F0 F1 F2 B0 B1 B2");
}

static void test_order_interleaved(void)
{
    struct cfg c = {1, 2, 1, 4, OC_SCHED_INTERLEAVED, 2, 0, OC_RECOMPUTE_NONE,
                    0, 0, OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    /* Megatron-LM, p = 2, v = 2, m = 4: total = m*v = 8 units per direction.
     * Forward k: chunk (k/p)%v, micro-batch (k/(p*v))*p + k%p:
     *   k 0..7 -> c0.0 c0.1 c1.0 c1.1 c0.2 c0.3 c1.2 c1.3
     * Backward k: chunk v-1-(k/p)%v, same micro-batch:
     *   k 0..7 -> c1.0 c1.1 c0.0 c0.1 c1.2 c1.3 c0.2 c0.3
     * Stage 0: warm-up min((2-0-1)*2 + (2-1)*2, 8) = 4 forwards (k 0..3);
     * then pairs (F4 B0)(F5 B1)(F6 B2)(F7 B3); then B4..B7. Written as
     * direction, chunk.micro-batch: */
    check_order(&l, 4, 0,
                "F0.0 F0.1 F1.0 F1.1 F0.2 B1.0 F0.3 B1.1 F1.2 B0.0 F1.3 B0.1 "
                "B1.2 B1.3 B0.2 B0.3");
    /* Stage 1: warm-up min(0 + 2, 8) = 2 (k 0, 1); pairs (F2 B0) .. (F7 B5);
     * then B6 B7. */
    check_order(&l, 4, 1,
                "F0.0 F0.1 F1.0 B1.0 F1.1 B1.1 F0.2 B0.0 F0.3 B0.1 F1.2 B1.2 "
                "F1.3 B1.3 B0.2 B0.3");
    /* m == p = 2: stage 0 warm-up min(4, 4) = 4, i.e. every forward first. */
    check_order(&l, 2, 0, "F0.0 F0.1 F1.0 F1.1 B1.0 B1.1 B0.0 B0.1");
}

/* ------------------------------------------------------------------ */
/* Point-to-point matching                                              */

struct msg {
    int64_t src, dst, tag;
    double bytes;
};

static int msg_cmp(const void *a, const void *b)
{
    const struct msg *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    if (x->tag != y->tag)
        return x->tag < y->tag ? -1 : 1;
    return 0;
}

/* Every SEND has exactly one RECV with the same (peer, tag, bytes); keys are
 * unique. Returns the number of messages, or -1 on a mismatch. */
static int64_t check_p2p(const struct oc_schedule *s)
{
    int64_t ns = 0, nr = 0;
    for (int64_t r = 0; r < s->nranks; r++) {
        ns += count_ops(&s->ranks[r], OC_OP_SEND, -1, -1);
        nr += count_ops(&s->ranks[r], OC_OP_RECV, -1, -1);
    }
    if (ns != nr)
        return -1;
    struct msg *snd = malloc((size_t)(ns + 1) * sizeof *snd);
    struct msg *rcv = malloc((size_t)(nr + 1) * sizeof *rcv);
    int64_t a = 0, b = 0;
    int bad = 0;
    for (int64_t r = 0; r < s->nranks; r++)
        for (int64_t i = 0; i < s->ranks[r].n; i++) {
            const struct oc_op *o = &s->ranks[r].ops[i];
            if (o->kind != OC_OP_SEND && o->kind != OC_OP_RECV)
                continue;
            if (o->peer < 0 || o->peer >= s->nranks || o->peer == r)
                bad = 1;
            if (o->kind == OC_OP_SEND)
                snd[a++] = (struct msg){r, o->peer, o->tag, o->bytes};
            else
                rcv[b++] = (struct msg){o->peer, r, o->tag, o->bytes};
        }
    qsort(snd, (size_t)ns, sizeof *snd, msg_cmp);
    qsort(rcv, (size_t)nr, sizeof *rcv, msg_cmp);
    for (int64_t i = 0; i < ns && !bad; i++) {
        if (msg_cmp(&snd[i], &rcv[i]) != 0 || snd[i].bytes != rcv[i].bytes)
            bad = 1;
        if (i > 0 && (msg_cmp(&snd[i - 1], &snd[i]) == 0 ||
                      msg_cmp(&rcv[i - 1], &rcv[i]) == 0))
            bad = 1;
    }
    free(snd);
    free(rcv);
    return bad ? -1 : ns;
}

static void test_p2p_matching(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    for (int i = 0; i < NCONFIGS; i++) {
        struct oc_layout l = make_layout(&configs[i]);
        for (int g = 0; g < 2; g++) {
            struct oc_schedule s;
            build(&s, &m, &l, (enum oc_grain)g);
            /* Messages: each micro-batch crosses p*v - 1 chunk boundaries
             * forward and as many backward, in every (tp, dp) pipeline. */
            int64_t expect = 2 * l.global_batch / l.dp * (l.pp * l.vchunks - 1) *
                             l.tp * l.dp;
            int64_t n = check_p2p(&s);
            CU_ASSERT_EQUAL(n, expect);
            if (n != expect)
                fprintf(stderr, "\n  config %d grain %d: %lld messages, "
                                "expected %lld\n",
                        i, g, (long long)n, (long long)expect);
            oc_schedule_free(&s);
        }
    }
}

/* ------------------------------------------------------------------ */
/* Collectives: every member of a group issues the same sequence        */

static int check_collectives(const struct oc_schedule *s)
{
    const struct oc_layout *l = &s->layout;
    int64_t members[64];
    for (int64_t r = 0; r < s->nranks; r++)
        for (int g = OC_GROUP_TP; g <= OC_GROUP_EMBED; g++) {
            int64_t n = oc_schedule_group(l, r, (enum oc_group)g, members, 64);
            const struct oc_rank_ops *a = &s->ranks[r];
            const struct oc_rank_ops *b = &s->ranks[members[0]];
            int64_t st = oc_layout_coord(l, r).pp;
            if (g == OC_GROUP_EMBED && st != 0 && st != l->pp - 1)
                b = a; /* not a member: must hold none (checked below) */
            (void)n;
            int64_t i = 0, j = 0;
            for (;;) {
                while (i < a->n && !(a->ops[i].kind == OC_OP_COLLECTIVE &&
                                     a->ops[i].group == g))
                    i++;
                while (j < b->n && !(b->ops[j].kind == OC_OP_COLLECTIVE &&
                                     b->ops[j].group == g))
                    j++;
                if (i == a->n || j == b->n)
                    break;
                const struct oc_op *x = &a->ops[i], *y = &b->ops[j];
                if (x->coll != y->coll || x->bytes != y->bytes ||
                    x->count != y->count || x->async != y->async ||
                    x->count < 1)
                    return 0;
                i++;
                j++;
            }
            if (i != a->n || j != b->n)
                return 0;
            if (g == OC_GROUP_EMBED && st != 0 && st != l->pp - 1 &&
                count_coll(a, OC_COLL_ALLREDUCE, OC_GROUP_EMBED, -1) != 0)
                return 0;
        }
    return 1;
}

/* ------------------------------------------------------------------ */
/* Replay: ranks round-robin; RECV waits for its SEND; a blocking       */
/* collective waits for every member; WAIT for the rank's async ones.   */

struct sim {
    const struct oc_schedule *s;
    int blocking_send; /* 1: a SEND waits for its receiver (rendezvous) */
    int64_t *pc;
    int64_t (*arrived)[4];  /* per rank and group: collectives reached */
    int64_t (*pending)[4];  /* per rank and group: last async index */
    unsigned char *entered; /* current collective already counted */
    struct msg *keys;       /* sorted SEND keys */
    unsigned char *sent, *posted;
    int64_t nkeys;
};

static int64_t find_msg(const struct sim *x, int64_t src, int64_t dst,
                        int64_t tag)
{
    struct msg k = {src, dst, tag, 0};
    struct msg *f = bsearch(&k, x->keys, (size_t)x->nkeys, sizeof k, msg_cmp);
    return f ? f - x->keys : -1;
}

static int all_arrived(const struct sim *x, int64_t r, int g, int64_t idx)
{
    int64_t members[64];
    int64_t n = oc_schedule_group(&x->s->layout, r, (enum oc_group)g, members, 64);
    for (int64_t i = 0; i < n; i++)
        if (x->arrived[members[i]][g] < idx)
            return 0;
    return 1;
}

/* Try to complete rank r's current op; 1 if it did. */
static int sim_step(struct sim *x, int64_t r)
{
    const struct oc_rank_ops *ro = &x->s->ranks[r];
    if (x->pc[r] >= ro->n)
        return 0;
    const struct oc_op *o = &ro->ops[x->pc[r]];
    switch (o->kind) {
    case OC_OP_SEND: {
        int64_t id = find_msg(x, r, o->peer, o->tag);
        OC_ASSERT(id >= 0);
        if (x->blocking_send && !x->posted[id])
            return 0;
        x->sent[id] = 1;
        break;
    }
    case OC_OP_RECV: {
        int64_t id = find_msg(x, o->peer, r, o->tag);
        OC_ASSERT(id >= 0);
        x->posted[id] = 1;
        if (!x->sent[id])
            return 0;
        break;
    }
    case OC_OP_COLLECTIVE:
        if (!x->entered[r]) {
            x->arrived[r][o->group]++;
            x->entered[r] = 1;
        }
        if (o->async) {
            x->pending[r][o->group] = x->arrived[r][o->group];
        } else if (!all_arrived(x, r, o->group, x->arrived[r][o->group])) {
            return 0;
        }
        x->entered[r] = 0;
        break;
    case OC_OP_WAIT:
        for (int g = OC_GROUP_TP; g <= OC_GROUP_EMBED; g++)
            if (!all_arrived(x, r, g, x->pending[r][g]))
                return 0;
        break;
    default:
        break;
    }
    x->pc[r]++;
    return 1;
}

/* 1 when every rank reaches the end of its list. */
static int simulate(const struct oc_schedule *s, int blocking_send)
{
    struct sim x;
    memset(&x, 0, sizeof x);
    x.s = s;
    x.blocking_send = blocking_send;
    int64_t n = s->nranks;
    x.pc = calloc((size_t)n, sizeof *x.pc);
    x.arrived = calloc((size_t)n, sizeof *x.arrived);
    x.pending = calloc((size_t)n, sizeof *x.pending);
    x.entered = calloc((size_t)n, 1);
    for (int64_t r = 0; r < n; r++)
        x.nkeys += count_ops(&s->ranks[r], OC_OP_SEND, -1, -1);
    x.keys = malloc((size_t)(x.nkeys + 1) * sizeof *x.keys);
    x.sent = calloc((size_t)x.nkeys + 1, 1);
    x.posted = calloc((size_t)x.nkeys + 1, 1);
    int64_t k = 0;
    for (int64_t r = 0; r < n; r++)
        for (int64_t i = 0; i < s->ranks[r].n; i++)
            if (s->ranks[r].ops[i].kind == OC_OP_SEND)
                x.keys[k++] = (struct msg){r, s->ranks[r].ops[i].peer,
                                           s->ranks[r].ops[i].tag, 0};
    qsort(x.keys, (size_t)x.nkeys, sizeof *x.keys, msg_cmp);
    int progress = 1;
    while (progress) {
        progress = 0;
        for (int64_t r = 0; r < n; r++)
            while (sim_step(&x, r))
                progress = 1;
    }
    int done = 1;
    for (int64_t r = 0; r < n; r++)
        if (x.pc[r] != s->ranks[r].n)
            done = 0;
    free(x.pc);
    free(x.arrived);
    free(x.pending);
    free(x.entered);
    free(x.keys);
    free(x.sent);
    free(x.posted);
    return done;
}

static void test_replay_no_deadlock(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    for (int i = 0; i < NCONFIGS; i++) {
        struct oc_layout l = make_layout(&configs[i]);
        for (int g = 0; g < 2; g++) {
            struct oc_schedule s;
            build(&s, &m, &l, (enum oc_grain)g);
            int ok = check_collectives(&s);
            CU_ASSERT(ok);
            int done = simulate(&s, 0);
            CU_ASSERT(done);
            if (!ok || !done)
                fprintf(stderr, "\n  config %d grain %d: collectives %d, "
                                "replay finished %d\n", i, g, ok, done);
            /* every list ends with the optimizer step or the weight
             * all-gather that follows it */
            for (int64_t r = 0; r < s.nranks; r++) {
                const struct oc_op *e = &s.ranks[r].ops[s.ranks[r].n - 1];
                CU_ASSERT(e->phase == OC_PHASE_OPTIMIZER);
            }
            oc_schedule_free(&s);
        }
    }
}

/* The replay can fail: a hand-made cycle (each rank receives before it
 * sends) deadlocks, and 1F1B with blocking (rendezvous) sends deadlocks as
 * schedule.h says, while the same lists finish with non-blocking sends. */
static void test_replay_detects_deadlock(void)
{
    struct cfg c = {1, 2, 1, 1, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0,
                    OC_ORDER_TP_DP_PP};
    struct oc_schedule s;
    memset(&s, 0, sizeof s);
    s.nranks = 2;
    s.layout = make_layout(&c);
    struct oc_rank_ops ro[2];
    struct oc_op ops[2][2];
    memset(ops, 0, sizeof ops);
    for (int r = 0; r < 2; r++) {
        ops[r][0].kind = OC_OP_RECV;
        ops[r][0].peer = 1 - r;
        ops[r][0].tag = 1 - r;
        ops[r][1].kind = OC_OP_SEND;
        ops[r][1].peer = 1 - r;
        ops[r][1].tag = r;
        ro[r].n = ro[r].cap = 2;
        ro[r].ops = ops[r];
    }
    s.ranks = ro;
    CU_ASSERT_EQUAL(check_p2p(&s), 2);
    CU_ASSERT_FALSE(simulate(&s, 0));

    struct oc_model m;
    oc_test_tiny_model(&m);
    struct cfg c2 = {1, 4, 1, 8, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0,
                     OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c2);
    struct oc_schedule s2;
    build(&s2, &m, &l, OC_GRAIN_CHUNK);
    CU_ASSERT_TRUE(simulate(&s2, 0));
    CU_ASSERT_FALSE(simulate(&s2, 1));
    oc_schedule_free(&s2);
}

/* ------------------------------------------------------------------ */
/* Memory                                                               */

/* Largest number of ALLOC'd and not yet FREE'd buffers of `buf`. */
static int64_t max_live(const struct oc_rank_ops *r, int buf)
{
    int64_t live = 0, peak = 0;
    for (int64_t i = 0; i < r->n; i++) {
        const struct oc_op *o = &r->ops[i];
        if (o->buf != buf)
            continue;
        if (o->kind == OC_OP_ALLOC)
            live++;
        else if (o->kind == OC_OP_FREE)
            live--;
        if (live > peak)
            peak = live;
    }
    return peak;
}

static double replay_peak_bytes(const struct oc_rank_ops *r)
{
    double cur = 0, peak = 0;
    for (int64_t i = 0; i < r->n; i++) {
        const struct oc_op *o = &r->ops[i];
        if (o->kind == OC_OP_ALLOC)
            cur += o->bytes;
        else if (o->kind == OC_OP_FREE)
            cur -= o->bytes;
        if (cur > peak)
            peak = cur;
    }
    return peak;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static void test_inflight(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    for (int i = 0; i < NCONFIGS; i++) {
        struct oc_layout l = make_layout(&configs[i]);
        int64_t nm = configs[i].m, p = l.pp, v = l.vchunks;
        struct oc_schedule s;
        build(&s, &m, &l, OC_GRAIN_LAYER);
        for (int64_t r = 0; r < s.nranks; r++) {
            int64_t i_st = oc_layout_coord(&l, r).pp, expect;
            /* Narayanan et al. 2021, section 2.2: 1F1B holds p - i, GPipe m;
             * interleaved: Megatron-LM's warm-up + 1 chunk-micro-batches. */
            if (l.schedule == OC_SCHED_GPIPE)
                expect = nm;
            else if (l.schedule == OC_SCHED_1F1B)
                expect = min64(p - i_st, nm);
            else
                expect = min64((p - i_st - 1) * 2 + (v - 1) * p + 1, nm * v);
            int64_t got = max_live(&s.ranks[r], OC_BUF_ACTIVATIONS);
            CU_ASSERT_EQUAL(got, expect);
            if (got != expect)
                fprintf(stderr, "\n  config %d rank %lld: %lld in flight, "
                                "expected %lld\n", i, (long long)r,
                        (long long)got, (long long)expect);
            /* logits live from head forward to head backward: as many as
             * activations on the last stage, none elsewhere */
            int64_t lg = max_live(&s.ranks[r], OC_BUF_LOGITS);
            if (i_st == p - 1 && l.schedule != OC_SCHED_INTERLEAVED)
                CU_ASSERT_EQUAL(lg, expect);
            if (i_st != p - 1)
                CU_ASSERT_EQUAL(lg, 0);
        }
        oc_schedule_free(&s);
    }
}

static void test_alloc_free_balance(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    for (int i = 0; i < NCONFIGS; i++) {
        struct oc_layout l = make_layout(&configs[i]);
        for (int g = 0; g < 2; g++) {
            struct oc_schedule s;
            build(&s, &m, &l, (enum oc_grain)g);
            for (int64_t r = 0; r < s.nranks; r++) {
                double bal[OC_BUF_COUNT] = {0};
                int64_t nal[OC_BUF_COUNT] = {0}, nfr[OC_BUF_COUNT] = {0};
                for (int64_t k = 0; k < s.ranks[r].n; k++) {
                    const struct oc_op *o = &s.ranks[r].ops[k];
                    if (o->kind == OC_OP_ALLOC) {
                        bal[o->buf] += o->bytes;
                        nal[o->buf]++;
                        CU_ASSERT(o->bytes > 0);
                    } else if (o->kind == OC_OP_FREE) {
                        bal[o->buf] -= o->bytes;
                        nfr[o->buf]++;
                    }
                }
                int64_t units = s.num_micro_batches * l.vchunks;
                CU_ASSERT_EQUAL(nal[OC_BUF_ACTIVATIONS], units);
                CU_ASSERT_EQUAL(nfr[OC_BUF_ACTIVATIONS], units);
                CU_ASSERT(fabs(bal[OC_BUF_ACTIVATIONS]) < 1e-6);
                CU_ASSERT_EQUAL(nal[OC_BUF_LOGITS], nfr[OC_BUF_LOGITS]);
                CU_ASSERT(fabs(bal[OC_BUF_LOGITS]) < 1e-6);
                /* weights, gradients, optimizer states: allocated once,
                 * never freed */
                for (int b = OC_BUF_WEIGHTS; b <= OC_BUF_OPTIMIZER; b++) {
                    CU_ASSERT_EQUAL(nal[b], 1);
                    CU_ASSERT_EQUAL(nfr[b], 0);
                }
            }
            oc_schedule_free(&s);
        }
    }
    /* emit_memory = 0: no ALLOC/FREE at all */
    struct oc_layout l = make_layout(&configs[1]);
    struct oc_schedule s;
    struct oc_schedule_opts o = {OC_GRAIN_LAYER, 0};
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_schedule_build(&s, &m, &l, &o, &st), 0);
    for (int64_t r = 0; r < s.nranks; r++) {
        CU_ASSERT_EQUAL(count_ops(&s.ranks[r], OC_OP_ALLOC, -1, -1), 0);
        CU_ASSERT_EQUAL(count_ops(&s.ranks[r], OC_OP_FREE, -1, -1), 0);
    }
    oc_schedule_free(&s);
}

/* The replayed peak equals memory.c's: its closed form for GPipe and 1F1B,
 * its own replay of Megatron-LM's unit order for interleaved. */
static void test_memory_peak_closed_form(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    int checked = 0;
    for (int i = 0; i < NCONFIGS; i++) {
        struct oc_layout l = make_layout(&configs[i]);
        for (int g = 0; g < 2; g++) {
            struct oc_schedule s;
            build(&s, &m, &l, (enum oc_grain)g);
            for (int64_t r = 0; r < s.nranks; r++) {
                struct oc_mem_breakdown b;
                oc_memory_stage(&m, &l, oc_layout_coord(&l, r).pp, &b);
                double got = replay_peak_bytes(&s.ranks[r]);
                OC_ASSERT_REL(got, b.total_bytes, 1e-9);
                checked++;
            }
            oc_schedule_free(&s);
        }
    }
    CU_ASSERT(checked > 100);
}

/* ------------------------------------------------------------------ */
/* Hand counts                                                          */

static void test_counts_by_hand(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    /* t = 2, p = 2, d = 2, m = 4, 1F1B, layer grain, no SP, no recompute,
     * no ZeRO, no overlap; L = 8 so Lc = 4: stage 0 layers 0-3 (+ embedding),
     * stage 1 layers 4-7 (+ head). Tied embeddings. */
    struct oc_layout l = make_layout(&configs[1]);
    struct oc_schedule s;
    build(&s, &m, &l, OC_GRAIN_LAYER);
    CU_ASSERT_EQUAL(s.nranks, 8);
    CU_ASSERT_EQUAL(s.num_micro_batches, 4);
    double tpb = 32.0 * 1 * 64 * 2; /* s*b*h*2 = 4096 bytes */
    for (int64_t r = 0; r < s.nranks; r++) {
        const struct oc_rank_ops *ro = &s.ranks[r];
        int64_t st = oc_layout_coord(&l, r).pp;
        int64_t params = oc_mem_stage_params(&m, &l, st);
        /* 4 micro-batches x 4 layers of each part in each direction */
        CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_ATTN), 16);
        CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_MLP), 16);
        CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_BWD, OC_PART_ATTN), 16);
        CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_BWD, OC_PART_MLP), 16);
        CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_RECOMPUTE, -1), 0);
        CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_OPTIMIZER, OC_PART_ALL), 1);
        CU_ASSERT_EQUAL(count_ops(ro, OC_OP_WAIT, -1, -1), 1);
        /* TP all-reduces of s*b*h*2 per micro-batch: stage 0: 1 (embedding)
         * + 4 layers x 2 forward + 4 x 2 backward = 17; stage 1: 8 + 8 + 1
         * (head input gradient) = 17. Times 4 micro-batches = 68. */
        CU_ASSERT_EQUAL(count_coll(ro, OC_COLL_ALLREDUCE, OC_GROUP_TP, tpb), 68);
        CU_ASSERT_EQUAL(count_coll(ro, OC_COLL_ALLGATHER, OC_GROUP_TP, -1), 0);
        CU_ASSERT_EQUAL(count_coll(ro, OC_COLL_REDUCESCATTER, OC_GROUP_TP, -1), 0);
        /* one blocking DP all-reduce of the 16-bit gradients */
        CU_ASSERT_EQUAL(count_coll(ro, OC_COLL_ALLREDUCE, OC_GROUP_DP, 2.0 * params), 1);
        /* tied embedding: V*h/t*2 = 512*64/2*2 = 32768 bytes, both stages */
        CU_ASSERT_EQUAL(count_coll(ro, OC_COLL_ALLREDUCE, OC_GROUP_EMBED, 32768.0), 1);
        CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COLLECTIVE, -1, -1) ,
                        st == 0 ? 68 + 2 : 68 + 4 + 2);
        if (st == 0) {
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_EMBED), 4);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_BWD, OC_PART_EMBED), 4);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, -1, OC_PART_HEAD), 0);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_SEND, OC_PHASE_FWD, -1), 4);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_RECV, OC_PHASE_BWD, -1), 4);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_RECV, OC_PHASE_FWD, -1), 0);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_SEND, OC_PHASE_BWD, -1), 0);
            /* 3 state buffers + 4 activations; 4 frees */
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_ALLOC, -1, -1), 7);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_FREE, -1, -1), 4);
            /* 73 compute + 70 collective + 8 p2p + 11 memory + 1 wait */
            CU_ASSERT_EQUAL(ro->n, 163);
        } else {
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_HEAD), 4);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, OC_PHASE_BWD, OC_PART_HEAD), 4);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_COMPUTE, -1, OC_PART_EMBED), 0);
            /* cross-entropy: one op of 3 all-reduces of s*b*4 = 128 bytes
             * per micro-batch */
            CU_ASSERT_EQUAL(count_coll(ro, OC_COLL_ALLREDUCE, OC_GROUP_TP, 128.0), 12);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_RECV, OC_PHASE_FWD, -1), 4);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_SEND, OC_PHASE_BWD, -1), 4);
            /* 3 + 4 activations + 4 logits; 8 frees */
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_ALLOC, -1, -1), 11);
            CU_ASSERT_EQUAL(count_ops(ro, OC_OP_FREE, -1, -1), 8);
            /* 73 compute + 74 collective + 8 p2p + 19 memory + 1 wait */
            CU_ASSERT_EQUAL(ro->n, 175);
        }
        /* FLOPs per TP rank. Layer forward (model.h, GPT block, f = 4h):
         * 24*b*s*h^2 + 4*b*s^2*h = 24*32*4096 + 4*1024*64 = 3 407 872, over
         * t = 2: 1 703 936. Forward + backward = 3x, 4 layers, 4 micro-
         * batches: 81 788 928. Head (stage 1): 2*b*s*h*V / t = 1 048 576
         * forward, x3 x4 = 12 582 912. */
        double fl = 0;
        for (int64_t k = 0; k < ro->n; k++)
            if (ro->ops[k].kind == OC_OP_COMPUTE)
                fl += ro->ops[k].flops;
        OC_ASSERT_REL(fl, st == 0 ? 81788928.0 : 81788928.0 + 12582912.0, 1e-12);
        /* pipeline messages carry s*b*h*2 bytes */
        for (int64_t k = 0; k < ro->n; k++)
            if (ro->ops[k].kind == OC_OP_SEND || ro->ops[k].kind == OC_OP_RECV)
                CU_ASSERT_EQUAL(ro->ops[k].bytes, tpb);
        /* optimizer: 28 bytes per parameter, unsharded */
        const struct oc_op *opt = &ro->ops[ro->n - 1];
        CU_ASSERT_EQUAL(opt->kind, OC_OP_COMPUTE);
        CU_ASSERT_EQUAL(opt->phase, OC_PHASE_OPTIMIZER);
        OC_ASSERT_REL(opt->hbm_bytes, 28.0 * params, 1e-12);
        CU_ASSERT_EQUAL(ro->ops[ro->n - 2].kind, OC_OP_WAIT);
    }
    /* The first forward unit of rank 0 (tp0, pp0, dp0), op by op. */
    const struct oc_rank_ops *r0 = &s.ranks[0];
    static const struct { int kind, phase, part, layer; } head[] = {
        {OC_OP_ALLOC, OC_PHASE_FWD, OC_PART_ALL, -1},      /* weights */
        {OC_OP_ALLOC, OC_PHASE_FWD, OC_PART_ALL, -1},      /* grads */
        {OC_OP_ALLOC, OC_PHASE_FWD, OC_PART_ALL, -1},      /* optimizer */
        {OC_OP_ALLOC, OC_PHASE_FWD, OC_PART_ALL, 0},       /* activations */
        {OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_EMBED, -1},
        {OC_OP_COLLECTIVE, OC_PHASE_FWD, OC_PART_EMBED, -1},
        {OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_ATTN, 0},
        {OC_OP_COLLECTIVE, OC_PHASE_FWD, OC_PART_ATTN, 0},
        {OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_MLP, 0},
        {OC_OP_COLLECTIVE, OC_PHASE_FWD, OC_PART_MLP, 0},
        {OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_ATTN, 1},
    };
    for (size_t k = 0; k < sizeof head / sizeof head[0]; k++) {
        CU_ASSERT_EQUAL(r0->ops[k].kind, head[k].kind);
        CU_ASSERT_EQUAL(r0->ops[k].phase, head[k].phase);
        CU_ASSERT_EQUAL(r0->ops[k].part, head[k].part);
        CU_ASSERT_EQUAL(r0->ops[k].layer_first, head[k].layer);
    }
    CU_ASSERT_EQUAL(r0->ops[0].buf, OC_BUF_WEIGHTS);
    CU_ASSERT_EQUAL(r0->ops[0].mb, -1);
    CU_ASSERT_EQUAL(r0->ops[3].buf, OC_BUF_ACTIVATIONS);
    CU_ASSERT_EQUAL(r0->ops[3].mb, 0);
    CU_ASSERT_EQUAL(r0->ops[3].layer_count, 4);
    oc_schedule_free(&s);
}

/* Sequence parallel + full recompute, t = 2, p = 2, d = 1, m = 2. */
static void test_counts_sp_full(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    struct cfg c = {2, 2, 1, 2, OC_SCHED_1F1B, 1, 1, OC_RECOMPUTE_FULL, 0, 0,
                    OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    for (int g = 0; g < 2; g++) {
        struct oc_schedule s;
        build(&s, &m, &l, (enum oc_grain)g);
        const struct oc_rank_ops *r0 = &s.ranks[rank_of(&l, 0, 0, 0)];
        const struct oc_rank_ops *r1 = &s.ranks[rank_of(&l, 1, 1, 0)];
        /* Per micro-batch, SP puts an all-gather before and a reduce-scatter
         * after each part, in forward, recompute and backward:
         *   layers: 4 x 2 parts x (fwd + recompute + bwd) = 24 AG, 24 RS
         *   stage 0: embedding RS (fwd), AG (bwd)  -> 25 AG, 25 RS
         *   stage 1: head AG (fwd), RS (bwd)       -> 25 AG, 25 RS
         * x 2 micro-batches = 50 each. */
        CU_ASSERT_EQUAL(count_coll(r0, OC_COLL_ALLGATHER, OC_GROUP_TP, 4096.0), 50);
        CU_ASSERT_EQUAL(count_coll(r0, OC_COLL_REDUCESCATTER, OC_GROUP_TP, 4096.0), 50);
        CU_ASSERT_EQUAL(count_coll(r1, OC_COLL_ALLGATHER, OC_GROUP_TP, 4096.0), 50);
        CU_ASSERT_EQUAL(count_coll(r1, OC_COLL_REDUCESCATTER, OC_GROUP_TP, 4096.0), 50);
        CU_ASSERT_EQUAL(count_coll(r0, OC_COLL_ALLREDUCE, OC_GROUP_TP, -1), 0);
        CU_ASSERT_EQUAL(count_coll(r1, OC_COLL_ALLREDUCE, OC_GROUP_TP, 128.0), 6);
        /* SP pipeline messages: s*b*h*2 / t = 2048 bytes */
        for (int64_t k = 0; k < r0->n; k++)
            if (r0->ops[k].kind == OC_OP_SEND)
                CU_ASSERT_EQUAL(r0->ops[k].bytes, 2048.0);
        if (g == OC_GRAIN_LAYER) {
            CU_ASSERT_EQUAL(count_ops(r0, OC_OP_COMPUTE, OC_PHASE_RECOMPUTE, OC_PART_ATTN), 8);
            CU_ASSERT_EQUAL(count_ops(r0, OC_OP_COMPUTE, OC_PHASE_RECOMPUTE, OC_PART_MLP), 8);
        } else {
            /* one compute per unit (2 micro-batches x fwd, bwd) + optimizer;
             * stage 1's forward unit: AG x9 (8 layer + head), compute,
             * RS x8, CE x3; its backward: AG x16, compute, RS x17 (16 + head) */
            CU_ASSERT_EQUAL(count_ops(r1, OC_OP_COMPUTE, -1, -1), 5);
            int64_t n_ag9 = 0, n_rs8 = 0, n_ag16 = 0, n_rs17 = 0;
            for (int64_t k = 0; k < r1->n; k++) {
                const struct oc_op *o = &r1->ops[k];
                if (o->kind != OC_OP_COLLECTIVE || o->group != OC_GROUP_TP)
                    continue;
                n_ag9 += o->coll == OC_COLL_ALLGATHER && o->count == 9 && o->phase == OC_PHASE_FWD;
                n_rs8 += o->coll == OC_COLL_REDUCESCATTER && o->count == 8 && o->phase == OC_PHASE_FWD;
                n_ag16 += o->coll == OC_COLL_ALLGATHER && o->count == 16 && o->phase == OC_PHASE_BWD;
                n_rs17 += o->coll == OC_COLL_REDUCESCATTER && o->count == 17 && o->phase == OC_PHASE_BWD;
            }
            CU_ASSERT_EQUAL(n_ag9, 2);
            CU_ASSERT_EQUAL(n_rs8, 2);
            CU_ASSERT_EQUAL(n_ag16, 2);
            CU_ASSERT_EQUAL(n_rs17, 2);
        }
        /* FLOPs: full recompute adds one forward: 4x the forward per layer:
         * 1 703 936 x 4 x 4 layers x 2 micro-batches = 54 525 952 (stage 0). */
        double fl = 0;
        for (int64_t k = 0; k < r0->n; k++)
            if (r0->ops[k].kind == OC_OP_COMPUTE)
                fl += r0->ops[k].flops;
        OC_ASSERT_REL(fl, 54525952.0, 1e-12);
        oc_schedule_free(&s);
    }
}

/* Selective recompute: one RECOMPUTE ATTN per layer per micro-batch with the
 * scores' 4*b*s^2*h / t = 4*1024*64/2 = 131 072 FLOPs. */
static void test_selective_recompute(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    struct cfg c = {2, 2, 1, 2, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_SELECTIVE, 0,
                    0, OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    struct oc_schedule s;
    build(&s, &m, &l, OC_GRAIN_LAYER);
    const struct oc_rank_ops *r = &s.ranks[0];
    CU_ASSERT_EQUAL(count_ops(r, OC_OP_COMPUTE, OC_PHASE_RECOMPUTE, OC_PART_ATTN), 8);
    CU_ASSERT_EQUAL(count_ops(r, OC_OP_COMPUTE, OC_PHASE_RECOMPUTE, OC_PART_MLP), 0);
    for (int64_t k = 0; k < r->n; k++) {
        const struct oc_op *o = &r->ops[k];
        if (o->kind == OC_OP_COMPUTE && o->phase == OC_PHASE_RECOMPUTE) {
            CU_ASSERT_EQUAL(o->flops, 131072.0);
            /* right before the same layer's attention backward */
            CU_ASSERT_EQUAL(r->ops[k + 1].kind, OC_OP_COMPUTE);
            CU_ASSERT_EQUAL(r->ops[k + 1].phase, OC_PHASE_BWD);
            CU_ASSERT_EQUAL(r->ops[k + 1].part, OC_PART_ATTN);
            CU_ASSERT_EQUAL(r->ops[k + 1].layer_first, o->layer_first);
        }
    }
    oc_schedule_free(&s);
}

/* ------------------------------------------------------------------ */
/* Same work under every schedule; chunk grain = layer grain            */

struct work {
    int32_t mb, layer, phase, part;
    double flops;
};

static int work_cmp(const void *a, const void *b)
{
    const struct work *x = a, *y = b;
    if (x->mb != y->mb)
        return x->mb - y->mb;
    if (x->layer != y->layer)
        return x->layer - y->layer;
    if (x->phase != y->phase)
        return x->phase - y->phase;
    return x->part - y->part;
}

/* Compute ops of the pipeline (tp 0, dp 0), sorted. */
static int64_t pipeline_work(const struct oc_schedule *s, struct work **out)
{
    const struct oc_layout *l = &s->layout;
    int64_t n = 0;
    for (int64_t st = 0; st < l->pp; st++)
        n += s->ranks[rank_of(l, 0, st, 0)].n;
    struct work *w = malloc((size_t)n * sizeof *w);
    int64_t k = 0;
    for (int64_t st = 0; st < l->pp; st++) {
        const struct oc_rank_ops *r = &s->ranks[rank_of(l, 0, st, 0)];
        for (int64_t i = 0; i < r->n; i++) {
            const struct oc_op *o = &r->ops[i];
            if (o->kind == OC_OP_COMPUTE && o->phase != OC_PHASE_OPTIMIZER)
                w[k++] = (struct work){o->mb, o->layer_first, o->phase,
                                       o->part, o->flops};
        }
    }
    qsort(w, (size_t)k, sizeof *w, work_cmp);
    *out = w;
    return k;
}

static void test_interleaved_same_work(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    struct cfg base = {2, 2, 1, 4, OC_SCHED_1F1B, 1, 1, OC_RECOMPUTE_SELECTIVE,
                       0, 0, OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&base);
    struct oc_schedule s;
    build(&s, &m, &l, OC_GRAIN_LAYER);
    struct work *ref;
    int64_t nref = pipeline_work(&s, &ref);
    /* 4 micro-batches x 8 layers x (2 fwd + 2 bwd + 1 recompute) + 4 x
     * (embed fwd, bwd, head fwd, bwd) = 160 + 16 */
    CU_ASSERT_EQUAL(nref, 176);
    oc_schedule_free(&s);
    const int64_t vs[] = {2, 4};
    for (int i = 0; i < 2; i++) {
        struct oc_layout li = l;
        li.schedule = OC_SCHED_INTERLEAVED;
        li.vchunks = vs[i];
        build(&s, &m, &li, OC_GRAIN_LAYER);
        struct work *w;
        int64_t n = pipeline_work(&s, &w);
        CU_ASSERT_EQUAL_FATAL(n, nref);
        double fa = 0, fb = 0;
        for (int64_t k = 0; k < n; k++) {
            CU_ASSERT_EQUAL(work_cmp(&w[k], &ref[k]), 0);
            CU_ASSERT_EQUAL(w[k].flops, ref[k].flops);
            fa += w[k].flops;
            fb += ref[k].flops;
        }
        OC_ASSERT_REL(fa, fb, 1e-12);
        free(w);
        oc_schedule_free(&s);
    }
    free(ref);
}

struct totals {
    double flops, hbm, p2p_bytes, mem[OC_BUF_COUNT][2];
    double coll_bytes[4][4]; /* [group][coll]: sum of bytes*count */
    int64_t coll_n[4][4];    /* [group][coll]: sum of count */
    int64_t n_send, n_recv, n_alloc, n_free, n_wait;
};

static void rank_totals(const struct oc_rank_ops *r, struct totals *t)
{
    memset(t, 0, sizeof *t);
    for (int64_t i = 0; i < r->n; i++) {
        const struct oc_op *o = &r->ops[i];
        switch (o->kind) {
        case OC_OP_COMPUTE:
            t->flops += o->flops;
            t->hbm += o->hbm_bytes;
            break;
        case OC_OP_SEND:
            t->n_send++;
            t->p2p_bytes += o->bytes;
            break;
        case OC_OP_RECV:
            t->n_recv++;
            t->p2p_bytes += o->bytes;
            break;
        case OC_OP_COLLECTIVE:
            t->coll_bytes[o->group][o->coll] += o->bytes * o->count;
            t->coll_n[o->group][o->coll] += o->count;
            break;
        case OC_OP_ALLOC:
            t->n_alloc++;
            t->mem[o->buf][0] += o->bytes;
            break;
        case OC_OP_FREE:
            t->n_free++;
            t->mem[o->buf][1] += o->bytes;
            break;
        case OC_OP_WAIT:
            t->n_wait++;
            break;
        }
    }
}

static void test_chunk_grain_totals(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    for (int i = 0; i < NCONFIGS; i++) {
        struct oc_layout l = make_layout(&configs[i]);
        struct oc_schedule a, b;
        build(&a, &m, &l, OC_GRAIN_LAYER);
        build(&b, &m, &l, OC_GRAIN_CHUNK);
        for (int64_t r = 0; r < a.nranks; r++) {
            struct totals x, y;
            rank_totals(&a.ranks[r], &x);
            rank_totals(&b.ranks[r], &y);
            CU_ASSERT(x.flops > 0);
            OC_ASSERT_REL(y.flops, x.flops, 1e-12);
            OC_ASSERT_REL(y.hbm, x.hbm, 1e-12);
            CU_ASSERT_EQUAL(y.p2p_bytes, x.p2p_bytes);
            CU_ASSERT_EQUAL(y.n_send, x.n_send);
            CU_ASSERT_EQUAL(y.n_recv, x.n_recv);
            CU_ASSERT_EQUAL(y.n_alloc, x.n_alloc);
            CU_ASSERT_EQUAL(y.n_free, x.n_free);
            CU_ASSERT_EQUAL(y.n_wait, x.n_wait);
            CU_ASSERT(memcmp(y.mem, x.mem, sizeof x.mem) == 0);
            CU_ASSERT(memcmp(y.coll_n, x.coll_n, sizeof x.coll_n) == 0);
            for (int g = 0; g < 4; g++)
                for (int c = 0; c < 4; c++)
                    OC_ASSERT_REL(y.coll_bytes[g][c], x.coll_bytes[g][c], 1e-12);
            /* one compute op per unit, plus the optimizer */
            CU_ASSERT_EQUAL(count_ops(&b.ranks[r], OC_OP_COMPUTE, -1, OC_PART_CHUNK),
                            2 * a.num_micro_batches * l.vchunks);
            CU_ASSERT_EQUAL(count_ops(&b.ranks[r], OC_OP_COMPUTE, -1, -1),
                            2 * a.num_micro_batches * l.vchunks + 1);
        }
        oc_schedule_free(&a);
        oc_schedule_free(&b);
    }
}

/* ------------------------------------------------------------------ */
/* Op fields                                                            */

static void test_op_fields(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    for (int i = 0; i < NCONFIGS; i++) {
        struct oc_layout l = make_layout(&configs[i]);
        struct oc_schedule s;
        build(&s, &m, &l, OC_GRAIN_LAYER);
        for (int64_t r = 0; r < s.nranks; r++) {
            int64_t st = oc_layout_coord(&l, r).pp;
            for (int64_t k = 0; k < s.ranks[r].n; k++) {
                const struct oc_op *o = &s.ranks[r].ops[k];
                CU_ASSERT_EQUAL(o->stage, st);
                CU_ASSERT(o->chunk >= 0 && o->chunk < l.vchunks);
                CU_ASSERT(o->mb >= -1 && o->mb < s.num_micro_batches);
                int per_mb = !(o->kind == OC_OP_WAIT ||
                               o->phase == OC_PHASE_OPTIMIZER ||
                               (o->kind == OC_OP_COLLECTIVE &&
                                o->group != OC_GROUP_TP) ||
                               ((o->kind == OC_OP_ALLOC || o->kind == OC_OP_FREE) &&
                                o->buf <= OC_BUF_OPTIMIZER));
                CU_ASSERT_EQUAL(o->mb >= 0, per_mb);
                if (o->kind == OC_OP_COLLECTIVE)
                    CU_ASSERT(o->count >= 1 && o->bytes > 0);
                /* a layer op's layer sits in this stage's chunk */
                if (o->kind == OC_OP_COMPUTE &&
                    (o->part == OC_PART_ATTN || o->part == OC_PART_MLP)) {
                    int64_t lc = 8 / (l.pp * l.vchunks);
                    CU_ASSERT_EQUAL(o->layer_first / lc,
                                    o->chunk * l.pp + st);
                    CU_ASSERT_EQUAL(o->layer_count, 1);
                }
            }
        }
        oc_schedule_free(&s);
    }
}

/* ------------------------------------------------------------------ */
/* DP: blocking vs overlapped, ZeRO-1                                   */

static void test_dp_reduction(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    /* overlap + ZeRO-1, interleaved v2: one async reduce-scatter per chunk,
     * right after that chunk's last backward; the chunks' bytes add up to
     * the stage's 2*params; WAIT; optimizer over params/d; all-gather. */
    struct cfg c = {1, 2, 2, 4, OC_SCHED_INTERLEAVED, 2, 0, OC_RECOMPUTE_NONE,
                    1, 1, OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    struct oc_schedule s;
    build(&s, &m, &l, OC_GRAIN_CHUNK);
    for (int64_t r = 0; r < s.nranks; r++) {
        const struct oc_rank_ops *ro = &s.ranks[r];
        int64_t st = oc_layout_coord(&l, r).pp;
        double params = (double)oc_mem_stage_params(&m, &l, st);
        double sum = 0;
        int64_t n_async = 0, seen_chunk[2] = {0, 0};
        for (int64_t k = 0; k < ro->n; k++) {
            const struct oc_op *o = &ro->ops[k];
            if (o->kind == OC_OP_COLLECTIVE && o->group == OC_GROUP_DP &&
                o->async) {
                n_async++;
                sum += o->bytes;
                CU_ASSERT_EQUAL(o->coll, OC_COLL_REDUCESCATTER);
                seen_chunk[o->chunk]++;
                /* preceded by the FREE of the chunk's last backward, and no
                 * later unit of that chunk */
                CU_ASSERT_EQUAL(ro->ops[k - 1].kind, OC_OP_FREE);
                CU_ASSERT_EQUAL(ro->ops[k - 1].chunk, o->chunk);
                for (int64_t j = k + 1; j < ro->n; j++)
                    CU_ASSERT(!(ro->ops[j].mb >= 0 && ro->ops[j].chunk == o->chunk));
            }
        }
        CU_ASSERT_EQUAL(n_async, 2);
        CU_ASSERT_EQUAL(seen_chunk[0], 1);
        CU_ASSERT_EQUAL(seen_chunk[1], 1);
        OC_ASSERT_REL(sum, 2.0 * params, 1e-12);
        CU_ASSERT_EQUAL(count_coll(ro, OC_COLL_ALLREDUCE, OC_GROUP_DP, -1), 0);
        const struct oc_op *ag = &ro->ops[ro->n - 1];
        const struct oc_op *opt = &ro->ops[ro->n - 2];
        CU_ASSERT_EQUAL(ag->kind, OC_OP_COLLECTIVE);
        CU_ASSERT_EQUAL(ag->coll, OC_COLL_ALLGATHER);
        CU_ASSERT_EQUAL(ag->group, OC_GROUP_DP);
        CU_ASSERT_EQUAL(ag->bytes, 2.0 * params);
        CU_ASSERT_EQUAL(opt->phase, OC_PHASE_OPTIMIZER);
        OC_ASSERT_REL(opt->hbm_bytes, 28.0 * params / 2, 1e-12);
        CU_ASSERT_EQUAL(ro->ops[ro->n - 3].kind, OC_OP_WAIT);
        /* ZeRO-1: optimizer states 12*params/d */
        CU_ASSERT_EQUAL(ro->ops[2].buf, OC_BUF_OPTIMIZER);
        OC_ASSERT_REL(ro->ops[2].bytes, 12.0 * params / 2, 1e-12);
    }
    oc_schedule_free(&s);

    /* d = 1: no DP collective at all */
    struct cfg c1 = {2, 2, 1, 4, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 1, 1,
                     OC_ORDER_TP_DP_PP};
    l = make_layout(&c1);
    build(&s, &m, &l, OC_GRAIN_LAYER);
    for (int64_t r = 0; r < s.nranks; r++)
        for (int k = 0; k < 4; k++)
            CU_ASSERT_EQUAL(count_coll(&s.ranks[r], k, OC_GROUP_DP, -1), 0);
    oc_schedule_free(&s);
}

/* ------------------------------------------------------------------ */
/* Groups, names, errors, speed                                          */

static void test_groups(void)
{
    struct cfg c = {2, 2, 2, 4, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0,
                    OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    int64_t g[4];
    /* tp-dp-pp: rank = tp + 2*(dp + 2*pp); rank 5 = (tp1, dp0, pp1) */
    CU_ASSERT_EQUAL(oc_schedule_group(&l, 5, OC_GROUP_TP, g, 4), 2);
    CU_ASSERT(g[0] == 4 && g[1] == 5);
    CU_ASSERT_EQUAL(oc_schedule_group(&l, 5, OC_GROUP_DP, g, 4), 2);
    CU_ASSERT(g[0] == 5 && g[1] == 7);
    CU_ASSERT_EQUAL(oc_schedule_group(&l, 5, OC_GROUP_EMBED, g, 4), 2);
    CU_ASSERT(g[0] == 1 && g[1] == 5);
    /* tp-pp-dp: rank = tp + 2*(pp + 2*dp); rank 5 = (tp1, pp0, dp1) */
    l.order = OC_ORDER_TP_PP_DP;
    CU_ASSERT_EQUAL(oc_schedule_group(&l, 5, OC_GROUP_TP, g, 4), 2);
    CU_ASSERT(g[0] == 4 && g[1] == 5);
    CU_ASSERT_EQUAL(oc_schedule_group(&l, 5, OC_GROUP_DP, g, 4), 2);
    CU_ASSERT(g[0] == 1 && g[1] == 5);
    CU_ASSERT_EQUAL(oc_schedule_group(&l, 5, OC_GROUP_EMBED, g, 4), 2);
    CU_ASSERT(g[0] == 5 && g[1] == 7);
    /* the count is returned even when cap is smaller */
    g[1] = -7;
    CU_ASSERT_EQUAL(oc_schedule_group(&l, 5, OC_GROUP_DP, g, 1), 2);
    CU_ASSERT_EQUAL(g[1], -7);
}

static void test_names(void)
{
    CU_ASSERT_STRING_EQUAL(oc_op_kind_name(OC_OP_COMPUTE), "compute");
    CU_ASSERT_STRING_EQUAL(oc_op_kind_name(OC_OP_SEND), "send");
    CU_ASSERT_STRING_EQUAL(oc_op_kind_name(OC_OP_WAIT), "wait");
    CU_ASSERT_STRING_EQUAL(oc_phase_name(OC_PHASE_RECOMPUTE), "recompute");
    CU_ASSERT_STRING_EQUAL(oc_phase_name(OC_PHASE_OPTIMIZER), "optimizer");
    CU_ASSERT_STRING_EQUAL(oc_part_name(OC_PART_ATTN), "attn");
    CU_ASSERT_STRING_EQUAL(oc_part_name(OC_PART_CHUNK), "chunk");
    CU_ASSERT_STRING_EQUAL(oc_part_name(OC_PART_ALL), "all");
    CU_ASSERT_STRING_EQUAL(oc_coll_name(OC_COLL_REDUCESCATTER), "reducescatter");
    CU_ASSERT_STRING_EQUAL(oc_coll_name(OC_COLL_BROADCAST), "broadcast");
    CU_ASSERT_STRING_EQUAL(oc_group_name(OC_GROUP_EMBED), "embed");
    CU_ASSERT_STRING_EQUAL(oc_buf_name(OC_BUF_ACTIVATIONS), "activations");
    CU_ASSERT_STRING_EQUAL(oc_buf_name(OC_BUF_COMM), "comm");
    CU_ASSERT_STRING_EQUAL(oc_buf_name((enum oc_buf)99), "?");
}

static void test_errors(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    struct oc_schedule s;
    struct oc_status st = {{0}};
    /* interleaved needs m % p == 0: m = 3, p = 2 */
    struct cfg c = {1, 2, 1, 3, OC_SCHED_INTERLEAVED, 2, 0, OC_RECOMPUTE_NONE,
                    0, 0, OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    CU_ASSERT_EQUAL(oc_schedule_build(&s, &m, &l, NULL, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "multiple of PP 2"));
    CU_ASSERT_PTR_NULL(s.ranks);
    /* 8 layers do not split over p*v = 3 */
    struct cfg c2 = {1, 3, 1, 3, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0,
                     OC_ORDER_TP_DP_PP};
    l = make_layout(&c2);
    CU_ASSERT_EQUAL(oc_schedule_build(&s, &m, &l, NULL, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "8 layers"));
    /* G not a multiple of d*b */
    struct cfg c3 = {1, 2, 2, 4, OC_SCHED_1F1B, 1, 0, OC_RECOMPUTE_NONE, 0, 0,
                     OC_ORDER_TP_DP_PP};
    l = make_layout(&c3);
    l.global_batch = 7;
    CU_ASSERT_EQUAL(oc_schedule_build(&s, &m, &l, NULL, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "global batch 7"));
    /* NULL opts means layer grain with memory ops */
    l.global_batch = 8;
    CU_ASSERT_EQUAL_FATAL(oc_schedule_build(&s, &m, &l, NULL, &st), 0);
    CU_ASSERT_EQUAL(count_ops(&s.ranks[0], OC_OP_COMPUTE, OC_PHASE_FWD, OC_PART_ATTN), 16);
    CU_ASSERT_EQUAL(count_ops(&s.ranks[0], OC_OP_ALLOC, -1, -1), 7);
    oc_schedule_free(&s);
    oc_schedule_free(&s); /* freeing twice is harmless */
}

/* The shipped "tiny" model loads to the same dimensions as the fixture and
 * gives the same schedule. */
static void test_loaded_tiny(void)
{
    struct oc_model a, b;
    struct oc_status st = {{0}};
    oc_test_tiny_model(&a);
    CU_ASSERT_EQUAL_FATAL(oc_model_load("tiny", &b, &st), 0);
    struct oc_layout l = make_layout(&configs[5]);
    struct oc_schedule x, y;
    build(&x, &a, &l, OC_GRAIN_LAYER);
    build(&y, &b, &l, OC_GRAIN_LAYER);
    CU_ASSERT_EQUAL_FATAL(x.nranks, y.nranks);
    for (int64_t r = 0; r < x.nranks; r++) {
        CU_ASSERT_EQUAL_FATAL(x.ranks[r].n, y.ranks[r].n);
        CU_ASSERT(memcmp(x.ranks[r].ops, y.ranks[r].ops,
                         (size_t)x.ranks[r].n * sizeof *x.ranks[r].ops) == 0);
    }
    CU_ASSERT(check_p2p(&y) > 0);
    CU_ASSERT(simulate(&y, 0));
    oc_schedule_free(&x);
    oc_schedule_free(&y);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 64 ranks (t8 p8 d1), m = 512, chunk grain: builds, with the time printed
 * for information only. Speed is measured by the benchmark scripts, not
 * asserted by a timed test that would flake on a loaded machine. */
static void test_build_speed(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    struct cfg c = {8, 8, 1, 512, OC_SCHED_1F1B, 1, 1, OC_RECOMPUTE_SELECTIVE,
                    1, 1, OC_ORDER_TP_DP_PP};
    struct oc_layout l = make_layout(&c);
    struct oc_schedule s;
    double t0 = now_s();
    build(&s, &m, &l, OC_GRAIN_CHUNK);
    double dt = now_s() - t0;
    int64_t total = 0;
    for (int64_t r = 0; r < s.nranks; r++)
        total += s.ranks[r].n;
    fprintf(stderr, "\n  64 ranks, m = 512, chunk grain: %lld ops in %.1f ms\n",
            (long long)total, dt * 1e3);
    CU_ASSERT_EQUAL(s.nranks, 64);
    oc_schedule_free(&s);
}

static CU_TestInfo tests[] = {
    {"order_1f1b", test_order_1f1b},
    {"order_gpipe", test_order_gpipe},
    {"order_interleaved", test_order_interleaved},
    {"p2p_matching", test_p2p_matching},
    {"replay_no_deadlock", test_replay_no_deadlock},
    {"replay_detects_deadlock", test_replay_detects_deadlock},
    {"inflight", test_inflight},
    {"alloc_free_balance", test_alloc_free_balance},
    {"memory_peak_closed_form", test_memory_peak_closed_form},
    {"counts_by_hand", test_counts_by_hand},
    {"counts_sp_full", test_counts_sp_full},
    {"selective_recompute", test_selective_recompute},
    {"interleaved_same_work", test_interleaved_same_work},
    {"chunk_grain_totals", test_chunk_grain_totals},
    {"op_fields", test_op_fields},
    {"dp_reduction", test_dp_reduction},
    {"groups", test_groups},
    {"names", test_names},
    {"errors", test_errors},
    {"loaded_tiny", test_loaded_tiny},
    {"build_speed", test_build_speed},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"schedule", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
