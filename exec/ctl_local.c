/* ctl_local.c: the control plane of one process, n threads, one rank per
 * thread (see ctl.h). What this file is: one shared state (a mutex, a
 * condition variable, the collectives in flight and the messages not yet
 * received) and the waits on it with a deadline. What it is not: a data
 * plane (the cuda backend's NCCL carries the tensors), or MPI.
 *
 * Collectives. Every rank counts its collective calls; call k of every rank
 * meets in one record (struct coll) made by the first rank to arrive and
 * freed by the last rank that no longer needs it. The contract (ctl.h) asks
 * every rank to make the same calls in the same order; a rank whose call k
 * differs in kind, size or root from another's gets -1 and a message.
 *   barrier  each rank waits until all n arrived.
 *   bcast    root copies its bytes into the record and returns; the others
 *            wait for them and copy them out.
 *   gather   each rank copies its bytes into the record's slot and returns;
 *            root waits for all n and copies the whole out.
 *
 * Messages. A send appends to one list; a receive takes the first message
 * of the list from its source with its tag (MPI's non-overtaking order).
 * Up to OC_CTL_LOCAL_EAGER_BYTES the send copies the bytes and returns at
 * once; above, the receiver copies straight from the sender's buffer while
 * the sender waits (so that a weight shard is not held twice in memory).
 * This is what MPI does on one node (eager and rendezvous protocols), so a
 * program that works here does not deadlock under mpirun for lack of
 * buffering. A send to oneself is always copied, whatever its size.
 *
 * Deadlines: each waiting call computes one deadline (now + timeout_s,
 * CLOCK_MONOTONIC) and waits with pthread_cond_timedwait; past it the call
 * returns -1 with "timed out after S s in <what>" (exec/mpi_wait.c's words)
 * and c->timed_out set. State left by a timed-out call (a record its peers
 * never finish, an eager message never received) is freed when
 * oc_ctl_local_run returns.
 */
#define _POSIX_C_SOURCE 200809L
#include "ctl.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Open MPI 4.1's shared-memory eager limit (btl_vader_eager_limit, 4 KiB,
 * `ompi_info --param btl vader --level 9`). */
#define OC_CTL_LOCAL_EAGER_BYTES 4096

enum coll_kind { COLL_BARRIER, COLL_BCAST, COLL_GATHER };
static const char *const coll_names[] = {"barrier", "bcast", "gather"};

/* One collective call, shared by the ranks that make it. */
struct coll {
    int64_t seq;          /* its index in every rank's collective calls */
    enum coll_kind kind;
    int64_t bytes;        /* per rank (barrier: 0) */
    int root;             /* barrier: 0 */
    unsigned char *data;  /* bcast: (bytes) root's; gather: (size, bytes) */
    int has_data;         /* bcast: root copied its bytes in */
    int arrived;          /* barrier: ranks in; gather: slots filled */
    int done;             /* ranks that no longer need it; freed at size */
    struct coll *next;
};

/* One point-to-point message, from its send until its receive took it. */
struct msg {
    int src, dest, tag;
    int64_t bytes;
    int eager;            /* copied at send (else: rendezvous) */
    unsigned char *copy;  /* eager: (bytes) the sender's bytes */
    const void *buf;      /* rendezvous: the sender's buffer */
    int claimed;          /* rendezvous: a receive took it off the list */
    int copied;           /* rendezvous: that receive finished copying */
    struct msg *next;
};

struct shared {
    pthread_mutex_t mu;
    pthread_cond_t cv;    /* broadcast on every change below */
    int size;
    struct coll *colls;   /* collectives in flight */
    struct msg *msgs;     /* messages sent and not yet received, in order */
};

/* A rank's ctl->impl. */
struct rank_state {
    struct shared *sh;
    int64_t seq;          /* collective calls made so far */
};

static void lock(struct shared *sh)
{
    int rc = pthread_mutex_lock(&sh->mu);
    OC_ASSERT(rc == 0);
}

static void unlock(struct shared *sh)
{
    int rc = pthread_mutex_unlock(&sh->mu);
    OC_ASSERT(rc == 0);
}

static void wake_all(struct shared *sh)
{
    int rc = pthread_cond_broadcast(&sh->cv);
    OC_ASSERT(rc == 0);
}

