/* schedule_order.c: the order in which one pipeline stage runs its units
 * (oc_schedule_stage_order, schedule.h): gpipe, 1f1b, interleaved 1F1B.
 *
 * What this file is: which (micro-batch, chunk, direction) comes when on a
 * stage. What it is not: the ops of a unit (schedule.c) or where a chunk
 * sits in the model (placement.h).
 *
 * Letters: p = PP size, v = model chunks per stage, m = micro-batches per
 * step, i = the stage.
 *
 * Choices made here (not fixed by the header):
 * - GPipe runs its backwards in micro-batch order 0..m-1 (as drawn in
 *   Narayanan et al. 2021, figure 3); the peak of m in flight is the same
 *   either way.
 * - Interleaved: Megatron-LM's general warm-up formula capped at m*v, also
 *   when m == p (older Megatron-LM versions ran all-warm-up in that case;
 *   current ones use the same formula).
 */
#include "schedule.h"

#include "placement.h"

/* Megatron-LM schedules.py, forward_backward_pipelining_with_interleaving:
 * get_model_chunk_id and get_microbatch_id_in_model_chunk with the default
 * microbatch group size p. */
struct oc_unit oc_schedule_unit(const struct oc_layout *l, int64_t k,
                                int backward)
{
    struct oc_unit u;
    if (l->schedule != OC_SCHED_INTERLEAVED)
        return (struct oc_unit){(int32_t)k, 0, backward};
    const int64_t p = l->pp, v = oc_place_interleaved_chunks(l);
    int64_t c = (k / p) % v;
    u.chunk = (int32_t)(backward ? v - 1 - c : c);
    u.mb = (int32_t)((k / (p * v)) * p + k % p);
    u.backward = backward;
    return u;
}

int64_t oc_schedule_warmup(const struct oc_layout *l, int64_t m, int64_t stage)
{
    const int64_t p = l->pp, v = oc_place_interleaved_chunks(l);
    const int64_t total = m * v; /* units in each direction */
    int64_t w;
    switch (l->schedule) {
    case OC_SCHED_GPIPE:
        w = total; /* every forward, then every backward */
        break;
    case OC_SCHED_INTERLEAVED:
        w = (p - stage - 1) * 2 + (v - 1) * p;
        break;
    case OC_SCHED_1F1B:
    default:
        w = p - stage - 1;
        break;
    }
    return w < total ? w : total;
}

int64_t oc_schedule_stage_order(const struct oc_layout *l, int64_t m,
                                int64_t stage, struct oc_unit **out)
{
    const int64_t p = l->pp, v = oc_place_interleaved_chunks(l);
    OC_ASSERT(m >= 1 && p >= 1 && v >= 1 && stage >= 0 && stage < p);
    OC_ASSERT(l->schedule != OC_SCHED_INTERLEAVED || m % p == 0);
    const int64_t total = m * v; /* units in each direction */
    struct oc_unit *u = oc_xmalloc((size_t)(2 * total) * sizeof *u);
    int64_t n = 0;
    /* GPipe (Huang et al. 2019) warms up with every forward, so only the
     * last loop runs after the first; 1F1B (PipeDream-Flush) and
     * interleaved 1F1B alternate in between. */
    const int64_t w = oc_schedule_warmup(l, m, stage);
    int64_t f = 0, b = 0;
    for (; f < w; f++)
        u[n++] = oc_schedule_unit(l, f, 0);
    for (; f < total; f++, b++) {
        u[n++] = oc_schedule_unit(l, f, 0);
        u[n++] = oc_schedule_unit(l, b, 1);
    }
    for (; b < total; b++)
        u[n++] = oc_schedule_unit(l, b, 1);
    OC_ASSERT(n == 2 * total);
    *out = u;
    return n;
}
