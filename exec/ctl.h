/* ctl.h: the executor's control plane: which rank am I, how many are we, and
 * the few host-side exchanges around the training steps (a barrier before
 * each step, gathering op times, losses and memory peaks to rank 0, sending
 * the weights to rank 0, broadcasting the NCCL unique id). The data plane
 * (pipeline messages, TP / DP collectives) is the backend's: MPI for the cpu
 * backend (cpu/comm_mpi.h), NCCL for the cuda backend (cuda/comm_nccl.h).
 *
 * Two implementations behind one struct:
 *
 *   mpi    (ctl_mpi.c, built where MPI exists) one process per rank under
 *          mpirun or srun; over a duplicate of the given communicator.
 *            struct oc_ctl c;
 *            oc_ctl_init_mpi(&c, MPI_COMM_WORLD, 60.0, &st);
 *
 *   local  (ctl_local.c, always built) one process, n threads, one rank per
 *          thread: one node without MPI (the cuda backend, one GPU per
 *          thread; or n = 1, any backend). oc_ctl_local_run starts the
 *          threads, hands each its own struct oc_ctl and joins them.
 *            static int rank_main(struct oc_ctl *c, void *arg) { ... }
 *            int rc = oc_ctl_local_run(4, 60.0, rank_main, &args);
 *
 * Every exchange waits at most timeout_s (the deadline of one call): past
 * it the call returns -1, sets c->timed_out and fills st->msg with "timed
 * out after S s in <what>", where <what> is the last oc_ctl_set_what. A
 * rank that died therefore ends the others' waits with a message instead of
 * a hang. All calls are collective over every rank of the ctl unless they
 * say otherwise, and must be made in the same order on every rank.
 *
 * Library rules (core/status.h): nothing here prints or exits, except
 * oc_ctl_abort, which ends the whole job (MPI_Abort; local: _exit of the
 * process, which ends every thread).
 */
#ifndef OC_EXEC_CTL_H
#define OC_EXEC_CTL_H

#include <stdint.h>

#include "lost.h"
#include "status.h"

struct oc_ctl;

struct oc_ctl_ops {
    const char *name; /* "mpi" or "local" */
    int (*barrier)(struct oc_ctl *c, struct oc_status *st);
    int (*bcast)(struct oc_ctl *c, void *buf, int64_t bytes, int root,
                 struct oc_status *st);
    int (*gather)(struct oc_ctl *c, const void *send, void *recv, int64_t bytes,
                  int root, struct oc_status *st);
    int (*send)(struct oc_ctl *c, const void *buf, int64_t bytes, int dest,
                int tag, struct oc_status *st);
    int (*recv)(struct oc_ctl *c, void *buf, int64_t bytes, int src, int tag,
                struct oc_status *st);
    void (*abort)(struct oc_ctl *c, int code);
    void (*free)(struct oc_ctl *c);
};

struct oc_ctl {
    const struct oc_ctl_ops *ops;
    void *impl;             /* the implementation's state */
    int rank, size;
    int local_ranks;        /* ranks on this node (local: size) */
    int local_rank;         /* this rank's index among them (the GPU to use) */
    double timeout_s;       /* deadline of one call, > 0 */
    char what[256];         /* what the rank waits for (timeout messages) */
    int timed_out;          /* set when a call ran past its deadline */
    struct oc_lost_slot *slot; /* this rank's slot on the node's board
                                  (lost.h; what is posted there too) */
};

/* Names what the next waits are for ("op 17 (recv act mb 3 from rank 5)"),
 * posted on the board too (lost.h: what a lost rank was doing). */
void oc_ctl_set_what(struct oc_ctl *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Every rank waits for every other. */
int oc_ctl_barrier(struct oc_ctl *c, struct oc_status *st);
/* root's bytes of buf to every rank's buf. */
int oc_ctl_bcast(struct oc_ctl *c, void *buf, int64_t bytes, int root,
                 struct oc_status *st);
/* `bytes` of every rank's send to root's recv (size * bytes, rank order;
 * recv is only read on root and may be NULL elsewhere). */
int oc_ctl_gather(struct oc_ctl *c, const void *send, void *recv, int64_t bytes,
                  int root, struct oc_status *st);
/* Point-to-point between two ranks (not collective): the receiver names
 * the sender and the tag, the sizes must agree. Tags >= 0. */
int oc_ctl_send(struct oc_ctl *c, const void *buf, int64_t bytes, int dest,
                int tag, struct oc_status *st);
int oc_ctl_recv(struct oc_ctl *c, void *buf, int64_t bytes, int src, int tag,
                struct oc_status *st);
/* 1 when c is the control plane over MPI (ctl_mpi.c: one process per
 * rank), 0 for the local one (threads of one process). */
int oc_ctl_is_mpi(const struct oc_ctl *c);
/* Ends the whole job with exit status code (never returns). */
void oc_ctl_abort(struct oc_ctl *c, int code) __attribute__((noreturn));
void oc_ctl_free(struct oc_ctl *c);

/* local: runs fn(ctl, arg) on n threads (rank = thread index), each with
 * its own ctl (size n, local_ranks n, local_rank = rank), and returns the
 * largest return value of fn (0 when all returned 0). n >= 1; n = 1 runs
 * fn on the calling thread. fn's ctl is freed after fn returns. */
int oc_ctl_local_run(int n, double timeout_s,
                     int (*fn)(struct oc_ctl *c, void *arg), void *arg);

#ifdef OC_HAVE_MPI
#include <mpi.h>
/* mpi: over a duplicate of comm (collective over comm). local_ranks and
 * local_rank from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). */
int oc_ctl_init_mpi(struct oc_ctl *c, MPI_Comm comm, double timeout_s,
                    struct oc_status *st);
/* The communicator behind an mpi ctl (its duplicate). */
MPI_Comm oc_ctl_mpi_comm(const struct oc_ctl *c);
#endif

#endif
