/* test_exec_ctl.c: the executor's control plane (exec/ctl.h) in its local
 * implementation (exec/ctl_local.c): one process, one thread per rank,
 * at n = 1, 3 and 4 ranks. (The MPI implementation, ctl_mpi.c, needs
 * mpirun; it is not part of this test binary.)
 *
 * CUnit's assertions are not thread-safe: a rank records what it saw in
 * its own slot of struct rank_log (RCHECK), and the test asserts on the
 * slots after oc_ctl_local_run joined the threads.
 *
 * Values by hand: bcast of 100 bytes (byte i = 3 i + 1 mod 256) from root
 * 2; gather of 5 bytes per rank (byte j of rank r = 10 r + j) to root 1,
 * so root's buffer reads 0 1 2 3 4 10 11 12 ...; messages of 0, 7, 4096
 * (copied at send) and 4097 and 1 MiB + r bytes (copied by the receiver);
 * timeouts of 0.2 s print as "0.2".
 */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "test_util.h"

#define MAX_RANKS 4

struct rank_log {
    int fails;                /* RCHECKs that failed */
    char first[200];          /* the first of them: line and expression */
    int rc;                   /* the call under test (timeouts, mismatch) */
    int timed_out;
    double waited_s;
    char msg[OC_MSG_MAX];
};

struct ctx {
    int n;                    /* ranks asked for */
    atomic_int arrived;       /* barrier test: ranks past each round's start */
    atomic_int seen[MAX_RANKS];
    struct rank_log log[MAX_RANKS];
};

static void rank_fail(struct ctx *x, int rank, int line, const char *expr)
{
    struct rank_log *g = &x->log[rank];
    if (g->fails++ == 0)
        snprintf(g->first, sizeof g->first, "line %d: %s", line, expr);
}
#define RCHECK(x, c, cond)                                                     \
    do {                                                                       \
        if (!(cond))                                                           \
            rank_fail((x), (c)->rank, __LINE__, #cond);                        \
    } while (0)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sleep_s(double s)
{
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&t, NULL);
}

/* Runs fn on n ranks, asserts that no rank recorded a failure, and
 * returns oc_ctl_local_run's value. */
static int run(struct ctx *x, int n, double timeout_s,
               int (*fn)(struct oc_ctl *c, void *arg))
{
    memset(x, 0, sizeof *x);
    x->n = n;
    int rc = oc_ctl_local_run(n, timeout_s, fn, x);
    for (int r = 0; r < n; r++) {
        if (x->log[r].fails)
            fprintf(stderr, "\n  n = %d, rank %d: %d failed, first at %s\n", n,
                    r, x->log[r].fails, x->log[r].first);
        CU_ASSERT_EQUAL(x->log[r].fails, 0);
    }
    return rc;
}

static const int sizes[] = {1, 3, 4};

/* ------------------------------------------------------------------ */

/* Identity of each rank; ranks arrive staggered (rank r sleeps 10 r ms),
 * so without a real barrier a fast rank would read a short count. */
static int barrier_rank(struct oc_ctl *c, void *arg)
{
    struct ctx *x = arg;
    struct oc_status st = {{0}};
    RCHECK(x, c, c->size == x->n && c->local_ranks == x->n);
    RCHECK(x, c, c->local_rank == c->rank && c->timeout_s == 5.0);
    RCHECK(x, c, strcmp(c->what, "set-up") == 0 && c->timed_out == 0);
    atomic_fetch_add(&x->seen[c->rank], 1);
    for (int round = 1; round <= 3; round++) {
        sleep_s(0.01 * c->rank);
        atomic_fetch_add(&x->arrived, 1);
        RCHECK(x, c, oc_ctl_barrier(c, &st) == 0);
        RCHECK(x, c, atomic_load(&x->arrived) == round * c->size);
        /* Nobody starts the next round before everybody read the count. */
        RCHECK(x, c, oc_ctl_barrier(c, &st) == 0);
    }
    return 0;
}

