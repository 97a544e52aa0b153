/* schedule_cp.h: context parallelism in the schedule (Megatron-LM
 * --context-parallel-size c): the ring of K/V blocks that attention passes
 * between the c ranks of a CP group, as SEND/RECV ops between CP
 * neighbours, interleaved with c slices of the attention compute so that
 * each block's transfer overlaps the previous block's attention.
 *
 *   struct oc_cp_ring r;
 *   oc_cp_ring_init(&r, &model, &layout, rank);   // neighbours, bytes
 *   for (int64_t k = 0; k < r.cp; k++) {       // one attention part
 *       struct oc_op ops[3];
 *       int64_t n = oc_cp_step_ops(&r, &compute, 2 * m * v, v, lc, j, k, ops);
 *       ...
 *   }
 *
 * Sources: Liu et al. 2023, "Ring Attention with Blockwise Transformers";
 * Megatron-Core's context-parallel docs and TransformerEngine's
 * AttnFuncWithCPAndKVP2P: the sequence is cut into 2c chunks, rank i holds
 * chunks i and 2c-1-i (so causal attention costs every rank the same), and
 * attention runs c steps; before step j < c-1 a rank sends the K/V block
 * it holds to the next CP rank and receives the one of the previous rank
 * (P2P on a side stream), and waits for it after step j's compute.
 * Backward runs the same ring with K/V and the dK/dV accumulators:
 * twice the bytes per step.
 *
 * Per step the block is K and V of s/c tokens:
 *   kv_bytes = 2 * b * (s/c) * (k/t) * hd * e
 * (k KV heads, hd head dim, e the activation element's bytes).
 * Everything else of a CP rank runs on its s/c tokens (layout.h,
 * oc_layout_local_seq): GEMMs, norms, TP collectives, pipeline messages,
 * activations; attention's scores are its s/c queries against all s keys,
 * so FLOPs per rank are the layer's over c (the 2c-chunk split balances
 * the causal mask).
 *
 * Chunk grain (OC_GRAIN_CHUNK, what the fast and symmetric simulations
 * replay; the executor and the full simulation keep the layer grain):
 * a unit of n layers runs one merged ring per attention phase (forward,
 * backward, full recompute) instead of n: its c slices each carry 1/c of
 * the n layers' attention parts, and its c-1 steps each move the n
 * layers' blocks (n * kv_bytes; backward twice that). The unit's other
 * compute (MLP, embedding, head, selective recompute) is one op per
 * (part, phase) outside the ring (oc_cp_unit_ops).
 *   Why the time is the layer grain's: a ring step takes
 * max(slice, transfer), the next block arriving while the slice runs.
 * Merged, both sides scale by n: max(n * slice, n * transfer) = n times
 * the per-layer step, so the merged ring lasts as long as the n per-layer
 * rings, and the work outside it is serial on the rank either way.
 *   Where it is approximate: (1) a transfer is l + S/B, not linear in S:
 * the merged step pays the route latency l once, not n times, so where
 * the transfer outlasts the slice the merged step is up to (n-1)*l
 * shorter (the simulated cp_comm, a sum of transfers, is (n-1)*l shorter
 * per step whatever the overlap); where the slice hides the transfer
 * the two are equal. (2) Under contention (the ring's links shared with
 * pipeline messages inside a node or overlapped DP buckets of the DP x CP
 * group) the ring's traffic comes in n-times larger, n-times rarer
 * bursts, which share the links differently. FLOPs, bytes moved, memory
 * (the ring allocates no buffer of its own), TP collectives and pipeline
 * messages are the layer grain's (tests/test_sim_cp.c holds both).
 */
#ifndef OC_SCHEDULE_CP_H
#define OC_SCHEDULE_CP_H

#include <stdint.h>

#include "layout.h"
#include "model.h"
#include "schedule.h"

