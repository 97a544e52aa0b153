/* memory.h: bytes per GPU, per pipeline stage, from the closed-form model.
 * The schedule's ALLOC/FREE events use these same sizes, so a replay of the
 * events and oc_memory_stage agree wherever the closed form's assumptions
 * hold (1F1B and GPipe; see the tests).
 *
 *   struct oc_mem_breakdown b;
 *   oc_memory_stage(&model, &layout, 0, &b);
 *   printf("%.1f GiB\n", b.total_bytes / 1073741824.0);
 *
 * Sources (the run's precision is the layout's, layout.h):
 * - Weights, gradients, optimizer states (oc_mem_param_bytes). Mixed
 *   precision (bf16, fp16) with Adam: 2 + 2 + 12 bytes per parameter, the
 *   16-bit weights and gradients and the fp32 master weights, momentum and
 *   variance (Rajbhandari et al. 2020, "ZeRO", section 3.1). With fp32
 *   gradients (Megatron's DDP main_grad buffer in fp32, the default for
 *   bf16: layout.h grad_fp32) 2 + 4 + 12 = 18, as Megatron-LM's
 *   docs/source/distrib_optimizer.md tabulates ("bf16 param, fp32 grads":
 *   18, distributed 6 + 12/d). That table's 20 for "fp16 param, fp16
 *   grads" counts the fp32 copies of the gradients the fp16 optimizer
 *   makes inside its step (Float16OptimizerWithFloat16Params); they are
 *   freed by zero_grad before the next forward, so they are not held at
 *   the activation peak and are not counted here. fp32: 4 + 4 + 8,
 *   the weights are the master weights and Adam adds its two fp32 moments
 *   (Kingma and Ba 2015, algorithm 1). The optimizer bytes are divided by d
 *   when optimizer states are sharded (ZeRO stage 1, Megatron
 *   --use-distributed-optimizer).
 * - Activations per layer (Korthikanti et al. 2022, "Reducing Activation
 *   Recomputation in Large Transformer Models", section 4 and table 2), in
 *   bytes for 16-bit activations and 1-byte dropout masks (the paper's
 *   assumption; in fp32 every 2-byte term doubles, masks and the fp32
 *   softmax statistics stay as they are):
 *     no parallelism            s*b*h*(34 + 5*a*s/h)
 *     tensor parallel           s*b*h*(10 + 24/t + 5*a*s/(h*t))
 *     + sequence parallel       s*b*h*(34/t + 5*a*s/(h*t))
 *     selective recompute       drops the 5*a*s/h term
 *     full recompute            2*s*b*h (the layer input; /t with SP)
 *   The paper's GPT block (f = 4h, k = a, dropout) gives exactly these; for
 *   other blocks the same terms are summed from the block's tensors (GQA
 *   shrinks K and V, SwiGLU keeps gate, up and product, no dropout masks
 *   without dropout, a flash kernel keeps no s x s scores).
 * - ZeRO (Rajbhandari et al. 2020, section 5.1-5.3, figure 1): per
 *   parameter 2 + 2 + 12/d bytes with ZeRO-1 (Megatron-LM's distributed
 *   optimizer), 2 + (2 + 12)/d with ZeRO-2 (the gradients sharded too),
 *   (2 + 2 + 12)/d with ZeRO-3 (the parameters too; fp32 alike with
 *   4 + 4 + 8). Sharding needs d > 1: with d = 1 every stage is ZeRO-0's
 *   memory and traffic. ZeRO-2 and 3 add what is held while a unit runs
 *   (oc_mem_zero_transient_bytes; units: schedule_zero.c): ZeRO-3 the
 *   gathered full weights of the unit being computed and, with overlap,
 *   of the next one prefetched (PyTorch FSDP's forward and backward
 *   prefetch), and both the gradients of the unit before their
 *   reduce-scatter; ZeRO-2 those gradients only.
 * - rfull<k> (Megatron-LM --recompute-method block --recompute-num-layers
 *   k): the first k layers of each chunk keep their input only (the full
 *   recompute line above), the others everything that no recompute keeps.
 *   Context parallelism (cp c, schedule_cp.h): s*b becomes the rank's
 *   (s/c)*b tokens and the s^2 terms its (s/c)*s block of scores (its
 *   queries against all keys), so every term divides by c; the logits
 *   too. The optimizer shards over d*c (Megatron-LM's data-parallel group
 *   with CP).
 * - In flight at stage i (0-based): GPipe m micro-batches, 1F1B min(p-i, m)
 *   (Narayanan et al. 2021, section 2.2), interleaved
 *   min((p-i-1)*2 + (v-1)*p + 1, m*v) chunks of L/(p*v) layers (Megatron-LM's
 *   warm-up count plus one). With uneven stages (first/last) a chunk of
 *   stage i holds n_i/v layers (placement.h), so every per-stage term
 *   follows n_i: stage i's layer activations are in-flight * n_i/v layer
 *   terms and its parameters n_i layers' (the peak is the largest stage's
 *   sum, whichever stage that is).
 * - First stage: the embedding's dropout mask (s*b*h, /t with SP); the
 *   embedding output is the first layer's input, already in the layer term.
 *   Last stage: final norm and LM head inputs (4*s*b*h, /t with SP as in
 *   Korthikanti section 4.3) and the fp32 softmax of the vocab-parallel
 *   cross-entropy (4*s*b*V/t), kept until the backward.
 * - Interleaved 1F1B: oc_memory_stage replays the stage's Megatron-LM unit
 *   order to find which chunks (and so how many embedding and head
 *   activations) are in flight at the peak.
 */
