/* placement.h: where the model sits on the pipeline. Which global chunk a
 * stage's local chunk is, which layers it holds, which stage and chunk hold
 * the embedding and the LM head, and which stages share the tied word
 * embedding. The one place these facts are written: the schedule, the
 * memory and cost models and the executor ask here.
 *
 *   // tp1-pp4-dp1-v2 on a 16-layer model: 8 global chunks of 2 layers
 *   int64_t g = oc_place_global_chunk(&l, 1, 1);          // 5 = 1*4 + 1
 *   struct oc_layer_range r = oc_place_chunk_layers(&l, &m, 1, 1);
 *                                                         // {10, 2}
 *   struct oc_chunk_at h = oc_place_head(&l);             // {3, 1}
 *   if (oc_place_holds_embed(&l, stage, c)) ...           // stage 0, c 0
 *
 * What it is not: the order in which a stage runs its chunks
 * (oc_schedule_stage_order, schedule.h), how many bytes or parameters a
 * chunk holds (memory.h), or the ranks of a group (oc_schedule_group).
 *
 * Letters: p = PP size, v = model chunks per stage (1 unless interleaved),
 * L = layers, Lc = L/(p*v) layers per chunk of an even split, n_i the
 * layers of stage i.
 *
 * Model order (Megatron-LM's interleaved assignment, Narayanan et al. 2021,
 * "Efficient Large-Scale Language Model Training on GPU Clusters Using
 * Megatron-LM", section 2.2.1): global chunk g = c*p + i is local chunk c
 * of stage i and holds layers [g*Lc, (g+1)*Lc). Global chunk 0 (chunk 0 of
 * stage 0) carries the embedding before its layers, global chunk p*v-1
 * (chunk v-1 of stage p-1) the final norm and LM head after its layers.
 * Without interleaving (v = 1) stage i holds layers [i*L/p, (i+1)*L/p).
 *
 * Uneven stages (layout.h's first_stage_layers, last_stage_layers;
 * Megatron-LM --decoder-first-pipeline-num-layers and
 * --decoder-last-pipeline-num-layers): stage 0 holds n_0 = first layers,
 * stage p-1 n_{p-1} = last, and the stages between split the rest evenly
 * (a stage whose count is not given is one of those). With v chunks per
 * stage, stage i's n_i layers are spread evenly over its v chunks, n_i/v
 * each, so every n_i must be a multiple of v (Megatron-LM's rule: the
 * first and last stage's counts divisible by the virtual pipeline size,
 * and the middle stages' too). The model order stays the interleaved one:
 * global chunk g = c*p + i holds n_i/v layers, starting after the chunks
 * before it, so chunk c of stage i starts at layer
 *   c*L/v + (n_0 + ... + n_{i-1})/v.
 * Without first/last every n_i is L/p and this is [g*Lc, (g+1)*Lc).
 * 80 layers on pp12 with first5 and last5: stages 1..10 hold 70/10 = 7.
 *
 * Uneven chunks (layout.h's uneven_chunks, layout part unevenv; not
 * Megatron-LM's, whose TransformerConfig refuses stage layers that v does
 * not divide): Llama 3's balanced pipeline (Dubey et al. 2024,
 * arXiv:2407.21783, section 3.3.2: one layer fewer on the first and the
 * last stage, "the first model chunk on the first stage has only the
 * embedding, and the last model chunk on the last stage has only output
 * projection and loss calculation"). Stage i's n_i layers spread over its
 * v chunks as evenly as possible, n_i/v or n_i/v + 1 each; the n_i % v
 * heavier chunks are the last ones on the embedding's stage (the
 * embedding's chunk 0 the lighter) and the first ones on every other
 * stage (the head's chunk v-1 the lighter). Model order as above: global
 * chunk g = c*p + i starts after the layers of the chunks before it.
 * Every chunk holds a layer but the embedding's and the head's, which may
 * hold none (n_0 and n_{p-1} at least v-1, the others at least v). 126
 * layers on pp16 v8 with first7 and last7: stage 0's chunk 0 holds the
 * embedding alone and chunks 1..7 a layer each, the middle stages a layer
 * a chunk, stage 15's chunks 0..6 a layer each and chunk 7 the head alone.
 *
 * Tied embeddings (Megatron-LM's embedding group): with
 * tie_word_embeddings and p > 1 the head stage keeps a copy of the word
 * embedding, and the embedding stage and the head stage all-reduce the two
 * gradients (schedule.h, OC_GROUP_EMBED). With p == 1 one stage holds both
 * and the head reads the embedding itself.
 *
 * The functions take any layout whose sizes are at least 1 (vchunks below
 * 1 counts as 1) and whose split passes oc_place_check_split, and assert
 * the stage, chunk and layer ranges.
 */
