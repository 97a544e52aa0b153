/* test_placement.c: where the model sits on the pipeline (core/placement.h)
 * with values worked by hand, the inverse functions against each other, and
 * the schedule's ops against the placement they should follow.
 *
 * The hand-worked case: tp1-pp4-dp1-v2 on a 16-layer model. p*v = 8 global
 * chunks of Lc = 16/8 = 2 layers; global chunk g = c*4 + i is chunk c of
 * stage i and holds layers [2g, 2g+2):
 *
 *   stage   chunk 0 (g, layers)   chunk 1 (g, layers)
 *   0       0: 0..1  + embedding  4: 8..9
 *   1       1: 2..3               5: 10..11
 *   2       2: 4..5               6: 12..13
 *   3       3: 6..7               7: 14..15 + head
 */
#include <string.h>

#include "layout.h"
#include "model.h"
#include "placement.h"
#include "schedule.h"
#include "test_util.h"

/* A small GPT-like model with `layers` layers (tied embeddings). */
static struct oc_model gpt(int64_t layers)
{
    struct oc_model m = {0};
    strcpy(m.name, "test");
    m.arch = OC_ARCH_GPT;
    m.hidden_size = 64;
    m.num_attention_heads = 4;
    m.num_key_value_heads = 4;
    m.num_hidden_layers = layers;
    m.intermediate_size = 256;
    m.vocab_size = 512;
    m.max_position_embeddings = 128;
    m.norm_params_per_h = 2;
    m.learned_pos_emb = 1;
    m.tie_word_embeddings = 1;
    return m;
}

static struct oc_layout layout(int64_t pp, int64_t v)
{
    struct oc_layout l;
    oc_layout_default(&l);
    l.pp = pp;
    l.vchunks = v;
    l.schedule = v > 1 ? OC_SCHED_INTERLEAVED : OC_SCHED_1F1B;
    l.global_batch = 2 * pp;
    l.seq_length = 16;
    return l;
}

static void test_pp4_v2_by_hand(void)
{
    const struct oc_model m = gpt(16);
    const struct oc_layout l = layout(4, 2);
    CU_ASSERT_EQUAL(oc_place_chunks_per_stage(&l), 2);
    CU_ASSERT_EQUAL(oc_place_global_chunks(&l), 8);
    CU_ASSERT_EQUAL(oc_place_global_chunk(&l, 1, 1), 5);
    CU_ASSERT_EQUAL(oc_place_global_chunk(&l, 3, 0), 3);
    CU_ASSERT_EQUAL(oc_place_global_chunk(&l, 0, 1), 4);

    struct oc_layer_range r = oc_place_chunk_layers(&l, &m, 1, 1);
    CU_ASSERT_EQUAL(r.first, 10);
    CU_ASSERT_EQUAL(r.count, 2);
    r = oc_place_chunk_layers(&l, &m, 0, 1);
    CU_ASSERT_EQUAL(r.first, 8);
    r = oc_place_chunk_layers(&l, &m, 3, 1);
    CU_ASSERT_EQUAL(r.first, 14);
    CU_ASSERT_EQUAL(r.count, 2);

    struct oc_chunk_at at = oc_place_chunk_at(&l, 6);
    CU_ASSERT_EQUAL(at.stage, 2);
    CU_ASSERT_EQUAL(at.chunk, 1);
    at = oc_place_layer_chunk(&l, &m, 13); /* g 6 */
    CU_ASSERT_EQUAL(at.stage, 2);
    CU_ASSERT_EQUAL(at.chunk, 1);
    at = oc_place_layer_chunk(&l, &m, 7); /* g 3 */
    CU_ASSERT_EQUAL(at.stage, 3);
    CU_ASSERT_EQUAL(at.chunk, 0);

    at = oc_place_embed(&l);
    CU_ASSERT_EQUAL(at.stage, 0);
    CU_ASSERT_EQUAL(at.chunk, 0);
    at = oc_place_head(&l);
    CU_ASSERT_EQUAL(at.stage, 3);
    CU_ASSERT_EQUAL(at.chunk, 1);
    CU_ASSERT(oc_place_holds_embed(&l, 0, 0));
    CU_ASSERT(!oc_place_holds_embed(&l, 0, 1)); /* g 4: layers 8..9 only */
    CU_ASSERT(oc_place_holds_head(&l, 3, 1));
    CU_ASSERT(!oc_place_holds_head(&l, 3, 0)); /* g 3: layers 6..7 only */
    CU_ASSERT(!oc_place_holds_head(&l, 1, 1));

    CU_ASSERT(oc_place_stage_has_embed(&l, 0));
    CU_ASSERT(!oc_place_stage_has_embed(&l, 3));
    CU_ASSERT(oc_place_stage_has_head(&l, 3));
    CU_ASSERT(!oc_place_stage_has_head(&l, 2));
    CU_ASSERT_EQUAL(oc_place_stage_extra_chunk(&l, 0), 0);
    CU_ASSERT_EQUAL(oc_place_stage_extra_chunk(&l, 3), 1);
    CU_ASSERT_EQUAL(oc_place_stage_extra_chunk(&l, 1), -1);

    int64_t stages[2] = {-1, -1};
    CU_ASSERT_EQUAL(oc_place_embed_group_stages(&l, stages), 2);
    CU_ASSERT_EQUAL(stages[0], 0);
    CU_ASSERT_EQUAL(stages[1], 3);
    CU_ASSERT(oc_place_tied_allreduce(&l, &m, 0));
    CU_ASSERT(oc_place_tied_allreduce(&l, &m, 3));
    CU_ASSERT(!oc_place_tied_allreduce(&l, &m, 1));
    struct oc_model untied = m;
    untied.tie_word_embeddings = 0;
    CU_ASSERT(!oc_place_tied_allreduce(&l, &untied, 0));
    CU_ASSERT(!oc_place_tied_allreduce(&l, &untied, 3));
}

