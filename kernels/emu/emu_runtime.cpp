/* emu_runtime.cpp: the CUDA runtime as the emulator provides it
 * (kernels/emu/README.md): the subset of cudart that kernels/cuda and
 * exec/cuda call, with the declarations of the real <cuda_runtime_api.h>,
 * so the same C files link against it instead of libcudart.
 *
 * Device memory is host memory, 256-byte aligned as cudaMalloc's, filled
 * with 0xff bytes (NaN floats) when allocated so a read before a write
 * shows, and kept in a registry: copies, memsets, kernel pointer arguments
 * and cuBLAS operands are checked against it (the bytes they touch must lie
 * in one allocation). Under AddressSanitizer each allocation is a malloc of
 * exactly its size, so ASan reports a kernel's access past it. Other
 * builds map each allocation so that it ends at an inaccessible page (an
 * access past the end faults at once: emu_sched.cpp's fault handler names
 * the kernel, block and thread), with the bytes up to it (the rounding to
 * 256) a guard zone checked at cudaFree.
 *
 * Streams and events are ordered-immediate: every call does its work
 * before it returns, so any order of streams is the program order, and an
 * event records the host clock (elapsed times measure the emulation).
 * What that cannot show: a missing cudaStreamWaitEvent between streams.
 */
#include "emu_internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <map>
#include <mutex>
#include <set>

#if defined(__SANITIZE_ADDRESS__)
#define EMU_MAPPED 0 /* malloc: ASan's redzones */
#else
#include <sys/mman.h>
#include <unistd.h>
#define EMU_MAPPED 1 /* mmap, an inaccessible page after the end */
#endif
#define EMU_GUARD_BYTE 0xa5

struct CUstream_st {
    int unused;
};

struct CUevent_st {
    double ms;      /* the host clock at the last record */
    int recorded;
    unsigned flags;
};

struct CUmemPoolHandle_st {
    size_t used, used_high; /* bytes from cudaMallocAsync */
};

namespace {

struct block {
    size_t bytes;       /* what was asked for */
    size_t guard;       /* guard bytes after them (EMU_MAPPED) */
    void *map;          /* the mapping (EMU_MAPPED) */
    size_t map_bytes;
};

struct memstate {
    std::mutex lock;
    std::map<uintptr_t, block> alloc; /* base -> the allocation */
    std::map<uintptr_t, size_t> async; /* the cudaMallocAsync ones */
    size_t bytes;
    std::set<cudaStream_t> streams;
    std::set<cudaEvent_t> events;
    std::map<const void *, size_t> smem_max; /* cudaFuncSetAttribute */
    CUmemPoolHandle_st pool;
};

memstate M;
thread_local cudaError_t t_last = cudaSuccess;
thread_local int t_device = 0;

size_t device_bytes(void)
{
    const char *e = getenv("OCSIM_EMU_DEVICE_MIB"); /* a smaller device */
    return e && atol(e) > 0 ? (size_t)atol(e) << 20 : EMU_GLOBAL_BYTES;
}

double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The return of a call: errors other than "not ready" become the
 * thread's last error, as the runtime keeps them. */
cudaError_t ret(cudaError_t e)
{
    if (e != cudaSuccess && e != cudaErrorNotReady)
        t_last = e;
    return e;
}

} // namespace

void emu_set_error(cudaError_t e)
{
    t_last = e;
}

int emu_dev_range(const void *p, size_t bytes)
{
    const uintptr_t a = (uintptr_t)p;
    std::lock_guard<std::mutex> g(M.lock);
    auto it = M.alloc.upper_bound(a);
    if (it == M.alloc.begin())
        return 0;
    --it;
    return a + bytes <= it->first + it->second.bytes && a + bytes >= a;
}

int emu_stream_ok(cudaStream_t s)
{
    if (!s || s == cudaStreamLegacy || s == cudaStreamPerThread)
        return 1;
    std::lock_guard<std::mutex> g(M.lock);
    return M.streams.count(s) != 0;
}

size_t emu_func_smem_max(const void *k)
{
    std::lock_guard<std::mutex> g(M.lock);
    auto it = M.smem_max.find(k);
    return it == M.smem_max.end() ? EMU_SMEM_DEFAULT_BYTES : it->second;
}

