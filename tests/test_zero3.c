/* test_zero3.c: ZeRO-2, ZeRO-3 (FSDP) and rfull<k> (core/memory.c,
 * core/schedule_zero.c, core/closed_form.c and the simulator's replay of
 * their ops), on the tiny GPT where every number can be worked by hand.
 *
 * Model (oc_test_tiny_model, models/tiny.json): h = 64, a = 4, L = 8,
 * f = 256, V = 512, P = 128, LayerNorm with bias, GELU, dropout. A layer
 * holds QKV 64*192 + 192, output 64*64 + 64, two LayerNorms 2*128, MLP
 * 64*256 + 256 and 256*64 + 64 = 49 984 parameters (P_l below). With
 * tp1-pp2 the last stage holds 4 layers, the final norm (128) and the LM
 * head's 512*64 = 32 768 (tied: Megatron-LM's copy on the last stage):
 * 199 936 + 32 896 = 232 832 parameters, E = 32 896 beyond its layers.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "closed_form.h"
#include "cost.h"
#include "memory.h"
#include "replay.h"
#include "schedule.h"
#include "schedule_zero.h"
#include "sim_fixtures.h"
#include "test_util.h"

#define P_LAYER 49984.0
#define E_LAST 32896.0
#define PARAMS_LAST 232832.0

static struct oc_model tiny(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    return m;
}

/* sim_fixtures.h's platform, gpn GPUs and as many NICs per node, with an
 * H100-like device (test_sim_attribution.c's) */
static struct oc_topology topo_z(int64_t gpn)
{
    struct oc_topology t = topo(gpn, gpn, 1, 1);
    strcpy(t.device.name, "h100-like");
    t.device.peak_flops_16bit = 1e15;
    t.device.memory_bytes = 80e9;
    t.device.hbm_bandwidth_Bps = 3.35e12;
    t.device.sm_count = 132;
    t.device.gemm_efficiency = 0.75;
    return t;
}

/* oc_test_layout with cp 1 (test_util.h leaves it 0) */
static struct oc_layout lay(int64_t t, int64_t p, int64_t d, int64_t b, int64_t G, int64_t s)
{
    struct oc_layout l = oc_test_layout(t, p, d, b, G, s);
    l.cp = 1;
    return l;
}

/* ---- memory ------------------------------------------------------------- */

/* ZeRO (Rajbhandari et al. 2020), section 5 and figure 1, K = 12 and
 * d = 4: per parameter 2 + 2 + 12 = 16 (stage 0), 2 + 2 + 12/4 = 7
 * (ZeRO-1), 2 + (2 + 12)/4 = 5.5 (ZeRO-2), (2 + 2 + 12)/4 = 4 (ZeRO-3).
 * The transient (memory.h) on the last stage, w = g = 2: ZeRO-2 holds one
 * layer's and the extra unit's full gradients, 2*(E + P_l) = 165 760;
 * ZeRO-3 their gathered weights too, 4*(E + P_l) = 331 520, and with
 * overlap one more layer's weights (the prefetch), + 2*P_l = 431 488. */
