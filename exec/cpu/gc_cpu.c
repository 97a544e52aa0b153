/* gc_cpu.c: the cpu backend's compression kernels (gc.h): top-k with error
 * feedback, 1-bit and 8-bit quantisation with error feedback and 1-bit
 * Adam's server step, as sequential loops over host floats in a fixed
 * order (bitwise reproducible, as the cpu kernels of kernels/cpu/).
 *
 * What it is not: communication, allocation or the choice of sizes
 * (runner_gc.c, gc_sizes.c). No MPI: tests/test_exec_gc.c calls it alone.
 */
#include "gc_cpu.h"

#include <math.h>
#include <string.h>

#include "status.h"

/* ------------------------------------------------------------------ */
/* Top-k                                                                */

/* The selection key of x: the bits of |x| as an unsigned integer, which
 * orders as |x| does for non-negative floats; a NaN (a diverged step) is
 * above +inf, so it is sent and shows. */
static uint32_t key_of(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u & 0x7fffffffu;
}

/* Radix select (Alabi et al. 2012, as core/compress.h's OC_GC_SELECT_READS
 * counts it): the k-th largest of the n keys, by the histograms of their
 * top 11, next 11 and low 10 bits, each pass over the keys whose higher
 * digits are those of the k-th; *above: the keys greater than it. */
static uint32_t select_kth(const uint32_t *key, int64_t n, int64_t k, int64_t *above)
{
    static const int shift[3] = {21, 10, 0}, width[3] = {11, 11, 10};
    int64_t hist[2048];
    uint32_t prefix = 0, mask = 0;
    *above = 0;
    for (int p = 0; p < 3; p++) {
        const int nb = 1 << width[p];
        memset(hist, 0, (size_t)nb * sizeof *hist);
        for (int64_t i = 0; i < n; i++)
            if ((key[i] & mask) == prefix)
                hist[(key[i] >> shift[p]) & (uint32_t)(nb - 1)]++;
        int b = nb - 1;
        while (*above + hist[b] < k) /* the k-th lies in bucket b */
            *above += hist[b--];
        prefix |= (uint32_t)b << shift[p];
        mask |= (uint32_t)(nb - 1) << shift[p];
    }
    return prefix;
}

static void cpu_topk_pack(const float *g, float *resid, int64_t n, int64_t k,
                          struct oc_gc_pair *out, float *scratch)
{
    OC_ASSERT(n >= 1 && k >= 1 && k <= n && n <= INT32_MAX);
    uint32_t *key = (uint32_t *)scratch; /* n keys in the n floats' bytes */
    for (int64_t i = 0; i < n; i++) {
        resid[i] += g[i];
        key[i] = key_of(resid[i]);
    }
    /* all above the k-th largest are kept, and of those equal to it the
     * first ones by index until K */
    int64_t above;
    const uint32_t t = select_kth(key, n, k, &above);
    int64_t ties = k - above, m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (key[i] > t || (key[i] == t && ties > 0)) {
            ties -= key[i] == t;
            out[m].index = (int32_t)i;
            out[m].value = resid[i];
            m++;
            resid[i] = 0;
        }
    }
    OC_ASSERT(m == k);
}

static void cpu_topk_unpack(const struct oc_gc_pair *p, int64_t np, float *g, int64_t n)
{
    memset(g, 0, (size_t)n * sizeof *g);
    for (int64_t i = 0; i < np; i++) {
        OC_ASSERT(p[i].index >= 0 && p[i].index < n);
        g[p[i].index] += p[i].value;
    }
}

/* ------------------------------------------------------------------ */
/* Quantisation                                                         */

static float scale_of(const float *acc, int64_t len, int bits)
{
    if (len == 0)
        return 0;
    if (bits == 1) { /* mean |acc|: argmin_s ||acc - s*sign(acc)||^2 */
        double s = 0;
        for (int64_t i = 0; i < len; i++)
            s += fabsf(acc[i]);
        return (float)(s / (double)len);
    }
    float mx = 0;
    for (int64_t i = 0; i < len; i++)
        mx = fabsf(acc[i]) > mx ? fabsf(acc[i]) : mx;
    return mx / 127.0f;
}

