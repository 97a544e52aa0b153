/* plot_sweep.c: the plots of a sweep (see plots.h: throughput, memory,
 * breakdown, bubble) from the simulated layouts' metrics and the layouts
 * rejected before simulation, and the ranking that these plots and
 * report.md share (oc_report_rank).
 *
 * What it is not: the gnuplot runner or the file helpers (plots.c,
 * plot_write.h), nor the single-layout Gantt chart (plot_pipeline.c). The
 * figures plotted are those of core/metrics.h; nothing is recomputed here
 * except the bubble closed form drawn for comparison.
 */
#define _POSIX_C_SOURCE 200809L
#include "plots.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "paths.h" /* oc_mkdir_p */
#include "placement.h"
#include "plot_write.h"

/* Colours of the (pp, v) series of the bubble plot. */
static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                      "#9467bd", "#8c564b", "#e377c2", "#17becf"};
#define NPALETTE ((int)(sizeof palette / sizeof palette[0]))

/* ------------------------------------------------------------------ */
/* Rejections and ranking                                               */

enum oc_reject_kind oc_reject_kind_of(const char *reason)
{
    return reason && strncmp(reason, "out of memory", 13) == 0 ? OC_REJECT_MEMORY
                                                               : OC_REJECT_RULE;
}

const char *oc_reject_kind_name(enum oc_reject_kind k)
{
    switch (k) {
    case OC_REJECT_RULE: return "invalid layout";
    case OC_REJECT_MEMORY: return "out of memory";
    case OC_REJECT_FAILED: return "simulation failed";
    }
    return "?";
}

struct rank_key {
    int fits;
    double tps;
    double step;
    char label[96];
    int64_t idx;
};

static int cmp_rank(const void *pa, const void *pb)
{
    const struct rank_key *a = pa, *b = pb;
    if (a->fits != b->fits)
        return b->fits - a->fits;
    if (a->tps != b->tps)
        return a->tps > b->tps ? -1 : 1;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    int c = strcmp(a->label, b->label);
    if (c)
        return c;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

int64_t oc_report_rank(const struct oc_metrics *mt, int64_t n, int64_t *order)
{
    if (n <= 0)
        return 0;
    struct rank_key *k = oc_xmalloc((size_t)n * sizeof *k);
    int64_t nfit = 0;
    for (int64_t i = 0; i < n; i++) {
        k[i].fits = mt[i].fits != 0;
        k[i].tps = isfinite(mt[i].tokens_per_s) ? mt[i].tokens_per_s : 0;
        k[i].step = isfinite(mt[i].step_time_s) ? mt[i].step_time_s : INFINITY;
        oc_layout_format(&mt[i].layout, k[i].label, sizeof k[i].label);
        k[i].idx = i;
        nfit += k[i].fits;
    }
    qsort(k, (size_t)n, sizeof *k, cmp_rank);
    for (int64_t i = 0; i < n; i++)
        order[i] = k[i].idx;
    free(k);
    return nfit;
}

/* ------------------------------------------------------------------ */
/* Sweep plots                                                          */

struct sweep_in {
    const struct oc_metrics *mt;
    int64_t n;
    const int64_t *order; /* ranked */
    int64_t nfit;
    const struct oc_rejected_layout *rej;
    int64_t nrej;
    const struct oc_plot_opts *o;
};

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The caller's note (an interrupted sweep) under every sweep plot. */
static void sweep_note(FILE *f, const struct sweep_in *in)
{
    if (!in->o->note || !in->o->note[0])
        return;
    fputs("set label 99 ", f);
    oc_gp_str(f, in->o->note);
    fprintf(f, " at screen 0.01, screen 0.02 left font \",10\" tc rgb '%s'\n", OC_GP_REJ);
}

/* throughput: the top_n that fit, best first, as horizontal bars. */
static int plot_throughput(const char *dir, const struct sweep_in *in, int *written,
                           struct oc_status *st)
{
    int64_t k = min64(in->nfit, in->o->top_n);
    *written = 0;
    if (k == 0)
        return 0;
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "throughput.dat", st);
    if (!f)
        return -1;
    fprintf(f, "# throughput.dat: tokens/s of the layouts that fit, best first\n"
               "# rank layout tokens_per_s step_time_s mfu label\n");
    double vmax = 0;
    for (int64_t i = 0; i < k; i++) {
        const struct oc_metrics *m = &in->mt[in->order[i]];
        char lay[96];
        oc_layout_format(&m->layout, lay, sizeof lay);
        fprintf(f, "%lld ", (long long)i + 1);
        oc_gp_str(f, lay);
        char lab[32];
        fprintf(f, " %.9g %.9g %.9g \"%s\"\n", m->tokens_per_s, m->step_time_s, m->mfu,
                oc_fmt_si(lab, sizeof lab, m->tokens_per_s, "tok/s"));
        if (m->tokens_per_s > vmax)
            vmax = m->tokens_per_s;
    }
    if (oc_gp_close(&of, st) != 0)
        return -1;

    int h = in->o->height_px;
    if (k > 30) /* keep about 20 px per bar */
        h = (int)(120 + 20 * k);
    f = oc_gp_open(&of, dir, "throughput.gp", st);
    if (!f)
        return -1;
    oc_gp_script_begin(f, "throughput", "tokens per second per layout, best first", "ocsim",
                       in->o->width_px, h);
    sweep_note(f, in);
    fprintf(f,
            "set title \"Throughput: the %lld best of %lld layouts that fit in memory "
            "(%lld simulated)\"\n"
            "set xlabel \"tokens/s (whole job)\"\n"
            "set format x \"%%.1s %%c\"\n"
            "set xrange [0:%.9g]\n"
            "set yrange [%lld.5:0.5]\n"
            "set ytics scale 0 font \",9\"\n"
            "set grid xtics\n"
            "set style fill solid 0.85 noborder\n"
            "unset key\n"
            "plot 'throughput.dat' using ($3/2):1:($3/2):(0.38):ytic(2) with boxxyerror "
            "lc rgb '%s', \\\n"
            "     '' using 3:1:(\" \".strcol(6)) with labels left font \",8\"\n",
            (long long)k, (long long)in->nfit, (long long)in->n, vmax * 1.18,
            (long long)k, OC_GP_FWD);
    oc_gp_script_end(f, "throughput", in->o->width_px, h);
    if (oc_gp_close(&of, st) != 0)
        return -1;
    *written = 1;
    return 0;
}

