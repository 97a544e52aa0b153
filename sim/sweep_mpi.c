/* sweep_mpi.c: the launcher's world, the proxy process and rank 0's side
 * of the MPI sweep (see sweep_mpi.h; the serving ranks:
 * sweep_mpi_serve.c; the MPI calls: sweep_mpi_proxy.c). */
#define _GNU_SOURCE
#include "sweep_mpi.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "sweep_journal.h"
#include "sweep_mpi_priv.h"

struct oc_mpi_state oc_mpi_g = {0, 0, 1, -1, -1, -1, 60.0};

/* ---- the world ---------------------------------------------------------- */

static int env_int(const char *name, int *v)
{
    const char *s = getenv(name);
    if (!s || !s[0])
        return 0;
    char *end = NULL;
    long x = strtol(s, &end, 10);
    if (*end || x < 0 || x > 1 << 24)
        return 0;
    *v = (int)x;
    return 1;
}

int oc_sweep_mpi_world(int *rank)
{
    static const char *const vars[][2] = {
        {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
        {"PMI_SIZE", "PMI_RANK"},
        {"SLURM_STEP_NUM_TASKS", "SLURM_PROCID"},
    };
    *rank = 0;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        int size = 0, r = 0;
        if (env_int(vars[i][0], &size) && env_int(vars[i][1], &r) && size > 1 && r < size) {
            *rank = r;
            return size;
        }
    }
    return 1;
}

