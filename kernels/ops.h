/* ops.h: the primitive-kernel table: every numeric operation a model of the
 * executor (exec/model/) asks of the machine it runs on, as one table of
 * functions per implementation, so that a model is written once and runs
 * on every backend.
 *
 *   struct oc_kernels k = oc_kernels_cpu();       // kernels/cpu/ops_cpu.h, or
 *   oc_cuda_kernels_init(&k, &ctx, &blas, stream, OC_CUDA_BF16);  // cuda/ops_cuda.h
 *   struct oc_kernel_sizes sz = {.rows = N, .lin_in = C, .lin_out = 3 * C, ...};
 *   if (k.ops->reserve(k.ctx, &sz, &st) != 0) ...st.msg...
 *   k.ops->layernorm_fwd(k.ctx, ln, mean, rstd, x, w, b, N, C);
 *   k.ops->linear_fwd(k.ctx, qkv, ln, qkvw, qkvb, N, C, 3 * C);
 *
 * What this file is: the operations, their shapes and what each computes,
 * in plain fp32 terms; pointers are the implementation's memory (host for
 * the cpu kernels, device for the cuda kernels) and every call is ordered
 * after the previous one (the cpu kernels finish before they return, the
 * cuda kernels are enqueued on one stream). What it is not: a backend
 * (memory allocation, communication and timing are exec/backend.h's), a
 * model (which operations, in which order, with which all-reduces between:
 * exec/model/gpt.h), or a place that names an implementation: a caller
 * holds a struct oc_kernels and never asks which one it is.
 *
 * Implementations: kernels/cpu/ (plain C11 loops and cblas_sgemm; the one
 * CPU reference, also what the cpu backend runs) and kernels/cuda/ (CUDA
 * kernels and cuBLAS; kernels_gpu compares it with the cpu table). An
 * implementation may compute in another precision where this header
 * allows it (a linear layer's operands in bf16 on the cuda kernels); every
 * input and output of the table is fp32.
 *
 * Letters (llm.c's): B = batch, T = sequence, N = B*T rows (tokens), C =
 * channels of a normalised row, nh = (query) heads, nkv = key-value heads
 * (grouped-query attention, Ainslie et al. 2023: nkv divides nh; nkv = nh
 * is multi-head attention), g = nh/nkv query heads per KV head, HS = head
 * size, IC / OC = a linear layer's input / output features, f = an MLP's
 * intermediate width, v = the local vocabulary rows [v0, v0+v) of V
 * (vocab-parallel embedding and cross-entropy, Megatron-LM).
 * Layouts, row-major:
 *   linear weight  (OC, IC): y = x W^T + b (PyTorch's nn.Linear)
 *   qkv  (B,T,nkv,g+2,HS)  per token and KV group: its g query heads, then
 *                          its key, then its value (Megatron-LM's GQA
 *                          layout); query head h is (h/g, h%g), its key
 *                          and value (h/g, g) and (h/g, g+1). With g = 1
 *                          this is (B,T,nh,3,HS): q | k | v per head.
 *   att  (B,nh,T,T)      causal softmax probabilities, zero above the diagonal
 *   y    (B,T,nh,HS)     attention output before the projection
 *   h    (N,2f)          a gated MLP's fused up projection: gate | up per row
 *
 * Weights. linear_fwd / linear_bwd read their weight `w` from the fp32
 * master weights; an implementation that keeps the weights in another
 * precision (the cuda kernels' bf16 copy, attached by the backend) recasts
 * them after its own adamw and after weights_changed, which the caller
 * must call when anything else wrote them (an upload, a copy, an
 * all-gather).
 *
 * Accumulation. "+=" below means the output is added to (gradients over
 * micro-batches); "written" means overwritten. The cpu kernels are
 * sequential loops in a fixed order (bitwise reproducible); the cuda
 * kernels use no floating-point atomics (reproducible on one GPU model).
 */
#ifndef OC_KERNELS_OPS_H
#define OC_KERNELS_OPS_H

#include <stdint.h>

#include "status.h"

/* AdamW's hyperparameters (Loshchilov & Hutter 2019, algorithm 2, as
 * torch.optim.AdamW); the update is the adamw entry's. */
struct oc_adamw {
    float lr, beta1, beta2, eps, weight_decay;
};

