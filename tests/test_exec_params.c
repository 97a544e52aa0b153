/* test_exec_params.c: the executor's parameters (exec/params.c) and data
 * (exec/data.c), and the model's refusals:
 *
 * - init: a weight element has the same value in a t=1 tensor and in its
 *   TP shard; gathering shards reproduces the t=1 arena bitwise.
 * - data: a sample's tokens do not depend on the batch split; the walk
 *   follows the permutation at the stated rate; entropy by hand.
 * - AdamW matches a step worked by hand.
 * - unsupported models and layouts are refused with one line.
 *
 * - the Llama tensor table: no biases, no positions, KV-group rows,
 *   the fused gate | up projection split half by half.
 *
 * The model's forward and backward are tested in test_exec_gpt.c and
 * test_exec_llama.c.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "exec_gpt_fixtures.h"
#include "gpt.h"
#include "params.h"
#include "test_util.h"

/* The QKV weight of layer 3 (tiny, L = 8, C = 64: global shape (192, 64)).
 * At t = 2, shard 1 holds rows [96, 192): global row 101 is its local row
 * 5. attprojw (64, 64) is split by columns: shard 1 holds [32, 64), so
 * global (5, 39) is its local (5, 7). */
static void test_init_counter(void)
{
    struct oc_model m = tiny(8);
    struct oc_status st = {{0}};
    int64_t layers[] = {3};
    struct oc_params one, two;
    struct oc_params_opts o1 = {1, 0, layers, 1, 0, 0, SEED};
    struct oc_params_opts o2 = {2, 1, layers, 1, 0, 0, SEED};
    CU_ASSERT_EQUAL_FATAL(oc_params_init(&one, &m, &o1, &st), 0);
    CU_ASSERT_EQUAL_FATAL(oc_params_init(&two, &m, &o2, &st), 0);

    const float *q1 = oc_params_w(&one, OC_P_QKVW, 3); /* (192, 64) */
    const float *q2 = oc_params_w(&two, OC_P_QKVW, 3); /* (96, 64) */
    float want = oc_params_init_value(&m, SEED, OC_P_QKVW, 3, 101, 7);
    CU_ASSERT_EQUAL(q1[101 * 64 + 7], want);
    CU_ASSERT_EQUAL(q2[5 * 64 + 7], want);
    CU_ASSERT(want != 0.0f);
    /* uniform std 0.02: |value| < 0.02*sqrt(3) = 0.034641 */
    CU_ASSERT(fabsf(want) < 0.034641f);

    const float *p1 = oc_params_w(&one, OC_P_ATTPROJW, 3); /* (64, 64) */
    const float *p2 = oc_params_w(&two, OC_P_ATTPROJW, 3); /* (64, 32) */
    CU_ASSERT_EQUAL(p1[5 * 64 + 39], p2[5 * 32 + 7]);
    /* scaled std 0.02/sqrt(2*8) = 0.005: |value| < 0.005*sqrt(3) = 0.0086603,
     * and the sample std of 4096 values is within 5% of 0.005 */
    double ss = 0;
    float amax = 0;
    for (int64_t i = 0; i < 64 * 64; i++) {
        ss += (double)p1[i] * p1[i];
        amax = fmaxf(amax, fabsf(p1[i]));
    }
    CU_ASSERT(amax < 0.0086603f);
    OC_ASSERT_REL(sqrt(ss / 4096), 0.005, 0.05);

    /* gains 1, biases 0; qkvb of shard 1 is rows [96, 192) of zeros */
    CU_ASSERT_EQUAL(oc_params_w(&two, OC_P_LN1W, 3)[17], 1.0f);
    CU_ASSERT_EQUAL(oc_params_w(&two, OC_P_LN2B, 3)[17], 0.0f);
    CU_ASSERT_EQUAL(oc_params_tensor(&two, OC_P_QKVB, 3)->rows, 96);
    CU_ASSERT_EQUAL(oc_params_tensor(&two, OC_P_QKVB, 3)->row0, 96);
    CU_ASSERT_EQUAL(oc_params_w(&two, OC_P_QKVB, 3)[5], 0.0f);
    /* a layer-3 value is not the layer-2 value of the same position */
    CU_ASSERT(oc_params_init_value(&m, SEED, OC_P_QKVW, 2, 101, 7) != want);
    oc_params_free(&two);
    oc_params_free(&one);

    /* Four t = 4 shards of the whole model gather to the t = 1 arena,
     * bitwise. Arena size of one shard, by hand (C 64, F 256, V 512, P 128,
     * L 2, tied): wte 128*64 + wpe 128*64 = 16384; per layer ln1 2*64 +
     * qkvw 48*64 + qkvb 48 + attprojw 64*16 + attprojb 64 + ln2 2*64 +
     * fcw 64*64 + fcb 64 + fcprojw 64*64 + fcprojb 64 = 12784; lnf 128:
     * 16384 + 2*12784 + 128 = 42080 floats. */
    struct oc_model m2 = tiny(2);
    int64_t all[] = {0, 1};
    struct oc_params whole, q[4];
    struct oc_params_opts ow = {1, 0, all, 2, 1, 1, SEED};
    CU_ASSERT_EQUAL_FATAL(oc_params_init(&whole, &m2, &ow, &st), 0);
    float *g = oc_xcalloc((size_t)whole.n, sizeof *g);
    for (int64_t r = 0; r < 4; r++) {
        struct oc_params_opts o = {4, r, all, 2, 1, 1, SEED};
        CU_ASSERT_EQUAL_FATAL(oc_params_init(&q[r], &m2, &o, &st), 0);
        CU_ASSERT_EQUAL(q[r].n, 42080);
        oc_params_put_whole(&q[r], q[r].w, &whole, g);
    }
    CU_ASSERT(memcmp(g, whole.w, (size_t)whole.n * sizeof *g) == 0);
    /* take_full is the inverse of put_full */
    const struct oc_param_tensor *tq = oc_params_tensor(&q[2], OC_P_FCPROJW, 1);
    const struct oc_param_tensor *tw = oc_params_tensor(&whole, OC_P_FCPROJW, 1);
    float *back = oc_xcalloc((size_t)q[2].n, sizeof *back);
    oc_params_take_full(&q[2], back, tq, whole.w + tw->offset);
    CU_ASSERT(memcmp(back + tq->offset, q[2].w + tq->offset,
                     (size_t)(tq->rows * tq->cols) * sizeof *back) == 0);
    free(back);
    for (int64_t r = 0; r < 4; r++)
        oc_params_free(&q[r]);
    free(g);
    oc_params_free(&whole);
}

