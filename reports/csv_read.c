/* csv_read.c: CSV tables read back with libcsv (see csv_read.h).
 *
 * libcsv parses a byte stream and calls back once per field and once per
 * record end. It knows nothing of comment lines, so the input is fed line
 * by line and a line starting with '#' is dropped before the parser sees
 * it, unless a quoted field is open (then it is data). Whether a quoted
 * field is open is the parity of the quote characters fed so far: a doubled
 * quote inside a quoted field counts twice, and CSV_STRICT refuses a quote
 * inside an unquoted field, so the parity is exact for any input libcsv
 * accepts. Feeding by line also gives each record its line number.
 */
#define _POSIX_C_SOURCE 200809L
#include "csv_read.h"

#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct reader {
    struct oc_csv_table *t;
    struct oc_status *st;
    int64_t cur_line;       /* line being fed, 1-based */
    int64_t rec_start_line; /* line the next record starts on */
    int64_t rec_line;       /* line the current record started on */
    int nfields;            /* fields of the current record so far */
    int have_header;
    int quote_open;         /* parity of '"' fed so far */
    int failed;
};

static void push_cell(struct oc_csv_table *t, const char *s, size_t len)
{
    if (t->text_len + len + 1 > t->text_cap) {
        size_t cap = t->text_cap ? t->text_cap : 4096;
        while (cap < t->text_len + len + 1)
            cap *= 2;
        t->text = oc_xrealloc(t->text, cap);
        t->text_cap = cap;
    }
    if (t->off_len == t->off_cap) {
        t->off_cap = t->off_cap ? 2 * t->off_cap : 256;
        t->off = oc_xrealloc(t->off, t->off_cap * sizeof *t->off);
    }
    t->off[t->off_len++] = t->text_len;
    if (len)
        memcpy(t->text + t->text_len, s, len);
    t->text_len += len;
    t->text[t->text_len++] = '\0';
}

static void on_field(void *s, size_t len, void *data)
{
    struct reader *r = data;
    if (r->failed)
        return;
    if (r->nfields == 0)
        r->rec_line = r->rec_start_line;
    /* libcsv hands a NULL buffer for an empty field before it has
     * allocated one. */
    push_cell(r->t, s ? s : "", s ? len : 0);
    r->nfields++;
}

static void on_record(int c, void *data)
{
    (void)c;
    struct reader *r = data;
    struct oc_csv_table *t = r->t;
    if (r->failed)
        return;
    if (r->nfields == 0) /* libcsv reports no empty records without REPALL_NL */
        return;
    if (!r->have_header) {
        r->have_header = 1;
        t->ncols = r->nfields;
        t->line = oc_xmalloc(sizeof *t->line);
        t->line[0] = r->rec_line;
    } else if (r->nfields != t->ncols) {
        oc_fail(r->st, "%s:%lld: %d field%s, the header has %d", t->path,
                (long long)r->rec_line, r->nfields, r->nfields == 1 ? "" : "s",
                t->ncols);
        r->failed = 1;
    } else {
        t->nrows++;
        /* line[] holds nrows + 1 entries; grow it in powers of two. */
        int64_t n = t->nrows + 1;
        if ((n & (n - 1)) == 0)
            t->line = oc_xrealloc(t->line, (size_t)(2 * n) * sizeof *t->line);
        t->line[t->nrows] = r->rec_line;
    }
    r->nfields = 0;
}

/* One physical line, with its newline if it had one. */
static int feed_line(struct reader *r, struct csv_parser *p, const char *s,
                     size_t len)
{
    if (!r->quote_open && r->nfields == 0)
        r->rec_start_line = r->cur_line;
    if (!r->quote_open && len > 0 && s[0] == '#') {
        r->cur_line++;
        return 0;
    }
    for (size_t i = 0; i < len; i++)
        if (s[i] == '"')
            r->quote_open = !r->quote_open;
    if (csv_parse(p, s, len, on_field, on_record, r) != len) {
        oc_fail(r->st, "%s:%lld: malformed CSV (%s: a quote inside an unquoted "
                       "field, or text after a closing quote)",
                r->t->path, (long long)r->cur_line, csv_strerror(csv_error(p)));
        r->failed = 1;
    }
    r->cur_line++;
    return r->failed ? -1 : 0;
}

static int finish(struct reader *r, struct csv_parser *p)
{
    if (!r->failed && csv_fini(p, on_field, on_record, r) != 0) {
        oc_fail(r->st, "%s:%lld: malformed CSV (a quoted field is not closed)",
                r->t->path, (long long)r->rec_start_line);
        r->failed = 1;
    }
    csv_free(p);
    if (!r->failed && !r->have_header) {
        oc_fail(r->st, "%s: no header line (the file is empty or all comments)",
                r->t->path);
        r->failed = 1;
    }
    if (r->failed) {
        oc_csv_table_free(r->t);
        return -1;
    }
    return 0;
}

