/* metrics_print.h: the parts of a step's metrics that `ocsim simulate` and
 * `ocsim-exec` print alike, in fixed-width text with SI units.
 *
 *   printf("  step time        %s\n", ...);          // each caller's own lines
 *   oc_metrics_print_time_split(stdout, &mt);        // bubble, compute, comm
 *   ...peak memory line...
 *   oc_metrics_print_stages(stdout, &mt);            // one row per stage
 */
#ifndef OC_METRICS_PRINT_H
#define OC_METRICS_PRINT_H

#include <stdio.h>

#include "metrics.h"

/* The bubble, compute and communication lines. */
void oc_metrics_print_time_split(FILE *f, const struct oc_metrics *mt);
/* The per-stage table: compute, bubble, TP/PP/DP, exposed, peak memory. */
void oc_metrics_print_stages(FILE *f, const struct oc_metrics *mt);

#endif
