/* backend_cuda_timing.c: the cuda backend's op times (backend_cuda.c has
 * the backend and its streams, backend_cuda_priv.h its files): the
 * events of each op and inner compute segment, recorded at the runner's
 * marks, and read at the end of a step, with the deadline that names the
 * first op that did not finish.
 *
 * What it is not: the streams' order (backend_cuda.c), the requests of
 * sends and async collectives (backend_cuda_comm.c), or the metrics made
 * of the times (exec/runner.c, core/step_metrics.h).
 *
 * Timing: one start and one end event per op (timing enabled), and start /
 * end pairs per inner compute segment, made once and reused every step;
 * cudaEventElapsedTime from an event recorded on the compute stream at
 * step_begin. A pipeline op's start and end are recorded on the stream of
 * its direction around its NCCL call (the direction is known only in the
 * call: the START mark is held until then). step_end waits for the ops'
 * end events in list order (the first one past the deadline is the stuck
 * op) and then for one event per stream.
 */
#include "backend_cuda_priv.h"

#include <stdint.h>
#include <string.h>

#include "check.h"

/* ------------------------------------------------------------------ */
/* Timing                                                               */

/* The stream of marks for s; OC_STREAM_PP: the last pipeline call's
 * (oc_cuda_be_mark records a pipeline op's own marks on its stream). */
static cudaStream_t stream_of(struct oc_cuda_be *x, enum oc_stream s)
{
    switch (s) {
    case OC_STREAM_COMPUTE: return x->compute;
    case OC_STREAM_PP: return x->pp[x->pp_last];
    case OC_STREAM_DP: return x->dp;
    }
    OC_ASSERT(0);
    return x->compute;
}

void oc_cuda_be_step_begin(struct oc_backend *b, int64_t nops)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    OC_ASSERT(!x->in_step && !x->in_group && nops >= 0);
    cudaCheck(cudaSetDevice(x->device));
    if (nops > x->cap_ops) {
        x->ev = oc_xrealloc(x->ev, (size_t)nops * sizeof *x->ev);
        for (int64_t i = x->cap_ops; i < nops; i++) {
            struct oc_cuda_op_ev *e = &x->ev[i];
            memset(e, 0, sizeof *e);
            cudaCheck(cudaEventCreateWithFlags(&e->start, cudaEventDefault));
            cudaCheck(cudaEventCreateWithFlags(&e->end, cudaEventDefault));
        }
        x->cap_ops = nops;
    }
    for (int64_t i = 0; i < nops; i++) {
        struct oc_cuda_op_ev *e = &x->ev[i];
        e->has_start = e->has_end = e->end_issued = 0;
        e->dir = -1;
        e->ninner = 0;
        e->inner_open = 0;
    }
    x->nops = nops;
    x->pp_op = -1;
    x->in_step = 1;
    cudaCheck(cudaEventRecord(x->step_start, x->compute));
}

static void inner_grow(struct oc_cuda_op_ev *e)
{
    if (e->ninner < e->cap_inner)
        return;
    int64_t cap = e->cap_inner ? 2 * e->cap_inner : 4;
    e->inner = oc_xrealloc(e->inner, (size_t)(2 * cap) * sizeof *e->inner);
    for (int64_t k = 2 * e->cap_inner; k < 2 * cap; k++)
        cudaCheck(cudaEventCreateWithFlags(&e->inner[k], cudaEventDefault));
    e->cap_inner = cap;
}

