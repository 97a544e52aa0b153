/* test_sim_attribution.c: where the replay (sim/replay*.c, through
 * core/step_metrics.c) puts time, figure by figure, on layouts small
 * enough to work out by hand: a DP reduction that overlapped backward
 * hides an amount computed from its bytes, and a slow pipeline link whose
 * transfer time is exposed communication, not bubble. test_sim_replay.c
 * checks the sums (compute + exposed + bubble = step) and the pipeline
 * with free links; these check each bucket, so time put in the wrong one
 * fails here.
 *
 * Model: the shipped "tiny" GPT (h = 64, a = 4, L = 8, f = 256, V = 512,
 * P = 128), sequence 128, micro-batch 1, untied embeddings (no embedding
 * all-reduce), bf16 (2 bytes per gradient and activation element).
 * Every simulation runs in a forked child (oc_replay_run_forked).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "replay.h"
#include "sim_fixtures.h"
#include "test_util.h"

static struct oc_model tiny_untied(void)
{
    struct oc_model m;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_model_load("tiny", &m, &st), 0);
    m.tie_word_embeddings = 0;
    return m;
}

/* sim_fixtures.h's platform with gpn GPUs and as many NICs per node (no
 * NIC shared): a hop across nodes has latency LN = 4e-6 s and bandwidth
 * BN = 25e9 B/s; the links inside a node of bw_i B/s and lat_i s; an
 * H100-like device slowed to 1e12 FLOP/s, so that a chunk's backward
 * (milliseconds) is long against the messages below. */
static struct oc_topology topo_attr(int64_t gpn, double bw_i, double lat_i)
{
    struct oc_topology t = topo(gpn, gpn, 1, 1);
    t.intra_bandwidth_Bps = bw_i;
    t.intra_latency_s = lat_i;
    strcpy(t.device.name, "slow-h100-like");
    t.device.peak_flops_16bit = 1e12;
    t.device.memory_bytes = 80e9;
    t.device.hbm_bandwidth_Bps = 3.35e12;
    t.device.sm_count = 132;
    t.device.gemm_efficiency = 0.75;
    return t;
}

static struct oc_layout lay(const char *s, int64_t global_batch)
{
    struct oc_layout l;
    struct oc_status st = {{0}};
    oc_layout_default(&l);
    CU_ASSERT_EQUAL_FATAL(oc_layout_parse(&l, s, &st), 0);
    l.global_batch = global_batch;
    l.seq_length = 128;
    l.grad_fp32 = -1; /* 16-bit gradients: the byte counts below */
    return l;
}

/* Uniform stages: the embedding, the head and the optimizer cost no time
 * (replay.h), so every stage computes the same and the pipeline is the
 * textbook one. */
static struct oc_metrics *replay(const struct oc_model *m, const struct oc_topology *t,
                                 const struct oc_layout *l, enum oc_sim_fidelity f)
{
    struct oc_metrics *mt = calloc(1, sizeof *mt);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mt);
    struct oc_replay_opts o;
    memset(&o, 0, sizeof o);
    o.fidelity = f;
    o.uniform_stages = 1;
    struct oc_status st = {{0}};
    int rc = oc_replay_run_forked(m, t, l, &o, mt, 60.0, &st);
    if (rc != 0)
        fprintf(stderr, "\n  %s\n", st.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    return mt;
}

/* One stage's forward (f) and backward (b, with the recompute the
 * backward carries) of one chunk and micro-batch, from the cost table as
 * test_sim_replay.c's check_pipeline takes them: what is checked here is
 * where communication goes, not what compute costs. */
static void chunk_costs(const struct oc_model *m, const struct oc_layout *l,
                        const struct oc_topology *t, double *f, double *b)
{
    struct oc_cost c;
    oc_cost_init(&c, m, l, t);
    const double lc = (double)oc_layout_layers_per_chunk(l, m);
    *f = lc * (c.part_s[OC_PART_ATTN][OC_PHASE_FWD] + c.part_s[OC_PART_MLP][OC_PHASE_FWD]);
    *b = lc * (c.part_s[OC_PART_ATTN][OC_PHASE_BWD] + c.part_s[OC_PART_MLP][OC_PHASE_BWD] +
               c.part_s[OC_PART_ATTN][OC_PHASE_RECOMPUTE] +
               c.part_s[OC_PART_MLP][OC_PHASE_RECOMPUTE]);
    CU_ASSERT_FATAL(*f > 0 && *b > 0);
}

/* ---- DP overlap ----------------------------------------------------------- */