/* The q8 code of x at scale s: round(x / s) in [-127, 127]. */
static int code8(float x, float s)
{
    if (!(s > 0))
        return 0;
    const float q = rintf(x / s);
    return q > 127 ? 127 : q < -127 ? -127 : (int)q;
}

static float decoded(const uint32_t *codes, int64_t i, int bits, float s)
{
    if (bits == 1) /* +-1 without a branch on the sign (random signs
                      mispredict half the time) */
        return (float)((int)((codes[i / 32] >> (i % 32)) & 1u) * 2 - 1) * s;
    const int8_t c = (int8_t)(uint8_t)(codes[i / 4] >> (8 * (i % 4)));
    return (float)c * s;
}

/* One block (gc.h) of the len values acc (the chunk's, padded to chunk),
 * and err = acc - decoded (err may be acc). */
static void encode(const float *acc, float *err, int64_t len, int64_t chunk, int bits,
                   uint32_t *blk)
{
    const float s = scale_of(acc, len, bits);
    memcpy(blk, &s, sizeof s);
    uint32_t *codes = blk + 1;
    memset(codes, 0, (size_t)(oc_gc_q_words(chunk, bits) - 1) * sizeof *codes);
    for (int64_t i = 0; i < len; i++) {
        const float a = acc[i];
        if (bits == 1)
            codes[i / 32] |= (uint32_t)(a >= 0) << (i % 32);
        else
            codes[i / 4] |= (uint32_t)(uint8_t)(int8_t)code8(a, s) << (8 * (i % 4));
        err[i] = a - decoded(codes, i, bits, s);
    }
}

/* y[0..len) (+)= the block's values. */
static void decode(const uint32_t *blk, int64_t len, int bits, float *y, int add)
{
    float s;
    memcpy(&s, blk, sizeof s);
    for (int64_t i = 0; i < len; i++) {
        const float v = decoded(blk + 1, i, bits, s);
        y[i] = add ? y[i] + v : v;
    }
}

static void cpu_q_pack(const float *g, float *resid, int64_t n, int64_t d, int64_t chunk,
                       int bits, uint32_t *out)
{
    const int64_t W = oc_gc_q_words(chunk, bits);
    for (int64_t i = 0; i < n; i++)
        resid[i] += g[i];
    for (int64_t j = 0; j < d; j++) {
        float *a = resid + j * chunk;
        encode(a, a, oc_gc_q_len(n, chunk, j), chunk, bits, out + j * W);
    }
}

static void cpu_q_server(const uint32_t *in, int64_t d, int64_t len, int64_t chunk,
                         int bits, float *err, float *acc, uint32_t *out)
{
    OC_ASSERT(len >= 0 && len <= chunk);
    const int64_t W = oc_gc_q_words(chunk, bits);
    memset(acc, 0, (size_t)chunk * sizeof *acc);
    for (int64_t r = 0; r < d; r++)
        decode(in + r * W, len, bits, acc, 1);
    for (int64_t i = 0; i < len; i++)
        acc[i] += err[i];
    encode(acc, err, len, chunk, bits, out);
}

static void cpu_q_unpack(const uint32_t *in, int64_t n, int64_t d, int64_t chunk, int bits,
                         float *g)
{
    const int64_t W = oc_gc_q_words(chunk, bits);
    for (int64_t j = 0; j < d; j++)
        decode(in + j * W, oc_gc_q_len(n, chunk, j), bits, g + j * chunk, 0);
}

static void cpu_scale(float *x, int64_t n, float a)
{
    for (int64_t i = 0; i < n; i++)
        x[i] *= a;
}

static const struct oc_gc_kernels table = {
    .topk_pack = cpu_topk_pack,
    .topk_unpack = cpu_topk_unpack,
    .q_pack = cpu_q_pack,
    .q_server = cpu_q_server,
    .q_unpack = cpu_q_unpack,
    .scale = cpu_scale,
};

const struct oc_gc_kernels *oc_gc_kernels_cpu(void) { return &table; }