struct mem_row {
    char label[96];
    double bytes;
    int fits;
    const char *source; /* "sim" or "closed-form" */
    const char *color;
};

static int cmp_rej_peak(const void *pa, const void *pb)
{
    const struct oc_rejected_layout *a = *(const struct oc_rejected_layout *const *)pa;
    const struct oc_rejected_layout *b = *(const struct oc_rejected_layout *const *)pb;
    return (a->peak_mem_bytes > b->peak_mem_bytes) - (a->peak_mem_bytes < b->peak_mem_bytes);
}

/* memory: simulated layouts in rank order, then the closest misses of the
 * closed form, against the device line. */
static int plot_memory(const char *dir, const struct sweep_in *in, int *written,
                       struct oc_status *st)
{
    *written = 0;
    int64_t ksim = min64(in->n, in->o->top_n);
    const struct oc_rejected_layout **oom =
        oc_xmalloc((size_t)(in->nrej > 0 ? in->nrej : 1) * sizeof *oom);
    int64_t noom = 0;
    double cap = 0;
    for (int64_t i = 0; i < in->n && cap <= 0; i++)
        cap = in->mt[i].device_mem_bytes;
    for (int64_t i = 0; i < in->nrej; i++) {
        if (cap <= 0)
            cap = in->rej[i].device_mem_bytes;
        if (in->rej[i].kind == OC_REJECT_MEMORY && in->rej[i].peak_mem_bytes >= 0)
            oom[noom++] = &in->rej[i];
    }
    qsort(oom, (size_t)noom, sizeof *oom, cmp_rej_peak);
    int64_t koom = min64(noom, in->o->top_n);
    int64_t rows = ksim + koom;
    if (rows == 0) {
        free(oom);
        return 0;
    }
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "memory.dat", st);
    if (!f) {
        free(oom);
        return -1;
    }
    fprintf(f, "# memory.dat: peak memory per GPU (worst stage); device memory %.9g bytes\n"
               "# source sim: simulated (ranked order); closed-form: rejected before "
               "simulation\n"
               "# index layout peak_mem_bytes fits source rgb\n",
            cap);
    double ymax = cap;
    int present[3] = {0, 0, 0};
    for (int64_t i = 0; i < rows; i++) {
        struct mem_row r;
        if (i < ksim) {
            const struct oc_metrics *m = &in->mt[in->order[i]];
            oc_layout_format(&m->layout, r.label, sizeof r.label);
            r.bytes = m->peak_mem_bytes;
            r.fits = m->fits != 0;
            r.source = "sim";
            r.color = r.fits ? OC_GP_FITS : OC_GP_NOFIT;
            present[r.fits ? 0 : 1] = 1;
        } else {
            const struct oc_rejected_layout *j = oom[i - ksim];
            oc_layout_format(&j->layout, r.label, sizeof r.label);
            r.bytes = j->peak_mem_bytes;
            r.fits = 0;
            r.source = "closed-form";
            r.color = OC_GP_REJ;
            present[2] = 1;
        }
        if (r.bytes > ymax)
            ymax = r.bytes;
        fprintf(f, "%lld ", (long long)i + 1);
        oc_gp_str(f, r.label);
        fprintf(f, " %.9g %d %s %ld\n", r.bytes, r.fits, r.source, oc_gp_rgb(r.color));
    }
    free(oom);
    if (oc_gp_close(&of, st) != 0)
        return -1;

    f = oc_gp_open(&of, dir, "memory.gp", st);
    if (!f)
        return -1;
    oc_gp_script_begin(f, "memory", "peak memory per GPU per layout against the device",
                       "ocsim", in->o->width_px, in->o->height_px);
    sweep_note(f, in);
    char capb[32];
    fprintf(f,
            "set title \"Peak memory per GPU (worst pipeline stage): %lld simulated, "
            "%lld rejected for memory\"\n"
            "set ylabel \"bytes per GPU\"\n"
            "set format y \"%%.0s %%cB\"\n"
            "set yrange [0:%.9g]\n"
            "set xrange [0.4:%lld.6]\n"
            "set xtics rotate by 60 right scale 0 font \",8\"\n"
            "set grid ytics\n"
            "set style fill solid 0.85 noborder\n"
            "set boxwidth 0.75\n"
            "set key top left opaque\n",
            (long long)ksim, (long long)koom, ymax * 1.25, (long long)rows);
    fprintf(f, "plot 'memory.dat' using 1:3:6:xtic(2) with boxes lc rgb variable notitle");
    if (cap > 0)
        fprintf(f, ", \\\n     %.9g with lines dt 2 lw 2 lc rgb 'black' title 'device memory %s'",
                cap, oc_fmt_si(capb, sizeof capb, cap, "B"));
    static const char *const key_title[3] = {"simulated, fits", "simulated, does not fit",
                                             "rejected by the closed form"};
    static const char *const key_color[3] = {OC_GP_FITS, OC_GP_NOFIT, OC_GP_REJ};
    for (int i = 0; i < 3; i++)
        if (present[i])
            fprintf(f, ", \\\n     keyentry with boxes lc rgb '%s' title '%s'",
                    key_color[i], key_title[i]);
    fputc('\n', f);
    oc_gp_script_end(f, "memory", in->o->width_px, in->o->height_px);
    if (oc_gp_close(&of, st) != 0)
        return -1;
    *written = 1;
    return 0;
}

