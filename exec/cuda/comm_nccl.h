/* comm_nccl.h: the cuda backend's communicators: NCCL's world communicator
 * of a layout's ranks, its TP, DP and EMBED groups split from it
 * (ncclCommSplit), and a deadline on every wait that aborts the
 * communicators (ncclCommAbort) instead of hanging.
 *
 *   struct oc_nccl n;
 *   if (oc_nccl_init(&n, &ctl, &layout, &st) != 0) ...  // collective
 *   ncclAllReduce(buf, buf, cnt, ncclFloat, ncclSum, n.tp, stream);
 *   if (oc_nccl_wait_event(&n, ev, &st) != 0) ...   // timed out: aborted
 *   oc_nccl_free(&n);
 *
 * Set-up: rank 0 makes the unique id (ncclGetUniqueId) and the control
 * plane broadcasts it (ctl.h: over MPI under mpirun, in memory for the
 * threads of one process); every rank calls ncclCommInitRankConfig with
 * the ctl's rank and size on the GPU ctl->local_rank (cudaSetDevice first),
 * non-blocking (config.blocking = 0) so that init itself can time out.
 * Groups follow the schedule core: a rank's TP, DP and EMBED peers are
 * oc_schedule_group's lists (schedule.h); each is one ncclCommSplit of the
 * world communicator (colour: the smallest member's world rank, key: the
 * position in the list; NCCL_SPLIT_NOCOLOR where not a member). Pipeline
 * messages (ncclSend / ncclRecv) go over two more copies of world, split
 * with one colour and key = world rank (so their ranks are world ranks):
 * `up` for a message to a higher world rank, `down` to a lower one
 * (oc_nccl_p2p_of); the cuda backend gives each its own stream, so that
 * messages of one direction never queue behind those of the other
 * (backend_cuda_comm.c's file comment says why that matters).
 *
 * Non-blocking communicators: every NCCL call may return ncclInProgress;
 * the calls here poll ncclCommGetAsyncError until ncclSuccess, an error,
 * or the deadline. On an error or the deadline: every communicator is
 * aborted (ncclCommAbort, which also ends NCCL kernels stuck on the GPU),
 * n.aborted set, st->msg "timed out after S s in <ctl what>" or "NCCL
 * error: <ncclGetErrorString> (<async error>)".
 *
 * NCCL cannot run several ranks of one communicator on one GPU: init
 * refuses a layout with more ranks than GPUs visible on a node.
 */
#ifndef OC_EXEC_COMM_NCCL_H
#define OC_EXEC_COMM_NCCL_H

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdint.h>

#include "ctl.h"
#include "layout.h"
#include "schedule.h"
#include "status.h"

struct oc_nccl {
    struct oc_ctl *ctl;
    int device;                 /* the GPU of this rank */
    ncclComm_t world;           /* every rank (the parent of the others) */
    ncclComm_t tp, dp, embed;   /* NULL where not a member or size 1 */
    ncclComm_t up, down;        /* copies of world for pipeline messages to a
                                   higher / lower world rank; NULL if 1 rank */
    int tp_size, dp_size, embed_size; /* 0 where not a member */
    int aborted;
};

int oc_nccl_init(struct oc_nccl *n, struct oc_ctl *ctl, const struct oc_layout *l,
                 struct oc_status *st);
/* Destroys (or, after an abort, has aborted) every communicator. */
void oc_nccl_free(struct oc_nccl *n);

/* The communicator of a schedule group (NULL if not a member). */
ncclComm_t oc_nccl_of(const struct oc_nccl *n, enum oc_group g);
/* The communicator of a pipeline message from world rank `from` to world
 * rank `to` (one of them this rank): up if from < to, else down. */
ncclComm_t oc_nccl_p2p_of(const struct oc_nccl *n, int64_t from, int64_t to);

/* Checks an NCCL call's result: ncclSuccess -> 0; ncclInProgress -> polls
 * the async error of every communicator until done or the deadline; an
 * error or the deadline -> aborts all, -1 with st->msg (what: the call). */
int oc_nccl_check(struct oc_nccl *n, ncclResult_t rc, const char *what,
                  struct oc_status *st);
/* Waits for a CUDA event (cudaEventQuery with a sleep that doubles up to
 * 1 ms), watching the communicators' async errors; past ctl->timeout_s:
 * aborts all, -1, ctl->timed_out, st->msg "timed out after S s in <what>". */
int oc_nccl_wait_event(struct oc_nccl *n, cudaEvent_t ev, struct oc_status *st);
/* Aborts every communicator (idempotent). */
void oc_nccl_abort(struct oc_nccl *n);

/* An NCCL element count from floats (asserts >= 0). */
size_t oc_nccl_count(int64_t n);

#endif
