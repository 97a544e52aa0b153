/* attention.cu: causal softmax attention (Vaswani et al. 2017, scale
 * 1/sqrt(HS)), grouped-query (Ainslie et al. 2023), forward and backward,
 * fp32, on the cpu kernels' layouts: qkv (B,T,nkv,g+2,HS) (per token and
 * KV group: g query heads, the key, the value; g = nh/nkv), att
 * (B,nh,T,T), y and dy (B,T,nh,HS). Head h reads the key and value of
 * group h/g; with g = 1 the layout is (B,T,nh,3,HS).
 *
 * This is the classic algorithm, not a fused flash kernel: the forward
 * writes the (B,nh,T,T) probabilities because the cpu kernels' backward (and
 * selective recompute) reads them, as the layout's "classic" attention does.
 * The work is tiled so that a block shares what it reads:
 *
 * Forward, one warp per query row t, 8 consecutive rows per block, one
 * block per (8 rows, head, batch). Keys come in tiles of 32 rows staged in
 * shared memory (row stride HS|1, an odd number of words, so lane j reading
 * row j hits 32 different banks), one key per lane:
 *   pass 1  lane j: s = (q . k[t0+j]) * scale into att, a running max;
 *           the warp's max by butterfly;
 *   pass 2  the lane re-reads its own scores: sum of exp(s - max), 1/sum;
 *   pass 3  p = exp(s - max) / sum into att; value tiles staged like keys;
 *           each p is broadcast with __shfl_sync and lane i accumulates
 *           y[i] += p * v[i] for i = lane, lane+32, ... (registers).
 * Backward, with D[t] = sum_t2 att[t,t2] * (v[t2] . dy[t]) (the cpu kernels'
 * "sum(att * datt)"), in two kernels so that nothing is added by two
 * threads (no atomics, deterministic):
 *   bwd_q   one warp per query row t: D[t] (kept in scratch), then
 *           dq[t] = scale * sum_t2 att * ((v[t2] . dy[t]) - D[t]) * k[t2];
 *   bwd_kv  one warp per key row t2 of a KV group, query tiles of q and
 *           dy staged, the group's g heads one after the other:
 *           dk[t2] = scale * sum_h sum_t att * (datt - D[t]) * q[t],
 *           dv[t2] = sum_h sum_t att[t,t2] * dy[t].
 * Sums over keys (y, dq) and over queries (dk, dv) run in index order, as
 * the cpu kernels' loops do (dk, dv: head by head, where the cpu adds the
 * g heads' shares query row by query row: the same terms in another
 * order); only the row max, the exponential sum and D are reduced in a
 * tree. The (v . dy) dots are computed twice (bwd_q, bwd_kv)
 * instead of storing a (B,nh,T,T) gradient. Cost: O(T^2 HS) per head, as
 * the math; att traffic O(T^2) per head, as the classic kernel's is.
 */
#include <float.h>

#include "common.cuh"

#define ATT_ROWS 8  /* warps per block: query rows (fwd, bwd_q), key rows (bwd_kv) */
#define ATT_TILE 32 /* rows per shared-memory tile: one per lane */
#define ATT_HS_MAX 256
#define ATT_REG (ATT_HS_MAX / OC_WARP) /* output elements per lane */

/* Rows [t0, t0+32) of a (T, HS) slice whose row t starts at base + t*rs
 * into tile (32 rows of stride ks); zeros past T. Consecutive threads read
 * consecutive floats of a row. */
__device__ __forceinline__ void load_tile(float *tile, int ks, const float *base,
                                          int64_t rs, int64_t t0, int64_t T,
                                          int HS)
{
    for (int idx = threadIdx.x; idx < ATT_TILE * HS; idx += blockDim.x) {
        int r = idx / HS, i = idx % HS;
        int64_t t = t0 + r;
        tile[r * ks + i] = t < T ? base[t * rs + i] : 0.0f;
    }
}