static void test_barrier(void)
{
    struct ctx x;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        CU_ASSERT_EQUAL(run(&x, sizes[i], 5.0, barrier_rank), 0);
        for (int r = 0; r < sizes[i]; r++)
            CU_ASSERT_EQUAL(atomic_load(&x.seen[r]), 1);
        CU_ASSERT_EQUAL(atomic_load(&x.arrived), 3 * sizes[i]);
    }
}

/* ------------------------------------------------------------------ */

static int bcast_rank(struct oc_ctl *c, void *arg)
{
    struct ctx *x = arg;
    struct oc_status st = {{0}};
    unsigned char buf[100];
    const int root = c->size > 2 ? 2 : 0;
    for (int i = 0; i < 100; i++)
        buf[i] = c->rank == root ? (unsigned char)(3 * i + 1) : 0xee;
    RCHECK(x, c, oc_ctl_bcast(c, buf, sizeof buf, root, &st) == 0);
    int same = 1;
    for (int i = 0; i < 100; i++)
        same &= buf[i] == (unsigned char)(3 * i + 1);
    RCHECK(x, c, same);
    /* A second one from another root: the calls meet in order. */
    int v = c->rank == 0 ? 4242 : -c->rank;
    RCHECK(x, c, oc_ctl_bcast(c, &v, sizeof v, 0, &st) == 0);
    RCHECK(x, c, v == 4242);
    /* Zero bytes: nothing to copy, still a collective. */
    RCHECK(x, c, oc_ctl_bcast(c, NULL, 0, c->size - 1, &st) == 0);
    return 0;
}

static void test_bcast(void)
{
    struct ctx x;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        CU_ASSERT_EQUAL(run(&x, sizes[i], 5.0, bcast_rank), 0);
}

/* ------------------------------------------------------------------ */

static int gather_rank(struct oc_ctl *c, void *arg)
{
    struct ctx *x = arg;
    struct oc_status st = {{0}};
    const int root = c->size > 1 ? 1 : 0;
    unsigned char mine[5], all[5 * MAX_RANKS + 1];
    for (int j = 0; j < 5; j++)
        mine[j] = (unsigned char)(10 * c->rank + j);
    memset(all, 0xee, sizeof all);
    sleep_s(0.005 * (c->size - c->rank)); /* the last rank arrives first */
    RCHECK(x, c, oc_ctl_gather(c, mine, c->rank == root ? all : NULL, 5, root,
                               &st) == 0);
    if (c->rank == root) {
        /* 0 1 2 3 4 10 11 12 13 14 20 ...: rank order, whatever the
         * arrival order. */
        int same = 1;
        for (int r = 0; r < c->size; r++)
            for (int j = 0; j < 5; j++)
                same &= all[5 * r + j] == (unsigned char)(10 * r + j);
        RCHECK(x, c, same);
        RCHECK(x, c, all[5 * c->size] == 0xee); /* nothing past size * 5 */
    }
    /* Twice in a row, to root 0, with ints. */
    int v = 100 + c->rank, vs[MAX_RANKS] = {0};
    RCHECK(x, c, oc_ctl_gather(c, &v, vs, sizeof v, 0, &st) == 0);
    if (c->rank == 0)
        for (int r = 0; r < c->size; r++)
            RCHECK(x, c, vs[r] == 100 + r);
    return 0;
}

static void test_gather(void)
{
    struct ctx x;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        CU_ASSERT_EQUAL(run(&x, sizes[i], 5.0, gather_rank), 0);
}

/* ------------------------------------------------------------------ */

static unsigned char pattern(int rank, int tag, int64_t i)
{
    return (unsigned char)(31 * rank + 7 * tag + i * 13 + (i >> 8));
}

static unsigned char *filled(int rank, int tag, int64_t bytes)
{
    unsigned char *b = malloc((size_t)(bytes > 0 ? bytes : 1));
    for (int64_t i = 0; i < bytes; i++)
        b[i] = pattern(rank, tag, i);
    return b;
}

