/* search.h: the knob space `ocsim sweep` searches: every layout of N cards
 * with every knob a Megatron-LM user sets, except those fixed on the
 * command line, one candidate per distinct run.
 *
 *   struct oc_search_space s;
 *   oc_search_space_default(&s, 64, &base);   // every knob searched
 *   s.fixed |= OC_LAYOUT_NAMED_SP;            // keep base.sequence_parallel
 *   struct oc_search_counts n;
 *   int64_t k = oc_search_run(&s, &model, &topo, visit, ctx, &n);
 *   ... visit(ctx, &set) for every knob set (struct oc_search_set) ...
 *   (oc_search_enumerate: every candidate materialised and validated,
 *   for tests)
 *
 * The dimensions, outermost first (the candidates' order, deterministic):
 *   tp x cp x pp x dp = cards (every factorisation);
 *   micro-batch size (the list given, --micro-batches);
 *   schedule: 1f1b, and interleaved 1F1B with every depth v >= 2 that
 *     divides the layers per stage (Megatron-LM
 *     --num-layers-per-virtual-pipeline-stage), or the --schedule list;
 *     GPipe only when listed (its bubble is 1F1B's and its activations m
 *     micro-batches instead of p: never better in this model);
 *   recompute: none, selective, full, and full of the first k layers of
 *     each chunk (Megatron-LM --recompute-method block
 *     --recompute-num-layers k) for k of a quarter, a half and three
 *     quarters of the chunk's layers;
 *   sequence parallelism on, off; ZeRO stage 0..3; gradient-reduce
 *     overlap on, off; rank order tp-dp-pp, tp-pp-dp; collective algorithm
 *     auto, ring, hier, tree;
 *   the DP exchange (compress.h) only when listed (--compression), inside
 *     the ZeRO stage;
 *   the stage splits of oc_stage_split_options_on (the even one alone under
 *   even_stages).
 * A knob whose OC_LAYOUT_NAMED_* bit is in `fixed` keeps base's value.
 *
 * Canonical: a knob value that cannot change the run of a layout is not a
 * candidate of its own but counted as a no-op variant (the layout keeps
 * base's value of that knob, or oc_layout_default's when base's is not
 * among those searched):
 *   SP without TP (t = 1); ZeRO stage and overlap without DP (d = 1);
 *   rank order with p = 1 or d = 1, or inside one node (every GPU of the
 *   generated node has the same links), or where every TP x CP block
 *   fills whole nodes (t*c a multiple of the GPUs per node) on the
 *   generated platform: each node then holds ranks of one (stage,
 *   replica) only, both orders give every group the same node count and
 *   members per node, and the generated nodes are alike (each the same
 *   NICs and uplink share into one fabric router, sim/platform.c), so the
 *   two runs are one up to renaming the nodes (llama2-70b
 *   tp1-pp16-dp8-cp8 on 1024: equal to the last digit); interleaving with p = 1; the
 *   collective algorithm of a layout with no collective group of two or
 *   more ranks (only auto), ring and hier where every collective group lies
 *   inside one node (auto runs the ring there, and the two-level ring has
 *   one level, the ring: sim/coll.c, sim/coll_hier.c).
 * Dominated variants (more recompute where less fits) are candidates
 * here: which fit is known only to the sweep's plan (tools/sweep_plan.h),
 * which skips them.
 * A (tp, cp, pp, dp, micro-batch, schedule) that oc_layout_validate refuses
 * with every other knob at its most permissive value is one illegal
 * candidate, not one per knob combination.
 */
#ifndef OC_SEARCH_H
#define OC_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "compress.h"
#include "layout.h"
#include "model.h"
#include "topology.h"

#define OC_SEARCH_MAX_MB 16
#define OC_SEARCH_MAX_SCHED 16
#define OC_SEARCH_MAX_SPLIT 16 /* stage splits of one knob set */

struct oc_search_space {
    int64_t cards;
    struct oc_layout base;  /* batch, sequence, precision, attention and
                               the values of the fixed knobs */
    unsigned fixed;         /* OC_LAYOUT_NAMED_* bits kept at base's value */
    int64_t micro_batches[OC_SEARCH_MAX_MB];
    int n_micro_batches;
    /* the schedules when OC_LAYOUT_NAMED_SCHEDULE is fixed (v for each) */
    enum oc_schedule_kind schedules[OC_SEARCH_MAX_SCHED];
    int64_t vchunks[OC_SEARCH_MAX_SCHED];
    int n_schedules;
    int64_t max_cp;         /* the largest context-parallel size searched */
    double batch_tolerance; /* > 0: each layout's nearest global batch
                               within it (core/batch.h); 0: base's */
    int even_stages;        /* only the even split (--even-stages) */
    /* --compression LIST (compress.h): the DP exchange's values searched
     * where the gradient group has two ranks or more; 0: base's alone
     * (the default sweep) */
    struct oc_gc_setting compress[OC_GC_MAX_LIST];
    int n_compress;
    int platform_file;      /* the run takes a user's SimGrid platform
                               (--platform): its nodes may differ, so rank
                               order is searched wherever it moves a
                               block between nodes */
};

