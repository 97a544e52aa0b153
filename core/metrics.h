/* metrics.h: what a step of one layout costs, predicted (sim/) or measured
 * (exec/). One struct, one CSV schema (reports/metrics_csv.h), so one compare
 * tool and one set of plots serve both.
 *
 *   struct oc_metrics mt;
 *   oc_metrics_init(&mt, &layout);
 *   ...fill per-stage and per-rank figures...
 *   oc_metrics_finish(&mt, &model, &topo);   // tokens/s, TFLOP/s, MFU, fits
 *
 * Definitions (per training step; "per rank" figures are means over ranks,
 * per stage figures means over the ranks of the stage):
 *   step_time_s      wall time of the step: from the first op of any rank to
 *                    the end of the last optimizer step.
 *   compute_s        time a rank spends in COMPUTE ops.
 *   bubble_s         time a rank waits for a pipeline neighbour (a RECV
 *                    posted before its data was sent) plus the time it idles
 *                    at the end of the step while other ranks still work.
 *                    bubble_fraction = bubble_s / step_time_s.
 *   tp/pp/dp_comm_s  time a rank's TP collectives, pipeline transfers, DP
 *                    (and embedding) collectives take, whether or not they
 *                    overlap compute.
 *   exposed_comm_s   time a rank is blocked in communication that is not
 *                    pipeline waiting: blocking collectives, the transfer part
 *                    of RECVs, and the final WAIT for async collectives.
 *   peak_mem_bytes   the largest running sum of a rank's ALLOC/FREE events.
 * MFU follows Chowdhery et al. 2022 (PaLM, appendix B): model FLOPs per
 * step (oc_cf_model_flops_per_step, no recompute) / (step time x GPUs x peak).
 */
#ifndef OC_METRICS_H
#define OC_METRICS_H

#include <stdint.h>

#include "layout.h"
#include "model.h"
#include "topology.h"

#define OC_MAX_STAGES 1024

struct oc_stage_metrics {
    double compute_s;
    double bubble_s;
    double tp_comm_s, pp_comm_s, dp_comm_s;
    double exposed_comm_s;
    double peak_mem_bytes;
};

struct oc_metrics {
    struct oc_layout layout;
    int64_t num_micro_batches;
    double step_time_s;
    double tokens_per_s;
    double tflops_per_gpu;  /* model TFLOP/s per GPU */
    double mfu;
    double bubble_fraction; /* mean over stages */
    double compute_s;       /* means over ranks */
    double tp_comm_s, pp_comm_s, dp_comm_s;
    double exposed_comm_s;
    double peak_mem_bytes;  /* max over ranks */
    int64_t peak_mem_stage;
    double device_mem_bytes;
    int fits;
    int64_t nstages;
    struct oc_stage_metrics stage[OC_MAX_STAGES];
};

void oc_metrics_init(struct oc_metrics *mt, const struct oc_layout *l);
/* From step_time_s and the stage figures: the means over stages, tokens/s,
 * TFLOP/s per GPU, MFU, the memory peak and whether it fits the device. */
void oc_metrics_finish(struct oc_metrics *mt, const struct oc_model *m,
                       const struct oc_topology *t);

#endif
