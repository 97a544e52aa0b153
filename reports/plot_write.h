/* plot_write.h: what the gnuplot writers of reports/ share: the colours,
 * writing NAME.gp and NAME.dat into a folder, quoting, the head and tail
 * every script has. Used by plots.c, plot_sweep.c, plot_pipeline.c and
 * compare_report.c (the scatter plot).
 *
 * What it is not: an interface for callers outside reports/ (they use
 * plots.h), nor a plotting library: each writer composes its own script.
 *
 *   oc_gp_remove(dir, "memory");                  // stale memory.{gp,dat,png,svg}
 *   struct oc_outfile of;
 *   FILE *f = oc_gp_open(&of, dir, "memory.dat", st);  // NULL: st->msg
 *   fprintf(f, "1 ");  oc_gp_str(f, "tp8-pp8-dp1");  fprintf(f, " %ld\n", oc_gp_rgb(OC_GP_FITS));
 *   if (oc_gp_close(&of, st) != 0) ...        // memory.dat appears, whole
 *   f = oc_gp_open(&of, dir, "memory.gp", st);
 *   oc_gp_script_begin(f, "memory", "peak memory per GPU", "ocsim", 1200, 700);
 *   ...set and plot lines...
 *   oc_gp_script_end(f, "memory", 1200, 700);
 */
#ifndef OC_PLOT_WRITE_H
#define OC_PLOT_WRITE_H

#include <stdio.h>

#include "layout.h"
#include "outfile.h"
#include "plots.h"
#include "status.h"

/* Colours, one per meaning, shared by every plot (the scatter plot of
 * `ocsim compare` draws its op classes in the colours of the Gantt chart). */
#define OC_GP_FWD "#3b75af"
#define OC_GP_BWD "#519e3e"
#define OC_GP_RECOMP "#8d69b8"
#define OC_GP_OPT "#8c613c"
#define OC_GP_TP "#6e6e6e"
#define OC_GP_PP "#d65f5f"
#define OC_GP_DP "#c44e9f"
#define OC_GP_WAIT "#d5bb67"
#define OC_GP_FITS "#2ca02c"
#define OC_GP_NOFIT "#ff7f0e"
#define OC_GP_REJ "#d62728"
#define OC_GP_BUBBLE "#bbbbbb"

/* "#rrggbb" as the integer gnuplot's `lc rgb variable` reads from a column. */
long oc_gp_rgb(const char *hex);

/* dir/name opened for writing, whole or not at all (core/outfile.h): the
 * stream, or NULL with st->msg "PATH: cannot write: ...". */
FILE *oc_gp_open(struct oc_outfile *of, const char *dir, const char *name,
                 struct oc_status *st);
/* Puts the file under its name; -1 with st->msg "DIR/NAME: cannot write:
 * REASON" on any write error, and no file. */
int oc_gp_close(struct oc_outfile *of, struct oc_status *st);
/* Removes NAME.{gp,dat,png,svg} left by an earlier run, so that what is in
 * the folder afterwards is what this run made. */
void oc_gp_remove(const char *dir, const char *name);
/* s as a double-quoted gnuplot string ('"' and '\' escaped, newlines as
 * spaces): layout names hold no quotes, but a user title might. */
void oc_gp_str(FILE *f, const char *s);

/* The head of NAME.gp: what it draws, who wrote it ("ocsim", "ocsim
 * compare"), the pngcairo terminal and NAME.png as output. */
void oc_gp_script_begin(FILE *f, const char *name, const char *what, const char *writer,
                        int width_px, int height_px);
/* The tail: the same plot again as NAME.svg. */
void oc_gp_script_end(FILE *f, const char *name, int width_px, int height_px);

/* o (NULL: OC_PLOT_OPTS_DEFAULT) with out-of-range sizes and top_n
 * replaced by the defaults. */
struct oc_plot_opts oc_plot_opts_fill(const struct oc_plot_opts *o);

#endif
