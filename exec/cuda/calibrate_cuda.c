/* calibrate_cuda.c: `ocsim-exec --backend cuda --calibrate`: the GEMM rate,
 * HBM bandwidth, the cuda executor's parts, and NCCL point-to-point and
 * all-reduce measured on this node's GPUs, written as a topology file (see
 * calibrate_cuda.h; the file itself is calib_topology.c). The GPU twin of
 * exec/calibrate.c: the same shapes, the same parts in the same order, the
 * same rate definitions and the same tables.
 *
 * What it is not: a benchmark suite, nor nccl-tests. Each figure is what
 * the cost model needs (core/cost.h: calib_gemm_flops, calib_mem_Bps, the
 * rate of each part; the node fabric's bandwidth and latency), measured
 * the simple, standard way (CUDA events around back-to-back calls, a
 * device-to-device copy, a ping-pong, nccl-tests' busbw), all GPUs
 * running at once because that is how a training step shares the node.
 *
 * Timing: a pair of CUDA events on the calibration's one stream around the
 * work; cudaEventSynchronize for local work (calibration is not a training
 * step, nothing else runs), oc_nccl_wait_event (with its deadline, which
 * aborts the communicators) for NCCL work. Short calls (a small GEMM) are
 * timed as a batch of back-to-back calls, so that the host's launch gap
 * before the first one does not count as GPU time.
 *
 * Errors: CUDA and cuBLAS failures inside the kernels' launchers exit
 * (kernels/check.h, cudaCheck); the failures a user can meet (no GPU,
 * too little GPU memory, an NCCL error or timeout, a control-plane
 * timeout) come back as st->msg. A failure on some ranks only is agreed
 * on (the lowest failing rank's message on every rank) before the next
 * collective step, as calibrate.c does.
 */
#define _GNU_SOURCE /* gethostname, gmtime_r, sysconf(_SC_PHYS_PAGES) */
#include "calibrate_cuda.h"

#include "wait_clock.h"

#include "calib_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "data.h"
#include "gpt.h"
#include "ops_cuda.h"
#include "params.h"

#define MIB (1024.0 * 1024.0)


/* Iterations for a message of `bytes`: calib_plan.h's rule, and at least
 * `repeats`. */
static int iters_for(int64_t bytes, int repeats)
{
    const int it = oc_calib_msg_iters(bytes);
    return it < repeats ? repeats : it;
}

/* One calibration run on one rank. */
struct cal {
    const struct oc_cuda_calib_opts *o;
    struct oc_ctl *ctl;
    struct oc_nccl *nccl; /* NULL or unused with one rank */
    int rank, size;
    int device;
    struct cudaDeviceProp prop;
    cudaStream_t stream;
    struct oc_cuda_blas blas;
    cudaEvent_t e0, e1;
};

static double elapsed_s(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    cudaCheck(cudaEventElapsedTime(&ms, a, b));
    return 1e-3 * (double)ms;
}

/* cudaMalloc with a message instead of an exit: too little free GPU memory
 * is the user's situation, not a bug. */
static int dev_alloc(void **p, double bytes, const char *what, struct oc_status *st)
{
    *p = NULL;
    cudaError_t e = cudaMalloc(p, (size_t)bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* an allocation error is not sticky: clear it */
        *p = NULL;
        return oc_fail(st, "calibrate: cannot allocate %.1f MiB of GPU memory for %s: %s",
                       bytes / MIB, what, cudaGetErrorString(e));
    }
    return 0;
}

/* dev (n floats) = calibrate.c's values 0.001 * (i % 13 + 1): small and
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

/* ------------------------------------------------------------------ */
/* The control plane: the same verdict, and statistics over the ranks  */

/* 0 when every rank's rc is 0; else -1 on every rank, with the message of
 * the lowest failing rank in st->msg (calibrate.c's agree). A control-
 * plane failure (a rank gone: timeout) is this rank's -1 with its message. */
