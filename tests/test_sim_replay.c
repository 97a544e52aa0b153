/* test_sim_replay.c: the SimGrid replay of op lists (sim/replay.h) against
 * the closed forms of core/ worked out below: the pipeline bubble and step
 * of the textbook pipeline, peak memory worked by hand, the fast mode against the
 * full mode, determinism, the accounting identity of the figures, the
 * per-op timeline, and one-line errors. Every simulation runs in a child
 * process (oc_replay_run_forked, or oc_sim_fork_run where a test needs the
 * schedule and timeline): SimGrid runs once per process.
 *
 * Model: the shipped "tiny" GPT (h = 64, a = 4, L = 8, f = 256, V = 512,
 * P = 128), with sequence 128, so every simulation takes milliseconds.
 * Topologies are filled in code (topo() below): an H100-like device, and
 * 4 GPUs per node unless a test says otherwise.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "closed_form.h"
#include "cost.h"
#include "engine.h"
#include "platform.h"
#include "replay.h"
#include "test_util.h"

/* ---- inputs ------------------------------------------------------------ */

static struct oc_model tiny(int tied)
{
    struct oc_model m;
    struct oc_status st = {{0}};
    int rc = oc_model_load("tiny", &m, &st);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    m.tie_word_embeddings = tied;
    return m;
}

/* An H100-like device; intra-node links of bw_i B/s and lat_i s; NICs of
 * 25e9 B/s and 2e-6 s; one switch of 5e-7 s unless levels/oversub say more. */
static struct oc_topology topo(int64_t gpn, int64_t nics, double bw_i,
                               double lat_i, double bw_n, double lat_n,
                               int64_t levels, double oversub)
{
    struct oc_topology t;
    memset(&t, 0, sizeof t);
    strcpy(t.name, "test");
    t.gpus_per_node = gpn;
    strcpy(t.device.name, "h100-like");
    t.device.peak_flops_16bit = 989e12;
    t.device.memory_bytes = 80e9;
    t.device.hbm_bandwidth_Bps = 3.35e12;
    t.device.sm_count = 132;
    t.device.gemm_efficiency = 0.75;
    t.intra_bandwidth_Bps = bw_i;
    t.intra_latency_s = lat_i;
    t.nics_per_node = nics;
    t.nic_bandwidth_Bps = bw_n;
    t.nic_latency_s = lat_n;
    t.inter_latency_s = lat_n > 0 ? 5e-7 : 0;
    t.switch_levels = levels;
    t.oversubscription = oversub;
    return t;
}

/* Communication that costs nothing: 1e20 B/s and no latency, so a 16 KiB
 * activation takes 1.6e-16 s against microseconds of compute. */
static struct oc_topology topo_free(int64_t gpn)
{
    return topo(gpn, 1, 1e20, 0, 1e20, 0, 1, 1);
}

/* A slow-ish cluster where communication shows: NVLink-like 100e9 B/s,
 * 1e-6 s inside a node; NICs 25e9 B/s, 2e-6 s. */
static struct oc_topology topo_net(int64_t gpn, int64_t nics, int64_t levels,
                                   double oversub)
{
    return topo(gpn, nics, 100e9, 1e-6, 25e9, 2e-6, levels, oversub);
}

static struct oc_layout lay(const char *s, int64_t global_batch)
{
    struct oc_layout l;
    struct oc_status st = {{0}};
    oc_layout_default(&l);
    int rc = oc_layout_parse(&l, s, &st);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    l.global_batch = global_batch;
    l.seq_length = 128;
    l.grad_fp32 = -1; /* 16-bit gradients: the byte counts below */
    return l;
}

static int sim(const struct oc_model *m, const struct oc_topology *t,
               const struct oc_layout *l, enum oc_sim_fidelity f, int uniform,
               struct oc_metrics *mt, struct oc_status *st)
{
    struct oc_replay_opts o;
    memset(&o, 0, sizeof o);
    o.fidelity = f;
    o.uniform_stages = uniform;
    return oc_replay_run_forked(m, t, l, &o, mt, 60.0, st);
}

/* Heap copies: struct oc_metrics holds OC_MAX_STAGES stages. */
static struct oc_metrics *metrics_new(void)
{
    struct oc_metrics *mt = calloc(1, sizeof *mt);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mt);
    return mt;
}

/* ---- the textbook pipeline --------------------------------------------- */

/* With uniform stages (embedding, head and optimizer cost 0), free
 * communication and untied embeddings (no embedding all-reduce whose
 * skew would count as exposed communication), one stage's work per
 * micro-batch is f + b, where
 *   f = v*Lc * (attn_fwd + mlp_fwd),
 *   b = v*Lc * (attn_bwd + mlp_bwd + attn_recompute + mlp_recompute)
 * from the cost table (core/cost.h; the default layout recomputes the
 * attention scores, which the backward carries), Lc = L/(p*v) layers per
 * chunk. Narayanan et al. 2021, section 2.2: GPipe and 1F1B take
 *   step = (m + p - 1) * (f + b),   bubble = (p-1)/(m+p-1) of it;
 * interleaved with v chunks of f/v + b/v:
 *   step = (v*m + p - 1) * (f + b)/v,   bubble = (p-1)/(v*m+p-1).
 * Every stage idles (p-1)(f+b)/v (in RECVs before the send, or at the
 * end), so the mean over stages is that fraction too. The issue asks for
 * 1 %; the replay meets these to rounding, so the test holds it to 1e-6. */
