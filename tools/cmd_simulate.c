/* cmd_simulate.c: `ocsim simulate` replays one layout in SimGrid and writes
 * its metrics (stdout and DIR/simulate.csv), its per-rank timeline as
 * Chrome trace-event JSON (DIR/timeline.json) and a Gantt plot of the
 * pipeline (DIR/pipeline.png, .svg). The simulation runs in a child process
 * (SimGrid aborts its process on errors it finds itself). */
#include <stdio.h>
#include <string.h>

#include "mbsplit.h"
#include "commands.h"
#include "engine.h"
#include "format.h"
#include "metrics_csv.h"
#include "metrics_print.h"
#include "ops_csv.h"
#include "options.h"
#include "paths.h"
#include "plots.h"
#include "sim_opts.h"
#include "simulate_var.h"
#include "timeline_json.h"

#define GROUPS (OC_OPT_LAYOUT | OC_OPT_OUT | OC_OPT_SIM | OC_OPT_RESERVE | OC_OPT_VAR)

static void help(void)
{
    puts("usage: ocsim simulate --cards N --layout tp8-pp8-dp1 [--model M] [--topology T]\n"
         "                      [--global-batch B] [--seq S] [--out DIR]\n"
         "                      [--fidelity fast|full|sym] [--collective ALGO] [...]\n\n"
         "Simulates one training step of one layout and prints step time, tokens/s,\n"
         "model TFLOP/s per GPU and MFU, the bubble fraction per stage, TP / PP / DP\n"
         "communication (total and exposed) and peak memory per stage. Writes\n"
         "DIR/simulate.csv (the columns of sweep.csv), DIR/ops.csv (one row per op,\n"
         "for ocsim compare), DIR/timeline.json (open it in\n"
         "ui.perfetto.dev) and DIR/pipeline.png and .svg (default DIR: out/simulate).\n"
         "With --variability: --steps noisy steps instead, their mean, p50 and p99\n"
         "against the ideal step, in DIR/variability.csv and variability_summary.csv.");
    oc_opts_print_help(stdout, GROUPS);
}

struct job {
    const struct oc_opts *o;
    const struct oc_replay_opts *ro;
    const char *out;
};

static void print_metrics(const struct oc_opts *o, const struct oc_metrics *mt)
{
    char b[8][32], name[256];
    oc_layout_format(&mt->layout, name, sizeof name);
    printf("%s, %s on %lld x %s, global batch %lld, seq %lld, ",
           o->model.name, name, (long long)o->cards, o->topo.device.name,
           (long long)mt->layout.global_batch, (long long)mt->layout.seq_length);
    if (oc_mbs_on(&mt->layout)) { /* core/mbsplit.h */
        char list[96];
        oc_mbs_format(&mt->layout, list, sizeof list);
        printf("micro-batches %s over the DP replicas", list);
    } else {
        printf("%lld micro-batches", (long long)mt->num_micro_batches);
    }
    if (mt->sim_micro_batches > 0 && mt->sim_micro_batches < mt->num_micro_batches)
        printf(" (%lld simulated, the steady state unfolded)",
               (long long)mt->sim_micro_batches);
    putchar('\n');
    printf("  step time        %s\n", oc_fmt_si(b[0], 32, mt->step_time_s, "s"));
    printf("  tokens/s         %s\n", oc_fmt_si(b[1], 32, mt->tokens_per_s, ""));
    printf("  TFLOP/s per GPU  %.1f   MFU %.1f%%\n", mt->tflops_per_gpu, 100 * mt->mfu);
    oc_metrics_print_time_split(stdout, mt);
    printf("  peak memory      %s on stage %lld + reserve %s, device %s, margin %s: %s\n",
           oc_fmt_si(b[7], 32, mt->peak_mem_bytes, "B"), (long long)mt->peak_mem_stage,
           oc_fmt_si(b[2], 32, mt->reserve_bytes, "B"),
           oc_fmt_si(b[0], 32, mt->device_mem_bytes, "B"),
           oc_fmt_si(b[3], 32, mt->device_mem_bytes - mt->peak_mem_bytes - mt->reserve_bytes,
                     "B"),
           mt->fits ? "fits" : "DOES NOT FIT");
    oc_metrics_print_stages(stdout, mt);
}

/* What the child sends back: the metrics, and a warning about the plots
 * (then no image was made). */
struct result {
    struct oc_metrics mt;
    char warning[OC_MSG_MAX];
};