/* The deadline of a call that starts now. */
static struct timespec deadline_after(double timeout_s)
{
    /* A deadline past 30 years is no deadline; it also keeps tv_sec far
     * from overflowing. */
    if (timeout_s > 1e9)
        timeout_s = 1e9;
    struct timespec t;
    int rc = clock_gettime(CLOCK_MONOTONIC, &t);
    OC_ASSERT(rc == 0);
    time_t whole_s = (time_t)timeout_s;
    t.tv_sec += whole_s;
    t.tv_nsec += (long)((timeout_s - (double)whole_s) * 1e9);
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* Waits (the mutex held) for the next change of the shared state; 1 once
 * the deadline has passed. Callers test their condition again either way:
 * a wake-up may be spurious, and the change may land with the deadline. */
static int wait_change(struct shared *sh, const struct timespec *deadline)
{
    int rc = pthread_cond_timedwait(&sh->cv, &sh->mu, deadline);
    OC_ASSERT(rc == 0 || rc == ETIMEDOUT);
    return rc == ETIMEDOUT;
}

/* The mutex must be released by the caller. */
static int timed_out(struct oc_ctl *c, struct oc_status *st)
{
    c->timed_out = 1;
    return oc_fail(st, "timed out after %g s in %s", c->timeout_s, c->what);
}

/* ------------------------------------------------------------------ */
/* Collectives                                                          */

/* Record seq, made if this rank is the first to arrive. NULL (and st)
 * when another rank's call seq is a different collective. */
static struct coll *coll_get(struct oc_ctl *c, enum coll_kind kind,
                             int64_t bytes, int root, struct oc_status *st)
{
    struct rank_state *rs = c->impl;
    struct shared *sh = rs->sh;
    int64_t seq = rs->seq++;
    for (struct coll *k = sh->colls; k != NULL; k = k->next) {
        if (k->seq != seq)
            continue;
        if (k->kind != kind || k->bytes != bytes || k->root != root) {
            oc_fail(st, "ctl: rank %d: collective call %lld is a %s of %lld "
                        "bytes from root %d here and a %s of %lld bytes from "
                        "root %d on another rank", c->rank, (long long)seq,
                    coll_names[kind], (long long)bytes, root,
                    coll_names[k->kind], (long long)k->bytes, k->root);
            return NULL;
        }
        return k;
    }
    struct coll *k = oc_xcalloc(1, sizeof *k);
    k->seq = seq;
    k->kind = kind;
    k->bytes = bytes;
    k->root = root;
    k->next = sh->colls;
    sh->colls = k;
    return k;
}

static void coll_free(struct coll *k)
{
    free(k->data);
    free(k);
}

/* This rank no longer reads or writes k; the last such rank frees it. */
static void coll_done(struct shared *sh, struct coll *k)
{
    if (++k->done < sh->size)
        return;
    for (struct coll **at = &sh->colls; *at != NULL; at = &(*at)->next)
        if (*at == k) {
            *at = k->next;
            coll_free(k);
            return;
        }
    OC_ASSERT(0 && "a collective record left the list early");
}

static int local_barrier(struct oc_ctl *c, struct oc_status *st)
{
    struct shared *sh = ((struct rank_state *)c->impl)->sh;
    struct timespec dl = deadline_after(c->timeout_s);
    lock(sh);
    struct coll *k = coll_get(c, COLL_BARRIER, 0, 0, st);
    if (k == NULL) {
        unlock(sh);
        return -1;
    }
    k->arrived++;
    wake_all(sh);
    while (k->arrived < sh->size)
        if (wait_change(sh, &dl))
            break;
    if (k->arrived < sh->size) {
        unlock(sh);
        return timed_out(c, st);
    }
    coll_done(sh, k);
    unlock(sh);
    return 0;
}

static int local_bcast(struct oc_ctl *c, void *buf, int64_t bytes, int root,
                       struct oc_status *st)
{
    struct shared *sh = ((struct rank_state *)c->impl)->sh;
    struct timespec dl = deadline_after(c->timeout_s);
    lock(sh);
    struct coll *k = coll_get(c, COLL_BCAST, bytes, root, st);
    if (k == NULL) {
        unlock(sh);
        return -1;
    }
    if (c->rank == root) {
        k->data = oc_xmalloc((size_t)bytes);
        if (bytes > 0)
            memcpy(k->data, buf, (size_t)bytes);
        k->has_data = 1;
        wake_all(sh);
    } else {
        while (!k->has_data)
            if (wait_change(sh, &dl))
                break;
        if (!k->has_data) {
            unlock(sh);
            return timed_out(c, st);
        }
        if (bytes > 0)
            memcpy(buf, k->data, (size_t)bytes);
    }
    coll_done(sh, k);
    unlock(sh);
    return 0;
}

static int local_gather(struct oc_ctl *c, const void *send, void *recv,
                        int64_t bytes, int root, struct oc_status *st)
{
    struct shared *sh = ((struct rank_state *)c->impl)->sh;
    OC_ASSERT(bytes <= INT64_MAX / sh->size);
    const size_t all_bytes = (size_t)(bytes * sh->size);
    struct timespec dl = deadline_after(c->timeout_s);
    lock(sh);
    struct coll *k = coll_get(c, COLL_GATHER, bytes, root, st);
    if (k == NULL) {
        unlock(sh);
        return -1;
    }
    if (k->data == NULL)
        k->data = oc_xmalloc(all_bytes);
    /* Root's own slot is copied in before the whole is copied out, so a
     * send buffer inside recv (MPI_IN_PLACE style) is safe. */
    if (bytes > 0)
        memcpy(k->data + (size_t)c->rank * (size_t)bytes, send, (size_t)bytes);
    k->arrived++;
    wake_all(sh);
    if (c->rank == root) {
        while (k->arrived < sh->size)
            if (wait_change(sh, &dl))
                break;
        if (k->arrived < sh->size) {
            unlock(sh);
            return timed_out(c, st);
        }
        if (all_bytes > 0)
            memcpy(recv, k->data, all_bytes);
    }
    coll_done(sh, k);
    unlock(sh);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Messages                                                             */

/* The link to the first message from src to dest with tag, or NULL. */
static struct msg **msg_find(struct shared *sh, int src, int dest, int tag)
{
    for (struct msg **at = &sh->msgs; *at != NULL; at = &(*at)->next)
        if ((*at)->src == src && (*at)->dest == dest && (*at)->tag == tag)
            return at;
    return NULL;
}

static void msg_unlink(struct shared *sh, struct msg *m)
{
    for (struct msg **at = &sh->msgs; *at != NULL; at = &(*at)->next)
        if (*at == m) {
            *at = m->next;
            return;
        }
    OC_ASSERT(0 && "a message left the list early");
}

static void msg_free(struct msg *m)
{
    free(m->copy);
    free(m);
}

static int local_send(struct oc_ctl *c, const void *buf, int64_t bytes,
                      int dest, int tag, struct oc_status *st)
{
    struct shared *sh = ((struct rank_state *)c->impl)->sh;
    struct timespec dl = deadline_after(c->timeout_s);
    struct msg *m = oc_xcalloc(1, sizeof *m);
    m->src = c->rank;
    m->dest = dest;
    m->tag = tag;
    m->bytes = bytes;
    m->eager = bytes <= OC_CTL_LOCAL_EAGER_BYTES || dest == c->rank;
    if (m->eager) {
        m->copy = oc_xmalloc((size_t)bytes);
        if (bytes > 0)
            memcpy(m->copy, buf, (size_t)bytes);
    } else {
        m->buf = buf;
    }
    lock(sh);
    struct msg **at = &sh->msgs;
    while (*at != NULL)
        at = &(*at)->next;
    *at = m;
    wake_all(sh);
    if (m->eager) {
        unlock(sh); /* the receiver frees it */
        return 0;
    }
    while (!m->copied) {
        if (m->claimed) {
            /* The receiver is copying and waits for nobody: no deadline. */
            int rc = pthread_cond_wait(&sh->cv, &sh->mu);
            OC_ASSERT(rc == 0);
            continue;
        }
        if (wait_change(sh, &dl) && !m->claimed && !m->copied) {
            msg_unlink(sh, m);
            unlock(sh);
            msg_free(m);
            return timed_out(c, st);
        }
    }
    unlock(sh);
    msg_free(m);
    return 0;
}

static int local_recv(struct oc_ctl *c, void *buf, int64_t bytes, int src,
                      int tag, struct oc_status *st)
{
    struct shared *sh = ((struct rank_state *)c->impl)->sh;
    struct timespec dl = deadline_after(c->timeout_s);
    lock(sh);
    struct msg **at = msg_find(sh, src, c->rank, tag);
    while (at == NULL) {
        int late = wait_change(sh, &dl);
        at = msg_find(sh, src, c->rank, tag);
        if (at == NULL && late) {
            unlock(sh);
            return timed_out(c, st);
        }
    }
    struct msg *m = *at;
    if (m->bytes != bytes) {
        unlock(sh);
        return oc_fail(st, "ctl: rank %d expected %lld bytes from rank %d with "
                           "tag %d and the message has %lld", c->rank,
                       (long long)bytes, src, tag, (long long)m->bytes);
    }
    *at = m->next;
    if (m->eager) {
        unlock(sh);
        if (bytes > 0)
            memcpy(buf, m->copy, (size_t)bytes);
        msg_free(m);
        return 0;
    }
    /* Rendezvous: the sender's buffer stays valid until copied is set. */
    m->claimed = 1;
    unlock(sh);
    if (bytes > 0)
        memcpy(buf, m->buf, (size_t)bytes);
    lock(sh);
    m->copied = 1;
    wake_all(sh);
    unlock(sh);
    return 0;
}

/* ------------------------------------------------------------------ */
/* The table, the threads                                               */

static void local_abort(struct oc_ctl *c, int code)
{
    (void)c;
    fflush(stdout);
    fflush(stderr);
    _exit(code);
}

static void local_free(struct oc_ctl *c)
{
    free(c->impl);
}

static const struct oc_ctl_ops local_ops = {
    .name = "local",
    .barrier = local_barrier,
    .bcast = local_bcast,
    .gather = local_gather,
    .send = local_send,
    .recv = local_recv,
    .abort = local_abort,
    .free = local_free,
};

struct rank_thread {
    struct oc_ctl ctl;
    int (*fn)(struct oc_ctl *c, void *arg);
    void *arg;
    int rc;
    pthread_t thread;
};

static void *rank_main(void *p)
{
    struct rank_thread *t = p;
    t->rc = t->fn(&t->ctl, t->arg);
    oc_ctl_free(&t->ctl);
    return NULL;
}

/* A pthread call that fails here is an environment failure (no memory for
 * a thread, a stack): reported with file and line, like oc_xmalloc. */
static void pthread_check_(int rc, const char *call, const char *file, int line)
{
    if (rc == 0)
        return;
    fprintf(stderr, "ocsim: %s failed at %s:%d: %s\n", call, file, line,
            strerror(rc));
    abort();
}
#define pthreadCheck(call) pthread_check_((call), #call, __FILE__, __LINE__)

int oc_ctl_local_run(int n, double timeout_s,
                     int (*fn)(struct oc_ctl *c, void *arg), void *arg)
{
    OC_ASSERT(n >= 1 && timeout_s > 0 && fn != NULL);
    struct shared sh;
    memset(&sh, 0, sizeof sh);
    sh.size = n;
    pthreadCheck(pthread_mutex_init(&sh.mu, NULL));
    pthread_condattr_t ca;
    pthreadCheck(pthread_condattr_init(&ca));
    pthreadCheck(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC));
    pthreadCheck(pthread_cond_init(&sh.cv, &ca));
    pthread_condattr_destroy(&ca);

    /* The board (lost.h) in this process's memory: an interruption names
     * what rank 0 was doing */
    void *board = oc_xcalloc(1, oc_lost_board_bytes(n));
    oc_lost_board_attach(board, n, 1);
    struct rank_thread *t = oc_xcalloc((size_t)n, sizeof *t);
    for (int i = 0; i < n; i++) {
        struct rank_state *rs = oc_xcalloc(1, sizeof *rs);
        rs->sh = &sh;
        struct oc_ctl *c = &t[i].ctl;
        c->ops = &local_ops;
        c->impl = rs;
        c->rank = c->local_rank = i;
        c->size = c->local_ranks = n;
        c->timeout_s = timeout_s;
        snprintf(c->what, sizeof c->what, "set-up");
        c->slot = oc_lost_slot_take(i, i);
        t[i].fn = fn;
        t[i].arg = arg;
    }
    if (n == 1) {
        rank_main(&t[0]);
    } else {
        for (int i = 0; i < n; i++)
            pthreadCheck(pthread_create(&t[i].thread, NULL, rank_main, &t[i]));
        for (int i = 0; i < n; i++)
            pthreadCheck(pthread_join(t[i].thread, NULL));
    }
    int rc = t[0].rc;
    for (int i = 1; i < n; i++)
        if (t[i].rc > rc)
            rc = t[i].rc;
    free(t);
    oc_lost_board_detach();
    free(board);

    /* What timed-out calls left: every thread has returned, so nobody
     * points into it (a rendezvous sender unlinks its message before it
     * returns). */
    while (sh.colls != NULL) {
        struct coll *k = sh.colls;
        sh.colls = k->next;
        coll_free(k);
    }
    while (sh.msgs != NULL) {
        struct msg *m = sh.msgs;
        sh.msgs = m->next;
        OC_ASSERT(m->eager);
        msg_free(m);
    }
    pthread_cond_destroy(&sh.cv);
    pthread_mutex_destroy(&sh.mu);
    return rc;
}
