/* cmd_sweep.c: `ocsim sweep` searches the knob space of N cards
 * (core/search.h), simulates the candidates that are legal and fit in
 * memory in increasing order of their lower bound until the bound exceeds
 * the --top-th best (tools/sweep_plan.h), in parallel, and ranks them.
 * Rows of sweep.csv are written to its temporary as layouts finish, and
 * each simulated layout's metrics go to sweep.journal
 * (reports/sweep_journal.h), which --resume continues from; at the end the
 * rows are rewritten in the temporary in rank order and the table is put
 * under its name (core/outfile.h: whole or not at all), then the plots and
 * report.md are made.
 *
 * Signals: SIGINT and SIGTERM (unless inherited as ignored) stop the
 * simulations (sim/sweep_stop.h, sim/sweep.h: the workers are killed and
 * reaped); the report, the plots and the ranked sweep.csv are then written
 * for the layouts finished, marked as interrupted, and the command exits
 * 130. During that write-up (and the one of a sweep that ran through) both
 * signals are ignored, gnuplot included (an ignored signal stays ignored
 * across exec): a second Ctrl-C cannot cut a file half-written. A sweep
 * killed outright leaves no sweep.csv (only its temporary) and a journal
 * that --resume reads.
 *
 * The write-up after the simulations (the ranked sweep.csv, the table,
 * report.md, the plots, the counts) is tools/sweep_results.c; the run's
 * state both read is tools/sweep_run.h. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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
#include "reserve.h"
#include "plots.h"
#include "report_confidence.h"
#include "report_md.h"
#include "sweep_var.h"
#include "sim_opts.h"
#include "sweep.h"
#include "sweep_journal.h"
#include "sweep_mpi.h"
#include "sweep_scaling.h"
#include "sweep_stop.h"
#include "sweep_plan.h"
#include "sweep_twins.h"
#include "sweep_groups.h"
#include "sweep_mbs.h"
#include "sweep_run.h"

#define GROUPS (OC_OPT_OUT | OC_OPT_SWEEP | OC_OPT_SIM | OC_OPT_RESERVE | OC_OPT_PLAN | OC_OPT_FIX | \
                OC_OPT_VAR | OC_OPT_VAR_SWEEP)

static void help(void)
{
    puts("usage: ocsim sweep --cards N [--model M] [--topology T] [--global-batch B]\n"
         "                   [--seq S] [--micro-batches 1,2,4] [--schedule LIST]\n"
         "                   [--out DIR] [--jobs J] [--fidelity sym|fast|full] [...]\n\n"
         "Searches the layouts of N cards over every knob a flag does not fix\n"
         "(core/search.h: TP x CP x PP x DP, micro-batch, schedule and\n"
         "interleaving depth, recompute, SP, ZeRO stage, overlap, rank order,\n"
         "collective algorithm, stage splits; --core-knobs: TP x PP x DP, the\n"
         "micro-batch sizes, 1f1b and interleaved:2 and the splits alone),\n"
         "skipping knob values that change nothing (no-op variants),\n"
         "rejects the illegal ones and those whose closed-form memory does not fit\n"
         "(counted by reason in the summary and report.md; --rejected-csv lists\n"
         "each with its reason in DIR/rejected.csv), and simulates the rest with\n"
         "SimGrid on all cores in increasing order of a closed-form lower bound of\n"
         "the step, stopping once the bound exceeds the --top-th best (pruned rows\n"
         "carry their bound; --no-prune simulates all). Ranks by tokens/s. Writes\n"
         "DIR/sweep.csv (one row per candidate that is legal and fits by the\n"
         "closed form and is not dominated: simulated, pruned or failed, with its\n"
         "layout label and bound), DIR/report.md, and the plots with their\n"
         "gnuplot scripts and data (default DIR: out/sweep).\n\n"
         "Ctrl-C (SIGINT) or SIGTERM stops the simulations, writes the report of\n"
         "the layouts finished, marked as interrupted, and exits 130; the same\n"
         "command with --resume then simulates only what DIR/sweep.journal lacks\n"
         "and ends as a sweep that ran through. Exit 1: simulations failed (how\n"
         "many and why are in the summary and report.md) or no layout fits.");
    oc_opts_print_help(stdout, GROUPS);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU seconds of this process and of its children waited for (the
 * plan's parts, the simulations, gnuplot), user and system. */
