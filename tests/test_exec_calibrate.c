/* test_exec_calibrate.c: the topology file of `ocsim-exec --calibrate`
 * (exec/calib_topology.h), without MPI: a measured struct filled by hand,
 * written, read back with oc_topology_load, and used by the cost model.
 * (The MPI measurement itself, exec/cpu/calibrate_cpu.c, runs under mpirun; it is
 * not part of this test binary.)
 *
 * Base: the shipped h200-node topology. Measured, by hand: 4 ranks, a
 * 55 GFLOP/s GEMM rate, 12 GB/s triad, 8 GB of RAM per rank, 2 cores per
 * rank, MPI point-to-point 6 GB/s and 0.4 us, all-reduce busbw 3 GB/s,
 * and the executor's parts of tiny at t=2, b=1, s=128: attention forward
 * 2 GFLOP/s, backward 3, recompute 1, MLP 4 and 5, head 6 and 7; the
 * embedding 1e-7 and 2e-7 s per token; AdamW 3e-9 s per parameter.
 * The GPU calibration's variant (backend cuda, keep_peak): the same
 * figures with a 4e14 FLOP/s cuBLAS rate against h200-node's 989e12 peak.
 */
#define _XOPEN_SOURCE 700
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calib_topology.h"
#include "cost.h"
#include "layout.h"
#include "model.h"
#include "test_util.h"
#include "topology.h"

static int suite_init(void) { return oc_test_dir_make("calib"); }

static struct oc_calib_measured measured(void)
{
    struct oc_calib_measured m;
    memset(&m, 0, sizeof m);
    m.ranks = 4;
    snprintf(m.host, sizeof m.host, "testhost");
    snprintf(m.date, sizeof m.date, "2026-01-01 00:00 UTC");
    snprintf(m.cpu_name, sizeof m.cpu_name, "Test CPU 9000");
    m.cores_per_rank = 2;
    m.gemm_flops = 5.5e10;
    snprintf(m.gemm_what, sizeof m.gemm_what, "tiny, t=2, T=128 rows");
    m.mem_Bps = 1.2e10;
    m.memory_bytes = 8e9;
    m.p2p_Bps = 6e9;
    m.p2p_latency_s = 4e-7;
    m.allreduce_bytes = 64.0 * 1024 * 1024;
    m.allreduce_busbw_Bps = 3e9;
    m.allreduce_latency_s = 1e-6;
    m.p2p_msg_bytes = 32768;
    m.p2p_msg_s = 4e-7 + 32768 / 6e9;
    m.p2p_large_Bps = 9e9;
    m.parts_measured = 1;
    for (int k = 0; k < OC_CALIB_PARTS; k++)
        m.part_flops[k] = 1e9 * (k + 1); /* attn_fwd 1e9 ... head_bwd 7e9 */
    m.part_flops[OC_CALIB_ATTN_FWD] = 2e9;
    m.part_flops[OC_CALIB_ATTN_RECOMPUTE] = 1e9;
    m.embed_fwd_s_per_token = 1e-7;
    m.embed_bwd_s_per_token = 2e-7;
    m.optimizer_s_per_param = 3e-9;
    snprintf(m.parts_what, sizeof m.parts_what, "tiny parts, t=2, b=1, s=128");
    return m;
}

/* The sources of the topology written from measured(): each measured
 * field says where it comes from; the all-reduce figures under
 * "_allreduce". */
