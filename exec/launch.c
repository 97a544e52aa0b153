/* launch.c: MPI or threads (see launch.h). The #ifdef OC_HAVE_MPI blocks
 * here are the program's one MPI seam: a build without MPI has no mpi.h,
 * so the calls cannot be compiled there, and the choice cannot be a table
 * entry as the backends' is (exec/backends.c). */
#define _POSIX_C_SOURCE 200809L
#include "launch.h"

#include <stdlib.h>

#ifdef OC_HAVE_MPI
#include <mpi.h>

/* Started by mpirun (Open MPI), a PMI launcher (MPICH's hydra, srun) or
 * srun with PMIx. */
static int under_launcher(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                       "SLURM_STEP_ID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i]))
            return 1;
    return 0;
}
#endif

void oc_launch_start(struct oc_launch *L, int *argc, char ***argv, int no_mpi,
                     int mpi_always)
{
    L->mpi = 0;
    L->rank = 0;
    L->world = -1;
#ifdef OC_HAVE_MPI
    L->mpi = !no_mpi && (mpi_always || under_launcher());
    if (L->mpi) {
        MPI_Init(argc, argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &L->rank);
        MPI_Comm_size(MPI_COMM_WORLD, &L->world);
    }
#else
    (void)argc, (void)argv, (void)no_mpi, (void)mpi_always;
#endif
}

int oc_launch_ctl(const struct oc_launch *L, struct oc_ctl *c, double timeout_s,
                  struct oc_status *st)
{
    OC_ASSERT(L->mpi);
#ifdef OC_HAVE_MPI
    return oc_ctl_init_mpi(c, MPI_COMM_WORLD, timeout_s, st);
#else
    (void)c, (void)timeout_s, (void)st;
    return -1;
#endif
}

void oc_launch_abort(const struct oc_launch *L, int code)
{
    OC_ASSERT(L->mpi);
#ifdef OC_HAVE_MPI
    MPI_Abort(MPI_COMM_WORLD, code);
#endif
    exit(code); /* not reached */
}

int oc_launch_finish(const struct oc_launch *L, int code)
{
#ifdef OC_HAVE_MPI
    if (L->mpi)
        MPI_Finalize();
#else
    (void)L;
#endif
    return code;
}
