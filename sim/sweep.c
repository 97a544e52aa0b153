/* sweep.c: parallel simulation of many layouts (see sweep.h).
 *
 * Process tree: the parent (the ocsim command) forks `jobs` workers; a
 * worker reads a layout index (4 bytes, atomic on a pipe) from the job pipe,
 * simulates it in a grandchild through oc_replay_run_forked, and writes a
 * result record to its own result pipe. The parent writes the indices in
 * order, one per worker at the start and one more per result back (so at
 * most `jobs` are out, and opts.more can stop the hand-out), closes the job
 * pipe when it hands out no more, and polls the result pipes. None of these processes
 * starts SimGrid (the grandchildren do), so the log category ocsim_sweep
 * (see engine.h) gets $OCSIM_LOG through oc_sim_log_setup: the workers
 * started, each layout's result, at DEBUG.
 *
 * Every worker leads a process group of its own, which its simulation
 * child joins: one kill(-pid, SIGKILL) ends both.
 *
 * Under an MPI launcher (sweep_mpi.h), rank 0's sweep also hands layouts
 * to the serving ranks' job slots (oc_sweep_remote_*): in the same index
 * order, one per free slot at the start and one more to the rank whose
 * result came back; the proxy's socket is polled with the result pipes.
 * A job carries its layout, so a serving rank's workers, forked before
 * its layouts arrive, simulate what they are sent. */
#define _POSIX_C_SOURCE 200809L
#include "sweep.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "engine.h" /* oc_sim_log_setup */
#include "sim_log.h"
#include "sweep_mpi.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_sweep, ocsim,
                                "the parallel sweep: workers, layouts dispatched, results");

/* One layout to simulate, on the job pipe (well under PIPE_BUF: written
 * and read whole by any worker). */
struct job {
    int32_t index;
    int32_t pad;
    struct oc_layout layout;
};

_Static_assert(256 * sizeof(struct job) <= 65536, "256 jobs fit in a pipe");

struct record {
    int64_t index;
    int32_t ok;
    char err[OC_MSG_MAX];
    struct oc_metrics mt;
};

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Reads up to n bytes; returns the count (n unless EOF came first). */
static size_t read_all(int fd, void *p, size_t n)
{
    char *c = p;
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, c + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    return got;
}

/* The test hooks of sweep.h, read once in the parent. */
struct hooks {
    long delay_ms;
    int32_t *kill;  /* (nkill) layout indices */
    int nkill;
};

static void hooks_read(struct hooks *h)
{
    memset(h, 0, sizeof *h);
    const char *d = getenv("OCSIM_TEST_SWEEP_DELAY_MS");
    if (d && d[0])
        h->delay_ms = strtol(d, NULL, 10);
    const char *k = getenv("OCSIM_TEST_SWEEP_KILL");
    if (!k || !k[0])
        return;
    h->kill = oc_xcalloc(strlen(k) + 1, sizeof *h->kill);
    char *end = NULL;
    for (;;) {
        long v = strtol(k, &end, 10);
        if (end == k)
            break;
        h->kill[h->nkill++] = (int32_t)v;
        if (*end != ',')
            break;
        k = end + 1;
    }
}

static int hook_kills(const struct hooks *h, int32_t idx)
{
    for (int i = 0; i < h->nkill; i++)
        if (h->kill[i] == idx)
            return 1;
    return 0;
}

/* OCSIM_TEST_SWEEP_KILL's simulation: it dies as the OOM killer's would. */
static int die_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    (void)arg;
    (void)out;
    (void)st;
    raise(SIGKILL);
    return -1;
}

