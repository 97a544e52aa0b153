/* plot_groups.h: groups.{dat,gp,png,svg}, the step time of a sweep's best
 * layouts on a cluster of node groups beside the same layouts on one node
 * type (tools/sweep_groups.c fills the numbers).
 *
 *   oc_plot_groups("out/sweep", "llama2-70b ...", "mixed-h100-a100",
 *                  "all H100 SXM5 80GB", res, n, step_one_kind, &st);
 *
 * What it is not: the simulations behind it.
 */
#ifndef OC_PLOT_GROUPS_H
#define OC_PLOT_GROUPS_H

#include <stdint.h>

#include "metrics.h"
#include "status.h"

/* Bars of res[i].step_time_s (titled `mixed`) and one_kind[i] (titled
 * `one`) for i < n, the layout names under them. 0; 1 with st->msg when
 * gnuplot did not draw (data and script kept); -1 when a file could not
 * be written. */
int oc_plot_groups(const char *dir, const char *title, const char *mixed, const char *one,
                   const struct oc_metrics *res, int n, const double *one_kind,
                   struct oc_status *st);

#endif
