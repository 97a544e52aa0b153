/* backend_cuda.c: the cuda backend of the executor (backend_cuda.h,
 * backend.h's table): one GPU per rank, gpt_cuda.h's parts on a compute
 * stream, NCCL (comm_nccl.h) on three streams, CUDA events around every op.
 *
 * What this file is: the table's functions, which only enqueue work
 * (nothing here waits for the GPU except upload / download, wait() and
 * step_end), the three streams and how they wait for each other, the
 * requests of sends and async DP collectives, the per-op events and their
 * reading at the end of a step, and the device-memory high-water mark.
 * What it is not: model math (gpt_cuda.c), communicator set-up and
 * deadlines (comm_nccl.c), or the walk over the op list (runner.c).
 *
 * Streams (all cudaStreamNonBlocking, so that none of them serialises with
 * the legacy default stream):
 *   compute  the parts, AdamW, memory ops (stream-ordered allocations),
 *            TP and EMBED all-reduces.
 *   pp       grouped ncclSend / ncclRecv over the world communicator.
 *   dp       DP all-reduce / reduce-scatter / all-gather.
 * A pp or dp op first makes its stream wait for the compute stream's
 * position (an event recorded on compute, cudaStreamWaitEvent): at the
 * op's OC_MARK_START, and again in the call itself, so that a runner that
 * forgot the mark still cannot read a buffer before the compute stream
 * wrote it. The compute stream waits for pp at p2p_end when the group
 * received something, for dp after the all-gather, and for a request's
 * event at wait().
 *
 * Pipeline messages: NCCL matches the sends and receives between a pair of
 * ranks by their order, not by tag (NCCL user guide, "Point-to-point
 * communication"). The tags are therefore not sent; the schedule must post,
 * for every ordered pair (A, B), A's sends to B in the order B posts its
 * receives from A. oc_backend_cuda_check_p2p_order verifies that over a
 * whole schedule; the per-peer counters here number the messages.
 *
 * Timing: one start and one end event per op (timing enabled), and start /
 * end pairs per inner compute segment, made once and reused every step;
 * cudaEventElapsedTime from an event recorded on the compute stream at
 * step_begin. step_end waits for the ops' end events in list order (the
 * first one past the deadline is the stuck op) and then for one event per
 * stream.
 */
#include "backend_cuda.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "comm_nccl.h"
#include "gpt_cuda.h"

/* ------------------------------------------------------------------ */
/* State                                                                */

/* A send's or an async collective's completion. */
struct oc_cuda_req {
    cudaEvent_t ev;          /* recorded after the NCCL call (no timing) */
    int recorded;            /* 0 while its p2p group is open */
    struct oc_cuda_req *next; /* free list */
    struct oc_cuda_req *all;  /* every request made (freed at the end, also
                                 those a failed step left outstanding) */
};

/* The events of one op of the list. */
struct oc_cuda_op_ev {
    cudaEvent_t start, end;
    int has_start, has_end;
    int end_issued;          /* end came from OC_MARK_ISSUED: END ignored */
    int64_t end_of;          /* the op whose end event is this one's (a p2p
                                group shares one), else -1 */
    int64_t ninner;          /* inner pairs recorded this step */
    int inner_open;          /* an INNER_START waits for its INNER_END */
    int64_t cap_inner;       /* pairs created */
    cudaEvent_t *inner;      /* (cap_inner, 2): start, end */
};

struct oc_cuda_be {
    struct oc_ctl *ctl;
    int device;
    enum oc_cuda_dtype dtype;
    struct oc_gpt_dims dims;  /* this rank's parts, for gpt_cuda's scratch */

    cudaStream_t compute, pp, dp;
    cudaEvent_t fork;         /* compute -> pp / dp (no timing) */
    cudaEvent_t join;         /* pp / dp -> compute (no timing) */
    cudaEvent_t tail[3];      /* step_end: one per stream (no timing) */
    struct oc_cuda_blas blas;
    int blas_made;
    struct oc_nccl nccl;
    int nccl_made;
    cudaMemPool_t pool;       /* the device's default pool */

    /* params_adopt */
    struct oc_params *p;      /* the adopted arena, NULL before */
    struct oc_gpu gpu;
    int gpu_made;
    double malloc_bytes;      /* live cudaMalloc bytes (arena, gpu, blas) */
    double malloc_high_bytes;

    /* p2p */
    int in_group, group_recv;
    int64_t *group_ops;       /* ops whose END waits for p2p_end */
    int64_t ngroup_ops, cap_group_ops;
    struct oc_cuda_req **group_reqs; /* sends of the open group */
    int64_t ngroup_reqs, cap_group_reqs;
    int64_t *sent, *received; /* (ctl->size) messages to / from each rank */

    struct oc_cuda_req *free_reqs;
    struct oc_cuda_req *all_reqs;

    /* timing */
    int in_step;
    int64_t nops, cap_ops;
    struct oc_cuda_op_ev *ev; /* (cap_ops) */
    cudaEvent_t step_start;
};

static struct oc_cuda_be *impl_of(struct oc_backend *b)
{
    OC_ASSERT(b && b->impl);
    return b->impl;
}

/* An NCCL call that cannot time out and whose failure is the library's
 * (ncclGroupStart): backend.h's environment failure, printed and fatal as
 * check.h does for CUDA. */
