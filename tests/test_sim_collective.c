/* test_sim_collective.c: the SimGrid platform (routes, size), the engine
 * (fork runner, cfg checks, deadlock and crash reports, user platforms) and
 * the collectives as messages (sim/) against closed forms worked out by
 * hand below. Every simulation runs in a child through oc_sim_fork_run:
 * SimGrid allows one engine per process.
 *
 * Test platform (topo() below), numbers picked to keep the hand sums short:
 *   intra node  Bi = 100e9 B/s per direction, li = 2e-6 s GPU to GPU
 *   NIC         Bn = 25e9 B/s per direction, 3e-6 s; fabric 1e-6 s per
 *               switch; one switch level: ln = 3e-6 + 1*1e-6 = 4e-6 s
 *   (two levels: 3e-6 + 3*1e-6 = 6e-6 s)
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "closed_form.h"
#include "collective.h"
#include "engine.h"
#include "platform.h"
#include "test_util.h"
#include "topology.h"

/* Simulated time is deterministic and CM02 gives l + S/B exactly: the
 * closed forms must hold to REL (the plan asks for 1 %; the simulation
 * meets them to rounding, about 1e-15). */
#define REL 1e-6

#define BI 100e9
#define LI 2e-6
#define BN 25e9
#define LN 4e-6

static struct oc_topology topo(int64_t gpus_per_node, int64_t nics,
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

enum job_kind {
    JOB_ALLREDUCE,
    JOB_ALLGATHER,
    JOB_REDUCESCATTER,
    JOB_BROADCAST,
    JOB_P2P,      /* member 0 sends `bytes` to member 1, which expects recv_bytes */
    JOB_DEADLOCK, /* every member waits for a message nobody sends */
    JOB_CHOOSE,   /* no simulation: the algorithm that runs (coll, opts.algo) */
    JOB_ESTIMATE, /* no simulation: oc_sim_coll_estimate_s (coll, opts.algo) */
    JOB_ABORT,    /* the child crashes */
    JOB_ASYNC,    /* an async all-reduce overlapping compute_s of compute */
};

struct job {
    const struct oc_topology *topo;
    int64_t cards;
    const char *platform_file;
    const char *const *cfg;
    int64_t n_cfg;
    enum job_kind kind;
    int64_t n;         /* group members: ranks 0..n-1 unless ranks given */
    int64_t ranks[16];
    int have_ranks;
    double bytes, recv_bytes;
    int64_t repeat;    /* back-to-back calls (default 1) */
    double compute_s;  /* JOB_ASYNC */
    enum oc_coll_kind coll; /* JOB_CHOOSE, JOB_ESTIMATE (0: all-reduce) */
    struct oc_sim_coll_opts opts;
};

struct job_result {
    double time_s;  /* when the last member finished */
    int32_t failed; /* members whose call returned -1 */
    int32_t algo;   /* JOB_CHOOSE */
    double estimate_s; /* JOB_ESTIMATE */
    char msg[256];  /* first failure */
};

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
static int sim(const struct job *j, struct job_result *r, struct oc_status *st)
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
static double sim_time(const struct job *j)
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

static int one_line(const char *s)
{
    return s[0] != '\0' && strchr(s, '\n') == NULL;
}

/* ---- platform ----------------------------------------------------------- */

struct route_result {
    double lat_intra_s, bw_intra_Bps, lat_inter_s, bw_inter_Bps;
    int names_intra, names_inter, names_back; /* 1 when the links are right */
    int64_t hosts;
};

/* Does the route a -> b hold exactly the named links (in any order)? */
static int route_is(const char *a, const char *b, const char *const *names, int n)
{
    xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
    sg_host_get_route(sg_host_by_name(a), sg_host_by_name(b), links);
    int ok = (int)xbt_dynar_length(links) == n;
    for (int i = 0; ok && i < n; i++) {
        int found = 0;
        unsigned k;
        sg_link_t l;
        xbt_dynar_foreach (links, k, l)
            found |= strcmp(sg_link_get_name(l), names[i]) == 0;
        ok = found;
    }
    xbt_dynar_free(&links);
    return ok;
}

static int routes_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    const struct job *j = arg;
    struct oc_sim_engine_opts eo = {.topo = j->topo, .cards = j->cards};
    if (oc_sim_engine_init(&eo, st) != 0)
        return -1;
    const struct oc_sim_platform *p = oc_sim_engine_platform();
    struct route_result r;
    memset(&r, 0, sizeof r);
    r.lat_intra_s = sg_host_get_route_latency(p->hosts[0], p->hosts[1]);
    r.bw_intra_Bps = sg_host_get_route_bandwidth(p->hosts[0], p->hosts[1]);
    r.lat_inter_s = sg_host_get_route_latency(p->hosts[1], p->hosts[6]);
    r.bw_inter_Bps = sg_host_get_route_bandwidth(p->hosts[1], p->hosts[6]);
    static const char *const intra[] = {"nvl0_UP", "nvl1_DOWN"};
    /* GPU 1 uses NIC 1 % 2 = 1 of node 0, GPU 6 NIC 6 % 2 = 0 of node 1. */
    static const char *const inter[] = {"nic0.1_UP", "up0_UP", "up1_DOWN", "nic1.0_DOWN"};
    static const char *const back[] = {"nic1.0_UP", "up1_UP", "up0_DOWN", "nic0.1_DOWN"};
    r.names_intra = route_is("gpu0", "gpu1", intra, 2);
    r.names_inter = route_is("gpu1", "gpu6", inter, 4);
    r.names_back = route_is("gpu6", "gpu1", back, 4);
    r.hosts = (int64_t)sg_host_count();
    oc_sim_buf_append(out, &r, sizeof r);
    return 0;
}

