/* csv_table.h: write a CSV table row by row with libcsv's quoting, whole
 * or not at all (core/outfile.h): the rows go to a temporary, flushed after
 * every row so that a full disk shows at once; the table appears under its
 * name at oc_csv_close, complete.
 *
 *   struct oc_csv c = {0};
 *   static const char *cols[] = {"tp", "pp", "dp"};
 *   if (oc_csv_open(&c, "out.csv", cols, 3, &st) != 0) ...
 *   oc_csv_field_i64(&c, 8); oc_csv_field_i64(&c, 8); oc_csv_field_i64(&c, 1);
 *   oc_csv_end_row(&c);
 *   if (oc_csv_close(&c, &st) != 0) ...  // "out.csv: cannot write: No space left on device"
 *   (giving up instead: oc_csv_abandon(&c))
 *
 * `#` lines before the header carry metadata (the command, the model), the
 * way nccl-tests does; gnuplot and most CSV readers skip them (pandas with
 * comment='#').
 */
#ifndef OC_CSV_TABLE_H
#define OC_CSV_TABLE_H

#include <stdint.h>
#include <stdio.h>

#include "outfile.h"
#include "status.h"

struct oc_csv {
    struct oc_outfile out;
    FILE *f;                 /* out.f while open, NULL after close or abandon */
    const char *const *cols; /* the header, for oc_csv_restart */
    int ncols;
    int col; /* fields written in the current row */
    int buffered; /* 1: rows are not flushed one by one (a table rewritten
                     whole, whose rows need not reach the file as they
                     come: one write per buffer instead of per row; a
                     failed write shows at the close) */
};

/* Opens a table for `path` and writes the header; "-" writes to stdout. */
int oc_csv_open(struct oc_csv *c, const char *path, const char *const *cols,
                int ncols, struct oc_status *st);
/* The same with its rows streamed under the name `partial` until the
 * close (outfile.h's oc_outfile_open_partial): what a run that dies leaves. */
int oc_csv_open_partial(struct oc_csv *c, const char *path, const char *partial,
                        const char *const *cols, int ncols, struct oc_status *st);
/* The same without the header yet: '#' lines first (oc_csv_comment), then
 * oc_csv_header. */
int oc_csv_open_bare(struct oc_csv *c, const char *path, struct oc_status *st);
void oc_csv_header(struct oc_csv *c, const char *const *cols, int ncols);
void oc_csv_comment(struct oc_csv *c, const char *text);
void oc_csv_field_str(struct oc_csv *c, const char *s);
void oc_csv_field_i64(struct oc_csv *c, int64_t v);
/* %.9g: enough digits to round-trip what ocsim computes. */
void oc_csv_field_f64(struct oc_csv *c, double v);
/* Ends the row and flushes it (unless c->buffered): 0, or -1 once any
 * write of the table has failed (the close will report it). */
int oc_csv_end_row(struct oc_csv *c);
/* Empties the table back to its header, to write the rows again in another
 * order (outfile.h's rewind: no second temporary). */
int oc_csv_restart(struct oc_csv *c, struct oc_status *st);
/* Puts the table under its name (outfile.h's commit); -1 with st naming
 * the file and the reason, and nothing under the name. A closed table
 * (c->f NULL) is left as it is. */
int oc_csv_close(struct oc_csv *c, struct oc_status *st);
/* Gives the table up: no file under its name, no temporary. */
void oc_csv_abandon(struct oc_csv *c);

/* Header writer used by oc_csv_open (exposed for tests). */
void oc_csv_write_header(FILE *f, const char *const *cols, int ncols);

#endif
