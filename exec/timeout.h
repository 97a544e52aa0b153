/* timeout.h: ocsim-exec's communication timeout (the deadline of one wait:
 * ctl.h, cpu/comm_mpi.h, cuda/comm_nccl.h), chosen from the prediction
 * for --timeout auto, the default, or --timeout SECONDS as given.
 *
 *   struct oc_timeout t;
 *   oc_timeout_plan(&t, opts.exec.timeout_s, OC_EXEC_MAX_TIMEOUT_S, &model,
 *                   &layout, &topo, save, load);
 *   char why[512];
 *   oc_timeout_describe(&t, why, sizeof why);   // the line printed at start
 *   ... every wait: t.timeout_s ...
 *
 * What a wait can legitimately last. A rank waits in one op at most until
 * its peers reach the same point of the same step: a RECV until its sender
 * has computed what it sends (the last pipeline stage's first RECV waits
 * for the pipeline to fill), a collective until the slowest member of its
 * group arrives, the barrier before a step until the slowest rank has
 * finished the last one. Each of these ends within one step of its start
 * in a run that works, so one predicted step bounds the longest blocking
 * op of the layout: the closed form's step (core/closed_form.h,
 * oc_cf_step: the cost model's compute of every chunk, the bubble, the
 * TP, PP and DP collectives' closed forms on the topology), the same core
 * the simulator's fast estimates use. Between steps, a checkpoint (--save,
 * --load) makes the ranks wait for the slowest shard's write or read: its
 * bytes (12 per parameter held: fp32 weights and AdamW's two moments, of
 * the stage with the most parameters, core/memory.h) at
 * OC_TIMEOUT_CKPT_SAVE_S_PER_GB or OC_TIMEOUT_CKPT_LOAD_S_PER_GB.
 *
 * --timeout auto = the larger of OC_TIMEOUT_FLOOR_S and OC_TIMEOUT_FACTOR x
 * the longest predicted wait (the step or the checkpoint's), at most the
 * flag's bound (max_s).
 * - The factor, 10: the prediction is a closed form, no closer than a few
 *   times on a machine it was not calibrated for (tests/plan_run_compare.sh
 *   compares them), and a step on an oversubscribed CPU (several ranks per
 *   core, as the tests run) can take twice its usual time; ten times
 *   leaves room above both while a rank that hangs is still caught within
 *   about ten steps.
 * - The floor, 60 s: waits the prediction does not see (the start-up, the
 *   first step's warm-up, rank 0 writing the outputs and gathering
 *   weights.bin) and a cpu run against a GPU topology, predicted a thousand
 *   times too fast; 60 s was the fixed default before, so no run that
 *   passed then times out now, and a hang is still reported within a
 *   minute.
 *
 * What it is not: a timeout of the launcher (mpirun's) or a prediction for
 * --calibrate and --netbw (no step: they take the floor, or --timeout as
 * given).
 */
#ifndef OC_EXEC_TIMEOUT_H
#define OC_EXEC_TIMEOUT_H

#include <stddef.h>

#include "layout.h"
#include "model.h"
#include "topology.h"

#define OC_TIMEOUT_FACTOR 10.0
#define OC_TIMEOUT_FLOOR_S 60.0
/* A checkpoint shard written at 3 s per GB, read at 8 s/GB: the slowest
 * save and the cold load of docs/benchmarks.md (a save 1 to 3 s/GB, a load
 * 0.6 to 1.4 s/GB from the page cache, ~8 s/GB cold). */
#define OC_TIMEOUT_CKPT_SAVE_S_PER_GB 3.0
#define OC_TIMEOUT_CKPT_LOAD_S_PER_GB 8.0

struct oc_timeout {
    double timeout_s;  /* the deadline of one wait, > 0 */
    int automatic;     /* --timeout auto */
    int capped;        /* auto: the factor's value was above max_s */
    double step_s;     /* the closed form's step (0: not predicted) */
    double ckpt_s;     /* the slowest checkpoint shard's write or read (0: none) */
    double ckpt_bytes; /* that shard's bytes */
    int ckpt_load;     /* ckpt_s is a load's (else a save's) */
    char topology[128]; /* the topology predicted on */
};

/* given_s > 0: --timeout SECONDS, taken as is; 0: auto, at most max_s.
 * m, l, t NULL: nothing to predict (--calibrate, --netbw): the floor.
 * save, load: the run writes / reads checkpoints. */
void oc_timeout_plan(struct oc_timeout *to, double given_s, double max_s,
                     const struct oc_model *m, const struct oc_layout *l,
                     const struct oc_topology *t, int save, int load);
/* One line (without a newline): the value and why, e.g. "60 s per wait
 * (auto: the floor; 10 x the predicted step, 1.2 ms on h100-100g, is
 * less)". */
void oc_timeout_describe(const struct oc_timeout *to, char *buf, size_t n);

#endif
