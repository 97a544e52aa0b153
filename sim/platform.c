/* platform.c: generate or load the SimGrid platform (see platform.h for the
 * shape of the generated one and why). This file writes XML and maps hosts;
 * it does not start SimGrid (engine.c does). Log category ocsim_platform
 * (see engine.h): the platform loaded and its hosts, at DEBUG. */
#define _POSIX_C_SOURCE 200809L

#include "platform.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simgrid/engine.h>
#include <simgrid/host.h>

#include "sim_log.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_platform, ocsim,
                                "the SimGrid platform: generated from a topology or a user's file");

/* Numbers go into the XML with every bit (%.17g), so the routes carry the
 * topology's values exactly. */
#define NUM "%.17g"

static int check_pos(double v, const char *field, struct oc_status *st)
{
    if (!(isfinite(v) && v > 0))
        return oc_fail(st, "topology: %s must be a positive number (got %g)",
                       field, v);
    return 0;
}

static int check_nonneg(double v, const char *field, struct oc_status *st)
{
    if (!(isfinite(v) && v >= 0))
        return oc_fail(st, "topology: %s must be a number >= 0 (got %g)",
                       field, v);
    return 0;
}

int oc_sim_platform_check_topology(const struct oc_topology *t, int64_t cards,
                                   struct oc_status *st)
{
    OC_ASSERT(t);
    if (cards < 1)
        return oc_fail(st, "cards must be at least 1 (got %" PRId64 ")", cards);
    if (t->gpus_per_node < 1)
        return oc_fail(st, "topology: gpus_per_node must be at least 1 (got %" PRId64 ")",
                       t->gpus_per_node);
    if (check_pos(t->intra_bandwidth_Bps, "intra_node.bandwidth_Bps", st) ||
        check_nonneg(t->intra_latency_s, "intra_node.latency_s", st))
        return -1;
    if (oc_topology_check_cards(t, cards, st) != 0)
        return -1;
    if (oc_topology_nodes(t, cards) < 2)
        return 0; /* one node: the NIC and fabric fields are not used */
    if (t->nics_per_node < 1)
        return oc_fail(st, "topology: nic.count_per_node must be at least 1 (got %" PRId64 ")",
                       t->nics_per_node);
    if (check_pos(t->nic_bandwidth_Bps, "nic.bandwidth_Bps", st) ||
        check_nonneg(t->nic_latency_s, "nic.latency_s", st) ||
        check_nonneg(t->inter_latency_s, "inter_node.latency_s", st))
        return -1;
    if (t->switch_levels < 1)
        return oc_fail(st, "topology: inter_node.switch_levels must be at least 1 (got %" PRId64 ")",
                       t->switch_levels);
    if (!(isfinite(t->oversubscription) && t->oversubscription >= 1))
        return oc_fail(st, "topology: inter_node.oversubscription must be >= 1 (got %g)",
                       t->oversubscription);
    return 0;
}

static int write_xml(FILE *f, const struct oc_topology *t, int64_t cards,
                     const int64_t *twins, int64_t ntwins, int reduced,
                     struct oc_status *st);

int oc_sim_platform_write_xml(FILE *f, const struct oc_topology *t,
                              int64_t cards, struct oc_status *st)
{
    return oc_sim_platform_write_xml_twins(f, t, cards, NULL, 0, st);
}

int oc_sim_platform_write_xml_twins(FILE *f, const struct oc_topology *t,
                                    int64_t cards, const int64_t *twins,
                                    int64_t ntwins, struct oc_status *st)
{
    return write_xml(f, t, cards, twins, ntwins, 0, st);
}

/* The nodes a reduced platform keeps (platform.h): those of the twins'
 * GPUs, and one more when that makes a single node of several. */
