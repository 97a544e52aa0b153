/* options.c: shared flag parsing for the `ocsim` commands (see options.h). */
#define _POSIX_C_SOURCE 200809L
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

enum {
    O_CARDS = 256, O_MODEL, O_TOPOLOGY, O_CSV, O_OUT, O_LAYOUT, O_TP, O_PP,
    O_DP, O_MB, O_GB, O_SEQ, O_SCHEDULE, O_VCHUNKS, O_RECOMPUTE, O_SP, O_NOSP,
    O_ZERO, O_NOZERO, O_OVERLAP, O_NOOVERLAP, O_ATTN, O_ORDER, O_CROSS_TP,
    O_MBS, O_HELP, O_FIDELITY, O_COLLECTIVE, O_COARSE, O_PLATFORM, O_CFG,
    O_JOBS, O_TOP, O_LOG,
};

struct flag {
    struct option opt;
    unsigned group; /* 0: every command */
};

static const struct flag flags[] = {
    {{"cards", required_argument, 0, O_CARDS}, 0},
    {{"model", required_argument, 0, O_MODEL}, 0},
    {{"topology", required_argument, 0, O_TOPOLOGY}, 0},
    {{"csv", required_argument, 0, O_CSV}, OC_OPT_CSV},
    {{"out", required_argument, 0, O_OUT}, OC_OPT_OUT},
    {{"layout", required_argument, 0, O_LAYOUT}, OC_OPT_LAYOUT},
    {{"tp", required_argument, 0, O_TP}, OC_OPT_LAYOUT},
    {{"tensor-model-parallel-size", required_argument, 0, O_TP}, OC_OPT_LAYOUT},
    {{"pp", required_argument, 0, O_PP}, OC_OPT_LAYOUT},
    {{"pipeline-model-parallel-size", required_argument, 0, O_PP}, OC_OPT_LAYOUT},
    {{"dp", required_argument, 0, O_DP}, OC_OPT_LAYOUT},
    {{"micro-batch", required_argument, 0, O_MB}, OC_OPT_LAYOUT},
    {{"micro-batch-size", required_argument, 0, O_MB}, OC_OPT_LAYOUT},
    {{"micro-batches", required_argument, 0, O_MBS}, OC_OPT_SWEEP},
    {{"global-batch", required_argument, 0, O_GB}, 0},
    {{"global-batch-size", required_argument, 0, O_GB}, 0},
    {{"seq", required_argument, 0, O_SEQ}, 0},
    {{"seq-length", required_argument, 0, O_SEQ}, 0},
    {{"schedule", required_argument, 0, O_SCHEDULE}, 0},
    {{"vchunks", required_argument, 0, O_VCHUNKS}, 0},
    {{"num-virtual-stages-per-pipeline-rank", required_argument, 0, O_VCHUNKS}, 0},
    {{"recompute", required_argument, 0, O_RECOMPUTE}, 0},
    {{"recompute-granularity", required_argument, 0, O_RECOMPUTE}, 0},
    {{"sequence-parallel", no_argument, 0, O_SP}, 0},
    {{"no-sequence-parallel", no_argument, 0, O_NOSP}, 0},
    {{"shard-optimizer", no_argument, 0, O_ZERO}, 0},
    {{"use-distributed-optimizer", no_argument, 0, O_ZERO}, 0},
    {{"no-shard-optimizer", no_argument, 0, O_NOZERO}, 0},
    {{"overlap-grad-reduce", no_argument, 0, O_OVERLAP}, 0},
    {{"no-overlap-grad-reduce", no_argument, 0, O_NOOVERLAP}, 0},
    {{"attention", required_argument, 0, O_ATTN}, 0},
    {{"rank-order", required_argument, 0, O_ORDER}, 0},
    {{"allow-cross-node-tp", no_argument, 0, O_CROSS_TP}, 0},
    {{"fidelity", required_argument, 0, O_FIDELITY}, OC_OPT_SIM},
    {{"collective", required_argument, 0, O_COLLECTIVE}, OC_OPT_SIM},
    {{"coarse", no_argument, 0, O_COARSE}, OC_OPT_SIM},
    {{"platform", required_argument, 0, O_PLATFORM}, OC_OPT_SIM},
    {{"cfg", required_argument, 0, O_CFG}, OC_OPT_SIM},
    {{"log", required_argument, 0, O_LOG}, OC_OPT_SIM},
    {{"jobs", required_argument, 0, O_JOBS}, OC_OPT_SIM},
    {{"top", required_argument, 0, O_TOP}, OC_OPT_SIM},
    {{"help", no_argument, 0, O_HELP}, 0},
};
#define NFLAGS (sizeof flags / sizeof flags[0])

