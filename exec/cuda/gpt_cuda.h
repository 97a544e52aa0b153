/* gpt_cuda.h: exec/gpt.h's parts on one GPU: the same model, the same
 * tensor-parallel shards, the same step-mode protocol and the same act
 * structs, with every pointer (parameters, activations, tokens, targets,
 * losses, work) in device memory and every call enqueued on one stream.
 *
 *   struct oc_gpu g;
 *   oc_gpu_init(&g, &blas, stream, OC_CUDA_BF16, &p, &d, &st);  // p on device
 *   struct oc_gpt_call c = {0};
 *   while (oc_gpu_attn_fwd(&g, &c, &d, &p, layer, &act, out) == OC_GPT_REDUCE)
 *       ncclAllReduce(c.buf, c.buf, c.n, ncclFloat, c.op == OC_GPT_MAX ?
 *                     ncclMax : ncclSum, tp_comm, stream);   // same stream
 *   ...
 *   oc_gpu_free(&g);
 *
 * What this file is: the GPU twin of gpt.c, built from kernels/ (kernels.h:
 * LayerNorm, GELU, attention, embedding, cross-entropy, residual adds,
 * cuBLAS / cublasLt GEMMs) and AdamW over the arena. What it is not: a
 * runner (backend_cuda.c drives it) or a communicator (the caller does the
 * all-reduces that a part asks for, on the part's stream, between calls).
 *
 * Every part asks for exactly the all-reduces gpt.h's table lists, in the
 * same order, with the same n and op; c.buf is a device pointer. A part
 * resumes after an all-reduce only with the work gpt.c does there. Nothing
 * here synchronises the stream or the device: results are ready in stream
 * order.
 *
 * Precision (the `dtype` of init):
 *   OC_CUDA_F32   fp32 GEMMs (CUBLAS_COMPUTE_32F, no TF32): the cpu
 *                 backend's numbers up to summation order (~1e-6).
 *   OC_CUDA_BF16  GEMM operands in bf16 with fp32 accumulation and fp32
 *                 results, as Megatron-LM's mixed precision: a bf16 copy of
 *                 the weights (cast from the fp32 master weights when they
 *                 changed: oc_gpu_weights_changed) and of each activation
 *                 a GEMM reads (cast into the context's scratch). LayerNorm,
 *                 softmax, cross-entropy, GELU, residuals, gradients and
 *                 AdamW stay fp32. Attention scores and att @ v run in fp32
 *                 (kernels.h's attention kernels).
 *
 * Buffers: the act structs are bound with gpt.h's *_bind functions over
 * device memory of the sizes gpt.h gives (oc_gpt_*_act_floats); `work` of
 * backward calls holds oc_gpu_work_floats(d) floats.
 */
#ifndef OC_EXEC_GPT_CUDA_H
#define OC_EXEC_GPT_CUDA_H

#include <stdint.h>

#include "gpt.h"
#include "kernels.h"
#include "params.h"
#include "status.h"

struct oc_gpu {
    struct oc_cuda_blas *blas;  /* the caller's, bound to stream */
    cudaStream_t stream;
    enum oc_cuda_dtype dtype;   /* GEMM operands */
    const struct oc_params *p;  /* the arena the bf16 copy mirrors */
    oc_bf16 *wb;                /* BF16: bf16 copy of p->w (p->n), else NULL */
    int wb_stale;               /* the next part recasts wb first */
    float *scratch;             /* bf16 casts of GEMM inputs, kernel scratch */
    int64_t scratch_floats;
};

/* Allocates the bf16 weights and the scratch for parts of dims d (the
 * largest micro-batch the caller will run). 0 or -1 (st: out of memory). */
int oc_gpu_init(struct oc_gpu *g, struct oc_cuda_blas *blas, cudaStream_t stream,
                enum oc_cuda_dtype dtype, const struct oc_params *p,
                const struct oc_gpt_dims *d, struct oc_status *st);
void oc_gpu_free(struct oc_gpu *g);
/* The fp32 weights changed (AdamW, a DP all-gather): recast before use. */
void oc_gpu_weights_changed(struct oc_gpu *g);

/* `work` of one backward call: attention dy (B,T,C/t), dqkv (B,T,3C/t),
 * dln (B,T,C); MLP dh (B,T,f), dln; head dlogits (B,T,v), dln; each piece
 * rounded up to 64 floats (the attention kernels' row scratch lives in
 * g->scratch, not in work). */
int64_t oc_gpu_work_floats(const struct oc_gpt_dims *d);

/* The parts: gpt.h's, argument for argument. */
int oc_gpu_embed_fwd(struct oc_gpu *g, struct oc_gpt_call *c,
                     const struct oc_gpt_dims *d, const struct oc_params *p,
                     const int32_t *tokens, float *out);
int oc_gpu_embed_bwd(struct oc_gpu *g, struct oc_gpt_call *c,
                     const struct oc_gpt_dims *d, struct oc_params *p,
                     const int32_t *tokens, const float *dout);
int oc_gpu_attn_fwd(struct oc_gpu *g, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, const struct oc_params *p,
                    int64_t layer, struct oc_gpt_attn_act *a, float *out);
void oc_gpu_attn_scores(struct oc_gpu *g, const struct oc_gpt_dims *d,
                        struct oc_gpt_attn_act *a);
int oc_gpu_attn_bwd(struct oc_gpu *g, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, struct oc_params *p,
                    int64_t layer, const struct oc_gpt_attn_act *a,
                    const float *dout, float *din, float *work);
int oc_gpu_mlp_fwd(struct oc_gpu *g, struct oc_gpt_call *c,
                   const struct oc_gpt_dims *d, const struct oc_params *p,
                   int64_t layer, struct oc_gpt_mlp_act *a, float *out);
int oc_gpu_mlp_bwd(struct oc_gpu *g, struct oc_gpt_call *c,
                   const struct oc_gpt_dims *d, struct oc_params *p,
                   int64_t layer, const struct oc_gpt_mlp_act *a,
                   const float *dout, float *din, float *work);
int oc_gpu_head_fwd(struct oc_gpu *g, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, const struct oc_params *p,
                    struct oc_gpt_head_act *a, const int32_t *targets,
                    float *losses);
int oc_gpu_head_bwd(struct oc_gpu *g, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, struct oc_params *p,
                    const struct oc_gpt_head_act *a, const int32_t *targets,
                    float grad_scale, float *din, float *work);
/* params.c's oc_params_adamw over arena floats [begin, end) of p (device):
 * one kernel launch per run of tensors that share the decay flag; marks the
 * bf16 copy stale. */
void oc_gpu_adamw(struct oc_gpu *g, struct oc_params *p, const struct oc_adamw *h,
                  int64_t step, int64_t begin, int64_t end);

#endif
