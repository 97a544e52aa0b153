/* schedule_bucket.h: the DP gradient buckets of a model chunk under
 * --overlap-grad-reduce, as Megatron-Core's DDP forms them.
 *
 * Megatron-Core (megatron/core/distributed/distributed_data_parallel.py,
 * core_r0.8.0 and later): with overlap_grad_reduce and no bucket_size given,
 * bucket_size = max(40000000, 1000000 * data-parallel size with context
 * parallel) parameters ("larger DP sizes need larger buckets to ensure
 * collectives do not become latency-bound"). param_and_grad_buffer.py walks
 * the chunk's parameters in reverse order ("to roughly follow backprop
 * order") and closes a bucket as soon as it holds bucket_size parameters or
 * more; a bucket's all-reduce (reduce-scatter under the distributed
 * optimizer) is launched, during the last micro-batch's backward, once
 * every parameter of it has its gradient (register_grad_ready).
 *
 * Here the walk is by whole layers (a bucket closes at the layer boundary
 * where it reaches the size; Megatron closes at the parameter, so a bucket
 * may differ by less than one layer's parameters), and the head (final
 * norm, untied LM head) rides with the chunk's last layer and the embedding
 * with its first (Megatron may give a 40M+ head or embedding a bucket of its
 * own; the embedding's backward has no FLOPs, so that bucket would fire at
 * the same time; a lone head bucket would fire one head backward earlier).
 * The parameters are a TP rank's (memory.c's counts: the vocabulary padded
 * to a multiple of t).
 *
 * Used by the schedule (where the collectives go), the executor (which
 * tensors each reduces) and the closed form (what the backward hides).
 */
#ifndef OCSIM_SCHEDULE_BUCKET_H
#define OCSIM_SCHEDULE_BUCKET_H

#include <stdint.h>

#include "layout.h"
#include "model.h"

/* One bucket, in firing order within its chunk (the chunk's last layers
 * first). */
struct oc_dp_bucket {
    int64_t layer_first, layer_count; /* global layers (count 0: a chunk
                                         without layers) */
    int head, embed;                  /* holds the chunk's head / embedding */
    double params;                    /* of one TP rank */
};

/* Megatron-Core's default bucket size in parameters for this layout. */
int64_t oc_dp_bucket_size(const struct oc_layout *l);

/* Chunk `chunk` of `stage`'s buckets into b (room for the chunk's layer
 * count, at least 1); returns how many. */
int64_t oc_dp_buckets(const struct oc_model *m, const struct oc_layout *l,
                      int64_t stage, int64_t chunk, int64_t size,
                      struct oc_dp_bucket *b);

/* The most buckets any chunk of the layout has room for (the largest
 * chunk's layers, at least 1). */
int64_t oc_dp_buckets_cap(const struct oc_model *m, const struct oc_layout *l);

#endif
