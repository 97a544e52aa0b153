/* netbw.c: `ocsim-exec --netbw`'s measurement, written once over a
 * backend's transport (see netbw.h): the ping-pong and streaming sweeps
 * between two nodes, every node pair's latency and bandwidth, the flows of
 * a node's ranks alone and together, the all-reduce across nodes, their
 * checks and nccl-tests' tables (calib_plan.h's rows), then the file.
 *
 * Every rank runs every step in the same order; the ranks outside a step's
 * pairs wait at the control plane's barrier. A step's outcome (its times,
 * its #wrong, a failure's message) travels to every rank in one record
 * over the control plane, so that every rank leaves with the same verdict.
 *
 * What it is not: a transport (cpu/netbw_mpi.c, cuda/netbw_nccl.c) or the
 * file (netbw_topology.c).
 */
#define _POSIX_C_SOURCE 200809L
#include "netbw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib_plan.h"  /* message sizes and iterations, nccl-tests' rows */
#include "closed_form.h" /* oc_busbw_allreduce */

#define MIB (1024.0 * 1024.0)

/* The outcome of one step on one rank, shared over the control plane. */
struct rec {
    double s;       /* seconds (the step's meaning) */
    int64_t wrong;  /* elements that failed the check */
    int failed;
    char msg[OC_MSG_MAX];
};

struct run {
    struct oc_ctl *c;
    const struct oc_netbw_opts *o;
    const struct oc_net_map *m;
    const struct oc_net_tx *tx;
    int nsizes;
    unsigned char *chk;  /* max_msg_bytes: the checks' host buffer */
    float *in, *out;     /* max_msg_bytes / 4 floats each */
};

static int rank_at(const struct run *R, int node, int local)
{
    return R->m->rank_of[node * R->m->per_node + local];
}

static void rec_fail(struct rec *x, const struct oc_status *st)
{
    x->failed = 1;
    snprintf(x->msg, sizeof x->msg, "%s", st->msg);
}

/* root's record to every rank; -1 on every rank when it failed. */
static int share_from(struct run *R, int root, struct rec *x, struct oc_status *st)
{
    if (oc_ctl_bcast(R->c, x, (int64_t)sizeof *x, root, st) != 0)
        return -1;
    return x->failed ? oc_fail(st, "%s", x->msg) : 0;
}

/* Every rank's record combined on every rank: the largest time, the sum of
 * #wrong, the lowest failing rank's message. */
static int share_all(struct run *R, struct rec *x, struct oc_status *st)
{
    const int n = R->c->size;
    struct rec *all = R->c->rank == 0 ? oc_xcalloc((size_t)n, sizeof *all) : NULL;
    int rc = oc_ctl_gather(R->c, x, all, (int64_t)sizeof *x, 0, st);
    if (rc == 0 && all) {
        memset(x, 0, sizeof *x);
        for (int q = 0; q < n; q++) {
            if (all[q].s > x->s)
                x->s = all[q].s;
            x->wrong += all[q].wrong;
            if (all[q].failed && !x->failed) {
                x->failed = 1;
                memcpy(x->msg, all[q].msg, sizeof x->msg);
            }
        }
    }
    free(all);
    return rc != 0 ? -1 : share_from(R, 0, x, st);
}

/* ------------------------------------------------------------------ */
/* One pair, one size                                                   */

/* The check of a message: a -> b carries the pattern; b counts the bytes
 * that differ. */
static int check_msg(struct run *R, int a, int b, int64_t bytes, int64_t *wrong,
                     struct oc_status *st)
{
    const int rank = R->c->rank;
    *wrong = 0;
    if (rank == a) {
        for (int64_t i = 0; i < bytes; i++)
            R->chk[i] = oc_netbw_byte(i);
        return R->tx->ops->send_host(R->tx->ctx, b, R->chk, bytes, st);
    }
    if (rank == b) {
        memset(R->chk, 0, (size_t)bytes);
        if (R->tx->ops->recv_host(R->tx->ctx, a, R->chk, bytes, st) != 0)
            return -1;
        for (int64_t i = 0; i < bytes; i++)
            *wrong += R->chk[i] != oc_netbw_byte(i);
    }
    return 0;
}

/* Ping-pong between (node a, local l) and (node b, local l): *t = one-way
 * seconds (a's clock), *wrong the check's. */
