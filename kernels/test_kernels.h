/* test_kernels.h: what the files of kernels_gpu share; test_kernels.c
 * defines it all (its main, the tables, the helpers) and calls the test
 * functions of the other files:
 *
 *   struct pair x = prand(n, 1, 0), y = pout(n);   // host and device twins
 *   CPU.ops->gelu_fwd(CPU.ctx, y.h, x.h, n);
 *   GPU.ops->gelu_fwd(GPU.ctx, y.d, x.d, n);
 *   pcheck("gelu_fwd", &y, TOL_F32);               // one line, counted
 *   pfree(&y), pfree(&x);
 *
 * Not a library: the names are the test program's own. The tolerances are
 * explained in test_kernels.c's header.
 */
#ifndef OC_TEST_KERNELS_H
#define OC_TEST_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "ops_cuda.h"

#define TOL_EXACT 0.0
#define TOL_F32 1e-5
#define TOL_BF16_OPERANDS 1e-4
#define TOL_BF16 1e-2

extern cudaStream_t g_stream;
extern struct oc_kernels CPU, GPU, GPU16; /* cpu; cuda fp32; cuda bf16 */

/* A host tensor and its device copy: the two tables' inputs or outputs. */
struct pair {
    float *h, *d;
    int64_t n;
};

/* uniform on offset + scale * [-1, 1), on both sides */
struct pair prand(int64_t n, float scale, float offset);
/* an output: host zero, device NaN (a kernel that skips an element fails) */
struct pair pout(int64_t n);
/* the host values to the device */
void psync(struct pair *p);
void pfree(struct pair *p);
/* the device side of p against its host side: one counted check line */
void pcheck(const char *name, const struct pair *p, double tol);
/* device -> host, after the stream's work */
void down(void *h, const void *d, size_t bytes);
/* bf16 rounding to nearest even on the host, and back */
oc_bf16 bf16_of(float x);
float f32_of(oc_bf16 h);

/* test_kernels_flash.c: the fused attention entries */
void test_flash_attention(void);

#endif
