/* gpt.h: the executor's model: one tensor-parallel shard of a decoder-only
 * transformer (a generative pretrained transformer: GPT-2's block or
 * Llama's), part by part as the schedule (core/schedule.h) names the
 * parts, written once against the primitive-kernel table (kernels/ops.h),
 * so that every backend runs the same model: the cpu kernels (kernels/cpu/,
 * fp32, OpenBLAS) and the cuda kernels (kernels/cuda/, cuBLAS, fp32 or bf16
 * GEMM operands).
 *
 * What this file is: embedding, attention, MLP and LM head + cross-entropy
 * forward and backward (and the recompute of each) for one micro-batch on
 * one TP rank, with Megatron-LM tensor parallelism (Shoeybi et al. 2019):
 * column-parallel QKV and MLP up projection, row-parallel output
 * projections, vocab-parallel embedding, column-parallel LM head and
 * vocab-parallel cross-entropy; which kernel runs when, on which buffers,
 * and where the TP collectives fall (all-reduces, or under sequence
 * parallelism all-gathers and reduce-scatters). What it is not: numerics
 * (the kernels'), a runner (it does not send, receive, walk the op lists
 * or own buffers; a runner calls one function per COMPUTE op and hands it
 * the TP group's collectives, see "Communication" below) or a backend.
 *
 *   struct oc_kernels k = backend.kernels;       // or oc_kernels_cpu()
 *   oc_gpt_dims_layout(&d, &model, &layout, tp_rank, &st);
 *   oc_gpt_reserve(&k, &d, &st);                  // the kernels' scratch
 *   float *work = alloc(oc_gpt_work_floats(&k, &d) floats);
 *   struct oc_gpt_call c = {0};
 *   while (oc_gpt_attn_fwd(&k, &c, &d, &p, layer, &act, out, work) == OC_GPT_REDUCE)
 *       collective(c.coll, c.buf, c.shard, c.n, c.op);
 *
 * Families. The parts are the same for every family: the few operations
 * in which a family's block differs (the norm, the position signal inside
 * attention, the MLP's activation) are one table per family (block.h),
 * chosen by oc_gpt_dims_init from the model's arch; the tensors a family
 * lacks (Llama's biases, its position table) are absent from its
 * parameter table (params.c) and reach the kernels as NULL. A runner
 * (exec/runner.c), the calibrations and the tests call these functions
 * whatever the family, and the all-reduces are the same. (The names keep
 * the prefix of the first family.)
 *
 * How a new kernel or family plugs in:
 *   a kernel   one entry in struct oc_kernel_ops (kernels/ops.h) saying
 *              what it computes; its loop in kernels/cpu/ops_cpu.c (the
 *              reference); its launcher in kernels/cuda/ and its line in
 *              kernels/cuda/ops_cuda.c (precision rules there); a
 *              comparison in kernels/test_kernels.c and a by-hand check in
 *              tests/test_kernels_*.c; any scratch it needs sized through
 *              struct oc_kernel_sizes (filled by oc_gpt_reserve).
 *   a family   its struct oc_gpt_block (block.h) in a file of its own (as
 *              llama.c), its row in gpt_dims.c's table of blocks, its tensor
 *              table in params.c. Nothing here may loop over tensor
 *              elements, call BLAS or CUDA, or ask which kernels it runs
 *              on.
 *
 * Letters (as llm.c): B = micro-batch size, T = sequence length, N = B*T
 * tokens, C = hidden size, NH = heads, NKV = key-value heads, g = NH/NKV
 * query heads per KV head, HS = C/NH head size, F = MLP intermediate
 * size, V = vocabulary, P = positions, L = layers; t = TP size, r = TP
 * rank, nh = NH/t local heads, nkv = NKV/t local KV heads, f = F/t, v =
 * V/t local vocab rows starting at v0 = r*v; up = 1 (a GELU MLP) or 2
 * (SwiGLU's gate | up).
 *
 * The models. GPT-2 (Radford et al. 2019): x = wte[tok] + wpe[pos]; per
 * layer x += attnproj(attn(ln1(x))), x += fcproj(gelu(fc(ln2(x)))) with
 * pre-LayerNorm (eps 1e-5), causal softmax attention scaled by 1/sqrt(HS),
 * GELU in its tanh form (Hendrycks & Gimpel 2016); logits = lnf(x) lmw^T
 * (no bias); loss = mean cross-entropy. Llama (Touvron et al. 2023;
 * Hugging Face's LlamaForCausalLM): x = wte[tok]; per layer x +=
 * o(attn(rope(qkv(rms1(x))))) with grouped-query attention (Ainslie et al.
 * 2023) and rotary embeddings on q and k (Su et al. 2021; rope_theta,
 * rope_scaling), x += down(silu(gate(rms2(x))) * up(rms2(x))) with gate
 * and up as one column-parallel GEMM (Megatron-LM's linear_fc1); RMSNorm
 * with the config's eps; no biases; an untied head unless the config ties
 * it. Megatron-LM splits whole KV groups over TP, so t must divide NKV
 * (as the layout rules ask). What the executor leaves out: dropout (it
 * runs dropout-free even when the model config has dropout, so that every
 * layout gives the same numbers), vocabulary padding (V must divide by
 * t).
 *
 * Attention (the layout's knob, core/layout.h): flash (the default) calls
 * the kernel table's fused entries (flash_attn_fwd / flash_attn_bwd) and
 * keeps the log-sum-exp (B,nh,T) for the backward; classic calls attn_fwd
 * / attn_bwd and keeps the probabilities (B,nh,T,T). The two are the same
 * function summed in another order (the flash backward's D = dy . y for
 * the classic sum(att * datt)): gradients agree to ~1e-6 relative, not
 * bitwise (on the cpu kernels the fused forward is the classic loop, so a
 * step's losses are bitwise alike until the first update).
 *
 * Sequence parallelism (Korthikanti et al. 2022, section 4.2.2;
 * Megatron-LM's sequence_parallel), with t > 1: the residual stream
 * between the tensor-parallel regions is split over the TP ranks along
 * the tokens. Megatron splits the sequence dimension of its [s,b,h]
 * activations; ours are (B,T,C) row-major, so rank r holds the N/t
 * consecutive token rows [r N/t, (r+1) N/t) of the N = B*T rows (d->n
 * rows from d->s0): the same communication volumes, and every collective
 * moves one contiguous block per rank. Every part works on that split:
 * the embedding's positions are added by row i's position i mod T, RoPE
 * turns q and k after the all-gather (on all N rows), and the norms, the
 * row-parallel biases and the residual adds run on the rank's rows. The
 * all-reduces become an all-gather before each column-parallel region
 * (QKV, the MLP's up projection, the LM head) of the norm's output, and a
 * reduce-scatter after each row-parallel one (attention and MLP output
 * projections) and of the vocab-parallel embedding's output; backward
 * does the conjugates (all-gather of the output gradient, reduce-scatter
 * of the input gradient). The gathered norm output is kept whole for the
 * weight gradient of the column-parallel GEMM (Megatron-LM gathers it
 * again in backward instead, which the schedule does not list; so the
 * act's `ln` is (N,C) where core/memory.c counts (N/t,C)). The norms'
 * gains and biases then get a partial gradient on each TP rank (their
 * rows' share): a runner sums them over the TP group before the DP
 * reduction (oc_gpt_sp_partial_grad; Megatron-LM's finalize_model_grads).
 * The row-parallel biases' gradients come from the gathered output
 * gradient: whole on every rank.
 *
 * Communication. Every part function takes a struct oc_gpt_call, and runs
 * in one of two modes:
 *
 *   callback mode (an MPI or NCCL runner): c.comm points to the TP group's
 *   collectives; the part does its collectives through them and returns
 *   OC_GPT_DONE (0), or -1 when a callback failed.
 *
 *     struct oc_gpt_comm tp = {&my_tp_group, my_allreduce, my_allgather,
 *                              my_reduce_scatter};  // the last two: SP only
 *     struct oc_gpt_call c = {.comm = &tp};
 *     if (oc_gpt_attn_fwd(&k, &c, &d, &p, layer, &act, out, work) != 0) ...
 *
 *   step mode (c.comm NULL: a runner that times each collective as its own
 *   op, or an in-process test running t shards in lockstep): the part stops
 *   at each communication point and returns OC_GPT_REDUCE (1) with c.coll,
 *   c.buf, c.shard, c.n and c.op naming the collective to do over the TP
 *   group; the caller does it and calls the same function again with the
 *   same arguments and the same call struct, until OC_GPT_DONE.
 *
 *     struct oc_gpt_call c = {0};
 *     while (oc_gpt_attn_fwd(&k, &c, &d, &p, layer, &act, out, work) == OC_GPT_REDUCE)
 *         collective(c.coll, c.buf, c.shard, c.n, c.op); // every TP rank, same order
 *
 *   OC_GPT_ALLREDUCE      buf[0..n) reduced (c.op) in place.
 *   OC_GPT_ALLGATHER      in place: on entry this rank's n/t floats are at
 *                         c.shard = buf + tp_rank * n/t; on return buf
 *                         holds every rank's, in rank order.
 *   OC_GPT_REDUCESCATTER  buf[0..n) summed over the ranks; this rank's n/t
 *                         floats of the sum (rows from tp_rank * n/t) are
 *                         written to c.shard, which does not overlap buf.
 *
 * With t = 1 no part asks for anything. The collectives each part asks
 * for are the TP collectives that oc_schedule_build emits around that
 * part's COMPUTE op (OC_GRAIN_LAYER), in order; n counts the N*C floats
 * of a (B,T,C) activation, or the N of a (B,T) one:
 *
 *   schedule COMPUTE op         call                without SP     with SP
 *   fwd EMBED                   oc_gpt_embed_fwd    AR sum (B,T,C)  RS (B,T,C)
 *   fwd / recompute ATTN        oc_gpt_attn_fwd     AR sum (B,T,C)  AG, RS
 *   fwd / recompute MLP         oc_gpt_mlp_fwd      AR sum (B,T,C)  AG, RS
 *   fwd HEAD                    oc_gpt_head_fwd     3 AR (B,T): max, sum, sum;
 *                                                                   with SP an AG
 *                                                                   (B,T,C) first
 *   bwd HEAD                    oc_gpt_head_bwd     AR sum (B,T,C)  RS
 *   bwd MLP                     oc_gpt_mlp_bwd      AR sum (B,T,C)  AG, RS
 *   recompute ATTN (selective)  oc_gpt_attn_scores  none
 *   bwd ATTN                    oc_gpt_attn_bwd     AR sum (B,T,C)  AG, RS
 *   bwd EMBED                   oc_gpt_embed_bwd    none            AG
 *   optimizer                   oc_params_adamw (params.h, the table's adamw)
 *
 * The schedule lists a part's all-gather just before its COMPUTE op (the
 * part starts with it: the norm on its rows, or nothing in backward, then
 * the gather) and the rest just after. A part may do local work after a
 * collective (adding the row-parallel bias and the residual, the norm's
 * backward), so in step mode a part is finished only at OC_GPT_DONE.
 * Reductions must be done in rank order or another fixed order for
 * bitwise reproducibility; c.nreduce counts the collectives the current
 * part asked for.
 *
 * Buffers. The caller owns every buffer. Activations kept for backward are
 * per (micro-batch, layer) structs of pointers (oc_gpt_*_act), laid out by
 * the *_bind functions over caller memory; the part's input `in` is given
 * separately so a runner can place it where the previous part (or a RECV)
 * writes it. The residual stream (a part's `in` and `out`, `dout` and
 * `din`, a pipeline message) is oc_gpt_stream_floats: (N,C), or the
 * rank's (N/t,C) rows under sequence parallelism. `work` is scratch for
 * one call (oc_gpt_work_floats, its pieces aligned as the kernels ask):
 * every backward uses it, a forward only under sequence parallelism (the
 * row-parallel output before its reduce-scatter; NULL is fine without
 * SP); it must not be touched between the steps of one call. Pointers are
 * the kernels' memory (device memory for the cuda kernels: tokens,
 * targets and losses too); a part's calls are ordered as the kernels
 * order them (on the cuda kernels' stream, so a collective the caller
 * does must be on that stream too).
 *
 * Recompute (the layout's recompute mode):
 *   none       keep every act struct from forward to backward.
 *   full       keep only each layer's attention input (attn act `in`, a
 *              residual stream); bind the rest of both parts' acts to
 *              scratch shared by all layers. Before layer l's backward (the schedule's
 *              RECOMPUTE ATTN, RECOMPUTE MLP ops) call oc_gpt_attn_fwd with
 *              `out` = the MLP act's `in`, then oc_gpt_mlp_fwd with a
 *              scratch `out`: the same functions as forward, TP collectives
 *              included, so the backward sees bitwise the same activations.
 *   selective  keep the attention act but point its scores (`att`, or
 *              `lse` under flash: the last field, oc_gpt_att_floats) at
 *              scratch (oc_gpt_attn_act_scores_at); before oc_gpt_attn_bwd
 *              call oc_gpt_attn_scores (the schedule's RECOMPUTE ATTN op:
 *              QK^T and softmax V again, 4 b s^2 h / t FLOPs) to rebuild
 *              them from `qkv`: the classic forward's probabilities, or
 *              under flash the fused forward again, which rewrites `y`
 *              with the same bits and the scratch's log-sum-exp (so a
 *              flash layout keeps no per-head statistics either, as
 *              core/memory.c counts selective recompute).
 *
 * Gradients. Weight gradients accumulate (+=) into p->g over micro-batches
 * (oc_params_zero_grad starts a step); input gradients (din) are written.
 * The head's backward scales the loss gradient by grad_scale, which a
 * runner sets to 1/(global batch * T) so that the DP all-reduce (sum) of
 * p->g over replicas is the gradient of the mean loss of the global batch,
 * whatever the layout. Replicated parameters (norms, row-parallel biases,
 * wpe) get identical gradients on every TP rank; no TP reduction is needed
 * for them, except the norms' under sequence parallelism (see there).
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

struct oc_gpt_block; /* the family's operations: block.h */

