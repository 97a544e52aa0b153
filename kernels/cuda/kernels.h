/* kernels.h: the CUDA kernels and cuBLAS wrappers, one launcher per kernel,
 * each the GPU twin of an entry of the cpu kernel table (kernels/cpu/
 * ops_cpu.c, the reference), so the cuda backend computes what the cpu
 * backend computes. ops_cuda.c puts them behind the primitive-kernel table
 * (kernels/ops.h) that the model runs on.
 *
 *   struct oc_cuda_blas blas;
 *   oc_cuda_blas_init(&blas);
 *   oc_cuda_layernorm_fwd(ln, mean, rstd, x, w, b, N, C, stream);
 *   oc_cuda_matmul_fwd(&blas, qkv, ln, qkvw, qkvb, N, C, 3 * C, OC_CUDA_F32,
 *                      stream);
 *   oc_cuda_attn_fwd(att, y, qkv, B, T, nh, HS, stream);
 *   ...
 *   oc_cuda_blas_free(&blas);
 *
 * What this file is: device-pointer launchers. Every launcher takes a stream,
 * asserts its shape assumptions (OC_ASSERT, on in release builds) and checks
 * cudaGetLastError (cudaCheck: file and line, then exit; see check.h). What
 * it is not: a backend. Nothing here allocates (scratch comes from the
 * caller, sized by the *_scratch_floats functions), synchronises, or talks
 * to other ranks; the all-reduces of tensor parallelism sit between the
 * launchers exactly where the model (exec/model/gpt.c) asks for them (see
 * "Cross-entropy").
 *
 * Letters (kernels/ops.h): B = micro-batch, T = sequence, N = B*T tokens, C =
 * hidden, nh = local heads, nkv = local KV heads, g = nh/nkv, HS = head
 * size, f = MLP width, v = local vocab rows starting at v0, V = whole
 * vocabulary. Layouts are kernels/ops.h's, row-major:
 *   qkv (B,T,nkv,g+2,HS) per token and KV group: g queries, key, value
 *                        (Megatron-LM's layout; g = 1: q|k|v per head)
 *   att (B,nh,T,T)      causal softmax probabilities, zero above the diagonal
 *   y   (B,T,nh,HS)     attention output before the projection
 *   a linear layer's weight is (OC, IC) and computes y = x W^T + b.
 *
 * Precision. GEMMs run in fp32 (CUBLAS_COMPUTE_32F: true fp32, no TF32) or
 * bf16 with fp32 accumulation (OC_CUDA_BF16: bf16 operands, fp32 or bf16
 * result). Every other kernel takes and returns fp32: activations, master
 * weights, gradients and AdamW moments stay fp32, and the bf16 path casts
 * GEMM operands with oc_cuda_f32_to_bf16 (round to nearest even). bf16
 * tensors cross this C interface as oc_bf16, the raw 16-bit pattern.
 *
 * Determinism. No kernel uses floating-point atomics: every sum has a fixed
 * order, so a run repeats bitwise on the same GPU (cuBLAS, by its own
 * documentation, repeats bitwise on one architecture and SM count too).
 */
#ifndef OC_KERNELS_H
#define OC_KERNELS_H

#include <stdint.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t oc_bf16; /* bfloat16 bits: sign, 8 exponent, 7 mantissa */

enum oc_cuda_dtype { OC_CUDA_F32, OC_CUDA_BF16 };

/* ------------------------------------------------------------------ */
/* GEMM (gemm.c): cuBLAS and cublasLt, row-major like the cpu kernels'
 * cblas_sgemm(CblasRowMajor, ...) calls.                               */

/* One per stream that runs GEMMs (the workspace is shared by the calls). */
#define OC_CUDA_LT_CACHE 32
struct oc_cuda_lt_plan { /* the Lt algorithm chosen for one matmul_fwd shape */
    int64_t N, IC, OC;
    int ab, bias;
    unsigned align;         /* bytes all operands are aligned to (16..256) */
    int found;              /* 0: Lt offers none, use cublasGemmEx */
    cublasLtMatmulAlgo_t algo;
};

