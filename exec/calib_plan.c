/* calib_plan.c: the plan of a calibration shared by cpu/calibrate_cpu.c and
 * exec/cuda/calibrate_cuda.c (see calib_plan.h): shapes, the conversion
 * of times into rates, the shared option checks and tables.
 *
 * What it is not: a measurement (no MPI, CUDA or BLAS here; the backends
 * time the work), nor the topology file (calib_topology.c).
 */
#define _GNU_SOURCE /* gethostname, gmtime_r */
#include "calib_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "closed_form.h" /* oc_busbw_allreduce */
#include "cost.h"        /* oc_cost_sched_flops */
#include "layout.h"

#define MIB (1024.0 * 1024.0)

/* ------------------------------------------------------------------ */
/* Options                                                              */

int oc_calib_check_shapes(int64_t seq, int64_t micro_batch, int64_t tp,
                          struct oc_status *st)
{
    if (seq < 1 || micro_batch < 1 || tp < 1)
        return oc_fail(st, "calibrate: seq %lld, micro-batch %lld and tp %lld must be >= 1",
                       (long long)seq, (long long)micro_batch, (long long)tp);
    return 0;
}

int oc_calib_check_counts(int repeats, int64_t max_msg_bytes, struct oc_status *st)
{
    if (repeats < 1)
        return oc_fail(st, "calibrate: repeats %d must be >= 1", repeats);
    if (max_msg_bytes < 8 || max_msg_bytes > (int64_t)1 << 30)
        return oc_fail(st, "calibrate: the largest message (%lld bytes) must be in "
                           "[8 B, 1 GiB]",
                       (long long)max_msg_bytes);
    return 0;
}

/* ------------------------------------------------------------------ */
/* This machine                                                         */

void oc_calib_host_date(struct oc_calib_measured *m)
{
    if (gethostname(m->host, sizeof m->host) != 0)
        snprintf(m->host, sizeof m->host, "unknown host");
    m->host[sizeof m->host - 1] = '\0';
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(m->date, sizeof m->date, "%Y-%m-%d %H:%M UTC", &tm);
}

/* ------------------------------------------------------------------ */
/* GEMM                                                                 */

const char *const oc_calib_call_names[OC_CALIB_G_NCALLS] = {"fwd", "dgrad", "wgrad"};

static int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

void oc_calib_gemm_shapes(const struct oc_model *md, int64_t tp, int64_t T,
                          struct oc_calib_lin lins[OC_CALIB_NLINS])
{
    const int64_t t = tp;
    const int64_t hd = oc_model_head_dim(md);
    const int64_t a = ceil_div(md->num_attention_heads, t);
    const int64_t k = ceil_div(md->num_key_value_heads, t);
    const int64_t f = ceil_div(md->intermediate_size, t);
    const int64_t h = md->hidden_size;
    /* One TP shard, Megatron-LM's split as core/cost.c counts it. */
    lins[0] = (struct oc_calib_lin){"qkv", T, h, (a + 2 * k) * hd};
    lins[1] = (struct oc_calib_lin){"proj", T, a * hd, h};
    lins[2] = (struct oc_calib_lin){"mlp_up", T, h, (md->gated_mlp ? 2 : 1) * f};
    lins[3] = (struct oc_calib_lin){"mlp_down", T, f, h};
}

void oc_calib_gemm_max(const struct oc_calib_lin *lins, int nl, int64_t *max_in,
                       int64_t *max_w, int64_t *max_out)
{
    *max_in = *max_w = *max_out = 0;
    for (int i = 0; i < nl; i++) {
        const struct oc_calib_lin *l = &lins[i];
        if (l->N * l->IC > *max_in) *max_in = l->N * l->IC;
        if (l->OC * l->IC > *max_w) *max_w = l->OC * l->IC;
        if (l->N * l->OC > *max_out) *max_out = l->N * l->OC;
    }
}

double oc_calib_lin_flops(const struct oc_calib_lin *l)
{
    /* A GEMM of (M, N, K) is 2 M N K FLOPs (a multiply and an add). */
    return 2.0 * (double)l->N * (double)l->IC * (double)l->OC;
}

void oc_calib_gemm_mnk(const struct oc_calib_lin *l, int call, int64_t *M, int64_t *N,
                       int64_t *K)
{
    *M = call == OC_CALIB_G_DW ? l->OC : l->N;
    *N = call == OC_CALIB_G_FWD ? l->OC : l->IC;
    *K = call == OC_CALIB_G_FWD ? l->IC : call == OC_CALIB_G_DINP ? l->OC : l->N;
}

/* ------------------------------------------------------------------ */
/* The executor's parts                                                 */

#define RUN_PART(expr) OC_CALIB_RUN_PART(call, expr)

