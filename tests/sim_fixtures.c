/* sim_fixtures.c: the test platform and the simulation jobs the suites
 * of sim/ share (see sim_fixtures.h). */
#define _POSIX_C_SOURCE 200809L
#include "sim_fixtures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "test_util.h"

struct oc_topology topo(int64_t gpus_per_node, int64_t nics,
                        int64_t levels, double oversub)
{
    struct oc_topology t;
    memset(&t, 0, sizeof t);
    strcpy(t.name, "test");
    t.gpus_per_node = gpus_per_node;
    t.intra_bandwidth_Bps = BI;
    t.intra_latency_s = LI;
    t.nics_per_node = nics;
    t.nic_bandwidth_Bps = BN;
    t.nic_latency_s = 3e-6;
    t.inter_latency_s = 1e-6;
    t.switch_levels = levels;
    t.oversubscription = oversub;
    return t;
}

/* ---- one simulation job, run in a child --------------------------------- */

struct member {
    const struct job *j;
    const struct oc_sim_group *g;
    int64_t me;
    double end_s;
    int rc;
    struct oc_status st;
};

static void async_allreduce(void *arg)
{
    struct member *m = arg;
    m->rc = oc_sim_allreduce(m->g, m->me, m->j->bytes, &m->j->opts, &m->st);
}

static void member_main(void *arg)
{
    struct member *m = arg;
    const struct job *j = m->j;
    const struct oc_sim_group *g = m->g;
    const int64_t reps = j->repeat > 0 ? j->repeat : 1;
    for (int64_t r = 0; r < reps && m->rc == 0; r++) {
        switch (j->kind) {
        case JOB_ALLREDUCE:
            m->rc = oc_sim_allreduce(g, m->me, j->bytes, &j->opts, &m->st);
            break;
        case JOB_ALLGATHER:
            m->rc = oc_sim_allgather(g, m->me, j->bytes, &j->opts, &m->st);
            break;
        case JOB_REDUCESCATTER:
            m->rc = oc_sim_reducescatter(g, m->me, j->bytes, &j->opts, &m->st);
            break;
        case JOB_BROADCAST:
            m->rc = oc_sim_broadcast(g, m->me, 0, j->bytes, &j->opts, &m->st);
            break;
        case JOB_P2P:
            if (m->me == 0) {
                sg_comm_t c = oc_sim_send_async("pp", g->ranks[0], g->ranks[1], 7,
                                                j->bytes, &m->st);
                if (!c)
                    m->rc = -1;
                else
                    oc_sim_wait_all(&c, 1);
            } else if (m->me == 1) {
                m->rc = oc_sim_recv("pp", g->ranks[0], g->ranks[1], 7, j->recv_bytes,
                                    &m->st);
            }
            break;
        case JOB_ASYNC: {
            struct oc_sim_async *a =
                oc_sim_async_start("async", g->hosts[m->me], async_allreduce, m);
            oc_sim_compute_s(j->compute_s);
            oc_sim_async_wait(a);
            break;
        }
        case JOB_DEADLOCK:
            m->rc = oc_sim_recv("nobody", 999, g->ranks[m->me], 0, -1, &m->st);
            break;
        default:
            break;
        }
    }
    m->end_s = oc_sim_now_s();
}

static int run_job(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    const struct job *j = arg;
    struct job_result r;
    memset(&r, 0, sizeof r);
    if (j->kind == JOB_ABORT)
        abort();
    struct oc_sim_engine_opts eo = {.topo = j->topo, .cards = j->cards,
                                    .platform_file = j->platform_file,
                                    .cfg = j->cfg, .n_cfg = j->n_cfg};
    if (oc_sim_engine_init(&eo, st) != 0)
        return -1;
    const struct oc_sim_platform *p = oc_sim_engine_platform();
    int64_t ranks[16];
    for (int64_t i = 0; i < j->n; i++)
        ranks[i] = j->have_ranks ? j->ranks[i] : i;
    struct oc_sim_group g;
    if (oc_sim_group_init(&g, "g", ranks, j->n, p, st) != 0)
        return -1;
    if (j->kind == JOB_CHOOSE) {
        r.algo = (int32_t)oc_sim_coll_choose(&g, j->coll, j->opts.algo, j->bytes, &j->opts);
    } else if (j->kind == JOB_ESTIMATE) {
        r.estimate_s = oc_sim_coll_estimate_s(&g, j->coll, j->opts.algo, j->bytes, &j->opts);
    } else {
        struct member m[16];
        memset(m, 0, sizeof m);
        for (int64_t i = 0; i < j->n; i++) {
            m[i] = (struct member){.j = j, .g = &g, .me = i};
            oc_sim_actor_create("member", g.hosts[i], member_main, &m[i]);
        }
        if (oc_sim_engine_run(st) != 0)
            return -1;
        for (int64_t i = 0; i < j->n; i++) {
            r.time_s = fmax(r.time_s, m[i].end_s);
            if (m[i].rc != 0 && r.failed++ == 0)
                snprintf(r.msg, sizeof r.msg, "%s", m[i].st.msg);
        }
    }
    oc_sim_group_free(&g);
    oc_sim_buf_append(out, &r, sizeof r);
    return 0;
}

/* Run a job in a child; 0 and *r filled, or -1 and st->msg. */
int sim(const struct job *j, struct job_result *r, struct oc_status *st)
{
    struct oc_sim_buf buf = {0};
    struct oc_sim_fork_opts fo = {.wall_limit_s = 60};
    int rc = oc_sim_fork_run(run_job, (void *)j, &fo, &buf, st);
    if (rc == 0) {
        CU_ASSERT_EQUAL_FATAL(buf.len, sizeof *r);
        memcpy(r, buf.data, sizeof *r);
    }
    oc_sim_buf_free(&buf);
    return rc;
}

/* A job that must succeed; returns its time. */
double sim_time(const struct job *j)
{
    struct job_result r;
    struct oc_status st = {{0}};
    int rc = sim(j, &r, &st);
    if (rc != 0)
        fprintf(stderr, "\n  simulation failed: %s\n", st.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    if (r.failed)
        fprintf(stderr, "\n  member failed: %s\n", r.msg);
    CU_ASSERT_EQUAL(r.failed, 0);
    return r.time_s;
}

int one_line(const char *s)
{
    return s[0] != '\0' && strchr(s, '\n') == NULL;
}
