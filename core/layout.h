/* layout.h: how one training step is split over the cards, and whether that
 * split is legal.
 *
 *   struct oc_layout l;
 *   oc_layout_default(&l);                       // tp1-pp1-dp1, 1f1b, ...
 *   if (oc_layout_parse(&l, "tp8-pp8-dp1-mb2-v2", &st) != 0) ...
 *   l.global_batch = 512; l.seq_length = 4096;
 *   if (oc_layout_validate(&l, &model, &topo, 64, &st) != 0) ...  // one line
 *   int64_t m = oc_layout_num_micro_batches(&l);  // G / (d * b)
 *   struct oc_coord c = oc_layout_coord(&l, rank); // (tp, pp, dp) of a rank
 *
 * Knob names follow Megatron-LM: tensor-model-parallel-size (t),
 * pipeline-model-parallel-size (p), data parallel (d), micro-batch-size (b),
 * global-batch-size (G), virtual pipeline chunks (v), recompute-granularity,
 * sequence-parallel, use-distributed-optimizer, overlap-grad-reduce, and
 * the run's precision (--bf16, --fp16; fp32 when neither is given, where
 * ocsim's default is bf16).
 *
 * The compact string is "tp<t>-pp<p>-dp<d>" followed by optional parts in
 * any order: mb<b> (micro-batch size), v<v> (interleaved 1F1B with v chunks
 * per stage), gpipe | 1f1b | interleaved, sp | nosp, rnone | rsel | rfull
 * (recompute), zero1 | nozero (optimizer-state sharding), flash | classic
 * (attention kernel), order=tp-dp-pp | order=tp-pp-dp (rank order),
 * bf16 | fp16 | fp32 (the run's precision), cp<N> (context-parallel size),
 * zero0 | zero1 | zero2 | zero3 (nozero is zero0), rfull<k> (full
 * recompute of the first k layers of each chunk), ovl | noovl
 * (gradient-reduce overlap), first<N> and last<N> (layers of the first and
 * the last pipeline stage), coll=auto|ring|hier|tree (collective
 * algorithm), gc=none|topk<D>|q8|q1|psgd<R> (gradient compression) and
 * sync<K> (local SGD, parameters averaged every K steps; both ocsim's
 * names, Megatron-LM has no such flags: compress.h), mbs=<m0>/<m1>/...
 * (each DP replica's micro-batches, runs written <m>x<k>; ocsim's,
 * mbsplit.h). Each knob is named at most once: "tp8-tp8-pp8-dp1" and
 * "gpipe-...-1f1b" are refused, naming both parts.
 *
 * oc_layout_format writes tp, pp, dp, mb and the schedule (or v) always,
 * and every other knob where it differs from oc_layout_default, in one
 * fixed order, so two layouts that differ in any knob print differently
 * and the label parses back to the same layout (precision aside: it is the
 * run's, given by --bf16/--fp16/--fp32, and not printed).
 */
#ifndef OC_LAYOUT_H
#define OC_LAYOUT_H

#include <stdint.h>

#include "model.h"
#include "status.h"
#include "topology.h"

enum oc_schedule_kind {
    OC_SCHED_GPIPE,       /* all forwards, then all backwards */
    OC_SCHED_1F1B,        /* PipeDream-Flush / Megatron non-interleaved */
    OC_SCHED_INTERLEAVED, /* Megatron interleaved 1F1B, v chunks per stage */
};

enum oc_recompute {
    OC_RECOMPUTE_NONE,
    OC_RECOMPUTE_SELECTIVE, /* recompute attention scores only (Korthikanti) */
    OC_RECOMPUTE_FULL,      /* keep each layer's input, recompute the layer */
};

enum oc_attention { OC_ATTN_CLASSIC, OC_ATTN_FLASH };