/* Sizes of one micro-batch on one TP rank, the model's family and the
 * layout's knobs the parts follow. */
struct oc_gpt_dims {
    int64_t B, T;               /* micro-batch size, sequence length */
    int64_t C, NH, NKV, HS, F, V, P, L;
    int64_t tp, tp_rank;
    int64_t nh;                 /* NH/t heads here: [tp_rank*nh, ...) */
    int64_t nkv, g;             /* NKV/t KV heads here; g = nh/nkv */
    int64_t f;                  /* F/t MLP columns here */
    int64_t v, v0;              /* V/t vocab rows here, from v0 */
    int flash;                  /* fused attention (kernels/ops.h's flash_attn_*) */
    int sp;                     /* sequence parallel (t > 1) */
    int64_t n, s0;              /* residual-stream rows here: N, from 0; under
                                   SP N/t, from tp_rank*N/t */
    const struct oc_gpt_block *blk; /* the family (block.h) */
    float eps;                  /* RMSNorm's eps (Llama) */
    struct oc_rope rope;        /* rotary frequencies (Llama; kernels/ops.h) */
};

/* Checks the model (oc_params_check_model and the family's own check) and
 * T <= P. Classic attention, no sequence parallelism (oc_gpt_dims_knobs
 * sets them). */
int oc_gpt_dims_init(struct oc_gpt_dims *d, const struct oc_model *m,
                     int64_t tp, int64_t tp_rank, int64_t B, int64_t T,
                     struct oc_status *st);
