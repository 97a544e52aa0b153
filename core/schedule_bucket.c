/* schedule_bucket.c: Megatron-Core's DP gradient buckets of a chunk (see
 * schedule_bucket.h). */
#include "schedule_bucket.h"

#include "placement.h"
#include "status.h"

int64_t oc_dp_bucket_size(const struct oc_layout *l)
{
    const int64_t dg = l->dp * (l->cp > 1 ? l->cp : 1);
    const int64_t scaled = 1000000 * dg;
    return scaled > 40000000 ? scaled : 40000000;
}

int64_t oc_dp_buckets_cap(const struct oc_model *m, const struct oc_layout *l)
{
    const int64_t n = oc_place_max_stage_layers(l, m);
    return n > 1 ? n : 1;
}

/* A TP rank's embedding and head parameters, as memory.c's
 * oc_mem_stage_params counts them. */
static double embed_params(const struct oc_model *m, const struct oc_layout *l)
{
    const int64_t h = m->hidden_size, rows = (m->vocab_size + l->tp - 1) / l->tp;
    return (double)(rows * h + (m->learned_pos_emb ? m->max_position_embeddings * h : 0));
}

static double head_params(const struct oc_model *m, const struct oc_layout *l, int64_t stage)
{
    const int64_t h = m->hidden_size, rows = (m->vocab_size + l->tp - 1) / l->tp;
    double n = (double)((int64_t)m->norm_params_per_h * h);
    /* tied with p == 1: the embedding is the head, its gradient complete
     * only after the embedding's backward (counted there) */
    if (!m->tie_word_embeddings || !oc_place_stage_has_embed(l, stage))
        n += (double)(rows * h);
    return n;
}

int64_t oc_dp_buckets(const struct oc_model *m, const struct oc_layout *l,
                      int64_t stage, int64_t chunk, int64_t size,
                      struct oc_dp_bucket *b)
{
    OC_ASSERT(size > 0);
    const struct oc_layer_range lr = oc_place_chunk_layers(l, m, stage, chunk);
    const int head = oc_place_holds_head(l, stage, chunk);
    const int embed = oc_place_holds_embed(l, stage, chunk);
    const double lp = (double)oc_model_layer_params_tp(m, l->tp);
    const double hp = head ? head_params(m, l, stage) : 0.0;
    const double ep = embed ? embed_params(m, l) : 0.0;
    if (lr.count == 0) {
        b[0] = (struct oc_dp_bucket){lr.first, 0, head, embed, hp + ep};
        return 1;
    }
    int64_t n = 0;
    struct oc_dp_bucket cur = {0, 0, 0, 0, 0.0};
    for (int64_t j = lr.count - 1; j >= 0; j--) {
        if (cur.layer_count == 0)
            cur = (struct oc_dp_bucket){lr.first + j, 0, 0, 0, 0.0};
        cur.layer_first = lr.first + j;
        cur.layer_count++;
        cur.params += lp;
        if (j == lr.count - 1 && head) {
            cur.head = 1;
            cur.params += hp;
        }
        if (j == 0 && embed) {
            cur.embed = 1;
            cur.params += ep;
        }
        if (cur.params >= (double)size || j == 0) {
            b[n++] = cur;
            cur.layer_count = 0;
        }
    }
    return n;
}
