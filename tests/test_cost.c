/* test_cost.c: the compute cost model (core/cost.c) against values worked
 * out by hand: the roofline, wave quantization, calibration, the byte and
 * FLOP accounting of each part, and how a COMPUTE op is priced. Devices
 * and models are filled field by field. */
#include <math.h>
#include <string.h>

#include "cost.h"
#include "cost_overhead.h"
#include "layout.h"
#include "memory.h"
#include "model.h"
#include "schedule.h"
#include "test_util.h"

/* An H100-like device, round numbers: 1000 TFLOP/s peak, 80 % sustained,
 * 132 SMs, 3 TB/s. */
static struct oc_topology device(double peak, double eff, int64_t sms,
                                 double hbm)
{
    struct oc_topology t;
    memset(&t, 0, sizeof t);
    strcpy(t.name, "test");
    t.gpus_per_node = 8;
    t.device.peak_flops_16bit = peak;
    t.device.memory_bytes = 80e9;
    t.device.hbm_bandwidth_Bps = hbm;
    t.device.sm_count = sms;
    t.device.gemm_efficiency = eff;
    return t;
}

/* The bare roofline: no launch cost, memory-bound kernels at the full HBM
 * bandwidth, so the byte and FLOP accounting below is checked alone
 * (test_launch_overhead and test_optimizer_step check the overheads). */
static void cost_bare(struct oc_cost *c, const struct oc_model *m,
                      const struct oc_layout *l, const struct oc_topology *t)
{
    const struct oc_cost_overheads o = oc_cost_overheads_none();
    oc_cost_init_with(c, m, l, t, &o);
}

/* A small GPT block: h 64, a 4 (hd 16), f 256, L 4, V 1000; GELU, biases,
 * learned positions, dropout. */
static struct oc_model tiny_gpt(void)
{
    return oc_test_gpt("tiny-gpt", 64, 4, 4, 256, 1000, 128);
}

/* One pipeline (d 1) of m = 4 micro-batches. */
static struct oc_layout layout(int64_t t, int64_t p, int64_t b, int64_t s)
{
    return oc_test_layout(t, p, 1, b, 4 * b, s);
}

/* [1536 x 16384] x [16384 x 1408]: 12 x 11 = 132 tiles = one full wave on
 * 132 SMs. FLOPs 2*1536*1408*16384 = 70 866 960 384, at 0.8 * 1e15:
 * 88.583 700 48 us. Operand bytes 2*(1536*16384 + 16384*1408 + 1536*1408)
 * = 100 794 368, 33.6 us at 3 TB/s: compute bound, so the time is exactly
 * flops / (peak * eff). Two such GEMMs (batch 2): 264 tiles, 2 full waves,
 * twice the time. */
static void test_gemm_full_waves(void)
{
    struct oc_topology t = device(1e15, 0.8, 132, 3e12);
    struct oc_gemm g = {1536, 1408, 16384, 1, 2};
    OC_ASSERT_REL(oc_cost_gemm_s(&t, g), 70866960384.0 / 8e14, 1e-12);
    OC_ASSERT_REL(oc_cost_gemm_s(&t, g), 88.58370048e-6, 1e-12);
    g.batch = 2;
    OC_ASSERT_REL(oc_cost_gemm_s(&t, g), 2 * 88.58370048e-6, 1e-12);
}

/* [896 x 16384] x [16384 x 2432]: 7 x 19 = 133 tiles on 132 SMs: 2 waves,
 * quantization efficiency 133/264. FLOPs 2*896*2432*16384 = 71 403 831 296
 * (0.76 % more than the 132-tile GEMM), time 71 403 831 296 * 264 /
 * (133 * 8e14) = 177.167 400 96 us: about twice the 132-tile GEMM. Operand
 * bytes 113 410 048, 37.8 us: still compute bound. */
static void test_gemm_wave_loss(void)
{
    struct oc_topology t = device(1e15, 0.8, 132, 3e12);
    struct oc_gemm g = {896, 2432, 16384, 1, 2};
    OC_ASSERT_REL(oc_cost_gemm_s(&t, g), 71403831296.0 * 264 / (133 * 8e14), 1e-12);
    OC_ASSERT_REL(oc_cost_gemm_s(&t, g), 177.16740096e-6, 1e-10);
    struct oc_gemm full = {1536, 1408, 16384, 1, 2};
    CU_ASSERT(oc_cost_gemm_s(&t, g) > 1.9 * oc_cost_gemm_s(&t, full));
    /* A partial tile counts as a whole one: 897 rows make 8 row tiles,
     * 152 tiles, still 2 waves: same time per FLOP of the wave count, i.e.
     * flops * 264 / (152 * 8e14). */
    struct oc_gemm ragged = {897, 2432, 16384, 1, 2};
    OC_ASSERT_REL(oc_cost_gemm_s(&t, ragged),
                  2.0 * 897 * 2432 * 16384 * 264 / (152 * 8e14), 1e-12);
}

/* [8 x 8192] x [8192 x 8192] (a decode-like skinny GEMM): operand bytes
 * 2*(8*8192 + 8192*8192 + 8*8192) = 134 479 872, 44.826 624 us at 3 TB/s;
 * the arithmetic (1 073 741 824 FLOPs, 64 tiles: 1 wave at 64/132) takes
 * 2.77 us. Memory bound: the time is the bytes over HBM exactly. */
