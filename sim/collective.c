/* collective.c: ring, hierarchical and tree all-reduce, ring all-gather and
 * reduce-scatter, chain broadcast and tagged point-to-point, each message a
 * SimGrid communication (see collective.h for the algorithms, their closed
 * forms, the mailbox naming and the coarse mode). */
#define _POSIX_C_SOURCE 200809L

#include "collective.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include "closed_form.h"

/* SimGrid refuses a NULL payload; collectives send the address of this. */
static char oc_sim_token;
/* An asynchronous receive needs somewhere to store the payload pointer;
 * collectives receive only the token, so every one may share this. */
static void *oc_sim_sink;

/* ---- names ------------------------------------------------------------- */

static const char *const algo_names[OC_SIM_ALGO_COUNT] = {
    [OC_SIM_ALGO_AUTO] = "auto",
    [OC_SIM_ALGO_RING] = "ring",
    [OC_SIM_ALGO_TREE] = "tree",
    [OC_SIM_ALGO_HIER] = "hier",
};

const char *oc_sim_algo_name(enum oc_sim_algo a)
{
    OC_ASSERT(a >= 0 && a < OC_SIM_ALGO_COUNT);
    return algo_names[a];
}

int oc_sim_algo_from_name(const char *s, enum oc_sim_algo *a, struct oc_status *st)
{
    OC_ASSERT(s && a);
    for (int i = 0; i < OC_SIM_ALGO_COUNT; i++)
        if (strcmp(s, algo_names[i]) == 0) {
            *a = (enum oc_sim_algo)i;
            return 0;
        }
    return oc_fail(st, "--collective %s: expected ring, tree, hier or auto", s);
}

/* ---- groups ------------------------------------------------------------ */

