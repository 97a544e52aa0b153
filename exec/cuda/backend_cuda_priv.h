/* backend_cuda_priv.h: what the files of the cuda backend share, and
 * nothing else: the backend's state (struct oc_cuda_be, behind
 * oc_backend.impl), its requests and per-op events, and the functions one
 * file of the backend calls in another or puts in the table (prefix
 * oc_cuda_be_).
 *
 *   backend_cuda.c         set-up, tear-down, the table, the streams and
 *                          how they wait for each other, the p2p order check
 *   backend_cuda_mem.c     device memory, the parameter arena, the peak
 *   backend_cuda_comm.c    NCCL collectives, pipeline messages, requests
 *   backend_cuda_timing.c  the per-op events and their reading (step_end)
 *
 * What it is not: an interface for anything outside the backend (the
 * runner uses backend.h's table, main.c backend_cuda.h).
 *
 *   struct oc_cuda_be *x = oc_cuda_be_of(b);
 *   oc_cuda_be_follow_compute(x, x->dp);   // dp starts where compute is
 */
#ifndef OC_EXEC_BACKEND_CUDA_PRIV_H
#define OC_EXEC_BACKEND_CUDA_PRIV_H

#include <stdint.h>

#include "backend_cuda.h"
#include "comm_nccl.h"
#include "ops_cuda.h"
#include "p2p_order.h"

/* A send's or an async collective's completion. */
struct oc_cuda_req {
    cudaEvent_t ev;          /* recorded after the NCCL call (no timing) */
    struct oc_cuda_req *next; /* free list */
    struct oc_cuda_req *all;  /* every request made (freed at the end, also
                                 those a failed step left outstanding) */
};

/* The events of one op of the list. */
struct oc_cuda_op_ev {
    cudaEvent_t start, end;
    int has_start, has_end;
    int end_issued;          /* end came from OC_MARK_ISSUED: END ignored */
    int dir;                 /* a pipeline op's stream (enum pp_dir), else -1 */
    int64_t ninner;          /* inner pairs recorded this step */
    int inner_open;          /* an INNER_START waits for its INNER_END */
    int64_t cap_inner;       /* pairs created */
    cudaEvent_t *inner;      /* (cap_inner, 2): start, end */
};

/* The two pipeline streams: messages to a higher world rank go up
 * (core/p2p_order.h, oc_p2p_stream_of). */
enum pp_dir {
    PP_UP = OC_P2P_UP,
    PP_DOWN = OC_P2P_DOWN,
    PP_DIRS = OC_P2P_STREAMS
};

struct oc_cuda_be {
    struct oc_ctl *ctl;
    int device;
    enum oc_cuda_dtype dtype;

    cudaStream_t compute, dp;
    cudaStream_t pp[PP_DIRS]; /* pipeline messages by direction */
    cudaEvent_t fork;         /* compute -> pp / dp (no timing) */
    cudaEvent_t join;         /* pp / dp -> compute (no timing) */
    cudaEvent_t tail[2 + PP_DIRS]; /* step_end: one per stream (no timing) */
    struct oc_cuda_blas blas;
    int blas_made;
    struct oc_cuda_kernels kern; /* the kernel table's state (on compute) */
    struct oc_kernels kt;        /* {cuda table, &kern}: b->kernels */
    struct oc_nccl nccl;
    int nccl_made;
    cudaMemPool_t pool;       /* the device's default pool */

    /* params_adopt */
    struct oc_params *p;      /* the adopted arena, NULL before */
    double malloc_bytes;      /* live cudaMalloc bytes (arena, blas) */
    double malloc_high_bytes;

    /* p2p */
    int in_group;
    int group_recv[PP_DIRS];  /* the open run received on that stream */
    int64_t pp_op;            /* a pipeline op whose START mark waits for its
                                 send / recv call (the stream), else -1 */
    int pp_last;              /* the stream of the last pipeline call */
    int64_t *sent, *received; /* (ctl->size) messages to / from each rank */

