/* calibrate_cuda_parts.c: the cuda executor's parts at the model's shapes,
 * for the cuda calibration (calibrate_cuda.c runs it; calibrate_cuda_priv.h
 * lists the files): one TP shard's parameters and as many layers as fit on
 * every GPU, run on the cuda kernels in calib_plan.h's order with an event
 * after each part, the median repeat per GPU and the mean over the GPUs;
 * the rates of each part (calib_plan.h's definitions) and their table.
 *
 * What it is not: the parts (exec/model/gpt.h), their order and FLOPs
 * (calib_plan.h), or the cpu calibration's twin of this (cpu/calibrate_cpu.c).
 */
#define _GNU_SOURCE /* sysconf(_SC_PHYS_PAGES) */
#include "calibrate_cuda_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "data.h"
#include "gpt.h"
#include "params.h"
#include "wait_clock.h"

/* ------------------------------------------------------------------ */
/* The cuda executor's parts at the model's shapes                      */

/* One shard's parameters and every layer's activations on the GPU, run on
 * the cuda kernels by calib_plan.h's oc_calib_parts_run (cpu/calibrate_cpu.c's
 * order and parts); a part's TP all-reduces are left out. */
#define RUN_PART(expr) OC_CALIB_RUN_PART(call, expr)

struct pt_bufs {
    struct oc_params hp;   /* host: the tensor table (t, slot); arena freed */
    struct oc_params p;    /* hp's table over the device arena */
    float *arena;          /* device (4 n): w, g, m, v */
    struct oc_cuda_kernels kern; /* on the calibration's stream */
    struct oc_kernels k;
    struct oc_calib_parts pt; /* dims, L and the device buffers */
    cudaEvent_t *ev;       /* 6 + 5L per repeat: before the first call, after each */
    int *ev_part;          /* the part of the call that ends at ev[i+1] */
    int nev;
};

static void pt_free(struct pt_bufs *b)
{
    struct oc_calib_parts *t = &b->pt;
    oc_cuda_kernels_free(&b->kern);
    for (int i = 0; i < b->nev; i++)
        cudaCheck(cudaEventDestroy(b->ev[i]));
    free(b->ev), free(b->ev_part);
    cudaCheck(cudaFree(t->x)), cudaCheck(cudaFree(t->acts)), cudaCheck(cudaFree(t->head));
    cudaCheck(cudaFree(t->gs)), cudaCheck(cudaFree(t->work)), cudaCheck(cudaFree(t->losses));
    cudaCheck(cudaFree(t->tok)), cudaCheck(cudaFree(t->tgt)), cudaCheck(cudaFree(b->arena));
    oc_calib_parts_unbind(t);
    oc_params_free(&b->hp);
    memset(b, 0, sizeof *b);
}

/* Layers that fit here: all of the model's, unless their device memory
 * (weights, gradients, the two AdamW moments, the bf16 copy: 16 or 18
 * bytes per parameter, and the activations) would take more than half of
 * the GPU's free memory (the rest for the kernels' scratch and cuBLAS), or
 * the host's transient arena (oc_params_init: 16 bytes per parameter)
 * more than a quarter of this rank's share of RAM (cpu/calibrate_cpu.c's budget).
 * The rates are per layer, so fewer layers measure the same thing. 0 with
 * why->msg: the executor does not run this model at these shapes, or one
 * layer does not fit. */
