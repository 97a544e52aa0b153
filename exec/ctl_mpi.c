/* ctl_mpi.c: the control plane over MPI, one process per rank (see ctl.h).
 * Compiled only where MPI exists (OC_HAVE_MPI). What this file is: each
 * call as a non-blocking MPI call on a duplicate of the given communicator
 * (its own tag space) followed by mpi_wait.h's deadline wait. What it is
 * not: the cpu backend's data plane (cpu/comm_mpi.c's communicators).
 *
 * The wait is oc_mpi_wait (MPI_Test polling, sched_yield then doubling
 * sleeps) with the ctl's timeout and what, the wait of cpu/comm_mpi.c
 * too; so both say "timed out after S s in <what>" alike. After a timeout
 * the request is left pending: the job is expected to end (oc_ctl_abort).
 *
 * Sizes are bytes (MPI_BYTE), and MPI counts are ints: bcast, send and recv
 * go in pieces of at most OC_CTL_MPI_CHUNK_BYTES (both sides cut the same
 * size the same way; MPI keeps messages of one tag in order), so that a
 * weight shard over 2 GiB passes. A gather's per-rank bytes must fit an
 * int (it carries timings and flags).
 *
 * Unlike ctl_local.c, a message shorter than the receive goes unnoticed
 * (MPI accepts it; a longer one is MPI_ERR_TRUNCATE, and mpiCheck aborts).
 */
#define _POSIX_C_SOURCE 200809L
#include "ctl.h"

#include <stdio.h>
#include <string.h>

#include "mpi_wait.h"

#ifndef OC_CTL_MPI_CHUNK_BYTES
#define OC_CTL_MPI_CHUNK_BYTES ((int64_t)1 << 30)
#endif

struct mpi_state {
    MPI_Comm comm; /* the duplicate */
    MPI_Comm node; /* the ranks of this node (the board's) */
    MPI_Win board; /* lost.h's board, shared by the node's ranks */
};

static MPI_Comm comm_of(const struct oc_ctl *c)
{
    return ((const struct mpi_state *)c->impl)->comm;
}

/* oc_mpi_wait with the ctl's deadline and what. */
static int wait_req(struct oc_ctl *c, MPI_Request *rq, struct oc_status *st)
{
    return oc_mpi_wait(rq, c->timeout_s, c->what, &c->timed_out, st);
}

/* The count of the piece of a buffer of `bytes` that starts at `off`. */
static int piece(int64_t bytes, int64_t off)
{
    int64_t n = bytes - off;
    return oc_mpi_count(n < OC_CTL_MPI_CHUNK_BYTES ? n : OC_CTL_MPI_CHUNK_BYTES);
}

static int mpi_barrier(struct oc_ctl *c, struct oc_status *st)
{
    MPI_Request rq;
    mpiCheck(MPI_Ibarrier(comm_of(c), &rq));
    return wait_req(c, &rq, st);
}

static int mpi_bcast(struct oc_ctl *c, void *buf, int64_t bytes, int root,
                     struct oc_status *st)
{
    int64_t off = 0;
    do {
        int n = piece(bytes, off);
        MPI_Request rq;
        mpiCheck(MPI_Ibcast((char *)buf + off, n, MPI_BYTE, root, comm_of(c), &rq));
        if (wait_req(c, &rq, st) != 0)
            return -1;
        off += n;
    } while (off < bytes);
    return 0;
}

static int mpi_gather(struct oc_ctl *c, const void *send, void *recv,
                      int64_t bytes, int root, struct oc_status *st)
{
    int n = oc_mpi_count(bytes);
    MPI_Request rq;
    mpiCheck(MPI_Igather(send, n, MPI_BYTE, recv, n, MPI_BYTE, root, comm_of(c),
                         &rq));
    return wait_req(c, &rq, st);
}

