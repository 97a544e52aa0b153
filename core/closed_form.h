/* closed_form.h: the textbook formulas of ../shared/DESIGN.md, as pure
 * functions, used to prune layouts, to cross-check the simulator and to
 * explain its numbers.
 *
 *   double f = oc_cf_bubble_fraction(8, 32, 1);          // 7/39
 *   double t = oc_cf_ring_allreduce_s(8, 1e9, 100e9, 1e-6, 3e12); // 3 TB/s HBM
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

/* The reduction's compute. A reduce step that has received a chunk of c
 * bytes sums it into this rank's own: `reads` chunks read (the ring's 2:
 * the received one and the local one; a tree node's k children's and its
 * own, k + 1) and one written, (reads + 1) * c bytes through memory, a
 * memory-bound kernel at mem_Bps (the device's HBM bandwidth, or the
 * calibrated memory bandwidth: oc_cost_mem_Bps). NCCL's kernels reduce
 * each slice as it arrives and pass it on from the same loop (the
 * recvReduceSend primitive of src/device/prims_simple.h: the reduction is
 * fused into the copy, pipelined over slices), so the reduction overlaps
 * the transfer: what it adds to a step is the part that the step's
 * transfer time (hidden_s: latency + c/B of the hop it came over) does not
 * hide,
 *   exposed = max(0, (reads + 1) * c / mem_Bps - hidden_s),
 * and a step costs max(transfer, reduction). On a GPU the transfer hides
 * it (H100: a ring step's 3c at 3.35 TB/s is 40 % of c on 450 GB/s of
 * NVLink); on a CPU, where memory is no faster than the link, it shows.
 * The assumption: the reduction streams as the data arrives, as NCCL's
 * does; MPI on a CPU reduces after the receive with the same cores, which
 * this undercounts by up to the transfer time. mem_Bps <= 0: free. */
double oc_cf_reduce_exposed_s(double bytes, int64_t reads, double mem_Bps,
                              double hidden_s);

/* Ring collectives of S bytes over N ranks, per-hop bandwidth B (bytes/s)
 * and latency l (Patarasuk and Yuan 2009; Thakur et al. 2005):
 *   all-reduce 2(N-1)/N * S/B + 2(N-1)*l   (+ the reduction's)
 *   all-gather and reduce-scatter (N-1)/N * S/B + (N-1)*l
 * The reduce-scatter's N-1 steps (the all-reduce's first N-1) each reduce
 * a chunk of S/N: with memory bandwidth M each step costs
 *   l + S/(N*B) + oc_cf_reduce_exposed_s(S/N, 2, M, l + S/(N*B))
 *   = max(l + S/(N*B), 3*S/(N*M)).
 * S is the full buffer (all-reduce input, all-gather output). N = 1 costs 0. */
double oc_cf_ring_allreduce_s(int64_t n, double bytes, double bw_Bps,
                              double lat_s, double mem_Bps);
double oc_cf_ring_allgather_s(int64_t n, double bytes, double bw_Bps,
                              double lat_s);
double oc_cf_ring_reducescatter_s(int64_t n, double bytes, double bw_Bps,
                                  double lat_s, double mem_Bps);

/* A communication group of `nodes` nodes holding `per_node` members each
 * (N = per_node * nodes), with the figures of one hop inside a node and one
 * hop between nodes (route bandwidth in bytes/s and latency), and the
 * members' memory bandwidth for the reduction (0: free). */
struct oc_cf_levels {
    int64_t per_node, nodes;
    double intra_bw_Bps, intra_lat_s;
    double inter_bw_Bps, inter_lat_s;
    double mem_Bps;
};

