/* flash_attention.cu: fused causal attention, FlashAttention-2's algorithm
 * (Dao 2023, algorithms 1 and 2; Dao et al. 2022): tiled, online softmax,
 * no (T,T) matrix in memory; the backward recomputes the probabilities
 * from the forward's log-sum-exp. GQA layout and precision: see
 * flash_attention.h. The reference is kernels/cpu/attention_flash_cpu.c;
 * kernels_gpu compares the two (kernels/test_kernels_flash.c).
 *
 * Work split (the classic kernel's, attention.cu, without its (T,T) att):
 * a warp owns one row, a block FA_ROWS rows, and the block stages tiles of
 * FA_TILE rows of the other side in shared memory (row stride HS|1, an odd
 * number of words, so lane j reading row j hits 32 different banks), one
 * row per lane:
 *   fwd     one warp per query row t, block (FA_ROWS rows, head, batch);
 *           key and value tiles up to the block's last row (tiles above
 *           the diagonal are skipped). Lane j: s = scale q . k[t0+j] (-inf
 *           above the diagonal); the running max m and sum l of the online
 *           softmax (Milakov & Gimelshein 2018) by butterflies, the
 *           accumulator rescaled by exp(m_old - m_new); p broadcast with
 *           __shfl_sync, lane i accumulates y[i] += p v[i] for i = lane,
 *           lane+32, ... in registers; at the end y = acc / l, lse = m +
 *           log l.
 *   bwd_q   one warp per query row t, block (FA_ROWS rows, head, batch):
 *           D[t] = dy[t] . y[t] (into scratch for bwd_kv), then over the
 *           key tiles up to the diagonal: p = exp(s - lse[t]), ds = p (dy .
 *           v - D) scale, dq[t] = sum ds k.
 *   bwd_kv  one warp per key row t2, block (FA_ROWS rows, KV group,
 *           batch); for each of the group's g query heads in order, query
 *           and dy tiles from the block's first row to T: p and ds as
 *           above, dk[t2] = sum ds q, dv[t2] = sum p dy. A KV group's g
 *           heads are summed in one block: no atomics (FlashAttention-2
 *           adds dq with atomics; here dq has its own pass instead).
 * Sums over keys (y, dq) and over (head, query) (dk, dv) run in the cpu
 * reference's order; the row max, l, and D are reduced in a tree. The
 * scores and dy . v are computed twice in the backward (bwd_q, bwd_kv).
 *
 * Precision: the operands q, k, v, dy are rounded to bf16 as they are
 * staged (template BF16) and multiplied in fp32: the products a bf16
 * tensor-core kernel forms, exactly; sums, exp, y, lse and the gradients
 * are fp32. The probabilities are not rounded (a tensor-core kernel rounds
 * p and ds to bf16 for its second GEMMs).
 *
 * Expected efficiency, honestly: scalar fp32 FMAs out of shared memory, no
 * tensor cores. The score dot and the p v accumulation each read one
 * shared word per FMA, so a warp issues about one FMA per shared load:
 * shared-memory bound at roughly 1/4 to 1/8 of the fp32 FMA peak, i.e. a
 * few TFLOP/s on an H100 / H200 (~67 TFLOP/s fp32 peak), about 1% of the
 * bf16 tensor-core peak and one to two orders of magnitude below
 * FlashAttention-2 itself. What it gains over the classic kernel is
 * memory: O(T) per head instead of the (B,nh,T,T) probabilities, and no
 * (T,T) traffic. Next steps for speed: register tiles (a lane computing
 * several rows by several keys) or mma.sync / wgmma with bf16 operands.
 * Blocks of 512 threads; ptxas (CUDA 13, sm_90) gives fwd 50, bwd_q 40,
 * bwd_kv 57 registers, no spills; shared memory per block at HS 128: fwd
 * 40.3 KiB, bwd 48.3 KiB (see fa_smem). Not yet run on a GPU when
 * written: this source was run on the CPU under an emulation of the CUDA
 * execution model (a fiber per thread, __syncthreads and shuffles as
 * enforced barriers, poisoned shared memory) against the cpu reference.
 */
#include <cuda_bf16.h>
#include <math.h>

#include "common.cuh"
#include "flash_attention.h"

#define FA_ROWS 16  /* warps per block: the rows a block owns */
#define FA_TILE 32  /* rows per shared-memory tile: one per lane */
#define FA_HS_MAX 256
#define FA_REG (FA_HS_MAX / OC_WARP) /* output elements per lane */

