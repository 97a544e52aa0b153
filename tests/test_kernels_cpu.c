/* test_kernels_cpu.c: the cpu kernel table (kernels/cpu/ops_cpu.h), kernel
 * by kernel, on inputs small enough to work by hand; ctest's
 * test_kernels_cpu (no GPU, no exec/).
 *
 * - linear, LayerNorm, GELU, attention, adds, embedding, cross-entropy and
 *   AdamW forward values worked out in the comments (exact where the
 *   arithmetic is exact in float, else within 1e-6 relative);
 * - the backward kernels against central finite differences of
 *   L = sum(out * G) for a random G (float forward, double differences:
 *   within 1e-2 of the largest gradient), and LayerNorm's invariants (a row
 *   of input gradients sums to zero: a shifted row has the same output; its
 *   dot product with the normalised row is only eps's share: a scaled row
 *   has the same output but for eps);
 * - the vocab-parallel cross-entropy over two shards with the all-reduces
 *   done here equals -log softmax over the whole row;
 * - the fused (flash) attention entries: lse and y by hand with two query
 *   heads on one KV group, against the classic entries with g = 1,
 *   against replicated key-value heads, and their backward against finite
 *   differences.
 * The Llama block's kernels (RMSNorm, SwiGLU, rotary embedding,
 * grouped-query attention) are test_kernels_llama.c's. The whole model is
 * tested through these kernels in test_exec_gpt.c and test_exec_llama.c
 * (tensor-parallel equivalence, finite differences of every part); the
 * cuda kernels against this table in kernels/test_kernels.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_fixtures.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Linear                                                               */

/* inp [[1,2],[3,4]], w [[1,0],[0,1],[1,1]], bias [10,20,30]:
 * out = inp w^T + bias = [[11,22,33],[13,24,37]].
 * dout [[1,0,1],[0,2,0]]: dinp = dout w = [[2,1],[0,2]];
 * dout^T inp = [[1,2],[6,8],[1,2]], added to dw = 1 everywhere;
 * column sums of dout [1,2,1], added to dbias = 0.5. All exact. */
static void test_linear_by_hand(void)
{
    const float inp[4] = {1, 2, 3, 4}, w[6] = {1, 0, 0, 1, 1, 1};
    const float bias[3] = {10, 20, 30}, dout[6] = {1, 0, 1, 0, 2, 0};
    float out[6], dinp[4], dw[6], db[3];
    K.ops->linear_fwd(K.ctx, out, inp, w, bias, 2, 2, 3);
    const float want[6] = {11, 22, 33, 13, 24, 37};
    CU_ASSERT(memcmp(out, want, sizeof want) == 0);
    K.ops->linear_fwd(K.ctx, out, inp, w, NULL, 2, 2, 3);
    CU_ASSERT(out[0] == 1 && out[2] == 3 && out[5] == 7);
    for (int i = 0; i < 6; i++)
        dw[i] = 1.0f;
    for (int i = 0; i < 3; i++)
        db[i] = 0.5f;
    K.ops->linear_bwd(K.ctx, dinp, dw, db, dout, inp, w, 2, 2, 3);
    const float want_dinp[4] = {2, 1, 0, 2}, want_dw[6] = {2, 3, 7, 9, 2, 3};
    const float want_db[3] = {1.5f, 2.5f, 1.5f};
    CU_ASSERT(memcmp(dinp, want_dinp, sizeof want_dinp) == 0);
    CU_ASSERT(memcmp(dw, want_dw, sizeof want_dw) == 0);
    CU_ASSERT(memcmp(db, want_db, sizeof want_db) == 0);
    /* no bias gradient: dw accumulates again, nothing else is touched */
    K.ops->linear_bwd(K.ctx, dinp, dw, NULL, dout, inp, w, 2, 2, 3);
    CU_ASSERT(dw[2] == 13 && dw[3] == 17 && db[1] == 2.5f);
}

/* ------------------------------------------------------------------ */
/* LayerNorm                                                            */

struct ln_ctx {
    const float *w, *b;
    float *mean, *rstd;
    int64_t N, C;
};