/* Rotary position embedding's frequencies (Su et al. 2021, RoFormer, eq.
 * 34): pair i of a head, i in [0, HS/2), turns by pos * inv_freq[i]
 * radians at position pos. The model fills them (rope_theta and
 * rope_scaling of the config: exec/model/llama.c); the kernels only turn.
 * HS <= 2 * OC_ROPE_MAX_PAIRS (the attention kernels' HS <= 256). Host
 * memory, whatever the implementation: a kernel call reads it by value. */
#define OC_ROPE_MAX_PAIRS 128
struct oc_rope {
    int64_t pairs; /* HS/2 */
    float inv_freq[OC_ROPE_MAX_PAIRS];
};

/* The largest call of each kind a caller will make (a model fills it from
 * its shapes: exec/model/gpt.h's oc_gpt_reserve). An implementation sizes
 * the scratch it owns from it, so that no call allocates. */
struct oc_kernel_sizes {
    int64_t rows;     /* N of any call */
    int64_t lin_in;   /* the widest linear input IC */
    int64_t lin_out;  /* the widest linear output OC */
    int64_t bias_out; /* the widest linear output that has a bias */
    int64_t norm;     /* the widest LayerNorm or RMSNorm row C */
    int64_t att_B, att_T, att_nh; /* attention backward's B, T, nh */
};

struct oc_kernel_ops {
    /* -- set-up ------------------------------------------------------ */
    /* A caller that lays several tensors out in one buffer of its own
     * (a model's backward work) starts each at a multiple of this many
     * floats: 1 on the cpu, 64 (256 bytes, cuBLAS's and cublasLt's best
     * alignment) on the cuda kernels. */
    int64_t align_floats;
    /* Makes the scratch for calls up to s (again with larger s: grows).
     * 0, or -1 with st->msg (out of memory; st may be NULL). */
    int (*reserve)(void *ctx, const struct oc_kernel_sizes *s,
                   struct oc_status *st);
    /* The fp32 weights were written other than by adamw: a copy kept in
     * another precision is recast before the next linear layer. */
    void (*weights_changed)(void *ctx);

    /* -- memory ------------------------------------------------------ */
    void (*copy)(void *ctx, float *dst, const float *src, int64_t n);
    void (*zero)(void *ctx, float *p, int64_t n);

    /* -- linear layer ------------------------------------------------ */
    /* out (N,OC) = inp (N,IC) @ w^T + bias (OC, or NULL), written. */
    void (*linear_fwd)(void *ctx, float *out, const float *inp, const float *w,
                       const float *bias, int64_t N, int64_t IC, int64_t OC);
    /* dinp (N,IC) = dout (N,OC) @ w, written; dw (OC,IC) += dout^T @ inp;
     * dbias (OC) += the column sums of dout, if dbias is not NULL. */
    void (*linear_bwd)(void *ctx, float *dinp, float *dw, float *dbias,
                       const float *dout, const float *inp, const float *w,
                       int64_t N, int64_t IC, int64_t OC);

    /* -- LayerNorm (Ba et al. 2016), eps 1e-5 (GPT-2's) ---------------- */
    /* out (N,C) = (inp - mean) * rstd * w + b, written; mean, rstd (N)
     * written for the backward. */
    void (*layernorm_fwd)(void *ctx, float *out, float *mean, float *rstd,
                          const float *inp, const float *w, const float *b,
                          int64_t N, int64_t C);
    /* dinp (N,C) += the input gradient of dout; dw, db (C) += theirs. */
    void (*layernorm_bwd)(void *ctx, float *dinp, float *dw, float *db,
                          const float *dout, const float *inp, const float *w,
                          const float *mean, const float *rstd, int64_t N,
                          int64_t C);

    /* -- RMSNorm (Zhang & Sennrich 2019), as Hugging Face's LlamaRMSNorm -- */
    /* out (N,C) = inp * rstd * w, written, rstd = 1/sqrt(mean(inp^2) +
     * eps); rstd (N) written for the backward. */
    void (*rmsnorm_fwd)(void *ctx, float *out, float *rstd, const float *inp,
                        const float *w, int64_t N, int64_t C, float eps);
    /* dinp (N,C) += the input gradient of dout; dw (C) += its own. */
    void (*rmsnorm_bwd)(void *ctx, float *dinp, float *dw, const float *dout,
                        const float *inp, const float *w, const float *rstd,
                        int64_t N, int64_t C);

