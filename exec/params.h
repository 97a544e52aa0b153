/* params.h: the executor's parameters on one rank: the tensor-parallel shards
 * of the layers (and embedding, LM head) the rank holds, in one arena, with
 * the same layout for weights and gradients; the two AdamW moments for the
 * whole arena, or under ZeRO-1 for this DP rank's slice of every tensor.
 *
 *   int64_t layers[] = {2, 3};                    // global layers held
 *   struct oc_params_opts o = { .tp = 2, .tp_rank = 1, .layers = layers,
 *                               .nlayers = 2, .has_embed = 0,
 *                               .has_head = 1, .seed = 1234 };
 *   struct oc_params p;
 *   if (oc_params_init(&p, &model, &o, &st) != 0) ...st.msg...
 *   float *qkvw = oc_params_w(&p, OC_P_QKVW, 3);  // (3*C/t, C) shard
 *   float *dqkvw = oc_params_g(&p, OC_P_QKVW, 3); // same shape, grads
 *   oc_params_zero_grad(&p);                      // at the start of a step
 *   ... forward / backward (gpt.h) accumulate into p.g ...
 *   oc_params_adamw(&kernels, &p, &hyper, step);  // the moments' slices
 *   oc_params_free(&p);
 *   // ZeRO-1 over d = 4, DP rank 1: m and v hold slice 1 of 4 of each tensor
 *   oc_params_init_sharded(&p, &model, &o, 4, 1, &st);
 *
 * What this file is: the parameter table (names, global shapes, how TP
 * splits them, how they are initialised), the arena, the counter-based
 * initialisation, AdamW's walk over the tensors and the shard <->
 * full-tensor copies. What it is not: the model math (model/gpt.h), the
 * AdamW arithmetic (the kernels': kernels/ops.h) or any communication (the
 * runner all-reduces p.g over DP and the tied-embedding gradient over the
 * EMBED group).
 *
 * Letters: C = hidden size, NH = heads, NKV = key-value heads (grouped-
 * query attention; NKV = NH in GPT-2), g = NH/NKV, HS = C/NH head size, F =
 * MLP intermediate size, V = vocabulary, P = positions, L = layers, t = TP
 * size.
 *
 * Tensors (llm.c names; a linear layer's weight is (out, in) and computes
 * y = x W^T + b). Global shapes, and how a TP shard of rank r holds them
 * (Megatron-LM, Shoeybi et al. 2019, section 3). The GPT-2 block:
 *
 *   wte      (V, C)        rows split: vocab rows [r*V/t, (r+1)*V/t)
 *   wpe      (P, C)        whole on every TP rank
 *   ln1w/b   (C)           whole
 *   qkvw     (NKV*(g+2)*HS, C)  rows split by KV group: groups
 *                          [r*NKV/t, (r+1)*NKV/t). Rows are group-major,
 *                          (NKV, g+2, HS): a group's g query heads, its
 *                          key, its value, so a shard is one contiguous
 *                          block of rows (Megatron-LM's layout, not Hugging
 *                          Face's [q | k | v]). With g = 1 (GPT-2): (NH, 3,
 *                          HS), row (h*3 + j)*HS + i is element i of q
 *                          (j=0), k (1) or v (2) of head h.
 *   qkvb     (NKV*(g+2)*HS) split like qkvw's rows
 *   attprojw (C, C)        columns split (row-parallel): input columns of
 *                          the shard's heads [r*C/t, (r+1)*C/t)
 *   attprojb (C)           whole, added once after the all-reduce
 *   ln2w/b   (C)           whole
 *   fcw      (F, C)        rows split: [r*F/t, ...)
 *   fcb      (F)           split like fcw's rows
 *   fcprojw  (C, F)        columns split (row-parallel)
 *   fcprojb  (C)           whole, added once after the all-reduce
 *   lnfw/b   (C)           whole
 *   lmw      (V, C)        rows split like wte. With tied embeddings there
 *                          is no lmw where the rank also holds wte (the
 *                          head reads wte and adds its gradient to wte's);
 *                          a head-only rank (last pipeline stage) holds lmw
 *                          as a copy of wte, initialised to the same values,
 *                          and the runner all-reduces the two gradients
 *                          over the EMBED group (oc_params_tied_grad).
 *
 * The Llama block (Touvron et al. 2023) has no biases and no wpe
 * (rotary positions), RMSNorm gains ln1w, ln2w, lnfw (C) whole, qkvw as
 * above with its KV groups, attprojw, fcprojw (the down projection, C x
 * F) and lmw as above (untied unless the config ties them), and:
 *
 *   fcw      (2F, C)       the SwiGLU's gate (rows [0, F)) and up (rows
 *                          [F, 2F)) projections fused, as Megatron-LM's
 *                          linear_fc1: rank r holds rows [r*F/t, (r+1)*F/t)
 *                          of each, gate then up (OC_SPLIT_ROWS_GLU), so its
 *                          (2F/t, C) shard is one GEMM whose output rows
 *                          are gate | up.
 *
 * Vectors are (n, 1) tensors, so a column-parallel bias splits its rows
 * like its weight.
 *
 * Optimizer states (ZeRO-1, Rajbhandari et al. 2020, "P_os"; Megatron-LM's
 * distributed optimizer): with d DP ranks, DP rank j owns slice j of d of
 * every tensor (oc_params_slice: [n*j/d, n*(j+1)/d) of its n floats) and
 * allocates AdamW's m and v for its slices only, back to back in tensor
 * order (opt_off), 2*4 bytes per owned parameter; AdamW updates the owned
 * slices of w and the runner all-gathers them (runner_dp.c). The weights
 * and gradients stay whole: the weights are the compute weights (fp32
 * here, so there is no separate master copy to shard; the cuda kernels'
 * bf16 GEMM copy is made from the whole arena), and the gradients are
 * accumulated whole over the micro-batches before the reduce-scatter
 * (sharding them would be ZeRO-2). Slicing each tensor rather than the
 * arena keeps the tied embedding's slices aligned between the first and
 * last pipeline stage (runner.h). With d = 1 the slice is the tensor and
 * m, v have the arena's layout.
 *
 * Initialisation: the value of global element (kind, layer, row, col) is a
 * function of (seed, kind, layer, row*cols + col) only (splitmix64, Steele
 * et al. 2014, as a counter-based generator), so a TP shard's slice equals
 * the slice of the whole tensor, whatever the layout. Matrices and
 * embeddings are uniform with std 0.02, the two output projections std
 * 0.02/sqrt(2L) (Radford et al. 2019, GPT-2, section 2.3; Megatron-LM's
 * output_layer_init_method, used for Llama too), norm gains 1 and every
 * bias 0. A uniform on [-a, a) has std a/sqrt(3), so a = std*sqrt(3).
 */
