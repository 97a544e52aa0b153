/* test_reports.c: the output side in reports/: the Chrome trace JSON of a
 * timeline (parsed back with jansson), the gnuplot scripts, data and images
 * of a sweep and of one pipeline, the ranking, the ranked table and
 * report.md.
 *
 * Fixtures, all filled in code:
 * - a hand-made two-stage schedule (tp1-pp2-dp1, two micro-batches) whose
 *   times are written below op by op, so every ts, dur, lane and box is
 *   known by hand;
 * - a real schedule from oc_schedule_build (tiny GPT model, tp1-pp2-dp1,
 *   m = 4, chunk grain) with op i of every rank at [i ms, i ms + 0.5 ms];
 * - five simulated layouts of 16 GPUs and three rejected ones, with metrics
 *   chosen so that ranking, breakdown and explanation are known by hand.
 * Files go to a fresh folder under /tmp that is removed at the end
 * (OCSIM_TEST_KEEP=1 keeps it, to look at the plots).
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layout.h"
#include "metrics.h"
#include "model.h"
#include "plots.h"
#include "report_md.h"
#include "schedule.h"
#include "test_util.h"
#include "timeline.h"
#include "timeline_json.h"
#include "topology.h"

static char tmp_dir[256];

static void path_in(char *buf, size_t n, const char *sub, const char *name)
{
    snprintf(buf, n, "%s/%s/%s", tmp_dir, sub, name);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    fclose(f);
    return s;
}

static int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Data rows (not '#', not blank) of block `index` of a gnuplot data file
 * (blocks are separated by two blank lines); index -1 counts every block. */
static int count_rows(const char *path, int index)
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
static int data_row(const char *path, int k, char *buf, size_t n)
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
static int is_png(const char *path)
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

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static int suite_init(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/ocsim-test-reports-XXXXXX");
    return mkdtemp(tmp_dir) ? 0 : -1;
}

/* OCSIM_TEST_KEEP=1 keeps the folder to look at the plots. */
static int suite_clean(void)
{
    const char *keep = getenv("OCSIM_TEST_KEEP");
    if (keep && keep[0] == '1') {
        fprintf(stderr, "kept %s\n", tmp_dir);
        return 0;
    }
    nftw(tmp_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

/* ------------------------------------------------------------------ */
/* The hand-made schedule and timeline                                  */

static struct oc_layout layout_of(int64_t t, int64_t p, int64_t d, int64_t mb)
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

struct hand {
    struct oc_schedule s;
    struct oc_timeline tl;
};

static void build_hand(struct hand *h, const unsigned char *record)
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

static void free_hand(struct hand *h)
{
    oc_timeline_free(&h->tl);
    oc_schedule_free(&h->s);
}

/* Trace helpers over the parsed JSON. */
static json_t *load_trace(const char *path)
{
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root)
        fprintf(stderr, "%s:%d:%d: %s\n", path, err.line, err.column, err.text);
    return root;
}

static int count_ph(json_t *ev, const char *ph)
{
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "ph")), ph) == 0)
            n++;
    }
    return n;
}

static json_t *find_event(json_t *ev, const char *ph, const char *name, int64_t pid)
{
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "ph")), ph) == 0 &&
            strcmp(json_string_value(json_object_get(e, "name")), name) == 0 &&
            (pid < 0 || json_integer_value(json_object_get(e, "pid")) == pid))
            return e;
    }
    return NULL;
}

static double num(json_t *o, const char *key) { return json_number_value(json_object_get(o, key)); }

/* The thread_name of (pid, tid), or "". */
static const char *thread_name(json_t *ev, int64_t pid, int64_t tid)
{
    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "ph")), "M") == 0 &&
            strcmp(json_string_value(json_object_get(e, "name")), "thread_name") == 0 &&
            json_integer_value(json_object_get(e, "pid")) == pid &&
            json_integer_value(json_object_get(e, "tid")) == tid)
            return json_string_value(json_object_get(json_object_get(e, "args"), "name"));
    }
    return "";
}

