/* collective.h: collectives and point-to-point transfers as real SimGrid
 * messages, called from inside the actor of one group member. Links are
 * shared with everything else in flight, so contention shows. It does not
 * decide which ranks form a group (core/schedule.c does) and it moves no
 * data: the payload is a pointer to a token, the simulated size separate.
 *
 *   // once, after oc_sim_engine_init, shared read-only by the members:
 *   struct oc_sim_group g = {0};
 *   int64_t ranks[8] = {0, 1, 2, 3, 4, 5, 6, 7};           // ring order
 *   if (oc_sim_group_init(&g, "dp.pp0.tp0", ranks, 8,
 *                         oc_sim_engine_platform(), &st) != 0) ...
 *   // in member i's actor:
 *   struct oc_sim_coll_opts o = { .algo = OC_SIM_ALGO_AUTO };
 *   if (oc_sim_allreduce(&g, i, 1e9, &o, &st) != 0) ...      // blocks
 *   // after the simulation:
 *   oc_sim_group_free(&g);
 *
 * Semantics, as with an NCCL communicator: every member calls the same
 * collectives on a group in the same order, and one member never has two
 * collectives of one group in flight at once (an async collective runs in
 * a helper actor; give concurrent ones, say DP gradient buckets, groups of
 * their own names). Then each call completes when that member's part is
 * done, and the simulated clock says when.
 *
 * Mailboxes are named "<group>:<src>><dst>" (global ranks), so traffic of
 * two groups never mixes, and SimGrid matches the messages of one mailbox
 * in FIFO order; both ends of a mailbox issue its messages in the same
 * order because every member runs the same algorithm (the automatic choice
 * depends only on the group and the size). Point-to-point messages use
 * "<channel>:<src>><dst>#<tag>", one mailbox per message, matched by tag
 * like MPI.
 *
 * Sizes: `bytes` is the full buffer S of oc_cf_ring_* (core/closed_form.h):
 * the all-reduce input, the all-gather output, the reduce-scatter input,
 * the broadcast buffer. S is rounded to whole bytes; a ring splits it in N
 * chunks of floor(S*(c+1)/N) - floor(S*c/N) bytes.
 *
 * Reductions: a member that has received a chunk to sum into its own
 * (a ring's reduce-scatter step, a tree node's chunk from its children)
 * runs a memory-bound kernel at opts.reduce_Bps, the device's memory
 * bandwidth (the replay gives oc_cost_mem_Bps of the topology; 0: free),
 * overlapping the transfer as NCCL's fused kernels do: after the chunk
 * arrived it waits for what of the reduction the hop's uncontended
 * transfer time did not hide (oc_cf_reduce_exposed_s, core/closed_form.h,
 * which says why). The transport (coll.h, oc_coll_reduce) charges it, so
 * every algorithm and both fidelities do, and the closed forms include it.
 *
 * Algorithms (N members on M nodes, L per node when every node holds the
 * same number), one file each behind the table of coll.h; their closed
 * forms are in core/closed_form.h:
 *   ring   (coll_ring.c) all-reduce = reduce-scatter then all-gather,
 *          2(N-1) steps of S/N; in a step each member sends to the next
 *          and receives from the previous at once (Patarasuk and Yuan
 *          2009). All-gather and reduce-scatter are N-1 such steps (Thakur
 *          et al. 2005). Uncontended, per-hop latency l and bandwidth B:
 *          2(N-1)/N*S/B + 2(N-1)*l (oc_cf_ring_allreduce_s). Broadcast: a
 *          pipelined chain in ring order from the root (NCCL's ring
 *          broadcast), (N-1 + C-1) * (l + S/(C*B)) for C chunks. Applies
 *          to every kind and group.
 *   hier   (coll_hier.c) two levels: ring reduce-scatter inside each node
 *          (L members), ring all-reduce of the S/L shard among the M
 *          members with the same local index (L rings at once, on their
 *          own NICs when the node has L NICs), ring all-gather inside each
 *          node. Reduce-scatter is the first half (in the node, then the
 *          shard across nodes), all-gather the second in reverse.
 *          Uncontended all-reduce: 2*((L-1)/L*S/Bi + (L-1)*li)
 *                       + 2(M-1)/M*(S/L)/Bn + 2(M-1)*ln.
 *          Needs the same L on every node; not for broadcast.
 *   tree   (coll_tree.c) NCCL-style: inside each node a chain from its
 *          first member (the node's leader) to its last; across nodes a
 *          binary tree of the leaders in node order (node k's parent is
 *          node (k-1)/2). All-reduce: the reduction flows up, pipelined in
 *          chunks (opts.chunk_bytes), then the result is broadcast down
 *          the same tree. Reduce-scatter: the same reduce, then a scatter
 *          down (each hop one message of its subtree's S/N shards);
 *          all-gather: a gather up, then the broadcast. A single binary
 *          tree, not NCCL's two complementary trees: the root's links
 *          carry the whole buffer, which matters little for the small
 *          messages the tree is chosen for. All-reduce on any group;
 *          reduce-scatter and all-gather across nodes only.
 *   nvls   (coll_nvls.c) NCCL's NVLS all-reduce (NVLink SHARP): the
 *          NVSwitch reads and sums the members' shards (multimem
 *          ld_reduce) and writes each sum to every member (multimem st),
 *          so each member sends and receives (N+1)/N * S through its
 *          switch link, against 2(N-1)/N * S for the ring, and reduces
 *          nothing itself. Simulated as one exchange in which every member
 *          sends (N+1)/(N(N-1)) * S to each other member (the same bytes
 *          on every link as the switch's traffic); closed form
 *          (N+1)/N * S/B + l (oc_cf_nvls_allreduce_s). All-reduce inside
 *          one node whose switch reduces (opts.nvls), N >= 2.
 *   rails  (coll_rails.c) NCCL's ring across nodes: one ring (channel)
 *          per member of a node, channel c entering each node at local
 *          member c and leaving it from member c-1 through that member's
 *          NIC, S/L per channel. In each of the ring's 2(N-1) steps (N-1
 *          for all-gather and reduce-scatter) member (k, j) sends the
 *          chunks of L-1 channels to (k, j+1) over NVLink and one to
 *          (k+1, j+1) through its NIC, at once: every NIC of the node
 *          carries one channel, the node's L NICs the whole buffer. Closed
 *          form oc_cf_rails_*. Needs the same L >= 2 on every node of two
 *          or more; not for broadcast. Coarse mode merges its steps as
 *          one exchange over NVLink and through the NIC (coll_rails.c).
 * The forced algorithm (opts.algo) applies to every collective it serves
 * on the group (all-reduce, all-gather, reduce-scatter alike; ZeRO's too);
 * where it does not apply, the ring runs.
 *
 * Automatic choice (OC_SIM_ALGO_AUTO), like NCCL's tuner, per collective
 * kind and size: estimate each applicable algorithm from the group's
 * measured routes (oc_sim_coll_estimate_s) and take the fastest, the ring
 * first on ties, then hier, then tree, nvls, rails, rails only where it
 * beats the best of the others by OC_COLL_RAILS_MARGIN (coll.h: on two
 * nodes it and hier are near ties, and a choice switching between them by
 * size put the coarse sweep off its message level). Inside one node the
 * ring and, on a switch that reduces, NVLS (NCCL's tuner, as recalled,
 * takes NVLS wherever its model says it is faster); across nodes the tree wins for small S (fewer latency terms:
 * log2(M) instead of N-1), the hierarchical ring for large S when a node
 * holds several members (only S/L crosses the NICs), the flat ring for
 * large S with one member per node.
 *
 * NCCL's terms (opts.nccl, set from the topology's "nccl" section,
 * core/nccl_model.h): each call takes the protocol (LL, LL128, Simple) whose
 * estimate is the smallest, as NCCL's tuner does from the same tables:
 * the algorithm's closed form at the protocol's bytes on the wire plus
 * NCCL's fixed latency per call and per step (beyond the route's). The
 * member sleeps that latency, then runs the algorithm with every message
 * scaled by the protocol's wire factor (coll.c, oc_coll_cost_s). The
 * automatic choice compares the algorithms with these terms. Broadcast
 * pays none.
 *
 * Coarse mode (opts.coarse): a ring phase of k steps becomes ONE message of
 * all the bytes the member sends in those steps (2(N-1)/N*S for an
 * all-reduce, (N-1)/N*S for all-gather and reduce-scatter) to the next
 * member, then a sleep of (k-1) hop latencies. On an uncontended ring whose
 * hops have the same latency l and bandwidth B, entered by all members at
 * once, the message-level ring takes k*(l + S/(N*B)) and the coarse one
 * l + k*S/(N*B) + (k-1)*l: the same. It is applied to ring phases whose
 * hops all have equal route latency and bandwidth (checked by
 * oc_sim_group_init), else the message-level ring runs. Under contention
 * or skewed arrival it is an approximation (a member then waits only for
 * its neighbours). The tree and the broadcast always run message by
 * message.
 */
