/* residual.cu: the element-wise glue of the backend, fp32: the row-parallel
 * bias and residual adds of the model (out = out + bias + in, after the TP
 * all-reduce), a plain add, the bias gradient of a linear layer (column
 * sums of dout, the cpu kernels' linear_bwd), and the fp32 <-> bf16 casts of
 * the bf16 GEMM path.
 *
 * Element-wise kernels use grid-stride loops (coalesced). The bias gradient
 * is a column sum in two deterministic stages (common.cuh): partial sums
 * over 32 chunks of rows, then each column's partials in chunk order.
 */
#include <cuda_bf16.h>

#include "common.cuh"

__global__ void add_bias_residual_kernel(float *out, const float *bias,
                                         const float *res, int64_t N, int64_t C)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < N * C;
         k += (int64_t)gridDim.x * blockDim.x) {
        float o = out[k];
        if (bias)
            o = o + bias[k % C];
        if (res)
            o = o + res[k];
        out[k] = o;
    }
}

__global__ void add_kernel(float *out, const float *a, const float *b, int64_t n)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x)
        out[k] = a[k] + b[k];
}

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

/* Stage 1: scratch[chunk][col] = sum of dout[rows of chunk][col]; block
 * (32, 8): 32 columns, 8 row lanes. */
template <typename T>
__global__ void colsum_partial_kernel(float *scratch, const T *dout, int64_t N,
                                      int64_t OC)
{
    const int64_t col = (int64_t)blockIdx.x * OC_COLSUM_TX + threadIdx.x;
    const int64_t per = (N + OC_COLSUM_CHUNKS - 1) / OC_COLSUM_CHUNKS;
    const int64_t r0 = blockIdx.y * per;
    const int64_t r1 = r0 + per < N ? r0 + per : N;
    float a = 0.0f;
    if (col < OC)
        for (int64_t i = r0 + threadIdx.y; i < r1; i += OC_COLSUM_TY)
            a += to_f32(dout[i * OC + col]);
    oc_colsum_store(scratch, a, col, OC);
}

/* Stage 2: dbias[col] += its partials, in chunk order. */
__global__ void colsum_finish_kernel(float *dbias, const float *scratch, int64_t OC)
{
    const int64_t col = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= OC)
        return;
    float a = 0.0f;
    for (int k = 0; k < OC_COLSUM_CHUNKS; k++)
        a += scratch[(int64_t)k * OC + col];
    dbias[col] += a;
}

__global__ void f32_to_bf16_kernel(__nv_bfloat16 *out, const float *in, int64_t n)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x)
        out[k] = __float2bfloat16_rn(in[k]);
}

__global__ void bf16_to_f32_kernel(float *out, const __nv_bfloat16 *in, int64_t n)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (int64_t)gridDim.x * blockDim.x)
        out[k] = __bfloat162float(in[k]);
}

extern "C" void oc_cuda_add_bias_residual(float *out, const float *bias,
                                          const float *res, int64_t N, int64_t C,
                                          cudaStream_t stream)
{
    OC_ASSERT(N >= 1 && C >= 1 && out && out != res);
    add_bias_residual_kernel<<<oc_grid_1d(N * C, 256), 256, 0, stream>>>(
        out, bias, res, N, C);
    OC_LAUNCH_CHECK();
}

extern "C" void oc_cuda_add(float *out, const float *a, const float *b, int64_t n,
                            cudaStream_t stream)
{
    OC_ASSERT(n >= 1 && out && a && b);
    add_kernel<<<oc_grid_1d(n, 256), 256, 0, stream>>>(out, a, b, n);
    OC_LAUNCH_CHECK();
}

extern "C" int64_t oc_cuda_colsum_scratch_floats(int64_t OC)
{
    return (int64_t)OC_COLSUM_CHUNKS * OC;
}

extern "C" void oc_cuda_bias_bwd(float *dbias, const void *dout,
                                 enum oc_cuda_dtype t, int64_t N, int64_t OC,
                                 float *scratch, cudaStream_t stream)
{
    OC_ASSERT(N >= 1 && OC >= 1 && dbias && dout && scratch);
    dim3 grid((unsigned)((OC + OC_COLSUM_TX - 1) / OC_COLSUM_TX), OC_COLSUM_CHUNKS);
    dim3 block(OC_COLSUM_TX, OC_COLSUM_TY);
    if (t == OC_CUDA_BF16)
        colsum_partial_kernel<__nv_bfloat16><<<grid, block, 0, stream>>>(
            scratch, (const __nv_bfloat16 *)dout, N, OC);
    else
        colsum_partial_kernel<float><<<grid, block, 0, stream>>>(
            scratch, (const float *)dout, N, OC);
    OC_LAUNCH_CHECK();
    oc_cuda_colsum_finish(dbias, scratch, OC, stream);
}

void oc_cuda_colsum_finish(float *dst, const float *scratch, int64_t C,
                           cudaStream_t stream)
{
    colsum_finish_kernel<<<oc_grid_1d(C, 256), 256, 0, stream>>>(dst, scratch, C);
    OC_LAUNCH_CHECK();
}

extern "C" void oc_cuda_f32_to_bf16(oc_bf16 *out, const float *in, int64_t n,
                                    cudaStream_t stream)
{
    OC_ASSERT(n >= 1 && out && in);
    f32_to_bf16_kernel<<<oc_grid_1d(n, 256), 256, 0, stream>>>(
        (__nv_bfloat16 *)out, in, n);
    OC_LAUNCH_CHECK();
}

extern "C" void oc_cuda_bf16_to_f32(float *out, const oc_bf16 *in, int64_t n,
                                    cudaStream_t stream)
{
    OC_ASSERT(n >= 1 && out && in);
    bf16_to_f32_kernel<<<oc_grid_1d(n, 256), 256, 0, stream>>>(
        out, (const __nv_bfloat16 *)in, n);
    OC_LAUNCH_CHECK();
}
