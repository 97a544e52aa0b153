/* schedule_zero.c: ZeRO-2 and ZeRO-3 ops of one unit (see schedule_zero.h
 * for the units, the ops and their sources). What it is not: the order of
 * units or the ops of a layer (schedule.c), the byte sizes of parameters
 * (memory.c) or a cost.
 *
 * Letters: d = DP size, n = layers of the unit, P = one layer's
 * parameters (TP shard), E = the chunk's extra parameters, w and g bytes
 * per weight and gradient.
 */
#include "schedule_zero.h"

#include <string.h>

#include "memory.h"
#include "placement.h"

void oc_zero_ctx_init(struct oc_zero_ctx *z, const struct oc_model *m,
                      const struct oc_layout *l, enum oc_grain grain, int emit_memory)
{
    memset(z, 0, sizeof *z);
    z->m = m;
    z->l = l;
    z->on = l->zero >= 2 && l->dp > 1;
    z->gather = z->on && l->zero == 3;
    z->overlap = l->overlap_grad_reduce != 0;
    z->emit_memory = emit_memory;
    z->grain = grain;
    const struct oc_mem_param_bytes pb = oc_mem_param_bytes(l);
    z->w = pb.weight;
    z->g = pb.grad;
    z->layer_params = (double)oc_model_layer_params_tp(m, l->tp);
}

static struct oc_op op_at(const struct oc_zero_at *a, enum oc_op_kind kind)
{
    struct oc_op o;
    memset(&o, 0, sizeof o);
    o.kind = (uint8_t)kind;
    o.phase = (uint8_t)a->phase;
    o.part = OC_PART_ALL;
    o.mb = (int32_t)a->mb;
    o.stage = (int32_t)a->stage;
    o.chunk = (int32_t)a->chunk;
    o.layer_first = (int32_t)a->layer_first;
    o.layer_count = (int32_t)a->layer_count;
    o.count = 1;
    o.peer = -1;
    o.tag = -1;
    return o;
}

/* An ALLOC or FREE; layer >= 0 names the one layer it holds. */
static void mem_l(const struct oc_zero_ctx *z, oc_zero_put_fn put, void *sink,
                  const struct oc_zero_at *a, enum oc_op_kind kind, enum oc_buf buf,
                  double bytes, int64_t layer)
{
    if (!z->emit_memory || bytes <= 0)
        return;
    struct oc_op o = op_at(a, kind);
    o.buf = (uint8_t)buf;
    o.bytes = bytes;
    if (layer >= 0) {
        o.layer_first = (int32_t)layer;
        o.layer_count = 1;
    }
    put(sink, &o);
}

static void mem(const struct oc_zero_ctx *z, oc_zero_put_fn put, void *sink,
                const struct oc_zero_at *a, enum oc_op_kind kind, enum oc_buf buf,
                double bytes)
{
    mem_l(z, put, sink, a, kind, buf, bytes, -1);
}

/* A DP collective of `count` repetitions of `bytes`, blocking or async on
 * `stream`; layer >= 0 names the one layer it serves. */
static void coll(oc_zero_put_fn put, void *sink, const struct oc_zero_at *a,
                 enum oc_coll_kind kind, double bytes, int64_t count, int stream,
                 int64_t layer)
{
    if (bytes <= 0 || count < 1)
        return;
    struct oc_op o = op_at(a, OC_OP_COLLECTIVE);
    o.coll = (uint8_t)kind;
    o.group = OC_GROUP_DP;
    o.bytes = bytes;
    o.count = (int32_t)count;
    if (stream >= 0) {
        o.async = 1;
        o.tag = stream;
    }
    if (layer >= 0) {
        o.layer_first = (int32_t)layer;
        o.layer_count = 1;
    }
    put(sink, &o);
}

static void wait_stream(oc_zero_put_fn put, void *sink, const struct oc_zero_at *a,
                        int stream)
{
    struct oc_op o = op_at(a, OC_OP_WAIT);
    o.tag = stream;
    put(sink, &o);
}

static int bwd(const struct oc_zero_at *a) { return a->phase == OC_PHASE_BWD; }

struct oc_zero_at oc_zero_at(const struct oc_zero_ctx *z, enum oc_phase phase, int64_t mb,
                             int64_t stage, int64_t chunk)
{
    const struct oc_layer_range lr = oc_place_chunk_layers(z->l, z->m, stage, chunk);
    return (struct oc_zero_at){phase, mb, stage, chunk, lr.first, lr.count};
}

void oc_zero_unit_begin(const struct oc_zero_ctx *z, oc_zero_put_fn put, void *sink,
                        const struct oc_zero_at *a)
{
    const double extra_params =
        z->on ? oc_mem_chunk_extra_params(z->m, z->l, a->stage, a->chunk) : 0.0;
    if (extra_params <= 0)
        return;
    if (z->gather) {
        mem(z, put, sink, a, OC_OP_ALLOC, OC_BUF_WEIGHTS, z->w * extra_params);
        coll(put, sink, a, OC_COLL_ALLGATHER, z->w * extra_params, 1, -1, -1);
    }
    if (bwd(a))
        mem(z, put, sink, a, OC_OP_ALLOC, OC_BUF_GRADS, z->g * extra_params);
}