/* The shapes of one call, as the kernels read them. */
struct fa_dims {
    int64_t T;
    int64_t rs;  /* floats from a token's qkv to the next: nkv*(g+2)*HS */
    int nh, g, HS;
    float scale; /* 1/sqrt(HS), computed on the host as the cpu reference does */
};

/* An operand as the kernels multiply it. */
template <bool BF16> __device__ __forceinline__ float fa_in(float x)
{
    return BF16 ? __bfloat162float(__float2bfloat16_rn(x)) : x;
}

/* Rows [t0, t0+FA_TILE) of a (T, HS) slice whose row t starts at base +
 * t*rs into tile (row stride ks); zeros past T. Consecutive threads read
 * consecutive floats of a row. */
template <bool BF16>
__device__ __forceinline__ void fa_load_tile(float *tile, int ks, const float *base,
                                             int64_t rs, int64_t t0, int64_t T, int HS)
{
    for (int idx = threadIdx.x; idx < FA_TILE * HS; idx += blockDim.x) {
        const int r = idx / HS, i = idx % HS;
        const int64_t t = t0 + r;
        tile[r * ks + i] = t < T ? fa_in<BF16>(base[t * rs + i]) : 0.0f;
    }
}

/* One row of HS floats into the warp's own shared row (lane-strided: a
 * lane reads back what it wrote without a barrier; other lanes' elements
 * after the next __syncthreads). */
template <bool BF16>
__device__ __forceinline__ void fa_load_row(float *dst, const float *src, int HS, int lane)
{
    for (int i = lane; i < HS; i += OC_WARP)
        dst[i] = fa_in<BF16>(src[i]);
}

/* a . b summed in index order, as the cpu reference's fa_dot */
__device__ __forceinline__ float fa_dot(const float *a, const float *b, int HS)
{
    float s = 0.0f;
    for (int i = 0; i < HS; i++)
        s += a[i] * b[i];
    return s;
}

/* acc[k] += sum_{j<n} w_j tile[j][lane + 32k] (the elements < HS), w_j
 * being lane j's w, in j order: a warp's row of weights times a tile. */
__device__ __forceinline__ void fa_accumulate(float *acc, float w, const float *tile,
                                              int ks, int n, int HS, int lane)
{
    for (int j = 0; j < n; j++) {
        const float wj = __shfl_sync(OC_FULL_MASK, w, j);
        const float *row = tile + j * ks;
#pragma unroll
        for (int k = 0; k < FA_REG; k++) {
            const int i = lane + k * OC_WARP;
            if (i < HS)
                acc[k] += wj * row[i];
        }
    }
}

__device__ __forceinline__ void fa_zero(float *acc)
{
#pragma unroll
    for (int k = 0; k < FA_REG; k++)
        acc[k] = 0.0f;
}

/* out[lane + 32k] = acc[k] * f, the elements < HS. */
__device__ __forceinline__ void fa_store(float *out, const float *acc, float f, int HS,
                                         int lane)
{
#pragma unroll
    for (int k = 0; k < FA_REG; k++) {
        const int i = lane + k * OC_WARP;
        if (i < HS)
            out[i] = acc[k] * f;
    }
}

/* KV group kvh of batch b at token 0 (its first query head's row). */
__device__ __forceinline__ const float *fa_group(const float *qkv, const fa_dims &d,
                                                 int64_t b, int kvh)
{
    return qkv + b * d.T * d.rs + (int64_t)kvh * (d.g + 2) * d.HS;
}

/* The last row in [tb, tb+FA_ROWS) that exists. */
__device__ __forceinline__ int64_t fa_last(int64_t tb, int64_t T)
{
    return tb + FA_ROWS - 1 < T ? tb + FA_ROWS - 1 : T - 1;
}

/* How many of the tile's rows t0.. a row t reaches (t0 <= t). */
__device__ __forceinline__ int fa_upto(int64_t t, int64_t t0)
{
    return t - t0 + 1 < FA_TILE ? (int)(t - t0 + 1) : FA_TILE;
}

