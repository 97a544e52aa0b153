/* coll.h: the table of collective algorithms (one descriptor per
 * algorithm, one file each: coll_ring.c, coll_hier.c, coll_tree.c,
 * coll_nvls.c, coll_rails.c; the symmetric fidelity's checks, coll_sym.c) and the
 * transport their messages go through. Internal to sim/: collective.c runs
 * a call in full fidelity, replay.c in fast fidelity; both pick the
 * algorithm here. It does not build groups (collective.c does) or know of
 * schedules and NIC sharing (replay_setup.c computes the factors it passes in).
 *
 *   struct oc_coll_tx tx;                 // once per group (and options)
 *   oc_coll_tx_init(&tx, &g, NULL, &opts);      // full: messages as they are
 *   oc_coll_tx_init(&tx, &g, factors, &opts);   // fast: scaled across nodes
 *   if (oc_coll_run(&tx, me, OC_COLL_REDUCESCATTER, 1e9, 0, &st) != 0) ...
 *   // what that picks, and what it costs without contention:
 *   const struct oc_coll_algo *a =
 *       oc_coll_pick(&g, OC_COLL_REDUCESCATTER, OC_SIM_ALGO_AUTO, 1e9, &opts);
 *   double t = a->estimate_s(&g, OC_COLL_REDUCESCATTER, 1e9, &opts);
 *
 * A descriptor gives the algorithm's name, when it applies (which
 * collective kinds, which group shapes), its closed-form estimate
 * (core/closed_form.h, on the group's hop figures, ignoring contention)
 * and its run. The run is written once for both fidelities: it sends
 * every message through an oc_coll_hop of the transport, which knows the
 * mailbox ("<group>:<src>><dst>", global ranks) and the hop's scale (1 in
 * full fidelity; in fast fidelity the NIC-sharing factor of a hop across
 * nodes, replay.h), and the transport says where the coarse ring applies
 * (route figures, and in fast fidelity the scales, equal on every hop).
 * The transport also charges the reductions (oc_coll_reduce, the closed
 * forms' oc_cf_reduce_exposed_s), so every algorithm, in both fidelities,
 * charges them alike.
 *
 * Choosing (oc_coll_pick): a forced algorithm runs where it applies, the
 * ring elsewhere (the ring applies to every kind and group). AUTO takes the
 * smallest estimate among the applicable algorithms, in table order on
 * ties (ring, hier, tree, nvls, rails). New algorithm:
 * a file with its descriptor, a row in the table (coll.c), an enum value
 * and its closed form in core/closed_form.c; nothing else switches on it.
 *
 * Identical runs: the process records, over every automatic choice since
 * oc_coll_same_reset, which forced algorithms would have chosen the same
 * (oc_coll_same_as_auto: bit 1 << enum oc_sim_algo). The choice is the only
 * place a forced algorithm enters a simulation (replay.c passes it nowhere
 * else), so a replay under AUTO whose bit for X stayed set is, decision
 * for decision, the replay the layout with X forced would run: the sweep
 * shares its result instead of simulating it again (sim/replay.h).
 */
#ifndef OC_SIM_COLL_H
#define OC_SIM_COLL_H

#include <stdint.h>

#include <simgrid/forward.h>

#include "closed_form.h"
#include "collective.h"
#include "schedule.h"
#include "status.h"

struct oc_coll_algo;

/* Symmetric fidelity (replay.h): one ring step of the one simulated
 * member as ONE message to its twin host (platform.h), through its own
 * outgoing and incoming links, `scale` times the bytes. A receiver actor
 * on the twin (oc_coll_loop_main) takes each message; `go` wakes it. */
struct oc_coll_loop {
    sg_mailbox_t mb;
    sg_sem_t go;
    int64_t scale;
    int stop;
};
/* The twin's receiver (arg: its struct oc_coll_loop), an actor. */
void oc_coll_loop_main(void *arg);
/* From the simulated member's actor: the receiver leaves. */
void oc_coll_loop_stop(struct oc_coll_loop *L);
/* One step of `bytes` (times the loop's scale) on the loop, not waited for
 * (the multi-rail ring sends on two loops at once). */
sg_comm_t oc_coll_loop_put(struct oc_coll_loop *L, int64_t bytes);
/* One ring step of `bytes` (times the loop's scale) on the loop; blocks. */
void oc_coll_loop_send(struct oc_coll_loop *L, int64_t bytes);

