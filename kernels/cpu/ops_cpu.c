/* ops_cpu.c: the cpu kernel table (see ops_cpu.h, kernels/ops.h).
 *
 * The loops are llm.c's CPU reference (karpathy/llm.c, train_gpt2.c:
 * layernorm, attention, gelu forward and backward), with GEMMs through
 * cblas_sgemm and the vocab-parallel pieces of Megatron-LM (Shoeybi et al.
 * 2019). They are the loops exec/gpt.c ran before the model was written
 * against this table, operation for operation and in the same order: the
 * cpu executor's results did not move by one bit (tools/golden.sh). The
 * Llama block's kernels (RMSNorm, SwiGLU, rotary embedding) follow
 * Hugging Face's modeling_llama.py; attention reads grouped-query heads
 * through the offsets of one KV group, which with one query head per
 * group are the multi-head offsets and the same loops (bitwise).
 */
#include "ops_cpu.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention_flash_cpu.h" /* the fused-attention entries */

#define LN_EPS 1e-5f /* GPT-2's layer_norm_epsilon */

/* ------------------------------------------------------------------ */
/* Set-up and memory                                                    */

static int cpu_reserve(void *ctx, const struct oc_kernel_sizes *s,
                       struct oc_status *st)
{
    (void)ctx, (void)s, (void)st;
    return 0;
}

static void cpu_weights_changed(void *ctx)
{
    (void)ctx;
}

static void cpu_copy(void *ctx, float *dst, const float *src, int64_t n)
{
    (void)ctx;
    OC_ASSERT(n >= 0);
    if (dst != src)
        memcpy(dst, src, (size_t)n * sizeof *dst);
}

static void cpu_zero(void *ctx, float *p, int64_t n)
{
    (void)ctx;
    OC_ASSERT(n >= 0);
    memset(p, 0, (size_t)n * sizeof *p);
}

/* ------------------------------------------------------------------ */
/* Linear layer                                                         */

/* out (N,OC) = inp (N,IC) @ w^T, w (OC,IC), + bias (OC) if given. */
static void cpu_linear_fwd(void *ctx, float *out, const float *inp, const float *w,
                           const float *bias, int64_t N, int64_t IC, int64_t OC)
{
    (void)ctx;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)OC,
                (int)IC, 1.0f, inp, (int)IC, w, (int)IC, 0.0f, out, (int)OC);
    if (bias)
        for (int64_t i = 0; i < N; i++)
            for (int64_t o = 0; o < OC; o++)
                out[i * OC + o] += bias[o];
}

/* dinp (N,IC) = dout (N,OC) @ w (OC,IC) (written); dw (OC,IC) +=
 * dout^T @ inp; dbias (OC) += column sums of dout. */
static void cpu_linear_bwd(void *ctx, float *dinp, float *dw, float *dbias,
                           const float *dout, const float *inp, const float *w,
                           int64_t N, int64_t IC, int64_t OC)
{
    (void)ctx;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)IC,
                (int)OC, 1.0f, dout, (int)OC, w, (int)IC, 0.0f, dinp, (int)IC);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)OC, (int)IC,
                (int)N, 1.0f, dout, (int)OC, inp, (int)IC, 1.0f, dw, (int)IC);
    if (dbias)
        for (int64_t i = 0; i < N; i++)
            for (int64_t o = 0; o < OC; o++)
                dbias[o] += dout[i * OC + o];
}

/* ------------------------------------------------------------------ */
/* LayerNorm (Ba et al. 2016) over the last dimension C                 */

