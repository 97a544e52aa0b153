/* plots.h: gnuplot scripts and their data files for a sweep and for one
 * simulated layout, rendered to PNG and SVG by running gnuplot.
 *
 *   struct oc_plot_opts po = OC_PLOT_OPTS_DEFAULT;
 *   int rc = oc_plot_sweep("out", mts, n, rejected, nrej, &po, &st);
 *   if (rc < 0) ...error: st.msg...
 *   if (rc > 0) fprintf(stderr, "ocsim: warning: %s\n", st.msg);  // no images
 *
 *   rc = oc_plot_pipeline("out", &timeline, &layout, &po, &st);   // simulate
 *
 * Every plot NAME gets NAME.gp (the script, with relative file names) and
 * NAME.dat (whitespace-separated columns, '#' header lines) in the output
 * folder, then `gnuplot NAME.gp` runs there and makes NAME.png (pngcairo)
 * and NAME.svg. A user can restyle a script and rerun it in that folder.
 * gnuplot's messages go to gnuplot.log in the folder.
 *
 * Sweep plots (oc_plot_sweep), from the simulated layouts' metrics:
 *   throughput  tokens/s per layout, horizontal bars, best first, the top
 *               top_n layouts that fit in memory.
 *   memory      peak memory per GPU (worst stage) per layout against the
 *               device capacity: the simulated layouts in rank order (green
 *               fits, orange does not) and the layouts rejected for memory
 *               by the closed form (red), smallest first, top_n of each.
 *   breakdown   stacked seconds per step for the throughput layouts:
 *               compute, bubble (bubble_fraction x step), exposed
 *               communication, other (step minus the three, >= 0).
 *   bubble      bubble fraction against micro-batches per step, one point
 *               per simulated layout, coloured by (pp, v), with the closed
 *               form (p-1)/(v*m + p-1) of Narayanan et al. 2021 (sec. 2.2)
 *               as a line for each (pp, v) present.
 * A plot without any row is not written.
 *
 * Single-layout plot (oc_plot_pipeline): "pipeline", a Gantt chart with one
 * row per pipeline stage (the rank with TP rank 0 and DP rank 0, or the rank
 * standing in for it), forward, backward, recompute and optimizer boxes,
 * micro-batch numbers on boxes wide enough, blocking communication as
 * thinner boxes in the row, transfers that overlap compute (sends, async
 * DP buckets) in a thin strip under the row. A RECV is drawn from when the
 * matching SEND started (its waiting part is pipeline bubble, left empty).
 * Consecutive ops of one micro-batch's forward (backward, recompute) on a
 * chunk, with the TP collectives between them, make one box (layer grain
 * would otherwise draw hundreds of slivers); a TP collective at least
 * 1/1000 of the step wide is drawn on top of it.
 *
 * Where it is: plots.c (the gnuplot runner and what every plot shares, with
 * plot_write.h), plot_sweep.c (the sweep plots and oc_report_rank),
 * plot_pipeline.c (the Gantt chart).
 *
 * Every file is written whole or not at all (core/outfile.h); the images
 * are rendered into a temporary folder and renamed into place only when
 * complete (plots.c), so a failed render leaves no image.
 *
 * Return values: 0 scripts, data and images written; 1 scripts and data
 * written but not rendered (gnuplot missing or failing: st->msg is one
 * line for a warning); -1 a file could not be written (the folder, a
 * script, data, or an image cut short by a full disk: st->msg names it and
 * why).
 */
#ifndef OC_PLOTS_H
#define OC_PLOTS_H

#include <stdint.h>

#include "layout.h"
#include "metrics.h"
#include "status.h"
#include "timeline.h"

/* Why a candidate layout was not simulated. */
enum oc_reject_kind {
    OC_REJECT_RULE,   /* breaks a layout rule (oc_layout_validate) */
    OC_REJECT_MEMORY, /* valid, but its closed-form peak exceeds the device */
    OC_REJECT_FAILED, /* the simulation itself failed (crash, deadlock, time) */
};

struct oc_rejected_layout {
    struct oc_layout layout;
    enum oc_reject_kind kind;
    double peak_mem_bytes;   /* closed-form peak per GPU, < 0 when unknown */
    double device_mem_bytes; /* the device's memory */
    char reason[OC_MSG_MAX]; /* one line, as in sweep.csv */
};

/* OC_REJECT_MEMORY for a reason starting "out of memory" (the wording of
 * `ocsim layouts`), else OC_REJECT_RULE. */
enum oc_reject_kind oc_reject_kind_of(const char *reason);
const char *oc_reject_kind_name(enum oc_reject_kind k); /* "invalid", ... */

/* The ranking every report uses: layouts that fit first, then by tokens/s
 * descending (then step time, then the layout string, so ties are
 * deterministic); a non-finite tokens/s counts as 0. Fills order[0..n-1]
 * with indices into mt and returns how many fit. */
int64_t oc_report_rank(const struct oc_metrics *mt, int64_t n, int64_t *order);

struct oc_plot_opts {
    const char *gnuplot; /* program; NULL: $OCSIM_GNUPLOT, else "gnuplot" */
    int no_render;       /* 1: write scripts and data only (returns 0) */
    int top_n;           /* layouts per sweep plot, >= 1 */
    int width_px, height_px;
    const char *title;   /* pipeline plot title; NULL: made from the layout */
    const char *note;    /* sweep plots: a line in red at the bottom left (an
                            interrupted sweep's "N of M layouts simulated");
                            NULL: none */
};
#define OC_PLOT_OPTS_DEFAULT                                                   \
    ((struct oc_plot_opts){.gnuplot = NULL, .no_render = 0, .top_n = 30,       \
                           .width_px = 1200, .height_px = 700, .title = NULL})

int oc_plot_sweep(const char *dir, const struct oc_metrics *mt, int64_t n,
                  const struct oc_rejected_layout *rej, int64_t nrej,
                  const struct oc_plot_opts *o, struct oc_status *st);

/* Runs gnuplot in `dir` on every NAME.gp: one process per online core (at
 * most 4, at most one per script), each on its share of the scripts in
 * turn (`reset` between them), all at once; their output into
 * dir/gnuplot.log. Returns 0; 1 with st->msg when gnuplot is missing or a
 * script failed (the scripts and data stay; the images of the scripts that
 * completed are kept, none of the others); -1 with st->msg naming the
 * image when gnuplot's image came out cut short (a full disk; no image
 * kept). Also used by reports/compare_report.c. */
int oc_plot_render(const char *dir, const struct oc_plot_opts *o,
                   const char *const *names, int n, struct oc_status *st);

/* `l` NULL: tl->sched->layout. */
int oc_plot_pipeline(const char *dir, const struct oc_timeline *tl,
                     const struct oc_layout *l, const struct oc_plot_opts *o,
                     struct oc_status *st);

#endif
