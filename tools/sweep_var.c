/* sweep_var.c: the best layouts of a sweep re-run under stragglers and
 * jitter and ranked by their mean tokens/s (sweep_var.h). */
#define _POSIX_C_SOURCE 200809L
#include "sweep_var.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv_table.h"
#include "format.h"
#include "plot_variability.h"
#include "simulate_var.h"
#include "var_sample.h"

int oc_sweep_var_check(const struct oc_opts *o, struct oc_variability *v,
                       struct oc_status *st)
{
    memset(v, 0, sizeof *v);
    if (!o->variability) {
        if (o->exec.steps_given)
            return oc_fail(st, "--steps samples steps under --variability, which is missing");
        if (o->var_top_given)
            return oc_fail(st, "--variability-top re-runs layouts under --variability, "
                               "which is missing");
        return 0;
    }
    if (o->n_cards > 1)
        return oc_fail(st, "--variability re-runs the layouts of one sweep: give one card "
                           "count (--cards %lld, not a list)",
                       (long long)o->cards_list[0]);
    return oc_var_spec_read(o, v, st);
}

/* One re-run layout. */
struct vrow {
    const struct oc_metrics *mt; /* its ideal result in the sweep */
    int64_t ideal_rank;          /* 1-based, among the fitting */
    double ideal_s;              /* the replay's ideal step (no noise) */
    struct oc_var_stats s;
    double tokens;               /* per step */
};

static int cmp_rows(const void *pa, const void *pb)
{
    const struct vrow *a = pa, *b = pb;
    /* mean tokens/s, higher first; ties by the ideal rank */
    const double x = a->tokens / a->s.mean, y = b->tokens / b->s.mean;
    if (x != y)
        return x > y ? -1 : 1;
    return (a->ideal_rank > b->ideal_rank) - (a->ideal_rank < b->ideal_rank);
}

static int write_csv(const char *out, const struct vrow *r, int64_t k, int64_t steps,
                     const struct oc_variability *v, struct oc_status *st)
{
    static const char *const cols[] = {
        "rank", "layout", "ideal_rank", "ideal_step_s", "mean_step_s", "p50_step_s",
        "p99_step_s", "loss_mean", "tokens_per_s_ideal", "tokens_per_s_mean", "steps",
        "seed", "compute_cv", "slow_fraction", "slowdown", "link_cv"};
    char path[4200];
    snprintf(path, sizeof path, "%s/variability.csv", out);
    struct oc_csv c = {0};
    if (oc_csv_open(&c, path, cols, 16, st) != 0)
        return -1;
    for (int64_t i = 0; i < k; i++) {
        char name[160];
        oc_layout_format(&r[i].mt->layout, name, sizeof name);
        oc_csv_field_i64(&c, i + 1);
        oc_csv_field_str(&c, name);
        oc_csv_field_i64(&c, r[i].ideal_rank);
        const double f[] = {r[i].ideal_s, r[i].s.mean, r[i].s.p50, r[i].s.p99,
                            r[i].s.mean / r[i].ideal_s - 1, r[i].tokens / r[i].ideal_s,
                            r[i].tokens / r[i].s.mean};
        for (int j = 0; j < 7; j++)
            oc_csv_field_f64(&c, f[j]);
        oc_csv_field_i64(&c, steps);
        oc_csv_field_i64(&c, (int64_t)v->seed);
        oc_csv_field_f64(&c, v->compute_cv);
        oc_csv_field_f64(&c, v->slow_frac);
        oc_csv_field_f64(&c, v->slowdown);
        oc_csv_field_f64(&c, v->link_cv);
        oc_csv_end_row(&c);
    }
    return oc_csv_close(&c, st);
}

/* The choice under the noise against the ideal choice, one sentence. */
static void choice_line(char *buf, size_t n, const struct vrow *r, int64_t k)
{
    char a[160], b[160];
    oc_layout_format(&r[0].mt->layout, a, sizeof a);
    if (r[0].ideal_rank == 1) {
        snprintf(buf, n,
                 "chosen under variability: %s, the ideal choice too (mean step %+.1f%% "
                 "against its ideal)",
                 a, 100 * (r[0].s.mean / r[0].ideal_s - 1));
        return;
    }
    const struct vrow *first = NULL;
    for (int64_t i = 0; i < k; i++)
        if (r[i].ideal_rank == 1)
            first = &r[i];
    OC_ASSERT(first);
    oc_layout_format(&first->mt->layout, b, sizeof b);
    snprintf(buf, n,
             "chosen under variability: %s (ideal rank %lld): %.1f%% more mean tokens/s "
             "than the ideal choice %s, which loses %.1f%% to the noise against %.1f%%",
             a, (long long)r[0].ideal_rank,
             100 * ((r[0].tokens / r[0].s.mean) / (first->tokens / first->s.mean) - 1), b,
             100 * (first->s.mean / first->ideal_s - 1),
             100 * (r[0].s.mean / r[0].ideal_s - 1));
}

