/* coll.c: the table of collective algorithms, the choice among them, and
 * the transport (mailboxes, scaled sizes, coarse-ring flags) every
 * algorithm sends through in both fidelities (see coll.h). */
#define _POSIX_C_SOURCE 200809L

#include "coll.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/semaphore.h>

#include "engine.h"
#include "nccl_model.h"
#include "sim_log.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_coll_table, ocsim_coll,
                                "ocsim: which collective algorithm runs");

/* SimGrid refuses a NULL payload; every collective message carries the
 * address of this token, and asynchronous receives store it here. */
static char coll_token;
static void *coll_sink;

static const struct oc_sim_coll_opts default_opts = {OC_SIM_ALGO_AUTO, 0, 0, 0, 0, 0, 0};

/* ---- the table --------------------------------------------------------- */

/* Tie order of the automatic choice: ring, then hier, tree, nvls, rails. */
static const struct oc_coll_algo *const table[] = {&oc_coll_ring, &oc_coll_hier,
                                                   &oc_coll_tree, &oc_coll_nvls,
                                                   &oc_coll_rails};
#define TABLE_N ((int64_t)(sizeof table / sizeof table[0]))

const struct oc_coll_algo *const *oc_coll_table(int64_t *n)
{
    OC_ASSERT(n);
    *n = TABLE_N;
    return table;
}

const struct oc_coll_algo *oc_coll_find(enum oc_sim_algo a)
{
    for (int64_t i = 0; i < TABLE_N; i++)
        if (table[i]->id == a)
            return table[i];
    OC_ASSERT(!"no descriptor for this algorithm");
    return NULL;
}

int oc_coll_usable(const struct oc_coll_algo *a, const struct oc_sim_group *g,
                   enum oc_coll_kind kind, const struct oc_sim_coll_opts *o)
{
    /* NVLS needs a switch that reduces: the topology's, through the
     * options (a group knows no topology) */
    return a->applies(g, kind) && (a != &oc_coll_nvls || (o && o->nvls));
}

/* The forced algorithms that would have picked, in every automatic choice
 * since the last oc_coll_same_reset, what the automatic choice picked
 * (bit 1 << enum oc_sim_algo; coll.h). */
static unsigned same_as_auto = ~0u;

void oc_coll_same_reset(void)
{
    same_as_auto = ~0u;
}

unsigned oc_coll_same_as_auto(void)
{
    return same_as_auto;
}

/* Records one automatic choice: forced algorithm X would have run X where
 * it applies, the ring elsewhere (oc_coll_pick). */
static const struct oc_coll_algo *note_auto(const struct oc_sim_group *g,
                                            enum oc_coll_kind kind,
                                            const struct oc_coll_algo *picked,
                                            const struct oc_sim_coll_opts *o)
{
    for (int64_t i = 0; i < TABLE_N; i++) {
        const struct oc_coll_algo *forced =
            oc_coll_usable(table[i], g, kind, o) ? table[i] : &oc_coll_ring;
        if (forced != picked) {
            same_as_auto &= ~(1u << table[i]->id);
        }
    }
    return picked;
}

/* NCCL's steps of algorithm a (core/nccl_model.h): the flat ring's every step
 * at its slowest hop (on the network when it leaves a node); the two-level
 * ring's rings inside nodes on NVLink, across nodes on the network; the
 * tree's chain inside a node and its levels across nodes (ceil(log2 M)),
 * up and down (NCCL's tree latency: 2 x ((L-1) intra + log2(M) inter)). */