static void test_gemm_memory_bound(void)
{
    struct oc_topology t = device(1e15, 0.8, 132, 3e12);
    struct oc_gemm g = {8, 8192, 8192, 1, 2};
    OC_ASSERT_REL(oc_cost_gemm_s(&t, g), 134479872.0 / 3e12, 1e-12);
    OC_ASSERT_REL(oc_cost_gemm_s(&t, g), 44.826624e-6, 1e-12);
    struct oc_gemm empty = {0, 8192, 8192, 1, 2};
    CU_ASSERT_EQUAL(oc_cost_gemm_s(&t, empty), 0.0);
}

/* Memory-bound kernels: 3 GB at 3 TB/s = 1 ms. A calibrated device uses its
 * measured rates: GEMMs at calib_gemm_flops with no wave loss (the 133-tile
 * GEMM: 71 403 831 296 / 5e14 = 142.807 662 592 us), bytes at calib_mem_Bps
 * (3 GB at 2 TB/s = 1.5 ms; the skinny GEMM 134 479 872 / 2e12). */
static void test_membound_and_calibration(void)
{
    struct oc_topology t = device(1e15, 0.8, 132, 3e12);
    OC_ASSERT_REL(oc_cost_membound_s(&t, 3e9), 1e-3, 1e-12);
    t.calib_gemm_flops = 5e14;
    t.calib_mem_Bps = 2e12;
    OC_ASSERT_REL(oc_cost_membound_s(&t, 3e9), 1.5e-3, 1e-12);
    struct oc_gemm g = {896, 2432, 16384, 1, 2};
    OC_ASSERT_REL(oc_cost_gemm_s(&t, g), 142.807662592e-6, 1e-12);
    struct oc_gemm skinny = {8, 8192, 8192, 1, 2};
    OC_ASSERT_REL(oc_cost_gemm_s(&t, skinny), 134479872.0 / 2e12, 1e-12);
}

/* Byte accounting of one tiny_gpt layer, t 2, s 32, b 2 (T = 64 rows,
 * 2 heads of 16 per rank, f/t = 128), on a device with unbounded FLOP/s so
 * every kernel costs its bytes at 1e12 B/s.
 * MLP forward: up [64x64]x[64x128] 2*(4096+8192+8192) = 40 960, down
 *   [64x128]x[128x64] 40 960, norm 4*64*64 = 16 384, GELU 4*64*128 =
 *   32 768, the fused dropout and residual add 7*64*64 = 28 672 (read two,
 *   write one, 1-byte mask): 159 744 bytes.
 * MLP backward: four GEMMs (dgrad and wgrad of each) of 40 960 bytes each
 *   = 163 840, twice the memory-bound bytes 2*77 824 = 155 648: 319 488.
 * Attention forward: QKV [64x64]x[64x96] 2*(4096+6144+6144) = 32 768,
 *   output [64x32]x[32x64] 2*(2048+2048+4096) = 16 384, scores 4 x
 *   [32x16]x[16x32] 2*(512+512+1024)*4 = 16 384, values 4 x [32x32]x[32x16]
 *   16 384, softmax 4*4096 = 16 384 and its dropout 5*4096 = 20 480 over
 *   the 4*32*32 = 4096 scores, norm 16 384, dropout and residual 28 672:
 *   163 840 bytes (learned positions: no rotary).
 * Selective recompute reruns the core attention: 16 384*3 + 20 480 = 69 632.
 * Sequence parallel halves the norm, residual and dropout rows: MLP
 *   forward 81 920 + 8192 + 32 768 + 14 336 = 137 216.
 * Embedding forward: gather 4*64*64 = 16 384, positions 8192, dropout
 *   20 480 = 45 056; backward twice that, 90 112, plus the dense table
 *   gradient zeroed and added into 16-bit gradients, (2*2 + 2*2) bytes x
 *   500 x 64 = 256 000: 346 112. Head forward: norm 16 384, logits GEMM
 *   [64x64]x[64x500] 2*(4096+32 000+32 000) = 136 192, cross-entropy
 *   (cast 6, max 4, subtract 8, exp 8, sum 4, normalise 8)*64*500 =
 *   38*32 000 = 1 216 000: 1 368 576. Head backward: two GEMMs of 136 192,
 *   norm 32 768, cross-entropy 14*32 000 = 448 000: 753 152. */
static void test_part_bytes(void)
{
    struct oc_topology t = device(1e30, 1.0, 132, 1e12);
    struct oc_model m = tiny_gpt();
    struct oc_layout l = layout(2, 1, 2, 32);
    struct oc_cost c;
    cost_bare(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_FWD], 159744e-12, 1e-9);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_BWD], 319488e-12, 1e-9);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_FWD], 163840e-12, 1e-9);
    OC_ASSERT_REL(c.part_s[OC_PART_EMBED][OC_PHASE_FWD], 45056e-12, 1e-9);
    OC_ASSERT_REL(c.part_s[OC_PART_EMBED][OC_PHASE_BWD], 346112e-12, 1e-9);
    OC_ASSERT_REL(c.part_s[OC_PART_HEAD][OC_PHASE_FWD], 1368576e-12, 1e-9);
    OC_ASSERT_REL(c.part_s[OC_PART_HEAD][OC_PHASE_BWD], 753152e-12, 1e-9);
    CU_ASSERT_EQUAL(c.part_s[OC_PART_ATTN][OC_PHASE_RECOMPUTE], 0.0);
    /* bf16 with 16-bit gradients (the test layout's): 44 bytes per
     * parameter (cost_overhead.h) */
    OC_ASSERT_REL(c.optimizer_s_per_param, 44e-12, 1e-12);

    l.recompute = OC_RECOMPUTE_SELECTIVE;
    cost_bare(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_RECOMPUTE], 69632e-12, 1e-9);
    CU_ASSERT_EQUAL(c.part_s[OC_PART_MLP][OC_PHASE_RECOMPUTE], 0.0);
    l.recompute = OC_RECOMPUTE_FULL;
    cost_bare(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_RECOMPUTE], 163840e-12, 1e-9);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_RECOMPUTE], 159744e-12, 1e-9);
    CU_ASSERT_EQUAL(c.part_s[OC_PART_HEAD][OC_PHASE_RECOMPUTE], 0.0);

    l.recompute = OC_RECOMPUTE_NONE;
    l.sequence_parallel = 1;
    cost_bare(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_FWD], 137216e-12, 1e-9);
}

