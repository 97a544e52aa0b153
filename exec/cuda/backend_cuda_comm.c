/* backend_cuda_comm.c: the cuda backend's communication (backend_cuda.c
 * has the backend and its streams, backend_cuda_priv.h its files): TP and
 * EMBED all-reduces on the compute stream, pipeline messages on the two
 * direction streams, DP all-reduce / reduce-scatter / all-gather on the dp
 * stream, and the requests of sends and async DP collectives (test, wait).
 *
 * What it is not: the communicators and their deadlines (comm_nccl.c), the
 * check that a schedule's messages cannot deadlock (backend_cuda.c over
 * core/p2p_order.h), or the op events (backend_cuda_timing.c; a pipeline
 * op's START mark is recorded here, in the call that knows its stream).
 *
 * Pipeline messages: NCCL matches the sends and receives between a pair of
 * ranks by their order, not by tag (NCCL user guide, "Point-to-point
 * communication"). The tags are therefore not sent; the schedule must post,
 * for every ordered pair (A, B), A's sends to B in the order B posts its
 * receives from A. An ncclSend holds its stream until the peer's matching
 * ncclRecv runs (and the receive until the send runs), so whatever sits
 * behind a message on its stream waits for the peer too.
 *
 * Why two direction streams and no NCCL groups. The first design put
 * every pipeline message on one pp stream over world, each run of
 * consecutive SEND / RECV ops in one ncclGroupStart / ncclGroupEnd
 * (Megatron-LM's send_forward_recv_backward). The interleaved schedule
 * (core/schedule.c, v >= 2) deadlocks under it. With tp1-pp2-dp1-v2 and 8
 * micro-batches (ops as in ops.csv): rank 0's stream holds its send of
 * message 5 to rank 1 (op 45, a group of its own) and behind it the group
 * with its receive of message 3 from rank 1 (op 54); rank 1's stream holds
 * the group {send of message 3 to rank 0 (op 51), receive of message 4
 * (op 53)} and behind it its receive of message 5 (op 60). Rank 0's send 5
 * waits for rank 1's receive 5, behind rank 1's send 3, which waits for
 * rank 0's receive 3, behind rank 0's send 5. Nothing moves (found in a CPU
 * emulation of CUDA and NCCL; 1f1b and gpipe do not deadlock).
 * So now: every message is its own ncclSend / ncclRecv (no group), on the
 * stream and communicator of its direction (sender < receiver: up). All
 * messages from A to B then share A's and B's stream of one direction and
 * keep their pair order there, and a message of one direction never waits
 * behind one of the other direction: in the example, rank 0's send 5 and
 * rank 1's receive 5 sit on the up streams, rank 1's send 3 and rank 0's
 * receive 3 on the down streams, and both pairs complete. p2p_begin /
 * p2p_end stay: p2p_end makes the compute stream wait for the direction
 * streams that received something in the run, so that two messages of one
 * run (a send forward and a receive backward) still run concurrently.
 * Whether a schedule can deadlock under these rules (a stream is FIFO, a
 * message completes with its partner, the compute stream and so every
 * later op waits for a run's receives at p2p_end, the host for sends at
 * WAIT) is decided before it runs: oc_backend_cuda_check_p2p_order
 * simulates them over the whole schedule (core/p2p_order.h,
 * OC_P2P_RULES_DIRECTION; the old rules are OC_P2P_RULES_GROUPED, kept to
 * show the difference in tests/test_p2p_order.c).
 */
#include "backend_cuda_priv.h"

#include <stdint.h>

#include "check.h"

/* ------------------------------------------------------------------ */
/* Requests                                                             */

static struct oc_cuda_req *req_new(struct oc_cuda_be *x)
{
    struct oc_cuda_req *r = x->free_reqs;
    if (r) {
        x->free_reqs = r->next;
    } else {
        r = oc_xmalloc(sizeof *r);
        cudaCheck(cudaEventCreateWithFlags(&r->ev, cudaEventDisableTiming));
        r->all = x->all_reqs;
        x->all_reqs = r;
    }
    r->next = NULL;
    return r;
}

static void req_release(struct oc_cuda_be *x, struct oc_cuda_req *r)
{
    r->next = x->free_reqs;
    x->free_reqs = r;
}

static void req_record(struct oc_cuda_req *r, cudaStream_t s)
{
    cudaCheck(cudaEventRecord(r->ev, s));
}

/* ------------------------------------------------------------------ */
/* Collectives                                                          */

int oc_cuda_be_tp_allreduce(struct oc_backend *b, float *buf, int64_t n,
                            enum oc_gpt_reduce op, struct oc_status *st)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    ncclComm_t c = oc_nccl_of(&x->nccl, OC_GROUP_TP);
    if (!c)
        return oc_fail(st, "a TP all-reduce on a rank without a TP group");
    const ncclRedOp_t rop = op == OC_GPT_MAX ? ncclMax : ncclSum;
    return oc_nccl_check(&x->nccl,
                         ncclAllReduce(buf, buf, oc_nccl_count(n), ncclFloat, rop,
                                       c, x->compute),
                         "ncclAllReduce (TP)", st);
}

