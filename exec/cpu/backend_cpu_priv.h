/* backend_cpu_priv.h: what the files of the cpu backend share (internal
 * to exec/cpu/): the backend's state, and the communication entries of its
 * table, which the build takes from one of two files:
 *
 *   backend_cpu_mpi.c   builds with MPI (OC_EXEC_MPI): comm_mpi.h's
 *                       communicators, or one rank when the job runs
 *                       without them (--no-mpi);
 *   backend_cpu_solo.c  builds without MPI: one rank, every communication
 *                       call fails with a message (a one-rank layout has
 *                       none).
 *
 * So the MPI seam is a choice of file in exec/cpu/CMakeLists.txt, not an
 * #ifdef in every function. What it is not: an interface for other
 * folders (backend_cpu.h is).
 */
#ifndef OC_EXEC_BACKEND_CPU_PRIV_H
#define OC_EXEC_BACKEND_CPU_PRIV_H

#include <stdint.h>

#include "backend.h"
#include "backends.h"
#include "ctl.h"
#include "netbw.h"
#include "status.h"

struct oc_comm; /* comm_mpi.h, MPI builds only */

/* The cpu backend's state (b->impl). */
struct oc_cpu_be {
    struct oc_comm *comm; /* the layout's MPI communicators; NULL: one rank */
    int own_comm;         /* comm is freed with the backend */
    int tag_ub;           /* MPI's largest tag */
    double t0;            /* step_begin */
    double *S, *E, *I;    /* (cap) op times of the step */
    double *in_t;         /* (cap) INNER_START of the op's open segment */
    int64_t nops, cap;
};

/* The table over a new state (comm NULL: one rank); backend_cpu.c. */
void oc_cpu_be_attach(struct oc_backend *b, struct oc_ctl *ctl);

/* ---- communication: backend_cpu_mpi.c or backend_cpu_solo.c ---------- */

int oc_cpu_tp_allreduce(struct oc_backend *b, float *buf, int64_t n,
                        enum oc_gpt_reduce op, struct oc_status *st);
int oc_cpu_tp_allgather(struct oc_backend *b, float *buf, int64_t n,
                        struct oc_status *st);
int oc_cpu_tp_reduce_scatter(struct oc_backend *b, const float *buf, float *shard,
                             int64_t n, struct oc_status *st);
int oc_cpu_embed_allreduce(struct oc_backend *b, float *buf, int64_t n,
                           struct oc_status *st);
int oc_cpu_send(struct oc_backend *b, const float *buf, int64_t n, int64_t peer,
                int64_t tag, void **req, struct oc_status *st);
int oc_cpu_recv(struct oc_backend *b, float *buf, int64_t n, int64_t peer,
                int64_t tag, struct oc_status *st);
int oc_cpu_dp_allreduce_start(struct oc_backend *b, float *buf, int64_t n,
                              void **req, struct oc_status *st);
int oc_cpu_dp_reduce_scatter_start(struct oc_backend *b, const float *send,
                                   float *recv, int64_t count, void **req,
                                   struct oc_status *st);
int oc_cpu_dp_allgather(struct oc_backend *b, const float *mine, float *all,
                        int64_t count, struct oc_status *st);
int oc_cpu_dp_alltoall(struct oc_backend *b, const float *send, float *recv,
                       int64_t count, struct oc_status *st);
int oc_cpu_test(struct oc_backend *b, void *req);
int oc_cpu_wait(struct oc_backend *b, void *req, struct oc_status *st);
/* Frees what the communication part of k owns (its communicators). */
void oc_cpu_comm_release(struct oc_cpu_be *k);
/* The registry's hooks over an MPI control plane (ctl is MPI): the
 * layout's communicators, the calibration, or the network between nodes
 * (netbw_mpi.c). */
int oc_cpu_open_mpi(struct oc_backend *b, struct oc_ctl *ctl,
                    const struct oc_backend_job *job, struct oc_status *st);
int oc_cpu_calibrate_mpi(struct oc_ctl *ctl, const struct oc_backend_job *job,
                         const char *out_path, struct oc_status *st);
int oc_cpu_netbw_mpi(struct oc_ctl *ctl, const struct oc_netbw_opts *o,
                     const struct oc_net_map *map, struct oc_netbw_result *r,
                     struct oc_status *st);

/* The message of a communication call on one rank. */
int oc_cpu_solo_fail(struct oc_status *st);

#endif