/* tp1-pp2-dp2, interleaved with v = 2 chunks of Lc = 2 layers, m = 4
 * micro-batches (G = 8), plain DP all-reduce (no ZeRO), rank order
 * tp-pp-dp on nodes of 2 GPUs: node 0 holds replica 0's stages 0 and 1,
 * node 1 replica 1's. The pipeline's links are inside a node and free
 * (1e20 B/s, no latency); each DP pair (0, 2) and (1, 3) crosses the
 * nodes on NICs of its own: a ring all-reduce of S bytes over N = 2 takes
 * 2(N-1)/N * S/B + 2(N-1)*l = S/BN + 2*LN (closed_form.h; the reduction
 * at 3.35 TB/s hides behind the transfer).
 *
 * Parameters (GPT-2 block, h = 64, f = 256): a layer holds
 *   QKV 64*192 + 192, output 64*64 + 64, two LayerNorms 2*128,
 *   MLP 64*256 + 256 and 256*64 + 64            = 49 984;
 * the embedding wte 512*64 + wpe 128*64          = 40 960.
 * Interleaved placement (Megatron-LM): stage 0 holds chunk 0 = layers 0-1
 * (+ embedding) and chunk 1 = layers 4-5. With overlap each chunk's
 * gradients are one bucket, all-reduced asynchronously after the chunk's
 * last backward:
 *   S1 = 2 * 2*49 984            = 199 936 bytes (chunk 1, layers 4-5)
 *   S0 = 2 * (2*49 984 + 40 960) = 281 856 bytes (chunk 0 + embedding).
 * Stage 0 runs the last backward of the step (the pipeline's), at
 *   T0 = (v*m + p - 1) * (f + b)/v   (Narayanan et al. 2021, 2.2),
 * chunk 1's last backward two or more chunk backwards earlier: its
 * reduction (S1/BN + 2*LN = 16 us) is over long before T0 (a chunk
 * backward takes milliseconds here; asserted below), so only
 * chunk 0's shows, in the WAIT before the (free) optimizer:
 *   overlap:     step = T0 + S0/BN + 2*LN,  stage 0 exposed = S0/BN + 2*LN,
 *                stage 0 dp_comm = (S0 + S1)/BN + 4*LN (both buckets);
 *   no overlap:  one blocking all-reduce of S0 + S1 after T0:
 *                step = T0 + (S0 + S1)/BN + 2*LN = exposed + T0.
 * Overlap hides S1/BN = 7.99744 us of the step: one bucket's transfer,
 * not its latency (the blocking all-reduce pays 2*LN once). Stage 1
 * finishes its compute (f + b)/v earlier and reduces less (4 layers and
 * the head, whose 2*2*49 984 = 199 936 bytes of its last bucket take
 * 16 us): it never sets the step. */
static void check_dp_overlap(enum oc_sim_fidelity fid)
{
    struct oc_model m = tiny_untied();
    struct oc_topology t = topo_attr(2, 1e20, 0);
    struct oc_layout l = lay("tp1-pp2-dp2-interleaved-v2-nozero-order=tp-pp-dp", 8);
    l.overlap_grad_reduce = 1;
    CU_ASSERT_EQUAL_FATAL(oc_layout_num_micro_batches(&l), 4);
    double f, b;
    chunk_costs(&m, &l, &t, &f, &b);
    const double S1 = 2.0 * 2 * 49984, S0 = 2.0 * (2 * 49984 + 40960);
    const double T0 = (2.0 * 4 + 2 - 1) * (f + b); /* (vm + p - 1)(f + b)/v, f, b per chunk */
    /* chunk 1's reduction is over well before T0: it has the whole
     * backward of chunk 0 of the last micro-batch, b, at least */
    CU_ASSERT_FATAL(S1 / BN + 2 * LN < 0.5 * b);

    struct oc_metrics *ov = replay(&m, &t, &l, fid);
    OC_ASSERT_REL(ov->step_time_s, T0 + S0 / BN + 2 * LN, 1e-9);
    OC_ASSERT_REL(ov->stage[0].exposed_comm_s, S0 / BN + 2 * LN, 1e-9);
    OC_ASSERT_REL(ov->stage[0].dp_comm_s, (S0 + S1) / BN + 4 * LN, 1e-9);
    /* every second of the step is in one bucket */
    OC_ASSERT_REL(ov->stage[0].compute_s + ov->stage[0].exposed_comm_s + ov->stage[0].bubble_s,
                  ov->step_time_s, 1e-12);

    l.overlap_grad_reduce = 0;
    struct oc_metrics *bl = replay(&m, &t, &l, fid);
    OC_ASSERT_REL(bl->step_time_s, T0 + (S0 + S1) / BN + 2 * LN, 1e-9);
    OC_ASSERT_REL(bl->stage[0].exposed_comm_s, (S0 + S1) / BN + 2 * LN, 1e-9);
    OC_ASSERT_REL(bl->stage[0].dp_comm_s, (S0 + S1) / BN + 2 * LN, 1e-9);
    /* the amount overlap hides: chunk 1's transfer, 7.99744 us */
    CU_ASSERT_DOUBLE_EQUAL(bl->step_time_s - ov->step_time_s, 7.99744e-6, 1e-12);
    free(ov);
    free(bl);
}

