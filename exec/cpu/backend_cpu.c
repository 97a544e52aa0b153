/* backend_cpu.c: the cpu backend of the executor (backend.h): host memory,
 * the cpu kernels (kernels/cpu/ops_cpu.h: fp32 loops and OpenBLAS), a
 * monotonic clock around every op, and its table, whose communication
 * entries come from backend_cpu_mpi.c (MPI for the pipeline messages and
 * the TP / DP / EMBED collectives) or backend_cpu_solo.c (a build without
 * MPI: one rank); see backend_cpu_priv.h.
 *
 * What this file is: the parts of the table every cpu backend has, each
 * call done before it returns, and the registry's hooks. What it is not:
 * the model (model/gpt.h), the walk over the op lists (runner_step.c) or
 * communication.
 */
#define _POSIX_C_SOURCE 200809L
#include "backend_cpu.h"
#include "backend_cpu_priv.h"
#include "gc_cpu.h"
#include "ops_cpu.h"
#include "wait_clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct oc_cpu_be *cpu_of(struct oc_backend *b) { return b->impl; }

/* ------------------------------------------------------------------ */
/* Memory                                                               */

static void *cpu_alloc(struct oc_backend *b, int64_t bytes)
{
    (void)b;
    OC_ASSERT(bytes > 0);
    return oc_xmalloc((size_t)bytes);
}

static void cpu_free(struct oc_backend *b, void *p)
{
    (void)b;
    free(p);
}

static void cpu_zero(struct oc_backend *b, void *p, int64_t bytes)
{
    (void)b;
    memset(p, 0, (size_t)bytes);
}

static void cpu_copy(struct oc_backend *b, void *dst, const void *src, int64_t bytes)
{
    (void)b;
    memcpy(dst, src, (size_t)bytes);
}

static int cpu_adopt(struct oc_backend *b, struct oc_params *p, struct oc_status *st)
{
    (void)b, (void)p, (void)st;
    return 0;
}

static void cpu_release(struct oc_backend *b, struct oc_params *p)
{
    (void)b, (void)p;
}

static void cpu_p2p_begin(struct oc_backend *b) { (void)b; }

static int cpu_p2p_end(struct oc_backend *b, struct oc_status *st)
{
    (void)b, (void)st;
    return 0;
}

int oc_cpu_solo_fail(struct oc_status *st)
{
    return oc_fail(st, "the cpu backend of this build has no MPI: it runs one rank "
                       "(tp1-pp1-dp1) only");
}

/* ------------------------------------------------------------------ */
/* Timing                                                               */

static void cpu_step_begin(struct oc_backend *b, int64_t nops)
{
    struct oc_cpu_be *k = cpu_of(b);
    if (nops > k->cap) {
        k->cap = nops;
        k->S = oc_xrealloc(k->S, (size_t)nops * sizeof *k->S);
        k->E = oc_xrealloc(k->E, (size_t)nops * sizeof *k->E);
        k->I = oc_xrealloc(k->I, (size_t)nops * sizeof *k->I);
        k->in_t = oc_xrealloc(k->in_t, (size_t)nops * sizeof *k->in_t);
    }
    k->nops = nops;
    memset(k->S, 0, (size_t)nops * sizeof *k->S);
    memset(k->E, 0, (size_t)nops * sizeof *k->E);
    memset(k->I, 0, (size_t)nops * sizeof *k->I);
    k->t0 = oc_now_s();
}

static void cpu_mark(struct oc_backend *b, enum oc_mark m, int64_t op, enum oc_stream s)
{
    (void)s;
    struct oc_cpu_be *k = cpu_of(b);
    OC_ASSERT(op >= 0 && op < k->nops);
    const double t = oc_now_s() - k->t0;
    switch (m) {
    case OC_MARK_START: k->S[op] = t; break;
    case OC_MARK_END:
    case OC_MARK_COMPLETED: k->E[op] = t; break;
    case OC_MARK_INNER_START: k->in_t[op] = t; break;
    case OC_MARK_INNER_END: k->I[op] += t - k->in_t[op]; break;
    case OC_MARK_ISSUED: break;
    }
}