struct oc_cp_ring {
    int64_t cp;           /* c */
    int64_t prev, next;   /* the CP neighbours of the rank (ring order) */
    double kv_bytes;      /* one K/V block, forward */
};

/* The rank's ring (cp 1: prev = next = rank, kv_bytes as for cp 1). */
void oc_cp_ring_init(struct oc_cp_ring *r, const struct oc_model *m,
                     const struct oc_layout *l, int64_t rank);

/* Bytes a ring step sends: kv_bytes forward and in recompute, twice that
 * in backward (K/V and dK/dV). */
double oc_cp_step_bytes(const struct oc_cp_ring *r, enum oc_phase ph);

/* Ring steps of one attention part: c-1. */
static inline int64_t oc_cp_steps(const struct oc_cp_ring *r)
{
    return r->cp > 1 ? r->cp - 1 : 0;
}

/* Tag of ring step `step` of local layer j (0 <= j < lc) of micro-batch mb
 * and chunk c in phase ph, offset by tag_base (the pipeline messages'
 * tags lie below it): unique per (sender, receiver). */
int64_t oc_cp_tag(const struct oc_cp_ring *r, int64_t tag_base, int64_t mb,
                  int64_t chunk, int64_t v, int64_t lc, int64_t j,
                  enum oc_phase ph, int64_t step);

/* The ops of ring step `step` (0 <= step < c) of one attention part on one
 * CP rank, into out: a SEND of the block it holds to next (step < c-1),
 * the step's compute slice (a copy of *compute with flops / c and count =
 * c: cost.h charges a COMPUTE op with count k > 1 as 1/k of its part),
 * the RECV of the previous rank's block (step < c-1). Returns the count
 * (3, or 1 for the last step); an attention part is steps 0..c-1 in
 * order. The blocks are those of compute->layer_count layers (1 at layer
 * grain; a merged ring's n at chunk grain, which passes lc = 1, j = 0). */
int64_t oc_cp_step_ops(const struct oc_cp_ring *r, const struct oc_op *compute,
                       int64_t tag_base, int64_t v, int64_t lc, int64_t j, int64_t step,
                       struct oc_op out[3]);

/* Chunk grain: one unit's compute, summed from its layer-grain ops
 * (oc_cp_unit_add), then emitted merged (oc_cp_unit_ops). Indexed by
 * part (EMBED..HEAD) and phase (FWD, BWD, RECOMPUTE). */
struct oc_cp_unit {
    double flops[OC_PART_HEAD + 1][3], hbm[OC_PART_HEAD + 1][3];
    int64_t ops[OC_PART_HEAD + 1][3];    /* layer-grain ops of plain compute */
    int64_t layers[OC_PART_HEAD + 1][3]; /* layers they cover (ATTN, MLP) */
    double ring_flops[3];                /* attention parts that run the ring */
    int64_t ring_slices[3];              /* their slices: c per layer */
};

/* Adds one layer-grain COMPUTE op of a unit (a ring slice, count c, or a
 * plain part) to *u. */
void oc_cp_unit_add(struct oc_cp_unit *u, const struct oc_op *op);

typedef void (*oc_cp_put_fn)(void *sink, const struct oc_op *op);

/* The unit's merged compute, through put: for a forward unit (tmpl->phase
 * FWD) the embedding, the forward ring, the MLP, the head; for a backward
 * one the head, the full-recompute ring and MLP recompute, the MLP, the
 * selective recompute, the backward ring, the embedding; each op the sum
 * of its layer-grain ops, present when they were. tmpl gives mb, stage,
 * chunk and the chunk's first layer; the rings' tags are oc_cp_tag's with
 * lc = 1, j = 0 (one ring per phase of the unit). */
void oc_cp_unit_ops(const struct oc_cp_ring *r, const struct oc_cp_unit *u,
                    const struct oc_op *tmpl, int64_t tag_base, int64_t v,
                    oc_cp_put_fn put, void *sink);

#endif
