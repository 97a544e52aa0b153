/* test_tp_overlap.c: the TP collectives under --tp-comm-overlap
 * (core/tp_overlap.h) against values worked by hand from its three forms
 * (Wang et al. 2023's decomposition as Transformer Engine's userbuffers
 * run it: ring exchange over t chunks, a 4-chunk pipelined reduce-scatter
 * and the bulk reduce-scatter under the weight gradient, the last two on
 * 16 of the GPU's SMs), the GEMM each collective hides behind, how an op
 * of either grain is priced, and the layout rule (sequence parallelism). */
#include <string.h>

#include "cost.h"
#include "layout.h"
#include "schedule.h"
#include "test_util.h"
#include "tp_overlap.h"

/* 1000 TFLOP/s peak at 80 %, 132 SMs, 3 TB/s. */
static struct oc_topology device(void)
{
    struct oc_topology t;
    memset(&t, 0, sizeof t);
    strcpy(t.name, "test");
    t.gpus_per_node = 8;
    t.device.peak_flops_16bit = 1e15;
    t.device.memory_bytes = 80e9;
    t.device.hbm_bandwidth_Bps = 3e12;
    t.device.sm_count = 132;
    t.device.gemm_efficiency = 0.8;
    return t;
}

/* C = 100 us, G = 80 us.
 *   ring exchange, t = 8: max(0, 100 - 80 x 7/8) = 30 us; C = 50: 0.
 *   pipeline, n = 4, 132 SMs less 16: G' = 80 x 132/116 = 91.03448 us;
 *     max(100/4, 100 - 91.03448 x 3/4) + (G' - G) = 31.72414 + 11.03448
 *     = 42.75862 us; C = 20: max(5, 20 - 68.27586) = 5, + 11.03448.
 *   bulk: max(0, 100 - 91.03448) + 11.03448 = 20 us (= C - G whenever
 *     C > G'); C = 50: 0 + 11.03448 us. */
static void test_forms(void)
{
    const double slow = 132.0 / 116.0;
    OC_ASSERT_REL(oc_tpo_ring_exchange_s(100e-6, 80e-6, 8), 30e-6, 1e-12);
    CU_ASSERT_EQUAL(oc_tpo_ring_exchange_s(50e-6, 80e-6, 8), 0.0);
    OC_ASSERT_REL(oc_tpo_pipeline_s(100e-6, 80e-6, 4, slow), 42.758620689655e-6, 1e-10);
    OC_ASSERT_REL(oc_tpo_pipeline_s(20e-6, 80e-6, 4, slow), 16.034482758621e-6, 1e-10);
    OC_ASSERT_REL(oc_tpo_bulk_s(100e-6, 80e-6, slow), 20e-6, 1e-10);
    OC_ASSERT_REL(oc_tpo_bulk_s(50e-6, 80e-6, slow), 11.034482758621e-6, 1e-10);
    /* no SM given up: the plain forms */
    OC_ASSERT_REL(oc_tpo_pipeline_s(100e-6, 80e-6, 4, 1.0), 40e-6, 1e-12);
    CU_ASSERT_EQUAL(oc_tpo_bulk_s(50e-6, 80e-6, 1.0), 0.0);
}

/* h 4096, a 32, f 16384, t 8, one sequence of 4096 (T = 4096 rows).
 * QKV [4096 x 4096] x [4096 x 1536]: 32 x 12 = 384 tiles of 128 x 128, 3
 * waves of 132 (quantization 384/396); 2 x 4096 x 1536 x 4096 =
 * 51 539 607 552 FLOPs at 0.8e15 x 384/396 = 66.43777536 us (its operands,
 * 58.7 MB, take 19.6 us at 3 TB/s: compute-bound). Output projection
 * [4096 x 512] x [512 x 4096]: 1024 tiles, 8 waves (1024/1056), 2^34 FLOPs:
 * 22.14592512 us (operands 14.0 us). Its dgrad [4096 x 4096] x [4096 x 512]
 * (m 4096, n 512, inner 4096): 32 x 4 = 128 tiles, one wave of 132
 * (128/132): 22.8379 us... as oc_cost_gemm_s gives it. */
static void test_init(void)
{
    const struct oc_topology t = device();
    const struct oc_model m = oc_test_gpt("t", 4096, 32, 4, 16384, 51200, 4096);
    struct oc_layout l = oc_test_layout(8, 1, 1, 1, 1, 4096);
    struct oc_tpo o;
    oc_tpo_init(&o, &m, &l, &t);
    CU_ASSERT_EQUAL(o.on, 0); /* off by default */
    l.tp_comm_overlap = 1;
    oc_tpo_init(&o, &m, &l, &t);
    CU_ASSERT_EQUAL(o.on, 0); /* needs sequence parallelism */
    l.sequence_parallel = 1;
    oc_tpo_init(&o, &m, &l, &t);
    CU_ASSERT_EQUAL(o.on, 1);
    OC_ASSERT_REL(o.sm_slow, 132.0 / 116.0, 1e-15);
    OC_ASSERT_REL(o.ag_fwd[0], 66.43777536e-6, 1e-9);
    OC_ASSERT_REL(o.rs_fwd[0], 22.14592512e-6, 1e-9);
    /* dgrad of the projection: 128 tiles in one wave of 132 */
    OC_ASSERT_REL(o.ag_bwd[0], 17179869184.0 / (0.8e15 * 128.0 / 132.0), 1e-9);
    /* wgrad of QKV [4096 x 1536], inner 4096: 384 tiles, as the forward */
    OC_ASSERT_REL(o.rs_bwd[0], 66.43777536e-6, 1e-9);
    /* fc1 [4096 x 4096] x [4096 x 2048]: 512 tiles, 4 waves (512/528),
     * 2^36 FLOPs */
    OC_ASSERT_REL(o.ag_fwd[1], 68719476736.0 / (0.8e15 * 512.0 / 528.0), 1e-9);
}

