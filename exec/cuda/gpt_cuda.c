/* gpt_cuda.c: exec/gpt.c's parts on one GPU (see gpt_cuda.h): the same
 * model, tensor-parallel shards and step-mode protocol, with every loop of
 * gpt.c replaced by the launcher of kernels.h that mirrors it
 * (kernels/reference.c names which loop each kernel is) and every
 * cblas_sgemm by oc_cuda_matmul_fwd / oc_cuda_matmul_bwd.
 *
 * Each part is the same state machine as its gpt.c twin (`switch
 * (c->step)`, one case per stretch of local work between the TP
 * all-reduces), so a part asks for the same all-reduces, in the same order,
 * with the same n and op; only c->buf is a device pointer. Everything is
 * enqueued on g->stream: kernels and GEMMs, the residual copy
 * (cudaMemcpyAsync) and the head's zeroing (cudaMemsetAsync). Nothing here
 * synchronises or allocates: the bf16 weights and the scratch come from
 * oc_gpu_init.
 *
 * BF16 (Micikevicius et al. 2018, mixed precision; Megatron-LM's bf16
 * path): a GEMM's operands are bf16 and it accumulates and returns fp32.
 * Weights come from g->wb, the bf16 copy of the whole arena, recast from
 * p->w at the start of the first part that runs a GEMM after the weights
 * changed (g->wb_stale). Activations (forward inputs) and output gradients
 * (backward douts) are cast into g->scratch just before the GEMM that reads
 * them. Bias gradients are column sums of the fp32 dout (not of its bf16
 * cast), and everything that is not a GEMM stays fp32.
 *
 * Scratch (g->scratch, offsets 256-byte aligned):
 *   k     kernel scratch: the largest of oc_cuda_layernorm_bwd_scratch_
 *         floats(C), oc_cuda_attn_bwd_scratch_floats(B,T,nh) and
 *         oc_cuda_colsum_scratch_floats(largest bias: 3C/t, C or f)
 *   act   BF16 only: bf16 cast of a GEMM's activation operand, N * max(C,
 *         C/t, f) values (ln, y, hg: the inputs of the forward GEMMs and
 *         of the weight gradients)
 *   grad  BF16 only: bf16 cast of a backward GEMM's dout, N * max(C, 3C/t,
 *         f, v) values (the projections' dout, dqkv, dh, dlogits)
 * A region is reused by the next GEMM of the part: the stream orders the
 * cast after the previous reader.
 *
 * What this file is not: a runner (backend_cuda.c), a communicator, or a
 * place that decides precision per layer.
 */
#include "gpt_cuda.h"

#include <string.h>

#include "check.h"

/* The part ids of gpt.c, so that a call struct resumed with the wrong
 * function asserts the same way. */
enum {
    PART_EMBED_FWD = 1,
    PART_EMBED_BWD,
    PART_ATTN_FWD,
    PART_ATTN_BWD,
    PART_MLP_FWD,
    PART_MLP_BWD,
    PART_HEAD_FWD,
    PART_HEAD_BWD,
};

/* ------------------------------------------------------------------ */
/* Sizes                                                                */

#define ALIGN_FLOATS 64 /* 256 bytes, cudaMalloc's alignment */

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

/* Where the scratch regions of one part call lie (see the file header). */
struct scratch_map {
    float *k;
    oc_bf16 *act;  /* NULL in F32 */
    oc_bf16 *grad; /* NULL in F32 */
};

static int64_t kernel_scratch_floats(const struct oc_gpt_dims *d)
{
    const int64_t cl = d->nh * d->HS;
    int64_t widest_bias = max2(max2(3 * cl, d->C), d->f);
    int64_t k = oc_cuda_layernorm_bwd_scratch_floats(d->C);
    k = max2(k, oc_cuda_attn_bwd_scratch_floats(d->B, d->T, d->nh));
    k = max2(k, oc_cuda_colsum_scratch_floats(widest_bias));
    return round_up(k);
}

