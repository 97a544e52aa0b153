/* test_exec_gc.c: the executor's compression kernels (exec/gc.h, the cpu
 * table exec/cpu/gc_cpu.c) on vectors worked by hand, without MPI: the
 * collectives between two ranks are done here by copying blocks.
 *
 * - top-k: 8 elements, D = 0.25 -> K = 2: the pairs and the residual
 *   exactly; the residual sent at the next step (error feedback); ties
 *   broken by the lower index; 1000 values against the definition; K = n
 *   sends everything and leaves nothing; two ranks' pairs summed (a
 *   shared index added).
 * - q1: [1, -2, 3, -4] -> scale 2.5 (mean |x|), signs 0b0101, residual
 *   [-1.5, 0.5, 0.5, -1.5]; the next step with that residual; a whole
 *   two-rank exchange (worker, all-to-all, server with its error, all-
 *   gather, decode) over 64 elements in two chunks of 32.
 * - q8: [127, -63.5, 0.5, 0] -> scale 1, codes 127, -64, 0, 0 (round half
 *   to even), residual [0, 0.5, 0.5, 0].
 * - sizes: the wire bytes the runner moves for tiny at dp2 and dp3 against
 *   core/compress.c's plan (what ocsim simulate charges): top-k and q8/q1
 *   at dp2 exactly, q1 at dp3 less than 4 bytes a chunk above (the codes
 *   padded to whole words).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compress.h"
#include "gc.h"
#include "gc_cpu.h"
#include "memory.h"
#include "test_util.h"

static const struct oc_gc_kernels *K;

static int init(void)
{
    K = oc_gc_kernels_cpu();
    return 0;
}

static float scale_of_block(const uint32_t *blk)
{
    float s;
    memcpy(&s, blk, sizeof s);
    return s;
}

static void assert_floats(const float *got, const float *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        CU_ASSERT_EQUAL(got[i], want[i]); /* dyadic values: exact */
}

/* acc = g + resid = [0.375, -0.5, -0.125, 0.0625, -0.25, 1, 0, 0.4375]:
 * the two largest |acc| are 1 (index 5) and 0.5 (index 1). */
static void test_topk_pack(void)
{
    const float g[8] = {0.125f, -0.5f, 0.25f, 0.0625f, -0.25f, 1, 0, 0.375f};
    float resid[8] = {0.25f, 0, -0.375f, 0, 0, 0, 0, 0.0625f}, scratch[8];
    CU_ASSERT_EQUAL(oc_gc_topk_k(8, 0.25), 2);
    struct oc_gc_pair p[2];
    K->topk_pack(g, resid, 8, 2, p, scratch);
    CU_ASSERT_EQUAL(p[0].index, 1);
    CU_ASSERT_EQUAL(p[0].value, -0.5f);
    CU_ASSERT_EQUAL(p[1].index, 5);
    CU_ASSERT_EQUAL(p[1].value, 1.0f);
    const float r1[8] = {0.375f, 0, -0.125f, 0.0625f, -0.25f, 0, 0, 0.4375f};
    assert_floats(resid, r1, 8);
    /* error feedback: a zero gradient next step sends what was left,
     * 0.4375 (index 7) and 0.375 (index 0) */
    const float zero[8] = {0};
    K->topk_pack(zero, resid, 8, 2, p, scratch);
    CU_ASSERT_EQUAL(p[0].index, 0);
    CU_ASSERT_EQUAL(p[0].value, 0.375f);
    CU_ASSERT_EQUAL(p[1].index, 7);
    CU_ASSERT_EQUAL(p[1].value, 0.4375f);
    const float r2[8] = {0, 0, -0.125f, 0.0625f, -0.25f, 0, 0, 0};
    assert_floats(resid, r2, 8);
}

/* |acc| = [1, 1, 1, 0.5], K = 2: of the three tied at 1, indices 0, 1. */
static void test_topk_ties(void)
{
    const float g[4] = {1, -1, 1, 0.5f};
    float resid[4] = {0}, scratch[4];
    struct oc_gc_pair p[2];
    K->topk_pack(g, resid, 4, 2, p, scratch);
    CU_ASSERT_EQUAL(p[0].index, 0);
    CU_ASSERT_EQUAL(p[1].index, 1);
    CU_ASSERT_EQUAL(p[1].value, -1.0f);
    const float r[4] = {0, 0, 1, 0.5f};
    assert_floats(resid, r, 4);
}

