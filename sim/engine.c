/* engine.c: SimGrid start-up with ocsim's defaults, counted actors with
 * deadlock detection, and the fork-and-pipe runner (see engine.h). The
 * engine state is one file-static struct: SimGrid itself allows one engine
 * per process. It also declares the parent log category "ocsim" of every
 * category in sim/, and reads $OCSIM_LOG.
 *
 * What it is not: the platform (platform.c) or anything that knows GPUs,
 * collectives or schedules. */
#define _POSIX_C_SOURCE 200809L

#include "engine.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/semaphore.h>
#include <xbt/asserts.h>
#include <xbt/config.h>

#include "sim_log.h"

/* The parent of the log categories of sim/ (one per file), declared here
 * once; see engine.h for how to set them. */
XBT_LOG_NEW_CATEGORY(ocsim, "ocsim's simulator (sim/)");
XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_engine, ocsim,
                                "SimGrid start-up, counted actors, the fork runner");

/* ---- engine state ------------------------------------------------------ */

struct actor_rec {
    oc_sim_actor_fn fn;
    void *arg;
    char *name; /* for the deadlock message */
    int done;
};

static struct {
    int initialised, ran;
    struct oc_sim_platform plat;
    struct actor_rec *actors; /* (n_actors) */
    int64_t n_actors, cap_actors, finished;
    char **argv; /* handed to simgrid_init; lives as long as the process */
    size_t canary_off; /* bytes below an actor's first frame where its
                          canary sits; 0: none (a guard page, or a stack
                          too small) */
} eng;

static void stack_canary_setup(void);

/* ---- configuration ----------------------------------------------------- */

static const char *cfg_body(const char *s)
{
    return strncmp(s, "--cfg=", 6) == 0 ? s + 6 : s;
}

int oc_sim_cfg_check(const char *s, struct oc_status *st)
{
    OC_ASSERT(s);
    const char *kv = cfg_body(s);
    const char *colon = strchr(kv, ':');
    if (!colon || colon == kv || colon[1] == '\0')
        return oc_fail(st, "--cfg=%s: expected key:value, for example network/model:CM02", kv);
    for (const char *c = kv; c < colon; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              (*c >= '0' && *c <= '9') || *c == '/' || *c == '_' || *c == '.' ||
              *c == '-'))
            return oc_fail(st, "--cfg=%s: the key may only hold letters, digits and / _ . -", kv);
    for (const char *c = colon + 1; *c; c++)
        if (*c == ' ' || *c == '\t' || *c == '\n')
            return oc_fail(st, "--cfg=%s: the value may not hold spaces", kv);
    if (strncmp(kv, "contexts/nthreads:", 18) == 0 && strcmp(colon + 1, "1") != 0)
        return oc_fail(st, "--cfg=%s: ocsim runs actors in one thread (contexts/nthreads:1)", kv);
    return 0;
}

/* Does one of the user's cfg strings set `key`? */
static int user_sets(const struct oc_sim_engine_opts *o, const char *key)
{
    size_t n = strlen(key);
    for (int64_t i = 0; i < o->n_cfg; i++) {
        const char *kv = cfg_body(o->cfg[i]);
        if (strncmp(kv, key, n) == 0 && kv[n] == ':')
            return 1;
    }
    return 0;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = oc_xmalloc(n);
    memcpy(d, s, n);
    return d;
}

static char *xprintf_cfg(const char *prefix, const char *body)
{
    size_t n = strlen(prefix) + strlen(body) + 1;
    char *d = oc_xmalloc(n);
    snprintf(d, n, "%s%s", prefix, body);
    return d;
}

const char *oc_sim_log_env(void)
{
    const char *s = getenv("OCSIM_LOG");
    return s && s[0] ? s : NULL;
}

void oc_sim_log_setup(void)
{
    static int done;
    const char *spec = oc_sim_log_env();
    struct oc_status ignored;
    /* An invalid $OCSIM_LOG is left to oc_sim_engine_init, which says so in
     * one line; xbt_log_control_set would abort this process. */
    if (done || !spec || oc_sim_log_check(spec, &ignored) != 0)
        return;
    done = 1;
    char *copy = xstrdup(spec), *save = NULL;
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        xbt_log_control_set(tok);
    free(copy);
}

