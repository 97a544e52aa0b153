/* hooks_cuda.c: see hooks_cuda.h. */
#include "hooks_cuda.h"

#include <stdio.h>
#include <string.h>

#include "calibrate_cuda.h"
#include "comm_nccl.h"

/* --precision (checked by ocsim-exec: bf16 or fp32) as the GEMM dtype. */
static enum oc_cuda_dtype dtype_of(const char *precision)
{
    return strcmp(precision, "fp32") == 0 ? OC_CUDA_F32 : OC_CUDA_BF16;
}

int oc_backend_cuda_open(struct oc_backend *b, struct oc_ctl *ctl,
                         const struct oc_backend_job *job, struct oc_status *st)
{
    struct oc_backend_cuda_opts co = OC_BACKEND_CUDA_OPTS_DEFAULT;
    co.dtype = dtype_of(job->precision);
    return oc_backend_cuda_init(b, ctl, job->model, job->layout, &co, st);
}

int oc_backend_cuda_calibrate_run(struct oc_ctl *ctl, const struct oc_backend_job *job,
                                  const char *out_path, struct oc_status *st)
{
    struct oc_nccl nc;
    if (oc_nccl_init(&nc, ctl, job->layout, st) != 0)
        return -1;
    struct oc_cuda_calib_opts co = OC_CUDA_CALIB_OPTS_DEFAULT;
    co.model = job->model;
    co.base = job->topo;
    co.seq = job->layout->seq_length;
    co.micro_batch = job->layout->micro_batch;
    co.tp = job->layout->tp;
    co.dtype = dtype_of(job->precision);
    co.out_path = out_path;
    co.ctl = ctl;
    co.nccl = &nc;
    co.log = ctl->rank == 0 ? stdout : NULL;
    int rc = oc_cuda_calibrate(&co, st);
    oc_nccl_free(&nc);
    return rc;
}