/* Two-level ("hierarchical") rings (L = per_node, M = nodes): the 2D
 * all-reduce of Mikami et al. 2018 ("2D-torus": reduce-scatter along one
 * dimension, all-reduce along the other, all-gather along the first), as
 * in NCCL's and Horovod's hierarchical all-reduce and the hierarchical
 * all-reduce of Jia et al. 2018, with the node as the first dimension. Reduce-scatter is its first half (ring reduce-scatter of S
 * in the node, then of the S/L shard across nodes among the members with
 * the same local index), all-gather its second half in reverse order:
 *   all-reduce      RS(L, S, intra) + AR(M, S/L, inter) + AG(L, S, intra)
 *   reduce-scatter  RS(L, S, intra) + RS(M, S/L, inter)
 *   all-gather      AG(M, S/L, inter) + AG(L, S, intra)
 * with the ring forms above (their reductions at the levels' mem_Bps); a
 * level of one member costs 0. Exact on uncontended hops (the L rings
 * across nodes on NICs of their own). */
double oc_cf_hier_allreduce_s(const struct oc_cf_levels *v, double bytes);
double oc_cf_hier_reducescatter_s(const struct oc_cf_levels *v, double bytes);
double oc_cf_hier_allgather_s(const struct oc_cf_levels *v, double bytes);

/* NCCL's NVLS all-reduce inside one node (NVLink SHARP; closed_form_nccl.c):
 * the switch reads every member's shard of the buffer and sums it
 * (multimem ld_reduce), then writes the sum to every member (multimem
 * st), the two halves pipelined. Each of the N members sends S (its whole
 * buffer, read by the switch) plus S/N (its shard's sum, to broadcast)
 * and receives S/N plus S over its own link to the switch, whatever N:
 *   all-reduce  (N+1)/N * S/B + l
 * against the ring's 2(N-1)/N * S/B + 2(N-1) l; the members reduce
 * nothing. NCCL's topology search charges an NVLS channel exactly this
 * ((N+1) x its bandwidth on every GPU's NVLink for N channels,
 * core/nccl_model.c). N = 1 costs 0. */
double oc_cf_nvls_allreduce_s(int64_t n, double bytes, double bw_Bps, double lat_s);

/* NCCL's ring across nodes, one channel per member of a node
 * (closed_form_nccl.c): L = per_node >= 2 channels of S/L, channel c entering
 * each node at local member c and leaving through the NIC of member c-1;
 * N = L*M. Each step every member sends the chunks of L-1 channels to its
 * node neighbour and one across, at once, so with c = S/N a step takes
 *   t(c) = max(l_i + (L-1)/L * c/B_i,  l_n + c/(L*B_n))
 * and, a reduce-scatter step reducing the c bytes it received (2 reads),
 * the exposed part of that reduction, oc_cf_reduce_exposed_s(c, 2, M,
 * t(c)):
 *   all-reduce      2(N-1) steps, the first N-1 with their reductions
 *   reduce-scatter  N-1 steps with their reductions
 *   all-gather      N-1 steps
 * Busbw of an all-reduce for large S: min(B_i L/(L-1), L B_n), the node's
 * NICs together (NCCL's rings, one per NIC, as its maintainers describe
 * the multi-node busbw, ../shared/validation/README.md). */
double oc_cf_rails_allreduce_s(const struct oc_cf_levels *v, double bytes);
double oc_cf_rails_reducescatter_s(const struct oc_cf_levels *v, double bytes);
double oc_cf_rails_allgather_s(const struct oc_cf_levels *v, double bytes);

/* C chunks pipelined along a path of hops_a hops of step_a_s seconds per
 * chunk and hops_b hops of step_b_s: a hop forwards one chunk at a time,
 * as soon as it has it, so the slowest hop paces the chunks:
 *   hops_a*step_a + hops_b*step_b + (C-1)*max(step_a, step_b)
 * ((hops + C - 1)*step when one kind of hop is used). The pipelined chain
 * of Pjesivac-Grbovic et al. 2007 ("pipeline": (P-1 + C-1) steps of one
 * chunk) with unequal hops (a flow shop of identical jobs). */
double oc_cf_pipeline_s(int64_t chunks, int64_t hops_a, double step_a_s,
                        int64_t hops_b, double step_b_s);

