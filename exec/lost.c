/* lost.c: see lost.h. The signal handlers call only async-signal-safe
 * functions (signal-safety(7): kill, getpid, open, read, write, close,
 * fsync, nanosleep, signal, raise, _exit; strlen, strrchr and memcpy,
 * added by POSIX.1-2016) and C11's lock-free atomics, and format with the
 * small helpers below instead of printf.
 */
#define _POSIX_C_SOURCE 200809L
#include "lost.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "status.h"

struct board {
    atomic_int ended_by; /* 0, or 1 + the rank that claimed the end */
    int32_t nslots;
    struct oc_lost_slot slot[];
};

/* The process's state, read by the handlers. */
static struct board *g_board;
static volatile sig_atomic_t g_stream_fd = -1;
static volatile sig_atomic_t g_stream_rows; /* rows flushed (<= 1e7 steps) */
static int64_t g_stream_steps;
static volatile sig_atomic_t g_marked;

/* ------------------------------------------------------------------ */
/* Async-signal-safe text                                               */

struct line {
    char b[1024];
    size_t n;
};

static void put(struct line *l, const char *s)
{
    while (*s && l->n + 1 < sizeof l->b)
        l->b[l->n++] = *s++;
    l->b[l->n] = '\0';
}

static void put_int(struct line *l, long long v)
{
    char d[24];
    int k = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do
        d[k++] = (char)('0' + u % 10);
    while ((u /= 10) && k < (int)sizeof d);
    if (v < 0)
        put(l, "-");
    char r[24];
    for (int i = 0; i < k; i++)
        r[i] = d[k - 1 - i];
    r[k] = '\0';
    put(l, r);
}

/* A slot's text, copied so that a writer in progress cannot run it on. */
static void put_field(struct line *l, const char *s, size_t cap)
{
    char t[512];
    size_t n = cap < sizeof t ? cap : sizeof t;
    memcpy(t, s, n);
    t[n - 1] = '\0';
    put(l, t);
}

static void write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w <= 0)
            return;
        s += w, n -= (size_t)w;
    }
}

/* ------------------------------------------------------------------ */
/* Processes                                                            */

/* The state letter of /proc/<pid>/stat ('R', 'S', 'T', 'Z', ...), 0 when
 * the process is gone, '?' when it cannot be read (not Linux). */
static char proc_state(int64_t pid)
{
    struct line p = {.n = 0};
    put(&p, "/proc/");
    put_int(&p, pid);
    put(&p, "/stat");
    int fd = open(p.b, O_RDONLY);
    if (fd < 0)
        return errno == ENOENT ? 0 : '?';
    char buf[512];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return '?';
    buf[n] = '\0';
    /* "pid (comm) S ...": the comm may hold spaces and parentheses */
    char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' && rp[2] ? rp[2] : '?';
}

/* 1 when slot i's rank was lost: its slot says it runs, its process is
 * another one than this, and it is gone or a zombie. */
static int gone(int i)
{
    const struct oc_lost_slot *s = &g_board->slot[i];
    const int64_t pid = s->pid;
    if (s->state != OC_LOST_RUNNING || pid <= 0 || pid == (int64_t)getpid())
        return 0;
    if (kill((pid_t)pid, 0) != 0)
        return errno == ESRCH;
    return proc_state(pid) == 'Z';
}

/* ------------------------------------------------------------------ */
/* The stream                                                           */

void oc_lost_stream(int fd, int64_t steps)
{
    g_stream_steps = steps;
    g_stream_rows = 0;
    g_marked = 0;
    g_stream_fd = fd;
}

void oc_lost_stream_row(void) { g_stream_rows++; }

void oc_lost_stream_done(void) { g_stream_fd = -1; }

static void mark_partial(const char *why)
{
    const int fd = g_stream_fd;
    if (fd < 0 || g_marked)
        return;
    g_marked = 1;
    struct line l = {.n = 0};
    put(&l, "# partial: ");
    put_int(&l, g_stream_rows);
    put(&l, " of ");
    put_int(&l, g_stream_steps);
    put(&l, " steps completed; ");
    put(&l, why);
    put(&l, "\n");
    write_all(fd, l.b, l.n);
    fsync(fd);
}

/* ------------------------------------------------------------------ */
/* The end, claimed once per node                                       */

/* Slot s claims the end with why (written first, so that whoever reads
 * the claim finds it): 1 when it is the first. */
static int claim(struct oc_lost_slot *s, const char *why)
{
    /* A slot that gave its reason keeps it: the others read the claimant's
     * (the rank that timed out and claimed gets mpirun's SIGTERM next, and
     * its handler must not overwrite "timed out" with "interrupted"). */
    if (s->state == OC_LOST_ENDED)
        return 0;
    size_t n = strlen(why);
    if (n >= sizeof s->why)
        n = sizeof s->why - 1;
    memcpy(s->why, why, n);
    s->why[n] = '\0';
    s->state = OC_LOST_ENDED;
    int none = 0;
    return atomic_compare_exchange_strong(&g_board->ended_by, &none, s->rank + 1);
}

/* Marks the stream with the claimant's reason (mine when I claimed, or
 * when no claim can be read). */
static void mark_claimed(int claimed, const char *mine)
{
    if (g_stream_fd < 0)
        return;
    struct line theirs = {.n = 0};
    const int e = g_board ? atomic_load(&g_board->ended_by) : 0;
    for (int i = 0; !claimed && e > 0 && i < g_board->nslots; i++)
        if (g_board->slot[i].rank == e - 1)
            put_field(&theirs, g_board->slot[i].why, sizeof g_board->slot[i].why);
    mark_partial(theirs.n > 0 ? theirs.b : mine);
}

