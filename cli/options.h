/* options.h: the command-line flags of `ocsim` (tools/) and `ocsim-exec`
 * (exec/main.c), parsed into one struct by one table (options.c): the
 * flags every command shares, the groups a command adds (a layout, a CSV
 * file, an output folder, sweep candidates, simulation settings) and the
 * executor's own flags (OC_OPT_EXEC). The library both programs link
 * (ocsim_cli), so that the executor does not reach up into tools/.
 *
 * What it is not: the meaning of the values beyond their syntax (which
 * backend exists is exec/backends.h's; which precision, the executor's).
 *
 *   struct oc_opts o;
 *   oc_opts_default(&o);
 *   if (oc_opts_parse(&o, argc, argv, OC_OPT_LAYOUT | OC_OPT_CSV, &st) != 0)
 *       ...one line, exit 2...
 *   if (oc_opts_load(&o, &st) != 0) ...   // model + topology files
 *
 * Layout knobs take Megatron-LM's names as aliases of the short ones
 * (--tensor-model-parallel-size for --tp, --micro-batch-size for
 * --micro-batch, ...), so a Megatron command line can be pasted.
 */
#ifndef OC_OPTIONS_H
#define OC_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

#include "compress.h"
#include "layout.h"
#include "model.h"
#include "status.h"
#include "topology.h"

/* Which option groups a command accepts. */
enum {
    OC_OPT_LAYOUT = 1 << 0, /* --layout, --tp, --pp, --dp (one layout) */
    OC_OPT_CSV = 1 << 1,    /* --csv FILE */
    OC_OPT_OUT = 1 << 2,    /* --out DIR */
    OC_OPT_SWEEP = 1 << 3,  /* --micro-batches LIST, --schedules LIST, --resume,
                               --batch-tolerance P, --even-stages */
    OC_OPT_SIM = 1 << 4,    /* --fidelity, --collective, --platform, --cfg, --jobs */
    OC_OPT_EXEC = 1 << 5,   /* ocsim-exec's own: --backend, --precision, --steps,
                               --lr, --seed, --timeout, --calibrate,
                               --netbw, --ranks-per-node, --max-msg,
                               --no-weights, --no-mpi, --save, --save-every,
                               --save-keep, --load */
    OC_OPT_RESERVE = 1 << 6, /* --reserve, --fragmentation (core/reserve.h) */
    OC_OPT_PLAN = 1 << 7,    /* sweep: --cards LIST, --robustness R, --seed */
    OC_OPT_FIX = 1 << 8,    /* --tp, --pp, --dp fixing them in a sweep */
    OC_OPT_VAR = 1 << 9,    /* simulate: --variability SPEC, --steps N, --seed S */
    OC_OPT_VAR_SWEEP = 1 << 10, /* sweep: --variability-top N (with OC_OPT_VAR) */
};

#define OC_MAX_LIST 16

/* --robustness: perturbed cost models for the confidence of the choice
 * (core/perturb.h); 200 takes milliseconds (a first-order re-evaluation
 * of at most OC_PERTURB_TOP layouts each). */
#define OC_ROBUSTNESS_DEFAULT 200
#define OC_ROBUSTNESS_MAX 1000000
/* --variability-top: the best fitting layouts of a sweep re-run under
 * --variability (each --steps replays of every micro-batch: the cost of
 * the option), and at most that many (the ranked table's own bound). */
#define OC_VAR_TOP_DEFAULT 5
#define OC_VAR_TOP_MAX 1000

/* --steps's bound: 20 times the longest pretraining run we know of (Llama
 * 2: 2.0 T tokens in batches of 4 M, 500 k steps; Touvron et al. 2023,
 * section 2.2), so that no real run is refused, while a typo's 1e11 is
 * one line instead of a run of years. The executor keeps no per-step
 * state (exec/out_measured.h), so memory does not bound it. */
#define OC_EXEC_MAX_STEPS 10000000LL

/* --timeout's bound: a week per wait (one message or collective); a value
 * above it is a typo, not a run (exec/timeout.h: auto stays below it too). */
#define OC_EXEC_MAX_TIMEOUT_S 604800.0

/* OC_OPT_EXEC: the executor's own flags (oc_opts_default's defaults). */
struct oc_exec_flags {
    const char *backend;   /* --backend NAME; NULL: the registry's default */
    const char *precision; /* --precision NAME; NULL: the backend's default */
    int64_t steps;         /* training steps, 1 to OC_EXEC_MAX_STEPS (5);
                              OC_OPT_VAR: the sampled steps */
    int steps_given;       /* --steps was on the command line */
    int seed_given;        /* --seed was */
    double lr;             /* AdamW learning rate, > 0 (1e-3) */
    uint64_t seed;         /* weights and data (1234) */
    double timeout_s;      /* the deadline of one wait, > 0; 0: auto, the
                              default (exec/timeout.h) */
    int calibrate;         /* --calibrate: measure, no training */
    int netbw;             /* --netbw: measure the network between nodes */
    int64_t ranks_per_node; /* --ranks-per-node K: groups of K ranks as
                              nodes (--netbw); 0: by host name */
    int64_t max_msg_bytes; /* --max-msg: largest message of --netbw
                              (64 MiB) */
    int weights;           /* 0: --no-weights */
    int no_mpi;            /* --no-mpi: one process even in an MPI build */
    /* checkpoints (exec/ckpt.h) */
    const char *save_dir;  /* --save DIR; NULL: none */
    int64_t save_every;    /* --save-every N: also after every N-th step (0:
                              after the last step only) */
    int64_t save_keep;     /* --save-keep K: the newest K checkpoints stay
                              (0: all) */
    const char *load_dir;  /* --load DIR: resume (a checkpoint, or DIR/latest) */
};

