/* topology.c: read the machines a layout runs on from a JSON file, check
 * them, and answer the few questions the planner asks of them (nodes for a
 * card count, same node or not, bandwidth and latency of one flow). See
 * topology.h for the file layout.
 *
 * The number fields are described once, in the tables below: the reader,
 * oc_topology_check and the "sources" keys all use the same tables, so a
 * rule cannot differ between a file and a struct built in code.
 */
#define _POSIX_C_SOURCE 200809L
#include "topology.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "json_util.h"
#include "paths.h"

/* Limits past which a number is a unit mistake, not a machine. Today's
 * largest: ~2.5e15 dense 16-bit FLOP/s (B200), 192 GB, 8 TB/s HBM,
 * 900 GB/s NVLink per direction, 800 Gb/s NICs. */
#define OC_BW_LO 1e6   /* 1 MB/s: below is Gb/s or GB/s written as a plain number */
#define OC_BW_HI 1e14  /* 100 TB/s */
#define OC_LAT_HI 1.0  /* one second per message: microseconds written as seconds */

static const struct oc_json_rule oc_rule_flops = {0.0, 1, INFINITY, 0, 1e9, 1e17, "FLOP/s"};
static const struct oc_json_rule oc_rule_bytes = {0.0, 1, INFINITY, 0, 1e6, 1e13, "bytes"};
static const struct oc_json_rule oc_rule_Bps = {0.0, 1, INFINITY, 0, OC_BW_LO, OC_BW_HI, "bytes per second"};
/* A latency may be 0 (an ideal fabric, to compare with a formula). */
static const struct oc_json_rule oc_rule_lat = {0.0, 0, INFINITY, 0, -INFINITY, OC_LAT_HI, "seconds"};
static const struct oc_json_rule oc_rule_eff = {0.0, 1, 1.0, 0, -INFINITY, INFINITY, NULL};
static const struct oc_json_rule oc_rule_oversub = {1.0, 0, INFINITY, 0, -INFINITY, 1e3, NULL};
/* Calibration of a CPU executor: a part made of plain loops may run at a few
 * MFLOP/s, so the absurd floor of a part's rate is lower than a device's. */
static const struct oc_json_rule oc_rule_part_flops = {0.0, 1, INFINITY, 0, 1e3, 1e17, "FLOP/s"};
static const struct oc_json_rule oc_rule_s_per_token = {0.0, 1, INFINITY, 0, 1e-13, 1.0, "seconds per token"};
static const struct oc_json_rule oc_rule_s_per_param = {0.0, 1, INFINITY, 0, 1e-15, 1e-3, "seconds per parameter"};
/* NCCL 2.x, written as 2.18 */
static const struct oc_json_rule oc_rule_nccl_version = {2.0, 0, 3.0, 1, -INFINITY, INFINITY, NULL};
/* fp8 to fp64 */
static const struct oc_json_rule oc_rule_elem = {0.0, 1, 8.0, 0, -INFINITY, INFINITY, "bytes"};

struct oc_topo_num {
    const char *section; /* "" at top level */
    const char *key;
    size_t off; /* of the double in struct oc_topology */
    const struct oc_json_rule *rule;
    int required;
};

struct oc_topo_int {
    const char *section;
    const char *key;
    size_t off; /* of the int64_t in struct oc_topology */
    int64_t min, absurd_max;
};

struct oc_topo_str {
    const char *section;
    const char *key;
    size_t off, size; /* of the char array in struct oc_topology */
};

#define OFF(f) offsetof(struct oc_topology, f)
#define STR(sec, key, f) {sec, key, OFF(f), sizeof(((struct oc_topology *)0)->f)}

