/* calibrate_cpu.h: `ocsim-exec --calibrate` on the cpu backend measures
 * this machine with MPI and OpenBLAS and writes a topology file that
 * `ocsim` reads, so that a prediction for the cpu backend is a prediction
 * of this machine.
 *
 *   struct oc_cpu_calib_opts o = OC_CPU_CALIB_OPTS_DEFAULT;
 *   o.model = &model;  o.base = &topo;          // e.g. the cpu topology
 *   o.seq = 128;  o.micro_batch = 1;  o.tp = 2;
 *   o.out_path = "cpu-calibrated.json";
 *   o.comm = MPI_COMM_WORLD;
 *   o.log = stdout;                              // rank 0 prints its tables
 *   if (oc_cpu_calibrate(&o, &st) != 0) ...st.msg (on every rank)...
 *
 * Collective over o->comm: every rank calls it. What it measures, all
 * ranks running at once (as they do in a training step):
 *   GEMM    fp32 cblas_sgemm (the cpu executor's precision; there are no
 *           16-bit tensor cores) at one TP shard's shapes, T = micro_batch *
 *           seq rows: QKV [T x h] -> (a/t + 2k/t) * hd, output projection
 *           (a/t) * hd -> h, MLP up h -> f/t (2f/t gated), down f/t -> h;
 *           each as the forward, input-gradient and weight-gradient calls
 *           the cpu kernels make (kernels/cpu/ops_cpu.c); the best of
 *           `repeats` runs of each; the rate is all FLOPs over the sum of
 *           those best times, then the mean over ranks.
 *   memory  a STREAM-style triad a = b + s*c over fp64 arrays of at least
 *           4x the last-level cache and 64 MiB, 24 bytes per element
 *           counted (2 reads, 1 write), best of `repeats`, mean over ranks.
 *   parts   the executor's own parts (exec/model/gpt.h) on the cpu kernels
 *           at these shapes (calib_plan.h's oc_calib_parts_run), one TP
 *           shard (TP rank = rank % tp) of every layer of the model
 *           (or of as many as fit in a quarter of the rank's share of RAM):
 *           one micro-batch's embedding, attention and MLP forward per
 *           layer, head forward and backward, per layer (last first) MLP
 *           backward, the selective recompute of the attention scores and
 *           attention backward, embedding backward, then AdamW over the
 *           shard's arena; TP all-reduces left out (the network model
 *           prices them). A warm-up, then at least `repeats` repeats and as
 *           many more as fit in about 2 s (at most 101); per part the
 *           median repeat (what a run typically sees, not its best), then
 *           the mean over ranks. Written as rates: the FLOPs the schedule
 *           gives the op (oc_cost_sched_flops) over its time; the embedding
 *           in seconds per token, AdamW in seconds per parameter. A model
 *           the executor does not run (oc_params_check_model) gets no part
 *           rates: the cost model keeps its estimates for it.
 *   p2p     (two ranks or more) MPI ping-pong between ranks 0 and 1, first
 *           at the pipeline's message (one micro-batch's activation,
 *           micro_batch * seq * hidden fp32 values; measured first, as a
 *           ping-pong of that size runs slower after the 64 MiB ones), then
 *           over sizes 8 B .. max_msg_bytes doubling: latency = half the
 *           round trip of 8 bytes, bandwidth = S / (t(S) - latency) at the
 *           pipeline's message (the model t = latency + S/B; the fit at the
 *           largest size is logged too).
 *   allreduce (two ranks or more) MPI_Allreduce of floats over the same
 *           sizes: time = the slowest rank's mean per call; algbw = S/t,
 *           busbw = algbw * 2(n-1)/n (nccl-tests, doc/PERFORMANCE.md).
 * Rank 0 prints a table per measurement to o->log in nccl-tests' layout
 * (size, count, time_us, algbw, busbw) and writes o->out_path
 * (exec/calib_topology.h says which fields are replaced). The ranks must
 * run on one host (gpus_per_node becomes the number of ranks); OpenBLAS's
 * thread count is left as the caller set it.
 */
#ifndef OC_CALIBRATE_CPU_H
#define OC_CALIBRATE_CPU_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "calib_topology.h"
#include "model.h"
#include "status.h"
#include "topology.h"

struct oc_cpu_calib_opts {
    const struct oc_model *model;
    const struct oc_topology *base; /* copied; its measured fields replaced */
    int64_t seq, micro_batch, tp;   /* the GEMM shapes of one TP shard */
    const char *out_path;           /* the topology JSON (rank 0 writes it) */
    MPI_Comm comm;
    FILE *log;                      /* rank 0's tables; NULL: none */
    int repeats;                    /* best of; >= 1 */
    int64_t max_msg_bytes;          /* largest p2p / all-reduce message */
    struct oc_calib_measured *result; /* optional: filled on every rank */
};
#define OC_CPU_CALIB_OPTS_DEFAULT                                              \
    ((struct oc_cpu_calib_opts){.model = NULL, .base = NULL, .seq = 0,          \
                                .micro_batch = 1, .tp = 1, .out_path = NULL,    \
                                .comm = MPI_COMM_WORLD, .log = NULL,            \
                                .repeats = 5, .max_msg_bytes = 64 << 20,        \
                                .result = NULL})

/* 0, or -1 with st->msg on every rank (bad options, ranks on several
 * hosts, an MPI error, the file not written). An MPI error that strikes
 * some ranks inside a collective can leave the others waiting there: the
 * caller's timeout (or mpirun) ends such a job. */
int oc_cpu_calibrate(const struct oc_cpu_calib_opts *o, struct oc_status *st);

#endif
