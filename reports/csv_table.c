/* csv_table.c: CSV rows through libcsv's csv_fwrite (see csv_table.h). */
#include "csv_table.h"

#include <csv.h>
#include <inttypes.h>
#include <string.h>

/* csv_fwrite always quotes; plain tokens stay bare for readability. */
static void write_field(FILE *f, const char *s)
{
    if (strpbrk(s, ",\"\n\r"))
        csv_fwrite(f, s, strlen(s));
    else
        fputs(s, f);
}

static void sep(struct oc_csv *c)
{
    if (c->col++ > 0)
        fputc(',', c->f);
}

void oc_csv_write_header(FILE *f, const char *const *cols, int ncols)
{
    for (int i = 0; i < ncols; i++) {
        if (i)
            fputc(',', f);
        write_field(f, cols[i]);
    }
    fputc('\n', f);
}

int oc_csv_open_bare(struct oc_csv *c, const char *path, struct oc_status *st)
{
    memset(c, 0, sizeof *c);
    if (oc_outfile_open(&c->out, path, st) != 0)
        return -1;
    c->f = c->out.f;
    return 0;
}

void oc_csv_header(struct oc_csv *c, const char *const *cols, int ncols)
{
    c->cols = cols;
    c->ncols = ncols;
    oc_csv_write_header(c->f, cols, ncols);
}

int oc_csv_open(struct oc_csv *c, const char *path, const char *const *cols,
                int ncols, struct oc_status *st)
{
    if (oc_csv_open_bare(c, path, st) != 0)
        return -1;
    oc_csv_header(c, cols, ncols);
    oc_outfile_check(&c->out, NULL);
    return 0;
}

int oc_csv_open_partial(struct oc_csv *c, const char *path, const char *partial,
                        const char *const *cols, int ncols, struct oc_status *st)
{
    memset(c, 0, sizeof *c);
    if (oc_outfile_open_partial(&c->out, path, partial, st) != 0)
        return -1;
    c->f = c->out.f;
    oc_csv_header(c, cols, ncols);
    oc_outfile_check(&c->out, NULL);
    return 0;
}

void oc_csv_comment(struct oc_csv *c, const char *text)
{
    fprintf(c->f, "# %s\n", text);
}

void oc_csv_field_str(struct oc_csv *c, const char *s)
{
    sep(c);
    write_field(c->f, s);
}

void oc_csv_field_i64(struct oc_csv *c, int64_t v)
{
    sep(c);
    /* by hand: a sweep writes millions of these (fprintf's %lld was a
     * visible share of its output time) */
    char b[24], *e = b + sizeof b, *q = e;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        *--q = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    if (v < 0)
        *--q = '-';
    fwrite(q, 1, (size_t)(e - q), c->f);
}

void oc_csv_field_f64(struct oc_csv *c, double v)
{
    sep(c);
    fprintf(c->f, "%.9g", v);
}

int oc_csv_end_row(struct oc_csv *c)
{
    OC_ASSERT(c->col == c->ncols);
    fputc('\n', c->f);
    c->col = 0;
    if (c->buffered)
        return ferror(c->f) ? -1 : 0;
    return oc_outfile_check(&c->out, NULL);
}

int oc_csv_restart(struct oc_csv *c, struct oc_status *st)
{
    OC_ASSERT(c->f && c->cols && c->col == 0);
    if (oc_outfile_rewind(&c->out, st) != 0)
        return -1;
    oc_csv_write_header(c->f, c->cols, c->ncols);
    return 0;
}

int oc_csv_close(struct oc_csv *c, struct oc_status *st)
{
    if (!c->f)
        return 0;
    c->f = NULL;
    return oc_outfile_commit(&c->out, st);
}

void oc_csv_abandon(struct oc_csv *c)
{
    if (c->f)
        oc_outfile_abandon(&c->out);
    c->f = NULL;
}
