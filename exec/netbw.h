/* netbw.h: `ocsim-exec --netbw`: the network between nodes, measured with
 * the ranks of a job that spans them, and written into a topology file.
 * What `--calibrate` copies from the base topology (the NICs' bandwidth and
 * latency) is measured here; the two compose:
 *
 *   mpirun -np 8 ocsim-exec --calibrate --layout tp8-pp1-dp1 ... --out c   # one node
 *   mpirun -np 2 --map-by ppr:1:node ocsim-exec --netbw \
 *          --topology c/topology-calibrated.json --out n                   # two nodes
 *   ocsim simulate --topology n/topology-netbw.json ...
 *
 * The measurement is written once, here, over a transport table (struct
 * oc_net_tx) that each backend fills: MPI for the cpu backend
 * (cpu/netbw_mpi.c), NCCL for the cuda backend (cuda/netbw_nccl.c). A
 * backend's hook builds the node map, opens its transport and calls
 * oc_netbw_run:
 *
 *   struct oc_net_map map;
 *   if (oc_net_map_init(&map, ctl, o->ranks_per_node, &st) != 0) ...
 *   struct my_tx x;   ...the backend's transport over the map's nodes...
 *   struct oc_net_tx tx = {&my_tx_ops, &x};
 *   int rc = oc_netbw_run(ctl, o, &map, &tx, NULL, &st);
 *   ...close x...; oc_net_map_free(&map);
 *
 * Nodes: the ranks that share a host name (gethostname, gathered over the
 * control plane; MPI_Get_processor_name is the same name under Open MPI),
 * numbered in the order of their lowest rank, so rank 0 is node 0's local
 * rank 0; or, with ranks_per_node K > 0, each K consecutive ranks form
 * one node (tests on one machine: every group of ranks as its own node).
 * Every node must hold the same number of ranks, and two nodes or more.
 *
 * What it measures, all ranks of the job taking part in the same order
 * (the ranks outside a pair wait at a barrier):
 *   ping-pong   node 0 <-> node 1 (local rank 0 of each), sizes 8 B ..
 *               max_msg_bytes doubling: one-way time = half the mean round
 *               trip; then the 8-byte latency with every other node j
 *               (node 0 <-> node j).
 *   streaming   unidirectional, node 0 -> node 1 by size (a window of
 *               messages in flight, then an acknowledgement, as osu_bw):
 *               bandwidth = bytes moved / time; then at the largest size
 *               node 0 -> every node j, each pair alone.
 *   per rank    (K > 1 ranks per node) at the largest size, local rank i
 *               of node 0 -> local rank i of node 1, each i alone, then
 *               all i at once: what one flow gets, and what K flows get
 *               together (ranks pinned one per NIC tell the NICs apart;
 *               unpinned, the transport chooses and this says what it
 *               chose in aggregate).
 *   all-reduce  over the cross-node groups (local rank i of every node; one
 *               group when K = 1), all groups at once, float sum, sizes as
 *               above: time = the slowest rank's mean; busbw = algbw *
 *               2(n-1)/n with n nodes (nccl-tests, doc/PERFORMANCE.md).
 * Each size's data are checked once after its timed calls (a pattern sent
 * and compared; an all-reduce of small integers whose sum is exact in
 * float): the tables' #wrong column.
 *
 * What is written (oc_netbw_fabric; every other field, "sources" entry and
 * "calibration" figure is the base file's):
 *   nic.bandwidth_Bps  K = 1: the median over node pairs of one flow's
 *                      streaming rate at the largest size; K > 1: the K
 *                      flows' aggregate / min(K, nic.count_per_node), so
 *                      that the simulator's rule (a flow gets min(one NIC,
 *                      all NICs / flows), core/topology.h) gives back what
 *                      K flows of a node measured together.
 *   nic.latency_s      so that the simulator's inter-node latency
 *                      (oc_topology_inter_latency_s: NIC latency plus
 *                      2*switch_levels - 1 hops of inter_node.latency_s)
 *                      is the median 8-byte one-way time over node pairs:
 *                      the base's per-hop latency stays where it fits in
 *   inter_node.latency_s  the measurement, else it becomes 0.
 *   nic.name           "MPI between nodes (measured)" or NCCL's.
 *   nic.count_per_node, inter_node.switch_levels and oversubscription
 *                      stay the base's (two nodes cannot show them).
 * "sources" says where each comes from; the all-reduce's busbw (no field
 * holds it: the simulator derives collectives from the NICs) goes under
 * "_netbw_allreduce", which readers skip.
 *
 * What it is not: nccl-tests or the OSU benchmarks (one pair and one
 * collective, the figures the simulator reads), a measurement of the
 * node's own fabric (that is --calibrate's intra_node), or of
 * contention between many node pairs beyond what the all-reduce shows.
 */
