/* goodput.h: failures, checkpoints and goodput of a long training run, as
 * pure functions: the optimal checkpoint interval (Young, Daly), the
 * expected fraction of wall time that is useful work (Daly's closed form),
 * a seeded Monte-Carlo of a run with Poisson failures, and the size and
 * save time of a checkpoint of a layout's model state.
 *
 *   struct oc_goodput_params p = {.mtbf_s = 720 * 3600.0 / 17,
 *                                 .save_s = 60, .restart_s = 600};
 *   double tau = oc_goodput_daly_interval(p.save_s, p.mtbf_s);
 *   double g = oc_goodput_expected(&p, 1800);        // every 30 minutes
 *   struct oc_goodput_run r;
 *   oc_goodput_simulate(&p, 1800, 30 * 86400.0, 1234, 7, &r);  // trial 7
 *
 * The model (Daly 2006, section 2; Young 1974): the run alternates tau
 * seconds of compute and a blocking save of delta seconds. Failures form a
 * Poisson process of rate 1/M over wall time (exponential times between
 * them, memoryless, as Daly assumes). A failure loses everything since the
 * last completed save, then restarting takes R seconds (rescheduling,
 * starting, loading the checkpoint); a failure during a restart starts the
 * restart again (Daly's model too). Failures during saves are failures.
 * Saves are synchronous: an asynchronous save (Megatron-LM's
 * --async-save) hides most of delta; give its blocking part as delta.
 *
 * Symbols: tau the compute between two saves (Megatron-LM's
 * --save-interval, in time), delta the save, R the restart, M the job's
 * mean time between failures. All in seconds.
 *
 * What it is not: a failure model of its own (M comes from the caller:
 * goodput.h only gives the sourced per-GPU default), nor a storage
 * simulator (the save time is bytes over the slower of the node's and
 * the file system's bandwidth).
 */
#ifndef OC_GOODPUT_H
#define OC_GOODPUT_H

#include <stdint.h>

#include "layout.h"
#include "model.h"

/* Unexpected job interruptions per GPU-hour on Meta's Llama 3 405B
 * pretraining: 419 in a 54-day snapshot on 16,384 H100 GPUs (Dubey et al.
 * 2024, "The Llama 3 Herd of Models", section 3.3.4, table 5):
 * 419 / (54 * 24 * 16384) = 1.97e-5 per GPU-hour, a job MTBF of about
 * 3.1 h at that size and 51,000 h / N for N GPUs. They count every cause
 * (GPUs 30 %, HBM 17 %, software, network, hosts). */
#define OC_GOODPUT_LLAMA3_INTERRUPTIONS 419.0
#define OC_GOODPUT_LLAMA3_DAYS 54.0
#define OC_GOODPUT_LLAMA3_GPUS 16384.0
#define OC_GOODPUT_RATE_PER_GPU_HOUR                                                 \
    (OC_GOODPUT_LLAMA3_INTERRUPTIONS /                                               \
     (OC_GOODPUT_LLAMA3_DAYS * 24.0 * OC_GOODPUT_LLAMA3_GPUS))

/* Storage bandwidth defaults, bytes/s.
 * Aggregate: Llama 3's Tectonic file system sustains 2 TB/s for the
 * 16,384-GPU cluster (Dubey et al. 2024, section 3.3.1, "Storage": "a
 * sustainable throughput of 2 TB/s and a peak throughput of 7 TB/s"),
 * for writes (the bursty checkpoint writes they describe) and reads alike
 * (ESTIMATE: the paper gives one figure). A smaller job on a shared file
 * system gets at most this; set --write-bw-total for yours.
 * Per node: 2 x 200 Gb/s = 50 GB/s. The NVIDIA DGX H100 datasheet lists,
 * beside the eight compute NICs, two dual-port ConnectX-7 cards (up to
 * 400 Gb/s) for storage and in-band management; two 200 Gb/s links in use
 * for storage is an ESTIMATE (set --write-bw-node for your nodes). */
#define OC_GOODPUT_WRITE_BW_TOTAL 2e12
#define OC_GOODPUT_READ_BW_TOTAL 2e12
#define OC_GOODPUT_WRITE_BW_NODE 50e9
#define OC_GOODPUT_READ_BW_NODE 50e9