static int together(struct cal *c, int rc, struct oc_status *st)
{
    struct oc_status cs = {{0}};
    int mine = rc != 0 ? c->rank : c->size, first = c->size;
    int *all = c->rank == 0 ? oc_xcalloc((size_t)c->size, sizeof *all) : NULL;
    if (oc_ctl_gather(c->ctl, &mine, all, sizeof mine, 0, &cs) != 0) {
        free(all);
        return oc_fail(st, "%s", cs.msg);
    }
    if (c->rank == 0)
        for (int r = 0; r < c->size; r++)
            if (all[r] < first)
                first = all[r];
    free(all);
    if (oc_ctl_bcast(c->ctl, &first, sizeof first, 0, &cs) != 0)
        return oc_fail(st, "%s", cs.msg);
    if (first == c->size)
        return 0;
    if (oc_ctl_bcast(c->ctl, st->msg, OC_MSG_MAX, first, &cs) != 0)
        return oc_fail(st, "%s", cs.msg);
    st->msg[OC_MSG_MAX - 1] = '\0';
    return -1;
}

/* The mean, minimum and maximum over the ranks of each of v[0..n), on
 * every rank (any of the three may be NULL). */
static int stats(struct cal *c, const double *v, int n, double *mean, double *lo,
                 double *hi, struct oc_status *st)
{
    double *all = c->rank == 0 ? oc_xcalloc((size_t)c->size * (size_t)n, sizeof *all) : NULL;
    double *out = oc_xcalloc(3 * (size_t)n, sizeof *out); /* mean, lo, hi */
    int rc = oc_ctl_gather(c->ctl, v, all, (int64_t)n * (int64_t)sizeof *v, 0, st);
    if (rc == 0 && c->rank == 0)
        for (int k = 0; k < n; k++) {
            double s = 0, a = INFINITY, b = -INFINITY;
            for (int r = 0; r < c->size; r++) {
                const double x = all[(size_t)r * (size_t)n + (size_t)k];
                s += x;
                a = x < a ? x : a;
                b = x > b ? x : b;
            }
            out[k] = s / c->size, out[n + k] = a, out[2 * n + k] = b;
        }
    if (rc == 0)
        rc = oc_ctl_bcast(c->ctl, out, 3 * (int64_t)n * (int64_t)sizeof *out, 0, st);
    for (int k = 0; rc == 0 && k < n; k++) {
        if (mean)
            mean[k] = out[k];
        if (lo)
            lo[k] = out[n + k];
        if (hi)
            hi[k] = out[2 * n + k];
    }
    free(all);
    free(out);
    return rc;
}

/* ------------------------------------------------------------------ */
/* This node                                                            */

