/* runner_step.c: one step of the runner (oc_runner_step, runner.h): the
 * walk over this rank's op list, op by op, with the backend's marks around
 * each (the per-op timing) and the checks at the end of the step.
 *
 * What this file is: the data of the step, the barrier before it, each
 * op kind's handler (COMPUTE, TP collectives resuming the part that asked
 * for them, SEND, RECV, ALLOC / FREE, WAIT; DP and EMBED collectives go to
 * runner_dp.c), the groups of pipeline messages, the stream of an op's
 * marks, the description of an op in a failure message, and the step's
 * losses. What it is not: where buffers live or how a part is called
 * (runner_parts.c), buckets and sharding (runner_dp.c), set-up and the
 * measured metrics (runner.c), or the timing itself (the backends'
 * mark / step_end).
 */
#define _POSIX_C_SOURCE 200809L
#include "runner_priv.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Ops                                                                  */

static void describe(const struct oc_op *op, char *b, size_t n)
{
    const char *dir = op->p2p == OC_P2P_ACT ? "act" : "grad";
    switch ((enum oc_op_kind)op->kind) {
    case OC_OP_SEND:
        snprintf(b, n, "send %s mb %d to rank %lld", dir, op->mb, (long long)op->peer);
        return;
    case OC_OP_RECV:
        snprintf(b, n, "recv %s mb %d from rank %lld", dir, op->mb, (long long)op->peer);
        return;
    case OC_OP_COLLECTIVE:
        if (op->group == OC_GROUP_TP && op->layer_first >= 0)
            snprintf(b, n, "%s tp %s %s mb %d layer %d", oc_coll_name(op->coll),
                     oc_phase_name(op->phase), oc_part_name(op->part), op->mb,
                     op->layer_first);
        else if (op->group == OC_GROUP_TP)
            snprintf(b, n, "%s tp %s %s mb %d", oc_coll_name(op->coll),
                     oc_phase_name(op->phase), oc_part_name(op->part), op->mb);
        else if (op->group == OC_GROUP_EMBED)
            snprintf(b, n, "%s embed tied embedding gradient", oc_coll_name(op->coll));
        else if (op->phase == OC_PHASE_OPTIMIZER)
            snprintf(b, n, "%s dp weights", oc_coll_name(op->coll));
        else
            snprintf(b, n, "%s dp gradients%s chunk %d", oc_coll_name(op->coll),
                     op->async ? " (async)" : "", op->chunk);
        return;
    case OC_OP_COMPUTE:
        if (op->phase == OC_PHASE_OPTIMIZER)
            snprintf(b, n, "optimizer");
        else if (op->part == OC_PART_ALL && op->mb < 0)
            snprintf(b, n, "gradient compression kernel");
        else if (op->layer_first >= 0)
            snprintf(b, n, "%s %s mb %d layer %d", oc_phase_name(op->phase),
                     oc_part_name(op->part), op->mb, op->layer_first);
        else
            snprintf(b, n, "%s %s mb %d", oc_phase_name(op->phase),
                     oc_part_name(op->part), op->mb);
        return;
    case OC_OP_WAIT:
        snprintf(b, n, "wait for outstanding sends and collectives");
        return;
    case OC_OP_ALLOC:
    case OC_OP_FREE:
        snprintf(b, n, "%s %s mb %d", oc_op_kind_name(op->kind), oc_buf_name(op->buf),
                 op->mb);
        return;
    }
    snprintf(b, n, "?");
}

static int run_compute(struct oc_runner *r, int64_t i, const struct oc_op *op,
                       struct oc_status *st)
{
    if (op->phase == OC_PHASE_OPTIMIZER)
        return oc_rn_optimizer(r, st);
    /* the compressed DP exchange's kernels (core/compress.h's ops) */
    if (r->gc && op->phase == OC_PHASE_BWD && op->part == OC_PART_ALL && op->mb < 0)
        return oc_rn_gc_compute(r, op, st);
    if (op->phase == OC_PHASE_RECOMPUTE && op->part == OC_PART_ATTN &&
        r->l->recompute == OC_RECOMPUTE_SELECTIVE) {
        struct oc_gpt_attn_act aa;
        const int64_t j = op->layer_first - oc_rn_chunk_layer0(r, op->chunk);
        oc_rn_bind_attn(r, op->mb, op->chunk, j, &aa);
        oc_gpt_attn_scores(&r->b->kernels, &r->d, &aa);
        return 0;
    }
    /* under SP the all-gather listed before this op started its part */
    if (r->call_op != i)
        memset(&r->call, 0, sizeof r->call);
    int rc = oc_rn_part_call(r, op, &r->call);
    if (rc < 0)
        return oc_fail(st, "the part failed");
    r->call_op = rc == OC_GPT_REDUCE ? i : -1;
    return 0;
}