static void ln_fwd(void *c, const float *x, float *out)
{
    struct ln_ctx *l = c;
    K.ops->layernorm_fwd(K.ctx, out, l->mean, l->rstd, x, l->w, l->b, l->N, l->C);
}

/* Row [1,2,3,6]: mean 3, variance (4+1+0+9)/4 = 3.5, rstd 1/sqrt(3.5 +
 * 1e-5); with w [1,2,1,1] and b [0,0,0,1]: out = [-2s, -2s, 0, 3s + 1]. */
static void test_layernorm(void)
{
    const float x[4] = {1, 2, 3, 6}, w[4] = {1, 2, 1, 1}, b[4] = {0, 0, 0, 1};
    float out[4], mean, rstd;
    K.ops->layernorm_fwd(K.ctx, out, &mean, &rstd, x, w, b, 1, 4);
    const double s = 1.0 / sqrt(3.5 + 1e-5);
    CU_ASSERT_EQUAL(mean, 3.0f);
    OC_ASSERT_REL(rstd, s, TOL);
    OC_ASSERT_REL(out[0], -2 * s, TOL);
    OC_ASSERT_REL(out[1], -2 * s, TOL);
    CU_ASSERT_EQUAL(out[2], 0.0f);
    OC_ASSERT_REL(out[3], 3 * s + 1, TOL);

    /* backward on 3 rows of 8 */
    enum { N = 3, C = 8 };
    float *xs = frand(N * C), *ws = frand(C), *bs = frand(C), *G = frand(N * C);
    float *ys = fzero(N * C), *m = fzero(N), *r = fzero(N);
    float *dx = fzero(N * C), *dw = fzero(C), *db = fzero(C);
    struct ln_ctx l = {ws, bs, m, r, N, C};
    double *want = fd_grad(ln_fwd, &l, xs, N * C, N * C, G, 1e-2f);
    ln_fwd(&l, xs, ys);
    K.ops->layernorm_bwd(K.ctx, dx, dw, db, G, xs, ws, m, r, N, C);
    CU_ASSERT(scaled_err(dx, want, N * C) < TOL_FD);
    /* Shifting a row does not change its output: the row's input
     * gradients sum to zero. Scaling it by 1 + d changes each normalised
     * value xhat by d * xhat * eps / (var + eps) (eps breaks the scale
     * invariance), so sum(dx * xhat) = rstd * sum(G * w * xhat) * eps *
     * rstd^2. */
    for (int64_t i = 0; i < N; i++) {
        double sum = 0, dot = 0, pred = 0;
        for (int64_t j = 0; j < C; j++) {
            const double xhat = (xs[i * C + j] - m[i]) * (double)r[i];
            sum += dx[i * C + j];
            dot += dx[i * C + j] * xhat;
            pred += (double)G[i * C + j] * ws[j] * xhat;
        }
        pred *= 1e-5 * (double)r[i] * r[i] * r[i];
        CU_ASSERT(fabs(sum) < 1e-6);
        CU_ASSERT(fabs(dot - pred) < 1e-6);
        CU_ASSERT(fabs(pred) > 1e-6); /* the eps term is there */
    }
    /* db = column sums of G; dw = column sums of G * the normalised x */
    for (int64_t j = 0; j < C; j++) {
        double sb = 0, sw = 0;
        for (int64_t i = 0; i < N; i++) {
            sb += G[i * C + j];
            sw += G[i * C + j] * (xs[i * C + j] - m[i]) * r[i];
        }
        OC_ASSERT_REL(db[j], sb, 1e-5);
        OC_ASSERT_REL(dw[j], sw, 1e-5);
    }
    free(want);
    free(db), free(dw), free(dx), free(r), free(m), free(ys);
    free(G), free(bs), free(ws), free(xs);
}

/* ------------------------------------------------------------------ */
/* GELU                                                                 */

struct gelu_ctx {
    int64_t n;
};

static void gelu_fwd(void *c, const float *x, float *out)
{
    K.ops->gelu_fwd(K.ctx, out, x, ((struct gelu_ctx *)c)->n);
}

