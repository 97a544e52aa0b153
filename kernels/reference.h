/* reference.h: the CPU references of the CUDA kernels (kernels.h), one per
 * launcher, with the same arguments on host memory (no stream).
 *
 *   oc_ref_layernorm_fwd(ln, mean, rstd, x, w, b, N, C);
 *   oc_cuda_layernorm_fwd(d_ln, d_mean, d_rstd, d_x, d_w, d_b, N, C, s);
 *   ... copy d_ln back, compare with ln within the stated tolerance ...
 *
 * What this file is: plain sequential C11 loops that mirror exec/gpt.c and
 * exec/params.c term for term and in the same order (gpt.c keeps its
 * kernels static, so they are repeated here; test_reference.c checks that
 * each reference still computes what gpt.c computes). The GEMM references
 * are plain loops instead of cblas, so this file needs only libm. What it
 * is not: fast, or a backend.
 *
 * Letters and layouts as kernels.h: qkv (B,T,nh,3,HS), att (B,nh,T,T),
 * y (B,T,nh,HS), weights (OC,IC), logits (N,v) for vocab [v0, v0+v).
 */
#ifndef OC_KERNELS_REFERENCE_H
#define OC_KERNELS_REFERENCE_H

#include <stdint.h>

/* C (M,N) = alpha op(A) op(B) + beta C, row-major (kernels.h's
 * oc_cuda_gemm); each element a float sum over k in order. */
void oc_ref_gemm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                 const float *A, int64_t lda, const float *B, int64_t ldb,
                 float beta, float *C, int64_t ldc);
/* exec/gpt.c's matmul_fwd and matmul_bwd. */
void oc_ref_matmul_fwd(float *out, const float *inp, const float *w,
                       const float *bias, int64_t N, int64_t IC, int64_t OC);
void oc_ref_matmul_bwd(float *dinp, float *dw, float *dbias, const float *dout,
                       const float *inp, const float *w, int64_t N, int64_t IC,
                       int64_t OC);

void oc_ref_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp,
                          const float *w, const float *b, int64_t N, int64_t C);
void oc_ref_layernorm_bwd(float *dinp, float *dw, float *db, const float *dout,
                          const float *inp, const float *w, const float *mean,
                          const float *rstd, int64_t N, int64_t C);

void oc_ref_gelu_fwd(float *out, const float *inp, int64_t n);
void oc_ref_gelu_bwd(float *d, const float *inp, int64_t n);

/* y may be NULL (scores only). scratch of the backward: 2*T floats. */
void oc_ref_attn_fwd(float *att, float *y, const float *qkv, int64_t B,
                     int64_t T, int64_t nh, int64_t HS);
void oc_ref_attn_bwd(float *dqkv, const float *att, const float *qkv,
                     const float *dy, int64_t B, int64_t T, int64_t nh,
                     int64_t HS, float *scratch);

void oc_ref_embed_fwd(float *out, const int32_t *tokens, const float *wte,
                      int64_t N, int64_t C, int64_t V, int64_t v0, int64_t v);
void oc_ref_pos_fwd(float *out, const float *wpe, int64_t N, int64_t T,
                    int64_t C);
void oc_ref_embed_bwd(float *dwte, float *dwpe, const int32_t *tokens,
                      const float *dout, int64_t B, int64_t T, int64_t C,
                      int64_t V, int64_t v0, int64_t v);

void oc_ref_ce_max(float *lmax, const float *logits, int64_t N, int64_t v);
void oc_ref_ce_exp(float *logits, float *sumexp, float *tlogit,
                   const float *lmax, const int32_t *targets, int64_t N,
                   int64_t v, int64_t v0, int64_t V);
void oc_ref_ce_finish(float *losses, float *probs, const float *sumexp,
                      const float *tlogit, int64_t N, int64_t v);
void oc_ref_ce_bwd(float *dlogits, const float *probs, const int32_t *targets,
                   float grad_scale, int64_t N, int64_t v, int64_t v0);

void oc_ref_adamw(float *w, const float *g, float *m, float *v, int64_t n,
                  float lr, float beta1, float beta2, float eps,
                  float weight_decay, int decay, int64_t step);

void oc_ref_add_bias_residual(float *out, const float *bias, const float *res,
                              int64_t N, int64_t C);
void oc_ref_add(float *out, const float *a, const float *b, int64_t n);
void oc_ref_bias_bwd(float *dbias, const float *dout, int64_t N, int64_t OC);

/* bfloat16 (the top 16 bits of an IEEE binary32), rounded to nearest even
 * as __float2bfloat16_rn; NaN stays a (quiet) NaN. */
uint16_t oc_ref_f32_to_bf16(float x);
float oc_ref_bf16_to_f32(uint16_t h);

#endif