void oc_calib_parts_bind(struct oc_calib_parts *b)
{
    const struct oc_gpt_dims *d = &b->d;
    const int64_t N = d->B * d->T, C = d->C, L = b->L;
    const int64_t A = oc_gpt_attn_act_floats(d), M = oc_gpt_mlp_act_floats(d);
    b->aa = oc_xcalloc((size_t)L, sizeof *b->aa);
    b->ma = oc_xcalloc((size_t)L, sizeof *b->ma);
    for (int64_t l = 0; l < L; l++) {
        oc_gpt_attn_act_bind(&b->aa[l], d, b->x + 2 * l * N * C, b->acts + l * A);
        oc_gpt_mlp_act_bind(&b->ma[l], d, b->x + (2 * l + 1) * N * C,
                            b->acts + L * A + l * M);
    }
    oc_gpt_head_act_bind(&b->ha, d, b->x + 2 * L * N * C, b->head);
}

void oc_calib_parts_unbind(struct oc_calib_parts *b)
{
    free(b->aa);
    free(b->ma);
    b->aa = NULL;
    b->ma = NULL;
}

void oc_calib_parts_run(struct oc_calib_parts *b, int64_t step,
                        void (*mark)(void *ctx, int part), void *ctx)
{
    const struct oc_kernels *k = b->k;
    const struct oc_gpt_dims *d = &b->d;
    struct oc_params *p = b->p;
    const int64_t N = d->B * d->T, C = d->C, L = b->L;
    /* AdamW as the runner's default (GPT-3: Brown et al. 2020, appendix B). */
    const struct oc_adamw hyper = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f};
    const float grad_scale = 1.0f / (float)N;
    struct oc_gpt_call call;
    k->ops->zero(k->ctx, p->g, p->n);
    mark(ctx, -1);
    RUN_PART(oc_gpt_embed_fwd(k, &call, d, p, b->tok, b->x, b->work));
    mark(ctx, OC_PT_EMBED_FWD);
    for (int64_t l = 0; l < L; l++) {
        RUN_PART(oc_gpt_attn_fwd(k, &call, d, p, l, &b->aa[l], b->x + (2 * l + 1) * N * C,
                                 b->work));
        mark(ctx, OC_PT_ATTN_FWD);
        RUN_PART(oc_gpt_mlp_fwd(k, &call, d, p, l, &b->ma[l], b->x + (2 * l + 2) * N * C,
                                b->work));
        mark(ctx, OC_PT_MLP_FWD);
    }
    RUN_PART(oc_gpt_head_fwd(k, &call, d, p, &b->ha, b->tgt,
                             b->losses));
    mark(ctx, OC_PT_HEAD_FWD);
    RUN_PART(oc_gpt_head_bwd(k, &call, d, p, &b->ha, b->tgt, grad_scale, b->gs, b->work));
    mark(ctx, OC_PT_HEAD_BWD);
    for (int64_t l = L - 1; l >= 0; l--) {
        RUN_PART(oc_gpt_mlp_bwd(k, &call, d, p, l, &b->ma[l], b->gs, b->gs, b->work));
        mark(ctx, OC_PT_MLP_BWD);
        oc_gpt_attn_scores(k, d, &b->aa[l]);
        mark(ctx, OC_PT_ATTN_RECOMPUTE);
        RUN_PART(oc_gpt_attn_bwd(k, &call, d, p, l, &b->aa[l], b->gs, b->gs, b->work));
        mark(ctx, OC_PT_ATTN_BWD);
    }
    RUN_PART(oc_gpt_embed_bwd(k, &call, d, p, b->tok, b->gs, b->work));
    mark(ctx, OC_PT_EMBED_BWD);
    oc_params_adamw(k, p, &hyper, step);
    mark(ctx, OC_PT_ADAMW);
}
#undef RUN_PART


const char *const oc_pt_names[OC_PT_COUNT] = {
    "embed_fwd", "attn_fwd", "mlp_fwd", "head_fwd", "head_bwd",
    "mlp_bwd", "attn_recompute", "attn_bwd", "embed_bwd", "adamw",
};

/* Each part's op in the schedule, whether it runs once per layer, and its
 * key in m->part_flops (enum oc_calib_part, -1: none). */