static void cpu_layernorm_fwd(void *ctx, float *out, float *mean, float *rstd,
                              const float *inp, const float *w, const float *b,
                              int64_t N, int64_t C)
{
    (void)ctx;
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

/* dinp += LayerNorm backward of dout; dw, db += . */
static void cpu_layernorm_bwd(void *ctx, float *dinp, float *dw, float *db,
                              const float *dout, const float *inp, const float *w,
                              const float *mean, const float *rstd, int64_t N,
                              int64_t C)
{
    (void)ctx;
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
/* RMSNorm (Zhang & Sennrich 2019) over the last dimension C, as Hugging
 * Face's LlamaRMSNorm: x * rsqrt(mean(x^2) + eps), then the gain      */

static void cpu_rmsnorm_fwd(void *ctx, float *out, float *rstd, const float *inp,
                            const float *w, int64_t N, int64_t C, float eps)
{
    (void)ctx;
    for (int64_t i = 0; i < N; i++) {
        const float *x = inp + i * C;
        float ss = 0.0f;
        for (int64_t j = 0; j < C; j++)
            ss += x[j] * x[j];
        ss /= (float)C;
        const float s = 1.0f / sqrtf(ss + eps);
        float *o = out + i * C;
        for (int64_t j = 0; j < C; j++)
            o[j] = (x[j] * s) * w[j];
        rstd[i] = s;
    }
}

/* y = w * x * r with r = (mean(x^2) + eps)^-1/2, so dr/dx_j = -r^3 x_j / C
 * and, with dn = w * dy and xh = x * r:
 *   dx_j = r * (dn_j - xh_j * mean(dn * xh));   dw_j += dy_j * xh_j. */
static void cpu_rmsnorm_bwd(void *ctx, float *dinp, float *dw, const float *dout,
                            const float *inp, const float *w, const float *rstd,
                            int64_t N, int64_t C)
{
    (void)ctx;
    for (int64_t i = 0; i < N; i++) {
        const float *dy = dout + i * C, *x = inp + i * C;
        float *dx = dinp + i * C;
        const float r = rstd[i];
        float dot = 0.0f;
        for (int64_t j = 0; j < C; j++)
            dot += (w[j] * dy[j]) * (x[j] * r);
        dot /= (float)C;
        for (int64_t j = 0; j < C; j++) {
            const float xh = x[j] * r;
            dw[j] += dy[j] * xh;
            dx[j] += (w[j] * dy[j] - xh * dot) * r;
        }
    }
}

/* ------------------------------------------------------------------ */
/* GELU, tanh approximation (Hendrycks & Gimpel 2016, eq. in section 2) */

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

static void cpu_gelu_fwd(void *ctx, float *out, const float *inp, int64_t n)
{
    (void)ctx;
    for (int64_t i = 0; i < n; i++) {
        float x = inp[i];
        float cube = 0.044715f * x * x * x;
        out[i] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + cube)));
    }
}

