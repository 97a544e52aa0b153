/* backend.h: what the runner (runner.h) needs from the machine it runs on,
 * as one table of functions per backend, so that one walk over the
 * schedule's op lists drives both backends:
 *
 *   cpu   (cpu/backend_cpu.c) host memory, the cpu kernels (kernels/cpu/:
 *         fp32 loops and OpenBLAS), MPI for pipeline messages and TP / DP /
 *         EMBED collectives (cpu/comm_mpi.h), a clock around every op.
 *   cuda  (cuda/backend_cuda.c) device memory (stream-ordered allocations),
 *         the cuda kernels (kernels/cuda/: CUDA kernels and cuBLAS), NCCL
 *         on four streams (compute + TP, pipeline up, pipeline down, DP),
 *         CUDA events around every op.
 *
 * The model is not the backend's: the runner calls model/gpt.h's parts
 * with the backend's kernel table (b.kernels), so one model runs on every
 * backend, and a backend is chosen from the registry (backends.h), never
 * by comparing its name.
 *
 *   struct oc_backend b;
 *   const struct oc_backend_entry *e = oc_backend_find(name); // backends.h
 *   e->init(&b, &ctl, &job, &st);
 *   ... oc_runner_init(&r, &model, &sched, &b, &ro, &st) ...
 *   b.ops->free_backend(&b);
 *
 * Order and streams. The runner calls the table in the op list's order.
 * The cpu backend does each call before it returns (sends and async DP
 * collectives excepted: they return a request). The cuda backend only
 * enqueues: compute (the kernels) and the TP collectives on the compute
 * stream; each
 * pipeline op and each DP collective on its own stream, after that stream
 * waited for the compute stream's position at the op's OC_MARK_START (so an
 * op starts when the op list reaches it, as on the cpu backend); a RECV's
 * data is waited for by the compute stream at p2p_end. Pointers handed to
 * the table are the backend's memory (alloc): host for cpu, device for cuda.
 *
 * Pipeline messages come in runs: the runner calls p2p_begin before the
 * first SEND or RECV of a run of them (ALLOC / FREE ops may sit between)
 * and p2p_end after the last, so that the messages of a run (a send
 * forward and a receive backward, as Megatron-LM's
 * send_forward_recv_backward) are under way together and two neighbours
 * that send to each other do not wait for each other. cpu: no-ops. cuda:
 * not an NCCL group (one would deadlock the interleaved schedule,
 * cuda/backend_cuda_comm.c says how): each message is enqueued on its own on
 * the stream of its direction (to a higher or a lower world rank), and
 * p2p_end makes the compute stream wait for the streams that received
 * something in the run. So on cuda a send's request may complete, and a
 * pipeline op's END event is recorded (on its own stream), before
 * p2p_end; oc_backend_cuda_check_p2p_order refuses a schedule whose
 * messages would deadlock under these rules.
 *
 * Requests. send and the *_start collectives return a request; test says
 * whether it completed (1, and frees it) without waiting; wait waits for it
 * (0, and frees it) or fails (-1) past the timeout.
 *
 * Timing. mark(m, op, stream) is called at the op's start and end (and
 * around the compute a TP op resumes: INNER_*); for async collectives with
 * ISSUED right after the start call returned and COMPLETED when the runner
 * saw the request complete. The cpu backend reads the clock at START, END,
 * INNER_* and COMPLETED; the cuda backend records events at START, END,
 * INNER_* and ISSUED (a pipeline op's START and END on the stream of its
 * direction, known at its send / recv call). step_end waits for the step's work and writes each op's
 * start and end and the inner compute (summed) in seconds from step_begin.
 *
 * Failures: functions returning int give 0, or -1 with st->msg (and
 * ctl->timed_out for a timeout; step_end then names the first op that did
 * not finish in *stuck_op, -1 when unknown). Environment failures of the
 * libraries themselves (a CUDA, cuBLAS or MPI error code) print the call
 * and abort the job, as check.h and mpiCheck do.
 */
#ifndef OC_EXEC_BACKEND_H
#define OC_EXEC_BACKEND_H

#include <stdint.h>

#include "ctl.h"
#include "gc.h"
#include "gpt.h"
#include "ops.h"
#include "params.h"
#include "status.h"

enum oc_stream { OC_STREAM_COMPUTE, OC_STREAM_PP, OC_STREAM_DP };
enum oc_mark {
    OC_MARK_START,
    OC_MARK_END,
    OC_MARK_INNER_START,
    OC_MARK_INNER_END,
    OC_MARK_ISSUED,    /* an async collective was started */
    OC_MARK_COMPLETED, /* the runner saw an async collective complete */
};

struct oc_backend;

/* A backend's table; which backend it is, is the registry's (backends.h),
 * not the table's. */
