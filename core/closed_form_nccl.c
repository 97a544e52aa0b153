/* closed_form_nccl.c: the closed forms of NCCL's two algorithms that move
 * data unlike a plain ring: NVLS inside a node (the switch reduces) and the
 * ring across nodes with one channel per NIC (closed_form.h has the
 * formulas and their sources). The simulator's runs (sim/coll_nvls.c,
 * sim/coll_rails.c) are tested against these where nothing is shared. */
#include "closed_form.h"

#include <math.h>

#include "status.h"

double oc_cf_nvls_allreduce_s(int64_t n, double bytes, double bw_Bps, double lat_s)
{
    OC_ASSERT(n >= 1 && bytes >= 0);
    if (n == 1)
        return 0;
    OC_ASSERT(bw_Bps > 0);
    /* S out (the switch's reads) + S/N out (the sum's broadcast), and as
     * much in, on the member's own switch link (full duplex) */
    return (double)(n + 1) / (double)n * bytes / bw_Bps + lat_s;
}

/* One step of the multi-rail ring moving a chunk of c bytes per member. */
static double rails_step_s(const struct oc_cf_levels *v, double c)
{
    const double L = (double)v->per_node;
    const double in = v->intra_lat_s + (L - 1.0) / L * c / v->intra_bw_Bps;
    const double across = v->inter_lat_s + c / (L * v->inter_bw_Bps);
    return fmax(in, across);
}

static void rails_check(const struct oc_cf_levels *v)
{
    OC_ASSERT(v && v->per_node >= 2 && v->nodes >= 2);
    OC_ASSERT(v->intra_bw_Bps > 0 && v->inter_bw_Bps > 0);
}

/* rs reduce-scatter steps (with their reductions) and ag all-gather steps. */
static double rails_s(const struct oc_cf_levels *v, double bytes, int rs, int ag)
{
    rails_check(v);
    const int64_t n = v->per_node * v->nodes;
    const double c = bytes / (double)n, t = rails_step_s(v, c);
    const double steps = (double)(n - 1) * (double)(rs + ag);
    const double red = rs ? (double)(n - 1) * oc_cf_reduce_exposed_s(c, 2, v->mem_Bps, t) : 0;
    return steps * t + red;
}

double oc_cf_rails_allreduce_s(const struct oc_cf_levels *v, double bytes)
{
    return rails_s(v, bytes, 1, 1);
}

double oc_cf_rails_reducescatter_s(const struct oc_cf_levels *v, double bytes)
{
    return rails_s(v, bytes, 1, 0);
}

double oc_cf_rails_allgather_s(const struct oc_cf_levels *v, double bytes)
{
    return rails_s(v, bytes, 0, 1);
}
