/* sweep_mpi_serve.c: a serving rank of the MPI sweep (see sweep_mpi.h).
 *
 * It runs one local oc_sweep_run (its own workers, each forking SimGrid
 * children) per sweep of rank 0, fed by rank 0's messages: the sweep's
 * `more` callback waits for the next message, and a RUN puts its layout
 * at the next local index (the workers get the layout with the index on
 * their job pipe, so one received after they were forked reaches them).
 * rank 0 answers every result of a rank with a free slot with a RUN, and
 * ends a sweep's hand-out with one NOMORE: `more` is asked once per result
 * while the hand-out is open, so the messages and the questions pair up.
 * A STOP (rank 0 interrupted) is also a byte on the stop pipe, the local
 * sweep's stop_fd: its workers are killed at once. Each result goes back
 * as the journal's record (reports/sweep_journal.h) under rank 0's index.
 * Messages of an earlier sweep (head.seq) are dropped. */
#define _GNU_SOURCE
#include "sweep_mpi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sweep.h"
#include "sweep_journal.h"
#include "sweep_mpi_priv.h"

struct server {
    const struct oc_model *m;
    const struct oc_topology *t;
    const struct oc_replay_opts *ro;
    int jobs;
    int seq;                  /* the sweep served, or last served */
    int exit;                 /* EXIT came, or the proxy is gone */
    int closed;               /* this sweep's hand-out ended */
    unsigned char *buf;       /* OC_MPI_MSG_MAX */
    int have_first;           /* buf holds the sweep's first RUN */
    struct oc_layout *layouts;/* (n) the local indices' layouts */
    int64_t *index;           /* (n) local index -> rank 0's */
    unsigned char *done;      /* (n) its result was sent */
    int64_t n, given;         /* layouts, those received */
};

/* The next message of the current sweep into s->buf (older ones dropped;
 * EXIT ends everything). Returns its type, 0 at the end. */
static int next_message(struct server *s, struct oc_mpi_head *h)
{
    for (;;) {
        if (s->exit)
            return 0;
        ssize_t len = oc_mpi_recv(oc_mpi_g.sock, s->buf, OC_MPI_MSG_MAX, -1);
        if (len < 0) {
            s->exit = 1;
            return 0;
        }
        memcpy(h, s->buf, sizeof *h);
        if (h->type == OC_MPI_EXIT) {
            s->exit = 1;
            return 0;
        }
        if (h->seq == s->seq && (size_t)len >= sizeof *h)
            return (int)h->type;
    }
}

static int srv_more(void *ctx, int64_t next)
{
    struct server *s = ctx;
    struct oc_mpi_head h;
    if (s->closed)
        return 0;
    if (s->have_first) {
        s->have_first = 0;
        memcpy(&h, s->buf, sizeof h);
    } else if (next_message(s, &h) != OC_MPI_RUN) {
        s->closed = 1;
        return 0;
    }
    if (next >= s->n) { /* rank 0 never sends more than n */
        s->closed = 1;
        return 0;
    }
    memcpy(&s->layouts[next], s->buf + sizeof h, sizeof s->layouts[next]);
    s->index[next] = h.index;
    s->given = next + 1;
    return 1;
}

static void srv_done(void *ctx, int64_t next, const struct oc_metrics *mt, const char *err)
{
    struct server *s = ctx;
    struct oc_mpi_head h = {OC_MPI_MAGIC, mt ? OC_MPI_OK : OC_MPI_ERR, 0, s->seq,
                            s->index[next], 0, 0.0};
    s->done[next] = 1;
    if (!mt) {
        oc_mpi_send(oc_mpi_g.sock, &h, err, strlen(err));
        return;
    }
    size_t n = oc_sweep_record_size(mt);
    unsigned char *rec = oc_xmalloc(n);
    oc_sweep_record_encode(rec, s->index[next], mt);
    oc_mpi_send(oc_mpi_g.sock, &h, rec, n);
    free(rec);
}

