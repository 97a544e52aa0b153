/* plot_goodput.h: the goodput plot of `ocsim goodput` (tools/cmd_goodput.c):
 * the fraction of wall time kept as useful work against the checkpoint
 * interval, the closed form (core/goodput.h, Daly 2006) as a line and the
 * seeded simulation's mean with its p5-p95 band as points, the interval
 * asked for and the best one marked.
 *
 *   struct oc_goodput_point pts[40];  ...fill...
 *   int rc = oc_plot_goodput("out/goodput", pts, 40, 1800, 1210, "title", NULL, &st);
 *   // rc as oc_plot_sweep's (plots.h): 0 images, 1 scripts only (warning), -1 error
 *
 * Writes DIR/goodput.gp and DIR/goodput.dat, then renders goodput.png and
 * goodput.svg with gnuplot (plots.h's oc_plot_render).
 */
#ifndef OC_PLOT_GOODPUT_H
#define OC_PLOT_GOODPUT_H

#include <stdint.h>

#include "plots.h"
#include "status.h"

struct oc_goodput_point {
    double interval_s;        /* tau, compute between saves */
    double expected;          /* closed form, fraction */
    double mean, p5, p95;     /* simulated, fractions */
};

int oc_plot_goodput(const char *dir, const struct oc_goodput_point *pts, int64_t n,
                    double asked_s, double best_s, const char *title,
                    const struct oc_plot_opts *o, struct oc_status *st);

#endif
