/* runner_parts.c: the runner's activation buffers and the model's parts
 * called on them (see runner.h for the buffers of one (micro-batch, chunk)
 * by recompute mode, runner_priv.h for the runner's files).
 *
 * What this file is: memory by buffer kind (every allocation the ops make,
 * counted for the high-water marks), where the activations of (micro-batch,
 * chunk, layer) live in their block, the binding of a part's act structs
 * (gpt.h) to those places, and the gpt.h call of a COMPUTE op with its
 * input, output and act buffers. What it is not: the order of the calls
 * (runner_step.c walks the op list), the model's math (model/gpt.c), or
 * the gradient arena and its reduction (params.c, runner_dp.c).
 */
#include "runner_priv.h"

#include "placement.h"

/* ------------------------------------------------------------------ */
/* Memory by buffer kind                                                */

void oc_rn_account(struct oc_runner *r, enum oc_buf k, double bytes)
{
    r->live_bytes[k] += bytes;
    r->live_total_bytes += bytes;
    if (r->live_bytes[k] > r->mem_hw_bytes[k])
        r->mem_hw_bytes[k] = r->live_bytes[k];
    if (r->live_total_bytes > r->mem_hw_total_bytes)
        r->mem_hw_total_bytes = r->live_total_bytes;
}

float *oc_rn_mem_get(struct oc_runner *r, enum oc_buf k, int64_t floats)
{
    OC_ASSERT(floats > 0);
    float *p = r->b->ops->alloc(r->b, floats * (int64_t)sizeof *p);
    oc_rn_account(r, k, (double)floats * sizeof *p);
    return p;
}

void oc_rn_mem_put(struct oc_runner *r, enum oc_buf k, float **p, int64_t floats)
{
    OC_ASSERT(*p);
    r->b->ops->free(r->b, *p);
    *p = NULL;
    oc_rn_account(r, k, -(double)floats * sizeof **p);
}

/* ------------------------------------------------------------------ */
/* Where things are                                                     */

int64_t oc_rn_unit(const struct oc_runner *r, int64_t mb, int64_t c)
{
    OC_ASSERT(mb >= 0 && mb < r->m && c >= 0 && c < r->v);
    return mb * r->v + c;
}

/* Chunk c of this rank's stage holds the embedding / the head / layers
 * from oc_rn_chunk_layer0 on (core/placement.h). */
static int chunk_first(const struct oc_runner *r, int64_t c)
{
    return oc_place_holds_embed(r->l, r->me.pp, c);
}

static int chunk_last(const struct oc_runner *r, int64_t c)
{
    return oc_place_holds_head(r->l, r->me.pp, c);
}

int64_t oc_rn_chunk_layer0(const struct oc_runner *r, int64_t c)
{
    return oc_place_chunk_layers(r->l, r->model, r->me.pp, c).first;
}

int64_t oc_rn_block_floats(const struct oc_runner *r, int64_t c)
{
    return r->lc * r->per_layer + (chunk_last(r, c) ? r->S : 0);
}

/* The activation block of (mb, c), allocated on first use (a RECV of the
 * chunk's input comes before the schedule's ALLOC). */
float *oc_rn_block(struct oc_runner *r, int64_t mb, int64_t c)
{
    float **b = &r->act[oc_rn_unit(r, mb, c)];
    if (!*b)
        *b = oc_rn_mem_get(r, OC_BUF_ACTIVATIONS, oc_rn_block_floats(r, c));
    return *b;
}

float *oc_rn_attn_in(struct oc_runner *r, int64_t mb, int64_t c, int64_t j)
{
    OC_ASSERT(j >= 0 && j < r->lc);
    return oc_rn_block(r, mb, c) + j * r->per_layer;
}