static void nccl_fatal(ncclResult_t rc, const char *what, int line)
{
    if (rc == ncclSuccess)
        return;
    fprintf(stderr, "[NCCL ERROR] at file %s:%d: %s: %s\n", __FILE__, line, what,
            ncclGetErrorString(rc));
    exit(EXIT_FAILURE);
}

/* cudaEventQuery: 1 complete, 0 not yet (an event never recorded reads as
 * complete: CUDA runtime API, cudaEventRecord). cudaErrorNotReady may be
 * left as the thread's last error, which the next launcher's
 * cudaCheck(cudaGetLastError()) would take for a failure: clear it, as
 * PyTorch's CUDAStream::query does. */
static int event_done(cudaEvent_t ev)
{
    cudaError_t e = cudaEventQuery(ev);
    if (e == cudaSuccess)
        return 1;
    if (e == cudaErrorNotReady) {
        (void)cudaGetLastError();
        return 0;
    }
    cudaCheck(e);
    return 0;
}

static cudaStream_t stream_of(struct oc_cuda_be *x, enum oc_stream s)
{
    switch (s) {
    case OC_STREAM_COMPUTE: return x->compute;
    case OC_STREAM_PP: return x->pp;
    case OC_STREAM_DP: return x->dp;
    }
    OC_ASSERT(0);
    return x->compute;
}

/* Stream s continues after the compute stream's present position. */
static void follow_compute(struct oc_cuda_be *x, cudaStream_t s)
{
    cudaCheck(cudaEventRecord(x->fork, x->compute));
    cudaCheck(cudaStreamWaitEvent(s, x->fork, 0));
}

/* The compute stream continues after stream s's present position. */
static void compute_follow(struct oc_cuda_be *x, cudaStream_t s)
{
    cudaCheck(cudaEventRecord(x->join, s));
    cudaCheck(cudaStreamWaitEvent(x->compute, x->join, 0));
}

static void count_malloc(struct oc_cuda_be *x, double bytes)
{
    x->malloc_bytes += bytes;
    if (x->malloc_bytes > x->malloc_high_bytes)
        x->malloc_high_bytes = x->malloc_bytes;
}

/* The bytes gpt_cuda allocated with cudaMalloc (its bf16 weights and
 * scratch, gpt_cuda.h's struct oc_gpu). */
static double gpu_bytes(const struct oc_cuda_be *x)
{
    double b = (double)x->gpu.scratch_floats * sizeof(float);
    if (x->gpu.wb)
        b += (double)x->p->n * sizeof(oc_bf16);
    return b;
}

/* A write to the fp32 weights outside AdamW and the all-gather (upload,
 * copy, zero into p->w): the bf16 copy must be recast. */
static void note_write(struct oc_cuda_be *x, const void *dst, int64_t bytes)
{
    if (!x->gpu_made)
        return;
    const uintptr_t w = (uintptr_t)x->p->w, d = (uintptr_t)dst;
    const uintptr_t w_end = w + (uintptr_t)x->p->n * sizeof(float);
    if (d < w_end && d + (uintptr_t)bytes > w)
        oc_gpu_weights_changed(&x->gpu);
}

/* ------------------------------------------------------------------ */
/* Requests                                                             */

static struct oc_cuda_req *req_new(struct oc_cuda_be *x)
{
    struct oc_cuda_req *r = x->free_reqs;
    if (r) {
        x->free_reqs = r->next;
    } else {
        r = oc_xmalloc(sizeof *r);
        cudaCheck(cudaEventCreateWithFlags(&r->ev, cudaEventDisableTiming));
        r->all = x->all_reqs;
        x->all_reqs = r;
    }
    r->recorded = 0;
    r->next = NULL;
    return r;
}

static void req_release(struct oc_cuda_be *x, struct oc_cuda_req *r)
{
    r->next = x->free_reqs;
    x->free_reqs = r;
}

static void req_record(struct oc_cuda_req *r, cudaStream_t s)
{
    cudaCheck(cudaEventRecord(r->ev, s));
    r->recorded = 1;
}

/* ------------------------------------------------------------------ */
/* Memory                                                               */

static void *be_alloc(struct oc_backend *b, int64_t bytes)
{
    struct oc_cuda_be *x = impl_of(b);
    OC_ASSERT(bytes >= 0);
    void *p = NULL;
    /* never NULL (backend.h): a zero-byte request still gets an address */
    cudaCheck(cudaMallocAsync(&p, (size_t)(bytes > 0 ? bytes : 1), x->compute));
    OC_ASSERT(p);
    return p;
}

static void be_free(struct oc_backend *b, void *p)
{
    struct oc_cuda_be *x = impl_of(b);
    if (p)
        cudaCheck(cudaFreeAsync(p, x->compute));
}

static void be_zero(struct oc_backend *b, void *p, int64_t bytes)
{
    struct oc_cuda_be *x = impl_of(b);
    OC_ASSERT(bytes >= 0);
    if (bytes == 0)
        return;
    note_write(x, p, bytes);
    cudaCheck(cudaMemsetAsync(p, 0, (size_t)bytes, x->compute));
}

static void be_copy(struct oc_backend *b, void *dst, const void *src,
                    int64_t bytes)
{
    struct oc_cuda_be *x = impl_of(b);
    OC_ASSERT(bytes >= 0);
    if (bytes == 0)
        return;
    note_write(x, dst, bytes);
    cudaCheck(cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDeviceToDevice,
                              x->compute));
}