/* gelu(0) = 0; gelu(1) = 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)) =
 * 0.8411920; gelu(x) - gelu(-x) = x, so gelu(-1) = -0.1588080;
 * gelu'(0) = 0.5. */
static void test_gelu(void)
{
    const float x[3] = {0, 1, -1};
    float y[3], d[3] = {1, 1, 1};
    K.ops->gelu_fwd(K.ctx, y, x, 3);
    CU_ASSERT_EQUAL(y[0], 0.0f);
    OC_ASSERT_REL(y[1], 0.5 * (1 + tanh(sqrt(2 / 3.14159265358979323846) * 1.044715)), TOL);
    OC_ASSERT_REL(y[2], y[1] - 1.0, TOL);
    K.ops->gelu_bwd(K.ctx, d, x, 3);
    CU_ASSERT_EQUAL(d[0], 0.5f);

    enum { n = 64 };
    float *xs = frand(n), *G = frand(n), *dd = malloc(n * sizeof *dd);
    for (int i = 0; i < n; i++)
        xs[i] *= 4.0f;
    struct gelu_ctx g = {n};
    double *want = fd_grad(gelu_fwd, &g, xs, n, n, G, 1e-2f);
    memcpy(dd, G, n * sizeof *dd);
    K.ops->gelu_bwd(K.ctx, dd, xs, n);
    CU_ASSERT(scaled_err(dd, want, n) < TOL_FD);
    free(want), free(dd), free(G), free(xs);
}

/* ------------------------------------------------------------------ */
/* Attention                                                            */

struct attn_ctx {
    float *att;
    int64_t B, T, nh, HS;
};

static void attn_fwd(void *c, const float *qkv, float *y)
{
    struct attn_ctx *a = c;
    K.ops->attn_fwd(K.ctx, a->att, y, qkv, a->B, a->T, a->nh, a->nh, a->HS);
}

/* One head of size 1, two tokens: (q, k, v) = (1, 2, 3) and (1, 0, 5).
 * Token 0 sees itself: att [1, 0], y = 3. Token 1: scores q1 k0 = 2 and
 * q1 k1 = 0, softmax [e^2, 1] / (e^2 + 1) = [0.8807971, 0.1192029],
 * y = 3 * 0.8807971 + 5 * 0.1192029 = 3.2384058. */
static void test_attention(void)
{
    const float qkv[6] = {1, 2, 3, 1, 0, 5};
    float att[4], y[2], att2[4] = {9, 9, 9, 9};
    K.ops->attn_fwd(K.ctx, att, y, qkv, 1, 2, 1, 1, 1);
    const double p = exp(2.0) / (exp(2.0) + 1.0);
    CU_ASSERT(att[0] == 1.0f && att[1] == 0.0f);
    OC_ASSERT_REL(att[2], p, TOL);
    OC_ASSERT_REL(att[3], 1 - p, TOL);
    CU_ASSERT_EQUAL(y[0], 3.0f);
    OC_ASSERT_REL(y[1], 3 * p + 5 * (1 - p), TOL);
    K.ops->attn_fwd(K.ctx, att2, NULL, qkv, 1, 2, 1, 1, 1); /* scores only */
    CU_ASSERT(memcmp(att, att2, sizeof att) == 0);

    /* backward: B 2, T 5, 2 heads of 3 */
    enum { B = 2, T = 5, nh = 2, HS = 3 };
    const int64_t nq = B * T * nh * 3 * HS, ny = B * T * nh * HS;
    float *q = frand(nq), *G = frand(ny), *a = fzero(B * nh * T * T);
    float *yy = fzero(ny), *dq = frand(nq); /* dq is written, not added to */
    struct attn_ctx c = {a, B, T, nh, HS};
    double *want = fd_grad(attn_fwd, &c, q, nq, ny, G, 1e-2f);
    attn_fwd(&c, q, yy);
    K.ops->attn_bwd(K.ctx, dq, a, q, G, B, T, nh, nh, HS);
    CU_ASSERT(scaled_err(dq, want, nq) < TOL_FD);
    free(want), free(dq), free(yy), free(a), free(G), free(q);
}

