/* rmsnorm.cu: RMSNorm (Zhang & Sennrich 2019; Hugging Face's LlamaRMSNorm)
 * forward and backward over the last dimension C, fp32, as the cpu kernels'
 * rmsnorm_fwd / rmsnorm_bwd: rstd = 1/sqrtf(mean(x^2) + eps), out =
 * (x * rstd) * w.
 *
 * Forward: one warp per row, lanes stride over C (coalesced), a butterfly
 * sum of squares; the row is read twice, from L1 the second time.
 * Backward: one warp per row for dinp (the row's mean(dn * xh) by a
 * butterfly sum, then dx); the gain's gradient is a column sum over N rows
 * in two deterministic stages (common.cuh's oc_colsum_store, then
 * oc_cuda_colsum_finish), as layernorm.cu's.
 */
#include "common.cuh"

#define RMS_ROWS 8 /* rows (warps) per block */

__global__ void rmsnorm_fwd_kernel(float *out, float *rstd, const float *inp,
                                   const float *w, int64_t N, int C, float eps)
{
    const int lane = threadIdx.x % OC_WARP;
    const int64_t row = (int64_t)blockIdx.x * RMS_ROWS + threadIdx.x / OC_WARP;
    if (row >= N)
        return;
    const float *x = inp + row * C;
    float ss = 0.0f;
    for (int j = lane; j < C; j += OC_WARP)
        ss += x[j] * x[j];
    const float r = 1.0f / sqrtf(oc_warp_sum(ss) / (float)C + eps);
    float *o = out + row * C;
    for (int j = lane; j < C; j += OC_WARP)
        o[j] = (x[j] * r) * w[j];
    if (lane == 0)
        rstd[row] = r;
}

/* dinp += (dn - xh * mean(dn * xh)) * rstd, dn = w * dout, xh = x * rstd. */
__global__ void rmsnorm_bwd_dx_kernel(float *dinp, const float *dout,
                                      const float *inp, const float *w,
                                      const float *rstd, int64_t N, int C)
{
    const int lane = threadIdx.x % OC_WARP;
    const int64_t row = (int64_t)blockIdx.x * RMS_ROWS + threadIdx.x / OC_WARP;
    if (row >= N)
        return;
    const float *dy = dout + row * C, *x = inp + row * C;
    float *dx = dinp + row * C;
    const float r = rstd[row];
    float a = 0.0f;
    for (int j = lane; j < C; j += OC_WARP)
        a += (w[j] * dy[j]) * (x[j] * r);
    const float dot = oc_warp_sum(a) / (float)C;
    for (int j = lane; j < C; j += OC_WARP)
        dx[j] += (w[j] * dy[j] - (x[j] * r) * dot) * r;
}

/* Stage 1: partial[chunk][col] of dw = sum over the chunk's rows of dout *
 * x * rstd; scratch (OC_COLSUM_CHUNKS, C). Block (32, 8): 32 columns, 8 row
 * lanes, one chunk of rows (blockIdx.y). Stage 2 is oc_cuda_colsum_finish. */
__global__ void rmsnorm_bwd_dw_kernel(float *scratch, const float *dout,
                                      const float *inp, const float *rstd,
                                      int64_t N, int C)
{
    const int col = blockIdx.x * OC_COLSUM_TX + threadIdx.x;
    const int64_t per = (N + OC_COLSUM_CHUNKS - 1) / OC_COLSUM_CHUNKS;
    const int64_t r0 = blockIdx.y * per;
    const int64_t r1 = r0 + per < N ? r0 + per : N;
    float aw = 0.0f;
    if (col < C)
        for (int64_t i = r0 + threadIdx.y; i < r1; i += OC_COLSUM_TY)
            aw += dout[i * C + col] * (inp[i * C + col] * rstd[i]);
    oc_colsum_store(scratch, aw, col, C);
}

extern "C" int64_t oc_cuda_rmsnorm_bwd_scratch_floats(int64_t C)
{
    return (int64_t)OC_COLSUM_CHUNKS * C;
}

extern "C" void oc_cuda_rmsnorm_fwd(float *out, float *rstd, const float *inp,
                                    const float *w, int64_t N, int64_t C, float eps,
                                    cudaStream_t stream)
{
    OC_ASSERT(N >= 1 && C >= 1 && C <= INT32_MAX && eps > 0.0f);
    OC_ASSERT(out && rstd && inp && w && out != inp);
    unsigned blocks = (unsigned)((N + RMS_ROWS - 1) / RMS_ROWS);
    rmsnorm_fwd_kernel<<<blocks, RMS_ROWS * OC_WARP, 0, stream>>>(out, rstd, inp, w, N,
                                                                  (int)C, eps);
    OC_LAUNCH_CHECK();
}

extern "C" void oc_cuda_rmsnorm_bwd(float *dinp, float *dw, const float *dout,
                                    const float *inp, const float *w,
                                    const float *rstd, int64_t N, int64_t C,
                                    float *scratch, cudaStream_t stream)
{
    OC_ASSERT(N >= 1 && C >= 1 && C <= INT32_MAX);
    OC_ASSERT(dinp && dw && dout && inp && w && rstd && scratch);
    OC_ASSERT(dinp != dout && dinp != inp);
    unsigned blocks = (unsigned)((N + RMS_ROWS - 1) / RMS_ROWS);
    rmsnorm_bwd_dx_kernel<<<blocks, RMS_ROWS * OC_WARP, 0, stream>>>(dinp, dout, inp, w,
                                                                     rstd, N, (int)C);
    OC_LAUNCH_CHECK();
    dim3 grid((unsigned)((C + OC_COLSUM_TX - 1) / OC_COLSUM_TX), OC_COLSUM_CHUNKS);
    dim3 block(OC_COLSUM_TX, OC_COLSUM_TY);
    rmsnorm_bwd_dw_kernel<<<grid, block, 0, stream>>>(scratch, dout, inp, rstd, N,
                                                      (int)C);
    OC_LAUNCH_CHECK();
    oc_cuda_colsum_finish(dw, scratch, C, stream);
}
