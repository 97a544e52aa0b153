/* sweep_mpi_proxy.c: ocsim-mpi-proxy, the one process of a rank that
 * calls MPI (see sweep_mpi.h for why), relaying messages between its
 * parent (ocsim, over a socketpair) and the other ranks' proxies. A
 * program of its own, linked with libmpi and nothing of SimGrid: SimGrid's
 * library exports the MPI API itself (SMPI), so in ocsim's process
 * MPI_Init would bind to SimGrid's ("Your MPI program was not properly
 * initialized", seen here).
 *
 *   ocsim-mpi-proxy SOCK_FD STOP_FD RANK SIZE TIMEOUT_S   (ocsim starts it)
 *
 * Its loop: every message MPI has (MPI_Iprobe, then MPI_Recv of exactly
 * that one) goes to the parent with head.peer set to its source, except
 * heartbeats, which only refresh when that rank was last heard; a STOP
 * also writes a byte to the stop pipe (the serving parent's stop_fd). Then
 * poll(2) on the socket for 1 ms: a message from the parent is sent with
 * MPI_Isend (never a blocking send: two proxies sending each other large
 * results would both wait), and the sends in flight are tested. Rank 0's
 * proxy reports LOST for a rank not heard for timeout_s; serving proxies
 * send a heartbeat every second.
 *
 * The end: BYE from the parent (or its end of the socket closed). A
 * serving proxy sends FIN to rank 0; rank 0's waits for the FIN of every
 * rank not lost, still watching for silence (a rank that hangs after its
 * last result would hold MPI_Finalize, which waits for every rank, for
 * ever), for timeout_s at most (a rank that heartbeats but does not end
 * counts as lost). Then the sends in flight are completed and MPI_Finalize called,
 * unless a rank was lost: the proxy exits without it, and the launcher
 * ends the job. It leaves with _exit: no atexit handler, no
 * stdio buffer of the parent flushed a second time. */
#define _GNU_SOURCE
#include "sweep_mpi_msg.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The sends in flight, each with its own copy of the message. */
struct sends {
    MPI_Request *req;
    void **buf;
    int n, cap;
};

static void sends_add(struct sends *s, const void *msg, size_t len, int dest)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->req = realloc(s->req, (size_t)s->cap * sizeof *s->req);
        s->buf = realloc(s->buf, (size_t)s->cap * sizeof *s->buf);
        if (!s->req || !s->buf)
            _exit(3);
    }
    void *copy = malloc(len);
    if (!copy)
        _exit(3);
    memcpy(copy, msg, len);
    s->buf[s->n] = copy;
    MPI_Isend(copy, (int)len, MPI_BYTE, dest, OC_MPI_TAG, MPI_COMM_WORLD, &s->req[s->n]);
    s->n++;
}

/* Frees the sends that completed. */
static void sends_test(struct sends *s)
{
    for (int i = 0; i < s->n;) {
        int done = 0;
        MPI_Test(&s->req[i], &done, MPI_STATUS_IGNORE);
        if (!done) {
            i++;
            continue;
        }
        free(s->buf[i]);
        s->n--;
        s->req[i] = s->req[s->n];
        s->buf[i] = s->buf[s->n];
    }
}

/* What one proxy keeps. */
struct proxy {
    int sock, stop_wr, rank, size;
    double timeout_s;
    double *heard;     /* (size) when each rank was last heard (rank 0) */
    char *lost;        /* (size) */
    int any_lost;
    char *fin;         /* (size) rank 0: it sent FIN */
    struct sends sends;
    unsigned char *buf;/* OC_MPI_MSG_MAX */
};

