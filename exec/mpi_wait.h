/* mpi_wait.h: the executor's MPI basics that the control plane (ctl_mpi.c)
 * and the cpu backend (cpu/comm_mpi.c) share: a wait on a request with a
 * deadline, the check of an MPI call's result and the int count of MPI.
 * Built only where MPI exists (OC_HAVE_MPI).
 *
 *   MPI_Request rq;
 *   mpiCheck(MPI_Ibarrier(comm, &rq));
 *   int timed_out = 0;
 *   if (oc_mpi_wait(&rq, 60.0, "the start", &timed_out, &st) != 0)
 *       ...st.msg: "timed out after 60 s in the start"...
 *
 * What it is not: communicators (cpu/comm_mpi.h splits the layout's) or a
 * message naming the rank (the caller's).
 */
#ifndef OC_EXEC_MPI_WAIT_H
#define OC_EXEC_MPI_WAIT_H

#include <mpi.h>
#include <stdint.h>

#include "status.h"

/* Polls *req with MPI_Test until it completes (0) or timeout_s passes
 * (-1, *timed_out = 1, st->msg "timed out after S s in <what>"). Paced by
 * wait_clock.h (sched_yield for the first millisecond, then doubling
 * sleeps up to 1 ms), so that oversubscribed ranks leave the cores to the
 * ranks that compute. After a timeout the request is left pending: the
 * job is expected to end. */
int oc_mpi_wait(MPI_Request *req, double timeout_s, const char *what, int *timed_out,
                struct oc_status *st);
/* One MPI_Test: 1 when done. */
int oc_mpi_test(MPI_Request *req);

/* An MPI count: asserts that n fits an int. */
int oc_mpi_count(int64_t n);

/* Aborts the job (MPI_Abort) naming the failing call, file and line when
 * rc is not MPI_SUCCESS. */
void oc_mpi_check_(int rc, const char *call, const char *file, int line);
#define mpiCheck(call) oc_mpi_check_((call), #call, __FILE__, __LINE__)

#endif