static void be_upload(struct oc_backend *b, void *dst, const void *host,
                      int64_t bytes)
{
    struct oc_cuda_be *x = impl_of(b);
    OC_ASSERT(bytes >= 0);
    if (bytes == 0)
        return;
    note_write(x, dst, bytes);
    cudaCheck(cudaMemcpyAsync(dst, host, (size_t)bytes, cudaMemcpyHostToDevice,
                              x->compute));
    cudaCheck(cudaStreamSynchronize(x->compute));
}

static void be_download(struct oc_backend *b, void *host, const void *src,
                        int64_t bytes)
{
    struct oc_cuda_be *x = impl_of(b);
    OC_ASSERT(bytes >= 0);
    if (bytes == 0)
        return;
    cudaCheck(cudaMemcpyAsync(host, src, (size_t)bytes, cudaMemcpyDeviceToHost,
                              x->compute));
    cudaCheck(cudaStreamSynchronize(x->compute));
}

/* params.c allocates w, g, m and v as four host blocks (oc_xmalloc /
 * oc_xcalloc) and oc_params_free frees each with free(), which accepts
 * NULL: after params_release it frees nothing of ours. */
static int be_params_adopt(struct oc_backend *b, struct oc_params *p,
                           struct oc_status *st)
{
    struct oc_cuda_be *x = impl_of(b);
    OC_ASSERT(!x->p && p && p->w && p->g && p->m && p->v && p->n > 0);
    cudaCheck(cudaSetDevice(x->device));
    const size_t bytes = (size_t)p->n * sizeof(float);
    float *dev[4] = {NULL, NULL, NULL, NULL}; /* w, g, m, v */
    for (int k = 0; k < 4; k++) {
        cudaError_t e = cudaMalloc((void **)&dev[k], bytes);
        if (e == cudaErrorMemoryAllocation) {
            /* not sticky (as gpt_cuda.c's device_alloc): clear, report */
            (void)cudaGetLastError();
            for (int j = 0; j < k; j++)
                cudaCheck(cudaFree(dev[j]));
            return oc_fail(st, "cuda: out of device memory for the parameter "
                               "arena (4 x %.1f MiB)",
                           (double)bytes / (1024.0 * 1024.0));
        }
        cudaCheck(e);
    }
    float *dw = dev[0], *dg = dev[1], *dm = dev[2], *dv = dev[3];
    cudaCheck(cudaMemcpyAsync(dw, p->w, bytes, cudaMemcpyHostToDevice, x->compute));
    cudaCheck(cudaMemsetAsync(dg, 0, bytes, x->compute));
    cudaCheck(cudaMemsetAsync(dm, 0, bytes, x->compute));
    cudaCheck(cudaMemsetAsync(dv, 0, bytes, x->compute));
    cudaCheck(cudaStreamSynchronize(x->compute));

    /* The bf16 mirror is made over the device arena; on failure p gets its
     * host arrays back, unchanged. */
    float *hw = p->w, *hg = p->g, *hm = p->m, *hv = p->v;
    p->w = dw;
    p->g = dg;
    p->m = dm;
    p->v = dv;
    x->p = p;
    if (oc_gpu_init(&x->gpu, &x->blas, x->compute, x->dtype, p, &x->dims, st) != 0) {
        p->w = hw;
        p->g = hg;
        p->m = hm;
        p->v = hv;
        x->p = NULL;
        cudaCheck(cudaFree(dv));
        cudaCheck(cudaFree(dm));
        cudaCheck(cudaFree(dg));
        cudaCheck(cudaFree(dw));
        return -1;
    }
    x->gpu_made = 1;
    free(hv);
    free(hm);
    free(hg);
    free(hw);
    count_malloc(x, 4.0 * (double)bytes + gpu_bytes(x));
    return 0;
}

static void be_params_release(struct oc_backend *b, struct oc_params *p)
{
    struct oc_cuda_be *x = impl_of(b);
    if (!x->p)
        return;
    OC_ASSERT(p == x->p);
    /* the arena may still be in use by enqueued work */
    cudaCheck(cudaStreamSynchronize(x->compute));
    x->malloc_bytes -= 4.0 * (double)p->n * sizeof(float) + gpu_bytes(x);
    oc_gpu_free(&x->gpu);
    x->gpu_made = 0;
    cudaCheck(cudaFree(p->v));
    cudaCheck(cudaFree(p->m));
    cudaCheck(cudaFree(p->g));
    cudaCheck(cudaFree(p->w));
    p->w = p->g = p->m = p->v = NULL;
    x->p = NULL;
}

/* ------------------------------------------------------------------ */
/* Model parts: gpt_cuda.h's, on the compute stream                     */

/* The parts' arena must be the adopted one: the bf16 mirror is of it. */
static struct oc_gpu *gpu_for(struct oc_cuda_be *x, const struct oc_params *p)
{
    OC_ASSERT(x->gpu_made && p && p->w == x->p->w);
    return &x->gpu;
}

static int64_t be_work_floats(struct oc_backend *b, const struct oc_gpt_dims *d)
{
    (void)b;
    return oc_gpu_work_floats(d);
}

static int be_embed_fwd(struct oc_backend *b, struct oc_gpt_call *c,
                        const struct oc_gpt_dims *d, const struct oc_params *p,
                        const int32_t *tokens, float *out)
{
    return oc_gpu_embed_fwd(gpu_for(impl_of(b), p), c, d, p, tokens, out);
}

static int be_embed_bwd(struct oc_backend *b, struct oc_gpt_call *c,
                        const struct oc_gpt_dims *d, struct oc_params *p,
                        const int32_t *tokens, const float *dout)
{
    return oc_gpu_embed_bwd(gpu_for(impl_of(b), p), c, d, p, tokens, dout);
}

