/* emu_cuda.h: the device side of the CUDA emulator (kernels/emu/README.md):
 * what a kernel file (the .cu files of kernels/cuda) sees when it is
 * compiled as C++ by the host compiler instead of nvcc. The build
 * force-includes it (-include) into each .cu after emu_rewrite.pl has turned
 * its launches and __shared__ declarations into calls of this header:
 *
 *   k<<<grid, block, smem, stream>>>(a, b);
 *     -> emu_launch(emu_cfg(grid, block, smem, stream), "k", k, a, b);
 *   __shared__ float s[8][33];
 *     -> static float s[8][33]; emu_shared_static(&s, sizeof s);
 *   extern __shared__ float sh[];
 *     -> float *sh = (float *)emu_shared_dynamic();
 *
 * What it provides: threadIdx, blockIdx, blockDim, gridDim, warpSize; the
 * block barrier (__syncthreads and its _or/_and/_count forms); the warp
 * operations (__syncwarp, __shfl*_sync, __ballot_sync, __any_sync,
 * __all_sync) as real barriers of the warp's lanes; atomics (plain
 * read-modify-writes: threads switch only at barriers, so each one is
 * atomic); __trap; the math intrinsics as their libm twins; min/max.
 * The bodies of the barriers are in emu_sched.cpp; bf16 comes from the real
 * <cuda_bf16.h>, whose host code this header leaves alone.
 *
 * What it is not: a simulator of timing, of the memory model between blocks
 * or of the hardware's rounding of the fast intrinsics (__expf is expf).
 * Warp operations take the full mask of the warp's lanes only: a partial
 * mask stops the program with a message (no kernel here uses one).
 */
#ifndef OC_EMU_CUDA_H
#define OC_EMU_CUDA_H

#ifndef __cplusplus
#error "emu_cuda.h is for the kernels compiled as C++ (kernels/emu)"
#endif

/* The whole runtime header first, as nvcc includes it: its host-mode
 * declarations of threadIdx, blockDim, warpSize... come before the macros
 * below take those names. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <tuple>
#include <type_traits>
#include <utility>

/* The CUDA headers in host mode leave __global__, __device__, __host__,
 * __shared__ and __constant__ empty; these are the rest. */
#undef __forceinline__
#define __forceinline__ inline
#undef __noinline__
#define __noinline__
#define __launch_bounds__(...)

/* ------------------------------------------------------------------ */
/* The scheduler's state that device code reads (emu_sched.cpp)        */

extern const uint3 *emu_thread_idx; /* the running thread's threadIdx */
extern int emu_thread_linear;       /* x + y*bx + z*bx*by: lane = % 32 */
extern unsigned emu_thread_lanes;   /* the lanes its warp has (a mask) */
extern uint3 emu_block_idx;
extern dim3 emu_block_dim, emu_grid_dim;

#define threadIdx (*emu_thread_idx)
#define blockIdx (static_cast<const uint3 &>(emu_block_idx))
#define blockDim (static_cast<const dim3 &>(emu_block_dim))
#define gridDim (static_cast<const dim3 &>(emu_grid_dim))
#define warpSize 32

/* What a thread waits at; a warp's lanes must all reach the same kind. */
enum emu_op { EMU_OP_SYNCWARP, EMU_OP_SHFL, EMU_OP_VOTE };

/* The block barrier at a source line: every thread of the block must
 * reach the same one. emu_syncthreads_op also combines pred over the
 * block: op 0 counts, 1 ands, 2 ors. */
void emu_syncthreads(const char *file, int line);
int emu_syncthreads_op(int pred, int op, const char *file, int line);
/* The warp barrier: every lane of the warp writes v, waits for the others
 * and gets the 32 values of this operation (lane order). Shuffles and
 * votes name their source line: the lanes must all be at the same one
 * (CUDA: "all non-exited threads named in mask must execute the same
 * intrinsic"); __syncwarp may meet at different ones, as on sm_70+. */
struct emu_site {
    const char *file; /* NULL: any site (__syncwarp) */
    int line;
};
#define EMU_SITE (emu_site{__FILE__, __LINE__})
const uint64_t *emu_warp_exchange(unsigned mask, enum emu_op op, uint64_t v, emu_site at);
unsigned emu_warp_lanes_mask(void); /* the lanes this thread's warp has */
[[noreturn]] void emu_trap(const char *what);
void *emu_shared_dynamic(void);
void emu_shared_static(void *p, size_t bytes);

/* ------------------------------------------------------------------ */
/* Barriers and warp operations                                        */