/* d[i] = gelu'(inp[i]) * d[i], in place. */
static void cpu_gelu_bwd(void *ctx, float *d, const float *inp, int64_t n)
{
    (void)ctx;
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
/* SwiGLU (Shazeer 2020): silu(gate) * up, silu(x) = x * sigmoid(x)     */

static void cpu_swiglu_fwd(void *ctx, float *out, const float *h, int64_t N,
                           int64_t f)
{
    (void)ctx;
    for (int64_t i = 0; i < N; i++) {
        const float *gate = h + i * 2 * f, *up = gate + f;
        for (int64_t j = 0; j < f; j++) {
            const float sig = 1.0f / (1.0f + expf(-gate[j]));
            out[i * f + j] = (gate[j] * sig) * up[j];
        }
    }
}

/* silu'(x) = sig(x) * (1 + x * (1 - sig(x))). */
static void cpu_swiglu_bwd(void *ctx, float *dh, const float *dout, const float *h,
                           int64_t N, int64_t f)
{
    (void)ctx;
    for (int64_t i = 0; i < N; i++) {
        const float *gate = h + i * 2 * f, *up = gate + f, *d = dout + i * f;
        float *dgate = dh + i * 2 * f, *dup = dgate + f;
        for (int64_t j = 0; j < f; j++) {
            const float x = gate[j];
            const float sig = 1.0f / (1.0f + expf(-x));
            dgate[j] = d[j] * up[j] * (sig * (1.0f + x * (1.0f - sig)));
            dup[j] = d[j] * (x * sig);
        }
    }
}

/* ------------------------------------------------------------------ */
/* Causal softmax attention, grouped-query                              */

/* The shapes of one attention call, for the offsets below. */
struct att_dims {
    int64_t B, T, nh, nkv, g, HS; /* g = nh / nkv */
};

static struct att_dims att_dims(int64_t B, int64_t T, int64_t nh, int64_t nkv,
                                int64_t HS)
{
    OC_ASSERT(nkv >= 1 && nh % nkv == 0);
    return (struct att_dims){B, T, nh, nkv, nh / nkv, HS};
}

/* Offsets into qkv (B,T,nkv,g+2,HS): token (b, t); query head h (group
 * h/g, slot h%g), its group's key (slot g) and value (slot g+1). With g = 1
 * these are (B,T,nh,3,HS)'s q | k | v of head h. Into y (B,T,nh,HS) and
 * att (B,nh,T,T). */
#define TOK_AT(d, b, t) (((b) * (d)->T + (t)) * (d)->nkv * ((d)->g + 2) * (d)->HS)
#define Q_AT(d, b, t, h)                                                       \
    (TOK_AT(d, b, t) + ((h) / (d)->g * ((d)->g + 2) + (h) % (d)->g) * (d)->HS)
#define K_AT(d, b, t, h)                                                       \
    (TOK_AT(d, b, t) + ((h) / (d)->g * ((d)->g + 2) + (d)->g) * (d)->HS)
#define V_AT(d, b, t, h) (K_AT(d, b, t, h) + (d)->HS)
#define Y_AT(d, b, t, h) ((((b) * (d)->T + (t)) * (d)->nh + (h)) * (d)->HS)
#define ATT_AT(d, b, h, t) ((((b) * (d)->nh + (h)) * (d)->T + (t)) * (d)->T)

/* att = causal softmax(q k^T * scale), zero above the diagonal. */
static void attn_scores(const struct att_dims *d, float *att, const float *qkv)
{
    const int64_t HS = d->HS, T = d->T;
    const float scale = 1.0f / sqrtf((float)HS); /* Vaswani et al. 2017 */
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t h = 0; h < d->nh; h++)
            for (int64_t t = 0; t < T; t++) {
                const float *q = qkv + Q_AT(d, b, t, h);
                float *row = att + ATT_AT(d, b, h, t);
                float maxv = -FLT_MAX;
                for (int64_t t2 = 0; t2 <= t; t2++) {
                    const float *k = qkv + K_AT(d, b, t2, h);
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
}

/* y = att @ v per head. */
static void attn_values(const struct att_dims *d, float *y_all, const float *att,
                        const float *qkv)
{
    const int64_t HS = d->HS;
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t t = 0; t < d->T; t++)
            for (int64_t h = 0; h < d->nh; h++) {
                float *y = y_all + Y_AT(d, b, t, h);
                const float *row = att + ATT_AT(d, b, h, t);
                for (int64_t i = 0; i < HS; i++)
                    y[i] = 0.0f;
                for (int64_t t2 = 0; t2 <= t; t2++) {
                    const float *v = qkv + V_AT(d, b, t2, h);
                    float w = row[t2];
                    for (int64_t i = 0; i < HS; i++)
                        y[i] += w * v[i];
                }
            }
}

static void cpu_attn_fwd(void *ctx, float *att, float *y, const float *qkv,
                         int64_t B, int64_t T, int64_t nh, int64_t nkv, int64_t HS)
{
    (void)ctx;
    const struct att_dims d = att_dims(B, T, nh, nkv, HS);
    attn_scores(&d, att, qkv);
    if (y)
        attn_values(&d, y, att, qkv);
}

/* dqkv (written) from dy; 2*T floats of row scratch per call. A group's
 * key and value gradients add its g heads' shares in (t, h) order. */
static void cpu_attn_bwd(void *ctx, float *dqkv, const float *att, const float *qkv,
                         const float *dy, int64_t B, int64_t T, int64_t nh,
                         int64_t nkv, int64_t HS)
{
    (void)ctx;
    const struct att_dims dd = att_dims(B, T, nh, nkv, HS), *d = &dd;
    const float scale = 1.0f / sqrtf((float)HS);
    float *scratch = malloc((size_t)(2 * T) * sizeof *scratch);
    OC_ASSERT(scratch);
    float *datt = scratch, *dpre = scratch + T;
    memset(dqkv, 0, (size_t)(B * T * nkv * (d->g + 2) * HS) * sizeof *dqkv);
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t h = 0; h < nh; h++) {
                const float *row = att + ATT_AT(d, b, h, t);
                const float *q = qkv + Q_AT(d, b, t, h);
                float *dq = dqkv + Q_AT(d, b, t, h);
                const float *dyr = dy + Y_AT(d, b, t, h);
                /* y = sum_t2 att[t2] v[t2] */
                for (int64_t t2 = 0; t2 <= t; t2++) {
                    const float *v = qkv + V_AT(d, b, t2, h);
                    float *dv = dqkv + V_AT(d, b, t2, h);
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
                    const float *k = qkv + K_AT(d, b, t2, h);
                    float *dk = dqkv + K_AT(d, b, t2, h);
                    float g = dpre[t2] * scale;
                    for (int64_t i = 0; i < HS; i++) {
                        dq[i] += k[i] * g;
                        dk[i] += q[i] * g;
                    }
                }
            }
    free(scratch);
}