#ifndef OC_MEMORY_H
#define OC_MEMORY_H

#include <stdint.h>

#include "layout.h"
#include "model.h"

/* Bytes of one layer's activations kept for backward, one micro-batch. */
double oc_mem_layer_activation_bytes(const struct oc_model *m,
                                     const struct oc_layout *l);
/* Extra activations of the first stage (embedding), one micro-batch. */
double oc_mem_embed_activation_bytes(const struct oc_model *m,
                                     const struct oc_layout *l);
/* Extra activations of the last stage (final norm, LM head input), one
 * micro-batch, without the logits. */
double oc_mem_head_activation_bytes(const struct oc_model *m,
                                    const struct oc_layout *l);
/* The fp32 softmax kept by the vocab-parallel cross-entropy: 4*s*b*V/t. */
double oc_mem_logits_bytes(const struct oc_model *m, const struct oc_layout *l);

/* What one forward of model chunk `chunk` on `stage` keeps for its backward,
 * one micro-batch: the chunk's layer terms (placement.h), plus the embedding term on
 * chunk 0 of stage 0 and the head term on chunk v-1 of stage p-1 (without
 * the logits). The schedule's ALLOC/FREE of activations use this size. */
double oc_mem_chunk_activation_bytes(const struct oc_model *m,
                                     const struct oc_layout *l, int64_t stage,
                                     int64_t chunk);

/* Layers of a chunk of `layers` layers that recompute their forward in
 * the backward (the first ones in model order): all of them under full
 * recompute, the first min(k, layers) under rfull<k>, none otherwise. */
int64_t oc_mem_recomputed_layers(const struct oc_layout *l, int64_t layers);

/* Parameters held by one rank of `stage` (its TP shard of its layers, plus
 * the embedding on the first stage and the LM head on the last). */
int64_t oc_mem_stage_params(const struct oc_model *m, const struct oc_layout *l,
                            int64_t stage);

/* Whether the run keeps, accumulates and reduces its gradients in fp32
 * (layout.h grad_fp32: Megatron-LM's default is on for bf16, off for
 * fp16; always for fp32). */
int oc_mem_grads_fp32(const struct oc_layout *l);

/* Bytes per parameter of a run in l->precision (the sources above). */
struct oc_mem_param_bytes {
    double weight;    /* 2 (bf16, fp16) or 4 (fp32) */
    double grad;      /* 4 with fp32 gradients (oc_mem_grads_fp32), else as
                         the weights: what the DP collectives reduce */
    double optimizer; /* 12 (fp32 master, m, v) or 8 (fp32: m, v), unsharded */
};
struct oc_mem_param_bytes oc_mem_param_bytes(const struct oc_layout *l);

/* Parameters of model chunk `chunk` on one rank of `stage` beyond its
 * layers (embedding, final norm, LM head; 0 on the stage's other chunks):
 * one ZeRO-3 unit of its own (schedule_zero.c). */
double oc_mem_chunk_extra_params(const struct oc_model *m, const struct oc_layout *l,
                                 int64_t stage, int64_t chunk);
/* ZeRO-2 and ZeRO-3's bytes held for the unit running at a stage's peak
 * (see "ZeRO" above; 0 for ZeRO-0 and 1 and with d = 1): with E the
 * stage's extra parameters, P one layer's (its TP shard), w and g the
 * bytes per weight and gradient, ZeRO-2 g*(E + P), ZeRO-3
 * w*(E + n*P) + g*(E + P), n = 2 with overlap (the prefetched layer) and
 * chunks of two layers or more, else 1. */
double oc_mem_zero_transient_bytes(const struct oc_model *m, const struct oc_layout *l,
                                   int64_t stage);

/* Chunk-micro-batches whose activations a stage holds at its peak. */
int64_t oc_mem_inflight(const struct oc_layout *l, int64_t stage);

struct oc_mem_breakdown {
    int64_t stage;
    int64_t params;            /* parameters on one rank of this stage */
    double weights_bytes;      /* oc_mem_param_bytes per parameter (/d ZeRO-3) */
    double grads_bytes;        /* /d with ZeRO-2 and 3 */
    double optimizer_bytes;    /* /d if sharded; with compress_bytes */
    double compress_bytes;     /* of it: the DP exchange's error-feedback
                                  residuals and PowerSGD's P and Q
                                  (compress.h), never sharded */
    double zero_transient_bytes; /* oc_mem_zero_transient_bytes */
    double activations_bytes;  /* in-flight layer + embedding + head activations */
    double logits_bytes;       /* in-flight fp32 softmax (last stage) */
    double total_bytes;
    int64_t inflight;          /* chunk-micro-batches held at the peak */
};

void oc_memory_stage(const struct oc_model *m, const struct oc_layout *l,
                     int64_t stage, struct oc_mem_breakdown *out);
/* The largest stage total; *worst_stage (may be NULL) gets its index. */
double oc_memory_peak(const struct oc_model *m, const struct oc_layout *l,
                      int64_t *worst_stage);

#endif
