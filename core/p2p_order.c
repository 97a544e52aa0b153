/* p2p_order.c: the order rules of pipeline messages and the check of a
 * schedule against them (see p2p_order.h for the rules and their source).
 *
 * What this file is: the pairing check (per pair of ranks, the sends
 * against the receives) and a simulation of the streams over every rank's
 * op list that finds the messages that would wait for each other forever,
 * and words the chain of waits in one line. What it is not: a timing model
 * (the simulator, sim/, times messages; here only their order matters).
 */
#include "p2p_order.h"

#include <stdio.h>
#include <string.h>

enum oc_p2p_stream oc_p2p_stream_of(int64_t from, int64_t to)
{
    OC_ASSERT(from != to);
    return from < to ? OC_P2P_UP : OC_P2P_DOWN;
}

/* ------------------------------------------------------------------ */
/* Pairing                                                              */

/* The distinct peers of r's ops of `kind`, in first-use order, into
 * peers (r->n entries at most); returns how many. */
static int64_t peers_of(const struct oc_rank_ops *r, enum oc_op_kind kind,
                        int64_t *peers)
{
    int64_t n = 0;
    for (int64_t i = 0; i < r->n; i++) {
        if (r->ops[i].kind != kind)
            continue;
        int64_t k = 0;
        while (k < n && peers[k] != r->ops[i].peer)
            k++;
        if (k == n)
            peers[n++] = r->ops[i].peer;
    }
    return n;
}

/* a's sends to q against q's receives from a, side by side. */
static int check_pair(const struct oc_schedule *s, int64_t a, int64_t q,
                      struct oc_status *st)
{
    const struct oc_rank_ops *ra = &s->ranks[a], *rq = &s->ranks[q];
    int64_t i = 0, j = 0, nth = 0;
    for (;; nth++) {
        while (i < ra->n && !(ra->ops[i].kind == OC_OP_SEND && ra->ops[i].peer == q))
            i++;
        while (j < rq->n && !(rq->ops[j].kind == OC_OP_RECV && rq->ops[j].peer == a))
            j++;
        if (i == ra->n && j == rq->n)
            return 0;
        if (i == ra->n || j == rq->n)
            return oc_fail(st, "rank %lld sends %s messages to rank %lld than "
                               "that rank receives from it (%lld paired)",
                           (long long)a, i == ra->n ? "fewer" : "more",
                           (long long)q, (long long)nth);
        if (ra->ops[i].tag != rq->ops[j].tag)
            return oc_fail(st, "pipeline messages from rank %lld to rank %lld are "
                               "out of order: message %lld is tag %lld on the "
                               "sender, tag %lld on the receiver (NCCL pairs "
                               "them by order)", (long long)a, (long long)q,
                           (long long)nth, (long long)ra->ops[i].tag,
                           (long long)rq->ops[j].tag);
        i++;
        j++;
    }
}