/* llama-tiny (C 64, NH 4, NKV 2, HS 16, F 176, V 512, untied) with L = 2
 * at t = 2, rank 1. No biases and no position table. qkvw (2*(2+2)*16,
 * 64) = (128, 64) is split by KV group: rank 1 holds group 1, rows
 * [64, 128). fcw (352, 64) is gate rows [0, 176) then up rows [176, 352):
 * rank 1 holds gate rows [88, 176) and up rows [264, 352), local rows
 * [0, 88) and [88, 176). Arena by hand: wte 256*64 = 16384; per layer
 * ln1w 64 + qkvw 64*64 + attprojw 64*32 + ln2w 64 + fcw 176*64 + fcprojw
 * 64*88 = 64 + 4096 + 2048 + 64 + 11264 + 5632 = 23168 (core's
 * oc_model_layer_params_tp); lnfw 64; lmw 256*64 = 16384: 16384 + 2*23168
 * + 64 + 16384 = 79168 floats. */
static void test_llama_table(void)
{
    struct oc_model m = llama_tiny(2);
    struct oc_status st = {{0}};
    const enum oc_param_kind absent[] = {OC_P_WPE,  OC_P_LN1B,     OC_P_QKVB,
                                         OC_P_ATTPROJB, OC_P_LN2B, OC_P_FCB,
                                         OC_P_FCPROJB,  OC_P_LNFB};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        CU_ASSERT_EQUAL(oc_params_kind_in_model(&m, absent[i]), 0);
    CU_ASSERT_EQUAL(oc_params_kind_in_model(&m, OC_P_FCW), 1);
    const struct oc_model gpt = tiny(2);
    CU_ASSERT_EQUAL(oc_params_kind_in_model(&gpt, OC_P_WPE), 1);
    int64_t all[] = {0, 1};
    struct oc_params whole, q[2];
    struct oc_params_opts ow = {1, 0, all, 2, 1, 1, SEED};
    CU_ASSERT_EQUAL_FATAL(oc_params_init(&whole, &m, &ow, &st), 0);
    /* t = 1: wte 32768 + 2 layers of 46208 + lnfw 64 + lmw 32768 */
    CU_ASSERT_EQUAL(whole.n, 158016);
    for (int64_t r = 0; r < 2; r++) {
        struct oc_params_opts o = {2, r, all, 2, 1, 1, SEED};
        CU_ASSERT_EQUAL_FATAL(oc_params_init(&q[r], &m, &o, &st), 0);
    }
    CU_ASSERT_EQUAL(q[1].n, 79168);
    CU_ASSERT_PTR_NULL(oc_params_w_opt(&q[1], OC_P_QKVB, 1));
    CU_ASSERT_PTR_NULL(oc_params_g_opt(&q[1], OC_P_WPE, -1));
    CU_ASSERT_PTR_EQUAL(oc_params_w_opt(&q[1], OC_P_QKVW, 1), oc_params_w(&q[1], OC_P_QKVW, 1));
    const struct oc_param_tensor *tq = oc_params_tensor(&q[1], OC_P_QKVW, 1);
    CU_ASSERT(tq->rows == 64 && tq->grows == 128 && tq->row0 == 64 && tq->parts == 1);
    const struct oc_param_tensor *tf = oc_params_tensor(&q[1], OC_P_FCW, 1);
    CU_ASSERT(tf->rows == 176 && tf->grows == 352 && tf->row0 == 88 && tf->parts == 2);
    CU_ASSERT_EQUAL(oc_params_global_row(tf, 0), 88);
    CU_ASSERT_EQUAL(oc_params_global_row(tf, 87), 175);
    CU_ASSERT_EQUAL(oc_params_global_row(tf, 88), 264);
    CU_ASSERT_EQUAL(oc_params_global_row(tf, 175), 351);
    const float *fw = oc_params_w(&q[1], OC_P_FCW, 1);
    CU_ASSERT_EQUAL(fw[100 * 64 + 3], oc_params_init_value(&m, SEED, OC_P_FCW, 1, 276, 3));
    CU_ASSERT_EQUAL(fw[10 * 64 + 3], oc_params_init_value(&m, SEED, OC_P_FCW, 1, 98, 3));
    /* gains 1; the down projection at std 0.02/sqrt(2*2) = 0.01 */
    CU_ASSERT_EQUAL(oc_params_w(&q[1], OC_P_LN2W, 0)[5], 1.0f);
    CU_ASSERT(fabsf(oc_params_w(&q[1], OC_P_FCPROJW, 0)[7]) < 0.01f * 1.7320509f);
    /* the two shards gather to the t = 1 arena, bitwise; take_full of the
     * gate | up shard is the inverse of put_full */
    float *g = oc_xcalloc((size_t)whole.n, sizeof *g);
    for (int64_t r = 0; r < 2; r++)
        oc_params_put_whole(&q[r], q[r].w, &whole, g);
    CU_ASSERT(memcmp(g, whole.w, (size_t)whole.n * sizeof *g) == 0);
    const struct oc_param_tensor *tw = oc_params_tensor(&whole, OC_P_FCW, 1);
    float *back = oc_xcalloc((size_t)q[1].n, sizeof *back);
    oc_params_take_full(&q[1], back, tf, whole.w + tw->offset);
    CU_ASSERT(memcmp(back + tf->offset, fw, (size_t)(tf->rows * tf->cols) * sizeof *back) == 0);
    free(back);
    free(g);
    oc_params_free(&q[1]);
    oc_params_free(&q[0]);
    oc_params_free(&whole);
}