static const struct oc_topo_num oc_topo_nums[] = {
    {"device", "peak_flops_16bit", OFF(device.peak_flops_16bit), &oc_rule_flops, 1},
    {"device", "memory_bytes", OFF(device.memory_bytes), &oc_rule_bytes, 1},
    {"device", "hbm_bandwidth_Bps", OFF(device.hbm_bandwidth_Bps), &oc_rule_Bps, 1},
    {"device", "gemm_efficiency", OFF(device.gemm_efficiency), &oc_rule_eff, 1},
    {"intra_node", "bandwidth_Bps", OFF(intra_bandwidth_Bps), &oc_rule_Bps, 1},
    {"intra_node", "latency_s", OFF(intra_latency_s), &oc_rule_lat, 1},
    {"nic", "bandwidth_Bps", OFF(nic_bandwidth_Bps), &oc_rule_Bps, 1},
    {"nic", "latency_s", OFF(nic_latency_s), &oc_rule_lat, 1},
    {"inter_node", "latency_s", OFF(inter_latency_s), &oc_rule_lat, 1},
    {"inter_node", "oversubscription", OFF(oversubscription), &oc_rule_oversub, 1},
    {"calibration", "gemm_flops", OFF(calib_gemm_flops), &oc_rule_flops, 0},
    {"calibration", "mem_Bps", OFF(calib_mem_Bps), &oc_rule_Bps, 0},
    {"calibration", "activation_bytes", OFF(calib_act_bytes), &oc_rule_elem, 0},
    {"calibration", "optimizer_s_per_param", OFF(calib_optimizer_s_per_param), &oc_rule_s_per_param, 0},
    /* The keys in the order of enum oc_calib_part (oc_calib_part_key). */
    {"calibration.part_flops_per_s", "attn_fwd", OFF(calib_part_flops[OC_CALIB_ATTN_FWD]), &oc_rule_part_flops, 0},
    {"calibration.part_flops_per_s", "attn_bwd", OFF(calib_part_flops[OC_CALIB_ATTN_BWD]), &oc_rule_part_flops, 0},
    {"calibration.part_flops_per_s", "attn_recompute", OFF(calib_part_flops[OC_CALIB_ATTN_RECOMPUTE]), &oc_rule_part_flops, 0},
    {"calibration.part_flops_per_s", "mlp_fwd", OFF(calib_part_flops[OC_CALIB_MLP_FWD]), &oc_rule_part_flops, 0},
    {"calibration.part_flops_per_s", "mlp_bwd", OFF(calib_part_flops[OC_CALIB_MLP_BWD]), &oc_rule_part_flops, 0},
    {"calibration.part_flops_per_s", "head_fwd", OFF(calib_part_flops[OC_CALIB_HEAD_FWD]), &oc_rule_part_flops, 0},
    {"calibration.part_flops_per_s", "head_bwd", OFF(calib_part_flops[OC_CALIB_HEAD_BWD]), &oc_rule_part_flops, 0},
    {"calibration.part_s_per_token", "embed_fwd", OFF(calib_embed_fwd_s_per_token), &oc_rule_s_per_token, 0},
    {"calibration.part_s_per_token", "embed_bwd", OFF(calib_embed_bwd_s_per_token), &oc_rule_s_per_token, 0},
    /* optional; after the part keys, which OC_PART_ROW0 counts */
    {"intra_node", "achieved_Bps", OFF(intra_achieved_Bps), &oc_rule_Bps, 0},
    {"nccl", "version", OFF(nccl_version), &oc_rule_nccl_version, 0},
};

/* The part keys: the table's entries of "calibration.part_flops_per_s",
 * which start at this index, in enum order. */
#define OC_PART_ROW0 14

static const struct oc_topo_int oc_topo_ints[] = {
    {"", "gpus_per_node", OFF(gpus_per_node), 1, 10000},
    {"device", "sm_count", OFF(device.sm_count), 1, 100000},
    {"nic", "count_per_node", OFF(nics_per_node), 1, 1024},
    {"inter_node", "switch_levels", OFF(switch_levels), 1, 16},
};

/* true/false fields (an int in struct oc_topology), all optional: false
 * when absent. */
struct oc_topo_bool {
    const char *section;
    const char *key;
    size_t off; /* of the int in struct oc_topology */
};

static const struct oc_topo_bool oc_topo_bools[] = {
    {"intra_node", "nvls", OFF(intra_nvls)},
};

