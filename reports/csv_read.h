/* csv_read.h: read a whole CSV table back (libcsv's csv_parse), the reverse
 * of csv_table.h, for `ocsim compare` and for tests.
 *
 *   struct oc_csv_table t;
 *   if (oc_csv_read("out/simulate.csv", &t, &st) != 0) ...st.msg...
 *   int col;
 *   double step_s;
 *   if (oc_csv_table_need(&t, "step_time_s", &col, &st) != 0 ||
 *       oc_csv_table_f64(&t, 0, col, &step_s, &st) != 0) ...st.msg...
 *   oc_csv_table_free(&t);
 *
 * What it reads: RFC 4180 fields (quoted fields may hold commas, doubled
 * quotes and newlines), LF or CRLF line ends, blank lines skipped, and
 * lines starting with '#' outside a quoted field skipped as comments (the
 * metadata lines csv_table.h and nccl-tests write). The first record left
 * is the header; every other record must have as many fields as the header.
 * Malformed quoting (a quote inside an unquoted field, an unterminated
 * quoted field) is an error, not a guess (libcsv's CSV_STRICT).
 *
 * Errors are one line naming the file and line: "x.csv:7: 3 fields, the
 * header has 4", "x.csv: no column 'step_time_s'", "x.csv:2: column
 * 'mfu': 'abc' is not a number". The file's name, a header and a cell are
 * shown escaped and shortened (oc_quote).
 */
#ifndef OC_CSV_READ_H
#define OC_CSV_READ_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

struct oc_csv_table {
    char path[1024]; /* for messages: escaped and shortened (oc_quote) */
    int ncols;
    int64_t nrows;   /* data records, header excluded */
    /* Every cell is a NUL-terminated string inside `text`; cell (r, c) of
     * the data starts at text + off[(r + 1) * ncols + c], row -1 is the
     * header. One arena: a 300 000-row ops.csv is one allocation, not
     * millions. */
    char *text;
    size_t text_len, text_cap;
    size_t *off;
    size_t off_len, off_cap;
    int64_t *line;   /* nrows + 1: the line each record starts on (header first) */
};

/* Reads `path` whole. On failure the table is empty (safe to free). */
int oc_csv_read(const char *path, struct oc_csv_table *t, struct oc_status *st);
/* The same from memory; `name` stands for the path in messages. */
int oc_csv_read_mem(const char *name, const char *data, size_t len,
                    struct oc_csv_table *t, struct oc_status *st);
void oc_csv_table_free(struct oc_csv_table *t);

/* Index of the header column `name`, or -1. */
int oc_csv_table_col(const struct oc_csv_table *t, const char *name);
/* The same, as an error "PATH: no column 'NAME'" when absent. */
int oc_csv_table_need(const struct oc_csv_table *t, const char *name, int *col,
                      struct oc_status *st);
const char *oc_csv_table_header(const struct oc_csv_table *t, int col);
const char *oc_csv_table_cell(const struct oc_csv_table *t, int64_t row, int col);
/* The line (1-based, in the file) data row `row` starts on. */
int64_t oc_csv_table_line(const struct oc_csv_table *t, int64_t row);

/* A cell as a number: the whole cell must parse (strtod; "inf" and "nan"
 * as printf writes them are numbers), surrounding blanks allowed. An empty
 * cell is an error. */
int oc_csv_table_f64(const struct oc_csv_table *t, int64_t row, int col,
                     double *v, struct oc_status *st);
/* A cell as an integer (strtoll, base 10, no fraction). */
int oc_csv_table_i64(const struct oc_csv_table *t, int64_t row, int col,
                     int64_t *v, struct oc_status *st);

#endif
