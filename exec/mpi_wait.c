/* mpi_wait.c: see mpi_wait.h. */
#define _POSIX_C_SOURCE 200809L
#include "mpi_wait.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "wait_clock.h"

void oc_mpi_check_(int rc, const char *call, const char *file, int line)
{
    if (rc == MPI_SUCCESS)
        return;
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0, rank = -1;
    MPI_Error_string(rc, msg, &len);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "ocsim-exec: rank %d: MPI error at %s:%d: %s: %s\n", rank,
            file, line, call, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
    abort(); /* not reached */
}

int oc_mpi_count(int64_t n)
{
    OC_ASSERT(n >= 0 && n <= INT_MAX);
    return (int)n;
}

int oc_mpi_test(MPI_Request *req)
{
    int flag = 0;
    mpiCheck(MPI_Test(req, &flag, MPI_STATUS_IGNORE));
    return flag;
}

int oc_mpi_wait(MPI_Request *req, double timeout_s, const char *what, int *timed_out,
                struct oc_status *st)
{
    const double t0 = oc_now_s();
    long sleep_ns = 0;
    for (;;) {
        if (oc_mpi_test(req))
            return 0;
        double waited = oc_now_s() - t0;
        if (waited > timeout_s) {
            *timed_out = 1;
            return oc_fail(st, "timed out after %g s in %s", timeout_s, what);
        }
        oc_wait_pace(waited, &sleep_ns);
    }
}
