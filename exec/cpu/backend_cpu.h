/* backend_cpu.h: the cpu backend of the executor (backend.h): host memory,
 * the cpu kernels (kernels/cpu/ops_cpu.h: fp32 loops and OpenBLAS), MPI for
 * the pipeline messages and the TP / DP / EMBED collectives (comm_mpi.h),
 * a monotonic clock around every op. Without MPI it runs one rank (how the
 * build chooses: backend_cpu_priv.h). Its
 * entry in the registry (exec/backends.c) calls oc_backend_cpu_open,
 * oc_backend_cpu_calibrate and oc_backend_cpu_netbw.
 *
 *   struct oc_backend b;
 *   if (oc_backend_cpu_open(&b, &ctl, &job, &st) != 0) ...
 *   ... oc_runner_init(&r, &model, &sched, &b, &ro, &st) ...
 *   b.ops->free_backend(&b);
 */
#ifndef OC_EXEC_BACKEND_CPU_H
#define OC_EXEC_BACKEND_CPU_H

#include "backend.h"
#include "backends.h"
#include "ctl.h"
#include "netbw.h"
#include "status.h"

/* The registry's init: over an MPI control plane, the layout's MPI
 * communicators (oc_comm_init, freed with the backend); over the local one,
 * one rank without communication (a layout that needs any fails at its
 * first message with one line). */
int oc_backend_cpu_open(struct oc_backend *b, struct oc_ctl *ctl,
                        const struct oc_backend_job *job, struct oc_status *st);
/* The registry's calibration: oc_cpu_calibrate (calibrate_cpu.h) over the
 * ctl's MPI communicator; fails with one line without MPI. */
int oc_backend_cpu_calibrate(struct oc_ctl *ctl, const struct oc_backend_job *job,
                             const char *out_path, struct oc_status *st);

/* The registry's network measurement: netbw.h's over MPI (netbw_mpi.c);
 * fails with one line without MPI. */
int oc_backend_cpu_netbw(struct oc_ctl *ctl, const struct oc_netbw_opts *o,
                         const struct oc_net_map *map, struct oc_netbw_result *r,
                         struct oc_status *st);

#endif