/* breakdown: compute / bubble / exposed comm / other per layout. */
static int plot_breakdown(const char *dir, const struct sweep_in *in, int *written,
                          struct oc_status *st)
{
    int64_t k = min64(in->nfit, in->o->top_n);
    *written = 0;
    if (k == 0)
        return 0;
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "breakdown.dat", st);
    if (!f)
        return -1;
    /* Definitions in core/metrics.h: compute_s and exposed_comm_s are means
     * over ranks, bubble_s = bubble_fraction * step_time_s; "other" is what
     * the three leave of the step (stage imbalance, optimizer wait...). */
    fprintf(f, "# breakdown.dat: seconds per step, means over GPUs, ranked order\n"
               "# rank layout compute_s bubble_s exposed_comm_s other_s step_time_s\n");
    double smax = 0;
    for (int64_t i = 0; i < k; i++) {
        const struct oc_metrics *m = &in->mt[in->order[i]];
        char lay[96];
        oc_layout_format(&m->layout, lay, sizeof lay);
        if (m->step_time_s > smax)
            smax = m->step_time_s;
        double bub = m->bubble_fraction * m->step_time_s;
        double other = m->step_time_s - m->compute_s - bub - m->exposed_comm_s;
        if (other < 0)
            other = 0;
        fprintf(f, "%lld ", (long long)i + 1);
        oc_gp_str(f, lay);
        fprintf(f, " %.9g %.9g %.9g %.9g %.9g\n", m->compute_s, bub, m->exposed_comm_s,
                other, m->step_time_s);
    }
    if (oc_gp_close(&of, st) != 0)
        return -1;
    f = oc_gp_open(&of, dir, "breakdown.gp", st);
    if (!f)
        return -1;
    oc_gp_script_begin(f, "breakdown", "where the step time goes, per layout", "ocsim",
                       in->o->width_px, in->o->height_px);
    sweep_note(f, in);
    fprintf(f,
            "set title \"Step time per GPU: compute, bubble, exposed communication, other "
            "(the %lld best layouts)\"\n"
            "set ylabel \"seconds per step (mean over GPUs)\"\n"
            "set format y \"%%.1s %%cs\"\n"
            "set yrange [0:%.9g]\n"
            "set xrange [-0.6:%lld.6]\n"
            "set style data histograms\n"
            "set style histogram rowstacked\n"
            "set style fill solid 0.9 noborder\n"
            "set boxwidth 0.75\n"
            "set xtics rotate by 60 right scale 0 font \",8\"\n"
            "set grid ytics\n"
            "set key top right opaque\n"
            "plot 'breakdown.dat' using 3:xtic(2) title 'compute' lc rgb '%s', \\\n"
            "     '' using 4 title 'bubble' lc rgb '%s', \\\n"
            "     '' using 5 title 'exposed comm' lc rgb '%s', \\\n"
            "     '' using 6 title 'other' lc rgb '%s'\n",
            (long long)k, smax * 1.3, (long long)k - 1, OC_GP_FWD, OC_GP_BUBBLE, OC_GP_PP,
            OC_GP_RECOMP);
    oc_gp_script_end(f, "breakdown", in->o->width_px, in->o->height_px);
    if (oc_gp_close(&of, st) != 0)
        return -1;
    *written = 1;
    return 0;
}

