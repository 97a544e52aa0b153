/* stage_split.h: how the layers of a model are split over the pipeline
 * stages when they need not be split evenly (Megatron-LM
 * --decoder-first-pipeline-num-layers, --decoder-last-pipeline-num-layers;
 * layout.h's first_stage_layers and last_stage_layers, placement.h for
 * which layers each stage then holds).
 *
 *   int64_t f[OC_SPLIT_MAX], e[OC_SPLIT_MAX];
 *   int n = oc_stage_split_options_on(&model, &layout, &topo, f, e, OC_SPLIT_MAX);
 *   for (int i = 0; i < n; i++) {
 *       lay.first_stage_layers = f[i]; lay.last_stage_layers = e[i]; ...
 *   }
 *
 * The options, in this order, each at most once (two that give every
 * stage the same layers are one; a split that gives every stage L/p
 * layers is written (0, 0)):
 *   1. the even split (0, 0), when L divides into p*v chunks;
 *   2. "cost": the split that equalises stage time. Stage i's time per
 *      micro-batch is n_i * layer + (embedding on stage 0) + (LM head and
 *      loss on stage p-1), from the cost model's per-part seconds
 *      (cost.h: ATTN + MLP forward, backward and recompute for a layer,
 *      EMBED and HEAD forward + backward); the pipeline runs at the pace of
 *      the slowest stage (closed_form.h), so the split minimises
 *      max_i time_i. Under the device's memory (topology given): the
 *      fastest split whose peak (memory.h, oc_memory_peak) fits; none
 *      when no split fits (option 4 is then the one closest to fitting);
 *   3. "embed": Megatron-LM's --account-for-embedding-in-pipeline-split
 *      with --account-for-loss-in-pipeline-split: the embedding and the LM
 *      head (with the loss) each count as one layer in the balance, so
 *      with (L + 2) % p == 0 every stage holds (L+2)/p units, the first
 *      and last (L+2)/p - 1 layers; otherwise the split minimising the most
 *      units of a stage;
 *   4. "memory": the split with the lowest peak memory of any stage (the
 *      first stage keeps the most micro-batches in flight under 1F1B, the
 *      last the logits); given only without a topology or when no split
 *      fits the device (where option 2 fits, a split of less memory is
 *      only slower).
 * Ties in each objective go to the flatter split (the smallest sum of
 * squared stage loads), then the lower peak memory, then the fewer layers
 * on the first stage. Every option passes oc_place_check_split (each stage
 * at least one layer, the middle stages equal, multiples of v).
 *
 * Without a topology (oc_stage_split_options) the cost option weighs the
 * layer and the head by their FLOPs (model.h: the head's 2*b*s*h*V against
 * the layer's forward FLOPs, the embedding none) and no memory limit
 * applies.
 *
 * What it is not: a judge of whether a layout fits or how fast it runs
 * (memory.h, the simulator), nor the rule of which splits are legal
 * (placement.h).
 */
#ifndef OC_STAGE_SPLIT_H
#define OC_STAGE_SPLIT_H

#include <stdint.h>

#include "layout.h"
#include "model.h"
#include "topology.h"

/* The most options oc_stage_split_options writes. */
#define OC_SPLIT_MAX 4

/* Uneven splits are looked for up to this many layers (the largest
 * published dense models have about 130); beyond, only the even split. */
#define OC_SPLIT_MAX_LAYERS 1024

/* The splits of m's layers over l's pipeline worth trying for layout l
 * (its tp, pp, v, batch, sequence and knobs set; its first/last ignored):
 * writes up to cap (first, last) pairs into first[] and last[] in the
 * order above (those after the cap-th are not searched: cap 1 is the
 * cheapest way to the first). Returns how many (0: none, for example PP 1 with L not
 * divisible, which cannot happen, or more stages than layers). t may be
 * NULL (FLOP weights, no memory limit). */
int oc_stage_split_options_on(const struct oc_model *m, const struct oc_layout *l,
                              const struct oc_topology *t, int64_t first[],
                              int64_t last[], int cap);
/* Node groups (topology.h): the group, of those the ranks of stages
 * [first, end) land on, whose weight w[group] is the largest (w: a
 * layer's time on each group's device; the slowest device, whose pace the
 * stage keeps). With node groups the cost option above weighs the first,
 * the middle and the last stage each by its slowest device's layer time
 * (the embedding by stage 0's, the head by stage p-1's), so a stage on a
 * slower device gets fewer layers; its memory limit stays the composite's
 * (the smallest device memory). */
int oc_stage_group_slowest(const struct oc_topology *t, const struct oc_layout *l,
                           const double w[], int64_t first, int64_t end);
/* oc_stage_split_options_on without a topology. */
int oc_stage_split_options(const struct oc_model *m, const struct oc_layout *l,
                           int64_t first[], int64_t last[], int cap);

#endif