/* 2 nodes x 4 GPUs, 2 NICs per node, leaf-spine (2 levels), 4:1
 * oversubscribed. Same node: li = 2e-6 s, Bi = 100e9. Between nodes:
 * latency 3e-6 + (2*2-1)*1e-6 = 6e-6 s = oc_topology_inter_latency_s;
 * bandwidth min(NIC 25e9, uplink 2*25e9/4 = 12.5e9) = 12.5e9. */
static void test_platform_routes(void)
{
    struct oc_topology t = topo(4, 2, 2, 4);
    struct job j = {.topo = &t, .cards = 8};
    struct oc_sim_buf buf = {0};
    struct oc_status st = {{0}};
    int rc = oc_sim_fork_run(routes_child, &j, NULL, &buf, &st);
    if (rc != 0)
        fprintf(stderr, "\n  %s\n", st.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    struct route_result r;
    CU_ASSERT_EQUAL_FATAL(buf.len, sizeof r);
    memcpy(&r, buf.data, sizeof r);
    OC_ASSERT_REL(r.lat_intra_s, 2e-6, 1e-12);
    OC_ASSERT_REL(r.bw_intra_Bps, 100e9, 1e-12);
    OC_ASSERT_REL(r.lat_inter_s, 6e-6, 1e-12);
    OC_ASSERT_REL(r.lat_inter_s, oc_topology_inter_latency_s(&t), 1e-12);
    OC_ASSERT_REL(r.bw_inter_Bps, 12.5e9, 1e-12);
    CU_ASSERT_EQUAL(r.names_intra, 1);
    CU_ASSERT_EQUAL(r.names_inter, 1);
    CU_ASSERT_EQUAL(r.names_back, 1);
    CU_ASSERT_EQUAL(r.hosts, 8);
    oc_sim_buf_free(&buf);
}

static long xml_bytes(const struct oc_topology *t, int64_t cards)
{
    char *mem = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&mem, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_sim_platform_write_xml(f, t, cards, &st), 0);
    fclose(f);
    free(mem);
    return (long)n;
}

static int big_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    const struct job *j = arg;
    struct oc_sim_engine_opts eo = {.topo = j->topo, .cards = j->cards};
    if (oc_sim_engine_init(&eo, st) != 0)
        return -1;
    const struct oc_sim_platform *p = oc_sim_engine_platform();
    double v[3] = {(double)sg_host_count(),
                   sg_host_get_route_latency(p->hosts[0], p->hosts[1023]),
                   sg_host_get_route_latency(p->hosts[1016], p->hosts[1023])};
    oc_sim_buf_append(out, v, sizeof v);
    return 0;
}

/* A topology name that would end an XML comment ("--", "-->") still
 * gives a loadable platform (the name is only written in a comment). */
static void test_platform_odd_name(void)
{
    struct oc_topology t = topo(2, 1, 1, 1);
    strcpy(t.name, "a--> <b> & \"c\"");
    struct job j = {.topo = &t, .cards = 4, .kind = JOB_ALLREDUCE, .n = 4,
                    .bytes = 1e6, .opts = {.algo = OC_SIM_ALGO_RING}};
    CU_ASSERT(sim_time(&j) > 0);
}

/* The XML grows linearly: 2048 cards take twice the bytes of 1024 (within
 * 2 %: numbers grow by a digit). 1024 cards (128 nodes of 8) load, and
 * gpu0 -> gpu1023 crosses nodes (ln = 4e-6 s) while gpu1016 -> gpu1023
 * stays in node 127 (li = 2e-6 s). */
static void test_platform_large(void)
{
    struct oc_topology t = topo(8, 4, 1, 1);
    long a = xml_bytes(&t, 1024), b = xml_bytes(&t, 2048);
    OC_ASSERT_REL((double)b / (double)a, 2.0, 0.02);

    struct job j = {.topo = &t, .cards = 1024};
    struct oc_sim_buf buf = {0};
    struct oc_status st = {{0}};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = oc_sim_fork_run(big_child, &j, NULL, &buf, &st);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    double v[3];
    CU_ASSERT_EQUAL_FATAL(buf.len, sizeof v);
    memcpy(v, buf.data, sizeof v);
    CU_ASSERT_EQUAL(v[0], 1024);
    OC_ASSERT_REL(v[1], LN, 1e-12);
    OC_ASSERT_REL(v[2], LI, 1e-12);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    printf("\n    1024-card platform: %ld bytes of XML, loaded in %.3f s\n", a, wall);
    CU_ASSERT(wall < 10); /* a quadratic platform would take minutes */
    oc_sim_buf_free(&buf);
}

static void test_topology_checks(void)
{
    struct oc_status st = {{0}};
    struct oc_topology t = topo(8, 1, 1, 1);
    CU_ASSERT_EQUAL(oc_sim_platform_check_topology(&t, 16, &st), 0);
    CU_ASSERT_EQUAL(oc_sim_platform_check_topology(&t, 0, &st), -1);
    t.nic_bandwidth_Bps = 0;
    CU_ASSERT_EQUAL(oc_sim_platform_check_topology(&t, 16, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "nic.bandwidth_Bps"));
    /* One node never uses the NICs. */
    CU_ASSERT_EQUAL(oc_sim_platform_check_topology(&t, 8, &st), 0);
    t = topo(8, 1, 0, 1);
    CU_ASSERT_EQUAL(oc_sim_platform_check_topology(&t, 16, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "switch_levels"));
}

/* ---- ring collectives against the closed forms -------------------------- */

