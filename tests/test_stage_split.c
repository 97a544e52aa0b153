/* test_stage_split.c: uneven pipeline stages (first<N>/last<N>): which
 * layers each stage and chunk holds (core/placement.h), the split rule,
 * memory per stage (core/memory.h), the split options (core/stage_split.h)
 * and the enumeration's candidates (core/layout.h), with values worked by
 * hand.
 *
 * Hand-worked placement: 80 layers on pp12 with first5 and last5: the ten
 * middle stages split 80 - 10 = 70 evenly, 7 each; stage i (1..10) starts
 * at 5 + 7*(i-1), the last stage at 75. And 16 layers on pp4-v2 with
 * first2 and last2: the middle stages hold 6 each, 3 per chunk, stage 0
 * and 3 one per chunk; a round of chunks holds 16/2 = 8 layers:
 *
 *   stage  chunk 0 (layers)  chunk 1 (layers)
 *   0      0                 8
 *   1      1..3              9..11
 *   2      4..6              12..14
 *   3      7                 15
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "layout.h"
#include "memory.h"
#include "model.h"
#include "placement.h"
#include "search.h"
#include "stage_split.h"
#include "test_util.h"
#include "topology.h"

static struct oc_layout pp_layout(int64_t p, int64_t v, int64_t first, int64_t last)
{
    struct oc_layout l = oc_test_layout(1, p, 1, 1, 8 * p, 16);
    l.vchunks = v;
    l.cp = 1;
    l.schedule = v > 1 ? OC_SCHED_INTERLEAVED : OC_SCHED_1F1B;
    l.first_stage_layers = first;
    l.last_stage_layers = last;
    return l;
}

static void test_pp12_first5_last5(void)
{
    struct oc_model m = oc_test_gpt("g80", 64, 4, 80, 256, 512, 128);
    struct oc_layout l = pp_layout(12, 1, 5, 5);
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_place_check_split(&l, &m, &st), st.msg);
    CU_ASSERT_EQUAL(oc_place_stage_layers(&l, &m, 0), 5);
    for (int64_t i = 1; i <= 10; i++) {
        CU_ASSERT_EQUAL(oc_place_stage_layers(&l, &m, i), 7);
        const struct oc_layer_range r = oc_place_chunk_layers(&l, &m, i, 0);
        CU_ASSERT_EQUAL(r.first, 5 + 7 * (i - 1));
        CU_ASSERT_EQUAL(r.count, 7);
    }
    CU_ASSERT_EQUAL(oc_place_stage_layers(&l, &m, 11), 5);
    CU_ASSERT_EQUAL(oc_place_chunk_layers(&l, &m, 11, 0).first, 75);
    CU_ASSERT_EQUAL(oc_place_max_stage_layers(&l, &m), 7);
    /* layer 74 is the last of stage 10 (68..74), 75 the first of 11 */
    CU_ASSERT_EQUAL(oc_place_layer_chunk(&l, &m, 74).stage, 10);
    CU_ASSERT_EQUAL(oc_place_layer_chunk(&l, &m, 75).stage, 11);
    CU_ASSERT_EQUAL(oc_place_layer_chunk(&l, &m, 4).stage, 0);
    CU_ASSERT_EQUAL(oc_place_layer_chunk(&l, &m, 5).stage, 1);
    /* first3 alone: the other 11 stages split 77, 7 each (the last stage
     * is one of them) */
    l = pp_layout(12, 1, 3, 0);
    oc_test_expect_ok(oc_place_check_split(&l, &m, &st), st.msg);
    CU_ASSERT_EQUAL(oc_place_stage_layers(&l, &m, 0), 3);
    CU_ASSERT_EQUAL(oc_place_stage_layers(&l, &m, 11), 7);
}

static void test_pp4_v2_uneven(void)
{
    struct oc_model m = oc_test_gpt("g16", 64, 4, 16, 256, 512, 128);
    struct oc_layout l = pp_layout(4, 2, 2, 2);
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_place_check_split(&l, &m, &st), st.msg);
    const int64_t first[4][2] = {{0, 8}, {1, 9}, {4, 12}, {7, 15}};
    const int64_t count[4] = {1, 3, 3, 1};
    for (int64_t i = 0; i < 4; i++)
        for (int64_t c = 0; c < 2; c++) {
            const struct oc_layer_range r = oc_place_chunk_layers(&l, &m, i, c);
            CU_ASSERT_EQUAL(r.first, first[i][c]);
            CU_ASSERT_EQUAL(r.count, count[i]);
        }
    /* every layer in exactly one chunk, and oc_place_layer_chunk agrees */
    int seen[16] = {0};
    for (int64_t i = 0; i < 4; i++)
        for (int64_t c = 0; c < 2; c++) {
            const struct oc_layer_range r = oc_place_chunk_layers(&l, &m, i, c);
            for (int64_t j = r.first; j < r.first + r.count; j++) {
                seen[j]++;
                const struct oc_chunk_at at = oc_place_layer_chunk(&l, &m, j);
                CU_ASSERT(at.stage == i && at.chunk == c);
            }
        }
    for (int j = 0; j < 16; j++)
        CU_ASSERT_EQUAL(seen[j], 1);
}

