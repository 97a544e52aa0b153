/* emu_blas.cpp: cuBLAS and cublasLt as the emulator provides them
 * (kernels/emu/README.md): the calls kernels/cuda/gemm.c makes, with the
 * declarations of the real <cublas_v2.h> and <cublasLt.h>.
 *
 * Every GEMM is one loop nest, column-major as cuBLAS's:
 *   D (m,n) = alpha op(A) (m,k) op(B) (k,n) + beta C (+ bias[i] on row i)
 * operands fp32 or bf16, products and sums in fp32 in k order, the result
 * fp32 or bf16 (round to nearest even); beta 0 reads no C (which may be
 * NaN). What it does not reproduce: cuBLAS's blocking, summation order,
 * FMAs and tensor-core algorithms, so results agree with the real library
 * to rounding (the tests' tolerances), not bitwise.
 *
 * What it checks as the libraries would refuse (a status, which gemm.c's
 * cublasCheck reports): leading dimensions shorter than the rows, operand
 * types outside (fp32, fp32 -> fp32), (bf16, bf16 -> fp32 or bf16) with
 * fp32 compute, inconsistent Lt shapes, an Lt algorithm used with operands
 * less aligned than the preference promised. And, stopping the program
 * (emu_fail), operands or a workspace outside device memory: the bytes an
 * operand's shape and leading dimension span must lie in one allocation.
 *
 * cublasLt offers one algorithm for every supported case, the bias
 * epilogue (CUBLASLT_EPILOGUE_BIAS, fp32 bias) included, so gemm.c takes
 * its Lt path where it would on a GPU; its "no algorithm" fallback is
 * tested by the kernel test's own injected plan.
 */
#include "emu_internal.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <string.h>

#include <vector>

#define EMU_MAGIC_DESC 0x6465736cu
#define EMU_MAGIC_LAYOUT 0x6c61796fu
#define EMU_MAGIC_PREF 0x70726566u
#define EMU_MAGIC_ALGO 0x616c676full

struct cublasContext {
    cudaStream_t stream;
    void *workspace;
    size_t workspace_bytes;
};

struct cublasLtContext {
    int unused;
};

namespace {

struct lt_desc {
    uint32_t magic;
    cublasComputeType_t compute;
    cudaDataType_t scale;
    cublasOperation_t ta, tb;
    cublasLtEpilogue_t epilogue;
    const float *bias;
    cudaDataType_t bias_type;
};

struct lt_layout {
    uint32_t magic;
    cudaDataType_t type;
    uint64_t rows, cols;
    int64_t ld;
};

struct lt_pref {
    uint32_t magic;
    uint32_t align[4]; /* the minimum alignments of A, B, C, D (bytes) */
};

/* One GEMM, column-major (see the file's header). */
struct gemm {
    int ta, tb;
    int64_t m, n, k;
    float alpha, beta;
    const void *A, *B, *C;
    void *D;
    cudaDataType_t at, bt, ct, dt;
    int64_t lda, ldb, ldc, ldd;
    const float *bias; /* NULL or (m) */
};

float load(const void *p, cudaDataType_t t, int64_t i)
{
    if (t == CUDA_R_32F)
        return ((const float *)p)[i];
    return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
}

void store(void *p, cudaDataType_t t, int64_t i, float v)
{
    if (t == CUDA_R_32F)
        ((float *)p)[i] = v;
    else
        ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
}

size_t esize(cudaDataType_t t)
{
    return t == CUDA_R_32F ? 4 : 2;
}

/* The bytes of a (rows, cols) column-major operand with leading dimension
 * ld lie in one device allocation. */
void need_operand(const char *call, const char *what, const void *p, cudaDataType_t t,
                  int64_t rows, int64_t cols, int64_t ld)
{
    if (rows == 0 || cols == 0)
        return;
    const size_t bytes = ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * esize(t);
    if (!p || !emu_dev_range(p, bytes))
        emu_fail("%s: operand %s (%lld x %lld, ld %lld: %zu bytes at %p) is not inside one "
                 "device allocation", call, what, (long long)rows, (long long)cols,
                 (long long)ld, bytes, p);
}

void gemm_check(const char *call, const gemm &g)
{
    need_operand(call, "A", g.A, g.at, g.ta ? g.k : g.m, g.ta ? g.m : g.k, g.lda);
    need_operand(call, "B", g.B, g.bt, g.tb ? g.n : g.k, g.tb ? g.k : g.n, g.ldb);
    if (g.beta != 0.0f)
        need_operand(call, "C", g.C, g.ct, g.m, g.n, g.ldc);
    need_operand(call, "D", g.D, g.dt, g.m, g.n, g.ldd);
    if (g.bias && !emu_dev_range(g.bias, (size_t)g.m * sizeof(float)))
        emu_fail("%s: the bias (%lld floats at %p) is not device memory", call,
                 (long long)g.m, (const void *)g.bias);
}

void gemm_run(const gemm &g)
{
    const int64_t m = g.m, n = g.n, k = g.k;
    std::vector<float> a((size_t)(m * k)), b((size_t)(n * k)); /* rows of op(A), cols of op(B) */
    for (int64_t i = 0; i < m; i++)
        for (int64_t l = 0; l < k; l++)
            a[(size_t)(i * k + l)] = load(g.A, g.at, g.ta ? l + i * g.lda : i + l * g.lda);
    for (int64_t j = 0; j < n; j++)
        for (int64_t l = 0; l < k; l++)
            b[(size_t)(j * k + l)] = load(g.B, g.bt, g.tb ? j + l * g.ldb : l + j * g.ldb);
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            const float *ai = &a[(size_t)(i * k)], *bj = &b[(size_t)(j * k)];
            float s = 0.0f;
            for (int64_t l = 0; l < k; l++)
                s += ai[l] * bj[l];
            float v = g.alpha * s;
            if (g.beta != 0.0f)
                v += g.beta * load(g.C, g.ct, i + j * g.ldc);
            if (g.bias)
                v += g.bias[i];
            store(g.D, g.dt, i + j * g.ldd, v);
        }
}

