/* schedule.c: every rank's ordered op list for one layout (see schedule.h).
 *
 * Size: about 850 lines, over the ~800 guideline after the ZeRO-2/3 and CP
 * hooks (their ops live in schedule_zero.c and schedule_cp.c), the DP
 * buckets' split of the last backward (the buckets themselves in
 * schedule_bucket.c; the split needs this file's sinks) and the weight
 * gather's split of the first forward (--overlap-param-gather: the chain
 * and its ops in schedule_pgather.c). The layout's checks, its context
 * and the builder live in schedule_build.c (shared types:
 * schedule_priv.h). The seam left: the per-rank end of step (DP
 * reduction, embedding all-reduce, optimizer, ZeRO gathers in
 * oc_sch_emit_rank) into a schedule_step.c.
 *
 * What this file is: the one place that turns (t, p, d, m, v, schedule,
 * recompute, sequence parallel, distributed optimizer, overlap) into compute,
 * point-to-point, collective, wait and memory ops. What it is not: a cost
 * model (FLOPs come from model.c, buffer sizes from memory.c, times from
 * cost.c) or a simulator.
 *
 * Letters: t, p, d = TP, PP, DP sizes; m = micro-batches per step; v = model
 * chunks per stage; Lc = layers per chunk (L/(p*v) when even, n_i/v on
 * stage i with first/last; placement.h); s, b, h, V = sequence,
 * micro-batch size, hidden size, vocabulary.
 *
 * Model order: placement.h (global chunk g = c*p + i is chunk c of stage i
 * and holds its stage's Lc layers, after the chunks before it; g = 0
 * carries the embedding, g = p*v-1
 * the LM head); every placement fact here is asked there.
 *
 * The order of each stage's units: schedule_order.c.
 *
 * Choices made here (not fixed by the header):
 * - Embedding forward and backward carry 0 FLOPs (a gather and a
 *   scatter-add); backward FLOPs are twice the forward (Narayanan et al.
 *   2021, section 5.1); the optimizer carries 0 FLOPs and 28 HBM bytes per
 *   parameter of its shard. Layer compute ops carry hbm_bytes 0: cost.c
 *   derives their memory-bound time from the layer shapes.
 * - Selective recompute's attention-score recompute is emitted just before
 *   the attention backward, where Megatron-LM's checkpointed core attention
 *   re-runs; full recompute re-runs a layer's forward (with its TP
 *   collectives) just before that layer's backward.
 * - Under sequence parallelism the LM head all-gathers its input (forward)
 *   and reduce-scatters its input gradient (backward), and the embedding's
 *   forward reduce-scatter becomes an all-gather in backward, as Megatron-LM's
 *   ColumnParallelLinear and VocabParallelEmbedding do with
 *   sequence_parallel; without it, the embedding all-reduces its output and
 *   the head all-reduces its input gradient.
 * - The DP gradient reduction and the tied-embedding all-reduce follow
 *   Megatron-LM's finalize_model_grads order (DP first, then embedding);
 *   the WAIT sits right before the optimizer step. Under
 *   overlap_grad_reduce the DP buckets (schedule_bucket.h) are issued
 *   inside each chunk's last backward, before its pipeline send.
 */
#include "schedule.h"
#include "schedule_priv.h"

#include <string.h>

#include "memory.h"
#include "mbsplit.h"
#include "placement.h"
#include "compress.h"
#include "schedule_bucket.h"
#include "schedule_pgather.h"
#include "schedule_zero.h"
#include "schedule_cp.h"

/* ------------------------------------------------------------------ */
/* Names                                                                */

#define NAME_OF(table, i)                                                      \
    ((size_t)(i) < sizeof table / sizeof table[0] && table[i] ? table[i] : "?")

static const char *const kind_names[] = {
    [OC_OP_COMPUTE] = "compute", [OC_OP_SEND] = "send",
    [OC_OP_RECV] = "recv",       [OC_OP_COLLECTIVE] = "collective",
    [OC_OP_ALLOC] = "alloc",     [OC_OP_FREE] = "free",
    [OC_OP_WAIT] = "wait",
};
static const char *const phase_names[] = {
    [OC_PHASE_FWD] = "fwd",
    [OC_PHASE_BWD] = "bwd",
    [OC_PHASE_RECOMPUTE] = "recompute",
    [OC_PHASE_OPTIMIZER] = "optimizer",
};
static const char *const part_names[] = {
    [OC_PART_EMBED] = "embed", [OC_PART_ATTN] = "attn",
    [OC_PART_MLP] = "mlp",     [OC_PART_HEAD] = "head",
    [OC_PART_CHUNK] = "chunk", [OC_PART_ALL] = "all",
};
static const char *const coll_names[] = {
    [OC_COLL_ALLREDUCE] = "allreduce",
    [OC_COLL_ALLGATHER] = "allgather",
    [OC_COLL_REDUCESCATTER] = "reducescatter",
    [OC_COLL_BROADCAST] = "broadcast",
};
static const char *const group_names[] = {
    [OC_GROUP_NONE] = "none",
    [OC_GROUP_TP] = "tp",
    [OC_GROUP_DP] = "dp",
    [OC_GROUP_EMBED] = "embed",
    [OC_GROUP_CP] = "cp",
};
static const char *const buf_names[] = {
    [OC_BUF_WEIGHTS] = "weights",         [OC_BUF_GRADS] = "grads",
    [OC_BUF_OPTIMIZER] = "optimizer",     [OC_BUF_ACTIVATIONS] = "activations",
    [OC_BUF_LOGITS] = "logits",           [OC_BUF_COMM] = "comm",
};

