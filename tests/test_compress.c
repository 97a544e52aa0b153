/* test_compress.c: gradient compression and local SGD (core/compress.h):
 * the layout parts and their round trip, the rules and bad values, the
 * bytes of each method's exchange worked by hand, the memory of the
 * error-feedback buffers in memory.c and in the schedule, the simulated DP
 * time of a top-k layout against its closed form (an all-gather, growing
 * with DP), and bound <= simulated for compressed layouts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bound.h"
#include "closed_form.h"
#include "compress.h"
#include "cost.h"
#include "memory.h"
#include "schedule.h"
#include "search.h"
#include "sweep.h"
#include "test_util.h"

static int load(struct oc_model *m, struct oc_topology *t, const char *model)
{
    struct oc_status st = {{0}};
    if (oc_model_load(model, m, &st) != 0 || oc_topology_load("h100-100g", t, &st) != 0) {
        fprintf(stderr, "%s\n", st.msg);
        return -1;
    }
    return 0;
}

static struct oc_layout parsed(const char *s, int64_t gb, int64_t seq)
{
    struct oc_layout l;
    oc_layout_default(&l);
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_layout_parse(&l, s, &st), st.msg);
    l.global_batch = gb;
    l.seq_length = seq;
    return l;
}

/* Every label prints its knob and parses back to the same layout. */
static void test_label_round_trip(void)
{
    const char *in[] = {"tp1-pp1-dp8-gc=topk0.01", "tp1-pp1-dp8-gc=topk0.001",
                        "tp1-pp1-dp8-gc=topk1",     "tp1-pp1-dp8-gc=q8",
                        "tp1-pp1-dp8-gc=q1",        "tp1-pp2-dp4-gc=psgd4",
                        "tp1-pp1-dp8-zero0-sync4",  "tp1-pp1-dp8-gc=topk0.125-zero0"};
    const char *want[] = {"gc=topk0.01", "gc=topk0.001", "gc=topk1.0", "gc=q8",
                          "gc=q1",       "gc=psgd4",     "sync4",      "gc=topk0.125"};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        struct oc_layout a = parsed(in[i], 64, 128), b;
        char buf[256];
        oc_layout_format(&a, buf, sizeof buf);
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, want[i]));
        oc_layout_default(&b);
        b.global_batch = 64, b.seq_length = 128;
        struct oc_status st = {{0}};
        oc_test_expect_ok(oc_layout_parse(&b, buf, &st), st.msg);
        CU_ASSERT_EQUAL(oc_layout_cmp_except(&a, &b, 0), 0);
    }
    /* sync1 and gc=none are the defaults: nothing printed */
    struct oc_layout d = parsed("tp1-pp1-dp8-sync1-gc=none", 64, 128);
    char buf[256];
    oc_layout_format(&d, buf, sizeof buf);
    CU_ASSERT_PTR_NULL(strstr(buf, "sync"));
    CU_ASSERT_PTR_NULL(strstr(buf, "gc="));
    CU_ASSERT_FALSE(oc_gc_on(&d));
}

