/* rope.cu: rotary position embedding (Su et al. 2021; Hugging Face's Llama,
 * rotate_half: pair i of a head is its elements i and i + HS/2) on the
 * queries and keys of qkv (B,T,nkv,g+2,HS), in place, forward (turn by the
 * position's angle) and backward (turn back), fp32, as the cpu kernels'
 * rope_fwd / rope_bwd: angle = t * inv_freq[i] in fp32, then cosf, sinf
 * (CUDA's, within 2 ulp of the exact values, as the cpu's).
 *
 * One thread per (token, pair, slot): slots 0..g-1 are a group's query
 * heads, slot g its key (slot g+1, the value, is left alone). Each thread
 * reads and writes its own two elements: no sharing, no order.
 */
#include "common.cuh"

/* The frequencies by value (a kernel argument: 512 bytes of the 4 KiB
 * allowed), so the launch needs no device copy of them. */
struct rope_freqs {
    float f[OC_CUDA_ROPE_MAX_PAIRS];
};

__global__ void rope_kernel(float *qkv, struct rope_freqs fr, int64_t N, int64_t T,
                            int nkv, int g, int npairs, float sign)
{
    const int slots = g + 1; /* query heads and the key */
    const int64_t per_tok = (int64_t)nkv * slots * npairs;
    const int64_t rs = (int64_t)nkv * (g + 2) * 2 * npairs; /* a token's floats */
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < N * per_tok;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t n = k / per_tok;
        const int64_t r = k % per_tok;
        const int i = (int)(r % npairs);
        const int64_t hs = r / npairs; /* (group, slot) */
        const int64_t j = hs / slots, slot = hs % slots;
        float *x = qkv + n * rs + (j * (g + 2) + slot) * 2 * npairs;
        const float a = (float)(n % T) * fr.f[i];
        const float c = cosf(a), s = sign * sinf(a);
        const float x1 = x[i], x2 = x[i + npairs];
        x[i] = x1 * c - x2 * s;
        x[i + npairs] = x2 * c + x1 * s;
    }
}

extern "C" void oc_cuda_rope(float *qkv, const float *inv_freq, int64_t pairs,
                             int64_t B, int64_t T, int64_t nh, int64_t nkv,
                             int64_t HS, int backward, cudaStream_t stream)
{
    OC_ASSERT(B >= 1 && T >= 1 && nkv >= 1 && nh % nkv == 0);
    OC_ASSERT(HS % 2 == 0 && pairs == HS / 2 && pairs <= OC_CUDA_ROPE_MAX_PAIRS);
    OC_ASSERT(qkv && inv_freq);
    struct rope_freqs fr = {{0}};
    for (int64_t i = 0; i < pairs; i++)
        fr.f[i] = inv_freq[i]; /* host memory: the model's table */
    const int64_t n = B * T * nkv * (nh / nkv + 1) * pairs;
    rope_kernel<<<oc_grid_1d(n, 256), 256, 0, stream>>>(qkv, fr, B * T, T, (int)nkv,
                                                        (int)(nh / nkv), (int)pairs,
                                                        backward ? -1.0f : 1.0f);
    OC_LAUNCH_CHECK();
}
