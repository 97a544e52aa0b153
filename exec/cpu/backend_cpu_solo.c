/* backend_cpu_solo.c: the cpu backend's communication in a build without
 * MPI (see backend_cpu_priv.h): one rank, so a layout with any pipeline
 * message or collective cannot run; every such call fails with one
 * message, and a request (there are none) is complete.
 *
 * What this file is not: a fallback of an MPI build (there, a job without
 * MPI is handled by backend_cpu_mpi.c).
 */
#include "backend_cpu_priv.h"

int oc_cpu_tp_allreduce(struct oc_backend *b, float *buf, int64_t n,
                        enum oc_gpt_reduce op, struct oc_status *st)
{
    (void)b, (void)buf, (void)n, (void)op;
    return oc_cpu_solo_fail(st);
}

int oc_cpu_tp_allgather(struct oc_backend *b, float *buf, int64_t n,
                        struct oc_status *st)
{
    (void)b, (void)buf, (void)n;
    return oc_cpu_solo_fail(st);
}

int oc_cpu_tp_reduce_scatter(struct oc_backend *b, const float *buf, float *shard,
                             int64_t n, struct oc_status *st)
{
    (void)b, (void)buf, (void)shard, (void)n;
    return oc_cpu_solo_fail(st);
}

int oc_cpu_embed_allreduce(struct oc_backend *b, float *buf, int64_t n,
                           struct oc_status *st)
{
    (void)b, (void)buf, (void)n;
    return oc_cpu_solo_fail(st);
}

int oc_cpu_send(struct oc_backend *b, const float *buf, int64_t n, int64_t peer,
                int64_t tag, void **req, struct oc_status *st)
{
    (void)b, (void)buf, (void)n, (void)peer, (void)tag, (void)req;
    return oc_cpu_solo_fail(st);
}

int oc_cpu_recv(struct oc_backend *b, float *buf, int64_t n, int64_t peer,
                int64_t tag, struct oc_status *st)
{
    (void)b, (void)buf, (void)n, (void)peer, (void)tag;
    return oc_cpu_solo_fail(st);
}

int oc_cpu_dp_allreduce_start(struct oc_backend *b, float *buf, int64_t n,
                              void **req, struct oc_status *st)
{
    (void)b, (void)buf, (void)n, (void)req;
    return oc_cpu_solo_fail(st);
}

int oc_cpu_dp_reduce_scatter_start(struct oc_backend *b, const float *send,
                                   float *recv, int64_t count, void **req,
                                   struct oc_status *st)
{
    (void)b, (void)send, (void)recv, (void)count, (void)req;
    return oc_cpu_solo_fail(st);
}

int oc_cpu_dp_allgather(struct oc_backend *b, const float *mine, float *all,
                        int64_t count, struct oc_status *st)
{
    (void)b, (void)mine, (void)all, (void)count;
    return oc_cpu_solo_fail(st);
}

int oc_cpu_dp_alltoall(struct oc_backend *b, const float *send, float *recv,
                       int64_t count, struct oc_status *st)
{
    (void)b, (void)send, (void)recv, (void)count;
    return oc_cpu_solo_fail(st);
}

int oc_cpu_test(struct oc_backend *b, void *req)
{
    (void)b, (void)req;
    return 1;
}

int oc_cpu_wait(struct oc_backend *b, void *req, struct oc_status *st)
{
    (void)b, (void)req, (void)st;
    return 0;
}

void oc_cpu_comm_release(struct oc_cpu_be *k)
{
    (void)k;
}

int oc_cpu_open_mpi(struct oc_backend *b, struct oc_ctl *ctl,
                    const struct oc_backend_job *job, struct oc_status *st)
{
    (void)b, (void)ctl, (void)job;
    return oc_fail(st, "this build of the cpu backend has no MPI");
}

int oc_cpu_calibrate_mpi(struct oc_ctl *ctl, const struct oc_backend_job *job,
                         const char *out_path, struct oc_status *st)
{
    (void)ctl, (void)job, (void)out_path;
    return oc_fail(st, "--calibrate of the cpu backend needs MPI, which this build lacks");
}

int oc_cpu_netbw_mpi(struct oc_ctl *ctl, const struct oc_netbw_opts *o,
                     const struct oc_net_map *map, struct oc_netbw_result *r,
                     struct oc_status *st)
{
    (void)ctl, (void)o, (void)map, (void)r;
    return oc_fail(st, "--netbw of the cpu backend needs MPI, which this build lacks");
}
