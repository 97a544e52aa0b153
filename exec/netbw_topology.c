/* netbw_topology.c: the topology file `ocsim-exec --netbw` writes (see
 * netbw.h): the base file as it is (its other fields, its "sources" and
 * its "calibration" kept, so that a file of --calibrate gains the network
 * without losing its measurements), the inter-node fields replaced by the
 * measured ones, each with its source.
 *
 * What it is not: --calibrate's writer (calib_topology.c), which builds a
 * whole file from one node's measurements; this one edits a file.
 */
#define _POSIX_C_SOURCE 200809L
#include "netbw.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "backends.h" /* the backends' names */
#include "outfile.h"

int oc_netbw_fabric(const struct oc_topology *base, const struct oc_netbw_result *r,
                    struct oc_topology *out, struct oc_status *st)
{
    if (!(r->latency_s > 0) || !isfinite(r->latency_s))
        return oc_fail(st, "--netbw: the latency between nodes was not measured (%g s)",
                       r->latency_s);
    if (!(r->stream_Bps > 0) || !(r->flows_Bps > 0) || !isfinite(r->flows_Bps))
        return oc_fail(st, "--netbw: the bandwidth between nodes was not measured (%g B/s)",
                       r->stream_Bps);
    *out = *base;
    /* core/topology.h: a flow gets min(one NIC, all NICs / flows). K flows
     * of a node at once on min(K, NICs) NICs: each NIC carried the
     * aggregate / min(K, NICs). One flow (K = 1): one NIC's rate. */
    const int64_t k = r->per_node, nics = base->nics_per_node;
    out->nic_bandwidth_Bps =
        k > 1 ? r->flows_Bps / (double)(k < nics ? k : nics) : r->stream_Bps;
    /* core/topology.c: inter-node latency = NIC latency + (2 levels - 1)
     * switch hops; the hops keep the base's figure where it fits. */
    const double hops_s = (double)(2 * base->switch_levels - 1) * base->inter_latency_s;
    if (r->latency_s >= hops_s) {
        out->nic_latency_s = r->latency_s - hops_s;
    } else {
        out->inter_latency_s = 0;
        out->nic_latency_s = r->latency_s;
    }
    snprintf(out->nic_name, sizeof out->nic_name, "%s between nodes (measured)",
             r->transport);
    return oc_topology_check(out, "the topology with the measured network", st);
}

/* ------------------------------------------------------------------ */
/* The file                                                             */

/* Six significant digits: a measurement is not more precise (the file is
 * dumped with ten, so the base's own numbers keep theirs). */
static json_t *num6(double v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.6g", v);
    return json_real(strtod(buf, NULL));
}

