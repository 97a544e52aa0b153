/* calibrate_cuda_nccl.c: NCCL on this node's GPUs, for the cuda
 * calibration (calibrate_cuda.c runs it; calibrate_cuda_priv.h lists the
 * files): the one-way time of an ncclSend / ncclRecv ping-pong between
 * GPUs 0 and 1 over message sizes and the activation, fitted to latency +
 * size / bandwidth, and ncclAllReduce over every GPU, the slowest rank's
 * time, as nccl-tests' bus bandwidth.
 *
 * What it is not: nccl-tests, the communicators (comm_nccl.c), or the
 * fits and tables (calib_plan.h).
 */
#include "calibrate_cuda_priv.h"

#include <stdio.h>
#include <stdlib.h>

#include "check.h"

/* ------------------------------------------------------------------ */
/* NCCL                                                                 */

/* Iterations for a message of `bytes`: calib_plan.h's rule, and at least
 * `repeats`. */
static int iters_for(int64_t bytes, int repeats)
{
    const int it = oc_calib_msg_iters(bytes);
    return it < repeats ? repeats : it;
}

#define NCCL_CHECK(call, what)                                                 \
    do {                                                                       \
        if (oc_nccl_check(c->nccl, (call), (what), st) != 0)                   \
            return -1;                                                         \
    } while (0)

/* One-way time of an NCCL ping-pong of `bytes` between ranks 0 and 1 (the
 * others wait), half the mean round trip, on every rank (rank 0's). */
static int pingpong(struct cal *c, char *buf, int64_t bytes, double *t, struct oc_status *st)
{
    const int iters = iters_for(bytes, c->o->repeats), warm = 2;
    ncclComm_t w = c->nccl->world;
    *t = 0;
    oc_ctl_set_what(c->ctl, "calibration: NCCL ping-pong of %lld bytes", (long long)bytes);
    if (oc_ctl_barrier(c->ctl, st) != 0)
        return -1;
    if (c->rank <= 1) {
        const int peer = 1 - c->rank;
        for (int it = 0; it < warm + iters; it++) {
            if (it == warm)
                cudaCheck(cudaEventRecord(c->e0, c->stream));
            if (c->rank == 0) {
                NCCL_CHECK(ncclSend(buf, (size_t)bytes, ncclInt8, peer, w, c->stream), "ncclSend");
                NCCL_CHECK(ncclRecv(buf, (size_t)bytes, ncclInt8, peer, w, c->stream), "ncclRecv");
            } else {
                NCCL_CHECK(ncclRecv(buf, (size_t)bytes, ncclInt8, peer, w, c->stream), "ncclRecv");
                NCCL_CHECK(ncclSend(buf, (size_t)bytes, ncclInt8, peer, w, c->stream), "ncclSend");
            }
        }
        cudaCheck(cudaEventRecord(c->e1, c->stream));
        if (oc_nccl_wait_event(c->nccl, c->e1, st) != 0)
            return -1;
        *t = oc_ccal_elapsed_s(c->e0, c->e1) / (2.0 * iters);
    }
    return oc_ctl_bcast(c->ctl, t, sizeof *t, 0, st); /* rank 0's clock counts */
}

int oc_ccal_measure_p2p(struct cal *c, struct oc_calib_measured *m, struct oc_status *st)
{
    const struct oc_cuda_calib_opts *o = c->o;
    /* The message a pipeline stage sends: one micro-batch's activation,
     * T x h fp32 values (the cuda executor's too; no sequence parallelism). */
    const int64_t act = 4 * o->micro_batch * o->seq * o->model->hidden_size;
    const int64_t most = act > o->max_msg_bytes ? act : o->max_msg_bytes;
    const int nsizes = oc_calib_msg_sizes(o->max_msg_bytes);
    char *buf = NULL;
    struct oc_status ls = {{0}};
    int rc = c->rank <= 1
                 ? oc_ccal_dev_alloc((void **)&buf, (double)most, "the ping-pong", &ls)
                 : 0;
    if (rc == 0 && buf)
        cudaCheck(cudaMemset(buf, 0, (size_t)most));
    if (oc_ccal_together(c, rc, &ls) != 0) {
        cudaCheck(cudaFree(buf));
        return oc_fail(st, "%s", ls.msg);
    }
    double *t = oc_xcalloc((size_t)nsizes, sizeof *t);
    double t_act = 0;
    int i = 0;
    /* The activation first: a ping-pong of that size runs slower after the
     * largest ones (cpu/calibrate_cpu.c). */
    rc = pingpong(c, buf, act, &t_act, st);
    for (int64_t s = 8; s <= o->max_msg_bytes && rc == 0; s *= 2, i++)
        rc = pingpong(c, buf, s, &t[i], st);
    cudaCheck(cudaFree(buf));
    if (rc != 0) {
        free(t);
        return -1;
    }
    /* The model t(S) = latency + S / B (core/closed_form.h's per-message
     * cost), fitted as cpu/calibrate_cpu.c does (calib_plan.h). */
    const double smax = oc_calib_msg_largest(nsizes);
    oc_calib_p2p_fit(t, nsizes, act, t_act, m);
    if (c->rank == 0 && o->log) {
        oc_calib_net_table_head(o->log, "NCCL point-to-point: ncclSend / ncclRecv "
                                        "ping-pong between GPUs 0 and 1, one-way time; "
                                        "busbw = algbw (nccl-tests, sendrecv)");
        oc_calib_p2p_rows(o->log, o->max_msg_bytes, t, act, t_act);
        fprintf(o->log, "# p2p latency %.2f us, bandwidth %.3f GB/s at the activation "
                        "(%lld B), %.3f GB/s at %.0f B\n#\n",
                m->p2p_latency_s * 1e6, m->p2p_Bps / 1e9, (long long)act,
                m->p2p_large_Bps / 1e9, smax);
    }
    free(t);
    return 0;
}

