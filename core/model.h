/* model.h: a decoder-only transformer, read from a Hugging Face config.json.
 *
 *   struct oc_model m;
 *   struct oc_status st;
 *   if (oc_model_load("llama2-70b", &m, &st) != 0) { ...st.msg... }
 *   int64_t n = oc_model_params_total(&m);          // 68 976 648 192
 *
 * The reader takes the vocabulary of config.json: hidden_size,
 * num_attention_heads, num_key_value_heads, num_hidden_layers,
 * intermediate_size, vocab_size, max_position_embeddings, model_type,
 * hidden_act, tie_word_embeddings, and GPT-2's aliases n_embd, n_head,
 * n_layer, n_inner, n_positions; for Llama-style blocks also rms_norm_eps,
 * rope_theta and rope_scaling (which the simulator's costs do not use; the
 * executor computes with them). What tells a GPT-style block from a
 * Llama-style one is model_type (and hidden_act where given):
 *
 *   GPT style   (gpt2, gpt3, gpt_neox, opt): LayerNorm, biases, learned
 *               position embedding, GELU MLP with two matrices, dropout.
 *   Llama style (llama, mistral): RMSNorm, no biases, rotary positions,
 *               SwiGLU MLP with three matrices, no dropout.
 *
 * A config with a feature these blocks lack is refused with one line
 * naming the key, never read as the dense block it resembles: experts,
 * sliding-window attention, Llama biases (and qwen2's q/k/v biases),
 * parallel attention and MLP (gptj; gpt_neox unless use_parallel_residual
 * is false), partial rotary embeddings, cross-attention, post-norm, an
 * activation other than GELU or SiLU (model_features.h has the list).
 *
 * A name without '/' and without ".json" is looked up in the shipped
 * models/ folder (see oc_data_path in paths.h).
 *
 * Dimension letters used across core/: h = hidden_size, a = heads,
 * k = KV heads, f = intermediate_size, L = layers, V = vocab, P = positions,
 * s = sequence length, b = micro-batch size, t = TP, p = PP, d = DP.
 */
#ifndef OC_MODEL_H
#define OC_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

enum oc_arch {
    OC_ARCH_GPT,   /* LayerNorm, GELU, biases, learned positions */
    OC_ARCH_LLAMA, /* RMSNorm, SwiGLU, no biases, rotary positions */
};

/* rope_scaling of config.json (transformers' modeling_rope_utils.py): how
 * the rotary frequencies are stretched for longer contexts. type "" is
 * none ("default" or absent). "linear" divides every frequency by factor
 * (positions / factor); "llama3" (Llama 3.1) divides the low frequencies
 * by factor, keeps the high ones and blends between, with low_freq_factor,
 * high_freq_factor and original_max_position_embeddings. Other types are
 * read as their name only (the executor refuses them; a cost does not
 * depend on them). */
struct oc_rope_scaling {
    char type[32];
    double factor;
    double low_freq_factor, high_freq_factor;   /* llama3 */
    int64_t original_max_position_embeddings;   /* llama3 */
};

struct oc_model {
    char name[128];       /* file stem, or "_name_or_path" when present */
    char model_type[32];  /* as in config.json */
    enum oc_arch arch;
    int64_t hidden_size;             /* h */
    int64_t num_attention_heads;     /* a */
    int64_t num_key_value_heads;     /* k (== a without GQA) */
    int64_t num_hidden_layers;       /* L */
    int64_t intermediate_size;       /* f */
    int64_t vocab_size;              /* V */
    int64_t max_position_embeddings; /* P */
    int gated_mlp;           /* 1: SwiGLU, three h x f matrices; 0: two */
    int has_bias;            /* linear layers carry biases */
    int learned_pos_emb;     /* a P x h position table (GPT) */
    int norm_params_per_h;   /* 2 for LayerNorm (gain + bias), 1 for RMSNorm */
    int tie_word_embeddings; /* LM head shares the input embedding */
    int has_dropout;         /* dropout masks are kept for backward */
    /* Llama style (0 for GPT style, whose LayerNorm eps is GPT-2's 1e-5): */
    double rms_norm_eps;     /* RMSNorm's eps; LlamaConfig's default 1e-6 */
    double rope_theta;       /* rotary base; default 10000 (Su et al. 2021) */
    struct oc_rope_scaling rope_scaling;
};

/* Read a config.json (or a shipped name). Returns 0, or -1 with st->msg
 * naming the file, the field and the rule broken. */
int oc_model_load(const char *path_or_name, struct oc_model *m,
                  struct oc_status *st);
/* The same from the n bytes of a config.json in memory (a fuzzer's input);
 * `where` stands for the file in messages and gives the name when the
 * text has no "_name_or_path". */
int oc_model_parse(const char *text, size_t n, const char *where,
                   struct oc_model *m, struct oc_status *st);

/* Check the fields of an already filled model (also used by the loader). */
int oc_model_check(const struct oc_model *m, const char *where,
                   struct oc_status *st);

int64_t oc_model_head_dim(const struct oc_model *m);   /* h / a */
int64_t oc_model_kv_dim(const struct oc_model *m);     /* k * h / a */

/* Parameter counts. "Matmul" parameters are the ones tensor parallelism
 * splits; norms (and, for GPT, the row-parallel output biases) are kept whole
 * on every TP rank, as in Megatron-LM. */
int64_t oc_model_attn_matmul_params(const struct oc_model *m);
int64_t oc_model_mlp_matmul_params(const struct oc_model *m);
int64_t oc_model_layer_params(const struct oc_model *m);
/* Parameters one TP rank holds for one layer. */
int64_t oc_model_layer_params_tp(const struct oc_model *m, int64_t tp);
int64_t oc_model_embedding_params(const struct oc_model *m); /* V*h (+P*h) */
int64_t oc_model_head_params(const struct oc_model *m);      /* final norm + untied V*h */
int64_t oc_model_params_total(const struct oc_model *m);

/* Forward FLOPs of one layer for b sequences of length s, counting a
 * multiply-add as 2 FLOPs and, like Megatron-LM (Narayanan et al. 2021,
 * eq. 2), the full s x s attention scores (no causal halving). For a GPT
 * block with f = 4h and a = k this is 24*b*s*h^2 + 4*b*s^2*h. */
double oc_model_layer_fwd_flops(const struct oc_model *m, int64_t b, int64_t s);
/* The two parts of a layer, as the schedule splits it. attn counts the QKV
 * and output projections and the 4*b*s^2*h of scores and weighted values. */
double oc_model_attn_fwd_flops(const struct oc_model *m, int64_t b, int64_t s);
double oc_model_mlp_fwd_flops(const struct oc_model *m, int64_t b, int64_t s);
/* Forward FLOPs of the LM head (logits GEMM): 2*b*s*h*V. */
double oc_model_head_fwd_flops(const struct oc_model *m, int64_t b, int64_t s);

#endif