static int pingpong(struct run *R, int na, int nb, int l, int64_t bytes, double *t,
                    int64_t *wrong, struct oc_status *st)
{
    const int a = rank_at(R, na, l), b = rank_at(R, nb, l), rank = R->c->rank;
    const int iters = oc_calib_msg_iters(bytes);
    oc_ctl_set_what(R->c, "--netbw: ping-pong of %lld bytes between ranks %d and %d",
                    (long long)bytes, a, b);
    if (oc_ctl_barrier(R->c, st) != 0)
        return -1;
    struct rec x = {0}, y = {0};
    struct oc_status ls = {{0}};
    if ((rank == a || rank == b) &&
        (R->tx->ops->pingpong(R->tx->ctx, rank == a ? b : a, rank == a, bytes, iters, &x.s,
                         &ls) != 0 ||
         check_msg(R, a, b, bytes, &y.wrong, &ls) != 0))
        rec_fail(rank == a ? &x : &y, &ls);
    x.s /= 2.0 * iters;
    if (share_from(R, a, &x, st) != 0 || share_from(R, b, &y, st) != 0)
        return -1;
    *t = x.s;
    *wrong = y.wrong;
    return 0;
}

/* Messages in flight at once: as many as 64 MiB holds, 1 to 64 (osu_bw's
 * window is 64). */
static int window_for(int64_t bytes)
{
    const double w = 64.0 * MIB / (double)bytes;
    return w < 1 ? 1 : w > 64 ? 64 : (int)w;
}

/* Streams of `bytes` from local rank l of node a to local rank l of node
 * b, for every l with on[l] set, all at once: *t = the slowest sender's
 * seconds per message; *wrong the checks'. */
static int streams(struct run *R, int na, int nb, const int *on, int64_t bytes, double *t,
                   int64_t *wrong, struct oc_status *st)
{
    const int iters = oc_calib_msg_iters(bytes), rank = R->c->rank;
    oc_ctl_set_what(R->c, "--netbw: streaming %lld-byte messages from node %d to %d",
                    (long long)bytes, na, nb);
    if (oc_ctl_barrier(R->c, st) != 0)
        return -1;
    struct rec x = {0};
    struct oc_status ls = {{0}};
    for (int l = 0; l < R->m->per_node; l++) {
        const int a = rank_at(R, na, l), b = rank_at(R, nb, l);
        if (!on[l] || (rank != a && rank != b))
            continue;
        double s = 0;
        if (R->tx->ops->stream(R->tx->ctx, rank == a ? b : a, rank == a, bytes, iters,
                          window_for(bytes), &s, &ls) != 0 ||
            check_msg(R, a, b, bytes, &x.wrong, &ls) != 0)
            rec_fail(&x, &ls);
        else if (rank == a)
            x.s = s / iters;
    }
    if (share_all(R, &x, st) != 0)
        return -1;
    *t = x.s;
    *wrong = x.wrong;
    return 0;
}

/* The all-reduce of `bytes` over every cross-node group at once: *t = the
 * slowest rank's seconds per call; *wrong the check's over every rank. */
static int allreduce(struct run *R, int64_t bytes, double *t, int64_t *wrong,
                     struct oc_status *st)
{
    const int iters = oc_calib_msg_iters(bytes);
    const int64_t count = bytes / 4;
    oc_ctl_set_what(R->c, "--netbw: all-reduce of %lld bytes across nodes", (long long)bytes);
    if (oc_ctl_barrier(R->c, st) != 0)
        return -1;
    struct rec x = {0};
    struct oc_status ls = {{0}};
    for (int64_t i = 0; i < count; i++)
        R->in[i] = oc_netbw_pattern(R->m->node, i);
    if (R->tx->ops->allreduce(R->tx->ctx, bytes, iters, &x.s, &ls) != 0 ||
        R->tx->ops->allreduce_host(R->tx->ctx, R->in, R->out, count, &ls) != 0) {
        rec_fail(&x, &ls);
    } else {
        x.s /= iters;
        for (int64_t i = 0; i < count; i++)
            x.wrong += R->out[i] != oc_netbw_pattern_sum(R->m->nodes, i);
    }
    if (share_all(R, &x, st) != 0)
        return -1;
    *t = x.s;
    *wrong = x.wrong;
    return 0;
}

/* ------------------------------------------------------------------ */
/* The steps                                                            */

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
    double *s = oc_xmalloc((size_t)n * sizeof *s);
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    const double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return m;
}

static FILE *log_of(const struct run *R) { return R->c->rank == 0 ? R->o->log : NULL; }

