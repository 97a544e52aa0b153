/* cmd_layouts.c: `ocsim layouts` lists every TP x PP x DP layout for N cards
 * with its memory per GPU, whether it fits, and why a rejected one fails. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "csv_table.h"
#include "format.h"
#include "layout.h"
#include "memory.h"
#include "options.h"
#include "reserve.h"

static const char *const csv_cols[] = {
    "tp", "pp", "dp", "micro_batch", "num_micro_batches", "schedule", "vchunks",
    "peak_mem_bytes", "peak_mem_stage", "device_mem_bytes", "fits", "reason",
    "global_batch", "layout",
    "reserve_bytes",
};
#define NCOLS ((int)(sizeof csv_cols / sizeof csv_cols[0]))

#define GROUPS (OC_OPT_CSV | OC_OPT_SWEEP | OC_OPT_RESERVE)

static void help(void)
{
    puts("usage: ocsim layouts --cards N [--model M] [--topology T] [--global-batch B]\n"
         "                     [--seq S] [--micro-batches 1,2,4] [--schedule LIST]\n"
         "                     [--csv FILE] [...]\n\n"
         "Lists every TP x PP x DP layout of N cards, for each micro-batch size and\n"
         "schedule asked for, with the closed-form peak memory per GPU (the worst\n"
         "pipeline stage), whether it fits the device with the reserve (--reserve),\n"
         "and the rule a rejected one breaks. Exit code 0 when at least one layout fits, 1 when none does.\n");
    oc_opts_print_help(stdout, GROUPS);
}

/* The verdict of one candidate: memory when valid, and why it is out. */
struct verdict {
    double peak_bytes;
    int64_t peak_stage;
    double reserve_bytes;
    int fits;
    char reason[OC_MSG_MAX];
};

static void judge(const struct oc_opts *o, const struct oc_candidate *c,
                  struct verdict *v)
{
    memset(v, 0, sizeof *v);
    if (!c->valid) {
        snprintf(v->reason, sizeof v->reason, "%s", c->reason);
        return;
    }
    v->peak_bytes = oc_memory_peak(&o->model, &c->layout, &v->peak_stage);
    struct oc_reserve r;
    oc_reserve_layout(&o->model, &c->layout, &o->topo, v->peak_bytes, &r);
    v->reserve_bytes = r.total_bytes;
    v->fits = oc_reserve_fits(&o->topo, v->peak_bytes, r.total_bytes);
    if (!v->fits) {
        char need[32], res[32], have[32];
        snprintf(v->reason, sizeof v->reason,
                 "out of memory: stage %lld needs %s per GPU + %s reserve, the %s has %s",
                 (long long)v->peak_stage,
                 oc_fmt_si(need, sizeof need, v->peak_bytes, "B"),
                 oc_fmt_si(res, sizeof res, v->reserve_bytes, "B"), o->topo.device.name,
                 oc_fmt_si(have, sizeof have, o->topo.device.memory_bytes, "B"));
    }
}

