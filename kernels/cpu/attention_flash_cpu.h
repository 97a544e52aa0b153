/* attention_flash_cpu.h: the cpu kernel table's fused-attention entries
 * (kernels/ops.h: flash_attn_fwd, flash_attn_bwd), for ops_cpu.c's table.
 *
 *   k.ops->flash_attn_fwd(k.ctx, y, lse, qkv, B, T, nh, nkv, HS);
 *   k.ops->flash_attn_bwd(k.ctx, dqkv, qkv, y, lse, dy, B, T, nh, nkv, HS);
 *
 * What this is: the plain reference the cuda flash kernels are tested
 * against (kernels/test_kernels_flash.c) and what the cpu backend runs when
 * a layout asks for flash attention: per query row, the scores, their max,
 * the exponentials, their sum, lse and y, in sequential loops of a fixed
 * order (bitwise reproducible). What it is not: tiled or online (that is
 * the cuda kernels' way to the same numbers), or fast.
 */
#ifndef OC_KERNELS_ATTENTION_FLASH_CPU_H
#define OC_KERNELS_ATTENTION_FLASH_CPU_H

#include "ops.h"

void oc_cpu_flash_attn_fwd(void *ctx, float *y, float *lse, const float *qkv,
                           int64_t B, int64_t T, int64_t nh, int64_t nkv,
                           int64_t HS);
void oc_cpu_flash_attn_bwd(void *ctx, float *dqkv, const float *qkv,
                           const float *y, const float *lse, const float *dy,
                           int64_t B, int64_t T, int64_t nh, int64_t nkv,
                           int64_t HS);

#endif