static unsigned char *kept_nodes(int64_t nodes, int64_t g, const int64_t *twins,
                                 int64_t ntwins)
{
    unsigned char *keep = oc_xcalloc((size_t)nodes, 1);
    int64_t kept = 0;
    for (int64_t j = 0; j < ntwins; j++)
        if (!keep[twins[j] / g]) {
            keep[twins[j] / g] = 1;
            kept++;
        }
    for (int64_t n = 0; kept < 2 && n < nodes; n++)
        if (!keep[n]) {
            keep[n] = 1;
            kept++;
        }
    return keep;
}

/* The twins (platform.h): their hosts (routes 0), only their GPU sends
 * to, or their one route each (routes 1): out through the GPU's links and
 * back in through them; not symmetrical, the twin never sends. */
static void write_twins(FILE *f, const struct oc_topology *t, int64_t cards,
                        const int64_t *twins, int64_t ntwins, int routes)
{
    const int64_t g = t->gpus_per_node, k = t->nics_per_node;
    const int64_t nodes = oc_topology_nodes(t, cards);
    const int over = t->switch_levels > 1 && t->oversubscription > 1;
    for (int64_t j = 0; j < ntwins; j++) {
        const int64_t i = twins[j], n = i / g;
        const int nv = (n == nodes - 1 ? cards - n * g : g) > 1;
        if (!routes) {
            if (nv)
                fprintf(f, "  <host id=\"gpu%" PRId64 "~nv\" speed=\"" NUM "f\"/>\n", i,
                        OC_SIM_HOST_SPEED_FLOPS);
            if (nodes > 1) {
                fprintf(f, "  <host id=\"gpu%" PRId64 "~net\" speed=\"" NUM "f\"/>\n", i,
                        OC_SIM_HOST_SPEED_FLOPS);
                fprintf(f, "  <host id=\"gpu%" PRId64 "~in\" speed=\"" NUM "f\"/>\n", i,
                        OC_SIM_HOST_SPEED_FLOPS);
            }
            continue;
        }
        if (nv)
            fprintf(f, "  <route src=\"gpu%" PRId64 "\" dst=\"gpu%" PRId64 "~nv\" "
                       "symmetrical=\"NO\"><link_ctn id=\"nvl%" PRId64 "\" direction=\"UP\"/>"
                       "<link_ctn id=\"nvl%" PRId64 "\" direction=\"DOWN\"/></route>\n",
                    i, i, i, i);
        if (nodes > 1)
            fprintf(f, "  <route src=\"gpu%" PRId64 "\" dst=\"gpu%" PRId64 "~net\" "
                       "symmetrical=\"NO\"><link_ctn id=\"nic%" PRId64 ".%" PRId64
                       "\" direction=\"UP\"/><link_ctn id=\"up%" PRId64 "\"%s/>"
                       "<link_ctn id=\"up%" PRId64 "\"%s/><link_ctn id=\"nic%" PRId64
                       ".%" PRId64 "\" direction=\"DOWN\"/></route>\n",
                    i, i, n, i % k, n, over ? " direction=\"UP\"" : "", n,
                    over ? " direction=\"DOWN\"" : "", n, i % k);
        /* gpu<i>~in: reached from the fabric only, into GPU i's node and
         * NIC as a message from another node would come */
        if (nodes > 1)
            fprintf(f, "  <route src=\"fabric\" dst=\"gpu%" PRId64 "~in\" symmetrical=\"NO\">"
                       "<link_ctn id=\"up%" PRId64 "\"%s/><link_ctn id=\"nic%" PRId64
                       ".%" PRId64 "\" direction=\"DOWN\"/></route>\n",
                    i, n, over ? " direction=\"DOWN\"" : "", n, i % k);
    }
}

/* Node n's node type: t itself, or with node groups its group's view
 * (topology.h), written into *buf. */
static const struct oc_topology *node_view(const struct oc_topology *t, int64_t n,
                                           struct oc_topology *buf)
{
    if (t->n_groups < 1)
        return t;
    oc_topology_group_view(t, oc_topology_group_of_node(t, n), buf);
    return buf;
}