/* Symmetric fidelity: a ring step whose real hop crosses nodes while the
 * hop to the image of its successor does not (a flat ring across nodes
 * with several members per node, the images one node's members): the
 * step is received on the receiver's ~in twin host (platform.h), so it
 * leaves through the sender's NIC and comes in through the receiver's
 * as the real one does. A receiver actor there (oc_coll_in_main) takes
 * each step from mailbox mb (set before go) and releases done. */
struct oc_coll_in {
    sg_mailbox_t mb;
    sg_sem_t go, done;
    int stop;
};
void oc_coll_in_main(void *arg);
void oc_coll_in_stop(struct oc_coll_in *I);

/* How the messages of one group's collectives are sent. */
struct oc_coll_tx {
    const struct oc_sim_group *g;
    const int64_t *scale; /* (N) member i's NIC-sharing factor, or NULL */
    /* (N) symmetric fidelity: the factors the messages' bytes are scaled
     * by (the lockstepped flows of every replica on the NIC), where they
     * differ from scale (which still times the reductions' hiding and
     * decides the coarse rings, as in fast fidelity); NULL: scale */
    const int64_t *flow_scale;
    const struct oc_sim_coll_opts *o; /* coarse, chunking */
    /* coarse rings allowed on: the flat ring, rings inside nodes, rings
     * across nodes (opts.coarse and equal hops) */
    int coarse_ring, coarse_intra, coarse_inter;
    /* and the multi-rail ring's steps (coll_rails.c): opts.coarse, equal
     * hops inside and across nodes, equal scales on its hops across */
    int coarse_rails;
    /* Symmetric fidelity, on a group with members that are not simulated
     * (NULL otherwise): image[i] is the member index of member i's
     * replica-0 image (i for a simulated member). A simulated member's
     * ring step goes to the image of its successor on that ring and comes
     * from the image of its predecessor; where that image is the member
     * itself, the step goes to its loop of the hop's kind, loop_nv[i]
     * (inside a node) or loop_net[i] (across nodes). Only the ring and the
     * hierarchical ring run so (oc_coll_sym_ok). */
    const int64_t *image;
    struct oc_coll_loop *const *loop_nv, *const *loop_net; /* (N) */
    /* (N) member i's receiver on its ~in twin, where a ring of the
     * algorithm brings it a step across nodes from an image on its own
     * node (oc_coll_sym_loops bit 2), else NULL */
    struct oc_coll_in *const *in;
};

/* The rings an algorithm runs: the flat ring of the group, the ring inside
 * each node, the ring across nodes of the members with one local index
 * (only where every node holds as many members), and the multi-rail ring's
 * hop across nodes, (k, j) -> (k+1, j+1) (coll_rails.c; every node as many
 * members). */
enum oc_coll_ring_kind {
    OC_COLL_RING_FLAT,
    OC_COLL_RING_INTRA,
    OC_COLL_RING_INTER,
    OC_COLL_RING_DIAG
};
/* Member i's successor (d = +1) or predecessor (d = -1) on its ring of
 * kind k; i itself on a ring of one. */
int64_t oc_coll_ring_nbr(const struct oc_sim_group *g, enum oc_coll_ring_kind k,
                         int64_t i, int d);

/* Can the symmetric fidelity run algorithm a on g, image as in struct
 * oc_coll_tx (replay_sym.c's file comment has the argument)? On every ring
 * of a (a: the ring, the hierarchical ring (intra, inter), the multi-rail
 * ring (intra, diag); NVLS only where no member is an image of another or
 * all are images of one, its exchange then one loop step; else 0): every member's hop
 * to its successor crosses nodes as its image's does; for every simulated
 * member i, the image y of its successor has the image of y's predecessor
 * i, and the hop i -> y crosses nodes as i's real hop does, or i's real
 * hop crosses and y is on i's node (the step then goes to y's ~in twin,
 * struct oc_coll_in). */
int oc_coll_sym_ok(const struct oc_sim_group *g, const struct oc_coll_algo *a,
                   const int64_t *image);
/* The loops simulated member i needs (bit 0: inside a node, bit 1: across
 * nodes): where the image of its successor on a ring of two or more that
 * the ring, the hierarchical ring or the multi-rail ring runs is i itself
 * (NVLS: bit 0 where every member's image is i); bit 2: its ~in
 * receiver, where its real predecessor on such a ring is on another node
 * and that one's image (not i) on i's. */
int oc_coll_sym_loops(const struct oc_sim_group *g, const int64_t *image, int64_t i);

