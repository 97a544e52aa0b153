/* sweep_mbs.h: the sweep's search of unequal micro-batch counts per DP
 * replica on node groups (core/mbsplit.h; tools/sweep_mbs.c says why it
 * is a pass after the sweep's and what it does not search).
 *
 *   struct oc_sweep_mbs mb;
 *   oc_sweep_mbs_pass(&r, &o, &so, &mb, &st);   // before the ranked table
 *   ...
 *   oc_sweep_mbs_report(&mb, &x.res[0], out);   // after report.md
 *
 * The pass simulates the speed split of the sweep's fastest fitting
 * layouts whose replicas differ in speed and adds each as an item of its
 * own (so the ranking, sweep.csv and the chosen layout include them);
 * nothing without node groups or under --dp-micro-batch-split even. The
 * report prints "speed-weighted micro-batches: <gain>x over even (...)"
 * and, with a folder, writes mbsplit.csv and a report.md section.
 */
#ifndef OC_SWEEP_MBS_H
#define OC_SWEEP_MBS_H

#include "metrics.h"
#include "options.h"
#include "sweep.h"
#include "sweep_run.h"

/* The fitting layouts whose speed split is simulated, at most. */
#define OC_SWEEP_MBS_TOP 8

struct oc_sweep_mbs_pair {
    struct oc_layout even, speed;
    double even_s, speed_s; /* simulated steps */
    int speed_fits;
};

struct oc_sweep_mbs {
    int n;
    struct oc_sweep_mbs_pair pair[OC_SWEEP_MBS_TOP];
};

/* Returns oc_sweep_run's code (0, 1 stopped, -1 with st). */
int oc_sweep_mbs_pass(struct run *r, const struct oc_opts *o, const struct oc_sweep_opts *so,
                      struct oc_sweep_mbs *out, struct oc_status *st);
void oc_sweep_mbs_report(const struct oc_sweep_mbs *m, const struct oc_metrics *chosen,
                         const char *dir);

#endif
