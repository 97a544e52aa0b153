/* test_kernels.c: every CUDA kernel and GEMM wrapper (kernels.h) against its
 * CPU reference (reference.h) on small random inputs; ctest's kernels_gpu.
 *
 * Without a usable GPU (cudaGetDeviceCount fails, e.g. error 35, "driver
 * insufficient", on a CI machine; no devices; or none of compute
 * capability 8.0 or newer) it prints "skipped: no GPU ..." and exits 77,
 * which ctest reports as Skipped (SKIP_RETURN_CODE). Otherwise each check
 * prints one line, and the exit status is 1 if any failed.
 *
 * The error measure is max_i |gpu_i - ref_i| / max_i |ref_i|, the worst
 * error relative to the tensor's scale (a sum that cancels to ~0 has no
 * meaningful relative error of its own). Tolerances:
 *   0      casts, the row max and the target logit of the cross-entropy,
 *          embedding forward and backward, bias and residual adds: the GPU
 *          does the same IEEE operations in the same order, so the results
 *          are bitwise equal;
 *   1e-5   fp32 kernels and fp32 GEMMs: sums in another order, fused
 *          multiply-adds, and CUDA's expf/tanhf/coshf (within 2 ulp) move
 *          results by ~1e-7..1e-6;
 *   1e-4   bf16-operand GEMMs with fp32 results, against the reference on
 *          the same bf16-rounded operands (products of bf16 are exact in
 *          fp32; only the summation order differs);
 *   1e-2   GEMMs with bf16 results, and the whole bf16 path (cast, GEMM)
 *          against the fp32 reference on the unrounded operands (bf16
 *          keeps 8 significant bits: 2^-9 = 2e-3 relative per element).
 *
 * C11, no CUnit: it must build on a GPU machine that has only the CUDA
 * toolkit (tools/device-check.sh). Inputs come from a fixed seed, so a
 * failure repeats.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels.h"
#include "reference.h"
#include "status.h"

#define SKIP_CODE 77
#define TOL_EXACT 0.0
#define TOL_F32 1e-5
#define TOL_BF16_OPERANDS 1e-4
#define TOL_BF16 1e-2

static int g_checks, g_failed;
static cudaStream_t g_stream;
static uint64_t g_rng = 0x5eed1234abcdULL;

/* ------------------------------------------------------------------ */
/* Helpers                                                              */