const char *oc_op_kind_name(enum oc_op_kind k) { return NAME_OF(kind_names, k); }
const char *oc_phase_name(enum oc_phase p) { return NAME_OF(phase_names, p); }
const char *oc_part_name(enum oc_part p) { return NAME_OF(part_names, p); }
const char *oc_coll_name(enum oc_coll_kind c) { return NAME_OF(coll_names, c); }
const char *oc_group_name(enum oc_group g) { return NAME_OF(group_names, g); }
const char *oc_buf_name(enum oc_buf b) { return NAME_OF(buf_names, b); }

/* ------------------------------------------------------------------ */
/* Building                                                             */

static struct oc_op op_new(enum oc_op_kind kind, enum oc_phase phase,
                           enum oc_part part, int64_t mb, int64_t stage,
                           int64_t chunk)
{
    struct oc_op o;
    memset(&o, 0, sizeof o);
    o.kind = (uint8_t)kind;
    o.phase = (uint8_t)phase;
    o.part = (uint8_t)part;
    o.mb = (int32_t)mb;
    o.stage = (int32_t)stage;
    o.chunk = (int32_t)chunk;
    o.layer_first = -1;
    o.count = 1;
    o.peer = -1;
    o.tag = -1;
    return o;
}

static void put(struct sink *k, const struct oc_op *op)
{
    if (k->sum) {
        if (op->kind == OC_OP_COMPUTE) {
            k->sum->flops += op->flops;
            k->sum->hbm_bytes += op->hbm_bytes;
            if (k->ring)
                oc_cp_unit_add(&k->sum->cpu, op);
        }
        return; /* collectives are merged by put_tp / put_ce */
    }
    struct oc_rank_ops *r = k->out;
    if (r->ops) {
        OC_ASSERT(r->n < r->cap);
        r->ops[r->n] = *op;
    }
    r->n++;
}

/* schedule_zero.c's ops go through the sink like every other op. */
static void zput(void *k, const struct oc_op *op) { put(k, op); }

/* One of the equal-size (s*b*h*e bytes) TP collectives. */
static void put_tp(const struct ctx *x, struct sink *k, enum oc_coll_kind c,
                   enum oc_phase ph, enum oc_part part, int64_t mb,
                   int64_t stage, int64_t chunk, int64_t layer)
{
    if (k->sum) {
        if (c == OC_COLL_ALLREDUCE)
            k->sum->n_ar++;
        else if (c == OC_COLL_ALLGATHER)
            k->sum->n_ag++;
        else
            k->sum->n_rs++;
        return;
    }
    struct oc_op o = op_new(OC_OP_COLLECTIVE, ph, part, mb, stage, chunk);
    o.coll = (uint8_t)c;
    o.group = OC_GROUP_TP;
    o.bytes = x->tp_bytes;
    o.layer_first = (int32_t)layer;
    o.layer_count = layer >= 0 ? 1 : 0;
    put(k, &o);
}

static void put_compute(struct sink *k, enum oc_phase ph, enum oc_part part,
                        int64_t mb, int64_t stage, int64_t chunk,
                        int64_t layer, double flops)
{
    struct oc_op o = op_new(OC_OP_COMPUTE, ph, part, mb, stage, chunk);
    o.layer_first = (int32_t)layer;
    o.layer_count = layer >= 0 ? 1 : 0;
    o.flops = flops;
    put(k, &o);
}

static void put_mem(const struct ctx *x, struct sink *k, enum oc_op_kind kind,
                    enum oc_buf buf, enum oc_phase ph, int64_t mb,
                    int64_t stage, int64_t chunk, int64_t layer_first,
                    int64_t layer_count, double bytes)
{
    if (!x->emit_memory)
        return;
    struct oc_op o = op_new(kind, ph, OC_PART_ALL, mb, stage, chunk);
    o.buf = (uint8_t)buf;
    o.bytes = bytes;
    o.layer_first = (int32_t)layer_first;
    o.layer_count = (int32_t)layer_count;
    put(k, &o);
}

/* Context parallelism: the attention compute as c slices with the ring of
 * K/V blocks between them (schedule_cp.h). */
static void put_cp_attention(const struct ctx *x, struct sink *k,
                             enum oc_phase ph, int64_t mb, int64_t stage,
                             int64_t chunk, int64_t layer, double flops)
{
    struct oc_op c = op_new(OC_OP_COMPUTE, ph, OC_PART_ATTN, mb, stage, chunk);
    c.layer_first = (int32_t)layer;
    c.layer_count = 1;
    c.flops = flops;
    const int64_t j =
        layer - oc_place_chunk_layers(x->l, x->model, stage, chunk).first;
    for (int64_t step = 0; step < x->cp; step++) {
        struct oc_op ops[3];
        const int64_t n = oc_cp_step_ops(k->ring, &c, x->cp_tag_base, x->v, x->lc, j, step, ops);
        for (int64_t i = 0; i < n; i++)
            put(k, &ops[i]);
    }
}

/* One attention or MLP part of one layer in forward, recompute or backward
 * with its Megatron-LM TP collectives (Shoeybi et al. 2019, figure 3;
 * Korthikanti et al. 2022, section 4.2.2 for sequence parallelism): without
 * SP one all-reduce after the part (forward: row-parallel output; backward:
 * column-parallel input gradient); with SP an all-gather before and a
 * reduce-scatter after, in both directions. */