/* Restart time beyond loading the checkpoint: detecting the failure,
 * rescheduling the job (replacing or draining the node), starting the
 * processes and NCCL's communicators. ESTIMATE, 10 minutes: no published
 * figure isolates it; Llama 3 reports only that automation handled all
 * but three of the 466 interruptions (section 3.3.4). Set --restart-time
 * for yours (Megatron-LM's in-job restart and NVIDIA's fault-tolerance
 * package shorten it). */
#define OC_GOODPUT_RESTART_S 600.0

struct oc_goodput_params {
    double mtbf_s;    /* M, > 0 */
    double save_s;    /* delta, >= 0: one blocking save */
    double restart_s; /* R, >= 0: from a failure to computing again,
                         loading the checkpoint included */
};

/* Young 1974 ("A first order approximation to the optimum checkpoint
 * interval", CACM 17(9)): tau = sqrt(2 * delta * M). */
double oc_goodput_young_interval(double save_s, double mtbf_s);

/* Daly 2006 ("A higher order estimate of the optimum checkpoint interval
 * for restart dumps", FGCS 22(3), the estimate it recommends): with x = delta / (2M),
 * tau = sqrt(2 delta M) (1 + sqrt(x)/3 + x/9) - delta for delta < 2M,
 * else tau = M. */
double oc_goodput_daly_interval(double save_s, double mtbf_s);

/* The expected fraction of wall time spent on compute that is kept,
 * tau / E[wall time of one segment] with (Daly 2006, the expected wall
 * time of a segment with restarts that can fail)
 * E = M e^(R/M) (e^((tau + delta)/M) - 1). Long-run exact under the model
 * above (renewal-reward); tends to tau / (tau + delta) as M grows. */
double oc_goodput_expected(const struct oc_goodput_params *p, double tau_s);

/* The tau that maximises oc_goodput_expected (golden-section search of the
 * closed form, which is unimodal in tau), to compare Daly's and Young's
 * estimates against. */
double oc_goodput_best_interval(const struct oc_goodput_params *p);

/* One simulated run of `horizon_s` wall seconds. The run stops cleanly at
 * the horizon: compute since the last save counts (a final save would keep
 * it; its time is not charged). */
struct oc_goodput_run {
    double useful_s;   /* compute kept */
    double save_s;     /* completed saves */
    double lost_s;     /* compute and saves undone by failures */
    double restart_s;  /* restarting, interrupted restarts included */
    int64_t failures;
};
/* Trial `trial` of a run with seed `seed`: its failures come from a
 * splitmix64 stream of (seed, trial) alone, so a trial's numbers do not
 * depend on how many others run. useful + save + lost + restart equals
 * the horizon. */
void oc_goodput_simulate(const struct oc_goodput_params *p, double tau_s, double horizon_s,
                         uint64_t seed, int64_t trial, struct oc_goodput_run *out);

/* Mean and percentiles of n values (sorted in place); p in [0, 100],
 * linear interpolation between the closest ranks. */
struct oc_goodput_stats {
    double mean, p5, p50, p95, min, max;
};
void oc_goodput_stats(double *v, int64_t n, struct oc_goodput_stats *out);

/* What one checkpoint of a layout writes: each rank its model state, the
 * weights (weight bytes per parameter) and the optimizer states (fp32
 * master weights and Adam's moments), as memory.h sizes them for the
 * rank's stage. A state replicated over DP (and CP) is written by the
 * replica of DP rank 0 and CP rank 0 (Megatron-LM); a state sharded over
 * DP (ZeRO-1 and up: the optimizer; ZeRO-3: the weights too) is written by
 * every rank, its shard. Ranks sit on nodes in rank order,
 * gpus_per_node at a time (topology.h). Gradients are not saved. */
struct oc_goodput_ckpt {
    double total_bytes;     /* the whole checkpoint */
    double max_node_bytes;  /* the node that writes most */
    double max_rank_bytes;  /* the rank that writes most */
    int64_t writers;        /* ranks that write something */
    int64_t nodes;
};
void oc_goodput_ckpt_size(const struct oc_model *m, const struct oc_layout *l,
                          int64_t gpus_per_node, struct oc_goodput_ckpt *out);

/* Seconds to move a checkpoint: the busiest node at node_Bps, the whole at
 * total_Bps, whichever takes longer (all nodes write at once). */
double oc_goodput_io_s(const struct oc_goodput_ckpt *c, double node_Bps, double total_Bps);

#endif
