/* coll_rails.c: NCCL's ring across nodes with one channel per NIC (coll.h's
 * descriptor oc_coll_rails). NCCL runs one ring per channel and spreads
 * the channels over the node's NICs, each ring entering a node through one
 * NIC and leaving it through another, so the node's NICs carry the buffer
 * together (NCCL's maintainers: multi-node all-reduce busbw is about the
 * NICs per node times one NIC's rate, ../shared/validation/README.md).
 * Here: L = members per node channels of S/L; channel c enters node k at
 * local member c (from node k-1's member c-1) and runs c, c+1, ..., c-1
 * inside it, so in every step member (k, j) sends the chunks of the L-1
 * channels that stay in the node to (k, j+1) and the one of channel j+1
 * to (k+1, j+1), and receives the same from (k, j-1) and (k-1, j-1). All
 * channels step together (uncontended they take the same time), so the
 * L rings run as one ring of 2(N-1) steps (N-1 for all-gather and
 * reduce-scatter) of two messages each; a reduce-scatter step reduces the
 * S/N it received. Closed forms oc_cf_rails_* (core/closed_form.h), which
 * take the hop across nodes at the group's g->inter figures (every pair
 * of nodes alike on a generated platform). NCCL's real rings leave and
 * enter a node through NICs on the same rail; on ocsim's non-blocking
 * fabric that placement does not matter.
 *
 * Coarse mode (opts.coarse, where tx->coarse_rails: equal hops inside and
 * across nodes, equal NIC factors on the hops across): the steps become
 * one exchange of their bytes, then (k-1) of the larger route latency and
 * the reductions the steps would not have hidden: the same as the steps
 * when one kind of hop is the slower in both latency and bandwidth (the
 * NIC, on every shipped topology), else a little faster. Under contention
 * it is an approximation like the coarse ring's: on the ZeRO-3 sweep of
 * tests/coarse_sweep.sh it came 3.4 % of a step off message level where
 * auto switched between this ring and the two-level one by size (why
 * exactly is not found: merging at most 8 exchanges a call still left
 * 6e-3, running this ring at message level in both sweeps 6e-3 too, and
 * dropping the NVLink part of its steps changed nothing, so it is the
 * merged rings' NIC flows sharing the NICs with this ring's), 1.9e-3 with
 * this ring forced; auto's margin (coll.h, OC_COLL_RAILS_MARGIN) keeps
 * those near ties on the two-level ring.
 *
 * Symmetric fidelity (tx->image, coll.h): a step goes to the images of
 * the node neighbour and of (k+1, j+1) and comes from those of (k, j-1)
 * and (k-1, j-1), oc_coll_sym_ok having checked the images match up on
 * both rings (OC_COLL_RING_INTRA and _DIAG); the hop across nodes whose
 * image stays on the node goes to the image's ~in twin (one node's
 * replicas standing for all), and an image that is the member itself to
 * its loop of the hop's kind (replica 0 alone). */
#define _POSIX_C_SOURCE 200809L

#include "coll.h"

#include <inttypes.h>
#include <math.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/semaphore.h>

#include "sim_log.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_coll_rails, ocsim_coll,
                                "ocsim: multi-rail ring across nodes");

static int rails_applies(const struct oc_sim_group *g, enum oc_coll_kind kind)
{
    /* one member per node: the flat ring is the same ring */
    return kind != OC_COLL_BROADCAST && g->per_node >= 2 && g->nodes >= 2;
}

static double rails_estimate_s(const struct oc_sim_group *g, enum oc_coll_kind kind,
                               double bytes, const struct oc_sim_coll_opts *o)
{
    OC_ASSERT(rails_applies(g, kind));
    const struct oc_cf_levels v = oc_coll_levels(g, g->per_node, &g->intra, &g->inter, o);
    switch (kind) {
    case OC_COLL_ALLREDUCE: return oc_cf_rails_allreduce_s(&v, bytes);
    case OC_COLL_REDUCESCATTER: return oc_cf_rails_reducescatter_s(&v, bytes);
    case OC_COLL_ALLGATHER:
    default:
        return oc_cf_rails_allgather_s(&v, bytes);
    }
}

/* Member me's four hops: to and from its node neighbours, to and from the
 * next and previous node's members one local index on. Symmetric fidelity
 * (tx->image, coll.h): to and from the images of those, the hop across
 * nodes to an image on me's node through that image's ~in twin (xin),
 * and where an image is me itself, to me's loop of the hop's kind (lin,
 * lx; the hops then the real ones, which time the reductions' hiding). */
struct rails_pos {
    struct oc_coll_hop in_next, in_prev, x_next, x_prev;
    struct oc_coll_loop *lin, *lx;
    struct oc_coll_in *xin;
    int64_t pos, n, L;
};

static void rails_sym(const struct oc_coll_tx *tx, int64_t me, const int64_t nb[4],
                      struct rails_pos *r)
{
    const int64_t *im = tx->image, *node = tx->g->node;
    OC_ASSERT(im[me] == me);
    if (im[nb[0]] == me) {
        OC_ASSERT(im[nb[1]] == me && tx->loop_nv[me]);
        r->lin = tx->loop_nv[me];
    } else {
        r->in_next = oc_coll_hop(tx, me, im[nb[0]]);
        r->in_prev = oc_coll_hop(tx, im[nb[1]], me);
    }
    const int64_t xn = im[nb[2]], xp = im[nb[3]];
    if (xn == me) {
        OC_ASSERT(xp == me && tx->loop_net[me]);
        r->lx = tx->loop_net[me];
        return;
    }
    /* oc_coll_sym_ok: a real hop across nodes whose image stays on the
     * node goes to the image's ~in twin */
    r->x_next = node[xn] == node[me] ? oc_coll_hop_across(tx, me, xn) : oc_coll_hop(tx, me, xn);
    if (node[xp] == node[me]) {
        r->x_prev = oc_coll_hop_across(tx, xp, me);
        OC_ASSERT(tx->in && tx->in[me]);
        r->xin = tx->in[me];
    } else {
        r->x_prev = oc_coll_hop(tx, xp, me);
    }
}