/* (A, B -> C) as cuBLAS runs them with fp32 compute. */
bool types_ok(cudaDataType_t ab, cudaDataType_t bt, cudaDataType_t c)
{
    if (ab != bt)
        return false;
    if (ab == CUDA_R_32F)
        return c == CUDA_R_32F;
    return ab == CUDA_R_16BF && (c == CUDA_R_32F || c == CUDA_R_16BF);
}

bool op_ok(cublasOperation_t o)
{
    return o == CUBLAS_OP_N || o == CUBLAS_OP_T;
}

} // namespace

/* ------------------------------------------------------------------ */
/* cuBLAS                                                               */

cublasStatus_t cublasCreate_v2(cublasHandle_t *h)
{
    *h = new cublasContext();
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t h)
{
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!emu_stream_ok(s))
        return CUBLAS_STATUS_INVALID_VALUE;
    h->stream = s;
    h->workspace = nullptr; /* back to cuBLAS's own pool, as the library does */
    h->workspace_bytes = 0;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void *ws, size_t bytes)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (bytes > 0 && !emu_dev_range(ws, bytes))
        emu_fail("cublasSetWorkspace: %zu bytes at %p are not device memory", bytes, ws);
    h->workspace = ws;
    h->workspace_bytes = bytes;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode)
{
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    return mode == CUBLAS_DEFAULT_MATH || mode == CUBLAS_PEDANTIC_MATH
               ? CUBLAS_STATUS_SUCCESS
               : CUBLAS_STATUS_NOT_SUPPORTED; /* TF32 etc. are not emulated */
}

const char *cublasGetStatusString(cublasStatus_t st)
{
    switch (st) {
    case CUBLAS_STATUS_SUCCESS:
        return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE:
        return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_NOT_SUPPORTED:
        return "the functionality requested is not supported (by the emulator)";
    default:
        return "an error of the emulated cuBLAS";
    }
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void *alpha,
                            const void *A, cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta, void *C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo)
{
    (void)algo;
    if (!h)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_PEDANTIC)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!types_ok(Atype, Btype, Ctype))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    const int ta = transa == CUBLAS_OP_T, tb = transb == CUBLAS_OP_T;
    if (!op_ok(transa) || !op_ok(transb) || m < 0 || n < 0 || k < 0 ||
        lda < (ta ? k : m) || lda < 1 || ldb < (tb ? n : k) || ldb < 1 || ldc < m || ldc < 1)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    gemm g;
    g.ta = ta, g.tb = tb, g.m = m, g.n = n, g.k = k;
    g.alpha = *(const float *)alpha, g.beta = *(const float *)beta;
    g.A = A, g.B = B, g.C = C, g.D = C;
    g.at = Atype, g.bt = Btype, g.ct = g.dt = Ctype;
    g.lda = lda, g.ldb = ldb, g.ldc = g.ldd = ldc;
    g.bias = nullptr;
    gemm_check("cublasGemmEx", g);
    gemm_run(g);
    return CUBLAS_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* cublasLt                                                             */

