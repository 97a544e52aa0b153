/* gpt.h: the executor's model: one tensor-parallel shard of a GPT-style
 * decoder, part by part as the schedule (core/schedule.h) names the parts,
 * written once against the primitive-kernel table (kernels/ops.h), so that
 * every backend runs the same model: the cpu kernels (kernels/cpu/, fp32,
 * OpenBLAS) and the cuda kernels (kernels/cuda/, cuBLAS, fp32 or bf16 GEMM
 * operands).
 *
 * What this file is: embedding, attention, MLP and LM head + cross-entropy
 * forward and backward (and the recompute of each) for one micro-batch on
 * one TP rank, with Megatron-LM tensor parallelism (Shoeybi et al. 2019):
 * column-parallel QKV and MLP up projection, row-parallel output
 * projections, vocab-parallel embedding, column-parallel LM head and
 * vocab-parallel cross-entropy; which kernel runs when, on which buffers,
 * and where the all-reduces fall. What it is not: numerics (the kernels'),
 * a runner (it does not send, receive, walk the op lists or own buffers; a
 * runner calls one function per COMPUTE op and hands it the TP group's
 * all-reduces, see "Communication" below) or a backend.
 *
 *   struct oc_kernels k = backend.kernels;       // or oc_kernels_cpu()
 *   oc_gpt_dims_init(&d, &model, tp, tp_rank, B, T, &st);
 *   oc_gpt_reserve(&k, &d, &st);                  // the kernels' scratch
 *   float *work = alloc(oc_gpt_work_floats(&k, &d) floats);
 *   struct oc_gpt_call c = {0};
 *   while (oc_gpt_attn_fwd(&k, &c, &d, &p, layer, &act, out) == OC_GPT_REDUCE)
 *       allreduce(c.buf, c.n, c.op);
 *
 * How a new kernel or model plugs in:
 *   a kernel   one entry in struct oc_kernel_ops (kernels/ops.h) saying
 *              what it computes; its loop in kernels/cpu/ops_cpu.c (the
 *              reference); its launcher in kernels/cuda/ and its line in
 *              kernels/cuda/ops_cuda.c (precision rules there); a
 *              comparison in kernels/test_kernels.c and a by-hand check in
 *              tests/test_kernels_cpu.c; any scratch it needs sized
 *              through struct oc_kernel_sizes (filled by oc_gpt_reserve).
 *   a model    Llama-style blocks (RMSNorm, SwiGLU, RoPE, grouped-query
 *              attention) are variants of these parts: this file picks the
 *              kernels from struct oc_model's fields (the norm, the MLP's
 *              activation, the position embedding, the key-value heads),
 *              the act structs grow the fields a variant keeps (their
 *              *_floats and *_bind below), the new kernels join the table
 *              (rmsnorm, swiglu, rope, attention over fewer KV heads), and
 *              the parameter table (params.c) lists the variant's tensors
 *              (a gate matrix, norms without bias, the KV heads' rows).
 *              The part functions, their all-reduces and the buffer sizes
 *              the runner (exec/runner.c), the calibrations and the
 *              backends take from here stay as they are, so none of those
 *              changes. Nothing here may loop over tensor elements, call
 *              BLAS or CUDA, or ask which kernels it runs on.
 *
 * Letters (as llm.c): B = micro-batch size, T = sequence length, N = B*T
 * tokens, C = hidden size, NH = heads, HS = C/NH head size, F = MLP
 * intermediate size, V = vocabulary, P = positions, L = layers; t = TP size,
 * r = TP rank, nh = NH/t local heads, f = F/t, v = V/t local vocab rows
 * starting at v0 = r*v.
 *
 * The model (Radford et al. 2019, GPT-2): x = wte[tok] + wpe[pos]; per
 * layer x += attnproj(attn(ln1(x))), x += fcproj(gelu(fc(ln2(x)))) with
 * pre-LayerNorm (eps 1e-5), causal softmax attention scaled by 1/sqrt(HS),
 * GELU in its tanh form (Hendrycks & Gimpel 2016); logits = lnf(x) lmw^T
 * (no bias); loss = mean cross-entropy. What the executor leaves out:
 * dropout (it runs dropout-free even when the model config has dropout, so
 * that every layout gives the same numbers), sequence parallelism and
 * grouped-query attention (both refused with a message, see
 * oc_gpt_check_layout), vocabulary padding (V must divide by t).
 *
 * Communication. Every part function takes a struct oc_gpt_call, and runs
 * in one of two modes:
 *
 *   callback mode (an MPI or NCCL runner): c.comm points to the TP group's
 *   all-reduce; the part does its all-reduces through it and returns
 *   OC_GPT_DONE (0), or -1 when the callback failed.
 *
 *     struct oc_gpt_comm tp = {&my_tp_group, my_allreduce};
 *     struct oc_gpt_call c = {.comm = &tp};
 *     if (oc_gpt_attn_fwd(&k, &c, &d, &p, layer, &act, out) != 0) ...
 *
 *   step mode (c.comm NULL: a runner that times each collective as its own
 *   op, or an in-process test running t shards in lockstep): the part stops
 *   at each communication point and returns OC_GPT_REDUCE (1) with c.buf,
 *   c.n and c.op naming the all-reduce to do over the TP group in place;
 *   the caller does it and calls the same function again with the same
 *   arguments and the same call struct, until OC_GPT_DONE.
 *
 *     struct oc_gpt_call c = {0};
 *     while (oc_gpt_attn_fwd(&k, &c, &d, &p, layer, &act, out) == OC_GPT_REDUCE)
 *         allreduce(c.buf, c.n, c.op);         // every TP rank, same order
 *
 * With t = 1 no part asks for anything. The all-reduces each part asks for
 * are the TP collectives that oc_schedule_build emits right after that
 * part's COMPUTE op (OC_GRAIN_LAYER, no sequence parallelism), in order:
 *
 *   schedule COMPUTE op         call                     all-reduces (t > 1)
 *   fwd EMBED                   oc_gpt_embed_fwd         1 sum (B,T,C)
 *   fwd / recompute ATTN        oc_gpt_attn_fwd          1 sum (B,T,C)
 *   fwd / recompute MLP         oc_gpt_mlp_fwd           1 sum (B,T,C)
 *   fwd HEAD                    oc_gpt_head_fwd          3: max, sum, sum (B,T)
 *   bwd HEAD                    oc_gpt_head_bwd          1 sum (B,T,C)
 *   bwd MLP                     oc_gpt_mlp_bwd           1 sum (B,T,C)
 *   recompute ATTN (selective)  oc_gpt_attn_scores       none
 *   bwd ATTN                    oc_gpt_attn_bwd          1 sum (B,T,C)
 *   bwd EMBED                   oc_gpt_embed_bwd         none
 *   optimizer                   oc_params_adamw (params.h, the table's adamw)
 *
 * A part may do local work after an all-reduce (adding the row-parallel
 * bias and the residual, the LayerNorm backward), so in step mode a part
 * is finished only at OC_GPT_DONE. All-reduces must be done in rank order
 * or another fixed order for bitwise reproducibility; c.nreduce counts the
 * all-reduces the current part asked for.
 *
 * Buffers. The caller owns every buffer. Activations kept for backward are
 * per (micro-batch, layer) structs of pointers (oc_gpt_*_act), laid out by
 * the *_bind functions over caller memory; the part's input `in` is given
 * separately so a runner can place it where the previous part (or a RECV)
 * writes it. `work` is scratch for one backward call (oc_gpt_work_floats,
 * its pieces aligned as the kernels ask); it must not be touched between
 * the steps of one call. Pointers are the kernels' memory (device memory
 * for the cuda kernels: tokens, targets and losses too); a part's calls
 * are ordered as the kernels order them (on the cuda kernels' stream, so
 * an all-reduce the caller does must be on that stream too).
 *
 * Recompute (the layout's recompute mode):
 *   none       keep every act struct from forward to backward.
 *   full       keep only each layer's attention input (attn act `in`, B*T*C
 *              floats); bind the rest of both parts' acts to scratch shared
 *              by all layers. Before layer l's backward (the schedule's
 *              RECOMPUTE ATTN, RECOMPUTE MLP ops) call oc_gpt_attn_fwd with
 *              `out` = the MLP act's `in`, then oc_gpt_mlp_fwd with a
 *              scratch `out`: the same functions as forward, TP all-reduces
 *              included, so the backward sees bitwise the same activations.
 *   selective  keep the attention act but point its `att` (the last field,
 *              oc_gpt_att_floats) at scratch; call oc_gpt_attn_scores
 *              before oc_gpt_attn_bwd to rebuild it from `qkv`.
 *
 * Gradients. Weight gradients accumulate (+=) into p->g over micro-batches
 * (oc_params_zero_grad starts a step); input gradients (din) are written.
 * The head's backward scales the loss gradient by grad_scale, which a
 * runner sets to 1/(global batch * T) so that the DP all-reduce (sum) of
 * p->g over replicas is the gradient of the mean loss of the global batch,
 * whatever the layout. Replicated parameters (norms, row-parallel biases,
 * wpe) get identical gradients on every TP rank; no TP reduction is needed
 * for them.
 *
 * Determinism: the cpu kernels' loops are sequential and in a fixed order,
 * and there is no dropout, so with one OpenBLAS thread
 * (openblas_set_num_threads(1) or OPENBLAS_NUM_THREADS=1, as the tests do)
 * a layout's results are bitwise reproducible; with more threads OpenBLAS
 * may split its sums differently. Across TP sizes the sums are split
 * differently by design: results agree to ~1e-6 relative (the tests ask
 * 1e-5), not bitwise.
 */