struct oc_opts {
    int64_t cards;
    int cards_given;         /* --cards was on the command line */
    /* --cards LIST or RANGE (OC_OPT_PLAN): ascending; n_cards 1 and
     * cards_list[0] == cards for a single count */
    int64_t cards_list[OC_MAX_LIST];
    int n_cards;
    /* OC_OPT_RESERVE: copied into topo.reserve by oc_opts_load (auto, and
     * OC_RESERVE_FRAGMENTATION_DEFAULT, unless given) */
    struct oc_reserve_setting reserve;
    int64_t robustness;       /* OC_OPT_PLAN: perturbed cost models (core/perturb.h); 0: off */
    const char *model_name;
    const char *topology_name;
    const char *csv_path;
    const char *out_dir;
    struct oc_layout layout; /* knobs; tp/pp/dp only with OC_OPT_LAYOUT */
    int layout_given;        /* --layout or any of --tp/--pp/--dp */
    int64_t micro_batches[OC_MAX_LIST]; /* OC_OPT_SWEEP candidates */
    int n_micro_batches;
    enum oc_schedule_kind schedules[OC_MAX_LIST];
    int64_t vchunks[OC_MAX_LIST];
    int n_schedules;
    int resume;               /* --resume: continue the sweep in --out */
    double batch_tolerance;   /* --batch-tolerance P%: each layout runs the
                                 global batch nearest --global-batch within
                                 P/100 of it (core/batch.h); 0: exactly it */
    int even_stages;          /* --even-stages: only even pipeline splits
                                 (core/stage_split.h) */
    struct oc_gc_setting compress[OC_GC_MAX_LIST]; /* --compression LIST: the
                                 DP exchanges a sweep searches (core/compress.h);
                                 none given: the layout's alone */
    int n_compress;
    int no_prune;             /* --no-prune: simulate every candidate that fits */
    int core_knobs;           /* --core-knobs: search tp, pp, dp, mb,
                                 1f1b/interleaved:2 and the stage splits
                                 alone; default (and --all-knobs): every
                                 knob not fixed by a flag (core/search.h) */
    int keep_dominated;       /* --keep-dominated: simulate dominated variants
                                 too (tools/sweep_plan.h) */
    /* --dp-micro-batch-split even | speed | LIST (core/mbsplit.h): a
     * single layout's split, resolved by oc_opts_load (speed from the
     * cost model of each replica's devices); a sweep's even or speed
     * alone (not given: both on node groups). NULL when not given. */
    const char *mbsplit;
    int rejected_csv;         /* --rejected-csv: also write DIR/rejected.csv,
                                 the candidates rejected before simulation
                                 with their reasons */
    /* The layout knobs a flag set (OC_LAYOUT_NAMED_* bits: --tp, --recompute,
     * --sequence-parallel, --zero-stage, --rank-order, --collective,
     * --schedule, --micro-batches, ...): a sweep keeps them fixed and
     * searches the others (core/search.h). */
    unsigned fixed;
    /* OC_OPT_SIM */
    const char *fidelity;     /* "fast" | "full" */
    const char *collective;   /* "auto" | "ring" | "tree" | "hier" */
    int coarse;               /* merge ring steps */
    int no_steady;            /* --no-steady-fold: every micro-batch simulated */
    const char *platform_file;
    const char *cfg[OC_MAX_LIST];
    int n_cfg;
    const char *log;          /* SimGrid --log settings, or NULL */
    int64_t jobs;             /* parallel simulations (sweep); 0: cores */
    int64_t top;              /* rows of the ranked table */
    const char *variability;  /* OC_OPT_VAR: --variability SPEC
                                 (core/variability.h), or NULL */
    int64_t var_top;          /* OC_OPT_VAR_SWEEP: layouts re-run under it */
    int var_top_given;
    struct oc_exec_flags exec; /* OC_OPT_EXEC */
    int help;
    struct oc_model model;
    struct oc_topology topo;
};

/* --dp-micro-batch-split onto o->layout (core/mbsplit.h): even clears
 * the split, speed computes it from the model and topology, a list is
 * checked against the layout (DP, the batch). oc_opts_load calls it for
 * a single layout; one line and -1 on a broken rule. */
int oc_opts_mbsplit(struct oc_opts *o, struct oc_status *st);
void oc_opts_default(struct oc_opts *o);
/* Parses argv (argv[0] is the command name). Unknown flags, bad numbers and
 * flags the command does not take are errors. */
int oc_opts_parse(struct oc_opts *o, int argc, char **argv, unsigned groups,
                  struct oc_status *st);
/* Loads the model and topology and applies model-dependent defaults (the
 * sequence length defaults to max_position_embeddings). */
int oc_opts_load(struct oc_opts *o, struct oc_status *st);
/* Help text for the shared options of `groups` (OC_OPT_EXEC's flags are
 * oc_opts_print_exec_help's). */
void oc_opts_print_help(FILE *f, unsigned groups);
/* Help text for OC_OPT_EXEC's flags ("Executor options:"). */
void oc_opts_print_exec_help(FILE *f);

#endif