/* argv for simgrid_init: "ocsim", our defaults (skipped where the user sets
 * the same key), the user's cfg, "root.thresh:error", then the log
 * settings. Lives as long as the process (SimGrid keeps pointers). */
static char **simgrid_argv(const struct oc_sim_engine_opts *o, int *argc_out)
{
    static const char *const defaults[][2] = {
        {"network/model", "CM02"},
        {"network/crosstraffic", "0"},
        {"network/TCP-gamma", "0"},
        /* An actor's stack: SimGrid maps 8 MiB per actor by default, and a
         * replay starts one actor per CP ring step and per DP bucket
         * (thousands in a sweep): mapping and unmapping them was a tenth
         * of a 64-card sweep's CPU time. Every sweep and test here runs
         * with 16 KiB stacks (a guard page below each turns an overflow
         * into a crash, never a wrong number); 256 KiB leaves 16x that.
         * AddressSanitizer's frames are several times larger: its builds
         * take 1 MiB (SimGrid's 8 MiB made the Asan test suite's sweeps
         * 3-4x slower: 135 s against 35 s for `sweep --cards 64`). */
#if defined(__SANITIZE_ADDRESS__)
        {"contexts/stack-size", "1024"},
#else
        {"contexts/stack-size", "256"},
        /* No guard page: SimGrid protects one with mprotect when it
         * allocates an actor's stack and unprotects it when the actor
         * ends, and each call splits the mapping and flushes the TLB,
         * which this project's machines pay dearly (a 64-card sweep: 1.17
         * -> 1.00 s wall, system time 0.52 -> 0.30 s; docs/benchmarks.md,
         * fourteenth session). What the guard caught, the canary below
         * catches (trampoline, stack_canary_*): an actor that reaches half
         * of its stack fails its simulation with a message; the Asan
         * builds, which run the test suite in CI, keep SimGrid's guard. */
        {"contexts/guard-size", "0"},
#endif
    };
    const char *log = o->log ? o->log : oc_sim_log_env();
    size_t ndef = sizeof defaults / sizeof defaults[0];
    size_t nlog = 2;
    if (log)
        for (const char *c = log; *c; c++)
            nlog += *c == ' ';
    size_t cap = 1 + ndef + (size_t)o->n_cfg + nlog + 1;
    char **argv = oc_xcalloc(cap, sizeof *argv);
    int argc = 0;
    argv[argc++] = xstrdup("ocsim");
    for (size_t i = 0; i < ndef; i++)
        if (!user_sets(o, defaults[i][0])) {
            char kv[128];
            snprintf(kv, sizeof kv, "%s:%s", defaults[i][0], defaults[i][1]);
            argv[argc++] = xprintf_cfg("--cfg=", kv);
        }
    for (int64_t i = 0; i < o->n_cfg; i++)
        argv[argc++] = xprintf_cfg("--cfg=", cfg_body(o->cfg[i]));
    argv[argc++] = xstrdup("--log=root.thresh:error");
    if (log) {
        char *copy = xstrdup(log), *save = NULL;
        for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
            argv[argc++] = xprintf_cfg("--log=", tok);
        free(copy);
    }
    OC_ASSERT((size_t)argc < cap);
    argv[argc] = NULL;
    *argc_out = argc;
    return argv;
}

int oc_sim_engine_init(const struct oc_sim_engine_opts *o, struct oc_status *st)
{
    OC_ASSERT(o);
    if (eng.initialised)
        return oc_fail(st, "a SimGrid engine is already running in this process "
                           "(run each simulation in its own process: oc_sim_fork_run)");
    for (int64_t i = 0; i < o->n_cfg; i++)
        if (oc_sim_cfg_check(o->cfg[i], st) != 0)
            return -1;
    const char *log = o->log ? o->log : oc_sim_log_env();
    if (log && oc_sim_log_check(log, st) != 0)
        return -1;
    /* Check the platform inputs before SimGrid, which aborts on them. */
    if (o->platform_file) {
        if (oc_sim_platform_check_file(o->platform_file, st) != 0)
            return -1;
        if (o->cards < 1)
            return oc_fail(st, "cards must be at least 1 (got %" PRId64 ")", o->cards);
    } else {
        if (!o->topo)
            return oc_fail(st, "no platform: give a topology or a platform file");
        if (oc_sim_platform_check_topology(o->topo, o->cards, st) != 0)
            return -1;
    }

    int argc;
    eng.argv = simgrid_argv(o, &argc);
    /* simgrid_init takes the arguments it consumed out of argv. */
    char **given = oc_xmalloc(((size_t)argc + 1) * sizeof *given);
    memcpy(given, eng.argv, ((size_t)argc + 1) * sizeof *given);
    simgrid_init(&argc, eng.argv);
    eng.initialised = 1;
    stack_canary_setup();
    for (int i = 1; given[i]; i++)
        XBT_DEBUG("simgrid_init argument %d: %s", i, given[i]);
    free(given);

    int rc = o->platform_file
                 ? oc_sim_platform_load_file(&eng.plat, o->platform_file, o->cards,
                                             o->topo ? o->topo->gpus_per_node : 1, st)
                 : oc_sim_platform_build_twins(&eng.plat, o->topo, o->cards, o->twins,
                                               o->ntwins, o->reduced, st);
    if (rc == 0)
        XBT_DEBUG("platform loaded: %" PRId64 " cards, %" PRId64 " per node, %zu hosts",
                  eng.plat.cards, eng.plat.gpus_per_node, sg_host_count());
    return rc;
}