#ifndef OC_EXEC_MODEL_GPT_H
#define OC_EXEC_MODEL_GPT_H

#include <stdint.h>

#include "layout.h"
#include "model.h"
#include "ops.h"
#include "params.h"
#include "status.h"

/* Sizes of one micro-batch on one TP rank. */
struct oc_gpt_dims {
    int64_t B, T;               /* micro-batch size, sequence length */
    int64_t C, NH, HS, F, V, P, L;
    int64_t tp, tp_rank;
    int64_t nh;                 /* NH/t heads here: [tp_rank*nh, ...) */
    int64_t f;                  /* F/t MLP columns here */
    int64_t v, v0;              /* V/t vocab rows here, from v0 */
};

/* Checks the model (oc_params_check_model) and T <= P. */
int oc_gpt_dims_init(struct oc_gpt_dims *d, const struct oc_model *m,
                     int64_t tp, int64_t tp_rank, int64_t B, int64_t T,
                     struct oc_status *st);

/* Is this layout one the executor runs? Refuses sequence parallelism (with
 * t > 1), grouped-query attention, non-GPT blocks, sizes that do not
 * divide by t and sequences longer than P. Every recompute mode runs;
 * flash and classic attention run the same (classic) math. */
int oc_gpt_check_layout(const struct oc_model *m, const struct oc_layout *l,
                        struct oc_status *st);