static double cpu_s(void)
{
    double s = 0;
    const int who[2] = {RUSAGE_SELF, RUSAGE_CHILDREN};
    for (int i = 0; i < 2; i++) {
        struct rusage u;
        if (getrusage(who[i], &u) == 0)
            s += (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
                 (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
    }
    return s;
}

/* OCSIM_TIMING=1: each phase's wall time on stderr, and the CPU time it
 * took on every core (on a machine others share, the CPU time tells
 * what the wall time cannot), for tools/bench-sweep.sh and
 * docs/benchmarks.md (not part of the output). */
static double phase_t0 = -1.0, phase_cpu0;

static void phase(const char *what)
{
    static int on = -1;
    if (on < 0)
        on = getenv("OCSIM_TIMING") != NULL;
    if (!on)
        return;
    const double t = now_s(), c = cpu_s();
    if (phase_t0 >= 0.0)
        fprintf(stderr, "ocsim sweep: timing: %-12s %.3f s (cpu %.3f s)\n", what,
                t - phase_t0, c - phase_cpu0);
    phase_t0 = t, phase_cpu0 = c;
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

void oc_sweep_item_row(const struct run *r, struct oc_csv *c, const struct item *it,
                       const char *label)
{
    char why[OC_MSG_MAX];
    if (it->state == IT_SIMULATED) {
        oc_sweep_csv_row(c, it->mt, it->mt->fits ? "" : oc_item_reason_of(it), it->bound_s,
                         label);
        return;
    }
    if (it->state == IT_PRUNED)
        oc_prune_reason(&r->prune, it, why, sizeof why);
    oc_sweep_csv_row_rejected(c, &it->layout, it->cf_peak_bytes, r->device_mem_bytes,
                              it->state == IT_PRUNED ? why : oc_item_reason_of(it),
                              it->bound_s, label);
}

/* A simulated layout's result into its item (and the reason of one that
 * does not fit in the replay's memory). */
static void item_simulated(struct item *it, const struct oc_metrics *mt)
{
    if (!it->mt)
        it->mt = oc_xmalloc(sizeof *it->mt);
    *it->mt = *mt;
    it->state = IT_SIMULATED;
    if (!mt->fits) {
        char need[32], have[32];
        char res[32];
        oc_item_reason(it, "out of memory in the replay: %s per GPU + %s reserve, the device has %s",
                 oc_fmt_si(need, sizeof need, mt->peak_mem_bytes, "B"),
                 oc_fmt_si(res, sizeof res, mt->reserve_bytes, "B"),
                 oc_fmt_si(have, sizeof have, mt->device_mem_bytes, "B"));
    }
}

static void settle(struct run *r, int64_t j, const struct oc_metrics *mt, const char *err);

/* Sweep index j takes its auto variant's result (sweep_twins.h). */
static void share(struct run *r, int64_t j)
{
    struct oc_metrics m = *r->items[r->sim_index[oc_twins_source(&r->twins, j)]].mt;
    m.layout = r->items[r->sim_index[j]].layout;
    m.coll_same = 0;
    r->nshared++;
    settle(r, j, &m, NULL);
}

/* The result of sweep index j (mt, or NULL and err), then the forced
 * variants that waited for it. */
static void settle(struct run *r, int64_t j, const struct oc_metrics *mt, const char *err)
{
    struct item *it = &r->items[r->sim_index[j]];
    if (mt) {
        item_simulated(it, mt);
        oc_prune_add(&r->prune, mt);
        struct oc_status st = {{0}};
        if (!r->journal_failed &&
            oc_sweep_journal_append(&r->journal, it->cand, mt, &st) != 0) {
            r->journal_failed = 1;
            fprintf(stderr, "%socsim sweep: warning: %s; --resume would simulate again "
                            "what it lacks\n", r->progress ? "\n" : "", st.msg);
        }
    } else {
        it->state = IT_FAILED;
        oc_item_reason(it, "simulation failed: %s", err);
    }
    oc_sweep_item_row(r, &r->csv, it, NULL);
    r->done++;
    progress(r);
    if (!r->share)
        return;
    oc_twins_done(&r->twins, j, mt);
    for (int64_t w = oc_twins_next(&r->twins, j, -1); w >= 0; w = oc_twins_next(&r->twins, j, w)) {
        if (!oc_twins_waiting(&r->twins, w))
            continue;
        if (oc_twins_ask(&r->twins, w) == OC_TWIN_SHARE)
            share(r, w);
        else
            r->second[r->nsecond++] = w;
    }
}

static void on_done(void *ctx, int64_t index, const struct oc_metrics *mt,
                    const char *err)
{
    struct run *r = ctx;
    settle(r, r->pass ? r->pass[index] : index, mt, err);
}

/* Before simulation `next` (in increasing order of bound) is handed out:
 * 0 once its bound exceeds the --top-th best found (sweep_plan.h); -1
 * for a forced-collective variant that shares its auto variant's result,
 * or waits for it (sweep_twins.h). */
static int more(void *ctx, int64_t next)
{
    struct run *r = ctx;
    const int64_t j = r->pass ? r->pass[next] : next;
    if (r->prune_on && oc_prune_stops(&r->prune, &r->items[r->sim_index[j]]))
        return 0;
    if (r->share)
        switch (oc_twins_ask(&r->twins, j)) {
        case OC_TWIN_SHARE:
            share(r, j);
            return -1;
        case OC_TWIN_WAIT:
            return -1;
        case OC_TWIN_RUN:
            break;
        }
    r->handed = next + 1;
    return 1;
}

/* sim/sweep.h's extra: a forced variant settled as to simulate (settle)
 * while the first pass runs, before the next new index; one whose bound
 * now exceeds the --top-th best is left to prune_final. */
static int64_t extra(void *ctx)
{
    struct run *r = ctx;
    while (!r->pass && r->taken < r->nsecond) {
        const int64_t w = r->second[r->taken++];
        if (r->prune_on && oc_prune_stops(&r->prune, &r->items[r->sim_index[w]]))
            continue;
        return w;
    }
    return -1;
}

/* sim/sweep.h's waiting: a forced variant may still be settled as to
 * simulate (its auto variant in flight), or one settled so waits for a
 * free worker (without it the hand-out closed with every worker busy and
 * left it to the second pass). */
static int waiting(void *ctx)
{
    const struct run *r = ctx;
    return !r->pass && r->share &&
           (oc_twins_nwaiting(&r->twins) > 0 || r->taken < r->nsecond);
}

/* A sweep that ran through: every candidate whose bound exceeds the final
 * --top-th best is reported pruned, the ones not handed out and those
 * simulated before the N-th best had come down to its final value (which
 * depends on the order results came back in), so that the output does
 * not depend on timing. What stays simulated is exactly the candidates at
 * or below the final N-th best: every one of them was handed out, since
 * the hand-out stopped only above a N-th best at least the final one. */
static void prune_final(struct run *r)
{
    for (int64_t i = 0; i < r->n; i++) {
        struct item *it = &r->items[i];
        if ((it->state == IT_PENDING || it->state == IT_SIMULATED || it->state == IT_FAILED) &&
            it->bound_s >= 0 && oc_prune_stops(&r->prune, it))
            oc_prune_mark(&r->prune, it);
    }
}

/* What makes two sweeps the same sweep, for --resume: every input of the
 * simulations (the layouts line covers the candidates with every knob; the
 * lines before it name the usual differences). Not --jobs, --top or --log. */
static int sweep_identity(struct oc_sweep_id *id, const struct oc_opts *o,
                          const struct oc_plan *pl, struct oc_status *st)
{
    const struct oc_layout *l = &o->layout;
    memset(id, 0, sizeof *id);
    oc_sweep_id_add(id, "model", "%s %016llx", o->model.name,
                    (unsigned long long)oc_hash_model(&o->model));
    oc_sweep_id_add(id, "topology", "%s %016llx", o->topo.name,
                    (unsigned long long)oc_hash_topology(&o->topo));
    oc_sweep_id_add(id, "cards", "%lld", (long long)o->cards);
    oc_sweep_id_add(id, "global_batch", "%lld", (long long)l->global_batch);
    oc_sweep_id_add(id, "seq", "%lld", (long long)l->seq_length);
    char list[256] = "";
    size_t k = 0;
    for (int i = 0; i < o->n_micro_batches && k < sizeof list - 24; i++)
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%lld", i ? "," : "",
                              (long long)o->micro_batches[i]);
    oc_sweep_id_add(id, "micro_batches", "%s", k ? list : "default");
    k = 0;
    for (int i = 0; i < o->n_schedules && k < sizeof list - 40; i++)
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%s:%lld", i ? "," : "",
                              oc_schedule_name(o->schedules[i]), (long long)o->vchunks[i]);
    oc_sweep_id_add(id, "schedules", "%s", k ? list : "default");
    /* --compression (core/compress.h): the list as the layout labels write it */
    k = 0;
    for (int i = 0; i < o->n_compress && k < sizeof list - 48; i++) {
        struct oc_layout g;
        memset(&g, 0, sizeof g);
        oc_gc_apply(&g, &o->compress[i]);
        char lab[40];
        if (g.sync_every > 1)
            snprintf(lab, sizeof lab, "sync%lld", (long long)g.sync_every);
        else
            oc_gc_label(&g, lab, sizeof lab);
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? "," : "", lab);
    }
    if (k)
        oc_sweep_id_add(id, "compression", "%s", list);
    oc_sweep_id_add(id, "knobs",
                    "recompute=%s sp=%d zero1=%d overlap=%d attention=%s order=%s "
                    "cross_node_tp=%d precision=%s",
                    oc_recompute_name(l->recompute), l->sequence_parallel,
                    l->zero, l->overlap_grad_reduce,
                    l->attention == OC_ATTN_FLASH ? "flash" : "classic",
                    oc_order_name(l->order), l->allow_cross_node_tp,
                    oc_precision_name(l->precision));
    oc_sweep_id_add(id, "reserve", "%s %.17g %.17g",
                    o->topo.reserve.mode == OC_RESERVE_AUTO ? "auto" : "fixed",
                    o->topo.reserve.bytes, o->topo.reserve.fragmentation);
    oc_sweep_id_add(id, "simulation", "fidelity=%s collective=%s coarse=%d steady=%d",
                    o->fidelity, o->collective, o->coarse, !o->no_steady);
    k = 0;
    list[0] = '\0';
    for (int i = 0; i < o->n_cfg && k < sizeof list - 1; i++)
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i ? " " : "", o->cfg[i]);
    oc_sweep_id_add(id, "cfg", "%s", o->n_cfg ? list : "none");
    if (o->platform_file) {
        uint64_t h;
        if (oc_hash_file(o->platform_file, &h, st) != 0)
            return -1;
        oc_sweep_id_add(id, "platform", "file %016llx", (unsigned long long)h);
    } else {
        oc_sweep_id_add(id, "platform", "generated");
    }
    oc_sweep_id_add(id, "search", "fixed=%x %s", o->fixed, pl->ranges);
    oc_sweep_id_add(id, "layouts", "%lld candidates, %lld illegal, %lld out of memory, "
                    "%lld dominated, %lld to simulate %016llx",
                    (long long)pl->ncand, (long long)pl->counts.illegal, (long long)pl->noom,
                    (long long)pl->ndominated, (long long)pl->n,
                    (unsigned long long)pl->layouts_hash);
    return 0;
}

