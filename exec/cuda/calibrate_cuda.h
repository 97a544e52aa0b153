/* calibrate_cuda.h: `ocsim-exec --backend cuda --calibrate` measures this
 * node's GPUs and NCCL and writes a topology file that `ocsim` reads, so
 * that a prediction for the cuda backend is a prediction of this machine
 * (the GPU twin of exec/cpu/calibrate_cpu.h, which does the same with OpenBLAS and
 * MPI).
 *
 *   struct oc_cuda_calib_opts o = OC_CUDA_CALIB_OPTS_DEFAULT;
 *   o.model = &model;  o.base = &topo;          // e.g. h200-node
 *   o.seq = 1024;  o.micro_batch = 1;  o.tp = 1;
 *   o.out_path = "gpu-calibrated.json";
 *   o.ctl = &ctl;  o.nccl = &nccl;  o.log = stdout;
 *   if (oc_cuda_calibrate(&o, &st) != 0) ...st.msg (on every rank)...
 *
 * Collective over the ctl's ranks (one GPU each), all measuring at once:
 *   GEMM     cuBLAS / cublasLt in o->dtype (bf16 operands, fp32
 *            accumulation by default) at one TP shard's shapes (the same
 *            list as calibrate_cpu.h: QKV, attention projection, MLP up and
 *            down, each as forward, input-gradient and weight-gradient
 *            calls, T = micro_batch * seq rows), timed with CUDA events
 *            after a warm-up; per shape the rate is printed (nccl-tests'
 *            style table); the overall rate is all FLOPs over the sum of
 *            the best times, the mean over ranks.
 *   HBM      device-to-device cudaMemcpyAsync of a buffer of >= 4x the L2
 *            cache and >= 256 MiB, counted as 2x bytes (read + write, as
 *            nvbandwidth and STREAM's copy count), best of `repeats`.
 *   parts    the model's parts (exec/model/gpt.h) on the cuda kernels at
 *            these shapes, as calibrate_cpu.h's parts (oc_calib_parts_run:
 *            same order, same rates: schedule FLOPs of
 *            the op, oc_cost_sched_flops, over its median time; embedding
 *            in s per token, AdamW in s per parameter), timed with events.
 *   NCCL     (two ranks or more) ncclAllReduce of floats over the world
 *            communicator at sizes 8 B .. max_msg_bytes doubling: time per
 *            call (mean of `repeats` after a warm-up, slowest rank), algbw
 *            = S/t and busbw = algbw * 2(n-1)/n (nccl-tests,
 *            doc/PERFORMANCE.md); ncclSend/ncclRecv ping-pong between
 *            ranks 0 and 1 for latency and bandwidth at the pipeline's
 *            message. With one rank: no network numbers, the base's kept,
 *            and the log says so.
 * The file (exec/calib_topology.h) keeps the base's device peak
 * (peak_flops_16bit: the datasheet's dense bf16 rate, so MFU stays
 * relative to it) and writes the measured rate as calibration.gemm_flops
 * and device.gemm_efficiency = measured / peak; hbm_bandwidth_Bps measured;
 * intra_node from the NCCL numbers where measured.
 */
#ifndef OC_EXEC_CALIBRATE_CUDA_H
#define OC_EXEC_CALIBRATE_CUDA_H

#include <stdint.h>
#include <stdio.h>

#include "calib_topology.h"
#include "comm_nccl.h"
#include "ctl.h"
#include "kernels.h"
#include "model.h"
#include "status.h"
#include "topology.h"

struct oc_cuda_calib_opts {
    const struct oc_model *model;
    const struct oc_topology *base; /* copied; its measured fields replaced */
    int64_t seq, micro_batch, tp;   /* the shapes of one TP shard */
    enum oc_cuda_dtype dtype;       /* GEMM operands */
    const char *out_path;           /* the topology JSON (rank 0 writes it) */
    struct oc_ctl *ctl;
    struct oc_nccl *nccl;           /* initialised over the ctl's ranks */
    FILE *log;                      /* rank 0's tables; NULL: none */
    int repeats;                    /* >= 1 */
    int64_t max_msg_bytes;          /* largest NCCL message */
    struct oc_calib_measured *result; /* optional: filled on every rank */
};
#define OC_CUDA_CALIB_OPTS_DEFAULT                                             \
    ((struct oc_cuda_calib_opts){.model = NULL, .base = NULL, .seq = 0,         \
                                 .micro_batch = 1, .tp = 1,                     \
                                 .dtype = OC_CUDA_BF16, .out_path = NULL,       \
                                 .ctl = NULL, .nccl = NULL, .log = NULL,        \
                                 .repeats = 5, .max_msg_bytes = 256 << 20,      \
                                 .result = NULL})

int oc_cuda_calibrate(const struct oc_cuda_calib_opts *o, struct oc_status *st);

#endif
