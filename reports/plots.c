/* plots.c: gnuplot scripts, their data files, and the gnuplot runs that turn
 * them into PNG and SVG (see plots.h). The scripts are generated here as
 * text (no template folder to find at run time) and left in the output
 * folder, so that restyling a plot is editing NAME.gp and rerunning it.
 * What it is not: a plotting library; every picture is gnuplot's.
 */
#define _POSIX_C_SOURCE 200809L
#include "plots.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format.h"
#include "paths.h" /* oc_mkdir_p */

/* Colours, one per meaning, shared by every plot. */
#define C_FWD "#3b75af"
#define C_BWD "#519e3e"
#define C_RECOMP "#8d69b8"
#define C_OPT "#8c613c"
#define C_TP "#6e6e6e"
#define C_PP "#d65f5f"
#define C_DP "#c44e9f"
#define C_WAIT "#d5bb67"
#define C_FITS "#2ca02c"
#define C_NOFIT "#ff7f0e"
#define C_REJ "#d62728"
#define C_BUBBLE "#bbbbbb"

static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                      "#9467bd", "#8c564b", "#e377c2", "#17becf"};
#define NPALETTE ((int)(sizeof palette / sizeof palette[0]))

/* "#rrggbb" as the integer gnuplot's `lc rgb variable` reads from a column. */
static long rgb_int(const char *hex) { return strtol(hex + 1, NULL, 16); }

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
/* Files                                                                */

static FILE *open_in(const char *dir, const char *name, struct oc_status *st)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        oc_fail(st, "%s: cannot write: %s", path, strerror(errno));
    return f;
}

static int close_in(FILE *f, const char *dir, const char *name, struct oc_status *st)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return oc_fail(st, "%s/%s: writing failed", dir, name);
    return 0;
}

/* Removes NAME.{gp,dat,png,svg} left by an earlier run, so that what is in
 * the folder afterwards is what this run made. */
static void remove_plot(const char *dir, const char *name)
{
    static const char *const ext[] = {"gp", "dat", "png", "svg"};
    char path[4096];
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext[i]);
        unlink(path);
    }
}

/* A quoted string for a gnuplot data file or script: layout names and
 * titles hold no quotes, but a user title might. */
static void gp_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
    fputc('"', f);
}

/* ------------------------------------------------------------------ */
/* Scripts                                                              */

static void script_begin(FILE *f, const char *name, const char *what,
                         const struct oc_plot_opts *o, int height_px)
{
    fprintf(f,
            "# %s.gp: %s.\n"
            "# Written by ocsim. Restyle it and rerun in this folder: gnuplot %s.gp\n"
            "# Data: %s.dat. Makes %s.png and %s.svg.\n"
            "set encoding utf8\n"
            "set terminal pngcairo size %d,%d font \"sans,10\" noenhanced\n"
            "set output '%s.png'\n",
            name, what, name, name, name, name, o->width_px, height_px, name);
}

static void script_end(FILE *f, const char *name, const struct oc_plot_opts *o,
                       int height_px)
{
    fprintf(f,
            "set terminal svg size %d,%d dynamic font \"sans,10\" noenhanced "
            "background rgb 'white'\n"
            "set output '%s.svg'\n"
            "replot\n"
            "unset output\n",
            o->width_px, height_px, name);
}

/* ------------------------------------------------------------------ */
/* Running gnuplot                                                      */

/* The last non-empty line of gnuplot.log, to quote in an error. */
static void log_tail(const char *dir, char *out, size_t n)
{
    char path[4096], line[256];
    snprintf(path, sizeof path, "%s/gnuplot.log", dir);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        size_t k = strlen(line);
        while (k > 0 && (line[k - 1] == '\n' || line[k - 1] == '\r' || line[k - 1] == ' '))
            line[--k] = '\0';
        if (k > 0)
            snprintf(out, n, "%.200s", line);
    }
    fclose(f);
}