/* Chain broadcast of S bytes in C chunks over N members (NCCL's ring
 * broadcast): (N-1 + C-1) * (l + S/(C*B)). */
double oc_cf_chain_broadcast_s(int64_t n, double bytes, int64_t chunks,
                               double bw_Bps, double lat_s);

/* Tree collectives on the shape of NCCL's tree: inside each node a chain
 * of its L members from the node's leader, across nodes a binary tree of
 * the leaders in node order (node k's parent is node (k-1)/2, a binary
 * heap), S cut in C chunks for the pipelined phases.
 *   reduce / broadcast (pipelined, C chunks of S/C along the deepest path:
 *       L-1 chain hops and floor(log2 M) tree hops, oc_cf_pipeline_s)
 *   scatter / gather (store and forward: one message per hop holding the
 *       S/N shards of every member below it; the slowest root-to-leaf
 *       path: sum over its hops of l + (members below)*(S/N)/B)
 *   all-reduce      reduce + broadcast (NCCL's tree, after Sanders et al.
 *                   2009, with one tree instead of two)
 * The reduce's pipeline charges at every node that receives a chunk the
 * exposed reduction (oc_cf_reduce_exposed_s) of its k children's chunks
 * and its own (k + 1 reads), hidden by its slowest incoming hop: a chain
 * member's stage is max(chain hop, 3c/M); a leader's the slowest of its
 * incoming hops plus what of (k + 2)c/M that hides not, k = its chain
 * child and its child nodes. The chunks are paced by the slowest stage,
 * the chain's or the root's (the node with the most children).
 *   reduce-scatter  reduce + scatter    (the short-vector compositions of
 *   all-gather      gather + broadcast   Chan et al. 2007)
 * Exact when no two flows share a link: M <= 2 (the chain and the tree
 * child of a leader use its NVLink and its NIC). With M > 2 a leader's two
 * child nodes share its NIC: every tree hop is charged twice its bytes,
 * an estimate (an upper bound for the phases that move equal chunks). */
double oc_cf_tree_allreduce_s(const struct oc_cf_levels *v, double bytes,
                              int64_t chunks);
double oc_cf_tree_reducescatter_s(const struct oc_cf_levels *v, double bytes,
                                  int64_t chunks);
double oc_cf_tree_allgather_s(const struct oc_cf_levels *v, double bytes,
                              int64_t chunks);

/* ZeRO-2 and ZeRO-3's DP communication of one rank of `stage` in one step
 * (schedule_zero.h), on a ring of d = l->dp ranks with per-hop bandwidth
 * bw_Bps and latency lat_s, the reductions at mem_Bps (0: free): per
 * micro-batch and chunk c with n_c layers of P parameters and E_c extra
 * ones (oc_mem_chunk_extra_params),
 *   ZeRO-3  2 * (AG(w*E_c) + n_c * AG(w*P)) + RS(g*E_c) + n_c * RS(g*P)
 *   ZeRO-2  RS(g*E_c) + n_c * RS(g*P)
 * times m micro-batches, plus for ZeRO-2 one AG of the stage's updated
 * weights (w*params) after the optimizer; AG and RS the ring forms above
 * (each moves (d-1)/d of its buffer: 3x the parameter bytes per
 * micro-batch for ZeRO-3 against the all-reduce's 2x when w = g, the
 * ZeRO paper's 1.5x, section 7.2.2). 0 for ZeRO-0 and 1 and for d = 1.
 * Exact for the simulator's blocking collectives (no overlap) on an
 * uncontended ring. */
double oc_cf_zero_dp_comm_s(const struct oc_model *m, const struct oc_layout *l,
                            int64_t stage, double bw_Bps, double lat_s, double mem_Bps);
/* The same with NCCL's terms on each collective (core/nccl_model.h): nccl 0
 * none (the above), 1 a ring inside a node, 2 a ring across nodes. */
