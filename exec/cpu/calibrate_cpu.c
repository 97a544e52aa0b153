/* calibrate_cpu.c: `ocsim-exec --calibrate`: GEMM rate, memory bandwidth, MPI
 * point-to-point and all-reduce measured on this machine, written as a
 * topology file (see calibrate_cpu.h; the file itself is ../calib_topology.c).
 *
 * What it is not: a benchmark suite. Each figure is what the cost model
 * needs (core/cost.h: calib_gemm_flops, calib_mem_Bps, the rate of each of
 * the executor's parts; the node fabric's bandwidth and latency), measured
 * the simple, standard way (STREAM's triad, a ping-pong, nccl-tests'
 * busbw, the parts timed as the runner calls them), with all ranks running
 * at once because that is how a training step shares the machine.
 *
 * MPI errors: the work runs on a duplicate of the caller's communicator
 * with MPI_ERRORS_RETURN, so a failed call becomes st->msg with file and
 * line instead of an abort.
 */
#define _GNU_SOURCE /* sysconf(_SC_PHYS_PAGES, _SC_LEVEL3_CACHE_SIZE) */
#include "calibrate_cpu.h"

#include "calib_plan.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "data.h"
#include "gpt.h"
#include "ops_cpu.h"
#include "params.h"

#define MIB (1024.0 * 1024.0)

static int mpi_fail(struct oc_status *st, int rc, const char *what, const char *file,
                    int line)
{
    char err[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(rc, err, &n) != MPI_SUCCESS)
        snprintf(err, sizeof err, "MPI error %d", rc);
    return oc_fail(st, "%s:%d: %s failed: %s", file, line, what, err);
}

/* One check wrapper for MPI (STYLE.md, llm.c's mpiCheck): the call, file
 * and line into st->msg, and return -1 from the calling function. */
#define MPI_CHECK(call)                                                        \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ != MPI_SUCCESS)                                                \
            return mpi_fail(st, rc_, #call, __FILE__, __LINE__);               \
    } while (0)

/* ------------------------------------------------------------------ */
/* This machine                                                         */

static void machine_info(struct oc_calib_measured *m, int ranks)
{
    m->ranks = ranks;
    oc_calib_host_date(m);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "model name", 10) == 0) {
                char *v = strchr(line, ':');
                if (v) {
                    v++;
                    while (*v == ' ' || *v == '\t')
                        v++;
                    v[strcspn(v, "\n")] = '\0';
                    snprintf(m->cpu_name, sizeof m->cpu_name, "%.63s", v);
                }
                break;
            }
        fclose(f);
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    m->cores_per_rank = cores >= ranks ? cores / ranks : 1;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
        m->memory_bytes = (double)pages * (double)page / (double)ranks;
}

/* Every rank on rank 0's host: the file says gpus_per_node = ranks. */
static int one_host(MPI_Comm comm, int nranks, struct oc_status *st)
{
    char me[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0;
    MPI_CHECK(MPI_Get_processor_name(me, &len));
    char *all = oc_xcalloc((size_t)nranks, MPI_MAX_PROCESSOR_NAME);
    int rc = MPI_Allgather(me, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all,
                           MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm);
    if (rc != MPI_SUCCESS) {
        free(all);
        return mpi_fail(st, rc, "MPI_Allgather", __FILE__, __LINE__);
    }
    for (int r = 1; r < nranks; r++)
        if (strncmp(all, all + (size_t)r * MPI_MAX_PROCESSOR_NAME,
                    MPI_MAX_PROCESSOR_NAME) != 0) {
            oc_fail(st, "calibrate: rank %d runs on %.64s, rank 0 on %.64s: run every "
                        "rank on one machine (the file describes one node; --netbw "
                        "measures the network between nodes)",
                    r, all + (size_t)r * MPI_MAX_PROCESSOR_NAME, all);
            free(all);
            return -1;
        }
    free(all);
    return 0;
}

/* Sum, min and max of one double over the ranks. */
static int reduce3(MPI_Comm comm, double v, double *sum, double *lo, double *hi,
                   struct oc_status *st)
{
    MPI_CHECK(MPI_Allreduce(&v, sum, 1, MPI_DOUBLE, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(&v, lo, 1, MPI_DOUBLE, MPI_MIN, comm));
    MPI_CHECK(MPI_Allreduce(&v, hi, 1, MPI_DOUBLE, MPI_MAX, comm));
    return 0;
}

/* ------------------------------------------------------------------ */
/* GEMM                                                                 */

/* The three cblas_sgemm calls the cpu kernels make for a linear layer
 * (calib_plan.h: matmul forward, and backward: dinp = dout w, dw +=
 * dout^T inp). */
static void sgemm_call(int call, const struct oc_calib_lin *l, float *inp, float *w,
                       float *out, float *dinp, float *dw)
{
    const int N = (int)l->N, IC = (int)l->IC, OC = (int)l->OC;
    switch (call) {
    case OC_CALIB_G_FWD:
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, inp, IC,
                    w, IC, 0.0f, out, OC);
        break;
    case OC_CALIB_G_DINP:
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1.0f, out,
                    OC, w, IC, 0.0f, dinp, IC);
        break;
    default:
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1.0f, out, OC,
                    inp, IC, 1.0f, dw, IC);
        break;
    }
}

