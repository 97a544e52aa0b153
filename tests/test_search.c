/* test_search.c: the knob space of `ocsim sweep` (core/search.h): its size
 * worked by hand on a small case, the no-op variants it skips, fixed knobs,
 * and that no two candidates denote one run (distinct labels). The model
 * and topology are filled in code. */
#include <stdlib.h>
#include <string.h>

#include "memory.h"
#include "reserve.h"
#include "search.h"
#include "test_util.h"

/* 8 layers, 4 heads, untied embeddings: small enough to count by hand. */
static struct oc_model small(void)
{
    struct oc_model m = {0};
    strcpy(m.name, "small");
    m.arch = OC_ARCH_LLAMA;
    m.hidden_size = 64;
    m.num_attention_heads = 4;
    m.num_key_value_heads = 4;
    m.num_hidden_layers = 8;
    m.intermediate_size = 256;
    m.vocab_size = 512;
    m.max_position_embeddings = 128;
    m.gated_mlp = 1;
    m.norm_params_per_h = 1;
    m.tie_word_embeddings = 0;
    return m;
}

static struct oc_topology node8(void)
{
    struct oc_topology t = {0};
    t.gpus_per_node = 8;
    t.device.memory_bytes = 80e9;
    t.intra_bandwidth_Bps = 450e9;
    t.nics_per_node = 8;
    t.nic_bandwidth_Bps = 50e9;
    return t;
}

static struct oc_search_space space(int64_t cards)
{
    struct oc_layout b;
    oc_layout_default(&b);
    b.global_batch = 16;
    b.seq_length = 128;
    struct oc_search_space s;
    oc_search_space_default(&s, cards, &b);
    s.micro_batches[0] = 1;
    s.n_micro_batches = 1;
    s.max_cp = 1;
    return s;
}

static int labels_distinct(const struct oc_candidate *c, int64_t n)
{
    char (*lab)[192] = calloc((size_t)n + 1, sizeof *lab);
    for (int64_t i = 0; i < n; i++)
        oc_layout_format(&c[i].layout, lab[i], sizeof lab[i]);
    qsort(lab, (size_t)n, sizeof *lab, (int (*)(const void *, const void *))strcmp);
    int ok = 1;
    for (int64_t i = 1; i < n; i++)
        if (strcmp(lab[i - 1], lab[i]) == 0) {
            fprintf(stderr, "twice: %s\n", lab[i]);
            ok = 0;
        }
    free(lab);
    return ok;
}

/* 2 cards in one node, micro-batch 1, cp 1. By hand:
 *   (tp, pp, dp) = (1,1,2), (1,2,1), (2,1,1);
 *   schedules: p = 1 only 1f1b (interleaved v = 2, 4, 8 are 3 no-ops each);
 *     p = 2: 1f1b, v2, v4 (8 layers divide 2v);
 *   recompute: none, sel, full + rfull k for k in {L/4, L/2, 3L/4} of the
 *     smallest chunk, distinct, in [1, L-1]: chunk of 8 -> 6 options, of 4
 *     -> 6 (k 1, 2, 3), of 2 -> 4 (k 1), of 1 -> 3;
 *   (1,1,2): sp 1 (t = 1), zero 4, overlap 2, order 1 (p = 1), coll 2
 *     (auto, tree: one node, so no hier, and every group inside a node,
 *     where auto runs the ring, so ring is a no-op) -> 6*4*2*2 = 96;
 *   (2,1,1): sp 2, zero 1, overlap 1, order 1, coll 2 (the same) ->
 *     6*2*2 = 24;
 *   (1,2,1): no group of two ranks (untied): every knob one value ->
 *     6 + 4 + 3 = 13.
 *   Candidates 96 + 24 + 13 = 133. No-ops: the full product of each is
 *   options * 2*4*2*2*4 = options * 128: (1,1,2) 768 - 96, (2,1,1)
 *   768 - 24, (1,2,1) 13*128 - 13, plus 2*3 interleavings: 3073. */
