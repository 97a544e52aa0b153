/* test_exec_llama.c: the executor's model (exec/model/gpt.c) with Llama's
 * block (exec/model/llama.c) on the cpu kernels, one TP shard per rank in
 * process (exec_gpt_fixtures.h), on llama-tiny (4 query heads over 2 KV
 * heads, RMSNorm, RoPE, SwiGLU, untied head).
 *
 * - TP equivalence: t = 1 and 2 (the 2 KV heads split), and t = 1, 2, 4 of
 *   a variant with 4 KV heads, in lockstep, driven by the schedule's op
 *   list; losses and every gathered gradient equal t = 1's within 1e-5,
 *   every part asks for exactly the TP all-reduces the schedule emits;
 *   replicated tensors (the RMSNorm gains) get bitwise equal gradients.
 * - recompute (full, selective) gives bitwise the same numbers (classic;
 *   flash under sequence parallelism).
 * - sequence parallelism (flash) at t = 2 and, with 4 KV heads, t = 4
 *   equals t = 1.
 * - flash attention gives classic's losses bitwise, its gradients within
 *   1e-5.
 * - finite differences confirm the backward at t = 1, in each half (gate,
 *   up) of the fused MLP projection too.
 * - tied embeddings where the config asks for them.
 * - the rotary frequencies: Llama's, and rope_scaling's linear and llama3
 *   rules, worked by hand.
 * - 50 AdamW steps on the synthetic task make the loss fall.
 * The kernels alone are tested in test_kernels_llama.c, the tensor table
 * and the refusals in test_exec_params.c, the model across processes in
 * exec_equivalence_llama.sh.
 */
#include <math.h>
#include <stdio.h>

#include "exec_gpt_fixtures.h"
#include "test_util.h"

/* TP equivalence over L = 2 layers, B = 2, T = 32. */
static void test_tp_equivalence(void)
{
    struct oc_model m = llama_tiny(2);
    struct batch b = make_batch(m.vocab_size, 0, 2, 32);
    static struct shard ref[1];
    shards_run(ref, 1, &m, &b, OC_RECOMPUTE_NONE);
    /* At init the logits are small (weights of std 0.02 against an RMS-
     * normalised row of norm ~8: logit std ~0.16), so the mean loss is
     * ln 512 = 6.2383 plus about var/2 = 0.013: within 0.05 of 6.25. */
    CU_ASSERT_DOUBLE_EQUAL(mean_loss(&ref[0]), 6.25, 0.05);
    /* every gradient tensor is non-trivial (the checks do not compare
     * zeros); Llama's table has no biases and no position table */
    check_grads_nonzero(&ref[0]);
    CU_ASSERT_EQUAL(ref[0].p.nt, 1 + 2 * 6 + 2); /* wte, 6 per layer, lnf, lmw */
    check_tp_like_ref(&ref[0], &m, &b, 2);
    shard_free(&ref[0]);

    /* 4 KV heads (multi-head attention in the Llama block): TP up to 4 */
    m.num_key_value_heads = 4;
    shards_run(ref, 1, &m, &b, OC_RECOMPUTE_NONE);
    for (int64_t t = 2; t <= 4; t *= 2)
        check_tp_like_ref(&ref[0], &m, &b, t);
    shard_free(&ref[0]);
    batch_free(&b);
}

/* Full and selective recompute: bitwise the same losses and gradients as
 * keeping everything, at t = 1 and t = 2; classic attention, and flash
 * under sequence parallelism. */
static void test_recompute_bitwise(void)
{
    struct oc_model m = llama_tiny(2);
    struct batch b = make_batch(m.vocab_size, 3, 2, 32);
    check_recompute_bitwise(&m, &b);
    check_recompute_bitwise_v(&m, &b, FLASH_SP);
    batch_free(&b);
}

/* Sequence parallelism with flash attention: llama-tiny at t = 2 (its 2
 * KV heads split), and the 4-KV-head variant at t = 2 and 4, against t =
 * 1 (B = 3, T = 16: rank rows start inside a sequence; RoPE turns q and k
 * after the all-gather, by each row's position). As test_exec_gpt.c's:
 * the schedule's collectives, losses and gradients within 1e-5, the
 * RMSNorm gains' summed gradients bitwise alike on every rank. */