#ifndef OC_EXEC_NETBW_H
#define OC_EXEC_NETBW_H

#include <stdint.h>
#include <stdio.h>

#include "ctl.h"
#include "status.h"
#include "topology.h"

/* ------------------------------------------------------------------ */
/* Nodes                                                                */

#define OC_NET_HOST_MAX 64

struct oc_net_map {
    int nodes, per_node; /* n >= 2 nodes of K ranks each */
    int node, local;     /* this rank's */
    int *rank_of;        /* (nodes x per_node): the rank of (node, local) */
    int consecutive;     /* rank_of[j * K + i] == j * K + i */
    int by_group;        /* nodes are groups of ranks_per_node ranks */
    char (*host)[OC_NET_HOST_MAX]; /* (nodes): each node's host name */
};

/* The map from every rank's host name (hosts: size x OC_NET_HOST_MAX,
 * rank order) or from ranks_per_node (> 0: groups of that many
 * consecutive ranks); pure. -1 with one line: one node, nodes of unequal
 * rank counts, size not a multiple of ranks_per_node. */
int oc_net_map_build(struct oc_net_map *m, int rank, int size, const char *hosts,
                     int64_t ranks_per_node, struct oc_status *st);
/* Collective: gathers the host names over the ctl, then builds. */
int oc_net_map_init(struct oc_net_map *m, struct oc_ctl *c, int64_t ranks_per_node,
                    struct oc_status *st);
void oc_net_map_free(struct oc_net_map *m);

/* ------------------------------------------------------------------ */
/* The transport a backend fills                                        */

/* Every call names world ranks (the ctl's). Seconds are this rank's clock
 * (MPI_Wtime; CUDA events on the transport's stream); a call that waits
 * past the deadline fails with st->msg. A backend's table is static; its
 * state is the ctx of struct oc_net_tx. */
struct oc_net_tx_ops {
    const char *name;   /* "MPI" or "NCCL": the tables' and files' words */
    const char *detail; /* how, one phrase: "MPI_Isend / MPI_Irecv" */
    /* `iters` round trips of `bytes` with peer (`first`: this rank sends
     * first) after two untimed ones; *s = their seconds. */
    int (*pingpong)(void *ctx, int peer, int first, int64_t bytes, int iters, double *s,
                    struct oc_status *st);
    /* `iters` messages of `bytes` to peer (send = 1) or from it (0), at
     * most `window` in flight, then a 4-byte acknowledgement back to the
     * sender; *s = seconds from the first send to the acknowledgement (the
     * sender's; the receiver's is from its first receive posted). */
    int (*stream)(void *ctx, int peer, int send, int64_t bytes, int iters, int window,
                  double *s, struct oc_status *st);
    /* `iters` timed in-place float-sum all-reduces of `bytes` over this
     * rank's cross-node group (local rank i of every node) after two
     * untimed ones; *s = their seconds. */
    int (*allreduce)(void *ctx, int64_t bytes, int iters, double *s, struct oc_status *st);
    /* Untimed, on host memory, for the checks: one message, and one
     * out-of-place all-reduce over the cross-node group. */
    int (*send_host)(void *ctx, int peer, const void *buf, int64_t bytes,
                     struct oc_status *st);
    int (*recv_host)(void *ctx, int peer, void *buf, int64_t bytes, struct oc_status *st);
    int (*allreduce_host)(void *ctx, const float *in, float *out, int64_t count,
                          struct oc_status *st);
};

