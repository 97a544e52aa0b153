/* emu_sched.cpp: the emulator's execution of a launch (kernels/emu/README.md):
 * the blocks of the grid one after another, every thread of a block a
 * fiber with its own stack, switched only where CUDA threads wait for each
 * other: __syncthreads (all threads of the block), the warp operations
 * (__syncwarp, shuffles, votes: the 32 lanes of the warp), and the
 * thread's end. Between two barriers a thread runs alone, so what CUDA
 * leaves unordered between barriers runs in one order here: the threads of
 * even blocks in index order, of odd blocks in reverse index order (a race
 * that one order hides, the other shows).
 *
 * What it checks, stopping the program with one line (emu_fail):
 *   - a __syncthreads that some threads of the block never reach (they
 *     exited, or wait at another barrier), or threads of one block at
 *     __syncthreads of different source lines;
 *   - a warp whose lanes do not all reach the same warp operation (some
 *     exited or wait at __syncthreads; a shuffle against a vote), a
 *     partial mask, a shuffle from a lane the warp does not have;
 *   - shared memory: each block's starts as 0xff bytes (NaN floats), so a
 *     read before a write shows in the results; dynamic shared memory is
 *     exactly the launch's size (an AddressSanitizer build reports any
 *     access past it; other builds check a guard zone after each block);
 *     static __shared__ arrays are globals that ASan bounds;
 *   - outside the Asan build, a fault inside a kernel (device memory ends
 *     at an inaccessible page: emu_runtime.cpp; a fiber's stack has one
 *     below it) names the kernel, block and thread before the program
 *     dies of it;
 *   - the launch configuration and shared memory size against the emulated
 *     device (emu_internal.h), the stream, and that pointer arguments are
 *     device memory (emu_runtime.cpp's registry).
 *
 * The switch: a few lines of assembly on x86-64 (callee-saved registers,
 * the stack pointer, the SSE and x87 control words); swapcontext elsewhere
 * (correct, but a system call per switch, ~1 us: about 100 times slower).
 * Under AddressSanitizer every switch is announced to it
 * (__sanitizer_start_switch_fiber), so it follows the fiber stacks.
 */
#include "emu_cuda.h"
#include "emu_internal.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mutex>
#include <vector>

#if defined(__SANITIZE_ADDRESS__) || defined(EMU_ASAN) /* the Asan build */
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#undef EMU_ASAN
#define EMU_ASAN 1
#define EMU_STACK_BYTES ((size_t)256 << 10) /* ASan's frames are larger */
#else
#define EMU_STACK_BYTES ((size_t)64 << 10)
#endif

#if defined(__x86_64__) && !defined(EMU_UCONTEXT)
#define EMU_ASM_SWITCH 1
/* emu_ctx_swap(save, to): pushes the callee-saved registers (System V
 * AMD64 ABI, section 3.2.1), stores the stack pointer in *save, loads `to`
 * and pops what that context pushed. The MXCSR and x87 control words are
 * the thread's: every fiber runs on it and no kernel changes them. */
extern "C" void emu_ctx_swap(void **save, void *to);
__asm__(".text\n"
        ".globl emu_ctx_swap\n"
        ".type emu_ctx_swap,@function\n"
        "emu_ctx_swap:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size emu_ctx_swap, .-emu_ctx_swap\n");
#else
#include <ucontext.h>
#endif

/* ------------------------------------------------------------------ */
/* State                                                                */

const uint3 *emu_thread_idx;
int emu_thread_linear;
unsigned emu_thread_lanes;
uint3 emu_block_idx;
dim3 emu_block_dim, emu_grid_dim;

namespace {

enum tstate { T_RUN, T_WARP, T_BLOCK, T_DONE };

struct ctx {
#ifdef EMU_ASM_SWITCH
    void *sp;
#else
    ucontext_t uc;
#endif
    const void *bottom; /* the stack, for ASan */
    size_t size;
};

struct fiber {
    ctx c;
    char *stack; /* EMU_STACK_BYTES, a guard page below */
    int state;
};

struct warp {
    int nlanes;        /* 32, or fewer in a block's last warp */
    unsigned lanes;    /* the mask of the lanes it has */
    int arrived;       /* lanes waiting at the current operation */
    int phase;         /* which slot row the current operation writes */
    int op;            /* enum emu_op of the current operation */
    emu_site at;       /* its source line (shuffles, votes) */
    uint64_t slot[2][32];
};

struct sched {
    std::mutex lock;
    /* the launch */
    const char *kernel;
    void (*body)(void *);
    void *body_ctx;
    size_t smem;
    int nthreads;
    std::vector<fiber> f;   /* grows to the largest block seen */
    std::vector<uint3> tid; /* threadIdx of each fiber */
    std::vector<warp> w;
    /* the block */
    std::vector<int> q;     /* run queue: a ring of nthreads */
    int qhead, qlen;
    int cur = -1;           /* the running fiber; -1 outside a kernel */
    int done, at_block;
    unsigned bar_gen;       /* block barriers passed */
    int red[2];             /* __syncthreads_op's sums, by bar_gen parity */
    const char *bar_file;   /* the barrier the waiting threads are at */
    int bar_line;
    bool reverse;
    ctx host;
    /* shared memory */
    char *dyn;              /* the dynamic shared memory of the launch */
    size_t dyn_cap;
    std::vector<void *> statics; /* static __shared__ seen this block */
    size_t static_bytes;
};

sched S;
thread_local bool t_in_launch;

const size_t GUARD_BYTES = 1024; /* after dynamic shared memory, non-ASan */

} // namespace