/* K = n: every element sent in index order, the residual zero, and one
 * rank's unpack gives back its gradient exactly (gc=topk1 at d = 1). */
static void test_topk_all(void)
{
    const float g[5] = {3, -1, 0, 2.5f, -7};
    float resid[5] = {0}, scratch[5], back[5];
    struct oc_gc_pair p[5];
    CU_ASSERT_EQUAL(oc_gc_topk_k(5, 1.0), 5);
    K->topk_pack(g, resid, 5, 5, p, scratch);
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(p[i].index, i);
        CU_ASSERT_EQUAL(p[i].value, g[i]);
        CU_ASSERT_EQUAL(resid[i], 0.0f);
    }
    K->topk_unpack(p, 5, back, 5);
    assert_floats(back, g, 5);
}

/* The radix select against its definition: element i is kept when fewer
 * than K elements come before it (a larger |acc|, or an equal one at a
 * lower index). 1000 values, half of them 1 + j * 2^-20 (the same top 22
 * bits for many: the select's last digit decides), with repeats and signs. */
static void test_topk_against_definition(void)
{
    enum { N = 1000, KK = 137 };
    float g[N], resid[N] = {0}, scratch[N], acc[N];
    uint32_t x = 12345;
    for (int i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u; /* an LCG: any fixed sequence */
        const int j = (int)((x >> 16) % 300);
        g[i] = (i % 2 ? 1.0f + (float)j * 0x1p-20f : (float)j / 64.0f) * (x & 1 ? -1.0f : 1.0f);
        acc[i] = g[i];
    }
    struct oc_gc_pair p[KK];
    K->topk_pack(g, resid, N, KK, p, scratch);
    int m = 0;
    for (int i = 0; i < N; i++) {
        int before = 0;
        for (int j = 0; j < N; j++)
            before += fabsf(acc[j]) > fabsf(acc[i]) || (fabsf(acc[j]) == fabsf(acc[i]) && j < i);
        if (before < KK) {
            CU_ASSERT_EQUAL(p[m].index, i);
            CU_ASSERT_EQUAL(p[m].value, acc[i]);
            CU_ASSERT_EQUAL(resid[i], 0.0f);
            m++;
        } else {
            CU_ASSERT_EQUAL(resid[i], acc[i]);
        }
    }
    CU_ASSERT_EQUAL(m, KK);
}

/* Two ranks' gathered pairs, rank 0's then rank 1's: index 1 is in both
 * (-0.5 + 0.25), the rest lands where its index says, all else zero. */
static void test_topk_unpack_two(void)
{
    const struct oc_gc_pair all[4] = {{1, -0.5f}, {5, 1}, {1, 0.25f}, {6, 2}};
    float g[8];
    for (int i = 0; i < 8; i++)
        g[i] = 99; /* overwritten */
    K->topk_unpack(all, 4, g, 8);
    const float want[8] = {0, -0.25f, 0, 0, 0, 1, 2, 0};
    assert_floats(g, want, 8);
}

/* One chunk of 4 (d = 1): scale = mean |x| = 2.5, element i's sign in
 * bit i (1: >= 0), decoded +-2.5. */
static void test_q1_pack(void)
{
    const float g[4] = {1, -2, 3, -4};
    float resid[4] = {0}, back[4];
    const int64_t chunk = oc_gc_q_chunk(4, 1);
    CU_ASSERT_EQUAL(chunk, 32);
    CU_ASSERT_EQUAL(oc_gc_q_words(chunk, 1), 2);
    uint32_t blk[2];
    K->q_pack(g, resid, 4, 1, chunk, 1, blk);
    CU_ASSERT_EQUAL(scale_of_block(blk), 2.5f);
    CU_ASSERT_EQUAL(blk[1], 0x5u);
    const float r1[4] = {-1.5f, 0.5f, 0.5f, -1.5f};
    assert_floats(resid, r1, 4);
    K->q_unpack(blk, 4, 1, chunk, 1, back);
    const float dec[4] = {2.5f, -2.5f, 2.5f, -2.5f};
    assert_floats(back, dec, 4);
    /* next step, same gradient: acc = [-0.5, -1.5, 3.5, -5.5], scale
     * 11/4, only element 2 >= 0; residual acc - (+-2.75) */
    K->q_pack(g, resid, 4, 1, chunk, 1, blk);
    CU_ASSERT_EQUAL(scale_of_block(blk), 2.75f);
    CU_ASSERT_EQUAL(blk[1], 0x4u);
    const float r2[4] = {2.25f, 1.25f, 0.75f, -2.75f};
    assert_floats(resid, r2, 4);
}

