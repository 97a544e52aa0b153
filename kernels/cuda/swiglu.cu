/* swiglu.cu: SwiGLU (Shazeer 2020, "GLU Variants Improve Transformer";
 * Hugging Face's LlamaMLP: silu(gate) * up) forward and backward, fp32,
 * element-wise with a grid-stride loop over the N*f outputs, as the cpu
 * kernels' swiglu_fwd / swiglu_bwd term for term. h (N,2f) holds a row's
 * gate columns then its up columns (the fused up projection). expf is
 * CUDA's (within 2 ulp of the exact value, as the cpu's).
 */
#include "common.cuh"

__global__ void swiglu_fwd_kernel(float *out, const float *h, int64_t N, int64_t f)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < N * f;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = k / f, j = k % f;
        const float gate = h[i * 2 * f + j], up = h[i * 2 * f + f + j];
        const float sig = 1.0f / (1.0f + expf(-gate));
        out[k] = (gate * sig) * up;
    }
}

/* dgate = dout * up * silu'(gate), silu'(x) = sig * (1 + x * (1 - sig));
 * dup = dout * silu(gate). */
__global__ void swiglu_bwd_kernel(float *dh, const float *dout, const float *h,
                                  int64_t N, int64_t f)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < N * f;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = k / f, j = k % f;
        const float x = h[i * 2 * f + j], up = h[i * 2 * f + f + j];
        const float sig = 1.0f / (1.0f + expf(-x));
        dh[i * 2 * f + j] = dout[k] * up * (sig * (1.0f + x * (1.0f - sig)));
        dh[i * 2 * f + f + j] = dout[k] * (x * sig);
    }
}

extern "C" void oc_cuda_swiglu_fwd(float *out, const float *h, int64_t N, int64_t f,
                                   cudaStream_t stream)
{
    OC_ASSERT(N >= 1 && f >= 1 && out && h && out != h);
    swiglu_fwd_kernel<<<oc_grid_1d(N * f, 256), 256, 0, stream>>>(out, h, N, f);
    OC_LAUNCH_CHECK();
}

extern "C" void oc_cuda_swiglu_bwd(float *dh, const float *dout, const float *h,
                                   int64_t N, int64_t f, cudaStream_t stream)
{
    OC_ASSERT(N >= 1 && f >= 1 && dh && dout && h && dh != dout && dh != h);
    swiglu_bwd_kernel<<<oc_grid_1d(N * f, 256), 256, 0, stream>>>(dh, dout, h, N, f);
    OC_LAUNCH_CHECK();
}
