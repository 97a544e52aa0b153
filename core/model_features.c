/* model_features.c: the config.json features ocsim does not model, each
 * refused by the key that turns it on (see model_features.h). The keys and
 * defaults are those of the transformers 4.x config classes named beside
 * them.
 */
#define _POSIX_C_SOURCE 200809L
#include "model_features.h"

#include <string.h>

/* When a key's value turns its feature on. */
enum on_when {
    ON_SET,     /* anything but null, false, 0, "" or an empty array/object */
    ON_TRUE,    /* true */
    ON_FALSE,   /* false */
    ON_NOT_ONE, /* a number other than 1 */
};

struct unmodelled {
    const char *key;         /* ending in '_': every key with this prefix */
    enum on_when on;
    int llama_only;          /* only the Llama-style block lacks it */
    const char *default_on;  /* model_type whose config class turns it on when
                                the key is absent, or NULL */
    const char *off;         /* the value that turns it off, for the message */
    const char *what;
};

static const struct unmodelled oc_unmodelled[] = {
    /* Mixture of experts: MixtralConfig, Qwen2MoeConfig / OlmoeConfig,
     * DeepseekV2Config / V3, and the moe_* keys of the others. */
    {"num_local_experts", ON_SET, 0, NULL, "0", "a mixture of experts"},
    {"num_experts", ON_SET, 0, NULL, "0", "a mixture of experts"},
    {"num_experts_per_tok", ON_SET, 0, NULL, "0", "a mixture of experts"},
    {"n_routed_experts", ON_SET, 0, NULL, "0", "a mixture of experts"},
    {"n_shared_experts", ON_SET, 0, NULL, "0", "a mixture of experts"},
    {"shared_expert_intermediate_size", ON_SET, 0, NULL, "0", "a mixture of experts"},
    {"moe_", ON_SET, 0, NULL, "0", "a mixture of experts"},
    /* Llama 4's chunked attention (Llama4TextConfig). */
    {"attention_chunk_size", ON_SET, 0, NULL, "null", "chunked attention"},
    /* Biases: LlamaConfig's attention_bias and mlp_bias (False by
     * default); the GPT-style block has them (model.h). */
    {"attention_bias", ON_TRUE, 1, NULL, "false",
     "biases on the attention projections, which the Llama-style block has not"},
    {"mlp_bias", ON_TRUE, 1, NULL, "false",
     "biases on the MLP projections, which the Llama-style block has not"},
    {"bias", ON_TRUE, 1, NULL, "false",
     "biased linear layers, which the Llama-style block has not"},
    /* Attention and MLP side by side from one residual (GPT-J, GPT-NeoX's
     * use_parallel_residual, True by default; Falcon's parallel_attn):
     * Megatron-LM then reduces the two TP partial sums at once. */
    {"use_parallel_residual", ON_TRUE, 0, "gpt_neox", "false",
     "attention and the MLP in parallel"},
    {"parallel_attn", ON_TRUE, 0, NULL, "false", "attention and the MLP in parallel"},
    {"parallel_residual", ON_TRUE, 0, NULL, "false", "attention and the MLP in parallel"},
    /* Rotary embeddings on part of each head: GPTNeoXConfig's rotary_pct
     * (0.25 by default), partial_rotary_factor (Phi, StableLM, GLM). */
    {"rotary_pct", ON_NOT_ONE, 0, "gpt_neox", "1.0",
     "rotary embeddings on part of each head"},
    {"partial_rotary_factor", ON_NOT_ONE, 0, NULL, "1.0",
     "rotary embeddings on part of each head"},
    /* An encoder-decoder or a cross-attending decoder (GPT2Config's
     * add_cross_attention, Mllama's cross_attention_layers). */
    {"add_cross_attention", ON_TRUE, 0, NULL, "false", "cross-attention"},
    {"is_encoder_decoder", ON_TRUE, 0, NULL, "false", "an encoder-decoder model"},
    {"cross_attention_layers", ON_SET, 0, NULL, "null", "cross-attention"},
    /* OPT-350m normalises after each sublayer (OPTConfig
     * do_layer_norm_before=False); ocsim's blocks are pre-norm. */
    {"do_layer_norm_before", ON_FALSE, 0, NULL, "true",
     "a norm after each sublayer (post-norm)"},
};
#define OC_N_UNMODELLED (sizeof oc_unmodelled / sizeof oc_unmodelled[0])

static int is_set(const json_t *v)
{
    if (!v || json_is_null(v) || json_is_false(v))
        return 0;
    if (json_is_number(v))
        return json_number_value(v) != 0.0;
    if (json_is_string(v))
        return json_string_length(v) > 0;
    if (json_is_array(v))
        return json_array_size(v) > 0;
    if (json_is_object(v))
        return json_object_size(v) > 0;
    return 1; /* true */
}

static int turns_on(const json_t *v, enum on_when on)
{
    switch (on) {
    case ON_SET: return is_set(v);
    case ON_TRUE: return json_is_true(v);
    case ON_FALSE: return json_is_false(v);
    case ON_NOT_ONE: return json_is_number(v) && json_number_value(v) != 1.0;
    }
    return 0;
}

/* A value as a message shows it: 8, 0.25, true, 'text', an array. */
static void value_text(const json_t *v, char *out, size_t n)
{
    char q[OC_QUOTE_MAX];
    if (json_is_number(v))
        oc_json_fmt_num(json_number_value(v), out, n);
    else if (json_is_boolean(v))
        snprintf(out, n, "%s", json_is_true(v) ? "true" : "false");
    else if (json_is_string(v))
        snprintf(out, n, "'%s'", oc_quote(q, sizeof q, json_string_value(v)));
    else
        snprintf(out, n, "%s", oc_json_type_name(v));
}

