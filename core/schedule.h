/* schedule.h: for one layout, every rank's ordered list of ops. This is the
 * only place that knows what a layout means; the simulator replays these
 * lists and the executor runs them.
 *
 *   struct oc_schedule s;
 *   struct oc_schedule_opts o = { .grain = OC_GRAIN_LAYER };
 *   if (oc_schedule_build(&s, &model, &layout, &o, &st) != 0) ...
 *   for (int64_t r = 0; r < s.nranks; r++)
 *       for (int64_t i = 0; i < s.ranks[r].n; i++) {
 *           const struct oc_op *op = &s.ranks[r].ops[i];
 *           ...
 *       }
 *   oc_schedule_free(&s);
 *
 * Op kinds:
 *   COMPUTE     forward, backward, recompute of one part (embedding, attention,
 *               MLP, LM head + loss) over a layer range for one micro-batch,
 *               or the optimizer step; with FLOPs and HBM bytes.
 *   SEND/RECV   activations (forward) or their gradients (backward) between
 *               pipeline neighbours; bytes, peer rank, tag. Every SEND has
 *               exactly one RECV with the same tag on the peer. A SEND does
 *               not wait for its receiver (MPI_Isend, ncclSend on a side
 *               stream); a RECV blocks until its data is there. Blocking
 *               sends would deadlock 1F1B (stage i sends an activation while
 *               stage i+1 sends a gradient back).
 *   COLLECTIVE  all-reduce, all-gather, reduce-scatter over a named group
 *               (TP, DP, embedding); the full buffer's bytes, `count` back-to-back
 *               repetitions of the same collective. Blocking, unless `async`
 *               (DP gradient buckets under overlap_grad_reduce,
 *               schedule_bucket.h, on DP stream tag OC_ZERO_STREAM_REDUCE:
 *               run in issue order), which the rank starts and goes on.
 *               Under context parallelism (cp > 1) each attention part
 *               also runs a ring of SEND/RECV (p2p OC_P2P_KV) between CP
 *               neighbours, between c slices of its compute
 *               (schedule_cp.h); at chunk grain one merged ring per
 *               unit and phase (schedule_cp.h, "Chunk grain").
 *   WAIT        completes every outstanding SEND and async COLLECTIVE; the
 *               last ones before the optimizer step.
 *   ALLOC/FREE  a named buffer of `bytes` (activations kept for backward,
 *               weights, gradients, optimizer states, logits), so memory over
 *               time is a replay of these events.
 *
 * Grain: OC_GRAIN_LAYER emits one op per layer part, with the TP collectives
 * where Megatron-LM runs them (what the executor needs). OC_GRAIN_CHUNK merges
 * the parts of a model chunk into one compute op per (micro-batch, chunk,
 * direction) and its TP collectives into one op with `count` repetitions
 * (what a fast sweep needs); both carry the same FLOPs, bytes and memory.
 * Under cp > 1 a chunk-grain unit's compute is one op per part and phase,
 * its attention the c slices of a merged ring (schedule_cp.h).
 *
 * Pipeline order of work (Narayanan et al. 2021, "Efficient Large-Scale
 * Language Model Training on GPU Clusters Using Megatron-LM", section 2.2):
 *   gpipe:       all m forwards, then all m backwards (in micro-batch
 *                order 0..m-1, as drawn in figure 3; same peak memory).
 *   1f1b:        stage i runs min(p-i-1, m) warm-up forwards, then alternates
 *                one forward, one backward, then drains the backwards.
 *   interleaved: v chunks per stage, chunk c of stage i holds layers
 *                [(c*p+i)*L/(p*v), ...); Megatron-LM's warm-up of
 *                (p-i-1)*2 + (v-1)*p chunk-forwards; needs m % p == 0.
 */
#ifndef OC_SCHEDULE_H
#define OC_SCHEDULE_H

#include <stdint.h>

#include "layout.h"
#include "model.h"
#include "status.h"

enum oc_op_kind {
    OC_OP_COMPUTE,
    OC_OP_SEND,
    OC_OP_RECV,
    OC_OP_COLLECTIVE,
    OC_OP_ALLOC,
    OC_OP_FREE,
    OC_OP_WAIT, /* wait for all of this rank's outstanding SENDs and async
                   COLLECTIVEs */
};

