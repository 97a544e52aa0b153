/* bound_walk.h: the unit walk of the bound's pipeline critical path
 * (bound.c, path_bound_s; bound.h says what it charges), with the walks
 * already done kept for the next layouts that repeat one.
 *
 *   struct oc_bound_walk w;
 *   if (oc_bound_walk_run(&l, nm, f, b, hop, &w))   // every unit walked
 *       ... w.clk[i], w.bend[g], w.bstart[g] ...
 *
 * Inputs: the layout's schedule, p and v (the stages' unit orders,
 * oc_schedule_stage_order, for nm micro-batches), and per global chunk
 * g = chunk * p + stage its forward f[g] and backward b[g] with their
 * blocking ZeRO collectives, and hop[g] the message from g to g + 1
 * (G - 1 of them), and the ZeRO stream's inputs where given (zstream
 * below). Nothing else of the layout is read: the knob variants
 * that change only the step's tail (ZeRO 0/1, the overlap without ZeRO-2/3,
 * a forced collective algorithm where no unit's cost depends on it) give
 * the same inputs, and a sweep bounds them a few candidates apart. The
 * walk of equal inputs (compared bit for bit) is taken from the cache: the
 * same doubles as walking again, since the walk reads nothing else.
 *
 * One process-wide cache (the sweep plans in one thread), still reachable
 * at exit: not a leak. The results point into it, valid until the next
 * call.
 */
#ifndef OC_BOUND_WALK_H
#define OC_BOUND_WALK_H

#include <stdint.h>

#include "layout.h"

struct oc_bound_walk {
    const double *clk;    /* p: each stage's end after its last unit */
    const double *bend;   /* G: the end of global chunk g's last backward */
    const double *bstart; /* G: that backward's start (after its message) */
    const double *zend;   /* p: each stage's gradient stream's end (zs) */
};

/* The gradient reduce-scatters of ZeRO-2/3 under overlap (schedule_zero.h:
 * one per layer after its backward, async on one stream that runs them in
 * issue order): layers[g] of global chunk g's every backward, the k-th
 * (from 0) issued no earlier than the backward's start plus (k + 1)
 * layer_b (a layer's backward at its bound; at chunk grain all after the
 * merged backward, later still), each taking at least rs. The walk runs
 * that queue per stage (issue order, each after the one before): a queue
 * fed no later and served no slower ends no later, so zend bounds the
 * stream's end. rs = 0: no stream (zend = 0). */
struct oc_bound_zstream {
    const double *layers;
    double layer_b, rs;
};

/* Walks (or finds) the units of l's stages (zs: NULL, or the ZeRO stream).
 * Returns 1 when every unit was walked, 0 when the order stalled (never
 * for a valid layout; *out then unset). */
int oc_bound_walk_run(const struct oc_layout *l, int64_t nm, const double *f, const double *b,
                      const double *hop, const struct oc_bound_zstream *zs,
                      struct oc_bound_walk *out);

#endif