int oc_sweep_mpi_cores(void)
{
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* ---- the proxy and its socket ------------------------------------------ */

int oc_mpi_send(int sock, const struct oc_mpi_head *h, const void *payload, size_t n)
{
    if (sock < 0)
        return -1;
    struct iovec iov[2] = {{(void *)h, sizeof *h}, {(void *)payload, n}};
    struct msghdr mh = {0};
    mh.msg_iov = iov;
    mh.msg_iovlen = n ? 2 : 1;
    for (;;) {
        ssize_t k = sendmsg(sock, &mh, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        return k == (ssize_t)(sizeof *h + n) ? 0 : -1;
    }
}

ssize_t oc_mpi_recv(int sock, void *buf, size_t cap, int timeout_ms)
{
    if (sock < 0)
        return -1;
    struct pollfd pf = {sock, POLLIN, 0};
    int k;
    while ((k = poll(&pf, 1, timeout_ms)) < 0 && errno == EINTR)
        ;
    if (k == 0)
        return 0;
    ssize_t len;
    while ((len = recv(sock, buf, cap, 0)) < 0 && errno == EINTR)
        ;
    if (len < (ssize_t)sizeof(struct oc_mpi_head))
        return -1;
    struct oc_mpi_head h;
    memcpy(&h, buf, sizeof h);
    return h.magic == OC_MPI_MAGIC ? len : -1;
}

/* The proxy program: $OCSIM_MPI_PROXY, or ocsim-mpi-proxy beside this
 * executable. 0, or -1 with st->msg. */
static int proxy_path(char *path, size_t n, struct oc_status *st)
{
    const char *env = getenv("OCSIM_MPI_PROXY");
    if (env && env[0]) {
        snprintf(path, n, "%s", env);
    } else {
        char self[4096];
        ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
        if (k <= 0)
            return oc_fail(st, "cannot find ocsim's own path (/proc/self/exe): %s",
                           strerror(errno));
        self[k] = '\0';
        char *slash = strrchr(self, '/');
        if (slash)
            *slash = '\0';
        snprintf(path, n, "%s/ocsim-mpi-proxy", self);
    }
    if (access(path, X_OK) != 0)
        return oc_fail(st, "launched as rank %d of %d (mpirun/srun), but %s: %s (this ocsim "
                           "was built without MPI, or OCSIM_MPI_PROXY is wrong)",
                       oc_mpi_g.rank, oc_mpi_g.size, path, strerror(errno));
    return 0;
}

int oc_mpi_start(struct oc_status *st)
{
    struct oc_mpi_state *g = &oc_mpi_g;
    if (g->started)
        return g->sock >= 0 ? 0 : oc_fail(st, "the MPI proxy of this rank is gone");
    g->size = oc_sweep_mpi_world(&g->rank);
    const char *t = getenv("OCSIM_SWEEP_MPI_TIMEOUT_S");
    if (t && t[0] && atof(t) > 0)
        g->timeout_s = atof(t);
    char path[4200];
    if (proxy_path(path, sizeof path, st) != 0)
        return -1;
    int sv[2], sp[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return oc_fail(st, "cannot create the MPI proxy's socket: %s", strerror(errno));
    if (pipe(sp) != 0) {
        close(sv[0]);
        close(sv[1]);
        return oc_fail(st, "cannot create a pipe: %s", strerror(errno));
    }
    /* Room for every slot's RUN and a round of results each way (Linux's
     * default is about 200 KB; the kernel caps it at wmem_max): the parent
     * and the proxy each block on a full socket while the other is blocked
     * too only once both directions are full. */
    for (int i = 0; i < 2; i++) {
        int bytes = 8 << 20;
        setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
        setsockopt(sv[i], SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
    }
    char a[5][32];
    snprintf(a[0], sizeof a[0], "%d", sv[1]);
    snprintf(a[1], sizeof a[1], "%d", sp[1]);
    snprintf(a[2], sizeof a[2], "%d", g->rank);
    snprintf(a[3], sizeof a[3], "%d", g->size);
    snprintf(a[4], sizeof a[4], "%g", g->timeout_s);
    char *argv[] = {path, a[0], a[1], a[2], a[3], a[4], NULL};
    const pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return oc_fail(st, "cannot fork the MPI proxy: %s", strerror(errno));
    if (pid == 0) {
        close(sv[0]);
        close(sp[0]);
        /* The proxy holds only its two descriptors: one of a pipe of the
         * sweep (a job pipe's write end) kept open would keep its readers
         * waiting. */
        if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0)
            for (int fd = 3; fd < 4096; fd++)
                fcntl(fd, F_SETFD, FD_CLOEXEC);
        fcntl(sv[1], F_SETFD, 0);
        fcntl(sp[1], F_SETFD, 0);
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* kept across exec */
#endif
        if (getppid() != parent)
            _exit(1);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        execv(path, argv);
        _exit(127);
    }
    close(sv[1]);
    close(sp[1]);
    g->started = 1;
    g->pid = pid;
    g->sock = sv[0];
    g->stop_rd = sp[0];
    return 0;
}

/* BYE to the proxy, and it reaped. */
static void proxy_finish(void)
{
    struct oc_mpi_state *g = &oc_mpi_g;
    if (!g->started || g->pid < 0)
        return;
    struct oc_mpi_head h = {OC_MPI_MAGIC, OC_MPI_BYE, OC_MPI_SELF, 0, 0, 0, 0.0};
    oc_mpi_send(g->sock, &h, NULL, 0);
    while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    if (g->sock >= 0)
        close(g->sock);
    close(g->stop_rd);
    g->sock = g->stop_rd = -1;
    g->pid = -1;
}

/* FNV-1a 64 (Fowler, Noll, Vo) */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ULL;
    return h;
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
    return s ? fnv(h, s, strlen(s) + 1) : fnv(h, "", 1);
}

uint64_t oc_mpi_setup_hash(const struct oc_model *m, const struct oc_topology *t,
                           const struct oc_replay_opts *ro)
{
    uint64_t h = 0xcbf29ce484222325ULL, x;
    x = oc_hash_model(m);
    h = fnv(h, &x, sizeof x);
    x = oc_hash_topology(t);
    h = fnv(h, &x, sizeof x);
    int v[5] = {(int)ro->fidelity, (int)ro->algo, ro->coarse, ro->uniform_stages, ro->steady};
    h = fnv(h, v, sizeof v);
    h = fnv_str(h, ro->platform_file);
    for (int64_t i = 0; i < ro->n_cfg; i++)
        h = fnv_str(h, ro->cfg[i]);
    return h;
}

/* ---- rank 0 ------------------------------------------------------------- */

struct peer {
    int hello, ok, lost, jobs;
    int use;       /* this sweep: it parsed the same inputs */
    uint64_t hash;
    char host[64];
    int64_t *out;  /* (jobs) layouts in flight */
    int nout;
};

struct oc_sweep_remote {
    int seq, size, open;
    struct peer *peer; /* (size); [0] unused */
    int64_t n, outstanding;
    double wall_limit_s;
    unsigned char *buf;
};

static struct oc_sweep_remote rem0;

/* The hellos of every serving rank, within the timeout; a rank that is
 * silent is left out (lost). Prints one line per rank that cannot serve. */
static void handshake(struct oc_sweep_remote *r)
{
    struct oc_mpi_state *g = &oc_mpi_g;
    char format[64];
    oc_sweep_record_format(format, sizeof format);
    int missing = r->size - 1;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    /* the hellos wait for every rank's start (MPI_Init is collective),
     * which may take longer than a silence that means a rank is lost */
    const double wait_s = g->timeout_s > 60 ? g->timeout_s : 60;
    const double until = (double)ts.tv_sec + wait_s;
    while (missing > 0) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int left_ms = (int)(1000 * (until - (double)ts.tv_sec));
        ssize_t len = left_ms > 0 ? oc_mpi_recv(g->sock, r->buf, OC_MPI_MSG_MAX, left_ms) : 0;
        if (len < 0) {
            fprintf(stderr, "ocsim sweep: warning: the MPI proxy of rank 0 ended before every "
                            "rank said hello: the sweep runs on rank 0 alone\n");
            close(g->sock);
            g->sock = -1;
            return;
        }
        if (len == 0)
            break;
        struct oc_mpi_head h;
        memcpy(&h, r->buf, sizeof h);
        if (h.peer <= 0 || h.peer >= r->size)
            continue;
        struct peer *p = &r->peer[h.peer];
        if (h.type == OC_MPI_LOST) {
            missing -= !p->hello && !p->lost;
            p->lost = 1;
            continue;
        }
        if (h.type != OC_MPI_HELLO || p->hello || p->lost ||
            (size_t)len < sizeof h + sizeof(struct oc_mpi_hello))
            continue;
        struct oc_mpi_hello he;
        memcpy(&he, r->buf + sizeof h, sizeof he);
        he.host[sizeof he.host - 1] = he.msg[sizeof he.msg - 1] = he.format[63] = '\0';
        snprintf(p->host, sizeof p->host, "%s", he.host);
        p->hello = 1;
        missing--;
        if (!he.ok) {
            fprintf(stderr, "ocsim sweep: warning: rank %d (%s) does not take part: %s\n",
                    h.peer, p->host, he.msg[0] ? he.msg : "its setup failed");
        } else if (strcmp(he.format, format) != 0) {
            fprintf(stderr, "ocsim sweep: warning: rank %d (%s) does not take part: another "
                            "build of ocsim (%s, rank 0 %s)\n",
                    h.peer, p->host, he.format, format);
        } else {
            p->ok = 1;
            p->jobs = he.jobs > 0 ? (he.jobs < 256 ? he.jobs : 256) : 1;
            p->hash = he.setup_hash;
            p->out = oc_xcalloc((size_t)p->jobs, sizeof *p->out);
        }
    }
    for (int k = 1; k < r->size; k++) {
        if (!r->peer[k].hello && !r->peer[k].lost)
            r->peer[k].lost = 1; /* no hello in time */
        if (r->peer[k].lost)
            fprintf(stderr, "ocsim sweep: warning: rank %d sent no hello in %.0f s: left "
                            "out\n",
                    k, wait_s);
    }
}

int oc_sweep_remote_begin(struct oc_sweep_remote **rp, const struct oc_model *m,
                          const struct oc_topology *t, const struct oc_replay_opts *ro,
                          double wall_limit_s, int64_t n, int local_jobs,
                          struct oc_status *st)
{
    struct oc_mpi_state *g = &oc_mpi_g;
    struct oc_sweep_remote *r = &rem0;
    *rp = NULL;
    int rank;
    if (oc_sweep_mpi_world(&rank) <= 1 || rank != 0)
        return 0;
    if (!g->started) {
        if (oc_mpi_start(st) != 0)
            return -1;
        r->size = g->size;
        r->peer = oc_xcalloc((size_t)r->size, sizeof *r->peer);
        r->buf = oc_xmalloc(OC_MPI_MSG_MAX);
        handshake(r);
    }
    if (g->sock < 0)
        return 0;
    const uint64_t want = oc_mpi_setup_hash(m, t, ro);
    static int first = 1; /* the command's own sweep; later callers may differ */
    int any = 0, slots = local_jobs, ranks = 1;
    for (int k = 1; k < r->size; k++) {
        struct peer *p = &r->peer[k];
        p->nout = 0;
        p->use = p->ok && !p->lost && p->hash == want;
        any |= p->use;
        if (first && p->ok && !p->lost && p->hash != want)
            fprintf(stderr, "ocsim sweep: warning: rank %d (%s) does not take part: its model, "
                            "topology or simulation options differ from rank 0's (other "
                            "files on its node?)\n",
                    k, p->host);
        slots += p->use ? p->jobs : 0;
        ranks += p->use;
    }
    if (first)
        fprintf(stderr, "ocsim sweep: %d of %d MPI ranks simulate, %d at a time (rank 0: %d)\n",
                ranks, r->size, slots, local_jobs);
    first = 0;
    if (!any)
        return 0;
    r->seq++;
    r->open = 1;
    r->n = n;
    r->outstanding = 0;
    r->wall_limit_s = wall_limit_s;
    *rp = r;
    return 0;
}

int oc_sweep_remote_fd(const struct oc_sweep_remote *r)
{
    (void)r;
    return oc_mpi_g.sock;
}

int oc_sweep_remote_size(const struct oc_sweep_remote *r)
{
    return r->size;
}

int oc_sweep_remote_has_free(const struct oc_sweep_remote *r, int rank)
{
    const struct peer *p = &r->peer[rank];
    return r->open && oc_mpi_g.sock >= 0 && p->use && !p->lost && p->nout < p->jobs;
}

static void to_rank(struct oc_sweep_remote *r, int rank, enum oc_mpi_type type, int64_t index,
                    const void *payload, size_t n)
{
    struct oc_mpi_head h = {OC_MPI_MAGIC, (uint32_t)type, rank, r->seq, index, r->n,
                            r->wall_limit_s};
    oc_mpi_send(oc_mpi_g.sock, &h, payload, n);
}

void oc_sweep_remote_give(struct oc_sweep_remote *r, int rank, int64_t index,
                          const struct oc_layout *l)
{
    struct peer *p = &r->peer[rank];
    OC_ASSERT(p->nout < p->jobs);
    p->out[p->nout++] = index;
    r->outstanding++;
    to_rank(r, rank, OC_MPI_RUN, index, l, sizeof *l);
}

void oc_sweep_remote_close(struct oc_sweep_remote *r)
{
    if (!r->open)
        return;
    r->open = 0;
    for (int k = 1; k < r->size; k++)
        if (r->peer[k].use && !r->peer[k].lost)
            to_rank(r, k, OC_MPI_NOMORE, 0, NULL, 0);
}

int64_t oc_sweep_remote_outstanding(const struct oc_sweep_remote *r)
{
    return r->outstanding;
}

/* Takes index off rank's layouts in flight; 0 when it was not there. */
static int take(struct oc_sweep_remote *r, int rank, int64_t index)
{
    struct peer *p = &r->peer[rank];
    for (int i = 0; i < p->nout; i++) {
        if (p->out[i] != index)
            continue;
        p->out[i] = p->out[--p->nout];
        r->outstanding--;
        return 1;
    }
    return 0;
}

/* Every layout rank had in flight fails with why. */
static void fail_rank(struct oc_sweep_remote *r, int rank, const char *why,
                      oc_sweep_remote_fn fn, void *ctx)
{
    struct peer *p = &r->peer[rank];
    char err[OC_MSG_MAX];
    snprintf(err, sizeof err, "rank %d (%s) %s", rank, p->host[0] ? p->host : "?", why);
    while (p->nout > 0) {
        int64_t index = p->out[--p->nout];
        r->outstanding--;
        fn(ctx, rank, index, NULL, err, 1);
    }
}

void oc_sweep_remote_read(struct oc_sweep_remote *r, oc_sweep_remote_fn fn, void *ctx)
{
    struct oc_mpi_state *g = &oc_mpi_g;
    ssize_t len = oc_mpi_recv(g->sock, r->buf, OC_MPI_MSG_MAX, 0);
    if (len == 0)
        return;
    if (len < 0) { /* the proxy died: nothing in flight comes back */
        close(g->sock);
        g->sock = -1;
        fprintf(stderr, "ocsim sweep: warning: the MPI proxy of rank 0 died: the layouts "
                        "on other ranks are simulated again on rank 0\n");
        for (int k = 1; k < r->size; k++)
            fail_rank(r, k, "unreachable: the MPI proxy of rank 0 died", fn, ctx);
        return;
    }
    struct oc_mpi_head h;
    memcpy(&h, r->buf, sizeof h);
    if (h.peer <= 0 || h.peer >= r->size)
        return;
    if (h.type == OC_MPI_LOST) {
        char why[96];
        snprintf(why, sizeof why, "lost: not heard for %.0f s", g->timeout_s);
        r->peer[h.peer].lost = 1;
        fprintf(stderr, "ocsim sweep: warning: rank %d (%s) lost: not heard for %.0f s; its "
                        "%d layouts in flight are simulated again elsewhere\n",
                h.peer, r->peer[h.peer].host, g->timeout_s, r->peer[h.peer].nout);
        fail_rank(r, h.peer, why, fn, ctx);
        return;
    }
    if (h.seq != r->seq || (h.type != OC_MPI_OK && h.type != OC_MPI_ERR) ||
        !take(r, h.peer, h.index))
        return; /* late, of an earlier sweep, or not a result */
    if (h.type == OC_MPI_ERR) {
        char err[OC_MSG_MAX];
        size_t k = (size_t)len - sizeof h;
        snprintf(err, sizeof err, "%.*s", (int)(k < sizeof err ? k : sizeof err - 1),
                 (const char *)r->buf + sizeof h);
        fn(ctx, h.peer, h.index, NULL, err, 0);
        return;
    }
    struct oc_metrics *mt = oc_xmalloc(sizeof *mt);
    int64_t index = -1;
    if (oc_sweep_record_decode(r->buf + sizeof h, (size_t)len - sizeof h, r->n, &index, mt) ==
            0 ||
        index != h.index)
        fn(ctx, h.peer, h.index, NULL, "its result came back damaged over MPI", 0);
    else
        fn(ctx, h.peer, h.index, mt, NULL, 0);
    free(mt);
}

void oc_sweep_remote_end(struct oc_sweep_remote *r, int stopped)
{
    r->open = 0;
    for (int k = 1; k < r->size; k++) {
        struct peer *p = &r->peer[k];
        if (stopped && p->ok && !p->lost && p->nout > 0)
            to_rank(r, k, OC_MPI_STOP, 0, NULL, 0);
        r->outstanding -= p->nout;
        p->nout = 0;
    }
}

int oc_sweep_mpi_end(int rc)
{
    struct oc_mpi_state *g = &oc_mpi_g;
    int rank;
    int size = oc_sweep_mpi_world(&rank);
    if (size <= 1 || rank != 0)
        return rc;
    struct oc_status st = {{0}};
    if (!g->started && oc_mpi_start(&st) != 0) {
        /* rank 0's own line said what went wrong, or this one does */
        if (rc == 0)
            fprintf(stderr, "ocsim sweep: %s\n", st.msg);
        return rc ? rc : 2;
    }
    for (int k = 1; k < size; k++) {
        struct oc_mpi_head h = {OC_MPI_MAGIC, OC_MPI_EXIT, k, 0, 0, 0, 0.0};
        oc_mpi_send(g->sock, &h, NULL, 0);
    }
    proxy_finish();
    for (int k = 1; rem0.peer && k < rem0.size; k++)
        free(rem0.peer[k].out);
    free(rem0.peer);
    free(rem0.buf);
    memset(&rem0, 0, sizeof rem0);
    return rc;
}

void oc_mpi_finish(void)
{
    proxy_finish();
}
