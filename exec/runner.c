/* runner.c: one rank's op list run for real, op by op (see runner.h).
 *
 * What this file is: the walk over the schedule's ops with the buffers,
 * the step-mode calls into the model's parts on the backend's kernels,
 * the backend's requests and marks, plus the measured metrics of a step
 * from every rank's op times. What it is not: model math (model/gpt.c),
 * numerics (the kernels), communication or timing
 * (the backends: backend_cpu.c, cuda/backend_cuda.c), the parameter arena
 * (params.c), the program around it (main.c: options, outputs, gathering),
 * the definitions of the step's figures (core/step_metrics.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "runner.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "placement.h"
#include "step_metrics.h"
#include "timeline.h"

/* One DP reduction bucket: the tensors whose gradients are final after the
 * last backward of one chunk (overlap_grad_reduce), or all of them. */
struct oc_runner_bucket {
    int64_t *tensors; /* indices into p.t, arena order */
    int64_t nt;
    int64_t lo, hi;   /* arena range of the gradients (contiguous) */
    int64_t *counts;  /* (d) floats of each DP rank's slices */
    int64_t blk;      /* the largest of them: the reduce-scatter's block */
    float *pack;      /* reduce-scatter input: d blocks of blk, rank-major */
    float *mine;      /* reduce-scatter output: this rank's block */
    int in_flight;
};

enum { PEND_SEND, PEND_BUCKET };

struct oc_runner_pending {
    void *req;        /* the backend's request */
    int kind;
    int64_t op;       /* op index in the list */
    float **slot;     /* SEND: its buffer, freed on completion */
    int64_t bucket;   /* BUCKET */
};

/* ------------------------------------------------------------------ */
/* Memory by buffer kind                                                */

static void account(struct oc_runner *r, enum oc_buf k, double bytes)
{
    r->live_bytes[k] += bytes;
    r->live_total_bytes += bytes;
    if (r->live_bytes[k] > r->mem_hw_bytes[k])
        r->mem_hw_bytes[k] = r->live_bytes[k];
    if (r->live_total_bytes > r->mem_hw_total_bytes)
        r->mem_hw_total_bytes = r->live_total_bytes;
}

static float *mem_get(struct oc_runner *r, enum oc_buf k, int64_t floats)
{
    OC_ASSERT(floats > 0);
    float *p = r->b->ops->alloc(r->b, floats * (int64_t)sizeof *p);
    account(r, k, (double)floats * sizeof *p);
    return p;
}

static void mem_put(struct oc_runner *r, enum oc_buf k, float **p, int64_t floats)
{
    OC_ASSERT(*p);
    r->b->ops->free(r->b, *p);
    *p = NULL;
    account(r, k, -(double)floats * sizeof **p);
}

/* ------------------------------------------------------------------ */
/* Where things are                                                     */

static int64_t unit(const struct oc_runner *r, int64_t mb, int64_t c)
{
    OC_ASSERT(mb >= 0 && mb < r->m && c >= 0 && c < r->v);
    return mb * r->v + c;
}

/* Chunk c of this rank's stage holds the embedding / the head / layers
 * from chunk_layer0 on (core/placement.h). */
static int chunk_first(const struct oc_runner *r, int64_t c)
{
    return oc_place_holds_embed(r->l, r->me.pp, c);
}

static int chunk_last(const struct oc_runner *r, int64_t c)
{
    return oc_place_holds_head(r->l, r->me.pp, c);
}

static int64_t chunk_layer0(const struct oc_runner *r, int64_t c)
{
    return oc_place_chunk_layers(r->l, r->model, r->me.pp, c).first;
}

static int64_t block_floats(const struct oc_runner *r, int64_t c)
{
    return r->lc * r->per_layer + (chunk_last(r, c) ? r->N * r->C : 0);
}

/* The activation block of (mb, c), allocated on first use (a RECV of the
 * chunk's input comes before the schedule's ALLOC). */
static float *block(struct oc_runner *r, int64_t mb, int64_t c)
{
    float **b = &r->act[unit(r, mb, c)];
    if (!*b)
        *b = mem_get(r, OC_BUF_ACTIVATIONS, block_floats(r, c));
    return *b;
}

static float *attn_in(struct oc_runner *r, int64_t mb, int64_t c, int64_t j)
{
    OC_ASSERT(j >= 0 && j < r->lc);
    return block(r, mb, c) + j * r->per_layer;
}

/* none / selective: the MLP input follows the attention act fields. */
static float *mlp_in(struct oc_runner *r, int64_t mb, int64_t c, int64_t j)
{
    int64_t kept = r->A - (r->l->recompute == OC_RECOMPUTE_SELECTIVE ? r->Aatt : 0);
    return attn_in(r, mb, c, j) + r->N * r->C + kept;
}

static float *head_in(struct oc_runner *r, int64_t mb, int64_t c)
{
    OC_ASSERT(chunk_last(r, c));
    return block(r, mb, c) + r->lc * r->per_layer;
}

/* Full recompute's shared scratch: attention act, MLP act, MLP input,
 * recomputed MLP output. */
static float *full_attn_mem(struct oc_runner *r) { return r->shared; }
static float *full_mlp_mem(struct oc_runner *r) { return r->shared + r->A; }
static float *full_rin(struct oc_runner *r) { return r->shared + r->A + r->M; }
static float *full_junk(struct oc_runner *r)
{
    return r->shared + r->A + r->M + r->N * r->C;
}

