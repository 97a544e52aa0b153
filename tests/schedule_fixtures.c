/* schedule_fixtures.c: the layouts, counters and whole-schedule checkers
 * the suites of the schedule core share (see schedule_fixtures.h). The
 * checkers re-derive the rules from the op lists alone; core's own check
 * (core/p2p_order.c) is tested apart, in test_p2p_order.c. */
#include "schedule_fixtures.h"

#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Layouts and counters                                                 */

struct oc_layout make_layout(const struct cfg *c)
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
    l.zero = c->shard;
    l.overlap_grad_reduce = c->overlap;
    l.order = c->order;
    /* 16-bit gradients: the byte counts of the schedule suites are worked
     * for them (Megatron-LM's bf16 default, fp32 gradients, is tested in
     * test_memory and test_cost) */
    l.grad_fp32 = -1;
    return l;
}

const struct cfg configs[] = {
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
_Static_assert(sizeof configs / sizeof configs[0] == NCONFIGS,
               "NCONFIGS in schedule_fixtures.h counts configs");

void build(struct oc_schedule *s, const struct oc_model *m,
           const struct oc_layout *l, enum oc_grain g)
{
    struct oc_schedule_opts o = {g, 1, NULL};
    struct oc_status st = {{0}};
    int rc = oc_schedule_build(s, m, l, &o, &st);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
}

int64_t count_ops(const struct oc_rank_ops *r, int kind, int phase, int part)
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

int64_t count_coll(const struct oc_rank_ops *r, int coll, int group,
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

int64_t rank_of(const struct oc_layout *l, int64_t tp, int64_t pp, int64_t dp)
{
    struct oc_coord c = {tp, pp, dp, 0};
    return oc_layout_rank(l, c);
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
int64_t check_p2p(const struct oc_schedule *s)
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

/* ------------------------------------------------------------------ */
/* Collectives: every member of a group issues the same sequence        */

int check_collectives(const struct oc_schedule *s)
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
int simulate(const struct oc_schedule *s, int blocking_send)
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
