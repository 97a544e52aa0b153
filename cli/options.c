/* options.c: the one flag table of `ocsim` and `ocsim-exec` and its parser
 * (see options.h); the help texts are options_help.c.
 *
 * The value parsers (numbers, sizes, percentages, lists, the schedule and
 * card lists) are options_values.c: a reader of the table never needs
 * them. */
#define _POSIX_C_SOURCE 200809L
#include "options.h"

#include "compress.h"
#include "mbsplit.h"
#include "options_values.h"

#include "reserve.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    O_CARDS = 256, O_MODEL, O_TOPOLOGY, O_CSV, O_OUT, O_LAYOUT, O_TP, O_PP,
    O_DP, O_MB, O_GB, O_SEQ, O_SCHEDULE, O_VCHUNKS, O_RECOMPUTE, O_SP, O_NOSP,
    O_ZERO, O_NOZERO, O_OVERLAP, O_NOOVERLAP, O_TPOVL, O_NOTPOVL, O_PGOVL, O_NOPGOVL,
    O_UNEVENV, O_NOUNEVENV, O_ATTN, O_ORDER, O_CROSS_TP,
    O_MBS, O_HELP, O_FIDELITY, O_COLLECTIVE, O_COARSE, O_NOCOARSE, O_NOSTEADY, O_PLATFORM, O_CFG,
    O_JOBS, O_TOP, O_LOG, O_BACKEND, O_PRECISION, O_STEPS, O_LR, O_SEED,
    O_TIMEOUT, O_CALIBRATE, O_NOWEIGHTS, O_NOMPI, O_NETBW, O_RPN, O_MAXMSG,
    O_BF16, O_FP16, O_FP32, O_SAVE, O_SAVE_EVERY, O_SAVE_KEEP, O_LOAD,
    O_RESUME, O_BATCH_TOL, O_EVEN_STAGES, O_RESERVE, O_FRAGMENTATION, O_ROBUSTNESS, O_NOPRUNE, O_KEEPDOM, O_REJCSV, O_ALLKNOBS, O_COREKNOBS, O_ZERO_STAGE, O_RECOMPUTE_LAYERS, O_CP,
    O_GRADFP32, O_NOGRADFP32, O_VARIABILITY, O_VAR_TOP, O_COMPRESSION, O_MBSPLIT,
    O_END /* the number of codes above, less O_CARDS */
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
    {{"tp", required_argument, 0, O_TP}, OC_OPT_LAYOUT | OC_OPT_FIX},
    {{"tensor-model-parallel-size", required_argument, 0, O_TP}, OC_OPT_LAYOUT | OC_OPT_FIX},
    {{"pp", required_argument, 0, O_PP}, OC_OPT_LAYOUT | OC_OPT_FIX},
    {{"pipeline-model-parallel-size", required_argument, 0, O_PP}, OC_OPT_LAYOUT | OC_OPT_FIX},
    {{"dp", required_argument, 0, O_DP}, OC_OPT_LAYOUT | OC_OPT_FIX},
    {{"micro-batch", required_argument, 0, O_MB}, OC_OPT_LAYOUT},
    {{"micro-batch-size", required_argument, 0, O_MB}, OC_OPT_LAYOUT},
    {{"micro-batches", required_argument, 0, O_MBS}, OC_OPT_SWEEP},
    {{"resume", no_argument, 0, O_RESUME}, OC_OPT_SWEEP},
    {{"batch-tolerance", required_argument, 0, O_BATCH_TOL}, OC_OPT_SWEEP},
    {{"even-stages", no_argument, 0, O_EVEN_STAGES}, OC_OPT_SWEEP},
    {{"compression", required_argument, 0, O_COMPRESSION}, OC_OPT_SWEEP},
    {{"no-prune", no_argument, 0, O_NOPRUNE}, OC_OPT_SWEEP},
    {{"keep-dominated", no_argument, 0, O_KEEPDOM}, OC_OPT_SWEEP},
    {{"rejected-csv", no_argument, 0, O_REJCSV}, OC_OPT_SWEEP},
    {{"all-knobs", no_argument, 0, O_ALLKNOBS}, OC_OPT_SWEEP},
    {{"core-knobs", no_argument, 0, O_COREKNOBS}, OC_OPT_SWEEP},
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
    {{"zero-stage", required_argument, 0, O_ZERO_STAGE}, 0},
    {{"recompute-num-layers", required_argument, 0, O_RECOMPUTE_LAYERS}, 0},
    {{"context-parallel-size", required_argument, 0, O_CP}, 0},
    {{"cp", required_argument, 0, O_CP}, 0},
    {{"overlap-grad-reduce", no_argument, 0, O_OVERLAP}, 0},
    {{"no-overlap-grad-reduce", no_argument, 0, O_NOOVERLAP}, 0},
    {{"tp-comm-overlap", no_argument, 0, O_TPOVL}, 0},
    {{"no-tp-comm-overlap", no_argument, 0, O_NOTPOVL}, 0},
    {{"overlap-param-gather", no_argument, 0, O_PGOVL}, 0},
    {{"no-overlap-param-gather", no_argument, 0, O_NOPGOVL}, 0},
    {{"uneven-virtual-chunks", no_argument, 0, O_UNEVENV}, 0},
    {{"dp-micro-batch-split", required_argument, 0, O_MBSPLIT}, 0},
    {{"no-uneven-virtual-chunks", no_argument, 0, O_NOUNEVENV}, 0},
    {{"accumulate-allreduce-grads-in-fp32", no_argument, 0, O_GRADFP32}, 0},
    {{"grad-reduce-in-fp32", no_argument, 0, O_GRADFP32}, 0},
    {{"no-grad-reduce-in-fp32", no_argument, 0, O_NOGRADFP32}, 0},
    {{"attention", required_argument, 0, O_ATTN}, 0},
    {{"rank-order", required_argument, 0, O_ORDER}, 0},
    {{"allow-cross-node-tp", no_argument, 0, O_CROSS_TP}, 0},
    {{"bf16", no_argument, 0, O_BF16}, 0},
    {{"fp16", no_argument, 0, O_FP16}, 0},
    {{"fp32", no_argument, 0, O_FP32}, 0},
    {{"fidelity", required_argument, 0, O_FIDELITY}, OC_OPT_SIM},
    {{"collective", required_argument, 0, O_COLLECTIVE}, OC_OPT_SIM},
    {{"coarse", no_argument, 0, O_COARSE}, OC_OPT_SIM},
    {{"no-coarse", no_argument, 0, O_NOCOARSE}, OC_OPT_SIM},
    {{"no-steady-fold", no_argument, 0, O_NOSTEADY}, OC_OPT_SIM},
    {{"platform", required_argument, 0, O_PLATFORM}, OC_OPT_SIM},
    {{"cfg", required_argument, 0, O_CFG}, OC_OPT_SIM},
    {{"log", required_argument, 0, O_LOG}, OC_OPT_SIM},
    {{"jobs", required_argument, 0, O_JOBS}, OC_OPT_SIM},
    {{"top", required_argument, 0, O_TOP}, OC_OPT_SIM},
    {{"backend", required_argument, 0, O_BACKEND}, OC_OPT_EXEC},
    {{"precision", required_argument, 0, O_PRECISION}, OC_OPT_EXEC},
    {{"steps", required_argument, 0, O_STEPS}, OC_OPT_EXEC | OC_OPT_VAR},
    {{"variability", required_argument, 0, O_VARIABILITY}, OC_OPT_VAR},
    {{"variability-top", required_argument, 0, O_VAR_TOP}, OC_OPT_VAR_SWEEP},
    {{"lr", required_argument, 0, O_LR}, OC_OPT_EXEC},
    {{"seed", required_argument, 0, O_SEED}, OC_OPT_EXEC | OC_OPT_PLAN | OC_OPT_VAR},
    {{"reserve", required_argument, 0, O_RESERVE}, OC_OPT_RESERVE},
    {{"fragmentation", required_argument, 0, O_FRAGMENTATION}, OC_OPT_RESERVE},
    {{"robustness", required_argument, 0, O_ROBUSTNESS}, OC_OPT_PLAN},
    {{"timeout", required_argument, 0, O_TIMEOUT}, OC_OPT_EXEC},
    {{"calibrate", no_argument, 0, O_CALIBRATE}, OC_OPT_EXEC},
    {{"netbw", no_argument, 0, O_NETBW}, OC_OPT_EXEC},
    {{"ranks-per-node", required_argument, 0, O_RPN}, OC_OPT_EXEC},
    {{"max-msg", required_argument, 0, O_MAXMSG}, OC_OPT_EXEC},
    {{"no-weights", no_argument, 0, O_NOWEIGHTS}, OC_OPT_EXEC},
    {{"no-mpi", no_argument, 0, O_NOMPI}, OC_OPT_EXEC},
    {{"save", required_argument, 0, O_SAVE}, OC_OPT_EXEC},
    {{"save-every", required_argument, 0, O_SAVE_EVERY}, OC_OPT_EXEC},
    {{"save-keep", required_argument, 0, O_SAVE_KEEP}, OC_OPT_EXEC},
    {{"load", required_argument, 0, O_LOAD}, OC_OPT_EXEC},
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
    o->exec.steps = 5;
    o->exec.lr = 1e-3;
    o->exec.seed = 1234;
    o->exec.timeout_s = 0; /* auto (exec/timeout.h) */
    o->exec.weights = 1;
    o->exec.max_msg_bytes = 64 << 20;
    o->reserve.mode = OC_RESERVE_AUTO;
    o->reserve.fragmentation = OC_RESERVE_FRAGMENTATION_DEFAULT;
    o->robustness = OC_ROBUSTNESS_DEFAULT;
    o->var_top = OC_VAR_TOP_DEFAULT;
}

