/* test_kernels_llama.c: the cpu kernel table's entries for Llama-style
 * blocks (kernels/cpu/ops_cpu.c), on inputs small enough to work by hand;
 * ctest's test_kernels_llama (no GPU, no exec/).
 *
 * - RMSNorm, SwiGLU and the rotary embedding: forward values worked out in
 *   the comments (exact where the arithmetic is exact in float, else within
 *   1e-6 relative); backward kernels against central finite differences of
 *   L = sum(out * G) (within 1e-2 of the largest gradient); RMSNorm's
 *   invariant (a row scaled by 1 + d changes its output by eps's share
 *   only); the rotation's (norms kept, backward = transpose, a query-key
 *   product depends only on the distance of their positions).
 * - grouped-query attention equals multi-head attention over the key and
 *   value heads repeated g times (bitwise forward, the query gradients
 *   bitwise, a key's gradient the sum of its g copies'), and its backward
 *   against finite differences.
 * - the embedding's backward without a position table.
 * The cuda kernels are compared with these in kernels/test_kernels.c; the
 * Llama model through them in test_exec_llama.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_fixtures.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* RMSNorm                                                              */

struct rms_ctx {
    const float *w;
    float *rstd;
    int64_t N, C;
    float eps;
};

static void rms_fwd(void *c, const float *x, float *out)
{
    struct rms_ctx *r = c;
    K.ops->rmsnorm_fwd(K.ctx, out, r->rstd, x, r->w, r->N, r->C, r->eps);
}

/* Row [1, 3, 5, 1]: mean of squares (1 + 9 + 25 + 1)/4 = 9; with eps 7,
 * rstd = 1/sqrt(16) = 0.25; w [1, 2, 1, -1]: out = [0.25, 1.5, 1.25,
 * -0.25]. All exact. */
static void test_rmsnorm(void)
{
    const float x[4] = {1, 3, 5, 1}, w[4] = {1, 2, 1, -1};
    float out[4], rstd;
    K.ops->rmsnorm_fwd(K.ctx, out, &rstd, x, w, 1, 4, 7.0f);
    const float want[4] = {0.25f, 1.5f, 1.25f, -0.25f};
    CU_ASSERT_EQUAL(rstd, 0.25f);
    CU_ASSERT(memcmp(out, want, sizeof want) == 0);

    /* backward on 3 rows of 8, Llama's eps */
    enum { N = 3, C = 8 };
    const float eps = 1e-5f;
    float *xs = frand(N * C), *ws = frand(C), *G = frand(N * C);
    float *ys = fzero(N * C), *r = fzero(N), *dx = fzero(N * C), *dw = fzero(C);
    struct rms_ctx c = {ws, r, N, C, eps};
    double *want_dx = fd_grad(rms_fwd, &c, xs, N * C, N * C, G, 1e-2f);
    rms_fwd(&c, xs, ys);
    K.ops->rmsnorm_bwd(K.ctx, dx, dw, G, xs, ws, r, N, C);
    CU_ASSERT(scaled_err(dx, want_dx, N * C) < TOL_FD);
    /* y(l x) = w l x / sqrt(l^2 ms + eps) has dy/dl at l = 1 of w xh eps
     * rstd^2 (xh = x rstd): without eps a scaled row has the same output.
     * So sum(dx * x) = eps rstd^2 sum(G w xh). */
    for (int64_t i = 0; i < N; i++) {
        double dot = 0, pred = 0;
        for (int64_t j = 0; j < C; j++) {
            dot += (double)dx[i * C + j] * xs[i * C + j];
            pred += (double)G[i * C + j] * ws[j] * xs[i * C + j] * r[i];
        }
        pred *= (double)eps * r[i] * r[i];
        CU_ASSERT(fabs(dot - pred) < 1e-6);
        CU_ASSERT(fabs(pred) > 1e-7); /* the eps term is there */
    }
    /* dw = column sums of G * the normalised x; and it adds */
    float *dw2 = fzero(C);
    for (int64_t j = 0; j < C; j++)
        dw2[j] = 1.0f;
    float *dx2 = fzero(N * C);
    K.ops->rmsnorm_bwd(K.ctx, dx2, dw2, G, xs, ws, r, N, C);
    for (int64_t j = 0; j < C; j++) {
        double sw = 0;
        for (int64_t i = 0; i < N; i++)
            sw += (double)G[i * C + j] * xs[i * C + j] * r[i];
        OC_ASSERT_REL(dw[j], sw, 1e-5);
        OC_ASSERT_REL(dw2[j], 1.0 + dw[j], 1e-6); /* added to */
    }
    free(dx2), free(dw2), free(want_dx);
    free(dw), free(dx), free(r), free(ys), free(G), free(ws), free(xs);
}