/* Two ranks, 64 elements, chunks of 32 (chunk 0 served by rank 0, chunk
 * 1 by rank 1), alternating values (even index, odd index):
 *   rank A: chunk 0 (1, -3): scale 2, decoded (2, -2), residual (-1, -1)
 *           chunk 1 (0.5, 0.5): scale 0.5, decoded exactly
 *   rank B: chunk 0 (-1, -1): scale 1, decoded exactly
 *           chunk 1 (2, -2): scale 2, decoded exactly
 *   server 0: A + B = (1, -3): scale 2, (2, -2), server error (-1, -1)
 *   server 1: A + B = (2.5, -1.5): scale 2, (2, -2), error (0.5, 0.5)
 * and both ranks decode (2, -2) over all 64 elements. */
static void test_q1_two_ranks(void)
{
    enum { N = 64, D = 2 };
    float gA[N], gB[N], rA[N] = {0}, rB[N] = {0};
    for (int i = 0; i < N; i++) {
        const int odd = i % 2, c1 = i >= 32;
        gA[i] = c1 ? 0.5f : odd ? -3 : 1;
        gB[i] = c1 ? (odd ? -2.0f : 2.0f) : -1;
    }
    const int64_t chunk = oc_gc_q_chunk(N, D), W = oc_gc_q_words(chunk, 1);
    CU_ASSERT_EQUAL(chunk, 32);
    CU_ASSERT_EQUAL(W, 2);
    uint32_t packA[D * 2], packB[D * 2];
    K->q_pack(gA, rA, N, D, chunk, 1, packA);
    K->q_pack(gB, rB, N, D, chunk, 1, packB);
    CU_ASSERT_EQUAL(scale_of_block(packA), 2.0f);
    CU_ASSERT_EQUAL(scale_of_block(packA + W), 0.5f);
    CU_ASSERT_EQUAL(scale_of_block(packB), 1.0f);
    CU_ASSERT_EQUAL(scale_of_block(packB + W), 2.0f);
    for (int i = 0; i < N; i++) {
        CU_ASSERT_EQUAL(rA[i], i < 32 ? -1.0f : 0.0f);
        CU_ASSERT_EQUAL(rB[i], 0.0f);
    }
    /* the all-to-all: server j gets block j of A, then of B */
    uint32_t gathered[D * 2];
    float err[D][32] = {{0}}, acc[32];
    for (int j = 0; j < D; j++) {
        uint32_t recv[D * 2];
        memcpy(recv, packA + j * W, (size_t)W * sizeof *recv);
        memcpy(recv + W, packB + j * W, (size_t)W * sizeof *recv);
        K->q_server(recv, D, oc_gc_q_len(N, chunk, j), chunk, 1, err[j], acc,
                    gathered + j * W);
        CU_ASSERT_EQUAL(scale_of_block(gathered + j * W), 2.0f);
    }
    for (int i = 0; i < 32; i++) {
        CU_ASSERT_EQUAL(err[0][i], -1.0f);
        CU_ASSERT_EQUAL(err[1][i], 0.5f);
    }
    float g[N];
    K->q_unpack(gathered, N, D, chunk, 1, g);
    for (int i = 0; i < N; i++)
        CU_ASSERT_EQUAL(g[i], i % 2 ? -2.0f : 2.0f);
}

/* 40 elements over 2 ranks: chunks of 32, the second holding 8; the
 * padding is neither encoded into the scale nor decoded into g. */