static struct oc_nccl_steps nccl_steps(const struct oc_sim_group *g,
                                       const struct oc_coll_algo *a, enum oc_coll_kind kind)
{
    struct oc_nccl_steps s = {OC_NCCL_RING, 0, 0, g->intra.lat_s, g->inter.lat_s};
    if (a == &oc_coll_ring) {
        const int64_t k = oc_nccl_ring_steps(kind, g->size);
        if (g->nodes > 1)
            s.net = k, s.net_lat_s = g->ring.lat_s;
        else
            s.nvl = k, s.nvl_lat_s = g->ring.lat_s;
    } else if (a == &oc_coll_hier) {
        s.nvl = oc_nccl_ring_steps(kind, g->per_node);
        s.net = oc_nccl_ring_steps(kind, g->nodes);
    } else if (a == &oc_coll_nvls) {
        s.algo = OC_NCCL_NVLS;
        s.nvl = 1, s.nvl_lat_s = g->ring.lat_s;
    } else if (a == &oc_coll_rails) {
        oc_nccl_split_steps(kind, g->size, g->nodes, &s.nvl, &s.net);
    } else {
        int64_t depth = 0;
        while (((int64_t)1 << depth) < g->nodes)
            depth++;
        const int64_t L = g->per_node > 0 ? g->per_node : 1;
        s.algo = OC_NCCL_TREE;
        s.nvl = 2 * (L - 1);
        s.net = 2 * depth;
        s.net_lat_s = g->tree.lat_s;
    }
    return s;
}

double oc_coll_cost_s(const struct oc_sim_group *g, const struct oc_coll_algo *a,
                      enum oc_coll_kind kind, double bytes,
                      const struct oc_sim_coll_opts *o, double *wire, double *lat_s)
{
    if (!o)
        o = &default_opts;
    double w = 1, lat = 0;
    double best = a->estimate_s(g, kind, bytes, o);
    if (o->nccl && kind != OC_COLL_BROADCAST && g->size > 1) {
        const struct oc_nccl_steps s = nccl_steps(g, a, kind);
        const enum oc_nccl_algo na = s.algo;
        best = INFINITY;
        for (int p = 0; p < OC_NCCL_PROTOS; p++) {
            if (!oc_nccl_proto_ok(na, (enum oc_nccl_proto)p))
                continue;
            const double pw = oc_nccl_wire((enum oc_nccl_proto)p, na);
            const double pl = oc_nccl_latency_s(&s, (enum oc_nccl_proto)p);
            const double t = a->estimate_s(g, kind, bytes * pw, o) + pl;
            if (t < best)
                best = t, w = pw, lat = pl;
        }
    }
    if (wire)
        *wire = w;
    if (lat_s)
        *lat_s = lat;
    return best;
}

const struct oc_coll_algo *oc_coll_pick(const struct oc_sim_group *g,
                                        enum oc_coll_kind kind,
                                        enum oc_sim_algo algo, double bytes,
                                        const struct oc_sim_coll_opts *o)
{
    OC_ASSERT(g && g->size >= 1 && bytes >= 0);
    if (!o)
        o = &default_opts;
    if (algo != OC_SIM_ALGO_AUTO) {
        const struct oc_coll_algo *a = oc_coll_find(algo);
        if (oc_coll_usable(a, g, kind, o))
            return a;
        XBT_DEBUG("%s on %s: %s does not apply, the ring runs", oc_coll_name(kind),
                  g->name, a->name);
        return &oc_coll_ring;
    }
    /* Like NCCL's tuner: the smallest estimate; inside one node the ring,
     * or NVLS where the switch reduces (collective.h). */
    const struct oc_coll_algo *best = &oc_coll_ring;
    if (g->nodes < 2 && !oc_coll_usable(&oc_coll_nvls, g, kind, o))
        return note_auto(g, kind, best, o);
    const int trace = XBT_LOG_ISENABLED(ocsim_coll_table, xbt_log_priority_debug);
    char seen[160] = "";
    double best_s = INFINITY;
    for (int64_t i = 0; i < TABLE_N; i++) {
        if (!oc_coll_usable(table[i], g, kind, o))
            continue;
        const double t = oc_coll_cost_s(g, table[i], kind, bytes, o, NULL, NULL);
        /* the multi-rail ring only where it gains more than
         * OC_COLL_RAILS_MARGIN over the best of the others (coll.h) */
        const double need = table[i] == &oc_coll_rails ? 1.0 - OC_COLL_RAILS_MARGIN : 1.0;
        if (t < best_s * need) {
            best = table[i];
            best_s = t;
        }
        if (trace) {
            const size_t used = strlen(seen);
            snprintf(seen + used, sizeof seen - used, " %s %.6g s", table[i]->name, t);
        }
    }
    XBT_DEBUG("%s of %.0f bytes on %s:%s: %s", oc_coll_name(kind), bytes, g->name, seen,
              best->name);
    return note_auto(g, kind, best, o);
}

