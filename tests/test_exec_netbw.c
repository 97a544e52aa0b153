/* test_exec_netbw.c: what `ocsim-exec --netbw` (exec/netbw.h) decides
 * without a network: which ranks form a node, the data its checks send,
 * the fabric it writes from measured figures (worked by hand below), and
 * the file: the base's other fields and sources kept, the measured ones
 * with theirs, a file of --calibrate keeping its calibration. (The
 * measurement itself runs under mpirun: tests/exec_netbw.sh.)
 */
#define _XOPEN_SOURCE 700
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib_topology.h"
#include "netbw.h"
#include "paths.h"
#include "test_util.h"
#include "topology.h"

static int suite_init(void) { return oc_test_dir_make("netbw"); }

/* size host names, one per rank, into the layout oc_net_map_build reads. */
static char *hosts_of(const char *const *names, int size)
{
    char *h = calloc((size_t)size, OC_NET_HOST_MAX);
    for (int r = 0; r < size; r++)
        snprintf(h + (size_t)r * OC_NET_HOST_MAX, OC_NET_HOST_MAX, "%s", names[r]);
    return h;
}

static void test_map_hosts(void)
{
    /* Round-robin placement: a b a b. Node a (rank 0's) is node 0 with
     * ranks 0 and 2, node b ranks 1 and 3; not consecutive. */
    static const char *const names[] = {"a", "b", "a", "b"};
    char *h = hosts_of(names, 4);
    struct oc_net_map m;
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_net_map_build(&m, 3, 4, h, 0, &st), st.msg);
    CU_ASSERT_EQUAL(m.nodes, 2);
    CU_ASSERT_EQUAL(m.per_node, 2);
    const int want[4] = {0, 2, 1, 3};
    for (int q = 0; q < 4; q++)
        CU_ASSERT_EQUAL(m.rank_of[q], want[q]);
    CU_ASSERT_EQUAL(m.node, 1); /* rank 3: node b, its second rank */
    CU_ASSERT_EQUAL(m.local, 1);
    CU_ASSERT_EQUAL(m.consecutive, 0);
    CU_ASSERT_EQUAL(m.by_group, 0);
    CU_ASSERT_STRING_EQUAL(m.host[0], "a");
    CU_ASSERT_STRING_EQUAL(m.host[1], "b");
    oc_net_map_free(&m);
    free(h);

    /* Block placement: a a b b is consecutive. */
    static const char *const block[] = {"a", "a", "b", "b"};
    h = hosts_of(block, 4);
    oc_test_expect_ok(oc_net_map_build(&m, 2, 4, h, 0, &st), st.msg);
    CU_ASSERT_EQUAL(m.consecutive, 1);
    CU_ASSERT_EQUAL(m.node, 1);
    CU_ASSERT_EQUAL(m.local, 0);
    oc_net_map_free(&m);
    free(h);

    /* Unequal nodes and one node are refused. */
    static const char *const uneven[] = {"a", "a", "b"};
    h = hosts_of(uneven, 3);
    oc_test_expect_fail(oc_net_map_build(&m, 0, 3, h, 0, &st), st.msg,
                        (const char *const[]){"node b runs 1 rank,", "node a 2",
                                              "ppr:K:node", NULL});
    free(h);
    static const char *const one[] = {"a", "a"};
    h = hosts_of(one, 2);
    oc_test_expect_fail(oc_net_map_build(&m, 0, 2, h, 0, &st), st.msg,
                        (const char *const[]){"all 2 ranks run on one node (a)",
                                              "--ranks-per-node K", NULL});
    free(h);
}

