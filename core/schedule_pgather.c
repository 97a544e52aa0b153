/* schedule_pgather.c: the parameter all-gather's chain of buckets under
 * --overlap-param-gather (see schedule_pgather.h for the source and the
 * ops). What it is not: where the ops go in a rank's list (schedule.c)
 * or their time (the simulator, closed_form.c). */
#include "schedule_pgather.h"

#include <string.h>

#include "memory.h"
#include "placement.h"
#include "schedule_zero.h"
#include "status.h"

int oc_pg_on(const struct oc_layout *l)
{
    const int64_t dg = l->dp * (l->cp > 1 ? l->cp : 1);
    return l->overlap_param_gather && l->zero == 1 && dg > 1;
}

int64_t oc_pg_chain_cap(const struct oc_model *m, const struct oc_layout *l)
{
    return oc_place_chunks_per_stage(l) * oc_dp_buckets_cap(m, l);
}

int64_t oc_pg_chain(const struct oc_model *m, const struct oc_layout *l, int64_t stage,
                    struct oc_pg_item *out)
{
    const int64_t v = oc_place_chunks_per_stage(l), cap = oc_dp_buckets_cap(m, l);
    const int64_t size = oc_dp_bucket_size(l);
    struct oc_dp_bucket *b = oc_xmalloc((size_t)cap * sizeof *b);
    int64_t n = 0;
    for (int64_t c = 0; c < v; c++) {
        /* schedule_bucket.h gives them in firing order, the chunk's last
         * layers first: the forward's order is the reverse */
        const int64_t nb = oc_dp_buckets(m, l, stage, c, size, b);
        for (int64_t j = nb - 1; j >= 0; j--)
            out[n++] = (struct oc_pg_item){c, b[j]};
    }
    free(b);
    return n;
}

static struct oc_op item_op(const struct oc_pg_item *it, int64_t stage,
                            enum oc_op_kind kind)
{
    struct oc_op o;
    memset(&o, 0, sizeof o);
    o.kind = (uint8_t)kind;
    o.phase = OC_PHASE_FWD;
    o.part = OC_PART_ALL;
    o.mb = 0;
    o.stage = (int32_t)stage;
    o.chunk = (int32_t)it->chunk;
    o.layer_first = (int32_t)it->b.layer_first;
    o.layer_count = (int32_t)it->b.layer_count;
    o.count = 1;
    o.peer = -1;
    o.tag = OC_ZERO_STREAM_GATHER;
    return o;
}

struct oc_op oc_pg_gather_op(const struct oc_layout *l, const struct oc_pg_item *it,
                             int64_t stage)
{
    struct oc_op o = item_op(it, stage, OC_OP_COLLECTIVE);
    o.coll = OC_COLL_ALLGATHER;
    o.group = OC_GROUP_DP;
    o.async = 1;
    o.bytes = oc_mem_param_bytes(l).weight * it->b.params;
    return o;
}

struct oc_op oc_pg_wait_op(const struct oc_pg_item *it, int64_t stage)
{
    return item_op(it, stage, OC_OP_WAIT);
}

double oc_pg_chain_exposed_s(const double *gather_s, const double *fwd_s, int64_t n,
                             double arrive_s)
{
    if (n < 1)
        return 0;
    double t = arrive_s, done = gather_s[0], work = 0;
    for (int64_t i = 0; i < n; i++) {
        t = t > done ? t : done; /* the wait before bucket i */
        if (i + 1 < n)
            done = t + gather_s[i + 1]; /* the next gather, issued now */
        t += fwd_s[i];
        work += fwd_s[i];
    }
    return t - arrive_s - work;
}