/* Where head h's rows start in qkv (B,T,nkv,g+2,HS) for sequence b: its
 * query (slot h%g of group h/g), its group's key (slot g) and value (slot
 * g+1); rs = nkv*(g+2)*HS is the stride of a token. */
struct att_heads {
    int64_t rs;
    int64_t q, k, v; /* offsets of row t = 0 */
};

__device__ __forceinline__ struct att_heads att_heads_of(int64_t b, int h, int64_t T,
                                                         int nh, int nkv, int HS)
{
    const int g = nh / nkv;
    struct att_heads a;
    a.rs = (int64_t)nkv * (g + 2) * HS;
    const int64_t grp = b * T * a.rs + (int64_t)(h / g) * (g + 2) * HS;
    a.q = grp + (int64_t)(h % g) * HS;
    a.k = grp + (int64_t)g * HS;
    a.v = a.k + HS;
    return a;
}

__device__ __forceinline__ float dot_hs(const float *a, const float *b, int HS)
{
    float s = 0.0f;
    for (int i = 0; i < HS; i++)
        s += a[i] * b[i];
    return s;
}

__global__ void __launch_bounds__(ATT_ROWS *OC_WARP)
attn_fwd_kernel(float *att, float *y, const float *qkv, int64_t T, int nh, int nkv,
                int HS)
{
    extern __shared__ float sh[];
    const int ks = HS | 1;
    float *kv = sh;                  /* (ATT_TILE, ks) key, then value tile */
    float *q = sh + ATT_TILE * ks + (threadIdx.x / OC_WARP) * HS; /* (HS) */
    const int lane = threadIdx.x % OC_WARP;
    const int64_t b = blockIdx.z;
    const int h = blockIdx.y;
    const int64_t tb = (int64_t)blockIdx.x * ATT_ROWS;
    const int64_t t = tb + threadIdx.x / OC_WARP;
    const bool valid = t < T; /* the same for the whole warp */
    const int64_t tlast = tb + ATT_ROWS - 1 < T ? tb + ATT_ROWS - 1 : T - 1;
    const struct att_heads ah = att_heads_of(b, h, T, nh, nkv, HS);
    const int64_t rs = ah.rs;
    float *row = att + ((b * nh + h) * T + (valid ? t : 0)) * T;
    const float scale = 1.0f / sqrtf((float)HS);

    if (valid)
        for (int i = lane; i < HS; i += OC_WARP)
            q[i] = qkv[ah.q + t * rs + i];
    __syncwarp();

    /* pass 1: scaled scores, running max */
    float lmax = -FLT_MAX;
    for (int64_t t0 = 0; t0 <= tlast; t0 += ATT_TILE) {
        __syncthreads();
        load_tile(kv, ks, qkv + ah.k, rs, t0, T, HS);
        __syncthreads();
        const int64_t t2 = t0 + lane;
        if (valid && t2 <= t) {
            float s = dot_hs(q, kv + lane * ks, HS) * scale;
            row[t2] = s;
            lmax = fmaxf(lmax, s);
        }
    }
    const float m = oc_warp_max(lmax);

    /* pass 2: each lane reads back the scores it wrote */
    float se = 0.0f;
    if (valid)
        for (int64_t t2 = lane; t2 <= t; t2 += OC_WARP)
            se += expf(row[t2] - m);
    const float inv = 1.0f / oc_warp_sum(se);

    /* pass 3: probabilities, and y = att @ v */
    float acc[ATT_REG];
#pragma unroll
    for (int k = 0; k < ATT_REG; k++)
        acc[k] = 0.0f;
    for (int64_t t0 = 0; t0 <= tlast; t0 += ATT_TILE) {
        if (y) { /* the same for the whole block */
            __syncthreads();
            load_tile(kv, ks, qkv + ah.v, rs, t0, T, HS);
            __syncthreads();
        }
        const int64_t t2 = t0 + lane;
        float p = 0.0f;
        if (valid && t2 <= t) {
            p = expf(row[t2] - m) * inv;
            row[t2] = p;
        }
        if (y && valid && t0 <= t) {
            const int n = t - t0 + 1 < ATT_TILE ? (int)(t - t0 + 1) : ATT_TILE;
            for (int j = 0; j < n; j++) {
                const float pj = __shfl_sync(OC_FULL_MASK, p, j);
                const float *v = kv + j * ks;
#pragma unroll
                for (int k = 0; k < ATT_REG; k++) {
                    const int i = lane + k * OC_WARP;
                    if (i < HS)
                        acc[k] += pj * v[i];
                }
            }
        }
    }
    if (!valid)
        return;
    for (int64_t t2 = t + 1 + lane; t2 < T; t2 += OC_WARP)
        row[t2] = 0.0f; /* causal mask */
    if (y) {
        float *yo = y + ((b * T + t) * nh + h) * HS;
#pragma unroll
        for (int k = 0; k < ATT_REG; k++) {
            const int i = lane + k * OC_WARP;
            if (i < HS)
                yo[i] = acc[k];
        }
    }
}