static void check_sources(const char *path)
{
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    json_t *src = json_object_get(doc, "sources");
    const char *peak = json_string_value(json_object_get(src, "device.peak_flops_16bit"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(peak);
    CU_ASSERT_EQUAL(strncmp(peak,
                            "measured by ocsim-exec --calibrate on testhost "
                            "2026-01-01 00:00 UTC, 4 ranks: fp32 cblas_sgemm",
                            strlen("measured by ocsim-exec --calibrate on testhost "
                                   "2026-01-01 00:00 UTC, 4 ranks: fp32 cblas_sgemm")),
                    0);
    CU_ASSERT_PTR_NOT_NULL(strstr(peak, "MFU is relative to it"));
    const char *ar = json_string_value(json_object_get(src, "_allreduce"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(ar);
    CU_ASSERT_PTR_NOT_NULL(strstr(ar, "67108864 bytes: busbw 3e+09 B/s"));
    CU_ASSERT_PTR_NOT_NULL(json_object_get(src, "intra_node.latency_s"));
    CU_ASSERT_PTR_NOT_NULL(json_object_get(src, "calibration.mem_Bps"));
    const char *bw = json_string_value(json_object_get(src, "intra_node.bandwidth_Bps"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(bw);
    CU_ASSERT_PTR_NOT_NULL(strstr(bw, "32768 bytes of fp32"));
    CU_ASSERT_PTR_NOT_NULL(strstr(bw, "= 6e+09 B/s, written as measured"));
    CU_ASSERT_PTR_NOT_NULL(strstr(bw, "4 bytes for the cpu executor's runs"));
    const char *parts = json_string_value(json_object_get(src, "calibration.part_flops_per_s"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(parts);
    CU_ASSERT_PTR_NOT_NULL(strstr(parts, "tiny parts, t=2, b=1, s=128"));
    CU_ASSERT_PTR_NOT_NULL(json_object_get(src, "calibration.part_s_per_token"));
    CU_ASSERT_PTR_NOT_NULL(json_object_get(src, "calibration.optimizer_s_per_param"));
    CU_ASSERT_PTR_NOT_NULL(json_object_get(src, "calibration.activation_bytes"));
    json_t *rates_obj = json_object_get(json_object_get(doc, "calibration"), "part_flops_per_s");
    CU_ASSERT_EQUAL(json_object_size(rates_obj), OC_CALIB_PARTS);
    json_decref(doc);
}

static void test_round_trip(void)
{
    struct oc_topology base, t;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("h200-node", &base, &st), 0);
    struct oc_calib_measured m = measured();
    char path[400];
    snprintf(path, sizeof path, "%s/cal.json", oc_test_dir);
    int rc = oc_calib_write_topology(path, &base, &m, &st);
    if (rc)
        fprintf(stderr, "\n  %s\n", st.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    rc = oc_topology_load(path, &t, &st);
    if (rc)
        fprintf(stderr, "\n  %s\n", st.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);

    /* Replaced by the measurement. */
    CU_ASSERT_EQUAL(t.gpus_per_node, 4);
    CU_ASSERT_STRING_EQUAL(t.device.name, "Test CPU 9000");
    OC_ASSERT_REL(t.device.peak_flops_16bit, 5.5e10, 1e-6);
    CU_ASSERT_EQUAL(t.device.gemm_efficiency, 1.0);
    CU_ASSERT_EQUAL(t.device.sm_count, 2);
    OC_ASSERT_REL(t.device.memory_bytes, 8e9, 1e-6);
    OC_ASSERT_REL(t.device.hbm_bandwidth_Bps, 1.2e10, 1e-6);
    /* As measured: the executor's runs are fp32 runs, whose schedule
     * counts the 4 bytes it sends (layout.h). */
    OC_ASSERT_REL(t.intra_bandwidth_Bps, 6e9, 1e-6);
    OC_ASSERT_REL(t.intra_latency_s, 4e-7, 1e-6);
    CU_ASSERT_STRING_EQUAL(t.intra_name, "MPI point-to-point (measured)");
    OC_ASSERT_REL(t.calib_gemm_flops, 5.5e10, 1e-6);
    OC_ASSERT_REL(t.calib_mem_Bps, 1.2e10, 1e-6);
    CU_ASSERT_EQUAL(t.calib_act_bytes, 4.0);
    const double rates[OC_CALIB_PARTS] = {2e9, 2e9, 1e9, 4e9, 5e9, 6e9, 7e9};
    for (int k = 0; k < OC_CALIB_PARTS; k++)
        OC_ASSERT_REL(t.calib_part_flops[k], rates[k], 1e-6);
    OC_ASSERT_REL(t.calib_embed_fwd_s_per_token, 1e-7, 1e-6);
    OC_ASSERT_REL(t.calib_embed_bwd_s_per_token, 2e-7, 1e-6);
    OC_ASSERT_REL(t.calib_optimizer_s_per_param, 3e-9, 1e-6);
    /* Copied from the base. */
    CU_ASSERT_STRING_EQUAL(t.name, base.name);
    CU_ASSERT_STRING_EQUAL(t.nic_name, base.nic_name);
    CU_ASSERT_EQUAL(t.nics_per_node, base.nics_per_node);
    OC_ASSERT_REL(t.nic_bandwidth_Bps, base.nic_bandwidth_Bps, 1e-6);
    OC_ASSERT_REL(t.nic_latency_s, base.nic_latency_s, 1e-6);
    OC_ASSERT_REL(t.inter_latency_s, base.inter_latency_s, 1e-6);
    CU_ASSERT_EQUAL(t.switch_levels, base.switch_levels);
    OC_ASSERT_REL(t.oversubscription, base.oversubscription, 1e-6);

    /* The struct the writer builds is the one the file gives back. */
    struct oc_topology built;
    CU_ASSERT_EQUAL_FATAL(oc_calib_topology(&base, &m, &built, &st), 0);
    OC_ASSERT_REL(built.calib_gemm_flops, t.calib_gemm_flops, 1e-6);
    CU_ASSERT_EQUAL(built.gpus_per_node, t.gpus_per_node);

    /* The cost model runs on the measured rate: a 1024^3 GEMM is
     * compute-bound (2*1024^3 = 2.147e9 FLOP at 5.5e10 FLOP/s = 39.0 ms,
     * against 3*1024^2*2 bytes at 1.2e10 B/s = 0.52 ms), and a
     * memory-bound kernel of 1.2e9 bytes takes 1.2e9 / 1.2e10 = 0.1 s. */
    struct oc_gemm g = {1024, 1024, 1024, 1, 2};
    OC_ASSERT_REL(oc_cost_gemm_s(&t, g), 2.0 * 1024 * 1024 * 1024 / 5.5e10, 1e-6);
    OC_ASSERT_REL(oc_cost_membound_s(&t, 1.2e9), 0.1, 1e-6);

    /* And on the measured parts, for tiny (h 64, a 4, f 256, V 512) at
     * t=2, b=1, s=128 with selective recompute: attention forward FLOPs
     * (2*128*4*64^2 + 4*128^2*64)/2 = 4 194 304 at 2e9 = 2.097152 ms,
     * MLP forward 2*128*2*64*256/2 = 4 194 304 at 4e9 = 1.048576 ms,
     * head backward 2 * 2*128*64*512/2 = 8 388 608 at 7e9, selective
     * recompute 4*128^2*64/2 = 2 097 152 at 1e9 = 2.097152 ms, the
     * embedding 128 tokens x 1e-7 s = 12.8 us. */
    struct oc_model tiny;
    CU_ASSERT_EQUAL_FATAL(oc_model_load("tiny", &tiny, &st), 0);
    struct oc_layout l;
    oc_layout_default(&l);
    l.tp = 2;
    l.micro_batch = 1;
    l.seq_length = 128;
    l.recompute = OC_RECOMPUTE_SELECTIVE;
    struct oc_cost c;
    oc_cost_init(&c, &tiny, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_FWD], 2.097152e-3, 1e-6);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_FWD], 1.048576e-3, 1e-6);
    OC_ASSERT_REL(c.part_s[OC_PART_HEAD][OC_PHASE_BWD], 8388608.0 / 7e9, 1e-6);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_RECOMPUTE], 2.097152e-3, 1e-6);
    OC_ASSERT_REL(c.part_s[OC_PART_EMBED][OC_PHASE_FWD], 12.8e-6, 1e-6);
    OC_ASSERT_REL(c.optimizer_s_per_param, 3e-9, 1e-6);

    /* The same rates price a Llama block by its own FLOPs (llama-tiny: h
     * 64, a 4, k 2, f 176, SwiGLU): attention forward (2*128*(64^2 + 2*64*32
     * + 64^2) + 4*128^2*64)/2 = (3 145 728 + 4 194 304)/2 = 3 670 016 at
     * 2e9 = 1.835008 ms; MLP forward 2*128*3*64*176/2 = 4 325 376 at 4e9 =
     * 1.081344 ms. */
    struct oc_model ll;
    CU_ASSERT_EQUAL_FATAL(oc_model_load("llama-tiny", &ll, &st), 0);
    oc_cost_init(&c, &ll, &l, &t);
    OC_ASSERT_REL(c.part_s[OC_PART_ATTN][OC_PHASE_FWD], 1.835008e-3, 1e-6);
    OC_ASSERT_REL(c.part_s[OC_PART_MLP][OC_PHASE_FWD], 1.081344e-3, 1e-6);

    check_sources(path);
}

static void test_one_rank(void)
{
    /* One rank: no point-to-point measured, the node fabric stays the
     * base's and the sources do not claim it; no CPU name or core count:
     * the base's device name and sm_count stay. */
    struct oc_topology base, t;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("h200-node", &base, &st), 0);
    struct oc_calib_measured m = measured();
    m.ranks = 1;
    m.p2p_Bps = m.p2p_latency_s = 0;
    m.allreduce_bytes = 0;
    m.cpu_name[0] = '\0';
    m.cores_per_rank = 0;
    m.parts_measured = 0; /* e.g. a model the executor does not run */
    char path[400];
    snprintf(path, sizeof path, "%s/one.json", oc_test_dir);
    CU_ASSERT_EQUAL_FATAL(oc_calib_write_topology(path, &base, &m, &st), 0);
    CU_ASSERT_EQUAL_FATAL(oc_topology_load(path, &t, &st), 0);
    CU_ASSERT_EQUAL(t.gpus_per_node, 1);
    CU_ASSERT_STRING_EQUAL(t.device.name, base.device.name);
    CU_ASSERT_EQUAL(t.device.sm_count, base.device.sm_count);
    OC_ASSERT_REL(t.intra_bandwidth_Bps, base.intra_bandwidth_Bps, 1e-6);
    OC_ASSERT_REL(t.intra_latency_s, base.intra_latency_s, 1e-6);
    CU_ASSERT_STRING_EQUAL(t.intra_name, base.intra_name);
    /* No parts: their rates are absent (the cost model keeps its
     * estimates), the element size is still the executor's fp32. */
    for (int k = 0; k < OC_CALIB_PARTS; k++)
        CU_ASSERT_EQUAL(t.calib_part_flops[k], 0.0);
    CU_ASSERT_EQUAL(t.calib_embed_fwd_s_per_token, 0.0);
    CU_ASSERT_EQUAL(t.calib_optimizer_s_per_param, 0.0);
    CU_ASSERT_EQUAL(t.calib_act_bytes, 4.0);
    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    json_t *src = json_object_get(doc, "sources");
    CU_ASSERT_PTR_NULL(json_object_get(src, "intra_node.bandwidth_Bps"));
    CU_ASSERT_PTR_NULL(json_object_get(src, "_allreduce"));
    CU_ASSERT_PTR_NULL(json_object_get(src, "device.name"));
    CU_ASSERT_PTR_NULL(json_object_get(src, "calibration.part_flops_per_s"));
    CU_ASSERT_PTR_NULL(json_object_get(json_object_get(doc, "calibration"), "part_flops_per_s"));
    json_decref(doc);
}

static void test_refused(void)
{
    struct oc_topology base, t;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("h200-node", &base, &st), 0);
    struct oc_calib_measured m = measured();
    m.gemm_flops = 0;
    CU_ASSERT_EQUAL(oc_calib_topology(&base, &m, &t, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "GEMM rate was not measured"));
    m = measured();
    m.mem_Bps = NAN;
    CU_ASSERT_EQUAL(oc_calib_topology(&base, &m, &t, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "memory bandwidth was not measured"));
    m = measured();
    m.ranks = 0;
    CU_ASSERT_EQUAL(oc_calib_topology(&base, &m, &t, &st), -1);
    /* Parts said to be measured must all be. */
    m = measured();
    m.part_flops[OC_CALIB_ATTN_BWD] = 0;
    CU_ASSERT_EQUAL(oc_calib_topology(&base, &m, &t, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "the rate of part attn_bwd was not measured"));
    m = measured();
    m.embed_bwd_s_per_token = NAN;
    CU_ASSERT_EQUAL(oc_calib_topology(&base, &m, &t, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "embedding's time per token was not measured"));
    m = measured();
    m.optimizer_s_per_param = -1;
    CU_ASSERT_EQUAL(oc_calib_topology(&base, &m, &t, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "optimizer's time per parameter was not measured"));
    /* A rate below 1 kFLOP/s is a unit mistake to oc_topology_check. */
    m = measured();
    m.part_flops[OC_CALIB_MLP_FWD] = 10;
    CU_ASSERT_EQUAL(oc_calib_topology(&base, &m, &t, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "calibration.part_flops_per_s.mlp_fwd"));
    /* A bandwidth below 1 MB/s is a unit mistake to oc_topology_check. */
    m = measured();
    m.p2p_Bps = 10;
    CU_ASSERT_EQUAL(oc_calib_topology(&base, &m, &t, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "intra_node.bandwidth_Bps"));
    /* An unwritable path. */
    m = measured();
    CU_ASSERT_EQUAL(oc_calib_write_topology("/nonexistent/dir/cal.json", &base, &m, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "/nonexistent/dir/cal.json: cannot write"));
}

static void test_gpu_keep_peak(void)
{
    /* The GPU calibration: the base's datasheet peak stays (h200-node:
     * 989e12 FLOP/s dense bf16) and the measured 4e14 FLOP/s becomes its
     * sustained fraction, 4e14 / 9.89e14 = 0.404449, and calibration.
     * gemm_flops; the rest as the cpu's, in NCCL's and cuBLAS's words. */
    struct oc_topology base, t;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_topology_load("h200-node", &base, &st), 0);
    OC_ASSERT_REL(base.device.peak_flops_16bit, 989e12, 1e-9); /* the premise */
    struct oc_calib_measured m = measured();
    m.backend = OC_CALIB_CUDA;
    m.keep_peak = 1;
    m.gemm_flops = 4e14;
    m.mem_Bps = 4.2e12;
    m.memory_bytes = 150e9;
    m.cores_per_rank = 132;
    snprintf(m.cpu_name, sizeof m.cpu_name, "NVIDIA H200");
    snprintf(m.gemm_what, sizeof m.gemm_what, "bf16 operands, tiny, t=2, T=128 rows");
    char path[400];
    snprintf(path, sizeof path, "%s/gpu.json", oc_test_dir);
    int rc = oc_calib_write_topology(path, &base, &m, &st);
    if (rc)
        fprintf(stderr, "\n  %s\n", st.msg);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL_FATAL(oc_topology_load(path, &t, &st), 0);
    OC_ASSERT_REL(t.device.peak_flops_16bit, 9.89e14, 1e-6);
    OC_ASSERT_REL(t.device.gemm_efficiency, 0.404449, 1e-5);
    OC_ASSERT_REL(t.calib_gemm_flops, 4e14, 1e-6);
    CU_ASSERT_STRING_EQUAL(t.device.name, "NVIDIA H200");
    CU_ASSERT_EQUAL(t.device.sm_count, 132);
    OC_ASSERT_REL(t.device.memory_bytes, 150e9, 1e-6);
    OC_ASSERT_REL(t.device.hbm_bandwidth_Bps, 4.2e12, 1e-6);
    CU_ASSERT_EQUAL(t.gpus_per_node, 4);
    /* fp32 activations on the wire, as the cpu executor; the bandwidth as
     * measured. */
    CU_ASSERT_EQUAL(t.calib_act_bytes, 4.0);
    OC_ASSERT_REL(t.intra_bandwidth_Bps, 6e9, 1e-6);
    CU_ASSERT_STRING_EQUAL(t.intra_name, "NCCL point-to-point (measured)");
    /* The cost model prices a GEMM at the measured rate (calibration.
     * gemm_flops): 2*1024^3 / 4e14 = 5.36870912 us. */
    struct oc_gemm g = {1024, 1024, 1024, 1, 2};
    OC_ASSERT_REL(oc_cost_gemm_s(&t, g), 5.36870912e-6, 1e-6);

    json_error_t err;
    json_t *doc = json_load_file(path, 0, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    json_t *src = json_object_get(doc, "sources");
    const char *peak = json_string_value(json_object_get(src, "device.peak_flops_16bit"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(peak);
    CU_ASSERT_PTR_NOT_NULL(strstr(peak, "topology h200-node's, kept"));
    CU_ASSERT_PTR_NULL(strstr(peak, "cblas"));
    const char *eff = json_string_value(json_object_get(src, "device.gemm_efficiency"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(eff);
    CU_ASSERT_PTR_NOT_NULL(strstr(eff, "= 4e+14 / 9.89e+14"));
    const char *gf = json_string_value(json_object_get(src, "calibration.gemm_flops"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(gf);
    CU_ASSERT_PTR_NOT_NULL(strstr(gf, "measured by ocsim-exec --backend cuda --calibrate on "
                                      "testhost 2026-01-01 00:00 UTC, 4 GPUs: cuBLAS GEMM "
                                      "rate per GPU, all GPUs running at once (bf16 "
                                      "operands, tiny, t=2, T=128 rows)"));
    const char *ar = json_string_value(json_object_get(src, "_allreduce"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(ar);
    CU_ASSERT_PTR_NOT_NULL(strstr(ar, "ncclAllReduce (float sum) of 67108864 bytes"));
    const char *bw = json_string_value(json_object_get(src, "intra_node.bandwidth_Bps"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(bw);
    CU_ASSERT_PTR_NOT_NULL(strstr(bw, "NCCL ping-pong"));
    CU_ASSERT_PTR_NOT_NULL(strstr(bw, "4 bytes for the cuda executor's runs"));
    const char *parts = json_string_value(json_object_get(src, "calibration.part_flops_per_s"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(parts);
    CU_ASSERT_PTR_NOT_NULL(strstr(parts, "(oc_gpt_attn_scores on the cuda kernels)"));
    const char *desc = json_string_value(json_object_get(doc, "description"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(desc);
    CU_ASSERT_PTR_NOT_NULL(strstr(desc, "4 GPUs on testhost"));
    json_decref(doc);

    /* Faster than the base's peak: the base is not this GPU's topology. */
    m.gemm_flops = 1e15;
    CU_ASSERT_EQUAL(oc_calib_topology(&base, &m, &t, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "above the peak of topology h200-node"));
    /* At the peak exactly: efficiency 1, accepted. */
    m.gemm_flops = 9.89e14;
    CU_ASSERT_EQUAL_FATAL(oc_calib_topology(&base, &m, &t, &st), 0);
    CU_ASSERT_EQUAL(t.device.gemm_efficiency, 1.0);
}

static CU_TestInfo tests[] = {
    {"write and reload", test_round_trip},
    {"one rank", test_one_rank},
    {"refused", test_refused},
    {"GPU: the peak kept", test_gpu_keep_peak},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"calib_topology", suite_init, oc_test_dir_remove, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
