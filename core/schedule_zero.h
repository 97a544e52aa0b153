/* schedule_zero.h: the ops ZeRO-2 and ZeRO-3 (FSDP) add to a rank's list,
 * unit by unit; schedule.c calls these hooks around each unit and layer
 * and passes its own sink. Nothing here is for use outside core/.
 *
 *   struct oc_zero_ctx z;
 *   oc_zero_ctx_init(&z, &model, &layout, grain, emit_memory);
 *   struct oc_zero_at where = oc_zero_at(&z, OC_PHASE_FWD, mb, stage, chunk);
 *   oc_zero_unit_begin(&z, put, sink, &where);                 // after the RECV
 *   for each layer i of n, in the unit's order:
 *       oc_zero_layer_begin(&z, put, sink, &where, i, n, layer, next_layer);
 *       ... the layer's compute and TP collectives ...
 *       oc_zero_layer_end(&z, put, sink, &where, layer);
 *   oc_zero_unit_end(&z, put, sink, &where);                   // before the SEND
 *   (OC_GRAIN_CHUNK: oc_zero_chunk_begin / oc_zero_chunk_end around the
 *   merged compute instead of the layer hooks.)
 *
 * Units (Rajbhandari et al. 2020, "ZeRO", section 5; PyTorch FSDP with one
 * FlatParameter per transformer layer, Zhao et al. 2023, section 3.2): a
 * layer, and the parameters of a chunk beyond its layers (embedding, final
 * norm, LM head: oc_mem_chunk_extra_params) as one more unit, gathered
 * when the chunk's forward or backward starts and kept until it ends.
 *
 * ZeRO-3, per unit of each (micro-batch, chunk, direction): an all-gather
 * over DP of the unit's weights (w bytes per parameter, the full unit as
 * closed_form.h counts S) before its forward, again before its backward
 * (FSDP frees them after the forward: reshard_after_forward), a
 * reduce-scatter of its gradients (g bytes per parameter) after its
 * backward; ALLOC/FREE of the gathered weights and of the unit's full
 * gradients. So every micro-batch moves 2*w + g bytes per parameter
 * through the ring, the ZeRO paper's 3 Psi (section 7.2.2: 1.5x the
 * all-reduce's 2 Psi) when w = g, m times per step with m micro-batches
 * (FSDP without no_sync keeps only sharded gradients and so reduces every
 * micro-batch). No all-gather after the optimizer: the weights stay
 * sharded until the next forward gathers them.
 *
 * ZeRO-2: the reduce-scatter of each unit's gradients after its backward,
 * as above, and ZeRO-1's all-gather of the updated weights after the
 * optimizer (Megatron-LM's distributed optimizer). With one micro-batch
 * per step that is ZeRO-1's traffic exactly (it reduce-scatters the same
 * bytes once) and the difference is memory (gradients held 1/d plus one
 * unit's); with m micro-batches ZeRO-1 accumulates the full gradients and
 * reduces once, ZeRO-2 must reduce every micro-batch to keep only its
 * shard (DeepSpeed stage 2 does so), m times the reduce-scatter bytes.
 *
 * Overlap (the layout's overlap_grad_reduce): the gradient reduce-scatters
 * are async on stream 1 (op tag 1) and complete at the WAIT before the
 * optimizer; the next layer's gather is issued async on stream 0 (tag 0)
 * before the current layer computes (FSDP's forward_prefetch and
 * BACKWARD_PRE prefetch) and waited for (a WAIT with tag 0) before the
 * next layer's compute. The first layer and the extra unit of every
 * (micro-batch, chunk, direction) are gathered blocking. At chunk grain
 * the layers after the first are gathered async during the merged
 * compute, and the layers' reduce-scatters start after the merged
 * backward (at layer grain after each layer's): the same bytes and the
 * same buffers (the chunk grain holds the logits with them, so its peak
 * may be higher by those), and without overlap the same times; with
 * overlap the chunk grain waits less for gathers slower than a layer's
 * compute and more for the reduce-scatters of a chunk's last backward
 * (seen: tp4-pp1-dp4-zero3 on the tiny model, DP 2.13 ms fast against
 * 1.95 ms full, step 2.35 against 2.25 ms).
 *
 * With d = 1 nothing is added (a group of one moves nothing).
 */
#ifndef OC_SCHEDULE_ZERO_H
#define OC_SCHEDULE_ZERO_H

#include <stdint.h>

#include "layout.h"
#include "model.h"
#include "schedule.h"

/* Async collective streams of ZeRO-2/3 (the op's tag; -1 elsewhere). */
enum { OC_ZERO_STREAM_GATHER = 0, OC_ZERO_STREAM_REDUCE = 1 };

struct oc_zero_ctx {
    const struct oc_model *m;
    const struct oc_layout *l;
    int on;             /* zero >= 2 and d > 1 */
    int gather;         /* zero 3: weights gathered per unit */
    int overlap;        /* async reduce-scatters and prefetch */
    int emit_memory;
    enum oc_grain grain;
    double w, g;        /* bytes per weight and gradient (memory.h) */
    double layer_params; /* one layer's TP shard */
};

/* Where the unit sits: phase (FWD or BWD), micro-batch, stage, chunk. */
struct oc_zero_at {
    enum oc_phase phase;
    int64_t mb, stage, chunk;
    int64_t layer_first, layer_count; /* the chunk's layers */
};

typedef void (*oc_zero_put_fn)(void *sink, const struct oc_op *op);

/* m and l must outlive z. */

void oc_zero_ctx_init(struct oc_zero_ctx *z, const struct oc_model *m,
                      const struct oc_layout *l, enum oc_grain grain, int emit_memory);

/* The unit of chunk `chunk` on `stage` (its layers from placement.h). */
struct oc_zero_at oc_zero_at(const struct oc_zero_ctx *z, enum oc_phase phase, int64_t mb,
                             int64_t stage, int64_t chunk);

/* Around the whole (micro-batch, chunk, direction) unit: the chunk's extra
 * unit (oc_mem_chunk_extra_params). */
void oc_zero_unit_begin(const struct oc_zero_ctx *z, oc_zero_put_fn put, void *sink,
                        const struct oc_zero_at *a);
void oc_zero_unit_end(const struct oc_zero_ctx *z, oc_zero_put_fn put, void *sink,
                      const struct oc_zero_at *a);
/* Layer grain: layer `layer`, the i-th of the unit's n in the order it
 * runs (next_layer: the one after it, ignored when i = n-1). */
void oc_zero_layer_begin(const struct oc_zero_ctx *z, oc_zero_put_fn put, void *sink,
                         const struct oc_zero_at *a, int64_t i, int64_t n,
                         int64_t layer, int64_t next_layer);
void oc_zero_layer_end(const struct oc_zero_ctx *z, oc_zero_put_fn put, void *sink,
                       const struct oc_zero_at *a, int64_t layer);
/* Chunk grain: around the merged compute of a->layer_count layers. */
void oc_zero_chunk_begin(const struct oc_zero_ctx *z, oc_zero_put_fn put, void *sink,
                         const struct oc_zero_at *a);
void oc_zero_chunk_end(const struct oc_zero_ctx *z, oc_zero_put_fn put, void *sink,
                       const struct oc_zero_at *a);

#endif
