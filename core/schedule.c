/* schedule.c: every rank's ordered op list for one layout (see schedule.h).
 *
 * What this file is: the one place that turns (t, p, d, m, v, schedule,
 * recompute, sequence parallel, distributed optimizer, overlap) into compute,
 * point-to-point, collective, wait and memory ops. What it is not: a cost
 * model (FLOPs come from model.c, buffer sizes from memory.c, times from
 * cost.c) or a simulator.
 *
 * Letters: t, p, d = TP, PP, DP sizes; m = micro-batches per step; v = model
 * chunks per stage; Lc = layers per chunk = L/(p*v); s, b, h, V = sequence,
 * micro-batch size, hidden size, vocabulary.
 *
 * Model order (Megatron-LM interleaved assignment, Narayanan et al. 2021,
 * section 2.2.1): global chunk g = c*p + i is chunk c of stage i and holds
 * layers [g*Lc, (g+1)*Lc); g = 0 carries the embedding, g = p*v-1 the LM head.
 *
 * Choices made here (not fixed by the header):
 * - GPipe runs its backwards in micro-batch order 0..m-1 (as drawn in
 *   Narayanan et al. 2021, figure 3); the peak of m in flight is the same
 *   either way.
 * - Interleaved: Megatron-LM's general warm-up formula capped at m*v, also
 *   when m == p (older Megatron-LM versions ran all-warm-up in that case;
 *   current ones use the same formula).
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
 *   the WAIT sits right before the optimizer step.
 */
#include "schedule.h"

#include <string.h>

#include "memory.h"

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
/* Groups                                                               */