int oc_coll_run(const struct oc_coll_tx *tx, int64_t me, enum oc_coll_kind kind,
                double bytes, int64_t root, struct oc_status *st)
{
    OC_ASSERT(tx && tx->g && tx->o);
    const struct oc_sim_group *g = tx->g;
    OC_ASSERT(g->ranks && me >= 0 && me < g->size);
    if (kind < OC_COLL_ALLREDUCE || kind > OC_COLL_BROADCAST)
        return oc_fail(st, "collective kind %d unknown", (int)kind);
    if (!(isfinite(bytes) && bytes >= 0 && bytes < 9e18))
        return oc_fail(st, "%s on group %s: size must be a number of bytes >= 0 (got %g)",
                       oc_coll_name(kind), g->name, bytes);
    if (kind == OC_COLL_BROADCAST && (root < 0 || root >= g->size))
        return oc_fail(st, "broadcast on group %s: root %" PRId64 " is not a member index "
                           "(0..%" PRId64 ")", g->name, root, g->size - 1);
    struct oc_coll_call c = {kind, llround(bytes), root};
    const struct oc_coll_algo *a = oc_coll_pick(g, kind, tx->o->algo, (double)c.bytes, tx->o);
    if (g->size < 2)
        return 0;
    /* NCCL's terms (collective.h): its latency, then the protocol's bytes */
    double wire = 1, lat = 0;
    if (tx->o->nccl) {
        oc_coll_cost_s(g, a, kind, (double)c.bytes, tx->o, &wire, &lat);
        if (lat > 0)
            sg_actor_sleep_for(lat);
        c.bytes = llround((double)c.bytes * wire);
    }
    a->run(tx, me, &c);
    return 0;
}

/* ---- transport --------------------------------------------------------- */

/* How many real flows a message from member i to member j stands for: 1
 * inside a node (every GPU has its own NVLink link) or without factors,
 * else the larger factor of the two ends (replay.h). */
static int64_t scale_x(const int64_t *k, int64_t i, int64_t j, int cross)
{
    if (!k || !cross)
        return 1;
    return k[i] > k[j] ? k[i] : k[j];
}

static int64_t scale_of(const struct oc_coll_tx *tx, const int64_t *k, int64_t i, int64_t j)
{
    return scale_x(k, i, j, tx->g->node[i] != tx->g->node[j]);
}

static int64_t hop_scale(const struct oc_coll_tx *tx, int64_t i, int64_t j)
{
    return scale_of(tx, tx->scale, i, j);
}

void oc_coll_tx_init(struct oc_coll_tx *tx, const struct oc_sim_group *g,
                     const int64_t *scale, const struct oc_sim_coll_opts *o)
{
    OC_ASSERT(tx && g);
    memset(tx, 0, sizeof *tx);
    tx->g = g;
    tx->scale = scale;
    tx->o = o ? o : &default_opts;
    const int c = tx->o->coarse != 0;
    const int64_t n = g->size, M = g->nodes, L = g->per_node;
    /* Coarse rings need equal hops: equal route figures (collective.h),
     * and in fast fidelity equal scales too. Inside nodes nothing is
     * scaled. */
    tx->coarse_ring = c && g->ring.uniform;
    for (int64_t i = 1; n > 1 && i < n; i++)
        tx->coarse_ring = tx->coarse_ring && hop_scale(tx, i, (i + 1) % n) == hop_scale(tx, 0, 1);
    tx->coarse_intra = c && g->intra.uniform;
    tx->coarse_inter = c && g->inter.uniform;
    tx->coarse_rails = c && g->intra.uniform && g->inter.uniform;
    if (L > 0 && M > 1) {
        const int64_t s0 = hop_scale(tx, oc_coll_node_member(g, 0, 0),
                                     oc_coll_node_member(g, 1, 0));
        for (int64_t i = 0; i < n; i++)
            tx->coarse_rails = tx->coarse_rails &&
                               hop_scale(tx, i, oc_coll_ring_nbr(g, OC_COLL_RING_DIAG, i, 1)) ==
                                   s0;
        for (int64_t j = 0; j < L; j++)
            for (int64_t k = 0; k < M; k++)
                tx->coarse_inter = tx->coarse_inter &&
                                   hop_scale(tx, oc_coll_node_member(g, k, j),
                                             oc_coll_node_member(g, (k + 1) % M, j)) == s0;
    }
}

