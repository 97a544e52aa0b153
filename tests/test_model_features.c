/* test_model_features.c: config.json features ocsim does not model are
 * refused by name (core/model_features.c; issue 11, defect 8: a Mixtral
 * config relabelled "mistral" ran with its experts ignored), their off
 * values are accepted, and the reader's messages show the file's text
 * escaped (defect 7: a newline in model_type broke the one-line message).
 *
 * Each case is a small config written into the suite's scratch folder: a
 * Llama-style or GPT-style block of h 64, 4 heads, 2 layers, plus the keys
 * under test.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "test_util.h"

static int init(void) { return oc_test_dir_make("model-features"); }

/* A config of `type` with the sizes above and `extra` (",\"k\": v" ...). */
static const char *config(const char *type, const char *extra)
{
    static char path[512];
    static int n;
    char text[4096];
    snprintf(path, sizeof path, "%s/c%d.json", oc_test_dir, n++);
    snprintf(text, sizeof text,
             "{\"model_type\": \"%s\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
             "\"num_hidden_layers\": 2, \"intermediate_size\": 176, \"vocab_size\": 512, "
             "\"max_position_embeddings\": 128%s}",
             type, extra);
    oc_test_write_file(path, text);
    return path;
}

static void refused(const char *type, const char *extra, const char *want)
{
    struct oc_model m;
    struct oc_status st = {{0}};
    const char *subs[] = {want, NULL};
    oc_test_expect_fail(oc_model_load(config(type, extra), &m, &st), st.msg, subs);
}

static void accepted(const char *type, const char *extra)
{
    struct oc_model m;
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_model_load(config(type, extra), &m, &st), st.msg);
}

static void test_experts(void)
{
    /* Mixtral-8x7B's config.json, relabelled */
    refused("mistral", ", \"num_local_experts\": 8, \"num_experts_per_tok\": 2",
            "field 'num_local_experts' is 8: a mixture of experts, which ocsim does "
            "not model (it is refused, not simplified; 0 turns it off)");
    refused("llama", ", \"num_experts_per_tok\": 2",
            "field 'num_experts_per_tok' is 2: a mixture of experts");
    refused("llama", ", \"n_routed_experts\": 64", "field 'n_routed_experts' is 64");
    refused("llama", ", \"num_experts\": 60", "field 'num_experts' is 60");
    refused("llama", ", \"moe_intermediate_size\": 1408",
            "field 'moe_intermediate_size' is 1408: a mixture of experts");
    refused("gpt2", ", \"moe_layer_freq\": 2", "field 'moe_layer_freq' is 2");
    refused("mixtral", "", "field 'model_type' is 'mixtral', which ocsim does not model (it is a "
                       "mixture of experts)");
    /* the off values */
    accepted("mistral", ", \"num_local_experts\": 0, \"num_experts\": null, "
                        "\"moe_layer_freq\": 0, \"moe_enabled\": false");
}

static void test_sliding_window(void)
{
    /* Mistral-7B-v0.1 */
    refused("mistral", ", \"sliding_window\": 4096",
            "field 'sliding_window' is 4096: sliding-window attention");
    refused("llama", ", \"use_sliding_window\": true, \"sliding_window\": null",
            "field 'use_sliding_window' is true: sliding-window attention");
    refused("llama", ", \"layer_types\": [\"full_attention\", \"sliding_attention\"]",
            "field 'layer_types' holds 'sliding_attention' (layer 1): attention other "
            "than full causal attention");
    /* Mistral-7B-v0.2's null, Qwen2's use_sliding_window false, all layers full */
    accepted("mistral", ", \"sliding_window\": null");
    accepted("mistral", ", \"sliding_window\": 4096, \"use_sliding_window\": false");
    accepted("llama", ", \"layer_types\": [\"full_attention\", \"full_attention\"]");
}

