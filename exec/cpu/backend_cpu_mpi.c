/* backend_cpu_mpi.c: the cpu backend's communication over MPI (builds with
 * MPI; see backend_cpu_priv.h): the pipeline messages and the TP / DP /
 * EMBED collectives on the layout's communicators (comm_mpi.h), each call
 * done before it returns except sends and the async DP collectives, which
 * return an MPI request. A job run without MPI (--no-mpi) has no
 * communicators and one rank: then every call fails with a message.
 *
 * What this file is not: the rest of the table (backend_cpu.c) or the
 * communicators and their deadline waits (comm_mpi.c).
 */
#include "backend_cpu_priv.h"
#include "calibrate_cpu.h"
#include "comm_mpi.h"

#include <stdio.h>
#include <stdlib.h>

static struct oc_cpu_be *cpu_of(struct oc_backend *b) { return b->impl; }

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

/* 0 when this rank has communicators, else the one-rank message. */
static int solo(struct oc_backend *b, struct oc_status *st)
{
    return cpu_of(b)->comm ? 0 : oc_cpu_solo_fail(st);
}

static int tag_ok(struct oc_backend *b, int64_t tag, struct oc_status *st)
{
    if (tag > cpu_of(b)->tag_ub)
        return oc_fail(st, "pipeline tag %lld exceeds MPI's limit %d (too many "
                           "micro-batches)", (long long)tag, cpu_of(b)->tag_ub);
    return 0;
}

int oc_cpu_tp_allreduce(struct oc_backend *b, float *buf, int64_t n,
                        enum oc_gpt_reduce op, struct oc_status *st)
{
    if (solo(b, st) != 0)
        return -1;
    struct oc_comm *c = comm_of(b);
    return after(b, oc_comm_allreduce(c, c->tp, buf, n, MPI_FLOAT,
                                      op == OC_GPT_MAX ? MPI_MAX : MPI_SUM, st));
}

/* The n/t floats of one TP rank's share of n. */
static int64_t tp_share(const struct oc_comm *c, int64_t n)
{
    OC_ASSERT(c->tp_size >= 1 && n % c->tp_size == 0);
    return n / c->tp_size;
}

int oc_cpu_tp_allgather(struct oc_backend *b, float *buf, int64_t n,
                        struct oc_status *st)
{
    if (solo(b, st) != 0)
        return -1;
    struct oc_comm *c = comm_of(b);
    const int cnt = oc_mpi_count(tp_share(c, n));
    MPI_Request rq;
    /* in place: this rank's block is where its contribution lands */
    mpiCheck(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, cnt, MPI_FLOAT,
                            c->tp, &rq));
    return after(b, oc_comm_wait(c, &rq, st));
}

int oc_cpu_tp_reduce_scatter(struct oc_backend *b, const float *buf, float *shard,
                             int64_t n, struct oc_status *st)
{
    if (solo(b, st) != 0)
        return -1;
    struct oc_comm *c = comm_of(b);
    const int cnt = oc_mpi_count(tp_share(c, n));
    MPI_Request rq;
    mpiCheck(MPI_Ireduce_scatter_block(buf, shard, cnt, MPI_FLOAT, MPI_SUM, c->tp, &rq));
    return after(b, oc_comm_wait(c, &rq, st));
}

int oc_cpu_embed_allreduce(struct oc_backend *b, float *buf, int64_t n,
                           struct oc_status *st)
{
    if (solo(b, st) != 0)
        return -1;
    struct oc_comm *c = comm_of(b);
    if (c->embed == MPI_COMM_NULL)
        return oc_fail(st, "an embedding all-reduce on a rank outside the EMBED group");
    return after(b, oc_comm_allreduce(c, c->embed, buf, n, MPI_FLOAT, MPI_SUM, st));
}

int oc_cpu_send(struct oc_backend *b, const float *buf, int64_t n, int64_t peer,
                int64_t tag, void **req, struct oc_status *st)
{
    if (solo(b, st) != 0 || tag_ok(b, tag, st) != 0)
        return -1;
    MPI_Request *rq = oc_xmalloc(sizeof *rq);
    mpiCheck(MPI_Isend(buf, oc_mpi_count(n), MPI_FLOAT, (int)peer, (int)tag,
                       cpu_of(b)->comm->world, rq));
    *req = rq;
    return 0;
}

