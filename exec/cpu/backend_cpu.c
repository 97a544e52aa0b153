/* backend_cpu.c: the cpu backend of the executor (backend.h): host memory,
 * the cpu kernels (kernels/cpu/ops_cpu.h: fp32 loops and OpenBLAS), MPI for
 * the pipeline messages and the TP / DP / EMBED collectives (comm_mpi.h), a
 * monotonic clock around every op.
 *
 * What this file is: the table of backend.h over comm_mpi.c, each call
 * done before it returns (sends and async DP collectives return an MPI
 * request), and the cpu kernel table. What it is not: the model
 * (model/gpt.h) or the walk over the op lists (runner.c).
 *
 * Without MPI (oc_backend_cpu_solo_init) the same table runs one rank:
 * every communication call fails with a message (a one-rank layout has
 * none).
 */
#define _POSIX_C_SOURCE 200809L
#include "backend_cpu.h"
#include "ops_cpu.h"
#include "wait_clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef OC_HAVE_MPI
#include "calibrate_cpu.h"
#endif

struct cpu {
#ifdef OC_HAVE_MPI
    struct oc_comm *comm; /* NULL: solo */
    int own_comm;         /* comm is freed with the backend (open) */
    int tag_ub;           /* MPI's largest tag */
#endif
    double t0;            /* step_begin */
    double *S, *E, *I;    /* (cap) op times of the step */
    double *in_t;         /* (cap) INNER_START of the op's open segment */
    int64_t nops, cap;
};

static struct cpu *cpu_of(struct oc_backend *b) { return b->impl; }


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

/* ------------------------------------------------------------------ */
/* Communication                                                        */

#ifdef OC_HAVE_MPI
/* The ctl names what the runner waits for; comm_mpi's waits say it. */
static struct oc_comm *comm_of(struct oc_backend *b)
{
    struct oc_comm *c = cpu_of(b)->comm;
    snprintf(c->what, sizeof c->what, "%s", b->ctl->what);
    return c;
}

static int after(struct oc_backend *b, int rc)
{
    if (rc != 0 && cpu_of(b)->comm->timed_out)
        b->ctl->timed_out = 1;
    return rc;
}
#endif

static int solo(struct oc_backend *b, struct oc_status *st)
{
#ifdef OC_HAVE_MPI
    if (cpu_of(b)->comm)
        return 0;
#else
    (void)b;
#endif
    return oc_fail(st, "the cpu backend of this build has no MPI: it runs one rank "
                       "(tp1-pp1-dp1) only");
}

static int cpu_tp_allreduce(struct oc_backend *b, float *buf, int64_t n,
                            enum oc_gpt_reduce op, struct oc_status *st)
{
    if (solo(b, st) != 0)
        return -1;
#ifdef OC_HAVE_MPI
    struct oc_comm *c = comm_of(b);
    return after(b, oc_comm_allreduce(c, c->tp, buf, n, MPI_FLOAT,
                                      op == OC_GPT_MAX ? MPI_MAX : MPI_SUM, st));
#else
    (void)buf, (void)n, (void)op;
    return -1;
#endif
}

static int cpu_embed_allreduce(struct oc_backend *b, float *buf, int64_t n,
                               struct oc_status *st)
{
    if (solo(b, st) != 0)
        return -1;
#ifdef OC_HAVE_MPI
    struct oc_comm *c = comm_of(b);
    if (c->embed == MPI_COMM_NULL)
        return oc_fail(st, "an embedding all-reduce on a rank outside the EMBED group");
    return after(b, oc_comm_allreduce(c, c->embed, buf, n, MPI_FLOAT, MPI_SUM, st));
#else
    (void)buf, (void)n;
    return -1;
#endif
}

static void cpu_p2p_begin(struct oc_backend *b) { (void)b; }

static int cpu_p2p_end(struct oc_backend *b, struct oc_status *st)
{
    (void)b, (void)st;
    return 0;
}