static const struct {
    int pt;
    enum oc_part part;
    enum oc_phase phase;
    int layered;
    int key;
} pt_map[OC_PT_COUNT] = {
    {OC_PT_EMBED_FWD, OC_PART_EMBED, OC_PHASE_FWD, 0, -1},
    {OC_PT_ATTN_FWD, OC_PART_ATTN, OC_PHASE_FWD, 1, OC_CALIB_ATTN_FWD},
    {OC_PT_MLP_FWD, OC_PART_MLP, OC_PHASE_FWD, 1, OC_CALIB_MLP_FWD},
    {OC_PT_HEAD_FWD, OC_PART_HEAD, OC_PHASE_FWD, 0, OC_CALIB_HEAD_FWD},
    {OC_PT_HEAD_BWD, OC_PART_HEAD, OC_PHASE_BWD, 0, OC_CALIB_HEAD_BWD},
    {OC_PT_MLP_BWD, OC_PART_MLP, OC_PHASE_BWD, 1, OC_CALIB_MLP_BWD},
    {OC_PT_ATTN_RECOMPUTE, OC_PART_ATTN, OC_PHASE_RECOMPUTE, 1, OC_CALIB_ATTN_RECOMPUTE},
    {OC_PT_ATTN_BWD, OC_PART_ATTN, OC_PHASE_BWD, 1, OC_CALIB_ATTN_BWD},
    {OC_PT_EMBED_BWD, OC_PART_EMBED, OC_PHASE_BWD, 0, -1},
    {OC_PT_ADAMW, OC_PART_ALL, OC_PHASE_OPTIMIZER, 0, -1},
};