/* ------------------------------------------------------------------ */
/* Fused (flash) attention, GQA layout (B,T,nkv,g+2,HS)                 */

struct flash_ctx {
    float *lse;
    int64_t B, T, nh, nkv, HS;
};

static void flash_fwd(void *c, const float *qkv, float *y)
{
    struct flash_ctx *a = c;
    K.ops->flash_attn_fwd(K.ctx, y, a->lse, qkv, a->B, a->T, a->nh, a->nkv, a->HS);
}

/* Two query heads of size 1 on one KV group (g = 2), two tokens; per
 * token (q0, q1, k, v) = (1, -1, 2, 3) and (1, 2, 0, 5). Head 0 is the
 * classic test's case: token 0 sees key 2 alone (s = 2, lse = 2 + log 1 =
 * 2, y = 3); token 1 has scores [2, 0]: lse = log(e^2 + 1) = 2.1269280,
 * y = (3 e^2 + 5) / (e^2 + 1) = 3.2384058. Head 1 (q = -1, then 2) reads
 * the same keys and values: s = -2, lse = -2, y = 3; then scores [4, 0]:
 * lse = log(e^4 + 1) = 4.0181499, y = 3 + 2 / (e^4 + 1) = 3.0359724.
 * y is (B,T,nh,HS) = [t0h0, t0h1, t1h0, t1h1], lse (B,nh,T) = [h0t0,
 * h0t1, h1t0, h1t1]. */
static void test_flash_by_hand(void)
{
    const float qkv[8] = {1, -1, 2, 3, 1, 2, 0, 5};
    float y[4], lse[4];
    K.ops->flash_attn_fwd(K.ctx, y, lse, qkv, 1, 2, 2, 1, 1);
    CU_ASSERT(y[0] == 3.0f && y[1] == 3.0f);
    CU_ASSERT(lse[0] == 2.0f && lse[2] == -2.0f);
    OC_ASSERT_REL(lse[1], log(exp(2.0) + 1.0), TOL);
    OC_ASSERT_REL(lse[3], log(exp(4.0) + 1.0), TOL);
    OC_ASSERT_REL(y[2], (3 * exp(2.0) + 5) / (exp(2.0) + 1), TOL);
    OC_ASSERT_REL(y[3], 3 + 2 / (exp(4.0) + 1), TOL);
}

/* With g = 1 (qkv (B,T,nh,3,HS)) the flash entries agree with the classic
 * ones: y within 1e-6 (the same loop); lse is the log of the row's sum of
 * exp(scores), here in double; the backward from lse (D = dy . y) is the
 * classic backward from att within 1e-5 (D is the same sum in another
 * order). Scores of a few units, so the row max matters. */
static void test_flash_vs_classic(void)
{
    enum { B = 2, T = 7, nh = 3, HS = 5 };
    const int64_t nq = B * T * nh * 3 * HS, ny = B * T * nh * HS, nl = B * nh * T;
    const double scale = 1.0 / sqrt((double)HS);
    float *qkv = frand(nq), *dy = frand(ny), *att = fzero(B * nh * T * T);
    float *y0 = fzero(ny), *y = fzero(ny), *lse = fzero(nl);
    float *dq0 = fzero(nq), *dq = frand(nq); /* dq is written, not added to */
    double *want = calloc((size_t)nq, sizeof *want);
    OC_ASSERT(want);
    for (int64_t i = 0; i < nq; i++)
        qkv[i] *= 2.0f;
    K.ops->attn_fwd(K.ctx, att, y0, qkv, B, T, nh, nh, HS);
    K.ops->flash_attn_fwd(K.ctx, y, lse, qkv, B, T, nh, nh, HS);
    for (int64_t i = 0; i < ny; i++)
        want[i] = y0[i];
    CU_ASSERT(scaled_err(y, want, ny) < TOL);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < nh; h++)
            for (int64_t t = 0; t < T; t++) {
                const float *q = qkv + ((b * T + t) * nh + h) * 3 * HS;
                double sum = 0;
                for (int64_t t2 = 0; t2 <= t; t2++) {
                    const float *k = qkv + ((b * T + t2) * nh + h) * 3 * HS + HS;
                    double s = 0;
                    for (int64_t i = 0; i < HS; i++)
                        s += (double)q[i] * k[i];
                    sum += exp(s * scale);
                }
                want[(b * nh + h) * T + t] = log(sum);
            }
    CU_ASSERT(scaled_err(lse, want, nl) < TOL);
    K.ops->attn_bwd(K.ctx, dq0, att, qkv, dy, B, T, nh, nh, HS);
    K.ops->flash_attn_bwd(K.ctx, dq, qkv, y, lse, dy, B, T, nh, nh, HS);
    for (int64_t i = 0; i < nq; i++)
        want[i] = dq0[i];
    CU_ASSERT(scaled_err(dq, want, nq) < 1e-5);
    free(want), free(dq), free(dq0), free(lse), free(y), free(y0);
    free(att), free(dy), free(qkv);
}

