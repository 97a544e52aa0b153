/* cmd_memory.c: `ocsim memory` prints the closed-form memory of one layout,
 * per pipeline stage and per kind of buffer. */
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
    "stage", "params", "weights_bytes", "grads_bytes", "optimizer_bytes",
    "activations_bytes", "logits_bytes", "total_bytes", "inflight", "fits",
    "reserve_bytes", "margin_bytes",
};
#define NCOLS ((int)(sizeof csv_cols / sizeof csv_cols[0]))

#define GROUPS (OC_OPT_LAYOUT | OC_OPT_CSV | OC_OPT_RESERVE)

static void help(void)
{
    puts("usage: ocsim memory --cards N --layout tp4-pp4-dp4 [--model M] [--topology T]\n"
         "                    [--global-batch B] [--seq S] [--csv FILE] [...]\n\n"
         "Prints the memory one GPU of each pipeline stage needs, by kind:\n"
         "16-bit weights and gradients (2 + 2 bytes per parameter), fp32 master\n"
         "weights and Adam states (12 bytes per parameter, divided by DP when\n"
         "sharded); in an fp32 run (--fp32) 4 + 4 and 8 (Adam's two moments); the\n"
         "activations of the micro-batches in flight at the stage's peak (Korthikanti\n"
         "et al. 2022), and the fp32 logits of the loss on the last stage; then the\n"
         "reserve (--reserve: CUDA context, NCCL buffers, cuBLAS workspaces,\n"
         "fragmentation) and the margin, device - total - reserve. Exit code 0 when\n"
         "every stage fits the device with its reserve, 1 when one does not, 2 on\n"
         "bad input.\n");
    oc_opts_print_help(stdout, GROUPS);
}

/* The reserve of the stage closest to the memory line, by term. */
static void print_reserve(const struct oc_topology *t, const struct oc_reserve *r)
{
    char a[32], b[32], c[32], d[32], e[32];
    if (t->reserve.mode == OC_RESERVE_FIXED) {
        printf("# reserve: %s per GPU (--reserve)\n", oc_fmt_si(e, sizeof e, r->total_bytes, "B"));
        return;
    }
    printf("# reserve (auto, the stage closest to the memory line): CUDA context %s + NCCL "
           "%s (%lld communicators and the pipeline neighbours) + cuBLAS %s + "
           "fragmentation %s (%.0f%% of its total) = %s\n",
           oc_fmt_si(a, sizeof a, r->cuda_context_bytes, "B"),
           oc_fmt_si(b, sizeof b, r->nccl_bytes, "B"), (long long)r->nccl_communicators,
           oc_fmt_si(c, sizeof c, r->cublas_bytes, "B"),
           oc_fmt_si(d, sizeof d, r->fragmentation_bytes, "B"), 100 * t->reserve.fragmentation,
           oc_fmt_si(e, sizeof e, r->total_bytes, "B"));
}

