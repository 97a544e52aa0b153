/* timeline.c: per-op times parallel to a schedule (see timeline.h). */
#include "timeline.h"

#include <string.h>

void oc_timeline_init(struct oc_timeline *tl, const struct oc_schedule *s,
                      const unsigned char *record)
{
    memset(tl, 0, sizeof *tl);
    tl->sched = s;
    tl->nranks = s->nranks;
    tl->start_s = oc_xcalloc((size_t)s->nranks, sizeof *tl->start_s);
    tl->end_s = oc_xcalloc((size_t)s->nranks, sizeof *tl->end_s);
    tl->proxy = oc_xmalloc((size_t)s->nranks * sizeof *tl->proxy);
    for (int64_t r = 0; r < s->nranks; r++) {
        if (record && !record[r]) {
            tl->proxy[r] = -1;
            continue;
        }
        size_t n = (size_t)s->ranks[r].n;
        tl->start_s[r] = oc_xcalloc(n, sizeof(double));
        tl->end_s[r] = oc_xcalloc(n, sizeof(double));
        tl->proxy[r] = r;
    }
}

void oc_timeline_measured(struct oc_timeline *tl)
{
    OC_ASSERT(!tl->inner_s && !tl->peak_mem_bytes);
    tl->inner_s = oc_xcalloc((size_t)tl->nranks, sizeof *tl->inner_s);
    for (int64_t r = 0; r < tl->nranks; r++)
        if (tl->start_s[r])
            tl->inner_s[r] = oc_xcalloc((size_t)tl->sched->ranks[r].n, sizeof(double));
    tl->peak_mem_bytes = oc_xcalloc((size_t)tl->nranks, sizeof *tl->peak_mem_bytes);
}

void oc_timeline_free(struct oc_timeline *tl)
{
    for (int64_t r = 0; r < tl->nranks; r++) {
        free(tl->start_s[r]);
        free(tl->end_s[r]);
        if (tl->inner_s)
            free(tl->inner_s[r]);
    }
    free(tl->start_s);
    free(tl->end_s);
    free(tl->proxy);
    free(tl->inner_s);
    free(tl->peak_mem_bytes);
    oc_timeline_partners_free(tl->partner, tl->nranks);
    memset(tl, 0, sizeof *tl);
}

/* The SENDs of a schedule by (sender, tag): an open-addressing table of
 * twice their count (a table of every rank by every tag took memory of
 * ranks x tags, 50 MB for 64 ranks of 512 micro-batches with CP), one
 * slot's three fields side by side (one cache line a probe). */
struct send_slot {
    int64_t rank, tag, at; /* rank -1: empty */
};

static uint64_t send_hash(uint64_t mask, int64_t r, int64_t tag)
{
    uint64_t x = (uint64_t)r * 0x9e3779b97f4a7c15ULL ^ (uint64_t)tag * 0xc2b2ae3d27d4eb4fULL;
    x ^= x >> 29;
    return x & mask;
}

static struct send_slot *send_find(struct send_slot *h, uint64_t mask, int64_t r, int64_t tag)
{
    uint64_t k = send_hash(mask, r, tag);
    while (h[k].rank >= 0 && !(h[k].rank == r && h[k].tag == tag))
        k = (k + 1) & mask;
    return &h[k];
}

int64_t **oc_timeline_partners(const struct oc_schedule *s)
{
    const int64_t R = s->nranks;
    int64_t sends = 0;
    for (int64_t r = 0; r < R; r++)
        for (int64_t i = 0; i < s->ranks[r].n; i++)
            sends += s->ranks[r].ops[i].kind == OC_OP_SEND;
    uint64_t cap = 16;
    while (cap < 2 * (uint64_t)sends)
        cap *= 2;
    const uint64_t mask = cap - 1;
    struct send_slot *h = oc_xmalloc(cap * sizeof *h);
    for (uint64_t k = 0; k < cap; k++)
        h[k].rank = -1;
    int64_t **partner = oc_xcalloc((size_t)(R > 0 ? R : 1), sizeof *partner);
    for (int64_t r = 0; r < R; r++) {
        const struct oc_rank_ops *ro = &s->ranks[r];
        partner[r] = oc_xmalloc((size_t)(ro->n > 0 ? ro->n : 1) * sizeof **partner);
        for (int64_t i = 0; i < ro->n; i++) {
            const struct oc_op *op = &ro->ops[i];
            partner[r][i] = -1;
            if (op->kind != OC_OP_SEND)
                continue;
            OC_ASSERT(op->tag >= 0 && op->peer >= 0 && op->peer < R);
            struct send_slot *e = send_find(h, mask, r, op->tag);
            /* a repeated tag: the last SEND, as before */
            *e = (struct send_slot){r, op->tag, i};
        }
    }
    for (int64_t r = 0; r < R; r++)
        for (int64_t i = 0; i < s->ranks[r].n; i++) {
            const struct oc_op *op = &s->ranks[r].ops[i];
            if (op->kind != OC_OP_RECV)
                continue;
            OC_ASSERT(op->tag >= 0 && op->peer >= 0 && op->peer < R);
            const struct send_slot *e = send_find(h, mask, op->peer, op->tag);
            if (e->rank < 0)
                continue;
            const int64_t j = e->at;
            if (s->ranks[op->peer].ops[j].peer != r)
                continue;
            partner[r][i] = j;
            partner[op->peer][j] = i;
        }
    free(h);
    return partner;
}

void oc_timeline_partners_free(int64_t **partner, int64_t nranks)
{
    for (int64_t r = 0; partner && r < nranks; r++)
        free(partner[r]);
    free(partner);
}

void oc_timeline_send_arrivals(struct oc_timeline *tl)
{
    const struct oc_schedule *s = tl->sched;
    if (!tl->partner)
        tl->partner = oc_timeline_partners(s);
    int64_t **partner = tl->partner;
    for (int64_t r = 0; r < tl->nranks; r++)
        for (int64_t i = 0; tl->start_s[r] && i < s->ranks[r].n; i++) {
            const struct oc_op *op = &s->ranks[r].ops[i];
            const int64_t j = partner[r][i];
            if (op->kind != OC_OP_SEND || j < 0 || !tl->end_s[op->peer])
                continue;
            const double arrive = tl->end_s[op->peer][j];
            tl->end_s[r][i] = arrive > tl->start_s[r][i] ? arrive : tl->start_s[r][i];
        }
}
