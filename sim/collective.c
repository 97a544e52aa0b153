/* collective.c: communication groups, the collectives a group member
 * calls in full fidelity (each message a SimGrid communication, the
 * algorithm from the table of coll.h: coll_ring.c, coll_hier.c,
 * coll_tree.c) and tagged point-to-point messages. See collective.h for
 * the algorithms, their closed forms, the mailbox naming and the coarse
 * mode. */
#define _POSIX_C_SOURCE 200809L

#include "collective.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/comm.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include "coll.h"
#include "sim_log.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_coll, ocsim,
                                "ocsim: communication groups, collectives, point-to-point");

/* ---- names ------------------------------------------------------------- */

const char *oc_sim_algo_name(enum oc_sim_algo a)
{
    OC_ASSERT(a >= 0 && a < OC_SIM_ALGO_COUNT);
    return a == OC_SIM_ALGO_AUTO ? "auto" : oc_coll_find(a)->name;
}

int oc_sim_algo_from_name(const char *s, enum oc_sim_algo *a, struct oc_status *st)
{
    OC_ASSERT(s && a);
    int64_t n = 0;
    const struct oc_coll_algo *const *t = oc_coll_table(&n);
    char known[128] = "auto";
    if (strcmp(s, "auto") == 0) {
        *a = OC_SIM_ALGO_AUTO;
        return 0;
    }
    for (int64_t i = 0; i < n; i++) {
        if (strcmp(s, t[i]->name) == 0) {
            *a = t[i]->id;
            return 0;
        }
        size_t used = strlen(known);
        snprintf(known + used, sizeof known - used, ", %s", t[i]->name);
    }
    return oc_fail(st, "--collective: unknown algorithm '%s' (known: %s)", s, known);
}

/* ---- groups ------------------------------------------------------------ */

/* Route figures between GPUs a and b: on a generated platform the ones
 * measured at load for their class (platform.h: every pair inside a node
 * alike, every pair of nodes alike), which spares a route search from
 * every member's host; else SimGrid's. */
static void hops_add(struct oc_sim_hops *h, const struct oc_sim_platform *p, int64_t a,
                     int64_t b)
{
    double lat, bw;
    const int same = a / p->gpus_per_node == b / p->gpus_per_node;
    if (p->generated && (same ? p->has_intra : p->has_inter)) {
        lat = same ? p->intra_lat_s : p->inter_lat_s;
        bw = same ? p->intra_bw_Bps : p->inter_bw_Bps;
    } else {
        lat = sg_host_get_route_latency(p->hosts[a], p->hosts[b]);
        bw = sg_host_get_route_bandwidth(p->hosts[a], p->hosts[b]);
    }
    if (h->count == 0) {
        h->lat_s = lat;
        h->bw_Bps = bw;
        h->uniform = 1;
    } else {
        h->uniform = h->uniform && lat == h->lat_s && bw == h->bw_Bps;
        h->lat_s = fmax(h->lat_s, lat);
        h->bw_Bps = fmin(h->bw_Bps, bw);
    }
    h->count++;
}

