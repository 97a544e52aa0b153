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