static lt_desc *desc_of(cublasLtMatmulDesc_t d)
{
    lt_desc *x = reinterpret_cast<lt_desc *>(d);
    return x && x->magic == EMU_MAGIC_DESC ? x : nullptr;
}

static lt_layout *layout_of(cublasLtMatrixLayout_t l)
{
    lt_layout *x = reinterpret_cast<lt_layout *>(l);
    return x && x->magic == EMU_MAGIC_LAYOUT ? x : nullptr;
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
    *h = new cublasLtContext();
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t h)
{
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute,
                                        cudaDataType_t scale)
{
    lt_desc *x = new lt_desc();
    x->magic = EMU_MAGIC_DESC;
    x->compute = compute;
    x->scale = scale;
    x->ta = x->tb = CUBLAS_OP_N;
    x->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    x->bias = nullptr;
    x->bias_type = CUDA_R_32F;
    *d = reinterpret_cast<cublasLtMatmulDesc_t>(x);
    return CUBLAS_STATUS_SUCCESS;
}

/* Frees an Lt object made here (its magic first: a second destroy fails). */
template <class T> static cublasStatus_t lt_destroy(void *p, uint32_t magic)
{
    T *x = static_cast<T *>(p);
    if (!x || x->magic != magic)
        return CUBLAS_STATUS_INVALID_VALUE;
    x->magic = 0;
    delete x;
    return CUBLAS_STATUS_SUCCESS;
}

/* An attribute's bytes into its field, if the size is the field's. */
static cublasStatus_t set_field(void *field, size_t field_bytes, const void *buf,
                                size_t bytes)
{
    if (bytes != field_bytes)
        return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(field, buf, bytes);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
    return lt_destroy<lt_desc>(d, EMU_MAGIC_DESC);
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t bytes)
{
    lt_desc *x = desc_of(d);
    if (!x || !buf)
        return CUBLAS_STATUS_INVALID_VALUE;
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
        return set_field(&x->ta, sizeof x->ta, buf, bytes);
    case CUBLASLT_MATMUL_DESC_TRANSB:
        return set_field(&x->tb, sizeof x->tb, buf, bytes);
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
        return set_field(&x->epilogue, sizeof x->epilogue, buf, bytes);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
        return set_field(&x->bias, sizeof x->bias, buf, bytes);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
        return set_field(&x->bias_type, sizeof x->bias_type, buf, bytes);
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED; /* not emulated */
    }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld)
{
    lt_layout *x = new lt_layout();
    x->magic = EMU_MAGIC_LAYOUT;
    x->type = type;
    x->rows = rows;
    x->cols = cols;
    x->ld = ld;
    *l = reinterpret_cast<cublasLtMatrixLayout_t>(x);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
    return lt_destroy<lt_layout>(l, EMU_MAGIC_LAYOUT);
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
    lt_pref *x = new lt_pref();
    x->magic = EMU_MAGIC_PREF;
    for (int i = 0; i < 4; i++)
        x->align[i] = 256; /* the library's default assumption */
    *p = reinterpret_cast<cublasLtMatmulPreference_t>(x);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
    return lt_destroy<lt_pref>(p, EMU_MAGIC_PREF);
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t bytes)
{
    lt_pref *x = reinterpret_cast<lt_pref *>(p);
    if (!x || x->magic != EMU_MAGIC_PREF || !buf)
        return CUBLAS_STATUS_INVALID_VALUE;
    switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
        return bytes == sizeof(uint64_t) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: {
        const int i = attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES   ? 0
                      : attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES ? 1
                      : attr == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES ? 2
                                                                           : 3;
        return set_field(&x->align[i], sizeof x->align[i], buf, bytes);
    }
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
}

