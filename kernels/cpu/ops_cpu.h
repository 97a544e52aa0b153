/* ops_cpu.h: the cpu implementation of the primitive-kernel table
 * (kernels/ops.h): plain sequential C11 loops and cblas_sgemm (OpenBLAS),
 * fp32, on host memory.
 *
 *   struct oc_kernels k = oc_kernels_cpu();
 *   k.ops->linear_fwd(k.ctx, out, inp, w, bias, N, IC, OC);
 *
 * What this is: the one CPU copy of the executor's numerics. It is what
 * the cpu backend runs (exec/cpu/) and the reference that the cuda kernels
 * are tested against (kernels/test_kernels.c). The loops follow llm.c's
 * CPU reference (karpathy/llm.c, train_gpt2.c) and run in a fixed order,
 * so with one OpenBLAS thread (openblas_set_num_threads(1)) every result
 * repeats bitwise. What it is not: fast (no threads, no SIMD of its own).
 *
 * Stateless: ctx is NULL, reserve does nothing, any number of threads may
 * call the table at once (the attention backward allocates its 2*T floats
 * of row scratch per call, the flash forward its T: attention_flash_cpu.c).
 * align_floats is 1: a caller's work buffer is packed.
 */
#ifndef OC_KERNELS_OPS_CPU_H
#define OC_KERNELS_OPS_CPU_H

#include "ops.h"

extern const struct oc_kernel_ops oc_kernel_ops_cpu;

/* {&oc_kernel_ops_cpu, NULL} */
struct oc_kernels oc_kernels_cpu(void);

#endif
