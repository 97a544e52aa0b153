/* gc_sizes.c: the sizes of the compressed DP exchange's buffers (gc.h),
 * which the runner and every backend's compression kernels share. */
#include "gc.h"

#include <math.h>

#include "status.h"

int64_t oc_gc_q_chunk(int64_t n, int64_t d)
{
    OC_ASSERT(n >= 1 && d >= 1);
    const int64_t c = (n + d - 1) / d;
    return (c + 31) / 32 * 32;
}

int64_t oc_gc_q_words(int64_t chunk, int bits)
{
    OC_ASSERT(chunk % 32 == 0 && (bits == 1 || bits == 8));
    return 1 + chunk * bits / 32;
}

int64_t oc_gc_q_len(int64_t n, int64_t chunk, int64_t j)
{
    const int64_t lo = j * chunk, hi = lo + chunk < n ? lo + chunk : n;
    return hi > lo ? hi - lo : 0;
}

int64_t oc_gc_topk_k(int64_t n, double density)
{
    OC_ASSERT(n >= 1 && density > 0 && density <= 1);
    /* core/compress.c: K = ceil(D*N), in doubles as there */
    const int64_t k = (int64_t)ceil(density * (double)n);
    return k < 1 ? 1 : k > n ? n : k;
}