/* A journal record back into its item (--resume). */
static void on_journal(void *ctx, int64_t cand, const struct oc_metrics *mt)
{
    struct run *r = ctx;
    struct item *it = oc_plan_item(&r->plan, cand);
    if (it && it->state == IT_PENDING) {
        item_simulated(it, mt);
        oc_prune_add(&r->prune, mt);
    }
}

/* Creates DIR/sweep.journal, or with --resume reads it back into the
 * items. Returns the layouts taken from it, or -1 with st->msg. */
static int64_t journal_open(struct run *r, const struct oc_opts *o, const char *out,
                            struct oc_status *st)
{
    struct oc_sweep_id id;
    if (sweep_identity(&id, o, &r->plan, st) != 0)
        return -1;
    char path[4200];
    snprintf(path, sizeof path, "%s/sweep.journal", out);
    if (!o->resume)
        return oc_sweep_journal_create(&r->journal, path, &id, st);
    int64_t dropped = 0;
    int64_t got = oc_sweep_journal_resume(&r->journal, path, &id, r->plan.ncand, on_journal, r,
                                          &dropped, st);
    if (got >= 0 && dropped > 0)
        fprintf(stderr, "ocsim sweep: warning: %s: %lld bytes after its last whole record "
                        "dropped (a sweep killed while writing it); those layouts are "
                        "simulated again\n",
                path, (long long)dropped);
    return got;
}

