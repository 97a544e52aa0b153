/* sweep_results.c: the write-up of `ocsim sweep` after its simulations
 * (sweep_run.h): sweep.csv in rank order, the ranked table and the chosen
 * layout on stdout, the confidence of the choice, report.md and the plots,
 * the closing counts. It reads the run and writes nothing back but the
 * order of r->items. */
#define _POSIX_C_SOURCE 200809L
#include "sweep_run.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "layout.h"
#include "metrics_csv.h"
#include "plots.h"
#include "report_confidence.h"
#include "report_md.h"

/* Rank: simulated and fitting first by tokens/s (ties: less memory, then
 * the shorter layout string, the one with fewer knobs off their defaults,
 * then the string, so the order is deterministic); then simulated but out
 * of memory; then failed; then pruned by their bound; then those an
 * interruption left unsimulated (no row). (Classes 3 and 4: rejected
 * before simulation and pruned, before the rejected left sweep.csv.) */
static int rank_class(const struct item *it)
{
    switch (it->state) {
    case IT_SIMULATED: return it->mt->fits ? 0 : 1;
    case IT_FAILED: return 2;
    case IT_PRUNED:
    case IT_DOMINATED: return 4;
    case IT_PENDING: break;
    }
    return 5;
}

/* The items and their layout labels while write_ranked sorts their
 * indices (formatting the labels in every comparison was most of a large
 * sweep's output time). */
static const struct item *sort_items;
static char **sort_labels;

static int cmp_items(const void *pa, const void *pb)
{
    const int64_t ia = *(const int64_t *)pa, ib = *(const int64_t *)pb;
    const struct item *a = &sort_items[ia], *b = &sort_items[ib];
    int ca = rank_class(a), cb = rank_class(b);
    if (ca != cb)
        return ca < cb ? -1 : 1;
    if (ca <= 1) {
        if (a->mt->tokens_per_s != b->mt->tokens_per_s)
            return a->mt->tokens_per_s > b->mt->tokens_per_s ? -1 : 1;
        if (a->mt->peak_mem_bytes != b->mt->peak_mem_bytes)
            return a->mt->peak_mem_bytes < b->mt->peak_mem_bytes ? -1 : 1;
    }
    if (ca == 4 && a->bound_s != b->bound_s) /* pruned: by bound */
        return a->bound_s < b->bound_s ? -1 : 1;
    const char *la = sort_labels[ia], *lb = sort_labels[ib];
    if (ca <= 1) {
        /* equal results: the variant closest to the defaults first */
        const size_t na = strlen(la), nb = strlen(lb);
        if (na != nb)
            return na < nb ? -1 : 1;
    }
    return strcmp(la, lb);
}


/* The command as typed, for report.md, without --resume: a resumed sweep's
 * report is the one of the sweep that ran through. */
static char *command_line(int argc, char **argv)
{
    size_t n = 16;
    for (int i = 0; i < argc; i++)
        n += strlen(argv[i]) + 1;
    char *s = oc_xmalloc(n);
    strcpy(s, "ocsim");
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--resume") == 0)
            continue;
        strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}


/* Writes sweep.csv in rank order, without the layouts an interruption
 * left unsimulated, and puts it under its name (csv_table.h: the rows
 * streamed as the layouts finished are replaced in the same temporary; the
 * table appears whole or not at all). Sorts r->items. */
int oc_sweep_write_ranked(struct run *r, struct oc_status *st)
{
    char **labels = oc_xcalloc((size_t)(r->n ? r->n : 1), sizeof *labels);
    int64_t *perm = oc_xcalloc((size_t)(r->n ? r->n : 1), sizeof *perm);
    for (int64_t i = 0; i < r->n; i++) {
        char b[192];
        oc_layout_format(&r->items[i].layout, b, sizeof b);
        labels[i] = oc_xmalloc(strlen(b) + 1);
        strcpy(labels[i], b);
        perm[i] = i;
    }
    sort_items = r->items;
    sort_labels = labels;
    qsort(perm, (size_t)r->n, sizeof *perm, cmp_items);
    sort_labels = NULL;
    sort_items = NULL;
    struct item *sorted = oc_xcalloc((size_t)(r->n ? r->n : 1), sizeof *sorted);
    for (int64_t i = 0; i < r->n; i++)
        sorted[i] = r->items[perm[i]];
    free(r->items);
    r->items = r->plan.items = sorted; /* no longer in candidate order */
    int rc = oc_csv_restart(&r->csv, st);
    r->csv.buffered = 1; /* written whole here: no flush per row */
    for (int64_t i = 0; i < r->n && rc == 0; i++)
        if (r->items[i].state != IT_PENDING)
            oc_sweep_item_row(r, &r->csv, &r->items[i], labels[perm[i]]);
    for (int64_t i = 0; i < r->n; i++)
        free(labels[i]);
    free(labels);
    free(perm);
    if (rc != 0) {
        oc_csv_abandon(&r->csv);
        return -1;
    }
    return oc_csv_close(&r->csv, st);
}



