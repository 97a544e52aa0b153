/* test_memory.c: the memory model (core/memory.c) against values worked out
 * by hand from Korthikanti et al. 2022 and the ZeRO paper. Models and
 * layouts are filled field by field, independent of the JSON loaders. */
#include <math.h>
#include <string.h>

#include "layout.h"
#include "memory.h"
#include "model.h"
#include "test_util.h"

/* GPT-3 175B (Brown et al. 2020, table 2.1): h 12288, a 96, L 96, f = 4h,
 * V 50257, 2048 positions; LayerNorm, biases, GELU, dropout, tied. */
static struct oc_model gpt3_175b(void)
{
    return oc_test_gpt("gpt3-175b", 12288, 96, 96, 4 * 12288, 50257, 2048);
}

/* A small Llama-style block: h 64, a 4, k 2 (GQA), f 160, L 4, V 1000;
 * RMSNorm, SwiGLU, no biases, rotary, no dropout, untied. */
static struct oc_model tiny_llama(void)
{
    struct oc_model m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "tiny-llama");
    strcpy(m.model_type, "llama");
    m.arch = OC_ARCH_LLAMA;
    m.hidden_size = 64;
    m.num_attention_heads = 4;
    m.num_key_value_heads = 2;
    m.num_hidden_layers = 4;
    m.intermediate_size = 160;
    m.vocab_size = 1000;
    m.max_position_embeddings = 128;
    m.gated_mlp = 1;
    m.has_bias = 0;
    m.learned_pos_emb = 0;
    m.norm_params_per_h = 1;
    m.tie_word_embeddings = 0;
    m.has_dropout = 0;
    return m;
}

/* Korthikanti et al. 2022, table 2, for GPT-3 175B at s = 2048, b = 1:
 *   sbh = 2048 * 12288 = 25 165 824;  5as/h = 5*96*2048/12288 = 80.
 *   t = 1:            sbh * (34 + 80)            = 114 sbh   = 2 868 903 936
 *   t = 8:            sbh * (10 + 24/8 + 80/8)   = 23 sbh    =   578 813 952
 *   t = 8, SP:        sbh * (34/8 + 80/8)        = 14.25 sbh =   358 612 992
 *   selective, t = 1: 34 sbh                                 =   855 638 016
 *   selective, t = 8: sbh * (10 + 3)             = 13 sbh    =   327 155 712
 *   selective, SP:    34/8 sbh                   = 4.25 sbh  =   106 954 752
 *   full:             2 sbh                                  =    50 331 648
 *   full, SP:         2 sbh / 8                              =     6 291 456 */
static void test_korthikanti_gpt3(void)
{
    struct oc_model m = gpt3_175b();
    struct oc_layout l = oc_test_layout(1, 1, 1, 1, 1, 2048);
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 2868903936.0, 1e-12);
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 855638016.0, 1e-12);

    l = oc_test_layout(8, 1, 1, 1, 1, 2048);
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 578813952.0, 1e-12);
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 327155712.0, 1e-12);
    l.recompute = OC_RECOMPUTE_FULL;
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 50331648.0, 1e-12);

    l.sequence_parallel = 1;
    l.recompute = OC_RECOMPUTE_NONE;
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 358612992.0, 1e-12);
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 106954752.0, 1e-12);
    l.recompute = OC_RECOMPUTE_FULL;
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 6291456.0, 1e-12);
}

/* The same formulas at other sizes: s = 4096, b = 2, t = 4 (sbh =
 * 4096*2*12288 = 100 663 296, 5as/(ht) = 5*96*4096/(12288*4) = 40):
 * no SP (10 + 6 + 40) sbh = 56 sbh = 5 637 144 576; SP (8.5 + 40) sbh =
 * 48.5 sbh = 4 882 169 856. And the t = 1 formula 34 + 5as/h at s = 1024,
 * b = 3: 5as/h = 40, sbh = 1024*3*12288 = 37 748 736, 74 sbh = 2 793 406 464. */
static void test_korthikanti_other_sizes(void)
{
    struct oc_model m = gpt3_175b();
    struct oc_layout l = oc_test_layout(4, 1, 1, 2, 2, 4096);
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 5637144576.0, 1e-12);
    l.sequence_parallel = 1;
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 4882169856.0, 1e-12);
    l = oc_test_layout(1, 1, 1, 3, 3, 1024);
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 2793406464.0, 1e-12);
}