static void test_map_groups(void)
{
    /* Six ranks of one machine in groups of two: three nodes. */
    static const char *const names[] = {"m", "m", "m", "m", "m", "m"};
    char *h = hosts_of(names, 6);
    struct oc_net_map m;
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_net_map_build(&m, 5, 6, h, 2, &st), st.msg);
    CU_ASSERT_EQUAL(m.nodes, 3);
    CU_ASSERT_EQUAL(m.per_node, 2);
    CU_ASSERT_EQUAL(m.node, 2);
    CU_ASSERT_EQUAL(m.local, 1);
    CU_ASSERT_EQUAL(m.consecutive, 1);
    CU_ASSERT_EQUAL(m.by_group, 1);
    CU_ASSERT_STRING_EQUAL(m.host[2], "m/group2");
    oc_net_map_free(&m);
    oc_test_expect_fail(oc_net_map_build(&m, 0, 6, h, 4, &st), st.msg,
                        (const char *const[]){"--ranks-per-node 4 does not divide the 6 "
                                              "ranks", NULL});
    oc_test_expect_fail(oc_net_map_build(&m, 0, 6, h, 6, &st), st.msg,
                        (const char *const[]){"one node", NULL});
    free(h);
}

static void test_patterns(void)
{
    /* The sum the all-reduce check expects is the sum of what the members
     * send, for every group size from 1 to 9 (the member factors 1, 2, 3,
     * 4, 1, 2, ...: n = 5 sums to 11, so element 12, factor 13, is 143). */
    for (int n = 1; n <= 9; n++)
        for (int64_t i = 0; i < 30; i++) {
            float sum = 0;
            for (int m = 0; m < n; m++)
                sum += oc_netbw_pattern(m, i);
            CU_ASSERT_EQUAL(oc_netbw_pattern_sum(n, i), sum);
        }
    CU_ASSERT_EQUAL(oc_netbw_pattern_sum(5, 12), 143.0f);
    CU_ASSERT_EQUAL(oc_netbw_byte(0), 3);
    CU_ASSERT_EQUAL(oc_netbw_byte(37), (37 * 7 + 3) & 0xff);
}

/* Measured by hand: 2 nodes, one rank each, 5 us one way, 4 GB/s. */
static struct oc_netbw_result measured(void)
{
    struct oc_netbw_result r;
    memset(&r, 0, sizeof r);
    r.nodes = 2;
    r.per_node = 1;
    snprintf(r.hosts, sizeof r.hosts, "nodea, nodeb");
    snprintf(r.date, sizeof r.date, "2026-01-01 00:00 UTC");
    r.transport = "MPI";
    r.max_msg_bytes = 1 << 20;
    r.latency_s = 5e-6;
    r.stream_Bps = r.flows_Bps = r.flow_lo_Bps = r.flow_hi_Bps = 4e9;
    r.pingpong_Bps = 3.5e9;
    r.allreduce_bytes = 1 << 20;
    r.allreduce_busbw_Bps = 2e9;
    r.allreduce_latency_s = 2e-5;
    return r;
}