template <bool BF16>
__global__ void __launch_bounds__(FA_ROWS *OC_WARP)
fa_fwd_kernel(float *y, float *lse, const float *qkv, fa_dims d)
{
    extern __shared__ float sh[];
    const int HS = d.HS, ks = HS | 1;
    const int warp = threadIdx.x / OC_WARP, lane = threadIdx.x % OC_WARP;
    float *kt = sh;                          /* (FA_TILE, ks) keys */
    float *vt = kt + FA_TILE * ks;           /* (FA_TILE, ks) values */
    float *q = vt + FA_TILE * ks + warp * HS; /* (HS) the warp's query */
    const int64_t b = blockIdx.z;
    const int h = blockIdx.y;
    const int64_t tb = (int64_t)blockIdx.x * FA_ROWS, t = tb + warp;
    const bool valid = t < d.T; /* the same for the whole warp */
    const int64_t tlast = fa_last(tb, d.T);
    const float *grp = fa_group(qkv, d, b, h / d.g);
    const float *kb = grp + d.g * HS, *vb = kb + HS;

    if (valid)
        fa_load_row<BF16>(q, grp + (h % d.g) * HS + t * d.rs, HS, lane);
    float m = -INFINITY, l = 0.0f, acc[FA_REG];
    fa_zero(acc);
    for (int64_t t0 = 0; t0 <= tlast; t0 += FA_TILE) { /* the same for the block */
        __syncthreads(); /* the last tile is read (and q is in) */
        fa_load_tile<BF16>(kt, ks, kb, d.rs, t0, d.T, HS);
        fa_load_tile<BF16>(vt, ks, vb, d.rs, t0, d.T, HS);
        __syncthreads();
        if (!valid || t0 > t)
            continue; /* the whole warp: its row is done or above this tile */
        const int64_t t2 = t0 + lane;
        const float s = t2 <= t ? fa_dot(q, kt + lane * ks, HS) * d.scale : -INFINITY;
        const float mn = fmaxf(m, oc_warp_max(s)); /* finite: key t0 <= t */
        const float p = expf(s - mn);               /* 0 above the diagonal */
        const float c = expf(m - mn);               /* 0 on the first tile */
        l = l * c + oc_warp_sum(p);
        m = mn;
#pragma unroll
        for (int k = 0; k < FA_REG; k++)
            acc[k] *= c;
        fa_accumulate(acc, p, vt, ks, fa_upto(t, t0), HS, lane); /* += p v */
    }
    if (!valid)
        return;
    /* l >= 1: the max's own term */
    fa_store(y + ((b * d.T + t) * d.nh + h) * HS, acc, 1.0f / l, HS, lane);
    if (lane == 0)
        lse[(b * d.nh + h) * d.T + t] = m + logf(l);
}

/* dq of query row t, and D[t] = dy[t] . y[t] into dsum (B,nh,T). */
template <bool BF16>
__global__ void __launch_bounds__(FA_ROWS *OC_WARP)
fa_bwd_q_kernel(float *dqkv, float *dsum, const float *qkv, const float *y,
                const float *lse, const float *dy, fa_dims d)
{
    extern __shared__ float sh[];
    const int HS = d.HS, ks = HS | 1;
    const int warp = threadIdx.x / OC_WARP, lane = threadIdx.x % OC_WARP;
    float *kt = sh;                                 /* (FA_TILE, ks) keys */
    float *vt = kt + FA_TILE * ks;                  /* (FA_TILE, ks) values */
    float *q = vt + FA_TILE * ks + warp * 2 * HS;   /* (HS) the warp's query */
    float *dyr = q + HS;                            /* (HS) its dy row */
    const int64_t b = blockIdx.z;
    const int h = blockIdx.y;
    const int64_t tb = (int64_t)blockIdx.x * FA_ROWS, t = tb + warp;
    const bool valid = t < d.T;
    const int64_t tlast = fa_last(tb, d.T);
    const float *grp = fa_group(qkv, d, b, h / d.g);
    const float *kb = grp + d.g * HS, *vb = kb + HS;
    const int64_t qo = (h % d.g) * HS + t * d.rs;    /* q[t] from grp */
    const int64_t yo = ((b * d.T + t) * d.nh + h) * HS; /* y[t], dy[t] */
    const int64_t lo = (b * d.nh + h) * d.T + t;     /* lse[t], D[t] */
    float *dq = dqkv + (grp - qkv) + qo;

    float part = 0.0f, L = 0.0f;
    if (valid) {
        fa_load_row<BF16>(q, grp + qo, HS, lane);
        fa_load_row<BF16>(dyr, dy + yo, HS, lane);
        for (int i = lane; i < HS; i += OC_WARP) /* the lane's own dyr */
            part += dyr[i] * y[yo + i];
        L = lse[lo];
    }
    const float D = oc_warp_sum(part);
    if (valid && lane == 0)
        dsum[lo] = D;

    float acc[FA_REG];
    fa_zero(acc);
    for (int64_t t0 = 0; t0 <= tlast; t0 += FA_TILE) {
        __syncthreads();
        fa_load_tile<BF16>(kt, ks, kb, d.rs, t0, d.T, HS);
        fa_load_tile<BF16>(vt, ks, vb, d.rs, t0, d.T, HS);
        __syncthreads();
        if (!valid || t0 > t)
            continue;
        const int64_t t2 = t0 + lane;
        float ds = 0.0f;
        if (t2 <= t) {
            const float p = expf(fa_dot(q, kt + lane * ks, HS) * d.scale - L);
            ds = p * (fa_dot(dyr, vt + lane * ks, HS) - D) * d.scale;
        }
        fa_accumulate(acc, ds, kt, ks, fa_upto(t, t0), HS, lane); /* += ds k */
    }
    if (valid)
        fa_store(dq, acc, 1.0f, HS, lane);
}