/* A block other than the paper's, summed term by term (tiny_llama, s 32,
 * b 2, t 2: sb = 64, hd = 16, 2 heads and 1 KV head per rank, f/t = 80):
 *   QKV input 2*64*64 = 8192, Q 2*64*32 = 4096, K 2*64*16 = 2048, V 2048,
 *   softmax 2*(a/t)*s*sb = 2*2*32*64 = 8192 (no dropout: no mask, no
 *   dropout output), out-proj input 4096, MLP input 8192,
 *   SwiGLU gate + up + product 3*2*64*80 = 30720, two norm inputs 16384:
 *   total 83 968.
 * Flash keeps the fp32 log-sum-exp 4*2*64 = 512 instead of 8192: 76 288.
 * SP halves the replicated terms (QKV in, MLP in, norms: 32 768 -> 16 384):
 *   67 584. Selective drops the softmax: 83 968 - 8192 = 75 776; selective
 *   with flash drops the log-sum-exp too: 75 776. */
static void test_generalized_block(void)
{
    struct oc_model m = tiny_llama();
    struct oc_layout l = oc_test_layout(2, 1, 1, 2, 2, 32);
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 83968.0, 1e-12);
    l.attention = OC_ATTN_FLASH;
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 76288.0, 1e-12);
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 75776.0, 1e-12);
    l.attention = OC_ATTN_CLASSIC;
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 75776.0, 1e-12);
    l.recompute = OC_RECOMPUTE_NONE;
    l.sequence_parallel = 1;
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 67584.0, 1e-12);
}

/* Korthikanti section 4.3, GPT-3 at s 2048, b 1, t 8 (sbh = 25 165 824):
 *   embedding dropout mask sbh = 25 165 824, with SP sbh/8 = 3 145 728;
 *   head (final norm + LM head inputs) 4 sbh = 100 663 296, SP 12 582 912;
 *   logits 4 s b V / t = 4*2048*50257/8 = 51 463 168.
 * Without dropout (tiny_llama) the embedding keeps nothing. */
static void test_embed_head_logits(void)
{
    struct oc_model m = gpt3_175b();
    struct oc_layout l = oc_test_layout(8, 1, 1, 1, 1, 2048);
    OC_ASSERT_REL(oc_mem_embed_activation_bytes(&m, &l), 25165824.0, 1e-12);
    OC_ASSERT_REL(oc_mem_head_activation_bytes(&m, &l), 100663296.0, 1e-12);
    OC_ASSERT_REL(oc_mem_logits_bytes(&m, &l), 51463168.0, 1e-12);
    l.sequence_parallel = 1;
    OC_ASSERT_REL(oc_mem_embed_activation_bytes(&m, &l), 3145728.0, 1e-12);
    OC_ASSERT_REL(oc_mem_head_activation_bytes(&m, &l), 12582912.0, 1e-12);
    OC_ASSERT_REL(oc_mem_logits_bytes(&m, &l), 51463168.0, 1e-12);
    struct oc_model q = tiny_llama();
    CU_ASSERT_EQUAL(oc_mem_embed_activation_bytes(&q, &l), 0.0);
}

/* In flight, p = 4, m = G/(d b) = 8:
 *   1F1B min(p - i, m): 4 3 2 1; with m = 2: 2 2 2 1.
 *   GPipe: m = 8 on every stage.
 *   Interleaved v = 2: (p-i-1)*2 + (v-1)*p + 1 = 11 9 7 5; with m = 2 the
 *   cap m*v = 4: 4 4 4 4. */
