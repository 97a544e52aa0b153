/* out_measured.h: what ocsim-exec measured, in the simulator's schemas.
 * After every step each rank sends its op times of that step to rank 0,
 * which measures the step (oc_runner_step_metrics) and adds it to the
 * mean; so neither a rank nor rank 0 keeps more than one step of times,
 * whatever --steps is (rank 0: one step of every rank's). After the last
 * step the memory peaks are gathered and rank 0 writes
 *   measured.csv  the columns of simulate.csv (reports/metrics_csv.h), the
 *                 mean of the steps after the first (all of them with one
 *                 step)
 *   ops.csv       every op of every rank in the last step (reports/ops_csv.h)
 *   memory.csv    rank,buf,high_water_bytes: the bytes each rank allocated,
 *                 by buffer kind, at their peak (and the total)
 *   timeline.json the last step as a Chrome trace (reports/timeline_json.h)
 * into the job's folder and prints the metrics. ops.csv and timeline.json
 * hold the last step only, however long the run: the mean over steps is
 * measured.csv's, and a step's op times are all the simulator's schemas
 * have room for.
 *
 *   struct oc_out_steps a;
 *   oc_out_steps_init(&a, &job.sched, steps, ctl.rank);
 *   for (...each step...) {
 *       oc_runner_step(&runner, k, &st);
 *       if (oc_out_steps_add(&ctl, &a, &runner, &st) != 0) ...
 *   }
 *   if (oc_out_measured(&ctl, &job, &a, &runner, b.ops->mem_peak_bytes(&b), &st) != 0)
 *       ...a failed exchange or file...
 *   oc_out_steps_free(&a);
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

/* The run's measurement so far (the buffers on rank 0 only). */
struct oc_out_steps {
    const struct oc_schedule *s;
    int64_t steps;           /* steps the run will measure */
    int64_t seen;            /* steps added */
    int rank;
    double *all;             /* (3 * n_q per rank q): the latest step's times */
    int64_t *displs;         /* rank q's at all + displs[q] */
    double **S, **E, **In;   /* rank q's start, end (SENDs: arrivals) and
                                inner times of the latest step */
    struct oc_metrics *mt;   /* the mean so far */
    struct oc_metrics *one;  /* the latest step's */
};

void oc_out_steps_init(struct oc_out_steps *a, const struct oc_schedule *s, int64_t steps,
                       int rank);
/* Collective over the ctl's ranks, after each step: its op times to rank
 * 0, which adds the step to the mean. */
int oc_out_steps_add(struct oc_ctl *c, struct oc_out_steps *a, const struct oc_runner *r,
                     struct oc_status *st);
void oc_out_steps_free(struct oc_out_steps *a);

/* Collective, after the last step: the memory peaks to rank 0, which
 * writes the files. device_peak_bytes: the backend's device high-water
 * mark (> 0 replaces the executor's own total in memory.csv and the
 * printed peak), 0 where not measured. */
int oc_out_measured(struct oc_ctl *c, const struct oc_exec_job *j, struct oc_out_steps *a,
                    const struct oc_runner *r, double device_peak_bytes,
                    struct oc_status *st);

#endif