static int start(struct reader *r, struct csv_parser *p, const char *name,
                 struct oc_csv_table *t, struct oc_status *st)
{
    memset(t, 0, sizeof *t);
    _Static_assert(sizeof t->path >= OC_QUOTE_MAX, "a quoted path fits");
    oc_quote(t->path, OC_QUOTE_MAX, name);
    memset(r, 0, sizeof *r);
    r->t = t;
    r->st = st;
    r->cur_line = 1;
    r->rec_start_line = 1;
    if (csv_init(p, CSV_STRICT | CSV_STRICT_FINI) != 0)
        return oc_fail(st, "%s: cannot start the CSV parser (out of memory)", t->path);
    return 0;
}

int oc_csv_read_mem(const char *name, const char *data, size_t len,
                    struct oc_csv_table *t, struct oc_status *st)
{
    struct reader r;
    struct csv_parser p;
    if (start(&r, &p, name, t, st) != 0)
        return -1;
    size_t i = 0;
    while (i < len && !r.failed) {
        const char *nl = memchr(data + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (data + i)) + 1 : len - i;
        feed_line(&r, &p, data + i, n);
        i += n;
    }
    return finish(&r, &p);
}

int oc_csv_read(const char *path, struct oc_csv_table *t, struct oc_status *st)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        char q[OC_QUOTE_MAX];
        memset(t, 0, sizeof *t);
        return oc_fail(st, "%s: cannot read: %s", oc_quote(q, sizeof q, path),
                       strerror(errno));
    }
    struct reader r;
    struct csv_parser p;
    if (start(&r, &p, path, t, st) != 0) {
        fclose(f);
        return -1;
    }
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n;
    while (!r.failed && (n = getline(&buf, &cap, f)) > 0)
        feed_line(&r, &p, buf, (size_t)n);
    int read_err = ferror(f);
    free(buf);
    fclose(f);
    if (read_err && !r.failed) {
        oc_fail(st, "%s: read error", t->path);
        r.failed = 1;
    }
    return finish(&r, &p);
}

void oc_csv_table_free(struct oc_csv_table *t)
{
    free(t->text);
    free(t->off);
    free(t->line);
    t->text = NULL;
    t->off = NULL;
    t->line = NULL;
    t->text_len = t->text_cap = t->off_len = t->off_cap = 0;
    t->ncols = 0;
    t->nrows = 0;
}

int oc_csv_table_col(const struct oc_csv_table *t, const char *name)
{
    for (int c = 0; c < t->ncols; c++)
        if (strcmp(t->text + t->off[c], name) == 0)
            return c;
    return -1;
}

int oc_csv_table_need(const struct oc_csv_table *t, const char *name, int *col,
                      struct oc_status *st)
{
    char q[OC_QUOTE_MAX];
    *col = oc_csv_table_col(t, name);
    if (*col < 0)
        return oc_fail(st, "%s: no column '%s'", t->path, oc_quote(q, sizeof q, name));
    return 0;
}

const char *oc_csv_table_header(const struct oc_csv_table *t, int col)
{
    OC_ASSERT(col >= 0 && col < t->ncols);
    return t->text + t->off[col];
}

const char *oc_csv_table_cell(const struct oc_csv_table *t, int64_t row, int col)
{
    OC_ASSERT(row >= 0 && row < t->nrows && col >= 0 && col < t->ncols);
    return t->text + t->off[(size_t)(row + 1) * (size_t)t->ncols + (size_t)col];
}

int64_t oc_csv_table_line(const struct oc_csv_table *t, int64_t row)
{
    OC_ASSERT(row >= 0 && row < t->nrows);
    return t->line[row + 1];
}

static int is_blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r')
            return 0;
    return 1;
}

int oc_csv_table_f64(const struct oc_csv_table *t, int64_t row, int col,
                     double *v, struct oc_status *st)
{
    const char *s = oc_csv_table_cell(t, row, col);
    char qh[OC_QUOTE_MAX], qc[OC_QUOTE_MAX];
    if (is_blank(s))
        return oc_fail(st, "%s:%lld: column '%s' is empty, a number is needed",
                       t->path, (long long)oc_csv_table_line(t, row),
                       oc_quote(qh, sizeof qh, oc_csv_table_header(t, col)));
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    /* ERANGE on underflow (1e-400) still gives a usable 0 or denormal. */
    if (end == s || !is_blank(end) || (errno == ERANGE && fabs(x) == HUGE_VAL))
        return oc_fail(st, "%s:%lld: column '%s': '%s' is not a number", t->path,
                       (long long)oc_csv_table_line(t, row),
                       oc_quote(qh, sizeof qh, oc_csv_table_header(t, col)),
                       oc_quote(qc, sizeof qc, s));
    *v = x;
    return 0;
}

int oc_csv_table_i64(const struct oc_csv_table *t, int64_t row, int col,
                     int64_t *v, struct oc_status *st)
{
    const char *s = oc_csv_table_cell(t, row, col);
    char *end;
    char qh[OC_QUOTE_MAX], qc[OC_QUOTE_MAX];
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (is_blank(s) || end == s || !is_blank(end) || errno == ERANGE)
        return oc_fail(st, "%s:%lld: column '%s': '%s' is not an integer", t->path,
                       (long long)oc_csv_table_line(t, row),
                       oc_quote(qh, sizeof qh, oc_csv_table_header(t, col)),
                       oc_quote(qc, sizeof qc, s));
    *v = x;
    return 0;
}
