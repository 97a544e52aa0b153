/* gemm.c: the backend's GEMMs through cuBLAS (cublasGemmEx) and cublasLt,
 * row-major like the cpu kernels' cblas_sgemm(CblasRowMajor, ...) calls. Host
 * code only, so it is C11 compiled by the host compiler (no nvcc pass).
 *
 * Row-major through column-major cuBLAS: a row-major (M,N) matrix is the
 * column-major (N,M) matrix of its transpose, so C = op(A) op(B) is
 * computed as C^T = op(B)^T op(A)^T: cuBLAS gets B first, with the row
 * strides as leading dimensions and the transpose flags as given (NVIDIA's
 * cuBLAS guide, "Data layout"; llm.c does the same).
 *
 * Precision: CUBLAS_COMPUTE_32F in every call. With fp32 operands that is
 * true fp32 (the handle keeps CUBLAS_DEFAULT_MATH; TF32 would need
 * CUBLAS_COMPUTE_32F_FAST_TF32), so results match the CPU's to ~1e-6
 * relative; with bf16 operands the tensor cores multiply bf16 and
 * accumulate in fp32.
 *
 * Where cublasLt pays: the forward linear layer (oc_cuda_matmul_fwd), whose
 * bias add rides in Lt's epilogue instead of a second pass over the output,
 * in the "TN" form Lt prefers (A = W transposed, B = the input). The
 * heuristic's choice is cached per shape and operand alignment in the
 * context (a query costs tens of microseconds). Lt is used only with
 * 16-byte aligned operands, and told their alignment (its heuristic assumes
 * 256 bytes by default; a tensor inside a parameter or activation arena is
 * only 4-byte aligned in general). Otherwise, or if Lt has no algorithm
 * for a shape, cublasGemmEx and a bias kernel do the same math. The backward's three products have no
 * epilogue to fuse (dw accumulates with beta = 1), so they use
 * cublasGemmEx.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "kernels.h"
#include "status.h"

/* cuBLAS's own advice: 32 MiB of workspace on Hopper, 4 MiB before. */
#define OC_BLAS_WORKSPACE_BYTES ((size_t)32 << 20)

