/* report_fixtures.c: what the tests of reports/ share (see
 * report_fixtures.h): the suites' scratch folder, readers of the files
 * the reports write, a hand-made two-stage timeline and a hand-made sweep. Everything is filled in code; the figures each test expects are
 * worked out in the comments here and in the tests.
 */
#define _XOPEN_SOURCE 700
#include "report_fixtures.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_util.h"

/* ------------------------------------------------------------------ */
/* The scratch folder and the files in it                               */

void path_in(char *buf, size_t n, const char *sub, const char *name)
{
    snprintf(buf, n, "%s/%s/%s", oc_test_dir, sub, name);
}

int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Data rows (not '#', not blank) of block `index` of a gnuplot data file
 * (blocks are separated by two blank lines); index -1 counts every block. */
int count_rows(const char *path, int index)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024];
    int rows = 0, block = 0, blanks = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '\n') {
            if (++blanks == 2)
                block++;
            continue;
        }
        blanks = 0;
        if (line[0] == '#')
            continue;
        if (index < 0 || block == index)
            rows++;
    }
    fclose(f);
    return rows;
}

/* The k-th data row (0-based, any block) into buf. */
int data_row(const char *path, int k, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024];
    int i = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (i++ == k) {
            snprintf(buf, n, "%s", line);
            fclose(f);
            return 0;
        }
    }
    fclose(f);
    return -1;
}

/* Non-empty and starting with the PNG signature (RFC 2083, 3.1). */
int is_png(const char *path)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    unsigned char b[8];
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t got = fread(b, 1, 8, f);
    fclose(f);
    return got == 8 && memcmp(b, sig, 8) == 0;
}

int suite_init(void) { return oc_test_dir_make("reports"); }

/* ------------------------------------------------------------------ */
/* The hand-made schedule and timeline                                  */

struct oc_layout layout_of(int64_t t, int64_t p, int64_t d, int64_t mb)
{
    struct oc_layout l;
    oc_layout_default(&l);
    l.tp = t;
    l.pp = p;
    l.dp = d;
    l.micro_batch = mb;
    l.seq_length = 32;
    l.global_batch = 2 * d * mb; /* m = 2 */
    l.schedule = OC_SCHED_1F1B;
    l.vchunks = 1;
    return l;
}

struct hop {
    double t0_ms, t1_ms;
};

static struct oc_op mk(enum oc_op_kind k, enum oc_phase ph, int mb, int stage)
{
    struct oc_op o;
    memset(&o, 0, sizeof o);
    o.kind = (uint8_t)k;
    o.phase = (uint8_t)ph;
    o.part = OC_PART_CHUNK;
    o.mb = mb;
    o.stage = stage;
    o.layer_first = -1;
    o.count = 1;
    o.peer = -1;
    return o;
}

static struct oc_op compute(enum oc_phase ph, int mb, int stage)
{
    struct oc_op o = mk(OC_OP_COMPUTE, ph, mb, stage);
    if (ph == OC_PHASE_OPTIMIZER) {
        o.part = OC_PART_ALL;
        o.mb = -1;
    } else {
        o.layer_first = 4 * stage;
        o.layer_count = 4;
        o.flops = 1e9;
    }
    return o;
}

static struct oc_op p2p(enum oc_op_kind k, enum oc_p2p_kind d, int mb, int stage, int peer)
{
    struct oc_op o = mk(k, d == OC_P2P_ACT ? OC_PHASE_FWD : OC_PHASE_BWD, mb, stage);
    o.p2p = (uint8_t)d;
    o.peer = peer;
    o.tag = mb + 1;
    o.bytes = 4096;
    return o;
}

static struct oc_op mem(enum oc_op_kind k, enum oc_buf b, double bytes, int stage)
{
    struct oc_op o = mk(k, OC_PHASE_FWD, -1, stage);
    o.buf = (uint8_t)b;
    o.bytes = bytes;
    return o;
}

static struct oc_op coll_embed(int stage)
{
    struct oc_op o = mk(OC_OP_COLLECTIVE, OC_PHASE_OPTIMIZER, -1, stage);
    o.coll = OC_COLL_ALLREDUCE;
    o.group = OC_GROUP_EMBED;
    o.bytes = 2000;
    return o;
}

/* Times in ms. Stage 0 (rank 0): F0 F1 with sends (the first send is slow:
 * it ends at 2.2 ms, after the second started at 2.0 ms, so the second needs
 * a second comm thread), waits for the gradient of mb0 from 2 to 4 ms (rank
 * 1 sends it at 3.5 ms), B0, B1, the tied-embedding all-reduce, optimizer.
 * Stage 1 (rank 1): waits for the activation of mb0 from 0 to 2.2 ms (rank 0
 * sent it at 1.0 ms), F0 B0, sends the gradient, F1 B1, sends, then sits in
 * the all-reduce from 5.5 ms until stage 0 joins at 8.5 ms. */