static void put_layer_part(const struct ctx *x, struct sink *k,
                           enum oc_phase ph, enum oc_part part, int64_t mb,
                           int64_t stage, int64_t chunk, int64_t layer,
                           double flops)
{
    if (x->sp)
        put_tp(x, k, OC_COLL_ALLGATHER, ph, part, mb, stage, chunk, layer);
    if (part == OC_PART_ATTN && k->ring)
        put_cp_attention(x, k, ph, mb, stage, chunk, layer, flops);
    else
        put_compute(k, ph, part, mb, stage, chunk, layer, flops);
    if (x->sp)
        put_tp(x, k, OC_COLL_REDUCESCATTER, ph, part, mb, stage, chunk, layer);
    else if (x->t > 1)
        put_tp(x, k, OC_COLL_ALLREDUCE, ph, part, mb, stage, chunk, layer);
}

/* The vocab-parallel cross-entropy's three small all-reduces (max, sum of
 * exponentials, target logit) of s*b fp32 values (Megatron-LM
 * tensor_parallel/cross_entropy.py). */
static void put_ce(const struct ctx *x, struct sink *k, int64_t mb,
                   int64_t stage, int64_t chunk)
{
    if (x->t == 1)
        return;
    if (k->sum) {
        k->sum->n_ce += 3;
        return;
    }
    struct oc_op o = op_new(OC_OP_COLLECTIVE, OC_PHASE_FWD, OC_PART_HEAD, mb,
                            stage, chunk);
    o.coll = OC_COLL_ALLREDUCE;
    o.group = OC_GROUP_TP;
    o.bytes = x->ce_bytes;
    o.count = 3;
    put(k, &o);
}

/* Compute and TP collectives of a forward unit's chunk-local layers jlo
 * to jhi-1, after the embedding's if `first` and before the head's if
 * `last`, layer grain (a whole unit: fwd_parts; a weight-gather bucket's
 * share of it: put_fwd_buckets). */
static void fwd_span(const struct ctx *x, struct sink *k, int64_t mb,
                     int64_t stage, int64_t c, int64_t jlo, int64_t jhi,
                     int first, int last)
{
    const struct oc_layer_range lr =
        oc_place_chunk_layers(x->l, x->model, stage, c);
    if (first) {
        put_compute(k, OC_PHASE_FWD, OC_PART_EMBED, mb, stage, c, -1,
                    x->embed_flops);
        /* VocabParallelEmbedding: all-reduce of the output, reduce-scatter
         * into the sequence-parallel region under SP. */
        if (x->sp)
            put_tp(x, k, OC_COLL_REDUCESCATTER, OC_PHASE_FWD, OC_PART_EMBED,
                   mb, stage, c, -1);
        else if (x->t > 1)
            put_tp(x, k, OC_COLL_ALLREDUCE, OC_PHASE_FWD, OC_PART_EMBED, mb,
                   stage, c, -1);
    }
    const struct oc_zero_at za = oc_zero_at(&x->zc, OC_PHASE_FWD, mb, stage, c);
    for (int64_t j = jlo; j < jhi; j++) {
        int64_t layer = lr.first + j;
        oc_zero_layer_begin(&x->zc, zput, k, &za, j, lr.count, layer, layer + 1);
        put_layer_part(x, k, OC_PHASE_FWD, OC_PART_ATTN, mb, stage, c, layer,
                       x->attn_flops);
        put_layer_part(x, k, OC_PHASE_FWD, OC_PART_MLP, mb, stage, c, layer,
                       x->mlp_flops);
        oc_zero_layer_end(&x->zc, zput, k, &za, layer);
    }
    if (last) {
        put_mem(x, k, OC_OP_ALLOC, OC_BUF_LOGITS, OC_PHASE_FWD, mb, stage, c,
                -1, 0, x->logits_bytes);
        /* Column-parallel LM head: the input is copied (no SP) or
         * all-gathered (SP) into the TP region. */
        if (x->sp)
            put_tp(x, k, OC_COLL_ALLGATHER, OC_PHASE_FWD, OC_PART_HEAD, mb,
                   stage, c, -1);
        put_compute(k, OC_PHASE_FWD, OC_PART_HEAD, mb, stage, c, -1,
                    x->head_flops);
        put_ce(x, k, mb, stage, c);
    }
}

static void fwd_parts(const struct ctx *x, struct sink *k, int64_t mb,
                      int64_t stage, int64_t c, int first, int last)
{
    const int64_t n = oc_place_chunk_layers(x->l, x->model, stage, c).count;
    fwd_span(x, k, mb, stage, c, 0, n, first, last);
}

/* Compute and TP collectives of a backward unit's chunk-local layers
 * jhi-1 down to jlo, after the head's backward if `last` and before the
 * embedding's if `first`, layer grain (a whole unit: bwd_parts; a DP
 * bucket's share of it: put_bwd_buckets). */
