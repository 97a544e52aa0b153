/* test_sim_platform.c: the SimGrid platform that sim/platform.c writes
 * for a topology: routes and their latency and bandwidth worked out by
 * hand, the twins and the reduced platform of the symmetric fidelity, the
 * size of the XML at 1024 and 2048 cards, a topology name that
 * would break an XML comment, and the topology checks. Platforms are loaded
 * in a child through oc_sim_fork_run (SimGrid allows one engine per
 * process); the test platform and the jobs are in sim_fixtures.h.
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

#include "engine.h"
#include "platform.h"
#include "sim_fixtures.h"
#include "test_util.h"
#include "topology.h"

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
    /* the closed form's lone flow (core/topology.c): the same */
    OC_ASSERT_REL(r.bw_inter_Bps, oc_topology_inter_Bps(&t, 1), 1e-12);
    CU_ASSERT_EQUAL(r.names_intra, 1);
    CU_ASSERT_EQUAL(r.names_inter, 1);
    CU_ASSERT_EQUAL(r.names_back, 1);
    CU_ASSERT_EQUAL(r.hosts, 8);
    oc_sim_buf_free(&buf);
}

/* The symmetric fidelity's platform (platform.h, "Twins" and "Reduced"):
 * 3 nodes of the topology above, twins of GPU 5 (node 1, NIC 5 % 2 = 1),
 * reduced: nodes 1 and the one more (0) only. */
struct twin_result {
    double lat_net_s, bw_net_Bps, lat_nv_s, bw_nv_Bps, lat_in_s, bw_in_Bps;
    double cls_inter_lat_s, cls_inter_bw_Bps, cls_intra_lat_s, cls_intra_bw_Bps;
    int names_net, names_nv, names_in, node2_absent, twins_of_others;
    int64_t hosts;
};

static int twins_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    const struct job *j = arg;
    const int64_t twins[] = {5};
    struct oc_sim_engine_opts eo = {.topo = j->topo, .cards = j->cards, .twins = twins,
                                    .ntwins = 1, .reduced = 1};
    if (oc_sim_engine_init(&eo, st) != 0)
        return -1;
    const struct oc_sim_platform *p = oc_sim_engine_platform();
    struct twin_result r;
    memset(&r, 0, sizeof r);
    r.lat_net_s = sg_host_get_route_latency(p->hosts[5], p->twin_net[5]);
    r.bw_net_Bps = sg_host_get_route_bandwidth(p->hosts[5], p->twin_net[5]);
    r.lat_nv_s = sg_host_get_route_latency(p->hosts[5], p->twin_nv[5]);
    r.bw_nv_Bps = sg_host_get_route_bandwidth(p->hosts[5], p->twin_nv[5]);
    r.cls_inter_lat_s = p->inter_lat_s;
    r.cls_inter_bw_Bps = p->inter_bw_Bps;
    r.cls_intra_lat_s = p->intra_lat_s;
    r.cls_intra_bw_Bps = p->intra_bw_Bps;
    static const char *const net[] = {"nic1.1_UP", "up1_UP", "up1_DOWN", "nic1.1_DOWN"};
    static const char *const nv[] = {"nvl5_UP", "nvl5_DOWN"};
    r.names_net = route_is("gpu5", "gpu5~net", net, 4);
    r.names_nv = route_is("gpu5", "gpu5~nv", nv, 2);
    /* ~in: from GPU 4 of the node (NIC 0) through the fabric into GPU 5's
     * NIC, as from another node */
    static const char *const in[] = {"nic1.0_UP", "up1_UP", "up1_DOWN", "nic1.1_DOWN"};
    r.names_in = route_is("gpu4", "gpu5~in", in, 4);
    r.lat_in_s = sg_host_get_route_latency(p->hosts[4], p->twin_in[5]);
    r.bw_in_Bps = sg_host_get_route_bandwidth(p->hosts[4], p->twin_in[5]);
    r.node2_absent = !p->hosts[8] && !p->hosts[11] && p->hosts[0] && p->hosts[7];
    r.twins_of_others = p->twin_net[4] != NULL || p->twin_nv[0] != NULL || p->twin_in[4];
    r.hosts = (int64_t)sg_host_count();
    oc_sim_buf_append(out, &r, sizeof r);
    return 0;
}

/* Each twin route has the figures of a route to another GPU of the node
 * (2e-6 s, 100e9) or of another node (6e-6 s, 12.5e9, as in
 * test_platform_routes), through GPU 5's own links; the class figures are
 * those; the ~in twin is reached from GPU 4 as from another node; 8 GPUs
 * and 3 twins are built. */
static void test_platform_twins(void)
{
    struct oc_topology t = topo(4, 2, 2, 4);
    struct job j = {.topo = &t, .cards = 12};
    struct oc_sim_buf buf = {0};
    struct oc_status st = {{0}};
    int rc = oc_sim_fork_run(twins_child, &j, NULL, &buf, &st);
    if (rc != 0)
        fprintf(stderr, "\n  %s\n", st.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    struct twin_result r;
    CU_ASSERT_EQUAL_FATAL(buf.len, sizeof r);
    memcpy(&r, buf.data, sizeof r);
    OC_ASSERT_REL(r.lat_net_s, 6e-6, 1e-12);
    OC_ASSERT_REL(r.bw_net_Bps, 12.5e9, 1e-12);
    OC_ASSERT_REL(r.lat_nv_s, 2e-6, 1e-12);
    OC_ASSERT_REL(r.bw_nv_Bps, 100e9, 1e-12);
    OC_ASSERT_REL(r.cls_inter_lat_s, 6e-6, 1e-12);
    OC_ASSERT_REL(r.cls_inter_bw_Bps, 12.5e9, 1e-12);
    OC_ASSERT_REL(r.cls_intra_lat_s, 2e-6, 1e-12);
    OC_ASSERT_REL(r.cls_intra_bw_Bps, 100e9, 1e-12);
    CU_ASSERT_EQUAL(r.names_net, 1);
    CU_ASSERT_EQUAL(r.names_nv, 1);
    CU_ASSERT_EQUAL(r.names_in, 1);
    OC_ASSERT_REL(r.lat_in_s, 6e-6, 1e-12);
    OC_ASSERT_REL(r.bw_in_Bps, 12.5e9, 1e-12);
    CU_ASSERT_EQUAL(r.node2_absent, 1);
    CU_ASSERT_EQUAL(r.twins_of_others, 0);
    CU_ASSERT_EQUAL(r.hosts, 11);
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

static CU_TestInfo tests[] = {
    {"platform routes", test_platform_routes},
    {"platform twins, reduced", test_platform_twins},
    {"platform 1024 cards", test_platform_large},
    {"platform odd topology name", test_platform_odd_name},
    {"topology checks", test_topology_checks},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"sim_platform", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
