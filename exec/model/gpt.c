/* gpt.c: one TP shard of the decoder, part by part (see gpt.h), written
 * once against the primitive-kernel table (kernels/ops.h) for every
 * family, and GPT-2's block (the family's operations, block.h).
 *
 * The pre-norm decoder of GPT-2 (Radford et al. 2019) and Llama (Touvron
 * et al. 2023) with the tensor-parallel split of Megatron-LM (Shoeybi et
 * al. 2019, section 3, figure 3). Every part is a small state machine over
 * its communication points (gpt.h, "Communication"): a `switch (c->step)`
 * with one case per stretch of local work, all locals set before the
 * switch. Each stretch is a few kernel calls in the order the math needs
 * them, the family's operations through d->blk; the loops over tensor
 * elements are the kernels' (kernels/cpu/ops_cpu.c is the reference). A
 * GPT-2 model runs the kernel calls this file made before Llama joined,
 * in the same order (tools/golden.sh: bitwise the same numbers).
 *
 * What this file is not: numerics (no loop over elements, no BLAS, no
 * CUDA), memory (the caller's buffers, laid out by the *_bind functions),
 * communication (the caller's all-reduces, asked for by REDUCE), a
 * family's other operations (llama.c).
 */
#include "gpt.h"

#include <limits.h>
#include <string.h>

#include "block.h"

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

/* The families' blocks, by core/model.h's arch. */
static const struct oc_gpt_block *block_of(const struct oc_model *m)
{
    static const struct oc_gpt_block *const blocks[] = {
        [OC_ARCH_GPT] = &oc_gpt_block_gpt2,
        [OC_ARCH_LLAMA] = &oc_gpt_block_llama,
    };
    OC_ASSERT((unsigned)m->arch < sizeof blocks / sizeof blocks[0] && blocks[m->arch]);
    return blocks[m->arch];
}

/* The tensor table's check, then the family's (its kernels' limits). */
static int check_model(const struct oc_model *m, int64_t tp, struct oc_status *st)
{
    if (oc_params_check_model(m, tp, st) != 0)
        return -1;
    const struct oc_gpt_block *b = block_of(m);
    return b->check ? b->check(m, st) : 0;
}

int oc_gpt_dims_init(struct oc_gpt_dims *d, const struct oc_model *m,
                     int64_t tp, int64_t tp_rank, int64_t B, int64_t T,
                     struct oc_status *st)
{
    memset(d, 0, sizeof *d);
    if (check_model(m, tp, st) != 0)
        return -1;
    if (tp_rank < 0 || tp_rank >= tp)
        return oc_fail(st, "exec: TP rank %lld is outside [0, %lld)",
                       (long long)tp_rank, (long long)tp);
    if (B < 1 || T < 1)
        return oc_fail(st, "exec: micro-batch %lld x sequence %lld is empty",
                       (long long)B, (long long)T);
    if (T > m->max_position_embeddings)
        return oc_fail(st, "exec: sequence length %lld exceeds the %lld "
                           "positions of model '%s'",
                       (long long)T, (long long)m->max_position_embeddings,
                       m->name);
    /* the widest GEMM output: the MLP's up projection (2F gated) or V */
    const int64_t up = (m->gated_mlp ? 2 : 1) * m->intermediate_size;
    const int64_t widest = up > m->vocab_size ? up : m->vocab_size;
    if (B * T > INT_MAX / 4 || widest > INT_MAX / 4)
        return oc_fail(st, "exec: %lld tokens x %lld columns exceed the "
                           "BLAS int range", (long long)(B * T),
                       (long long)widest);
    d->B = B;
    d->T = T;
    d->C = m->hidden_size;
    d->NH = m->num_attention_heads;
    d->NKV = m->num_key_value_heads;
    d->HS = d->C / d->NH;
    d->F = m->intermediate_size;
    d->V = m->vocab_size;
    d->P = m->max_position_embeddings;
    d->L = m->num_hidden_layers;
    d->tp = tp;
    d->tp_rank = tp_rank;
    d->nh = d->NH / tp;
    d->nkv = d->NKV / tp;
    d->g = d->nh / d->nkv;
    d->f = d->F / tp;
    d->v = d->V / tp;
    d->v0 = tp_rank * d->v;
    d->blk = block_of(m);
    if (d->blk->dims)
        d->blk->dims(d, m);
    return 0;
}

