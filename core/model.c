/* model.c: read a decoder-only transformer from a Hugging Face config.json
 * and count its parameters and FLOPs (see model.h).
 *
 * It is not a general config.json reader: it takes the fields that decide
 * the size and cost of a dense decoder (no mixture of experts, no encoder),
 * ignores every other key, and refuses model types whose block it does not
 * know.
 *
 * Legend (as in model.h): h hidden, a heads, k KV heads, f intermediate,
 * L layers, V vocabulary, P positions, s sequence, b micro-batch, t TP.
 */
#define _POSIX_C_SOURCE 200809L
#include "model.h"

#include <math.h>
#include <string.h>

#include "json_util.h"
#include "model_features.h"
#include "paths.h"

/* Limits past which a number is a typo, not a model. The largest dense
 * models published have h = 25600 (PaLM 540B: 18432; Megatron 1T: 25600),
 * L = 128, f = 4h, V = 256k; these leave two orders of magnitude. */
#define OC_MODEL_MAX_HIDDEN 1000000LL       /* 1e6 */
#define OC_MODEL_MAX_HEADS 100000LL         /* 1e5 */
#define OC_MODEL_MAX_LAYERS 100000LL        /* 1e5 */
#define OC_MODEL_MAX_INTERMEDIATE 10000000LL /* 1e7 */
#define OC_MODEL_MAX_VOCAB 100000000LL      /* 1e8 */
#define OC_MODEL_MAX_POSITIONS 100000000LL  /* 1e8 */

/* What a model_type means. Defaults are those of the Hugging Face config
 * class of that type (transformers 4.x), so a config.json that leaves a
 * field out reads as transformers would read it. */
struct oc_family {
    const char *model_type;
    enum oc_arch arch;
    int learned_pos_emb; /* a P x h position table (else rotary) */
    int tie_default;     /* tie_word_embeddings when absent */
    int dropout_default; /* dropout on when no dropout field is given */
    const char *act_default; /* hidden_act when absent (NULL: none to check) */
};

/* What a family's config class turns on by default and ocsim does not
 * model (GPT-NeoX's parallel residual and partial rotary, OPT's ReLU) is
 * refused by model_features.c unless the file turns it off. */
static const struct oc_family oc_families[] = {
    /* LlamaConfig: tie_word_embeddings=False, attention_dropout=0.0, rotary,
     * RMSNorm, LlamaMLP gate/up/down, hidden_act="silu". MistralConfig
     * alike (its sliding_window is refused where set). */
    {"llama", OC_ARCH_LLAMA, 0, 0, 0, "silu"},
    {"mistral", OC_ARCH_LLAMA, 0, 0, 0, "silu"},
    /* GPT2Config: n_positions table, attn/resid/embd_pdrop=0.1, tied,
     * activation_function="gelu_new". */
    {"gpt2", OC_ARCH_GPT, 1, 1, 1, "gelu_new"},
    /* Not a Hugging Face type: GPT-3 is GPT-2's block (Brown et al. 2020,
     * sec. 2.1, "the same model and architecture as GPT-2"). */
    {"gpt3", OC_ARCH_GPT, 1, 1, 1, NULL},
    /* OPTConfig: learned positions, dropout=0.1, tied, ReLU by default.
     * (OPT's table has P + 2 rows; the 2 extra rows are not counted.) */
    {"opt", OC_ARCH_GPT, 1, 1, 1, "relu"},
    /* GPTNeoXConfig: rotary, tie_word_embeddings=False, hidden_dropout=0.0,
     * attention_dropout=0.0, hidden_act="gelu". */
    {"gpt_neox", OC_ARCH_GPT, 0, 0, 0, "gelu"},
};
#define OC_N_FAMILIES (sizeof oc_families / sizeof oc_families[0])

/* Types close to a family above whose block differs in what a step
 * computes: refused by name rather than read as the family. */
