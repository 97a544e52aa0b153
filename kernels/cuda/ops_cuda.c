/* ops_cuda.c: the cuda kernel table (see ops_cuda.h): each entry of
 * kernels/ops.h mapped onto its launcher in kernels.h (the CPU loop it
 * mirrors is the entry of the same name in kernels/cpu/ops_cpu.c), the
 * linear layers onto oc_cuda_matmul_fwd / oc_cuda_matmul_bwd with the
 * precision rules of ops_cuda.h. Host code only (C11, no nvcc pass).
 *
 * Everything is enqueued on x->stream, in the order of the calls: kernels,
 * GEMMs (the cuBLAS handle is set to that stream by each call), the bf16
 * casts, copies (cudaMemcpyAsync) and zeroing (cudaMemsetAsync).
 */
#include "ops_cuda.h"

#include <stdio.h>
#include <string.h>

#include "check.h"
#include "flash_attention.h"

#define ALIGN_FLOATS 64 /* 256 bytes, cudaMalloc's alignment */

_Static_assert(OC_CUDA_ROPE_MAX_PAIRS == OC_ROPE_MAX_PAIRS,
               "rope.cu's frequency table holds ops.h's largest");

static int64_t round_up(int64_t n)
{
    return (n + ALIGN_FLOATS - 1) / ALIGN_FLOATS * ALIGN_FLOATS;
}

static int64_t max2(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Floats holding n bf16 values. */
static int64_t bf16_floats(int64_t n)
{
    return (n + 1) / 2;
}

static struct oc_cuda_kernels *of(void *ctx)
{
    OC_ASSERT(ctx);
    return ctx;
}

/* st->msg without core's oc_fail (the kernels build alone, tools/device-
 * check.sh); -1. */
static int fail(struct oc_status *st, const char *what, int64_t bytes)
{
    if (st)
        snprintf(st->msg, sizeof st->msg,
                 "cuda: out of device memory for the %s (%.1f MiB)", what,
                 (double)bytes / (1024.0 * 1024.0));
    return -1;
}

/* cudaMalloc that reports running out of memory as a status (the caller
 * may try a smaller micro-batch) and any other failure as cudaCheck does. */
static int device_alloc(struct oc_cuda_kernels *x, void **ptr, int64_t bytes,
                        const char *what, struct oc_status *st)
{
    *ptr = NULL;
    cudaError_t e = cudaMalloc(ptr, (size_t)bytes);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError(); /* not sticky: clear it */
        *ptr = NULL;
        return fail(st, what, bytes);
    }
    cudaCheck(e);
    x->bytes += (double)bytes;
    if (x->bytes > x->bytes_high)
        x->bytes_high = x->bytes;
    return 0;
}

static void device_free(struct oc_cuda_kernels *x, void **ptr, int64_t bytes)
{
    if (!*ptr)
        return;
    cudaCheck(cudaFree(*ptr));
    *ptr = NULL;
    x->bytes -= (double)bytes;
}

/* ------------------------------------------------------------------ */
/* Set-up                                                               */

static int64_t scratch_floats(const struct oc_cuda_kernels *x)
{
    return x->k_floats + x->act_floats + x->grad_floats;
}