static int be_attn_fwd(struct oc_backend *b, struct oc_gpt_call *c,
                       const struct oc_gpt_dims *d, const struct oc_params *p,
                       int64_t layer, struct oc_gpt_attn_act *a, float *out)
{
    return oc_gpu_attn_fwd(gpu_for(impl_of(b), p), c, d, p, layer, a, out);
}

static void be_attn_scores(struct oc_backend *b, const struct oc_gpt_dims *d,
                           struct oc_gpt_attn_act *a)
{
    struct oc_cuda_be *x = impl_of(b);
    OC_ASSERT(x->gpu_made);
    oc_gpu_attn_scores(&x->gpu, d, a);
}

static int be_attn_bwd(struct oc_backend *b, struct oc_gpt_call *c,
                       const struct oc_gpt_dims *d, struct oc_params *p,
                       int64_t layer, const struct oc_gpt_attn_act *a,
                       const float *dout, float *din, float *work)
{
    return oc_gpu_attn_bwd(gpu_for(impl_of(b), p), c, d, p, layer, a, dout, din,
                           work);
}

static int be_mlp_fwd(struct oc_backend *b, struct oc_gpt_call *c,
                      const struct oc_gpt_dims *d, const struct oc_params *p,
                      int64_t layer, struct oc_gpt_mlp_act *a, float *out)
{
    return oc_gpu_mlp_fwd(gpu_for(impl_of(b), p), c, d, p, layer, a, out);
}

static int be_mlp_bwd(struct oc_backend *b, struct oc_gpt_call *c,
                      const struct oc_gpt_dims *d, struct oc_params *p,
                      int64_t layer, const struct oc_gpt_mlp_act *a,
                      const float *dout, float *din, float *work)
{
    return oc_gpu_mlp_bwd(gpu_for(impl_of(b), p), c, d, p, layer, a, dout, din,
                          work);
}

static int be_head_fwd(struct oc_backend *b, struct oc_gpt_call *c,
                       const struct oc_gpt_dims *d, const struct oc_params *p,
                       struct oc_gpt_head_act *a, const int32_t *targets,
                       float *losses)
{
    return oc_gpu_head_fwd(gpu_for(impl_of(b), p), c, d, p, a, targets, losses);
}

static int be_head_bwd(struct oc_backend *b, struct oc_gpt_call *c,
                       const struct oc_gpt_dims *d, struct oc_params *p,
                       const struct oc_gpt_head_act *a, const int32_t *targets,
                       float grad_scale, float *din, float *work)
{
    return oc_gpu_head_bwd(gpu_for(impl_of(b), p), c, d, p, a, targets,
                           grad_scale, din, work);
}

static void be_adamw(struct oc_backend *b, struct oc_params *p,
                     const struct oc_adamw *h, int64_t step, int64_t begin,
                     int64_t end)
{
    struct oc_gpu *g = gpu_for(impl_of(b), p);
    oc_gpu_adamw(g, p, h, step, begin, end);
    oc_gpu_weights_changed(g);
}

/* ------------------------------------------------------------------ */
/* Collectives                                                          */

static int be_tp_allreduce(struct oc_backend *b, float *buf, int64_t n,
                           enum oc_gpt_reduce op, struct oc_status *st)
{
    struct oc_cuda_be *x = impl_of(b);
    ncclComm_t c = oc_nccl_of(&x->nccl, OC_GROUP_TP);
    if (!c)
        return oc_fail(st, "a TP all-reduce on a rank without a TP group");
    const ncclRedOp_t rop = op == OC_GPT_MAX ? ncclMax : ncclSum;
    return oc_nccl_check(&x->nccl,
                         ncclAllReduce(buf, buf, oc_nccl_count(n), ncclFloat, rop,
                                       c, x->compute),
                         "ncclAllReduce (TP)", st);
}

static int be_embed_allreduce(struct oc_backend *b, float *buf, int64_t n,
                              struct oc_status *st)
{
    struct oc_cuda_be *x = impl_of(b);
    ncclComm_t c = oc_nccl_of(&x->nccl, OC_GROUP_EMBED);
    if (!c)
        return oc_fail(st, "an EMBED all-reduce on a rank without an EMBED group");
    return oc_nccl_check(&x->nccl,
                         ncclAllReduce(buf, buf, oc_nccl_count(n), ncclFloat,
                                       ncclSum, c, x->compute),
                         "ncclAllReduce (EMBED)", st);
}

static void be_p2p_begin(struct oc_backend *b)
{
    struct oc_cuda_be *x = impl_of(b);
    OC_ASSERT(!x->in_group);
    nccl_fatal(ncclGroupStart(), "ncclGroupStart", __LINE__);
    x->in_group = 1;
    x->group_recv = 0;
    x->ngroup_ops = 0;
    x->ngroup_reqs = 0;
}

static int be_p2p_end(struct oc_backend *b, struct oc_status *st)
{
    struct oc_cuda_be *x = impl_of(b);
    OC_ASSERT(x->in_group);
    x->in_group = 0;
    if (oc_nccl_check(&x->nccl, ncclGroupEnd(), "ncclGroupEnd", st) != 0)
        return -1;
    /* One event on the pp stream, after every message of the group: the
     * end of each of its ops (the first op's end event holds it). */
    for (int64_t i = 0; i < x->ngroup_ops; i++) {
        struct oc_cuda_op_ev *e = &x->ev[x->group_ops[i]];
        if (i == 0)
            cudaCheck(cudaEventRecord(e->end, x->pp));
        e->end_of = x->group_ops[0];
        e->has_end = 1;
    }
    for (int64_t i = 0; i < x->ngroup_reqs; i++)
        req_record(x->group_reqs[i], x->pp);
    if (x->group_recv)
        compute_follow(x, x->pp);
    x->ngroup_ops = 0;
    x->ngroup_reqs = 0;
    return 0;
}