static void bwd_span(const struct ctx *x, struct sink *k, int64_t mb,
                     int64_t stage, int64_t c, int64_t jhi, int64_t jlo,
                     int first, int last)
{
    const struct oc_layer_range lr =
        oc_place_chunk_layers(x->l, x->model, stage, c);
    if (last) {
        put_compute(k, OC_PHASE_BWD, OC_PART_HEAD, mb, stage, c, -1,
                    2 * x->head_flops);
        if (x->sp)
            put_tp(x, k, OC_COLL_REDUCESCATTER, OC_PHASE_BWD, OC_PART_HEAD, mb,
                   stage, c, -1);
        else if (x->t > 1)
            put_tp(x, k, OC_COLL_ALLREDUCE, OC_PHASE_BWD, OC_PART_HEAD, mb,
                   stage, c, -1);
        put_mem(x, k, OC_OP_FREE, OC_BUF_LOGITS, OC_PHASE_BWD, mb, stage, c,
                -1, 0, x->logits_bytes);
    }
    /* rfull<k>: the first k layers of the chunk (memory.h) */
    const int64_t recomputed = oc_mem_recomputed_layers(x->l, lr.count);
    const struct oc_zero_at za = oc_zero_at(&x->zc, OC_PHASE_BWD, mb, stage, c);
    for (int64_t j = jhi - 1; j >= jlo; j--) {
        int64_t layer = lr.first + j;
        oc_zero_layer_begin(&x->zc, zput, k, &za, lr.count - 1 - j, lr.count, layer,
                            layer - 1);
        if (j < recomputed) {
            /* Megatron-LM full recompute re-runs the layer's forward,
             * TP collectives included. */
            put_layer_part(x, k, OC_PHASE_RECOMPUTE, OC_PART_ATTN, mb, stage,
                           c, layer, x->attn_flops);
            put_layer_part(x, k, OC_PHASE_RECOMPUTE, OC_PART_MLP, mb, stage,
                           c, layer, x->mlp_flops);
        }
        put_layer_part(x, k, OC_PHASE_BWD, OC_PART_MLP, mb, stage, c, layer,
                       2 * x->mlp_flops);
        if (x->recompute == OC_RECOMPUTE_SELECTIVE)
            put_compute(k, OC_PHASE_RECOMPUTE, OC_PART_ATTN, mb, stage, c,
                        layer, x->sel_flops);
        put_layer_part(x, k, OC_PHASE_BWD, OC_PART_ATTN, mb, stage, c, layer,
                       2 * x->attn_flops);
        oc_zero_layer_end(&x->zc, zput, k, &za, layer);
    }
    if (first) {
        if (x->sp)
            put_tp(x, k, OC_COLL_ALLGATHER, OC_PHASE_BWD, OC_PART_EMBED, mb,
                   stage, c, -1);
        put_compute(k, OC_PHASE_BWD, OC_PART_EMBED, mb, stage, c, -1,
                    2 * x->embed_flops);
    }
}

static void bwd_parts(const struct ctx *x, struct sink *k, int64_t mb,
                      int64_t stage, int64_t c, int first, int last)
{
    const int64_t n = oc_place_chunk_layers(x->l, x->model, stage, c).count;
    bwd_span(x, k, mb, stage, c, n, 0, first, last);
}

/* OC_GRAIN_CHUNK: the unit's merged compute and TP collectives. */
static void merged_range(const struct ctx *x, struct sink *k,
                         const struct unit_sum *u, enum oc_phase ph,
                         int64_t mb, int64_t stage, int64_t c,
                         struct oc_layer_range lr)
{
    struct oc_op o = op_new(OC_OP_COLLECTIVE, ph, OC_PART_CHUNK, mb, stage, c);
    o.group = OC_GROUP_TP;
    o.bytes = x->tp_bytes;
    o.layer_first = (int32_t)lr.first;
    o.layer_count = (int32_t)lr.count;
    if (u->n_ag) {
        o.coll = OC_COLL_ALLGATHER;
        o.count = (int32_t)u->n_ag;
        put(k, &o);
    }
    struct oc_op cp = op_new(OC_OP_COMPUTE, ph, OC_PART_CHUNK, mb, stage, c);
    cp.layer_first = (int32_t)lr.first;
    cp.layer_count = (int32_t)lr.count;
    cp.flops = u->flops;
    cp.hbm_bytes = u->hbm_bytes;
    if (k->ring) /* cp > 1: the merged ring (schedule_cp.h, "Chunk grain") */
        oc_cp_unit_ops(k->ring, &u->cpu, &cp, x->cp_tag_base, x->v, zput, k);
    else
        put(k, &cp);
    if (u->n_ar) {
        o.coll = OC_COLL_ALLREDUCE;
        o.count = (int32_t)u->n_ar;
        put(k, &o);
    }
    if (u->n_rs) {
        o.coll = OC_COLL_REDUCESCATTER;
        o.count = (int32_t)u->n_rs;
        put(k, &o);
    }
    if (u->n_ce) {
        struct oc_op ce = op_new(OC_OP_COLLECTIVE, ph, OC_PART_HEAD, mb, stage,
                                 c);
        ce.coll = OC_COLL_ALLREDUCE;
        ce.group = OC_GROUP_TP;
        ce.bytes = x->ce_bytes;
        ce.count = (int32_t)u->n_ce;
        put(k, &ce);
    }
}

static void merged_parts(const struct ctx *x, struct sink *k,
                         const struct unit_sum *u, enum oc_phase ph,
                         int64_t mb, int64_t stage, int64_t c)
{
    merged_range(x, k, u, ph, mb, stage, c,
                 oc_place_chunk_layers(x->l, x->model, stage, c));
}

/* Tag of a pipeline message: unique per (sender, receiver) because the
 * sender's (micro-batch, chunk, direction) names its receiver. */
static int64_t p2p_tag(const struct ctx *x, int64_t mb, int64_t sender_chunk,
                       enum oc_p2p_kind dir)
{
    return (mb * x->v + sender_chunk) * 2 + (int64_t)dir;
}

