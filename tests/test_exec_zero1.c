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
 *
 * Activations: what a layer keeps for its backward in the executor
 * (gpt.h's oc_gpt_layer_kept_floats, the runner's share of an activation
 * block per layer) against memory.c's layer bytes for the same fp32
 * layout, over both blocks, TP 1, 2, 4, sequence parallelism on and off,
 * flash and classic attention and the three recompute modes: equal under
 * full recompute, else exactly the two terms gpt.h names more (the norms'
 * statistics; under SP the gathered norm outputs kept whole). The head:
 * its kept input plus the LOGITS buffer's act against memory.c's head and
 * logits bytes, exactly the whole final-norm output's extra rows, its
 * statistics and the cross-entropy's three per-token vectors more.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpt.h"
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
    const int64_t d = l->zero ? l->dp : 1;
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
    l.zero = z->shard;
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
                rank_params(&m, &l, oc_layout_rank(&l, (struct oc_coord){tp, pp, dp, 0}), &p);
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

/* One layout's layer and head against memory.c (see the file comment). */
static void activations_case(const struct oc_model *m, int64_t t, int sp,
                             enum oc_attention at, enum oc_recompute rc)
{
    struct oc_layout l = oc_test_layout(t, 1, 1, 2, 2, 32);
    l.precision = OC_PREC_FP32;
    l.sequence_parallel = sp;
    l.attention = at;
    l.recompute = rc;
    struct oc_gpt_dims d;
    struct oc_status st = {{0}};
    /* the last TP rank: its rows start at s0 > 0 under SP */
    CU_ASSERT_EQUAL_FATAL(oc_gpt_dims_layout(&d, m, &l, t - 1, &st), 0);
    const double N = 64, C = 64, n = sp && t > 1 ? N / (double)t : N;
    const double stats = m->arch == OC_ARCH_LLAMA ? 1 : 2; /* RMSNorm: rstd */
    CU_ASSERT_EQUAL(d.n, (int64_t)n);
    double want = oc_mem_layer_activation_bytes(m, &l);
    if (rc != OC_RECOMPUTE_FULL)
        want += 4.0 * (2.0 * stats * n + 2.0 * (N - n) * C);
    const double got = 4.0 * (double)oc_gpt_layer_kept_floats(&d, rc);
    CU_ASSERT_EQUAL(got, want);
    if (got != want)
        fprintf(stderr, "\n  %s t%lld sp%d %s rc%d: %.0f bytes, memory.c %.0f\n", m->name,
                (long long)t, sp, at == OC_ATTN_FLASH ? "flash" : "classic", (int)rc, got,
                oc_mem_layer_activation_bytes(m, &l));
    /* the head: its input in the block, its act in the LOGITS buffer */
    const double head = 4.0 * (double)(oc_gpt_stream_floats(&d) + oc_gpt_head_act_floats(&d));
    CU_ASSERT_EQUAL(head, oc_mem_head_activation_bytes(m, &l) + oc_mem_logits_bytes(m, &l) +
                              4.0 * ((N - n) * C + stats * n + 3.0 * N));
}

static void test_activations(void)
{
    struct oc_model gpt, llama;
    struct oc_status st = {{0}};
    oc_test_tiny_model(&gpt);
    gpt.has_dropout = 0; /* the executor runs dropout-free (gpt.h) */
    CU_ASSERT_EQUAL_FATAL(oc_model_load("llama-tiny", &llama, &st), 0);
    const enum oc_recompute rcs[] = {OC_RECOMPUTE_NONE, OC_RECOMPUTE_SELECTIVE,
                                     OC_RECOMPUTE_FULL};
    for (int64_t t = 1; t <= 4; t *= 2)
        for (int sp = 0; sp <= 1; sp++)
            for (int a = 0; a <= 1; a++)
                for (int k = 0; k < 3; k++) {
                    const enum oc_attention at = a ? OC_ATTN_FLASH : OC_ATTN_CLASSIC;
                    activations_case(&gpt, t, sp, at, rcs[k]);
                    if (t <= 2) /* llama-tiny's 2 KV heads */
                        activations_case(&llama, t, sp, at, rcs[k]);
                }
}

static CU_TestInfo tests[] = {
    {"optimizer bytes = memory.c's, even slices", test_even_slices},
    {"optimizer bytes, uneven slices", test_uneven_slices},
    {"activations = memory.c's + named terms", test_activations},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"exec_zero1", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