void oc_sweep_results_gather(struct results *x, const struct run *r)
{
    memset(x, 0, sizeof *x);
    int64_t nsim = 0, nrej = r->plan.nexamples;
    for (int64_t i = 0; i < r->n; i++) {
        const enum item_state s = r->items[i].state;
        nsim += s == IT_SIMULATED;
        nrej += s == IT_FAILED;
    }
    x->res = oc_xcalloc((size_t)(nsim ? nsim : 1), sizeof *x->res);
    x->rej = oc_xcalloc((size_t)(nrej ? nrej : 1), sizeof *x->rej);
    for (int64_t i = 0; i < r->n; i++) {
        const struct item *it = &r->items[i];
        if (it->state == IT_PENDING) {
            x->npending++;
            continue;
        }
        if (it->state == IT_PRUNED) {
            x->npruned++;
            continue;
        }
        if (it->state == IT_DOMINATED)
            continue; /* counted in r->plan.ndominated */
        if (it->state == IT_SIMULATED) {
            x->res[x->nres++] = *it->mt;
            x->nfit += it->mt->fits;
            continue;
        }
        struct oc_rejected_layout *j = &x->rej[x->nrej++];
        j->layout = it->layout;
        j->kind = OC_REJECT_FAILED;
        x->nfail++;
        j->peak_mem_bytes = it->cf_peak_bytes;
        j->device_mem_bytes = r->device_mem_bytes;
        snprintf(j->reason, sizeof j->reason, "%s", oc_item_reason_of(it));
    }
    for (int64_t i = 0; i < r->plan.nexamples; i++)
        x->rej[x->nrej++] = r->plan.examples[i];
    x->ninvalid = r->plan.counts.illegal;
    x->noom = r->plan.noom;
}

/* The chosen layout and why, on stdout. res is in rank order (cmp_items):
 * the first one that fits is chosen. */
static void print_chosen(const struct results *x, const struct oc_topology *topo)
{
    if (x->nfit == 0)
        return;
    char name[128], why[4096];
    oc_layout_format(&x->res[0].layout, name, sizeof name);
    oc_report_explain(why, sizeof why, &x->res[0], x->nfit > 1 ? &x->res[1] : NULL, topo);
    /* The text is Markdown for report.md; a terminal gets it without the
     * bold marks. */
    char plain[4096];
    size_t k = 0;
    for (const char *q = why; *q && k + 1 < sizeof plain; q++) {
        if (q[0] == '*' && q[1] == '*') {
            q++;
            continue;
        }
        plain[k++] = *q;
    }
    plain[k] = '\0';
    printf("\nchosen: %s\n%s\n", name, plain);
}

/* The confidence of the choice (core/perturb.h): the best fitting layouts
 * (res is in rank order, the fitting ones first) under o->robustness
 * perturbed cost models. 0 and nothing filled when --robustness 0 or no
 * layout fits. */
int oc_sweep_confidence(const struct oc_opts *o, const struct results *x,
                        struct oc_perturb_result *c)
{
    if (o->robustness <= 0 || x->nfit == 0)
        return 0;
    const struct oc_perturb_spread sp = OC_PERTURB_SPREAD_DEFAULT;
    oc_perturb_run(x->res, x->nfit, o->robustness, o->exec.seed, &sp, c);
    return 1;
}