/* ------------------------------------------------------------------ */
/* Rotary position embedding (Su et al. 2021) on q and k of qkv         */

/* Turns the g query heads and the key of every (token, KV group) of qkv
 * (B,T,nkv,g+2,HS) by sign * the angle of the token's position. */
static void rope_turn(float *qkv, const struct oc_rope *r, int64_t B, int64_t T,
                      int64_t nh, int64_t nkv, int64_t HS, float sign)
{
    const struct att_dims dd = att_dims(B, T, nh, nkv, HS), *d = &dd;
    const int64_t half = HS / 2;
    OC_ASSERT(HS % 2 == 0 && r->pairs == half && half <= OC_ROPE_MAX_PAIRS);
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t i = 0; i < half; i++) {
                /* the angle in fp32, as transformers' LlamaRotaryEmbedding */
                const float a = (float)t * r->inv_freq[i];
                const float c = cosf(a), s = sign * sinf(a);
                for (int64_t j = 0; j < nkv; j++)
                    for (int64_t slot = 0; slot <= d->g; slot++) {
                        float *x = qkv + TOK_AT(d, b, t) + (j * (d->g + 2) + slot) * HS;
                        const float x1 = x[i], x2 = x[i + half];
                        x[i] = x1 * c - x2 * s;
                        x[i + half] = x2 * c + x1 * s;
                    }
            }
}

static void cpu_rope_fwd(void *ctx, float *qkv, const struct oc_rope *r, int64_t B,
                         int64_t T, int64_t nh, int64_t nkv, int64_t HS)
{
    (void)ctx;
    rope_turn(qkv, r, B, T, nh, nkv, HS, 1.0f);
}

/* The rotation's transpose is the rotation by -angle. */
static void cpu_rope_bwd(void *ctx, float *dqkv, const struct oc_rope *r, int64_t B,
                         int64_t T, int64_t nh, int64_t nkv, int64_t HS)
{
    (void)ctx;
    rope_turn(dqkv, r, B, T, nh, nkv, HS, -1.0f);
}

/* ------------------------------------------------------------------ */
/* Adds                                                                 */

static void cpu_add_bias_residual(void *ctx, float *out, const float *bias,
                                  const float *res, int64_t N, int64_t C)
{
    (void)ctx;
    if (bias && res) {
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < C; j++)
                out[i * C + j] = out[i * C + j] + bias[j] + res[i * C + j];
    } else if (bias) {
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < C; j++)
                out[i * C + j] = out[i * C + j] + bias[j];
    } else if (res) {
        for (int64_t i = 0; i < N * C; i++)
            out[i] = out[i] + res[i];
    }
}

/* ------------------------------------------------------------------ */
/* Vocab-parallel embedding                                             */