static void put_p2p(const struct ctx *x, struct sink *k, enum oc_op_kind kind,
                    enum oc_p2p_kind dir, int64_t mb, int64_t stage,
                    int64_t chunk, int64_t peer, int64_t tag)
{
    struct oc_op o = op_new(kind,
                            dir == OC_P2P_ACT ? OC_PHASE_FWD : OC_PHASE_BWD,
                            OC_PART_ALL, mb, stage, chunk);
    o.p2p = (uint8_t)dir;
    o.peer = peer;
    o.tag = tag;
    o.bytes = x->p2p_bytes;
    const struct oc_layer_range lr =
        oc_place_chunk_layers(x->l, x->model, stage, chunk);
    o.layer_first = (int32_t)lr.first;
    o.layer_count = (int32_t)lr.count;
    put(k, &o);
}

/* The rank of my (tp, dp) that runs chunk `at`. */
static int64_t chunk_rank(const struct ctx *x, struct oc_coord me,
                          struct oc_chunk_at at)
{
    struct oc_coord q = {me.tp, at.stage, me.dp, me.cp};
    return oc_layout_rank(x->l, q);
}

/* One unit of a rank's order with where its chunk sits (placement.h). */
struct unit_at {
    struct oc_unit u;
    int64_t stage;
    int first, last;              /* the chunk holds the embedding / head */
    int64_t from_rank, to_rank;   /* its message in and out, -1 if none */
    int64_t from_chunk;           /* the sender's chunk of the message in */
    struct oc_layer_range layers;
    double act_bytes;
    const struct unit_sum *sum;
    /* the chunk's last backward under dp_async: its DP buckets */
    const struct oc_dp_bucket *bk;
    const struct unit_sum *bsums;
    int64_t nbk;
    /* the chunk's first forward under pg: its buckets chain[pg0 .. pg0+npg)
     * of the stage's nchain */
    const struct oc_pg_item *chain;
    int64_t nchain, pg0, npg;
};

/* A forward unit receives from the previous chunk in model order and sends
 * to the next one; a backward unit the other way. */
static struct unit_at unit_at_of(const struct ctx *x,
                                 const struct stage_info *si, int64_t rank,
                                 struct oc_unit u)
{
    const struct oc_coord me = oc_layout_coord(x->l, rank);
    const int64_t c = u.chunk, g = oc_place_global_chunk(x->l, me.pp, c);
    struct unit_at a = {u, me.pp, oc_place_holds_embed(x->l, me.pp, c),
                        oc_place_holds_head(x->l, me.pp, c), -1, -1, -1,
                        oc_place_chunk_layers(x->l, x->model, me.pp, c),
                        si->act_bytes[c], &si->sums[c * 2 + u.backward],
                        NULL, NULL, 0, NULL, 0, 0, 0};
    int64_t prev = -1, next = -1;
    if (!a.first) {
        const struct oc_chunk_at at = oc_place_chunk_at(x->l, g - 1);
        prev = chunk_rank(x, me, at);
        OC_ASSERT(prev != rank);
        if (!u.backward)
            a.from_chunk = at.chunk;
    }
    if (!a.last) {
        const struct oc_chunk_at at = oc_place_chunk_at(x->l, g + 1);
        next = chunk_rank(x, me, at);
        if (u.backward)
            a.from_chunk = at.chunk;
    }
    a.from_rank = u.backward ? next : prev;
    a.to_rank = u.backward ? prev : next;
    return a;
}

/* The unit's message in (RECV) or out (SEND), if it has one. */
static void put_unit_msg(const struct ctx *x, struct sink *k,
                         const struct unit_at *a, enum oc_op_kind kind)
{
    const int in = kind == OC_OP_RECV;
    const int64_t peer = in ? a->from_rank : a->to_rank;
    const enum oc_p2p_kind dir = a->u.backward ? OC_P2P_GRAD : OC_P2P_ACT;
    if (peer >= 0)
        put_p2p(x, k, kind, dir, a->u.mb, a->stage, a->u.chunk, peer,
                p2p_tag(x, a->u.mb, in ? a->from_chunk : a->u.chunk, dir));
}

/* --overlap-grad-reduce, a chunk's last backward: the backward split at
 * the chunk's DP buckets (schedule_bucket.h), each bucket's asynchronous
 * reduction issued right after the compute of its last layer, as
 * Megatron-Core's DDP launches it once the bucket's gradients are all in.
 * Chunk grain: one merged piece per bucket, the unit's compute and TP
 * collectives split exactly (the pieces sum to the unit; cost.c times a
 * piece by its layers); with CP's merged ring the unit stays whole and its
 * buckets follow it. */
static void put_bwd_buckets(const struct ctx *x, struct sink *k,
                            const struct unit_at *a)
{
    const int64_t mb = a->u.mb, stage = a->stage, c = a->u.chunk;
    const int whole = x->grain != OC_GRAIN_LAYER && k->ring;
    if (whole)
        merged_parts(x, k, a->sum, OC_PHASE_BWD, mb, stage, c);
    for (int64_t j = 0; j < a->nbk; j++) {
        const struct oc_dp_bucket *b = &a->bk[j];
        const int64_t lo = b->layer_first - a->layers.first;
        if (x->grain == OC_GRAIN_LAYER)
            bwd_span(x, k, mb, stage, c, lo + b->layer_count, lo, b->embed, b->head);
        else if (!whole)
            merged_range(x, k, &a->bsums[j], OC_PHASE_BWD, mb, stage, c,
                         (struct oc_layer_range){b->layer_first, b->layer_count});
        struct oc_op o = op_new(OC_OP_COLLECTIVE, OC_PHASE_BWD, OC_PART_ALL, -1, stage, c);
        o.coll = (uint8_t)(x->l->zero ? OC_COLL_REDUCESCATTER : OC_COLL_ALLREDUCE);
        o.group = OC_GROUP_DP;
        o.async = 1;
        /* one DP stream: NCCL runs a communicator's collectives in issue
         * order, so a bucket waits for the one before (the simulator's
         * ZeRO reduce stream, schedule_zero.h, serves the same) */
        o.tag = OC_ZERO_STREAM_REDUCE;
        o.bytes = x->pb.grad * b->params;
        o.layer_first = (int32_t)b->layer_first;
        o.layer_count = (int32_t)b->layer_count;
        put(k, &o);
    }
    if (x->grain != OC_GRAIN_LAYER && a->last)
        put_mem(x, k, OC_OP_FREE, OC_BUF_LOGITS, OC_PHASE_BWD, mb, stage, c, -1, 0,
                x->logits_bytes);
}