/* Opens sweep.csv (truncated) with the rows already finished: those the
 * journal gave back. */
static int csv_start(struct run *r, const char *path, struct oc_status *st)
{
    if (oc_metrics_csv_open_sweep(&r->csv, path, st) != 0)
        return -1;
    for (int64_t i = 0; i < r->n; i++)
        if (r->items[i].state != IT_PENDING)
            oc_sweep_item_row(r, &r->csv, &r->items[i], NULL);
    return 0;
}

static void run_free(struct run *r)
{
    oc_plan_free(&r->plan);
    r->items = NULL;
    free(r->sim_index);
    oc_prune_free(&r->prune);
    oc_twins_free(&r->twins);
    free(r->second);
}

/* ---- the command ------------------------------------------------------- */

/* Parses and checks everything a sweep needs before it writes a file:
 * the flags, the model and topology, the simulation settings (in a SimGrid
 * of its own: oc_replay_check_forked). Returns 0, 1 for --help (printed),
 * or 2 with one line on stderr. */
static int sweep_setup(struct oc_opts *o, struct oc_replay_opts *ro, int argc, char **argv)
{
    struct oc_status st = {{0}};
    oc_opts_default(o);
    /* A sweep simulates one DP replica where every replica behaves alike
     * (sim/replay_sym.c; equal to fast fidelity, tests/sym_fast.sh), fast
     * fidelity elsewhere. */
    o->fidelity = "sym";
    /* and merges each uniform ring phase into one message (collective.h's
     * coarse mode): the same figures to 2e-5 where measured
     * (docs/benchmarks.md, tests/coarse_sweep.sh), a third of the
     * messages' cost at 1024 cards; --no-coarse for message level */
    o->coarse = 1;
    if (oc_opts_parse(o, argc, argv, GROUPS, &st) != 0) {
        fprintf(stderr, "ocsim sweep: %s\n", st.msg);
        return 2;
    }
    if (o->help) {
        help();
        return 1;
    }
    struct oc_variability v;
    if (oc_sweep_var_check(o, &v, &st) != 0 || oc_opts_load(o, &st) != 0 ||
        oc_opts_replay(o, ro, &st) != 0) {
        fprintf(stderr, "ocsim sweep: %s\n", st.msg);
        return 2;
    }
    if (oc_replay_check_forked(&o->topo, o->cards, ro, &st) != 0) {
        fprintf(stderr, "ocsim sweep: the simulation settings (--cfg, --platform) fail in "
                        "SimGrid: %s\n",
                st.msg);
        return 2;
    }
    return 0;
}