/* dk and dv of key row t2 of KV group blockIdx.y, from the query rows t >=
 * t2 of the group's g heads, in head order. */
template <bool BF16>
__global__ void __launch_bounds__(FA_ROWS *OC_WARP)
fa_bwd_kv_kernel(float *dqkv, const float *dsum, const float *qkv,
                 const float *lse, const float *dy, fa_dims d)
{
    extern __shared__ float sh[];
    const int HS = d.HS, ks = HS | 1;
    const int warp = threadIdx.x / OC_WARP, lane = threadIdx.x % OC_WARP;
    float *qt = sh;                                 /* (FA_TILE, ks) queries */
    float *dyt = qt + FA_TILE * ks;                 /* (FA_TILE, ks) dy rows */
    float *kr = dyt + FA_TILE * ks + warp * 2 * HS; /* (HS) the warp's key */
    float *vr = kr + HS;                            /* (HS) its value */
    const int64_t b = blockIdx.z;
    const int kvh = blockIdx.y;
    const int64_t tb = (int64_t)blockIdx.x * FA_ROWS, t2 = tb + warp;
    const bool valid = t2 < d.T;
    const float *grp = fa_group(qkv, d, b, kvh);
    const int64_t ko = d.g * HS + t2 * d.rs; /* k[t2] from grp; v[t2] at +HS */
    const int64_t yrs = (int64_t)d.nh * HS;  /* dy from a token to the next */

    if (valid) {
        fa_load_row<BF16>(kr, grp + ko, HS, lane);
        fa_load_row<BF16>(vr, grp + ko + HS, HS, lane);
    }
    float ak[FA_REG], av[FA_REG];
    fa_zero(ak), fa_zero(av);
    for (int qi = 0; qi < d.g; qi++) {
        const int h = kvh * d.g + qi;
        const float *qb = grp + qi * HS;
        const float *dyb = dy + (b * d.T * d.nh + h) * HS;
        const float *Lr = lse + (b * d.nh + h) * d.T, *Dr = dsum + (b * d.nh + h) * d.T;
        for (int64_t t0 = tb; t0 < d.T; t0 += FA_TILE) { /* the same for the block */
            __syncthreads();
            fa_load_tile<BF16>(qt, ks, qb, d.rs, t0, d.T, HS);
            fa_load_tile<BF16>(dyt, ks, dyb, yrs, t0, d.T, HS);
            __syncthreads();
            if (!valid)
                continue; /* the whole warp (it still joins the barriers) */
            const int64_t t = t0 + lane;
            float p = 0.0f, ds = 0.0f;
            if (t < d.T && t >= t2) {
                p = expf(fa_dot(qt + lane * ks, kr, HS) * d.scale - Lr[t]);
                ds = p * (fa_dot(dyt + lane * ks, vr, HS) - Dr[t]) * d.scale;
            }
            const int n = fa_upto(d.T - 1, t0); /* the rows before T */
            fa_accumulate(av, p, dyt, ks, n, HS, lane);  /* += p dy */
            fa_accumulate(ak, ds, qt, ks, n, HS, lane);  /* += ds q */
        }
    }
    if (!valid)
        return;
    fa_store(dqkv + (grp - qkv) + ko, ak, 1.0f, HS, lane);
    fa_store(dqkv + (grp - qkv) + ko + HS, av, 1.0f, HS, lane);
}

/* ------------------------------------------------------------------ */
/* Launchers                                                            */

static fa_dims fa_make(int64_t B, int64_t T, int64_t nh, int64_t nkv, int64_t HS)
{
    OC_ASSERT(B >= 1 && B <= 65535 && nh >= 1 && nh <= 65535);
    OC_ASSERT(nkv >= 1 && nh % nkv == 0);
    OC_ASSERT(T >= 1 && (T + FA_ROWS - 1) / FA_ROWS <= INT32_MAX);
    OC_ASSERT(HS >= 1 && HS <= FA_HS_MAX);
    fa_dims d;
    d.T = T;
    d.nh = (int)nh;
    d.g = (int)(nh / nkv);
    d.HS = (int)HS;
    d.rs = nkv * (nh / nkv + 2) * HS;
    d.scale = 1.0f / sqrtf((float)HS); /* the cpu reference's float */
    return d;
}