/* The collective kind a part asks for, as the schedule names it. */
static enum oc_coll_kind coll_of(enum oc_gpt_coll c)
{
    switch (c) {
    case OC_GPT_ALLGATHER: return OC_COLL_ALLGATHER;
    case OC_GPT_REDUCESCATTER: return OC_COLL_REDUCESCATTER;
    case OC_GPT_ALLREDUCE: break;
    }
    return OC_COLL_ALLREDUCE;
}

/* A TP all-gather with no part waiting: sequence parallelism's gather
 * into the column-parallel region of the COMPUTE op right after it, which
 * starts here (its norm on the rows here, timed as inner compute) and
 * asks for it. */
static int start_gathering_part(struct oc_runner *r, int64_t i, const struct oc_op *op,
                                struct oc_status *st)
{
    const struct oc_op *next = i + 1 < r->nops ? &r->ops->ops[i + 1] : NULL;
    if (op->coll != OC_COLL_ALLGATHER || op->count != 1 || !next ||
        next->kind != OC_OP_COMPUTE || next->phase != op->phase ||
        next->part != op->part || next->mb != op->mb ||
        next->layer_first != op->layer_first)
        return oc_fail(st, "the schedule lists TP %s here, but no part asked for it",
                       oc_coll_name(op->coll));
    memset(&r->call, 0, sizeof r->call);
    r->b->ops->mark(r->b, OC_MARK_INNER_START, i, OC_STREAM_COMPUTE);
    int rc = oc_rn_part_call(r, next, &r->call);
    r->b->ops->mark(r->b, OC_MARK_INNER_END, i, OC_STREAM_COMPUTE);
    if (rc < 0)
        return oc_fail(st, "the part failed");
    if (rc != OC_GPT_REDUCE)
        return oc_fail(st, "the schedule lists a TP all-gather before %s %s mb %d, "
                           "but its part asked for none",
                       oc_phase_name(next->phase), oc_part_name(next->part), next->mb);
    r->call_op = i + 1;
    return 0;
}

/* The backend's collective for the part's request. */
static int tp_collective(struct oc_runner *r, struct oc_status *st)
{
    const struct oc_gpt_call *c = &r->call;
    switch (c->coll) {
    case OC_GPT_ALLREDUCE:
        return r->b->ops->tp_allreduce(r->b, c->buf, c->n, c->op, st);
    case OC_GPT_ALLGATHER:
        OC_ASSERT(c->shard == c->buf + r->me.tp * (c->n / r->t)); /* in place */
        return r->b->ops->tp_allgather(r->b, c->buf, c->n, st);
    case OC_GPT_REDUCESCATTER:
        return r->b->ops->tp_reduce_scatter(r->b, c->buf, c->shard, c->n, st);
    }
    return oc_fail(st, "a TP collective of unknown kind");
}

