/* mbsplit.h: unequal micro-batch counts per DP replica (ocsim's knob;
 * Megatron-LM has none).
 *
 *   struct oc_layout l = ...;                      // tp8-pp1-dp2, G = 16
 *   oc_mbs_parse(&l, "12/4", &st);                  // replica 0: 12, 1: 4
 *   oc_mbs_check(&l, &st);                          // 12 + 4 = G / b
 *   int64_t m1 = oc_mbs_replica(&l, 1);             // 4
 *   oc_mbs_speed(&l, &model, &topo, &st);           // or: by device speed
 *
 * On node groups of unlike devices (topology.h) DP replicas may run at
 * different speeds. With every replica taking G/(d*b) micro-batches the
 * fast replicas wait for the slowest at the gradient reduction; with
 * replica r taking m_r micro-batches (sum of m_r * b = G) they finish
 * together. The gradient is then a sum over m_r micro-batches per
 * replica: the loss of each micro-batch must be normalised by the step's
 * total tokens (not by each replica's own), so that the all-reduced
 * gradient is the same mean as the even split's. ocsim-exec does not run
 * it (it refuses the knob); the simulator charges the compute and the
 * pipeline of each replica's own m_r.
 *
 * Layout label part: "mbs=" followed by the counts of replicas 0..d-1
 * joined by '/', a run of k equal counts written "<m>x<k>"
 * ("mbs=12x2/4x2" is 12, 12, 4, 4). No part: the even split.
 *
 * Rules (oc_mbs_check, called by oc_layout_validate): exactly d counts,
 * each at least 1 (interleaved: a multiple of PP, Megatron-LM's rule per
 * replica), summing to G / b; not all equal (that is the even split,
 * written without the part); at most OC_MBS_MAX_RUNS runs of equal
 * counts (layout.h: the runs are what a layout holds; the label stays
 * short); not with ZeRO-2/3
 * (their per-micro-batch DP collectives need one count on every replica).
 *
 * The speed split (oc_mbs_speed): replica r's period is its slowest
 * stage's forward + backward (+ recompute) of one micro-batch on its own
 * devices (core/cost.c's table of each rank's group, as the replay
 * charges it; the 1F1B steady state runs one micro-batch per period,
 * Narayanan et al. 2021, section 2.2); m_r proportional to 1 / period,
 * rounded by the largest-remainder method (Hamilton's) so the sum is
 * exact, each at least its floor (1, or PP interleaved). The fill and
 * drain ((p-1) periods, the same order on every replica) are left out:
 * the split balances the steady state.
 */
#ifndef OC_MBSPLIT_H
#define OC_MBSPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "model.h"
#include "status.h"
#include "topology.h"


/* 1 when l names an unequal split (l->mbs[0].len > 0). */
int oc_mbs_on(const struct oc_layout *l);
/* Micro-batches replica `dp` runs: its count, or G/(d*b) when even. */
int64_t oc_mbs_replica(const struct oc_layout *l, int64_t dp);
/* The fewest any replica runs (G/(d*b) when even). */
int64_t oc_mbs_min(const struct oc_layout *l);
/* The most (oc_layout_num_micro_batches returns it). */
int64_t oc_mbs_max(const struct oc_layout *l);

/* The distinct counts of the replicas into counts[] (OC_MBS_MAX_RUNS), in
 * replica order of first appearance; returns how many (1 when even:
 * G/(d*b)). oc_mbs_count_index: the index in counts[0..nc) of replica
 * dp's count. core/schedule.c builds each stage's unit order once per
 * count. */
int oc_mbs_distinct(const struct oc_layout *l, int64_t *counts);
int oc_mbs_count_index(const struct oc_layout *l, const int64_t *counts, int nc,
                       int64_t dp);

/* Reads "12/4" or "12x2/4x2" (the text after "mbs=") into l->mbs; the
 * count of entries is checked against dp by oc_mbs_check. -1 with one
 * line naming the entry not understood. "even" clears the split. */
int oc_mbs_parse(struct oc_layout *l, const char *list, struct oc_status *st);
/* Writes "12x2/4x2" (the counts, runs compressed); "" when even. */
void oc_mbs_format(const struct oc_layout *l, char *buf, size_t n);
/* The rules above; one line naming the first broken. 0 when even. */
int oc_mbs_check(const struct oc_layout *l, struct oc_status *st);

/* Largest-remainder apportionment (Hamilton's method): out[i] =
 * total * w[i] / sum(w) in units of `step`, whole parts first, the units
 * left to the largest remainders (ties to the lower index), so that
 * sum(out) = total; a share below one unit is raised to one, taken from
 * the largest. -1 when total is not a multiple of step or below n*step,
 * or a weight is not positive. */
int oc_mbs_apportion(const double *w, int64_t n, int64_t total, int64_t step,
                     int64_t *out);

/* Each DP replica's seconds of one micro-batch through its slowest stage
 * on its own devices (the description above) into period_s[0..d-1]. */
void oc_mbs_periods(const struct oc_model *m, const struct oc_layout *l,
                    const struct oc_topology *t, double *period_s);

/* Sets l->mbs to the speed split (the even split when every replica's
 * period is the same, or when the apportionment gives every replica the
 * same count). -1 with one line under ZeRO-2/3, past OC_MBS_MAX_RUNS runs, or
 * when the micro-batches cannot give every replica its floor. */
int oc_mbs_speed(struct oc_layout *l, const struct oc_model *m,
                 const struct oc_topology *t, struct oc_status *st);

#endif
