/* test_reference.c: the CPU references of the CUDA kernels (reference.h)
 * against exec/gpt.c and exec/params.c, which they mirror; and the two
 * references with no exec/ twin (the general GEMM, bf16 rounding) against
 * values worked by hand and cblas. ctest's test_kernels_reference; runs
 * everywhere (no GPU, no nvcc).
 *
 * exec/gpt.c keeps its kernels static, so each is checked through the part
 * function that uses it, on the tiny model (C 64, 4 heads of 16, F 256,
 * V 512; one layer), B = 2, T = 9. Each reference is fed the activations
 * gpt.c kept (its act structs), so a mismatch names one kernel:
 *   attention and MLP forward (t = 1): ln, qkv / fc, att and y / GELU, the
 *     projection plus bias plus residual, each against the act field;
 *   attention and MLP backward (t = 1): the references chained from the
 *     same acts and dout give din and every weight gradient;
 *   embedding and head (t = 2, the two shards in lockstep, step mode, the
 *     all-reduces done here in rank order on both sides): the vocab-parallel
 *     embedding forward and backward, and the cross-entropy in its four
 *     steps with the max / sum / sum all-reduces between;
 *   AdamW over a whole arena, tensor by tensor with each one's decay flag.
 * Error measure: max |ref - gpt| / max |gpt| over the tensor. Tolerances:
 * 1e-6 where the reference repeats gpt.c's loop (the same operations in
 * the same order: bitwise equal with this build, 1e-6 leaves room for a
 * compiler that contracts a*b+c differently), 1e-5 where a GEMM is inside
 * (plain loops here, OpenBLAS there: another summation order).
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"
#include "params.h"
#include "reference.h"
#include "test_util.h"

#define SEED 777ULL
#define TOL_MIRROR 1e-6
#define TOL_GEMM 1e-5
#define B_ 2
#define T_ 9

/* max |a - b| / max |b|; NaN gives NaN (fails every <= test) */
static double scaled_err(const float *a, const float *b, int64_t n)
{
    double emax = 0.0, bmax = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(b[i]))
            return NAN;
        double e = fabs((double)a[i] - (double)b[i]);
        emax = e > emax ? e : emax;
        bmax = fabs((double)b[i]) > bmax ? fabs((double)b[i]) : bmax;
    }
    if (emax == 0.0)
        return 0.0;
    return bmax > 0.0 ? emax / bmax : INFINITY;
}

#define ASSERT_CLOSE(ref, got, n, tol)                                         \
    do {                                                                       \
        double e_ = scaled_err((ref), (got), (n));                             \
        if (!(e_ <= (tol)))                                                    \
            fprintf(stderr, "\n  %s vs %s: error %.3g > %.0e", #ref, #got, e_, \
                    (tol));                                                    \
        CU_ASSERT(e_ <= (tol));                                                \
    } while (0)

static uint64_t rng = 0x1234567ULL;

