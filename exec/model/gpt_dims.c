/* gpt_dims.c: the sizes of the executor's model (see gpt.h): the dims of
 * one TP shard and the layout's knobs, the layout check, the act structs'
 * floats and their layout in caller memory, the backward's (and the
 * sequence-parallel forward's) work, and the kernels' reservation.
 *
 * What this file is not: the parts (gpt.c), a family's operations
 * (block.h: gpt.c's GPT-2 block, llama.c), or memory (the caller's).
 */
#include "gpt.h"

#include <limits.h>
#include <string.h>

#include "block.h"

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
    oc_gpt_dims_knobs(d, OC_ATTN_CLASSIC, 0);
    return 0;
}

void oc_gpt_dims_knobs(struct oc_gpt_dims *d, enum oc_attention attention, int sp)
{
    const int64_t N = d->B * d->T;
    d->flash = attention == OC_ATTN_FLASH;
    d->sp = sp && d->tp > 1;
    /* gpt.h, "Sequence parallelism": rank r's N/t consecutive token rows */
    OC_ASSERT(!d->sp || N % d->tp == 0);
    d->n = d->sp ? N / d->tp : N;
    d->s0 = d->sp ? d->tp_rank * d->n : 0;
}

int oc_gpt_dims_layout(struct oc_gpt_dims *d, const struct oc_model *m,
                       const struct oc_layout *l, int64_t tp_rank,
                       struct oc_status *st)
{
    if (oc_gpt_dims_init(d, m, l->tp, tp_rank, l->micro_batch, l->seq_length, st) != 0)
        return -1;
    if (l->sequence_parallel && l->tp > 1 &&
        (l->micro_batch * l->seq_length) % l->tp != 0)
        return oc_fail(st, "exec: sequence parallelism splits the %lld tokens of a "
                           "micro-batch over TP %lld; they do not divide",
                       (long long)(l->micro_batch * l->seq_length), (long long)l->tp);
    oc_gpt_dims_knobs(d, l->attention, l->sequence_parallel);
    return 0;
}