/* none / selective: the MLP input follows the attention act fields. */
static float *mlp_in(struct oc_runner *r, int64_t mb, int64_t c, int64_t j)
{
    int64_t kept = r->A - (r->l->recompute == OC_RECOMPUTE_SELECTIVE ? r->Aatt : 0);
    return oc_rn_attn_in(r, mb, c, j) + r->S + kept;
}

static float *head_in(struct oc_runner *r, int64_t mb, int64_t c)
{
    OC_ASSERT(chunk_last(r, c));
    return oc_rn_block(r, mb, c) + r->lc * r->per_layer;
}

/* Full recompute's shared scratch: attention act, MLP act, MLP input,
 * recomputed MLP output (the last two residual streams, r->S floats). */
static float *full_attn_mem(struct oc_runner *r) { return r->shared; }
static float *full_mlp_mem(struct oc_runner *r) { return r->shared + r->A; }
static float *full_rin(struct oc_runner *r) { return r->shared + r->A + r->M; }
static float *full_junk(struct oc_runner *r)
{
    return r->shared + r->A + r->M + r->S;
}

void oc_rn_bind_attn(struct oc_runner *r, int64_t mb, int64_t c, int64_t j,
                     struct oc_gpt_attn_act *a)
{
    float *in = oc_rn_attn_in(r, mb, c, j);
    switch (r->l->recompute) {
    case OC_RECOMPUTE_FULL:
        oc_gpt_attn_act_bind(a, &r->d, in, full_attn_mem(r));
        break;
    case OC_RECOMPUTE_SELECTIVE:
        /* the scores are the last field: the block keeps the others only */
        oc_gpt_attn_act_bind(a, &r->d, in, in + r->S);
        oc_gpt_attn_act_scores_at(a, &r->d, r->shared);
        break;
    case OC_RECOMPUTE_NONE:
        oc_gpt_attn_act_bind(a, &r->d, in, in + r->S);
        break;
    }
}

static void bind_mlp(struct oc_runner *r, int64_t mb, int64_t c, int64_t j,
                     struct oc_gpt_mlp_act *a)
{
    if (r->l->recompute == OC_RECOMPUTE_FULL) {
        oc_gpt_mlp_act_bind(a, &r->d, full_rin(r), full_mlp_mem(r));
        return;
    }
    float *in = mlp_in(r, mb, c, j);
    oc_gpt_mlp_act_bind(a, &r->d, in, in + r->S);
}

static void bind_head(struct oc_runner *r, int64_t mb, int64_t c,
                      struct oc_gpt_head_act *a)
{
    float **lg = &r->logits[mb];
    if (!*lg) /* the schedule's ALLOC LOGITS comes first; without memory ops */
        *lg = oc_rn_mem_get(r, OC_BUF_LOGITS, r->H);
    oc_gpt_head_act_bind(a, &r->d, head_in(r, mb, c), *lg);
}

/* A COMM buffer of one residual stream (r->S floats) in slot, allocated
 * on first use. */
static float *comm_buf(struct oc_runner *r, float **slot)
{
    if (!*slot)
        *slot = oc_rn_mem_get(r, OC_BUF_COMM, r->S);
    return *slot;
}

static float *attn_out(struct oc_runner *r, int64_t mb, int64_t c, int64_t j)
{
    return r->l->recompute == OC_RECOMPUTE_FULL ? full_rin(r) : mlp_in(r, mb, c, j);
}

static float *mlp_out(struct oc_runner *r, int64_t mb, int64_t c, int64_t j)
{
    if (j + 1 < r->lc)
        return oc_rn_attn_in(r, mb, c, j + 1);
    if (chunk_last(r, c))
        return head_in(r, mb, c);
    return comm_buf(r, &r->send_act[oc_rn_unit(r, mb, c)]);
}

/* ------------------------------------------------------------------ */
/* Parts                                                                */

/* The gpt.h call of a COMPUTE op (not the optimizer, not selective
 * recompute); the same arguments every time it is called for one op. */