enum oc_phase {
    OC_PHASE_FWD,
    OC_PHASE_BWD,
    OC_PHASE_RECOMPUTE,
    OC_PHASE_OPTIMIZER,
};

enum oc_part {
    OC_PART_EMBED, /* token (+ position) embedding, first stage */
    OC_PART_ATTN,  /* norm, QKV, attention, output projection, residual */
    OC_PART_MLP,   /* norm, up (gate), activation, down, residual */
    OC_PART_HEAD,  /* final norm, LM head, cross-entropy, last stage */
    OC_PART_CHUNK, /* OC_GRAIN_CHUNK: every part of a model chunk */
    OC_PART_ALL,   /* the optimizer step over all of a rank's parameters */
};

enum oc_coll_kind {
    OC_COLL_ALLREDUCE,
    OC_COLL_ALLGATHER,
    OC_COLL_REDUCESCATTER,
    OC_COLL_BROADCAST,
};

enum oc_group {
    OC_GROUP_NONE,
    OC_GROUP_TP,    /* ranks with the same (pp, dp) */
    OC_GROUP_DP,    /* ranks with the same (tp, pp): the DP x CP ranks,
                       over which Megatron-LM reduces gradients
                       (data-parallel group with CP) */
    OC_GROUP_EMBED, /* first and last stage, same (tp, dp, cp): tied embedding */
    OC_GROUP_CP,    /* ranks with the same (tp, pp, dp): the ring of
                       context parallelism (schedule_cp.h) */
};

/* Named buffers for ALLOC/FREE and memory reports. */
enum oc_buf {
    OC_BUF_WEIGHTS,     /* compute weights (16-bit, or fp32 in fp32) */
    OC_BUF_GRADS,       /* gradients, as the weights */
    OC_BUF_OPTIMIZER,   /* fp32 master weights (not in fp32) + Adam m and v */
    OC_BUF_ACTIVATIONS, /* kept for backward, per micro-batch and chunk */
    OC_BUF_LOGITS,      /* fp32 logits for the loss, last stage */
    OC_BUF_COMM,        /* send/receive staging */
    OC_BUF_COUNT
};

/* Point-to-point direction: activations go forward, gradients backward;
 * OC_P2P_KV is a context-parallel ring step (K/V blocks, in backward with
 * dK/dV) to the next CP rank (schedule_cp.h). */
enum oc_p2p_kind { OC_P2P_ACT, OC_P2P_GRAD, OC_P2P_KV };

struct oc_op {
    uint8_t kind;   /* enum oc_op_kind */
    uint8_t phase;  /* enum oc_phase (COMPUTE, and the p2p/collective's phase) */
    uint8_t part;   /* enum oc_part */
    uint8_t coll;   /* enum oc_coll_kind (COLLECTIVE) */
    uint8_t group;  /* enum oc_group (COLLECTIVE) */
    uint8_t buf;    /* enum oc_buf (ALLOC/FREE) */
    uint8_t p2p;    /* enum oc_p2p_kind (SEND/RECV) */
    uint8_t async;  /* COLLECTIVE: started without waiting (see OC_OP_WAIT) */
    int32_t mb;     /* micro-batch, -1 if none */
    int32_t stage;  /* pipeline stage of the rank */
    int32_t chunk;  /* model chunk on this stage (0 unless interleaved) */
    int32_t layer_first; /* first global layer, -1 if none */
    int32_t layer_count; /* layers covered */
    int32_t count;  /* COLLECTIVE: back-to-back repetitions (>= 1);
                       COMPUTE: the op is one of `count` equal slices of
                       its part (a context-parallel ring step) */
    int64_t peer;   /* SEND/RECV: the other rank */
    int64_t tag;    /* SEND/RECV: unique per (sender, receiver) message */
    double flops;   /* COMPUTE: floating-point operations */
    double hbm_bytes; /* COMPUTE: bytes through device memory */
    double bytes;   /* SEND/RECV: the message; COLLECTIVE: the full buffer S
                       of one repetition, as in closed_form.h (all-reduce
                       input, all-gather output, reduce-scatter input);
                       ALLOC/FREE: buffer size */
};

struct oc_rank_ops {
    int64_t n, cap;
    struct oc_op *ops;
};

enum oc_grain { OC_GRAIN_LAYER, OC_GRAIN_CHUNK };

