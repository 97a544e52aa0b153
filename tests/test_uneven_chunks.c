/* test_uneven_chunks.c: interleaved stages whose layers v does not divide
 * (layout part unevenv, core/placement.h "Uneven chunks": Llama 3's
 * balanced pipeline): the chunks' layers worked by hand, the rule, and
 * the schedule, memory and bound built on them (every layer once per
 * direction and micro-batch, messages matched, no deadlock, the
 * simulated step above the bound and the closed form's estimate close).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "bound.h"
#include "closed_form.h"
#include "memory.h"
#include "placement.h"
#include "replay.h"
#include "schedule.h"
#include "schedule_fixtures.h"
#include "test_util.h"

static struct oc_layout uneven(int64_t pp, int64_t v, int64_t first, int64_t last)
{
    struct oc_layout l;
    oc_layout_default(&l);
    l.pp = pp;
    l.vchunks = v;
    l.schedule = OC_SCHED_INTERLEAVED;
    l.first_stage_layers = first;
    l.last_stage_layers = last;
    l.uneven_chunks = 1;
    l.global_batch = 2 * pp;
    l.seq_length = 16;
    return l;
}

static void expect_chunk(const struct oc_layout *l, const struct oc_model *m, int64_t stage,
                         int64_t chunk, int64_t first, int64_t count)
{
    const struct oc_layer_range r = oc_place_chunk_layers(l, m, stage, chunk);
    CU_ASSERT_EQUAL(r.first, first);
    CU_ASSERT_EQUAL(r.count, count);
}

/* 28 layers, pp4, v2, no first/last: 7 a stage, 3 + 4 on stage 0 (the
 * embedding's chunk 0 the lighter), 4 + 3 on the others (the head's chunk
 * 1 of stage 3 the lighter). Model order g = c*4 + i:
 *   round 0: s0 [0,3)  s1 [3,7)  s2 [7,11)  s3 [11,15)
 *   round 1: s0 [15,19) s1 [19,22) s2 [22,25) s3 [25,28) */
static void test_by_hand_28(void)
{
    struct oc_model m = oc_test_gpt("u28", 64, 4, 28, 256, 512, 128);
    struct oc_layout l = uneven(4, 2, 0, 0);
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_place_check_split(&l, &m, &st), st.msg);
    const int64_t first[2][4] = {{0, 3, 7, 11}, {15, 19, 22, 25}};
    const int64_t count[2][4] = {{3, 4, 4, 4}, {4, 3, 3, 3}};
    for (int64_t c = 0; c < 2; c++)
        for (int64_t i = 0; i < 4; i++)
            expect_chunk(&l, &m, i, c, first[c][i], count[c][i]);
    CU_ASSERT_EQUAL(oc_place_max_chunk_layers(&l, &m), 4);
    CU_ASSERT_EQUAL(oc_place_layer_chunk(&l, &m, 18).stage, 0);
    CU_ASSERT_EQUAL(oc_place_layer_chunk(&l, &m, 18).chunk, 1);
    CU_ASSERT_EQUAL(oc_place_layer_chunk(&l, &m, 19).stage, 1);
    /* without unevenv: Megatron-LM's rule */
    l.uneven_chunks = 0;
    const char *sub[] = {"not divisible by PP*v", NULL};
    oc_test_expect_fail(oc_place_check_split(&l, &m, &st), st.msg, sub);
}

/* Llama 3 405B's pipeline: 126 layers, pp16, v8, first7, last7 (the
 * middle 112/14 = 8). Stage 0: chunk 0 the embedding alone, chunks 1..7
 * a layer each; the middle stages a layer a chunk; stage 15: chunks 0..6
 * a layer each, chunk 7 the head alone. Round c (global chunks c*16 ..
 * c*16 + 15) holds 15 layers for c = 0 and 7, 16 between: it starts at
 * R(0) = 0, R(c) = 15 + 16 (c - 1); stage i's chunk c starts at i - 1 in
 * round 0 (stage 0 holds none there) and at R(c) + i after it; stage
 * 15's chunk 6 at 15 + 80 + 15 = 110, chunk 7 at 126 with none. */