int oc_plot_render(const char *dir, const struct oc_plot_opts *o,
                   const char *const *names, int n, struct oc_status *st)
{
    if (o->no_render || n == 0)
        return 0;
    const char *prog = o->gnuplot ? o->gnuplot : getenv("OCSIM_GNUPLOT");
    if (!prog || !prog[0])
        prog = "gnuplot";
    char log_path[4096];
    snprintf(log_path, sizeof log_path, "%s/gnuplot.log", dir);
    int lf = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (lf < 0) {
        oc_fail(st, "plots not rendered: %s: cannot write: %s", log_path, strerror(errno));
        return 1;
    }
    int failed = 0;
    for (int i = 0; i < n && !failed; i++) {
        char script[256];
        snprintf(script, sizeof script, "%s.gp", names[i]);
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            oc_fail(st, "cannot start %s: %s; the scripts and data are in %s", prog,
                    strerror(errno), dir);
            failed = 1;
            break;
        }
        if (pid == 0) {
            /* Child: the folder as working directory (the scripts use
             * relative names), gnuplot's output into the log. */
            if (chdir(dir) != 0)
                _exit(126);
            dup2(lf, STDOUT_FILENO);
            dup2(lf, STDERR_FILENO);
            execlp(prog, prog, script, (char *)NULL);
            _exit(127);
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            continue;
        failed = 1;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
            oc_fail(st, "plots not rendered: '%s' was not found (install gnuplot, or set "
                        "OCSIM_GNUPLOT); the scripts and data are in %s: run "
                        "`gnuplot NAME.gp` there",
                    prog, dir);
        } else {
            char tail[256];
            log_tail(dir, tail, sizeof tail);
            oc_fail(st, "plots not rendered: %s %s failed (%s %d)%s%s; see %s",
                    prog, script, WIFEXITED(status) ? "exit" : "signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                    tail[0] ? ": " : "", tail, log_path);
        }
    }
    close(lf);
    return failed ? 1 : 0;
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

/* throughput: the top_n that fit, best first, as horizontal bars. */
static int plot_throughput(const char *dir, const struct sweep_in *in, int *written,
                           struct oc_status *st)
{
    int64_t k = min64(in->nfit, in->o->top_n);
    *written = 0;
    if (k == 0)
        return 0;
    FILE *f = open_in(dir, "throughput.dat", st);
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
        gp_str(f, lay);
        char lab[32];
        fprintf(f, " %.9g %.9g %.9g \"%s\"\n", m->tokens_per_s, m->step_time_s, m->mfu,
                oc_fmt_si(lab, sizeof lab, m->tokens_per_s, "tok/s"));
        if (m->tokens_per_s > vmax)
            vmax = m->tokens_per_s;
    }
    if (close_in(f, dir, "throughput.dat", st) != 0)
        return -1;

    int h = in->o->height_px;
    if (k > 30) /* keep about 20 px per bar */
        h = (int)(120 + 20 * k);
    f = open_in(dir, "throughput.gp", st);
    if (!f)
        return -1;
    script_begin(f, "throughput", "tokens per second per layout, best first", in->o, h);
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
            (long long)k, C_FWD);
    script_end(f, "throughput", in->o, h);
    if (close_in(f, dir, "throughput.gp", st) != 0)
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
    FILE *f = open_in(dir, "memory.dat", st);
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
            r.color = r.fits ? C_FITS : C_NOFIT;
            present[r.fits ? 0 : 1] = 1;
        } else {
            const struct oc_rejected_layout *j = oom[i - ksim];
            oc_layout_format(&j->layout, r.label, sizeof r.label);
            r.bytes = j->peak_mem_bytes;
            r.fits = 0;
            r.source = "closed-form";
            r.color = C_REJ;
            present[2] = 1;
        }
        if (r.bytes > ymax)
            ymax = r.bytes;
        fprintf(f, "%lld ", (long long)i + 1);
        gp_str(f, r.label);
        fprintf(f, " %.9g %d %s %ld\n", r.bytes, r.fits, r.source, rgb_int(r.color));
    }
    free(oom);
    if (close_in(f, dir, "memory.dat", st) != 0)
        return -1;

    f = open_in(dir, "memory.gp", st);
    if (!f)
        return -1;
    script_begin(f, "memory", "peak memory per GPU per layout against the device",
                 in->o, in->o->height_px);
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
    static const char *const key_color[3] = {C_FITS, C_NOFIT, C_REJ};
    for (int i = 0; i < 3; i++)
        if (present[i])
            fprintf(f, ", \\\n     keyentry with boxes lc rgb '%s' title '%s'",
                    key_color[i], key_title[i]);
    fputc('\n', f);
    script_end(f, "memory", in->o, in->o->height_px);
    if (close_in(f, dir, "memory.gp", st) != 0)
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
    FILE *f = open_in(dir, "breakdown.dat", st);
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
        gp_str(f, lay);
        fprintf(f, " %.9g %.9g %.9g %.9g %.9g\n", m->compute_s, bub, m->exposed_comm_s,
                other, m->step_time_s);
    }
    if (close_in(f, dir, "breakdown.dat", st) != 0)
        return -1;
    f = open_in(dir, "breakdown.gp", st);
    if (!f)
        return -1;
    script_begin(f, "breakdown", "where the step time goes, per layout", in->o,
                 in->o->height_px);
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
            (long long)k, smax * 1.3, (long long)k - 1, C_FWD, C_BUBBLE, C_PP, C_RECOMP);
    script_end(f, "breakdown", in->o, in->o->height_px);
    if (close_in(f, dir, "breakdown.gp", st) != 0)
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

