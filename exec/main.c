/* main.c: `ocsim-exec`, the executor program: every rank of a layout runs
 * its op list of the schedule for real (runner.h) on a backend (backend.h),
 * and rank 0 writes what was measured in the simulator's schemas.
 *
 *   mpirun -np 8 ocsim-exec --backend cpu --model tiny --layout tp2-pp2-dp2 \
 *          --global-batch 8 --seq 32 --steps 5 --out DIR
 *   mpirun -np 16 ocsim-exec --backend cuda ...      # one process per GPU
 *   ocsim-exec --backend cuda --layout tp4-pp2-dp1 ...  # one node, no MPI:
 *                                                       # one thread per GPU
 *
 * Launch (ctl.h): under mpirun or srun (Open MPI's, PMI's or Slurm's
 * environment), and always for the cpu backend of an MPI build, one MPI
 * process per rank; otherwise one process whose threads are the ranks of
 * one node (the cuda backend; the cpu backend of a build without MPI runs
 * one rank).
 *
 * Takes the model, topology and layout options of `ocsim simulate`
 * (tools/options.c) plus its own: --backend, --precision, --steps, --lr,
 * --seed, --timeout, --calibrate, --no-weights. Writes into DIR, each file as soon
 * as it is complete (so a run that fails later keeps them):
 *   loss.csv      step,loss: the global batch's mean token loss, per step
 *   measured.csv  the columns of simulate.csv (reports/metrics_csv.h), from
 *                 the mean of the steps after the first
 *   ops.csv       every op of every rank in the last step (reports/ops_csv.h)
 *   memory.csv    rank,buf,high_water_bytes: the bytes each rank allocated,
 *                 by buffer kind, at their peak (and the total)
 *   timeline.json the last step as a Chrome trace (reports/timeline_json.h)
 *   weights.bin   the whole model's fp32 weights after the last step, in the
 *                 arena order of a one-rank run (see weights.txt)
 *
 * With --calibrate it only measures the machine (exec/cpu/calibrate_cpu.h, or
 * cuda/calibrate_cuda.h) and writes DIR/topology-calibrated.json.
 *
 * Exit codes: 0 done; 2 bad input (one line on stderr from rank 0, before
 * any work); 1 a failure during the run; 3 a rank timed out (its message
 * names the rank and the op it was waiting in; the job is ended:
 * MPI_Abort, or the process's exit, the NCCL communicators aborted).
 *
 * Test hooks (not in --help): OCSIM_EXEC_TEST_HANG_RANK=R makes rank R
 * sleep forever before its first op, OCSIM_EXEC_TEST_DIE_RANK=R makes it
 * die (SIGKILL) there.
 */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_cpu.h"
#include "ctl.h"
#include "format.h"
#include "gpt.h"
#include "metrics_csv.h"
#include "metrics_print.h"
#include "ops_csv.h"
#include "options.h"
#include "params.h"
#include "paths.h"
#include "runner.h"
#include "timeline_json.h"
#ifdef OC_HAVE_MPI
#include <mpi.h>

#include "calibrate_cpu.h"
#include "comm_mpi.h"
#endif
#ifdef OC_HAVE_CUDA
#include "backend_cuda.h"
#include "calibrate_cuda.h"
#include "comm_nccl.h"
#endif

#define GROUPS (OC_OPT_LAYOUT | OC_OPT_OUT | OC_OPT_EXEC)

static void help(void)
{
    puts("usage: mpirun -np N ocsim-exec --layout tp2-pp2-dp2 [--model M] [--topology T]\n"
         "                  [--global-batch B] [--seq S] [--steps K] [--out DIR]\n"
         "                  [--backend cpu|cuda] [--precision bf16|fp32] [--lr X]\n"
         "                  [--seed S] [--timeout SECONDS]\n"
         "       ocsim-exec --backend cuda --layout tp2-pp2-dp1 ...   (one node, no MPI)\n\n"
         "Runs the layout for real: every rank executes its op list of the schedule\n"
         "(a GPT-style decoder with Megatron tensor parallelism, the pipeline schedule\n"
         "through point-to-point messages, DP gradient reduction, AdamW): one MPI\n"
         "process per rank under mpirun or srun (N must equal tp*pp*dp), or, for\n"
         "the cuda backend without mpirun, one thread per GPU of this node.\n"
         "Writes DIR/loss.csv, DIR/measured.csv (the columns of simulate.csv),\n"
         "DIR/ops.csv, DIR/memory.csv, DIR/timeline.json and DIR/weights.bin\n"
         "(default DIR: out/exec).\n");
    oc_opts_print_exec_help(stdout);
    puts("Defaults that differ from `ocsim simulate`: --cards is the number of ranks,\n"
         "--model tiny, --global-batch 8, no sequence parallelism (the executor\n"
         "does not run it). The executor runs GPT-style models only.");
    oc_opts_print_help(stdout, GROUPS);
}