static void simulate_one(struct record *r, int32_t idx, const struct oc_layout *layout,
                         const struct oc_model *m, const struct oc_topology *t,
                         const struct oc_sweep_opts *o, const struct hooks *h)
{
    struct oc_status st = {{0}};
    if (h->delay_ms > 0) {
        struct timespec ts = {h->delay_ms / 1000, (h->delay_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    if (hook_kills(h, idx)) {
        struct oc_sim_buf b = {0};
        r->ok = oc_sim_fork_run(die_child, NULL, NULL, &b, &st) == 0;
        oc_sim_buf_free(&b);
    } else {
        r->ok = oc_replay_run_forked(m, t, layout, &o->replay, &r->mt,
                                     o->wall_limit_s, &st) == 0;
    }
    if (!r->ok)
        snprintf(r->err, sizeof r->err, "%s", st.msg);
}

static void worker(int job_fd, int res_fd, const struct oc_model *m,
                   const struct oc_topology *t, const struct oc_sweep_opts *o,
                   const struct hooks *h)
{
    struct record *r = oc_xmalloc(sizeof *r);
    struct job j;
    while (read_all(job_fd, &j, sizeof j) == sizeof j) {
        const int32_t idx = j.index;
        memset(r, 0, sizeof *r);
        r->index = idx;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        simulate_one(r, idx, &j.layout, m, t, o, h);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        char label[256];
        oc_layout_format(&j.layout, label, sizeof label);
        XBT_DEBUG("worker %ld: layout %d %s %s in %.3f s%s%s", (long)getpid(), (int)idx, label,
                  r->ok ? "simulated" : "failed",
                  (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),
                  r->ok ? "" : ": ", r->ok ? "" : r->err);
        if (write_all(res_fd, r, sizeof *r) != 0)
            break;
    }
    free(r);
}

/* In a worker, before it simulates anything: its own process group (a
 * terminal's Ctrl-C reaches the caller alone, and the caller's kill of the
 * group reaches the simulation too), the default actions of the signals
 * the caller may handle, and death with the parent. */
static void worker_detach(pid_t parent)
{
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != parent) /* the parent died before prctl */
        _exit(1);
}

static void reap(pid_t pid)
{
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* The processes of a sweep: the workers (each a process group). */
struct procs {
    pid_t *pids;
    struct pollfd *fds; /* result pipes, then the stop descriptor */
    int started;
};

/* Ends every process of the sweep: kills each worker's group (the worker
 * and its simulation; after a normal end they are gone or leaving) while
 * they are unreaped (so no pid was reused), reaps them,
 * then the orphaned simulations this process adopted as subreaper (a
 * worker that died leaves its child to us). */
static void procs_end(struct procs *p)
{
    for (int w = 0; w < p->started; w++)
        kill(-p->pids[w], SIGKILL);
    for (int w = 0; w < p->started; w++)
        reap(p->pids[w]);
    for (int w = 0; w < p->started; w++)
        while (waitpid(-p->pids[w], NULL, 0) > 0 || errno == EINTR)
            ;
}

/* Forks the workers (up to `jobs`) on job_pipe[0]. Returns 0, or -1 with
 * st->msg (the ones started are in p). */
static int start_workers(struct procs *p, int jobs, int job_pipe[2], const struct oc_model *m,
                         const struct oc_topology *t, const struct oc_sweep_opts *o,
                         const struct hooks *h, struct oc_status *st)
{
    const pid_t parent = getpid();
    fflush(NULL); /* children must not flush our buffered output again */
    for (; p->started < jobs; p->started++) {
        int res[2];
        if (pipe(res) != 0)
            return oc_fail(st, "cannot create a pipe for the sweep: %s", strerror(errno));
        pid_t pid = fork();
        if (pid < 0) {
            close(res[0]);
            close(res[1]);
            return oc_fail(st, "cannot fork a sweep worker: %s", strerror(errno));
        }
        if (pid == 0) {
            worker_detach(parent);
            close(job_pipe[1]);
            close(res[0]);
            for (int k = 0; k < p->started; k++)
                close(p->fds[k].fd);
            worker(job_pipe[0], res[1], m, t, o, h);
            _exit(0);
        }
        setpgid(pid, pid); /* also here: no window where kill(-pid) misses */
        close(res[1]);
        XBT_DEBUG("worker %d started: pid %ld", p->started, (long)pid);
        p->pids[p->started] = pid;
        p->fds[p->started].fd = res[0];
        p->fds[p->started].events = POLLIN;
    }
    return 0;
}

/* The hand-out of layout indices: in order, while opts.more agrees, to
 * the local workers (the job pipe, at most `jobs` unread) and to the
 * serving ranks' free slots. A serving rank lost with layouts in flight
 * gives them back (retry): they are handed out again before any new one,
 * to whichever slot is free, so the job pipe stays open until no serving
 * rank has a layout out; it is closed when no more will come (the workers
 * then end once their layout is done). */
struct feed {
    int fd;              /* the job pipe's write end, -1 once closed */
    int open;            /* new indices go on being handed out */
    int jobs, local_out; /* local workers; jobs written, not back yet */
    int64_t next, n;     /* the next new index, and the count */
    int64_t passed;      /* indices passed over (more < 0): not handed out */
    const struct oc_layout *layouts;
    struct oc_sweep_remote *rem; /* the serving ranks' slots, or NULL */
    int64_t *retry;      /* (n) indices to hand out again */
    int64_t nretry;
};

/* Closes the job pipe once nothing can be written to it any more. */
static void feed_settle(struct feed *f)
{
    if (f->fd >= 0 && !f->open && f->nretry == 0 &&
        (!f->rem || oc_sweep_remote_outstanding(f->rem) == 0)) {
        close(f->fd);
        f->fd = -1;
    }
}

/* No new layouts: the serving ranks told, the pipe closed when settled. */
static void feed_close(struct feed *f)
{
    if (f->open && f->rem)
        oc_sweep_remote_close(f->rem);
    f->open = 0;
    feed_settle(f);
}

/* The end of the hand-out, whatever is left. */
static void feed_abort(struct feed *f)
{
    f->nretry = 0;
    feed_close(f);
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}

/* Whether the caller may still ask for a passed-over index (sweep.h). */
static int feed_waits(const struct feed *f, const struct oc_sweep_opts *o)
{
    return f->open && o->waiting && o->waiting(o->ctx);
}

/* The next index to hand out (one to retry first, then one the caller
 * passed over and now wants), or -1. */
static int64_t feed_next(struct feed *f, const struct oc_sweep_opts *o)
{
    if (f->nretry > 0)
        return f->retry[--f->nretry];
    if (f->open && o->extra) {
        const int64_t e = o->extra(o->ctx);
        if (e >= 0) {
            OC_ASSERT(e < f->next && f->passed > 0);
            f->passed--; /* passed over before, handed out now */
            return e;
        }
    }
    for (;;) {
        const int m = !f->open || f->next >= f->n ? 0 : o->more ? o->more(o->ctx, f->next) : 1;
        if (m == 0) {
            if (!feed_waits(f, o))
                feed_close(f);
            return -1;
        }
        if (m > 0)
            return f->next++;
        f->next++; /* settled by the caller: not handed out */
        f->passed++;
    }
}

/* Fills the local workers' free slots. At most `jobs` (<= 256) jobs are
 * ever unread, 256 x sizeof(struct job) below a pipe's 64 KiB. */
static void feed_local(struct feed *f, const struct oc_sweep_opts *o)
{
    while (f->fd >= 0 && f->local_out < f->jobs) {
        int64_t i = feed_next(f, o);
        if (i < 0)
            break;
        struct job j = {(int32_t)i, 0, f->layouts[i]};
        if (write_all(f->fd, &j, sizeof j) != 0) {
            feed_abort(f);
            break;
        }
        f->local_out++;
    }
    if (f->open && f->nretry == 0 && f->next >= f->n && !feed_waits(f, o))
        feed_close(f);
}

/* Fills the free slots of serving rank `rank` (all ranks: rank 0). */
static void feed_remote(struct feed *f, const struct oc_sweep_opts *o, int rank)
{
    if (!f->rem)
        return;
    int lo = rank > 0 ? rank : 1, hi = rank > 0 ? rank : oc_sweep_remote_size(f->rem) - 1;
    for (int r = lo; r <= hi; r++)
        while ((f->open || f->nretry > 0) && oc_sweep_remote_has_free(f->rem, r)) {
            int64_t i = feed_next(f, o);
            if (i < 0)
                return;
            oc_sweep_remote_give(f->rem, r, i, &f->layouts[i]);
        }
    if (f->open && f->nretry == 0 && f->next >= f->n && !feed_waits(f, o))
        feed_close(f);
}

/* What a result from a serving rank does in the collect loop. */
struct remote_ctx {
    const struct oc_sweep_opts *o;
    struct feed *f;
    int64_t *received;
};

static void remote_done(void *ctx, int rank, int64_t index, const struct oc_metrics *mt,
                        const char *err, int lost)
{
    struct remote_ctx *c = ctx;
    XBT_DEBUG("rank %d: layout %lld %s%s%s", rank, (long long)index,
              mt ? "simulated" : lost ? "lost, to hand out again" : "failed",
              mt ? "" : ": ", mt ? "" : err);
    if (lost) {
        c->f->retry[c->f->nretry++] = index;
        feed_local(c->f, c->o);
        feed_remote(c->f, c->o, 0);
    } else {
        ++*c->received;
        if (c->o->on_done)
            c->o->on_done(c->o->ctx, index, mt, mt ? NULL : err);
        feed_remote(c->f, c->o, rank);
    }
    feed_settle(c->f);
}

/* Reads results until every worker closed its pipe and no serving rank
 * has a layout in flight, or the stop descriptor (p->fds[p->started], fd
 * -1: none) became readable. p->fds[p->started + 1] is the MPI proxy's
 * socket (-1: none). Returns 0, 1 when stopped, -1 with st->msg;
 * *received counts the results. */
static int collect(struct procs *p, const struct oc_sweep_opts *o, struct feed *f,
                   int64_t *received, struct oc_status *st)
{
    struct record *r = oc_xmalloc(sizeof *r);
    struct pollfd *stop = &p->fds[p->started], *rfd = &p->fds[p->started + 1];
    struct remote_ctx rc_ctx = {o, f, received};
    int open_fds = p->started, rc = 0;
    while ((open_fds > 0 || (f->rem && oc_sweep_remote_outstanding(f->rem) > 0)) && rc == 0) {
        if (f->rem)
            rfd->fd = oc_sweep_remote_fd(f->rem);
        int k = poll(p->fds, (nfds_t)p->started + 2, -1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            rc = oc_fail(st, "sweep: poll failed: %s", strerror(errno));
            break;
        }
        /* The stop first: no result is taken after it, so what the caller
         * reports as finished is what it had when the signal came. */
        if (stop->fd >= 0 && (stop->revents & (POLLIN | POLLHUP | POLLERR))) {
            XBT_DEBUG("sweep stopped after %lld results", (long long)*received);
            rc = 1;
            break;
        }
        if (rfd->fd >= 0 && (rfd->revents & (POLLIN | POLLHUP | POLLERR)))
            oc_sweep_remote_read(f->rem, remote_done, &rc_ctx);
        for (int w = 0; w < p->started; w++) {
            if (p->fds[w].fd < 0 || !(p->fds[w].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            size_t got = read_all(p->fds[w].fd, r, sizeof *r);
            if (got == sizeof *r) {
                ++*received;
                if (o->on_done)
                    o->on_done(o->ctx, r->index, r->ok ? &r->mt : NULL,
                               r->ok ? NULL : r->err);
                f->local_out--;
                feed_local(f, o);
                feed_settle(f);
                continue;
            }
            close(p->fds[w].fd);
            p->fds[w].fd = -1;
            open_fds--;
        }
    }
    free(r);
    return rc;
}

/* Is the stop descriptor readable already (a signal before the start)? */
static int stop_pending(const int *stop_fd)
{
    if (!stop_fd)
        return 0;
    struct pollfd pf = {*stop_fd, POLLIN, 0};
    return poll(&pf, 1, 0) > 0;
}

int oc_sweep_run(const struct oc_layout *layouts, int64_t n,
                 const struct oc_model *m, const struct oc_topology *t,
                 const struct oc_sweep_opts *o, struct oc_status *st)
{
    if (n <= 0)
        return 0;
    if (n > INT32_MAX)
        return oc_fail(st, "too many layouts to sweep (%lld)", (long long)n);
    if (stop_pending(o->stop_fd))
        return 1;
    int rank;
    int jobs = o->jobs > 0                      ? o->jobs
               : oc_sweep_mpi_world(&rank) > 1 ? oc_sweep_mpi_cores() /* what it was given */
                                               : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs < 1)
        jobs = 1;
    if (jobs > n)
        jobs = (int)n;
    if (jobs > 256)
        jobs = 256;
    oc_sim_log_setup();
    XBT_DEBUG("sweep of %lld layouts on %d workers", (long long)n, jobs);

    struct oc_sweep_remote *rem = NULL; /* before any pipe: its proxy holds none */
    if (oc_sweep_remote_begin(&rem, m, t, &o->replay, o->wall_limit_s, n, jobs, st) != 0)
        return -1;
    int job_pipe[2];
    if (pipe(job_pipe) != 0)
        return oc_fail(st, "cannot create a pipe for the sweep: %s", strerror(errno));
#ifdef __linux__
    int was_subreaper = 0;
    prctl(PR_GET_CHILD_SUBREAPER, &was_subreaper);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
    struct hooks h;
    hooks_read(&h);
    struct procs p = {oc_xcalloc((size_t)jobs, sizeof *p.pids),
                      oc_xcalloc((size_t)jobs + 2, sizeof *p.fds), 0};
    int rc = start_workers(&p, jobs, job_pipe, m, t, o, &h, st);
    close(job_pipe[0]);
    struct feed f = {.fd = job_pipe[1], .open = 1, .jobs = p.started, .n = n,
                     .layouts = layouts, .rem = rem,
                     .retry = rem ? oc_xcalloc((size_t)n, sizeof *f.retry) : NULL};
    if (rc == 0) {
        feed_local(&f, o);
        feed_remote(&f, o, 0);
    } else {
        feed_abort(&f);
    }

    p.fds[p.started].fd = o->stop_fd ? *o->stop_fd : -1;
    p.fds[p.started].events = POLLIN;
    p.fds[p.started + 1].fd = -1;
    p.fds[p.started + 1].events = POLLIN;
    int64_t received = 0;
    if (rc == 0)
        rc = collect(&p, o, &f, &received, st);
    feed_abort(&f);
    free(f.retry);
    if (rem)
        oc_sweep_remote_end(rem, rc != 0);
    for (int w = 0; w < p.started; w++)
        if (p.fds[w].fd >= 0)
            close(p.fds[w].fd);
    procs_end(&p);
#ifdef __linux__
    prctl(PR_SET_CHILD_SUBREAPER, was_subreaper);
#endif
    free(p.pids);
    free(p.fds);
    free(h.kill);
    if (rc == 0 && received != f.next - f.passed)
        rc = oc_fail(st, "sweep: %lld of %lld layouts came back (a worker died)",
                     (long long)received, (long long)(f.next - f.passed));
    return rc;
}