/* One of nccl-tests' tables over the sizes (t[i] seconds, w[i] #wrong,
 * counted into r): point-to-point (n = 0: busbw = algbw) or the
 * all-reduce over n members (busbw = algbw * 2(n-1)/n), calib_plan.h's. */
static void table(struct run *R, const char *what, const double *t, const int64_t *w,
                  int n, struct oc_netbw_result *r)
{
    for (int i = 0; i < R->nsizes; i++)
        r->wrong += w[i];
    FILE *f = log_of(R);
    if (!f)
        return;
    oc_calib_net_table_head(f, what);
    if (n)
        oc_calib_allreduce_rows(f, R->o->max_msg_bytes, t, n, w);
    else
        oc_calib_sendrecv_rows(f, R->o->max_msg_bytes, t, w);
}

/* The sweeps between node 0 and node 1 (local rank 0): ping-pong, then
 * streaming, each size's row of nccl-tests' table. pp[i], str[i]: one-way
 * and per-message seconds. */
static int sweeps(struct run *R, double *pp, double *str, struct oc_netbw_result *r,
                  struct oc_status *st)
{
    int *on = oc_xcalloc((size_t)R->m->per_node, sizeof *on);
    on[0] = 1; /* local rank 0 only */
    int64_t wp[64], ws[64];
    int i = 0, rc = 0;
    for (int64_t s = 8; s <= R->o->max_msg_bytes && rc == 0; s *= 2, i++)
        rc = pingpong(R, 0, 1, 0, s, &pp[i], &wp[i], st);
    i = 0;
    for (int64_t s = 8; s <= R->o->max_msg_bytes && rc == 0; s *= 2, i++)
        rc = streams(R, 0, 1, on, s, &str[i], &ws[i], st);
    free(on);
    if (rc != 0)
        return -1;
    const char *h0 = R->m->host[0], *h1 = R->m->host[1];
    char what[256];
    snprintf(what, sizeof what, "%s ping-pong between nodes %.60s and %.60s (rank %d and "
             "%d), one-way time; busbw = algbw (nccl-tests, sendrecv)",
             R->tx->ops->name, h0, h1, rank_at(R, 0, 0), rank_at(R, 1, 0));
    table(R, what, pp, wp, 0, r);
    snprintf(what, sizeof what, "%s streaming from node %.60s to %.60s, a window of "
             "messages in flight (osu_bw), time per message; busbw = algbw",
             R->tx->ops->name, h0, h1);
    table(R, what, str, ws, 0, r);
    /* The model t(S) = latency + S / B at the largest ping-pong, as the
     * calibration fits it (calib_plan.h). */
    const int n = R->nsizes;
    const double smax = oc_calib_msg_largest(n);
    struct oc_calib_measured fit;
    memset(&fit, 0, sizeof fit);
    oc_calib_p2p_fit(pp, n, (int64_t)smax, pp[n - 1], &fit);
    r->pingpong_Bps = fit.p2p_large_Bps;
    FILE *f = log_of(R);
    if (f)
        fprintf(f, "# nodes 0-1: latency %.2f us (8 B one way); streaming %.3f GB/s, "
                   "ping-pong fit S / (t(S) - latency) %.3f GB/s at %.0f B\n#\n",
                pp[0] * 1e6, smax / str[n - 1] / 1e9, r->pingpong_Bps / 1e9, smax);
    return 0;
}

/* Node 0 with every node j: 8-byte latency and streaming at the largest
 * size (node 1's from the sweeps); the medians into r. */