/* A library message without its "exec: " module prefix. */
static const char *msg_of(const struct oc_status *st)
{
    return strncmp(st->msg, "exec: ", 6) == 0 ? st->msg + 6 : st->msg;
}

static int env_rank(const char *name)
{
    const char *s = getenv(name);
    return s && *s ? atoi(s) : -1;
}

/* ------------------------------------------------------------------ */
/* Outputs (rank 0)                                                     */

static int write_memory(const char *path, const struct oc_schedule *s,
                        const double *hw, struct oc_status *st)
{
    static const char *const cols[] = {"rank", "buf", "high_water_bytes"};
    struct oc_csv c;
    if (oc_csv_open(&c, path, cols, 3, st) != 0)
        return -1;
    for (int64_t r = 0; r < s->nranks; r++)
        for (int k = 0; k <= OC_BUF_COUNT; k++) {
            oc_csv_field_i64(&c, r);
            oc_csv_field_str(&c, k < OC_BUF_COUNT ? oc_buf_name((enum oc_buf)k) : "total");
            oc_csv_field_f64(&c, hw[r * (OC_BUF_COUNT + 1) + k]);
            oc_csv_end_row(&c);
        }
    return oc_csv_close(&c, st);
}

/* Everything one rank needs, shared read-only by the ranks of one process
 * (the threads of a local run). */
struct job {
    struct oc_opts o;
    struct oc_schedule sched;
    const char *out;
    char lname[128];
    const char *device;   /* "CPU processes", "GPUs" (output wording) */
};

static void print_metrics(const struct job *j, const struct oc_metrics *mt,
                          int64_t steps_used, int device_peak)
{
    char b[8][32], name[128];
    oc_layout_format(&mt->layout, name, sizeof name);
    printf("%s, %s on %lld %s (measured), global batch %lld, seq %lld, "
           "%lld micro-batches\n",
           j->o.model.name, name, (long long)j->o.cards, j->device,
           (long long)mt->layout.global_batch, (long long)mt->layout.seq_length,
           (long long)mt->num_micro_batches);
    printf("  step time        %s (mean of %lld step%s)\n",
           oc_fmt_si(b[0], 32, mt->step_time_s, "s"), (long long)steps_used,
           steps_used == 1 ? "" : "s");
    printf("  tokens/s         %s\n", oc_fmt_si(b[1], 32, mt->tokens_per_s, ""));
    if (strcmp(j->o.exec.backend, "cuda") == 0) /* a CPU's MFU against a GPU's peak: no */
        printf("  model TFLOP/s    %.4g per GPU, MFU %.2f%% of the %s's dense bf16 %s "
               "(--topology)\n",
               mt->tflops_per_gpu, 100.0 * mt->mfu, j->o.topo.device.name,
               oc_fmt_si(b[2], 32, j->o.topo.device.peak_flops_16bit, "FLOP/s"));
    oc_metrics_print_time_split(stdout, mt);
    printf("  peak memory      %s on stage %lld (%s)\n",
           oc_fmt_si(b[7], 32, mt->peak_mem_bytes, "B"), (long long)mt->peak_mem_stage,
           device_peak ? "device high-water mark: the stream-ordered pool's used "
                         "memory and every cudaMalloc"
                       : "allocated by the executor, fp32");
    oc_metrics_print_stages(stdout, mt);
}

/* Gathers every rank's op times of every step to rank 0 and writes
 * measured.csv, ops.csv, memory.csv and timeline.json there. */