/* Attention backward and the flash kernel, bytes as in test_part_bytes.
 * Projection backward: QKV dgrad [64x96]x[96x64] 2*(6144+6144+4096) =
 *   32 768, wgrad [64x64]x[64x96] 32 768; output dgrad [64x64]x[64x32]
 *   2*(4096+2048+2048) = 16 384, wgrad [32x64]x[64x64] 16 384: 98 304;
 *   norm and the fused dropout-residual doubled 2*45 056 = 90 112.
 * Classic core backward: four GEMMs of 16 384 bytes = 65 536, softmax and
 *   dropout doubled 2*36 864 = 73 728: total 98 304 + 90 112 + 139 264 =
 *   327 680.
 * Flash (2 heads and 2 KV heads of 16 a rank: Q = K = V = O =
 *   2*64*32 = 4096 bytes, log-sum-exp 4*2*64 = 512): forward reads Q K V,
 *   writes O and the lse: 16 896, so attention forward = 94 208 (the
 *   non-core part of 163 840) + 16 896 = 111 104; backward reads Q K V O
 *   dO lse and writes dQ dK dV: 8*4096 + 512 = 33 280, attention backward
 *   = 98 304 + 90 112 + 33 280 = 221 696. */
static void test_attention_bytes(void)
{
    struct oc_topology t = device(1e30, 1.0, 132, 1e12);
    struct oc_model m = tiny_gpt();
    struct oc_layout l = layout(2, 1, 2, 32);
    struct oc_cost c;
    cost_bare(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_BWD], 327680e-12, 1e-9);
    l.attention = OC_ATTN_FLASH;
    cost_bare(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_FWD], 111104e-12, 1e-9);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_BWD], 221696e-12, 1e-9);
    /* selective recompute with flash reruns the fused kernel forward */
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    cost_bare(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_RECOMPUTE], 16896e-12, 1e-9);
}

/* A Llama-style block (h 64, a 4, k 2, f 160, RMSNorm, SwiGLU, rotary, no
 * dropout, no biases), t 2, s 32, b 2: per rank 2 heads, 1 KV head, f 80.
 * Attention forward: QKV [64x64]x[64x64] (2+2*1 heads of 16)
 *   2*(4096*3) = 24 576, output 16 384, scores 16 384, values 16 384,
 *   softmax 16 384 (no dropout), norm 16 384, residual 24 576, rotary on Q
 *   and K 4*64*(2+1)*16 = 12 288: 143 360.
 * MLP forward: gate and up fused [64x64]x[64x160] 2*(4096+10 240+10 240)
 *   = 49 152, down [64x80]x[80x64] 2*(5120+5120+4096) = 28 672, norm
 *   16 384, SwiGLU 6*64*80 = 30 720, residual 24 576: 149 504. */
static void test_llama_bytes(void)
{
    struct oc_topology t = device(1e30, 1.0, 132, 1e12);
    struct oc_model m = tiny_gpt();
    m.arch = OC_ARCH_LLAMA;
    m.num_key_value_heads = 2;
    m.intermediate_size = 160;
    m.gated_mlp = 1;
    m.has_bias = 0;
    m.learned_pos_emb = 0;
    m.norm_params_per_h = 1;
    m.has_dropout = 0;
    struct oc_layout l = layout(2, 1, 2, 32);
    struct oc_cost c;
    cost_bare(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_FWD], 143360e-12, 1e-9);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_FWD], 149504e-12, 1e-9);
}

/* Arithmetic accounting: a single-SM device (no wave loss) with unbounded
 * bandwidth and 5e11 FLOP/s sustained. tiny_gpt, t 2, s 32, b 2:
 * attention QKV 2*64*96*64 = 786 432, output 2*64*64*32 = 262 144, scores
 * and values 2*32*32*16*4 = 131 072 each: 1 310 720 FLOPs, 2.621 44 us;
 * MLP 2 * 2*64*128*64 = 2 097 152 FLOPs, 4.194 304 us. Backward twice. */
static void test_part_flops_time(void)
{
    struct oc_topology t = device(1e12, 0.5, 1, 1e30);
    struct oc_model m = tiny_gpt();
    struct oc_layout l = layout(2, 1, 2, 32);
    struct oc_cost c;
    cost_bare(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_FWD], 2.62144e-6, 1e-9);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_FWD], 4.194304e-6, 1e-9);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_BWD], 2 * 2.62144e-6, 1e-9);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_BWD], 2 * 4.194304e-6, 1e-9);
    /* flash: the same forward FLOPs; backward five attention GEMMs:
     * (2*1 310 720 + 131 072) / 5e11 = 5.505 024 us */
    l.attention = OC_ATTN_FLASH;
    cost_bare(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_FWD], 2.62144e-6, 1e-9);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_BWD], 5.505024e-6, 1e-9);
}