/* Complete events on one thread must nest; ours never overlap at all. */
static int threads_sequential(json_t *ev)
{
    size_t i, j;
    json_t *a, *b;
    json_array_foreach(ev, i, a)
    {
        if (strcmp(json_string_value(json_object_get(a, "ph")), "X"))
            continue;
        json_array_foreach(ev, j, b)
        {
            if (j == i || strcmp(json_string_value(json_object_get(b, "ph")), "X") ||
                json_integer_value(json_object_get(a, "tid")) !=
                    json_integer_value(json_object_get(b, "tid")))
                continue;
            double a0 = num(a, "ts"), a1 = a0 + num(a, "dur");
            double b0 = num(b, "ts"), b1 = b0 + num(b, "dur");
            if (a0 < b1 - 1e-6 && b0 < a1 - 1e-6)
                return 0;
        }
    }
    return 1;
}

/* ------------------------------------------------------------------ */
/* Trace tests                                                          */

static void test_trace_hand(void)
{
    struct hand h;
    build_hand(&h, NULL);
    char path[512];
    snprintf(path, sizeof path, "%s/hand.json", tmp_dir);
    struct oc_trace_opts o = OC_TRACE_OPTS_DEFAULT;
    o.title = "a \"quoted\"\ttitle\nwith a newline";
    struct oc_trace_stats ts;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_timeline_json_write(path, &h.tl, NULL, &o, &ts, &st), 0);

    /* By hand (see rank0_hops / rank1_hops): ops with a duration > 0 are
     * rank 0: 2 3 5 6 7 8 10 11 13 15 (10), rank 1: 1 2 3 4 6 7 8 9 11 (9).
     * Counters: rank 0 has 5 ALLOC/FREE, rank 1 one. Comm threads: rank 0's
     * sends [1, 2.2] and [2, 2.5] ms overlap (2), rank 1's [3.5, 4] and
     * [5.5, 6.5] do not (1). Metadata: 2 processes x 2 (name, sort) + 2
     * ranks x 2 + 3 comm threads x 2 = 14. */
    CU_ASSERT_EQUAL(ts.complete_events, 19);
    CU_ASSERT_EQUAL(ts.counter_events, 6);
    CU_ASSERT_EQUAL(ts.comm_threads, 3);
    CU_ASSERT_EQUAL(ts.metadata_events, 14);
    CU_ASSERT_EQUAL(ts.clamped_events, 0);
    CU_ASSERT_EQUAL(ts.ranks_skipped, 0);

    json_t *root = load_trace(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    json_t *ev = json_object_get(root, "traceEvents");
    CU_ASSERT_FATAL(json_is_array(ev));
    CU_ASSERT_EQUAL(count_ph(ev, "X"), 19);
    CU_ASSERT_EQUAL(count_ph(ev, "C"), 6);
    CU_ASSERT_EQUAL(count_ph(ev, "M"), 14);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(root, "displayTimeUnit")), "ms");
    json_t *other = json_object_get(root, "otherData");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(other, "layout")),
                           "tp1-pp2-dp1-mb1-1f1b");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(other, "title")), o.title);
    OC_ASSERT_REL(num(other, "step_time_s"), 9.5e-3, 1e-12);

    /* B mb0 of stage 0 (pid 1, tid 1): 4 to 6 ms = ts 4000 us, dur 2000 us. */
    json_t *e = find_event(ev, "X", "B mb0 c0 L0-3", 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    OC_ASSERT_REL(num(e, "ts"), 4000.0, 1e-12);
    OC_ASSERT_REL(num(e, "dur"), 2000.0, 1e-12);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(e, "tid")), 1);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(e, "cat")), "compute");
    json_t *args = json_object_get(e, "args");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(args, "mb")), 0);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(args, "op")), 8);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(args, "layers")), "0-3");
    OC_ASSERT_REL(num(args, "flops"), 1e9, 1e-12);

    /* The second send of rank 0 goes to comm thread 2 (k = 1): tid =
     * (k + 1) * nranks + rank + 1 = 2 * 2 + 0 + 1 = 5; 2.0 to 2.5 ms. */
    e = find_event(ev, "X", "send act mb1 -> 1", 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(e, "tid")), 5);
    OC_ASSERT_REL(num(e, "ts"), 2000.0, 1e-12);
    OC_ASSERT_REL(num(e, "dur"), 500.0, 1e-12);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(e, "cat")), "pp");
    CU_ASSERT_STRING_EQUAL(thread_name(ev, 1, 5), "rank 0 comm 2");
    /* The first send: comm thread 1, tid 1 * 2 + 0 + 1 = 3, 1.0 to 2.2 ms. */
    e = find_event(ev, "X", "send act mb0 -> 1", 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(e, "tid")), 3);
    OC_ASSERT_REL(num(e, "dur"), 1200.0, 1e-9);

    /* The wait for mb0's gradient: 2 to 4 ms on the rank's own thread. */
    e = find_event(ev, "X", "recv grad mb0 <- 1", 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    OC_ASSERT_REL(num(e, "ts"), 2000.0, 1e-12);
    OC_ASSERT_REL(num(e, "dur"), 2000.0, 1e-12);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(e, "tid")), 1);
    /* Stage 1's all-reduce: 5.5 to 9 ms, category dp, name with the size. */
    e = find_event(ev, "X", "allreduce embed 2.00 kB", 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    OC_ASSERT_REL(num(e, "ts"), 5500.0, 1e-12);
    OC_ASSERT_REL(num(e, "dur"), 3500.0, 1e-12);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(e, "cat")), "dp");
    CU_ASSERT_PTR_NOT_NULL(find_event(ev, "X", "optimizer", 2));
    CU_ASSERT_PTR_NULL(find_event(ev, "X", "wait", -1)); /* 0 long: not written */

    /* Names of processes and threads. */
    CU_ASSERT_STRING_EQUAL(thread_name(ev, 2, 2), "rank 1 (tp0 pp1 dp0)");
    e = find_event(ev, "M", "process_name", 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_object_get(e, "args"), "name")),
                           "stage 1");

    /* Memory of rank 0: 1000, 1100, 1200, 1100, 1000 bytes; the largest
     * is 1200 at 1 ms (the second ALLOC of activations). */
    double peak = 0, peak_ts = -1, last = -1;
    size_t i;
    json_array_foreach(ev, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "ph")), "C") ||
            strcmp(json_string_value(json_object_get(e, "name")), "memory rank 0"))
            continue;
        last = num(json_object_get(e, "args"), "bytes");
        if (last > peak) {
            peak = last;
            peak_ts = num(e, "ts");
        }
    }
    OC_ASSERT_REL(peak, 1200.0, 1e-12);
    OC_ASSERT_REL(peak_ts, 1000.0, 1e-12);
    OC_ASSERT_REL(last, 1000.0, 1e-12);

    CU_ASSERT(threads_sequential(ev));
    json_decref(root);
    free_hand(&h);
}