/* A flag as the user gave it (its long name and value, NULL for a flag
 * without one), for the message when another says otherwise. */
struct given {
    int code;
    const char *name, *val;
};

/* Layout flags whose effect depends on others (--schedule with --vchunks,
 * --layout against --tp): held until every flag was read; and the flag
 * that set each thing, indexed by its slot (flag_slot). */
struct pending {
    const char *layout_str, *sched;
    int64_t tp, pp, dp, mb, v;
    int recompute_layers; /* --recompute-num-layers given */
    struct given given[O_END - O_CARDS];
};

/* OC_OPT_EXEC's flags: 1 when c is not one of them. */
static int exec_flag(struct oc_exec_flags *x, int c, const char *val, struct oc_status *st)
{
    int64_t iv = 0;
    switch (c) {
    case O_BACKEND: x->backend = val; return 0;
    case O_PRECISION: x->precision = val; return 0;
    case O_STEPS:
        if (oc_optv_at_least("steps", val, 1, &iv, st) != 0)
            return -1;
        if (iv > OC_EXEC_MAX_STEPS)
            return oc_fail(st, "--steps %lld: at most %lld steps in one run (resume "
                               "from a checkpoint with --load for more)",
                           (long long)iv, (long long)OC_EXEC_MAX_STEPS);
        x->steps = iv;
        x->steps_given = 1;
        return 0;
    case O_LR: return oc_optv_positive_real("lr", val, &x->lr, st);
    case O_SEED:
        if (oc_optv_at_least("seed", val, 0, &iv, st) != 0)
            return -1;
        x->seed = (uint64_t)iv;
        x->seed_given = 1;
        return 0;
    case O_TIMEOUT: return oc_optv_timeout_value(val, &x->timeout_s, st);
    case O_CALIBRATE: x->calibrate = 1; return 0;
    case O_NETBW: x->netbw = 1; return 0;
    case O_RPN: return oc_optv_positive("ranks-per-node", val, &x->ranks_per_node, st);
    case O_MAXMSG: return oc_optv_byte_size("max-msg", val, &x->max_msg_bytes, st);
    case O_NOWEIGHTS: x->weights = 0; return 0;
    case O_NOMPI: x->no_mpi = 1; return 0;
    case O_SAVE: x->save_dir = val; return 0;
    case O_SAVE_EVERY: return oc_optv_positive("save-every", val, &x->save_every, st);
    case O_SAVE_KEEP: return oc_optv_positive("save-keep", val, &x->save_keep, st);
    case O_LOAD: x->load_dir = val; return 0;
    }
    return 1;
}

