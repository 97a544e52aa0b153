/* test_closed_form.c: the textbook formulas (core/closed_form.c) against
 * values worked out by hand, and the step estimate's bookkeeping: which
 * fabric each group uses under the rank order, the bubble, and MFU.
 * Models, layouts and topologies are filled field by field. */
#include <math.h>
#include <string.h>

#include "closed_form.h"
#include "cost.h"
#include "layout.h"
#include "memory.h"
#include "model.h"
#include "test_util.h"
#include "topology.h"

/* An 8-GPU H100-like node: 989 TFLOP/s, 75 % sustained, 132 SMs, 3.35 TB/s;
 * NVLink 450 GB/s per direction, 1 us; 8 NICs of 50 GB/s (400 Gb/s), 2 us;
 * leaf-spine (2 levels), 1 us per switch, no oversubscription. So between
 * nodes: latency 2 + 3*1 = 5 us, and 8 flows per node get 50 GB/s each. */
static struct oc_topology h100(void)
{
    struct oc_topology t;
    memset(&t, 0, sizeof t);
    strcpy(t.name, "test-h100");
    t.gpus_per_node = 8;
    t.device.peak_flops_16bit = 989e12;
    t.device.memory_bytes = 80e9;
    t.device.hbm_bandwidth_Bps = 3.35e12;
    t.device.sm_count = 132;
    t.device.gemm_efficiency = 0.75;
    t.intra_bandwidth_Bps = 450e9;
    t.intra_latency_s = 1e-6;
    t.nics_per_node = 8;
    t.nic_bandwidth_Bps = 50e9;
    t.nic_latency_s = 2e-6;
    t.inter_latency_s = 1e-6;
    t.switch_levels = 2;
    t.oversubscription = 1;
    return t;
}

/* A GPT-3-style model: f = 4h, 2048 positions. */
static struct oc_model gpt(int64_t h, int64_t a, int64_t L, int64_t V)
{
    return oc_test_gpt("gpt", h, a, L, 4 * h, V, 2048);
}

/* Embedding and head time (forward + backward) of one micro-batch, from
 * the cost table: they lengthen stage 0 and stage p-1. */
static void extras(const struct oc_model *m, const struct oc_layout *l,
                   const struct oc_topology *t, double *embed_s, double *head_s)
{
    struct oc_cost c;
    oc_cost_init(&c, m, l, t);
    *embed_s = c.part_s[OC_PART_EMBED][OC_PHASE_FWD] + c.part_s[OC_PART_EMBED][OC_PHASE_BWD];
    *head_s = c.part_s[OC_PART_HEAD][OC_PHASE_FWD] + c.part_s[OC_PART_HEAD][OC_PHASE_BWD];
    CU_ASSERT(*embed_s > 0 && *head_s > 0);
}

/* (p-1)/(v*m + p-1): p 4, m 8 -> 3/11; interleaved v 2 -> 3/19;
 * p 8, m 32 -> 7/39 (closed_form.h's example); p 1 -> 0. */
static void test_bubble(void)
{
    OC_ASSERT_REL(oc_cf_bubble_fraction(4, 8, 1), 3.0 / 11.0, 1e-15);
    OC_ASSERT_REL(oc_cf_bubble_fraction(4, 8, 2), 3.0 / 19.0, 1e-15);
    OC_ASSERT_REL(oc_cf_bubble_fraction(8, 32, 1), 7.0 / 39.0, 1e-15);
    CU_ASSERT_EQUAL(oc_cf_bubble_fraction(1, 8, 1), 0.0);
}

/* Ring, N 8, S 1 GB, B 100 GB/s, l 1 us:
 *   all-reduce 2*7/8 * 0.01 s + 2*7 * 1 us = 0.0175 + 0.000014 = 0.017514 s
 *   all-gather, reduce-scatter 7/8 * 0.01 + 7 us = 0.008757 s
 *   N 1: 0. N 2, S 2 GB, B 50 GB/s, l 5 us: 2*1/2*0.04 + 2*5 us = 0.04001. */