    /* -- GELU, tanh form (Hendrycks & Gimpel 2016) ----------------------- */
    void (*gelu_fwd)(void *ctx, float *out, const float *inp, int64_t n);
    /* d[i] *= gelu'(inp[i]), in place. */
    void (*gelu_bwd)(void *ctx, float *d, const float *inp, int64_t n);

    /* -- SwiGLU (Shazeer 2020), silu(x) = x * sigmoid(x) -------------- */
    /* out (N,f) = silu(gate) * up, written, from h (N,2f) = gate | up. */
    void (*swiglu_fwd)(void *ctx, float *out, const float *h, int64_t N,
                       int64_t f);
    /* dh (N,2f) written: dgate = dout * up * silu'(gate), dup = dout *
     * silu(gate), from dout (N,f) and h. */
    void (*swiglu_bwd)(void *ctx, float *dh, const float *dout, const float *h,
                       int64_t N, int64_t f);

    /* -- rotary position embedding (Su et al. 2021), as Hugging Face's
     * Llama (rotate_half: pair i is elements i and i + HS/2 of a head) -- */
    /* The queries and keys of qkv (B,T,nkv,g+2,HS) turned in place by the
     * angle of their position t: (x_i, x_{i+HS/2}) -> (x_i c - x_{i+HS/2}
     * s, x_{i+HS/2} c + x_i s), c, s = cos, sin(t * inv_freq[i]) with the
     * angle in fp32 (as transformers computes it); values untouched. */
    void (*rope_fwd)(void *ctx, float *qkv, const struct oc_rope *r, int64_t B,
                     int64_t T, int64_t nh, int64_t nkv, int64_t HS);
    /* The backward: dq and dk of dqkv turned back (by -angle) in place. */
    void (*rope_bwd)(void *ctx, float *dqkv, const struct oc_rope *r, int64_t B,
                     int64_t T, int64_t nh, int64_t nkv, int64_t HS);

    /* -- causal softmax attention, scale 1/sqrt(HS) (Vaswani et al. 2017),
     * grouped-query: head h reads the key and value of KV group h/g ----- */
    /* att (B,nh,T,T) written; y (B,T,nh,HS) = att @ v, written, unless y
     * is NULL (the scores only: selective recompute). */
    void (*attn_fwd)(void *ctx, float *att, float *y, const float *qkv,
                     int64_t B, int64_t T, int64_t nh, int64_t nkv, int64_t HS);
    /* dqkv (B,T,nkv,g+2,HS), written, from dy (B,T,nh,HS), att and qkv; a
     * key's (value's) gradient sums over the g heads of its group. */
    void (*attn_bwd)(void *ctx, float *dqkv, const float *att, const float *qkv,
                     const float *dy, int64_t B, int64_t T, int64_t nh,
                     int64_t nkv, int64_t HS);

    /* -- fused causal attention (FlashAttention-2: Dao 2023; Dao et al.
     * 2022), scale 1/sqrt(HS): the same y as attn_fwd, but no (T,T)
     * matrix is stored; the backward recomputes the probabilities from
     * the log-sum-exp. qkv (B,T,nkv,g+2,HS) is the GQA layout (Megatron-
     * LM's): per token and KV group, its g = nh/nkv query heads, then its
     * key, then its value; query head h reads KV group h/g. With nkv = nh
     * (g = 1) it is attn_fwd's (B,T,nh,3,HS). lse is (B,nh,T). An
     * implementation may multiply bf16 roundings of q, k, v and dy (the
     * cuda kernels in bf16) with fp32 sums; y, lse and dqkv are fp32. */
    /* s[t,t2] = scale * q[t] . k[t2] for t2 <= t; lse[t] = max_t2 s +
     * log(sum_t2 exp(s - max)), written; y (B,T,nh,HS) = sum_t2
     * exp(s - lse[t]) v[t2], written. */
    void (*flash_attn_fwd)(void *ctx, float *y, float *lse, const float *qkv,
                           int64_t B, int64_t T, int64_t nh, int64_t nkv,
                           int64_t HS);
    /* dqkv (B,T,nkv,g+2,HS), written, from dy (B,T,nh,HS) and the
     * forward's qkv, y and lse (Dao 2023, algorithm 2): p = exp(s - lse),
     * D[t] = dy[t] . y[t], ds = p * (dy[t] . v[t2] - D[t]); dq = scale *
     * sum ds k, dk = scale * sum ds q, dv = sum p dy, dk and dv summed
     * over the g query heads of their group. Scratch: B*nh*T floats at
     * most (reserve's att_B, att_T, att_nh). */
    void (*flash_attn_bwd)(void *ctx, float *dqkv, const float *qkv,
                           const float *y, const float *lse, const float *dy,
                           int64_t B, int64_t T, int64_t nh, int64_t nkv,
                           int64_t HS);