/* Bad values: one line naming the range; twice-named knobs refused. */
static void test_bad_values(void)
{
    static const struct {
        const char *s, *sub;
    } bad[] = {
        {"tp1-pp1-dp8-gc=topk0", "density in (0, 1]"},
        {"tp1-pp1-dp8-gc=topk1.5", "density in (0, 1]"},
        {"tp1-pp1-dp8-gc=topkx", "density in (0, 1]"},
        {"tp1-pp1-dp8-gc=psgd0", "rank, an integer >= 1"},
        {"tp1-pp1-dp8-sync0", "K an integer >= 1"},
        {"tp1-pp1-dp8-gc=zip", "unknown gradient compression"},
        {"tp1-pp1-dp8-gc=q1-gc=q8", "both give the gradient compression"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct oc_layout l;
        oc_layout_default(&l);
        struct oc_status st = {{0}};
        const char *subs[] = {bad[i].sub, NULL};
        oc_test_expect_fail(oc_layout_parse(&l, bad[i].s, &st), st.msg, subs);
    }
    /* the rules that need the whole layout */
    struct oc_model m;
    struct oc_topology t;
    CU_ASSERT_FATAL(load(&m, &t, "gpt3-1.3b") == 0);
    static const struct {
        const char *s, *sub;
    } refused[] = {
        {"tp1-pp1-dp8-gc=q1-zero2", "ZeRO stage 2 is not modelled"},
        {"tp1-pp1-dp8-gc=topk0.01-zero3", "ZeRO stage 3 is not modelled"},
        {"tp1-pp1-dp8-sync4", "needs zero0"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        struct oc_layout l = parsed(refused[i].s, 64, 128);
        struct oc_status st = {{0}};
        const char *subs[] = {refused[i].sub, NULL};
        oc_test_expect_fail(oc_layout_validate(&l, &m, &t, 8, &st), st.msg, subs);
    }
    struct oc_layout both = parsed("tp1-pp1-dp8-zero0-sync4", 64, 128);
    both.gc = OC_GC_Q1;
    struct oc_status st = {{0}};
    const char *subs[] = {"choose one", NULL};
    oc_test_expect_fail(oc_layout_validate(&both, &m, &t, 8, &st), st.msg, subs);
    /* --compression lists */
    struct oc_gc_setting g[OC_GC_MAX_LIST];
    int n = 0;
    oc_test_expect_ok(oc_gc_parse_list("none,topk0.01,q8,q1,psgd4,sync4", g, OC_GC_MAX_LIST,
                                       &n, &st),
                      st.msg);
    CU_ASSERT_EQUAL(n, 6);
    CU_ASSERT_EQUAL(g[1].gc, OC_GC_TOPK);
    CU_ASSERT_EQUAL(g[1].density, 0.01);
    CU_ASSERT_EQUAL(g[4].rank, 4);
    CU_ASSERT_EQUAL(g[5].sync_every, 4);
    const char *twice[] = {"given twice", NULL};
    oc_test_expect_fail(oc_gc_parse_list("none,sync1", g, OC_GC_MAX_LIST, &n, &st), st.msg,
                        twice);
    const char *range[] = {"density in (0, 1]", NULL};
    oc_test_expect_fail(oc_gc_parse_list("q1,topk2", g, OC_GC_MAX_LIST, &n, &st), st.msg,
                        range);
}

/* The exchange of stage 1 of gpt3-1.3b tp1-pp4-dp8 (6 of the 24 layers,
 * no embedding, no head), by hand. A layer (GPT-3 shapes, h = 2048, f =
 * 8192, 16 heads): matrices QKV 2048 x 6144, out 2048 x 2048, fc1 2048 x
 * 8192, fc2 8192 x 2048 = 50,331,648 elements; vectors: biases 6144 +
 * 2048 + 8192 + 2048 and two LayerNorms 2 x 2 x 2048 = 26,624. N = 6 x
 * 50,358,272 = 302,149,632. Gradients reduced in fp32 under bf16 (g = 4);
 * d = 8. */
static void test_bytes_by_hand(void)
{
    struct oc_model m;
    struct oc_topology t;
    CU_ASSERT_FATAL(load(&m, &t, "gpt3-1.3b") == 0);
    const double N = 302149632.0, d = 8, g = 4;
    struct oc_layout l = parsed("tp1-pp4-dp8-mb1-gc=topk0.01", 64, 128);
    CU_ASSERT_EQUAL(oc_mem_stage_params(&m, &l, 1), 302149632);
    CU_ASSERT_EQUAL(oc_mem_param_bytes(&l).grad, g);
    struct oc_gc_plan p;

    /* top-k 1%: K = ceil(3,021,496.32) = 3,021,497 pairs of 8 bytes per
     * rank, all-gathered: 8 x 3,021,497 x 8 = 193,375,808 bytes, d times
     * one rank's; error feedback 4 N */
    oc_gc_plan(&m, &l, 1, &p);
    CU_ASSERT_EQUAL(p.n, 1);
    CU_ASSERT_EQUAL(p.step[0].coll, OC_COLL_ALLGATHER);
    CU_ASSERT_EQUAL(p.step[0].bytes, 193375808.0);
    CU_ASSERT_EQUAL(p.mem_bytes, 4 * N);
    /* kernels: error-feedback accumulate (read g = 4, read and write the
     * fp32 residual: 12 B), 3 reads of the sum to select (12 B), 16 B per
     * kept pair (read its value, write the pair, zero its residual):
     * 24 N + 16 K; decompression writes the dense gradient (4 N) and
     * scatter-adds d K pairs (read 8, read and write 4: 16 B each) */
    const double K = 3021497.0;
    CU_ASSERT_EQUAL(p.step[0].kernel_bytes, 24 * N + 16 * K);
    CU_ASSERT_EQUAL(p.final_bytes, 4 * N + d * K * 16);
    /* at d = 16 the gathered buffer doubles: the all-gather grows with DP */
    struct oc_layout l16 = parsed("tp1-pp2-dp16-mb1-gc=topk0.01", 64, 128);
    struct oc_gc_plan p16;
    oc_gc_plan(&m, &l16, 1, &p16);
    const double N16 = (double)oc_mem_stage_params(&m, &l16, 1);
    CU_ASSERT_EQUAL(p16.step[0].bytes, 16 * ceil(0.01 * N16) * 8);

    /* 1-bit: N/8 bytes of signs + one fp32 scale per chunk (d), as an
     * all-reduce: 37,768,704 + 32; error feedback 4N + 4N/d */
    l.gc = OC_GC_Q1;
    oc_gc_plan(&m, &l, 1, &p);
    CU_ASSERT_EQUAL(p.n, 1);
    CU_ASSERT_EQUAL(p.step[0].coll, OC_COLL_ALLREDUCE);
    CU_ASSERT_EQUAL(p.step[0].bytes, 37768736.0);
    CU_ASSERT_EQUAL(p.mem_bytes, 4 * N + 4 * N / d);
    /* 8-bit: N bytes + 32 */
    l.gc = OC_GC_Q8;
    oc_gc_plan(&m, &l, 1, &p);
    CU_ASSERT_EQUAL(p.step[0].bytes, 302149664.0);

    /* PowerSGD rank 4: per layer P rows 2048 + 2048 + 2048 + 8192 =
     * 14,336, Q columns 6144 + 2048 + 8192 + 2048 = 18,432; fp32: P all-
     * reduce 4 x 4 x 6 x 14,336 = 1,376,256 bytes, Q 4 x 4 x 6 x 18,432 =
     * 1,769,472; vectors 6 x 26,624 x 4 = 638,976 bytes uncompressed,
     * first. Memory: 4 x 6 x 50,331,648 (residual) + 1,376,256 +
     * 1,769,472 (P and Q). */
    l.gc = OC_GC_POWERSGD, l.gc_rank = 4;
    oc_gc_plan(&m, &l, 1, &p);
    CU_ASSERT_EQUAL(p.n, 3);
    CU_ASSERT_EQUAL(p.step[0].coll, OC_COLL_ALLREDUCE);
    CU_ASSERT_EQUAL(p.step[0].bytes, 638976.0);
    CU_ASSERT_EQUAL(p.step[1].bytes, 1376256.0);
    CU_ASSERT_EQUAL(p.step[2].bytes, 1769472.0);
    CU_ASSERT_EQUAL(p.mem_bytes, 4.0 * 6 * 50331648 + 1376256.0 + 1769472.0);
    /* GEMMs P = MQ and Q = M^T P: 2 r n m each, 8 x 6 x 50,331,648 */
    CU_ASSERT_EQUAL(p.step[1].kernel_flops, 8.0 * 6 * 50331648);

    /* local SGD every 4 steps: a full all-reduce of g N bytes, a quarter
     * per step; no extra memory */
    struct oc_layout s4 = parsed("tp1-pp4-dp8-mb1-zero0-sync4", 64, 128);
    oc_gc_plan(&m, &s4, 1, &p);
    CU_ASSERT_EQUAL(p.n, 1);
    CU_ASSERT_EQUAL(p.step[0].coll, OC_COLL_ALLREDUCE);
    CU_ASSERT_EQUAL(p.step[0].bytes, g * N / 4);
    CU_ASSERT_EQUAL(p.mem_bytes, 0);

    /* no gradient group: nothing exchanged, nothing kept */
    struct oc_layout one = parsed("tp1-pp4-dp1-mb1-gc=q1", 64, 128);
    oc_gc_plan(&m, &one, 1, &p);
    CU_ASSERT_EQUAL(p.n, 0);
    CU_ASSERT_EQUAL(p.mem_bytes, 0);
}

/* A compression kernel costs its bytes at the memory-bound bandwidth and
 * its FLOPs at the sustained GEMM rate (h100-100g: 989.4e12 x its
 * gemm_efficiency); cost.c times a part-ALL op outside the optimizer so. */
static void test_kernel_cost(void)
{
    struct oc_model m;
    struct oc_topology t;
    CU_ASSERT_FATAL(load(&m, &t, "gpt3-1.3b") == 0);
    const double mem = oc_cost_mem_Bps(&t);
    OC_ASSERT_REL(oc_gc_kernel_s(&t, 1e9, 0), 1e9 / mem, 1e-12);
    const double rate = t.device.peak_flops_16bit * t.device.gemm_efficiency;
    OC_ASSERT_REL(oc_gc_kernel_s(&t, 1e9, 1e12), 1e9 / mem + 1e12 / rate, 1e-12);
    struct oc_layout l = parsed("tp1-pp4-dp8-mb1-gc=q1", 64, 128);
    struct oc_cost c;
    oc_cost_init(&c, &m, &l, &t);
    struct oc_op op;
    memset(&op, 0, sizeof op);
    op.kind = OC_OP_COMPUTE, op.phase = OC_PHASE_BWD, op.part = OC_PART_ALL;
    op.hbm_bytes = 2e9, op.flops = 3e12;
    OC_ASSERT_REL(oc_cost_op_s(&c, &op, &l, &m), 2e9 / mem + 3e12 / rate, 1e-12);
}

/* The schedule of a compressed layout: after the last backward, kernel,
 * DP collective (top-k: an all-gather), kernel; no gradient bucket under
 * --overlap-grad-reduce (the default); the uncompressed layout keeps its
 * async buckets. */
static void test_schedule_ops(void)
{
    struct oc_model m;
    struct oc_topology t;
    CU_ASSERT_FATAL(load(&m, &t, "gpt3-1.3b") == 0);
    const char *names[] = {"tp1-pp1-dp8-mb1-zero0-gc=topk0.01", "tp1-pp1-dp8-mb1-zero0"};
    for (int i = 0; i < 2; i++) {
        struct oc_layout l = parsed(names[i], 64, 128);
        struct oc_schedule s;
        struct oc_status st = {{0}};
        struct oc_schedule_opts so = {OC_GRAIN_CHUNK, 1, NULL};
        oc_test_expect_ok(oc_schedule_build(&s, &m, &l, &so, &st), st.msg);
        const struct oc_rank_ops *ro = &s.ranks[0];
        int64_t dp = 0, async = 0, ag = -1, kern = 0;
        for (int64_t k = 0; k < ro->n; k++) {
            const struct oc_op *o = &ro->ops[k];
            if (o->kind == OC_OP_COLLECTIVE && o->group == OC_GROUP_DP) {
                dp++;
                async += o->async;
                if (o->coll == OC_COLL_ALLGATHER)
                    ag = k;
            }
            kern += o->kind == OC_OP_COMPUTE && o->part == OC_PART_ALL &&
                    o->phase == OC_PHASE_BWD;
        }
        if (i == 0) {
            CU_ASSERT_EQUAL(dp, 1);
            CU_ASSERT_EQUAL(async, 0);
            CU_ASSERT_EQUAL(kern, 2);
            CU_ASSERT_FATAL(ag > 0 && ag + 1 < ro->n);
            CU_ASSERT_EQUAL(ro->ops[ag - 1].kind, OC_OP_COMPUTE);
            CU_ASSERT_EQUAL(ro->ops[ag + 1].kind, OC_OP_COMPUTE);
        } else {
            CU_ASSERT_TRUE(async >= 1 && async == dp);
            CU_ASSERT_EQUAL(kern, 0);
        }
        oc_schedule_free(&s);
    }
}

/* The memory of the error-feedback buffers: memory.c's optimizer bytes
 * grow by exactly the plan's, and the schedule allocates the same (its
 * optimizer-buffer ALLOCs of a rank of stage 1 sum to memory.c's). */
static void test_memory(void)
{
    struct oc_model m;
    struct oc_topology t;
    CU_ASSERT_FATAL(load(&m, &t, "gpt3-1.3b") == 0);
    const char *names[] = {"tp1-pp4-dp8-mb1-zero0-gc=topk0.01", "tp1-pp4-dp8-mb1-gc=q1",
                           "tp1-pp4-dp8-mb1-zero0-gc=psgd4"};
    const double N = 302149632.0;
    const double want[] = {4 * N, 4 * N + 4 * N / 8, 4.0 * 6 * 50331648 + 1376256.0 + 1769472.0};
    for (int i = 0; i < 3; i++) {
        struct oc_layout l = parsed(names[i], 64, 128), plain = l;
        plain.gc = OC_GC_NONE;
        struct oc_mem_breakdown a, b;
        oc_memory_stage(&m, &l, 1, &a);
        oc_memory_stage(&m, &plain, 1, &b);
        CU_ASSERT_EQUAL(a.compress_bytes, want[i]);
        OC_ASSERT_REL(a.optimizer_bytes - b.optimizer_bytes, want[i], 1e-12);
        OC_ASSERT_REL(a.total_bytes - b.total_bytes, want[i], 1e-12);
        struct oc_schedule s;
        struct oc_status st = {{0}};
        struct oc_schedule_opts so = {OC_GRAIN_CHUNK, 1, NULL};
        oc_test_expect_ok(oc_schedule_build(&s, &m, &l, &so, &st), st.msg);
        const int64_t rank = oc_layout_rank(&l, (struct oc_coord){0, 1, 0, 0});
        double opt = 0;
        const struct oc_rank_ops *ro = &s.ranks[rank];
        for (int64_t k = 0; k < ro->n; k++)
            if (ro->ops[k].kind == OC_OP_ALLOC && ro->ops[k].buf == OC_BUF_OPTIMIZER)
                opt += ro->ops[k].bytes;
        OC_ASSERT_REL(opt, a.optimizer_bytes, 1e-12);
        oc_schedule_free(&s);
    }
}

/* ---- simulated ------------------------------------------------------- */

struct got {
    struct oc_metrics *mt;
    int64_t failed;
};

static void done(void *ctx, int64_t i, const struct oc_metrics *mt, const char *err)
{
    struct got *g = ctx;
    (void)err;
    if (mt)
        g->mt[i] = *mt;
    else
        g->failed++;
}

static void simulate(const struct oc_model *m, const struct oc_topology *t,
                     struct oc_layout *lay, int64_t k, struct oc_metrics *out)
{
    struct oc_model mm = *m;
    struct oc_topology tt = *t;
    struct got g = {out, 0};
    struct oc_sweep_opts so = {.jobs = 2, .on_done = done, .ctx = &g};
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_sweep_run(lay, k, &mm, &tt, &so, &st), 0);
    CU_ASSERT_EQUAL(g.failed, 0);
}

/* Top-k 1% on gpt3-1.3b tp8-pp1-dpD, zero0 (the all-gather is the only
 * DP collective), D = 2, 4, 8 on D nodes of h100-100g: the simulated DP
 * time against the closed form's (oc_cf_step: the ring all-gather of the
 * d*K*8-byte buffer, core/compress.h), and its growth with D: a ring
 * all-gather moves (D-1)/D of a buffer that is D times one rank's, so
 * (D-1) times one rank's pairs cross each hop: D = 8 takes about 7 times
 * D = 2 (the latency aside), where the uncompressed all-reduce grows only
 * as 2(D-1)/D. */
static void test_topk_sim_vs_closed_form(void)
{
    struct oc_model m;
    struct oc_topology t;
    CU_ASSERT_FATAL(load(&m, &t, "gpt3-1.3b") == 0);
    const char *names[] = {"tp8-pp1-dp2-mb1-zero0-gc=topk0.01", "tp8-pp1-dp4-mb1-zero0-gc=topk0.01",
                           "tp8-pp1-dp8-mb1-zero0-gc=topk0.01"};
    const int64_t D[] = {2, 4, 8};
    struct oc_layout lay[3];
    struct oc_metrics mt[3];
    memset(mt, 0, sizeof mt);
    for (int i = 0; i < 3; i++)
        lay[i] = parsed(names[i], D[i], 1024);
    simulate(&m, &t, lay, 3, mt);
    double cf[3];
    for (int i = 0; i < 3; i++) {
        struct oc_cf_step c;
        oc_cf_step(&m, &lay[i], &t, &c);
        cf[i] = c.dp_comm_s;
        fprintf(stderr, "%s: simulated DP %.6g s, closed form %.6g s\n", names[i],
                mt[i].dp_comm_s, cf[i]);
        OC_ASSERT_REL(mt[i].dp_comm_s, cf[i], 0.10);
    }
    CU_ASSERT_TRUE(mt[2].dp_comm_s > 5.0 * mt[0].dp_comm_s);
    CU_ASSERT_TRUE(cf[2] > 6.0 * cf[0] && cf[2] < 7.0 * cf[0]);
    /* the all-reduce methods against the same closed form: 1-bit, and
     * PowerSGD's three all-reduces in a row */
    const char *ar[] = {"tp8-pp1-dp4-mb1-zero0-gc=q1", "tp8-pp1-dp4-mb1-zero0-gc=psgd4",
                        "tp8-pp1-dp4-mb1-zero0-sync4"};
    for (int i = 0; i < 3; i++)
        lay[i] = parsed(ar[i], 4, 1024);
    simulate(&m, &t, lay, 3, mt);
    for (int i = 0; i < 3; i++) {
        struct oc_cf_step c;
        oc_cf_step(&m, &lay[i], &t, &c);
        fprintf(stderr, "%s: simulated DP %.6g s, closed form %.6g s\n", ar[i],
                mt[i].dp_comm_s, c.dp_comm_s);
        OC_ASSERT_REL(mt[i].dp_comm_s, c.dp_comm_s, 0.10);
    }
}

/* The sweep's pruning: bound <= simulated step for compressed layouts of
 * every method, with and without pipeline stages, ZeRO-1 and overlap
 * asked (the compressed exchange runs after the backward whatever). */
static void test_bound_below_sim(void)
{
    struct oc_model m;
    struct oc_topology t;
    CU_ASSERT_FATAL(load(&m, &t, "gpt3-1.3b") == 0);
    const char *names[] = {
        "tp1-pp1-dp16-mb1-gc=topk0.01",      "tp1-pp1-dp16-mb1-zero0-gc=topk0.001",
        "tp1-pp1-dp16-mb1-gc=q1",            "tp1-pp1-dp16-mb1-zero0-gc=q8",
        "tp1-pp1-dp16-mb1-gc=psgd4",         "tp1-pp1-dp16-mb1-zero0-sync4",
        "tp1-pp2-dp8-mb1-v2-gc=q1",          "tp2-pp2-dp4-mb1-1f1b-gc=topk0.01",
        "tp1-pp2-dp8-mb1-1f1b-zero0-sync8",  "tp1-pp4-dp4-mb1-1f1b-gc=psgd1-order=tp-pp-dp",
    };
    enum { K = sizeof names / sizeof names[0] };
    struct oc_layout lay[K];
    struct oc_metrics mt[K];
    memset(mt, 0, sizeof mt);
    for (int i = 0; i < K; i++)
        lay[i] = parsed(names[i], 32, 1024);
    simulate(&m, &t, lay, K, mt);
    for (int i = 0; i < K; i++) {
        struct oc_bound bd;
        oc_bound_step(&m, &lay[i], &t, &bd);
        if (!(bd.step_s <= mt[i].step_time_s))
            fprintf(stderr, "%s: bound %.9g s > simulated %.9g s\n", names[i], bd.step_s,
                    mt[i].step_time_s);
        CU_ASSERT_TRUE(bd.step_s > 0 && bd.step_s <= mt[i].step_time_s);
    }
    /* compression lowers the simulated step where DP dominates (one rank
     * per node... here 8 per node over 100 Gb/s: 1-bit against the plain
     * reduction of the same layout) */
    struct oc_layout pl[2] = {parsed("tp1-pp1-dp16-mb1-zero0", 32, 1024),
                              parsed("tp1-pp1-dp16-mb1-zero0-gc=q1", 32, 1024)};
    struct oc_metrics pm[2];
    simulate(&m, &t, pl, 2, pm);
    CU_ASSERT_TRUE(pm[1].dp_comm_s < pm[0].dp_comm_s / 4);
}

/* --compression in the search: without it the space is unchanged; with a
 * list, every knob set with a gradient group gets each value, the others
 * keep none. */
static void test_search_space(void)
{
    struct oc_model m;
    struct oc_topology t;
    CU_ASSERT_FATAL(load(&m, &t, "gpt3-1.3b") == 0);
    struct oc_layout b;
    oc_layout_default(&b);
    b.global_batch = 32, b.seq_length = 1024;
    struct oc_search_space s;
    oc_search_space_default(&s, 16, &b);
    s.fixed = ~0u & ~(OC_LAYOUT_NAMED_TP | OC_LAYOUT_NAMED_PP | OC_LAYOUT_NAMED_DP);
    s.n_schedules = 1, s.schedules[0] = OC_SCHED_1F1B, s.vchunks[0] = 1;
    s.even_stages = 1;
    struct oc_candidate *c0 = NULL, *c1 = NULL;
    const int64_t n0 = oc_search_enumerate(&s, &m, &t, &c0, NULL);
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_gc_parse_list("none,q1,topk0.01", s.compress, OC_GC_MAX_LIST,
                                       &s.n_compress, &st),
                      st.msg);
    const int64_t n1 = oc_search_enumerate(&s, &m, &t, &c1, NULL);
    /* each knob set with a gradient group (not refused whole) gets the two
     * compressed values beside none; the first candidates, dp = 1 (tp16
     * alone is refused: TP spans nodes), are the same in both */
    int64_t q1 = 0, topk = 0, valid_gc = 0;
    for (int64_t i = 0; i < n1; i++) {
        q1 += c1[i].layout.gc == OC_GC_Q1;
        topk += c1[i].layout.gc == OC_GC_TOPK;
        valid_gc += c1[i].layout.gc != OC_GC_NONE && c1[i].valid;
        if (c1[i].layout.dp == 1)
            CU_ASSERT_EQUAL(c1[i].layout.gc, OC_GC_NONE);
    }
    CU_ASSERT_TRUE(q1 > 0 && valid_gc > 0);
    CU_ASSERT_EQUAL(q1, topk);
    CU_ASSERT_EQUAL(n1, n0 + q1 + topk);
    free(c0);
    free(c1);
}

static CU_TestInfo tests[] = {
    {"labels print and parse back", test_label_round_trip},
    {"bad values and refused combinations", test_bad_values},
    {"bytes of each method by hand", test_bytes_by_hand},
    {"error-feedback memory in memory.c and the schedule", test_memory},
    {"kernel cost", test_kernel_cost},
    {"schedule: kernels around the exchange, no buckets", test_schedule_ops},
    {"search: --compression", test_search_space},
    {"top-k: simulated DP time vs closed form, grows with DP", test_topk_sim_vs_closed_form},
    {"bound <= simulated, compressed layouts", test_bound_below_sim},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"compress", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
