/* coll_hier.c: the two-level ring (coll.h's descriptor oc_coll_hier), the
 * 2D all-reduce of Mikami et al. 2018 with the node as the first
 * dimension, as NCCL's and Horovod's hierarchical all-reduce (and Jia et
 * al. 2018). N members on M nodes, L on each:
 *   all-reduce      ring reduce-scatter of S inside each node (L members),
 *                   ring all-reduce of the S/L shard among the M members
 *                   with the same local index (L rings at once, on NICs of
 *                   their own when the node has L), ring all-gather of S
 *                   inside each node;
 *   reduce-scatter  its first half: ring reduce-scatter of S inside each
 *                   node, then ring reduce-scatter of the S/L shard across
 *                   nodes: every member ends with S/N reduced over all N;
 *   all-gather      its second half in reverse: ring all-gather of the S/L
 *                   shard across nodes, then of S inside each node.
 * Reduce-scatter then all-gather is the all-reduce, step for step (as for
 * the flat ring). A member ends the reduce-scatter holding another S/N
 * piece than in the flat ring (a permutation of the shards, which a real
 * implementation renumbers); only sizes are simulated. Applies to
 * all-reduce, all-gather and reduce-scatter on groups with the same number
 * of members on two or more nodes (on one node the flat ring is what
 * runs, as where it does not apply). The rings'
 * reduce-scatter steps reduce what they receive (coll_ring.c). Closed
 * forms: oc_cf_hier_* (core/closed_form.h). */
#define _POSIX_C_SOURCE 200809L

#include "coll.h"

#include <inttypes.h>

#include "sim_log.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_coll_hier, ocsim_coll,
                                "ocsim: hierarchical (two-level ring) collectives");

static int hier_applies(const struct oc_sim_group *g, enum oc_coll_kind kind)
{
    /* one node: the flat ring is the whole of it (one level) */
    return kind != OC_COLL_BROADCAST && g->per_node >= 1 && g->nodes > 1;
}

static double hier_estimate_s(const struct oc_sim_group *g, enum oc_coll_kind kind,
                              double bytes, const struct oc_sim_coll_opts *o)
{
    OC_ASSERT(hier_applies(g, kind));
    if (g->size < 2)
        return 0;
    const struct oc_cf_levels v = oc_coll_levels(g, g->per_node, &g->intra, &g->inter, o);
    switch (kind) {
    case OC_COLL_ALLREDUCE: return oc_cf_hier_allreduce_s(&v, bytes);
    case OC_COLL_REDUCESCATTER: return oc_cf_hier_reducescatter_s(&v, bytes);
    case OC_COLL_ALLGATHER:
    default:
        return oc_cf_hier_allgather_s(&v, bytes);
    }
}

static void hier_run(const struct oc_coll_tx *tx, int64_t me, const struct oc_coll_call *c)
{
    const struct oc_sim_group *g = tx->g;
    OC_ASSERT(hier_applies(g, c->kind));
    XBT_DEBUG("%s of %" PRId64 " bytes on %s, member %" PRId64, oc_coll_name(c->kind),
              c->bytes, g->name, me);
    const int64_t L = g->per_node, j = g->local[me], S = c->bytes;
    const struct oc_coll_ring in = oc_coll_ring_intra(tx, me);
    const struct oc_coll_ring across = oc_coll_ring_inter(tx, me);
    /* After the reduce-scatter inside the node member j holds shard
     * (j+1) mod L, and so does every member with local index j: the ring
     * across nodes works on it. */
    const int64_t shard = oc_coll_chunk_bytes(S, L, (j + 1) % L);
    switch (c->kind) {
    case OC_COLL_ALLREDUCE:
        oc_coll_ring_run(&in, S, 1, 0);
        oc_coll_ring_run(&across, shard, 1, 1);
        oc_coll_ring_run(&in, S, 0, 1);
        break;
    case OC_COLL_REDUCESCATTER:
        oc_coll_ring_run(&in, S, 1, 0);
        oc_coll_ring_run(&across, shard, 1, 0);
        break;
    case OC_COLL_ALLGATHER:
    default:
        oc_coll_ring_run(&across, shard, 0, 1);
        oc_coll_ring_run(&in, S, 0, 1);
        break;
    }
}

const struct oc_coll_algo oc_coll_hier = {
    .id = OC_SIM_ALGO_HIER,
    .name = "hier",
    .applies = hier_applies,
    .estimate_s = hier_estimate_s,
    .run = hier_run,
};
