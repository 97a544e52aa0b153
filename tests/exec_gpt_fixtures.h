/* exec_gpt_fixtures.h: what the suites of the executor's model share
 * (test_exec_gpt, test_exec_llama, test_exec_params): the "tiny" and
 * "llama-tiny" models with L layers, the
 * cpu kernel table, and a TP shard that holds the whole model (one pipeline
 * stage) and runs one micro-batch op by op, driven by the schedule's op
 * list, on t shards in lockstep, under a variant of the layout's knobs
 * (classic or flash attention, sequence parallelism or not).
 *
 *   static int init(void) { return gpt_suite_init(); }
 *   struct oc_model m = tiny(2);
 *   struct batch b = make_batch(m.vocab_size, 0, 2, 32);
 *   static struct shard sh[2];
 *   shards_run(sh, 2, &m, &b, OC_RECOMPUTE_NONE);  // fwd + bwd, t = 2
 *   shards_run_v(sh, 2, &m, &b, OC_RECOMPUTE_NONE, FLASH_SP); // the same, SP
 *   ... sh[r].losses, sh[r].p.g ...
 *   shard_free(&sh[0]); shard_free(&sh[1]); batch_free(&b);
 *
 * Gains and biases are moved off 1 and 0 (perturb_vectors) so that bias
 * handling under TP is tested, not hidden by zeros. What it is not: a test;
 * lockstep and run_schedule assert that every TP rank asks for the same
 * collectives and that they are the ones the schedule emits around each
 * COMPUTE op, in its order and sizes.
 */
#ifndef OC_EXEC_GPT_FIXTURES_H
#define OC_EXEC_GPT_FIXTURES_H

#include <stdint.h>

#include "gpt.h"
#include "ops_cpu.h"
#include "params.h"
#include "schedule.h"

#define SEED 20240607ULL
#define TMAX 4 /* shards at the most */
#define LMAX 8 /* layers at the most */

/* The kernels every part runs on (stateless: the threads share them);
 * set by gpt_suite_init. */
extern struct oc_kernels K;
/* CUnit suite init: one OpenBLAS thread, the cpu kernel table into K. */
int gpt_suite_init(void);

/* models/tiny.json (GPT-2 block) with L layers. */
struct oc_model tiny(int64_t L);
/* models/llama-tiny.json (Llama block, 4 heads over 2 KV heads) with L
 * layers. */
struct oc_model llama_tiny(int64_t L);

/* ------------------------------------------------------------------ */
/* One TP shard holding the whole model (one pipeline stage)            */

/* The layout's knobs a shard runs under: attention kernel and sequence
 * parallelism (in effect for t > 1). The suites' first checks ran classic
 * attention without SP and keep doing so (CLASSIC); the layouts' default
 * is flash. */
struct variant {
    enum oc_attention attention;
    int sp;
};
#define CLASSIC ((struct variant){OC_ATTN_CLASSIC, 0})
#define FLASH ((struct variant){OC_ATTN_FLASH, 0})
#define FLASH_SP ((struct variant){OC_ATTN_FLASH, 1})
#define CLASSIC_SP ((struct variant){OC_ATTN_CLASSIC, 1})

struct shard {
    struct oc_gpt_dims d;
    struct oc_params p;
    enum oc_recompute rc;
    int64_t N, C, L;
    int64_t S;     /* floats of a residual stream here (gpt.h): N*C, or the
                      rank's N/t rows under SP */
    float *x;      /* (2L+1, S) residual stream: x[0] embedding out,
                      x[2l+1] attention l out, x[2l+2] MLP l out */
    float *dx;     /* (S) gradient flowing back, in place */
    float *rin;    /* (S) full recompute: the MLP input (shared) */
    float *junk;   /* (S) full recompute: the recomputed MLP output */
    float *actmem;
    float *att_scratch; /* selective: the shared attention scores */
    struct oc_gpt_attn_act attn[LMAX];
    struct oc_gpt_mlp_act mlp[LMAX];
    struct oc_gpt_head_act head;
    float *work;
    float *losses; /* (N) */
    const int32_t *tok, *tgt; /* (N) */
    float grad_scale;
};

/* Stream i of the residual stream x. */
#define X(s, i) ((s)->x + (int64_t)(i) * (s)->S)

/* TP rank r of t of model m for B sequences of length T (CLASSIC, or the
 * knobs of variant v). */
void shard_init(struct shard *s, const struct oc_model *m, int64_t t,
                int64_t r, int64_t B, int64_t T, enum oc_recompute rc);
void shard_init_v(struct shard *s, const struct oc_model *m, int64_t t,
                  int64_t r, int64_t B, int64_t T, enum oc_recompute rc,
                  struct variant v);
void shard_free(struct shard *s);

/* The call for one COMPUTE op of the schedule. */
int part_call(struct shard *s, struct oc_gpt_call *c, const struct oc_op *op);
/* acc = acc (op) x, element-wise; the one reduction used by both the
 * lockstep and the threaded all-reduce, always in rank order. */