static void machine_info(struct cal *c, struct oc_calib_measured *m)
{
    m->ranks = c->size;
    m->backend = OC_CALIB_CUDA;
    m->keep_peak = 1; /* the datasheet's peak stays (calib_topology.h) */
    oc_calib_host_date(m);
    snprintf(m->cpu_name, sizeof m->cpu_name, "%.63s", c->prop.name);
    m->cores_per_rank = c->prop.multiProcessorCount;
    m->memory_bytes = (double)c->prop.totalGlobalMem;
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
    return elapsed_s(c->e0, c->e1) / iters;
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

static int measure_gemm(struct cal *c, struct oc_calib_measured *m, struct oc_status *st)
{
    const struct oc_cuda_calib_opts *o = c->o;
    const struct oc_model *md = o->model;
    const int64_t t = o->tp, T = o->micro_batch * o->seq;
    /* One TP shard (calib_plan.h, calibrate.c's list). */
    struct oc_calib_lin lins[OC_CALIB_NLINS];
    oc_calib_gemm_shapes(md, t, T, lins);
    const int nl = OC_CALIB_NLINS;
    int64_t max_in, max_w, max_out;
    oc_calib_gemm_max(lins, nl, &max_in, &max_w, &max_out);
    const double es = o->dtype == OC_CUDA_BF16 ? 2.0 : 4.0;
    struct gbufs b;
    memset(&b, 0, sizeof b);
    struct oc_status ls = {{0}};
    int rc = dev_alloc((void **)&b.out, 4.0 * (double)max_out, "the GEMMs", &ls);
    if (rc == 0) rc = dev_alloc((void **)&b.dinp, 4.0 * (double)max_in, "the GEMMs", &ls);
    if (rc == 0) rc = dev_alloc((void **)&b.dw, 4.0 * (double)max_w, "the GEMMs", &ls);
    if (rc == 0) rc = dev_alloc(&b.a, es * (double)max_in, "the GEMMs", &ls);
    if (rc == 0) rc = dev_alloc(&b.w, es * (double)max_w, "the GEMMs", &ls);
    if (rc == 0) rc = dev_alloc(&b.dout, es * (double)max_out, "the GEMMs", &ls);
    if (rc == 0) {
        /* The operands: the pattern, cast to bf16 through the fp32 result
         * buffers of the same sizes (kernels.h's cast, round to nearest). */
        if (o->dtype == OC_CUDA_BF16) {
            fill_pattern(b.dinp, max_in), fill_pattern(b.dw, max_w), fill_pattern(b.out, max_out);
            oc_cuda_f32_to_bf16(b.a, b.dinp, max_in, c->stream);
            oc_cuda_f32_to_bf16(b.w, b.dw, max_w, c->stream);
            oc_cuda_f32_to_bf16(b.dout, b.out, max_out, c->stream);
        } else {
            fill_pattern(b.a, max_in), fill_pattern(b.w, max_w), fill_pattern(b.dout, max_out);
        }
        cudaCheck(cudaMemsetAsync(b.dw, 0, (size_t)max_w * sizeof(float), c->stream));
        cudaCheck(cudaStreamSynchronize(c->stream));
    }
    if (together(c, rc, &ls) != 0) {
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
    if (stats(c, &rate, 1, &m->gemm_flops, &lo, &hi, st) != 0)
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
    if (stats(c, per, nl * ng, per_mean, NULL, NULL, st) != 0)
        return -1;
    if (c->rank == 0 && o->log) {
        fprintf(o->log,
                "# GEMM: cuBLAS, %s, one TP shard of %s (t=%lld, T=%lld rows), best of "
                "%d batches of back-to-back calls, GFLOP/s as the mean over %d GPUs\n"
                "#%9s %6s %8s %8s %8s %6s %10s %10s\n",
                dtype_words(o->dtype), md->name, (long long)t, (long long)T, o->repeats,
                c->size, "gemm", "call", "M", "N", "K", "calls", "time_us", "GFLOP/s");
        for (int i = 0; i < nl; i++)
            for (int cl = 0; cl < ng; cl++) {
                /* (M, N, K) of the call as cblas would see it (calibrate.c). */
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
    return 0;
}

/* ------------------------------------------------------------------ */
/* HBM bandwidth                                                        */

/* Copies per timed batch: a 256 MiB copy takes ~0.1 ms on an H200, so a
 * batch of 8 makes the host's launch gap before the first about 1%. */
#define HBM_COPIES 8

static int measure_hbm(struct cal *c, struct oc_calib_measured *m, struct oc_status *st)
{
    const struct oc_cuda_calib_opts *o = c->o;
    /* STREAM's rule, the buffer at least 4x the caches (the L2 here), and
     * 256 MiB at least (calibrate_cuda.h); whole MiB. */
    double bytes = 256.0 * MIB;
    if (4.0 * (double)c->prop.l2CacheSize > bytes)
        bytes = ceil(4.0 * (double)c->prop.l2CacheSize / MIB) * MIB;
    void *src = NULL, *dst = NULL;
    struct oc_status ls = {{0}};
    int rc = dev_alloc(&src, bytes, "the memory bandwidth", &ls);
    if (rc == 0)
        rc = dev_alloc(&dst, bytes, "the memory bandwidth", &ls);
    if (rc == 0) {
        cudaCheck(cudaMemsetAsync(src, 1, (size_t)bytes, c->stream));
        cudaCheck(cudaMemsetAsync(dst, 0, (size_t)bytes, c->stream));
        /* warm-up: the first copy also maps the pages */
        cudaCheck(cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDeviceToDevice,
                                  c->stream));
        cudaCheck(cudaStreamSynchronize(c->stream));
    }
    if (together(c, rc, &ls) != 0) {
        cudaCheck(cudaFree(src)), cudaCheck(cudaFree(dst));
        return oc_fail(st, "%s", ls.msg);
    }
    double best = INFINITY;
    for (int r = 0; r < o->repeats && rc == 0; r++) {
        rc = oc_ctl_barrier(c->ctl, st);
        if (rc != 0)
            break;
        cudaCheck(cudaEventRecord(c->e0, c->stream));
        for (int i = 0; i < HBM_COPIES; i++)
            cudaCheck(cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDeviceToDevice,
                                      c->stream));
        cudaCheck(cudaEventRecord(c->e1, c->stream));
        cudaCheck(cudaEventSynchronize(c->e1));
        const double dt = elapsed_s(c->e0, c->e1);
        if (dt < best)
            best = dt;
    }
    cudaCheck(cudaFree(src)), cudaCheck(cudaFree(dst));
    if (rc != 0)
        return -1;
    /* A copy reads and writes each byte: 2x its bytes, as nvbandwidth's
     * device-local copy and STREAM's copy count it. */
    double Bps = 2.0 * bytes * HBM_COPIES / best, lo, hi;
    if (stats(c, &Bps, 1, &m->mem_Bps, &lo, &hi, st) != 0)
        return -1;
    if (c->rank == 0 && o->log)
        fprintf(o->log,
                "# Memory: device-to-device cudaMemcpyAsync of %.0f MiB (L2 %.0f MiB), "
                "%d per batch, 2x bytes counted, best of %d: %.3f GB/s per GPU (GPUs "
                "%.3f .. %.3f); topology %s says %.4g B/s\n#\n",
                bytes / MIB, (double)c->prop.l2CacheSize / MIB, HBM_COPIES, o->repeats,
                m->mem_Bps / 1e9, lo / 1e9, hi / 1e9, o->base->name,
                o->base->device.hbm_bandwidth_Bps);
    return 0;
}

/* ------------------------------------------------------------------ */
/* The cuda executor's parts at the model's shapes                      */

/* One shard's parameters and every layer's activations on the GPU, run on
 * the cuda kernels by calib_plan.h's oc_calib_parts_run (calibrate.c's
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
 * more than a quarter of this rank's share of RAM (calibrate.c's budget).
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
    if (dev_alloc((void **)&b->arena, 16.0 * (double)n, "the parameters", st) != 0)
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

    if (dev_alloc((void **)&t->x, 4.0 * (double)((2 * L + 1) * N * C), "activations", st) ||
        dev_alloc((void **)&t->acts, 4.0 * (double)(L * (A + M)), "activations", st) ||
        dev_alloc((void **)&t->head, 4.0 * (double)oc_gpt_head_act_floats(d), "activations", st) ||
        dev_alloc((void **)&t->gs, 4.0 * (double)(N * C), "activations", st) ||
        dev_alloc((void **)&t->work, 4.0 * (double)oc_gpt_work_floats(&b->k, d), "activations",
                  st) ||
        dev_alloc((void **)&t->losses, 4.0 * (double)N, "activations", st) ||
        dev_alloc((void **)&t->tok, 4.0 * (double)N, "tokens", st) ||
        dev_alloc((void **)&t->tgt, 4.0 * (double)N, "tokens", st))
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
    RUN_PART(oc_gpt_embed_fwd(&b->k, &call, &t->d, &b->p, t->tok, t->x));
    RUN_PART(oc_gpt_attn_fwd(&b->k, &call, &t->d, &b->p, 0, &t->aa[0], t->x + N * C));
    struct pt_events m = {b, c->stream, 0};
    oc_calib_parts_run(t, step, pt_mark, &m);
    OC_ASSERT(m.e == b->nev);
    cudaCheck(cudaEventSynchronize(b->ev[m.e - 1]));
    for (int i = 0; i + 1 < m.e; i++)
        sec[b->ev_part[i]] += elapsed_s(b->ev[i], b->ev[i + 1]);
}

static int measure_parts(struct cal *c, struct oc_calib_measured *m, struct oc_status *st)
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
    if (stats(c, &L_here, 1, NULL, &L_min, NULL, st) != 0)
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
    if (together(c, rc, &ls) != 0) {
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
    if (stats(c, med, OC_PT_COUNT, mean, lo, hi, st) != 0)
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

/* ------------------------------------------------------------------ */
/* NCCL                                                                 */

#define NCCL_CHECK(call, what)                                                 \
    do {                                                                       \
        if (oc_nccl_check(c->nccl, (call), (what), st) != 0)                   \
            return -1;                                                         \
    } while (0)

/* One-way time of an NCCL ping-pong of `bytes` between ranks 0 and 1 (the
 * others wait), half the mean round trip, on every rank (rank 0's). */
static int pingpong(struct cal *c, char *buf, int64_t bytes, double *t, struct oc_status *st)
{
    const int iters = iters_for(bytes, c->o->repeats), warm = 2;
    ncclComm_t w = c->nccl->world;
    *t = 0;
    oc_ctl_set_what(c->ctl, "calibration: NCCL ping-pong of %lld bytes", (long long)bytes);
    if (oc_ctl_barrier(c->ctl, st) != 0)
        return -1;
    if (c->rank <= 1) {
        const int peer = 1 - c->rank;
        for (int it = 0; it < warm + iters; it++) {
            if (it == warm)
                cudaCheck(cudaEventRecord(c->e0, c->stream));
            if (c->rank == 0) {
                NCCL_CHECK(ncclSend(buf, (size_t)bytes, ncclInt8, peer, w, c->stream), "ncclSend");
                NCCL_CHECK(ncclRecv(buf, (size_t)bytes, ncclInt8, peer, w, c->stream), "ncclRecv");
            } else {
                NCCL_CHECK(ncclRecv(buf, (size_t)bytes, ncclInt8, peer, w, c->stream), "ncclRecv");
                NCCL_CHECK(ncclSend(buf, (size_t)bytes, ncclInt8, peer, w, c->stream), "ncclSend");
            }
        }
        cudaCheck(cudaEventRecord(c->e1, c->stream));
        if (oc_nccl_wait_event(c->nccl, c->e1, st) != 0)
            return -1;
        *t = elapsed_s(c->e0, c->e1) / (2.0 * iters);
    }
    return oc_ctl_bcast(c->ctl, t, sizeof *t, 0, st); /* rank 0's clock counts */
}

static int measure_p2p(struct cal *c, struct oc_calib_measured *m, struct oc_status *st)
{
    const struct oc_cuda_calib_opts *o = c->o;
    /* The message a pipeline stage sends: one micro-batch's activation,
     * T x h fp32 values (the cuda executor's too; no sequence parallelism). */
    const int64_t act = 4 * o->micro_batch * o->seq * o->model->hidden_size;
    const int64_t most = act > o->max_msg_bytes ? act : o->max_msg_bytes;
    const int nsizes = oc_calib_msg_sizes(o->max_msg_bytes);
    char *buf = NULL;
    struct oc_status ls = {{0}};
    int rc = c->rank <= 1 ? dev_alloc((void **)&buf, (double)most, "the ping-pong", &ls) : 0;
    if (rc == 0 && buf)
        cudaCheck(cudaMemset(buf, 0, (size_t)most));
    if (together(c, rc, &ls) != 0) {
        cudaCheck(cudaFree(buf));
        return oc_fail(st, "%s", ls.msg);
    }
    double *t = oc_xcalloc((size_t)nsizes, sizeof *t);
    double t_act = 0;
    int i = 0;
    /* The activation first: a ping-pong of that size runs slower after the
     * largest ones (calibrate.c). */
    rc = pingpong(c, buf, act, &t_act, st);
    for (int64_t s = 8; s <= o->max_msg_bytes && rc == 0; s *= 2, i++)
        rc = pingpong(c, buf, s, &t[i], st);
    cudaCheck(cudaFree(buf));
    if (rc != 0) {
        free(t);
        return -1;
    }
    /* The model t(S) = latency + S / B (core/closed_form.h's per-message
     * cost), fitted as calibrate.c does (calib_plan.h). */
    const double smax = oc_calib_msg_largest(nsizes);
    oc_calib_p2p_fit(t, nsizes, act, t_act, m);
    if (c->rank == 0 && o->log) {
        oc_calib_net_table_head(o->log, "NCCL point-to-point: ncclSend / ncclRecv "
                                        "ping-pong between GPUs 0 and 1, one-way time; "
                                        "busbw = algbw (nccl-tests, sendrecv)");
        oc_calib_p2p_rows(o->log, o->max_msg_bytes, t, act, t_act);
        fprintf(o->log, "# p2p latency %.2f us, bandwidth %.3f GB/s at the activation "
                        "(%lld B), %.3f GB/s at %.0f B\n#\n",
                m->p2p_latency_s * 1e6, m->p2p_Bps / 1e9, (long long)act,
                m->p2p_large_Bps / 1e9, smax);
    }
    free(t);
    return 0;
}

static int allreduce_sizes(struct cal *c, float *buf, double *t, struct oc_status *st)
{
    const struct oc_cuda_calib_opts *o = c->o;
    int i = 0;
    for (int64_t s = 8; s <= o->max_msg_bytes; s *= 2, i++) {
        const int iters = iters_for(s, o->repeats), warm = 2;
        const size_t count = (size_t)(s / 4);
        oc_ctl_set_what(c->ctl, "calibration: ncclAllReduce of %lld bytes", (long long)s);
        if (oc_ctl_barrier(c->ctl, st) != 0)
            return -1;
        for (int it = 0; it < warm + iters; it++) {
            if (it == warm)
                cudaCheck(cudaEventRecord(c->e0, c->stream));
            NCCL_CHECK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, c->nccl->world,
                                     c->stream),
                       "ncclAllReduce");
        }
        cudaCheck(cudaEventRecord(c->e1, c->stream));
        if (oc_nccl_wait_event(c->nccl, c->e1, st) != 0)
            return -1;
        t[i] = elapsed_s(c->e0, c->e1) / iters;
    }
    return 0;
}