static int cu_reserve(void *ctx, const struct oc_kernel_sizes *s,
                      struct oc_status *st)
{
    struct oc_cuda_kernels *x = of(ctx);
    struct oc_kernel_sizes z = x->sizes; /* field-wise maximum */
    z.rows = max2(z.rows, s->rows);
    z.lin_in = max2(z.lin_in, s->lin_in);
    z.lin_out = max2(z.lin_out, s->lin_out);
    z.bias_out = max2(z.bias_out, s->bias_out);
    z.norm = max2(z.norm, s->norm);
    z.att_B = max2(z.att_B, s->att_B);
    z.att_T = max2(z.att_T, s->att_T);
    z.att_nh = max2(z.att_nh, s->att_nh);
    int64_t k = oc_cuda_layernorm_bwd_scratch_floats(z.norm);
    k = max2(k, oc_cuda_rmsnorm_bwd_scratch_floats(z.norm));
    k = max2(k, oc_cuda_attn_bwd_scratch_floats(z.att_B, z.att_T, z.att_nh));
    k = max2(k, oc_cuda_flash_attn_bwd_scratch_floats(z.att_B, z.att_T, z.att_nh));
    k = max2(k, oc_cuda_colsum_scratch_floats(z.bias_out));
    k = round_up(k);
    int64_t act = 0, grad = 0;
    if (x->dtype == OC_CUDA_BF16) {
        act = round_up(bf16_floats(z.rows * z.lin_in));
        grad = round_up(bf16_floats(z.rows * z.lin_out));
    }
    if (k == x->k_floats && act == x->act_floats && grad == x->grad_floats) {
        x->sizes = z;
        return 0;
    }
    device_free(x, (void **)&x->scratch, scratch_floats(x) * (int64_t)sizeof(float));
    x->k_floats = x->act_floats = x->grad_floats = 0;
    if (k + act + grad > 0 &&
        device_alloc(x, (void **)&x->scratch, (k + act + grad) * (int64_t)sizeof(float),
                     "GEMM casts and kernel scratch", st) != 0)
        return -1;
    x->sizes = z;
    x->k_floats = k;
    x->act_floats = act;
    x->grad_floats = grad;
    return 0;
}

static void cu_weights_changed(void *ctx)
{
    of(ctx)->wb_stale = 1;
}

void oc_cuda_kernels_init(struct oc_kernels *k, struct oc_cuda_kernels *x,
                          struct oc_cuda_blas *blas, cudaStream_t stream,
                          enum oc_cuda_dtype dtype)
{
    OC_ASSERT(k && x && blas);
    OC_ASSERT(dtype == OC_CUDA_F32 || dtype == OC_CUDA_BF16);
    memset(x, 0, sizeof *x);
    x->blas = blas;
    x->stream = stream;
    x->dtype = dtype;
    x->wb_stale = 1;
    k->ops = &oc_kernel_ops_cuda;
    k->ctx = x;
}

int oc_cuda_kernels_weights(struct oc_cuda_kernels *x, const float *w, int64_t n,
                            struct oc_status *st)
{
    OC_ASSERT(n >= 0 && (w || n == 0));
    device_free(x, (void **)&x->wb, x->wn * (int64_t)sizeof(oc_bf16));
    x->w = w;
    x->wn = w ? n : 0;
    x->wb_stale = 1;
    if (x->dtype == OC_CUDA_BF16 && x->wn > 0 &&
        device_alloc(x, (void **)&x->wb, x->wn * (int64_t)sizeof(oc_bf16),
                     "bf16 copy of the weights", st) != 0) {
        x->w = NULL;
        x->wn = 0;
        return -1;
    }
    return 0;
}

void oc_cuda_kernels_free(struct oc_cuda_kernels *x)
{
    if (!x)
        return;
    device_free(x, (void **)&x->scratch, scratch_floats(x) * (int64_t)sizeof(float));
    device_free(x, (void **)&x->wb, x->wn * (int64_t)sizeof(oc_bf16));
    memset(x, 0, sizeof *x);
}

/* ------------------------------------------------------------------ */
/* Scratch and operands                                                 */

/* The kernel scratch, for a call that needs n floats of it. */
static float *kscratch(const struct oc_cuda_kernels *x, int64_t n)
{
    OC_ASSERT(n <= x->k_floats); /* reserve was told less */
    return x->scratch;
}

/* The bf16 weights mirror the attached fp32 ones (before a GEMM reads
 * them): recast the whole copy after the weights changed. */
static void weights_ready(struct oc_cuda_kernels *x)
{
    if (!x->wb_stale)
        return;
    if (x->wb)
        oc_cuda_f32_to_bf16(x->wb, x->w, x->wn, x->stream);
    x->wb_stale = 0;
}

/* The GEMM operand of weight w (n floats): w itself in F32, else its
 * place in the bf16 copy (w must lie in the attached weights). */
static const void *weight(struct oc_cuda_kernels *x, const float *w, int64_t n)
{
    if (x->dtype == OC_CUDA_F32)
        return w;
    OC_ASSERT(x->wb && w >= x->w && w + n <= x->w + x->wn);
    weights_ready(x);
    return x->wb + (w - x->w);
}