/* Ring all-reduce of N = 8 on one node (hop: li, Bi) and on 8 nodes of one
 * GPU (hop: ln, Bn); oc_cf_ring_allreduce_s = 2(N-1)/N*S/B + 2(N-1)*l.
 * By hand, one node, S = 1e6: 1.75e6/1e11 + 14*2e-6 = 17.5e-6 + 28e-6
 * = 45.5e-6 s; 8 nodes, S = 1e9: 1.75e9/25e9 + 14*4e-6 = 0.070056 s. */
static void test_ring_allreduce(void)
{
    struct oc_topology one = topo(8, 1, 1, 1), spread = topo(1, 1, 1, 1);
    const double sizes[2] = {1e6, 1e9};
    for (int i = 0; i < 2; i++) {
        struct job j = {.topo = &one, .cards = 8, .kind = JOB_ALLREDUCE, .n = 8,
                        .bytes = sizes[i], .opts = {.algo = OC_SIM_ALGO_RING}};
        OC_ASSERT_REL(sim_time(&j), oc_cf_ring_allreduce_s(8, sizes[i], BI, LI), REL);
        j.topo = &spread;
        OC_ASSERT_REL(sim_time(&j), oc_cf_ring_allreduce_s(8, sizes[i], BN, LN), REL);
    }
    OC_ASSERT_REL(oc_cf_ring_allreduce_s(8, 1e6, BI, LI), 45.5e-6, 1e-9);
    OC_ASSERT_REL(oc_cf_ring_allreduce_s(8, 1e9, BN, LN), 0.070056, 1e-9);
}

/* All-gather and reduce-scatter, N = 8: (N-1)/N*S/B + (N-1)*l. By hand on
 * 8 nodes, S = 1e6: 0.875e6/25e9 + 7*4e-6 = 35e-6 + 28e-6 = 63e-6 s. */
static void test_ring_allgather_reducescatter(void)
{
    struct oc_topology one = topo(8, 1, 1, 1), spread = topo(1, 1, 1, 1);
    const double sizes[2] = {1e6, 1e9};
    for (int i = 0; i < 2; i++) {
        struct job j = {.topo = &spread, .cards = 8, .kind = JOB_ALLGATHER, .n = 8,
                        .bytes = sizes[i]};
        OC_ASSERT_REL(sim_time(&j), oc_cf_ring_allgather_s(8, sizes[i], BN, LN), REL);
        j.kind = JOB_REDUCESCATTER;
        OC_ASSERT_REL(sim_time(&j), oc_cf_ring_reducescatter_s(8, sizes[i], BN, LN), REL);
        j.topo = &one;
        OC_ASSERT_REL(sim_time(&j), oc_cf_ring_reducescatter_s(8, sizes[i], BI, LI), REL);
    }
    OC_ASSERT_REL(oc_cf_ring_allgather_s(8, 1e6, BN, LN), 63e-6, 1e-9);
}

/* Coarse mode: one message + sleeps equals the message-level ring on these
 * uncontended uniform rings (collective.h), for all three collectives and
 * for the hierarchical all-reduce (2 nodes x 4, 4 NICs). */
static void test_coarse_matches(void)
{
    struct oc_topology spread = topo(1, 1, 1, 1), two = topo(4, 4, 1, 1);
    const enum job_kind kinds[3] = {JOB_ALLREDUCE, JOB_ALLGATHER, JOB_REDUCESCATTER};
    const double sizes[2] = {1e6, 1e9};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 2; i++) {
            struct job j = {.topo = &spread, .cards = 8, .kind = kinds[k], .n = 8,
                            .bytes = sizes[i], .opts = {.algo = OC_SIM_ALGO_RING}};
            double fine = sim_time(&j);
            j.opts.coarse = 1;
            double coarse = sim_time(&j);
            OC_ASSERT_REL(coarse, fine, REL);
        }
    struct job h = {.topo = &two, .cards = 8, .kind = JOB_ALLREDUCE, .n = 8,
                    .bytes = 1e9, .opts = {.algo = OC_SIM_ALGO_HIER}};
    double fine = sim_time(&h);
    h.opts.coarse = 1;
    OC_ASSERT_REL(sim_time(&h), fine, REL);
}

/* Coarse mode is refused where hops differ: a flat ring over 2 nodes x 4
 * mixes NVLink and NIC hops, so coarse must give the message-level time
 * (equal to the bit), not l_max-based sleeps. */
static void test_coarse_falls_back(void)
{
    struct oc_topology two = topo(4, 1, 1, 1);
    struct job j = {.topo = &two, .cards = 8, .kind = JOB_ALLREDUCE, .n = 8,
                    .bytes = 1e8, .opts = {.algo = OC_SIM_ALGO_RING}};
    double fine = sim_time(&j);
    j.opts.coarse = 1;
    CU_ASSERT_EQUAL(sim_time(&j), fine);
}

/* Hierarchical all-reduce, 2 nodes (M = 2) x 4 GPUs (L = 4), 4 NICs per
 * node so the 4 inter-node rings do not share a NIC:
 *   intra reduce-scatter  (L-1)/L*S/Bi + (L-1)*li
 *   inter all-reduce      2(M-1)/M*(S/L)/Bn + 2(M-1)*ln
 *   intra all-gather      (L-1)/L*S/Bi + (L-1)*li
 * S = 1e9: 2*(0.75e9/1e11 + 3*2e-6) + (2.5e8/25e9 + 2*4e-6)
 *        = 2*7.506e-3 + 10.008e-3 = 0.025020 s
 * S = 1e6: 2*(7.5e-6 + 6e-6) + (10e-6 + 8e-6) = 45e-6 s */
