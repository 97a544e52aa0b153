/* emu_internal.h: what the emulator's own files share (the .cpp files of
 * kernels/emu): the failure report, the registry of device allocations, the
 * thread's last error, and the launch limits of the emulated device. Not for the
 * kernels (they see emu_cuda.h) nor for the programs (they see the CUDA
 * headers).
 *
 *   if (!emu_dev_range(p, bytes))
 *       emu_fail("cudaMemcpy: %zu bytes at %p are not device memory", ...);
 */
#ifndef OC_EMU_INTERNAL_H
#define OC_EMU_INTERNAL_H

#include <cuda_runtime_api.h>
#include <stddef.h>

/* The emulated device: an H100-like sm_90 part (the limits a launch is
 * checked against; cudaGetDeviceProperties reports them). */
#define EMU_SMEM_DEFAULT_BYTES (48 * 1024)  /* without cudaFuncSetAttribute */
#define EMU_SMEM_OPTIN_BYTES (227 * 1024)   /* sharedMemPerBlockOptin */
#define EMU_THREADS_MAX 1024
#define EMU_GLOBAL_BYTES ((size_t)80 << 30) /* what cudaMemGetInfo reports */

/* One line on stderr ("ocsim-emu: ..."), then abort(): a kernel or a call
 * broke a rule of the CUDA programming model. */
[[noreturn]] void emu_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The device allocation holding [p, p + bytes) (bytes 0: p may be its
 * end); 1 if there is one. */
int emu_dev_range(const void *p, size_t bytes);

/* The calling host thread's last error (cudaGetLastError's), set where the
 * runtime would set it: a launch with a bad configuration. */
void emu_set_error(cudaError_t e);

/* 1 if s is the legacy stream (NULL) or a stream that exists. */
int emu_stream_ok(cudaStream_t s);

/* cudaFuncAttributeMaxDynamicSharedMemorySize as set for kernel k, else the
 * default 48 KiB. */
size_t emu_func_smem_max(const void *k);

#endif
