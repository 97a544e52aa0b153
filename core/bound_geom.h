/* bound_geom.h: the shape of a layout's DP-like groups on the nodes, as
 * core/bound.c's collective terms read it: how many members of one group a
 * node holds, how many groups of one stage leave a node at once, and how
 * they share the node's NICs.
 *
 *   struct oc_bound_geom g;
 *   oc_bound_dp_geom(&layout, &topo, &g);    // the DP group
 *   oc_bound_grad_geom(&layout, &topo, &g);  // the gradient group (DP x CP)
 *   s = oc_bound_forced_coll_s(&layout, &topo, kind, bytes, g.n, g.per_node, g.share);
 *
 * `share` is for one stage's groups (their members' NICs); terms that sum
 * several stages' groups on a node use `groups` (all its NICs).
 */
#ifndef OC_BOUND_GEOM_H
#define OC_BOUND_GEOM_H

#include <stdint.h>

#include "layout.h"
#include "topology.h"

struct oc_bound_geom {
    int64_t n;        /* members */
    int64_t per_node; /* at most this many in one node */
    int64_t groups;   /* at least this many groups of a stage leave a node at once */
    double share;     /* the node's NICs shared as among this many groups:
                         groups, or more where they use only some NICs */
};

void oc_bound_dp_geom(const struct oc_layout *l, const struct oc_topology *t,
                      struct oc_bound_geom *g);
void oc_bound_grad_geom(const struct oc_layout *l, const struct oc_topology *t,
                        struct oc_bound_geom *g);
/* The most one flow between nodes gets: one NIC, and no more than the
 * node's NICs shared as among `share` groups (oc_bound_forced_coll_s's hop). */
double oc_bound_flow_Bps(const struct oc_topology *t, double share);

#endif