enum region { ACT, GRAD };

/* The GEMM operand of activation or gradient v (n floats): v in F32, else
 * its bf16 cast in the region's scratch. */
static const void *operand(struct oc_cuda_kernels *x, enum region r, const float *v,
                           int64_t n)
{
    if (x->dtype == OC_CUDA_F32)
        return v;
    const int64_t off = x->k_floats + (r == GRAD ? x->act_floats : 0);
    OC_ASSERT(bf16_floats(n) <= (r == GRAD ? x->grad_floats : x->act_floats));
    oc_bf16 *dst = (oc_bf16 *)(x->scratch + off);
    oc_cuda_f32_to_bf16(dst, v, n, x->stream);
    return dst;
}

/* ------------------------------------------------------------------ */
/* Memory and linear layers                                             */

static void cu_copy(void *ctx, float *dst, const float *src, int64_t n)
{
    struct oc_cuda_kernels *x = of(ctx);
    OC_ASSERT(n >= 0);
    if (n == 0 || dst == src)
        return;
    cudaCheck(cudaMemcpyAsync(dst, src, (size_t)n * sizeof *dst,
                              cudaMemcpyDeviceToDevice, x->stream));
}

static void cu_zero(void *ctx, float *p, int64_t n)
{
    struct oc_cuda_kernels *x = of(ctx);
    OC_ASSERT(n >= 0);
    if (n > 0)
        cudaCheck(cudaMemsetAsync(p, 0, (size_t)n * sizeof *p, x->stream));
}

static void cu_linear_fwd(void *ctx, float *out, const float *inp, const float *w,
                          const float *bias, int64_t N, int64_t IC, int64_t OC)
{
    struct oc_cuda_kernels *x = of(ctx);
    const void *wo = weight(x, w, OC * IC);
    const void *a = operand(x, ACT, inp, N * IC);
    oc_cuda_matmul_fwd(x->blas, out, a, wo, bias, N, IC, OC, x->dtype, x->stream);
}

/* dinp and dw from the GEMM operands; dbias from the fp32 dout. */
static void cu_linear_bwd(void *ctx, float *dinp, float *dw, float *dbias,
                          const float *dout, const float *inp, const float *w,
                          int64_t N, int64_t IC, int64_t OC)
{
    struct oc_cuda_kernels *x = of(ctx);
    const void *wo = weight(x, w, OC * IC);
    const void *db = operand(x, GRAD, dout, N * OC);
    const void *a = operand(x, ACT, inp, N * IC);
    oc_cuda_matmul_bwd(x->blas, dinp, dw, NULL, db, a, wo, N, IC, OC, x->dtype, NULL,
                       x->stream);
    if (dbias)
        oc_cuda_bias_bwd(dbias, dout, OC_CUDA_F32, N, OC,
                         kscratch(x, oc_cuda_colsum_scratch_floats(OC)), x->stream);
}

/* ------------------------------------------------------------------ */
/* The other kernels: their launchers on the stream                     */

static void cu_layernorm_fwd(void *ctx, float *out, float *mean, float *rstd,
                             const float *inp, const float *w, const float *b,
                             int64_t N, int64_t C)
{
    oc_cuda_layernorm_fwd(out, mean, rstd, inp, w, b, N, C, of(ctx)->stream);
}

static void cu_layernorm_bwd(void *ctx, float *dinp, float *dw, float *db,
                             const float *dout, const float *inp, const float *w,
                             const float *mean, const float *rstd, int64_t N,
                             int64_t C)
{
    struct oc_cuda_kernels *x = of(ctx);
    oc_cuda_layernorm_bwd(dinp, dw, db, dout, inp, w, mean, rstd, N, C,
                          kscratch(x, oc_cuda_layernorm_bwd_scratch_floats(C)),
                          x->stream);
}

static void cu_rmsnorm_fwd(void *ctx, float *out, float *rstd, const float *inp,
                           const float *w, int64_t N, int64_t C, float eps)
{
    oc_cuda_rmsnorm_fwd(out, rstd, inp, w, N, C, eps, of(ctx)->stream);
}