#define __syncthreads() emu_syncthreads(__FILE__, __LINE__)
#define __syncthreads_count(p) emu_syncthreads_op((p) != 0, 0, __FILE__, __LINE__)
#define __syncthreads_and(p) emu_syncthreads_op((p) != 0, 1, __FILE__, __LINE__)
#define __syncthreads_or(p) emu_syncthreads_op((p) != 0, 2, __FILE__, __LINE__)
inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    (void)emu_warp_exchange(mask, EMU_OP_SYNCWARP, 0, emu_site{nullptr, 0});
}
/* Inside the emulator every lane of a warp is active between its barriers. */
inline unsigned __activemask(void) { return emu_warp_lanes_mask(); }
inline void __threadfence(void) {}
inline void __threadfence_block(void) {}

enum emu_shfl_kind { EMU_SHFL_IDX, EMU_SHFL_UP, EMU_SHFL_DOWN, EMU_SHFL_XOR };

/* The lane a shuffle reads (CUDA C++ Programming Guide, "Warp Shuffle
 * Functions"): within segments of `width` lanes; up/down/xor past the
 * segment read the lane's own value. */
inline int emu_shfl_src(enum emu_shfl_kind k, int lane, int arg, int width)
{
    if (width < 1 || width > 32 || (width & (width - 1)) != 0)
        emu_trap("shuffle width not a power of two in [1, 32]");
    const int base = lane & ~(width - 1), in = lane & (width - 1);
    switch (k) {
    case EMU_SHFL_IDX:
        return base + (arg & (width - 1));
    case EMU_SHFL_UP:
        return in >= arg ? lane - arg : lane;
    case EMU_SHFL_DOWN:
        return in + arg < width ? lane + arg : lane;
    case EMU_SHFL_XOR: {
        const int s = lane ^ (arg & 31);
        return s < base + width ? s : lane;
    }
    }
    return lane;
}

template <class T>
inline T emu_shfl(emu_site at, unsigned mask, T v, enum emu_shfl_kind k, int arg, int width)
{
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                  "a shuffled value fits in 64 bits");
    uint64_t u = 0;
    memcpy(&u, &v, sizeof v);
    const uint64_t *all = emu_warp_exchange(mask, EMU_OP_SHFL, u, at);
    const int src = emu_shfl_src(k, emu_thread_linear % 32, arg, width);
    if (!((emu_thread_lanes >> src) & 1u))
        emu_trap("shuffle from a lane the warp does not have");
    T r;
    memcpy(&r, &all[src], sizeof r);
    return r;
}

template <class T>
inline T emu_shfl_idx(emu_site at, unsigned m, T v, int src, int width = 32)
{
    return emu_shfl(at, m, v, EMU_SHFL_IDX, src, width);
}
template <class T>
inline T emu_shfl_up(emu_site at, unsigned m, T v, unsigned d, int width = 32)
{
    return emu_shfl(at, m, v, EMU_SHFL_UP, (int)d, width);
}
template <class T>
inline T emu_shfl_down(emu_site at, unsigned m, T v, unsigned d, int width = 32)
{
    return emu_shfl(at, m, v, EMU_SHFL_DOWN, (int)d, width);
}
template <class T>
inline T emu_shfl_xor(emu_site at, unsigned m, T v, int lm, int width = 32)
{
    return emu_shfl(at, m, v, EMU_SHFL_XOR, lm, width);
}
#define __shfl_sync(...) emu_shfl_idx(EMU_SITE, __VA_ARGS__)
#define __shfl_up_sync(...) emu_shfl_up(EMU_SITE, __VA_ARGS__)
#define __shfl_down_sync(...) emu_shfl_down(EMU_SITE, __VA_ARGS__)
#define __shfl_xor_sync(...) emu_shfl_xor(EMU_SITE, __VA_ARGS__)

inline unsigned emu_ballot(emu_site at, unsigned mask, int pred)
{
    const uint64_t *all = emu_warp_exchange(mask, EMU_OP_VOTE, pred != 0, at);
    unsigned b = 0;
    for (int l = 0; l < 32; l++)
        b |= (unsigned)(all[l] != 0) << l;
    return b & mask;
}
#define __ballot_sync(m, p) emu_ballot(EMU_SITE, (m), (p))
#define __any_sync(m, p) (emu_ballot(EMU_SITE, (m), (p)) != 0)
#define __all_sync(m, p) (emu_ballot(EMU_SITE, (m), (p)) == ((m) & emu_thread_lanes))

/* ------------------------------------------------------------------ */
/* Atomics: a thread runs alone until its next barrier                 */