static int run_tp(struct oc_runner *r, int64_t i, const struct oc_op *op,
                  struct oc_status *st)
{
    if (r->t == 1)
        return oc_fail(st, "a TP collective with TP size 1");
    for (int32_t k = 0; k < op->count; k++) {
        if (r->call_op < 0 && k == 0 && start_gathering_part(r, i, op, st) != 0)
            return -1;
        if (r->call_op < 0)
            return oc_fail(st, "the schedule lists TP %s %d of %d here, but the "
                               "part before asked for no more",
                           oc_coll_name(op->coll), k + 1, op->count);
        const struct oc_op *pop = &r->ops->ops[r->call_op];
        if (pop->phase != op->phase || pop->part != op->part || pop->mb != op->mb)
            return oc_fail(st, "the TP %s is listed for %s %s mb %d, but "
                               "the part waiting is %s %s mb %d", oc_coll_name(op->coll),
                           oc_phase_name(op->phase), oc_part_name(op->part), op->mb,
                           oc_phase_name(pop->phase), oc_part_name(pop->part), pop->mb);
        if (coll_of(r->call.coll) != (enum oc_coll_kind)op->coll)
            return oc_fail(st, "the part asked for a TP %s, the schedule lists a %s",
                           oc_coll_name(coll_of(r->call.coll)), oc_coll_name(op->coll));
        /* The schedule counts activations at the layout's element size
         * (s*b*h*e bytes, the whole (B,T,C) tensor for every kind) and, for
         * the cross-entropy, fp32 values (s*b*4 bytes); schedule.c. */
        const int ce = pop->part == OC_PART_HEAD && pop->phase == OC_PHASE_FWD &&
                       op->coll == OC_COLL_ALLREDUCE;
        const double want = op->bytes / (ce ? 4.0 : oc_layout_act_bytes(r->l));
        if ((double)r->call.n != want)
            return oc_fail(st, "the part asked for a TP %s of %lld values, "
                               "the schedule lists %g", oc_coll_name(op->coll),
                           (long long)r->call.n, want);
        if (tp_collective(r, st) != 0)
            return -1;
        if (r->call_op > i)
            continue; /* the part goes on at its COMPUTE op */
        r->b->ops->mark(r->b, OC_MARK_INNER_START, i, OC_STREAM_COMPUTE);
        int rc = oc_rn_part_call(r, pop, &r->call);
        r->b->ops->mark(r->b, OC_MARK_INNER_END, i, OC_STREAM_COMPUTE);
        if (rc < 0)
            return oc_fail(st, "the part failed");
        if (rc == OC_GPT_DONE)
            r->call_op = -1;
    }
    return 0;
}

static int run_send(struct oc_runner *r, int64_t i, const struct oc_op *op,
                    struct oc_status *st)
{
    float **slot = op->p2p == OC_P2P_ACT ? &r->send_act[oc_rn_unit(r, op->mb, op->chunk)]
                                         : &r->send_grad[oc_rn_unit(r, op->mb, op->chunk)];
    if (!*slot)
        return oc_fail(st, "nothing to send: no part wrote this %s",
                       op->p2p == OC_P2P_ACT ? "activation" : "gradient");
    /* the layout's element size in the schedule (schedule.c); main.c runs
     * fp32 layouts, as the runner keeps its activations */
    if (op->bytes != oc_layout_act_bytes(r->l) * (double)r->S)
        return oc_fail(st, "the schedule sends %g bytes, the runner %lld values",
                       op->bytes, (long long)r->S);
    struct oc_runner_pending p = {NULL, PEND_SEND, i, slot, -1};
    if (r->b->ops->send(r->b, *slot, r->S, op->peer, op->tag, &p.req, st) != 0)
        return -1;
    oc_rn_pend_add(r, &p);
    return 0;
}

static int run_recv(struct oc_runner *r, const struct oc_op *op, struct oc_status *st)
{
    float *buf = op->p2p == OC_P2P_ACT ? oc_rn_attn_in(r, op->mb, op->chunk, 0) : r->gs;
    return r->b->ops->recv(r->b, buf, r->S, op->peer, op->tag, st);
}

static int run_mem(struct oc_runner *r, const struct oc_op *op, struct oc_status *st)
{
    const int alloc = op->kind == OC_OP_ALLOC;
    switch ((enum oc_buf)op->buf) {
    case OC_BUF_ACTIVATIONS: {
        float **b = &r->act[oc_rn_unit(r, op->mb, op->chunk)];
        if (alloc)
            oc_rn_block(r, op->mb, op->chunk);
        else if (*b)
            oc_rn_mem_put(r, OC_BUF_ACTIVATIONS, b, oc_rn_block_floats(r, op->chunk));
        else
            return oc_fail(st, "freeing activations that were never allocated");
        return 0;
    }
    case OC_BUF_LOGITS: {
        float **b = &r->logits[op->mb];
        if (alloc && !*b)
            *b = oc_rn_mem_get(r, OC_BUF_LOGITS, r->H);
        else if (!alloc && *b)
            oc_rn_mem_put(r, OC_BUF_LOGITS, b, r->H);
        else
            return oc_fail(st, "logits %s twice", alloc ? "allocated" : "freed");
        return 0;
    }
    default:
        /* weights, gradients, optimizer states: the arena, live from init */
        return 0;
    }
}

