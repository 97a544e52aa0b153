/* test_pgather.c: --overlap-param-gather (core/schedule_pgather.h): the
 * chain's timing worked by hand, the chain of buckets (the DP buckets of
 * schedule_bucket.h in forward order, chunk by chunk), the ops a rank gets
 * at both grains, the simulated step against the chain worked by hand, the
 * closed form against the simulation, and the layout rule.
 *
 * Model: a GPT with h = 2048, a = 16, f = 8192, V = 512, P = 128 (L = 4
 * or 8): a layer's parameters (12h^2 + 13h = 50 358 272) pass Megatron's
 * 40M-parameter bucket, so each layer is a bucket of its own. Sequence
 * 128, micro-batch 1, bf16 weights (2 bytes a parameter).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "closed_form.h"
#include "cost.h"
#include "memory.h"
#include "replay.h"
#include "schedule.h"
#include "schedule_pgather.h"
#include "schedule_zero.h"
#include "test_util.h"

static struct oc_model model(int64_t L)
{
    return oc_test_gpt("pg", 2048, 16, L, 8192, 512, 128);
}

/* tp1-pp1-dp2 (or as asked), 2 micro-batches, zero1, overlap of the
 * gradient reduction and of the weight gather. */
static struct oc_layout layout(int64_t p, int64_t d, int64_t G)
{
    struct oc_layout l = oc_test_layout(1, p, d, 1, G, 128);
    l.cp = 1;
    l.zero = 1;
    l.overlap_grad_reduce = 1;
    l.overlap_param_gather = 1;
    return l;
}

/* g = gathers, f = forwards (seconds), first gather at 0:
 *   g {3,3,3}, f {1,1,1}, arrive 0: wait to 3, issue g1 (done 6), compute
 *     to 4; wait to 6, issue g2 (done 9), to 7; wait to 9, to 10: lost
 *     10 - 0 - 3 = 7 (all gathers, less the forwards under g1 and g2);
 *   f {4,4,4}: 3, done 6, to 7; 7, done 10, to 11; 11, to 15: lost 15 - 12
 *     = 3 (the first gather only);
 *   f {4,4,4}, arrive 5: to 9, done 8... 5 + 12 = 17: lost 0;
 *   g {3,3,3}, f {1,1,1}, arrive 2: 3, done 6, 4; 6, done 9, 7; 9, 10:
 *     lost 10 - 2 - 3 = 5;
 *   one bucket g {3}, f {1}: 3 lost; none: 0. */