static void test_fabric(void)
{
    struct oc_topology base, t;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("h100-100g", &base, &st), 0);
    struct oc_netbw_result r = measured();

    /* One switch (1 hop of 0.3 us): NIC latency 5 - 0.3 = 4.7 us, so the
     * simulator's inter-node latency is the measured 5 us; one flow: one
     * NIC's 4 GB/s. */
    oc_test_expect_ok(oc_netbw_fabric(&base, &r, &t, &st), st.msg);
    OC_ASSERT_REL(t.nic_bandwidth_Bps, 4e9, 1e-12);
    OC_ASSERT_REL(t.nic_latency_s, 4.7e-6, 1e-12);
    OC_ASSERT_REL(t.inter_latency_s, 3e-7, 1e-12);
    OC_ASSERT_REL(oc_topology_inter_latency_s(&t), 5e-6, 1e-12);
    OC_ASSERT_REL(oc_topology_inter_Bps(&t, 1), 4e9, 1e-12);
    CU_ASSERT_STRING_EQUAL(t.nic_name, "MPI between nodes (measured)");
    CU_ASSERT_EQUAL(t.nics_per_node, base.nics_per_node);
    CU_ASSERT_EQUAL(t.gpus_per_node, base.gpus_per_node);

    /* Four ranks per node, 8 NICs (dgx-h100): the four flows moved 8 GB/s
     * together, each on its own NIC: 8 / min(4, 8) = 2 GB/s per NIC, and
     * the simulator gives four flows 4 x 2 = the measured 8 GB/s. Leaf and
     * spine: 3 hops of 0.13 us, NIC 5 - 0.39 = 4.61 us. */
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("dgx-h100", &base, &st), 0);
    r.per_node = 4;
    r.flows_Bps = 8e9;
    oc_test_expect_ok(oc_netbw_fabric(&base, &r, &t, &st), st.msg);
    OC_ASSERT_REL(t.nic_bandwidth_Bps, 2e9, 1e-12);
    OC_ASSERT_REL(4 * oc_topology_inter_Bps(&t, 4) * base.oversubscription, 8e9, 1e-12);
    OC_ASSERT_REL(t.nic_latency_s, 5e-6 - 3 * 1.3e-7, 1e-12);
    /* One NIC for the four flows: it carried all 8 GB/s. */
    base.nics_per_node = 1;
    oc_test_expect_ok(oc_netbw_fabric(&base, &r, &t, &st), st.msg);
    OC_ASSERT_REL(t.nic_bandwidth_Bps, 8e9, 1e-12);

    /* eth25g's hops (3 x 1 us) exceed a measured 2 us: the hops become 0
     * and the NIC holds all of it. */
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("eth25g", &base, &st), 0);
    r = measured();
    r.latency_s = 2e-6;
    oc_test_expect_ok(oc_netbw_fabric(&base, &r, &t, &st), st.msg);
    CU_ASSERT_EQUAL(t.inter_latency_s, 0.0);
    OC_ASSERT_REL(t.nic_latency_s, 2e-6, 1e-12);
    OC_ASSERT_REL(oc_topology_inter_latency_s(&t), 2e-6, 1e-12);

    /* Nothing measured: refused. */
    r.latency_s = 0;
    oc_test_expect_fail(oc_netbw_fabric(&base, &r, &t, &st), st.msg,
                        (const char *const[]){"latency between nodes was not measured",
                                              NULL});
}

static const char *source_of(json_t *doc, const char *key)
{
    return json_string_value(json_object_get(json_object_get(doc, "sources"), key));
}

static void test_write(void)
{
    struct oc_topology base, t;
    struct oc_status st = {{0}};
    char base_path[4096], out[400];
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("h100-100g", &base, &st), 0);
    CU_ASSERT_EQUAL_FATAL(oc_data_path("topologies", "h100-100g", base_path,
                                       sizeof base_path, &st), 0);
    snprintf(out, sizeof out, "%s/netbw.json", oc_test_dir);
    struct oc_netbw_result r = measured();
    oc_test_expect_ok(oc_netbw_write_topology(out, base_path, &base, &r, "cpu", &st), st.msg);
    oc_test_expect_ok(oc_topology_load(out, &t, &st), st.msg);
    OC_ASSERT_REL(t.nic_bandwidth_Bps, 4e9, 1e-6);
    OC_ASSERT_REL(t.nic_latency_s, 4.7e-6, 1e-6);
    OC_ASSERT_REL(oc_topology_inter_latency_s(&t), 5e-6, 1e-6);
    /* The rest is the base's. */
    CU_ASSERT_STRING_EQUAL(t.name, base.name);
    CU_ASSERT_EQUAL(t.gpus_per_node, base.gpus_per_node);
    CU_ASSERT_EQUAL(t.device.peak_flops_16bit, base.device.peak_flops_16bit);
    CU_ASSERT_EQUAL(t.intra_bandwidth_Bps, base.intra_bandwidth_Bps);
    CU_ASSERT_EQUAL(t.nics_per_node, base.nics_per_node);

    json_error_t err;
    json_t *doc = json_load_file(out, 0, &err), *bdoc = json_load_file(base_path, 0, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bdoc);
    const char *who = "measured by ocsim-exec --netbw on 2 nodes (nodea, nodeb) "
                      "2026-01-01 00:00 UTC, 1 rank per node: ";
    const char *bw = source_of(doc, "nic.bandwidth_Bps"), *lat = source_of(doc, "nic.latency_s");
    CU_ASSERT_PTR_NOT_NULL_FATAL(bw);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lat);
    CU_ASSERT_EQUAL(strncmp(bw, who, strlen(who)), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(bw, "MPI streaming"));
    CU_ASSERT_PTR_NOT_NULL(strstr(lat, "8-byte MPI ping-pong"));
    CU_ASSERT_PTR_NOT_NULL(strstr(source_of(doc, "_netbw_allreduce"), "busbw 2e+09 B/s"));
    /* The base's own sources stay where nothing was measured. */
    CU_ASSERT_STRING_EQUAL(source_of(doc, "device.peak_flops_16bit"),
                           source_of(bdoc, "device.peak_flops_16bit"));
    CU_ASSERT_STRING_EQUAL(source_of(doc, "inter_node.latency_s"),
                           source_of(bdoc, "inter_node.latency_s"));
    json_decref(doc);
    json_decref(bdoc);
}