/* GEMM FLOPs per layer and TP rank: forward equals the model's
 * 24bsh^2 + 4bs^2h over t (tiny_gpt, b 2, s 32, t 2: (6 291 456 + 524 288)/2
 * = 3 407 872); backward is exactly twice for the classic kernel; a flash
 * backward adds the recomputed scores (2*32*32*16*4 = 131 072). Recompute:
 * full = forward, selective = the 4bs^2h/t core attention (262 144). */
static void test_layer_flops(void)
{
    struct oc_model m = tiny_gpt();
    struct oc_layout l = layout(2, 1, 2, 32);
    const double fwd = oc_cost_layer_flops(&m, &l, OC_PHASE_FWD);
    OC_ASSERT_REL(fwd, 3407872.0, 1e-12);
    OC_ASSERT_REL(fwd, oc_model_layer_fwd_flops(&m, 2, 32) / 2, 1e-12);
    OC_ASSERT_REL(oc_cost_layer_flops(&m, &l, OC_PHASE_BWD), 2 * 3407872.0, 1e-12);
    CU_ASSERT_EQUAL(oc_cost_layer_flops(&m, &l, OC_PHASE_RECOMPUTE), 0.0);
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    OC_ASSERT_REL(oc_cost_layer_flops(&m, &l, OC_PHASE_RECOMPUTE), 262144.0, 1e-12);
    l.recompute = OC_RECOMPUTE_FULL;
    OC_ASSERT_REL(oc_cost_layer_flops(&m, &l, OC_PHASE_RECOMPUTE), 3407872.0, 1e-12);
    l.recompute = OC_RECOMPUTE_NONE;
    l.attention = OC_ATTN_FLASH;
    OC_ASSERT_REL(oc_cost_layer_flops(&m, &l, OC_PHASE_FWD), 3407872.0, 1e-12);
    OC_ASSERT_REL(oc_cost_layer_flops(&m, &l, OC_PHASE_BWD),
                  2 * 3407872.0 + 131072.0, 1e-12);
}

/* At GPT-3 175B scale (h 12288, a 96, s 2048, b 1, t 8) on an H100-like
 * device the layer is compute bound: backward takes close to twice the
 * forward (the memory-bound kernels are a few per cent). With a flash
 * kernel the forward is faster than with the classic one (no s x s
 * traffic). */
static void test_backward_twice_forward(void)
{
    struct oc_topology t = device(989e12, 0.75, 132, 3.35e12);
    struct oc_model m = tiny_gpt();
    m.hidden_size = 12288;
    m.num_attention_heads = 96;
    m.num_key_value_heads = 96;
    m.intermediate_size = 4 * 12288;
    m.vocab_size = 50257;
    m.max_position_embeddings = 2048;
    struct oc_layout l = layout(8, 1, 1, 2048);
    struct oc_cost c;
    cost_bare(&c, &m, &l, &t);
    double fwd = c.part_s[OC_PART_ATTN][OC_PHASE_FWD] + c.part_s[OC_PART_MLP][OC_PHASE_FWD];
    double bwd = c.part_s[OC_PART_ATTN][OC_PHASE_BWD] + c.part_s[OC_PART_MLP][OC_PHASE_BWD];
    CU_ASSERT(bwd > 1.9 * fwd && bwd < 2.1 * fwd);
    /* forward at least the GEMM FLOPs at 0.75 of peak */
    CU_ASSERT(fwd >= oc_cost_layer_flops(&m, &l, OC_PHASE_FWD) / (0.75 * 989e12));
    l.attention = OC_ATTN_FLASH;
    struct oc_cost cf;
    cost_bare(&cf, &m, &l, &t);
    CU_ASSERT(cf.part_s[OC_PART_ATTN][OC_PHASE_FWD] < c.part_s[OC_PART_ATTN][OC_PHASE_FWD]);
}

/* How an op is priced from the table: ATTN and MLP times their layer
 * count (at least 1), EMBED and HEAD once, a CHUNK op as layer_count *
 * (attention + MLP) plus the embedding on chunk 0 of stage 0 and the head
 * on chunk v-1 of stage p-1, the optimizer as hbm_bytes / 28 parameters
 * (28 MB: 1e6) at 44 bytes each (16-bit gradients) over 1e12 B/s (44 us),
 * plus zero_grad's 2 bytes per parameter of the stage. */