static void test_ring(void)
{
    OC_ASSERT_REL(oc_cf_ring_allreduce_s(8, 1e9, 100e9, 1e-6, 0), 0.017514, 1e-12);
    OC_ASSERT_REL(oc_cf_ring_allgather_s(8, 1e9, 100e9, 1e-6), 0.008757, 1e-12);
    OC_ASSERT_REL(oc_cf_ring_reducescatter_s(8, 1e9, 100e9, 1e-6, 0), 0.008757, 1e-12);
    CU_ASSERT_EQUAL(oc_cf_ring_allreduce_s(1, 1e9, 100e9, 1e-6, 0), 0.0);
    CU_ASSERT_EQUAL(oc_cf_ring_allgather_s(1, 1e9, 100e9, 1e-6), 0.0);
    OC_ASSERT_REL(oc_cf_ring_allreduce_s(2, 2e9, 50e9, 5e-6, 0), 0.04001, 1e-12);
}

/* nccl-tests busbw: an all-reduce of 1 GB over 8 ranks in 17.5 ms has
 * algbw 57.142 857 GB/s and busbw * 2*7/8 = 100 GB/s (the ring's link
 * rate, latency aside); an all-gather of 1 GB in 8.75 ms: algbw
 * 114.285 714 GB/s, busbw * 7/8 = 100 GB/s. One rank: 0. */
static void test_busbw(void)
{
    OC_ASSERT_REL(oc_busbw_allreduce(8, 1e9, 0.0175), 100e9, 1e-12);
    OC_ASSERT_REL(oc_busbw_allgather(8, 1e9, 0.00875), 100e9, 1e-12);
    CU_ASSERT_EQUAL(oc_busbw_allreduce(1, 1e9, 0.01), 0.0);
    /* and the inverse of the ring formula without latency */
    double t = oc_cf_ring_allreduce_s(16, 4e9, 40e9, 0, 0);
    OC_ASSERT_REL(oc_busbw_allreduce(16, 4e9, t), 40e9, 1e-12);
}

/* Model FLOPs, GPT h 64, a 4, L 2, V 1000, s 32, G 4:
 *   layer 24*32*64^2 + 4*32^2*64 = 3 145 728 + 262 144 = 3 407 872
 *   head 2*32*64*1000 = 4 096 000; per sequence 2*3 407 872 + 4 096 000 =
 *   10 911 744; step 3 * 4 * 10 911 744 = 130 940 928. */
static void test_model_flops(void)
{
    struct oc_model m = gpt(64, 4, 2, 1000);
    struct oc_layout l = oc_test_layout(1, 1, 1, 1, 4, 32);
    OC_ASSERT_REL(oc_cf_model_flops_per_step(&m, &l), 130940928.0, 1e-12);
    l.tp = 2; /* the layout's split does not change model FLOPs */
    l.recompute = OC_RECOMPUTE_FULL;
    OC_ASSERT_REL(oc_cf_model_flops_per_step(&m, &l), 130940928.0, 1e-12);
}

/* One GPU, no parallelism: no communication, no bubble; the step is
 * m (forward + backward of the layers, the embedding and the head) plus the
 * optimizer over every parameter (cost_overhead.h: 44 bytes each with
 * 16-bit gradients, and zero_grad's 2) at the sustained 0.9 of HBM, and
 * tokens/s and MFU follow from it. */
static void test_step_single_gpu(void)
{
    struct oc_topology t = h100();
    struct oc_model m = gpt(2048, 16, 24, 50257);
    struct oc_layout l = oc_test_layout(1, 1, 1, 4, 32, 2048);
    struct oc_cf_step e;
    oc_cf_step(&m, &l, &t, &e);
    CU_ASSERT_EQUAL(e.tp_comm_s, 0.0);
    CU_ASSERT_EQUAL(e.pp_comm_s, 0.0);
    CU_ASSERT_EQUAL(e.dp_comm_s, 0.0);
    CU_ASSERT_EQUAL(e.bubble_fraction, 0.0);
    const double opt = (44.0 + 2.0) * (double)oc_model_params_total(&m) / (0.9 * 3.35e12);
    OC_ASSERT_REL(e.optimizer_s, opt, 1e-12);
    double E, H;
    extras(&m, &l, &t, &E, &H);
    OC_ASSERT_REL(e.step_s, 8 * (e.fwd_chunk_s + e.bwd_chunk_s + E + H) + opt, 1e-12);
    OC_ASSERT_REL(e.tokens_per_s, 32 * 2048 / e.step_s, 1e-12);
    OC_ASSERT_REL(e.mfu, oc_cf_model_flops_per_step(&m, &l) / (e.step_s * 989e12), 1e-12);
    CU_ASSERT(e.mfu > 0 && e.mfu < 0.75);
    /* full recompute: the backward includes one more forward */
    l.recompute = OC_RECOMPUTE_FULL;
    struct oc_cf_step r;
    oc_cf_step(&m, &l, &t, &r);
    OC_ASSERT_REL(r.bwd_chunk_s, e.bwd_chunk_s + e.fwd_chunk_s, 1e-12);
}

