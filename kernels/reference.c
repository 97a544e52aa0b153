/* reference.c: CPU references of the CUDA kernels (see reference.h). Each
 * loop is exec/gpt.c's (itself llm.c's train_gpt2.c CPU reference) or
 * exec/params.c's, in the same order, with the sources named there. */
#include "reference.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "status.h"

#define LN_EPS 1e-5f               /* GPT-2's layer_norm_epsilon */
#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

/* ------------------------------------------------------------------ */
/* GEMM                                                                 */

void oc_ref_gemm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                 const float *A, int64_t lda, const float *B, int64_t ldb,
                 float beta, float *C, int64_t ldc)
{
    OC_ASSERT(lda >= (ta ? M : K) && ldb >= (tb ? K : N) && ldc >= N);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            float s = 0.0f;
            for (int64_t k = 0; k < K; k++) {
                float a = ta ? A[k * lda + i] : A[i * lda + k];
                float b = tb ? B[j * ldb + k] : B[k * ldb + j];
                s += a * b;
            }
            /* beta == 0 overwrites, as BLAS does (C may hold NaN) */
            C[i * ldc + j] = alpha * s + (beta != 0.0f ? beta * C[i * ldc + j] : 0.0f);
        }
}

void oc_ref_matmul_fwd(float *out, const float *inp, const float *w,
                       const float *bias, int64_t N, int64_t IC, int64_t OC)
{
    oc_ref_gemm(0, 1, N, OC, IC, 1.0f, inp, IC, w, IC, 0.0f, out, OC);
    if (bias)
        for (int64_t i = 0; i < N; i++)
            for (int64_t o = 0; o < OC; o++)
                out[i * OC + o] += bias[o];
}

void oc_ref_matmul_bwd(float *dinp, float *dw, float *dbias, const float *dout,
                       const float *inp, const float *w, int64_t N, int64_t IC,
                       int64_t OC)
{
    oc_ref_gemm(0, 0, N, IC, OC, 1.0f, dout, OC, w, IC, 0.0f, dinp, IC);
    oc_ref_gemm(1, 0, OC, IC, N, 1.0f, dout, OC, inp, IC, 1.0f, dw, IC);
    if (dbias)
        oc_ref_bias_bwd(dbias, dout, N, OC);
}

/* ------------------------------------------------------------------ */
/* LayerNorm (Ba et al. 2016)                                           */

void oc_ref_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp,
                          const float *w, const float *b, int64_t N, int64_t C)
{
    for (int64_t i = 0; i < N; i++) {
        const float *x = inp + i * C;
        float m = 0.0f;
        for (int64_t j = 0; j < C; j++)
            m += x[j];
        m /= (float)C;
        float v = 0.0f;
        for (int64_t j = 0; j < C; j++) {
            float xm = x[j] - m;
            v += xm * xm;
        }
        v /= (float)C;
        float s = 1.0f / sqrtf(v + LN_EPS);
        float *o = out + i * C;
        for (int64_t j = 0; j < C; j++)
            o[j] = (s * (x[j] - m)) * w[j] + b[j];
        mean[i] = m;
        rstd[i] = s;
    }
}

void oc_ref_layernorm_bwd(float *dinp, float *dw, float *db, const float *dout,
                          const float *inp, const float *w, const float *mean,
                          const float *rstd, int64_t N, int64_t C)
{
    for (int64_t i = 0; i < N; i++) {
        const float *dy = dout + i * C, *x = inp + i * C;
        float *dx = dinp + i * C;
        const float m = mean[i], s = rstd[i];
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (int64_t j = 0; j < C; j++) {
            float norm = (x[j] - m) * s;
            float dnorm = w[j] * dy[j];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= (float)C;
        dnorm_norm_mean /= (float)C;
        for (int64_t j = 0; j < C; j++) {
            float norm = (x[j] - m) * s;
            float dnorm = w[j] * dy[j];
            db[j] += dy[j];
            dw[j] += norm * dy[j];
            dx[j] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
        }
    }
}

/* ------------------------------------------------------------------ */
/* GELU, tanh form (Hendrycks & Gimpel 2016, section 2)                 */

void oc_ref_gelu_fwd(float *out, const float *inp, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float x = inp[i];
        float cube = 0.044715f * x * x * x;
        out[i] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + cube)));
    }
}

void oc_ref_gelu_bwd(float *d, const float *inp, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float x = inp[i];
        float cube = 0.044715f * x * x * x;
        float arg = GELU_K * (x + cube);
        float th = tanhf(arg);
        float ch = coshf(arg);
        float sech2 = 1.0f / (ch * ch);
        float grad = 0.5f * (1.0f + th) +
                     x * 0.5f * sech2 * GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
        d[i] *= grad;
    }
}

/* ------------------------------------------------------------------ */
/* Causal softmax attention (Vaswani et al. 2017)                       */

#define QKV_AT(b, t, h) ((((b) * T + (t)) * nh + (h)) * 3 * HS)
#define Y_AT(b, t, h) ((((b) * T + (t)) * nh + (h)) * HS)
#define ATT_AT(b, h, t) ((((b) * nh + (h)) * T + (t)) * T)

