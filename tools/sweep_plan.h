/* sweep_plan.h: what `ocsim sweep` simulates and in which order: the
 * candidates of the knob space (core/search.h) as items, rejected before
 * simulation (illegal, out of memory by the closed form) or to simulate
 * with their closed-form lower bound (core/bound.h), and the pruning rule:
 * simulate in increasing order of the bound (per token, so that rows of
 * different global batches compare as the ranking does) and stop once the
 * next candidate's bound exceeds the N-th best simulated layout that fits.
 *
 *   struct oc_search_space sp;
 *   oc_sweep_space(&o, &sp);
 *   struct oc_plan pl;
 *   oc_plan_build(&pl, &o, &sp);           // pl.items, pl.n, pl.counts
 *   int64_t *order = oc_plan_order(&pl);  // pending items by bound
 *   struct oc_prune pr;
 *   oc_prune_init(&pr, o.top);
 *   ... oc_prune_add(&pr, &mt) as results come, oc_prune_stops(&pr, it) ...
 *
 * Dominated variants: a candidate that fits by the closed form is not
 * simulated, in the pruned sweep and under --no-prune alike (IT_DOMINATED,
 * counted, no row), when a variant equal in every other knob (stage split
 * included) also fits and can only be faster in ocsim's model:
 *   - it recomputes (selective, full, rfull<k>) and the variant without
 *     recompute fits: the same ops and messages less the recompute ops
 *     (core/schedule.c emits recompute as extra compute, and under full
 *     recompute the forward's TP collectives again, on the same stream);
 *   - it is rfull<k> or full and an rfull<j> with j < k fits: of the same
 *     ops, k - j fewer layers recomputed per chunk.
 * Nothing else is called dominated (overlap, collective algorithm, rank
 * order, ZeRO stage, SP trade time between streams or links: the bound
 * decides those). tests/sweep_dominated.sh simulates every variant of small
 * layouts (--keep-dominated) and holds each dominated one no faster. The
 * dominating variant's own row stands; one that then fails in simulation
 * leaves its dominated variants unsimulated (none is known).
 *
 * Exactness: a candidate not simulated has a bound above the N-th best
 * found when it was reached; results only lower that N-th best, and the
 * bound never exceeds the simulated step (bound.h), so no pruned layout
 * could enter the top N (ties are kept: only a bound strictly above
 * prunes). tests/sweep_prune.sh holds the top-N rows against --no-prune.
 */
#ifndef OC_SWEEP_PLAN_H
#define OC_SWEEP_PLAN_H

#include <stdint.h>

#include "metrics.h"
#include "options.h"
#include "search.h"

/* A candidate's state: rejected before simulation (illegal, or out of
 * memory by the closed form), waiting for its simulation, simulated (mt),
 * failed in simulation (reason), or pruned by its bound (reason). */
enum item_state { IT_ILLEGAL, IT_OOM, IT_PENDING, IT_SIMULATED, IT_FAILED, IT_PRUNED,
                  IT_DOMINATED };

struct item {
    struct oc_layout layout;
    int64_t cand;        /* index in the enumeration (the journal's key) */
    enum item_state state;
    double cf_peak_bytes;/* closed-form peak, -1 when the layout is illegal */
    double bound_s;      /* lower bound of the step, -1 when not computed */
    char *reason;        /* NULL: none (an item that fits and ran) */
    struct oc_metrics *mt; /* simulated, pending or failed: allocated */
};

struct oc_plan {
    struct item *items;
    int64_t n;
    struct oc_search_counts counts;
    int64_t noom;
    int64_t ndominated;       /* IT_DOMINATED items (below) */
    uint64_t layouts_hash;    /* the candidates with their validity */
    char ranges[1024];        /* oc_search_describe */
};

/* The knob space of the command line: --micro-batches, the fixed knobs
 * (o->fixed) at their flags' values, --schedule's list. */
void oc_sweep_space(const struct oc_opts *o, struct oc_search_space *s);
void oc_plan_build(struct oc_plan *p, const struct oc_opts *o,
                   const struct oc_search_space *s);
void oc_plan_free(struct oc_plan *p);
/* An item's reason (formatted, replacing the one it had). */
void oc_item_reason(struct item *it, const char *fmt, ...);
const char *oc_item_reason_of(const struct item *it); /* "" when none */

/* The pending items (IT_PENDING) in increasing order of bound per token,
 * ties by candidate index; *n gets their count. malloc'd. */
int64_t *oc_plan_order(const struct oc_plan *p, int64_t *n);

/* The N best simulated layouts that fit, as seconds per token. */
struct oc_prune {
    int64_t top;
    double *best;      /* ascending, at most top */
    double *best_step; /* their step times */
    int64_t n;
};
void oc_prune_init(struct oc_prune *pr, int64_t top);
void oc_prune_free(struct oc_prune *pr);
void oc_prune_add(struct oc_prune *pr, const struct oc_metrics *mt);
/* 1 when `it` (pending, its bound set) cannot enter the top N: its bound
 * per token is above the N-th best's. */
int oc_prune_stops(const struct oc_prune *pr, const struct item *it);
/* Marks `it` pruned with its reason ("pruned: bound X s > 10th best Y s"). */
void oc_prune_mark(const struct oc_prune *pr, struct item *it);

#endif
