/* topology.h: the machines a layout runs on, read from a JSON file.
 *
 *   struct oc_topology t;
 *   if (oc_topology_load("h100-100g", &t, &st) != 0) { ...st.msg... }
 *   double link = t.nic_bandwidth_Bps * t.nics_per_node;   // per node
 *
 * The file describes one node type and the fabric between nodes; the number
 * of nodes follows from --cards (oc_topology_nodes). Every number is in SI
 * base units and its unit is in its name: bytes, seconds, bytes per second
 * (_Bps), FLOP/s. A shipped file states the public source of each number in
 * its "sources" object. Layout of the file:
 *
 *   { "name": "...", "description": "...",
 *     "gpus_per_node": 8,
 *     "device":     { "name", "peak_flops_16bit", "memory_bytes",
 *                     "hbm_bandwidth_Bps", "sm_count", "gemm_efficiency" },
 *     "intra_node": { "name", "bandwidth_Bps", "latency_s",
 *                     "achieved_Bps" (optional),
 *                     "nvls" (optional, true/false: the switch reduces,
 *                     NVLink SHARP; sim/coll_nvls.c) },
 *     "nic":        { "name", "count_per_node", "bandwidth_Bps", "latency_s" },
 *     "inter_node": { "name", "latency_s", "switch_levels", "oversubscription" },
 *     "nccl":       { "version" } (optional: NCCL's terms, core/nccl_model.h),
 *     "sources":    { "<field>": "<where the number comes from>", ... } }
 *
 * A heterogeneous cluster lists its nodes in groups instead of one node
 * type (a top-level "device" is then refused: each group names its own):
 *
 *     "node_groups": [ { "name": "h100", "nodes": 4,
 *                        "device": { ...as above... },
 *                        "intra_node": {...}, "nic": {...} }, ... ]
 *
 * "intra_node" and "nic" of a group are optional (the top level's then);
 * a group's NIC count must be the top level's. The cluster is exactly
 * these nodes: --cards may be fewer (the first nodes in order), never
 * more. "sources" keys of a group's fields are written
 * "node_groups.<name>.device.peak_flops_16bit".
 *
 * A calibrated file (ocsim-exec --calibrate) may add "calibration" with
 * measured rates that replace the estimates (see cost.h); every field of
 * it is optional:
 *
 *   "calibration": {
 *     "gemm_flops": 1.3e11,          // sustained GEMM rate, FLOP/s
 *     "mem_Bps": 1.4e10,             // sustained memory bandwidth
 *     "activation_bytes": 4,         // bytes per activation element the
 *                                    // calibration ran in (a record: the
 *                                    // predictions take the layout's, layout.h)
 *     "optimizer_s_per_param": 3e-9, // AdamW step, seconds per parameter
 *     "part_flops_per_s": {          // measured rate of each part and phase,
 *       "attn_fwd": 3e9, "attn_bwd": 2e9, "attn_recompute": 1e9,
 *       "mlp_fwd": 2e10, "mlp_bwd": 2e10, "head_fwd": 4e10, "head_bwd": 5e10 },
 *     "part_s_per_token": {          // parts with (almost) no FLOPs
 *       "embed_fwd": 1e-7, "embed_bwd": 2e-7 } }
 *
 * A part's rate counts the FLOPs the schedule assigns to that part's op
 * (oc_cost_sched_flops in cost.h): forward, backward (twice the forward),
 * and attn_recompute the selective recompute of the attention scores (full
 * recompute reruns the forward and uses the *_fwd rates). Keys not listed
 * above are refused, like everywhere else in the file.
 */
#ifndef OC_TOPOLOGY_H
#define OC_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

struct oc_device {
    char name[64];
    double peak_flops_16bit;  /* dense bf16/fp16 tensor-core FLOP/s */
    double memory_bytes;      /* usable device memory */
    double hbm_bandwidth_Bps; /* device memory bandwidth */
    int64_t sm_count;         /* streaming multiprocessors (wave quantization) */
    double gemm_efficiency;   /* sustained fraction of peak for large GEMMs, (0,1] */
};