/* GPT-3 175B on 128 GPUs: t 8, p 8, d 2, b 1, G 64, s 2048, SP, selective,
 * 1F1B, rank order tp-dp-pp. m = 64/(2*1) = 32, 12 layers a stage.
 *   bubble 7/39.
 *   TP: ranks 0..7 share node 0: NVLink. Four collectives per layer of
 *     2 sbh = 50 331 648 bytes: tp = 32 * 12 * 4 * ring(8, 50 331 648,
 *     450e9, 1 us).
 *   PP: stage 1 of (tp 0, dp 0) is rank 0 + 8*(0 + 2*1) = 16, node 2:
 *     between nodes; node 0 holds tp 0..7 of one (dp, pp): 8 chains leave
 *     it at once, 50 GB/s each, 5 us. Each send is 2 sbh / 8 = 6 291 456
 *     bytes: 125.829 12 us + 5 us; two per micro-batch:
 *     pp = 32 * 2 * 130.829 12 us = 8.373 063 68 ms.
 *   DP: rank (0,0,1) = 8 sits on node 1: between nodes, 8 rings a node,
 *     50 GB/s, 5 us: ring(2, 2 P) = 2P/50e9 + 10 us with P the larger of
 *     stage 0's and stage 7's parameters.
 *   unit = fwd + bwd + (tp + pp)/m; stage 0 adds the embedding E, stage 7
 *     the head H (H > E: the head is a V/t-wide GEMM), so stage 7 is the
 *     slowest: step = m (unit + H) + (7 unit + E) + dp + optimizer, the
 *     optimizer 28 bytes * P / 3.35 TB/s. Without E and H this is the
 *     textbook (m + p - 1) unit. */