static const struct {
    const char *model_type, *why;
} oc_refused_types[] = {
    /* Qwen2Attention: q_proj, k_proj and v_proj with bias=True. */
    {"qwen2", "its q/k/v projections have biases, which the Llama-style block has not"},
    /* GPTJBlock: attention and MLP in parallel from one LayerNorm, rotary
     * on rotary_dim of each head. */
    {"gptj", "its block runs attention and the MLP in parallel and rotates part of "
             "each head"},
    /* MixtralConfig, Qwen2MoeConfig: a mixture of experts. */
    {"mixtral", "it is a mixture of experts"},
    {"qwen2_moe", "it is a mixture of experts"},
};

static const struct oc_family *find_family(const char *type)
{
    for (size_t i = 0; i < OC_N_FAMILIES; i++)
        if (strcmp(oc_families[i].model_type, type) == 0)
            return &oc_families[i];
    return NULL;
}

/* The field names a message uses: those the file used (n_embd...), or the
 * Hugging Face names for a model built in code. */
struct oc_model_names {
    const char *h, *a, *k, *L, *f, *V, *P;
};

static const struct oc_model_names oc_hf_names = {
    "hidden_size", "num_attention_heads", "num_key_value_heads",
    "num_hidden_layers", "intermediate_size", "vocab_size",
    "max_position_embeddings",
};

static int check_pos(const char *where, const char *field, int64_t v,
                     int64_t max, struct oc_status *st)
{
    return oc_json_check_int(where, field, (double)v, 1, max, st);
}

static int check_model(const struct oc_model *m, const char *where,
                       const struct oc_model_names *nm, struct oc_status *st)
{
    if (check_pos(where, nm->h, m->hidden_size, OC_MODEL_MAX_HIDDEN, st) ||
        check_pos(where, nm->a, m->num_attention_heads, OC_MODEL_MAX_HEADS, st) ||
        check_pos(where, nm->k, m->num_key_value_heads, OC_MODEL_MAX_HEADS, st) ||
        check_pos(where, nm->L, m->num_hidden_layers, OC_MODEL_MAX_LAYERS, st) ||
        check_pos(where, nm->f, m->intermediate_size, OC_MODEL_MAX_INTERMEDIATE, st) ||
        check_pos(where, nm->V, m->vocab_size, OC_MODEL_MAX_VOCAB, st) ||
        check_pos(where, nm->P, m->max_position_embeddings, OC_MODEL_MAX_POSITIONS, st))
        return -1;
    /* Multi-head attention splits h into a heads of h/a each (Vaswani et
     * al. 2017, sec. 3.2.2); transformers raises the same error. */
    if (m->hidden_size % m->num_attention_heads != 0)
        return oc_fail(st, "%s: field '%s' (%lld) must divide '%s' (%lld)",
                       where, nm->a, (long long)m->num_attention_heads, nm->h,
                       (long long)m->hidden_size);
    /* Grouped-query attention: each KV head serves a/k query heads
     * (Ainslie et al. 2023). */
    if (m->num_attention_heads % m->num_key_value_heads != 0)
        return oc_fail(st, "%s: field '%s' (%lld) must divide '%s' (%lld)",
                       where, nm->k, (long long)m->num_key_value_heads, nm->a,
                       (long long)m->num_attention_heads);
    if (m->arch != OC_ARCH_GPT && m->arch != OC_ARCH_LLAMA)
        return oc_fail(st, "%s: unknown architecture %d", where, (int)m->arch);
    if (m->norm_params_per_h != 1 && m->norm_params_per_h != 2)
        return oc_fail(st, "%s: norm_params_per_h must be 1 (RMSNorm) or 2 (LayerNorm) (got %d)",
                       where, m->norm_params_per_h);
    return 0;
}

int oc_model_check(const struct oc_model *m, const char *where,
                   struct oc_status *st)
{
    return check_model(m, where, &oc_hf_names, st);
}

/* Read one quantity that config.json may spell several ways (hidden_size
 * or GPT-2's n_embd). Two spellings that disagree are an error. *used gets
 * the spelling found (or the first one when absent). */
