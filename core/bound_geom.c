/* bound_geom.c: the shape of a layout's DP-like groups on the nodes, for
 * the bound's collective terms (see bound_geom.h). */
#include "bound_geom.h"

static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

/* How many of a node's NICs the groups of one stage that leave it at once
 * (`groups`, in lockstep) use, as a share: the node's k NICs carry their
 * traffic between nodes as if split among groups * k / used groups.
 * sim/platform.c routes GPU i's traffic between nodes through NIC i % k of
 * its node, and every algorithm the simulator runs (ring, tree, two-level,
 * multi-rail) sends between the group's members only, so on a node the
 * groups' traffic leaves and enters through their members' NICs: at local
 * offsets o + j + pos[a] (j < groups: the lockstep TP (x CP) members,
 * consecutive ranks; pos: one group's members on the node), whose count
 * of distinct NICs mod k does not depend on o. Their bytes over those
 * NICs bound the time (each group's share, the groups being alike): valid
 * for one stage's groups, not for several stages' together (other GPUs,
 * other NICs: those terms keep the plain `groups`). */
static double nic_share(const struct oc_topology *t, const int64_t *pos, int64_t npos,
                        int64_t groups)
{
    const int64_t k = t->nics_per_node;
    if (k <= 1 || npos < 1)
        return (double)groups;
    unsigned char seen[64] = {0};
    if (k > (int64_t)sizeof seen)
        return (double)groups;
    int64_t used = 0;
    for (int64_t a = 0; a < npos && used < k; a++)
        for (int64_t j = 0; j < groups && used < k; j++) {
            const int64_t x = (j + pos[a]) % k;
            used += !seen[x];
            seen[x] = 1;
        }
    return (double)groups * (double)k / (double)used;
}

/* The geometry of the DP groups of a layout: members of one group per node
 * (at most), and how many groups of one stage leave a node at once (at
 * least). Rank numbering (layout.h): TP fastest, then CP, then DP and PP
 * or PP and DP; the members of a DP group are `stride` ranks apart. */
void oc_bound_dp_geom(const struct oc_layout *l, const struct oc_topology *t,
                      struct oc_bound_geom *g)
{
    const int64_t gpn = t->gpus_per_node > 0 ? t->gpus_per_node : 1;
    const int64_t tc = l->tp * (l->cp > 0 ? l->cp : 1);
    const int64_t stride = l->order == OC_ORDER_TP_DP_PP ? tc : tc * l->pp;
    g->n = l->dp;
    g->per_node = imin(l->dp, (gpn + stride - 1) / stride);
    /* A TP (x CP) group aligned inside a node runs in lockstep: its tc
     * members reduce over tc distinct DP groups at the same moment. */
    g->groups = (gpn % tc == 0 || tc % gpn == 0) ? imin(tc, gpn) : 1;
    int64_t pos[64];
    const int64_t np = imin(g->per_node, 64);
    for (int64_t a = 0; a < np; a++)
        pos[a] = a * stride;
    g->share = np == g->per_node ? nic_share(t, pos, np, g->groups) : (double)g->groups;
}

/* The gradient group of a layout (Megatron-LM's data-parallel group with
 * CP: the DP x CP ranks of one (tp, pp), schedule.h): n members, at most
 * per_node in a node, at least `groups` such groups leaving a node at once.
 * Without CP oc_bound_dp_geom's; with it, members share their TP index, so a
 * node holds at most ceil(gpn / tp) of them (cp per TP x CP block where
 * nodes hold whole blocks), and the tp members of a TP
 * group inside a node (in lockstep) belong to tp distinct groups. */
void oc_bound_grad_geom(const struct oc_layout *l, const struct oc_topology *t,
                        struct oc_bound_geom *g)
{
    if (l->cp <= 1) {
        oc_bound_dp_geom(l, t, g);
        return;
    }
    const int64_t gpn = t->gpus_per_node > 0 ? t->gpus_per_node : 1;
    const int64_t U = l->tp * l->cp, DS = l->order == OC_ORDER_TP_DP_PP ? 1 : l->pp;
    g->n = l->dp * l->cp;
    g->groups = (gpn % l->tp == 0 || l->tp % gpn == 0) ? imin(l->tp, gpn) : 1;
    g->share = (double)g->groups;
    /* Nodes holding whole TP x CP blocks: a block holds cp members of the
     * group, and the group's blocks are DS blocks apart (DP stride). */
    if (gpn % U == 0) {
        const int64_t nb = imin(l->dp, (gpn / U + DS - 1) / DS);
        g->per_node = l->cp * nb;
        int64_t pos[64];
        if (g->per_node <= 64) {
            for (int64_t b = 0; b < nb; b++)
                for (int64_t c = 0; c < l->cp; c++)
                    pos[b * l->cp + c] = b * DS * U + c * l->tp;
            g->share = nic_share(t, pos, g->per_node, g->groups);
        }
    } else {
        g->per_node = imin(g->n, (gpn + l->tp - 1) / l->tp);
    }
}


double oc_bound_flow_Bps(const struct oc_topology *t, double share)
{
    const double flows = share > 1 ? share : 1;
    const double node = (double)t->nics_per_node * t->nic_bandwidth_Bps / flows;
    return node < t->nic_bandwidth_Bps ? node : t->nic_bandwidth_Bps;
}