void oc_opts_default(struct oc_opts *o)
{
    memset(o, 0, sizeof *o);
    o->model_name = "llama2-70b";
    o->topology_name = "h100-100g";
    oc_layout_default(&o->layout);
    o->layout.seq_length = 0; /* 0: the model's max_position_embeddings */
    static const int64_t mbs[] = {1, 2, 4};
    memcpy(o->micro_batches, mbs, sizeof mbs);
    o->n_micro_batches = 3;
    o->schedules[0] = OC_SCHED_1F1B;
    o->vchunks[0] = 1;
    o->schedules[1] = OC_SCHED_INTERLEAVED;
    o->vchunks[1] = 2;
    o->n_schedules = 2;
    o->fidelity = "fast";
    o->collective = "auto";
    o->top = 10;
}

/* A positive integer option value, no junk, no overflow. */
static int positive(const char *flag, const char *s, int64_t *out,
                    struct oc_status *st)
{
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno)
        return oc_fail(st, "--%s: '%s' is not an integer", flag, s);
    if (v <= 0)
        return oc_fail(st, "--%s must be positive (got %lld)", flag, v);
    if (v > 1000000000LL)
        return oc_fail(st, "--%s %lld is absurdly large", flag, v);
    *out = v;
    return 0;
}

/* "1,2,4" -> list of positive integers. */
static int int_list(const char *flag, const char *s, int64_t *out, int *n,
                    struct oc_status *st)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    char *save = NULL;
    for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (*n == OC_MAX_LIST)
            return oc_fail(st, "--%s: at most %d values", flag, OC_MAX_LIST);
        if (positive(flag, p, &out[*n], st) != 0)
            return -1;
        (*n)++;
    }
    if (*n == 0)
        return oc_fail(st, "--%s: empty list", flag);
    return 0;
}

/* "1f1b,interleaved:2,gpipe" -> schedules with their v. */
static int schedule_list(struct oc_opts *o, const char *s, struct oc_status *st)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    int n = 0;
    char *save = NULL;
    for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (n == OC_MAX_LIST)
            return oc_fail(st, "--schedule: at most %d values", OC_MAX_LIST);
        int64_t v = 1;
        char *colon = strchr(p, ':');
        if (colon) {
            *colon = '\0';
            if (positive("schedule", colon + 1, &v, st) != 0)
                return -1;
        }
        if (strcmp(p, "all") == 0) {
            o->schedules[n] = OC_SCHED_GPIPE, o->vchunks[n++] = 1;
            o->schedules[n] = OC_SCHED_1F1B, o->vchunks[n++] = 1;
            o->schedules[n] = OC_SCHED_INTERLEAVED, o->vchunks[n++] = 2;
            continue;
        }
        if (oc_schedule_from_name(p, &o->schedules[n]) != 0)
            return oc_fail(st, "--schedule: unknown schedule '%s' (known: gpipe, "
                               "1f1b, interleaved[:v], all)", p);
        if (o->schedules[n] == OC_SCHED_INTERLEAVED && !colon)
            v = o->layout.vchunks > 1 ? o->layout.vchunks : 2;
        if (o->schedules[n] != OC_SCHED_INTERLEAVED && colon)
            return oc_fail(st, "--schedule: only interleaved takes ':v' (got '%s:%lld')",
                           p, (long long)v);
        o->vchunks[n++] = v;
    }
    if (n == 0)
        return oc_fail(st, "--schedule: empty list");
    o->n_schedules = n;
    return 0;
}

int oc_opts_parse(struct oc_opts *o, int argc, char **argv, unsigned groups,
                  struct oc_status *st)
{
    struct option longopts[NFLAGS + 1];
    size_t n = 0;
    for (size_t i = 0; i < NFLAGS; i++)
        if (flags[i].group == 0 || (flags[i].group & groups))
            longopts[n++] = flags[i].opt;
    memset(&longopts[n], 0, sizeof longopts[n]);