/* Skipped ranks, a clamp, and grouping by node. */
static void test_trace_skip_clamp_node(void)
{
    unsigned char record[2] = {1, 0};
    struct hand h;
    build_hand(&h, record);
    h.tl.proxy[1] = 0;
    /* F mb1 of rank 0 made to start 0.5 us before F mb0 ends (1 ms): it is
     * clamped to start at 1000 us, so it ends at 2000 us, dur 1000. */
    h.tl.start_s[0][5] = 0.9995e-3;
    char path[512];
    snprintf(path, sizeof path, "%s/skip.json", tmp_dir);
    struct oc_trace_opts o = OC_TRACE_OPTS_DEFAULT;
    o.group = OC_TRACE_BY_NODE;
    o.gpus_per_node = 1; /* rank r is node r */
    o.memory = 0;
    struct oc_trace_stats ts;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_timeline_json_write(path, &h.tl, NULL, &o, &ts, &st), 0);
    CU_ASSERT_EQUAL(ts.ranks_skipped, 1);
    CU_ASSERT_EQUAL(ts.ranks_written, 1);
    CU_ASSERT_EQUAL(ts.complete_events, 10); /* rank 0 only */
    CU_ASSERT_EQUAL(ts.counter_events, 0);
    CU_ASSERT_EQUAL(ts.clamped_events, 1);

    json_t *root = load_trace(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    json_t *ev = json_object_get(root, "traceEvents");
    json_t *other = json_object_get(root, "otherData");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(other, "not_recorded_count")), 1);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(other, "clamped_events")), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(json_string_value(json_object_get(other, "not_recorded")),
                                  "1->0"));
    json_t *e = find_event(ev, "X", "F mb1 c0 L0-3", 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    OC_ASSERT_REL(num(e, "ts"), 1000.0, 1e-12);
    OC_ASSERT_REL(num(e, "dur"), 1000.0, 1e-12);
    e = find_event(ev, "M", "process_name", 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_object_get(e, "args"), "name")),
                           "node 0");
    CU_ASSERT_PTR_NULL(find_event(ev, "M", "process_name", 2)); /* node 1: nobody */
    CU_ASSERT(threads_sequential(ev));
    json_decref(root);

    /* A folder that does not exist: one line naming the file. */
    CU_ASSERT_EQUAL(oc_timeline_json_write("/nonexistent-dir/x.json", &h.tl, NULL, NULL, NULL,
                                           &st),
                    -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "/nonexistent-dir/x.json"));
    free_hand(&h);
}

