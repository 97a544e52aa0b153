/* variability.c: the --variability spec, the counter-based random numbers,
 * the slow devices, the step statistics and the expected maximum of
 * log-normals (variability.h says what each means and where it comes
 * from). */
#include "variability.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

#define OC_2PI 6.283185307179586

/* ---- the spec ---------------------------------------------------------- */

static int parse_num(const char *key, const char *val, size_t len, double *out,
                     struct oc_status *st)
{
    char buf[64];
    if (len == 0)
        return oc_fail(st, "--variability: %s needs a number", key);
    if (len >= sizeof buf)
        return oc_fail(st, "--variability: %s: a value of %zu characters is not a number",
                       key, len);
    memcpy(buf, val, len);
    buf[len] = '\0';
    char *end = NULL;
    const double x = strtod(buf, &end);
    if (end == buf || *end != '\0' || !isfinite(x))
        return oc_fail(st, "--variability: %s=%s is not a number", key, buf);
    *out = x;
    return 0;
}

int oc_var_parse(const char *spec, struct oc_variability *v, struct oc_status *st)
{
    memset(v, 0, sizeof *v);
    v->slowdown = 1.0;
    if (!spec || !*spec)
        return oc_fail(st, "--variability: empty spec (expected e.g. "
                           "compute=0.05,slow=0.01,slowdown=2,link=0.1)");
    static const char *const keys[] = {"compute", "slow", "slowdown", "link"};
    int seen[4] = {0};
    const char *p = spec;
    while (*p) {
        const char *comma = strchr(p, ',');
        const size_t n = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        if (!eq)
            return oc_fail(st, "--variability: '%.*s' is not key=value (keys: compute, "
                               "slow, slowdown, link)", (int)(n < 40 ? n : 40), p);
        const size_t klen = (size_t)(eq - p);
        int k = -1;
        for (int i = 0; i < 4; i++)
            if (strlen(keys[i]) == klen && strncmp(p, keys[i], klen) == 0)
                k = i;
        if (k < 0)
            return oc_fail(st, "--variability: unknown key '%.*s' (keys: compute, slow, "
                               "slowdown, link)", (int)(klen < 40 ? klen : 40), p);
        if (seen[k]++)
            return oc_fail(st, "--variability: %s given twice", keys[k]);
        double x = 0;
        if (parse_num(keys[k], eq + 1, n - klen - 1, &x, st) != 0)
            return -1;
        switch (k) {
        case 0:
        case 3:
            if (x < 0 || x > OC_VAR_CV_MAX)
                return oc_fail(st, "--variability: %s=%g: a coefficient of variation in "
                                   "[0, %g]", keys[k], x, OC_VAR_CV_MAX);
            *(k == 0 ? &v->compute_cv : &v->link_cv) = x;
            break;
        case 1:
            if (x < 0 || x > 1)
                return oc_fail(st, "--variability: slow=%g: a fraction of the devices in "
                                   "[0, 1]", x);
            v->slow_frac = x;
            break;
        default:
            if (x < 1 || x > OC_VAR_SLOWDOWN_MAX)
                return oc_fail(st, "--variability: slowdown=%g: a factor in [1, %g]", x,
                               OC_VAR_SLOWDOWN_MAX);
            v->slowdown = x;
            break;
        }
        if (!comma)
            break;
        p = comma + 1;
        if (!*p)
            return oc_fail(st, "--variability: trailing ','");
    }
    if (v->slow_frac > 0 && !seen[2])
        return oc_fail(st, "--variability: slow=%g needs slowdown=K (how much slower)",
                       v->slow_frac);
    return 0;
}

int oc_var_active(const struct oc_variability *v, int64_t world)
{
    return v && (v->compute_cv > 0 || v->link_cv > 0 ||
                 (v->slowdown > 1 && oc_var_slow_count(v, world) > 0));
}

/* ---- random numbers ---------------------------------------------------- */

/* splitmix64's output function (Steele, Lea and Flood 2014). */
static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t oc_var_hash(uint64_t seed, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    uint64_t h = mix(seed);
    h = mix(h ^ a);
    h = mix(h ^ b);
    h = mix(h ^ c);
    return mix(h ^ d);
}

double oc_var_uniform(uint64_t h)
{
    return ((double)(h >> 11) + 0.5) / 9007199254740992.0; /* (0, 1), 53 bits */
}

double oc_var_lognormal(double cv, double z)
{
    if (cv <= 0)
        return 1.0;
    const double s2 = log1p(cv * cv);
    return exp(sqrt(s2) * z - 0.5 * s2);
}