int oc_calib_parts_repeats(double warm_s, int repeats)
{
    int n = (int)(OC_PT_BUDGET_S / (warm_s > 1e-6 ? warm_s : 1e-6));
    return n < repeats ? repeats : n > OC_PT_MAX_REPEATS ? OC_PT_MAX_REPEATS : n;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double oc_calib_parts_median(double *all, int n, double med[OC_PT_COUNT])
{
    double total = 0;
    for (int k = 0; k < OC_PT_COUNT; k++) {
        qsort(all + k * n, (size_t)n, sizeof *all, cmp_double);
        med[k] = n % 2 ? all[k * n + n / 2]
                       : 0.5 * (all[k * n + n / 2 - 1] + all[k * n + n / 2]);
        total += med[k];
    }
    return total;
}

void oc_calib_parts_rates(const struct oc_model *md, int64_t tp, int64_t micro_batch,
                          int64_t seq, int64_t L, int64_t params,
                          const double mean_s[OC_PT_COUNT], double call_s[OC_PT_COUNT],
                          double flops[OC_PT_COUNT], struct oc_calib_measured *m)
{
    /* The layout the rates are counted for: the calibration's shapes. */
    struct oc_layout lf;
    oc_layout_default(&lf);
    lf.tp = tp;
    lf.micro_batch = micro_batch;
    lf.seq_length = seq;
    lf.sequence_parallel = 0;
    lf.recompute = OC_RECOMPUTE_SELECTIVE;
    const double tokens = (double)(micro_batch * seq);
    for (int k = 0; k < OC_PT_COUNT; k++) {
        OC_ASSERT(pt_map[k].pt == k);
        /* Seconds of one call: layer parts run L times per repeat. */
        call_s[k] = mean_s[k] / (pt_map[k].layered ? (double)L : 1.0);
        /* The FLOPs the schedule gives the op (cost.h), so that the cost
         * model's FLOPs / rate is this time again. */
        flops[k] = oc_cost_sched_flops(md, &lf, pt_map[k].part, pt_map[k].phase);
        if (pt_map[k].key >= 0) {
            OC_ASSERT(flops[k] > 0 && call_s[k] > 0);
            m->part_flops[pt_map[k].key] = flops[k] / call_s[k];
        }
    }
    m->embed_fwd_s_per_token = call_s[OC_PT_EMBED_FWD] / tokens;
    m->embed_bwd_s_per_token = call_s[OC_PT_EMBED_BWD] / tokens;
    m->optimizer_s_per_param = call_s[OC_PT_ADAMW] / (double)params;
    m->parts_measured = 1;
}

void oc_calib_parts_table(FILE *f, int64_t L, int64_t params,
                          const double call_s[OC_PT_COUNT],
                          const double lo_s[OC_PT_COUNT],
                          const double hi_s[OC_PT_COUNT],
                          const double flops[OC_PT_COUNT],
                          const struct oc_calib_measured *m)
{
    fprintf(f, "#%15s %12s %12s %12s %12s %12s\n", "part", "time_us", "lo_us", "hi_us",
            "MFLOP", "GFLOP/s");
    for (int k = 0; k < OC_PT_COUNT; k++) {
        const double per = pt_map[k].layered ? (double)L : 1.0;
        fprintf(f, " %15s %12.2f %12.2f %12.2f %12.3f", oc_pt_names[k], call_s[k] * 1e6,
                lo_s[k] / per * 1e6, hi_s[k] / per * 1e6, flops[k] / 1e6);
        if (pt_map[k].key >= 0)
            fprintf(f, " %12.3f\n", flops[k] / call_s[k] / 1e9);
        else
            fprintf(f, " %12s\n", "-");
    }
    fprintf(f,
            "# embedding %.4g s/token forward, %.4g s/token backward; AdamW %.4g s "
            "per parameter (%lld parameters)\n#\n",
            m->embed_fwd_s_per_token, m->embed_bwd_s_per_token, m->optimizer_s_per_param,
            (long long)params);
}

/* ------------------------------------------------------------------ */
/* Point-to-point and all-reduce                                        */

int oc_calib_msg_sizes(int64_t max_msg_bytes)
{
    int nsizes = 0;
    for (int64_t s = 8; s <= max_msg_bytes; s *= 2)
        nsizes++;
    return nsizes;
}

double oc_calib_msg_largest(int nsizes) { return 8.0 * pow(2.0, nsizes - 1); }

int oc_calib_msg_iters(int64_t bytes)
{
    double n = 64.0 * MIB / (double)bytes;
    return n < 5 ? 5 : n > 1000 ? 1000 : (int)n;
}

void oc_calib_p2p_fit(const double *t, int nsizes, int64_t act, double t_act,
                      struct oc_calib_measured *m)
{
    const double smax = oc_calib_msg_largest(nsizes);
    m->p2p_latency_s = t[0];
    const double dt = t[nsizes - 1] - t[0];
    m->p2p_large_Bps = dt > 0 ? smax / dt : smax / t[nsizes - 1];
    m->p2p_msg_bytes = (double)act;
    m->p2p_msg_s = t_act;
    m->p2p_Bps = t_act > t[0] ? (double)act / (t_act - t[0]) : (double)act / t_act;
}

void oc_calib_allreduce_fit(const double *t, int nsizes, int64_t nranks,
                            struct oc_calib_measured *m)
{
    const double smax = oc_calib_msg_largest(nsizes);
    m->allreduce_bytes = smax;
    m->allreduce_busbw_Bps = oc_busbw_allreduce(nranks, smax, t[nsizes - 1]);
    m->allreduce_latency_s = t[0];
}

void oc_calib_net_table_head(FILE *f, const char *what)
{
    /* nccl-tests' column heads and units (src/common.cu). */
    fprintf(f, "# %s\n#%11s %13s %8s %6s %6s %10s %9s %9s %6s\n"
               "#%11s %13s %8s %6s %6s %10s %9s %9s %6s\n",
            what, "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
            "#wrong", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "");
}

void oc_calib_net_row(FILE *f, const struct oc_calib_net_row *r)
{
    /* nccl-tests: algbw = bytes / time; busbw as the caller's collective
     * defines it (closed_form.h); root -1: a collective without one. */
    char wrong[32] = "N/A";
    if (r->wrong >= 0)
        snprintf(wrong, sizeof wrong, "%lld", (long long)r->wrong);
    fprintf(f, " %11lld %13lld %8s %6s %6d %10.2f %9.3f %9.3f %6s", (long long)r->bytes,
            (long long)r->count, r->type, r->redop, -1, r->time_s * 1e6,
            (double)r->bytes / r->time_s / 1e9, r->busbw_Bps / 1e9, wrong);
    if (r->note)
        fprintf(f, "   %s", r->note);
    fputc('\n', f);
}

void oc_calib_sendrecv_rows(FILE *f, int64_t max_msg_bytes, const double *t,
                            const int64_t *wrong)
{
    /* nccl-tests, sendrecv: busbw = algbw = bytes / time. */
    int i = 0;
    for (int64_t s = 8; s <= max_msg_bytes; s *= 2, i++)
        oc_calib_net_row(f, &(struct oc_calib_net_row){s, s, "int8", "none", t[i],
                                                        (double)s / t[i],
                                                        wrong ? wrong[i] : -1, NULL});
}

void oc_calib_p2p_rows(FILE *f, int64_t max_msg_bytes, const double *t, int64_t act,
                       double t_act)
{
    oc_calib_sendrecv_rows(f, max_msg_bytes, t, NULL);
    oc_calib_net_row(f, &(struct oc_calib_net_row){act, act, "int8", "none", t_act,
                                                    (double)act / t_act, -1,
                                                    "<- one activation (T x h fp32)"});
}

void oc_calib_allreduce_rows(FILE *f, int64_t max_msg_bytes, const double *t,
                             int64_t nranks, const int64_t *wrong)
{
    /* nccl-tests, all_reduce: busbw = algbw * 2(n-1)/n (closed_form.h). */
    int i = 0;
    for (int64_t s = 8; s <= max_msg_bytes; s *= 2, i++)
        oc_calib_net_row(f, &(struct oc_calib_net_row){
                                s, s / 4, "float", "sum", t[i],
                                oc_busbw_allreduce(nranks, (double)s, t[i]),
                                wrong ? wrong[i] : -1, NULL});
}
