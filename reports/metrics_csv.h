/* metrics_csv.h: the one CSV schema of a step's metrics, shared by
 * sweep.csv, simulate.csv and the executor's measured.csv.
 *
 *   struct oc_csv c;
 *   oc_metrics_csv_open(&c, "out/sweep.csv", &st);
 *   oc_metrics_csv_row(&c, &mt, "");          // one row per layout
 *   oc_metrics_csv_row_rejected(&c, &layout, "out of memory: ...");
 *   oc_csv_close(&c, &st);
 */
#ifndef OC_METRICS_CSV_H
#define OC_METRICS_CSV_H

#include "csv_table.h"
#include "metrics.h"

extern const char *const oc_metrics_csv_cols[];
extern const int oc_metrics_csv_ncols;

int oc_metrics_csv_open(struct oc_csv *c, const char *path, struct oc_status *st);
void oc_metrics_csv_row(struct oc_csv *c, const struct oc_metrics *mt,
                        const char *reason);
/* A layout that was not simulated: its knobs, fits = 0 and why. Memory
 * columns hold the closed-form peak when known (peak_mem_bytes >= 0). */
void oc_metrics_csv_row_rejected(struct oc_csv *c, const struct oc_layout *l,
                                 double peak_mem_bytes, double device_mem_bytes,
                                 const char *reason);

/* sweep.csv: the columns above, then "layout" (oc_layout_format's label,
 * every knob: pastes into `ocsim simulate --layout`) and "bound_s" (the
 * closed-form lower bound of the step, core/bound.h; empty when not
 * computed: illegal, out of memory). */
int oc_metrics_csv_open_sweep(struct oc_csv *c, const char *path, struct oc_status *st);
/* label: the layout's oc_layout_format label when the caller has it,
 * NULL: formatted here. */
void oc_sweep_csv_row(struct oc_csv *c, const struct oc_metrics *mt, const char *reason,
                      double bound_s, const char *label);
void oc_sweep_csv_row_rejected(struct oc_csv *c, const struct oc_layout *l,
                               double peak_mem_bytes, double device_mem_bytes,
                               const char *reason, double bound_s, const char *label);

#endif