static void test_step_gpt3(void)
{
    struct oc_topology t = h100();
    struct oc_model m = gpt(12288, 96, 96, 50257);
    struct oc_layout l = oc_test_layout(8, 8, 2, 1, 64, 2048);
    l.sequence_parallel = 1;
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    struct oc_cf_step e;
    oc_cf_step(&m, &l, &t, &e);
    OC_ASSERT_REL(e.bubble_fraction, 7.0 / 39.0, 1e-15);
    OC_ASSERT_REL(e.tp_comm_s,
                  32.0 * 12 * 4 * oc_cf_ring_allreduce_s(8, 50331648.0, 450e9, 1e-6, 3.35e12),
                  1e-12);
    OC_ASSERT_REL(e.pp_comm_s, 8.37306368e-3, 1e-12);
    int64_t p0 = oc_mem_stage_params(&m, &l, 0), p7 = oc_mem_stage_params(&m, &l, 7);
    const double P = (double)(p0 > p7 ? p0 : p7);
    OC_ASSERT_REL(e.dp_comm_s, 2.0 * P / 50e9 + 10e-6, 1e-12);
    const double unit = e.fwd_chunk_s + e.bwd_chunk_s + (e.tp_comm_s + e.pp_comm_s) / 32;
    /* 44 bytes per updated parameter and 2 of zero_grad (16-bit
     * gradients) at 0.9 of HBM (cost_overhead.h) */
    OC_ASSERT_REL(e.optimizer_s, 46.0 * P / (0.9 * 3.35e12), 1e-12);
    double E, H;
    extras(&m, &l, &t, &E, &H);
    CU_ASSERT(H > E);
    OC_ASSERT_REL(e.step_s, 32 * (unit + H) + 7 * unit + E + e.dp_comm_s + e.optimizer_s,
                  1e-12);
    OC_ASSERT_REL(e.tokens_per_s, 64.0 * 2048 / e.step_s, 1e-12);
    OC_ASSERT_REL(e.mfu,
                  oc_cf_model_flops_per_step(&m, &l) / (e.step_s * 128 * 989e12),
                  1e-12);
    /* Plausible for this setup (Korthikanti et al. report 50-56 % MFU). */
    CU_ASSERT(e.mfu > 0.3 && e.mfu < 0.75);

    /* Overlapping the gradient reduction (schedule_bucket.h): Megatron's
     * bucket size max(40M, 1M * 2) = 40M parameters; a layer holds
     * Pl = 12h^2/8 + ... ~ 226.5M on a TP rank, so each of the stage's 12
     * layers is a bucket of its own (the embedding rides with layer 0 on
     * stage 0, the head with the last layer on stage 7). The largest stage
     * S's buckets: ring(2, 2 * bucket) = 2 bucket/50e9 + 10 us each, the
     * same bytes as the blocking all-reduce plus 11 more latencies:
     *   dp_comm = dp + 11 * 10 us.
     * They fire during the last micro-batch's backward as each layer's
     * backward ends, one layer taking y = bwd/12 + two TP all-reduces
     * (tp/(32*12*4) each; selective recompute reruns none). A bucket's
     * ring (2*226.5M/50e9 ~ 9 ms) is longer than a layer (~3 ms, asserted
     * below), so the DP stream runs back to back from the first layer's
     * end: it ends y + dp_comm (+ the head's backward Hb on stage 7, which
     * precedes the first layer) after the last backward began, which ends
     * 12 y (+ Hb on stage 7, + the embedding's Eb on stage 0) after:
     *   exposed = dp_comm - 11 y - (S == 0 ? Eb : 0),
     * in place of the whole dp. */
    l.overlap_grad_reduce = 1;
    struct oc_cf_step o;
    oc_cf_step(&m, &l, &t, &o);
    const double y = e.bwd_chunk_s / 12 + 2 * e.tp_comm_s / (32 * 12 * 4);
    const double Pl = (double)oc_model_layer_params_tp(&m, 8);
    CU_ASSERT_FATAL(2 * Pl / 50e9 + 10e-6 > y);
    OC_ASSERT_REL(o.dp_comm_s, e.dp_comm_s + 11 * 10e-6, 1e-12);
    struct oc_cost cc;
    oc_cost_init(&cc, &m, &l, &t);
    const double Eb = p0 >= p7 ? cc.part_s[OC_PART_EMBED][OC_PHASE_BWD] : 0.0;
    const double exposed = o.dp_comm_s - 11 * y - Eb;
    OC_ASSERT_REL(o.step_s, e.step_s - e.dp_comm_s + exposed, 1e-12);
    /* about 11 layers' backward hidden of the ~115 ms reduction */
    CU_ASSERT(exposed > 0 && e.dp_comm_s - exposed > 10 * y);

    /* Sharding the optimizer: same gradient bytes on the ring, half
     * (d = 2) of the optimizer update; zero_grad still clears the whole
     * gradient buffer (ZeRO-1 keeps it). */
    l.overlap_grad_reduce = 0;
    l.zero = 1;
    oc_cf_step(&m, &l, &t, &o);
    OC_ASSERT_REL(o.dp_comm_s, e.dp_comm_s, 1e-12);
    OC_ASSERT_REL(o.optimizer_s, (44.0 / 2 + 2.0) * P / (0.9 * 3.35e12), 1e-12);

    /* Full recompute reruns the forward's two TP collectives: 6 per layer
     * instead of 4. */
    l.zero = 0;
    l.recompute = OC_RECOMPUTE_FULL;
    oc_cf_step(&m, &l, &t, &o);
    OC_ASSERT_REL(o.tp_comm_s, 1.5 * e.tp_comm_s, 1e-12);
}

/* Rank order decides the pipeline hop. t 4, p 2, d 1 on 8-GPU nodes:
 * stage 1 of tp 0 is rank 4 (either order), on node 0: NVLink, 1 us.
 * G 8, b 1: m 8; each send 2 sbh = 2*2048*1024 (GPT h 1024) = 4 194 304
 * bytes (no SP): 9.320 675 56 us + 1 us; pp = 8 * 2 * 10.320 675 56 us.
 * With t 8, p 2: stage 1 is rank 8, node 1: 8 chains, 50 GB/s, 5 us:
 * 83.886 08 us + 5 us, pp = 8 * 2 * 88.886 08 us.
 * Interleaved v 2 (L 24: 6 layers a chunk): sends per chunk, 2*m*v of them,
 * and bubble (p-1)/(v m + p-1) = 1/17. Stage 1 (2 chunks and the head H)
 * is slower than stage 0 (2 chunks and the embedding E):
 * step = m (2 unit + H) + (2 unit + E)/v = 17 unit + 8 H + E/2, the
 * textbook (v m + p - 1) unit plus the extras. */
