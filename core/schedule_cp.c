/* schedule_cp.c: the context-parallel ring of K/V blocks (schedule_cp.h).
 *
 * What it is: the neighbours, bytes, tags and op order of ring attention on
 * one CP rank, and the chunk grain's merged unit (schedule_cp.h, "Chunk
 * grain"). What it is not: where attention sits in a layer (schedule.c
 * calls oc_cp_step_ops in place of the attention compute, and
 * oc_cp_unit_ops in place of a chunk-grain unit's compute) or what a step
 * costs (cost.c, closed_form.c).
 */
#include "schedule_cp.h"

#include <string.h>

#include "status.h"

void oc_cp_ring_init(struct oc_cp_ring *r, const struct oc_model *m,
                     const struct oc_layout *l, int64_t rank)
{
    memset(r, 0, sizeof *r);
    r->cp = l->cp > 1 ? l->cp : 1;
    const struct oc_coord c = oc_layout_coord(l, rank);
    struct oc_coord q = c;
    q.cp = (c.cp + 1) % r->cp;
    r->next = oc_layout_rank(l, q);
    q.cp = (c.cp + r->cp - 1) % r->cp;
    r->prev = oc_layout_rank(l, q);
    /* K and V of the rank's s/c tokens, its k/t KV heads (GQA: a KV head is
     * replicated when k < t, as Megatron-LM does). */
    const int64_t k_rank = (m->num_key_value_heads + l->tp - 1) / l->tp;
    r->kv_bytes = 2.0 * (double)l->micro_batch * (double)oc_layout_local_seq(l) *
                  (double)k_rank * (double)oc_model_head_dim(m) * oc_layout_act_bytes(l);
}

double oc_cp_step_bytes(const struct oc_cp_ring *r, enum oc_phase ph)
{
    /* TransformerEngine's backward passes K/V and their gradient
     * accumulators dK/dV round the same ring. */
    return ph == OC_PHASE_BWD ? 2.0 * r->kv_bytes : r->kv_bytes;
}

int64_t oc_cp_tag(const struct oc_cp_ring *r, int64_t tag_base, int64_t mb,
                  int64_t chunk, int64_t v, int64_t lc, int64_t j,
                  enum oc_phase ph, int64_t step)
{
    OC_ASSERT(j >= 0 && j < lc && step >= 0 && step < oc_cp_steps(r));
    const int64_t phk = ph == OC_PHASE_FWD ? 0 : ph == OC_PHASE_RECOMPUTE ? 1 : 2;
    return tag_base + ((((mb * v + chunk) * lc + j) * 3 + phk) * oc_cp_steps(r) + step);
}

int64_t oc_cp_step_ops(const struct oc_cp_ring *r, const struct oc_op *compute,
                       int64_t tag_base, int64_t v, int64_t lc, int64_t j, int64_t step,
                       struct oc_op out[3])
{
    OC_ASSERT(step >= 0 && step < r->cp);
    const enum oc_phase ph = (enum oc_phase)compute->phase;
    const int ring = step < oc_cp_steps(r);
    struct oc_op p2p = *compute;
    p2p.flops = p2p.hbm_bytes = 0;
    p2p.count = 1;
    p2p.p2p = OC_P2P_KV;
    p2p.bytes = oc_cp_step_bytes(r, ph) *
                (double)(compute->layer_count > 1 ? compute->layer_count : 1);
    p2p.tag = ring ? oc_cp_tag(r, tag_base, compute->mb, compute->chunk, v, lc, j, ph, step)
                   : -1;
    int64_t n = 0;
    if (ring) {
        out[n] = p2p;
        out[n].kind = OC_OP_SEND;
        out[n].peer = r->next;
        n++;
    }
    out[n] = *compute;
    out[n].flops = compute->flops / (double)r->cp;
    out[n].count = (int32_t)r->cp;
    n++;
    if (ring) {
        out[n] = p2p;
        out[n].kind = OC_OP_RECV;
        out[n].peer = r->prev;
        n++;
    }
    return n;
}