static void test_hier_allreduce(void)
{
    struct oc_topology two = topo(4, 4, 1, 1);
    struct job j = {.topo = &two, .cards = 8, .kind = JOB_ALLREDUCE, .n = 8,
                    .bytes = 1e9, .opts = {.algo = OC_SIM_ALGO_HIER}};
    OC_ASSERT_REL(sim_time(&j), 0.025020, REL);
    j.bytes = 1e6;
    OC_ASSERT_REL(sim_time(&j), 45e-6, REL);
    /* The same sums from the closed-form functions. */
    OC_ASSERT_REL(2 * oc_cf_ring_reducescatter_s(4, 1e9, BI, LI) +
                      oc_cf_ring_allreduce_s(2, 1e9 / 4, BN, LN),
                  0.025020, 1e-9);
    /* The flat ring on the same GPUs is slower: every step waits on a NIC
     * hop, 14*(ln + 1.25e8/25e9) = 0.070056 s. */
    j.bytes = 1e9;
    j.opts.algo = OC_SIM_ALGO_RING;
    OC_ASSERT_REL(sim_time(&j), 0.070056, REL);
}

/* Tree all-reduce, 4 nodes x 1 GPU, S = 1e6 in one chunk, l = ln, B = Bn.
 * Tree: node 0 has children 1 and 2, node 1 has child 3.
 *   reduce:    3->1 and 2->0 at once on disjoint links  l + S/B
 *              then 1->0                                 l + S/B
 *   broadcast: 0->1 and 0->2 share node 0's NIC          l + 2S/B
 *              then 1->3                                 l + S/B
 * total 4l + 5S/B = 16e-6 + 5*40e-6 = 216e-6 s. */
static void test_tree_allreduce(void)
{
    struct oc_topology spread = topo(1, 1, 1, 1);
    struct job j = {.topo = &spread, .cards = 4, .kind = JOB_ALLREDUCE, .n = 4,
                    .bytes = 1e6,
                    .opts = {.algo = OC_SIM_ALGO_TREE, .chunk_bytes = 1e6}};
    OC_ASSERT_REL(sim_time(&j), 216e-6, REL);
}

/* Every algorithm and collective kind against its closed form
 * (core/closed_form.h), 2 nodes x 2 GPUs with 2 NICs per node (GPU g uses
 * NIC g % 2), S = 4e6 in C = 4 pipeline chunks of 1e6. No two flows share
 * a link: the flat ring's two NIC hops leave by NIC 1 and enter by NIC 0,
 * the hierarchical rings across nodes use NIC 0 (members 0, 2) and NIC 1
 * (1, 3), the tree's one tree hop joins the leaders 0 and 2. Hops: li =
 * 2e-6 s, Bi = 100e9 in a node; ln = 4e-6 s, Bn = 25e9 across. By hand:
 *   ring  all-reduce 2*(3/4)*4e6/25e9 + 6*4e-6           = 264e-6 s
 *         reduce-scatter = all-gather (3/4)*4e6/25e9 + 3*4e-6
 *                                                        = 132e-6 s
 *   hier  reduce-scatter = all-gather: in the node (1/2)*4e6/1e11 + 2e-6
 *         = 22e-6, across (1/2)*2e6/25e9 + 4e-6 = 44e-6  =  66e-6 s
 *         all-reduce = reduce-scatter + all-gather       = 132e-6 s
 *   tree  per chunk a chain hop 2e-6 + 1e6/1e11 = 12e-6, a tree hop
 *         4e-6 + 1e6/25e9 = 44e-6; a pipelined phase over the deepest
 *         path (3 -> 2 -> 0): 12e-6 + 44e-6 + 3*44e-6    = 188e-6 s;
 *         scatter or gather: the tree hop carries node 1's two shards,
 *         4e-6 + 2e6/25e9 = 84e-6, its chain hop one, 12e-6: 96e-6 s;
 *         all-reduce 2*188e-6                            = 376e-6 s
 *         reduce-scatter = all-gather 188e-6 + 96e-6     = 284e-6 s
 * The simulation, the closed-form functions and the estimate from the
 * group's measured hops all give these; the three algorithms differ. */
static void test_closed_forms(void)
{
    struct oc_topology t = topo(2, 2, 1, 1);
    const struct oc_cf_levels v = {2, 2, BI, LI, BN, LN};
    const double S = 4e6;
    const struct {
        enum oc_sim_algo algo;
        enum oc_coll_kind coll;
        enum job_kind job;
        double want_s, cf_s;
    } c[] = {
        {OC_SIM_ALGO_RING, OC_COLL_ALLREDUCE, JOB_ALLREDUCE, 264e-6,
         oc_cf_ring_allreduce_s(4, S, BN, LN)},
        {OC_SIM_ALGO_RING, OC_COLL_REDUCESCATTER, JOB_REDUCESCATTER, 132e-6,
         oc_cf_ring_reducescatter_s(4, S, BN, LN)},
        {OC_SIM_ALGO_RING, OC_COLL_ALLGATHER, JOB_ALLGATHER, 132e-6,
         oc_cf_ring_allgather_s(4, S, BN, LN)},
        {OC_SIM_ALGO_HIER, OC_COLL_ALLREDUCE, JOB_ALLREDUCE, 132e-6,
         oc_cf_hier_allreduce_s(&v, S)},
        {OC_SIM_ALGO_HIER, OC_COLL_REDUCESCATTER, JOB_REDUCESCATTER, 66e-6,
         oc_cf_hier_reducescatter_s(&v, S)},
        {OC_SIM_ALGO_HIER, OC_COLL_ALLGATHER, JOB_ALLGATHER, 66e-6,
         oc_cf_hier_allgather_s(&v, S)},
        {OC_SIM_ALGO_TREE, OC_COLL_ALLREDUCE, JOB_ALLREDUCE, 376e-6,
         oc_cf_tree_allreduce_s(&v, S, 4)},
        {OC_SIM_ALGO_TREE, OC_COLL_REDUCESCATTER, JOB_REDUCESCATTER, 284e-6,
         oc_cf_tree_reducescatter_s(&v, S, 4)},
        {OC_SIM_ALGO_TREE, OC_COLL_ALLGATHER, JOB_ALLGATHER, 284e-6,
         oc_cf_tree_allgather_s(&v, S, 4)},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        OC_ASSERT_REL(c[i].cf_s, c[i].want_s, 1e-9);
        struct job j = {.topo = &t, .cards = 4, .kind = c[i].job, .n = 4, .bytes = S,
                        .opts = {.algo = c[i].algo, .chunk_bytes = 1e6}};
        OC_ASSERT_REL(sim_time(&j), c[i].want_s, REL);
        j.kind = JOB_ESTIMATE;
        j.coll = c[i].coll;
        struct job_result r;
        struct oc_status st = {{0}};
        CU_ASSERT_EQUAL_FATAL(sim(&j, &r, &st), 0);
        OC_ASSERT_REL(r.estimate_s, c[i].want_s, REL);
        /* the coarse rings give the same on these equal hops */
        if (c[i].algo != OC_SIM_ALGO_TREE) {
            j.kind = c[i].job;
            j.opts.coarse = 1;
            OC_ASSERT_REL(sim_time(&j), c[i].want_s, REL);
        }
    }
}