static int report(struct oc_ctl *c, const struct job *j, struct oc_runner *r,
                  double device_peak, struct oc_status *st)
{
    const struct oc_schedule *s = &j->sched;
    const int64_t steps = j->o.exec.steps;
    const int64_t R = s->nranks, n = r->nops;
    const int64_t per = 3 * steps; /* start, end, inner per op and step */
    const int tag = 11;
    double *mine = oc_xmalloc((size_t)(per * n) * sizeof *mine);
    memcpy(mine, r->start_s, (size_t)(steps * n) * sizeof *mine);
    memcpy(mine + steps * n, r->end_s, (size_t)(steps * n) * sizeof *mine);
    memcpy(mine + 2 * steps * n, r->inner_s, (size_t)(steps * n) * sizeof *mine);
    double *all = NULL;
    int64_t *displs = NULL;
    int rc = 0;
    oc_ctl_set_what(c, "gathering the op times");
    if (c->rank == 0) {
        displs = oc_xmalloc((size_t)R * sizeof *displs);
        int64_t pos = 0;
        for (int64_t q = 0; q < R; q++) {
            displs[q] = pos;
            pos += per * s->ranks[q].n;
        }
        all = oc_xmalloc((size_t)pos * sizeof *all);
        memcpy(all, mine, (size_t)(per * n) * sizeof *all);
        for (int64_t q = 1; q < R && rc == 0; q++)
            rc = oc_ctl_recv(c, all + displs[q], per * s->ranks[q].n * (int64_t)sizeof *all,
                             (int)q, tag, st);
    } else {
        rc = oc_ctl_send(c, mine, per * n * (int64_t)sizeof *mine, 0, tag, st);
    }
    double hw_mine[OC_BUF_COUNT + 1];
    memcpy(hw_mine, r->mem_hw_bytes, sizeof r->mem_hw_bytes);
    hw_mine[OC_BUF_COUNT] = device_peak > 0 ? device_peak : r->mem_hw_total_bytes;
    double *hw = c->rank == 0 ? oc_xmalloc((size_t)R * sizeof hw_mine) : NULL;
    oc_ctl_set_what(c, "gathering the memory peaks");
    if (rc == 0)
        rc = oc_ctl_gather(c, hw_mine, hw, (int64_t)sizeof hw_mine, 0, st);
    free(mine);
    if (rc != 0 || c->rank != 0) {
        free(hw);
        free(all);
        free(displs);
        return rc;
    }

    /* rank 0: per step metrics, averaged over the steps after the first */
    double **S = oc_xmalloc((size_t)R * sizeof *S), **E = oc_xmalloc((size_t)R * sizeof *E);
    double **In = oc_xmalloc((size_t)R * sizeof *In);
    double *peak = oc_xmalloc((size_t)R * sizeof *peak);
    for (int64_t q = 0; q < R; q++)
        peak[q] = hw[q * (OC_BUF_COUNT + 1) + OC_BUF_COUNT];
    struct oc_metrics *mt = oc_xmalloc(sizeof *mt), *one = oc_xmalloc(sizeof *one);
    oc_metrics_init(mt, &s->layout);
    const int64_t first = steps > 1 ? 1 : 0, used = steps - first;
    for (int64_t k = first; k < steps; k++) {
        for (int64_t q = 0; q < R; q++) {
            const int64_t nq = s->ranks[q].n;
            double *base = all + displs[q];
            S[q] = base + k * nq;
            E[q] = base + steps * nq + k * nq;
            In[q] = base + 2 * steps * nq + k * nq;
        }
        oc_metrics_init(one, &s->layout);
        oc_runner_step_metrics(s, S, E, In, peak, one);
        mt->step_time_s += one->step_time_s / (double)used;
        for (int64_t g = 0; g < mt->nstages; g++) {
            struct oc_stage_metrics *a = &mt->stage[g];
            const struct oc_stage_metrics *b = &one->stage[g];
            a->compute_s += b->compute_s / (double)used;
            a->bubble_s += b->bubble_s / (double)used;
            a->tp_comm_s += b->tp_comm_s / (double)used;
            a->pp_comm_s += b->pp_comm_s / (double)used;
            a->dp_comm_s += b->dp_comm_s / (double)used;
            a->exposed_comm_s += b->exposed_comm_s / (double)used;
            a->peak_mem_bytes = b->peak_mem_bytes;
        }
    }
    oc_metrics_finish(mt, &j->o.model, &j->o.topo);
    char path[4200];
    struct oc_csv csv;
    snprintf(path, sizeof path, "%s/measured.csv", j->out);
    rc = oc_metrics_csv_open(&csv, path, st);
    if (rc == 0) {
        oc_metrics_csv_row(&csv, mt, "");
        rc = oc_csv_close(&csv, st);
    }
    /* The last step's times (S, E point at it; its SEND ends are now the
     * arrivals) for ops.csv and the trace. */
    struct oc_timeline tl;
    oc_timeline_init(&tl, s, NULL);
    for (int64_t q = 0; q < R; q++)
        for (int64_t i = 0; i < s->ranks[q].n; i++) {
            tl.start_s[q][i] = S[q][i];
            tl.end_s[q][i] = E[q][i];
        }
    snprintf(path, sizeof path, "%s/ops.csv", j->out);
    if (rc == 0)
        rc = oc_ops_csv_write(path, &tl, st);
    snprintf(path, sizeof path, "%s/memory.csv", j->out);
    if (rc == 0)
        rc = write_memory(path, s, hw, st);
    char title[512], name[128];
    oc_layout_format(&s->layout, name, sizeof name);
    snprintf(title, sizeof title, "%s, %s on %lld %s, step %lld (measured)",
             j->o.model.name, name, (long long)R, j->device, (long long)steps);
    struct oc_trace_opts to = OC_TRACE_OPTS_DEFAULT;
    to.title = title;
    to.source = "measured";
    to.gpus_per_node = j->o.topo.gpus_per_node;
    snprintf(path, sizeof path, "%s/timeline.json", j->out);
    if (rc == 0)
        rc = oc_timeline_json_write(path, &tl, &s->layout, &to, NULL, st);
    if (rc == 0)
        print_metrics(j, mt, used, device_peak > 0);
    oc_timeline_free(&tl);
    free(one);
    free(mt);
    free(peak);
    free(In);
    free(E);
    free(S);
    free(hw);
    free(all);
    free(displs);
    return rc;
}

