/* cost.h: how long one compute op takes on a device, before any calibration.
 *
 *   struct oc_cost c;
 *   oc_cost_init(&c, &model, &layout, &topo);
 *   double sec = oc_cost_op_s(&c, &op);     // an OC_OP_COMPUTE op
 *
 * GEMMs: from their shape, by the roofline (FLOPs at peak, or operand bytes
 * at HBM bandwidth, whichever is slower) and by tile and wave quantization
 * over the device's SMs (NVIDIA, "Matrix Multiplication Background User's
 * Guide": a 128x128 output tile per SM per wave), capped by the device's
 * sustained fraction of peak (gemm_efficiency). Memory-bound kernels (norms,
 * activations, softmax, residual adds, dropout, optimizer) by bytes over HBM
 * bandwidth at a sustained fraction (cost_overhead.h: 0.9, a measured copy
 * on an H200). Every estimated part also pays its kernel launches
 * (cost_overhead.h: a count per layer and phase from Megatron-Core's
 * transformer layer, times a GPU gap and a host issue time). A calibrated
 * topology (calib_gemm_flops, calib_mem_Bps) replaces the peak-based rates
 * with measured ones. Every byte count takes the
 * layout's element size (oc_layout_act_bytes: 2 for a bf16 or fp16 run, 4
 * for fp32, which is what the cpu executor runs); the topology's
 * calib_act_bytes only records what the calibration ran in.
 *
 * Measured per-part rates (ocsim-exec --calibrate runs the executor's own
 * part functions at the layout's shapes; topology.h, "calibration") replace
 * the whole estimate of a part: its time is the FLOPs the schedule gives
 * the op (oc_cost_sched_flops) over the rate measured for that part and
 * phase, the embedding's its tokens times the measured seconds per token,
 * the optimizer's its parameters (hbm_bytes / 28) times the measured
 * seconds per parameter. A part without a measured rate keeps the
 * estimate.
 *
 * The per-layer time of each (part, phase) is computed once at init, so an
 * op's cost is a table look-up times its layer count.
 *
 * What each part counts, per layer, one micro-batch, one TP rank (T = b*s):
 *   ATTN  QKV [T x h] x [h x (h + 2*kv_dim)/t], scores and weighted values
 *         ((a/t)*b GEMMs [s x hd] x [hd x s] and [s x s] x [s x hd]; a flash
 *         kernel as their arithmetic only, its I/O without s x s traffic),
 *         output projection [T x h/t] x [h/t x h]; norm, softmax, rotary,
 *         residual and dropout as memory-bound kernels.
 *   MLP   up [T x h] x [h x f/t] (2f/t wide when gated), down
 *         [T x f/t] x [f/t x h]; norm, activation, residual, dropout.
 *   EMBED gather (and position add) over HBM; backward also the dense
 *         V/t x h table gradient, zeroed and added into the gradient buffer.
 *   HEAD  final norm, logits GEMM
 *         [T x h] x [h x V/t], fp32 cross-entropy passes over the logits.
 * Backward: for every forward GEMM its input-gradient and weight-gradient
 * GEMMs, memory-bound work doubled (flash: 5 GEMMs, recomputing S).
 * Recompute: full reruns ATTN and MLP forward; selective reruns core
 * attention only. Optimizer ops are timed per parameter (cost_overhead.h).
 * Byte counts above and in cost.c are written for 2-byte elements; e bytes
 * in general, and fp32 logits and 1-byte dropout masks stay as they are
 * whatever the element.
 */
#ifndef OC_COST_H
#define OC_COST_H

#include <stdint.h>

#include "cost_overhead.h"
#include "layout.h"
#include "model.h"
#include "schedule.h"
#include "topology.h"

struct oc_gemm {
    int64_t m, n, k; /* C (m x n) = A (m x k) * B (k x n) */
    int64_t batch;   /* independent GEMMs of that shape (attention heads) */
    double elem_bytes; /* bytes of an operand element; 0: 2 (16-bit) */
};

double oc_cost_gemm_s(const struct oc_topology *t, struct oc_gemm g);
/* The backward GEMMs of C(m x n) = A(m x k) B(k x n): the input gradient
 * dA = dC B^T (m x k, inner n) and the weight gradient dB = A^T dC
 * (k x n, inner m). */
