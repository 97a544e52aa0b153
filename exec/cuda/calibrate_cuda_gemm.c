/* calibrate_cuda_gemm.c: the GEMM rate of the cuda calibration
 * (calibrate_cuda.c runs it; calibrate_cuda_priv.h lists the files): the
 * three products of each linear layer of one TP shard of the model
 * (calib_plan.h's shapes, cpu/calibrate_cpu.c's list) on cuBLAS in the GEMM dtype,
 * timed as batches of back-to-back calls, best of the repeats; the rate
 * over all calls, the mean over the GPUs, and the per-call table.
 *
 * What it is not: the GEMM itself (kernels/cuda/gemm.c), the shapes and
 * the FLOP counts (calib_plan.h), or the rate's use (core/cost.h).
 */
#include "calibrate_cuda_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "wait_clock.h"

/* dev (n floats) = cpu/calibrate_cpu.c's values 0.001 * (i % 13 + 1): small and
 * not denormal, so that the rates do not depend on the data. Copied in
 * chunks of a multiple of 13 floats, so the pattern runs on. */
static void fill_pattern(float *dev, int64_t n)
{
    const int64_t chunk = 13 * 16384;
    float *h = oc_xmalloc((size_t)chunk * sizeof *h);
    for (int64_t i = 0; i < chunk; i++)
        h[i] = 0.001f * (float)(i % 13 + 1);
    for (int64_t i = 0; i < n; i += chunk) {
        const int64_t k = n - i < chunk ? n - i : chunk;
        cudaCheck(cudaMemcpy(dev + i, h, (size_t)k * sizeof *h, cudaMemcpyHostToDevice));
    }
    free(h);
}

static const char *dtype_words(enum oc_cuda_dtype t)
{
    return t == OC_CUDA_BF16 ? "bf16 operands, fp32 accumulation"
                             : "fp32 (CUBLAS_COMPUTE_32F, no TF32)";
}

/* ------------------------------------------------------------------ */
/* GEMM                                                                 */

/* The three products of a linear layer (calib_plan.h, OC_CALIB_G_*), as
 * kernels.h's matmul_fwd and matmul_bwd make them (the cpu kernels' cblas_sgemm
 * calls): forward, dinp = dout w, dw += dout^T inp. */

/* Operands in the GEMM dtype, results fp32 (ops_cuda.h, "Precision"). */
struct gbufs {
    void *a, *w, *dout;      /* (max_in), (max_w), (max_out) operands */
    float *out, *dinp, *dw;  /* (max_out), (max_in), (max_w) results */
};

static void gemm_call(struct cal *c, int call, const struct oc_calib_lin *l,
                      const struct gbufs *b)
{
    const enum oc_cuda_dtype t = c->o->dtype;
    switch (call) {
    case OC_CALIB_G_FWD: /* the bias-free product: the rate of the GEMM itself */
        oc_cuda_matmul_fwd(&c->blas, b->out, b->a, b->w, NULL, l->N, l->IC, l->OC, t,
                           c->stream);
        break;
    case OC_CALIB_G_DINP:
        oc_cuda_gemm(&c->blas, 0, 0, l->N, l->IC, l->OC, 1.0f, b->dout, l->OC, b->w,
                     l->IC, 0.0f, b->dinp, l->IC, t, OC_CUDA_F32, c->stream);
        break;
    default:
        oc_cuda_gemm(&c->blas, 1, 0, l->OC, l->IC, l->N, 1.0f, b->dout, l->OC, b->a,
                     l->IC, 1.0f, b->dw, l->IC, t, OC_CUDA_F32, c->stream);
        break;
    }
}

/* Seconds per call of `iters` back-to-back calls. */
static double gemm_time(struct cal *c, int call, const struct oc_calib_lin *l,
                        const struct gbufs *b, int iters)
{
    cudaCheck(cudaEventRecord(c->e0, c->stream));
    for (int i = 0; i < iters; i++)
        gemm_call(c, call, l, b);
    cudaCheck(cudaEventRecord(c->e1, c->stream));
    cudaCheck(cudaEventSynchronize(c->e1));
    return oc_ccal_elapsed_s(c->e0, c->e1) / iters;
}

/* A timed batch lasts about this long (a small GEMM takes microseconds, as
 * long as the host's gap before it), with at most this many calls. */
#define GEMM_BATCH_S 2e-3
#define GEMM_MAX_ITERS 1000
/* All shapes run for about this long before the first measurement, so the
 * GPU's clocks have left idle. */
#define GEMM_WARM_S 0.2

