/* out_measured.h: what ocsim-exec measured, in the simulator's schemas:
 * every rank's op times of every step and memory peaks gathered to rank 0
 * over the control plane, which writes
 *   measured.csv  the columns of simulate.csv (reports/metrics_csv.h), the
 *                 mean of the steps after the first (oc_runner_step_metrics)
 *   ops.csv       every op of every rank in the last step (reports/ops_csv.h)
 *   memory.csv    rank,buf,high_water_bytes: the bytes each rank allocated,
 *                 by buffer kind, at their peak (and the total)
 *   timeline.json the last step as a Chrome trace (reports/timeline_json.h)
 * into the job's folder and prints the metrics.
 *
 *   if (oc_out_measured(&ctl, &job, &runner, b.ops->mem_peak_bytes(&b), &st) != 0)
 *       ...a failed exchange or file...
 *
 * What it is not: the metrics' definition (core/step_metrics.h, through
 * the runner) or the weights (out_weights.h).
 */
#ifndef OC_EXEC_OUT_MEASURED_H
#define OC_EXEC_OUT_MEASURED_H

#include "ctl.h"
#include "job.h"
#include "runner.h"
#include "status.h"

/* Collective over the ctl's ranks. device_peak_bytes: the backend's device
 * high-water mark (> 0 replaces the executor's own total in memory.csv and
 * the printed peak), 0 where not measured. */
int oc_out_measured(struct oc_ctl *c, const struct oc_exec_job *j, const struct oc_runner *r,
                    double device_peak_bytes, struct oc_status *st);

#endif
