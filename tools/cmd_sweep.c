/* cmd_sweep.c: `ocsim sweep` enumerates every layout of N cards, simulates
 * the ones that are legal and fit in memory, in parallel, and ranks them.
 * Rows of sweep.csv are written to its temporary as layouts finish; at the
 * end they are rewritten there in rank order and the table is put under its
 * name (core/outfile.h: whole or not at all), then the plots and report.md
 * are made. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "csv_table.h"
#include "format.h"
#include "layout.h"
#include "memory.h"
#include "metrics_csv.h"
#include "options.h"
#include "paths.h"
#include "plots.h"
#include "report_md.h"
#include "sim_opts.h"
#include "sweep.h"

#define GROUPS (OC_OPT_OUT | OC_OPT_SWEEP | OC_OPT_SIM)

static void help(void)
{
    puts("usage: ocsim sweep --cards N [--model M] [--topology T] [--global-batch B]\n"
         "                   [--seq S] [--micro-batches 1,2,4] [--schedule LIST]\n"
         "                   [--out DIR] [--jobs J] [--fidelity fast|full] [...]\n\n"
         "Enumerates every TP x PP x DP layout of N cards for each micro-batch size\n"
         "and schedule, rejects the illegal ones and those whose closed-form memory\n"
         "does not fit the device (listed with the reason, not simulated), simulates\n"
         "the rest with SimGrid on all cores, and ranks them by tokens/s. Writes\n"
         "DIR/sweep.csv (one row per layout), DIR/report.md, and the plots with\n"
         "their gnuplot scripts and data (default DIR: out/sweep).");
    oc_opts_print_help(stdout, GROUPS);
}

struct item {
    struct oc_layout layout;
    int simulated;       /* 1: result in mt */
    int failed;          /* simulation failed: reason says why */
    double cf_peak_bytes;/* closed-form peak, -1 when the layout is illegal */
    char reason[OC_MSG_MAX];
    struct oc_metrics *mt;
};

