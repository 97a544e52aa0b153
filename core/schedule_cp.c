/* schedule_cp.c: the context-parallel ring of K/V blocks (schedule_cp.h).
 *
 * What it is: the neighbours, bytes, tags and op order of ring attention on
 * one CP rank. What it is not: where attention sits in a layer
 * (schedule.c calls oc_cp_step_ops in place of the attention
 * compute) or what a step costs (cost.c, closed_form.c).
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
    p2p.bytes = oc_cp_step_bytes(r, ph);
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