struct oc_search_counts {
    int64_t candidates;  /* every candidate of the space */
    int64_t illegal;     /* of them, refused by oc_layout_validate (filled
                            by oc_search_enumerate; oc_search_run leaves
                            validation to its visitor: 0) */
    int64_t noop;        /* knob variants skipped as no-ops */
    /* the range of tp, cp, pp, dp and vchunks over the candidates (for
     * oc_search_describe; lo > hi when there is none) */
    int64_t lo[5], hi[5];
};

/* Every knob searched, micro-batches 1, 2, 4, cp up to 16. */
void oc_search_space_default(struct oc_search_space *s, int64_t cards,
                             const struct oc_layout *base);

/* One knob set of a structural layout (tp, cp, pp, dp, micro-batch,
 * schedule) with its rank-order and collective variants and its stage
 * splits: norder * ncoll * nsplit candidates, numbered
 *   index + (iorder * ncoll + icoll) * nsplit + isplit
 * (the enumeration order above: the splits innermost). Order and
 * collective algorithm change neither validity nor memory (layout.c,
 * memory.c, reserve.c read neither), so a visitor judges a knob set's
 * split once for all its variants. `refused` (not NULL): the structural
 * layout itself is illegal (the reason, oc_layout_validate's): one
 * candidate, `layout`, with one variant and one split. */
struct oc_search_set {
    struct oc_layout layout;   /* order[0], coll[0], split 0 */
    int64_t index;             /* its first candidate's */
    int64_t unit;              /* its unit's (oc_search_run_part) */
    int norder, ncoll, nsplit;
    enum oc_rank_order order[2];
    enum oc_coll_choice coll[4];
    int64_t first[OC_SEARCH_MAX_SPLIT], last[OC_SEARCH_MAX_SPLIT];
    const char *refused;
};

/* Candidate (iorder, icoll, isplit) of set g. */
void oc_search_set_layout(const struct oc_search_set *g, int iorder, int icoll, int isplit,
                          struct oc_layout *out);

/* Calls fn on every knob set of s in the enumeration order (the same
 * candidates and indices as oc_search_enumerate, none materialised, none
 * validated); *counts (may be NULL) gets the counts (illegal 0). Returns
 * the number of candidates. */
int64_t oc_search_run(const struct oc_search_space *s, const struct oc_model *m,
                      const struct oc_topology *t,
                      void (*fn)(void *ctx, const struct oc_search_set *g), void *ctx,
                      struct oc_search_counts *counts);

/* One part of oc_search_run's walk, for planning on several cores: the
 * walk's units, one per (tp, cp, pp, dp, micro-batch, schedule) and
 * numbered from 0 in the enumeration order (a set's .unit), are dealt
 * round-robin, and this call visits the units u with u % nparts == part,
 * each set as oc_search_run hands it, but .index and the return value
 * count only the visited candidates. *counts (may be NULL) covers the
 * visited units: the candidates and no-op variants of all parts sum to
 * oc_search_run's, their ranges' lo (hi) have its lo (hi) as minimum
 * (maximum). A unit's sets are visited one after the other; with the
 * candidates of each unit (the sum of its sets' norder * ncoll * nsplit)
 * the global index of a candidate is the candidates of the units before
 * its own plus its offset in the unit. oc_search_run is part 0 of 1. */
int64_t oc_search_run_part(const struct oc_search_space *s, const struct oc_model *m,
                           const struct oc_topology *t,
                           void (*fn)(void *ctx, const struct oc_search_set *g), void *ctx,
                           struct oc_search_counts *counts, int part, int nparts);

/* Fills *out (malloc'd, caller frees) with every candidate of s in the
 * order above, each validated (.valid, .reason); *counts (may be NULL)
 * gets the counts. Returns the number of candidates. For tests and small
 * spaces: the sweep (tools/sweep_plan.h) walks oc_search_run instead. */
int64_t oc_search_enumerate(const struct oc_search_space *s, const struct oc_model *m,
                            const struct oc_topology *t, struct oc_candidate **out,
                            struct oc_search_counts *counts);

/* The knob ranges searched, one line ("tp 1-8, pp 1-16, ...; recompute
 * none|sel|full|rfull<k>; sp on|off; ..." with "fixed" for the fixed
 * ones), for the summary and report.md; n is the search's counts (their
 * ranges). */
void oc_search_describe(const struct oc_search_space *s, const struct oc_search_counts *n,
                        char *buf, size_t len);

#endif