#ifndef OC_PLACEMENT_H
#define OC_PLACEMENT_H

#include <stdint.h>

#include "layout.h"
#include "model.h"
#include "status.h"

/* A model chunk by where it runs: local chunk `chunk` of pipeline stage
 * `stage`. */
struct oc_chunk_at {
    int64_t stage, chunk;
};

/* Global layers [first, first + count). */
struct oc_layer_range {
    int64_t first, count;
};

/* v, and p*v: the model's chunks in all. */
int64_t oc_place_chunks_per_stage(const struct oc_layout *l);
int64_t oc_place_global_chunks(const struct oc_layout *l);
/* The chunks per stage the schedule interleaves: v under the interleaved
 * schedule, else 1 (also for a layout that names v with another schedule,
 * which oc_layout_validate refuses). The v of the bubble (p-1)/(v*m + p-1)
 * and of the unit order (oc_schedule_stage_order). */
int64_t oc_place_interleaved_chunks(const struct oc_layout *l);

/* g = chunk*p + stage, and back: stage g % p, chunk g / p. */
int64_t oc_place_global_chunk(const struct oc_layout *l, int64_t stage,
                              int64_t chunk);
struct oc_chunk_at oc_place_chunk_at(const struct oc_layout *l, int64_t g);

/* Whether the layout names first/last stage layers. */
int oc_place_uneven(const struct oc_layout *l);
/* Whether m's layers split over l's stages and chunks as above: L
 * divisible by p*v without first/last; with them PP >= 2, every stage at
 * least 1 layer, the middle stages an even split of the rest, and with
 * v > 1 every stage's layers a multiple of v. One line naming the numbers
 * when not (oc_layout_validate and oc_schedule_build call it). */
int oc_place_check_split(const struct oc_layout *l, const struct oc_model *m,
                         struct oc_status *st);
/* n_i: the layers of `stage` (all v chunks), and the most of any stage. */
int64_t oc_place_stage_layers(const struct oc_layout *l,
                              const struct oc_model *m, int64_t stage);
int64_t oc_place_max_stage_layers(const struct oc_layout *l,
                                  const struct oc_model *m);

/* The layers chunk `chunk` of `stage` holds: n_i/v of them from
 * c*L/v + (n_0 + ... + n_{i-1})/v on ([g*Lc, (g+1)*Lc) when even; under
 * unevenv n_i/v or one more, after the chunks before it in model order). */
struct oc_layer_range oc_place_chunk_layers(const struct oc_layout *l,
                                            const struct oc_model *m,
                                            int64_t stage, int64_t chunk);
/* The most layers of any chunk (n_i/v of the largest stage but under
 * unevenv). */
int64_t oc_place_max_chunk_layers(const struct oc_layout *l, const struct oc_model *m);
/* The chunk that holds global layer `layer` (global chunk layer / Lc when
 * even). */
struct oc_chunk_at oc_place_layer_chunk(const struct oc_layout *l,
                                        const struct oc_model *m,
                                        int64_t layer);

/* The embedding's chunk {0, 0} and the head's {p-1, v-1}. */
struct oc_chunk_at oc_place_embed(const struct oc_layout *l);
struct oc_chunk_at oc_place_head(const struct oc_layout *l);
int oc_place_holds_embed(const struct oc_layout *l, int64_t stage,
                         int64_t chunk);
int oc_place_holds_head(const struct oc_layout *l, int64_t stage,
                        int64_t chunk);
int oc_place_stage_has_embed(const struct oc_layout *l, int64_t stage);
int oc_place_stage_has_head(const struct oc_layout *l, int64_t stage);

/* The chunk of `stage` that holds what the stage holds beyond its layers:
 * the embedding's chunk on the embedding stage, else the head's chunk on
 * the head stage; -1 on a stage that holds neither. */
int64_t oc_place_stage_extra_chunk(const struct oc_layout *l, int64_t stage);

/* The stages of Megatron-LM's embedding group, embedding stage first:
 * {0, p-1}, or {0} when p == 1. Writes them to stages[] and returns how
 * many (1 or 2). */
int oc_place_embed_group_stages(const struct oc_layout *l, int64_t stages[2]);

/* Whether `stage` takes part in the tied embedding's gradient all-reduce:
 * tie_word_embeddings, p > 1 and the stage holds the embedding or the
 * head. */
int oc_place_tied_allreduce(const struct oc_layout *l,
                            const struct oc_model *m, int64_t stage);

#endif
