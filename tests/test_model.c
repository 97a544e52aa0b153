/* test_model.c: the model reader (core/model.c) and its counts.
 *
 * Every shipped model loads; parameter counts and FLOPs match values worked
 * out by hand below (and, where one exists, the published count); fields
 * are read under Hugging Face names and GPT-2 aliases; every error is one
 * line naming the file, the field and the rule. Fixtures: tests/data/model_*.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model.h"
#include "paths.h"
#include "test_util.h"

#define DATA(f) OC_TEST_DATA "/" f

static struct oc_model load_ok(const char *name)
{
    struct oc_model m;
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_model_load(name, &m, &st), st.msg);
    return m;
}

/* Load `file`, expect failure, and expect each of the NULL-terminated
 * substrings in the message; the message is one line. */
static void expect_error(const char *file, const char *const *subs)
{
    struct oc_model m;
    memset(&m, 0x5a, sizeof m);
    struct oc_status st = {{0}};
    oc_test_expect_fail(oc_model_load(file, &m, &st), st.msg, subs);
    /* A failed load leaves a zeroed model, not half a model. */
    CU_ASSERT_EQUAL(m.hidden_size, 0);
    CU_ASSERT_EQUAL(m.name[0], '\0');
}

#define EXPECT_ERROR(file, ...)                                                \
    do {                                                                       \
        static const char *const subs_[] = {__VA_ARGS__, NULL};                \
        expect_error(file, subs_);                                             \
    } while (0)

static void test_every_shipped_model_loads(void)
{
    char list[1024];
    oc_data_list("models", list, sizeof list);
    /* The seven files shipped with ocsim are all listed. */
    const char *want[] = {"gpt2-small", "gpt3-1.3b", "gpt3-175b", "llama-tiny",
                          "llama2-13b", "llama2-70b", "tiny"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(list, want[i]));
    int n = 0;
    char *save = NULL;
    for (char *name = strtok_r(list, ", ", &save); name;
         name = strtok_r(NULL, ", ", &save)) {
        struct oc_model m = load_ok(name);
        CU_ASSERT_STRING_EQUAL(m.name, name); /* no _name_or_path: the stem */
        CU_ASSERT(oc_model_params_total(&m) > 0);
        CU_ASSERT_EQUAL(oc_model_check(&m, name, NULL), 0);
        n++;
    }
    CU_ASSERT(n >= 7);
}

/* Llama 2 70B: h 8192, a 64, k 8, L 80, f 28672, V 32000, untied.
 *   head_dim = 8192/64 = 128; kv_dim = 8*128 = 1024
 *   attention = 8192^2 (Q) + 2*8192*1024 (K,V) + 8192^2 (O)
 *             = 67108864 + 16777216 + 67108864 = 150994944
 *   MLP (SwiGLU) = 3*8192*28672 = 704643072
 *   norms (RMSNorm, 1 per channel, 2 per layer) = 2*8192 = 16384
 *   layer = 855654400; 80 layers = 68452352000
 *   embedding = 32000*8192 = 262144000 (rotary: no position table)
 *   head = final norm 8192 + untied 262144000 = 262152192
 *   total = 68976648192 (the project brief's figure; "70B").
 * TP 8: (150994944 + 704643072)/8 + 16384 = 106954752 + 16384 = 106971136. */