/* Every message MPI has now, to the parent (or noted). */
static void from_mpi(struct proxy *p)
{
    for (;;) {
        int flag = 0;
        MPI_Status ms;
        MPI_Iprobe(MPI_ANY_SOURCE, OC_MPI_TAG, MPI_COMM_WORLD, &flag, &ms);
        if (!flag)
            return;
        int count = 0;
        MPI_Get_count(&ms, MPI_BYTE, &count);
        const int src = ms.MPI_SOURCE;
        if (count < 0 || (size_t)count > OC_MPI_MSG_MAX ||
            (size_t)count < sizeof(struct oc_mpi_head)) {
            /* not ours: take it off the queue and drop it */
            void *junk = malloc(count > 0 ? (size_t)count : 1);
            MPI_Recv(junk, count, MPI_BYTE, src, OC_MPI_TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            free(junk);
            continue;
        }
        MPI_Recv(p->buf, count, MPI_BYTE, src, OC_MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        struct oc_mpi_head h;
        memcpy(&h, p->buf, sizeof h);
        if (h.magic != OC_MPI_MAGIC)
            continue;
        if (src >= 0 && src < p->size)
            p->heard[src] = now_s();
        if (h.type == OC_MPI_FIN && src >= 0 && src < p->size)
            p->fin[src] = 1;
        if (h.type == OC_MPI_BEAT || h.type == OC_MPI_FIN ||
            (src >= 0 && src < p->size && p->lost[src]))
            continue;
        if (h.type == OC_MPI_STOP)
            (void)!write(p->stop_wr, "s", 1);
        h.peer = src;
        memcpy(p->buf, &h, sizeof h);
        (void)!send(p->sock, p->buf, (size_t)count, MSG_NOSIGNAL);
    }
}

/* Rank 0: a rank silent for timeout_s is lost (told to the parent once). */
static void check_lost(struct proxy *p)
{
    const double t = now_s();
    for (int r = 1; r < p->size; r++) {
        if (p->lost[r] || p->fin[r] || t - p->heard[r] <= p->timeout_s)
            continue;
        p->lost[r] = 1;
        p->any_lost = 1;
        struct oc_mpi_head h = {OC_MPI_MAGIC, OC_MPI_LOST, r, 0, 0, 0, 0.0};
        (void)!send(p->sock, &h, sizeof h, MSG_NOSIGNAL);
    }
}

/* One message from the parent, sent on. Returns 0, 1 at the end (BYE, or
 * the parent gone). */
static int from_parent(struct proxy *p)
{
    ssize_t len = recv(p->sock, p->buf, OC_MPI_MSG_MAX, 0);
    if (len < 0 && (errno == EINTR || errno == EAGAIN))
        return 0;
    if (len < (ssize_t)sizeof(struct oc_mpi_head))
        return 1;
    struct oc_mpi_head h;
    memcpy(&h, p->buf, sizeof h);
    if (h.peer == OC_MPI_SELF)
        return h.type == OC_MPI_BYE;
    if (h.peer < 0 || h.peer >= p->size || h.peer == p->rank || p->lost[h.peer])
        return 0;
    sends_add(&p->sends, p->buf, (size_t)len, h.peer);
    return 0;
}

static void proxy_main(int sock, int stop_wr, int rank, int size, double timeout_s)
{
    MPI_Init(NULL, NULL);
    int mpi_rank = -1, mpi_size = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
    if (mpi_rank != rank || mpi_size != size) {
        /* e.g. srun without --mpi=pmix: every rank an MPI singleton */
        if (rank == 0)
            fprintf(stderr, "ocsim sweep: the launcher says rank %d of %d, MPI_Init rank %d "
                            "of %d (srun needs --mpi=pmix, or Open MPI built with Slurm's "
                            "PMI): no MPI\n",
                    rank, size, mpi_rank, mpi_size);
        _exit(3);
    }
    struct proxy p = {sock, stop_wr, rank, size, timeout_s,
                      calloc((size_t)size, sizeof(double)), calloc((size_t)size, 1), 0,
                      calloc((size_t)size, 1), {0}, malloc(OC_MPI_MSG_MAX)};
    if (!p.heard || !p.lost || !p.fin || !p.buf)
        _exit(3);
    double t0 = now_s(), beat = 0.0;
    int closing = 0;
    double closing_until = 0.0;
    for (int r = 0; r < size; r++)
        p.heard[r] = t0;
    for (;;) {
        from_mpi(&p);
        if (rank == 0)
            check_lost(&p);
        else if (now_s() - beat >= 1.0) {
            beat = now_s();
            struct oc_mpi_head h = {OC_MPI_MAGIC, OC_MPI_BEAT, rank, 0, 0, 0, 0.0};
            sends_add(&p.sends, &h, sizeof h, 0);
        }
        sends_test(&p.sends);
        if (closing) { /* rank 0: every rank's FIN, or it is lost */
            int r = 1;
            while (r < size && (p.fin[r] || p.lost[r]))
                r++;
            if (r == size)
                break;
            if (now_s() > closing_until) { /* alive but not ending: as lost */
                p.any_lost = 1;
                break;
            }
            struct timespec ts = {0, 1000000L};
            nanosleep(&ts, NULL);
            continue;
        }
        struct pollfd pf = {sock, POLLIN, 0};
        int k = poll(&pf, 1, 1);
        if (k > 0 && from_parent(&p) != 0) {
            if (rank != 0) {
                struct oc_mpi_head h = {OC_MPI_MAGIC, OC_MPI_FIN, rank, 0, 0, 0, 0.0};
                sends_add(&p.sends, &h, sizeof h, 0);
                break;
            }
            closing = 1;
            closing_until = now_s() + timeout_s;
        }
    }
    /* The last sends (EXIT to the servers, the last results) complete;
     * one to a lost rank may never: then no MPI_Finalize either. */
    double until = now_s() + (p.any_lost ? 1.0 : timeout_s);
    while (p.sends.n > 0 && now_s() < until) {
        from_mpi(&p);
        sends_test(&p.sends);
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    if (!p.any_lost && p.sends.n == 0)
        MPI_Finalize();
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: ocsim-mpi-proxy SOCK_FD STOP_FD RANK SIZE TIMEOUT_S "
                        "(started by ocsim sweep under mpirun or srun)\n");
        return 2;
    }
    int size = atoi(argv[4]);
    if (size < 2 || size > 1 << 24)
        return 2;
    proxy_main(atoi(argv[1]), atoi(argv[2]), atoi(argv[3]), size, atof(argv[5]));
    return 0;
}