/* The layout's attention knob and sequence parallelism (in effect for
 * t > 1 only; asks that t divide B*T, as the layout rules' t | T does). */
void oc_gpt_dims_knobs(struct oc_gpt_dims *d, enum oc_attention attention, int sp);
/* oc_gpt_dims_init for layout l's TP size, micro-batch and sequence, then
 * its knobs: the dims a runner uses. */
int oc_gpt_dims_layout(struct oc_gpt_dims *d, const struct oc_model *m,
                       const struct oc_layout *l, int64_t tp_rank,
                       struct oc_status *st);

/* Is this layout one the executor runs? Refuses blocks other than GPT-2's
 * and Llama's (and GQA in GPT-2 blocks), rope_scaling types other than
 * linear and llama3, sizes that do not divide by t (KV heads included) and
 * sequences longer than P. Every recompute mode, both attention kernels
 * and sequence parallelism run. */
int oc_gpt_check_layout(const struct oc_model *m, const struct oc_layout *l,
                        struct oc_status *st);

/* ------------------------------------------------------------------ */
/* Communication                                                        */

enum oc_gpt_reduce { OC_GPT_SUM, OC_GPT_MAX };
enum oc_gpt_coll { OC_GPT_ALLREDUCE, OC_GPT_ALLGATHER, OC_GPT_REDUCESCATTER };