void oc_ref_attn_fwd(float *att, float *y, const float *qkv, int64_t B,
                     int64_t T, int64_t nh, int64_t HS)
{
    const float scale = 1.0f / sqrtf((float)HS);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < nh; h++)
            for (int64_t t = 0; t < T; t++) {
                const float *q = qkv + QKV_AT(b, t, h);
                float *row = att + ATT_AT(b, h, t);
                float maxv = -FLT_MAX;
                for (int64_t t2 = 0; t2 <= t; t2++) {
                    const float *k = qkv + QKV_AT(b, t2, h) + HS;
                    float dot = 0.0f;
                    for (int64_t i = 0; i < HS; i++)
                        dot += q[i] * k[i];
                    dot *= scale;
                    row[t2] = dot;
                    if (dot > maxv)
                        maxv = dot;
                }
                float sum = 0.0f;
                for (int64_t t2 = 0; t2 <= t; t2++) {
                    float e = expf(row[t2] - maxv);
                    row[t2] = e;
                    sum += e;
                }
                float inv = 1.0f / sum;
                for (int64_t t2 = 0; t2 <= t; t2++)
                    row[t2] *= inv;
                for (int64_t t2 = t + 1; t2 < T; t2++)
                    row[t2] = 0.0f; /* causal mask */
            }
    if (!y)
        return;
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t h = 0; h < nh; h++) {
                float *yr = y + Y_AT(b, t, h);
                const float *row = att + ATT_AT(b, h, t);
                for (int64_t i = 0; i < HS; i++)
                    yr[i] = 0.0f;
                for (int64_t t2 = 0; t2 <= t; t2++) {
                    const float *v = qkv + QKV_AT(b, t2, h) + 2 * HS;
                    float w = row[t2];
                    for (int64_t i = 0; i < HS; i++)
                        yr[i] += w * v[i];
                }
            }
}

void oc_ref_attn_bwd(float *dqkv, const float *att, const float *qkv,
                     const float *dy, int64_t B, int64_t T, int64_t nh,
                     int64_t HS, float *scratch)
{
    const float scale = 1.0f / sqrtf((float)HS);
    float *datt = scratch, *dpre = scratch + T;
    memset(dqkv, 0, (size_t)(B * T * 3 * nh * HS) * sizeof *dqkv);
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t h = 0; h < nh; h++) {
                const float *row = att + ATT_AT(b, h, t);
                const float *q = qkv + QKV_AT(b, t, h);
                float *dq = dqkv + QKV_AT(b, t, h);
                const float *dyr = dy + Y_AT(b, t, h);
                /* y = sum_t2 att[t2] v[t2] */
                for (int64_t t2 = 0; t2 <= t; t2++) {
                    const float *v = qkv + QKV_AT(b, t2, h) + 2 * HS;
                    float *dv = dqkv + QKV_AT(b, t2, h) + 2 * HS;
                    float s = 0.0f;
                    for (int64_t i = 0; i < HS; i++) {
                        s += v[i] * dyr[i];
                        dv[i] += row[t2] * dyr[i];
                    }
                    datt[t2] = s;
                }
                /* softmax: dpre = att * (datt - sum(att * datt)) */
                float dot = 0.0f;
                for (int64_t t2 = 0; t2 <= t; t2++)
                    dot += row[t2] * datt[t2];
                for (int64_t t2 = 0; t2 <= t; t2++)
                    dpre[t2] = row[t2] * (datt[t2] - dot);
                /* pre = scale * q . k[t2] */
                for (int64_t t2 = 0; t2 <= t; t2++) {
                    const float *k = qkv + QKV_AT(b, t2, h) + HS;
                    float *dk = dqkv + QKV_AT(b, t2, h) + HS;
                    float g = dpre[t2] * scale;
                    for (int64_t i = 0; i < HS; i++) {
                        dq[i] += k[i] * g;
                        dk[i] += q[i] * g;
                    }
                }
            }
}

#undef QKV_AT
#undef Y_AT
#undef ATT_AT

/* ------------------------------------------------------------------ */
/* Vocab-parallel embedding (Megatron-LM's VocabParallelEmbedding)      */

void oc_ref_embed_fwd(float *out, const int32_t *tokens, const float *wte,
                      int64_t N, int64_t C, int64_t V, int64_t v0, int64_t v)
{
    for (int64_t i = 0; i < N; i++) {
        int64_t tok = tokens[i];
        OC_ASSERT(tok >= 0 && tok < V);
        float *o = out + i * C;
        if (tok >= v0 && tok < v0 + v)
            memcpy(o, wte + (tok - v0) * C, (size_t)C * sizeof *o);
        else
            memset(o, 0, (size_t)C * sizeof *o);
    }
}

void oc_ref_pos_fwd(float *out, const float *wpe, int64_t N, int64_t T,
                    int64_t C)
{
    for (int64_t i = 0; i < N; i++) {
        const float *pe = wpe + (i % T) * C;
        float *o = out + i * C;
        for (int64_t j = 0; j < C; j++)
            o[j] += pe[j];
    }
}

