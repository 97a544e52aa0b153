/* calib_plan.h: the plan of a calibration, shared by both backends of
 * `ocsim-exec --calibrate` (exec/cpu/calibrate_cpu.c: OpenBLAS + MPI;
 * exec/cuda/calibrate_cuda.c: cuBLAS + NCCL): what is measured at which
 * shapes (the GEMMs of one TP shard, the executor's parts in the runner's
 * order, the message sizes), how a measured time becomes a rate (the FLOPs
 * the schedule gives an op over its time, s/token, s/param, the
 * latency + size / bandwidth fit, nccl-tests' busbw), the options both
 * check the same way, and the tables both print the same way.
 *
 * What it is not: a measurement. Nothing here times, allocates device
 * memory or communicates (no MPI, no CUDA, no BLAS): the backends run the
 * work (the parts through oc_calib_parts_run, on their own kernel table)
 * and hand the times in. It prints only to the FILE * it is given (the
 * calibration's log).
 */
#ifndef OC_CALIB_PLAN_H
#define OC_CALIB_PLAN_H

#include <stdint.h>
#include <stdio.h>

#include "calib_topology.h"
#include "gpt.h"
#include "model.h"
#include "ops.h"
#include "params.h"
#include "status.h"

/* ------------------------------------------------------------------ */
/* Options                                                              */

/* seq, micro-batch and tp >= 1; else -1 with st->msg. */
int oc_calib_check_shapes(int64_t seq, int64_t micro_batch, int64_t tp,
                          struct oc_status *st);
/* repeats >= 1 and the largest message in [8 B, 1 GiB]; else -1. */
int oc_calib_check_counts(int repeats, int64_t max_msg_bytes, struct oc_status *st);

/* ------------------------------------------------------------------ */
/* This machine                                                         */

/* m->host (gethostname, "unknown host" on failure) and m->date (now, UTC). */
void oc_calib_host_date(struct oc_calib_measured *m);

/* ------------------------------------------------------------------ */
/* GEMM                                                                 */

/* One linear layer of a TP shard: out (N x OC) = inp (N x IC) w^T, w (OC x IC). */
struct oc_calib_lin {
    const char *name;
    int64_t N, IC, OC;
};

/* The four linear layers of one TP shard (QKV, output projection, MLP up
 * and down). */
#define OC_CALIB_NLINS 4

/* The three products of a linear layer (the cpu kernels' cblas_sgemm calls):
 * forward, dinp = dout w (dgrad), dw += dout^T inp (wgrad). */
enum { OC_CALIB_G_FWD, OC_CALIB_G_DINP, OC_CALIB_G_DW, OC_CALIB_G_NCALLS };
extern const char *const oc_calib_call_names[OC_CALIB_G_NCALLS];

/* lins[] = one TP shard (t = tp) at T rows, Megatron-LM's split as
 * core/cost.c counts it. */
void oc_calib_gemm_shapes(const struct oc_model *md, int64_t tp, int64_t T,
                          struct oc_calib_lin lins[OC_CALIB_NLINS]);
/* The largest input (N x IC), weight (OC x IC) and output (N x OC) in floats. */
void oc_calib_gemm_max(const struct oc_calib_lin *lins, int nl, int64_t *max_in,
                       int64_t *max_w, int64_t *max_out);
/* FLOPs of one product of l: 2 N IC OC (each call: forward, dgrad, wgrad). */
double oc_calib_lin_flops(const struct oc_calib_lin *l);
/* (M, N, K) of `call` on l as cblas sees it (the table's columns). */
void oc_calib_gemm_mnk(const struct oc_calib_lin *l, int call, int64_t *M, int64_t *N,
                       int64_t *K);

/* ------------------------------------------------------------------ */
/* The executor's parts at the model's shapes                           */

/* What is timed, in the order one repeat runs it: one micro-batch forward
 * and backward through every layer of one TP shard, as the runner does
 * (exec/runner.c): embedding, per layer attention then MLP, the head
 * forward and backward, per layer (last first) MLP backward, the
 * selective recompute of the attention scores and attention backward,
 * the embedding backward, then AdamW over the shard's arena. */