static void test_chain_exposed(void)
{
    const double g[3] = {3, 3, 3}, f1[3] = {1, 1, 1}, f4[3] = {4, 4, 4};
    CU_ASSERT_DOUBLE_EQUAL(oc_pg_chain_exposed_s(g, f1, 3, 0), 7.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(oc_pg_chain_exposed_s(g, f4, 3, 0), 3.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(oc_pg_chain_exposed_s(g, f4, 3, 5), 0.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(oc_pg_chain_exposed_s(g, f1, 3, 2), 5.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(oc_pg_chain_exposed_s(g, f1, 1, 0), 3.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(oc_pg_chain_exposed_s(g, f1, 0, 0), 0.0, 1e-12);
}

/* L = 4, pp1: buckets in forward order [0] + embedding (V*h + P*h =
 * 1 310 720), [1], [2], [3] + head (tied, the embedding on this stage:
 * the final norm's 2h = 4096); their sum is the stage's parameters.
 * L = 8, pp2, interleaved v2 (chunk c of stage i holds layers
 * (c*2 + i)*2 ...): stage 0 [0]+emb, [1] (chunk 0), [4], [5] (chunk 1);
 * stage 1 [2], [3], [6], [7] + head (the norm and the tied copy of the
 * embedding's V*h = 1 048 576). */
static void test_chain(void)
{
    struct oc_model m = model(4);
    const double Pl = (double)oc_model_layer_params_tp(&m, 1);
    CU_ASSERT_DOUBLE_EQUAL(Pl, 50358272.0, 0.5);
    struct oc_layout l = layout(1, 2, 4);
    CU_ASSERT_EQUAL(oc_pg_on(&l), 1);
    struct oc_pg_item it[16];
    CU_ASSERT_FATAL(oc_pg_chain_cap(&m, &l) <= 16);
    CU_ASSERT_EQUAL_FATAL(oc_pg_chain(&m, &l, 0, it), 4);
    double sum = 0;
    for (int64_t i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(it[i].chunk, 0);
        CU_ASSERT_EQUAL(it[i].b.layer_first, i);
        CU_ASSERT_EQUAL(it[i].b.layer_count, 1);
        CU_ASSERT_EQUAL(it[i].b.embed, i == 0);
        CU_ASSERT_EQUAL(it[i].b.head, i == 3);
        sum += it[i].b.params;
    }
    OC_ASSERT_REL(it[0].b.params, Pl + 1310720.0, 1e-15);
    OC_ASSERT_REL(it[3].b.params, Pl + 4096.0, 1e-15);
    OC_ASSERT_REL(sum, (double)oc_mem_stage_params(&m, &l, 0), 1e-15);
    /* the gather op: async, the gather stream, the weights' bytes */
    const struct oc_op o = oc_pg_gather_op(&l, &it[3], 0);
    CU_ASSERT_EQUAL(o.kind, OC_OP_COLLECTIVE);
    CU_ASSERT_EQUAL(o.coll, OC_COLL_ALLGATHER);
    CU_ASSERT_EQUAL(o.group, OC_GROUP_DP);
    CU_ASSERT_EQUAL(o.async, 1);
    CU_ASSERT_EQUAL(o.tag, OC_ZERO_STREAM_GATHER);
    OC_ASSERT_REL(o.bytes, 2.0 * (Pl + 4096.0), 1e-15);

    m = model(8);
    l = layout(2, 2, 8);
    l.schedule = OC_SCHED_INTERLEAVED;
    l.vchunks = 2;
    const int64_t first[2][4] = {{0, 1, 4, 5}, {2, 3, 6, 7}};
    for (int64_t s = 0; s < 2; s++) {
        CU_ASSERT_EQUAL_FATAL(oc_pg_chain(&m, &l, s, it), 4);
        sum = 0;
        for (int64_t i = 0; i < 4; i++) {
            CU_ASSERT_EQUAL(it[i].chunk, i / 2);
            CU_ASSERT_EQUAL(it[i].b.layer_first, first[s][i]);
            CU_ASSERT_EQUAL(it[i].b.embed, s == 0 && i == 0);
            CU_ASSERT_EQUAL(it[i].b.head, s == 1 && i == 3);
            sum += it[i].b.params;
        }
        OC_ASSERT_REL(sum, (double)oc_mem_stage_params(&m, &l, s), 1e-15);
    }
    OC_ASSERT_REL(it[3].b.params, Pl + 4096.0 + 1048576.0, 1e-15);

    /* off: not asked, one DP rank, or not the distributed optimizer */
    l = layout(1, 2, 4);
    l.overlap_param_gather = 0;
    CU_ASSERT_EQUAL(oc_pg_on(&l), 0);
    l = layout(1, 1, 4);
    CU_ASSERT_EQUAL(oc_pg_on(&l), 0);
}

static int is_wait0(const struct oc_op *o)
{
    return o->kind == OC_OP_WAIT && o->tag == OC_ZERO_STREAM_GATHER;
}

static int is_gather(const struct oc_op *o)
{
    return o->kind == OC_OP_COLLECTIVE && o->group == OC_GROUP_DP &&
           o->coll == OC_COLL_ALLGATHER;
}

/* Layer grain, L = 4, tp1-pp1-dp2, 2 micro-batches, rank 0: the first
 * op that is not an ALLOC is bucket [0]'s gather; micro-batch 0's
 * forward runs WAIT, gather of the next, then the bucket's compute:
 *   WAIT, AG [1], embed, attn 0, mlp 0, WAIT, AG [2], attn 1, mlp 1,
 *   WAIT, AG [3], attn 2, mlp 2, WAIT, attn 3, mlp 3, head
 * (tp1: no TP collectives); micro-batch 1 has none of these; no gather
 * after the optimizer; the gathers move the weights' 2 bytes per
 * parameter of the stage, as the one gather without the overlap does. */
static void test_ops_layer(void)
{
    struct oc_model m = model(4);
    struct oc_layout l = layout(1, 2, 4);
    struct oc_schedule s;
    struct oc_schedule_opts so = {OC_GRAIN_LAYER, 1, NULL};
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_schedule_build(&s, &m, &l, &so, &st), 0);
    const struct oc_rank_ops *r = &s.ranks[0];
    int64_t k = 0;
    while (k < r->n && r->ops[k].kind == OC_OP_ALLOC)
        k++;
    CU_ASSERT_FATAL(k < r->n);
    CU_ASSERT(is_gather(&r->ops[k]) && r->ops[k].async && r->ops[k].layer_first == 0);
    /* the sequence of waits, gathers and computes of micro-batch 0 */
    char seq[64] = "", *p = seq;
    double bytes = 0;
    int64_t gathers = 0, waits = 0;
    for (int64_t i = 0; i < r->n; i++) {
        const struct oc_op *o = &r->ops[i];
        if (is_gather(o)) {
            bytes += o->bytes;
            gathers++;
            CU_ASSERT_EQUAL(o->phase, OC_PHASE_FWD);
            CU_ASSERT_EQUAL(o->mb, 0);
        }
        waits += is_wait0(o);
        if (o->mb != 0 || o->phase != OC_PHASE_FWD || p >= seq + sizeof seq - 2)
            continue;
        if (is_wait0(o))
            *p++ = 'W';
        else if (is_gather(o) && i > k)
            *p++ = (char)('0' + o->layer_first);
        else if (o->kind == OC_OP_COMPUTE)
            *p++ = o->part == OC_PART_EMBED ? 'e' : o->part == OC_PART_HEAD ? 'h' : 'c';
    }
    *p = 0;
    CU_ASSERT_STRING_EQUAL(seq, "W1eccW2ccW3ccWcch");
    CU_ASSERT_EQUAL(gathers, 4);
    CU_ASSERT_EQUAL(waits, 4);
    OC_ASSERT_REL(bytes, 2.0 * (double)oc_mem_stage_params(&m, &l, 0), 1e-15);
    oc_schedule_free(&s);
}

/* Chunk grain: micro-batch 0's forward is four pieces, one per bucket,
 * whose FLOPs sum to micro-batch 1's one merged forward, each after its
 * WAIT. */
static void test_ops_chunk(void)
{
    struct oc_model m = model(4);
    struct oc_layout l = layout(1, 2, 4);
    struct oc_schedule s;
    struct oc_schedule_opts so = {OC_GRAIN_CHUNK, 1, NULL};
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_schedule_build(&s, &m, &l, &so, &st), 0);
    const struct oc_rank_ops *r = &s.ranks[1];
    double f0 = 0, f1 = 0;
    int64_t pieces = 0, n1 = 0;
    for (int64_t i = 0; i < r->n; i++) {
        const struct oc_op *o = &r->ops[i];
        if (o->kind != OC_OP_COMPUTE || o->phase != OC_PHASE_FWD)
            continue;
        if (o->mb == 0) {
            f0 += o->flops;
            pieces++;
            CU_ASSERT_EQUAL(o->layer_count, 1);
            CU_ASSERT(i >= 2 && is_wait0(&r->ops[i - 1 - (o->layer_first < 3)]));
        } else {
            f1 += o->flops;
            n1++;
        }
    }
    CU_ASSERT_EQUAL(pieces, 4);
    CU_ASSERT_EQUAL(n1, 1);
    OC_ASSERT_REL(f0, f1, 1e-12);
    oc_schedule_free(&s);
}

/* An H100-like device, one GPU per node, NICs of 25e9 B/s: a gather of
 * S bytes over the two DP ranks is one ring step, S/2 / 25e9 + the
 * route's latency, 3e-6 (NIC) + 1e-6 (one switch) s (CM02 gives l + S/B
 * exactly, tests/sim_fixtures.h). */
static struct oc_topology topo2(void)
{
    struct oc_topology t;
    memset(&t, 0, sizeof t);
    strcpy(t.name, "test");
    t.gpus_per_node = 1;
    strcpy(t.device.name, "h100-like");
    t.device.peak_flops_16bit = 989e12;
    t.device.memory_bytes = 80e9;
    t.device.hbm_bandwidth_Bps = 3.35e12;
    t.device.sm_count = 132;
    t.device.gemm_efficiency = 0.75;
    t.intra_bandwidth_Bps = 100e9;
    t.intra_latency_s = 1e-6;
    t.nics_per_node = 1;
    t.nic_bandwidth_Bps = 25e9;
    t.nic_latency_s = 3e-6;
    t.inter_latency_s = 1e-6;
    t.switch_levels = 1;
    t.oversubscription = 1;
    return t;
}

static double step_s(const struct oc_model *m, const struct oc_topology *t,
                     const struct oc_layout *l, enum oc_sim_fidelity f)
{
    struct oc_replay_opts o;
    memset(&o, 0, sizeof o);
    o.fidelity = f;
    struct oc_metrics *mt = calloc(1, sizeof *mt);
    struct oc_status st = {{0}};
    CU_ASSERT_FATAL(mt != NULL);
    const int rc = oc_replay_run_forked(m, t, l, &o, mt, 60.0, &st);
    if (rc != 0)
        fprintf(stderr, "\n  %s\n", st.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    const double s = mt->step_time_s;
    free(mt);
    return s;
}

/* tp1-pp1-dp2 on topo2, L = 4: the step with the overlap less the step
 * without is what the chain loses less the one gather after the
 * optimizer: gathers g_i = 2 P_i / 2 / 25e9 + 4e-6 (P_i the bucket's
 * parameters), forwards f_i = the layer's attention and MLP forward (the
 * embedding's added to the first, the head's to the last) from the cost
 * table; the gather after the optimizer: 2 * sum P_i / 2 / 25e9 + 4e-6.
 * A bucket's gather (about 2 ms) outlasts a layer's forward (about 20
 * us): the chain loses sum g_i - f_0 - f_1 - f_2, about 3 latencies more
 * than the one gather, less three forwards. Fast and full fidelity. */
static void test_sim_step(void)
{
    struct oc_model m = model(4);
    struct oc_topology t = topo2();
    struct oc_layout on = layout(1, 2, 4), off = on;
    off.overlap_param_gather = 0;
    struct oc_pg_item it[4];
    CU_ASSERT_EQUAL_FATAL(oc_pg_chain(&m, &on, 0, it), 4);
    struct oc_cost c;
    oc_cost_init(&c, &m, &on, &t);
    const double lat = 4e-6, B = 25e9;
    double g[4], f[4], all = 0;
    for (int i = 0; i < 4; i++) {
        g[i] = it[i].b.params / B + lat;
        f[i] = c.part_s[OC_PART_ATTN][OC_PHASE_FWD] + c.part_s[OC_PART_MLP][OC_PHASE_FWD];
        all += it[i].b.params;
    }
    f[0] += c.part_s[OC_PART_EMBED][OC_PHASE_FWD];
    f[3] += c.part_s[OC_PART_HEAD][OC_PHASE_FWD];
    const double lost = oc_pg_chain_exposed_s(g, f, 4, 0);
    OC_ASSERT_REL(lost, g[0] + g[1] + g[2] + g[3] - f[0] - f[1] - f[2], 1e-12);
    const double want = lost - (all / B + lat);
    const enum oc_sim_fidelity fid[2] = {OC_SIM_FAST, OC_SIM_FULL};
    for (int i = 0; i < 2; i++) {
        const double d = step_s(&m, &t, &on, fid[i]) - step_s(&m, &t, &off, fid[i]);
        CU_ASSERT_DOUBLE_EQUAL(d, want, 1e-9);
    }
}

/* The closed form against the simulation on the same layout: pp1 and
 * no TP, where its assumptions hold, it charges the chain as the replay
 * runs it (pg_stage_s, the first gather exposed on stage 0), the
 * gradients' reduce-scatter buckets after the last backward as the
 * replay, and no gather after the optimizer. When written the two agreed
 * to 9 digits (20.461047 ms); held to 1e-6. Without the overlap the form
 * charges the reduce-scatter and the gather as one all-reduce per bucket
 * (an estimate); the overlap's step is the shorter in both here (the
 * forwards hide a little of the chain, about 0.49 ms in the simulation). */
static void test_closed_form(void)
{
    struct oc_model m = model(4);
    struct oc_topology t = topo2();
    struct oc_layout on = layout(1, 2, 4);
    struct oc_cf_step cf;
    oc_cf_step(&m, &on, &t, &cf);
    OC_ASSERT_REL(cf.step_s, step_s(&m, &t, &on, OC_SIM_FAST), 1e-6);
    struct oc_layout off = on;
    off.overlap_param_gather = 0;
    struct oc_cf_step cf0;
    oc_cf_step(&m, &off, &t, &cf0);
    CU_ASSERT(cf.step_s < cf0.step_s);
    CU_ASSERT(step_s(&m, &t, &on, OC_SIM_FAST) < step_s(&m, &t, &off, OC_SIM_FAST));
}

/* Megatron-LM's rules: the distributed optimizer and the gradient-reduce
 * overlap; the layout part round-trips. */
static void test_layout_rule(void)
{
    struct oc_model m = model(4);
    struct oc_topology t = topo2();
    struct oc_status st = {{0}};
    struct oc_layout l = layout(1, 2, 4);
    l.zero = 0;
    oc_test_expect_fail(oc_layout_validate(&l, &m, &t, 2, &st), st.msg,
                        (const char *const[]){"pgovl", "zero1", NULL});
    l.zero = 1;
    l.overlap_grad_reduce = 0;
    oc_test_expect_fail(oc_layout_validate(&l, &m, &t, 2, &st), st.msg,
                        (const char *const[]){"pgovl", "ovl", NULL});
    struct oc_layout p;
    oc_layout_default(&p);
    CU_ASSERT_EQUAL_FATAL(oc_layout_parse(&p, "tp1-pp1-dp2-pgovl", &st), 0);
    CU_ASSERT_EQUAL(p.overlap_param_gather, 1);
    char buf[256];
    oc_layout_format(&p, buf, sizeof buf);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "-pgovl"));
    CU_ASSERT_EQUAL_FATAL(oc_layout_parse(&p, "tp1-pp1-dp2-nopgovl", &st), 0);
    CU_ASSERT_EQUAL(p.overlap_param_gather, 0);
}

static CU_TestInfo tests[] = {
    {"chain_exposed", test_chain_exposed},
    {"chain", test_chain},
    {"ops_layer", test_ops_layer},
    {"ops_chunk", test_ops_chunk},
    {"sim_step", test_sim_step},
    {"closed_form", test_closed_form},
    {"layout_rule", test_layout_rule},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"pgather", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
