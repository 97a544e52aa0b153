/* sweep_scaling.h: `ocsim sweep` over several card counts (--cards LIST
 * or RANGE; cli/options.h): one complete sweep per count into
 * DIR/cards-<N>/, then DIR/scaling.csv, DIR/scaling.md and the plot
 * DIR/scaling.{gp,dat,png,svg} (reports/scaling.h).
 *
 *   struct oc_sweep_outcome oc;
 *   int rc = oc_sweep_one(&o, &ro, argc, argv, "out/sweep/cards-64", &oc);
 *   if (oc.have_best) ...oc.best is the chosen layout's metrics...
 *
 * oc_sweep_one is the whole of a single-count `ocsim sweep` (tools/
 * cmd_sweep.c), for o->cards cards into `out`; a single --cards N runs
 * exactly it. oc_sweep_scaling (tools/cmd_sweep_scaling.c) loops it. */
#ifndef OC_SWEEP_SCALING_H
#define OC_SWEEP_SCALING_H

#include "metrics.h"
#include "options.h"
#include "perturb.h"
#include "replay.h"

struct oc_sweep_outcome {
    int have_best;                 /* a layout fits: best is the chosen one */
    struct oc_metrics best;
    int have_confidence;           /* --robustness > 0 and a layout fits */
    struct oc_perturb_result confidence;
    int64_t candidates, simulated, fitting;
};

/* One sweep of o->cards cards into out. Returns the command's exit code
 * (0, 1: failures or nothing fits, 2: bad input or a file, 130: stopped
 * by a signal); *oc is filled in every case. */
int oc_sweep_one(const struct oc_opts *o, const struct oc_replay_opts *ro, int argc,
                 char **argv, const char *out, struct oc_sweep_outcome *oc);
/* Every count of o->cards_list, then the scaling table and plot. */
int oc_sweep_scaling(struct oc_opts *o, const struct oc_replay_opts *ro, int argc,
                     char **argv);

#endif
