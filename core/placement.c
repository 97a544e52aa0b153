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

/* The stages that split the layers left by first/last evenly, and those
 * layers. */
static void middle_of(const struct oc_layout *l, const struct oc_model *m,
                      int64_t *stages, int64_t *layers)
{
    *stages = l->pp - (l->first_stage_layers > 0) - (l->last_stage_layers > 0);
    *layers = m->num_hidden_layers - l->first_stage_layers - l->last_stage_layers;
}

int oc_place_uneven(const struct oc_layout *l)
{
    return l->first_stage_layers > 0 || l->last_stage_layers > 0;
}

/* unevenv (placement.h, "Uneven chunks"): every chunk at least one layer
 * but the embedding's and the head's, which may hold none. */
static int check_uneven_chunks(const struct oc_layout *l, const struct oc_model *m,
                               struct oc_status *st)
{
    const int64_t v = oc_place_chunks_per_stage(l), p = l->pp;
    if (v < 2)
        return oc_fail(st, "unevenv (uneven chunks) needs the interleaved schedule with "
                           "v >= 2 chunks per stage");
    for (int64_t i = 0; i < p; i++) {
        const int64_t n = oc_place_stage_layers(l, m, i);
        const int64_t least = i == 0 || i == p - 1 ? v - 1 : v;
        if (n < least)
            return oc_fail(st, "unevenv: stage %lld's %lld layers leave a chunk of its v%lld "
                               "without a layer (only the embedding's and the head's "
                               "chunks may hold none)",
                           (long long)i, (long long)n, (long long)v);
    }
    return 0;
}

int oc_place_check_split(const struct oc_layout *l, const struct oc_model *m,
                         struct oc_status *st)
{
    const int64_t L = m->num_hidden_layers, p = l->pp;
    const int64_t v = oc_place_chunks_per_stage(l);
    const int64_t f = l->first_stage_layers, e = l->last_stage_layers;
    if (f < 0 || e < 0)
        return oc_fail(st, "the first and last stage's layers must be at least 1");
    if (!oc_place_uneven(l)) {
        if (L % (p * v) == 0 || (l->uneven_chunks && L % p == 0))
            return l->uneven_chunks ? check_uneven_chunks(l, m, st) : 0;
        if (v > 1)
            return oc_fail(st, "num_hidden_layers %lld is not divisible by "
                               "PP*v = %lld*%lld = %lld",
                           (long long)L, (long long)p, (long long)v,
                           (long long)(p * v));
        return oc_fail(st, "num_hidden_layers %lld is not divisible by PP %lld",
                       (long long)L, (long long)p);
    }
    if (p < 2)
        return oc_fail(st, "first/last stage layers (first%lld, last%lld) need PP >= 2 "
                           "(got PP %lld)",
                       (long long)f, (long long)e, (long long)p);
    int64_t ms, ml;
    middle_of(l, m, &ms, &ml);
    if (ms == 0 && ml != 0)
        return oc_fail(st, "with PP 2, first%lld + last%lld must be the %lld layers",
                       (long long)f, (long long)e, (long long)L);
    if (ml < ms)
        return oc_fail(st, "first%lld and last%lld leave %lld of the %lld layers for "
                           "the %lld other stage%s (each needs at least 1)",
                       (long long)f, (long long)e, (long long)ml, (long long)L,
                       (long long)ms, ms == 1 ? "" : "s");
    /* Megatron-LM (TransformerConfig): the stages between split the rest
     * evenly. */
    if (ms > 0 && ml % ms != 0)
        return oc_fail(st, "the %lld layers left by first%lld and last%lld do not "
                           "split evenly over the %lld other stages",
                       (long long)ml, (long long)f, (long long)e, (long long)ms);
    if (l->uneven_chunks)
        return check_uneven_chunks(l, m, st);
    /* Megatron-LM: with a virtual pipeline every stage's layers divide
     * into its v chunks. */
    if (v > 1 && (f % v != 0 || e % v != 0 || (ms > 0 && (ml / ms) % v != 0)))
        return oc_fail(st, "with v%lld chunks per stage every stage's layers must be "
                           "a multiple of %lld (first%lld, last%lld, %lld on each "
                           "other stage; unevenv spreads them as evenly as possible)",
                       (long long)v, (long long)v, (long long)f, (long long)e,
                       (long long)(ms > 0 ? ml / ms : 0));
    return 0;
}