static void check_pipeline(const char *layout, int64_t m_batches)
{
    struct oc_model m = tiny(0);
    struct oc_topology t = topo_free(4);
    struct oc_layout l = lay(layout, m_batches);
    const int64_t p = l.pp, v = l.vchunks, mb = oc_layout_num_micro_batches(&l);
    CU_ASSERT_EQUAL_FATAL(mb, m_batches);
    struct oc_cost c;
    oc_cost_init(&c, &m, &l, &t);
    const double lc = (double)oc_layout_layers_per_chunk(&l, &m);
    const double f = (double)v * lc *
                     (c.part_s[OC_PART_ATTN][OC_PHASE_FWD] + c.part_s[OC_PART_MLP][OC_PHASE_FWD]);
    const double b = (double)v * lc *
                     (c.part_s[OC_PART_ATTN][OC_PHASE_BWD] + c.part_s[OC_PART_MLP][OC_PHASE_BWD] +
                      c.part_s[OC_PART_ATTN][OC_PHASE_RECOMPUTE] +
                      c.part_s[OC_PART_MLP][OC_PHASE_RECOMPUTE]);
    CU_ASSERT_FATAL(f > 0 && b > 0);
    const double vm = (double)(v * mb);
    const double want_step = (vm + (double)p - 1) * (f + b) / (double)v;
    const double want_bubble = ((double)p - 1) / (vm + (double)p - 1);
    CU_ASSERT_DOUBLE_EQUAL(want_bubble, oc_cf_bubble_fraction(p, mb, v), 1e-15);

    struct oc_metrics *mt = metrics_new();
    struct oc_status st = {{0}};
    for (int fid = OC_SIM_FAST; fid <= OC_SIM_FULL; fid++) {
        int rc = sim(&m, &t, &l, (enum oc_sim_fidelity)fid, 1, mt, &st);
        CU_ASSERT_EQUAL_FATAL(rc, 0);
        OC_ASSERT_REL(mt->bubble_fraction, want_bubble, 1e-6);
        OC_ASSERT_REL(mt->step_time_s, want_step, 1e-6);
        /* Each stage computes m*(f+b) in all. */
        for (int64_t s = 0; s < p; s++)
            OC_ASSERT_REL(mt->stage[s].compute_s, (double)mb * (f + b), 1e-6);
    }
    free(mt);
}

static void test_bubble_1f1b(void) { check_pipeline("tp1-pp4-dp1-1f1b", 8); }
static void test_bubble_gpipe(void) { check_pipeline("tp1-pp4-dp1-gpipe", 8); }
static void test_bubble_other_pm(void)
{
    check_pipeline("tp1-pp2-dp1-1f1b", 5);
    check_pipeline("tp1-pp2-dp1-gpipe", 3);
}
static void test_bubble_interleaved(void) { check_pipeline("tp1-pp4-dp1-interleaved-v2", 8); }

/* ---- memory ------------------------------------------------------------ */

/* The replayed peak per stage (the schedule's ALLOC/FREE, through the
 * simulator's timeline), worked by hand from the papers, not from
 * memory.c. Tiny GPT, tied, s = 128, b = 1, G = 16, the default layout
 * (SP, selective recompute, ZeRO-1, bf16). Korthikanti et al. 2022
 * (section 5, table 2): a layer keeps sbh*34/t bytes, sbh = 128*64 =
 * 8 192; the first stage adds the embedding's dropout mask sbh/t, the
 * last the final norm's and LM head's inputs 4sbh/t and the fp32 softmax
 * 4sbV/t (section 4.3, V = 512). Parameters: 49 984 per layer, 25 184
 * per TP-2 rank (GEMMs and column biases halved); wte 512*64 over t, wpe
 * 128*64 whole, the final norm 128, the last stage a copy of the tied
 * wte; 2 + 2 + 12/d = 10 bytes each (ZeRO section 3.1, d = 2). In
 * flight: 1F1B min(p - i, m), GPipe m = 8 (Narayanan et al. 2021, 2.2).
 * tp2-pp2-dp2: a micro-batch 4*139 264 + 4 096 (stage 0) or + 16 384 and
 *   131 072 of logits (stage 1); params 125 312 and 117 248:
 *   1F1B  1 253 120 + 2*561 152 = 2 375 424 | 1 172 480 + 704 512;
 *   GPipe 1 253 120 + 8*561 152 = 5 742 336 | 1 172 480 + 8*704 512.
 * tp1-pp4-dp2: a micro-batch 2*278 528 (+ 8 192 on stage 0, + 32 768 and
 *   262 144 on stage 3); params 140 928, 99 968, 99 968, 132 864:
 *   1F1B  1 409 280 + 4*565 248, 999 680 + 3*557 056, 999 680 +
 *         2*557 056, 1 328 640 + 851 968;
 *   GPipe 1 409 280 + 8*565 248, 999 680 + 8*557 056 (twice),
 *         1 328 640 + 8*851 968. */