static void test_data(void)
{
    struct oc_synth s;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_synth_init(&s, 512, 7, &st), 0);
    const int64_t T = 32;
    int32_t in8[8 * 32], tg8[8 * 32], in4[4 * 32], tg4[4 * 32], in1[32], tg1[32];
    /* step 1 of G = 8 as one batch of 8 ... */
    oc_synth_batch(&s, 8, 8, T, in8, tg8);
    /* ... as d = 2 ranks x m = 2 micro-batches x b = 2: rank 1, mb 0, row 1
     * is global index 1*8 + 1*(8/2) + 0*2 + 1 = 13, row 5 of the batch */
    int64_t g = oc_synth_sample_index(1, 8, 2, 1, 2, 0, 2, 1);
    CU_ASSERT_EQUAL(g, 13);
    oc_synth_sample(&s, g, T, in1, tg1);
    CU_ASSERT(memcmp(in1, in8 + 5 * T, sizeof in1) == 0);
    CU_ASSERT(memcmp(tg1, tg8 + 5 * T, sizeof tg1) == 0);
    /* ... and as two batches of 4 */
    oc_synth_batch(&s, 12, 4, T, in4, tg4);
    CU_ASSERT(memcmp(in4, in8 + 4 * T, sizeof in4) == 0);
    /* every index of the step is hit once: (dp, mb, row) -> [8, 16) */
    int hit[8] = {0};
    for (int64_t r = 0; r < 2; r++)
        for (int64_t mb = 0; mb < 2; mb++)
            for (int64_t row = 0; row < 2; row++)
                hit[oc_synth_sample_index(1, 8, 2, r, 2, mb, 2, row) - 8]++;
    for (int i = 0; i < 8; i++)
        CU_ASSERT_EQUAL(hit[i], 1);

    /* targets are the inputs shifted by one */
    for (int64_t i = 0; i + 1 < T; i++)
        CU_ASSERT_EQUAL(tg1[i], in1[i + 1]);
    /* perm is a permutation */
    int seen[512] = {0};
    for (int i = 0; i < 512; i++)
        seen[s.perm[i]]++;
    int ok = 1;
    for (int i = 0; i < 512; i++)
        ok &= seen[i] == 1;
    CU_ASSERT(ok);
    /* P(next = perm[prev]) = 0.9 + 0.1/512 = 0.900195; over 400*32 =
     * 12800 transitions the std of the rate is sqrt(.9*.1/12800) = 0.0027:
     * 0.02 is 7 std. */
    int64_t follow = 0, n = 0;
    for (int64_t k = 0; k < 400; k++) {
        oc_synth_sample(&s, k, T, in1, tg1);
        for (int64_t i = 0; i < T; i++, n++)
            follow += tg1[i] == s.perm[in1[i]];
    }
    CU_ASSERT_DOUBLE_EQUAL((double)follow / (double)n, 0.900195, 0.02);
    /* H = -q ln q - 511 r ln r, r = 0.1/512 = 1.953125e-4,
     * q = 0.9001953125: -q ln q = 0.9001953125 * 0.1051435 = 0.0946497;
     * -511 r ln r = 0.0998047 * 8.5408636 = 0.8524184; H = 0.947068 nats
     * (vs ln 512 = 6.238325). */
    OC_ASSERT_REL(oc_synth_entropy(&s), 0.947068, 1e-5);
    /* another seed, another permutation */
    struct oc_synth s2;
    CU_ASSERT_EQUAL_FATAL(oc_synth_init(&s2, 512, 8, &st), 0);
    CU_ASSERT(memcmp(s.perm, s2.perm, 512 * sizeof *s.perm) != 0);
    oc_synth_free(&s2);
    oc_synth_free(&s);
    CU_ASSERT_EQUAL(oc_synth_init(&s, 1, 7, &st), -1);
    CU_ASSERT(strstr(st.msg, "vocabulary 1") != NULL);
}

