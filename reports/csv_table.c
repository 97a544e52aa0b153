/* csv_table.c: CSV rows through libcsv's csv_fwrite (see csv_table.h). */
#include "csv_table.h"

#include <csv.h>
#include <errno.h>
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

int oc_csv_open(struct oc_csv *c, const char *path, const char *const *cols,
                int ncols, struct oc_status *st)
{
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", path);
    c->f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (!c->f)
        return oc_fail(st, "%s: cannot write: %s", path, strerror(errno));
    c->ncols = ncols;
    oc_csv_write_header(c->f, cols, ncols);
    fflush(c->f);
    return 0;
}

int oc_csv_open_append(struct oc_csv *c, const char *path, int ncols,
                       struct oc_status *st)
{
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", path);
    c->f = fopen(path, "a");
    if (!c->f)
        return oc_fail(st, "%s: cannot append: %s", path, strerror(errno));
    c->ncols = ncols;
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
    fprintf(c->f, "%" PRId64, v);
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
    return fflush(c->f) == 0 ? 0 : -1;
}

int oc_csv_close(struct oc_csv *c, struct oc_status *st)
{
    int rc = 0;
    if (c->f && c->f != stdout) {
        if (ferror(c->f) | fclose(c->f))
            rc = oc_fail(st, "%s: write failed", c->path);
    } else if (c->f) {
        fflush(c->f);
    }
    c->f = NULL;
    return rc;
}