static void test_split_rule(void)
{
    struct oc_model m = oc_test_gpt("g8", 64, 4, 8, 256, 512, 128);
    struct oc_status st = {{0}};
    struct oc_layout l = pp_layout(1, 1, 3, 0);
    const char *pp1[] = {"need PP >= 2", NULL};
    oc_test_expect_fail(oc_place_check_split(&l, &m, &st), st.msg, pp1);
    l = pp_layout(4, 1, 1, 2);
    const char *rest[] = {"the 5 layers left by first1 and last2", "2 other stages", NULL};
    oc_test_expect_fail(oc_place_check_split(&l, &m, &st), st.msg, rest);
    l = pp_layout(2, 1, 3, 3);
    const char *sum[] = {"with PP 2, first3 + last3 must be the 8 layers", NULL};
    oc_test_expect_fail(oc_place_check_split(&l, &m, &st), st.msg, sum);
    l = pp_layout(4, 2, 1, 3); /* 1 and 3 are not multiples of v = 2 */
    const char *v[] = {"multiple of 2", NULL};
    oc_test_expect_fail(oc_place_check_split(&l, &m, &st), st.msg, v);
    l = pp_layout(3, 1, 7, 1); /* nothing left for the middle stage */
    const char *none[] = {"leave 0 of the 8 layers", NULL};
    oc_test_expect_fail(oc_place_check_split(&l, &m, &st), st.msg, none);
    l = pp_layout(3, 1, 0, 0); /* 8 % 3 */
    const char *even[] = {"num_hidden_layers 8 is not divisible by PP 3", NULL};
    oc_test_expect_fail(oc_place_check_split(&l, &m, &st), st.msg, even);
    /* and oc_layout_validate says the same */
    l = pp_layout(4, 1, 1, 3);
    oc_test_expect_ok(oc_layout_validate(&l, &m, NULL, 4, &st), st.msg);
    l.last_stage_layers = 2;
    CU_ASSERT_EQUAL(oc_layout_validate(&l, &m, NULL, 4, &st), -1);
    oc_test_msg_has(st.msg, "do not split evenly");
}

/* Korthikanti et al. 2022, section 4.1: a GPT layer without parallelism or
 * recompute keeps s*b*h*(34 + 5*a*s/h) bytes (16-bit, 1-byte masks). The
 * tiny GPT (h 64, a 4) at s 16, b 1: 16*64*(34 + 5*4*16/64) = 1024*39 =
 * 39 936 bytes. tp1-pp4-dp1-first1-last3, m = 8: stages hold 1, 2, 2, 3
 * layers; under 1F1B stage i keeps min(p-i, m) micro-batches:
 *   stage 0: 4 * (1 * 39 936 + the embedding's dropout mask s*b*h = 1024)
 *          = 163 840
 *   stage 1: 3 * 2 * 39 936 = 239 616
 *   stage 2: 2 * 2 * 39 936 = 159 744
 *   stage 3: 1 * (3 * 39 936 + 2*2*s*b*h = 4096) = 123 904, and the fp32
 *            logits 4*s*b*V = 4*16*512 = 32 768
 * Parameters: 12h^2 + 13h = 49 984 per layer; stage 1 holds 2 layers,
 * stage 0 one plus the V*h + P*h = 40 960 of the embeddings, stage 3 three
 * plus the final norm 2h = 128 and the tied head's copy V*h = 32 768. */