static void check_memory(const char *layout, enum oc_sim_fidelity f, const double *want)
{
    struct oc_model m = tiny(1);
    struct oc_topology t = topo_net(4, 1, 1, 1);
    struct oc_layout l = lay(layout, 16);
    struct oc_metrics *mt = metrics_new();
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(sim(&m, &t, &l, f, 0, mt, &st), 0);
    CU_ASSERT_EQUAL(mt->nstages, l.pp);
    double worst = 0;
    for (int64_t s = 0; s < l.pp; s++) {
        CU_ASSERT_EQUAL(mt->stage[s].peak_mem_bytes, want[s]);
        worst = fmax(worst, want[s]);
    }
    CU_ASSERT_EQUAL(mt->peak_mem_bytes, worst);
    free(mt);
}

static void test_memory(void)
{
    check_memory("tp2-pp2-dp2-1f1b", OC_SIM_FAST, (const double[]){2375424, 1876992});
    check_memory("tp2-pp2-dp2-gpipe", OC_SIM_FAST, (const double[]){5742336, 6808576});
    check_memory("tp1-pp4-dp2-1f1b", OC_SIM_FULL,
                 (const double[]){3670272, 2670848, 2113792, 2180608});
    check_memory("tp1-pp4-dp2-gpipe", OC_SIM_FULL,
                 (const double[]){5931264, 5456128, 5456128, 8144384});
}

/* ---- fast against full ------------------------------------------------- */

/* The fast mode claims exactness (replay.h) when TP groups sit inside a
 * node and the representatives' scaled flows reproduce every NIC's load
 * (or, where they cannot, as with 4 NICs and an oversubscribed uplink, it
 * simulates every rank). Both modes then move the same bytes over the
 * same links at the same times: step and figures agree far inside the
 * 1 % asked for, to rounding (the ring's whole-byte chunks against the
 * closed form of the TP sleep), so the test holds them to 1e-6. Figures
 * below 1e-3 of the step are skipped. This test also catches SimGrid's
 * lazy network update (replay.c), under which full mode's flows through
 * one NIC did not share it. */
static void check_fast_full_opts(const char *layout, struct oc_topology t,
                                 enum oc_sim_algo algo, int zero)
{
    struct oc_model m = tiny(1);
    struct oc_layout l = lay(layout, 16);
    l.zero = zero;
    struct oc_metrics *a = metrics_new(), *b = metrics_new();
    struct oc_status st = {{0}};
    struct oc_replay_opts o;
    memset(&o, 0, sizeof o);
    o.algo = algo;
    o.fidelity = OC_SIM_FAST;
    CU_ASSERT_EQUAL_FATAL(oc_replay_run_forked(&m, &t, &l, &o, a, 60.0, &st), 0);
    o.fidelity = OC_SIM_FULL;
    CU_ASSERT_EQUAL_FATAL(oc_replay_run_forked(&m, &t, &l, &o, b, 60.0, &st), 0);
    OC_ASSERT_REL(a->step_time_s, b->step_time_s, 1e-6);
    const double floor_s = 1e-3 * b->step_time_s;
    for (int64_t s = 0; s < l.pp; s++) {
        const struct oc_stage_metrics *x = &a->stage[s], *y = &b->stage[s];
        const double fx[] = {x->compute_s, x->bubble_s, x->tp_comm_s, x->pp_comm_s,
                             x->dp_comm_s, x->exposed_comm_s};
        const double fy[] = {y->compute_s, y->bubble_s, y->tp_comm_s, y->pp_comm_s,
                             y->dp_comm_s, y->exposed_comm_s};
        for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++)
            if (fy[i] > floor_s)
                OC_ASSERT_REL(fx[i], fy[i], 1e-6);
        OC_ASSERT_REL(x->peak_mem_bytes, y->peak_mem_bytes, 1e-9);
    }
    /* The network matters in these cases: TP collectives are a visible
     * share of the step (so the comparison is not of compute alone). The
     * tiny model's layers are host-bound since the launch costs
     * (cost_overhead.h: 10 us per kernel), so TP is about 2 % of its step
     * (6 % before them): 1 %, ten times the 1e-3 floor of the figures
     * compared above. */
    CU_ASSERT(b->tp_comm_s > 0.01 * b->step_time_s);
    free(a);
    free(b);
}

static void check_fast_full(const char *layout, struct oc_topology t)
{
    check_fast_full_opts(layout, t, OC_SIM_ALGO_AUTO, 1);
}

static void test_fast_full_one_nic(void)
{
    check_fast_full("tp2-pp2-dp2", topo_net(4, 1, 1, 1));
    check_fast_full("tp4-pp2-dp1", topo_net(4, 1, 1, 1));
}

static void test_fast_full_four_nics(void)
{
    check_fast_full("tp2-pp2-dp2", topo_net(4, 4, 1, 1));
    check_fast_full("tp4-pp2-dp1", topo_net(4, 4, 1, 1));
    /* Oversubscribed uplinks: the fast mode simulates every rank here. */
    check_fast_full("tp2-pp2-dp2", topo_net(4, 4, 2, 2));
}

/* The same for each collective algorithm and kind: tp2-pp1-dp4 on two
 * nodes of 4 GPUs puts each DP group (L = 2 members per node, M = 2 nodes)
 * across the nodes and next to TP traffic, with ZeRO's reduce-scatter and
 * all-gather (the default) or the all-reduce. */
static void check_fast_full_algos(struct oc_topology t)
{
    const enum oc_sim_algo algos[3] = {OC_SIM_ALGO_RING, OC_SIM_ALGO_HIER,
                                       OC_SIM_ALGO_TREE};
    for (int a = 0; a < 3; a++)
        for (int zero = 0; zero <= 1; zero++) {
            check_fast_full_opts("tp2-pp1-dp4", t, algos[a], zero);
            check_fast_full_opts("tp2-pp2-dp2", t, algos[a], zero);
        }
}