static void tiny_model(struct oc_model *m)
{
    memset(m, 0, sizeof *m);
    strcpy(m->name, "tiny");
    strcpy(m->model_type, "gpt2");
    m->arch = OC_ARCH_GPT;
    m->hidden_size = 64;
    m->num_attention_heads = 4;
    m->num_key_value_heads = 4;
    m->num_hidden_layers = 8;
    m->intermediate_size = 256;
    m->vocab_size = 512;
    m->max_position_embeddings = 128;
    m->has_bias = 1;
    m->learned_pos_emb = 1;
    m->norm_params_per_h = 2;
    m->tie_word_embeddings = 1;
    m->has_dropout = 1;
}

/* A schedule from the core: every op i of every rank at [i, i + 0.5] ms. */
static void test_trace_real_schedule(void)
{
    struct oc_model m;
    tiny_model(&m);
    struct oc_layout l = layout_of(1, 2, 1, 1);
    l.global_batch = 4; /* m = 4 */
    struct oc_schedule s;
    struct oc_schedule_opts so = {.grain = OC_GRAIN_CHUNK, .emit_memory = 1};
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_schedule_build(&s, &m, &l, &so, &st), 0);
    struct oc_timeline tl;
    oc_timeline_init(&tl, &s, NULL);
    int64_t nmem = 0;
    double persistent0 = 0;
    for (int64_t r = 0; r < s.nranks; r++)
        for (int64_t i = 0; i < s.ranks[r].n; i++) {
            int k = s.ranks[r].ops[i].kind;
            int is_mem = k == OC_OP_ALLOC || k == OC_OP_FREE;
            nmem += is_mem;
            if (r == 0 && k == OC_OP_ALLOC && s.ranks[r].ops[i].buf != OC_BUF_ACTIVATIONS)
                persistent0 += s.ranks[r].ops[i].bytes;
            tl.start_s[r][i] = (double)i * 1e-3;
            tl.end_s[r][i] = (double)i * 1e-3 + (is_mem ? 0 : 0.5e-3);
        }
    char path[512];
    snprintf(path, sizeof path, "%s/real.json", tmp_dir);
    struct oc_trace_stats ts;
    CU_ASSERT_EQUAL_FATAL(oc_timeline_json_write(path, &tl, &l, NULL, &ts, &st), 0);
    /* 1F1B on 2 stages, m = 4, chunk grain: each stage runs 4 F + 4 B +
     * optimizer (9 compute), 4 sends and 4 receives, the tied-embedding
     * all-reduce and the WAIT: 19 timed ops; tp1 and dp1 add no collective.
     * 38 in all. */
    CU_ASSERT_EQUAL(ts.complete_events, 38);
    CU_ASSERT_EQUAL(ts.counter_events, nmem);
    json_t *root = load_trace(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    json_t *ev = json_object_get(root, "traceEvents");
    CU_ASSERT_EQUAL(count_ph(ev, "X"), 38);
    /* Every event sits at its op's slot: ts = op * 1000 us, dur = 500 us. */
    size_t i;
    json_t *e;
    int bad = 0, fwd = 0;
    double last0 = -1;
    json_array_foreach(ev, i, e)
    {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (!strcmp(ph, "C") &&
            !strcmp(json_string_value(json_object_get(e, "name")), "memory rank 0"))
            last0 = num(json_object_get(e, "args"), "bytes");
        if (strcmp(ph, "X"))
            continue;
        double op = (double)json_integer_value(json_object_get(json_object_get(e, "args"), "op"));
        if (fabs(num(e, "ts") - op * 1000.0) > 1e-6 || fabs(num(e, "dur") - 500.0) > 1e-6)
            bad++;
        fwd += !strncmp(json_string_value(json_object_get(e, "name")), "F mb", 4);
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(fwd, 8); /* 4 micro-batches x 2 stages */
    /* With every activation freed, rank 0 holds weights, gradients and
     * optimizer states only. */
    OC_ASSERT_REL(last0, persistent0, 1e-12);
    CU_ASSERT(threads_sequential(ev));
    json_decref(root);
    oc_timeline_free(&tl);
    oc_schedule_free(&s);
}

/* ------------------------------------------------------------------ */
/* Sweep fixtures                                                       */

/* Five simulated layouts of 16 GPUs and three rejected ones. Ranked by
 * hand: A (1.2 M tok/s), B (1.0 M), D (0.9 M), C (0.8 M) fit; E has the
 * most tokens/s (1.5 M) but does not fit, so it comes last. */
static struct oc_metrics sweep[5];
static struct oc_rejected_layout rejected[3];
enum { IA, IB, IC, ID, IE };

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

static void build_sweep(void)
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

static struct oc_topology topo16(void)
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

static void test_rank(void)
{
    build_sweep();
    int64_t order[5];
    CU_ASSERT_EQUAL(oc_report_rank(sweep, 5, order), 4);
    CU_ASSERT_EQUAL(order[0], IA);
    CU_ASSERT_EQUAL(order[1], IB);
    CU_ASSERT_EQUAL(order[2], ID);
    CU_ASSERT_EQUAL(order[3], IC);
    CU_ASSERT_EQUAL(order[4], IE);
    CU_ASSERT_EQUAL(oc_reject_kind_of("out of memory: x"), OC_REJECT_MEMORY);
    CU_ASSERT_EQUAL(oc_reject_kind_of("TP*PP*DP = 32 does not match 64 cards"), OC_REJECT_RULE);
}

/* ------------------------------------------------------------------ */
/* Plots                                                                */

static void test_plot_sweep(void)
{
    build_sweep();
    char dir[512], p[600], row[1024];
    snprintf(dir, sizeof dir, "%s/sweep", tmp_dir);
    struct oc_status st = {{0}};
    struct oc_plot_opts po = OC_PLOT_OPTS_DEFAULT;
    int rc = oc_plot_sweep(dir, sweep, 5, rejected, 3, &po, &st);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "plot_sweep: %s\n", st.msg);

    /* throughput: the 4 that fit, best first. */
    path_in(p, sizeof p, "sweep", "throughput.dat");
    CU_ASSERT_EQUAL(count_rows(p, -1), 4);
    CU_ASSERT_EQUAL(data_row(p, 0, row, sizeof row), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(row, "1 \"tp2-pp4-dp2-mb1-1f1b\" 1200000 "));
    CU_ASSERT_EQUAL(data_row(p, 3, row, sizeof row), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(row, "4 \"tp1-pp16-dp1-mb1-1f1b\" 800000 "));
    /* memory: 5 simulated + 2 rejected for memory (the rule-breaker has no
     * peak), the rejected ones smallest first: 85 GB then 90 GB. */
    path_in(p, sizeof p, "sweep", "memory.dat");
    CU_ASSERT_EQUAL(count_rows(p, -1), 7);
    CU_ASSERT_EQUAL(data_row(p, 4, row, sizeof row), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(row, "\"tp1-pp1-dp16-mb1-1f1b\" 1.2e+11 0 sim"));
    CU_ASSERT_EQUAL(data_row(p, 5, row, sizeof row), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(row, "\"tp1-pp4-dp4-mb1-1f1b\" 8.5e+10 0 closed-form"));
    /* breakdown of A: compute 1.2, bubble 0.1 x 2.0 = 0.2, exposed 0.3,
     * other 2.0 - 1.2 - 0.2 - 0.3 = 0.3. */
    path_in(p, sizeof p, "sweep", "breakdown.dat");
    CU_ASSERT_EQUAL(count_rows(p, -1), 4);
    CU_ASSERT_EQUAL(data_row(p, 0, row, sizeof row), 0);
    double c, b, e, o, s;
    CU_ASSERT_EQUAL(sscanf(strchr(row + 3, '"') + 1, "%lf %lf %lf %lf %lf", &c, &b, &e, &o, &s), 5);
    OC_ASSERT_REL(c, 1.2, 1e-9);
    OC_ASSERT_REL(b, 0.2, 1e-9);
    OC_ASSERT_REL(e, 0.3, 1e-9);
    OC_ASSERT_REL(o, 0.3, 1e-9);
    /* bubble: 5 points in 4 blocks, (pp, v) sorted: pp1 (B, E), pp2 (D),
     * pp4 (A), pp16 (C). */
    path_in(p, sizeof p, "sweep", "bubble.dat");
    CU_ASSERT_EQUAL(count_rows(p, -1), 5);
    CU_ASSERT_EQUAL(count_rows(p, 0), 2);
    CU_ASSERT_EQUAL(count_rows(p, 1), 1);
    CU_ASSERT_EQUAL(count_rows(p, 3), 1);
    path_in(p, sizeof p, "sweep", "bubble.gp");
    char *gp = read_file(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gp);
    CU_ASSERT_PTR_NOT_NULL(strstr(gp, "(16-1.0)/(1*x+16-1.0)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(gp, "index 3 using 1:2"));
    free(gp);

    static const char *const names[] = {"throughput", "memory", "breakdown", "bubble"};
    for (int i = 0; i < 4; i++) {
        char f[64];
        snprintf(f, sizeof f, "%s.gp", names[i]);
        path_in(p, sizeof p, "sweep", f);
        CU_ASSERT(file_exists(p));
        snprintf(f, sizeof f, "%s.png", names[i]);
        path_in(p, sizeof p, "sweep", f);
        CU_ASSERT(is_png(p));
        snprintf(f, sizeof f, "%s.svg", names[i]);
        path_in(p, sizeof p, "sweep", f);
        CU_ASSERT(file_exists(p));
    }
}

static void test_plot_no_gnuplot(void)
{
    build_sweep();
    char dir[512], p[600];
    snprintf(dir, sizeof dir, "%s/nognuplot", tmp_dir);
    struct oc_status st = {{0}};
    struct oc_plot_opts po = OC_PLOT_OPTS_DEFAULT;
    po.gnuplot = "/nonexistent/ocsim-no-gnuplot";
    CU_ASSERT_EQUAL(oc_plot_sweep(dir, sweep, 5, rejected, 3, &po, &st), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "not found"));
    path_in(p, sizeof p, "nognuplot", "throughput.gp");
    CU_ASSERT(file_exists(p));
    path_in(p, sizeof p, "nognuplot", "throughput.dat");
    CU_ASSERT_EQUAL(count_rows(p, -1), 4);
    path_in(p, sizeof p, "nognuplot", "throughput.png");
    CU_ASSERT(!file_exists(p));
    /* The output folder cannot be made: a failure, not a warning. */
    CU_ASSERT_EQUAL(oc_plot_sweep("/proc/ocsim-cannot", sweep, 5, NULL, 0, &po, &st), -1);
}

static void test_plot_pipeline(void)
{
    struct hand h;
    build_hand(&h, NULL);
    char dir[512], p[600], row[1024];
    snprintf(dir, sizeof dir, "%s/pipe", tmp_dir);
    struct oc_status st = {{0}};
    int rc = oc_plot_pipeline(dir, &h.tl, NULL, NULL, &st);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "plot_pipeline: %s\n", st.msg);
    path_in(p, sizeof p, "pipe", "pipeline.dat");
    /* Boxes: the 10 + 9 timed ops of the two ranks (stage 0 is rank 0,
     * stage 1 rank 1). Labels: F0 F1 B0 B1 on each stage, all wider than
     * 1.2% of the 9.5 ms step. */
    CU_ASSERT_EQUAL(count_rows(p, 0), 19);
    CU_ASSERT_EQUAL(count_rows(p, 1), 8);
    /* Rank 0 waits for mb0's gradient from 2 ms; rank 1 sent it at 3.5 ms,
     * so the drawn transfer is 3.5 to 4 ms and 2 to 3.5 ms stays empty. */
    int found = 0, found1 = 0;
    for (int k = 0; data_row(p, k, row, sizeof row) == 0; k++) {
        long long stage, op;
        double ylo, yhi, a, b;
        long rgb;
        char kind[16];
        if (sscanf(row, "%lld %lf %lf %lf %lf %ld %15s %lld", &stage, &ylo, &yhi, &a, &b, &rgb,
                   kind, &op) != 8)
            continue;
        if (stage == 0 && op == 7) {
            found = 1;
            OC_ASSERT_REL(a, 3.5e-3, 1e-9);
            OC_ASSERT_REL(b, 4e-3, 1e-9);
            CU_ASSERT_STRING_EQUAL(kind, "pp");
        }
        if (stage == 1 && op == 1) { /* rank 0 sent act mb0 at 1 ms */
            found1 = 1;
            OC_ASSERT_REL(a, 1e-3, 1e-9);
            OC_ASSERT_REL(b, 2.2e-3, 1e-9);
        }
    }
    CU_ASSERT(found && found1);
    path_in(p, sizeof p, "pipe", "pipeline.png");
    CU_ASSERT(is_png(p));
    path_in(p, sizeof p, "pipe", "pipeline.svg");
    CU_ASSERT(file_exists(p));
    free_hand(&h);
}