/* ------------------------------------------------------------------ */
/* Communication                                                        */

enum oc_gpt_reduce { OC_GPT_SUM, OC_GPT_MAX };

struct oc_gpt_comm {
    void *ctx;
    /* In-place all-reduce of buf[0..n) over the TP group; 0 or -1. */
    int (*allreduce)(void *ctx, float *buf, int64_t n, enum oc_gpt_reduce op);
};

#define OC_GPT_DONE 0
#define OC_GPT_REDUCE 1

struct oc_gpt_call {
    const struct oc_gpt_comm *comm; /* NULL: step mode */
    /* step mode, after OC_GPT_REDUCE: the all-reduce to do */
    float *buf;
    int64_t n;
    enum oc_gpt_reduce op;
    int64_t nreduce; /* all-reduces asked for by the current (or last) part */
    /* internal: where the part resumes (0: not started) and which part */
    int step;
    int part;
};

/* ------------------------------------------------------------------ */
/* Activations kept for backward                                        */

struct oc_gpt_attn_act {
    float *in;    /* (B,T,C) input, the residual stream */
    float *ln;    /* (B,T,C) ln1(in) */
    float *mean;  /* (B,T) */
    float *rstd;  /* (B,T) */
    float *qkv;   /* (B,T,nh,3,HS) local heads' q, k, v */
    float *y;     /* (B,T,nh*HS) attention output, before the projection */
    float *att;   /* (B,nh,T,T) causal softmax probabilities (last field) */
};

struct oc_gpt_mlp_act {
    float *in;    /* (B,T,C) input, the residual stream */
    float *ln;    /* (B,T,C) ln2(in) */
    float *mean;  /* (B,T) */
    float *rstd;  /* (B,T) */
    float *h;     /* (B,T,f) fc output, before GELU */
    float *hg;    /* (B,T,f) GELU(h) */
};