/* weights.bin: "OCSIMWT1", int64 tensor count, per tensor {char name[16];
 * int64 layer, rows, cols}, then every tensor's fp32 values in that order
 * (the arena of a one-rank run: wte, wpe, layer 0..L-1, lnf, lmw if
 * untied). Host byte order. */
static int write_weights(const char *dir, const struct oc_params *w, struct oc_status *st)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/weights.bin", dir);
    FILE *f = fopen(path, "wb");
    if (!f)
        return oc_fail(st, "%s: cannot write: %s", path, strerror(errno));
    int64_t nt = w->nt;
    int ok = fwrite("OCSIMWT1", 1, 8, f) == 8 && fwrite(&nt, sizeof nt, 1, f) == 1;
    for (int64_t i = 0; ok && i < nt; i++) {
        const struct oc_param_tensor *t = &w->t[i];
        char name[16] = {0};
        snprintf(name, sizeof name, "%s", oc_param_name(t->kind));
        int64_t meta[3] = {t->layer, t->rows, t->cols};
        ok = fwrite(name, 1, 16, f) == 16 && fwrite(meta, sizeof meta[0], 3, f) == 3;
    }
    ok = ok && fwrite(w->w, sizeof *w->w, (size_t)w->n, f) == (size_t)w->n;
    if (fclose(f) != 0 || !ok)
        return oc_fail(st, "%s: write failed", path);
    snprintf(path, sizeof path, "%s/weights.txt", dir);
    f = fopen(path, "w");
    if (!f)
        return oc_fail(st, "%s: cannot write: %s", path, strerror(errno));
    fprintf(f, "# weights.bin: 8 bytes \"OCSIMWT1\", int64 tensor count, per tensor\n"
               "# {char name[16]; int64 layer, rows, cols}, then the fp32 values of\n"
               "# every tensor in this order (row-major, host byte order).\n"
               "# name layer rows cols first_float\n");
    for (int64_t i = 0; i < nt; i++) {
        const struct oc_param_tensor *t = &w->t[i];
        fprintf(f, "%s %lld %lld %lld %lld\n", oc_param_name(t->kind), (long long)t->layer,
                (long long)t->rows, (long long)t->cols, (long long)t->offset);
    }
    if (fclose(f) != 0)
        return oc_fail(st, "%s: write failed", path);
    return 0;
}

/* Writes shard tensor t (values src) into whole's tensor of the same name
 * (a tied lmw copy into wte), comparing bitwise with the values an earlier
 * shard already put there (a TP replica of a replicated tensor, the other
 * stage's copy of a tied embedding); written[] marks the floats put so far.
 * Returns the floats that differed; *maxdiff their largest difference. */
static int64_t put_checked(const struct oc_params *shard, const struct oc_param_tensor *t,
                           const float *src, const struct oc_params *whole,
                           unsigned char *written, double *maxdiff)
{
    enum oc_param_kind k = t->kind;
    if (k == OC_P_LMW && shard->model.tie_word_embeddings)
        k = OC_P_WTE;
    const struct oc_param_tensor *w = oc_params_tensor(whole, k, t->layer);
    OC_ASSERT(w->rows == t->grows && w->cols == t->gcols);
    int64_t differ = 0;
    for (int64_t r = 0; r < t->rows; r++)
        for (int64_t c = 0; c < t->cols; c++) {
            int64_t at = w->offset + (t->row0 + r) * t->gcols + t->col0 + c;
            float v = src[t->offset + r * t->cols + c];
            if (written[at] && memcmp(&whole->w[at], &v, sizeof v) != 0) {
                differ++;
                double d = fabs((double)whole->w[at] - (double)v);
                if (d > *maxdiff)
                    *maxdiff = d;
            }
            whole->w[at] = v;
            written[at] = 1;
        }
    return differ;
}

/* Rank 0 collects the weights of the DP-rank-0 replica, stage by stage
 * from the last to the first, so that a tied embedding ends up as the
 * first stage's copy. Copies that should be equal (TP replicas of
 * replicated tensors, the tied embedding on the first and last stage) are
 * compared on the way; *differ counts the floats that were not bitwise
 * equal. w: this rank's weights (host). */