static void cpu_embed_fwd(void *ctx, float *out, const int32_t *tokens,
                          const float *wte, int64_t N, int64_t C, int64_t V,
                          int64_t v0, int64_t v)
{
    (void)ctx;
    /* VocabParallelEmbedding: rows outside [v0, v0+v) are zero here and
     * come from the other ranks through the all-reduce. */
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

static void cpu_pos_fwd(void *ctx, float *out, const float *wpe, int64_t N,
                        int64_t T, int64_t C)
{
    (void)ctx;
    for (int64_t i = 0; i < N; i++) {
        const float *pe = wpe + (i % T) * C;
        float *o = out + i * C;
        for (int64_t j = 0; j < C; j++)
            o[j] += pe[j];
    }
}

static void cpu_embed_bwd(void *ctx, float *dwte, float *dwpe,
                          const int32_t *tokens, const float *dout, int64_t B,
                          int64_t T, int64_t C, int64_t V, int64_t v0, int64_t v)
{
    (void)ctx;
    const int64_t N = B * T;
    for (int64_t i = 0; i < N; i++) {
        int64_t tok = tokens[i];
        OC_ASSERT(tok >= 0 && tok < V);
        const float *g = dout + i * C;
        if (dwpe) {
            float *pe = dwpe + (i % T) * C;
            for (int64_t j = 0; j < C; j++)
                pe[j] += g[j];
        }
        if (tok >= v0 && tok < v0 + v) {
            float *te = dwte + (tok - v0) * C;
            for (int64_t j = 0; j < C; j++)
                te[j] += g[j];
        }
    }
}

/* ------------------------------------------------------------------ */
/* Vocab-parallel cross-entropy                                         */

static void cpu_ce_max(void *ctx, float *lmax, const float *logits, int64_t N,
                       int64_t v)
{
    (void)ctx;
    for (int64_t i = 0; i < N; i++) {
        const float *row = logits + i * v;
        float m = -FLT_MAX;
        for (int64_t j = 0; j < v; j++)
            if (row[j] > m)
                m = row[j];
        lmax[i] = m;
    }
}

static void cpu_ce_exp(void *ctx, float *logits, float *sumexp, float *tlogit,
                       const float *lmax, const int32_t *targets, int64_t N,
                       int64_t v, int64_t v0, int64_t V)
{
    (void)ctx;
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

static void cpu_ce_finish(void *ctx, float *losses, float *probs,
                          const float *sumexp, const float *tlogit, int64_t N,
                          int64_t v)
{
    (void)ctx;
    for (int64_t i = 0; i < N; i++) {
        float *row = probs + i * v;
        const float s = sumexp[i];
        losses[i] = logf(s) - tlogit[i];
        for (int64_t j = 0; j < v; j++)
            row[j] /= s;
    }
}

/* d loss / d logit = softmax - onehot(target) (Bishop 2006, eq. 4.109),
 * scaled. */
static void cpu_ce_bwd(void *ctx, float *dlogits, const float *probs,
                       const int32_t *targets, float grad_scale, int64_t N,
                       int64_t v, int64_t v0)
{
    (void)ctx;
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
/* AdamW (Loshchilov & Hutter 2019, algorithm 2, as torch.optim.AdamW)  */

static void cpu_adamw(void *ctx, float *w, const float *g, float *m, float *v,
                      int64_t n, const struct oc_adamw *h, int decay_on,
                      int64_t step)
{
    (void)ctx;
    OC_ASSERT(step >= 1 && n >= 0);
    /* Bias corrections (Kingma & Ba 2015, algorithm 1). */
    const float bc1 = (float)(1.0 - pow((double)h->beta1, (double)step));
    const float bc2 = (float)(1.0 - pow((double)h->beta2, (double)step));
    const float decay = decay_on ? h->lr * h->weight_decay : 0.0f;
    for (int64_t j = 0; j < n; j++) {
        float gj = g[j];
        float mj = h->beta1 * m[j] + (1.0f - h->beta1) * gj;
        float vj = h->beta2 * v[j] + (1.0f - h->beta2) * gj * gj;
        m[j] = mj;
        v[j] = vj;
        float wj = w[j] - decay * w[j];
        w[j] = wj - h->lr * (mj / bc1) / (sqrtf(vj / bc2) + h->eps);
    }
}

/* ------------------------------------------------------------------ */

const struct oc_kernel_ops oc_kernel_ops_cpu = {
    .align_floats = 1,
    .reserve = cpu_reserve,
    .weights_changed = cpu_weights_changed,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .linear_fwd = cpu_linear_fwd,
    .linear_bwd = cpu_linear_bwd,
    .layernorm_fwd = cpu_layernorm_fwd,
    .layernorm_bwd = cpu_layernorm_bwd,
    .rmsnorm_fwd = cpu_rmsnorm_fwd,
    .rmsnorm_bwd = cpu_rmsnorm_bwd,
    .gelu_fwd = cpu_gelu_fwd,
    .gelu_bwd = cpu_gelu_bwd,
    .swiglu_fwd = cpu_swiglu_fwd,
    .swiglu_bwd = cpu_swiglu_bwd,
    .rope_fwd = cpu_rope_fwd,
    .rope_bwd = cpu_rope_bwd,
    .attn_fwd = cpu_attn_fwd,
    .attn_bwd = cpu_attn_bwd,
    .flash_attn_fwd = oc_cpu_flash_attn_fwd,
    .flash_attn_bwd = oc_cpu_flash_attn_bwd,
    .add_bias_residual = cpu_add_bias_residual,
    .embed_fwd = cpu_embed_fwd,
    .pos_fwd = cpu_pos_fwd,
    .embed_bwd = cpu_embed_bwd,
    .ce_max = cpu_ce_max,
    .ce_exp = cpu_ce_exp,
    .ce_finish = cpu_ce_finish,
    .ce_bwd = cpu_ce_bwd,
    .adamw = cpu_adamw,
};

struct oc_kernels oc_kernels_cpu(void)
{
    return (struct oc_kernels){&oc_kernel_ops_cpu, NULL};
}