/* The run's precision: the element size of the activations (and so of the
 * pipeline messages and TP collectives that carry them) and of the
 * gradients the DP and embedding collectives reduce, 2 bytes in bf16 and
 * fp16, 4 in fp32 (oc_layout_act_bytes); memory.h gives the bytes per
 * parameter of weights, gradients and optimizer states that follow from
 * it. Megatron-LM trains in fp32 unless --bf16 or --fp16 is given; ocsim
 * predicts a bf16 run unless told otherwise (the enum's zero). The cpu and
 * cuda executors keep activations and gradients in fp32 (only the cuda
 * backend's --precision bf16 GEMM operands are 16-bit), so their runs are
 * fp32 runs here. */
enum oc_precision { OC_PREC_BF16, OC_PREC_FP16, OC_PREC_FP32 };

/* Which index varies fastest when ranks are numbered. Megatron-LM's default
 * order "tp-cp-ep-dp-pp" is OC_ORDER_TP_DP_PP: TP fastest, then DP, then PP.
 * OC_ORDER_TP_PP_DP keeps TP inside a node, runs PP across neighbouring
 * nodes and puts DP outermost. */
enum oc_rank_order { OC_ORDER_TP_DP_PP, OC_ORDER_TP_PP_DP };

/* The algorithm of the layout's collectives (the simulator's table,
 * sim/coll.h): auto picks per collective by closed form, like NCCL's tuner;
 * the others force ring, hierarchical (intra-node then inter-node) or tree
 * wherever they apply. */
enum oc_coll_choice { OC_COLL_CHOICE_AUTO, OC_COLL_CHOICE_RING, OC_COLL_CHOICE_HIER, OC_COLL_CHOICE_TREE };

/* An unequal micro-batch split (mbsplit.h) as runs of replicas with
 * equal counts: `len` consecutive DP replicas run `count` micro-batches
 * each. At most OC_MBS_MAX_RUNS runs, kept inline (not a pointer) so a
 * layout stays a plain value (copied, compared, sent whole by
 * sim/sweep_mpi.c and on sim/sweep.c's job pipe, whose 256 jobs must fit
 * 64 KiB: 16 runs of two 16-bit numbers are the 64 bytes left there). */
#define OC_MBS_MAX_RUNS 16
#define OC_MBS_MAX_COUNT 65535
struct oc_mbs_run {
    uint16_t count, len;
};