void oc_ref_embed_bwd(float *dwte, float *dwpe, const int32_t *tokens,
                      const float *dout, int64_t B, int64_t T, int64_t C,
                      int64_t V, int64_t v0, int64_t v)
{
    for (int64_t i = 0; i < B * T; i++) {
        int64_t tok = tokens[i];
        OC_ASSERT(tok >= 0 && tok < V);
        const float *g = dout + i * C;
        float *pe = dwpe + (i % T) * C;
        for (int64_t j = 0; j < C; j++)
            pe[j] += g[j];
        if (tok >= v0 && tok < v0 + v) {
            float *te = dwte + (tok - v0) * C;
            for (int64_t j = 0; j < C; j++)
                te[j] += g[j];
        }
    }
}

/* ------------------------------------------------------------------ */
/* Vocab-parallel cross-entropy (Megatron-LM, cross_entropy.py)         */

void oc_ref_ce_max(float *lmax, const float *logits, int64_t N, int64_t v)
{
    for (int64_t i = 0; i < N; i++) {
        const float *row = logits + i * v;
        float m = -FLT_MAX;
        for (int64_t j = 0; j < v; j++)
            if (row[j] > m)
                m = row[j];
        lmax[i] = m;
    }
}

void oc_ref_ce_exp(float *logits, float *sumexp, float *tlogit,
                   const float *lmax, const int32_t *targets, int64_t N,
                   int64_t v, int64_t v0, int64_t V)
{
    for (int64_t i = 0; i < N; i++) {
        float *row = logits + i * v;
        const float m = lmax[i];
        int64_t tgt = targets[i];
        OC_ASSERT(tgt >= 0 && tgt < V);
        tlogit[i] = (tgt >= v0 && tgt < v0 + v) ? row[tgt - v0] - m : 0.0f;
        float s = 0.0f;
        for (int64_t j = 0; j < v; j++) {
            float e = expf(row[j] - m);
            row[j] = e;
            s += e;
        }
        sumexp[i] = s;
    }
}

void oc_ref_ce_finish(float *losses, float *probs, const float *sumexp,
                      const float *tlogit, int64_t N, int64_t v)
{
    for (int64_t i = 0; i < N; i++) {
        float *row = probs + i * v;
        const float s = sumexp[i];
        losses[i] = logf(s) - tlogit[i];
        for (int64_t j = 0; j < v; j++)
            row[j] /= s;
    }
}

/* d loss / d logit = softmax - onehot(target) (Bishop 2006, eq. 4.109) */
void oc_ref_ce_bwd(float *dlogits, const float *probs, const int32_t *targets,
                   float grad_scale, int64_t N, int64_t v, int64_t v0)
{
    for (int64_t i = 0; i < N; i++) {
        const float *pr = probs + i * v;
        float *dl = dlogits + i * v;
        for (int64_t j = 0; j < v; j++)
            dl[j] = pr[j] * grad_scale;
        int64_t tgt = targets[i];
        if (tgt >= v0 && tgt < v0 + v)
            dl[tgt - v0] -= grad_scale;
    }
}

/* ------------------------------------------------------------------ */
/* AdamW (Loshchilov & Hutter 2019, algorithm 2), exec/params.c         */

void oc_ref_adamw(float *w, const float *g, float *m, float *v, int64_t n,
                  float lr, float beta1, float beta2, float eps,
                  float weight_decay, int decay, int64_t step)
{
    OC_ASSERT(step >= 1);
    /* Bias corrections (Kingma & Ba 2015, algorithm 1). */
    const float bc1 = (float)(1.0 - pow((double)beta1, (double)step));
    const float bc2 = (float)(1.0 - pow((double)beta2, (double)step));
    const float dec = decay ? lr * weight_decay : 0.0f;
    for (int64_t j = 0; j < n; j++) {
        float gj = g[j];
        float mj = beta1 * m[j] + (1.0f - beta1) * gj;
        float vj = beta2 * v[j] + (1.0f - beta2) * gj * gj;
        m[j] = mj;
        v[j] = vj;
        float wj = w[j] - dec * w[j];
        w[j] = wj - lr * (mj / bc1) / (sqrtf(vj / bc2) + eps);
    }
}

/* ------------------------------------------------------------------ */
/* Residual and bias                                                    */

void oc_ref_add_bias_residual(float *out, const float *bias, const float *res,
                              int64_t N, int64_t C)
{
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < C; j++) {
            float o = out[i * C + j];
            if (bias)
                o = o + bias[j];
            if (res)
                o = o + res[i * C + j];
            out[i * C + j] = o;
        }
}

void oc_ref_add(float *out, const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

void oc_ref_bias_bwd(float *dbias, const float *dout, int64_t N, int64_t OC)
{
    for (int64_t i = 0; i < N; i++)
        for (int64_t o = 0; o < OC; o++)
            dbias[o] += dout[i * OC + o];
}

/* ------------------------------------------------------------------ */
/* bfloat16                                                             */

uint16_t oc_ref_f32_to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u); /* NaN: keep it quiet */
    /* round to nearest, ties to even: add 0x7fff plus the kept LSB */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float oc_ref_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