#ifndef OC_EXEC_PARAMS_H
#define OC_EXEC_PARAMS_H

#include <stdint.h>

#include "model.h"
#include "ops.h"
#include "status.h"

/* Kinds of tensor (the order is the arena order inside each group; the
 * values key the initialisation, so a new kind goes last). A family has a
 * subset of them (oc_params_kind_in_model). */
enum oc_param_kind {
    OC_P_WTE,      /* (V, C) token embedding */
    OC_P_WPE,      /* (P, C) position embedding */
    OC_P_LN1W,     /* (C) */
    OC_P_LN1B,     /* (C) */
    OC_P_QKVW,     /* (NKV*(g+2)*HS, C) */
    OC_P_QKVB,     /* (NKV*(g+2)*HS) */
    OC_P_ATTPROJW, /* (C, C) */
    OC_P_ATTPROJB, /* (C) */
    OC_P_LN2W,     /* (C) */
    OC_P_LN2B,     /* (C) */
    OC_P_FCW,      /* (F, C), or (2F, C) gate | up (Llama) */
    OC_P_FCB,      /* (F) */
    OC_P_FCPROJW,  /* (C, F) */
    OC_P_FCPROJB,  /* (C) */
    OC_P_LNFW,     /* (C) */
    OC_P_LNFB,     /* (C) */
    OC_P_LMW,      /* (V, C) untied LM head, or a tied copy of wte */
    OC_P_COUNT
};
#define OC_P_FIRST_LAYER OC_P_LN1W    /* per-layer kinds: [LN1W, FCPROJB] */
#define OC_P_LAST_LAYER OC_P_FCPROJB
#define OC_P_PER_LAYER (OC_P_LAST_LAYER - OC_P_FIRST_LAYER + 1)

enum oc_param_split {
    OC_SPLIT_NONE, /* whole on every TP rank */
    OC_SPLIT_ROWS, /* rank r holds rows [r*rows/t, (r+1)*rows/t) */
    OC_SPLIT_COLS, /* rank r holds columns [r*cols/t, (r+1)*cols/t) */
    OC_SPLIT_ROWS_GLU, /* two halves of rows (gate | up), each split by
                          rows; rank r holds its slice of each, in order */
};