static const struct oc_topo_str oc_topo_strs[] = {
    STR("", "name", name),
    STR("device", "name", device.name),
    STR("intra_node", "name", intra_name),
    STR("nic", "name", nic_name),
    STR("inter_node", "name", inter_name),
};

#define OC_COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *oc_calib_part_key(enum oc_calib_part p)
{
    if ((int)p < 0 || p >= OC_CALIB_PARTS)
        return NULL;
    const struct oc_topo_num *f = &oc_topo_nums[OC_PART_ROW0 + (int)p];
    OC_ASSERT(strcmp(f->section, "calibration.part_flops_per_s") == 0);
    return f->key;
}

/* The sections of the file, in the order they are read. A dotted name is
 * an object inside the section before the dot. */
static const char *const oc_topo_sections[] = {
    "device", "intra_node", "nic", "inter_node", "nccl", "calibration",
    "calibration.part_flops_per_s", "calibration.part_s_per_token", NULL,
};

static int section_required(const char *sec)
{
    return strncmp(sec, "calibration", 11) != 0 && strcmp(sec, "nccl") != 0;
}

/* Keys allowed in one section: those of the tables, and the names of the
 * sections nested in it. */
static void section_keys(const char *sec, const char **keys, size_t n)
{
    size_t k = 0;
    const size_t len = strlen(sec);
    for (int i = 0; oc_topo_sections[i] && k + 1 < n; i++)
        if (strncmp(oc_topo_sections[i], sec, len) == 0 &&
            oc_topo_sections[i][len] == '.')
            keys[k++] = oc_topo_sections[i] + len + 1;
    for (size_t i = 0; i < OC_COUNT(oc_topo_nums) && k + 1 < n; i++)
        if (strcmp(oc_topo_nums[i].section, sec) == 0)
            keys[k++] = oc_topo_nums[i].key;
    for (size_t i = 0; i < OC_COUNT(oc_topo_ints) && k + 1 < n; i++)
        if (strcmp(oc_topo_ints[i].section, sec) == 0)
            keys[k++] = oc_topo_ints[i].key;
    for (size_t i = 0; i < OC_COUNT(oc_topo_strs) && k + 1 < n; i++)
        if (strcmp(oc_topo_strs[i].section, sec) == 0)
            keys[k++] = oc_topo_strs[i].key;
    for (size_t i = 0; i < OC_COUNT(oc_topo_bools) && k + 1 < n; i++)
        if (strcmp(oc_topo_bools[i].section, sec) == 0)
            keys[k++] = oc_topo_bools[i].key;
    keys[k] = NULL;
}

/* Is "device.sm_count" (or "gpus_per_node") a field of the tables? A
 * nested section ("calibration.part_flops_per_s") counts as one field: its
 * numbers come from one measurement. */
static int is_field(const char *dotted)
{
    char name[160];
    for (int i = 0; oc_topo_sections[i]; i++)
        if (strchr(oc_topo_sections[i], '.') && strcmp(oc_topo_sections[i], dotted) == 0)
            return 1;
    for (size_t i = 0; i < OC_COUNT(oc_topo_nums); i++) {
        const struct oc_topo_num *f = &oc_topo_nums[i];
        snprintf(name, sizeof name, "%s%s%s", f->section, *f->section ? "." : "", f->key);
        if (strcmp(name, dotted) == 0)
            return 1;
    }
    for (size_t i = 0; i < OC_COUNT(oc_topo_ints); i++) {
        const struct oc_topo_int *f = &oc_topo_ints[i];
        snprintf(name, sizeof name, "%s%s%s", f->section, *f->section ? "." : "", f->key);
        if (strcmp(name, dotted) == 0)
            return 1;
    }
    for (size_t i = 0; i < OC_COUNT(oc_topo_strs); i++) {
        const struct oc_topo_str *f = &oc_topo_strs[i];
        snprintf(name, sizeof name, "%s%s%s", f->section, *f->section ? "." : "", f->key);
        if (strcmp(name, dotted) == 0)
            return 1;
    }
    for (size_t i = 0; i < OC_COUNT(oc_topo_bools); i++) {
        const struct oc_topo_bool *f = &oc_topo_bools[i];
        snprintf(name, sizeof name, "%s.%s", f->section, f->key);
        if (strcmp(name, dotted) == 0)
            return 1;
    }
    return 0;
}