int oc_rn_part_call(struct oc_runner *r, const struct oc_op *op,
                    struct oc_gpt_call *c)
{
    const int64_t mb = op->mb, ch = op->chunk, l = op->layer_first;
    const int64_t j = l >= 0 ? l - oc_rn_chunk_layer0(r, ch) : -1;
    const int32_t *tok = r->tok_b + mb * r->N, *tgt = r->tgt_b + mb * r->N;
    const struct oc_kernels *k = &r->b->kernels;
    struct oc_gpt_attn_act aa;
    struct oc_gpt_mlp_act ma;
    struct oc_gpt_head_act ha;
    const enum oc_part part = (enum oc_part)op->part;
    if (part == OC_PART_ATTN || part == OC_PART_MLP)
        OC_ASSERT(j >= 0 && j < r->lc);
    switch ((enum oc_phase)op->phase) {
    case OC_PHASE_FWD:
        switch (part) {
        case OC_PART_EMBED:
            OC_ASSERT(chunk_first(r, ch));
            return oc_gpt_embed_fwd(k, c, &r->d, &r->p, tok, oc_rn_attn_in(r, mb, ch, 0),
                                    r->work);
        case OC_PART_ATTN:
            oc_rn_bind_attn(r, mb, ch, j, &aa);
            return oc_gpt_attn_fwd(k, c, &r->d, &r->p, l, &aa, attn_out(r, mb, ch, j),
                                   r->work);
        case OC_PART_MLP:
            bind_mlp(r, mb, ch, j, &ma);
            return oc_gpt_mlp_fwd(k, c, &r->d, &r->p, l, &ma, mlp_out(r, mb, ch, j),
                                  r->work);
        case OC_PART_HEAD:
            bind_head(r, mb, ch, &ha);
            return oc_gpt_head_fwd(k, c, &r->d, &r->p, &ha, tgt, r->losses + mb * r->N);
        default:
            break;
        }
        break;
    case OC_PHASE_RECOMPUTE:
        /* full recompute (gpt.h): the layer's forward again, into the
         * shared MLP input and a scratch output */
        OC_ASSERT(r->l->recompute == OC_RECOMPUTE_FULL);
        if (part == OC_PART_ATTN) {
            oc_rn_bind_attn(r, mb, ch, j, &aa);
            return oc_gpt_attn_fwd(k, c, &r->d, &r->p, l, &aa, full_rin(r), r->work);
        }
        if (part == OC_PART_MLP) {
            bind_mlp(r, mb, ch, j, &ma);
            return oc_gpt_mlp_fwd(k, c, &r->d, &r->p, l, &ma, full_junk(r), r->work);
        }
        break;
    case OC_PHASE_BWD:
        switch (part) {
        case OC_PART_HEAD:
            bind_head(r, mb, ch, &ha);
            return oc_gpt_head_bwd(k, c, &r->d, &r->p, &ha, tgt, r->grad_scale, r->gs,
                                   r->work);
        case OC_PART_MLP:
            bind_mlp(r, mb, ch, j, &ma);
            return oc_gpt_mlp_bwd(k, c, &r->d, &r->p, l, &ma, r->gs, r->gs, r->work);
        case OC_PART_ATTN: {
            oc_rn_bind_attn(r, mb, ch, j, &aa);
            float *din = j == 0 && !chunk_first(r, ch)
                             ? comm_buf(r, &r->send_grad[oc_rn_unit(r, mb, ch)])
                             : r->gs;
            return oc_gpt_attn_bwd(k, c, &r->d, &r->p, l, &aa, r->gs, din, r->work);
        }
        case OC_PART_EMBED:
            OC_ASSERT(chunk_first(r, ch));
            return oc_gpt_embed_bwd(k, c, &r->d, &r->p, tok, r->gs, r->work);
        default:
            break;
        }
        break;
    default:
        break;
    }
    OC_ASSERT(0); /* an op the layer-grain schedule does not emit */
    return -1;
}
