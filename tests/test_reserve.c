/* test_reserve.c: the per-GPU memory reserve (core/reserve.h), each term
 * worked by hand from the sources reserve.c cites:
 *   one collective communicator = 32 channels x (NCCL_BUFFSIZE 4194304 +
 *     LL128 4915200 + LL 524288) = 32 x 9633792 = 308281344 bytes;
 *   one pipeline neighbour = 2 channels x 4194304 = 8388608 bytes;
 *   CUDA context 512 MiB = 536870912; cuBLAS 2 x 32 MiB = 67108864 on
 *   Hopper, 2 x 4 MiB = 8388608 elsewhere. */
#include <math.h>
#include <string.h>

#include "reserve.h"
#include "test_util.h"

#define COMM 308281344.0
#define PEER 8388608.0
#define CTX 536870912.0

static struct oc_topology topo(const char *gpu, enum oc_reserve_mode mode)
{
    struct oc_topology t;
    memset(&t, 0, sizeof t);
    snprintf(t.device.name, sizeof t.device.name, "%s", gpu);
    t.device.memory_bytes = 85.5e9;
    t.gpus_per_node = 8;
    t.reserve.mode = mode;
    t.reserve.fragmentation = 0.10;
    return t;
}

/* An untied model (Llama-like: no embedding group), TP 8 x PP 8: TP and
 * the model-parallel group on every stage; two neighbours in the middle,
 * one at either end. */
