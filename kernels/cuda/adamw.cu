/* adamw.cu: AdamW (Loshchilov & Hutter 2019, algorithm 2, as
 * torch.optim.AdamW), fp32, element-wise with a grid-stride loop, term for
 * term as the cpu kernels' adamw. The bias corrections 1 - b^k are
 * computed on the host in double and rounded to float, as ops_cpu.c does.
 */
#include <math.h>

#include "common.cuh"

__global__ void adamw_kernel(float *w, const float *g, float *m, float *v,
                             int64_t n, float lr, float beta1, float beta2,
                             float eps, float decay, float bc1, float bc2)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const float gi = g[i];
        const float mi = beta1 * m[i] + (1.0f - beta1) * gi;
        const float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        const float wi = w[i] - decay * w[i];
        w[i] = wi - lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
    }
}

extern "C" void oc_cuda_adamw(float *w, const float *g, float *m, float *v,
                              int64_t n, float lr, float beta1, float beta2,
                              float eps, float weight_decay, int decay,
                              int64_t step, cudaStream_t stream)
{
    OC_ASSERT(n >= 1 && step >= 1 && w && g && m && v);
    /* Bias corrections (Kingma & Ba 2015, algorithm 1). */
    const float bc1 = (float)(1.0 - pow((double)beta1, (double)step));
    const float bc2 = (float)(1.0 - pow((double)beta2, (double)step));
    const float dec = decay ? lr * weight_decay : 0.0f;
    adamw_kernel<<<oc_grid_1d(n, 256), 256, 0, stream>>>(w, g, m, v, n, lr, beta1,
                                                         beta2, eps, dec, bc1, bc2);
    OC_LAUNCH_CHECK();
}