int oc_cpu_recv(struct oc_backend *b, float *buf, int64_t n, int64_t peer,
                int64_t tag, struct oc_status *st)
{
    if (solo(b, st) != 0)
        return -1;
    struct oc_comm *c = comm_of(b);
    if (tag_ok(b, tag, st) != 0)
        return -1;
    return after(b, oc_comm_recv(c, c->world, buf, n, MPI_FLOAT, (int)peer, (int)tag, st));
}

int oc_cpu_dp_allreduce_start(struct oc_backend *b, float *buf, int64_t n,
                              void **req, struct oc_status *st)
{
    if (solo(b, st) != 0)
        return -1;
    MPI_Request *rq = oc_xmalloc(sizeof *rq);
    mpiCheck(MPI_Iallreduce(MPI_IN_PLACE, buf, oc_mpi_count(n), MPI_FLOAT, MPI_SUM,
                            cpu_of(b)->comm->dp, rq));
    *req = rq;
    return 0;
}

int oc_cpu_dp_reduce_scatter_start(struct oc_backend *b, const float *send,
                                   float *recv, int64_t count, void **req,
                                   struct oc_status *st)
{
    if (solo(b, st) != 0)
        return -1;
    MPI_Request *rq = oc_xmalloc(sizeof *rq);
    mpiCheck(MPI_Ireduce_scatter_block(send, recv, oc_mpi_count(count), MPI_FLOAT,
                                       MPI_SUM, cpu_of(b)->comm->dp, rq));
    *req = rq;
    return 0;
}

int oc_cpu_dp_allgather(struct oc_backend *b, const float *mine, float *all,
                        int64_t count, struct oc_status *st)
{
    if (solo(b, st) != 0)
        return -1;
    struct oc_comm *c = comm_of(b);
    MPI_Request rq;
    mpiCheck(MPI_Iallgather(mine, oc_mpi_count(count), MPI_FLOAT, all,
                            oc_mpi_count(count), MPI_FLOAT, c->dp, &rq));
    return after(b, oc_comm_wait(c, &rq, st));
}

int oc_cpu_dp_alltoall(struct oc_backend *b, const float *send, float *recv,
                       int64_t count, struct oc_status *st)
{
    if (solo(b, st) != 0)
        return -1;
    struct oc_comm *c = comm_of(b);
    MPI_Request rq;
    mpiCheck(MPI_Ialltoall(send, oc_mpi_count(count), MPI_FLOAT, recv, oc_mpi_count(count),
                           MPI_FLOAT, c->dp, &rq));
    return after(b, oc_comm_wait(c, &rq, st));
}

int oc_cpu_test(struct oc_backend *b, void *req)
{
    (void)b;
    if (!oc_comm_test(req))
        return 0;
    free(req);
    return 1;
}

int oc_cpu_wait(struct oc_backend *b, void *req, struct oc_status *st)
{
    int rc = after(b, oc_comm_wait(comm_of(b), req, st));
    if (rc == 0)
        free(req);
    return rc;
}

void oc_cpu_comm_release(struct oc_cpu_be *k)
{
    if (k->own_comm) {
        oc_comm_free(k->comm);
        free(k->comm);
    }
    k->comm = NULL;
    k->own_comm = 0;
}

/* ------------------------------------------------------------------ */
/* The registry's hooks over an MPI control plane                       */

int oc_cpu_open_mpi(struct oc_backend *b, struct oc_ctl *ctl,
                    const struct oc_backend_job *job, struct oc_status *st)
{
    struct oc_comm *cm = oc_xmalloc(sizeof *cm);
    if (oc_comm_init(cm, job->layout, job->timeout_s, st) != 0) {
        free(cm);
        return -1;
    }
    oc_cpu_be_attach(b, ctl);
    struct oc_cpu_be *k = cpu_of(b);
    k->comm = cm;
    k->own_comm = 1;
    int *tag_ub = NULL, flag = 0;
    mpiCheck(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag));
    k->tag_ub = flag && tag_ub ? *tag_ub : 32767; /* the standard's minimum */
    return 0;
}

int oc_cpu_calibrate_mpi(struct oc_ctl *ctl, const struct oc_backend_job *job,
                         const char *out_path, struct oc_status *st)
{
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
}
