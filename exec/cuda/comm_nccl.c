/* comm_nccl.c: the cuda backend's NCCL communicators and their deadline
 * waits (see comm_nccl.h). What this file is: set-up (the GPU check, the
 * unique id over the control plane, the non-blocking world communicator
 * and its splits), the polling of non-blocking communicators and CUDA
 * events with a deadline, abort and tear-down. What it is not: the
 * collectives themselves (cuda/backend_cuda.c enqueues them) or the
 * control plane (ctl.h).
 *
 * Waiting: every wait polls (ncclCommGetAsyncError, cudaEventQuery) with
 * exec/wait_clock.h's pacing (sched_yield for the first millisecond, then
 * sleeps doubling from 10 us to 1 ms) until done, an error, or ctl's
 * timeout_s from the start of the wait. An error or the deadline aborts
 * every communicator: ncclCommAbort also ends NCCL kernels stuck on the
 * GPU waiting for a peer that will never come, so that the events behind
 * them complete and the process can end.
 */
#define _POSIX_C_SOURCE 200809L
#include "comm_nccl.h"

#include <stdio.h>
#include <string.h>

#include "check.h"
#include "p2p_order.h"
#include "wait_clock.h"


/* The most communicators a rank holds: world and its five splits. */
#define MAX_COMMS 6

/* The communicators that exist, children first (the order of abort and
 * tear-down), world last; returns how many. */
static int all_comms(const struct oc_nccl *n, ncclComm_t out[MAX_COMMS])
{
    const ncclComm_t all[MAX_COMMS] = {n->down, n->up, n->embed, n->dp, n->tp,
                                       n->world};
    int k = 0;
    for (int i = 0; i < MAX_COMMS; i++)
        if (all[i] != NULL)
            out[k++] = all[i];
    return k;
}

void oc_nccl_abort(struct oc_nccl *n)
{
    ncclComm_t *slots[MAX_COMMS] = {&n->down, &n->up, &n->embed, &n->dp, &n->tp,
                                    &n->world};
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++)
        if (*slots[i] != NULL) {
            /* Blocking, and the handle is gone after it: nothing to poll. */
            (void)ncclCommAbort(*slots[i]);
            *slots[i] = NULL;
        }
    n->aborted = 1;
}

/* An NCCL error (a call's result or a communicator's async error): the
 * message first (ncclGetLastError reads the communicator), then abort. */
static int nccl_failed(struct oc_nccl *n, ncclResult_t rc, ncclComm_t comm,
                       const char *what, struct oc_status *st)
{
    const char *last = ncclGetLastError(comm);
    oc_fail(st, "NCCL error in %s: %s (%s)", what, ncclGetErrorString(rc),
            last != NULL && last[0] != '\0' ? last : "no further detail");
    oc_nccl_abort(n);
    return -1;
}

static int nccl_timed_out(struct oc_nccl *n, const char *call,
                          struct oc_status *st)
{
    n->ctl->timed_out = 1;
    if (call != NULL)
        oc_fail(st, "timed out after %g s in %s (%s)", n->ctl->timeout_s,
                n->ctl->what, call);
    else
        oc_fail(st, "timed out after %g s in %s", n->ctl->timeout_s,
                n->ctl->what);
    oc_nccl_abort(n);
    return -1;
}

/* The state of one communicator: ncclSuccess, ncclInProgress or an error. */
static ncclResult_t comm_state(ncclComm_t comm)
{
    ncclResult_t state = ncclInProgress;
    ncclResult_t rc = ncclCommGetAsyncError(comm, &state);
    return rc != ncclSuccess ? rc : state;
}

/* Polls comms until none is in progress (0); an error or the deadline
 * aborts every communicator (-1). */
static int settle(struct oc_nccl *n, const ncclComm_t *comms, int k,
                  const char *call, struct oc_status *st)
{
    const double t0 = oc_now_s();
    long sleep_ns = 0;
    for (;;) {
        int busy = 0;
        for (int i = 0; i < k; i++) {
            ncclResult_t s = comm_state(comms[i]);
            if (s == ncclInProgress)
                busy = 1;
            else if (s != ncclSuccess)
                return nccl_failed(n, s, comms[i], call, st);
        }
        if (!busy)
            return 0;
        double waited = oc_now_s() - t0;
        if (waited > n->ctl->timeout_s)
            return nccl_timed_out(n, call, st);
        oc_wait_pace(waited, &sleep_ns);
    }
}

