/* calibrate.c: `ocsim-exec --calibrate`: GEMM rate, memory bandwidth, MPI
 * point-to-point and all-reduce measured on this machine, written as a
 * topology file (see calibrate.h; the file itself is calib_topology.c).
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
#include "calibrate.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "closed_form.h" /* oc_busbw_allreduce */
#include "cost.h"        /* oc_cost_sched_flops */
#include "data.h"
#include "gpt.h"
#include "layout.h"
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

static int64_t ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

/* Iterations for a message of `bytes`: about 64 MiB moved per size, at
 * least 5 and at most 1000 calls. */
static int iters_for(int64_t bytes)
{
    double n = 64.0 * MIB / (double)bytes;
    return n < 5 ? 5 : n > 1000 ? 1000 : (int)n;
}

/* ------------------------------------------------------------------ */
/* This machine                                                         */

static void machine_info(struct oc_calib_measured *m, int ranks)
{
    m->ranks = ranks;
    if (gethostname(m->host, sizeof m->host) != 0)
        snprintf(m->host, sizeof m->host, "unknown host");
    m->host[sizeof m->host - 1] = '\0';
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(m->date, sizeof m->date, "%Y-%m-%d %H:%M UTC", &tm);
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
                        "rank on one machine (the file describes one node)",
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

/* One linear layer of a TP shard: out (N x OC) = inp (N x IC) w^T, w (OC x IC). */
struct lin {
    const char *name;
    int64_t N, IC, OC;
};

/* The three cblas_sgemm calls exec/gpt.c makes for a linear layer
 * (matmul forward, and backward: dinp = dout w, dw += dout^T inp). */
enum { G_FWD, G_DINP, G_DW, G_NCALLS };
static const char *const call_names[G_NCALLS] = {"fwd", "dgrad", "wgrad"};

static void sgemm_call(int call, const struct lin *l, float *inp, float *w, float *out,
                       float *dinp, float *dw)
{
    const int N = (int)l->N, IC = (int)l->IC, OC = (int)l->OC;
    switch (call) {
    case G_FWD:
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, inp, IC,
                    w, IC, 0.0f, out, OC);
        break;
    case G_DINP:
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

static int measure_gemm(const struct oc_exec_calib_opts *o, MPI_Comm comm, int rank,
                        int nranks, struct oc_calib_measured *m, struct oc_status *st)
{
    const struct oc_model *md = o->model;
    const int64_t t = o->tp, T = o->micro_batch * o->seq;
    const int64_t hd = oc_model_head_dim(md);
    const int64_t a = ceil_div(md->num_attention_heads, t);
    const int64_t k = ceil_div(md->num_key_value_heads, t);
    const int64_t f = ceil_div(md->intermediate_size, t);
    const int64_t h = md->hidden_size;
    /* One TP shard, Megatron-LM's split as core/cost.c counts it. */
    const struct lin lins[] = {
        {"qkv", T, h, (a + 2 * k) * hd},
        {"proj", T, a * hd, h},
        {"mlp_up", T, h, (md->gated_mlp ? 2 : 1) * f},
        {"mlp_down", T, f, h},
    };
    const int nl = (int)(sizeof lins / sizeof lins[0]);
    int64_t max_in = 0, max_w = 0, max_out = 0;
    for (int i = 0; i < nl; i++) {
        const struct lin *l = &lins[i];
        if (l->N * l->IC > max_in) max_in = l->N * l->IC;
        if (l->OC * l->IC > max_w) max_w = l->OC * l->IC;
        if (l->N * l->OC > max_out) max_out = l->N * l->OC;
    }
    float *inp = filled(max_in), *w = filled(max_w), *out = filled(max_out);
    float *dinp = filled(max_in), *dw = filled(max_w);

    double best[4][G_NCALLS], flops_all = 0, time_all = 0;
    int rc = 0;
    for (int i = 0; i < nl && rc == 0; i++) {
        const struct lin *l = &lins[i];
        const double flops = 2.0 * (double)l->N * (double)l->IC * (double)l->OC;
        for (int c = 0; c < G_NCALLS && rc == 0; c++) {
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
    double per[4 * G_NCALLS], per_sum[4 * G_NCALLS];
    for (int i = 0; i < nl; i++)
        for (int c = 0; c < G_NCALLS; c++)
            per[i * G_NCALLS + c] =
                2.0 * (double)lins[i].N * (double)lins[i].IC * (double)lins[i].OC /
                best[i][c];
    MPI_CHECK(MPI_Allreduce(per, per_sum, nl * G_NCALLS, MPI_DOUBLE, MPI_SUM, comm));
    if (rank == 0 && o->log) {
        fprintf(o->log,
                "# GEMM: fp32 cblas_sgemm, one TP shard of %s (t=%lld, T=%lld rows), "
                "best of %d, GFLOP/s as the mean over %d ranks\n"
                "#%9s %6s %8s %8s %8s %10s %10s\n",
                md->name, (long long)t, (long long)T, o->repeats, nranks, "gemm", "call",
                "M", "N", "K", "time_us", "GFLOP/s");
        for (int i = 0; i < nl; i++)
            for (int c = 0; c < G_NCALLS; c++) {
                /* (M, N, K) of the call as cblas sees it. */
                const struct lin *l = &lins[i];
                int64_t M = c == G_DW ? l->OC : l->N;
                int64_t N = c == G_FWD ? l->OC : l->IC;
                int64_t K = c == G_FWD ? l->IC : c == G_DINP ? l->OC : l->N;
                fprintf(o->log, " %9s %6s %8lld %8lld %8lld %10.2f %10.2f\n", l->name,
                        call_names[c], (long long)M, (long long)N, (long long)K,
                        best[i][c] * 1e6, per_sum[i * G_NCALLS + c] / nranks / 1e9);
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

static int measure_memory(const struct oc_exec_calib_opts *o, MPI_Comm comm, int rank,
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

/* What is timed, in the order one repeat runs it: one micro-batch forward
 * and backward through every layer of one TP shard, as the runner does
 * (exec/runner.c): embedding, per layer attention then MLP, the head
 * forward and backward, per layer (last first) MLP backward, the
 * selective recompute of the attention scores and attention backward,
 * the embedding backward, then AdamW over the shard's arena. */
enum {
    PT_EMBED_FWD,
    PT_ATTN_FWD,
    PT_MLP_FWD,
    PT_HEAD_FWD,
    PT_HEAD_BWD,
    PT_MLP_BWD,
    PT_ATTN_RECOMPUTE,
    PT_ATTN_BWD,
    PT_EMBED_BWD,
    PT_ADAMW,
    PT_COUNT
};
static const char *const pt_names[PT_COUNT] = {
    "embed_fwd", "attn_fwd", "mlp_fwd", "head_fwd", "head_bwd",
    "mlp_bwd", "attn_recompute", "attn_bwd", "embed_bwd", "adamw",
};

/* Repeats: at least o->repeats, more while they fit in this many seconds
 * (a small model's repeat takes milliseconds; its median needs more). */
#define PT_BUDGET_S 2.0
#define PT_MAX_REPEATS 101

/* A part in step mode (gpt.h, "Communication") with its TP all-reduces
 * left out: the network model prices those as their own ops. */
#define RUN_PART(expr)                                                         \
    do {                                                                       \
        memset(&call, 0, sizeof call);                                         \
        while ((expr) == OC_GPT_REDUCE) {                                      \
        }                                                                      \
    } while (0)

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The buffers of one shard's forward and backward, every layer's
 * activations kept (the scores of the selective recompute are rebuilt in
 * place). */
struct pt_bufs {
    struct oc_gpt_dims d;
    struct oc_params p;
    int64_t L;
    float *x;          /* (2L+1, N, C): embedding out, then each part's out */
    float *acts;       /* L attention acts, then L MLP acts */
    float *head;       /* head act */
    float *gs, *work, *losses;
    int32_t *tok, *tgt;
    struct oc_gpt_attn_act *aa;
    struct oc_gpt_mlp_act *ma;
    struct oc_gpt_head_act ha;
};

static void pt_free(struct pt_bufs *b)
{
    free(b->x), free(b->acts), free(b->head), free(b->gs), free(b->work);
    free(b->losses), free(b->tok), free(b->tgt), free(b->aa), free(b->ma);
    oc_params_free(&b->p);
}

/* 0, or -1 with st->msg when the executor does not run this model at
 * these shapes, or one layer does not fit in `budget_bytes` (then there is
 * nothing to measure). Layers: all of the model's, unless their arena
 * (weights, gradients and the two AdamW moments, 16 bytes per parameter)
 * and activations would take more than budget_bytes; then as many as fit.
 * The rates are per layer, so fewer layers measure the same thing with
 * less memory. */
static int pt_init(struct pt_bufs *b, const struct oc_exec_calib_opts *o, int rank,
                   double budget_bytes, struct oc_status *st)
{
    memset(b, 0, sizeof *b);
    const struct oc_model *md = o->model;
    const int64_t tp_rank = rank % o->tp;
    if (oc_gpt_dims_init(&b->d, md, o->tp, tp_rank, o->micro_batch, o->seq, st) != 0)
        return -1;
    const struct oc_gpt_dims *d = &b->d;
    {
        const double N = (double)(d->B * d->T), C = (double)d->C;
        const double per_layer =
            16.0 * (double)oc_model_layer_params_tp(md, o->tp) +
            4.0 * ((double)(oc_gpt_attn_act_floats(d) + oc_gpt_mlp_act_floats(d)) + 2 * N * C);
        const double fixed =
            16.0 * ((double)(d->v + d->P) * C + 2 * C) +
            4.0 * ((double)(oc_gpt_head_act_floats(d) + oc_gpt_work_floats(d)) + 2 * N * C);
        b->L = md->num_hidden_layers;
        if (budget_bytes > 0 && fixed + (double)b->L * per_layer > budget_bytes)
            b->L = (int64_t)((budget_bytes - fixed) / per_layer);
        if (b->L < 1)
            return oc_fail(st, "one layer of %s with its embedding and head needs %.0f MB, "
                               "more than the %.0f MB set aside for it",
                           md->name, (fixed + per_layer) / 1e6, budget_bytes / 1e6);
    }
    int64_t *layers = oc_xmalloc((size_t)b->L * sizeof *layers);
    for (int64_t i = 0; i < b->L; i++)
        layers[i] = i;
    struct oc_params_opts po = {o->tp, tp_rank, layers, b->L, 1, 1, 1234};
    int rc = oc_params_init(&b->p, md, &po, st);
    free(layers);
    if (rc != 0)
        return -1;
    const int64_t N = d->B * d->T, C = d->C;
    const int64_t A = oc_gpt_attn_act_floats(d), M = oc_gpt_mlp_act_floats(d);
    b->x = oc_xcalloc((size_t)((2 * b->L + 1) * N * C), sizeof *b->x);
    b->acts = oc_xcalloc((size_t)(b->L * (A + M)), sizeof *b->acts);
    b->head = oc_xcalloc((size_t)oc_gpt_head_act_floats(d), sizeof *b->head);
    b->gs = oc_xcalloc((size_t)(N * C), sizeof *b->gs);
    b->work = oc_xcalloc((size_t)oc_gpt_work_floats(d), sizeof *b->work);
    b->losses = oc_xcalloc((size_t)N, sizeof *b->losses);
    b->aa = oc_xcalloc((size_t)b->L, sizeof *b->aa);
    b->ma = oc_xcalloc((size_t)b->L, sizeof *b->ma);
    for (int64_t l = 0; l < b->L; l++) {
        oc_gpt_attn_act_bind(&b->aa[l], d, b->x + 2 * l * N * C, b->acts + l * A);
        oc_gpt_mlp_act_bind(&b->ma[l], d, b->x + (2 * l + 1) * N * C,
                            b->acts + b->L * A + l * M);
    }
    oc_gpt_head_act_bind(&b->ha, d, b->x + 2 * b->L * N * C, b->head);
    /* The executor's synthetic data (exec/data.h), its default seed. */
    b->tok = oc_xmalloc((size_t)N * sizeof *b->tok);
    b->tgt = oc_xmalloc((size_t)N * sizeof *b->tgt);
    struct oc_synth syn;
    if (oc_synth_init(&syn, md->vocab_size, 1234, st) != 0) {
        pt_free(b);
        return -1;
    }
    oc_synth_batch(&syn, 0, d->B, d->T, b->tok, b->tgt);
    oc_synth_free(&syn);
    return 0;
}

/* One repeat: the seconds of each part, summed over the layers. */
static void pt_repeat(struct pt_bufs *b, int64_t step, double sec[PT_COUNT])
{
    const struct oc_gpt_dims *d = &b->d;
    const int64_t N = d->B * d->T, C = d->C, L = b->L;
    /* AdamW as the runner's default (GPT-3: Brown et al. 2020, appendix B). */
    const struct oc_adamw hyper = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f};
    const float grad_scale = 1.0f / (float)N;
    struct oc_gpt_call call;
    double t;
    memset(sec, 0, PT_COUNT * sizeof *sec);
    oc_params_zero_grad(&b->p);
#define TIMED(k, expr)                                                         \
    do {                                                                       \
        t = MPI_Wtime();                                                       \
        expr;                                                                  \
        sec[k] += MPI_Wtime() - t;                                             \
    } while (0)
    TIMED(PT_EMBED_FWD, RUN_PART(oc_gpt_embed_fwd(&call, d, &b->p, b->tok, b->x)));
    for (int64_t l = 0; l < L; l++) {
        TIMED(PT_ATTN_FWD, RUN_PART(oc_gpt_attn_fwd(&call, d, &b->p, l, &b->aa[l],
                                                    b->x + (2 * l + 1) * N * C)));
        TIMED(PT_MLP_FWD, RUN_PART(oc_gpt_mlp_fwd(&call, d, &b->p, l, &b->ma[l],
                                                  b->x + (2 * l + 2) * N * C)));
    }
    TIMED(PT_HEAD_FWD, RUN_PART(oc_gpt_head_fwd(&call, d, &b->p, &b->ha, b->tgt, b->losses)));
    TIMED(PT_HEAD_BWD, RUN_PART(oc_gpt_head_bwd(&call, d, &b->p, &b->ha, b->tgt,
                                                grad_scale, b->gs, b->work)));
    for (int64_t l = L - 1; l >= 0; l--) {
        TIMED(PT_MLP_BWD, RUN_PART(oc_gpt_mlp_bwd(&call, d, &b->p, l, &b->ma[l], b->gs,
                                                  b->gs, b->work)));
        TIMED(PT_ATTN_RECOMPUTE, oc_gpt_attn_scores(d, &b->aa[l]));
        TIMED(PT_ATTN_BWD, RUN_PART(oc_gpt_attn_bwd(&call, d, &b->p, l, &b->aa[l], b->gs,
                                                    b->gs, b->work)));
    }
    TIMED(PT_EMBED_BWD, RUN_PART(oc_gpt_embed_bwd(&call, d, &b->p, b->tok, b->gs)));
    TIMED(PT_ADAMW, oc_params_adamw(&b->p, &hyper, step, 0, b->p.n));
#undef TIMED
}

/* The layout the rates are counted for: the calibration's shapes. */
static struct oc_layout pt_layout(const struct oc_exec_calib_opts *o,
                                  enum oc_recompute rc)
{
    struct oc_layout l;
    oc_layout_default(&l);
    l.tp = o->tp;
    l.micro_batch = o->micro_batch;
    l.seq_length = o->seq;
    l.sequence_parallel = 0;
    l.recompute = rc;
    return l;
}

static int measure_parts(const struct oc_exec_calib_opts *o, MPI_Comm comm, int rank,
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
    double sec[PT_COUNT], total = 0;
    int rc = MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    pt_repeat(&b, 1, sec);
    double warm = MPI_Wtime() - t0;
    int n = (int)(PT_BUDGET_S / (warm > 1e-6 ? warm : 1e-6));
    n = n < o->repeats ? o->repeats : n > PT_MAX_REPEATS ? PT_MAX_REPEATS : n;
    if (rc == MPI_SUCCESS)
        rc = MPI_Bcast(&n, 1, MPI_INT, 0, comm);
    double *all = oc_xcalloc((size_t)n * PT_COUNT, sizeof *all);
    for (int r = 0; r < n && rc == MPI_SUCCESS; r++) {
        rc = MPI_Barrier(comm);
        pt_repeat(&b, r + 2, sec);
        for (int k = 0; k < PT_COUNT; k++)
            all[k * n + r] = sec[k];
    }
    const int64_t L = b.L, params = b.p.n;
    pt_free(&b);
    if (rc != MPI_SUCCESS) {
        free(all);
        return mpi_fail(st, rc, "MPI_Barrier", __FILE__, __LINE__);
    }
    /* The median repeat of each part on this rank (the run's typical
     * time, not its best), then the mean over ranks. */
    double med[PT_COUNT], mean[PT_COUNT], lo[PT_COUNT], hi[PT_COUNT];
    for (int k = 0; k < PT_COUNT; k++) {
        qsort(all + k * n, (size_t)n, sizeof *all, cmp_double);
        med[k] = n % 2 ? all[k * n + n / 2]
                       : 0.5 * (all[k * n + n / 2 - 1] + all[k * n + n / 2]);
        total += med[k];
    }
    free(all);
    MPI_CHECK(MPI_Allreduce(med, mean, PT_COUNT, MPI_DOUBLE, MPI_SUM, comm));
    MPI_CHECK(MPI_Allreduce(med, lo, PT_COUNT, MPI_DOUBLE, MPI_MIN, comm));
    MPI_CHECK(MPI_Allreduce(med, hi, PT_COUNT, MPI_DOUBLE, MPI_MAX, comm));
    for (int k = 0; k < PT_COUNT; k++)
        mean[k] /= nranks;

    /* Seconds of one call: layer parts run L times per repeat. */
    double call_s[PT_COUNT], flops[PT_COUNT];
    const struct oc_layout lf = pt_layout(o, OC_RECOMPUTE_SELECTIVE);
    static const struct {
        int pt;
        enum oc_part part;
        enum oc_phase phase;
        int layered;
        int key; /* enum oc_calib_part, -1: none */
    } map[PT_COUNT] = {
        {PT_EMBED_FWD, OC_PART_EMBED, OC_PHASE_FWD, 0, -1},
        {PT_ATTN_FWD, OC_PART_ATTN, OC_PHASE_FWD, 1, OC_CALIB_ATTN_FWD},
        {PT_MLP_FWD, OC_PART_MLP, OC_PHASE_FWD, 1, OC_CALIB_MLP_FWD},
        {PT_HEAD_FWD, OC_PART_HEAD, OC_PHASE_FWD, 0, OC_CALIB_HEAD_FWD},
        {PT_HEAD_BWD, OC_PART_HEAD, OC_PHASE_BWD, 0, OC_CALIB_HEAD_BWD},
        {PT_MLP_BWD, OC_PART_MLP, OC_PHASE_BWD, 1, OC_CALIB_MLP_BWD},
        {PT_ATTN_RECOMPUTE, OC_PART_ATTN, OC_PHASE_RECOMPUTE, 1, OC_CALIB_ATTN_RECOMPUTE},
        {PT_ATTN_BWD, OC_PART_ATTN, OC_PHASE_BWD, 1, OC_CALIB_ATTN_BWD},
        {PT_EMBED_BWD, OC_PART_EMBED, OC_PHASE_BWD, 0, -1},
        {PT_ADAMW, OC_PART_ALL, OC_PHASE_OPTIMIZER, 0, -1},
    };
    const double tokens = (double)(o->micro_batch * o->seq);
    for (int k = 0; k < PT_COUNT; k++) {
        OC_ASSERT(map[k].pt == k);
        call_s[k] = mean[k] / (map[k].layered ? (double)L : 1.0);
        /* The FLOPs the schedule gives the op (cost.h), so that the cost
         * model's FLOPs / rate is this time again. */
        flops[k] = oc_cost_sched_flops(o->model, &lf, map[k].part, map[k].phase);
        if (map[k].key >= 0) {
            OC_ASSERT(flops[k] > 0 && call_s[k] > 0);
            m->part_flops[map[k].key] = flops[k] / call_s[k];
        }
    }
    m->embed_fwd_s_per_token = call_s[PT_EMBED_FWD] / tokens;
    m->embed_bwd_s_per_token = call_s[PT_EMBED_BWD] / tokens;
    m->optimizer_s_per_param = call_s[PT_ADAMW] / (double)params;
    m->parts_measured = 1;
    snprintf(m->parts_what, sizeof m->parts_what,
             "the executor's part functions (exec/gpt.c) for %s, one TP shard (t=%lld) "
             "of %lld of its %lld layers, micro-batch %lld x seq %lld, fp32, one "
             "OpenBLAS thread; median of %d repeats per rank, mean of the ranks",
             o->model->name, (long long)o->tp, (long long)L,
             (long long)o->model->num_hidden_layers, (long long)o->micro_batch,
             (long long)o->seq, n);
    if (rank == 0 && o->log) {
        fprintf(o->log,
                "# Parts: %s, one TP shard (t=%lld) of %lld of %lld layers, micro-batch "
                "%lld x seq %lld; median of %d repeats (%.3f s each), mean over %d ranks;\n"
                "# rate = the FLOPs the schedule gives the op / its time\n"
                "#%15s %12s %12s %12s %12s %12s\n",
                o->model->name, (long long)o->tp, (long long)L,
                (long long)o->model->num_hidden_layers, (long long)o->micro_batch,
                (long long)o->seq, n, total, nranks, "part", "time_us", "lo_us", "hi_us",
                "MFLOP", "GFLOP/s");
        for (int k = 0; k < PT_COUNT; k++) {
            const double per = map[k].layered ? (double)L : 1.0;
            fprintf(o->log, " %15s %12.2f %12.2f %12.2f %12.3f", pt_names[k],
                    call_s[k] * 1e6, lo[k] / per * 1e6, hi[k] / per * 1e6, flops[k] / 1e6);
            if (map[k].key >= 0)
                fprintf(o->log, " %12.3f\n", flops[k] / call_s[k] / 1e9);
            else
                fprintf(o->log, " %12s\n", "-");
        }
        fprintf(o->log,
                "# embedding %.4g s/token forward, %.4g s/token backward; AdamW %.4g s "
                "per parameter (%lld parameters)\n#\n",
                m->embed_fwd_s_per_token, m->embed_bwd_s_per_token,
                m->optimizer_s_per_param, (long long)params);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* MPI                                                                  */

static void table_head(FILE *f, const char *what)
{
    fprintf(f, "# %s\n#%11s %10s %10s %11s %11s\n#%11s %10s %10s %11s %11s\n", what,
            "size", "count", "time", "algbw", "busbw", "(B)", "(elements)", "(us)",
            "(GB/s)", "(GB/s)");
}

/* One-way time of an MPI ping-pong of `bytes` between ranks 0 and 1 (the
 * other ranks wait), half the mean round trip, on every rank. */
static int pingpong(MPI_Comm comm, int rank, char *buf, int64_t bytes, double *t,
                    struct oc_status *st)
{
    const int iters = iters_for(bytes), warm = 2;
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

static int measure_p2p(const struct oc_exec_calib_opts *o, MPI_Comm comm, int rank,
                       struct oc_calib_measured *m, struct oc_status *st)
{
    /* The message a pipeline stage sends: one micro-batch's activation,
     * T x h fp32 values (the executor's; no sequence parallelism). */
    const int64_t act = 4 * o->micro_batch * o->seq * o->model->hidden_size;
    int nsizes = 0;
    for (int64_t s = 8; s <= o->max_msg_bytes; s *= 2)
        nsizes++;
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
    /* The model t(S) = latency + S / B (core/closed_form.h's per-message
     * cost): latency from the smallest message, B from the activation
     * message (what the pipeline sends; a large message's rate differs
     * once it leaves the caches), and B at the largest for the record. */
    const double smax = 8.0 * pow(2.0, nsizes - 1);
    m->p2p_latency_s = t[0];
    const double dt = t[nsizes - 1] - t[0];
    m->p2p_large_Bps = dt > 0 ? smax / dt : smax / t[nsizes - 1];
    m->p2p_msg_bytes = (double)act;
    m->p2p_msg_s = t_act;
    m->p2p_Bps = t_act > t[0] ? (double)act / (t_act - t[0]) : (double)act / t_act;
    if (rank == 0 && o->log) {
        table_head(o->log, "MPI point-to-point: ping-pong between ranks 0 and 1, "
                           "one-way time; busbw = algbw (nccl-tests, sendrecv)");
        i = 0;
        for (int64_t s = 8; s <= o->max_msg_bytes; s *= 2, i++)
            fprintf(o->log, " %11lld %10lld %10.2f %11.3f %11.3f\n", (long long)s,
                    (long long)s, t[i] * 1e6, (double)s / t[i] / 1e9,
                    (double)s / t[i] / 1e9);
        fprintf(o->log, " %11lld %10lld %10.2f %11.3f %11.3f   <- one activation (T x h fp32)\n",
                (long long)act, (long long)act, t_act * 1e6, (double)act / t_act / 1e9,
                (double)act / t_act / 1e9);
        fprintf(o->log, "# p2p latency %.2f us, bandwidth %.3f GB/s at the activation "
                        "(%lld B), %.3f GB/s at %.0f MiB\n#\n",
                m->p2p_latency_s * 1e6, m->p2p_Bps / 1e9, (long long)act,
                m->p2p_large_Bps / 1e9, smax / MIB);
    }
    free(t);
    return 0;
}

static int measure_allreduce(const struct oc_exec_calib_opts *o, MPI_Comm comm,
                             int rank, int nranks, struct oc_calib_measured *m,
                             struct oc_status *st)
{
    int nsizes = 0;
    for (int64_t s = 8; s <= o->max_msg_bytes; s *= 2)
        nsizes++;
    double *t = oc_xcalloc((size_t)nsizes, sizeof *t);
    /* Zeros: sums stay zero, no overflow to inf over a thousand calls. */
    float *buf = oc_xcalloc((size_t)(o->max_msg_bytes / 4), sizeof *buf);
    int i = 0, rc = MPI_SUCCESS;
    for (int64_t s = 8; s <= o->max_msg_bytes && rc == MPI_SUCCESS; s *= 2, i++) {
        const int iters = iters_for(s), warm = 2, count = (int)(s / 4);
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
    const double smax = 8.0 * pow(2.0, nsizes - 1);
    m->allreduce_bytes = smax;
    m->allreduce_busbw_Bps = oc_busbw_allreduce(nranks, smax, t[nsizes - 1]);
    m->allreduce_latency_s = t[0];
    if (rank == 0 && o->log) {
        char what[128];
        snprintf(what, sizeof what,
                 "MPI_Allreduce, float sum, %d ranks; busbw = algbw * 2(n-1)/n (nccl-tests)",
                 nranks);
        table_head(o->log, what);
        i = 0;
        for (int64_t s = 8; s <= o->max_msg_bytes; s *= 2, i++)
            fprintf(o->log, " %11lld %10lld %10.2f %11.3f %11.3f\n", (long long)s,
                    (long long)(s / 4), t[i] * 1e6, (double)s / t[i] / 1e9,
                    oc_busbw_allreduce(nranks, (double)s, t[i]) / 1e9);
        fprintf(o->log, "# all-reduce latency %.2f us (8 B), busbw %.3f GB/s (%.0f MiB)\n#\n",
                m->allreduce_latency_s * 1e6, m->allreduce_busbw_Bps / 1e9, smax / MIB);
    }
    free(t);
    return 0;
}

/* ------------------------------------------------------------------ */

static int check_opts(const struct oc_exec_calib_opts *o, struct oc_status *st)
{
    if (!o->model || !o->base || !o->out_path)
        return oc_fail(st, "calibrate: model, base topology and output path are needed");
    if (o->seq < 1 || o->micro_batch < 1 || o->tp < 1)
        return oc_fail(st, "calibrate: seq %lld, micro-batch %lld and tp %lld must be >= 1",
                       (long long)o->seq, (long long)o->micro_batch, (long long)o->tp);
    if (o->repeats < 1)
        return oc_fail(st, "calibrate: repeats %d must be >= 1", o->repeats);
    if (o->max_msg_bytes < 8 || o->max_msg_bytes > (int64_t)1 << 30)
        return oc_fail(st, "calibrate: the largest message (%lld bytes) must be in "
                           "[8 B, 1 GiB]",
                       (long long)o->max_msg_bytes);
    /* cblas takes int dimensions. */
    const int64_t T = o->micro_batch * o->seq;
    const int64_t wide = o->model->intermediate_size * 2 + o->model->hidden_size * 3;
    if (T > INT32_MAX / 4 || wide > INT32_MAX / 4 || T * wide / o->tp > (int64_t)1 << 34)
        return oc_fail(st, "calibrate: the GEMMs of %s with %lld rows are too large to "
                           "measure on a CPU",
                       o->model->name, (long long)T);
    return 0;
}

static int run(const struct oc_exec_calib_opts *o, MPI_Comm comm, int rank, int nranks,
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

int oc_exec_calibrate(const struct oc_exec_calib_opts *o, struct oc_status *st)
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