static void test_memory_by_stage(void)
{
    struct oc_model m = oc_test_gpt("tiny", 64, 4, 8, 256, 512, 128);
    struct oc_layout l = pp_layout(4, 1, 1, 3);
    const double act[4] = {163840, 239616, 159744, 123904};
    const int64_t params[4] = {49984 + 40960, 2 * 49984, 2 * 49984,
                               3 * 49984 + 128 + 32768};
    CU_ASSERT_EQUAL(oc_model_layer_params(&m), 49984);
    for (int64_t i = 0; i < 4; i++) {
        struct oc_mem_breakdown b;
        oc_memory_stage(&m, &l, i, &b);
        OC_ASSERT_REL(b.activations_bytes, act[i], 1e-12);
        CU_ASSERT_EQUAL(b.params, params[i]);
        CU_ASSERT_EQUAL(oc_mem_stage_params(&m, &l, i), params[i]);
        OC_ASSERT_REL(b.logits_bytes, i == 3 ? 32768.0 : 0.0, 1e-12);
    }
    /* per chunk (the schedule's ALLOC size): stage 3's chunk holds 3
     * layers and the head's 4096 */
    OC_ASSERT_REL(oc_mem_chunk_activation_bytes(&m, &l, 3, 0), 3 * 39936.0 + 4096, 1e-12);
}

/* Every option legal, at most OC_SPLIT_MAX, none twice. */
static void check_options(const struct oc_model *m, const struct oc_layout *base,
                          const int64_t *f, const int64_t *e, int n)
{
    CU_ASSERT(n >= 1 && n <= OC_SPLIT_MAX);
    for (int i = 0; i < n; i++) {
        struct oc_layout l = *base;
        l.first_stage_layers = f[i];
        l.last_stage_layers = e[i];
        struct oc_status st = {{0}};
        oc_test_expect_ok(oc_place_check_split(&l, m, &st), st.msg);
        for (int j = 0; j < i; j++)
            CU_ASSERT(f[i] != f[j] || e[i] != e[j]);
    }
}

/* Without a topology the cost option weighs by FLOPs (stage_split.h). A GPT
 * of h 64, f 4h at s 16, b 1: a layer's forward is 24bsh^2 + 4bs^2h =
 * 1 572 864 + 65 536 = 1 638 400 FLOPs; a vocabulary of 1600 makes the
 * head's 2bshV = 3 276 800 exactly two layers (backward twice each, no
 * recompute). 22 layers on pp4 (no even split): stage times f, k, k, e + 2
 * with f + 2k + e = 22; a most of M needs 22 <= 4M - 2, so M = 6, reached
 * only by f = 6, k = 6, e = 4: the option (first0, last4) (first equals
 * the middle's). Megatron's embedding and loss as a layer each: f + 1, k,
 * e + 1, again M = 6 only at 5, 6, 6, 5, that is (5, 5) = (22 + 2)/4 - 1
 * on the first and last stage. The memory option comes third. */
static void test_options_by_hand(void)
{
    struct oc_model m = oc_test_gpt("g22", 64, 4, 22, 256, 1600, 128);
    struct oc_layout l = pp_layout(4, 1, 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(oc_model_layer_fwd_flops(&m, 1, 16), 1638400.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(oc_model_head_fwd_flops(&m, 1, 16), 2 * 1638400.0, 1e-6);
    int64_t f[OC_SPLIT_MAX], e[OC_SPLIT_MAX];
    int n = oc_stage_split_options(&m, &l, f, e, OC_SPLIT_MAX);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT(f[0] == 0 && e[0] == 4);
    CU_ASSERT(f[1] == 5 && e[1] == 5);
    check_options(&m, &l, f, e, n);
    /* the memory option's peak is the lowest of the three */
    double peak[3];
    for (int i = 0; i < 3; i++) {
        struct oc_layout x = l;
        x.first_stage_layers = f[i];
        x.last_stage_layers = e[i];
        peak[i] = oc_memory_peak(&m, &x, NULL);
    }
    CU_ASSERT(peak[2] <= peak[0] && peak[2] <= peak[1]);

    /* 24 layers on pp4: the even split first; cap 1 keeps only it */
    m.num_hidden_layers = 24;
    n = oc_stage_split_options(&m, &l, f, e, OC_SPLIT_MAX);
    CU_ASSERT(n >= 1 && f[0] == 0 && e[0] == 0);
    check_options(&m, &l, f, e, n);
    CU_ASSERT_EQUAL(oc_stage_split_options(&m, &l, f, e, 1), 1);
    /* v2: every option's stages hold multiples of 2 (checked by
     * oc_place_check_split); 22 layers on pp4-v2 */
    m.num_hidden_layers = 22;
    l = pp_layout(4, 2, 0, 0);
    n = oc_stage_split_options(&m, &l, f, e, OC_SPLIT_MAX);
    CU_ASSERT(n >= 1);
    check_options(&m, &l, f, e, n);
    /* PP 1: the even split only; more stages than layers: none */
    l = pp_layout(1, 1, 0, 0);
    CU_ASSERT_EQUAL(oc_stage_split_options(&m, &l, f, e, OC_SPLIT_MAX), 1);
    m.num_hidden_layers = 3;
    l = pp_layout(4, 1, 0, 0);
    CU_ASSERT_EQUAL(oc_stage_split_options(&m, &l, f, e, OC_SPLIT_MAX), 0);
}

/* Llama 2 70B (80 layers) on tp2-pp12-dp2 with the H100 topology: no even
 * split. A most of 7 layers on a stage needs the ten middle stages at 7
 * (k = 6 leaves 20 for two stages), so the first and last share 10; the
 * LM head (2*h*V = 2*8192*32000 FLOPs a token, about a third of a layer's)
 * and the embedding are each less than a layer, so the flattest is 5 and
 * 5: the cost option is first5-last5, the layout `ocsim sweep --cards 48`
 * chooses. */
static void test_options_70b(void)
{
    struct oc_model m;
    struct oc_topology t;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_model_load("llama2-70b", &m, &st), 0);
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("h100-100g", &t, &st), 0);
    struct oc_layout l;
    oc_layout_default(&l);
    l.tp = 2;
    l.pp = 12;
    l.dp = 2;
    int64_t f[OC_SPLIT_MAX], e[OC_SPLIT_MAX];
    const int n = oc_stage_split_options_on(&m, &l, &t, f, e, OC_SPLIT_MAX);
    CU_ASSERT_FATAL(n >= 1);
    CU_ASSERT(f[0] == 5 && e[0] == 5);
    check_options(&m, &l, f, e, n);
    l.first_stage_layers = f[0];
    l.last_stage_layers = e[0];
    oc_test_expect_ok(oc_layout_validate(&l, &m, &t, 48, &st), st.msg);
    CU_ASSERT(oc_memory_peak(&m, &l, NULL) <= t.device.memory_bytes);
}

