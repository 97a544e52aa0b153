/* fuzz_layout.c: libFuzzer target of the compact layout string
 * (core/layout.c: oc_layout_parse, then oc_layout_validate and the rank
 * numbering of what it accepts).
 *
 * What it asserts: a parse that fails leaves the layout untouched and
 * names the problem in one clean line (fz_check_msg); one that succeeds
 * gives tp, pp, dp, mb, v >= 1 and enums in range, prints (oc_layout_format)
 * a string that parses back to the same tp, pp, dp, mb, schedule and v
 * (where the schedule and v agree: v > 1 exactly when interleaved), and
 * validates against the tiny model on h100-100g with cards = tp*pp*dp
 * and the model's full context (so that the rules past the sequence
 * length are reached) either with 0 or with a clean message; a valid layout numbers its ranks
 * one to one (oc_layout_coord / oc_layout_rank on the first and last).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "layout.h"

static struct oc_model model;
static struct oc_topology topo;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct oc_status st = {{0}};
    fz_init_known();
    if (oc_model_load("tiny", &model, &st) || oc_topology_load("h100-100g", &topo, &st))
        fz_fail("set-up: %s (set OCSIM_DATA_DIR to the source tree)", st.msg);
    return 0;
}

static void check_parsed(const struct oc_layout *l, const char *s)
{
    FZ_CHECK(l->tp >= 1 && l->pp >= 1 && l->dp >= 1 && l->micro_batch >= 1 &&
                 l->vchunks >= 1,
             "parse '%s' accepted tp%lld pp%lld dp%lld mb%lld v%lld", s,
             (long long)l->tp, (long long)l->pp, (long long)l->dp,
             (long long)l->micro_batch, (long long)l->vchunks);
    FZ_CHECK((unsigned)l->schedule <= OC_SCHED_INTERLEAVED &&
                 (unsigned)l->recompute <= OC_RECOMPUTE_FULL &&
                 (unsigned)l->order <= OC_ORDER_TP_PP_DP &&
                 (unsigned)l->precision <= OC_PREC_FP32,
             "parse '%s': an enum out of range", s);
    /* The printed form reads back as the same layout, where the schedule
     * and v agree (the string prints v only when interleaved, and "v1"
     * reads as 1f1b; oc_layout_validate refuses the others). */
    if ((l->schedule == OC_SCHED_INTERLEAVED) != (l->vchunks > 1))
        return;
    char buf[256];
    oc_layout_format(l, buf, sizeof buf);
    struct oc_layout back;
    struct oc_status st = {{0}};
    oc_layout_default(&back);
    FZ_CHECK(oc_layout_parse(&back, buf, &st) == 0, "'%s' printed as '%s', which fails: %s",
             s, buf, st.msg);
    FZ_CHECK(back.tp == l->tp && back.pp == l->pp && back.dp == l->dp &&
                 back.micro_batch == l->micro_batch && back.schedule == l->schedule &&
                 back.vchunks == l->vchunks,
             "'%s' printed as '%s' reads back as another layout", s, buf);
}

static void check_valid(const struct oc_layout *l, int64_t world)
{
    struct oc_coord c0 = oc_layout_coord(l, 0), cn = oc_layout_coord(l, world - 1);
    FZ_CHECK(oc_layout_rank(l, c0) == 0 && oc_layout_rank(l, cn) == world - 1,
             "rank numbering of a valid layout is not one to one");
    FZ_CHECK(oc_layout_num_micro_batches(l) >= 1, "a valid layout with no micro-batch");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    char *s = fz_text(data, n);
    struct oc_layout l, before;
    struct oc_status st = {{0}};
    oc_layout_default(&l);
    before = l;
    if (oc_layout_parse(&l, s, &st) != 0) {
        fz_check_msg("oc_layout_parse", &st, s);
        FZ_CHECK(memcmp(&l, &before, sizeof l) == 0, "a failed parse changed the layout");
        free(s);
        return 0;
    }
    check_parsed(&l, s);
    int64_t world, tpp;
    int overflow = __builtin_mul_overflow(l.tp, l.pp, &tpp) ||
                   __builtin_mul_overflow(tpp, l.dp, &world);
    if (!overflow || !fz_allowed("world-overflow")) {
        world = oc_layout_world(&l);
        l.seq_length = model.max_position_embeddings;
        if (oc_layout_validate(&l, &model, &topo, world, &st) != 0)
            fz_check_msg("oc_layout_validate", &st, s);
        else
            check_valid(&l, world);
    }
    free(s);
    return 0;
}