static void check_peer(const struct oc_cuda_be *x, int64_t peer, int64_t n)
{
    OC_ASSERT(peer >= 0 && peer < x->ctl->size && peer != x->ctl->rank);
    OC_ASSERT(n >= 0);
}

static int be_send(struct oc_backend *b, const float *buf, int64_t n,
                   int64_t peer, int64_t tag, void **req, struct oc_status *st)
{
    struct oc_cuda_be *x = impl_of(b);
    check_peer(x, peer, n);
    (void)tag; /* matched by order per pair (the file comment) */
    follow_compute(x, x->pp);
    struct oc_cuda_req *r = req_new(x);
    int rc = oc_nccl_check(&x->nccl,
                           ncclSend(buf, oc_nccl_count(n), ncclFloat, (int)peer,
                                    x->nccl.world, x->pp),
                           "ncclSend", st);
    if (rc != 0) {
        req_release(x, r);
        return -1;
    }
    x->sent[peer]++;
    if (x->in_group) {
        if (x->ngroup_reqs == x->cap_group_reqs) {
            x->cap_group_reqs = x->cap_group_reqs ? 2 * x->cap_group_reqs : 8;
            x->group_reqs = oc_xrealloc(x->group_reqs, (size_t)x->cap_group_reqs *
                                                           sizeof *x->group_reqs);
        }
        x->group_reqs[x->ngroup_reqs++] = r;
    } else {
        req_record(r, x->pp);
    }
    *req = r;
    return 0;
}

static int be_recv(struct oc_backend *b, float *buf, int64_t n, int64_t peer,
                   int64_t tag, struct oc_status *st)
{
    struct oc_cuda_be *x = impl_of(b);
    check_peer(x, peer, n);
    (void)tag; /* matched by order per pair (the file comment) */
    follow_compute(x, x->pp);
    if (oc_nccl_check(&x->nccl,
                      ncclRecv(buf, oc_nccl_count(n), ncclFloat, (int)peer,
                               x->nccl.world, x->pp),
                      "ncclRecv", st) != 0)
        return -1;
    x->received[peer]++;
    if (x->in_group)
        x->group_recv = 1;
    else
        compute_follow(x, x->pp);
    return 0;
}

static ncclComm_t dp_comm(struct oc_cuda_be *x)
{
    return oc_nccl_of(&x->nccl, OC_GROUP_DP);
}

static int be_dp_allreduce_start(struct oc_backend *b, float *buf, int64_t n,
                                 void **req, struct oc_status *st)
{
    struct oc_cuda_be *x = impl_of(b);
    ncclComm_t c = dp_comm(x);
    if (!c)
        return oc_fail(st, "a DP all-reduce on a rank without a DP group");
    follow_compute(x, x->dp);
    if (oc_nccl_check(&x->nccl,
                      ncclAllReduce(buf, buf, oc_nccl_count(n), ncclFloat, ncclSum,
                                    c, x->dp),
                      "ncclAllReduce (DP)", st) != 0)
        return -1;
    struct oc_cuda_req *r = req_new(x);
    req_record(r, x->dp);
    *req = r;
    return 0;
}

static int be_dp_reduce_scatter_start(struct oc_backend *b, const float *send,
                                      float *recv, int64_t count, void **req,
                                      struct oc_status *st)
{
    struct oc_cuda_be *x = impl_of(b);
    ncclComm_t c = dp_comm(x);
    if (!c)
        return oc_fail(st, "a DP reduce-scatter on a rank without a DP group");
    follow_compute(x, x->dp);
    /* equal blocks: recvcount = count, send holds d*count (NCCL API) */
    if (oc_nccl_check(&x->nccl,
                      ncclReduceScatter(send, recv, oc_nccl_count(count), ncclFloat,
                                        ncclSum, c, x->dp),
                      "ncclReduceScatter (DP)", st) != 0)
        return -1;
    struct oc_cuda_req *r = req_new(x);
    req_record(r, x->dp);
    *req = r;
    return 0;
}

static int be_dp_allgather(struct oc_backend *b, const float *mine, float *all,
                           int64_t count, struct oc_status *st)
{
    struct oc_cuda_be *x = impl_of(b);
    ncclComm_t c = dp_comm(x);
    if (!c)
        return oc_fail(st, "a DP all-gather on a rank without a DP group");
    follow_compute(x, x->dp);
    if (oc_nccl_check(&x->nccl,
                      ncclAllGather(mine, all, oc_nccl_count(count), ncclFloat, c,
                                    x->dp),
                      "ncclAllGather (DP)", st) != 0)
        return -1;
    /* complete on return in the compute stream's order */
    compute_follow(x, x->dp);
    if (x->gpu_made)
        oc_gpu_weights_changed(&x->gpu);
    return 0;
}

static int be_test(struct oc_backend *b, void *req)
{
    struct oc_cuda_be *x = impl_of(b);
    struct oc_cuda_req *r = req;
    OC_ASSERT(r);
    /* a send of an open group: its event is recorded at p2p_end (and an
     * event never recorded would read as complete) */
    if (!r->recorded || !event_done(r->ev))
        return 0;
    req_release(x, r);
    return 1;
}