static void test_fast_full_algos(void)
{
    check_fast_full_algos(topo_net(4, 1, 1, 1));
    check_fast_full_algos(topo_net(4, 4, 1, 1));
}

/* ---- DP collectives per algorithm against their closed forms ---------- */

struct dp_job {
    const struct oc_model *m;
    const struct oc_topology *t;
    const struct oc_layout *l;
    struct oc_replay_opts o;
};

/* Per DP collective of a rank's list (k = 0 the gradient reduction, 1 the
 * all-gather of ZeRO), over the recorded ranks: earliest and latest start,
 * latest end; and the stage's mean DP time. */
struct dp_result {
    int64_t n;
    double start_min_s[2], start_max_s[2], end_max_s[2];
    double dp_comm_s;
};

static int dp_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    const struct dp_job *j = arg;
    struct oc_metrics *mt = calloc(1, sizeof *mt);
    struct oc_schedule s;
    struct oc_timeline tl;
    if (oc_replay_run(j->m, j->t, j->l, &j->o, mt, &s, &tl, st) != 0) {
        free(mt);
        return -1;
    }
    struct dp_result r;
    memset(&r, 0, sizeof r);
    for (int k = 0; k < 2; k++) {
        r.start_min_s[k] = INFINITY;
        r.start_max_s[k] = r.end_max_s[k] = -INFINITY;
    }
    for (int64_t q = 0; q < s.nranks; q++) {
        int64_t k = 0;
        for (int64_t i = 0; tl.start_s[q] && i < s.ranks[q].n; i++) {
            const struct oc_op *op = &s.ranks[q].ops[i];
            if (op->kind != OC_OP_COLLECTIVE || op->group != OC_GROUP_DP || k >= 2)
                continue;
            r.start_min_s[k] = fmin(r.start_min_s[k], tl.start_s[q][i]);
            r.start_max_s[k] = fmax(r.start_max_s[k], tl.start_s[q][i]);
            r.end_max_s[k] = fmax(r.end_max_s[k], tl.end_s[q][i]);
            k++;
        }
        r.n = k > r.n ? k : r.n;
    }
    r.dp_comm_s = mt->stage[0].dp_comm_s;
    oc_sim_buf_append(out, &r, sizeof r);
    oc_timeline_free(&tl);
    oc_schedule_free(&s);
    free(mt);
    return 0;
}

/* tp2-pp1-dp4 on 2 nodes of 4 GPUs with 4 NICs, no overlap of the DP
 * reduction: after the last backward every rank runs one DP collective of
 * its 16-bit gradients, S = 2 * parameters bytes (a reduce-scatter with
 * the distributed optimizer, else an all-reduce), and with the
 * distributed optimizer an all-gather of S after the optimizer step. The
 * DP group of TP rank 0 is GPUs 0, 2 | 4, 6 (L = 2 per node, M = 2 nodes),
 * that of TP rank 1 GPUs 1, 3 | 5, 7, and no two flows share a link
 * (NVLink per GPU, a NIC per GPU). Entered by all members at once, each
 * collective lasts (first start to last end) its closed form
 * (core/closed_form.h) on the hops: in a node li, Bi (the topology's
 * NVLink), across ln = oc_topology_inter_latency_s, Bn (the NIC):
 *   ring  RS = AG: oc_cf_ring_*(4, S, Bn, ln) (every step waits on a NIC
 *         hop); AR: oc_cf_ring_allreduce_s
 *   hier  oc_cf_hier_reducescatter_s, _allgather_s, _allreduce_s
 *   tree  oc_cf_tree_reducescatter_s, _allgather_s, _allreduce_s with the
 *         pipeline chunks of collective.h
 * in both fidelities. Ring and hier members all finish together, so the
 * stage's mean DP time is the sum of the closed forms. The tree's do not
 * (the root is done before the leaves), so its mean DP time is smaller,
 * and its all-gather is entered at skewed times (the members left the
 * reduce-scatter at different times): that one is outside the closed
 * form's assumptions and not checked. Whole-byte chunks differ from S/N
 * by under a byte in 1e5: held to 1e-5. The three algorithms give
 * different DP times (by more than 5 %): --collective moves ZeRO's
 * collectives. The reductions run at the device's memory bandwidth: at
 * 3.35 TB/s the transfers hide them; at 30 GB/s a ring step's 3c takes
 * c/10e9, longer than c/Bn and c/Bi, and the closed forms with mem_Bps
 * 30e9 hold as exactly. */
static void dp_closed_forms(double mem_Bps);
static void test_dp_closed_forms(void)
{
    for (int slow = 0; slow < 2; slow++)
        dp_closed_forms(slow ? 30e9 : 3.35e12);
}

