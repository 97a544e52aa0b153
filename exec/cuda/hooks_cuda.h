/* hooks_cuda.h: the cuda backend's init and calibration as the registry
 * calls them (exec/backends.h): the registry's job (model, layout,
 * topology, --precision) turned into the options of backend_cuda.h and
 * calibrate_cuda.h. Built where the cuda backend is.
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

#endif