enum {
    OC_PT_EMBED_FWD,
    OC_PT_ATTN_FWD,
    OC_PT_MLP_FWD,
    OC_PT_HEAD_FWD,
    OC_PT_HEAD_BWD,
    OC_PT_MLP_BWD,
    OC_PT_ATTN_RECOMPUTE,
    OC_PT_ATTN_BWD,
    OC_PT_EMBED_BWD,
    OC_PT_ADAMW,
    OC_PT_COUNT
};
extern const char *const oc_pt_names[OC_PT_COUNT];

/* Repeats: at least the options' repeats, more while they fit in this many
 * seconds (a small model's repeat takes milliseconds; its median needs
 * more). */
#define OC_PT_BUDGET_S 2.0
#define OC_PT_MAX_REPEATS 101

/* A part in step mode (gpt.h, "Communication") with its TP all-reduces
 * left out: the network model prices those as their own ops. `call` is
 * the struct oc_gpt_call the part takes. */
#define OC_CALIB_RUN_PART(call, expr)                                          \
    do {                                                                       \
        memset(&(call), 0, sizeof(call));                                      \
        while ((expr) == OC_GPT_REDUCE) {                                      \
        }                                                                      \
    } while (0)

/* One TP shard's parts over L layers, every layer's activations kept (the
 * scores of the selective recompute are rebuilt in place), on buffers the
 * backend allocated in the memory of its kernels k: x (2L+1, N, C) holds
 * the embedding's output, then each part's; acts L attention acts, then L
 * MLP acts (oc_gpt_*_act_floats); head the head act; gs (N, C); work
 * (oc_gpt_work_floats); losses, tok, tgt (N). aa, ma and ha are bound by
 * oc_calib_parts_bind. */
struct oc_calib_parts {
    const struct oc_kernels *k;
    struct oc_gpt_dims d;
    struct oc_params *p; /* L layers, the embedding and the head, in k's memory */
    int64_t L;
    float *x, *acts, *head, *gs, *work, *losses;
    int32_t *tok, *tgt;
    struct oc_gpt_attn_act *aa; /* (L) */
    struct oc_gpt_mlp_act *ma;  /* (L) */
    struct oc_gpt_head_act ha;
};

/* Binds aa, ma (allocated here) and ha over x, acts and head. */
void oc_calib_parts_bind(struct oc_calib_parts *b);
void oc_calib_parts_unbind(struct oc_calib_parts *b);

/* One repeat in the order above: the gradients zeroed, then every part
 * (OC_CALIB_RUN_PART), AdamW at `step` last. mark(ctx, -1) comes
 * before the first part, mark(ctx, OC_PT_*) right after each part: the
 * backend reads its clock there (cpu) or records an event (cuda). */
void oc_calib_parts_run(struct oc_calib_parts *b, int64_t step,
                        void (*mark)(void *ctx, int part), void *ctx);

/* Timed repeats after a warm-up repeat of warm_s seconds: as many as
 * OC_PT_BUDGET_S holds, in [repeats, OC_PT_MAX_REPEATS]. */
int oc_calib_parts_repeats(double warm_s, int repeats);

/* all (OC_PT_COUNT x n, part-major): each part's n repeat times, sorted in
 * place; med[k] = the median of part k (the run's typical time, not its
 * best). Returns the sum of the medians (one typical repeat). */
double oc_calib_parts_median(double *all, int n, double med[OC_PT_COUNT]);

/* The parts' rates from mean_s (each part's seconds per repeat, mean over
 * the ranks), measured over L layers of an arena of `params` parameters at
 * tp, micro_batch x seq: call_s[k] = seconds of one call (layer parts run
 * L times per repeat), flops[k] = the FLOPs the schedule gives the op
 * (oc_cost_sched_flops); fills m->part_flops (flops / call_s), the
 * embedding's s/token, AdamW's s/param and m->parts_measured. */
