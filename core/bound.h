/* bound.h: a closed-form LOWER bound of the step time the simulator gives a
 * layout (`ocsim sweep` simulates candidates in increasing order of it and
 * stops once the next bound exceeds the N-th best simulated step: a bound
 * that exceeded the simulation would prune a layout that belongs in the
 * table, so every term below is one the simulator cannot avoid, at a
 * bandwidth it cannot beat; tests/test_bound.c holds bound <= simulated
 * step on many layouts).
 *
 *   struct oc_bound b;
 *   oc_bound_step(&model, &layout, &topo, &b);   // b.step_s <= simulated
 *
 * What it charges (core/schedule.c's ops, timed as the simulator times
 * them):
 *   - compute: every (micro-batch, chunk) forward and backward of each
 *     stage (recompute included) from core/cost.c's table, the table the
 *     replay charges (oc_cost_op_s), so exact;
 *   - TP collectives on the critical path (blocking ops of the rank): per
 *     layer and micro-batch two all-reduce equivalents in the forward, two
 *     in the backward, two more in a full recompute (an SP all-gather plus
 *     reduce-scatter moves what one all-reduce moves), each at the ring's
 *     bandwidth term 2(t-1)/t * S/B on the fastest hop (no latency, no
 *     reduction): below the fast mode's sleep and below full mode's rings;
 *   - the pipeline's fill and drain: stage i cannot start before micro-batch
 *     0's chunk-0 forward crossed stages 0..i-1, and after its last backward
 *     (micro-batch m-1, chunk 0) stages i-1..0 still run theirs (Narayanan
 *     et al. 2021, section 2.2: the bubble in these terms);
 *   - after the last backward of each stage: the DP reduction that nothing
 *     overlaps (all of the stage's gradients without --overlap-grad-reduce,
 *     with it the last DP bucket of chunk 0, the one holding its first
 *     layers (schedule_bucket.h): it starts after the last backward), the
 *     distributed optimizer's weight all-gather (not charged under
 *     --overlap-param-gather, which moves it into the next forward:
 *     schedule_pgather.h; a bound may leave a term out), and the AdamW step;
 *     a DP collective of S bytes over N ranks on G nodes at the bandwidth
 *     lower bound of Patarasuk and Yuan 2009 (all-reduce 2(N-1)/N * S/B)
 *     on the hops it must cross: 2(N-1)/N * S/B_intra inside a node;
 *     across nodes 2(G-1)/G * S over the node's NICs shared by the stage's
 *     DP groups that leave the node at once, and of those NICs only the
 *     ones the groups' members sit on (sim/platform.c routes GPU i through
 *     NIC i % k and every simulated algorithm sends between members: on
 *     eight-NIC nodes a DP group with two members per node crosses on two
 *     NICs, not on its share of eight; where several stages' groups share
 *     a node, all its NICs); reduce-scatter and all-gather half that. (Until the fifth session the bound charged
 *     half of these as a hedge; tools/check-bound.sh held the full bound
 *     below 4310 simulated DP-heavy layouts, docs/benchmarks.md.)
 *     A layout that forces the ring or the tree on a group across nodes
 *     (coll=ring|tree) is charged at least what that algorithm's own
 *     route carries over one flow between nodes (at most one NIC): the
 *     flat ring 2(N-1)/N * S on every hop, the tree what its root
 *     leader's NIC takes in and then sends out, its two phases one after
 *     the other (2 S or 4 S for an all-reduce; oc_bound_forced_coll_s);
 *     for a single group, not for the sum over the stages that share a
 *     node (other rings, other NICs).
 * and, as a second bound (the step is the larger): the pipeline messages
 * that must leave a node (every micro-batch's activation and gradient
 * across each stage boundary between nodes, from every rank of the
 * sending stage) over the cluster's aggregate NIC bandwidth.
 * and, third, ZeRO-2/3 (core/schedule_zero.h): each layer unit's
 * reduce-scatter (and ZeRO-3's two all-gathers) every micro-batch, their
 * sum at the DP-collective bound above over the links they share (under
 * a forced tree with overlap, per direction of the split-duplex NICs: the
 * reduce-scatters and gathers run at once on two streams and cross the
 * root leader's NIC in opposite directions); on the
 * compute stream as well where they block (without overlap all of them,
 * with it ZeRO-3's first-layer gather of each unit run); in the critical
 * path's walk, under overlap, a ZeRO-3 unit no shorter than its layers'
 * gathers one after the other (stream 0), and the reduce-scatters queued
 * on stream 1 in issue order before the optimizer's WAIT.
 * and, fourth, the pipeline's critical path (path_s, bound.c): every
 * stage's units walked in the schedule's order with the terms above per
 * unit, each unit no earlier than its predecessor on the stage ends and
 * its message arrives, a message's transfer starting only once its
 * producer ended and the receiver finished its previous unit (core/
 * schedule.c emits RECV, work, SEND per unit, and SimGrid's mailboxes
 * start a transfer when both ends are posted), at the intra-node
 * bandwidth or, between nodes, over one NIC shared by the ranks of the
 * sending stage on it (TP groups in lockstep, DP replicas symmetric);
 * then per stage the DP reduction no earlier than each chunk's gradients
 * are ready, over the gradient group (DP x CP under context parallelism),
 * the weight all-gather and the optimizer after it (under
 * --overlap-grad-reduce: the chunk's last bucket after its last backward
 * ends, and all its buckets, one after another on the stage's DP stream,
 * after that backward starts, the larger); and where a node
 * holds several whole stages of one replica (tp-pp-dp), their DP traffic
 * on that node's NICs together: every bucket ready at T or later crosses
 * after T (of a chunk under overlap, only its last DP bucket surely is). It holds the pipeline messages and the 1F1B dependency chain
 * that the fill-and-drain term above leaves out. Under context
 * parallelism each attention part takes (c-1) max(slice, K/V hop) + slice
 * (schedule_cp.h's ring); ZeRO-2/3's unit collectives of the stages that
 * share a node are summed on its links.
 * Communication terms are scaled by OC_BOUND_COMM_SAFETY, a margin for
 * simulated flows that would beat the textbook hop: 1 since the eleventh
 * session (0.9 before; without it tools/check-bound.sh found no layout
 * below its bound in 7064 on h100-100g, and none on dgx-h100 but the one
 * below). The forced tree's own term (oc_bound_forced_coll_s) keeps
 * OC_BOUND_TREE_SAFETY = 0.9: on eight-NIC nodes a ZeRO-3 layout under
 * the forced tree with tp-pp-dp simulates faster than that term (ratio
 * 1.032 with the 0.9, 1.147 without: gpt3-1.3b tp2-pp4-dp2-mb1-v2 zero3
 * coll=tree order=tp-pp-dp on 16 dgx-h100, docs/benchmarks.md), an open
 * defect of the term, not of the simulator.
 * Not charged (the bound stays lower): latency, the tied-embedding
 * all-reduce, contention beyond the above. Knobs that are not modelled
 * fully are bounded by what is certain: context parallelism by compute
 * and TP terms on the rank's s/c tokens and the DP x CP tail (no K/V
 * ring), ZeRO-2/3's tail by the reduce-scatter of what surely comes
 * after the last backward (nothing without overlap: the layers'
 * reduce-scatters block inside it and are in the work; with overlap the
 * chunk's first layer's), without the weight all-gather.
 */