/* A KV group serving g = 2 query heads is g = 1 attention with its key
 * and value copied to both heads: y and lse are bitwise equal (the same
 * float operations), dq too, and the group's dk and dv are the sums of
 * the two copies' (within 1e-6: the same terms in another order). */
static void test_flash_gqa_replicated(void)
{
    enum { B = 2, T = 6, nkv = 2, g = 2, nh = nkv * g, HS = 4 };
    const int64_t ng = B * T * nkv * (g + 2) * HS, nr = B * T * nh * 3 * HS;
    const int64_t ny = B * T * nh * HS, nl = B * nh * T;
    float *qg = frand(ng), *qr = fzero(nr), *dy = frand(ny);
    float *yg = fzero(ny), *yr = fzero(ny), *lg = fzero(nl), *lr = fzero(nl);
    float *dg = fzero(ng), *dr = fzero(nr);
    double *want = calloc((size_t)ng, sizeof *want);
    OC_ASSERT(want);
    for (int64_t bt = 0; bt < B * T; bt++)
        for (int64_t h = 0; h < nh; h++) {
            const float *grp = qg + (bt * nkv + h / g) * (g + 2) * HS;
            float *rep = qr + (bt * nh + h) * 3 * HS;
            memcpy(rep, grp + (h % g) * HS, HS * sizeof *rep);        /* q */
            memcpy(rep + HS, grp + g * HS, 2 * HS * sizeof *rep);     /* k, v */
        }
    K.ops->flash_attn_fwd(K.ctx, yg, lg, qg, B, T, nh, nkv, HS);
    K.ops->flash_attn_fwd(K.ctx, yr, lr, qr, B, T, nh, nh, HS);
    CU_ASSERT(memcmp(yg, yr, (size_t)ny * sizeof *yg) == 0);
    CU_ASSERT(memcmp(lg, lr, (size_t)nl * sizeof *lg) == 0);
    K.ops->flash_attn_bwd(K.ctx, dg, qg, yg, lg, dy, B, T, nh, nkv, HS);
    K.ops->flash_attn_bwd(K.ctx, dr, qr, yr, lr, dy, B, T, nh, nh, HS);
    for (int64_t bt = 0; bt < B * T; bt++)
        for (int64_t h = 0; h < nh; h++) {
            double *grp = want + (bt * nkv + h / g) * (g + 2) * HS;
            const float *rep = dr + (bt * nh + h) * 3 * HS;
            for (int64_t i = 0; i < HS; i++)
                grp[(h % g) * HS + i] = rep[i];
            for (int64_t i = 0; i < 2 * HS; i++)
                grp[g * HS + i] += rep[HS + i];
        }
    CU_ASSERT(scaled_err(dg, want, ng) < TOL);
    free(want), free(dr), free(dg), free(lr), free(lg), free(yr), free(yg);
    free(dy), free(qr), free(qg);
}

/* The backward against central differences of sum(y * G), on GQA: B 2,
 * T 5, two KV groups of two query heads of 3. */
