/* nccl_model.c: NCCL's latency and protocol terms of one collective call (see
 * nccl_model.h). Every number is NCCL 2.18's performance model, file
 * src/graph/tuning.cc of github.com/NVIDIA/nccl (tag v2.18.x, the
 * release the Azure nccl-tests runs of validation/ used: 2.18-2.20),
 * transcribed into seconds; the names are NCCL's.
 *
 * Provenance: written down from NCCL's source as recalled, without the file
 * at hand (no network on the machines that wrote them); later sessions
 * recalled the same tables independently (docs/validation.md), which is
 * agreement of memories, not a check. Compare
 * with tuning.cc of the tag before relying on the last digit; the least
 * sure is the tree's network Simple figure (50 us, which NCCL's own comment
 * on the table reproduces: 6.8 + 2 x 256 kB / 12 GB/s = 50.5 us).
 *
 * What ncclTopoTuneModel does with them (as recalled, v2.18), and what of
 * it ocsim takes:
 *   latency  = baseLat[a][p] + steps x hwLat[hw][a][p]: taken. For a ring
 *              across nodes NCCL splits the steps: nInterSteps = 2 x nNodes
 *              (all-reduce) or nNodes - 1 (all-gather, reduce-scatter) at
 *              hwLat[NET] (+ the net's own latency, + its flush for
 *              Simple), the rest at the intra-node hwLat, raised to
 *              getNetOverhead() (1 us on Intel, 2 on AMD CPUs; x3 for
 *              Simple). ocsim's flat ring across nodes puts every step at
 *              hwLat[NET] (it steps in lockstep at its slowest hop); its
 *              two-level ring and its multi-rail ring split them as NCCL
 *              does (oc_nccl_split_steps). NOT taken: the split for the
 *              flat ring, the net overhead, the "plateau effect" of
 *              ncclTopoGetAlgoTime (a multi-node ring Simple all-reduce's
 *              latency x 1.4 on Ampere and later, x 1.9 before, once
 *              S/(nChannels x nRanks) >= 64 bytes: it needs NCCL's channel
 *              count, which ocsim does not keep).
 *   bandwidth = nChannels x the channel's bandwidth (the topology
 *              search's bwIntra, or bwInter above two nodes), then:
 *              ring LL    x 1/4 (x 1/3 inside one node for all-gather,
 *                         reduce-scatter, broadcast), capped at llMaxBw
 *                         (A100 one node 87.7 GB/s, H100 141; as recalled)
 *              ring LL128 x 0.92 (x 0.7 when ppn = ranks / nodes < 2),
 *                         capped at nChannels x perChMaxRingLL128Bw
 *                         (20.0 GB/s a channel on Volta and Ampere, 36.7
 *                         on Hopper)
 *              tree       x 0.92, capped at nChannels x perChMaxTreeBw
 *                         (Ampere 24.0/23.6/17.8, Hopper 38.7/41.4/36.0
 *                         for 1/2/more nodes); LL then x 1/3.8 (capped at
 *                         llMaxBw), LL128 x 120/128 across nodes (7/9 on
 *                         one node, capped at perChMaxTreeLL128Bw);
 *                         x 0.85 more on the tree pattern
 *              then algBw = busBw x nRanks / nSteps for the ring, x 0.5
 *              for the tree, x 5/6 for NVLS.
 *   ocsim takes the ring and tree factors (1/4, 0.92, 1; tree 0.92 with
 *   1/3.8 and 120/128) on its own per-hop bandwidth (the topology's
 *   achieved_Bps, NCCL's per-link NVLink figure times the links, which is
 *   the search's nChannels x bwIntra on a DGX). NOT taken: the 1/3 of
 *   single-node LL all-gathers (ocsim 1/4: LL is the cheapest only below
 *   about 1 MiB there, where latency dominates), the llMaxBw and
 *   per-channel caps (they bind only when the search finds fewer channels
 *   than ocsim's bandwidth implies: on a DGX A100 the ring graph NCCL_DEBUG
 *   prints, as recalled, is 12 channels x 20 GB/s, an LL128 cap of 240
 *   GB/s, above 0.92 x 240; llMaxBw sits
 *   above 1/4 of 240 and of 370.8), LL128's 0.7 when a communicator has one
 *   rank per node, the tree pattern's 0.85, NVLS across nodes (NVLS
 *   tree) and CollNet. NVLS inside a node is taken since the twelfth
 *   session (bw_factor, latencies below). Each is a
 *   gap between this model and NCCL's own, listed in docs/validation.md. */