static void bind_attn(struct oc_runner *r, int64_t mb, int64_t c, int64_t j,
                      struct oc_gpt_attn_act *a)
{
    float *in = attn_in(r, mb, c, j);
    switch (r->l->recompute) {
    case OC_RECOMPUTE_FULL:
        oc_gpt_attn_act_bind(a, &r->d, in, full_attn_mem(r));
        break;
    case OC_RECOMPUTE_SELECTIVE:
        /* att is the last field: the block keeps the others only */
        oc_gpt_attn_act_bind(a, &r->d, in, in + r->N * r->C);
        a->att = r->shared;
        break;
    case OC_RECOMPUTE_NONE:
        oc_gpt_attn_act_bind(a, &r->d, in, in + r->N * r->C);
        break;
    }
}

static void bind_mlp(struct oc_runner *r, int64_t mb, int64_t c, int64_t j,
                     struct oc_gpt_mlp_act *a)
{
    if (r->l->recompute == OC_RECOMPUTE_FULL) {
        oc_gpt_mlp_act_bind(a, &r->d, full_rin(r), full_mlp_mem(r));
        return;
    }
    float *in = mlp_in(r, mb, c, j);
    oc_gpt_mlp_act_bind(a, &r->d, in, in + r->N * r->C);
}

static void bind_head(struct oc_runner *r, int64_t mb, int64_t c,
                      struct oc_gpt_head_act *a)
{
    float **lg = &r->logits[mb];
    if (!*lg) /* the schedule's ALLOC LOGITS comes first; without memory ops */
        *lg = mem_get(r, OC_BUF_LOGITS, r->H);
    oc_gpt_head_act_bind(a, &r->d, head_in(r, mb, c), *lg);
}

/* A COMM buffer of N*C floats in slot, allocated on first use. */
static float *comm_buf(struct oc_runner *r, float **slot)
{
    if (!*slot)
        *slot = mem_get(r, OC_BUF_COMM, r->N * r->C);
    return *slot;
}

static float *attn_out(struct oc_runner *r, int64_t mb, int64_t c, int64_t j)
{
    return r->l->recompute == OC_RECOMPUTE_FULL ? full_rin(r) : mlp_in(r, mb, c, j);
}

static float *mlp_out(struct oc_runner *r, int64_t mb, int64_t c, int64_t j)
{
    if (j + 1 < r->lc)
        return attn_in(r, mb, c, j + 1);
    if (chunk_last(r, c))
        return head_in(r, mb, c);
    return comm_buf(r, &r->send_act[unit(r, mb, c)]);
}

/* ------------------------------------------------------------------ */
/* Parts                                                                */

/* The gpt.h call of a COMPUTE op (not the optimizer, not selective
 * recompute); the same arguments every time it is called for one op. */
static int part_call(struct oc_runner *r, const struct oc_op *op,
                     struct oc_gpt_call *c)
{
    const int64_t mb = op->mb, ch = op->chunk, l = op->layer_first;
    const int64_t j = l >= 0 ? l - chunk_layer0(r, ch) : -1;
    const int32_t *tok = r->tok_b + mb * r->N, *tgt = r->tgt_b + mb * r->N;
    const struct oc_kernels *k = &r->b->kernels;
    struct oc_gpt_attn_act aa;
    struct oc_gpt_mlp_act ma;
    struct oc_gpt_head_act ha;
    const enum oc_part part = (enum oc_part)op->part;
    if (part == OC_PART_ATTN || part == OC_PART_MLP)
        OC_ASSERT(j >= 0 && j < r->lc);
    switch ((enum oc_phase)op->phase) {
    case OC_PHASE_FWD:
        switch (part) {
        case OC_PART_EMBED:
            OC_ASSERT(chunk_first(r, ch));
            return oc_gpt_embed_fwd(k, c, &r->d, &r->p, tok, attn_in(r, mb, ch, 0));
        case OC_PART_ATTN:
            bind_attn(r, mb, ch, j, &aa);
            return oc_gpt_attn_fwd(k, c, &r->d, &r->p, l, &aa, attn_out(r, mb, ch, j));
        case OC_PART_MLP:
            bind_mlp(r, mb, ch, j, &ma);
            return oc_gpt_mlp_fwd(k, c, &r->d, &r->p, l, &ma, mlp_out(r, mb, ch, j));
        case OC_PART_HEAD:
            bind_head(r, mb, ch, &ha);
            return oc_gpt_head_fwd(k, c, &r->d, &r->p, &ha, tgt, r->losses + mb * r->N);
        default:
            break;
        }
        break;
    case OC_PHASE_RECOMPUTE:
        /* full recompute (gpt.h): the layer's forward again, into the
         * shared MLP input and a scratch output */
        OC_ASSERT(r->l->recompute == OC_RECOMPUTE_FULL);
        if (part == OC_PART_ATTN) {
            bind_attn(r, mb, ch, j, &aa);
            return oc_gpt_attn_fwd(k, c, &r->d, &r->p, l, &aa, full_rin(r));
        }
        if (part == OC_PART_MLP) {
            bind_mlp(r, mb, ch, j, &ma);
            return oc_gpt_mlp_fwd(k, c, &r->d, &r->p, l, &ma, full_junk(r));
        }
        break;
    case OC_PHASE_BWD:
        switch (part) {
        case OC_PART_HEAD:
            bind_head(r, mb, ch, &ha);
            return oc_gpt_head_bwd(k, c, &r->d, &r->p, &ha, tgt, r->grad_scale, r->gs,
                                   r->work);
        case OC_PART_MLP:
            bind_mlp(r, mb, ch, j, &ma);
            return oc_gpt_mlp_bwd(k, c, &r->d, &r->p, l, &ma, r->gs, r->gs, r->work);
        case OC_PART_ATTN: {
            bind_attn(r, mb, ch, j, &aa);
            float *din = j == 0 && !chunk_first(r, ch)
                             ? comm_buf(r, &r->send_grad[unit(r, mb, ch)])
                             : r->gs;
            return oc_gpt_attn_bwd(k, c, &r->d, &r->p, l, &aa, r->gs, din, r->work);
        }
        case OC_PART_EMBED:
            OC_ASSERT(chunk_first(r, ch));
            return oc_gpt_embed_bwd(k, c, &r->d, &r->p, tok, r->gs);
        default:
            break;
        }
        break;
    default:
        break;
    }
    OC_ASSERT(0); /* an op the layer-grain schedule does not emit */
    return -1;
}

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