static int cpu_send(struct oc_backend *b, const float *buf, int64_t n, int64_t peer,
                    int64_t tag, void **req, struct oc_status *st)
{
    if (solo(b, st) != 0)
        return -1;
#ifdef OC_HAVE_MPI
    struct cpu *k = cpu_of(b);
    if (tag > k->tag_ub)
        return oc_fail(st, "pipeline tag %lld exceeds MPI's limit %d (too many "
                           "micro-batches)", (long long)tag, k->tag_ub);
    MPI_Request *rq = oc_xmalloc(sizeof *rq);
    mpiCheck(MPI_Isend(buf, oc_mpi_count(n), MPI_FLOAT, (int)peer, (int)tag,
                       k->comm->world, rq));
    *req = rq;
    return 0;
#else
    (void)buf, (void)n, (void)peer, (void)tag, (void)req;
    return -1;
#endif
}

static int cpu_recv(struct oc_backend *b, float *buf, int64_t n, int64_t peer,
                    int64_t tag, struct oc_status *st)
{
    if (solo(b, st) != 0)
        return -1;
#ifdef OC_HAVE_MPI
    struct oc_comm *c = comm_of(b);
    if (tag > cpu_of(b)->tag_ub)
        return oc_fail(st, "pipeline tag %lld exceeds MPI's limit %d (too many "
                           "micro-batches)", (long long)tag, cpu_of(b)->tag_ub);
    return after(b, oc_comm_recv(c, c->world, buf, n, MPI_FLOAT, (int)peer, (int)tag, st));
#else
    (void)buf, (void)n, (void)peer, (void)tag;
    return -1;
#endif
}

static int cpu_dp_allreduce_start(struct oc_backend *b, float *buf, int64_t n,
                                  void **req, struct oc_status *st)
{
    if (solo(b, st) != 0)
        return -1;
#ifdef OC_HAVE_MPI
    MPI_Request *rq = oc_xmalloc(sizeof *rq);
    mpiCheck(MPI_Iallreduce(MPI_IN_PLACE, buf, oc_mpi_count(n), MPI_FLOAT, MPI_SUM,
                            cpu_of(b)->comm->dp, rq));
    *req = rq;
    return 0;
#else
    (void)buf, (void)n, (void)req;
    return -1;
#endif
}

static int cpu_dp_reduce_scatter_start(struct oc_backend *b, const float *send,
                                       float *recv, int64_t count, void **req,
                                       struct oc_status *st)
{
    if (solo(b, st) != 0)
        return -1;
#ifdef OC_HAVE_MPI
    MPI_Request *rq = oc_xmalloc(sizeof *rq);
    mpiCheck(MPI_Ireduce_scatter_block(send, recv, oc_mpi_count(count), MPI_FLOAT,
                                       MPI_SUM, cpu_of(b)->comm->dp, rq));
    *req = rq;
    return 0;
#else
    (void)send, (void)recv, (void)count, (void)req;
    return -1;
#endif
}

static int cpu_dp_allgather(struct oc_backend *b, const float *mine, float *all,
                            int64_t count, struct oc_status *st)
{
    if (solo(b, st) != 0)
        return -1;
#ifdef OC_HAVE_MPI
    struct oc_comm *c = comm_of(b);
    MPI_Request rq;
    mpiCheck(MPI_Iallgather(mine, oc_mpi_count(count), MPI_FLOAT, all,
                            oc_mpi_count(count), MPI_FLOAT, c->dp, &rq));
    return after(b, oc_comm_wait(c, &rq, st));
#else
    (void)mine, (void)all, (void)count;
    return -1;
#endif
}

static int cpu_test(struct oc_backend *b, void *req)
{
    (void)b;
#ifdef OC_HAVE_MPI
    if (!oc_comm_test(req))
        return 0;
    free(req);
    return 1;
#else
    (void)req;
    return 1;
#endif
}

static int cpu_wait(struct oc_backend *b, void *req, struct oc_status *st)
{
#ifdef OC_HAVE_MPI
    int rc = after(b, oc_comm_wait(comm_of(b), req, st));
    if (rc == 0)
        free(req);
    return rc;
#else
    (void)b, (void)req, (void)st;
    return 0;
#endif
}

/* ------------------------------------------------------------------ */
/* Timing                                                               */