enum oc_param_init {
    OC_INIT_UNIFORM, /* std 0.02 */
    OC_INIT_SCALED,  /* std 0.02/sqrt(2L): residual output projections */
    OC_INIT_ONES,
    OC_INIT_ZEROS,
};

/* What a kind of tensor is, for a given model (global shape). */
struct oc_param_info {
    const char *name;          /* "qkvw" */
    int per_layer;             /* one per layer (else one per model) */
    int64_t rows, cols;        /* global shape; vectors are (n, 1); 0 x 0:
                                  the model's family has no such tensor */
    enum oc_param_split split;
    enum oc_param_init init;
    int decay;                 /* AdamW weight decay applies (matrices and
                                  embeddings, not biases and gains, as
                                  Megatron-LM's default param groups) */
};

/* The table for model m's family (GPT-2 or Llama), filled in one place
 * (params.c). */
void oc_params_info(const struct oc_model *m, struct oc_param_info info[OC_P_COUNT]);
/* Has model m's family a tensor of kind k? (Llama: no biases, no wpe.) */
int oc_params_kind_in_model(const struct oc_model *m, enum oc_param_kind k);

/* One tensor of the arena. */
struct oc_param_tensor {
    enum oc_param_kind kind;
    int64_t layer;        /* global layer, -1 for embedding and head tensors */
    int64_t offset;       /* first float in the arena */
    int64_t rows, cols;   /* local (shard) shape */
    int64_t row0, col0;   /* where the shard sits in the global tensor
                             (row0: in each part) */
    int64_t parts;        /* row blocks split alike: 1, or 2 (gate | up of
                             OC_SPLIT_ROWS_GLU); oc_params_global_row */
    int64_t grows, gcols; /* global shape */
    enum oc_param_kind init_kind; /* key of the generator: OC_P_WTE for a
                                     tied LM head copy, else kind */
    int decay;
};

struct oc_params_opts {
    int64_t tp, tp_rank;
    const int64_t *layers;  /* global layers this rank holds (any order, no
                               repeats; the arena keeps this order) */
    int64_t nlayers;
    int has_embed;          /* first pipeline chunk: wte, wpe */
    int has_head;           /* last pipeline chunk: lnf, lmw (or wte) */
    uint64_t seed;
};

struct oc_params {
    struct oc_model model;
    int64_t tp, tp_rank;
    int has_embed, has_head;
    int head_uses_wte;        /* tied and has_embed: the LM head is wte */
    int64_t nt;               /* tensors */
    struct oc_param_tensor *t;
    int64_t *slot;            /* (L+1, OC_P_COUNT): index into t or -1;
                                 row 0 is layer-less, row l+1 layer l */
    int64_t n;                /* floats per arena */
    float *w;                 /* (n) weights */
    float *g;                 /* (n) gradients, accumulated over micro-batches */
    /* AdamW's moments over the owned slices (see "Optimizer states") */
    int64_t opt_d, opt_j;     /* slice opt_j of opt_d of every tensor */
    int64_t *opt_off;         /* (nt) first float of tensor i's slice in m, v */
    int64_t nopt;             /* floats of m and of v: n when opt_d = 1 */
    float *m;                 /* (nopt) AdamW first moment */
    float *v;                 /* (nopt) AdamW second moment */
};

/* Checks the model (oc_params_check_model) and the options, lays out the
 * arena, initialises the weights, zeroes g, m and v (m and v for the whole
 * arena). */
int oc_params_init(struct oc_params *p, const struct oc_model *m,
                   const struct oc_params_opts *o, struct oc_status *st);
/* The same with the optimizer states of DP rank opt_j of opt_d only
 * (ZeRO-1; opt_d = 1: oc_params_init). */
int oc_params_init_sharded(struct oc_params *p, const struct oc_model *m,
                           const struct oc_params_opts *o, int64_t opt_d,
                           int64_t opt_j, struct oc_status *st);
void oc_params_free(struct oc_params *p);

/* Slice j of d of a tensor of n floats: [n*j/d, n*(j+1)/d) (ZeRO-1's
 * slices, for the optimizer states here and the runner's reduce-scatter
 * and all-gather). */
void oc_params_slice(int64_t n, int64_t d, int64_t j, int64_t *lo, int64_t *hi);

/* Bytes of the optimizer states this rank allocated: m and v, 2 * 4 * nopt
 * (what the runner counts as OC_BUF_OPTIMIZER; core/memory.h's
 * optimizer_bytes of an fp32 run). */