/* ------------------------------------------------------------------ */
/* Report                                                               */

static void test_explain(void)
{
    build_sweep();
    struct oc_topology t = topo16();
    char text[4096];
    /* A vs B: step 2.0 vs 2.4 s, 1.2 vs 1.0 M tok/s = 20.0% more. The
     * differences: exposed comm 0.9 - 0.3 = 0.6 s, bubble 0 - 0.2 = -0.2 s,
     * compute and other 0: exposed comm saves 0.6 s, more than the 0.4 s
     * gap, and A gives back 200 ms of bubble. DP comm differs most (0.2 vs 0.8 s).
     * Placement (TP fastest, then DP): A's DP group of rank 0 is {0, 2},
     * one node; B's is {0, 8}, two nodes of 8 GPUs. */
    oc_report_explain(text, sizeof text, &sweep[IA], &sweep[IB], &t);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "**tp2-pp4-dp2-mb1-1f1b**"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "20.0% more than the runner-up **tp8-pp1-dp2-mb1-1f1b**"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "Most of the difference is exposed communication"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "(it saves 600 ms, more than the whole gap)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "DP gradient reduction: 200 ms vs 800 ms"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "Its DP groups (dp2) stay inside one node on NVLink"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(text, "the runner-up's DP groups (dp2) span 2 nodes and cross the 100 Gb/s network"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "It gives back 200 ms in pipeline bubble"));
    CU_ASSERT_PTR_NULL(strstr(text, "within 1%"));

    /* D vs C: D 2.667 s with bubble 0.11 (0.293 s), C 3.0 s with bubble
     * 0.30 (0.9 s): bubble differs most (0.607 of 0.333 s). Closed form:
     * D pp2, m 8: 1/9 = 11.1%; C pp16, m 32: 15/47 = 31.9%. */
    oc_report_explain(text, sizeof text, &sweep[ID], &sweep[IC], &t);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "Most of the difference is pipeline bubble"));
    /* bubble saves 0.9 - 0.29337 = 0.60663 s of the 0.333 s gap as well. */
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "(it saves 607 ms, more than the whole gap)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "gives 11.1% and 31.9%"));

    /* Within 1%: the caution. */
    struct oc_metrics *near = malloc(sizeof *near);
    *near = sweep[IB];
    near->tokens_per_s = 1.195e6;
    near->step_time_s = 2.0084;
    oc_report_explain(text, sizeof text, &sweep[IA], near, &t);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "within 1%"));
    free(near);
    /* Alone. */
    oc_report_explain(text, sizeof text, &sweep[IA], NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "only simulated layout that fits"));
}

