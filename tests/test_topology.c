/* test_topology.c: the topology reader (core/topology.c) and its helpers.
 *
 * Every shipped topology loads and cites a source for every number; the
 * helpers (nodes, same node, bandwidth of one flow, latency) give values
 * worked out by hand; every error is one line naming the file, the field
 * and the rule. Broken files are made from tests/data/topo_ok.json by
 * changing one piece of text, so each case shows exactly what it breaks.
 */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paths.h"
#include "test_util.h"
#include "topology.h"

#define DATA(f) OC_TEST_DATA "/" f

/* Write topo_ok.json with `from` replaced by `to` (from must occur once)
 * into oc_test_dir/<name>; returns the path in a static buffer. */
static const char *variant(const char *name, const char *from, const char *to)
{
    static char path[512];
    char *base = oc_test_read_file(DATA("topo_ok.json"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(base);
    char *at = strstr(base, from);
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    CU_ASSERT_PTR_NULL(strstr(at + 1, from));
    snprintf(path, sizeof path, "%s/%s", oc_test_dir, name);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fwrite(base, 1, (size_t)(at - base), f);
    fputs(to, f);
    fputs(at + strlen(from), f);
    fclose(f);
    free(base);
    return path;
}

/* Write `text` into oc_test_dir/<name>; returns the path in a static buffer. */
static const char *scratch_file(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", oc_test_dir, name);
    oc_test_write_file(path, text);
    return path;
}

static struct oc_topology load_ok(const char *name)
{
    struct oc_topology t;
    struct oc_status st = {{0}};
    oc_test_expect_ok(oc_topology_load(name, &t, &st), st.msg);
    return t;
}

static void expect_error(const char *file, const char *const *subs)
{
    struct oc_topology t;
    memset(&t, 0x5a, sizeof t);
    struct oc_status st = {{0}};
    oc_test_expect_fail(oc_topology_load(file, &t, &st), st.msg, subs);
    CU_ASSERT_EQUAL(t.gpus_per_node, 0); /* zeroed on failure */
}

#define EXPECT_ERROR(file, ...)                                                \
    do {                                                                       \
        static const char *const subs_[] = {__VA_ARGS__, NULL};                \
        expect_error(file, subs_);                                             \
    } while (0)

/* Every number a shipped file gives, by its dotted name. */
static const char *const numeric_fields[] = {
    "gpus_per_node", "device.peak_flops_16bit", "device.memory_bytes",
    "device.hbm_bandwidth_Bps", "device.sm_count", "device.gemm_efficiency",
    "intra_node.bandwidth_Bps", "intra_node.latency_s", "nic.count_per_node",
    "nic.bandwidth_Bps", "nic.latency_s", "inter_node.latency_s",
    "inter_node.switch_levels", "inter_node.oversubscription", NULL,
};

static void test_every_shipped_topology_loads_with_sources(void)
{
    char list[1024];
    oc_data_list("topologies", list, sizeof list);
    const char *want[] = {"dgx-a100", "dgx-h100", "eth25g", "h100-100g", "h200-node"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(list, want[i]));
    int n = 0;
    char *save = NULL;
    for (char *name = strtok_r(list, ", ", &save); name;
         name = strtok_r(NULL, ", ", &save)) {
        struct oc_topology t = load_ok(name);
        CU_ASSERT_STRING_EQUAL(t.name, name);
        CU_ASSERT_EQUAL(oc_topology_check(&t, name, NULL), 0);
        /* A shipped file cites a public source for every number. */
        char path[4096];
        CU_ASSERT_EQUAL_FATAL(oc_data_path("topologies", name, path, sizeof path, NULL), 0);
        json_t *root = json_load_file(path, 0, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(root);
        json_t *src = json_object_get(root, "sources");
        CU_ASSERT_FATAL(json_is_object(src));
        /* node groups (mixed-h100-a100): a device or node-fabric number
         * of each group as "node_groups.<name>.<field>", where the group
         * gives it */
        json_t *groups = json_object_get(root, "node_groups");
        for (int i = 0; numeric_fields[i]; i++) {
            const char *fld = numeric_fields[i];
            const int per_group = strncmp(fld, "device.", 7) == 0 ||
                                  strncmp(fld, "intra_node.", 11) == 0 ||
                                  strncmp(fld, "nic.", 4) == 0;
            size_t gi;
            json_t *g;
            int ok = 1;
            if (json_is_array(groups) && per_group) {
                json_array_foreach(groups, gi, g) {
                    char sec[32], key[160];
                    snprintf(sec, sizeof sec, "%.*s", (int)(strchr(fld, '.') - fld), fld);
                    snprintf(key, sizeof key, "node_groups.%s.%s",
                             json_string_value(json_object_get(g, "name")), fld);
                    json_t *s = json_object_get(src, json_object_get(g, sec) ? key : fld);
                    ok = ok && json_is_string(s) && json_string_length(s) >= 10;
                }
            } else {
                json_t *s = json_object_get(src, fld);
                ok = json_is_string(s) && json_string_length(s) >= 10;
            }
            CU_ASSERT(ok);
            if (!ok)
                fprintf(stderr, "\n  %s: no source for %s\n", name, fld);
        }
        json_decref(root);
        n++;
    }
    CU_ASSERT(n >= 5);
}

/* h100-100g, the default: 8 GPUs per node, one 100 Gb/s link (12.5e9 B/s)
 * per node, one switch.
 *   inter_Bps(1) = min(12.5e9, 1*12.5e9/1) = 12.5e9
 *   inter_Bps(8) = min(12.5e9, 12.5e9/8) = 1.5625e9 (one switch: no
 *   oversubscription)
 *   inter_latency = 2e-6 + (2*1 - 1)*3e-7 = 2.3e-6
 *   memory 81559 MiB = 81559 * 1048576 = 85520809984 bytes */
static void test_h100_100g(void)
{
    struct oc_topology t = load_ok("h100-100g");
    CU_ASSERT_STRING_EQUAL(t.name, "h100-100g");
    CU_ASSERT_EQUAL(t.gpus_per_node, 8);
    CU_ASSERT_EQUAL(t.nics_per_node, 1);
    CU_ASSERT_EQUAL(t.switch_levels, 1);
    CU_ASSERT_EQUAL(t.device.sm_count, 132);
    CU_ASSERT_DOUBLE_EQUAL(t.device.peak_flops_16bit, 989e12, 1.0);
    CU_ASSERT_DOUBLE_EQUAL(t.device.memory_bytes, 85520809984.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(t.device.hbm_bandwidth_Bps, 3.35e12, 1.0);
    CU_ASSERT_DOUBLE_EQUAL(t.device.gemm_efficiency, 0.75, 1e-12);
    /* line rate 450e9; NCCL's figure 18 links x 20.6e9 (core/nccl_model.h) */
    CU_ASSERT_DOUBLE_EQUAL(t.intra_bandwidth_Bps, 450e9, 1.0);
    CU_ASSERT_DOUBLE_EQUAL(oc_topology_intra_Bps(&t), 370.8e9, 1.0);
    CU_ASSERT_DOUBLE_EQUAL(t.nic_bandwidth_Bps, 12.5e9, 1.0);
    CU_ASSERT_DOUBLE_EQUAL(oc_topology_inter_Bps(&t, 1), 12.5e9, 1.0);
    CU_ASSERT_DOUBLE_EQUAL(oc_topology_inter_Bps(&t, 8), 1.5625e9, 1.0);
    OC_ASSERT_REL(oc_topology_inter_latency_s(&t), 2.3e-6, 1e-12);
    CU_ASSERT_EQUAL(t.calib_gemm_flops, 0.0);
    CU_ASSERT_EQUAL(t.calib_mem_Bps, 0.0);
}

/* dgx-h100: 8 NICs of 400 Gb/s (50e9 B/s), leaf-spine, non-blocking.
 *   inter_Bps(1)  = min(50e9, 8*50e9/1) / 1 = 50e9 (one NIC caps a flow)
 *   inter_Bps(8)  = min(50e9, 400e9/8) = 50e9
 *   inter_Bps(16) = min(50e9, 400e9/16) = 25e9
 *   latency = 1.5e-6 + (2*2 - 1)*1.3e-7 = 1.89e-6
 * dgx-a100: 8 x 200 Gb/s = 25e9 B/s each; A100 312e12 FLOP/s, 108 SMs,
 *   81920 MiB = 85899345920 bytes; NVLink 300e9 per direction.
 * h200-node: 143771 MiB = 150754820096 bytes, 4.8e12 B/s, one switch. */
static void test_dgx_and_h200(void)
{
    struct oc_topology t = load_ok("dgx-h100");
    CU_ASSERT_EQUAL(t.nics_per_node, 8);
    CU_ASSERT_EQUAL(t.switch_levels, 2);
    CU_ASSERT_DOUBLE_EQUAL(oc_topology_inter_Bps(&t, 1), 50e9, 1.0);
    CU_ASSERT_DOUBLE_EQUAL(oc_topology_inter_Bps(&t, 8), 50e9, 1.0);
    CU_ASSERT_DOUBLE_EQUAL(oc_topology_inter_Bps(&t, 16), 25e9, 1.0);
    OC_ASSERT_REL(oc_topology_inter_latency_s(&t), 1.89e-6, 1e-12);

    t = load_ok("dgx-a100");
    CU_ASSERT_DOUBLE_EQUAL(t.device.peak_flops_16bit, 312e12, 1.0);
    CU_ASSERT_EQUAL(t.device.sm_count, 108);
    CU_ASSERT_DOUBLE_EQUAL(t.device.memory_bytes, 85899345920.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(t.intra_bandwidth_Bps, 300e9, 1.0);
    CU_ASSERT_DOUBLE_EQUAL(t.nic_bandwidth_Bps, 25e9, 1.0);
    CU_ASSERT_EQUAL(t.nics_per_node, 8);

    t = load_ok("h200-node");
    CU_ASSERT_DOUBLE_EQUAL(t.device.memory_bytes, 150754820096.0, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(t.device.hbm_bandwidth_Bps, 4.8e12, 1.0);
    CU_ASSERT_EQUAL(t.switch_levels, 1);
    CU_ASSERT_EQUAL(oc_topology_nodes(&t, 8), 1);
}

/* eth25g: one 25 Gb/s port (3.125e9 B/s), leaf-spine, 2:1: the node's
 * uplink share is 3.125e9/2 = 1.5625e9, below its one port.
 *   inter_Bps(1) = min(3.125e9, 3.125e9, 1.5625e9) = 1.5625e9
 *   inter_Bps(8) = min(3.125e9, 3.125e9/8, 1.5625e9/8) = 195312500
 *   latency = 1e-5 + 3*1e-6 = 1.3e-5 */
static void test_eth25g(void)
{
    struct oc_topology t = load_ok("eth25g");
    CU_ASSERT_DOUBLE_EQUAL(t.oversubscription, 2.0, 0.0);
    CU_ASSERT_DOUBLE_EQUAL(oc_topology_inter_Bps(&t, 1), 1.5625e9, 1.0);
    CU_ASSERT_DOUBLE_EQUAL(oc_topology_inter_Bps(&t, 8), 195312500.0, 1e-3);
    OC_ASSERT_REL(oc_topology_inter_latency_s(&t), 1.3e-5, 1e-12);
}

/* topo_ok.json (a user file, given by path, no sources): 4 GPUs per node,
 * 2 NICs of 1e10 B/s, 2 switch levels, oversubscription 4.
 *   nodes(9) = ceil(9/4) = 3; nodes(8) = 2; nodes(1) = 1; nodes(0) = 0
 *   same_node(3, 4) = 0 (nodes 0 and 1); same_node(4, 7) = 1
 *   (the node's uplink share 2e10/4 = 5e9, max-min over the flows)
 *   inter_Bps(1) = min(1e10, 2e10/1, 5e9/1) = 5e9
 *   inter_Bps(4) = min(1e10, 2e10/4, 5e9/4) = 1.25e9
 *   latency = 2e-6 + (2*2 - 1)*5e-7 = 3.5e-6 */
static void test_user_file_and_helpers(void)
{
    struct oc_topology t = load_ok(DATA("topo_ok.json"));
    CU_ASSERT_STRING_EQUAL(t.name, "test-ok");
    CU_ASSERT_STRING_EQUAL(t.device.name, "gpu");
    CU_ASSERT_STRING_EQUAL(t.nic_name, "nic");
    CU_ASSERT_EQUAL(oc_topology_nodes(&t, 9), 3);
    CU_ASSERT_EQUAL(oc_topology_nodes(&t, 8), 2);
    CU_ASSERT_EQUAL(oc_topology_nodes(&t, 1), 1);
    CU_ASSERT_EQUAL(oc_topology_nodes(&t, 0), 0);
    CU_ASSERT_EQUAL(oc_topology_same_node(&t, 3, 4), 0);
    CU_ASSERT_EQUAL(oc_topology_same_node(&t, 4, 7), 1);
    CU_ASSERT_EQUAL(oc_topology_same_node(&t, 0, 0), 1);
    CU_ASSERT_DOUBLE_EQUAL(oc_topology_inter_Bps(&t, 1), 5e9, 1.0);
    CU_ASSERT_DOUBLE_EQUAL(oc_topology_inter_Bps(&t, 4), 1.25e9, 1.0);
    OC_ASSERT_REL(oc_topology_inter_latency_s(&t), 3.5e-6, 1e-12);

    /* Without "name", the file stem names it. */
    t = load_ok(variant("anonymous.json", "\"name\": \"test-ok\",", ""));
    CU_ASSERT_STRING_EQUAL(t.name, "anonymous");

    /* A calibration replaces nothing here but is read. */
    t = load_ok(variant("calibrated.json", "\"gpus_per_node\": 4,",
                        "\"gpus_per_node\": 4, \"calibration\": {\"gemm_flops\": 6e14, \"mem_Bps\": 2.5e12},"));
    CU_ASSERT_DOUBLE_EQUAL(t.calib_gemm_flops, 6e14, 1.0);
    CU_ASSERT_DOUBLE_EQUAL(t.calib_mem_Bps, 2.5e12, 1.0);

    /* Sources are allowed in a user file, and latency 0 (an ideal link). */
    t = load_ok(variant("sourced.json", "\"gpus_per_node\": 4,",
                        "\"gpus_per_node\": 4, \"sources\": {\"nic.bandwidth_Bps\": \"my switch's manual\"},"));
    t = load_ok(variant("zero_lat.json", "\"latency_s\": 1e-6", "\"latency_s\": 0"));
    CU_ASSERT_EQUAL(t.intra_latency_s, 0.0);
}

static void test_check_struct(void)
{
    struct oc_topology t = load_ok(DATA("topo_ok.json"));
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_topology_check(&t, "here", &st), 0);
    struct oc_topology bad = t;
    bad.device.gemm_efficiency = 0.0;
    CU_ASSERT_EQUAL(oc_topology_check(&bad, "here", &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "here: field 'device.gemm_efficiency' must be in (0, 1] (got 0)"));
    bad = t;
    bad.switch_levels = 0;
    CU_ASSERT_EQUAL(oc_topology_check(&bad, "here", &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "'inter_node.switch_levels' must be a positive integer (got 0)"));
    bad = t;
    bad.calib_mem_Bps = -1.0;
    CU_ASSERT_EQUAL(oc_topology_check(&bad, "here", &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "'calibration.mem_Bps' must be a positive number"));
}

static void test_errors(void)
{
    /* Line 4 of topo_broken.json ends its "device" object with ",}";
     * jansson stops at the '}' in column 54. */
    EXPECT_ERROR(DATA("topo_broken.json"), "topo_broken.json:4:54: ", "expected");
    EXPECT_ERROR(scratch_file("array.json", "[1, 2]\n"),
                 "array.json: must hold a JSON object ({...}), not an array");
    EXPECT_ERROR(variant("missing_nic.json",
                         "  \"nic\": {\"name\": \"nic\", \"count_per_node\": 2, \"bandwidth_Bps\": 1e10, \"latency_s\": 2e-6},\n",
                         ""),
                 "missing_nic.json: field 'nic' is missing");
    EXPECT_ERROR(variant("missing_bw.json", "\"bandwidth_Bps\": 1e10, ", ""),
                 "missing_bw.json: field 'nic.bandwidth_Bps' is missing");
    EXPECT_ERROR(variant("missing_gpn.json", "\"gpus_per_node\": 4,", ""),
                 "missing_gpn.json: field 'gpus_per_node' is missing");
    EXPECT_ERROR(variant("string_sm.json", "\"sm_count\": 80", "\"sm_count\": \"80\""),
                 "string_sm.json: field 'device.sm_count' must be an integer, not a string");
    EXPECT_ERROR(variant("string_bw.json", "\"bandwidth_Bps\": 1e11", "\"bandwidth_Bps\": \"100 GB/s\""),
                 "string_bw.json: field 'intra_node.bandwidth_Bps' must be a number, not a string");
    EXPECT_ERROR(variant("float_gpn.json", "\"gpus_per_node\": 4,", "\"gpus_per_node\": 4.5,"),
                 "float_gpn.json: field 'gpus_per_node' must be an integer (got 4.5)");
    EXPECT_ERROR(variant("zero_levels.json", "\"switch_levels\": 2", "\"switch_levels\": 0"),
                 "zero_levels.json: field 'inter_node.switch_levels' must be a positive integer (got 0)");
    EXPECT_ERROR(variant("zero_peak.json", "\"peak_flops_16bit\": 1e14", "\"peak_flops_16bit\": 0"),
                 "zero_peak.json: field 'device.peak_flops_16bit' must be a positive number (got 0)");
    EXPECT_ERROR(variant("neg_lat.json", "\"latency_s\": 2e-6", "\"latency_s\": -2e-6"),
                 "neg_lat.json: field 'nic.latency_s' must be a non-negative number (got -2e-6)");
    EXPECT_ERROR(variant("eff_big.json", "\"gemm_efficiency\": 0.5", "\"gemm_efficiency\": 1.5"),
                 "eff_big.json: field 'device.gemm_efficiency' must be in (0, 1] (got 1.5)");
    EXPECT_ERROR(variant("eff_zero.json", "\"gemm_efficiency\": 0.5", "\"gemm_efficiency\": 0"),
                 "eff_zero.json: field 'device.gemm_efficiency' must be in (0, 1] (got 0)");
    EXPECT_ERROR(variant("oversub.json", "\"oversubscription\": 4", "\"oversubscription\": 0.5"),
                 "oversub.json: field 'inter_node.oversubscription' must be >= 1 (got 0.5)");
    /* 100 for "100 Gb/s": a unit mistake. */
    EXPECT_ERROR(variant("gbps.json", "\"bandwidth_Bps\": 1e10", "\"bandwidth_Bps\": 100"),
                 "gbps.json: field 'nic.bandwidth_Bps' is absurd (100 < 1e6; the unit is bytes per second)");
    EXPECT_ERROR(variant("peak_big.json", "\"peak_flops_16bit\": 1e14", "\"peak_flops_16bit\": 1e20"),
                 "peak_big.json: field 'device.peak_flops_16bit' is absurd (1e20 > 1e17; the unit is FLOP/s)");
    /* 5 for "5 us". */
    EXPECT_ERROR(variant("lat_us.json", "\"latency_s\": 5e-7", "\"latency_s\": 5"),
                 "lat_us.json: field 'inter_node.latency_s' is absurd (5 > 1; the unit is seconds)");
    EXPECT_ERROR(variant("many_gpus.json", "\"gpus_per_node\": 4,", "\"gpus_per_node\": 1000000,"),
                 "many_gpus.json: field 'gpus_per_node' is absurd (1e6 > 10000)");
    EXPECT_ERROR(variant("typo.json", "\"hbm_bandwidth_Bps\"", "\"hbm_bandwith_Bps\""),
                 "typo.json: field 'device.hbm_bandwith_Bps' is unknown", "hbm_bandwidth_Bps");
    EXPECT_ERROR(variant("section_type.json",
                         "\"nic\": {\"name\": \"nic\", \"count_per_node\": 2, \"bandwidth_Bps\": 1e10, \"latency_s\": 2e-6}",
                         "\"nic\": 3"),
                 "section_type.json: field 'nic' must be an object ({...}), not an integer");
    EXPECT_ERROR(variant("top_typo.json", "\"gpus_per_node\"", "\"gpu_per_node\""),
                 "top_typo.json: field 'gpu_per_node' is unknown");
    EXPECT_ERROR(variant("bad_source.json", "\"gpus_per_node\": 4,",
                         "\"gpus_per_node\": 4, \"sources\": {\"device.peak\": \"x\"},"),
                 "bad_source.json: field 'sources.device.peak' names no field");
    EXPECT_ERROR(variant("source_num.json", "\"gpus_per_node\": 4,",
                         "\"gpus_per_node\": 4, \"sources\": {\"gpus_per_node\": 8},"),
                 "source_num.json: field 'sources.gpus_per_node' must be a non-empty string, not an integer");
    EXPECT_ERROR(variant("calib_neg.json", "\"gpus_per_node\": 4,",
                         "\"gpus_per_node\": 4, \"calibration\": {\"gemm_flops\": -1},"),
                 "calib_neg.json: field 'calibration.gemm_flops' must be a positive number (got -1)");
    EXPECT_ERROR("no-such-topology", "unknown topology 'no-such-topology'",
                 "h100-100g", "dgx-h100", "eth25g");
    EXPECT_ERROR(DATA("does-not-exist.json"), "does-not-exist.json: no such file");
}

/* A calibration of the cpu executor (ocsim-exec --calibrate): the element
 * size, the optimizer's time per parameter, a rate per part and phase and
 * the embedding's time per token are read into their fields; the keys
 * name the parts in enum order; sources may cite a nested object whole. */
static void test_calibration_parts(void)
{
    static const char *const keys[OC_CALIB_PARTS] = {
        "attn_fwd", "attn_bwd", "attn_recompute", "mlp_fwd", "mlp_bwd",
        "head_fwd", "head_bwd"};
    for (int k = 0; k < OC_CALIB_PARTS; k++)
        CU_ASSERT_STRING_EQUAL(oc_calib_part_key((enum oc_calib_part)k), keys[k]);
    CU_ASSERT_PTR_NULL(oc_calib_part_key(OC_CALIB_PARTS));

    struct oc_topology t = load_ok(variant(
        "parts.json", "\"gpus_per_node\": 4,",
        "\"gpus_per_node\": 4, \"calibration\": {\"gemm_flops\": 1.1e11, "
        "\"activation_bytes\": 4, \"optimizer_s_per_param\": 3.5e-9, "
        "\"part_flops_per_s\": {\"attn_fwd\": 2e10, \"attn_bwd\": 3e10, "
        "\"attn_recompute\": 1.5e10, \"mlp_fwd\": 1.6e10, \"mlp_bwd\": 1.9e10, "
        "\"head_fwd\": 2.3e10, \"head_bwd\": 9e10}, "
        "\"part_s_per_token\": {\"embed_fwd\": 6e-8, \"embed_bwd\": 5e-8}}, "
        "\"sources\": {\"calibration.part_flops_per_s\": \"measured\", "
        "\"calibration.part_s_per_token\": \"measured\"},"));
    OC_ASSERT_REL(t.calib_gemm_flops, 1.1e11, 1e-12);
    CU_ASSERT_EQUAL(t.calib_mem_Bps, 0.0); /* absent stays 0 */
    CU_ASSERT_EQUAL(t.calib_act_bytes, 4.0);
    OC_ASSERT_REL(t.calib_optimizer_s_per_param, 3.5e-9, 1e-12);
    const double rates[OC_CALIB_PARTS] = {2e10, 3e10, 1.5e10, 1.6e10, 1.9e10, 2.3e10, 9e10};
    for (int k = 0; k < OC_CALIB_PARTS; k++)
        OC_ASSERT_REL(t.calib_part_flops[k], rates[k], 1e-12);
    OC_ASSERT_REL(t.calib_embed_fwd_s_per_token, 6e-8, 1e-12);
    OC_ASSERT_REL(t.calib_embed_bwd_s_per_token, 5e-8, 1e-12);

    /* Every part is optional: one rate alone leaves the others 0. */
    t = load_ok(variant("one_part.json", "\"gpus_per_node\": 4,",
                        "\"gpus_per_node\": 4, \"calibration\": "
                        "{\"part_flops_per_s\": {\"mlp_bwd\": 2e10}},"));
    OC_ASSERT_REL(t.calib_part_flops[OC_CALIB_MLP_BWD], 2e10, 1e-12);
    CU_ASSERT_EQUAL(t.calib_part_flops[OC_CALIB_MLP_FWD], 0.0);
    CU_ASSERT_EQUAL(t.calib_act_bytes, 0.0);
    CU_ASSERT_EQUAL(t.calib_embed_fwd_s_per_token, 0.0);

    /* The uncalibrated shipped file has none of them. */
    t = load_ok("h100-100g");
    for (int k = 0; k < OC_CALIB_PARTS; k++)
        CU_ASSERT_EQUAL(t.calib_part_flops[k], 0.0);
    CU_ASSERT_EQUAL(t.calib_optimizer_s_per_param, 0.0);

    /* oc_topology_check holds a struct built in code to the same rules. */
    struct oc_status st = {{0}};
    t = load_ok(DATA("topo_ok.json"));
    t.calib_part_flops[OC_CALIB_ATTN_RECOMPUTE] = -1.0;
    CU_ASSERT_EQUAL(oc_topology_check(&t, "here", &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "here: field 'calibration.part_flops_per_s.attn_recompute' "
                                          "must be a positive number (got -1)"));
    t = load_ok(DATA("topo_ok.json"));
    t.calib_act_bytes = 16;
    CU_ASSERT_EQUAL(oc_topology_check(&t, "here", &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "'calibration.activation_bytes' must be in (0, 8] (got 16)"));
}

static void test_calibration_errors(void)
{
#define CAL(name, text) variant(name, "\"gpus_per_node\": 4,", "\"gpus_per_node\": 4, " text ",")
    EXPECT_ERROR(CAL("cal_typo.json", "\"calibration\": {\"part_flops_per_s\": {\"attn_fw\": 1e9}}"),
                 "cal_typo.json: field 'calibration.part_flops_per_s.attn_fw' is unknown",
                 "attn_fwd, attn_bwd, attn_recompute, mlp_fwd, mlp_bwd, head_fwd, head_bwd");
    /* Full recompute reruns the forward and has no rate of its own. */
    EXPECT_ERROR(CAL("cal_mlp_rc.json", "\"calibration\": {\"part_flops_per_s\": {\"mlp_recompute\": 1e9}}"),
                 "cal_mlp_rc.json: field 'calibration.part_flops_per_s.mlp_recompute' is unknown");
    EXPECT_ERROR(CAL("cal_neg.json", "\"calibration\": {\"part_flops_per_s\": {\"attn_fwd\": -1}}"),
                 "cal_neg.json: field 'calibration.part_flops_per_s.attn_fwd' must be a positive number (got -1)");
    EXPECT_ERROR(CAL("cal_zero.json", "\"calibration\": {\"part_s_per_token\": {\"embed_bwd\": 0}}"),
                 "cal_zero.json: field 'calibration.part_s_per_token.embed_bwd' must be a positive number (got 0)");
    EXPECT_ERROR(CAL("cal_str.json", "\"calibration\": {\"part_flops_per_s\": {\"head_bwd\": \"fast\"}}"),
                 "cal_str.json: field 'calibration.part_flops_per_s.head_bwd' must be a number, not a string");
    EXPECT_ERROR(CAL("cal_obj.json", "\"calibration\": {\"part_flops_per_s\": 3}"),
                 "cal_obj.json: field 'calibration.part_flops_per_s' must be an object ({...}), not an integer");
    /* 10 for "10 GFLOP/s", 5 for "5 us", 0.1 for "100 ns": unit mistakes. */
    EXPECT_ERROR(CAL("cal_gflops.json", "\"calibration\": {\"part_flops_per_s\": {\"mlp_bwd\": 10}}"),
                 "cal_gflops.json: field 'calibration.part_flops_per_s.mlp_bwd' is absurd (10 < 1000; the unit is FLOP/s)");
    EXPECT_ERROR(CAL("cal_us.json", "\"calibration\": {\"part_s_per_token\": {\"embed_fwd\": 5}}"),
                 "cal_us.json: field 'calibration.part_s_per_token.embed_fwd' is absurd (5 > 1; the unit is seconds per token)");
    EXPECT_ERROR(CAL("cal_opt.json", "\"calibration\": {\"optimizer_s_per_param\": 0.1}"),
                 "cal_opt.json: field 'calibration.optimizer_s_per_param' is absurd (0.1 > 0.001; the unit is seconds per parameter)");
    EXPECT_ERROR(CAL("cal_elem.json", "\"calibration\": {\"activation_bytes\": 16}"),
                 "cal_elem.json: field 'calibration.activation_bytes' must be in (0, 8] (got 16)");
    EXPECT_ERROR(CAL("cal_key.json", "\"calibration\": {\"part_rates\": {}}"),
                 "cal_key.json: field 'calibration.part_rates' is unknown",
                 "part_flops_per_s, part_s_per_token");
    EXPECT_ERROR(CAL("cal_src.json", "\"sources\": {\"calibration.part_rates\": \"x\"}"),
                 "cal_src.json: field 'sources.calibration.part_rates' names no field");
#undef CAL
}

/* A name looked up in the shipped folder must cite its sources. */
static void test_shipped_needs_sources(void)
{
    char dir[300], path[400];
    snprintf(dir, sizeof dir, "%s/data", oc_test_dir);
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/topologies", dir);
    mkdir(path, 0700);
    char *base = oc_test_read_file(DATA("topo_ok.json"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(base);
    snprintf(path, sizeof path, "%s/topologies/nosources.json", dir);
    oc_test_write_file(path, base);
    free(base);

    char *saved = getenv("OCSIM_DATA_DIR") ? strdup(getenv("OCSIM_DATA_DIR")) : NULL;
    setenv("OCSIM_DATA_DIR", dir, 1);
    EXPECT_ERROR("nosources", "nosources.json: field 'sources' is missing");
    /* The same file given by path is a user's file: sources optional. */
    load_ok(path);
    if (saved) {
        setenv("OCSIM_DATA_DIR", saved, 1);
        free(saved);
    } else {
        unsetenv("OCSIM_DATA_DIR");
    }
}

static void load_topologies(void *arg)
{
    for (const char *const *f = arg; *f; f++) {
        struct oc_topology t;
        struct oc_status st;
        oc_topology_load(*f, &t, &st);
    }
}

/* Library code never prints. */
static void test_quiet(void)
{
    const char *gbps = variant("quiet_gbps.json", "\"bandwidth_Bps\": 1e10", "\"bandwidth_Bps\": 100");
    const char *files[] = {DATA("topo_broken.json"), gbps, "no-such-topology",
                           DATA("does-not-exist.json"), "h100-100g", NULL};
    CU_ASSERT_EQUAL(oc_test_output_bytes(load_topologies, files), 0);
}

/* Defect 7 of issue 11: a key or a path of the user's is shown escaped
 * (a newline in a topology key broke the one-line message, terminal
 * escapes passed). */
static void test_messages_escaped(void)
{
    EXPECT_ERROR(variant("key-nl.json", "\"gpus_per_node\"", "\"gpus\\nper\\u001b[2J\": 1, \"gpus_per_node\""),
                 "field 'gpus\\nper\\x1b[2J' is unknown (known here: name, description,");
    EXPECT_ERROR(variant("src-key.json", "\"gpus_per_node\"",
                         "\"sources\": {\"dev\\u202eice\": \"x\"}, \"gpus_per_node\""),
                 "field 'sources.dev\\u202eice' names no field of a topology");
    EXPECT_ERROR(variant("dev-key.json", "\"sm_count\"", "\"s\\tm\": 3, \"sm_count\""),
                 "field 'device.s\\tm' is unknown");
    /* a path with a newline and bytes that are not UTF-8 */
    char path[600];
    snprintf(path, sizeof path, "%s/a\nb\xff.json", oc_test_dir);
    oc_test_write_file(path, "[1]");
    EXPECT_ERROR(path, "/a\\nb\\xff.json: must hold a JSON object");
}

/* Oversubscription is max-min on the node's share of the uplinks, as the
 * simulator's up<n> link (sim/platform.c): 8 NICs of 25e9 B/s, leaf-spine
 * at 2:1, so the uplinks carry 8*25e9/2 = 100e9 B/s, 4 NICs' worth.
 *   1 flow:   min(25e9, 200e9, 100e9)        = 25e9 (its full NIC; the
 *             uplinks are not full: dividing by 2 would give 12.5e9)
 *   4 flows:  min(25e9, 200e9/4, 100e9/4)    = 25e9 (exactly full)
 *   5 flows:  min(25e9, 40e9, 100e9/5)       = 20e9
 *   8 flows:  min(25e9, 25e9, 100e9/8)       = 12.5e9
 *   16 flows: min(25e9, 12.5e9, 100e9/16)    = 6.25e9
 * One switch (no uplinks): 8 flows min(25e9, 25e9) = 25e9. */
static void test_oversub_max_min(void)
{
    struct oc_topology t;
    memset(&t, 0, sizeof t);
    t.gpus_per_node = 8;
    t.nics_per_node = 8;
    t.nic_bandwidth_Bps = 25e9;
    t.switch_levels = 2;
    t.oversubscription = 2;
    OC_ASSERT_REL(oc_topology_inter_Bps(&t, 1), 25e9, 1e-15);
    OC_ASSERT_REL(oc_topology_inter_Bps(&t, 4), 25e9, 1e-15);
    OC_ASSERT_REL(oc_topology_inter_Bps(&t, 5), 20e9, 1e-15);
    OC_ASSERT_REL(oc_topology_inter_Bps(&t, 8), 12.5e9, 1e-15);
    OC_ASSERT_REL(oc_topology_inter_Bps(&t, 16), 6.25e9, 1e-15);
    t.switch_levels = 1;
    OC_ASSERT_REL(oc_topology_inter_Bps(&t, 8), 25e9, 1e-15);
}

static CU_TestInfo topology_tests[] = {
    {"oversubscription: max-min on the uplinks", test_oversub_max_min},
    {"every shipped topology loads, with sources", test_every_shipped_topology_loads_with_sources},
    {"h100-100g values and helpers", test_h100_100g},
    {"dgx-h100, dgx-a100, h200-node", test_dgx_and_h200},
    {"eth25g oversubscription", test_eth25g},
    {"user file and helpers", test_user_file_and_helpers},
    {"oc_topology_check", test_check_struct},
    {"error messages", test_errors},
    {"calibration of the parts", test_calibration_parts},
    {"calibration errors", test_calibration_errors},
    {"shipped files need sources", test_shipped_needs_sources},
    {"library code is quiet", test_quiet},
    {"messages escaped (defect 7)", test_messages_escaped},
    CU_TEST_INFO_NULL,
};

static int suite_init(void) { return oc_test_dir_make("topology"); }

static CU_SuiteInfo suites[] = {
    {"topology", suite_init, oc_test_dir_remove, NULL, NULL, topology_tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    setenv("OCSIM_DATA_DIR", OC_TEST_DATA "/../..", 0);
    return oc_test_run(suites);
}