#ifndef OC_SIM_COLLECTIVE_H
#define OC_SIM_COLLECTIVE_H

#include <stdint.h>

#include <simgrid/forward.h>

#include "platform.h"
#include "schedule.h"
#include "status.h"

enum oc_sim_algo {
    OC_SIM_ALGO_AUTO, /* choose per call from the estimates */
    OC_SIM_ALGO_RING,
    OC_SIM_ALGO_TREE,
    OC_SIM_ALGO_HIER,
    OC_SIM_ALGO_NVLS,  /* in-switch reduction inside a node (coll_nvls.c) */
    OC_SIM_ALGO_RAILS, /* NCCL's ring, one channel per NIC (coll_rails.c) */
    OC_SIM_ALGO_COUNT
};

/* "auto", "ring", "tree", "hier", "nvls", "rails" (for a --collective flag). */
const char *oc_sim_algo_name(enum oc_sim_algo a);
int oc_sim_algo_from_name(const char *s, enum oc_sim_algo *a,
                          struct oc_status *st);

/* Pipelining defaults for the tree and the broadcast: chunks of at least
 * 512 KiB (NCCL's default buffer of 4 MiB in 8 slots), at most 64 chunks. */
#define OC_SIM_CHUNK_BYTES (512.0 * 1024)
#define OC_SIM_MAX_CHUNKS 64