/* Read the fields of one section (sec "" is the top level). */
static int read_section(const struct oc_json_obj *o, const char *sec,
                        struct oc_topology *t, struct oc_status *st)
{
    char *base = (char *)t;
    for (size_t i = 0; i < OC_COUNT(oc_topo_nums); i++) {
        const struct oc_topo_num *f = &oc_topo_nums[i];
        if (strcmp(f->section, sec) == 0 &&
            oc_json_num(o, f->key, f->required, f->rule,
                        (double *)(base + f->off), NULL, st))
            return -1;
    }
    for (size_t i = 0; i < OC_COUNT(oc_topo_ints); i++) {
        const struct oc_topo_int *f = &oc_topo_ints[i];
        if (strcmp(f->section, sec) == 0 &&
            oc_json_int(o, f->key, OC_JSON_REQUIRED, f->min, f->absurd_max,
                        (int64_t *)(base + f->off), NULL, st))
            return -1;
    }
    for (size_t i = 0; i < OC_COUNT(oc_topo_strs); i++) {
        const struct oc_topo_str *f = &oc_topo_strs[i];
        if (strcmp(f->section, sec) == 0 &&
            oc_json_str(o, f->key, OC_JSON_OPTIONAL, base + f->off, f->size,
                        NULL, st))
            return -1;
    }
    for (size_t i = 0; i < OC_COUNT(oc_topo_bools); i++) {
        const struct oc_topo_bool *f = &oc_topo_bools[i];
        if (strcmp(f->section, sec) == 0 &&
            oc_json_bool(o, f->key, OC_JSON_OPTIONAL, (int *)(base + f->off), NULL, st))
            return -1;
    }
    return 0;
}

/* A source of a node group's field, "node_groups.<name>.device.sm_count",
 * names the field after the group's name; any other key is itself. */
static const char *group_field(const char *key)
{
    if (strncmp(key, "node_groups.", 12) != 0)
        return key;
    const char *dot = strchr(key + 12, '.');
    return dot ? dot + 1 : key;
}

/* "sources": every key names a field, every value is a non-empty string. */
static int read_sources(const struct oc_json_obj *src, struct oc_status *st)
{
    const char *key;
    json_t *v;
    json_object_foreach(src->obj, key, v) {
        if (key[0] == '_')
            continue;
        char name[160];
        oc_json_field_name(src, key, name, sizeof name);
        if (!is_field(group_field(key)))
            return oc_fail(st, "%s: field '%s' names no field of a topology (write e.g. \"device.peak_flops_16bit\")",
                           src->file, name);
        if (!json_is_string(v) || json_string_length(v) == 0)
            return oc_fail(st, "%s: field '%s' must be a non-empty string, not %s",
                           src->file, name,
                           json_is_string(v) ? "an empty one" : oc_json_type_name(v));
    }
    return 0;
}

static void file_stem(const char *path, char *out, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".json") == 0)
        len -= 5;
    if (len >= n)
        len = oc_utf8_fit(base, n - 1);
    memcpy(out, base, len);
    out[len] = '\0';
}

/* One section of a node group's object into tmp (which holds the top
 * level's values); found says whether the group gave it. */
static int group_section(const struct oc_json_obj *g, const char *sec, int required,
                         struct oc_topology *tmp, int *found, struct oc_status *st)
{
    struct oc_json_obj o;
    if (oc_json_obj_field(g, sec, required, &o, found, st))
        return -1;
    if (!*found)
        return 0;
    const char *keys[24];
    section_keys(sec, keys, OC_COUNT(keys));
    if (strcmp(sec, "intra_node") == 0) /* optional keys: not the top level's */
        tmp->intra_achieved_Bps = 0, tmp->intra_name[0] = '\0';
    if (strcmp(sec, "nic") == 0)
        tmp->nic_name[0] = '\0';
    return oc_json_known_keys(&o, keys, st) || read_section(&o, sec, tmp, st) ? -1 : 0;
}