/* The device side of a copy or memset: one allocation holds it all. */
static void need_device(const char *call, const void *p, size_t bytes)
{
    if (!emu_dev_range(p, bytes))
        emu_fail("%s: %zu bytes at %p are not inside one device allocation", call, bytes, p);
}

/* ------------------------------------------------------------------ */
/* Memory                                                               */

/* Host memory for a device allocation of `bytes`, 256-byte aligned. */
static void *block_alloc(size_t bytes, block *b)
{
    b->bytes = bytes;
    b->guard = 0;
    b->map = nullptr;
    b->map_bytes = 0;
#if EMU_MAPPED
    /* [map ... | guard | page]: the allocation ends where the guard zone
     * (its rounding up to 256 bytes) meets an inaccessible page */
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t body = (bytes + 255) / 256 * 256;
    const size_t total = (body + page - 1) / page * page + page;
    char *m = (char *)mmap(nullptr, total, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return nullptr;
    mprotect(m + total - page, page, PROT_NONE);
    b->map = m;
    b->map_bytes = total;
    b->guard = body - bytes;
    char *q = m + total - page - body;
    memset(q + bytes, EMU_GUARD_BYTE, b->guard);
    return q;
#else
    void *q = nullptr;
    return posix_memalign(&q, 256, bytes) == 0 ? q : nullptr;
#endif
}

static void block_free(void *p, const block &b)
{
    for (size_t i = 0; i < b.guard; i++)
        if (((unsigned char *)p)[b.bytes + i] != EMU_GUARD_BYTE)
            emu_fail("cudaFree: the %zu-byte allocation at %p was written past its end "
                     "(byte %zu)", b.bytes, p, b.bytes + i);
#if EMU_MAPPED
    munmap(b.map, b.map_bytes);
#else
    free(p);
#endif
}

static cudaError_t dev_alloc(void **p, size_t bytes, bool async)
{
    if (!p)
        return ret(cudaErrorInvalidValue);
    *p = nullptr;
    if (bytes == 0)
        return cudaSuccess;
    {
        std::lock_guard<std::mutex> g(M.lock);
        if (M.bytes + bytes > device_bytes() || M.bytes + bytes < M.bytes)
            return ret(cudaErrorMemoryAllocation);
    }
    block b;
    void *q = block_alloc(bytes, &b);
    if (!q)
        return ret(cudaErrorMemoryAllocation);
    memset(q, 0xff, bytes); /* NaN floats: a read before a write shows */
    std::lock_guard<std::mutex> g(M.lock);
    M.alloc[(uintptr_t)q] = b;
    M.bytes += bytes;
    if (async) {
        M.async[(uintptr_t)q] = bytes;
        M.pool.used += bytes;
        if (M.pool.used > M.pool.used_high)
            M.pool.used_high = M.pool.used;
    }
    *p = q;
    return cudaSuccess;
}

static cudaError_t dev_free(void *p)
{
    if (!p)
        return cudaSuccess;
    block b;
    {
        std::lock_guard<std::mutex> g(M.lock);
        auto it = M.alloc.find((uintptr_t)p);
        if (it == M.alloc.end())
            return ret(cudaErrorInvalidValue);
        b = it->second;
        M.alloc.erase(it);
        M.bytes -= b.bytes;
        auto a = M.async.find((uintptr_t)p);
        if (a != M.async.end()) {
            M.pool.used -= a->second;
            M.async.erase(a);
        }
    }
    block_free(p, b);
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes)
{
    return dev_alloc(p, bytes, false);
}

cudaError_t cudaFree(void *p)
{
    return dev_free(p);
}

cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s)
{
    if (!emu_stream_ok(s))
        return ret(cudaErrorInvalidResourceHandle);
    return dev_alloc(p, bytes, true);
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    if (!emu_stream_ok(s))
        return ret(cudaErrorInvalidResourceHandle);
    return dev_free(p);
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    std::lock_guard<std::mutex> g(M.lock);
    *total = device_bytes();
    *free_bytes = *total > M.bytes ? *total - M.bytes : 0;
    return cudaSuccess;
}