/* --overlap-param-gather, a chunk's first forward: before each bucket's
 * layers (schedule_pgather.h) the wait for its weights and the next
 * bucket's gather. Chunk grain: one merged piece per bucket (cost.c times
 * a piece by its layers); with CP's merged ring the unit stays whole. */
static void put_pg(const struct ctx *x, struct sink *k, const struct unit_at *a,
                   int64_t g, int wait)
{
    const struct oc_op o = wait ? oc_pg_wait_op(&a->chain[g], a->stage)
                                : oc_pg_gather_op(x->l, &a->chain[g], a->stage);
    put(k, &o);
}

static void put_fwd_buckets(const struct ctx *x, struct sink *k,
                            const struct unit_at *a)
{
    const int64_t mb = a->u.mb, stage = a->stage, c = a->u.chunk;
    const int64_t end = a->pg0 + a->npg; /* past the chunk's buckets */
    if (x->grain != OC_GRAIN_LAYER && a->last)
        put_mem(x, k, OC_OP_ALLOC, OC_BUF_LOGITS, OC_PHASE_FWD, mb, stage, c, -1, 0,
                x->logits_bytes);
    if (x->grain != OC_GRAIN_LAYER && k->ring) { /* whole */
        put_pg(x, k, a, a->pg0, 1);
        for (int64_t g = a->pg0 + 1; g < end; g++)
            put_pg(x, k, a, g, 0);
        merged_parts(x, k, a->sum, OC_PHASE_FWD, mb, stage, c);
        if (a->npg > 1)
            put_pg(x, k, a, end - 1, 1);
        if (end < a->nchain)
            put_pg(x, k, a, end, 0);
        return;
    }
    for (int64_t g = a->pg0; g < end; g++) {
        const struct oc_dp_bucket *b = &a->chain[g].b;
        put_pg(x, k, a, g, 1);
        if (g + 1 < a->nchain)
            put_pg(x, k, a, g + 1, 0);
        const int64_t lo = b->layer_first - a->layers.first, hi = lo + b->layer_count;
        if (x->grain == OC_GRAIN_LAYER) {
            fwd_span(x, k, mb, stage, c, lo, hi, b->embed, b->head);
            continue;
        }
        struct unit_sum u;
        memset(&u, 0, sizeof u);
        struct sink ks = {NULL, &u, k->ring};
        fwd_span(x, &ks, mb, stage, c, lo, hi, b->embed, b->head);
        merged_range(x, k, &u, OC_PHASE_FWD, mb, stage, c,
                     (struct oc_layer_range){b->layer_first, b->layer_count});
    }
}

/* A unit's work between its messages: the forward keeps its activations
 * and computes; the backward computes (and drops the logits). */
static void put_unit_work(const struct ctx *x, struct sink *k,
                          const struct unit_at *a)
{
    const int64_t mb = a->u.mb, stage = a->stage, c = a->u.chunk;
    /* ZeRO-2/3 (schedule_zero.h): the chunk's extra unit around the work,
     * its layers' gathers and reductions inside */
    const struct oc_zero_at za =
        oc_zero_at(&x->zc, a->u.backward ? OC_PHASE_BWD : OC_PHASE_FWD, mb, stage, c);
    oc_zero_unit_begin(&x->zc, zput, k, &za);
    if (!a->u.backward)
        put_mem(x, k, OC_OP_ALLOC, OC_BUF_ACTIVATIONS, OC_PHASE_FWD, mb, stage,
                c, a->layers.first, a->layers.count, a->act_bytes);
    if (!a->u.backward && a->npg > 0) { /* pg: not with ZeRO-2/3 */
        put_fwd_buckets(x, k, a);
    } else if (!a->u.backward && x->grain == OC_GRAIN_LAYER) {
        fwd_parts(x, k, mb, stage, c, a->first, a->last);
    } else if (!a->u.backward) {
        if (a->last)
            put_mem(x, k, OC_OP_ALLOC, OC_BUF_LOGITS, OC_PHASE_FWD, mb, stage,
                    c, -1, 0, x->logits_bytes);
        oc_zero_chunk_begin(&x->zc, zput, k, &za);
        merged_parts(x, k, a->sum, OC_PHASE_FWD, mb, stage, c);
        oc_zero_chunk_end(&x->zc, zput, k, &za);
    } else if (a->nbk > 0) { /* dp_async: not with ZeRO-2/3 */
        put_bwd_buckets(x, k, a);
    } else if (x->grain == OC_GRAIN_LAYER) {
        bwd_parts(x, k, mb, stage, c, a->first, a->last);
    } else {
        oc_zero_chunk_begin(&x->zc, zput, k, &za);
        merged_parts(x, k, a->sum, OC_PHASE_BWD, mb, stage, c);
        oc_zero_chunk_end(&x->zc, zput, k, &za);
        if (a->last)
            put_mem(x, k, OC_OP_FREE, OC_BUF_LOGITS, OC_PHASE_BWD, mb, stage,
                    c, -1, 0, x->logits_bytes);
    }
    oc_zero_unit_end(&x->zc, zput, k, &za);
}