struct oc_cuda_blas {
    cublasHandle_t handle;
    cublasLtHandle_t lt;
    void *workspace;        /* device, workspace_bytes, for cuBLAS and Lt */
    size_t workspace_bytes;
    struct oc_cuda_lt_plan plans[OC_CUDA_LT_CACHE]; /* heuristic results */
    int64_t nplans;         /* plans made; the next goes to slot
                               nplans % OC_CUDA_LT_CACHE (oldest first) */
    int64_t lt_calls, gemmex_calls; /* matmul_fwd calls by path (tests) */
};

void oc_cuda_blas_init(struct oc_cuda_blas *b);
void oc_cuda_blas_free(struct oc_cuda_blas *b);

/* C (M,N) = alpha * op(A) (M,K) @ op(B) (K,N) + beta * C, all row-major
 * with leading dimensions (row strides) lda, ldb, ldc; op(A) = A (stored
 * (M,K)) or, with ta, A^T (A stored (K,M)); likewise B with tb. A and B
 * have type ab, C type c: (F32, F32) or (BF16, F32) or (BF16, BF16);
 * accumulation is fp32 in every case. */
void oc_cuda_gemm(struct oc_cuda_blas *b, int ta, int tb, int64_t M, int64_t N,
                  int64_t K, float alpha, const void *A, int64_t lda,
                  const void *B, int64_t ldb, float beta, void *C, int64_t ldc,
                  enum oc_cuda_dtype ab, enum oc_cuda_dtype c,
                  cudaStream_t stream);

/* The cpu kernels' linear_fwd: out (N,OC) = inp (N,IC) @ w^T, w (OC,IC), plus
 * bias (OC) if not NULL. inp and w have type ab; out and bias are fp32.
 * cublasLt with its bias epilogue (one pass over out instead of two) when
 * every operand is 16-byte aligned (pointers and rows); otherwise, or if
 * Lt offers no algorithm for the shape, cublasGemmEx and a bias kernel. */
void oc_cuda_matmul_fwd(struct oc_cuda_blas *b, float *out, const void *inp,
                        const void *w, const float *bias, int64_t N, int64_t IC,
                        int64_t OC, enum oc_cuda_dtype ab, cudaStream_t stream);

/* The cpu kernels' linear_bwd: dinp (N,IC) = dout (N,OC) @ w (written); dw
 * (OC,IC) += dout^T @ inp; dbias (OC) += column sums of dout, if dbias is
 * not NULL (then scratch holds oc_cuda_colsum_scratch_floats(OC) floats).
 * dout, inp and w have type ab; dinp, dw and dbias are fp32. */
void oc_cuda_matmul_bwd(struct oc_cuda_blas *b, float *dinp, float *dw,
                        float *dbias, const void *dout, const void *inp,
                        const void *w, int64_t N, int64_t IC, int64_t OC,
                        enum oc_cuda_dtype ab, float *scratch,
                        cudaStream_t stream);

/* ------------------------------------------------------------------ */
/* LayerNorm (layernorm.cu), eps 1e-5 (GPT-2)                           */

/* out (N,C) = LayerNorm(inp) * w + b; mean, rstd (N) kept for backward. */
void oc_cuda_layernorm_fwd(float *out, float *mean, float *rstd,
                           const float *inp, const float *w, const float *b,
                           int64_t N, int64_t C, cudaStream_t stream);
/* dinp (N,C) += LayerNorm backward of dout; dw, db (C) += their gradients.
 * scratch: oc_cuda_layernorm_bwd_scratch_floats(C) floats. */
void oc_cuda_layernorm_bwd(float *dinp, float *dw, float *db, const float *dout,
                           const float *inp, const float *w, const float *mean,
                           const float *rstd, int64_t N, int64_t C,
                           float *scratch, cudaStream_t stream);
int64_t oc_cuda_layernorm_bwd_scratch_floats(int64_t C);

/* ------------------------------------------------------------------ */
/* RMSNorm (rmsnorm.cu), Hugging Face's LlamaRMSNorm                    */

/* out (N,C) = inp * rstd * w, rstd = 1/sqrt(mean(inp^2) + eps) (N) kept
 * for backward. */
void oc_cuda_rmsnorm_fwd(float *out, float *rstd, const float *inp, const float *w,
                         int64_t N, int64_t C, float eps, cudaStream_t stream);
/* dinp (N,C) += RMSNorm backward of dout; dw (C) += its gradient.
 * scratch: oc_cuda_rmsnorm_bwd_scratch_floats(C) floats. */