/* The value-checked flags with a message of their own. */
static int checked_flag(struct oc_opts *o, int c, const char *name, const char *val,
                        struct oc_status *st)
{
    char q[OC_QUOTE_MAX];
    switch (c) {
    case O_RECOMPUTE:
        if (oc_recompute_from_name(val, &o->layout.recompute) != 0)
            return oc_fail(st, "--%s: unknown mode '%s' (known: none, selective, full)",
                           name, oc_quote(q, sizeof q, val));
        return 0;
    case O_ATTN:
        if (strcmp(val, "flash") == 0)
            o->layout.attention = OC_ATTN_FLASH;
        else if (strcmp(val, "classic") == 0)
            o->layout.attention = OC_ATTN_CLASSIC;
        else
            return oc_fail(st, "--attention: unknown kernel '%s' (known: flash, classic)",
                           oc_quote(q, sizeof q, val));
        return 0;
    case O_ORDER:
        if (oc_order_from_name(val, &o->layout.order) != 0)
            return oc_fail(st, "--rank-order: unknown order '%s' (known: tp-dp-pp "
                               "(Megatron's default), tp-pp-dp)", oc_quote(q, sizeof q, val));
        return 0;
    case O_FIDELITY:
        o->fidelity = val;
        if (strcmp(val, "fast") && strcmp(val, "full") && strcmp(val, "sym"))
            return oc_fail(st, "--fidelity: unknown mode '%s' (known: fast, full, sym)",
                           oc_quote(q, sizeof q, val));
        return 0;
    case O_COLLECTIVE:
        /* checked against the simulator's table of algorithms (sim/coll.h)
         * by the command that runs it (tools/sim_opts.c) */
        o->collective = val;
        return 0;
    case O_RESERVE:
        if (strcmp(val, "auto") == 0) {
            o->reserve.mode = OC_RESERVE_AUTO;
            return 0;
        }
        o->reserve.mode = OC_RESERVE_FIXED;
        if (oc_reserve_parse_bytes(val, &o->reserve.bytes, st) != 0) {
            char m[OC_MSG_MAX];
            snprintf(m, sizeof m, "%s", st->msg);
            return oc_fail(st, "--reserve: %s, or 'auto'", m);
        }
        return 0;
    case O_FRAGMENTATION: {
        errno = 0;
        char *end;
        const double v = strtod(val, &end);
        if (end == val || *end || errno || !(v >= 0 && v < 1))
            return oc_fail(st, "--fragmentation: '%s' is not a fraction in [0, 1) of the "
                               "peak (0.10 is 10 %%)", oc_quote(q, sizeof q, val));
        o->reserve.fragmentation = v;
        return 0;
    }
    case O_ROBUSTNESS: {
        int64_t r;
        if (oc_optv_at_least("robustness", val, 0, &r, st) != 0)
            return -1;
        if (r > OC_ROBUSTNESS_MAX)
            return oc_fail(st, "--robustness %lld: at most %lld perturbed cost models",
                           (long long)r, (long long)OC_ROBUSTNESS_MAX);
        o->robustness = r;
        return 0;
    }
    case O_CFG:
        if (o->n_cfg == OC_MAX_LIST)
            return oc_fail(st, "--cfg: at most %d settings", OC_MAX_LIST);
        o->cfg[o->n_cfg++] = val;
        return 0;
    }
    return 1;
}