static void test_count_by_hand(void)
{
    struct oc_model m = small();
    struct oc_topology t = node8();
    struct oc_search_space s = space(2);
    struct oc_candidate *c = NULL;
    struct oc_search_counts n;
    int64_t k = oc_search_enumerate(&s, &m, &t, &c, &n);
    CU_ASSERT_EQUAL(k, 133);
    CU_ASSERT_EQUAL(n.candidates, 133);
    CU_ASSERT_EQUAL(n.noop, 3073);
    CU_ASSERT_TRUE(labels_distinct(c, k));
    /* canonical values: a no-op knob keeps the base's value */
    int64_t by[3] = {0, 0, 0};
    for (int64_t i = 0; i < k; i++) {
        const struct oc_layout *l = &c[i].layout;
        if (l->tp == 1)
            CU_ASSERT_EQUAL(l->sequence_parallel, s.base.sequence_parallel);
        if (l->dp == 1) {
            CU_ASSERT_EQUAL(l->zero, s.base.zero);
            CU_ASSERT_EQUAL(l->overlap_grad_reduce, s.base.overlap_grad_reduce);
        }
        CU_ASSERT_EQUAL(l->order, OC_ORDER_TP_DP_PP);
        CU_ASSERT_NOT_EQUAL(l->coll, OC_COLL_CHOICE_HIER);
        by[l->dp == 2 ? 0 : l->tp == 2 ? 1 : 2]++;
    }
    CU_ASSERT_EQUAL(by[0], 96);
    CU_ASSERT_EQUAL(by[1], 24);
    CU_ASSERT_EQUAL(by[2], 13);
    free(c);
}

/* Every knob fixed and one schedule: the space is (tp, pp, dp) alone. */
static void test_fixed(void)
{
    struct oc_model m = small();
    struct oc_topology t = node8();
    struct oc_search_space s = space(2);
    s.fixed = OC_LAYOUT_NAMED_SP | OC_LAYOUT_NAMED_ZERO | OC_LAYOUT_NAMED_OVERLAP |
              OC_LAYOUT_NAMED_ORDER | OC_LAYOUT_NAMED_COLL | OC_LAYOUT_NAMED_RECOMPUTE |
              OC_LAYOUT_NAMED_SCHEDULE | OC_LAYOUT_NAMED_CP;
    s.schedules[0] = OC_SCHED_1F1B;
    s.vchunks[0] = 1;
    s.n_schedules = 1;
    s.base.sequence_parallel = 0;
    s.base.recompute = OC_RECOMPUTE_FULL;
    struct oc_candidate *c = NULL;
    struct oc_search_counts n;
    int64_t k = oc_search_enumerate(&s, &m, &t, &c, &n);
    CU_ASSERT_EQUAL(k, 3);
    CU_ASSERT_EQUAL(n.noop, 0);
    for (int64_t i = 0; i < k; i++) {
        CU_ASSERT_EQUAL(c[i].layout.sequence_parallel, 0);
        CU_ASSERT_EQUAL(c[i].layout.recompute, OC_RECOMPUTE_FULL);
        CU_ASSERT_EQUAL(c[i].layout.zero, 1);
    }
    /* a fixed tp keeps only its factorisations */
    s.fixed |= OC_LAYOUT_NAMED_TP;
    s.base.tp = 2;
    free(c);
    k = oc_search_enumerate(&s, &m, &t, &c, &n);
    CU_ASSERT_EQUAL(k, 1);
    CU_ASSERT_EQUAL(c[0].layout.tp, 2);
    free(c);
}

/* Across nodes (16 cards of 8): rank order and hier become real choices
 * for layouts with p > 1 and d > 1; still no two rows alike. */