/* The table and the chosen layout on stdout, then report.md and the
 * plots into `out` (NULL: none), marked when the sweep was interrupted by
 * `sig` (0: not). Returns 0, or 2 when the report could not be written. */
int oc_sweep_report(const struct oc_opts *o, const struct run *r, int argc, char **argv,
                    const char *out, const struct results *x, double wall, int sig,
                    const struct oc_perturb_result *conf)
{
    struct oc_status st = {{0}};
    char *cmdline = command_line(argc, argv);
    char method[128];
    snprintf(method, sizeof method, "SimGrid replay, %s fidelity, %s collectives%s%s",
             o->fidelity, o->collective, o->coarse ? " (coarse rings)" : "",
             o->no_steady ? "" : ", steady state folded where it repeats");
    struct oc_report_ctx ctx = {
        .command_line = cmdline, .model = &o->model, .topo = &o->topo,
        .cards = o->cards, .global_batch = o->layout.global_batch,
        .seq_length = o->layout.seq_length, .method = method,
        .csv_name = "sweep.csv", .top_n = (int)o->top, .wall_s = wall,
        .confidence = conf,
        .search_ranges = r->plan.ranges, .pruned = x->npruned, .noop = r->plan.counts.noop,
        .rejected_counted = 1, .rejected_rule = x->ninvalid, .rejected_memory = x->noom,
        .rejected_csv = o->rejected_csv ? "rejected.csv" : NULL,
    };
    struct oc_plot_opts po = OC_PLOT_OPTS_DEFAULT;
    char note[160];
    if (sig) {
        ctx.interrupted_by = sig == SIGTERM ? "SIGTERM" : "SIGINT";
        ctx.pending = x->npending;
        snprintf(note, sizeof note, "interrupted by %s: %lld of %lld layouts simulated",
                 ctx.interrupted_by, (long long)(x->nres + x->nfail),
                 (long long)(x->nres + x->nfail + x->npending));
        po.note = note;
        ctx.plot = &po;
    }
    oc_report_print_table(stdout, x->res, x->nres, (int)o->top);
    print_chosen(x, &o->topo);
    char line[512];
    oc_report_confidence_line(line, sizeof line, conf);
    if (line[0])
        printf("%s\n", line);
    int rc = 0;
    int prc = out ? oc_report_sweep(out, x->res, x->nres, x->rej, x->nrej, &ctx, &st) : 0;
    if (prc < 0) {
        fprintf(stderr, "ocsim sweep: %s\n", st.msg);
        rc = 2;
    } else if (prc > 0) {
        fprintf(stderr, "ocsim sweep: warning: %s\n", st.msg);
    }
    free(cmdline);
    return rc;
}

/* The closing lines on stdout: the counts, an interruption, the failures
 * (how many, by reason, the first), where the files are. */
/* The counts on stdout, then where report.md (`out`, NULL: not written)
 * and the table (`path`, NULL: not written) are. */
void oc_sweep_summary(const struct results *x, const struct run *r, double wall, int sig,
                      const char *out, const char *path)
{
    printf("\n%lld layouts: %lld simulated in %.1f s (%lld fit), %lld pruned by bound, "
           "%lld out of memory, %lld illegal, %lld failed; %lld no-op variants, "
           "%lld dominated skipped, %lld shared by identical collective variants\n",
           (long long)r->plan.ncand, (long long)x->nres, wall, (long long)x->nfit,
           (long long)x->npruned, (long long)x->noom, (long long)x->ninvalid,
           (long long)x->nfail, (long long)r->plan.counts.noop,
           (long long)r->plan.ndominated, (long long)r->nshared);
    printf("searched: %s\n", r->plan.ranges);
    if (sig)
        printf("interrupted by %s: %lld of %lld layouts simulated; the same command with "
               "--resume finishes the sweep\n",
               sig == SIGTERM ? "SIGTERM" : "SIGINT", (long long)(x->nres + x->nfail),
               (long long)(x->nres + x->nfail + x->npending));
    char fails[2048];
    if (oc_report_failures(fails, sizeof fails, x->rej, x->nrej, x->nres + x->nfail, 0) > 0)
        printf("%s\n", fails);
    if (out && path)
        printf("report: %s/report.md   table: %s\n", out, path);
    else if (path)
        printf("table: %s\n", path);
}

