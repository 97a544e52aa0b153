/* compare_report.c: what `ocsim compare` shows (see compare.h): the
 * fixed-width table with the pairing used and the verdict, compare.csv,
 * and the scatter plot of predicted against measured seconds per pair.
 *
 * What it is not: the comparison (compare.c computes every figure shown
 * here), nor the gnuplot runner (plots.c); the only figure computed here is
 * the median |error| over the pairs, which the verdict does not use.
 */
#define _POSIX_C_SOURCE 200809L
#include "compare.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "csv_table.h"
#include "format.h"
#include "paths.h" /* oc_mkdir_p */
#include "plot_write.h"

/* ------------------------------------------------------------------ */
/* Output                                                               */

static const char *fmt_val(char *b, size_t n, double v, const char *unit)
{
    if (unit[0])
        return oc_fmt_si(b, n, v, unit);
    snprintf(b, n, "%.4g", v);
    return b;
}

static const char *fmt_err(char *b, size_t n, double e)
{
    if (isnan(e))
        snprintf(b, n, "n/a");
    else if (isinf(e))
        snprintf(b, n, "%sinf", e < 0 ? "-" : "+");
    else
        snprintf(b, n, "%+.1f%%", e);
    return b;
}

static const char *verdict(const struct oc_cmp_row *r)
{
    if (isnan(r->err_pct))
        return "n/a";
    if (!r->checked)
        return "-";
    return r->within ? "yes" : "no";
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Median of |error| over the pairs with a finite error. */
static double pairs_median_abs_err(const struct oc_cmp_pairs *p, int64_t *used)
{
    double *e = oc_xmalloc((size_t)(p->n > 0 ? p->n : 1) * sizeof *e);
    int64_t k = 0;
    for (int64_t i = 0; i < p->n; i++) {
        double x = oc_cmp_error_pct(p->pts[i].pred_s, p->pts[i].meas_s);
        if (isfinite(x))
            e[k++] = fabs(x);
    }
    qsort(e, (size_t)k, sizeof *e, cmp_double);
    double med = k == 0 ? NAN : k % 2 ? e[k / 2] : 0.5 * (e[k / 2 - 1] + e[k / 2]);
    free(e);
    *used = k;
    return med;
}

static void pairing_text(const struct oc_compare *c, char *buf, size_t n)
{
    const struct oc_cmp_pairs *p = &c->pairs;
    switch (p->mode) {
    case OC_CMP_PAIR_NONE:
        snprintf(buf, n, "none (an ops.csv is missing)");
        break;
    case OC_CMP_PAIR_OP:
        snprintf(buf, n, "by op: both ops.csv hold the same (rank, op) keys with the "
                         "same kind/phase/part/mb; %lld ops",
                 (long long)p->n);
        break;
    case OC_CMP_PAIR_AGGREGATE:
        snprintf(buf, n, "by aggregate: the op lists differ (grain or ranks), so "
                         "compute is summed per (stage, mb, chunk, phase) and divided "
                         "by the ranks of the stage present (%lld predicted, %lld "
                         "measured ranks); %lld keys paired, %lld only predicted, "
                         "%lld only measured",
                 (long long)c->pred_ranks, (long long)c->meas_ranks, (long long)p->n,
                 (long long)p->unmatched_pred, (long long)p->unmatched_meas);
        break;
    }
}

void oc_compare_print(FILE *f, const struct oc_compare *c)
{
    char l[256];
    oc_cmp_layout_str(&c->meas, l, sizeof l);
    fprintf(f, "predicted  %s%s%s\n", c->pred_metrics, c->pred_ops[0] ? ", " : "", c->pred_ops);
    fprintf(f, "measured   %s%s%s\n", c->meas_metrics, c->meas_ops[0] ? ", " : "", c->meas_ops);
    fprintf(f, "layout     %s\n", l);
    fprintf(f, "error = (measured - predicted) / measured; tolerance %.3g%% on the rows "
               "checked (step time; classes >= %.0f%% of the step)\n\n",
            c->tolerance_pct, 100 * OC_CMP_SIGNIFICANT);
    fprintf(f, "%-18s %12s %12s %9s  %s\n", "metric", "predicted", "measured", "error",
            "within");
    char a[32], b[32], e[32];
    for (int i = 0; i < c->nrows; i++) {
        const struct oc_cmp_row *r = &c->rows[i];
        if (i == OC_CMP_NMETRICS)
            fprintf(f, "per op class, mean per rank:\n");
        fprintf(f, "%-18s %12s %12s %9s  %s\n", r->name, fmt_val(a, sizeof a, r->pred, r->unit),
                fmt_val(b, sizeof b, r->meas, r->unit), fmt_err(e, sizeof e, r->err_pct),
                verdict(r));
    }
    char pt[OC_MSG_MAX];
    pairing_text(c, pt, sizeof pt);
    fprintf(f, "\npairing: %s\n", pt);
    if (c->pairs.n > 0) {
        int64_t used;
        double med = pairs_median_abs_err(&c->pairs, &used);
        if (used > 0)
            fprintf(f, "per pair: median |error| %.1f%% over %lld pairs with a finite error\n",
                    med, (long long)used);
    }
    for (int i = 0; i < c->nnotes; i++)
        fprintf(f, "note: %s\n", c->notes[i]);
    int nchecked = 0;
    for (int i = 0; i < c->nrows; i++)
        nchecked += c->rows[i].checked;
    if (c->nfail)
        fprintf(f, "BEYOND TOLERANCE: %d of %d checked rows off by more than %.3g%%\n",
                c->nfail, nchecked, c->tolerance_pct);
    else
        fprintf(f, "within tolerance: %d checked rows within %.3g%%\n", nchecked,
                c->tolerance_pct);
}

int oc_compare_write_csv(const char *path, const struct oc_compare *c,
                         struct oc_status *st)
{
    static const char *const cols[] = {"metric", "predicted", "measured", "error_pct",
                                       "within"};
    char line[2 * OC_MSG_MAX + 64];
    /* The '#' lines first (as csv_table.h's files), then the table. */
    struct oc_csv csv;
    if (oc_csv_open_bare(&csv, path, st) != 0)
        return -1;
    FILE *f = csv.f;
    fprintf(f, "# predicted: %s%s%s\n", c->pred_metrics, c->pred_ops[0] ? " " : "",
            c->pred_ops);
    fprintf(f, "# measured: %s%s%s\n", c->meas_metrics, c->meas_ops[0] ? " " : "",
            c->meas_ops);
    fprintf(f, "# error_pct = (measured - predicted) / measured * 100; tolerance %.6g%%; "
               "within: yes/no for checked rows, '-' reported only, n/a both ~0\n",
            c->tolerance_pct);
    pairing_text(c, line, sizeof line);
    fprintf(f, "# pairing: %s\n", line);
    oc_csv_header(&csv, cols, 5);
    for (int i = 0; i < c->nrows; i++) {
        const struct oc_cmp_row *r = &c->rows[i];
        oc_csv_field_str(&csv, r->name);
        oc_csv_field_f64(&csv, r->pred);
        oc_csv_field_f64(&csv, r->meas);
        if (isnan(r->err_pct))
            oc_csv_field_str(&csv, "");
        else
            oc_csv_field_f64(&csv, r->err_pct);
        oc_csv_field_str(&csv, verdict(r));
        oc_csv_end_row(&csv);
    }
    return oc_csv_close(&csv, st);
}

/* ------------------------------------------------------------------ */
/* Scatter plot                                                         */

/* Colours as the Gantt chart (plot_pipeline.c) draws the same kinds. */
static const char *const class_colour[OC_CMP_NCLASS + 1] = {
    [OC_CMP_FWD] = OC_GP_FWD, [OC_CMP_BWD] = OC_GP_BWD, [OC_CMP_OPT] = OC_GP_OPT,
    [OC_CMP_TP] = OC_GP_TP,   [OC_CMP_PP] = OC_GP_PP,   [OC_CMP_DP] = OC_GP_DP,
    [OC_CMP_OTHER] = OC_GP_WAIT,
};

/* What scatter.dat held: the classes present and their gnuplot index, the
 * pairs left out, the range of the values drawn. */
struct scatter {
    int present[OC_CMP_NCLASS + 1], block_of[OC_CMP_NCLASS + 1], nblocks;
    int64_t dropped;
    double lo, hi;
};

/* scatter.dat: one gnuplot block (index) per class present; log axes
 * cannot show a value <= 0, so such pairs are left out and counted. */
static int scatter_dat(const char *dir, const struct oc_compare *c, struct scatter *sc,
                       struct oc_status *st)
{
    const struct oc_cmp_pairs *p = &c->pairs;
    memset(sc, 0, sizeof *sc);
    sc->lo = INFINITY;
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "scatter.dat", st);
    if (!f)
        return -1;
    char pt[OC_MSG_MAX];
    pairing_text(c, pt, sizeof pt);
    fprintf(f, "# scatter.dat: predicted against measured seconds, pairing %s\n"
               "# one block per class (gnuplot index), columns: predicted_s measured_s label\n",
            pt);
    for (int k = 0; k <= OC_CMP_NCLASS; k++) {
        int any = 0;
        for (int64_t i = 0; i < p->n; i++) {
            const struct oc_cmp_point *q = &p->pts[i];
            if ((int)q->cls != k)
                continue;
            if (!(q->pred_s > 0 && q->meas_s > 0 && isfinite(q->pred_s) &&
                  isfinite(q->meas_s))) {
                sc->dropped++;
                continue;
            }
            if (!any) {
                if (sc->nblocks > 0)
                    fputs("\n\n", f);
                fprintf(f, "# class %s\n", oc_cmp_class_name((enum oc_cmp_class)k));
                sc->block_of[k] = sc->nblocks++;
                sc->present[k] = any = 1;
            }
            fprintf(f, "%.9g %.9g ", q->pred_s, q->meas_s);
            oc_gp_str(f, q->label);
            fputc('\n', f);
            sc->lo = fmin(sc->lo, fmin(q->pred_s, q->meas_s));
            sc->hi = fmax(sc->hi, fmax(q->pred_s, q->meas_s));
        }
    }
    return oc_gp_close(&of, st);
}

