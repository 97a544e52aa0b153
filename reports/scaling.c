/* scaling.c: the scaling table and plot of a sweep over card counts (see
 * scaling.h). */
#include "scaling.h"

#include <string.h>

#include "csv_table.h"
#include "format.h"
#include "outfile.h"
#include "plot_write.h"

void oc_scaling_fill(struct oc_scaling_row *rows, int n)
{
    int base = -1;
    for (int i = 0; i < n; i++) {
        struct oc_scaling_row *r = &rows[i];
        r->tokens_per_s_per_gpu = r->have_best ? r->best.tokens_per_s / (double)r->cards : 0;
        if (base < 0 && r->have_best)
            base = i;
    }
    for (int i = 0; i < n; i++) {
        struct oc_scaling_row *r = &rows[i];
        r->base_cards = base >= 0 ? rows[base].cards : 0;
        r->efficiency = base >= 0 && r->have_best
                            ? r->tokens_per_s_per_gpu / rows[base].tokens_per_s_per_gpu
                            : 0;
    }
}

static const char *const cols[] = {
    "cards", "layout", "tokens_per_s", "tokens_per_s_per_gpu", "mfu", "step_time_s",
    "scaling_efficiency", "base_cards", "peak_mem_bytes", "reserve_bytes",
    "confidence_best", "confidence_within_2pct", "sweep_dir", "status",
};
#define NCOLS ((int)(sizeof cols / sizeof cols[0]))

static const char *status_of(const struct oc_scaling_row *r)
{
    if (r->rc == 130)
        return "interrupted";
    if (!r->have_best)
        return "no layout fits";
    return r->rc == 0 ? "ok" : "some simulations failed";
}

static int write_csv(const char *dir, const struct oc_scaling_row *rows, int n,
                     const struct oc_scaling_ctx *ctx, struct oc_status *st)
{
    char path[OC_OUTFILE_PATH_MAX];
    snprintf(path, sizeof path, "%s/scaling.csv", dir);
    struct oc_csv c = {0};
    if (oc_csv_open_bare(&c, path, st) != 0)
        return -1;
    if (ctx->command_line) {
        char line[2048];
        snprintf(line, sizeof line, "command: %s", ctx->command_line);
        oc_csv_comment(&c, line);
    }
    oc_csv_header(&c, cols, NCOLS);
    for (int i = 0; i < n; i++) {
        const struct oc_scaling_row *r = &rows[i];
        char lay[128] = "", sub[64];
        if (r->have_best)
            oc_layout_format(&r->best.layout, lay, sizeof lay);
        snprintf(sub, sizeof sub, "cards-%lld", (long long)r->cards);
        oc_csv_field_i64(&c, r->cards);
        oc_csv_field_str(&c, lay);
        if (r->have_best) {
            oc_csv_field_f64(&c, r->best.tokens_per_s);
            oc_csv_field_f64(&c, r->tokens_per_s_per_gpu);
            oc_csv_field_f64(&c, r->best.mfu);
            oc_csv_field_f64(&c, r->best.step_time_s);
            oc_csv_field_f64(&c, r->efficiency);
            oc_csv_field_i64(&c, r->base_cards);
            oc_csv_field_f64(&c, r->best.peak_mem_bytes);
            oc_csv_field_f64(&c, r->best.reserve_bytes);
        } else {
            for (int k = 0; k < 8; k++)
                oc_csv_field_str(&c, "");
        }
        if (r->have_confidence) {
            oc_csv_field_f64(&c, r->conf_best);
            oc_csv_field_f64(&c, r->conf_within);
        } else {
            oc_csv_field_str(&c, "");
            oc_csv_field_str(&c, "");
        }
        oc_csv_field_str(&c, sub);
        oc_csv_field_str(&c, status_of(r));
        oc_csv_end_row(&c);
    }
    return oc_csv_close(&c, st);
}