/* o must outlive tx; scale (when not NULL) holds g->size factors >= 1. */
void oc_coll_tx_init(struct oc_coll_tx *tx, const struct oc_sim_group *g,
                     const int64_t *scale, const struct oc_sim_coll_opts *o);

/* One direction between two members: the mailbox, the scale of what goes
 * over it, and its route's latency and bandwidth (which time how much of a
 * reduction the transfer hides). */
struct oc_coll_hop {
    sg_mailbox_t mb;
    int64_t scale;
    double lat_s, bw_Bps;
    int64_t flow; /* what the bytes sent are scaled by (0: scale) */
};

struct oc_coll_hop oc_coll_hop(const struct oc_coll_tx *tx, int64_t from,
                               int64_t to);
/* The same, scaled and timed as a hop across nodes whatever the nodes of
 * from and to (symmetric fidelity: a step to an ~in twin). Between two
 * members of one node its mailbox is not oc_coll_hop's (name + "~in"): the
 * multi-rail ring sends both to one image, over NVLink and to its ~in twin. */
struct oc_coll_hop oc_coll_hop_across(const struct oc_coll_tx *tx, int64_t from,
                                      int64_t to);
/* Seconds `bytes` (times the hop's scale) take over the hop, uncontended. */
double oc_coll_hop_s(const struct oc_coll_hop *h, int64_t bytes);
/* The reduction after a chunk of `bytes` arrived (collective.h): sums
 * `reads` chunks (the received ones and the member's own) into one, and
 * waits for what hidden_s (the slowest incoming hop's oc_coll_hop_s) did
 * not hide (oc_cf_reduce_exposed_s at tx->o->reduce_Bps). Returns those
 * seconds; sleeps them unless sleep is 0 (the coarse ring adds them up). */
double oc_coll_reduce(const struct oc_coll_tx *tx, int64_t bytes, int64_t reads,
                      double hidden_s, int sleep);
/* Send `bytes` (times the hop's scale) without waiting; receive (blocking
 * or not) the next message of the hop. */
sg_comm_t oc_coll_put(const struct oc_coll_hop *h, int64_t bytes);
void oc_coll_get(const struct oc_coll_hop *h);
sg_comm_t oc_coll_get_async(const struct oc_coll_hop *h);

/* Outstanding comms of one member, waited for together. */
struct oc_coll_comms {
    sg_comm_t *c;
    int64_t n, cap;
};
void oc_coll_comms_push(struct oc_coll_comms *cs, sg_comm_t c);
void oc_coll_comms_wait(struct oc_coll_comms *cs);
void oc_coll_comms_free(struct oc_coll_comms *cs);

/* Bytes of chunk c of S cut in n: floor(S(c+1)/n) - floor(Sc/n). */
int64_t oc_coll_chunk_bytes(int64_t S, int64_t n, int64_t c);
/* Pipeline chunks of the tree and the chain (collective.h's defaults). */
int64_t oc_coll_pipeline_chunks(int64_t S, const struct oc_sim_coll_opts *o);

/* Members per node: node k's count, and its j-th member's index. */
int64_t oc_coll_node_count(const struct oc_sim_group *g, int64_t k);
int64_t oc_coll_node_member(const struct oc_sim_group *g, int64_t k, int64_t j);

/* The closed forms' view of a group: `per_node` members on each of its
 * nodes, the given hops inside and between nodes, the reductions at o's
 * reduce_Bps (o may be NULL: free). */
struct oc_cf_levels oc_coll_levels(const struct oc_sim_group *g,
                                   int64_t per_node,
                                   const struct oc_sim_hops *intra,
                                   const struct oc_sim_hops *inter,
                                   const struct oc_sim_coll_opts *o);

/* ---- rings (coll_ring.c; the hierarchical algorithm runs them too) ---- */

/* One ring seen from one member. */
struct oc_coll_ring {
    const struct oc_coll_tx *tx;
    int64_t n, pos;
    struct oc_coll_hop next, prev; /* to the next member, from the previous */
    int coarse;   /* merge the steps (asked, and the hops equal) */
    double lat_s; /* hop latency, slept for the merged steps */
    struct oc_coll_loop *loop; /* symmetric fidelity: the step's loop */
    struct oc_coll_in *in;     /* symmetric fidelity: prev's steps come to
                                  the ~in twin (struct oc_coll_in) */
};

/* The flat ring of the group, the ring inside me's node, the ring across
 * nodes of the members with me's local index. */