struct run {
    struct item *items;
    int64_t *sim_index;  /* sweep index -> item index */
    int64_t total, done;
    struct oc_csv csv;
    int progress;        /* stderr is a terminal */
    double t0;
    double device_mem_bytes;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress(const struct run *r)
{
    if (!r->progress)
        return;
    int width = 30;
    int fill = r->total ? (int)(width * r->done / r->total) : width;
    fprintf(stderr, "\r[%.*s%*s] %lld/%lld layouts simulated  %.1f s", fill,
            "##############################", width - fill, "",
            (long long)r->done, (long long)r->total, now_s() - r->t0);
    if (r->done == r->total)
        fputc('\n', stderr);
    fflush(stderr);
}

static void row(struct oc_csv *c, const struct item *it, double device_mem_bytes)
{
    if (it->simulated)
        oc_metrics_csv_row(c, it->mt, it->mt->fits ? "" : it->reason);
    else
        oc_metrics_csv_row_rejected(c, &it->layout, it->cf_peak_bytes,
                                    device_mem_bytes, it->reason);
}

static void on_done(void *ctx, int64_t index, const struct oc_metrics *mt,
                    const char *err)
{
    struct run *r = ctx;
    struct item *it = &r->items[r->sim_index[index]];
    if (mt) {
        *it->mt = *mt;
        it->simulated = 1;
        if (!mt->fits) {
            char need[32], have[32];
            snprintf(it->reason, sizeof it->reason,
                     "out of memory in the replay: %s per GPU, the device has %s",
                     oc_fmt_si(need, sizeof need, mt->peak_mem_bytes, "B"),
                     oc_fmt_si(have, sizeof have, mt->device_mem_bytes, "B"));
        }
    } else {
        it->failed = 1;
        snprintf(it->reason, sizeof it->reason, "simulation failed: %s", err);
    }
    row(&r->csv, it, r->device_mem_bytes);
    r->done++;
    progress(r);
}

/* Rank: simulated and fitting first by tokens/s (ties: less memory, then
 * the layout string, so the order is deterministic); then simulated but out
 * of memory; then failed; then rejected before simulation. */
static int rank_class(const struct item *it)
{
    if (it->simulated)
        return it->mt->fits ? 0 : 1;
    return it->failed ? 2 : 3;
}

static int cmp_items(const void *pa, const void *pb)
{
    const struct item *a = pa, *b = pb;
    int ca = rank_class(a), cb = rank_class(b);
    if (ca != cb)
        return ca < cb ? -1 : 1;
    if (ca <= 1) {
        if (a->mt->tokens_per_s != b->mt->tokens_per_s)
            return a->mt->tokens_per_s > b->mt->tokens_per_s ? -1 : 1;
        if (a->mt->peak_mem_bytes != b->mt->peak_mem_bytes)
            return a->mt->peak_mem_bytes < b->mt->peak_mem_bytes ? -1 : 1;
    }
    char sa[128], sb[128];
    oc_layout_format(&a->layout, sa, sizeof sa);
    oc_layout_format(&b->layout, sb, sizeof sb);
    return strcmp(sa, sb);
}

static char *command_line(int argc, char **argv)
{
    size_t n = 16;
    for (int i = 0; i < argc; i++)
        n += strlen(argv[i]) + 1;
    char *s = oc_xmalloc(n);
    strcpy(s, "ocsim");
    for (int i = 0; i < argc; i++) {
        strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

/* Why a legal layout is not simulated: its closed-form peak exceeds the
 * device. Fills it->reason and returns 1; 0 when it fits. */
static int closed_form_oom(struct item *it, const struct oc_opts *o)
{
    int64_t stage;
    it->cf_peak_bytes = oc_memory_peak(&o->model, &it->layout, &stage);
    if (it->cf_peak_bytes <= o->topo.device.memory_bytes)
        return 0;
    char need[32], have[32];
    snprintf(it->reason, sizeof it->reason,
             "out of memory: stage %lld needs %s per GPU, the %s has %s", (long long)stage,
             oc_fmt_si(need, sizeof need, it->cf_peak_bytes, "B"), o->topo.device.name,
             oc_fmt_si(have, sizeof have, o->topo.device.memory_bytes, "B"));
    return 1;
}

/* Every candidate layout as an item of r: illegal (its reason), out of
 * memory by the closed form (its reason and peak) or to simulate (then in
 * *to_sim, r->sim_index mapping back). The rejected rows go to sweep.csv at
 * once. Returns the number of items; *nsim of them are to simulate. */
static int64_t plan(struct run *r, const struct oc_opts *o, struct oc_layout **to_sim,
                    int64_t *nsim)
{
    struct oc_enum_opts eo = {
        .cards = o->cards, .base = o->layout,
        .micro_batches = o->micro_batches, .n_micro_batches = o->n_micro_batches,
        .schedules = o->schedules, .vchunks = o->vchunks, .n_schedules = o->n_schedules,
    };
    struct oc_candidate *cands = NULL;
    int64_t n = oc_layout_enumerate(&eo, &o->model, &o->topo, &cands);
    r->items = oc_xcalloc((size_t)n, sizeof *r->items);
    r->sim_index = oc_xcalloc((size_t)n, sizeof *r->sim_index);
    *to_sim = oc_xcalloc((size_t)n, sizeof **to_sim);
    *nsim = 0;
    for (int64_t i = 0; i < n; i++) {
        struct item *it = &r->items[i];
        it->layout = cands[i].layout;
        it->cf_peak_bytes = -1;
        it->mt = NULL;
        if (!cands[i].valid) {
            snprintf(it->reason, sizeof it->reason, "%s", cands[i].reason);
        } else if (!closed_form_oom(it, o)) {
            it->mt = oc_xcalloc(1, sizeof *it->mt);
            r->sim_index[*nsim] = i;
            (*to_sim)[(*nsim)++] = it->layout;
        }
    }
    free(cands);
    /* Rejected rows are finished at once; simulated rows follow as they end. */
    for (int64_t i = 0; i < n; i++)
        if (!r->items[i].mt)
            oc_metrics_csv_row_rejected(&r->csv, &r->items[i].layout,
                                        r->items[i].cf_peak_bytes,
                                        o->topo.device.memory_bytes, r->items[i].reason);
    return n;
}

/* Writes sweep.csv in rank order and puts it under its name (csv_table.h:
 * the rows streamed as the layouts finished are replaced in the same
 * temporary; the table appears whole or not at all). Sorts r->items. */
static int write_ranked(struct run *r, int64_t n, struct oc_status *st)
{
    qsort(r->items, (size_t)n, sizeof *r->items, cmp_items);
    if (oc_csv_restart(&r->csv, st) != 0) {
        oc_csv_abandon(&r->csv);
        return -1;
    }
    for (int64_t i = 0; i < n; i++)
        row(&r->csv, &r->items[i], r->device_mem_bytes);
    return oc_csv_close(&r->csv, st);
}

/* The ranked results for the report and the plots: the simulated layouts'
 * metrics in res, the others in rej, and how many of each kind. */
struct results {
    struct oc_metrics *res;
    struct oc_rejected_layout *rej;
    int64_t nres, nfit, nfail, ninvalid, noom, nrej;
};

static void results_gather(struct results *x, const struct run *r, int64_t n, int64_t nsim)
{
    memset(x, 0, sizeof *x);
    x->res = oc_xcalloc((size_t)(nsim ? nsim : 1), sizeof *x->res);
    x->rej = oc_xcalloc((size_t)n, sizeof *x->rej);
    for (int64_t i = 0; i < n; i++) {
        const struct item *it = &r->items[i];
        if (it->simulated) {
            x->res[x->nres++] = *it->mt;
            x->nfit += it->mt->fits;
            continue;
        }
        struct oc_rejected_layout *j = &x->rej[x->nrej++];
        j->layout = it->layout;
        j->kind = it->failed ? OC_REJECT_FAILED
                  : it->cf_peak_bytes < 0 ? OC_REJECT_RULE : OC_REJECT_MEMORY;
        x->nfail += it->failed;
        x->ninvalid += j->kind == OC_REJECT_RULE;
        x->noom += j->kind == OC_REJECT_MEMORY;
        j->peak_mem_bytes = it->cf_peak_bytes;
        j->device_mem_bytes = r->device_mem_bytes;
        snprintf(j->reason, sizeof j->reason, "%s", it->reason);
    }
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

/* The table and the chosen layout on stdout, then report.md and the
 * plots into `out` (NULL: none). Returns 0, or 2 when the report could not
 * be written. */
static int report(const struct oc_opts *o, int argc, char **argv, const char *out,
                  const struct results *x, double wall)
{
    struct oc_status st = {{0}};
    char *cmdline = command_line(argc, argv);
    char method[128];
    snprintf(method, sizeof method, "SimGrid replay, %s fidelity, %s collectives%s",
             o->fidelity, o->collective, o->coarse ? " (coarse rings)" : "");
    struct oc_report_ctx ctx = {
        .command_line = cmdline, .model = &o->model, .topo = &o->topo,
        .cards = o->cards, .global_batch = o->layout.global_batch,
        .seq_length = o->layout.seq_length, .method = method,
        .csv_name = "sweep.csv", .top_n = (int)o->top, .wall_s = wall,
    };
    oc_report_print_table(stdout, x->res, x->nres, (int)o->top);
    print_chosen(x, &o->topo);
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

static void run_free(struct run *r, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        free(r->items[i].mt);
    free(r->items);
    free(r->sim_index);
}

int oc_cmd_sweep(int argc, char **argv)
{
    struct oc_opts o;
    struct oc_status st = {{0}};
    oc_opts_default(&o);
    if (oc_opts_parse(&o, argc, argv, GROUPS, &st) != 0) {
        fprintf(stderr, "ocsim sweep: %s\n", st.msg);
        return 2;
    }
    if (o.help) {
        help();
        return 0;
    }
    struct oc_replay_opts ro;
    if (oc_opts_load(&o, &st) != 0 || oc_opts_replay(&o, &ro, &st) != 0) {
        fprintf(stderr, "ocsim sweep: %s\n", st.msg);
        return 2;
    }
    const char *out = o.out_dir ? o.out_dir : "out/sweep";
    char path[4096];
    snprintf(path, sizeof path, "%s/sweep.csv", out);
    struct run r = {0};
    if (oc_mkdir_p(out, &st) != 0 || oc_metrics_csv_open(&r.csv, path, &st) != 0) {
        fprintf(stderr, "ocsim sweep: %s\n", st.msg);
        return 2;
    }
    struct oc_layout *to_sim;
    int64_t nsim;
    int64_t n = plan(&r, &o, &to_sim, &nsim);

    fprintf(stderr, "ocsim sweep: %s on %lld x %s: %lld layouts, %lld to simulate "
                    "(%s fidelity), writing %s\n",
            o.model.name, (long long)o.cards, o.topo.device.name, (long long)n,
            (long long)nsim, o.fidelity, out);
    r.total = nsim;
    r.progress = isatty(2);
    r.device_mem_bytes = o.topo.device.memory_bytes;
    r.t0 = now_s();
    struct oc_sweep_opts so = {.jobs = (int)o.jobs, .replay = ro,
                               .on_done = on_done, .ctx = &r};
    int rc = oc_sweep_run(to_sim, nsim, &o.model, &o.topo, &so, &st);
    double wall = now_s() - r.t0;
    free(to_sim);
    if (rc != 0) {
        oc_csv_abandon(&r.csv);
        fprintf(stderr, "ocsim sweep: %s\n", st.msg);
        run_free(&r, n);
        return 2;
    }
    /* A table that could not be written: one line naming it, and neither
     * the report nor a "table:" line (the plots and report.md would fail
     * on the same full disk; the ranking still goes to stdout). */
    const int table_rc = write_ranked(&r, n, &st);
    if (table_rc != 0)
        fprintf(stderr, "ocsim sweep: %s\n", st.msg);

    struct results x;
    results_gather(&x, &r, n, nsim);
    rc = report(&o, argc, argv, table_rc == 0 ? out : NULL, &x, wall);
    printf("\n%lld layouts: %lld simulated in %.1f s (%lld fit), %lld out of memory, "
           "%lld illegal, %lld failed\n",
           (long long)n, (long long)x.nres, wall, (long long)x.nfit, (long long)x.noom,
           (long long)x.ninvalid, (long long)x.nfail);
    if (table_rc != 0)
        rc = 2;
    else if (rc == 0)
        printf("report: %s/report.md   table: %s\n", out, path);
    else
        printf("table: %s\n", path);
    free(x.rej);
    free(x.res);
    run_free(&r, n);
    if (rc != 0)
        return rc;
    return x.nfit > 0 ? 0 : 1;
}