static int gather_weights(struct oc_ctl *c, const struct job *j, const struct oc_runner *r,
                          const float *w, int64_t *differ, double *maxdiff,
                          struct oc_status *st)
{
    const struct oc_model *m = &j->o.model;
    const struct oc_layout *l = &j->o.layout;
    const int tag = 7;
    *differ = 0;
    *maxdiff = 0;
    oc_ctl_set_what(c, "gathering the weights");
    if (c->rank != 0) {
        if (r->me.dp != 0)
            return 0;
        return oc_ctl_send(c, w, r->p.n * (int64_t)sizeof *w, 0, tag, st);
    }
    const int64_t L = m->num_hidden_layers;
    int64_t *layers = oc_xmalloc((size_t)L * sizeof *layers);
    for (int64_t i = 0; i < L; i++)
        layers[i] = i;
    struct oc_params whole;
    struct oc_params_opts wo = {1, 0, layers, L, 1, 1, j->o.exec.seed};
    if (oc_params_init(&whole, m, &wo, st) != 0) {
        free(layers);
        return -1;
    }
    unsigned char *written = oc_xcalloc((size_t)whole.n, 1);
    int rc = 0;
    for (int64_t stage = l->pp - 1; stage >= 0 && rc == 0; stage--)
        for (int64_t tp = 0; tp < l->tp && rc == 0; tp++) {
            struct oc_coord q = {tp, stage, 0};
            int64_t src = oc_layout_rank(l, q);
            struct oc_params sh;
            struct oc_params_opts so;
            oc_runner_param_opts(l, m, tp, stage, j->o.exec.seed, layers, &so);
            if (oc_params_init(&sh, m, &so, st) != 0) {
                rc = -1;
                break;
            }
            if (src == 0)
                memcpy(sh.w, w, (size_t)sh.n * sizeof *sh.w);
            else
                rc = oc_ctl_recv(c, sh.w, sh.n * (int64_t)sizeof *sh.w, (int)src, tag, st);
            for (int64_t i = 0; rc == 0 && i < sh.nt; i++)
                *differ += put_checked(&sh, &sh.t[i], sh.w, &whole, written, maxdiff);
            oc_params_free(&sh);
        }
    for (int64_t i = 0; rc == 0 && i < whole.n; i++)
        OC_ASSERT(written[i]); /* every float of the model came from a rank */
    if (rc == 0)
        rc = write_weights(j->out, &whole, st);
    free(written);
    oc_params_free(&whole);
    free(layers);
    return rc;
}

/* FNV-1a over the weight arena (Fowler, Noll, Vo): DP replicas must hold
 * bitwise the same weights after every step. */