static void test_pp_hop(void)
{
    struct oc_topology t = h100();
    struct oc_model m = gpt(1024, 16, 24, 50257);
    struct oc_layout l = oc_test_layout(4, 2, 1, 1, 8, 2048);
    struct oc_cf_step e;
    oc_cf_step(&m, &l, &t, &e);
    OC_ASSERT_REL(e.pp_comm_s, 16 * (1e-6 + 4194304.0 / 450e9), 1e-12);
    l.order = OC_ORDER_TP_PP_DP;
    oc_cf_step(&m, &l, &t, &e);
    OC_ASSERT_REL(e.pp_comm_s, 16 * (1e-6 + 4194304.0 / 450e9), 1e-12);
    l = oc_test_layout(8, 2, 1, 1, 8, 2048);
    oc_cf_step(&m, &l, &t, &e);
    OC_ASSERT_REL(e.pp_comm_s, 16 * (5e-6 + 4194304.0 / 50e9), 1e-12);
    l.schedule = OC_SCHED_INTERLEAVED;
    l.vchunks = 2;
    oc_cf_step(&m, &l, &t, &e);
    OC_ASSERT_REL(e.pp_comm_s, 32 * (5e-6 + 4194304.0 / 50e9), 1e-12);
    OC_ASSERT_REL(e.bubble_fraction, 1.0 / 17.0, 1e-15);
    const double unit = e.fwd_chunk_s + e.bwd_chunk_s + (e.tp_comm_s + e.pp_comm_s) / 16;
    double E, H;
    extras(&m, &l, &t, &E, &H);
    OC_ASSERT_REL(e.step_s, 17 * unit + 8 * H + E / 2 + e.optimizer_s, 1e-12);
}

/* DP inside a node: t 1, p 1, d 8 on one 8-GPU node: NVLink ring,
 * ring(8, 2 P, 450 GB/s, 1 us). Across nodes with order tp-pp-dp, t 2,
 * p 4, d 2 (16 GPUs): DP peer of rank 0 is rank 8, node 1; node 0 holds
 * all (tp, pp) pairs of dp 0, so 8 rings leave it: 50 GB/s, 5 us. With
 * order tp-dp-pp the peer is rank 2, same node: NVLink. */
static void test_dp_link(void)
{
    struct oc_topology t = h100();
    struct oc_model m = gpt(1024, 16, 24, 50257);
    struct oc_layout l = oc_test_layout(1, 1, 8, 1, 64, 2048);
    struct oc_cf_step e;
    oc_cf_step(&m, &l, &t, &e);
    double P = (double)oc_mem_stage_params(&m, &l, 0);
    OC_ASSERT_REL(e.dp_comm_s, oc_cf_ring_allreduce_s(8, 2 * P, 450e9, 1e-6, 3.35e12), 1e-12);

    l = oc_test_layout(2, 4, 2, 1, 64, 2048);
    l.order = OC_ORDER_TP_PP_DP;
    oc_cf_step(&m, &l, &t, &e);
    int64_t p0 = oc_mem_stage_params(&m, &l, 0), p3 = oc_mem_stage_params(&m, &l, 3);
    P = (double)(p0 > p3 ? p0 : p3);
    OC_ASSERT_REL(e.dp_comm_s, oc_cf_ring_allreduce_s(2, 2 * P, 50e9, 5e-6, 3.35e12), 1e-12);
    l.order = OC_ORDER_TP_DP_PP;
    oc_cf_step(&m, &l, &t, &e);
    OC_ASSERT_REL(e.dp_comm_s, oc_cf_ring_allreduce_s(2, 2 * P, 450e9, 1e-6, 3.35e12), 1e-12);
}