int oc_gpt_check_layout(const struct oc_model *m, const struct oc_layout *l,
                        struct oc_status *st)
{
    if (check_model(m, l->tp, st) != 0)
        return -1;
    if (l->sequence_parallel && l->tp > 1)
        return oc_fail(st, "exec: sequence parallelism is not supported by "
                           "the executor yet; use 'nosp'");
    if (l->seq_length > m->max_position_embeddings)
        return oc_fail(st, "exec: sequence length %lld exceeds the %lld "
                           "positions of model '%s'",
                       (long long)l->seq_length,
                       (long long)m->max_position_embeddings, m->name);
    return 0;
}

int64_t oc_gpt_att_floats(const struct oc_gpt_dims *d)
{
    return d->B * d->nh * d->T * d->T;
}

/* Floats of one token's q, k, v here: nkv groups of g queries, a key and
 * a value (3 * nh * HS without GQA). */
static int64_t qkv_width(const struct oc_gpt_dims *d)
{
    return d->nkv * (d->g + 2) * d->HS;
}

/* A norm's statistics per row: mean and rstd, or rstd only. */
static int64_t stats(const struct oc_gpt_dims *d)
{
    return d->blk->norm_stats;
}

int64_t oc_gpt_attn_act_floats(const struct oc_gpt_dims *d)
{
    int64_t N = d->B * d->T;
    return N * d->C + stats(d) * N + N * qkv_width(d) + N * d->nh * d->HS +
           oc_gpt_att_floats(d);
}

int64_t oc_gpt_mlp_act_floats(const struct oc_gpt_dims *d)
{
    int64_t N = d->B * d->T;
    return N * d->C + stats(d) * N + N * d->blk->mlp_up * d->f + N * d->f;
}

int64_t oc_gpt_head_act_floats(const struct oc_gpt_dims *d)
{
    int64_t N = d->B * d->T;
    return N * d->C + stats(d) * N + N * d->v + 3 * N;
}

/* Hands out consecutive pieces of mem. */
static float *carve(float **mem, int64_t n)
{
    float *p = *mem;
    *mem += n;
    return p;
}

/* ln, then mean (LayerNorm only: NULL where the norm keeps rstd alone)
 * and rstd. */
static void carve_norm(float **mem, const struct oc_gpt_dims *d, float **ln,
                       float **mean, float **rstd)
{
    const int64_t N = d->B * d->T;
    *ln = carve(mem, N * d->C);
    *mean = stats(d) == 2 ? carve(mem, N) : NULL;
    *rstd = carve(mem, N);
}

void oc_gpt_attn_act_bind(struct oc_gpt_attn_act *a, const struct oc_gpt_dims *d,
                          float *in, float *mem)
{
    int64_t N = d->B * d->T;
    a->in = in;
    carve_norm(&mem, d, &a->ln, &a->mean, &a->rstd);
    a->qkv = carve(&mem, N * qkv_width(d));
    a->y = carve(&mem, N * d->nh * d->HS);
    a->att = carve(&mem, oc_gpt_att_floats(d));
}

void oc_gpt_mlp_act_bind(struct oc_gpt_mlp_act *a, const struct oc_gpt_dims *d,
                         float *in, float *mem)
{
    int64_t N = d->B * d->T;
    a->in = in;
    carve_norm(&mem, d, &a->ln, &a->mean, &a->rstd);
    a->h = carve(&mem, N * d->blk->mlp_up * d->f);
    a->hg = carve(&mem, N * d->f);
}

void oc_gpt_head_act_bind(struct oc_gpt_head_act *a, const struct oc_gpt_dims *d,
                          float *in, float *mem)
{
    int64_t N = d->B * d->T;
    a->in = in;
    carve_norm(&mem, d, &a->ln, &a->mean, &a->rstd);
    a->probs = carve(&mem, N * d->v);
    a->lmax = carve(&mem, N);
    a->sumexp = carve(&mem, N);
    a->tlogit = carve(&mem, N);
}

/* A piece of work starts at a multiple of the kernels' alignment. */
int64_t oc_gpt_piece(const struct oc_kernels *k, int64_t n)
{
    const int64_t a = k->ops->align_floats;
    OC_ASSERT(a >= 1);
    return (n + a - 1) / a * a;
}

static int64_t piece(const struct oc_kernels *k, int64_t n)
{
    return oc_gpt_piece(k, n);
}

/* Attention backward: dy, dqkv, dln; MLP: the activation's (dh, and the
 * gate | up gradient of SwiGLU), dln; head: dlogits, dln. */
