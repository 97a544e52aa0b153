/* kernels_fixtures.c: the cpu kernel table, random inputs and finite
 * differences that the kernel suites share (see kernels_fixtures.h). */
#include "kernels_fixtures.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>

struct oc_kernels K;

int kernels_suite_init(void)
{
    openblas_set_num_threads(1);
    K = oc_kernels_cpu();
    struct oc_kernel_sizes sz = {0};
    return K.ops->reserve(K.ctx, &sz, NULL) == 0 && K.ops->align_floats == 1 ? 0 : 1;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

float urand(void) /* splitmix64 -> [-1, 1) */
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (float)((double)(z >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

float *frand(int64_t n)
{
    float *p = malloc((size_t)n * sizeof *p);
    OC_ASSERT(p);
    for (int64_t i = 0; i < n; i++)
        p[i] = urand();
    return p;
}

float *fzero(int64_t n)
{
    float *p = calloc((size_t)n, sizeof *p);
    OC_ASSERT(p);
    return p;
}

double scaled_err(const float *a, const double *b, int64_t n)
{
    double emax = 0.0, bmax = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        emax = e > emax ? e : emax;
        bmax = fabs(b[i]) > bmax ? fabs(b[i]) : bmax;
    }
    return bmax > 0.0 ? emax / bmax : emax;
}

double *fd_grad(fwd_fn f, void *ctx, float *x, int64_t nx, int64_t nout,
                const float *G, float h)
{
    double *g = calloc((size_t)nx, sizeof *g);
    float *out = malloc((size_t)nout * sizeof *out);
    OC_ASSERT(g && out);
    for (int64_t i = 0; i < nx; i++) {
        const float x0 = x[i];
        double lp = 0, lm = 0;
        x[i] = x0 + h;
        f(ctx, x, out);
        for (int64_t j = 0; j < nout; j++)
            lp += (double)out[j] * G[j];
        x[i] = x0 - h;
        f(ctx, x, out);
        for (int64_t j = 0; j < nout; j++)
            lm += (double)out[j] * G[j];
        x[i] = x0;
        g[i] = (lp - lm) / (2.0 * (double)h);
    }
    free(out);
    return g;
}