/* Flows per node when the NICs are fewer than the GPUs: the same node
 * with 2 NICs of 50 GB/s (100 GB/s a node). One flow gets one NIC (50 GB/s),
 * n flows get min(50, 100/n) GB/s.
 *   DP, t 1, p 1, d 16: node 0 holds ranks 0..7 of the one DP ring: 1 flow,
 *     50 GB/s: ring(16, 2P, 50e9, 5 us).
 *   DP, t 2, p 4, d 2, order tp-pp-dp: 8 rings leave node 0: 12.5 GB/s.
 *   PP, t 4, p 4, d 1, order tp-dp-pp: node 0 holds stages 0 and 1 (ranks
 *     0..3, 4..7); the 4 chains (one per tp) cross to node 1 at stage 2:
 *     4 flows, 25 GB/s. m = 8, 2 sbh (h 1024, s 2048, b 1) = 4 194 304:
 *     pp = 16 * (5 us + 4 194 304 / 25e9).
 *   PP, t 8, p 2: 8 chains, 12.5 GB/s. */
static void test_link_flows(void)
{
    struct oc_topology t = h100();
    t.nics_per_node = 2;
    struct oc_model m = gpt(1024, 16, 24, 50257);
    struct oc_layout l = oc_test_layout(1, 1, 16, 1, 64, 2048);
    struct oc_cf_step e;
    oc_cf_step(&m, &l, &t, &e);
    double P = (double)oc_mem_stage_params(&m, &l, 0);
    OC_ASSERT_REL(e.dp_comm_s, oc_cf_ring_allreduce_s(16, 2 * P, 50e9, 5e-6, 3.35e12), 1e-12);

    l = oc_test_layout(2, 4, 2, 1, 64, 2048);
    l.order = OC_ORDER_TP_PP_DP;
    oc_cf_step(&m, &l, &t, &e);
    int64_t p0 = oc_mem_stage_params(&m, &l, 0), p3 = oc_mem_stage_params(&m, &l, 3);
    P = (double)(p0 > p3 ? p0 : p3);
    OC_ASSERT_REL(e.dp_comm_s, oc_cf_ring_allreduce_s(2, 2 * P, 12.5e9, 5e-6, 3.35e12), 1e-12);

    l = oc_test_layout(4, 4, 1, 1, 8, 2048);
    oc_cf_step(&m, &l, &t, &e);
    OC_ASSERT_REL(e.pp_comm_s, 16 * (5e-6 + 4194304.0 / 25e9), 1e-12);
    l = oc_test_layout(8, 2, 1, 1, 8, 2048);
    oc_cf_step(&m, &l, &t, &e);
    OC_ASSERT_REL(e.pp_comm_s, 16 * (5e-6 + 4194304.0 / 12.5e9), 1e-12);
}

/* Two-level rings, the pipeline and the tree (closed_form.h), by hand.
 * Hops: in a node 2e-6 s and 100e9 B/s, across nodes 4e-6 s and 25e9 B/s.
 * - pipeline of C = 4 chunks over a chain hop of 12e-6 and a tree hop of
 *   44e-6 s per chunk: 12e-6 + 44e-6 + 3*44e-6 = 188e-6 s; one kind of
 *   hop, 3 hops of 2e-6 and one chunk: 6e-6 s; no hop: 0.
 * - chain broadcast of 4e6 in 4 chunks over 4 members in a node:
 *   (3 + 3) * (2e-6 + 1e6/1e11) = 72e-6 s.
 * - hier, 2 nodes x 4, S = 1e9: reduce-scatter = all-gather
 *   0.75e9/1e11 + 3*2e-6 + 0.5*2.5e8/25e9 + 4e-6 = 0.012510 s, all-reduce
 *   twice that; with one member per node it is the ring across the nodes:
 *   8 nodes, 7/8*1e9/25e9 + 7*4e-6 = 0.035028 s.
 * - tree, 8 nodes x 1, S = 1e3 in one chunk: depth 3, a leader's two
 *   child nodes share its NIC (every tree hop charged twice its bytes):
 *   a pipelined phase 3*(4e-6 + 2e3/25e9) = 12.24e-6 s, the all-reduce
 *   24.48e-6 s; the scatter's slowest path 0-1-3-7 carries 4, 2 and 1
 *   shards of 125 bytes: 3*4e-6 + 2*7*125/25e9 = 12.07e-6 s, so
 *   reduce-scatter = all-gather = 24.31e-6 s.
 * - tree, 2 nodes x 2, S = 4e6 in 4 chunks: a phase 188e-6 s (above),
 *   scatter 84e-6 + 12e-6 (test_sim_collective.c): all-reduce 376e-6 s,
 *   reduce-scatter 284e-6 s. */
