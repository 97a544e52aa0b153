/* test_kernels.h: what the files of kernels_gpu share (test_kernels.c:
 * the helpers, the checks of the GPT block's kernels and main;
 * test_kernels_llama.c: the Llama block's; test_kernels_flash.c: fused attention): the two kernel tables, host
 * tensors with their device copies, and the checks that print one line
 * each and count failures. The tolerances are test_kernels.c's header's.
 *
 *   struct pair x = prand(n, 1, 0), y = pout(n);  // same input, both sides
 *   CPU.ops->xxx(CPU.ctx, y.h, x.h, n);
 *   GPU.ops->xxx(GPU.ctx, y.d, x.d, n);
 *   pcheck("xxx", &y, TOL_F32);                    // device against host
 *   pfree(&y), pfree(&x);
 *
 * Not a library: a test program's shared declarations.
 */
#ifndef OC_TEST_KERNELS_H
#define OC_TEST_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "ops_cpu.h"
#include "ops_cuda.h"

#define TOL_EXACT 0.0
#define TOL_F32 1e-5
#define TOL_BF16_OPERANDS 1e-4
#define TOL_BF16 1e-2

extern int g_checks, g_failed;
extern cudaStream_t g_stream;
extern struct oc_kernels CPU, GPU, GPU16; /* cpu; cuda fp32; cuda bf16 */

uint64_t next_u64(void);
float urand(void); /* uniform on [-1, 1), fixed seed */
void *xmalloc(size_t bytes);
void *dalloc(size_t bytes); /* device memory set to NaN (0xff bytes) */
void *dup_bytes(const void *h, size_t bytes);
void down(void *h, const void *d, size_t bytes); /* after the stream's work */
oc_bf16 bf16_of(float x);
float f32_of(oc_bf16 h);

/* A host tensor and its device copy: the two tables' inputs or outputs. */
struct pair {
    float *h, *d;
    int64_t n;
};

struct pair prand(int64_t n, float scale, float offset); /* offset + scale*[-1,1) */
struct pair pout(int64_t n);   /* an output: host zero, device NaN */
void psync(struct pair *p);    /* the host values to the device */
void pround(struct pair *p);   /* the host values rounded to bf16, both sides */
void pfree(struct pair *p);

double scaled_err(const float *got, const float *ref, int64_t n);
void check(const char *name, const float *got, const float *ref, int64_t n, double tol);
void check_true(const char *name, int ok);
void check_dev(const char *name, const float *d, const float *ref, int64_t n, double tol);
void pcheck(const char *name, const struct pair *p, double tol); /* p.d against p.h */

/* test_kernels_llama.c: RMSNorm, SwiGLU, rotary embedding. */
void test_kernels_llama(void);

/* test_kernels_flash.c: the fused attention entries. */
void test_flash_attention(void);

#endif