/* splitmix64 (Steele et al. 2014) */
static uint64_t next_u64(void)
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* uniform on [-1, 1) */
static float urand(void)
{
    return (float)((double)(next_u64() >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

static float *hnew(int64_t n)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    OC_ASSERT(p);
    return p;
}

static float *hrand(int64_t n, float scale, float offset)
{
    float *p = hnew(n);
    for (int64_t i = 0; i < n; i++)
        p[i] = offset + scale * urand();
    return p;
}

static float *hcopy(const float *a, int64_t n)
{
    float *p = hnew(n);
    memcpy(p, a, (size_t)n * sizeof *p);
    return p;
}

static void *dalloc(size_t bytes)
{
    void *d = NULL;
    cudaCheck(cudaMalloc(&d, bytes > 0 ? bytes : 1));
    /* 0xff bytes are NaN floats: a kernel that skips an output shows */
    cudaCheck(cudaMemset(d, 0xff, bytes > 0 ? bytes : 1));
    return d;
}

static float *dup(const float *h, int64_t n)
{
    float *d = dalloc((size_t)n * sizeof *d);
    cudaCheck(cudaMemcpy(d, h, (size_t)n * sizeof *d, cudaMemcpyHostToDevice));
    return d;
}

static void *dup_bytes(const void *h, size_t bytes)
{
    void *d = dalloc(bytes);
    cudaCheck(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* device -> new host buffer, after the stream's work */
static float *down(const float *d, int64_t n)
{
    float *h = hnew(n);
    cudaCheck(cudaStreamSynchronize(g_stream));
    cudaCheck(cudaMemcpy(h, d, (size_t)n * sizeof *h, cudaMemcpyDeviceToHost));
    return h;
}

static void dfree(void *d)
{
    cudaCheck(cudaFree(d));
}

/* bf16 copies of fp32 data, on the host */
static oc_bf16 *hbf16(const float *a, int64_t n)
{
    oc_bf16 *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    OC_ASSERT(p);
    for (int64_t i = 0; i < n; i++)
        p[i] = oc_ref_f32_to_bf16(a[i]);
    return p;
}

static float *hround(const float *a, int64_t n)
{
    float *p = hnew(n);
    for (int64_t i = 0; i < n; i++)
        p[i] = oc_ref_bf16_to_f32(oc_ref_f32_to_bf16(a[i]));
    return p;
}

/* max |got - ref| / max |ref|; NaN anywhere gives NaN, which fails */
static double scaled_err(const float *got, const float *ref, int64_t n)
{
    double emax = 0.0, rmax = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - (double)ref[i]);
        if (isnan(got[i]) || isnan(ref[i]))
            return NAN;
        if (e > emax)
            emax = e;
        if (fabs((double)ref[i]) > rmax)
            rmax = fabs((double)ref[i]);
    }
    if (emax == 0.0)
        return 0.0;
    return rmax > 0.0 ? emax / rmax : INFINITY;
}

static void check(const char *name, const float *got, const float *ref,
                  int64_t n, double tol)
{
    double e = scaled_err(got, ref, n);
    int ok = e <= tol; /* false for NaN */
    g_checks++;
    g_failed += !ok;
    printf("%-44s err %-9.2e tol %-7.0e %s\n", name, e, tol, ok ? "ok" : "FAILED");
}

/* a property that must hold, e.g. which GEMM path a call took */
static void check_true(const char *name, int ok)
{
    g_checks++;
    g_failed += !ok;
    printf("%-44s %-30s %s\n", name, "", ok ? "ok" : "FAILED");
}

/* download d (n floats), compare with ref, free the host copy */
static void check_dev(const char *name, const float *d, const float *ref,
                      int64_t n, double tol)
{
    float *h = down(d, n);
    check(name, h, ref, n, tol);
    free(h);
}

/* ------------------------------------------------------------------ */
/* Casts                                                                */

static void test_casts(void)
{
    enum { n = 4096 };
    float *x = hnew(n);
    for (int i = 0; i < n; i++) /* magnitudes 2^-20 .. 2^20 */
        x[i] = urand() * ldexpf(1.0f, (int)(next_u64() % 41) - 20);
    const float special[] = {0.0f, -0.0f, 1.0f, 1.00390625f /* 1 + 2^-8: tie, to even */,
                             1.01171875f /* 1 + 3*2^-8: tie, up */, 65504.0f,
                             3.0e38f, -3.0e38f, INFINITY, -INFINITY, 1e-40f};
    memcpy(x, special, sizeof special);
    oc_bf16 *ref = hbf16(x, n);
    float *dx = dup(x, n);
    oc_bf16 *db = dalloc(n * sizeof *db);
    oc_cuda_f32_to_bf16(db, dx, n, g_stream);
    oc_bf16 *got = malloc(n * sizeof *got);
    OC_ASSERT(got);
    cudaCheck(cudaStreamSynchronize(g_stream));
    cudaCheck(cudaMemcpy(got, db, n * sizeof *got, cudaMemcpyDeviceToHost));
    float *gotf = hnew(n), *reff = hnew(n);
    for (int i = 0; i < n; i++) { /* compare the bit patterns as numbers */
        gotf[i] = (float)got[i];
        reff[i] = (float)ref[i];
    }
    check("f32_to_bf16 (bits)", gotf, reff, n, TOL_EXACT);
    float *dback = dalloc(n * sizeof(float));
    oc_cuda_bf16_to_f32(dback, db, n, g_stream);
    for (int i = 0; i < n; i++)
        reff[i] = oc_ref_bf16_to_f32(ref[i]);
    check_dev("bf16_to_f32", dback, reff, n, TOL_EXACT);
    dfree(dback);
    dfree(db);
    dfree(dx);
    free(gotf);
    free(reff);
    free(got);
    free(ref);
    free(x);
}

/* ------------------------------------------------------------------ */
/* GEMM                                                                 */

static void test_gemm(struct oc_cuda_blas *blas)
{
    const int64_t M = 37, N = 53, K = 71;
    char name[96];
    for (int ta = 0; ta <= 1; ta++)
        for (int tb = 0; tb <= 1; tb++) {
            /* stored shapes, with row padding to exercise the strides */
            const int64_t arows = ta ? K : M, acols = ta ? M : K, lda = acols + 3;
            const int64_t brows = tb ? N : K, bcols = tb ? K : N, ldb = bcols + 2;
            const int64_t ldc = N + 5;
            const float alpha = 0.75f, beta = 0.5f;
            float *A = hrand(arows * lda, 1.0f, 0.0f);
            float *B = hrand(brows * ldb, 1.0f, 0.0f);
            float *C0 = hrand(M * ldc, 1.0f, 0.0f);

            /* fp32 */
            float *ref = hcopy(C0, M * ldc);
            oc_ref_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, ref, ldc);
            float *dA = dup(A, arows * lda), *dB = dup(B, brows * ldb);
            float *dC = dup(C0, M * ldc);
            oc_cuda_gemm(blas, ta, tb, M, N, K, alpha, dA, lda, dB, ldb, beta, dC,
                         ldc, OC_CUDA_F32, OC_CUDA_F32, g_stream);
            snprintf(name, sizeof name, "gemm f32 ta=%d tb=%d", ta, tb);
            check_dev(name, dC, ref, M * ldc, TOL_F32);

            /* bf16 operands, fp32 result: against the rounded operands,
             * and (the whole path, cast kernel included) the fp32 ones */
            float *Ar = hround(A, arows * lda), *Br = hround(B, brows * ldb);
            float *refr = hcopy(C0, M * ldc);
            oc_ref_gemm(ta, tb, M, N, K, alpha, Ar, lda, Br, ldb, beta, refr, ldc);
            oc_bf16 *dAb = dalloc((size_t)(arows * lda) * sizeof *dAb);
            oc_bf16 *dBb = dalloc((size_t)(brows * ldb) * sizeof *dBb);
            oc_cuda_f32_to_bf16(dAb, dA, arows * lda, g_stream);
            oc_cuda_f32_to_bf16(dBb, dB, brows * ldb, g_stream);
            cudaCheck(cudaMemcpy(dC, C0, (size_t)(M * ldc) * sizeof *C0,
                                 cudaMemcpyHostToDevice));
            oc_cuda_gemm(blas, ta, tb, M, N, K, alpha, dAb, lda, dBb, ldb, beta,
                         dC, ldc, OC_CUDA_BF16, OC_CUDA_F32, g_stream);
            float *got = down(dC, M * ldc);
            snprintf(name, sizeof name, "gemm bf16->f32 ta=%d tb=%d", ta, tb);
            check(name, got, refr, M * ldc, TOL_BF16_OPERANDS);
            snprintf(name, sizeof name, "gemm bf16->f32 ta=%d tb=%d vs fp32", ta, tb);
            check(name, got, ref, M * ldc, TOL_BF16);
            free(got);

            /* bf16 result (C starts as bf16 of C0) */
            oc_bf16 *C0b = hbf16(C0, M * ldc);
            oc_bf16 *dCb = dup_bytes(C0b, (size_t)(M * ldc) * sizeof *C0b);
            oc_cuda_gemm(blas, ta, tb, M, N, K, alpha, dAb, lda, dBb, ldb, beta,
                         dCb, ldc, OC_CUDA_BF16, OC_CUDA_BF16, g_stream);
            float *dCf = dalloc((size_t)(M * ldc) * sizeof(float));
            oc_cuda_bf16_to_f32(dCf, dCb, M * ldc, g_stream);
            float *C0r = hround(C0, M * ldc);
            float *refb = hcopy(C0r, M * ldc);
            oc_ref_gemm(ta, tb, M, N, K, alpha, Ar, lda, Br, ldb, beta, refb, ldc);
            snprintf(name, sizeof name, "gemm bf16->bf16 ta=%d tb=%d", ta, tb);
            check_dev(name, dCf, refb, M * ldc, TOL_BF16);

            dfree(dCf);
            dfree(dCb);
            dfree(dBb);
            dfree(dAb);
            dfree(dC);
            dfree(dB);
            dfree(dA);
            free(refb);
            free(C0r);
            free(C0b);
            free(refr);
            free(Br);
            free(Ar);
            free(ref);
            free(C0);
            free(B);
            free(A);
        }
}

static void test_matmul(struct oc_cuda_blas *blas)
{
    const int64_t N = 45, IC = 96, OC = 80;
    float *inp = hrand(N * IC, 1.0f, 0.0f), *w = hrand(OC * IC, 0.5f, 0.0f);
    float *bias = hrand(OC, 1.0f, 0.0f);
    float *din = dup(inp, N * IC), *dw = dup(w, OC * IC), *dbias = dup(bias, OC);
    float *dout_ = dalloc((size_t)(N * OC) * sizeof(float));
    float *ref = hnew(N * OC);

    /* forward, fp32: Lt with its bias epilogue, without a bias, and the
     * cublasGemmEx fallback (a plan that says "Lt has none") */
    oc_ref_matmul_fwd(ref, inp, w, bias, N, IC, OC);
    int64_t lt0 = blas->lt_calls;
    oc_cuda_matmul_fwd(blas, dout_, din, dw, dbias, N, IC, OC, OC_CUDA_F32, g_stream);
    check_dev("matmul_fwd f32 bias", dout_, ref, N * OC, TOL_F32);
    /* aligned operands, a shape Lt runs on sm_80 and sm_90: a miss here
     * means a descriptor is wrong */
    check_true("matmul_fwd took the cublasLt path", blas->lt_calls == lt0 + 1);
    oc_ref_matmul_fwd(ref, inp, w, NULL, N, IC, OC);
    oc_cuda_matmul_fwd(blas, dout_, din, dw, NULL, N, IC, OC, OC_CUDA_F32, g_stream);
    check_dev("matmul_fwd f32 no bias", dout_, ref, N * OC, TOL_F32);
    {
        const int64_t N2 = N - 4; /* a shape with no plan yet */
        struct oc_cuda_lt_plan *p = &blas->plans[blas->nplans % OC_CUDA_LT_CACHE];
        blas->nplans++;
        /* cudaMalloc's pointers are 256-byte aligned */
        *p = (struct oc_cuda_lt_plan){.N = N2, .IC = IC, .OC = OC, .ab = OC_CUDA_F32,
                                      .bias = 1, .align = 256, .found = 0};
        int64_t g0 = blas->gemmex_calls;
        oc_ref_matmul_fwd(ref, inp, w, bias, N2, IC, OC);
        oc_cuda_matmul_fwd(blas, dout_, din, dw, dbias, N2, IC, OC, OC_CUDA_F32,
                           g_stream);
        check_dev("matmul_fwd f32 bias, GemmEx fallback", dout_, ref, N2 * OC, TOL_F32);
        check_true("matmul_fwd fallback took GemmEx", blas->gemmex_calls == g0 + 1);
    }
    {
        /* an input 4 bytes off alignment, as a tensor inside an arena can
         * be: no Lt (it would assume 16), the GemmEx path */
        float *doff = dalloc((size_t)(N * IC + 1) * sizeof(float));
        cudaCheck(cudaMemcpy(doff + 1, inp, (size_t)(N * IC) * sizeof *inp,
                             cudaMemcpyHostToDevice));
        int64_t g0 = blas->gemmex_calls;
        oc_ref_matmul_fwd(ref, inp, w, bias, N, IC, OC);
        oc_cuda_matmul_fwd(blas, dout_, doff + 1, dw, dbias, N, IC, OC, OC_CUDA_F32,
                           g_stream);
        check_dev("matmul_fwd f32 bias, input 4 bytes off", dout_, ref, N * OC, TOL_F32);
        check_true("matmul_fwd misaligned took GemmEx", blas->gemmex_calls == g0 + 1);
        dfree(doff);
    }

    /* forward, bf16 operands */
    float *inpr = hround(inp, N * IC), *wr = hround(w, OC * IC);
    oc_bf16 *dinb = dalloc((size_t)(N * IC) * sizeof *dinb);
    oc_bf16 *dwb = dalloc((size_t)(OC * IC) * sizeof *dwb);
    oc_cuda_f32_to_bf16(dinb, din, N * IC, g_stream);
    oc_cuda_f32_to_bf16(dwb, dw, OC * IC, g_stream);
    oc_ref_matmul_fwd(ref, inpr, wr, bias, N, IC, OC);
    oc_cuda_matmul_fwd(blas, dout_, dinb, dwb, dbias, N, IC, OC, OC_CUDA_BF16,
                       g_stream);
    check_dev("matmul_fwd bf16 bias", dout_, ref, N * OC, TOL_BF16_OPERANDS);

    /* backward: dinp written, dw and dbias accumulate onto what they hold */
    float *g = hrand(N * OC, 1.0f, 0.0f);
    float *gw0 = hrand(OC * IC, 1.0f, 0.0f), *gb0 = hrand(OC, 1.0f, 0.0f);
    float *rdin = hnew(N * IC), *rdw = hcopy(gw0, OC * IC), *rdb = hcopy(gb0, OC);
    oc_ref_matmul_bwd(rdin, rdw, rdb, g, inp, w, N, IC, OC);
    float *dg = dup(g, N * OC), *ddin = dalloc((size_t)(N * IC) * sizeof(float));
    float *ddw = dup(gw0, OC * IC), *ddb = dup(gb0, OC);
    float *scratch = dalloc((size_t)oc_cuda_colsum_scratch_floats(OC) * sizeof(float));
    oc_cuda_matmul_bwd(blas, ddin, ddw, ddb, dg, din, dw, N, IC, OC, OC_CUDA_F32,
                       scratch, g_stream);
    check_dev("matmul_bwd f32 dinp", ddin, rdin, N * IC, TOL_F32);
    check_dev("matmul_bwd f32 dw (+=)", ddw, rdw, OC * IC, TOL_F32);
    check_dev("matmul_bwd f32 dbias (+=)", ddb, rdb, OC, TOL_F32);

    float *gr = hround(g, N * OC);
    memcpy(rdw, gw0, (size_t)(OC * IC) * sizeof *rdw);
    memcpy(rdb, gb0, (size_t)OC * sizeof *rdb);
    oc_ref_matmul_bwd(rdin, rdw, rdb, gr, inpr, wr, N, IC, OC);
    oc_bf16 *dgb = dalloc((size_t)(N * OC) * sizeof *dgb);
    oc_cuda_f32_to_bf16(dgb, dg, N * OC, g_stream);
    cudaCheck(cudaMemcpy(ddw, gw0, (size_t)(OC * IC) * sizeof *gw0, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(ddb, gb0, (size_t)OC * sizeof *gb0, cudaMemcpyHostToDevice));
    oc_cuda_matmul_bwd(blas, ddin, ddw, ddb, dgb, dinb, dwb, N, IC, OC,
                       OC_CUDA_BF16, scratch, g_stream);
    check_dev("matmul_bwd bf16 dinp", ddin, rdin, N * IC, TOL_BF16_OPERANDS);
    check_dev("matmul_bwd bf16 dw (+=)", ddw, rdw, OC * IC, TOL_BF16_OPERANDS);
    check_dev("matmul_bwd bf16 dbias (+=)", ddb, rdb, OC, TOL_F32);

    dfree(dgb);
    dfree(scratch);
    dfree(ddb);
    dfree(ddw);
    dfree(ddin);
    dfree(dg);
    dfree(dwb);
    dfree(dinb);
    dfree(dout_);
    dfree(dbias);
    dfree(dw);
    dfree(din);
    free(gr);
    free(rdb);
    free(rdw);
    free(rdin);
    free(gb0);
    free(gw0);
    free(g);
    free(wr);
    free(inpr);
    free(ref);
    free(bias);
    free(w);
    free(inp);
}

/* ------------------------------------------------------------------ */
/* LayerNorm, GELU                                                      */

static void test_layernorm(void)
{
    const int64_t N = 67, C = 200;
    /* an offset mean and a spread, so both passes matter */
    float *x = hrand(N * C, 2.0f, 3.0f), *w = hrand(C, 0.5f, 1.0f);
    float *b = hrand(C, 0.5f, 0.0f);
    float *out = hnew(N * C), *mean = hnew(N), *rstd = hnew(N);
    oc_ref_layernorm_fwd(out, mean, rstd, x, w, b, N, C);
    float *dx = dup(x, N * C), *dw = dup(w, C), *db = dup(b, C);
    float *dout_ = dalloc((size_t)(N * C) * sizeof(float));
    float *dmean = dalloc((size_t)N * sizeof(float)), *drstd = dalloc((size_t)N * sizeof(float));
    oc_cuda_layernorm_fwd(dout_, dmean, drstd, dx, dw, db, N, C, g_stream);
    check_dev("layernorm_fwd out", dout_, out, N * C, TOL_F32);
    check_dev("layernorm_fwd mean", dmean, mean, N, TOL_F32);
    check_dev("layernorm_fwd rstd", drstd, rstd, N, TOL_F32);

    /* backward from the reference's mean and rstd; dinp, dw, db add to
     * what they hold */
    float *dy = hrand(N * C, 1.0f, 0.0f), *g0 = hrand(N * C, 1.0f, 0.0f);
    float *gw0 = hrand(C, 1.0f, 0.0f), *gb0 = hrand(C, 1.0f, 0.0f);
    float *rg = hcopy(g0, N * C), *rgw = hcopy(gw0, C), *rgb = hcopy(gb0, C);
    oc_ref_layernorm_bwd(rg, rgw, rgb, dy, x, w, mean, rstd, N, C);
    float *ddy = dup(dy, N * C), *dg = dup(g0, N * C), *dgw = dup(gw0, C);
    float *dgb = dup(gb0, C);
    cudaCheck(cudaMemcpy(dmean, mean, (size_t)N * sizeof *mean, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(drstd, rstd, (size_t)N * sizeof *rstd, cudaMemcpyHostToDevice));
    float *scratch = dalloc((size_t)oc_cuda_layernorm_bwd_scratch_floats(C) * sizeof(float));
    oc_cuda_layernorm_bwd(dg, dgw, dgb, ddy, dx, dw, dmean, drstd, N, C, scratch,
                          g_stream);
    check_dev("layernorm_bwd dinp (+=)", dg, rg, N * C, TOL_F32);
    check_dev("layernorm_bwd dw (+=)", dgw, rgw, C, TOL_F32);
    check_dev("layernorm_bwd db (+=)", dgb, rgb, C, TOL_F32);

    dfree(scratch);
    dfree(dgb);
    dfree(dgw);
    dfree(dg);
    dfree(ddy);
    dfree(drstd);
    dfree(dmean);
    dfree(dout_);
    dfree(db);
    dfree(dw);
    dfree(dx);
    free(rgb);
    free(rgw);
    free(rg);
    free(gb0);
    free(gw0);
    free(g0);
    free(dy);
    free(rstd);
    free(mean);
    free(out);
    free(b);
    free(w);
    free(x);
}

static void test_gelu(void)
{
    const int64_t n = 10007;
    float *x = hrand(n, 6.0f, 0.0f), *ref = hnew(n);
    oc_ref_gelu_fwd(ref, x, n);
    float *dx = dup(x, n), *dy = dalloc((size_t)n * sizeof(float));
    oc_cuda_gelu_fwd(dy, dx, n, g_stream);
    check_dev("gelu_fwd", dy, ref, n, TOL_F32);
    float *d = hrand(n, 1.0f, 0.0f), *dref = hcopy(d, n);
    oc_ref_gelu_bwd(dref, x, n);
    float *dd = dup(d, n);
    oc_cuda_gelu_bwd(dd, dx, n, g_stream);
    check_dev("gelu_bwd", dd, dref, n, TOL_F32);
    dfree(dd);
    dfree(dy);
    dfree(dx);
    free(dref);
    free(d);
    free(ref);
    free(x);
}

/* ------------------------------------------------------------------ */
/* Attention                                                            */

static void test_attention_one(int64_t B, int64_t T, int64_t nh, int64_t HS)
{
    char name[96];
    const int64_t nqkv = B * T * nh * 3 * HS, ny = B * T * nh * HS;
    const int64_t natt = B * nh * T * T;
    float *qkv = hrand(nqkv, 1.0f, 0.0f);
    float *att = hnew(natt), *y = hnew(ny);
    oc_ref_attn_fwd(att, y, qkv, B, T, nh, HS);
    float *dqkv_in = dup(qkv, nqkv);
    float *datt = dalloc((size_t)natt * sizeof(float)); /* NaN-filled */
    float *dy_ = dalloc((size_t)ny * sizeof(float));
    oc_cuda_attn_fwd(datt, dy_, dqkv_in, B, T, nh, HS, g_stream);
    snprintf(name, sizeof name, "attn_fwd att B%lld T%lld nh%lld HS%lld",
             (long long)B, (long long)T, (long long)nh, (long long)HS);
    check_dev(name, datt, att, natt, TOL_F32);
    snprintf(name, sizeof name, "attn_fwd y   B%lld T%lld nh%lld HS%lld",
             (long long)B, (long long)T, (long long)nh, (long long)HS);
    check_dev(name, dy_, y, ny, TOL_F32);
    cudaCheck(cudaMemset(datt, 0xff, (size_t)natt * sizeof(float)));
    oc_cuda_attn_fwd(datt, NULL, dqkv_in, B, T, nh, HS, g_stream);
    snprintf(name, sizeof name, "attn_fwd att only (y NULL) HS%lld", (long long)HS);
    check_dev(name, datt, att, natt, TOL_F32);

    /* backward from the reference's probabilities */
    float *g = hrand(ny, 1.0f, 0.0f), *ref = hnew(nqkv), *scr = hnew(2 * T);
    oc_ref_attn_bwd(ref, att, qkv, g, B, T, nh, HS, scr);
    cudaCheck(cudaMemcpy(datt, att, (size_t)natt * sizeof *att, cudaMemcpyHostToDevice));
    float *dg = dup(g, ny), *ddqkv = dalloc((size_t)nqkv * sizeof(float));
    float *scratch = dalloc((size_t)oc_cuda_attn_bwd_scratch_floats(B, T, nh) *
                            sizeof(float));
    oc_cuda_attn_bwd(ddqkv, datt, dqkv_in, dg, B, T, nh, HS, scratch, g_stream);
    snprintf(name, sizeof name, "attn_bwd dqkv B%lld T%lld nh%lld HS%lld",
             (long long)B, (long long)T, (long long)nh, (long long)HS);
    check_dev(name, ddqkv, ref, nqkv, TOL_F32);

    dfree(scratch);
    dfree(ddqkv);
    dfree(dg);
    dfree(dy_);
    dfree(datt);
    dfree(dqkv_in);
    free(scr);
    free(ref);
    free(g);
    free(y);
    free(att);
    free(qkv);
}

static void test_attention(void)
{
    test_attention_one(2, 37, 3, 40);  /* T across two tiles, HS not /32 */
    test_attention_one(1, 129, 2, 128); /* GPT-3's head size, five tiles */
    test_attention_one(1, 45, 1, 256);  /* the largest HS: > 48 KiB smem */
}

/* ------------------------------------------------------------------ */
/* Embedding                                                            */

static void test_embedding(void)
{
    /* rank 1 of a 3-way vocabulary split: rows [15, 30) of 45 */
    const int64_t B = 3, T = 11, C = 50, V = 45, v = 15, v0 = 15, P = T + 5;
    const int64_t N = B * T;
    int32_t tok[3 * 11];
    for (int64_t i = 0; i < N; i++)
        tok[i] = (int32_t)(next_u64() % (uint64_t)V);
    tok[0] = tok[7] = tok[20] = tok[32] = 17; /* a local token, 4 times */
    tok[1] = tok[2] = 3;                      /* a remote one, twice */
    tok[3] = 14;                              /* the shard's edges */
    tok[4] = 15;
    tok[5] = 29;
    tok[6] = 30;
    float *wte = hrand(v * C, 1.0f, 0.0f), *wpe = hrand(P * C, 1.0f, 0.0f);
    float *ref = hnew(N * C);
    oc_ref_embed_fwd(ref, tok, wte, N, C, V, v0, v);
    int32_t *dtok = dup_bytes(tok, sizeof tok);
    float *dwte = dup(wte, v * C), *dwpe = dup(wpe, P * C);
    float *dout_ = dalloc((size_t)(N * C) * sizeof(float));
    oc_cuda_embed_fwd(dout_, dtok, dwte, N, C, V, v0, v, g_stream);
    check_dev("embed_fwd (local rows, zeros)", dout_, ref, N * C, TOL_EXACT);
    oc_ref_pos_fwd(ref, wpe, N, T, C);
    oc_cuda_pos_fwd(dout_, dwpe, N, T, C, g_stream);
    check_dev("pos_fwd (+= wpe)", dout_, ref, N * C, TOL_EXACT);

    float *g = hrand(N * C, 1.0f, 0.0f);
    float *rwte = hcopy(wte, v * C), *rwpe = hcopy(wpe, P * C); /* as grads */
    oc_ref_embed_bwd(rwte, rwpe, tok, g, B, T, C, V, v0, v);
    float *dg = dup(g, N * C);
    oc_cuda_embed_bwd(dwte, dwpe, dtok, dg, B, T, C, V, v0, v, g_stream);
    check_dev("embed_bwd dwte (+=, position order)", dwte, rwte, v * C, TOL_EXACT);
    check_dev("embed_bwd dwpe (+=, batch order)", dwpe, rwpe, P * C, TOL_EXACT);

    dfree(dg);
    dfree(dout_);
    dfree(dwpe);
    dfree(dwte);
    dfree(dtok);
    free(rwpe);
    free(rwte);
    free(g);
    free(ref);
    free(wpe);
    free(wte);
}

/* ------------------------------------------------------------------ */
/* Cross-entropy                                                        */

static void test_cross_entropy(void)
{
    /* rank 1 of a 3-way split: columns [300, 600) of 900 */
    const int64_t N = 29, v = 300, v0 = 300, V = 900;
    int32_t tgt[29];
    for (int64_t i = 0; i < N; i++)
        tgt[i] = (int32_t)(next_u64() % (uint64_t)V);
    tgt[0] = 300;
    tgt[1] = 599; /* the shard's edges */
    tgt[2] = 299;
    tgt[3] = 600; /* just outside */
    float *logits = hrand(N * v, 5.0f, 0.0f);
    float *lmax = hnew(N), *sumexp = hnew(N), *tlogit = hnew(N), *loss = hnew(N);
    float *ex = hcopy(logits, N * v);
    oc_ref_ce_max(lmax, ex, N, v);
    int32_t *dtgt = dup_bytes(tgt, sizeof tgt);
    float *dl = dup(logits, N * v), *dmax = dalloc((size_t)N * sizeof(float));
    oc_cuda_ce_max(dmax, dl, N, v, g_stream);
    check_dev("ce_max", dmax, lmax, N, TOL_EXACT);

    oc_ref_ce_exp(ex, sumexp, tlogit, lmax, tgt, N, v, v0, V);
    float *dse = dalloc((size_t)N * sizeof(float)), *dtl = dalloc((size_t)N * sizeof(float));
    cudaCheck(cudaMemcpy(dmax, lmax, (size_t)N * sizeof *lmax, cudaMemcpyHostToDevice));
    oc_cuda_ce_exp(dl, dse, dtl, dmax, dtgt, N, v, v0, V, g_stream);
    check_dev("ce_exp exp(logits - max)", dl, ex, N * v, TOL_F32);
    check_dev("ce_exp sumexp", dse, sumexp, N, TOL_F32);
    check_dev("ce_exp target logit - max", dtl, tlogit, N, TOL_EXACT);

    float *probs = hcopy(ex, N * v);
    oc_ref_ce_finish(loss, probs, sumexp, tlogit, N, v);
    float *dloss = dalloc((size_t)N * sizeof(float));
    cudaCheck(cudaMemcpy(dl, ex, (size_t)(N * v) * sizeof *ex, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(dse, sumexp, (size_t)N * sizeof *sumexp, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(dtl, tlogit, (size_t)N * sizeof *tlogit, cudaMemcpyHostToDevice));
    oc_cuda_ce_finish(dloss, dl, dse, dtl, N, v, g_stream);
    check_dev("ce_finish losses", dloss, loss, N, TOL_F32);
    check_dev("ce_finish probabilities", dl, probs, N * v, TOL_F32);

    const float scale = 1.0f / (float)N;
    float *dref = hnew(N * v);
    oc_ref_ce_bwd(dref, probs, tgt, scale, N, v, v0);
    cudaCheck(cudaMemcpy(dl, probs, (size_t)(N * v) * sizeof *probs, cudaMemcpyHostToDevice));
    float *ddl = dalloc((size_t)(N * v) * sizeof(float));
    oc_cuda_ce_bwd(ddl, dl, dtgt, scale, N, v, v0, g_stream);
    check_dev("ce_bwd dlogits", ddl, dref, N * v, TOL_F32);
    oc_cuda_ce_bwd(dl, dl, dtgt, scale, N, v, v0, g_stream); /* in place */
    check_dev("ce_bwd dlogits in place", dl, dref, N * v, TOL_F32);

    dfree(ddl);
    dfree(dloss);
    dfree(dtl);
    dfree(dse);
    dfree(dmax);
    dfree(dl);
    dfree(dtgt);
    free(dref);
    free(probs);
    free(ex);
    free(loss);
    free(tlogit);
    free(sumexp);
    free(lmax);
    free(logits);
}

/* ------------------------------------------------------------------ */
/* AdamW, residual, bias gradient                                       */

static void test_adamw(void)
{
    const int64_t n = 5000;
    for (int decay = 0; decay <= 1; decay++) {
        float *w = hrand(n, 1.0f, 0.0f), *g = hrand(n, 0.1f, 0.0f);
        float *m = hrand(n, 0.01f, 0.0f), *v = hrand(n, 0.001f, 0.001f);
        float *rw = hcopy(w, n), *rm = hcopy(m, n), *rv = hcopy(v, n);
        oc_ref_adamw(rw, g, rm, rv, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, decay, 7);
        float *dw = dup(w, n), *dg = dup(g, n), *dm = dup(m, n), *dv = dup(v, n);
        oc_cuda_adamw(dw, dg, dm, dv, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, decay, 7,
                      g_stream);
        check_dev(decay ? "adamw w (decay)" : "adamw w (no decay)", dw, rw, n, TOL_F32);
        check_dev(decay ? "adamw m (decay)" : "adamw m (no decay)", dm, rm, n, TOL_F32);
        check_dev(decay ? "adamw v (decay)" : "adamw v (no decay)", dv, rv, n, TOL_F32);
        dfree(dv);
        dfree(dm);
        dfree(dg);
        dfree(dw);
        free(rv);
        free(rm);
        free(rw);
        free(v);
        free(m);
        free(g);
        free(w);
    }
}

static void test_residual(void)
{
    const int64_t N = 33, C = 70;
    float *out = hrand(N * C, 1.0f, 0.0f), *bias = hrand(C, 1.0f, 0.0f);
    float *res = hrand(N * C, 1.0f, 0.0f);
    float *dbias = dup(bias, C), *dres = dup(res, N * C);
    const float *biases[3] = {bias, bias, NULL}, *ress[3] = {res, NULL, res};
    const char *names[3] = {"add_bias_residual (bias, res)", "add_bias_residual (bias)",
                            "add_bias_residual (res)"};
    for (int k = 0; k < 3; k++) {
        float *ref = hcopy(out, N * C);
        oc_ref_add_bias_residual(ref, biases[k], ress[k], N, C);
        float *d = dup(out, N * C);
        oc_cuda_add_bias_residual(d, biases[k] ? dbias : NULL, ress[k] ? dres : NULL,
                                  N, C, g_stream);
        check_dev(names[k], d, ref, N * C, TOL_EXACT);
        dfree(d);
        free(ref);
    }
    float *ref = hnew(N * C);
    oc_ref_add(ref, out, res, N * C);
    float *d = dup(out, N * C);
    oc_cuda_add(d, d, dres, N * C, g_stream); /* out aliases a */
    check_dev("add", d, ref, N * C, TOL_EXACT);

    /* bias gradient over more rows than chunks, fp32 and bf16 dout */
    const int64_t R = 1000, OC = 70;
    float *g = hrand(R * OC, 1.0f, 0.0f), *gb0 = hrand(OC, 1.0f, 0.0f);
    float *rb = hcopy(gb0, OC);
    oc_ref_bias_bwd(rb, g, R, OC);
    float *dg = dup(g, R * OC), *dgb = dup(gb0, OC);
    float *scratch = dalloc((size_t)oc_cuda_colsum_scratch_floats(OC) * sizeof(float));
    oc_cuda_bias_bwd(dgb, dg, OC_CUDA_F32, R, OC, scratch, g_stream);
    check_dev("bias_bwd f32 (+=)", dgb, rb, OC, TOL_F32);
    float *gr = hround(g, R * OC);
    memcpy(rb, gb0, (size_t)OC * sizeof *rb);
    oc_ref_bias_bwd(rb, gr, R, OC);
    oc_bf16 *gb = hbf16(g, R * OC);
    oc_bf16 *dgbf = dup_bytes(gb, (size_t)(R * OC) * sizeof *gb);
    cudaCheck(cudaMemcpy(dgb, gb0, (size_t)OC * sizeof *gb0, cudaMemcpyHostToDevice));
    oc_cuda_bias_bwd(dgb, dgbf, OC_CUDA_BF16, R, OC, scratch, g_stream);
    check_dev("bias_bwd bf16 dout (+=)", dgb, rb, OC, TOL_F32);

    dfree(dgbf);
    dfree(scratch);
    dfree(dgb);
    dfree(dg);
    dfree(d);
    dfree(dres);
    dfree(dbias);
    free(gb);
    free(gr);
    free(rb);
    free(gb0);
    free(g);
    free(ref);
    free(res);
    free(bias);
    free(out);
}

/* ------------------------------------------------------------------ */

/* 0 when a GPU of compute capability >= 8.0 (the oldest built, sm_80) is
 * there; else prints the skip line. */
static int have_gpu(void)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        printf("skipped: no GPU (cudaGetDeviceCount: %s, error %d)\n",
               cudaGetErrorString(e), (int)e);
        return 0;
    }
    if (count == 0) {
        printf("skipped: no GPU (no CUDA device)\n");
        return 0;
    }
    struct cudaDeviceProp prop;
    cudaCheck(cudaGetDeviceProperties(&prop, 0));
    if (prop.major < 8) {
        printf("skipped: no GPU of compute capability 8.0 or newer (%s is "
               "sm_%d%d)\n", prop.name, prop.major, prop.minor);
        return 0;
    }
    printf("GPU: %s, sm_%d%d, %d SMs\n", prop.name, prop.major, prop.minor,
           prop.multiProcessorCount);
    return 1;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!have_gpu())
        return SKIP_CODE;
    cudaCheck(cudaStreamCreate(&g_stream));
    struct oc_cuda_blas blas;
    oc_cuda_blas_init(&blas);

    test_casts();
    test_gemm(&blas);
    test_matmul(&blas);
    test_layernorm();
    test_gelu();
    test_attention();
    test_embedding();
    test_cross_entropy();
    test_adamw();
    test_residual();

    cudaCheck(cudaStreamSynchronize(g_stream));
    oc_cuda_blas_free(&blas);
    cudaCheck(cudaStreamDestroy(g_stream));
    if (g_failed) {
        printf("%d of %d checks FAILED\n", g_failed, g_checks);
        return 1;
    }
    printf("all %d checks passed\n", g_checks);
    return 0;
}