static void set_fmt(json_t *o, const char *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_fmt(json_t *o, const char *k, const char *fmt, ...)
{
    char buf[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_object_set_new(o, k, json_string(buf));
}

/* The object `key` of o (created when absent). */
static json_t *section(json_t *o, const char *key)
{
    json_t *s = json_object_get(o, key);
    if (!json_is_object(s)) {
        s = json_object();
        json_object_set_new(o, key, s);
    }
    return s;
}

/* "measured by ocsim-exec --netbw on ...": who, where, when. */
static void who_of(char *who, size_t n, const struct oc_netbw_result *r,
                   const char *backend)
{
    char flag[64] = "";
    if (strcmp(backend, OC_BACKEND_CPU_NAME) != 0) /* cpu: the default, no flag */
        snprintf(flag, sizeof flag, "--backend %s ", backend);
    snprintf(who, n, "measured by ocsim-exec %s--netbw on %d %s (%s) %s, %d rank%s per node%s",
             flag, r->nodes, r->by_group ? "rank groups named as nodes" : "nodes", r->hosts,
             r->date, r->per_node, r->per_node == 1 ? "" : "s",
             r->by_group ? " (--ranks-per-node: one machine, not a network between nodes)"
                         : "");
}

static void sources(json_t *src, const struct oc_topology *t,
                    const struct oc_topology *base, const struct oc_netbw_result *r,
                    const char *who)
{
    const int64_t k = r->per_node, nics = base->nics_per_node;
    if (k > 1)
        set_fmt(src, "nic.bandwidth_Bps",
                "%s: %s streaming (a window of messages in flight, then an "
                "acknowledgement, as osu_bw) of %lld B messages from the %lld ranks of "
                "node 0 to those of node 1 at once: %.4g B/s together (each alone: "
                "%.4g to %.4g B/s), / min(%lld ranks, nic.count_per_node %lld), so that "
                "the simulator's rule (a flow gets min(one NIC, all NICs / flows)) gives "
                "back what the node's flows measured",
                who, r->transport, (long long)r->max_msg_bytes, (long long)k, r->flows_Bps,
                r->flow_lo_Bps, r->flow_hi_Bps, (long long)k, (long long)nics);
    else
        set_fmt(src, "nic.bandwidth_Bps",
                "%s: %s streaming (a window of messages in flight, then an "
                "acknowledgement, as osu_bw) of %lld B messages, one flow: the median over "
                "the %d node pair%s (node 0 with each), one NIC's rate by the simulator's "
                "rule (with one rank per node and a transport that stripes over several "
                "NICs it is the node's: run one rank per NIC to tell them apart)",
                who, r->transport, (long long)r->max_msg_bytes, r->nodes - 1,
                r->nodes == 2 ? "" : "s");
    const int64_t hops = 2 * base->switch_levels - 1;
    set_fmt(src, "nic.latency_s",
            "%s: the median over the %d node pair%s of the one-way time of an 8-byte %s "
            "ping-pong (half the round trip), %.4g s, less %lld switch hop%s of "
            "inter_node.latency_s (%.4g s), so that the simulator's inter-node latency "
            "(NIC + hops) is the measured one",
            who, r->nodes - 1, r->nodes == 2 ? "" : "s", r->transport, r->latency_s,
            (long long)hops, hops == 1 ? "" : "s", t->inter_latency_s);
    if (t->inter_latency_s != base->inter_latency_s)
        set_fmt(src, "inter_node.latency_s",
                "0, %s: %lld hop%s of the base's %.4g s exceed the measured one-way "
                "latency %.4g s, so nic.latency_s holds all of it",
                who, (long long)hops, hops == 1 ? "" : "s", base->inter_latency_s,
                r->latency_s);
    set_fmt(src, "_netbw_allreduce",
            "%s: %s all-reduce (float sum) across %d nodes, %lld group%s at once: busbw "
            "%.4g B/s at %.0f B (nccl-tests: algbw * 2(n-1)/n), %.4g s at 8 B. No field "
            "holds it: the simulator derives its collectives from the NICs",
            who, r->transport, r->nodes, (long long)k, k == 1 ? "" : "s",
            r->allreduce_busbw_Bps, r->allreduce_bytes, r->allreduce_latency_s);
    set_fmt(src, "_netbw_base",
            "nic.count_per_node, inter_node.switch_levels and oversubscription, and every "
            "field not named with ocsim-exec --netbw above, are topology %s's", base->name);
}

int oc_netbw_write_topology(const char *out_path, const char *base_path,
                            const struct oc_topology *base,
                            const struct oc_netbw_result *r, const char *backend,
                            struct oc_status *st)
{
    struct oc_topology t;
    if (oc_netbw_fabric(base, r, &t, st) != 0)
        return -1;
    json_error_t err;
    json_t *root = json_load_file(base_path, 0, &err);
    if (!json_is_object(root)) {
        json_decref(root);
        return oc_fail(st, "%s: cannot read it again: %s", base_path, err.text);
    }
    char who[640];
    who_of(who, sizeof who, r, backend);
    json_t *nic = section(root, "nic");
    json_object_set_new(nic, "name", json_string(t.nic_name));
    json_object_set_new(nic, "bandwidth_Bps", num6(t.nic_bandwidth_Bps));
    json_object_set_new(nic, "latency_s", num6(t.nic_latency_s));
    json_object_set_new(section(root, "inter_node"), "latency_s", num6(t.inter_latency_s));
    const char *d = json_string_value(json_object_get(root, "description"));
    set_fmt(root, "description", "%s%sThe network between nodes (nic, inter_node.latency_s) "
            "is %.200s.", d ? d : "", d && *d ? " " : "", who);
    sources(section(root, "sources"), &t, base, r, who);
    int rc = 0;
    /* Whole or not at all (outfile.h): the text as json_dump_file writes it. */
    char *text =
        json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10) | JSON_PRESERVE_ORDER);
    OC_ASSERT(text);
    rc = oc_outfile_write_all(out_path, text, strlen(text), st);
    free(text);
    json_decref(root);
    /* What the simulator will read: the file as oc_topology_load sees it. */
    struct oc_topology back;
    if (rc == 0 && oc_topology_load(out_path, &back, st) != 0)
        return -1;
    return rc;
}