struct oc_gemm oc_gemm_dgrad(struct oc_gemm g);
struct oc_gemm oc_gemm_wgrad(struct oc_gemm g);
/* The forward GEMMs of one layer part on one TP rank, one micro-batch, in
 * the order they run (ATTN: QKV, output projection; MLP: fc1, fc2; HEAD:
 * the logits); returns how many (0 for the embedding). */
int oc_cost_part_gemms(const struct oc_model *m, const struct oc_layout *l,
                       enum oc_part part, struct oc_gemm g[2]);
double oc_cost_membound_s(const struct oc_topology *t, double bytes);
/* The memory bandwidth memory-bound kernels run at: the calibrated one
 * (calib_mem_Bps) where measured, else the device's HBM bandwidth. */
double oc_cost_mem_Bps(const struct oc_topology *t);

/* The time table: seconds for one layer's (or one embedding's, one head's)
 * part in each phase, one micro-batch, one TP rank. */
struct oc_cost {
    double part_s[OC_PART_ALL + 1][OC_PHASE_OPTIMIZER + 1];
    double optimizer_s_per_param; /* the optimizer step per updated
                                     parameter: its bytes
                                     (cost_overhead.h) at the sustained
                                     bandwidth, or the calibrated seconds */
    double zero_grad_s_per_param; /* zero_grad per parameter held */
    struct oc_cost_overheads ovh; /* the launch and bandwidth figures used */
    const struct oc_topology *topo;
};

/* With the estimated overheads (oc_cost_overheads_default). */
void oc_cost_init(struct oc_cost *c, const struct oc_model *m,
                  const struct oc_layout *l, const struct oc_topology *t);
/* With given overheads (oc_cost_overheads_none: the bare roofline, for
 * tests of the byte and FLOP accounting). */
void oc_cost_init_with(struct oc_cost *c, const struct oc_model *m,
                       const struct oc_layout *l, const struct oc_topology *t,
                       const struct oc_cost_overheads *o);
/* Seconds of the zero_grad memset on a rank that holds `params`
 * parameters (oc_mem_stage_params); 0 with a calibrated optimizer. Charged
 * with the optimizer op (the next step's first kernel). */
double oc_cost_zero_grad_s(const struct oc_cost *c, double params);
/* Seconds for a COMPUTE op of a schedule built for the same layout. For
 * OC_PART_CHUNK the op's layer range and its flags (embedding on the first
 * chunk of stage 0, head on the last chunk of stage p-1) are honoured. */
/* OC_PHASE_OPTIMIZER ops (any part): the schedule puts in op->hbm_bytes
 * 28 bytes per updated parameter (AdamW's own traffic), already divided by
 * d when the optimizer is sharded; the op costs hbm_bytes / 28 parameters
 * at optimizer_s_per_param each (the whole step, cost_overhead.h, or the
 * calibrated seconds) plus oc_cost_zero_grad_s of the stage. OC_PART_ALL
 * in another phase is a compression kernel of the DP exchange
 * (compress.h): its hbm_bytes and flops by oc_gc_kernel_s. */
double oc_cost_op_s(const struct oc_cost *c, const struct oc_op *op,
                    const struct oc_layout *l, const struct oc_model *m);

/* A check, not used for timing: the GEMM FLOPs the cost model runs for one
 * layer (attention + MLP), one micro-batch, one TP rank, in `phase`
 * (FWD, BWD or RECOMPUTE). FWD equals oc_model_layer_fwd_flops / t when the
 * heads and the MLP divide evenly over t; BWD is twice FWD (plus the
 * recomputed scores of a flash kernel). */
double oc_cost_layer_flops(const struct oc_model *m, const struct oc_layout *l,
                           enum oc_phase phase);

/* The FLOPs core/schedule.c puts on one layer-grain COMPUTE op of `part`
 * in `phase`: one layer (ATTN, MLP) or the head, one micro-batch, one TP
 * rank: the part's forward FLOPs (model.h) / t, backward twice that,
 * recompute as l->recompute says (full: the forward; selective, ATTN only:
 * 4*b*s^2*h/t); 0 for the embedding, the optimizer and a recompute that
 * does not run. A calibrated part rate is counted against these FLOPs, so
 * that rate * time gives back the measured time. */
double oc_cost_sched_flops(const struct oc_model *m, const struct oc_layout *l,
                           enum oc_part part, enum oc_phase phase);

#endif
