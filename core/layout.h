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
 * bf16 | fp16 | fp32 (the run's precision). Each knob is named at most
 * once: "tp8-tp8-pp8-dp1" and "gpipe-...-1f1b" are refused, naming both
 * parts.
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

struct oc_layout {
    int64_t tp, pp, dp;
    int64_t micro_batch;   /* b: sequences per micro-batch */
    int64_t global_batch;  /* G: sequences per step, over all DP replicas */
    int64_t seq_length;    /* s */
    enum oc_schedule_kind schedule;
    int64_t vchunks;       /* v: model chunks per stage (1 unless interleaved) */
    enum oc_recompute recompute;
    int sequence_parallel;
    int shard_optimizer;   /* ZeRO-1 / Megatron distributed optimizer */
    int overlap_grad_reduce;
    enum oc_attention attention;
    enum oc_rank_order order;
    int allow_cross_node_tp; /* let a TP group span nodes */
    enum oc_precision precision;
};

/* Where one rank sits in the layout. */
struct oc_coord {
    int64_t tp, pp, dp;
};

/* The most cards a layout may span, and the bound of each of tp, pp, dp,
 * mb and v (as of --cards): tp*pp*dp is checked against it before it is
 * multiplied out, so no product of layout sizes overflows int64. */
#define OC_LAYOUT_MAX_CARDS 1000000000LL
/* The most tokens of one micro-batch (micro-batch size x sequence
 * length), checked by oc_layout_validate: the products of the cost model
 * (rows x heads x sequence, GEMM tiles) stay inside int64. */
#define OC_LAYOUT_MAX_TOKENS 1000000000LL

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
    OC_LAYOUT_NAMED_BITS = 12
};
/* oc_layout_parse, and the OC_LAYOUT_NAMED_* bits of the knobs s names
 * into *named (may be NULL). */
int oc_layout_parse_named(struct oc_layout *l, const char *s, unsigned *named,
                          struct oc_status *st);
/* What one OC_LAYOUT_NAMED_* bit is in a message: "tp", "the schedule". */
const char *oc_layout_named_what(unsigned bit);

/* tp, pp and dp at least 1 and tp*pp*dp at most OC_LAYOUT_MAX_CARDS,
 * checked without multiplying out; oc_layout_world asserts it. */
int oc_layout_check_world(const struct oc_layout *l, struct oc_status *st);
/* Write the compact string ("tp8-pp8-dp1-mb1-1f1b"). */
void oc_layout_format(const struct oc_layout *l, char *buf, size_t n);

/* Names of enum values as used in strings, CSV and reports. */
const char *oc_schedule_name(enum oc_schedule_kind k);   /* gpipe, 1f1b, interleaved */
const char *oc_recompute_name(enum oc_recompute r);      /* none, selective, full */
const char *oc_order_name(enum oc_rank_order o);         /* tp-dp-pp, tp-pp-dp */
const char *oc_precision_name(enum oc_precision p);      /* bf16, fp16, fp32 */
int oc_schedule_from_name(const char *s, enum oc_schedule_kind *k);
int oc_recompute_from_name(const char *s, enum oc_recompute *r);
int oc_order_from_name(const char *s, enum oc_rank_order *o);
int oc_precision_from_name(const char *s, enum oc_precision *p);

/* Bytes of one activation element, and of one gradient element in the DP
 * and embedding collectives, of a run in precision p: 2 (bf16, fp16) or 4
 * (fp32). */
double oc_precision_bytes(enum oc_precision p);
double oc_layout_act_bytes(const struct oc_layout *l); /* of l->precision */

/* Check every rule; the first broken one becomes st->msg, for example
 * "TP*PP*DP = 32 (tp4 x pp4 x dp2) does not match 64 cards". Memory is not
 * checked here (see oc_memory_* in memory.h). */
int oc_layout_validate(const struct oc_layout *l, const struct oc_model *m,
                       const struct oc_topology *t, int64_t cards,
                       struct oc_status *st);

/* t*p*d, of a layout that passed oc_layout_check_world (asserted). */
int64_t oc_layout_world(const struct oc_layout *l);
int64_t oc_layout_num_micro_batches(const struct oc_layout *l);  /* G/(d*b) */
int64_t oc_layout_layers_per_chunk(const struct oc_layout *l,
                                   const struct oc_model *m);    /* L/(p*v) */

/* Rank numbering (see enum oc_rank_order). */
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
};

struct oc_candidate {
    struct oc_layout layout;
    int valid;                 /* passes oc_layout_validate */
    char reason[OC_MSG_MAX];   /* why not, empty when valid */
};

/* Fills *out (malloc'd, caller frees) with every candidate, valid or not,
 * ordered by tp, pp, dp, micro-batch, schedule. Returns the count. */
int64_t oc_layout_enumerate(const struct oc_enum_opts *o,
                            const struct oc_model *m,
                            const struct oc_topology *t,
                            struct oc_candidate **out);

#endif