static void test_llama2_70b(void)
{
    struct oc_model m = load_ok("llama2-70b");
    CU_ASSERT_EQUAL(m.arch, OC_ARCH_LLAMA);
    CU_ASSERT_STRING_EQUAL(m.model_type, "llama");
    CU_ASSERT_EQUAL(m.hidden_size, 8192);
    CU_ASSERT_EQUAL(m.num_attention_heads, 64);
    CU_ASSERT_EQUAL(m.num_key_value_heads, 8);
    CU_ASSERT_EQUAL(m.num_hidden_layers, 80);
    CU_ASSERT_EQUAL(m.intermediate_size, 28672);
    CU_ASSERT_EQUAL(m.vocab_size, 32000);
    CU_ASSERT_EQUAL(m.max_position_embeddings, 4096);
    CU_ASSERT_EQUAL(m.gated_mlp, 1);
    CU_ASSERT_EQUAL(m.has_bias, 0);
    CU_ASSERT_EQUAL(m.learned_pos_emb, 0);
    CU_ASSERT_EQUAL(m.norm_params_per_h, 1);
    CU_ASSERT_EQUAL(m.tie_word_embeddings, 0);
    CU_ASSERT_EQUAL(m.has_dropout, 0);
    CU_ASSERT_EQUAL(oc_model_head_dim(&m), 128);
    CU_ASSERT_EQUAL(oc_model_kv_dim(&m), 1024);
    CU_ASSERT_EQUAL(oc_model_attn_matmul_params(&m), 150994944LL);
    CU_ASSERT_EQUAL(oc_model_mlp_matmul_params(&m), 704643072LL);
    CU_ASSERT_EQUAL(oc_model_layer_params(&m), 855654400LL);
    CU_ASSERT_EQUAL(oc_model_layer_params_tp(&m, 1), 855654400LL);
    CU_ASSERT_EQUAL(oc_model_layer_params_tp(&m, 8), 106971136LL);
    CU_ASSERT_EQUAL(oc_model_embedding_params(&m), 262144000LL);
    CU_ASSERT_EQUAL(oc_model_head_params(&m), 262152192LL);
    CU_ASSERT_EQUAL(oc_model_params_total(&m), 68976648192LL);
}

/* Llama 2 13B: h 5120, a = k = 40, L 40, f 13824, V 32000, untied.
 *   attention 4*5120^2 = 104857600; MLP 3*5120*13824 = 212336640;
 *   norms 2*5120 = 10240; layer 317204480; 40 layers 12688179200;
 *   embedding 32000*5120 = 163840000; head 5120 + 163840000
 *   total = 13015864320 ("13B"). */
static void test_llama2_13b(void)
{
    struct oc_model m = load_ok("llama2-13b");
    CU_ASSERT_EQUAL(m.num_key_value_heads, 40);
    CU_ASSERT_EQUAL(oc_model_layer_params(&m), 317204480LL);
    CU_ASSERT_EQUAL(oc_model_params_total(&m), 13015864320LL);
}

/* GPT-3 175B: h 12288, a = k = 96, L 96, f 49152, V 50257, P 2048, tied.
 *   attention 4h^2 = 603979776, biases 3h (QKV) + h (out) = 49152
 *   MLP 8h^2 = 1207959552, biases f + h = 61440
 *   norms (LayerNorm, 2 per channel, 2 per layer) = 4h = 49152
 *   layer = 1812099072; 96 layers = 173961510912
 *   embedding = 50257*12288 + 2048*12288 = 617558016 + 25165824 = 642723840
 *   head = final norm 2h = 24576 (tied)
 *   total = 174604259328, "175B" in Brown et al. 2020 (174.6e9).
 * TP 8: matmul 1811939328/8 = 226492416; column biases (3h + f)/8 =
 *   86016/8 = 10752; row biases 2h = 24576; norms 49152 -> 226576896.
 * Layer FLOPs, b 1, s 2048 (f = 4h, k = a): 24*b*s*h^2 + 4*b*s^2*h =
 *   24*2048*150994944 + 4*2048^2*12288 = 7421703487488 + 206158430208
 *   = 7627861917696 (an integer below 2^53, so exact in a double).
 * Head FLOPs: 2*b*s*h*V = 2*2048*12288*50257 = 2529517633536. */
