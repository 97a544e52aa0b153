/* plot_variability.h: the plot of `ocsim sweep --variability`
 * (tools/sweep_var.c): for each re-run layout, in the order of its mean
 * tokens/s under the noise, the ideal step (no noise), the mean step and
 * the p50-p99 range of the sampled steps, in seconds.
 *
 *   struct oc_var_plot_row rows[5];  ...fill...
 *   int rc = oc_plot_variability("out/sweep", rows, 5, "title", NULL, &st);
 *   // rc as oc_plot_sweep's (plots.h): 0 images, 1 scripts only (warning), -1 error
 *
 * Writes DIR/variability.gp and DIR/variability.dat, then renders
 * variability.png and variability.svg with gnuplot (oc_plot_render).
 */
#ifndef OC_PLOT_VARIABILITY_H
#define OC_PLOT_VARIABILITY_H

#include <stdint.h>

#include "plots.h"
#include "status.h"

struct oc_var_plot_row {
    char label[160];              /* the layout */
    double ideal_s, mean_s, p50_s, p99_s;
};

int oc_plot_variability(const char *dir, const struct oc_var_plot_row *rows, int64_t n,
                        const char *title, const struct oc_plot_opts *o,
                        struct oc_status *st);

#endif