/* ------------------------------------------------------------------ */
/* SwiGLU                                                               */

struct swiglu_ctx {
    int64_t N, f;
};

static void swiglu_fwd(void *c, const float *h, float *out)
{
    struct swiglu_ctx *s = c;
    K.ops->swiglu_fwd(K.ctx, out, h, s->N, s->f);
}

/* Two rows of f = 2, h = gate | up: [0, 1 | 5, 2] and [-1, 2 | 3, -1].
 * silu(0) = 0; silu(1) = 1/(1 + e^-1) = 0.7310586; silu(-1) = -1 +
 * 0.7310586 = -0.2689414; silu(2) = 2/(1 + e^-2) = 1.7615942.
 * out = [0, 1.4621172], [-0.8068243, -1.7615942]. Backward with dout 1:
 * silu'(0) = 0.5, so dgate = up * 0.5 = 2.5 and dup = silu(0) = 0. */
static void test_swiglu(void)
{
    const float h[8] = {0, 1, 5, 2, -1, 2, 3, -1};
    float out[4], dh[8];
    K.ops->swiglu_fwd(K.ctx, out, h, 2, 2);
    const double s1 = 1.0 / (1.0 + exp(-1.0)), s2 = 2.0 / (1.0 + exp(-2.0));
    CU_ASSERT_EQUAL(out[0], 0.0f);
    OC_ASSERT_REL(out[1], 2 * s1, TOL);
    OC_ASSERT_REL(out[2], 3 * (s1 - 1), TOL);
    OC_ASSERT_REL(out[3], -s2, TOL);
    const float ones[4] = {1, 1, 1, 1};
    K.ops->swiglu_bwd(K.ctx, dh, ones, h, 2, 2);
    CU_ASSERT_EQUAL(dh[0], 2.5f);
    CU_ASSERT_EQUAL(dh[2], 0.0f);
    OC_ASSERT_REL(dh[3], s1, TOL); /* dup = silu(gate) */

    enum { N = 5, f = 7 };
    float *hs = frand(N * 2 * f), *G = frand(N * f), *dd = fzero(N * 2 * f);
    for (int i = 0; i < N * 2 * f; i++)
        hs[i] *= 4.0f;
    struct swiglu_ctx c = {N, f};
    double *want = fd_grad(swiglu_fwd, &c, hs, N * 2 * f, N * f, G, 1e-2f);
    K.ops->swiglu_bwd(K.ctx, dd, G, hs, N, f);
    CU_ASSERT(scaled_err(dd, want, N * 2 * f) < TOL_FD);
    free(want), free(dd), free(G), free(hs);
}

/* ------------------------------------------------------------------ */
/* Rotary position embedding                                            */

