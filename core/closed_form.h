/* closed_form.h: the textbook formulas of ../shared/DESIGN.md, as pure
 * functions, used to prune layouts, to cross-check the simulator and to
 * explain its numbers.
 *
 *   double f = oc_cf_bubble_fraction(8, 32, 1);          // 7/39
 *   double t = oc_cf_ring_allreduce_s(8, 1e9, 100e9, 1e-6);
 *   struct oc_cf_step e;
 *   oc_cf_step(&model, &layout, &topo, &e);              // step-time estimate
 */
#ifndef OC_CLOSED_FORM_H
#define OC_CLOSED_FORM_H

#include <stdint.h>

#include "layout.h"
#include "model.h"
#include "topology.h"

/* Pipeline bubble as a fraction of the step (Narayanan et al. 2021, sec. 2.2):
 * (p-1)/(m+p-1) for GPipe and 1F1B; (p-1)/(v*m + p-1) interleaved. */
double oc_cf_bubble_fraction(int64_t p, int64_t m, int64_t v);

/* Ring collectives of S bytes over N ranks, per-hop bandwidth B (bytes/s)
 * and latency l (Patarasuk and Yuan 2009; Thakur et al. 2005):
 *   all-reduce 2(N-1)/N * S/B + 2(N-1)*l
 *   all-gather and reduce-scatter (N-1)/N * S/B + (N-1)*l
 * S is the full buffer (all-reduce input, all-gather output). N = 1 costs 0. */
double oc_cf_ring_allreduce_s(int64_t n, double bytes, double bw_Bps,
                              double lat_s);
double oc_cf_ring_allgather_s(int64_t n, double bytes, double bw_Bps,
                              double lat_s);
double oc_cf_ring_reducescatter_s(int64_t n, double bytes, double bw_Bps,
                                  double lat_s);

/* nccl-tests' bus bandwidth (doc/PERFORMANCE.md): algbw = S/t, and
 * busbw = algbw * 2(N-1)/N for all-reduce, * (N-1)/N for all-gather and
 * reduce-scatter, * 1 for broadcast and point-to-point. */
double oc_busbw_allreduce(int64_t n, double bytes, double time_s);
double oc_busbw_allgather(int64_t n, double bytes, double time_s);

/* Model FLOPs of one training step (forward + backward, no recompute), the
 * numerator of MFU (Chowdhery et al. 2022, appendix B): 3 * forward FLOPs
 * of all layers and the LM head over G sequences. */
double oc_cf_model_flops_per_step(const struct oc_model *m,
                                  const struct oc_layout *l);

/* A closed-form step-time estimate: compute per chunk from the cost model,
 * the pipeline bubble, TP all-reduces on the node fabric, PP sends, and a
 * DP ring all-reduce of the stage's gradients after the last backward.
 *
 *   unit   = fwd_chunk + bwd_chunk + TP collectives + 2 PP sends (per chunk
 *            and micro-batch)
 *   U_i    = v*unit, plus embedding fwd+bwd on stage 0, head fwd+bwd on p-1
 *   step   = m * max U_i + (sum U_i - max U_i)/v + exposed DP + optimizer
 *
 * With uniform stages (no embedding or head time) the pipeline term is
 * m*v*unit / (1 - bubble) = (m*v + p - 1) * unit, the textbook form.
 *
 * TP collectives (4 per layer, 6 with full recompute) and PP sends are on
 * the critical path. Each group's hop is the node fabric when the group
 * sits in one node under the layout's rank order, otherwise
 * oc_topology_inter_Bps with one flow per group crossing the node. DP
 * reduces the larger of the first and last stage's gradients; with
 * overlap_grad_reduce the last micro-batch's backward hides part of it. */
struct oc_cf_step {
    double fwd_chunk_s;     /* one chunk forward, one micro-batch (middle stage) */
    double bwd_chunk_s;     /* one chunk backward incl. recompute */
    double tp_comm_s;       /* TP collectives per step, one rank */
    double pp_comm_s;       /* pipeline sends per step, one rank */
    double dp_comm_s;       /* DP gradient reduction per step (exposed part
                               only in step_s when overlap_grad_reduce) */
    double bubble_fraction; /* closed form */
    double step_s;
    double tokens_per_s;
    double mfu;
    double optimizer_s;     /* AdamW step of the rank's parameters (/d sharded) */
};
void oc_cf_step(const struct oc_model *m, const struct oc_layout *l,
                const struct oc_topology *t, struct oc_cf_step *out);

#endif