static void test_gpt3_175b(void)
{
    struct oc_model m = load_ok("gpt3-175b");
    CU_ASSERT_EQUAL(m.arch, OC_ARCH_GPT);
    CU_ASSERT_STRING_EQUAL(m.model_type, "gpt3");
    CU_ASSERT_EQUAL(m.gated_mlp, 0);
    CU_ASSERT_EQUAL(m.has_bias, 1);
    CU_ASSERT_EQUAL(m.learned_pos_emb, 1);
    CU_ASSERT_EQUAL(m.norm_params_per_h, 2);
    CU_ASSERT_EQUAL(m.tie_word_embeddings, 1);
    CU_ASSERT_EQUAL(m.has_dropout, 1);
    CU_ASSERT_EQUAL(m.num_key_value_heads, 96);
    CU_ASSERT_EQUAL(oc_model_layer_params(&m), 1812099072LL);
    CU_ASSERT_EQUAL(oc_model_layer_params_tp(&m, 8), 226576896LL);
    CU_ASSERT_EQUAL(oc_model_embedding_params(&m), 642723840LL);
    CU_ASSERT_EQUAL(oc_model_head_params(&m), 24576LL);
    CU_ASSERT_EQUAL(oc_model_params_total(&m), 174604259328LL);
    OC_ASSERT_REL((double)oc_model_params_total(&m), 174.6e9, 1e-3);

    double b = 1, s = 2048, h = 12288;
    double want = 24 * b * s * h * h + 4 * b * s * s * h;
    CU_ASSERT(want == 7627861917696.0);
    CU_ASSERT(oc_model_layer_fwd_flops(&m, 1, 2048) == want);
    CU_ASSERT(oc_model_attn_fwd_flops(&m, 1, 2048) +
                  oc_model_mlp_fwd_flops(&m, 1, 2048) == want);
    CU_ASSERT(oc_model_head_fwd_flops(&m, 1, 2048) == 2529517633536.0);
}

/* GPT-3 XL 1.3B: h 2048, a 16, L 24, f 8192, V 50257, P 2048, tied.
 *   layer = 12h^2 + 13h (biases 3h + h in attention and f + h = 5h in
 *   the MLP, norms 4h) = 50331648 + 26624 = 50358272
 *   24 layers = 1208598528; embedding 102926336 + 4194304; head 4096
 *   total = 1315723264 ("1.3B" in Brown et al. 2020, table 2.1). */
static void test_gpt3_1_3b(void)
{
    struct oc_model m = load_ok("gpt3-1.3b");
    CU_ASSERT_EQUAL(m.num_attention_heads, 16);
    CU_ASSERT_EQUAL(oc_model_head_dim(&m), 128);
    CU_ASSERT_EQUAL(oc_model_layer_params(&m), 50358272LL);
    CU_ASSERT_EQUAL(oc_model_params_total(&m), 1315723264LL);
}

/* gpt2-small.json is GPT-2's own config.json: n_embd 768, n_head 12,
 * n_layer 12, n_positions 1024, n_inner null (so f = 4*768 = 3072),
 * activation_function gelu_new, *_pdrop 0.1, no tie field (tied).
 *   layer = 12*768^2 + 13*768 = 7077888 + 9984 = 7087872; 12 layers
 *   85054464; embedding 50257*768 + 1024*768 = 38597376 + 786432;
 *   head 2*768 = 1536; total 124439808, the "124M" GPT-2. */
static void test_gpt2_aliases(void)
{
    struct oc_model m = load_ok("gpt2-small");
    CU_ASSERT_EQUAL(m.hidden_size, 768);
    CU_ASSERT_EQUAL(m.num_attention_heads, 12);
    CU_ASSERT_EQUAL(m.num_key_value_heads, 12); /* defaults to a */
    CU_ASSERT_EQUAL(m.num_hidden_layers, 12);
    CU_ASSERT_EQUAL(m.intermediate_size, 3072); /* n_inner null -> 4h */
    CU_ASSERT_EQUAL(m.max_position_embeddings, 1024);
    CU_ASSERT_EQUAL(m.vocab_size, 50257);
    CU_ASSERT_EQUAL(m.tie_word_embeddings, 1);
    CU_ASSERT_EQUAL(m.has_dropout, 1);
    CU_ASSERT_EQUAL(m.gated_mlp, 0); /* gelu_new */
    CU_ASSERT_EQUAL(oc_model_params_total(&m), 124439808LL);
}

/* tiny: h 64, a = k = 4, L 8, f 256, V 512, P 128, GPT style, tied.
 *   attention 4*64^2 = 16384 + biases 4*64 = 256
 *   MLP 2*64*256 = 32768 + biases 256 + 64 = 320; norms 4*64 = 256
 *   layer = 49984; 8 layers = 399872
 *   embedding 512*64 + 128*64 = 40960; head 2*64 = 128
 *   total = 440960.
 * FLOPs, b 2, s 16: attention 2*32*16384 + 4*2*16^2*64 = 1048576 + 131072
 *   = 1179648; MLP 2*32*32768 = 2097152; layer 3276800
 *   = 24*2*16*64^2 + 4*2*16^2*64 (f = 4h, k = a). */