void oc_zero_unit_end(const struct oc_zero_ctx *z, oc_zero_put_fn put, void *sink,
                      const struct oc_zero_at *a)
{
    const double extra_params =
        z->on ? oc_mem_chunk_extra_params(z->m, z->l, a->stage, a->chunk) : 0.0;
    if (extra_params <= 0)
        return;
    if (bwd(a)) {
        coll(put, sink, a, OC_COLL_REDUCESCATTER, z->g * extra_params, 1,
             z->overlap ? OC_ZERO_STREAM_REDUCE : -1, -1);
        mem(z, put, sink, a, OC_OP_FREE, OC_BUF_GRADS, z->g * extra_params);
    }
    if (z->gather)
        mem(z, put, sink, a, OC_OP_FREE, OC_BUF_WEIGHTS, z->w * extra_params);
}

void oc_zero_layer_begin(const struct oc_zero_ctx *z, oc_zero_put_fn put, void *sink,
                         const struct oc_zero_at *a, int64_t i, int64_t n,
                         int64_t layer, int64_t next_layer)
{
    if (!z->on)
        return;
    const double wb = z->w * z->layer_params;
    if (z->gather) {
        if (i == 0 || !z->overlap) {
            mem_l(z, put, sink, a, OC_OP_ALLOC, OC_BUF_WEIGHTS, wb, layer);
            coll(put, sink, a, OC_COLL_ALLGATHER, wb, 1, -1, layer);
        } else {
            wait_stream(put, sink, a, OC_ZERO_STREAM_GATHER); /* this layer's prefetch */
        }
        if (z->overlap && i + 1 < n) {
            mem_l(z, put, sink, a, OC_OP_ALLOC, OC_BUF_WEIGHTS, wb, next_layer);
            coll(put, sink, a, OC_COLL_ALLGATHER, wb, 1, OC_ZERO_STREAM_GATHER, next_layer);
        }
    }
    if (bwd(a))
        mem_l(z, put, sink, a, OC_OP_ALLOC, OC_BUF_GRADS, z->g * z->layer_params, layer);
}

void oc_zero_layer_end(const struct oc_zero_ctx *z, oc_zero_put_fn put, void *sink,
                       const struct oc_zero_at *a, int64_t layer)
{
    if (!z->on)
        return;
    if (z->gather)
        mem_l(z, put, sink, a, OC_OP_FREE, OC_BUF_WEIGHTS, z->w * z->layer_params, layer);
    if (bwd(a)) {
        const double gb = z->g * z->layer_params;
        coll(put, sink, a, OC_COLL_REDUCESCATTER, gb, 1,
             z->overlap ? OC_ZERO_STREAM_REDUCE : -1, layer);
        mem_l(z, put, sink, a, OC_OP_FREE, OC_BUF_GRADS, gb, layer);
    }
}

/* Layers whose gathered weights are held at once: the one computing and,
 * with overlap, the one prefetched. */
static int64_t held(const struct oc_zero_ctx *z, int64_t n)
{
    return z->overlap && n >= 2 ? 2 : 1;
}

void oc_zero_chunk_begin(const struct oc_zero_ctx *z, oc_zero_put_fn put, void *sink,
                         const struct oc_zero_at *a)
{
    const int64_t n = a->layer_count;
    if (!z->on || n < 1)
        return;
    const double wb = z->w * z->layer_params;
    if (z->gather) {
        mem(z, put, sink, a, OC_OP_ALLOC, OC_BUF_WEIGHTS, (double)held(z, n) * wb);
        if (z->overlap) {
            coll(put, sink, a, OC_COLL_ALLGATHER, wb, 1, -1, -1);
            coll(put, sink, a, OC_COLL_ALLGATHER, wb, n - 1, OC_ZERO_STREAM_GATHER, -1);
        } else {
            coll(put, sink, a, OC_COLL_ALLGATHER, wb, n, -1, -1);
        }
    }
    if (bwd(a))
        mem(z, put, sink, a, OC_OP_ALLOC, OC_BUF_GRADS, z->g * z->layer_params);
}

void oc_zero_chunk_end(const struct oc_zero_ctx *z, oc_zero_put_fn put, void *sink,
                       const struct oc_zero_at *a)
{
    const int64_t n = a->layer_count;
    if (!z->on || n < 1)
        return;
    if (z->gather && z->overlap && n >= 2)
        wait_stream(put, sink, a, OC_ZERO_STREAM_GATHER);
    if (bwd(a)) {
        const double gb = z->g * z->layer_params;
        coll(put, sink, a, OC_COLL_REDUCESCATTER, gb, n,
             z->overlap ? OC_ZERO_STREAM_REDUCE : -1, -1);
        mem(z, put, sink, a, OC_OP_FREE, OC_BUF_GRADS, gb);
    }
    if (z->gather)
        mem(z, put, sink, a, OC_OP_FREE, OC_BUF_WEIGHTS,
            (double)held(z, n) * z->w * z->layer_params);
}