#include "nccl_model.h"

#include <math.h>

#include "closed_form.h"
#include "status.h"

#define US 1e-6

/* baseLat[algorithm][protocol]: fixed latency of one call, microseconds
 * (tuning.cc, "Latencies in us": Tree {6.8, 14.0, 0}, Ring {6.6, 14.0,
 * 8.4}; LL, LL128, Simple; as recalled, see the file's head). NVLS: {0,
 * 0, 0}, its whole latency in hwLat (below), as recalled from later tags
 * (2.19 onward); v2.18's NVLS entries are not recalled. */
static const double base_lat_us[OC_NCCL_ALGOS][OC_NCCL_PROTOS] = {
    [OC_NCCL_RING] = {6.6, 14.0, 8.4},
    [OC_NCCL_TREE] = {6.8, 14.0, 0.0},
    [OC_NCCL_NVLS] = {0.0, 0.0, 0.0},
};

/* hwLat[hardware][algorithm][protocol]: latency of one step, microseconds
 * (tuning.cc, NCCL_HW_NVLINK and NCCL_HW_NET rows: NVLINK Tree {.6, 1.25,
 * 28}, Ring {.6, 1.9, 3.4}; NET Tree {5.0, 8.5, 50}, Ring {2.7, 4.0,
 * 14.0}; the PCI row, {1.0, 1.9, 28} and {1.0, 2.5, 5.7}, is not used:
 * every shipped node is NVLink). The tree's Simple figure is, by NCCL's
 * comment, "the latency a 256kB chunk, which is ~ base lat + 256k/12GB/s
 * (+ 256k/12GB/s for the network)"; its other comment, "Ring/LL128
 * reflects the latency for the second plateau, not the base latency",
 * says why ring LL128's 1.9 us sits above LL's 0.6. As recalled. */
/* NVLS: the NVLINK row's NVLS entry {0, 0, 25}, charged once per call
 * (NCCL's NVLS latency is intraLat, plus interLat across nodes: no
 * per-step term), the NET row's {0, 0, 0} unused (ocsim's NVLS runs
 * inside one node); as recalled from tags 2.19 onward, the least sure
 * figure of the file: docs/validation.md (twelfth session) shows what the
 * single-node rows say of it. */
static const double nvl_lat_us[OC_NCCL_ALGOS][OC_NCCL_PROTOS] = {
    [OC_NCCL_RING] = {0.6, 1.9, 3.4},
    [OC_NCCL_TREE] = {0.6, 1.25, 28.0},
    [OC_NCCL_NVLS] = {0.0, 0.0, 25.0},
};
static const double net_lat_us[OC_NCCL_ALGOS][OC_NCCL_PROTOS] = {
    [OC_NCCL_RING] = {2.7, 4.0, 14.0},
    [OC_NCCL_TREE] = {5.0, 8.5, 50.0},
    [OC_NCCL_NVLS] = {0.0, 0.0, 0.0},
};

/* The fraction of the link's bandwidth each protocol carries as data
 * (tuning.cc's "various model refinements" of busBw, as recalled; the
 * caps and cases not taken are in the file's head):
 *   ring LL     1/4  (LL sends 8 bytes of data with 8 of flags per 16-byte
 *                    store, and runs on fewer threads; NCCL's factor for
 *                    an all-reduce or any ring across nodes, 1/3 for the
 *                    others inside a node: ocsim takes 1/4 for all)
 *   ring LL128  0.92 (120 bytes of data per 128-byte line; NCCL's 0.92)
 *   ring Simple 1
 *   tree        0.92 on every protocol, then LL 1/3.8, LL128 120/128 (a
 *               tree across nodes; 7/9 on one node is not used: ocsim's
 *               tree runs across nodes only).
 *   NVLS Simple 5/6: NCCL converts an NVLS bus bandwidth into its
 *               algorithm bandwidth with "ratio = 5.0/6.0" (where the ring
 *               takes nRanks/nsteps and the tree 0.5; as recalled, and
 *               written in this file's head by an earlier session before
 *               NVLS was modelled). Its bus bandwidth is nChannels x bw of
 *               the NVLS graph, which the search sizes so that a channel
 *               costs 2 x bw on its head GPU's NVLink and 1 x bw on every
 *               other's (search.cc, ncclTopoSearchTryNvls: "d0 == g ? 2 :
 *               1", as recalled): N channels put (N+1) x bw on each GPU,
 *               the (N+1)/N x S per GPU that ocsim's NVLS moves
 *               (oc_cf_nvls_allreduce_s), so the 5/6 is all that is left
 *               to take. LL and LL128 do not run NVLS (0: not used). */
