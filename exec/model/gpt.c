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
 * GPT-2 model under classic attention without sequence parallelism runs
 * the kernel calls this file made before Llama joined, in the same order
 * (tools/golden.sh's executor runs with -classic: bitwise the same
 * numbers). Under sequence parallelism a part works on the rows here
 * (d->n from d->s0) before and after its TP region and on all N rows
 * inside it (gpt.h, "Sequence parallelism").
 *
 * What this file is not: numerics (no loop over elements, no BLAS, no
 * CUDA), memory (the caller's buffers, laid out by gpt_dims.c's *_bind
 * functions; the sizes are there too), communication (the caller's TP
 * collectives, asked for by REDUCE, GATHER and SCATTER), a family's other
 * operations (llama.c).
 */
#include "gpt.h"

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
    c->shard = NULL;
    c->n = 0;
    return OC_GPT_DONE;
}

/* Callback mode: the collective c names, through c->comm. */
static int comm_do(struct oc_gpt_call *c)
{
    const struct oc_gpt_comm *m = c->comm;
    switch (c->coll) {
    case OC_GPT_ALLREDUCE:
        return m->allreduce(m->ctx, c->buf, c->n, c->op);
    case OC_GPT_ALLGATHER:
        OC_ASSERT(m->allgather); /* sequence parallelism needs the callbacks */
        return m->allgather(m->ctx, c->buf, c->n);
    case OC_GPT_REDUCESCATTER:
        OC_ASSERT(m->reduce_scatter);
        return m->reduce_scatter(m->ctx, c->buf, c->shard, c->n);
    }
    return -1;
}

/* Ask for TP collective `kind` (gpt.h, "Communication") over b[0..cnt)
 * with this rank's share at sh, and resume at case `next`: in step mode
 * return to the caller, in callback mode do it here and go on. */
#define COMM(c, next, kind, b, sh, cnt, o)                                     \
    do {                                                                       \
        (c)->step = (next);                                                    \
        (c)->coll = (kind);                                                    \
        (c)->buf = (b);                                                        \
        (c)->shard = (sh);                                                     \
        (c)->n = (cnt);                                                        \
        (c)->op = (o);                                                         \
        (c)->nreduce++;                                                        \
        if (!(c)->comm)                                                        \
            return OC_GPT_REDUCE;                                              \
        if (comm_do(c) != 0) {                                                 \
            (c)->step = 0;                                                     \
            return -1;                                                         \
        }                                                                      \
    } while (0)
#define REDUCE(c, next, b, cnt, o) COMM(c, next, OC_GPT_ALLREDUCE, b, NULL, cnt, o)
#define GATHER(c, next, b, sh, cnt) COMM(c, next, OC_GPT_ALLGATHER, b, sh, cnt, OC_GPT_SUM)
#define SCATTER(c, next, b, sh, cnt)                                           \
    COMM(c, next, OC_GPT_REDUCESCATTER, b, sh, cnt, OC_GPT_SUM)

/* After a row-parallel GEMM (or a column-parallel one's input gradient)
 * wrote its partial sums `part` (N,C): without SP the all-reduce in place
 * (out is then unused: the caller passes part's own result on), under SP
 * the reduce-scatter into out (the rows here); then resume at `next`. A
 * macro: it returns in step mode. */
#define ROW_PARALLEL_OUT(c, next, d, part, out)                                \
    do {                                                                       \
        const int64_t nc_ = (d)->B * (d)->T * (d)->C;                          \
        if ((d)->sp)                                                           \
            SCATTER(c, next, part, out, nc_);                                  \
        else if ((d)->tp > 1)                                                  \
            REDUCE(c, next, part, nc_, OC_GPT_SUM);                            \
    } while (0)

/* Under SP the gradient of a part's output arrives as the rows here;
 * the part's backward reads all N rows: this rank's rows go to their
 * place in g (N,C), then the all-gather fills the rest. */
#define GATHER_GRAD(c, next, k, d, g, dout)                                    \
    do {                                                                       \
        if ((d)->sp) {                                                         \
            float *mine_ = (g) + (d)->s0 * (d)->C;                             \
            (k)->ops->copy((k)->ctx, mine_, dout, (d)->n * (d)->C);            \
            GATHER(c, next, g, mine_, (d)->B * (d)->T * (d)->C);               \
        }                                                                      \
    } while (0)

/* The arena the parts read is the shard of these dims. */
static void check_dims(const struct oc_gpt_dims *d, const struct oc_params *p)
{
    OC_ASSERT(d->tp == p->tp && d->tp_rank == p->tp_rank);
    OC_ASSERT(d->B >= 1 && d->T >= 1 && d->T <= d->P);
}

