/* backend_cuda.c: the cuda backend of the executor (backend_cuda.h,
 * backend.h's table): one GPU per rank, the cuda kernels (kernels/cuda/
 * ops_cuda.h) on a compute stream, NCCL (comm_nccl.h) on four streams, CUDA
 * events around every op.
 *
 * What this file is: the table's functions, which only enqueue work
 * (nothing here waits for the GPU except upload / download, wait() and
 * step_end), the streams and how they wait for each other, the requests
 * of sends and async DP collectives, the per-op events and their reading
 * at the end of a step, the device-memory high-water mark, and the check
 * that a schedule's pipeline messages pair up and cannot deadlock under
 * these rules (oc_backend_cuda_check_p2p_order, over core/p2p_order.h).
 * What it is not: the model (model/gpt.c) or its numerics (kernels/cuda/),
 * communicator set-up and deadlines (comm_nccl.c), the walk over the op
 * list (runner.c), or the simulation of the rules (core/p2p_order.c).
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
 * Pipeline messages: NCCL matches the sends and receives between a pair of
 * ranks by their order, not by tag (NCCL user guide, "Point-to-point
 * communication"). The tags are therefore not sent; the schedule must post,
 * for every ordered pair (A, B), A's sends to B in the order B posts its
 * receives from A. An ncclSend holds its stream until the peer's matching
 * ncclRecv runs (and the receive until the send runs), so whatever sits
 * behind a message on its stream waits for the peer too.
 *
 * Why two direction streams and no NCCL groups. The first design put
 * every pipeline message on one pp stream over world, each run of
 * consecutive SEND / RECV ops in one ncclGroupStart / ncclGroupEnd
 * (Megatron-LM's send_forward_recv_backward). The interleaved schedule
 * (core/schedule.c, v >= 2) deadlocks under it. With tp1-pp2-dp1-v2 and 8
 * micro-batches (ops as in ops.csv): rank 0's stream holds its send of
 * message 5 to rank 1 (op 45, a group of its own) and behind it the group
 * with its receive of message 3 from rank 1 (op 54); rank 1's stream holds
 * the group {send of message 3 to rank 0 (op 51), receive of message 4
 * (op 53)} and behind it its receive of message 5 (op 60). Rank 0's send 5
 * waits for rank 1's receive 5, behind rank 1's send 3, which waits for
 * rank 0's receive 3, behind rank 0's send 5. Nothing moves (found in a CPU
 * emulation of CUDA and NCCL; 1f1b and gpipe do not deadlock).
 * So now: every message is its own ncclSend / ncclRecv (no group), on the
 * stream and communicator of its direction (sender < receiver: up). All
 * messages from A to B then share A's and B's stream of one direction and
 * keep their pair order there, and a message of one direction never waits
 * behind one of the other direction: in the example, rank 0's send 5 and
 * rank 1's receive 5 sit on the up streams, rank 1's send 3 and rank 0's
 * receive 3 on the down streams, and both pairs complete. p2p_begin /
 * p2p_end stay: p2p_end makes the compute stream wait for the direction
 * streams that received something in the run, so that two messages of one
 * run (a send forward and a receive backward) still run concurrently.
 * Whether a schedule can deadlock under these rules (a stream is FIFO, a
 * message completes with its partner, the compute stream and so every
 * later op waits for a run's receives at p2p_end, the host for sends at
 * WAIT) is decided before it runs: oc_backend_cuda_check_p2p_order
 * simulates them over the whole schedule (core/p2p_order.h,
 * OC_P2P_RULES_DIRECTION; the old rules are OC_P2P_RULES_GROUPED, kept to
 * show the difference in tests/test_p2p_order.c).
 *
 * Timing: one start and one end event per op (timing enabled), and start /
 * end pairs per inner compute segment, made once and reused every step;
 * cudaEventElapsedTime from an event recorded on the compute stream at
 * step_begin. A pipeline op's start and end are recorded on the stream of
 * its direction around its NCCL call (the direction is known only in the
 * call: the START mark is held until then). step_end waits for the ops'
 * end events in list order (the first one past the deadline is the stuck
 * op) and then for one event per stream.
 */