static void test_sp_equivalence(void)
{
    struct oc_model m = llama_tiny(2);
    struct batch b = make_batch(m.vocab_size, 13, 3, 16);
    static struct shard ref[1];
    shards_run_v(ref, 1, &m, &b, OC_RECOMPUTE_NONE, FLASH);
    check_tp_like_ref_v(&ref[0], &m, &b, 2, FLASH_SP);
    shard_free(&ref[0]);
    m.num_key_value_heads = 4;
    shards_run_v(ref, 1, &m, &b, OC_RECOMPUTE_NONE, FLASH);
    for (int64_t t = 2; t <= 4; t *= 2)
        check_tp_like_ref_v(&ref[0], &m, &b, t, FLASH_SP);
    shard_free(&ref[0]);
    batch_free(&b);
}

/* Flash against classic attention at t = 1 over grouped-query heads:
 * losses bitwise alike, gradients within 1e-5 (check_flash_like_classic). */
static void test_flash_like_classic(void)
{
    struct oc_model m = llama_tiny(2);
    struct batch b = make_batch(m.vocab_size, 4, 2, 32);
    check_flash_like_classic(&m, &b);
    batch_free(&b);
}

/* Finite differences (check_fd) on the entry of largest gradient within
 * rows [r0, r1) of several tensors. qkvw's rows are per KV group (64
 * rows): 2 queries (32), the key (16), the value (16); its rows 0 (query
 * 0) and 96 (group 1's key) are element 0 of a head, the pair RoPE turns
 * fastest (1 rad per position), where a wrong turn shows most (a rope
 * backward turning the wrong way fails there). fcw's two halves are
 * probed apart: rows [0, F) are the gate's, [F, 2F) the up projection's. */
static void test_finite_difference(void)
{
    struct oc_model m = llama_tiny(2);
    const int64_t B = 2, T = 16, F = m.intermediate_size;
    struct batch b = make_batch(m.vocab_size, 11, B, T);
    static struct shard s;
    shards_run(&s, 1, &m, &b, OC_RECOMPUTE_NONE);
    const struct {
        enum oc_param_kind k;
        int64_t layer, r0, r1; /* r1 0: every row */
    } probe[] = {
        {OC_P_WTE, -1, 0, 0},    {OC_P_QKVW, 0, 0, 64},   {OC_P_QKVW, 1, 64, 96},
        {OC_P_QKVW, 1, 96, 128}, {OC_P_QKVW, 0, 0, 1},    {OC_P_QKVW, 1, 96, 97},
        {OC_P_ATTPROJW, 1, 0, 0}, {OC_P_LN1W, 0, 0, 0},
        {OC_P_FCW, 1, 0, F},   {OC_P_FCW, 0, F, 2 * F}, {OC_P_FCPROJW, 0, 0, 0},
        {OC_P_LN2W, 1, 0, 0},  {OC_P_LNFW, -1, 0, 0},   {OC_P_LMW, -1, 0, 0},
    };
    for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++)
        check_fd(&s, &m, B, T, probe[i].k, probe[i].layer, probe[i].r0, probe[i].r1);
    shard_free(&s);
    batch_free(&b);
}

/* tie_word_embeddings true (Llama 3.2's small models): the head reads wte
 * (no lmw on a one-stage rank), and TP 2 still equals TP 1. */
static void test_tied(void)
{
    struct oc_model m = llama_tiny(1);
    m.tie_word_embeddings = 1;
    struct batch b = make_batch(m.vocab_size, 7, 1, 16);
    static struct shard ref[1];
    shards_run(ref, 1, &m, &b, OC_RECOMPUTE_NONE);
    CU_ASSERT_EQUAL(ref[0].p.head_uses_wte, 1);
    CU_ASSERT_PTR_EQUAL(oc_params_w(&ref[0].p, OC_P_LMW, -1),
                        oc_params_w(&ref[0].p, OC_P_WTE, -1));
    CU_ASSERT_EQUAL(ref[0].p.nt, 1 + 6 + 1); /* wte, a layer, lnfw */
    check_tp_like_ref(&ref[0], &m, &b, 2);
    shard_free(&ref[0]);
    batch_free(&b);
}

