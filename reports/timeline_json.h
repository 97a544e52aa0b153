/* timeline_json.h: a per-op timeline as a Chrome trace-event JSON file (the
 * "JSON Object Format" of the Trace Event Format document), for Perfetto
 * (ui.perfetto.dev) and chrome://tracing.
 *
 *   struct oc_trace_opts o = OC_TRACE_OPTS_DEFAULT;  // one process per stage
 *   o.title = "llama2-70b on 64 x H100, simulated";
 *   struct oc_trace_stats ts;
 *   if (oc_timeline_json_write("out/timeline.json", &tl, &layout, &o, &ts,
 *                              &st) != 0)
 *       fprintf(stderr, "ocsim: %s\n", st.msg);
 *
 * The file is written event by event (no tree in memory), so a timeline of
 * hundreds of thousands of ops costs one line of output each.
 *
 * What is written:
 * - One process per pipeline stage ("stage 3"), or per node ("node 2") with
 *   OC_TRACE_BY_NODE (rank r sits on GPU r, node r / gpus_per_node); one
 *   thread per rank ("rank 17 (tp1 pp3 dp0)"), named by "M" metadata events.
 * - One complete event ("ph":"X", ts and dur in microseconds, rounded to
 *   the nanosecond) per op whose duration is > 0: compute "F mb3 c0 L8-15",
 *   "B mb3 c0 attn L8", "R mb3 c0 mlp L8", "F mb0 c0 embed",
 *   "optimizer"; communication "allreduce tp 33.5 MB x16",
 *   "send act mb3 -> 17", "recv grad mb3 <- 17", "wait". Categories:
 *   "compute", "tp", "pp" (send/recv), "dp" (DP and tied-embedding
 *   collectives), "wait". args: op (index in the rank's op list), phase,
 *   part, mb, chunk, layers, flops, hbm_bytes for compute; bytes, count,
 *   peer, group, async for communication.
 * - A SEND ends when its data arrived, after the rank moved on, and an async
 *   collective overlaps the backward; both go to extra "comm" threads of the
 *   rank ("rank 17 comm", "rank 17 comm 2", ...), one per overlapping
 *   transfer, because complete events on one thread must nest. Everything
 *   else a rank does is sequential on its own thread; an op that would start
 *   before the previous one ended (rounding, or a producer bug) is clamped
 *   to start at that end and counted in otherData.clamped_events; an op
 *   with a non-finite time is left out and counted in dropped_events.
 * - Memory as a counter per rank ("ph":"C", name "memory rank 17", args
 *   {"bytes": running sum}) at every ALLOC and FREE. Counter tracks belong
 *   to a process, so the rank is in the name to keep the ranks of one stage
 *   apart.
 * - Ranks without times of their own (NULL arrays, the simulator's fast mode
 *   records one rank per TP group) are not written; otherData.not_recorded
 *   says how many and which rank stands in for the first few.
 *
 * Ids: pid = stage + 1 (node + 1); tid = rank + 1 on the rank's thread and
 * (k + 1) * nranks + rank + 1 on its comm thread k; 0 is avoided because
 * Perfetto treats pid/tid 0 as the kernel's idle task.
 */
#ifndef OC_TIMELINE_JSON_H
#define OC_TIMELINE_JSON_H

#include <stdint.h>
#include <stdio.h>

#include "layout.h"
#include "status.h"
#include "timeline.h"

enum oc_trace_group {
    OC_TRACE_BY_STAGE, /* one process per pipeline stage */
    OC_TRACE_BY_NODE,  /* one process per node */
};

struct oc_trace_opts {
    enum oc_trace_group group;
    int64_t gpus_per_node; /* OC_TRACE_BY_NODE: GPUs (ranks) per node, >= 1 */
    int memory;            /* 1: memory counter events */
    const char *title;     /* otherData.title, NULL: none */
    const char *source;    /* otherData.source ("simulated", "measured"), NULL: none */
};
#define OC_TRACE_OPTS_DEFAULT                                                  \
    ((struct oc_trace_opts){.group = OC_TRACE_BY_STAGE, .gpus_per_node = 8,    \
                            .memory = 1, .title = NULL, .source = NULL})

struct oc_trace_stats {
    int64_t complete_events;  /* "X" */
    int64_t counter_events;   /* "C" */
    int64_t metadata_events;  /* "M" */
    int64_t ranks_written;
    int64_t ranks_skipped;    /* no times of their own */
    int64_t clamped_events;   /* started before the previous op on the thread ended */
    int64_t dropped_events;   /* ops with a non-finite time, not written */
    int64_t comm_threads;     /* extra threads for overlapping transfers */
};

/* Writes the trace to `path` (truncated). `l` is the timeline's layout (NULL:
 * tl->sched->layout); opts NULL means OC_TRACE_OPTS_DEFAULT; stats may be
 * NULL. Returns 0, or -1 with st->msg naming the file when it cannot be
 * written. */
int oc_timeline_json_write(const char *path, const struct oc_timeline *tl,
                           const struct oc_layout *l,
                           const struct oc_trace_opts *opts,
                           struct oc_trace_stats *stats, struct oc_status *st);
/* The same onto an open stream (not closed); -1 when a write failed. */
int oc_timeline_json_fwrite(FILE *f, const struct oc_timeline *tl,
                            const struct oc_layout *l,
                            const struct oc_trace_opts *opts,
                            struct oc_trace_stats *stats, struct oc_status *st);

/* The event name of op `i` of `rank` ("F mb3 c0 L8-15", "send act mb3 -> 17",
 * ...), as written in the trace; also used for labels elsewhere. */
void oc_trace_op_name(const struct oc_op *op, char *buf, size_t n);
/* Its category: "compute", "tp", "pp", "dp", "wait", or NULL for ALLOC/FREE. */
const char *oc_trace_op_category(const struct oc_op *op);

/* Writes s as a JSON string literal (with quotes), escaping '"', '\\' and
 * control characters. */
void oc_json_fputs(FILE *f, const char *s);

#endif
