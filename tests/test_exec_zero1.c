/* test_exec_zero1.c: the executor's memory against the memory model. The
 * bytes each rank's parameters allocate (exec/params.c: fp32 weights and
 * gradients, AdamW's m and v for the whole arena or, under ZeRO-1, for
 * this DP rank's slice of every tensor) are what the runner counts in
 * memory.csv (runner.c: OC_BUF_WEIGHTS, OC_BUF_GRADS, OC_BUF_OPTIMIZER);
 * core/memory.c predicts them for an fp32 run (4 + 4 + 8 bytes per
 * parameter, the 8 divided by d when sharded). For each layout below and
 * every rank the two must be equal: exactly where every tensor splits
 * evenly over d, and over d = 3 (uneven slices) the DP ranks' optimizer
 * bytes must add up to the unsharded 8 bytes per parameter, each rank
 * within a float per tensor of 8/d.
 */
#include <math.h>
#include <stdlib.h>

#include "layout.h"
#include "memory.h"
#include "model.h"
#include "params.h"
#include "placement.h"
#include "test_util.h"

struct zcase {
    int64_t t, p, d, v;
    int shard;
};

/* Rank r's parameters as the runner allocates them (runner.c's
 * oc_runner_param_opts and oc_params_init_sharded, in the program, not in
 * a library a test links): the layers of its stage's chunks in chunk
 * order, the embedding on stage 0, the head on the last stage, and the
 * moments of DP rank c.dp's slices when the optimizer is sharded. */
static void rank_params(const struct oc_model *m, const struct oc_layout *l, int64_t r,
                        struct oc_params *p)
{
    const struct oc_coord c = oc_layout_coord(l, r);
    int64_t *layers = malloc((size_t)m->num_hidden_layers * sizeof *layers);
    int64_t n = 0;
    for (int64_t k = 0; k < oc_place_chunks_per_stage(l); k++) {
        const struct oc_layer_range lr = oc_place_chunk_layers(l, m, c.pp, k);
        for (int64_t j = 0; j < lr.count; j++)
            layers[n++] = lr.first + j;
    }
    const struct oc_params_opts po = {.tp = l->tp, .tp_rank = c.tp, .layers = layers,
                                      .nlayers = n,
                                      .has_embed = oc_place_stage_has_embed(l, c.pp),
                                      .has_head = oc_place_stage_has_head(l, c.pp),
                                      .seed = 1234};
    const int64_t d = l->shard_optimizer ? l->dp : 1;
    struct oc_status st = {{0}};
    const int rc = oc_params_init_sharded(p, m, &po, d, d > 1 ? c.dp : 0, &st);
    free(layers);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
}

static struct oc_layout make(const struct zcase *z)
{
    /* 8 sequences of 32 tokens per DP replica, one micro-batch each */
    struct oc_layout l = oc_test_layout(z->t, z->p, z->d, 1, 8 * z->d, 32);
    l.precision = OC_PREC_FP32; /* what the executor runs (layout.h) */
    l.shard_optimizer = z->shard;
    if (z->v > 1) {
        l.schedule = OC_SCHED_INTERLEAVED;
        l.vchunks = z->v;
    }
    return l;
}

/* tiny (h 64, 4 heads, 8 layers, f 256, V 512, 128 positions, tied): every
 * tensor's shard has an even number of floats, a multiple of 4 too. */
static void test_even_slices(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    const struct zcase cases[] = {
        {2, 2, 2, 1, 1}, /* the embedding copy on the last stage */
        {1, 4, 2, 2, 1}, /* interleaved: two chunks a stage */
        {1, 2, 4, 1, 1}, {4, 1, 2, 1, 1}, {2, 2, 2, 1, 0}, {1, 1, 1, 1, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const struct oc_layout l = make(&cases[k]);
        double seen_opt = 0;
        for (int64_t r = 0; r < oc_layout_world(&l); r++) {
            struct oc_params p;
            rank_params(&m, &l, r, &p);
            struct oc_mem_breakdown b;
            oc_memory_stage(&m, &l, oc_layout_coord(&l, r).pp, &b);
            CU_ASSERT_EQUAL(p.n, b.params);
            CU_ASSERT_EQUAL(4.0 * (double)p.n, b.weights_bytes);
            CU_ASSERT_EQUAL(4.0 * (double)p.n, b.grads_bytes);
            CU_ASSERT_EQUAL(oc_params_optimizer_bytes(&p), b.optimizer_bytes);
            /* sharded: a d-th of the unsharded 8 bytes per parameter */
            CU_ASSERT_EQUAL(oc_params_optimizer_bytes(&p) * (double)(cases[k].shard ? l.dp : 1),
                            8.0 * (double)p.n);
            seen_opt += oc_params_optimizer_bytes(&p);
            oc_params_free(&p);
        }
        CU_ASSERT(seen_opt > 0);
    }
}

/* DP 3: tiny's tensors (64, 256, 4096, 12288, ... floats) do not split
 * evenly in three; slice j of n is [n*j/3, n*(j+1)/3), so the three slices
 * of every tensor add up to it, and each is within one float of n/3. */
static void test_uneven_slices(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    const struct zcase z = {2, 2, 3, 1, 1};
    const struct oc_layout l = make(&z);
    for (int64_t tp = 0; tp < l.tp; tp++)
        for (int64_t pp = 0; pp < l.pp; pp++) {
            double sum = 0, whole = 0;
            int64_t nt = 0;
            for (int64_t dp = 0; dp < l.dp; dp++) {
                struct oc_params p;
                rank_params(&m, &l, oc_layout_rank(&l, (struct oc_coord){tp, pp, dp}), &p);
                struct oc_mem_breakdown b;
                oc_memory_stage(&m, &l, pp, &b);
                CU_ASSERT(fabs(oc_params_optimizer_bytes(&p) - b.optimizer_bytes) <=
                          8.0 * (double)p.nt);
                sum += oc_params_optimizer_bytes(&p);
                whole = 8.0 * (double)p.n;
                nt = p.nt;
                oc_params_free(&p);
            }
            CU_ASSERT_EQUAL(sum, whole);
            CU_ASSERT(nt > 0);
        }
}

static CU_TestInfo tests[] = {
    {"optimizer bytes = memory.c's, even slices", test_even_slices},
    {"optimizer bytes, uneven slices", test_uneven_slices},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"exec_zero1", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