/* ------------------------------------------------------------------ */
/* DP buckets and sharding                                              */

/* Slice j of d of a tensor of n floats: [n*j/d, n*(j+1)/d). */
static void slice(int64_t n, int64_t d, int64_t j, int64_t *lo, int64_t *hi)
{
    *lo = n * j / d;
    *hi = n * (j + 1) / d;
}

static int64_t tensor_floats(const struct oc_param_tensor *t)
{
    return t->rows * t->cols;
}

/* floats of DP rank j's slices over a list of tensors */
static int64_t slices_floats(const struct oc_runner *r, const int64_t *tensors,
                             int64_t nt, int64_t j)
{
    int64_t s = 0;
    for (int64_t k = 0; k < nt; k++) {
        int64_t lo, hi;
        slice(tensor_floats(&r->p.t[tensors[k]]), r->dp, j, &lo, &hi);
        s += hi - lo;
    }
    return s;
}

/* Copies rank j's slices of `tensors` from arena to dst (pack) or from src
 * back to arena (unpack), in backend memory; returns the floats moved. */
static int64_t slices_copy(const struct oc_runner *r, const int64_t *tensors,
                           int64_t nt, int64_t j, float *arena, float *buf,
                           int pack)
{
    int64_t pos = 0;
    for (int64_t k = 0; k < nt; k++) {
        const struct oc_param_tensor *t = &r->p.t[tensors[k]];
        int64_t lo, hi;
        slice(tensor_floats(t), r->dp, j, &lo, &hi);
        float *a = arena + t->offset + lo;
        const int64_t bytes = (hi - lo) * (int64_t)sizeof *a;
        if (bytes > 0) {
            if (pack)
                r->b->ops->copy(r->b, buf + pos, a, bytes);
            else
                r->b->ops->copy(r->b, a, buf + pos, bytes);
        }
        pos += hi - lo;
    }
    return pos;
}

/* The chunk (on this stage) a tensor's gradient belongs to. */
static int64_t tensor_chunk(const struct oc_runner *r, const struct oc_param_tensor *t)
{
    if (t->layer >= 0) {
        const struct oc_chunk_at at = oc_place_layer_chunk(r->l, r->model, t->layer);
        OC_ASSERT(at.stage == r->me.pp);
        return at.chunk;
    }
    if (t->kind == OC_P_WTE || t->kind == OC_P_WPE)
        return oc_place_embed(r->l).chunk;
    return oc_place_head(r->l).chunk;
}

static void buckets_init(struct oc_runner *r)
{
    const int overlap = r->dp > 1 && r->l->overlap_grad_reduce;
    r->nbk = overlap ? r->v : 1;
    r->bk = oc_xcalloc((size_t)r->nbk, sizeof *r->bk);
    r->tensor_bucket = oc_xmalloc((size_t)r->p.nt * sizeof *r->tensor_bucket);
    for (int64_t i = 0; i < r->p.nt; i++) {
        int64_t b = overlap ? tensor_chunk(r, &r->p.t[i]) : 0;
        r->tensor_bucket[i] = b;
        r->bk[b].nt++;
    }
    for (int64_t b = 0; b < r->nbk; b++) {
        struct oc_runner_bucket *k = &r->bk[b];
        k->tensors = oc_xmalloc((size_t)(k->nt > 0 ? k->nt : 1) * sizeof *k->tensors);
        k->nt = 0;
        k->lo = r->p.n;
        k->hi = 0;
    }
    for (int64_t i = 0; i < r->p.nt; i++) {
        struct oc_runner_bucket *k = &r->bk[r->tensor_bucket[i]];
        const struct oc_param_tensor *t = &r->p.t[i];
        k->tensors[k->nt++] = i;
        if (t->offset < k->lo)
            k->lo = t->offset;
        if (t->offset + tensor_floats(t) > k->hi)
            k->hi = t->offset + tensor_floats(t);
    }
    for (int64_t b = 0; b < r->nbk; b++) {
        struct oc_runner_bucket *k = &r->bk[b];
        int64_t total = 0;
        for (int64_t i = 0; i < k->nt; i++)
            total += tensor_floats(&r->p.t[k->tensors[i]]);
        /* The layers are given to oc_params_init in chunk order, so each
         * chunk's tensors (with the embedding before chunk 0's layers and
         * the head after the last chunk's) are one stretch of the arena. */
        OC_ASSERT(k->nt == 0 || total == k->hi - k->lo);
        k->counts = oc_xmalloc((size_t)r->dp * sizeof *k->counts);
        k->blk = 1;
        for (int64_t j = 0; j < r->dp; j++) {
            k->counts[j] = slices_floats(r, k->tensors, k->nt, j);
            if (k->counts[j] > k->blk)
                k->blk = k->counts[j];
        }
    }
}

