/* nccl_model.h: what NCCL adds to a collective beyond the wire: a fixed launch
 * latency per call, a software latency per algorithm step, and the
 * protocol's bytes on the wire per byte of data. The numbers are NCCL's
 * own performance model (NCCL 2.18, src/graph/tuning.cc: baseLat, hwLat
 * and the protocol refinements of ncclTopoTuneModel), the model NCCL's
 * tuner uses to choose an algorithm and protocol per call; ocsim takes
 * the cheapest protocol per call the same way. It is not a model of
 * NCCL's channels or NVLS (in-switch reduction), and it does not move
 * data: the simulator's collectives (sim/coll.c) and the closed forms
 * (core/closed_form.c) charge it, the same terms in both.
 *
 *   const struct oc_nccl_steps s = {OC_NCCL_RING, 14, 0, 1e-6, 0};
 *   double t = oc_nccl_latency_s(&s, OC_NCCL_LL128);  // 14 us + 14 x 0.9 us
 *   double w = oc_nccl_wire(OC_NCCL_LL128, OC_NCCL_RING); // 1/0.92
 *
 * A topology opts in with "nccl": {"version": ...} (topology.h); without
 * it (a topology written by hand, a CPU run) nothing is added.
 */
#ifndef OC_NCCL_MODEL_H
#define OC_NCCL_MODEL_H

#include <stdint.h>

#include "schedule.h"

/* NCCL's protocols (src/include/devcomm.h: NCCL_PROTO_LL, _LL128, _SIMPLE). */
enum oc_nccl_proto { OC_NCCL_LL, OC_NCCL_LL128, OC_NCCL_SIMPLE, OC_NCCL_PROTOS };
/* The latency classes of NCCL's table that ocsim's algorithms map to: the
 * ring (ocsim's ring, two-level ring and multi-rail ring), the tree, and
 * NVLS (NCCL_ALGO_NVLS: in-switch reduction, Simple only). */
enum oc_nccl_algo { OC_NCCL_RING, OC_NCCL_TREE, OC_NCCL_NVLS, OC_NCCL_ALGOS };

/* One call's algorithm steps by the fabric they cross, and the route
 * latency each step already pays in the simulation or closed form (the
 * topology's), which NCCL's per-step figure includes. */
struct oc_nccl_steps {
    enum oc_nccl_algo algo;
    int64_t nvl, net;       /* steps over NVLink, over the network */
    double nvl_lat_s, net_lat_s; /* route latency of one such step */
};

const char *oc_nccl_proto_name(enum oc_nccl_proto p);
/* Does NCCL run algorithm a with protocol p? NVLS: Simple only (tuning.cc
 * skips LL and LL128 for NVLS). */
int oc_nccl_proto_ok(enum oc_nccl_algo a, enum oc_nccl_proto p);
/* Bytes on the wire per byte of data (1 / NCCL's bandwidth factor). */
double oc_nccl_wire(enum oc_nccl_proto p, enum oc_nccl_algo a);
/* NCCL's latency of one call beyond the route latency: baseLat of the
 * algorithm and protocol, plus per step what NCCL's hwLat of its fabric
 * exceeds the step's route latency by (never negative). */
double oc_nccl_latency_s(const struct oc_nccl_steps *s, enum oc_nccl_proto p);
/* Ring steps of one collective over n members: 2(n-1) for an all-reduce,
 * n-1 otherwise. */
int64_t oc_nccl_ring_steps(enum oc_coll_kind kind, int64_t n);

/* NCCL's split of a ring's steps across nodes (tuning.cc, as recalled):
 * of the oc_nccl_ring_steps over n ranks on `nodes` nodes, 2 x nodes
 * (all-reduce) or nodes - 1 (the others) at the network's per-step
 * latency, the rest at NVLink's (*net at most all of them; one node:
 * none). */
void oc_nccl_split_steps(enum oc_coll_kind kind, int64_t n, int64_t nodes, int64_t *nvl,
                         int64_t *net);

/* The closed form of a ring collective (core/closed_form.h's
 * oc_cf_ring_*) of S bytes over n members, per-hop bandwidth bw and
 * latency lat, under NCCL's cheapest protocol: min over protocols of the
 * ring at S * wire plus oc_nccl_latency_s, every step on the network when
 * `across` (a ring steps in lockstep at its slowest hop), else on NVLink.
 * *proto (may be NULL) gets the protocol. on == 0: the plain ring. */
double oc_nccl_ring_s(int on, enum oc_coll_kind kind, int64_t n, double bytes,
                      double bw_Bps, double lat_s, double mem_Bps, int across,
                      enum oc_nccl_proto *proto);

#endif
