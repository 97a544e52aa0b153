/* gc.h: the compression kernels of the compressed DP gradient exchange
 * (core/compress.h: gc=topk<D>, gc=q8, gc=q1) as one table per backend,
 * so that the runner's exchange (runner_gc.c) is written once. The cpu
 * backend's is exec/cpu/gc_cpu.c (pure loops on host floats); a backend
 * without one (b->gc NULL) does not run compression.
 *
 *   const struct oc_gc_kernels *k = b->gc;
 *   // top-k: each rank
 *   k->topk_pack(g, resid, n, K, pairs, scratch);     // K pairs, resid updated
 *   ... all-gather the d*K pairs (8 bytes each) ...
 *   k->topk_unpack(all_pairs, d * K, g, n);           // g = sum of them
 *   // q1 / q8: each rank
 *   k->q_pack(g, resid, n, d, chunk, bits, blocks);    // d blocks of W words
 *   ... all-to-all: block j to rank j ...
 *   k->q_server(recv, d, len, chunk, bits, server_err, acc, mine); // 1 block
 *   ... all-gather the d blocks ...
 *   k->q_unpack(all, n, d, chunk, bits, g);            // g decoded
 *
 * Letters: n = the rank's gradient elements (its stage's parameters: the
 * arena of params.h), d = the DP group, K = ceil(D*n) kept by top-k,
 * chunk = elements per quantised chunk (a multiple of 32; d chunks cover
 * n, the last ones padded), W = oc_gc_q_words(chunk, bits) 4-byte words of
 * one block: the chunk's fp32 scale, then its codes packed little-end
 * first (element i of the chunk in bit i%32 of code word i/32 for q1,
 * byte i%4 of word i/4 for q8).
 *
 * The arithmetic (core/compress.h's sources):
 *   top-k   Lin et al. 2018 (Deep Gradient Compression) with error
 *           feedback (Aji & Heafield 2017): acc = g + resid; keep the K
 *           elements of largest |acc| (ties: the lower index first), as
 *           (int32 index, fp32 value) pairs in index order; resid = acc
 *           with the kept elements zeroed. Unpack: g = 0, then g[i] += v
 *           for every pair in order (rank after rank).
 *   q1      1-bit SGD (Seide et al. 2014) with error feedback
 *           (Karimireddy et al. 2019): per chunk, acc = x + err, scale s =
 *           mean |acc| over the chunk's valid elements (the s minimising
 *           ||acc - s*sign(acc)||^2), code = acc >= 0, decoded as +s or -s;
 *           err = acc - decoded.
 *   q8      the same with s = max |acc| / 127 and code = round(acc / s)
 *           in [-127, 127] (an int8), decoded as code * s.
 *   server  1-bit Adam's compressed all-reduce (Tang et al. 2021,
 *           section 4): rank j receives chunk j of every rank, sums their
 *           decoded values, adds its server error and quantises the sum
 *           again (the server's error feedback), which every rank then
 *           gathers.
 * The exchange SUMS the ranks' contributions (the top-k pairs, the
 * server's chunk): each rank's gradient is already of the global batch's
 * mean loss over its share of the batch (runner.c: grad_scale = 1/(G*T)),
 * so the sum is the mean gradient, as the uncompressed all-reduce's sum.
 *
 * What it is not: the communication (the backend's dp_allgather and
 * dp_alltoall), the choice of K, chunk and the wire sizes (runner_gc.c,
 * from core/compress.c's plan), or memory allocation.
 */
#ifndef OC_EXEC_GC_H
#define OC_EXEC_GC_H

#include <stdint.h>

/* One kept element of top-k on the wire: 8 bytes (OC_GC_PAIR_BYTES). */
struct oc_gc_pair {
    int32_t index;
    float value;
};

struct oc_gc_kernels {
    /* acc = g + resid (n); the K largest |acc| into out[0..K) by index;
     * resid = acc with them zeroed. g is read only. scratch: n floats. */
    void (*topk_pack)(const float *g, float *resid, int64_t n, int64_t k,
                      struct oc_gc_pair *out, float *scratch);
    /* g (n) = the sum of the np pairs (every index < n). */
    void (*topk_unpack)(const struct oc_gc_pair *p, int64_t np, float *g, int64_t n);
    /* The worker: for each of the d chunks of g + resid (chunk j: elements
     * [j*chunk, min(n, (j+1)*chunk))), block j of out (W words) and the
     * new resid. */
    void (*q_pack)(const float *g, float *resid, int64_t n, int64_t d, int64_t chunk,
                   int bits, uint32_t *out);
    /* The server of one chunk of len valid elements (<= chunk): acc (chunk
     * floats, scratch) = the sum of the d received blocks (in, d*W words)
     * + err (len); one block into out; err updated. */
    void (*q_server)(const uint32_t *in, int64_t d, int64_t len, int64_t chunk, int bits,
                     float *err, float *acc, uint32_t *out);
    /* g (n) = the d gathered blocks decoded (their padding dropped). */
    void (*q_unpack)(const uint32_t *in, int64_t n, int64_t d, int64_t chunk, int bits,
                     float *g);
    /* x (n) *= a: the mean of the TP replicas' decoded gradients (the
     * runner's, runner_gc.c). */
    void (*scale)(float *x, int64_t n, float a);
};

/* Elements per chunk of n over d ranks: ceil(n/d) rounded up to 32 (whole
 * code words). */
int64_t oc_gc_q_chunk(int64_t n, int64_t d);
/* 4-byte words of one block: the scale and chunk*bits/32 code words. */
int64_t oc_gc_q_words(int64_t chunk, int bits);
/* Valid elements of chunk j (0 for a chunk wholly past n). */
int64_t oc_gc_q_len(int64_t n, int64_t chunk, int64_t j);
/* K = ceil(D*n) of top-k, at least 1 (core/compress.c's). */
int64_t oc_gc_topk_k(int64_t n, double density);

#endif