static int holds(const unsigned char *b, int rank, int tag, int64_t bytes)
{
    for (int64_t i = 0; i < bytes; i++)
        if (b[i] != pattern(rank, tag, i))
            return 0;
    return 1;
}

/* Sends bytes of pattern (rank, tag) to dest. */
static int send_pattern(struct oc_ctl *c, int dest, int tag, int64_t bytes,
                        struct oc_status *st)
{
    unsigned char *b = filled(c->rank, tag, bytes);
    int rc = oc_ctl_send(c, b, bytes, dest, tag, st);
    /* The buffer is reused at once: the message must be complete. */
    memset(b, 0, (size_t)bytes);
    free(b);
    return rc;
}

/* Receives bytes from src and checks them: 1 when right. */
static int recv_pattern(struct oc_ctl *c, int src, int tag, int64_t bytes,
                        struct oc_status *st)
{
    unsigned char *b = malloc((size_t)(bytes > 0 ? bytes : 1));
    int ok = oc_ctl_recv(c, b, bytes, src, tag, st) == 0 && holds(b, src, tag, bytes);
    free(b);
    return ok;
}

#define BIG (1 << 20)

static int p2p_rank(struct oc_ctl *c, void *arg)
{
    struct ctx *x = arg;
    struct oc_status st = {{0}};
    /* Oneself, copied at send whatever the size. */
    RCHECK(x, c, send_pattern(c, c->rank, 3, BIG, &st) == 0);
    RCHECK(x, c, send_pattern(c, c->rank, 4, 7, &st) == 0);
    RCHECK(x, c, recv_pattern(c, c->rank, 4, 7, &st));
    RCHECK(x, c, recv_pattern(c, c->rank, 3, BIG, &st));
    if (c->size == 1)
        return 0;

    if (c->rank == 1) {
        /* Tags 5 and 6 sent in this order, received the other way round;
         * sizes on both sides of the eager limit (4096), and 0. */
        RCHECK(x, c, send_pattern(c, 0, 5, 7, &st) == 0);
        RCHECK(x, c, send_pattern(c, 0, 6, 4096, &st) == 0);
        RCHECK(x, c, send_pattern(c, 0, 8, 0, &st) == 0);
        /* Same tag twice: received in the order sent. */
        RCHECK(x, c, oc_ctl_send(c, "first", 6, 0, 9, &st) == 0);
        RCHECK(x, c, oc_ctl_send(c, "again", 6, 0, 9, &st) == 0);
    }
    if (c->rank == 0) {
        sleep_s(0.02); /* the messages above wait for the receive */
        RCHECK(x, c, recv_pattern(c, 1, 6, 4096, &st));
        RCHECK(x, c, recv_pattern(c, 1, 8, 0, &st));
        RCHECK(x, c, recv_pattern(c, 1, 5, 7, &st));
        char a[6], b[6];
        RCHECK(x, c, oc_ctl_recv(c, a, sizeof a, 1, 9, &st) == 0);
        RCHECK(x, c, oc_ctl_recv(c, b, sizeof b, 1, 9, &st) == 0);
        RCHECK(x, c, memcmp(a, "first", 6) == 0 && memcmp(b, "again", 6) == 0);
    }
    /* Every rank r > 0 sends 1 MiB + r bytes (receiver copies) with tag r
     * and 4097 bytes with tag 100 + r; rank 0 takes them from the last
     * rank to the first, and the big one after the small one. */
    if (c->rank > 0) {
        RCHECK(x, c, send_pattern(c, 0, 100 + c->rank, 4097, &st) == 0);
        RCHECK(x, c, send_pattern(c, 0, c->rank, BIG + c->rank, &st) == 0);
    } else {
        for (int r = c->size - 1; r >= 1; r--) {
            RCHECK(x, c, recv_pattern(c, r, 100 + r, 4097, &st));
            RCHECK(x, c, recv_pattern(c, r, r, BIG + r, &st));
        }
    }
    /* And back, 0 to every other rank, in rank order. */
    if (c->rank == 0)
        for (int r = 1; r < c->size; r++)
            RCHECK(x, c, send_pattern(c, r, 50, BIG, &st) == 0);
    else
        RCHECK(x, c, recv_pattern(c, 0, 50, BIG, &st));
    return 0;
}

