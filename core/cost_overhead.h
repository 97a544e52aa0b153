/* cost_overhead.h: the costs of a training step that do not shrink with
 * the model (issue 13, item 3): kernel launches, the sustained fraction of
 * HBM bandwidth that memory-bound kernels reach, and the optimizer step as
 * Megatron-LM runs it (gradient copies, norm, AdamW, parameter copies,
 * zero_grad).
 *
 *   struct oc_cost_overheads o = oc_cost_overheads_default();
 *   int64_t n = oc_cost_kernels(&model, &layout, OC_PART_MLP, OC_PHASE_BWD);
 *   double s = oc_cost_launch_s(&o, gpu_s, n);   // the part with its launches
 *
 * Launches. Each kernel a part launches costs the GPU a gap between
 * dependent kernels in one stream even when the host runs ahead, and costs
 * the host (Python, the PyTorch dispatcher, the CUDA launch call) its issue
 * time. With the host ahead, a part takes its kernels' time plus one gap
 * each; when the kernels are shorter than their issue the GPU waits for
 * the host: part = max(gpu + n*gap, n*host). Both numbers below are
 * sourced ESTIMATEs of the order of magnitude, not measurements of these
 * runs; a calibration replaces the whole part (topology.h).
 *
 * Kernel counts (oc_cost_kernels) follow what Megatron-Core's GPT
 * TransformerLayer launches with its defaults (megatron/core/transformer/
 * transformer_layer.py; Transformer Engine LayerNormLinear; the fused
 * bias-dropout-add, bias-GELU / SwiGLU and scale-mask-softmax of
 * megatron/core/fusions/; --gradient-accumulation-fusion on, so the weight
 * gradient GEMM accumulates into main_grad in place), per layer, one
 * micro-batch:
 *   ATTN fwd  norm, QKV GEMM, [rotary on Q and K: 2], core attention
 *             (flash: 1; classic: QK^T, softmax, [dropout], PV), output
 *             GEMM, bias-dropout-add: 5 + 2 rope + core
 *   MLP fwd   norm, fc1 GEMM, bias-activation, fc2 GEMM, bias-dropout-add: 5
 *   bwd       norm 2 (TE: dx, then the dgamma/dbeta reduction), each GEMM 2
 *             (dgrad, wgrad) plus 1 bias-gradient reduction when the layer
 *             has biases, activation 1, bias-dropout-add 1, the residual's
 *             gradient sum 1, rotary 2; flash 3 (FlashAttention-2's
 *             dot(dO, O) pre-pass, main kernel, dQ conversion:
 *             flash-attn csrc/flash_attn/src/flash_bwd_launch_template.h);
 *             classic PV 2, [dropout 1], softmax 1, QK^T 2
 *   recompute full: the forward's kernels; selective: core attention's
 *   EMBED     fwd gather, [position add], [dropout]; bwd 3 (ESTIMATE:
 *             PyTorch's embedding_dense_backward sorts the indices and
 *             scatters; position gradient, dropout gradient)
 *   HEAD      fwd final norm, logits GEMM and Megatron-LM's vocab-parallel
 *             cross entropy (megatron/core/tensor_parallel/cross_entropy.py:
 *             cast, max, subtract, target mask and gather (3), exp, sum,
 *             log and loss (2): 10); bwd the softmax gradient (4: exp
 *             result reuse, one-hot subtract, scale, cast), logits GEMM 2,
 *             norm 2.
 * Collectives and P2P are separate ops with their own cost (sim/coll*):
 * sequence parallelism adds no compute kernel (its all-gathers and
 * reduce-scatters replace the all-reduces as schedule ops; the norms and
 * the dropout-add run on s/t rows, which cost.c's bytes follow). Only the
 * fused configuration above (Megatron-LM's defaults) is modelled: there is
 * no layout knob for --no-bias-gelu-fusion, --no-bias-dropout-fusion or
 * --no-masked-softmax-fusion.
 * Not charged (no source for a figure, and well under 1 ms a step): the
 * host's per-step Python (timers, logging), the loss and grad-norm
 * all-reduces' launch latencies.
 *
 * Memory-bound kernels run at a sustained fraction of the HBM bandwidth:
 * oc_cost_membound_s in cost.c uses mem_efficiency unless the topology
 * carries a measured calib_mem_Bps (which is already the sustained rate).
 *
 * The optimizer step (oc_cost_optimizer_bytes_per_param): bytes per
 * parameter this rank updates, Megatron-LM's mixed-precision optimizer
 * (megatron/core/optimizer/optimizer.py, MixedPrecisionOptimizer.step and
 * Float16OptimizerWithFloat16Params, or the DistributedOptimizer's shard;
 * the update itself apex/TE FusedAdam's multi_tensor_adam):
 *   copy model grads to fp32 main grads (only when the grads are 16-bit:
 *   read 2, write 4) 6; unscale and inf check (fp16 loss scaling only:
 *   _unscale_main_grads_and_check_for_nan, read 4 write 4) 8; gradient
 *   norm for clipping (clip_grads.py, multi_tensor_l2norm: read 4) 4;
 *   AdamW (read fp32 param, grad, m, v; write param, m, v) 28; copy main
 *   params to the 16-bit model params (read 4, write 2) 6.
 *   bf16 with fp32 grads (Megatron-LM's default for bf16): 4+28+6 = 38;
 *   bf16 or fp16 with 16-bit grads: +6 (copy) = 44, fp16 +8 (unscale) = 52;
 *   fp16 with fp32 grads 46; fp32: norm and AdamW only, 32.
 *   Clipping's rescale (read and write the grads) runs only when the norm
 *   exceeds the threshold (clip_grads.py: if clip_coeff < 1.0), and is not
 *   charged.
 * Per step, not per updated parameter (oc_cost_zero_grad_bytes): Megatron's
 * DDP zeroes its whole gradient buffer before each step
 * (DistributedDataParallel.zero_grad_buffer, a memset: write grad bytes per
 * parameter the rank holds gradients for). */