template <class T> inline T atomicAdd(T *p, T v) { T o = *p; *p = o + v; return o; }
template <class T> inline T atomicSub(T *p, T v) { T o = *p; *p = o - v; return o; }
template <class T> inline T atomicExch(T *p, T v) { T o = *p; *p = v; return o; }
template <class T> inline T atomicMin(T *p, T v) { T o = *p; *p = v < o ? v : o; return o; }
template <class T> inline T atomicMax(T *p, T v) { T o = *p; *p = v > o ? v : o; return o; }
template <class T> inline T atomicAnd(T *p, T v) { T o = *p; *p = o & v; return o; }
template <class T> inline T atomicOr(T *p, T v) { T o = *p; *p = o | v; return o; }
template <class T> inline T atomicXor(T *p, T v) { T o = *p; *p = o ^ v; return o; }
template <class T> inline T atomicCAS(T *p, T cmp, T v)
{
    T o = *p;
    if (o == cmp)
        *p = v;
    return o;
}

/* ------------------------------------------------------------------ */
/* Intrinsics                                                          */

[[noreturn]] inline void __trap(void) { emu_trap("__trap()"); }
template <class T> inline T __ldg(const T *p) { return *p; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline unsigned __brev(unsigned x)
{
    unsigned r = 0;
    for (int i = 0; i < 32; i++)
        r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
inline float __int_as_float(int x) { float f; memcpy(&f, &x, 4); return f; }
inline int __float_as_int(float f) { int x; memcpy(&x, &f, 4); return x; }
inline float __uint_as_float(unsigned x) { float f; memcpy(&f, &x, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned x; memcpy(&x, &f, 4); return x; }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline void __sincosf(float x, float *s, float *c) { *s = sinf(x), *c = cosf(x); }
inline float __fdividef(float x, float y) { return x / y; }
inline float fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float exp10f(float x) { return powf(10.0f, x); }

/* CUDA's min/max for any two arithmetic types (the usual conversions). */
template <class A, class B>
inline typename std::common_type<A, B>::type min(A a, B b)
{
    typedef typename std::common_type<A, B>::type T;
    return (T)a < (T)b ? (T)a : (T)b;
}
template <class A, class B>
inline typename std::common_type<A, B>::type max(A a, B b)
{
    typedef typename std::common_type<A, B>::type T;
    return (T)a > (T)b ? (T)a : (T)b;
}

/* ------------------------------------------------------------------ */
/* Launches                                                            */

/* nvcc's host pass takes a kernel for the runtime's const void * (the
 * template overloads of <cuda_runtime.h> that host compilers do not see). */
template <class T>
inline cudaError_t cudaFuncSetAttribute(T *kernel, cudaFuncAttribute attr, int value)
{
    return cudaFuncSetAttribute((const void *)kernel, attr, value);
}

struct emu_config {
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
};

inline emu_config emu_cfg(dim3 grid, dim3 block, size_t smem = 0, cudaStream_t s = 0)
{
    emu_config c;
    c.grid = grid, c.block = block, c.smem = smem, c.stream = s;
    return c;
}

/* 0: the launch may run (the emulator's lock is held until emu_launch_end);
 * else the configuration is wrong and cudaGetLastError will say so. */
int emu_launch_begin(const emu_config &c, const void *kernel, const char *name);
/* pointer argument i of the kernel: NULL, or inside a device allocation */
void emu_check_pointer_arg(const void *p, int i);
/* every block of the grid, every thread a fiber that runs body(ctx) */
void emu_launch_run(void (*body)(void *), void *ctx);
void emu_launch_end(void);

template <class T> inline void emu_check_arg(const T &, int) {}
template <class T> inline void emu_check_arg(T *const &p, int i)
{
    emu_check_pointer_arg((const void *)p, i);
}

template <class Tup, size_t... I>
inline void emu_check_args(const Tup &t, std::index_sequence<I...>)
{
    (void)t;
    int dummy[] = {0, (emu_check_arg(std::get<I>(t), (int)I), 0)...};
    (void)dummy;
}

template <class F> inline void emu_thunk(void *f) { (*(F *)f)(); }

/* The arguments are converted to the kernel's parameter types once, as
 * CUDA copies them at the launch; every thread calls the kernel on its own
 * copy of them. */
template <class... P, class... A>
inline void emu_launch(const emu_config &c, const char *name, void (*k)(P...),
                       A &&...args)
{
    static_assert(sizeof...(P) == sizeof...(A), "kernel argument count");
    std::tuple<typename std::decay<P>::type...> params(std::forward<A>(args)...);
    if (emu_launch_begin(c, (const void *)k, name) != 0)
        return;
    emu_check_args(params, std::index_sequence_for<P...>{});
    auto body = [&] { std::apply(k, params); };
    emu_launch_run(&emu_thunk<decltype(body)>, &body);
    emu_launch_end();
}

#endif