static int write_xml(FILE *f, const struct oc_topology *t, int64_t cards,
                     const int64_t *twins, int64_t ntwins, int reduced,
                     struct oc_status *st)
{
    struct oc_topology nv; /* node_view's buffer */
    OC_ASSERT(f && t && (twins || ntwins == 0));
    if (oc_sim_platform_check_topology(t, cards, st) != 0)
        return -1;
    for (int64_t i = 0; i < ntwins; i++)
        if (twins[i] < 0 || twins[i] >= cards)
            return oc_fail(st, "platform: twin of GPU %" PRId64 " outside 0..%" PRId64,
                           twins[i], cards - 1);
    const int64_t g = t->gpus_per_node;
    const int64_t nodes = oc_topology_nodes(t, cards);
    const int64_t k = t->nics_per_node;
    /* A node has a switch when it holds two GPUs or more. */
#define NODE_GPUS(n) ((n) == nodes - 1 ? cards - (n) * g : g)
    unsigned char *keep = reduced ? kept_nodes(nodes, g, twins, ntwins) : NULL;
#define KEPT(n) (!keep || keep[n])

    fprintf(f, "<?xml version='1.0'?>\n"
               "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
               "<platform version=\"4.1\">\n");
    /* The topology's name goes into a comment: keep it to characters that
     * cannot end the comment or break the XML. */
    char name[sizeof t->name];
    size_t nn = 0;
    for (const char *c = t->name; *c && nn + 1 < sizeof name; c++) {
        const int ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                       (*c >= '0' && *c <= '9') || *c == '_' || *c == '.' ||
                       (*c == '-' && (nn == 0 || name[nn - 1] != '-'));
        name[nn++] = ok ? *c : '_';
    }
    name[nn] = '\0';
    fprintf(f, "<!-- ocsim: %" PRId64 " GPUs, %" PRId64 " per node, %" PRId64
               " nodes, topology %s; see sim/platform.h -->\n",
            cards, g, nodes, name);
    /* DijkstraCache: routes are shortest paths of the graph below, computed
     * once per source host; the file stays linear in the cards (a Full zone
     * would need every pair). */
    fprintf(f, "<zone id=\"ocsim\" routing=\"DijkstraCache\">\n");
    for (int64_t i = 0; i < cards; i++)
        if (KEPT(i / g))
            fprintf(f, "  <host id=\"gpu%" PRId64 "\" speed=\"" NUM "f\"/>\n", i,
                    OC_SIM_HOST_SPEED_FLOPS);
    write_twins(f, t, cards, twins, ntwins, 0);
    for (int64_t n = 0; n < nodes; n++)
        if (NODE_GPUS(n) > 1 && KEPT(n))
            fprintf(f, "  <router id=\"sw%" PRId64 "\"/>\n", n);
    if (nodes > 1)
        fprintf(f, "  <router id=\"fabric\"/>\n");

    /* Intra-node: half the GPU-to-GPU latency on each GPU's own link, so a
     * route (two links) has exactly intra_latency_s. */
    for (int64_t i = 0; i < cards; i++)
        if (NODE_GPUS(i / g) > 1 && KEPT(i / g))
            fprintf(f, "  <link id=\"nvl%" PRId64 "\" bandwidth=\"" NUM "Bps\" latency=\"" NUM
                       "s\" sharing_policy=\"SPLITDUPLEX\"/>\n",
                    i, oc_topology_intra_Bps(node_view(t, i / g, &nv)),
                    node_view(t, i / g, &nv)->intra_latency_s / 2);