static int64_t act_cast_floats(const struct oc_gpt_dims *d)
{
    const int64_t N = d->B * d->T, cl = d->nh * d->HS;
    return round_up(bf16_floats(N * max2(max2(d->C, cl), d->f)));
}

static int64_t grad_cast_floats(const struct oc_gpt_dims *d)
{
    const int64_t N = d->B * d->T, cl = d->nh * d->HS;
    return round_up(bf16_floats(N * max2(max2(d->C, 3 * cl), max2(d->f, d->v))));
}

static int64_t scratch_floats(const struct oc_gpt_dims *d, enum oc_cuda_dtype t)
{
    int64_t n = kernel_scratch_floats(d);
    if (t == OC_CUDA_BF16)
        n += act_cast_floats(d) + grad_cast_floats(d);
    return n;
}

/* The scratch of a part of dims d: no larger than the dims of init. */
static struct scratch_map scratch_of(const struct oc_gpu *g,
                                     const struct oc_gpt_dims *d)
{
    OC_ASSERT(scratch_floats(d, g->dtype) <= g->scratch_floats);
    struct scratch_map s = {g->scratch, NULL, NULL};
    if (g->dtype == OC_CUDA_BF16) {
        s.act = (oc_bf16 *)(g->scratch + kernel_scratch_floats(d));
        s.grad = (oc_bf16 *)(g->scratch + kernel_scratch_floats(d) +
                             act_cast_floats(d));
    }
    return s;
}

/* work of the backward parts, each piece from a 256-byte boundary of work:
 * attention dy (N,C/t), dqkv (N,3C/t), dln (N,C); MLP dh (N,f), dln
 * (N,C); head dlogits (N,v), dln (N,C). gpt.c's 2*T floats of attention
 * row scratch are not needed (the attention kernels take theirs from
 * g->scratch). */
int64_t oc_gpu_work_floats(const struct oc_gpt_dims *d)
{
    const int64_t N = d->B * d->T, C = d->C, cl = d->nh * d->HS;
    int64_t attn = round_up(N * cl) + round_up(N * 3 * cl) + round_up(N * C);
    int64_t mlp = round_up(N * d->f) + round_up(N * C);
    int64_t head = round_up(N * d->v) + round_up(N * C);
    return max2(max2(attn, mlp), head);
}

/* ------------------------------------------------------------------ */
/* Context                                                              */

/* cudaMalloc that reports running out of memory as a status (the caller
 * may try a smaller micro-batch) and any other failure as cudaCheck does. */
static int device_alloc(void **ptr, int64_t bytes, const char *what,
                        struct oc_status *st)
{
    *ptr = NULL;
    cudaError_t e = cudaMalloc(ptr, (size_t)bytes);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError(); /* not sticky: clear it */
        *ptr = NULL;
        return oc_fail(st, "cuda: out of device memory for the %s (%.1f MiB)",
                       what, (double)bytes / (1024.0 * 1024.0));
    }
    cudaCheck(e);
    return 0;
}

int oc_gpu_init(struct oc_gpu *g, struct oc_cuda_blas *blas, cudaStream_t stream,
                enum oc_cuda_dtype dtype, const struct oc_params *p,
                const struct oc_gpt_dims *d, struct oc_status *st)
{
    memset(g, 0, sizeof *g);
    OC_ASSERT(blas && p && d && d->B >= 1 && d->T >= 1);
    OC_ASSERT(dtype == OC_CUDA_F32 || dtype == OC_CUDA_BF16);
    g->blas = blas;
    g->stream = stream;
    g->dtype = dtype;
    g->p = p;
    g->wb_stale = 1;
    if (dtype == OC_CUDA_BF16 && p->n > 0 &&
        device_alloc((void **)&g->wb, p->n * (int64_t)sizeof(oc_bf16),
                     "bf16 copy of the weights", st) != 0) {
        oc_gpu_free(g);
        return -1;
    }
    g->scratch_floats = scratch_floats(d, dtype);
    if (device_alloc((void **)&g->scratch,
                     g->scratch_floats * (int64_t)sizeof(float),
                     "GEMM casts and kernel scratch", st) != 0) {
        oc_gpu_free(g);
        return -1;
    }
    return 0;
}

