/* csv_table.h: write a CSV table row by row with libcsv's quoting, flushed
 * after every row so an interrupted run keeps what it finished.
 *
 *   struct oc_csv c = {0};
 *   static const char *cols[] = {"tp", "pp", "dp"};
 *   if (oc_csv_open(&c, "out.csv", cols, 3, &st) != 0) ...
 *   oc_csv_field_i64(&c, 8); oc_csv_field_i64(&c, 8); oc_csv_field_i64(&c, 1);
 *   oc_csv_end_row(&c);
 *   oc_csv_close(&c);
 *
 * `#` lines before the header carry metadata (the command, the model), the
 * way nccl-tests does; gnuplot and most CSV readers skip them (pandas with
 * comment='#').
 */
#ifndef OC_CSV_TABLE_H
#define OC_CSV_TABLE_H

#include <stdint.h>
#include <stdio.h>

#include "status.h"

struct oc_csv {
    FILE *f;
    int ncols;
    int col; /* fields written in the current row */
    char path[1024];
};

/* Opens (truncates) `path`; "-" writes to stdout. */
int oc_csv_open(struct oc_csv *c, const char *path, const char *const *cols,
                int ncols, struct oc_status *st);
/* Open for appending to a file that already has the same header. */
int oc_csv_open_append(struct oc_csv *c, const char *path, int ncols,
                       struct oc_status *st);
void oc_csv_comment(struct oc_csv *c, const char *text);
void oc_csv_field_str(struct oc_csv *c, const char *s);
void oc_csv_field_i64(struct oc_csv *c, int64_t v);
/* %.9g: enough digits to round-trip what ocsim computes. */
void oc_csv_field_f64(struct oc_csv *c, double v);
int oc_csv_end_row(struct oc_csv *c);
int oc_csv_close(struct oc_csv *c, struct oc_status *st);

/* Header writer used by oc_csv_open (exposed for tests). */
void oc_csv_write_header(FILE *f, const char *const *cols, int ncols);

#endif
