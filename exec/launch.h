/* launch.h: how the ranks of ocsim-exec come to be: MPI processes (one per
 * rank, under mpirun or srun, or in an MPI build for a backend whose ranks
 * are always processes: exec/backends.h, mpi_always) or the threads of one
 * process (ctl.h's oc_ctl_local_run). The one file of the program that
 * knows whether this build has MPI (OC_HAVE_MPI): main.c asks it.
 *
 *   struct oc_launch L;
 *   oc_launch_start(&L, &argc, &argv, no_mpi, entry->mpi_always);
 *   if (L.mpi) {
 *       struct oc_ctl ctl;
 *       if (oc_launch_ctl(&L, &ctl, timeout_s, &st) != 0) ...oc_launch_abort(&L, 1)...
 *       ... rank_main(&ctl, arg) ...
 *   } else {
 *       oc_ctl_local_run(ranks, timeout_s, rank_main, arg);
 *   }
 *   return oc_launch_finish(&L, code);
 *
 * What it is not: the control plane itself (ctl.h) or the backends' data
 * plane (MPI communicators: cpu/comm_mpi.h; NCCL: cuda/comm_nccl.h).
 */
#ifndef OC_EXEC_LAUNCH_H
#define OC_EXEC_LAUNCH_H

#include "ctl.h"
#include "status.h"

struct oc_launch {
    int mpi;   /* MPI was started: this process is one rank */
    int rank;  /* MPI's rank; 0 without MPI */
    int world; /* MPI's size; -1 without MPI (the program decides) */
};

/* Starts MPI (MPI_Init) where the build has it, unless no_mpi, when
 * mpi_always or when a launcher started this process (Open MPI's, PMI's
 * or Slurm's environment); else fills L for one process without MPI. */
void oc_launch_start(struct oc_launch *L, int *argc, char ***argv, int no_mpi,
                     int mpi_always);
/* L->mpi only: the control plane over MPI_COMM_WORLD (ctl_mpi.c). */
int oc_launch_ctl(const struct oc_launch *L, struct oc_ctl *c, double timeout_s,
                  struct oc_status *st);
/* L->mpi only: ends every process of the job (MPI_Abort) with code. */
void oc_launch_abort(const struct oc_launch *L, int code) __attribute__((noreturn));
/* Ends MPI where it was started (MPI_Finalize); returns code. */
int oc_launch_finish(const struct oc_launch *L, int code);

#endif
