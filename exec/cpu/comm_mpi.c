/* comm_mpi.c: communicators of a layout and their deadline waits (see
 * comm_mpi.h; the wait loop itself is exec/mpi_wait.c). */
#define _POSIX_C_SOURCE 200809L
#include "comm_mpi.h"

#include <stdarg.h>
#include <string.h>

/* One MPI_Comm_split for group g: colour the smallest member, key the
 * position in oc_schedule_group's ring order. */
static int split(const struct oc_layout *l, int rank, enum oc_group g,
                 MPI_Comm *out, int *size, struct oc_status *st)
{
    int64_t world = oc_layout_world(l);
    int64_t *members = oc_xmalloc((size_t)world * sizeof *members);
    int64_t n = oc_schedule_group(l, rank, g, members, world);
    OC_ASSERT(n >= 1 && n <= world);
    int64_t lo = members[0], pos = -1;
    for (int64_t i = 0; i < n; i++) {
        if (members[i] < lo)
            lo = members[i];
        if (members[i] == rank)
            pos = i;
    }
    free(members);
    int colour = pos >= 0 ? (int)lo : MPI_UNDEFINED;
    mpiCheck(MPI_Comm_split(MPI_COMM_WORLD, colour, pos >= 0 ? (int)pos : 0, out));
    *size = 0;
    if (*out != MPI_COMM_NULL) {
        mpiCheck(MPI_Comm_size(*out, size));
        if (*size != n)
            return oc_fail(st, "exec: rank %d: the %s group has %d ranks in MPI "
                               "and %lld in the schedule", rank,
                           oc_group_name(g), *size, (long long)n);
    }
    return 0;
}

int oc_comm_init(struct oc_comm *c, const struct oc_layout *l, double timeout_s,
                 struct oc_status *st)
{
    memset(c, 0, sizeof *c);
    c->world = MPI_COMM_WORLD;
    c->ctl = c->tp = c->dp = c->embed = MPI_COMM_NULL;
    OC_ASSERT(timeout_s > 0);
    c->timeout_s = timeout_s;
    /* Errors come back to mpiCheck, which names the call and the line. */
    mpiCheck(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    mpiCheck(MPI_Comm_rank(MPI_COMM_WORLD, &c->rank));
    mpiCheck(MPI_Comm_size(MPI_COMM_WORLD, &c->size));
    if (c->size != oc_layout_world(l))
        return oc_fail(st, "exec: the layout has %lld ranks, MPI %d",
                       (long long)oc_layout_world(l), c->size);
    mpiCheck(MPI_Comm_dup(MPI_COMM_WORLD, &c->ctl));
    if (split(l, c->rank, OC_GROUP_TP, &c->tp, &c->tp_size, st) != 0 ||
        split(l, c->rank, OC_GROUP_DP, &c->dp, &c->dp_size, st) != 0 ||
        split(l, c->rank, OC_GROUP_EMBED, &c->embed, &c->embed_size, st) != 0)
        return -1;
    snprintf(c->what, sizeof c->what, "set-up");
    return 0;
}

void oc_comm_free(struct oc_comm *c)
{
    MPI_Comm *all[] = {&c->embed, &c->dp, &c->tp, &c->ctl};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (*all[i] != MPI_COMM_NULL)
            MPI_Comm_free(all[i]);
}

MPI_Comm oc_comm_of(const struct oc_comm *c, enum oc_group g)
{
    switch (g) {
    case OC_GROUP_TP: return c->tp;
    case OC_GROUP_DP: return c->dp;
    case OC_GROUP_EMBED: return c->embed;
    default: return MPI_COMM_NULL;
    }
}

void oc_comm_set_what(struct oc_comm *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->what, sizeof c->what, fmt, ap);
    va_end(ap);
}

int oc_comm_test(MPI_Request *req) { return oc_mpi_test(req); }

int oc_comm_wait(struct oc_comm *c, MPI_Request *req, struct oc_status *st)
{
    c->waits++;
    return oc_mpi_wait(req, c->timeout_s, c->what, &c->timed_out, st);
}

int oc_comm_allreduce(struct oc_comm *c, MPI_Comm comm, void *buf, int64_t n,
                      MPI_Datatype type, MPI_Op op, struct oc_status *st)
{
    MPI_Request rq;
    mpiCheck(MPI_Iallreduce(MPI_IN_PLACE, buf, oc_mpi_count(n), type, op, comm, &rq));
    return oc_comm_wait(c, &rq, st);
}

int oc_comm_barrier(struct oc_comm *c, MPI_Comm comm, struct oc_status *st)
{
    MPI_Request rq;
    mpiCheck(MPI_Ibarrier(comm, &rq));
    return oc_comm_wait(c, &rq, st);
}

int oc_comm_bcast(struct oc_comm *c, MPI_Comm comm, void *buf, int64_t n,
                  MPI_Datatype type, int root, struct oc_status *st)
{
    MPI_Request rq;
    mpiCheck(MPI_Ibcast(buf, oc_mpi_count(n), type, root, comm, &rq));
    return oc_comm_wait(c, &rq, st);
}

int oc_comm_send(struct oc_comm *c, MPI_Comm comm, const void *buf, int64_t n,
                 MPI_Datatype type, int dest, int tag, struct oc_status *st)
{
    MPI_Request rq;
    mpiCheck(MPI_Isend(buf, oc_mpi_count(n), type, dest, tag, comm, &rq));
    return oc_comm_wait(c, &rq, st);
}

int oc_comm_recv(struct oc_comm *c, MPI_Comm comm, void *buf, int64_t n,
                 MPI_Datatype type, int src, int tag, struct oc_status *st)
{
    MPI_Request rq;
    mpiCheck(MPI_Irecv(buf, oc_mpi_count(n), type, src, tag, comm, &rq));
    return oc_comm_wait(c, &rq, st);
}

int oc_comm_gather(struct oc_comm *c, MPI_Comm comm, const void *send,
                   void *recv, int64_t n, MPI_Datatype type, int root,
                   struct oc_status *st)
{
    MPI_Request rq;
    int cnt = oc_mpi_count(n);
    mpiCheck(MPI_Igather(send, cnt, type, recv, cnt, type, root, comm, &rq));
    return oc_comm_wait(c, &rq, st);
}