void oc_gpu_free(struct oc_gpu *g)
{
    if (!g)
        return;
    if (g->scratch)
        cudaCheck(cudaFree(g->scratch));
    if (g->wb)
        cudaCheck(cudaFree(g->wb));
    memset(g, 0, sizeof *g);
}

void oc_gpu_weights_changed(struct oc_gpu *g)
{
    g->wb_stale = 1;
}

/* Before a part's first GEMM: the bf16 weights mirror p->w. */
static void weights_ready(struct oc_gpu *g, const struct oc_params *p)
{
    OC_ASSERT(p->w == g->p->w && p->n == g->p->n); /* the arena of init */
    if (g->dtype != OC_CUDA_BF16 || !g->wb_stale)
        return;
    if (p->n > 0)
        oc_cuda_f32_to_bf16(g->wb, p->w, p->n, g->stream);
    g->wb_stale = 0;
}

/* The GEMM operand of weight (k, layer): p->w's in F32, else wb's. */
static const void *weight(const struct oc_gpu *g, const struct oc_params *p,
                          enum oc_param_kind k, int64_t layer)
{
    const float *w = oc_params_w(p, k, layer);
    if (g->dtype == OC_CUDA_F32)
        return w;
    return g->wb + (w - p->w);
}

/* The GEMM operand of activation x (n floats): x in F32, else its bf16
 * cast in dst. */
static const void *operand(const struct oc_gpu *g, oc_bf16 *dst, const float *x,
                           int64_t n)
{
    if (g->dtype == OC_CUDA_F32)
        return x;
    oc_cuda_f32_to_bf16(dst, x, n, g->stream);
    return dst;
}

/* gpt.c's matmul_fwd: out (N,OC) = inp (N,IC) @ w^T + bias. */
static void linear_fwd(struct oc_gpu *g, const struct scratch_map *s, float *out,
                       const float *inp, const void *w, const float *bias,
                       int64_t N, int64_t IC, int64_t OC)
{
    const void *a = operand(g, s->act, inp, N * IC);
    oc_cuda_matmul_fwd(g->blas, out, a, w, bias, N, IC, OC, g->dtype, g->stream);
}

/* gpt.c's matmul_bwd: dinp (N,IC) = dout @ w (written); dw += dout^T @
 * inp; dbias += column sums of the fp32 dout. */
static void linear_bwd(struct oc_gpu *g, const struct scratch_map *s,
                       float *dinp, float *dw, float *dbias, const float *dout,
                       const float *inp, const void *w, int64_t N, int64_t IC,
                       int64_t OC)
{
    const void *db = operand(g, s->grad, dout, N * OC);
    const void *a = operand(g, s->act, inp, N * IC);
    oc_cuda_matmul_bwd(g->blas, dinp, dw, NULL, db, a, w, N, IC, OC, g->dtype,
                       NULL, g->stream);
    if (dbias)
        oc_cuda_bias_bwd(dbias, dout, OC_CUDA_F32, N, OC, s->k, g->stream);
}

static void check_dims(const struct oc_gpt_dims *d, const struct oc_params *p)
{
    OC_ASSERT(d->tp == p->tp && d->tp_rank == p->tp_rank);
    OC_ASSERT(d->B >= 1 && d->T >= 1 && d->T <= d->P);
}

/* ------------------------------------------------------------------ */
/* Calls (gpt.c's protocol, repeated: its helpers are static)           */

static void call_begin(struct oc_gpt_call *c, int part)
{
    if (c->step == 0) {
        c->part = part;
        c->nreduce = 0;
    } else {
        OC_ASSERT(c->part == part); /* resumed with another part's function */
    }
}

static int call_done(struct oc_gpt_call *c)
{
    c->step = 0;
    c->buf = NULL;
    c->n = 0;
    return OC_GPT_DONE;
}