/* dq, and D (B,nh,T) into dsum. */
__global__ void __launch_bounds__(ATT_ROWS *OC_WARP)
attn_bwd_q_kernel(float *dqkv, float *dsum, const float *att, const float *qkv,
                  const float *dy, int64_t T, int nh, int nkv, int HS)
{
    extern __shared__ float sh[];
    const int ks = HS | 1;
    float *kt = sh;                  /* (ATT_TILE, ks) keys */
    float *vt = sh + ATT_TILE * ks;  /* (ATT_TILE, ks) values */
    float *d = sh + 2 * ATT_TILE * ks + (threadIdx.x / OC_WARP) * HS; /* dy[t] */
    const int lane = threadIdx.x % OC_WARP;
    const int64_t b = blockIdx.z;
    const int h = blockIdx.y;
    const int64_t tb = (int64_t)blockIdx.x * ATT_ROWS;
    const int64_t t = tb + threadIdx.x / OC_WARP;
    const bool valid = t < T;
    const int64_t tlast = tb + ATT_ROWS - 1 < T ? tb + ATT_ROWS - 1 : T - 1;
    const struct att_heads ah = att_heads_of(b, h, T, nh, nkv, HS);
    const int64_t rs = ah.rs, yrs = (int64_t)nh * HS;
    const float *dybase = dy + (b * T * nh + h) * HS;
    const float *row = att + ((b * nh + h) * T + (valid ? t : 0)) * T;
    const float scale = 1.0f / sqrtf((float)HS);

    if (valid)
        for (int i = lane; i < HS; i += OC_WARP)
            d[i] = dybase[t * yrs + i];
    __syncwarp();

    /* pass 1: D = sum_t2 att * (v[t2] . dy[t]) */
    float part = 0.0f;
    for (int64_t t0 = 0; t0 <= tlast; t0 += ATT_TILE) {
        __syncthreads();
        load_tile(vt, ks, qkv + ah.v, rs, t0, T, HS);
        __syncthreads();
        const int64_t t2 = t0 + lane;
        if (valid && t2 <= t)
            part += row[t2] * dot_hs(vt + lane * ks, d, HS);
    }
    const float D = oc_warp_sum(part);
    if (valid && lane == 0)
        dsum[(b * nh + h) * T + t] = D;

    /* pass 2: dq = sum_t2 att * (datt - D) * scale * k[t2] */
    float acc[ATT_REG];
#pragma unroll
    for (int k = 0; k < ATT_REG; k++)
        acc[k] = 0.0f;
    for (int64_t t0 = 0; t0 <= tlast; t0 += ATT_TILE) {
        __syncthreads();
        load_tile(kt, ks, qkv + ah.k, rs, t0, T, HS);
        load_tile(vt, ks, qkv + ah.v, rs, t0, T, HS);
        __syncthreads();
        const int64_t t2 = t0 + lane;
        float g = 0.0f;
        if (valid && t2 <= t)
            g = row[t2] * (dot_hs(vt + lane * ks, d, HS) - D) * scale;
        if (valid && t0 <= t) {
            const int n = t - t0 + 1 < ATT_TILE ? (int)(t - t0 + 1) : ATT_TILE;
            for (int j = 0; j < n; j++) {
                const float gj = __shfl_sync(OC_FULL_MASK, g, j);
                const float *k2 = kt + j * ks;
#pragma unroll
                for (int k = 0; k < ATT_REG; k++) {
                    const int i = lane + k * OC_WARP;
                    if (i < HS)
                        acc[k] += gj * k2[i];
                }
            }
        }
    }
    if (!valid)
        return;
    float *dq = dqkv + ah.q + t * rs;
#pragma unroll
    for (int k = 0; k < ATT_REG; k++) {
        const int i = lane + k * OC_WARP;
        if (i < HS)
            dq[i] = acc[k];
    }
}