static void test_dp_overlap_fast(void) { check_dp_overlap(OC_SIM_FAST); }
static void test_dp_overlap_full(void) { check_dp_overlap(OC_SIM_FULL); }

/* Megatron-Core's buckets within a chunk (schedule_bucket.h): the tiny
 * model widened to h = 2048, f = 8192 (a = 16 heads), L = 2 layers,
 * tp1-pp1-dp2-nozero on 2 nodes of one GPU and one NIC each, m = 2
 * micro-batches (G = 4); the DP ring of S bytes over N = 2 takes
 * S/BN + 2*LN as above. A layer holds 12h^2 + 13h = 50 358 272
 * parameters, above Megatron's bucket of max(40M, 1M*2) = 40M: walking the
 * chunk backwards each layer closes a bucket,
 *   A = layer 1 + the head (final norm 2h + untied V*h = 1 052 672):
 *       S_A = 2 * 51 410 944 = 102 821 888 bytes,
 *   B = layer 0 + the embedding (V*h + P*h = 1 310 720):
 *       S_B = 2 * 51 668 992 = 103 337 984 bytes.
 * The last micro-batch's backward runs the head and layer 1 (b/2), issues
 * A, runs layer 0 (b/2, longer than A's ring: asserted) and the embedding,
 * issues B; the head, the embedding and the optimizer cost nothing here
 * (uniform stages). With T = m(f + b):
 *   overlap:     step = T + S_B/BN + 2*LN = exposed + T,
 *                dp_comm = (S_A + S_B)/BN + 4*LN;
 *   no overlap:  step = T + (S_A + S_B)/BN + 2*LN.
 * Overlap hides S_A/BN = 4.11287552 ms: the bucket of layer 1 and the
 * head. With one bucket per chunk issued after its last backward, as the
 * schedule did before, it hid nothing. */
static void check_dp_buckets(enum oc_sim_fidelity fid)
{
    struct oc_model m = tiny_untied();
    m.hidden_size = 2048;
    m.num_attention_heads = 16;
    m.num_key_value_heads = 16;
    m.intermediate_size = 8192;
    m.num_hidden_layers = 2;
    struct oc_topology t = topo_attr(1, 1e20, 0);
    struct oc_layout l = lay("tp1-pp1-dp2-nozero", 4);
    l.overlap_grad_reduce = 1;
    CU_ASSERT_EQUAL_FATAL(oc_layout_num_micro_batches(&l), 2);
    CU_ASSERT_EQUAL_FATAL(oc_model_layer_params_tp(&m, 1), 50358272);
    double f, b;
    chunk_costs(&m, &l, &t, &f, &b);
    const double SA = 102821888.0, SB = 103337984.0, T = 2 * (f + b);
    CU_ASSERT_FATAL(SA / BN + 2 * LN < 0.5 * b);

    struct oc_metrics *ov = replay(&m, &t, &l, fid);
    OC_ASSERT_REL(ov->step_time_s, T + SB / BN + 2 * LN, 1e-9);
    OC_ASSERT_REL(ov->stage[0].exposed_comm_s, SB / BN + 2 * LN, 1e-9);
    OC_ASSERT_REL(ov->stage[0].dp_comm_s, (SA + SB) / BN + 4 * LN, 1e-9);

    l.overlap_grad_reduce = 0;
    struct oc_metrics *bl = replay(&m, &t, &l, fid);
    OC_ASSERT_REL(bl->step_time_s, T + (SA + SB) / BN + 2 * LN, 1e-9);
    OC_ASSERT_REL(bl->step_time_s - ov->step_time_s, 4.11287552e-3, 1e-6);
    free(ov);
    free(bl);
}

static void test_dp_buckets_fast(void) { check_dp_buckets(OC_SIM_FAST); }
static void test_dp_buckets_full(void) { check_dp_buckets(OC_SIM_FULL); }