void oc_cp_unit_add(struct oc_cp_unit *u, const struct oc_op *op)
{
    OC_ASSERT(op->kind == OC_OP_COMPUTE && op->phase <= OC_PHASE_RECOMPUTE &&
              op->part <= OC_PART_HEAD);
    const int ph = op->phase;
    if (op->count > 1) { /* a ring slice (oc_cp_step_ops) */
        OC_ASSERT(op->part == OC_PART_ATTN && op->hbm_bytes == 0);
        u->ring_flops[ph] += op->flops;
        u->ring_slices[ph]++;
        return;
    }
    u->flops[op->part][ph] += op->flops;
    u->hbm[op->part][ph] += op->hbm_bytes;
    u->ops[op->part][ph]++;
    u->layers[op->part][ph] += op->layer_count;
}

/* The merged unit in the order the layer grain runs its parts, each
 * layer's collapsed: embedding, forward ring, MLP, head; backward: head,
 * recompute (ring, MLP), MLP, selective recompute, ring, embedding. A
 * unit holds either direction's entries only. */
static const struct {
    int ring;
    uint8_t part, phase;
} unit_order[] = {
    {0, OC_PART_EMBED, OC_PHASE_FWD}, {0, OC_PART_ATTN, OC_PHASE_FWD},
    {1, OC_PART_ATTN, OC_PHASE_FWD},  {0, OC_PART_MLP, OC_PHASE_FWD},
    {0, OC_PART_HEAD, OC_PHASE_FWD},  {0, OC_PART_HEAD, OC_PHASE_BWD},
    {1, OC_PART_ATTN, OC_PHASE_RECOMPUTE}, {0, OC_PART_MLP, OC_PHASE_RECOMPUTE},
    {0, OC_PART_MLP, OC_PHASE_BWD},   {0, OC_PART_ATTN, OC_PHASE_RECOMPUTE},
    {0, OC_PART_ATTN, OC_PHASE_BWD},  {1, OC_PART_ATTN, OC_PHASE_BWD},
    {0, OC_PART_EMBED, OC_PHASE_BWD},
};

void oc_cp_unit_ops(const struct oc_cp_ring *r, const struct oc_cp_unit *u,
                    const struct oc_op *tmpl, int64_t tag_base, int64_t v,
                    oc_cp_put_fn put, void *sink)
{
    for (size_t i = 0; i < sizeof unit_order / sizeof unit_order[0]; i++) {
        const int part = unit_order[i].part, ph = unit_order[i].phase;
        struct oc_op o = *tmpl;
        o.kind = OC_OP_COMPUTE;
        o.part = (uint8_t)part;
        o.phase = (uint8_t)ph;
        o.count = 1;
        o.peer = o.tag = -1;
        if (!unit_order[i].ring) {
            if (!u->ops[part][ph])
                continue;
            o.flops = u->flops[part][ph];
            o.hbm_bytes = u->hbm[part][ph];
            o.layer_count = (int32_t)u->layers[part][ph];
            o.layer_first = o.layer_count > 0 ? tmpl->layer_first : -1;
            put(sink, &o);
            continue;
        }
        if (!u->ring_slices[ph])
            continue;
        /* the n layers' attention as one part of the ring (count c) */
        OC_ASSERT(u->ring_slices[ph] % r->cp == 0);
        o.flops = u->ring_flops[ph];
        o.hbm_bytes = 0;
        o.layer_count = (int32_t)(u->ring_slices[ph] / r->cp);
        for (int64_t step = 0; step < r->cp; step++) {
            struct oc_op ops[3];
            const int64_t n = oc_cp_step_ops(r, &o, tag_base, v, 1, 0, step, ops);
            for (int64_t k = 0; k < n; k++)
                put(sink, &ops[k]);
        }
    }
}
