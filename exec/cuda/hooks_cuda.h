/* hooks_cuda.h: the cuda backend's init, calibration and network
 * measurement as the registry calls them (exec/backends.h): the
 * registry's job (model, layout, topology, --precision) turned into the
 * options of backend_cuda.h and calibrate_cuda.h; netbw_nccl.c's
 * transport for netbw.h. Built where the cuda backend is.
 *
 *   struct oc_backend b;
 *   if (oc_backend_cuda_open(&b, &ctl, &job, &st) != 0) ...
 */
#ifndef OC_EXEC_HOOKS_CUDA_H
#define OC_EXEC_HOOKS_CUDA_H

#include "backend_cuda.h"
#include "backends.h"

/* oc_backend_cuda_init with the GEMM dtype of job->precision. */
int oc_backend_cuda_open(struct oc_backend *b, struct oc_ctl *ctl,
                         const struct oc_backend_job *job, struct oc_status *st);
/* oc_cuda_calibrate over NCCL communicators made for job->layout (and
 * freed after); rank 0 prints the tables to stdout and writes out_path. */
int oc_backend_cuda_calibrate_run(struct oc_ctl *ctl, const struct oc_backend_job *job,
                                  const char *out_path, struct oc_status *st);
/* netbw.h's measurement over NCCL (netbw_nccl.c: the world communicator
 * and the cross-node groups, one GPU per rank). */
int oc_backend_cuda_netbw(struct oc_ctl *ctl, const struct oc_netbw_opts *o,
                          const struct oc_net_map *map, struct oc_netbw_result *r,
                          struct oc_status *st);

#endif
