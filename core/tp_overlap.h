/* tp_overlap.h: what a TP collective costs under Megatron-LM's
 * --tp-comm-overlap (the layout's tp_comm_overlap), where Transformer
 * Engine's userbuffers hide the sequence-parallel all-gathers and
 * reduce-scatters behind the GEMMs next to them.
 *
 *   struct oc_tpo o;
 *   oc_tpo_init(&o, &model, &layout, &topo);
 *   double s = oc_tpo_op_s(&o, &layout, &op, coll_s); // a TP COLLECTIVE op,
 *                                                     // coll_s per repetition
 *
 * The decomposition (Wang et al. 2023, "Overlap Communication with
 * Dependent Computation via Decomposition in Large Deep Learning Models",
 * ASPLOS; NVIDIA Transformer Engine's userbuffers, which Megatron-Core
 * drives with --tp-comm-overlap): a GEMM that consumes an all-gather, or
 * produces a reduce-scatter, is split into chunks, and each chunk's
 * transfer runs while another chunk computes. With G the GEMM's time and C
 * the collective's alone, one collective then costs the step:
 *
 *   ring exchange (t chunks: the all-gather feeding QKV and fc1 forward,
 *   the gradient's all-gather feeding the dgrad of the output projection
 *   and fc2): chunk 0 is local, each of the t-1 others arrives while the
 *   one before computes:   exposed = max(0, C - G (t-1)/t)
 *   pipeline (n chunks: the reduce-scatter of the output projection's and
 *   fc2's forward output): chunk i's reduce-scatter runs under chunk i+1's
 *   GEMM, the last one's after it:   exposed = max(C/n, C - G' (n-1)/n)
 *   bulk (the reduce-scatter of QKV's and fc1's input gradient under their
 *   weight-gradient GEMM, which does not need it):   exposed = max(0, C - G')
 *
 * Pipeline and bulk run their reduction kernels on num_sm SMs, which the
 * GEMM gives up (set_sm_margin): G' = G * SMs / (SMs - num_sm), and the
 * slowdown G' - G is charged with the collective. Ring exchange moves
 * its chunks with the copy engines (use_ce) and keeps every SM.
 * The methods, splits and SM counts are Transformer Engine's defaults
 * (transformer_engine/pytorch/module/base.py, initialize_ub:
 * ring_exchange for qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad with
 * num_splits = tp_size; pipeline for proj_fprop, fc2_fprop with
 * num_splits 4, num_sm 16; bulk for qkv_wgrad, fc1_wgrad with num_sm 16),
 * as written down from TE 1.x without the source at hand: to be checked.
 * C is the collective's own time (NCCL's ring with its latencies, as
 * without overlap); userbuffers' own transfers are not modelled apart.
 *
 * Only the all-gathers and reduce-scatters of the transformer layers
 * overlap; all-reduces (no sequence parallelism: --tp-comm-overlap needs
 * it, Megatron-LM arguments.py), the embedding's, the head's and the
 * cross-entropy's collectives keep their whole time.
 */
#ifndef OC_TP_OVERLAP_H
#define OC_TP_OVERLAP_H

#include <stdint.h>

#include "layout.h"
#include "model.h"
#include "schedule.h"
#include "topology.h"

/* Transformer Engine's defaults (above). */
#define OC_TPO_PIPELINE_SPLITS 4
#define OC_TPO_COMM_SMS 16

/* The GEMM seconds next to each of a layer's TP collectives, one
 * micro-batch, one rank; [0] attention, [1] MLP. */
struct oc_tpo {
    int on;                /* layout's tp_comm_overlap with t > 1 */
    int64_t t;             /* TP size (ring exchange's chunks) */
    double sm_slow;        /* SMs / (SMs - OC_TPO_COMM_SMS) */
    double ag_fwd[2];      /* QKV, fc1 forward GEMM (ring exchange) */
    double rs_fwd[2];      /* output projection, fc2 forward (pipeline) */
    double ag_bwd[2];      /* their dgrad GEMMs (ring exchange) */
    double rs_bwd[2];      /* QKV's, fc1's wgrad GEMM (bulk) */
};

void oc_tpo_init(struct oc_tpo *o, const struct oc_model *m,
                 const struct oc_layout *l, const struct oc_topology *t);

/* The three forms above: seconds one collective of C seconds adds to the
 * step next to a GEMM of G seconds. */
double oc_tpo_ring_exchange_s(double C, double G, int64_t t);
double oc_tpo_pipeline_s(double C, double G, int64_t n, double sm_slow);
double oc_tpo_bulk_s(double C, double G, double sm_slow);

/* One layer's TP collectives in `phase` (FWD, or RECOMPUTE under full
 * recompute: the forward's; BWD), attention and MLP, with an all-gather of
 * ag_s and a reduce-scatter of rs_s seconds alone: what they add. Without
 * overlap 2 * (ag_s + rs_s). */
double oc_tpo_layer_s(const struct oc_tpo *o, enum oc_phase phase, double ag_s,
                      double rs_s);

/* A TP COLLECTIVE op of a schedule built for l (either grain): its
 * seconds, with coll_s per repetition alone. op->count * coll_s when
 * the overlap is off or the op does not overlap. */
double oc_tpo_op_s(const struct oc_tpo *o, const struct oc_layout *l,
                   const struct oc_op *op, double coll_s);

#endif