static int measure_allreduce(struct cal *c, struct oc_calib_measured *m, struct oc_status *st)
{
    const struct oc_cuda_calib_opts *o = c->o;
    const int nsizes = oc_calib_msg_sizes(o->max_msg_bytes);
    float *buf = NULL;
    struct oc_status ls = {{0}};
    int rc = dev_alloc((void **)&buf, (double)o->max_msg_bytes, "the all-reduce", &ls);
    if (rc == 0) /* zeros: sums stay zero, no overflow over a thousand calls */
        cudaCheck(cudaMemset(buf, 0, (size_t)o->max_msg_bytes));
    if (together(c, rc, &ls) != 0) {
        cudaCheck(cudaFree(buf));
        return oc_fail(st, "%s", ls.msg);
    }
    double *t = oc_xcalloc((size_t)nsizes, sizeof *t);
    double *t_max = oc_xcalloc((size_t)nsizes, sizeof *t_max);
    rc = allreduce_sizes(c, buf, t, st);
    cudaCheck(cudaFree(buf));
    /* The slowest rank's time is the collective's. */
    if (rc == 0)
        rc = stats(c, t, nsizes, NULL, NULL, t_max, st);
    free(t);
    if (rc != 0) {
        free(t_max);
        return -1;
    }
    const double smax = oc_calib_msg_largest(nsizes);
    oc_calib_allreduce_fit(t_max, nsizes, c->size, m);
    if (c->rank == 0 && o->log) {
        char what[160];
        snprintf(what, sizeof what,
                 "ncclAllReduce, float sum, %d GPUs; busbw = algbw * 2(n-1)/n (nccl-tests)",
                 c->size);
        oc_calib_net_table_head(o->log, what);
        oc_calib_allreduce_rows(o->log, o->max_msg_bytes, t_max, c->size);
        fprintf(o->log, "# all-reduce latency %.2f us (8 B), busbw %.3f GB/s (%.0f B)\n#\n",
                m->allreduce_latency_s * 1e6, m->allreduce_busbw_Bps / 1e9, smax);
    }
    free(t_max);
    return 0;
}

