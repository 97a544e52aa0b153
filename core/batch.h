/* batch.h: the global batch a layout can run nearest to a target
 * (`ocsim sweep --batch-tolerance`).
 *
 *   int64_t g = oc_batch_nearest(&layout, 512, 0.05);  // 0: none within 5%
 */
#ifndef OC_BATCH_H
#define OC_BATCH_H

#include <stdint.h>

#include "layout.h"

/* The global batch G nearest to `target` with |G - target| <= tol*target
 * that layout l can run: a multiple of DP*micro-batch whose micro-batch
 * count m = G/(DP*mb) is a multiple of PP under the interleaved schedule
 * (Megatron-LM's rule, layout.c). Ties go to the larger. Returns 0 when
 * none is within the tolerance. */
int64_t oc_batch_nearest(const struct oc_layout *l, int64_t target, double tol);

#endif