static void dp_closed_forms(double mem_Bps)
{
    struct oc_model m = tiny(1);
    struct oc_topology t = topo_net(4, 4, 1, 1);
    t.device.hbm_bandwidth_Bps = mem_Bps;
    struct oc_layout l = lay("tp2-pp1-dp4", 16);
    l.overlap_grad_reduce = 0;
    /* 2 bytes per parameter of the one stage's TP rank: 8 layers of
     * 25 184, half of wte (16 384), wpe (8 192), the final norm (128; tied,
     * one stage: wte is the head) = 226 176 (test_memory's figures) */
    const double S = 2.0 * 226176;
    const double Bi = t.intra_bandwidth_Bps, li = t.intra_latency_s;
    const double Bn = t.nic_bandwidth_Bps, ln = oc_topology_inter_latency_s(&t);
    const struct oc_cf_levels v = {2, 2, Bi, li, Bn, ln, mem_Bps};
    int64_t C = (int64_t)ceil((double)llround(S) / OC_SIM_CHUNK_BYTES);
    C = C < 1 ? 1 : C > OC_SIM_MAX_CHUNKS ? OC_SIM_MAX_CHUNKS : C;
    const enum oc_sim_algo algos[3] = {OC_SIM_ALGO_RING, OC_SIM_ALGO_HIER,
                                       OC_SIM_ALGO_TREE};
    /* [algorithm][0 reduce-scatter, 1 all-gather, 2 all-reduce] */
    const double cf[3][3] = {
        {oc_cf_ring_reducescatter_s(4, S, Bn, ln, mem_Bps), oc_cf_ring_allgather_s(4, S, Bn, ln),
         oc_cf_ring_allreduce_s(4, S, Bn, ln, mem_Bps)},
        {oc_cf_hier_reducescatter_s(&v, S), oc_cf_hier_allgather_s(&v, S),
         oc_cf_hier_allreduce_s(&v, S)},
        {oc_cf_tree_reducescatter_s(&v, S, C), oc_cf_tree_allgather_s(&v, S, C),
         oc_cf_tree_allreduce_s(&v, S, C)},
    };
    double zero_dp_s[3] = {0};
    for (int z = 0; z < 2; z++) {
        l.zero = z == 0;
        for (int a = 0; a < 3; a++)
            for (int fid = OC_SIM_FAST; fid <= OC_SIM_FULL; fid++) {
                struct dp_job j = {&m, &t, &l, {0}};
                j.o.fidelity = (enum oc_sim_fidelity)fid;
                j.o.algo = algos[a];
                struct oc_sim_buf buf = {0};
                struct oc_status st = {{0}};
                int rc = oc_sim_fork_run(dp_child, &j, NULL, &buf, &st);
                if (rc != 0)
                    fprintf(stderr, "\n  %s\n", st.msg);
                CU_ASSERT_EQUAL_FATAL(rc, 0);
                struct dp_result r;
                CU_ASSERT_EQUAL_FATAL(buf.len, sizeof r);
                memcpy(&r, buf.data, sizeof r);
                oc_sim_buf_free(&buf);
                CU_ASSERT_EQUAL_FATAL(r.n, z == 0 ? 2 : 1);
                /* the gradient reduction: entered at once, lasts its form */
                const double first = z == 0 ? cf[a][0] : cf[a][2];
                CU_ASSERT_DOUBLE_EQUAL(r.start_max_s[0], r.start_min_s[0], 1e-15);
                OC_ASSERT_REL(r.end_max_s[0] - r.start_min_s[0], first, 1e-5);
                if (z == 1 && algos[a] != OC_SIM_ALGO_TREE)
                    OC_ASSERT_REL(r.dp_comm_s, first, 1e-5);
                if (z == 1)
                    continue;
                if (algos[a] == OC_SIM_ALGO_TREE) {
                    CU_ASSERT(r.start_max_s[1] > r.start_min_s[1]);
                    CU_ASSERT(r.dp_comm_s < cf[a][0] + cf[a][1]);
                } else {
                    CU_ASSERT_DOUBLE_EQUAL(r.start_max_s[1], r.start_min_s[1], 1e-15);
                    OC_ASSERT_REL(r.end_max_s[1] - r.start_min_s[1], cf[a][1], 1e-5);
                    OC_ASSERT_REL(r.dp_comm_s, cf[a][0] + cf[a][1], 1e-5);
                }
                zero_dp_s[a] = r.dp_comm_s;
            }
    }
    for (int a = 0; a < 3; a++)
        for (int b = a + 1; b < 3; b++)
            CU_ASSERT(fabs(zero_dp_s[a] - zero_dp_s[b]) > 0.05 * zero_dp_s[a]);
}

/* ---- accounting, determinism, the closed form ------------------------- */

/* Every rank's time is compute, blocking communication (exposed) or
 * waiting for a neighbour / idling at the end (bubble), so per stage
 * compute_s + exposed_comm_s + bubble_s = step_time_s (replay.h). */
static void test_accounting(void)
{
    struct oc_model m = tiny(1);
    struct oc_topology t = topo_net(4, 1, 1, 1);
    struct oc_layout l = lay("tp2-pp2-dp2", 16);
    struct oc_metrics *mt = metrics_new();
    struct oc_status st = {{0}};
    for (int fid = OC_SIM_FAST; fid <= OC_SIM_FULL; fid++) {
        CU_ASSERT_EQUAL_FATAL(sim(&m, &t, &l, (enum oc_sim_fidelity)fid, 0, mt, &st), 0);
        for (int64_t s = 0; s < l.pp; s++) {
            const struct oc_stage_metrics *g = &mt->stage[s];
            OC_ASSERT_REL(g->compute_s + g->exposed_comm_s + g->bubble_s, mt->step_time_s,
                          1e-9);
            CU_ASSERT(g->bubble_s > 0);
            CU_ASSERT(g->pp_comm_s > 0);
            CU_ASSERT(g->dp_comm_s > 0);
        }
        /* tokens/s = G*s/step (metrics.h). */
        OC_ASSERT_REL(mt->tokens_per_s, 16.0 * 128.0 / mt->step_time_s, 1e-12);
    }
    free(mt);
}