/* ------------------------------------------------------------------ */
/* The handlers                                                         */

/* Appends "rank R <verb> in <what>" of slot s. */
static void put_rank_what(struct line *l, const struct oc_lost_slot *s, const char *verb)
{
    put(l, "rank ");
    put_int(l, s->rank);
    put(l, verb);
    put(l, " in ");
    put_field(l, s->what, sizeof s->what);
}

/* This process's lowest-ranked slot (ctl_mpi.c: its only one), or -1. */
static int my_slot(void)
{
    int best = -1;
    for (int i = 0; i < g_board->nslots; i++)
        if (g_board->slot[i].pid == (int64_t)getpid() &&
            (best < 0 || g_board->slot[i].rank < g_board->slot[best].rank))
            best = i;
    return best;
}

/* The reason of the end: the lost ranks (*nlost of them), or with none
 * an interruption by sig while slot me was in its op. */
static void end_reason(struct line *why, int sig, int me, int *nlost)
{
    *nlost = 0;
    for (int i = 0; i < g_board->nslots; i++)
        if (gone(i)) {
            put(why, (*nlost)++ ? "; " : "");
            put_rank_what(why, &g_board->slot[i], " was lost");
        }
    if (*nlost > 0) {
        put(why, *nlost > 1 ? ": their processes are gone" : ": its process is gone");
        put(why, " (killed or crashed), the job is ended");
        return;
    }
    put(why, "interrupted (");
    put(why, sig == SIGINT ? "SIGINT" : "SIGTERM");
    put(why, ")");
    if (me >= 0) {
        put(why, " while ");
        put_rank_what(why, &g_board->slot[me], " was");
    }
}

static void on_end_signal(int sig)
{
    /* No board (before the control plane, after it): the default action. */
    if (!g_board) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    const int me = my_slot();
    struct line why = {.n = 0};
    int nlost = 0;
    end_reason(&why, sig, me, &nlost);
    /* the first to claim the end prints (one line per node); the others
     * take its reason for the mark */
    const int claimed = me >= 0 && claim(&g_board->slot[me], why.b);
    /* every slot of this process ended: never taken for a lost rank once
     * it has exited */
    for (int i = 0; i < g_board->nslots; i++)
        if (g_board->slot[i].pid == (int64_t)getpid())
            g_board->slot[i].state = OC_LOST_ENDED;
    if (claimed) {
        struct line out = {.n = 0};
        put(&out, "ocsim-exec: ");
        put(&out, why.b);
        put(&out, "\n");
        write_all(2, out.b, out.n);
    }
    if (g_stream_fd >= 0) {
        mark_claimed(claimed, why.b);
    } else {
        /* Open MPI ends what is left once a rank exits (SIGKILL): 200 ms
         * more for the stream's holder, whose SIGTERM came with ours */
        struct timespec ts = {0, 200000000L};
        nanosleep(&ts, NULL);
    }
    _exit(nlost > 0 ? OC_LOST_EXIT : 130);
}

/* ------------------------------------------------------------------ */
/* The board                                                            */

size_t oc_lost_board_bytes(int nslots)
{
    return sizeof(struct board) + (size_t)nslots * sizeof(struct oc_lost_slot);
}

void oc_lost_board_attach(void *mem, int nslots, int init)
{
    OC_ASSERT(mem && nslots >= 1);
    struct board *b = mem;
    if (init) {
        memset(b, 0, oc_lost_board_bytes(nslots));
        atomic_init(&b->ended_by, 0);
        b->nslots = nslots;
    }
    g_board = b;
}

void oc_lost_handlers_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaddset(&sa.sa_mask, SIGINT);
    sa.sa_handler = on_end_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

void oc_lost_board_detach(void)
{
    g_board = NULL; /* the end signals take their default action again */
}

struct oc_lost_slot *oc_lost_slot_take(int i, int rank)
{
    OC_ASSERT(g_board && i >= 0 && i < g_board->nslots);
    struct oc_lost_slot *s = &g_board->slot[i];
    s->pid = (int64_t)getpid();
    s->rank = rank;
    snprintf(s->what, sizeof s->what, "set-up");
    s->state = OC_LOST_RUNNING;
    return s;
}

void oc_lost_post(struct oc_lost_slot *s, const char *what)
{
    if (s)
        snprintf(s->what, sizeof s->what, "%s", what);
}

void oc_lost_done(struct oc_lost_slot *s)
{
    if (s)
        s->state = OC_LOST_DONE;
}

int oc_lost_end(struct oc_lost_slot *s, const char *line)
{
    const int first = s && g_board ? claim(s, line) : 1;
    mark_claimed(first, line);
    return first;
}

void oc_lost_stopped(char *buf, size_t n)
{
    OC_ASSERT(n > 0);
    buf[0] = '\0';
    for (int i = 0; g_board && i < g_board->nslots; i++) {
        const struct oc_lost_slot *s = &g_board->slot[i];
        if (s->state != OC_LOST_RUNNING || s->pid <= 0 || s->pid == (int64_t)getpid() ||
            proc_state(s->pid) != 'T')
            continue;
        struct line l = {.n = 0};
        put(&l, "; rank ");
        put_int(&l, s->rank);
        put(&l, " is stopped (SIGSTOP) in ");
        put_field(&l, s->what, sizeof s->what);
        const size_t have = strlen(buf);
        snprintf(buf + have, n - have, "%s", l.b);
    }
}