static void test_tiny(void)
{
    struct oc_model m = load_ok("tiny");
    CU_ASSERT_EQUAL(m.arch, OC_ARCH_GPT);
    CU_ASSERT_EQUAL(m.num_hidden_layers % 8, 0);
    CU_ASSERT_EQUAL(m.num_attention_heads % 4, 0);
    CU_ASSERT_EQUAL(oc_model_layer_params(&m), 49984LL);
    CU_ASSERT_EQUAL(oc_model_embedding_params(&m), 40960LL);
    CU_ASSERT_EQUAL(oc_model_head_params(&m), 128LL);
    CU_ASSERT_EQUAL(oc_model_params_total(&m), 440960LL);
    CU_ASSERT(oc_model_attn_fwd_flops(&m, 2, 16) == 1179648.0);
    CU_ASSERT(oc_model_mlp_fwd_flops(&m, 2, 16) == 2097152.0);
    CU_ASSERT(oc_model_layer_fwd_flops(&m, 2, 16) == 3276800.0);
    CU_ASSERT(oc_model_layer_fwd_flops(&m, 2, 16) ==
              24.0 * 2 * 16 * 64 * 64 + 4.0 * 2 * 16 * 16 * 64);
}

/* model_gpt_swiglu.json: GPT style with hidden_act swiglu and GQA:
 * h 8, a 4 (head 2), k 2 (kv_dim 4), f 12, L 1, V 10, P 3, untied.
 *   attention 64 + 2*8*4 + 64 = 192; MLP 3*8*12 = 288 (gated)
 *   column biases QKV 8 + 2*4 = 16, gate+up 2*12 = 24 -> 40
 *   row biases 2*8 = 16; norms 2*2*8 = 32; layer 568
 *   TP 2: 480/2 + 40/2 + 16 + 32 = 308
 *   embedding 10*8 + 3*8 = 104; head 2*8 + 10*8 = 96; total 768
 * FLOPs, b 1, s 3: attention 2*3*192 + 4*9*8 = 1440; MLP 2*3*288 = 1728;
 *   head 2*3*8*10 = 480. */
static void test_gqa_swiglu_small(void)
{
    struct oc_model m = load_ok(DATA("model_gpt_swiglu.json"));
    CU_ASSERT_STRING_EQUAL(m.name, "model_gpt_swiglu");
    CU_ASSERT_EQUAL(m.arch, OC_ARCH_GPT);
    CU_ASSERT_EQUAL(m.gated_mlp, 1);
    CU_ASSERT_EQUAL(m.has_dropout, 0); /* resid_pdrop 0.0 given */
    CU_ASSERT_EQUAL(m.tie_word_embeddings, 0);
    CU_ASSERT_EQUAL(oc_model_kv_dim(&m), 4);
    CU_ASSERT_EQUAL(oc_model_attn_matmul_params(&m), 192);
    CU_ASSERT_EQUAL(oc_model_mlp_matmul_params(&m), 288);
    CU_ASSERT_EQUAL(oc_model_layer_params(&m), 568);
    CU_ASSERT_EQUAL(oc_model_layer_params_tp(&m, 2), 308);
    CU_ASSERT_EQUAL(oc_model_embedding_params(&m), 104);
    CU_ASSERT_EQUAL(oc_model_head_params(&m), 96);
    CU_ASSERT_EQUAL(oc_model_params_total(&m), 768);
    CU_ASSERT(oc_model_attn_fwd_flops(&m, 1, 3) == 1440.0);
    CU_ASSERT(oc_model_mlp_fwd_flops(&m, 1, 3) == 1728.0);
    CU_ASSERT(oc_model_layer_fwd_flops(&m, 1, 3) == 3168.0);
    CU_ASSERT(oc_model_head_fwd_flops(&m, 1, 3) == 480.0);
}