struct oc_sim_coll_opts {
    enum oc_sim_algo algo; /* for every collective it serves; AUTO (0) by default */
    int coarse;            /* merge ring steps (see above) */
    double chunk_bytes;    /* tree/broadcast pipeline chunk; 0: default */
    int64_t max_chunks;    /* cap on the chunk count; 0: default */
    double reduce_Bps;     /* memory bandwidth of the reductions; 0: free */
    int nccl;              /* charge NCCL's latencies and protocols (see below) */
    int nvls;              /* the node's switch reduces (topology's
                              intra_node.nvls): NVLS may run */
};

/* Route figures of the hops an algorithm uses: the largest latency, the
 * smallest bandwidth, and whether every hop has the same pair. */
struct oc_sim_hops {
    int64_t count;
    double lat_s;
    double bw_Bps;
    int uniform;
};

/* A communication group: N members in ring order. Filled by
 * oc_sim_group_init, then shared read-only by the member actors. Member i
 * is global GPU ranks[i]; its node is ranks[i] / gpus_per_node. */
struct oc_sim_group {
    char name[96];        /* unique per group instance, e.g. "tp.3" */
    int64_t size;         /* N */
    int64_t *ranks;       /* (N) global GPU index of member i */
    sg_host_t *hosts;     /* (N) host of member i */
    int64_t *node;        /* (N) member i's node, numbered 0..M-1 in order
                             of first appearance */
    int64_t *local;       /* (N) member i's index among its node's members */
    int64_t nodes;        /* M */
    int64_t per_node;     /* L when every node holds L members, else 0 */
    int64_t *node_first;  /* (M+1) node k's members are */
    int64_t *node_members;/* node_members[node_first[k] .. node_first[k+1]) */
    struct oc_sim_hops ring;  /* member i -> i+1, all i */
    struct oc_sim_hops intra; /* hier: hops of the rings inside nodes */
    struct oc_sim_hops inter; /* hier: hops of the rings across nodes */
    struct oc_sim_hops tree;  /* tree: leader parent <-> child hops */
};

