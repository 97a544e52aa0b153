/* coll_ring.c: the ring (coll.h's descriptor oc_coll_ring). All-reduce is
 * a reduce-scatter then an all-gather, 2(N-1) steps of S/N, in each step
 * every member sending to the next and receiving from the previous at once
 * (Patarasuk and Yuan 2009); all-gather and reduce-scatter are N-1 such
 * steps (Thakur et al. 2005); broadcast is a pipelined chain in ring order
 * from the root (NCCL's ring broadcast). Applies to every kind and group.
 * Each reduce-scatter step reduces the chunk it received (oc_coll_reduce).
 * The coarse mode and its conditions are in collective.h. */
#define _POSIX_C_SOURCE 200809L

#include "coll.h"

#include <inttypes.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/semaphore.h>

#include "sim_log.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_coll_ring, ocsim_coll,
                                "ocsim: ring collectives and chain broadcast");

static struct oc_coll_ring ring_of(const struct oc_coll_tx *tx, enum oc_coll_ring_kind kind,
                                   int64_t pos, int64_t n, int64_t self, int coarse,
                                   double lat_s)
{
    struct oc_coll_ring r = {tx,     n,     pos,  {NULL, 1, 0, 0, 1}, {NULL, 1, 0, 0, 1},
                             coarse, lat_s, NULL, NULL};
    if (n < 2)
        return r;
    int64_t next = oc_coll_ring_nbr(tx->g, kind, self, 1);
    int64_t prev = oc_coll_ring_nbr(tx->g, kind, self, -1);
    /* Symmetric fidelity (coll.h): the step goes to the image of the
     * successor and comes from the image of the predecessor; to the loop
     * of the hop's kind where that image is this member (oc_coll_sym_ok
     * made sure the images match up and the hops' kinds agree). */
    if (tx->image) {
        OC_ASSERT(tx->image[self] == self);
        const int64_t ni = tx->image[next], pi = tx->image[prev];
        if (ni == self) {
            OC_ASSERT(pi == self);
            r.loop = tx->g->node[self] == tx->g->node[next] ? tx->loop_nv[self]
                                                            : tx->loop_net[self];
            OC_ASSERT(r.loop);
        } else {
            /* a real hop across nodes to an image on this node: the step
             * goes to the image's ~in twin (oc_coll_sym_ok) */
            const int64_t *node = tx->g->node;
            const int xn = node[self] != node[next] && node[self] == node[ni];
            const int xp = node[prev] != node[self] && node[pi] == node[self];
            r.next = xn ? oc_coll_hop_across(tx, self, ni) : oc_coll_hop(tx, self, ni);
            r.prev = xp ? oc_coll_hop_across(tx, pi, self) : oc_coll_hop(tx, pi, self);
            if (xp) {
                OC_ASSERT(tx->in && tx->in[self]);
                r.in = tx->in[self];
            }
            return r;
        }
    }
    r.next = oc_coll_hop(tx, self, next);
    r.prev = oc_coll_hop(tx, prev, self);
    return r;
}

struct oc_coll_ring oc_coll_ring_flat(const struct oc_coll_tx *tx, int64_t me)
{
    return ring_of(tx, OC_COLL_RING_FLAT, me, tx->g->size, me, tx->coarse_ring,
                   tx->g->ring.lat_s);
}

/* The ring inside me's node, in group order. */
struct oc_coll_ring oc_coll_ring_intra(const struct oc_coll_tx *tx, int64_t me)
{
    const struct oc_sim_group *g = tx->g;
    return ring_of(tx, OC_COLL_RING_INTRA, g->local[me], oc_coll_node_count(g, g->node[me]),
                   me, tx->coarse_intra, g->intra.lat_s);
}

/* The ring across nodes of the members with me's local index. */
struct oc_coll_ring oc_coll_ring_inter(const struct oc_coll_tx *tx, int64_t me)
{
    const struct oc_sim_group *g = tx->g;
    return ring_of(tx, OC_COLL_RING_INTER, g->node[me], g->nodes, me, tx->coarse_inter,
                   g->inter.lat_s);
}

/* One step: send to the next member and receive from the previous one at
 * once, and reduce what was received (reduce_bytes >= 0: a reduce-scatter
 * step; the reduction overlaps the send, collective.h); the step ends when
 * all are done. */
static void exchange(const struct oc_coll_ring *r, int64_t bytes, int64_t reduce_bytes)
{
    if (r->loop) {
        /* Symmetric fidelity: the predecessor's message arrives when this
         * member's own does (every member in the same situation); r->prev
         * is the real predecessor's hop, for the reduction's hiding. */
        oc_coll_loop_send(r->loop, bytes);
        if (reduce_bytes >= 0)
            oc_coll_reduce(r->tx, reduce_bytes, 2, oc_coll_hop_s(&r->prev, reduce_bytes), 1);
        return;
    }
    sg_comm_t c = oc_coll_put(&r->next, bytes);
    if (r->in) {
        /* received on this member's ~in twin */
        r->in->mb = r->prev.mb;
        sg_sem_release(r->in->go);
        sg_sem_acquire(r->in->done);
    } else {
        oc_coll_get(&r->prev);
    }
    if (reduce_bytes >= 0)
        oc_coll_reduce(r->tx, reduce_bytes, 2, oc_coll_hop_s(&r->prev, reduce_bytes), 1);
    sg_comm_wait(c);
}

/* Chunk of step k of phase ph (0 reduce-scatter, 1 all-gather): the
 * reduce-scatter sends chunk (pos-k) mod n, so after n-1 steps member pos
 * holds chunk (pos+1) mod n reduced; the all-gather sends (pos+1-k) mod n. */