/* llama-tiny, the executor's Llama test model: h 64, a 4, k 2, L 8,
 * f 176, V 512, untied.
 *   head_dim 16; kv_dim 2*16 = 32
 *   attention = 64^2 (Q) + 2*64*32 (K,V) + 64^2 (O) = 4096*3 = 12288
 *   MLP (SwiGLU) = 3*64*176 = 33792; norms 2*64 = 128; layer 46208
 *   8 layers 369664; embedding 512*64 = 32768 (rotary: no positions)
 *   head = final norm 64 + untied 32768 = 32832; total 435264.
 * TP 2: (12288 + 33792)/2 + 128 = 23168. */
static void test_llama_tiny(void)
{
    struct oc_model m = load_ok("llama-tiny");
    CU_ASSERT_EQUAL(m.arch, OC_ARCH_LLAMA);
    CU_ASSERT_EQUAL(m.num_key_value_heads, 2);
    CU_ASSERT_EQUAL(m.learned_pos_emb, 0);
    CU_ASSERT_EQUAL(m.tie_word_embeddings, 0);
    CU_ASSERT_EQUAL(m.has_dropout, 0);
    CU_ASSERT(m.rms_norm_eps == 1e-5);
    CU_ASSERT(m.rope_theta == 10000.0);
    CU_ASSERT_STRING_EQUAL(m.rope_scaling.type, "");
    CU_ASSERT_EQUAL(oc_model_attn_matmul_params(&m), 12288);
    CU_ASSERT_EQUAL(oc_model_layer_params(&m), 46208);
    CU_ASSERT_EQUAL(oc_model_layer_params_tp(&m, 2), 23168);
    CU_ASSERT_EQUAL(oc_model_params_total(&m), 435264);
}

/* rms_norm_eps, rope_theta and rope_scaling: LlamaConfig's defaults (1e-6,
 * 10000, none), both spellings of the scaling type, llama3's numbers, and
 * a type the executor does not run kept by name. GPT-style blocks read
 * none of them. */
static void test_rotary_fields(void)
{
    struct oc_model m = load_ok(DATA("model_llama3_rope.json"));
    CU_ASSERT(m.rms_norm_eps == 1e-5);
    CU_ASSERT(m.rope_theta == 500000.0);
    CU_ASSERT_STRING_EQUAL(m.rope_scaling.type, "llama3");
    CU_ASSERT(m.rope_scaling.factor == 8.0);
    CU_ASSERT(m.rope_scaling.low_freq_factor == 1.0);
    CU_ASSERT(m.rope_scaling.high_freq_factor == 4.0);
    CU_ASSERT_EQUAL(m.rope_scaling.original_max_position_embeddings, 8192);

    m = load_ok(DATA("model_llama_rope_linear.json"));
    CU_ASSERT(m.rms_norm_eps == 1e-6);
    CU_ASSERT(m.rope_theta == 10000.0);
    CU_ASSERT_STRING_EQUAL(m.rope_scaling.type, "linear");
    CU_ASSERT(m.rope_scaling.factor == 2.0);

    m = load_ok(DATA("model_llama_rope_yarn.json"));
    CU_ASSERT_STRING_EQUAL(m.rope_scaling.type, "yarn");

    m = load_ok(DATA("model_llama_dropout.json")); /* "rope_scaling": null */
    CU_ASSERT_STRING_EQUAL(m.rope_scaling.type, "");
    CU_ASSERT(m.rms_norm_eps == 1e-6);

    m = load_ok("tiny");
    CU_ASSERT(m.rms_norm_eps == 0.0 && m.rope_theta == 0.0);

    EXPECT_ERROR(DATA("model_llama_rope_bad.json"),
                 "model_llama_rope_bad.json: field 'rope_scaling.high_freq_factor' (1) "
                 "must be above 'rope_scaling.low_freq_factor' (4)");
    EXPECT_ERROR(DATA("model_llama_rope_nofactor.json"),
                 "model_llama_rope_nofactor.json: field 'rope_scaling.factor' is missing");
}