/* The case: Llama 2 70B on 48 cards, global batch 512. With even
 * stages only no layout is legal (PP must divide 80 and DP 512, and 48 =
 * 16 * 3 puts the 3 in PP or DP); with the splits every legal one is
 * uneven; with a 5 % batch tolerance and even stages the layouts run a
 * batch within 5 % of 512 (DP 3: 513). */
static void test_enumerate_48(void)
{
    struct oc_model m;
    struct oc_topology t;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_model_load("llama2-70b", &m, &st), 0);
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("h100-100g", &t, &st), 0);
    struct oc_layout base;
    oc_layout_default(&base);
    base.seq_length = 4096;
    const int64_t mbs[] = {1, 2};
    const enum oc_schedule_kind sch[] = {OC_SCHED_1F1B, OC_SCHED_INTERLEAVED};
    const int64_t vs[] = {1, 2};
    struct oc_enum_opts o = {.cards = 48, .base = base, .micro_batches = mbs,
                             .n_micro_batches = 2, .schedules = sch, .vchunks = vs,
                             .n_schedules = 2, .even_stages = 1};
    struct oc_candidate *c = NULL;
    int64_t n = oc_layout_enumerate(&o, &m, &t, &c);
    int64_t valid = 0;
    for (int64_t i = 0; i < n; i++)
        valid += c[i].valid;
    CU_ASSERT_EQUAL(valid, 0);
    free(c);

    o.even_stages = 0;
    n = oc_layout_enumerate(&o, &m, &t, &c);
    valid = 0;
    int64_t fit = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!c[i].valid)
            continue;
        valid++;
        CU_ASSERT(oc_place_uneven(&c[i].layout));
        fit += oc_memory_peak(&m, &c[i].layout, NULL) <= t.device.memory_bytes;
    }
    CU_ASSERT(valid > 0);
    CU_ASSERT(fit > 0);
    free(c);

    o.even_stages = 1;
    o.batch_tolerance = 0.05;
    n = oc_layout_enumerate(&o, &m, &t, &c);
    valid = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!c[i].valid)
            continue;
        valid++;
        const int64_t g = c[i].layout.global_batch;
        CU_ASSERT(g != 512 && llabs(g - 512) <= 25);
        CU_ASSERT_EQUAL(g, oc_batch_nearest(&c[i].layout, 512, 0.05));
        if (c[i].layout.dp == 3 && c[i].layout.micro_batch == 1 &&
            c[i].layout.schedule == OC_SCHED_1F1B)
            CU_ASSERT_EQUAL(g, 513);
    }
    CU_ASSERT(valid > 0);
    free(c);
}