int oc_sim_group_init(struct oc_sim_group *g, const char *name,
                      const int64_t *ranks, int64_t n,
                      const struct oc_sim_platform *p, struct oc_status *st)
{
    OC_ASSERT(g && name && p && p->hosts && p->gpus_per_node >= 1);
    memset(g, 0, sizeof *g);
    if (n < 1 || !ranks)
        return oc_fail(st, "group %s: needs at least one member", name);
    if (name[0] == '\0' || strlen(name) >= sizeof g->name)
        return oc_fail(st, "group %s: the name must hold 1 to %zu characters", name,
                       sizeof g->name - 1);
    char *seen = oc_xcalloc((size_t)p->cards, 1);
    for (int64_t i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= p->cards) {
            free(seen);
            return oc_fail(st, "group %s: rank %" PRId64 " is not one of the %" PRId64
                               " simulated GPUs", name, ranks[i], p->cards);
        }
        if (seen[ranks[i]]++) {
            free(seen);
            return oc_fail(st, "group %s: rank %" PRId64 " appears twice", name, ranks[i]);
        }
    }
    free(seen);

    snprintf(g->name, sizeof g->name, "%s", name);
    g->size = n;
    g->ranks = oc_xmalloc((size_t)n * sizeof *g->ranks);
    memcpy(g->ranks, ranks, (size_t)n * sizeof *ranks);
    g->hosts = oc_xmalloc((size_t)n * sizeof *g->hosts);
    g->node = oc_xmalloc((size_t)n * sizeof *g->node);
    g->local = oc_xmalloc((size_t)n * sizeof *g->local);

    /* Nodes numbered in order of first appearance. */
    const int64_t all_nodes = (p->cards + p->gpus_per_node - 1) / p->gpus_per_node;
    int64_t *ord = oc_xmalloc((size_t)all_nodes * sizeof *ord);
    for (int64_t k = 0; k < all_nodes; k++)
        ord[k] = -1;
    for (int64_t i = 0; i < n; i++) {
        const int64_t phys = ranks[i] / p->gpus_per_node;
        if (ord[phys] < 0)
            ord[phys] = g->nodes++;
        g->node[i] = ord[phys];
        g->hosts[i] = p->hosts[ranks[i]];
    }
    free(ord);

    /* node_first/node_members: members of each node in group order. */
    g->node_first = oc_xcalloc((size_t)g->nodes + 1, sizeof *g->node_first);
    g->node_members = oc_xmalloc((size_t)n * sizeof *g->node_members);
    for (int64_t i = 0; i < n; i++)
        g->node_first[g->node[i] + 1]++;
    for (int64_t k = 0; k < g->nodes; k++)
        g->node_first[k + 1] += g->node_first[k];
    int64_t *fill = oc_xcalloc((size_t)g->nodes, sizeof *fill);
    for (int64_t i = 0; i < n; i++) {
        const int64_t k = g->node[i];
        g->local[i] = fill[k]++;
        g->node_members[g->node_first[k] + g->local[i]] = i;
    }
    free(fill);
    g->per_node = oc_coll_node_count(g, 0);
    for (int64_t k = 1; k < g->nodes; k++)
        if (oc_coll_node_count(g, k) != g->per_node)
            g->per_node = 0;

    /* Route figures of each algorithm's hops. */
    const int64_t *R = g->ranks;
    for (int64_t i = 0; n > 1 && i < n; i++)
        hops_add(&g->ring, p, R[i], R[(i + 1) % n]);
    for (int64_t k = 0; k < g->nodes; k++) {
        const int64_t c = oc_coll_node_count(g, k);
        for (int64_t j = 0; c > 1 && j < c; j++)
            hops_add(&g->intra, p, R[oc_coll_node_member(g, k, j)],
                     R[oc_coll_node_member(g, k, (j + 1) % c)]);
    }
    if (g->per_node > 0 && g->nodes > 1)
        for (int64_t j = 0; j < g->per_node; j++)
            for (int64_t k = 0; k < g->nodes; k++)
                hops_add(&g->inter, p, R[oc_coll_node_member(g, k, j)],
                         R[oc_coll_node_member(g, (k + 1) % g->nodes, j)]);
    for (int64_t k = 1; k < g->nodes; k++) {
        const int64_t child = R[oc_coll_node_member(g, k, 0)];
        const int64_t parent = R[oc_coll_node_member(g, (k - 1) / 2, 0)];
        hops_add(&g->tree, p, child, parent);
        hops_add(&g->tree, p, parent, child);
    }
    return 0;
}

void oc_sim_group_free(struct oc_sim_group *g)
{
    if (!g)
        return;
    free(g->node_members);
    free(g->node_first);
    free(g->local);
    free(g->node);
    free(g->hosts);
    free(g->ranks);
    memset(g, 0, sizeof *g);
}

/* ---- estimates, choice and calls (through the table of coll.h) ------- */

double oc_sim_coll_estimate_s(const struct oc_sim_group *g, enum oc_coll_kind kind,
                              enum oc_sim_algo a, double bytes,
                              const struct oc_sim_coll_opts *o)
{
    OC_ASSERT(g && g->size >= 1 && bytes >= 0);
    const struct oc_coll_algo *d = oc_coll_find(a);
    return oc_coll_usable(d, g, kind, o) ? oc_coll_cost_s(g, d, kind, bytes, o, NULL, NULL)
                                         : -1;
}

