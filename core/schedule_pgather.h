/* schedule_pgather.h: Megatron-LM's --overlap-param-gather (the layout's
 * overlap_param_gather): the distributed optimizer's all-gather of the
 * updated weights, bucket by bucket under the next step's first forward
 * instead of after the optimizer step.
 *
 *   struct oc_pg_item chain[cap];           // cap: oc_pg_chain_cap
 *   int64_t n = oc_pg_chain(&model, &layout, stage, chain);
 *   put(sink, &(struct oc_op){...oc_pg_gather_op(&layout, &chain[0], stage)});
 *   ... before the forward of chain[g]'s layers (its chunk's first forward):
 *   oc_pg_wait_op(...), then oc_pg_gather_op(chain[g + 1]) when g + 1 < n
 *
 * Megatron-LM (megatron/core/optimizer/distrib_optimizer.py of the
 * 2023-24 releases, as written down without the source at hand: to be
 * checked against core_r0.8.0, where the same logic may sit in
 * distributed/param_and_grad_buffer.py): with overlap_param_gather the
 * step's all-gather of the updated parameters is not run after the
 * optimizer; zero_grad at the start of the next step dispatches the
 * all-gather of the first bucket the forward uses, asynchronously, and a
 * forward pre-hook on each module waits for the bucket holding its
 * parameters and only then dispatches the next bucket's ("we can't
 * pre-launch all-gathers for all buckets at once ... so that the
 * communication kernels don't head-of-line block the compute kernels,
 * since we run with CUDA_DEVICE_MAX_CONNECTIONS=1"). The buckets are
 * those of the gradient reduction (schedule_bucket.h), used in reverse
 * (the forward runs the layers in the order opposite to the backward's),
 * chunk 0 first, then chunk 1... for the interleaved schedule (one chain
 * over the model chunks, each chunk's first forward runs in that order).
 *
 * In one simulated step (the steady state of many): the first bucket of
 * the stage's chain is gathered asynchronously at the top of the rank's
 * ops (zero_grad), every bucket is waited for right before its first
 * layer's forward (the embedding's, for the bucket holding it) in its
 * chunk's first forward unit (micro-batch 0), and the next bucket's
 * gather is issued right after that wait; so exactly one gather is in
 * flight, and a WAIT on the gather stream (OC_ZERO_STREAM_GATHER,
 * schedule_zero.h) waits for the one bucket. What is hidden: each
 * bucket's gather under the forward of the bucket before it; what is
 * exposed: the first bucket's (less what the stage waits for its first
 * activation on stages after the first) and whatever the gathers run
 * past the layers before them. The last bucket of the chain is the
 * chunk's head bucket (the head's parameters ride with the chunk's last
 * layers, schedule_bucket.h). Bytes: the weights' (w per parameter,
 * memory.h) of the bucket's parameters, the full buffer S as
 * closed_form.h counts an all-gather's. Without the overlap, the same
 * bytes in one all-gather after the optimizer step (schedule.c).
 *
 * At chunk grain with context parallelism (the unit's merged CP ring
 * keeps it whole, schedule.c) the chunk's first bucket is waited for
 * before the merged compute, the chunk's other buckets are issued at once
 * (the stream runs them back to back) and waited for after it.
 */
#ifndef OCSIM_SCHEDULE_PGATHER_H
#define OCSIM_SCHEDULE_PGATHER_H

#include <stdint.h>

#include "layout.h"
#include "model.h"
#include "schedule.h"
#include "schedule_bucket.h"

/* One bucket of the chain: its chunk on the stage and the bucket
 * (layers, embedding, head, parameters of one TP rank). */
struct oc_pg_item {
    int64_t chunk;
    struct oc_dp_bucket b;
};

/* Whether the layout moves the weight all-gather into the forward: the
 * overlap is asked, the optimizer is distributed (zero1) and the DP x CP
 * group has more than one rank. */
int oc_pg_on(const struct oc_layout *l);

/* Room a stage's chain needs: v times the most buckets of a chunk. */
int64_t oc_pg_chain_cap(const struct oc_model *m, const struct oc_layout *l);

/* The stage's chain into out (room: oc_pg_chain_cap), in the order the
 * forward needs the buckets: chunk 0's first, each chunk's buckets from
 * its first layers to its last. Returns the count. */
int64_t oc_pg_chain(const struct oc_model *m, const struct oc_layout *l, int64_t stage,
                    struct oc_pg_item *out);

/* The async all-gather of an item on the gather stream (micro-batch 0,
 * phase FWD), and the WAIT for it. */
struct oc_op oc_pg_gather_op(const struct oc_layout *l, const struct oc_pg_item *it,
                             int64_t stage);
struct oc_op oc_pg_wait_op(const struct oc_pg_item *it, int64_t stage);

/* The chain's timing (what the simulator replays of these ops, and what
 * closed_form.c charges): the first gather is issued at time 0 and the
 * forward reaches the first bucket at arrive_s (its first activation's
 * arrival; 0 on the first stage); bucket i's gather takes gather_s[i] and
 * its forward fwd_s[i]; before bucket i the forward waits for its
 * gather, and bucket i+1's is issued then. Returns the time the forward
 * loses to the gathers: its end minus arrive_s minus the forwards. */
double oc_pg_chain_exposed_s(const double *gather_s, const double *fwd_s, int64_t n,
                             double arrive_s);

#endif
