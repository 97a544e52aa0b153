/* backend_cuda.h: the cuda backend of the executor (backend.h): one GPU per
 * rank, the cuda kernel table (kernels/cuda/ops_cuda.h) as b.kernels, NCCL
 * (cuda/comm_nccl.h), CUDA events.
 *
 *   struct oc_backend_cuda_opts co = OC_BACKEND_CUDA_OPTS_DEFAULT;
 *   co.dtype = OC_CUDA_BF16;
 *   struct oc_backend b;
 *   if (oc_backend_cuda_init(&b, &ctl, &model, &layout, &co, &st) != 0) ...
 *
 * Streams: compute (the kernels and TP all-reduces), up and down (ncclSend /
 * ncclRecv of pipeline messages to a higher / lower world rank, each call
 * on its own, no NCCL groups: backend_cuda.c says why), dp (DP reductions,
 * the weights' all-gather), each waiting for the compute stream where
 * backend.h says; the EMBED all-reduce runs on the compute stream. Memory: cudaMallocAsync / cudaFreeAsync on the compute
 * stream from the device's default pool (a buffer freed after a send is
 * freed once the send's event completed); the high-water mark is the
 * pool's used-memory high (cudaMemPoolAttrUsedMemHigh) plus the arena, the
 * kernels' bf16 weights and scratch and cuBLAS workspace allocated with
 * cudaMalloc.
 * Timing: one event pair per op (and per inner segment), read after the
 * step's work completed (step_end); a wait or step_end past the timeout
 * aborts the NCCL communicators and names the first unfinished op.
 */
#ifndef OC_EXEC_BACKEND_CUDA_H
#define OC_EXEC_BACKEND_CUDA_H

#include "backend.h"
#include "kernels.h"
#include "layout.h"
#include "model.h"
#include "schedule.h"

struct oc_backend_cuda_opts {
    enum oc_cuda_dtype dtype;  /* GEMM operands (kernels/cuda/ops_cuda.h) */
};
#define OC_BACKEND_CUDA_OPTS_DEFAULT                                           \
    ((struct oc_backend_cuda_opts){.dtype = OC_CUDA_BF16})

/* Picks the GPU ctl->local_rank, makes the streams, cuBLAS handle, the
 * kernel table (b->kernels: its bf16 weights follow the arena of
 * params_adopt, its scratch the runner's oc_gpt_reserve) and NCCL
 * communicators (collective over the ctl's ranks) for layout l. -1 with
 * st->msg: no GPU ("no CUDA device visible"), fewer GPUs than ranks on the
 * node, NCCL set-up failed. m is not used (the model runs on b->kernels). */
int oc_backend_cuda_init(struct oc_backend *b, struct oc_ctl *ctl,
                         const struct oc_model *m, const struct oc_layout *l,
                         const struct oc_backend_cuda_opts *o,
                         struct oc_status *st);

/* Whether a CUDA device is usable here (for --backend auto and tests). */
int oc_backend_cuda_available(void);

/* NCCL pairs the messages between two ranks by their order, not by tag
 * (the tag is not sent): checks that for every pair (a, q) of ranks, a's
 * SENDs to q carry the tags of q's RECVs from a, in the same order, and as
 * many; then that the messages cannot deadlock on this backend
 * (oc_backend_cuda_check_p2p_deadlock, OC_CUDA_P2P_DIRECTION). 0, or -1
 * with st->msg naming the pair and the first mismatch, or the ranks and
 * ops that would wait for each other. Pure over the schedule (no GPU): to
 * be called (runner or main) before a schedule runs on this backend. */
int oc_backend_cuda_check_p2p_order(const struct oc_schedule *s,
                                    struct oc_status *st);

/* How pipeline messages run, for the deadlock check. Common to both: each
 * rank's program reaches its ops in list order; a run of SEND / RECV ops
 * (ALLOC / FREE may sit between) ends at the next other op or the list's
 * end, and the program passes that point only once the run's receives
 * completed (the compute stream waits for them at p2p_end, and every
 * later op follows the compute stream); at a WAIT only once every earlier
 * send completed (the host waits); a message completes together with its
 * partner (the n-th send from A to B with the n-th receive of B from A),
 * both at the head of their streams. TP / DP / EMBED collectives run on
 * other communicators and are not modelled. */
enum oc_cuda_p2p_rules {
    /* this backend: two FIFO streams per rank, up (messages to a higher
     * rank) and down; a message joins its stream when the program reaches
     * it and is the head once the earlier messages there completed */
    OC_CUDA_P2P_DIRECTION,
    /* the former design: one FIFO stream per rank; a run is one NCCL
     * group, joining the stream at the run's end; its messages can pair
     * once the group heads the stream, and it leaves it when all did */
    OC_CUDA_P2P_GROUPED,
};

/* Simulates the whole schedule's pipeline messages under `rules` (linear
 * in the ops, apart from pairing inside a group). 0 if every message
 * completes; -1 with st->msg "pipeline messages would deadlock ...",
 * naming the cycle of ranks and ops that wait for each other. Assumes the
 * pairs' counts match (oc_backend_cuda_check_p2p_order checks that
 * first); a message without partner is reported as a deadlock too. */
int oc_backend_cuda_check_p2p_deadlock(const struct oc_schedule *s,
                                       enum oc_cuda_p2p_rules rules,
                                       struct oc_status *st);

#endif