static void test_determinism(void)
{
    struct oc_model m = tiny(1);
    struct oc_topology t = topo_net(4, 1, 1, 1);
    struct oc_layout l = lay("tp2-pp2-dp2", 16);
    struct oc_metrics *a = metrics_new(), *b = metrics_new();
    struct oc_status st = {{0}};
    for (int fid = OC_SIM_FAST; fid <= OC_SIM_FULL; fid++) {
        CU_ASSERT_EQUAL_FATAL(sim(&m, &t, &l, (enum oc_sim_fidelity)fid, 0, a, &st), 0);
        CU_ASSERT_EQUAL_FATAL(sim(&m, &t, &l, (enum oc_sim_fidelity)fid, 0, b, &st), 0);
        CU_ASSERT(a->step_time_s > 0);
        CU_ASSERT_EQUAL(memcmp(a, b, sizeof *a), 0);
    }
    free(a);
    free(b);
}

/* oc_cf_step (core/closed_form.h) against the simulation, tiny model
 * tp2-pp2-dp2 on topo_net(4, 1, 1, 1), 8 micro-batches per replica. They
 * differ by design, in both directions:
 * - the closed form charges 4 TP all-reduces per layer only; the schedule
 *   also has the embedding's and the LM head's TP collectives and three
 *   cross-entropy all-reduces per micro-batch. These messages are
 *   latency-bound (16 KiB at 100 GB/s is 0.16 us against 1 us of latency),
 *   so the last stage spends about 43 us per micro-batch in TP
 *   collectives where the closed form charges about 35 us (slower);
 * - the closed form puts two PP sends per unit on the critical path, the
 *   replay overlaps them with compute and only the part a receiver waits
 *   for shows (faster);
 * - the tied-embedding all-reduce after the last backward is not in it.
 * When written the simulation gave 0.599 ms and the closed form 0.553 ms
 * (+8 %): the extra TP collectives outweigh the overlapped sends. The test
 * holds the order (simulation slower) and a 25 % band: an estimate outside
 * its assumptions. Where they hold, test_closed_form_exact holds the two
 * to 1e-9. */
static void test_closed_form(void)
{
    struct oc_model m = tiny(1);
    struct oc_topology t = topo_net(4, 1, 1, 1);
    struct oc_layout l = lay("tp2-pp2-dp2", 16);
    struct oc_metrics *mt = metrics_new();
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(sim(&m, &t, &l, OC_SIM_FAST, 0, mt, &st), 0);
    struct oc_cf_step cf;
    oc_cf_step(&m, &l, &t, &cf);
    OC_ASSERT_REL(mt->step_time_s, cf.step_s, 0.25);
    CU_ASSERT(mt->step_time_s > cf.step_s);
    free(mt);
}

/* Where the closed form's assumptions hold, it is the simulation: free
 * links (topo_free: 1e20 B/s, no latency), no TP (its extra collectives
 * are not in the form), the tiny model (tied), G = 16, s = 128, the
 * default layout (ZeRO-1, overlap). What is left is the reductions'
 * compute the form does not charge (closed_form.h: a reduce step of c
 * bytes reads and writes 3c at the device's 3.35e12 B/s, and a free
 * transfer hides none of it):
 *   tp1-pp1-dp1        nothing: the form is the replay's sum of ops;
 *   tp1-pp4-dp1        (and first1-last3, whose stages hold 1, 2, 2, 3
 *                      layers: the last, slowest, stage is never starved)
 *                      the tied embedding's all-reduce between stages 0
 *                      and 3, not in the form: one reduce step of half the
 *                      2*512*64 = 65 536 gradient bytes, 3*32 768/3.35e12
 *                      = 29.346 ns (1F1B and GPipe alike);
 *   tp1-pp1-dp2        nothing: the tiny chunk is one DP bucket (below
 *                      Megatron's 40M parameters, schedule_bucket.h),
 *                      issued after the last layer's (and the embedding's)
 *                      backward in both; its reduce-scatter's one step
 *                      reduces half of the 2*(8*49 984 + 40 960 + 128) =
 *                      881 920 gradient bytes, 3*440 960/3.35e12 =
 *                      394.89 ns, in the form's ring too (the plain
 *                      all-reduce's first half is the same step).
 * Held to 1e-9 of the step. */