/* ------------------------------------------------------------------ */

static int check_opts(const struct oc_cuda_calib_opts *o, struct oc_status *st)
{
    if (!o->model || !o->base || !o->out_path || !o->ctl)
        return oc_fail(st, "calibrate: model, base topology, output path and control "
                           "plane are needed");
    if (o->ctl->size >= 2 && !o->nccl)
        return oc_fail(st, "calibrate: %d ranks need an NCCL communicator", o->ctl->size);
    if (oc_calib_check_shapes(o->seq, o->micro_batch, o->tp, st) != 0)
        return -1;
    if (o->dtype != OC_CUDA_F32 && o->dtype != OC_CUDA_BF16)
        return oc_fail(st, "calibrate: unknown GEMM dtype %d", (int)o->dtype);
    if (oc_calib_check_counts(o->repeats, o->max_msg_bytes, st) != 0)
        return -1;
    /* cuBLAS takes int dimensions. */
    const int64_t T = o->micro_batch * o->seq;
    const int64_t wide = o->model->intermediate_size * 2 + o->model->hidden_size * 3;
    if (T > INT32_MAX / 4 || wide > INT32_MAX / 4)
        return oc_fail(st, "calibrate: the GEMMs of %s with %lld rows are too large for "
                           "cuBLAS's int dimensions",
                       o->model->name, (long long)T);
    /* The file describes one node: gpus_per_node becomes the rank count. */
    if (o->ctl->local_ranks != o->ctl->size)
        return oc_fail(st, "calibrate: %d of the %d ranks run on this node: run every "
                           "rank on one machine (the file describes one node)",
                       o->ctl->local_ranks, o->ctl->size);
    return 0;
}

