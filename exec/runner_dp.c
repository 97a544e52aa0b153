/* runner_dp.c: the runner's data-parallel side (see runner.h, "Sharded
 * optimizer states", and runner_priv.h for the runner's files).
 *
 * What this file is: the DP reduction buckets (Megatron-Core's, those
 * the schedule issues, with overlap_grad_reduce: schedule_bucket.h; else
 * one), the slices of ZeRO-1 (slice j of d of
 * every tensor: oc_params_slice), the reduce-scatter's packing and the
 * weights' all-gather, AdamW over the arena or this DP rank's slices (the
 * ones its optimizer states were allocated for, params.h), the tied embedding's
 * all-reduce after its bucket, the TP sum of the norms' gradients under
 * sequence parallelism before their bucket's reduction, and the
 * outstanding requests (sends' and buckets') with the work done when one
 * completes. What it is not: the compressed exchange (runner_gc.c), the
 * collectives themselves (the backends' dp_* and embed_allreduce), AdamW's
 * math (params.c on the kernels), or the choice of when (the schedule's
 * ops, walked by runner_step.c).
 */
#include "runner_priv.h"

#include <stdlib.h>

#include "placement.h"
#include "schedule_bucket.h"

/* ------------------------------------------------------------------ */
/* DP buckets and sharding                                              */

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
        oc_params_slice(tensor_floats(&r->p.t[tensors[k]]), r->dp, j, &lo, &hi);
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
        oc_params_slice(tensor_floats(t), r->dp, j, &lo, &hi);
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

/* Overlap: a tensor's bucket among the schedule's (the chunk's buckets of
 * schedule_bucket.h, chunk after chunk from first[chunk]): by its layer,
 * the embedding's with the chunk's first layer, the head's with its last. */
static int64_t tensor_bucket_of(const struct oc_runner *r, const struct oc_param_tensor *t,
                                const struct oc_dp_bucket *b, const int64_t *first,
                                const int64_t *nb)
{
    /* a tied embedding's copy on the last stage is the head */
    const int embed = (t->kind == OC_P_WTE || t->kind == OC_P_WPE) &&
                      oc_place_stage_has_embed(r->l, r->me.pp);
    const int64_t c = t->layer >= 0 ? tensor_chunk(r, t)
                      : embed       ? oc_place_embed(r->l).chunk
                                    : oc_place_head(r->l).chunk;
    for (int64_t j = first[c]; j < first[c] + nb[c]; j++) {
        const struct oc_dp_bucket *k = &b[j];
        if (t->layer >= 0 ? t->layer >= k->layer_first &&
                                t->layer < k->layer_first + k->layer_count
                          : (embed ? k->embed : k->head))
            return j;
    }
    OC_ASSERT(!"a tensor in no DP bucket");
    return -1;
}