static int cpu_step_end(struct oc_backend *b, double *start, double *end, double *inner,
                        double *end_s, int64_t *stuck_op, struct oc_status *st)
{
    (void)st;
    struct oc_cpu_be *k = cpu_of(b);
    *end_s = oc_now_s() - k->t0;
    *stuck_op = -1;
    memcpy(start, k->S, (size_t)k->nops * sizeof *start);
    memcpy(end, k->E, (size_t)k->nops * sizeof *end);
    memcpy(inner, k->I, (size_t)k->nops * sizeof *inner);
    return 0;
}

static double cpu_mem_peak(struct oc_backend *b)
{
    (void)b;
    return 0;
}

static void cpu_free_backend(struct oc_backend *b)
{
    struct oc_cpu_be *k = cpu_of(b);
    if (!k)
        return;
    free(k->S);
    free(k->E);
    free(k->I);
    free(k->in_t);
    oc_cpu_comm_release(k);
    free(k);
    b->impl = NULL;
}

static const struct oc_backend_ops cpu_ops = {
    .alloc = cpu_alloc,
    .free = cpu_free,
    .zero = cpu_zero,
    .copy = cpu_copy,
    .upload = cpu_copy,
    .download = cpu_copy,
    .params_adopt = cpu_adopt,
    .params_release = cpu_release,
    .tp_allreduce = oc_cpu_tp_allreduce,
    .tp_allgather = oc_cpu_tp_allgather,
    .tp_reduce_scatter = oc_cpu_tp_reduce_scatter,
    .embed_allreduce = oc_cpu_embed_allreduce,
    .p2p_begin = cpu_p2p_begin,
    .p2p_end = cpu_p2p_end,
    .send = oc_cpu_send,
    .recv = oc_cpu_recv,
    .dp_allreduce_start = oc_cpu_dp_allreduce_start,
    .dp_reduce_scatter_start = oc_cpu_dp_reduce_scatter_start,
    .dp_allgather = oc_cpu_dp_allgather,
    .dp_alltoall = oc_cpu_dp_alltoall,
    .test = oc_cpu_test,
    .wait = oc_cpu_wait,
    .step_begin = cpu_step_begin,
    .mark = cpu_mark,
    .step_end = cpu_step_end,
    .mem_peak_bytes = cpu_mem_peak,
    .free_backend = cpu_free_backend,
};

void oc_cpu_be_attach(struct oc_backend *b, struct oc_ctl *ctl)
{
    b->ops = &cpu_ops;
    b->impl = oc_xcalloc(1, sizeof(struct oc_cpu_be));
    b->ctl = ctl;
    b->kernels = oc_kernels_cpu();
    b->gc = oc_gc_kernels_cpu();
}

/* ------------------------------------------------------------------ */
/* The registry's hooks (backends.h)                                    */

int oc_backend_cpu_open(struct oc_backend *b, struct oc_ctl *ctl,
                        const struct oc_backend_job *job, struct oc_status *st)
{
    if (oc_ctl_is_mpi(ctl))
        return oc_cpu_open_mpi(b, ctl, job, st);
    if (ctl->size != 1)
        return oc_fail(st, "the cpu backend without MPI runs one rank, not %d", ctl->size);
    oc_cpu_be_attach(b, ctl);
    return 0;
}

int oc_backend_cpu_calibrate(struct oc_ctl *ctl, const struct oc_backend_job *job,
                             const char *out_path, struct oc_status *st)
{
    return oc_cpu_calibrate_mpi(ctl, job, out_path, st);
}

int oc_backend_cpu_netbw(struct oc_ctl *ctl, const struct oc_netbw_opts *o,
                         const struct oc_net_map *map, struct oc_netbw_result *r,
                         struct oc_status *st)
{
    return oc_cpu_netbw_mpi(ctl, o, map, r, st);
}