/* This rank's GPU, stream, cuBLAS and events; 0 or -1 (no usable GPU). */
static int cal_init(struct cal *c, const struct oc_cuda_calib_opts *o, struct oc_status *st)
{
    memset(c, 0, sizeof *c);
    c->o = o;
    c->ctl = o->ctl;
    c->nccl = o->ctl->size >= 2 ? o->nccl : NULL;
    c->rank = o->ctl->rank;
    c->size = o->ctl->size;
    c->device = o->nccl ? o->nccl->device : o->ctl->local_rank;
    cudaError_t e = cudaSetDevice(c->device);
    if (e == cudaSuccess)
        e = cudaGetDeviceProperties(&c->prop, c->device);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return oc_fail(st, "calibrate: rank %d cannot use GPU %d: %s", c->rank, c->device,
                       cudaGetErrorString(e));
    }
    c->prop.name[sizeof c->prop.name - 1] = '\0';
    cudaCheck(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    cudaCheck(cudaEventCreate(&c->e0));
    cudaCheck(cudaEventCreate(&c->e1));
    oc_cuda_blas_init(&c->blas);
    return 0;
}

static void cal_free(struct cal *c)
{
    if (!c->stream)
        return;
    /* Nothing may still run on the stream (an NCCL abort ends its kernels). */
    cudaCheck(cudaStreamSynchronize(c->stream));
    oc_cuda_blas_free(&c->blas);
    cudaCheck(cudaEventDestroy(c->e1));
    cudaCheck(cudaEventDestroy(c->e0));
    cudaCheck(cudaStreamDestroy(c->stream));
    c->stream = NULL;
}