int oc_cmd_layouts(int argc, char **argv)
{
    struct oc_opts o;
    struct oc_status st = {{0}};
    oc_opts_default(&o);
    if (oc_opts_parse(&o, argc, argv, GROUPS, &st) != 0) {
        fprintf(stderr, "ocsim layouts: %s\n", st.msg);
        return 2;
    }
    if (o.help) {
        help();
        return 0;
    }
    if (oc_opts_load(&o, &st) != 0) {
        fprintf(stderr, "ocsim layouts: %s\n", st.msg);
        return 2;
    }

    struct oc_enum_opts eo = {
        .cards = o.cards,
        .base = o.layout,
        .micro_batches = o.micro_batches,
        .n_micro_batches = o.n_micro_batches,
        .schedules = o.schedules,
        .vchunks = o.vchunks,
        .n_schedules = o.n_schedules,
        .even_stages = o.even_stages,
        .batch_tolerance = o.batch_tolerance,
    };
    struct oc_candidate *cands = NULL;
    int64_t n = oc_layout_enumerate(&eo, &o.model, &o.topo, &cands);

    struct oc_csv csv = {0};
    if (o.csv_path) {
        if (oc_csv_open(&csv, o.csv_path, csv_cols, NCOLS, &st) != 0) {
            fprintf(stderr, "ocsim layouts: %s\n", st.msg);
            free(cands);
            return 2;
        }
    }

    char mem[32];
    printf("# %s on %lld x %s (%lld nodes of %lld), global batch %lld, seq %lld,\n"
           "# recompute %s, sequence parallel %s, optimizer sharding %s, %s attention\n",
           o.model.name, (long long)o.cards, o.topo.device.name,
           (long long)oc_topology_nodes(&o.topo, o.cards),
           (long long)o.topo.gpus_per_node, (long long)o.layout.global_batch,
           (long long)o.layout.seq_length, oc_recompute_name(o.layout.recompute),
           o.layout.sequence_parallel ? "on" : "off",
           o.layout.zero ? "on" : "off",
           o.layout.attention == OC_ATTN_FLASH ? "flash" : "classic");
    printf("%4s %4s %4s %4s %6s %-14s %-14s %10s %-4s %s\n", "tp", "pp", "dp", "mb",
           "m", "schedule", "stages", "peak_mem", "fits", "reason");
    int64_t nvalid = 0, nfit = 0;
    for (int64_t i = 0; i < n; i++) {
        const struct oc_candidate *c = &cands[i];
        const struct oc_layout *l = &c->layout;
        struct verdict v;
        judge(&o, c, &v);
        nvalid += c->valid;
        nfit += v.fits;
        char sched[32];
        if (l->schedule == OC_SCHED_INTERLEAVED)
            snprintf(sched, sizeof sched, "interleaved:%lld", (long long)l->vchunks);
        else
            snprintf(sched, sizeof sched, "%s", oc_schedule_name(l->schedule));
        /* the split of the layers (placement.h): even, or first/last */
        char stages[48] = "even";
        if (l->first_stage_layers || l->last_stage_layers)
            snprintf(stages, sizeof stages, "first%lld-last%lld",
                     (long long)l->first_stage_layers, (long long)l->last_stage_layers);
        int64_t m = c->valid ? oc_layout_num_micro_batches(l) : 0;
        printf("%4lld %4lld %4lld %4lld %6lld %-14s %-14s %10s %-4s %s\n",
               (long long)l->tp, (long long)l->pp, (long long)l->dp,
               (long long)l->micro_batch, (long long)m, sched, stages,
               c->valid ? oc_fmt_si(mem, sizeof mem, v.peak_bytes, "B") : "-",
               v.fits ? "yes" : "no", v.reason);
        if (csv.f) {
            oc_csv_field_i64(&csv, l->tp);
            oc_csv_field_i64(&csv, l->pp);
            oc_csv_field_i64(&csv, l->dp);
            oc_csv_field_i64(&csv, l->micro_batch);
            oc_csv_field_i64(&csv, m);
            oc_csv_field_str(&csv, oc_schedule_name(l->schedule));
            oc_csv_field_i64(&csv, l->vchunks);
            if (c->valid)
                oc_csv_field_f64(&csv, v.peak_bytes), oc_csv_field_i64(&csv, v.peak_stage);
            else
                oc_csv_field_str(&csv, ""), oc_csv_field_str(&csv, "");
            oc_csv_field_f64(&csv, o.topo.device.memory_bytes);
            oc_csv_field_i64(&csv, v.fits);
            oc_csv_field_str(&csv, v.reason);
            char label[256];
            oc_layout_format(l, label, sizeof label);
            oc_csv_field_i64(&csv, l->global_batch);
            oc_csv_field_str(&csv, label);
            if (c->valid)
                oc_csv_field_f64(&csv, v.reserve_bytes);
            else
                oc_csv_field_str(&csv, "");
            oc_csv_end_row(&csv);
        }
    }
    printf("# %lld candidates: %lld valid, %lld fit in %s of device memory with the "
           "reserve (%s)\n",
           (long long)n, (long long)nvalid, (long long)nfit,
           oc_fmt_si(mem, sizeof mem, o.topo.device.memory_bytes, "B"),
           o.topo.reserve.mode == OC_RESERVE_AUTO ? "--reserve auto" : "--reserve fixed");
    free(cands);
    if (csv.f && oc_csv_close(&csv, &st) != 0) {
        fprintf(stderr, "ocsim layouts: %s\n", st.msg);
        return 2;
    }
    return nfit > 0 ? 0 : 1;
}