void oc_sch_emit_rank(const struct ctx *x, const struct stage_info *si, int64_t rank,
                      struct oc_rank_ops *out)
{
    struct oc_cp_ring ring;
    oc_cp_ring_init(&ring, x->model, x->l, rank);
    struct sink k = {out, NULL, x->cp > 1 ? &ring : NULL};
    struct oc_coord me = oc_layout_coord(x->l, rank);
    int64_t stage = me.pp;
    int64_t params = oc_mem_stage_params(x->model, x->l, stage);
    double opt_params =
        x->l->zero ? (double)params / (double)x->dg : (double)params;
    /* ZeRO-2 shards the gradients too, ZeRO-3 the weights (memory.h; with
     * cp > 1 refused, so x->d is the whole gradient group there) */
    const double d = (double)x->d;
    const double grad_params = x->zc.on ? (double)params / d : (double)params;
    const double weight_params = x->zc.gather ? (double)params / d : (double)params;

    /* memory.h's bytes per parameter (mixed precision 2 + 2 + 12, fp32
     * 4 + 4 + 8), the optimizer's sharded over DP under ZeRO-1. */
    put_mem(x, &k, OC_OP_ALLOC, OC_BUF_WEIGHTS, OC_PHASE_FWD, -1, stage, 0,
            -1, 0, x->pb.weight * weight_params);
    put_mem(x, &k, OC_OP_ALLOC, OC_BUF_GRADS, OC_PHASE_FWD, -1, stage, 0, -1,
            0, x->pb.grad * grad_params);
    put_mem(x, &k, OC_OP_ALLOC, OC_BUF_OPTIMIZER, OC_PHASE_FWD, -1, stage, 0,
            -1, 0, x->pb.optimizer * opt_params);
    if (oc_gc_on(x->l) && x->dg > 1) /* error feedback, PowerSGD's P and Q */
        put_mem(x, &k, OC_OP_ALLOC, OC_BUF_OPTIMIZER, OC_PHASE_FWD, -1, stage, 0,
                -1, 0, oc_gc_mem_bytes(x->model, x->l, stage));

    /* --overlap-param-gather: the first bucket's weights gathered from
     * the start (zero_grad, schedule_pgather.h) */
    if (x->pg && si->npg > 0) {
        const struct oc_op o = oc_pg_gather_op(x->l, &si->pg[0], stage);
        put(&k, &o);
    }
    const int dp_async = x->dp_async;
    enum oc_coll_kind dp_coll =
        x->l->zero ? OC_COLL_REDUCESCATTER : OC_COLL_ALLREDUCE;

    for (int64_t i = 0; i < si->nunits; i++) {
        struct unit_at a = unit_at_of(x, si, rank, si->order[i]);
        if (dp_async && i == si->last_bwd[a.u.chunk]) {
            a.bk = &si->bk[a.u.chunk * x->bucket_cap];
            a.bsums = &si->bsums[a.u.chunk * x->bucket_cap];
            a.nbk = si->nbk[a.u.chunk];
        }
        if (x->pg && i == si->first_fwd[a.u.chunk]) {
            a.chain = si->pg;
            a.nchain = si->npg;
            a.pg0 = si->pg0[a.u.chunk];
            a.npg = (a.u.chunk + 1 < x->v ? si->pg0[a.u.chunk + 1] : si->npg) - a.pg0;
        }
        put_unit_msg(x, &k, &a, OC_OP_RECV);
        put_unit_work(x, &k, &a);
        put_unit_msg(x, &k, &a, OC_OP_SEND);
        if (!a.u.backward)
            continue;
        put_mem(x, &k, OC_OP_FREE, OC_BUF_ACTIVATIONS, OC_PHASE_BWD, a.u.mb,
                stage, a.u.chunk, a.layers.first, a.layers.count, a.act_bytes);
    }