/* Memory and the split options do not depend on what was asked before
 * (core/memory.c keeps the interleaved peak's walks by their inputs, and
 * the sweep asks the ZeRO and overlap variants of a layout one after the
 * other): the valid candidates of a search (interleaved at every depth the
 * layers allow, every knob), in the enumeration's order, in reverse and
 * with a stride, give every stage the same bytes, bit for bit, and the
 * same options;
 * and the first option asked alone (cap 1, search.c's structural test) is
 * the first of all of them. */
static void test_order_free(void)
{
    struct oc_model m;
    struct oc_topology t;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_model_load("llama2-13b", &m, &st), 0);
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("h100-100g", &t, &st), 0);
    struct oc_layout b;
    oc_layout_default(&b);
    b.global_batch = 64;
    b.seq_length = 2048;
    struct oc_search_space s;
    oc_search_space_default(&s, 16, &b);
    struct oc_candidate *c = NULL;
    const int64_t n = oc_search_enumerate(&s, &m, &t, &c, NULL);
    struct oc_layout *lay = calloc((size_t)n + 1, sizeof *lay);
    int64_t k = 0, inter = 0;
    for (int64_t i = 0; i < n; i++)
        if (c[i].valid) {
            lay[k++] = c[i].layout;
            inter += c[i].layout.schedule == OC_SCHED_INTERLEAVED;
        }
    CU_ASSERT_TRUE_FATAL(k > 1000 && inter > 100);
    /* every stage's bytes (the walk differs per stage: its warm-up) */
    int64_t *at = calloc((size_t)k + 1, sizeof *at);
    for (int64_t i = 0; i < k; i++)
        at[i + 1] = at[i] + lay[i].pp;
    double *mem = calloc((size_t)at[k], sizeof *mem);
    int64_t (*f)[OC_SPLIT_MAX] = calloc((size_t)k + 1, sizeof *f);
    int64_t (*e)[OC_SPLIT_MAX] = calloc((size_t)k + 1, sizeof *e);
    int *no = calloc((size_t)k + 1, sizeof *no);
    for (int64_t i = 0; i < k; i++) {
        for (int64_t j = 0; j < lay[i].pp; j++) {
            struct oc_mem_breakdown mb;
            oc_memory_stage(&m, &lay[i], j, &mb);
            mem[at[i] + j] = mb.total_bytes;
        }
        no[i] = oc_stage_split_options_on(&m, &lay[i], &t, f[i], e[i], OC_SPLIT_MAX);
    }
    int64_t bad = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int64_t j = 0; j < (pass ? 7 : 1); j++)
            for (int64_t q = j; q < k; q += pass ? 7 : 1) {
                const int64_t i = pass ? q : k - 1 - q;
                int64_t f2[OC_SPLIT_MAX], e2[OC_SPLIT_MAX], f1, e1;
                for (int64_t y = 0; y < lay[i].pp; y++) {
                    const int64_t x = pass ? y : lay[i].pp - 1 - y; /* stages reversed too */
                    struct oc_mem_breakdown mb;
                    oc_memory_stage(&m, &lay[i], x, &mb);
                    bad += memcmp(&mb.total_bytes, &mem[at[i] + x], sizeof mb.total_bytes) != 0;
                }
                const int n2 = oc_stage_split_options_on(&m, &lay[i], &t, f2, e2, OC_SPLIT_MAX);
                bad += n2 != no[i];
                for (int o = 0; o < n2 && n2 == no[i]; o++)
                    bad += f2[o] != f[i][o] || e2[o] != e[i][o];
                const int n1 = oc_stage_split_options_on(&m, &lay[i], &t, &f1, &e1, 1);
                bad += n1 != (no[i] > 0) || (n1 && (f1 != f[i][0] || e1 != e[i][0]));
            }
    CU_ASSERT_EQUAL(bad, 0);
    free(no);
    free(e);
    free(f);
    free(mem);
    free(at);
    free(lay);
    free(c);
}

static CU_TestInfo tests[] = {
    {"pp12_first5_last5", test_pp12_first5_last5},
    {"pp4_v2_uneven", test_pp4_v2_uneven},
    {"split_rule", test_split_rule},
    {"memory_by_stage", test_memory_by_stage},
    {"options_by_hand", test_options_by_hand},
    {"options_70b", test_options_70b},
    {"enumerate_48", test_enumerate_48},
    {"order_free", test_order_free},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"stage_split", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