[[noreturn]] void emu_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ocsim-emu: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    abort();
}

/* "kernel k, block (x,y,z), thread (x,y,z)" of the running fiber */
static const char *where(void)
{
    static char buf[256];
    if (S.cur < 0) {
        snprintf(buf, sizeof buf, "kernel %s, block (%u,%u,%u)", S.kernel ? S.kernel : "?",
                 emu_block_idx.x, emu_block_idx.y, emu_block_idx.z);
        return buf;
    }
    const uint3 t = S.tid[S.cur];
    snprintf(buf, sizeof buf, "kernel %s, block (%u,%u,%u), thread (%u,%u,%u)", S.kernel,
             emu_block_idx.x, emu_block_idx.y, emu_block_idx.z, t.x, t.y, t.z);
    return buf;
}

[[noreturn]] void emu_trap(const char *what)
{
    emu_fail("%s in %s", what, where());
}

/* ------------------------------------------------------------------ */
/* Fibers                                                               */

static void fiber_main(void);

static void ctx_switch(ctx *from, ctx *to, bool from_dies)
{
#ifdef EMU_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(from_dies ? nullptr : &fake, to->bottom, to->size);
#else
    (void)from_dies;
#endif
#ifdef EMU_ASM_SWITCH
    emu_ctx_swap(&from->sp, to->sp);
#else
    swapcontext(&from->uc, &to->uc);
#endif
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

/* A fresh context on the stack of fiber t that starts in fiber_main. The
 * stacks are page-aligned, so their tops would all fall into the same L1
 * cache sets: each top starts lower by a different number of cache lines. */
static void fiber_reset(fiber *f, int t)
{
    f->c.bottom = f->stack;
    f->c.size = EMU_STACK_BYTES;
#ifdef EMU_ASAN
    /* the frames the last thread on this stack left: its end (fiber_main,
     * run_next, ctx_switch) lies within the top 16 KiB; deeper frames all
     * returned and unpoisoned themselves */
    __asan_unpoison_memory_region(f->stack + EMU_STACK_BYTES - (16 << 10), 16 << 10);
#endif
#ifdef EMU_ASM_SWITCH
    /* what emu_ctx_swap pops, from the top: a null return address for
     * fiber_main (it never returns), fiber_main as the return address,
     * rbp = 0 (the end of the frame chain), five more registers */
    const size_t colour = (size_t)(t * 3 % 61) * 64;
    uint64_t *top = (uint64_t *)((uintptr_t)(f->stack + EMU_STACK_BYTES - colour) &
                                 ~(uintptr_t)15);
    top[-1] = 0;
    top[-2] = (uint64_t)(uintptr_t)&fiber_main;
    for (int i = 3; i <= 8; i++)
        top[-i] = 0;
    f->c.sp = &top[-8];
#else
    (void)t;
    if (getcontext(&f->c.uc) != 0)
        emu_fail("getcontext failed");
    f->c.uc.uc_stack.ss_sp = f->stack;
    f->c.uc.uc_stack.ss_size = EMU_STACK_BYTES;
    f->c.uc.uc_link = nullptr;
    makecontext(&f->c.uc, fiber_main, 0);
#endif
}

/* A stack with a guard page below it: an overflow faults at once. */
static char *stack_alloc(void)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *p = (char *)mmap(nullptr, EMU_STACK_BYTES + page, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        emu_fail("no memory for a fiber stack");
    mprotect(p, page, PROT_NONE);
    return p + page;
}

static uint3 u3(unsigned x, unsigned y, unsigned z)
{
    uint3 r;
    r.x = x, r.y = y, r.z = z;
    return r;
}

static void set_current(int t)
{
    S.cur = t;
    emu_thread_idx = &S.tid[t];
    emu_thread_linear = t;
    emu_thread_lanes = S.w[t / 32].lanes;
}

static void push(int t)
{
    S.q[(S.qhead + S.qlen) % S.nthreads] = t;
    S.qlen++;
}

/* The next runnable fiber runs; with none, back to the host (the block
 * is done, or stuck: run_block tells). Returns when this fiber runs again. */
static void run_next(bool dying)
{
    const int me = S.cur;
    if (S.qlen == 0) {
        ctx_switch(&S.f[me].c, &S.host, dying);
        return;
    }
    const int to = S.q[S.qhead];
    S.qhead = (S.qhead + 1) % S.nthreads;
    S.qlen--;
    if (to == me)
        return;
    set_current(to);
    ctx_switch(&S.f[me].c, &S.f[to].c, dying);
}

static void fiber_main(void)
{
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
    S.body(S.body_ctx);
    S.f[S.cur].state = T_DONE;
    S.done++;
    run_next(true);
    emu_fail("a finished thread ran again");
}

/* ------------------------------------------------------------------ */
/* Barriers                                                             */

static int block_barrier(int pred, const char *file, int line)
{
    if (S.cur < 0)
        emu_fail("__syncthreads outside a kernel");
    if (S.at_block == 0) {
        S.bar_file = file;
        S.bar_line = line;
    } else if (line != S.bar_line || (file != S.bar_file && strcmp(file, S.bar_file) != 0)) {
        emu_fail("__syncthreads at %s:%d while other threads of the block wait at "
                 "%s:%d (%s)", file, line, S.bar_file, S.bar_line, where());
    }
    const int g = S.bar_gen & 1;
    S.red[g] += pred;
    if (++S.at_block == S.nthreads) { /* the last one: release the others */
        S.at_block = 0;
        S.bar_gen++;
        S.red[S.bar_gen & 1] = 0;
        for (int i = 0; i < S.nthreads; i++) {
            const int t = S.reverse ? S.nthreads - 1 - i : i;
            if (t != S.cur) {
                S.f[t].state = T_RUN;
                push(t);
            }
        }
    } else {
        S.f[S.cur].state = T_BLOCK;
        run_next(false);
    }
    return S.red[g];
}

void emu_syncthreads(const char *file, int line)
{
    (void)block_barrier(0, file, line);
}

int emu_syncthreads_op(int pred, int op, const char *file, int line)
{
    const int n = block_barrier(pred, file, line);
    return op == 0 ? n : op == 1 ? n == S.nthreads : n > 0;
}

static const char *op_name(int op)
{
    return op == EMU_OP_SYNCWARP ? "__syncwarp" : op == EMU_OP_SHFL ? "a shuffle" : "a vote";
}

unsigned emu_warp_lanes_mask(void)
{
    if (S.cur < 0)
        emu_fail("a warp operation outside a kernel");
    return emu_thread_lanes;
}

static bool same_site(emu_site a, emu_site b)
{
    return a.line == b.line && (a.file == b.file || strcmp(a.file, b.file) == 0);
}

const uint64_t *emu_warp_exchange(unsigned mask, enum emu_op op, uint64_t v, emu_site at)
{
    if (S.cur < 0)
        emu_fail("a warp operation outside a kernel");
    warp &w = S.w[S.cur / 32];
    if (mask != w.lanes)
        emu_fail("%s with mask 0x%08x in a warp of lanes 0x%08x: only the full mask "
                 "of the warp's lanes is emulated (%s)", op_name(op), mask, w.lanes, where());
    if (w.arrived == 0) {
        w.op = op;
        w.at = at;
    } else if (w.op != (int)op) {
        emu_fail("the warp diverged: %s while other lanes wait at %s (%s)", op_name(op),
                 op_name(w.op), where());
    } else if (at.file && !same_site(at, w.at)) {
        emu_fail("the warp diverged: %s at %s:%d while other lanes wait at %s:%d (%s)",
                 op_name(op), at.file, at.line, w.at.file, w.at.line, where());
    }
    const int ph = w.phase;
    w.slot[ph][S.cur % 32] = v;
    if (++w.arrived == w.nlanes) { /* the last lane: release the others */
        w.arrived = 0;
        w.phase ^= 1;
        const int first = S.cur / 32 * 32;
        for (int l = 0; l < w.nlanes; l++)
            if (first + l != S.cur) {
                S.f[first + l].state = T_RUN;
                push(first + l);
            }
    } else {
        S.f[S.cur].state = T_WARP;
        run_next(false);
    }
    /* slot[ph] is rewritten two operations later, after every lane has
     * passed the next one (so has read this one) */
    return w.slot[ph];
}

/* ------------------------------------------------------------------ */
/* Shared memory                                                        */

void *emu_shared_dynamic(void)
{
    if (S.cur < 0)
        emu_fail("extern __shared__ outside a kernel");
    return S.dyn;
}

void emu_shared_static(void *p, size_t bytes)
{
    for (void *q : S.statics)
        if (q == p)
            return;
    S.statics.push_back(p);
    memset(p, 0xff, bytes); /* a new block's shared memory: NaN floats */
    S.static_bytes += bytes;
    if (S.static_bytes > EMU_SMEM_DEFAULT_BYTES || S.static_bytes + S.smem > EMU_SMEM_OPTIN_BYTES)
        emu_fail("%zu bytes of static and %zu of dynamic shared memory: more than the "
                 "device has (%s)", S.static_bytes, S.smem, where());
}

/* ------------------------------------------------------------------ */
/* A block                                                              */

/* Why the block's threads cannot go on: one line, then abort. */
[[noreturn]] static void stuck(void)
{
    int n[4] = {0, 0, 0, 0};
    for (int t = 0; t < S.nthreads; t++)
        n[S.f[t].state]++;
    S.cur = -1;
    if (n[T_BLOCK] > 0)
        emu_fail("%d of %d threads wait at __syncthreads (%s:%d) that the others never "
                 "reach (%d exited, %d wait at a warp operation): %s", n[T_BLOCK],
                 S.nthreads, S.bar_file, S.bar_line, n[T_DONE], n[T_WARP], where());
    for (size_t wi = 0; wi < S.w.size(); wi++) {
        const warp &w = S.w[wi];
        if (w.arrived == 0)
            continue;
        unsigned missing = 0;
        for (int l = 0; l < w.nlanes; l++)
            if (S.f[wi * 32 + l].state != T_WARP)
                missing |= 1u << l;
        emu_fail("warp %zu: %d lanes wait at %s (%s:%d) that lanes 0x%08x never reach "
                 "(they exited): %s", wi, w.arrived, op_name(w.op),
                 w.at.file ? w.at.file : "?", w.at.line, missing, where());
    }
    emu_fail("the block stopped with %d threads unfinished: %s", S.nthreads - n[T_DONE],
             where());
}

static void run_block(void)
{
    S.done = S.at_block = 0;
    S.bar_gen = 0;
    S.red[0] = S.red[1] = 0;
    S.qhead = S.qlen = 0;
    for (warp &w : S.w)
        w.arrived = w.phase = 0;
    S.statics.clear();
    S.static_bytes = 0;
    memset(S.dyn, 0xff, S.smem + (S.dyn_cap > S.smem ? GUARD_BYTES : 0));
    for (int i = 0; i < S.nthreads; i++) {
        const int t = S.reverse ? S.nthreads - 1 - i : i;
        fiber_reset(&S.f[t], t);
        S.f[t].state = T_RUN;
        push(t);
    }
    const int first = S.q[S.qhead];
    S.qhead = (S.qhead + 1) % S.nthreads;
    S.qlen--;
    set_current(first);
    ctx_switch(&S.host, &S.f[first].c, false);
    if (S.done != S.nthreads)
        stuck();
    S.cur = -1;
#ifndef EMU_ASAN
    for (size_t i = S.smem; i < S.smem + GUARD_BYTES; i++)
        if ((unsigned char)S.dyn[i] != 0xff)
            emu_fail("dynamic shared memory written at byte %zu, past the launch's %zu "
                     "bytes: %s", i, S.smem, where());
#endif
}

/* ------------------------------------------------------------------ */
/* Faults inside a kernel (not in the Asan build: ASan reports them)    */

#ifndef EMU_ASAN
static struct sigaction old_segv, old_bus;

/* One line naming the kernel, block and thread, then the fault again
 * under the handler that was there before (the default: a core dump). */
static void on_fault(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (S.kernel) {
        char buf[512];
        int n = snprintf(buf, sizeof buf, "ocsim-emu: %s at %p in %s: an access outside "
                         "device memory, or a thread's stack overflowed\n",
                         sig == SIGSEGV ? "segmentation fault" : "bus error", si->si_addr,
                         where());
        if (n > 0 && write(2, buf, (size_t)n) < 0)
            n = 0;
    }
    sigaction(sig, sig == SIGSEGV ? &old_segv : &old_bus, nullptr);
}

static void fault_handler_init(void)
{
    static std::once_flag once;
    thread_local bool alt_stack;
    if (!alt_stack) { /* the handler must run on a fiber whose stack is full */
        stack_t ss;
        ss.ss_size = 64 << 10;
        ss.ss_sp = malloc(ss.ss_size);
        ss.ss_flags = 0;
        if (ss.ss_sp && sigaltstack(&ss, nullptr) == 0)
            alt_stack = true;
    }
    std::call_once(once, [] {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fault;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGSEGV, &sa, &old_segv);
        sigaction(SIGBUS, &sa, &old_bus);
    });
}
#else
static void fault_handler_init(void) {}
#endif

