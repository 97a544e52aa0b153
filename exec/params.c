/* params.c: the executor's parameter table, arena, counter-based
 * initialisation, AdamW and shard copies (see params.h).
 *
 * What this file is not: model math or communication.
 */
#include "params.h"

#include <math.h>
#include <string.h>

static const char *const kind_names[OC_P_COUNT] = {
    [OC_P_WTE] = "wte",         [OC_P_WPE] = "wpe",
    [OC_P_LN1W] = "ln1w",       [OC_P_LN1B] = "ln1b",
    [OC_P_QKVW] = "qkvw",       [OC_P_QKVB] = "qkvb",
    [OC_P_ATTPROJW] = "attprojw", [OC_P_ATTPROJB] = "attprojb",
    [OC_P_LN2W] = "ln2w",       [OC_P_LN2B] = "ln2b",
    [OC_P_FCW] = "fcw",         [OC_P_FCB] = "fcb",
    [OC_P_FCPROJW] = "fcprojw", [OC_P_FCPROJB] = "fcprojb",
    [OC_P_LNFW] = "lnfw",       [OC_P_LNFB] = "lnfb",
    [OC_P_LMW] = "lmw",
};

const char *oc_param_name(enum oc_param_kind k)
{
    return (unsigned)k < OC_P_COUNT ? kind_names[k] : "?";
}

#define T_(k, pl, r, c, sp, in, dec)                                           \
    info[k] = (struct oc_param_info){kind_names[k], pl, r, c, sp, in, dec}

/* GPT-2 (Radford et al. 2019): LayerNorms with bias, biased linear layers,
 * learned positions, a GELU MLP of width F. */
static void info_gpt(const struct oc_model *m, struct oc_param_info info[OC_P_COUNT])
{
    const int64_t C = m->hidden_size, F = m->intermediate_size;
    const int64_t V = m->vocab_size, P = m->max_position_embeddings;
    const int64_t HS = C / m->num_attention_heads;
    const int64_t QKV = (m->num_attention_heads + 2 * m->num_key_value_heads) * HS;
    T_(OC_P_WTE, 0, V, C, OC_SPLIT_ROWS, OC_INIT_UNIFORM, 1);
    T_(OC_P_WPE, 0, P, C, OC_SPLIT_NONE, OC_INIT_UNIFORM, 1);
    T_(OC_P_LN1W, 1, C, 1, OC_SPLIT_NONE, OC_INIT_ONES, 0);
    T_(OC_P_LN1B, 1, C, 1, OC_SPLIT_NONE, OC_INIT_ZEROS, 0);
    T_(OC_P_QKVW, 1, QKV, C, OC_SPLIT_ROWS, OC_INIT_UNIFORM, 1);
    T_(OC_P_QKVB, 1, QKV, 1, OC_SPLIT_ROWS, OC_INIT_ZEROS, 0);
    T_(OC_P_ATTPROJW, 1, C, C, OC_SPLIT_COLS, OC_INIT_SCALED, 1);
    T_(OC_P_ATTPROJB, 1, C, 1, OC_SPLIT_NONE, OC_INIT_ZEROS, 0);
    T_(OC_P_LN2W, 1, C, 1, OC_SPLIT_NONE, OC_INIT_ONES, 0);
    T_(OC_P_LN2B, 1, C, 1, OC_SPLIT_NONE, OC_INIT_ZEROS, 0);
    T_(OC_P_FCW, 1, F, C, OC_SPLIT_ROWS, OC_INIT_UNIFORM, 1);
    T_(OC_P_FCB, 1, F, 1, OC_SPLIT_ROWS, OC_INIT_ZEROS, 0);
    T_(OC_P_FCPROJW, 1, C, F, OC_SPLIT_COLS, OC_INIT_SCALED, 1);
    T_(OC_P_FCPROJB, 1, C, 1, OC_SPLIT_NONE, OC_INIT_ZEROS, 0);
    T_(OC_P_LNFW, 0, C, 1, OC_SPLIT_NONE, OC_INIT_ONES, 0);
    T_(OC_P_LNFB, 0, C, 1, OC_SPLIT_NONE, OC_INIT_ZEROS, 0);
    T_(OC_P_LMW, 0, V, C, OC_SPLIT_ROWS, OC_INIT_UNIFORM, 1);
}

