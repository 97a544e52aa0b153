/* embedding.cu: vocab-parallel token embedding (Megatron-LM's
 * VocabParallelEmbedding) and learned positions, forward and backward, fp32,
 * as the cpu kernels' embed_fwd, pos_fwd and embed_bwd.
 *
 * Forward: element-wise over (N, C), a token's row read where the token is
 * local ([v0, v0+v)), zeros elsewhere; positions are added by a second
 * launch, after the TP all-reduce.
 *
 * Backward without atomics, so that it repeats bitwise and equals the cpu kernels
 * (which adds rows in token-position order):
 *   dwpe  one thread per (t, column), adding the B rows of position t in
 *         batch order (none where dwpe is NULL: rotary positions);
 *   dwte  one block per position i; the block goes on only if i is the
 *         first position holding its token (the "owner": the block checks
 *         positions < i, 256 at a time). The owner walks positions i..N-1
 *         in chunks of 256, lists the ones holding its token in position
 *         order (warp ballots and per-warp counts), and adds their dout
 *         rows to its dwte row, columns across threads. Only the owner
 *         writes a row. Cost: each local position scans N tokens (from L1
 *         and L2), 256 per step; the row additions are the N*C that the
 *         math needs.
 * Tokens outside [0, V) trap the kernel (a broken invariant, as
 * the cpu kernels' OC_ASSERT); the next cudaCheck reports the fault.
 */
#include "common.cuh"

#define EMB_THREADS 256

__global__ void embed_fwd_kernel(float *out, const int32_t *tokens,
                                 const float *wte, int64_t N, int64_t C,
                                 int64_t V, int64_t v0, int64_t v)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < N * C;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = k / C, j = k % C;
        const int64_t tok = tokens[i];
        if (tok < 0 || tok >= V)
            __trap();
        out[k] = (tok >= v0 && tok < v0 + v) ? wte[(tok - v0) * C + j] : 0.0f;
    }
}

__global__ void pos_fwd_kernel(float *out, const float *wpe, int64_t N,
                               int64_t T, int64_t C)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < N * C;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = k / C, j = k % C;
        out[k] += wpe[(i % T) * C + j];
    }
}

__global__ void pos_bwd_kernel(float *dwpe, const float *dout, int64_t B,
                               int64_t T, int64_t C)
{
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < T * C;
         k += (int64_t)gridDim.x * blockDim.x) {
        float acc = dwpe[k]; /* k = t*C + j */
        for (int64_t b = 0; b < B; b++)
            acc += dout[b * T * C + k];
        dwpe[k] = acc;
    }
}

__global__ void __launch_bounds__(EMB_THREADS)
tok_bwd_kernel(float *dwte, const int32_t *tokens, const float *dout, int64_t N,
               int64_t C, int64_t V, int64_t v0, int64_t v)
{
    __shared__ int64_t list[EMB_THREADS];
    __shared__ int wcount[EMB_THREADS / OC_WARP];
    const int tid = threadIdx.x, lane = tid % OC_WARP, warp = tid / OC_WARP;
    const int64_t i = blockIdx.x;
    const int32_t tok = tokens[i];
    if (tok < 0 || tok >= V)
        __trap();
    if (tok < v0 || tok >= v0 + v)
        return; /* the whole block: another rank's row */
    int earlier = 0;
    for (int64_t j = tid; j < i; j += EMB_THREADS)
        earlier |= tokens[j] == tok;
    if (__syncthreads_or(earlier))
        return; /* not the owner */
    float *row = dwte + (tok - v0) * C;
    for (int64_t j0 = i; j0 < N; j0 += EMB_THREADS) {
        const int64_t j = j0 + tid;
        const bool match = j < N && tokens[j] == tok;
        const unsigned ballot = __ballot_sync(OC_FULL_MASK, match);
        if (lane == 0)
            wcount[warp] = __popc(ballot);
        __syncthreads();
        int off = 0, total = 0;
        for (int w = 0; w < EMB_THREADS / OC_WARP; w++) {
            off += w < warp ? wcount[w] : 0;
            total += wcount[w];
        }
        if (match)
            list[off + __popc(ballot & ((1u << lane) - 1u))] = j;
        __syncthreads();
        for (int64_t c = tid; c < C; c += EMB_THREADS) {
            float acc = row[c];
            for (int k = 0; k < total; k++)
                acc += dout[list[k] * C + c];
            row[c] = acc;
        }
        __syncthreads(); /* list and wcount are rewritten next chunk */
    }
}

extern "C" void oc_cuda_embed_fwd(float *out, const int32_t *tokens,
                                  const float *wte, int64_t N, int64_t C,
                                  int64_t V, int64_t v0, int64_t v,
                                  cudaStream_t stream)
{
    OC_ASSERT(N >= 1 && C >= 1 && v >= 1 && v0 >= 0 && v0 + v <= V);
    OC_ASSERT(out && tokens && wte);
    embed_fwd_kernel<<<oc_grid_1d(N * C, 256), 256, 0, stream>>>(out, tokens, wte,
                                                                N, C, V, v0, v);
    OC_LAUNCH_CHECK();
}

extern "C" void oc_cuda_pos_fwd(float *out, const float *wpe, int64_t N,
                                int64_t T, int64_t C, cudaStream_t stream)
{
    OC_ASSERT(N >= 1 && T >= 1 && C >= 1 && N % T == 0 && out && wpe);
    pos_fwd_kernel<<<oc_grid_1d(N * C, 256), 256, 0, stream>>>(out, wpe, N, T, C);
    OC_LAUNCH_CHECK();
}

extern "C" void oc_cuda_embed_bwd(float *dwte, float *dwpe, const int32_t *tokens,
                                  const float *dout, int64_t B, int64_t T,
                                  int64_t C, int64_t V, int64_t v0, int64_t v,
                                  cudaStream_t stream)
{
    OC_ASSERT(B >= 1 && T >= 1 && C >= 1 && v >= 1 && v0 >= 0 && v0 + v <= V);
    OC_ASSERT(V <= INT32_MAX && B * T <= INT32_MAX);
    OC_ASSERT(dwte && tokens && dout);
    if (dwpe) { /* NULL: a rotary model has no position table */
        pos_bwd_kernel<<<oc_grid_1d(T * C, 256), 256, 0, stream>>>(dwpe, dout, B, T, C);
        OC_LAUNCH_CHECK();
    }
    tok_bwd_kernel<<<(unsigned)(B * T), EMB_THREADS, 0, stream>>>(
        dwte, tokens, dout, B * T, C, V, v0, v);
    OC_LAUNCH_CHECK();
}