const struct oc_sim_platform *oc_sim_engine_platform(void)
{
    return eng.initialised && eng.plat.hosts ? &eng.plat : NULL;
}

/* ---- actors ------------------------------------------------------------ */

/* The stack canary, where an actor's stack has no guard page (the
 * default outside Asan builds, simgrid_argv): OC_CANARY_WORDS words of a
 * fixed pattern written half the stack size below the actor's first
 * frame (trampoline's) and checked when the actor returns. SimGrid's
 * context factories give every actor contexts/stack-size bytes and start
 * it a few hundred bytes below their top, so that place lies inside the
 * actor's own stack, and the actor's frames reach it only when it has
 * used half of its stack (every simulation here needs under 16 KiB of the
 * 256: engine.c's stack-size comment). A canary found overwritten fails
 * the simulation with a message naming the remedy, so a stack overrun is
 * a failed run, never a wrong number. Stacks under 64 KiB get no canary. */
enum { OC_CANARY_WORDS = 8 };
static const uint64_t canary_word = 0x6f6373696d21a5c3ull;

static void stack_canary_setup(void)
{
    eng.canary_off = 0;
    const int guard = sg_cfg_get_int("contexts/guard-size");
    const int stack_kib = sg_cfg_get_int("contexts/stack-size");
    if (guard == 0 && stack_kib >= 64)
        eng.canary_off = (size_t)stack_kib * 1024 / 2;
}

/* The canary's place for the frame at `frame`: 64-byte aligned, below it. */
static volatile uint64_t *stack_canary_at(const char *frame)
{
    const uintptr_t at = ((uintptr_t)frame - eng.canary_off) & ~(uintptr_t)63;
    return (volatile uint64_t *)at;
}

static int stack_canary_intact(volatile const uint64_t *c)
{
    for (int i = 0; i < OC_CANARY_WORDS; i++)
        if (c[i] != canary_word)
            return 0;
    return 1;
}

/* argv[1] is the actor's index in eng.actors: SimGrid copies argv, and the
 * actor's data pointer stays free for the caller. */
static void trampoline(int argc, char **argv)
{
    OC_ASSERT(argc == 2);
    const int64_t idx = strtoll(argv[1], NULL, 10);
    OC_ASSERT(idx >= 0 && idx < eng.n_actors);
    volatile uint64_t *canary = NULL;
    if (eng.canary_off) {
        canary = stack_canary_at(__builtin_frame_address(0));
        for (int i = 0; i < OC_CANARY_WORDS; i++)
            canary[i] = canary_word;
    }
    /* Copy: fn may create actors, which can move eng.actors. */
    const struct actor_rec r = eng.actors[idx];
    r.fn(r.arg);
    if (canary && !stack_canary_intact(canary))
        xbt_die("actor %s used more than half of its %d KiB stack: the simulation cannot be "
                "trusted; rerun with a larger --cfg=contexts/stack-size:KiB",
                r.name, sg_cfg_get_int("contexts/stack-size"));
    eng.actors[idx].done = 1;
    eng.finished++;
}