/* Without interleaving stage i holds layers [i*L/p, (i+1)*L/p); one stage
 * holds everything, and the tied embedding needs no all-reduce. */
static void test_one_chunk_per_stage(void)
{
    const struct oc_model m = gpt(6);
    const struct oc_layout l = layout(2, 1);
    struct oc_layer_range r = oc_place_chunk_layers(&l, &m, 1, 0);
    CU_ASSERT_EQUAL(r.first, 3);
    CU_ASSERT_EQUAL(r.count, 3);
    struct oc_chunk_at h = oc_place_head(&l);
    CU_ASSERT_EQUAL(h.stage, 1);
    CU_ASSERT_EQUAL(h.chunk, 0);
    CU_ASSERT_EQUAL(oc_place_stage_extra_chunk(&l, 1), 0);

    const struct oc_layout one = layout(1, 1);
    h = oc_place_head(&one);
    CU_ASSERT_EQUAL(h.stage, 0);
    CU_ASSERT_EQUAL(h.chunk, 0);
    CU_ASSERT(oc_place_holds_embed(&one, 0, 0) && oc_place_holds_head(&one, 0, 0));
    r = oc_place_chunk_layers(&one, &m, 0, 0);
    CU_ASSERT_EQUAL(r.first, 0);
    CU_ASSERT_EQUAL(r.count, 6);
    int64_t stages[2] = {-1, -1};
    CU_ASSERT_EQUAL(oc_place_embed_group_stages(&one, stages), 1);
    CU_ASSERT_EQUAL(stages[0], 0);
    CU_ASSERT(!oc_place_tied_allreduce(&one, &m, 0));
    CU_ASSERT_EQUAL(oc_place_stage_extra_chunk(&one, 0), 0);
}

/* Every layer is held by exactly one (stage, chunk), and the inverse
 * functions undo the forward ones. */
