/* layernorm.cu: LayerNorm (Ba et al. 2016) forward and backward over the last
 * dimension C, fp32, as the cpu kernels' layernorm_fwd / layernorm_bwd (llm.c's
 * CPU reference): mean, then the variance of x - mean (two passes, not
 * E[x^2] - E[x]^2), rstd = 1/sqrtf(var + 1e-5).
 *
 * Forward: one warp per row, lanes stride over C (coalesced), butterfly
 * reductions; the row is read three times, from L1 after the first.
 * Backward: one warp per row for dinp; the weight and bias gradients are
 * column sums over N rows, done in two deterministic stages (common.cuh).
 */
#include "common.cuh"

#define LN_EPS 1e-5f /* GPT-2's layer_norm_epsilon, as the cpu kernels */
#define LN_ROWS 8    /* rows (warps) per block */

__global__ void layernorm_fwd_kernel(float *out, float *mean, float *rstd,
                                     const float *inp, const float *w,
                                     const float *b, int64_t N, int C)
{
    const int lane = threadIdx.x % OC_WARP;
    const int64_t row = (int64_t)blockIdx.x * LN_ROWS + threadIdx.x / OC_WARP;
    if (row >= N)
        return;
    const float *x = inp + row * C;
    float s = 0.0f;
    for (int j = lane; j < C; j += OC_WARP)
        s += x[j];
    const float m = oc_warp_sum(s) / (float)C;
    float s2 = 0.0f;
    for (int j = lane; j < C; j += OC_WARP) {
        float xm = x[j] - m;
        s2 += xm * xm;
    }
    const float var = oc_warp_sum(s2) / (float)C;
    const float r = 1.0f / sqrtf(var + LN_EPS);
    float *o = out + row * C;
    for (int j = lane; j < C; j += OC_WARP)
        o[j] = (r * (x[j] - m)) * w[j] + b[j];
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = r;
    }
}

/* dinp += (dnorm - mean(dnorm) - norm * mean(dnorm * norm)) * rstd, with
 * dnorm = w * dout and norm = (x - mean) * rstd. */
__global__ void layernorm_bwd_dx_kernel(float *dinp, const float *dout,
                                        const float *inp, const float *w,
                                        const float *mean, const float *rstd,
                                        int64_t N, int C)
{
    const int lane = threadIdx.x % OC_WARP;
    const int64_t row = (int64_t)blockIdx.x * LN_ROWS + threadIdx.x / OC_WARP;
    if (row >= N)
        return;
    const float *dy = dout + row * C, *x = inp + row * C;
    float *dx = dinp + row * C;
    const float m = mean[row], r = rstd[row];
    float a = 0.0f, an = 0.0f;
    for (int j = lane; j < C; j += OC_WARP) {
        float norm = (x[j] - m) * r;
        float dnorm = w[j] * dy[j];
        a += dnorm;
        an += dnorm * norm;
    }
    const float dnorm_mean = oc_warp_sum(a) / (float)C;
    const float dnorm_norm_mean = oc_warp_sum(an) / (float)C;
    for (int j = lane; j < C; j += OC_WARP) {
        float norm = (x[j] - m) * r;
        float dnorm = w[j] * dy[j];
        dx[j] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * r;
    }
}

/* Stage 1: partial[chunk][col] of dw (sum dout * norm) and db (sum dout),
 * scratch = (2, OC_COLSUM_CHUNKS, C). Block (32, 8): 32 columns, 8 row
 * lanes, one chunk of rows (blockIdx.y). */
