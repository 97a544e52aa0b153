/* bound_groups.c: the busiest rank's own compute on node groups of unlike
 * devices, with its pipeline's fill and drain (see bound_groups.h). */
#include "bound_groups.h"

#include "cost.h"
#include "mbsplit.h"
#include "memory.h"
#include "placement.h"

/* Margin for the order in which the replay adds the same seconds. */
#define OC_BOUND_GROUPS_SAFETY 0.999

/* One layer's forward, backward and recompute seconds; the embedding's
 * and head's forward + backward; on one group's device. */
struct gw {
    double fwd, bwd, rec, emb, head;
};

static void group_weights(const struct oc_model *m, const struct oc_layout *l,
                          const struct oc_topology *t, int g, struct gw *w)
{
    struct oc_topology view;
    struct oc_cost c;
    oc_topology_group_view(t, g, &view);
    oc_cost_init(&c, m, l, &view);
    w->fwd = c.part_s[OC_PART_ATTN][OC_PHASE_FWD] + c.part_s[OC_PART_MLP][OC_PHASE_FWD];
    w->bwd = c.part_s[OC_PART_ATTN][OC_PHASE_BWD] + c.part_s[OC_PART_MLP][OC_PHASE_BWD];
    w->rec = c.part_s[OC_PART_ATTN][OC_PHASE_RECOMPUTE] +
             c.part_s[OC_PART_MLP][OC_PHASE_RECOMPUTE];
    w->emb = c.part_s[OC_PART_EMBED][OC_PHASE_FWD] + c.part_s[OC_PART_EMBED][OC_PHASE_BWD];
    w->head = c.part_s[OC_PART_HEAD][OC_PHASE_FWD] + c.part_s[OC_PART_HEAD][OC_PHASE_BWD];
}

/* Layers of stage i recomputed per micro-batch: every layer's recompute
 * entry (0 where nothing is recomputed), under rfull<k> the first k of
 * each chunk (cost.c's chunk op, memory.h). */
static double recomputed(const struct oc_model *m, const struct oc_layout *l, int64_t i)
{
    if (l->recompute != OC_RECOMPUTE_FULL)
        return (double)oc_place_stage_layers(l, m, i);
    double n = 0;
    for (int64_t c = 0; c < oc_place_chunks_per_stage(l); c++)
        n += (double)oc_mem_recomputed_layers(l, oc_place_chunk_layers(l, m, i, c).count);
    return n;
}

/* Rank r's forward and backward of every micro-batch on its own device,
 * after the chunk-0 forwards of micro-batch 0 on the stages before it (its
 * first unit needs their activation) and before their chunk-0 backwards
 * of its last micro-batch (which need its gradient). */
/* One micro-batch of stage i on the device of weights x. */
static double stage_mb_s(const struct oc_model *m, const struct oc_layout *l,
                         const struct gw *x, int64_t i)
{
    double own = (double)oc_place_stage_layers(l, m, i) * (x->fwd + x->bwd) +
                 recomputed(m, l, i) * x->rec;
    if (oc_place_stage_has_embed(l, i))
        own += x->emb;
    if (oc_place_stage_has_head(l, i))
        own += x->head;
    return own;
}

static double rank_path_s(const struct oc_model *m, const struct oc_layout *l,
                          const struct oc_topology *t, const struct gw *w, int64_t r)
{
    const struct oc_coord c = oc_layout_coord(l, r);
    const int64_t i = c.pp;
    const double own = stage_mb_s(m, l, &w[oc_topology_group_of_rank(t, r)], i);
    /* its own replica's micro-batches (mbsplit.h; G/(d*b) when even) */
    double path = (double)oc_mbs_replica(l, c.dp) * own;
    for (int64_t j = 0; j < i; j++) {
        struct oc_coord cj = c;
        cj.pp = j;
        const struct gw *y = &w[oc_topology_group_of_rank(t, oc_layout_rank(l, cj))];
        path += (double)oc_place_chunk_layers(l, m, j, 0).count * (y->fwd + y->bwd);
    }
    return path;
}

double oc_bound_groups_s(const struct oc_model *m, const struct oc_layout *l,
                         const struct oc_topology *t)
{
    if (t->n_groups < 2)
        return 0;
    struct gw w[OC_MAX_NODE_GROUPS];
    for (int g = 0; g < t->n_groups; g++)
        group_weights(m, l, t, g, &w[g]);
    const int64_t world = oc_layout_world(l);
    double most = 0;
    for (int64_t r = 0; r < world; r++) {
        const double p = rank_path_s(m, l, t, w, r);
        most = p > most ? p : most;
    }
    return most * OC_BOUND_GROUPS_SAFETY;
}

void oc_bound_groups_stage_mb_s(const struct oc_model *m, const struct oc_layout *l,
                                const struct oc_topology *t, double *out)
{
    const int ng = t->n_groups > 0 ? t->n_groups : 1;
    for (int g = 0; g < ng; g++) {
        struct gw w;
        group_weights(m, l, t, g, &w);
        for (int64_t i = 0; i < l->pp; i++)
            out[g * l->pp + i] = stage_mb_s(m, l, &w, i);
    }
}
