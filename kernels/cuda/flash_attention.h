/* flash_attention.h: the launchers of the fused causal attention kernels
 * (flash_attention.cu), the GPU twin of the cpu kernel table's
 * flash_attn_fwd / flash_attn_bwd (kernels/cpu/attention_flash_cpu.c, the
 * reference); ops_cuda.c puts them behind kernels/ops.h's table.
 *
 *   oc_cuda_flash_attn_fwd(y, lse, qkv, B, T, nh, nkv, HS, OC_CUDA_BF16, stream);
 *   float *scratch = ...;  // oc_cuda_flash_attn_bwd_scratch_floats(B, T, nh)
 *   oc_cuda_flash_attn_bwd(dqkv, qkv, y, lse, dy, B, T, nh, nkv, HS,
 *                          OC_CUDA_BF16, scratch, stream);
 *
 * Layouts (kernels/ops.h), row-major, device pointers: qkv and dqkv
 * (B,T,nkv,g+2,HS) with g = nh/nkv (per token and KV group: g queries, the
 * key, the value; query head h reads group h/g), y and dy (B,T,nh,HS), lse
 * (B,nh,T). Causal, scale 1/sqrt(HS), 1 <= HS <= 256, any T >= 1.
 *
 * Precision: dt OC_CUDA_BF16 multiplies the bf16 roundings (to nearest
 * even, as oc_cuda_f32_to_bf16) of q, k, v and dy, with every sum,
 * exponential and output in fp32; OC_CUDA_F32 multiplies them as they are.
 * Deterministic: no atomics, every sum in a fixed order.
 *
 * What this is not: a backend or a model (as kernels.h); nothing here
 * allocates or synchronises.
 */
#ifndef OC_KERNELS_FLASH_ATTENTION_H
#define OC_KERNELS_FLASH_ATTENTION_H

#include <stdint.h>

#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y (B,T,nh,HS) and lse (B,nh,T) = log sum_t2<=t exp(s[t,t2]), written. */
void oc_cuda_flash_attn_fwd(float *y, float *lse, const float *qkv, int64_t B,
                            int64_t T, int64_t nh, int64_t nkv, int64_t HS,
                            enum oc_cuda_dtype dt, cudaStream_t stream);
/* dqkv (B,T,nkv,g+2,HS), written, from dy and the forward's qkv, y, lse;
 * dqkv must not alias qkv. scratch: oc_cuda_flash_attn_bwd_scratch_floats(
 * B, T, nh) floats (D = dy . y per row). */
void oc_cuda_flash_attn_bwd(float *dqkv, const float *qkv, const float *y,
                            const float *lse, const float *dy, int64_t B,
                            int64_t T, int64_t nh, int64_t nkv, int64_t HS,
                            enum oc_cuda_dtype dt, float *scratch,
                            cudaStream_t stream);
int64_t oc_cuda_flash_attn_bwd_scratch_floats(int64_t B, int64_t T, int64_t nh);

#ifdef __cplusplus
}
#endif

#endif
