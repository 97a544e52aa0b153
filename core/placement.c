/* placement.c: where the model sits on the pipeline (see placement.h for
 * the model order and its source).
 *
 * What this file is: the chunk <-> (stage, local chunk) <-> layers
 * arithmetic and the embedding, head and tied-embedding facts. What it is
 * not: a schedule (schedule.c) or a size model (memory.c).
 */
#include "placement.h"

#include "status.h"

int64_t oc_place_chunks_per_stage(const struct oc_layout *l)
{
    return l->vchunks >= 1 ? l->vchunks : 1;
}

int64_t oc_place_global_chunks(const struct oc_layout *l)
{
    OC_ASSERT(l->pp >= 1);
    return l->pp * oc_place_chunks_per_stage(l);
}

int64_t oc_place_interleaved_chunks(const struct oc_layout *l)
{
    return l->schedule == OC_SCHED_INTERLEAVED ? oc_place_chunks_per_stage(l) : 1;
}

int64_t oc_place_global_chunk(const struct oc_layout *l, int64_t stage,
                              int64_t chunk)
{
    OC_ASSERT(stage >= 0 && stage < l->pp);
    OC_ASSERT(chunk >= 0 && chunk < oc_place_chunks_per_stage(l));
    return chunk * l->pp + stage;
}

struct oc_chunk_at oc_place_chunk_at(const struct oc_layout *l, int64_t g)
{
    OC_ASSERT(g >= 0 && g < oc_place_global_chunks(l));
    struct oc_chunk_at at = {g % l->pp, g / l->pp};
    return at;
}

struct oc_layer_range oc_place_chunk_layers(const struct oc_layout *l,
                                            const struct oc_model *m,
                                            int64_t stage, int64_t chunk)
{
    const int64_t lc = oc_layout_layers_per_chunk(l, m);
    struct oc_layer_range r = {oc_place_global_chunk(l, stage, chunk) * lc, lc};
    return r;
}

struct oc_chunk_at oc_place_layer_chunk(const struct oc_layout *l,
                                        const struct oc_model *m,
                                        int64_t layer)
{
    const int64_t lc = oc_layout_layers_per_chunk(l, m);
    OC_ASSERT(lc >= 1 && layer >= 0 && layer < lc * oc_place_global_chunks(l));
    return oc_place_chunk_at(l, layer / lc);
}

struct oc_chunk_at oc_place_embed(const struct oc_layout *l)
{
    return oc_place_chunk_at(l, 0);
}

struct oc_chunk_at oc_place_head(const struct oc_layout *l)
{
    return oc_place_chunk_at(l, oc_place_global_chunks(l) - 1);
}

int oc_place_holds_embed(const struct oc_layout *l, int64_t stage,
                         int64_t chunk)
{
    return oc_place_global_chunk(l, stage, chunk) == 0;
}

int oc_place_holds_head(const struct oc_layout *l, int64_t stage,
                        int64_t chunk)
{
    return oc_place_global_chunk(l, stage, chunk) ==
           oc_place_global_chunks(l) - 1;
}

int oc_place_stage_has_embed(const struct oc_layout *l, int64_t stage)
{
    OC_ASSERT(stage >= 0 && stage < l->pp);
    return stage == oc_place_embed(l).stage;
}

int oc_place_stage_has_head(const struct oc_layout *l, int64_t stage)
{
    OC_ASSERT(stage >= 0 && stage < l->pp);
    return stage == oc_place_head(l).stage;
}

int64_t oc_place_stage_extra_chunk(const struct oc_layout *l, int64_t stage)
{
    if (oc_place_stage_has_embed(l, stage))
        return oc_place_embed(l).chunk;
    if (oc_place_stage_has_head(l, stage))
        return oc_place_head(l).chunk;
    return -1;
}

int oc_place_embed_group_stages(const struct oc_layout *l, int64_t stages[2])
{
    stages[0] = oc_place_embed(l).stage;
    stages[1] = oc_place_head(l).stage;
    return stages[1] != stages[0] ? 2 : 1;
}

int oc_place_tied_allreduce(const struct oc_layout *l,
                            const struct oc_model *m, int64_t stage)
{
    int64_t stages[2];
    const int n = oc_place_embed_group_stages(l, stages);
    return m->tie_word_embeddings && n == 2 &&
           (stage == stages[0] || stage == stages[1]);
}