struct oc_gpt_comm {
    void *ctx;
    /* In-place all-reduce of buf[0..n) over the TP group; 0 or -1. */
    int (*allreduce)(void *ctx, float *buf, int64_t n, enum oc_gpt_reduce op);
    /* Sequence parallelism only (NULL otherwise), as step mode's
     * OC_GPT_ALLGATHER and OC_GPT_REDUCESCATTER (sum); 0 or -1. */
    int (*allgather)(void *ctx, float *buf, int64_t n);
    int (*reduce_scatter)(void *ctx, const float *buf, float *shard, int64_t n);
};

#define OC_GPT_DONE 0
#define OC_GPT_REDUCE 1 /* step mode: a collective to do (c.coll) */

struct oc_gpt_call {
    const struct oc_gpt_comm *comm; /* NULL: step mode */
    /* step mode, after OC_GPT_REDUCE: the collective to do ("Communication") */
    enum oc_gpt_coll coll;
    float *buf;
    float *shard; /* ALLGATHER, REDUCESCATTER: this rank's n/t floats */
    int64_t n;
    enum oc_gpt_reduce op;
    int64_t nreduce; /* collectives asked for by the current (or last) part */
    /* internal: where the part resumes (0: not started) and which part */
    int step;
    int part;
};

/* ------------------------------------------------------------------ */
/* Activations kept for backward. "rows here": N, or N/t under SP.      */