/* One flag of getopt_long (c, its long name, its value) into o or p. */
/* --zero-stage N: 0 to 3 (Rajbhandari et al. 2020; DeepSpeed's
 * zero_optimization.stage). */
static int nonneg_zero_stage(const char *val, int64_t *z, struct oc_status *st)
{
    char q[OC_QUOTE_MAX];
    if (!val || strlen(val) != 1 || val[0] < '0' || val[0] > '3')
        return oc_fail(st, "--zero-stage: '%s' is not one of 0, 1, 2, 3",
                       oc_quote(q, sizeof q, val ? val : ""));
    *z = val[0] - '0';
    return 0;
}

/* --dp-micro-batch-split: even, speed, or a list (core/mbsplit.h), its
 * form checked here; the list's rules and the speed split need the
 * model, the topology and the batch (oc_opts_load). */
static int mbsplit_flag(struct oc_opts *o, const char *val, struct oc_status *st)
{
    if (strcmp(val, "even") != 0 && strcmp(val, "speed") != 0) {
        struct oc_layout l = o->layout;
        if (oc_mbs_parse(&l, val, st) != 0)
            return oc_fail(st, "--dp-micro-batch-split: %s (or even, speed)", st->msg);
    }
    o->mbsplit = val;
    return 0;
}

static int one_flag(struct oc_opts *o, struct pending *p, int c, const char *name,
                    const char *val, struct oc_status *st)
{
    /* An empty file or folder name (`--csv ''` named no file: "ocsim
     * layouts: : cannot write"); the other flags say what they expected */
    if ((c == O_CSV || c == O_OUT) && val && !*val)
        return oc_fail(st, "--%s: an empty value (expected a path)", name);
    int rc = exec_flag(&o->exec, c, val, st);
    if (rc != 1)
        return rc;
    if ((rc = checked_flag(o, c, name, val, st)) != 1)
        return rc;
    switch (c) {
    case O_CARDS:
        o->cards_given = 1;
        return oc_optv_cards_value(o, val, st);
    case O_MODEL: o->model_name = val; return 0;
    case O_TOPOLOGY: o->topology_name = val; return 0;
    case O_CSV: o->csv_path = val; return 0;
    case O_OUT: o->out_dir = val; return 0;
    case O_LAYOUT: p->layout_str = val; return 0;
    case O_TP: return oc_optv_positive(name, val, &p->tp, st);
    case O_PP: return oc_optv_positive(name, val, &p->pp, st);
    case O_DP: return oc_optv_positive(name, val, &p->dp, st);
    case O_MB: return oc_optv_positive(name, val, &p->mb, st);
    case O_MBS:
        return oc_optv_int_list("micro-batches", val, o->micro_batches, &o->n_micro_batches, st);
    case O_GB: return oc_optv_positive(name, val, &o->layout.global_batch, st);
    case O_SEQ: return oc_optv_positive(name, val, &o->layout.seq_length, st);
    case O_SCHEDULE: p->sched = val; return 0;
    case O_VCHUNKS: return oc_optv_positive(name, val, &p->v, st);
    case O_SP: o->layout.sequence_parallel = 1; return 0;
    case O_NOSP: o->layout.sequence_parallel = 0; return 0;
    case O_ZERO: o->layout.zero = 1; return 0;
    case O_ZERO_STAGE: {
        int64_t z = 0;
        if (nonneg_zero_stage(val, &z, st) != 0)
            return -1;
        o->layout.zero = (int)z;
        return 0;
    }
    case O_RECOMPUTE_LAYERS:
        if (oc_optv_positive(name, val, &o->layout.recompute_layers, st) != 0)
            return -1;
        p->recompute_layers = 1;
        return 0;
    case O_CP: return oc_optv_positive(name, val, &o->layout.cp, st);
    case O_NOZERO: o->layout.zero = 0; return 0;
    case O_OVERLAP: o->layout.overlap_grad_reduce = 1; return 0;
    case O_NOOVERLAP: o->layout.overlap_grad_reduce = 0; return 0;
    case O_TPOVL: o->layout.tp_comm_overlap = 1; return 0;
    case O_NOTPOVL: o->layout.tp_comm_overlap = 0; return 0;
    case O_PGOVL: o->layout.overlap_param_gather = 1; return 0;
    case O_NOPGOVL: o->layout.overlap_param_gather = 0; return 0;
    case O_UNEVENV: o->layout.uneven_chunks = 1; return 0;
    case O_NOUNEVENV: o->layout.uneven_chunks = 0; return 0;
    case O_MBSPLIT: return mbsplit_flag(o, val, st);
    case O_GRADFP32: o->layout.grad_fp32 = 1; return 0;
    case O_NOGRADFP32: o->layout.grad_fp32 = -1; return 0;
    case O_CROSS_TP: o->layout.allow_cross_node_tp = 1; return 0;
    case O_BF16: o->layout.precision = OC_PREC_BF16; return 0;
    case O_FP16: o->layout.precision = OC_PREC_FP16; return 0;
    case O_FP32: o->layout.precision = OC_PREC_FP32; return 0;
    case O_COARSE: o->coarse = 1; return 0;
    case O_NOCOARSE: o->coarse = 0; return 0;
    case O_NOSTEADY: o->no_steady = 1; return 0;
    case O_RESUME: o->resume = 1; return 0;
    case O_BATCH_TOL: return oc_optv_tolerance_value(val, &o->batch_tolerance, st);
    case O_EVEN_STAGES: o->even_stages = 1; return 0;
    case O_COMPRESSION: /* core/compress.h */
        return oc_gc_parse_list(val, o->compress, OC_GC_MAX_LIST, &o->n_compress, st);
    case O_NOPRUNE: o->no_prune = 1; return 0;
    case O_KEEPDOM: o->keep_dominated = 1; return 0;
    case O_REJCSV: o->rejected_csv = 1; return 0;
    case O_ALLKNOBS: o->core_knobs = 0; return 0;
    case O_COREKNOBS: o->core_knobs = 1; return 0;
    case O_LOG: o->log = val; return 0;
    case O_VARIABILITY: o->variability = val; return 0;
    case O_VAR_TOP: {
        int64_t k;
        if (oc_optv_at_least("variability-top", val, 1, &k, st) != 0)
            return -1;
        if (k > OC_VAR_TOP_MAX)
            return oc_fail(st, "--variability-top %lld: at most %d layouts", (long long)k,
                           OC_VAR_TOP_MAX);
        o->var_top = k;
        o->var_top_given = 1;
        return 0;
    }
    case O_PLATFORM: o->platform_file = val; return 0;
    case O_JOBS: return oc_optv_positive(name, val, &o->jobs, st);
    case O_TOP: return oc_optv_positive(name, val, &o->top, st);
    case O_HELP:
    case 'h': o->help = 1; return 0;
    }
    OC_ASSERT(!"a flag of the table without a case");
    return -1;
}