static float urand(void) /* splitmix64 -> [-1, 1) */
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (float)((double)(z >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

static float *frand(int64_t n, float scale)
{
    float *p = oc_xmalloc((size_t)n * sizeof *p);
    for (int64_t i = 0; i < n; i++)
        p[i] = scale * urand();
    return p;
}

static float *fzero(int64_t n)
{
    return oc_xcalloc((size_t)n, sizeof(float));
}

static float *fcopy(const float *a, int64_t n)
{
    float *p = oc_xmalloc((size_t)n * sizeof *p);
    memcpy(p, a, (size_t)n * sizeof *p);
    return p;
}

/* ------------------------------------------------------------------ */
/* One TP rank of the tiny model, one layer, embedding and head         */

struct rank {
    struct oc_model m;
    struct oc_gpt_dims d;
    struct oc_params p;
};

static void rank_init(struct rank *r, int64_t tp, int64_t tp_rank)
{
    struct oc_status st = {{0}};
    int rc = oc_model_load("tiny", &r->m, &st);
    if (rc != 0)
        fprintf(stderr, "\n  cannot load tiny: %s\n", st.msg);
    OC_ASSERT(rc == 0);
    r->m.num_hidden_layers = 1;
    OC_ASSERT(oc_gpt_dims_init(&r->d, &r->m, tp, tp_rank, B_, T_, &st) == 0);
    int64_t layers[] = {0};
    struct oc_params_opts o = {tp, tp_rank, layers, 1, 1, 1, SEED};
    OC_ASSERT(oc_params_init(&r->p, &r->m, &o, &st) == 0);
    /* Gains and biases off 1 and 0 (a function of the global element, so
     * replicated tensors stay equal over ranks): a dropped bias shows. */
    for (int64_t i = 0; i < r->p.nt; i++) {
        const struct oc_param_tensor *t = &r->p.t[i];
        if (t->gcols != 1)
            continue;
        for (int64_t k = 0; k < t->rows; k++)
            r->p.w[t->offset + k] +=
                0.1f * sinf(0.7f * (float)(t->row0 + k + 1) + (float)(3 * t->kind));
    }
}

static void rank_free(struct rank *r)
{
    oc_params_free(&r->p);
}

/* Two ranks in lockstep: call f on each until OC_GPT_DONE, doing each
 * all-reduce in rank order (acc = buf0 op buf1). */
typedef int (*part_fn)(struct oc_gpt_call *c, struct rank *r, int k, void *arg);

static void lockstep2(struct rank *rk, part_fn f, void *arg, int64_t expect_reduces)
{
    struct oc_gpt_call c[2] = {{0}, {0}};
    for (;;) {
        int rc0 = f(&c[0], &rk[0], 0, arg), rc1 = f(&c[1], &rk[1], 1, arg);
        CU_ASSERT_EQUAL_FATAL(rc0, rc1);
        if (rc0 == OC_GPT_DONE)
            break;
        CU_ASSERT_EQUAL_FATAL(rc0, OC_GPT_REDUCE);
        CU_ASSERT_EQUAL_FATAL(c[0].n, c[1].n);
        for (int64_t i = 0; i < c[0].n; i++) {
            float a = c[0].buf[i], b = c[1].buf[i];
            float s = c[0].op == OC_GPT_MAX ? (a > b ? a : b) : a + b;
            c[0].buf[i] = c[1].buf[i] = s;
        }
    }
    CU_ASSERT_EQUAL(c[0].nreduce, expect_reduces);
}

/* ------------------------------------------------------------------ */
/* References with no exec/ twin                                        */

/* A = [[1,2],[3,4]], B = [[5,6],[7,8]] (row-major): A B = [[19,22],[43,50]];
 * A^T B = [[1*5+3*7, 1*6+3*8],[2*5+4*7, 2*6+4*8]] = [[26,30],[38,44]];
 * A B^T = [[1*5+2*6, 1*7+2*8],[3*5+4*6, 3*7+4*8]] = [[17,23],[39,53]];
 * with alpha 2, beta 1 on C = [[1,1],[1,1]]: 2 A B + C = [[39,45],[87,101]]. */
static void test_gemm_by_hand(void)
{
    const float A[4] = {1, 2, 3, 4}, B[4] = {5, 6, 7, 8};
    float C[4];
    oc_ref_gemm(0, 0, 2, 2, 2, 1.0f, A, 2, B, 2, 0.0f, C, 2);
    CU_ASSERT(C[0] == 19 && C[1] == 22 && C[2] == 43 && C[3] == 50);
    oc_ref_gemm(1, 0, 2, 2, 2, 1.0f, A, 2, B, 2, 0.0f, C, 2);
    CU_ASSERT(C[0] == 26 && C[1] == 30 && C[2] == 38 && C[3] == 44);
    oc_ref_gemm(0, 1, 2, 2, 2, 1.0f, A, 2, B, 2, 0.0f, C, 2);
    CU_ASSERT(C[0] == 17 && C[1] == 23 && C[2] == 39 && C[3] == 53);
    for (int i = 0; i < 4; i++)
        C[i] = 1.0f;
    oc_ref_gemm(0, 0, 2, 2, 2, 2.0f, A, 2, B, 2, 1.0f, C, 2);
    CU_ASSERT(C[0] == 39 && C[1] == 45 && C[2] == 87 && C[3] == 101);
}

/* The general GEMM against cblas_sgemm, every transpose, padded strides. */
static void test_gemm_vs_cblas(void)
{
    const int M = 13, N = 17, K = 29;
    for (int ta = 0; ta <= 1; ta++)
        for (int tb = 0; tb <= 1; tb++) {
            const int lda = (ta ? M : K) + 2, ldb = (tb ? K : N) + 3, ldc = N + 1;
            float *A = frand((ta ? K : M) * lda, 1.0f);
            float *B = frand((tb ? N : K) * ldb, 1.0f);
            float *C = frand(M * ldc, 1.0f), *R = fcopy(C, M * ldc);
            cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                        tb ? CblasTrans : CblasNoTrans, M, N, K, 0.5f, A, lda, B,
                        ldb, 0.25f, C, ldc);
            oc_ref_gemm(ta, tb, M, N, K, 0.5f, A, lda, B, ldb, 0.25f, R, ldc);
            ASSERT_CLOSE(R, C, M * ldc, TOL_GEMM);
            free(R);
            free(C);
            free(B);
            free(A);
        }
}

/* bf16 keeps the top 16 bits of the float, rounded to nearest even:
 * 1.0 = 0x3F800000 -> 0x3F80; 1 + 2^-8 = 0x3F808000 is the tie between
 * 0x3F80 and 0x3F81 -> even 0x3F80; 1 + 3*2^-8 = 0x3F818000, tie between
 * 0x3F81 and 0x3F82 -> even 0x3F82; 1 + 2^-8 + 2^-20 is above the tie ->
 * 0x3F81; -2 = 0xC0000000 -> 0xC000; the largest float rounds up to
 * infinity 0x7F80; 0x4049 -> 0x40490000 = 3.140625. */
static void test_bf16_by_hand(void)
{
    CU_ASSERT_EQUAL(oc_ref_f32_to_bf16(1.0f), 0x3F80);
    CU_ASSERT_EQUAL(oc_ref_f32_to_bf16(1.00390625f), 0x3F80);
    CU_ASSERT_EQUAL(oc_ref_f32_to_bf16(1.01171875f), 0x3F82);
    CU_ASSERT_EQUAL(oc_ref_f32_to_bf16(1.00390625f + 0x1p-20f), 0x3F81);
    CU_ASSERT_EQUAL(oc_ref_f32_to_bf16(-2.0f), 0xC000);
    CU_ASSERT_EQUAL(oc_ref_f32_to_bf16(3.4028235e38f), 0x7F80);
    CU_ASSERT(isnan(oc_ref_bf16_to_f32(oc_ref_f32_to_bf16(NAN))));
    CU_ASSERT_EQUAL(oc_ref_bf16_to_f32(0x4049), 3.140625f);
}

/* ------------------------------------------------------------------ */
/* Attention and MLP, t = 1                                             */

static void test_attention(void)
{
    struct rank r;
    rank_init(&r, 1, 0);
    const struct oc_gpt_dims *d = &r.d;
    struct oc_params *p = &r.p;
    const int64_t N = d->B * d->T, C = d->C, cl = d->nh * d->HS;
    float *in = frand(N * C, 1.0f), *out = fzero(N * C);
    float *mem = fzero(oc_gpt_attn_act_floats(d));
    struct oc_gpt_attn_act a;
    oc_gpt_attn_act_bind(&a, d, in, mem);
    struct oc_gpt_call c = {0};
    CU_ASSERT_EQUAL_FATAL(oc_gpt_attn_fwd(&c, d, p, 0, &a, out), OC_GPT_DONE);

    /* forward, kernel by kernel on gpt.c's own activations */
    float *ln = fzero(N * C), *mean = fzero(N), *rstd = fzero(N);
    oc_ref_layernorm_fwd(ln, mean, rstd, in, oc_params_w(p, OC_P_LN1W, 0),
                         oc_params_w(p, OC_P_LN1B, 0), N, C);
    ASSERT_CLOSE(ln, a.ln, N * C, TOL_MIRROR);
    ASSERT_CLOSE(mean, a.mean, N, TOL_MIRROR);
    ASSERT_CLOSE(rstd, a.rstd, N, TOL_MIRROR);
    float *qkv = fzero(N * 3 * cl);
    oc_ref_matmul_fwd(qkv, a.ln, oc_params_w(p, OC_P_QKVW, 0),
                      oc_params_w(p, OC_P_QKVB, 0), N, C, 3 * cl);
    ASSERT_CLOSE(qkv, a.qkv, N * 3 * cl, TOL_GEMM);
    float *att = fzero(oc_gpt_att_floats(d)), *y = fzero(N * cl);
    oc_ref_attn_fwd(att, y, a.qkv, d->B, d->T, d->nh, d->HS);
    ASSERT_CLOSE(att, a.att, oc_gpt_att_floats(d), TOL_MIRROR);
    ASSERT_CLOSE(y, a.y, N * cl, TOL_MIRROR);
    float *ro = fzero(N * C);
    oc_ref_matmul_fwd(ro, a.y, oc_params_w(p, OC_P_ATTPROJW, 0), NULL, N, cl, C);
    oc_ref_add_bias_residual(ro, oc_params_w(p, OC_P_ATTPROJB, 0), in, N, C);
    ASSERT_CLOSE(ro, out, N * C, TOL_GEMM);
    /* selective recompute's scores alone */
    memset(att, 0xff, (size_t)oc_gpt_att_floats(d) * sizeof *att);
    oc_ref_attn_fwd(att, NULL, a.qkv, d->B, d->T, d->nh, d->HS);
    ASSERT_CLOSE(att, a.att, oc_gpt_att_floats(d), TOL_MIRROR);

    /* backward: the references chained from the same acts and dout */
    oc_params_zero_grad(p);
    float *dout = frand(N * C, 1.0f), *din = fzero(N * C);
    float *work = fzero(oc_gpt_work_floats(d));
    CU_ASSERT_EQUAL_FATAL(oc_gpt_attn_bwd(&c, d, p, 0, &a, dout, din, work),
                          OC_GPT_DONE);
    float *dy = fzero(N * cl), *dprojw = fzero(C * cl), *dprojb = fzero(C);
    oc_ref_matmul_bwd(dy, dprojw, dprojb, dout, a.y,
                      oc_params_w(p, OC_P_ATTPROJW, 0), N, cl, C);
    float *dqkv = fzero(N * 3 * cl), *scr = fzero(2 * d->T);
    oc_ref_attn_bwd(dqkv, a.att, a.qkv, dy, d->B, d->T, d->nh, d->HS, scr);
    float *dln = fzero(N * C), *dqkvw = fzero(3 * cl * C), *dqkvb = fzero(3 * cl);
    oc_ref_matmul_bwd(dln, dqkvw, dqkvb, dqkv, a.ln, oc_params_w(p, OC_P_QKVW, 0),
                      N, C, 3 * cl);
    float *rdin = fcopy(dout, N * C), *dlnw = fzero(C), *dlnb = fzero(C);
    oc_ref_layernorm_bwd(rdin, dlnw, dlnb, dln, in, oc_params_w(p, OC_P_LN1W, 0),
                         a.mean, a.rstd, N, C);
    ASSERT_CLOSE(rdin, din, N * C, TOL_GEMM);
    ASSERT_CLOSE(dprojw, oc_params_g(p, OC_P_ATTPROJW, 0), C * cl, TOL_GEMM);
    ASSERT_CLOSE(dprojb, oc_params_g(p, OC_P_ATTPROJB, 0), C, TOL_GEMM);
    ASSERT_CLOSE(dqkvw, oc_params_g(p, OC_P_QKVW, 0), 3 * cl * C, TOL_GEMM);
    ASSERT_CLOSE(dqkvb, oc_params_g(p, OC_P_QKVB, 0), 3 * cl, TOL_GEMM);
    ASSERT_CLOSE(dlnw, oc_params_g(p, OC_P_LN1W, 0), C, TOL_GEMM);
    ASSERT_CLOSE(dlnb, oc_params_g(p, OC_P_LN1B, 0), C, TOL_GEMM);

    free(dlnb);
    free(dlnw);
    free(rdin);
    free(dqkvb);
    free(dqkvw);
    free(dln);
    free(scr);
    free(dqkv);
    free(dprojb);
    free(dprojw);
    free(dy);
    free(work);
    free(din);
    free(dout);
    free(ro);
    free(y);
    free(att);
    free(qkv);
    free(rstd);
    free(mean);
    free(ln);
    free(mem);
    free(out);
    free(in);
    rank_free(&r);
}

static void test_mlp(void)
{
    struct rank r;
    rank_init(&r, 1, 0);
    const struct oc_gpt_dims *d = &r.d;
    struct oc_params *p = &r.p;
    const int64_t N = d->B * d->T, C = d->C, f = d->f;
    float *in = frand(N * C, 1.0f), *out = fzero(N * C);
    float *mem = fzero(oc_gpt_mlp_act_floats(d));
    struct oc_gpt_mlp_act a;
    oc_gpt_mlp_act_bind(&a, d, in, mem);
    struct oc_gpt_call c = {0};
    CU_ASSERT_EQUAL_FATAL(oc_gpt_mlp_fwd(&c, d, p, 0, &a, out), OC_GPT_DONE);

    float *ln = fzero(N * C), *mean = fzero(N), *rstd = fzero(N);
    oc_ref_layernorm_fwd(ln, mean, rstd, in, oc_params_w(p, OC_P_LN2W, 0),
                         oc_params_w(p, OC_P_LN2B, 0), N, C);
    ASSERT_CLOSE(ln, a.ln, N * C, TOL_MIRROR);
    ASSERT_CLOSE(mean, a.mean, N, TOL_MIRROR);
    ASSERT_CLOSE(rstd, a.rstd, N, TOL_MIRROR);
    float *h = fzero(N * f), *hg = fzero(N * f);
    oc_ref_matmul_fwd(h, a.ln, oc_params_w(p, OC_P_FCW, 0),
                      oc_params_w(p, OC_P_FCB, 0), N, C, f);
    ASSERT_CLOSE(h, a.h, N * f, TOL_GEMM);
    oc_ref_gelu_fwd(hg, a.h, N * f);
    ASSERT_CLOSE(hg, a.hg, N * f, TOL_MIRROR);
    float *ro = fzero(N * C);
    oc_ref_matmul_fwd(ro, a.hg, oc_params_w(p, OC_P_FCPROJW, 0), NULL, N, f, C);
    oc_ref_add_bias_residual(ro, oc_params_w(p, OC_P_FCPROJB, 0), in, N, C);
    ASSERT_CLOSE(ro, out, N * C, TOL_GEMM);

    oc_params_zero_grad(p);
    float *dout = frand(N * C, 1.0f), *din = fzero(N * C);
    float *work = fzero(oc_gpt_work_floats(d));
    CU_ASSERT_EQUAL_FATAL(oc_gpt_mlp_bwd(&c, d, p, 0, &a, dout, din, work),
                          OC_GPT_DONE);
    float *dh = fzero(N * f), *dpw = fzero(C * f), *dpb = fzero(C);
    oc_ref_matmul_bwd(dh, dpw, dpb, dout, a.hg, oc_params_w(p, OC_P_FCPROJW, 0),
                      N, f, C);
    oc_ref_gelu_bwd(dh, a.h, N * f);
    float *dln = fzero(N * C), *dfw = fzero(f * C), *dfb = fzero(f);
    oc_ref_matmul_bwd(dln, dfw, dfb, dh, a.ln, oc_params_w(p, OC_P_FCW, 0), N, C, f);
    float *rdin = fcopy(dout, N * C), *dlnw = fzero(C), *dlnb = fzero(C);
    oc_ref_layernorm_bwd(rdin, dlnw, dlnb, dln, in, oc_params_w(p, OC_P_LN2W, 0),
                         a.mean, a.rstd, N, C);
    ASSERT_CLOSE(rdin, din, N * C, TOL_GEMM);
    ASSERT_CLOSE(dpw, oc_params_g(p, OC_P_FCPROJW, 0), C * f, TOL_GEMM);
    ASSERT_CLOSE(dpb, oc_params_g(p, OC_P_FCPROJB, 0), C, TOL_GEMM);
    ASSERT_CLOSE(dfw, oc_params_g(p, OC_P_FCW, 0), f * C, TOL_GEMM);
    ASSERT_CLOSE(dfb, oc_params_g(p, OC_P_FCB, 0), f, TOL_GEMM);
    ASSERT_CLOSE(dlnw, oc_params_g(p, OC_P_LN2W, 0), C, TOL_GEMM);
    ASSERT_CLOSE(dlnb, oc_params_g(p, OC_P_LN2B, 0), C, TOL_GEMM);

    free(dlnb);
    free(dlnw);
    free(rdin);
    free(dfb);
    free(dfw);
    free(dln);
    free(dpb);
    free(dpw);
    free(dh);
    free(work);
    free(din);
    free(dout);
    free(ro);
    free(hg);
    free(h);
    free(rstd);
    free(mean);
    free(ln);
    free(mem);
    free(out);
    free(in);
    rank_free(&r);
}

/* ------------------------------------------------------------------ */
/* Embedding and head, t = 2 in lockstep                                */

struct embed_arg {
    const int32_t *tok;
    float *out[2];
    const float *dout;
};

static int embed_fwd_part(struct oc_gpt_call *c, struct rank *r, int k, void *arg)
{
    struct embed_arg *e = arg;
    return oc_gpt_embed_fwd(c, &r->d, &r->p, e->tok, e->out[k]);
}

static int embed_bwd_part(struct oc_gpt_call *c, struct rank *r, int k, void *arg)
{
    struct embed_arg *e = arg;
    (void)k;
    return oc_gpt_embed_bwd(c, &r->d, &r->p, e->tok, e->dout);
}

static void test_embedding(void)
{
    struct rank rk[2];
    rank_init(&rk[0], 2, 0);
    rank_init(&rk[1], 2, 1);
    const struct oc_gpt_dims *d = &rk[0].d;
    const int64_t N = d->B * d->T, C = d->C, V = d->V, v = d->v;
    int32_t tok[B_ * T_];
    for (int64_t i = 0; i < N; i++)
        tok[i] = (int32_t)((urand() + 1.0f) * 0.5f * (float)V) % (int32_t)V;
    tok[0] = tok[5] = tok[11] = 300; /* rank 1's, three times */
    tok[1] = tok[2] = 7;             /* rank 0's, twice */
    tok[3] = (int32_t)v - 1;         /* the edges of the split */
    tok[4] = (int32_t)v;
    struct embed_arg e = {tok, {fzero(N * C), fzero(N * C)}, frand(N * C, 1.0f)};
    lockstep2(rk, embed_fwd_part, &e, 1);

    /* reference: each rank's local rows, summed in rank order, then wpe */
    float *ref = fzero(N * C), *part = fzero(N * C);
    oc_ref_embed_fwd(ref, tok, oc_params_w(&rk[0].p, OC_P_WTE, -1), N, C, V, 0, v);
    oc_ref_embed_fwd(part, tok, oc_params_w(&rk[1].p, OC_P_WTE, -1), N, C, V, v, v);
    oc_ref_add(ref, ref, part, N * C);
    oc_ref_pos_fwd(ref, oc_params_w(&rk[0].p, OC_P_WPE, -1), N, d->T, C);
    ASSERT_CLOSE(ref, e.out[0], N * C, TOL_MIRROR);
    ASSERT_CLOSE(ref, e.out[1], N * C, TOL_MIRROR);

    for (int k = 0; k < 2; k++)
        oc_params_zero_grad(&rk[k].p);
    lockstep2(rk, embed_bwd_part, &e, 0);
    for (int k = 0; k < 2; k++) {
        float *dwte = fzero(v * C), *dwpe = fzero(d->P * C);
        oc_ref_embed_bwd(dwte, dwpe, tok, e.dout, d->B, d->T, C, V, k * v, v);
        ASSERT_CLOSE(dwte, oc_params_g(&rk[k].p, OC_P_WTE, -1), v * C, TOL_MIRROR);
        ASSERT_CLOSE(dwpe, oc_params_g(&rk[k].p, OC_P_WPE, -1), d->P * C, TOL_MIRROR);
        free(dwpe);
        free(dwte);
    }
    free(part);
    free(ref);
    free((float *)e.dout);
    free(e.out[1]);
    free(e.out[0]);
    rank_free(&rk[1]);
    rank_free(&rk[0]);
}

struct head_arg {
    struct oc_gpt_head_act a[2];
    const int32_t *tgt;
    float *losses[2], *din[2], *work[2];
    float grad_scale;
};

static int head_fwd_part(struct oc_gpt_call *c, struct rank *r, int k, void *arg)
{
    struct head_arg *h = arg;
    return oc_gpt_head_fwd(c, &r->d, &r->p, &h->a[k], h->tgt, h->losses[k]);
}

static int head_bwd_part(struct oc_gpt_call *c, struct rank *r, int k, void *arg)
{
    struct head_arg *h = arg;
    return oc_gpt_head_bwd(c, &r->d, &r->p, &h->a[k], h->tgt, h->grad_scale,
                           h->din[k], h->work[k]);
}

static void test_head(void)
{
    struct rank rk[2];
    rank_init(&rk[0], 2, 0);
    rank_init(&rk[1], 2, 1);
    const struct oc_gpt_dims *d = &rk[0].d;
    const int64_t N = d->B * d->T, C = d->C, V = d->V, v = d->v;
    int32_t tgt[B_ * T_];
    for (int64_t i = 0; i < N; i++)
        tgt[i] = (int32_t)((urand() + 1.0f) * 0.5f * (float)V) % (int32_t)V;
    tgt[0] = 0;
    tgt[1] = (int32_t)v - 1; /* rank 0's last row */
    tgt[2] = (int32_t)v;     /* rank 1's first */
    float *in = frand(N * C, 1.0f);
    struct head_arg h;
    memset(&h, 0, sizeof h);
    h.tgt = tgt;
    h.grad_scale = 1.0f / (float)N;
    float *mem[2];
    for (int k = 0; k < 2; k++) {
        mem[k] = fzero(oc_gpt_head_act_floats(d));
        oc_gpt_head_act_bind(&h.a[k], d, in, mem[k]);
        h.losses[k] = fzero(N);
        h.din[k] = fzero(N * C);
        h.work[k] = fzero(oc_gpt_work_floats(d));
    }
    lockstep2(rk, head_fwd_part, &h, 3);

    /* reference: LayerNorm, each rank's logits, then the four steps with
     * the all-reduces in rank order */
    const float *lnfw = oc_params_w(&rk[0].p, OC_P_LNFW, -1);
    const float *lnfb = oc_params_w(&rk[0].p, OC_P_LNFB, -1);
    float *ln = fzero(N * C), *mean = fzero(N), *rstd = fzero(N);
    oc_ref_layernorm_fwd(ln, mean, rstd, in, lnfw, lnfb, N, C);
    ASSERT_CLOSE(ln, h.a[0].ln, N * C, TOL_MIRROR);
    float *lg[2], *mx[2], *se[2], *tl[2], *loss = fzero(N);
    for (int k = 0; k < 2; k++) {
        lg[k] = fzero(N * v);
        mx[k] = fzero(N);
        se[k] = fzero(N);
        tl[k] = fzero(N);
        oc_ref_matmul_fwd(lg[k], h.a[k].ln, oc_params_w(&rk[k].p, OC_P_LMW, -1),
                          NULL, N, C, v);
        oc_ref_ce_max(mx[k], lg[k], N, v);
    }
    for (int64_t i = 0; i < N; i++)
        mx[0][i] = mx[1][i] = mx[0][i] > mx[1][i] ? mx[0][i] : mx[1][i];
    ASSERT_CLOSE(mx[0], h.a[0].lmax, N, TOL_GEMM);
    for (int k = 0; k < 2; k++)
        oc_ref_ce_exp(lg[k], se[k], tl[k], mx[k], tgt, N, v, k * v, V);
    oc_ref_add(tl[0], tl[0], tl[1], N);
    oc_ref_add(se[0], se[0], se[1], N);
    ASSERT_CLOSE(tl[0], h.a[0].tlogit, N, TOL_GEMM);
    ASSERT_CLOSE(se[0], h.a[1].sumexp, N, TOL_GEMM);
    for (int k = 0; k < 2; k++) {
        oc_ref_ce_finish(loss, lg[k], se[0], tl[0], N, v);
        ASSERT_CLOSE(loss, h.losses[k], N, TOL_GEMM);
        ASSERT_CLOSE(lg[k], h.a[k].probs, N * v, TOL_GEMM);
    }
    /* and from gpt.c's own sums the finish step is the same loop */
    for (int k = 0; k < 2; k++) {
        float *pr = fcopy(h.a[k].probs, N * v), *ls = fzero(N);
        for (int64_t i = 0; i < N * v; i++) /* back to exponentials */
            pr[i] *= h.a[k].sumexp[i / v];
        oc_ref_ce_finish(ls, pr, h.a[k].sumexp, h.a[k].tlogit, N, v);
        ASSERT_CLOSE(ls, h.losses[k], N, TOL_MIRROR);
        free(ls);
        free(pr);
    }

    /* backward */
    for (int k = 0; k < 2; k++)
        oc_params_zero_grad(&rk[k].p);
    lockstep2(rk, head_bwd_part, &h, 1);
    float *dln[2], *dlmw[2];
    for (int k = 0; k < 2; k++) {
        float *dl = fzero(N * v);
        oc_ref_ce_bwd(dl, h.a[k].probs, tgt, h.grad_scale, N, v, k * v);
        dln[k] = fzero(N * C);
        dlmw[k] = fzero(v * C);
        oc_ref_matmul_bwd(dln[k], dlmw[k], NULL, dl, h.a[k].ln,
                          oc_params_w(&rk[k].p, OC_P_LMW, -1), N, C, v);
        ASSERT_CLOSE(dlmw[k], oc_params_g(&rk[k].p, OC_P_LMW, -1), v * C, TOL_GEMM);
        free(dl);
    }
    oc_ref_add(dln[0], dln[0], dln[1], N * C);
    float *rdin = fzero(N * C), *dw = fzero(C), *db = fzero(C);
    oc_ref_layernorm_bwd(rdin, dw, db, dln[0], in, lnfw, h.a[0].mean, h.a[0].rstd,
                         N, C);
    for (int k = 0; k < 2; k++) {
        ASSERT_CLOSE(rdin, h.din[k], N * C, TOL_GEMM);
        ASSERT_CLOSE(dw, oc_params_g(&rk[k].p, OC_P_LNFW, -1), C, TOL_GEMM);
        ASSERT_CLOSE(db, oc_params_g(&rk[k].p, OC_P_LNFB, -1), C, TOL_GEMM);
    }

    free(db);
    free(dw);
    free(rdin);
    for (int k = 0; k < 2; k++) {
        free(dlmw[k]);
        free(dln[k]);
        free(tl[k]);
        free(se[k]);
        free(mx[k]);
        free(lg[k]);
        free(h.work[k]);
        free(h.din[k]);
        free(h.losses[k]);
        free(mem[k]);
    }
    free(loss);
    free(rstd);
    free(mean);
    free(ln);
    free(in);
    rank_free(&rk[1]);
    rank_free(&rk[0]);
}

/* ------------------------------------------------------------------ */
/* AdamW                                                                */

static void test_adamw(void)
{
    struct rank r;
    rank_init(&r, 1, 0);
    struct oc_params *p = &r.p;
    const int64_t n = p->n;
    for (int64_t i = 0; i < n; i++) {
        p->g[i] = 0.1f * urand();
        p->m[i] = 0.01f * urand();
        p->v[i] = 0.001f * (urand() + 1.0f);
    }
    float *w = fcopy(p->w, n), *m = fcopy(p->m, n), *v = fcopy(p->v, n);
    const struct oc_adamw h = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f};
    oc_params_adamw(p, &h, 3, 0, n);
    int decayed = 0, kept = 0;
    for (int64_t i = 0; i < p->nt; i++) {
        const struct oc_param_tensor *t = &p->t[i];
        int64_t o = t->offset;
        oc_ref_adamw(w + o, p->g + o, m + o, v + o, t->rows * t->cols, h.lr,
                     h.beta1, h.beta2, h.eps, h.weight_decay, t->decay, 3);
        decayed += t->decay != 0;
        kept += t->decay == 0;
    }
    CU_ASSERT(decayed > 0 && kept > 0); /* both kinds of tensor were updated */
    ASSERT_CLOSE(w, p->w, n, TOL_MIRROR);
    ASSERT_CLOSE(m, p->m, n, TOL_MIRROR);
    ASSERT_CLOSE(v, p->v, n, TOL_MIRROR);
    free(v);
    free(m);
    free(w);
    rank_free(&r);
}

static int suite_init(void)
{
    openblas_set_num_threads(1); /* as test_exec_gpt: repeatable sums */
    return 0;
}

static CU_TestInfo tests[] = {
    {"gemm_by_hand", test_gemm_by_hand},
    {"gemm_vs_cblas", test_gemm_vs_cblas},
    {"bf16_by_hand", test_bf16_by_hand},
    {"attention", test_attention},
    {"mlp", test_mlp},
    {"embedding_tp2", test_embedding},
    {"head_tp2", test_head},
    {"adamw", test_adamw},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"kernels_reference", suite_init, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
