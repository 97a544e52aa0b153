/* netbw_mpi.c: `ocsim-exec --netbw` on the cpu backend: the transport of
 * netbw.h over MPI (whatever Open MPI picks between the nodes: TCP,
 * InfiniBand through UCX, shared memory between ranks of one machine; the
 * tests force TCP over the loopback with --mca btl tcp,self).
 *
 * Communicators: a duplicate of the control plane's with MPI_ERRORS_RETURN
 * (point-to-point; a failed call becomes st->msg) and the cross-node
 * groups split from it (colour: the local rank, key: the node). Waits spin
 * on MPI_Test (a sleep would add to the times measured) and give up after
 * the job's --timeout, cancelling what is pending, so that a dead peer ends
 * the step with a message instead of a hang.
 *
 * What it is not: the measurement (../netbw.c) or the executor's
 * communicators (comm_mpi.c).
 */
#include "backend_cpu_priv.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "netbw.h"

struct mpi_tx {
    MPI_Comm world, cross;
    double timeout_s;
    char *buf;          /* the timed messages: `window` slots */
    int64_t buf_bytes;
    float *ar;          /* the timed all-reduce, zeros (sums stay 0) */
    int64_t ar_bytes;
};

#define TAG_DATA 11
#define TAG_ACK 12

static int mpi_fail(int rc, const char *what, struct oc_status *st)
{
    char err[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(rc, err, &n) != MPI_SUCCESS)
        snprintf(err, sizeof err, "MPI error %d", rc);
    return oc_fail(st, "--netbw: %s failed: %s", what, err);
}

/* Spins until every request completes, or cancels them past the deadline. */
static int wait_all(struct mpi_tx *x, int n, MPI_Request *rq, const char *what,
                    struct oc_status *st)
{
    const double t0 = MPI_Wtime();
    for (unsigned spin = 1;; spin++) {
        int done = 0;
        const int rc = MPI_Testall(n, rq, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, what, st);
        if (done)
            return 0;
        if ((spin & 1023) == 0 && MPI_Wtime() - t0 > x->timeout_s) {
            for (int i = 0; i < n; i++)
                if (rq[i] != MPI_REQUEST_NULL) {
                    MPI_Cancel(&rq[i]);
                    MPI_Request_free(&rq[i]);
                }
            return oc_fail(st, "--netbw: timed out after %g s in %s", x->timeout_s, what);
        }
    }
}

static char *room(struct mpi_tx *x, int64_t bytes)
{
    if (bytes > x->buf_bytes) {
        free(x->buf);
        x->buf = oc_xcalloc((size_t)bytes, 1);
        x->buf_bytes = bytes;
    }
    return x->buf;
}

static int xfer(struct mpi_tx *x, int send, void *buf, int64_t bytes, int peer, int tag,
                const char *what, struct oc_status *st)
{
    MPI_Request rq;
    const int rc = send ? MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, x->world, &rq)
                        : MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, tag, x->world, &rq);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, what, st);
    return wait_all(x, 1, &rq, what, st);
}

static int tx_pingpong(void *ctx, int peer, int first, int64_t bytes, int iters, double *s,
                       struct oc_status *st)
{
    struct mpi_tx *x = ctx;
    char *b = room(x, bytes);
    const int warm = 2;
    double t0 = 0;
    for (int it = 0; it < warm + iters; it++) {
        if (it == warm)
            t0 = MPI_Wtime();
        if (xfer(x, first, b, bytes, peer, TAG_DATA, "the ping-pong", st) != 0 ||
            xfer(x, !first, b, bytes, peer, TAG_DATA, "the ping-pong", st) != 0)
            return -1;
    }
    *s = MPI_Wtime() - t0;
    return 0;
}

static int tx_stream(void *ctx, int peer, int send, int64_t bytes, int iters, int window,
                     double *s, struct oc_status *st)
{
    struct mpi_tx *x = ctx;
    /* The sender sends one buffer `window` times at once (MPI-3 allows
     * it); the receiver needs a slot per message in flight. */
    char *b = room(x, send ? bytes : bytes * window);
    MPI_Request *rq = oc_xmalloc((size_t)window * sizeof *rq);
    int ack = 0, rc = 0;
    double t0 = 0;
    /* One untimed window first (pages, connections), as osu_bw's skip. */
    for (int done = -window; done < iters && rc == 0;) {
        if (done == 0)
            t0 = MPI_Wtime();
        const int w = done < 0 ? window : iters - done < window ? iters - done : window;
        for (int i = 0; i < w && rc == 0; i++) {
            const int e = send ? MPI_Isend(b, (int)bytes, MPI_BYTE, peer, TAG_DATA,
                                           x->world, &rq[i])
                               : MPI_Irecv(b + (size_t)i * (size_t)bytes, (int)bytes,
                                           MPI_BYTE, peer, TAG_DATA, x->world, &rq[i]);
            if (e != MPI_SUCCESS)
                rc = mpi_fail(e, "the stream", st);
        }
        if (rc == 0)
            rc = wait_all(x, w, rq, "the stream", st);
        done += w;
    }
    free(rq);
    if (rc == 0)
        rc = xfer(x, !send, &ack, sizeof ack, peer, TAG_ACK, "the stream's acknowledgement",
                  st);
    *s = MPI_Wtime() - t0;
    return rc;
}