/* The keys of "calibration.part_flops_per_s", in this order. */
enum oc_calib_part {
    OC_CALIB_ATTN_FWD,
    OC_CALIB_ATTN_BWD,
    OC_CALIB_ATTN_RECOMPUTE, /* selective recompute: the attention scores */
    OC_CALIB_MLP_FWD,
    OC_CALIB_MLP_BWD,
    OC_CALIB_HEAD_FWD,
    OC_CALIB_HEAD_BWD,
    OC_CALIB_PARTS
};
/* "attn_fwd", ... (the JSON key); NULL past the end. */
const char *oc_calib_part_key(enum oc_calib_part p);

/* What a GPU keeps besides the model's tensors (core/reserve.h): the
 * CUDA context, NCCL's buffers, cuBLAS's workspace and the allocator's
 * fragmentation. Not part of the topology file: the commands set it from
 * --reserve and --fragmentation (cli/options.h). A zeroed setting is
 * OC_RESERVE_FIXED with 0 bytes, no reserve (what a topology built by
 * hand, in a test, gets). */
enum oc_reserve_mode { OC_RESERVE_FIXED, OC_RESERVE_AUTO };
struct oc_reserve_setting {
    enum oc_reserve_mode mode;
    double bytes;         /* OC_RESERVE_FIXED: the whole reserve */
    double fragmentation; /* OC_RESERVE_AUTO: fraction of the peak, [0, 1) */
};

/* Node groups (a heterogeneous cluster, "node_groups" in the file): the
 * nodes of the cluster in order, each group with its own device, node
 * fabric and NICs (the NIC count per node and gpus_per_node are the
 * cluster's). */
#define OC_MAX_NODE_GROUPS 8
struct oc_node_group {
    char name[64];
    int64_t nodes;
    struct oc_device device;
    char intra_name[64];
    double intra_bandwidth_Bps, intra_latency_s, intra_achieved_Bps;
    char nic_name[64];
    double nic_bandwidth_Bps, nic_latency_s;
};

struct oc_topology {
    char name[128];
    int64_t gpus_per_node;
    struct oc_device device;
    char intra_name[64];
    double intra_bandwidth_Bps; /* per GPU, per direction, into the node fabric */
    double intra_latency_s;
    /* What NCCL carries over the node fabric per GPU and direction, below
     * the line rate (NVLink's packet overhead): NCCL's own figure per link
     * (src/graph/topo.h) times the links; 0: the line rate. Every transfer
     * inside a node runs at it (oc_topology_intra_Bps, sim/platform.c). */
    double intra_achieved_Bps;
    /* 1: the node's switch reduces in the network (NVLink SHARP, NVSwitch
     * 3 on HGX/DGX H100 and H200; "intra_node.nvls": true), so NCCL's NVLS
     * all-reduce may run inside a node (sim/coll_nvls.c); 0: it may not. */
    int intra_nvls;
    /* > 0: the collectives pay NCCL's protocol latencies and efficiencies
     * (core/nccl_model.h), the tables of this NCCL version; 0: none. */
    double nccl_version;
    char nic_name[64];
    int64_t nics_per_node;
    double nic_bandwidth_Bps; /* per NIC, per direction */
    double nic_latency_s;
    char inter_name[64];
    double inter_latency_s;   /* per switch hop */
    int64_t switch_levels;    /* 1: one switch; 2: leaf + spine; ... */
    double oversubscription;  /* >= 1: uplink bandwidth is divided by this */
    /* Measured rates from a calibration, 0 where absent. */
    double calib_gemm_flops;     /* sustained GEMM rate at the model's shapes */
    double calib_mem_Bps;        /* sustained memory bandwidth */
    double calib_act_bytes;      /* bytes per activation element the
                                    calibration ran in (a record; the
                                    predictions take the layout's precision) */
    double calib_optimizer_s_per_param; /* AdamW, seconds per parameter */
    double calib_part_flops[OC_CALIB_PARTS]; /* FLOP/s of each part, phase */
    double calib_embed_fwd_s_per_token;      /* embedding, seconds per token */
    double calib_embed_bwd_s_per_token;
    struct oc_reserve_setting reserve; /* set by the commands, not the file */
    /* 0: one node type (the fields above), as many nodes as --cards asks.
     * >= 1: the file's node groups; the fields above are then the
     * groups' most favourable composite (topology_groups.c: every rate
     * the highest, every latency the lowest, the memory the smallest), so
     * a bound or estimate that reads them stays below any rank's time and
     * a fit against them holds on every device. */
    int n_groups;
    struct oc_node_group groups[OC_MAX_NODE_GROUPS];
};