/* ------------------------------------------------------------------ */
/* A launch                                                             */

static int config_error(cudaError_t e)
{
    emu_set_error(e);
    return 1;
}

int emu_launch_begin(const emu_config &c, const void *kernel, const char *name)
{
    if (t_in_launch)
        emu_fail("a launch of %s from inside a kernel (dynamic parallelism is not "
                 "emulated)", name);
    const dim3 g = c.grid, b = c.block;
    const uint64_t threads = (uint64_t)b.x * b.y * b.z;
    if (g.x < 1 || g.y < 1 || g.z < 1 || g.x > 2147483647u || g.y > 65535 || g.z > 65535 ||
        threads < 1 || threads > EMU_THREADS_MAX || b.x > 1024 || b.y > 1024 || b.z > 64)
        return config_error(cudaErrorInvalidConfiguration);
    if (c.smem > emu_func_smem_max(kernel))
        return config_error(cudaErrorInvalidValue); /* as the runtime says it */
    if (!emu_stream_ok(c.stream))
        return config_error(cudaErrorInvalidResourceHandle);
    S.lock.lock();
    t_in_launch = true;
    fault_handler_init();
    S.kernel = name;
    S.smem = c.smem;
    S.nthreads = (int)threads;
    emu_grid_dim = g;
    emu_block_dim = b;
    while ((int)S.f.size() < S.nthreads) {
        fiber f;
        f.stack = stack_alloc();
        S.f.push_back(f);
    }
    S.tid.resize(S.nthreads);
    for (int t = 0; t < S.nthreads; t++)
        S.tid[t] = u3(t % b.x, t / b.x % b.y, t / (b.x * b.y));
    S.q.assign(S.nthreads, 0);
    S.w.assign((S.nthreads + 31) / 32, warp());
    for (size_t wi = 0; wi < S.w.size(); wi++) {
        const int n = S.nthreads - (int)wi * 32 < 32 ? S.nthreads - (int)wi * 32 : 32;
        S.w[wi].nlanes = n;
        S.w[wi].lanes = n == 32 ? 0xffffffffu : (1u << n) - 1u;
    }
#ifdef EMU_ASAN
    /* exactly the launch's bytes: ASan reports any access past them */
    S.dyn = (char *)malloc(S.smem);
    S.dyn_cap = S.smem;
#else
    if (S.dyn_cap < S.smem + GUARD_BYTES) {
        free(S.dyn);
        S.dyn_cap = EMU_SMEM_OPTIN_BYTES + GUARD_BYTES;
        S.dyn = (char *)malloc(S.dyn_cap);
    }
#endif
    if (!S.dyn && S.dyn_cap > 0)
        emu_fail("no memory for shared memory");
    S.cur = -1;
    return 0;
}