int64_t oc_place_stage_layers(const struct oc_layout *l,
                              const struct oc_model *m, int64_t stage)
{
    OC_ASSERT(stage >= 0 && stage < l->pp);
    if (!oc_place_uneven(l))
        return m->num_hidden_layers / l->pp;
    if (stage == 0 && l->first_stage_layers > 0)
        return l->first_stage_layers;
    if (stage == l->pp - 1 && l->last_stage_layers > 0)
        return l->last_stage_layers;
    int64_t ms, ml;
    middle_of(l, m, &ms, &ml);
    OC_ASSERT(ms > 0);
    return ml / ms;
}

int64_t oc_place_max_stage_layers(const struct oc_layout *l,
                                  const struct oc_model *m)
{
    int64_t most = 0;
    for (int64_t i = 0; i < l->pp; i++) {
        const int64_t n = oc_place_stage_layers(l, m, i);
        most = n > most ? n : most;
    }
    return most;
}

/* unevenv: chunk `chunk` of `stage`'s layers, n/v or n/v + 1; the n % v
 * heavier chunks are the last ones on the stage holding the embedding
 * (its chunk 0 the lighter), the first ones elsewhere (the head's chunk
 * v-1 the lighter) (placement.h, "Uneven chunks"). */
static int64_t uneven_chunk_count(const struct oc_layout *l, const struct oc_model *m,
                                  int64_t stage, int64_t chunk)
{
    const int64_t v = oc_place_chunks_per_stage(l), n = oc_place_stage_layers(l, m, stage);
    const int64_t q = n / v, r = n % v;
    const int heavy = oc_place_stage_has_embed(l, stage) ? chunk >= v - r : chunk < r;
    return q + (heavy ? 1 : 0);
}

/* unevenv: the chunks before global chunk g = c*p + i in model order
 * hold the layers before it. */
static struct oc_layer_range uneven_chunk_layers(const struct oc_layout *l,
                                                const struct oc_model *m, int64_t stage,
                                                int64_t chunk)
{
    int64_t first = 0;
    for (int64_t c = 0; c <= chunk; c++)
        for (int64_t j = 0; j < l->pp && (c < chunk || j < stage); j++)
            first += uneven_chunk_count(l, m, j, c);
    return (struct oc_layer_range){first, uneven_chunk_count(l, m, stage, chunk)};
}

int64_t oc_place_max_chunk_layers(const struct oc_layout *l, const struct oc_model *m)
{
    const int64_t v = oc_place_chunks_per_stage(l);
    if (!l->uneven_chunks)
        return oc_place_max_stage_layers(l, m) / v;
    int64_t most = 0;
    for (int64_t i = 0; i < l->pp; i++)
        for (int64_t c = 0; c < v; c++) {
            const int64_t n = uneven_chunk_count(l, m, i, c);
            most = n > most ? n : most;
        }
    return most;
}

struct oc_layer_range oc_place_chunk_layers(const struct oc_layout *l,
                                            const struct oc_model *m,
                                            int64_t stage, int64_t chunk)
{
    const int64_t v = oc_place_chunks_per_stage(l);
    OC_ASSERT(chunk >= 0 && chunk < v);
    if (l->uneven_chunks)
        return uneven_chunk_layers(l, m, stage, chunk);
    /* One round of global chunks (c*p .. c*p + p-1) holds L/v layers, a
     * stage n_i/v of them (placement.h). */
    const int64_t n = oc_place_stage_layers(l, m, stage);
    /* the stages before: stage 0, then stage-1 stages of the middle's
     * (only stage p-1 may differ, and none comes after it) */
    int64_t before = 0;
    if (stage >= 1)
        before += oc_place_stage_layers(l, m, 0);
    if (stage >= 2) /* stage 1 is a middle stage then */
        before += (stage - 1) * oc_place_stage_layers(l, m, 1);
    struct oc_layer_range r = {chunk * (m->num_hidden_layers / v) + before / v, n / v};
    return r;
}

struct oc_chunk_at oc_place_layer_chunk(const struct oc_layout *l,
                                        const struct oc_model *m,
                                        int64_t layer)
{
    OC_ASSERT(layer >= 0 && layer < m->num_hidden_layers);
    const int64_t n = oc_place_global_chunks(l);
    for (int64_t g = 0; g < n; g++) {
        const struct oc_chunk_at at = oc_place_chunk_at(l, g);
        const struct oc_layer_range r = oc_place_chunk_layers(l, m, at.stage, at.chunk);
        if (layer < r.first + r.count)
            return at;
    }
    OC_ASSERT(0); /* the chunks hold every layer */
    return oc_place_chunk_at(l, n - 1);
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
