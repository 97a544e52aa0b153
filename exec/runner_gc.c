/* runner_gc.c: the runner's compressed DP gradient exchange (issue 14 item
 * 4; core/compress.h), run exactly as the schedule lists it so that `ocsim
 * compare` pairs its ops one to one with the prediction's:
 *
 *   gc=topk<D>   COMPUTE   error feedback + select K = ceil(D*n) pairs
 *                COLLECTIVE DP all-gather of d*K (int32, fp32) pairs:
 *                           d*K*8 bytes, the schedule's op.bytes
 *                COMPUTE   the gradient = the sum of the gathered pairs
 *   gc=q1, q8    COMPUTE   error feedback + quantise d chunks (worker)
 *                COLLECTIVE 1-bit Adam's compressed all-reduce, which the
 *                           schedule charges as an all-reduce of the
 *                           compressed buffer (n*bits/8 + 4d bytes): an
 *                           all-to-all of the d blocks, this rank's chunk
 *                           summed and quantised again with the server's
 *                           error feedback (timed as inner compute of the
 *                           op), an all-gather of the d blocks
 *                COMPUTE   the gradient decoded from the gathered blocks
 *
 * n is the rank's whole arena (the stage's parameters, as oc_gc_plan's N;
 * checked at init), d the DP group. Every DP rank decodes the same
 * gathered buffer in the same order, so the DP replicas stay bitwise
 * equal. TP replicas do not by themselves: a tensor every TP rank holds
 * whole (norms, the row-parallel layers' biases, GPT-2's position table)
 * has the same gradient on each before the exchange, but each TP rank's
 * DP group compresses it among different neighbours (the top k of a
 * different arena, a different chunk scale), so after the unpack those
 * gradients are averaged over the TP group (one all-reduce of them and a
 * scale by 1/t, in the unpack's op: the schedule has no op for it, as
 * for sequence parallelism's sum of the norms' gradients, runner_dp.c).
 * The error-feedback residuals (the worker's n floats, the server's chunk)
 * live from init, counted as optimizer state (the schedule's ALLOC of
 * oc_gc_mem_bytes); the wire buffers are COMM buffers from the pack to the
 * unpack.
 *
 * What it is not: the kernels (the backend's gc table, gc.h; the cpu one
 * is cpu/gc_cpu.c), the collectives (the backend's dp_allgather and
 * dp_alltoall), the uncompressed reduction (runner_dp.c). Not run: local
 * SGD (sync<K>) and PowerSGD (main.c refuses them); the residuals are not
 * in checkpoints (main.c refuses --save and --load with gc).
 */
#include "runner_priv.h"

#include <math.h>
#include <stdlib.h>

#include "compress.h"

struct oc_runner_gc {
    int kind;             /* OC_GC_TOPK, OC_GC_Q8, OC_GC_Q1 */
    int bits;             /* q: 1 or 8 */
    int64_t n;            /* floats of the arena: the exchange's elements */
    int64_t k;            /* top-k: pairs kept per rank */
    int64_t chunk, words; /* q: elements per chunk, 4-byte words per block */
    int64_t len;          /* q: valid elements of this rank's chunk */
    int64_t wire, all;    /* floats of the packed and the gathered buffer */
    double bytes;         /* the schedule's collective bytes */
    float *resid;         /* (n) the worker's error feedback */
    float *server;        /* (chunk) q: the server's, of this rank's chunk */
    float *packed;        /* (wire) from the pack to the exchange */
    float *gathered;      /* (all) from the exchange to the unpack */
    int64_t *rep, nrep;   /* t > 1: the tensors held whole by every TP
                             rank (indices into p.t), nrep of them */
    int64_t rep_floats;   /* their floats */
    int next;             /* the op expected: 0 pack, 1 exchange, 2 unpack */
};

static int gc_sizes(struct oc_runner *r, struct oc_runner_gc *g, struct oc_status *st)
{
    const struct oc_layout *l = r->l;
    struct oc_gc_plan plan;
    oc_gc_plan(r->model, l, r->me.pp, &plan);
    if (plan.elements != (double)r->p.n || plan.n != 1)
        return oc_fail(st, "the schedule's compressed exchange covers %g elements in %d "
                           "collective(s), the rank's gradients are %lld floats",
                       plan.elements, plan.n, (long long)r->p.n);
    g->kind = l->gc;
    g->n = r->p.n;
    g->bytes = plan.step[0].bytes;
    const int64_t d = r->dp;
    double wire_bytes;
    if (g->kind == OC_GC_TOPK) {
        g->k = oc_gc_topk_k(g->n, l->gc_density);
        g->wire = 2 * g->k; /* a pair is two floats' bytes */
        g->all = d * g->wire;
        wire_bytes = (double)d * (double)g->k * OC_GC_PAIR_BYTES;
    } else {
        g->bits = g->kind == OC_GC_Q1 ? 1 : 8;
        g->chunk = oc_gc_q_chunk(g->n, d);
        g->words = oc_gc_q_words(g->chunk, g->bits);
        g->len = oc_gc_q_len(g->n, g->chunk, r->me.dp);
        g->wire = g->all = d * g->words;
        wire_bytes = 4.0 * (double)g->all;
    }
    /* top-k exactly; q less than 4 bytes a chunk above (its codes padded
     * to whole 32-bit words) */
    if (wire_bytes < g->bytes || wire_bytes - g->bytes >= 4.0 * (double)d)
        return oc_fail(st, "the schedule's compressed collective moves %g bytes, the "
                           "runner's %g", g->bytes, wire_bytes);
    return 0;
}