int oc_nccl_check(struct oc_nccl *n, ncclResult_t rc, const char *what,
                  struct oc_status *st)
{
    if (rc == ncclSuccess)
        return 0;
    if (rc != ncclInProgress)
        return nccl_failed(n, rc, n->world, what, st);
    ncclComm_t comms[MAX_COMMS];
    int k = all_comms(n, comms);
    return settle(n, comms, k, what, st);
}

int oc_nccl_wait_event(struct oc_nccl *n, cudaEvent_t ev, struct oc_status *st)
{
    const double t0 = oc_now_s();
    long sleep_ns = 0;
    for (;;) {
        cudaError_t q = cudaEventQuery(ev);
        if (q == cudaSuccess)
            return 0;
        if (q != cudaErrorNotReady)
            cudaCheck(q); /* a kernel's fault: an environment failure */
        /* Not ready is no error, but it can stay as the thread's last error
         * and fail the next launch's cudaGetLastError check (PyTorch clears
         * it the same way). */
        (void)cudaGetLastError();
        /* A peer's failure shows as an async error before the deadline. */
        ncclComm_t comms[MAX_COMMS];
        int k = all_comms(n, comms);
        for (int i = 0; i < k; i++) {
            ncclResult_t s = comm_state(comms[i]);
            if (s != ncclSuccess && s != ncclInProgress)
                return nccl_failed(n, s, comms[i], n->ctl->what, st);
        }
        double waited = oc_now_s() - t0;
        if (waited > n->ctl->timeout_s)
            return nccl_timed_out(n, NULL, st);
        oc_wait_pace(waited, &sleep_ns);
    }
}

/* ------------------------------------------------------------------ */
/* Set-up                                                               */

/* Why a rank cannot take part (gathered to rank 0, then broadcast). */
enum gpu_verdict { GPU_OK, GPU_NONE, GPU_TOO_FEW };

/* What rank 0 broadcasts before anyone makes a communicator: the first
 * rank that cannot (bad_rank, -1 if none) and why, or the unique id. */
struct setup_msg {
    int bad_rank, verdict, gpus, local_ranks;
    int id_rc;           /* ncclGetUniqueId's ncclResult_t */
    ncclUniqueId id;
};

/* Every rank's verdict on its node's GPUs, agreed on every rank before
 * any of them makes a communicator: a rank that cannot go on says so to
 * all, instead of leaving the others to time out in NCCL's init. The same
 * message on every rank. */
static int agree(struct oc_nccl *n, struct setup_msg *m, struct oc_status *st)
{
    struct oc_ctl *c = n->ctl;
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess) {
        /* No driver or no device (error 35 or 100): not sticky; clear it. */
        (void)cudaGetLastError();
        gpus = 0;
    }
    int mine[3] = {gpus == 0 ? GPU_NONE : gpus < c->local_ranks ? GPU_TOO_FEW
                                                                  : GPU_OK,
                   gpus, c->local_ranks};
    if (mine[0] == GPU_OK) {
        cudaCheck(cudaSetDevice(c->local_rank));
        n->device = c->local_rank;
    }
    int *all = c->rank == 0 ? oc_xmalloc((size_t)c->size * sizeof mine) : NULL;
    int rc = oc_ctl_gather(c, mine, all, sizeof mine, 0, st);
    memset(m, 0, sizeof *m);
    m->bad_rank = -1;
    if (rc == 0 && c->rank == 0) {
        for (int r = 0; r < c->size && m->bad_rank < 0; r++)
            if (all[3 * r] != GPU_OK) {
                m->bad_rank = r;
                m->verdict = all[3 * r];
                m->gpus = all[3 * r + 1];
                m->local_ranks = all[3 * r + 2];
            }
        m->id_rc = m->bad_rank < 0 ? (int)ncclGetUniqueId(&m->id) : ncclSuccess;
    }
    free(all);
    if (rc != 0 || oc_ctl_bcast(c, m, sizeof *m, 0, st) != 0)
        return -1;
    if (m->verdict == GPU_NONE)
        return oc_fail(st, "cuda: no CUDA device visible to rank %d", m->bad_rank);
    if (m->verdict == GPU_TOO_FEW)
        return oc_fail(st, "cuda: %d ranks on the node of rank %d and %d GPUs "
                           "visible: NCCL needs one GPU per rank",
                       m->local_ranks, m->bad_rank, m->gpus);
    if (m->id_rc != ncclSuccess)
        return oc_fail(st, "NCCL error in ncclGetUniqueId on rank 0: %s",
                       ncclGetErrorString((ncclResult_t)m->id_rc));
    return 0;
}