static void test_op_cost(void)
{
    struct oc_topology t = device(1e12, 0.5, 1, 1e12);
    struct oc_model m = tiny_gpt();
    struct oc_layout l = layout(2, 2, 2, 32);
    struct oc_cost c;
    cost_bare(&c, &m, &l, &t);
    const double attn = c.part_s[OC_PART_ATTN][OC_PHASE_BWD];
    const double mlp = c.part_s[OC_PART_MLP][OC_PHASE_BWD];
    const double emb = c.part_s[OC_PART_EMBED][OC_PHASE_BWD];
    const double head = c.part_s[OC_PART_HEAD][OC_PHASE_BWD];
    CU_ASSERT(attn > 0 && mlp > 0 && emb > 0 && head > 0);

    struct oc_op op;
    memset(&op, 0, sizeof op);
    op.kind = OC_OP_COMPUTE;
    op.phase = OC_PHASE_BWD;
    op.part = OC_PART_ATTN;
    op.layer_count = 2;
    OC_ASSERT_REL(oc_cost_op_s(&c, &op, &l, &m), 2 * attn, 1e-12);
    op.layer_count = 0;
    OC_ASSERT_REL(oc_cost_op_s(&c, &op, &l, &m), attn, 1e-12);
    op.part = OC_PART_HEAD;
    op.layer_count = 0;
    OC_ASSERT_REL(oc_cost_op_s(&c, &op, &l, &m), head, 1e-12);

    op.part = OC_PART_CHUNK;
    op.layer_count = 2;
    op.stage = 0;
    op.chunk = 0;
    OC_ASSERT_REL(oc_cost_op_s(&c, &op, &l, &m), 2 * (attn + mlp) + emb, 1e-12);
    op.stage = 1;
    OC_ASSERT_REL(oc_cost_op_s(&c, &op, &l, &m), 2 * (attn + mlp) + head, 1e-12);

    /* interleaved v = 2, p = 2: the head sits on chunk 1 of stage 1 only */
    l.schedule = OC_SCHED_INTERLEAVED;
    l.vchunks = 2;
    op.layer_count = 1;
    op.chunk = 0;
    OC_ASSERT_REL(oc_cost_op_s(&c, &op, &l, &m), attn + mlp, 1e-12);
    op.chunk = 1;
    OC_ASSERT_REL(oc_cost_op_s(&c, &op, &l, &m), attn + mlp + head, 1e-12);
    op.stage = 0;
    OC_ASSERT_REL(oc_cost_op_s(&c, &op, &l, &m), attn + mlp, 1e-12);

    /* p = 1: one chunk carries both */
    struct oc_layout l1 = layout(2, 1, 2, 32);
    op.stage = 0;
    op.chunk = 0;
    op.layer_count = 4;
    OC_ASSERT_REL(oc_cost_op_s(&c, &op, &l1, &m), 4 * (attn + mlp) + emb + head, 1e-12);

    op.part = OC_PART_ALL;
    op.phase = OC_PHASE_OPTIMIZER;
    op.hbm_bytes = 28e6;
    const double sp = (double)oc_mem_stage_params(&m, &l, op.stage);
    OC_ASSERT_REL(oc_cost_op_s(&c, &op, &l, &m), 44e-6 + 2.0 * sp / 1e12, 1e-12);
}

/* An fp32 run (the layout's precision; the cpu executor's) counts every
 * 16-bit tensor at 4 bytes; fp32 logits and 1-byte dropout masks stay. The
 * topology's calib_act_bytes is a record only: 16 changes nothing. tiny_gpt,
 * t 2, s 32, b 2, bytes at 1e12 B/s (see test_part_bytes for e = 2):
 * MLP forward: up and down GEMMs 20 480 elements each x 4 = 81 920 each,
 *   norm 2*4*64*64 = 32 768, GELU 2*4*64*128 = 65 536, the fused dropout
 *   and residual (3*4+1)*4096 = 53 248: 315 392 bytes.
 * Head forward: norm 32 768, logits GEMM 68 096 elements x 4 = 272 384,
 *   cross-entropy (36 + 4)*32 000 = 1 280 000 (the cast reads 4 bytes, not
 *   2): 1 585 152. Backward: two GEMMs 544 768, norm 65 536, cross-entropy
 *   (12 + 4)*32 000 = 512 000: 1 122 304. */
static void test_element_bytes(void)
{
    struct oc_topology t = device(1e30, 1.0, 132, 1e12);
    t.calib_act_bytes = 16;
    struct oc_model m = tiny_gpt();
    struct oc_layout l = layout(2, 1, 2, 32);
    struct oc_cost c;
    cost_bare(&c, &m, &l, &t);
    const double mlp16 = c.part_s[OC_PART_MLP][OC_PHASE_FWD];
    l.precision = OC_PREC_FP32;
    cost_bare(&c, &m, &l, &t);
    CU_ASSERT(c.part_s[OC_PART_MLP][OC_PHASE_FWD] > 1.9 * mlp16);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_FWD], 315392e-12, 1e-9);
    OC_ASSERT_REL(c.part_s[OC_PART_HEAD][OC_PHASE_FWD], 1585152e-12, 1e-9);
    OC_ASSERT_REL(c.part_s[OC_PART_HEAD][OC_PHASE_BWD], 1122304e-12, 1e-9);
    /* a GEMM's operands: [8 x 8192] x [8192 x 8192] is memory bound,
     * 4*(65 536 + 67 108 864 + 65 536) = 268 959 744 bytes */
    struct oc_gemm skinny = {8, 8192, 8192, 1, 4};
    OC_ASSERT_REL(oc_cost_gemm_s(&t, skinny), 268959744e-12, 1e-9);
    skinny.elem_bytes = 0; /* not given: 16-bit */
    OC_ASSERT_REL(oc_cost_gemm_s(&t, skinny), 134479872e-12, 1e-9);
}

/* The FLOPs oc_cost_sched_flops gives are the ones core/schedule.c puts on
 * every layer-grain COMPUTE op, in each recompute mode. By hand (tiny_gpt,
 * b 2, s 32, t 2): attention 1 310 720 (test_part_flops_time), MLP
 * 2 097 152, head 2*64*64*1000/2 = 4 096 000, backward twice, selective
 * recompute 4*2*32*32*64/2 = 262 144, embedding 0. */
