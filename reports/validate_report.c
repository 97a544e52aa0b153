/* validate_report.c: validation.csv and the predicted-against-measured plot
 * of `ocsim validate` (see validate_report.h). */
#define _POSIX_C_SOURCE 200809L
#include "validate_report.h"

#include <math.h>
#include <string.h>

#include "csv_table.h"
#include "paths.h" /* oc_mkdir_p */
#include "plot_write.h"

static const char *state_name(enum oc_val_state s)
{
    return s == OC_VAL_OK ? "ok" : s == OC_VAL_SKIPPED ? "skipped" : "failed";
}

int oc_val_write_csv(const char *path, const struct oc_val_row *rows, int64_t n,
                     struct oc_status *st)
{
    static const char *const cols[] = {
        "table",    "line",      "label",     "quantity",  "unit",  "measured",
        "predicted", "error_pct", "runtime_s", "state",     "fits",  "cards",
        "model",    "topology",  "layout",    "note",      "source"};
    struct oc_csv c = {0};
    if (oc_csv_open(&c, path, cols, (int)(sizeof cols / sizeof cols[0]), st) != 0)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        const struct oc_val_row *r = &rows[i];
        const int ok = r->state == OC_VAL_OK;
        oc_csv_field_str(&c, r->table);
        oc_csv_field_i64(&c, r->line);
        oc_csv_field_str(&c, r->label);
        oc_csv_field_str(&c, r->quantity);
        oc_csv_field_str(&c, r->unit);
        oc_csv_field_f64(&c, r->measured);
        if (ok) {
            oc_csv_field_f64(&c, r->predicted);
            oc_csv_field_f64(&c, r->error_pct);
        } else {
            oc_csv_field_str(&c, "");
            oc_csv_field_str(&c, "");
        }
        oc_csv_field_f64(&c, r->runtime_s);
        oc_csv_field_str(&c, state_name(r->state));
        oc_csv_field_i64(&c, r->fits);
        oc_csv_field_i64(&c, r->cards);
        oc_csv_field_str(&c, r->model);
        oc_csv_field_str(&c, r->topology);
        oc_csv_field_str(&c, r->layout);
        oc_csv_field_str(&c, r->note);
        oc_csv_field_str(&c, r->source);
        oc_csv_end_row(&c);
    }
    return oc_csv_close(&c, st);
}

/* validation.dat: one gnuplot block per table (in the order the tables
 * first appear), columns measured predicted label; rows without a positive
 * finite pair are left out (log axes). Fills the range and the tables. */
struct vplot {
    const char *tables[64];
    int ntables;
    double lo, hi;
};

static int table_index(struct vplot *vp, const char *t)
{
    for (int i = 0; i < vp->ntables; i++)
        if (strcmp(vp->tables[i], t) == 0)
            return i;
    if (vp->ntables == (int)(sizeof vp->tables / sizeof vp->tables[0]))
        return -1;
    vp->tables[vp->ntables] = t;
    return vp->ntables++;
}

static int plotted(const struct oc_val_row *r)
{
    return r->state == OC_VAL_OK && r->measured > 0 && r->predicted > 0 &&
           isfinite(r->measured) && isfinite(r->predicted);
}

static int write_dat(const char *dir, const struct oc_val_row *rows, int64_t n,
                     struct vplot *vp, struct oc_status *st)
{
    memset(vp, 0, sizeof *vp);
    vp->lo = INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (plotted(&rows[i]))
            (void)table_index(vp, rows[i].table);
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "validation.dat", st);
    if (!f)
        return -1;
    fputs("# validation.dat: ocsim validate, one block per table (gnuplot index)\n"
          "# columns: measured predicted label (in the row's own unit)\n", f);
    for (int k = 0; k < vp->ntables; k++) {
        if (k > 0)
            fputs("\n\n", f);
        fprintf(f, "# table %s\n", vp->tables[k]);
        for (int64_t i = 0; i < n; i++) {
            const struct oc_val_row *r = &rows[i];
            if (!plotted(r) || strcmp(r->table, vp->tables[k]) != 0)
                continue;
            fprintf(f, "%.9g %.9g ", r->measured, r->predicted);
            oc_gp_str(f, r->label);
            fputc('\n', f);
            vp->lo = fmin(vp->lo, fmin(r->measured, r->predicted));
            vp->hi = fmax(vp->hi, fmax(r->measured, r->predicted));
        }
    }
    return oc_gp_close(&of, st);
}

static const char *const series_colour[] = {OC_GP_FWD, OC_GP_BWD, OC_GP_PP, OC_GP_DP,
                                            OC_GP_RECOMP, OC_GP_OPT, OC_GP_NOFIT,
                                            OC_GP_WAIT, OC_GP_TP};

static int write_gp(const char *dir, const struct vplot *vp, const struct oc_plot_opts *po,
                    struct oc_status *st)
{
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "validation.gp", st);
    if (!f)
        return -1;
    const int w = po->width_px, h = po->height_px > 0 ? po->height_px : 700;
    double lo = pow(10, floor(log10(vp->lo))), hi = pow(10, ceil(log10(vp->hi)));
    if (hi <= lo)
        hi = lo * 10;
    oc_gp_script_begin(f, "validation", "predicted against measured, one point per row",
                       "ocsim validate", w, h);
    fputs("set title \"Predicted vs measured (each row in its table's unit: s or ms, "
          "TFLOP/s per GPU, GiB, GB/s)\"\n"
          "set xlabel \"measured\"\nset ylabel \"predicted\"\n"
          "set logscale xy\nset size ratio -1\nset grid\n"
          "set key outside right top noenhanced\n", f);
    fprintf(f, "set xrange [%.6g:%.6g]\nset yrange [%.6g:%.6g]\n", lo, hi, lo, hi);
    fputs("plot x with lines lc rgb \"black\" title \"y = x\", "
          "1.1*x with lines lc rgb \"#999999\" dt 2 title \"+-10%\", "
          "0.9*x with lines lc rgb \"#999999\" dt 2 notitle", f);
    const int ncol = (int)(sizeof series_colour / sizeof series_colour[0]);
    for (int k = 0; k < vp->ntables; k++) {
        const char *base = strrchr(vp->tables[k], '/');
        fprintf(f, ", \\\n     'validation.dat' index %d using 1:2 with points pt 7 ps 0.9 "
                   "lc rgb \"%s\" title ",
                k, series_colour[k % ncol]);
        oc_gp_str(f, base ? base + 1 : vp->tables[k]);
    }
    fputc('\n', f);
    oc_gp_script_end(f, "validation", w, h);
    return oc_gp_close(&of, st);
}

int oc_val_plot(const char *dir, const struct oc_val_row *rows, int64_t n,
                const struct oc_plot_opts *po, struct oc_status *st)
{
    oc_gp_remove(dir, "validation");
    if (oc_mkdir_p(dir, st) != 0)
        return -1;
    struct vplot vp;
    if (write_dat(dir, rows, n, &vp, st) != 0)
        return -1;
    if (vp.ntables == 0) /* no row to draw */
        return 0;
    if (write_gp(dir, &vp, po, st) != 0)
        return -1;
    static const char *const names[] = {"validation"};
    return oc_plot_render(dir, po, names, 1, st);
}