/* The slot of a flag code: flags that set the same thing share one (the
 * aliases share a code already; --sequence-parallel and
 * --no-sequence-parallel, --bf16, --fp16 and --fp32 ... share a slot). */
static int flag_slot(int c)
{
    switch (c) {
    case O_NOSP: return O_SP;
    case O_NOZERO:
    case O_ZERO_STAGE: return O_ZERO;
    case O_NOOVERLAP: return O_OVERLAP;
    case O_NOTPOVL: return O_TPOVL;
    case O_NOPGOVL: return O_PGOVL;
    case O_NOUNEVENV: return O_UNEVENV;
    case O_NOGRADFP32: return O_GRADFP32;
    case O_FP16:
    case O_FP32: return O_BF16;
    }
    return c;
}

/* "--tp 4", "--sequence-parallel" into buf. */
static const char *flag_text(const struct given *g, char *buf, size_t n)
{
    char q[OC_QUOTE_MAX];
    if (g->val)
        snprintf(buf, n, "--%s %s", g->name, oc_quote(q, sizeof q, g->val));
    else
        snprintf(buf, n, "--%s", g->name);
    return buf;
}

/* A flag given again must say the same: "--tp 2 ... --tp 4" and
 * "--sp ... --no-sequence-parallel" are refused, naming both. --cfg is a
 * list by repetition. */