static int read_alias(const struct oc_json_obj *o, const char *const *names,
                      int required, int64_t max, int64_t *out,
                      const char **used, struct oc_status *st)
{
    int have = 0;
    *used = names[0];
    for (int i = 0; names[i]; i++) {
        if (!oc_json_has(o, names[i]))
            continue;
        int64_t v = 0;
        if (oc_json_int(o, names[i], OC_JSON_REQUIRED, 1, max, &v, NULL, st))
            return -1;
        if (!have) {
            *out = v;
            *used = names[i];
            have = 1;
        } else if (v != *out) {
            return oc_fail(st, "%s: fields '%s' (%lld) and '%s' (%lld) disagree",
                           o->file, *used, (long long)*out, names[i],
                           (long long)v);
        }
    }
    if (have || !required)
        return 0;
    char also[128] = "";
    size_t used_n = 0;
    for (int i = 1; names[i]; i++)
        used_n += (size_t)snprintf(also + used_n, sizeof also - used_n,
                                   "%s'%s'", i > 1 ? " or " : " (or ", names[i]);
    if (used_n)
        snprintf(also + used_n, sizeof also - used_n, ")");
    return oc_fail(st, "%s: field '%s'%s is missing", o->file, names[0], also);
}

/* Every dropout field transformers uses for these types; a dropout
 * probability is in [0, 1). */
static const char *const oc_dropout_fields[] = {
    "attention_dropout", "attn_pdrop", "resid_pdrop", "embd_pdrop",
    "hidden_dropout", "dropout", "hidden_dropout_prob",
    "attention_probs_dropout_prob", NULL,
};

static void file_stem(const char *path, char *out, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".json") == 0)
        len -= 5;
    if (len >= n)
        len = oc_utf8_fit(base, n - 1);
    memcpy(out, base, len);
    out[len] = '\0';
}

/* model_type: the family, which decides the defaults of the rest. */
static const struct oc_family *read_family(const struct oc_json_obj *o, struct oc_model *m,
                                           struct oc_status *st)
{
    char type[64], q[OC_QUOTE_MAX];
    if (oc_json_str(o, "model_type", OC_JSON_REQUIRED, type, sizeof type, NULL, st))
        return NULL;
    const struct oc_family *fam = find_family(type);
    for (size_t i = 0; !fam && i < sizeof oc_refused_types / sizeof oc_refused_types[0]; i++)
        if (strcmp(type, oc_refused_types[i].model_type) == 0) {
            oc_fail(st, "%s: field 'model_type' is '%s', which ocsim does not model (%s)",
                    o->file, type, oc_refused_types[i].why);
            return NULL;
        }
    if (!fam) {
        char list[256];
        size_t used = 0;
        for (size_t i = 0; i < OC_N_FAMILIES; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s",
                                     i ? ", " : "", oc_families[i].model_type);
        oc_fail(st, "%s: field 'model_type' is '%s', which ocsim does not know (supported: %s)",
                o->file, oc_quote(q, sizeof q, type), list);
        return NULL;
    }
    snprintf(m->model_type, sizeof m->model_type, "%s", fam->model_type);
    m->arch = fam->arch;
    return fam;
}

/* The sizes h, a, k, L, f, V, P under any of their spellings; nm gets the
 * spellings used, for the messages of check_model. */
static int read_sizes(const struct oc_json_obj *o, const struct oc_family *fam,
                      struct oc_model *m, struct oc_model_names *nm, struct oc_status *st)
{
    static const char *const h_names[] = {"hidden_size", "n_embd", NULL};
    static const char *const a_names[] = {"num_attention_heads", "n_head", NULL};
    static const char *const k_names[] = {"num_key_value_heads", NULL};
    static const char *const L_names[] = {"num_hidden_layers", "n_layer", NULL};
    static const char *const f_names[] = {"intermediate_size", "n_inner", "ffn_dim", NULL};
    static const char *const V_names[] = {"vocab_size", NULL};
    static const char *const P_names[] = {"max_position_embeddings", "n_positions", NULL};