/* --rejected-csv: the plan's rejected candidates as rows of
 * DIR/rejected.csv (sweep.csv's columns). */
struct rejected_csv {
    struct oc_csv csv;
    double device_mem_bytes;
};

static void rejected_row(void *ctx, const struct oc_layout *l, double peak_bytes,
                         const char *reason)
{
    struct rejected_csv *rc = ctx;
    oc_sweep_csv_row_rejected(&rc->csv, l, peak_bytes, rc->device_mem_bytes, reason, -1, NULL);
}

/* Plans the sweep into r->plan, with DIR/rejected.csv under --rejected-csv
 * (else a stale one of an earlier sweep in DIR is removed). 0, or -1 with
 * st->msg. */
static int plan(struct run *r, const struct oc_opts *o, const char *out,
                const struct oc_search_space *space, struct oc_status *st)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/rejected.csv", out);
    if (!o->rejected_csv) {
        if (unlink(path) != 0 && errno != ENOENT)
            return oc_fail(st, "%s: cannot remove the stale table: %s", path, strerror(errno));
        oc_plan_build(&r->plan, o, space, NULL);
        return 0;
    }
    struct rejected_csv *rc = oc_xcalloc(1, sizeof *rc);
    rc->device_mem_bytes = o->topo.device.memory_bytes;
    if (oc_metrics_csv_open_sweep(&rc->csv, path, st) != 0) {
        free(rc);
        return -1;
    }
    const struct oc_plan_rejected hook = {rejected_row, rc};
    oc_plan_build(&r->plan, o, space, &hook);
    const int rc_close = oc_csv_close(&rc->csv, st);
    free(rc);
    return rc_close;
}