static void gemm_free(struct gbufs *b)
{
    cudaCheck(cudaFree(b->a)), cudaCheck(cudaFree(b->w)), cudaCheck(cudaFree(b->dout));
    cudaCheck(cudaFree(b->out)), cudaCheck(cudaFree(b->dinp)), cudaCheck(cudaFree(b->dw));
    memset(b, 0, sizeof *b);
}

/* The GEMMs' buffers at the largest shapes, filled: the operands in the
 * GEMM dtype with the pattern, dw zero. 0, or -1 with ls->msg (this rank
 * only: the caller agrees on it). */
static int gemm_alloc(struct cal *c, struct gbufs *b, int64_t max_in, int64_t max_w,
                      int64_t max_out, struct oc_status *ls)
{
    const struct oc_cuda_calib_opts *o = c->o;
    const double es = o->dtype == OC_CUDA_BF16 ? 2.0 : 4.0;
    const char *what = "the GEMMs";
    int rc = oc_ccal_dev_alloc((void **)&b->out, 4.0 * (double)max_out, what, ls);
    if (rc == 0) rc = oc_ccal_dev_alloc((void **)&b->dinp, 4.0 * (double)max_in, what, ls);
    if (rc == 0) rc = oc_ccal_dev_alloc((void **)&b->dw, 4.0 * (double)max_w, what, ls);
    if (rc == 0) rc = oc_ccal_dev_alloc(&b->a, es * (double)max_in, what, ls);
    if (rc == 0) rc = oc_ccal_dev_alloc(&b->w, es * (double)max_w, what, ls);
    if (rc == 0) rc = oc_ccal_dev_alloc(&b->dout, es * (double)max_out, what, ls);
    if (rc == 0) {
        /* The operands: the pattern, cast to bf16 through the fp32 result
         * buffers of the same sizes (kernels.h's cast, round to nearest). */
        if (o->dtype == OC_CUDA_BF16) {
            fill_pattern(b->dinp, max_in), fill_pattern(b->dw, max_w);
            fill_pattern(b->out, max_out);
            oc_cuda_f32_to_bf16(b->a, b->dinp, max_in, c->stream);
            oc_cuda_f32_to_bf16(b->w, b->dw, max_w, c->stream);
            oc_cuda_f32_to_bf16(b->dout, b->out, max_out, c->stream);
        } else {
            fill_pattern(b->a, max_in), fill_pattern(b->w, max_w);
            fill_pattern(b->dout, max_out);
        }
        cudaCheck(cudaMemsetAsync(b->dw, 0, (size_t)max_w * sizeof(float), c->stream));
        cudaCheck(cudaStreamSynchronize(c->stream));
    }
    return rc;
}

/* The table of the GEMM calls (rank 0's log): shape, calls per batch,
 * best time, the mean rate over the GPUs; then the rate against the
 * topology's peak. */
static void gemm_table(struct cal *c, const struct oc_calib_lin *lins, int nl,
                       int iters[][OC_CALIB_G_NCALLS], double best[][OC_CALIB_G_NCALLS],
                       const double *per_mean, double lo, double hi,
                       const struct oc_calib_measured *m)
{
    const struct oc_cuda_calib_opts *o = c->o;
    const struct oc_model *md = o->model;
    const int64_t t = o->tp, T = o->micro_batch * o->seq;
    const int ng = OC_CALIB_G_NCALLS;
    fprintf(o->log,
            "# GEMM: cuBLAS, %s, one TP shard of %s (t=%lld, T=%lld rows), best of "
            "%d batches of back-to-back calls, GFLOP/s as the mean over %d GPUs\n"
            "#%9s %6s %8s %8s %8s %6s %10s %10s\n",
            dtype_words(o->dtype), md->name, (long long)t, (long long)T, o->repeats,
            c->size, "gemm", "call", "M", "N", "K", "calls", "time_us", "GFLOP/s");
    for (int i = 0; i < nl; i++)
        for (int cl = 0; cl < ng; cl++) {
            /* (M, N, K) of the call as cblas would see it (cpu/calibrate_cpu.c). */
            const struct oc_calib_lin *l = &lins[i];
            int64_t M, N, K;
            oc_calib_gemm_mnk(l, cl, &M, &N, &K);
            fprintf(o->log, " %9s %6s %8lld %8lld %8lld %6d %10.2f %10.2f\n", l->name,
                    oc_calib_call_names[cl], (long long)M, (long long)N, (long long)K,
                    iters[i][cl], best[i][cl] * 1e6, per_mean[i * ng + cl] / 1e9);
        }
    fprintf(o->log,
            "# GEMM rate: %.3f GFLOP/s per GPU (GPUs %.3f .. %.3f); %.1f%% of "
            "topology %s's peak %.4g FLOP/s\n#\n",
            m->gemm_flops / 1e9, lo / 1e9, hi / 1e9,
            100.0 * m->gemm_flops / o->base->device.peak_flops_16bit, o->base->name,
            o->base->device.peak_flops_16bit);
}