static cudaDataType_t dtype_of(enum oc_cuda_dtype t)
{
    return t == OC_CUDA_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

void oc_cuda_blas_init(struct oc_cuda_blas *b)
{
    memset(b, 0, sizeof *b);
    cublasCheck(cublasCreate(&b->handle));
    cublasCheck(cublasLtCreate(&b->lt));
    cublasCheck(cublasSetMathMode(b->handle, CUBLAS_DEFAULT_MATH));
    b->workspace_bytes = OC_BLAS_WORKSPACE_BYTES;
    cudaCheck(cudaMalloc(&b->workspace, b->workspace_bytes));
}

void oc_cuda_blas_free(struct oc_cuda_blas *b)
{
    if (b->workspace)
        cudaCheck(cudaFree(b->workspace));
    if (b->lt)
        cublasCheck(cublasLtDestroy(b->lt));
    if (b->handle)
        cublasCheck(cublasDestroy(b->handle));
    memset(b, 0, sizeof *b);
}

/* cublasSetStream resets the workspace to cuBLAS's pool (cuBLAS guide,
 * cublasSetStream), so set both before each call. */
static void blas_on(struct oc_cuda_blas *b, cudaStream_t stream)
{
    cublasCheck(cublasSetStream(b->handle, stream));
    cublasCheck(cublasSetWorkspace(b->handle, b->workspace, b->workspace_bytes));
}

void oc_cuda_gemm(struct oc_cuda_blas *b, int ta, int tb, int64_t M, int64_t N,
                  int64_t K, float alpha, const void *A, int64_t lda,
                  const void *B, int64_t ldb, float beta, void *C, int64_t ldc,
                  enum oc_cuda_dtype ab, enum oc_cuda_dtype c,
                  cudaStream_t stream)
{
    OC_ASSERT(M >= 1 && N >= 1 && K >= 1);
    OC_ASSERT(M <= INT_MAX && N <= INT_MAX && K <= INT_MAX);
    OC_ASSERT(lda >= (ta ? M : K) && ldb >= (tb ? K : N) && ldc >= N);
    OC_ASSERT(lda <= INT_MAX && ldb <= INT_MAX && ldc <= INT_MAX);
    OC_ASSERT(!(ab == OC_CUDA_F32 && c == OC_CUDA_BF16)); /* no such cuBLAS mode */
    OC_ASSERT(A && B && C);
    blas_on(b, stream);
    cublasCheck(cublasGemmEx(b->handle, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                             ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)N, (int)M,
                             (int)K, &alpha, B, dtype_of(ab), (int)ldb, A,
                             dtype_of(ab), (int)lda, &beta, C, dtype_of(c),
                             (int)ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* Lt's matmul for out (N,OC) = inp (N,IC) w^T + bias, as column-major
 * out^T (OC,N) = op_T(W) @ inp^T: A = w, stored (IC,OC) column-major with
 * ld IC, transposed; B = inp, (IC,N) with ld IC; D = out, (OC,N) with ld
 * OC; the bias runs along D's rows (OC), as CUBLASLT_EPILOGUE_BIAS wants. */
struct lt_descs {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, d;
};

static void lt_descs_init(struct lt_descs *l, const float *bias, int64_t N,
                          int64_t IC, int64_t OC, enum oc_cuda_dtype ab)
{
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    cublasCheck(cublasLtMatmulDescCreate(&l->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasCheck(cublasLtMatmulDescSetAttribute(l->op, CUBLASLT_MATMUL_DESC_TRANSA,
                                               &ta, sizeof ta));
    cublasCheck(cublasLtMatmulDescSetAttribute(l->op, CUBLASLT_MATMUL_DESC_TRANSB,
                                               &tb, sizeof tb));
    if (bias) {
        const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        cublasCheck(cublasLtMatmulDescSetAttribute(
            l->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        /* the bias has D's type, fp32 (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE's
         * default) */
        cublasCheck(cublasLtMatmulDescSetAttribute(
            l->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    }
    cublasCheck(cublasLtMatrixLayoutCreate(&l->a, dtype_of(ab), (uint64_t)IC,
                                           (uint64_t)OC, IC));
    cublasCheck(cublasLtMatrixLayoutCreate(&l->b, dtype_of(ab), (uint64_t)IC,
                                           (uint64_t)N, IC));
    cublasCheck(cublasLtMatrixLayoutCreate(&l->d, CUDA_R_32F, (uint64_t)OC,
                                           (uint64_t)N, OC));
}

static void lt_descs_free(struct lt_descs *l)
{
    cublasCheck(cublasLtMatrixLayoutDestroy(l->d));
    cublasCheck(cublasLtMatrixLayoutDestroy(l->b));
    cublasCheck(cublasLtMatrixLayoutDestroy(l->a));
    cublasCheck(cublasLtMatmulDescDestroy(l->op));
}

/* The largest power of two (at most 256) that divides the address. */
static unsigned align_of(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    unsigned al = 256;
    while (al > 1 && a % al != 0)
        al /= 2;
    return al;
}

/* The cached plan for this shape, asking the heuristic the first time. The
 * heuristic assumes 256-byte aligned operands unless told otherwise
 * (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES, default 256), and tensors
 * inside an arena are not, so the alignment is part of the key. */
static const struct oc_cuda_lt_plan *lt_plan(struct oc_cuda_blas *b,
                                             const struct lt_descs *l, int64_t N,
                                             int64_t IC, int64_t OC,
                                             enum oc_cuda_dtype ab, int bias,
                                             unsigned align)
{
    int64_t filled = b->nplans < OC_CUDA_LT_CACHE ? b->nplans : OC_CUDA_LT_CACHE;
    for (int64_t i = 0; i < filled; i++) {
        const struct oc_cuda_lt_plan *p = &b->plans[i];
        if (p->N == N && p->IC == IC && p->OC == OC && p->ab == (int)ab &&
            p->bias == bias && p->align == align)
            return p;
    }
    struct oc_cuda_lt_plan *p = &b->plans[b->nplans % OC_CUDA_LT_CACHE];
    b->nplans++;
    memset(p, 0, sizeof *p);
    p->N = N;
    p->IC = IC;
    p->OC = OC;
    p->ab = (int)ab;
    p->bias = bias;
    p->align = align;
    cublasLtMatmulPreference_t pref;
    cublasCheck(cublasLtMatmulPreferenceCreate(&pref));
    cublasCheck(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &b->workspace_bytes,
        sizeof b->workspace_bytes));
    const uint32_t al = align;
    const cublasLtMatmulPreferenceAttributes_t which[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++)
        cublasCheck(cublasLtMatmulPreferenceSetAttribute(pref, which[i], &al,
                                                         sizeof al));
    cublasLtMatmulHeuristicResult_t res;
    int n = 0;
    /* "no algorithm" is an answer here, not an error: fall back */
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
        b->lt, l->op, l->a, l->b, l->d, l->d, pref, 1, &res, &n);
    cublasCheck(cublasLtMatmulPreferenceDestroy(pref));
    if (st == CUBLAS_STATUS_SUCCESS && n > 0) {
        p->found = 1;
        p->algo = res.algo;
    }
    return p;
}

void oc_cuda_matmul_fwd(struct oc_cuda_blas *b, float *out, const void *inp,
                        const void *w, const float *bias, int64_t N, int64_t IC,
                        int64_t OC, enum oc_cuda_dtype ab, cudaStream_t stream)
{
    OC_ASSERT(N >= 1 && IC >= 1 && OC >= 1);
    OC_ASSERT(N <= INT_MAX && IC <= INT_MAX && OC <= INT_MAX);
    OC_ASSERT(out && inp && w && (const void *)out != inp);
    /* Lt only with 16-byte aligned operands and rows (the bias vector has
     * no alignment preference to tell the heuristic, so it must be 16 too) */
    const size_t esize = ab == OC_CUDA_BF16 ? 2 : 4;
    unsigned align = align_of(inp);
    unsigned a2 = align_of(w), a3 = align_of(out);
    align = a2 < align ? a2 : align;
    align = a3 < align ? a3 : align;
    const int lt_ok = align >= 16 && (bias == NULL || align_of(bias) >= 16) &&
                      (IC * esize) % 16 == 0 && (OC * sizeof(float)) % 16 == 0;
    if (lt_ok) {
        struct lt_descs l;
        lt_descs_init(&l, bias, N, IC, OC, ab);
        const struct oc_cuda_lt_plan *p =
            lt_plan(b, &l, N, IC, OC, ab, bias != NULL, align);
        if (p->found) {
            const float alpha = 1.0f, beta = 0.0f;
            cublasCheck(cublasLtMatmul(b->lt, l.op, &alpha, w, l.a, inp, l.b,
                                       &beta, out, l.d, out, l.d, &p->algo,
                                       b->workspace, b->workspace_bytes, stream));
            lt_descs_free(&l);
            b->lt_calls++;
            return;
        }
        lt_descs_free(&l);
    }
    /* cblas_sgemm(RowMajor, NoTrans, Trans, N, OC, IC, 1, inp, IC, w, IC,
     * 0, out, OC), then the bias (the cpu kernels' linear_fwd) */
    oc_cuda_gemm(b, 0, 1, N, OC, IC, 1.0f, inp, IC, w, IC, 0.0f, out, OC, ab,
                 OC_CUDA_F32, stream);
    if (bias)
        oc_cuda_add_bias_residual(out, bias, NULL, N, OC, stream);
    b->gemmex_calls++;
}

void oc_cuda_matmul_bwd(struct oc_cuda_blas *b, float *dinp, float *dw,
                        float *dbias, const void *dout, const void *inp,
                        const void *w, int64_t N, int64_t IC, int64_t OC,
                        enum oc_cuda_dtype ab, float *scratch,
                        cudaStream_t stream)
{
    OC_ASSERT(dinp && dw && dout && inp && w && (!dbias || scratch));
    /* dinp = dout @ w: cblas_sgemm(RowMajor, NoTrans, NoTrans, N, IC, OC,
     * 1, dout, OC, w, IC, 0, dinp, IC) */
    oc_cuda_gemm(b, 0, 0, N, IC, OC, 1.0f, dout, OC, w, IC, 0.0f, dinp, IC, ab,
                 OC_CUDA_F32, stream);
    /* dw += dout^T @ inp: cblas_sgemm(RowMajor, Trans, NoTrans, OC, IC, N,
     * 1, dout, OC, inp, IC, 1, dw, IC) */
    oc_cuda_gemm(b, 1, 0, OC, IC, N, 1.0f, dout, OC, inp, IC, 1.0f, dw, IC, ab,
                 OC_CUDA_F32, stream);
    if (dbias)
        oc_cuda_bias_bwd(dbias, dout, ab, N, OC, scratch, stream);
}