static int tx_allreduce(void *ctx, int64_t bytes, int iters, double *s, struct oc_status *st)
{
    struct mpi_tx *x = ctx;
    if (bytes > x->ar_bytes) {
        free(x->ar);
        x->ar = oc_xcalloc((size_t)bytes, 1);
        x->ar_bytes = bytes;
    }
    const int warm = 2, count = (int)(bytes / 4);
    double t0 = 0;
    for (int it = 0; it < warm + iters; it++) {
        if (it == warm)
            t0 = MPI_Wtime();
        MPI_Request rq;
        const int rc = MPI_Iallreduce(MPI_IN_PLACE, x->ar, count, MPI_FLOAT, MPI_SUM,
                                      x->cross, &rq);
        if (rc != MPI_SUCCESS)
            return mpi_fail(rc, "MPI_Iallreduce", st);
        if (wait_all(x, 1, &rq, "the all-reduce", st) != 0)
            return -1;
    }
    *s = MPI_Wtime() - t0;
    return 0;
}

static int tx_send_host(void *ctx, int peer, const void *buf, int64_t bytes,
                        struct oc_status *st)
{
    return xfer(ctx, 1, (void *)buf, bytes, peer, TAG_DATA, "the check's message", st);
}

static int tx_recv_host(void *ctx, int peer, void *buf, int64_t bytes, struct oc_status *st)
{
    return xfer(ctx, 0, buf, bytes, peer, TAG_DATA, "the check's message", st);
}

static int tx_allreduce_host(void *ctx, const float *in, float *out, int64_t count,
                             struct oc_status *st)
{
    struct mpi_tx *x = ctx;
    MPI_Request rq;
    const int rc = MPI_Iallreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, x->cross, &rq);
    if (rc != MPI_SUCCESS)
        return mpi_fail(rc, "MPI_Iallreduce", st);
    return wait_all(x, 1, &rq, "the check's all-reduce", st);
}

static int tx_open(struct mpi_tx *x, struct oc_ctl *ctl, const struct oc_net_map *map,
                   struct oc_status *st)
{
    memset(x, 0, sizeof *x);
    x->world = x->cross = MPI_COMM_NULL;
    x->timeout_s = ctl->timeout_s;
    int rc = MPI_Comm_dup(oc_ctl_mpi_comm(ctl), &x->world);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_set_errhandler(x->world, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_split(x->world, map->local, map->node, &x->cross);
    if (rc == MPI_SUCCESS)
        rc = MPI_Comm_set_errhandler(x->cross, MPI_ERRORS_RETURN);
    return rc == MPI_SUCCESS ? 0 : mpi_fail(rc, "setting up the communicators", st);
}

static void tx_close(struct mpi_tx *x)
{
    if (x->cross != MPI_COMM_NULL)
        MPI_Comm_free(&x->cross);
    if (x->world != MPI_COMM_NULL)
        MPI_Comm_free(&x->world);
    free(x->buf);
    free(x->ar);
}

static const struct oc_net_tx_ops mpi_ops = {
    .name = "MPI",
    .detail = "MPI_Isend / MPI_Irecv, MPI_Iallreduce",
    .pingpong = tx_pingpong,
    .stream = tx_stream,
    .allreduce = tx_allreduce,
    .send_host = tx_send_host,
    .recv_host = tx_recv_host,
    .allreduce_host = tx_allreduce_host,
};

int oc_cpu_netbw_mpi(struct oc_ctl *ctl, const struct oc_netbw_opts *o,
                     const struct oc_net_map *map, struct oc_netbw_result *r,
                     struct oc_status *st)
{
    if (!oc_ctl_is_mpi(ctl))
        return oc_fail(st, "--netbw of the cpu backend needs MPI (one process per rank): "
                           "run it under mpirun without --no-mpi");
    struct mpi_tx x;
    /* Every rank fails here together or not at all (collective calls). */
    if (tx_open(&x, ctl, map, st) != 0) {
        tx_close(&x);
        return -1;
    }
    const struct oc_net_tx tx = {&mpi_ops, &x};
    const int rc = oc_netbw_run(ctl, o, map, &tx, r, st);
    tx_close(&x);
    return rc;
}
