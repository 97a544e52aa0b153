/* backend_cpu.h: the cpu backend of the executor (backend.h): host memory,
 * the cpu kernels (kernels/cpu/ops_cpu.h: fp32 loops and OpenBLAS), MPI for
 * the pipeline messages and the TP / DP / EMBED collectives (comm_mpi.h),
 * a monotonic clock around every op. Without MPI it runs one rank.
 *
 *   struct oc_comm comm;                       // MPI builds: the layout's
 *   oc_comm_init(&comm, &layout, 60.0, &st);   // communicators
 *   struct oc_backend b;
 *   if (oc_backend_cpu_init(&b, &ctl, &comm, &st) != 0) ...
 *   ... oc_runner_init(&r, &model, &sched, &b, &ro, &st) ...
 *   b.ops->free_backend(&b);
 */
#ifndef OC_EXEC_BACKEND_CPU_H
#define OC_EXEC_BACKEND_CPU_H

#include "backend.h"
#include "ctl.h"
#include "status.h"

#ifdef OC_HAVE_MPI
#include "comm_mpi.h"
/* cpu: the cpu kernels and MPI (comm: the layout's communicators,
 * oc_comm_init, kept by the caller until after free_backend).
 * ctl: the control plane (barriers of the runner). */
int oc_backend_cpu_init(struct oc_backend *b, struct oc_ctl *ctl,
                        struct oc_comm *comm, struct oc_status *st);
#endif
/* cpu without MPI: one rank only (TP = PP = DP = 1: no communication). */
int oc_backend_cpu_solo_init(struct oc_backend *b, struct oc_ctl *ctl,
                             struct oc_status *st);

#endif