__global__ void layernorm_bwd_dwdb_kernel(float *scratch, const float *dout,
                                          const float *inp, const float *mean,
                                          const float *rstd, int64_t N, int C)
{
    __shared__ float sw[OC_COLSUM_TY][OC_COLSUM_TX + 1];
    __shared__ float sb[OC_COLSUM_TY][OC_COLSUM_TX + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col = blockIdx.x * OC_COLSUM_TX + tx;
    const int64_t per = (N + OC_COLSUM_CHUNKS - 1) / OC_COLSUM_CHUNKS;
    const int64_t r0 = blockIdx.y * per;
    const int64_t r1 = r0 + per < N ? r0 + per : N;
    float aw = 0.0f, ab = 0.0f;
    if (col < C)
        for (int64_t i = r0 + ty; i < r1; i += OC_COLSUM_TY) {
            float dy = dout[i * C + col];
            aw += (inp[i * C + col] - mean[i]) * rstd[i] * dy;
            ab += dy;
        }
    sw[ty][tx] = aw;
    sb[ty][tx] = ab;
    __syncthreads();
    if (ty == 0 && col < C) {
        for (int k = 1; k < OC_COLSUM_TY; k++) {
            aw += sw[k][tx];
            ab += sb[k][tx];
        }
        scratch[(int64_t)blockIdx.y * C + col] = aw;
        scratch[((int64_t)OC_COLSUM_CHUNKS + blockIdx.y) * C + col] = ab;
    }
}

/* Stage 2: dw[col] += sum of its partials, db likewise, in chunk order. */
__global__ void layernorm_bwd_finish_kernel(float *dw, float *db,
                                            const float *scratch, int C)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= C)
        return;
    float aw = 0.0f, ab = 0.0f;
    for (int k = 0; k < OC_COLSUM_CHUNKS; k++) {
        aw += scratch[(int64_t)k * C + col];
        ab += scratch[((int64_t)OC_COLSUM_CHUNKS + k) * C + col];
    }
    dw[col] += aw;
    db[col] += ab;
}

extern "C" int64_t oc_cuda_layernorm_bwd_scratch_floats(int64_t C)
{
    return 2 * (int64_t)OC_COLSUM_CHUNKS * C;
}

extern "C" void oc_cuda_layernorm_fwd(float *out, float *mean, float *rstd,
                                      const float *inp, const float *w,
                                      const float *b, int64_t N, int64_t C,
                                      cudaStream_t stream)
{
    OC_ASSERT(N >= 1 && C >= 1 && C <= INT32_MAX);
    OC_ASSERT(out && mean && rstd && inp && w && b && out != inp);
    unsigned blocks = (unsigned)((N + LN_ROWS - 1) / LN_ROWS);
    layernorm_fwd_kernel<<<blocks, LN_ROWS * OC_WARP, 0, stream>>>(
        out, mean, rstd, inp, w, b, N, (int)C);
    OC_LAUNCH_CHECK();
}

extern "C" void oc_cuda_layernorm_bwd(float *dinp, float *dw, float *db,
                                      const float *dout, const float *inp,
                                      const float *w, const float *mean,
                                      const float *rstd, int64_t N, int64_t C,
                                      float *scratch, cudaStream_t stream)
{
    OC_ASSERT(N >= 1 && C >= 1 && C <= INT32_MAX);
    OC_ASSERT(dinp && dw && db && dout && inp && w && mean && rstd && scratch);
    OC_ASSERT(dinp != dout && dinp != inp);
    unsigned blocks = (unsigned)((N + LN_ROWS - 1) / LN_ROWS);
    layernorm_bwd_dx_kernel<<<blocks, LN_ROWS * OC_WARP, 0, stream>>>(
        dinp, dout, inp, w, mean, rstd, N, (int)C);
    OC_LAUNCH_CHECK();
    dim3 grid((unsigned)((C + OC_COLSUM_TX - 1) / OC_COLSUM_TX), OC_COLSUM_CHUNKS);
    dim3 block(OC_COLSUM_TX, OC_COLSUM_TY);
    layernorm_bwd_dwdb_kernel<<<grid, block, 0, stream>>>(scratch, dout, inp,
                                                          mean, rstd, N, (int)C);
    OC_LAUNCH_CHECK();
    layernorm_bwd_finish_kernel<<<oc_grid_1d(C, 256), 256, 0, stream>>>(
        dw, db, scratch, (int)C);
    OC_LAUNCH_CHECK();
}