#ifndef OC_BOUND_H
#define OC_BOUND_H

#include "layout.h"
#include "model.h"
#include "topology.h"

#define OC_BOUND_COMM_SAFETY 1.0
#define OC_BOUND_TREE_SAFETY 0.9

struct oc_bound {
    double step_s;      /* the lower bound */
    double compute_s;   /* busiest stage's compute (with its TP terms) */
    double pipeline_s;  /* fill + drain on the critical stage */
    double tail_s;      /* DP, all-gather, optimizer after the last backward */
    int64_t stage;      /* the stage that gives step_s */
    double p2p_nic_s;   /* pipeline messages leaving nodes over all NICs;
                           step_s is at least this */
    double path_s;      /* the pipeline's critical path with its messages
                           and each stage's DP tail (bound.c); step_s is
                           at least this */
    double zero_link_s; /* ZeRO-2/3's per-micro-batch unit collectives of
                           the busiest stage on its DP links; step_s is
                           at least this */
};

/* The layout must have passed oc_layout_validate. */
void oc_bound_step(const struct oc_model *m, const struct oc_layout *l,
                   const struct oc_topology *t, struct oc_bound *out);

/* The same with the cost table of l built by the caller (oc_cost_init for
 * a layout with l's tp, cp, micro-batch, sequence, SP, recompute, attention
 * and precision: a sweep builds it once for the layouts that share them). */
struct oc_cost;
void oc_bound_step_cost(const struct oc_model *m, const struct oc_layout *l,
                        const struct oc_topology *t, const struct oc_cost *c,
                        struct oc_bound *out);

/* The bound of a DP-like collective (kind: 0 all-reduce, 1 reduce-scatter
 * or all-gather) of `bytes` over the `n` ranks of a group with `per_node`
 * members in each node, the node's NICs shared as among `groups_per_node`
 * groups (the groups leaving each node at once; more where they use only
 * some of its NICs, bound.c's nic_share) (exposed for the tests). */
double oc_bound_group_coll_s(const struct oc_topology *t, int kind, double bytes,
                             int64_t n, int64_t per_node, double groups_per_node);
/* The same under l's collective choice: at least oc_bound_group_coll_s,
 * and for coll=ring|tree on a group across nodes what that algorithm's
 * route carries over one flow between nodes (see above; bound.c). */
double oc_bound_forced_coll_s(const struct oc_layout *l, const struct oc_topology *t, int kind,
                              double bytes, int64_t n, int64_t per_node, double groups);

#endif
