/* gelu.cu: GELU in its tanh form (Hendrycks & Gimpel 2016, section 2),
 * forward and backward, fp32, element-wise with a grid-stride loop
 * (coalesced; each element is read once and written once). The formulas
 * are the cpu kernels' gelu_fwd / gelu_bwd term for term, with tanhf and
 * coshf as there (CUDA's are within 2 ulp of the exact values).
 */
#include "common.cuh"

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

__global__ void gelu_fwd_kernel(float *out, const float *inp, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float x = inp[i];
        float cube = 0.044715f * x * x * x;
        out[i] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + cube)));
    }
}

__global__ void gelu_bwd_kernel(float *d, const float *inp, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float x = inp[i];
        float cube = 0.044715f * x * x * x;
        float arg = GELU_K * (x + cube);
        float th = tanhf(arg);
        float ch = coshf(arg);
        float sech2 = 1.0f / (ch * ch);
        float grad = 0.5f * (1.0f + th) +
                     x * 0.5f * sech2 * GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
        d[i] *= grad;
    }
}

extern "C" void oc_cuda_gelu_fwd(float *out, const float *inp, int64_t n,
                                 cudaStream_t stream)
{
    OC_ASSERT(n >= 1 && out && inp);
    gelu_fwd_kernel<<<oc_grid_1d(n, 256), 256, 0, stream>>>(out, inp, n);
    OC_LAUNCH_CHECK();
}

extern "C" void oc_cuda_gelu_bwd(float *d, const float *inp, int64_t n,
                                 cudaStream_t stream)
{
    OC_ASSERT(n >= 1 && d && inp && d != inp);
    gelu_bwd_kernel<<<oc_grid_1d(n, 256), 256, 0, stream>>>(d, inp, n);
    OC_LAUNCH_CHECK();
}