static float *filled(int64_t n)
{
    float *p = oc_xmalloc((size_t)n * sizeof *p);
    /* Small, non-denormal values: the rate must not depend on the data. */
    for (int64_t i = 0; i < n; i++)
        p[i] = 0.001f * (float)(i % 13 + 1);
    return p;
}

static int measure_gemm(const struct oc_cpu_calib_opts *o, MPI_Comm comm, int rank,
                        int nranks, struct oc_calib_measured *m, struct oc_status *st)
{
    const struct oc_model *md = o->model;
    const int64_t t = o->tp, T = o->micro_batch * o->seq;
    struct oc_calib_lin lins[OC_CALIB_NLINS];
    oc_calib_gemm_shapes(md, t, T, lins);
    const int nl = OC_CALIB_NLINS;
    int64_t max_in, max_w, max_out;
    oc_calib_gemm_max(lins, nl, &max_in, &max_w, &max_out);
    float *inp = filled(max_in), *w = filled(max_w), *out = filled(max_out);
    float *dinp = filled(max_in), *dw = filled(max_w);

    double best[OC_CALIB_NLINS][OC_CALIB_G_NCALLS], flops_all = 0, time_all = 0;
    int rc = 0;
    for (int i = 0; i < nl && rc == 0; i++) {
        const struct oc_calib_lin *l = &lins[i];
        const double flops = oc_calib_lin_flops(l);
        for (int c = 0; c < OC_CALIB_G_NCALLS && rc == 0; c++) {
            sgemm_call(c, l, inp, w, out, dinp, dw); /* warm-up: pages, threads */
            best[i][c] = INFINITY;
            for (int r = 0; r < o->repeats; r++) {
                int e = MPI_Barrier(comm);
                if (e != MPI_SUCCESS) {
                    rc = mpi_fail(st, e, "MPI_Barrier", __FILE__, __LINE__);
                    break;
                }
                double t0 = MPI_Wtime();
                sgemm_call(c, l, inp, w, out, dinp, dw);
                double dt = MPI_Wtime() - t0;
                if (dt < best[i][c])
                    best[i][c] = dt;
            }
            flops_all += flops;
            time_all += best[i][c];
        }
    }
    free(inp), free(w), free(out), free(dinp), free(dw);
    if (rc != 0)
        return -1;

    /* The rate of this rank over all calls, then the mean over ranks. */
    double rate = flops_all / time_all, sum, lo, hi;
    if (reduce3(comm, rate, &sum, &lo, &hi, st) != 0)
        return -1;
    m->gemm_flops = sum / nranks;
    snprintf(m->gemm_what, sizeof m->gemm_what,
             "%s with t=%lld, T=%lld rows: QKV, output projection, MLP up and down, "
             "forward + dgrad + wgrad, best of %d, mean of the ranks' rates",
             md->name, (long long)t, (long long)T, o->repeats);

    /* Per-call rates, mean over ranks, for the table. */
    const int ng = OC_CALIB_G_NCALLS;
    double per[OC_CALIB_NLINS * OC_CALIB_G_NCALLS];
    double per_sum[OC_CALIB_NLINS * OC_CALIB_G_NCALLS];
    for (int i = 0; i < nl; i++)
        for (int c = 0; c < ng; c++)
            per[i * ng + c] = oc_calib_lin_flops(&lins[i]) / best[i][c];
    MPI_CHECK(MPI_Allreduce(per, per_sum, nl * ng, MPI_DOUBLE, MPI_SUM, comm));
    if (rank == 0 && o->log) {
        fprintf(o->log,
                "# GEMM: fp32 cblas_sgemm, one TP shard of %s (t=%lld, T=%lld rows), "
                "best of %d, GFLOP/s as the mean over %d ranks\n"
                "#%9s %6s %8s %8s %8s %10s %10s\n",
                md->name, (long long)t, (long long)T, o->repeats, nranks, "gemm", "call",
                "M", "N", "K", "time_us", "GFLOP/s");
        for (int i = 0; i < nl; i++)
            for (int c = 0; c < ng; c++) {
                /* (M, N, K) of the call as cblas sees it. */
                const struct oc_calib_lin *l = &lins[i];
                int64_t M, N, K;
                oc_calib_gemm_mnk(l, c, &M, &N, &K);
                fprintf(o->log, " %9s %6s %8lld %8lld %8lld %10.2f %10.2f\n", l->name,
                        oc_calib_call_names[c], (long long)M, (long long)N, (long long)K,
                        best[i][c] * 1e6, per_sum[i * ng + c] / nranks / 1e9);
            }
        fprintf(o->log, "# GEMM rate: %.3f GFLOP/s per rank (ranks %.3f .. %.3f)\n#\n",
                m->gemm_flops / 1e9, lo / 1e9, hi / 1e9);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Memory bandwidth                                                     */

/* STREAM's triad (McCalpin, "STREAM: Sustainable Memory Bandwidth in High
 * Performance Computers"): a[i] = b[i] + s*c[i]. Optimised whatever the
 * build type, so that a Debug build does not calibrate a slow loop. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O2")))
#endif
static void triad(double *restrict a, const double *restrict b,
                  const double *restrict c, double s, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}

static int measure_memory(const struct oc_cpu_calib_opts *o, MPI_Comm comm, int rank,
                          int nranks, struct oc_calib_measured *m, struct oc_status *st)
{
    /* STREAM's rule: the arrays at least 4x the caches. The ranks run at
     * once and share the last-level cache, so each rank's arrays are 4x its
     * share of it; 64 MiB at least, and at most 1/8 of this rank's share of
     * RAM for the three. */
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    double bytes = 64.0 * MIB;
    if (l3 > 0 && 4.0 * (double)l3 / nranks > bytes)
        bytes = 4.0 * (double)l3 / nranks;
    if (m->memory_bytes > 0 && 3.0 * bytes > m->memory_bytes / 8.0)
        bytes = m->memory_bytes / 24.0;
    const int64_t n = (int64_t)(bytes / sizeof(double));
    double *A = oc_xmalloc((size_t)n * sizeof *A);
    double *B = oc_xmalloc((size_t)n * sizeof *B);
    double *C = oc_xmalloc((size_t)n * sizeof *C);
    for (int64_t i = 0; i < n; i++) /* first touch: the pages exist before timing */
        A[i] = 0.0, B[i] = 1.0, C[i] = 2.0;
    double best = INFINITY;
    int rc = 0;
    for (int r = 0; r < o->repeats + 1; r++) {
        int e = MPI_Barrier(comm);
        if (e != MPI_SUCCESS) {
            rc = mpi_fail(st, e, "MPI_Barrier", __FILE__, __LINE__);
            break;
        }
        double t0 = MPI_Wtime();
        triad(A, B, C, 3.0, n);
        double dt = MPI_Wtime() - t0;
        if (r > 0 && dt < best) /* the first run is a warm-up */
            best = dt;
    }
    volatile double sink = A[n / 2]; /* the stores are used */
    (void)sink;
    free(A), free(B), free(C);
    if (rc != 0)
        return -1;
    /* STREAM counts 24 bytes per triad element: read b and c, write a. */
    double Bps = 24.0 * (double)n / best, sum, lo, hi;
    if (reduce3(comm, Bps, &sum, &lo, &hi, st) != 0)
        return -1;
    m->mem_Bps = sum / nranks;
    if (rank == 0 && o->log)
        fprintf(o->log,
                "# Memory: triad a = b + s*c over 3 x %.0f MiB fp64 arrays per rank, "
                "best of %d: %.3f GB/s per rank (ranks %.3f .. %.3f)\n#\n",
                (double)n * sizeof(double) / MIB, o->repeats, m->mem_Bps / 1e9,
                lo / 1e9, hi / 1e9);
    return 0;
}

/* ------------------------------------------------------------------ */
/* The executor's parts at the model's shapes                           */

/* The buffers of one shard's forward and backward on the cpu kernels
 * (host memory), run by calib_plan.h's oc_calib_parts_run. */
struct pt_bufs {
    struct oc_kernels k;
    struct oc_params p;
    struct oc_calib_parts pt;
};

static void pt_free(struct pt_bufs *b)
{
    struct oc_calib_parts *t = &b->pt;
    free(t->x), free(t->acts), free(t->head), free(t->gs), free(t->work);
    free(t->losses), free(t->tok), free(t->tgt);
    oc_calib_parts_unbind(t);
    oc_params_free(&b->p);
}

/* 0, or -1 with st->msg when the executor does not run this model at
 * these shapes, or one layer does not fit in `budget_bytes` (then there is
 * nothing to measure). Layers: all of the model's, unless their arena
 * (weights, gradients and the two AdamW moments, 16 bytes per parameter)
 * and activations would take more than budget_bytes; then as many as fit.
 * The rates are per layer, so fewer layers measure the same thing with
 * less memory. */
static int pt_init(struct pt_bufs *b, const struct oc_cpu_calib_opts *o, int rank,
                   double budget_bytes, struct oc_status *st)
{
    memset(b, 0, sizeof *b);
    b->k = oc_kernels_cpu();
    struct oc_calib_parts *t = &b->pt;
    t->k = &b->k;
    t->p = &b->p;
    const struct oc_model *md = o->model;
    const int64_t tp_rank = rank % o->tp;
    if (oc_gpt_dims_init(&t->d, md, o->tp, tp_rank, o->micro_batch, o->seq, st) != 0)
        return -1;
    const struct oc_gpt_dims *d = &t->d;
    const int64_t work = oc_gpt_work_floats(&b->k, d);
    {
        const double N = (double)(d->B * d->T), C = (double)d->C;
        const double per_layer =
            16.0 * (double)oc_model_layer_params_tp(md, o->tp) +
            4.0 * ((double)(oc_gpt_attn_act_floats(d) + oc_gpt_mlp_act_floats(d)) + 2 * N * C);
        const double fixed =
            16.0 * ((double)(d->v + d->P) * C + 2 * C) +
            4.0 * ((double)(oc_gpt_head_act_floats(d) + work) + 2 * N * C);
        t->L = md->num_hidden_layers;
        if (budget_bytes > 0 && fixed + (double)t->L * per_layer > budget_bytes)
            t->L = (int64_t)((budget_bytes - fixed) / per_layer);
        if (t->L < 1)
            return oc_fail(st, "one layer of %s with its embedding and head needs %.0f MB, "
                               "more than the %.0f MB set aside for it",
                           md->name, (fixed + per_layer) / 1e6, budget_bytes / 1e6);
    }
    int64_t *layers = oc_xmalloc((size_t)t->L * sizeof *layers);
    for (int64_t i = 0; i < t->L; i++)
        layers[i] = i;
    struct oc_params_opts po = {o->tp, tp_rank, layers, t->L, 1, 1, 1234};
    int rc = oc_params_init(&b->p, md, &po, st);
    free(layers);
    if (rc != 0)
        return -1;
    const int64_t N = d->B * d->T, C = d->C;
    const int64_t A = oc_gpt_attn_act_floats(d), M = oc_gpt_mlp_act_floats(d);
    t->x = oc_xcalloc((size_t)((2 * t->L + 1) * N * C), sizeof *t->x);
    t->acts = oc_xcalloc((size_t)(t->L * (A + M)), sizeof *t->acts);
    t->head = oc_xcalloc((size_t)oc_gpt_head_act_floats(d), sizeof *t->head);
    t->gs = oc_xcalloc((size_t)(N * C), sizeof *t->gs);
    t->work = oc_xcalloc((size_t)work, sizeof *t->work);
    t->losses = oc_xcalloc((size_t)N, sizeof *t->losses);
    oc_calib_parts_bind(t);
    /* The executor's synthetic data (exec/data.h), its default seed. */
    t->tok = oc_xmalloc((size_t)N * sizeof *t->tok);
    t->tgt = oc_xmalloc((size_t)N * sizeof *t->tgt);
    struct oc_synth syn;
    if (oc_gpt_reserve(&b->k, d, st) != 0 ||
        oc_synth_init(&syn, md->vocab_size, 1234, st) != 0) {
        pt_free(b);
        return -1;
    }
    oc_synth_batch(&syn, 0, d->B, d->T, t->tok, t->tgt);
    oc_synth_free(&syn);
    return 0;
}

/* The clock between parts (calib_plan.h's mark). */
struct pt_clock {
    double *sec;
    double last;
};

static void pt_mark(void *ctx, int part)
{
    struct pt_clock *c = ctx;
    const double t = MPI_Wtime();
    if (part >= 0)
        c->sec[part] += t - c->last;
    c->last = t;
}

/* One repeat: the seconds of each part, summed over the layers. */
static void pt_repeat(struct pt_bufs *b, int64_t step, double sec[OC_PT_COUNT])
{
    memset(sec, 0, OC_PT_COUNT * sizeof *sec);
    struct pt_clock c = {sec, 0};
    oc_calib_parts_run(&b->pt, step, pt_mark, &c);
}

static int measure_parts(const struct oc_cpu_calib_opts *o, MPI_Comm comm, int rank,
                         int nranks, struct oc_calib_measured *m, struct oc_status *st)
{
    /* Can every rank run the executor's parts here? (The same answer on
     * every rank: it depends on the options only.) */
    struct oc_status why = {{0}};
    struct pt_bufs b;
    /* A quarter of this rank's share of RAM (the same on every rank). */
    if (pt_init(&b, o, rank, m->memory_bytes / 4.0, &why) != 0) {
        if (rank == 0 && o->log)
            fprintf(o->log, "# Parts: not measured: %s; the cost model keeps its "
                            "estimates for them\n#\n", why.msg);
        return 0;
    }
    /* A warm-up repeat (pages, caches), then as many as the budget holds,
     * the count decided on rank 0 so that the ranks repeat together. */
    double sec[OC_PT_COUNT], total = 0;
    int rc = MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    pt_repeat(&b, 1, sec);
    double warm = MPI_Wtime() - t0;
    int n = oc_calib_parts_repeats(warm, o->repeats);
    if (rc == MPI_SUCCESS)
        rc = MPI_Bcast(&n, 1, MPI_INT, 0, comm);
    double *all = oc_xcalloc((size_t)n * OC_PT_COUNT, sizeof *all);
    for (int r = 0; r < n && rc == MPI_SUCCESS; r++) {
        rc = MPI_Barrier(comm);
        pt_repeat(&b, r + 2, sec);
        for (int k = 0; k < OC_PT_COUNT; k++)
            all[k * n + r] = sec[k];
    }
    const int64_t L = b.pt.L, params = b.p.n;
    pt_free(&b);
    if (rc != MPI_SUCCESS) {
        free(all);
        return mpi_fail(st, rc, "MPI_Barrier", __FILE__, __LINE__);
    }
    /* The median repeat of each part on this rank (the run's typical
     * time, not its best), then the mean over ranks. */
    double med[OC_PT_COUNT], mean[OC_PT_COUNT], lo[OC_PT_COUNT], hi[OC_PT_COUNT];
    total = oc_calib_parts_median(all, n, med);
    free(all);
    MPI_CHECK(MPI_Allreduce(med, mean, OC_PT_COUNT, MPI_DOUBLE, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(med, lo, OC_PT_COUNT, MPI_DOUBLE, MPI_MIN, comm));
    MPI_CHECK(MPI_Allreduce(med, hi, OC_PT_COUNT, MPI_DOUBLE, MPI_MAX, comm));
    for (int k = 0; k < OC_PT_COUNT; k++)
        mean[k] /= nranks;

    /* Seconds of one call and the rates (calib_plan.h). */
    double call_s[OC_PT_COUNT], flops[OC_PT_COUNT];
    oc_calib_parts_rates(o->model, o->tp, o->micro_batch, o->seq, L, params, mean, call_s,
                         flops, m);
    snprintf(m->parts_what, sizeof m->parts_what,
             "the executor's parts (exec/model/gpt.h) on the cpu kernels for %.48s, "
             "one TP shard (t=%lld) of %lld of its %lld layers, micro-batch %lld x "
             "seq %lld, fp32, one OpenBLAS thread; median of %d repeats per rank, "
             "mean of the ranks",
             o->model->name, (long long)o->tp, (long long)L,
             (long long)o->model->num_hidden_layers, (long long)o->micro_batch,
             (long long)o->seq, n);
    if (rank == 0 && o->log) {
        fprintf(o->log,
                "# Parts: %s, one TP shard (t=%lld) of %lld of %lld layers, micro-batch "
                "%lld x seq %lld; median of %d repeats (%.3f s each), mean over %d ranks;\n"
                "# rate = the FLOPs the schedule gives the op / its time\n",
                o->model->name, (long long)o->tp, (long long)L,
                (long long)o->model->num_hidden_layers, (long long)o->micro_batch,
                (long long)o->seq, n, total, nranks);
        oc_calib_parts_table(o->log, L, params, call_s, lo, hi, flops, m);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* MPI                                                                  */

/* One-way time of an MPI ping-pong of `bytes` between ranks 0 and 1 (the
 * other ranks wait), half the mean round trip, on every rank. */
static int pingpong(MPI_Comm comm, int rank, char *buf, int64_t bytes, double *t,
                    struct oc_status *st)
{
    const int iters = oc_calib_msg_iters(bytes), warm = 2;
    MPI_Status ms;
    MPI_CHECK(MPI_Barrier(comm));
    double t0 = 0;
    for (int it = 0; it < warm + iters; it++) {
        if (it == warm)
            t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_CHECK(MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 7, comm));
            MPI_CHECK(MPI_Recv(buf, (int)bytes, MPI_BYTE, 1, 7, comm, &ms));
        } else if (rank == 1) {
            MPI_CHECK(MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 7, comm, &ms));
            MPI_CHECK(MPI_Send(buf, (int)bytes, MPI_BYTE, 0, 7, comm));
        }
    }
    *t = (MPI_Wtime() - t0) / (2.0 * iters);
    MPI_CHECK(MPI_Bcast(t, 1, MPI_DOUBLE, 0, comm)); /* rank 0's clock counts */
    return 0;
}

static int measure_p2p(const struct oc_cpu_calib_opts *o, MPI_Comm comm, int rank,
                       struct oc_calib_measured *m, struct oc_status *st)
{
    /* The message a pipeline stage sends: one micro-batch's activation,
     * T x h fp32 values (the executor's; no sequence parallelism). */
    const int64_t act = 4 * o->micro_batch * o->seq * o->model->hidden_size;
    const int nsizes = oc_calib_msg_sizes(o->max_msg_bytes);
    double *t = oc_xcalloc((size_t)nsizes, sizeof *t);
    char *buf = oc_xcalloc((size_t)(act > o->max_msg_bytes ? act : o->max_msg_bytes), 1);
    int i = 0, rc = 0;
    double t_act = 0;
    rc = pingpong(comm, rank, buf, act, &t_act, st);
    for (int64_t s = 8; s <= o->max_msg_bytes && rc == 0; s *= 2, i++)
        rc = pingpong(comm, rank, buf, s, &t[i], st);
    free(buf);
    if (rc != 0) {
        free(t);
        return -1;
    }
    /* The model t(S) = latency + S / B (calib_plan.h). */
    const double smax = oc_calib_msg_largest(nsizes);
    oc_calib_p2p_fit(t, nsizes, act, t_act, m);
    if (rank == 0 && o->log) {
        oc_calib_net_table_head(o->log, "MPI point-to-point: ping-pong between ranks 0 "
                                        "and 1, one-way time; busbw = algbw (nccl-tests, "
                                        "sendrecv)");
        oc_calib_p2p_rows(o->log, o->max_msg_bytes, t, act, t_act);
        fprintf(o->log, "# p2p latency %.2f us, bandwidth %.3f GB/s at the activation "
                        "(%lld B), %.3f GB/s at %.0f MiB\n#\n",
                m->p2p_latency_s * 1e6, m->p2p_Bps / 1e9, (long long)act,
                m->p2p_large_Bps / 1e9, smax / MIB);
    }
    free(t);
    return 0;
}

static int measure_allreduce(const struct oc_cpu_calib_opts *o, MPI_Comm comm,
                             int rank, int nranks, struct oc_calib_measured *m,
                             struct oc_status *st)
{
    const int nsizes = oc_calib_msg_sizes(o->max_msg_bytes);
    double *t = oc_xcalloc((size_t)nsizes, sizeof *t);
    /* Zeros: sums stay zero, no overflow to inf over a thousand calls. */
    float *buf = oc_xcalloc((size_t)(o->max_msg_bytes / 4), sizeof *buf);
    int i = 0, rc = MPI_SUCCESS;
    for (int64_t s = 8; s <= o->max_msg_bytes && rc == MPI_SUCCESS; s *= 2, i++) {
        const int iters = oc_calib_msg_iters(s), warm = 2, count = (int)(s / 4);
        for (int it = 0; it < warm && rc == MPI_SUCCESS; it++)
            rc = MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, comm);
        if (rc == MPI_SUCCESS)
            rc = MPI_Barrier(comm);
        double t0 = MPI_Wtime();
        for (int it = 0; it < iters && rc == MPI_SUCCESS; it++)
            rc = MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, comm);
        t[i] = (MPI_Wtime() - t0) / iters;
    }
    free(buf);
    if (rc != MPI_SUCCESS) {
        free(t);
        return mpi_fail(st, rc, "MPI_Allreduce", __FILE__, __LINE__);
    }
    /* The slowest rank's time is the collective's. */
    rc = MPI_Allreduce(MPI_IN_PLACE, t, nsizes, MPI_DOUBLE, MPI_MAX, comm);
    if (rc != MPI_SUCCESS) {
        free(t);
        return mpi_fail(st, rc, "MPI_Allreduce", __FILE__, __LINE__);
    }
    const double smax = oc_calib_msg_largest(nsizes);
    oc_calib_allreduce_fit(t, nsizes, nranks, m);
    if (rank == 0 && o->log) {
        char what[128];
        snprintf(what, sizeof what,
                 "MPI_Allreduce, float sum, %d ranks; busbw = algbw * 2(n-1)/n (nccl-tests)",
                 nranks);
        oc_calib_net_table_head(o->log, what);
        oc_calib_allreduce_rows(o->log, o->max_msg_bytes, t, nranks, NULL);
        fprintf(o->log, "# all-reduce latency %.2f us (8 B), busbw %.3f GB/s (%.0f MiB)\n#\n",
                m->allreduce_latency_s * 1e6, m->allreduce_busbw_Bps / 1e9, smax / MIB);
    }
    free(t);
    return 0;
}

