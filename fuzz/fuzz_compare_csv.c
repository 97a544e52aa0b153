/* fuzz_compare_csv.c: libFuzzer target of the CSVs `ocsim compare` reads
 * (reports/csv_read.c: oc_csv_read_mem and the cell readers;
 * reports/compare_read.c: the metrics rows of simulate.csv / measured.csv /
 * sweep.csv and the op rows of ops.csv), every input fed to all three.
 *
 * What it asserts: each reader that fails names the problem in one clean
 * line (fz_check_msg) and leaves nothing allocated; a table read has
 * ncols >= 1, rows on lines in order from the header's, and every cell (header included) a string, a number or a
 * clean error; metrics read give >= 1 row, each with a step time and a
 * layout string; ops read give ops sorted by (rank, op) without
 * duplicates, ranks, ops, stages and chunks >= 0, durations finite and
 * >= 0, class totals over a positive number of ranks, and a pairing of
 * the ops with themselves that matches every op (by op) or every key (by
 * aggregate) with equal predicted and measured seconds (and a pairing
 * against itself less one op that does not crash).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "csv_read.h"
#include "fuzz_check.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fz_init_known();
    return 0;
}

static void check_table(const struct oc_csv_table *t)
{
    FZ_CHECK(t->ncols >= 1 && t->nrows >= 0, "table of %d columns, %lld rows", t->ncols,
             (long long)t->nrows);
    for (int c = 0; c < t->ncols; c++)
        FZ_CHECK(oc_csv_table_header(t, c) != NULL, "header %d missing", c);
    for (int64_t r = 0; r < t->nrows && r < 64; r++) {
        /* A lone CR ends a record (libcsv) but not a line: a row may share
         * its line with the header, never come before it. */
        int64_t prev = r ? oc_csv_table_line(t, r - 1) : t->line[0];
        FZ_CHECK(oc_csv_table_line(t, r) >= prev && prev >= 1, "row %lld on line %lld",
                 (long long)r, (long long)oc_csv_table_line(t, r));
        for (int c = 0; c < t->ncols; c++) {
            struct oc_status st = {{0}};
            double v;
            int64_t k;
            FZ_CHECK(oc_csv_table_cell(t, r, c) != NULL, "cell (%lld, %d) missing",
                     (long long)r, c);
            if (oc_csv_table_f64(t, r, c, &v, &st) != 0)
                fz_check_msg("oc_csv_table_f64", &st, oc_csv_table_cell(t, r, c));
            if (oc_csv_table_i64(t, r, c, &k, &st) != 0)
                fz_check_msg("oc_csv_table_i64", &st, oc_csv_table_cell(t, r, c));
        }
    }
}

static void check_metrics(const struct oc_cmp_metrics *rows, int64_t n)
{
    FZ_CHECK(n >= 1, "metrics read with %lld rows", (long long)n);
    for (int64_t i = 0; i < n; i++) {
        char buf[512];
        oc_cmp_layout_str(&rows[i], buf, sizeof buf);
        FZ_CHECK(buf[0], "empty layout string");
        FZ_CHECK(oc_cmp_same_layout(&rows[i], &rows[i]), "a row differs from itself");
        FZ_CHECK(rows[i].line >= 2, "metrics row on line %lld", (long long)rows[i].line);
    }
}

static void check_ops(const struct oc_cmp_ops *ops)
{
    FZ_CHECK(ops->n >= 0 && (ops->n == 0 || ops->ops), "ops: n %lld", (long long)ops->n);
    for (int64_t i = 0; i < ops->n; i++) {
        const struct oc_cmp_op *o = &ops->ops[i];
        FZ_CHECK(o->rank >= 0 && o->op >= 0 && o->stage >= 0 && o->chunk >= 0 && o->mb >= -1,
                 "op %lld: rank %lld op %lld", (long long)i, (long long)o->rank,
                 (long long)o->op);
        FZ_CHECK(isfinite(o->dur_s) && o->dur_s >= 0, "op %lld: duration %g", (long long)i,
                 o->dur_s);
        if (i > 0) {
            const struct oc_cmp_op *p = &ops->ops[i - 1];
            FZ_CHECK(p->rank < o->rank || (p->rank == o->rank && p->op < o->op),
                     "ops not sorted or duplicated at %lld", (long long)i);
        }
        (void)oc_cmp_class_name(oc_cmp_class_of(o));
    }
    double s[OC_CMP_NCLASS];
    int64_t ranks = oc_cmp_class_totals(ops, s);
    FZ_CHECK(ops->n == 0 || ranks >= 1, "%lld ops on %lld ranks", (long long)ops->n,
             (long long)ranks);
    struct oc_cmp_pairs pairs;
    oc_cmp_pair(ops, ops, &pairs);
    FZ_CHECK(pairs.unmatched_pred == 0 && pairs.unmatched_meas == 0,
             "ops paired with themselves leave %lld and %lld unmatched",
             (long long)pairs.unmatched_pred, (long long)pairs.unmatched_meas);
    for (int64_t i = 0; i < pairs.n; i++)
        FZ_CHECK(pairs.pts[i].pred_s == pairs.pts[i].meas_s ||
                     (isnan(pairs.pts[i].pred_s) && isnan(pairs.pts[i].meas_s)),
                 "point %lld (%s) of ops paired with themselves: %g against %g",
                 (long long)i, pairs.pts[i].label, pairs.pts[i].pred_s, pairs.pts[i].meas_s);
    oc_cmp_pairs_free(&pairs);
    /* Against itself less its last op: another schedule, so the pairing by
     * aggregate runs; what it matches is checked only for sanity. */
    if (ops->n >= 2) {
        struct oc_cmp_ops fewer = {ops->n - 1, ops->ops};
        oc_cmp_pair(ops, &fewer, &pairs);
        FZ_CHECK(pairs.n >= 0 && pairs.unmatched_pred >= 0 && pairs.unmatched_meas >= 0,
                 "pairing with one op less: %lld points", (long long)pairs.n);
        for (int64_t i = 0; i < pairs.n; i++)
            FZ_CHECK(pairs.pts[i].label[0], "point %lld without a label", (long long)i);
        oc_cmp_pairs_free(&pairs);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    const char *text = (const char *)data;
    struct oc_status st = {{0}};
    char *shown = fz_text(data, n < 200 ? n : 200);

    struct oc_csv_table t;
    if (oc_csv_read_mem("fuzz.csv", text, n, &t, &st) != 0)
        fz_check_msg("oc_csv_read_mem", &st, shown);
    else
        check_table(&t);
    oc_csv_table_free(&t);

    struct oc_cmp_metrics *rows = NULL;
    int64_t nrows = 0;
    if (oc_cmp_metrics_read_mem("simulate.csv", text, n, &rows, &nrows, &st) != 0) {
        fz_check_msg("oc_cmp_metrics_read_mem", &st, shown);
        FZ_CHECK(!rows && nrows == 0, "a failed metrics read left rows behind");
    } else {
        check_metrics(rows, nrows);
    }
    free(rows);

    struct oc_cmp_ops ops;
    if (oc_cmp_ops_read_mem("ops.csv", text, n, &ops, &st) != 0) {
        fz_check_msg("oc_cmp_ops_read_mem", &st, shown);
        FZ_CHECK(!ops.ops && ops.n == 0, "a failed ops read left ops behind");
    } else {
        check_ops(&ops);
    }
    oc_cmp_ops_free(&ops);
    free(shown);
    return 0;
}