static void buckets_free(struct oc_runner *r)
{
    for (int64_t b = 0; b < r->nbk; b++) {
        free(r->bk[b].tensors);
        free(r->bk[b].counts);
        r->b->ops->free(r->b, r->bk[b].pack);
        r->b->ops->free(r->b, r->bk[b].mine);
    }
    free(r->bk);
    free(r->tensor_bucket);
}

/* ------------------------------------------------------------------ */
/* Outstanding requests                                                 */

static void pend_add(struct oc_runner *r, const struct oc_runner_pending *p)
{
    if (r->npend == r->cap_pend) {
        r->cap_pend = r->cap_pend ? 2 * r->cap_pend : 16;
        r->pend = oc_xrealloc(r->pend, (size_t)r->cap_pend * sizeof *r->pend);
    }
    r->pend[r->npend++] = *p;
}

/* Work after a request completed: free a send's buffer, bring a
 * reduce-scatter's slices home, note when an async collective ended. */
static void complete(struct oc_runner *r, struct oc_runner_pending *p)
{
    if (p->kind == PEND_SEND) {
        mem_put(r, OC_BUF_COMM, p->slot, r->N * r->C);
        return;
    }
    struct oc_runner_bucket *k = &r->bk[p->bucket];
    OC_ASSERT(k->in_flight);
    if (r->l->shard_optimizer) {
        slices_copy(r, k->tensors, k->nt, r->me.dp, r->p.g, k->mine, 0);
        mem_put(r, OC_BUF_COMM, &k->pack, r->dp * k->blk);
        mem_put(r, OC_BUF_COMM, &k->mine, k->blk);
    }
    k->in_flight = 0;
    const struct oc_op *op = &r->ops->ops[p->op];
    if (op->kind == OC_OP_COLLECTIVE && op->async)
        r->b->ops->mark(r->b, OC_MARK_COMPLETED, p->op, OC_STREAM_DP);
}

static void pend_remove(struct oc_runner *r, int64_t i)
{
    r->pend[i] = r->pend[--r->npend];
}

/* Tests every outstanding request once (this is also what moves MPI's
 * non-blocking collectives along). */
static void poll_pending(struct oc_runner *r)
{
    for (int64_t i = 0; i < r->npend;) {
        if (r->b->ops->test(r->b, r->pend[i].req)) {
            complete(r, &r->pend[i]);
            pend_remove(r, i);
        } else {
            i++;
        }
    }
}

static int wait_pending(struct oc_runner *r, int64_t i, struct oc_status *st)
{
    if (r->b->ops->wait(r->b, r->pend[i].req, st) != 0)
        return -1;
    complete(r, &r->pend[i]);
    pend_remove(r, i);
    return 0;
}

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

static void optimizer(struct oc_runner *r)
{
    const int64_t k = r->step + 1; /* AdamW counts steps from 1 */
    const struct oc_kernels *K = &r->b->kernels;
    if (r->dp > 1 && r->l->shard_optimizer) {
        for (int64_t i = 0; i < r->p.nt; i++) {
            const struct oc_param_tensor *t = &r->p.t[i];
            int64_t lo, hi;
            slice(tensor_floats(t), r->dp, r->me.dp, &lo, &hi);
            if (hi > lo)
                oc_params_adamw(K, &r->p, &r->o.adamw, k, t->offset + lo, t->offset + hi);
        }
    } else {
        oc_params_adamw(K, &r->p, &r->o.adamw, k, 0, r->p.n);
    }
}

static int run_compute(struct oc_runner *r, int64_t i, const struct oc_op *op,
                       struct oc_status *st)
{
    if (op->phase == OC_PHASE_OPTIMIZER) {
        optimizer(r);
        return 0;
    }
    if (op->phase == OC_PHASE_RECOMPUTE && op->part == OC_PART_ATTN &&
        r->l->recompute == OC_RECOMPUTE_SELECTIVE) {
        struct oc_gpt_attn_act aa;
        bind_attn(r, op->mb, op->chunk, op->layer_first - chunk_layer0(r, op->chunk), &aa);
        oc_gpt_attn_scores(&r->b->kernels, &r->d, &aa);
        return 0;
    }
    memset(&r->call, 0, sizeof r->call);
    int rc = part_call(r, op, &r->call);
    if (rc < 0)
        return oc_fail(st, "the part failed");
    if (rc == OC_GPT_REDUCE)
        r->call_op = i;
    return 0;
}

