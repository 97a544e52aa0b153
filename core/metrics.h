/* metrics.h: what a step of one layout costs, predicted (sim/) or measured
 * (exec/). One struct, one CSV schema (reports/metrics_csv.h), so one compare
 * tool and one set of plots serve both.
 *
 *   struct oc_metrics mt;
 *   oc_metrics_init(&mt, &layout);
 *   oc_step_metrics(&timeline, &mt);         // step_metrics.h
 *   oc_metrics_finish(&mt, &model, &topo);   // tokens/s, TFLOP/s, MFU, fits
 *
 * The figures of a step (step time, compute, bubble, TP / PP / DP and
 * exposed communication, peak memory; per stage, with per-rank means) are
 * defined once, from a timeline of op intervals, in step_metrics.h
 * (oc_step_metrics), for the simulator and the executor alike. In short:
 * bubble is pipeline wait (a RECV's time before its data was sent) plus
 * end-of-step idle; exposed communication is the rest of the time a rank
 * is blocked in communication; tp/pp/dp_comm_s count a class's time
 * whether or not it overlaps compute. bubble_fraction = mean bubble_s over
 * stages / step_time_s.
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
    double cp_comm_s; /* context-parallel ring transfers (schedule_cp.h) */
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
    double cp_comm_s; /* context-parallel ring transfers (schedule_cp.h) */
    double exposed_comm_s;
    double peak_mem_bytes;  /* max over ranks */
    int64_t peak_mem_stage;
    double device_mem_bytes;
    double reserve_bytes;   /* core/reserve.h: context, NCCL, cuBLAS, fragmentation */
    int fits;               /* peak_mem_bytes + reserve_bytes <= device_mem_bytes */
    int64_t nstages;
    struct oc_stage_metrics stage[OC_MAX_STAGES];
    /* Simulated under the automatic collective choice: the forced choices
     * (bit 1 << enum oc_coll_choice) whose replay would have been this one,
     * decision for decision (sim/coll.h); 0 otherwise or unknown. */
    unsigned coll_same;
    /* Simulated: the micro-batches the simulation ran (fewer than
     * num_micro_batches where sim/replay_steady.c folded the steady
     * state); 0 otherwise. */
    int64_t sim_micro_batches;
};

void oc_metrics_init(struct oc_metrics *mt, const struct oc_layout *l);
/* From step_time_s and the stage figures: the means over stages, tokens/s,
 * TFLOP/s per GPU, MFU, the memory peak, the reserve (core/reserve.h, from
 * t->reserve) and whether peak and reserve fit the device. */
void oc_metrics_finish(struct oc_metrics *mt, const struct oc_model *m,
                       const struct oc_topology *t);

#endif
