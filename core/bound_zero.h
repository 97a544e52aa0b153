/* bound_zero.h: ZeRO-2/3's terms of the step's lower bound (core/bound.h
 * says what the bound charges and why each term is one): a layer's
 * gather and reduce-scatter at the DP-collective bound, the unit
 * collectives of a stage summed on the DP links, and those that block the
 * compute stream, in all and per chunk.
 *
 *   double ag1, rs1;
 *   if (oc_bound_zero_layer_colls(&m, &l, &t, 1, &ag1, &rs1)) ...
 *
 * `forced`: 1 for one stage's own groups under the layout's collective
 * algorithm (its members' NICs, bound_geom.h's share); 0 for terms summed
 * over the stages that share a node (the automatic algorithm, all NICs).
 */
#ifndef OC_BOUND_ZERO_H
#define OC_BOUND_ZERO_H

#include <stdint.h>

#include "layout.h"
#include "model.h"
#include "topology.h"

/* One layer's all-gather of its weights (*ag1) and reduce-scatter of its
 * gradients (*rs1); 0 where the layout has none (ZeRO 0-1, no DP, CP). */
int oc_bound_zero_layer_colls(const struct oc_model *m, const struct oc_layout *l,
                              const struct oc_topology *t, int forced, double *ag1,
                              double *rs1);
/* The stage's unit collectives of every micro-batch on the DP links (a
 * throughput bound); *blocking_s those on the compute stream. nl[stage * v
 * + ch]: the chunks' layers. */
double oc_bound_zero_units_s(const struct oc_model *m, const struct oc_layout *l,
                             const struct oc_topology *t, const int64_t *nl, int64_t stage,
                             int forced, double *blocking_s);
/* oc_bound_zero_units_s's blocking part (forced). */
double oc_bound_zero_blocking_s(const struct oc_model *m, const struct oc_layout *l,
                                const struct oc_topology *t, const int64_t *nl, int64_t stage);
/* The blocking ones of a chunk of n layers, per micro-batch: forward *zf,
 * backward *zb. */
void oc_bound_zero_chunk_s(const struct oc_model *m, const struct oc_layout *l,
                           const struct oc_topology *t, int64_t n, double *zf, double *zb);

#endif