    /* -- adds -------------------------------------------------------- */
    /* out (N,C) = out + bias[col] + res, in that order; bias or res may
     * be NULL (the row-parallel bias and the residual after an all-reduce). */
    void (*add_bias_residual)(void *ctx, float *out, const float *bias,
                              const float *res, int64_t N, int64_t C);

    /* -- vocab-parallel embedding ------------------------------------- */
    /* out (N,C) = wte[tok - v0] (wte (v,C)) for tokens in [v0, v0+v), else
     * zero, written; tokens (N) in [0, V). */
    void (*embed_fwd)(void *ctx, float *out, const int32_t *tokens,
                      const float *wte, int64_t N, int64_t C, int64_t V,
                      int64_t v0, int64_t v);
    /* out (N,C) += wpe[i mod T]: the positions, row i of N = B*T. */
    void (*pos_fwd)(void *ctx, float *out, const float *wpe, int64_t N,
                    int64_t T, int64_t C);
    /* dwpe (rows [0, T)) += dout summed over the batch, unless dwpe is
     * NULL (rotary models have no position table); dwte (v,C) += the dout
     * rows of the tokens in [v0, v0+v). */
    void (*embed_bwd)(void *ctx, float *dwte, float *dwpe,
                      const int32_t *tokens, const float *dout, int64_t B,
                      int64_t T, int64_t C, int64_t V, int64_t v0, int64_t v);

    /* -- vocab-parallel cross-entropy (Megatron-LM's
     * tensor_parallel/cross_entropy.py), logits (N,v) the local columns
     * [v0, v0+v) of V, in four steps with the TP all-reduces between:
     *   ce_max       then all-reduce MAX of lmax
     *   ce_exp       then all-reduce SUM of tlogit, then of sumexp
     *   ce_finish    the logits now hold the probabilities
     *   ce_bwd       the backward ------------------------------------- */
    /* lmax (N) = row maxima of logits, written. */
    void (*ce_max)(void *ctx, float *lmax, const float *logits, int64_t N,
                   int64_t v);
    /* tlogit (N) = the target's logit - lmax where the target is local,
     * else 0; logits = exp(logits - lmax) in place; sumexp (N) = their row
     * sums. targets (N) in [0, V). */
    void (*ce_exp)(void *ctx, float *logits, float *sumexp, float *tlogit,
                   const float *lmax, const int32_t *targets, int64_t N,
                   int64_t v, int64_t v0, int64_t V);
    /* losses (N) = ln(sumexp) - tlogit; probs (N,v) /= sumexp in place. */
    void (*ce_finish)(void *ctx, float *losses, float *probs,
                      const float *sumexp, const float *tlogit, int64_t N,
                      int64_t v);
    /* dlogits (N,v) = grad_scale * (probs - onehot(target)), written; may
     * alias probs. */
    void (*ce_bwd)(void *ctx, float *dlogits, const float *probs,
                   const int32_t *targets, float grad_scale, int64_t N,
                   int64_t v, int64_t v0);

    /* -- AdamW on n floats of one decay class -------------------------- */
    /* w -= lr*wd*w if decay (else w -= 0*w); m = b1 m + (1-b1) g; v = b2 v
     * + (1-b2) g^2; w -= lr * (m/(1-b1^step)) / (sqrt(v/(1-b2^step)) +
     * eps); step >= 1 (Kingma & Ba 2015, algorithm 1, for the bias
     * corrections, computed in double and rounded to float). A run of
     * tensors of one decay flag is one call (params.h's oc_params_adamw). */
    void (*adamw)(void *ctx, float *w, const float *g, float *m, float *v,
                  int64_t n, const struct oc_adamw *h, int decay, int64_t step);
};

/* One implementation's table and its context (NULL for the cpu kernels). */
struct oc_kernels {
    const struct oc_kernel_ops *ops;
    void *ctx;
};

#endif