static void cu_rmsnorm_bwd(void *ctx, float *dinp, float *dw, const float *dout,
                           const float *inp, const float *w, const float *rstd,
                           int64_t N, int64_t C)
{
    struct oc_cuda_kernels *x = of(ctx);
    oc_cuda_rmsnorm_bwd(dinp, dw, dout, inp, w, rstd, N, C,
                        kscratch(x, oc_cuda_rmsnorm_bwd_scratch_floats(C)), x->stream);
}

static void cu_gelu_fwd(void *ctx, float *out, const float *inp, int64_t n)
{
    oc_cuda_gelu_fwd(out, inp, n, of(ctx)->stream);
}

static void cu_gelu_bwd(void *ctx, float *d, const float *inp, int64_t n)
{
    oc_cuda_gelu_bwd(d, inp, n, of(ctx)->stream);
}

static void cu_swiglu_fwd(void *ctx, float *out, const float *h, int64_t N,
                          int64_t f)
{
    oc_cuda_swiglu_fwd(out, h, N, f, of(ctx)->stream);
}

static void cu_swiglu_bwd(void *ctx, float *dh, const float *dout, const float *h,
                          int64_t N, int64_t f)
{
    oc_cuda_swiglu_bwd(dh, dout, h, N, f, of(ctx)->stream);
}

/* The frequencies are the model's (host memory), passed by value. */
static void cu_rope_fwd(void *ctx, float *qkv, const struct oc_rope *r, int64_t B,
                        int64_t T, int64_t nh, int64_t nkv, int64_t HS)
{
    oc_cuda_rope(qkv, r->inv_freq, r->pairs, B, T, nh, nkv, HS, 0, of(ctx)->stream);
}

static void cu_rope_bwd(void *ctx, float *dqkv, const struct oc_rope *r, int64_t B,
                        int64_t T, int64_t nh, int64_t nkv, int64_t HS)
{
    oc_cuda_rope(dqkv, r->inv_freq, r->pairs, B, T, nh, nkv, HS, 1, of(ctx)->stream);
}

static void cu_attn_fwd(void *ctx, float *att, float *y, const float *qkv,
                        int64_t B, int64_t T, int64_t nh, int64_t nkv, int64_t HS)
{
    oc_cuda_attn_fwd(att, y, qkv, B, T, nh, nkv, HS, of(ctx)->stream);
}

static void cu_attn_bwd(void *ctx, float *dqkv, const float *att, const float *qkv,
                        const float *dy, int64_t B, int64_t T, int64_t nh,
                        int64_t nkv, int64_t HS)
{
    struct oc_cuda_kernels *x = of(ctx);
    oc_cuda_attn_bwd(dqkv, att, qkv, dy, B, T, nh, nkv, HS,
                     kscratch(x, oc_cuda_attn_bwd_scratch_floats(B, T, nh)), x->stream);
}

/* Fused attention: bf16 operands when the table runs in bf16 (ops_cuda.h). */
static void cu_flash_attn_fwd(void *ctx, float *y, float *lse, const float *qkv,
                              int64_t B, int64_t T, int64_t nh, int64_t nkv,
                              int64_t HS)
{
    struct oc_cuda_kernels *x = of(ctx);
    oc_cuda_flash_attn_fwd(y, lse, qkv, B, T, nh, nkv, HS, x->dtype, x->stream);
}

static void cu_flash_attn_bwd(void *ctx, float *dqkv, const float *qkv,
                              const float *y, const float *lse, const float *dy,
                              int64_t B, int64_t T, int64_t nh, int64_t nkv,
                              int64_t HS)
{
    struct oc_cuda_kernels *x = of(ctx);
    oc_cuda_flash_attn_bwd(dqkv, qkv, y, lse, dy, B, T, nh, nkv, HS, x->dtype,
                           kscratch(x, oc_cuda_flash_attn_bwd_scratch_floats(B, T, nh)),
                           x->stream);
}

static void cu_add_bias_residual(void *ctx, float *out, const float *bias,
                                 const float *res, int64_t N, int64_t C)
{
    oc_cuda_add_bias_residual(out, bias, res, N, C, of(ctx)->stream);
}

