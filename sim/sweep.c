/* sweep.c: parallel simulation of many layouts (see sweep.h).
 *
 * Process tree: the parent (the ocsim command) forks `jobs` workers; a
 * worker reads a layout index (4 bytes, atomic on a pipe) from the job pipe,
 * simulates it in a grandchild through oc_replay_run_forked, and writes a
 * result record to its own result pipe. The parent writes the indices,
 * closes the job pipe, and polls the result pipes. None of these processes
 * starts SimGrid (the grandchildren do), so the log category ocsim_sweep
 * (see engine.h) gets $OCSIM_LOG through oc_sim_log_setup: the workers
 * started, each layout's result, at DEBUG. */
#define _POSIX_C_SOURCE 200809L
#include "sweep.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine.h" /* oc_sim_log_setup */
#include "sim_log.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_sweep, ocsim,
                                "the parallel sweep: workers, layouts dispatched, results");

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

static void worker(int job_fd, int res_fd, const struct oc_layout *layouts,
                   const struct oc_model *m, const struct oc_topology *t,
                   const struct oc_sweep_opts *o)
{
    struct record *r = oc_xmalloc(sizeof *r);
    int32_t idx;
    while (read_all(job_fd, &idx, sizeof idx) == sizeof idx) {
        memset(r, 0, sizeof *r);
        r->index = idx;
        struct oc_status st = {{0}};
        r->ok = oc_replay_run_forked(m, t, &layouts[idx], &o->replay, &r->mt,
                                     o->wall_limit_s, &st) == 0;
        if (!r->ok)
            snprintf(r->err, sizeof r->err, "%s", st.msg);
        XBT_DEBUG("worker %ld: layout %d %s%s%s", (long)getpid(), (int)idx,
                  r->ok ? "simulated" : "failed", r->ok ? "" : ": ", r->ok ? "" : r->err);
        if (write_all(res_fd, r, sizeof *r) != 0)
            break;
    }
    free(r);
}

int oc_sweep_run(const struct oc_layout *layouts, int64_t n,
                 const struct oc_model *m, const struct oc_topology *t,
                 const struct oc_sweep_opts *o, struct oc_status *st)
{
    if (n <= 0)
        return 0;
    if (n > INT32_MAX)
        return oc_fail(st, "too many layouts to sweep (%lld)", (long long)n);
    int jobs = o->jobs > 0 ? o->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs < 1)
        jobs = 1;
    if (jobs > n)
        jobs = (int)n;
    if (jobs > 256)
        jobs = 256;
    oc_sim_log_setup();
    XBT_DEBUG("sweep of %lld layouts on %d workers", (long long)n, jobs);

    int job_pipe[2];
    if (pipe(job_pipe) != 0)
        return oc_fail(st, "cannot create a pipe for the sweep: %s", strerror(errno));
    pid_t *pids = oc_xcalloc((size_t)jobs, sizeof *pids);
    struct pollfd *fds = oc_xcalloc((size_t)jobs, sizeof *fds);
    int started = 0, rc = 0;
    fflush(NULL); /* children must not flush our buffered output again */
    for (; started < jobs; started++) {
        int res[2];
        if (pipe(res) != 0) {
            rc = oc_fail(st, "cannot create a pipe for the sweep: %s", strerror(errno));
            break;
        }
        pid_t pid = fork();
        if (pid < 0) {
            close(res[0]);
            close(res[1]);
            rc = oc_fail(st, "cannot fork a sweep worker: %s", strerror(errno));
            break;
        }
        if (pid == 0) {
            close(job_pipe[1]);
            close(res[0]);
            for (int k = 0; k < started; k++)
                close(fds[k].fd);
            worker(job_pipe[0], res[1], layouts, m, t, o);
            _exit(0);
        }
        close(res[1]);
        XBT_DEBUG("worker %d started: pid %ld", started, (long)pid);
        pids[started] = pid;
        fds[started].fd = res[0];
        fds[started].events = POLLIN;
    }
    close(job_pipe[0]);

    /* The indices go in a writer child when they could fill the pipe
     * (64 KiB = 16 Ki indices) before the workers drain it. */
    pid_t feeder = -1;
    if (rc == 0) {
        if ((size_t)n * sizeof(int32_t) <= 65536) {
            for (int32_t i = 0; i < (int32_t)n; i++)
                write_all(job_pipe[1], &i, sizeof i);
        } else if ((feeder = fork()) == 0) {
            for (int32_t i = 0; i < (int32_t)n; i++)
                if (write_all(job_pipe[1], &i, sizeof i) != 0)
                    break;
            _exit(0);
        }
    }
    close(job_pipe[1]);

    struct record *r = oc_xmalloc(sizeof *r);
    int open_fds = started;
    int64_t received = 0;
    while (open_fds > 0) {
        int k = poll(fds, (nfds_t)started, -1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            rc = oc_fail(st, "sweep: poll failed: %s", strerror(errno));
            break;
        }
        for (int w = 0; w < started; w++) {
            if (fds[w].fd < 0 || !(fds[w].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            size_t got = read_all(fds[w].fd, r, sizeof *r);
            if (got == sizeof *r) {
                received++;
                if (o->on_done)
                    o->on_done(o->ctx, r->index, r->ok ? &r->mt : NULL,
                               r->ok ? NULL : r->err);
                continue;
            }
            close(fds[w].fd);
            fds[w].fd = -1;
            open_fds--;
        }
    }
    free(r);
    for (int w = 0; w < started; w++)
        while (waitpid(pids[w], NULL, 0) < 0 && errno == EINTR)
            ;
    if (feeder > 0)
        while (waitpid(feeder, NULL, 0) < 0 && errno == EINTR)
            ;
    free(pids);
    free(fds);
    if (rc == 0 && received != n)
        rc = oc_fail(st, "sweep: %lld of %lld layouts came back (a worker died)",
                     (long long)received, (long long)n);
    return rc;
}