    /* Inter-node: one message sees both NICs (nic_latency_s in total) and
     * both nodes' fabric links ((2*levels-1) switch hops in total), which
     * sums to oc_topology_inter_latency_s (core/topology.c). */
    const int over = t->switch_levels > 1 && t->oversubscription > 1;
    const double up_lat_s =
        (double)(2 * t->switch_levels - 1) * t->inter_latency_s / 2;
    for (int64_t n = 0; nodes > 1 && n < nodes; n++) {
        if (!KEPT(n))
            continue;
        const struct oc_topology *tn = node_view(t, n, &nv);
        for (int64_t j = 0; j < k; j++)
            fprintf(f, "  <link id=\"nic%" PRId64 ".%" PRId64 "\" bandwidth=\"" NUM
                       "Bps\" latency=\"" NUM "s\" sharing_policy=\"SPLITDUPLEX\"/>\n",
                    n, j, tn->nic_bandwidth_Bps, tn->nic_latency_s / 2);
        /* The node's share of the leaf uplinks (platform.h); FATPIPE when
         * there is no oversubscription: it then only adds latency. */
        const double all_nics_Bps = (double)k * tn->nic_bandwidth_Bps;
        fprintf(f, "  <link id=\"up%" PRId64 "\" bandwidth=\"" NUM "Bps\" latency=\"" NUM
                   "s\" sharing_policy=\"%s\"/>\n",
                n, over ? all_nics_Bps / t->oversubscription : all_nics_Bps,
                up_lat_s, over ? "SPLITDUPLEX" : "FATPIPE");
    }

    /* Graph edges; symmetrical routes flip UP/DOWN on the way back. A
     * same-node pair is 2 links away through sw<n> and 4 through the
     * fabric, so the shortest path stays inside the node. */
    const char *up_dir = over ? " direction=\"UP\"" : "";
    for (int64_t i = 0; i < cards; i++) {
        const int64_t n = i / g;
        if (!KEPT(n))
            continue;
        if (NODE_GPUS(n) > 1)
            fprintf(f, "  <route src=\"gpu%" PRId64 "\" dst=\"sw%" PRId64
                       "\" symmetrical=\"YES\"><link_ctn id=\"nvl%" PRId64
                       "\" direction=\"UP\"/></route>\n",
                    i, n, i);
        if (nodes > 1)
            fprintf(f, "  <route src=\"gpu%" PRId64 "\" dst=\"fabric\" symmetrical=\"YES\">"
                       "<link_ctn id=\"nic%" PRId64 ".%" PRId64 "\" direction=\"UP\"/>"
                       "<link_ctn id=\"up%" PRId64 "\"%s/></route>\n",
                    i, n, i % k, n, up_dir);
    }
    write_twins(f, t, cards, twins, ntwins, 1);
    fprintf(f, "</zone>\n</platform>\n");
#undef NODE_GPUS
#undef KEPT
    free(keep);
    if (ferror(f))
        return oc_fail(st, "writing the platform XML failed: %s", strerror(errno));
    return 0;
}

