/* timeline.h: when each op of a schedule ran, predicted (sim/replay.c) or
 * measured (exec/). It is parallel to the schedule: rank r's op i ran from
 * start_s[r][i] to end_s[r][i] (seconds from the start of the step, one
 * clock for all ranks). A rank that was not recorded (the simulator's fast
 * mode simulates one representative per TP group) has NULL arrays;
 * `proxy[r]` then names the rank whose times stand for it (or -1).
 *
 *   struct oc_timeline tl;
 *   oc_timeline_init(&tl, &sched, NULL);    // all ranks recorded
 *   oc_timeline_measured(&tl);              // + inner_s, peak_mem_bytes
 *   tl.start_s[r][i] = ...; tl.end_s[r][i] = ...;
 *   oc_timeline_free(&tl);
 *
 * What one op's interval means (core/step_metrics.h derives every figure
 * of a step from these, for the simulator and the executor alike):
 *   start_s  when the rank reached the op: a RECV was posted, a SEND or an
 *            async collective issued.
 *   end_s    when the op was over: for a blocking op, when the rank went
 *            on (a RECV: its data had arrived); for an async collective,
 *            when it completed; for a SEND, when the transfer finished (the
 *            receiver had it), later than the rank moved on
 *            (oc_timeline_send_arrivals sets it from the RECV's end).
 *   inner_s  (optional) the part of [start, end] the rank spent computing:
 *            the executor's TP collective op includes the part resuming
 *            after its all-reduce. NULL: none (the simulator charges all
 *            compute to COMPUTE ops).
 * Ops that take no time (ALLOC, FREE) have start == end. Both ends of a
 * pipeline message are on the timeline (its SEND on the sender, its RECV
 * on the receiver), so when it was sent, posted and arrived is read from
 * the pair (oc_timeline_partners), never stored twice.
 */
#ifndef OC_TIMELINE_H
#define OC_TIMELINE_H

#include <stdint.h>

#include "schedule.h"

struct oc_timeline {
    const struct oc_schedule *sched;
    int64_t nranks;
    double **start_s; /* (nranks) arrays of sched->ranks[r].n, or NULL */
    double **end_s;
    int64_t *proxy;   /* (nranks) rank standing in for r, r itself if recorded */
    double **inner_s; /* NULL, or (nranks) arrays like start_s */
    /* NULL, or (nranks) measured memory high-water marks in bytes; NULL:
     * the running sum of the schedule's ALLOC / FREE ops (step_metrics.h) */
    double *peak_mem_bytes;
    /* NULL, or oc_timeline_partners(sched) as oc_timeline_send_arrivals
     * computed it, kept for oc_step_metrics (freed with the timeline) */
    int64_t **partner;
};

/* Allocates times for the ranks with record[r] != 0 (all when record is
 * NULL); the others get proxy = -1 until the caller sets one. inner_s and
 * peak_mem_bytes stay NULL. */
void oc_timeline_init(struct oc_timeline *tl, const struct oc_schedule *s,
                      const unsigned char *record);
/* Adds what a measured run has on top of the times: inner_s for every
 * recorded rank and peak_mem_bytes, zeroed. */
void oc_timeline_measured(struct oc_timeline *tl);
void oc_timeline_free(struct oc_timeline *tl);

/* The other end of every pipeline message: partner[r][i], for op i of
 * rank r a SEND or a RECV, is the index of the matching op in the list of
 * rank ops[i].peer, -1 where that list has none (other ops: -1). A SEND
 * and a RECV match when the RECV's peer is the sender and the tags are
 * equal (schedule.c's tags are unique per sender). (s->nranks) arrays;
 * free with oc_timeline_partners_free. */
int64_t **oc_timeline_partners(const struct oc_schedule *s);
void oc_timeline_partners_free(int64_t **partner, int64_t nranks);

/* Sets the end of every recorded SEND whose RECV is recorded to the
 * message's arrival, the RECV's end (not before the SEND's start): for a
 * producer that timed only the send call. */
void oc_timeline_send_arrivals(struct oc_timeline *tl);

#endif