static void cu_embed_fwd(void *ctx, float *out, const int32_t *tokens,
                         const float *wte, int64_t N, int64_t C, int64_t V,
                         int64_t v0, int64_t v)
{
    oc_cuda_embed_fwd(out, tokens, wte, N, C, V, v0, v, of(ctx)->stream);
}

static void cu_pos_fwd(void *ctx, float *out, const float *wpe, int64_t N,
                       int64_t T, int64_t C)
{
    oc_cuda_pos_fwd(out, wpe, N, T, C, of(ctx)->stream);
}

static void cu_embed_bwd(void *ctx, float *dwte, float *dwpe, const int32_t *tokens,
                         const float *dout, int64_t B, int64_t T, int64_t C,
                         int64_t V, int64_t v0, int64_t v)
{
    oc_cuda_embed_bwd(dwte, dwpe, tokens, dout, B, T, C, V, v0, v, of(ctx)->stream);
}

static void cu_ce_max(void *ctx, float *lmax, const float *logits, int64_t N,
                      int64_t v)
{
    oc_cuda_ce_max(lmax, logits, N, v, of(ctx)->stream);
}

static void cu_ce_exp(void *ctx, float *logits, float *sumexp, float *tlogit,
                      const float *lmax, const int32_t *targets, int64_t N,
                      int64_t v, int64_t v0, int64_t V)
{
    oc_cuda_ce_exp(logits, sumexp, tlogit, lmax, targets, N, v, v0, V,
                   of(ctx)->stream);
}

static void cu_ce_finish(void *ctx, float *losses, float *probs,
                         const float *sumexp, const float *tlogit, int64_t N,
                         int64_t v)
{
    oc_cuda_ce_finish(losses, probs, sumexp, tlogit, N, v, of(ctx)->stream);
}

static void cu_ce_bwd(void *ctx, float *dlogits, const float *probs,
                      const int32_t *targets, float grad_scale, int64_t N,
                      int64_t v, int64_t v0)
{
    oc_cuda_ce_bwd(dlogits, probs, targets, grad_scale, N, v, v0, of(ctx)->stream);
}

/* AdamW writes the fp32 weights: the bf16 copy is stale after it. */
static void cu_adamw(void *ctx, float *w, const float *g, float *m, float *v,
                     int64_t n, const struct oc_adamw *h, int decay, int64_t step)
{
    struct oc_cuda_kernels *x = of(ctx);
    oc_cuda_adamw(w, g, m, v, n, h->lr, h->beta1, h->beta2, h->eps, h->weight_decay,
                  decay, step, x->stream);
    x->wb_stale = 1;
}

const struct oc_kernel_ops oc_kernel_ops_cuda = {
    .align_floats = ALIGN_FLOATS,
    .reserve = cu_reserve,
    .weights_changed = cu_weights_changed,
    .copy = cu_copy,
    .zero = cu_zero,
    .linear_fwd = cu_linear_fwd,
    .linear_bwd = cu_linear_bwd,
    .layernorm_fwd = cu_layernorm_fwd,
    .layernorm_bwd = cu_layernorm_bwd,
    .rmsnorm_fwd = cu_rmsnorm_fwd,
    .rmsnorm_bwd = cu_rmsnorm_bwd,
    .gelu_fwd = cu_gelu_fwd,
    .gelu_bwd = cu_gelu_bwd,
    .swiglu_fwd = cu_swiglu_fwd,
    .swiglu_bwd = cu_swiglu_bwd,
    .rope_fwd = cu_rope_fwd,
    .rope_bwd = cu_rope_bwd,
    .attn_fwd = cu_attn_fwd,
    .attn_bwd = cu_attn_bwd,
    .flash_attn_fwd = cu_flash_attn_fwd,
    .flash_attn_bwd = cu_flash_attn_bwd,
    .add_bias_residual = cu_add_bias_residual,
    .embed_fwd = cu_embed_fwd,
    .pos_fwd = cu_pos_fwd,
    .embed_bwd = cu_embed_bwd,
    .ce_max = cu_ce_max,
    .ce_exp = cu_ce_exp,
    .ce_finish = cu_ce_finish,
    .ce_bwd = cu_ce_bwd,
    .adamw = cu_adamw,
};