static const struct hop rank0_hops[] = {
    {0, 0}, /* 0 ALLOC weights 1000, filled in build_hand */
    {0, 0}, /* 1 ALLOC activations 100 */
    {0, 1}, /* 2 F mb0 */
    {1, 2.2}, /* 3 SEND act mb0 -> 1 */
    {1, 1}, /* 4 ALLOC activations 100 */
    {1, 2}, /* 5 F mb1 */
    {2, 2.5}, /* 6 SEND act mb1 -> 1 */
    {2, 4}, /* 7 RECV grad mb0 <- 1 */
    {4, 6}, /* 8 B mb0 */
    {6, 6}, /* 9 FREE activations 100 */
    {6, 6.5}, /* 10 RECV grad mb1 <- 1 */
    {6.5, 8.5}, /* 11 B mb1 */
    {8.5, 8.5}, /* 12 FREE activations 100 */
    {8.5, 9}, /* 13 allreduce embed */
    {9, 9}, /* 14 WAIT (nothing outstanding: 0 long) */
    {9, 9.5}, /* 15 optimizer */
};
static const struct hop rank1_hops[] = {
    {0, 0},     /* 0 ALLOC weights 800 */
    {0, 2.2},   /* 1 RECV act mb0 <- 0 */
    {2.2, 2.7}, /* 2 F mb0 */
    {2.7, 3.5}, /* 3 B mb0 */
    {3.5, 4},   /* 4 SEND grad mb0 -> 0 */
    {3.5, 3.5}, /* 5 RECV act mb1 <- 0 (arrived at 2.5: 0 long) */
    {3.5, 4.5}, /* 6 F mb1 */
    {4.5, 5.5}, /* 7 B mb1 */
    {5.5, 6.5}, /* 8 SEND grad mb1 -> 0 */
    {5.5, 9},   /* 9 allreduce embed */
    {9, 9},     /* 10 WAIT */
    {9, 9.5},   /* 11 optimizer */
};
#define N0 ((int64_t)(sizeof rank0_hops / sizeof rank0_hops[0]))
#define N1 ((int64_t)(sizeof rank1_hops / sizeof rank1_hops[0]))

void build_hand(struct hand *h, const unsigned char *record)
{
    struct oc_op o0[N0] = {
        mem(OC_OP_ALLOC, OC_BUF_WEIGHTS, 1000, 0),
        mem(OC_OP_ALLOC, OC_BUF_ACTIVATIONS, 100, 0),
        compute(OC_PHASE_FWD, 0, 0),
        p2p(OC_OP_SEND, OC_P2P_ACT, 0, 0, 1),
        mem(OC_OP_ALLOC, OC_BUF_ACTIVATIONS, 100, 0),
        compute(OC_PHASE_FWD, 1, 0),
        p2p(OC_OP_SEND, OC_P2P_ACT, 1, 0, 1),
        p2p(OC_OP_RECV, OC_P2P_GRAD, 0, 0, 1),
        compute(OC_PHASE_BWD, 0, 0),
        mem(OC_OP_FREE, OC_BUF_ACTIVATIONS, 100, 0),
        p2p(OC_OP_RECV, OC_P2P_GRAD, 1, 0, 1),
        compute(OC_PHASE_BWD, 1, 0),
        mem(OC_OP_FREE, OC_BUF_ACTIVATIONS, 100, 0),
        coll_embed(0),
        mk(OC_OP_WAIT, OC_PHASE_OPTIMIZER, -1, 0),
        compute(OC_PHASE_OPTIMIZER, -1, 0),
    };
    struct oc_op o1[N1] = {
        mem(OC_OP_ALLOC, OC_BUF_WEIGHTS, 800, 1),
        p2p(OC_OP_RECV, OC_P2P_ACT, 0, 1, 0),
        compute(OC_PHASE_FWD, 0, 1),
        compute(OC_PHASE_BWD, 0, 1),
        p2p(OC_OP_SEND, OC_P2P_GRAD, 0, 1, 0),
        p2p(OC_OP_RECV, OC_P2P_ACT, 1, 1, 0),
        compute(OC_PHASE_FWD, 1, 1),
        compute(OC_PHASE_BWD, 1, 1),
        p2p(OC_OP_SEND, OC_P2P_GRAD, 1, 1, 0),
        coll_embed(1),
        mk(OC_OP_WAIT, OC_PHASE_OPTIMIZER, -1, 1),
        compute(OC_PHASE_OPTIMIZER, -1, 1),
    };
    memset(h, 0, sizeof *h);
    h->s.nranks = 2;
    h->s.num_micro_batches = 2;
    h->s.layout = layout_of(1, 2, 1, 1);
    h->s.ranks = calloc(2, sizeof *h->s.ranks);
    h->s.ranks[0].n = h->s.ranks[0].cap = N0;
    h->s.ranks[0].ops = malloc(sizeof o0);
    memcpy(h->s.ranks[0].ops, o0, sizeof o0);
    h->s.ranks[1].n = h->s.ranks[1].cap = N1;
    h->s.ranks[1].ops = malloc(sizeof o1);
    memcpy(h->s.ranks[1].ops, o1, sizeof o1);
    oc_timeline_init(&h->tl, &h->s, record);
    for (int64_t i = 0; i < N0 && h->tl.start_s[0]; i++) {
        h->tl.start_s[0][i] = rank0_hops[i].t0_ms * 1e-3;
        h->tl.end_s[0][i] = rank0_hops[i].t1_ms * 1e-3;
    }
    for (int64_t i = 0; i < N1 && h->tl.start_s[1]; i++) {
        h->tl.start_s[1][i] = rank1_hops[i].t0_ms * 1e-3;
        h->tl.end_s[1][i] = rank1_hops[i].t1_ms * 1e-3;
    }
}