static void test_every_layer_once(void)
{
    static const int64_t pvs[][2] = {{1, 1}, {2, 1}, {3, 1}, {2, 2}, {4, 2},
                                     {3, 4}, {8, 4}, {5, 3}};
    for (size_t k = 0; k < sizeof pvs / sizeof pvs[0]; k++) {
        const int64_t p = pvs[k][0], v = pvs[k][1], L = 2 * p * v;
        const struct oc_model m = gpt(L);
        const struct oc_layout l = layout(p, v);
        int held[64] = {0};
        int embeds = 0, heads = 0;
        for (int64_t i = 0; i < p; i++)
            for (int64_t c = 0; c < v; c++) {
                const int64_t g = oc_place_global_chunk(&l, i, c);
                const struct oc_chunk_at at = oc_place_chunk_at(&l, g);
                CU_ASSERT(at.stage == i && at.chunk == c);
                const struct oc_layer_range r = oc_place_chunk_layers(&l, &m, i, c);
                CU_ASSERT_EQUAL(r.count, 2);
                for (int64_t j = r.first; j < r.first + r.count; j++) {
                    held[j]++;
                    const struct oc_chunk_at back = oc_place_layer_chunk(&l, &m, j);
                    CU_ASSERT(back.stage == i && back.chunk == c);
                }
                embeds += oc_place_holds_embed(&l, i, c);
                heads += oc_place_holds_head(&l, i, c);
            }
        for (int64_t j = 0; j < L; j++)
            CU_ASSERT_EQUAL(held[j], 1);
        CU_ASSERT_EQUAL(embeds, 1);
        CU_ASSERT_EQUAL(heads, 1);
    }
}

/* The schedule follows the placement: tp1-pp4-dp1-v2 on 16 layers, the
 * compute ops of stage 1's chunk 1 cover layers 10..11 only, the head's
 * ops run on stage 3 chunk 1, the embedding's on stage 0 chunk 0, and the
 * tied embedding's all-reduce is on stages 0 (chunk 0) and 3 (chunk 1). */
static void test_schedule_follows(void)
{
    const struct oc_model m = gpt(16);
    struct oc_layout l = layout(4, 2);
    l.global_batch = 8;
    l.recompute = OC_RECOMPUTE_NONE; /* no recompute ops to count */
    struct oc_schedule s;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_schedule_build(&s, &m, &l, NULL, &st), 0);
    int64_t layers_seen = 0, heads = 0, embeds = 0, tied = 0;
    for (int64_t r = 0; r < s.nranks; r++)
        for (int64_t i = 0; i < s.ranks[r].n; i++) {
            const struct oc_op *o = &s.ranks[r].ops[i];
            if (o->kind == OC_OP_COMPUTE && o->stage == 1 && o->chunk == 1 &&
                o->layer_first >= 0) {
                CU_ASSERT(o->layer_first == 10 || o->layer_first == 11);
                layers_seen++;
            }
            if (o->kind == OC_OP_COMPUTE && o->part == OC_PART_HEAD) {
                CU_ASSERT(o->stage == 3 && o->chunk == 1);
                heads++;
            }
            if (o->kind == OC_OP_COMPUTE && o->part == OC_PART_EMBED) {
                CU_ASSERT(o->stage == 0 && o->chunk == 0);
                embeds++;
            }
            if (o->kind == OC_OP_COLLECTIVE && o->group == OC_GROUP_EMBED) {
                CU_ASSERT((o->stage == 0 && o->chunk == 0) ||
                          (o->stage == 3 && o->chunk == 1));
                tied++;
            }
        }
    /* 8 micro-batches: forward and backward of 2 layers' attention and MLP */
    CU_ASSERT_EQUAL(layers_seen, 8 * 2 * 2 * 2);
    CU_ASSERT_EQUAL(heads, 8 * 2);
    CU_ASSERT_EQUAL(embeds, 8 * 2);
    CU_ASSERT_EQUAL(tied, 2);
    oc_schedule_free(&s);
}

/* The chunks the schedule interleaves (what reports/ draws and the bubble
 * counts): v only under the interleaved schedule, while
 * oc_place_chunks_per_stage counts v whatever the schedule. */
static void test_interleaved_chunks(void)
{
    struct oc_layout l = layout(2, 1);
    l.vchunks = 3; /* 1F1B with v3: oc_layout_validate refuses it */
    CU_ASSERT_EQUAL(oc_place_interleaved_chunks(&l), 1);
    CU_ASSERT_EQUAL(oc_place_chunks_per_stage(&l), 3);
    l.schedule = OC_SCHED_INTERLEAVED;
    CU_ASSERT_EQUAL(oc_place_interleaved_chunks(&l), 3);
}

static CU_TestInfo tests[] = {
    {"pp4 v2 on 16 layers, by hand", test_pp4_v2_by_hand},
    {"one chunk per stage, one stage", test_one_chunk_per_stage},
    {"every layer held once", test_every_layer_once},
    {"the schedule follows the placement", test_schedule_follows},
    {"chunks the schedule interleaves", test_interleaved_chunks},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"placement", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
