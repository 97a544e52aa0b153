/* cross_entropy.cu: vocab-parallel softmax cross-entropy (Megatron-LM,
 * tensor_parallel/cross_entropy.py), fp32, in the four steps of the model's
 * oc_gpt_head_fwd / oc_gpt_head_bwd so that the TP all-reduces (MAX of the
 * row maxima; SUM of the target logits and of the exponential sums) go
 * between the launches, as kernels.h shows.
 *
 * The row steps (max, exp and sum, finish) run one block of 256 threads per
 * token row, threads striding over the v local columns (coalesced), with a
 * block reduction (butterfly in each warp, then across warps); the
 * backward is element-wise. loss = ln(sum_j exp(l_j - max)) - (l_tgt - max)
 * and d loss / d l_j = softmax_j - [j = tgt] (Bishop 2006, eq. 4.109).
 * Targets outside [0, V) trap the kernel, as the cpu kernels assert.
 */
#include <float.h>

#include "common.cuh"

#define CE_THREADS 256

__global__ void __launch_bounds__(CE_THREADS)
ce_max_kernel(float *lmax, const float *logits, int64_t v)
{
    __shared__ float sh[OC_WARP];
    const float *row = logits + (int64_t)blockIdx.x * v;
    float m = -FLT_MAX;
    for (int64_t j = threadIdx.x; j < v; j += CE_THREADS)
        m = fmaxf(m, row[j]);
    m = oc_block_reduce(m, sh, 1);
    if (threadIdx.x == 0)
        lmax[blockIdx.x] = m;
}

__global__ void __launch_bounds__(CE_THREADS)
ce_exp_kernel(float *logits, float *sumexp, float *tlogit, const float *lmax,
              const int32_t *targets, int64_t v, int64_t v0, int64_t V)
{
    __shared__ float sh[OC_WARP];
    const int64_t i = blockIdx.x;
    float *row = logits + i * v;
    const float m = lmax[i];
    const int64_t tgt = targets[i];
    if (tgt < 0 || tgt >= V)
        __trap();
    const int64_t jt = tgt - v0; /* local column of the target, if in [0, v) */
    if (threadIdx.x == 0 && (jt < 0 || jt >= v))
        tlogit[i] = 0.0f;
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < v; j += CE_THREADS) {
        const float x = row[j];
        if (j == jt)
            tlogit[i] = x - m; /* read before the row is overwritten */
        const float e = expf(x - m);
        row[j] = e;
        s += e;
    }
    s = oc_block_reduce(s, sh, 0);
    if (threadIdx.x == 0)
        sumexp[i] = s;
}

__global__ void __launch_bounds__(CE_THREADS)
ce_finish_kernel(float *losses, float *probs, const float *sumexp,
                 const float *tlogit, int64_t v)
{
    const int64_t i = blockIdx.x;
    const float s = sumexp[i];
    if (threadIdx.x == 0)
        losses[i] = logf(s) - tlogit[i];
    float *row = probs + i * v;
    for (int64_t j = threadIdx.x; j < v; j += CE_THREADS)
        row[j] /= s;
}

__global__ void ce_bwd_kernel(float *dlogits, const float *probs,
                              const int32_t *targets, float grad_scale,
                              int64_t N, int64_t v, int64_t v0)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < N * v;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = k / v, j = k % v;
        float d = probs[k] * grad_scale;
        if (targets[i] - v0 == j)
            d -= grad_scale;
        dlogits[k] = d;
    }
}

static void ce_check(int64_t N, int64_t v)
{
    OC_ASSERT(N >= 1 && N <= INT32_MAX && v >= 1);
}

extern "C" void oc_cuda_ce_max(float *lmax, const float *logits, int64_t N,
                               int64_t v, cudaStream_t stream)
{
    ce_check(N, v);
    OC_ASSERT(lmax && logits);
    ce_max_kernel<<<(unsigned)N, CE_THREADS, 0, stream>>>(lmax, logits, v);
    OC_LAUNCH_CHECK();
}

extern "C" void oc_cuda_ce_exp(float *logits, float *sumexp, float *tlogit,
                               const float *lmax, const int32_t *targets,
                               int64_t N, int64_t v, int64_t v0, int64_t V,
                               cudaStream_t stream)
{
    ce_check(N, v);
    OC_ASSERT(v0 >= 0 && v0 + v <= V);
    OC_ASSERT(logits && sumexp && tlogit && lmax && targets);
    ce_exp_kernel<<<(unsigned)N, CE_THREADS, 0, stream>>>(logits, sumexp, tlogit,
                                                          lmax, targets, v, v0, V);
    OC_LAUNCH_CHECK();
}

extern "C" void oc_cuda_ce_finish(float *losses, float *probs,
                                  const float *sumexp, const float *tlogit,
                                  int64_t N, int64_t v, cudaStream_t stream)
{
    ce_check(N, v);
    OC_ASSERT(losses && probs && sumexp && tlogit);
    ce_finish_kernel<<<(unsigned)N, CE_THREADS, 0, stream>>>(losses, probs,
                                                             sumexp, tlogit, v);
    OC_LAUNCH_CHECK();
}

extern "C" void oc_cuda_ce_bwd(float *dlogits, const float *probs,
                               const int32_t *targets, float grad_scale,
                               int64_t N, int64_t v, int64_t v0,
                               cudaStream_t stream)
{
    ce_check(N, v);
    OC_ASSERT(dlogits && probs && targets && v0 >= 0);
    ce_bwd_kernel<<<oc_grid_1d(N * v, 256), 256, 0, stream>>>(
        dlogits, probs, targets, grad_scale, N, v, v0);
    OC_LAUNCH_CHECK();
}