/* " by N processes" when the plan was built by more than one. */
static const char *planned_by(const struct oc_plan *p)
{
    static char buf[32];
    buf[0] = '\0';
    if (p->parts > 1)
        snprintf(buf, sizeof buf, " by %d processes", p->parts);
    return buf;
}

/* Plans the sweep, opens the journal (or resumes it) and sweep.csv with
 * the rows already finished, and fills *to_sim with what is left to
 * simulate. Returns 0, or 2 with one line on stderr. */
static int sweep_start(struct run *r, const struct oc_opts *o, const char *out,
                       const char *path, struct oc_layout **to_sim, int64_t *nsim)
{
    struct oc_status st = {{0}};
    r->device_mem_bytes = o->topo.device.memory_bytes;
    r->journal.f = NULL;
    if (!o->resume && oc_mkdir_p(out, &st) != 0) {
        fprintf(stderr, "ocsim sweep: %s\n", st.msg);
        return 2;
    }
    struct oc_search_space space;
    oc_sweep_space(o, &space);
    const double plan_t0 = now_s();
    if (plan(r, o, out, &space, &st) != 0) {
        fprintf(stderr, "ocsim sweep: %s\n", st.msg);
        return 2;
    }
    r->plan_s = now_s() - plan_t0;
    r->items = r->plan.items;
    r->n = r->plan.n;
    r->sim_index = oc_xcalloc((size_t)(r->n ? r->n : 1), sizeof *r->sim_index);
    oc_prune_init(&r->prune, o->top);
    r->prune_on = !o->no_prune;
    int64_t reused = journal_open(r, o, out, &st);
    if (reused < 0 || csv_start(r, path, &st) != 0) {
        fprintf(stderr, "ocsim sweep: %s\n", st.msg);
        return 2;
    }
    /* what is left, in increasing order of bound (sweep_plan.h) */
    int64_t npend = 0;
    int64_t *order = oc_plan_order(&r->plan, &npend);
    *to_sim = oc_xcalloc((size_t)(npend ? npend : 1), sizeof **to_sim);
    *nsim = npend;
    for (int64_t k = 0; k < npend; k++) {
        r->sim_index[k] = order[k];
        (*to_sim)[k] = r->items[order[k]].layout;
    }
    r->share = !getenv("OCSIM_TEST_NO_TWINS");
    oc_twins_init(&r->twins, r->items, order, npend);
    r->second = oc_xcalloc((size_t)(npend ? npend : 1), sizeof *r->second);
    free(order);
    int64_t planned = 0;
    for (int64_t i = 0; i < r->n; i++)
        planned += r->items[i].state == IT_PENDING || r->items[i].state == IT_SIMULATED;
    fprintf(stderr, "ocsim sweep: %s on %lld x %s: %lld layouts, %lld to simulate "
                    "(%s fidelity), writing %s; planned in %.2f s%s\n",
            o->model.name, (long long)o->cards, o->topo.device.name,
            (long long)r->plan.ncand, (long long)planned,
            /* node groups: the symmetric mode does not apply (sim/replay.c) */
            strcmp(o->fidelity, "sym") == 0 && o->topo.n_groups > 1 ? "fast" : o->fidelity,
            out, r->plan_s, planned_by(&r->plan));
    if (o->resume)
        fprintf(stderr, "ocsim sweep: resuming: %lld of the %lld simulated before (%s), "
                        "%lld left\n",
                (long long)reused, (long long)planned, r->journal.path, (long long)*nsim);
    return 0;
}