void oc_cuda_rmsnorm_bwd(float *dinp, float *dw, const float *dout,
                         const float *inp, const float *w, const float *rstd,
                         int64_t N, int64_t C, float *scratch, cudaStream_t stream);
int64_t oc_cuda_rmsnorm_bwd_scratch_floats(int64_t C);

/* ------------------------------------------------------------------ */
/* GELU, tanh form (gelu.cu)                                            */

void oc_cuda_gelu_fwd(float *out, const float *inp, int64_t n,
                      cudaStream_t stream);
/* d[i] *= gelu'(inp[i]), in place. */
void oc_cuda_gelu_bwd(float *d, const float *inp, int64_t n, cudaStream_t stream);

/* ------------------------------------------------------------------ */
/* SwiGLU (swiglu.cu): silu(gate) * up                                  */

/* out (N,f) = silu(gate) * up from h (N,2f) = gate | up per row. */
void oc_cuda_swiglu_fwd(float *out, const float *h, int64_t N, int64_t f,
                        cudaStream_t stream);
/* dh (N,2f) = (dout * up * silu'(gate) | dout * silu(gate)), written. */
void oc_cuda_swiglu_bwd(float *dh, const float *dout, const float *h, int64_t N,
                        int64_t f, cudaStream_t stream);

/* ------------------------------------------------------------------ */
/* Rotary position embedding (rope.cu), rotate_half pairs (i, i + HS/2) */

#define OC_CUDA_ROPE_MAX_PAIRS 128 /* ops.h's OC_ROPE_MAX_PAIRS */
/* The g query heads and the key of every (token, KV group) of qkv
 * (B,T,nkv,g+2,HS), g = nh/nkv, turned in place by the angle t *
 * inv_freq[i] of their position t (backward 0), or back (backward 1: the
 * gradient). inv_freq: pairs = HS/2 floats in host memory. */
void oc_cuda_rope(float *qkv, const float *inv_freq, int64_t pairs, int64_t B,
                  int64_t T, int64_t nh, int64_t nkv, int64_t HS, int backward,
                  cudaStream_t stream);

/* ------------------------------------------------------------------ */
/* Causal softmax attention (attention.cu), scale 1/sqrt(HS), HS <= 256,
 * grouped-query: head h reads KV group h/g of qkv (B,T,nkv,g+2,HS)     */

/* att = causal softmax(q k^T / sqrt(HS)) with zeros above the diagonal;
 * y = att @ v. y may be NULL: att only (the model's oc_gpt_attn_scores,
 * for selective recompute). */
void oc_cuda_attn_fwd(float *att, float *y, const float *qkv, int64_t B,
                      int64_t T, int64_t nh, int64_t nkv, int64_t HS,
                      cudaStream_t stream);
/* dqkv (B,T,nkv,g+2,HS), written, from dy (B,T,nh,HS), att and qkv.
 * scratch: oc_cuda_attn_bwd_scratch_floats(B, T, nh) floats. */
void oc_cuda_attn_bwd(float *dqkv, const float *att, const float *qkv,
                      const float *dy, int64_t B, int64_t T, int64_t nh,
                      int64_t nkv, int64_t HS, float *scratch, cudaStream_t stream);
int64_t oc_cuda_attn_bwd_scratch_floats(int64_t B, int64_t T, int64_t nh);

/* ------------------------------------------------------------------ */
/* Vocab-parallel embedding (embedding.cu)                              */

/* out (N,C) = wte[tok - v0] for tokens in [v0, v0+v), else 0 (the TP SUM
 * all-reduce of out follows when t > 1); wte (v,C); tokens (N) in [0, V):
 * a token outside traps the kernel (the next cudaCheck reports it). */
void oc_cuda_embed_fwd(float *out, const int32_t *tokens, const float *wte,
                       int64_t N, int64_t C, int64_t V, int64_t v0, int64_t v,
                       cudaStream_t stream);
/* out (N,C) += wpe[i mod T]: positions, after the all-reduce. */
void oc_cuda_pos_fwd(float *out, const float *wpe, int64_t N, int64_t T,
                     int64_t C, cudaStream_t stream);