/* ---- a slow pipeline link ---------------------------------------------- */

/* tp1-pp2-dp1, 1F1B, m = 2 micro-batches, the two stages on one node
 * joined by a slow link: 1e9 B/s, 1e-6 s. Each message (the activation
 * forward, its gradient backward) is s*b*h*2 = 128*64*2 = 16 384 bytes
 * and takes x = 1e-6 + 16 384/1e9 = 17.384 us from when both ends are
 * ready (the receive is posted and the send issued; SimGrid starts a
 * transfer when the two meet). f, b: one stage's forward and backward of
 * one micro-batch. By hand (1F1B: stage 0 F1 F2 B1 B2, stage 1 F1 B1 F2 B2):
 *   stage 1 posts a1 at 0, a1 is sent at f and arrives at f+x;
 *     F1 ends 2f+x, B1 2f+x+b (sends g1), a2 (sent at 2f) is received
 *     from then to 2f+2x+b; F2, B2 end 3f+2x+2b (sends g2); its WAIT
 *     before the optimizer completes that send: to 3f+3x+2b;
 *   stage 0 runs F1, F2 to 2f, posts g1 (sent 2f+x+b, arrives
 *     2f+2x+b), B1 to 2f+2x+2b, posts g2 (sent 3f+2x+2b, arrives
 *     3f+3x+2b), B2 to 3f+3x+3b: the step (the optimizer costs 0).
 * Per stage (step_metrics.h: wait = min(sent, arrived) - posted is
 * bubble, the rest of a RECV and a WAIT are exposed):
 *   stage 0: compute 2(f+b); bubble (x+b) + f; exposed 2x (g1, g2);
 *   stage 1: compute 2(f+b); bubble f + end idle b; exposed 3x (a1, a2
 *            and the WAIT on g2);
 *   pp_comm 2x each (two transfers sent), step = 3(f+b+x).
 * Counting the transfers as bubble would give stage 0 bubble f+b+3x and
 * exposed 0, stage 1 f+b+2x and x. */
static void check_slow_pipeline_link(enum oc_sim_fidelity fid)
{
    struct oc_model m = tiny_untied();
    struct oc_topology t = topo_attr(2, 1e9, 1e-6);
    struct oc_layout l = lay("tp1-pp2-dp1-1f1b", 2);
    CU_ASSERT_EQUAL_FATAL(oc_layout_num_micro_batches(&l), 2);
    double f, b;
    chunk_costs(&m, &l, &t, &f, &b);
    const double x = 1e-6 + 16384.0 / 1e9;
    CU_ASSERT_DOUBLE_EQUAL(x, 17.384e-6, 1e-15);
    struct oc_metrics *mt = replay(&m, &t, &l, fid);
    OC_ASSERT_REL(mt->step_time_s, 3 * (f + b + x), 1e-9);
    for (int64_t s = 0; s < 2; s++) {
        const struct oc_stage_metrics *g = &mt->stage[s];
        OC_ASSERT_REL(g->compute_s, 2 * (f + b), 1e-9);
        OC_ASSERT_REL(g->bubble_s, s == 0 ? f + b + x : f + b, 1e-9);
        OC_ASSERT_REL(g->exposed_comm_s, s == 0 ? 2 * x : 3 * x, 1e-9);
        OC_ASSERT_REL(g->pp_comm_s, 2 * x, 1e-9);
        CU_ASSERT_EQUAL(g->tp_comm_s, 0);
        CU_ASSERT_EQUAL(g->dp_comm_s, 0);
    }
    /* bubble fraction: the stages' mean bubble over the step (metrics.h) */
    OC_ASSERT_REL(mt->bubble_fraction, (2 * (f + b) + x) / 2 / (3 * (f + b + x)), 1e-9);
    free(mt);
}

static void test_slow_link_fast(void) { check_slow_pipeline_link(OC_SIM_FAST); }
static void test_slow_link_full(void) { check_slow_pipeline_link(OC_SIM_FULL); }

static CU_TestInfo tests[] = {
    {"DP overlap hides chunk 1's transfer, fast", test_dp_overlap_fast},
    {"DP overlap hides chunk 1's transfer, full", test_dp_overlap_full},
    {"DP buckets within a chunk hide layer 1's, fast", test_dp_buckets_fast},
    {"DP buckets within a chunk hide layer 1's, full", test_dp_buckets_full},
    {"slow pipeline link: transfer exposed, not bubble, fast", test_slow_link_fast},
    {"slow pipeline link: transfer exposed, not bubble, full", test_slow_link_full},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sim_attribution", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
