/* data.c: the synthetic permutation walk (see data.h). */
#include "data.h"

#include <math.h>
#include <string.h>

/* splitmix64 (Steele, Lea, Flood 2014). params.c has the same function; the
 * two modules stay independent. */
static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Domain tags keep the streams apart. */
enum { TAG_PERM = 1, TAG_TOKEN = 2, TAG_COIN = 3 };

static uint64_t draw(uint64_t seed, int tag, uint64_t a, uint64_t b)
{
    return splitmix64(splitmix64(splitmix64(seed ^ ((uint64_t)tag << 60)) ^ a) ^ b);
}

/* Uniform in [0, n) by multiply-shift of the top 32 bits (Lemire 2019);
 * the bias of at most n/2^32 does not matter here. */
static int64_t below(uint64_t h, int64_t n)
{
    return (int64_t)(((h >> 32) * (uint64_t)n) >> 32);
}

int oc_synth_init(struct oc_synth *s, int64_t V, uint64_t seed,
                  struct oc_status *st)
{
    memset(s, 0, sizeof *s);
    if (V < 2 || V > INT32_MAX)
        return oc_fail(st, "exec data: vocabulary %lld is outside [2, 2^31)",
                       (long long)V);
    s->V = V;
    s->seed = seed;
    s->follow = OC_SYNTH_FOLLOW;
    s->perm = oc_xmalloc((size_t)V * sizeof *s->perm);
    /* Fisher-Yates shuffle (Knuth, TAOCP vol. 2, algorithm P). */
    for (int64_t i = 0; i < V; i++)
        s->perm[i] = (int32_t)i;
    for (int64_t i = V - 1; i > 0; i--) {
        int64_t j = below(draw(seed, TAG_PERM, (uint64_t)i, 0), i + 1);
        int32_t x = s->perm[i];
        s->perm[i] = s->perm[j];
        s->perm[j] = x;
    }
    return 0;
}

void oc_synth_free(struct oc_synth *s)
{
    if (!s)
        return;
    free(s->perm);
    memset(s, 0, sizeof *s);
}

void oc_synth_sample(const struct oc_synth *s, int64_t g, int64_t T,
                     int32_t *in, int32_t *targets)
{
    OC_ASSERT(s->perm && g >= 0 && T >= 1);
    /* coin < follow * 2^53 with probability `follow` */
    const uint64_t cut = (uint64_t)(s->follow * 9007199254740992.0);
    int32_t tok = (int32_t)below(draw(s->seed, TAG_TOKEN, (uint64_t)g, 0), s->V);
    for (int64_t i = 0; i < T; i++) {
        in[i] = tok;
        uint64_t coin = draw(s->seed, TAG_COIN, (uint64_t)g, (uint64_t)i) >> 11;
        if (coin < cut)
            tok = s->perm[tok];
        else
            tok = (int32_t)below(
                draw(s->seed, TAG_TOKEN, (uint64_t)g, (uint64_t)i + 1), s->V);
        targets[i] = tok;
    }
}

void oc_synth_batch(const struct oc_synth *s, int64_t g0, int64_t B, int64_t T,
                    int32_t *in, int32_t *targets)
{
    for (int64_t b = 0; b < B; b++)
        oc_synth_sample(s, g0 + b, T, in + b * T, targets + b * T);
}

int64_t oc_synth_sample_index(int64_t step, int64_t G, int64_t d,
                              int64_t dp_rank, int64_t m, int64_t mb,
                              int64_t b, int64_t row)
{
    OC_ASSERT(d >= 1 && m >= 1 && b >= 1 && G == d * m * b);
    OC_ASSERT(dp_rank >= 0 && dp_rank < d && mb >= 0 && mb < m && row >= 0 &&
              row < b);
    return step * G + dp_rank * (G / d) + mb * b + row;
}

double oc_synth_entropy(const struct oc_synth *s)
{
    double V = (double)s->V;
    double r = (1.0 - s->follow) / V;
    double q = s->follow + r;
    double h = -q * log(q);
    if (r > 0)
        h -= (V - 1.0) * r * log(r);
    return h;
}