/* dk and dv of key row t2 of KV group j (blockIdx.y), from the query rows
 * t >= t2 of the group's g heads, head after head. */
__global__ void __launch_bounds__(ATT_ROWS *OC_WARP)
attn_bwd_kv_kernel(float *dqkv, const float *dsum, const float *att,
                   const float *qkv, const float *dy, int64_t T, int nh, int nkv,
                   int HS)
{
    extern __shared__ float sh[];
    const int ks = HS | 1;
    float *qt = sh;                  /* (ATT_TILE, ks) queries */
    float *dyt = sh + ATT_TILE * ks; /* (ATT_TILE, ks) dy rows */
    float *vr = sh + 2 * ATT_TILE * ks + (threadIdx.x / OC_WARP) * HS; /* v[t2] */
    const int lane = threadIdx.x % OC_WARP;
    const int64_t b = blockIdx.z;
    const int heads = nh / nkv; /* g */
    const int h0 = blockIdx.y * heads; /* the group's first head */
    const int64_t tb = (int64_t)blockIdx.x * ATT_ROWS;
    const int64_t t2 = tb + threadIdx.x / OC_WARP;
    const bool valid = t2 < T;
    const struct att_heads a0 = att_heads_of(b, h0, T, nh, nkv, HS);
    const int64_t rs = a0.rs, yrs = (int64_t)nh * HS;
    const float scale = 1.0f / sqrtf((float)HS);

    if (valid)
        for (int i = lane; i < HS; i += OC_WARP)
            vr[i] = qkv[a0.v + t2 * rs + i];
    __syncwarp();

    float ak[ATT_REG], av[ATT_REG];
#pragma unroll
    for (int k = 0; k < ATT_REG; k++)
        ak[k] = av[k] = 0.0f;
    for (int h = h0; h < h0 + heads; h++) {
        const struct att_heads ah = att_heads_of(b, h, T, nh, nkv, HS);
        const float *dybase = dy + (b * T * nh + h) * HS;
        const float *col = att + (b * nh + h) * T * T + (valid ? t2 : 0); /* [t*T] */
        const float *Dr = dsum + (b * nh + h) * T;
        for (int64_t t0 = tb; t0 < T; t0 += ATT_TILE) {
            __syncthreads();
            load_tile(qt, ks, qkv + ah.q, rs, t0, T, HS);
            load_tile(dyt, ks, dybase, yrs, t0, T, HS);
            __syncthreads();
            const int64_t t = t0 + lane;
            float a = 0.0f, g = 0.0f;
            if (valid && t < T && t >= t2) {
                a = col[t * T];
                g = a * (dot_hs(vr, dyt + lane * ks, HS) - Dr[t]) * scale;
            }
            if (!valid)
                continue; /* no shuffles below for this warp; the syncs above are */
            const int n = T - t0 < ATT_TILE ? (int)(T - t0) : ATT_TILE;
            for (int j = 0; j < n; j++) {
                const float aj = __shfl_sync(OC_FULL_MASK, a, j);
                const float gj = __shfl_sync(OC_FULL_MASK, g, j);
                const float *qj = qt + j * ks, *dyj = dyt + j * ks;
#pragma unroll
                for (int k = 0; k < ATT_REG; k++) {
                    const int i = lane + k * OC_WARP;
                    if (i < HS) {
                        ak[k] += gj * qj[i];
                        av[k] += aj * dyj[i];
                    }
                }
            }
        }
    }
    if (!valid)
        return;
    float *dk = dqkv + a0.k + t2 * rs, *dv = dqkv + a0.v + t2 * rs;
#pragma unroll
    for (int k = 0; k < ATT_REG; k++) {
        const int i = lane + k * OC_WARP;
        if (i < HS) {
            dk[i] = ak[k];
            dv[i] = av[k];
        }
    }
}