static void test_nccl_untied(void)
{
    struct oc_model m = oc_test_gpt("g", 1024, 16, 16, 4096, 32000, 2048);
    m.tie_word_embeddings = 0;
    struct oc_layout l = oc_test_layout(8, 8, 1, 1, 64, 2048);
    int64_t n = -1;
    CU_ASSERT_DOUBLE_EQUAL(oc_reserve_nccl_bytes(&m, &l, 3, &n), 2 * COMM + 2 * PEER, 0.5);
    CU_ASSERT_EQUAL(n, 2);
    CU_ASSERT_DOUBLE_EQUAL(oc_reserve_nccl_bytes(&m, &l, 3, NULL), 633339904.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(oc_reserve_nccl_bytes(&m, &l, 0, NULL), 2 * COMM + PEER, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(oc_reserve_nccl_bytes(&m, &l, 7, NULL), 2 * COMM + PEER, 0.5);
}

/* A tied GPT, tp2-pp4-dp2: TP, DP, MP everywhere, the embedding group on
 * the first and last stage only. */
static void test_nccl_tied(void)
{
    struct oc_model m = oc_test_gpt("g", 1024, 16, 16, 4096, 32000, 2048);
    CU_ASSERT_EQUAL(m.tie_word_embeddings, 1);
    struct oc_layout l = oc_test_layout(2, 4, 2, 1, 64, 2048);
    int64_t n = -1;
    CU_ASSERT_DOUBLE_EQUAL(oc_reserve_nccl_bytes(&m, &l, 0, &n), 1241513984.0, 0.5);
    CU_ASSERT_EQUAL(n, 4);
    CU_ASSERT_DOUBLE_EQUAL(oc_reserve_nccl_bytes(&m, &l, 1, &n), 941621248.0, 0.5);
    CU_ASSERT_EQUAL(n, 3);
    CU_ASSERT_DOUBLE_EQUAL(oc_reserve_nccl_bytes(&m, &l, 3, NULL), 4 * COMM + PEER, 0.5);
    /* interleaving wraps: stage 0 has both neighbours; with PP 2 the one
     * other stage is both */
    l.schedule = OC_SCHED_INTERLEAVED;
    l.vchunks = 2;
    CU_ASSERT_DOUBLE_EQUAL(oc_reserve_nccl_bytes(&m, &l, 0, NULL), 4 * COMM + 2 * PEER, 0.5);
    l.pp = 2;
    CU_ASSERT_DOUBLE_EQUAL(oc_reserve_nccl_bytes(&m, &l, 0, NULL), 4 * COMM + PEER, 0.5);
    /* one GPU: no communicator at all */
    struct oc_layout one = oc_test_layout(1, 1, 1, 1, 8, 2048);
    CU_ASSERT_DOUBLE_EQUAL(oc_reserve_nccl_bytes(&m, &one, 0, &n), 0, 0);
    CU_ASSERT_EQUAL(n, 0);
}

/* Every term of auto on an H100 and an A100, and the worst stage. */
static void test_auto_total(void)
{
    struct oc_model m = oc_test_gpt("g", 1024, 16, 16, 4096, 32000, 2048);
    m.tie_word_embeddings = 0;
    struct oc_layout l = oc_test_layout(8, 8, 1, 1, 64, 2048);
    struct oc_topology h = topo("H100 SXM5 80GB", OC_RESERVE_AUTO);
    struct oc_reserve r;
    oc_reserve_stage(&m, &l, &h, 3, 60e9, &r);
    CU_ASSERT_DOUBLE_EQUAL(r.cuda_context_bytes, CTX, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.cublas_bytes, 67108864.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.fragmentation_bytes, 6e9, 1);
    CU_ASSERT_DOUBLE_EQUAL(r.total_bytes, CTX + 633339904.0 + 67108864.0 + 6e9, 1);
    /* the layout's reserve: the middle stages' (two neighbours) */
    oc_reserve_layout(&m, &l, &h, 60e9, &r);
    CU_ASSERT_DOUBLE_EQUAL(r.nccl_bytes, 633339904.0, 0.5);
    struct oc_topology a = topo("A100 SXM4 80GB", OC_RESERVE_AUTO);
    oc_reserve_stage(&m, &l, &a, 3, 0, &r);
    CU_ASSERT_DOUBLE_EQUAL(r.cublas_bytes, 8388608.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.total_bytes, CTX + 633339904.0 + 8388608.0, 1);
    CU_ASSERT(oc_reserve_is_hopper(&h.device) && !oc_reserve_is_hopper(&a.device));
}

/* FIXED: the bytes alone, whatever the layout; a zeroed topology has no
 * reserve (the old verdict). fits: peak + reserve <= device, inclusive. */
static void test_fixed_and_fits(void)
{
    struct oc_model m = oc_test_gpt("g", 1024, 16, 16, 4096, 32000, 2048);
    struct oc_layout l = oc_test_layout(2, 4, 2, 1, 64, 2048);
    struct oc_topology t = topo("H100 SXM5 80GB", OC_RESERVE_FIXED);
    t.reserve.bytes = 6e9;
    struct oc_reserve r;
    oc_reserve_layout(&m, &l, &t, 70e9, &r);
    CU_ASSERT_DOUBLE_EQUAL(r.total_bytes, 6e9, 0);
    CU_ASSERT_DOUBLE_EQUAL(r.nccl_bytes, 0, 0);
    CU_ASSERT(oc_reserve_fits(&t, 79.5e9, 6e9));
    CU_ASSERT(!oc_reserve_fits(&t, 79.5e9 + 1, 6e9));
    struct oc_topology z;
    memset(&z, 0, sizeof z);
    z.device.memory_bytes = 80e9;
    oc_reserve_layout(&m, &l, &z, 79.9e9, &r);
    CU_ASSERT_DOUBLE_EQUAL(r.total_bytes, 0, 0);
    /* the case: 79.8 of 85.5 GB fits alone, not with auto's
     * reserve (context + NCCL + cuBLAS + 8 GB of fragmentation) */
    struct oc_topology h = topo("H100 SXM5 80GB", OC_RESERVE_AUTO);
    oc_reserve_layout(&m, &l, &h, 79.8e9, &r);
    CU_ASSERT(oc_reserve_fits(&h, 79.8e9, 0));
    CU_ASSERT(!oc_reserve_fits(&h, 79.8e9, r.total_bytes));
}

static void test_parse_bytes(void)
{
    struct oc_status st = {{0}};
    double v = -1;
    CU_ASSERT_EQUAL(oc_reserve_parse_bytes("6GB", &v, &st), 0);
    CU_ASSERT_DOUBLE_EQUAL(v, 6e9, 0);
    CU_ASSERT_EQUAL(oc_reserve_parse_bytes("5.5GiB", &v, &st), 0);
    CU_ASSERT_DOUBLE_EQUAL(v, 5905580032.0, 0);
    CU_ASSERT_EQUAL(oc_reserve_parse_bytes("512MiB", &v, &st), 0);
    CU_ASSERT_DOUBLE_EQUAL(v, 536870912.0, 0);
    CU_ASSERT_EQUAL(oc_reserve_parse_bytes("0", &v, &st), 0);
    CU_ASSERT_DOUBLE_EQUAL(v, 0, 0);
    CU_ASSERT_EQUAL(oc_reserve_parse_bytes("6e9", &v, &st), 0);
    CU_ASSERT_DOUBLE_EQUAL(v, 6e9, 0);
    const char *unit[] = {"unknown unit", NULL};
    oc_test_expect_fail(oc_reserve_parse_bytes("6G", &v, &st), st.msg, unit);
    const char *size[] = {"not a size", NULL};
    oc_test_expect_fail(oc_reserve_parse_bytes("-1GB", &v, &st), st.msg, size);
    oc_test_expect_fail(oc_reserve_parse_bytes("lots", &v, &st), st.msg, size);
}

static CU_TestInfo tests[] = {
    {"nccl, untied model", test_nccl_untied},
    {"nccl, tied model and interleaving", test_nccl_tied},
    {"auto: every term", test_auto_total},
    {"fixed, zeroed and fits", test_fixed_and_fits},
    {"byte sizes", test_parse_bytes},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {{"reserve", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
int main(void) { return oc_test_run(suites); }