/* One ncclCommSplit of world for group g (cpu/comm_mpi.c's split: colour the
 * smallest member's world rank, key the position in oc_schedule_group's
 * ring order, NCCL_SPLIT_NOCOLOR where not a member). */
static int split(struct oc_nccl *n, const struct oc_layout *l, enum oc_group g,
                 ncclComm_t *out, int *size, struct oc_status *st)
{
    const int rank = n->ctl->rank;
    int64_t world = oc_layout_world(l);
    int64_t *members = oc_xmalloc((size_t)world * sizeof *members);
    int64_t cnt = oc_schedule_group(l, rank, g, members, world);
    OC_ASSERT(cnt >= 1 && cnt <= world);
    int64_t lo = members[0], pos = -1;
    for (int64_t i = 0; i < cnt; i++) {
        if (members[i] < lo)
            lo = members[i];
        if (members[i] == rank)
            pos = i;
    }
    free(members);
    *out = NULL;
    *size = pos >= 0 ? (int)cnt : 0;
    /* A group's size depends on the layout only (t, d, or 1 or 2 stages),
     * so every rank skips this collective split together. */
    if (cnt == 1)
        return 0;
    char call[64];
    snprintf(call, sizeof call, "ncclCommSplit of the %s group", oc_group_name(g));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t rc = ncclCommSplit(n->world, pos >= 0 ? (int)lo : NCCL_SPLIT_NOCOLOR,
                                    pos >= 0 ? (int)pos : 0, out, &config);
    if (rc != ncclSuccess && rc != ncclInProgress)
        return nccl_failed(n, rc, n->world, call, st);
    /* Non-blocking: the split runs as a job of the parent, and *out stays
     * NULL until it finished; then the child finishes its own init. */
    if (settle(n, &n->world, 1, call, st) != 0)
        return -1;
    if (pos < 0) {
        OC_ASSERT(*out == NULL);
        return 0;
    }
    if (*out == NULL) {
        oc_fail(st, "NCCL: rank %d: %s made no communicator", rank, call);
        oc_nccl_abort(n);
        return -1;
    }
    if (settle(n, out, 1, call, st) != 0)
        return -1;
    int got = 0;
    rc = ncclCommCount(*out, &got);
    if (rc != ncclSuccess)
        return nccl_failed(n, rc, *out, "ncclCommCount", st);
    if (got != cnt) {
        oc_fail(st, "exec: rank %d: the %s group has %d ranks in NCCL and %lld "
                    "in the schedule", rank, oc_group_name(g), got, (long long)cnt);
        oc_nccl_abort(n);
        return -1;
    }
    return 0;
}

/* One copy of world for pipeline messages: every rank in (colour 0), key
 * the world rank, so that the copy's ranks are world ranks. A copy per
 * direction and not world itself, so that the two directions share no
 * NCCL state: a communicator's operations are taken in the order they were
 * issued, whatever their streams, which would bring back the one queue
 * that deadlocked (backend_cuda_comm.c). PyTorch's ProcessGroupNCCL does the
 * like for send / recv (a communicator per pair of ranks). The NCCL user
 * guide ("Using multiple NCCL communicators concurrently") warns that
 * operations of several communicators in flight at once rely on their
 * kernels fitting on the GPU together; the TP, DP and pipeline streams
 * rely on that already. */