static void test_inflight(void)
{
    struct oc_layout l = oc_test_layout(1, 4, 1, 1, 8, 128);
    const int64_t f1b[4] = {4, 3, 2, 1}, il[4] = {11, 9, 7, 5};
    for (int64_t i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(oc_mem_inflight(&l, i), f1b[i]);
    l.schedule = OC_SCHED_GPIPE;
    for (int64_t i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(oc_mem_inflight(&l, i), 8);
    l.schedule = OC_SCHED_INTERLEAVED;
    l.vchunks = 2;
    for (int64_t i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(oc_mem_inflight(&l, i), il[i]);
    l.global_batch = 2;
    for (int64_t i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(oc_mem_inflight(&l, i), 4);
    l.schedule = OC_SCHED_1F1B;
    l.vchunks = 1;
    const int64_t f1b2[4] = {2, 2, 2, 1};
    for (int64_t i = 0; i < 4; i++)
        CU_ASSERT_EQUAL(oc_mem_inflight(&l, i), f1b2[i]);
}

/* tiny_llama parameters (t = 1): layer = Q,O 2*64*64 + K,V 2*64*32
 * + 3*64*160 + 2 RMSNorms 2*64 = 8192 + 4096 + 30720 + 128 = 43 136;
 * embedding 1000*64 = 64 000; head 64 + 64 000 = 64 064;
 * total 4*43 136 + 64 000 + 64 064 = 300 608.
 * p = 2: stage 0 = 2*43 136 + 64 000 = 150 272; stage 1 = 86 272 + 64 064 =
 * 150 336. t = 2, p = 1: layer shard (8192 + 4096 + 30720)/2 + 128 (norms
 * whole) = 21 632; embedding 500*64 = 32 000; head 64 + 32 000;
 * 4*21 632 + 32 000 + 32 064 = 150 592. */
static void test_stage_params_hand(void)
{
    struct oc_model m = tiny_llama();
    CU_ASSERT_EQUAL(oc_model_params_total(&m), 300608);
    struct oc_layout l = oc_test_layout(1, 2, 1, 1, 2, 32);
    CU_ASSERT_EQUAL(oc_mem_stage_params(&m, &l, 0), 150272);
    CU_ASSERT_EQUAL(oc_mem_stage_params(&m, &l, 1), 150336);
    l = oc_test_layout(2, 1, 1, 1, 2, 32);
    CU_ASSERT_EQUAL(oc_mem_stage_params(&m, &l, 0), 150592);
}

/* The stages together hold the model once for t = 1 and untied weights;
 * tied with p > 1 adds the last stage's copy of the word embedding (V*h);
 * tied with p = 1 holds it once. Interleaved chunks do not change a stage's
 * share (L/p layers in v chunks). */
static void test_stage_params_sum(void)
{
    struct oc_model q = tiny_llama();
    struct oc_layout l = oc_test_layout(1, 4, 1, 1, 8, 32);
    int64_t sum = 0;
    for (int64_t i = 0; i < 4; i++)
        sum += oc_mem_stage_params(&q, &l, i);
    CU_ASSERT_EQUAL(sum, oc_model_params_total(&q));
    l = oc_test_layout(1, 2, 1, 1, 8, 32);
    l.schedule = OC_SCHED_INTERLEAVED;
    l.vchunks = 2;
    sum = oc_mem_stage_params(&q, &l, 0) + oc_mem_stage_params(&q, &l, 1);
    CU_ASSERT_EQUAL(sum, oc_model_params_total(&q));

    struct oc_model g = gpt3_175b();
    l = oc_test_layout(1, 8, 1, 1, 8, 2048);
    sum = 0;
    for (int64_t i = 0; i < 8; i++)
        sum += oc_mem_stage_params(&g, &l, i);
    CU_ASSERT_EQUAL(sum, oc_model_params_total(&g) + 50257LL * 12288);
    l = oc_test_layout(1, 1, 1, 1, 8, 2048);
    CU_ASSERT_EQUAL(oc_mem_stage_params(&g, &l, 0), oc_model_params_total(&g));
}

/* ZeRO section 3.1: 2 + 2 + 12 = 16 bytes per parameter for d = 1; with the
 * optimizer sharded over d = 4: 2 + 2 + 12/4 = 7. Unsharded d = 4 stays 16. */
static void test_sixteen_bytes(void)
{
    struct oc_model m = tiny_llama();
    struct oc_layout l = oc_test_layout(1, 2, 1, 1, 4, 32);
    struct oc_mem_breakdown b;
    oc_memory_stage(&m, &l, 1, &b);
    CU_ASSERT_EQUAL(b.params, 150336);
    OC_ASSERT_REL(b.weights_bytes + b.grads_bytes + b.optimizer_bytes,
                  16.0 * 150336, 1e-12);
    l.dp = 4;
    l.global_batch = 16;
    oc_memory_stage(&m, &l, 1, &b);
    OC_ASSERT_REL(b.weights_bytes + b.grads_bytes + b.optimizer_bytes,
                  16.0 * 150336, 1e-12);
    l.zero = 1;
    oc_memory_stage(&m, &l, 1, &b);
    OC_ASSERT_REL(b.weights_bytes + b.grads_bytes + b.optimizer_bytes,
                  7.0 * 150336, 1e-12);
    OC_ASSERT_REL(b.optimizer_bytes, 3.0 * 150336, 1e-12);
}

/* An fp32 run: 4 + 4 + 8 = 16 bytes per parameter (the weights are Adam's
 * master copy; m and v), 4 + 4 + 8/4 = 10 with the optimizer sharded over
 * d = 4; a bf16 or fp16 run 2 + 2 + 12. */
static void test_fp32_param_bytes(void)
{
    struct oc_model m = tiny_llama();
    struct oc_layout l = oc_test_layout(1, 2, 4, 1, 16, 32);
    l.zero = 1;
    l.precision = OC_PREC_FP32;
    struct oc_mem_breakdown b;
    oc_memory_stage(&m, &l, 1, &b);
    OC_ASSERT_REL(b.weights_bytes, 4.0 * 150336, 1e-12);
    OC_ASSERT_REL(b.grads_bytes, 4.0 * 150336, 1e-12);
    OC_ASSERT_REL(b.optimizer_bytes, 2.0 * 150336, 1e-12);
    l.zero = 0;
    oc_memory_stage(&m, &l, 1, &b);
    OC_ASSERT_REL(b.weights_bytes + b.grads_bytes + b.optimizer_bytes,
                  16.0 * 150336, 1e-12);
    const struct oc_mem_param_bytes f32 = oc_mem_param_bytes(&l);
    CU_ASSERT(f32.weight == 4 && f32.grad == 4 && f32.optimizer == 8);
    l.precision = OC_PREC_FP16;
    const struct oc_mem_param_bytes f16 = oc_mem_param_bytes(&l);
    CU_ASSERT(f16.weight == 2 && f16.grad == 2 && f16.optimizer == 12);
}

/* Korthikanti's terms in fp32: of GPT-3's 34 sbh per layer, 2 sbh are the
 * 1-byte dropout masks and 32 sbh 2-byte tensors, so 64 + 2 = 66 sbh; of
 * the 5as/h scores term the mask (1) stays and softmax and dropout outputs
 * (2 + 2) double: 9as/h = 9*96*2048/12288 = 144. With sbh = 25 165 824:
 *   t = 1:      210 sbh = 5 284 823 040;  selective: 66 sbh = 1 660 944 384;
 *   full:       4 sbh   =   100 663 296;
 *   head input 8 sbh = 201 326 592; embedding mask and logits unchanged. */
static void test_fp32_activations(void)
{
    struct oc_model m = gpt3_175b();
    struct oc_layout l = oc_test_layout(1, 1, 1, 1, 1, 2048);
    l.precision = OC_PREC_FP32;
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 5284823040.0, 1e-12);
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 1660944384.0, 1e-12);
    l.recompute = OC_RECOMPUTE_FULL;
    OC_ASSERT_REL(oc_mem_layer_activation_bytes(&m, &l), 100663296.0, 1e-12);
    OC_ASSERT_REL(oc_mem_head_activation_bytes(&m, &l), 201326592.0, 1e-12);
    OC_ASSERT_REL(oc_mem_embed_activation_bytes(&m, &l), 25165824.0, 1e-12);
    OC_ASSERT_REL(oc_mem_logits_bytes(&m, &l), 4.0 * 2048 * 50257, 1e-12);
}

/* GPT-3 175B, t 8, p 4, SP, selective, s 2048, b 1, m 8: 24 layers a stage,
 * layer term 4.25 sbh = 106 954 752 (see above), embedding mask 3 145 728,
 * head 12 582 912, logits 51 463 168.
 * 1F1B stage 0: 4 in flight: 4*24*106 954 752 + 4*3 145 728
 *   = 10 267 656 192 + 12 582 912 = 10 280 239 104, no logits.
 * 1F1B stage 3: 1 in flight: 24*106 954 752 + 12 582 912 = 2 579 496 960,
 *   logits 51 463 168.
 * GPipe stage 3: 8 in flight: 8 * 2 579 496 960 = 20 635 975 680,
 *   logits 8*51 463 168 = 411 705 344. */
static void test_stage_activations(void)
{
    struct oc_model m = gpt3_175b();
    struct oc_layout l = oc_test_layout(8, 4, 1, 1, 8, 2048);
    l.sequence_parallel = 1;
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    struct oc_mem_breakdown b;
    oc_memory_stage(&m, &l, 0, &b);
    CU_ASSERT_EQUAL(b.inflight, 4);
    OC_ASSERT_REL(b.activations_bytes, 10280239104.0, 1e-12);
    CU_ASSERT_EQUAL(b.logits_bytes, 0.0);
    oc_memory_stage(&m, &l, 3, &b);
    CU_ASSERT_EQUAL(b.inflight, 1);
    OC_ASSERT_REL(b.activations_bytes, 2579496960.0, 1e-12);
    OC_ASSERT_REL(b.logits_bytes, 51463168.0, 1e-12);
    OC_ASSERT_REL(b.total_bytes,
                  b.weights_bytes + b.grads_bytes + b.optimizer_bytes +
                      b.activations_bytes + b.logits_bytes,
                  1e-12);
    l.schedule = OC_SCHED_GPIPE;
    oc_memory_stage(&m, &l, 3, &b);
    CU_ASSERT_EQUAL(b.inflight, 8);
    OC_ASSERT_REL(b.activations_bytes, 20635975680.0, 1e-12);
    OC_ASSERT_REL(b.logits_bytes, 411705344.0, 1e-12);
}

/* Interleaved, p 4, v 2, m 8, same GPT-3 setting, 12 layers a chunk
 * (chunk term 12*106 954 752 = 1 283 457 024). Megatron-LM's order on
 * stage 0: forward k runs chunk (k/4)%2, backward j chunk 1-(j/4)%2;
 * 10 warm-up forwards F0..F9 (chunk 0: F0-F3, F8, F9), then F10 B0 F11 B1
 * ...: after F11 (chunk 0), 12 forwards and one backward (of chunk 1) are
 * done: 11 chunks in flight, 8 of them chunk 0 (F0-F3, F8-F11), the most
 * ever (B4, the first chunk-0 backward, comes before F16, the next chunk-0
 * forward). So stage 0 holds 11*1 283 457 024 + 8*3 145 728
 * = 14 118 027 264 + 25 165 824 = 14 143 193 088.
 * Stage 3: 4 warm-up forwards (chunk 0), F4 (chunk 1) then B0 (chunk 1):
 * 5 in flight, never more than one chunk-1: 5*1 283 457 024 + 12 582 912
 * = 6 429 868 032, one logits 51 463 168. */
static void test_interleaved_activations(void)
{
    struct oc_model m = gpt3_175b();
    struct oc_layout l = oc_test_layout(8, 4, 1, 1, 8, 2048);
    l.sequence_parallel = 1;
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    l.schedule = OC_SCHED_INTERLEAVED;
    l.vchunks = 2;
    struct oc_mem_breakdown b;
    oc_memory_stage(&m, &l, 0, &b);
    CU_ASSERT_EQUAL(b.inflight, 11);
    OC_ASSERT_REL(b.activations_bytes, 14143193088.0, 1e-12);
    CU_ASSERT_EQUAL(b.logits_bytes, 0.0);
    oc_memory_stage(&m, &l, 3, &b);
    CU_ASSERT_EQUAL(b.inflight, 5);
    OC_ASSERT_REL(b.activations_bytes, 6429868032.0, 1e-12);
    OC_ASSERT_REL(b.logits_bytes, 51463168.0, 1e-12);
}

/* Per-chunk building block: layers_per_chunk layer terms plus embedding on
 * (stage 0, chunk 0) and head on (stage p-1, chunk v-1). GPT-3 as above,
 * p 4 v 2: middle 1 283 457 024; (0,0) + 3 145 728 = 1 286 602 752;
 * (3,1) + 12 582 912 = 1 296 039 936; (3,0) and (0,1) plain. */
static void test_chunk_bytes(void)
{
    struct oc_model m = gpt3_175b();
    struct oc_layout l = oc_test_layout(8, 4, 1, 1, 8, 2048);
    l.sequence_parallel = 1;
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    l.schedule = OC_SCHED_INTERLEAVED;
    l.vchunks = 2;
    OC_ASSERT_REL(oc_mem_chunk_activation_bytes(&m, &l, 1, 0), 1283457024.0, 1e-12);
    OC_ASSERT_REL(oc_mem_chunk_activation_bytes(&m, &l, 0, 0), 1286602752.0, 1e-12);
    OC_ASSERT_REL(oc_mem_chunk_activation_bytes(&m, &l, 0, 1), 1283457024.0, 1e-12);
    OC_ASSERT_REL(oc_mem_chunk_activation_bytes(&m, &l, 3, 1), 1296039936.0, 1e-12);
    OC_ASSERT_REL(oc_mem_chunk_activation_bytes(&m, &l, 3, 0), 1283457024.0, 1e-12);
}

/* The peak is the largest stage: for 1F1B with these sizes stage 0 (four
 * micro-batches in flight) outweighs stage 3 (one, plus head and logits);
 * its value is oc_memory_stage's total for stage 0. */
static void test_peak(void)
{
    struct oc_model m = gpt3_175b();
    struct oc_layout l = oc_test_layout(8, 4, 1, 1, 8, 2048);
    l.sequence_parallel = 1;
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    int64_t worst = -1;
    double peak = oc_memory_peak(&m, &l, &worst);
    CU_ASSERT_EQUAL(worst, 0);
    struct oc_mem_breakdown b;
    oc_memory_stage(&m, &l, 0, &b);
    OC_ASSERT_REL(peak, b.total_bytes, 1e-12);
    for (int64_t i = 1; i < 4; i++) {
        oc_memory_stage(&m, &l, i, &b);
        CU_ASSERT(b.total_bytes < peak);
    }
}

/* fp32 gradients (Megatron's DDP main_grad buffer; layout.h grad_fp32):
 * Megatron-LM's docs/source/distrib_optimizer.md, "bf16 param, fp32
 * grads": 18 bytes per parameter, 6 + 12/d distributed. bf16 with the
 * default (grad_fp32 0) turns them on (arguments.py), fp16 does not; the
 * knob overrides either way; fp32 runs always have them. tiny_llama stage
 * 1: 150 336 parameters: 18 * 150 336 = 2 706 048 bytes, with ZeRO-1 over
 * d = 4 (6 + 3) * 150 336 = 1 353 024. */
static void test_eighteen_bytes(void)
{
    struct oc_model m = tiny_llama();
    struct oc_layout l = oc_test_layout(1, 2, 1, 1, 4, 32);
    l.grad_fp32 = 0;
    CU_ASSERT_EQUAL(l.precision, OC_PREC_BF16);
    CU_ASSERT(oc_mem_grads_fp32(&l));
    struct oc_mem_breakdown b;
    oc_memory_stage(&m, &l, 1, &b);
    OC_ASSERT_REL(b.grads_bytes, 4.0 * 150336, 1e-12);
    OC_ASSERT_REL(b.weights_bytes + b.grads_bytes + b.optimizer_bytes, 2706048.0, 1e-12);
    l.dp = 4;
    l.global_batch = 16;
    l.zero = 1;
    oc_memory_stage(&m, &l, 1, &b);
    OC_ASSERT_REL(b.weights_bytes + b.grads_bytes + b.optimizer_bytes, 1353024.0, 1e-12);
    l.grad_fp32 = -1; /* --no-grad-reduce-in-fp32: 2 + 2 + 3 = 7 */
    CU_ASSERT(!oc_mem_grads_fp32(&l));
    oc_memory_stage(&m, &l, 1, &b);
    OC_ASSERT_REL(b.weights_bytes + b.grads_bytes + b.optimizer_bytes, 7.0 * 150336, 1e-12);
    l.precision = OC_PREC_FP16;
    l.grad_fp32 = 0; /* fp16: Megatron-LM keeps 16-bit gradients */
    CU_ASSERT(!oc_mem_grads_fp32(&l));
    CU_ASSERT_EQUAL(oc_mem_param_bytes(&l).grad, 2.0);
    l.grad_fp32 = 1; /* --accumulate-allreduce-grads-in-fp32 */
    CU_ASSERT(oc_mem_grads_fp32(&l));
    CU_ASSERT_EQUAL(oc_mem_param_bytes(&l).grad, 4.0);
    l.precision = OC_PREC_FP32;
    l.grad_fp32 = -1; /* fp32 runs: the gradients are fp32 whatever the knob */
    CU_ASSERT(oc_mem_grads_fp32(&l));
    CU_ASSERT_EQUAL(oc_mem_param_bytes(&l).grad, 4.0);
}

static CU_TestInfo tests[] = {
    {"korthikanti_gpt3", test_korthikanti_gpt3},
    {"korthikanti_other_sizes", test_korthikanti_other_sizes},
    {"generalized_block", test_generalized_block},
    {"embed_head_logits", test_embed_head_logits},
    {"inflight", test_inflight},
    {"stage_params_hand", test_stage_params_hand},
    {"stage_params_sum", test_stage_params_sum},
    {"sixteen_bytes", test_sixteen_bytes},
    {"eighteen_bytes", test_eighteen_bytes},
    {"fp32_param_bytes", test_fp32_param_bytes},
    {"fp32_activations", test_fp32_activations},
    {"stage_activations", test_stage_activations},
    {"interleaved_activations", test_interleaved_activations},
    {"chunk_bytes", test_chunk_bytes},
    {"peak", test_peak},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"memory", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