/* Chain broadcast, 4 GPUs of one node, S = 4e6 in C = 4 chunks of 1e6:
 * (N-1 + C-1) * (li + 1e6/Bi) = 6 * (2e-6 + 10e-6) = 72e-6 s. */
static void test_broadcast(void)
{
    struct oc_topology one = topo(4, 1, 1, 1);
    struct job j = {.topo = &one, .cards = 4, .kind = JOB_BROADCAST, .n = 4,
                    .bytes = 4e6, .opts = {.chunk_bytes = 1e6}};
    OC_ASSERT_REL(sim_time(&j), 72e-6, REL);
}

/* Point-to-point gpu0 -> gpu5 on 2 nodes x 4: ln + S/Bn = 4e-6 + 1e6/25e9
 * = 44e-6 s. A receiver expecting another size gets an error. */
static void test_p2p(void)
{
    struct oc_topology two = topo(4, 1, 1, 1);
    struct job j = {.topo = &two, .cards = 8, .kind = JOB_P2P, .n = 2,
                    .ranks = {0, 5}, .have_ranks = 1, .bytes = 1e6, .recv_bytes = 1e6};
    OC_ASSERT_REL(sim_time(&j), 44e-6, 1e-9);
    j.recv_bytes = 2e6;
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(sim(&j, &r, &st), 0);
    CU_ASSERT_EQUAL(r.failed, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.msg, "1000000 bytes sent"));
}

/* An all-reduce started asynchronously overlaps compute: one node of 8,
 * the ring takes 45.5e-6 s (test_ring_allreduce); with 1e-4 s of compute
 * the member is done at 1e-4 s, with 1e-5 s at 45.5e-6 s. */
static void test_async_overlap(void)
{
    struct oc_topology one = topo(8, 1, 1, 1);
    struct job j = {.topo = &one, .cards = 8, .kind = JOB_ASYNC, .n = 8, .bytes = 1e6,
                    .compute_s = 1e-4, .opts = {.algo = OC_SIM_ALGO_RING}};
    OC_ASSERT_REL(sim_time(&j), 1e-4, REL);
    j.compute_s = 1e-5;
    OC_ASSERT_REL(sim_time(&j), 45.5e-6, REL);
}

/* CM02 caps a flow at TCP-gamma / (2 * route latency), 4 MiB / 2 ms =
 * 2.1e9 B/s by default on a route of 1 ms: the engine turns the cap off
 * (network/TCP-gamma:0), so 1e8 bytes over a NIC route with 1e-3 s NIC
 * latency take ln + S/Bn = (1e-3 + 1e-6) + 1e8/25e9 = 5.001e-3 s, not
 * about 0.049 s. */
static void test_no_tcp_window_cap(void)
{
    struct oc_topology far = topo(1, 1, 1, 1);
    far.nic_latency_s = 1e-3;
    struct job j = {.topo = &far, .cards = 2, .kind = JOB_P2P, .n = 2,
                    .bytes = 1e8, .recv_bytes = 1e8};
    OC_ASSERT_REL(sim_time(&j), 5.001e-3, REL);
}

/* Same simulation twice: the same time to the last bit (a pipelined tree
 * and the flat ring over shared NICs: many events, contention). */
static void test_determinism(void)
{
    struct oc_topology two = topo(4, 1, 1, 1);
    struct job j = {.topo = &two, .cards = 8, .kind = JOB_ALLREDUCE, .n = 8,
                    .bytes = 3.3e7, .repeat = 3,
                    .opts = {.algo = OC_SIM_ALGO_TREE, .chunk_bytes = 1e6}};
    double a = sim_time(&j), b = sim_time(&j);
    CU_ASSERT(memcmp(&a, &b, sizeof a) == 0);
    j.opts.algo = OC_SIM_ALGO_RING;
    a = sim_time(&j);
    b = sim_time(&j);
    CU_ASSERT(memcmp(&a, &b, sizeof a) == 0);
    CU_ASSERT(a > 0);
}

/* ---- automatic choice and names ----------------------------------------- */

static enum oc_sim_algo choose(const struct oc_topology *t, int64_t cards, int64_t n,
                               double bytes)
{
    struct job j = {.topo = t, .cards = cards, .kind = JOB_CHOOSE, .n = n, .bytes = bytes};
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(sim(&j, &r, &st), 0);
    return (enum oc_sim_algo)r.algo;
}

