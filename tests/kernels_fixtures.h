/* kernels_fixtures.h: what the suites of the cpu kernel table share
 * (test_kernels_cpu: the GPT block's kernels; test_kernels_llama: the
 * Llama block's): the table, random inputs from a fixed seed, the error
 * relative to a tensor's scale, and central finite differences.
 *
 *   static int init(void) { return kernels_suite_init(); }
 *   float *x = frand(n);                        // uniform on [-1, 1)
 *   double *want = fd_grad(my_fwd, &ctx, x, n, nout, G, 1e-2f);
 *   K.ops->xxx_bwd(K.ctx, dx, ...);
 *   CU_ASSERT(scaled_err(dx, want, n) < TOL_FD);
 *
 * What it is not: a test (nothing here asserts).
 */
#ifndef OC_KERNELS_FIXTURES_H
#define OC_KERNELS_FIXTURES_H

#include <stdint.h>

#include "ops_cpu.h"

#define TOL 1e-6    /* a forward value worked by hand, float rounding only */
#define TOL_FD 1e-2 /* a gradient against finite differences (float forward) */

/* The cpu kernel table; set by kernels_suite_init. */
extern struct oc_kernels K;
/* CUnit suite init: one OpenBLAS thread, the cpu table into K (0, or 1 if
 * the table is not the cpu's). */
int kernels_suite_init(void);

/* Uniform on [-1, 1) (splitmix64 from a fixed seed: failures repeat). */
float urand(void);
/* n such values, or n zeros (free them). */
float *frand(int64_t n);
float *fzero(int64_t n);

/* max |a - b| / max |b|: the error relative to the tensor's scale. */
double scaled_err(const float *a, const double *b, int64_t n);

/* The forward kernel under a finite-difference check: writes out (nout)
 * from x, the input being varied; ctx holds the other arguments. */
typedef void (*fwd_fn)(void *ctx, const float *x, float *out);

/* d/dx of sum(out * G), by central differences of step h (free it). */
double *fd_grad(fwd_fn f, void *ctx, float *x, int64_t nx, int64_t nout,
                const float *G, float h);

#endif