/* The stream an op's marks go to (backend.h). */
static enum oc_stream stream_of(const struct oc_op *op)
{
    if (op->kind == OC_OP_SEND || op->kind == OC_OP_RECV)
        return OC_STREAM_PP;
    if (op->kind == OC_OP_COLLECTIVE && op->group == OC_GROUP_DP)
        return OC_STREAM_DP;
    return OC_STREAM_COMPUTE;
}

/* Opens a group of pipeline messages before a SEND or RECV, closes it
 * before any op but those and ALLOC / FREE (backend.h). */
static int p2p_group(struct oc_runner *r, const struct oc_op *op, struct oc_status *st)
{
    const int p2p = op->kind == OC_OP_SEND || op->kind == OC_OP_RECV;
    const int mem = op->kind == OC_OP_ALLOC || op->kind == OC_OP_FREE;
    if (p2p && !r->p2p_open) {
        r->b->ops->p2p_begin(r->b);
        r->p2p_open = 1;
    } else if (!p2p && !mem && r->p2p_open) {
        r->p2p_open = 0;
        return r->b->ops->p2p_end(r->b, st);
    }
    return 0;
}

static int run_op(struct oc_runner *r, int64_t i, struct oc_status *st)
{
    const struct oc_op *op = &r->ops->ops[i];
    const int tp = op->kind == OC_OP_COLLECTIVE && op->group == OC_GROUP_TP;
    /* a part waits for its TP collectives; under SP a COMPUTE op resumes
     * the part its all-gather started */
    const int resumes = op->kind == OC_OP_COMPUTE && r->call_op == i;
    if (!tp && !resumes && r->call_op >= 0)
        return oc_fail(st, "the part of op %lld asked for %lld TP collective(s), "
                           "more than the schedule lists around it",
                       (long long)r->call_op, (long long)r->call.nreduce);
    switch ((enum oc_op_kind)op->kind) {
    case OC_OP_COMPUTE:
        return run_compute(r, i, op, st);
    case OC_OP_COLLECTIVE:
        switch ((enum oc_group)op->group) {
        case OC_GROUP_TP: return run_tp(r, i, op, st);
        case OC_GROUP_DP: return oc_rn_run_dp(r, i, op, st);
        case OC_GROUP_EMBED: return oc_rn_run_embed(r, op, st);
        default: return oc_fail(st, "a collective over no group");
        }
    case OC_OP_SEND:
        return run_send(r, i, op, st);
    case OC_OP_RECV:
        return run_recv(r, op, st);
    case OC_OP_WAIT:
        while (r->npend > 0)
            if (oc_rn_wait_pending(r, r->npend - 1, st) != 0)
                return -1;
        return 0;
    case OC_OP_ALLOC:
    case OC_OP_FREE:
        return run_mem(r, op, st);
    }
    return oc_fail(st, "an op of unknown kind %d", op->kind);
}

/* ------------------------------------------------------------------ */
/* A step                                                               */

/* The step's losses, summed per micro-batch then over micro-batches (in
 * that order: deterministic). Every TP rank has the same losses (gpt.h);
 * TP rank 0 counts them. */
static void sum_losses(struct oc_runner *r)
{
    r->loss_sum = 0;
    if (!r->p.has_head || r->me.tp != 0)
        return;
    const int64_t n = r->m * r->N;
    float *h = oc_xmalloc((size_t)n * sizeof *h);
    r->b->ops->download(r->b, h, r->losses, n * (int64_t)sizeof *h);
    for (int64_t mb = 0; mb < r->m; mb++) {
        double s = 0;
        for (int64_t i = 0; i < r->N; i++)
            s += h[mb * r->N + i];
        r->loss_sum += s;
    }
    free(h);
}