static void test_sched_flops(void)
{
    struct oc_model m = tiny_gpt();
    struct oc_layout l = layout(2, 2, 2, 32);
    OC_ASSERT_REL(oc_cost_sched_flops(&m, &l, OC_PART_ATTN, OC_PHASE_FWD), 1310720.0, 1e-12);
    OC_ASSERT_REL(oc_cost_sched_flops(&m, &l, OC_PART_MLP, OC_PHASE_BWD), 2 * 2097152.0, 1e-12);
    OC_ASSERT_REL(oc_cost_sched_flops(&m, &l, OC_PART_HEAD, OC_PHASE_FWD), 4096000.0, 1e-12);
    CU_ASSERT_EQUAL(oc_cost_sched_flops(&m, &l, OC_PART_EMBED, OC_PHASE_FWD), 0.0);
    CU_ASSERT_EQUAL(oc_cost_sched_flops(&m, &l, OC_PART_ATTN, OC_PHASE_RECOMPUTE), 0.0);
    const enum oc_recompute modes[] = {OC_RECOMPUTE_NONE, OC_RECOMPUTE_SELECTIVE,
                                       OC_RECOMPUTE_FULL};
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++) {
        l.recompute = modes[k];
        struct oc_schedule s;
        struct oc_status st = {{0}};
        struct oc_schedule_opts so = {OC_GRAIN_LAYER, 1, NULL};
        CU_ASSERT_EQUAL_FATAL(oc_schedule_build(&s, &m, &l, &so, &st), 0);
        int64_t checked = 0, recomputes = 0;
        for (int64_t r = 0; r < s.nranks; r++)
            for (int64_t i = 0; i < s.ranks[r].n; i++) {
                const struct oc_op *op = &s.ranks[r].ops[i];
                if (op->kind != OC_OP_COMPUTE || op->phase == OC_PHASE_OPTIMIZER)
                    continue;
                OC_ASSERT_REL(oc_cost_sched_flops(&m, &l, op->part, op->phase),
                              op->flops, 1e-12);
                checked++;
                recomputes += op->phase == OC_PHASE_RECOMPUTE;
            }
        CU_ASSERT(checked > 0);
        /* 4 micro-batches x 2 layers per stage x 4 ranks: 32 attention
         * recomputes (selective), twice that with the MLP (full). */
        CU_ASSERT_EQUAL(recomputes, k == 0 ? 0 : k == 1 ? 32 : 64);
        oc_schedule_free(&s);
    }
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    OC_ASSERT_REL(oc_cost_sched_flops(&m, &l, OC_PART_ATTN, OC_PHASE_RECOMPUTE), 262144.0, 1e-12);
    CU_ASSERT_EQUAL(oc_cost_sched_flops(&m, &l, OC_PART_MLP, OC_PHASE_RECOMPUTE), 0.0);
}

/* Measured part rates replace the estimate: time = the schedule's FLOPs
 * (test_sched_flops) / rate. Rates chosen so that every part takes 1 ms
 * per FLOP count of its forward: attention 1 310 720 FLOPs at 1.31072e9,
 * MLP 2 097 152 at 2.097152e9 (backward at 4.194304e9: also 1 ms), head
 * 4 096 000 at 4.096e9 (backward at the same rate: 2 ms), selective
 * recompute 262 144 at 2.62144e8. Embedding: 64 tokens x 1e-7 s = 6.4 us
 * forward, x 2e-7 = 12.8 us backward. Optimizer: 28e6 bytes = 1e6
 * parameters x 3e-9 s = 3 ms. */
static void test_calibrated_parts(void)
{
    struct oc_topology t = device(1e12, 0.5, 1, 1e12);
    struct oc_model m = tiny_gpt();
    struct oc_layout l = layout(2, 2, 2, 32);
    struct oc_cost c0, c;
    cost_bare(&c0, &m, &l, &t);
    /* One rate alone: that part is measured, the others keep the
     * roofline. */
    t.calib_part_flops[OC_CALIB_ATTN_FWD] = 1.31072e9;
    cost_bare(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_FWD], 1e-3, 1e-12);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_FWD], c0.part_s[OC_PART_MLP][OC_PHASE_FWD], 1e-12);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_BWD], c0.part_s[OC_PART_ATTN][OC_PHASE_BWD], 1e-12);
    OC_ASSERT_REL(c.part_s[OC_PART_EMBED][OC_PHASE_FWD], c0.part_s[OC_PART_EMBED][OC_PHASE_FWD], 1e-12);

    t.calib_part_flops[OC_CALIB_ATTN_BWD] = 1.31072e9;
    t.calib_part_flops[OC_CALIB_ATTN_RECOMPUTE] = 2.62144e8;
    t.calib_part_flops[OC_CALIB_MLP_FWD] = 2.097152e9;
    t.calib_part_flops[OC_CALIB_MLP_BWD] = 4.194304e9;
    t.calib_part_flops[OC_CALIB_HEAD_FWD] = 4.096e9;
    t.calib_part_flops[OC_CALIB_HEAD_BWD] = 4.096e9;
    t.calib_embed_fwd_s_per_token = 1e-7;
    t.calib_embed_bwd_s_per_token = 2e-7;
    t.calib_optimizer_s_per_param = 3e-9;
    cost_bare(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_FWD], 1e-3, 1e-12);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_BWD], 2e-3, 1e-12);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_FWD], 1e-3, 1e-12);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_BWD], 1e-3, 1e-12);
    OC_ASSERT_REL(c.part_s[OC_PART_HEAD][OC_PHASE_FWD], 1e-3, 1e-12);
    OC_ASSERT_REL(c.part_s[OC_PART_HEAD][OC_PHASE_BWD], 2e-3, 1e-12);
    OC_ASSERT_REL(c.part_s[OC_PART_EMBED][OC_PHASE_FWD], 6.4e-6, 1e-12);
    OC_ASSERT_REL(c.part_s[OC_PART_EMBED][OC_PHASE_BWD], 12.8e-6, 1e-12);
    CU_ASSERT_EQUAL(c.part_s[OC_PART_ATTN][OC_PHASE_RECOMPUTE], 0.0); /* rnone */
    OC_ASSERT_REL(c.optimizer_s_per_param, 3e-9, 1e-12);
    struct oc_op op;
    memset(&op, 0, sizeof op);
    op.kind = OC_OP_COMPUTE;
    op.phase = OC_PHASE_OPTIMIZER;
    op.part = OC_PART_ALL;
    op.hbm_bytes = 28e6;
    OC_ASSERT_REL(oc_cost_op_s(&c, &op, &l, &m), 3e-3, 1e-12);

    /* Selective recompute at its own rate; full recompute reruns the
     * forward, at the forward's rates. */
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    cost_bare(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_RECOMPUTE], 1e-3, 1e-12);
    CU_ASSERT_EQUAL(c.part_s[OC_PART_MLP][OC_PHASE_RECOMPUTE], 0.0);
    /* A chunk's backward on stage 0, 2 layers: 2*(2 + 1) ms of backward,
     * 2 x 1 ms of recompute, the embedding's 12.8 us. */
    op.phase = OC_PHASE_BWD;
    op.part = OC_PART_CHUNK;
    op.layer_count = 2;
    op.stage = 0;
    op.chunk = 0;
    OC_ASSERT_REL(oc_cost_op_s(&c, &op, &l, &m), 8e-3 + 12.8e-6, 1e-12);
    l.recompute = OC_RECOMPUTE_FULL;
    t.calib_part_flops[OC_CALIB_ATTN_RECOMPUTE] = 1e3; /* not used */
    cost_bare(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_RECOMPUTE], 1e-3, 1e-12);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_RECOMPUTE], 1e-3, 1e-12);
    CU_ASSERT_EQUAL(c.part_s[OC_PART_HEAD][OC_PHASE_RECOMPUTE], 0.0);
}