static void test_llama3(void)
{
    struct oc_model m = oc_test_gpt("u126", 64, 4, 126, 256, 512, 128);
    struct oc_layout l = uneven(16, 8, 7, 7);
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_place_check_split(&l, &m, &st), st.msg);
    int64_t total = 0;
    for (int64_t c = 0; c < 8; c++)
        for (int64_t i = 0; i < 16; i++) {
            const struct oc_layer_range r = oc_place_chunk_layers(&l, &m, i, c);
            const int64_t want_first = c == 0 ? (i > 0 ? i - 1 : 0) : 15 + 16 * (c - 1) + i;
            const int64_t want_n = (i == 0 && c == 0) || (i == 15 && c == 7) ? 0 : 1;
            CU_ASSERT_EQUAL(r.first, want_first);
            CU_ASSERT_EQUAL(r.count, want_n);
            total += r.count;
        }
    CU_ASSERT_EQUAL(total, 126);
    expect_chunk(&l, &m, 15, 6, 110, 1);
    expect_chunk(&l, &m, 15, 7, 126, 0);
    CU_ASSERT_EQUAL(oc_place_max_chunk_layers(&l, &m), 1);
    CU_ASSERT(oc_place_holds_embed(&l, 0, 0) && oc_place_holds_head(&l, 15, 7));
    CU_ASSERT_EQUAL(oc_place_layer_chunk(&l, &m, 125).stage, 14);
    CU_ASSERT_EQUAL(oc_place_layer_chunk(&l, &m, 125).chunk, 7);
}

/* The rule: every chunk a layer but the embedding's and the head's. */
static void test_rule(void)
{
    struct oc_model m = oc_test_gpt("u8", 64, 4, 8, 256, 512, 128);
    struct oc_status st = {{0}};
    struct oc_layout l = uneven(4, 2, 1, 3); /* stage 0: the embedding alone + 1 */
    oc_test_expect_ok(oc_place_check_split(&l, &m, &st), st.msg);
    expect_chunk(&l, &m, 0, 0, 0, 0);
    expect_chunk(&l, &m, 0, 1, 4, 1);
    expect_chunk(&l, &m, 3, 0, 2, 2); /* round 0: s1 [0,1) s2 [1,2) s3 [2,4) */
    expect_chunk(&l, &m, 3, 1, 7, 1);
    l = uneven(4, 4, 1, 3); /* stage 0's 1 layer over 4 chunks */
    const char *few[] = {"stage 0's 1 layers leave a chunk of its v4", NULL};
    oc_test_expect_fail(oc_place_check_split(&l, &m, &st), st.msg, few);
    l = uneven(2, 4, 0, 0); /* 4 a stage over 4 chunks: even */
    oc_test_expect_ok(oc_place_check_split(&l, &m, &st), st.msg);
    l = uneven(2, 1, 0, 0);
    l.schedule = OC_SCHED_1F1B;
    const char *v1[] = {"unevenv", "v >= 2", NULL};
    oc_test_expect_fail(oc_place_check_split(&l, &m, &st), st.msg, v1);
    /* the layout string */
    struct oc_layout p;
    oc_layout_default(&p);
    CU_ASSERT_EQUAL_FATAL(oc_layout_parse(&p, "tp1-pp4-dp1-v2-unevenv", &st), 0);
    CU_ASSERT_EQUAL(p.uneven_chunks, 1);
    char buf[256];
    oc_layout_format(&p, buf, sizeof buf);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "-unevenv"));
}

/* The schedule on the 28-layer split: every layer's forward and backward
 * once per micro-batch on the stage that holds it, messages matched,
 * collectives alike, no deadlock; memory's per-chunk activations as the
 * chunks' layers say (stage 0's chunk 1 holds 4/3 of chunk 0's layers). */