static void test_closed_form_exact(void)
{
    struct oc_model m = tiny(1);
    struct oc_topology t = topo_free(4);
    const struct {
        const char *layout;
        double extra_s;
    } cases[] = {
        {"tp1-pp1-dp1", 0},
        {"tp1-pp4-dp1-1f1b", 3 * 32768 / 3.35e12},
        {"tp1-pp4-dp1-gpipe", 3 * 32768 / 3.35e12},
        /* uneven stages (1, 2, 2, 3 layers), the last the slowest: the
         * pipeline at its pace, m * U_3 + the fill and drain of the
         * stages before (closed_form.c, pipeline_time_s) */
        {"tp1-pp4-dp1-1f1b-first1-last3", 3 * 32768 / 3.35e12},
        {"tp1-pp4-dp1-gpipe-first1-last3", 3 * 32768 / 3.35e12},
        {"tp1-pp1-dp2", 0},
        {"tp1-pp1-dp2-nozero", 0},
    };
    struct oc_metrics *mt = metrics_new();
    struct oc_status st = {{0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct oc_layout l = lay(cases[i].layout, 16);
        CU_ASSERT_EQUAL_FATAL(sim(&m, &t, &l, OC_SIM_FAST, 0, mt, &st), 0);
        struct oc_cf_step cf;
        oc_cf_step(&m, &l, &t, &cf);
        OC_ASSERT_REL(mt->step_time_s, cf.step_s + cases[i].extra_s, 1e-9);
    }
    free(mt);
}

/* A heavy first stage (tp1-pp2-dp1-first6-last2, 6 and 2 layers, free
 * links, m = 16): the closed form's max_j (m * U_j + fill and drain) is a
 * lower bound, stage 0 paced; the simulation is longer because stage 0,
 * after its warm-up forward, waits for the first backward from stage 1
 * (U_1 - F_0, about the LM head's time, once). When written: 0.5685 ms
 * against 0.5650 ms (+0.6 %). Held: at least the form (less the tied
 * all-reduce the form omits) and within 2 %. */
static void test_closed_form_heavy_first(void)
{
    struct oc_model m = tiny(1);
    struct oc_topology t = topo_free(4);
    struct oc_layout l = lay("tp1-pp2-dp1-1f1b-first6-last2", 16);
    struct oc_metrics *mt = metrics_new();
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(sim(&m, &t, &l, OC_SIM_FAST, 0, mt, &st), 0);
    struct oc_cf_step cf;
    oc_cf_step(&m, &l, &t, &cf);
    CU_ASSERT(mt->step_time_s >= cf.step_s);
    OC_ASSERT_REL(mt->step_time_s, cf.step_s, 0.02);
    free(mt);
}

/* ---- timeline ---------------------------------------------------------- */

struct tl_job {
    const struct oc_model *m;
    const struct oc_topology *t;
    const struct oc_layout *l;
    enum oc_sim_fidelity fid;
};

struct tl_result {
    int64_t recorded, proxied, bad_proxy;
    int64_t bad_order;  /* an op starting before the previous one, or ending before it starts */
    int64_t bad_p2p;    /* a RECV ending before its SEND started, or a SEND not ending at arrival */
    double max_end_s, step_s;
};

/* Runs in a child: replay with schedule and timeline, then check them. */
static int tl_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    const struct tl_job *j = arg;
    struct oc_replay_opts o;
    memset(&o, 0, sizeof o);
    o.fidelity = j->fid;
    struct oc_metrics *mt = calloc(1, sizeof *mt);
    struct oc_schedule s;
    struct oc_timeline tl;
    if (oc_replay_run(j->m, j->t, j->l, &o, mt, &s, &tl, st) != 0) {
        free(mt);
        return -1;
    }
    struct tl_result r;
    memset(&r, 0, sizeof r);
    r.step_s = mt->step_time_s;
    for (int64_t k = 0; k < s.nranks; k++) {
        if (!tl.start_s[k]) {
            r.proxied++;
            struct oc_coord c = oc_layout_coord(j->l, k);
            c.tp = 0;
            r.bad_proxy += tl.proxy[k] != oc_layout_rank(j->l, c);
            continue;
        }
        r.recorded++;
        r.bad_proxy += tl.proxy[k] != k;
        for (int64_t i = 0; i < s.ranks[k].n; i++) {
            const struct oc_op *op = &s.ranks[k].ops[i];
            r.bad_order += tl.end_s[k][i] < tl.start_s[k][i];
            r.bad_order += i > 0 && tl.start_s[k][i] < tl.start_s[k][i - 1];
            r.max_end_s = fmax(r.max_end_s, tl.end_s[k][i]);
            if (op->kind != OC_OP_RECV)
                continue;
            /* the matching SEND on the peer: same tag */
            const struct oc_rank_ops *q = &s.ranks[op->peer];
            int found = 0;
            for (int64_t x = 0; x < q->n; x++)
                if (q->ops[x].kind == OC_OP_SEND && q->ops[x].tag == op->tag &&
                    q->ops[x].peer == k) {
                    found = 1;
                    r.bad_p2p += tl.end_s[k][i] < tl.start_s[op->peer][x];
                    r.bad_p2p += tl.end_s[op->peer][x] != tl.end_s[k][i];
                }
            r.bad_p2p += !found;
        }
    }
    oc_sim_buf_append(out, &r, sizeof r);
    oc_timeline_free(&tl);
    oc_schedule_free(&s);
    free(mt);
    return 0;
}