static void cpu_step_begin(struct oc_backend *b, int64_t nops)
{
    struct cpu *k = cpu_of(b);
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
    struct cpu *k = cpu_of(b);
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
    struct cpu *k = cpu_of(b);
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
    struct cpu *k = cpu_of(b);
    if (!k)
        return;
    free(k->S);
    free(k->E);
    free(k->I);
    free(k->in_t);
#ifdef OC_HAVE_MPI
    if (k->own_comm) {
        oc_comm_free(k->comm);
        free(k->comm);
    }
#endif
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
    .tp_allreduce = cpu_tp_allreduce,
    .embed_allreduce = cpu_embed_allreduce,
    .p2p_begin = cpu_p2p_begin,
    .p2p_end = cpu_p2p_end,
    .send = cpu_send,
    .recv = cpu_recv,
    .dp_allreduce_start = cpu_dp_allreduce_start,
    .dp_reduce_scatter_start = cpu_dp_reduce_scatter_start,
    .dp_allgather = cpu_dp_allgather,
    .test = cpu_test,
    .wait = cpu_wait,
    .step_begin = cpu_step_begin,
    .mark = cpu_mark,
    .step_end = cpu_step_end,
    .mem_peak_bytes = cpu_mem_peak,
    .free_backend = cpu_free_backend,
};

#ifdef OC_HAVE_MPI
int oc_backend_cpu_init(struct oc_backend *b, struct oc_ctl *ctl, struct oc_comm *comm,
                        struct oc_status *st)
{
    (void)st;
    struct cpu *k = oc_xcalloc(1, sizeof *k);
    k->comm = comm;
    int *tag_ub = NULL, flag = 0;
    mpiCheck(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag));
    k->tag_ub = flag && tag_ub ? *tag_ub : 32767; /* the standard's minimum */
    b->ops = &cpu_ops;
    b->impl = k;
    b->ctl = ctl;
    b->kernels = oc_kernels_cpu();
    return 0;
}
#endif

int oc_backend_cpu_solo_init(struct oc_backend *b, struct oc_ctl *ctl,
                             struct oc_status *st)
{
    if (ctl->size != 1)
        return oc_fail(st, "the cpu backend without MPI runs one rank, not %d", ctl->size);
    struct cpu *k = oc_xcalloc(1, sizeof *k);
    b->ops = &cpu_ops;
    b->impl = k;
    b->ctl = ctl;
    b->kernels = oc_kernels_cpu();
    return 0;
}

/* ------------------------------------------------------------------ */
/* The registry's hooks (backends.h)                                    */

int oc_backend_cpu_open(struct oc_backend *b, struct oc_ctl *ctl,
                        const struct oc_backend_job *job, struct oc_status *st)
{
#ifdef OC_HAVE_MPI
    if (oc_ctl_is_mpi(ctl)) {
        struct oc_comm *cm = oc_xmalloc(sizeof *cm);
        if (oc_comm_init(cm, job->layout, job->timeout_s, st) != 0) {
            free(cm);
            return -1;
        }
        if (oc_backend_cpu_init(b, ctl, cm, st) != 0) {
            oc_comm_free(cm);
            free(cm);
            return -1;
        }
        cpu_of(b)->own_comm = 1;
        return 0;
    }
#else
    (void)job;
#endif
    return oc_backend_cpu_solo_init(b, ctl, st);
}

int oc_backend_cpu_calibrate(struct oc_ctl *ctl, const struct oc_backend_job *job,
                             const char *out_path, struct oc_status *st)
{
#ifdef OC_HAVE_MPI
    if (!oc_ctl_is_mpi(ctl))
        return oc_fail(st, "--calibrate of the cpu backend needs MPI (one process per "
                           "rank): run it without --no-mpi");
    struct oc_cpu_calib_opts co = OC_CPU_CALIB_OPTS_DEFAULT;
    co.model = job->model;
    co.base = job->topo;
    co.seq = job->layout->seq_length;
    co.micro_batch = job->layout->micro_batch;
    co.tp = job->layout->tp;
    co.out_path = out_path;
    co.comm = oc_ctl_mpi_comm(ctl);
    co.log = ctl->rank == 0 ? stdout : NULL;
    return oc_cpu_calibrate(&co, st);
#else
    (void)ctl, (void)job, (void)out_path;
    return oc_fail(st, "--calibrate of the cpu backend needs MPI, which this build lacks");
#endif
}