int oc_cmd_memory(int argc, char **argv)
{
    struct oc_opts o;
    struct oc_status st = {{0}};
    oc_opts_default(&o);
    if (oc_opts_parse(&o, argc, argv, GROUPS, &st) != 0) {
        fprintf(stderr, "ocsim memory: %s\n", st.msg);
        return 2;
    }
    if (o.help) {
        help();
        return 0;
    }
    if (oc_opts_load(&o, &st) != 0 ||
        oc_layout_validate(&o.layout, &o.model, &o.topo, o.cards, &st) != 0) {
        fprintf(stderr, "ocsim memory: %s\n", st.msg);
        return 2;
    }
    const struct oc_layout *l = &o.layout;
    struct oc_csv csv = {0};
    if (o.csv_path && oc_csv_open(&csv, o.csv_path, csv_cols, NCOLS, &st) != 0) {
        fprintf(stderr, "ocsim memory: %s\n", st.msg);
        return 2;
    }
    char name[128], cap[32];
    oc_layout_format(l, name, sizeof name);
    printf("# %s, %s on %lld x %s (%s each), global batch %lld, seq %lld, "
           "%lld micro-batches\n",
           o.model.name, name, (long long)o.cards, o.topo.device.name,
           oc_fmt_si(cap, sizeof cap, o.topo.device.memory_bytes, "B"),
           (long long)l->global_batch, (long long)l->seq_length,
           (long long)oc_layout_num_micro_batches(l));
    printf("%5s %9s %9s %9s %9s %11s %9s %9s %8s %9s %9s %s\n", "stage", "params",
           "weights", "grads", "optimizer", "activations", "logits", "total",
           "inflight", "reserve", "margin", "fits");
    struct oc_reserve worst = {0};
    double worst_total = -1;
    int all_fit = 1;
    for (int64_t s = 0; s < l->pp; s++) {
        struct oc_mem_breakdown b;
        oc_memory_stage(&o.model, l, s, &b);
        struct oc_reserve r;
        oc_reserve_stage(&o.model, l, &o.topo, s, b.total_bytes, &r);
        const double margin = o.topo.device.memory_bytes - b.total_bytes - r.total_bytes;
        int fits = oc_reserve_fits(&o.topo, b.total_bytes, r.total_bytes);
        all_fit &= fits;
        if (b.total_bytes + r.total_bytes > worst_total)
            worst_total = b.total_bytes + r.total_bytes, worst = r;
        char f[9][32];
        printf("%5lld %9s %9s %9s %9s %11s %9s %9s %8lld %9s %9s %s\n", (long long)s,
               oc_fmt_si(f[0], 32, (double)b.params, ""),
               oc_fmt_si(f[1], 32, b.weights_bytes, "B"),
               oc_fmt_si(f[2], 32, b.grads_bytes, "B"),
               oc_fmt_si(f[3], 32, b.optimizer_bytes, "B"),
               oc_fmt_si(f[4], 32, b.activations_bytes, "B"),
               oc_fmt_si(f[5], 32, b.logits_bytes, "B"),
               oc_fmt_si(f[6], 32, b.total_bytes, "B"), (long long)b.inflight,
               oc_fmt_si(f[7], 32, r.total_bytes, "B"), oc_fmt_si(f[8], 32, margin, "B"),
               fits ? "yes" : "no");
        if (csv.f) {
            oc_csv_field_i64(&csv, s);
            oc_csv_field_i64(&csv, b.params);
            oc_csv_field_f64(&csv, b.weights_bytes);
            oc_csv_field_f64(&csv, b.grads_bytes);
            oc_csv_field_f64(&csv, b.optimizer_bytes);
            oc_csv_field_f64(&csv, b.activations_bytes);
            oc_csv_field_f64(&csv, b.logits_bytes);
            oc_csv_field_f64(&csv, b.total_bytes);
            oc_csv_field_i64(&csv, b.inflight);
            oc_csv_field_i64(&csv, fits);
            oc_csv_field_f64(&csv, r.total_bytes);
            oc_csv_field_f64(&csv, margin);
            oc_csv_end_row(&csv);
        }
    }
    /* ZeRO-2/3's unit buffers (memory.h) are in the total, not in a column
     * (memory.csv keeps its columns) */
    for (int64_t s = 0; s < l->pp; s++) {
        const double z = oc_mem_zero_transient_bytes(&o.model, l, s);
        char f[32];
        if (z > 0)
            printf("# stage %lld: ZeRO-%d unit buffers (gathered weights, gradients before "
                   "their reduce-scatter) %s, in total\n",
                   (long long)s, l->zero, oc_fmt_si(f, sizeof f, z, "B"));
    }
    /* gradient compression's state (core/compress.h), in the optimizer
     * column */
    for (int64_t s = 0; s < l->pp; s++) {
        struct oc_mem_breakdown b;
        oc_memory_stage(&o.model, l, s, &b);
        char f[32];
        if (b.compress_bytes > 0)
            printf("# stage %lld: gradient compression's error-feedback residuals (and "
                   "PowerSGD's P, Q) %s, in the optimizer column\n",
                   (long long)s, oc_fmt_si(f, sizeof f, b.compress_bytes, "B"));
    }
    print_reserve(&o.topo, &worst);
    if (csv.f && oc_csv_close(&csv, &st) != 0) {
        fprintf(stderr, "ocsim memory: %s\n", st.msg);
        return 2;
    }
    return all_fit ? 0 : 1;
}