static int once(struct pending *p, int c, const char *name, const char *val,
                struct oc_status *st)
{
    if (c == O_CFG || c == O_HELP || c == 'h')
        return 0;
    OC_ASSERT(c >= O_CARDS && c < O_END);
    struct given *g = &p->given[flag_slot(c) - O_CARDS];
    const struct given now = {c, name, val};
    if (g->name && (val ? strcmp(g->val, val) != 0 : g->code != c)) {
        char a[OC_QUOTE_MAX + 64], b[OC_QUOTE_MAX + 64];
        return oc_fail(st, "%s and %s disagree (give one)", flag_text(g, a, sizeof a),
                       flag_text(&now, b, sizeof b));
    }
    *g = now;
    return 0;
}

/* The flag that set a knob a layout string also names, or NULL. v comes
 * from --vchunks or from --schedule interleaved:N; the schedule from
 * --schedule, or from --vchunks N > 1 (which means interleaved, as "v2" in
 * a layout string does). */
static const struct given *knob_flag(const struct pending *p, unsigned bit)
{
    static const struct {
        unsigned bit;
        int code;
    } knobs[] = {
        {OC_LAYOUT_NAMED_TP, O_TP},           {OC_LAYOUT_NAMED_PP, O_PP},
        {OC_LAYOUT_NAMED_DP, O_DP},           {OC_LAYOUT_NAMED_MB, O_MB},
        {OC_LAYOUT_NAMED_SP, O_SP},           {OC_LAYOUT_NAMED_RECOMPUTE, O_RECOMPUTE},
        {OC_LAYOUT_NAMED_ZERO, O_ZERO},       {OC_LAYOUT_NAMED_ATTENTION, O_ATTN},
        {OC_LAYOUT_NAMED_ORDER, O_ORDER},     {OC_LAYOUT_NAMED_PRECISION, O_BF16},
        {OC_LAYOUT_NAMED_OVERLAP, O_OVERLAP}, {OC_LAYOUT_NAMED_CP, O_CP},
        {OC_LAYOUT_NAMED_TPOVL, O_TPOVL},     {OC_LAYOUT_NAMED_PGOVL, O_PGOVL},
        {OC_LAYOUT_NAMED_UNEVENV, O_UNEVENV},
    };
    const struct given *v = &p->given[O_VCHUNKS - O_CARDS];
    const struct given *sched = &p->given[O_SCHEDULE - O_CARDS];
    if (bit == OC_LAYOUT_NAMED_V)
        return v->name ? v : sched->name && strchr(sched->val, ':') ? sched : NULL;
    if (bit == OC_LAYOUT_NAMED_SCHEDULE)
        return sched->name ? sched : v->name && p->v > 1 ? v : NULL;
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        if (knobs[i].bit == bit) {
            const struct given *g = &p->given[knobs[i].code - O_CARDS];
            return g->name ? g : NULL;
        }
    /* first/last and coll: only a layout string names them (--collective
     * is the simulation's algorithm where the layout says auto) */
    return NULL;
}