void combine(float *acc, const float *x, int64_t n, enum oc_gpt_reduce op);
/* One collective a part asked for: the schedule's kind and the values. */
struct request {
    enum oc_coll_kind coll;
    int64_t n;
};
#define REQ_MAX 8
/* Runs one COMPUTE op on t shards in step mode, doing their collectives in
 * rank order (gpt.h's in-place all-gather, reduce-scatter); returns the
 * number of collectives and, if req is not NULL, lists them (REQ_MAX at
 * most). */
int64_t lockstep_req(struct shard *sh, int64_t t, const struct oc_op *op,
                     struct request *req);
int64_t lockstep(struct shard *sh, int64_t t, const struct oc_op *op);
/* A tp<t>-pp1-dp1 layout of one micro-batch of B sequences of length T
 * (no SP, or sequence parallelism sp). */
struct oc_schedule one_stage_schedule(const struct oc_model *m, int64_t t,
                                      int64_t B, int64_t T,
                                      enum oc_recompute rc);
struct oc_schedule one_stage_schedule_v(const struct oc_model *m, int64_t t,
                                        int64_t B, int64_t T,
                                        enum oc_recompute rc, struct variant v);
/* What a runner does after the backward under SP (runner_dp.c): the norms'
 * partial gradients (oc_gpt_sp_partial_grad) summed over the t shards in
 * rank order, the sum on every shard. */
void sp_grads_sum(struct shard *sh, int64_t t);

/* One micro-batch of the synthetic task. */
struct batch {
    int64_t B, T;
    int32_t *tok, *tgt;
};

struct batch make_batch(int64_t V, int64_t g0, int64_t B, int64_t T);
void batch_free(struct batch *b);

/* Moves gains and biases off their init values (1 and 0), the same way for
 * every layout. */
void perturb_vectors(struct oc_params *p);
/* t shards of model m, fed batch b, fwd + bwd through the schedule (and
 * under SP sp_grads_sum after). */
void shards_run(struct shard *sh, int64_t t, const struct oc_model *m,
                const struct batch *b, enum oc_recompute rc);
void shards_run_v(struct shard *sh, int64_t t, const struct oc_model *m,
                  const struct batch *b, enum oc_recompute rc, struct variant v);
/* ||a - b|| / ||b|| */
double rel_l2(const float *a, const float *b, int64_t n);
/* Gradients of t shards gathered into the layout of `whole` (a t=1
 * shard's params); free it. */
float *gather_grads(const struct shard *sh, int64_t t,
                    const struct oc_params *whole);

/* ------------------------------------------------------------------ */
/* Checks the suites of both families run (CUnit assertions)            */

/* t shards of model m run fwd + bwd on batch b (shards_run, no
 * recompute) against ref, one shard (t = 1) that ran the same: every
 * rank's losses bitwise alike; losses, the input gradient (the rank's
 * rows of it under SP) and every gathered gradient within 1e-5 (L2
 * relative) of ref's; a replicated tensor's gradient bitwise alike on
 * every rank. _v: under variant v (ref ran v's attention at t = 1). */
void check_tp_like_ref(const struct shard *ref, const struct oc_model *m,
                       const struct batch *b, int64_t t);
void check_tp_like_ref_v(const struct shard *ref, const struct oc_model *m,
                         const struct batch *b, int64_t t, struct variant v);
/* Every gradient tensor of s is non-zero (the checks compare no zeros). */
void check_grads_nonzero(const struct shard *s);
/* Full and selective recompute give bitwise the losses, gradients and
 * input gradient of none, at t = 1 and t = 2, on model m and batch b
 * (CLASSIC, or variant v). */
void check_recompute_bitwise(const struct oc_model *m, const struct batch *b);
void check_recompute_bitwise_v(const struct oc_model *m, const struct batch *b,
                               struct variant v);
/* Flash against classic attention at t = 1, on model m and batch b: the
 * losses bitwise alike (the cpu kernels' fused forward is the classic
 * loop), every gradient tensor within 1e-5 (L2 relative), and some
 * gradient not bitwise alike (the backward really is the fused one). */
void check_flash_like_classic(const struct oc_model *m, const struct batch *b);
/* The mean of s's token losses, summed in double. */
double mean_loss(const struct shard *s);
/* Mean loss of one t = 1 forward of s (B x T tokens), summed in double. */
double fwd_loss(struct shard *s, const struct oc_model *m, int64_t B, int64_t T);
/* Central differences (f(w+e) - f(w-e)) / 2e, e = 1e-2, on the entry of
 * largest gradient within rows [r0, r1) (r1 0: every row) of tensor
 * (k, layer) of a t = 1 shard that ran fwd + bwd: within 1% of the
 * gradient, which is above 1e-5. */
void check_fd(struct shard *s, const struct oc_model *m, int64_t B, int64_t T,
              enum oc_param_kind k, int64_t layer, int64_t r0, int64_t r1);
/* 50 AdamW steps (lr 1e-2) at t = 1 on the synthetic task, B = 8, T = 32,
 * a new batch each step: the first mean loss is within 0.05 of 6.25, the
 * last below 70% of the first. */
void check_loss_falls(const struct oc_model *m);

#endif