/* Blocks the host until the request completed (deadline: comm_nccl.h),
 * and makes the compute stream continue after it. On failure the request
 * stays allocated (it never completes; the communicators are aborted). */
static int be_wait(struct oc_backend *b, void *req, struct oc_status *st)
{
    struct oc_cuda_be *x = impl_of(b);
    struct oc_cuda_req *r = req;
    OC_ASSERT(r);
    if (!r->recorded)
        return oc_fail(st, "waiting for a send of a p2p group that is still open");
    if (!event_done(r->ev) && oc_nccl_wait_event(&x->nccl, r->ev, st) != 0)
        return -1;
    cudaCheck(cudaStreamWaitEvent(x->compute, r->ev, 0));
    req_release(x, r);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Timing                                                               */

static void be_step_begin(struct oc_backend *b, int64_t nops)
{
    struct oc_cuda_be *x = impl_of(b);
    OC_ASSERT(!x->in_step && !x->in_group && nops >= 0);
    cudaCheck(cudaSetDevice(x->device));
    if (nops > x->cap_ops) {
        x->ev = oc_xrealloc(x->ev, (size_t)nops * sizeof *x->ev);
        for (int64_t i = x->cap_ops; i < nops; i++) {
            struct oc_cuda_op_ev *e = &x->ev[i];
            memset(e, 0, sizeof *e);
            cudaCheck(cudaEventCreateWithFlags(&e->start, cudaEventDefault));
            cudaCheck(cudaEventCreateWithFlags(&e->end, cudaEventDefault));
        }
        x->cap_ops = nops;
    }
    for (int64_t i = 0; i < nops; i++) {
        struct oc_cuda_op_ev *e = &x->ev[i];
        e->has_start = e->has_end = e->end_issued = 0;
        e->end_of = -1;
        e->ninner = 0;
        e->inner_open = 0;
    }
    x->nops = nops;
    x->in_step = 1;
    cudaCheck(cudaEventRecord(x->step_start, x->compute));
}

static void inner_grow(struct oc_cuda_op_ev *e)
{
    if (e->ninner < e->cap_inner)
        return;
    int64_t cap = e->cap_inner ? 2 * e->cap_inner : 4;
    e->inner = oc_xrealloc(e->inner, (size_t)(2 * cap) * sizeof *e->inner);
    for (int64_t k = 2 * e->cap_inner; k < 2 * cap; k++)
        cudaCheck(cudaEventCreateWithFlags(&e->inner[k], cudaEventDefault));
    e->cap_inner = cap;
}

static void be_mark(struct oc_backend *b, enum oc_mark m, int64_t op,
                    enum oc_stream s)
{
    struct oc_cuda_be *x = impl_of(b);
    OC_ASSERT(x->in_step && op >= 0 && op < x->nops);
    struct oc_cuda_op_ev *e = &x->ev[op];
    cudaStream_t cs = stream_of(x, s);
    switch (m) {
    case OC_MARK_START:
        if (e->has_start)
            return; /* the op started at its first mark */
        if (s != OC_STREAM_COMPUTE)
            follow_compute(x, cs);
        cudaCheck(cudaEventRecord(e->start, cs));
        e->has_start = 1;
        return;
    case OC_MARK_END:
        if (e->end_issued)
            return; /* an async collective ends when its work does */
        if (s == OC_STREAM_PP && x->in_group) {
            /* recorded at p2p_end, after the group's messages */
            if (x->ngroup_ops == x->cap_group_ops) {
                x->cap_group_ops = x->cap_group_ops ? 2 * x->cap_group_ops : 8;
                x->group_ops = oc_xrealloc(x->group_ops, (size_t)x->cap_group_ops *
                                                             sizeof *x->group_ops);
            }
            x->group_ops[x->ngroup_ops++] = op;
            return;
        }
        cudaCheck(cudaEventRecord(e->end, cs));
        e->has_end = 1;
        e->end_of = -1;
        return;
    case OC_MARK_INNER_START:
        OC_ASSERT(!e->inner_open);
        inner_grow(e);
        cudaCheck(cudaEventRecord(e->inner[2 * e->ninner], cs));
        e->inner_open = 1;
        return;
    case OC_MARK_INNER_END:
        OC_ASSERT(e->inner_open);
        cudaCheck(cudaEventRecord(e->inner[2 * e->ninner + 1], cs));
        e->inner_open = 0;
        e->ninner++;
        return;
    case OC_MARK_ISSUED:
        /* right after the collective was enqueued on s: its completion */
        cudaCheck(cudaEventRecord(e->end, cs));
        e->has_end = 1;
        e->end_issued = 1;
        e->end_of = -1;
        return;
    case OC_MARK_COMPLETED:
        return; /* the host saw it: the event above already has the time */
    }
    OC_ASSERT(0);
}

/* The event that holds op i's end. */
static cudaEvent_t end_event(const struct oc_cuda_be *x, int64_t i)
{
    const struct oc_cuda_op_ev *e = &x->ev[i];
    return e->end_of >= 0 ? x->ev[e->end_of].end : e->end;
}

static double elapsed_s(const struct oc_cuda_be *x, cudaEvent_t ev)
{
    float ms = 0;
    cudaCheck(cudaEventElapsedTime(&ms, x->step_start, ev));
    return (double)ms * 1e-3;
}

/* Waits (deadline: comm_nccl.h) unless already complete. */
static int wait_event(struct oc_cuda_be *x, cudaEvent_t ev, struct oc_status *st)
{
    if (event_done(ev))
        return 0;
    return oc_nccl_wait_event(&x->nccl, ev, st);
}

static int be_step_end(struct oc_backend *b, double *start, double *end,
                       double *inner, double *end_s, int64_t *stuck_op,
                       struct oc_status *st)
{
    struct oc_cuda_be *x = impl_of(b);
    OC_ASSERT(x->in_step && !x->in_group);
    x->in_step = 0;
    *stuck_op = -1;
    *end_s = 0;
    /* The ops in list order: the first past the deadline is the one that
     * did not finish (waiting for all at once and looking afterwards would
     * race with the abort, which ends the stuck NCCL kernels). The deadline
     * is per op, so a step whose GPU work outlasts timeout_s in all is not
     * taken for a hang; one op that makes no progress for timeout_s is. */
    for (int64_t i = 0; i < x->nops; i++) {
        const struct oc_cuda_op_ev *e = &x->ev[i];
        if (!e->has_start && !e->has_end)
            continue;
        cudaEvent_t ev = e->has_end ? end_event(x, i) : e->start;
        if (event_done(ev))
            continue;
        if (oc_nccl_wait_event(&x->nccl, ev, st) != 0) {
            *stuck_op = i;
            oc_nccl_abort(&x->nccl);
            return -1;
        }
    }
    /* work enqueued without marks */
    cudaCheck(cudaEventRecord(x->tail[0], x->compute));
    cudaCheck(cudaEventRecord(x->tail[1], x->pp));
    cudaCheck(cudaEventRecord(x->tail[2], x->dp));
    for (int k = 0; k < 3; k++)
        if (wait_event(x, x->tail[k], st) != 0) {
            oc_nccl_abort(&x->nccl);
            return -1;
        }

    for (int64_t i = 0; i < x->nops; i++) {
        const struct oc_cuda_op_ev *e = &x->ev[i];
        start[i] = end[i] = inner[i] = 0;
        if (e->has_start)
            start[i] = elapsed_s(x, e->start);
        if (e->has_end)
            end[i] = elapsed_s(x, end_event(x, i));
        else
            end[i] = start[i];
        if (!e->has_start)
            start[i] = end[i];
        double last = end[i];
        for (int64_t k = 0; k < e->ninner; k++) {
            double a = elapsed_s(x, e->inner[2 * k]);
            double z = elapsed_s(x, e->inner[2 * k + 1]);
            inner[i] += z - a;
            if (z > last)
                last = z;
        }
        if ((e->has_start || e->has_end) && last > *end_s)
            *end_s = last;
    }
    return 0;
}

static double be_mem_peak_bytes(struct oc_backend *b)
{
    struct oc_cuda_be *x = impl_of(b);
    uint64_t high = 0; /* cuuint64_t (cuda.h) */
    cudaCheck(cudaMemPoolGetAttribute(x->pool, cudaMemPoolAttrUsedMemHigh, &high));
    return (double)high + x->malloc_high_bytes;
}

/* ------------------------------------------------------------------ */
/* Set-up and tear-down                                                 */

static void impl_free(struct oc_cuda_be *x)
{
    if (!x)
        return;
    /* Teardown after a timeout: the communicators were aborted, so the
     * stuck kernels ended; errors left by them are not worth an exit. */
    (void)cudaDeviceSynchronize();
    (void)cudaGetLastError();
    if (x->p) {
        if (x->gpu_made)
            oc_gpu_free(&x->gpu);
        (void)cudaFree(x->p->v);
        (void)cudaFree(x->p->m);
        (void)cudaFree(x->p->g);
        (void)cudaFree(x->p->w);
        x->p->w = x->p->g = x->p->m = x->p->v = NULL;
    }
    for (int64_t i = 0; i < x->cap_ops; i++) {
        struct oc_cuda_op_ev *e = &x->ev[i];
        (void)cudaEventDestroy(e->start);
        (void)cudaEventDestroy(e->end);
        for (int64_t k = 0; k < 2 * e->cap_inner; k++)
            (void)cudaEventDestroy(e->inner[k]);
        free(e->inner);
    }
    free(x->ev);
    while (x->all_reqs) {
        struct oc_cuda_req *r = x->all_reqs;
        x->all_reqs = r->all;
        (void)cudaEventDestroy(r->ev);
        free(r);
    }
    free(x->group_reqs);
    free(x->group_ops);
    free(x->received);
    free(x->sent);
    if (x->nccl_made)
        oc_nccl_free(&x->nccl);
    if (x->blas_made)
        oc_cuda_blas_free(&x->blas);
    cudaEvent_t evs[] = {x->step_start, x->fork, x->join, x->tail[0], x->tail[1],
                         x->tail[2]};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (evs[i])
            (void)cudaEventDestroy(evs[i]);
    cudaStream_t ss[] = {x->dp, x->pp, x->compute};
    for (size_t i = 0; i < sizeof ss / sizeof ss[0]; i++)
        if (ss[i])
            (void)cudaStreamDestroy(ss[i]);
    /* give the pool's cached blocks back (the release threshold keeps them) */
    if (x->pool)
        (void)cudaMemPoolTrimTo(x->pool, 0);
    free(x);
}

static void be_free_backend(struct oc_backend *b)
{
    if (!b || !b->impl)
        return;
    impl_free(b->impl);
    b->impl = NULL;
    b->ops = NULL;
}

static const struct oc_backend_ops cuda_ops = {
    .name = "cuda",
    .alloc = be_alloc,
    .free = be_free,
    .zero = be_zero,
    .copy = be_copy,
    .upload = be_upload,
    .download = be_download,
    .params_adopt = be_params_adopt,
    .params_release = be_params_release,
    .work_floats = be_work_floats,
    .embed_fwd = be_embed_fwd,
    .embed_bwd = be_embed_bwd,
    .attn_fwd = be_attn_fwd,
    .attn_scores = be_attn_scores,
    .attn_bwd = be_attn_bwd,
    .mlp_fwd = be_mlp_fwd,
    .mlp_bwd = be_mlp_bwd,
    .head_fwd = be_head_fwd,
    .head_bwd = be_head_bwd,
    .adamw = be_adamw,
    .tp_allreduce = be_tp_allreduce,
    .embed_allreduce = be_embed_allreduce,
    .p2p_begin = be_p2p_begin,
    .p2p_end = be_p2p_end,
    .send = be_send,
    .recv = be_recv,
    .dp_allreduce_start = be_dp_allreduce_start,
    .dp_reduce_scatter_start = be_dp_reduce_scatter_start,
    .dp_allgather = be_dp_allgather,
    .test = be_test,
    .wait = be_wait,
    .step_begin = be_step_begin,
    .mark = be_mark,
    .step_end = be_step_end,
    .mem_peak_bytes = be_mem_peak_bytes,
    .free_backend = be_free_backend,
};

int oc_backend_cuda_available(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError(); /* error 35 without a driver: no device */
        return 0;
    }
    return n > 0;
}