    if (read_alias(o, h_names, 1, OC_MODEL_MAX_HIDDEN, &m->hidden_size, &nm->h, st) ||
        read_alias(o, a_names, 1, OC_MODEL_MAX_HEADS, &m->num_attention_heads, &nm->a, st) ||
        read_alias(o, L_names, 1, OC_MODEL_MAX_LAYERS, &m->num_hidden_layers, &nm->L, st) ||
        read_alias(o, V_names, 1, OC_MODEL_MAX_VOCAB, &m->vocab_size, &nm->V, st) ||
        read_alias(o, P_names, 1, OC_MODEL_MAX_POSITIONS, &m->max_position_embeddings, &nm->P, st))
        return -1;

    /* num_key_value_heads: LlamaConfig sets it to num_attention_heads when
     * absent or null (no grouped-query attention). */
    m->num_key_value_heads = m->num_attention_heads;
    if (read_alias(o, k_names, 0, OC_MODEL_MAX_HEADS, &m->num_key_value_heads, &nm->k, st))
        return -1;

    /* intermediate_size: GPT-2's n_inner=None means 4*n_embd (GPT2MLP in
     * transformers; Radford et al. 2018 "3072 dimensional inner states" for
     * h = 768). Llama-style configs always give it. */
    int64_t f = 0;
    if (read_alias(o, f_names, 0, OC_MODEL_MAX_INTERMEDIATE, &f, &nm->f, st))
        return -1;
    if (f == 0) {
        if (fam->arch == OC_ARCH_LLAMA)
            return oc_fail(st, "%s: field 'intermediate_size' is missing", o->file);
        f = 4 * m->hidden_size;
    }
    m->intermediate_size = f;
    return 0;
}

/* The block: MLP shape, biases, norms, positions, tied embeddings. */
static int read_block(const struct oc_json_obj *o, const struct oc_family *fam,
                      struct oc_model *m, struct oc_status *st)
{
    /* hidden_act (GPT-2, GPT-J and OPT call it activation_function). */
    char act[64] = "";
    int have_act = 0, have_act2 = 0;
    if (oc_json_str(o, "hidden_act", OC_JSON_OPTIONAL, act, sizeof act, &have_act, st))
        return -1;
    if (!have_act &&
        oc_json_str(o, "activation_function", OC_JSON_OPTIONAL, act, sizeof act, &have_act2, st))
        return -1;
    if (oc_model_check_activation(o, have_act2 ? "activation_function" : "hidden_act", act,
                                  fam->act_default, fam->arch, st) != 0)
        return -1;
    int act_gated = strcmp(act, "silu") == 0 || strcmp(act, "swiglu") == 0 ||
                    strcmp(act, "swish") == 0;

    if (fam->arch == OC_ARCH_LLAMA) {
        /* Touvron et al. 2023 (Llama 2), sec. 2.2: RMSNorm, SwiGLU, rotary.
         * RMSNorm has one gain per channel (Zhang & Sennrich 2019); the
         * LlamaMLP has gate, up and down projections and no bias (its
         * hidden_act is SiLU: oc_model_check_activation refused others). */
        m->gated_mlp = 1;
        m->has_bias = 0;
        m->norm_params_per_h = 1;
    } else {
        /* Radford et al. 2019 (GPT-2): LayerNorm (gain and bias, Ba et al.
         * 2016), biased linear layers, two-matrix GELU MLP. A GPT-style
         * config that names silu/swiglu gets the three-matrix MLP, as
         * Megatron-LM's --swiglu does. */
        m->gated_mlp = act_gated;
        m->has_bias = 1;
        m->norm_params_per_h = 2;
    }
    m->learned_pos_emb = fam->learned_pos_emb;

    m->tie_word_embeddings = fam->tie_default;
    return oc_json_bool(o, "tie_word_embeddings", OC_JSON_OPTIONAL, &m->tie_word_embeddings,
                        NULL, st);
}

/* Dropout: on when any dropout field is > 0; when none is given, the
 * config class's default (GPT-2: 0.1). */
