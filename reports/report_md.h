/* report_md.h: the report of a sweep (report.md with its plots) and the
 * ranked table printed on stdout.
 *
 *   struct oc_report_ctx ctx = {
 *       .command_line = "ocsim sweep --cards 64 --model llama2-70b ...",
 *       .model = &model, .topo = &topo, .cards = 64,
 *       .global_batch = 512, .seq_length = 4096,
 *       .method = "SimGrid replay, chunk grain", .csv_name = "sweep.csv",
 *   };
 *   int rc = oc_report_sweep("out", mts, n, rejected, nrej, &ctx, &st);
 *   if (rc < 0) ...error: st.msg...
 *   if (rc > 0) fprintf(stderr, "ocsim: warning: %s\n", st.msg); // no images
 *   oc_report_print_table(stdout, mts, n, 10);                     // top 10
 *
 * mts are the simulated layouts' metrics (fitting or not), rejected the
 * candidates that were not simulated (plots.h: struct oc_rejected_layout;
 * oc_reject_kind_of turns a reason line into its class), all of them or
 * examples with the counts in ctx (rejected_counted).
 *
 * report.md holds: the command, a note when the sweep was interrupted or
 * simulations failed (oc_report_failures), the model, cluster and batch, the ranked
 * table (oc_report_rank: fitting layouts first, by tokens/s), the chosen
 * layout and why it beats the runner-up (oc_report_explain), its memory
 * with the reserve and the confidence of the choice (report_confidence.h),
 * the rejected
 * layouts by class with examples, the plots (plots.h) and what the
 * simulation does and does not model.
 */
#ifndef OC_REPORT_MD_H
#define OC_REPORT_MD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "metrics.h"
#include "model.h"
#include "perturb.h"
#include "plots.h"
#include "status.h"
#include "topology.h"

struct oc_report_ctx {
    const char *command_line;      /* as typed; NULL: left out */
    const struct oc_model *model;  /* NULL: the model line is left out */
    const struct oc_topology *topo;/* NULL: cluster line and placement facts left out */
    int64_t cards;
    int64_t global_batch;          /* sequences per step */
    int64_t seq_length;            /* tokens per sequence */
    const char *method;            /* how the metrics were made; NULL: "simulated" */
    const char *csv_name;          /* the full table next to report.md; NULL: none */
    int top_n;                     /* rows of the ranked table; < 1: 20 */
    const struct oc_plot_opts *plot; /* NULL: OC_PLOT_OPTS_DEFAULT */
    int no_plots;                  /* 1: no plots, none embedded */
    double wall_s;                 /* sweep wall time; <= 0: not reported */
    /* A sweep stopped by a signal: its name ("SIGINT"), and how many
     * layouts it left unsimulated; the report then says so at the top
     * ("N of M simulated") and the plots carry the same note. NULL: the
     * sweep ran to its end. */
    const char *interrupted_by;
    int64_t pending;
    /* The confidence of the choice (core/perturb.h; report_confidence.h);
     * NULL: not evaluated (--robustness 0), no section. */
    const struct oc_perturb_result *confidence;
    /* The knob space searched (core/search.h: "tp 1-8, ...; recompute
     * none|..."), the candidates pruned by their lower bound (not
     * simulated, not in the tables) and the no-op variants skipped; NULL
     * and 0: left out. */
    const char *search_ranges;
    int64_t pruned, noop;
    /* The candidates rejected before simulation, by class, when `rej`
     * holds only examples of them (a sweep keeps the first illegal ones
     * and the closest misses of memory, tools/sweep_plan.h; the failed
     * simulations are all in rej): rejected_counted 1 and the counts; 0:
     * rej holds them all. rejected_csv: the file that lists them all
     * (`ocsim sweep --rejected-csv`), NULL: none written. */
    int rejected_counted;
    int64_t rejected_rule, rejected_memory;
    const char *rejected_csv;
};

/* Writes the plots (oc_plot_sweep) and report.md into out_dir (created if
 * needed). 0: all written; 1: report.md written but the plots were not
 * rendered (st->msg, one line, for a warning); -1: failure (st->msg). */
int oc_report_sweep(const char *out_dir, const struct oc_metrics *mt, int64_t n,
                     const struct oc_rejected_layout *rej, int64_t nrej,
                     const struct oc_report_ctx *ctx, struct oc_status *st);

/* The simulations that failed among rej (OC_REJECT_FAILED) in one line
 * into buf: how many of `attempted`, the count by reason (a reason is the
 * message up to its first ": ", the quoted detail after it left out), and
 * the first failed layout in rej's order with its whole reason:
 *   "2 of 42 simulations failed (2 x simulation crashed (signal 9, Killed));
 *    the first, tp2-pp2-dp2-mb1-1f1b: simulation crashed (signal 9, Killed)"
 * Layout names in `backticks` when markdown. Returns the count; 0 leaves
 * buf empty. */
int64_t oc_report_failures(char *buf, size_t n, const struct oc_rejected_layout *rej,
                           int64_t nrej, int64_t attempted, int markdown);

/* The ranked table in fixed-width columns with SI units, the `top` best
 * (top < 1: all), then a line saying how many more there are:
 *
 *    #  layout                    tokens/s       step     MFU  bubble   exp.comm   peak mem  fits
 *    1  tp8-pp4-dp2-mb1-1f1b   1.20 Mtok/s     1.70 s   45.0%   12.0%    21.0 ms    62.1 GB   yes
 *       ... 2 more layouts (2 of 3 fit in memory)
 */
void oc_report_print_table(FILE *f, const struct oc_metrics *mt, int64_t n, int64_t top);

/* Why `best` beats `runner_up` (NULL: it is the only one that fits), in a
 * few sentences derived from the metrics: the throughput gain, the step
 * component (compute, bubble, exposed communication, other) that differs
 * most, with the facts behind it (closed-form bubble, which groups cross the
 * network when `t` is given), what it gives back elsewhere, and a caution
 * when the two are within 1%. Plain text with **bold** layout names. */
void oc_report_explain(char *buf, size_t n, const struct oc_metrics *best,
                       const struct oc_metrics *runner_up,
                       const struct oc_topology *t);

#endif