static void test_across_nodes(void)
{
    struct oc_model m = small();
    struct oc_topology t = node8();
    struct oc_search_space s = space(16);
    s.base.global_batch = 64;
    struct oc_candidate *c = NULL;
    struct oc_search_counts n;
    int64_t k = oc_search_enumerate(&s, &m, &t, &c, &n);
    CU_ASSERT_TRUE(k > 0);
    CU_ASSERT_TRUE(labels_distinct(c, k));
    int hier = 0, pp_dp_order = 0, in_node = 0, whole = 0;
    for (int64_t i = 0; i < k; i++) {
        const struct oc_layout *l = &c[i].layout;
        hier += l->coll == OC_COLL_CHOICE_HIER;
        /* tp2-pp8-dp1 (no CP, untied embedding): its only groups, TP, lie
         * inside a node: ring and hier are the automatic choice's ring */
        if (l->tp == 2 && l->pp == 8 && l->dp == 1 && l->cp == 1 && c[i].valid) {
            in_node++;
            CU_ASSERT_TRUE(l->coll == OC_COLL_CHOICE_AUTO || l->coll == OC_COLL_CHOICE_TREE);
        }
        if (l->order == OC_ORDER_TP_PP_DP) {
            pp_dp_order++;
            CU_ASSERT_TRUE(l->pp > 1 && l->dp > 1);
            /* a TP x CP block of whole nodes: both orders put one
             * (stage, replica) on each node, alike on the generated
             * platform (search.h) */
            CU_ASSERT_TRUE((l->tp * l->cp) % 8 != 0);
        }
        whole += l->tp * l->cp == 8 && l->pp > 1 && l->dp > 1;
    }
    CU_ASSERT_TRUE(hier > 0);
    CU_ASSERT_TRUE(in_node > 0);
    CU_ASSERT_TRUE(pp_dp_order > 0);
    CU_ASSERT_TRUE(whole == 0); /* 16 cards: p = d = 2 needs 32 */
    /* 32 cards: tp4-cp2-pp2-dp2 has one order; on a user's platform, two */
    struct oc_search_space s32 = space(32);
    s32.base.global_batch = 64;
    s32.max_cp = 2;
    for (int plat = 0; plat < 2; plat++) {
        s32.platform_file = plat;
        struct oc_candidate *c32 = NULL;
        int64_t k32 = oc_search_enumerate(&s32, &m, &t, &c32, NULL);
        int orders[2] = {0, 0};
        for (int64_t i = 0; i < k32; i++) {
            const struct oc_layout *l = &c32[i].layout;
            if (l->tp == 4 && l->cp == 2 && l->pp == 2 && l->dp == 2 && c32[i].valid)
                orders[l->order == OC_ORDER_TP_PP_DP]++;
        }
        CU_ASSERT_TRUE(orders[0] > 0);
        CU_ASSERT_EQUAL(orders[1] > 0, plat);
        free(c32);
    }
    char d[1024];
    oc_search_describe(&s, &n, d, sizeof d);
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "tp 1-16"));
    CU_ASSERT_PTR_NOT_NULL(strstr(d, "zero 0|1|2|3"));
    free(c);
}

/* What the sweep's plan (tools/sweep_plan.c) rests on: within a knob set
 * (oc_search_run), every rank-order and collective variant of a split is
 * legal or not alike and has the same closed-form peak and reserve, and
 * the candidate (iorder, icoll, isplit) is the one oc_search_enumerate
 * puts at index + (iorder * ncoll + icoll) * nsplit + isplit. */
struct sets {
    const struct oc_candidate *c;
    int64_t n;
    const struct oc_model *m;
    const struct oc_topology *t;
    int64_t cards, checked, bad;
};