int oc_sim_platform_check_file(const char *path, struct oc_status *st)
{
    OC_ASSERT(path);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return oc_fail(st, "%s: cannot open platform file: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return oc_fail(st, "%s: platform file is not a regular file", path);
    FILE *f = fopen(path, "r");
    if (!f)
        return oc_fail(st, "%s: cannot read platform file: %s", path, strerror(errno));
    /* SimGrid aborts on anything it cannot parse; catch the obvious case of
     * a file that is no platform at all. The element is near the top. */
    char buf[8192 + 1];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (!strstr(buf, "<platform"))
        return oc_fail(st, "%s: not a SimGrid platform (no <platform> element in its first 8 KiB)",
                       path);
    /* SimGrid's parser (FleXML) rejects a file without the DOCTYPE line
     * ("Unexpected character `<' in prolog"). */
    if (!strstr(buf, "<!DOCTYPE platform"))
        return oc_fail(st, "%s: a SimGrid platform needs the line <!DOCTYPE platform SYSTEM "
                           "\"https://simgrid.org/simgrid.dtd\"> before <platform>", path);
    return 0;
}

/* Seal the platform (SimGrid computes the routing tables when the first run
 * starts; before that, route queries fail) without simulating anything. */
static void seal(void)
{
    simgrid_run_until(0.0);
}

static int map_hosts(struct oc_sim_platform *p, const char *what, int64_t cards,
                     struct oc_status *st)
{
    p->hosts = oc_xcalloc((size_t)cards, sizeof *p->hosts);
    for (int64_t i = 0; i < cards; i++) {
        char name[32];
        snprintf(name, sizeof name, "gpu%" PRId64, i);
        p->hosts[i] = sg_host_by_name(name);
        if (!p->hosts[i] && !p->reduced) {
            int r = oc_fail(st, "%s: no host \"%s\": a platform for %" PRId64
                                " cards must name its hosts gpu0..gpu%" PRId64
                                " (it has %zu hosts)",
                            what, name, cards, cards - 1, sg_host_count());
            oc_sim_platform_free(p);
            return r;
        }
    }
    p->cards = cards;
    XBT_DEBUG("%s: hosts gpu0..gpu%" PRId64 " of %zu, %" PRId64 " GPUs per node", what,
              cards - 1, sg_host_count(), p->gpus_per_node);
    return 0;
}

/* The temporary platform file, removed by abort_cleanup when SimGrid aborts
 * while loading it (a bad --cfg value is only checked then). */
static char tmp_dir[4096], tmp_file[4096 + 32];

static void abort_cleanup(int sig)
{
    unlink(tmp_file); /* both async-signal-safe */
    rmdir(tmp_dir);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The route figures of a generated platform (platform.h): one pair of
 * GPUs in a node, one pair of nodes. */
static void route_figures(struct oc_sim_platform *p)
{
    const int64_t g = p->gpus_per_node;
    int64_t a = -1, b = -1, c = -1; /* a and b in one node, c in another */
    for (int64_t i = 0; i < p->cards; i++) {
        if (!p->hosts[i])
            continue;
        if (a < 0)
            a = i;
        else if (b < 0 && i / g == a / g)
            b = i;
        else if (c < 0 && i / g != a / g)
            c = i;
    }
    if (a >= 0 && b >= 0) {
        p->has_intra = 1;
        p->intra_lat_s = sg_host_get_route_latency(p->hosts[a], p->hosts[b]);
        p->intra_bw_Bps = sg_host_get_route_bandwidth(p->hosts[a], p->hosts[b]);
    }
    if (a >= 0 && c >= 0) {
        p->has_inter = 1;
        p->inter_lat_s = sg_host_get_route_latency(p->hosts[a], p->hosts[c]);
        p->inter_bw_Bps = sg_host_get_route_bandwidth(p->hosts[a], p->hosts[c]);
    }
}

/* Whether node groups (topology.h) give nodes unlike NVLink or NICs. */
static int links_differ(const struct oc_topology *t)
{
    for (int g = 1; g < t->n_groups; g++) {
        const struct oc_node_group *a = &t->groups[0], *b = &t->groups[g];
        if (a->intra_bandwidth_Bps != b->intra_bandwidth_Bps ||
            a->intra_achieved_Bps != b->intra_achieved_Bps ||
            a->intra_latency_s != b->intra_latency_s ||
            a->nic_bandwidth_Bps != b->nic_bandwidth_Bps || a->nic_latency_s != b->nic_latency_s)
            return 1;
    }
    return 0;
}

static void map_twins(struct oc_sim_platform *p, const int64_t *twins, int64_t ntwins)
{
    if (ntwins == 0)
        return;
    p->twin_nv = oc_xcalloc((size_t)p->cards, sizeof *p->twin_nv);
    p->twin_net = oc_xcalloc((size_t)p->cards, sizeof *p->twin_net);
    p->twin_in = oc_xcalloc((size_t)p->cards, sizeof *p->twin_in);
    for (int64_t j = 0; j < ntwins; j++) {
        char name[48];
        snprintf(name, sizeof name, "gpu%" PRId64 "~nv", twins[j]);
        p->twin_nv[twins[j]] = sg_host_by_name(name);
        snprintf(name, sizeof name, "gpu%" PRId64 "~net", twins[j]);
        p->twin_net[twins[j]] = sg_host_by_name(name);
        snprintf(name, sizeof name, "gpu%" PRId64 "~in", twins[j]);
        p->twin_in[twins[j]] = sg_host_by_name(name);
    }
}

int oc_sim_platform_build(struct oc_sim_platform *p,
                          const struct oc_topology *t, int64_t cards,
                          struct oc_status *st)
{
    return oc_sim_platform_build_twins(p, t, cards, NULL, 0, 0, st);
}

int oc_sim_platform_build_twins(struct oc_sim_platform *p,
                                const struct oc_topology *t, int64_t cards,
                                const int64_t *twins, int64_t ntwins, int reduced,
                                struct oc_status *st)
{
    OC_ASSERT(p && t && !p->hosts);
    if (oc_sim_platform_check_topology(t, cards, st) != 0)
        return -1;
    /* simgrid_load_platform reads a file: write one in a private directory
     * and remove it once loaded. */
    const char *tmp = getenv("TMPDIR");
    char *dir = tmp_dir, *file = tmp_file;
    snprintf(dir, sizeof tmp_dir, "%s/ocsim-platform-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return oc_fail(st, "%s: cannot create a temporary directory: %s", dir,
                       strerror(errno));
    snprintf(file, sizeof tmp_file, "%s/platform.xml", dir);
    FILE *f = fopen(file, "w");
    if (!f) {
        int r = oc_fail(st, "%s: cannot write: %s", file, strerror(errno));
        rmdir(dir);
        return r;
    }
    int rc = write_xml(f, t, cards, twins, ntwins, reduced && ntwins > 0, st);
    /* A private file SimGrid reads at once, not an output (outfile.h): its
     * writes are checked (ferror is sticky), then it is removed. */
    const int bad = ferror(f);
    if ((fclose(f) != 0 || bad) && rc == 0)
        rc = oc_fail(st, "%s: cannot write: %s", file, strerror(errno));
    if (rc == 0) {
        struct sigaction sa, old_sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = abort_cleanup;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGABRT, &sa, &old_sa);
        XBT_DEBUG("loading the platform generated for %" PRId64 " cards of topology %s from %s",
                  cards, t->name, file);
        simgrid_load_platform(file);
        seal();
        sigaction(SIGABRT, &old_sa, NULL);
    }
    unlink(file);
    rmdir(dir);
    if (rc != 0)
        return -1;
    p->gpus_per_node = t->gpus_per_node;
    p->generated = 1;
    p->reduced = reduced && ntwins > 0;
    if (map_hosts(p, "generated platform", cards, st) != 0)
        return -1;
    map_twins(p, twins, ntwins);
    /* node groups whose links differ: no one figure per class; every
     * route's own from SimGrid (has_intra and has_inter stay 0) */
    if (!links_differ(t))
        route_figures(p);
    return 0;
}

int oc_sim_platform_load_file(struct oc_sim_platform *p, const char *path,
                              int64_t cards, int64_t gpus_per_node,
                              struct oc_status *st)
{
    OC_ASSERT(p && path && !p->hosts);
    if (cards < 1)
        return oc_fail(st, "cards must be at least 1 (got %" PRId64 ")", cards);
    if (gpus_per_node < 1)
        return oc_fail(st, "gpus per node must be at least 1 (got %" PRId64 ")",
                       gpus_per_node);
    if (oc_sim_platform_check_file(path, st) != 0)
        return -1;
    XBT_DEBUG("loading the platform file %s for %" PRId64 " cards", path, cards);
    simgrid_load_platform(path);
    seal();
    p->gpus_per_node = gpus_per_node;
    p->generated = 0;
    return map_hosts(p, path, cards, st);
}

void oc_sim_platform_free(struct oc_sim_platform *p)
{
    if (!p)
        return;
    free(p->hosts);
    free(p->twin_nv);
    free(p->twin_net);
    free(p->twin_in);
    p->hosts = p->twin_nv = p->twin_net = p->twin_in = NULL;
    p->cards = 0;
}
