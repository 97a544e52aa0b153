/* calib_topology.h: the topology file `ocsim-exec --calibrate` writes, built
 * from a base topology and what was measured on this machine. No MPI here
 * (the measuring is exec/cpu/calibrate_cpu.c), so a test can write and reload one.
 *
 *   struct oc_calib_measured m = {.ranks = 4, .gemm_flops = 2.1e10, ...};
 *   if (oc_calib_write_topology("cpu-calibrated.json", &base, &m, &st) != 0) ...
 *   // then: ocsim simulate --topology ./cpu-calibrated.json ...
 *
 * What the file says (every other field is the base topology's):
 *   gpus_per_node          = ranks: every rank on this one machine
 *   device.name            = the CPU model, when known
 *   device.peak_flops_16bit= the measured GEMM rate. On the cpu backend
 *                            "peak" means this measured fp32 cblas_sgemm
 *                            rate (there are no 16-bit tensor cores), so
 *                            MFU is relative to what the machine sustains.
 *   device.gemm_efficiency = 1 (the peak is already a sustained rate)
 *   device.sm_count        = cores per rank, when known (the cost model
 *                            does not use it once calibration.gemm_flops
 *                            is set)
 *   device.memory_bytes    = physical RAM / ranks
 *   device.hbm_bandwidth_Bps = the measured triad bandwidth per rank
 *   intra_node             = MPI point-to-point latency and bandwidth, the
 *                            bandwidth fitted at the pipeline's message (one
 *                            micro-batch's T x h fp32 activation) and
 *                            written as measured: the schedule counts the
 *                            run's element size (the layout's precision,
 *                            layout.h), and the executor's runs are fp32
 *                            runs (simulate them with --fp32), so a
 *                            simulated message takes the measured time.
 *                            Kept from the base with one rank.
 *   calibration            = "gemm_flops", "mem_Bps", "activation_bytes"
 *                            (4: fp32), and when the parts were measured
 *                            "part_flops_per_s", "part_s_per_token" and
 *                            "optimizer_s_per_param" (topology.h)
 *   sources                = where each measured number comes from:
 *                            "measured by ocsim-exec --calibrate on <host>
 *                            <date>, <n> ranks: ..."; the all-reduce figures
 *                            (no topology field holds them) under
 *                            "_allreduce", which readers skip.
 * The file is checked with oc_topology_check before it is written and
 * reloads with oc_topology_load.
 *
 * The GPU calibration (exec/cuda/calibrate_cuda.c) fills the same struct
 * with backend = OC_CALIB_CUDA and keep_peak = 1 (both zero: the cpu
 * calibration, as above). Then:
 *   device.name            = the GPU's name (cpu_name holds it)
 *   device.peak_flops_16bit= the base's, kept: a datasheet's dense 16-bit
 *                            rate, so MFU stays relative to it
 *   device.gemm_efficiency = measured GEMM rate / that peak (refused above
 *                            1: the base is not this GPU's)
 *   device.sm_count        = the GPU's SMs (cores_per_rank holds them)
 *   device.memory_bytes    = the GPU's memory
 *   device.hbm_bandwidth_Bps = device-to-device copy bandwidth per GPU
 *   intra_node             = NCCL ncclSend / ncclRecv ping-pong, as
 *                            measured as above: the cuda executor keeps
 *                            and sends activations in fp32 too
 *   calibration            = as above, gemm_flops the cuBLAS rate
 *   sources                = the same keys, naming cuBLAS, NCCL and the
 *                            parts on the cuda kernels instead of OpenBLAS,
 *                            MPI and the parts on the cpu kernels.
 */
#ifndef OC_CALIB_TOPOLOGY_H
#define OC_CALIB_TOPOLOGY_H

#include <stdint.h>

#include "status.h"
#include "topology.h"

/* What measured the figures (the words of "sources" and "description"). */
enum oc_calib_backend {
    OC_CALIB_CPU = 0, /* exec/cpu/calibrate_cpu.c: OpenBLAS, MPI, the CPU's RAM */
    OC_CALIB_CUDA,    /* exec/cuda/calibrate_cuda.c: cuBLAS, NCCL, the GPU's HBM */
};

struct oc_calib_measured {
    int64_t ranks;            /* MPI processes, all on this machine */
    char host[64];
    char date[32];            /* e.g. "2026-05-01 12:00 UTC" */
    char cpu_name[64];        /* "" keeps the base's device name (cuda:
                                 the GPU's name) */
    int64_t cores_per_rank;   /* 0 keeps the base's sm_count (cuda: SMs) */
    double gemm_flops;        /* fp32 cblas_sgemm FLOP/s per rank, model shapes
                                 (cuda: cuBLAS in the run's dtype per GPU) */
    char gemm_what[256];      /* the shapes and how, for "sources" */
    double mem_Bps;           /* triad bytes/s per rank (STREAM counting;
                                 cuda: device-to-device copy, 2x bytes) */
    double memory_bytes;      /* RAM / ranks (cuda: the GPU's memory) */
    double p2p_Bps;           /* MPI ping-pong bandwidth at p2p_msg_bytes
                                 (S / (t(S) - latency)); 0: not measured */
    double p2p_latency_s;     /* one-way small-message time */
    double p2p_msg_bytes;     /* the pipeline's message: T x h fp32 */
    double p2p_msg_s;         /* its one-way time */
    double p2p_large_Bps;     /* the same fit at the largest message */
    double allreduce_bytes;   /* largest all-reduce measured; 0: none */
    double allreduce_busbw_Bps; /* at allreduce_bytes, nccl-tests' busbw */
    double allreduce_latency_s; /* smallest all-reduce's time */
    /* The executor's own parts at the model's shapes (exec/model/gpt.h); all 0
     * when not measured (a model the executor does not run). */
    int parts_measured;
    double part_flops[OC_CALIB_PARTS]; /* FLOP/s, schedule FLOPs / time */
    double embed_fwd_s_per_token, embed_bwd_s_per_token;
    double optimizer_s_per_param;      /* AdamW over the shard's arena */
    char parts_what[320];              /* what ran and how, for "sources" */
    /* Zero for the cpu calibration; the GPU one sets both (see above). */
    enum oc_calib_backend backend;     /* whose words "sources" uses */
    int keep_peak;                     /* 1: the base's peak stays, efficiency
                                          = gemm_flops / peak; 0: peak =
                                          gemm_flops, efficiency 1 */
};

/* Bytes per activation element of the cpu executor: it computes in fp32
 * (exec/model/gpt.h). Written as "activation_bytes", a record of what the
 * calibration ran in; the predictions take the layout's precision. */
#define OC_CALIB_CPU_ACT_BYTES 4.0
/* The cuda executor's: bf16 only for GEMM operands; activations are kept
 * and sent in fp32 (kernels/cuda/ops_cuda.h, "Precision"). */
#define OC_CALIB_CUDA_ACT_BYTES 4.0

/* The calibrated topology as a struct, checked (oc_topology_check). */
int oc_calib_topology(const struct oc_topology *base, const struct oc_calib_measured *m,
                      struct oc_topology *out, struct oc_status *st);

/* Builds it and writes it as JSON to `path`. */
int oc_calib_write_topology(const char *path, const struct oc_topology *base,
                            const struct oc_calib_measured *m, struct oc_status *st);

#endif
