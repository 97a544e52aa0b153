/* fuzz_topology.c: libFuzzer target of the topology reader
 * (core/topology.c: oc_topology_parse, a topology JSON from memory, read
 * as a user's file).
 *
 * What it asserts: a reader that fails leaves the topology zeroed and
 * names the problem in one clean line (fz_check_msg); one that succeeds
 * gives a topology that passes its own check (oc_topology_check), with a
 * name, whose node count for 1 and 4096 cards is right (ceil) and whose
 * bandwidths and latencies between and inside nodes are finite and
 * positive (latencies >= 0) for 1 to 64 flows per node.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "topology.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fz_init_known();
    return 0;
}

static void check_topology(const struct oc_topology *t)
{
    struct oc_status st = {{0}};
    FZ_CHECK(oc_topology_check(t, "fuzz", &st) == 0,
             "oc_topology_parse accepted a topology its own check refuses: %s", st.msg);
    FZ_CHECK(t->name[0] && memchr(t->name, '\0', sizeof t->name), "topology without a name");
    FZ_CHECK(t->gpus_per_node >= 1, "gpus_per_node %lld", (long long)t->gpus_per_node);
    FZ_CHECK(oc_topology_nodes(t, 1) == 1, "1 card on %lld nodes",
             (long long)oc_topology_nodes(t, 1));
    int64_t nodes = oc_topology_nodes(t, 4096);
    FZ_CHECK(nodes * t->gpus_per_node >= 4096 && (nodes - 1) * t->gpus_per_node < 4096,
             "4096 cards on %lld nodes of %lld", (long long)nodes,
             (long long)t->gpus_per_node);
    double intra = oc_topology_intra_Bps(t), lat = oc_topology_inter_latency_s(t);
    FZ_CHECK(isfinite(intra) && intra > 0, "intra-node bandwidth %g", intra);
    FZ_CHECK(isfinite(lat) && lat >= 0, "inter-node latency %g", lat);
    for (int64_t flows = 1; flows <= 64; flows *= 4) {
        double bw = oc_topology_inter_Bps(t, flows);
        FZ_CHECK(isfinite(bw) && bw > 0, "inter-node bandwidth %g for %lld flows", bw,
                 (long long)flows);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    struct oc_topology t;
    struct oc_status st = {{0}};
    if (oc_topology_parse((const char *)data, n, "fuzz/topology.json", &t, &st) != 0) {
        char *s = fz_text(data, n < 200 ? n : 200);
        fz_check_msg("oc_topology_parse", &st, s);
        free(s);
        static const struct oc_topology zero;
        FZ_CHECK(memcmp(&t, &zero, sizeof t) == 0, "a failed read left a topology behind");
        return 0;
    }
    check_topology(&t);
    return 0;
}