/* Group i of "node_groups" (its object g) into t->groups[i]. */
static int read_group(const struct oc_json_obj *g, int i, struct oc_topology *t,
                      struct oc_status *st)
{
    static const char *const keys[] = {"name", "nodes", "device", "intra_node", "nic", NULL};
    struct oc_node_group *ng = &t->groups[i];
    struct oc_topology tmp = *t;
    int found;
    if (oc_json_known_keys(g, keys, st) ||
        oc_json_str(g, "name", OC_JSON_REQUIRED, ng->name, sizeof ng->name, NULL, st) ||
        oc_json_int(g, "nodes", OC_JSON_REQUIRED, 1, 1000000, &ng->nodes, NULL, st))
        return -1;
    memset(&tmp.device, 0, sizeof tmp.device);
    if (group_section(g, "device", 1, &tmp, &found, st) ||
        group_section(g, "intra_node", 0, &tmp, &found, st) ||
        group_section(g, "nic", 0, &tmp, &found, st))
        return -1;
    if (tmp.nics_per_node != t->nics_per_node)
        return oc_fail(st, "%s: field '%s.nic.count_per_node' is %" PRId64 " but the top "
                           "level's is %" PRId64 " (one NIC count for the cluster)",
                       g->file, g->prefix, tmp.nics_per_node, t->nics_per_node);
    for (int j = 0; j < i; j++)
        if (strcmp(t->groups[j].name, ng->name) == 0)
            return oc_fail(st, "%s: field '%s.name': two node groups named '%s'",
                           g->file, g->prefix, ng->name);
    ng->device = tmp.device;
    memcpy(ng->intra_name, tmp.intra_name, sizeof ng->intra_name);
    ng->intra_bandwidth_Bps = tmp.intra_bandwidth_Bps;
    ng->intra_latency_s = tmp.intra_latency_s;
    ng->intra_achieved_Bps = tmp.intra_achieved_Bps;
    memcpy(ng->nic_name, tmp.nic_name, sizeof ng->nic_name);
    ng->nic_bandwidth_Bps = tmp.nic_bandwidth_Bps;
    ng->nic_latency_s = tmp.nic_latency_s;
    /* the group as a uniform topology passes every rule of one */
    struct oc_topology view;
    t->n_groups = i + 1;
    oc_topology_group_view(t, i, &view);
    return oc_topology_check(&view, g->file, st);
}

/* "node_groups": an array of 1..OC_MAX_NODE_GROUPS group objects; then
 * the composite fields (oc_topology_groups_compose). */
static int read_groups(const struct oc_json_obj *root, struct oc_topology *t,
                       struct oc_status *st)
{
    json_t *arr = json_object_get(root->obj, "node_groups");
    if (!json_is_array(arr) || json_array_size(arr) < 1 ||
        json_array_size(arr) > OC_MAX_NODE_GROUPS)
        return oc_fail(st, "%s: field 'node_groups' must be an array of 1 to %d node "
                           "groups, not %s%s",
                       root->file, OC_MAX_NODE_GROUPS, oc_json_type_name(arr),
                       json_is_array(arr) ? " of that size" : "");
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *e = json_array_get(arr, i);
        struct oc_json_obj g = {.obj = e, .path = root->path};
        memcpy(g.file, root->file, sizeof g.file);
        snprintf(g.prefix, sizeof g.prefix, "node_groups[%zu]", i);
        if (!json_is_object(e))
            return oc_fail(st, "%s: field '%s' must be an object ({...}), not %s",
                           root->file, g.prefix, oc_json_type_name(e));
        if (read_group(&g, (int)i, t, st))
            return -1;
    }
    oc_topology_groups_compose(t);
    return 0;
}