/* In the child: simulate and write the files; the parent prints. */
static int child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    const struct job *j = arg;
    const struct oc_opts *o = j->o;
    struct result *res = oc_xcalloc(1, sizeof *res);
    struct oc_schedule sched;
    struct oc_timeline tl;
    memset(&sched, 0, sizeof sched);
    memset(&tl, 0, sizeof tl);
    if (oc_replay_run_steady(&o->model, &o->topo, &o->layout, j->ro, &res->mt, &sched, &tl,
                             st) != 0) {
        free(res);
        return -1;
    }
    char path[4200];
    int rc = 0;
    struct oc_csv csv;
    snprintf(path, sizeof path, "%s/simulate.csv", j->out);
    if (oc_metrics_csv_open(&csv, path, st) != 0)
        rc = -1;
    if (rc == 0) {
        oc_metrics_csv_row(&csv, &res->mt, res->mt.fits ? "" : "out of memory");
        rc = oc_csv_close(&csv, st);
    }
    char title[256], name[128];
    oc_layout_format(&o->layout, name, sizeof name);
    snprintf(title, sizeof title, "%s, %s on %lld x %s (simulated)", o->model.name,
             name, (long long)o->cards, o->topo.device.name);
    struct oc_trace_opts to = OC_TRACE_OPTS_DEFAULT;
    to.title = title;
    to.source = "simulated";
    to.gpus_per_node = o->topo.gpus_per_node;
    snprintf(path, sizeof path, "%s/timeline.json", j->out);
    if (rc == 0 && oc_timeline_json_write(path, &tl, &o->layout, &to, NULL, st) != 0)
        rc = -1;
    snprintf(path, sizeof path, "%s/ops.csv", j->out);
    if (rc == 0 && oc_ops_csv_write(path, &tl, st) != 0)
        rc = -1;
    if (rc == 0) {
        struct oc_status pst = {{0}};
        struct oc_plot_opts po = OC_PLOT_OPTS_DEFAULT;
        po.title = title;
        const int prc = oc_plot_pipeline(j->out, &tl, &o->layout, &po, &pst);
        if (prc < 0) /* a file not written: an error, as the tables' */
            rc = oc_fail(st, "%s", pst.msg);
        else if (prc > 0)
            snprintf(res->warning, sizeof res->warning, "%s", pst.msg);
    }
    if (rc == 0)
        oc_sim_buf_append(out, res, sizeof *res);
    oc_timeline_free(&tl);
    oc_schedule_free(&sched);
    free(res);
    return rc;
}

int oc_cmd_simulate(int argc, char **argv)
{
    struct oc_opts o;
    struct oc_status st = {{0}};
    oc_opts_default(&o);
    if (oc_opts_parse(&o, argc, argv, GROUPS, &st) != 0) {
        fprintf(stderr, "ocsim simulate: %s\n", st.msg);
        return 2;
    }
    if (o.help) {
        help();
        return 0;
    }
    struct oc_variability var;
    if (oc_simulate_var_check(&o, &var, &st) != 0) {
        fprintf(stderr, "ocsim simulate: %s\n", st.msg);
        return 2;
    }
    struct oc_replay_opts ro;
    if (oc_opts_load(&o, &st) != 0 ||
        oc_layout_validate(&o.layout, &o.model, &o.topo, o.cards, &st) != 0 ||
        oc_opts_replay(&o, &ro, &st) != 0) {
        fprintf(stderr, "ocsim simulate: %s\n", st.msg);
        return 2;
    }
    const char *out = o.out_dir ? o.out_dir : "out/simulate";
    if (oc_mkdir_p(out, &st) != 0) {
        fprintf(stderr, "ocsim simulate: %s\n", st.msg);
        return 2;
    }
    if (o.variability)
        return oc_simulate_var_run(&o, &ro, &var, out);
    struct job j = {&o, &ro, out};
    struct oc_sim_buf res = {0};
    fflush(stdout);
    /* With --log the child's SimGrid log goes to our stderr. */
    const struct oc_sim_fork_opts fo = {.keep_stderr = o.log != NULL};
    if (oc_sim_fork_run(child, &j, &fo, &res, &st) != 0) {
        fprintf(stderr, "ocsim simulate: %s\n", st.msg);
        oc_sim_buf_free(&res);
        return 2;
    }
    if (res.len != sizeof(struct result)) {
        fprintf(stderr, "ocsim simulate: the simulation returned no result\n");
        oc_sim_buf_free(&res);
        return 2;
    }
    const struct result *r = (const struct result *)res.data;
    print_metrics(&o, &r->mt);
    if (r->warning[0])
        fprintf(stderr, "ocsim simulate: warning: %s\n", r->warning);
    printf("wrote %s/simulate.csv, %s/ops.csv, %s/timeline.json, %s/pipeline.%s\n", out,
           out, out, out, r->warning[0] ? "gp" : "png");
    int fits = r->mt.fits;
    oc_sim_buf_free(&res);
    return fits ? 0 : 1;
}