    /* Megatron-LM finalize_model_grads: DP gradient reduction, then the
     * tied embedding's all-reduce between first and last stage. */
    if (x->dg > 1 && oc_gc_on(x->l)) { /* compressed or local SGD */
        oc_gc_put_ops(x->model, x->l, stage, zput, &k);
    } else if (x->dg > 1 && !dp_async && !x->zc.on) {
        struct oc_op o =
            op_new(OC_OP_COLLECTIVE, OC_PHASE_BWD, OC_PART_ALL, -1, stage, 0);
        o.coll = (uint8_t)dp_coll;
        o.group = OC_GROUP_DP;
        o.bytes = x->pb.grad * (double)params;
        put(&k, &o);
    }
    if (oc_place_tied_allreduce(x->l, x->model, stage)) {
        struct oc_op o = op_new(OC_OP_COLLECTIVE, OC_PHASE_BWD, OC_PART_EMBED,
                                -1, stage, oc_place_stage_extra_chunk(x->l, stage));
        o.coll = OC_COLL_ALLREDUCE;
        o.group = OC_GROUP_EMBED;
        /* ZeRO-2/3: each rank holds its 1/d shard of the gradient */
        o.bytes = x->zc.on ? x->embed_grad_bytes / d : x->embed_grad_bytes;
        put(&k, &o);
    }
    struct oc_op w = op_new(OC_OP_WAIT, OC_PHASE_OPTIMIZER, OC_PART_ALL, -1,
                            stage, 0);
    put(&k, &w);
    /* AdamW, memory-bound, 28 bytes per parameter of the shard: read fp32
     * master, m, v and the 16-bit gradient, write master, m, v and the 16-bit
     * weight (12+2+12+2); in fp32 read w, g, m, v and write w, m, v (16+12).
     * cost.c reads the parameter count back (hbm_bytes / 28) and prices the
     * whole step as Megatron-LM runs it (cost_overhead.h: gradient copies,
     * norm, AdamW, parameter copies, zero_grad). */
    struct oc_op opt = op_new(OC_OP_COMPUTE, OC_PHASE_OPTIMIZER, OC_PART_ALL,
                              -1, stage, 0);
    opt.hbm_bytes = 28.0 * opt_params;
    put(&k, &opt);
    if (x->dg > 1 && x->l->zero && !x->zc.gather && !x->pg) {
        /* distributed optimizer (ZeRO-1 and 2): gather the updated compute
         * weights; ZeRO-3 gathers them unit by unit in the next step */
        struct oc_op o = op_new(OC_OP_COLLECTIVE, OC_PHASE_OPTIMIZER,
                                OC_PART_ALL, -1, stage, 0);
        o.coll = OC_COLL_ALLGATHER;
        o.group = OC_GROUP_DP;
        o.bytes = x->pb.weight * (double)params;
        put(&k, &o);
    }
}

void oc_sch_stage_info_free(struct stage_info *si, int64_t p)
{
    if (!si)
        return;
    for (int64_t i = 0; i < p; i++) {
        free(si[i].sums);
        free(si[i].last_bwd);
        free(si[i].act_bytes);
        free(si[i].order);
        free(si[i].bk);
        free(si[i].bsums);
        free(si[i].nbk);
        free(si[i].pg);
        free(si[i].pg0);
        free(si[i].first_fwd);
    }
    free(si);
}

void oc_sch_stage_info_init(const struct ctx *x, int64_t stage, struct stage_info *si)
{
    si->nunits = oc_schedule_stage_order(x->l, x->m, stage, &si->order);
    si->last_bwd = oc_xmalloc((size_t)x->v * sizeof *si->last_bwd);
    for (int64_t c = 0; c < x->v; c++)
        si->last_bwd[c] = -1;
    for (int64_t i = 0; i < si->nunits; i++)
        if (si->order[i].backward)
            si->last_bwd[si->order[i].chunk] = i;
    si->act_bytes = oc_xmalloc((size_t)x->v * sizeof *si->act_bytes);
    for (int64_t c = 0; c < x->v; c++)
        si->act_bytes[c] =
            oc_mem_chunk_activation_bytes(x->model, x->l, stage, c);
    si->sums = oc_xcalloc((size_t)(2 * x->v), sizeof *si->sums);
    /* cp > 1: the sums see the ring's slices (any rank's ring will do) */
    struct oc_cp_ring ring;
    oc_cp_ring_init(&ring, x->model, x->l, 0);
    for (int64_t c = 0; c < x->v; c++) {
        int first = oc_place_holds_embed(x->l, stage, c);
        int last = oc_place_holds_head(x->l, stage, c);
        struct sink k = {NULL, &si->sums[c * 2], x->cp > 1 ? &ring : NULL};
        fwd_parts(x, &k, 0, stage, c, first, last);
        k.sum = &si->sums[c * 2 + 1];
        bwd_parts(x, &k, 0, stage, c, first, last);
    }
    si->count = -1;
    if (x->pg) {
        si->pg = oc_xmalloc((size_t)oc_pg_chain_cap(x->model, x->l) * sizeof *si->pg);
        si->npg = oc_pg_chain(x->model, x->l, stage, si->pg);
        si->pg0 = oc_xmalloc((size_t)x->v * sizeof *si->pg0);
        si->first_fwd = oc_xmalloc((size_t)x->v * sizeof *si->first_fwd);
        for (int64_t c = x->v - 1; c >= 0; c--)
            si->pg0[c] = si->first_fwd[c] = -1;
        for (int64_t j = si->npg - 1; j >= 0; j--)
            si->pg0[si->pg[j].chunk] = j;
        for (int64_t i = si->nunits - 1; i >= 0; i--)
            if (!si->order[i].backward)
                si->first_fwd[si->order[i].chunk] = i;
    }
    if (!x->dp_async)
        return;
    const int64_t cap = x->bucket_cap;
    si->bk = oc_xmalloc((size_t)(x->v * cap) * sizeof *si->bk);
    si->bsums = oc_xcalloc((size_t)(x->v * cap), sizeof *si->bsums);
    si->nbk = oc_xmalloc((size_t)x->v * sizeof *si->nbk);
    for (int64_t c = 0; c < x->v; c++) {
        struct oc_dp_bucket *b = &si->bk[c * cap];
        si->nbk[c] = oc_dp_buckets(x->model, x->l, stage, c, x->bucket_size, b);
        const int64_t f = oc_place_chunk_layers(x->l, x->model, stage, c).first;
        for (int64_t j = 0; j < si->nbk[c]; j++) {
            struct sink k = {NULL, &si->bsums[c * cap + j], x->cp > 1 ? &ring : NULL};
            const int64_t lo = b[j].layer_first - f;
            bwd_span(x, &k, 0, stage, c, lo + b[j].layer_count, lo, b[j].embed, b[j].head);
        }
    }
}