static int run_tp(struct oc_runner *r, int64_t i, const struct oc_op *op,
                  struct oc_status *st)
{
    if (r->t == 1)
        return oc_fail(st, "a TP collective with TP size 1");
    if (op->coll != OC_COLL_ALLREDUCE)
        return oc_fail(st, "TP %s is not run by the executor (it runs without "
                           "sequence parallelism)", oc_coll_name(op->coll));
    for (int32_t k = 0; k < op->count; k++) {
        if (r->call_op < 0)
            return oc_fail(st, "the schedule lists TP all-reduce %d of %d here, "
                               "but the part before asked for no more",
                           k + 1, op->count);
        const struct oc_op *pop = &r->ops->ops[r->call_op];
        if (pop->phase != op->phase || pop->part != op->part || pop->mb != op->mb)
            return oc_fail(st, "the TP all-reduce is listed for %s %s mb %d, but "
                               "the part waiting is %s %s mb %d",
                           oc_phase_name(op->phase), oc_part_name(op->part), op->mb,
                           oc_phase_name(pop->phase), oc_part_name(pop->part), pop->mb);
        /* The schedule counts 16-bit activations (s*b*h*2 bytes) and, for
         * the cross-entropy, fp32 values (s*b*4 bytes); schedule.c. */
        const int ce = pop->part == OC_PART_HEAD && pop->phase == OC_PHASE_FWD;
        const double want = op->bytes / (ce ? 4.0 : 2.0);
        if ((double)r->call.n != want)
            return oc_fail(st, "the part asked for an all-reduce of %lld values, "
                               "the schedule lists %g", (long long)r->call.n, want);
        if (r->b->ops->tp_allreduce(r->b, r->call.buf, r->call.n, r->call.op, st) != 0)
            return -1;
        r->b->ops->mark(r->b, OC_MARK_INNER_START, i, OC_STREAM_COMPUTE);
        int rc = part_call(r, pop, &r->call);
        r->b->ops->mark(r->b, OC_MARK_INNER_END, i, OC_STREAM_COMPUTE);
        if (rc < 0)
            return oc_fail(st, "the part failed");
        if (rc == OC_GPT_DONE)
            r->call_op = -1;
    }
    return 0;
}

/* Starts the DP reduction of bucket b: in-place all-reduce of its
 * gradients, or reduce-scatter of their slices (sharded optimizer): rank
 * j's slices packed into block j of d blocks of blk floats, the padding
 * zero. */
static int bucket_start(struct oc_runner *r, int64_t b, void **rq,
                        struct oc_status *st)
{
    struct oc_runner_bucket *k = &r->bk[b];
    const struct oc_backend_ops *B = r->b->ops;
    OC_ASSERT(!k->in_flight && k->nt > 0);
    k->in_flight = 1;
    if (!r->l->shard_optimizer)
        return B->dp_allreduce_start(r->b, r->p.g + k->lo, k->hi - k->lo, rq, st);
    k->pack = mem_get(r, OC_BUF_COMM, r->dp * k->blk);
    B->zero(r->b, k->pack, r->dp * k->blk * (int64_t)sizeof *k->pack);
    int64_t total = 0;
    for (int64_t j = 0; j < r->dp; j++) {
        int64_t n = slices_copy(r, k->tensors, k->nt, j, r->p.g, k->pack + j * k->blk, 1);
        OC_ASSERT(n == k->counts[j]);
        total += n;
    }
    OC_ASSERT(total == k->hi - k->lo);
    k->mine = mem_get(r, OC_BUF_COMM, k->blk);
    return B->dp_reduce_scatter_start(r->b, k->pack, k->mine, k->blk, rq, st);
}

/* The distributed optimizer's all-gather of the updated weights: d equal
 * blocks of the largest rank's slice count. */
static int allgather_weights(struct oc_runner *r, struct oc_status *st)
{
    const int64_t d = r->dp, nt = r->p.nt;
    int64_t *all = oc_xmalloc((size_t)nt * sizeof *all);
    for (int64_t i = 0; i < nt; i++)
        all[i] = i;
    int64_t blk = 1, total = 0;
    for (int64_t j = 0; j < d; j++) {
        int64_t n = slices_floats(r, all, nt, j);
        total += n;
        if (n > blk)
            blk = n;
    }
    OC_ASSERT(total == r->p.n);
    float *mine = mem_get(r, OC_BUF_COMM, blk);
    float *full = mem_get(r, OC_BUF_COMM, d * blk);
    r->b->ops->zero(r->b, mine, blk * (int64_t)sizeof *mine);
    slices_copy(r, all, nt, r->me.dp, r->p.w, mine, 1);
    int rc = r->b->ops->dp_allgather(r->b, mine, full, blk, st);
    if (rc == 0)
        for (int64_t j = 0; j < d; j++)
            slices_copy(r, all, nt, j, r->p.w, full + j * blk, 0);
    mem_put(r, OC_BUF_COMM, &full, d * blk);
    mem_put(r, OC_BUF_COMM, &mine, blk);
    free(all);
    return rc;
}