/* dwpe (T rows of (P,C)) += dout summed over the batch (dwpe may be
 * NULL: no position table); dwte (v,C) += dout
 * rows of the tokens in [v0, v0+v), each row summed in token-position
 * order (deterministic, no atomics). N = B*T. */
void oc_cuda_embed_bwd(float *dwte, float *dwpe, const int32_t *tokens,
                       const float *dout, int64_t B, int64_t T, int64_t C,
                       int64_t V, int64_t v0, int64_t v, cudaStream_t stream);

/* ------------------------------------------------------------------ */
/* Vocab-parallel cross-entropy (cross_entropy.cu), Megatron-LM's
 * tensor_parallel/cross_entropy.py as the model's oc_gpt_head_fwd runs
 * it. logits (N,v) are the local vocabulary columns [v0, v0+v) of V:
 *
 *   oc_cuda_ce_max(lmax, logits)          then all-reduce MAX lmax
 *   oc_cuda_ce_exp(logits, sumexp, ...)   then all-reduce SUM tlogit, sumexp
 *   oc_cuda_ce_finish(losses, logits)     logits now hold probabilities
 *   oc_cuda_ce_bwd(dlogits, probs, ...)   backward
 *
 * With t = 1 the calls follow each other with nothing between.         */

/* lmax (N) = row maxima of logits. */
void oc_cuda_ce_max(float *lmax, const float *logits, int64_t N, int64_t v,
                    cudaStream_t stream);
/* tlogit (N) = logit of the target - lmax where the target is local, else
 * 0; logits = exp(logits - lmax) in place; sumexp (N) = their row sums.
 * targets (N) in [0, V). */
void oc_cuda_ce_exp(float *logits, float *sumexp, float *tlogit,
                    const float *lmax, const int32_t *targets, int64_t N,
                    int64_t v, int64_t v0, int64_t V, cudaStream_t stream);
/* losses (N) = ln(sumexp) - tlogit; probs (N,v) /= sumexp, in place. */
void oc_cuda_ce_finish(float *losses, float *probs, const float *sumexp,
                       const float *tlogit, int64_t N, int64_t v,
                       cudaStream_t stream);
/* dlogits (N,v) = grad_scale * (probs - onehot(target)); may alias probs. */
void oc_cuda_ce_bwd(float *dlogits, const float *probs, const int32_t *targets,
                    float grad_scale, int64_t N, int64_t v, int64_t v0,
                    cudaStream_t stream);

/* ------------------------------------------------------------------ */
/* AdamW (adamw.cu), the cpu kernels' adamw on n floats                 */

/* w -= lr*wd*w if decay; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * w -= lr * (m/(1-b1^step)) / (sqrt(v/(1-b2^step)) + eps); step >= 1.
 * One launch per run of tensors sharing `decay` (params.h's table). */
void oc_cuda_adamw(float *w, const float *g, float *m, float *v, int64_t n,
                   float lr, float beta1, float beta2, float eps,
                   float weight_decay, int decay, int64_t step,
                   cudaStream_t stream);

/* ------------------------------------------------------------------ */
/* Residual and bias adds, bias gradient, casts (residual.cu)           */

/* out (N,C) = out + bias[col] + res, as the model adds the row-parallel
 * bias and the residual after the all-reduce; bias or res may be NULL
 * (with res NULL this is the bias add after a GEMM). */
void oc_cuda_add_bias_residual(float *out, const float *bias, const float *res,
                               int64_t N, int64_t C, cudaStream_t stream);
/* out (n) = a + b; out may alias a or b. */
void oc_cuda_add(float *out, const float *a, const float *b, int64_t n,
                 cudaStream_t stream);
/* dbias (OC) += column sums of dout (N,OC), dout of type t; scratch:
 * oc_cuda_colsum_scratch_floats(OC) floats. */
void oc_cuda_bias_bwd(float *dbias, const void *dout, enum oc_cuda_dtype t,
                      int64_t N, int64_t OC, float *scratch,
                      cudaStream_t stream);
int64_t oc_cuda_colsum_scratch_floats(int64_t OC);
/* Round to nearest even (__float2bfloat16_rn), and back (exact). */
void oc_cuda_f32_to_bf16(oc_bf16 *out, const float *in, int64_t n,
                         cudaStream_t stream);
void oc_cuda_bf16_to_f32(float *out, const oc_bf16 *in, int64_t n,
                         cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