struct oc_gpt_head_act {
    float *in;     /* (B,T,C) input, the last layer's output */
    float *ln;     /* (B,T,C) lnf(in) */
    float *mean;   /* (B,T) */
    float *rstd;   /* (B,T) */
    float *probs;  /* (B,T,v) local logits, softmax probabilities after fwd */
    float *lmax;   /* (B,T) max logit over the whole vocabulary */
    float *sumexp; /* (B,T) sum of exp(logit - max) over the vocabulary */
    float *tlogit; /* (B,T) target logit - max */
};

/* Floats of each act struct, `in` excluded; bind lays the fields out in mem
 * in the order above. */
int64_t oc_gpt_attn_act_floats(const struct oc_gpt_dims *d);
int64_t oc_gpt_att_floats(const struct oc_gpt_dims *d); /* the att field */
int64_t oc_gpt_mlp_act_floats(const struct oc_gpt_dims *d);
int64_t oc_gpt_head_act_floats(const struct oc_gpt_dims *d);
void oc_gpt_attn_act_bind(struct oc_gpt_attn_act *a, const struct oc_gpt_dims *d,
                          float *in, float *mem);
void oc_gpt_mlp_act_bind(struct oc_gpt_mlp_act *a, const struct oc_gpt_dims *d,
                         float *in, float *mem);
void oc_gpt_head_act_bind(struct oc_gpt_head_act *a, const struct oc_gpt_dims *d,
                          float *in, float *mem);

/* Floats of `work` for any backward call of dims d on kernels k. */
int64_t oc_gpt_work_floats(const struct oc_kernels *k, const struct oc_gpt_dims *d);

/* Tells the kernels the largest calls the parts of dims d make (their
 * scratch: struct oc_kernel_sizes), once before the first part. 0, or -1
 * with st->msg (out of memory). */
int oc_gpt_reserve(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                   struct oc_status *st);

/* ------------------------------------------------------------------ */
/* Parts. `layer` is the global layer; p must hold it (and the embedding
 * or head for those parts). Return OC_GPT_DONE, OC_GPT_REDUCE (step mode)
 * or -1 (a callback failed; the call is reset). */

/* out (B,T,C) = wte[tokens] + wpe[0..T); tokens (B,T) in [0, V). */
int oc_gpt_embed_fwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                     const struct oc_gpt_dims *d, const struct oc_params *p,
                     const int32_t *tokens, float *out);
/* dwte, dwpe += from dout (B,T,C). */
int oc_gpt_embed_bwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                     const struct oc_gpt_dims *d, struct oc_params *p,
                     const int32_t *tokens, const float *dout);

/* out (B,T,C) = in + attnproj(attn(ln1(in))); out must not alias a->in. */
int oc_gpt_attn_fwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, const struct oc_params *p,
                    int64_t layer, struct oc_gpt_attn_act *a, float *out);
/* a->att from a->qkv (also part of oc_gpt_attn_fwd): selective recompute. */
void oc_gpt_attn_scores(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                        struct oc_gpt_attn_act *a);
/* din (B,T,C) from dout (B,T,C); din may equal dout. */
int oc_gpt_attn_bwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, struct oc_params *p,
                    int64_t layer, const struct oc_gpt_attn_act *a,
                    const float *dout, float *din, float *work);

/* out (B,T,C) = in + fcproj(gelu(fc(ln2(in)))); out must not alias a->in. */
int oc_gpt_mlp_fwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                   const struct oc_gpt_dims *d, const struct oc_params *p,
                   int64_t layer, struct oc_gpt_mlp_act *a, float *out);
int oc_gpt_mlp_bwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                   const struct oc_gpt_dims *d, struct oc_params *p,
                   int64_t layer, const struct oc_gpt_mlp_act *a,
                   const float *dout, float *din, float *work);

/* losses (B,T): cross-entropy of each token, -ln softmax(logits)[target]
 * over the whole vocabulary (Megatron-LM vocab-parallel cross-entropy:
 * all-reduce max of the local maxima, sum of the target logit, sum of the
 * local sums of exponentials). targets (B,T) in [0, V). Identical on every
 * TP rank. */
int oc_gpt_head_fwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, const struct oc_params *p,
                    struct oc_gpt_head_act *a, const int32_t *targets,
                    float *losses);
/* din (B,T,C) = d(grad_scale * sum of losses)/d(in); dlnf, dlmw += . */
int oc_gpt_head_bwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, struct oc_params *p,
                    const struct oc_gpt_head_act *a, const int32_t *targets,
                    float grad_scale, float *din, float *work);

#endif