struct oc_layout {
    int64_t tp, pp, dp;
    int64_t micro_batch;   /* b: sequences per micro-batch */
    int64_t global_batch;  /* G: sequences per step, over all DP replicas */
    int64_t seq_length;    /* s */
    enum oc_schedule_kind schedule;
    int64_t vchunks;       /* v: model chunks per stage (1 unless interleaved) */
    enum oc_recompute recompute;
    int sequence_parallel;
    int64_t cp;            /* context-parallel size (Megatron-LM
                              --context-parallel-size): the sequence split
                              over cp ranks, attention as a ring of K/V
                              blocks (Liu et al. 2023, "Ring Attention");
                              1 = off */
    /* ZeRO stage (Rajbhandari et al. 2020, section 5): 0 replicated, 1 the
     * optimizer states sharded over DP (Megatron-LM
     * --use-distributed-optimizer), 2 the gradients as well, 3 the
     * parameters as well (FSDP: every layer's weights all-gathered before
     * its forward and its backward, its gradients reduce-scattered). */
    int zero;
    int64_t recompute_layers; /* with OC_RECOMPUTE_FULL: the first k layers
                                 of each model chunk are recomputed, the
                                 others keep their activations (Megatron-LM
                                 --recompute-method block
                                 --recompute-num-layers k); 0 = all */
    /* Uneven pipeline stages (Megatron-LM
     * --decoder-first-pipeline-num-layers and
     * --decoder-last-pipeline-num-layers): the layers of the first and of the
     * last stage, the others split evenly over the stages between; 0 = an
     * even split. */
    int64_t first_stage_layers, last_stage_layers;
    enum oc_coll_choice coll; /* collective algorithm, OC_COLL_CHOICE_AUTO */
    int overlap_grad_reduce;
    /* Megatron-LM --tp-comm-overlap: Transformer Engine's userbuffers hide
     * the TP all-gathers and reduce-scatters behind the GEMMs next to them
     * (tp_overlap.h); needs sequence parallelism. 0 = off (Megatron-LM's
     * default). */
    int tp_comm_overlap;
    /* Megatron-LM --overlap-param-gather: the distributed optimizer's
     * all-gather of the updated weights bucket by bucket under the next
     * step's first forward instead of after the optimizer step
     * (schedule_pgather.h); needs zero1 and overlap_grad_reduce. 0 = off
     * (Megatron-LM's default). */
    int overlap_param_gather;
    /* Interleaved stages whose layers are not a multiple of v: each
     * stage's layers spread over its v chunks as evenly as possible, the
     * embedding's and the head's chunks the lighter, as Llama 3's
     * balanced pipeline (placement.h). 0 = Megatron-LM's rule (every
     * stage's layers a multiple of v). */
    int uneven_chunks;
    enum oc_attention attention;
    enum oc_rank_order order;
    int allow_cross_node_tp; /* let a TP group span nodes */
    enum oc_precision precision;
    /* Gradients kept, accumulated and reduced in fp32 (Megatron-LM
     * --accumulate-allreduce-grads-in-fp32, Megatron-Core
     * DistributedDataParallelConfig.grad_reduce_in_fp32): 0 = Megatron-LM's
     * default, which is on for bf16 (arguments.py forces it: "bfloat16
     * requires gradient accumulation and all-reduce to be performed in
     * fp32") and off for fp16; 1 on; -1 off. On: 4 bytes per gradient in
     * memory and in the DP collectives (memory.h). fp32 runs: always 4. */
    int grad_fp32;
    /* The DP gradient exchange (compress.h): compression (enum
     * oc_gc_kind, OC_GC_NONE = 0 the plain reduction), top-k's density,
     * PowerSGD's rank, and local SGD's steps between synchronisations
     * (0 and 1: every step). */
    int gc;
    double gc_density;
    int64_t gc_rank;
    int64_t sync_every;
    /* Micro-batches of each DP replica (mbsplit.h, ocsim's knob "mbs="),
     * as runs in replica order, adjacent runs of different counts, the
     * replicas summing to d and their counts to G/b; mbs[0].len 0 = the
     * even split, G/(d*b) each. */
    struct oc_mbs_run mbs[OC_MBS_MAX_RUNS];
};

/* Where one rank sits in the layout. */
struct oc_coord {
    int64_t tp, pp, dp, cp;
};

/* The most cards a layout may span, and the bound of each of tp, pp, dp,
 * mb and v (as of --cards): tp*pp*dp is checked against it before it is
 * multiplied out, so no product of layout sizes overflows int64. */
#define OC_LAYOUT_MAX_CARDS 1000000000LL
/* The most tokens of one micro-batch (micro-batch size x sequence
 * length), checked by oc_layout_validate: the products of the cost model
 * (rows x heads x sequence, GEMM tiles) stay inside int64. */
#define OC_LAYOUT_MAX_TOKENS 1000000000LL
/* The largest context-parallel size ocsim takes (Llama 3 405B trained with
 * 16; a ring of more than this many sequence shards is no plan). */
#define OC_LAYOUT_MAX_CP 1024

void oc_layout_default(struct oc_layout *l);

/* Parse the compact string into l (fields it does not name are left as
 * they are; l is untouched on failure). Returns -1 naming the part it did
 * not understand, the two parts that name one knob, or a tp*pp*dp above
 * OC_LAYOUT_MAX_CARDS. */
int oc_layout_parse(struct oc_layout *l, const char *s, struct oc_status *st);

/* The knobs a layout string names (oc_layout_parse_named), so that a
 * command line can refuse a flag that says otherwise. "v2" alone names the
 * schedule too (interleaved). */
