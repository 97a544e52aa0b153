/* runner.h: runs one rank's op list of the schedule (core/schedule.h) for
 * real, step after step: the model parts of gpt.h, pipeline messages,
 * TP / DP / embedding collectives, AdamW, and the memory the ops allocate,
 * all through a backend (backend.h: cpu = the cpu kernels + MPI, cuda =
 * the cuda kernels + NCCL; the parts run on the backend's kernel table).
 * Times every op.
 *
 *   struct oc_runner r;
 *   struct oc_runner_opts ro = OC_RUNNER_OPTS_DEFAULT;
 *   ro.steps = 5;
 *   if (oc_runner_init(&r, &model, &sched, &backend, &ro, &st) != 0) ...
 *   for (int64_t k = 0; k < 5; k++)
 *       if (oc_runner_step(&r, k, &st) != 0) ...   // st.msg names the op
 *   ... after each step r.start_s / r.end_s / r.inner_s hold its op times
 *       (the next step overwrites them: the runner's memory does not grow
 *       with the steps), r.loss_sum its token losses, r.mem_hw_bytes the
 *       peaks ...
 *   oc_runner_free(&r);
 *
 * What it does with each op of its list, in order (grain OC_GRAIN_LAYER):
 *   COMPUTE      the part's function (gpt.h) in step mode for (micro-batch,
 *                chunk, layer); the optimizer op is AdamW over the arena,
 *                or over this DP rank's slice of every tensor when optimizer
 *                states are sharded.
 *   COLLECTIVE   TP: one collective per repetition (`count`), each the
 *                one the part asked for (checked: a part must ask for exactly
 *                the TP collectives that the schedule lists around it, of
 *                the listed kind and size), then the part resumes; its
 *                local work after the collective (bias, residual, the
 *                norm's backward) is timed as inner compute of the
 *                collective op (inner_s). Under sequence parallelism an
 *                all-gather listed just before a COMPUTE op starts that
 *                op's part (its norm on the rows here is inner compute of
 *                the all-gather), and the COMPUTE op resumes it.
 *                Sequence parallelism leaves the norms' gradients partial
 *                on each TP rank (gpt.h): they are summed over the TP group
 *                (one all-reduce, not an op of the schedule, as Megatron-
 *                LM's finalize_model_grads) before their DP bucket's
 *                reduction, or before AdamW without DP.
 *                DP: the gradient arena's all-reduce, or reduce-scatter of
 *                the gradients and, after AdamW, all-gather of the weights
 *                (d equal blocks: each rank's slices padded to the largest,
 *                as NCCL's ReduceScatter and AllGather want);
 *                `async` ones (overlap_grad_reduce, one bucket per chunk)
 *                are started and completed by polling between ops or at the
 *                WAIT. EMBED: all-reduce of the tied embedding gradient
 *                (after the DP reduction of the bucket that holds it).
 *   SEND         the backend's send of the chunk's output (activation) or
 *                input gradient; completed by polling or at the WAIT.
 *   RECV         into the next part's input. Consecutive SENDs and RECVs
 *                (ALLOC / FREE between them allowed) form one run, whose
 *                messages are under way together (backend.h: p2p_begin /
 *                p2p_end).
 *   WAIT         completes every outstanding send and async collective.
 *   ALLOC/FREE   activations of one (micro-batch, chunk) and the logits of
 *                one micro-batch are allocated and freed here; weights,
 *                gradients and optimizer states live from init. Every
 *                allocation is counted by buffer kind (mem_hw_bytes).
 *
 * Sharded optimizer states (ZeRO-1): every tensor of the arena is cut into
 * d equal slices; DP rank j owns slice j of each. Slicing each tensor (not
 * the arena) keeps the tied embedding's slices aligned between the first
 * and last pipeline stage, whose arenas differ, so that the EMBED
 * all-reduce after the reduce-scatter is correct on every owned element.
 *
 * Buffers of one (micro-batch, chunk), by recompute mode (S = the
 * residual stream, N*C or N*C/t under sequence parallelism; A/M =
 * oc_gpt_attn/mlp_act_floats, Aatt the attention scores):
 *   none       per layer: attention input (S) + A, MLP input (S) + M
 *   selective  the same without Aatt (one shared score buffer)
 *   full       per layer: the attention input (S); one shared set of acts
 *   last chunk + the LM head input (S); its other act fields are the
 *              LOGITS buffer of the micro-batch.
 * A chunk's output to the next stage and its input gradient to the
 * previous one are COMM buffers that live until their send completes.
 *
 * What it is not: a timer of anything outside the op list (the barrier and
 * data generation before a step are not in the op times), or a judge of the
 * numbers (the equivalence test compares layouts).
 */
#ifndef OC_EXEC_RUNNER_H
#define OC_EXEC_RUNNER_H

#include <stdint.h>

#include "backend.h"
#include "ctl.h"
#include "data.h"
#include "gpt.h"
#include "metrics.h"
#include "params.h"
#include "schedule.h"

struct oc_runner_opts {
    int64_t steps;        /* steps that will be run (checked by the step) */
    int64_t first_step;   /* the global number of the first (0; a resumed
                             run: the checkpoint's step, ckpt.h; may be set
                             in r.o after init, before the first step) */
    uint64_t seed;        /* weights (params.h) and data (data.h) */
    struct oc_adamw adamw;
    int test_hang;        /* tests: sleep forever before op 0 of step 0 */
    int test_die;         /* tests: die (SIGKILL) before op 0 of step 0 */
};
/* AdamW as GPT-3 (Brown et al. 2020, appendix B: beta2 0.95, eps 1e-8,
 * weight decay 0.1); lr 1e-3. */