/* The tensors every TP rank holds whole (t > 1). */
static void tp_replicated(struct oc_runner *r, struct oc_runner_gc *g)
{
    if (r->t < 2)
        return;
    g->rep = oc_xmalloc((size_t)r->p.nt * sizeof *g->rep);
    for (int64_t i = 0; i < r->p.nt; i++) {
        const struct oc_param_tensor *t = &r->p.t[i];
        if (t->rows == t->grows && t->cols == t->gcols) {
            g->rep[g->nrep++] = i;
            g->rep_floats += t->rows * t->cols;
        }
    }
}

int oc_rn_gc_init(struct oc_runner *r, struct oc_status *st)
{
    const struct oc_layout *l = r->l;
    if (!oc_gc_on(l) || r->dp < 2)
        return 0; /* d = 1: no exchange (oc_gc_plan), the plain step */
    if (l->sync_every > 1 || (l->gc != OC_GC_TOPK && l->gc != OC_GC_Q1 && l->gc != OC_GC_Q8))
        return oc_fail(st, "the runner runs gc=topk<D>, gc=q8 and gc=q1, not this layout's "
                           "exchange");
    if (!r->b->gc || !r->b->ops->dp_alltoall)
        return oc_fail(st, "this backend does not run gradient compression");
    struct oc_runner_gc *g = oc_xcalloc(1, sizeof *g);
    r->gc = g;
    if (gc_sizes(r, g, st) != 0)
        return -1;
    tp_replicated(r, g);
    const struct oc_backend_ops *B = r->b->ops;
    const int64_t fb = (int64_t)sizeof(float);
    g->resid = B->alloc(r->b, g->n * fb);
    B->zero(r->b, g->resid, g->n * fb);
    oc_rn_account(r, OC_BUF_OPTIMIZER, (double)(g->n * fb));
    if (g->kind != OC_GC_TOPK) {
        g->server = B->alloc(r->b, g->chunk * fb);
        B->zero(r->b, g->server, g->chunk * fb);
        oc_rn_account(r, OC_BUF_OPTIMIZER, (double)(g->chunk * fb));
    }
    return 0;
}

void oc_rn_gc_free(struct oc_runner *r)
{
    struct oc_runner_gc *g = r->gc;
    if (!g)
        return;
    r->b->ops->free(r->b, g->gathered);
    r->b->ops->free(r->b, g->packed);
    r->b->ops->free(r->b, g->server);
    r->b->ops->free(r->b, g->resid);
    free(g->rep);
    free(g);
    r->gc = NULL;
}

/* The worker's side before the collective. */
static int pack(struct oc_runner *r, struct oc_status *st)
{
    struct oc_runner_gc *g = r->gc;
    const struct oc_gc_kernels *K = r->b->gc;
    /* sequence parallelism's partial norm gradients summed over TP first,
     * as before an uncompressed reduction */
    if (oc_rn_sp_sum_all(r, st) != 0)
        return -1;
    g->packed = oc_rn_mem_get(r, OC_BUF_COMM, g->wire);
    if (g->kind == OC_GC_TOPK) {
        float *scratch = oc_rn_mem_get(r, OC_BUF_COMM, g->n);
        K->topk_pack(r->p.g, g->resid, g->n, g->k, (struct oc_gc_pair *)g->packed, scratch);
        oc_rn_mem_put(r, OC_BUF_COMM, &scratch, g->n);
    } else {
        K->q_pack(r->p.g, g->resid, g->n, r->dp, g->chunk, g->bits, (uint32_t *)g->packed);
    }
    return 0;
}

/* The mean over the TP group of the gradients of the tensors every TP
 * rank holds whole (see the header comment). */
