/* timeline.h: when each op of a schedule ran, predicted (sim/replay.c) or
 * measured (exec/). It is parallel to the schedule: rank r's op i ran from
 * start_s[r][i] to end_s[r][i] (seconds from the start of the step). A rank
 * that was not recorded (the simulator's fast mode simulates one
 * representative per TP group) has NULL arrays; `proxy[r]` then names the
 * rank whose times stand for it (or -1).
 *
 *   struct oc_timeline tl;
 *   oc_timeline_init(&tl, &sched);          // all ranks recorded
 *   tl.start_s[r][i] = ...; tl.end_s[r][i] = ...;
 *   oc_timeline_free(&tl);
 *
 * Ops that take no time (ALLOC, FREE, a SEND that only starts a transfer)
 * have start == end. For a SEND, end_s is when the transfer finished (the
 * receiver had it), which is later than the rank moved on.
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
};

/* Allocates times for the ranks with record[r] != 0 (all when record is
 * NULL); the others get proxy = -1 until the caller sets one. */
void oc_timeline_init(struct oc_timeline *tl, const struct oc_schedule *s,
                      const unsigned char *record);
void oc_timeline_free(struct oc_timeline *tl);

#endif