sg_actor_t oc_sim_actor_create(const char *name, sg_host_t host,
                               oc_sim_actor_fn fn, void *arg)
{
    OC_ASSERT(eng.initialised && name && host && fn);
    if (eng.n_actors == eng.cap_actors) {
        eng.cap_actors = eng.cap_actors ? 2 * eng.cap_actors : 64;
        eng.actors = oc_xrealloc(eng.actors, (size_t)eng.cap_actors * sizeof *eng.actors);
    }
    const int64_t idx = eng.n_actors++;
    eng.actors[idx] = (struct actor_rec){fn, arg, xstrdup(name), 0};
    char idx_s[24];
    snprintf(idx_s, sizeof idx_s, "%" PRId64, idx);
    const char *argv[] = {name, idx_s};
    return sg_actor_create_(name, host, trampoline, 2, argv);
}

struct oc_sim_async {
    oc_sim_actor_fn fn;
    void *arg;
    sg_sem_t done; /* released once when fn returned */
};

static void async_main(void *arg)
{
    struct oc_sim_async *a = arg;
    a->fn(a->arg);
    sg_sem_release(a->done);
}

struct oc_sim_async *oc_sim_async_start(const char *name, sg_host_t host,
                                        oc_sim_actor_fn fn, void *arg)
{
    OC_ASSERT(fn);
    struct oc_sim_async *a = oc_xmalloc(sizeof *a);
    a->fn = fn;
    a->arg = arg;
    a->done = sg_sem_init(0);
    oc_sim_actor_create(name, host, async_main, a);
    return a;
}

void oc_sim_async_wait(struct oc_sim_async *a)
{
    OC_ASSERT(a);
    sg_sem_acquire(a->done);
    sg_sem_destroy(a->done);
    free(a);
}

int oc_sim_engine_run(struct oc_status *st)
{
    if (!eng.initialised || !eng.plat.hosts)
        return oc_fail(st, "oc_sim_engine_run: no engine (call oc_sim_engine_init first)");
    if (eng.ran)
        return oc_fail(st, "oc_sim_engine_run: the simulation already ran in this process");
    eng.ran = 1;
    XBT_DEBUG("running; %" PRId64 " actors created so far", eng.n_actors);
    simgrid_run();
    XBT_DEBUG("simulation ended at t=%.9g s: %" PRId64 " of %" PRId64 " actors finished",
              simgrid_get_clock(), eng.finished, eng.n_actors);
    if (eng.finished == eng.n_actors)
        return 0;
    for (int64_t i = 0; i < eng.n_actors; i++)
        if (!eng.actors[i].done)
            XBT_DEBUG("deadlock: actor %" PRId64 " (%s) never finished", i, eng.actors[i].name);
    char names[256] = "";
    size_t len = 0;
    int listed = 0;
    for (int64_t i = 0; i < eng.n_actors && listed < 4; i++) {
        if (eng.actors[i].done)
            continue;
        int w = snprintf(names + len, sizeof names - len, "%s%s", listed ? ", " : "",
                         eng.actors[i].name);
        if (w < 0 || (size_t)w >= sizeof names - len)
            break;
        len += (size_t)w;
        listed++;
    }
    return oc_fail(st, "simulation deadlocked at t=%.9g s: %" PRId64 " of %" PRId64
                       " actors never finished (%s%s)",
                   simgrid_get_clock(), eng.n_actors - eng.finished, eng.n_actors,
                   names, eng.n_actors - eng.finished > listed ? ", ..." : "");
}

double oc_sim_now_s(void)
{
    return simgrid_get_clock();
}

void oc_sim_compute_s(double seconds)
{
    OC_ASSERT(seconds >= 0);
    if (seconds > 0)
        sg_actor_execute(seconds * sg_host_get_speed(sg_host_self()));
}

/* ---- result buffer ----------------------------------------------------- */

void oc_sim_buf_append(struct oc_sim_buf *b, const void *p, size_t n)
{
    OC_ASSERT(b && (p || n == 0));
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        b->data = oc_xrealloc(b->data, cap);
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
}

