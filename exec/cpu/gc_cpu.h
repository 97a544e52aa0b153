/* gc_cpu.h: the cpu backend's compression kernels (the table of gc.h:
 * top-k, q1 / q8 and the compressed all-reduce's server step), plain loops
 * over host memory; the cpu backend's b->gc.
 *
 *   const struct oc_gc_kernels *k = oc_gc_kernels_cpu();
 *   k->topk_pack(g, resid, n, K, pairs, scratch);
 */
#ifndef OC_EXEC_GC_CPU_H
#define OC_EXEC_GC_CPU_H

#include "gc.h"

const struct oc_gc_kernels *oc_gc_kernels_cpu(void);

#endif