static int64_t step_chunk(const struct oc_coll_ring *r, int ph, int64_t k)
{
    const int64_t n = r->n, p = r->pos;
    return ((ph == 0 ? p - k : p + 1 - k) % n + n) % n;
}

/* The bytes a reduce-scatter step k receives to reduce: the previous
 * member's chunk of that step, (pos-k-1) mod n. */
static int64_t step_recv_bytes(const struct oc_coll_ring *r, int64_t S, int64_t k)
{
    return oc_coll_chunk_bytes(S, r->n, ((r->pos - k - 1) % r->n + r->n) % r->n);
}

void oc_coll_ring_run(const struct oc_coll_ring *r, int64_t S, int rs, int ag)
{
    const int64_t n = r->n;
    if (n < 2)
        return;
    const int do_phase[2] = {rs, ag};
    if (r->coarse) {
        /* collective.h: one message of everything this member sends, then
         * the latencies of the steps it replaces and the reductions the
         * steps' transfers would not have hidden. */
        int64_t total = 0, steps = 0;
        double reduce_s = 0;
        for (int ph = 0; ph < 2; ph++)
            for (int64_t k = 0; do_phase[ph] && k < n - 1; k++) {
                total += oc_coll_chunk_bytes(S, n, step_chunk(r, ph, k));
                steps++;
                const int64_t c = step_recv_bytes(r, S, k);
                if (ph == 0)
                    reduce_s += oc_coll_reduce(r->tx, c, 2, oc_coll_hop_s(&r->prev, c), 0);
            }
        XBT_DEBUG("coarse ring of %" PRId64 " members: %" PRId64 " steps merged into one "
                  "message of %" PRId64 " bytes", n, steps, total);
        exchange(r, total, -1);
        if (steps > 1 && r->lat_s > 0)
            sg_actor_sleep_for((double)(steps - 1) * r->lat_s);
        if (reduce_s > 0)
            sg_actor_sleep_for(reduce_s);
        return;
    }
    for (int ph = 0; ph < 2; ph++)
        for (int64_t k = 0; do_phase[ph] && k < n - 1; k++)
            exchange(r, oc_coll_chunk_bytes(S, n, step_chunk(r, ph, k)),
                     ph == 0 ? step_recv_bytes(r, S, k) : -1);
}

/* A chain in ring order from the root; chunk by chunk, each member
 * receives from the previous one and passes on to the next. */
static void chain_broadcast(const struct oc_coll_tx *tx, int64_t me, int64_t root, int64_t S)
{
    const int64_t N = tx->g->size;
    const int64_t q = (me - root + N) % N;
    const int64_t next = (me + 1) % N, prev = (me + N - 1) % N;
    struct oc_coll_hop in = {NULL, 1, 0, 0, 1}, out = {NULL, 1, 0, 0, 1};
    if (q > 0)
        in = oc_coll_hop(tx, prev, me);
    if (q < N - 1)
        out = oc_coll_hop(tx, me, next);
    const int64_t C = oc_coll_pipeline_chunks(S, tx->o);
    struct oc_coll_comms sends = {0};
    for (int64_t ch = 0; ch < C; ch++) {
        if (in.mb)
            oc_coll_get(&in);
        if (out.mb)
            oc_coll_comms_push(&sends, oc_coll_put(&out, oc_coll_chunk_bytes(S, C, ch)));
    }
    oc_coll_comms_wait(&sends);
    oc_coll_comms_free(&sends);
}

static int ring_applies(const struct oc_sim_group *g, enum oc_coll_kind kind)
{
    (void)g;
    (void)kind;
    return 1;
}

static double ring_estimate_s(const struct oc_sim_group *g, enum oc_coll_kind kind,
                              double bytes, const struct oc_sim_coll_opts *o)
{
    const int64_t N = g->size;
    const double B = g->ring.bw_Bps, l = g->ring.lat_s;
    if (N < 2)
        return 0;
    /* core/closed_form.h, on the ring's slowest hop */
    const double mem = o ? o->reduce_Bps : 0;
    switch (kind) {
    case OC_COLL_ALLREDUCE: return oc_cf_ring_allreduce_s(N, bytes, B, l, mem);
    case OC_COLL_ALLGATHER: return oc_cf_ring_allgather_s(N, bytes, B, l);
    case OC_COLL_REDUCESCATTER: return oc_cf_ring_reducescatter_s(N, bytes, B, l, mem);
    case OC_COLL_BROADCAST:
    default:
        return oc_cf_chain_broadcast_s(N, bytes, oc_coll_pipeline_chunks((int64_t)bytes, o),
                                       B, l);
    }
}

static void ring_run(const struct oc_coll_tx *tx, int64_t me, const struct oc_coll_call *c)
{
    XBT_DEBUG("%s of %" PRId64 " bytes on %s, member %" PRId64, oc_coll_name(c->kind),
              c->bytes, tx->g->name, me);
    if (c->kind == OC_COLL_BROADCAST) {
        chain_broadcast(tx, me, c->root, c->bytes);
        return;
    }
    const struct oc_coll_ring r = oc_coll_ring_flat(tx, me);
    oc_coll_ring_run(&r, c->bytes, c->kind != OC_COLL_ALLGATHER,
                     c->kind != OC_COLL_REDUCESCATTER);
}

const struct oc_coll_algo oc_coll_ring = {
    .id = OC_SIM_ALGO_RING,
    .name = "ring",
    .applies = ring_applies,
    .estimate_s = ring_estimate_s,
    .run = ring_run,
};
