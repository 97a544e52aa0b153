/* calibrate_cuda.c: `ocsim-exec --backend cuda --calibrate`: the GEMM rate,
 * HBM bandwidth, the cuda executor's parts, and NCCL point-to-point and
 * all-reduce measured on this node's GPUs, written as a topology file (see
 * calibrate_cuda.h; the file itself is calib_topology.c). The GPU twin of
 * exec/cpu/calibrate_cpu.c: the same shapes, the same parts in the same order, the
 * same rate definitions and the same tables.
 *
 * What it is not: a benchmark suite, nor nccl-tests. Each figure is what
 * the cost model needs (core/cost.h: calib_gemm_flops, calib_mem_Bps, the
 * rate of each part; the node fabric's bandwidth and latency), measured
 * the simple, standard way (CUDA events around back-to-back calls, a
 * device-to-device copy, a ping-pong, nccl-tests' busbw), all GPUs
 * running at once because that is how a training step shares the node.
 *
 * What this file is: the run on one rank (options, GPU, the measurements
 * in order, the topology file), this node's facts, the control plane's
 * one verdict and statistics over the ranks, and the HBM bandwidth. The
 * other measurements: calibrate_cuda_gemm.c (the GEMM rate),
 * calibrate_cuda_parts.c (the executor's parts), calibrate_cuda_nccl.c
 * (NCCL point-to-point and all-reduce); calibrate_cuda_priv.h is what they
 * share.
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
 * collective step, as cpu/calibrate_cpu.c does.
 */
#include "calibrate_cuda_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* ------------------------------------------------------------------ */
/* What every measurement uses                                          */

double oc_ccal_elapsed_s(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    cudaCheck(cudaEventElapsedTime(&ms, a, b));
    return 1e-3 * (double)ms;
}

/* cudaMalloc with a message instead of an exit: too little free GPU memory
 * is the user's situation, not a bug. */
int oc_ccal_dev_alloc(void **p, double bytes, const char *what, struct oc_status *st)
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

/* ------------------------------------------------------------------ */
/* The control plane: the same verdict, and statistics over the ranks  */

/* 0 when every rank's rc is 0; else -1 on every rank, with the message of
 * the lowest failing rank in st->msg (cpu/calibrate_cpu.c's agree). A control-
 * plane failure (a rank gone: timeout) is this rank's -1 with its message. */
int oc_ccal_together(struct cal *c, int rc, struct oc_status *st)
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
int oc_ccal_stats(struct cal *c, const double *v, int n, double *mean, double *lo,
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
    int rc = oc_ccal_dev_alloc(&src, bytes, "the memory bandwidth", &ls);
    if (rc == 0)
        rc = oc_ccal_dev_alloc(&dst, bytes, "the memory bandwidth", &ls);
    if (rc == 0) {
        cudaCheck(cudaMemsetAsync(src, 1, (size_t)bytes, c->stream));
        cudaCheck(cudaMemsetAsync(dst, 0, (size_t)bytes, c->stream));
        /* warm-up: the first copy also maps the pages */
        cudaCheck(cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDeviceToDevice,
                                  c->stream));
        cudaCheck(cudaStreamSynchronize(c->stream));
    }
    if (oc_ccal_together(c, rc, &ls) != 0) {
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
        const double dt = oc_ccal_elapsed_s(c->e0, c->e1);
        if (dt < best)
            best = dt;
    }
    cudaCheck(cudaFree(src)), cudaCheck(cudaFree(dst));
    if (rc != 0)
        return -1;
    /* A copy reads and writes each byte: 2x its bytes, as nvbandwidth's
     * device-local copy and STREAM's copy count it. */
    double Bps = 2.0 * bytes * HBM_COPIES / best, lo, hi;
    if (oc_ccal_stats(c, &Bps, 1, &m->mem_Bps, &lo, &hi, st) != 0)
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
    if (oc_ccal_measure_gemm(c, m, st) != 0)
        return -1;
    oc_ctl_set_what(c->ctl, "calibration: memory bandwidth");
    if (measure_hbm(c, m, st) != 0)
        return -1;
    oc_ctl_set_what(c->ctl, "calibration: parts");
    if (oc_ccal_measure_parts(c, m, st) != 0)
        return -1;
    if (c->size >= 2) {
        if (oc_ccal_measure_p2p(c, m, st) != 0 || oc_ccal_measure_allreduce(c, m, st) != 0)
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
        rc = oc_ccal_together(&c, rc, &ls);
    if (rc == 0) {
        rc = run(&c, &m, &ls);
        /* A control-plane timeout: the others are gone, nothing to agree. */
        if (!o->ctl->timed_out && !(c.nccl && c.nccl->aborted && rc != 0))
            rc = oc_ccal_together(&c, rc, &ls);
    }
    if (rc == 0) {
        int wrc = 0;
        if (c.rank == 0) {
            wrc = oc_calib_write_topology(o->out_path, o->base, &m, &ls);
            if (wrc == 0 && o->log)
                fprintf(o->log, "# wrote %s\n", o->out_path);
        }
        rc = oc_ccal_together(&c, wrc, &ls);
    }
    if (o->result)
        *o->result = m;
    cal_free(&c);
    if (rc != 0)
        return oc_fail(st, "%s", ls.msg);
    return 0;
}
