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
 * (the tag is not sent), and each message runs on the stream of its
 * direction: checks the schedule against these rules
 * (core/p2p_order.h, oc_p2p_check_order with OC_P2P_RULES_DIRECTION): for
 * every pair (a, q) of ranks, a's SENDs to q carry the tags of q's RECVs
 * from a, in the same order, and as many; then that the messages cannot
 * deadlock on this backend's streams. 0, or -1 with st->msg naming the
 * pair and the first mismatch, or the ranks and ops that would wait for
 * each other. Pure over the schedule (no GPU): to be called (runner or
 * main) before a schedule runs on this backend. */
int oc_backend_cuda_check_p2p_order(const struct oc_schedule *s,
                                    struct oc_status *st);

#endif