struct oc_gpt_attn_act {
    float *in;    /* (rows here, C) input, the residual stream */
    float *ln;    /* (B,T,C) ln1(in), all N rows (gathered under SP) */
    float *mean;  /* (rows here); NULL for RMSNorm */
    float *rstd;  /* (rows here) */
    float *qkv;   /* (B,T,nkv,g+2,HS) local KV groups' q, k, v (q and k
                     turned by RoPE in Llama) */
    float *y;     /* (B,T,nh*HS) attention output, before the projection */
    /* the scores, the last field; one of the two (the other NULL): */
    float *att;   /* classic: (B,nh,T,T) causal softmax probabilities */
    float *lse;   /* flash: (B,nh,T) softmax log-sum-exp */
};

struct oc_gpt_mlp_act {
    float *in;    /* (rows here, C) input, the residual stream */
    float *ln;    /* (B,T,C) ln2(in), all N rows */
    float *mean;  /* (rows here); NULL for RMSNorm */
    float *rstd;  /* (rows here) */
    float *h;     /* (B,T,up*f) fc output (gate | up), before the activation */
    float *hg;    /* (B,T,f) GELU(h), or silu(gate) * up */
};

struct oc_gpt_head_act {
    float *in;     /* (rows here, C) input, the last layer's output */
    float *ln;     /* (B,T,C) lnf(in), all N rows */
    float *mean;   /* (rows here); NULL for RMSNorm */
    float *rstd;   /* (rows here) */
    float *probs;  /* (B,T,v) local logits, softmax probabilities after fwd */
    float *lmax;   /* (B,T) max logit over the whole vocabulary */
    float *sumexp; /* (B,T) sum of exp(logit - max) over the vocabulary */
    float *tlogit; /* (B,T) target logit - max */
};

/* Floats of the residual stream here: N*C, or N*C/t under SP. */
int64_t oc_gpt_stream_floats(const struct oc_gpt_dims *d);
/* Floats of each act struct, `in` excluded; bind lays the fields out in mem
 * in the order above. */
int64_t oc_gpt_attn_act_floats(const struct oc_gpt_dims *d);
int64_t oc_gpt_att_floats(const struct oc_gpt_dims *d); /* the scores field */
int64_t oc_gpt_mlp_act_floats(const struct oc_gpt_dims *d);
int64_t oc_gpt_head_act_floats(const struct oc_gpt_dims *d);
void oc_gpt_attn_act_bind(struct oc_gpt_attn_act *a, const struct oc_gpt_dims *d,
                          float *in, float *mem);
/* Points the scores field (att or lse) at mem (selective recompute). */
void oc_gpt_attn_act_scores_at(struct oc_gpt_attn_act *a, const struct oc_gpt_dims *d,
                               float *mem);
void oc_gpt_mlp_act_bind(struct oc_gpt_mlp_act *a, const struct oc_gpt_dims *d,
                         float *in, float *mem);
void oc_gpt_head_act_bind(struct oc_gpt_head_act *a, const struct oc_gpt_dims *d,
                          float *in, float *mem);