/* scatter.gp: log-log on a decade-aligned square around the data, y = x,
 * the tolerance band, a point series per class present. */
static int scatter_gp(const char *dir, const struct oc_compare *c, const struct scatter *sc,
                      const struct oc_plot_opts *po, struct oc_status *st)
{
    const struct oc_cmp_pairs *p = &c->pairs;
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "scatter.gp", st);
    if (!f)
        return -1;
    const int w = po->width_px, h = po->height_px > 0 ? po->height_px : 700;
    const double tol = c->tolerance_pct / 100.0;
    double xlo = pow(10, floor(log10(sc->lo))), xhi = pow(10, ceil(log10(sc->hi)));
    if (xhi <= xlo)
        xhi = xlo * 10;
    oc_gp_script_begin(f, "scatter", "predicted against measured time per op (or per aggregate)",
                       "ocsim compare", w, h);
    fprintf(f, "set title ");
    char title[OC_MSG_MAX + 64];
    char left_out[64] = "";
    if (sc->dropped)
        snprintf(left_out, sizeof left_out, " (%lld with a zero time left out)",
                 (long long)sc->dropped);
    snprintf(title, sizeof title, "Predicted vs measured, %lld pairs %s%s",
             (long long)(p->n - sc->dropped), oc_cmp_pairing_name(p->mode), left_out);
    oc_gp_str(f, title);
    fprintf(f,
            "\nset xlabel \"predicted (s)\"\n"
            "set ylabel \"measured (s)\"\n"
            "set logscale xy\n"
            "set format x \"%%.0s %%c\"\n"
            "set format y \"%%.0s %%c\"\n"
            "set xrange [%.6g:%.6g]\n"
            "set yrange [%.6g:%.6g]\n"
            "set size ratio -1\n"
            "set grid\n"
            "set key outside right top\n",
            xlo, xhi, xlo, xhi);
    /* The band where |error| <= tol: error = (m - p)/m, so
     * m in [p/(1 + tol), p/(1 - tol)] (compare.h's convention). */
    fprintf(f, "plot x with lines lc rgb \"black\" dt 1 title \"y = x\"");
    fprintf(f, ", x/(1+%.6g) with lines lc rgb \"#999999\" dt 2 title \"tolerance %.3g%%\"",
            tol, c->tolerance_pct);
    if (tol < 1)
        fprintf(f, ", x/(1-%.6g) with lines lc rgb \"#999999\" dt 2 notitle", tol);
    for (int k = 0; k <= OC_CMP_NCLASS; k++)
        if (sc->present[k])
            fprintf(f, ", \\\n     'scatter.dat' index %d using 1:2 with points pt 7 ps 0.6 "
                       "lc rgb \"%s\" title \"%s\"",
                    sc->block_of[k], class_colour[k], oc_cmp_class_name((enum oc_cmp_class)k));
    fputc('\n', f);
    oc_gp_script_end(f, "scatter", w, h);
    return oc_gp_close(&of, st);
}

int oc_compare_plot(const char *dir, const struct oc_compare *c,
                    const struct oc_plot_opts *po, struct oc_status *st)
{
    oc_gp_remove(dir, "scatter");
    if (c->pairs.n == 0)
        return 0;
    if (oc_mkdir_p(dir, st) != 0)
        return -1;
    struct scatter sc;
    if (scatter_dat(dir, c, &sc, st) != 0)
        return -1;
    if (sc.nblocks == 0) /* every pair had a zero: nothing to draw */
        return 0;
    if (scatter_gp(dir, c, &sc, po, st) != 0)
        return -1;
    static const char *const names[] = {"scatter"};
    return oc_plot_render(dir, po, names, 1, st);
}