int oc_backend_cuda_init(struct oc_backend *b, struct oc_ctl *ctl,
                         const struct oc_model *m, const struct oc_layout *l,
                         const struct oc_backend_cuda_opts *o,
                         struct oc_status *st)
{
    memset(b, 0, sizeof *b);
    OC_ASSERT(ctl && m && l && o);
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        (void)cudaGetLastError();
        return oc_fail(st, "no CUDA device visible");
    }
    if (ctl->local_ranks > ndev || ctl->local_rank >= ndev)
        return oc_fail(st, "%d ranks on this node but %d CUDA device(s) visible "
                           "(one GPU per rank)", ctl->local_ranks, ndev);
    if (l->tp * l->pp * l->dp != ctl->size)
        return oc_fail(st, "the layout has %lld ranks, the job %d",
                       (long long)(l->tp * l->pp * l->dp), ctl->size);

    struct oc_cuda_be *x = oc_xcalloc(1, sizeof *x);
    x->ctl = ctl;
    x->device = ctl->local_rank;
    x->dtype = o->dtype;
    const struct oc_coord me = oc_layout_coord(l, ctl->rank);
    if (oc_gpt_dims_init(&x->dims, m, l->tp, me.tp, l->micro_batch, l->seq_length,
                         st) != 0) {
        free(x);
        return -1;
    }
    cudaCheck(cudaSetDevice(x->device));
    cudaCheck(cudaStreamCreateWithFlags(&x->compute, cudaStreamNonBlocking));
    cudaCheck(cudaStreamCreateWithFlags(&x->pp, cudaStreamNonBlocking));
    cudaCheck(cudaStreamCreateWithFlags(&x->dp, cudaStreamNonBlocking));
    cudaCheck(cudaEventCreateWithFlags(&x->fork, cudaEventDisableTiming));
    cudaCheck(cudaEventCreateWithFlags(&x->join, cudaEventDisableTiming));
    for (int k = 0; k < 3; k++)
        cudaCheck(cudaEventCreateWithFlags(&x->tail[k], cudaEventDisableTiming));
    cudaCheck(cudaEventCreateWithFlags(&x->step_start, cudaEventDefault));

    /* The stream-ordered allocator's pool: its high-water mark counts from
     * here (only 0 may be written to it, CUDA runtime API,
     * cudaMemPoolSetAttribute), and freed blocks stay cached instead of
     * going back to the driver at every synchronisation (the default
     * release threshold 0), so that ALLOC ops cost the same every step. */
    cudaCheck(cudaDeviceGetDefaultMemPool(&x->pool, x->device));
    uint64_t zero = 0, keep = UINT64_MAX; /* cuuint64_t (cuda.h) */
    cudaCheck(cudaMemPoolSetAttribute(x->pool, cudaMemPoolAttrUsedMemHigh, &zero));
    cudaCheck(cudaMemPoolSetAttribute(x->pool, cudaMemPoolAttrReleaseThreshold, &keep));

    oc_cuda_blas_init(&x->blas);
    x->blas_made = 1;
    cublasCheck(cublasSetStream(x->blas.handle, x->compute));
    count_malloc(x, (double)x->blas.workspace_bytes);

    x->sent = oc_xcalloc((size_t)ctl->size, sizeof *x->sent);
    x->received = oc_xcalloc((size_t)ctl->size, sizeof *x->received);

    if (oc_nccl_init(&x->nccl, ctl, l, st) != 0) {
        impl_free(x);
        return -1;
    }
    x->nccl_made = 1;

    b->ops = &cuda_ops;
    b->impl = x;
    b->ctl = ctl;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Pipeline message order                                               */

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

int oc_backend_cuda_check_p2p_order(const struct oc_schedule *s,
                                    struct oc_status *st)
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