static int write_md(const char *dir, const struct oc_scaling_row *rows, int n,
                    const struct oc_scaling_ctx *ctx, int plotted, struct oc_status *st)
{
    char path[OC_OUTFILE_PATH_MAX];
    snprintf(path, sizeof path, "%s/scaling.md", dir);
    struct oc_outfile of;
    if (oc_outfile_open(&of, path, st) != 0)
        return -1;
    FILE *f = of.f;
    fprintf(f, "# ocsim sweep: %s on %s, by card count\n\n", ctx->model ? ctx->model : "model",
            ctx->gpu ? ctx->gpu : "GPU");
    if (ctx->command_line)
        fprintf(f, "Command:\n\n```\n%s\n```\n\n", ctx->command_line);
    fputs("The chosen layout of each card count (its full sweep in `cards-N/`). Scaling "
          "efficiency = (tokens/s per card) / (tokens/s per card at the smallest count "
          "with a chosen layout). Confidence: the share of perturbed cost models in which "
          "the chosen layout stays the best / within 2% of the best (report.md of each "
          "count).\n\n"
          "| cards | chosen layout | tokens/s | per card | MFU | efficiency | peak + reserve "
          "| best in | within 2% | |\n"
          "|--:|---|--:|--:|--:|--:|--:|--:|--:|---|\n",
          f);
    for (int i = 0; i < n; i++) {
        const struct oc_scaling_row *r = &rows[i];
        if (!r->have_best) {
            fprintf(f, "| %lld | none | | | | | | | | [%s](cards-%lld/report.md) |\n",
                    (long long)r->cards, status_of(r), (long long)r->cards);
            continue;
        }
        char lay[128], a[32], b[32], m[32], cb[16] = "", cw[16] = "";
        oc_layout_format(&r->best.layout, lay, sizeof lay);
        if (r->have_confidence) {
            snprintf(cb, sizeof cb, "%.0f%%", 100 * r->conf_best);
            snprintf(cw, sizeof cw, "%.0f%%", 100 * r->conf_within);
        }
        fprintf(f, "| %lld | `%s` | %s | %s | %.1f%% | %.1f%% | %s | %s | %s | "
                   "[report](cards-%lld/report.md) |\n",
                (long long)r->cards, lay, oc_fmt_si(a, sizeof a, r->best.tokens_per_s, "tok/s"),
                oc_fmt_si(b, sizeof b, r->tokens_per_s_per_gpu, "tok/s"), 100 * r->best.mfu,
                100 * r->efficiency,
                oc_fmt_si(m, sizeof m, r->best.peak_mem_bytes + r->best.reserve_bytes, "B"), cb,
                cw, (long long)r->cards);
    }
    fputs("\nTable: [scaling.csv](scaling.csv).\n\n", f);
    if (plotted)
        fputs("![tokens/s, MFU and scaling efficiency by card count](scaling.png)\n\n", f);
    if (oc_outfile_commit(&of, st) != 0)
        return -1;
    return 0;
}

/* The two panels of scaling.gp, for the terminal set before. */
static void plot_body(FILE *f, const char *title)
{
    fputs("set multiplot layout 2,1 title ", f);
    oc_gp_str(f, title);
    fprintf(f, "\nset grid\nset key top left\nset xlabel 'cards'\n"
               "set offsets graph 0.08, graph 0.08, graph 0.15, 0\n"
               "set ylabel 'tokens/s'\nset format y '%%.2s%%c'\nset yrange [*:*]\n"
               "plot 'scaling.dat' using 1:2:xtic(1) with linespoints lw 2 pt 7 lc rgb '%s' "
               "title 'best tokens/s', \\\n"
               "     '' using 1:5 with lines dt 2 lc rgb '#888888' title 'linear from the "
               "base', \\\n"
               "     '' using 1:2:6 with labels offset 0,1 font ',8' notitle\n"
               "set ylabel 'percent'\nset format y '%%g'\nset yrange [0:*]\n"
               "plot 'scaling.dat' using 1:3:xtic(1) with linespoints lw 2 pt 5 lc rgb '%s' "
               "title 'MFU', \\\n"
               "     '' using 1:4 with linespoints lw 2 pt 9 lc rgb '%s' "
               "title 'scaling efficiency'\n"
               "unset multiplot\n",
            OC_GP_FWD, OC_GP_BWD, OC_GP_DP);
}

