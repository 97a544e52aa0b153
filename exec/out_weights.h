/* out_weights.h: the weights after the last step: weights.bin (the whole
 * model, written by rank 0 from the shards of the DP-rank-0 replica, with
 * weights.txt saying its layout) and the checks that copies which must be
 * equal are bitwise equal (every DP replica, the TP replicas of a
 * replicated tensor, the two copies of a tied embedding).
 *
 *   int64_t dp_differ, differ;  double maxdiff;
 *   oc_out_dp_replicas(&ctl, &layout, &runner, w, &dp_differ, &st);
 *   oc_out_weights(&ctl, &job, &runner, w, &differ, &maxdiff, &st);
 *
 * weights.bin: "OCSIMWT1", int64 tensor count, per tensor {char name[16];
 * int64 layer, rows, cols}, then every tensor's fp32 values in that order
 * (the arena of a one-rank run: wte, wpe, layer 0..L-1, lnf, lmw if
 * untied). Host byte order. exec/weights_diff.c compares two of them.
 */
#ifndef OC_EXEC_OUT_WEIGHTS_H
#define OC_EXEC_OUT_WEIGHTS_H

#include <stdint.h>

#include "ctl.h"
#include "job.h"
#include "runner.h"
#include "status.h"

/* Collective: rank 0 gathers the shards of the DP-rank-0 replica (w: this
 * rank's weights, host) and writes weights.bin and weights.txt; *differ
 * counts the floats of copies that should be equal and were not, *maxdiff
 * their largest difference (rank 0). */
int oc_out_weights(struct oc_ctl *c, const struct oc_exec_job *j, const struct oc_runner *r,
                   const float *w, int64_t *differ, double *maxdiff, struct oc_status *st);
/* Collective: on rank 0, *differ = the ranks whose weights differ from
 * their DP-rank-0 replica's (an FNV-1a hash of the arena). */
int oc_out_dp_replicas(struct oc_ctl *c, const struct oc_layout *l, const struct oc_runner *r,
                       const float *w, int64_t *differ, struct oc_status *st);

#endif