struct oc_net_tx {
    const struct oc_net_tx_ops *ops;
    void *ctx;
};

/* ------------------------------------------------------------------ */
/* The measurement                                                      */

struct oc_netbw_opts {
    const struct oc_topology *base; /* --topology, loaded */
    const char *base_path;          /* its file (copied, the measured fields
                                       replaced); NULL: no file written */
    const char *out_path;           /* the topology JSON (rank 0 writes it) */
    int64_t ranks_per_node;         /* 0: by host name */
    int64_t max_msg_bytes;          /* largest message, [8 B, 1 GiB] */
    const char *backend;            /* its registry name (the file's words) */
    FILE *log;                      /* rank 0's tables; NULL: none */
};

/* What was measured (every rank holds it after oc_netbw_run). */
struct oc_netbw_result {
    int nodes, per_node, by_group;
    char hosts[256];          /* "a, b, ..." (cut) */
    char date[32];
    const char *transport;    /* the transport's name */
    int64_t max_msg_bytes;    /* the largest size measured */
    double latency_s;         /* median over node pairs: 8-byte one-way */
    double stream_Bps;        /* median over node pairs: one flow's streaming
                                 rate at the largest size */
    double flows_Bps;         /* node 0 -> node 1, per_node flows at once:
                                 all their bytes / the slowest flow's time */
    double flow_lo_Bps, flow_hi_Bps; /* the per-rank flows alone: extremes */
    double pingpong_Bps;      /* S / (t(S) - latency) at the largest ping-pong */
    double allreduce_bytes;   /* the largest all-reduce */
    double allreduce_busbw_Bps;
    double allreduce_latency_s; /* the 8-byte all-reduce's time */
    int64_t wrong;            /* elements that failed the checks, all tables */
};

/* Collective over the ctl's ranks (the map's): measures, prints rank 0's
 * tables to o->log, writes o->out_path from o->base_path (rank 0), fills
 * *r on every rank (r may be NULL). 0, or -1 with the same st->msg on
 * every rank (a transport's error, the data wrong, the file not written). */
int oc_netbw_run(struct oc_ctl *c, const struct oc_netbw_opts *o,
                 const struct oc_net_map *map, const struct oc_net_tx *tx,
                 struct oc_netbw_result *r, struct oc_status *st);

/* The measured fabric over the base (the rules above; pure): nic.bandwidth,
 * nic.latency, inter_node.latency; checked (oc_topology_check). */
int oc_netbw_fabric(const struct oc_topology *base, const struct oc_netbw_result *r,
                    struct oc_topology *out, struct oc_status *st);

/* The base file (base_path) with the fields of oc_netbw_fabric and their
 * sources written to out_path; reloaded with oc_topology_load to check
 * that it parses (netbw_topology.c). */
int oc_netbw_write_topology(const char *out_path, const char *base_path,
                            const struct oc_topology *base,
                            const struct oc_netbw_result *r, const char *backend,
                            struct oc_status *st);

/* The checks' data: element i of member m of a group is (m % 4 + 1) *
 * (i % 13 + 1), so the sum over n members is (i % 13 + 1) times the sum of
 * (m % 4 + 1): exact in float while below 2^24 (n up to 300,000). Byte i
 * of a checked message is (i * 7 + 3) & 0xff. */
float oc_netbw_pattern(int member, int64_t i);
float oc_netbw_pattern_sum(int members, int64_t i);
unsigned char oc_netbw_byte(int64_t i);

#endif
