/* common.cuh: device helpers shared by the .cu files of kernels/: warp and block
 * reductions, launch sizes, the launch check. Device functions are inline
 * here because nvcc inlines across translation units only with relocatable
 * device code, which this build does not use (it costs a device-link step).
 * Not part of the C interface (kernels.h).
 */
#ifndef OC_KERNELS_COMMON_CUH
#define OC_KERNELS_COMMON_CUH

#include <stdint.h>

#include "check.h"
#include "kernels.h"
#include "status.h" /* OC_ASSERT */

#define OC_WARP 32
#define OC_FULL_MASK 0xffffffffu

/* Check a launch: configuration errors show at once, faults at the next
 * synchronising call's cudaCheck. */
#define OC_LAUNCH_CHECK() cudaCheck(cudaGetLastError())

/* Blocks of `threads` for a grid-stride loop over n items; capped so the
 * grid stays far inside gridDim.x's range (2^31 - 1). */
static inline unsigned oc_grid_1d(int64_t n, int threads)
{
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks < 1)
        blocks = 1;
    return (unsigned)(blocks < (1 << 20) ? blocks : (1 << 20));
}

/* Butterfly reductions: every lane ends with the warp's sum / max. */
__device__ __forceinline__ float oc_warp_sum(float x)
{
    for (int o = OC_WARP / 2; o > 0; o >>= 1)
        x += __shfl_xor_sync(OC_FULL_MASK, x, o);
    return x;
}

__device__ __forceinline__ float oc_warp_max(float x)
{
    for (int o = OC_WARP / 2; o > 0; o >>= 1)
        x = fmaxf(x, __shfl_xor_sync(OC_FULL_MASK, x, o));
    return x;
}

/* Sum (is_max 0) or max (1) over the block, returned to every thread.
 * blockDim.x is a multiple of 32, at most 1024; `sh` holds 32 floats and is
 * free again when the function returns. */
__device__ __forceinline__ float oc_block_reduce(float x, float *sh, int is_max)
{
    const int lane = threadIdx.x % OC_WARP, warp = threadIdx.x / OC_WARP;
    const int nwarps = blockDim.x / OC_WARP;
    x = is_max ? oc_warp_max(x) : oc_warp_sum(x);
    __syncthreads(); /* sh may still be read from a previous call */
    if (lane == 0)
        sh[warp] = x;
    __syncthreads();
    float r = lane < nwarps ? sh[lane] : (is_max ? -INFINITY : 0.0f);
    return is_max ? oc_warp_max(r) : oc_warp_sum(r);
}

/* Column sums in two deterministic stages (oc_cuda_bias_bwd and the
 * LayerNorm weight gradients): stage 1 splits the N rows into
 * OC_COLSUM_CHUNKS chunks and writes one partial sum per (chunk, column);
 * stage 2 adds the partials of each column in chunk order. */
#define OC_COLSUM_CHUNKS 32
#define OC_COLSUM_TX 32 /* columns per block: one 128-byte row segment */
#define OC_COLSUM_TY 8  /* row lanes per block */

/* Stage 1's end in a (OC_COLSUM_TX, OC_COLSUM_TY) block over chunk
 * blockIdx.y: each row lane's sum `a` of column col, added in lane order,
 * is the chunk's partial scratch[blockIdx.y * C + col]. Every thread of
 * the block calls it (it synchronises the block). */
__device__ __forceinline__ void oc_colsum_store(float *scratch, float a, int64_t col,
                                                int64_t C)
{
    __shared__ float sh[OC_COLSUM_TY][OC_COLSUM_TX + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    __syncthreads(); /* sh may still be read from a previous call */
    sh[ty][tx] = a;
    __syncthreads();
    if (ty == 0 && col < C) {
        for (int k = 1; k < OC_COLSUM_TY; k++)
            a += sh[k][tx];
        scratch[(int64_t)blockIdx.y * C + col] = a;
    }
}

/* Stage 2 (residual.cu): dst[col] += the partials of col in scratch
 * (OC_COLSUM_CHUNKS, C), in chunk order, for every col < C. */
void oc_cuda_colsum_finish(float *dst, const float *scratch, int64_t C,
                           cudaStream_t stream);

#endif