static double dot(const float *a, const float *b, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

/* Head size 4 (pairs (0, 2) and (1, 3)), inv_freq [1, 0.5]; one KV group
 * of g = 2 query heads: per token q0 | q1 | k | v, 16 floats. At t = 0
 * nothing turns. At t = 1 pair 0 turns by 1 rad and pair 1 by 0.5 rad:
 * q0 = [1, 0, 0, 0] becomes [cos 1, 0, sin 1, 0]; [0, 1, 0, 0] becomes
 * [0, cos 0.5, 0, sin 0.5]. The value is left as it was. */
static void test_rope(void)
{
    struct oc_rope r = {.pairs = 2, .inv_freq = {1.0f, 0.5f}};
    float qkv[2 * 16] = {0};
    for (int t = 0; t < 2; t++) {
        qkv[t * 16 + 0] = 1.0f;     /* q0 */
        qkv[t * 16 + 4 + 1] = 1.0f; /* q1 */
        qkv[t * 16 + 8 + 0] = 2.0f; /* k */
        for (int i = 0; i < 4; i++)
            qkv[t * 16 + 12 + i] = (float)(i + 1); /* v */
    }
    float before[32];
    memcpy(before, qkv, sizeof qkv);
    K.ops->rope_fwd(K.ctx, qkv, &r, 1, 2, 2, 1, 4);
    CU_ASSERT(memcmp(qkv, before, 16 * sizeof(float)) == 0); /* t = 0 */
    const float *q0 = qkv + 16, *q1 = qkv + 20, *k = qkv + 24, *v = qkv + 28;
    OC_ASSERT_REL(q0[0], cos(1.0), TOL);
    OC_ASSERT_REL(q0[2], sin(1.0), TOL);
    CU_ASSERT(q0[1] == 0.0f && q0[3] == 0.0f);
    OC_ASSERT_REL(q1[1], cos(0.5), TOL);
    OC_ASSERT_REL(q1[3], sin(0.5), TOL);
    OC_ASSERT_REL(k[0], 2 * cos(1.0), TOL);
    OC_ASSERT_REL(k[2], 2 * sin(1.0), TOL);
    CU_ASSERT(memcmp(v, before + 28, 4 * sizeof(float)) == 0);

    /* Llama's frequencies on B 2, T 9, 6 heads over 3 KV groups of 8 */
    enum { B = 2, T = 9, nh = 6, nkv = 3, HS = 8, n = B * T * nkv * 4 * HS };
    struct oc_rope ll = {.pairs = HS / 2};
    for (int i = 0; i < HS / 2; i++)
        ll.inv_freq[i] = (float)pow(10000.0, -2.0 * i / HS);
    float *x = frand(n), *y = frand(n), *rx = malloc(n * sizeof *rx);
    float *ry = malloc(n * sizeof *ry);
    memcpy(rx, x, n * sizeof *rx);
    memcpy(ry, y, n * sizeof *ry);
    K.ops->rope_fwd(K.ctx, rx, &ll, B, T, nh, nkv, HS);
    K.ops->rope_bwd(K.ctx, ry, &ll, B, T, nh, nkv, HS);
    /* a rotation: lengths kept, and rope_bwd is its transpose:
     * <R x, y> = <x, R^T y> */
    OC_ASSERT_REL(dot(rx, rx, n), dot(x, x, n), 1e-6);
    OC_ASSERT_REL(dot(rx, y, n), dot(x, ry, n), 1e-6);
    K.ops->rope_bwd(K.ctx, rx, &ll, B, T, nh, nkv, HS);
    double e = 0;
    for (int i = 0; i < n; i++)
        e = fmax(e, fabs((double)rx[i] - x[i]));
    CU_ASSERT(e < 1e-6); /* turned there and back */
    /* Su et al. 2021, eq. 16: q_m . k_n depends on m - n only. The same q
     * at positions 3 and 7, the same k at 1 and 5 (sequence 0, group 1,
     * query slot 1 against the group's key, slot 2). */
    memcpy(rx, x, n * sizeof *rx);
    const int64_t tok = nkv * 4 * HS, q = (1 * 4 + 1) * HS, kk = (1 * 4 + 2) * HS;
    memcpy(rx + 7 * tok + q, rx + 3 * tok + q, HS * sizeof *rx);
    memcpy(rx + 5 * tok + kk, rx + 1 * tok + kk, HS * sizeof *rx);
    K.ops->rope_fwd(K.ctx, rx, &ll, B, T, nh, nkv, HS);
    const double d1 = dot(rx + 3 * tok + q, rx + 1 * tok + kk, HS);
    const double d2 = dot(rx + 7 * tok + q, rx + 5 * tok + kk, HS);
    CU_ASSERT(fabs(d1 - d2) < 1e-6);
    CU_ASSERT(fabs(d1 - dot(x + 3 * tok + q, x + 1 * tok + kk, HS)) > 1e-3); /* it turned */
    free(ry), free(rx), free(y), free(x);
}

/* ------------------------------------------------------------------ */
/* Grouped-query attention                                              */

struct gqa_ctx {
    float *att;
    int64_t B, T, nh, nkv, HS;
};

static void gqa_fwd(void *c, const float *qkv, float *y)
{
    struct gqa_ctx *a = c;
    K.ops->attn_fwd(K.ctx, a->att, y, qkv, a->B, a->T, a->nh, a->nkv, a->HS);
}

/* g = 2 query heads per KV head against multi-head attention whose head h
 * has q_h and the key and value of group h/2: the same loops over the
 * same numbers. */
static void test_gqa(void)
{
    enum { B = 2, T = 6, nh = 4, nkv = 2, g = 2, HS = 3 };
    const int64_t ng = B * T * nkv * (g + 2) * HS, nm = B * T * nh * 3 * HS;
    const int64_t ny = B * T * nh * HS, na = B * nh * T * T;
    float *gq = frand(ng), *mh = fzero(nm);
    for (int64_t bt = 0; bt < B * T; bt++)
        for (int64_t h = 0; h < nh; h++) {
            const float *grp = gq + (bt * nkv + h / g) * (g + 2) * HS;
            float *m = mh + (bt * nh + h) * 3 * HS;
            memcpy(m, grp + (h % g) * HS, HS * sizeof *m);         /* q */
            memcpy(m + HS, grp + g * HS, 2 * HS * sizeof *m);      /* k, v */
        }
    float *att_g = fzero(na), *att_m = fzero(na), *y_g = fzero(ny), *y_m = fzero(ny);
    K.ops->attn_fwd(K.ctx, att_g, y_g, gq, B, T, nh, nkv, HS);
    K.ops->attn_fwd(K.ctx, att_m, y_m, mh, B, T, nh, nh, HS);
    CU_ASSERT(memcmp(att_g, att_m, na * sizeof(float)) == 0);
    CU_ASSERT(memcmp(y_g, y_m, ny * sizeof(float)) == 0);

    float *G = frand(ny), *dg = frand(ng), *dm = frand(nm); /* written, not added */
    K.ops->attn_bwd(K.ctx, dg, att_g, gq, G, B, T, nh, nkv, HS);
    K.ops->attn_bwd(K.ctx, dm, att_m, mh, G, B, T, nh, nh, HS);
    double worst = 0;
    for (int64_t bt = 0; bt < B * T; bt++)
        for (int64_t j = 0; j < nkv; j++) {
            const float *grp = dg + (bt * nkv + j) * (g + 2) * HS;
            for (int64_t s = 0; s < g; s++) /* the queries: one head each */
                CU_ASSERT(memcmp(grp + s * HS, dm + (bt * nh + j * g + s) * 3 * HS,
                                 HS * sizeof(float)) == 0);
            for (int64_t i = 0; i < 2 * HS; i++) { /* k, v: the sum of g copies */
                double sum = 0;
                for (int64_t s = 0; s < g; s++)
                    sum += dm[(bt * nh + j * g + s) * 3 * HS + HS + i];
                worst = fmax(worst, fabs(grp[g * HS + i] - sum));
            }
        }
    CU_ASSERT(worst < 1e-6);

    /* and against finite differences */
    struct gqa_ctx c = {att_g, B, T, nh, nkv, HS};
    double *want = fd_grad(gqa_fwd, &c, gq, ng, ny, G, 1e-2f);
    CU_ASSERT(scaled_err(dg, want, ng) < TOL_FD);
    free(want), free(dm), free(dg), free(G);
    free(y_m), free(y_g), free(att_m), free(att_g), free(mh), free(gq);
}

/* ------------------------------------------------------------------ */
/* Embedding without positions                                          */

/* test_kernels_cpu's shard [2, 4) of V = 5, C = 2, tokens [0, 2, 3, 4]:
 * dwte as there, and no position table to add to. */
static void test_embedding_no_positions(void)
{
    const int32_t tok[4] = {0, 2, 3, 4};
    const float dout[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    float dwte[4] = {1, 1, 1, 1};
    K.ops->embed_bwd(K.ctx, dwte, NULL, tok, dout, 2, 2, 2, 5, 2, 2);
    const float want[4] = {4, 5, 6, 7};
    CU_ASSERT(memcmp(dwte, want, sizeof want) == 0);
}

static CU_TestInfo tests[] = {
    {"rmsnorm", test_rmsnorm},
    {"swiglu", test_swiglu},
    {"rope", test_rope},
    {"grouped_query_attention", test_gqa},
    {"embedding_no_positions", test_embedding_no_positions},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"kernels_llama", kernels_suite_init, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