struct oc_backend_ops {
    /* -- memory ------------------------------------------------------ */
    void *(*alloc)(struct oc_backend *b, int64_t bytes); /* never NULL */
    void (*free)(struct oc_backend *b, void *p);         /* p may be NULL */
    void (*zero)(struct oc_backend *b, void *p, int64_t bytes);
    /* backend memory to backend memory, in the compute stream's order */
    void (*copy)(struct oc_backend *b, void *dst, const void *src, int64_t bytes);
    /* host <-> backend memory; complete on return (outside the op list) */
    void (*upload)(struct oc_backend *b, void *dst, const void *host,
                   int64_t bytes);
    void (*download)(struct oc_backend *b, void *host, const void *src,
                     int64_t bytes);
    /* Moves a host-initialised arena (params.h) into backend memory: p->w
     * copied, p->g, p->m, p->v zeroed, the pointers replaced (the tensor
     * table stays). release gives it back before oc_params_free (which
     * then frees nothing of the backend's). cpu: nothing to do. */
    int (*params_adopt)(struct oc_backend *b, struct oc_params *p,
                        struct oc_status *st);
    void (*params_release)(struct oc_backend *b, struct oc_params *p);

    /* -- communication ----------------------------------------------- */
    /* In place over the TP group (the part's all-reduce, step mode). */
    int (*tp_allreduce)(struct oc_backend *b, float *buf, int64_t n,
                        enum oc_gpt_reduce op, struct oc_status *st);
    /* Sequence parallelism's TP collectives (model/gpt.h, "Communication"),
     * on the compute stream as tp_allreduce, n floats in all (t | n):
     * all-gather in place (this rank's n/t floats at buf + tp_rank * n/t
     * on entry, every rank's in rank order on return); reduce-scatter (sum)
     * of buf into this rank's n/t floats at shard, which does not overlap
     * buf. */
    int (*tp_allgather)(struct oc_backend *b, float *buf, int64_t n,
                        struct oc_status *st);
    int (*tp_reduce_scatter)(struct oc_backend *b, const float *buf, float *shard,
                             int64_t n, struct oc_status *st);
    /* In place sum over the EMBED group (first and last stage). */
    int (*embed_allreduce)(struct oc_backend *b, float *buf, int64_t n,
                           struct oc_status *st);
    void (*p2p_begin)(struct oc_backend *b);
    int (*p2p_end)(struct oc_backend *b, struct oc_status *st);
    /* n floats to / from world rank peer; tag as the schedule's. */
    int (*send)(struct oc_backend *b, const float *buf, int64_t n, int64_t peer,
                int64_t tag, void **req, struct oc_status *st);
    int (*recv)(struct oc_backend *b, float *buf, int64_t n, int64_t peer,
                int64_t tag, struct oc_status *st);
    /* DP group: in-place sum; reduce-scatter of d equal blocks of `count`
     * floats (send: d*count, rank-major; recv: count, this rank's block);
     * all-gather of `count` floats per rank into all (d*count, rank-major),
     * complete on return. */
    int (*dp_allreduce_start)(struct oc_backend *b, float *buf, int64_t n,
                              void **req, struct oc_status *st);
    int (*dp_reduce_scatter_start)(struct oc_backend *b, const float *send,
                                   float *recv, int64_t count, void **req,
                                   struct oc_status *st);
    int (*dp_allgather)(struct oc_backend *b, const float *mine, float *all,
                        int64_t count, struct oc_status *st);
    /* DP group: all-to-all of d blocks of `count` floats (send: block j
     * for DP rank j; recv: block j from DP rank j), complete on return;
     * the compressed exchange's (gc.h). NULL: not run by this backend. */
    int (*dp_alltoall)(struct oc_backend *b, const float *send, float *recv,
                       int64_t count, struct oc_status *st);
    int (*test)(struct oc_backend *b, void *req);
    int (*wait)(struct oc_backend *b, void *req, struct oc_status *st);

    /* -- timing ------------------------------------------------------ */
    /* nops: the op list's length (sizes the per-op marks). */
    void (*step_begin)(struct oc_backend *b, int64_t nops);
    void (*mark)(struct oc_backend *b, enum oc_mark m, int64_t op,
                 enum oc_stream s);
    /* start, end, inner: nops values each, seconds from step_begin;
     * *end_s: the end of the step's last work here. */
    int (*step_end)(struct oc_backend *b, double *start, double *end,
                    double *inner, double *end_s, int64_t *stuck_op,
                    struct oc_status *st);
    /* Device memory high-water mark in bytes since init: the cuda
     * backend's stream-ordered pool (its used-memory high) plus every
     * cudaMalloc of the backend (arena, bf16 weights, scratch, cuBLAS
     * workspace); not NCCL's buffers, cuBLAS's internal allocations or the
     * CUDA context (nvidia-smi shows those). 0 where not measured (cpu). */
    double (*mem_peak_bytes)(struct oc_backend *b);

    void (*free_backend)(struct oc_backend *b);
};

struct oc_backend {
    const struct oc_backend_ops *ops;
    void *impl;
    struct oc_ctl *ctl;
    /* The primitive kernels (kernels/ops.h) on this backend's memory and
     * compute stream: what the model (model/gpt.h) and AdamW
     * (oc_params_adamw) run on. Set by init; the cuda kernels' bf16 weight
     * copy follows the arena of params_adopt. */
    struct oc_kernels kernels;
    /* The compression kernels of the compressed DP exchange (gc.h) on this
     * backend's memory; NULL: the backend does not run gc=... layouts. */
    const struct oc_gc_kernels *gc;
};

#endif
