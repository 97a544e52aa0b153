/* topology_groups.c: the node groups of a heterogeneous cluster (topology.h,
 * "node_groups"): which group a node or a rank sits on, a group seen as a
 * uniform topology (what a rank's cost model reads), and the composite the
 * group-blind code reads.
 *
 * The composite is the groups' most favourable machine: the highest
 * per-SM rate on the most SMs, the highest efficiency, HBM, NVLink and NIC
 * bandwidths, the lowest latencies, and the smallest memory. Every op costs
 * no more on it than on any group's device (a GEMM: per-SM rate at least
 * any group's, and with at least as many SMs no more waves; a memory-bound
 * kernel: the most bandwidth), so the lower bound (core/bound.c) that
 * reads it stays below every rank's simulated time; a layout whose peak
 * fits its memory fits every device.
 *
 * What it is not: the reader of the file (topology.c) or the simulator's
 * per-node links (sim/platform.c asks oc_topology_group_of_node).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "topology.h"

int oc_topology_group_of_node(const struct oc_topology *t, int64_t node)
{
    OC_ASSERT(node >= 0);
    int64_t first = 0;
    for (int g = 0; g < t->n_groups; g++) {
        first += t->groups[g].nodes;
        if (node < first)
            return g;
    }
    return t->n_groups > 0 ? t->n_groups - 1 : 0;
}

int oc_topology_group_of_rank(const struct oc_topology *t, int64_t rank)
{
    OC_ASSERT(rank >= 0 && t->gpus_per_node >= 1);
    return oc_topology_group_of_node(t, rank / t->gpus_per_node);
}

int64_t oc_topology_group_cards(const struct oc_topology *t)
{
    int64_t n = 0;
    for (int g = 0; g < t->n_groups; g++)
        n += t->groups[g].nodes;
    return n * t->gpus_per_node;
}

const struct oc_device *oc_topology_device_of_rank(const struct oc_topology *t,
                                                   int64_t rank)
{
    if (t->n_groups < 1)
        return &t->device;
    return &t->groups[oc_topology_group_of_rank(t, rank)].device;
}

void oc_topology_group_view(const struct oc_topology *t, int g,
                            struct oc_topology *out)
{
    *out = *t;
    if (t->n_groups < 1)
        return;
    OC_ASSERT(g >= 0 && g < t->n_groups);
    const struct oc_node_group *ng = &t->groups[g];
    out->device = ng->device;
    memcpy(out->intra_name, ng->intra_name, sizeof out->intra_name);
    out->intra_bandwidth_Bps = ng->intra_bandwidth_Bps;
    out->intra_latency_s = ng->intra_latency_s;
    out->intra_achieved_Bps = ng->intra_achieved_Bps;
    memcpy(out->nic_name, ng->nic_name, sizeof out->nic_name);
    out->nic_bandwidth_Bps = ng->nic_bandwidth_Bps;
    out->nic_latency_s = ng->nic_latency_s;
    out->n_groups = 0;
    memset(out->groups, 0, sizeof out->groups);
}

int oc_topology_check_cards(const struct oc_topology *t, int64_t cards,
                            struct oc_status *st)
{
    if (t->n_groups < 1 || cards <= oc_topology_group_cards(t))
        return 0;
    return oc_fail(st, "topology %s: --cards %" PRId64 " exceeds the %" PRId64
                       " GPUs of its node groups",
                   t->name, cards, oc_topology_group_cards(t));
}

double oc_topology_peak_sum(const struct oc_topology *t, int64_t world)
{
    if (t->n_groups < 1)
        return (double)world * t->device.peak_flops_16bit;
    double sum = 0;
    for (int64_t r = 0; r < world; r++)
        sum += oc_topology_device_of_rank(t, r)->peak_flops_16bit;
    return sum;
}

/* "A + B" of the groups' device names, each once. */
static void composite_name(const struct oc_topology *t, char *out, size_t n)
{
    out[0] = '\0';
    for (int g = 0; g < t->n_groups; g++) {
        int seen = 0;
        for (int j = 0; j < g; j++)
            seen |= strcmp(t->groups[j].device.name, t->groups[g].device.name) == 0;
        if (seen)
            continue;
        const size_t k = strlen(out);
        snprintf(out + k, n - k, "%s%s", k ? " + " : "", t->groups[g].device.name);
    }
}

void oc_topology_groups_compose(struct oc_topology *t)
{
    if (t->n_groups < 1)
        return;
    struct oc_device d = t->groups[0].device;
    double per_sm = 0, intra = 0, intra_line = 0, nic = 0;
    double intra_lat = INFINITY, nic_lat = INFINITY;
    for (int g = 0; g < t->n_groups; g++) {
        const struct oc_node_group *ng = &t->groups[g];
        const struct oc_device *x = &ng->device;
        per_sm = fmax(per_sm, x->peak_flops_16bit / (double)x->sm_count);
        d.sm_count = x->sm_count > d.sm_count ? x->sm_count : d.sm_count;
        d.gemm_efficiency = fmax(d.gemm_efficiency, x->gemm_efficiency);
        d.hbm_bandwidth_Bps = fmax(d.hbm_bandwidth_Bps, x->hbm_bandwidth_Bps);
        d.memory_bytes = fmin(d.memory_bytes, x->memory_bytes);
        intra_line = fmax(intra_line, ng->intra_bandwidth_Bps);
        intra = fmax(intra, ng->intra_achieved_Bps > 0 ? ng->intra_achieved_Bps
                                                       : ng->intra_bandwidth_Bps);
        intra_lat = fmin(intra_lat, ng->intra_latency_s);
        nic = fmax(nic, ng->nic_bandwidth_Bps);
        nic_lat = fmin(nic_lat, ng->nic_latency_s);
    }
    d.peak_flops_16bit = per_sm * (double)d.sm_count;
    /* where one group has both the best per-SM rate and the most SMs, its
     * peak as written (per_sm * SMs need not round back to it) */
    for (int g = 0; g < t->n_groups; g++) {
        const struct oc_device *x = &t->groups[g].device;
        if (x->sm_count == d.sm_count && x->peak_flops_16bit / (double)x->sm_count == per_sm)
            d.peak_flops_16bit = x->peak_flops_16bit;
    }
    composite_name(t, d.name, sizeof d.name);
    t->device = d;
    t->intra_bandwidth_Bps = intra_line;
    /* every group's flow rate <= its line <= intra_line */
    t->intra_achieved_Bps = intra < intra_line ? intra : 0;
    t->intra_latency_s = intra_lat;
    t->nic_bandwidth_Bps = nic;
    t->nic_latency_s = nic_lat;
}