void emu_check_pointer_arg(const void *p, int i)
{
    if (p && !emu_dev_range(p, 0))
        emu_fail("kernel %s: argument %d (%p) is not in device memory", S.kernel, i, p);
}

/* The host side of the switches: this thread's stack, for ASan. */
static void host_ctx_init(void)
{
    S.host.bottom = nullptr;
    S.host.size = 0;
#ifdef EMU_ASAN
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        void *addr;
        size_t size;
        pthread_attr_getstack(&a, &addr, &size);
        S.host.bottom = addr;
        S.host.size = size;
        pthread_attr_destroy(&a);
    }
#endif
}

void emu_launch_run(void (*body)(void *), void *ctx)
{
    S.body = body;
    S.body_ctx = ctx;
    host_ctx_init();
    const dim3 g = emu_grid_dim;
    uint64_t serial = 0;
    for (unsigned z = 0; z < g.z; z++)
        for (unsigned y = 0; y < g.y; y++)
            for (unsigned x = 0; x < g.x; x++, serial++) {
                emu_block_idx = u3(x, y, z);
                S.reverse = serial & 1;
                run_block();
            }
}

void emu_launch_end(void)
{
#ifdef EMU_ASAN
    free(S.dyn);
    S.dyn = nullptr;
    S.dyn_cap = 0;
#endif
    S.kernel = nullptr;
    emu_thread_idx = nullptr;
    t_in_launch = false;
    S.lock.unlock();
}
