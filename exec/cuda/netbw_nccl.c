/* netbw_nccl.c: `ocsim-exec --backend cuda --netbw`: the transport of
 * netbw.h over NCCL, one GPU per rank (whatever NCCL picks between the
 * nodes: InfiniBand / RoCE verbs, its socket transport; NVLink or PCIe
 * between GPUs of one machine named as nodes with --ranks-per-node).
 *
 * Communicators (comm_nccl.h): the world one for the point-to-point
 * messages, and the cross-node groups as the DP groups of the layout
 * tp<K>-pp1-dp<n> (K ranks per node, n nodes, Megatron's order: local rank
 * l of every node forms one group), which needs each node's ranks to be
 * consecutive (mpirun --map-by ppr:K:node, srun's block distribution).
 * Times are CUDA events on one stream around the calls; waits are
 * comm_nccl.h's, with the job's --timeout, aborting the communicators past
 * it. Host buffers of the checks go through cudaMemcpy.
 *
 * What it is not: the measurement (../netbw.c), or the calibration's NCCL
 * figures inside one node (calibrate_cuda_nccl.c).
 */
#include "hooks_cuda.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "comm_nccl.h"
#include "layout.h"
#include "netbw.h"

struct nccl_tx {
    struct oc_nccl nc;
    int have_nc;
    cudaStream_t stream;
    cudaEvent_t e0, e1;
    char *buf;    /* device: the messages */
    int64_t buf_bytes;
    float *ar;    /* device: the all-reduces, zeros in the timed ones */
    int64_t ar_bytes;
    int *ack;     /* device: the streams' acknowledgement */
};

#define NCCL_CHECK(call, what)                                                 \
    do {                                                                       \
        if (oc_nccl_check(&x->nc, (call), (what), st) != 0)                    \
            return -1;                                                         \
    } while (0)

/* A device buffer of at least `bytes` (grown, never shrunk); a message,
 * not an exit, when the GPU's memory is short. */
static int room(void **p, int64_t *have, int64_t bytes, struct oc_status *st)
{
    if (bytes <= *have)
        return 0;
    cudaCheck(cudaFree(*p));
    *p = NULL;
    *have = 0;
    const cudaError_t e = cudaMalloc(p, (size_t)bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* an allocation error is not sticky */
        *p = NULL;
        return oc_fail(st, "--netbw: cannot allocate %lld bytes of GPU memory: %s",
                       (long long)bytes, cudaGetErrorString(e));
    }
    cudaCheck(cudaMemset(*p, 0, (size_t)bytes));
    *have = bytes;
    return 0;
}

/* Seconds between e0 and e1 once e1 is done (the deadline's wait). */
static int elapsed(struct nccl_tx *x, double *s, struct oc_status *st)
{
    cudaCheck(cudaEventRecord(x->e1, x->stream));
    if (oc_nccl_wait_event(&x->nc, x->e1, st) != 0)
        return -1;
    float ms = 0;
    cudaCheck(cudaEventElapsedTime(&ms, x->e0, x->e1));
    *s = 1e-3 * (double)ms;
    return 0;
}

static int tx_pingpong(void *ctx, int peer, int first, int64_t bytes, int iters, double *s,
                       struct oc_status *st)
{
    struct nccl_tx *x = ctx;
    if (room((void **)&x->buf, &x->buf_bytes, bytes, st) != 0)
        return -1;
    const int warm = 2;
    for (int it = 0; it < warm + iters; it++) {
        if (it == warm)
            cudaCheck(cudaEventRecord(x->e0, x->stream));
        for (int half = 0; half < 2; half++) {
            if (half == !first) /* the sender's half */
                NCCL_CHECK(ncclSend(x->buf, (size_t)bytes, ncclInt8, peer, x->nc.world,
                                    x->stream), "ncclSend");
            else
                NCCL_CHECK(ncclRecv(x->buf, (size_t)bytes, ncclInt8, peer, x->nc.world,
                                    x->stream), "ncclRecv");
        }
    }
    return elapsed(x, s, st);
}

static int tx_stream(void *ctx, int peer, int send, int64_t bytes, int iters, int window,
                     double *s, struct oc_status *st)
{
    struct nccl_tx *x = ctx;
    (void)window; /* NCCL keeps the stream's messages in flight itself */
    if (room((void **)&x->buf, &x->buf_bytes, bytes, st) != 0)
        return -1;
    cudaCheck(cudaEventRecord(x->e0, x->stream));
    for (int it = 0; it < iters; it++)
        NCCL_CHECK(send ? ncclSend(x->buf, (size_t)bytes, ncclInt8, peer, x->nc.world,
                                   x->stream)
                        : ncclRecv(x->buf, (size_t)bytes, ncclInt8, peer, x->nc.world,
                                   x->stream),
                   send ? "ncclSend" : "ncclRecv");
    NCCL_CHECK(send ? ncclRecv(x->ack, 1, ncclInt32, peer, x->nc.world, x->stream)
                    : ncclSend(x->ack, 1, ncclInt32, peer, x->nc.world, x->stream),
               "the stream's acknowledgement");
    return elapsed(x, s, st);
}

static int tx_allreduce(void *ctx, int64_t bytes, int iters, double *s, struct oc_status *st)
{
    struct nccl_tx *x = ctx;
    if (room((void **)&x->ar, &x->ar_bytes, bytes, st) != 0)
        return -1;
    cudaCheck(cudaMemsetAsync(x->ar, 0, (size_t)bytes, x->stream)); /* sums stay 0 */
    const int warm = 2;
    for (int it = 0; it < warm + iters; it++) {
        if (it == warm)
            cudaCheck(cudaEventRecord(x->e0, x->stream));
        NCCL_CHECK(ncclAllReduce(x->ar, x->ar, (size_t)(bytes / 4), ncclFloat, ncclSum,
                                 x->nc.dp, x->stream), "ncclAllReduce");
    }
    return elapsed(x, s, st);
}