static int run(struct cal *c, struct oc_calib_measured *m, struct oc_status *st)
{
    const struct oc_cuda_calib_opts *o = c->o;
    machine_info(c, m);
    if (c->rank == 0 && o->log) {
        int rt = 0, nv = 0;
        cudaCheck(cudaRuntimeGetVersion(&rt));
        if (ncclGetVersion(&nv) != ncclSuccess)
            nv = 0;
        fprintf(o->log,
                "# ocsim-exec --backend cuda --calibrate on %s (%s: %d SMs, %.1f GiB, L2 "
                "%.0f MiB), %s: %d GPU%s, one rank each; CUDA runtime %d.%d, NCCL "
                "%d.%d.%d\n#\n",
                m->host, c->prop.name, c->prop.multiProcessorCount,
                (double)c->prop.totalGlobalMem / (MIB * 1024.0),
                (double)c->prop.l2CacheSize / MIB, m->date, c->size,
                c->size == 1 ? "" : "s", rt / 1000, rt % 1000 / 10, nv / 10000,
                nv / 100 % 100, nv % 100);
        fflush(o->log);
    }
    oc_ctl_set_what(c->ctl, "calibration: GEMMs");
    if (measure_gemm(c, m, st) != 0)
        return -1;
    oc_ctl_set_what(c->ctl, "calibration: memory bandwidth");
    if (measure_hbm(c, m, st) != 0)
        return -1;
    oc_ctl_set_what(c->ctl, "calibration: parts");
    if (measure_parts(c, m, st) != 0)
        return -1;
    if (c->size >= 2) {
        if (measure_p2p(c, m, st) != 0 || measure_allreduce(c, m, st) != 0)
            return -1;
    } else if (c->rank == 0 && o->log) {
        fprintf(o->log, "# one GPU: no point-to-point or all-reduce to measure; the node "
                        "fabric stays topology %s's\n#\n",
                o->base->name);
    }
    return 0;
}