static void test_send_recv(void)
{
    struct ctx x;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        CU_ASSERT_EQUAL(run(&x, sizes[i], 5.0, p2p_rank), 0);
}

/* ------------------------------------------------------------------ */

static int return_rank(struct oc_ctl *c, void *arg)
{
    (void)arg;
    return c->rank == 2 ? 9 : c->rank; /* 0 1 9 3 */
}

static int return_negative(struct oc_ctl *c, void *arg)
{
    (void)arg;
    return -1 - c->rank; /* -1 -2 -3 */
}

static void test_return_value(void)
{
    struct ctx x;
    CU_ASSERT_EQUAL(run(&x, 4, 1.0, return_rank), 9);
    CU_ASSERT_EQUAL(run(&x, 3, 1.0, return_negative), -1);
    CU_ASSERT_EQUAL(run(&x, 1, 1.0, return_negative), -1);
}

/* ------------------------------------------------------------------ */

/* Times one call on rank c into its log; st is the call's status. */
#define TIMED(x, c, st, call)                                                  \
    do {                                                                       \
        double t0_ = now_s();                                                  \
        (x)->log[(c)->rank].rc = (call);                                       \
        (x)->log[(c)->rank].waited_s = now_s() - t0_;                          \
        (x)->log[(c)->rank].timed_out = (c)->timed_out;                        \
        snprintf((x)->log[(c)->rank].msg, OC_MSG_MAX, "%s", (st).msg);         \
    } while (0)

/* Rank 0 skips the barrier. */
static int skip_barrier_rank(struct oc_ctl *c, void *arg)
{
    struct ctx *x = arg;
    struct oc_status st = {{0}};
    if (c->rank == 0)
        return 0;
    oc_ctl_set_what(c, "step %d barrier", 3);
    TIMED(x, c, st, oc_ctl_barrier(c, &st));
    return 0;
}

/* Rank 2 (the root) skips the bcast; rank 1 sends 1 MiB to rank 0, which
 * never receives; rank 0 receives from rank 1 with a tag never sent. */
static int skip_more_rank(struct oc_ctl *c, void *arg)
{
    struct ctx *x = arg;
    struct oc_status st = {{0}};
    char buf[16];
    if (c->rank == 2)
        return 0;
    oc_ctl_set_what(c, "the bcast of rank %d", c->rank);
    TIMED(x, c, st, oc_ctl_bcast(c, buf, sizeof buf, 2, &st));
    RCHECK(x, c, x->log[c->rank].rc == -1);
    c->timed_out = 0;
    if (c->rank == 1) {
        unsigned char *big = filled(1, 1, BIG);
        oc_ctl_set_what(c, "sending 1 MiB");
        TIMED(x, c, st, oc_ctl_send(c, big, BIG, 0, 1, &st));
        free(big);
    } else {
        oc_ctl_set_what(c, "recv tag 77");
        TIMED(x, c, st, oc_ctl_recv(c, buf, sizeof buf, 1, 77, &st));
    }
    return 0;
}

/* n = 1: a receive from oneself with nothing sent. */
static int self_recv_rank(struct oc_ctl *c, void *arg)
{
    struct ctx *x = arg;
    struct oc_status st = {{0}};
    char buf[4];
    oc_ctl_set_what(c, "nothing");
    TIMED(x, c, st, oc_ctl_recv(c, buf, sizeof buf, 0, 1, &st));
    return 0;
}

static void expect_timeout(const struct rank_log *g, const char *msg)
{
    CU_ASSERT_EQUAL(g->rc, -1);
    CU_ASSERT_EQUAL(g->timed_out, 1);
    CU_ASSERT_STRING_EQUAL(g->msg, msg);
    /* 0.2 s deadline: not before it, and not much after. */
    CU_ASSERT(g->waited_s >= 0.2 && g->waited_s < 2.0);
}