/* Dynamic shared memory of a launch: two tiles and `rows` rows of HS per
 * warp; above the default 48 KiB a kernel must opt in (HS >= 128 for the
 * backward kernels, >= 153 for the forward; at most 96.25 KiB, the
 * backward's at HS 256, inside sm_80's 163 KiB and sm_90's 227 KiB). */
static size_t fa_smem(const void *kernel, int rows, int HS)
{
    const size_t bytes = ((size_t)2 * FA_TILE * (size_t)(HS | 1) +
                          (size_t)FA_ROWS * (size_t)rows * (size_t)HS) * sizeof(float);
    if (bytes > 48 * 1024)
        cudaCheck(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)bytes));
    return bytes;
}

static dim3 fa_grid(int64_t T, int64_t heads, int64_t B)
{
    return dim3((unsigned)((T + FA_ROWS - 1) / FA_ROWS), (unsigned)heads, (unsigned)B);
}

template <bool BF16>
static void fa_fwd(float *y, float *lse, const float *qkv, int64_t B, const fa_dims &d,
                   cudaStream_t stream)
{
    const size_t smem = fa_smem((const void *)fa_fwd_kernel<BF16>, 1, d.HS);
    fa_fwd_kernel<BF16><<<fa_grid(d.T, d.nh, B), FA_ROWS * OC_WARP, smem, stream>>>(
        y, lse, qkv, d);
    OC_LAUNCH_CHECK();
}

template <bool BF16>
static void fa_bwd(float *dqkv, const float *qkv, const float *y, const float *lse,
                   const float *dy, int64_t B, const fa_dims &d, float *dsum,
                   cudaStream_t stream)
{
    size_t smem = fa_smem((const void *)fa_bwd_q_kernel<BF16>, 2, d.HS);
    fa_bwd_q_kernel<BF16><<<fa_grid(d.T, d.nh, B), FA_ROWS * OC_WARP, smem, stream>>>(
        dqkv, dsum, qkv, y, lse, dy, d);
    OC_LAUNCH_CHECK();
    smem = fa_smem((const void *)fa_bwd_kv_kernel<BF16>, 2, d.HS);
    fa_bwd_kv_kernel<BF16><<<fa_grid(d.T, d.nh / d.g, B), FA_ROWS * OC_WARP, smem,
                             stream>>>(dqkv, dsum, qkv, lse, dy, d);
    OC_LAUNCH_CHECK();
}

extern "C" int64_t oc_cuda_flash_attn_bwd_scratch_floats(int64_t B, int64_t T,
                                                        int64_t nh)
{
    return B * nh * T;
}

extern "C" void oc_cuda_flash_attn_fwd(float *y, float *lse, const float *qkv,
                                       int64_t B, int64_t T, int64_t nh, int64_t nkv,
                                       int64_t HS, enum oc_cuda_dtype dt,
                                       cudaStream_t stream)
{
    const fa_dims d = fa_make(B, T, nh, nkv, HS);
    OC_ASSERT(y && lse && qkv && (dt == OC_CUDA_F32 || dt == OC_CUDA_BF16));
    if (dt == OC_CUDA_BF16)
        fa_fwd<true>(y, lse, qkv, B, d, stream);
    else
        fa_fwd<false>(y, lse, qkv, B, d, stream);
}

extern "C" void oc_cuda_flash_attn_bwd(float *dqkv, const float *qkv, const float *y,
                                       const float *lse, const float *dy, int64_t B,
                                       int64_t T, int64_t nh, int64_t nkv, int64_t HS,
                                       enum oc_cuda_dtype dt, float *scratch,
                                       cudaStream_t stream)
{
    const fa_dims d = fa_make(B, T, nh, nkv, HS);
    OC_ASSERT(dqkv && qkv && y && lse && dy && scratch && dqkv != qkv);
    OC_ASSERT(dt == OC_CUDA_F32 || dt == OC_CUDA_BF16);
    if (dt == OC_CUDA_BF16)
        fa_bwd<true>(dqkv, qkv, y, lse, dy, B, d, scratch, stream);
    else
        fa_bwd<false>(dqkv, qkv, y, lse, dy, B, d, scratch, stream);
}