/* Under SP the first (N,C) piece of work: the row-parallel output before
 * its reduce-scatter (forward), the output gradient gathered then the
 * input gradient's rows (backward); its other pieces follow it. */
static float *sp_piece(const struct oc_gpt_dims *d, float *work)
{
    OC_ASSERT(!d->sp || work);
    return d->sp ? work : NULL;
}

static float *after_sp_piece(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                             float *work)
{
    return d->sp ? work + oc_gpt_piece(k, d->B * d->T * d->C) : work;
}

/* ------------------------------------------------------------------ */
/* Embedding                                                            */

/* out (rows [s0, s0+n) of N) += wpe[row mod T]: one pos_fwd call per run
 * of rows that does not wrap past a sequence's end, whole sequences in
 * one call (so without SP the single call of before). */
static void add_positions(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                          float *out, const float *wpe)
{
    const int64_t T = d->T, C = d->C;
    for (int64_t i = 0; i < d->n;) {
        const int64_t pos = (d->s0 + i) % T, left = d->n - i;
        const int64_t len = pos == 0 && left >= T ? left / T * T
                            : left < T - pos ? left : T - pos;
        k->ops->pos_fwd(k->ctx, out + i * C, wpe + pos * C, len, T, C);
        i += len;
    }
}

int oc_gpt_embed_fwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                     const struct oc_gpt_dims *d, const struct oc_params *p,
                     const int32_t *tokens, float *out, float *work)
{
    call_begin(c, PART_EMBED_FWD);
    check_dims(d, p);
    const int64_t N = d->B * d->T, C = d->C;
    const float *wte = oc_params_w(p, OC_P_WTE, -1);     /* (v, C) */
    const float *wpe = oc_params_w_opt(p, OC_P_WPE, -1); /* (P, C); NULL: rotary */
    float *part = d->sp ? sp_piece(d, work) : out;       /* (N, C) */
    switch (c->step) {
    case 0:
        /* VocabParallelEmbedding: rows outside [v0, v0+v) are zero here and
         * come from the other ranks through the all-reduce (under SP the
         * reduce-scatter into the rows here). */
        k->ops->embed_fwd(k->ctx, part, tokens, wte, N, C, d->V, d->v0, d->v);
        ROW_PARALLEL_OUT(c, 1, d, part, out);
        /* fallthrough */
    case 1:
        /* positions are replicated: added once, after the reduction */
        if (wpe)
            add_positions(k, d, out, wpe);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

int oc_gpt_embed_bwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                     const struct oc_gpt_dims *d, struct oc_params *p,
                     const int32_t *tokens, const float *dout, float *work)
{
    call_begin(c, PART_EMBED_BWD);
    check_dims(d, p);
    float *g = sp_piece(d, work); /* SP: (N, C) gathered */
    switch (c->step) {
    case 0:
        GATHER_GRAD(c, 1, k, d, g, dout);
        /* fallthrough */
    case 1:
        k->ops->embed_bwd(k->ctx, oc_params_g(p, OC_P_WTE, -1),
                          oc_params_g_opt(p, OC_P_WPE, -1), tokens, d->sp ? g : dout,
                          d->B, d->T, d->C, d->V, d->v0, d->v);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

/* ------------------------------------------------------------------ */
/* Attention                                                            */

/* Floats of one token's q, k, v here (block.h). */
static int64_t qkv_width(const struct oc_gpt_dims *d)
{
    return oc_gpt_qkv_width(d);
}

static int64_t piece(const struct oc_kernels *k, int64_t n)
{
    return oc_gpt_piece(k, n);
}

/* y and the scores from qkv: the layout's kernel (gpt.h, "Attention"). */
static void attention_fwd(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                          struct oc_gpt_attn_act *a)
{
    if (d->flash)
        k->ops->flash_attn_fwd(k->ctx, a->y, a->lse, a->qkv, d->B, d->T, d->nh, d->nkv,
                               d->HS);
    else
        k->ops->attn_fwd(k->ctx, a->att, a->y, a->qkv, d->B, d->T, d->nh, d->nkv, d->HS);
}

void oc_gpt_attn_scores(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                        struct oc_gpt_attn_act *a)
{
    /* flash keeps no probabilities: its recompute is the fused forward,
     * y (the same bits again) and the log-sum-exp */
    if (d->flash)
        attention_fwd(k, d, a);
    else
        k->ops->attn_fwd(k->ctx, a->att, NULL, a->qkv, d->B, d->T, d->nh, d->nkv, d->HS);
}

/* dqkv from dy and the kept act: the layout's kernel. */
static void attention_bwd(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                          const struct oc_gpt_attn_act *a, float *dqkv, const float *dy)
{
    if (d->flash)
        k->ops->flash_attn_bwd(k->ctx, dqkv, a->qkv, a->y, a->lse, dy, d->B, d->T, d->nh,
                               d->nkv, d->HS);
    else
        k->ops->attn_bwd(k->ctx, dqkv, a->att, a->qkv, dy, d->B, d->T, d->nh, d->nkv,
                         d->HS);
}

int oc_gpt_attn_fwd(const struct oc_kernels *k, struct oc_gpt_call *c,
                    const struct oc_gpt_dims *d, const struct oc_params *p,
                    int64_t layer, struct oc_gpt_attn_act *a, float *out,
                    float *work)
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
    float *ln_here = a->ln + d->s0 * C;             /* the norm's rows here */
    float *part = d->sp ? sp_piece(d, work) : out;  /* (N, C) partial sums */
    switch (c->step) {
    case 0:
        blk->norm_fwd(k, d, ln_here, a->mean, a->rstd, a->in, ln1w, ln1b, d->n);
        if (d->sp) /* into the column-parallel region */
            GATHER(c, 1, a->ln, ln_here, N * C);
        /* fallthrough */
    case 1:
        /* column-parallel QKV: the local KV groups only */
        K->linear_fwd(k->ctx, a->qkv, a->ln, qkvw, qkvb, N, C, qw);
        blk->qk_fwd(k, d, a->qkv);
        attention_fwd(k, d, a);
        /* row-parallel projection: a partial sum over the local heads */
        K->linear_fwd(k->ctx, part, a->y, projw, NULL, N, cl, C);
        ROW_PARALLEL_OUT(c, 2, d, part, out);
        /* fallthrough */
    case 2:
        /* RowParallelLinear adds its bias after the reduction; then the
         * residual. */
        K->add_bias_residual(k->ctx, out, projb, a->in, d->n, C);
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
    float *g = sp_piece(d, work);                    /* SP: dout gathered */
    float *dy = after_sp_piece(k, d, work);          /* (N, C/t) */
    float *dqkv = dy + piece(k, N * cl);             /* (N, qw) */
    float *dln = dqkv + piece(k, N * qw);            /* (N, C) */
    const struct oc_kernel_ops *K = k->ops;
    const struct oc_gpt_block *blk = d->blk;
    const float *ln1w = oc_params_w(p, OC_P_LN1W, layer);
    const float *qkvw = oc_params_w(p, OC_P_QKVW, layer);
    const float *projw = oc_params_w(p, OC_P_ATTPROJW, layer);
    switch (c->step) {
    case 0:
        GATHER_GRAD(c, 1, k, d, g, dout);
        /* fallthrough */
    case 1:
        /* projection: dy = dout @ projw; dprojw += dout^T y; dprojb +=
         * sum(dout), the same on every TP rank (replicated bias; all N
         * rows under SP too) */
        K->linear_bwd(k->ctx, dy, oc_params_g(p, OC_P_ATTPROJW, layer),
                      oc_params_g_opt(p, OC_P_ATTPROJB, layer), d->sp ? g : dout, a->y,
                      projw, N, cl, C);
        attention_bwd(k, d, a, dqkv, dy);
        blk->qk_bwd(k, d, dqkv); /* the gradient of q, k before RoPE */
        /* column-parallel QKV: its input gradient is a partial sum over the
         * local heads (Megatron-LM's f operator: all-reduce in backward;
         * under SP g's: reduce-scatter into the rows here, over g) */
        K->linear_bwd(k->ctx, dln, oc_params_g(p, OC_P_QKVW, layer),
                      oc_params_g_opt(p, OC_P_QKVB, layer), dqkv, a->ln, qkvw, N, C,
                      qw);
        ROW_PARALLEL_OUT(c, 2, d, dln, g);
        /* fallthrough */
    case 2:
        if (din != dout)
            K->copy(k->ctx, din, dout, d->n * C); /* the residual */
        blk->norm_bwd(k, d, din, oc_params_g(p, OC_P_LN1W, layer),
                      oc_params_g_opt(p, OC_P_LN1B, layer), d->sp ? g : dln, a->in,
                      ln1w, a->mean, a->rstd, d->n);
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
                   int64_t layer, struct oc_gpt_mlp_act *a, float *out, float *work)
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
    float *ln_here = a->ln + d->s0 * C;
    float *part = d->sp ? sp_piece(d, work) : out;
    switch (c->step) {
    case 0:
        blk->norm_fwd(k, d, ln_here, a->mean, a->rstd, a->in, ln2w, ln2b, d->n);
        if (d->sp)
            GATHER(c, 1, a->ln, ln_here, N * C);
        /* fallthrough */
    case 1:
        K->linear_fwd(k->ctx, a->h, a->ln, fcw, fcb, N, C, up); /* column-parallel */
        blk->act_fwd(k, d, a->hg, a->h);
        K->linear_fwd(k->ctx, part, a->hg, projw, NULL, N, f, C); /* row-parallel */
        ROW_PARALLEL_OUT(c, 2, d, part, out);
        /* fallthrough */
    case 2:
        K->add_bias_residual(k->ctx, out, projb, a->in, d->n, C);
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
    float *g = sp_piece(d, work);                        /* SP: dout gathered */
    float *w = after_sp_piece(k, d, work);
    float *dhg = w;                                      /* (N, f): d(hg) */
    float *dln = w + blk->act_work_floats(k, d);         /* (N, C) */
    const struct oc_kernel_ops *K = k->ops;
    const float *ln2w = oc_params_w(p, OC_P_LN2W, layer);
    const float *fcw = oc_params_w(p, OC_P_FCW, layer);
    const float *projw = oc_params_w(p, OC_P_FCPROJW, layer);
    const float *dh; /* (N, up): d(h), where the activation's backward left it */
    switch (c->step) {
    case 0:
        GATHER_GRAD(c, 1, k, d, g, dout);
        /* fallthrough */
    case 1:
        K->linear_bwd(k->ctx, dhg, oc_params_g(p, OC_P_FCPROJW, layer),
                      oc_params_g_opt(p, OC_P_FCPROJB, layer), d->sp ? g : dout, a->hg,
                      projw, N, f, C);
        dh = blk->act_bwd(k, d, w, a->h);
        K->linear_bwd(k->ctx, dln, oc_params_g(p, OC_P_FCW, layer),
                      oc_params_g_opt(p, OC_P_FCB, layer), dh, a->ln, fcw, N, C, up);
        ROW_PARALLEL_OUT(c, 2, d, dln, g);
        /* fallthrough */
    case 2:
        if (din != dout)
            K->copy(k->ctx, din, dout, d->n * C);
        blk->norm_bwd(k, d, din, oc_params_g(p, OC_P_LN2W, layer),
                      oc_params_g_opt(p, OC_P_LN2B, layer), d->sp ? g : dln, a->in,
                      ln2w, a->mean, a->rstd, d->n);
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
    float *ln_here = a->ln + d->s0 * C;
    switch (c->step) {
    case 0:
        d->blk->norm_fwd(k, d, ln_here, a->mean, a->rstd, a->in, lnfw, lnfb, d->n);
        if (d->sp) /* the column-parallel head reads every token */
            GATHER(c, 1, a->ln, ln_here, N * C);
        /* fallthrough */
    case 1:
        K->linear_fwd(k->ctx, a->probs, a->ln, lmw, NULL, N, C, v); /* column-parallel */
        K->ce_max(k->ctx, a->lmax, a->probs, N, v);
        /* Megatron-LM tensor_parallel/cross_entropy.py: the max over the
         * whole vocabulary, */
        if (d->tp > 1)
            REDUCE(c, 2, a->lmax, N, OC_GPT_MAX);
        /* fallthrough */
    case 2:
        K->ce_exp(k->ctx, a->probs, a->sumexp, a->tlogit, a->lmax, targets, N, v,
                  d->v0, d->V);
        /* the target's logit (held by one rank), */
        if (d->tp > 1)
            REDUCE(c, 3, a->tlogit, N, OC_GPT_SUM);
        /* fallthrough */
    case 3:
        /* and the sum of exponentials. */
        if (d->tp > 1)
            REDUCE(c, 4, a->sumexp, N, OC_GPT_SUM);
        /* fallthrough */
    case 4:
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
    float *dlogits = work;                    /* (N, v) */
    float *dln = dlogits + piece(k, N * v);   /* (N, C) */
    float *dhere = dln + piece(k, N * C);     /* SP: (n, C), its rows here */
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
         * shards (under SP reduce-scattered into the rows here) */
        ROW_PARALLEL_OUT(c, 1, d, dln, dhere);
        /* fallthrough */
    case 1:
        K->zero(k->ctx, din, d->n * C);
        d->blk->norm_bwd(k, d, din, oc_params_g(p, OC_P_LNFW, -1),
                         oc_params_g_opt(p, OC_P_LNFB, -1), d->sp ? dhere : dln, a->in,
                         lnfw, a->mean, a->rstd, d->n);
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