/* Estimates (collective.c), by hand:
 * 8 nodes x 1, S = 1e3: ring 14*(4e-6 + 125/25e9) = 56.07e-6 s; tree
 *   (1 chunk, depth log2 8 = 3) 2*3*(4e-6 + 2*1e3/25e9) = 24.48e-6 s: tree.
 * 8 nodes x 1, S = 1e9: ring 0.070056 s; tree 64 chunks of 15.6e6,
 *   2*(3+63)*(4e-6 + 2*15.6e6/25e9) = 0.165 s: ring.
 * 2 nodes x 4, S = 1e9: ring 0.070056 s, hier 0.025020 s: hier.
 * 1 node x 8: ring whatever the size. */
static void test_auto_choice(void)
{
    struct oc_topology spread = topo(1, 1, 1, 1), two = topo(4, 4, 1, 1),
                       one = topo(8, 1, 1, 1);
    CU_ASSERT_EQUAL(choose(&spread, 8, 8, 1e3), OC_SIM_ALGO_TREE);
    CU_ASSERT_EQUAL(choose(&spread, 8, 8, 1e9), OC_SIM_ALGO_RING);
    CU_ASSERT_EQUAL(choose(&two, 8, 8, 1e9), OC_SIM_ALGO_HIER);
    CU_ASSERT_EQUAL(choose(&one, 8, 8, 1e3), OC_SIM_ALGO_RING);
    CU_ASSERT_EQUAL(choose(&one, 8, 8, 1e9), OC_SIM_ALGO_RING);
}

static enum oc_sim_algo choose_kind(const struct oc_topology *t, int64_t cards, int64_t n,
                                    enum oc_coll_kind coll, enum oc_sim_algo asked,
                                    double bytes)
{
    struct job j = {.topo = t, .cards = cards, .kind = JOB_CHOOSE, .n = n, .bytes = bytes,
                    .coll = coll, .opts = {.algo = asked}};
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(sim(&j, &r, &st), 0);
    return (enum oc_sim_algo)r.algo;
}

/* The choice for reduce-scatter and all-gather (ZeRO's), estimates by hand:
 * 2 nodes x 4 (4 NICs), S = 1e9: ring 7/8*1e9/25e9 + 7*4e-6 = 0.035028 s;
 *   hier 0.75e9/1e11 + 3*2e-6 + 0.5*2.5e8/25e9 + 4e-6 = 0.012510 s: hier.
 * 8 nodes x 1, S = 1e3: ring 7*(4e-6 + 125/25e9) = 28.035e-6 s; hier (one
 *   member per node) is the ring and loses the tie; tree, one chunk, depth
 *   3, a leader's two child nodes sharing its NIC (each tree hop charged
 *   twice its bytes): reduce 3*(4e-6 + 2*1e3/25e9) = 12.24e-6, then the
 *   scatter down the deepest path 0-1-3-7, whose hops carry the shards of
 *   4, 2 and 1 nodes (125 bytes each): 3*4e-6 + 2*7*125/25e9 = 12.07e-6;
 *   24.31e-6 s: tree. S = 1e9: the tree's pipelined reduce alone takes
 *   (3+63)*(4e-6 + 2*15.6e6/25e9) = 0.083 s: ring.
 * Forced: inside one node the tree serves only all-reduce, and no
 * algorithm but the ring broadcasts: the ring runs there. */
static void test_auto_choice_kinds(void)
{
    struct oc_topology spread = topo(1, 1, 1, 1), two = topo(4, 4, 1, 1),
                       one = topo(8, 1, 1, 1);
    const enum oc_coll_kind zero[2] = {OC_COLL_REDUCESCATTER, OC_COLL_ALLGATHER};
    const enum oc_sim_algo au = OC_SIM_ALGO_AUTO;
    for (int k = 0; k < 2; k++) {
        CU_ASSERT_EQUAL(choose_kind(&two, 8, 8, zero[k], au, 1e9), OC_SIM_ALGO_HIER);
        CU_ASSERT_EQUAL(choose_kind(&spread, 8, 8, zero[k], au, 1e3), OC_SIM_ALGO_TREE);
        CU_ASSERT_EQUAL(choose_kind(&spread, 8, 8, zero[k], au, 1e9), OC_SIM_ALGO_RING);
        CU_ASSERT_EQUAL(choose_kind(&one, 8, 8, zero[k], au, 1e3), OC_SIM_ALGO_RING);
        CU_ASSERT_EQUAL(choose_kind(&one, 8, 8, zero[k], OC_SIM_ALGO_TREE, 1e3),
                        OC_SIM_ALGO_RING);
        CU_ASSERT_EQUAL(choose_kind(&one, 8, 8, zero[k], OC_SIM_ALGO_HIER, 1e3),
                        OC_SIM_ALGO_HIER);
        CU_ASSERT_EQUAL(choose_kind(&two, 8, 8, zero[k], OC_SIM_ALGO_TREE, 1e9),
                        OC_SIM_ALGO_TREE);
    }
    CU_ASSERT_EQUAL(choose_kind(&one, 8, 8, OC_COLL_ALLREDUCE, OC_SIM_ALGO_TREE, 1e3),
                    OC_SIM_ALGO_TREE);
    CU_ASSERT_EQUAL(choose_kind(&two, 8, 8, OC_COLL_BROADCAST, OC_SIM_ALGO_HIER, 1e3),
                    OC_SIM_ALGO_RING);
    /* a forced algorithm that does not apply has no estimate */
    struct job j = {.topo = &one, .cards = 8, .kind = JOB_ESTIMATE, .n = 8, .bytes = 1e3,
                    .coll = OC_COLL_ALLGATHER, .opts = {.algo = OC_SIM_ALGO_TREE}};
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(sim(&j, &r, &st), 0);
    CU_ASSERT_EQUAL(r.estimate_s, -1);
}