static void print_table(FILE *f, const struct vrow *r, int64_t k, int md)
{
    if (md)
        fputs("| # | layout | ideal rank | ideal step | mean step | p99 step | loss | "
              "tokens/s (mean) |\n|--:|---|--:|--:|--:|--:|--:|--:|\n",
              f);
    else
        fprintf(f, "   #  %-46s %5s %11s %11s %11s %7s %14s\n", "layout", "ideal", "ideal step",
                "mean step", "p99 step", "loss", "tokens/s mean");
    for (int64_t i = 0; i < k; i++) {
        char name[160], b[4][32];
        oc_layout_format(&r[i].mt->layout, name, sizeof name);
        oc_fmt_si(b[0], 32, r[i].ideal_s, "s");
        oc_fmt_si(b[1], 32, r[i].s.mean, "s");
        oc_fmt_si(b[2], 32, r[i].s.p99, "s");
        oc_fmt_si(b[3], 32, r[i].tokens / r[i].s.mean, "tok/s");
        const double loss = 100 * (r[i].s.mean / r[i].ideal_s - 1);
        if (md)
            fprintf(f, "| %lld | `%s` | %lld | %s | %s | %s | %+.1f %% | %s |\n",
                    (long long)(i + 1), name, (long long)r[i].ideal_rank, b[0], b[1], b[2],
                    loss, b[3]);
        else
            fprintf(f, "  %2lld  %-46s %5lld %11s %11s %11s %+6.1f%% %14s\n",
                    (long long)(i + 1), name, (long long)r[i].ideal_rank, b[0], b[1], b[2],
                    loss, b[3]);
    }
}

static int append_report(const char *out, const struct vrow *r, int64_t k, int64_t steps,
                         const struct oc_opts *o, const char *choice, struct oc_status *st)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/report.md", out);
    FILE *f = fopen(path, "a");
    if (!f)
        return oc_fail(st, "%s: cannot append: %s", path, strerror(errno));
    fprintf(f,
            "\n## Under variability\n\n"
            "The %lld best fitting layouts, re-run for %lld sampled steps each under "
            "`--variability %s` (seed %llu; one replay of every micro-batch per step, fast "
            "fidelity: `ocsim simulate --variability`, docs/guide.md) and ranked by their "
            "mean tokens/s. The loss is the mean step against the same layout's ideal "
            "step.\n\n",
            (long long)k, (long long)steps, o->variability, (unsigned long long)o->exec.seed);
    print_table(f, r, k, 1);
    fprintf(f, "\n%s.\n\n![step time under variability](variability.png)\n\n"
               "Table: variability.csv.\n",
            choice);
    if (fclose(f) != 0)
        return oc_fail(st, "%s: cannot append: %s", path, strerror(errno));
    return 0;
}

/* Sample every chosen layout into r[0..k); -1 with st on a failed replay. */
static int sample_all(const struct oc_opts *o, const struct oc_replay_opts *ro,
                      const struct oc_variability *v, const struct oc_metrics *res,
                      int64_t k, int64_t steps, struct vrow *r, struct oc_status *st)
{
    double *x = oc_xmalloc((size_t)steps * sizeof *x);
    for (int64_t i = 0; i < k; i++) {
        char name[160];
        oc_layout_format(&res[i].layout, name, sizeof name);
        fprintf(stderr, "ocsim sweep: variability: %lld of %lld: %s, %lld steps\n",
                (long long)(i + 1), (long long)k, name, (long long)steps);
        r[i].mt = &res[i];
        r[i].ideal_rank = i + 1;
        r[i].tokens = res[i].tokens_per_s * res[i].step_time_s;
        if (oc_var_sample(&o->model, &o->topo, &res[i].layout, ro, v, steps, 0,
                          &r[i].ideal_s, x, NULL, st) != 0) {
            free(x);
            return -1;
        }
        oc_var_stats(x, steps, &r[i].s);
    }
    free(x);
    return 0;
}

int oc_sweep_var_run(const struct oc_opts *o, const struct oc_replay_opts *ro,
                     const struct oc_variability *v, const struct oc_metrics *res, int64_t n,
                     const char *out)
{
    int64_t nfit = 0;
    while (nfit < n && res[nfit].fits)
        nfit++;
    const int64_t k = nfit < o->var_top ? nfit : o->var_top;
    if (k == 0) {
        fprintf(stderr, "ocsim sweep: --variability: no fitting layout to re-run\n");
        return 0;
    }
    const int64_t steps = o->exec.steps_given ? o->exec.steps : OC_SWEEP_VAR_STEPS;
    struct oc_status st = {{0}};
    struct vrow *r = oc_xcalloc((size_t)k, sizeof *r);
    fflush(stdout);
    if (sample_all(o, ro, v, res, k, steps, r, &st) != 0) {
        fprintf(stderr, "ocsim sweep: --variability: %s\n", st.msg);
        free(r);
        return 2;
    }
    qsort(r, (size_t)k, sizeof *r, cmp_rows);
    printf("\nunder variability (%s; %lld steps each, seed %llu), by mean tokens/s:\n",
           o->variability, (long long)steps, (unsigned long long)v->seed);
    print_table(stdout, r, k, 0);
    char choice[768];
    choice_line(choice, sizeof choice, r, k);
    printf("%s\n", choice);
    int rc = 0;
    if (out) {
        struct oc_var_plot_row *pr = oc_xcalloc((size_t)k, sizeof *pr);
        for (int64_t i = 0; i < k; i++) {
            oc_layout_format(&r[i].mt->layout, pr[i].label, sizeof pr[i].label);
            pr[i].ideal_s = r[i].ideal_s, pr[i].mean_s = r[i].s.mean;
            pr[i].p50_s = r[i].s.p50, pr[i].p99_s = r[i].s.p99;
        }
        int prc = 0;
        if (write_csv(out, r, k, steps, v, &st) != 0 ||
            append_report(out, r, k, steps, o, choice, &st) != 0 ||
            (prc = oc_plot_variability(out, pr, k, NULL, NULL, &st)) < 0) {
            fprintf(stderr, "ocsim sweep: %s\n", st.msg);
            rc = 2;
        } else if (prc > 0) {
            fprintf(stderr, "ocsim sweep: warning: %s\n", st.msg);
        }
        free(pr);
        if (rc == 0)
            printf("variability: %s/variability.csv, %s/variability.png\n", out, out);
    }
    free(r);
    return rc;
}
