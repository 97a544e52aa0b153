/* schedule_group.c: the ranks of each named group (schedule.h,
 * oc_schedule_group), split out of schedule.c. Megatron-LM's groups:
 * TP (same pp, dp, cp), the gradient group DP x CP (same tp, pp;
 * Megatron-LM's data-parallel group with CP), the embedding group (the
 * first and last stage), the CP ring (same tp, pp, dp).
 */
#include "schedule.h"

#include "placement.h"

int64_t oc_schedule_group(const struct oc_layout *l, int64_t rank,
                          enum oc_group g, int64_t *members, int64_t cap)
{
    struct oc_coord c = oc_layout_coord(l, rank);
    int64_t n = 0;
    switch (g) {
    case OC_GROUP_TP:
        for (int64_t i = 0; i < l->tp; i++, n++) {
            struct oc_coord q = {i, c.pp, c.dp, c.cp};
            if (n < cap)
                members[n] = oc_layout_rank(l, q);
        }
        break;
    case OC_GROUP_DP: {
        /* Megatron-LM reduces gradients (and shards the distributed
         * optimizer) over the data-parallel group with CP: every (dp, cp),
         * in rank order. */
        const int64_t cp = l->cp > 1 ? l->cp : 1;
        for (int64_t i = 0; i < l->dp; i++)
            for (int64_t j = 0; j < cp; j++, n++) {
                struct oc_coord q = {c.tp, c.pp, i, j};
                if (n < cap)
                    members[n] = oc_layout_rank(l, q);
            }
        break;
    }
    case OC_GROUP_CP:
        for (int64_t j = 0; j < (l->cp > 1 ? l->cp : 1); j++, n++) {
            struct oc_coord q = {c.tp, c.pp, c.dp, j};
            if (n < cap)
                members[n] = oc_layout_rank(l, q);
        }
        break;
    case OC_GROUP_EMBED: {
        /* Megatron-LM's embedding group: embedding and head stage. */
        int64_t stages[2];
        int64_t k = oc_place_embed_group_stages(l, stages);
        for (int64_t i = 0; i < k; i++, n++) {
            struct oc_coord q = {c.tp, stages[i], c.dp, c.cp};
            if (n < cap)
                members[n] = oc_layout_rank(l, q);
        }
        break;
    }
    case OC_GROUP_NONE:
    default:
        if (cap > 0)
            members[0] = rank;
        n = 1;
        break;
    }
    return n;
}
