/* var_sample.h: N sampled steps of one layout under stragglers and jitter
 * (core/variability.h), one replay each in a forked child
 * (oc_replay_run_forked), and the ideal step: what `ocsim simulate
 * --variability` runs, and what a sweep ranking by expected throughput
 * under variability would call for its best layouts.
 *
 *   double ideal, *x = malloc(n * sizeof *x);
 *   if (oc_var_sample(&m, &t, &l, &ro, &v, n, 60.0, &ideal, x, &st) != 0) ...
 *   struct oc_var_stats s;  oc_var_stats(x, n, &s);
 *
 * What it is not: the noise (sim/replay_var.c) or its statistics
 * (core/variability.h).
 */
#ifndef OC_VAR_SAMPLE_H
#define OC_VAR_SAMPLE_H

#include "replay.h"
#include "variability.h"

/* The ideal step (*ideal_s: the same replay with every CV 0 and no slow
 * device, so the same fidelity without the fold, replay.h) and steps
 * 0..n-1 under v into step_s[0..n-1]. ro: the replay options (its var and
 * var_step are set here). wall_limit_s > 0 bounds each replay. *mt_ideal
 * (may be NULL) gets the ideal replay's metrics. Returns 0, or -1 with
 * st->msg (the failing step named). */
int oc_var_sample(const struct oc_model *m, const struct oc_topology *t,
                  const struct oc_layout *l, const struct oc_replay_opts *ro,
                  const struct oc_variability *v, int64_t n, double wall_limit_s,
                  double *ideal_s, double *step_s, struct oc_metrics *mt_ideal,
                  struct oc_status *st);

#endif