/* Lanes of the key's last word: which stream a number belongs to. */
enum { LANE_U1, LANE_U2, LANE_LINK1, LANE_LINK2, LANE_SLOW };

double oc_var_normal(uint64_t seed, int64_t step, int64_t rank, int64_t op)
{
    const double u1 = oc_var_uniform(oc_var_hash(seed, (uint64_t)step, (uint64_t)rank,
                                                 (uint64_t)op, LANE_U1));
    const double u2 = oc_var_uniform(oc_var_hash(seed, (uint64_t)step, (uint64_t)rank,
                                                 (uint64_t)op, LANE_U2));
    return sqrt(-2.0 * log(u1)) * cos(OC_2PI * u2);
}

double oc_var_compute_mult(const struct oc_variability *v, const unsigned char *slow,
                           int64_t step, int64_t rank, int64_t op)
{
    double x = v->compute_cv > 0
                   ? oc_var_lognormal(v->compute_cv, oc_var_normal(v->seed, step, rank, op))
                   : 1.0;
    if (slow && slow[rank])
        x *= v->slowdown;
    return x;
}

double oc_var_link_div(const struct oc_variability *v, int64_t step, const char *name)
{
    if (v->link_cv <= 0)
        return 1.0;
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64 of the name */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    const double u1 = oc_var_uniform(oc_var_hash(v->seed, (uint64_t)step, h, 0, LANE_LINK1));
    const double u2 = oc_var_uniform(oc_var_hash(v->seed, (uint64_t)step, h, 0, LANE_LINK2));
    return oc_var_lognormal(v->link_cv, sqrt(-2.0 * log(u1)) * cos(OC_2PI * u2));
}

/* ---- slow devices ------------------------------------------------------ */

int64_t oc_var_slow_count(const struct oc_variability *v, int64_t world)
{
    if (!v || v->slow_frac <= 0 || world <= 0)
        return 0;
    int64_t n = (int64_t)floor(v->slow_frac * (double)world + 0.5);
    return n > world ? world : n;
}

struct keyed {
    uint64_t h;
    int64_t rank;
};

static int by_key(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

unsigned char *oc_var_slow_set(const struct oc_variability *v, int64_t world)
{
    const int64_t n = oc_var_slow_count(v, world);
    if (n == 0 || v->slowdown <= 1)
        return NULL;
    struct keyed *k = oc_xmalloc((size_t)world * sizeof *k);
    for (int64_t r = 0; r < world; r++)
        k[r] = (struct keyed){oc_var_hash(v->seed, 0, (uint64_t)r, 0, LANE_SLOW), r};
    qsort(k, (size_t)world, sizeof *k, by_key);
    unsigned char *slow = oc_xcalloc((size_t)world, 1);
    for (int64_t i = 0; i < n; i++)
        slow[k[i].rank] = 1;
    free(k);
    return slow;
}

/* ---- statistics -------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(const double *sorted, int64_t n, double q)
{
    const double h = (double)(n - 1) * q;
    const int64_t i = (int64_t)floor(h);
    if (i + 1 >= n)
        return sorted[n - 1];
    return sorted[i] + (h - (double)i) * (sorted[i + 1] - sorted[i]);
}

void oc_var_stats(const double *x, int64_t n, struct oc_var_stats *out)
{
    OC_ASSERT(n >= 1);
    double *s = oc_xmalloc((size_t)n * sizeof *s);
    memcpy(s, x, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += s[i];
    out->n = n;
    out->mean = sum / (double)n;
    out->p50 = quantile(s, n, 0.50);
    out->p99 = quantile(s, n, 0.99);
    out->min = s[0];
    out->max = s[n - 1];
    free(s);
}

/* ---- expected maximum ---------------------------------------------------- */

static double integrand(double z, int64_t n, double cv)
{
    const double Phi = 0.5 * erfc(-z * 0.7071067811865476);
    const double phi = exp(-0.5 * z * z) / sqrt(OC_2PI);
    return oc_var_lognormal(cv, z) * (double)n * pow(Phi, (double)(n - 1)) * phi;
}

double oc_var_expected_max(int64_t n, double cv)
{
    OC_ASSERT(n >= 1);
    const int k = 4000;
    const double a = -12.0, b = 12.0, h = (b - a) / k;
    double s = integrand(a, n, cv) + integrand(b, n, cv);
    for (int i = 1; i < k; i++)
        s += (i % 2 ? 4.0 : 2.0) * integrand(a + i * h, n, cv);
    return s * h / 3.0;
}