static void test_flash_backward(void)
{
    enum { B = 2, T = 5, nh = 4, nkv = 2, HS = 3 };
    const int64_t nq = B * T * nkv * (nh / nkv + 2) * HS, ny = B * T * nh * HS;
    float *q = frand(nq), *G = frand(ny), *lse = fzero(B * nh * T);
    float *yy = fzero(ny), *dq = frand(nq); /* dq is written, not added to */
    struct flash_ctx c = {lse, B, T, nh, nkv, HS};
    double *want = fd_grad(flash_fwd, &c, q, nq, ny, G, 1e-2f);
    flash_fwd(&c, q, yy); /* y and lse of the unmoved q, for the backward */
    K.ops->flash_attn_bwd(K.ctx, dq, q, yy, lse, G, B, T, nh, nkv, HS);
    CU_ASSERT(scaled_err(dq, want, nq) < TOL_FD);
    free(want), free(dq), free(yy), free(lse), free(G), free(q);
}

/* ------------------------------------------------------------------ */
/* Adds, copy, zero                                                     */

static void test_adds(void)
{
    float out[4] = {1, 2, 3, 4};
    const float bias[2] = {10, 20}, res[4] = {100, 200, 300, 400};
    K.ops->add_bias_residual(K.ctx, out, bias, res, 2, 2);
    CU_ASSERT(out[0] == 111 && out[1] == 222 && out[2] == 313 && out[3] == 424);
    K.ops->add_bias_residual(K.ctx, out, bias, NULL, 2, 2);
    CU_ASSERT(out[0] == 121 && out[3] == 444);
    K.ops->add_bias_residual(K.ctx, out, NULL, res, 2, 2);
    CU_ASSERT(out[0] == 221 && out[3] == 844);
    float c[4];
    K.ops->copy(K.ctx, c, out, 4);
    CU_ASSERT(memcmp(c, out, sizeof c) == 0);
    K.ops->zero(K.ctx, c, 3);
    CU_ASSERT(c[0] == 0 && c[2] == 0 && c[3] == 844);
}

/* ------------------------------------------------------------------ */
/* Embedding                                                            */

/* Shard [2, 4) of V = 5, C = 2; B = 2, T = 2; tokens [0, 2, 3, 4]:
 * rows of tokens 2 and 3 from wte, zero for the others; then wpe[i mod 2]
 * added. Backward: dwpe[t] += dout rows t and t + 2; dwte[tok - 2] += the
 * rows of tokens 2 and 3. */