static void test_q1_padding(void)
{
    enum { N = 40 };
    const int64_t chunk = oc_gc_q_chunk(N, 2);
    CU_ASSERT_EQUAL(chunk, 32);
    CU_ASSERT_EQUAL(oc_gc_q_len(N, chunk, 0), 32);
    CU_ASSERT_EQUAL(oc_gc_q_len(N, chunk, 1), 8);
    CU_ASSERT_EQUAL(oc_gc_q_len(N, chunk, 2), 0);
    float g[N], r[N] = {0}, back[N + 1];
    for (int i = 0; i < N; i++)
        g[i] = i < 32 ? 1.0f : -4.0f;
    uint32_t blk[4];
    K->q_pack(g, r, N, 2, chunk, 1, blk);
    CU_ASSERT_EQUAL(scale_of_block(blk + 2), 4.0f); /* 8 valid of -4, not 32 */
    back[N] = 123; /* past n: untouched */
    K->q_unpack(blk, N, 2, chunk, 1, back);
    assert_floats(back, g, N);
    CU_ASSERT_EQUAL(back[N], 123.0f);
}

/* q8: scale = max |x| / 127 = 1; codes rint(x): 127, -64 (half to even),
 * 0 (0.5 to even), 0; the bytes little-end first. */
static void test_q8_pack(void)
{
    const float g[4] = {127, -63.5f, 0.5f, 0};
    float resid[4] = {0}, back[4];
    const int64_t chunk = oc_gc_q_chunk(4, 1);
    CU_ASSERT_EQUAL(oc_gc_q_words(chunk, 8), 9);
    uint32_t blk[9];
    K->q_pack(g, resid, 4, 1, chunk, 8, blk);
    CU_ASSERT_EQUAL(scale_of_block(blk), 1.0f);
    CU_ASSERT_EQUAL(blk[1], 0x0000C07Fu);
    const float r[4] = {0, 0.5f, 0.5f, 0};
    assert_floats(resid, r, 4);
    K->q_unpack(blk, 4, 1, chunk, 8, back);
    const float dec[4] = {127, -64, 0, 0};
    assert_floats(back, dec, 4);
}

/* The runner's wire bytes against core's plan for tiny (fp32). */
static double plan_bytes(const char *layout, double *elements)
{
    struct oc_model m;
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_model_load("tiny", &m, &st), st.msg);
    struct oc_layout l;
    oc_layout_default(&l);
    oc_test_expect_ok(oc_layout_parse(&l, layout, &st), st.msg);
    l.global_batch = 8;
    l.seq_length = 32;
    struct oc_gc_plan p;
    oc_gc_plan(&m, &l, 0, &p);
    CU_ASSERT_EQUAL(p.n, 1);
    *elements = p.elements;
    return p.step[0].bytes;
}

static void test_sizes_against_plan(void)
{
    double N;
    double b = plan_bytes("tp1-pp1-dp2-fp32-gc=topk0.1", &N);
    const int64_t n = (int64_t)N;
    CU_ASSERT_EQUAL(b, 2.0 * 8.0 * (double)oc_gc_topk_k(n, 0.1));
    const int bits[2] = {1, 8};
    const char *q[2] = {"tp1-pp1-dp2-fp32-gc=q1", "tp1-pp1-dp2-fp32-gc=q8"};
    for (int i = 0; i < 2; i++) {
        b = plan_bytes(q[i], &N);
        CU_ASSERT_EQUAL(b, 2.0 * 4.0 * (double)oc_gc_q_words(oc_gc_q_chunk(n, 2), bits[i]));
    }
    b = plan_bytes("tp1-pp1-dp3-fp32-gc=q1", &N);
    const double w = 3.0 * 4.0 * (double)oc_gc_q_words(oc_gc_q_chunk(n, 3), 1);
    CU_ASSERT(w >= b && w - b < 4.0 * 3);
}

static CU_TestInfo tests[] = {
    {"topk_pack", test_topk_pack},
    {"topk_ties", test_topk_ties},
    {"topk_all", test_topk_all},
    {"topk_against_definition", test_topk_against_definition},
    {"topk_unpack_two", test_topk_unpack_two},
    {"q1_pack", test_q1_pack},
    {"q1_two_ranks", test_q1_two_ranks},
    {"q1_padding", test_q1_padding},
    {"q8_pack", test_q8_pack},
    {"sizes_against_plan", test_sizes_against_plan},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"exec_gc", init, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