static int read_dropout(const struct oc_json_obj *o, const struct oc_family *fam,
                        struct oc_model *m, struct oc_status *st)
{
    struct oc_json_rule prob = {0.0, 0, 1.0, 1, -INFINITY, INFINITY, NULL};
    int any_field = 0;
    double max_p = 0.0;
    for (int i = 0; oc_dropout_fields[i]; i++) {
        double p = 0.0;
        int found = 0;
        if (oc_json_num(o, oc_dropout_fields[i], OC_JSON_OPTIONAL, &prob, &p, &found, st))
            return -1;
        if (found) {
            any_field = 1;
            if (p > max_p)
                max_p = p;
        }
    }
    m->has_dropout = any_field ? (max_p > 0.0) : fam->dropout_default;
    return 0;
}

/* rope_scaling: an object (or null: none) naming its type as "rope_type"
 * (transformers >= 4.43) or "type" (before); "default" is none. The
 * numbers of the types ocsim-exec runs are read and checked as
 * transformers' _validate_linear_scaling_rope_parameters and
 * _validate_llama3_parameters check them; another type keeps its name. */
static int read_rope_scaling(const struct oc_json_obj *o, struct oc_model *m,
                             struct oc_status *st)
{
    struct oc_rope_scaling *r = &m->rope_scaling;
    struct oc_json_obj rs;
    int found = 0;
    if (oc_json_obj_field(o, "rope_scaling", OC_JSON_OPTIONAL, &rs, &found, st))
        return -1;
    if (!found)
        return 0;
    int named = 0;
    if (oc_json_str(&rs, "rope_type", OC_JSON_OPTIONAL, r->type, sizeof r->type, &named,
                    st))
        return -1;
    if (!named &&
        oc_json_str(&rs, "type", OC_JSON_REQUIRED, r->type, sizeof r->type, NULL, st))
        return -1;
    if (strcmp(r->type, "default") == 0) {
        r->type[0] = '\0';
        return 0;
    }
    const struct oc_json_rule above0 = {0.0, 1, INFINITY, 0, -INFINITY, 1e6, NULL};
    const int linear = strcmp(r->type, "linear") == 0;
    const int llama3 = strcmp(r->type, "llama3") == 0;
    if ((linear || llama3) &&
        oc_json_num(&rs, "factor", OC_JSON_REQUIRED, &above0, &r->factor, NULL, st))
        return -1;
    if (!llama3)
        return 0;
    if (oc_json_num(&rs, "low_freq_factor", OC_JSON_REQUIRED, &above0,
                    &r->low_freq_factor, NULL, st) ||
        oc_json_num(&rs, "high_freq_factor", OC_JSON_REQUIRED, &above0,
                    &r->high_freq_factor, NULL, st) ||
        oc_json_int(&rs, "original_max_position_embeddings", OC_JSON_REQUIRED, 1,
                    OC_MODEL_MAX_POSITIONS, &r->original_max_position_embeddings, NULL,
                    st))
        return -1;
    if (r->high_freq_factor <= r->low_freq_factor)
        return oc_fail(st, "%s: field 'rope_scaling.high_freq_factor' (%g) must be above "
                           "'rope_scaling.low_freq_factor' (%g)",
                       o->file, r->high_freq_factor, r->low_freq_factor);
    return 0;
}

/* The Llama-style block's numbers: rms_norm_eps and rope_theta with
 * LlamaConfig's defaults (1e-6, 10000.0; MistralConfig and Qwen2Config
 * alike), and rope_scaling. GPT-style blocks keep 0 (their LayerNorm eps
 * is GPT-2's layer_norm_epsilon 1e-5, which ocsim does not read). */
static int read_rotary(const struct oc_json_obj *o, const struct oc_family *fam,
                       struct oc_model *m, struct oc_status *st)
{
    if (fam->arch != OC_ARCH_LLAMA)
        return 0;
    const struct oc_json_rule eps = {0.0, 1, 1.0, 1, -INFINITY, 0.1, NULL};
    const struct oc_json_rule theta = {0.0, 1, INFINITY, 0, 1.0, 1e12, NULL};
    m->rms_norm_eps = 1e-6;
    m->rope_theta = 10000.0;
    if (oc_json_num(o, "rms_norm_eps", OC_JSON_OPTIONAL, &eps, &m->rms_norm_eps, NULL,
                    st) ||
        oc_json_num(o, "rope_theta", OC_JSON_OPTIONAL, &theta, &m->rope_theta, NULL, st))
        return -1;
    return read_rope_scaling(o, m, st);
}