void oc_sim_buf_free(struct oc_sim_buf *b)
{
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ---- fork runner ------------------------------------------------------- */

#define OC_SIM_PIPE_MAGIC 0x6f63736dU /* "ocsm" */

struct pipe_header {
    uint32_t magic;
    int32_t rc;   /* fn's return value */
    uint64_t len; /* bytes that follow: st.msg when rc != 0, else the result */
};

static int write_all(int fd, const void *p, size_t n)
{
    const unsigned char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static void child_main(oc_sim_child_fn fn, void *arg, int fd)
{
    struct oc_status st = {{0}};
    struct oc_sim_buf b = {0};
    int rc = fn(arg, &b, &st);
    struct pipe_header h = {OC_SIM_PIPE_MAGIC, rc == 0 ? 0 : -1, 0};
    const void *body = b.data;
    if (rc != 0) {
        if (st.msg[0] == '\0')
            snprintf(st.msg, sizeof st.msg, "simulation failed without a message");
        body = st.msg;
        h.len = strlen(st.msg);
    } else {
        h.len = b.len;
    }
    XBT_DEBUG("child %ld: the simulation returned %d, %" PRIu64 " bytes to send", (long)getpid(),
              rc, h.len);
    int ok = write_all(fd, &h, sizeof h) == 0 && write_all(fd, body, (size_t)h.len) == 0;
    _exit(ok ? 0 : 3);
}

/* What the child wrote on stderr, reduced to the line worth quoting: the
 * first SimGrid critical message (an uncaught exception, an assertion),
 * else its first error (a platform parse error), else the last line that
 * is not part of a backtrace. */
struct err_scan {
    char line[1024];
    size_t n;
    char critical[300];
    char error[300];
    char last[300];
};

static void err_line(struct err_scan *e)
{
    e->line[e->n] = '\0';
    const char *s = e->line;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s == '\0' || strncmp(s, "->", 2) == 0 || strncmp(s, "Backtrace", 9) == 0)
        return;
    const char *crit = strstr(s, "CRITICAL] ");
    if (crit && !e->critical[0] && !strstr(s, "Current backtrace"))
        snprintf(e->critical, sizeof e->critical, "%.*s", (int)sizeof e->critical - 1, crit + 10);
    const char *err = strstr(s, "ERROR] ");
    if (err && !e->error[0] && !strstr(s, "Exiting now"))
        snprintf(e->error, sizeof e->error, "%.*s", (int)sizeof e->error - 1, err + 7);
    snprintf(e->last, sizeof e->last, "%.*s", (int)sizeof e->last - 1, s);
}

static void err_feed(struct err_scan *e, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n') {
            err_line(e);
            e->n = 0;
        } else if (e->n < sizeof e->line - 1) {
            e->line[e->n++] = p[i];
        }
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Makes the pipes (err only without keep_stderr) and forks; the child
 * runs fn and exits in child_main. Returns the child's pid in the parent,
 * with data[0] and err[0] (-1: none) left open to read; -1 with st->msg
 * and nothing left open. */
static pid_t fork_child(oc_sim_child_fn fn, void *arg, int keep_stderr, int data[2],
                        int err[2], struct oc_status *st)
{
    data[0] = data[1] = err[0] = err[1] = -1;
    if (pipe(data) != 0)
        return oc_fail(st, "cannot create a pipe for the simulation: %s", strerror(errno));
    if (!keep_stderr && pipe(err) != 0) {
        int r = oc_fail(st, "cannot create a pipe for the simulation: %s", strerror(errno));
        close(data[0]);
        close(data[1]);
        return r;
    }
    fflush(NULL); /* no buffered output copied into the child */
    pid_t pid = fork();
    if (pid < 0) {
        int r = oc_fail(st, "cannot fork the simulation: %s", strerror(errno));
        close(data[0]);
        close(data[1]);
        if (err[0] >= 0) {
            close(err[0]);
            close(err[1]);
        }
        return r;
    }
    if (pid == 0) {
        /* a child's own child (the steady-state fold's reduced run) dies
         * with it when the wall limit kills it */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(data[0]);
        if (err[1] >= 0) {
            close(err[0]);
            dup2(err[1], STDERR_FILENO);
            dup2(err[1], STDOUT_FILENO);
            close(err[1]);
        }
        signal(SIGPIPE, SIG_DFL);
        child_main(fn, arg, data[1]); /* does not return */
    }
    close(data[1]);
    if (err[1] >= 0)
        close(err[1]);
    return pid;
}

/* Reads the child's result (data_fd) into raw and its stderr (err_fd, -1:
 * none) into es, both together (a child blocked on a full stderr pipe
 * would never finish its result), until both are closed or the wall limit
 * (0: none) passes. Closes both. Returns 1 when the limit passed. */
static int drain(int data_fd, int err_fd, double wall_limit_s, struct oc_sim_buf *raw,
                 struct err_scan *es)
{
    struct pollfd pf[2] = {{data_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    int open_fds = err_fd >= 0 ? 2 : 1;
    const double deadline = wall_limit_s > 0 ? now_s() + wall_limit_s : 0;
    int timed_out = 0;
    while (open_fds > 0) {
        int wait_ms = -1;
        if (deadline > 0) {
            double left = deadline - now_s();
            if (left <= 0) {
                timed_out = 1;
                break;
            }
            wait_ms = (int)(left * 1000) + 1;
        }
        int r = poll(pf, 2, wait_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            break;
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char buf[65536];
            ssize_t n = read(pf[i].fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                close(pf[i].fd);
                pf[i].fd = -1;
                open_fds--;
            } else if (i == 0) {
                oc_sim_buf_append(raw, buf, (size_t)n);
            } else {
                err_feed(es, buf, (size_t)n);
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (pf[i].fd >= 0)
            close(pf[i].fd);
    if (es->n > 0)
        err_line(es);
    return timed_out;
}

/* What the child's exit status and the bytes it sent mean: the result
 * appended to out (0), or one line in st->msg (-1), quoting the child's
 * stderr when it crashed or left without a result. */
static int fork_verdict(int status, int timed_out, double wall_limit_s,
                        const struct oc_sim_buf *raw, const struct err_scan *es,
                        struct oc_sim_buf *out, struct oc_status *st)
{
    const char *quote = es->critical[0] ? es->critical : es->error[0] ? es->error : es->last;
    struct pipe_header h;
    if (timed_out)
        return oc_fail(st, "simulation ran past its wall-clock limit of %g s and was killed",
                       wall_limit_s);
    if (WIFSIGNALED(status))
        return oc_fail(st, "simulation crashed (signal %d, %s)%s%s", WTERMSIG(status),
                       strsignal(WTERMSIG(status)), quote[0] ? ": " : "", quote);
    if (raw->len < sizeof h)
        return oc_fail(st, "simulation exited (code %d) without a result%s%s",
                       WIFEXITED(status) ? WEXITSTATUS(status) : -1, quote[0] ? ": " : "",
                       quote);
    memcpy(&h, raw->data, sizeof h);
    if (h.magic != OC_SIM_PIPE_MAGIC || raw->len - sizeof h != h.len)
        return oc_fail(st, "simulation sent a truncated result (%zu bytes)", raw->len);
    if (h.rc != 0)
        return oc_fail(st, "%.*s", (int)h.len, (const char *)raw->data + sizeof h);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return oc_fail(st, "simulation exited with code %d", WEXITSTATUS(status));
    oc_sim_buf_append(out, raw->data + sizeof h, (size_t)h.len);
    return 0;
}

int oc_sim_fork_run(oc_sim_child_fn fn, void *arg,
                    const struct oc_sim_fork_opts *opts, struct oc_sim_buf *out,
                    struct oc_status *st)
{
    OC_ASSERT(fn && out && out->len == 0);
    const struct oc_sim_fork_opts defaults = {0, 0};
    const struct oc_sim_fork_opts *o = opts ? opts : &defaults;
    oc_sim_log_setup();
    int data[2], err[2];
    pid_t pid = fork_child(fn, arg, o->keep_stderr || oc_sim_log_env(), data, err, st);
    if (pid < 0)
        return -1;
    XBT_DEBUG("forked simulation child %ld", (long)pid);
    struct oc_sim_buf raw = {0};
    struct err_scan es;
    memset(&es, 0, sizeof es);
    int timed_out = drain(data[0], err[0], o->wall_limit_s, &raw, &es);
    if (timed_out)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    int rc = fork_verdict(status, timed_out, o->wall_limit_s, &raw, &es, out, st);
    XBT_DEBUG("simulation child %ld: status %#x, %zu bytes, %s", (long)pid, (unsigned)status,
              raw.len, rc == 0 ? "result" : "failed");
    /* One line: a quoted message never carries its newline, but a child's
     * own message might. */
    if (rc != 0 && st)
        for (char *c = st->msg; *c; c++)
            if (*c == '\n' || *c == '\r')
                *c = ' ';
    oc_sim_buf_free(&raw);
    return rc;
}