static void check_timeline(enum oc_sim_fidelity fid)
{
    struct oc_model m = tiny(1);
    struct oc_topology t = topo_net(4, 1, 1, 1);
    struct oc_layout l = lay("tp2-pp2-dp2", 16);
    struct tl_job j = {&m, &t, &l, fid};
    struct oc_sim_buf buf = {0};
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_sim_fork_run(tl_child, &j, NULL, &buf, &st), 0);
    CU_ASSERT_EQUAL_FATAL(buf.len, sizeof(struct tl_result));
    struct tl_result r;
    memcpy(&r, buf.data, sizeof r);
    oc_sim_buf_free(&buf);
    /* fast: the 4 TP-rank-0 ranks recorded, the other 4 proxied */
    CU_ASSERT_EQUAL(r.recorded, fid == OC_SIM_FAST ? 4 : 8);
    CU_ASSERT_EQUAL(r.proxied, fid == OC_SIM_FAST ? 4 : 0);
    CU_ASSERT_EQUAL(r.bad_proxy, 0);
    CU_ASSERT_EQUAL(r.bad_order, 0);
    CU_ASSERT_EQUAL(r.bad_p2p, 0);
    /* the last op ends the step */
    CU_ASSERT_DOUBLE_EQUAL(r.max_end_s, r.step_s, 1e-15);
}

static void test_timeline_fast(void) { check_timeline(OC_SIM_FAST); }
static void test_timeline_full(void) { check_timeline(OC_SIM_FULL); }

/* ---- platforms and errors ---------------------------------------------- */

static void test_missing_platform_file(void)
{
    struct oc_model m = tiny(1);
    struct oc_topology t = topo_net(4, 1, 1, 1);
    struct oc_layout l = lay("tp2-pp2-dp2", 16);
    struct oc_replay_opts o;
    memset(&o, 0, sizeof o);
    o.platform_file = "/nonexistent/ocsim-platform.xml";
    CU_ASSERT_EQUAL(oc_replay_fidelity_used(&o), OC_SIM_FULL);
    struct oc_metrics *mt = metrics_new();
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_replay_run_forked(&m, &t, &l, &o, mt, 60.0, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "/nonexistent/ocsim-platform.xml"));
    CU_ASSERT_PTR_NULL(strchr(st.msg, '\n'));
    free(mt);
}

/* A user platform file holding exactly the generated platform gives the
 * generated platform's result (the file route runs in full mode). */
static void test_user_platform_file(void)
{
    struct oc_model m = tiny(1);
    struct oc_topology t = topo_net(4, 1, 1, 1);
    struct oc_layout l = lay("tp2-pp2-dp2", 16);
    char path[] = "/tmp/ocsim-test-replay-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    FILE *f = fdopen(fd, "w");
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_sim_platform_write_xml(f, &t, 8, &st), 0);
    fclose(f);
    struct oc_metrics *a = metrics_new(), *b = metrics_new();
    struct oc_replay_opts o;
    memset(&o, 0, sizeof o);
    o.platform_file = path;
    int rc = oc_replay_run_forked(&m, &t, &l, &o, a, 60.0, &st);
    unlink(path);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL_FATAL(sim(&m, &t, &l, OC_SIM_FULL, 0, b, &st), 0);
    OC_ASSERT_REL(a->step_time_s, b->step_time_s, 1e-12);
    OC_ASSERT_REL(a->bubble_fraction, b->bubble_fraction, 1e-9);
    free(a);
    free(b);
}

static void test_errors(void)
{
    struct oc_model m = tiny(1);
    struct oc_topology t = topo_net(4, 1, 1, 1);
    struct oc_metrics *mt = metrics_new();
    struct oc_status st = {{0}};
    /* 4 heads do not split over TP 3: the layout's own one-line reason */
    struct oc_layout l = lay("tp3-pp1-dp1", 3);
    CU_ASSERT_EQUAL(sim(&m, &t, &l, OC_SIM_FAST, 0, mt, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "TP 3"));
    /* a timeline without its schedule */
    l = lay("tp1-pp1-dp1", 1);
    struct oc_timeline tl;
    CU_ASSERT_EQUAL(oc_replay_run(&m, &t, &l, NULL, mt, NULL, &tl, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "sched_out"));
    /* a --cfg SimGrid would abort on is refused with one line */
    const char *bad[] = {"network/model CM02"};
    struct oc_replay_opts o;
    memset(&o, 0, sizeof o);
    o.cfg = bad;
    o.n_cfg = 1;
    CU_ASSERT_EQUAL(oc_replay_run_forked(&m, &t, &l, &o, mt, 60.0, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "key:value"));
    free(mt);
}

static CU_TestInfo tests[] = {
    {"bubble and step, 1F1B p=4 m=8", test_bubble_1f1b},
    {"bubble and step, GPipe p=4 m=8", test_bubble_gpipe},
    {"bubble and step, p=2 m=5 and m=3", test_bubble_other_pm},
    {"bubble and step, interleaved v=2", test_bubble_interleaved},
    {"peak memory by hand", test_memory},
    {"fast = full, 1 NIC per node", test_fast_full_one_nic},
    {"fast = full, 4 NICs per node", test_fast_full_four_nics},
    {"fast = full, every algorithm, ZeRO and all-reduce", test_fast_full_algos},
    {"DP time of each algorithm = closed form", test_dp_closed_forms},
    {"compute + exposed + bubble = step", test_accounting},
    {"determinism", test_determinism},
    {"closed-form step within 25 %", test_closed_form},
    {"closed-form step exact where its assumptions hold", test_closed_form_exact},
    {"closed-form step, heavy first stage", test_closed_form_heavy_first},
    {"timeline, fast", test_timeline_fast},
    {"timeline, full", test_timeline_full},
    {"missing platform file", test_missing_platform_file},
    {"user platform file", test_user_platform_file},
    {"errors", test_errors},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sim_replay", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