/* name: "_name_or_path" when present and not empty, else the file's stem. */
static int read_name(const struct oc_json_obj *o, struct oc_model *m, struct oc_status *st)
{
    char path_name[512] = "";
    int have_name = 0;
    if (oc_json_str(o, "_name_or_path", OC_JSON_OPTIONAL, path_name,
                    sizeof path_name, &have_name, st))
        return -1;
    if (have_name && path_name[0])
        snprintf(m->name, sizeof m->name, "%.*s",
                 (int)oc_utf8_fit(path_name, sizeof m->name - 1), path_name);
    else
        file_stem(o->path, m->name, sizeof m->name);
    return 0;
}

/* The fields in the order their errors are reported: model_type, sizes,
 * block, dropout, the rotary numbers, head_dim, the checks of check_model,
 * the name. */
static int read_model(const struct oc_json_obj *o, struct oc_model *m,
                      struct oc_status *st)
{
    struct oc_model_names nm = oc_hf_names;
    const struct oc_family *fam = read_family(o, m, st);
    if (!fam || oc_model_refuse_unmodelled(o, fam->model_type, fam->arch, st) ||
        read_sizes(o, fam, m, &nm, st) || read_block(o, fam, m, st) ||
        read_dropout(o, fam, m, st) || read_rotary(o, fam, m, st))
        return -1;

    /* head_dim: newer Llama configs may give it; ocsim assumes h / a. */
    int64_t head_dim = 0;
    int have_hd = 0;
    if (oc_json_int(o, "head_dim", OC_JSON_OPTIONAL, 1, OC_MODEL_MAX_HIDDEN,
                    &head_dim, &have_hd, st))
        return -1;
    if (check_model(m, o->file, &nm, st))
        return -1;
    if (have_hd && head_dim * m->num_attention_heads != m->hidden_size)
        return oc_fail(st, "%s: field 'head_dim' (%lld) must equal '%s' / '%s' (%lld); ocsim does not model other head sizes",
                       o->file, (long long)head_dim, nm.h, nm.a,
                       (long long)(m->hidden_size / m->num_attention_heads));
    return read_name(o, m, st);
}

/* The model of a parsed document (NULL: the parse failed, st says why);
 * takes the reference. */
static int read_root(json_t *root, const char *where, struct oc_model *m,
                     struct oc_status *st)
{
    if (!root)
        return -1;
    struct oc_json_obj o = oc_json_root(root, where);
    int rc = read_model(&o, m, st);
    json_decref(root);
    if (rc)
        memset(m, 0, sizeof *m);
    return rc;
}

int oc_model_load(const char *path_or_name, struct oc_model *m,
                  struct oc_status *st)
{
    memset(m, 0, sizeof *m);
    char path[4096];
    if (oc_data_path("models", path_or_name, path, sizeof path, st))
        return -1;
    return read_root(oc_json_load_file(path, st), path, m, st);
}

int oc_model_parse(const char *text, size_t n, const char *where,
                   struct oc_model *m, struct oc_status *st)
{
    memset(m, 0, sizeof *m);
    return read_root(oc_json_load_buffer(text, n, where, st), where, m, st);
}

int64_t oc_model_head_dim(const struct oc_model *m)
{
    OC_ASSERT(m->num_attention_heads > 0);
    return m->hidden_size / m->num_attention_heads;
}

int64_t oc_model_kv_dim(const struct oc_model *m)
{
    return m->num_key_value_heads * oc_model_head_dim(m);
}