static struct oc_coll_hop hop_x(const struct oc_coll_tx *tx, int64_t from, int64_t to,
                                 int cross)
{
    const struct oc_sim_group *g = tx->g;
    OC_ASSERT(from >= 0 && from < g->size && to >= 0 && to < g->size);
    char name[160];
    /* a step to an ~in twin between members of one node has its own
     * mailbox (coll.h, oc_coll_hop_across) */
    const char *tw = cross && g->node[from] == g->node[to] ? "~in" : "";
    int w = snprintf(name, sizeof name, "%s:%" PRId64 ">%" PRId64 "%s", g->name, g->ranks[from],
                     g->ranks[to], tw);
    OC_ASSERT(w > 0 && (size_t)w < sizeof name);
    struct oc_coll_hop h = {sg_mailbox_by_name(name), scale_x(tx->scale, from, to, cross), 0,
                            0, 0};
    h.flow = tx->flow_scale ? scale_x(tx->flow_scale, from, to, cross) : h.scale;
    /* the route is looked up only where a reduction needs it; on a
     * generated platform by its class (platform.h), without a route search */
    const struct oc_sim_platform *p = oc_sim_engine_platform();
    const int same = !cross;
    if (cross && g->node[from] == g->node[to]) {
        /* a step to an ~in twin: the figures of a route across nodes */
        OC_ASSERT(p && p->generated && p->has_inter);
        if (tx->o->reduce_Bps > 0) {
            h.lat_s = p->inter_lat_s;
            h.bw_Bps = p->inter_bw_Bps;
        }
        return h;
    }
    if (tx->o->reduce_Bps > 0 && from != to) {
        if (p && p->generated && (same ? p->has_intra : p->has_inter)) {
            h.lat_s = same ? p->intra_lat_s : p->inter_lat_s;
            h.bw_Bps = same ? p->intra_bw_Bps : p->inter_bw_Bps;
        } else {
            h.lat_s = sg_host_get_route_latency(g->hosts[from], g->hosts[to]);
            h.bw_Bps = sg_host_get_route_bandwidth(g->hosts[from], g->hosts[to]);
        }
    }
    return h;
}

struct oc_coll_hop oc_coll_hop(const struct oc_coll_tx *tx, int64_t from, int64_t to)
{
    return hop_x(tx, from, to, tx->g->node[from] != tx->g->node[to]);
}

struct oc_coll_hop oc_coll_hop_across(const struct oc_coll_tx *tx, int64_t from, int64_t to)
{
    return hop_x(tx, from, to, 1);
}

double oc_coll_hop_s(const struct oc_coll_hop *h, int64_t bytes)
{
    /* no route figures: no reduction to hide (oc_coll_hop) */
    return h->bw_Bps > 0 ? h->lat_s + (double)(bytes * h->scale) / h->bw_Bps : 0;
}

double oc_coll_reduce(const struct oc_coll_tx *tx, int64_t bytes, int64_t reads,
                      double hidden_s, int sleep)
{
    const double s = oc_cf_reduce_exposed_s((double)bytes, reads, tx->o->reduce_Bps, hidden_s);
    if (sleep && s > 0)
        sg_actor_sleep_for(s);
    return s;
}

sg_comm_t oc_coll_put(const struct oc_coll_hop *h, int64_t bytes)
{
    return sg_mailbox_put_async(h->mb, &coll_token, bytes * (h->flow > 0 ? h->flow : h->scale));
}

void oc_coll_get(const struct oc_coll_hop *h)
{
    sg_mailbox_get(h->mb);
}

sg_comm_t oc_coll_get_async(const struct oc_coll_hop *h)
{
    return sg_mailbox_get_async(h->mb, &coll_sink);
}

