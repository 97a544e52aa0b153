/* scaling.h: how many cards to book. The outputs of `ocsim sweep --cards
 * LIST` (tools/sweep_scaling.h) from the chosen layout of each card count:
 * DIR/scaling.csv, DIR/scaling.md and the plot DIR/scaling.{gp,dat,png,svg}.
 *
 *   struct oc_scaling_row rows[2] = {{.cards = 32, .have_best = 1, .best = m32},
 *                                    {.cards = 64, .have_best = 1, .best = m64}};
 *   oc_scaling_fill(rows, 2);            // per-GPU figures, efficiency
 *   int rc = oc_scaling_write("out", rows, 2, &ctx, &st);
 *
 * Scaling efficiency of count N against the base (the smallest count with
 * a chosen layout, B cards): (tokens/s(N) / N) / (tokens/s(B) / B), 1 at
 * the base; 0.9 means each card of N does 90 % of what a card of B does.
 * Counts without a layout that fits have an empty row (status says why).
 */
#ifndef OC_SCALING_H
#define OC_SCALING_H

#include <stdint.h>

#include "metrics.h"
#include "plots.h"
#include "status.h"

struct oc_scaling_row {
    int64_t cards;
    int rc;                   /* the sweep's exit code */
    int have_best;
    struct oc_metrics best;   /* the chosen layout (have_best) */
    int have_confidence;
    double conf_best, conf_within; /* fractions of the draws (perturb.h) */
    /* oc_scaling_fill: */
    double tokens_per_s_per_gpu;
    double efficiency;        /* against the base; 0 without a layout */
    int64_t base_cards;       /* the base's count; 0: none has a layout */
};

struct oc_scaling_ctx {
    const char *command_line; /* NULL: left out */
    const char *model, *gpu;  /* names for the title */
    const struct oc_plot_opts *plot; /* NULL: OC_PLOT_OPTS_DEFAULT */
};

/* Per-GPU tokens/s and the efficiency of every row (rows ascending by
 * cards). */
void oc_scaling_fill(struct oc_scaling_row *rows, int n);
/* scaling.csv, scaling.md and the plot into dir. 0; 1 the plot was not
 * rendered (st->msg, a warning); -1 a file could not be written. */
int oc_scaling_write(const char *dir, const struct oc_scaling_row *rows, int n,
                     const struct oc_scaling_ctx *ctx, struct oc_status *st);

#endif