/* ------------------------------------------------------------------ */

static int check_opts(const struct oc_cpu_calib_opts *o, struct oc_status *st)
{
    if (!o->model || !o->base || !o->out_path)
        return oc_fail(st, "calibrate: model, base topology and output path are needed");
    if (oc_calib_check_shapes(o->seq, o->micro_batch, o->tp, st) != 0 ||
        oc_calib_check_counts(o->repeats, o->max_msg_bytes, st) != 0)
        return -1;
    /* cblas takes int dimensions. */
    const int64_t T = o->micro_batch * o->seq;
    const int64_t wide = o->model->intermediate_size * 2 + o->model->hidden_size * 3;
    if (T > INT32_MAX / 4 || wide > INT32_MAX / 4 || T * wide / o->tp > (int64_t)1 << 34)
        return oc_fail(st, "calibrate: the GEMMs of %s with %lld rows are too large to "
                           "measure on a CPU",
                       o->model->name, (long long)T);
    return 0;
}

static int run(const struct oc_cpu_calib_opts *o, MPI_Comm comm, int rank, int nranks,
               struct oc_calib_measured *m, struct oc_status *st)
{
    if (one_host(comm, nranks, st) != 0)
        return -1;
    machine_info(m, nranks);
    if (rank == 0 && o->log) {
        fprintf(o->log,
                "# ocsim-exec --calibrate on %s (%s), %s: %d rank%s, %lld core%s per "
                "rank, OpenBLAS %d thread%s per rank\n#\n",
                m->host, m->cpu_name[0] ? m->cpu_name : "unknown CPU", m->date, nranks,
                nranks == 1 ? "" : "s", (long long)m->cores_per_rank,
                m->cores_per_rank == 1 ? "" : "s", openblas_get_num_threads(),
                openblas_get_num_threads() == 1 ? "" : "s");
        fflush(o->log);
    }
    if (measure_gemm(o, comm, rank, nranks, m, st) != 0 ||
        measure_memory(o, comm, rank, nranks, m, st) != 0 ||
        measure_parts(o, comm, rank, nranks, m, st) != 0)
        return -1;
    if (nranks >= 2) {
        if (measure_p2p(o, comm, rank, m, st) != 0 ||
            measure_allreduce(o, comm, rank, nranks, m, st) != 0)
            return -1;
    } else if (rank == 0 && o->log) {
        fprintf(o->log, "# one rank: no point-to-point or all-reduce to measure; the "
                        "node fabric stays the base topology's\n#\n");
    }
    return 0;
}