/* A layer's four collectives forward, C = 100 us each, on the GEMMs above:
 * QKV hides 66.44 x 7/8 = 58.13 us of its all-gather (41.87 us left), fc1
 * 88.60 x 7/8 = 77.53 (22.47 left); the projection's and fc2's
 * reduce-scatters go through the pipeline form. Ops: a layer-grain one is
 * priced as its part's; a chunk-grain forward of 3 layers with the head's
 * all-gather (count 2 x 3 + 1) is 3 layers' worth plus one whole C; an
 * all-reduce never overlaps. */
static void test_ops(void)
{
    const struct oc_topology t = device();
    const struct oc_model m = oc_test_gpt("t", 4096, 32, 4, 16384, 51200, 4096);
    struct oc_layout l = oc_test_layout(8, 1, 1, 1, 1, 4096);
    l.sequence_parallel = 1;
    l.tp_comm_overlap = 1;
    struct oc_tpo o;
    oc_tpo_init(&o, &m, &l, &t);
    const double C = 100e-6;
    const double ag_attn = C - o.ag_fwd[0] * 7.0 / 8.0;
    const double ag_mlp = C - o.ag_fwd[1] * 7.0 / 8.0;
    OC_ASSERT_REL(ag_attn, 41.8669466e-6, 1e-6);
    struct oc_op op;
    memset(&op, 0, sizeof op);
    op.kind = OC_OP_COLLECTIVE;
    op.group = OC_GROUP_TP;
    op.coll = OC_COLL_ALLGATHER;
    op.phase = OC_PHASE_FWD;
    op.part = OC_PART_ATTN;
    op.count = 1;
    OC_ASSERT_REL(oc_tpo_op_s(&o, &l, &op, C), ag_attn, 1e-12);
    op.part = OC_PART_MLP;
    OC_ASSERT_REL(oc_tpo_op_s(&o, &l, &op, C), ag_mlp, 1e-12);
    op.part = OC_PART_CHUNK;
    op.layer_count = 3;
    op.count = 7;
    OC_ASSERT_REL(oc_tpo_op_s(&o, &l, &op, C), 3.0 * (ag_attn + ag_mlp) + C, 1e-12);
    /* the layer form: both parts' all-gathers and reduce-scatters */
    const double rs = oc_tpo_pipeline_s(C, o.rs_fwd[0], 4, o.sm_slow) +
                      oc_tpo_pipeline_s(C, o.rs_fwd[1], 4, o.sm_slow);
    OC_ASSERT_REL(oc_tpo_layer_s(&o, OC_PHASE_FWD, C, C), ag_attn + ag_mlp + rs, 1e-12);
    op.coll = OC_COLL_ALLREDUCE;
    OC_ASSERT_REL(oc_tpo_op_s(&o, &l, &op, C), 7.0 * C, 1e-15);
    /* off: every repetition whole */
    l.tp_comm_overlap = 0;
    oc_tpo_init(&o, &m, &l, &t);
    op.coll = OC_COLL_ALLGATHER;
    OC_ASSERT_REL(oc_tpo_op_s(&o, &l, &op, C), 7.0 * C, 1e-15);
    OC_ASSERT_REL(oc_tpo_layer_s(&o, OC_PHASE_BWD, C, 2 * C), 6.0 * C, 1e-15);
}

/* Megatron-LM refuses --tp-comm-overlap without --sequence-parallel, and
 * so does the layout. */
static void test_layout_rule(void)
{
    const struct oc_topology t = device();
    const struct oc_model m = oc_test_gpt("t", 4096, 32, 4, 16384, 51200, 4096);
    struct oc_layout l;
    oc_layout_default(&l);
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_layout_parse(&l, "tp8-pp1-dp1-nosp-tpovl", &st), 0);
    CU_ASSERT_EQUAL(l.tp_comm_overlap, 1);
    l.seq_length = 4096;
    l.global_batch = 1;
    CU_ASSERT_NOT_EQUAL(oc_layout_validate(&l, &m, &t, 8, &st), 0);
    CU_ASSERT(strstr(st.msg, "sequence parallelism") != NULL);
    char buf[256];
    l.sequence_parallel = 1;
    oc_layout_format(&l, buf, sizeof buf);
    CU_ASSERT(strstr(buf, "tpovl") != NULL);
}

static CU_TestInfo tests[] = {
    {"three forms", test_forms},
    {"GEMMs behind each collective", test_init},
    {"ops of both grains", test_ops},
    {"layout rule", test_layout_rule},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"tp_overlap", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