void oc_rn_buckets_init(struct oc_runner *r)
{
    const int overlap = r->dp > 1 && r->l->overlap_grad_reduce;
    /* overlap: Megatron-Core's buckets, as the schedule issues them */
    struct oc_dp_bucket *bs = NULL;
    int64_t *first = NULL, *nb = NULL;
    r->nbk = 1;
    if (overlap) {
        const int64_t cap = oc_dp_buckets_cap(r->model, r->l);
        bs = oc_xmalloc((size_t)(r->v * cap) * sizeof *bs);
        first = oc_xmalloc((size_t)r->v * sizeof *first);
        nb = oc_xmalloc((size_t)r->v * sizeof *nb);
        r->nbk = 0;
        for (int64_t c = 0; c < r->v; c++) {
            first[c] = r->nbk;
            nb[c] = oc_dp_buckets(r->model, r->l, r->me.pp, c, oc_dp_bucket_size(r->l),
                                  bs + r->nbk);
            r->nbk += nb[c];
        }
    }
    r->bk = oc_xcalloc((size_t)r->nbk, sizeof *r->bk);
    for (int64_t b = 0; b < r->nbk; b++) {
        r->bk[b].chunk = -1;
        r->bk[b].layer_first = -1;
    }
    for (int64_t c = 0; overlap && c < r->v; c++)
        for (int64_t j = first[c]; j < first[c] + nb[c]; j++) {
            r->bk[j].chunk = c;
            r->bk[j].layer_first = bs[j].layer_first;
        }
    r->tensor_bucket = oc_xmalloc((size_t)r->p.nt * sizeof *r->tensor_bucket);
    for (int64_t i = 0; i < r->p.nt; i++) {
        int64_t b = overlap ? tensor_bucket_of(r, &r->p.t[i], bs, first, nb) : 0;
        r->tensor_bucket[i] = b;
        r->bk[b].nt++;
    }
    free(bs);
    free(first);
    free(nb);
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

void oc_rn_buckets_free(struct oc_runner *r)
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

void oc_rn_pend_add(struct oc_runner *r, const struct oc_runner_pending *p)
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
        oc_rn_mem_put(r, OC_BUF_COMM, p->slot, r->S);
        return;
    }
    struct oc_runner_bucket *k = &r->bk[p->bucket];
    OC_ASSERT(k->in_flight);
    if (r->l->zero) {
        slices_copy(r, k->tensors, k->nt, r->me.dp, r->p.g, k->mine, 0);
        oc_rn_mem_put(r, OC_BUF_COMM, &k->pack, r->dp * k->blk);
        oc_rn_mem_put(r, OC_BUF_COMM, &k->mine, k->blk);
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
void oc_rn_poll_pending(struct oc_runner *r)
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

int oc_rn_wait_pending(struct oc_runner *r, int64_t i, struct oc_status *st)
{
    if (r->b->ops->wait(r->b, r->pend[i].req, st) != 0)
        return -1;
    complete(r, &r->pend[i]);
    pend_remove(r, i);
    return 0;
}

/* ------------------------------------------------------------------ */
/* The optimizer and the DP / EMBED ops                                 */

/* Sequence parallelism leaves the norms' gains and biases with this TP
 * rank's share of their gradient (gpt.h: oc_gpt_sp_partial_grad): their
 * sum over the TP group, once per step for bucket b's tensors, packed
 * into one all-reduce (Megatron-LM's finalize_model_grads does this for
 * its sequence-parallel parameters; the schedule has no op for it, so its
 * time is the DP op's or the optimizer's). */
static int sp_grads_sum(struct oc_runner *r, int64_t b, struct oc_status *st)
{
    struct oc_runner_bucket *k = &r->bk[b];
    if (!r->d.sp || k->sp_summed)
        return 0;
    int64_t n = 0;
    for (int64_t i = 0; i < k->nt; i++) {
        const struct oc_param_tensor *t = &r->p.t[k->tensors[i]];
        if (oc_gpt_sp_partial_grad(&r->d, t->kind))
            n += tensor_floats(t);
    }
    k->sp_summed = 1;
    if (n == 0)
        return 0;
    float *buf = oc_rn_mem_get(r, OC_BUF_COMM, n);
    const int64_t fb = (int64_t)sizeof *buf;
    for (int pass = 0; pass < 2; pass++) {
        int64_t pos = 0;
        for (int64_t i = 0; i < k->nt; i++) {
            const struct oc_param_tensor *t = &r->p.t[k->tensors[i]];
            if (!oc_gpt_sp_partial_grad(&r->d, t->kind))
                continue;
            float *g = r->p.g + t->offset;
            if (pass == 0)
                r->b->ops->copy(r->b, buf + pos, g, tensor_floats(t) * fb);
            else
                r->b->ops->copy(r->b, g, buf + pos, tensor_floats(t) * fb);
            pos += tensor_floats(t);
        }
        if (pass == 0 && r->b->ops->tp_allreduce(r->b, buf, n, OC_GPT_SUM, st) != 0) {
            oc_rn_mem_put(r, OC_BUF_COMM, &buf, n);
            return -1;
        }
    }
    oc_rn_mem_put(r, OC_BUF_COMM, &buf, n);
    return 0;
}

int oc_rn_sp_sum_all(struct oc_runner *r, struct oc_status *st)
{
    for (int64_t b = 0; b < r->nbk; b++)
        if (sp_grads_sum(r, b, st) != 0)
            return -1;
    return 0;
}

int oc_rn_optimizer(struct oc_runner *r, struct oc_status *st)
{
    if (oc_rn_sp_sum_all(r, st) != 0) /* without DP ops: not summed yet */
        return -1;
    /* over the slices the moments were allocated for: this DP rank's under
     * ZeRO-1 (runner.c's oc_params_init_sharded), else the arena */
    OC_ASSERT(r->p.opt_d == (r->l->zero ? r->dp : 1));
    oc_params_adamw(&r->b->kernels, &r->p, &r->o.adamw, r->step + 1); /* steps from 1 */
    for (int64_t b = 0; b < r->nbk; b++)
        r->bk[b].sp_summed = 0;
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
    if (sp_grads_sum(r, b, st) != 0)
        return -1;
    k->in_flight = 1;
    if (!r->l->zero)
        return B->dp_allreduce_start(r->b, r->p.g + k->lo, k->hi - k->lo, rq, st);
    k->pack = oc_rn_mem_get(r, OC_BUF_COMM, r->dp * k->blk);
    B->zero(r->b, k->pack, r->dp * k->blk * (int64_t)sizeof *k->pack);
    int64_t total = 0;
    for (int64_t j = 0; j < r->dp; j++) {
        int64_t n = slices_copy(r, k->tensors, k->nt, j, r->p.g, k->pack + j * k->blk, 1);
        OC_ASSERT(n == k->counts[j]);
        total += n;
    }
    OC_ASSERT(total == k->hi - k->lo);
    k->mine = oc_rn_mem_get(r, OC_BUF_COMM, k->blk);
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
    float *mine = oc_rn_mem_get(r, OC_BUF_COMM, blk);
    float *full = oc_rn_mem_get(r, OC_BUF_COMM, d * blk);
    r->b->ops->zero(r->b, mine, blk * (int64_t)sizeof *mine);
    slices_copy(r, all, nt, r->me.dp, r->p.w, mine, 1);
    int rc = r->b->ops->dp_allgather(r->b, mine, full, blk, st);
    if (rc == 0)
        for (int64_t j = 0; j < d; j++)
            slices_copy(r, all, nt, j, r->p.w, full + j * blk, 0);
    oc_rn_mem_put(r, OC_BUF_COMM, &full, d * blk);
    oc_rn_mem_put(r, OC_BUF_COMM, &mine, blk);
    free(all);
    return rc;
}

int oc_rn_run_dp(struct oc_runner *r, int64_t i, const struct oc_op *op,
                 struct oc_status *st)
{
    if (r->dp == 1)
        return oc_fail(st, "a DP collective with DP size 1");
    if (op->phase == OC_PHASE_OPTIMIZER) {
        if (op->coll != OC_COLL_ALLGATHER || !r->l->zero)
            return oc_fail(st, "a DP %s after the optimizer without a sharded "
                               "optimizer", oc_coll_name(op->coll));
        return allgather_weights(r, st);
    }
    if (r->gc) /* compressed: runner_gc.c */
        return oc_rn_gc_exchange(r, i, op, st);
    const enum oc_coll_kind want =
        r->l->zero ? OC_COLL_REDUCESCATTER : OC_COLL_ALLREDUCE;
    if (op->coll != want)
        return oc_fail(st, "a DP gradient %s, the layout asks for a %s",
                       oc_coll_name(op->coll), oc_coll_name(want));
    int64_t b = op->async ? -1 : 0;
    for (int64_t j = 0; op->async && j < r->nbk; j++)
        if (r->bk[j].chunk == op->chunk && r->bk[j].layer_first == op->layer_first)
            b = j;
    if (b < 0 || b >= r->nbk || (op->async != 0) != (r->l->overlap_grad_reduce != 0))
        return oc_fail(st, "a DP reduction of chunk %d that the runner has no "
                           "bucket for", op->chunk);
    struct oc_runner_pending p = {NULL, PEND_BUCKET, i, NULL, b};
    if (bucket_start(r, b, &p.req, st) != 0)
        return -1;
    oc_rn_pend_add(r, &p);
    if (op->async) {
        r->b->ops->mark(r->b, OC_MARK_ISSUED, i, OC_STREAM_DP);
        return 0;
    }
    return oc_rn_wait_pending(r, r->npend - 1, st);
}

int oc_rn_run_embed(struct oc_runner *r, const struct oc_op *op, struct oc_status *st)
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
            if (oc_rn_wait_pending(r, i, st) != 0)
                return -1;
            break;
        }
    const struct oc_param_tensor *t = &r->p.t[r->tied];
    return r->b->ops->embed_allreduce(r->b, r->p.g + t->offset, tensor_floats(t), st);
}