static void test_print_table(void)
{
    build_sweep();
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    oc_report_print_table(f, sweep, 5, 2);
    fclose(f);
    /* Header, A, B, then "... 3 more layouts (4 of 5 fit in memory)". */
    char *l1 = strchr(buf, '\n') + 1, *l2 = strchr(l1, '\n') + 1, *l3 = strchr(l2, '\n') + 1;
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "tokens/s"));
    CU_ASSERT_EQUAL(strncmp(l1, "   1  tp2-pp4-dp2-mb1-1f1b", 26), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(l1, "1.20 Mtok/s"));
    CU_ASSERT_PTR_NOT_NULL(strstr(l1, "45.0%"));
    CU_ASSERT_PTR_NOT_NULL(strstr(l1, "60.0 GB"));
    CU_ASSERT_EQUAL(strncmp(l2, "   2  tp8-pp1-dp2-mb1-1f1b", 26), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(l3, "3 more layouts (4 of 5 fit in memory)"));
    /* Columns line up: every row as long as the header. */
    CU_ASSERT_EQUAL(strchr(buf, '\n') - buf, strchr(l1, '\n') - l1);
    CU_ASSERT_EQUAL(strchr(l1, '\n') - l1, strchr(l2, '\n') - l2);
    free(buf);
}

static void test_report_md(void)
{
    build_sweep();
    struct oc_model m;
    tiny_model(&m);
    struct oc_topology t = topo16();
    struct oc_report_ctx ctx = {
        .command_line = "ocsim sweep --cards 16 --model tiny",
        .model = &m,
        .topo = &t,
        .cards = 16,
        .global_batch = 64,
        .seq_length = 32,
        .method = "test fixture",
        .csv_name = "sweep.csv",
    };
    char dir[512], p[600];
    snprintf(dir, sizeof dir, "%s/report", tmp_dir);
    struct oc_status st = {{0}};
    int rc = oc_report_sweep(dir, sweep, 5, rejected, 3, &ctx, &st);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "report: %s\n", st.msg);
    path_in(p, sizeof p, "report", "report.md");
    char *md = read_file(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(md);
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "ocsim sweep --cards 16 --model tiny"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "## Chosen layout\n\n`tp2-pp4-dp2-mb1-1f1b`"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "| 1 | tp2-pp4-dp2-mb1-1f1b | 1.20 Mtok/s | 2.00 s |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "| 2 | tp8-pp1-dp2-mb1-1f1b |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "| 5 | tp1-pp1-dp16-mb1-1f1b |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "| 120 GB | no |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "the runner-up **tp8-pp1-dp2-mb1-1f1b**"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "exceeds the device | 2 |"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "invalid layout: breaks a layout rule"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "- `tp16-pp1-dp1-mb1-1f1b`: TP 16 spans nodes of 8 GPUs"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "8 candidates: 5 simulated (4 fit in memory), 3 rejected"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "(throughput.png)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "(bubble.png)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "Not modelled"));
    /* Ranking order in the file: A's row before B's before E's. */
    char *ra = strstr(md, "| 1 | tp2-pp4"), *rb = strstr(md, "| 2 | tp8-pp1"),
         *re = strstr(md, "| 5 | tp1-pp1-dp16");
    CU_ASSERT(ra && rb && re && ra < rb && rb < re);
    free(md);
    path_in(p, sizeof p, "report", "throughput.png");
    CU_ASSERT(is_png(p));

    /* Without gnuplot: report.md is still written, the result is a warning
     * and the report says the plots were not rendered. */
    struct oc_plot_opts po = OC_PLOT_OPTS_DEFAULT;
    po.gnuplot = "/nonexistent/ocsim-no-gnuplot";
    ctx.plot = &po;
    snprintf(dir, sizeof dir, "%s/report-nognuplot", tmp_dir);
    CU_ASSERT_EQUAL(oc_report_sweep(dir, sweep, 5, rejected, 3, &ctx, &st), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "not found"));
    path_in(p, sizeof p, "report-nognuplot", "report.md");
    md = read_file(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(md);
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "Not rendered"));
    CU_ASSERT_PTR_NULL(strstr(md, "(throughput.png)"));
    free(md);

    /* Nothing fits: no chosen layout, no crash. */
    snprintf(dir, sizeof dir, "%s/report-none", tmp_dir);
    ctx.no_plots = 1;
    CU_ASSERT_EQUAL(oc_report_sweep(dir, sweep + IE, 1, NULL, 0, &ctx, &st), 0);
    path_in(p, sizeof p, "report-none", "report.md");
    md = read_file(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(md);
    CU_ASSERT_PTR_NOT_NULL(strstr(md, "None: no simulated layout fits"));
    free(md);
}

static CU_TestInfo trace_tests[] = {
    {"trace of a hand-made timeline", test_trace_hand},
    {"trace: skipped ranks, clamping, by node", test_trace_skip_clamp_node},
    {"trace of a built schedule", test_trace_real_schedule},
    CU_TEST_INFO_NULL,
};
static CU_TestInfo plot_tests[] = {
    {"ranking", test_rank},
    {"sweep plots", test_plot_sweep},
    {"sweep plots without gnuplot", test_plot_no_gnuplot},
    {"pipeline plot", test_plot_pipeline},
    CU_TEST_INFO_NULL,
};
static CU_TestInfo report_tests[] = {
    {"explanation", test_explain},
    {"ranked table", test_print_table},
    {"report.md", test_report_md},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"timeline_json", suite_init, suite_clean, NULL, NULL, trace_tests},
    {"plots", suite_init, suite_clean, NULL, NULL, plot_tests},
    {"report_md", suite_init, suite_clean, NULL, NULL, report_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