static int read_topology(const struct oc_json_obj *root, int shipped,
                         struct oc_topology *t, struct oc_status *st)
{
    static const char *const top_keys[] = {
        "name", "description", "gpus_per_node", "device", "intra_node",
        "nic", "inter_node", "nccl", "sources", "calibration", "node_groups", NULL,
    };
    if (oc_json_known_keys(root, top_keys, st))
        return -1;
    const int grouped = oc_json_has(root, "node_groups");
    if (grouped && oc_json_has(root, "device"))
        return oc_fail(st, "%s: field 'device' and field 'node_groups' both given "
                           "(with node groups each group names its device)", root->file);
    if (grouped && oc_json_has(root, "calibration"))
        return oc_fail(st, "%s: field 'calibration' with 'node_groups' (a calibration "
                           "measures one device; calibrate each node type's own file)",
                       root->file);
    if (read_section(root, "", t, st))
        return -1;
    char desc[4096];
    if (oc_json_str(root, "description", OC_JSON_OPTIONAL, desc, sizeof desc, NULL, st))
        return -1;
    for (int i = 0; oc_topo_sections[i]; i++) {
        const char *sec = oc_topo_sections[i];
        const char *dot = strchr(sec, '.');
        struct oc_json_obj o;
        int found = 0;
        if (dot) {
            /* Nested: inside its parent, read (and found) before it. */
            char parent[64];
            snprintf(parent, sizeof parent, "%.*s", (int)(dot - sec), sec);
            struct oc_json_obj po;
            if (oc_json_obj_field(root, parent, 0, &po, &found, st))
                return -1;
            if (found && oc_json_obj_field(&po, dot + 1, 0, &o, &found, st))
                return -1;
        } else if (oc_json_obj_field(root, sec,
                                     section_required(sec) &&
                                         !(grouped && (strcmp(sec, "device") == 0 ||
                                                       strcmp(sec, "intra_node") == 0)),
                                     &o, &found, st)) {
            return -1;
        }
        if (!found)
            continue;
        const char *keys[24];
        section_keys(sec, keys, OC_COUNT(keys));
        if (oc_json_known_keys(&o, keys, st) || read_section(&o, sec, t, st))
            return -1;
    }
    /* A shipped file says where each number comes from; a user's file may. */
    struct oc_json_obj src;
    int have_src = 0;
    if (oc_json_obj_field(root, "sources", shipped, &src, &have_src, st))
        return -1;
    if (have_src && read_sources(&src, st))
        return -1;
    if (!t->name[0])
        file_stem(root->path, t->name, sizeof t->name);
    if (grouped && read_groups(root, t, st))
        return -1;
    return oc_topology_check(t, root->file, st);
}

/* A name without '/' and ".json" is a shipped file (paths.h). */
static int is_shipped_name(const char *name)
{
    size_t n = strlen(name);
    return !strchr(name, '/') && !(n >= 5 && strcmp(name + n - 5, ".json") == 0);
}

/* The topology of a parsed document (NULL: the parse failed, st says
 * why); takes the reference. */
static int read_doc(json_t *doc, const char *where, int shipped,
                    struct oc_topology *t, struct oc_status *st)
{
    if (!doc)
        return -1;
    struct oc_json_obj root = oc_json_root(doc, where);
    int rc = read_topology(&root, shipped, t, st);
    json_decref(doc);
    if (rc)
        memset(t, 0, sizeof *t);
    return rc;
}

int oc_topology_load(const char *path_or_name, struct oc_topology *t,
                     struct oc_status *st)
{
    memset(t, 0, sizeof *t);
    char path[4096];
    if (oc_data_path("topologies", path_or_name, path, sizeof path, st))
        return -1;
    return read_doc(oc_json_load_file(path, st), path,
                    is_shipped_name(path_or_name), t, st);
}

int oc_topology_parse(const char *text, size_t n, const char *where,
                      struct oc_topology *t, struct oc_status *st)
{
    memset(t, 0, sizeof *t);
    return read_doc(oc_json_load_buffer(text, n, where, st), where, 0, t, st);
}