static int64_t chunks_of(const struct oc_layout *l)
{
    return l->schedule == OC_SCHED_INTERLEAVED && l->vchunks > 0 ? l->vchunks : 1;
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
        struct pv x = {in->mt[i].layout.pp, chunks_of(&in->mt[i].layout)};
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
    FILE *f = open_in(dir, "bubble.dat", st);
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
            if (m->layout.pp != g[j].p || chunks_of(&m->layout) != g[j].v)
                continue;
            char lay[96];
            oc_layout_format(&m->layout, lay, sizeof lay);
            fprintf(f, "%lld %.9g ", (long long)m->num_micro_batches, m->bubble_fraction);
            gp_str(f, lay);
            fputc('\n', f);
        }
    }
    if (close_in(f, dir, "bubble.dat", st) != 0) {
        free(g);
        return -1;
    }
    f = open_in(dir, "bubble.gp", st);
    if (!f) {
        free(g);
        return -1;
    }
    script_begin(f, "bubble", "pipeline bubble fraction against micro-batches per step",
                 in->o, in->o->height_px);
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
    script_end(f, "bubble", in->o, in->o->height_px);
    free(g);
    if (close_in(f, dir, "bubble.gp", st) != 0)
        return -1;
    *written = 1;
    return 0;
}

static struct oc_plot_opts fill_opts(const struct oc_plot_opts *o)
{
    struct oc_plot_opts r = o ? *o : OC_PLOT_OPTS_DEFAULT;
    if (r.top_n < 1)
        r.top_n = 30;
    if (r.width_px < 200)
        r.width_px = 1200;
    if (r.height_px < 200)
        r.height_px = 700;
    return r;
}