static int split_p2p(struct oc_nccl *n, ncclComm_t *out, const char *call,
                     struct oc_status *st)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t rc = ncclCommSplit(n->world, 0, n->ctl->rank, out, &config);
    if (rc != ncclSuccess && rc != ncclInProgress)
        return nccl_failed(n, rc, n->world, call, st);
    /* as in split(): the parent's job first, then the child's own init */
    if (settle(n, &n->world, 1, call, st) != 0)
        return -1;
    if (*out == NULL) {
        oc_fail(st, "NCCL: rank %d: %s made no communicator", n->ctl->rank, call);
        oc_nccl_abort(n);
        return -1;
    }
    return settle(n, out, 1, call, st);
}

int oc_nccl_init(struct oc_nccl *n, struct oc_ctl *ctl, const struct oc_layout *l,
                 struct oc_status *st)
{
    memset(n, 0, sizeof *n);
    n->ctl = ctl;
    n->device = -1;
    if (oc_layout_world(l) != ctl->size)
        return oc_fail(st, "exec: the layout has %lld ranks, the control plane %d",
                       (long long)oc_layout_world(l), ctl->size);
    oc_ctl_set_what(ctl, "NCCL set-up");
    struct setup_msg m;
    if (agree(n, &m, st) != 0)
        return -1;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0; /* so that init itself can time out */
    ncclResult_t rc = ncclCommInitRankConfig(&n->world, ctl->size, m.id,
                                             ctl->rank, &config);
    if (oc_nccl_check(n, rc, "ncclCommInitRankConfig", st) != 0)
        return -1;
    if (split(n, l, OC_GROUP_TP, &n->tp, &n->tp_size, st) != 0 ||
        split(n, l, OC_GROUP_DP, &n->dp, &n->dp_size, st) != 0 ||
        split(n, l, OC_GROUP_EMBED, &n->embed, &n->embed_size, st) != 0)
        return -1;
    /* every rank together (the size is the job's) */
    if (ctl->size > 1 &&
        (split_p2p(n, &n->up, "ncclCommSplit of the upward pipeline copy", st) != 0 ||
         split_p2p(n, &n->down, "ncclCommSplit of the downward pipeline copy",
                   st) != 0))
        return -1;
    return 0;
}

void oc_nccl_free(struct oc_nccl *n)
{
    if (n->ctl != NULL && !n->aborted) {
        /* Finalize flushes what is in flight, collectively; a peer that is
         * gone leaves it in progress, and the deadline aborts instead. A
         * timeout here is not the job's: ctl->timed_out is left alone. */
        int timed_out = n->ctl->timed_out;
        struct oc_status ignored;
        ncclComm_t comms[MAX_COMMS];
        int k = all_comms(n, comms);
        int rc = 0;
        for (int i = 0; i < k && rc == 0; i++) {
            ncclResult_t r = ncclCommFinalize(comms[i]);
            if (r != ncclSuccess && r != ncclInProgress)
                rc = nccl_failed(n, r, comms[i], "ncclCommFinalize", &ignored);
        }
        if (rc == 0)
            rc = settle(n, comms, k, "ncclCommFinalize", &ignored);
        n->ctl->timed_out = timed_out;
        if (rc == 0)
            for (int i = 0; i < k; i++)
                (void)ncclCommDestroy(comms[i]);
    }
    n->world = n->tp = n->dp = n->embed = n->up = n->down = NULL;
}

ncclComm_t oc_nccl_of(const struct oc_nccl *n, enum oc_group g)
{
    switch (g) {
    case OC_GROUP_TP: return n->tp;
    case OC_GROUP_DP: return n->dp;
    case OC_GROUP_EMBED: return n->embed;
    default: return NULL;
    }
}

ncclComm_t oc_nccl_p2p_of(const struct oc_nccl *n, int64_t from, int64_t to)
{
    OC_ASSERT(from != to && (from == n->ctl->rank || to == n->ctl->rank));
    return oc_p2p_stream_of(from, to) == OC_P2P_UP ? n->up : n->down;
}

size_t oc_nccl_count(int64_t n)
{
    OC_ASSERT(n >= 0);
    return (size_t)n;
}