/* ---- node groups (topology_groups.c) ----
 * Ranks sit on nodes in order (rank r on node r / gpus_per_node) and nodes
 * on groups in the file's order: 4 nodes of group 0 are nodes 0..3. */
/* The group of node n (0 without groups); n past the last group's nodes
 * is the last group (asserted below the cluster's size by the checks). */
int oc_topology_group_of_node(const struct oc_topology *t, int64_t node);
int oc_topology_group_of_rank(const struct oc_topology *t, int64_t rank);
/* GPUs of all groups (0 without groups: any --cards). */
int64_t oc_topology_group_cards(const struct oc_topology *t);
/* The device rank r runs on: its group's, else t->device. */
const struct oc_device *oc_topology_device_of_rank(const struct oc_topology *t,
                                                   int64_t rank);
/* *out = t as a uniform topology of group g's node type (n_groups 0): what
 * the cost model of a rank on group g reads. Without groups a copy. */
void oc_topology_group_view(const struct oc_topology *t, int g,
                            struct oc_topology *out);
/* Whether `cards` GPUs fit the groups: at most oc_topology_group_cards
 * (the first nodes in order when fewer); one line naming both when not. */
int oc_topology_check_cards(const struct oc_topology *t, int64_t cards,
                            struct oc_status *st);
/* Fills t's device, node-fabric and NIC fields with the groups' composite
 * (topology_groups.c; the reader calls it, a test that builds groups in
 * code does too). No-op without groups. */
void oc_topology_groups_compose(struct oc_topology *t);
/* Sum of the 16-bit peaks of ranks 0..world-1 (the MFU's denominator). */
double oc_topology_peak_sum(const struct oc_topology *t, int64_t world);

int oc_topology_load(const char *path_or_name, struct oc_topology *t,
                     struct oc_status *st);
/* The same from the n bytes of a topology JSON in memory (a fuzzer's
 * input), read as a user's file ("sources" optional); `where` stands for
 * the file in messages and gives the name when the text has none. */
int oc_topology_parse(const char *text, size_t n, const char *where,
                      struct oc_topology *t, struct oc_status *st);
int oc_topology_check(const struct oc_topology *t, const char *where,
                      struct oc_status *st);

/* Nodes needed for `cards` GPUs: ceil(cards / gpus_per_node). */
int64_t oc_topology_nodes(const struct oc_topology *t, int64_t cards);

int oc_topology_same_node(const struct oc_topology *t, int64_t gpu_a,
                          int64_t gpu_b);
/* One flow's bandwidth between two GPUs of one node (per direction):
 * intra_achieved_Bps where the file gives it, else the line rate. */
double oc_topology_intra_Bps(const struct oc_topology *t);
/* One flow's bandwidth between nodes when `flows_per_node` flows leave the
 * node at once (for example the 8 DP rings of a TP-8 layout): each flow gets
 * min(one NIC, all NICs / flows), and when the route climbs above the leaf
 * switch (switch_levels > 1) at most its share of the node's uplinks,
 * all NICs / oversubscription / flows (max-min: a lone flow keeps its NIC). */
double oc_topology_inter_Bps(const struct oc_topology *t, int64_t flows_per_node);
/* Latency of one message between nodes: NIC latency plus one switch hop per
 * switch traversed (1 with one switch, 3 up and down a leaf-spine tree...). */
double oc_topology_inter_latency_s(const struct oc_topology *t);

#endif
