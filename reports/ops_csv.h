/* ops_csv.h: one row per op of a timeline (predicted by the simulator or
 * measured by the executor), so `ocsim compare` can hold them side by side.
 *
 *   if (oc_ops_csv_write("out/ops.csv", &timeline, &st) != 0) ...
 *
 * Columns: rank,op,kind,phase,part,mb,stage,chunk,layer_first,layer_count,
 * coll,group,count,peer,bytes,flops,start_s,end_s. `op` is the index in the
 * rank's op list: two runs of the same schedule (same layout and grain) have
 * the same (rank, op) keys. Ranks without times of their own are left out.
 * ALLOC and FREE rows are left out (memory is reported per rank elsewhere).
 */
#ifndef OC_OPS_CSV_H
#define OC_OPS_CSV_H

#include "status.h"
#include "timeline.h"

extern const char *const oc_ops_csv_cols[];
extern const int oc_ops_csv_ncols;

int oc_ops_csv_write(const char *path, const struct oc_timeline *tl,
                     struct oc_status *st);

#endif