int oc_ccal_measure_gemm(struct cal *c, struct oc_calib_measured *m, struct oc_status *st)
{
    const struct oc_cuda_calib_opts *o = c->o;
    const struct oc_model *md = o->model;
    const int64_t t = o->tp, T = o->micro_batch * o->seq;
    /* One TP shard (calib_plan.h, cpu/calibrate_cpu.c's list). */
    struct oc_calib_lin lins[OC_CALIB_NLINS];
    oc_calib_gemm_shapes(md, t, T, lins);
    const int nl = OC_CALIB_NLINS;
    int64_t max_in, max_w, max_out;
    oc_calib_gemm_max(lins, nl, &max_in, &max_w, &max_out);
    struct gbufs b;
    memset(&b, 0, sizeof b);
    struct oc_status ls = {{0}};
    int rc = gemm_alloc(c, &b, max_in, max_w, max_out, &ls);
    if (oc_ccal_together(c, rc, &ls) != 0) {
        gemm_free(&b);
        return oc_fail(st, "%s", ls.msg);
    }

    /* Warm-up: every call once (cuBLAS's and Lt's first-call work), then
     * all of them until the clocks are up. */
    double t0 = oc_now_s();
    do {
        for (int i = 0; i < nl; i++)
            for (int cl = 0; cl < OC_CALIB_G_NCALLS; cl++)
                gemm_call(c, cl, &lins[i], &b);
        cudaCheck(cudaStreamSynchronize(c->stream));
    } while (oc_now_s() - t0 < GEMM_WARM_S);

    double best[OC_CALIB_NLINS][OC_CALIB_G_NCALLS], flops_all = 0, time_all = 0;
    int iters[OC_CALIB_NLINS][OC_CALIB_G_NCALLS];
    for (int i = 0; i < nl && rc == 0; i++) {
        const struct oc_calib_lin *l = &lins[i];
        const double flops = oc_calib_lin_flops(l);
        for (int cl = 0; cl < OC_CALIB_G_NCALLS && rc == 0; cl++) {
            /* Calls per timed batch: rank 0's, so that the ranks run
             * together. */
            const double one = gemm_time(c, cl, l, &b, 1);
            int n = one > 0 ? (int)ceil(GEMM_BATCH_S / one) : GEMM_MAX_ITERS;
            n = n < 1 ? 1 : n > GEMM_MAX_ITERS ? GEMM_MAX_ITERS : n;
            rc = oc_ctl_bcast(c->ctl, &n, sizeof n, 0, st);
            iters[i][cl] = n;
            best[i][cl] = INFINITY;
            for (int r = 0; r < o->repeats && rc == 0; r++) {
                rc = oc_ctl_barrier(c->ctl, st);
                const double dt = rc == 0 ? gemm_time(c, cl, l, &b, n) : INFINITY;
                if (dt < best[i][cl])
                    best[i][cl] = dt;
            }
            flops_all += flops;
            time_all += best[i][cl];
        }
    }
    gemm_free(&b);
    if (rc != 0)
        return -1;

    /* The rate of this rank over all calls, then the mean over ranks. */
    double rate = flops_all / time_all, lo, hi;
    if (oc_ccal_stats(c, &rate, 1, &m->gemm_flops, &lo, &hi, st) != 0)
        return -1;
    snprintf(m->gemm_what, sizeof m->gemm_what,
             "%s, %.48s with t=%lld, T=%lld rows: QKV, output projection, MLP up and "
             "down, forward + dgrad + wgrad, best of %d, mean of the GPUs' rates",
             dtype_words(o->dtype), md->name, (long long)t, (long long)T, o->repeats);

    /* Per-call rates, mean over ranks, for the table. */
    const int ng = OC_CALIB_G_NCALLS;
    double per[OC_CALIB_NLINS * OC_CALIB_G_NCALLS];
    double per_mean[OC_CALIB_NLINS * OC_CALIB_G_NCALLS];
    for (int i = 0; i < nl; i++)
        for (int cl = 0; cl < ng; cl++)
            per[i * ng + cl] = oc_calib_lin_flops(&lins[i]) / best[i][cl];
    if (oc_ccal_stats(c, per, nl * ng, per_mean, NULL, NULL, st) != 0)
        return -1;
    if (c->rank == 0 && o->log)
        gemm_table(c, lins, nl, iters, best, per_mean, lo, hi, m);
    return 0;
}