/* Kernels per layer and phase (cost_overhead.h's table). tiny_gpt (biases,
 * dropout, learned positions), classic attention:
 *   ATTN fwd 5 + core (QK^T, softmax, dropout, PV) 4 = 9; bwd norm 2, two
 *     GEMMs (2 + bias 1) each 6, bias-dropout-add 1, residual sum 1, core
 *     (4 GEMMs, dropout, softmax) 6 = 16.  MLP fwd 5; bwd 2 + 6 + 3 = 11.
 *   EMBED fwd gather, positions, dropout 3; bwd 3.  HEAD fwd 2 + 10 = 12,
 *     bwd 8.  Recompute: none 0; selective core attention 4; full the
 *     forward's 9 and 5; the head never.
 * Flash: core 1 forward, 3 backward: ATTN 6 and 13.
 * A Llama block (no biases, rotary, no dropout), flash: ATTN fwd 5 + 2 + 1
 *   = 8, bwd 2 + 4 + 1 + 1 + 2 + 3 = 13; MLP bwd 2 + 4 + 3 = 9; EMBED 1. */
static void test_kernel_counts(void)
{
    struct oc_model m = tiny_gpt();
    struct oc_layout l = layout(2, 1, 2, 32);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_ATTN, OC_PHASE_FWD), 9);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_ATTN, OC_PHASE_BWD), 16);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_MLP, OC_PHASE_FWD), 5);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_MLP, OC_PHASE_BWD), 11);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_EMBED, OC_PHASE_FWD), 3);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_EMBED, OC_PHASE_BWD), 3);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_HEAD, OC_PHASE_FWD), 12);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_HEAD, OC_PHASE_BWD), 8);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_ATTN, OC_PHASE_RECOMPUTE), 0);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_ALL, OC_PHASE_OPTIMIZER), 0);
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_ATTN, OC_PHASE_RECOMPUTE), 4);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_MLP, OC_PHASE_RECOMPUTE), 0);
    l.recompute = OC_RECOMPUTE_FULL;
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_ATTN, OC_PHASE_RECOMPUTE), 9);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_MLP, OC_PHASE_RECOMPUTE), 5);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_HEAD, OC_PHASE_RECOMPUTE), 0);
    l.recompute = OC_RECOMPUTE_NONE;
    l.attention = OC_ATTN_FLASH;
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_ATTN, OC_PHASE_FWD), 6);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_ATTN, OC_PHASE_BWD), 13);
    m.has_bias = 0;
    m.has_dropout = 0;
    m.learned_pos_emb = 0;
    m.gated_mlp = 1;
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_ATTN, OC_PHASE_FWD), 8);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_ATTN, OC_PHASE_BWD), 13);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_MLP, OC_PHASE_BWD), 9);
    CU_ASSERT_EQUAL(oc_cost_kernels(&m, &l, OC_PART_EMBED, OC_PHASE_FWD), 1);
}

/* Launches: a part of n kernels that take g seconds on the GPU costs
 * max(g + n*1 us, n*10 us). 10 kernels of 100 us in all: 110 us (the GPU
 * gap); of 50 us: 100 us (the host issues slower than the GPU runs).
 * In the table (default overheads): tiny_gpt on a 1e12 B/s device with
 * unbounded FLOP/s is host-bound in every part: MLP forward 5 kernels,
 * 50 us; attention forward (classic) 9, 90 us; head forward 12, 120 us.
 * On a 1e6 B/s device the GPU binds: MLP forward's GEMMs move 81 920
 * bytes at the full 1e6 B/s (the roofline), its memory-bound kernels
 * 77 824 bytes (test_part_bytes) at 0.9e6 B/s (the sustained fraction),
 * and 5 gaps of 1 us: 0.081 92 + 0.086 471 111 1 + 0.000 005 =
 * 0.168 396 111 1 s. */
