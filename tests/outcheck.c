/* outcheck.c: is an output file complete? The checker of the full-disk
 * fault test (tests/fault_disk.sh): a file that a full disk cut short must
 * never be found under its final name, so every file present is parsed to
 * its end by its kind.
 *
 *   ocsim-outcheck FILE [REFERENCE]
 *
 * Kinds, by the file's extension:
 *   .csv   RFC 4180 records ('#' lines before the header skipped, quoted
 *          fields may hold commas and newlines): every record has the
 *          header's field count, the file ends with a newline outside
 *          quotes; with REFERENCE, the same header and as many records.
 *   .json  parsed whole by jansson (trailing garbage or a cut is an error).
 *   .png   the signature, then chunk by chunk (length, type, data, CRC) to
 *          an IEND chunk that ends exactly at the end of the file (PNG
 *          spec, sec. 5.3 and 11.2.5).
 *   .svg   ends with "</svg>" (and white space).
 *   .bin   ocsim-exec's weights.bin (exec/out_weights.h): "OCSIMWT1", the
 *          tensor count, the tensors' names and shapes, then exactly
 *          rows x cols floats for each.
 *   other  text ending with a newline (.dat, .gp, .md, .txt).
 * Exit 0 complete, 1 not (one line on stderr says why), 2 usage.
 *
 * What it is not: a check of the values (the fault test compares the
 * deterministic files with a reference run byte for byte).
 */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *path_of; /* for messages */

static int bad(const char *why, long long at)
{
    fprintf(stderr, "outcheck: %s: %s (at byte %lld)\n", path_of, why, at);
    return 1;
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0, got;
    unsigned char *b = malloc(cap + 1);
    while (b && (got = fread(b + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            unsigned char *nb = realloc(b, 2 * cap + 1);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (b)
        b[len] = '\0';
    *n = len;
    return b;
}

/* ------------------------------------------------------------------ */
/* CSV                                                                  */

struct csv_shape {
    long long records; /* data records, the header not counted */
    int ncols;
    char header[4096];
};

static int csv_check(const unsigned char *b, size_t n, struct csv_shape *sh)
{
    size_t i = 0;
    memset(sh, 0, sizeof *sh);
    /* '#' lines before the header */
    while (i < n && b[i] == '#') {
        while (i < n && b[i] != '\n')
            i++;
        i++;
    }
    if (i >= n)
        return bad("no header", (long long)i);
    size_t head_start = i;
    int fields = 1, first = 1;
    int quoted = 0, field_start = 1;
    for (; i < n; i++) {
        unsigned char c = b[i];
        if (quoted) {
            if (c == '"' && i + 1 < n && b[i + 1] == '"')
                i++;
            else if (c == '"')
                quoted = 0;
            continue;
        }
        if (c == '"' && field_start) {
            quoted = 1;
            field_start = 0;
        } else if (c == ',') {
            fields++;
            field_start = 1;
        } else if (c == '\n') {
            if (first) {
                sh->ncols = fields;
                snprintf(sh->header, sizeof sh->header, "%.*s", (int)(i - head_start),
                         (const char *)b + head_start);
                first = 0;
            } else if (fields != sh->ncols) {
                char why[96];
                snprintf(why, sizeof why, "record %lld has %d fields, the header %d",
                         sh->records + 1, fields, sh->ncols);
                return bad(why, (long long)i);
            } else {
                sh->records++;
            }
            fields = 1;
            field_start = 1;
        } else {
            field_start = 0;
        }
    }
    if (quoted)
        return bad("ends inside a quoted field", (long long)n);
    if (n == 0 || b[n - 1] != '\n')
        return bad("the last record has no newline", (long long)n);
    return 0;
}

/* ------------------------------------------------------------------ */
/* PNG, SVG, weights.bin, text                                          */

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int png_check(const unsigned char *b, size_t n)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    if (n < 8 || memcmp(b, sig, 8) != 0)
        return bad("no PNG signature", 0);
    size_t i = 8;
    while (i + 12 <= n) {
        uint32_t len = be32(b + i);
        if (len > n - i - 12)
            return bad("a chunk runs past the end", (long long)i);
        int iend = memcmp(b + i + 4, "IEND", 4) == 0;
        i += 12 + (size_t)len;
        if (iend)
            return i == n ? 0 : bad("bytes after IEND", (long long)i);
    }
    return bad("no IEND chunk", (long long)i);
}

static int svg_check(const unsigned char *b, size_t n)
{
    size_t k = n;
    while (k > 0 && (b[k - 1] == '\n' || b[k - 1] == '\r' || b[k - 1] == ' '))
        k--;
    if (k < 6 || memcmp(b + k - 6, "</svg>", 6) != 0)
        return bad("does not end with </svg>", (long long)n);
    return 0;
}

static int weights_check(const unsigned char *b, size_t n)
{
    if (n < 16 || memcmp(b, "OCSIMWT1", 8) != 0)
        return bad("no OCSIMWT1 header", 0);
    int64_t nt;
    memcpy(&nt, b + 8, sizeof nt);
    if (nt < 0 || (uint64_t)nt > (n - 16) / 40)
        return bad("the tensor table runs past the end", 8);
    uint64_t floats = 0;
    for (int64_t i = 0; i < nt; i++) {
        int64_t meta[3];
        memcpy(meta, b + 16 + 40 * i + 16, sizeof meta);
        if (meta[1] < 0 || meta[2] < 0)
            return bad("a negative shape", 16 + 40 * (long long)i);
        floats += (uint64_t)meta[1] * (uint64_t)meta[2];
    }
    const uint64_t want = 16 + 40 * (uint64_t)nt + 4 * floats;
    if (want != n) {
        char why[96];
        snprintf(why, sizeof why, "%llu bytes, the tensors need %llu",
                 (unsigned long long)n, (unsigned long long)want);
        return bad(why, (long long)n);
    }
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: ocsim-outcheck FILE [REFERENCE]\n");
        return 2;
    }
    path_of = argv[1];
    if (ends_with(argv[1], ".json")) {
        json_error_t err;
        json_t *j = json_load_file(argv[1], 0, &err);
        if (!j)
            return bad(err.text, (long long)err.position);
        json_decref(j);
        return 0;
    }
    size_t n;
    unsigned char *b = slurp(argv[1], &n);
    if (!b)
        return bad("cannot read", 0);
    int rc;
    if (ends_with(argv[1], ".csv")) {
        struct csv_shape sh, ref;
        rc = csv_check(b, n, &sh);
        if (rc == 0 && argc == 3) {
            size_t rn;
            unsigned char *rb = slurp(argv[2], &rn);
            if (!rb || csv_check(rb, rn, &ref) != 0)
                rc = bad("the reference is not a complete CSV", 0);
            else if (strcmp(sh.header, ref.header) != 0)
                rc = bad("not the reference's header", 0);
            else if (sh.records != ref.records) {
                char why[96];
                snprintf(why, sizeof why, "%lld records, the reference has %lld",
                         sh.records, ref.records);
                rc = bad(why, (long long)n);
            }
            free(rb);
        }
    } else if (ends_with(argv[1], ".png")) {
        rc = png_check(b, n);
    } else if (ends_with(argv[1], ".svg")) {
        rc = svg_check(b, n);
    } else if (ends_with(argv[1], ".bin")) {
        rc = weights_check(b, n);
    } else {
        rc = n > 0 && b[n - 1] == '\n' ? 0 : bad("empty, or no newline at the end", (long long)n);
    }
    free(b);
    return rc;
}