/* A serving rank of an MPI sweep (sim/sweep_mpi.h): the same setup, its
 * one line (if any) sent to rank 0 instead of printed, then it simulates
 * what rank 0 hands it. */
static int serve(int argc, char **argv)
{
    struct oc_opts o;
    struct oc_replay_opts ro;
    char err[OC_MSG_MAX] = "";
    oc_sweep_mpi_quiet();
    fflush(stderr);
    int saved = dup(2);
    FILE *cap = tmpfile();
    if (cap)
        dup2(fileno(cap), 2);
    int rc = sweep_setup(&o, &ro, argc, argv);
    fflush(stderr);
    if (cap) {
        rewind(cap);
        if (!fgets(err, sizeof err, cap))
            err[0] = '\0';
        err[strcspn(err, "\n")] = '\0';
        if (strncmp(err, "ocsim sweep: ", 13) == 0)
            memmove(err, err + 13, strlen(err + 13) + 1);
        fclose(cap);
    }
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
    return oc_sweep_mpi_serve(rc == 0 ? &o.model : NULL, &o.topo, &ro, (int)o.jobs, err);
}

static int sweep(int argc, char **argv);

int oc_cmd_sweep(int argc, char **argv)
{
    int rank;
    if (oc_sweep_mpi_world(&rank) > 1 && rank > 0)
        return serve(argc, argv);
    return oc_sweep_mpi_end(sweep(argc, argv));
}

static int cmp_i64(const void *pa, const void *pb)
{
    const int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return a < b ? -1 : a > b;
}

/* The forced-collective variants whose auto variant's replay made a
 * choice they would not have made (sweep_twins.h) and that the first
 * pass did not hand out (extra), simulated in bound order after it
 * (pruning as in it: a bound above the N-th
 * best prunes, and the N-th best only comes down). Returns
 * oc_sweep_run's code. */
static int second_pass(struct run *r, const struct oc_layout *to_sim, const struct oc_opts *o,
                       struct oc_sweep_opts *so, struct oc_status *st)
{
    int64_t *all = r->second, *idx = all + r->taken;
    const int64_t n = r->nsecond - r->taken;
    qsort(idx, (size_t)n, sizeof *idx, cmp_i64);
    struct oc_layout *lay = oc_xcalloc((size_t)n, sizeof *lay);
    for (int64_t k = 0; k < n; k++)
        lay[k] = to_sim[idx[k]];
    r->pass = idx;
    r->second = oc_xcalloc((size_t)(r->twins.n ? r->twins.n : 1), sizeof *r->second);
    r->nsecond = r->taken = 0; /* nothing waits on a forced variant */
    const int src = oc_sweep_run(lay, n, &o->model, &o->topo, so, st);
    r->pass = NULL;
    free(all);
    free(lay);
    return src;
}