void oc_calib_parts_rates(const struct oc_model *md, int64_t tp, int64_t micro_batch,
                          int64_t seq, int64_t L, int64_t params,
                          const double mean_s[OC_PT_COUNT], double call_s[OC_PT_COUNT],
                          double flops[OC_PT_COUNT], struct oc_calib_measured *m);

/* The parts table's column heads, rows (lo_s, hi_s: the ranks' extremes
 * per repeat) and the embedding / AdamW line, to f. */
void oc_calib_parts_table(FILE *f, int64_t L, int64_t params,
                          const double call_s[OC_PT_COUNT],
                          const double lo_s[OC_PT_COUNT],
                          const double hi_s[OC_PT_COUNT],
                          const double flops[OC_PT_COUNT],
                          const struct oc_calib_measured *m);

/* ------------------------------------------------------------------ */
/* Point-to-point and all-reduce                                        */

/* The message sizes: 8 B, doubling, up to max_msg_bytes. Their count, and
 * the largest, 8 * 2^(nsizes - 1). */
int oc_calib_msg_sizes(int64_t max_msg_bytes);
double oc_calib_msg_largest(int nsizes);

/* Iterations for a message of `bytes`: about 64 MiB moved per size, at
 * least 5 and at most 1000 calls. */
int oc_calib_msg_iters(int64_t bytes);

/* The model t(S) = latency + S / B (core/closed_form.h's per-message
 * cost) from t[i] (one-way seconds of the sizes above) and t_act (of the
 * pipeline's activation message, act bytes): latency from the smallest
 * message, B from the activation message (what the pipeline sends; a
 * large message's rate differs once it leaves the caches), and B at the
 * largest for the record. Fills m->p2p_*. */
void oc_calib_p2p_fit(const double *t, int nsizes, int64_t act, double t_act,
                      struct oc_calib_measured *m);
/* m->allreduce_* from t[i] (the slowest rank's seconds per size) over
 * nranks: nccl-tests' busbw at the largest, latency at the smallest. */
void oc_calib_allreduce_fit(const double *t, int nsizes, int64_t nranks,
                            struct oc_calib_measured *m);

/* nccl-tests' table (its columns, units and the meaning of algbw and
 * busbw, doc/PERFORMANCE.md): the head (what, then the columns size,
 * count, type, redop, root, time, algbw, busbw, #wrong), one row, the
 * point-to-point rows over the sizes (busbw = algbw), the calibration's
 * with the activation's row last, and the all-reduce rows (count in
 * floats, busbw = algbw * 2(n-1)/n); wrong[i] per size, NULL where the
 * data were not checked. One placement (nccl-tests prints out-of-place, then
 * in-place); #wrong is "N/A" where the data were not checked, as
 * nccl-tests prints it with checking off. `ocsim-exec --netbw`
 * (netbw.h) prints the same rows. */
struct oc_calib_net_row {
    int64_t bytes, count;     /* message size and elements of `type` */
    const char *type, *redop; /* "float", "sum"; "int8", "none" */
    double time_s;            /* one call (point-to-point: one way) */
    double busbw_Bps;         /* nccl-tests' bus bandwidth of the call */
    int64_t wrong;            /* elements not as expected; -1: not checked */
    const char *note;         /* printed after the row; NULL: none */
};
void oc_calib_net_table_head(FILE *f, const char *what);
void oc_calib_net_row(FILE *f, const struct oc_calib_net_row *r);
void oc_calib_sendrecv_rows(FILE *f, int64_t max_msg_bytes, const double *t,
                            const int64_t *wrong);
void oc_calib_p2p_rows(FILE *f, int64_t max_msg_bytes, const double *t, int64_t act,
                       double t_act);
void oc_calib_allreduce_rows(FILE *f, int64_t max_msg_bytes, const double *t,
                             int64_t nranks, const int64_t *wrong);

#endif