static void test_memory_zero_stages(void)
{
    struct oc_model m = tiny();
    struct oc_layout l = lay(1, 2, 4, 1, 8, 32);
    const double per_param[4] = {16, 7, 5.5, 4};
    const double transient[4] = {0, 0, 165760, 331520};
    for (int z = 0; z <= 3; z++) {
        l.zero = z;
        struct oc_mem_breakdown b;
        oc_memory_stage(&m, &l, 1, &b);
        CU_ASSERT_EQUAL(b.params, (int64_t)PARAMS_LAST);
        OC_ASSERT_REL(b.weights_bytes + b.grads_bytes + b.optimizer_bytes,
                      per_param[z] * PARAMS_LAST, 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(b.zero_transient_bytes, transient[z], 1e-9);
        OC_ASSERT_REL(b.total_bytes,
                      per_param[z] * PARAMS_LAST + transient[z] + b.activations_bytes +
                          b.logits_bytes, 1e-12);
    }
    CU_ASSERT_DOUBLE_EQUAL(oc_mem_chunk_extra_params(&m, &l, 1, 0), E_LAST, 1e-9);
    l.zero = 3;
    l.overlap_grad_reduce = 1;
    CU_ASSERT_DOUBLE_EQUAL(oc_mem_zero_transient_bytes(&m, &l, 1), 431488.0, 1e-9);
    /* d = 1: nothing to shard, ZeRO-0's memory */
    l.dp = 1;
    l.global_batch = 2;
    struct oc_mem_breakdown b;
    oc_memory_stage(&m, &l, 1, &b);
    OC_ASSERT_REL(b.weights_bytes + b.grads_bytes + b.optimizer_bytes, 16.0 * PARAMS_LAST,
                  1e-12);
    CU_ASSERT_EQUAL(b.zero_transient_bytes, 0);
}

/* rfull<k> (Megatron-LM --recompute-method block): s = 32, b = 1, so
 * sbh = 2048; a layer without recompute keeps (Korthikanti et al. 2022,
 * table 2, t = 1) sbh*(34 + 5*a*s/h) = 2048*(34 + 10) = 90 112 bytes, a
 * recomputed one its input 2*sbh = 4096. A chunk of 4 layers (tp1-pp2)
 * under rfull1: 4096 + 3*90 112 = 274 432; rfull3: 3*4096 + 90 112 =
 * 102 400; rfull: 4*4096; none: 4*90 112. Stage 1 adds the head's inputs
 * 4*sbh = 8192 (memory.h). */
static void test_memory_rfull_k(void)
{
    struct oc_model m = tiny();
    struct oc_layout l = lay(1, 2, 1, 1, 4, 32);
    CU_ASSERT_DOUBLE_EQUAL(oc_mem_layer_activation_bytes(&m, &l), 90112.0, 1e-9);
    l.recompute = OC_RECOMPUTE_FULL;
    CU_ASSERT_DOUBLE_EQUAL(oc_mem_layer_activation_bytes(&m, &l), 4096.0, 1e-9);
    const int64_t ks[] = {1, 3, 0};
    const double want[] = {274432.0, 102400.0, 16384.0};
    for (int i = 0; i < 3; i++) {
        l.recompute_layers = ks[i];
        CU_ASSERT_DOUBLE_EQUAL(oc_mem_chunk_activation_bytes(&m, &l, 1, 0), want[i] + 8192.0,
                               1e-9);
        /* 1F1B stage 1 holds one micro-batch at its peak */
        struct oc_mem_breakdown b;
        oc_memory_stage(&m, &l, 1, &b);
        CU_ASSERT_DOUBLE_EQUAL(b.activations_bytes, want[i] + 8192.0, 1e-9);
    }
    CU_ASSERT_EQUAL(oc_mem_recomputed_layers(&l, 4), 4);
    l.recompute_layers = 3;
    CU_ASSERT_EQUAL(oc_mem_recomputed_layers(&l, 4), 3);
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    l.recompute_layers = 0;
    CU_ASSERT_EQUAL(oc_mem_recomputed_layers(&l, 4), 0);
}

/* rfull<k> at or past the chunk's layers is rfull: refused, one line. */
static void test_rfull_k_validate(void)
{
    struct oc_model m = tiny();
    struct oc_layout l;
    struct oc_status st = {{0}};
    oc_layout_default(&l);
    l.global_batch = 8;
    l.seq_length = 32;
    CU_ASSERT_EQUAL_FATAL(oc_layout_parse(&l, "tp1-pp2-dp4-rfull3-zero3", &st), 0);
    oc_test_expect_ok(oc_layout_validate(&l, &m, NULL, 8, &st), st.msg);
    CU_ASSERT_EQUAL_FATAL(oc_layout_parse(&l, "tp1-pp2-dp4-rfull4", &st), 0);
    const char *subs[] = {"rfull4", "4-layer", NULL};
    oc_test_expect_fail(oc_layout_validate(&l, &m, NULL, 8, &st), st.msg, subs);
}

/* ---- the schedule's ops ------------------------------------------------- */

struct dp_sums {
    double ag, rs, ar;  /* DP bytes * count by kind */
    double ag_after_opt; /* all-gathers after the optimizer step */
    int64_t ok_gathers;  /* layer computes that found their weights gathered */
    int64_t bad;         /* layer computes that did not */
    int64_t async;       /* async DP collectives */
    double peak;         /* running peak of ALLOC/FREE */
};

/* Walk one rank's list: DP bytes, the running peak and, at layer grain,
 * that every attention or MLP compute of layer L runs with L's weights
 * gathered (a blocking all-gather of L, or an async one waited for by a
 * WAIT of the gather stream) and not yet freed. */
static struct dp_sums walk(const struct oc_rank_ops *ro, int64_t nlayers, int zero3)
{
    struct dp_sums s;
    memset(&s, 0, sizeof s);
    int *ready = calloc((size_t)nlayers, sizeof *ready);   /* 1 gathered, 2 pending */
    double mem = 0;
    int after_opt = 0;
    for (int64_t i = 0; i < ro->n; i++) {
        const struct oc_op *op = &ro->ops[i];
        switch (op->kind) {
        case OC_OP_COLLECTIVE:
            if (op->group != OC_GROUP_DP)
                break;
            s.async += op->async;
            if (op->coll == OC_COLL_ALLGATHER) {
                s.ag += op->bytes * op->count;
                if (after_opt)
                    s.ag_after_opt += op->bytes * op->count;
                if (op->layer_count == 1)
                    ready[op->layer_first] = op->async ? 2 : 1;
            } else if (op->coll == OC_COLL_REDUCESCATTER) {
                s.rs += op->bytes * op->count;
            } else {
                s.ar += op->bytes * op->count;
            }
            break;
        case OC_OP_WAIT:
            for (int64_t j = 0; j < nlayers; j++)
                if (ready[j] == 2)
                    ready[j] = 1;
            break;
        case OC_OP_COMPUTE:
            if (op->phase == OC_PHASE_OPTIMIZER)
                after_opt = 1;
            if (zero3 && (op->part == OC_PART_ATTN || op->part == OC_PART_MLP)) {
                if (ready[op->layer_first] == 1)
                    s.ok_gathers++;
                else
                    s.bad++;
            }
            break;
        case OC_OP_ALLOC:
            mem += op->bytes;
            s.peak = mem > s.peak ? mem : s.peak;
            break;
        case OC_OP_FREE:
            mem -= op->bytes;
            if (op->buf == OC_BUF_WEIGHTS && op->layer_count == 1)
                ready[op->layer_first] = 0;
            break;
        default:
            break;
        }
    }
    free(ready);
    return s;
}

static struct oc_schedule build(const struct oc_model *m, const struct oc_layout *l,
                                enum oc_grain g)
{
    struct oc_schedule s;
    struct oc_schedule_opts o = {g, 1, NULL};
    struct oc_status st = {{0}};
    int rc = oc_schedule_build(&s, m, l, &o, &st);
    oc_test_expect_ok(rc, st.msg);
    CU_ASSERT_FATAL(rc == 0);
    return s;
}

/* tp1-pp2-dp2, m = 2 micro-batches, ZeRO-3, with and without overlap: on
 * every rank each layer compute finds its layer gathered; per step the
 * DP all-gathers move 2*m*w*params bytes of the stage (forward and
 * backward gather every unit; the units' parameters add up to the
 * stage's) and the reduce-scatters m*g*params: on the last stage
 * 2*2*2*232 832 and 2*2*232 832; nothing after the optimizer. Layer and
 * chunk grain carry the same bytes and the same peak. ZeRO-2: the same
 * reduce-scatters, one all-gather of w*params after the optimizer.
 * For m = 1 ZeRO-3's ring bytes (AG + AG + RS, each (d-1)/d of S) are
 * 1.5x the all-reduce's (2(d-1)/d of S): the ZeRO paper's 3 Psi vs 2 Psi
 * (section 7.2.2). */
static void test_schedule_zero3_ops(void)
{
    struct oc_model m = tiny();
    for (int ov = 0; ov <= 1; ov++) {
        struct oc_layout l = lay(1, 2, 2, 1, 4, 32);
        l.zero = 3;
        l.overlap_grad_reduce = ov;
        struct oc_schedule sl = build(&m, &l, OC_GRAIN_LAYER);
        struct oc_schedule sc = build(&m, &l, OC_GRAIN_CHUNK);
        for (int64_t r = 0; r < sl.nranks; r++) {
            const int64_t stage = oc_layout_coord(&l, r).pp;
            const double params = (double)oc_mem_stage_params(&m, &l, stage);
            struct dp_sums a = walk(&sl.ranks[r], 8, 1);
            struct dp_sums c = walk(&sc.ranks[r], 8, 0);
            CU_ASSERT_EQUAL(a.bad, 0);
            /* m = 2, 4 layers, attention and MLP, forward and backward */
            CU_ASSERT_EQUAL(a.ok_gathers, 2 * (2 * 4 * 2));
            OC_ASSERT_REL(a.ag, 2.0 * 2 * 2 * params, 1e-12);
            OC_ASSERT_REL(a.rs, 2.0 * 2 * params, 1e-12);
            CU_ASSERT_EQUAL(a.ar, 0);
            CU_ASSERT_EQUAL(a.ag_after_opt, 0);
            OC_ASSERT_REL(c.ag, a.ag, 1e-12);
            OC_ASSERT_REL(c.rs, a.rs, 1e-12);
            /* the chunk grain allocates the logits before its merged
             * compute (and frees them after): it can only hold more */
            CU_ASSERT(c.peak >= a.peak * (1 - 1e-12));
            CU_ASSERT_EQUAL(a.async > 0, ov);
            if (stage == 1)
                OC_ASSERT_REL(a.ag, 8.0 * PARAMS_LAST, 1e-12);
            /* the replayed peak stays under memory.c's (which adds the
             * transient to the activation peak) and above it less the
             * transient */
            struct oc_mem_breakdown b;
            oc_memory_stage(&m, &l, stage, &b);
            CU_ASSERT(a.peak <= b.total_bytes * (1 + 1e-12));
            CU_ASSERT(c.peak <= b.total_bytes * (1 + 1e-12));
            CU_ASSERT(a.peak >= b.total_bytes - b.zero_transient_bytes - b.logits_bytes);
        }
        oc_schedule_free(&sl);
        oc_schedule_free(&sc);

        l.zero = 2;
        struct oc_schedule s2 = build(&m, &l, OC_GRAIN_LAYER);
        for (int64_t r = 0; r < s2.nranks; r++) {
            const double params =
                (double)oc_mem_stage_params(&m, &l, oc_layout_coord(&l, r).pp);
            struct dp_sums a = walk(&s2.ranks[r], 8, 0);
            OC_ASSERT_REL(a.rs, 2.0 * 2 * params, 1e-12);
            OC_ASSERT_REL(a.ag, 2.0 * params, 1e-12);
            OC_ASSERT_REL(a.ag_after_opt, 2.0 * params, 1e-12);
        }
        oc_schedule_free(&s2);
    }
    /* m = 1: 1.5x the all-reduce's ring bytes */
    struct oc_layout l = lay(1, 2, 2, 1, 2, 32);
    l.zero = 3;
    struct oc_schedule s3 = build(&m, &l, OC_GRAIN_LAYER);
    l.zero = 0;
    struct oc_schedule s0 = build(&m, &l, OC_GRAIN_LAYER);
    struct dp_sums z3 = walk(&s3.ranks[2], 8, 1), z0 = walk(&s0.ranks[2], 8, 0);
    OC_ASSERT_REL(z3.ag + z3.rs, 1.5 * 2.0 * z0.ar, 1e-12);
    oc_schedule_free(&s3);
    oc_schedule_free(&s0);
}

/* rfull3 on chunks of 4 layers: each backward unit recomputes layers
 * first..first+2 (attention and MLP each), never the fourth; the chunk
 * grain's backward costs 4 layers' backward and 3 layers' recompute. */
static void test_schedule_rfull_k(void)
{
    struct oc_model m = tiny();
    struct oc_layout l = lay(1, 2, 1, 1, 4, 32);
    l.recompute = OC_RECOMPUTE_FULL;
    l.recompute_layers = 3;
    struct oc_schedule s = build(&m, &l, OC_GRAIN_LAYER);
    for (int64_t r = 0; r < s.nranks; r++) {
        const int64_t first = 4 * oc_layout_coord(&l, r).pp;
        int64_t n = 0;
        for (int64_t i = 0; i < s.ranks[r].n; i++) {
            const struct oc_op *op = &s.ranks[r].ops[i];
            if (op->kind == OC_OP_COMPUTE && op->phase == OC_PHASE_RECOMPUTE) {
                n++;
                CU_ASSERT(op->layer_first >= first && op->layer_first < first + 3);
            }
        }
        CU_ASSERT_EQUAL(n, 4 * 3 * 2); /* m = 4 backwards, 3 layers, 2 parts */
    }
    oc_schedule_free(&s);

    struct oc_topology t = topo_z(8);
    struct oc_cost c;
    oc_cost_init(&c, &m, &l, &t);
    struct oc_op op;
    memset(&op, 0, sizeof op);
    op.kind = OC_OP_COMPUTE;
    op.phase = OC_PHASE_BWD;
    op.part = OC_PART_CHUNK;
    op.stage = 1;
    op.chunk = 0;
    op.layer_first = 4;
    op.layer_count = 4;
    const double want = 4 * (c.part_s[OC_PART_ATTN][OC_PHASE_BWD] +
                             c.part_s[OC_PART_MLP][OC_PHASE_BWD]) +
                        3 * (c.part_s[OC_PART_ATTN][OC_PHASE_RECOMPUTE] +
                             c.part_s[OC_PART_MLP][OC_PHASE_RECOMPUTE]) +
                        c.part_s[OC_PART_HEAD][OC_PHASE_BWD];
    OC_ASSERT_REL(oc_cost_op_s(&c, &op, &l, &m), want, 1e-12);
}

/* ---- the simulator against the closed form ------------------------------ */

/* tp1-pp2-dp2, ZeRO-3 (and ZeRO-2), no overlap, 1F1B, m = 2, rank order
 * tp-pp-dp on nodes of 2 GPUs: each replica's two stages in one node,
 * joined by a free link; each DP pair crosses the nodes on NICs of its
 * own (latency LN, bandwidth BN: sim_fixtures.h). Untied embeddings (no
 * embedding all-reduce, whose time would count as DP). Every ZeRO
 * collective is blocking, so a stage's dp_comm_s is the sum of its ring
 * times: oc_cf_zero_dp_comm_s to 1e-6. */
static void check_sim_zero(int zero, enum oc_sim_fidelity fid)
{
    struct oc_model m = tiny();
    m.tie_word_embeddings = 0;
    struct oc_topology t = topo_z(2);
    t.intra_bandwidth_Bps = 1e20;
    t.intra_latency_s = 0;
    struct oc_layout l = lay(1, 2, 2, 1, 4, 32);
    l.order = OC_ORDER_TP_PP_DP;
    l.zero = zero;
    struct oc_replay_opts o;
    memset(&o, 0, sizeof o);
    o.fidelity = fid;
    o.uniform_stages = 1;
    struct oc_metrics *mt = calloc(1, sizeof *mt);
    struct oc_status st = {{0}};
    int rc = oc_replay_run_forked(&m, &t, &l, &o, mt, 60.0, &st);
    oc_test_expect_ok(rc, st.msg);
    CU_ASSERT_FATAL(rc == 0);
    for (int64_t s = 0; s < 2; s++) {
        const double cf = oc_cf_zero_dp_comm_s(&m, &l, s, BN, LN, oc_cost_mem_Bps(&t));
        CU_ASSERT(cf > 0);
        OC_ASSERT_REL(mt->stage[s].dp_comm_s, cf, REL);
    }
    free(mt);
}

static void test_sim_zero3_fast(void) { check_sim_zero(3, OC_SIM_FAST); }
static void test_sim_zero3_full(void) { check_sim_zero(3, OC_SIM_FULL); }
static void test_sim_zero2_full(void) { check_sim_zero(2, OC_SIM_FULL); }

/* Interleaved (v = 2 chunks of 2 layers) and 1F1B, fast and full: the
 * replay ends (the ZeRO streams and their tagged WAITs do not deadlock),
 * without overlap the DP time is the closed form's (its sum over chunks),
 * and with overlap (async reduce-scatters, prefetched gathers) the step
 * is shorter. */
static void test_sim_zero3_overlap(void)
{
    struct oc_model m = tiny();
    m.tie_word_embeddings = 0;
    struct oc_topology t = topo_z(2);
    for (int v = 1; v <= 2; v++)
        for (int f = 0; f <= 1; f++) {
            struct oc_layout l = lay(1, 2, 2, 1, 4, 32);
            l.order = OC_ORDER_TP_PP_DP;
            l.zero = 3;
            if (v == 2) {
                l.schedule = OC_SCHED_INTERLEAVED;
                l.vchunks = 2;
            }
            double step[2];
            for (int ov = 0; ov <= 1; ov++) {
                l.overlap_grad_reduce = ov;
                struct oc_replay_opts o;
                memset(&o, 0, sizeof o);
                o.fidelity = f ? OC_SIM_FULL : OC_SIM_FAST;
                o.uniform_stages = 1;
                struct oc_metrics *mt = calloc(1, sizeof *mt);
                struct oc_status st = {{0}};
                int rc = oc_replay_run_forked(&m, &t, &l, &o, mt, 60.0, &st);
                oc_test_expect_ok(rc, st.msg);
                CU_ASSERT_FATAL(rc == 0);
                step[ov] = mt->step_time_s;
                if (!ov)
                    for (int64_t s = 0; s < 2; s++)
                        OC_ASSERT_REL(mt->stage[s].dp_comm_s,
                                      oc_cf_zero_dp_comm_s(&m, &l, s, BN, LN,
                                                           oc_cost_mem_Bps(&t)),
                                      REL);
                free(mt);
            }
            CU_ASSERT(step[1] < step[0]);
        }
}

static CU_TestInfo tests[] = {
    {"memory per rank, ZeRO-0..3 (ZeRO paper figure 1)", test_memory_zero_stages},
    {"rfull<k> activations by hand", test_memory_rfull_k},
    {"rfull<k> at the chunk's layers refused", test_rfull_k_validate},
    {"ZeRO-3/2 ops: gathers before compute, bytes, grains agree", test_schedule_zero3_ops},
    {"rfull<k> recompute ops and chunk cost", test_schedule_rfull_k},
    {"sim ZeRO-3 DP time = closed form, fast", test_sim_zero3_fast},
    {"sim ZeRO-3 DP time = closed form, full", test_sim_zero3_full},
    {"sim ZeRO-2 DP time = closed form, full", test_sim_zero2_full},
    {"sim ZeRO-3 interleaved and 1F1B: closed form, overlap shorter", test_sim_zero3_overlap},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"zero3", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