static int64_t pt_layers(struct cal *c, const struct oc_kernels *k, struct oc_gpt_dims *d,
                         struct oc_status *why)
{
    const struct oc_cuda_calib_opts *o = c->o;
    const struct oc_model *md = o->model;
    if (oc_gpt_dims_init(d, md, o->tp, c->rank % o->tp, o->micro_batch, o->seq, why) != 0)
        return 0;
    size_t free_bytes = 0, total_bytes = 0;
    cudaCheck(cudaMemGetInfo(&free_bytes, &total_bytes));
    const double dev_budget = 0.5 * (double)free_bytes;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const double host_budget = pages > 0 && page > 0
                                   ? (double)pages * (double)page / c->ctl->local_ranks / 4.0
                                   : INFINITY;
    const double N = (double)(d->B * d->T), C = (double)d->C;
    const double pb = o->dtype == OC_CUDA_BF16 ? 18.0 : 16.0;
    const double lp = (double)oc_model_layer_params_tp(md, o->tp);
    /* wte, wpe, lnf and an untied lmw at most */
    const double ep = (double)(2 * d->v + d->P) * C + 2 * C;
    const double dev_layer =
        pb * lp + 4.0 * ((double)(oc_gpt_attn_act_floats(d) + oc_gpt_mlp_act_floats(d)) + 2 * N * C);
    const double dev_fixed =
        pb * ep +
        4.0 * ((double)(oc_gpt_head_act_floats(d) + oc_gpt_work_floats(k, d)) + 3 * N * C) +
        12.0 * N;
    int64_t L = md->num_hidden_layers;
    if (dev_fixed + (double)L * dev_layer > dev_budget)
        L = (int64_t)floor((dev_budget - dev_fixed) / dev_layer);
    if (16.0 * (ep + (double)L * lp) > host_budget)
        L = (int64_t)floor((host_budget - 16.0 * ep) / (16.0 * lp));
    if (L < 1) {
        oc_fail(why, "one layer of %s with its embedding and head needs %.0f MB of GPU "
                     "memory, more than the %.0f MB set aside for it (half of the free "
                     "memory)",
                md->name, (dev_fixed + dev_layer) / 1e6, dev_budget / 1e6);
        return 0;
    }
    return L;
}