static void check_set(void *ctx, const struct oc_search_set *g)
{
    struct sets *x = ctx;
    for (int k = 0; k < g->nsplit; k++) {
        int legal0 = -1;
        double peak0 = 0, res0 = 0;
        for (int io = 0; io < g->norder; io++)
            for (int ic = 0; ic < g->ncoll; ic++) {
                struct oc_layout l;
                oc_search_set_layout(g, io, ic, k, &l);
                const int64_t i = g->index + ((int64_t)io * g->ncoll + ic) * g->nsplit + k;
                char a[192], b[192];
                oc_layout_format(&l, a, sizeof a);
                oc_layout_format(&x->c[i].layout, b, sizeof b);
                if (i >= x->n || strcmp(a, b) != 0) {
                    if (x->bad++ < 3)
                        fprintf(stderr, "candidate %lld: %s, the set says %s\n", (long long)i, b, a);
                    continue;
                }
                const int legal = !g->refused &&
                                  oc_layout_validate(&l, x->m, x->t, x->cards, NULL) == 0;
                double peak = 0, res = 0;
                if (legal) {
                    int64_t st;
                    peak = oc_memory_peak(x->m, &l, &st);
                    struct oc_reserve r;
                    oc_reserve_layout(x->m, &l, x->t, peak, &r);
                    res = r.total_bytes;
                }
                if (legal0 < 0)
                    legal0 = legal, peak0 = peak, res0 = res;
                if (legal != legal0 || legal != x->c[i].valid || peak != peak0 || res != res0) {
                    if (x->bad++ < 3)
                        fprintf(stderr, "%s: legal %d peak %g reserve %g, variant 0: %d %g %g\n",
                                a, legal, peak, res, legal0, peak0, res0);
                }
                x->checked++;
            }
    }
}

static void test_sets(void)
{
    struct oc_model m = small();
    struct oc_topology t = node8();
    for (int64_t cards = 8; cards <= 32; cards *= 2) {
        struct oc_search_space s = space(cards);
        s.base.global_batch = 64;
        s.max_cp = 4; /* ZeRO-2/3 with CP: illegal variants */
        s.micro_batches[1] = 2;
        s.n_micro_batches = 2;
        struct oc_candidate *c = NULL;
        struct oc_search_counts n;
        const int64_t k = oc_search_enumerate(&s, &m, &t, &c, &n);
        struct sets x = {c, k, &m, &t, cards, 0, 0};
        struct oc_search_counts n2;
        CU_ASSERT_EQUAL(oc_search_run(&s, &m, &t, check_set, &x, &n2), k);
        CU_ASSERT_EQUAL(x.checked, k);
        CU_ASSERT_EQUAL(x.bad, 0);
        CU_ASSERT_TRUE(n.illegal > 0 && n.illegal < k);
        CU_ASSERT_EQUAL(n2.noop, n.noop);
        free(c);
    }
}

/* oc_search_run_part: the parts' sets, each candidate renumbered by its
 * unit (the candidates of the units before it, over all parts, plus its
 * offset in its unit), are oc_search_enumerate's candidates one for one,
 * and the parts' counts add up to the whole's. */
struct part_cands {
    int64_t n, cap;
    int64_t *unit, *index;
    char (*label)[192];
    int64_t unit_cands[4096]; /* candidates per unit */
};

static void part_set(void *ctx, const struct oc_search_set *g)
{
    struct part_cands *x = ctx;
    OC_ASSERT(g->unit >= 0 && g->unit < 4096);
    for (int io = 0; io < g->norder; io++)
        for (int ic = 0; ic < g->ncoll; ic++)
            for (int k = 0; k < g->nsplit; k++) {
                if (x->n == x->cap) {
                    x->cap = x->cap ? 2 * x->cap : 256;
                    x->unit = realloc(x->unit, (size_t)x->cap * sizeof *x->unit);
                    x->index = realloc(x->index, (size_t)x->cap * sizeof *x->index);
                    x->label = realloc(x->label, (size_t)x->cap * sizeof *x->label);
                }
                struct oc_layout l;
                oc_search_set_layout(g, io, ic, k, &l);
                x->unit[x->n] = g->unit;
                x->index[x->n] = g->index + ((int64_t)io * g->ncoll + ic) * g->nsplit + k;
                oc_layout_format(&l, x->label[x->n++], 192);
                x->unit_cands[g->unit]++;
            }
}