enum oc_sim_algo oc_sim_coll_choose(const struct oc_sim_group *g, enum oc_coll_kind kind,
                                    enum oc_sim_algo a, double bytes,
                                    const struct oc_sim_coll_opts *o)
{
    return oc_coll_pick(g, kind, a, bytes, o)->id;
}

int oc_sim_collective(const struct oc_sim_group *g, int64_t me, enum oc_coll_kind kind,
                      double bytes, int64_t root, const struct oc_sim_coll_opts *o,
                      struct oc_status *st)
{
    OC_ASSERT(g && g->ranks && me >= 0 && me < g->size);
    /* Full fidelity: every message its own size. */
    struct oc_coll_tx tx;
    oc_coll_tx_init(&tx, g, NULL, o);
    return oc_coll_run(&tx, me, kind, bytes, root, st);
}

int oc_sim_allreduce(const struct oc_sim_group *g, int64_t me, double bytes,
                     const struct oc_sim_coll_opts *o, struct oc_status *st)
{
    return oc_sim_collective(g, me, OC_COLL_ALLREDUCE, bytes, 0, o, st);
}

int oc_sim_allgather(const struct oc_sim_group *g, int64_t me, double bytes,
                     const struct oc_sim_coll_opts *o, struct oc_status *st)
{
    return oc_sim_collective(g, me, OC_COLL_ALLGATHER, bytes, 0, o, st);
}

int oc_sim_reducescatter(const struct oc_sim_group *g, int64_t me,
                         double bytes, const struct oc_sim_coll_opts *o,
                         struct oc_status *st)
{
    return oc_sim_collective(g, me, OC_COLL_REDUCESCATTER, bytes, 0, o, st);
}

int oc_sim_broadcast(const struct oc_sim_group *g, int64_t me, int64_t root,
                     double bytes, const struct oc_sim_coll_opts *o,
                     struct oc_status *st)
{
    return oc_sim_collective(g, me, OC_COLL_BROADCAST, bytes, root, o, st);
}

/* ---- point-to-point ---------------------------------------------------- */

struct p2p_payload {
    int64_t bytes; /* the sender's size, checked by the receiver */
};

static sg_mailbox_t p2p_mailbox(const char *channel, int64_t src, int64_t dst,
                                int64_t tag)
{
    char name[256];
    int w = snprintf(name, sizeof name, "%s:%" PRId64 ">%" PRId64 "#%" PRId64, channel,
                     src, dst, tag);
    OC_ASSERT(w > 0 && (size_t)w < sizeof name);
    return sg_mailbox_by_name(name);
}

sg_comm_t oc_sim_send_async(const char *channel, int64_t src, int64_t dst,
                            int64_t tag, double bytes, struct oc_status *st)
{
    OC_ASSERT(channel);
    if (!(isfinite(bytes) && bytes >= 0 && bytes < 9e18)) {
        oc_fail(st, "send %s %" PRId64 "->%" PRId64 " tag %" PRId64 ": size must be a "
                    "number of bytes >= 0 (got %g)", channel, src, dst, tag, bytes);
        return NULL;
    }
    const int64_t S = llround(bytes);
    struct p2p_payload *pl = oc_xmalloc(sizeof *pl);
    pl->bytes = S;
    return sg_mailbox_put_async(p2p_mailbox(channel, src, dst, tag), pl, S);
}

int oc_sim_recv(const char *channel, int64_t src, int64_t dst, int64_t tag,
                double bytes, struct oc_status *st)
{
    OC_ASSERT(channel);
    struct p2p_payload *pl = sg_mailbox_get(p2p_mailbox(channel, src, dst, tag));
    OC_ASSERT(pl);
    const int64_t sent = pl->bytes;
    free(pl);
    if (bytes >= 0 && sent != llround(bytes))
        return oc_fail(st, "recv %s %" PRId64 "->%" PRId64 " tag %" PRId64
                           ": %" PRId64 " bytes sent, %.0f expected",
                       channel, src, dst, tag, sent, bytes);
    return 0;
}

void oc_sim_wait_all(sg_comm_t *comms, int64_t n)
{
    OC_ASSERT(n >= 0 && (comms || n == 0));
    for (int64_t i = 0; i < n; i++)
        if (comms[i])
            sg_comm_wait(comms[i]);
}
