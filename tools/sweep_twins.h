/* sweep_twins.h: layouts that differ from a planned layout only in a
 * forced collective algorithm (coll=ring|hier|tree against coll=auto), run
 * once. Where every automatic choice of the auto variant's replay is what
 * the forced algorithm would have run, the two replays are the same
 * decision for decision (sim/coll.h, oc_metrics.coll_same) and the forced
 * variant takes the auto variant's result instead of a simulation of its
 * own; where one choice differs it is simulated as before. Exact: the
 * shared result is the one its own simulation would give, bit for bit
 * (tests/sweep_twins.sh holds a sweep against --no-share-twins).
 *
 *   struct oc_twins tw;
 *   oc_twins_init(&tw, items, order, k);  // order: sweep index -> item
 *   switch (oc_twins_ask(&tw, j)) { ... } // before handing out index j
 *   oc_twins_done(&tw, j, mt);            // a result of index j (mt NULL: failed)
 *   ... oc_twins_take(&tw, j, &src) for the waiting twins of j ...
 *   oc_twins_free(&tw);
 *
 * The auto variant is enumerated before its forced variants and their
 * bounds are equal or larger, so it is handed out first; a forced variant
 * asked while it is in flight waits (the sweep goes on with the next
 * index) and is settled when its result comes: shared, or simulated (the
 * sweep hands it out next, before any new index: sim/sweep.h's extra;
 * what is left when the sweep ends runs in a second pass).
 */
#ifndef OC_SWEEP_TWINS_H
#define OC_SWEEP_TWINS_H

#include <stdint.h>

#include "metrics.h"
#include "sweep_plan.h"

enum oc_twin_answer {
    OC_TWIN_RUN,   /* simulate it */
    OC_TWIN_SHARE, /* take the auto variant's result (oc_twins_source) */
    OC_TWIN_WAIT,  /* the auto variant is in flight: ask again when it is done */
};

struct oc_twins {
    int64_t n;           /* sweep indices */
    int64_t *sib;        /* index -> its auto variant's index, or -1 */
    unsigned char *st;   /* index -> 0 not asked, 1 in flight, 2 done, 3 failed,
                            4 waits on its auto variant */
    int64_t *first, *next; /* the forced variants of an auto one: a list */
    unsigned *same;      /* index -> its result's coll_same (done) */
    int64_t nwait;       /* indices in state 4 */
    enum oc_coll_choice *coll; /* index -> its layout's coll */
};

/* order[0..k): the item index of each sweep index. */
void oc_twins_init(struct oc_twins *tw, const struct item *items, const int64_t *order,
                   int64_t k);
/* Before sweep index j is handed out (marks it in flight on RUN). */
enum oc_twin_answer oc_twins_ask(struct oc_twins *tw, int64_t j);
/* The auto variant whose result index j shares (valid after SHARE). */
int64_t oc_twins_source(const struct oc_twins *tw, int64_t j);
/* Index j's result came (mt NULL: its simulation failed); and j's result
 * from a journal (done, coll_same unknown: nothing shared from it). */
void oc_twins_done(struct oc_twins *tw, int64_t j, const struct oc_metrics *mt);
/* The forced variants of sweep index j (an auto one), one by one: start
 * with w = -1; returns -1 after the last. Each that waits on j is to be
 * settled by the caller: oc_twins_ask again (SHARE or RUN). */
int64_t oc_twins_next(const struct oc_twins *tw, int64_t j, int64_t w);
/* Whether sweep index w was asked while its auto variant was in flight. */
int oc_twins_waiting(const struct oc_twins *tw, int64_t w);
/* How many indices wait on their auto variant now. */
int64_t oc_twins_nwaiting(const struct oc_twins *tw);
void oc_twins_free(struct oc_twins *tw);

#endif