static struct rails_pos rails_pos_of(const struct oc_coll_tx *tx, int64_t me)
{
    const struct oc_sim_group *g = tx->g;
    const int64_t L = g->per_node, M = g->nodes, k = g->node[me], j = g->local[me];
    struct rails_pos r = {.pos = k * L + j, .n = g->size, .L = L};
    const int64_t nb[4] = {oc_coll_node_member(g, k, (j + 1) % L),
                           oc_coll_node_member(g, k, (j + L - 1) % L),
                           oc_coll_node_member(g, (k + 1) % M, (j + 1) % L),
                           oc_coll_node_member(g, (k + M - 1) % M, (j + L - 1) % L)};
    r.in_next = oc_coll_hop(tx, me, nb[0]);
    r.in_prev = oc_coll_hop(tx, nb[1], me);
    r.x_next = oc_coll_hop(tx, me, nb[2]);
    r.x_prev = oc_coll_hop(tx, nb[3], me);
    if (tx->image)
        rails_sym(tx, me, nb, &r);
    return r;
}

/* One step: c bytes of this member's, c/L of them across. Returns the
 * uncontended seconds of the step's incoming transfers (what hides the
 * reduction). */
static double rails_exchange(const struct rails_pos *r, int64_t c, int64_t c_in)
{
    const int64_t x = c / r->L, x_in = c_in / r->L;
    /* both receives posted at once: a transfer starts only when its
     * receive is posted (SimGrid's rendezvous); on a loop the twin
     * receives (coll.h) */
    sg_comm_t cs[4];
    int nc = 0;
    cs[nc++] = r->lin ? oc_coll_loop_put(r->lin, c - x) : oc_coll_put(&r->in_next, c - x);
    cs[nc++] = r->lx ? oc_coll_loop_put(r->lx, x) : oc_coll_put(&r->x_next, x);
    if (!r->lin)
        cs[nc++] = oc_coll_get_async(&r->in_prev);
    if (r->xin) {
        r->xin->mb = r->x_prev.mb;
        sg_sem_release(r->xin->go);
    } else if (!r->lx) {
        cs[nc++] = oc_coll_get_async(&r->x_prev);
    }
    for (int i = 0; i < nc; i++)
        sg_comm_wait(cs[i]);
    if (r->xin)
        sg_sem_acquire(r->xin->done);
    return fmax(oc_coll_hop_s(&r->in_prev, c_in - x_in), oc_coll_hop_s(&r->x_prev, x_in));
}

static void rails_run(const struct oc_coll_tx *tx, int64_t me, const struct oc_coll_call *c)
{
    const struct oc_sim_group *g = tx->g;
    OC_ASSERT(rails_applies(g, c->kind));
    XBT_DEBUG("%s of %" PRId64 " bytes on %s, member %" PRId64 " (multi-rail ring)",
              oc_coll_name(c->kind), c->bytes, g->name, me);
    const struct rails_pos r = rails_pos_of(tx, me);
    const int64_t n = r.n, S = c->bytes;
    const int rs = c->kind != OC_COLL_ALLGATHER, ag = c->kind != OC_COLL_REDUCESCATTER;
    const int do_phase[2] = {rs, ag};
    const int coarse = tx->coarse_rails;
    int64_t total = 0, steps = 0;
    double reduce_s = 0;
    for (int ph = 0; ph < 2; ph++)
        for (int64_t k = 0; do_phase[ph] && k < n - 1; k++) {
            /* the chunks of the ring's step k (coll_ring.c's order) */
            const int64_t mine = ((ph == 0 ? r.pos - k : r.pos + 1 - k) % n + n) % n;
            const int64_t cm = oc_coll_chunk_bytes(S, n, mine);
            const int64_t ci = oc_coll_chunk_bytes(S, n, ((r.pos - k - 1) % n + n) % n);
            if (coarse) {
                total += cm;
                steps++;
                if (ph == 0) {
                    const int64_t xi = ci / r.L;
                    const double h = fmax(oc_coll_hop_s(&r.in_prev, ci - xi),
                                          oc_coll_hop_s(&r.x_prev, xi));
                    reduce_s += oc_coll_reduce(tx, ci, 2, h, 0);
                }
                continue;
            }
            const double h = rails_exchange(&r, cm, ci);
            if (ph == 0)
                oc_coll_reduce(tx, ci, 2, h, 1);
        }
    if (!coarse)
        return;
    XBT_DEBUG("coarse multi-rail ring of %" PRId64 " members: %" PRId64 " steps merged", n,
              steps);
    rails_exchange(&r, total, total);
    const double lat = fmax(g->intra.lat_s, g->inter.lat_s);
    if (steps > 1 && lat > 0)
        sg_actor_sleep_for((double)(steps - 1) * lat);
    if (reduce_s > 0)
        sg_actor_sleep_for(reduce_s);
}

const struct oc_coll_algo oc_coll_rails = {
    .id = OC_SIM_ALGO_RAILS,
    .name = "rails",
    .applies = rails_applies,
    .estimate_s = rails_estimate_s,
    .run = rails_run,
};