int oc_runner_step(struct oc_runner *r, int64_t step, struct oc_status *st)
{
    /* k: the step of this run; step: the global one (data, AdamW's
     * counter), from first_step on a resumed run */
    const int64_t k = step - r->o.first_step;
    OC_ASSERT(k >= 0 && k < r->o.steps);
    struct oc_ctl *c = r->ctl;
    struct oc_backend *b = r->b;
    const struct oc_backend_ops *B = b->ops;
    r->step = step;
    r->loss_sum = 0;
    B->zero(b, r->p.g, r->p.n * (int64_t)sizeof *r->p.g);
    const struct oc_layout *l = r->l;
    for (int64_t mb = 0; mb < r->m; mb++) {
        int64_t g0 = oc_synth_sample_index(step, l->global_batch, r->dp, r->me.dp,
                                           r->m, mb, l->micro_batch, 0);
        oc_synth_batch(&r->syn, g0, l->micro_batch, l->seq_length,
                       r->tok + mb * r->N, r->tgt + mb * r->N);
    }
    const int64_t tb = r->m * r->N * (int64_t)sizeof *r->tok;
    B->upload(b, r->tok_b, r->tok, tb);
    B->upload(b, r->tgt_b, r->tgt, tb);
    oc_ctl_set_what(c, "the barrier before step %lld", (long long)step + 1);
    if (oc_ctl_barrier(c, st) != 0)
        return -1;
    B->step_begin(b, r->nops);
    if (k == 0 && r->o.test_die)
        raise(SIGKILL);
    if (k == 0 && r->o.test_hang)
        for (;;)
            sleep(1000);

    double *S = r->start_s, *E = r->end_s, *I = r->inner_s; /* this step's */
    char desc[160];
    for (int64_t i = 0; i < r->nops; i++) {
        const struct oc_op *op = &r->ops->ops[i];
        describe(op, desc, sizeof desc);
        oc_ctl_set_what(c, "op %lld (%s) of step %lld", (long long)i, desc,
                        (long long)step + 1);
        const enum oc_stream sm = stream_of(op);
        int rc = p2p_group(r, op, st);
        if (rc == 0) {
            B->mark(b, OC_MARK_START, i, sm);
            rc = run_op(r, i, st);
        }
        if (rc != 0) {
            if (!c->timed_out) {
                char why[OC_MSG_MAX];
                snprintf(why, sizeof why, "%s", st->msg);
                oc_fail(st, "in %s: %s", c->what, why);
            }
            return -1;
        }
        if (!(op->kind == OC_OP_COLLECTIVE && op->async))
            B->mark(b, OC_MARK_END, i, sm);
        oc_rn_poll_pending(r);
    }
    if (r->p2p_open) {
        r->p2p_open = 0;
        oc_ctl_set_what(c, "the last pipeline messages of step %lld", (long long)step + 1);
        if (B->p2p_end(b, st) != 0)
            return -1;
    }
    /* poll again: a send's request completes at the end of its group */
    oc_rn_poll_pending(r);
    oc_ctl_set_what(c, "the end of step %lld", (long long)step + 1);
    int64_t stuck = -1;
    if (B->step_end(b, S, E, I, &r->step_end_s, &stuck, st) != 0) {
        if (stuck >= 0 && stuck < r->nops) {
            char why[OC_MSG_MAX];
            snprintf(why, sizeof why, "%s", st->msg);
            describe(&r->ops->ops[stuck], desc, sizeof desc);
            oc_fail(st, "%s; the first op not finished: op %lld (%s) of step %lld", why,
                    (long long)stuck, desc, (long long)step + 1);
        }
        return -1;
    }
    sum_losses(r);
    if (r->call_op >= 0)
        return oc_fail(st, "step %lld: the part of op %lld still waits for TP "
                           "collectives the schedule does not list",
                       (long long)step + 1, (long long)r->call_op);
    if (r->npend > 0)
        return oc_fail(st, "step %lld: %lld requests are outstanding after the "
                           "last op", (long long)step + 1, (long long)r->npend);
    for (int64_t i = 0; i < r->m * r->v; i++)
        if (r->act[i] || r->send_act[i] || r->send_grad[i])
            return oc_fail(st, "step %lld: buffers of micro-batch %lld chunk %lld "
                               "are still live at the end of the step",
                           (long long)step + 1, (long long)(i / r->v),
                           (long long)(i % r->v));
    return 0;
}