static void hops_add(struct oc_sim_hops *h, sg_host_t a, sg_host_t b)
{
    const double lat = sg_host_get_route_latency(a, b);
    const double bw = sg_host_get_route_bandwidth(a, b);
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

/* Member index of the j-th member of node k. */
static int64_t node_member(const struct oc_sim_group *g, int64_t k, int64_t j)
{
    OC_ASSERT(k >= 0 && k < g->nodes && j >= 0 &&
              j < g->node_first[k + 1] - g->node_first[k]);
    return g->node_members[g->node_first[k] + j];
}

static int64_t node_count(const struct oc_sim_group *g, int64_t k)
{
    return g->node_first[k + 1] - g->node_first[k];
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
    g->per_node = node_count(g, 0);
    for (int64_t k = 1; k < g->nodes; k++)
        if (node_count(g, k) != g->per_node)
            g->per_node = 0;

    /* Route figures of each algorithm's hops. */
    for (int64_t i = 0; n > 1 && i < n; i++)
        hops_add(&g->ring, g->hosts[i], g->hosts[(i + 1) % n]);
    for (int64_t k = 0; k < g->nodes; k++) {
        const int64_t c = node_count(g, k);
        for (int64_t j = 0; c > 1 && j < c; j++)
            hops_add(&g->intra, g->hosts[node_member(g, k, j)],
                     g->hosts[node_member(g, k, (j + 1) % c)]);
    }
    if (g->per_node > 0 && g->nodes > 1)
        for (int64_t j = 0; j < g->per_node; j++)
            for (int64_t k = 0; k < g->nodes; k++)
                hops_add(&g->inter, g->hosts[node_member(g, k, j)],
                         g->hosts[node_member(g, (k + 1) % g->nodes, j)]);
    for (int64_t k = 1; k < g->nodes; k++) {
        sg_host_t child = g->hosts[node_member(g, k, 0)];
        sg_host_t parent = g->hosts[node_member(g, (k - 1) / 2, 0)];
        hops_add(&g->tree, child, parent);
        hops_add(&g->tree, parent, child);
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

/* ---- sizes and options ------------------------------------------------- */

/* Bytes of chunk c when S bytes are cut in n chunks: floor(S(c+1)/n) -
 * floor(Sc/n), written so that S*c cannot overflow. */
static int64_t chunk_bytes(int64_t S, int64_t n, int64_t c)
{
    OC_ASSERT(n >= 1 && c >= 0 && c < n);
    const int64_t q = S / n, r = S % n;
    return q + (r * (c + 1)) / n - (r * c) / n;
}

static int to_bytes(double bytes, int64_t *out, const char *what, struct oc_status *st)
{
    if (!(isfinite(bytes) && bytes >= 0 && bytes < 9e18))
        return oc_fail(st, "%s: size must be a number of bytes >= 0 (got %g)", what, bytes);
    *out = llround(bytes);
    return 0;
}

static const struct oc_sim_coll_opts default_opts = {OC_SIM_ALGO_AUTO, 0, 0, 0};

static int64_t pipeline_chunks(int64_t S, const struct oc_sim_coll_opts *o)
{
    const double cb = o->chunk_bytes > 0 ? o->chunk_bytes : OC_SIM_CHUNK_BYTES;
    const int64_t cap = o->max_chunks > 0 ? o->max_chunks : OC_SIM_MAX_CHUNKS;
    double c = ceil((double)S / cb);
    if (c < 1)
        c = 1;
    return c > (double)cap ? cap : (int64_t)c;
}

/* ---- estimates and the automatic choice -------------------------------- */

static int64_t floor_log2(int64_t x)
{
    int64_t d = 0;
    while (x > 1) {
        x /= 2;
        d++;
    }
    return d;
}

double oc_sim_allreduce_estimate_s(const struct oc_sim_group *g,
                                   enum oc_sim_algo a, double bytes,
                                   const struct oc_sim_coll_opts *o)
{
    OC_ASSERT(g && g->size >= 1 && bytes >= 0);
    if (!o)
        o = &default_opts;
    const int64_t N = g->size, M = g->nodes, L = g->per_node;
    if (N == 1)
        return 0;
    switch (a) {
    case OC_SIM_ALGO_RING:
        /* Patarasuk and Yuan 2009, via core/closed_form.h. */
        return oc_cf_ring_allreduce_s(N, bytes, g->ring.bw_Bps, g->ring.lat_s);
    case OC_SIM_ALGO_HIER: {
        if (L < 1)
            return -1;
        /* Ring reduce-scatter and all-gather in the node, ring all-reduce
         * of the S/L shard across nodes (collective.h). */
        double t = 0;
        if (L > 1)
            t += 2 * oc_cf_ring_reducescatter_s(L, bytes, g->intra.bw_Bps, g->intra.lat_s);
        if (M > 1)
            t += oc_cf_ring_allreduce_s(M, bytes / (double)L, g->inter.bw_Bps, g->inter.lat_s);
        return t;
    }
    case OC_SIM_ALGO_TREE: {
        /* Pipelined reduce then broadcast over a tree of depth
         * (chain length - 1) + floor(log2 M): each phase takes
         * (depth + C - 1) pipeline steps; a step moves one chunk c over
         * the slower of a chain hop (l_i + c/B_i) and a tree hop whose
         * receiver takes two children at once (l_n + 2c/B_n). An estimate
         * for the choice, not a closed form of the simulated tree. */
        int64_t longest = 1;
        for (int64_t k = 0; k < M; k++)
            if (node_count(g, k) > longest)
                longest = node_count(g, k);
        const int64_t S = llround(bytes);
        const double C = (double)pipeline_chunks(S, o);
        const double c = bytes / C;
        double step = 0;
        if (longest > 1)
            step = g->intra.lat_s + c / g->intra.bw_Bps;
        if (M > 1) {
            const double fan_in = M > 2 ? 2 : 1;
            step = fmax(step, g->tree.lat_s + fan_in * c / g->tree.bw_Bps);
        }
        const double depth = (double)(longest - 1 + floor_log2(M));
        return 2 * (depth + C - 1) * step;
    }
    default:
        OC_ASSERT(!"no estimate for this algorithm");
        return -1;
    }
}

enum oc_sim_algo oc_sim_allreduce_choose(const struct oc_sim_group *g,
                                         double bytes,
                                         const struct oc_sim_coll_opts *o)
{
    OC_ASSERT(g);
    /* Inside one node only the ring; the hierarchical ring only when it
     * differs from the flat one (several nodes, several members each). */
    enum oc_sim_algo best = OC_SIM_ALGO_RING;
    if (g->nodes < 2)
        return best;
    double best_s = oc_sim_allreduce_estimate_s(g, OC_SIM_ALGO_RING, bytes, o);
    if (g->per_node > 1) {
        double t = oc_sim_allreduce_estimate_s(g, OC_SIM_ALGO_HIER, bytes, o);
        if (t >= 0 && t < best_s) {
            best = OC_SIM_ALGO_HIER;
            best_s = t;
        }
    }
    double t = oc_sim_allreduce_estimate_s(g, OC_SIM_ALGO_TREE, bytes, o);
    if (t >= 0 && t < best_s)
        best = OC_SIM_ALGO_TREE;
    return best;
}

/* ---- messages ---------------------------------------------------------- */

static sg_mailbox_t mailbox(const char *group, int64_t src, int64_t dst)
{
    char name[160];
    int w = snprintf(name, sizeof name, "%s:%" PRId64 ">%" PRId64, group, src, dst);
    OC_ASSERT(w > 0 && (size_t)w < sizeof name);
    return sg_mailbox_by_name(name);
}

/* Outstanding sends and receives of one member, waited for together. */
struct comms {
    sg_comm_t *c;
    int64_t n, cap;
};

static void comms_push(struct comms *cs, sg_comm_t c)
{
    if (cs->n == cs->cap) {
        cs->cap = cs->cap ? 2 * cs->cap : 16;
        cs->c = oc_xrealloc(cs->c, (size_t)cs->cap * sizeof *cs->c);
    }
    cs->c[cs->n++] = c;
}

static void comms_wait(struct comms *cs)
{
    if (cs->n > 0)
        sg_comm_wait_all(cs->c, (size_t)cs->n);
    cs->n = 0;
}

static void comms_free(struct comms *cs)
{
    free(cs->c);
    cs->c = NULL;
    cs->n = cs->cap = 0;
}

/* ---- rings ------------------------------------------------------------- */

/* One ring seen from one member. */
struct ring {
    int64_t n, pos;
    sg_mailbox_t to_next, from_prev;
    const struct oc_sim_hops *hops; /* for the coarse mode */
};

static struct ring ring_of(const struct oc_sim_group *g, int64_t pos, int64_t n,
                           int64_t self, int64_t next, int64_t prev,
                           const struct oc_sim_hops *hops)
{
    struct ring r = {n, pos, NULL, NULL, hops};
    if (n > 1) {
        r.to_next = mailbox(g->name, g->ranks[self], g->ranks[next]);
        r.from_prev = mailbox(g->name, g->ranks[prev], g->ranks[self]);
    }
    return r;
}

/* One step: send to the next member and receive from the previous one at
 * once; the step ends when both are done. */
static void ring_exchange(const struct ring *r, int64_t bytes)
{
    sg_comm_t c = sg_mailbox_put_async(r->to_next, &oc_sim_token, bytes);
    sg_mailbox_get(r->from_prev);
    sg_comm_wait(c);
}

/* Reduce-scatter steps (rs) then all-gather steps (ag) of S bytes on ring
 * r. Reduce-scatter step k sends chunk (pos-k) mod n, so after n-1 steps
 * member pos holds chunk (pos+1) mod n reduced; all-gather step k sends
 * chunk (pos+1-k) mod n. */
static void ring_run(const struct ring *r, int64_t S, int rs, int ag, int coarse)
{
    const int64_t n = r->n, p = r->pos;
    if (n < 2)
        return;
    const int do_phase[2] = {rs, ag};
    if (coarse && r->hops->uniform) {
        /* collective.h: one message of everything this member sends, then
         * the latencies of the steps it replaces. */
        int64_t total = 0, steps = 0;
        for (int ph = 0; ph < 2; ph++)
            for (int64_t k = 0; do_phase[ph] && k < n - 1; k++) {
                const int64_t c = ((ph == 0 ? p - k : p + 1 - k) % n + n) % n;
                total += chunk_bytes(S, n, c);
                steps++;
            }
        ring_exchange(r, total);
        if (steps > 1 && r->hops->lat_s > 0)
            sg_actor_sleep_for((double)(steps - 1) * r->hops->lat_s);
        return;
    }
    for (int ph = 0; ph < 2; ph++)
        for (int64_t k = 0; do_phase[ph] && k < n - 1; k++) {
            const int64_t c = ((ph == 0 ? p - k : p + 1 - k) % n + n) % n;
            ring_exchange(r, chunk_bytes(S, n, c));
        }
}

static struct ring flat_ring(const struct oc_sim_group *g, int64_t me)
{
    const int64_t n = g->size;
    return ring_of(g, me, n, me, (me + 1) % n, (me + n - 1) % n, &g->ring);
}

/* The ring inside me's node, in group order. */
static struct ring intra_ring(const struct oc_sim_group *g, int64_t me)
{
    const int64_t k = g->node[me], j = g->local[me], c = node_count(g, k);
    return ring_of(g, j, c, me, node_member(g, k, (j + 1) % c),
                   node_member(g, k, (j + c - 1) % c), &g->intra);
}

/* The ring across nodes of the members with me's local index. */
static struct ring inter_ring(const struct oc_sim_group *g, int64_t me)
{
    const int64_t k = g->node[me], j = g->local[me], M = g->nodes;
    return ring_of(g, k, M, me, node_member(g, (k + 1) % M, j),
                   node_member(g, (k + M - 1) % M, j), &g->inter);
}

/* ---- algorithms -------------------------------------------------------- */

static void allreduce_hier(const struct oc_sim_group *g, int64_t me, int64_t S,
                           int coarse)
{
    const int64_t L = g->per_node, j = g->local[me];
    const struct ring in = intra_ring(g, me);
    ring_run(&in, S, 1, 0, coarse);
    /* After the reduce-scatter member j holds shard (j+1) mod L, and so does
     * every member with local index j: their ring all-reduces it. */
    const struct ring across = inter_ring(g, me);
    ring_run(&across, chunk_bytes(S, L, (j + 1) % L), 1, 1, coarse);
    ring_run(&in, S, 0, 1, coarse);
}

static void allreduce_tree(const struct oc_sim_group *g, int64_t me, int64_t S,
                           const struct oc_sim_coll_opts *o)
{
    const int64_t k = g->node[me], j = g->local[me], c = node_count(g, k);
    /* Parent: the previous member of the node's chain, or for a leader the
     * leader of node (k-1)/2. Children: the next member of the chain, and
     * for a leader the leaders of nodes 2k+1 and 2k+2. */
    int64_t parent = -1, children[3], nchild = 0;
    if (j > 0)
        parent = node_member(g, k, j - 1);
    else if (k > 0)
        parent = node_member(g, (k - 1) / 2, 0);
    if (j + 1 < c)
        children[nchild++] = node_member(g, k, j + 1);
    for (int64_t ck = 2 * k + 1; j == 0 && ck <= 2 * k + 2 && ck < g->nodes; ck++)
        children[nchild++] = node_member(g, ck, 0);

    sg_mailbox_t up_in[3], down_out[3], up_out = NULL, down_in = NULL;
    for (int64_t i = 0; i < nchild; i++) {
        up_in[i] = mailbox(g->name, g->ranks[children[i]], g->ranks[me]);
        down_out[i] = mailbox(g->name, g->ranks[me], g->ranks[children[i]]);
    }
    if (parent >= 0) {
        up_out = mailbox(g->name, g->ranks[me], g->ranks[parent]);
        down_in = mailbox(g->name, g->ranks[parent], g->ranks[me]);
    }

    const int64_t C = pipeline_chunks(S, o);
    struct comms sends = {0}, recvs = {0};
    /* Reduce: per chunk, take it from every child at once, then pass the
     * sum up without waiting (the next chunk's receives go on). */
    for (int64_t ch = 0; ch < C; ch++) {
        for (int64_t i = 0; i < nchild; i++)
            comms_push(&recvs, sg_mailbox_get_async(up_in[i], &oc_sim_sink));
        comms_wait(&recvs);
        if (up_out)
            comms_push(&sends, sg_mailbox_put_async(up_out, &oc_sim_token,
                                                    chunk_bytes(S, C, ch)));
    }
    /* Broadcast: per chunk, receive it from the parent, pass it to every
     * child. */
    for (int64_t ch = 0; ch < C; ch++) {
        if (down_in)
            sg_mailbox_get(down_in);
        for (int64_t i = 0; i < nchild; i++)
            comms_push(&sends, sg_mailbox_put_async(down_out[i], &oc_sim_token,
                                                    chunk_bytes(S, C, ch)));
    }
    comms_wait(&sends);
    comms_free(&sends);
    comms_free(&recvs);
}

static int check_call(const struct oc_sim_group *g, int64_t me, double bytes,
                      int64_t *S, const char *what, struct oc_status *st)
{
    OC_ASSERT(g && g->ranks && me >= 0 && me < g->size);
    char where[160];
    snprintf(where, sizeof where, "%s on group %s", what, g->name);
    return to_bytes(bytes, S, where, st);
}

int oc_sim_allreduce(const struct oc_sim_group *g, int64_t me, double bytes,
                     const struct oc_sim_coll_opts *o, struct oc_status *st)
{
    int64_t S = 0;
    if (check_call(g, me, bytes, &S, "all-reduce", st) != 0)
        return -1;
    if (!o)
        o = &default_opts;
    enum oc_sim_algo a = o->algo;
    if (a == OC_SIM_ALGO_AUTO)
        a = oc_sim_allreduce_choose(g, (double)S, o);
    if (g->size < 2)
        return 0;
    switch (a) {
    case OC_SIM_ALGO_RING: {
        const struct ring r = flat_ring(g, me);
        ring_run(&r, S, 1, 1, o->coarse);
        return 0;
    }
    case OC_SIM_ALGO_HIER:
        if (g->per_node < 1)
            return oc_fail(st, "all-reduce on group %s: hier needs the same number of "
                               "members on every node", g->name);
        allreduce_hier(g, me, S, o->coarse);
        return 0;
    case OC_SIM_ALGO_TREE:
        allreduce_tree(g, me, S, o);
        return 0;
    default:
        OC_ASSERT(!"unknown all-reduce algorithm");
        return -1;
    }
}

int oc_sim_allgather(const struct oc_sim_group *g, int64_t me, double bytes,
                     const struct oc_sim_coll_opts *o, struct oc_status *st)
{
    int64_t S = 0;
    if (check_call(g, me, bytes, &S, "all-gather", st) != 0)
        return -1;
    const struct ring r = flat_ring(g, me);
    ring_run(&r, S, 0, 1, o ? o->coarse : 0);
    return 0;
}

int oc_sim_reducescatter(const struct oc_sim_group *g, int64_t me,
                         double bytes, const struct oc_sim_coll_opts *o,
                         struct oc_status *st)
{
    int64_t S = 0;
    if (check_call(g, me, bytes, &S, "reduce-scatter", st) != 0)
        return -1;
    const struct ring r = flat_ring(g, me);
    ring_run(&r, S, 1, 0, o ? o->coarse : 0);
    return 0;
}

int oc_sim_broadcast(const struct oc_sim_group *g, int64_t me, int64_t root,
                     double bytes, const struct oc_sim_coll_opts *o,
                     struct oc_status *st)
{
    int64_t S = 0;
    if (check_call(g, me, bytes, &S, "broadcast", st) != 0)
        return -1;
    if (root < 0 || root >= g->size)
        return oc_fail(st, "broadcast on group %s: root %" PRId64 " is not a member index "
                           "(0..%" PRId64 ")", g->name, root, g->size - 1);
    if (!o)
        o = &default_opts;
    const int64_t N = g->size;
    if (N < 2)
        return 0;
    /* A chain in ring order from the root; chunk by chunk, each member
     * receives from the previous one and passes on to the next. */
    const int64_t q = (me - root + N) % N;
    const int64_t next = (me + 1) % N, prev = (me + N - 1) % N;
    sg_mailbox_t in = q > 0 ? mailbox(g->name, g->ranks[prev], g->ranks[me]) : NULL;
    sg_mailbox_t out = q < N - 1 ? mailbox(g->name, g->ranks[me], g->ranks[next]) : NULL;
    const int64_t C = pipeline_chunks(S, o);
    struct comms sends = {0};
    for (int64_t ch = 0; ch < C; ch++) {
        if (in)
            sg_mailbox_get(in);
        if (out)
            comms_push(&sends, sg_mailbox_put_async(out, &oc_sim_token,
                                                    chunk_bytes(S, C, ch)));
    }
    comms_wait(&sends);
    comms_free(&sends);
    return 0;
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
    int64_t S = 0;
    char where[200];
    snprintf(where, sizeof where, "send %s %" PRId64 "->%" PRId64 " tag %" PRId64, channel,
             src, dst, tag);
    if (to_bytes(bytes, &S, where, st) != 0)
        return NULL;
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