void free_hand(struct hand *h)
{
    oc_timeline_free(&h->tl);
    oc_schedule_free(&h->s);
}

/* ------------------------------------------------------------------ */
/* A sweep                                                              */

/* See report_fixtures.h for the ranking by hand. */
struct oc_metrics sweep[5];
struct oc_rejected_layout rejected[3];

static void fill(struct oc_metrics *m, struct oc_layout l, int64_t nmb, double step,
                 double tps, double mfu, double bubble, double compute, double exposed,
                 double tp, double pp, double dp, double peak, int fits)
{
    oc_metrics_init(m, &l);
    m->num_micro_batches = nmb;
    m->step_time_s = step;
    m->tokens_per_s = tps;
    m->mfu = mfu;
    m->bubble_fraction = bubble;
    m->compute_s = compute;
    m->exposed_comm_s = exposed;
    m->tp_comm_s = tp;
    m->pp_comm_s = pp;
    m->dp_comm_s = dp;
    m->peak_mem_bytes = peak;
    m->device_mem_bytes = 80e9;
    m->fits = fits;
}

void build_sweep(void)
{
    fill(&sweep[IC], layout_of(1, 16, 1, 1), 32, 3.0, 0.8e6, 0.30, 0.30, 1.2, 0.3, 0, 0.1, 0,
         40e9, 1);
    /* A: step 2.0 = compute 1.2 + bubble 0.1 x 2.0 + exposed 0.3 + other 0.3 */
    fill(&sweep[IA], layout_of(2, 4, 2, 1), 16, 2.0, 1.2e6, 0.45, 0.10, 1.2, 0.3, 0.1, 0.05,
         0.2, 60e9, 1);
    /* B: step 2.4 = compute 1.2 + bubble 0 + exposed 0.9 + other 0.3 */
    fill(&sweep[IB], layout_of(8, 1, 2, 1), 16, 2.4, 1.0e6, 0.375, 0.0, 1.2, 0.9, 0.3, 0,
         0.8, 70e9, 1);
    fill(&sweep[ID], layout_of(4, 2, 2, 2), 8, 2.667, 0.9e6, 0.34, 0.11, 1.3, 0.5, 0.2, 0.05,
         0.3, 75e9, 1);
    fill(&sweep[IE], layout_of(1, 1, 16, 1), 16, 1.6, 1.5e6, 0.56, 0.0, 1.2, 0.2, 0, 0, 0.2,
         120e9, 0);
    memset(rejected, 0, sizeof rejected);
    rejected[0].layout = layout_of(16, 1, 1, 1);
    rejected[0].kind = oc_reject_kind_of("TP 16 spans nodes of 8 GPUs");
    rejected[0].peak_mem_bytes = -1;
    snprintf(rejected[0].reason, sizeof rejected[0].reason, "TP 16 spans nodes of 8 GPUs");
    rejected[1].layout = layout_of(1, 2, 8, 1);
    rejected[1].kind = oc_reject_kind_of("out of memory: stage 0 needs 90.0 GB");
    rejected[1].peak_mem_bytes = 90e9;
    snprintf(rejected[1].reason, sizeof rejected[1].reason, "out of memory: stage 0 needs 90.0 GB");
    rejected[2].layout = layout_of(1, 4, 4, 1);
    rejected[2].kind = OC_REJECT_MEMORY;
    rejected[2].peak_mem_bytes = 85e9;
    snprintf(rejected[2].reason, sizeof rejected[2].reason, "out of memory: stage 0 needs 85.0 GB");
    for (int i = 0; i < 3; i++)
        rejected[i].device_mem_bytes = 80e9;
}

struct oc_topology topo16(void)
{
    struct oc_topology t;
    memset(&t, 0, sizeof t);
    strcpy(t.name, "test-100g");
    t.gpus_per_node = 8;
    strcpy(t.device.name, "H100");
    t.device.peak_flops_16bit = 989e12;
    t.device.memory_bytes = 80e9;
    strcpy(t.intra_name, "NVLink");
    t.intra_bandwidth_Bps = 450e9;
    strcpy(t.nic_name, "CX7");
    t.nics_per_node = 1;
    t.nic_bandwidth_Bps = 12.5e9; /* 100 Gb/s */
    return t;
}