/* Sequence parallelism's TP collectives (backend.h) on the compute
 * stream: the all-gather in place in out (in == out: this rank's share is
 * at out + rank * n/t, NCCL's in-place form sendbuff == recvbuff + rank *
 * sendcount), or the reduce-scatter (sum) of in into this rank's n/t
 * floats at out (recvcount n/t, in holds tp_size of them: NCCL's API). */
static int tp_sp_collective(struct oc_backend *b, int gather, const float *in, float *out,
                            int64_t n, struct oc_status *st)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    ncclComm_t c = oc_nccl_of(&x->nccl, OC_GROUP_TP);
    if (!c)
        return oc_fail(st, "a TP %s on a rank without a TP group",
                       gather ? "all-gather" : "reduce-scatter");
    int rank = 0;
    if (oc_nccl_check(&x->nccl, ncclCommUserRank(c, &rank), "ncclCommUserRank (TP)",
                      st) != 0)
        return -1;
    OC_ASSERT(x->nccl.tp_size >= 1 && n % x->nccl.tp_size == 0);
    const int64_t cnt = n / x->nccl.tp_size;
    if (gather)
        return oc_nccl_check(&x->nccl,
                             ncclAllGather(in + (int64_t)rank * cnt, out,
                                           oc_nccl_count(cnt), ncclFloat, c, x->compute),
                             "ncclAllGather (TP)", st);
    return oc_nccl_check(&x->nccl,
                         ncclReduceScatter(in, out, oc_nccl_count(cnt), ncclFloat, ncclSum,
                                           c, x->compute),
                         "ncclReduceScatter (TP)", st);
}

int oc_cuda_be_tp_allgather(struct oc_backend *b, float *buf, int64_t n,
                            struct oc_status *st)
{
    return tp_sp_collective(b, 1, buf, buf, n, st);
}

int oc_cuda_be_tp_reduce_scatter(struct oc_backend *b, const float *buf, float *shard,
                                 int64_t n, struct oc_status *st)
{
    return tp_sp_collective(b, 0, buf, shard, n, st);
}

int oc_cuda_be_embed_allreduce(struct oc_backend *b, float *buf, int64_t n,
                               struct oc_status *st)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    ncclComm_t c = oc_nccl_of(&x->nccl, OC_GROUP_EMBED);
    if (!c)
        return oc_fail(st, "an EMBED all-reduce on a rank without an EMBED group");
    return oc_nccl_check(&x->nccl,
                         ncclAllReduce(buf, buf, oc_nccl_count(n), ncclFloat,
                                       ncclSum, c, x->compute),
                         "ncclAllReduce (EMBED)", st);
}

/* A run of pipeline messages (backend.h): no NCCL group (the file
 * comment says why); what is left is the compute stream's wait at the end
 * for the streams that received something. */
void oc_cuda_be_p2p_begin(struct oc_backend *b)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    OC_ASSERT(!x->in_group);
    x->in_group = 1;
    for (int d = 0; d < PP_DIRS; d++)
        x->group_recv[d] = 0;
}

int oc_cuda_be_p2p_end(struct oc_backend *b, struct oc_status *st)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    (void)st; /* nothing here can fail: the NCCL calls were made already */
    OC_ASSERT(x->in_group);
    x->in_group = 0;
    for (int d = 0; d < PP_DIRS; d++)
        if (x->group_recv[d])
            oc_cuda_be_compute_follow(x, x->pp[d]);
    return 0;
}

static void check_peer(const struct oc_cuda_be *x, int64_t peer, int64_t n)
{
    OC_ASSERT(peer >= 0 && peer < x->ctl->size && peer != x->ctl->rank);
    OC_ASSERT(n >= 0);
}

/* Before a pipeline call on stream d: d follows the compute stream, and
 * the op whose START mark is held starts there. */
static cudaStream_t pp_enter(struct oc_cuda_be *x, int d)
{
    cudaStream_t s = x->pp[d];
    oc_cuda_be_follow_compute(x, s);
    x->pp_last = d;
    if (x->pp_op >= 0) {
        struct oc_cuda_op_ev *e = &x->ev[x->pp_op];
        cudaCheck(cudaEventRecord(e->start, s));
        e->has_start = 1;
        e->dir = d;
        x->pp_op = -1;
    }
    return s;
}