/* Q (h x h), K and V (h x kv_dim each), output (h x h). */
int64_t oc_model_attn_matmul_params(const struct oc_model *m)
{
    int64_t h = m->hidden_size;
    return h * h + 2 * h * oc_model_kv_dim(m) + h * h;
}

/* Two h x f matrices (up, down), or three with a gate (Shazeer 2020,
 * "GLU Variants Improve Transformer"). */
int64_t oc_model_mlp_matmul_params(const struct oc_model *m)
{
    return (m->gated_mlp ? 3 : 2) * m->hidden_size * m->intermediate_size;
}

/* Biases of a layer, split as Megatron-LM splits them (Shoeybi et al. 2019,
 * sec. 3): the column-parallel ones (QKV, first MLP matrix / gate and up)
 * are divided over TP ranks; the row-parallel output biases are whole. */
static int64_t col_bias(const struct oc_model *m)
{
    if (!m->has_bias)
        return 0;
    return (m->hidden_size + 2 * oc_model_kv_dim(m)) +
           (m->gated_mlp ? 2 : 1) * m->intermediate_size;
}

static int64_t row_bias(const struct oc_model *m)
{
    return m->has_bias ? 2 * m->hidden_size : 0; /* attention out + MLP out */
}

/* Two norms per layer (before attention, before the MLP: pre-norm). */
static int64_t layer_norm_params(const struct oc_model *m)
{
    return 2 * (int64_t)m->norm_params_per_h * m->hidden_size;
}

int64_t oc_model_layer_params(const struct oc_model *m)
{
    return oc_model_attn_matmul_params(m) + oc_model_mlp_matmul_params(m) +
           col_bias(m) + row_bias(m) + layer_norm_params(m);
}

int64_t oc_model_layer_params_tp(const struct oc_model *m, int64_t tp)
{
    OC_ASSERT(tp >= 1);
    return (oc_model_attn_matmul_params(m) + oc_model_mlp_matmul_params(m)) / tp +
           col_bias(m) / tp + row_bias(m) + layer_norm_params(m);
}

int64_t oc_model_embedding_params(const struct oc_model *m)
{
    int64_t n = m->vocab_size * m->hidden_size;
    if (m->learned_pos_emb)
        n += m->max_position_embeddings * m->hidden_size;
    return n;
}

/* The final norm, and the output projection unless it is the (transposed)
 * input embedding (Press & Wolf 2017). */
int64_t oc_model_head_params(const struct oc_model *m)
{
    int64_t n = (int64_t)m->norm_params_per_h * m->hidden_size;
    if (!m->tie_word_embeddings)
        n += m->vocab_size * m->hidden_size;
    return n;
}

int64_t oc_model_params_total(const struct oc_model *m)
{
    return m->num_hidden_layers * oc_model_layer_params(m) +
           oc_model_embedding_params(m) + oc_model_head_params(m);
}

/* FLOPs: 2 per multiply-add, so a GEMM with P weights costs 2*P per token
 * (Kaplan et al. 2020, sec. 2.1; Narayanan et al. 2021, eq. 2). Scores
 * Q K^T and the weighted sum of V each cost 2*b*s*s*h over all heads; the
 * full s x s is counted, as Megatron-LM does. */
double oc_model_attn_fwd_flops(const struct oc_model *m, int64_t b, int64_t s)
{
    double bs = (double)b * (double)s;
    return 2.0 * bs * (double)oc_model_attn_matmul_params(m) +
           4.0 * bs * (double)s * (double)m->hidden_size;
}

double oc_model_mlp_fwd_flops(const struct oc_model *m, int64_t b, int64_t s)
{
    return 2.0 * (double)b * (double)s * (double)oc_model_mlp_matmul_params(m);
}

double oc_model_layer_fwd_flops(const struct oc_model *m, int64_t b, int64_t s)
{
    return oc_model_attn_fwd_flops(m, b, s) + oc_model_mlp_fwd_flops(m, b, s);
}

double oc_model_head_fwd_flops(const struct oc_model *m, int64_t b, int64_t s)
{
    return 2.0 * (double)b * (double)s * (double)m->hidden_size *
           (double)m->vocab_size;
}
