/* backend_cuda.c: the cuda backend of the executor (backend_cuda.h,
 * backend.h's table): one GPU per rank, the cuda kernels (kernels/cuda/
 * ops_cuda.h) on a compute stream, NCCL (comm_nccl.h) on four streams, CUDA
 * events around every op.
 *
 * What this file is: the backend's set-up and tear-down, its table, the
 * streams and how they wait for each other, and the check that a
 * schedule's pipeline messages pair up and cannot deadlock under the
 * backend's rules (oc_backend_cuda_check_p2p_order, over core/p2p_order.h).
 * The table's functions, which only enqueue work (nothing waits for the
 * GPU except upload / download, wait() and step_end), are in
 * backend_cuda_mem.c (device memory, the parameter arena, the high-water
 * mark), backend_cuda_comm.c (collectives, pipeline messages and why they
 * take two streams, requests) and backend_cuda_timing.c (the per-op events
 * and their reading at the end of a step); backend_cuda_priv.h is what
 * they share. What it is not: the model (model/gpt.c) or its numerics
 * (kernels/cuda/), communicator set-up and deadlines (comm_nccl.c), the
 * walk over the op list (runner_step.c), or the simulation of the rules
 * (core/p2p_order.c).
 *
 * Streams (all cudaStreamNonBlocking, so that none of them serialises with
 * the legacy default stream):
 *   compute  the kernels (the parts, AdamW), memory ops (stream-ordered
 *            allocations), TP and EMBED all-reduces.
 *   up       ncclSend / ncclRecv of messages to a higher world rank (the
 *            `up` copy of world, comm_nccl.h), one call at a time.
 *   down     the same for messages to a lower world rank (`down`).
 *   dp       DP all-reduce / reduce-scatter / all-gather.
 * A pipeline or dp op first makes its stream wait for the compute stream's
 * position (an event recorded on compute, cudaStreamWaitEvent), so that it
 * starts when the op list reaches it and cannot read a buffer before the
 * compute stream wrote it. The compute stream waits for a direction stream
 * at p2p_end when the run of messages received something on it, for dp
 * after the all-gather, and for a request's event at wait().
 *
 * Pipeline messages (how NCCL pairs them, why two direction streams and no
 * NCCL groups, the deadlock of the interleaved schedule that led there):
 * backend_cuda_comm.c's file comment. Timing: backend_cuda_timing.c's.
 */
#include "backend_cuda_priv.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ------------------------------------------------------------------ */
/* State and streams                                                    */

struct oc_cuda_be *oc_cuda_be_of(struct oc_backend *b)
{
    OC_ASSERT(b && b->impl);
    return b->impl;
}

/* cudaEventQuery: 1 complete, 0 not yet (an event never recorded reads as
 * complete: CUDA runtime API, cudaEventRecord). cudaErrorNotReady may be
 * left as the thread's last error, which the next launcher's
 * cudaCheck(cudaGetLastError()) would take for a failure: clear it, as
 * PyTorch's CUDAStream::query does. */
int oc_cuda_be_event_done(cudaEvent_t ev)
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

/* Stream s continues after the compute stream's present position. */
void oc_cuda_be_follow_compute(struct oc_cuda_be *x, cudaStream_t s)
{
    cudaCheck(cudaEventRecord(x->fork, x->compute));
    cudaCheck(cudaStreamWaitEvent(s, x->fork, 0));
}

/* The compute stream continues after stream s's present position. */
void oc_cuda_be_compute_follow(struct oc_cuda_be *x, cudaStream_t s)
{
    cudaCheck(cudaEventRecord(x->join, s));
    cudaCheck(cudaStreamWaitEvent(x->compute, x->join, 0));
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
    oc_cuda_kernels_free(&x->kern);
    if (x->p) {
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
    free(x->received);
    free(x->sent);
    if (x->nccl_made)
        oc_nccl_free(&x->nccl);
    if (x->blas_made)
        oc_cuda_blas_free(&x->blas);
    cudaEvent_t evs[] = {x->step_start, x->fork,    x->join,  x->tail[0],
                         x->tail[1],    x->tail[2], x->tail[3]};
    for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
        if (evs[i])
            (void)cudaEventDestroy(evs[i]);
    cudaStream_t ss[] = {x->dp, x->pp[PP_DOWN], x->pp[PP_UP], x->compute};
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
    .alloc = oc_cuda_be_alloc,
    .free = oc_cuda_be_free,
    .zero = oc_cuda_be_zero,
    .copy = oc_cuda_be_copy,
    .upload = oc_cuda_be_upload,
    .download = oc_cuda_be_download,
    .params_adopt = oc_cuda_be_params_adopt,
    .params_release = oc_cuda_be_params_release,
    .tp_allreduce = oc_cuda_be_tp_allreduce,
    .tp_allgather = oc_cuda_be_tp_allgather,
    .tp_reduce_scatter = oc_cuda_be_tp_reduce_scatter,
    .embed_allreduce = oc_cuda_be_embed_allreduce,
    .p2p_begin = oc_cuda_be_p2p_begin,
    .p2p_end = oc_cuda_be_p2p_end,
    .send = oc_cuda_be_send,
    .recv = oc_cuda_be_recv,
    .dp_allreduce_start = oc_cuda_be_dp_allreduce_start,
    .dp_reduce_scatter_start = oc_cuda_be_dp_reduce_scatter_start,
    .dp_allgather = oc_cuda_be_dp_allgather,
    .test = oc_cuda_be_test,
    .wait = oc_cuda_be_wait,
    .step_begin = oc_cuda_be_step_begin,
    .mark = oc_cuda_be_mark,
    .step_end = oc_cuda_be_step_end,
    .mem_peak_bytes = oc_cuda_be_mem_peak_bytes,
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
    (void)m; /* the model runs on b->kernels (the runner sizes their scratch) */
    cudaCheck(cudaSetDevice(x->device));
    cudaCheck(cudaStreamCreateWithFlags(&x->compute, cudaStreamNonBlocking));
    for (int d = 0; d < PP_DIRS; d++)
        cudaCheck(cudaStreamCreateWithFlags(&x->pp[d], cudaStreamNonBlocking));
    cudaCheck(cudaStreamCreateWithFlags(&x->dp, cudaStreamNonBlocking));
    cudaCheck(cudaEventCreateWithFlags(&x->fork, cudaEventDisableTiming));
    cudaCheck(cudaEventCreateWithFlags(&x->join, cudaEventDisableTiming));
    for (int k = 0; k < 2 + PP_DIRS; k++)
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
    oc_cuda_be_count_malloc(x, (double)x->blas.workspace_bytes);
    oc_cuda_kernels_init(&x->kt, &x->kern, &x->blas, x->compute, x->dtype);

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
    b->kernels = x->kt;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Pipeline message order                                               */

int oc_backend_cuda_check_p2p_order(const struct oc_schedule *s,
                                    struct oc_status *st)
{
    /* this backend's rules: one stream per direction (backend_cuda_comm.c) */
    return oc_p2p_check_order(s, OC_P2P_RULES_DIRECTION, st);
}