/* The knob of one OC_LAYOUT_NAMED_* bit, as a number to compare. */
static int64_t knob_value(const struct oc_layout *l, unsigned bit)
{
    switch (bit) {
    case OC_LAYOUT_NAMED_TP: return l->tp;
    case OC_LAYOUT_NAMED_PP: return l->pp;
    case OC_LAYOUT_NAMED_DP: return l->dp;
    case OC_LAYOUT_NAMED_MB: return l->micro_batch;
    case OC_LAYOUT_NAMED_V: return l->vchunks;
    case OC_LAYOUT_NAMED_SCHEDULE: return l->schedule;
    case OC_LAYOUT_NAMED_SP: return l->sequence_parallel;
    case OC_LAYOUT_NAMED_RECOMPUTE: return l->recompute;
    case OC_LAYOUT_NAMED_ZERO: return l->zero;
    case OC_LAYOUT_NAMED_ATTENTION: return l->attention;
    case OC_LAYOUT_NAMED_ORDER: return l->order;
    case OC_LAYOUT_NAMED_PRECISION: return l->precision;
    case OC_LAYOUT_NAMED_CP: return l->cp;
    case OC_LAYOUT_NAMED_OVERLAP: return l->overlap_grad_reduce;
    case OC_LAYOUT_NAMED_TPOVL: return l->tp_comm_overlap;
    case OC_LAYOUT_NAMED_PGOVL: return l->overlap_param_gather;
    case OC_LAYOUT_NAMED_UNEVENV: return l->uneven_chunks;
    case OC_LAYOUT_NAMED_FIRST: return l->first_stage_layers;
    case OC_LAYOUT_NAMED_LAST: return l->last_stage_layers;
    case OC_LAYOUT_NAMED_COLL: return l->coll;
    }
    OC_ASSERT(!"one OC_LAYOUT_NAMED_* bit");
    return 0;
}

/* --layout S onto o->layout (which holds the flags' knobs): a knob that S
 * names and a flag sets must agree ("--layout tp8-pp8-dp1 --tp 4" is
 * refused, naming both). */
static int apply_layout_string(struct oc_opts *o, const struct pending *p,
                               struct oc_status *st)
{
    struct oc_layout l = o->layout;
    unsigned named = 0;
    if (oc_layout_parse_named(&l, p->layout_str, &named, st) != 0)
        return -1;
    const struct given *ms = &p->given[O_MBSPLIT - O_CARDS];
    if ((named & OC_LAYOUT_NAMED_MBS) && ms->name) {
        char f[OC_QUOTE_MAX + 64], q[OC_QUOTE_MAX];
        return oc_fail(st, "%s and --layout %s both give the micro-batch split (give one)",
                       flag_text(ms, f, sizeof f), oc_quote(q, sizeof q, p->layout_str));
    }
    for (int i = 0; i < OC_LAYOUT_NAMED_BITS; i++) {
        const unsigned bit = 1u << i;
        const struct given *g = (named & bit) ? knob_flag(p, bit) : NULL;
        if (g && knob_value(&l, bit) != knob_value(&o->layout, bit)) {
            char f[OC_QUOTE_MAX + 64], q[OC_QUOTE_MAX];
            return oc_fail(st, "%s and --layout %s disagree on %s (give one)",
                           flag_text(g, f, sizeof f), oc_quote(q, sizeof q, p->layout_str),
                           oc_layout_named_what(bit));
        }
    }
    o->layout = l;
    return 0;
}

/* o->fixed: the knobs a flag set (a sweep searches the others). */
static void set_fixed(struct oc_opts *o, const struct pending *p)
{
    o->fixed = 0;
    for (int i = 0; i < OC_LAYOUT_NAMED_BITS; i++)
        if (knob_flag(p, 1u << i))
            o->fixed |= 1u << i;
    if (p->given[O_MBS - O_CARDS].name)
        o->fixed |= OC_LAYOUT_NAMED_MB;
    if (p->given[O_MBSPLIT - O_CARDS].name)
        o->fixed |= OC_LAYOUT_NAMED_MBS;
    /* --collective: the algorithm of every layout (the layout's coll
     * stays auto, which runs it) */
    if (p->given[O_COLLECTIVE - O_CARDS].name)
        o->fixed |= OC_LAYOUT_NAMED_COLL;
    if (p->recompute_layers) {
        o->fixed |= OC_LAYOUT_NAMED_RECOMPUTE;
        if (!p->given[O_RECOMPUTE - O_CARDS].name)
            o->layout.recompute = OC_RECOMPUTE_FULL;
    }
}

/* The held layout flags, once every flag was read. */
static int apply_pending(struct oc_opts *o, const struct pending *p, unsigned groups,
                         struct oc_status *st)
{
    if (p->v)
        o->layout.vchunks = p->v;
    if (p->sched && oc_optv_schedule_list(o, p->sched, st) != 0)
        return -1;
    if (p->sched && (groups & OC_OPT_LAYOUT)) {
        if (o->n_schedules != 1)
            return oc_fail(st, "--schedule takes one schedule for a single layout");
        o->layout.schedule = o->schedules[0];
        if (!p->v)
            o->layout.vchunks = o->vchunks[0];
    } else if (p->v && !p->sched && p->v > 1) {
        o->layout.schedule = OC_SCHED_INTERLEAVED;
    }
    if (p->tp) o->layout.tp = p->tp, o->layout_given = 1;
    if (p->pp) o->layout.pp = p->pp, o->layout_given = 1;
    if (p->dp) o->layout.dp = p->dp, o->layout_given = 1;
    if (p->mb) o->layout.micro_batch = p->mb;
    if (p->layout_str) {
        if (apply_layout_string(o, p, st) != 0)
            return -1;
        o->layout_given = 1;
    }
    /* --tp, --pp and --dp of up to 1e9 each: refused before any product */
    if (o->layout_given && oc_layout_check_world(&o->layout, st) != 0)
        return -1;
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