int oc_p2p_check_pairs(const struct oc_schedule *s, struct oc_status *st)
{
    int64_t cap = 1;
    for (int64_t r = 0; r < s->nranks; r++)
        if (s->ranks[r].n > cap)
            cap = s->ranks[r].n;
    int64_t *peers = oc_xmalloc((size_t)cap * sizeof *peers);
    int rc = 0;
    /* every pair with a send (a -> q) or a receive (q <- a) */
    for (int64_t r = 0; r < s->nranks && rc == 0; r++) {
        int64_t n = peers_of(&s->ranks[r], OC_OP_SEND, peers);
        for (int64_t k = 0; k < n && rc == 0; k++) {
            OC_ASSERT(peers[k] >= 0 && peers[k] < s->nranks && peers[k] != r);
            rc = check_pair(s, r, peers[k], st);
        }
        n = peers_of(&s->ranks[r], OC_OP_RECV, peers);
        for (int64_t k = 0; k < n && rc == 0; k++) {
            OC_ASSERT(peers[k] >= 0 && peers[k] < s->nranks && peers[k] != r);
            rc = check_pair(s, peers[k], r, st);
        }
    }
    free(peers);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Pipeline deadlock check                                              */

/* The rules are p2p_order.h's (enum oc_p2p_rules). A rank's SEND / RECV
 * ops in list order are its messages m = 0 .. nm-1. An item is what joins
 * a stream: one message (DIRECTION) or a whole run (GROUPED), the messages
 * [first, first + count). The simulation runs monotone steps to a fixed
 * point (a program moves on, a pair matches, an item leaves its stream;
 * none undoes another), so the order of the work lists does not change
 * the outcome. Each message is enqueued, paired and removed once: the work
 * is linear in the ops (times a group's size where a partner is looked up
 * in a group). A TP, DP or EMBED collective is an op like a compute op
 * here. */
struct sim_rank {
    const struct oc_rank_ops *r;
    int64_t nm;
    int64_t *op;             /* (nm) the list index of message m */
    int64_t *item_of;        /* (nm) */
    int64_t *item_first, *item_count; /* (nm) items, nitems made */
    int64_t *q[OC_P2P_STREAMS]; /* (nm) item ids in stream order */
    uint8_t *paired;         /* (nm) matched with its partner */
    uint8_t *done;           /* (nm) its item left its stream */
    uint8_t *seen;           /* (nm) on the report's walk */
    int64_t nitems;
    int64_t head[OC_P2P_STREAMS], tail[OC_P2P_STREAMS];
    int64_t pc;              /* the next op the program reaches */
    int64_t next_m;          /* messages reached */
    int64_t run_first;       /* first message of the open run, -1 if none */
    int64_t recv_open;       /* receives reached and not done */
    int64_t send_open;       /* sends reached and not done */
    int program_seen;        /* on the report's walk */
};

struct sim {
    enum oc_p2p_rules rules;
    int64_t n;               /* ranks */
    struct sim_rank *rk;     /* (n) */
    int64_t *rstack, nr;     /* (n) ranks whose program may move on */
    uint8_t *rflag;          /* (n) on rstack */
    int64_t *hstack, nh;     /* (2n) 2 * rank + stream: a head to look at */
    uint8_t *hflag;          /* (2n) on hstack */
};

static int is_msg(const struct oc_op *o)
{
    return o->kind == OC_OP_SEND || o->kind == OC_OP_RECV;
}

/* The stream of rank me's message o; the same at both ends of a message
 * (up when it travels to a higher rank, as be_send / be_recv choose). */
static int sim_stream(const struct sim *S, int64_t me, const struct oc_op *o)
{
    if (S->rules == OC_P2P_RULES_GROUPED)
        return 0;
    const int64_t from = o->kind == OC_OP_SEND ? me : o->peer;
    const int64_t to = o->kind == OC_OP_SEND ? o->peer : me;
    return (int)oc_p2p_stream_of(from, to);
}

static const struct oc_op *msg_op(const struct sim_rank *R, int64_t m)
{
    return &R->r->ops[R->op[m]];
}

static void push_rank(struct sim *S, int64_t r)
{
    if (!S->rflag[r]) {
        S->rflag[r] = 1;
        S->rstack[S->nr++] = r;
    }
}

static void push_head(struct sim *S, int64_t r, int q)
{
    const int64_t h = 2 * r + q;
    if (!S->hflag[h]) {
        S->hflag[h] = 1;
        S->hstack[S->nh++] = h;
    }
}

/* Messages [first, first + count) of rank r join stream q as one item. */
static void enqueue(struct sim *S, int64_t r, int64_t first, int64_t count, int q)
{
    struct sim_rank *R = &S->rk[r];
    const int64_t it = R->nitems++;
    R->item_first[it] = first;
    R->item_count[it] = count;
    for (int64_t m = first; m < first + count; m++)
        R->item_of[m] = it;
    if (R->head[q] == R->tail[q])
        push_head(S, r, q);
    R->q[q][R->tail[q]++] = it;
}

/* p2p_end: the run's group joins the stream (GROUPED). */
static void close_run(struct sim *S, int64_t r)
{
    struct sim_rank *R = &S->rk[r];
    if (S->rules == OC_P2P_RULES_GROUPED)
        enqueue(S, r, R->run_first, R->next_m - R->run_first, 0);
    R->run_first = -1;
}

/* Rank r's program goes as far as it can. */
static void advance(struct sim *S, int64_t r)
{
    struct sim_rank *R = &S->rk[r];
    while (R->pc < R->r->n) {
        const struct oc_op *o = &R->r->ops[R->pc];
        if (is_msg(o)) {
            const int64_t m = R->next_m++;
            OC_ASSERT(m < R->nm && R->op[m] == R->pc);
            OC_ASSERT(o->peer >= 0 && o->peer < S->n && o->peer != r);
            if (o->kind == OC_OP_SEND)
                R->send_open++;
            else
                R->recv_open++;
            if (R->run_first < 0)
                R->run_first = m;
            if (S->rules == OC_P2P_RULES_DIRECTION)
                enqueue(S, r, m, 1, sim_stream(S, r, o));
            R->pc++;
            continue;
        }
        if (o->kind == OC_OP_ALLOC || o->kind == OC_OP_FREE) {
            R->pc++;
            continue;
        }
        if (R->run_first >= 0)
            close_run(S, r);
        /* every open receive is of the run just ended: the program never
         * passes the end of a run before its receives completed */
        if (R->recv_open > 0)
            return;
        if (o->kind == OC_OP_WAIT && R->send_open > 0)
            return;
        R->pc++;
    }
    if (R->run_first >= 0)
        close_run(S, r); /* the runner's p2p_end after the last op */
}

/* The first unpaired message of P's item it that is the partner of a
 * message of `kind` of rank `from` (for a SEND: a RECV from `from`), or -1. */
static int64_t partner_in(const struct sim_rank *P, int64_t it, int kind,
                          int64_t from)
{
    const int want = kind == OC_OP_SEND ? OC_OP_RECV : OC_OP_SEND;
    const int64_t end = P->item_first[it] + P->item_count[it];
    for (int64_t k = P->item_first[it]; k < end; k++) {
        const struct oc_op *o = msg_op(P, k);
        if (!P->paired[k] && o->kind == want && o->peer == from)
            return k;
    }
    return -1;
}

/* The first unpaired message of R's item it, or -1. */
static int64_t first_unpaired(const struct sim_rank *R, int64_t it)
{
    const int64_t end = R->item_first[it] + R->item_count[it];
    for (int64_t k = R->item_first[it]; k < end; k++)
        if (!R->paired[k])
            return k;
    return -1;
}

/* Pairs what it can of the item heading rank r's stream q with the items
 * heading the partners' streams; an item whose messages all paired leaves
 * its stream (and the next one is looked at). The messages of one pair of
 * ranks pair in their order: as many sends from A to B completed as
 * receives of B from A, so the first unpaired of each side are partners. */
static void examine(struct sim *S, int64_t r, int q)
{
    struct sim_rank *R = &S->rk[r];
    while (R->head[q] < R->tail[q]) {
        const int64_t it = R->q[q][R->head[q]];
        const int64_t end = R->item_first[it] + R->item_count[it];
        for (int64_t m = R->item_first[it]; m < end; m++) {
            if (R->paired[m])
                continue;
            const struct oc_op *o = msg_op(R, m);
            struct sim_rank *P = &S->rk[o->peer];
            const int pq = sim_stream(S, r, o);
            if (P->head[pq] == P->tail[pq])
                continue;
            const int64_t pit = P->q[pq][P->head[pq]];
            const int64_t k = partner_in(P, pit, o->kind, r);
            if (k < 0)
                continue;
            R->paired[m] = P->paired[k] = 1;
            if (first_unpaired(P, pit) < 0)
                push_head(S, o->peer, pq);
        }
        if (first_unpaired(R, it) >= 0)
            return;
        for (int64_t m = R->item_first[it]; m < end; m++) {
            R->done[m] = 1;
            if (msg_op(R, m)->kind == OC_OP_SEND)
                R->send_open--;
            else
                R->recv_open--;
        }
        R->head[q]++;
        push_rank(S, r);
    }
}

static int finished(const struct sim_rank *R)
{
    for (int q = 0; q < OC_P2P_STREAMS; q++)
        if (R->head[q] != R->tail[q])
            return 0;
    return R->pc == R->r->n && R->run_first < 0;
}

static const char *stream_name(const struct sim *S, int q)
{
    if (S->rules == OC_P2P_RULES_GROUPED)
        return "pp";
    return q == OC_P2P_UP ? "up" : "down";
}

/* "op 45 (SEND to rank 1)" */
static void msg_text(const struct sim_rank *R, int64_t m, char *b, size_t n)
{
    const struct oc_op *o = msg_op(R, m);
    snprintf(b, n, "op %lld (%s rank %lld)", (long long)R->op[m],
             o->kind == OC_OP_SEND ? "SEND to" : "RECV from", (long long)o->peer);
}

/* A node of the report's walk: rank r's program (m = -1) or message m. */
struct sim_node {
    int64_t r, m;
};

/* What node a waits for (*next, next->r = -1 if none), and why, into b. */
static void waits_for(const struct sim *S, struct sim_node a, struct sim_node *next,
                      char *b, size_t n)
{
    const struct sim_rank *R = &S->rk[a.r];
    char t1[80], t2[80];
    next->r = a.r;
    next->m = -1;
    if (a.m < 0) {
        /* the program: blocked at an op (the end of a run or a WAIT), or at
         * the end of its list with messages left */
        const int at_end = R->pc == R->r->n;
        const int want = R->recv_open > 0 ? OC_OP_RECV : OC_OP_SEND;
        int64_t j = 0;
        while (j < R->nm && (R->done[j] || (!at_end && msg_op(R, j)->kind != want)))
            j++;
        OC_ASSERT(j < R->nm);
        msg_text(R, j, t1, sizeof t1);
        if (at_end)
            snprintf(b, n, "rank %lld ended its list with %s not done",
                     (long long)a.r, t1);
        else if (want == OC_OP_RECV)
            snprintf(b, n, "rank %lld cannot pass op %lld (the end of a p2p run) "
                           "before %s completes", (long long)a.r, (long long)R->pc, t1);
        else
            snprintf(b, n, "rank %lld waits at op %lld (WAIT) for %s",
                     (long long)a.r, (long long)R->pc, t1);
        next->m = j;
        return;
    }
    const struct oc_op *o = msg_op(R, a.m);
    const int q = sim_stream(S, a.r, o);
    OC_ASSERT(R->head[q] < R->tail[q] && !R->done[a.m]);
    msg_text(R, a.m, t1, sizeof t1);
    const int64_t hit = R->q[q][R->head[q]];
    if (hit != R->item_of[a.m] || R->paired[a.m]) {
        /* behind another item, or paired in a group that waits for more */
        const int64_t k = first_unpaired(R, hit);
        OC_ASSERT(k >= 0);
        msg_text(R, k, t2, sizeof t2);
        if (hit != R->item_of[a.m])
            snprintf(b, n, "rank %lld's %s is behind %s on its %s stream",
                     (long long)a.r, t1, t2, stream_name(S, q));
        else
            snprintf(b, n, "rank %lld's %s is in one NCCL group with %s",
                     (long long)a.r, t1, t2);
        next->m = k;
        return;
    }
    /* the partner: P's message of this pair with the same ordinal */
    const struct sim_rank *P = &S->rk[o->peer];
    const int want = o->kind == OC_OP_SEND ? OC_OP_RECV : OC_OP_SEND;
    const char *other = want == OC_OP_RECV ? "RECV" : "SEND";
    int64_t nth = 0, k = -1;
    for (int64_t j = 0; j < a.m; j++)
        nth += msg_op(R, j)->kind == o->kind && msg_op(R, j)->peer == o->peer;
    for (int64_t j = 0; j < P->next_m && k < 0; j++)
        if (msg_op(P, j)->kind == want && msg_op(P, j)->peer == a.r && nth-- == 0)
            k = j;
    next->r = o->peer;
    if (k >= 0) {
        /* reached, so on its stream, behind the head there */
        OC_ASSERT(P->head[q] < P->tail[q]);
        const int64_t h = first_unpaired(P, P->q[q][P->head[q]]);
        OC_ASSERT(h >= 0 && h != k);
        msg_text(P, h, t2, sizeof t2);
        snprintf(b, n, "rank %lld's %s needs its %s, but rank %lld's %s stream is "
                       "at %s", (long long)a.r, t1, other, (long long)o->peer,
                 stream_name(S, q), t2);
        next->m = h;
    } else if (P->pc < P->r->n) {
        snprintf(b, n, "rank %lld's %s needs its %s, which rank %lld has not reached",
                 (long long)a.r, t1, other, (long long)o->peer);
    } else {
        snprintf(b, n, "rank %lld's %s has no %s on rank %lld", (long long)a.r, t1,
                 other, (long long)o->peer);
        next->r = -1;
    }
}

/* The deadlock's message: from rank `first`'s program, the waits up to the
 * first node met twice; then that cycle alone (or the whole chain, if it
 * ends at a message without partner). */
static int report(struct sim *S, int64_t first, struct oc_status *st)
{
    int64_t total = S->n + 1;
    for (int64_t r = 0; r < S->n; r++)
        total += S->rk[r].nm;
    struct sim_node *chain = oc_xmalloc((size_t)total * sizeof *chain);
    int64_t len = 0, from = 0;
    int cycle = 0;
    struct sim_node a = {first, -1};
    char why[OC_MSG_MAX];
    for (;;) {
        struct sim_rank *R = &S->rk[a.r];
        const int seen = a.m < 0 ? R->program_seen : R->seen[a.m];
        if (seen) {
            while (chain[from].r != a.r || chain[from].m != a.m)
                from++;
            cycle = 1;
            break;
        }
        if (a.m < 0)
            R->program_seen = 1;
        else
            R->seen[a.m] = 1;
        OC_ASSERT(len < total);
        chain[len++] = a;
        struct sim_node next;
        waits_for(S, a, &next, why, sizeof why);
        if (next.r < 0)
            break;
        a = next;
    }
    char msg[OC_MSG_MAX];
    size_t used = (size_t)snprintf(msg, sizeof msg, "pipeline messages would "
                                   "deadlock on the cuda backend (%s), a %s of waits: ",
                                   S->rules == OC_P2P_RULES_GROUPED
                                       ? "one grouped stream"
                                       : "direction streams",
                                   cycle ? "cycle" : "chain");
    for (int64_t i = from; i < len && used < sizeof msg; i++) {
        struct sim_node next;
        waits_for(S, chain[i], &next, why, sizeof why);
        used += (size_t)snprintf(msg + used, sizeof msg - used, "%s%s",
                                 i > from ? "; " : "", why);
    }
    if (used >= sizeof msg)
        memcpy(msg + sizeof msg - 4, "...", 4);
    free(chain);
    return oc_fail(st, "%s", msg);
}

int oc_p2p_check_deadlock(const struct oc_schedule *s, enum oc_p2p_rules rules,
                          struct oc_status *st)
{
    OC_ASSERT(s && s->nranks >= 1);
    struct sim S;
    memset(&S, 0, sizeof S);
    S.rules = rules;
    S.n = s->nranks;
    S.rk = oc_xcalloc((size_t)S.n, sizeof *S.rk);
    S.rstack = oc_xmalloc((size_t)S.n * sizeof *S.rstack);
    S.rflag = oc_xcalloc((size_t)S.n, 1);
    S.hstack = oc_xmalloc((size_t)(2 * S.n) * sizeof *S.hstack);
    S.hflag = oc_xcalloc((size_t)(2 * S.n), 1);
    for (int64_t r = 0; r < S.n; r++) {
        struct sim_rank *R = &S.rk[r];
        R->r = &s->ranks[r];
        for (int64_t i = 0; i < R->r->n; i++)
            R->nm += is_msg(&R->r->ops[i]);
        const size_t cap = (size_t)(R->nm > 0 ? R->nm : 1);
        /* op, item_of, item_first, item_count, q[0], q[1]: one block */
        int64_t *w = oc_xmalloc(6 * cap * sizeof *w);
        R->op = w;
        R->item_of = w + cap;
        R->item_first = w + 2 * cap;
        R->item_count = w + 3 * cap;
        R->q[0] = w + 4 * cap;
        R->q[1] = w + 5 * cap;
        uint8_t *f = oc_xcalloc(3 * cap, 1); /* paired, done, seen */
        R->paired = f;
        R->done = f + cap;
        R->seen = f + 2 * cap;
        int64_t m = 0;
        for (int64_t i = 0; i < R->r->n; i++)
            if (is_msg(&R->r->ops[i])) {
                R->item_of[m] = -1;
                R->op[m++] = i;
            }
        R->run_first = -1;
        push_rank(&S, r);
    }
    while (S.nr > 0 || S.nh > 0) {
        if (S.nr > 0) {
            const int64_t r = S.rstack[--S.nr];
            S.rflag[r] = 0;
            advance(&S, r);
        } else {
            const int64_t h = S.hstack[--S.nh];
            S.hflag[h] = 0;
            examine(&S, h / 2, (int)(h % 2));
        }
    }
    int64_t stuck = -1;
    for (int64_t r = 0; r < S.n && stuck < 0; r++)
        if (!finished(&S.rk[r]))
            stuck = r;
    int rc = stuck >= 0 ? report(&S, stuck, st) : 0;
    for (int64_t r = 0; r < S.n; r++) {
        free(S.rk[r].paired);
        free(S.rk[r].op);
    }
    free(S.hflag);
    free(S.hstack);
    free(S.rflag);
    free(S.rstack);
    free(S.rk);
    return rc;
}

int oc_p2p_check_order(const struct oc_schedule *s, enum oc_p2p_rules rules,
                       struct oc_status *st)
{
    /* paired in order: can they all complete on the streams? */
    if (oc_p2p_check_pairs(s, st) != 0)
        return -1;
    return oc_p2p_check_deadlock(s, rules, st);
}
