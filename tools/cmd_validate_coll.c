/* cmd_validate_coll.c: the bus-bandwidth rows of `ocsim validate`
 * (quantity allreduce_busbw, validate_rows.h): one all-reduce of `bytes`
 * over `cards` GPUs 0..cards-1 in ring order, on the platform the
 * simulator generates from the topology, through the simulator's own
 * collectives (sim/collective.h: the algorithm of column 'collective',
 * auto unless given; the reductions charged at the device's memory
 * bandwidth, and NCCL's latencies and protocols where the topology has
 * its "nccl" section, as sim/replay.c charges a TP or DP all-reduce). The time is
 * turned into nccl-tests' bus bandwidth, algbw * 2(N-1)/N
 * (oc_busbw_allreduce), the figure all_reduce_perf prints. */
#include <stdlib.h>
#include <string.h>

#include "closed_form.h"
#include "collective.h"
#include "cost.h"
#include "engine.h"
#include "validate_rows.h"

struct coll_job {
    const struct vrow *v;
};

struct member {
    const struct oc_sim_group *g;
    int64_t me;
    double bytes;
    struct oc_sim_coll_opts o;
    int rc;
};

static void member_main(void *arg)
{
    struct member *m = arg;
    struct oc_status st = {{0}};
    m->rc = oc_sim_allreduce(m->g, m->me, m->bytes, &m->o, &st);
}

/* In the child: the all-reduce's simulated seconds into out. */
static int coll_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    const struct vrow *v = arg;
    const int64_t n = v->o.cards;
    const struct oc_sim_engine_opts eo = {.topo = &v->o.topo, .cards = n};
    if (oc_sim_engine_init(&eo, st) != 0)
        return -1;
    const struct oc_sim_platform *p = oc_sim_engine_platform();
    int64_t *ranks = oc_xcalloc((size_t)n, sizeof *ranks);
    struct member *m = oc_xcalloc((size_t)n, sizeof *m);
    for (int64_t i = 0; i < n; i++)
        ranks[i] = i;
    struct oc_sim_group g;
    memset(&g, 0, sizeof g);
    int rc = oc_sim_group_init(&g, "validate.allreduce", ranks, n, p, st);
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        m[i] = (struct member){&g, i, v->bytes,
                               {.algo = v->algo,
                                .reduce_Bps = oc_cost_mem_Bps(&v->o.topo),
                                .nccl = v->o.topo.nccl_version > 0,
                                .nvls = v->o.topo.intra_nvls},
                               0};
        oc_sim_actor_create("member", p->hosts[i], member_main, &m[i]);
    }
    if (rc == 0)
        rc = oc_sim_engine_run(st);
    for (int64_t i = 0; rc == 0 && i < n; i++)
        if (m[i].rc != 0)
            rc = oc_fail(st, "the all-reduce of member %lld failed", (long long)i);
    if (rc == 0) {
        const double t = oc_sim_now_s();
        oc_sim_buf_append(out, &t, sizeof t);
    }
    oc_sim_group_free(&g);
    free(m);
    free(ranks);
    return rc;
}

int oc_val_allreduce_busbw(const struct vrow *v, double *busbw_Bps, struct oc_status *st)
{
    struct oc_sim_buf res = {0};
    if (oc_sim_fork_run(coll_child, (void *)v, NULL, &res, st) != 0) {
        oc_sim_buf_free(&res);
        return -1;
    }
    if (res.len != sizeof(double)) {
        oc_sim_buf_free(&res);
        return oc_fail(st, "the simulation returned no result");
    }
    double t;
    memcpy(&t, res.data, sizeof t);
    oc_sim_buf_free(&res);
    if (!(t > 0))
        return oc_fail(st, "the all-reduce took no simulated time");
    *busbw_Bps = oc_busbw_allreduce(v->o.cards, v->bytes, t);
    return 0;
}