int oc_plot_sweep(const char *dir, const struct oc_metrics *mt, int64_t n,
                  const struct oc_rejected_layout *rej, int64_t nrej,
                  const struct oc_plot_opts *o, struct oc_status *st)
{
    OC_ASSERT(dir && (mt || n == 0) && (rej || nrej == 0));
    struct oc_plot_opts po = fill_opts(o);
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
        remove_plot(dir, all[i]);
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

/* ------------------------------------------------------------------ */
/* Pipeline Gantt chart                                                 */

/* SENDs of one peer to one receiver, by tag, to find when a RECV's data
 * started to move. */
struct send_entry {
    int64_t tag;
    double start_s;
};
struct send_index {
    int64_t sender, receiver;
    int64_t n;
    struct send_entry *e;
};

static int cmp_send(const void *pa, const void *pb)
{
    const struct send_entry *a = pa, *b = pb;
    return (a->tag > b->tag) - (a->tag < b->tag);
}

static void send_index_build(struct send_index *x, const struct oc_timeline *tl,
                             int64_t sender, int64_t receiver)
{
    const struct oc_rank_ops *ro = &tl->sched->ranks[sender];
    x->sender = sender;
    x->receiver = receiver;
    x->n = 0;
    x->e = NULL;
    if (!tl->start_s[sender])
        return;
    x->e = oc_xmalloc((size_t)(ro->n > 0 ? ro->n : 1) * sizeof *x->e);
    for (int64_t i = 0; i < ro->n; i++)
        if (ro->ops[i].kind == OC_OP_SEND && ro->ops[i].peer == receiver)
            x->e[x->n++] = (struct send_entry){ro->ops[i].tag, tl->start_s[sender][i]};
    qsort(x->e, (size_t)x->n, sizeof *x->e, cmp_send);
}

/* Start of the SEND matching a RECV from `sender` with `tag`, or NAN. */
static double send_start(const struct send_index *x, int64_t tag)
{
    int64_t lo = 0, hi = x->n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (x->e[mid].tag < tag)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < x->n && x->e[lo].tag == tag ? x->e[lo].start_s : NAN;
}

enum gantt_kind { G_FWD, G_BWD, G_RECOMP, G_OPT, G_TP, G_PP, G_DP, G_WAIT, G_NKIND };
static const char *const gantt_word[G_NKIND] = {"F", "B", "R", "opt", "tp", "pp", "dp", "wait"};
static const char *const gantt_title[G_NKIND] = {
    "forward", "backward", "recompute", "optimizer", "TP collective",
    "pipeline transfer", "DP / embedding collective", "wait for async comm"};
static const char *const gantt_color[G_NKIND] = {C_FWD, C_BWD, C_RECOMP, C_OPT,
                                                 C_TP,  C_PP,  C_DP,     C_WAIT};

static int gantt_kind_of(const struct oc_op *op)
{
    switch ((enum oc_op_kind)op->kind) {
    case OC_OP_COMPUTE:
        switch ((enum oc_phase)op->phase) {
        case OC_PHASE_FWD: return G_FWD;
        case OC_PHASE_BWD: return G_BWD;
        case OC_PHASE_RECOMPUTE: return G_RECOMP;
        case OC_PHASE_OPTIMIZER: return G_OPT;
        }
        return G_FWD;
    case OC_OP_SEND:
    case OC_OP_RECV: return G_PP;
    case OC_OP_COLLECTIVE: return op->group == OC_GROUP_TP ? G_TP : G_DP;
    case OC_OP_WAIT: return G_WAIT;
    default: return -1;
    }
}

/* Row geometry (the y axis runs downwards, stage 0 on top): compute fills
 * the row, blocking communication is a thinner box inside it, transfers
 * that overlap compute a strip under it. */
#define ROW_COMP_LO (-0.40)
#define ROW_COMP_HI 0.22
#define ROW_SYNC_LO (-0.24)
#define ROW_SYNC_HI 0.06
#define ROW_SIDE_LO 0.27
#define ROW_SIDE_HI 0.40

struct gbox {
    double a, b;
    int kind;
    int64_t op;
};
struct glabel {
    double x, y;
    char text[24];
};

/* One row being written: the current run of a micro-batch's forward
 * (backward, recompute) work, which becomes one box, with the TP
 * collectives that interrupt it drawn on top when at least 1/1000 of the
 * step wide (thinner ones are part of the run's box); the labels. */
struct grow {
    FILE *f;
    int64_t stage;
    double step_s;
    int vchunks;
    int present[G_NKIND];
    int active;
    int kind;
    int32_t mb, chunk;
    int64_t first_op;
    double start_s, end_s;
    struct gbox *tp;
    int64_t ntp, captp;
    struct glabel *lab;
    int64_t nlab, caplab;
    int64_t nboxes;
};

static void gbox_write(struct grow *g, double a, double b, int k, int side, int64_t op)
{
    double lo = k <= G_OPT ? ROW_COMP_LO : side ? ROW_SIDE_LO : ROW_SYNC_LO;
    double hi = k <= G_OPT ? ROW_COMP_HI : side ? ROW_SIDE_HI : ROW_SYNC_HI;
    double s = (double)g->stage;
    g->present[k] = 1;
    fprintf(g->f, "%lld %.4f %.4f %.9g %.9g %ld %s %lld\n", (long long)g->stage, s + lo, s + hi,
            a, b, rgb_int(gantt_color[k]), gantt_word[k], (long long)op);
    g->nboxes++;
}

/* Ends the current run: its box, the TP boxes inside it, and its label
 * when the box is wide enough to hold it (at 1200 px, about 1000 px of
 * plot, a character of the 7-point font takes about 0.5% of the step's
 * width; plus a margin of 1.5 characters). */
static void grun_flush(struct grow *g)
{
    if (!g->active)
        return;
    gbox_write(g, g->start_s, g->end_s, g->kind, 0, g->first_op);
    for (int64_t i = 0; i < g->ntp; i++)
        gbox_write(g, g->tp[i].a, g->tp[i].b, G_TP, 0, g->tp[i].op);
    g->ntp = 0;
    char text[24];
    if (g->vchunks > 1)
        snprintf(text, sizeof text, "%d.%d", (int)g->mb, (int)g->chunk);
    else
        snprintf(text, sizeof text, "%d", (int)g->mb);
    if (g->end_s - g->start_s >= g->step_s * 0.005 * ((double)strlen(text) + 1.5)) {
        if (g->nlab == g->caplab) {
            g->caplab = g->caplab ? 2 * g->caplab : 64;
            g->lab = oc_xrealloc(g->lab, (size_t)g->caplab * sizeof *g->lab);
        }
        struct glabel *l = &g->lab[g->nlab++];
        l->x = (g->start_s + g->end_s) / 2;
        l->y = (double)g->stage + (ROW_COMP_LO + ROW_COMP_HI) / 2;
        snprintf(l->text, sizeof l->text, "%s", text);
    }
    g->active = 0;
}

/* The rank drawn for a stage: TP 0, DP 0, else whoever stands in for it,
 * else any recorded rank of the stage; -1 if none. *shown is that rank's
 * own id (the one in the label). */
static int64_t stage_source(const struct oc_timeline *tl, const struct oc_layout *l,
                            int64_t stage, int64_t *shown)
{
    struct oc_coord c = {0, stage, 0};
    int64_t r = oc_layout_rank(l, c);
    *shown = r;
    if (tl->start_s[r])
        return r;
    if (tl->proxy[r] >= 0 && tl->proxy[r] < tl->nranks && tl->start_s[tl->proxy[r]])
        return tl->proxy[r];
    for (c.dp = 0; c.dp < l->dp; c.dp++)
        for (c.tp = 0; c.tp < l->tp; c.tp++) {
            int64_t q = oc_layout_rank(l, c);
            if (tl->start_s[q])
                return q;
        }
    return -1;
}

int oc_plot_pipeline(const char *dir, const struct oc_timeline *tl,
                     const struct oc_layout *l, const struct oc_plot_opts *o,
                     struct oc_status *st)
{
    OC_ASSERT(dir && tl && tl->sched);
    if (!l)
        l = &tl->sched->layout;
    OC_ASSERT(oc_layout_world(l) == tl->nranks);
    struct oc_plot_opts po = fill_opts(o);
    if (oc_mkdir_p(dir, st) != 0)
        return -1;
    remove_plot(dir, "pipeline");
    const int64_t p = l->pp;
    int64_t *src = oc_xmalloc((size_t)p * sizeof *src);
    int64_t *shown = oc_xmalloc((size_t)p * sizeof *shown);
    double step_s = 0;
    int64_t rows = 0;
    for (int64_t s = 0; s < p; s++) {
        src[s] = stage_source(tl, l, s, &shown[s]);
        if (src[s] < 0)
            continue;
        rows++;
        const struct oc_rank_ops *ro = &tl->sched->ranks[src[s]];
        for (int64_t i = 0; i < ro->n; i++)
            if (isfinite(tl->end_s[src[s]][i]) && tl->end_s[src[s]][i] > step_s)
                step_s = tl->end_s[src[s]][i];
    }
    if (rows == 0 || step_s <= 0) {
        free(src);
        free(shown);
        return oc_fail(st, "pipeline plot: the timeline holds no timed ops");
    }
    FILE *f = open_in(dir, "pipeline.dat", st);
    if (!f) {
        free(src);
        free(shown);
        return -1;
    }
    char lay[96];
    oc_layout_format(l, lay, sizeof lay);
    fprintf(f,
            "# pipeline.dat: %s, one row per pipeline stage (TP rank 0, DP rank 0)\n"
            "# index 0, boxes: stage y_lo y_hi start_s end_s rgb kind op (first op of a run)\n"
            "#   kind: F B R opt (compute), tp pp dp wait (communication)\n",
            lay);
    struct grow g;
    memset(&g, 0, sizeof g);
    g.f = f;
    g.step_s = step_s;
    g.vchunks = (int)chunks_of(l);
    for (int64_t s = 0; s < p; s++) {
        int64_t r = src[s];
        if (r < 0)
            continue;
        const struct oc_rank_ops *ro = &tl->sched->ranks[r];
        const double *t0 = tl->start_s[r], *t1 = tl->end_s[r];
        struct send_index idx[4];
        int nidx = 0;
        g.stage = s;
        g.active = 0;
        g.ntp = 0;
        for (int64_t i = 0; i < ro->n; i++) {
            const struct oc_op *op = &ro->ops[i];
            int k = gantt_kind_of(op);
            if (k < 0 || !isfinite(t0[i]) || !isfinite(t1[i]))
                continue;
            double a = t0[i], b = t1[i];
            if (op->kind == OC_OP_COMPUTE && (k == G_FWD || k == G_BWD || k == G_RECOMP) &&
                op->mb >= 0) {
                if (g.active && g.kind == k && g.mb == op->mb && g.chunk == op->chunk) {
                    g.end_s = b > g.end_s ? b : g.end_s;
                    continue;
                }
                grun_flush(&g);
                g.active = 1;
                g.kind = k;
                g.mb = op->mb;
                g.chunk = op->chunk;
                g.first_op = i;
                g.start_s = a;
                g.end_s = b;
                continue;
            }
            int side = op->kind == OC_OP_SEND || (op->kind == OC_OP_COLLECTIVE && op->async);
            if (k == G_TP && !side && g.active && op->mb == g.mb) {
                /* A TP collective inside the run extends it. */
                g.end_s = b > g.end_s ? b : g.end_s;
                if (b - a >= step_s * 1e-3) {
                    if (g.ntp == g.captp) {
                        g.captp = g.captp ? 2 * g.captp : 16;
                        g.tp = oc_xrealloc(g.tp, (size_t)g.captp * sizeof *g.tp);
                    }
                    g.tp[g.ntp++] = (struct gbox){a, b, G_TP, i};
                }
                continue;
            }
            if (b <= a)
                continue;
            if (op->kind == OC_OP_RECV && op->peer >= 0 && op->peer < tl->nranks) {
                int j;
                for (j = 0; j < nidx; j++)
                    if (idx[j].sender == op->peer)
                        break;
                if (j == nidx && nidx < 4)
                    send_index_build(&idx[nidx++], tl, op->peer, r);
                if (j < nidx) {
                    double ss = send_start(&idx[j], op->tag);
                    if (isfinite(ss) && ss > a)
                        a = ss < b ? ss : b; /* the wait before is bubble */
                }
            }
            if (!side)
                grun_flush(&g); /* blocking work of another kind ends the run */
            if (b > a)
                gbox_write(&g, a, b, k, side, i);
        }
        grun_flush(&g);
        for (int j = 0; j < nidx; j++)
            free(idx[j].e);
    }
    /* index 1: micro-batch numbers (mb.chunk when interleaved). */
    fprintf(f, "\n\n# index 1, labels: x_s y text (micro-batch, .chunk when interleaved)\n");
    for (int64_t i = 0; i < g.nlab; i++)
        fprintf(f, "%.9g %.9g \"%s\"\n", g.lab[i].x, g.lab[i].y, g.lab[i].text);
    int64_t nlabels = g.nlab;
    int present[G_NKIND];
    memcpy(present, g.present, sizeof present);
    free(g.tp);
    free(g.lab);
    if (close_in(f, dir, "pipeline.dat", st) != 0) {
        free(src);
        free(shown);
        return -1;
    }

    /* Time unit: seconds, milliseconds or microseconds after the step. */
    double u = 1;
    const char *unit = "s";
    if (step_s < 2e-3) {
        u = 1e6;
        unit = "us";
    } else if (step_s < 2) {
        u = 1e3;
        unit = "ms";
    }
    int h = (int)(160 + 60 * p);
    if (h < po.height_px)
        h = po.height_px;
    if (h > 4000)
        h = 4000;
    f = open_in(dir, "pipeline.gp", st);
    if (!f) {
        free(src);
        free(shown);
        return -1;
    }
    script_begin(f, "pipeline", "Gantt chart of one step, one row per pipeline stage", &po, h);
    fprintf(f, "u = %g  # seconds to %s\n", u, unit);
    if (po.title) {
        fputs("set title ", f);
        gp_str(f, po.title);
        fputc('\n', f);
    } else {
        fprintf(f,
                "set title \"Pipeline of one step, %s, %lld micro-batches: one row per "
                "stage; gaps are bubbles\"\n",
                lay, (long long)tl->sched->num_micro_batches);
    }
    fprintf(f,
            "set xlabel \"time since the start of the step (%s)\"\n"
            "set xrange [0:%.9g]\n"
            "set yrange [%lld.5:-0.5]\n"
            "set grid xtics\n"
            "set style fill solid 1.0 noborder\n"
            "set key outside bottom center horizontal\n"
            "set ytics (",
            unit, step_s * u, (long long)p - 1);
    int first = 1;
    for (int64_t s = 0; s < p; s++) {
        if (src[s] < 0)
            continue;
        if (src[s] == shown[s])
            fprintf(f, "%s\"stage %lld, rank %lld\" %lld", first ? "" : ", ", (long long)s,
                    (long long)shown[s], (long long)s);
        else
            fprintf(f, "%s\"stage %lld, rank %lld (as %lld)\" %lld", first ? "" : ", ",
                    (long long)s, (long long)src[s], (long long)shown[s], (long long)s);
        first = 0;
    }
    fprintf(f, ")\n"
               "plot 'pipeline.dat' index 0 using (($4+$5)/2*u):(($2+$3)/2):($4*u):($5*u):2:3:6 "
               "with boxxyerror lc rgb variable notitle");
    if (nlabels > 0)
        fprintf(f, ", \\\n     '' index 1 using ($1*u):2:3 with labels tc rgb 'white' "
                   "font \",7\" notitle");
    for (int k = 0; k < G_NKIND; k++)
        if (present[k])
            fprintf(f, ", \\\n     keyentry with boxes lc rgb '%s' title '%s'", gantt_color[k],
                    gantt_title[k]);
    fputc('\n', f);
    script_end(f, "pipeline", &po, h);
    free(src);
    free(shown);
    if (close_in(f, dir, "pipeline.gp", st) != 0)
        return -1;
    static const char *const names[] = {"pipeline"};
    return oc_plot_render(dir, &po, names, 1, st);
}