int oc_topology_check(const struct oc_topology *t, const char *where,
                      struct oc_status *st)
{
    const char *base = (const char *)t;
    char name[160];
    for (size_t i = 0; i < OC_COUNT(oc_topo_ints); i++) {
        const struct oc_topo_int *f = &oc_topo_ints[i];
        snprintf(name, sizeof name, "%s%s%s", f->section, *f->section ? "." : "", f->key);
        int64_t v;
        memcpy(&v, base + f->off, sizeof v);
        if (oc_json_check_int(where, name, (double)v, f->min, f->absurd_max, st))
            return -1;
    }
    for (size_t i = 0; i < OC_COUNT(oc_topo_nums); i++) {
        const struct oc_topo_num *f = &oc_topo_nums[i];
        double v;
        memcpy(&v, base + f->off, sizeof v);
        if (!f->required && v == 0.0) /* optional: 0 means absent */
            continue;
        snprintf(name, sizeof name, "%s%s%s", f->section, *f->section ? "." : "", f->key);
        if (oc_json_check_num(where, name, v, f->rule, st))
            return -1;
    }
    if (t->intra_achieved_Bps > t->intra_bandwidth_Bps)
        return oc_fail(st, "%s: intra_node.achieved_Bps (%g) exceeds the line rate intra_node.bandwidth_Bps (%g)",
                       where, t->intra_achieved_Bps, t->intra_bandwidth_Bps);
    return 0;
}

/* ceil(cards / gpus_per_node) */
int64_t oc_topology_nodes(const struct oc_topology *t, int64_t cards)
{
    OC_ASSERT(t->gpus_per_node >= 1 && cards >= 0);
    return (cards + t->gpus_per_node - 1) / t->gpus_per_node;
}

/* GPUs are numbered node by node: GPU g sits on node g / gpus_per_node. */
int oc_topology_same_node(const struct oc_topology *t, int64_t gpu_a,
                          int64_t gpu_b)
{
    OC_ASSERT(t->gpus_per_node >= 1 && gpu_a >= 0 && gpu_b >= 0);
    return gpu_a / t->gpus_per_node == gpu_b / t->gpus_per_node;
}

/* NVSwitch gives every GPU its full NVLink bandwidth to any other GPU of
 * the node at once (NVIDIA DGX H100 / HGX documentation), so one flow gets
 * the per-GPU figure. */
double oc_topology_intra_Bps(const struct oc_topology *t)
{
    return t->intra_achieved_Bps > 0 ? t->intra_achieved_Bps : t->intra_bandwidth_Bps;
}

/* One flow cannot exceed one NIC; `flows` flows share all NICs of the node
 * evenly; above the leaf switch (switch_levels > 1) the node's share of the
 * uplinks, all NICs / oversubscription, is shared by the flows that cross
 * it, max-min as in the simulator's up<n> link (sim/platform.c): it limits
 * them only when they would exceed it. One flow on 8 NICs at 2:1 keeps its
 * full NIC (the uplinks carry 4 NICs' worth); 8 flows get half a NIC each. */
double oc_topology_inter_Bps(const struct oc_topology *t, int64_t flows_per_node)
{
    OC_ASSERT(flows_per_node >= 1);
    const double nics = (double)t->nics_per_node * t->nic_bandwidth_Bps;
    double bw = fmin(t->nic_bandwidth_Bps, nics / (double)flows_per_node);
    if (t->switch_levels > 1)
        bw = fmin(bw, nics / t->oversubscription / (double)flows_per_node);
    return bw;
}

/* NIC (and software) latency once, plus each switch crossed: 1 with one
 * switch, 3 for leaf-spine-leaf, 2*levels - 1 in a tree of `levels`. */
double oc_topology_inter_latency_s(const struct oc_topology *t)
{
    return t->nic_latency_s +
           (double)(2 * t->switch_levels - 1) * t->inter_latency_s;
}