enum {
    OC_LAYOUT_NAMED_TP = 1u << 0,
    OC_LAYOUT_NAMED_PP = 1u << 1,
    OC_LAYOUT_NAMED_DP = 1u << 2,
    OC_LAYOUT_NAMED_MB = 1u << 3,
    OC_LAYOUT_NAMED_V = 1u << 4,
    OC_LAYOUT_NAMED_SCHEDULE = 1u << 5,
    OC_LAYOUT_NAMED_SP = 1u << 6,
    OC_LAYOUT_NAMED_RECOMPUTE = 1u << 7,
    OC_LAYOUT_NAMED_ZERO = 1u << 8,
    OC_LAYOUT_NAMED_ATTENTION = 1u << 9,
    OC_LAYOUT_NAMED_ORDER = 1u << 10,
    OC_LAYOUT_NAMED_PRECISION = 1u << 11,
    OC_LAYOUT_NAMED_CP = 1u << 12,
    OC_LAYOUT_NAMED_OVERLAP = 1u << 13,
    OC_LAYOUT_NAMED_FIRST = 1u << 14,
    OC_LAYOUT_NAMED_LAST = 1u << 15,
    OC_LAYOUT_NAMED_COLL = 1u << 16,
    OC_LAYOUT_NAMED_GC = 1u << 17,
    OC_LAYOUT_NAMED_SYNC = 1u << 18,
    OC_LAYOUT_NAMED_TPOVL = 1u << 19,
    OC_LAYOUT_NAMED_PGOVL = 1u << 20,
    OC_LAYOUT_NAMED_UNEVENV = 1u << 21,
    OC_LAYOUT_NAMED_MBS = 1u << 22,
    OC_LAYOUT_NAMED_BITS = 23
};
/* oc_layout_parse, and the OC_LAYOUT_NAMED_* bits of the knobs s names
 * into *named (may be NULL). */
int oc_layout_parse_named(struct oc_layout *l, const char *s, unsigned *named,
                          struct oc_status *st);
/* What one OC_LAYOUT_NAMED_* bit is in a message: "tp", "the schedule". */
const char *oc_layout_named_what(unsigned bit);
/* A total order of layouts by every field but the knobs whose
 * OC_LAYOUT_NAMED_* bits are in `except` (RECOMPUTE: the mode and its k),
 * field by field (padding is not compared): two layouts equal in all but
 * those knobs compare 0. */
int oc_layout_cmp_except(const struct oc_layout *a, const struct oc_layout *b,
                         unsigned except);

/* tp, pp, dp and cp at least 1 and tp*cp*pp*dp at most OC_LAYOUT_MAX_CARDS,
 * checked without multiplying out; oc_layout_world asserts it. */
int oc_layout_check_world(const struct oc_layout *l, struct oc_status *st);
/* Write the compact string ("tp8-pp8-dp1-mb1-1f1b"). */
void oc_layout_format(const struct oc_layout *l, char *buf, size_t n);

/* Names of enum values as used in strings, CSV and reports. */
const char *oc_schedule_name(enum oc_schedule_kind k);   /* gpipe, 1f1b, interleaved */
const char *oc_recompute_name(enum oc_recompute r);      /* none, selective, full */
const char *oc_order_name(enum oc_rank_order o);         /* tp-dp-pp, tp-pp-dp */
const char *oc_precision_name(enum oc_precision p);      /* bf16, fp16, fp32 */
const char *oc_coll_choice_name(enum oc_coll_choice a);      /* auto, ring, hier, tree */
int oc_coll_choice_from_name(const char *s, enum oc_coll_choice *a);
int oc_schedule_from_name(const char *s, enum oc_schedule_kind *k);
int oc_recompute_from_name(const char *s, enum oc_recompute *r);
int oc_order_from_name(const char *s, enum oc_rank_order *o);
int oc_precision_from_name(const char *s, enum oc_precision *p);

/* Bytes of one activation element, and of one gradient element in the DP
 * and embedding collectives, of a run in precision p: 2 (bf16, fp16) or 4
 * (fp32). */
double oc_precision_bytes(enum oc_precision p);
double oc_layout_act_bytes(const struct oc_layout *l); /* of l->precision */