static void check_parts(const struct oc_search_space *s, const struct oc_model *m,
                        const struct oc_topology *t, int nparts)
{
    struct oc_candidate *c = NULL;
    struct oc_search_counts whole;
    const int64_t k = oc_search_enumerate(s, m, t, &c, &whole);
    struct part_cands *x = calloc((size_t)nparts, sizeof *x);
    struct oc_search_counts sum = {0};
    for (int i = 0; i < 5; i++)
        sum.lo[i] = INT64_MAX, sum.hi[i] = INT64_MIN;
    for (int w = 0; w < nparts; w++) {
        struct oc_search_counts n;
        const int64_t kw = oc_search_run_part(s, m, t, part_set, &x[w], &n, w, nparts);
        CU_ASSERT_EQUAL(kw, x[w].n);
        CU_ASSERT_EQUAL(n.candidates, kw);
        sum.candidates += n.candidates, sum.noop += n.noop;
        for (int i = 0; i < 5; i++) {
            sum.lo[i] = n.lo[i] < sum.lo[i] ? n.lo[i] : sum.lo[i];
            sum.hi[i] = n.hi[i] > sum.hi[i] ? n.hi[i] : sum.hi[i];
        }
    }
    CU_ASSERT_EQUAL(sum.candidates, k);
    CU_ASSERT_EQUAL(sum.noop, whole.noop);
    for (int i = 0; i < 5; i++)
        CU_ASSERT_TRUE(sum.lo[i] == whole.lo[i] && sum.hi[i] == whole.hi[i]);
    /* the first candidate of each unit in the whole numbering */
    int64_t first[4096], at = 0, seen = 0, bad = 0;
    for (int u = 0; u < 4096; u++) {
        first[u] = at;
        for (int w = 0; w < nparts; w++) {
            CU_ASSERT_TRUE(x[w].unit_cands[u] == 0 || u % nparts == w);
            at += x[w].unit_cands[u];
        }
    }
    for (int w = 0; w < nparts; w++) {
        int64_t local0 = 0; /* the part's number of its unit's first */
        for (int64_t i = 0; i < x[w].n; i++) {
            if (i == 0 || x[w].unit[i] != x[w].unit[i - 1])
                local0 = x[w].index[i];
            const int64_t g = first[x[w].unit[i]] + x[w].index[i] - local0;
            char want[192];
            if (g >= 0 && g < k)
                oc_layout_format(&c[g].layout, want, sizeof want);
            if (g < 0 || g >= k || strcmp(want, x[w].label[i]) != 0) {
                if (bad++ < 3)
                    fprintf(stderr, "part %d: %s as candidate %lld\n", w, x[w].label[i],
                            (long long)g);
            }
            seen++;
        }
        free(x[w].unit);
        free(x[w].index);
        free(x[w].label);
    }
    CU_ASSERT_EQUAL(seen, k);
    CU_ASSERT_EQUAL(bad, 0);
    free(x);
    free(c);
}

static void test_parts(void)
{
    struct oc_model m = small();
    struct oc_topology t = node8();
    for (int64_t cards = 8; cards <= 32; cards *= 4) {
        struct oc_search_space s = space(cards);
        s.base.global_batch = 64;
        s.max_cp = 4;
        s.micro_batches[1] = 2;
        s.n_micro_batches = 2;
        for (int nparts = 1; nparts <= 3; nparts++)
            check_parts(&s, &m, &t, nparts);
    }
}

static CU_TestInfo tests[] = {
    {"parts: renumbered, the whole", test_parts},
    {"sets: variants judged alike, indices", test_sets},
    {"count by hand", test_count_by_hand},
    {"fixed knobs", test_fixed},
    {"across nodes", test_across_nodes},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"search", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};
int main(void) { return oc_test_run(suites); }
