/* attention_flash_cpu.c: fused causal attention on the cpu (see
 * attention_flash_cpu.h, kernels/ops.h's flash_attn_fwd / flash_attn_bwd).
 *
 * The forward is the classic entry's loop (ops_cpu.c: attn_scores and
 * attn_values, the same float operations in the same order for one row)
 * with the row's probabilities kept in a T-float row instead of a (T,T)
 * matrix, and lse = max + log(sum) kept instead. The backward is
 * FlashAttention-2's (Dao 2023, algorithm 2) one pair (t, t2) at a time:
 * the probability is recomputed as exp(s - lse), D[t] = dy[t] . y[t]
 * replaces the classic backward's sum(att * datt) (the two are equal: y =
 * sum_t2 att v[t2]), and dq, dk, dv are summed in the loop order b, h, t,
 * t2, so the dk and dv of a KV group add their g query heads in head order.
 */
#include "attention_flash_cpu.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The shapes of one call, g = nh / nkv query heads per KV group. */
struct fa_dims {
    int64_t B, T, nh, nkv, g, HS;
};

static struct fa_dims fa_dims(int64_t B, int64_t T, int64_t nh, int64_t nkv,
                              int64_t HS)
{
    OC_ASSERT(B >= 1 && T >= 1 && HS >= 1);
    OC_ASSERT(nkv >= 1 && nh >= nkv && nh % nkv == 0);
    return (struct fa_dims){B, T, nh, nkv, nh / nkv, HS};
}

/* Offsets into qkv (B,T,nkv,g+2,HS): the KV group of query head h at token
 * t, and within it h's query, the key and the value. y and dy (B,T,nh,HS),
 * lse (B,nh,T). */
#define GROUP_AT(d, b, t, h) ((((b) * (d)->T + (t)) * (d)->nkv + (h) / (d)->g) * ((d)->g + 2) * (d)->HS)
#define Q_OFF(d, h) (((h) % (d)->g) * (d)->HS)
#define K_OFF(d) ((d)->g * (d)->HS)
#define V_OFF(d) (((d)->g + 1) * (d)->HS)
#define Y_AT(d, b, t, h) ((((b) * (d)->T + (t)) * (d)->nh + (h)) * (d)->HS)
#define LSE_AT(d, b, h, t) (((b) * (d)->nh + (h)) * (d)->T + (t))

/* a . b, summed in index order */
static float fa_dot(const float *a, const float *b, int64_t n)
{
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* One query row: row (T) is scratch for its t+1 scores. */
static void fa_fwd_row(const struct fa_dims *d, float *y, float *lse,
                       const float *qkv, float *row, int64_t b, int64_t h,
                       int64_t t)
{
    const int64_t HS = d->HS;
    const float scale = 1.0f / sqrtf((float)HS); /* Vaswani et al. 2017 */
    const float *q = qkv + GROUP_AT(d, b, t, h) + Q_OFF(d, h);
    float maxv = -FLT_MAX, sum = 0.0f;
    for (int64_t t2 = 0; t2 <= t; t2++) {
        row[t2] = fa_dot(q, qkv + GROUP_AT(d, b, t2, h) + K_OFF(d), HS) * scale;
        maxv = row[t2] > maxv ? row[t2] : maxv;
    }
    for (int64_t t2 = 0; t2 <= t; t2++) {
        row[t2] = expf(row[t2] - maxv);
        sum += row[t2];
    }
    lse[LSE_AT(d, b, h, t)] = maxv + logf(sum);
    const float inv = 1.0f / sum;
    float *yo = y + Y_AT(d, b, t, h);
    for (int64_t i = 0; i < HS; i++)
        yo[i] = 0.0f;
    for (int64_t t2 = 0; t2 <= t; t2++) {
        const float *v = qkv + GROUP_AT(d, b, t2, h) + V_OFF(d);
        const float w = row[t2] * inv;
        for (int64_t i = 0; i < HS; i++)
            yo[i] += w * v[i];
    }
}

void oc_cpu_flash_attn_fwd(void *ctx, float *y, float *lse, const float *qkv,
                           int64_t B, int64_t T, int64_t nh, int64_t nkv,
                           int64_t HS)
{
    (void)ctx;
    const struct fa_dims d = fa_dims(B, T, nh, nkv, HS);
    float *row = malloc((size_t)T * sizeof *row);
    OC_ASSERT(row);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < nh; h++)
            for (int64_t t = 0; t < T; t++)
                fa_fwd_row(&d, y, lse, qkv, row, b, h, t);
    free(row);
}

/* The gradients that query row t of head h sends: dq[t], and dk, dv of
 * the keys t2 <= t of its group (added). */
static void fa_bwd_row(const struct fa_dims *d, float *dqkv, const float *qkv,
                       const float *y, const float *lse, const float *dy,
                       int64_t b, int64_t h, int64_t t)
{
    const int64_t HS = d->HS;
    const float scale = 1.0f / sqrtf((float)HS);
    const int64_t qo = GROUP_AT(d, b, t, h) + Q_OFF(d, h);
    const float *q = qkv + qo, *dyr = dy + Y_AT(d, b, t, h), *yr = y + Y_AT(d, b, t, h);
    float *dq = dqkv + qo;
    const float L = lse[LSE_AT(d, b, h, t)];
    /* = sum_t2 p (dy . v[t2]): the classic backward's "sum(att * datt)" */
    const float D = fa_dot(dyr, yr, HS);
    for (int64_t t2 = 0; t2 <= t; t2++) {
        const int64_t go = GROUP_AT(d, b, t2, h);
        const float *k = qkv + go + K_OFF(d), *v = qkv + go + V_OFF(d);
        float *dk = dqkv + go + K_OFF(d), *dv = dqkv + go + V_OFF(d);
        const float s = fa_dot(q, k, HS) * scale, dp = fa_dot(dyr, v, HS);
        const float p = expf(s - L);
        const float ds = p * (dp - D) * scale; /* d loss / d (q . k) */
        for (int64_t i = 0; i < HS; i++) {
            dv[i] += p * dyr[i];
            dq[i] += ds * k[i];
            dk[i] += ds * q[i];
        }
    }
}

void oc_cpu_flash_attn_bwd(void *ctx, float *dqkv, const float *qkv,
                           const float *y, const float *lse, const float *dy,
                           int64_t B, int64_t T, int64_t nh, int64_t nkv,
                           int64_t HS)
{
    (void)ctx;
    const struct fa_dims d = fa_dims(B, T, nh, nkv, HS);
    OC_ASSERT(dqkv != qkv);
    memset(dqkv, 0, (size_t)(B * T * nkv * (d.g + 2) * HS) * sizeof *dqkv);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < nh; h++)
            for (int64_t t = 0; t < T; t++)
                fa_bwd_row(&d, dqkv, qkv, y, lse, dy, b, h, t);
}