/* Allocates and fills everything for L layers. 0 or -1 with st->msg. */
static int pt_alloc(struct pt_bufs *b, struct cal *c, int64_t L, struct oc_status *st)
{
    const struct oc_cuda_calib_opts *o = c->o;
    const struct oc_model *md = o->model;
    struct oc_calib_parts *t = &b->pt;
    const struct oc_gpt_dims *d = &t->d;
    t->L = L;
    int64_t *layers = oc_xmalloc((size_t)L * sizeof *layers);
    for (int64_t i = 0; i < L; i++)
        layers[i] = i;
    struct oc_params_opts po = {o->tp, c->rank % o->tp, layers, L, 1, 1, 1234};
    int rc = oc_params_init(&b->hp, md, &po, st);
    free(layers);
    if (rc != 0)
        return -1;
    const int64_t n = b->hp.n, N = d->B * d->T, C = d->C;
    const int64_t A = oc_gpt_attn_act_floats(d), M = oc_gpt_mlp_act_floats(d);
    /* The arena: the host's weights, zero gradients and moments (params.h:
     * init zeroes g, m and v). */
    if (oc_ccal_dev_alloc((void **)&b->arena, 16.0 * (double)n, "the parameters", st) != 0)
        return -1;
    cudaCheck(cudaMemcpy(b->arena, b->hp.w, (size_t)n * sizeof(float), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemset(b->arena + n, 0, 3 * (size_t)n * sizeof(float)));
    /* The host arena is no longer needed, only its table. */
    free(b->hp.w), free(b->hp.g), free(b->hp.m), free(b->hp.v);
    b->hp.w = b->hp.g = b->hp.m = b->hp.v = NULL;
    b->p = b->hp;
    b->p.w = b->arena, b->p.g = b->arena + n, b->p.m = b->arena + 2 * n;
    b->p.v = b->arena + 3 * n;
    t->p = &b->p;

    const char *acts = "activations";
    if (oc_ccal_dev_alloc((void **)&t->x, 4.0 * (double)((2 * L + 1) * N * C), acts, st) ||
        oc_ccal_dev_alloc((void **)&t->acts, 4.0 * (double)(L * (A + M)), acts, st) ||
        oc_ccal_dev_alloc((void **)&t->head, 4.0 * (double)oc_gpt_head_act_floats(d), acts, st) ||
        oc_ccal_dev_alloc((void **)&t->gs, 4.0 * (double)(N * C), acts, st) ||
        oc_ccal_dev_alloc((void **)&t->work, 4.0 * (double)oc_gpt_work_floats(&b->k, d), acts,
                          st) ||
        oc_ccal_dev_alloc((void **)&t->losses, 4.0 * (double)N, acts, st) ||
        oc_ccal_dev_alloc((void **)&t->tok, 4.0 * (double)N, "tokens", st) ||
        oc_ccal_dev_alloc((void **)&t->tgt, 4.0 * (double)N, "tokens", st))
        return -1;
    cudaCheck(cudaMemset(t->x, 0, (size_t)((2 * L + 1) * N * C) * sizeof(float)));
    cudaCheck(cudaMemset(t->acts, 0, (size_t)(L * (A + M)) * sizeof(float)));
    cudaCheck(cudaMemset(t->gs, 0, (size_t)(N * C) * sizeof(float)));
    oc_calib_parts_bind(t);
    /* The executor's synthetic data (exec/data.h), its default seed. */
    int32_t *tok = oc_xmalloc((size_t)N * sizeof *tok), *tgt = oc_xmalloc((size_t)N * sizeof *tgt);
    struct oc_synth syn;
    if (oc_synth_init(&syn, md->vocab_size, 1234, st) != 0) {
        free(tok), free(tgt);
        return -1;
    }
    oc_synth_batch(&syn, 0, d->B, d->T, tok, tgt);
    oc_synth_free(&syn);
    cudaCheck(cudaMemcpy(t->tok, tok, (size_t)N * sizeof *tok, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(t->tgt, tgt, (size_t)N * sizeof *tgt, cudaMemcpyHostToDevice));
    free(tok), free(tgt);
    if (oc_cuda_kernels_weights(&b->kern, b->p.w, b->p.n, st) != 0 ||
        oc_gpt_reserve(&b->k, d, st) != 0)
        return -1;
    b->nev = (int)(6 + 5 * L);
    b->ev = oc_xcalloc((size_t)b->nev, sizeof *b->ev);
    b->ev_part = oc_xcalloc((size_t)b->nev, sizeof *b->ev_part);
    for (int i = 0; i < b->nev; i++)
        cudaCheck(cudaEventCreate(&b->ev[i]));
    return 0;
}

/* An event after each part (calib_plan.h's mark), on the stream. */
struct pt_events {
    struct pt_bufs *b;
    cudaStream_t s;
    int e; /* events recorded */
};

static void pt_mark(void *ctx, int part)
{
    struct pt_events *m = ctx;
    OC_ASSERT(m->e < m->b->nev);
    if (part >= 0)
        m->b->ev_part[m->e - 1] = part;
    cudaCheck(cudaEventRecord(m->b->ev[m->e++], m->s));
}

/* One repeat: the seconds of each part, summed over the layers. */
static void pt_repeat(struct pt_bufs *b, struct cal *c, int64_t step,
                      double sec[OC_PT_COUNT])
{
    struct oc_calib_parts *t = &b->pt;
    const int64_t N = t->d.B * t->d.T, C = t->d.C;
    struct oc_gpt_call call;
    memset(sec, 0, OC_PT_COUNT * sizeof *sec);
    /* Untimed: the last repeat's AdamW left the bf16 weights stale, and the
     * next linear layer recasts them (ops_cuda.h); let these two parts do
     * it, so that no timed part carries a whole-arena cast. */
    RUN_PART(oc_gpt_embed_fwd(&b->k, &call, &t->d, &b->p, t->tok, t->x, t->work));
    RUN_PART(oc_gpt_attn_fwd(&b->k, &call, &t->d, &b->p, 0, &t->aa[0], t->x + N * C,
                             t->work));
    struct pt_events m = {b, c->stream, 0};
    oc_calib_parts_run(t, step, pt_mark, &m);
    OC_ASSERT(m.e == b->nev);
    cudaCheck(cudaEventSynchronize(b->ev[m.e - 1]));
    for (int i = 0; i + 1 < m.e; i++)
        sec[b->ev_part[i]] += oc_ccal_elapsed_s(b->ev[i], b->ev[i + 1]);
}

int oc_ccal_measure_parts(struct cal *c, struct oc_calib_measured *m, struct oc_status *st)
{
    const struct oc_cuda_calib_opts *o = c->o;
    /* How many layers: the fewest that fit on any GPU, so that every rank
     * runs the same work. 0: not measured (the same on every rank). */
    struct oc_status why = {{0}};
    struct pt_bufs b;
    memset(&b, 0, sizeof b);
    oc_cuda_kernels_init(&b.k, &b.kern, &c->blas, c->stream, o->dtype);
    b.pt.k = &b.k;
    const double L_here = (double)pt_layers(c, &b.k, &b.pt.d, &why);
    double L_min = 0;
    if (oc_ccal_stats(c, &L_here, 1, NULL, &L_min, NULL, st) != 0)
        return -1;
    if (L_min < 1) {
        if (c->rank == 0 && o->log)
            fprintf(o->log, "# Parts: not measured: %s; the cost model keeps its "
                            "estimates for them\n#\n",
                    why.msg[0] ? why.msg : "one layer does not fit on every GPU");
        return 0;
    }
    struct oc_status ls = {{0}};
    int rc = pt_alloc(&b, c, (int64_t)L_min, &ls);
    if (oc_ccal_together(c, rc, &ls) != 0) {
        pt_free(&b);
        return oc_fail(st, "%s", ls.msg);
    }
    /* A warm-up repeat (cuBLAS's first calls, Lt's plans), then as many as
     * the budget holds, the count decided on rank 0 so that the ranks
     * repeat together. */
    double sec[OC_PT_COUNT], total = 0;
    rc = oc_ctl_barrier(c->ctl, st);
    double t0 = oc_now_s();
    if (rc == 0)
        pt_repeat(&b, c, 1, sec);
    double warm = oc_now_s() - t0;
    int n = oc_calib_parts_repeats(warm, o->repeats);
    if (rc == 0)
        rc = oc_ctl_bcast(c->ctl, &n, sizeof n, 0, st);
    double *all = oc_xcalloc((size_t)n * OC_PT_COUNT, sizeof *all);
    for (int r = 0; r < n && rc == 0; r++) {
        rc = oc_ctl_barrier(c->ctl, st);
        if (rc != 0)
            break;
        pt_repeat(&b, c, r + 2, sec);
        for (int k = 0; k < OC_PT_COUNT; k++)
            all[k * n + r] = sec[k];
    }
    const int64_t L = b.pt.L, params = b.p.n;
    pt_free(&b);
    if (rc != 0) {
        free(all);
        return -1;
    }
    /* The median repeat of each part on this rank (the run's typical
     * time, not its best), then the mean over ranks. */
    double med[OC_PT_COUNT], mean[OC_PT_COUNT], lo[OC_PT_COUNT], hi[OC_PT_COUNT];
    total = oc_calib_parts_median(all, n, med);
    free(all);
    if (oc_ccal_stats(c, med, OC_PT_COUNT, mean, lo, hi, st) != 0)
        return -1;

    /* Seconds of one call and the rates (calib_plan.h). */
    double call_s[OC_PT_COUNT], flops[OC_PT_COUNT];
    oc_calib_parts_rates(o->model, o->tp, o->micro_batch, o->seq, L, params, mean, call_s,
                         flops, m);
    snprintf(m->parts_what, sizeof m->parts_what,
             "the executor's parts (exec/model/gpt.h) on the cuda kernels for %.48s, one "
             "TP shard (t=%lld) of %lld of its %lld layers, micro-batch %lld x seq %lld, "
             "GEMMs in %s; median of %d repeats per GPU, mean of the GPUs",
             o->model->name, (long long)o->tp, (long long)L,
             (long long)o->model->num_hidden_layers, (long long)o->micro_batch,
             (long long)o->seq, o->dtype == OC_CUDA_BF16 ? "bf16" : "fp32", n);
    if (c->rank == 0 && o->log) {
        fprintf(o->log,
                "# Parts: %s, one TP shard (t=%lld) of %lld of %lld layers, micro-batch "
                "%lld x seq %lld, GEMMs in %s; median of %d repeats (%.3f ms each), "
                "mean over %d GPUs;\n"
                "# rate = the FLOPs the schedule gives the op / its time\n",
                o->model->name, (long long)o->tp, (long long)L,
                (long long)o->model->num_hidden_layers, (long long)o->micro_batch,
                (long long)o->seq, o->dtype == OC_CUDA_BF16 ? "bf16" : "fp32", n,
                total * 1e3, c->size);
        oc_calib_parts_table(o->log, L, params, call_s, lo, hi, flops, m);
    }
    return 0;
}