static const double bw_factor[OC_NCCL_ALGOS][OC_NCCL_PROTOS] = {
    [OC_NCCL_RING] = {1.0 / 4.0, 0.92, 1.0},
    [OC_NCCL_TREE] = {0.92 / 3.8, 0.92 * 120.0 / 128.0, 0.92},
    [OC_NCCL_NVLS] = {0.0, 0.0, 5.0 / 6.0},
};

const char *oc_nccl_proto_name(enum oc_nccl_proto p)
{
    static const char *const names[OC_NCCL_PROTOS] = {"LL", "LL128", "Simple"};
    OC_ASSERT(p >= 0 && p < OC_NCCL_PROTOS);
    return names[p];
}

int oc_nccl_proto_ok(enum oc_nccl_algo a, enum oc_nccl_proto p)
{
    OC_ASSERT(p >= 0 && p < OC_NCCL_PROTOS && a >= 0 && a < OC_NCCL_ALGOS);
    return bw_factor[a][p] > 0;
}

double oc_nccl_wire(enum oc_nccl_proto p, enum oc_nccl_algo a)
{
    OC_ASSERT(oc_nccl_proto_ok(a, p));
    return 1.0 / bw_factor[a][p];
}

double oc_nccl_latency_s(const struct oc_nccl_steps *s, enum oc_nccl_proto p)
{
    OC_ASSERT(s && oc_nccl_proto_ok(s->algo, p) && s->nvl >= 0 && s->net >= 0);
    const int a = s->algo;
    const double nvl = fmax(0.0, nvl_lat_us[a][p] * US - s->nvl_lat_s);
    const double net = fmax(0.0, net_lat_us[a][p] * US - s->net_lat_s);
    return base_lat_us[a][p] * US + (double)s->nvl * nvl + (double)s->net * net;
}

int64_t oc_nccl_ring_steps(enum oc_coll_kind kind, int64_t n)
{
    OC_ASSERT(n >= 1);
    return (kind == OC_COLL_ALLREDUCE ? 2 : 1) * (n - 1);
}

void oc_nccl_split_steps(enum oc_coll_kind kind, int64_t n, int64_t nodes, int64_t *nvl,
                         int64_t *net)
{
    OC_ASSERT(n >= 1 && nodes >= 1 && nvl && net);
    const int64_t k = oc_nccl_ring_steps(kind, n);
    const int64_t x = nodes < 2 ? 0 : kind == OC_COLL_ALLREDUCE ? 2 * nodes : nodes - 1;
    *net = x < k ? x : k;
    *nvl = k - *net;
}

static double plain_ring_s(enum oc_coll_kind kind, int64_t n, double bytes, double bw,
                           double lat, double mem)
{
    switch (kind) {
    case OC_COLL_ALLREDUCE: return oc_cf_ring_allreduce_s(n, bytes, bw, lat, mem);
    case OC_COLL_REDUCESCATTER: return oc_cf_ring_reducescatter_s(n, bytes, bw, lat, mem);
    case OC_COLL_ALLGATHER:
    case OC_COLL_BROADCAST:
    default:
        return oc_cf_ring_allgather_s(n, bytes, bw, lat);
    }
}

double oc_nccl_ring_s(int on, enum oc_coll_kind kind, int64_t n, double bytes,
                      double bw_Bps, double lat_s, double mem_Bps, int across,
                      enum oc_nccl_proto *proto)
{
    if (proto)
        *proto = OC_NCCL_SIMPLE;
    if (!on || n < 2)
        return plain_ring_s(kind, n, bytes, bw_Bps, lat_s, mem_Bps);
    const int64_t k = oc_nccl_ring_steps(kind, n);
    const struct oc_nccl_steps s = {OC_NCCL_RING, across ? 0 : k, across ? k : 0,
                                    lat_s, lat_s};
    double best = INFINITY;
    for (int p = 0; p < OC_NCCL_PROTOS; p++) {
        const double t = plain_ring_s(kind, n, bytes * oc_nccl_wire(p, OC_NCCL_RING),
                                      bw_Bps, lat_s, mem_Bps) +
                         oc_nccl_latency_s(&s, p);
        if (t < best) {
            best = t;
            if (proto)
                *proto = (enum oc_nccl_proto)p;
        }
    }
    return best;
}
