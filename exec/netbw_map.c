/* netbw_map.c: which ranks of a job share a node, for `ocsim-exec --netbw`
 * (netbw.h), and the data its checks send.
 *
 * What it is not: a measurement (netbw.c) or a transport (the backends').
 */
#define _POSIX_C_SOURCE 200809L
#include "netbw.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Each `k` consecutive ranks as one node, named after its first rank's
 * host and the group. */
static int map_groups(struct oc_net_map *m, int size, const char *hosts, int64_t k,
                      struct oc_status *st)
{
    if (size % k != 0)
        return oc_fail(st, "--ranks-per-node %lld does not divide the %d ranks",
                       (long long)k, size);
    m->per_node = (int)k;
    m->nodes = size / (int)k;
    m->by_group = 1;
    m->host = oc_xcalloc((size_t)m->nodes, sizeof *m->host);
    m->rank_of = oc_xmalloc((size_t)size * sizeof *m->rank_of);
    for (int r = 0; r < size; r++)
        m->rank_of[r] = r;
    for (int j = 0; j < m->nodes; j++)
        snprintf(m->host[j], sizeof m->host[j], "%.40s/group%d",
                 hosts + (size_t)j * (size_t)k * OC_NET_HOST_MAX, j);
    return 0;
}

/* Nodes by host name, numbered by their lowest rank. */
static int map_hosts(struct oc_net_map *m, int size, const char *hosts,
                     struct oc_status *st)
{
    int *node_of = oc_xmalloc((size_t)size * sizeof *node_of);
    int *count = oc_xcalloc((size_t)size, sizeof *count);
    m->host = oc_xcalloc((size_t)size, sizeof *m->host);
    for (int r = 0; r < size; r++) {
        const char *h = hosts + (size_t)r * OC_NET_HOST_MAX;
        int j = 0;
        while (j < m->nodes && strncmp(m->host[j], h, OC_NET_HOST_MAX) != 0)
            j++;
        if (j == m->nodes)
            snprintf(m->host[m->nodes++], OC_NET_HOST_MAX, "%.*s", OC_NET_HOST_MAX - 1, h);
        node_of[r] = j;
        count[j]++;
    }
    int rc = 0;
    m->per_node = count[0];
    for (int j = 1; j < m->nodes && rc == 0; j++)
        if (count[j] != count[0])
            rc = oc_fail(st, "--netbw: node %s runs %d rank%s, node %s %d: start the same "
                             "number on every node (mpirun --map-by ppr:K:node)",
                         m->host[j], count[j], count[j] == 1 ? "" : "s", m->host[0],
                         count[0]);
    if (rc == 0) {
        m->rank_of = oc_xmalloc((size_t)size * sizeof *m->rank_of);
        int *fill = oc_xcalloc((size_t)m->nodes, sizeof *fill);
        for (int r = 0; r < size; r++) /* rank order: local rank 0 is the lowest */
            m->rank_of[node_of[r] * m->per_node + fill[node_of[r]]++] = r;
        free(fill);
    }
    free(node_of);
    free(count);
    return rc;
}

int oc_net_map_build(struct oc_net_map *m, int rank, int size, const char *hosts,
                     int64_t ranks_per_node, struct oc_status *st)
{
    OC_ASSERT(size >= 1 && rank >= 0 && rank < size && ranks_per_node >= 0);
    memset(m, 0, sizeof *m);
    int rc = ranks_per_node > 0 ? map_groups(m, size, hosts, ranks_per_node, st)
                                : map_hosts(m, size, hosts, st);
    char who[32] = "the job's one rank runs";
    if (size > 1)
        snprintf(who, sizeof who, "all %d ranks run", size);
    if (rc == 0 && m->nodes < 2)
        rc = oc_fail(st, "--netbw: %s on one node (%s): start ranks on two nodes or more "
                         "(mpirun --map-by ppr:1:node), or on one machine name groups of "
                         "ranks as nodes with --ranks-per-node K",
                     who, m->host[0]);
    if (rc != 0) {
        oc_net_map_free(m);
        return -1;
    }
    m->consecutive = 1;
    for (int q = 0; q < size; q++) {
        if (m->rank_of[q] != q)
            m->consecutive = 0;
        if (m->rank_of[q] == rank) {
            m->node = q / m->per_node;
            m->local = q % m->per_node;
        }
    }
    return 0;
}

int oc_net_map_init(struct oc_net_map *m, struct oc_ctl *c, int64_t ranks_per_node,
                    struct oc_status *st)
{
    char me[OC_NET_HOST_MAX] = {0};
    if (gethostname(me, sizeof me - 1) != 0)
        snprintf(me, sizeof me, "unknown-host");
    char *all = oc_xcalloc((size_t)c->size, OC_NET_HOST_MAX);
    oc_ctl_set_what(c, "--netbw: gathering the host names");
    int rc = oc_ctl_gather(c, me, all, OC_NET_HOST_MAX, 0, st);
    if (rc == 0)
        rc = oc_ctl_bcast(c, all, (int64_t)c->size * OC_NET_HOST_MAX, 0, st);
    if (rc == 0)
        rc = oc_net_map_build(m, c->rank, c->size, all, ranks_per_node, st);
    free(all);
    return rc;
}

void oc_net_map_free(struct oc_net_map *m)
{
    free(m->rank_of);
    free(m->host);
    m->rank_of = NULL;
    m->host = NULL;
}

/* ------------------------------------------------------------------ */
/* The checks' data                                                     */

float oc_netbw_pattern(int member, int64_t i)
{
    return (float)((member % 4 + 1) * (int)(i % 13 + 1));
}

float oc_netbw_pattern_sum(int members, int64_t i)
{
    /* sum over m < n of (m % 4 + 1): 10 per full four, then 1, 2, 3. */
    static const int part[4] = {0, 1, 3, 6};
    const int64_t per = 10 * (int64_t)(members / 4) + part[members % 4];
    return (float)(per * (i % 13 + 1));
}

unsigned char oc_netbw_byte(int64_t i) { return (unsigned char)((i * 7 + 3) & 0xff); }