int oc_cuda_be_send(struct oc_backend *b, const float *buf, int64_t n,
                    int64_t peer, int64_t tag, void **req, struct oc_status *st)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    check_peer(x, peer, n);
    (void)tag; /* matched by order per pair (the file comment) */
    const int64_t me = x->ctl->rank;
    cudaStream_t s = pp_enter(x, (int)oc_p2p_stream_of(me, peer));
    struct oc_cuda_req *r = req_new(x);
    int rc = oc_nccl_check(&x->nccl,
                           ncclSend(buf, oc_nccl_count(n), ncclFloat, (int)peer,
                                    oc_nccl_p2p_of(&x->nccl, me, peer), s),
                           "ncclSend", st);
    if (rc != 0) {
        req_release(x, r);
        return -1;
    }
    x->sent[peer]++;
    req_record(r, s);
    *req = r;
    return 0;
}

int oc_cuda_be_recv(struct oc_backend *b, float *buf, int64_t n, int64_t peer,
                    int64_t tag, struct oc_status *st)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    check_peer(x, peer, n);
    (void)tag; /* matched by order per pair (the file comment) */
    const int64_t me = x->ctl->rank;
    /* the message goes up when it comes from a lower rank */
    const int d = (int)oc_p2p_stream_of(peer, me);
    cudaStream_t s = pp_enter(x, d);
    if (oc_nccl_check(&x->nccl,
                      ncclRecv(buf, oc_nccl_count(n), ncclFloat, (int)peer,
                               oc_nccl_p2p_of(&x->nccl, peer, me), s),
                      "ncclRecv", st) != 0)
        return -1;
    x->received[peer]++;
    if (x->in_group)
        x->group_recv[d] = 1;
    else
        oc_cuda_be_compute_follow(x, s);
    return 0;
}

static ncclComm_t dp_comm(struct oc_cuda_be *x)
{
    return oc_nccl_of(&x->nccl, OC_GROUP_DP);
}

int oc_cuda_be_dp_allreduce_start(struct oc_backend *b, float *buf, int64_t n,
                                  void **req, struct oc_status *st)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    ncclComm_t c = dp_comm(x);
    if (!c)
        return oc_fail(st, "a DP all-reduce on a rank without a DP group");
    oc_cuda_be_follow_compute(x, x->dp);
    if (oc_nccl_check(&x->nccl,
                      ncclAllReduce(buf, buf, oc_nccl_count(n), ncclFloat, ncclSum,
                                    c, x->dp),
                      "ncclAllReduce (DP)", st) != 0)
        return -1;
    struct oc_cuda_req *r = req_new(x);
    req_record(r, x->dp);
    *req = r;
    return 0;
}

int oc_cuda_be_dp_reduce_scatter_start(struct oc_backend *b, const float *send,
                                       float *recv, int64_t count, void **req,
                                       struct oc_status *st)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    ncclComm_t c = dp_comm(x);
    if (!c)
        return oc_fail(st, "a DP reduce-scatter on a rank without a DP group");
    oc_cuda_be_follow_compute(x, x->dp);
    /* equal blocks: recvcount = count, send holds d*count (NCCL API) */
    if (oc_nccl_check(&x->nccl,
                      ncclReduceScatter(send, recv, oc_nccl_count(count), ncclFloat,
                                        ncclSum, c, x->dp),
                      "ncclReduceScatter (DP)", st) != 0)
        return -1;
    struct oc_cuda_req *r = req_new(x);
    req_record(r, x->dp);
    *req = r;
    return 0;
}

int oc_cuda_be_dp_allgather(struct oc_backend *b, const float *mine, float *all,
                            int64_t count, struct oc_status *st)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    ncclComm_t c = dp_comm(x);
    if (!c)
        return oc_fail(st, "a DP all-gather on a rank without a DP group");
    oc_cuda_be_follow_compute(x, x->dp);
    if (oc_nccl_check(&x->nccl,
                      ncclAllGather(mine, all, oc_nccl_count(count), ncclFloat, c,
                                    x->dp),
                      "ncclAllGather (DP)", st) != 0)
        return -1;
    /* complete on return in the compute stream's order */
    oc_cuda_be_compute_follow(x, x->dp);
    if (x->p)
        oc_cuda_be_weights_changed(x); /* the all-gather wrote the weights */
    return 0;
}

int oc_cuda_be_test(struct oc_backend *b, void *req)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    struct oc_cuda_req *r = req;
    OC_ASSERT(r);
    if (!oc_cuda_be_event_done(r->ev))
        return 0;
    req_release(x, r);
    return 1;
}

/* Blocks the host until the request completed (deadline: comm_nccl.h),
 * and makes the compute stream continue after it. On failure the request
 * stays allocated (it never completes; the communicators are aborted). */
int oc_cuda_be_wait(struct oc_backend *b, void *req, struct oc_status *st)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    struct oc_cuda_req *r = req;
    OC_ASSERT(r);
    if (!oc_cuda_be_event_done(r->ev) && oc_nccl_wait_event(&x->nccl, r->ev, st) != 0)
        return -1;
    cudaCheck(cudaStreamWaitEvent(x->compute, r->ev, 0));
    req_release(x, r);
    return 0;
}