int oc_cuda_calibrate(const struct oc_cuda_calib_opts *o, struct oc_status *st)
{
    if (check_opts(o, st) != 0)
        return -1;
    struct cal c;
    struct oc_status ls = {{0}};
    struct oc_calib_measured m;
    memset(&m, 0, sizeof m);
    int rc = cal_init(&c, o, &ls);
    /* The GPU is usable on every rank, or no rank measures. */
    if (!o->ctl->timed_out)
        rc = together(&c, rc, &ls);
    if (rc == 0) {
        rc = run(&c, &m, &ls);
        /* A control-plane timeout: the others are gone, nothing to agree. */
        if (!o->ctl->timed_out && !(c.nccl && c.nccl->aborted && rc != 0))
            rc = together(&c, rc, &ls);
    }
    if (rc == 0) {
        int wrc = 0;
        if (c.rank == 0) {
            wrc = oc_calib_write_topology(o->out_path, o->base, &m, &ls);
            if (wrc == 0 && o->log)
                fprintf(o->log, "# wrote %s\n", o->out_path);
        }
        rc = together(&c, wrc, &ls);
    }
    if (o->result)
        *o->result = m;
    cal_free(&c);
    if (rc != 0)
        return oc_fail(st, "%s", ls.msg);
    return 0;
}
