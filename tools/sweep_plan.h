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
 *   oc_plan_build(&pl, &o, &sp, NULL);     // pl.items, pl.n, pl.counts
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
 *
 * Footprint: the space is walked knob set by knob set (search.h,
 * oc_search_run), each split of a knob set judged once for all its
 * rank-order and collective variants; the rejected candidates (illegal,
 * out of memory) are counted, not kept (a few as examples for report.md,
 * all through the plan's `rejected` hook for --rejected-csv); the
 * dominated ones are counted and dropped; only the candidates to simulate
 * remain as items, with their bound.
 *
 * Cores: the walk's units (tp, cp, pp, dp, micro-batch, schedule) are
 * dealt to --jobs forked processes (at most the cores), each judging its
 * units as above, and merged into the plan one process makes, byte for
 * byte (sweep_plan_part.h; tests/sweep_plan_jobs.sh). With the rejected
 * hook the plan is built in one process (its calls in candidate order).
 */
#ifndef OC_SWEEP_PLAN_H
#define OC_SWEEP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"
#include "options.h"
#include "plots.h"
#include "search.h"

/* An item's state: waiting for its simulation, simulated (mt), failed in
 * simulation (reason), pruned by its bound (reason); IT_DOMINATED only
 * while the plan is built (those items are then dropped). */
enum item_state { IT_PENDING, IT_SIMULATED, IT_FAILED, IT_PRUNED, IT_DOMINATED };

/* A candidate that is legal and fits by the closed form. */
struct item {
    struct oc_layout layout;
    int64_t cand;        /* index in the enumeration (the journal's key) */
    enum item_state state;
    double cf_peak_bytes;/* closed-form peak */
    double bound_s;      /* lower bound of the step */
    char *reason;        /* NULL: none (an item that fits and ran) */
    struct oc_metrics *mt; /* simulated, pending or failed: allocated */
};

/* Where the rejected candidates go, one call each (illegal and out of
 * memory in enumeration order, then the dominated variants), when a
 * caller wants them all (--rejected-csv): peak_bytes < 0 when the layout
 * is illegal. */
struct oc_plan_rejected {
    void (*fn)(void *ctx, const struct oc_layout *l, double peak_bytes, const char *reason);
    void *ctx;
};

/* The closest misses of the memory test the plan keeps for report.md and
 * the memory plot (plots.h: the plot shows top_n of them). */
#define OC_PLAN_MISSES 30

struct oc_plan {
    struct item *items;       /* the candidates to simulate, by candidate index */
    int64_t n;
    int64_t ncand;            /* every candidate of the space */
    struct oc_search_counts counts; /* .illegal: refused by oc_layout_validate */
    int64_t noom;             /* legal, out of memory by the closed form */
    int64_t ndominated;       /* dominated variants, dropped (below) */
    uint64_t layouts_hash;    /* the items' layouts with their indices */
    char ranges[1024];        /* oc_search_describe */
    int parts;                /* the processes that built it (sweep_plan_part.h) */
    /* examples of the rejected, with their reasons: the first three
     * illegal candidates in enumeration order, then the OC_PLAN_MISSES
     * out of memory with the lowest closed-form peak (ties: by label) */
    struct oc_rejected_layout *examples;
    int64_t nexamples;
};

/* The knob space of the command line: --micro-batches, the fixed knobs
 * (o->fixed) at their flags' values, --schedule's list. */
void oc_sweep_space(const struct oc_opts *o, struct oc_search_space *s);
/* rej: NULL, or where every rejected candidate goes (then in one
 * process; else in as many as --jobs, sweep_plan_part.h). */
void oc_plan_build(struct oc_plan *p, const struct oc_opts *o, const struct oc_search_space *s,
                   const struct oc_plan_rejected *rej);
/* The item of candidate `cand`, NULL when it is not one (items are in
 * candidate order until the caller reorders them). */
struct item *oc_plan_item(const struct oc_plan *p, int64_t cand);
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
/* Marks `it` pruned; its reason ("pruned: bound X s > 10th best Y s",
 * the N-th best when it is asked: the final one) into buf. */
void oc_prune_mark(const struct oc_prune *pr, struct item *it);
void oc_prune_reason(const struct oc_prune *pr, const struct item *it, char *buf, size_t n);

#endif
