/* test_kernels.c: the cuda kernel table (kernels/cuda/ops_cuda.h) against the
 * cpu kernel table (kernels/cpu/ops_cpu.h, the reference), entry by entry on
 * small random inputs, and the launchers below the table that it does not
 * reach one by one (the general GEMM, cublasLt's path and its fallback, the
 * bf16 casts, the bf16 bias gradient); ctest's kernels_gpu. The fused
 * attention entries are checked in test_kernels_flash.c, which shares the
 * helpers and tolerances below through test_kernels.h.
 *
 * Without a usable GPU (cudaGetDeviceCount fails, e.g. error 35, "driver
 * insufficient", on a CI machine; no devices; or none of compute
 * capability 8.0 or newer) it runs only its host check (the bf16 rounding
 * it compares against, worked by hand), prints "skipped: no GPU ..." and
 * exits 77, which ctest reports as Skipped (SKIP_RETURN_CODE). Otherwise
 * each check prints one line, and the exit status is 1 if any failed.
 *
 * Both tables get the same inputs (a host tensor and its device copy); an
 * output starts as NaN on the device (0xff bytes), so a kernel that skips
 * an element fails. The error measure is max_i |gpu_i - cpu_i| / max_i
 * |cpu_i|, the worst error relative to the tensor's scale (a sum that
 * cancels to ~0 has no meaningful relative error of its own). Tolerances:
 *   0      casts, the row max and the target logit of the cross-entropy,
 *          embedding forward and backward, bias and residual adds, copies:
 *          the GPU does the same IEEE operations in the same order, so the
 *          results are bitwise equal;
 *   1e-5   fp32 kernels and fp32 GEMMs: sums in another order, fused
 *          multiply-adds, and CUDA's expf/tanhf/coshf/cosf/sinf (within 2
 *          ulp) move results by ~1e-7..1e-6;
 *   1e-4   bf16-operand GEMMs with fp32 results, against the cpu table on
 *          the same bf16-rounded operands (products of bf16 are exact in
 *          fp32; only the summation order differs);
 *   1e-2   GEMMs with bf16 results, and the whole bf16 path (cast, GEMM)
 *          against the fp32 cpu table on the unrounded operands (bf16
 *          keeps 8 significant bits: 2^-9 = 2e-3 relative per element).
 *
 * C11, no CUnit: it must build on a GPU machine that has only the CUDA
 * toolkit and OpenBLAS (tools/device-check.sh). Inputs come from a fixed
 * seed, so a failure repeats. The Llama block's kernels (RMSNorm, SwiGLU,
 * rotary embedding) are compared in test_kernels_llama.c, with the
 * helpers of test_kernels.h.
 */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "test_kernels.h"

#define SKIP_CODE 77

int g_checks, g_failed;
cudaStream_t g_stream;
static uint64_t g_rng = 0x5eed1234abcdULL;
struct oc_kernels CPU, GPU, GPU16; /* cpu; cuda fp32; cuda bf16 */

/* ------------------------------------------------------------------ */
/* Helpers                                                              */