static void test_biases_and_blocks(void)
{
    refused("llama", ", \"attention_bias\": true",
            "field 'attention_bias' is true: biases on the attention projections, which "
            "the Llama-style block has not");
    refused("mistral", ", \"mlp_bias\": true", "field 'mlp_bias' is true");
    refused("qwen2", "",
            "field 'model_type' is 'qwen2', which ocsim does not model (its q/k/v "
            "projections have biases, which the Llama-style block has not)");
    refused("gptj", "", "field 'model_type' is 'gptj', which ocsim does not model (its "
                        "block runs attention and the MLP in parallel");
    accepted("llama", ", \"attention_bias\": false, \"mlp_bias\": false, \"pretraining_tp\": 1");
    /* GPT-style blocks have biases: attention_bias true is what they are */
    accepted("gpt2", ", \"attention_bias\": true");
    /* GPTNeoXConfig turns parallel residual and partial rotary on by
     * default: absent is refused, the off values accepted */
    refused("gpt_neox", ", \"rotary_pct\": 1.0",
            "field 'use_parallel_residual' is absent, and for model_type 'gpt_neox' that "
            "means attention and the MLP in parallel, which ocsim does not model (write "
            "false to model the block ocsim models)");
    refused("gpt_neox", ", \"use_parallel_residual\": false",
            "field 'rotary_pct' is absent, and for model_type 'gpt_neox' that means "
            "rotary embeddings on part of each head");
    refused("gpt_neox", ", \"use_parallel_residual\": false, \"rotary_pct\": 0.25",
            "field 'rotary_pct' is 0.25: rotary embeddings on part of each head");
    accepted("gpt_neox", ", \"use_parallel_residual\": false, \"rotary_pct\": 1");
    refused("llama", ", \"partial_rotary_factor\": 0.5",
            "field 'partial_rotary_factor' is 0.5");
    refused("llama", ", \"parallel_attn\": true", "field 'parallel_attn' is true: attention "
                                                  "and the MLP in parallel");
    refused("gpt2", ", \"add_cross_attention\": true",
            "field 'add_cross_attention' is true: cross-attention");
    refused("opt", ", \"activation_function\": \"gelu\", \"do_layer_norm_before\": false",
            "field 'do_layer_norm_before' is false: a norm after each sublayer (post-norm)");
}

/* The activation: GELU variants and SiLU-gated MLPs; the Llama-style
 * block only SiLU; OPT's default ReLU is refused. */
static void test_activations(void)
{
    refused("llama", ", \"hidden_act\": \"gelu\"",
            "field 'hidden_act' is 'gelu'; ocsim models a SiLU-gated MLP (silu, swish) only");
    refused("gpt2", ", \"activation_function\": \"relu\"",
            "field 'activation_function' is 'relu'; ocsim models GELU MLPs");
    refused("opt", "", "no field 'hidden_act' or 'activation_function', and the default of "
                       "this model_type is 'relu'");
    accepted("opt", ", \"activation_function\": \"gelu\"");
    accepted("gpt2", ", \"activation_function\": \"gelu_pytorch_tanh\"");
    accepted("llama", ", \"hidden_act\": \"silu\"");
}

/* Defect 7: what the file holds is shown escaped, whatever it is. */
static void test_messages_escaped(void)
{
    refused("llama\\n\\u001b[2J", "",
            "field 'model_type' is 'llama\\n\\x1b[2J', which ocsim does not know");
    refused("llama", ", \"bad\\nkey\\u001b\": 1, \"hidden_act\": \"x\\ty\"",
            "field 'hidden_act' is 'x\\ty'");
    refused("llama", ", \"moe_\\u202e\": 1", "field 'moe_\\u202e' is 1");
    /* a JSON syntax error quotes the token: here a raw escape byte */
    const char *path = config("llama", ", \"x\": \x1b");
    struct oc_model m;
    struct oc_status st = {{0}};
    const char *subs[] = {"invalid token", NULL};
    oc_test_expect_fail(oc_model_load(path, &m, &st), st.msg, subs);
    /* a 160-byte UTF-8 _name_or_path: the name is cut between characters */
    char extra[512] = ", \"_name_or_path\": \"";
    for (int i = 0; i < 80; i++)
        strcat(extra, "\xc3\xa9");
    strcat(extra, "\"");
    struct oc_status st2 = {{0}};
    oc_test_expect_ok(oc_model_load(config("llama", extra), &m, &st2), st2.msg);
    CU_ASSERT_EQUAL(strlen(m.name), 126); /* 63 of the 2-byte characters */
    CU_ASSERT(oc_test_msg_is_clean(m.name));
}

static CU_TestInfo tests[] = {
    {"experts refused (defect 8)", test_experts},
    {"sliding window refused (defect 8)", test_sliding_window},
    {"biases, parallel blocks, partial rotary (defect 8)", test_biases_and_blocks},
    {"activations", test_activations},
    {"messages escaped (defect 7)", test_messages_escaped},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"model features", init, oc_test_dir_remove, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
