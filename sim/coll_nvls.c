/* coll_nvls.c: NCCL's NVLS all-reduce inside one node (coll.h's descriptor
 * oc_coll_nvls): the NVSwitch reads every member's shard and sums it
 * (multimem ld_reduce), then writes each sum to every member (multimem
 * st), the two halves pipelined, so each member sends and receives
 * (N+1)/N * S over its own link to the switch and reduces nothing itself
 * (NVIDIA's NVSwitch 3 / NVLink SHARP; NCCL's NVLS, src/device/all_reduce.h).
 * The platform has no switch that sums, so the member's traffic is sent
 * as one exchange: (N+1)/(N(N-1)) * S to each of the N-1 others at once,
 * the same bytes on every member's up and down link as the switch's
 * traffic (a non-blocking switch: only those links are shared). Closed
 * form oc_cf_nvls_allreduce_s (core/closed_form.h). The switch's own
 * reduction rate is not modelled (no source at hand gives it). */
#define _POSIX_C_SOURCE 200809L

#include "coll.h"

#include <inttypes.h>
#include <math.h>

#include "sim_log.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_coll_nvls, ocsim_coll,
                                "ocsim: NVLS (in-switch) all-reduce");

static int nvls_applies(const struct oc_sim_group *g, enum oc_coll_kind kind)
{
    /* NCCL 2.18 runs NVLS for all-reduce only; across nodes it is NVLS
     * tree, not modelled. Whether the switch reduces: oc_coll_usable. */
    return kind == OC_COLL_ALLREDUCE && g->nodes == 1 && g->size >= 2;
}

static double nvls_estimate_s(const struct oc_sim_group *g, enum oc_coll_kind kind,
                              double bytes, const struct oc_sim_coll_opts *o)
{
    (void)o;
    OC_ASSERT(nvls_applies(g, kind));
    return oc_cf_nvls_allreduce_s(g->size, bytes, g->ring.bw_Bps, g->ring.lat_s);
}

/* Bytes member me sends to each other member for a buffer of S. */
static int64_t nvls_share(int64_t S, int64_t n)
{
    return llround((double)S * (double)(n + 1) / ((double)n * (double)(n - 1)));
}

static void nvls_run(const struct oc_coll_tx *tx, int64_t me, const struct oc_coll_call *c)
{
    const struct oc_sim_group *g = tx->g;
    OC_ASSERT(nvls_applies(g, c->kind));
    const int64_t n = g->size, x = nvls_share(c->bytes, n);
    XBT_DEBUG("NVLS all-reduce of %" PRId64 " bytes on %s, member %" PRId64 ": %" PRId64
              " bytes to each of %" PRId64, c->bytes, g->name, me, x, n - 1);
    if (tx->image) {
        /* symmetric fidelity, every member's image me (oc_coll_sym_ok):
         * by symmetry what me sends to the others is what its own link
         * brings in, one step to its loop inside the node (coll.h) */
        OC_ASSERT(tx->image[me] == me && tx->loop_nv && tx->loop_nv[me]);
        oc_coll_loop_send(tx->loop_nv[me], (n - 1) * x);
        return;
    }
    struct oc_coll_comms cs = {0};
    for (int64_t j = 0; j < n; j++)
        if (j != me) {
            const struct oc_coll_hop out = oc_coll_hop(tx, me, j);
            oc_coll_comms_push(&cs, oc_coll_put(&out, x));
        }
    for (int64_t j = 0; j < n; j++)
        if (j != me) {
            const struct oc_coll_hop in = oc_coll_hop(tx, j, me);
            oc_coll_comms_push(&cs, oc_coll_get_async(&in));
        }
    oc_coll_comms_wait(&cs);
    oc_coll_comms_free(&cs);
}

const struct oc_coll_algo oc_coll_nvls = {
    .id = OC_SIM_ALGO_NVLS,
    .name = "nvls",
    .applies = nvls_applies,
    .estimate_s = nvls_estimate_s,
    .run = nvls_run,
};