#include "backend_cuda.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "comm_nccl.h"
#include "ops_cuda.h"
#include "p2p_order.h"

/* ------------------------------------------------------------------ */
/* State                                                                */

/* A send's or an async collective's completion. */
struct oc_cuda_req {
    cudaEvent_t ev;          /* recorded after the NCCL call (no timing) */
    struct oc_cuda_req *next; /* free list */
    struct oc_cuda_req *all;  /* every request made (freed at the end, also
                                 those a failed step left outstanding) */
};

/* The events of one op of the list. */
struct oc_cuda_op_ev {
    cudaEvent_t start, end;
    int has_start, has_end;
    int end_issued;          /* end came from OC_MARK_ISSUED: END ignored */
    int dir;                 /* a pipeline op's stream (enum pp_dir), else -1 */
    int64_t ninner;          /* inner pairs recorded this step */
    int inner_open;          /* an INNER_START waits for its INNER_END */
    int64_t cap_inner;       /* pairs created */
    cudaEvent_t *inner;      /* (cap_inner, 2): start, end */
};

/* The two pipeline streams: messages to a higher world rank go up
 * (core/p2p_order.h, oc_p2p_stream_of). */
enum pp_dir {
    PP_UP = OC_P2P_UP,
    PP_DOWN = OC_P2P_DOWN,
    PP_DIRS = OC_P2P_STREAMS
};

struct oc_cuda_be {
    struct oc_ctl *ctl;
    int device;
    enum oc_cuda_dtype dtype;

    cudaStream_t compute, dp;
    cudaStream_t pp[PP_DIRS]; /* pipeline messages by direction */
    cudaEvent_t fork;         /* compute -> pp / dp (no timing) */
    cudaEvent_t join;         /* pp / dp -> compute (no timing) */
    cudaEvent_t tail[2 + PP_DIRS]; /* step_end: one per stream (no timing) */
    struct oc_cuda_blas blas;
    int blas_made;
    struct oc_cuda_kernels kern; /* the kernel table's state (on compute) */
    struct oc_kernels kt;        /* {cuda table, &kern}: b->kernels */
    struct oc_nccl nccl;
    int nccl_made;
    cudaMemPool_t pool;       /* the device's default pool */

    /* params_adopt */
    struct oc_params *p;      /* the adopted arena, NULL before */
    double malloc_bytes;      /* live cudaMalloc bytes (arena, blas) */
    double malloc_high_bytes;

