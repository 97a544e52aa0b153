/* comm_mpi.h: the executor's communication over MPI (the cpu backend): the
 * TP, DP and EMBED communicators of a layout, and a wait loop that turns
 * every blocking MPI call into a non-blocking one plus MPI_Test polling
 * with a deadline, so that a rank that stops answering ends the job with a
 * message instead of a silent hang.
 *
 *   struct oc_comm c;
 *   if (oc_comm_init(&c, &layout, 60.0, &st) != 0) ...
 *   oc_comm_set_what(&c, "op %lld (recv act mb %d from rank %lld)", i, mb, peer);
 *   MPI_Request rq;
 *   mpiCheck(MPI_Irecv(buf, n, MPI_FLOAT, peer, tag, c.world, &rq));
 *   if (oc_comm_wait(&c, &rq, &st) != 0)   // st.msg: "timed out after 60 s
 *       ...                                //  in op 17 (recv act mb 3 ...)"
 *   oc_comm_free(&c);
 *
 * Groups follow the schedule core: a rank's TP, DP and EMBED peers are
 * oc_schedule_group's lists (schedule.h), in its ring order; each becomes
 * one MPI_Comm_split of MPI_COMM_WORLD (colour: the smallest member, key:
 * the position in the list). A rank outside the EMBED group (a middle
 * pipeline stage) gets MPI_COMM_NULL there.
 *
 * The splits at init are blocking collectives (MPI has no non-blocking
 * split); everything after init that waits goes through oc_comm_wait.
 *
 * Failures of MPI itself (an error code from a call) are environment
 * failures: mpiCheck (exec/mpi_wait.h) prints the call, file and line and
 * aborts the job.
 */
#ifndef OC_EXEC_COMM_MPI_H
#define OC_EXEC_COMM_MPI_H

#include <mpi.h>
#include <stdint.h>

#include "layout.h"
#include "mpi_wait.h"
#include "schedule.h"
#include "status.h"

struct oc_comm {
    MPI_Comm world;  /* MPI_COMM_WORLD: pipeline messages (tags of the schedule) */
    MPI_Comm ctl;    /* a duplicate of world for the runner's barriers,
                        gathers and weight collection (own tag space) */
    MPI_Comm tp, dp, embed; /* MPI_COMM_NULL where not a member */
    int rank, size;
    int tp_size, dp_size, embed_size; /* 0 where not a member */
    double timeout_s;     /* deadline of one wait */
    char what[256];       /* what the rank waits for, for the timeout message */
    int timed_out;        /* set when a wait ran past its deadline */
    int64_t waits;        /* waits done (statistics) */
};

/* Splits the communicators of layout l (whose world must equal the MPI
 * world). timeout_s > 0. */
int oc_comm_init(struct oc_comm *c, const struct oc_layout *l, double timeout_s,
                 struct oc_status *st);
void oc_comm_free(struct oc_comm *c);

/* The communicator of a schedule group (MPI_COMM_NULL if not a member). */
MPI_Comm oc_comm_of(const struct oc_comm *c, enum oc_group g);

/* Names what the next waits are for ("op 17 (recv act mb 3 from rank 5)"). */
void oc_comm_set_what(struct oc_comm *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* oc_mpi_wait (exec/mpi_wait.h) with c's deadline and what: 0 when *req
 * completed, -1 past c->timeout_s (c->timed_out = 1, st->msg "timed out
 * after S s in <what>"). */
int oc_comm_wait(struct oc_comm *c, MPI_Request *req, struct oc_status *st);
/* One MPI_Test: 1 when done. */
int oc_comm_test(MPI_Request *req);

/* Blocking helpers through oc_comm_wait. */
int oc_comm_allreduce(struct oc_comm *c, MPI_Comm comm, void *buf, int64_t n,
                      MPI_Datatype type, MPI_Op op, struct oc_status *st);
int oc_comm_barrier(struct oc_comm *c, MPI_Comm comm, struct oc_status *st);
int oc_comm_bcast(struct oc_comm *c, MPI_Comm comm, void *buf, int64_t n,
                  MPI_Datatype type, int root, struct oc_status *st);
int oc_comm_send(struct oc_comm *c, MPI_Comm comm, const void *buf, int64_t n,
                 MPI_Datatype type, int dest, int tag, struct oc_status *st);
int oc_comm_recv(struct oc_comm *c, MPI_Comm comm, void *buf, int64_t n,
                 MPI_Datatype type, int src, int tag, struct oc_status *st);
/* Gathers n values of every rank of comm to root (recv: size*n values,
 * root only). */
int oc_comm_gather(struct oc_comm *c, MPI_Comm comm, const void *send,
                   void *recv, int64_t n, MPI_Datatype type, int root,
                   struct oc_status *st);

#endif