static cudaError_t copy(const char *call, void *dst, const void *src, size_t bytes,
                        cudaMemcpyKind kind)
{
    if (bytes == 0)
        return cudaSuccess;
    if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice)
        need_device(call, dst, bytes);
    if (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice)
        need_device(call, src, bytes);
    if (kind > cudaMemcpyDefault)
        return ret(cudaErrorInvalidMemcpyDirection);
    const char *d = (const char *)dst, *s = (const char *)src;
    if (d < s + bytes && s < d + bytes)
        emu_fail("%s: the %zu bytes at %p and %p overlap", call, bytes, dst, src);
    memcpy(dst, src, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    return copy("cudaMemcpy", dst, src, bytes, kind);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t s)
{
    if (!emu_stream_ok(s))
        return ret(cudaErrorInvalidResourceHandle);
    return copy("cudaMemcpyAsync", dst, src, bytes, kind);
}

/* __constant__ and __device__ variables are host globals here. */
cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t bytes,
                               size_t offset, cudaMemcpyKind kind)
{
    if (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost)
        return ret(cudaErrorInvalidMemcpyDirection);
    if (kind == cudaMemcpyDeviceToDevice)
        need_device("cudaMemcpyToSymbol", src, bytes);
    memcpy((char *)symbol + offset, src, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t bytes, size_t offset,
                                 cudaMemcpyKind kind)
{
    if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost)
        return ret(cudaErrorInvalidMemcpyDirection);
    if (kind == cudaMemcpyDeviceToDevice)
        need_device("cudaMemcpyFromSymbol", dst, bytes);
    memcpy(dst, (const char *)symbol + offset, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int value, size_t bytes)
{
    if (bytes == 0)
        return cudaSuccess;
    need_device("cudaMemset", p, bytes);
    memset(p, value, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s)
{
    if (!emu_stream_ok(s))
        return ret(cudaErrorInvalidResourceHandle);
    if (bytes == 0)
        return cudaSuccess;
    need_device("cudaMemsetAsync", p, bytes);
    memset(p, value, bytes);
    return cudaSuccess;
}

/* The default pool: what cudaMallocAsync holds now and at most. */
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int device)
{
    if (device != 0)
        return ret(cudaErrorInvalidDevice);
    *pool = &M.pool;
    return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void *value)
{
    if (pool != &M.pool)
        return ret(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> g(M.lock);
    if (attr == cudaMemPoolAttrUsedMemHigh || attr == cudaMemPoolAttrReservedMemHigh)
        M.pool.used_high = M.pool.used; /* only 0 may be set: a reset */
    (void)value;
    return cudaSuccess;
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void *value)
{
    if (pool != &M.pool)
        return ret(cudaErrorInvalidValue);
    std::lock_guard<std::mutex> g(M.lock);
    uint64_t v = 0;
    if (attr == cudaMemPoolAttrUsedMemHigh || attr == cudaMemPoolAttrReservedMemHigh)
        v = M.pool.used_high;
    else if (attr == cudaMemPoolAttrUsedMemCurrent || attr == cudaMemPoolAttrReservedMemCurrent)
        v = M.pool.used;
    else if (attr == cudaMemPoolAttrReleaseThreshold)
        v = 0;
    else {
        *(int *)value = 0; /* the int-valued flags */
        return cudaSuccess;
    }
    memcpy(value, &v, sizeof v);
    return cudaSuccess;
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep)
{
    (void)keep;
    return pool == &M.pool ? cudaSuccess : ret(cudaErrorInvalidValue);
}

/* ------------------------------------------------------------------ */
/* Streams and events                                                   */

/* A stream or event into its registry, and out of it (freed). */
template <class H> static H handle_new(std::set<H> &reg, H h)
{
    std::lock_guard<std::mutex> g(M.lock);
    reg.insert(h);
    return h;
}

template <class H> static cudaError_t handle_delete(std::set<H> &reg, H h)
{
    std::lock_guard<std::mutex> g(M.lock);
    if (!reg.erase(h))
        return ret(cudaErrorInvalidResourceHandle);
    delete h;
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    *s = handle_new(M.streams, new CUstream_st());
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    return cudaStreamCreateWithFlags(s, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    return handle_delete(M.streams, s);
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    return emu_stream_ok(s) ? cudaSuccess : ret(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaStreamQuery(cudaStream_t s)
{
    return emu_stream_ok(s) ? cudaSuccess : ret(cudaErrorInvalidResourceHandle);
}

static int event_ok(cudaEvent_t e)
{
    std::lock_guard<std::mutex> g(M.lock);
    return M.events.count(e) != 0;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags)
{
    (void)flags;
    if (!emu_stream_ok(s) || !event_ok(e))
        return ret(cudaErrorInvalidResourceHandle);
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
    cudaEvent_t n = new CUevent_st();
    n->flags = flags;
    *e = handle_new(M.events, n);
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    return cudaEventCreateWithFlags(e, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    return handle_delete(M.events, e);
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    if (!event_ok(e) || !emu_stream_ok(s))
        return ret(cudaErrorInvalidResourceHandle);
    e->ms = now_ms();
    e->recorded = 1;
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
    return event_ok(e) ? cudaSuccess : ret(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    return event_ok(e) ? cudaSuccess : ret(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (!event_ok(start) || !event_ok(end))
        return ret(cudaErrorInvalidResourceHandle);
    if ((start->flags | end->flags) & cudaEventDisableTiming)
        return ret(cudaErrorInvalidResourceHandle);
    if (!start->recorded || !end->recorded)
        return ret(cudaErrorInvalidResourceHandle);
    *ms = (float)(end->ms - start->ms);
    return cudaSuccess;
}

/* ------------------------------------------------------------------ */
/* The device                                                           */

cudaError_t cudaGetDeviceCount(int *n)
{
    *n = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int d)
{
    if (d != 0)
        return ret(cudaErrorInvalidDevice);
    t_device = d;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *d)
{
    *d = t_device;
    return cudaSuccess;
}

/* H100 SXM's figures (NVIDIA H100 Tensor Core GPU Architecture, 2022),
 * with "emulator" in the name so no report mistakes it for one. */
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int d)
{
    if (d != 0)
        return ret(cudaErrorInvalidDevice);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "ocsim CUDA emulator (sm_90)");
    p->totalGlobalMem = device_bytes();
    p->sharedMemPerBlock = EMU_SMEM_DEFAULT_BYTES;
    p->sharedMemPerBlockOptin = EMU_SMEM_OPTIN_BYTES;
    p->sharedMemPerMultiprocessor = 228 * 1024;
    p->regsPerBlock = p->regsPerMultiprocessor = 65536;
    p->warpSize = 32;
    p->maxThreadsPerBlock = EMU_THREADS_MAX;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->totalConstMem = 65536;
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = 132;
    p->maxThreadsPerMultiProcessor = 2048;
    p->maxBlocksPerMultiProcessor = 32;
    p->l2CacheSize = 50 << 20;
    p->memoryBusWidth = 5120;
    p->concurrentKernels = 1;
    p->unifiedAddressing = 1;
    p->memoryPoolsSupported = 1;
    p->asyncEngineCount = 2;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void *k, cudaFuncAttribute attr, int value)
{
    if (!k)
        return ret(cudaErrorInvalidDeviceFunction);
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        if (value < 0 || (size_t)value > EMU_SMEM_OPTIN_BYTES)
            return ret(cudaErrorInvalidValue);
        std::lock_guard<std::mutex> g(M.lock);
        M.smem_max[k] = (size_t)value;
    }
    return cudaSuccess;
}

/* ------------------------------------------------------------------ */
/* Errors                                                               */

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = t_last;
    t_last = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    return t_last;
}

static const struct {
    cudaError_t e;
    const char *name, *text;
} ERRORS[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration",
     "invalid configuration argument"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction",
     "invalid device function"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle",
     "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
};

const char *cudaGetErrorName(cudaError_t e)
{
    for (const auto &x : ERRORS)
        if (x.e == e)
            return x.name;
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t e)
{
    for (const auto &x : ERRORS)
        if (x.e == e)
            return x.text;
    return "unknown error (emulated runtime)";
}