/* Needs the engine's platform loaded (oc_sim_engine_init); call it before
 * simgrid runs or from an actor. ranks: distinct GPUs < p->cards. */
int oc_sim_group_init(struct oc_sim_group *g, const char *name,
                      const int64_t *ranks, int64_t n,
                      const struct oc_sim_platform *p, struct oc_status *st);
void oc_sim_group_free(struct oc_sim_group *g);

/* Estimated time of a collective of `kind` and `bytes` with algorithm a
 * (not AUTO) from the group's hop figures, ignoring contention: the
 * algorithm's closed form (coll.h), with NCCL's terms under o->nccl; -1
 * when a does not apply to the kind
 * or the group. */
double oc_sim_coll_estimate_s(const struct oc_sim_group *g, enum oc_coll_kind kind,
                              enum oc_sim_algo a, double bytes,
                              const struct oc_sim_coll_opts *o);
/* The algorithm that runs when a (AUTO or forced) is asked (see above). */
enum oc_sim_algo oc_sim_coll_choose(const struct oc_sim_group *g, enum oc_coll_kind kind,
                                    enum oc_sim_algo a, double bytes,
                                    const struct oc_sim_coll_opts *o);

/* Collectives, called by member `me` (0 <= me < N) from its actor; block
 * until that member's part is done. -1 only on bad arguments (a negative
 * size, a broadcast root out of range). NULL opts: defaults. The four
 * named calls are oc_sim_collective with their kind. */
int oc_sim_collective(const struct oc_sim_group *g, int64_t me, enum oc_coll_kind kind,
                      double bytes, int64_t root, const struct oc_sim_coll_opts *o,
                      struct oc_status *st);
int oc_sim_allreduce(const struct oc_sim_group *g, int64_t me, double bytes,
                     const struct oc_sim_coll_opts *o, struct oc_status *st);
int oc_sim_allgather(const struct oc_sim_group *g, int64_t me, double bytes,
                     const struct oc_sim_coll_opts *o, struct oc_status *st);
int oc_sim_reducescatter(const struct oc_sim_group *g, int64_t me,
                         double bytes, const struct oc_sim_coll_opts *o,
                         struct oc_status *st);
int oc_sim_broadcast(const struct oc_sim_group *g, int64_t me, int64_t root,
                     double bytes, const struct oc_sim_coll_opts *o,
                     struct oc_status *st);

/* Point-to-point on a named channel ("pp" for pipeline traffic, say)
 * between global ranks; one message per (channel, src, dst, tag). The send
 * returns at once with a comm to wait for (or NULL and st->msg on a
 * negative size); the receive blocks until the message is there and fails
 * when the sender's size differs from `bytes` (pass bytes < 0 to accept
 * any size). The receiver frees the payload. */
sg_comm_t oc_sim_send_async(const char *channel, int64_t src, int64_t dst,
                            int64_t tag, double bytes, struct oc_status *st);
int oc_sim_recv(const char *channel, int64_t src, int64_t dst, int64_t tag,
                double bytes, struct oc_status *st);
/* Wait for sends from oc_sim_send_async (NULL entries are skipped). */
void oc_sim_wait_all(sg_comm_t *comms, int64_t n);

#endif