static void test_algo_names(void)
{
    struct oc_status st = {{0}};
    enum oc_sim_algo a = OC_SIM_ALGO_AUTO;
    const char *names[] = {"auto", "ring", "tree", "hier"};
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(oc_sim_algo_from_name(names[i], &a, &st), 0);
        CU_ASSERT_EQUAL(a, (enum oc_sim_algo)i);
        CU_ASSERT_STRING_EQUAL(oc_sim_algo_name(a), names[i]);
    }
    CU_ASSERT_EQUAL(oc_sim_algo_from_name("butterfly", &a, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "butterfly"));
}

/* ---- engine: inputs and failures ---------------------------------------- */

static void test_cfg_check(void)
{
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_sim_cfg_check("network/model:CM02", &st), 0);
    CU_ASSERT_EQUAL(oc_sim_cfg_check("--cfg=network/TCP-gamma:0", &st), 0);
    CU_ASSERT_EQUAL(oc_sim_cfg_check("network/model", &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_EQUAL(oc_sim_cfg_check(":CM02", &st), -1);
    CU_ASSERT_EQUAL(oc_sim_cfg_check("network/model:", &st), -1);
    CU_ASSERT_EQUAL(oc_sim_cfg_check("net work:x", &st), -1);
    CU_ASSERT_EQUAL(oc_sim_cfg_check("contexts/nthreads:4", &st), -1);
    CU_ASSERT_EQUAL(oc_sim_cfg_check("contexts/nthreads:1", &st), 0);
}

/* A user --cfg wins over ocsim's default: with the LV08 model SimGrid's
 * latency factor (13.01) and bandwidth factor (0.97) make a 1 MB message
 * slower than CM02's ln + S/Bn = 44e-6 s. A malformed or unknown key is an
 * error line, not an abort of the test. */
static void test_cfg_passthrough(void)
{
    struct oc_topology two = topo(4, 1, 1, 1);
    struct job j = {.topo = &two, .cards = 8, .kind = JOB_P2P, .n = 2,
                    .ranks = {0, 5}, .have_ranks = 1, .bytes = 1e6, .recv_bytes = 1e6};
    const char *lv08[] = {"network/model:LV08"};
    j.cfg = lv08;
    j.n_cfg = 1;
    CU_ASSERT(sim_time(&j) > 44e-6 * 1.05);

    struct job_result r;
    struct oc_status st = {{0}};
    const char *bad[] = {"network/model"};
    j.cfg = bad;
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "key:value"));

    const char *unknown[] = {"network/no-such-key:1"};
    j.cfg = unknown;
    memset(&st, 0, sizeof st);
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "crashed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "no-such-key"));

    /* A value SimGrid refuses only while loading the platform: the child
     * aborts then, quoting SimGrid, and leaves no temporary platform file
     * behind (TMPDIR points at an empty directory of ours). */
    char dir[] = "/tmp/ocsim-test-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    const char *old_tmp = getenv("TMPDIR");
    char saved[4096] = "";
    if (old_tmp)
        snprintf(saved, sizeof saved, "%s", old_tmp);
    setenv("TMPDIR", dir, 1);
    const char *late[] = {"network/maxmin-selective-update:no"};
    j.cfg = late;
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "selective update"));
    if (old_tmp)
        setenv("TMPDIR", saved, 1);
    else
        unsetenv("TMPDIR");
    CU_ASSERT_EQUAL(rmdir(dir), 0); /* fails unless empty */
}

/* A user's platform: two hosts joined by one 1e9 B/s split-duplex link of
 * 1e-3 s. Named gpu0/gpu1 it runs: ring all-reduce of 1e6 over 2 members =
 * 2*(1/2)*1e6/1e9 + 2*1e-3 = 3e-3 s (CM02 applies to user files too).
 * Named a/b, or asked for 3 cards, it is refused with one line; a missing
 * file is refused before SimGrid sees it. */
static void test_user_platform(void)
{
    char dir[] = "/tmp/ocsim-test-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char good[64], bad[64], none[64];
    snprintf(good, sizeof good, "%s/good.xml", dir);
    snprintf(bad, sizeof bad, "%s/bad.xml", dir);
    snprintf(none, sizeof none, "%s/none.xml", dir);
    const char *fmt =
        "<?xml version='1.0'?>\n"
        "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
        "<platform version=\"4.1\">\n<zone id=\"z\" routing=\"Full\">\n"
        "  <host id=\"%s\" speed=\"1Gf\"/>\n  <host id=\"%s\" speed=\"1Gf\"/>\n"
        "  <link id=\"l\" bandwidth=\"1e9Bps\" latency=\"1e-3s\" sharing_policy=\"SPLITDUPLEX\"/>\n"
        "  <route src=\"%s\" dst=\"%s\"><link_ctn id=\"l\" direction=\"UP\"/></route>\n"
        "</zone>\n</platform>\n";
    char text[1024];
    snprintf(text, sizeof text, fmt, "gpu0", "gpu1", "gpu0", "gpu1");
    oc_test_write_file(good, text);
    snprintf(text, sizeof text, fmt, "a", "b", "a", "b");
    oc_test_write_file(bad, text);

    struct job j = {.platform_file = good, .cards = 2, .kind = JOB_ALLREDUCE, .n = 2,
                    .bytes = 1e6, .opts = {.algo = OC_SIM_ALGO_RING}};
    OC_ASSERT_REL(sim_time(&j), 3e-3, 1e-9);

    struct job_result r;
    struct oc_status st = {{0}};
    j.platform_file = bad;
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "no host \"gpu0\""));

    j.platform_file = good;
    j.cards = 3;
    j.n = 3;
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "no host \"gpu2\""));

    j.platform_file = none;
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "cannot open platform file"));

    /* Without the DOCTYPE line SimGrid's parser fails: caught first. */
    oc_test_write_file(none, strstr(text, "<platform"));
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "DOCTYPE"));
    /* A parse error aborts SimGrid in the child: one line quoting it. */
    snprintf(text, sizeof text, fmt, "gpu0", "gpu1", "gpu0", "gpu1");
    *strstr(text, "</zone>") = ' ';
    oc_test_write_file(none, text);
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "crashed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "none.xml:"));
    unlink(none);

    unlink(good);
    unlink(bad);
    rmdir(dir);
}

