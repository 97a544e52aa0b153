/* check.h: one check wrapper per API (llm.c style): cudaCheck, cublasCheck.
 *
 *   cudaCheck(cudaMalloc(&p, bytes));
 *   cublasCheck(cublasSetStream(handle, stream));
 *   my_kernel<<<grid, block, 0, stream>>>(...);
 *   cudaCheck(cudaGetLastError());            // every launcher does this
 *
 * A failed CUDA or cuBLAS call is an environment failure in a program (see
 * shared/STYLE.md, "Three kinds of failure"): the wrapper prints one line
 * naming the call's file and line and the library's own error string, and
 * exits with status 1. The kernels are used by the CUDA backend's program
 * and its tests only; nothing in ocsim's libraries (core, sim, reports)
 * calls them. ncclCheck belongs with the backend's NCCL code.
 *
 * C and CUDA C++ (extern "C"); the bodies are in check.c.
 */
#ifndef OC_KERNELS_CHECK_H
#define OC_KERNELS_CHECK_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

void oc_cuda_check_(cudaError_t err, const char *file, int line);
void oc_cublas_check_(cublasStatus_t st, const char *file, int line);

#ifdef __cplusplus
}
#endif

#define cudaCheck(err) oc_cuda_check_((err), __FILE__, __LINE__)
#define cublasCheck(st) oc_cublas_check_((st), __FILE__, __LINE__)

#endif