int oc_sweep_one(const struct oc_opts *op, const struct oc_replay_opts *rop, int argc,
                 char **argv, const char *out, struct oc_sweep_outcome *oc)
{
    struct oc_opts o = *op;
    struct oc_replay_opts ro = *rop;
    int rc;
    memset(oc, 0, sizeof *oc);
    char path[4096];
    snprintf(path, sizeof path, "%s/sweep.csv", out);
    struct run r = {0};
    struct oc_layout *to_sim = NULL;
    int64_t nsim = 0;
    struct oc_status st = {{0}};
    if (sweep_start(&r, &o, out, path, &to_sim, &nsim) != 0 || oc_sweep_stop_catch(&st) != 0) {
        if (st.msg[0])
            fprintf(stderr, "ocsim sweep: %s\n", st.msg);
        oc_sweep_journal_close(&r.journal, NULL);
        free(to_sim);
        run_free(&r);
        return 2;
    }
    phase("plan");
    r.total = nsim;
    r.progress = isatty(2);
    r.t0 = now_s();
    struct oc_sweep_opts so = {.jobs = (int)o.jobs, .replay = ro, .on_done = on_done,
                               .more = more, .extra = extra, .waiting = waiting,
                               .ctx = &r, .stop_fd = oc_sweep_stop_fd()};
    int src = oc_sweep_run(to_sim, nsim, &o.model, &o.topo, &so, &st);
    so.extra = NULL;
    so.waiting = NULL;
    if (src == 0 && r.nsecond > r.taken)
        src = second_pass(&r, to_sim, &o, &so, &st);
    if (src == 0 && r.prune_on)
        prune_final(&r);
    struct oc_sweep_mbs mb; /* node groups: each replica's micro-batches */
    if (src == 0)
        src = oc_sweep_mbs_pass(&r, &o, &so, &mb, &st);
    else
        memset(&mb, 0, sizeof mb);
    phase("simulate");
    const int sig = src == 1 ? oc_sweep_stop_signal() : 0;
    oc_sweep_stop_ignore();
    double wall = now_s() - r.t0;
    struct oc_status jst = {{0}};
    if (oc_sweep_journal_close(&r.journal, &jst) != 0 && !r.journal_failed)
        fprintf(stderr, "ocsim sweep: warning: %s\n", jst.msg);
    free(to_sim);
    if (src < 0) {
        oc_csv_abandon(&r.csv);
        fprintf(stderr, "ocsim sweep: %s\n", st.msg);
        run_free(&r);
        return 2;
    }
    /* A table that could not be written: one line naming it, and neither
     * the report nor a "table:" line (the plots and report.md would fail
     * on the same full disk; the ranking still goes to stdout). */
    const int table_rc = oc_sweep_write_ranked(&r, &st);
    if (table_rc != 0)
        fprintf(stderr, "ocsim sweep: %s\n", st.msg);
    struct results x;
    oc_sweep_results_gather(&x, &r);
    oc->candidates = r.plan.ncand;
    oc->simulated = x.nres;
    oc->fitting = x.nfit;
    if (x.nfit > 0) {
        oc->have_best = 1;
        oc->best = x.res[0];
    }
    phase("table");
    oc->have_confidence = oc_sweep_confidence(&o, &x, &oc->confidence);
    phase("confidence");
    if (sig)
        fprintf(stderr, "%socsim sweep: interrupted by %s: writing the report of the %lld "
                        "layouts simulated (further signals are ignored until it is "
                        "written)\n",
                r.progress ? "\n" : "", sig == SIGTERM ? "SIGTERM" : "SIGINT",
                (long long)(x.nres + x.nfail));
    rc = oc_sweep_report(&o, &r, argc, argv, table_rc == 0 ? out : NULL, &x, wall, sig,
                oc->have_confidence ? &oc->confidence : NULL);
    phase("report");
    if (rc == 0 && !sig && o.variability) {
        struct oc_variability v; /* checked in sweep_setup */
        if (oc_sweep_var_check(&o, &v, &st) == 0)
            rc = oc_sweep_var_run(&o, &ro, &v, x.res, x.nres, table_rc == 0 ? out : NULL);
    }
    if (rc == 0 && !sig) { /* node groups: what the slow group costs */
        oc_sweep_groups_cost(&o, &ro, x.res, x.nfit, table_rc == 0 ? out : NULL);
        oc_sweep_mbs_report(&mb, x.nfit > 0 ? &x.res[0] : NULL, table_rc == 0 ? out : NULL);
    }
    oc_sweep_summary(&x, &r, wall, sig, table_rc == 0 && rc == 0 ? out : NULL,
            table_rc == 0 ? path : NULL);
    phase("summary");
    if (table_rc != 0)
        rc = 2;
    free(x.rej);
    free(x.res);
    run_free(&r);
    if (rc != 0)
        return rc;
    if (sig)
        return 130;
    return x.nfail > 0 || x.nfit == 0 ? 1 : 0;
}

static int sweep(int argc, char **argv)
{
    struct oc_opts o;
    struct oc_replay_opts ro;
    phase("start");
    int rc = sweep_setup(&o, &ro, argc, argv);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    phase("setup");
    if (o.n_cards > 1)
        return oc_sweep_scaling(&o, &ro, argc, argv);
    struct oc_sweep_outcome *oc = oc_xmalloc(sizeof *oc);
    rc = oc_sweep_one(&o, &ro, argc, argv, o.out_dir ? o.out_dir : "out/sweep", oc);
    free(oc);
    return rc;
}