/* Llama (Touvron et al. 2023): RMSNorm gains, no biases, rotary positions
 * (no table), grouped-query QKV, the SwiGLU MLP's gate and up projections
 * fused into one (2F, C) matrix as Megatron-LM's linear_fc1. Initialised
 * as Megatron-LM does (std 0.02, output layers 0.02/sqrt(2L)). */
static void info_llama(const struct oc_model *m, struct oc_param_info info[OC_P_COUNT])
{
    const int64_t C = m->hidden_size, F = m->intermediate_size;
    const int64_t V = m->vocab_size;
    const int64_t HS = C / m->num_attention_heads;
    const int64_t QKV = (m->num_attention_heads + 2 * m->num_key_value_heads) * HS;
    T_(OC_P_WTE, 0, V, C, OC_SPLIT_ROWS, OC_INIT_UNIFORM, 1);
    T_(OC_P_LN1W, 1, C, 1, OC_SPLIT_NONE, OC_INIT_ONES, 0);
    T_(OC_P_QKVW, 1, QKV, C, OC_SPLIT_ROWS, OC_INIT_UNIFORM, 1);
    T_(OC_P_ATTPROJW, 1, C, C, OC_SPLIT_COLS, OC_INIT_SCALED, 1);
    T_(OC_P_LN2W, 1, C, 1, OC_SPLIT_NONE, OC_INIT_ONES, 0);
    T_(OC_P_FCW, 1, 2 * F, C, OC_SPLIT_ROWS_GLU, OC_INIT_UNIFORM, 1);
    T_(OC_P_FCPROJW, 1, C, F, OC_SPLIT_COLS, OC_INIT_SCALED, 1);
    T_(OC_P_LNFW, 0, C, 1, OC_SPLIT_NONE, OC_INIT_ONES, 0);
    T_(OC_P_LMW, 0, V, C, OC_SPLIT_ROWS, OC_INIT_UNIFORM, 1);
}
#undef T_

/* The one table of shapes: the family's, every other kind absent. */
void oc_params_info(const struct oc_model *m, struct oc_param_info info[OC_P_COUNT])
{
    for (int k = 0; k < OC_P_COUNT; k++)
        info[k] = (struct oc_param_info){.name = kind_names[k]};
    if (m->arch == OC_ARCH_LLAMA)
        info_llama(m, info);
    else
        info_gpt(m, info);
}

int oc_params_kind_in_model(const struct oc_model *m, enum oc_param_kind k)
{
    struct oc_param_info info[OC_P_COUNT];
    OC_ASSERT((unsigned)k < OC_P_COUNT);
    oc_params_info(m, info);
    return info[k].rows > 0;
}

/* The block the model's family must have for the executor's table. */
static int check_block(const struct oc_model *m, struct oc_status *st)
{
    if (m->arch == OC_ARCH_LLAMA) {
        if (m->learned_pos_emb || m->has_bias || !m->gated_mlp ||
            m->norm_params_per_h != 1)
            return oc_fail(st, "exec: model '%s' (%s) is not Llama style with rotary "
                               "positions, RMSNorm, no biases and a SwiGLU MLP; the "
                               "executor runs GPT-2 and Llama blocks only",
                           m->name, m->model_type);
        return 0;
    }
    if (m->arch != OC_ARCH_GPT || !m->learned_pos_emb || !m->has_bias ||
        m->gated_mlp || m->norm_params_per_h != 2)
        return oc_fail(st, "exec: model '%s' (%s) is not GPT style with "
                           "learned positions, LayerNorm, biases and a GELU "
                           "MLP; the executor runs GPT-2 and Llama blocks only",
                       m->name, m->model_type);
    if (m->num_key_value_heads != m->num_attention_heads)
        return oc_fail(st, "exec: model '%s' has %lld KV heads for %lld heads; "
                           "the executor runs grouped-query attention in Llama "
                           "blocks only",
                       m->name, (long long)m->num_key_value_heads,
                       (long long)m->num_attention_heads);
    return 0;
}