static void test_embedding(void)
{
    const int32_t tok[4] = {0, 2, 3, 4};
    const float wte[4] = {1, 2, 3, 4}, wpe[6] = {10, 20, 30, 40, 99, 99};
    float out[8];
    K.ops->embed_fwd(K.ctx, out, tok, wte, 4, 2, 5, 2, 2);
    const float want[8] = {0, 0, 1, 2, 3, 4, 0, 0};
    CU_ASSERT(memcmp(out, want, sizeof want) == 0);
    K.ops->pos_fwd(K.ctx, out, wpe, 4, 2, 2);
    const float want_pos[8] = {10, 20, 31, 42, 13, 24, 30, 40};
    CU_ASSERT(memcmp(out, want_pos, sizeof want_pos) == 0);

    const float dout[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    float dwte[4] = {0}, dwpe[6] = {0};
    K.ops->embed_bwd(K.ctx, dwte, dwpe, tok, dout, 2, 2, 2, 5, 2, 2);
    const float want_te[4] = {3, 4, 5, 6}, want_pe[6] = {6, 8, 10, 12, 0, 0};
    CU_ASSERT(memcmp(dwte, want_te, sizeof want_te) == 0);
    CU_ASSERT(memcmp(dwpe, want_pe, sizeof want_pe) == 0);
}

/* ------------------------------------------------------------------ */
/* Cross-entropy                                                        */

/* One row of V = 4 logits [1, 2, 3, 0], target 2, split over two shards
 * of v = 2 with the all-reduces done here: max 3, target logit - max 0,
 * sum of exponentials 1 + e^-1 + e^-2 + e^-3, loss = ln of that =
 * 0.4401896 = -log softmax(logits)[2]. */
static void test_cross_entropy(void)
{
    float lg[2][2] = {{1, 2}, {3, 0}};
    const int32_t tgt = 2;
    float lmax[2], se[2], tl[2], loss[2];
    for (int r = 0; r < 2; r++)
        K.ops->ce_max(K.ctx, &lmax[r], lg[r], 1, 2);
    CU_ASSERT(lmax[0] == 2 && lmax[1] == 3);
    const float m = lmax[0] > lmax[1] ? lmax[0] : lmax[1]; /* all-reduce MAX */
    for (int r = 0; r < 2; r++)
        K.ops->ce_exp(K.ctx, lg[r], &se[r], &tl[r], &m, &tgt, 1, 2, 2 * r, 4);
    CU_ASSERT(tl[0] == 0 && tl[1] == 0);
    const float t = tl[0] + tl[1], s = se[0] + se[1]; /* all-reduce SUM */
    for (int r = 0; r < 2; r++)
        K.ops->ce_finish(K.ctx, &loss[r], lg[r], &s, &t, 1, 2);
    const double want = log(1 + exp(-1.0) + exp(-2.0) + exp(-3.0));
    OC_ASSERT_REL(loss[0], want, TOL);
    CU_ASSERT_EQUAL(loss[0], loss[1]);
    OC_ASSERT_REL(lg[1][0], 1.0 / exp(want), TOL); /* the target's probability */
    OC_ASSERT_REL(lg[0][0] + lg[0][1] + lg[1][0] + lg[1][1], 1.0, TOL);

    /* backward: 0.5 * (p - onehot), in place, the target on shard 1 */
    float d[2][2];
    memcpy(d, lg, sizeof d);
    for (int r = 0; r < 2; r++)
        K.ops->ce_bwd(K.ctx, d[r], d[r], &tgt, 0.5f, 1, 2, 2 * r);
    CU_ASSERT_EQUAL(d[0][1], 0.5f * lg[0][1]);
    CU_ASSERT_EQUAL(d[1][0], 0.5f * lg[1][0] - 0.5f);
    CU_ASSERT_EQUAL(d[1][1], 0.5f * lg[1][1]);
}

/* ------------------------------------------------------------------ */
/* AdamW                                                                */

/* Step 1, w = 1, g = 0.5, m = v = 0, lr 0.1, betas 0.9 / 0.999, eps 0,
 * wd 0.01: m = 0.05, v = 0.00025; m/(1-0.9) = 0.5, v/(1-0.999) = 0.25,
 * sqrt 0.5, so the step is lr * 1 = 0.1. Decay: w = 1 - 0.1*0.01 = 0.999,
 * then 0.899; without: 0.9. */
static void test_adamw(void)
{
    const struct oc_adamw h = {0.1f, 0.9f, 0.999f, 0.0f, 0.01f};
    for (int decay = 0; decay <= 1; decay++) {
        float w[2] = {1, 1}, g[2] = {0.5f, -0.5f}, m[2] = {0}, v[2] = {0};
        K.ops->adamw(K.ctx, w, g, m, v, 2, &h, decay, 1);
        OC_ASSERT_REL(m[0], 0.05, TOL);
        OC_ASSERT_REL(v[0], (1.0f - 0.999f) * 0.25f, TOL); /* 0.999f is inexact */
        OC_ASSERT_REL(w[0], decay ? 0.899 : 0.9, TOL);
        OC_ASSERT_REL(w[1], decay ? 1.099 : 1.1, TOL);
    }
}

static CU_TestInfo tests[] = {
    {"linear_by_hand", test_linear_by_hand},
    {"layernorm", test_layernorm},
    {"gelu", test_gelu},
    {"attention", test_attention},
    {"flash_by_hand", test_flash_by_hand},
    {"flash_vs_classic", test_flash_vs_classic},
    {"flash_gqa_replicated", test_flash_gqa_replicated},
    {"flash_backward_fd", test_flash_backward},
    {"adds", test_adds},
    {"embedding", test_embedding},
    {"cross_entropy_tp2", test_cross_entropy},
    {"adamw_by_hand", test_adamw},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"kernels_cpu", kernels_suite_init, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