static void test_timeout(void)
{
    struct ctx x;
    for (int n = 3; n <= 4; n++) {
        CU_ASSERT_EQUAL(run(&x, n, 0.2, skip_barrier_rank), 0);
        for (int r = 1; r < n; r++)
            expect_timeout(&x.log[r], "timed out after 0.2 s in step 3 barrier");
    }

    CU_ASSERT_EQUAL(run(&x, 3, 0.2, skip_more_rank), 0);
    expect_timeout(&x.log[0], "timed out after 0.2 s in recv tag 77");
    expect_timeout(&x.log[1], "timed out after 0.2 s in sending 1 MiB");

    CU_ASSERT_EQUAL(run(&x, 1, 0.2, self_recv_rank), 0);
    expect_timeout(&x.log[0], "timed out after 0.2 s in nothing");
}

/* Rank 0 calls a barrier, rank 1 a bcast as the same call (usually
 * later: rank 1 waits for rank 0 to be about to call, then 50 ms). */
static int mismatch_rank(struct oc_ctl *c, void *arg)
{
    struct ctx *x = arg;
    struct oc_status st = {{0}};
    int v = 0;
    if (c->rank == 0) {
        atomic_store(&x->arrived, 1);
        TIMED(x, c, st, oc_ctl_barrier(c, &st));
    } else {
        while (atomic_load(&x->arrived) == 0)
            sleep_s(0.001);
        sleep_s(0.05);
        TIMED(x, c, st, oc_ctl_bcast(c, &v, sizeof v, 0, &st));
    }
    return 0;
}

/* A receive whose size differs from the message's. */
static int size_mismatch_rank(struct oc_ctl *c, void *arg)
{
    struct ctx *x = arg;
    struct oc_status st = {{0}};
    char buf[8] = "1234567";
    if (c->rank == 1)
        RCHECK(x, c, oc_ctl_send(c, buf, 8, 0, 2, NULL) == 0);
    else
        TIMED(x, c, st, oc_ctl_recv(c, buf, 4, 1, 2, &st));
    return 0;
}

static void test_mismatch(void)
{
    struct ctx x;
    CU_ASSERT_EQUAL(run(&x, 2, 0.5, mismatch_rank), 0);
    /* The second to arrive sees the mismatch; the first waits in vain. */
    int second = x.log[0].timed_out ? 1 : 0, first = 1 - second;
    static const char *const seen_by[2] = {
        "ctl: rank 0: collective call 0 is a barrier of 0 bytes from root 0 "
        "here and a bcast of 4 bytes from root 0 on another rank",
        "ctl: rank 1: collective call 0 is a bcast of 4 bytes from root 0 "
        "here and a barrier of 0 bytes from root 0 on another rank",
    };
    CU_ASSERT_EQUAL(x.log[second].rc, -1);
    CU_ASSERT_EQUAL(x.log[second].timed_out, 0);
    CU_ASSERT_STRING_EQUAL(x.log[second].msg, seen_by[second]);
    CU_ASSERT_EQUAL(x.log[first].rc, -1);
    CU_ASSERT_EQUAL(x.log[first].timed_out, 1);

    CU_ASSERT_EQUAL(run(&x, 2, 0.5, size_mismatch_rank), 0);
    CU_ASSERT_EQUAL(x.log[0].rc, -1);
    CU_ASSERT_EQUAL(x.log[0].timed_out, 0);
    CU_ASSERT_STRING_EQUAL(x.log[0].msg, "ctl: rank 0 expected 4 bytes from rank 1 "
                                         "with tag 2 and the message has 8");
}

static CU_TestInfo tests[] = {
    {"barrier", test_barrier},
    {"bcast", test_bcast},
    {"gather", test_gather},
    {"send_recv", test_send_recv},
    {"return_value", test_return_value},
    {"timeout", test_timeout},
    {"mismatch", test_mismatch},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"exec_ctl", NULL, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