static void test_launch_overhead(void)
{
    const struct oc_cost_overheads o = oc_cost_overheads_default();
    OC_ASSERT_REL(o.kernel_gap_s, 1e-6, 1e-12);
    OC_ASSERT_REL(o.host_op_s, 10e-6, 1e-12);
    OC_ASSERT_REL(o.mem_efficiency, 0.9, 1e-12);
    OC_ASSERT_REL(oc_cost_launch_s(&o, 100e-6, 10), 110e-6, 1e-12);
    OC_ASSERT_REL(oc_cost_launch_s(&o, 50e-6, 10), 100e-6, 1e-12);
    OC_ASSERT_REL(oc_cost_launch_s(&o, 50e-6, 0), 50e-6, 1e-12);

    struct oc_topology t = device(1e30, 1.0, 132, 1e12);
    struct oc_model m = tiny_gpt();
    struct oc_layout l = layout(2, 1, 2, 32);
    struct oc_cost c;
    oc_cost_init(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_FWD], 50e-6, 1e-12);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_FWD], 90e-6, 1e-12);
    OC_ASSERT_REL(c.part_s[OC_PART_HEAD][OC_PHASE_FWD], 120e-6, 1e-12);

    t = device(1e30, 1.0, 132, 1e6);
    oc_cost_init(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_FWD],
                  0.08192 + 77824.0 / 0.9e6 + 5e-6, 1e-12);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_FWD], 0.1683961111, 1e-9);
    /* a measured bandwidth is already the sustained one: 77 824 bytes at
     * calib 1e6 B/s, GEMMs too */
    t.calib_mem_Bps = 1e6;
    oc_cost_init(&c, &m, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_FWD], 0.08192 + 0.077824 + 5e-6, 1e-12);
}

/* The optimizer step's bytes per updated parameter (cost_overhead.h):
 * bf16 with fp32 gradients (Megatron-LM's default) norm 4 + AdamW 28 +
 * parameter copy 6 = 38; bf16 with 16-bit gradients + gradient copy 6 =
 * 44; fp16 (16-bit gradients by default) + unscale 8 = 52; fp16 with fp32
 * gradients 46; fp32 norm and AdamW 32. At 0.9 * 1e12 B/s: 38 / 9e11 s per
 * parameter. zero_grad writes the gradient buffer: 1000 parameters, 4000
 * bytes (fp32 gradients), 2000 (16-bit), under ZeRO-2 over d = 4 1000. */
static void test_optimizer_step(void)
{
    struct oc_layout l = layout(2, 1, 2, 32);
    l.grad_fp32 = 0; /* Megatron-LM's default */
    CU_ASSERT_EQUAL(l.precision, OC_PREC_BF16);
    OC_ASSERT_REL(oc_cost_optimizer_bytes_per_param(&l), 38.0, 1e-12);
    OC_ASSERT_REL(oc_cost_zero_grad_bytes(&l, 1000), 4000.0, 1e-12);
    l.grad_fp32 = -1;
    OC_ASSERT_REL(oc_cost_optimizer_bytes_per_param(&l), 44.0, 1e-12);
    OC_ASSERT_REL(oc_cost_zero_grad_bytes(&l, 1000), 2000.0, 1e-12);
    l.precision = OC_PREC_FP16;
    l.grad_fp32 = 0;
    OC_ASSERT_REL(oc_cost_optimizer_bytes_per_param(&l), 52.0, 1e-12);
    l.grad_fp32 = 1;
    OC_ASSERT_REL(oc_cost_optimizer_bytes_per_param(&l), 46.0, 1e-12);
    l.precision = OC_PREC_FP32;
    OC_ASSERT_REL(oc_cost_optimizer_bytes_per_param(&l), 32.0, 1e-12);

    struct oc_layout z = oc_test_layout(1, 1, 4, 1, 4, 32);
    z.grad_fp32 = 0;
    z.zero = 2;
    OC_ASSERT_REL(oc_cost_zero_grad_bytes(&z, 1000), 1000.0, 1e-12);

    struct oc_topology t = device(1e12, 0.5, 1, 1e12);
    struct oc_model m = tiny_gpt();
    struct oc_layout b = layout(2, 1, 2, 32);
    b.grad_fp32 = 0;
    struct oc_cost c;
    oc_cost_init(&c, &m, &b, &t);
    OC_ASSERT_REL(c.optimizer_s_per_param, 38.0 / 9e11, 1e-12);
    OC_ASSERT_REL(oc_cost_zero_grad_s(&c, 1000), 4000.0 / 9e11, 1e-12);
}

static CU_TestInfo tests[] = {
    {"gemm_full_waves", test_gemm_full_waves},
    {"gemm_wave_loss", test_gemm_wave_loss},
    {"gemm_memory_bound", test_gemm_memory_bound},
    {"membound_and_calibration", test_membound_and_calibration},
    {"part_bytes", test_part_bytes},
    {"attention_bytes", test_attention_bytes},
    {"llama_bytes", test_llama_bytes},
    {"part_flops_time", test_part_flops_time},
    {"layer_flops", test_layer_flops},
    {"backward_twice_forward", test_backward_twice_forward},
    {"op_cost", test_op_cost},
    {"element_bytes", test_element_bytes},
    {"sched_flops", test_sched_flops},
    {"calibrated_parts", test_calibrated_parts},
    {"kernel_counts", test_kernel_counts},
    {"launch_overhead", test_launch_overhead},
    {"optimizer_step", test_optimizer_step},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"cost", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