struct pv {
    int64_t p, v;
};

static int cmp_pv(const void *pa, const void *pb)
{
    const struct pv *a = pa, *b = pb;
    if (a->p != b->p)
        return (a->p > b->p) - (a->p < b->p);
    return (a->v > b->v) - (a->v < b->v);
}

/* bubble: simulated bubble fraction per layout against m, with the closed
 * form (p-1)/(v*m + p-1) (Narayanan et al. 2021, section 2.2) per (p, v). */
static int plot_bubble(const char *dir, const struct sweep_in *in, int *written,
                       struct oc_status *st)
{
    *written = 0;
    if (in->n == 0)
        return 0;
    struct pv *g = oc_xmalloc((size_t)in->n * sizeof *g);
    int64_t ng = 0;
    double mmin = INFINITY, mmax = 0;
    for (int64_t i = 0; i < in->n; i++) {
        const struct oc_layout *lay = &in->mt[i].layout;
        struct pv x = {lay->pp, oc_place_interleaved_chunks(lay)};
        int64_t j;
        for (j = 0; j < ng; j++)
            if (g[j].p == x.p && g[j].v == x.v)
                break;
        if (j == ng)
            g[ng++] = x;
        double m = (double)in->mt[i].num_micro_batches;
        if (m > 0 && m < mmin)
            mmin = m;
        if (m > mmax)
            mmax = m;
    }
    qsort(g, (size_t)ng, sizeof *g, cmp_pv);
    if (!(mmin <= mmax) || mmax <= 0) {
        free(g);
        return 0;
    }
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "bubble.dat", st);
    if (!f) {
        free(g);
        return -1;
    }
    fprintf(f, "# bubble.dat: simulated bubble fraction against micro-batches per step,\n"
               "# one block (gnuplot index) per (pp, v), in the order of bubble.gp\n"
               "# num_micro_batches bubble_fraction layout\n");
    for (int64_t j = 0; j < ng; j++) {
        fprintf(f, "%s# pp %lld v %lld\n", j ? "\n\n" : "", (long long)g[j].p,
                (long long)g[j].v);
        for (int64_t i = 0; i < in->n; i++) {
            const struct oc_metrics *m = &in->mt[i];
            if (m->layout.pp != g[j].p || oc_place_interleaved_chunks(&m->layout) != g[j].v)
                continue;
            char lay[96];
            oc_layout_format(&m->layout, lay, sizeof lay);
            fprintf(f, "%lld %.9g ", (long long)m->num_micro_batches, m->bubble_fraction);
            oc_gp_str(f, lay);
            fputc('\n', f);
        }
    }
    if (oc_gp_close(&of, st) != 0) {
        free(g);
        return -1;
    }
    f = oc_gp_open(&of, dir, "bubble.gp", st);
    if (!f) {
        free(g);
        return -1;
    }
    oc_gp_script_begin(f, "bubble", "pipeline bubble fraction against micro-batches per step",
                       "ocsim", in->o->width_px, in->o->height_px);
    sweep_note(f, in);
    fprintf(f,
            "set title \"Pipeline bubble: simulated (points) and (p-1)/(v*m+p-1) "
            "(lines, Narayanan et al. 2021)\"\n"
            "set xlabel \"micro-batches per step (m)\"\n"
            "set ylabel \"bubble fraction of the step\"\n"
            "set logscale x 2\n"
            "set xrange [%.9g:%.9g]\n"
            "set yrange [0:*]\n"
            "set samples 300\n"
            "set grid\n"
            "set key outside right top\n"
            "plot",
            mmin / 1.5, mmax * 1.5);
    for (int64_t j = 0; j < ng; j++) {
        const char *c = palette[j % NPALETTE];
        char name[48];
        if (g[j].v > 1)
            snprintf(name, sizeof name, "pp%lld v%lld", (long long)g[j].p, (long long)g[j].v);
        else
            snprintf(name, sizeof name, "pp%lld", (long long)g[j].p);
        fprintf(f,
                "%s 'bubble.dat' index %lld using 1:2 with points pt 7 ps 1.3 lc rgb '%s' "
                "title '%s simulated', \\\n"
                "     (%lld-1.0)/(%lld*x+%lld-1.0) with lines dt 2 lw 1.5 lc rgb '%s' "
                "title '%s closed form'",
                j ? ", \\\n    " : "", (long long)j, c, name, (long long)g[j].p,
                (long long)g[j].v, (long long)g[j].p, c, name);
    }
    fputc('\n', f);
    oc_gp_script_end(f, "bubble", in->o->width_px, in->o->height_px);
    free(g);
    if (oc_gp_close(&of, st) != 0)
        return -1;
    *written = 1;
    return 0;
}

