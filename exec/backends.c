/* backends.c: the table of backends (see backends.h). The one place where
 * a backend is compiled in or not: the cuda entry's hooks exist where the
 * build found nvcc, cuBLAS and NCCL (OC_HAVE_CUDA, exec/cuda/CMakeLists.txt);
 * elsewhere the entry stays, not built, so that --backend cuda says why.
 */
#include "backends.h"

#include <stdio.h>
#include <string.h>

#include "backend_cpu.h"
#ifdef OC_HAVE_CUDA
#include "hooks_cuda.h"
#endif

static const struct oc_backend_entry table[] = {
    {
        .name = OC_BACKEND_CPU_NAME,
        .summary = "fp32 on OpenBLAS + MPI, one process per rank",
        .built = 1,
        .mpi_always = 1,
        .threads_are_ranks = 0,
        .device_words = "CPU processes",
        .precision_default = "fp32",
        .precision_choice = 0,
        .run_precision = OC_PREC_FP32,
        .mfu_against_peak = 0,
        .runs_gc = 1,
        .init = oc_backend_cpu_open,
        .calibrate = oc_backend_cpu_calibrate,
        .netbw = oc_backend_cpu_netbw,
    },
    {
        .name = OC_BACKEND_CUDA_NAME,
        .summary = "cuBLAS, own kernels and NCCL, one GPU per rank",
        .needs = "nvcc, cuBLAS or NCCL",
        .unavailable = "no CUDA device is visible on this machine",
        .mpi_always = 0,
        .threads_are_ranks = 1,
        .device_words = "GPUs",
        .precision_default = "bf16",
        .precision_choice = 1,
        /* bf16 GEMM operands only: activations, gradients, weights stay
         * fp32 (kernels/cuda/ops_cuda.h, "Precision") */
        .run_precision = OC_PREC_FP32,
        .mfu_against_peak = 1,
#ifdef OC_HAVE_CUDA
        .built = 1,
        .available = oc_backend_cuda_available,
        .init = oc_backend_cuda_open,
        .calibrate = oc_backend_cuda_calibrate_run,
        .netbw = oc_backend_cuda_netbw,
        /* NCCL pairs pipeline messages by order, not by tag */
        .check_schedule = oc_backend_cuda_check_p2p_order,
#endif
    },
};
#define NBACKENDS (sizeof table / sizeof table[0])

const struct oc_backend_entry *oc_backend_find(const char *name)
{
    for (size_t i = 0; i < NBACKENDS; i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

const struct oc_backend_entry *oc_backend_default(void) { return &table[0]; }

void oc_backend_names(char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NBACKENDS && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%s", i ? ", " : "", table[i].name);
}
