/* platform.h: the SimGrid platform a simulation runs on: one host per GPU,
 * either generated from a topology (struct oc_topology) or loaded from a
 * user's SimGrid platform XML. It is not the engine (engine.h starts SimGrid
 * and calls these) and it knows nothing of layouts.
 *
 *   // inside a simulation child, after simgrid_init (engine.h does this):
 *   struct oc_sim_platform p = {0};
 *   if (oc_sim_platform_build(&p, &topo, 64, &st) != 0) ...   // or _load_file
 *   sg_host_t h = p.hosts[5];                                 // host "gpu5"
 *   oc_sim_platform_free(&p);
 *
 *   oc_sim_platform_write_xml(stdout, &topo, 64, &st);         // any process
 *
 * Generated platform (XML version 4.1, one zone routed "DijkstraCache", so
 * the file grows linearly with the cards; 1024 cards load in well under a
 * second). G = gpus_per_node, node of GPU i = i / G:
 *
 *   host  gpu<i>      speed OC_SIM_HOST_SPEED_FLOPS, one core
 *   router sw<n>      the node's NVSwitch (nodes holding 2 or more GPUs)
 *   router fabric     the switch fabric between nodes (2 or more nodes)
 *   link  nvl<i>      SPLITDUPLEX, oc_topology_intra_Bps per direction
 *                     (NCCL's achieved figure where the file has one),
 *                     latency intra_latency_s / 2: GPU i <-> sw<n>
 *   link  nic<n>.<k>  SPLITDUPLEX, nic_bandwidth_Bps per direction,
 *                     latency nic_latency_s / 2: NIC k of node n; GPU i
 *                     uses NIC i % nics_per_node
 *   link  up<n>       node n's share of the fabric, latency
 *                     (2*switch_levels - 1) * inter_latency_s / 2. With
 *                     switch_levels > 1 and oversubscription > 1 it is
 *                     SPLITDUPLEX with nics*nic_bandwidth/oversubscription
 *                     per direction, else FATPIPE (latency only).
 *
 * Routes (each one a shortest path of the graph; weights are link counts):
 *   same node:  nvl<a>_UP, nvl<b>_DOWN          latency intra_latency_s
 *   two nodes:  nic<n>.<a%k>_UP, up<n>, up<m>, nic<m>.<b%k>_DOWN
 *               latency nic_latency_s + (2*switch_levels-1)*inter_latency_s
 *               = oc_topology_inter_latency_s(t)
 * Each direction of each link has its own bandwidth, so a ring whose hops
 * use distinct links is uncontended and matches the textbook formula
 * (with the CM02 network model that engine.h selects).
 *
 * The up<n> link approximates a leaf-spine tree: it is node n's fair share
 * of its leaf switch's uplinks when every node of the leaf sends at once.
 * All of a node's off-node traffic crosses it, even traffic to a node on the
 * same leaf (we do not know which nodes share a leaf), and one lone flow is
 * not slowed by it (oc_topology_inter_Bps, by contrast, divides every flow by
 * the oversubscription). The true tree's spine contention between different
 * leaves is not modelled.
 *
 * Compute: every host runs at OC_SIM_HOST_SPEED_FLOPS. The cost model gives
 * compute in seconds; a replay turns t seconds into either
 * sg_actor_execute(t * sg_host_get_speed(host)) (oc_sim_compute_s in
 * engine.h: two concurrent executions on one GPU share it, as two kernels
 * would) or sg_actor_sleep_for(t) (never shared). The host speed is a unit
 * conversion, not a model of the GPU.
 *
 * Twins (for the symmetric fidelity, replay.h): GPU i may get two extra
 * hosts that only it sends to, each reached by one route that leaves
 * through GPU i's own links and comes back through them:
 *   gpu<i>~nv   nvl<i>_UP, nvl<i>_DOWN              (a node of 2+ GPUs)
 *   gpu<i>~net  nic<n>.<i%k>_UP, up<n>, up<n>, nic<n>.<i%k>_DOWN
 *               (2+ nodes; up<n> in its UP then DOWN direction when
 *               SPLITDUPLEX)
 * with the latency of a route to another GPU of the node, or of another
 * node. One message to a twin loads GPU i's outgoing and incoming links
 * as a message to its ring successor and one from its ring predecessor
 * would, when every member of the ring is in the same situation. A third,
 *   gpu<i>~in   up<n> (DOWN), nic<n>.<i%k>_DOWN    (2+ nodes)
 * is reached from the fabric only: a message from GPU j of node n to it
 * leaves through j's NIC and comes into GPU i's NIC as one from GPU j's
 * counterpart on another node to GPU i would.
 *
 * Reduced (for the symmetric fidelity): only the nodes of the twins'
 * GPUs are written (and one more when those are all on one node, so that
 * the route figures between nodes exist), each whole, with the fabric
 * between them; hosts of the other GPUs are NULL. Every kept route is the
 * one of the full platform, and the file grows with the kept nodes, not
 * with the cards: SimGrid's Dijkstra zone checks each new edge against
 * the fabric's list of edges, which made loading 16384 cards cost
 * O(cards^2) (seconds).
 *
 * A user's platform file must name its hosts gpu0..gpu<cards-1>; there is no
 * fallback to "the first hosts" (sg_host_list order is not the user's
 * order), so a file without them is refused with one line.
 */