static int node_pairs(struct run *R, const double *pp, const double *str,
                      struct oc_netbw_result *r, struct oc_status *st)
{
    const int n = R->m->nodes, last = R->nsizes - 1;
    const double smax = oc_calib_msg_largest(R->nsizes);
    double *lat = oc_xcalloc((size_t)n, sizeof *lat), *bw = oc_xcalloc((size_t)n, sizeof *bw);
    int *on = oc_xcalloc((size_t)R->m->per_node, sizeof *on);
    on[0] = 1;
    lat[1] = pp[0];
    bw[1] = smax / str[last];
    int rc = 0;
    for (int j = 2; j < n && rc == 0; j++) {
        int64_t w1 = 0, w2 = 0;
        double t = 0;
        rc = pingpong(R, 0, j, 0, 8, &lat[j], &w1, st);
        if (rc == 0)
            rc = streams(R, 0, j, on, (int64_t)smax, &t, &w2, st);
        bw[j] = t > 0 ? smax / t : 0;
        r->wrong += w1 + w2;
    }
    FILE *f = log_of(R);
    if (rc == 0 && f) {
        fprintf(f, "# %s node pairs: node 0 (%s) with each node, local rank 0\n"
                   "#%5s %-40s %12s %14s\n#%5s %-40s %12s %14s\n",
                R->tx->ops->name, R->m->host[0], "node", "host", "latency", "streaming", "", "",
                "(us, 8 B)", "(GB/s)");
        for (int j = 1; j < n; j++)
            fprintf(f, " %5d %-40.40s %12.2f %14.3f\n", j, R->m->host[j], lat[j] * 1e6,
                    bw[j] / 1e9);
    }
    if (rc == 0) {
        r->latency_s = median(lat + 1, n - 1);
        r->stream_Bps = median(bw + 1, n - 1);
        if (f)
            fprintf(f, "# median over %d node pair%s: latency %.2f us, streaming %.3f GB/s "
                       "at %.0f B\n#\n", n - 1, n == 2 ? "" : "s", r->latency_s * 1e6,
                    r->stream_Bps / 1e9, smax);
    }
    free(lat), free(bw), free(on);
    return rc;
}

/* Local rank l of node 0 -> local rank l of node 1 at the largest size,
 * each l alone, then all at once. */
static int flows(struct run *R, struct oc_netbw_result *r, struct oc_status *st)
{
    const int k = R->m->per_node;
    const int64_t smax = (int64_t)oc_calib_msg_largest(R->nsizes);
    int *on = oc_xcalloc((size_t)k, sizeof *on);
    double *alone = oc_xcalloc((size_t)k, sizeof *alone), t_all = 0;
    int rc = 0;
    for (int l = 0; l < k && rc == 0; l++) {
        int64_t w = 0;
        memset(on, 0, (size_t)k * sizeof *on);
        on[l] = 1;
        rc = streams(R, 0, 1, on, smax, &alone[l], &w, st);
        r->wrong += w;
    }
    int64_t w = 0;
    for (int l = 0; l < k; l++)
        on[l] = 1;
    if (rc == 0)
        rc = streams(R, 0, 1, on, smax, &t_all, &w, st);
    r->wrong += w;
    FILE *f = log_of(R);
    if (rc == 0) {
        r->flows_Bps = (double)k * (double)smax / t_all;
        r->flow_lo_Bps = INFINITY;
        for (int l = 0; l < k; l++) {
            const double b = (double)smax / alone[l];
            r->flow_lo_Bps = fmin(r->flow_lo_Bps, b);
            r->flow_hi_Bps = fmax(r->flow_hi_Bps, b);
        }
        if (f) {
            fprintf(f, "# %s flows from node 0 to node 1, local rank l to local rank l, "
                       "%lld B streamed: each alone, then all %d at once\n"
                       "#%5s %8s %8s %14s\n#%5s %8s %8s %14s\n",
                    R->tx->ops->name, (long long)smax, k, "l", "from", "to", "streaming", "",
                    "(rank)", "(rank)", "(GB/s)");
            for (int l = 0; l < k; l++)
                fprintf(f, " %5d %8d %8d %14.3f\n", l, rank_at(R, 0, l), rank_at(R, 1, l),
                        (double)smax / alone[l] / 1e9);
            fprintf(f, " %5s %8s %8s %14.3f   <- together (all bytes / the slowest)\n#\n",
                    "all", "-", "-", r->flows_Bps / 1e9);
        }
    }
    free(on), free(alone);
    return rc;
}

/* The all-reduce sweep over the cross-node groups, all at once. */
static int allreduces(struct run *R, struct oc_netbw_result *r, struct oc_status *st)
{
    double t[64];
    int64_t w[64];
    int i = 0, rc = 0;
    for (int64_t s = 8; s <= R->o->max_msg_bytes && rc == 0; s *= 2, i++)
        rc = allreduce(R, s, &t[i], &w[i], st);
    if (rc != 0)
        return -1;
    const int n = R->m->nodes, k = R->m->per_node;
    FILE *f = log_of(R);
    char what[256];
    snprintf(what, sizeof what, "%s all-reduce across %d nodes, float sum, %s%d group%s "
             "of %d ranks at once; busbw = algbw * 2(n-1)/n (nccl-tests), time = the "
             "slowest rank's", R->tx->ops->name, n, k > 1 ? "local rank l of every node: " : "",
             k, k == 1 ? "" : "s", n);
    table(R, what, t, w, n, r);
    const int last = R->nsizes - 1;
    r->allreduce_bytes = oc_calib_msg_largest(R->nsizes);
    r->allreduce_busbw_Bps = oc_busbw_allreduce(n, r->allreduce_bytes, t[last]);
    r->allreduce_latency_s = t[0];
    if (f)
        fprintf(f, "# all-reduce across nodes: %.2f us at 8 B, busbw %.3f GB/s at %.0f B\n#\n",
                t[0] * 1e6, r->allreduce_busbw_Bps / 1e9, r->allreduce_bytes);
    return 0;
}