    const char *layout_str = NULL;
    int64_t tp = 0, pp = 0, dp = 0, mb = 0, v = 0;
    const char *sched = NULL;
    opterr = 0;
    optind = 1;
    int c, idx = 0;
    while ((c = getopt_long(argc, argv, "+:h", longopts, &idx)) != -1) {
        const char *name = idx >= 0 && (size_t)idx < n ? longopts[idx].name : "?";
        int rc = 0;
        switch (c) {
        case O_CARDS: rc = positive("cards", optarg, &o->cards, st); break;
        case O_MODEL: o->model_name = optarg; break;
        case O_TOPOLOGY: o->topology_name = optarg; break;
        case O_CSV: o->csv_path = optarg; break;
        case O_OUT: o->out_dir = optarg; break;
        case O_LAYOUT: layout_str = optarg; break;
        case O_TP: rc = positive(name, optarg, &tp, st); break;
        case O_PP: rc = positive(name, optarg, &pp, st); break;
        case O_DP: rc = positive(name, optarg, &dp, st); break;
        case O_MB: rc = positive(name, optarg, &mb, st); break;
        case O_MBS:
            rc = int_list("micro-batches", optarg, o->micro_batches,
                          &o->n_micro_batches, st);
            break;
        case O_GB: rc = positive(name, optarg, &o->layout.global_batch, st); break;
        case O_SEQ: rc = positive(name, optarg, &o->layout.seq_length, st); break;
        case O_SCHEDULE: sched = optarg; break;
        case O_VCHUNKS: rc = positive(name, optarg, &v, st); break;
        case O_RECOMPUTE:
            if (oc_recompute_from_name(optarg, &o->layout.recompute) != 0)
                rc = oc_fail(st, "--%s: unknown mode '%s' (known: none, selective, full)",
                             name, optarg);
            break;
        case O_SP: o->layout.sequence_parallel = 1; break;
        case O_NOSP: o->layout.sequence_parallel = 0; break;
        case O_ZERO: o->layout.shard_optimizer = 1; break;
        case O_NOZERO: o->layout.shard_optimizer = 0; break;
        case O_OVERLAP: o->layout.overlap_grad_reduce = 1; break;
        case O_NOOVERLAP: o->layout.overlap_grad_reduce = 0; break;
        case O_ATTN:
            if (strcmp(optarg, "flash") == 0)
                o->layout.attention = OC_ATTN_FLASH;
            else if (strcmp(optarg, "classic") == 0)
                o->layout.attention = OC_ATTN_CLASSIC;
            else
                rc = oc_fail(st, "--attention: unknown kernel '%s' (known: flash, classic)",
                             optarg);
            break;
        case O_ORDER:
            if (oc_order_from_name(optarg, &o->layout.order) != 0)
                rc = oc_fail(st, "--rank-order: unknown order '%s' (known: tp-dp-pp "
                                 "(Megatron's default), tp-pp-dp)", optarg);
            break;
        case O_CROSS_TP: o->layout.allow_cross_node_tp = 1; break;
        case O_FIDELITY:
            if (strcmp(optarg, "fast") && strcmp(optarg, "full"))
                rc = oc_fail(st, "--fidelity: unknown mode '%s' (known: fast, full)", optarg);
            o->fidelity = optarg;
            break;
        case O_COLLECTIVE:
            if (strcmp(optarg, "auto") && strcmp(optarg, "ring") &&
                strcmp(optarg, "tree") && strcmp(optarg, "hier"))
                rc = oc_fail(st, "--collective: unknown algorithm '%s' (known: auto, "
                                 "ring, tree, hier)", optarg);
            o->collective = optarg;
            break;
        case O_COARSE: o->coarse = 1; break;
        case O_LOG: o->log = optarg; break;
        case O_PLATFORM: o->platform_file = optarg; break;
        case O_CFG:
            if (o->n_cfg == OC_MAX_LIST)
                rc = oc_fail(st, "--cfg: at most %d settings", OC_MAX_LIST);
            else
                o->cfg[o->n_cfg++] = optarg;
            break;
        case O_JOBS: rc = positive(name, optarg, &o->jobs, st); break;
        case O_TOP: rc = positive(name, optarg, &o->top, st); break;
        case O_HELP:
        case 'h': o->help = 1; break;
        case ':':
            rc = oc_fail(st, "%s needs a value", argv[optind - 1]);
            break;
        default:
            if (optopt && optopt < 256)
                rc = oc_fail(st, "unknown option '-%c' (see --help)", optopt);
            else
                rc = oc_fail(st, "unknown or misplaced option '%s' for '%s' (see --help)",
                             argv[optind - 1], argv[0]);
            break;
        }
        if (rc != 0)
            return -1;
        idx = -1;
    }
    if (optind < argc)
        return oc_fail(st, "unexpected argument '%s' (see --help)", argv[optind]);
    if (o->help)
        return 0;

    if (v)
        o->layout.vchunks = v;
    if (sched && schedule_list(o, sched, st) != 0)
        return -1;
    if (sched && (groups & OC_OPT_LAYOUT)) {
        if (o->n_schedules != 1)
            return oc_fail(st, "--schedule takes one schedule for a single layout");
        o->layout.schedule = o->schedules[0];
        if (!v)
            o->layout.vchunks = o->vchunks[0];
    } else if (v && !sched && v > 1) {
        o->layout.schedule = OC_SCHED_INTERLEAVED;
    }
    if (layout_str) {
        if (oc_layout_parse(&o->layout, layout_str, st) != 0)
            return -1;
        o->layout_given = 1;
    }
    if (tp) o->layout.tp = tp, o->layout_given = 1;
    if (pp) o->layout.pp = pp, o->layout_given = 1;
    if (dp) o->layout.dp = dp, o->layout_given = 1;
    if (mb) o->layout.micro_batch = mb;
    if (o->cards == 0)
        return oc_fail(st, "--cards N is required (the number of GPUs)");
    if ((groups & OC_OPT_LAYOUT) && !o->layout_given)
        return oc_fail(st, "a layout is required: --layout tp8-pp8-dp1 or --tp/--pp/--dp");
    return 0;
}