int64_t oc_schedule_group(const struct oc_layout *l, int64_t rank,
                          enum oc_group g, int64_t *members, int64_t cap)
{
    struct oc_coord c = oc_layout_coord(l, rank);
    int64_t n = 0;
    switch (g) {
    case OC_GROUP_TP:
        for (int64_t i = 0; i < l->tp; i++, n++) {
            struct oc_coord q = {i, c.pp, c.dp};
            if (n < cap)
                members[n] = oc_layout_rank(l, q);
        }
        break;
    case OC_GROUP_DP:
        for (int64_t i = 0; i < l->dp; i++, n++) {
            struct oc_coord q = {c.tp, c.pp, i};
            if (n < cap)
                members[n] = oc_layout_rank(l, q);
        }
        break;
    case OC_GROUP_EMBED: {
        /* Megatron-LM's embedding group: first and last pipeline stage. */
        int64_t stages[2] = {0, l->pp - 1};
        int64_t k = l->pp > 1 ? 2 : 1;
        for (int64_t i = 0; i < k; i++, n++) {
            struct oc_coord q = {c.tp, stages[i], c.dp};
            if (n < cap)
                members[n] = oc_layout_rank(l, q);
        }
        break;
    }
    case OC_GROUP_NONE:
    default:
        if (cap > 0)
            members[0] = rank;
        n = 1;
        break;
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* Stage order                                                          */

/* Megatron-LM schedules.py, forward_backward_pipelining_with_interleaving:
 * get_model_chunk_id and get_microbatch_id_in_model_chunk with the default
 * microbatch group size p. */
static struct oc_unit interleaved_unit(int64_t k, int64_t p, int64_t v,
                                       int backward)
{
    struct oc_unit u;
    int64_t c = (k / p) % v;
    u.chunk = (int32_t)(backward ? v - 1 - c : c);
    u.mb = (int32_t)((k / (p * v)) * p + k % p);
    u.backward = backward;
    return u;
}

int64_t oc_schedule_stage_order(const struct oc_layout *l, int64_t m,
                                int64_t stage, struct oc_unit **out)
{
    int64_t p = l->pp;
    int interleaved = l->schedule == OC_SCHED_INTERLEAVED;
    int64_t v = interleaved ? l->vchunks : 1;
    OC_ASSERT(m >= 1 && p >= 1 && v >= 1 && stage >= 0 && stage < p);
    OC_ASSERT(!interleaved || m % p == 0);
    int64_t total = m * v; /* units in each direction */
    struct oc_unit *u = oc_xmalloc((size_t)(2 * total) * sizeof *u);
    int64_t n = 0;

    if (l->schedule == OC_SCHED_GPIPE) {
        /* GPipe (Huang et al. 2019): every forward, then every backward. */
        for (int64_t k = 0; k < m; k++)
            u[n++] = (struct oc_unit){(int32_t)k, 0, 0};
        for (int64_t k = 0; k < m; k++)
            u[n++] = (struct oc_unit){(int32_t)k, 0, 1};
        *out = u;
        return n;
    }

    /* 1F1B (PipeDream-Flush) and interleaved 1F1B share one shape: w
     * warm-up forwards, then (forward w+k, backward k) pairs, then the
     * remaining backwards. 1F1B: w = min(p-i-1, m) (Narayanan et al. 2021,
     * section 2.2); interleaved: Megatron-LM's
     * w = min((p-i-1)*2 + (v-1)*p, m*v). */
    int64_t w = interleaved ? (p - stage - 1) * 2 + (v - 1) * p
                            : p - stage - 1;
    if (w > total)
        w = total;
    int64_t f = 0, b = 0;
#define UNIT(k, bw)                                                            \
    (interleaved ? interleaved_unit((k), p, v, (bw))                           \
                 : (struct oc_unit){(int32_t)(k), 0, (bw)})
    for (; f < w; f++)
        u[n++] = UNIT(f, 0);
    for (; f < total; f++, b++) {
        u[n++] = UNIT(f, 0);
        u[n++] = UNIT(b, 1);
    }
    for (; b < total; b++)
        u[n++] = UNIT(b, 1);
#undef UNIT
    OC_ASSERT(n == 2 * total);
    *out = u;
    return n;
}

/* ------------------------------------------------------------------ */
/* Building                                                             */

/* One unit's compute and TP collectives merged (OC_GRAIN_CHUNK). */
struct unit_sum {
    double flops, hbm_bytes;
    int64_t n_ar, n_ag, n_rs; /* TP collectives of tp_bytes each, by kind */
    int64_t n_ce;             /* cross-entropy all-reduces of ce_bytes */
};

/* Where ops go: appended to `out` (counted only while out->ops is NULL), or,
 * when `sum` is set, merged into it (only COMPUTE and TP COLLECTIVE ops). */
struct sink {
    struct oc_rank_ops *out;
    struct unit_sum *sum;
};

struct ctx {
    const struct oc_model *model;
    const struct oc_layout *l;
    int64_t t, p, d, v, m, lc, nchunks;
    enum oc_grain grain;
    int emit_memory;
    int sp; /* sequence parallel in effect (t > 1) */
    enum oc_recompute recompute;
    double logits_bytes; /* memory.c, one micro-batch */
    /* forward FLOPs per TP rank, one micro-batch */
    double attn_flops, mlp_flops, head_flops, embed_flops, sel_flops;
    double tp_bytes, ce_bytes, p2p_bytes, embed_grad_bytes;
};

/* Per-stage data shared by every rank of the stage. */
struct stage_info {
    struct oc_unit *order;
    int64_t nunits;
    int64_t *last_bwd;       /* v entries: index of the chunk's last backward */
    double *act_bytes;       /* v entries: memory.c's chunk activations */
    struct unit_sum *sums;   /* 2*v entries: [chunk*2 + backward] */
    int64_t count;           /* ops per rank, -1 until counted */
};

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

/* One of the equal-size (s*b*h*2 bytes) TP collectives. */
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

/* Compute and TP collectives of a forward unit, layer grain. */
static void fwd_parts(const struct ctx *x, struct sink *k, int64_t mb,
                      int64_t stage, int64_t c, int first, int last)
{
    int64_t g = c * x->p + stage;
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
    for (int64_t j = 0; j < x->lc; j++) {
        int64_t layer = g * x->lc + j;
        put_layer_part(x, k, OC_PHASE_FWD, OC_PART_ATTN, mb, stage, c, layer,
                       x->attn_flops);
        put_layer_part(x, k, OC_PHASE_FWD, OC_PART_MLP, mb, stage, c, layer,
                       x->mlp_flops);
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

/* Compute and TP collectives of a backward unit, layer grain. */
static void bwd_parts(const struct ctx *x, struct sink *k, int64_t mb,
                      int64_t stage, int64_t c, int first, int last)
{
    int64_t g = c * x->p + stage;
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
    for (int64_t j = x->lc - 1; j >= 0; j--) {
        int64_t layer = g * x->lc + j;
        if (x->recompute == OC_RECOMPUTE_FULL) {
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
    }
    if (first) {
        if (x->sp)
            put_tp(x, k, OC_COLL_ALLGATHER, OC_PHASE_BWD, OC_PART_EMBED, mb,
                   stage, c, -1);
        put_compute(k, OC_PHASE_BWD, OC_PART_EMBED, mb, stage, c, -1,
                    2 * x->embed_flops);
    }
}

/* OC_GRAIN_CHUNK: the unit's merged compute and TP collectives. */
static void merged_parts(const struct ctx *x, struct sink *k,
                         const struct unit_sum *u, enum oc_phase ph,
                         int64_t mb, int64_t stage, int64_t c)
{
    int64_t lf = (c * x->p + stage) * x->lc;
    struct oc_op o = op_new(OC_OP_COLLECTIVE, ph, OC_PART_CHUNK, mb, stage, c);
    o.group = OC_GROUP_TP;
    o.bytes = x->tp_bytes;
    o.layer_first = (int32_t)lf;
    o.layer_count = (int32_t)x->lc;
    if (u->n_ag) {
        o.coll = OC_COLL_ALLGATHER;
        o.count = (int32_t)u->n_ag;
        put(k, &o);
    }
    struct oc_op cp = op_new(OC_OP_COMPUTE, ph, OC_PART_CHUNK, mb, stage, c);
    cp.layer_first = (int32_t)lf;
    cp.layer_count = (int32_t)x->lc;
    cp.flops = u->flops;
    cp.hbm_bytes = u->hbm_bytes;
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
    o.layer_first = (int32_t)((chunk * x->p + stage) * x->lc);
    o.layer_count = (int32_t)x->lc;
    put(k, &o);
}

/* Parameters of chunk c on a rank of `stage` holding `params` in all: Lc
 * layers' TP shards, plus what the stage holds beyond its layers
 * (embedding, head) on the chunk that holds that part. */
static double chunk_params(const struct ctx *x, int64_t stage, int64_t c,
                           int64_t params)
{
    if (x->v == 1)
        return (double)params;
    double layers = (double)x->lc *
                    (double)oc_model_layer_params_tp(x->model, x->t);
    double extra = (double)params - (double)x->v * layers;
    if (extra < 0) /* memory.c counts differently: split evenly */
        return (double)params / (double)x->v;
    int64_t holder = stage == x->p - 1 && stage != 0 ? x->v - 1 : 0;
    return layers + (c == holder ? extra : 0.0);
}

static int64_t chunk_rank(const struct ctx *x, struct oc_coord me, int64_t g)
{
    struct oc_coord q = {me.tp, g % x->p, me.dp};
    return oc_layout_rank(x->l, q);
}

/* Where a unit of work of this rank sits: its chunk c on the stage, the
 * global chunk g = c * p + stage (first and last of the model), the first
 * layer of the chunk, its activation bytes and its merged op sums. */
struct unit_at {
    int64_t c, mb, g, lf;
    int first, last;
    double act;
    const struct unit_sum *sum;
};

static struct unit_at unit_at_of(const struct ctx *x,
                                 const struct stage_info *si, int64_t stage,
                                 struct oc_unit u)
{
    struct unit_at a;
    a.c = u.chunk;
    a.mb = u.mb;
    a.g = a.c * x->p + stage;
    a.first = a.g == 0;
    a.last = a.g == x->nchunks - 1;
    a.lf = a.g * x->lc;
    a.act = si->act_bytes[a.c];
    a.sum = &si->sums[a.c * 2 + u.backward];
    return a;
}

/* A forward unit: receive the activation (but on the first chunk), keep
 * the chunk's activations, the forward ops, send the activation on (but
 * from the last chunk). */
static void emit_fwd_unit(const struct ctx *x, struct sink *k,
                          struct oc_coord me, int64_t rank,
                          const struct unit_at *a)
{
    const int64_t stage = me.pp, c = a->c, mb = a->mb;
    if (!a->first) {
        int64_t prev = chunk_rank(x, me, a->g - 1);
        OC_ASSERT(prev != rank);
        put_p2p(x, k, OC_OP_RECV, OC_P2P_ACT, mb, stage, c, prev,
                p2p_tag(x, mb, (a->g - 1) / x->p, OC_P2P_ACT));
    }
    put_mem(x, k, OC_OP_ALLOC, OC_BUF_ACTIVATIONS, OC_PHASE_FWD, mb, stage, c,
            a->lf, x->lc, a->act);
    if (x->grain == OC_GRAIN_LAYER) {
        fwd_parts(x, k, mb, stage, c, a->first, a->last);
    } else {
        if (a->last)
            put_mem(x, k, OC_OP_ALLOC, OC_BUF_LOGITS, OC_PHASE_FWD, mb, stage,
                    c, -1, 0, x->logits_bytes);
        merged_parts(x, k, a->sum, OC_PHASE_FWD, mb, stage, c);
    }
    if (!a->last)
        put_p2p(x, k, OC_OP_SEND, OC_P2P_ACT, mb, stage, c,
                chunk_rank(x, me, a->g + 1), p2p_tag(x, mb, c, OC_P2P_ACT));
}

/* A backward unit: receive the gradient (but on the last chunk), the
 * backward ops, send the gradient back (but from the first chunk), free
 * the activations; with dp_async, the chunk's DP bucket after its last
 * backward (i: the unit's index in the stage's order). */
static void emit_bwd_unit(const struct ctx *x, struct sink *k,
                          const struct stage_info *si, struct oc_coord me,
                          int64_t i, const struct unit_at *a, int64_t params,
                          int dp_async, enum oc_coll_kind dp_coll)
{
    const int64_t stage = me.pp, c = a->c, mb = a->mb;
    if (!a->last)
        put_p2p(x, k, OC_OP_RECV, OC_P2P_GRAD, mb, stage, c,
                chunk_rank(x, me, a->g + 1),
                p2p_tag(x, mb, (a->g + 1) / x->p, OC_P2P_GRAD));
    if (x->grain == OC_GRAIN_LAYER) {
        bwd_parts(x, k, mb, stage, c, a->first, a->last);
    } else {
        merged_parts(x, k, a->sum, OC_PHASE_BWD, mb, stage, c);
        if (a->last)
            put_mem(x, k, OC_OP_FREE, OC_BUF_LOGITS, OC_PHASE_BWD, mb, stage, c,
                    -1, 0, x->logits_bytes);
    }
    if (!a->first)
        put_p2p(x, k, OC_OP_SEND, OC_P2P_GRAD, mb, stage, c,
                chunk_rank(x, me, a->g - 1), p2p_tag(x, mb, c, OC_P2P_GRAD));
    put_mem(x, k, OC_OP_FREE, OC_BUF_ACTIVATIONS, OC_PHASE_BWD, mb, stage, c,
            a->lf, x->lc, a->act);
    /* --overlap-grad-reduce: the chunk's gradients are final after its
     * last backward; Megatron-LM starts their DP reduction there (one
     * bucket per chunk here). */
    if (dp_async && i == si->last_bwd[c]) {
        struct oc_op o =
            op_new(OC_OP_COLLECTIVE, OC_PHASE_BWD, OC_PART_ALL, -1, stage, c);
        o.coll = (uint8_t)dp_coll;
        o.group = OC_GROUP_DP;
        o.async = 1;
        o.bytes = 2.0 * chunk_params(x, stage, c, params);
        o.layer_first = (int32_t)a->lf;
        o.layer_count = (int32_t)x->lc;
        put(k, &o);
    }
}

/* The end of the step: Megatron-LM finalize_model_grads (the DP gradient
 * reduction unless it ran per chunk, then the tied embedding's all-reduce
 * between first and last stage), the wait for async communication, the
 * optimizer step, and the distributed optimizer's weight all-gather. */
static void emit_step_end(const struct ctx *x, struct sink *k, int64_t stage,
                          int64_t params, double opt_params, int dp_async,
                          enum oc_coll_kind dp_coll)
{
    if (x->d > 1 && !dp_async) {
        struct oc_op o =
            op_new(OC_OP_COLLECTIVE, OC_PHASE_BWD, OC_PART_ALL, -1, stage, 0);
        o.coll = (uint8_t)dp_coll;
        o.group = OC_GROUP_DP;
        o.bytes = 2.0 * (double)params;
        put(k, &o);
    }
    if (x->model->tie_word_embeddings && x->p > 1 &&
        (stage == 0 || stage == x->p - 1)) {
        struct oc_op o = op_new(OC_OP_COLLECTIVE, OC_PHASE_BWD, OC_PART_EMBED,
                                -1, stage, stage == 0 ? 0 : x->v - 1);
        o.coll = OC_COLL_ALLREDUCE;
        o.group = OC_GROUP_EMBED;
        o.bytes = x->embed_grad_bytes;
        put(k, &o);
    }
    struct oc_op w =
        op_new(OC_OP_WAIT, OC_PHASE_OPTIMIZER, OC_PART_ALL, -1, stage, 0);
    put(k, &w);
    /* AdamW step, memory-bound: per parameter of the shard, read fp32
     * master, m, v (12) and the 16-bit gradient (2), write master, m, v (12)
     * and the 16-bit weight (2) = 28 bytes. */
    struct oc_op opt =
        op_new(OC_OP_COMPUTE, OC_PHASE_OPTIMIZER, OC_PART_ALL, -1, stage, 0);
    opt.hbm_bytes = 28.0 * opt_params;
    put(k, &opt);
    if (x->d > 1 && x->l->shard_optimizer) {
        /* distributed optimizer: gather the updated 16-bit weights */
        struct oc_op o = op_new(OC_OP_COLLECTIVE, OC_PHASE_OPTIMIZER,
                                OC_PART_ALL, -1, stage, 0);
        o.coll = OC_COLL_ALLGATHER;
        o.group = OC_GROUP_DP;
        o.bytes = 2.0 * (double)params;
        put(k, &o);
    }
}

static void emit_rank(const struct ctx *x, const struct stage_info *si,
                      int64_t rank, struct oc_rank_ops *out)
{
    struct sink k = {out, NULL};
    struct oc_coord me = oc_layout_coord(x->l, rank);
    int64_t stage = me.pp;
    int64_t params = oc_mem_stage_params(x->model, x->l, stage);
    double opt_params =
        x->l->shard_optimizer ? (double)params / (double)x->d : (double)params;

    /* Mixed-precision Adam: 2 + 2 + 12 bytes per parameter (Rajbhandari et
     * al. 2020, section 3.1), the 12 sharded over DP under ZeRO-1. */
    put_mem(x, &k, OC_OP_ALLOC, OC_BUF_WEIGHTS, OC_PHASE_FWD, -1, stage, 0,
            -1, 0, 2.0 * (double)params);
    put_mem(x, &k, OC_OP_ALLOC, OC_BUF_GRADS, OC_PHASE_FWD, -1, stage, 0, -1,
            0, 2.0 * (double)params);
    put_mem(x, &k, OC_OP_ALLOC, OC_BUF_OPTIMIZER, OC_PHASE_FWD, -1, stage, 0,
            -1, 0, 12.0 * opt_params);

    int dp_async = x->d > 1 && x->l->overlap_grad_reduce;
    enum oc_coll_kind dp_coll =
        x->l->shard_optimizer ? OC_COLL_REDUCESCATTER : OC_COLL_ALLREDUCE;

    for (int64_t i = 0; i < si->nunits; i++) {
        struct unit_at a = unit_at_of(x, si, stage, si->order[i]);
        if (!si->order[i].backward)
            emit_fwd_unit(x, &k, me, rank, &a);
        else
            emit_bwd_unit(x, &k, si, me, i, &a, params, dp_async, dp_coll);
    }
    emit_step_end(x, &k, stage, params, opt_params, dp_async, dp_coll);
}

static void stage_info_free(struct stage_info *si, int64_t p)
{
    if (!si)
        return;
    for (int64_t i = 0; i < p; i++) {
        free(si[i].sums);
        free(si[i].last_bwd);
        free(si[i].act_bytes);
        free(si[i].order);
    }
    free(si);
}

static void stage_info_init(const struct ctx *x, int64_t stage,
                            struct stage_info *si)
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
    for (int64_t c = 0; c < x->v; c++) {
        int64_t g = c * x->p + stage;
        int first = g == 0, last = g == x->nchunks - 1;
        struct sink k = {NULL, &si->sums[c * 2]};
        fwd_parts(x, &k, 0, stage, c, first, last);
        k.sum = &si->sums[c * 2 + 1];
        bwd_parts(x, &k, 0, stage, c, first, last);
    }
    si->count = -1;
}

int oc_schedule_build(struct oc_schedule *s, const struct oc_model *m,
                      const struct oc_layout *l,
                      const struct oc_schedule_opts *o, struct oc_status *st)
{
    memset(s, 0, sizeof *s);
    struct oc_schedule_opts defaults = {OC_GRAIN_LAYER, 1};
    if (!o)
        o = &defaults;
    if (o->grain != OC_GRAIN_LAYER && o->grain != OC_GRAIN_CHUNK)
        return oc_fail(st, "schedule: unknown grain %d", (int)o->grain);
    if (l->tp < 1 || l->pp < 1 || l->dp < 1 || l->micro_batch < 1 ||
        l->seq_length < 1 || l->vchunks < 1)
        return oc_fail(st, "schedule: layout tp%lld-pp%lld-dp%lld-mb%lld-v%lld "
                           "with seq %lld has a size below 1",
                       (long long)l->tp, (long long)l->pp, (long long)l->dp,
                       (long long)l->micro_batch, (long long)l->vchunks,
                       (long long)l->seq_length);
    int interleaved = l->schedule == OC_SCHED_INTERLEAVED;
    if (!interleaved && l->vchunks != 1)
        return oc_fail(st, "schedule: v%lld needs the interleaved schedule",
                       (long long)l->vchunks);
    int64_t v = l->vchunks;
    int64_t nm = oc_layout_num_micro_batches(l);
    if (nm < 1 || nm * l->dp * l->micro_batch != l->global_batch)
        return oc_fail(st, "schedule: global batch %lld is not a positive "
                           "multiple of DP*micro-batch = %lld",
                       (long long)l->global_batch,
                       (long long)(l->dp * l->micro_batch));
    if (m->num_hidden_layers < l->pp * v ||
        m->num_hidden_layers % (l->pp * v) != 0)
        return oc_fail(st, "schedule: %lld layers do not split into PP*v = %lld "
                           "equal chunks",
                       (long long)m->num_hidden_layers, (long long)(l->pp * v));
    if (interleaved && nm % l->pp != 0)
        return oc_fail(st, "schedule: the interleaved schedule needs the %lld "
                           "micro-batches to be a multiple of PP %lld",
                       (long long)nm, (long long)l->pp);

    struct ctx x;
    memset(&x, 0, sizeof x);
    x.model = m;
    x.l = l;
    x.t = l->tp;
    x.p = l->pp;
    x.d = l->dp;
    x.v = v;
    x.m = nm;
    x.lc = oc_layout_layers_per_chunk(l, m);
    x.nchunks = x.p * v;
    x.grain = o->grain;
    x.emit_memory = o->emit_memory;
    x.sp = l->sequence_parallel && l->tp > 1;
    x.recompute = l->recompute;
    x.logits_bytes = oc_mem_logits_bytes(m, l);
    double sd = (double)l->seq_length, bd = (double)l->micro_batch;
    double hd = (double)m->hidden_size, td = (double)l->tp;
    /* TP splits the GEMMs, the attention heads and the vocabulary evenly
     * (Shoeybi et al. 2019): per-rank FLOPs are the part's over t. */
    x.attn_flops = oc_model_attn_fwd_flops(m, l->micro_batch, l->seq_length) / td;
    x.mlp_flops = oc_model_mlp_fwd_flops(m, l->micro_batch, l->seq_length) / td;
    x.head_flops = oc_model_head_fwd_flops(m, l->micro_batch, l->seq_length) / td;
    x.embed_flops = 0.0;
    /* Selective recompute re-runs QK^T and softmax*V: 4*b*s^2*h
     * (Korthikanti et al. 2022, section 5). */
    x.sel_flops = 4.0 * bd * sd * sd * hd / td;
    /* TP collectives move the full s*b*h 16-bit activation (Korthikanti et
     * al. 2022, section 4.2.2); pipeline messages the s*b*h activation, a
     * 1/t sequence shard of it under SP (Megatron-LM p2p tensor shape). */
    x.tp_bytes = 2.0 * sd * bd * hd;
    x.ce_bytes = 4.0 * sd * bd;
    x.p2p_bytes = x.sp ? x.tp_bytes / td : x.tp_bytes;
    x.embed_grad_bytes = 2.0 * (double)m->vocab_size * hd / td;

    struct stage_info *si = oc_xcalloc((size_t)x.p, sizeof *si);
    for (int64_t i = 0; i < x.p; i++)
        stage_info_init(&x, i, &si[i]);

    s->nranks = oc_layout_world(l);
    s->num_micro_batches = nm;
    s->layout = *l;
    s->ranks = oc_xcalloc((size_t)s->nranks, sizeof *s->ranks);
    for (int64_t r = 0; r < s->nranks; r++) {
        struct stage_info *me = &si[oc_layout_coord(l, r).pp];
        struct oc_rank_ops *ro = &s->ranks[r];
        if (me->count < 0) { /* every rank of a stage has the same count */
            emit_rank(&x, me, r, ro);
            me->count = ro->n;
        }
        ro->cap = me->count;
        ro->n = 0;
        ro->ops = oc_xmalloc((size_t)ro->cap * sizeof *ro->ops);
        emit_rank(&x, me, r, ro);
        OC_ASSERT(ro->n == ro->cap);
    }
    stage_info_free(si, x.p);
    return 0;
}

void oc_schedule_free(struct oc_schedule *s)
{
    if (!s)
        return;
    if (s->ranks)
        for (int64_t r = 0; r < s->nranks; r++)
            free(s->ranks[r].ops);
    free(s->ranks);
    s->ranks = NULL;
    s->nranks = 0;
}