struct oc_coll_ring oc_coll_ring_flat(const struct oc_coll_tx *tx, int64_t me);
struct oc_coll_ring oc_coll_ring_intra(const struct oc_coll_tx *tx, int64_t me);
struct oc_coll_ring oc_coll_ring_inter(const struct oc_coll_tx *tx, int64_t me);
/* Reduce-scatter steps (rs, each with its reduction) then all-gather steps
 * (ag) of S bytes. */
void oc_coll_ring_run(const struct oc_coll_ring *r, int64_t S, int rs, int ag);

/* ---- the table --------------------------------------------------------- */

struct oc_coll_call {
    enum oc_coll_kind kind;
    int64_t bytes; /* S (collective.h), whole bytes */
    int64_t root;  /* broadcast: the root's member index */
};

struct oc_coll_algo {
    enum oc_sim_algo id;
    const char *name; /* the --collective value */
    /* Serves `kind` on g? */
    int (*applies)(const struct oc_sim_group *g, enum oc_coll_kind kind);
    /* Seconds of one call of `bytes` from g's hop figures, uncontended
     * (only where it applies). */
    double (*estimate_s)(const struct oc_sim_group *g, enum oc_coll_kind kind,
                         double bytes, const struct oc_sim_coll_opts *o);
    /* Member me's part of the call, in either fidelity (tx). */
    void (*run)(const struct oc_coll_tx *tx, int64_t me,
                const struct oc_coll_call *c);
};

extern const struct oc_coll_algo oc_coll_ring, oc_coll_hier, oc_coll_tree, oc_coll_nvls,
    oc_coll_rails;

/* AUTO takes the multi-rail ring (coll_rails.c) only where its estimate is
 * below (1 - this) x the best of the other algorithms. Measured: on two
 * nodes of 4 H100 (tests/coarse_sweep.sh's ZeRO-3 sweep) the two-level
 * ring and the multi-rail ring come within 0.1-1.5 % of each other, and
 * the smallest estimate then switches between them by message size; a
 * replay whose per-layer gathers (one ZeRO stream) and reduce-scatters
 * (the other) alternate so runs its coarse rings up to 3.4 % of a step
 * off its message-level rings (6e-3 with the multi-rail ring's steps not
 * merged at all), against 1e-4 on the two-level ring alone. Where the
 * multi-rail ring matters (three nodes and more: NCCL's three-node rows,
 * 30 % faster than the two-level ring; the 8-node DP groups of the
 * validation's training rows) it gains far more than 5 %. */
#define OC_COLL_RAILS_MARGIN 0.05

/* Can a run on g for kind under o (may be NULL): a->applies, and for
 * NVLS the switch's reduction (o->nvls). Every choice asks this. */
int oc_coll_usable(const struct oc_coll_algo *a, const struct oc_sim_group *g,
                   enum oc_coll_kind kind, const struct oc_sim_coll_opts *o);
/* The descriptors in tie order; *n gets their count. */
const struct oc_coll_algo *const *oc_coll_table(int64_t *n);
/* The descriptor of algorithm a (not AUTO). */
const struct oc_coll_algo *oc_coll_find(enum oc_sim_algo a);
/* What runs for `kind` of `bytes` on g when `algo` is asked (see above). */
const struct oc_coll_algo *oc_coll_pick(const struct oc_sim_group *g,
                                        enum oc_coll_kind kind,
                                        enum oc_sim_algo algo, double bytes,
                                        const struct oc_sim_coll_opts *o);
/* Seconds of one call of algorithm a (applying to kind on g): its
 * estimate, and under o->nccl NCCL's terms (collective.h) with the
 * cheapest protocol. *wire (bytes on the wire per byte) and *lat_s (the
 * NCCL latency to sleep before the run) may be NULL; without NCCL's terms
 * 1 and 0. */
double oc_coll_cost_s(const struct oc_sim_group *g, const struct oc_coll_algo *a,
                      enum oc_coll_kind kind, double bytes,
                      const struct oc_sim_coll_opts *o, double *wire, double *lat_s);
/* Identical runs (see above): start recording, and what was recorded. */
void oc_coll_same_reset(void);
unsigned oc_coll_same_as_auto(void);

/* Member me's part of one collective through tx: checks the size (and the
 * root of a broadcast), picks with tx->o->algo, runs. 0, or -1 and st. */
int oc_coll_run(const struct oc_coll_tx *tx, int64_t me, enum oc_coll_kind kind,
                double bytes, int64_t root, struct oc_status *st);

#endif
