/* sweep_var.h: `ocsim sweep --variability SPEC` (issue 14 item 2): the
 * best fitting layouts of the sweep, ranked by their ideal step, are run
 * again under stragglers and jitter (core/variability.h; --steps sampled
 * steps each, sim/var_sample.h, the replays `ocsim simulate --variability`
 * runs) and ranked by their mean tokens/s under the noise. A layout with
 * fewer synchronisation points (fewer pipeline stages, fewer collectives
 * on the critical path) loses less to the slowest member of each one, so
 * the order can change: the sweep then says which layout it would choose
 * under the noise and what that costs in the ideal case.
 *
 *   struct oc_variability v;
 *   if (oc_sweep_var_check(&o, &v, &st) != 0) ...one line, exit 2...
 *   ... the sweep, its ranked fitting results res[0..n) ...
 *   rc = oc_sweep_var_run(&o, &ro, &v, res, n, "out/sweep");
 *
 * Writes DIR/variability.csv (one row per re-run layout, in the new
 * order), DIR/variability.png/.svg (plot_variability.h) and appends a
 * section to DIR/report.md.
 */
#ifndef OC_SWEEP_VAR_H
#define OC_SWEEP_VAR_H

#include <stdint.h>

#include "metrics.h"
#include "options.h"
#include "replay.h"
#include "variability.h"

/* Sampled steps per layout when --steps is not given: 20 (a sweep re-runs
 * several layouts; `ocsim simulate --variability` takes 100 for one). */
#define OC_SWEEP_VAR_STEPS 20

/* The flags (before the sweep runs): 0 with *v parsed and seeded, or -1
 * and one line (--steps or --variability-top without --variability,
 * --variability with several card counts). */
int oc_sweep_var_check(const struct oc_opts *o, struct oc_variability *v,
                       struct oc_status *st);

/* res[0..n): the sweep's results in rank order (the fitting ones first).
 * Re-runs the first min(o->var_top, fitting) under v, prints the table and
 * the choice under the noise, writes the files into out (NULL: stdout
 * only). Returns 0, or 2 with one line on stderr. */
int oc_sweep_var_run(const struct oc_opts *o, const struct oc_replay_opts *ro,
                     const struct oc_variability *v, const struct oc_metrics *res, int64_t n,
                     const char *out);

#endif