/* Floats one layer keeps from its forward to its backward under recompute
 * mode rc, its share of a runner's activation block: none, both parts'
 * inputs (the residual stream) and acts; selective, the same without the
 * scores (a scratch shared by every layer); full, the attention input
 * alone (the rest is a scratch shared by every layer, "Recompute"). Against
 * core/memory.c's oc_mem_layer_activation_bytes in fp32 (e = 4), no
 * dropout: equal under full recompute; else 4 bytes times these floats
 * more (tests/test_exec_zero1.c): the norms' statistics (2 norms x 2 or 1
 * floats a row here), which memory.c leaves out, and under sequence
 * parallelism the gathered norm outputs kept whole (2 (N - N/t) C: see
 * "Sequence parallelism"). */
int64_t oc_gpt_layer_kept_floats(const struct oc_gpt_dims *d, enum oc_recompute rc);

/* Floats of `work` for any call of dims d on kernels k. */
int64_t oc_gpt_work_floats(const struct oc_kernels *k, const struct oc_gpt_dims *d);

/* Is tensor kind k's gradient only this TP rank's share after the parts
 * (the norms' gains and biases under SP: each rank's rows), to be summed
 * over the TP group before the DP reduction? */
int oc_gpt_sp_partial_grad(const struct oc_gpt_dims *d, enum oc_param_kind k);

/* Tells the kernels the largest calls the parts of dims d make (their
 * scratch: struct oc_kernel_sizes), once before the first part. 0, or -1
 * with st->msg (out of memory). */
int oc_gpt_reserve(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                   struct oc_status *st);

/* ------------------------------------------------------------------ */
/* Parts. `layer` is the global layer; p must hold it (and the embedding
 * or head for those parts). Return OC_GPT_DONE, OC_GPT_REDUCE (step mode)
 * or -1 (a callback failed; the call is reset). Shapes: "Buffers". */

/* out (rows here, C) = wte[tokens] (+ wpe[position]) where the model has
 * positions; tokens (B,T) in [0, V). */
int oc_gpt_embed_fwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                     const struct oc_gpt_dims *d, const struct oc_params *p,
                     const int32_t *tokens, float *out, float *work);
/* dwte (and dwpe) += from dout (rows here, C). */
int oc_gpt_embed_bwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                     const struct oc_gpt_dims *d, struct oc_params *p,
                     const int32_t *tokens, const float *dout, float *work);

/* out = in + attnproj(attn(ln1(in))) (Llama: RoPE on q and k before attn);
 * out must not alias a->in. */
int oc_gpt_attn_fwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, const struct oc_params *p,
                    int64_t layer, struct oc_gpt_attn_act *a, float *out,
                    float *work);
/* a's scores from a->qkv (also part of oc_gpt_attn_fwd): selective
 * recompute (under flash, y again too: "Recompute"). */
void oc_gpt_attn_scores(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                        struct oc_gpt_attn_act *a);
/* din from dout; din may equal dout. */
int oc_gpt_attn_bwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, struct oc_params *p,
                    int64_t layer, const struct oc_gpt_attn_act *a,
                    const float *dout, float *din, float *work);

/* out = in + fcproj(act(fc(ln2(in)))), act GELU or SwiGLU; out must not
 * alias a->in. */
int oc_gpt_mlp_fwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                   const struct oc_gpt_dims *d, const struct oc_params *p,
                   int64_t layer, struct oc_gpt_mlp_act *a, float *out,
                   float *work);
int oc_gpt_mlp_bwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                   const struct oc_gpt_dims *d, struct oc_params *p,
                   int64_t layer, const struct oc_gpt_mlp_act *a,
                   const float *dout, float *din, float *work);

/* losses (B,T): cross-entropy of each token, -ln softmax(logits)[target]
 * over the whole vocabulary (Megatron-LM vocab-parallel cross-entropy:
 * all-reduce max of the local maxima, sum of the target logit, sum of the
 * local sums of exponentials). targets (B,T) in [0, V). Identical on every
 * TP rank (all N tokens, with or without SP). */
int oc_gpt_head_fwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, const struct oc_params *p,
                    struct oc_gpt_head_act *a, const int32_t *targets,
                    float *losses);
/* din (rows here, C) = d(grad_scale * sum of losses)/d(in); dlnf, dlmw += . */
int oc_gpt_head_bwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, struct oc_params *p,
                    const struct oc_gpt_head_act *a, const int32_t *targets,
                    float grad_scale, float *din, float *work);

#endif