/* ------------------------------------------------------------------ */

static void result_init(struct oc_netbw_result *r, const struct run *R)
{
    memset(r, 0, sizeof *r);
    const struct oc_net_map *m = R->m;
    r->nodes = m->nodes;
    r->per_node = m->per_node;
    r->by_group = m->by_group;
    r->transport = R->tx->ops->name;
    r->max_msg_bytes = (int64_t)oc_calib_msg_largest(R->nsizes);
    size_t at = 0;
    for (int j = 0; j < m->nodes && at < sizeof r->hosts; j++)
        at += (size_t)snprintf(r->hosts + at, sizeof r->hosts - at, "%s%s", j ? ", " : "",
                               m->host[j]);
    struct oc_calib_measured when;
    memset(&when, 0, sizeof when);
    oc_calib_host_date(&when);
    snprintf(r->date, sizeof r->date, "%s", when.date);
}

static int measure(struct run *R, struct oc_netbw_result *r, struct oc_status *st)
{
    const int n = R->nsizes;
    double *pp = oc_xcalloc((size_t)n, sizeof *pp), *str = oc_xcalloc((size_t)n, sizeof *str);
    int rc = sweeps(R, pp, str, r, st);
    if (rc == 0)
        rc = node_pairs(R, pp, str, r, st);
    free(pp), free(str);
    if (rc == 0 && R->m->per_node > 1)
        rc = flows(R, r, st);
    else if (rc == 0)
        r->flows_Bps = r->flow_lo_Bps = r->flow_hi_Bps = r->stream_Bps;
    if (rc == 0)
        rc = allreduces(R, r, st);
    if (rc == 0 && r->wrong > 0)
        rc = oc_fail(st, "--netbw: %lld elements arrived wrong (the tables' #wrong): the "
                         "transport corrupts data", (long long)r->wrong);
    return rc;
}

int oc_netbw_run(struct oc_ctl *c, const struct oc_netbw_opts *o,
                 const struct oc_net_map *map, const struct oc_net_tx *tx,
                 struct oc_netbw_result *r, struct oc_status *st)
{
    if (oc_calib_check_counts(1, o->max_msg_bytes, st) != 0)
        return -1;
    struct run R = {c, o, map, tx, oc_calib_msg_sizes(o->max_msg_bytes), NULL, NULL, NULL};
    OC_ASSERT(R.nsizes >= 1 && R.nsizes <= 64);
    const int64_t most = (int64_t)oc_calib_msg_largest(R.nsizes);
    R.chk = oc_xmalloc((size_t)most);
    R.in = oc_xmalloc((size_t)most);
    R.out = oc_xmalloc((size_t)most);
    struct oc_netbw_result mine;
    result_init(&mine, &R);
    FILE *f = log_of(&R);
    if (f) {
        fprintf(f, "# ocsim-exec --netbw over %s (%s), %s: %d %s of %d rank%s each (%s)\n#\n",
                tx->ops->name, tx->ops->detail, mine.date, map->nodes,
                map->by_group ? "rank groups named as nodes (--ranks-per-node)" : "nodes",
                map->per_node, map->per_node == 1 ? "" : "s", mine.hosts);
        fflush(f);
    }
    int rc = measure(&R, &mine, st);
    free(R.chk), free(R.in), free(R.out);
    if (rc == 0 && o->out_path && o->base_path) {
        struct rec x = {0};
        struct oc_status ls = {{0}};
        if (c->rank == 0 &&
            oc_netbw_write_topology(o->out_path, o->base_path, o->base, &mine, o->backend,
                                    &ls) != 0)
            rec_fail(&x, &ls);
        oc_ctl_set_what(c, "--netbw: writing %s", o->out_path);
        rc = share_from(&R, 0, &x, st);
        if (rc == 0 && f)
            fprintf(f, "# wrote %s\n", o->out_path);
    }
    if (f)
        fflush(f);
    if (r)
        *r = mine;
    return rc;
}