static int refuse_value(const struct oc_json_obj *o, const char *key, const json_t *v,
                        const char *what, const char *off, struct oc_status *st)
{
    char name[160], val[OC_QUOTE_MAX + 8];
    oc_json_field_name(o, key, name, sizeof name);
    value_text(v, val, sizeof val);
    return oc_fail(st, "%s: field '%s' is %s: %s, which ocsim does not model "
                       "(it is refused, not simplified; %s turns it off)",
                   o->file, name, val, what, off);
}

/* Sliding-window attention (MistralConfig, Qwen2Config): on when
 * use_sliding_window is true, or sliding_window is set and
 * use_sliding_window is not false; newer configs list it per layer in
 * layer_types ("sliding_attention"). */
static int refuse_sliding_window(const struct oc_json_obj *o, struct oc_status *st)
{
    const char *what = "sliding-window attention (each token sees only the last "
                       "sliding_window tokens)";
    json_t *use = json_object_get(o->obj, "use_sliding_window");
    json_t *sw = json_object_get(o->obj, "sliding_window");
    if (json_is_true(use))
        return refuse_value(o, "use_sliding_window", use, what, "false", st);
    if (is_set(sw) && !json_is_false(use))
        return refuse_value(o, "sliding_window", sw, what, "null", st);
    json_t *types = json_object_get(o->obj, "layer_types");
    size_t i;
    json_t *t;
    json_array_foreach(types, i, t) {
        if (json_is_string(t) && strcmp(json_string_value(t), "full_attention") == 0)
            continue;
        char name[160], val[OC_QUOTE_MAX + 8];
        oc_json_field_name(o, "layer_types", name, sizeof name);
        value_text(t, val, sizeof val);
        return oc_fail(st, "%s: field '%s' holds %s (layer %zu): attention other than "
                           "full causal attention, which ocsim does not model",
                       o->file, name, val, i);
    }
    return 0;
}

static int refuse_one(const struct oc_json_obj *o, const struct unmodelled *u,
                      const char *model_type, struct oc_status *st)
{
    const size_t len = strlen(u->key);
    if (u->key[len - 1] == '_') { /* a prefix: every key that starts with it */
        const char *key;
        json_t *v;
        json_object_foreach(o->obj, key, v) {
            if (strncmp(key, u->key, len) == 0 && turns_on(v, u->on))
                return refuse_value(o, key, v, u->what, u->off, st);
        }
        return 0;
    }
    json_t *v = json_object_get(o->obj, u->key);
    if (v && turns_on(v, u->on))
        return refuse_value(o, u->key, v, u->what, u->off, st);
    if (!v && u->default_on && strcmp(u->default_on, model_type) == 0) {
        char name[160];
        oc_json_field_name(o, u->key, name, sizeof name);
        return oc_fail(st, "%s: field '%s' is absent, and for model_type '%s' that means "
                           "%s, which ocsim does not model (write %s to model the block "
                           "ocsim models)",
                       o->file, name, model_type, u->what, u->off);
    }
    return 0;
}

int oc_model_refuse_unmodelled(const struct oc_json_obj *o, const char *model_type,
                               enum oc_arch arch, struct oc_status *st)
{
    for (size_t i = 0; i < OC_N_UNMODELLED; i++) {
        const struct unmodelled *u = &oc_unmodelled[i];
        if (u->llama_only && arch != OC_ARCH_LLAMA)
            continue;
        if (refuse_one(o, u, model_type, st) != 0)
            return -1;
    }
    return refuse_sliding_window(o, st);
}

int oc_model_check_activation(const struct oc_json_obj *o, const char *key,
                              const char *act, const char *dflt, enum oc_arch arch,
                              struct oc_status *st)
{
    /* transformers' ACT2FN names of the activations the executor's
     * kernels compute (GELU, exact or tanh; SiLU = Swish) */
    static const char *const gelu[] = {"gelu", "gelu_new", "gelu_fast",
                                       "gelu_pytorch_tanh", "gelu_python", NULL};
    static const char *const silu[] = {"silu", "swish", "swiglu", NULL};
    const char *a = act[0] ? act : dflt;
    if (!a)
        return 0;
    int ok = 0;
    for (int i = 0; silu[i]; i++)
        ok |= strcmp(a, silu[i]) == 0;
    for (int i = 0; gelu[i] && arch != OC_ARCH_LLAMA; i++)
        ok |= strcmp(a, gelu[i]) == 0;
    if (ok)
        return 0;
    char name[160], q[OC_QUOTE_MAX];
    oc_json_field_name(o, key, name, sizeof name);
    const char *models = arch == OC_ARCH_LLAMA ? "a SiLU-gated MLP (silu, swish)"
                                               : "GELU MLPs (gelu, gelu_new, ...) and "
                                                 "SiLU-gated ones (silu, swiglu)";
    if (!act[0])
        return oc_fail(st, "%s: no field 'hidden_act' or 'activation_function', and the "
                           "default of this model_type is '%s'; ocsim models %s only",
                       o->file, a, models);
    return oc_fail(st, "%s: field '%s' is '%s'; ocsim models %s only", o->file, name,
                   oc_quote(q, sizeof q, a), models);
}