int oc_plot_sweep(const char *dir, const struct oc_metrics *mt, int64_t n,
                  const struct oc_rejected_layout *rej, int64_t nrej,
                  const struct oc_plot_opts *o, struct oc_status *st)
{
    OC_ASSERT(dir && (mt || n == 0) && (rej || nrej == 0));
    struct oc_plot_opts po = oc_plot_opts_fill(o);
    if (oc_mkdir_p(dir, st) != 0)
        return -1;
    int64_t *order = oc_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    struct sweep_in in = {.mt = mt, .n = n, .order = order, .rej = rej, .nrej = nrej,
                          .o = &po};
    in.nfit = oc_report_rank(mt, n, order);

    static const char *const all[] = {"throughput", "memory", "breakdown", "bubble"};
    int (*const fn[])(const char *, const struct sweep_in *, int *, struct oc_status *) = {
        plot_throughput, plot_memory, plot_breakdown, plot_bubble};
    const char *done[4];
    int ndone = 0;
    for (int i = 0; i < 4; i++) {
        oc_gp_remove(dir, all[i]);
        int w = 0;
        if (fn[i](dir, &in, &w, st) != 0) {
            free(order);
            return -1;
        }
        if (w)
            done[ndone++] = all[i];
    }
    free(order);
    return oc_plot_render(dir, &po, done, ndone, st);
}