int oc_opts_load(struct oc_opts *o, struct oc_status *st)
{
    if (oc_model_load(o->model_name, &o->model, st) != 0)
        return -1;
    if (oc_topology_load(o->topology_name, &o->topo, st) != 0)
        return -1;
    if (o->layout.seq_length == 0)
        o->layout.seq_length = o->model.max_position_embeddings;
    return 0;
}

void oc_opts_print_help(FILE *f, unsigned groups)
{
    fputs("Common options:\n"
          "  --cards N               number of GPUs (required)\n"
          "  --model M               shipped name or path to a Hugging Face config.json\n"
          "                          (default llama2-70b)\n"
          "  --topology T            shipped name or path to a topology .json\n"
          "                          (default h100-100g: 8 x H100 + NVLink, 100 Gb/s per node)\n"
          "  --global-batch B        sequences per step (--global-batch-size; default 512)\n"
          "  --seq S                 sequence length (--seq-length; default the model's\n"
          "                          max_position_embeddings)\n"
          "  --recompute MODE        none | selective | full (--recompute-granularity;\n"
          "                          default selective)\n"
          "  --[no-]sequence-parallel  (default on)\n"
          "  --[no-]shard-optimizer  ZeRO-1 / --use-distributed-optimizer (default on)\n"
          "  --[no-]overlap-grad-reduce  DP reduction in buckets under the backward\n"
          "                          (default on)\n"
          "  --attention KERNEL      flash | classic (default flash)\n"
          "  --rank-order ORDER      tp-dp-pp (Megatron's default: TP fastest, PP\n"
          "                          outermost) | tp-pp-dp (PP across neighbouring\n"
          "                          nodes, DP outermost)\n"
          "  --allow-cross-node-tp   let a TP group span nodes\n", f);
    if (groups & OC_OPT_LAYOUT)
        fputs("Layout (one of):\n"
              "  --layout STR            tp<N>-pp<N>-dp<N>[-mb<N>][-v<N>][-gpipe|-1f1b|\n"
              "                          -interleaved][-sp|-nosp][-rnone|-rsel|-rfull]\n"
              "                          [-zero1|-nozero][-flash|-classic]\n"
              "                          [-order=tp-dp-pp|-order=tp-pp-dp]\n"
              "  --tp N --pp N --dp N    (--tensor-model-parallel-size,\n"
              "                          --pipeline-model-parallel-size)\n"
              "  --micro-batch N         sequences per micro-batch (--micro-batch-size;\n"
              "                          default 1)\n"
              "  --schedule S            gpipe | 1f1b | interleaved (default 1f1b)\n"
              "  --vchunks V             model chunks per stage, interleaved\n"
              "                          (--num-virtual-stages-per-pipeline-rank)\n", f);
    if (groups & OC_OPT_SWEEP)
        fputs("Candidates:\n"
              "  --micro-batches LIST    micro-batch sizes to try (default 1,2,4)\n"
              "  --schedule LIST         schedules to try: gpipe, 1f1b, interleaved[:v],\n"
              "                          all (default 1f1b,interleaved:2)\n", f);
    if (groups & OC_OPT_SIM)
        fputs("Simulation:\n"
              "  --fidelity MODE         fast: one rank per TP group, TP collectives in\n"
              "                          closed form, one op per model chunk (default);\n"
              "                          full: every rank, layer and message\n"
              "  --collective ALGO       auto (per collective and size, as NCCL) | ring |\n"
              "                          tree | hier, for every collective (ZeRO's\n"
              "                          reduce-scatter and all-gather too) where it\n"
              "                          applies, else ring\n"
              "  --coarse                merge the steps of each ring into one message\n"
              "  --platform FILE         a SimGrid platform XML with hosts gpu0..gpuN-1\n"
              "                          instead of the one generated from --topology\n"
              "  --cfg KEY:VALUE         passed to SimGrid (repeatable), e.g.\n"
              "                          --cfg network/model:LV08\n"
              "  --log SPEC              SimGrid log settings, e.g. --log\n"
              "                          ocsim_replay.thres:debug (one line per op)\n"
              "  --jobs N                simulations at once (default: the cores)\n"
              "  --top N                 rows of the ranked table (default 10)\n", f);
    if (groups & OC_OPT_CSV)
        fputs("  --csv FILE              also write the table as CSV\n", f);
    if (groups & OC_OPT_OUT)
        fputs("  --out DIR               output folder\n", f);
}