/* Every member waits for a message nobody sends: SimGrid reports a
 * deadlock and returns; the engine turns that into an error line. */
static void test_deadlock(void)
{
    struct oc_topology one = topo(4, 1, 1, 1);
    struct job j = {.topo = &one, .cards = 4, .kind = JOB_DEADLOCK, .n = 4};
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "deadlocked"));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "4 of 4 actors"));
}

/* A child that crashes is an error line naming the signal. */
static void test_crash(void)
{
    struct job j = {.kind = JOB_ABORT};
    struct job_result r;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(sim(&j, &r, &st), -1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "signal 6"));
}

static int hang_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    (void)arg;
    (void)out;
    (void)st;
    sleep(30);
    return 0;
}

/* A child that runs past the wall limit (0.3 s) is killed and reported. */
static void test_wall_limit(void)
{
    struct oc_sim_buf buf = {0};
    struct oc_status st = {{0}};
    struct oc_sim_fork_opts fo = {.wall_limit_s = 0.3};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CU_ASSERT_EQUAL(oc_sim_fork_run(hang_child, NULL, &fo, &buf, &st), -1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CU_ASSERT(one_line(st.msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "wall-clock limit"));
    CU_ASSERT((double)(t1.tv_sec - t0.tv_sec) < 10);
    CU_ASSERT_EQUAL(buf.len, 0);
}

/* Group checks: a rank out of range or twice is refused. */
static int group_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    (void)arg;
    struct oc_topology t = topo(4, 1, 1, 1);
    struct oc_sim_engine_opts eo = {.topo = &t, .cards = 8};
    if (oc_sim_engine_init(&eo, st) != 0)
        return -1;
    /* A second engine in one process is refused, not aborted. */
    int32_t v[6];
    v[0] = oc_sim_engine_init(&eo, st);
    struct oc_sim_group g;
    const int64_t dup[3] = {0, 1, 1}, far[2] = {0, 8}, odd[3] = {0, 1, 4};
    v[1] = oc_sim_group_init(&g, "g", dup, 3, oc_sim_engine_platform(), st);
    v[2] = oc_sim_group_init(&g, "g", far, 2, oc_sim_engine_platform(), st);
    /* 0,1 on node 0 and 4 on node 1: 2 nodes, uneven (per_node 0). */
    v[3] = oc_sim_group_init(&g, "g", odd, 3, oc_sim_engine_platform(), st);
    v[4] = (int32_t)g.nodes;
    v[5] = (int32_t)g.per_node;
    oc_sim_group_free(&g);
    oc_sim_buf_append(out, v, sizeof v);
    return 0;
}

static void test_group_checks(void)
{
    struct oc_sim_buf buf = {0};
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_sim_fork_run(group_child, NULL, NULL, &buf, &st), 0);
    int32_t v[6];
    CU_ASSERT_EQUAL_FATAL(buf.len, sizeof v);
    memcpy(v, buf.data, sizeof v);
    CU_ASSERT_EQUAL(v[0], -1);
    CU_ASSERT_EQUAL(v[1], -1);
    CU_ASSERT_EQUAL(v[2], -1);
    CU_ASSERT_EQUAL(v[3], 0);
    CU_ASSERT_EQUAL(v[4], 2);
    CU_ASSERT_EQUAL(v[5], 0);
    oc_sim_buf_free(&buf);
}

static CU_TestInfo tests[] = {
    {"platform routes", test_platform_routes},
    {"platform 1024 cards", test_platform_large},
    {"platform odd topology name", test_platform_odd_name},
    {"topology checks", test_topology_checks},
    {"ring all-reduce", test_ring_allreduce},
    {"ring all-gather, reduce-scatter", test_ring_allgather_reducescatter},
    {"coarse equals message level", test_coarse_matches},
    {"coarse falls back on mixed rings", test_coarse_falls_back},
    {"hierarchical all-reduce", test_hier_allreduce},
    {"tree all-reduce", test_tree_allreduce},
    {"every algorithm and kind = closed form", test_closed_forms},
    {"chain broadcast", test_broadcast},
    {"point-to-point", test_p2p},
    {"async overlap", test_async_overlap},
    {"no TCP window cap", test_no_tcp_window_cap},
    {"determinism", test_determinism},
    {"automatic choice", test_auto_choice},
    {"automatic choice, reduce-scatter and all-gather", test_auto_choice_kinds},
    {"algorithm names", test_algo_names},
    {"cfg check", test_cfg_check},
    {"cfg passthrough", test_cfg_passthrough},
    {"user platform", test_user_platform},
    {"deadlock", test_deadlock},
    {"crash", test_crash},
    {"wall limit", test_wall_limit},
    {"group checks", test_group_checks},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sim_collective", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