/* scaling.dat and scaling.gp: tokens/s against cards with the ideal line
 * from the base, and below it MFU and scaling efficiency in percent. */
static int write_plot(const char *dir, const struct oc_scaling_row *rows, int n,
                      const struct oc_scaling_ctx *ctx, struct oc_status *st)
{
    oc_gp_remove(dir, "scaling");
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "scaling.dat", st);
    if (!f)
        return -1;
    fputs("# cards tokens_per_s mfu_pct efficiency_pct ideal_tokens_per_s layout\n", f);
    double base_tpg = 0;
    for (int i = 0; i < n; i++)
        if (rows[i].have_best && rows[i].cards == rows[i].base_cards)
            base_tpg = rows[i].tokens_per_s_per_gpu;
    for (int i = 0; i < n; i++) {
        const struct oc_scaling_row *r = &rows[i];
        if (!r->have_best)
            continue;
        char lay[128];
        oc_layout_format(&r->best.layout, lay, sizeof lay);
        fprintf(f, "%lld %.9g %.6g %.6g %.9g ", (long long)r->cards, r->best.tokens_per_s,
                100 * r->best.mfu, 100 * r->efficiency, base_tpg * (double)r->cards);
        oc_gp_str(f, lay);
        fputc('\n', f);
    }
    if (oc_gp_close(&of, st) != 0)
        return -1;
    f = oc_gp_open(&of, dir, "scaling.gp", st);
    if (!f)
        return -1;
    const int w = 1000, h = 800;
    oc_gp_script_begin(f, "scaling", "tokens/s, MFU and scaling efficiency by card count",
                       "ocsim", w, h);
    char title[256];
    snprintf(title, sizeof title, "%s on %s: the chosen layout per card count",
             ctx->model ? ctx->model : "model", ctx->gpu ? ctx->gpu : "GPU");
    plot_body(f, title);
    /* a multiplot is drawn again for the SVG: `replot` (oc_gp_script_end)
     * would redo only its last panel */
    fprintf(f, "set terminal svg size %d,%d dynamic font \"sans,10\" noenhanced "
               "background rgb 'white'\nset output 'scaling.svg'\n", w, h);
    plot_body(f, title);
    fputs("unset output\n", f);
    return oc_gp_close(&of, st);
}

int oc_scaling_write(const char *dir, const struct oc_scaling_row *rows, int n,
                     const struct oc_scaling_ctx *ctx, struct oc_status *st)
{
    if (write_csv(dir, rows, n, ctx, st) != 0)
        return -1;
    int any = 0;
    for (int i = 0; i < n; i++)
        any |= rows[i].have_best;
    int prc = 0;
    char warning[OC_MSG_MAX] = "";
    if (any) {
        if (write_plot(dir, rows, n, ctx, st) != 0)
            return -1;
        const struct oc_plot_opts po = oc_plot_opts_fill(ctx->plot);
        const char *names[] = {"scaling"};
        struct oc_status pst = {{0}};
        prc = oc_plot_render(dir, &po, names, 1, &pst);
        if (prc < 0)
            return oc_fail(st, "%s", pst.msg);
        if (prc > 0)
            snprintf(warning, sizeof warning, "%s", pst.msg);
    }
    if (write_md(dir, rows, n, ctx, any && prc == 0, st) != 0)
        return -1;
    if (prc > 0) {
        oc_fail(st, "%s", warning);
        return 1;
    }
    return 0;
}