/* llama-tiny: HS 16, theta 10000: inv_freq[i] = 10000^(-i/8): 1, then
 * 10^-0.5 = 0.31622777, ..., 10^-2 = 0.01 at i = 4. Linear scaling by 2
 * halves each. llama3 (model_llama3_rope.json: HS 64, theta 500000,
 * factor 8, low 1, high 4, original context 8192): inv_freq[i] =
 * 500000^(-i/32); wavelengths 2 pi / inv_freq under 8192/4 = 2048 (i <=
 * 14) are kept, over 8192/1 (i >= 18) divided by 8, and i = 15..17
 * blended with s = (8192 / wavelength - 1) / 3. */
static void test_rope_frequencies(void)
{
    struct oc_model m = llama_tiny(1);
    struct oc_gpt_dims d;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_gpt_dims_init(&d, &m, 1, 0, 1, 8, &st), 0);
    CU_ASSERT_EQUAL(d.rope.pairs, 8);
    CU_ASSERT_EQUAL(d.rope.inv_freq[0], 1.0f);
    OC_ASSERT_REL(d.rope.inv_freq[1], 0.31622777, 1e-7);
    OC_ASSERT_REL(d.rope.inv_freq[4], 0.01, 1e-7);
    CU_ASSERT(d.eps == 1e-5f);
    CU_ASSERT_EQUAL(d.nkv, 2);
    CU_ASSERT_EQUAL(d.g, 2);
    snprintf(m.rope_scaling.type, sizeof m.rope_scaling.type, "linear");
    m.rope_scaling.factor = 2.0;
    CU_ASSERT_EQUAL_FATAL(oc_gpt_dims_init(&d, &m, 1, 0, 1, 8, &st), 0);
    CU_ASSERT_EQUAL(d.rope.inv_freq[0], 0.5f);
    OC_ASSERT_REL(d.rope.inv_freq[4], 0.005, 1e-7);

    struct oc_model l3;
    CU_ASSERT_EQUAL_FATAL(oc_model_load(OC_TEST_DATA "/model_llama3_rope.json", &l3, &st), 0);
    CU_ASSERT_EQUAL_FATAL(oc_gpt_dims_init(&d, &l3, 1, 0, 1, 8, &st), 0);
    CU_ASSERT_EQUAL(d.rope.pairs, 32);
    const double pi = 3.14159265358979323846;
    for (int i = 0; i < 32; i++) {
        const double f = pow(500000.0, -i / 32.0), wl = 2 * pi / f;
        double want = f;
        if (i >= 18)
            want = f / 8;
        else if (i >= 15) {
            const double s = (8192 / wl - 1) / 3;
            CU_ASSERT(s > 0 && s < 1);
            want = (1 - s) * f / 8 + s * f;
        } else {
            CU_ASSERT(wl < 2048);
        }
        OC_ASSERT_REL(d.rope.inv_freq[i], want, 1e-6);
        if (i > 0) /* the blend keeps the frequencies falling */
            CU_ASSERT(d.rope.inv_freq[i] < d.rope.inv_freq[i - 1]);
    }
    CU_ASSERT(2 * pi * pow(500000.0, 14 / 32.0) < 2048);
    CU_ASSERT(2 * pi * pow(500000.0, 18 / 32.0) > 8192);
}

/* 50 AdamW steps at t = 1 on the synthetic task (L = 2, B = 8, T = 32, a
 * new batch each step) take the loss below 70% of its first value (as
 * test_exec_gpt.c's GPT-2 block). */
static void test_training_loss_falls(void)
{
    struct oc_model m = llama_tiny(2);
    check_loss_falls(&m);
}

static CU_TestInfo tests[] = {
    {"tp_equivalence", test_tp_equivalence},
    {"recompute_bitwise", test_recompute_bitwise},
    {"sp_equivalence", test_sp_equivalence},
    {"flash_like_classic", test_flash_like_classic},
    {"finite_difference", test_finite_difference},
    {"tied", test_tied},
    {"rope_frequencies", test_rope_frequencies},
    {"training_loss_falls", test_training_loss_falls},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"exec_llama", gpt_suite_init, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