/* The rules of the knobs beyond tp, pp, dp, mb and the schedule (zero,
 * cp, rfull<k>, first/last, coll) that need no model: in range, and
 * modelled by every consumer. oc_layout_validate calls it. */
int oc_layout_check_modelled(const struct oc_layout *l, struct oc_status *st);

/* Check every rule; the first broken one becomes st->msg, for example
 * "TP*PP*DP = 32 (tp4 x pp4 x dp2) does not match 64 cards". Memory is not
 * checked here (see oc_memory_* in memory.h). */
int oc_layout_validate(const struct oc_layout *l, const struct oc_model *m,
                       const struct oc_topology *t, int64_t cards,
                       struct oc_status *st);

/* Long sequences: a rotary model may run beyond its
 * max_position_embeddings (long-context training extends the positions
 * with rope_scaling, Llama 3.1's "llama3" type for example), which
 * oc_layout_validate allows; a learned position table may not. Writes a
 * one-line warning into buf naming the config's rope_scaling (or "no
 * rope_scaling in the config") and returns 1 when s exceeds a rotary
 * model's positions, else 0 (a learned table is refused instead). The
 * commands print it once on stderr (cli/options.c, oc_opts_load). */
int oc_layout_seq_warning(const struct oc_layout *l, const struct oc_model *m,
                          char *buf, size_t n);

/* t*c*p*d (c = cp), of a layout that passed oc_layout_check_world
 * (asserted). */
int64_t oc_layout_world(const struct oc_layout *l);
/* G/(d*b); under an unequal split (mbsplit.h) the most any replica runs */
int64_t oc_layout_num_micro_batches(const struct oc_layout *l);
/* The tokens of one sequence a rank holds: s/cp (context parallelism
 * splits the sequence; oc_layout_validate makes it divide). */
int64_t oc_layout_local_seq(const struct oc_layout *l);
int64_t oc_layout_layers_per_chunk(const struct oc_layout *l,
                                   const struct oc_model *m);    /* L/(p*v) */
/* (of an even split; with first/last the layers of a stage and a chunk
 * are placement.h's oc_place_stage_layers and oc_place_chunk_layers) */

/* Rank numbering (see enum oc_rank_order). CP sits between TP and the
 * next index, as in Megatron-LM's order tp-cp-ep-dp-pp: TP fastest, then
 * CP, then DP and PP (or PP and DP). */
struct oc_coord oc_layout_coord(const struct oc_layout *l, int64_t rank);
int64_t oc_layout_rank(const struct oc_layout *l, struct oc_coord c);

/* Enumeration: every (tp, pp, dp) with tp*pp*dp == cards, times the
 * micro-batch sizes and schedules asked for, each with its verdict. */
struct oc_enum_opts {
    int64_t cards;
    struct oc_layout base;          /* batch, seq, recompute... copied into each */
    const int64_t *micro_batches;   /* candidate b values */
    int n_micro_batches;
    const enum oc_schedule_kind *schedules;
    const int64_t *vchunks;         /* v for each schedule entry */
    int n_schedules;
    int even_stages;                /* 1: only the even split of the layers */
    double batch_tolerance;         /* > 0: each layout runs the global batch
                                       nearest base.global_batch within this
                                       fraction of it (batch.h); 0: exactly it */
};

struct oc_candidate {
    struct oc_layout layout;
    int valid;                 /* passes oc_layout_validate */
    char reason[OC_MSG_MAX];   /* why not, empty when valid */
};

/* Fills *out (malloc'd, caller frees) with every candidate, valid or not,
 * ordered by tp, pp, dp, micro-batch, schedule, then split. Each (tp, pp,
 * dp, micro-batch, schedule) whose other rules hold gives one candidate per
 * split of the layers of oc_stage_split_options_on (stage_split.h: the
 * even one first; only it with even_stages), the others one candidate with
 * the even split and the reason. Returns the count. */
int64_t oc_layout_enumerate(const struct oc_enum_opts *o,
                            const struct oc_model *m,
                            const struct oc_topology *t,
                            struct oc_candidate **out);

#endif