int64_t oc_gpt_work_floats(const struct oc_kernels *k, const struct oc_gpt_dims *d)
{
    const int64_t N = d->B * d->T, C = d->C, cl = d->nh * d->HS;
    int64_t attn = piece(k, N * cl) + piece(k, N * qkv_width(d)) + piece(k, N * C);
    int64_t mlp = d->blk->act_work_floats(k, d) + piece(k, N * C);
    int64_t head = piece(k, N * d->v) + piece(k, N * C);
    int64_t w = attn > mlp ? attn : mlp;
    return w > head ? w : head;
}

static int64_t max2(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* The linear layers: QKV (C -> (nh + 2 nkv) HS, bias in GPT-2),
 * attention projection (C/t -> C), fc (C -> up*f, bias in GPT-2), fc
 * projection (f -> C), LM head (C -> v). */
int oc_gpt_reserve(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                   struct oc_status *st)
{
    const int64_t C = d->C, cl = d->nh * d->HS, up = d->blk->mlp_up * d->f;
    const struct oc_kernel_sizes s = {
        .rows = d->B * d->T,
        .lin_in = max2(max2(C, cl), d->f),
        .lin_out = max2(max2(C, qkv_width(d)), max2(up, d->v)),
        .bias_out = max2(max2(qkv_width(d), C), up),
        .norm = C,
        .att_B = d->B,
        .att_T = d->T,
        .att_nh = d->nh,
    };
    return k->ops->reserve(k->ctx, &s, st);
}

/* ------------------------------------------------------------------ */
/* Calls                                                                */

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

/* Ask for an all-reduce of b[0..cnt) and resume at case `next`: in step
 * mode return to the caller, in callback mode do it here and go on. */
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

/* The arena the parts read is the shard of these dims. */
static void check_dims(const struct oc_gpt_dims *d, const struct oc_params *p)
{
    OC_ASSERT(d->tp == p->tp && d->tp_rank == p->tp_rank);
    OC_ASSERT(d->B >= 1 && d->T >= 1 && d->T <= d->P);
}

/* ------------------------------------------------------------------ */
/* Embedding                                                            */

int oc_gpt_embed_fwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                     const struct oc_gpt_dims *d, const struct oc_params *p,
                     const int32_t *tokens, float *out)
{
    call_begin(c, PART_EMBED_FWD);
    check_dims(d, p);
    const int64_t N = d->B * d->T, C = d->C;
    const float *wte = oc_params_w(p, OC_P_WTE, -1);     /* (v, C) */
    const float *wpe = oc_params_w_opt(p, OC_P_WPE, -1); /* (P, C); NULL: rotary */
    switch (c->step) {
    case 0:
        /* VocabParallelEmbedding: rows outside [v0, v0+v) are zero here and
         * come from the other ranks through the all-reduce. */
        k->ops->embed_fwd(k->ctx, out, tokens, wte, N, C, d->V, d->v0, d->v);
        if (d->tp > 1)
            REDUCE(c, 1, out, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        /* positions are replicated: added once, after the all-reduce */
        if (wpe)
            k->ops->pos_fwd(k->ctx, out, wpe, N, d->T, C);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

int oc_gpt_embed_bwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                     const struct oc_gpt_dims *d, struct oc_params *p,
                     const int32_t *tokens, const float *dout)
{
    call_begin(c, PART_EMBED_BWD);
    OC_ASSERT(c->step == 0);
    check_dims(d, p);
    k->ops->embed_bwd(k->ctx, oc_params_g(p, OC_P_WTE, -1),
                      oc_params_g_opt(p, OC_P_WPE, -1), tokens, dout, d->B, d->T, d->C,
                      d->V, d->v0, d->v);
    return call_done(c);
}

/* ------------------------------------------------------------------ */
/* Attention                                                            */

void oc_gpt_attn_scores(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                        struct oc_gpt_attn_act *a)
{
    k->ops->attn_fwd(k->ctx, a->att, NULL, a->qkv, d->B, d->T, d->nh, d->nkv, d->HS);
}

int oc_gpt_attn_fwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, const struct oc_params *p,
                    int64_t layer, struct oc_gpt_attn_act *a, float *out)
{
    call_begin(c, PART_ATTN_FWD);
    check_dims(d, p);
    OC_ASSERT(out != a->in);
    const int64_t N = d->B * d->T, C = d->C;
    const int64_t cl = d->nh * d->HS, qw = qkv_width(d); /* C/t, (nh + 2 nkv) HS */
    const struct oc_kernel_ops *K = k->ops;
    const struct oc_gpt_block *blk = d->blk;
    const float *ln1w = oc_params_w(p, OC_P_LN1W, layer);
    const float *ln1b = oc_params_w_opt(p, OC_P_LN1B, layer);
    const float *qkvw = oc_params_w(p, OC_P_QKVW, layer);          /* (qw, C) */
    const float *qkvb = oc_params_w_opt(p, OC_P_QKVB, layer);      /* (qw) */
    const float *projw = oc_params_w(p, OC_P_ATTPROJW, layer);     /* (C, C/t) */
    const float *projb = oc_params_w_opt(p, OC_P_ATTPROJB, layer); /* (C) */
    switch (c->step) {
    case 0:
        blk->norm_fwd(k, d, a->ln, a->mean, a->rstd, a->in, ln1w, ln1b, N);
        /* column-parallel QKV: the local KV groups only */
        K->linear_fwd(k->ctx, a->qkv, a->ln, qkvw, qkvb, N, C, qw);
        blk->qk_fwd(k, d, a->qkv);
        K->attn_fwd(k->ctx, a->att, a->y, a->qkv, d->B, d->T, d->nh, d->nkv, d->HS);
        /* row-parallel projection: a partial sum over the local heads */
        K->linear_fwd(k->ctx, out, a->y, projw, NULL, N, cl, C);
        if (d->tp > 1)
            REDUCE(c, 1, out, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        /* RowParallelLinear adds its bias after the all-reduce; then the
         * residual. */
        K->add_bias_residual(k->ctx, out, projb, a->in, N, C);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

int oc_gpt_attn_bwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, struct oc_params *p,
                    int64_t layer, const struct oc_gpt_attn_act *a,
                    const float *dout, float *din, float *work)
{
    call_begin(c, PART_ATTN_BWD);
    check_dims(d, p);
    const int64_t N = d->B * d->T, C = d->C;
    const int64_t cl = d->nh * d->HS, qw = qkv_width(d);
    float *dy = work;                           /* (N, C/t) */
    float *dqkv = dy + piece(k, N * cl);        /* (N, qw) */
    float *dln = dqkv + piece(k, N * qw);       /* (N, C) */
    const struct oc_kernel_ops *K = k->ops;
    const struct oc_gpt_block *blk = d->blk;
    const float *ln1w = oc_params_w(p, OC_P_LN1W, layer);
    const float *qkvw = oc_params_w(p, OC_P_QKVW, layer);
    const float *projw = oc_params_w(p, OC_P_ATTPROJW, layer);
    switch (c->step) {
    case 0:
        /* projection: dy = dout @ projw; dprojw += dout^T y; dprojb +=
         * sum(dout), the same on every TP rank (replicated bias) */
        K->linear_bwd(k->ctx, dy, oc_params_g(p, OC_P_ATTPROJW, layer),
                      oc_params_g_opt(p, OC_P_ATTPROJB, layer), dout, a->y, projw, N,
                      cl, C);
        K->attn_bwd(k->ctx, dqkv, a->att, a->qkv, dy, d->B, d->T, d->nh, d->nkv, d->HS);
        blk->qk_bwd(k, d, dqkv); /* the gradient of q, k before RoPE */
        /* column-parallel QKV: its input gradient is a partial sum over the
         * local heads (Megatron-LM's f operator: all-reduce in backward) */
        K->linear_bwd(k->ctx, dln, oc_params_g(p, OC_P_QKVW, layer),
                      oc_params_g_opt(p, OC_P_QKVB, layer), dqkv, a->ln, qkvw, N, C,
                      qw);
        if (d->tp > 1)
            REDUCE(c, 1, dln, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        if (din != dout)
            K->copy(k->ctx, din, dout, N * C); /* the residual */
        blk->norm_bwd(k, d, din, oc_params_g(p, OC_P_LN1W, layer),
                      oc_params_g_opt(p, OC_P_LN1B, layer), dln, a->in, ln1w, a->mean,
                      a->rstd, N);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

/* ------------------------------------------------------------------ */
/* MLP                                                                  */

int oc_gpt_mlp_fwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                   const struct oc_gpt_dims *d, const struct oc_params *p,
                   int64_t layer, struct oc_gpt_mlp_act *a, float *out)
{
    call_begin(c, PART_MLP_FWD);
    check_dims(d, p);
    OC_ASSERT(out != a->in);
    const int64_t N = d->B * d->T, C = d->C, f = d->f;
    const int64_t up = d->blk->mlp_up * f; /* f, or 2f: gate | up */
    const struct oc_kernel_ops *K = k->ops;
    const struct oc_gpt_block *blk = d->blk;
    const float *ln2w = oc_params_w(p, OC_P_LN2W, layer);
    const float *ln2b = oc_params_w_opt(p, OC_P_LN2B, layer);
    const float *fcw = oc_params_w(p, OC_P_FCW, layer);           /* (up, C) */
    const float *fcb = oc_params_w_opt(p, OC_P_FCB, layer);       /* (up) */
    const float *projw = oc_params_w(p, OC_P_FCPROJW, layer);     /* (C, f) */
    const float *projb = oc_params_w_opt(p, OC_P_FCPROJB, layer); /* (C) */
    switch (c->step) {
    case 0:
        blk->norm_fwd(k, d, a->ln, a->mean, a->rstd, a->in, ln2w, ln2b, N);
        K->linear_fwd(k->ctx, a->h, a->ln, fcw, fcb, N, C, up); /* column-parallel */
        blk->act_fwd(k, d, a->hg, a->h);
        K->linear_fwd(k->ctx, out, a->hg, projw, NULL, N, f, C); /* row-parallel */
        if (d->tp > 1)
            REDUCE(c, 1, out, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        K->add_bias_residual(k->ctx, out, projb, a->in, N, C);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

int oc_gpt_mlp_bwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                   const struct oc_gpt_dims *d, struct oc_params *p,
                   int64_t layer, const struct oc_gpt_mlp_act *a,
                   const float *dout, float *din, float *work)
{
    call_begin(c, PART_MLP_BWD);
    check_dims(d, p);
    const int64_t N = d->B * d->T, C = d->C, f = d->f;
    const int64_t up = d->blk->mlp_up * f;
    const struct oc_gpt_block *blk = d->blk;
    float *dhg = work;                                   /* (N, f): d(hg) */
    float *dln = work + blk->act_work_floats(k, d);      /* (N, C) */
    const struct oc_kernel_ops *K = k->ops;
    const float *ln2w = oc_params_w(p, OC_P_LN2W, layer);
    const float *fcw = oc_params_w(p, OC_P_FCW, layer);
    const float *projw = oc_params_w(p, OC_P_FCPROJW, layer);
    const float *dh; /* (N, up): d(h), where the activation's backward left it */
    switch (c->step) {
    case 0:
        K->linear_bwd(k->ctx, dhg, oc_params_g(p, OC_P_FCPROJW, layer),
                      oc_params_g_opt(p, OC_P_FCPROJB, layer), dout, a->hg, projw, N,
                      f, C);
        dh = blk->act_bwd(k, d, work, a->h);
        K->linear_bwd(k->ctx, dln, oc_params_g(p, OC_P_FCW, layer),
                      oc_params_g_opt(p, OC_P_FCB, layer), dh, a->ln, fcw, N, C, up);
        if (d->tp > 1)
            REDUCE(c, 1, dln, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        if (din != dout)
            K->copy(k->ctx, din, dout, N * C);
        blk->norm_bwd(k, d, din, oc_params_g(p, OC_P_LN2W, layer),
                      oc_params_g_opt(p, OC_P_LN2B, layer), dln, a->in, ln2w, a->mean,
                      a->rstd, N);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

/* ------------------------------------------------------------------ */
/* Head: final norm, LM head, vocab-parallel cross-entropy              */

int oc_gpt_head_fwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, const struct oc_params *p,
                    struct oc_gpt_head_act *a, const int32_t *targets,
                    float *losses)
{
    call_begin(c, PART_HEAD_FWD);
    check_dims(d, p);
    const int64_t N = d->B * d->T, C = d->C, v = d->v;
    const struct oc_kernel_ops *K = k->ops;
    const float *lnfw = oc_params_w(p, OC_P_LNFW, -1);
    const float *lnfb = oc_params_w_opt(p, OC_P_LNFB, -1);
    const float *lmw = oc_params_w(p, OC_P_LMW, -1); /* (v, C), or wte */
    switch (c->step) {
    case 0:
        d->blk->norm_fwd(k, d, a->ln, a->mean, a->rstd, a->in, lnfw, lnfb, N);
        K->linear_fwd(k->ctx, a->probs, a->ln, lmw, NULL, N, C, v); /* column-parallel */
        K->ce_max(k->ctx, a->lmax, a->probs, N, v);
        /* Megatron-LM tensor_parallel/cross_entropy.py: the max over the
         * whole vocabulary, */
        if (d->tp > 1)
            REDUCE(c, 1, a->lmax, N, OC_GPT_MAX);
        /* fallthrough */
    case 1:
        K->ce_exp(k->ctx, a->probs, a->sumexp, a->tlogit, a->lmax, targets, N, v,
                  d->v0, d->V);
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
        K->ce_finish(k->ctx, losses, a->probs, a->sumexp, a->tlogit, N, v);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

int oc_gpt_head_bwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, struct oc_params *p,
                    const struct oc_gpt_head_act *a, const int32_t *targets,
                    float grad_scale, float *din, float *work)
{
    call_begin(c, PART_HEAD_BWD);
    check_dims(d, p);
    const int64_t N = d->B * d->T, C = d->C, v = d->v;
    float *dlogits = work;                 /* (N, v) */
    float *dln = dlogits + piece(k, N * v); /* (N, C) */
    const struct oc_kernel_ops *K = k->ops;
    const float *lnfw = oc_params_w(p, OC_P_LNFW, -1);
    const float *lmw = oc_params_w(p, OC_P_LMW, -1);
    switch (c->step) {
    case 0:
        /* d loss / d logit = softmax - onehot(target), scaled */
        K->ce_bwd(k->ctx, dlogits, a->probs, targets, grad_scale, N, v, d->v0);
        K->linear_bwd(k->ctx, dln, oc_params_g(p, OC_P_LMW, -1), NULL, dlogits,
                      a->ln, lmw, N, C, v);
        /* column-parallel LM head: input gradient summed over the vocab
         * shards */
        if (d->tp > 1)
            REDUCE(c, 1, dln, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        K->zero(k->ctx, din, N * C);
        d->blk->norm_bwd(k, d, din, oc_params_g(p, OC_P_LNFW, -1),
                         oc_params_g_opt(p, OC_P_LNFB, -1), dln, a->in, lnfw, a->mean,
                         a->rstd, N);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

/* ------------------------------------------------------------------ */
/* GPT-2's block: LayerNorm, no position signal inside attention (the
 * learned positions are added to the embedding), GELU                  */

static void ln_fwd(const struct oc_kernels *k, const struct oc_gpt_dims *d, float *out,
                   float *mean, float *rstd, const float *in, const float *w,
                   const float *b, int64_t N)
{
    k->ops->layernorm_fwd(k->ctx, out, mean, rstd, in, w, b, N, d->C);
}

static void ln_bwd(const struct oc_kernels *k, const struct oc_gpt_dims *d, float *din,
                   float *dw, float *db, const float *dout, const float *in,
                   const float *w, const float *mean, const float *rstd, int64_t N)
{
    k->ops->layernorm_bwd(k->ctx, din, dw, db, dout, in, w, mean, rstd, N, d->C);
}

static void no_qk(const struct oc_kernels *k, const struct oc_gpt_dims *d, float *qkv)
{
    (void)k, (void)d, (void)qkv;
}

static void gelu_fwd(const struct oc_kernels *k, const struct oc_gpt_dims *d, float *hg,
                     const float *h)
{
    k->ops->gelu_fwd(k->ctx, hg, h, d->B * d->T * d->f);
}

/* In place: d(h) = d(hg) * gelu'(h). */
static float *gelu_bwd(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                       float *work, const float *h)
{
    k->ops->gelu_bwd(k->ctx, work, h, d->B * d->T * d->f);
    return work;
}

static int64_t gelu_work_floats(const struct oc_kernels *k, const struct oc_gpt_dims *d)
{
    return piece(k, d->B * d->T * d->f);
}

const struct oc_gpt_block oc_gpt_block_gpt2 = {
    .name = "gpt2",
    .norm_stats = 2,
    .mlp_up = 1,
    .check = NULL,
    .dims = NULL,
    .norm_fwd = ln_fwd,
    .norm_bwd = ln_bwd,
    .qk_fwd = no_qk,
    .qk_bwd = no_qk,
    .act_fwd = gelu_fwd,
    .act_bwd = gelu_bwd,
    .act_work_floats = gelu_work_floats,
};