int oc_gpt_check_layout(const struct oc_model *m, const struct oc_layout *l,
                        struct oc_status *st)
{
    if (check_model(m, l->tp, st) != 0)
        return -1;
    if (l->seq_length > m->max_position_embeddings)
        return oc_fail(st, "exec: sequence length %lld exceeds the %lld "
                           "positions of model '%s'",
                       (long long)l->seq_length,
                       (long long)m->max_position_embeddings, m->name);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Act structs                                                          */

int64_t oc_gpt_stream_floats(const struct oc_gpt_dims *d)
{
    return d->n * d->C;
}

int64_t oc_gpt_att_floats(const struct oc_gpt_dims *d)
{
    /* flash keeps the log-sum-exp of each (b, head, query), classic the
     * probabilities of each (b, head, query, key) */
    return d->B * d->nh * d->T * (d->flash ? 1 : d->T);
}

int64_t oc_gpt_qkv_width(const struct oc_gpt_dims *d)
{
    return d->nkv * (d->g + 2) * d->HS;
}

static int64_t qkv_width(const struct oc_gpt_dims *d)
{
    return oc_gpt_qkv_width(d);
}

/* A norm's output (all N rows: gathered under SP) and statistics (the
 * rows here): mean and rstd, or rstd only. */
static int64_t norm_floats(const struct oc_gpt_dims *d)
{
    return d->B * d->T * d->C + d->blk->norm_stats * d->n;
}

int64_t oc_gpt_attn_act_floats(const struct oc_gpt_dims *d)
{
    int64_t N = d->B * d->T;
    return norm_floats(d) + N * qkv_width(d) + N * d->nh * d->HS + oc_gpt_att_floats(d);
}

int64_t oc_gpt_mlp_act_floats(const struct oc_gpt_dims *d)
{
    int64_t N = d->B * d->T;
    return norm_floats(d) + N * d->blk->mlp_up * d->f + N * d->f;
}

int64_t oc_gpt_head_act_floats(const struct oc_gpt_dims *d)
{
    int64_t N = d->B * d->T;
    return norm_floats(d) + N * d->v + 3 * N;
}

int64_t oc_gpt_layer_kept_floats(const struct oc_gpt_dims *d, enum oc_recompute rc)
{
    const int64_t S = oc_gpt_stream_floats(d);
    switch (rc) {
    case OC_RECOMPUTE_NONE:
        return S + oc_gpt_attn_act_floats(d) + S + oc_gpt_mlp_act_floats(d);
    case OC_RECOMPUTE_SELECTIVE:
        return S + oc_gpt_attn_act_floats(d) - oc_gpt_att_floats(d) + S +
               oc_gpt_mlp_act_floats(d);
    case OC_RECOMPUTE_FULL:
        break;
    }
    return S;
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
    *ln = carve(mem, d->B * d->T * d->C);
    *mean = d->blk->norm_stats == 2 ? carve(mem, d->n) : NULL;
    *rstd = carve(mem, d->n);
}

void oc_gpt_attn_act_bind(struct oc_gpt_attn_act *a, const struct oc_gpt_dims *d,
                          float *in, float *mem)
{
    int64_t N = d->B * d->T;
    a->in = in;
    carve_norm(&mem, d, &a->ln, &a->mean, &a->rstd);
    a->qkv = carve(&mem, N * qkv_width(d));
    a->y = carve(&mem, N * d->nh * d->HS);
    oc_gpt_attn_act_scores_at(a, d, mem);
}

void oc_gpt_attn_act_scores_at(struct oc_gpt_attn_act *a, const struct oc_gpt_dims *d,
                               float *mem)
{
    a->att = d->flash ? NULL : mem;
    a->lse = d->flash ? mem : NULL;
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

/* ------------------------------------------------------------------ */
/* Work and the kernels' scratch                                        */

/* A piece of work starts at a multiple of the kernels' alignment. */
int64_t oc_gpt_piece(const struct oc_kernels *k, int64_t n)
{
    const int64_t a = k->ops->align_floats;
    OC_ASSERT(a >= 1);
    return (n + a - 1) / a * a;
}

static int64_t max2(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Attention backward: dy, dqkv, dln; MLP: the activation's (dh, and the
 * gate | up gradient of SwiGLU), dln; head: dlogits, dln. Under SP one
 * (N,C) piece more in front of the attention's and the MLP's (the output
 * gradient gathered, then the input gradient's rows here) and the head's
 * input gradient's rows after; a forward's row-parallel output and the
 * embedding backward's gathered gradient are one (N,C) piece (oc_gpt_sp_*
 * in gpt.c lay them out). */
int64_t oc_gpt_work_floats(const struct oc_kernels *k, const struct oc_gpt_dims *d)
{
    const int64_t N = d->B * d->T, C = d->C, cl = d->nh * d->HS;
    const int64_t sp = d->sp ? oc_gpt_piece(k, N * C) : 0;
    int64_t attn = sp + oc_gpt_piece(k, N * cl) + oc_gpt_piece(k, N * qkv_width(d)) +
                   oc_gpt_piece(k, N * C);
    int64_t mlp = sp + d->blk->act_work_floats(k, d) + oc_gpt_piece(k, N * C);
    int64_t head = oc_gpt_piece(k, N * d->v) + oc_gpt_piece(k, N * C) +
                   (d->sp ? oc_gpt_piece(k, d->n * C) : 0);
    return max2(max2(attn, mlp), max2(head, sp));
}

int oc_gpt_sp_partial_grad(const struct oc_gpt_dims *d, enum oc_param_kind k)
{
    switch (k) {
    case OC_P_LN1W:
    case OC_P_LN1B:
    case OC_P_LN2W:
    case OC_P_LN2B:
    case OC_P_LNFW:
    case OC_P_LNFB:
        return d->sp;
    default:
        return 0;
    }
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
