/* ops_cuda.h: the cuda implementation of the primitive-kernel table
 * (kernels/ops.h): the launchers of kernels.h and cuBLAS / cublasLt GEMMs,
 * every call enqueued on one stream, pointers in device memory.
 *
 *   struct oc_cuda_blas blas;               // the caller's, one per stream
 *   oc_cuda_blas_init(&blas);
 *   struct oc_cuda_kernels ctx;
 *   struct oc_kernels k;
 *   oc_cuda_kernels_init(&k, &ctx, &blas, stream, OC_CUDA_BF16);
 *   oc_cuda_kernels_weights(&ctx, p.w, p.n, &st);    // the device arena
 *   oc_gpt_reserve(&k, &dims, &st);                  // the scratch
 *   ... the model's parts on &k ...
 *   oc_cuda_kernels_free(&ctx);
 *
 * What this file is: the table's functions over kernels.h, the precision
 * rules, and the device memory they need (the bf16 weights, the scratch).
 * What it is not: a backend (exec/cuda/ owns the streams, the arena, NCCL,
 * timing) or a model. Nothing here synchronises; only init-time calls
 * (oc_cuda_kernels_weights, reserve, free) allocate or free.
 *
 * Precision (the dtype of init):
 *   OC_CUDA_F32   fp32 GEMMs (CUBLAS_COMPUTE_32F, no TF32): the cpu
 *                 kernels' numbers up to summation order (~1e-6).
 *   OC_CUDA_BF16  a linear layer's GEMM operands in bf16 with fp32
 *                 accumulation and fp32 results, as Megatron-LM's mixed
 *                 precision (Micikevicius et al. 2018): its weight from a
 *                 bf16 copy of the attached fp32 weights (recast from them
 *                 before the first linear layer after they changed: this
 *                 table's adamw, or weights_changed), its activation and
 *                 output gradient cast to bf16 into the scratch just before
 *                 the GEMM that reads them. Bias gradients are column sums
 *                 of the fp32 output gradient (not of its bf16 cast).
 *                 Everything that is not a GEMM stays fp32: LayerNorm,
 *                 attention (scores and att @ v), softmax, cross-entropy,
 *                 GELU, the adds, gradients and AdamW. The fused attention
 *                 (flash_attn_fwd / _bwd) multiplies the bf16 roundings
 *                 of q, k, v and dy, with fp32 sums and outputs
 *                 (flash_attention.h).
 *
 * Scratch (reserve, offsets 256-byte aligned), sized from struct
 * oc_kernel_sizes:
 *   k     kernel scratch: the largest of oc_cuda_layernorm_bwd_scratch_
 *         floats(norm), oc_cuda_attn_bwd_scratch_floats(B, T, nh),
 *         oc_cuda_flash_attn_bwd_scratch_floats(B, T, nh) and
 *         oc_cuda_colsum_scratch_floats(bias_out)
 *   act   BF16 only: the bf16 cast of a linear layer's input, rows *
 *         lin_in values
 *   grad  BF16 only: the bf16 cast of a linear backward's output gradient,
 *         rows * lin_out values
 * A region is reused by the next call: the stream orders a cast after the
 * previous reader. align_floats is 64 (256 bytes): the model's work pieces
 * start aligned, so cublasLt can take them.
 */
#ifndef OC_KERNELS_OPS_CUDA_H
#define OC_KERNELS_OPS_CUDA_H

#include <stdint.h>

#include "kernels.h"
#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

struct oc_cuda_kernels {
    struct oc_cuda_blas *blas;  /* the caller's, used on stream */
    cudaStream_t stream;
    enum oc_cuda_dtype dtype;   /* linear layers' GEMM operands */
    /* the attached fp32 weights (device) and their bf16 copy */
    const float *w;             /* NULL: none attached */
    int64_t wn;
    oc_bf16 *wb;                /* BF16: (wn) bf16 copy of w, else NULL */
    int wb_stale;               /* the next linear layer recasts wb first */
    /* scratch */
    struct oc_kernel_sizes sizes; /* reserved so far (field-wise maximum) */
    float *scratch;
    int64_t k_floats, act_floats, grad_floats; /* the regions, in order */
    double bytes, bytes_high;   /* cudaMalloc'd here (wb, scratch): live, most */
};

extern const struct oc_kernel_ops oc_kernel_ops_cuda;

/* x holds the table's state; k = {&oc_kernel_ops_cuda, x}. Allocates
 * nothing. */
void oc_cuda_kernels_init(struct oc_kernels *k, struct oc_cuda_kernels *x,
                          struct oc_cuda_blas *blas, cudaStream_t stream,
                          enum oc_cuda_dtype dtype);
/* The fp32 weights (device, n floats: a parameter arena) that linear
 * layers take their weights from; BF16 allocates their bf16 copy (cast
 * before the first use). w NULL detaches (frees the copy). 0, or -1 with
 * st->msg (out of device memory). */
int oc_cuda_kernels_weights(struct oc_cuda_kernels *x, const float *w, int64_t n,
                            struct oc_status *st);
/* Frees the bf16 copy and the scratch (after the stream's work). */
void oc_cuda_kernels_free(struct oc_cuda_kernels *x);

#ifdef __cplusplus
}
#endif

#endif