    struct oc_cuda_req *free_reqs;
    struct oc_cuda_req *all_reqs;

    /* timing */
    int in_step;
    int64_t nops, cap_ops;
    struct oc_cuda_op_ev *ev; /* (cap_ops) */
    cudaEvent_t step_start;
};

/* backend_cuda.c: the state behind b, event queries, stream order */
struct oc_cuda_be *oc_cuda_be_of(struct oc_backend *b);
int oc_cuda_be_event_done(cudaEvent_t ev);
void oc_cuda_be_follow_compute(struct oc_cuda_be *x, cudaStream_t s);
void oc_cuda_be_compute_follow(struct oc_cuda_be *x, cudaStream_t s);

/* backend_cuda_mem.c */
void oc_cuda_be_count_malloc(struct oc_cuda_be *x, double bytes);
void oc_cuda_be_weights_changed(struct oc_cuda_be *x);
void *oc_cuda_be_alloc(struct oc_backend *b, int64_t bytes);
void oc_cuda_be_free(struct oc_backend *b, void *p);
void oc_cuda_be_zero(struct oc_backend *b, void *p, int64_t bytes);
void oc_cuda_be_copy(struct oc_backend *b, void *dst, const void *src, int64_t bytes);
void oc_cuda_be_upload(struct oc_backend *b, void *dst, const void *host, int64_t bytes);
void oc_cuda_be_download(struct oc_backend *b, void *host, const void *src,
                         int64_t bytes);
int oc_cuda_be_params_adopt(struct oc_backend *b, struct oc_params *p,
                            struct oc_status *st);
void oc_cuda_be_params_release(struct oc_backend *b, struct oc_params *p);
double oc_cuda_be_mem_peak_bytes(struct oc_backend *b);

/* backend_cuda_comm.c */
int oc_cuda_be_tp_allreduce(struct oc_backend *b, float *buf, int64_t n,
                            enum oc_gpt_reduce op, struct oc_status *st);
int oc_cuda_be_tp_allgather(struct oc_backend *b, float *buf, int64_t n,
                            struct oc_status *st);
int oc_cuda_be_tp_reduce_scatter(struct oc_backend *b, const float *buf, float *shard,
                                 int64_t n, struct oc_status *st);
int oc_cuda_be_embed_allreduce(struct oc_backend *b, float *buf, int64_t n,
                               struct oc_status *st);
void oc_cuda_be_p2p_begin(struct oc_backend *b);
int oc_cuda_be_p2p_end(struct oc_backend *b, struct oc_status *st);
int oc_cuda_be_send(struct oc_backend *b, const float *buf, int64_t n, int64_t peer,
                    int64_t tag, void **req, struct oc_status *st);
int oc_cuda_be_recv(struct oc_backend *b, float *buf, int64_t n, int64_t peer,
                    int64_t tag, struct oc_status *st);
int oc_cuda_be_dp_allreduce_start(struct oc_backend *b, float *buf, int64_t n,
                                  void **req, struct oc_status *st);
int oc_cuda_be_dp_reduce_scatter_start(struct oc_backend *b, const float *send,
                                       float *recv, int64_t count, void **req,
                                       struct oc_status *st);
int oc_cuda_be_dp_allgather(struct oc_backend *b, const float *mine, float *all,
                            int64_t count, struct oc_status *st);
int oc_cuda_be_test(struct oc_backend *b, void *req);
int oc_cuda_be_wait(struct oc_backend *b, void *req, struct oc_status *st);

/* backend_cuda_timing.c */
void oc_cuda_be_step_begin(struct oc_backend *b, int64_t nops);
void oc_cuda_be_mark(struct oc_backend *b, enum oc_mark m, int64_t op,
                     enum oc_stream s);
int oc_cuda_be_step_end(struct oc_backend *b, double *start, double *end,
                        double *inner, double *end_s, int64_t *stuck_op,
                        struct oc_status *st);

#endif