int oc_params_check_model(const struct oc_model *m, int64_t tp,
                          struct oc_status *st)
{
    if (check_block(m, st) != 0)
        return -1;
    if (m->hidden_size % m->num_attention_heads != 0 ||
        m->num_attention_heads % m->num_key_value_heads != 0)
        return oc_fail(st, "exec: hidden size %lld, %lld heads and %lld KV heads "
                           "do not divide", (long long)m->hidden_size,
                       (long long)m->num_attention_heads,
                       (long long)m->num_key_value_heads);
    if (tp < 1)
        return oc_fail(st, "exec: TP size %lld is below 1", (long long)tp);
    /* Megatron-LM splits the KV heads over TP (each rank holds whole KV
     * groups with their query heads); the layout rules require the same
     * (core/layout.c). */
    const struct {
        const char *what;
        int64_t n;
    } split[] = {
        {"heads", m->num_attention_heads},
        {"KV heads", m->num_key_value_heads},
        {"intermediate size", m->intermediate_size},
        {"vocabulary", m->vocab_size},
    };
    for (size_t i = 0; i < sizeof split / sizeof split[0]; i++)
        if (split[i].n % tp != 0)
            return oc_fail(st, "exec: %s %lld of model '%s' does not split "
                               "over TP %lld (the executor does not pad)",
                           split[i].what, (long long)split[i].n, m->name,
                           (long long)tp);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Counter-based generator                                              */

/* splitmix64 (Steele, Lea, Flood 2014; Vigna's reference constants). */
static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Uniform in [-1, 1) from the key (seed, kind, layer, index): 53 bits of
 * the hash scaled to [0, 1), then shifted. */
static double key_uniform(uint64_t seed, int kind, int64_t layer, int64_t idx)
{
    uint64_t base = splitmix64(splitmix64(seed ^ ((uint64_t)kind << 56)) ^
                               (uint64_t)(layer + 1));
    uint64_t h = splitmix64(base ^ (uint64_t)idx);
    return (double)(h >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
}

float oc_params_init_value(const struct oc_model *m, uint64_t seed,
                           enum oc_param_kind kind, int64_t layer,
                           int64_t row, int64_t col)
{
    struct oc_param_info info[OC_P_COUNT];
    oc_params_info(m, info);
    const struct oc_param_info *in = &info[kind];
    OC_ASSERT(row >= 0 && row < in->rows && col >= 0 && col < in->cols);
    /* GPT-2's initializer_range 0.02, residual projections scaled by
     * 1/sqrt(2L) (Radford et al. 2019, section 2.3). */
    double std = 0.02;
    switch (in->init) {
    case OC_INIT_ONES:
        return 1.0f;
    case OC_INIT_ZEROS:
        return 0.0f;
    case OC_INIT_SCALED:
        std = 0.02 / sqrt(2.0 * (double)m->num_hidden_layers);
        break;
    case OC_INIT_UNIFORM:
        break;
    }
    double u = key_uniform(seed, (int)kind, in->per_layer ? layer : -1,
                           row * in->cols + col);
    return (float)(u * std * sqrt(3.0)); /* uniform [-a, a): std a/sqrt(3) */
}

/* ------------------------------------------------------------------ */
/* Arena                                                                */

static int64_t *slot_of(const struct oc_params *p, enum oc_param_kind k,
                        int64_t layer)
{
    OC_ASSERT((unsigned)k < OC_P_COUNT);
    OC_ASSERT(layer >= -1 && layer < p->model.num_hidden_layers);
    return &p->slot[(layer + 1) * OC_P_COUNT + k];
}

/* Adds tensor (k, layer) where the model's family has that kind. */
static void add_tensor(struct oc_params *p, const struct oc_param_info *info,
                       enum oc_param_kind k, int64_t layer,
                       enum oc_param_kind init_kind)
{
    const struct oc_param_info *in = &info[k];
    if (in->rows == 0)
        return;
    struct oc_param_tensor *t = &p->t[p->nt];
    memset(t, 0, sizeof *t);
    t->kind = k;
    t->layer = layer;
    t->offset = p->n;
    t->grows = in->rows;
    t->gcols = in->cols;
    t->rows = in->rows;
    t->cols = in->cols;
    t->parts = in->split == OC_SPLIT_ROWS_GLU ? 2 : 1;
    if (in->split == OC_SPLIT_ROWS || in->split == OC_SPLIT_ROWS_GLU) {
        t->rows = in->rows / p->tp;
        t->row0 = p->tp_rank * (t->rows / t->parts);
    } else if (in->split == OC_SPLIT_COLS) {
        t->cols = in->cols / p->tp;
        t->col0 = p->tp_rank * t->cols;
    }
    t->init_kind = init_kind;
    t->decay = in->decay;
    *slot_of(p, k, layer) = p->nt;
    p->n += t->rows * t->cols;
    p->nt++;
}

void oc_params_slice(int64_t n, int64_t d, int64_t j, int64_t *lo, int64_t *hi)
{
    OC_ASSERT(n >= 0 && d >= 1 && j >= 0 && j < d);
    *lo = n * j / d;
    *hi = n * (j + 1) / d;
}

/* The optimizer states' layout: tensor i's owned slice at opt_off[i] of m
 * and v, the slices back to back (params.h, "Optimizer states"). */
static void opt_layout(struct oc_params *p, int64_t d, int64_t j)
{
    p->opt_d = d;
    p->opt_j = j;
    p->opt_off = oc_xmalloc((size_t)(p->nt > 0 ? p->nt : 1) * sizeof *p->opt_off);
    p->nopt = 0;
    for (int64_t i = 0; i < p->nt; i++) {
        int64_t lo, hi;
        oc_params_slice(p->t[i].rows * p->t[i].cols, d, j, &lo, &hi);
        p->opt_off[i] = p->nopt;
        p->nopt += hi - lo;
    }
}

double oc_params_optimizer_bytes(const struct oc_params *p)
{
    return 2.0 * (double)p->nopt * (double)sizeof(float);
}

int oc_params_init(struct oc_params *p, const struct oc_model *m,
                   const struct oc_params_opts *o, struct oc_status *st)
{
    return oc_params_init_sharded(p, m, o, 1, 0, st);
}

int oc_params_init_sharded(struct oc_params *p, const struct oc_model *m,
                           const struct oc_params_opts *o, int64_t opt_d,
                           int64_t opt_j, struct oc_status *st)
{
    memset(p, 0, sizeof *p);
    if (opt_d < 1 || opt_j < 0 || opt_j >= opt_d)
        return oc_fail(st, "exec: optimizer slice %lld of %lld",
                       (long long)opt_j, (long long)opt_d);
    if (oc_params_check_model(m, o->tp, st) != 0)
        return -1;
    if (o->tp_rank < 0 || o->tp_rank >= o->tp)
        return oc_fail(st, "exec: TP rank %lld is outside [0, %lld)",
                       (long long)o->tp_rank, (long long)o->tp);
    const int64_t L = m->num_hidden_layers;
    if (o->nlayers < 0 || o->nlayers > L || (o->nlayers > 0 && !o->layers))
        return oc_fail(st, "exec: %lld layers asked of a %lld-layer model",
                       (long long)o->nlayers, (long long)L);
    for (int64_t i = 0; i < o->nlayers; i++) {
        if (o->layers[i] < 0 || o->layers[i] >= L)
            return oc_fail(st, "exec: layer %lld is outside [0, %lld)",
                           (long long)o->layers[i], (long long)L);
        for (int64_t j = 0; j < i; j++)
            if (o->layers[j] == o->layers[i])
                return oc_fail(st, "exec: layer %lld is listed twice",
                               (long long)o->layers[i]);
    }

    p->model = *m;
    p->tp = o->tp;
    p->tp_rank = o->tp_rank;
    p->has_embed = o->has_embed != 0;
    p->has_head = o->has_head != 0;
    p->head_uses_wte = p->has_head && p->has_embed && m->tie_word_embeddings;
    p->slot = oc_xmalloc((size_t)((L + 1) * OC_P_COUNT) * sizeof *p->slot);
    for (int64_t i = 0; i < (L + 1) * OC_P_COUNT; i++)
        p->slot[i] = -1;
    p->t = oc_xcalloc((size_t)(OC_P_COUNT * (o->nlayers + 1)), sizeof *p->t);

    struct oc_param_info info[OC_P_COUNT];
    oc_params_info(m, info);
    if (p->has_embed) {
        add_tensor(p, info, OC_P_WTE, -1, OC_P_WTE);
        add_tensor(p, info, OC_P_WPE, -1, OC_P_WPE);
    }
    for (int64_t i = 0; i < o->nlayers; i++)
        for (int k = OC_P_FIRST_LAYER; k <= OC_P_LAST_LAYER; k++)
            add_tensor(p, info, (enum oc_param_kind)k, o->layers[i],
                       (enum oc_param_kind)k);
    if (p->has_head) {
        add_tensor(p, info, OC_P_LNFW, -1, OC_P_LNFW);
        add_tensor(p, info, OC_P_LNFB, -1, OC_P_LNFB);
        if (!p->head_uses_wte)
            add_tensor(p, info, OC_P_LMW, -1,
                       m->tie_word_embeddings ? OC_P_WTE : OC_P_LMW);
    }

    opt_layout(p, opt_d, opt_j);
    p->w = oc_xmalloc((size_t)p->n * sizeof *p->w);
    p->g = oc_xcalloc((size_t)p->n, sizeof *p->g);
    p->m = oc_xcalloc((size_t)(p->nopt > 0 ? p->nopt : 1), sizeof *p->m);
    p->v = oc_xcalloc((size_t)(p->nopt > 0 ? p->nopt : 1), sizeof *p->v);
    for (int64_t i = 0; i < p->nt; i++) {
        const struct oc_param_tensor *t = &p->t[i];
        float *w = p->w + t->offset;
        for (int64_t r = 0; r < t->rows; r++)
            for (int64_t c = 0; c < t->cols; c++)
                w[r * t->cols + c] =
                    oc_params_init_value(m, o->seed, t->init_kind, t->layer,
                                         oc_params_global_row(t, r), t->col0 + c);
    }
    return 0;
}

void oc_params_free(struct oc_params *p)
{
    if (!p)
        return;
    free(p->v);
    free(p->m);
    free(p->g);
    free(p->w);
    free(p->opt_off);
    free(p->t);
    free(p->slot);
    memset(p, 0, sizeof *p);
}

int oc_params_has(const struct oc_params *p, enum oc_param_kind k, int64_t layer)
{
    if (k == OC_P_LMW && p->head_uses_wte)
        k = OC_P_WTE;
    if (layer < -1 || layer >= p->model.num_hidden_layers)
        return 0;
    return *slot_of(p, k, layer) >= 0;
}

const struct oc_param_tensor *oc_params_tensor(const struct oc_params *p,
                                               enum oc_param_kind k,
                                               int64_t layer)
{
    if (k == OC_P_LMW && p->head_uses_wte)
        k = OC_P_WTE;
    int64_t i = *slot_of(p, k, layer);
    OC_ASSERT(i >= 0); /* the rank does not hold this tensor */
    return &p->t[i];
}

float *oc_params_w(const struct oc_params *p, enum oc_param_kind k, int64_t layer)
{
    return p->w + oc_params_tensor(p, k, layer)->offset;
}

float *oc_params_g(const struct oc_params *p, enum oc_param_kind k, int64_t layer)
{
    return p->g + oc_params_tensor(p, k, layer)->offset;
}

float *oc_params_w_opt(const struct oc_params *p, enum oc_param_kind k, int64_t layer)
{
    return oc_params_kind_in_model(&p->model, k) ? oc_params_w(p, k, layer) : NULL;
}

float *oc_params_g_opt(const struct oc_params *p, enum oc_param_kind k, int64_t layer)
{
    return oc_params_kind_in_model(&p->model, k) ? oc_params_g(p, k, layer) : NULL;
}

int64_t oc_params_global_row(const struct oc_param_tensor *t, int64_t r)
{
    OC_ASSERT(r >= 0 && r < t->rows && t->parts >= 1);
    const int64_t per = t->rows / t->parts; /* local rows of one part */
    return r / per * (t->grows / t->parts) + t->row0 + r % per;
}

void oc_params_zero_grad(struct oc_params *p)
{
    memset(p->g, 0, (size_t)p->n * sizeof *p->g);
}

float *oc_params_tied_grad(const struct oc_params *p, int64_t *n)
{
    *n = 0;
    if (!p->model.tie_word_embeddings || p->head_uses_wte)
        return NULL;
    const struct oc_param_tensor *t = NULL;
    if (p->has_embed)
        t = oc_params_tensor(p, OC_P_WTE, -1);
    else if (p->has_head)
        t = oc_params_tensor(p, OC_P_LMW, -1);
    if (!t)
        return NULL;
    *n = t->rows * t->cols;
    return p->g + t->offset;
}

/* ------------------------------------------------------------------ */
/* AdamW                                                                */

/* The owned slices in tensor order; a slice that follows the previous one
 * both in the arena and in m, v and shares its decay flag joins its run:
 * one kernel call per run (element-wise: the same numbers as one call per
 * tensor). With opt_d = 1 the slices are the tensors, back to back. */
void oc_params_adamw(const struct oc_kernels *k, struct oc_params *p,
                     const struct oc_adamw *h, int64_t step)
{
    OC_ASSERT(step >= 1);
    int64_t run_lo = 0, run_hi = 0, run_opt = 0; /* arena range, its m offset */
    int run_decay = 0;
    for (int64_t i = 0; i <= p->nt; i++) {
        int64_t lo = 0, hi = 0, opt = 0;
        int decay = 0;
        if (i < p->nt) {
            const struct oc_param_tensor *t = &p->t[i];
            oc_params_slice(t->rows * t->cols, p->opt_d, p->opt_j, &lo, &hi);
            lo += t->offset;
            hi += t->offset;
            opt = p->opt_off[i];
            decay = t->decay;
            if (hi <= lo)
                continue;
            if (run_hi > run_lo && decay == run_decay && lo == run_hi &&
                opt == run_opt + (run_hi - run_lo)) {
                run_hi = hi;
                continue;
            }
        }
        if (run_hi > run_lo)
            k->ops->adamw(k->ctx, p->w + run_lo, p->g + run_lo, p->m + run_opt,
                          p->v + run_opt, run_hi - run_lo, h, run_decay, step);
        run_lo = lo;
        run_hi = hi;
        run_opt = opt;
        run_decay = decay;
    }
}

/* ------------------------------------------------------------------ */
/* Shard <-> whole                                                      */

void oc_params_put_full(const struct oc_params *p, const float *arena,
                        const struct oc_param_tensor *t, float *full)
{
    (void)p;
    const float *src = arena + t->offset;
    for (int64_t r = 0; r < t->rows; r++)
        memcpy(full + oc_params_global_row(t, r) * t->gcols + t->col0,
               src + r * t->cols, (size_t)t->cols * sizeof *src);
}

void oc_params_take_full(const struct oc_params *p, float *arena,
                         const struct oc_param_tensor *t, const float *full)
{
    (void)p;
    float *dst = arena + t->offset;
    for (int64_t r = 0; r < t->rows; r++)
        memcpy(dst + r * t->cols, full + oc_params_global_row(t, r) * t->gcols + t->col0,
               (size_t)t->cols * sizeof *dst);
}

void oc_params_put_whole(const struct oc_params *shard, const float *src,
                         const struct oc_params *whole, float *dst)
{
    OC_ASSERT(whole->tp == 1);
    for (int64_t i = 0; i < shard->nt; i++) {
        const struct oc_param_tensor *t = &shard->t[i];
        enum oc_param_kind k = t->kind;
        if (k == OC_P_LMW && shard->model.tie_word_embeddings)
            k = OC_P_WTE; /* the tied copy */
        const struct oc_param_tensor *w = oc_params_tensor(whole, k, t->layer);
        OC_ASSERT(w->rows == t->grows && w->cols == t->gcols);
        oc_params_put_full(shard, src, t, dst + w->offset);
    }
}