static void test_levels(void)
{
    OC_ASSERT_REL(oc_cf_pipeline_s(4, 1, 12e-6, 1, 44e-6), 188e-6, 1e-12);
    OC_ASSERT_REL(oc_cf_pipeline_s(1, 3, 2e-6, 0, 0), 6e-6, 1e-12);
    CU_ASSERT_EQUAL(oc_cf_pipeline_s(5, 0, 1, 0, 1), 0);
    OC_ASSERT_REL(oc_cf_chain_broadcast_s(4, 4e6, 4, 100e9, 2e-6), 72e-6, 1e-12);

    const struct oc_cf_levels two = {4, 2, 100e9, 2e-6, 25e9, 4e-6, 0};
    OC_ASSERT_REL(oc_cf_hier_reducescatter_s(&two, 1e9), 0.012510, 1e-12);
    OC_ASSERT_REL(oc_cf_hier_allgather_s(&two, 1e9), 0.012510, 1e-12);
    OC_ASSERT_REL(oc_cf_hier_allreduce_s(&two, 1e9), 0.025020, 1e-12);
    const struct oc_cf_levels spread = {1, 8, 100e9, 2e-6, 25e9, 4e-6, 0};
    OC_ASSERT_REL(oc_cf_hier_reducescatter_s(&spread, 1e9), 0.035028, 1e-12);
    OC_ASSERT_REL(oc_cf_hier_reducescatter_s(&spread, 1e9),
                  oc_cf_ring_reducescatter_s(8, 1e9, 25e9, 4e-6, 0), 1e-12);

    OC_ASSERT_REL(oc_cf_tree_allreduce_s(&spread, 1e3, 1), 24.48e-6, 1e-12);
    OC_ASSERT_REL(oc_cf_tree_reducescatter_s(&spread, 1e3, 1), 24.31e-6, 1e-12);
    OC_ASSERT_REL(oc_cf_tree_allgather_s(&spread, 1e3, 1), 24.31e-6, 1e-12);
    const struct oc_cf_levels small = {2, 2, 100e9, 2e-6, 25e9, 4e-6, 0};
    OC_ASSERT_REL(oc_cf_tree_allreduce_s(&small, 4e6, 4), 376e-6, 1e-12);
    OC_ASSERT_REL(oc_cf_tree_reducescatter_s(&small, 4e6, 4), 284e-6, 1e-12);
}

/* The reductions (closed_form.h), memory at 20 GB/s:
 * - one step: 3 * 2e6 bytes / 20e9 = 300e-6 s, 100e-6 s of it hidden by
 *   the transfer: 200e-6 exposed; hidden 400e-6: none; free memory: none.
 * - ring of 4 (every step on a 25 GB/s, 4 us hop), S = 4e6: a step moves
 *   1e6 bytes in 44e-6 s and reduces them in 3e6/20e9 = 150e-6 s, so the
 *   reduce-scatter takes 3 * 150e-6 = 450e-6 s, the all-gather 3 * 44e-6
 *   = 132e-6 s, the all-reduce 582e-6 s.
 * - two levels, 2 nodes x 2 (NVLink 100 GB/s, 2 us): in the node one step
 *   of 2e6 bytes, 22e-6 s moving, 300e-6 s reducing; across one step of
 *   the 2e6 shard's halves, 44e-6 and 150e-6: reduce-scatter 450e-6 s,
 *   all-gather 22e-6 + 44e-6 = 66e-6 s, all-reduce 300e-6 + (150e-6 +
 *   44e-6) + 22e-6 = 516e-6 s.
 * - tree, the same group, 4 chunks of 1e6: a chain member reduces one
 *   child's chunk (max(12e-6, 150e-6) = 150e-6), the root its chain child's
 *   and node 1's (4e6 bytes: 200e-6 s, 44e-6 hidden by the slower hop).
 *   Reduce: the first chunk 150e-6 + (44e-6 + 156e-6) = 350e-6, then 3
 *   more at the root's 200e-6: 950e-6 s; all-reduce + the broadcast's
 *   188e-6 = 1138e-6 s; reduce-scatter + the scatter's 96e-6 = 1046e-6 s;
 *   all-gather 284e-6 s as without reductions. */
