/* stage_split.h: how the layers of a model are split over the pipeline
 * stages when they need not be split evenly (Megatron-LM
 * --decoder-first-pipeline-num-layers, --decoder-last-pipeline-num-layers;
 * layout.h's first_stage_layers and last_stage_layers).
 *
 *   int64_t f[8], l[8];
 *   int n = oc_stage_split_options(&model, &layout, f, l, 8);
 *   for (int i = 0; i < n; i++) { lay.first_stage_layers = f[i]; ... }
 */
#ifndef OC_STAGE_SPLIT_H
#define OC_STAGE_SPLIT_H

#include <stdint.h>

#include "layout.h"
#include "model.h"

/* The splits of m's layers over l's pipeline worth trying for layout l
 * (its tp, pp, v and knobs set; its first/last ignored): writes up to cap
 * (first, last) pairs into first[] and last[], the even split (0, 0) first
 * when the layers divide PP*v. Returns how many (0: none). */
int oc_stage_split_options(const struct oc_model *m, const struct oc_layout *l,
                           int64_t first[], int64_t last[], int cap);

#endif