static int tx_send_host(void *ctx, int peer, const void *buf, int64_t bytes,
                        struct oc_status *st)
{
    struct nccl_tx *x = ctx;
    double s;
    if (room((void **)&x->buf, &x->buf_bytes, bytes, st) != 0)
        return -1;
    cudaCheck(cudaMemcpyAsync(x->buf, buf, (size_t)bytes, cudaMemcpyHostToDevice, x->stream));
    cudaCheck(cudaEventRecord(x->e0, x->stream));
    NCCL_CHECK(ncclSend(x->buf, (size_t)bytes, ncclInt8, peer, x->nc.world, x->stream),
               "ncclSend");
    return elapsed(x, &s, st);
}

static int tx_recv_host(void *ctx, int peer, void *buf, int64_t bytes, struct oc_status *st)
{
    struct nccl_tx *x = ctx;
    double s;
    if (room((void **)&x->buf, &x->buf_bytes, bytes, st) != 0)
        return -1;
    cudaCheck(cudaMemsetAsync(x->buf, 0, (size_t)bytes, x->stream));
    cudaCheck(cudaEventRecord(x->e0, x->stream));
    NCCL_CHECK(ncclRecv(x->buf, (size_t)bytes, ncclInt8, peer, x->nc.world, x->stream),
               "ncclRecv");
    if (elapsed(x, &s, st) != 0)
        return -1;
    cudaCheck(cudaMemcpy(buf, x->buf, (size_t)bytes, cudaMemcpyDeviceToHost));
    return 0;
}

static int tx_allreduce_host(void *ctx, const float *in, float *out, int64_t count,
                             struct oc_status *st)
{
    struct nccl_tx *x = ctx;
    const int64_t bytes = count * (int64_t)sizeof(float);
    double s;
    if (room((void **)&x->ar, &x->ar_bytes, bytes, st) != 0)
        return -1;
    cudaCheck(cudaMemcpyAsync(x->ar, in, (size_t)bytes, cudaMemcpyHostToDevice, x->stream));
    cudaCheck(cudaEventRecord(x->e0, x->stream));
    NCCL_CHECK(ncclAllReduce(x->ar, x->ar, (size_t)count, ncclFloat, ncclSum, x->nc.dp,
                             x->stream), "ncclAllReduce");
    if (elapsed(x, &s, st) != 0)
        return -1;
    cudaCheck(cudaMemcpy(out, x->ar, (size_t)bytes, cudaMemcpyDeviceToHost));
    return 0;
}

/* The communicators of tp<K>-pp1-dp<n> (see the file comment), a stream,
 * two events and the acknowledgement's word. */
static int tx_open(struct nccl_tx *x, struct oc_ctl *ctl, const struct oc_net_map *map,
                   struct oc_status *st)
{
    memset(x, 0, sizeof *x);
    if (!map->consecutive)
        return oc_fail(st, "--netbw --backend cuda: the ranks of each node must be "
                           "consecutive (node 0: ranks 0..%d, ...): start them with "
                           "mpirun --map-by ppr:%d:node", map->per_node - 1,
                       map->per_node);
    struct oc_layout l;
    oc_layout_default(&l);
    l.tp = map->per_node;
    l.pp = 1;
    l.dp = map->nodes;
    if (oc_nccl_init(&x->nc, ctl, &l, st) != 0)
        return -1;
    x->have_nc = 1;
    cudaCheck(cudaStreamCreateWithFlags(&x->stream, cudaStreamNonBlocking));
    cudaCheck(cudaEventCreate(&x->e0));
    cudaCheck(cudaEventCreate(&x->e1));
    cudaCheck(cudaMalloc((void **)&x->ack, sizeof *x->ack));
    cudaCheck(cudaMemset(x->ack, 0, sizeof *x->ack));
    return 0;
}

static void tx_close(struct nccl_tx *x)
{
    if (x->have_nc)
        oc_nccl_free(&x->nc);
    if (x->stream) {
        cudaCheck(cudaEventDestroy(x->e0));
        cudaCheck(cudaEventDestroy(x->e1));
        cudaCheck(cudaStreamDestroy(x->stream));
    }
    cudaCheck(cudaFree(x->buf));
    cudaCheck(cudaFree(x->ar));
    cudaCheck(cudaFree(x->ack));
}

static const struct oc_net_tx_ops nccl_ops = {
    .name = "NCCL",
    .detail = "ncclSend / ncclRecv, ncclAllReduce, timed with CUDA events",
    .pingpong = tx_pingpong,
    .stream = tx_stream,
    .allreduce = tx_allreduce,
    .send_host = tx_send_host,
    .recv_host = tx_recv_host,
    .allreduce_host = tx_allreduce_host,
};

int oc_backend_cuda_netbw(struct oc_ctl *ctl, const struct oc_netbw_opts *o,
                          const struct oc_net_map *map, struct oc_netbw_result *r,
                          struct oc_status *st)
{
    struct nccl_tx x;
    /* oc_nccl_init fails on every rank together (its verdict is shared). */
    if (tx_open(&x, ctl, map, st) != 0) {
        tx_close(&x);
        return -1;
    }
    const struct oc_net_tx tx = {&nccl_ops, &x};
    const int rc = oc_netbw_run(ctl, o, map, &tx, r, st);
    tx_close(&x);
    return rc;
}