static int allreduce_sizes(struct cal *c, float *buf, double *t, struct oc_status *st)
{
    const struct oc_cuda_calib_opts *o = c->o;
    int i = 0;
    for (int64_t s = 8; s <= o->max_msg_bytes; s *= 2, i++) {
        const int iters = iters_for(s, o->repeats), warm = 2;
        const size_t count = (size_t)(s / 4);
        oc_ctl_set_what(c->ctl, "calibration: ncclAllReduce of %lld bytes", (long long)s);
        if (oc_ctl_barrier(c->ctl, st) != 0)
            return -1;
        for (int it = 0; it < warm + iters; it++) {
            if (it == warm)
                cudaCheck(cudaEventRecord(c->e0, c->stream));
            NCCL_CHECK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, c->nccl->world,
                                     c->stream),
                       "ncclAllReduce");
        }
        cudaCheck(cudaEventRecord(c->e1, c->stream));
        if (oc_nccl_wait_event(c->nccl, c->e1, st) != 0)
            return -1;
        t[i] = oc_ccal_elapsed_s(c->e0, c->e1) / iters;
    }
    return 0;
}

int oc_ccal_measure_allreduce(struct cal *c, struct oc_calib_measured *m, struct oc_status *st)
{
    const struct oc_cuda_calib_opts *o = c->o;
    const int nsizes = oc_calib_msg_sizes(o->max_msg_bytes);
    float *buf = NULL;
    struct oc_status ls = {{0}};
    int rc = oc_ccal_dev_alloc((void **)&buf, (double)o->max_msg_bytes, "the all-reduce", &ls);
    if (rc == 0) /* zeros: sums stay zero, no overflow over a thousand calls */
        cudaCheck(cudaMemset(buf, 0, (size_t)o->max_msg_bytes));
    if (oc_ccal_together(c, rc, &ls) != 0) {
        cudaCheck(cudaFree(buf));
        return oc_fail(st, "%s", ls.msg);
    }
    double *t = oc_xcalloc((size_t)nsizes, sizeof *t);
    double *t_max = oc_xcalloc((size_t)nsizes, sizeof *t_max);
    rc = allreduce_sizes(c, buf, t, st);
    cudaCheck(cudaFree(buf));
    /* The slowest rank's time is the collective's. */
    if (rc == 0)
        rc = oc_ccal_stats(c, t, nsizes, NULL, NULL, t_max, st);
    free(t);
    if (rc != 0) {
        free(t_max);
        return -1;
    }
    const double smax = oc_calib_msg_largest(nsizes);
    oc_calib_allreduce_fit(t_max, nsizes, c->size, m);
    if (c->rank == 0 && o->log) {
        char what[160];
        snprintf(what, sizeof what,
                 "ncclAllReduce, float sum, %d GPUs; busbw = algbw * 2(n-1)/n (nccl-tests)",
                 c->size);
        oc_calib_net_table_head(o->log, what);
        oc_calib_allreduce_rows(o->log, o->max_msg_bytes, t_max, c->size, NULL);
        fprintf(o->log, "# all-reduce latency %.2f us (8 B), busbw %.3f GB/s (%.0f B)\n#\n",
                m->allreduce_latency_s * 1e6, m->allreduce_busbw_Bps / 1e9, smax);
    }
    free(t_max);
    return 0;
}