/* Defaults and overrides of the Hugging Face config classes. */
static void test_defaults(void)
{
    /* gpt_neox: rotary (no position table), untied by default, dropout
     * fields given as 0.0 -> no dropout. h 512, f 2048, L 4, V 1000:
     * layer 12*512^2 + 13*512 = 3145728 + 6656 = 3152384; 4 layers
     * 12609536; embedding 512000; head 1024 + 512000; total 13634560. */
    struct oc_model m = load_ok(DATA("model_gpt_no_dropout.json"));
    CU_ASSERT_EQUAL(m.arch, OC_ARCH_GPT);
    CU_ASSERT_EQUAL(m.learned_pos_emb, 0);
    CU_ASSERT_EQUAL(m.tie_word_embeddings, 0);
    CU_ASSERT_EQUAL(m.has_dropout, 0);
    CU_ASSERT_EQUAL(oc_model_params_total(&m), 13634560LL);

    /* llama with attention_dropout 0.1, tie true, hidden_size 4096.0 (an
     * integral real), num_key_value_heads null (-> a), and _name_or_path. */
    m = load_ok(DATA("model_llama_dropout.json"));
    CU_ASSERT_STRING_EQUAL(m.name, "example-org/llama-with-dropout");
    CU_ASSERT_EQUAL(m.hidden_size, 4096);
    CU_ASSERT_EQUAL(m.num_key_value_heads, 32);
    CU_ASSERT_EQUAL(m.has_dropout, 1);
    CU_ASSERT_EQUAL(m.tie_word_embeddings, 1);
    /* tied: head is the final RMSNorm only */
    CU_ASSERT_EQUAL(oc_model_head_params(&m), 4096);
}

static void test_check_struct(void)
{
    struct oc_model m = load_ok("tiny");
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_model_check(&m, "here", &st), 0);

    struct oc_model bad = m;
    bad.num_attention_heads = 3; /* 64 % 3 != 0 */
    CU_ASSERT_EQUAL(oc_model_check(&bad, "here", &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "here: field 'num_attention_heads' (3) must divide 'hidden_size' (64)"));

    bad = m;
    bad.num_hidden_layers = 0;
    CU_ASSERT_EQUAL(oc_model_check(&bad, "here", &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "'num_hidden_layers' must be a positive integer (got 0)"));

    bad = m;
    bad.vocab_size = 1000000000; /* 1e9 > 1e8 */
    CU_ASSERT_EQUAL(oc_model_check(&bad, "here", &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "'vocab_size' is absurd (1e9 > 1e8)"));

    bad = m;
    bad.norm_params_per_h = 3;
    CU_ASSERT_EQUAL(oc_model_check(&bad, "here", &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "norm_params_per_h"));
}