/* ---- symmetric fidelity's loops ---------------------------------------- */

void oc_coll_loop_main(void *arg)
{
    struct oc_coll_loop *L = arg;
    for (;;) {
        sg_sem_acquire(L->go);
        if (L->stop)
            break;
        sg_mailbox_get(L->mb);
    }
}

void oc_coll_loop_stop(struct oc_coll_loop *L)
{
    if (!L || L->stop)
        return;
    L->stop = 1;
    sg_sem_release(L->go);
}

/* One ring step on a loop: the receiver is woken at this simulated time,
 * so the message flows at once. */
sg_comm_t oc_coll_loop_put(struct oc_coll_loop *L, int64_t bytes)
{
    sg_sem_release(L->go);
    return sg_mailbox_put_async(L->mb, &coll_token, bytes * L->scale);
}

void oc_coll_loop_send(struct oc_coll_loop *L, int64_t bytes)
{
    sg_comm_wait(oc_coll_loop_put(L, bytes));
}

void oc_coll_in_main(void *arg)
{
    struct oc_coll_in *I = arg;
    for (;;) {
        sg_sem_acquire(I->go);
        if (I->stop)
            break;
        sg_mailbox_get(I->mb);
        sg_sem_release(I->done);
    }
}

void oc_coll_in_stop(struct oc_coll_in *I)
{
    if (!I || I->stop)
        return;
    I->stop = 1;
    sg_sem_release(I->go);
}

void oc_coll_comms_push(struct oc_coll_comms *cs, sg_comm_t c)
{
    if (cs->n == cs->cap) {
        cs->cap = cs->cap ? 2 * cs->cap : 16;
        cs->c = oc_xrealloc(cs->c, (size_t)cs->cap * sizeof *cs->c);
    }
    cs->c[cs->n++] = c;
}

void oc_coll_comms_wait(struct oc_coll_comms *cs)
{
    if (cs->n > 0)
        sg_comm_wait_all(cs->c, (size_t)cs->n);
    cs->n = 0;
}

void oc_coll_comms_free(struct oc_coll_comms *cs)
{
    free(cs->c);
    cs->c = NULL;
    cs->n = cs->cap = 0;
}

/* ---- sizes and shapes -------------------------------------------------- */

int64_t oc_coll_chunk_bytes(int64_t S, int64_t n, int64_t c)
{
    OC_ASSERT(n >= 1 && c >= 0 && c < n);
    /* written so that S*c cannot overflow */
    const int64_t q = S / n, r = S % n;
    return q + (r * (c + 1)) / n - (r * c) / n;
}

int64_t oc_coll_pipeline_chunks(int64_t S, const struct oc_sim_coll_opts *o)
{
    if (!o)
        o = &default_opts;
    const double cb = o->chunk_bytes > 0 ? o->chunk_bytes : OC_SIM_CHUNK_BYTES;
    const int64_t cap = o->max_chunks > 0 ? o->max_chunks : OC_SIM_MAX_CHUNKS;
    double c = ceil((double)S / cb);
    if (c < 1)
        c = 1;
    return c > (double)cap ? cap : (int64_t)c;
}

int64_t oc_coll_node_count(const struct oc_sim_group *g, int64_t k)
{
    OC_ASSERT(k >= 0 && k < g->nodes);
    return g->node_first[k + 1] - g->node_first[k];
}

int64_t oc_coll_node_member(const struct oc_sim_group *g, int64_t k, int64_t j)
{
    OC_ASSERT(j >= 0 && j < oc_coll_node_count(g, k));
    return g->node_members[g->node_first[k] + j];
}

struct oc_cf_levels oc_coll_levels(const struct oc_sim_group *g, int64_t per_node,
                                   const struct oc_sim_hops *intra,
                                   const struct oc_sim_hops *inter,
                                   const struct oc_sim_coll_opts *o)
{
    return (struct oc_cf_levels){per_node,      g->nodes,      intra->bw_Bps,
                                 intra->lat_s,  inter->bw_Bps, inter->lat_s,
                                 o ? o->reduce_Bps : 0};
}