static uint64_t arena_hash(const float *w, int64_t n)
{
    uint64_t h = 1469598103934665603ULL;
    const unsigned char *b = (const unsigned char *)w;
    for (size_t i = 0; i < (size_t)n * sizeof *w; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* Rank 0: the number of ranks whose weights differ from their DP rank 0
 * replica's. */
static int check_dp_replicas(struct oc_ctl *c, const struct oc_layout *l,
                             const struct oc_runner *r, const float *w, int64_t *differ,
                             struct oc_status *st)
{
    uint64_t h = arena_hash(w, r->p.n);
    uint64_t *all = c->rank == 0 ? oc_xmalloc((size_t)c->size * sizeof *all) : NULL;
    oc_ctl_set_what(c, "comparing the DP replicas");
    int rc = oc_ctl_gather(c, &h, all, (int64_t)sizeof h, 0, st);
    *differ = 0;
    if (rc == 0 && c->rank == 0)
        for (int64_t q = 0; q < c->size; q++) {
            struct oc_coord k = oc_layout_coord(l, q);
            k.dp = 0;
            if (all[q] != all[oc_layout_rank(l, k)])
                (*differ)++;
        }
    free(all);
    return rc;
}

/* ------------------------------------------------------------------ */
/* One rank                                                             */

/* --calibrate: this machine's GEMM rate, memory bandwidth and MPI or NCCL
 * times at the layout's shapes (cpu/calibrate_cpu.h, cuda/calibrate_cuda.h),
 * written as DIR/topology-calibrated.json, a copy of --topology with the
 * measured fields replaced; no training. */
static int calibrate(struct oc_ctl *c, const struct job *j, struct oc_status *st)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/topology-calibrated.json", j->out);
#ifdef OC_HAVE_CUDA
    if (strcmp(j->o.exec.backend, "cuda") == 0) {
        struct oc_nccl nc;
        if (oc_nccl_init(&nc, c, &j->o.layout, st) != 0)
            return -1;
        struct oc_cuda_calib_opts co = OC_CUDA_CALIB_OPTS_DEFAULT;
        co.model = &j->o.model;
        co.base = &j->o.topo;
        co.seq = j->o.layout.seq_length;
        co.micro_batch = j->o.layout.micro_batch;
        co.tp = j->o.layout.tp;
        co.dtype = strcmp(j->o.exec.precision, "fp32") == 0 ? OC_CUDA_F32 : OC_CUDA_BF16;
        co.out_path = path;
        co.ctl = c;
        co.nccl = &nc;
        co.log = c->rank == 0 ? stdout : NULL;
        int rc = oc_cuda_calibrate(&co, st);
        oc_nccl_free(&nc);
        return rc;
    }
#endif
#ifdef OC_HAVE_MPI
    struct oc_cpu_calib_opts co = OC_CPU_CALIB_OPTS_DEFAULT;
    co.model = &j->o.model;
    co.base = &j->o.topo;
    co.seq = j->o.layout.seq_length;
    co.micro_batch = j->o.layout.micro_batch;
    co.tp = j->o.layout.tp;
    co.out_path = path;
    co.comm = oc_ctl_mpi_comm(c);
    co.log = c->rank == 0 ? stdout : NULL;
    return oc_cpu_calibrate(&co, st);
#else
    (void)c;
    return oc_fail(st, "--calibrate of the cpu backend needs MPI, which this build lacks");
#endif
}

/* Ends the job from a rank: one line, then every rank goes (exit code). */
static void die(struct oc_ctl *c, int code, const char *how, const struct oc_status *st)
{
    fprintf(stderr, "ocsim-exec: rank %d%s%s\n", c->rank, how, msg_of(st));
    fflush(stderr);
    oc_ctl_abort(c, code);
}

/* The backend of this rank (and, for the cpu backend, its MPI
 * communicators in *comm). */
static int backend_init(struct oc_ctl *c, const struct job *j, struct oc_backend *b,
                        void **comm, struct oc_status *st)
{
    *comm = NULL;
#ifdef OC_HAVE_CUDA
    if (strcmp(j->o.exec.backend, "cuda") == 0) {
        struct oc_backend_cuda_opts co = OC_BACKEND_CUDA_OPTS_DEFAULT;
        co.dtype = strcmp(j->o.exec.precision, "fp32") == 0 ? OC_CUDA_F32 : OC_CUDA_BF16;
        return oc_backend_cuda_init(b, c, &j->o.model, &j->o.layout, &co, st);
    }
#endif
#ifdef OC_HAVE_MPI
    if (strcmp(c->ops->name, "mpi") == 0) {
        struct oc_comm *cm = oc_xmalloc(sizeof *cm);
        if (oc_comm_init(cm, &j->o.layout, j->o.exec.timeout_s, st) != 0) {
            free(cm);
            return -1;
        }
        *comm = cm;
        return oc_backend_cpu_init(b, c, cm, st);
    }
#endif
    return oc_backend_cpu_solo_init(b, c, st);
}

static void backend_free(struct oc_backend *b, void *comm)
{
    b->ops->free_backend(b);
#ifdef OC_HAVE_MPI
    if (comm) {
        oc_comm_free(comm);
        free(comm);
    }
#else
    (void)comm;
#endif
}

/* A rank's whole run: backend, runner, the steps, the reports. Returns the
 * exit code (failures during the run end the job through die()). */
static int rank_main(struct oc_ctl *c, void *arg)
{
    const struct job *j = arg;
    const int rank = c->rank, world = c->size;
    struct oc_status st = {{0}};
    if (j->o.exec.calibrate) {
        int rc = calibrate(c, j, &st);
        if (rc != 0 && rank == 0)
            fprintf(stderr, "ocsim-exec: %s\n", msg_of(&st));
        return rc != 0 ? 1 : 0;
    }
    struct oc_backend b;
    void *comm = NULL;
    if (backend_init(c, j, &b, &comm, &st) != 0)
        die(c, 1, ": ", &st);

    struct oc_runner_opts ro = OC_RUNNER_OPTS_DEFAULT;
    ro.steps = j->o.exec.steps;
    ro.seed = j->o.exec.seed;
    ro.adamw.lr = (float)j->o.exec.lr;
    ro.test_hang = env_rank("OCSIM_EXEC_TEST_HANG_RANK") == rank;
    ro.test_die = env_rank("OCSIM_EXEC_TEST_DIE_RANK") == rank;
    struct oc_runner r;
    if (oc_runner_init(&r, &j->o.model, &j->sched, &b, &ro, &st) != 0)
        die(c, 1, ": ", &st);

    char path[4200];
    struct oc_csv loss;
    static const char *const loss_cols[] = {"step", "loss"};
    snprintf(path, sizeof path, "%s/loss.csv", j->out);
    if (rank == 0 && oc_csv_open(&loss, path, loss_cols, 2, &st) != 0)
        die(c, 1, ": ", &st);
    if (rank == 0) {
        char prec[64] = "";
        if (strcmp(j->o.exec.backend, "cuda") == 0)
            snprintf(prec, sizeof prec, " (%s GEMMs)",
                     strcmp(j->o.exec.precision, "fp32") == 0 ? "fp32" : "bf16");
        printf("ocsim-exec: %s, %s on %d %s%s, %lld micro-batches of %lld x %lld "
               "tokens, %lld steps\n",
               j->o.model.name, j->lname, world, j->device, prec,
               (long long)j->sched.num_micro_batches, (long long)j->o.layout.micro_batch,
               (long long)j->o.layout.seq_length, (long long)j->o.exec.steps);
        fflush(stdout);
    }
    const double tokens = (double)j->o.layout.global_batch * (double)j->o.layout.seq_length;
    double *step_info = rank == 0 ? oc_xmalloc((size_t)world * 2 * sizeof(double)) : NULL;
    for (int64_t k = 0; k < j->o.exec.steps; k++) {
        if (oc_runner_step(&r, k, &st) != 0)
            die(c, c->timed_out ? 3 : 1, c->timed_out ? " " : " failed ", &st);
        double mine[2] = {r.loss_sum, r.step_end_s};
        oc_ctl_set_what(c, "gathering the loss of step %lld", (long long)k + 1);
        if (oc_ctl_gather(c, mine, step_info, (int64_t)sizeof mine, 0, &st) != 0)
            die(c, 3, " ", &st);
        if (rank == 0) {
            double sum = 0, t = 0;
            for (int q = 0; q < world; q++) { /* rank order: deterministic */
                sum += step_info[2 * q];
                if (step_info[2 * q + 1] > t)
                    t = step_info[2 * q + 1];
            }
            oc_csv_field_i64(&loss, k + 1);
            oc_csv_field_f64(&loss, sum / tokens);
            oc_csv_end_row(&loss);
            char bs[32];
            printf("step %4lld  loss %.6f  %s\n", (long long)k + 1, sum / tokens,
                   oc_fmt_si(bs, sizeof bs, t, "s"));
            fflush(stdout);
        }
    }
    free(step_info);
    if (rank == 0 && oc_csv_close(&loss, &st) != 0)
        die(c, 1, ": ", &st);
    if (report(c, j, &r, b.ops->mem_peak_bytes(&b), &st) != 0)
        die(c, c->timed_out ? 3 : 1, ": ", &st);
    int64_t dp_differ = 0, rep_differ = 0;
    double rep_maxdiff = 0;
    const float *w = oc_runner_weights(&r);
    if (check_dp_replicas(c, &j->o.layout, &r, w, &dp_differ, &st) != 0 ||
        (j->o.exec.weights &&
         gather_weights(c, j, &r, w, &rep_differ, &rep_maxdiff, &st) != 0))
        die(c, c->timed_out ? 3 : 1, ": ", &st);
    if (rank == 0) {
        /* Replicas that drift apart would mean a non-deterministic
         * reduction or a runner bug; the run itself is complete. */
        if (dp_differ > 0)
            fprintf(stderr, "ocsim-exec: warning: %lld ranks hold weights that differ from "
                            "their DP replica on DP rank 0\n", (long long)dp_differ);
        if (rep_differ > 0)
            fprintf(stderr, "ocsim-exec: warning: %lld weights differ between copies that "
                            "should be equal (TP replicas, tied embedding), by up to %g\n",
                    (long long)rep_differ, rep_maxdiff);
        if (dp_differ == 0 && rep_differ == 0)
            printf("replicas: every DP replica%s holds bitwise the same weights\n",
                   j->o.exec.weights ? ", TP replica of a replicated tensor and tied embedding copy"
                                 : "");
        printf("wrote %s/loss.csv, measured.csv, ops.csv, memory.csv, timeline.json%s\n",
               j->out, j->o.exec.weights ? ", weights.bin" : "");
        fflush(stdout);
    }
    oc_runner_free(&r);
    backend_free(&b, comm);
    return 0;
}

/* ------------------------------------------------------------------ */

#ifdef OC_HAVE_MPI
/* Started by mpirun (Open MPI), a PMI launcher (MPICH's hydra, srun) or
 * srun with PMIx. */
static int under_launcher(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                       "SLURM_STEP_ID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}
#endif

static int mpi_on;

/* Every rank ends the same way on bad input: rank 0 has printed the line. */
static int finish(int code)
{
#ifdef OC_HAVE_MPI
    if (mpi_on)
        MPI_Finalize();
#endif
    return code;
}

int main(int argc, char **argv)
{
    static struct job job;
    struct job *j = &job;
    struct oc_opts *o = &j->o;
    oc_opts_default(o);
    o->model_name = "tiny";
    o->layout.global_batch = 8;
    o->layout.sequence_parallel = 0;
    o->cards = 1; /* --cards defaults to the number of ranks, known below */
    /* Parsed before MPI starts (the backend and --no-mpi decide whether it
     * does); a bad flag is reported once MPI says which rank is 0. */
    struct oc_status st = {{0}};
    const int parsed = oc_opts_parse(o, argc, argv, GROUPS, &st);
    if (!o->exec.backend)
        o->exec.backend = "cpu";
    if (!o->exec.precision)
        o->exec.precision = "bf16";
    int rank = 0, world = -1;
#ifdef OC_HAVE_MPI
    mpi_on = !o->exec.no_mpi && (strcmp(o->exec.backend, "cuda") != 0 || under_launcher());
    if (mpi_on) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &world);
    }
#endif
    /* One BLAS thread: deterministic sums (gpt.h) and one core per rank. */
    openblas_set_num_threads(1);

    if (parsed != 0) {
        if (rank == 0)
            fprintf(stderr, "ocsim-exec: %s\n", st.msg);
        return finish(2);
    }
    if (o->help) {
        if (rank == 0)
            help();
        return finish(0);
    }
    if (mpi_on && !o->cards_given)
        o->cards = world;
    const int cuda = strcmp(j->o.exec.backend, "cuda") == 0;
    int64_t need = oc_layout_world(&o->layout);
    if (!mpi_on) {
        /* one process: its threads are the ranks (cuda), or one rank */
        world = cuda ? (int)need : 1;
        if (!j->o.cards_given)
            o->cards = need;
    }
    j->device = cuda ? "GPUs" : "CPU processes";
    oc_layout_format(&o->layout, j->lname, sizeof j->lname);
    int bad = 1;
    if (mpi_on && need != world)
        oc_fail(&st, "layout %s needs tp*pp*dp = %lld processes, but MPI started %d "
                     "(use mpirun -np %lld)", j->lname, (long long)need, world,
                (long long)need);
    else if (!mpi_on && need != world)
        oc_fail(&st, "layout %s needs tp*pp*dp = %lld ranks; without MPI the cpu backend "
                     "runs one (use mpirun -np %lld)", j->lname, (long long)need,
                (long long)need);
    else if (j->o.cards_given && o->cards != world)
        oc_fail(&st, "--cards %lld does not match the %d ranks", (long long)o->cards, world);
    else if (strcmp(j->o.exec.backend, "cpu") != 0 && !cuda)
        oc_fail(&st, "--backend: unknown backend '%s' (known: cpu, cuda)", j->o.exec.backend);
    else if (strcmp(j->o.exec.precision, "bf16") != 0 && strcmp(j->o.exec.precision, "fp32") != 0)
        oc_fail(&st, "--precision: unknown precision '%s' (known: bf16, fp32)",
                j->o.exec.precision);
#ifndef OC_HAVE_CUDA
    else if (cuda)
        oc_fail(&st, "--backend cuda is not built in this ocsim-exec (nvcc, cuBLAS or NCCL "
                     "were missing when it was configured)");
#else
    else if (cuda && !oc_backend_cuda_available())
        oc_fail(&st, "--backend cuda: no CUDA device is visible on this machine");
#endif
    else if (oc_opts_load(o, &st) == 0 &&
             oc_layout_validate(&o->layout, &o->model, &o->topo, o->cards, &st) == 0 &&
             (j->o.exec.calibrate || oc_gpt_check_layout(&o->model, &o->layout, &st) == 0))
        bad = 0;
    memset(&j->sched, 0, sizeof j->sched);
    struct oc_schedule_opts so = {OC_GRAIN_LAYER, 1};
    if (!bad && !j->o.exec.calibrate &&
        oc_schedule_build(&j->sched, &o->model, &o->layout, &so, &st) != 0)
        bad = 1;
#ifdef OC_HAVE_CUDA
    /* NCCL pairs pipeline messages by order, not by tag */
    if (!bad && !j->o.exec.calibrate && cuda &&
        oc_backend_cuda_check_p2p_order(&j->sched, &st) != 0)
        bad = 1;
#endif
    j->out = o->out_dir ? o->out_dir : "out/exec";
    if (bad) {
        if (rank == 0)
            fprintf(stderr, "ocsim-exec: %s\n", msg_of(&st));
        return finish(2);
    }

    int rc = 0;
#ifdef OC_HAVE_MPI
    if (mpi_on) {
        struct oc_ctl ctl;
        if (oc_ctl_init_mpi(&ctl, MPI_COMM_WORLD, j->o.exec.timeout_s, &st) != 0) {
            fprintf(stderr, "ocsim-exec: rank %d: %s\n", rank, msg_of(&st));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        /* The output folder, before any work; every rank learns the verdict. */
        int dir_ok = 1;
        if (rank == 0 && oc_mkdir_p(j->out, &st) != 0) {
            fprintf(stderr, "ocsim-exec: %s\n", st.msg);
            dir_ok = 0;
        }
        oc_ctl_set_what(&ctl, "the start");
        if (oc_ctl_bcast(&ctl, &dir_ok, (int64_t)sizeof dir_ok, 0, &st) != 0)
            die(&ctl, 3, " ", &st);
        if (!dir_ok) {
            oc_ctl_free(&ctl);
            oc_schedule_free(&j->sched);
            return finish(2);
        }
        rc = rank_main(&ctl, j);
        oc_ctl_free(&ctl);
        oc_schedule_free(&j->sched);
        return finish(rc);
    }
#endif
    if (oc_mkdir_p(j->out, &st) != 0) {
        fprintf(stderr, "ocsim-exec: %s\n", st.msg);
        oc_schedule_free(&j->sched);
        return 2;
    }
    rc = oc_ctl_local_run(world, j->o.exec.timeout_s, rank_main, j);
    oc_schedule_free(&j->sched);
    return rc;
}
