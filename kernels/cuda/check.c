/* check.c: the bodies of cudaCheck and cublasCheck (see check.h). C11,
 * compiled by the host compiler; links against the CUDA runtime and cuBLAS. */
#include "check.h"

#include <stdio.h>
#include <stdlib.h>

void oc_cuda_check_(cudaError_t err, const char *file, int line)
{
    if (err == cudaSuccess)
        return;
    fprintf(stderr, "ocsim: CUDA error at %s:%d: %s (%s, %d)\n", file, line,
            cudaGetErrorString(err), cudaGetErrorName(err), (int)err);
    exit(EXIT_FAILURE);
}

void oc_cublas_check_(cublasStatus_t st, const char *file, int line)
{
    if (st == CUBLAS_STATUS_SUCCESS)
        return;
    fprintf(stderr, "ocsim: cuBLAS error at %s:%d: %s (%d)\n", file, line,
            cublasGetStatusString(st), (int)st);
    exit(EXIT_FAILURE);
}
