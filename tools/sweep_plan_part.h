/* sweep_plan_part.h: the sweep's plan (sweep_plan.h) in parts, one per
 * core: internal to tools/sweep_plan*.c.
 *
 *   struct oc_plan_part parts[2];
 *   oc_plan_parts_forked(parts, 2, &o, &sp);  // part 0 here, 1 in a child
 *   oc_plan_merge(&plan, parts, 2, &o, &sp);  // as oc_plan_part_build(.., 0, 1)
 *
 * A part walks the units of the knob space that oc_search_run_part deals
 * it (one unit per tp, cp, pp, dp, micro-batch and schedule) and does
 * there all the plan does (legal, fits, the closest misses, dominated
 * variants, bounds): each of these is decided within one unit, by the
 * candidate alone or by the variants of its own structural layout (the
 * dominated ones: sweep_plan.h), so a part's items, counts and misses are
 * the serial plan's restricted to its units, up to the numbering of the
 * candidates, which the merge maps to the serial one by the units'
 * candidate counts. The caches the plan and its closed forms keep
 * (sweep_plan.c's plan_cache, core/memory.c's and core/bound_walk.c's)
 * return what the computation would, so what a part holds does not
 * depend on which units it had before. tests/sweep_plan_jobs.sh holds
 * the outputs of 1, 2 and 3 parts equal.
 */
#ifndef OC_SWEEP_PLAN_PART_H
#define OC_SWEEP_PLAN_PART_H

#include <stdint.h>

#include "sweep_plan.h"

struct oc_plan_part {
    /* items (cand: the part's own numbering, oc_search_run_part's .index),
     * n, ncand (the part's candidates), counts (.illegal filled), noom,
     * ndominated; examples: the part's first illegal candidates (at most
     * three), ex_cand their numbers */
    struct oc_plan pl;
    int64_t ex_cand[3];
    /* the visited units, ascending, and the number of each one's first
     * candidate */
    int64_t *unit_id, *unit_first;
    int64_t nunits, unit_cap;
    /* the part's closest misses of memory, ascending by (peak, label) */
    struct oc_rejected_layout miss[OC_PLAN_MISSES]; /* layout, peak_mem_bytes */
    char miss_label[OC_PLAN_MISSES][192];
    int64_t miss_stage[OC_PLAN_MISSES], miss_cand[OC_PLAN_MISSES];
    double miss_reserve[OC_PLAN_MISSES];
    int nmiss;
};

/* Part `part` of `nparts` (rej: NULL, or the hook: one part only). */
void oc_plan_part_build(struct oc_plan_part *pt, const struct oc_opts *o,
                        const struct oc_search_space *s, const struct oc_plan_rejected *rej,
                        int part, int nparts);
void oc_plan_part_free(struct oc_plan_part *pt);

/* The parts the plan runs on: --jobs, at most the cores this process may
 * run on (sched_getaffinity: an MPI rank's binding), and 64;
 * OCSIM_PLAN_JOBS=N (the tests' switch) overrides. */
int oc_plan_jobs(const struct oc_opts *o);
/* parts[0..n) built: part 0 in this process, the others in forked
 * children at the same time (one that fails is built here after). */
void oc_plan_parts_forked(struct oc_plan_part *parts, int n, const struct oc_opts *o,
                          const struct oc_search_space *s);
/* The plan of the parts, equal to the serial plan's (one part: the same
 * plan); the parts stay theirs to free. */
void oc_plan_merge(struct oc_plan *p, struct oc_plan_part *parts, int n,
                   const struct oc_opts *o, const struct oc_search_space *s);

/* "out of memory: stage S needs ... + ... reserve, the <device> has ..." */
void oc_plan_oom_reason(char *buf, size_t n, const struct oc_opts *o, int64_t stage,
                        double peak, double reserve);

#endif