static void test_schedule_memory(void)
{
    struct oc_model m = oc_test_gpt("u28", 64, 4, 28, 256, 512, 128);
    struct oc_layout l = uneven(4, 2, 0, 0);
    l.dp = 2;
    l.global_batch = 16;
    struct oc_schedule s;
    build(&s, &m, &l, OC_GRAIN_LAYER);
    CU_ASSERT(check_p2p(&s) > 0);
    CU_ASSERT(check_collectives(&s));
    CU_ASSERT(simulate(&s, 0));
    const int64_t nm = s.num_micro_batches;
    for (int64_t r = 0; r < s.nranks; r++) {
        const int64_t stage = oc_layout_coord(&l, r).pp;
        int64_t per_layer[28][2];
        memset(per_layer, 0, sizeof per_layer);
        const struct oc_rank_ops *ro = &s.ranks[r];
        for (int64_t k = 0; k < ro->n; k++) {
            const struct oc_op *o = &ro->ops[k];
            if (o->kind == OC_OP_COMPUTE && o->part == OC_PART_MLP && o->phase <= OC_PHASE_BWD)
                per_layer[o->layer_first][o->phase]++;
        }
        for (int64_t j = 0; j < 28; j++) {
            const struct oc_chunk_at at = oc_place_layer_chunk(&l, &m, j);
            const int64_t want = at.stage == stage ? nm : 0;
            CU_ASSERT_EQUAL(per_layer[j][0], want);
            CU_ASSERT_EQUAL(per_layer[j][1], want);
        }
    }
    oc_schedule_free(&s);
    build(&s, &m, &l, OC_GRAIN_CHUNK);
    CU_ASSERT(check_p2p(&s) > 0);
    CU_ASSERT(simulate(&s, 0));
    oc_schedule_free(&s);
    const double a0 = oc_mem_chunk_activation_bytes(&m, &l, 0, 0) -
                      oc_mem_embed_activation_bytes(&m, &l);
    const double a1 = oc_mem_chunk_activation_bytes(&m, &l, 0, 1);
    OC_ASSERT_REL(a1, a0 * 4.0 / 3.0, 1e-12);
}

/* The simulated step against the bound (a lower bound of it) on a
 * topology with a device's rates, both grains' fidelities. */
static void test_sim_bound(void)
{
    struct oc_model m = oc_test_gpt("u28", 64, 4, 28, 256, 512, 128);
    struct oc_layout l = uneven(4, 2, 0, 0);
    l.dp = 2;
    l.global_batch = 16;
    struct oc_topology t;
    memset(&t, 0, sizeof t);
    strcpy(t.name, "test");
    t.gpus_per_node = 4;
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
    t.nic_latency_s = 2e-6;
    t.inter_latency_s = 5e-7;
    t.switch_levels = 1;
    t.oversubscription = 1;
    struct oc_bound b;
    oc_bound_step(&m, &l, &t, &b);
    const enum oc_sim_fidelity fid[2] = {OC_SIM_FAST, OC_SIM_FULL};
    for (int i = 0; i < 2; i++) {
        struct oc_replay_opts o;
        memset(&o, 0, sizeof o);
        o.fidelity = fid[i];
        struct oc_metrics *mt = calloc(1, sizeof *mt);
        struct oc_status st = {{0}};
        CU_ASSERT_FATAL(mt != NULL);
        oc_test_expect_ok(oc_replay_run_forked(&m, &t, &l, &o, mt, 60.0, &st), st.msg);
        CU_ASSERT(b.step_s > 0 && b.step_s <= mt->step_time_s);
        free(mt);
    }
}

static CU_TestInfo tests[] = {
    {"by hand, 28 layers", test_by_hand_28},
    {"Llama 3 405B's split", test_llama3},
    {"rule", test_rule},
    {"schedule and memory", test_schedule_memory},
    {"simulation and bound", test_sim_bound},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"uneven_chunks", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