static void test_errors(void)
{
    /* jansson reports the line and the column of the last character of
     * the token it did not expect: line 4 is `  "num_attention_heads": 32,`
     * after a line that lacks its comma; the string ends at column 23. */
    EXPECT_ERROR(DATA("model_broken.json"), "model_broken.json:4:23: ", "expected");
    EXPECT_ERROR(DATA("model_not_object.json"), "model_not_object.json: ",
                 "must hold a JSON object", "not an array");
    EXPECT_ERROR(DATA("model_missing_hidden.json"), "model_missing_hidden.json: ",
                 "field 'hidden_size'", "is missing");
    EXPECT_ERROR(DATA("model_null_required.json"), "model_null_required.json: ",
                 "field 'num_hidden_layers'", "is missing");
    EXPECT_ERROR(DATA("model_llama_no_intermediate.json"),
                 "model_llama_no_intermediate.json: field 'intermediate_size' is missing");
    EXPECT_ERROR(DATA("model_string_hidden.json"),
                 "model_string_hidden.json: field 'hidden_size' must be an integer, not a string");
    EXPECT_ERROR(DATA("model_float_heads.json"),
                 "model_float_heads.json: field 'num_attention_heads' must be an integer (got 32.5)");
    EXPECT_ERROR(DATA("model_zero_layers.json"),
                 "model_zero_layers.json: field 'num_hidden_layers' must be a positive integer (got 0)");
    EXPECT_ERROR(DATA("model_negative_hidden.json"),
                 "model_negative_hidden.json: field 'hidden_size' must be a positive integer (got -5)");
    EXPECT_ERROR(DATA("model_absurd_hidden.json"),
                 "model_absurd_hidden.json: field 'hidden_size' is absurd (2e12 > 1e6)");
    EXPECT_ERROR(DATA("model_absurd_vocab.json"),
                 "model_absurd_vocab.json: field 'vocab_size' is absurd (2e8 > 1e8)");
    EXPECT_ERROR(DATA("model_heads_not_dividing.json"),
                 "model_heads_not_dividing.json: field 'num_attention_heads' (3) must divide 'hidden_size' (100)");
    EXPECT_ERROR(DATA("model_kv_not_dividing.json"),
                 "model_kv_not_dividing.json: field 'num_key_value_heads' (3) must divide 'num_attention_heads' (32)");
    /* The message uses the names the file used. */
    EXPECT_ERROR(DATA("model_alias_heads_not_dividing.json"),
                 "field 'n_head' (5) must divide 'n_embd' (768)");
    EXPECT_ERROR(DATA("model_alias_conflict.json"), "model_alias_conflict.json: ",
                 "fields 'hidden_size' (4096) and 'n_embd' (2048) disagree");
    EXPECT_ERROR(DATA("model_unknown_type.json"), "model_unknown_type.json: ",
                 "field 'model_type' is 'bert'", "llama", "gpt2", "gpt3", "gpt_neox");
    EXPECT_ERROR(DATA("model_missing_type.json"),
                 "model_missing_type.json: field 'model_type' is missing");
    EXPECT_ERROR(DATA("model_type_not_string.json"),
                 "field 'model_type' must be a string, not an integer");
    EXPECT_ERROR(DATA("model_bad_dropout.json"),
                 "model_bad_dropout.json: field 'resid_pdrop' must be in [0, 1) (got 1.5)");
    EXPECT_ERROR(DATA("model_bad_tie.json"),
                 "model_bad_tie.json: field 'tie_word_embeddings' must be true or false, not a string");
    EXPECT_ERROR(DATA("model_head_dim_mismatch.json"),
                 "field 'head_dim' (256) must equal 'hidden_size' / 'num_attention_heads' (128)");
    /* A shipped name that does not exist lists the shipped ones. */
    EXPECT_ERROR("no-such-model", "unknown model 'no-such-model'", "llama2-70b",
                 "gpt3-175b", "tiny");
    EXPECT_ERROR(DATA("does-not-exist.json"), "does-not-exist.json: no such file");
}

static void load_models(void *arg)
{
    for (const char *const *f = arg; *f; f++) {
        struct oc_model m;
        struct oc_status st;
        oc_model_load(*f, &m, &st);
    }
}

/* Library code never prints: run every failing load with stdout and
 * stderr sent to a file, and expect the file empty. */
static void test_quiet(void)
{
    const char *files[] = {
        DATA("model_broken.json"), DATA("model_missing_hidden.json"),
        DATA("model_absurd_hidden.json"), DATA("model_unknown_type.json"),
        DATA("does-not-exist.json"), "no-such-model", "llama2-70b", NULL,
    };
    CU_ASSERT_EQUAL(oc_test_output_bytes(load_models, files), 0);
}

static CU_TestInfo model_tests[] = {
    {"every shipped model loads", test_every_shipped_model_loads},
    {"llama2-70b counts", test_llama2_70b},
    {"llama2-13b counts", test_llama2_13b},
    {"gpt3-175b counts and flops", test_gpt3_175b},
    {"gpt3-1.3b counts", test_gpt3_1_3b},
    {"gpt2 aliases", test_gpt2_aliases},
    {"tiny counts and flops", test_tiny},
    {"gqa + swiglu small", test_gqa_swiglu_small},
    {"llama-tiny counts", test_llama_tiny},
    {"rms_norm_eps, rope_theta, rope_scaling", test_rotary_fields},
    {"config class defaults", test_defaults},
    {"oc_model_check", test_check_struct},
    {"error messages", test_errors},
    {"library code is quiet", test_quiet},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"model", NULL, NULL, NULL, NULL, model_tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    /* ctest sets OCSIM_DATA_DIR to the repo root; run by hand, find it
     * from the test data folder (tests/data/../..). */
    setenv("OCSIM_DATA_DIR", OC_TEST_DATA "/../..", 0);
    return oc_test_run(suites);
}