static int tp_mean(struct oc_runner *r, struct oc_status *st)
{
    struct oc_runner_gc *g = r->gc;
    if (g->nrep == 0)
        return 0;
    const struct oc_backend_ops *B = r->b->ops;
    float *buf = oc_rn_mem_get(r, OC_BUF_COMM, g->rep_floats);
    const int64_t fb = (int64_t)sizeof *buf;
    int rc = 0;
    for (int pass = 0; pass < 2 && rc == 0; pass++) {
        int64_t pos = 0;
        for (int64_t i = 0; i < g->nrep; i++) {
            const struct oc_param_tensor *t = &r->p.t[g->rep[i]];
            const int64_t n = t->rows * t->cols;
            if (pass == 0)
                B->copy(r->b, buf + pos, r->p.g + t->offset, n * fb);
            else
                B->copy(r->b, r->p.g + t->offset, buf + pos, n * fb);
            pos += n;
        }
        if (pass == 0) {
            rc = B->tp_allreduce(r->b, buf, g->rep_floats, OC_GPT_SUM, st);
            r->b->gc->scale(buf, g->rep_floats, 1.0f / (float)r->t);
        }
    }
    oc_rn_mem_put(r, OC_BUF_COMM, &buf, g->rep_floats);
    return rc;
}

/* The gradient from the gathered buffer, after the collective. */
static int unpack(struct oc_runner *r, struct oc_status *st)
{
    struct oc_runner_gc *g = r->gc;
    const struct oc_gc_kernels *K = r->b->gc;
    if (g->kind == OC_GC_TOPK)
        K->topk_unpack((const struct oc_gc_pair *)g->gathered, r->dp * g->k, r->p.g, g->n);
    else
        K->q_unpack((const uint32_t *)g->gathered, g->n, r->dp, g->chunk, g->bits, r->p.g);
    oc_rn_mem_put(r, OC_BUF_COMM, &g->gathered, g->all);
    return tp_mean(r, st);
}

int oc_rn_gc_compute(struct oc_runner *r, const struct oc_op *op, struct oc_status *st)
{
    struct oc_runner_gc *g = r->gc;
    (void)op;
    if (g->next == 0) {
        g->next = 1;
        return pack(r, st);
    }
    if (g->next == 2) {
        g->next = 0;
        return unpack(r, st);
    }
    return oc_fail(st, "a compression kernel where the schedule's compressed collective "
                       "was due");
}

/* 1-bit Adam's compressed all-reduce: all-to-all, the server's chunk
 * (inner compute of op i), all-gather. */
static int q_allreduce(struct oc_runner *r, int64_t i, struct oc_status *st)
{
    struct oc_runner_gc *g = r->gc;
    const struct oc_backend_ops *B = r->b->ops;
    float *recv = oc_rn_mem_get(r, OC_BUF_COMM, g->all);
    int rc = B->dp_alltoall(r->b, g->packed, recv, g->words, st);
    oc_rn_mem_put(r, OC_BUF_COMM, &g->packed, g->wire);
    float *mine = oc_rn_mem_get(r, OC_BUF_COMM, g->words);
    if (rc == 0) {
        float *acc = oc_rn_mem_get(r, OC_BUF_COMM, g->chunk);
        B->mark(r->b, OC_MARK_INNER_START, i, OC_STREAM_COMPUTE);
        r->b->gc->q_server((const uint32_t *)recv, r->dp, g->len, g->chunk, g->bits,
                           g->server, acc, (uint32_t *)mine);
        B->mark(r->b, OC_MARK_INNER_END, i, OC_STREAM_COMPUTE);
        oc_rn_mem_put(r, OC_BUF_COMM, &acc, g->chunk);
    }
    oc_rn_mem_put(r, OC_BUF_COMM, &recv, g->all);
    if (rc == 0) {
        g->gathered = oc_rn_mem_get(r, OC_BUF_COMM, g->all);
        rc = B->dp_allgather(r->b, mine, g->gathered, g->words, st);
    }
    oc_rn_mem_put(r, OC_BUF_COMM, &mine, g->words);
    return rc;
}

int oc_rn_gc_exchange(struct oc_runner *r, int64_t i, const struct oc_op *op,
                      struct oc_status *st)
{
    struct oc_runner_gc *g = r->gc;
    const enum oc_coll_kind want =
        g->kind == OC_GC_TOPK ? OC_COLL_ALLGATHER : OC_COLL_ALLREDUCE;
    if (g->next != 1)
        return oc_fail(st, "a compressed DP %s before its compression kernel",
                       oc_coll_name(op->coll));
    if (op->coll != want || op->bytes != g->bytes || op->async)
        return oc_fail(st, "a DP gradient %s of %g bytes, the compressed exchange is a "
                           "blocking %s of %g", oc_coll_name(op->coll), op->bytes,
                       oc_coll_name(want), g->bytes);
    g->next = 2;
    if (g->kind != OC_GC_TOPK)
        return q_allreduce(r, i, st);
    g->gathered = oc_rn_mem_get(r, OC_BUF_COMM, g->all);
    const int rc = r->b->ops->dp_allgather(r->b, g->packed, g->gathered, g->wire, st);
    oc_rn_mem_put(r, OC_BUF_COMM, &g->packed, g->wire);
    return rc;
}