double oc_params_optimizer_bytes(const struct oc_params *p);

/* Is the model one the executor runs? GPT style (LayerNorm with bias,
 * learned positions, biased linear layers, two-matrix GELU MLP, heads ==
 * KV heads) or Llama style (RMSNorm, rotary positions, no biases, SwiGLU,
 * grouped-query attention), C % NH == 0, and NH, NKV, F, V divisible by
 * tp (Megatron-LM splits whole KV groups). */
int oc_params_check_model(const struct oc_model *m, int64_t tp,
                          struct oc_status *st);

/* The tensor (kind, layer) of this rank; layer is -1 for the embedding and
 * head kinds. Asserts that the rank holds it. With head_uses_wte, OC_P_LMW
 * resolves to wte. */
const struct oc_param_tensor *oc_params_tensor(const struct oc_params *p,
                                               enum oc_param_kind k,
                                               int64_t layer);
int oc_params_has(const struct oc_params *p, enum oc_param_kind k, int64_t layer);
float *oc_params_w(const struct oc_params *p, enum oc_param_kind k, int64_t layer);
float *oc_params_g(const struct oc_params *p, enum oc_param_kind k, int64_t layer);
/* The same, or NULL where the model's family has no tensor of kind k (a
 * bias of a Llama block, the position table of a rotary model): what the
 * kernels take for "none". */
float *oc_params_w_opt(const struct oc_params *p, enum oc_param_kind k, int64_t layer);
float *oc_params_g_opt(const struct oc_params *p, enum oc_param_kind k, int64_t layer);

/* The global row of local row r of tensor t (row0 + r, or, for the two
 * parts of OC_SPLIT_ROWS_GLU, the row in the part it falls in). */
int64_t oc_params_global_row(const struct oc_param_tensor *t, int64_t r);

void oc_params_zero_grad(struct oc_params *p);

/* The gradient that the runner all-reduces (sum) over the EMBED group when
 * embeddings are tied and the pipeline has more than one stage: wte's on
 * the first stage, the lmw copy's on the last. Returns NULL (and *n = 0)
 * when the rank holds no such tensor, or holds both (one pipeline stage:
 * then embedding and head already add into one buffer). */
float *oc_params_tied_grad(const struct oc_params *p, int64_t *n);

/* Value of global element (row, col) of tensor (kind, layer) as
 * oc_params_init sets it. */
float oc_params_init_value(const struct oc_model *m, uint64_t seed,
                           enum oc_param_kind kind, int64_t layer,
                           int64_t row, int64_t col);

/* AdamW (Loshchilov & Hutter 2019, algorithm 2, as torch.optim.AdamW):
 *   w -= lr*wd*w  (decay tensors only)
 *   m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
 *   w -= lr * (m/(1-b1^k)) / (sqrt(v/(1-b2^k)) + eps)
 * on the slices the moments hold (the whole arena, or this DP rank's
 * ZeRO-1 slice of every tensor); k = step counted from 1; struct oc_adamw
 * is kernels/ops.h's. The arena is in the kernels' memory: each run of
 * slices that lie back to back in w and in m, v and share the decay flag
 * is one call of the kernels' adamw. Element-wise, so deterministic. No
 * gradient clipping (that needs a norm over every rank: the runner's). */
void oc_params_adamw(const struct oc_kernels *k, struct oc_params *p,
                     const struct oc_adamw *h, int64_t step);

/* Shard <-> whole tensor. `arena` is p->w or p->g (or any buffer with the
 * arena's layout; m and v with opt_d = 1); `full` is the whole (grows, gcols)
 * tensor, row-major. put writes the shard into its global position of full
 * (call it for every TP rank to assemble the tensor); take reads it back. */
void oc_params_put_full(const struct oc_params *p, const float *arena,
                        const struct oc_param_tensor *tensor, float *full);
void oc_params_take_full(const struct oc_params *p, float *arena,
                         const struct oc_param_tensor *tensor,
                         const float *full);

/* Write every tensor of a shard into a whole-model buffer: `whole` is a
 * tp=1 oc_params holding every layer, embedding and head (its arena layout
 * is the one-file model), `dst` one of its arenas. A tied lmw copy is
 * written to whole's wte (it equals wte after the EMBED all-reduce and
 * update). Call it for every rank to gather the model. */
void oc_params_put_whole(const struct oc_params *shard, const float *src,
                         const struct oc_params *whole, float *dst);

const char *oc_param_name(enum oc_param_kind k);

#endif
