/* llama.c: Llama's block (Touvron et al. 2023; Hugging Face's
 * modeling_llama.py) for the executor's model (gpt.c): RMSNorm with the
 * config's rms_norm_eps, rotary position embeddings on the queries and
 * keys (Su et al. 2021) with the config's rope_theta and rope_scaling,
 * and SwiGLU over the fused gate | up projection (Shazeer 2020;
 * Megatron-LM's linear_fc1).
 *
 * What this file is: the family's operations (block.h) as calls of the
 * kernel table, its check, and the rotary frequencies (transformers'
 * modeling_rope_utils.py: the default, "linear" and "llama3" rules). What
 * it is not: the parts, their all-reduces and buffers (gpt.c, shared with
 * GPT-2), the tensor table (params.c), or a kernel.
 */
#include "block.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Rotary frequencies                                                   */

/* inv_freq[i] = theta^(-2i/HS) (RoFormer, eq. 15), then rope_scaling:
 *   linear  every frequency / factor (positions / factor);
 *   llama3  with the wavelengths 2 pi / inv_freq measured against the
 *           original context L0: below L0 / high_freq_factor kept, above
 *           L0 / low_freq_factor divided by factor, between a blend with
 *           s = (L0 / wavelength - low) / (high - low):
 *           (1 - s) * inv_freq / factor + s * inv_freq
 *           (transformers' _compute_llama3_parameters).
 * Computed in double, rounded to float once. */
static double inv_freq(const struct oc_model *m, int64_t i, int64_t HS)
{
    const double f = pow(m->rope_theta, -(double)(2 * i) / (double)HS);
    const struct oc_rope_scaling *r = &m->rope_scaling;
    if (strcmp(r->type, "linear") == 0)
        return f / r->factor;
    if (strcmp(r->type, "llama3") != 0)
        return f;
    const double pi = 3.14159265358979323846;
    const double L0 = (double)r->original_max_position_embeddings;
    const double wavelen = 2.0 * pi / f;
    if (wavelen < L0 / r->high_freq_factor)
        return f;
    if (wavelen > L0 / r->low_freq_factor)
        return f / r->factor;
    const double s = (L0 / wavelen - r->low_freq_factor) /
                     (r->high_freq_factor - r->low_freq_factor);
    return (1.0 - s) * f / r->factor + s * f;
}

/* The scalings whose rule is above; another is refused. */
static int known_scaling(const char *type)
{
    return type[0] == '\0' || strcmp(type, "linear") == 0 || strcmp(type, "llama3") == 0;
}

static int llama_check(const struct oc_model *m, struct oc_status *st)
{
    const int64_t HS = m->hidden_size / m->num_attention_heads;
    if (!known_scaling(m->rope_scaling.type))
        return oc_fail(st, "exec: model '%s' has rope_scaling type '%s'; the executor "
                           "runs none, 'linear' and 'llama3'",
                       m->name, m->rope_scaling.type);
    if (HS % 2 != 0 || HS / 2 > OC_ROPE_MAX_PAIRS)
        return oc_fail(st, "exec: model '%s' has head size %lld; rotary embeddings "
                           "need an even head size of at most %d",
                       m->name, (long long)HS, 2 * OC_ROPE_MAX_PAIRS);
    if (!(m->rms_norm_eps > 0.0) || !(m->rope_theta > 0.0))
        return oc_fail(st, "exec: model '%s' has rms_norm_eps %g and rope_theta %g; "
                           "both must be above 0",
                       m->name, m->rms_norm_eps, m->rope_theta);
    return 0;
}

static void llama_dims(struct oc_gpt_dims *d, const struct oc_model *m)
{
    d->eps = (float)m->rms_norm_eps;
    d->rope.pairs = d->HS / 2;
    for (int64_t i = 0; i < d->rope.pairs; i++)
        d->rope.inv_freq[i] = (float)inv_freq(m, i, d->HS);
}

/* ------------------------------------------------------------------ */
/* The block's operations                                               */

/* RMSNorm keeps rstd only; it has no bias. */
static void rms_fwd(const struct oc_kernels *k, const struct oc_gpt_dims *d, float *out,
                    float *mean, float *rstd, const float *in, const float *w,
                    const float *b, int64_t N)
{
    OC_ASSERT(!mean && !b);
    k->ops->rmsnorm_fwd(k->ctx, out, rstd, in, w, N, d->C, d->eps);
}

static void rms_bwd(const struct oc_kernels *k, const struct oc_gpt_dims *d, float *din,
                    float *dw, float *db, const float *dout, const float *in,
                    const float *w, const float *mean, const float *rstd, int64_t N)
{
    OC_ASSERT(!db && !mean);
    k->ops->rmsnorm_bwd(k->ctx, din, dw, dout, in, w, rstd, N, d->C);
}

static void rope_fwd(const struct oc_kernels *k, const struct oc_gpt_dims *d, float *qkv)
{
    k->ops->rope_fwd(k->ctx, qkv, &d->rope, d->B, d->T, d->nh, d->nkv, d->HS);
}

static void rope_bwd(const struct oc_kernels *k, const struct oc_gpt_dims *d, float *dqkv)
{
    k->ops->rope_bwd(k->ctx, dqkv, &d->rope, d->B, d->T, d->nh, d->nkv, d->HS);
}

static void swiglu_fwd(const struct oc_kernels *k, const struct oc_gpt_dims *d, float *hg,
                       const float *h)
{
    k->ops->swiglu_fwd(k->ctx, hg, h, d->B * d->T, d->f);
}

/* d(hg) (N, f) at the start of work; d(h) (N, 2f) after it. */
static float *swiglu_bwd(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                         float *work, const float *h)
{
    const int64_t N = d->B * d->T;
    float *dh = work + oc_gpt_piece(k, N * d->f);
    k->ops->swiglu_bwd(k->ctx, dh, work, h, N, d->f);
    return dh;
}

static int64_t swiglu_work_floats(const struct oc_kernels *k, const struct oc_gpt_dims *d)
{
    const int64_t N = d->B * d->T;
    return oc_gpt_piece(k, N * d->f) + oc_gpt_piece(k, N * 2 * d->f);
}

const struct oc_gpt_block oc_gpt_block_llama = {
    .name = "llama",
    .norm_stats = 1,
    .mlp_up = 2,
    .check = llama_check,
    .dims = llama_dims,
    .norm_fwd = rms_fwd,
    .norm_bwd = rms_bwd,
    .qk_fwd = rope_fwd,
    .qk_bwd = rope_bwd,
    .act_fwd = swiglu_fwd,
    .act_bwd = swiglu_bwd,
    .act_work_floats = swiglu_work_floats,
};