/* AdamW by hand on one element: g = 0.5, w = 1, lr 0.1, b1 0.9, b2 0.999,
 * eps 0, wd 0.01 at step 1: m = 0.05, v = 0.00025, mhat = 0.5, vhat = 0.25,
 * w = 1 - 0.1*0.01*1 - 0.1 * 0.5/0.5 = 0.899 (decayed tensor) and 0.9 for
 * a bias (no decay). */
static void test_adamw_by_hand(void)
{
    struct oc_model m = tiny(1);
    int64_t l[] = {0};
    struct oc_params p;
    struct oc_status st = {{0}};
    struct oc_params_opts o = {1, 0, l, 1, 0, 0, SEED};
    CU_ASSERT_EQUAL_FATAL(oc_params_init(&p, &m, &o, &st), 0);
    float *w = oc_params_w(&p, OC_P_FCW, 0), *b = oc_params_w(&p, OC_P_FCB, 0);
    w[3] = 1.0f;
    b[3] = 1.0f;
    oc_params_g(&p, OC_P_FCW, 0)[3] = 0.5f;
    oc_params_g(&p, OC_P_FCB, 0)[3] = 0.5f;
    const struct oc_adamw h = {0.1f, 0.9f, 0.999f, 0.0f, 0.01f};
    oc_params_adamw(&K, &p, &h, 1);
    CU_ASSERT_DOUBLE_EQUAL(w[3], 0.899, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(b[3], 0.9, 1e-6);
    oc_params_free(&p);
    /* ZeRO-1, DP rank 1 of 2: the moments hold the second half of every
     * tensor, and AdamW leaves the first half alone */
    CU_ASSERT_EQUAL_FATAL(oc_params_init_sharded(&p, &m, &o, 2, 1, &st), 0);
    const struct oc_param_tensor *tb = oc_params_tensor(&p, OC_P_FCB, 0);
    const int64_t n = tb->rows * tb->cols;
    b = oc_params_w(&p, OC_P_FCB, 0);
    b[3] = b[n - 1] = 1.0f;
    oc_params_g(&p, OC_P_FCB, 0)[3] = oc_params_g(&p, OC_P_FCB, 0)[n - 1] = 0.5f;
    oc_params_adamw(&K, &p, &h, 1);
    CU_ASSERT_EQUAL(b[3], 1.0f);
    CU_ASSERT_DOUBLE_EQUAL(b[n - 1], 0.9, 1e-6);
    CU_ASSERT_EQUAL(p.nopt * 2, p.n); /* every tensor of tiny splits evenly */
    oc_params_free(&p);
}

static void test_refusals(void)
{
    struct oc_status st = {{0}};
    struct oc_model m = tiny(2);
    struct oc_model g = m;
    g.num_key_value_heads = 2;
    CU_ASSERT_EQUAL(oc_params_check_model(&g, 1, &st), -1);
    CU_ASSERT(strstr(st.msg, "grouped-query") != NULL);
    struct oc_model ll = m; /* a GPT-2 block under Llama's name */
    ll.arch = OC_ARCH_LLAMA;
    CU_ASSERT_EQUAL(oc_params_check_model(&ll, 1, &st), -1);
    CU_ASSERT(strstr(st.msg, "is not Llama style") != NULL);
    struct oc_model lt = llama_tiny(2); /* 2 KV heads: TP 2, not 4 */
    CU_ASSERT_EQUAL(oc_params_check_model(&lt, 2, &st), 0);
    CU_ASSERT_EQUAL(oc_params_check_model(&lt, 4, &st), -1);
    oc_test_msg_has(st.msg, "exec: KV heads 2 of model 'llama-tiny' does not split over TP 4");
    CU_ASSERT_EQUAL(oc_params_check_model(&m, 8, &st), -1); /* 4 heads */
    CU_ASSERT(strstr(st.msg, "heads 4") != NULL);
    struct oc_model v = m;
    v.vocab_size = 514;
    CU_ASSERT_EQUAL(oc_params_check_model(&v, 4, &st), -1);
    CU_ASSERT(strstr(st.msg, "vocabulary 514") != NULL);

    struct oc_layout l;
    oc_layout_default(&l); /* sequence parallel and flash attention by default */
    l.tp = 2;
    l.seq_length = 32;
    CU_ASSERT_EQUAL(oc_gpt_check_layout(&m, &l, &st), 0); /* both run */
    struct oc_gpt_dims d;
    CU_ASSERT_EQUAL_FATAL(oc_gpt_dims_layout(&d, &m, &l, 1, &st), 0);
    /* rank 1 of 2 holds the second half of the 32 * micro-batch rows */
    CU_ASSERT_EQUAL(d.sp, 1);
    CU_ASSERT_EQUAL(d.flash, 1);
    CU_ASSERT_EQUAL(d.n, 16 * l.micro_batch);
    CU_ASSERT_EQUAL(d.s0, 16 * l.micro_batch);
    CU_ASSERT_EQUAL(oc_gpt_stream_floats(&d), d.n * 64);
    l.sequence_parallel = 0;
    l.attention = OC_ATTN_CLASSIC;
    CU_ASSERT_EQUAL(oc_gpt_check_layout(&m, &l, &st), 0);
    CU_ASSERT_EQUAL_FATAL(oc_gpt_dims_layout(&d, &m, &l, 1, &st), 0);
    CU_ASSERT(d.sp == 0 && d.flash == 0 && d.n == 32 * l.micro_batch && d.s0 == 0);
    l.seq_length = 129; /* P = 128 */
    CU_ASSERT_EQUAL(oc_gpt_check_layout(&m, &l, &st), -1);
    CU_ASSERT(strstr(st.msg, "129") != NULL);
    /* rope_scaling the executor has no rule for, one line */
    l.seq_length = 32;
    CU_ASSERT_EQUAL(oc_gpt_check_layout(&lt, &l, &st), 0);
    struct oc_model yarn;
    CU_ASSERT_EQUAL_FATAL(oc_model_load(OC_TEST_DATA "/model_llama_rope_yarn.json", &yarn,
                                        &st), 0);
    CU_ASSERT_EQUAL(oc_gpt_check_layout(&yarn, &l, &st), -1);
    oc_test_msg_has(st.msg, "exec: model 'model_llama_rope_yarn' has rope_scaling type "
                            "'yarn'; the executor runs none, 'linear' and 'llama3'");
    CU_ASSERT(strchr(st.msg, '\n') == NULL);
    CU_ASSERT_EQUAL(oc_gpt_dims_init(&d, &m, 2, 2, 1, 8, &st), -1);
    CU_ASSERT(strstr(st.msg, "TP rank 2") != NULL);

    int64_t bad[] = {0, 0};
    struct oc_params p;
    struct oc_params_opts o = {1, 0, bad, 2, 0, 0, SEED};
    CU_ASSERT_EQUAL(oc_params_init(&p, &m, &o, &st), -1);
    CU_ASSERT(strstr(st.msg, "twice") != NULL);
    bad[1] = 2;
    CU_ASSERT_EQUAL(oc_params_init(&p, &m, &o, &st), -1);
    CU_ASSERT(strstr(st.msg, "layer 2") != NULL);
}

static CU_TestInfo tests[] = {
    {"init_counter", test_init_counter},
    {"llama_table", test_llama_table},
    {"data", test_data},
    {"adamw_by_hand", test_adamw_by_hand},
    {"refusals", test_refusals},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"exec_params", gpt_suite_init, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