    struct pending p = {0};
    opterr = 0;
    optind = 1;
    int c, idx = 0;
    while ((c = getopt_long(argc, argv, "+:h", longopts, &idx)) != -1) {
        const char *name = idx >= 0 && (size_t)idx < n ? longopts[idx].name : "?";
        int rc;
        char q[OC_QUOTE_MAX], q0[OC_QUOTE_MAX];
        if (c == ':')
            rc = oc_fail(st, "%s needs a value", oc_quote(q, sizeof q, argv[optind - 1]));
        else if (c == '?' && optopt && optopt < 256)
            rc = oc_fail(st, "unknown option '-%c' (see --help)", optopt);
        else if (c == '?')
            rc = oc_fail(st, "unknown or misplaced option '%s' for '%s' (see --help)",
                         oc_quote(q, sizeof q, argv[optind - 1]),
                         oc_quote(q0, sizeof q0, argv[0]));
        else if ((rc = once(&p, c, name, optarg, st)) == 0)
            rc = one_flag(o, &p, c, name, optarg, st);
        if (rc != 0)
            return -1;
        idx = -1;
    }
    char q[OC_QUOTE_MAX];
    if (optind < argc)
        return oc_fail(st, "unexpected argument '%s' (see --help)",
                       oc_quote(q, sizeof q, argv[optind]));
    if (o->help)
        return 0;
    if (apply_pending(o, &p, groups, st) != 0)
        return -1;
    set_fixed(o, &p);
    if (o->cards == 0)
        return oc_fail(st, "--cards N is required (the number of GPUs)");
    if (o->n_cards > 1 && !(groups & OC_OPT_PLAN))
        return oc_fail(st, "--cards takes one number of GPUs here (a list or a range is "
                           "for `ocsim sweep`)");
    /* --netbw measures the network, not a layout */
    if ((groups & OC_OPT_LAYOUT) && !o->layout_given && !o->exec.netbw)
        return oc_fail(st, "a layout is required: --layout tp8-pp8-dp1 or --tp/--pp/--dp");
    return 0;
}

int oc_opts_mbsplit(struct oc_opts *o, struct oc_status *st)
{
    if (!o->mbsplit)
        return 0;
    const int word = strcmp(o->mbsplit, "even") == 0 || strcmp(o->mbsplit, "speed") == 0;
    if (!o->layout_given) /* a sweep: even or speed for every layout */
        return word ? 0
                    : oc_fail(st, "--dp-micro-batch-split %s: a list is for one layout "
                                  "(a sweep takes even or speed)", o->mbsplit);
    if (strcmp(o->mbsplit, "speed") == 0)
        return oc_mbs_speed(&o->layout, &o->model, &o->topo, st) != 0
                   ? oc_fail(st, "--dp-micro-batch-split speed: %s", st->msg)
                   : 0;
    if (oc_mbs_parse(&o->layout, o->mbsplit, st) != 0)
        return -1; /* "even" clears it; a list was checked by the flag */
    return oc_mbs_check(&o->layout, st) != 0
               ? oc_fail(st, "--dp-micro-batch-split: %s", st->msg)
               : 0;
}

int oc_opts_load(struct oc_opts *o, struct oc_status *st)
{
    if (oc_model_load(o->model_name, &o->model, st) != 0)
        return -1;
    if (oc_topology_load(o->topology_name, &o->topo, st) != 0)
        return -1;
    /* node groups: the cluster is their nodes (the largest count last) */
    if (oc_topology_check_cards(&o->topo, o->n_cards > 1 ? o->cards_list[o->n_cards - 1]
                                                         : o->cards, st) != 0)
        return -1;
    if (o->layout.seq_length == 0)
        o->layout.seq_length = o->model.max_position_embeddings;
    o->topo.reserve = o->reserve;
    if (oc_opts_mbsplit(o, st) != 0)
        return -1;
    /* Beyond the model's positions: allowed for rotary models, said once
     * (layout.h, oc_layout_seq_warning). */
    char warn[OC_MSG_MAX];
    if (oc_layout_seq_warning(&o->layout, &o->model, warn, sizeof warn))
        fprintf(stderr, "ocsim: warning: %s\n", warn);
    return 0;
}