/* The same outcome on every rank: the message of the lowest failing rank
 * (a measurement), else rank 0's (writing the file). */
static int agree(MPI_Comm comm, int rank, int nranks, int rc, struct oc_status *ls)
{
    int mine = rc != 0 ? rank : nranks, first = nranks;
    if (MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        return rc; /* nothing more to agree on: keep this rank's verdict */
    if (first == nranks)
        return 0;
    if (MPI_Bcast(ls->msg, OC_MSG_MAX, MPI_CHAR, first, comm) != MPI_SUCCESS &&
        rc == 0)
        oc_fail(ls, "calibrate: rank %d failed", first);
    return -1;
}

int oc_cpu_calibrate(const struct oc_cpu_calib_opts *o, struct oc_status *st)
{
    if (check_opts(o, st) != 0)
        return -1;
    MPI_Comm comm;
    MPI_CHECK(MPI_Comm_dup(o->comm, &comm));
    int rank = 0, nranks = 1;
    if (MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN) != MPI_SUCCESS ||
        MPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
        MPI_Comm_size(comm, &nranks) != MPI_SUCCESS) {
        MPI_Comm_free(&comm);
        return oc_fail(st, "%s:%d: cannot set up the calibration communicator",
                       __FILE__, __LINE__);
    }
    struct oc_status ls = {{0}};
    struct oc_calib_measured m;
    memset(&m, 0, sizeof m);
    int rc = agree(comm, rank, nranks, run(o, comm, rank, nranks, &m, &ls), &ls);
    if (rc == 0) {
        int wrc = 0;
        if (rank == 0) {
            wrc = oc_calib_write_topology(o->out_path, o->base, &m, &ls);
            if (wrc == 0 && o->log)
                fprintf(o->log, "# wrote %s\n", o->out_path);
        }
        rc = agree(comm, rank, nranks, wrc, &ls);
    }
    if (o->result)
        *o->result = m;
    MPI_Comm_free(&comm);
    if (rc != 0)
        return oc_fail(st, "%s", ls.msg);
    return 0;
}