#ifndef OC_SIM_PLATFORM_H
#define OC_SIM_PLATFORM_H

#include <stdint.h>
#include <stdio.h>

#include <simgrid/forward.h>

#include "status.h"
#include "topology.h"

/* Host speed of a generated platform: 1 TFLOP/s, so 1 s of compute is
 * 1e12 flops. Only a unit conversion (see above). */
#define OC_SIM_HOST_SPEED_FLOPS 1e12

struct oc_sim_platform {
    int64_t cards;         /* GPUs simulated */
    int64_t gpus_per_node; /* node of GPU i = i / gpus_per_node */
    int generated;         /* 1: built from a topology, 0: a user's file */
    int reduced;           /* only some nodes built: hosts[i] NULL for the others */
    sg_host_t *hosts;      /* (cards) host of GPU i, "gpu<i>" */
    /* Generated platforms only (else NULL): the twins of the GPUs asked
     * for (see "Twins" above), NULL for the others. */
    sg_host_t *twin_nv, *twin_net, *twin_in; /* (cards) */
    /* Generated platforms: every route between two GPUs of one node has
     * the same figures, and so has every route between two nodes
     * (routes above); measured once at load (has_* 0: no such pair, or
     * node groups whose links differ, topology.h: SimGrid's per route). */
    int has_intra, has_inter;
    double intra_lat_s, intra_bw_Bps, inter_lat_s, inter_bw_Bps;
};

/* Check that the topology can become a platform for `cards` GPUs (positive
 * sizes and bandwidths, non-negative latencies, switch_levels >= 1,
 * oversubscription >= 1). One line naming the field otherwise. */
int oc_sim_platform_check_topology(const struct oc_topology *t, int64_t cards,
                                   struct oc_status *st);

/* Write the generated platform XML (see the file comment) to f. Needs no
 * SimGrid engine. */
int oc_sim_platform_write_xml(FILE *f, const struct oc_topology *t,
                              int64_t cards, struct oc_status *st);

/* Check a user's platform file before SimGrid sees it (SimGrid aborts the
 * process on a missing file): it exists, is a regular readable file and
 * holds a "<platform" element and the "<!DOCTYPE platform" line SimGrid's
 * parser requires. Needs no SimGrid engine. Other XML errors still abort
 * SimGrid: in a child (engine.h) they become an error line quoting
 * SimGrid's parse error. */
int oc_sim_platform_check_file(const char *path, struct oc_status *st);

/* Generate, load (through a temporary file) and seal the platform; fill p.
 * Needs simgrid_init done and no platform loaded yet: call it through
 * oc_sim_engine_init. */
int oc_sim_platform_build(struct oc_sim_platform *p,
                          const struct oc_topology *t, int64_t cards,
                          struct oc_status *st);
/* The same with twins for the GPUs twins[0..ntwins) (see "Twins");
 * reduced: only the nodes of those GPUs (and one more where they are all
 * on one node), see "Reduced". */
int oc_sim_platform_build_twins(struct oc_sim_platform *p,
                                const struct oc_topology *t, int64_t cards,
                                const int64_t *twins, int64_t ntwins, int reduced,
                                struct oc_status *st);
int oc_sim_platform_write_xml_twins(FILE *f, const struct oc_topology *t,
                                    int64_t cards, const int64_t *twins,
                                    int64_t ntwins, struct oc_status *st);

/* Load a user's platform file and map GPU i to host "gpu<i>" for
 * i < cards; gpus_per_node only says which GPUs share a node (for the
 * hierarchical collectives), 1 when unknown. Same preconditions as
 * oc_sim_platform_build. */
int oc_sim_platform_load_file(struct oc_sim_platform *p, const char *path,
                              int64_t cards, int64_t gpus_per_node,
                              struct oc_status *st);

void oc_sim_platform_free(struct oc_sim_platform *p);

#endif