/* Dynamic shared memory of a launch; above the default 48 KiB a kernel must
 * opt in (HS > 176 for the backward kernels). */
static size_t att_smem(const void *kernel, int tiles, int64_t HS)
{
    size_t bytes = ((size_t)tiles * ATT_TILE * (size_t)(HS | 1) +
                    (size_t)ATT_ROWS * (size_t)HS) * sizeof(float);
    if (bytes > 48 * 1024)
        cudaCheck(cudaFuncSetAttribute(kernel,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)bytes));
    return bytes;
}

static void att_check(int64_t B, int64_t T, int64_t nh, int64_t nkv, int64_t HS)
{
    OC_ASSERT(B >= 1 && B <= 65535 && nh >= 1 && nh <= 65535);
    OC_ASSERT(nkv >= 1 && nh % nkv == 0);
    OC_ASSERT(T >= 1 && (T + ATT_ROWS - 1) / ATT_ROWS <= INT32_MAX);
    OC_ASSERT(HS >= 1 && HS <= ATT_HS_MAX);
}

extern "C" int64_t oc_cuda_attn_bwd_scratch_floats(int64_t B, int64_t T,
                                                   int64_t nh)
{
    return B * nh * T;
}

extern "C" void oc_cuda_attn_fwd(float *att, float *y, const float *qkv,
                                 int64_t B, int64_t T, int64_t nh, int64_t nkv,
                                 int64_t HS, cudaStream_t stream)
{
    att_check(B, T, nh, nkv, HS);
    OC_ASSERT(att && qkv);
    dim3 grid((unsigned)((T + ATT_ROWS - 1) / ATT_ROWS), (unsigned)nh, (unsigned)B);
    size_t smem = att_smem((const void *)attn_fwd_kernel, 1, HS);
    attn_fwd_kernel<<<grid, ATT_ROWS * OC_WARP, smem, stream>>>(
        att, y, qkv, T, (int)nh, (int)nkv, (int)HS);
    OC_LAUNCH_CHECK();
}

extern "C" void oc_cuda_attn_bwd(float *dqkv, const float *att, const float *qkv,
                                 const float *dy, int64_t B, int64_t T,
                                 int64_t nh, int64_t nkv, int64_t HS,
                                 float *scratch, cudaStream_t stream)
{
    att_check(B, T, nh, nkv, HS);
    OC_ASSERT(dqkv && att && qkv && dy && scratch && dqkv != qkv);
    dim3 grid((unsigned)((T + ATT_ROWS - 1) / ATT_ROWS), (unsigned)nh, (unsigned)B);
    size_t smem = att_smem((const void *)attn_bwd_q_kernel, 2, HS);
    attn_bwd_q_kernel<<<grid, ATT_ROWS * OC_WARP, smem, stream>>>(
        dqkv, scratch, att, qkv, dy, T, (int)nh, (int)nkv, (int)HS);
    OC_LAUNCH_CHECK();
    /* one block row per KV group: its key and value sum the g heads */
    dim3 kv_grid(grid.x, (unsigned)nkv, (unsigned)B);
    smem = att_smem((const void *)attn_bwd_kv_kernel, 2, HS);
    attn_bwd_kv_kernel<<<kv_grid, ATT_ROWS * OC_WARP, smem, stream>>>(
        dqkv, scratch, att, qkv, dy, T, (int)nh, (int)nkv, (int)HS);
    OC_LAUNCH_CHECK();
}