static void test_reduction(void)
{
    OC_ASSERT_REL(oc_cf_reduce_exposed_s(2e6, 2, 20e9, 100e-6), 200e-6, 1e-12);
    CU_ASSERT_EQUAL(oc_cf_reduce_exposed_s(2e6, 2, 20e9, 400e-6), 0.0);
    CU_ASSERT_EQUAL(oc_cf_reduce_exposed_s(2e6, 2, 0, 0), 0.0);
    OC_ASSERT_REL(oc_cf_ring_reducescatter_s(4, 4e6, 25e9, 4e-6, 20e9), 450e-6, 1e-12);
    OC_ASSERT_REL(oc_cf_ring_allgather_s(4, 4e6, 25e9, 4e-6), 132e-6, 1e-12);
    OC_ASSERT_REL(oc_cf_ring_allreduce_s(4, 4e6, 25e9, 4e-6, 20e9), 582e-6, 1e-12);
    /* fast memory: the transfers hide it, to the bit */
    CU_ASSERT_EQUAL(oc_cf_ring_allreduce_s(4, 4e6, 25e9, 4e-6, 3.35e12),
                    oc_cf_ring_allreduce_s(4, 4e6, 25e9, 4e-6, 0));
    const struct oc_cf_levels v = {2, 2, 100e9, 2e-6, 25e9, 4e-6, 20e9};
    OC_ASSERT_REL(oc_cf_hier_reducescatter_s(&v, 4e6), 450e-6, 1e-12);
    OC_ASSERT_REL(oc_cf_hier_allgather_s(&v, 4e6), 66e-6, 1e-12);
    OC_ASSERT_REL(oc_cf_hier_allreduce_s(&v, 4e6), 516e-6, 1e-12);
    OC_ASSERT_REL(oc_cf_tree_allreduce_s(&v, 4e6, 4), 1138e-6, 1e-12);
    OC_ASSERT_REL(oc_cf_tree_reducescatter_s(&v, 4e6, 4), 1046e-6, 1e-12);
    OC_ASSERT_REL(oc_cf_tree_allgather_s(&v, 4e6, 4), 284e-6, 1e-12);
}

/* NCCL's terms in the step's TP all-reduces (core/nccl_model.h): TP 8 on one
 * H100 node, micro-batch 4, s 2048, h 2048, bf16: each all-reduce moves
 * S = 2 * 2048 * 4 * 2048 = 33554432 bytes; 8 micro-batches x 24 layers x
 * 4 = 768 per step. Without NCCL: the plain ring at line rate,
 * 1.75 S/450e9 + 14 x 1 us. With NCCL's NVLink figure (370.8e9) and
 * tables: LL128 26.6 + 14 us + 1.75 S/0.92/370.8e9 (172.13 us) = 212.73 us
 * beats Simple 42 + 14 + 1.75 S/370.8e9 (158.36 us) = 214.36 us (the
 * reductions, 3 S/8 at 3.35 TB/s a step, hide behind the hops). */
static void test_step_nccl_terms(void)
{
    struct oc_topology t = h100();
    struct oc_model m = gpt(2048, 16, 24, 50257);
    struct oc_layout l = oc_test_layout(8, 1, 1, 4, 32, 2048);
    CU_ASSERT_EQUAL(oc_layout_act_bytes(&l), 2.0);
    const double S = 33554432.0;
    struct oc_cf_step off, on;
    oc_cf_step(&m, &l, &t, &off);
    OC_ASSERT_REL(off.tp_comm_s, 768 * (1.75 * S / 450e9 + 14e-6), 1e-9);
    t.intra_achieved_Bps = 370.8e9;
    t.nccl_version = 2.18;
    oc_cf_step(&m, &l, &t, &on);
    OC_ASSERT_REL(on.tp_comm_s, 768 * (26.6e-6 + 14e-6 + 1.75 * S / 0.92 / 370.8e9), 1e-9);
    OC_ASSERT_REL(on.tp_comm_s, 768 * 212.73e-6, 1e-4);
    CU_ASSERT(on.step_s > off.step_s);
}

static CU_TestInfo tests[] = {
    {"step: NCCL terms in TP all-reduces", test_step_nccl_terms},
    {"bubble", test_bubble},
    {"ring", test_ring},
    {"busbw", test_busbw},
    {"model_flops", test_model_flops},
    {"step_single_gpu", test_step_single_gpu},
    {"step_gpt3", test_step_gpt3},
    {"pp_hop", test_pp_hop},
    {"dp_link", test_dp_link},
    {"link_flows", test_link_flows},
    {"two-level rings, pipeline, tree", test_levels},
    {"reductions", test_reduction},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"closed_form", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