struct oc_schedule_opts {
    enum oc_grain grain;
    int emit_memory;   /* emit ALLOC/FREE ops (default on: 1) */
    /* NULL: every rank's ops; else only ranks r with only[r] != 0 get
     * theirs, the others an empty list (a replay's figures read only
     * the ranks it recorded: sim/replay.c's steady-state fold) */
    const unsigned char *only;
};

struct oc_schedule {
    int64_t nranks;
    int64_t num_micro_batches; /* m */
    struct oc_layout layout;
    struct oc_rank_ops *ranks; /* nranks lists */
};

/* The layout must have passed oc_layout_validate. */
int oc_schedule_build(struct oc_schedule *s, const struct oc_model *m,
                      const struct oc_layout *l,
                      const struct oc_schedule_opts *o, struct oc_status *st);
void oc_schedule_free(struct oc_schedule *s);

/* The same lists one rank at a time, for a caller that reads one rank's
 * list and need not hold them all (sim/replay_steady.c's folded figures):
 *   struct oc_schedule_builder *b;
 *   if (oc_schedule_builder_new(&b, m, l, o, st) != 0) ...;  // o->only unused
 *   struct oc_rank_ops ro = {0};
 *   oc_schedule_builder_rank(b, r, &ro);  // rank r's list, op for op as
 *   ...                                   // oc_schedule_build's; ro.ops grows
 *   free(ro.ops);                         // as needed and is reused
 *   oc_schedule_builder_free(b);
 * The builder keeps m (not copied): it must outlive the builder. */
struct oc_schedule_builder;
int oc_schedule_builder_new(struct oc_schedule_builder **b, const struct oc_model *m,
                            const struct oc_layout *l, const struct oc_schedule_opts *o,
                            struct oc_status *st);
void oc_schedule_builder_rank(struct oc_schedule_builder *b, int64_t r,
                              struct oc_rank_ops *ro);
int64_t oc_schedule_builder_ranks(const struct oc_schedule_builder *b);
int64_t oc_schedule_builder_micro_batches(const struct oc_schedule_builder *b);
void oc_schedule_builder_free(struct oc_schedule_builder *b);

/* The order in which one stage runs its (micro-batch, chunk, direction)
 * units; exposed so tests and the executor can read it directly. A unit is
 * one forward or one backward of one chunk for one micro-batch. */
struct oc_unit {
    int32_t mb;
    int32_t chunk;
    int32_t backward; /* 0 forward, 1 backward */
};
/* Fills *out (malloc'd) with 2*m*v units for `stage`; returns the count.
 * Every schedule has one shape: oc_schedule_warmup forwards, then pairs of
 * (forward w+k, backward k), then the remaining backwards, forward and
 * backward k being oc_schedule_unit(l, k, ...). */
int64_t oc_schedule_stage_order(const struct oc_layout *l, int64_t m,
                                int64_t stage, struct oc_unit **out);
/* The forwards `stage` runs before its first backward, with m micro-batches
 * per step (v = oc_place_interleaved_chunks): GPipe m (Huang et al. 2019),
 * 1F1B min(p-i-1, m) (Narayanan et al. 2021, section 2.2), interleaved
 * Megatron-LM's min((p-i-1)*2 + (v-1)*p, m*v). */
int64_t oc_schedule_warmup(const struct oc_layout *l, int64_t m, int64_t stage);
/* The k-th forward (backward 0) or backward (1) unit of a stage, k in
 * [0, m*v). Interleaved: Megatron-LM's chunk (k/p)%v (backward: v-1 minus
 * it) and micro-batch (k/(p*v))*p + k%p; otherwise micro-batch k, chunk 0.
 * The same on every stage. */
struct oc_unit oc_schedule_unit(const struct oc_layout *l, int64_t k,
                                int backward);

const char *oc_op_kind_name(enum oc_op_kind k);
const char *oc_phase_name(enum oc_phase p);
const char *oc_part_name(enum oc_part p);
const char *oc_coll_name(enum oc_coll_kind c);
const char *oc_group_name(enum oc_group g);
const char *oc_buf_name(enum oc_buf b);

/* Ranks of the group `g` that `rank` belongs to, in ring order; writes at
 * most `cap` entries and returns the group size. */
int64_t oc_schedule_group(const struct oc_layout *l, int64_t rank,
                          enum oc_group g, int64_t *members, int64_t cap);

#endif