void oc_cuda_be_mark(struct oc_backend *b, enum oc_mark m, int64_t op,
                     enum oc_stream s)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    OC_ASSERT(x->in_step && op >= 0 && op < x->nops);
    struct oc_cuda_op_ev *e = &x->ev[op];
    cudaStream_t cs = stream_of(x, s);
    switch (m) {
    case OC_MARK_START:
        if (e->has_start)
            return; /* the op started at its first mark */
        if (s == OC_STREAM_PP) {
            /* the stream is the message's direction: recorded in the call */
            x->pp_op = op;
            return;
        }
        if (s != OC_STREAM_COMPUTE)
            oc_cuda_be_follow_compute(x, cs);
        cudaCheck(cudaEventRecord(e->start, cs));
        e->has_start = 1;
        return;
    case OC_MARK_END:
        if (e->end_issued)
            return; /* an async collective ends when its work does */
        if (s == OC_STREAM_PP) {
            /* on the op's own stream, after its message: the end of a
             * message, never before its start */
            if (x->pp_op == op)
                x->pp_op = -1; /* marked, but no call was made */
            if (e->dir >= 0)
                cs = x->pp[e->dir];
        }
        cudaCheck(cudaEventRecord(e->end, cs));
        e->has_end = 1;
        return;
    case OC_MARK_INNER_START:
        OC_ASSERT(!e->inner_open);
        inner_grow(e);
        cudaCheck(cudaEventRecord(e->inner[2 * e->ninner], cs));
        e->inner_open = 1;
        return;
    case OC_MARK_INNER_END:
        OC_ASSERT(e->inner_open);
        cudaCheck(cudaEventRecord(e->inner[2 * e->ninner + 1], cs));
        e->inner_open = 0;
        e->ninner++;
        return;
    case OC_MARK_ISSUED:
        /* right after the collective was enqueued on s: its completion */
        cudaCheck(cudaEventRecord(e->end, cs));
        e->has_end = 1;
        e->end_issued = 1;
        return;
    case OC_MARK_COMPLETED:
        return; /* the host saw it: the event above already has the time */
    }
    OC_ASSERT(0);
}

static double elapsed_s(const struct oc_cuda_be *x, cudaEvent_t ev)
{
    float ms = 0;
    cudaCheck(cudaEventElapsedTime(&ms, x->step_start, ev));
    return (double)ms * 1e-3;
}

/* Waits (deadline: comm_nccl.h) unless already complete. */
static int wait_event(struct oc_cuda_be *x, cudaEvent_t ev, struct oc_status *st)
{
    if (oc_cuda_be_event_done(ev))
        return 0;
    return oc_nccl_wait_event(&x->nccl, ev, st);
}

int oc_cuda_be_step_end(struct oc_backend *b, double *start, double *end,
                        double *inner, double *end_s, int64_t *stuck_op,
                        struct oc_status *st)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    OC_ASSERT(x->in_step && !x->in_group);
    x->in_step = 0;
    *stuck_op = -1;
    *end_s = 0;
    /* The ops in list order: the first past the deadline is the one that
     * did not finish (waiting for all at once and looking afterwards would
     * race with the abort, which ends the stuck NCCL kernels). The deadline
     * is per op, so a step whose GPU work outlasts timeout_s in all is not
     * taken for a hang; one op that makes no progress for timeout_s is. */
    for (int64_t i = 0; i < x->nops; i++) {
        const struct oc_cuda_op_ev *e = &x->ev[i];
        if (!e->has_start && !e->has_end)
            continue;
        cudaEvent_t ev = e->has_end ? x->ev[i].end : e->start;
        if (oc_cuda_be_event_done(ev))
            continue;
        if (oc_nccl_wait_event(&x->nccl, ev, st) != 0) {
            *stuck_op = i;
            oc_nccl_abort(&x->nccl);
            return -1;
        }
    }
    /* work enqueued without marks */
    const cudaStream_t streams[2 + PP_DIRS] = {x->compute, x->pp[PP_UP],
                                               x->pp[PP_DOWN], x->dp};
    for (int k = 0; k < 2 + PP_DIRS; k++)
        cudaCheck(cudaEventRecord(x->tail[k], streams[k]));
    for (int k = 0; k < 2 + PP_DIRS; k++)
        if (wait_event(x, x->tail[k], st) != 0) {
            oc_nccl_abort(&x->nccl);
            return -1;
        }

    for (int64_t i = 0; i < x->nops; i++) {
        const struct oc_cuda_op_ev *e = &x->ev[i];
        start[i] = end[i] = inner[i] = 0;
        if (e->has_start)
            start[i] = elapsed_s(x, e->start);
        if (e->has_end)
            end[i] = elapsed_s(x, x->ev[i].end);
        else
            end[i] = start[i];
        if (!e->has_start)
            start[i] = end[i];
        double last = end[i];
        for (int64_t k = 0; k < e->ninner; k++) {
            double a = elapsed_s(x, e->inner[2 * k]);
            double z = elapsed_s(x, e->inner[2 * k + 1]);
            inner[i] += z - a;
            if (z > last)
                last = z;
        }
        if ((e->has_start || e->has_end) && last > *end_s)
            *end_s = last;
    }
    return 0;
}