static int mpi_send(struct oc_ctl *c, const void *buf, int64_t bytes, int dest,
                    int tag, struct oc_status *st)
{
    int64_t off = 0;
    do {
        int n = piece(bytes, off);
        MPI_Request rq;
        mpiCheck(MPI_Isend((const char *)buf + off, n, MPI_BYTE, dest, tag,
                           comm_of(c), &rq));
        if (wait_req(c, &rq, st) != 0)
            return -1;
        off += n;
    } while (off < bytes);
    return 0;
}

static int mpi_recv(struct oc_ctl *c, void *buf, int64_t bytes, int src,
                    int tag, struct oc_status *st)
{
    int64_t off = 0;
    do {
        int n = piece(bytes, off);
        MPI_Request rq;
        mpiCheck(MPI_Irecv((char *)buf + off, n, MPI_BYTE, src, tag, comm_of(c),
                           &rq));
        if (wait_req(c, &rq, st) != 0)
            return -1;
        off += n;
    } while (off < bytes);
    return 0;
}

static void mpi_abort(struct oc_ctl *c, int code)
{
    (void)c;
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
}

static void mpi_free(struct oc_ctl *c)
{
    struct mpi_state *s = c->impl;
    /* collective over the node: every rank frees its ctl at the end */
    oc_lost_board_detach();
    MPI_Win_free(&s->board);
    MPI_Comm_free(&s->node);
    if (s->comm != MPI_COMM_NULL)
        MPI_Comm_free(&s->comm);
    free(s);
}

/* lost.h's board: one allocation by the node's local rank 0 (the others
 * map it), zeroed by it before a barrier, then each rank takes its slot. */
static void board_init(struct oc_ctl *c, struct mpi_state *s)
{
    const int n = c->local_ranks, lead = c->local_rank == 0;
    void *mem = NULL;
    mpiCheck(MPI_Win_allocate_shared(lead ? (MPI_Aint)oc_lost_board_bytes(n) : 0, 1,
                                     MPI_INFO_NULL, s->node, &mem, &s->board));
    MPI_Aint size = 0;
    int unit = 0;
    mpiCheck(MPI_Win_shared_query(s->board, 0, &size, &unit, &mem));
    if (lead)
        oc_lost_board_attach(mem, n, 1);
    mpiCheck(MPI_Barrier(s->node));
    if (!lead)
        oc_lost_board_attach(mem, n, 0);
    c->slot = oc_lost_slot_take(c->local_rank, c->rank);
}

static const struct oc_ctl_ops mpi_ops = {
    .name = "mpi",
    .barrier = mpi_barrier,
    .bcast = mpi_bcast,
    .gather = mpi_gather,
    .send = mpi_send,
    .recv = mpi_recv,
    .abort = mpi_abort,
    .free = mpi_free,
};

int oc_ctl_init_mpi(struct oc_ctl *c, MPI_Comm comm, double timeout_s,
                    struct oc_status *st)
{
    (void)st; /* MPI failures here are environment failures: mpiCheck */
    OC_ASSERT(timeout_s > 0);
    memset(c, 0, sizeof *c);
    struct mpi_state *s = oc_xcalloc(1, sizeof *s);
    s->comm = MPI_COMM_NULL;
    mpiCheck(MPI_Comm_dup(comm, &s->comm));
    /* Errors come back to mpiCheck, which names the call and the line. */
    mpiCheck(MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN));
    mpiCheck(MPI_Comm_rank(s->comm, &c->rank));
    mpiCheck(MPI_Comm_size(s->comm, &c->size));
    mpiCheck(MPI_Comm_split_type(s->comm, MPI_COMM_TYPE_SHARED, c->rank,
                                 MPI_INFO_NULL, &s->node));
    mpiCheck(MPI_Comm_rank(s->node, &c->local_rank));
    mpiCheck(MPI_Comm_size(s->node, &c->local_ranks));
    c->ops = &mpi_ops;
    c->impl = s;
    c->timeout_s = timeout_s;
    snprintf(c->what, sizeof c->what, "set-up");
    board_init(c, s);
    return 0;
}

MPI_Comm oc_ctl_mpi_comm(const struct oc_ctl *c)
{
    OC_ASSERT(c->ops == &mpi_ops);
    return comm_of(c);
}
