/* test_timeline_json.c: the Chrome trace JSON of a timeline
 * (reports/timeline_json.h), parsed back with jansson: events, lanes,
 * memory counters, skipped ranks, clamping, grouping by node.
 *
 * Fixtures (tests/report_fixtures.h): the hand-made two-stage timeline,
 * whose times are written op by op so every ts, dur and lane is known by
 * hand; and a real schedule from oc_schedule_build (tiny GPT model,
 * tp1-pp2-dp1, m = 4, chunk grain) with op i of every rank at
 * [i ms, i ms + 0.5 ms]. Files go to the scratch folder.
 */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report_fixtures.h"
#include "test_util.h"
#include "timeline_json.h"

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
    snprintf(path, sizeof path, "%s/hand.json", oc_test_dir);
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
    snprintf(path, sizeof path, "%s/skip.json", oc_test_dir);
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

static void test_trace_real_schedule(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
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
    snprintf(path, sizeof path, "%s/real.json", oc_test_dir);
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

static CU_TestInfo trace_tests[] = {
    {"trace of a hand-made timeline", test_trace_hand},
    {"trace: skipped ranks, clamping, by node", test_trace_skip_clamp_node},
    {"trace of a built schedule", test_trace_real_schedule},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"timeline_json", suite_init, oc_test_dir_remove, NULL, NULL, trace_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