/* Ask for an all-reduce of device buffer b[0..cnt) and resume at case
 * `next`: in step mode return to the caller, in callback mode do it here
 * and go on. */
#define REDUCE(c, next, b, cnt, o)                                             \
    do {                                                                       \
        (c)->step = (next);                                                    \
        (c)->buf = (b);                                                        \
        (c)->n = (cnt);                                                        \
        (c)->op = (o);                                                         \
        (c)->nreduce++;                                                        \
        if (!(c)->comm)                                                        \
            return OC_GPT_REDUCE;                                              \
        if ((c)->comm->allreduce((c)->comm->ctx, (b), (cnt), (o)) != 0) {      \
            (c)->step = 0;                                                     \
            return -1;                                                         \
        }                                                                      \
    } while (0)

/* ------------------------------------------------------------------ */
/* Embedding                                                            */

int oc_gpu_embed_fwd(struct oc_gpu *g, struct oc_gpt_call *c,
                     const struct oc_gpt_dims *d, const struct oc_params *p,
                     const int32_t *tokens, float *out)
{
    call_begin(c, PART_EMBED_FWD);
    check_dims(d, p);
    const int64_t N = d->B * d->T, C = d->C;
    const float *wte = oc_params_w(p, OC_P_WTE, -1); /* (v, C) */
    const float *wpe = oc_params_w(p, OC_P_WPE, -1); /* (P, C) */
    switch (c->step) {
    case 0:
        /* VocabParallelEmbedding: rows of other ranks' tokens are zero */
        oc_cuda_embed_fwd(out, tokens, wte, N, C, d->V, d->v0, d->v, g->stream);
        if (d->tp > 1)
            REDUCE(c, 1, out, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        oc_cuda_pos_fwd(out, wpe, N, d->T, C, g->stream); /* replicated */
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

int oc_gpu_embed_bwd(struct oc_gpu *g, struct oc_gpt_call *c,
                     const struct oc_gpt_dims *d, struct oc_params *p,
                     const int32_t *tokens, const float *dout)
{
    call_begin(c, PART_EMBED_BWD);
    OC_ASSERT(c->step == 0);
    check_dims(d, p);
    oc_cuda_embed_bwd(oc_params_g(p, OC_P_WTE, -1), oc_params_g(p, OC_P_WPE, -1),
                      tokens, dout, d->B, d->T, d->C, d->V, d->v0, d->v,
                      g->stream);
    return call_done(c);
}

/* ------------------------------------------------------------------ */
/* Attention                                                            */

void oc_gpu_attn_scores(struct oc_gpu *g, const struct oc_gpt_dims *d,
                        struct oc_gpt_attn_act *a)
{
    oc_cuda_attn_fwd(a->att, NULL, a->qkv, d->B, d->T, d->nh, d->HS, g->stream);
}

int oc_gpu_attn_fwd(struct oc_gpu *g, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, const struct oc_params *p,
                    int64_t layer, struct oc_gpt_attn_act *a, float *out)
{
    call_begin(c, PART_ATTN_FWD);
    check_dims(d, p);
    OC_ASSERT(out != a->in);
    const int64_t N = d->B * d->T, C = d->C;
    const int64_t cl = d->nh * d->HS; /* C/t */
    const struct scratch_map s = scratch_of(g, d);
    switch (c->step) {
    case 0:
        weights_ready(g, p);
        oc_cuda_layernorm_fwd(a->ln, a->mean, a->rstd, a->in,
                              oc_params_w(p, OC_P_LN1W, layer),
                              oc_params_w(p, OC_P_LN1B, layer), N, C, g->stream);
        /* column-parallel QKV: the local heads only */
        linear_fwd(g, &s, a->qkv, a->ln, weight(g, p, OC_P_QKVW, layer),
                   oc_params_w(p, OC_P_QKVB, layer), N, C, 3 * cl);
        oc_cuda_attn_fwd(a->att, a->y, a->qkv, d->B, d->T, d->nh, d->HS,
                         g->stream);
        /* row-parallel projection: a partial sum over the local heads */
        linear_fwd(g, &s, out, a->y, weight(g, p, OC_P_ATTPROJW, layer), NULL,
                   N, cl, C);
        if (d->tp > 1)
            REDUCE(c, 1, out, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        /* RowParallelLinear's bias after the all-reduce, then the residual */
        oc_cuda_add_bias_residual(out, oc_params_w(p, OC_P_ATTPROJB, layer),
                                  a->in, N, C, g->stream);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

int oc_gpu_attn_bwd(struct oc_gpu *g, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, struct oc_params *p,
                    int64_t layer, const struct oc_gpt_attn_act *a,
                    const float *dout, float *din, float *work)
{
    call_begin(c, PART_ATTN_BWD);
    check_dims(d, p);
    const int64_t N = d->B * d->T, C = d->C;
    const int64_t cl = d->nh * d->HS;             /* C/t */
    float *dy = work;                             /* (N, C/t) */
    float *dqkv = dy + round_up(N * cl);          /* (N, 3C/t) */
    float *dln = dqkv + round_up(N * 3 * cl);     /* (N, C) */
    const struct scratch_map s = scratch_of(g, d);
    switch (c->step) {
    case 0:
        weights_ready(g, p);
        /* projection: dy = dout @ projw; dprojw += dout^T y; dprojb +=
         * sum(dout), the same on every TP rank (replicated bias) */
        linear_bwd(g, &s, dy, oc_params_g(p, OC_P_ATTPROJW, layer),
                   oc_params_g(p, OC_P_ATTPROJB, layer), dout, a->y,
                   weight(g, p, OC_P_ATTPROJW, layer), N, cl, C);
        oc_cuda_attn_bwd(dqkv, a->att, a->qkv, dy, d->B, d->T, d->nh, d->HS,
                         s.k, g->stream);
        /* column-parallel QKV: its input gradient is a partial sum over the
         * local heads (Megatron-LM's f operator: all-reduce in backward) */
        linear_bwd(g, &s, dln, oc_params_g(p, OC_P_QKVW, layer),
                   oc_params_g(p, OC_P_QKVB, layer), dqkv, a->ln,
                   weight(g, p, OC_P_QKVW, layer), N, C, 3 * cl);
        if (d->tp > 1)
            REDUCE(c, 1, dln, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        if (din != dout) /* the residual */
            cudaCheck(cudaMemcpyAsync(din, dout, (size_t)(N * C) * sizeof *din,
                                      cudaMemcpyDeviceToDevice, g->stream));
        oc_cuda_layernorm_bwd(din, oc_params_g(p, OC_P_LN1W, layer),
                              oc_params_g(p, OC_P_LN1B, layer), dln, a->in,
                              oc_params_w(p, OC_P_LN1W, layer), a->mean,
                              a->rstd, N, C, s.k, g->stream);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

/* ------------------------------------------------------------------ */
/* MLP                                                                  */

int oc_gpu_mlp_fwd(struct oc_gpu *g, struct oc_gpt_call *c,
                   const struct oc_gpt_dims *d, const struct oc_params *p,
                   int64_t layer, struct oc_gpt_mlp_act *a, float *out)
{
    call_begin(c, PART_MLP_FWD);
    check_dims(d, p);
    OC_ASSERT(out != a->in);
    const int64_t N = d->B * d->T, C = d->C, f = d->f;
    const struct scratch_map s = scratch_of(g, d);
    switch (c->step) {
    case 0:
        weights_ready(g, p);
        oc_cuda_layernorm_fwd(a->ln, a->mean, a->rstd, a->in,
                              oc_params_w(p, OC_P_LN2W, layer),
                              oc_params_w(p, OC_P_LN2B, layer), N, C, g->stream);
        linear_fwd(g, &s, a->h, a->ln, weight(g, p, OC_P_FCW, layer),
                   oc_params_w(p, OC_P_FCB, layer), N, C, f); /* column-parallel */
        oc_cuda_gelu_fwd(a->hg, a->h, N * f, g->stream);
        linear_fwd(g, &s, out, a->hg, weight(g, p, OC_P_FCPROJW, layer), NULL,
                   N, f, C); /* row-parallel */
        if (d->tp > 1)
            REDUCE(c, 1, out, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        oc_cuda_add_bias_residual(out, oc_params_w(p, OC_P_FCPROJB, layer),
                                  a->in, N, C, g->stream);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

int oc_gpu_mlp_bwd(struct oc_gpu *g, struct oc_gpt_call *c,
                   const struct oc_gpt_dims *d, struct oc_params *p,
                   int64_t layer, const struct oc_gpt_mlp_act *a,
                   const float *dout, float *din, float *work)
{
    call_begin(c, PART_MLP_BWD);
    check_dims(d, p);
    const int64_t N = d->B * d->T, C = d->C, f = d->f;
    float *dh = work;                /* (N, f): d(hg), then d(h) in place */
    float *dln = dh + round_up(N * f); /* (N, C) */
    const struct scratch_map s = scratch_of(g, d);
    switch (c->step) {
    case 0:
        weights_ready(g, p);
        linear_bwd(g, &s, dh, oc_params_g(p, OC_P_FCPROJW, layer),
                   oc_params_g(p, OC_P_FCPROJB, layer), dout, a->hg,
                   weight(g, p, OC_P_FCPROJW, layer), N, f, C);
        oc_cuda_gelu_bwd(dh, a->h, N * f, g->stream);
        linear_bwd(g, &s, dln, oc_params_g(p, OC_P_FCW, layer),
                   oc_params_g(p, OC_P_FCB, layer), dh, a->ln,
                   weight(g, p, OC_P_FCW, layer), N, C, f);
        if (d->tp > 1)
            REDUCE(c, 1, dln, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        if (din != dout)
            cudaCheck(cudaMemcpyAsync(din, dout, (size_t)(N * C) * sizeof *din,
                                      cudaMemcpyDeviceToDevice, g->stream));
        oc_cuda_layernorm_bwd(din, oc_params_g(p, OC_P_LN2W, layer),
                              oc_params_g(p, OC_P_LN2B, layer), dln, a->in,
                              oc_params_w(p, OC_P_LN2W, layer), a->mean,
                              a->rstd, N, C, s.k, g->stream);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

/* ------------------------------------------------------------------ */
/* Head: final norm, LM head, vocab-parallel cross-entropy              */

int oc_gpu_head_fwd(struct oc_gpu *g, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, const struct oc_params *p,
                    struct oc_gpt_head_act *a, const int32_t *targets,
                    float *losses)
{
    call_begin(c, PART_HEAD_FWD);
    check_dims(d, p);
    const int64_t N = d->B * d->T, C = d->C, v = d->v;
    const struct scratch_map s = scratch_of(g, d);
    switch (c->step) {
    case 0:
        weights_ready(g, p);
        oc_cuda_layernorm_fwd(a->ln, a->mean, a->rstd, a->in,
                              oc_params_w(p, OC_P_LNFW, -1),
                              oc_params_w(p, OC_P_LNFB, -1), N, C, g->stream);
        /* column-parallel LM head; OC_P_LMW is wte where the stage holds
         * both (tied embeddings, params.h) */
        linear_fwd(g, &s, a->probs, a->ln, weight(g, p, OC_P_LMW, -1), NULL, N,
                   C, v);
        oc_cuda_ce_max(a->lmax, a->probs, N, v, g->stream);
        /* Megatron-LM tensor_parallel/cross_entropy.py: the max over the
         * whole vocabulary, */
        if (d->tp > 1)
            REDUCE(c, 1, a->lmax, N, OC_GPT_MAX);
        /* fallthrough */
    case 1:
        oc_cuda_ce_exp(a->probs, a->sumexp, a->tlogit, a->lmax, targets, N, v,
                       d->v0, d->V, g->stream);
        /* the target's logit (held by one rank), */
        if (d->tp > 1)
            REDUCE(c, 2, a->tlogit, N, OC_GPT_SUM);
        /* fallthrough */
    case 2:
        /* and the sum of exponentials. */
        if (d->tp > 1)
            REDUCE(c, 3, a->sumexp, N, OC_GPT_SUM);
        /* fallthrough */
    case 3:
        oc_cuda_ce_finish(losses, a->probs, a->sumexp, a->tlogit, N, v,
                          g->stream);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

int oc_gpu_head_bwd(struct oc_gpu *g, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, struct oc_params *p,
                    const struct oc_gpt_head_act *a, const int32_t *targets,
                    float grad_scale, float *din, float *work)
{
    call_begin(c, PART_HEAD_BWD);
    check_dims(d, p);
    const int64_t N = d->B * d->T, C = d->C, v = d->v;
    float *dlogits = work;                   /* (N, v) */
    float *dln = dlogits + round_up(N * v);  /* (N, C) */
    const struct scratch_map s = scratch_of(g, d);
    switch (c->step) {
    case 0:
        weights_ready(g, p);
        /* d loss / d logit = softmax - onehot(target) (Bishop 2006, eq.
         * 4.109), scaled */
        oc_cuda_ce_bwd(dlogits, a->probs, targets, grad_scale, N, v, d->v0,
                       g->stream);
        linear_bwd(g, &s, dln, oc_params_g(p, OC_P_LMW, -1), NULL, dlogits,
                   a->ln, weight(g, p, OC_P_LMW, -1), N, C, v);
        /* column-parallel LM head: input gradient summed over the vocab
         * shards */
        if (d->tp > 1)
            REDUCE(c, 1, dln, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        cudaCheck(cudaMemsetAsync(din, 0, (size_t)(N * C) * sizeof *din,
                                  g->stream));
        oc_cuda_layernorm_bwd(din, oc_params_g(p, OC_P_LNFW, -1),
                              oc_params_g(p, OC_P_LNFB, -1), dln, a->in,
                              oc_params_w(p, OC_P_LNFW, -1), a->mean, a->rstd,
                              N, C, s.k, g->stream);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

/* ------------------------------------------------------------------ */
/* AdamW                                                                */

static void adamw_run(struct oc_gpu *g, struct oc_params *p,
                      const struct oc_adamw *h, int64_t step, int64_t lo,
                      int64_t hi, int decay)
{
    if (hi <= lo)
        return;
    oc_cuda_adamw(p->w + lo, p->g + lo, p->m + lo, p->v + lo, hi - lo, h->lr,
                  h->beta1, h->beta2, h->eps, h->weight_decay, decay, step,
                  g->stream);
}

/* params.c's oc_params_adamw: each tensor's part inside [begin, end), with
 * its tensor's decay flag. Tensors lie back to back in the arena, so the
 * clipped pieces of consecutive tensors that share the flag form one
 * contiguous run: one launch each. */
void oc_gpu_adamw(struct oc_gpu *g, struct oc_params *p, const struct oc_adamw *h,
                  int64_t step, int64_t begin, int64_t end)
{
    OC_ASSERT(step >= 1 && begin >= 0 && begin <= end && end <= p->n);
    OC_ASSERT(p->w == g->p->w);
    int64_t run_lo = 0, run_hi = 0;
    int run_decay = 0;
    for (int64_t i = 0; i < p->nt; i++) {
        const struct oc_param_tensor *t = &p->t[i];
        int64_t lo = t->offset, hi = t->offset + t->rows * t->cols;
        if (lo < begin)
            lo = begin;
        if (hi > end)
            hi = end;
        if (hi <= lo)
            continue;
        if (run_hi > run_lo && t->decay == run_decay && lo == run_hi) {
            run_hi = hi;
            continue;
        }
        adamw_run(g, p, h, step, run_lo, run_hi, run_decay);
        run_lo = lo;
        run_hi = hi;
        run_decay = t->decay;
    }
    adamw_run(g, p, h, step, run_lo, run_hi, run_decay);
    g->wb_stale = 1;
}