/* The GEMM an Lt call describes, or a status saying why there is none. */
static cublasStatus_t lt_gemm(cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t la,
                              cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc,
                              cublasLtMatrixLayout_t ld, gemm *g)
{
    const lt_desc *x = desc_of(d);
    const lt_layout *A = layout_of(la), *B = layout_of(lb), *C = layout_of(lc),
                    *D = layout_of(ld);
    if (!x || !A || !B || !C || !D)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (x->compute != CUBLAS_COMPUTE_32F || x->scale != CUDA_R_32F || !op_ok(x->ta) ||
        !op_ok(x->tb) || !types_ok(A->type, B->type, D->type) || C->type != D->type)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if (x->epilogue == CUBLASLT_EPILOGUE_BIAS) {
        if (!x->bias || x->bias_type != CUDA_R_32F || D->type != CUDA_R_32F)
            return CUBLAS_STATUS_NOT_SUPPORTED;
    } else if (x->epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    g->ta = x->ta == CUBLAS_OP_T, g->tb = x->tb == CUBLAS_OP_T;
    g->m = (int64_t)D->rows, g->n = (int64_t)D->cols;
    g->k = (int64_t)(g->ta ? A->rows : A->cols);
    const int64_t am = (int64_t)(g->ta ? A->cols : A->rows);
    const int64_t bk = (int64_t)(g->tb ? B->cols : B->rows);
    const int64_t bn = (int64_t)(g->tb ? B->rows : B->cols);
    if (am != g->m || bk != g->k || bn != g->n || C->rows != D->rows || C->cols != D->cols ||
        A->ld < (int64_t)A->rows || B->ld < (int64_t)B->rows || C->ld < (int64_t)C->rows ||
        D->ld < (int64_t)D->rows)
        return CUBLAS_STATUS_INVALID_VALUE;
    g->at = A->type, g->bt = B->type, g->ct = C->type, g->dt = D->type;
    g->lda = A->ld, g->ldb = B->ld, g->ldc = C->ld, g->ldd = D->ld;
    g->bias = x->epilogue == CUBLASLT_EPILOGUE_BIAS ? x->bias : nullptr;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                              cublasLtMatrixLayout_t A,
                                              cublasLtMatrixLayout_t B,
                                              cublasLtMatrixLayout_t C,
                                              cublasLtMatrixLayout_t D,
                                              cublasLtMatmulPreference_t p, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int *returned)
{
    const lt_pref *x = reinterpret_cast<const lt_pref *>(p);
    if (!h || !x || x->magic != EMU_MAGIC_PREF || requested < 1 || !returned)
        return CUBLAS_STATUS_INVALID_VALUE;
    *returned = 0;
    gemm g;
    cublasStatus_t st = lt_gemm(d, A, B, C, D, &g);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    memset(&results[0], 0, sizeof results[0]);
    results[0].algo.data[0] = EMU_MAGIC_ALGO;
    for (int i = 0; i < 4; i++) /* what the operands were promised to be */
        results[0].algo.data[1 + i] = x->align[i];
    results[0].workspaceSize = 0;
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    *returned = 1;
    return CUBLAS_STATUS_SUCCESS;
}

static unsigned align_of(const void *p)
{
    unsigned a = 256;
    while (a > 1 && (uintptr_t)p % a != 0)
        a /= 2;
    return a;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t Adesc, const void *B,
                              cublasLtMatrixLayout_t Bdesc, const void *beta, const void *C,
                              cublasLtMatrixLayout_t Cdesc, void *D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo,
                              void *workspace, size_t ws_bytes, cudaStream_t stream)
{
    if (!h || !alpha || !beta)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!emu_stream_ok(stream))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!algo || algo->data[0] != EMU_MAGIC_ALGO)
        return CUBLAS_STATUS_INVALID_VALUE; /* the emulator needs a heuristic's algo */
    gemm g;
    cublasStatus_t st = lt_gemm(d, Adesc, Bdesc, Cdesc, Ddesc, &g);
    if (st != CUBLAS_STATUS_SUCCESS)
        return st;
    const void *ops[4] = {A, B, C, D};
    for (int i = 0; i < 4; i++)
        if (align_of(ops[i]) < (unsigned)algo->data[1 + i])
            return CUBLAS_STATUS_NOT_SUPPORTED; /* less aligned than promised */
    if (ws_bytes > 0 && !emu_dev_range(workspace, ws_bytes))
        emu_fail("cublasLtMatmul: the workspace (%zu bytes at %p) is not device memory",
                 ws_bytes, workspace);
    g.alpha = *(const float *)alpha, g.beta = *(const float *)beta;
    g.A = A, g.B = B, g.C = C, g.D = D;
    gemm_check("cublasLtMatmul", g);
    gemm_run(g);
    return CUBLAS_STATUS_SUCCESS;
}