    /* p2p */
    int in_group;
    int group_recv[PP_DIRS];  /* the open run received on that stream */
    int64_t pp_op;            /* a pipeline op whose START mark waits for its
                                 send / recv call (the stream), else -1 */
    int pp_last;              /* the stream of the last pipeline call */
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

/* The stream of marks for s; OC_STREAM_PP: the last pipeline call's
 * (be_mark records a pipeline op's own marks on its stream). */
static cudaStream_t stream_of(struct oc_cuda_be *x, enum oc_stream s)
{
    switch (s) {
    case OC_STREAM_COMPUTE: return x->compute;
    case OC_STREAM_PP: return x->pp[x->pp_last];
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

/* The fp32 weights changed: the kernels' bf16 copy must be recast. */
static void weights_changed(struct oc_cuda_be *x)
{
    x->kt.ops->weights_changed(x->kt.ctx);
}

/* A write to the fp32 weights outside AdamW and the all-gather (upload,
 * copy, zero into p->w): the bf16 copy must be recast. */
static void note_write(struct oc_cuda_be *x, const void *dst, int64_t bytes)
{
    if (!x->p)
        return;
    const uintptr_t w = (uintptr_t)x->p->w, d = (uintptr_t)dst;
    const uintptr_t w_end = w + (uintptr_t)x->p->n * sizeof(float);
    if (d < w_end && d + (uintptr_t)bytes > w)
        weights_changed(x);
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
            /* not sticky (as ops_cuda.c's device_alloc): clear, report */
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

    /* The kernels' bf16 mirror is made of the device arena; on failure p
     * gets its host arrays back, unchanged. */
    float *hw = p->w, *hg = p->g, *hm = p->m, *hv = p->v;
    p->w = dw;
    p->g = dg;
    p->m = dm;
    p->v = dv;
    x->p = p;
    if (oc_cuda_kernels_weights(&x->kern, p->w, p->n, st) != 0) {
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
    free(hv);
    free(hm);
    free(hg);
    free(hw);
    count_malloc(x, 4.0 * (double)bytes);
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
    x->malloc_bytes -= 4.0 * (double)p->n * sizeof(float);
    (void)oc_cuda_kernels_weights(&x->kern, NULL, 0, NULL); /* frees the copy */
    cudaCheck(cudaFree(p->v));
    cudaCheck(cudaFree(p->m));
    cudaCheck(cudaFree(p->g));
    cudaCheck(cudaFree(p->w));
    p->w = p->g = p->m = p->v = NULL;
    x->p = NULL;
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

/* A run of pipeline messages (backend.h): no NCCL group (the file
 * comment says why); what is left is the compute stream's wait at the end
 * for the streams that received something. */
static void be_p2p_begin(struct oc_backend *b)
{
    struct oc_cuda_be *x = impl_of(b);
    OC_ASSERT(!x->in_group);
    x->in_group = 1;
    for (int d = 0; d < PP_DIRS; d++)
        x->group_recv[d] = 0;
}

static int be_p2p_end(struct oc_backend *b, struct oc_status *st)
{
    struct oc_cuda_be *x = impl_of(b);
    (void)st; /* nothing here can fail: the NCCL calls were made already */
    OC_ASSERT(x->in_group);
    x->in_group = 0;
    for (int d = 0; d < PP_DIRS; d++)
        if (x->group_recv[d])
            compute_follow(x, x->pp[d]);
    return 0;
}

static void check_peer(const struct oc_cuda_be *x, int64_t peer, int64_t n)
{
    OC_ASSERT(peer >= 0 && peer < x->ctl->size && peer != x->ctl->rank);
    OC_ASSERT(n >= 0);
}

/* Before a pipeline call on stream d: d follows the compute stream, and
 * the op whose START mark is held starts there. */
static cudaStream_t pp_enter(struct oc_cuda_be *x, int d)
{
    cudaStream_t s = x->pp[d];
    follow_compute(x, s);
    x->pp_last = d;
    if (x->pp_op >= 0) {
        struct oc_cuda_op_ev *e = &x->ev[x->pp_op];
        cudaCheck(cudaEventRecord(e->start, s));
        e->has_start = 1;
        e->dir = d;
        x->pp_op = -1;
    }
    return s;
}

static int be_send(struct oc_backend *b, const float *buf, int64_t n,
                   int64_t peer, int64_t tag, void **req, struct oc_status *st)
{
    struct oc_cuda_be *x = impl_of(b);
    check_peer(x, peer, n);
    (void)tag; /* matched by order per pair (the file comment) */
    const int64_t me = x->ctl->rank;
    cudaStream_t s = pp_enter(x, (int)oc_p2p_stream_of(me, peer));
    struct oc_cuda_req *r = req_new(x);
    int rc = oc_nccl_check(&x->nccl,
                           ncclSend(buf, oc_nccl_count(n), ncclFloat, (int)peer,
                                    oc_nccl_p2p_of(&x->nccl, me, peer), s),
                           "ncclSend", st);
    if (rc != 0) {
        req_release(x, r);
        return -1;
    }
    x->sent[peer]++;
    req_record(r, s);
    *req = r;
    return 0;
}

static int be_recv(struct oc_backend *b, float *buf, int64_t n, int64_t peer,
                   int64_t tag, struct oc_status *st)
{
    struct oc_cuda_be *x = impl_of(b);
    check_peer(x, peer, n);
    (void)tag; /* matched by order per pair (the file comment) */
    const int64_t me = x->ctl->rank;
    /* the message goes up when it comes from a lower rank */
    const int d = (int)oc_p2p_stream_of(peer, me);
    cudaStream_t s = pp_enter(x, d);
    if (oc_nccl_check(&x->nccl,
                      ncclRecv(buf, oc_nccl_count(n), ncclFloat, (int)peer,
                               oc_nccl_p2p_of(&x->nccl, peer, me), s),
                      "ncclRecv", st) != 0)
        return -1;
    x->received[peer]++;
    if (x->in_group)
        x->group_recv[d] = 1;
    else
        compute_follow(x, s);
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
    if (x->p)
        weights_changed(x); /* the all-gather wrote the weights */
    return 0;
}

static int be_test(struct oc_backend *b, void *req)
{
    struct oc_cuda_be *x = impl_of(b);
    struct oc_cuda_req *r = req;
    OC_ASSERT(r);
    if (!event_done(r->ev))
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
        e->dir = -1;
        e->ninner = 0;
        e->inner_open = 0;
    }
    x->nops = nops;
    x->pp_op = -1;
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
        if (s == OC_STREAM_PP) {
            /* the stream is the message's direction: recorded in the call */
            x->pp_op = op;
            return;
        }
        if (s != OC_STREAM_COMPUTE)
            follow_compute(x, cs);
        cudaCheck(cudaEventRecord(e->start, cs));
        e->has_start = 1;
        return;
    case OC_MARK_END:
        if (e->end_issued)
            return; /* an async collective ends when its work does */
        if (s == OC_STREAM_PP) {
            /* on the op's own stream, after its message: the end of a
             * message, never before its start */
            if (x->pp_op == op)
                x->pp_op = -1; /* marked, but no call was made */
            if (e->dir >= 0)
                cs = x->pp[e->dir];
        }
        cudaCheck(cudaEventRecord(e->end, cs));
        e->has_end = 1;
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
        return;
    case OC_MARK_COMPLETED:
        return; /* the host saw it: the event above already has the time */
    }
    OC_ASSERT(0);
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
        cudaEvent_t ev = e->has_end ? x->ev[i].end : e->start;
        if (event_done(ev))
            continue;
        if (oc_nccl_wait_event(&x->nccl, ev, st) != 0) {
            *stuck_op = i;
            oc_nccl_abort(&x->nccl);
            return -1;
        }
    }
    /* work enqueued without marks */
    const cudaStream_t streams[2 + PP_DIRS] = {x->compute, x->pp[PP_UP],
                                               x->pp[PP_DOWN], x->dp};
    for (int k = 0; k < 2 + PP_DIRS; k++)
        cudaCheck(cudaEventRecord(x->tail[k], streams[k]));
    for (int k = 0; k < 2 + PP_DIRS; k++)
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
            end[i] = elapsed_s(x, x->ev[i].end);
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
    /* the arena and cuBLAS's workspace, and the kernels' bf16 weights and
     * scratch: all live from params_adopt to the end of the run */
    return (double)high + x->malloc_high_bytes + x->kern.bytes_high;
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
    .alloc = be_alloc,
    .free = be_free,
    .zero = be_zero,
    .copy = be_copy,
    .upload = be_upload,
    .download = be_download,
    .params_adopt = be_params_adopt,
    .params_release = be_params_release,
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
    count_malloc(x, (double)x->blas.workspace_bytes);
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
    /* this backend's rules: one stream per direction (the file comment) */
    return oc_p2p_check_order(s, OC_P2P_RULES_DIRECTION, st);
}