double oc_cf_zero_dp_comm_nccl_s(const struct oc_model *m, const struct oc_layout *l,
                                 int64_t stage, double bw_Bps, double lat_s, double mem_Bps,
                                 int nccl);

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
 *   layer  = layer fwd + bwd (incl. recompute) + its TP collectives
 *   U_i    = n_i*layer + v * 2 PP sends, plus embedding fwd+bwd on stage 0,
 *            head fwd+bwd on p-1 (n_i: stage i's layers, placement.h;
 *            L/p when even), one micro-batch
 *   step   = max_j (m * U_j + (U_0 + ... + U_{j-1})/v) + exposed DP
 *            + optimizer
 *
 * With unequal stages (the embedding and head, or first/last) the pipeline
 * runs at the pace of the slowest stage: the derivation is at
 * pipeline_time_s in closed_form.c.
 *
 * With uniform stages (no embedding or head time) the pipeline term is
 * m*v*unit / (1 - bubble) = (m*v + p - 1) * unit, the textbook form.
 *
 * TP collectives (4 per layer, 6 in a fully recomputed one: every layer
 * under rfull, the first k of a chunk under rfull<k>) and PP sends are on
 * the critical path. Each group's hop is the node fabric when the group
 * sits in one node under the layout's rank order, otherwise
 * oc_topology_inter_Bps with one flow per group crossing the node. DP
 * reduces the larger of the first and last stage's gradients; with
 * overlap_grad_reduce Megatron-Core's buckets (schedule_bucket.h) start
 * during the last micro-batch's backward of each chunk, as their layers
 * finish, and the rest of that backward hides them (those backwards taken
 * back to back: exact for one chunk per stage, a bound on what hides with
 * interleaving, whose gaps hide more).
 * ZeRO-2/3: oc_cf_zero_dp_comm_s of that stage instead, with overlap less
 * what the step's compute may hide (an estimate, not a bound).
 * The all-reduces charge their reductions at oc_cost_mem_Bps. */
struct oc_cf_step {
    double fwd_chunk_s;     /* one chunk forward, one micro-batch (the largest
                               chunk: the most layers of any stage, /v) */
    double bwd_chunk_s;     /* one chunk backward incl. recompute */
    double tp_comm_s;       /* TP collectives per step, one rank (of the
                               largest stage) */
    double pp_comm_s;       /* pipeline sends per step, one rank */
    double dp_comm_s;       /* DP gradient reduction per step (exposed part
                               only in step_s when overlap_grad_reduce;
                               over the DP x CP ranks) */
    double cp_comm_s;       /* context-parallel ring transfers per step, one
                               rank (oc_cf_cp_ring_s; only their exposed
                               part in step_s) */
    double bubble_fraction; /* closed form */
    double step_s;
    double tokens_per_s;
    double mfu;
    double optimizer_s;     /* AdamW step of the rank's parameters (/d sharded) */
};
void oc_cf_step(const struct oc_model *m, const struct oc_layout *l,
                const struct oc_topology *t, struct oc_cf_step *out);

/* Context parallelism (schedule_cp.h): the ring of one attention part runs
 * c-1 steps, each a block of `bytes` to the next CP rank, l + S/B apiece
 * on a free link (Liu et al. 2023):
 *   ring   = (c-1) * (l + S/B)
 * Each step's transfer overlaps one of the c slices of the attention's
 * compute A (posted with the step's send, as TransformerEngine's P2P
 * stream does), so the part waits
 *   exposed = (c-1) * max(0, l + S/B - A/c)
 * We model the overlap because Megatron-Core runs it (the K/V exchange is
 * on a side stream) and because at long sequences the s^2 attention hides
 * the s-linear exchange, which a serial charge would not show; the
 * slices are equal because the 2c-chunk split balances the causal mask.
 * oc_cf_step adds the exposed part to each chunk unit. */
double oc_cf_cp_ring_s(int64_t cp, double bytes, double bw_Bps, double lat_s);
double oc_cf_cp_ring_exposed_s(int64_t cp, double bytes, double bw_Bps, double lat_s,
                               double attn_s);

#endif