/* One sweep of rank 0, whose first RUN is in s->buf. */
static void serve_sweep(struct server *s, const struct oc_mpi_head *first)
{
    s->seq = first->seq;
    s->closed = 0;
    s->have_first = 1;
    s->n = first->n > 0 ? first->n : 1;
    s->layouts = oc_xcalloc((size_t)s->n, sizeof *s->layouts);
    s->index = oc_xcalloc((size_t)s->n, sizeof *s->index);
    s->done = oc_xcalloc((size_t)s->n, 1);
    s->given = 0;
    char c;
    while (read(oc_mpi_g.stop_rd, &c, 1) == 1) /* an earlier sweep's STOP */
        ;
    struct oc_sweep_opts so = {.jobs = s->jobs, .wall_limit_s = first->wall_limit_s,
                               .replay = *s->ro, .on_done = srv_done, .more = srv_more,
                               .ctx = s, .stop_fd = &oc_mpi_g.stop_rd};
    struct oc_status st = {{0}};
    int rc = oc_sweep_run(s->layouts, s->n, s->m, s->t, &so, &st);
    /* A sweep that could not run here (no fork, a worker gone): what it was
     * given fails with why, or rank 0 would wait for it. (Stopped: rank 0
     * no longer waits.) */
    if (rc < 0)
        for (int64_t i = 0; i < s->given; i++)
            if (!s->done[i]) {
                char err[OC_MSG_MAX + 32];
                snprintf(err, sizeof err, "rank %d: %s", oc_mpi_g.rank, st.msg);
                srv_done(s, i, NULL, err);
            }
    free(s->layouts);
    free(s->done);
    free(s->index);
    s->layouts = NULL;
    s->index = NULL;
}

void oc_sweep_mpi_quiet(void)
{
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (devnull >= 0) {
        fflush(stdout);
        dup2(devnull, 1);
        close(devnull);
    }
}

int oc_sweep_mpi_serve(const struct oc_model *m, const struct oc_topology *t,
                       const struct oc_replay_opts *ro, int jobs, const char *setup_err)
{
    oc_sweep_mpi_quiet();
    struct oc_status st = {{0}};
    if (oc_mpi_start(&st) != 0) {
        fprintf(stderr, "ocsim sweep: rank %d: %s\n", oc_mpi_g.rank, st.msg);
        return 2;
    }
    fcntl(oc_mpi_g.stop_rd, F_SETFL, O_NONBLOCK);
    struct server s = {m, t, ro, jobs > 0 ? jobs : oc_sweep_mpi_cores(), 0, 0, 0,
                       oc_xmalloc(OC_MPI_MSG_MAX), 0, NULL, NULL, NULL, 0, 0};
    struct oc_mpi_hello he;
    memset(&he, 0, sizeof he);
    he.ok = m != NULL;
    he.jobs = s.jobs;
    he.setup_hash = m ? oc_mpi_setup_hash(m, t, ro) : 0;
    oc_sweep_record_format(he.format, sizeof he.format);
    gethostname(he.host, sizeof he.host - 1);
    snprintf(he.msg, sizeof he.msg, "%s", setup_err ? setup_err : "");
    struct oc_mpi_head h = {OC_MPI_MAGIC, OC_MPI_HELLO, 0, 0, 0, 0, 0.0};
    oc_mpi_send(oc_mpi_g.sock, &h, &he, sizeof he);
    /* seq -1 until the first sweep: next_message takes any sweep's RUN */
    while (!s.exit) {
        ssize_t len = oc_mpi_recv(oc_mpi_g.sock, s.buf, OC_MPI_MSG_MAX, -1);
        if (len < 0)
            break;
        memcpy(&h, s.buf, sizeof h);
        if (h.type == OC_MPI_EXIT)
            break;
        if (h.type == OC_MPI_RUN && h.seq > s.seq && m &&
            (size_t)len >= sizeof h + sizeof(struct oc_layout))
            serve_sweep(&s, &h);
        else if (h.seq > s.seq)
            s.seq = h.seq; /* a sweep that had nothing for this rank */
    }
    free(s.buf);
    oc_mpi_finish();
    return 0;
}