/* splitmix64 (Steele et al. 2014) */
uint64_t next_u64(void)
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* uniform on [-1, 1) */
float urand(void)
{
    return (float)((double)(next_u64() >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes > 0 ? bytes : 1);
    OC_ASSERT(p);
    return p;
}

void *dalloc(size_t bytes)
{
    void *d = NULL;
    cudaCheck(cudaMalloc(&d, bytes > 0 ? bytes : 1));
    /* 0xff bytes are NaN floats: a kernel that skips an output shows */
    cudaCheck(cudaMemset(d, 0xff, bytes > 0 ? bytes : 1));
    return d;
}

void *dup_bytes(const void *h, size_t bytes)
{
    void *d = dalloc(bytes);
    cudaCheck(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* device -> host, after the stream's work */
void down(void *h, const void *d, size_t bytes)
{
    cudaCheck(cudaStreamSynchronize(g_stream));
    cudaCheck(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
}

/* bfloat16 (the top 16 bits of an IEEE binary32) rounded to nearest even,
 * as __float2bfloat16_rn; NaN stays a quiet NaN. */
oc_bf16 bf16_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (oc_bf16)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (oc_bf16)(u >> 16);
}

float f32_of(oc_bf16 h)
{
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* uniform on offset + scale * [-1, 1), on both sides */
struct pair prand(int64_t n, float scale, float offset)
{
    struct pair p = {xmalloc((size_t)n * sizeof(float)), NULL, n};
    for (int64_t i = 0; i < n; i++)
        p.h[i] = offset + scale * urand();
    p.d = dup_bytes(p.h, (size_t)n * sizeof(float));
    return p;
}

/* an output: host zero, device NaN */
struct pair pout(int64_t n)
{
    struct pair p = {xmalloc((size_t)n * sizeof(float)), dalloc((size_t)n * sizeof(float)), n};
    memset(p.h, 0, (size_t)n * sizeof(float));
    return p;
}

/* the host values to the device (a cpu output as the next input of both) */
void psync(struct pair *p)
{
    cudaCheck(cudaMemcpy(p->d, p->h, (size_t)p->n * sizeof(float), cudaMemcpyHostToDevice));
}

/* the host values rounded to bf16, on both sides */
void pround(struct pair *p)
{
    for (int64_t i = 0; i < p->n; i++)
        p->h[i] = f32_of(bf16_of(p->h[i]));
    psync(p);
}

void pfree(struct pair *p)
{
    free(p->h);
    cudaCheck(cudaFree(p->d));
    p->h = p->d = NULL;
}

/* max |got - ref| / max |ref|; NaN anywhere gives NaN, which fails */
double scaled_err(const float *got, const float *ref, int64_t n)
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

void check(const char *name, const float *got, const float *ref,
                  int64_t n, double tol)
{
    double e = scaled_err(got, ref, n);
    int ok = e <= tol; /* false for NaN */
    g_checks++;
    g_failed += !ok;
    printf("%-48s err %-9.2e tol %-7.0e %s\n", name, e, tol, ok ? "ok" : "FAILED");
}

/* a property that must hold, e.g. which GEMM path a call took */
void check_true(const char *name, int ok)
{
    g_checks++;
    g_failed += !ok;
    printf("%-48s %-30s %s\n", name, "", ok ? "ok" : "FAILED");
}

/* the device side of p against ref (n floats) */
void check_dev(const char *name, const float *d, const float *ref, int64_t n,
                      double tol)
{
    float *h = xmalloc((size_t)n * sizeof *h);
    down(h, d, (size_t)n * sizeof *h);
    check(name, h, ref, n, tol);
    free(h);
}

/* the gpu table's output against the cpu table's */
void pcheck(const char *name, const struct pair *p, double tol)
{
    check_dev(name, p->d, p->h, p->n, tol);
}

/* ------------------------------------------------------------------ */
/* bf16 rounding (host), casts                                          */

/* bf16 keeps the top 16 bits of the float, rounded to nearest even:
 * 1.0 = 0x3F800000 -> 0x3F80; 1 + 2^-8 = 0x3F808000 is the tie between
 * 0x3F80 and 0x3F81 -> even 0x3F80; 1 + 3*2^-8, tie between 0x3F81 and
 * 0x3F82 -> even 0x3F82; 1 + 2^-8 + 2^-20 is above the tie -> 0x3F81;
 * -2 -> 0xC000; the largest float rounds up to infinity 0x7F80; 0x4049 is
 * 3.140625. */
static void test_bf16_by_hand(void)
{
    check_true("host bf16 rounding by hand",
               bf16_of(1.0f) == 0x3F80 && bf16_of(1.00390625f) == 0x3F80 &&
                   bf16_of(1.01171875f) == 0x3F82 &&
                   bf16_of(1.00390625f + 0x1p-20f) == 0x3F81 && bf16_of(-2.0f) == 0xC000 &&
                   bf16_of(3.4028235e38f) == 0x7F80 && isnan(f32_of(bf16_of(NAN))) &&
                   f32_of(0x4049) == 3.140625f);
}

static void test_casts(void)
{
    enum { n = 4096 };
    float *x = xmalloc(n * sizeof *x), *gotf = xmalloc(n * sizeof *gotf);
    float *reff = xmalloc(n * sizeof *reff);
    for (int i = 0; i < n; i++) /* magnitudes 2^-20 .. 2^20 */
        x[i] = urand() * ldexpf(1.0f, (int)(next_u64() % 41) - 20);
    const float special[] = {0.0f, -0.0f, 1.0f, 1.00390625f /* tie, to even */,
                             1.01171875f /* tie, up */, 65504.0f, 3.0e38f, -3.0e38f,
                             INFINITY, -INFINITY, 1e-40f};
    memcpy(x, special, sizeof special);
    float *dx = dup_bytes(x, n * sizeof *x);
    oc_bf16 *db = dalloc(n * sizeof *db), *got = xmalloc(n * sizeof *got);
    oc_cuda_f32_to_bf16(db, dx, n, g_stream);
    down(got, db, n * sizeof *got);
    for (int i = 0; i < n; i++) { /* compare the bit patterns as numbers */
        gotf[i] = (float)got[i];
        reff[i] = (float)bf16_of(x[i]);
    }
    check("f32_to_bf16 (bits)", gotf, reff, n, TOL_EXACT);
    float *dback = dalloc(n * sizeof(float));
    oc_cuda_bf16_to_f32(dback, db, n, g_stream);
    for (int i = 0; i < n; i++)
        reff[i] = f32_of(bf16_of(x[i]));
    check_dev("bf16_to_f32", dback, reff, n, TOL_EXACT);
    cudaCheck(cudaFree(dback)), cudaCheck(cudaFree(db)), cudaCheck(cudaFree(dx));
    free(got), free(reff), free(gotf), free(x);
}

/* ------------------------------------------------------------------ */
/* The general GEMM (below the table) against cblas_sgemm               */

static void test_gemm(struct oc_cuda_blas *blas)
{
    const int64_t M = 37, N = 53, K = 71;
    char name[96];
    for (int ta = 0; ta <= 1; ta++)
        for (int tb = 0; tb <= 1; tb++) {
            /* stored shapes, with row padding to exercise the strides */
            const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 5;
            const int64_t na = (ta ? K : M) * lda, nb = (tb ? N : K) * ldb, nc = M * ldc;
            struct pair A = prand(na, 1, 0), B = prand(nb, 1, 0), C = prand(nc, 1, 0);
            float *C0 = xmalloc((size_t)nc * sizeof *C0), *ref32 = xmalloc((size_t)nc * 4);
            memcpy(C0, C.h, (size_t)nc * sizeof *C0);
            const CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans;
            const CBLAS_TRANSPOSE TB = tb ? CblasTrans : CblasNoTrans;
            cblas_sgemm(CblasRowMajor, TA, TB, (int)M, (int)N, (int)K, 0.75f, A.h, (int)lda,
                        B.h, (int)ldb, 0.5f, C.h, (int)ldc);
            memcpy(ref32, C.h, (size_t)nc * sizeof *ref32);
            oc_cuda_gemm(blas, ta, tb, M, N, K, 0.75f, A.d, lda, B.d, ldb, 0.5f, C.d, ldc,
                         OC_CUDA_F32, OC_CUDA_F32, g_stream);
            snprintf(name, sizeof name, "gemm f32 ta=%d tb=%d", ta, tb);
            pcheck(name, &C, TOL_F32);

            /* bf16 operands, fp32 result: against the rounded operands,
             * and (the whole path, cast kernel included) the fp32 ones */
            oc_bf16 *Ab = dalloc((size_t)na * 2), *Bb = dalloc((size_t)nb * 2);
            oc_cuda_f32_to_bf16(Ab, A.d, na, g_stream);
            oc_cuda_f32_to_bf16(Bb, B.d, nb, g_stream);
            pround(&A), pround(&B);
            memcpy(C.h, C0, (size_t)nc * sizeof *C0);
            psync(&C);
            cblas_sgemm(CblasRowMajor, TA, TB, (int)M, (int)N, (int)K, 0.75f, A.h, (int)lda,
                        B.h, (int)ldb, 0.5f, C.h, (int)ldc);
            oc_cuda_gemm(blas, ta, tb, M, N, K, 0.75f, Ab, lda, Bb, ldb, 0.5f, C.d, ldc,
                         OC_CUDA_BF16, OC_CUDA_F32, g_stream);
            snprintf(name, sizeof name, "gemm bf16->f32 ta=%d tb=%d", ta, tb);
            pcheck(name, &C, TOL_BF16_OPERANDS);
            snprintf(name, sizeof name, "gemm bf16->f32 ta=%d tb=%d vs fp32", ta, tb);
            check_dev(name, C.d, ref32, nc, TOL_BF16);

            /* bf16 result (C starts as bf16 of C0) */
            oc_bf16 *C0b = xmalloc((size_t)nc * 2);
            for (int64_t i = 0; i < nc; i++) {
                C0b[i] = bf16_of(C0[i]);
                C.h[i] = f32_of(C0b[i]);
            }
            oc_bf16 *Cb = dup_bytes(C0b, (size_t)nc * 2);
            cblas_sgemm(CblasRowMajor, TA, TB, (int)M, (int)N, (int)K, 0.75f, A.h, (int)lda,
                        B.h, (int)ldb, 0.5f, C.h, (int)ldc);
            oc_cuda_gemm(blas, ta, tb, M, N, K, 0.75f, Ab, lda, Bb, ldb, 0.5f, Cb, ldc,
                         OC_CUDA_BF16, OC_CUDA_BF16, g_stream);
            oc_cuda_bf16_to_f32(C.d, Cb, nc, g_stream);
            snprintf(name, sizeof name, "gemm bf16->bf16 ta=%d tb=%d", ta, tb);
            pcheck(name, &C, TOL_BF16);
            cudaCheck(cudaFree(Cb)), cudaCheck(cudaFree(Bb)), cudaCheck(cudaFree(Ab));
            free(C0b), free(ref32), free(C0);
            pfree(&C), pfree(&B), pfree(&A);
        }
}

/* ------------------------------------------------------------------ */
/* Linear layers                                                        */

/* The launcher's paths (below the table): cublasLt with its bias
 * epilogue, the cublasGemmEx fallback when Lt has no plan, and when an
 * operand is off 16-byte alignment (a tensor inside an arena can be). */
static void test_matmul_paths(struct oc_cuda_blas *blas)
{
    const int64_t N = 45, IC = 96, OC = 80;
    struct pair inp = prand(N * IC, 1, 0), w = prand(OC * IC, 0.5f, 0), b = prand(OC, 1, 0);
    struct pair out = pout(N * OC);
    CPU.ops->linear_fwd(CPU.ctx, out.h, inp.h, w.h, b.h, N, IC, OC);
    int64_t lt0 = blas->lt_calls;
    oc_cuda_matmul_fwd(blas, out.d, inp.d, w.d, b.d, N, IC, OC, OC_CUDA_F32, g_stream);
    pcheck("matmul_fwd f32 bias", &out, TOL_F32);
    /* aligned operands, a shape Lt runs on sm_80 and sm_90: a miss here
     * means a descriptor is wrong */
    check_true("matmul_fwd took the cublasLt path", blas->lt_calls == lt0 + 1);

    const int64_t N2 = N - 4; /* a shape with no plan yet: "Lt has none" */
    struct oc_cuda_lt_plan *p = &blas->plans[blas->nplans % OC_CUDA_LT_CACHE];
    blas->nplans++;
    *p = (struct oc_cuda_lt_plan){.N = N2, .IC = IC, .OC = OC, .ab = OC_CUDA_F32,
                                  .bias = 1, .align = 256, .found = 0};
    int64_t g0 = blas->gemmex_calls;
    CPU.ops->linear_fwd(CPU.ctx, out.h, inp.h, w.h, b.h, N2, IC, OC);
    oc_cuda_matmul_fwd(blas, out.d, inp.d, w.d, b.d, N2, IC, OC, OC_CUDA_F32, g_stream);
    check_dev("matmul_fwd f32 bias, GemmEx fallback", out.d, out.h, N2 * OC, TOL_F32);
    check_true("matmul_fwd fallback took GemmEx", blas->gemmex_calls == g0 + 1);

    float *off = dalloc((size_t)(N * IC + 1) * sizeof(float));
    cudaCheck(cudaMemcpy(off + 1, inp.h, (size_t)(N * IC) * 4, cudaMemcpyHostToDevice));
    g0 = blas->gemmex_calls;
    CPU.ops->linear_fwd(CPU.ctx, out.h, inp.h, w.h, b.h, N, IC, OC);
    oc_cuda_matmul_fwd(blas, out.d, off + 1, w.d, b.d, N, IC, OC, OC_CUDA_F32, g_stream);
    pcheck("matmul_fwd f32 bias, input 4 bytes off", &out, TOL_F32);
    check_true("matmul_fwd misaligned took GemmEx", blas->gemmex_calls == g0 + 1);
    cudaCheck(cudaFree(off));
    pfree(&out), pfree(&b), pfree(&w), pfree(&inp);
}

/* The table's linear layers, fp32: forward with and without a bias;
 * backward writes dinp and adds to dw and dbias. */
static void test_linear_f32(void)
{
    const int64_t N = 45, IC = 96, OC = 80;
    struct pair inp = prand(N * IC, 1, 0), w = prand(OC * IC, 0.5f, 0), b = prand(OC, 1, 0);
    struct pair out = pout(N * OC), g = prand(N * OC, 1, 0), din = pout(N * IC);
    struct pair dw = prand(OC * IC, 1, 0), db = prand(OC, 1, 0);
    CPU.ops->linear_fwd(CPU.ctx, out.h, inp.h, w.h, b.h, N, IC, OC);
    GPU.ops->linear_fwd(GPU.ctx, out.d, inp.d, w.d, b.d, N, IC, OC);
    pcheck("linear_fwd f32 bias", &out, TOL_F32);
    CPU.ops->linear_fwd(CPU.ctx, out.h, inp.h, w.h, NULL, N, IC, OC);
    GPU.ops->linear_fwd(GPU.ctx, out.d, inp.d, w.d, NULL, N, IC, OC);
    pcheck("linear_fwd f32 no bias", &out, TOL_F32);
    CPU.ops->linear_bwd(CPU.ctx, din.h, dw.h, db.h, g.h, inp.h, w.h, N, IC, OC);
    GPU.ops->linear_bwd(GPU.ctx, din.d, dw.d, db.d, g.d, inp.d, w.d, N, IC, OC);
    pcheck("linear_bwd f32 dinp", &din, TOL_F32);
    pcheck("linear_bwd f32 dw (+=)", &dw, TOL_F32);
    pcheck("linear_bwd f32 dbias (+=)", &db, TOL_F32);
    pfree(&db), pfree(&dw), pfree(&din), pfree(&g), pfree(&out);
    pfree(&b), pfree(&w), pfree(&inp);
}

/* The bf16 table: the weight read from the bf16 copy of the attached
 * arena (here 7 floats into it: the copy's offsets follow the arena's),
 * activations and dout cast just before the GEMM, the bias gradient from
 * the fp32 dout; the copy recast after weights_changed and after adamw,
 * and only then. */
static void test_linear_bf16(void)
{
    const int64_t N = 45, IC = 96, OC = 80, pad = 7, n = pad + OC * IC;
    struct pair arena = prand(n, 0.5f, 0), inp = prand(N * IC, 1, 0), b = prand(OC, 1, 0);
    struct pair out = pout(N * OC), g = prand(N * OC, 1, 0), din = pout(N * IC);
    struct pair dw = prand(OC * IC, 1, 0), db = prand(OC, 1, 0);
    struct oc_cuda_kernels *x = GPU16.ctx;
    OC_ASSERT(oc_cuda_kernels_weights(x, arena.d, n, NULL) == 0);
    float *w = arena.h + pad, *wd = arena.d + pad;
    float *ref32 = xmalloc((size_t)(N * OC) * sizeof *ref32);
    CPU.ops->linear_fwd(CPU.ctx, ref32, inp.h, w, b.h, N, IC, OC);
    GPU16.ops->linear_fwd(GPU16.ctx, out.d, inp.d, wd, b.d, N, IC, OC);
    check_dev("linear_fwd bf16 vs fp32", out.d, ref32, N * OC, TOL_BF16);
    struct pair gr = prand(N * OC, 0, 0); /* dout rounded, for dinp and dw */
    memcpy(gr.h, g.h, (size_t)(N * OC) * sizeof(float));
    pround(&gr), pround(&arena), pround(&inp); /* the operands as the GEMMs see them */
    CPU.ops->linear_fwd(CPU.ctx, out.h, inp.h, w, b.h, N, IC, OC);
    pcheck("linear_fwd bf16 (arena + 7)", &out, TOL_BF16_OPERANDS);
    /* dinp and dw from the rounded dout; dbias from the fp32 one */
    CPU.ops->linear_bwd(CPU.ctx, din.h, dw.h, NULL, gr.h, inp.h, w, N, IC, OC);
    float *tin = xmalloc((size_t)(N * IC) * 4), *tw = xmalloc((size_t)(OC * IC) * 4);
    memset(tw, 0, (size_t)(OC * IC) * 4);
    CPU.ops->linear_bwd(CPU.ctx, tin, tw, db.h, g.h, inp.h, w, N, IC, OC);
    free(tw), free(tin);
    GPU16.ops->linear_bwd(GPU16.ctx, din.d, dw.d, db.d, g.d, inp.d, wd, N, IC, OC);
    pcheck("linear_bwd bf16 dinp", &din, TOL_BF16_OPERANDS);
    pcheck("linear_bwd bf16 dw (+=)", &dw, TOL_BF16_OPERANDS);
    pcheck("linear_bwd bf16 dbias (+=, fp32 dout)", &db, TOL_F32);

    /* new weights written behind the table's back: the old copy is used
     * until weights_changed */
    float *prev = xmalloc((size_t)(N * OC) * sizeof *prev);
    down(prev, out.d, (size_t)(N * OC) * sizeof *prev);
    for (int64_t i = 0; i < n; i++)
        arena.h[i] = 0.5f * urand();
    pround(&arena);
    GPU16.ops->linear_fwd(GPU16.ctx, out.d, inp.d, wd, b.d, N, IC, OC);
    check_dev("linear_fwd bf16 keeps its copy", out.d, prev, N * OC, TOL_EXACT);
    GPU16.ops->weights_changed(GPU16.ctx);
    CPU.ops->linear_fwd(CPU.ctx, out.h, inp.h, w, b.h, N, IC, OC);
    GPU16.ops->linear_fwd(GPU16.ctx, out.d, inp.d, wd, b.d, N, IC, OC);
    pcheck("linear_fwd bf16 after weights_changed", &out, TOL_BF16_OPERANDS);

    /* adamw on the arena recasts too (the updated weights, from the device) */
    const struct oc_adamw h = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f};
    struct pair ag = prand(n, 1, 0), am = prand(n, 0, 0), av = prand(n, 0, 0);
    GPU16.ops->adamw(GPU16.ctx, arena.d, ag.d, am.d, av.d, n, &h, 1, 1);
    down(arena.h, arena.d, (size_t)n * sizeof(float));
    pround(&arena);
    CPU.ops->linear_fwd(CPU.ctx, out.h, inp.h, w, b.h, N, IC, OC);
    GPU16.ops->linear_fwd(GPU16.ctx, out.d, inp.d, wd, b.d, N, IC, OC);
    pcheck("linear_fwd bf16 after adamw", &out, TOL_BF16_OPERANDS);
    OC_ASSERT(oc_cuda_kernels_weights(x, NULL, 0, NULL) == 0);
    pfree(&av), pfree(&am), pfree(&ag), pfree(&gr);
    free(prev), free(ref32);
    pfree(&db), pfree(&dw), pfree(&din), pfree(&g), pfree(&out);
    pfree(&b), pfree(&inp), pfree(&arena);
}

/* ------------------------------------------------------------------ */
/* LayerNorm, GELU, adds, memory                                        */

static void test_layernorm(void)
{
    const int64_t N = 67, C = 200;
    /* an offset mean and a spread, so both passes matter */
    struct pair x = prand(N * C, 2, 3), w = prand(C, 0.5f, 1), b = prand(C, 0.5f, 0);
    struct pair out = pout(N * C), mean = pout(N), rstd = pout(N);
    CPU.ops->layernorm_fwd(CPU.ctx, out.h, mean.h, rstd.h, x.h, w.h, b.h, N, C);
    GPU.ops->layernorm_fwd(GPU.ctx, out.d, mean.d, rstd.d, x.d, w.d, b.d, N, C);
    pcheck("layernorm_fwd out", &out, TOL_F32);
    pcheck("layernorm_fwd mean", &mean, TOL_F32);
    pcheck("layernorm_fwd rstd", &rstd, TOL_F32);
    /* backward from the cpu's mean and rstd; dinp, dw, db add */
    psync(&mean), psync(&rstd);
    struct pair dy = prand(N * C, 1, 0), g = prand(N * C, 1, 0);
    struct pair gw = prand(C, 1, 0), gb = prand(C, 1, 0);
    CPU.ops->layernorm_bwd(CPU.ctx, g.h, gw.h, gb.h, dy.h, x.h, w.h, mean.h, rstd.h, N, C);
    GPU.ops->layernorm_bwd(GPU.ctx, g.d, gw.d, gb.d, dy.d, x.d, w.d, mean.d, rstd.d, N, C);
    pcheck("layernorm_bwd dinp (+=)", &g, TOL_F32);
    pcheck("layernorm_bwd dw (+=)", &gw, TOL_F32);
    pcheck("layernorm_bwd db (+=)", &gb, TOL_F32);
    pfree(&gb), pfree(&gw), pfree(&g), pfree(&dy), pfree(&rstd), pfree(&mean);
    pfree(&out), pfree(&b), pfree(&w), pfree(&x);
}

static void test_gelu(void)
{
    const int64_t n = 10007;
    struct pair x = prand(n, 6, 0), y = pout(n), d = prand(n, 1, 0);
    CPU.ops->gelu_fwd(CPU.ctx, y.h, x.h, n);
    GPU.ops->gelu_fwd(GPU.ctx, y.d, x.d, n);
    pcheck("gelu_fwd", &y, TOL_F32);
    CPU.ops->gelu_bwd(CPU.ctx, d.h, x.h, n);
    GPU.ops->gelu_bwd(GPU.ctx, d.d, x.d, n);
    pcheck("gelu_bwd", &d, TOL_F32);
    pfree(&d), pfree(&y), pfree(&x);
}

static void test_adds_memory(void)
{
    const int64_t N = 33, C = 70;
    struct pair bias = prand(C, 1, 0), res = prand(N * C, 1, 0);
    const char *names[3] = {"add_bias_residual (bias, res)", "add_bias_residual (bias)",
                            "add_bias_residual (res)"};
    for (int k = 0; k < 3; k++) {
        struct pair out = prand(N * C, 1, 0);
        CPU.ops->add_bias_residual(CPU.ctx, out.h, k < 2 ? bias.h : NULL,
                                   k != 1 ? res.h : NULL, N, C);
        GPU.ops->add_bias_residual(GPU.ctx, out.d, k < 2 ? bias.d : NULL,
                                   k != 1 ? res.d : NULL, N, C);
        pcheck(names[k], &out, TOL_EXACT);
        pfree(&out);
    }
    /* oc_cuda_add (below the table), out aliasing a */
    struct pair a = prand(N * C, 1, 0);
    for (int64_t i = 0; i < N * C; i++)
        a.h[i] = a.h[i] + res.h[i];
    oc_cuda_add(a.d, a.d, res.d, N * C, g_stream);
    pcheck("add", &a, TOL_EXACT);
    struct pair c = pout(N * C);
    CPU.ops->copy(CPU.ctx, c.h, a.h, N * C);
    GPU.ops->copy(GPU.ctx, c.d, a.d, N * C);
    CPU.ops->zero(CPU.ctx, c.h + 5, 7);
    GPU.ops->zero(GPU.ctx, c.d + 5, 7);
    pcheck("copy, zero", &c, TOL_EXACT);

    /* the bias gradient (below the table) over more rows than chunks, from
     * fp32 and bf16 dout: column sums in row order, as the cpu kernels' */
    const int64_t R = 1000, OC = 70;
    struct pair g = prand(R * OC, 1, 0), gb = prand(OC, 1, 0);
    float *gb0 = xmalloc((size_t)OC * sizeof *gb0);
    memcpy(gb0, gb.h, (size_t)OC * sizeof *gb0);
    float *scratch = dalloc((size_t)oc_cuda_colsum_scratch_floats(OC) * sizeof(float));
    for (int bf = 0; bf <= 1; bf++) {
        memcpy(gb.h, gb0, (size_t)OC * sizeof *gb0);
        psync(&gb);
        oc_bf16 *gd = dalloc((size_t)(R * OC) * 2);
        if (bf) {
            oc_cuda_f32_to_bf16(gd, g.d, R * OC, g_stream);
            pround(&g);
        }
        for (int64_t i = 0; i < R; i++)
            for (int64_t o = 0; o < OC; o++)
                gb.h[o] += g.h[i * OC + o];
        oc_cuda_bias_bwd(gb.d, bf ? (const void *)gd : g.d, bf ? OC_CUDA_BF16 : OC_CUDA_F32,
                         R, OC, scratch, g_stream);
        pcheck(bf ? "bias_bwd bf16 dout (+=)" : "bias_bwd f32 (+=)", &gb, TOL_F32);
        cudaCheck(cudaFree(gd));
    }
    cudaCheck(cudaFree(scratch));
    free(gb0);
    pfree(&gb), pfree(&g), pfree(&c), pfree(&a), pfree(&res), pfree(&bias);
}

/* ------------------------------------------------------------------ */
/* Attention                                                            */

/* nh query heads over nkv KV heads (g = nh/nkv per group; nkv = nh is
 * multi-head attention), qkv (B,T,nkv,g+2,HS). */
static void test_attention_one(int64_t B, int64_t T, int64_t nh, int64_t nkv, int64_t HS)
{
    char name[96], shape[64];
    snprintf(shape, sizeof shape, "B%lld T%lld nh%lld/%lld HS%lld", (long long)B,
             (long long)T, (long long)nh, (long long)nkv, (long long)HS);
    const int64_t g = nh / nkv;
    const int64_t nqkv = B * T * nkv * (g + 2) * HS, ny = B * T * nh * HS;
    const int64_t natt = B * nh * T * T;
    struct pair qkv = prand(nqkv, 1, 0), att = pout(natt), y = pout(ny);
    CPU.ops->attn_fwd(CPU.ctx, att.h, y.h, qkv.h, B, T, nh, nkv, HS);
    GPU.ops->attn_fwd(GPU.ctx, att.d, y.d, qkv.d, B, T, nh, nkv, HS);
    snprintf(name, sizeof name, "attn_fwd att %s", shape);
    pcheck(name, &att, TOL_F32);
    snprintf(name, sizeof name, "attn_fwd y   %s", shape);
    pcheck(name, &y, TOL_F32);
    cudaCheck(cudaMemset(att.d, 0xff, (size_t)natt * sizeof(float)));
    GPU.ops->attn_fwd(GPU.ctx, att.d, NULL, qkv.d, B, T, nh, nkv, HS);
    snprintf(name, sizeof name, "attn_fwd att only (y NULL) %s", shape);
    pcheck(name, &att, TOL_F32);

    /* backward from the cpu's probabilities; a group's dk, dv sum its g
     * heads (in another order than the cpu's: TOL_F32, not exact) */
    psync(&att);
    struct pair dy = prand(ny, 1, 0), dqkv = pout(nqkv);
    CPU.ops->attn_bwd(CPU.ctx, dqkv.h, att.h, qkv.h, dy.h, B, T, nh, nkv, HS);
    GPU.ops->attn_bwd(GPU.ctx, dqkv.d, att.d, qkv.d, dy.d, B, T, nh, nkv, HS);
    snprintf(name, sizeof name, "attn_bwd dqkv %s", shape);
    pcheck(name, &dqkv, TOL_F32);
    pfree(&dqkv), pfree(&dy), pfree(&y), pfree(&att), pfree(&qkv);
}

static void test_attention(void)
{
    test_attention_one(2, 37, 3, 3, 40);   /* T across two tiles, HS not /32 */
    test_attention_one(1, 129, 2, 2, 128); /* GPT-3's head size, five tiles */
    test_attention_one(1, 45, 1, 1, 256);  /* the largest HS: > 48 KiB smem */
    test_attention_one(2, 37, 4, 2, 16);   /* GQA: llama-tiny's heads, g = 2 */
    test_attention_one(1, 70, 8, 1, 64);   /* multi-query: one KV head, g = 8 */
}

/* ------------------------------------------------------------------ */
/* Embedding, cross-entropy, AdamW                                      */

static void test_embedding(void)
{
    /* rank 1 of a 3-way vocabulary split: rows [15, 30) of 45 */
    const int64_t B = 3, T = 11, C = 50, V = 45, v = 15, v0 = 15, P = T + 5, N = B * T;
    int32_t tok[3 * 11];
    for (int64_t i = 0; i < N; i++)
        tok[i] = (int32_t)(next_u64() % (uint64_t)V);
    tok[0] = tok[7] = tok[20] = tok[32] = 17; /* a local token, 4 times */
    tok[1] = tok[2] = 3;                      /* a remote one, twice */
    tok[3] = 14;                              /* the shard's edges */
    tok[4] = 15;
    tok[5] = 29;
    tok[6] = 30;
    int32_t *dtok = dup_bytes(tok, sizeof tok);
    struct pair wte = prand(v * C, 1, 0), wpe = prand(P * C, 1, 0), out = pout(N * C);
    CPU.ops->embed_fwd(CPU.ctx, out.h, tok, wte.h, N, C, V, v0, v);
    GPU.ops->embed_fwd(GPU.ctx, out.d, dtok, wte.d, N, C, V, v0, v);
    pcheck("embed_fwd (local rows, zeros)", &out, TOL_EXACT);
    CPU.ops->pos_fwd(CPU.ctx, out.h, wpe.h, N, T, C);
    GPU.ops->pos_fwd(GPU.ctx, out.d, wpe.d, N, T, C);
    pcheck("pos_fwd (+= wpe)", &out, TOL_EXACT);
    struct pair g = prand(N * C, 1, 0); /* wte, wpe now stand for their grads */
    CPU.ops->embed_bwd(CPU.ctx, wte.h, wpe.h, tok, g.h, B, T, C, V, v0, v);
    GPU.ops->embed_bwd(GPU.ctx, wte.d, wpe.d, dtok, g.d, B, T, C, V, v0, v);
    pcheck("embed_bwd dwte (+=, position order)", &wte, TOL_EXACT);
    pcheck("embed_bwd dwpe (+=, batch order)", &wpe, TOL_EXACT);
    /* no position table (rotary models): dwte alone */
    CPU.ops->embed_bwd(CPU.ctx, wte.h, NULL, tok, g.h, B, T, C, V, v0, v);
    GPU.ops->embed_bwd(GPU.ctx, wte.d, NULL, dtok, g.d, B, T, C, V, v0, v);
    pcheck("embed_bwd dwte, no positions (dwpe NULL)", &wte, TOL_EXACT);
    cudaCheck(cudaFree(dtok));
    pfree(&g), pfree(&out), pfree(&wpe), pfree(&wte);
}

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
    int32_t *dtgt = dup_bytes(tgt, sizeof tgt);
    struct pair lg = prand(N * v, 5, 0), lmax = pout(N), se = pout(N), tl = pout(N);
    struct pair loss = pout(N), dl = pout(N * v);
    CPU.ops->ce_max(CPU.ctx, lmax.h, lg.h, N, v);
    GPU.ops->ce_max(GPU.ctx, lmax.d, lg.d, N, v);
    pcheck("ce_max", &lmax, TOL_EXACT);
    psync(&lmax);
    CPU.ops->ce_exp(CPU.ctx, lg.h, se.h, tl.h, lmax.h, tgt, N, v, v0, V);
    GPU.ops->ce_exp(GPU.ctx, lg.d, se.d, tl.d, lmax.d, dtgt, N, v, v0, V);
    pcheck("ce_exp exp(logits - max)", &lg, TOL_F32);
    pcheck("ce_exp sumexp", &se, TOL_F32);
    pcheck("ce_exp target logit - max", &tl, TOL_EXACT);
    psync(&lg), psync(&se), psync(&tl);
    CPU.ops->ce_finish(CPU.ctx, loss.h, lg.h, se.h, tl.h, N, v);
    GPU.ops->ce_finish(GPU.ctx, loss.d, lg.d, se.d, tl.d, N, v);
    pcheck("ce_finish losses", &loss, TOL_F32);
    pcheck("ce_finish probabilities", &lg, TOL_F32);
    psync(&lg);
    const float scale = 1.0f / (float)N;
    CPU.ops->ce_bwd(CPU.ctx, dl.h, lg.h, tgt, scale, N, v, v0);
    GPU.ops->ce_bwd(GPU.ctx, dl.d, lg.d, dtgt, scale, N, v, v0);
    pcheck("ce_bwd dlogits", &dl, TOL_F32);
    GPU.ops->ce_bwd(GPU.ctx, lg.d, lg.d, dtgt, scale, N, v, v0); /* in place */
    check_dev("ce_bwd dlogits in place", lg.d, dl.h, N * v, TOL_F32);
    cudaCheck(cudaFree(dtgt));
    pfree(&dl), pfree(&loss), pfree(&tl), pfree(&se), pfree(&lmax), pfree(&lg);
}

static void test_adamw(void)
{
    const int64_t n = 5000;
    const struct oc_adamw h = {1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f};
    for (int decay = 0; decay <= 1; decay++) {
        struct pair w = prand(n, 1, 0), g = prand(n, 0.1f, 0), m = prand(n, 0.01f, 0);
        struct pair v = prand(n, 0.001f, 0.001f);
        CPU.ops->adamw(CPU.ctx, w.h, g.h, m.h, v.h, n, &h, decay, 7);
        GPU.ops->adamw(GPU.ctx, w.d, g.d, m.d, v.d, n, &h, decay, 7);
        pcheck(decay ? "adamw w (decay)" : "adamw w (no decay)", &w, TOL_F32);
        pcheck(decay ? "adamw m (decay)" : "adamw m (no decay)", &m, TOL_F32);
        pcheck(decay ? "adamw v (decay)" : "adamw v (no decay)", &v, TOL_F32);
        pfree(&v), pfree(&m), pfree(&g), pfree(&w);
    }
}

/* ------------------------------------------------------------------ */

/* 1 when a GPU of compute capability >= 8.0 (the oldest built, sm_80) is
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
    test_bf16_by_hand();
    if (!have_gpu())
        return g_failed ? 1 : SKIP_CODE;
    openblas_set_num_threads(1);
    cudaCheck(cudaStreamCreate(&g_stream));
    struct oc_cuda_blas blas;
    oc_cuda_blas_init(&blas);
    struct oc_cuda_kernels k32, k16;
    CPU = oc_kernels_cpu();
    oc_cuda_kernels_init(&GPU, &k32, &blas, g_stream, OC_CUDA_F32);
    oc_cuda_kernels_init(&GPU16, &k16, &blas, g_stream, OC_CUDA_BF16);
    /* the largest calls below: linear 45 x 96 -> 80, LayerNorm and RMSNorm
     * rows of 200, attention B 2 x T 129 x 8 heads (scratch B*T*nh) */
    const struct oc_kernel_sizes sz = {.rows = 67, .lin_in = 96, .lin_out = 80,
                                       .bias_out = 80, .norm = 200, .att_B = 2,
                                       .att_T = 129, .att_nh = 8};
    OC_ASSERT(GPU.ops->reserve(GPU.ctx, &sz, NULL) == 0);
    OC_ASSERT(GPU16.ops->reserve(GPU16.ctx, &sz, NULL) == 0);
    check_true("align_floats: cpu 1, cuda 64",
               CPU.ops->align_floats == 1 && GPU.ops->align_floats == 64);

    test_casts();
    test_gemm(&blas);
    test_matmul_paths(&blas);
    test_linear_f32();
    test_linear_bf16();
    test_layernorm();
    test_gelu();
    test_adds_memory();
    test_attention();
    test_flash_attention();
    test_kernels_llama();
    test_embedding();
    test_cross_entropy();
    test_adamw();

    cudaCheck(cudaStreamSynchronize(g_stream));
    oc_cuda_kernels_free(&k16);
    oc_cuda_kernels_free(&k32);
    oc_cuda_blas_free(&blas);
    cudaCheck(cudaStreamDestroy(g_stream));
    if (g_failed) {
        printf("%d of %d checks FAILED\n", g_failed, g_checks);
        return 1;
    }
    printf("all %d checks passed\n", g_checks);
    return 0;
}