#define OC_RUNNER_OPTS_DEFAULT                                                 \
    ((struct oc_runner_opts){.steps = 1, .seed = 1234,                         \
                             .adamw = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f}})

struct oc_runner_bucket;
struct oc_runner_pending;
struct oc_runner_gc;

struct oc_runner {
    const struct oc_model *model;
    const struct oc_schedule *sched;
    const struct oc_layout *l;
    struct oc_backend *b;
    struct oc_ctl *ctl;
    struct oc_runner_opts o;
    int64_t rank;
    struct oc_coord me;
    const struct oc_rank_ops *ops;
    int64_t nops;

    struct oc_gpt_dims d;
    struct oc_params p;
    struct oc_synth syn;
    int64_t t, pp, dp, m, v, lc; /* sizes; lc layers per chunk */
    int64_t N, C;                /* tokens per micro-batch, hidden */
    int64_t S;                   /* floats of the residual stream here: N*C,
                                    or N*C/t under sequence parallelism */
    int64_t A, Aatt, M, H;       /* act floats (gpt.h) */
    int64_t per_layer;           /* floats per layer in an activation block */
    float grad_scale;            /* 1/(G*T) */

    /* Buffers (see the header comment). */
    float **act;        /* (m*v) activation blocks, NULL when not live */
    float **logits;     /* (m) head act blocks */
    float **send_act;   /* (m*v) chunk outputs in flight */
    float **send_grad;  /* (m*v) input gradients in flight */
    float *gs;          /* (N*C) the gradient flowing back, in place */
    float *work;        /* backward scratch (oc_gpt_work_floats) */
    float *shared;      /* recompute scratch: attention act, MLP act, MLP
                           input, recomputed MLP output (full) or scores
                           (selective) */
    float *losses;      /* (m, N) token losses (head stage), backend memory */
    int32_t *tok, *tgt; /* (m, N) the step's micro-batches of this DP rank */
    int32_t *tok_b, *tgt_b; /* their copies in backend memory */
    float *w_host;      /* host copy of the weights (oc_runner_weights) */
    int p2p_open;       /* a group of pipeline messages is open */

    /* DP buckets and outstanding requests. */
    struct oc_runner_bucket *bk;
    int64_t nbk;
    int64_t *tensor_bucket; /* (p.nt) */
    int64_t tied;           /* tensor index of the tied gradient, -1 none */
    struct oc_runner_pending *pend;
    int64_t npend, cap_pend;
    struct oc_runner_gc *gc; /* the compressed DP exchange (runner_gc.c),
                                NULL without gradient compression or d = 1 */

    /* The part waiting for its TP all-reduces (step mode). */
    struct oc_gpt_call call;
    int64_t call_op;        /* op index of the part, -1 when none */

    /* The last step's op times in seconds from the step's start (after a
     * barrier), (nops) each, overwritten by every step; inner_s is the
     * compute inside a TP collective op (the part resuming after its
     * all-reduce). */
    double *start_s, *end_s, *inner_s;
    int64_t step;
    double step_end_s;      /* end of the last op of the current step */
    double loss_sum;        /* token losses of the step here (last stage,
                               TP rank 0; 0 elsewhere) */
    double live_bytes[OC_BUF_COUNT], mem_hw_bytes[OC_BUF_COUNT];
    double live_total_bytes, mem_hw_total_bytes;
};

/* b: an initialised backend of this rank (b->ctl its control plane). */
int oc_runner_init(struct oc_runner *r, const struct oc_model *m,
                   const struct oc_schedule *s, struct oc_backend *b,
                   const struct oc_runner_opts *o, struct oc_status *st);
/* Runs step `step` (global, from first_step, < first_step + steps; the
 * data and AdamW's counter follow it): zeroes the gradients, draws the
 * step's data, waits for every rank (a barrier) and runs the op list. On a
 * failure st->msg says "in op I (...) of step K" (and ctl->timed_out tells
 * a timeout). */
int oc_runner_step(struct oc_runner *r, int64_t step, struct oc_status *st);
/* This rank's weights (the arena p.w) in host memory, after the last step. */
const float *oc_runner_weights(struct oc_runner *r);
void oc_runner_free(struct oc_runner *r);

/* Parameters that a rank of `stage` holds (core/placement.h): its layers
 * in chunk order, the embedding on the embedding's stage, the head on the
 * head's. layers: L/p entries. */
void oc_runner_param_opts(const struct oc_layout *l, const struct oc_model *m,
                          int64_t tp_rank, int64_t stage, uint64_t seed,
                          int64_t *layers, struct oc_params_opts *o);

/* Metrics of one step from every rank's op times (start[r][i], end[r][i],
 * inner[r][i], seconds from rank r's step start, after the step's barrier)
 * and memory high-water marks (peak_mem[r], NULL: 0): they are put in a
 * timeline (core/timeline.h) and measured by core/step_metrics.h's
 * definitions, the simulator's. Sets each SEND's end to its arrival (the
 * receiver's RECV end), as timeline.h wants. Fills mt's step time and
 * stage figures (oc_metrics_init first; oc_metrics_finish after). */
void oc_runner_step_metrics(const struct oc_schedule *s, double *const *start,
                            double *const *end, double *const *inner,
                            const double *peak_mem, struct oc_metrics *mt);

#endif
