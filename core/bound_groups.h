/* bound_groups.h: a lower bound of the step on node groups of unlike
 * devices (topology.h), beside core/bound.h's.
 *
 *   double lo = oc_bound_groups_s(&model, &layout, &topo);  // 0 without groups
 *   bound = fmax(bound_of_the_composite, lo);
 *
 * core/bound.c reads the topology's composite device (the groups' most
 * favourable, topology_groups.c), which keeps it below the simulation but
 * far below it where half the ranks are slower. This one is each rank's
 * own compute on its own device: every micro-batch's forward, backward and
 * recompute of its stage's layers (under rfull<k> the first k of each
 * chunk), plus the embedding on stage 0 and the head on stage p-1, from
 * core/cost.c's table of that device (the table the replay charges,
 * sim/replay_setup.c); before its first unit the chunk-0 forward of
 * micro-batch 0 on each earlier stage of its replica, after its last
 * backward their chunk-0 backward (the fill and drain, Narayanan et al.
 * 2021, section 2.2), at their ranks' devices. Optimizer, communication
 * and the bubble inside the steady state left out (so it stays below),
 * times 0.999 for the order of floating-point sums. The step is at least
 * the longest rank's. Under an unequal micro-batch split (mbsplit.h) each
 * rank counts its own replica's micro-batches.
 *
 * What it is not: a bound of a uniform cluster (0 there: bound.h's is).
 */
#ifndef OC_BOUND_GROUPS_H
#define OC_BOUND_GROUPS_H

#include "layout.h"
#include "model.h"
#include "topology.h"

double oc_bound_groups_s(const struct oc_model *m, const struct oc_layout *l,
                         const struct oc_topology *t);

/* The compute of one micro-batch of each stage on each group's device, as
 * the bound counts it (forward, backward, recompute, the embedding and the
 * head where the stage holds them): out[g * pp + i] for group g (one
 * group, the topology's own device, without groups) and stage i; out
 * holds max(n_groups, 1) * pp. mbsplit.h's speed split reads it. */
void oc_bound_groups_stage_mb_s(const struct oc_model *m, const struct oc_layout *l,
                                const struct oc_topology *t, double *out);

#endif