static int run_dp(struct oc_runner *r, int64_t i, const struct oc_op *op,
                  struct oc_status *st)
{
    if (r->dp == 1)
        return oc_fail(st, "a DP collective with DP size 1");
    if (op->phase == OC_PHASE_OPTIMIZER) {
        if (op->coll != OC_COLL_ALLGATHER || !r->l->shard_optimizer)
            return oc_fail(st, "a DP %s after the optimizer without a sharded "
                               "optimizer", oc_coll_name(op->coll));
        return allgather_weights(r, st);
    }
    const enum oc_coll_kind want =
        r->l->shard_optimizer ? OC_COLL_REDUCESCATTER : OC_COLL_ALLREDUCE;
    if (op->coll != want)
        return oc_fail(st, "a DP gradient %s, the layout asks for a %s",
                       oc_coll_name(op->coll), oc_coll_name(want));
    int64_t b = op->async ? op->chunk : 0;
    if (b < 0 || b >= r->nbk || (op->async != 0) != (r->l->overlap_grad_reduce != 0))
        return oc_fail(st, "a DP reduction of chunk %d that the runner has no "
                           "bucket for", op->chunk);
    struct oc_runner_pending p = {NULL, PEND_BUCKET, i, NULL, b};
    if (bucket_start(r, b, &p.req, st) != 0)
        return -1;
    pend_add(r, &p);
    if (op->async) {
        r->b->ops->mark(r->b, OC_MARK_ISSUED, i, OC_STREAM_DP);
        return 0;
    }
    return wait_pending(r, r->npend - 1, st);
}

static int run_embed(struct oc_runner *r, const struct oc_op *op, struct oc_status *st)
{
    if (r->tied < 0)
        return oc_fail(st, "an embedding all-reduce on a rank without a tied "
                           "embedding gradient");
    if (op->coll != OC_COLL_ALLREDUCE)
        return oc_fail(st, "an embedding %s", oc_coll_name(op->coll));
    /* Megatron-LM's order: the DP reduction of the bucket holding the tied
     * gradient must be complete (and its slices home) first. */
    const int64_t b = r->tensor_bucket[r->tied];
    for (int64_t i = 0; i < r->npend; i++)
        if (r->pend[i].kind == PEND_BUCKET && r->pend[i].bucket == b) {
            if (wait_pending(r, i, st) != 0)
                return -1;
            break;
        }
    const struct oc_param_tensor *t = &r->p.t[r->tied];
    return r->b->ops->embed_allreduce(r->b, r->p.g + t->offset, tensor_floats(t), st);
}

static int run_send(struct oc_runner *r, int64_t i, const struct oc_op *op,
                    struct oc_status *st)
{
    float **slot = op->p2p == OC_P2P_ACT ? &r->send_act[unit(r, op->mb, op->chunk)]
                                         : &r->send_grad[unit(r, op->mb, op->chunk)];
    if (!*slot)
        return oc_fail(st, "nothing to send: no part wrote this %s",
                       op->p2p == OC_P2P_ACT ? "activation" : "gradient");
    /* 16-bit activations in the schedule (schedule.c), fp32 here */
    if (op->bytes != 2.0 * (double)(r->N * r->C))
        return oc_fail(st, "the schedule sends %g bytes, the runner %lld values",
                       op->bytes, (long long)(r->N * r->C));
    struct oc_runner_pending p = {NULL, PEND_SEND, i, slot, -1};
    if (r->b->ops->send(r->b, *slot, r->N * r->C, op->peer, op->tag, &p.req, st) != 0)
        return -1;
    pend_add(r, &p);
    return 0;
}

static int run_recv(struct oc_runner *r, const struct oc_op *op, struct oc_status *st)
{
    float *buf = op->p2p == OC_P2P_ACT ? attn_in(r, op->mb, op->chunk, 0) : r->gs;
    return r->b->ops->recv(r->b, buf, r->N * r->C, op->peer, op->tag, st);
}