#ifndef OC_COST_OVERHEAD_H
#define OC_COST_OVERHEAD_H

#include <stdint.h>

#include "layout.h"
#include "model.h"
#include "schedule.h"

struct oc_cost_overheads {
    double kernel_gap_s;   /* GPU-side gap per dependent kernel launch */
    double host_op_s;      /* host issue time per kernel (Python + dispatch) */
    double mem_efficiency; /* sustained fraction of HBM bandwidth, (0, 1] */
};

/* The estimates (sources in cost_overhead.c). */
struct oc_cost_overheads oc_cost_overheads_default(void);
/* No overhead: every kernel free to launch, memory-bound kernels at the
 * full HBM bandwidth (the cost model before issue 13; for tests that
 * check byte and FLOP accounting alone). */
struct oc_cost_overheads oc_cost_overheads_none(void);

/* Kernels one (part, phase) launches per layer (ATTN, MLP) or per
 * embedding / head, one micro-batch (the table above); 0 for a recompute
 * that does not run and for the optimizer. */
int64_t oc_cost_kernels(const struct oc_model *m, const struct oc_layout *l,
                        enum oc_part part, enum oc_phase phase);

/* A part whose kernels take gpu_s on the GPU, launched as n kernels:
 * max(gpu_s + n*gap, n*host). */
double oc_cost_launch_s(const struct oc_cost_overheads *o, double gpu_s, int64_t n);

/* HBM bytes per parameter the optimizer updates (see above). */
double oc_cost_optimizer_bytes_per_param(const struct oc_layout *l);

/* HBM bytes zero_grad writes per step on a rank that holds `params`
 * parameters (oc_mem_stage_params): its gradient buffer, 1/(d*c) of it
 * under ZeRO-2 and 3. */
double oc_cost_zero_grad_bytes(const struct oc_layout *l, double params);

#endif