static void test_write_over_calibrated(void)
{
    /* A file of --calibrate gains the network and keeps its measurements. */
    struct oc_topology base, cal, t;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("h100-100g", &base, &st), 0);
    struct oc_calib_measured m;
    memset(&m, 0, sizeof m);
    m.ranks = 2;
    m.gemm_flops = 5e10;
    m.mem_Bps = 1e10;
    char cal_path[400], out[400];
    snprintf(cal_path, sizeof cal_path, "%s/cal.json", oc_test_dir);
    snprintf(out, sizeof out, "%s/cal-netbw.json", oc_test_dir);
    oc_test_expect_ok(oc_calib_write_topology(cal_path, &base, &m, &st), st.msg);
    CU_ASSERT_EQUAL_FATAL(oc_topology_load(cal_path, &cal, &st), 0);
    struct oc_netbw_result r = measured();
    r.latency_s = 1e-7; /* under the one hop of 0.3 us: the hop becomes 0 */
    oc_test_expect_ok(oc_netbw_write_topology(out, cal_path, &cal, &r, "cuda", &st), st.msg);
    oc_test_expect_ok(oc_topology_load(out, &t, &st), st.msg);
    CU_ASSERT_EQUAL(t.gpus_per_node, 2);
    OC_ASSERT_REL(t.calib_gemm_flops, 5e10, 1e-6);
    OC_ASSERT_REL(t.calib_mem_Bps, 1e10, 1e-6);
    OC_ASSERT_REL(t.nic_bandwidth_Bps, 4e9, 1e-6);
    CU_ASSERT_EQUAL(t.inter_latency_s, 0.0);
    OC_ASSERT_REL(t.nic_latency_s, 1e-7, 1e-6);
    json_error_t err;
    json_t *doc = json_load_file(out, 0, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    const char *hop = source_of(doc, "inter_node.latency_s");
    CU_ASSERT_PTR_NOT_NULL_FATAL(hop);
    CU_ASSERT_EQUAL(strncmp(hop, "0, measured by ocsim-exec --backend cuda --netbw", 48), 0);
    CU_ASSERT_PTR_NOT_NULL(source_of(doc, "device.peak_flops_16bit")); /* --calibrate's */
    CU_ASSERT_PTR_NOT_NULL(json_object_get(doc, "calibration"));
    json_decref(doc);

    /* A base file that is gone: one line naming it. */
    snprintf(cal_path, sizeof cal_path, "%s/gone.json", oc_test_dir);
    oc_test_expect_fail(oc_netbw_write_topology(out, cal_path, &cal, &r, "cpu", &st),
                        st.msg, (const char *const[]){"gone.json: cannot read it again",
                                                      NULL});
}

static CU_TestInfo tests[] = {
    {"nodes by host name", test_map_hosts},
    {"nodes by --ranks-per-node", test_map_groups},
    {"the checks' data", test_patterns},
    {"the fabric from the figures", test_fabric},
    {"the file", test_write},
    {"over a calibrated file", test_write_over_calibrated},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"netbw", suite_init, oc_test_dir_remove, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