static int run_mem(struct oc_runner *r, const struct oc_op *op, struct oc_status *st)
{
    const int alloc = op->kind == OC_OP_ALLOC;
    switch ((enum oc_buf)op->buf) {
    case OC_BUF_ACTIVATIONS: {
        float **b = &r->act[unit(r, op->mb, op->chunk)];
        if (alloc)
            block(r, op->mb, op->chunk);
        else if (*b)
            mem_put(r, OC_BUF_ACTIVATIONS, b, block_floats(r, op->chunk));
        else
            return oc_fail(st, "freeing activations that were never allocated");
        return 0;
    }
    case OC_BUF_LOGITS: {
        float **b = &r->logits[op->mb];
        if (alloc && !*b)
            *b = mem_get(r, OC_BUF_LOGITS, r->H);
        else if (!alloc && *b)
            mem_put(r, OC_BUF_LOGITS, b, r->H);
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
    if (!tp && r->call_op >= 0)
        return oc_fail(st, "the part of op %lld asked for %lld TP all-reduce(s), "
                           "more than the schedule lists after it",
                       (long long)r->call_op, (long long)r->call.nreduce);
    switch ((enum oc_op_kind)op->kind) {
    case OC_OP_COMPUTE:
        return run_compute(r, i, op, st);
    case OC_OP_COLLECTIVE:
        switch ((enum oc_group)op->group) {
        case OC_GROUP_TP: return run_tp(r, i, op, st);
        case OC_GROUP_DP: return run_dp(r, i, op, st);
        case OC_GROUP_EMBED: return run_embed(r, op, st);
        default: return oc_fail(st, "a collective over no group");
        }
    case OC_OP_SEND:
        return run_send(r, i, op, st);
    case OC_OP_RECV:
        return run_recv(r, op, st);
    case OC_OP_WAIT:
        while (r->npend > 0)
            if (wait_pending(r, r->npend - 1, st) != 0)
                return -1;
        return 0;
    case OC_OP_ALLOC:
    case OC_OP_FREE:
        return run_mem(r, op, st);
    }
    return oc_fail(st, "an op of unknown kind %d", op->kind);
}

/* ------------------------------------------------------------------ */
/* Set-up                                                               */

void oc_runner_param_opts(const struct oc_layout *l, const struct oc_model *m,
                          int64_t tp_rank, int64_t stage, uint64_t seed,
                          int64_t *layers, struct oc_params_opts *o)
{
    int64_t n = 0;
    for (int64_t c = 0; c < oc_place_chunks_per_stage(l); c++) {
        const struct oc_layer_range lr = oc_place_chunk_layers(l, m, stage, c);
        for (int64_t j = 0; j < lr.count; j++)
            layers[n++] = lr.first + j;
    }
    memset(o, 0, sizeof *o);
    o->tp = l->tp;
    o->tp_rank = tp_rank;
    o->layers = layers;
    o->nlayers = n;
    o->has_embed = oc_place_stage_has_embed(l, stage);
    o->has_head = oc_place_stage_has_head(l, stage);
    o->seed = seed;
}

int oc_runner_init(struct oc_runner *r, const struct oc_model *m,
                   const struct oc_schedule *s, struct oc_backend *b,
                   const struct oc_runner_opts *o, struct oc_status *st)
{
    memset(r, 0, sizeof *r);
    r->model = m;
    r->sched = s;
    r->l = &s->layout;
    r->b = b;
    r->ctl = b->ctl;
    r->o = *o;
    r->rank = b->ctl->rank;
    r->me = oc_layout_coord(r->l, r->rank);
    r->ops = &s->ranks[r->rank];
    r->nops = r->ops->n;
    r->call_op = -1;
    r->tied = -1;
    const struct oc_layout *l = r->l;
    OC_ASSERT(o->steps >= 1);
    if (l->schedule != OC_SCHED_INTERLEAVED && l->vchunks != 1)
        return oc_fail(st, "exec: v%lld needs the interleaved schedule",
                       (long long)l->vchunks);
    if (oc_gpt_check_layout(m, l, st) != 0)
        return -1;
    if (oc_gpt_dims_init(&r->d, m, l->tp, r->me.tp, l->micro_batch, l->seq_length,
                         st) != 0)
        return -1;
    r->t = l->tp;
    r->pp = l->pp;
    r->dp = l->dp;
    r->m = s->num_micro_batches;
    r->v = l->vchunks;
    r->lc = oc_layout_layers_per_chunk(l, m);
    r->N = r->d.B * r->d.T;
    r->C = r->d.C;
    r->A = oc_gpt_attn_act_floats(&r->d);
    r->Aatt = oc_gpt_att_floats(&r->d);
    r->M = oc_gpt_mlp_act_floats(&r->d);
    r->H = oc_gpt_head_act_floats(&r->d);
    const int64_t NC = r->N * r->C;
    switch (l->recompute) {
    case OC_RECOMPUTE_NONE: r->per_layer = NC + r->A + NC + r->M; break;
    case OC_RECOMPUTE_SELECTIVE: r->per_layer = NC + r->A - r->Aatt + NC + r->M; break;
    case OC_RECOMPUTE_FULL: r->per_layer = NC; break;
    }
    /* The head's gradient is of grad_scale * the sum of token losses; with
     * the DP sum of gradients this is the gradient of the global batch's
     * mean loss (gpt.h, "Gradients"). */
    r->grad_scale = (float)(1.0 / ((double)l->global_batch * (double)l->seq_length));

    int64_t *layers = oc_xmalloc((size_t)m->num_hidden_layers * sizeof *layers);
    struct oc_params_opts po;
    oc_runner_param_opts(l, m, r->me.tp, r->me.pp, o->seed, layers, &po);
    int rc = oc_params_init(&r->p, m, &po, st);
    free(layers);
    if (rc != 0)
        return -1;
    if (b->ops->params_adopt(b, &r->p, st) != 0)
        return -1;
    account(r, OC_BUF_WEIGHTS, (double)r->p.n * sizeof(float));
    account(r, OC_BUF_GRADS, (double)r->p.n * sizeof(float));
    account(r, OC_BUF_OPTIMIZER, 2.0 * (double)r->p.n * sizeof(float));
    /* data: its own stream, keyed apart from the weights' */
    if (oc_synth_init(&r->syn, m->vocab_size, o->seed + 1, st) != 0)
        return -1;

    const size_t units = (size_t)(r->m * r->v);
    r->act = oc_xcalloc(units, sizeof *r->act);
    r->send_act = oc_xcalloc(units, sizeof *r->send_act);
    r->send_grad = oc_xcalloc(units, sizeof *r->send_grad);
    r->logits = oc_xcalloc((size_t)r->m, sizeof *r->logits);
    r->gs = mem_get(r, OC_BUF_COMM, NC);
    if (oc_gpt_reserve(&b->kernels, &r->d, st) != 0)
        return -1;
    r->work = mem_get(r, OC_BUF_ACTIVATIONS, oc_gpt_work_floats(&b->kernels, &r->d));
    if (r->p.has_head)
        r->losses = mem_get(r, OC_BUF_LOGITS, r->m * r->N);
    if (l->recompute == OC_RECOMPUTE_FULL)
        r->shared = mem_get(r, OC_BUF_ACTIVATIONS, r->A + r->M + 2 * NC);
    else if (l->recompute == OC_RECOMPUTE_SELECTIVE)
        r->shared = mem_get(r, OC_BUF_ACTIVATIONS, r->Aatt);
    r->tok = oc_xmalloc((size_t)(r->m * r->N) * sizeof *r->tok);
    r->tgt = oc_xmalloc((size_t)(r->m * r->N) * sizeof *r->tgt);
    r->tok_b = b->ops->alloc(b, r->m * r->N * (int64_t)sizeof *r->tok_b);
    r->tgt_b = b->ops->alloc(b, r->m * r->N * (int64_t)sizeof *r->tgt_b);

    buckets_init(r);
    int64_t tn = 0;
    if (oc_params_tied_grad(&r->p, &tn) &&
        oc_place_tied_allreduce(l, m, r->me.pp)) {
        const struct oc_param_tensor *t =
            oc_params_tensor(&r->p, r->p.has_embed ? OC_P_WTE : OC_P_LMW, -1);
        r->tied = t - r->p.t;
    }

    const size_t times = (size_t)(o->steps * r->nops);
    r->start_s = oc_xcalloc(times, sizeof *r->start_s);
    r->end_s = oc_xcalloc(times, sizeof *r->end_s);
    r->inner_s = oc_xcalloc(times, sizeof *r->inner_s);
    return 0;
}

const float *oc_runner_weights(struct oc_runner *r)
{
    if (!r->w_host)
        r->w_host = oc_xmalloc((size_t)r->p.n * sizeof *r->w_host);
    r->b->ops->download(r->b, r->w_host, r->p.w, r->p.n * (int64_t)sizeof *r->w_host);
    return r->w_host;
}

void oc_runner_free(struct oc_runner *r)
{
    if (!r->ops)
        return;
    struct oc_backend *b = r->b;
    void (*bfree)(struct oc_backend *, void *) = b->ops->free;
    free(r->inner_s);
    free(r->end_s);
    free(r->start_s);
    free(r->pend);
    if (r->bk)
        buckets_free(r);
    free(r->tgt);
    free(r->tok);
    bfree(b, r->tgt_b);
    bfree(b, r->tok_b);
    free(r->w_host);
    bfree(b, r->shared);
    bfree(b, r->losses);
    bfree(b, r->work);
    bfree(b, r->gs);
    for (int64_t i = 0; i < r->m * r->v; i++) {
        if (r->act)
            bfree(b, r->act[i]);
        if (r->send_act)
            bfree(b, r->send_act[i]);
        if (r->send_grad)
            bfree(b, r->send_grad[i]);
    }
    for (int64_t i = 0; r->logits && i < r->m; i++)
        bfree(b, r->logits[i]);
    free(r->logits);
    free(r->send_grad);
    free(r->send_act);
    free(r->act);
    oc_synth_free(&r->syn);
    if (r->p.w)
        b->ops->params_release(b, &r->p);
    oc_params_free(&r->p);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------ */
/* A step                                                               */

int oc_runner_step(struct oc_runner *r, int64_t step, struct oc_status *st)
{
    OC_ASSERT(step >= 0 && step < r->o.steps);
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
    if (step == 0 && r->o.test_die)
        raise(SIGKILL);
    if (step == 0 && r->o.test_hang)
        for (;;)
            sleep(1000);

    double *S = r->start_s + step * r->nops, *E = r->end_s + step * r->nops;
    double *I = r->inner_s + step * r->nops;
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
        poll_pending(r);
    }
    if (r->p2p_open) {
        r->p2p_open = 0;
        oc_ctl_set_what(c, "the last pipeline messages of step %lld", (long long)step + 1);
        if (B->p2p_end(b, st) != 0)
            return -1;
    }
    /* poll again: a send's request completes at the end of its group */
    poll_pending(r);
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
                           "all-reduces the schedule does not list",
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

/* ------------------------------------------------------------------ */
/* Measured metrics                                                     */

void oc_runner_step_metrics(const struct oc_schedule *s, double *const *start,
                            double *const *end, double *const *inner,
                            const double *peak_mem, struct oc_metrics *mt)
{
    /* The measured intervals as a timeline (core/timeline.h): a RECV's
     * time includes its wait for the data; a SEND's and an async
     * collective's end are when the rank saw them complete. */
    struct oc_timeline tl;
    oc_timeline_init(&tl, s, NULL);
    oc_timeline_measured(&tl);
    for (int64_t r = 0; r < s->nranks; r++) {
        const size_t n = (size_t)s->ranks[r].n * sizeof(double);
        memcpy(tl.start_s[r], start[r], n);
        memcpy(tl.end_s[r], end[r], n);
        memcpy(tl.inner_s[r], inner[r], n);
        tl.peak_mem_bytes[r] = peak_mem ? peak_mem[r] : 0;
    }
    oc_step_metrics(&tl, mt);
    oc_timeline_send_arrivals(&tl);
    for (int64_t r = 0; r < s->nranks; r++)
        memcpy(end[r], tl.end_s[r], (size_t)s->ranks[r].n * sizeof(double));
    oc_timeline_free(&tl);
}
