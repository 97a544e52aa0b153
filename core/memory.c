/* memory.c: bytes per GPU of one pipeline stage, from the closed-form model
 * (see memory.h for the sources). It is the reference the schedule's
 * ALLOC/FREE events are sized from; it does not walk a schedule, except for
 * the interleaved 1F1B peak, where it replays the stage's unit order
 * (Megatron-LM's, from oc_schedule_warmup and oc_schedule_unit in
 * schedule_order.c) because which chunks are in flight at the peak decides
 * how many embedding and head activations count.
 *
 * Letters: s sequence, b micro-batch, h hidden, a heads, k KV heads,
 * f intermediate, V vocabulary, P positions, L layers, t TP, p PP, d DP,
 * v chunks per stage, m micro-batches per step, e the bytes of an
 * activation element (2: bf16 or fp16, 4: fp32; oc_layout_act_bytes).
 * Dropout masks are 1 byte, softmax statistics fp32, whatever e is.
 * What is not counted: transient buffers of the op running at the peak
 * (for example the full activations of the one layer being recomputed),
 * communication staging and allocator fragmentation.
 */
#include "memory.h"

#include "compress.h"

#include <stdlib.h>
#include <string.h>

#include "placement.h"
#include "schedule.h"
#include "status.h"

/* Bytes per element that do not follow the run's precision (Korthikanti
 * et al. 2022, section 4.1: 1-byte dropout masks). */
#define MASK_BYTES 1.0
#define FP32_BYTES 4.0

static int64_t ceil_div(int64_t x, int64_t y)
{
    OC_ASSERT(y > 0);
    return (x + y - 1) / y;
}

/* Rows of the tensors TP keeps whole on every rank (norm inputs and
 * outputs, residuals, dropout masks on h-wide tensors): all s*b tokens, or
 * s*b/t under sequence parallelism (Korthikanti section 4.2.2). */
static double replicated_tokens(const struct oc_layout *l)
{
    double tokens = (double)oc_layout_local_seq(l) * (double)l->micro_batch;
    return l->sequence_parallel ? tokens / (double)l->tp : tokens;
}

double oc_mem_layer_activation_bytes(const struct oc_model *m,
                                     const struct oc_layout *l)
{
    OC_ASSERT(l->tp >= 1 && l->seq_length >= 1 && l->micro_batch >= 1);
    /* Context parallelism (schedule_cp.h): every tensor holds the rank's
     * s/c tokens (sb below); the s x s terms are its s/c queries against
     * all s keys (s below). */
    const double s = (double)l->seq_length, b = (double)l->micro_batch;
    const double h = (double)m->hidden_size;
    const double sb = (double)oc_layout_local_seq(l) * b;
    const double sb_rep = replicated_tokens(l);
    const double e = oc_layout_act_bytes(l);

    /* Full recompute keeps only the layer input (Korthikanti section 5,
     * "2sbh"), split over t by sequence parallelism. */
    if (l->recompute == OC_RECOMPUTE_FULL)
        return e * sb_rep * h;

    /* Per-rank widths: heads, KV heads (GQA replicates a KV head when
     * k < t, as Megatron-LM does) and the MLP's intermediate size. */
    const double hd = (double)oc_model_head_dim(m);
    const double a_rank = (double)ceil_div(m->num_attention_heads, l->tp);
    const double k_rank = (double)ceil_div(m->num_key_value_heads, l->tp);
    const double f_rank = (double)ceil_div(m->intermediate_size, l->tp);
    const double q_width = a_rank * hd;  /* h/t */
    const double kv_width = k_rank * hd; /* k*h/(a*t) */
    const int dropout = m->has_dropout != 0;
    double bytes = 0;

    /* Attention block (Korthikanti section 4.1, "11sbh + 5as^2b"). */
    bytes += e * sb_rep * h;        /* QKV input (norm output): 2sbh */
    bytes += e * sb * q_width;      /* Q: 2sbh/t */
    bytes += e * sb * kv_width;     /* K: 2sbh/t, times k/a with GQA */
    bytes += e * sb * kv_width;     /* V: 2sbh/t, times k/a with GQA */
    if (l->recompute != OC_RECOMPUTE_SELECTIVE) {
        /* Core-attention internals; selective recompute recomputes them
         * (Korthikanti section 5) so they are not kept. */
        if (l->attention == OC_ATTN_FLASH) {
            /* A fused kernel keeps no s x s tensor, only the fp32 softmax
             * log-sum-exp per row and head (Dao et al. 2022, algorithm 2). */
            bytes += FP32_BYTES * a_rank * sb;
        } else {
            bytes += e * a_rank * s * sb; /* softmax out: 2as^2b/t */
            if (dropout) {
                bytes += MASK_BYTES * a_rank * s * sb; /* mask: as^2b/t */
                bytes += e * a_rank * s * sb;  /* dropout out: 2as^2b/t */
            }
        }
    }
    bytes += e * sb * q_width;      /* output-projection input: 2sbh/t */
    if (dropout)
        bytes += MASK_BYTES * sb_rep * h;   /* dropout mask: sbh */

    /* MLP block ("19sbh" for f = 4h). The f-wide tensors kept: GELU keeps
     * the first GEMM output and the GELU output (8sbh + 8sbh for f = 4h);
     * SwiGLU keeps gate output, up output and their product. */
    bytes += e * sb_rep * h;        /* MLP input (norm output): 2sbh */
    bytes += (m->gated_mlp ? 3.0 : 2.0) * e * sb * f_rank;
    if (dropout)
        bytes += MASK_BYTES * sb_rep * h;   /* dropout mask: sbh */

    /* The two norms' inputs: 4sbh. */
    bytes += 2.0 * e * sb_rep * h;
    return bytes;
}

double oc_mem_embed_activation_bytes(const struct oc_model *m,
                                     const struct oc_layout *l)
{
    /* Korthikanti section 4.3: the embedding keeps its dropout mask (sbh,
     * /t with sequence parallelism). The embedding output is the first
     * layer's input, already counted in oc_mem_layer_activation_bytes (its
     * norm input, or under full recompute its 2sbh). */
    if (!m->has_dropout)
        return 0;
    return MASK_BYTES * replicated_tokens(l) * (double)m->hidden_size;
}

double oc_mem_head_activation_bytes(const struct oc_model *m,
                                    const struct oc_layout *l)
{
    /* Korthikanti section 4.3 counts the output layer as 4sbh/t (1 + v/h)
     * with sequence parallelism: the final norm input 2sbh/t and the LM
     * head input 2sbh/t (the 4sbv/t is oc_mem_logits_bytes). We divide the
     * head input by t under SP as the paper does: Megatron-LM's
     * column-parallel linear keeps its input before the sequence all-gather
     * and gathers it again in backward. Without SP both are whole (4sbh). */
    return 2.0 * oc_layout_act_bytes(l) * replicated_tokens(l) * (double)m->hidden_size;
}

double oc_mem_logits_bytes(const struct oc_model *m, const struct oc_layout *l)
{
    /* Korthikanti section 4.3: the vocab-parallel cross-entropy keeps fp32
     * softmax values of its V/t vocabulary shard, 4sbV/t. */
    return FP32_BYTES * (double)oc_layout_local_seq(l) * (double)l->micro_batch *
           (double)m->vocab_size / (double)l->tp;
}

int64_t oc_mem_recomputed_layers(const struct oc_layout *l, int64_t layers)
{
    if (l->recompute != OC_RECOMPUTE_FULL)
        return 0;
    if (l->recompute_layers > 0 && l->recompute_layers < layers)
        return l->recompute_layers;
    return layers;
}

/* The layer terms of a chunk of `layers` layers: under rfull<k> the first
 * k keep their input (Korthikanti section 5, 2sbh), the others what no
 * recompute keeps (Megatron-LM --recompute-method block runs them
 * without checkpointing). */
static double chunk_layers_bytes(const struct oc_model *m, const struct oc_layout *l,
                                 int64_t layers)
{
    const int64_t r = oc_mem_recomputed_layers(l, layers);
    double bytes = (double)r * oc_mem_layer_activation_bytes(m, l);
    if (r < layers) {
        struct oc_layout kept = *l;
        kept.recompute = l->recompute == OC_RECOMPUTE_FULL ? OC_RECOMPUTE_NONE
                                                           : l->recompute;
        kept.recompute_layers = 0;
        bytes += (double)(layers - r) * oc_mem_layer_activation_bytes(m, &kept);
    }
    return bytes;
}

/* A chunk's activations, its layers' (chunk_layers_bytes) given. */
static double chunk_activation_bytes(const struct oc_model *m, const struct oc_layout *l,
                                     int64_t stage, int64_t chunk, double layers_bytes)
{
    double bytes = layers_bytes;
    if (oc_place_holds_embed(l, stage, chunk))
        bytes += oc_mem_embed_activation_bytes(m, l);
    if (oc_place_holds_head(l, stage, chunk))
        bytes += oc_mem_head_activation_bytes(m, l);
    return bytes;
}

double oc_mem_chunk_activation_bytes(const struct oc_model *m,
                                     const struct oc_layout *l, int64_t stage,
                                     int64_t chunk)
{
    return chunk_activation_bytes(
        m, l, stage, chunk,
        chunk_layers_bytes(m, l, oc_place_chunk_layers(l, m, stage, chunk).count));
}

int64_t oc_mem_stage_params(const struct oc_model *m, const struct oc_layout *l,
                            int64_t stage)
{
    OC_ASSERT(stage >= 0 && stage < l->pp);
    const int64_t h = m->hidden_size;
    /* Megatron-LM pads the vocabulary so every TP rank holds the same
     * number of rows; we pad to the next multiple of t (Megatron pads to a
     * multiple of 128*t, a difference of a few rows). */
    const int64_t vocab_rows = ceil_div(m->vocab_size, l->tp);
    int64_t n = oc_place_stage_layers(l, m, stage) *
                oc_model_layer_params_tp(m, l->tp);
    if (oc_place_stage_has_embed(l, stage)) {
        /* Vocab-parallel word embedding (Shoeybi et al. 2019, section 3)
         * plus the learned position table, which every TP rank keeps. */
        n += vocab_rows * h;
        if (m->learned_pos_emb)
            n += m->max_position_embeddings * h;
    }
    if (oc_place_stage_has_head(l, stage)) {
        n += (int64_t)m->norm_params_per_h * h; /* final norm, whole */
        /* The LM head's V/t rows. Tied and p > 1: Megatron-LM keeps a copy
         * of the word embedding on the last stage (synchronised through the
         * embedding group), so it is counted again. Tied and p == 1: the
         * embedding above is the head. */
        if (!m->tie_word_embeddings || !oc_place_stage_has_embed(l, stage))
            n += vocab_rows * h;
    }
    return n;
}

double oc_mem_chunk_extra_params(const struct oc_model *m, const struct oc_layout *l,
                                 int64_t stage, int64_t chunk)
{
    if (chunk != oc_place_stage_extra_chunk(l, stage))
        return 0;
    int64_t layers = 0;
    for (int64_t c = 0; c < oc_place_chunks_per_stage(l); c++)
        layers += oc_place_chunk_layers(l, m, stage, c).count;
    const double extra = (double)oc_mem_stage_params(m, l, stage) -
                         (double)layers * (double)oc_model_layer_params_tp(m, l->tp);
    return extra > 0 ? extra : 0;
}

double oc_mem_zero_transient_bytes(const struct oc_model *m, const struct oc_layout *l,
                                   int64_t stage)
{
    if (l->zero < 2 || l->dp <= 1)
        return 0;
    const struct oc_mem_param_bytes pb = oc_mem_param_bytes(l);
    double extra = 0;
    int64_t layers = 0; /* the longest chunk */
    for (int64_t c = 0; c < oc_place_chunks_per_stage(l); c++) {
        const double e = oc_mem_chunk_extra_params(m, l, stage, c);
        const int64_t n = oc_place_chunk_layers(l, m, stage, c).count;
        extra = e > extra ? e : extra;
        layers = n > layers ? n : layers;
    }
    const double layer = layers > 0 ? (double)oc_model_layer_params_tp(m, l->tp) : 0.0;
    double bytes = pb.grad * (extra + layer);
    if (l->zero == 3) {
        const double gathered = l->overlap_grad_reduce && layers >= 2 ? 2.0 : 1.0;
        bytes += pb.weight * (extra + gathered * layer);
    }
    return bytes;
}

int oc_mem_grads_fp32(const struct oc_layout *l)
{
    if (l->precision == OC_PREC_FP32)
        return 1;
    if (l->grad_fp32 != 0)
        return l->grad_fp32 > 0;
    /* Megatron-LM arguments.py: bf16 turns on
     * --accumulate-allreduce-grads-in-fp32; fp16 leaves it off. */
    return l->precision == OC_PREC_BF16;
}

struct oc_mem_param_bytes oc_mem_param_bytes(const struct oc_layout *l)
{
    /* memory.h, "Sources": ZeRO section 3.1 for mixed precision, 4-byte
     * gradients under fp32 gradient accumulation (Megatron-LM's
     * distrib_optimizer.md: 18 bytes); in fp32 the weights are Adam's
     * master copy. */
    if (l->precision == OC_PREC_FP32)
        return (struct oc_mem_param_bytes){4.0, 4.0, 8.0};
    return (struct oc_mem_param_bytes){2.0, oc_mem_grads_fp32(l) ? 4.0 : 2.0, 12.0};
}

int64_t oc_mem_inflight(const struct oc_layout *l, int64_t stage)
{
    OC_ASSERT(stage >= 0 && stage < l->pp);
    const int64_t m = oc_layout_num_micro_batches(l);
    const int64_t p = l->pp;
    const int64_t v = oc_place_chunks_per_stage(l);
    int64_t n;
    switch (l->schedule) {
    case OC_SCHED_GPIPE:
        /* Huang et al. 2019: every micro-batch's forward before any
         * backward. */
        n = m * v;
        break;
    case OC_SCHED_1F1B:
        /* Narayanan et al. 2021, section 2.2: stage i runs p-i-1 warm-up
         * forwards and one more before its first backward. (v is 1 for
         * 1F1B; were it more, each micro-batch would hold v chunks.) */
        n = (p - stage < m ? p - stage : m) * v;
        break;
    case OC_SCHED_INTERLEAVED:
    default:
        /* Megatron-LM's warm-up forwards (oc_schedule_warmup), plus one. */
        n = oc_schedule_warmup(l, m, stage) + 1;
        if (n > m * v)
            n = m * v;
        break;
    }
    return n;
}

/* State of a replay: bytes in flight now and at the peak. */
struct walk {
    double cur, cur_logits, best, best_logits;
    int64_t units, max_units;
};

/* The chunks' activation bytes and logits, read once per replay (the walk
 * visits m*v units; a chunk's figures do not depend on the micro-batch). */
struct chunk_fig {
    double act, logits;
};

static void walk_forward(struct walk *w, const struct chunk_fig *c)
{
    w->cur += c->act;
    w->cur_logits += c->logits;
    w->units++;
    if (w->units > w->max_units)
        w->max_units = w->units;
    if (w->cur + w->cur_logits > w->best + w->best_logits) {
        w->best = w->cur;
        w->best_logits = w->cur_logits;
    }
}

static void walk_backward(struct walk *w, const struct chunk_fig *c)
{
    w->cur -= c->act;
    w->cur_logits -= c->logits;
    w->units--;
}

/* The walks of interleaved_peak already done, by their inputs: the unit
 * order's shape (p, v, warm-up and steady lengths) and what the chunks'
 * figures are made of (a chunk's layer bytes, the embedding's and the
 * head's extra bytes and the logits, and which chunk holds each), compared
 * bit for bit, so a hit returns the doubles the walk would. The knob
 * variants a sweep judges one after the other (ZeRO stage, overlap, rank
 * order: memory.h) repeat the activations of a stage with other parameter
 * bytes, and the stage-split search (stage_split.c) asks the same stage
 * classes for every knob set. Direct-mapped on a hash of the inputs; one
 * table per process (the sweep plans in one thread, as the bound's caches:
 * bound_walk.h), still reachable at exit, not a leak. */
#define PEAK_WAYS 4096
struct peak_key {
    int64_t p, v, warm, steady, ke, kh; /* ke, kh: the embedding's and the
                                           head's chunk, -1 none */
    double layers, embed, head, logits;
};
_Static_assert(sizeof(struct peak_key) == 10 * sizeof(uint64_t), "no padding in the key");
struct peak_entry {
    struct peak_key k;
    int used;
    double best, best_logits;
};
static struct peak_entry *peak_cache;

static uint64_t peak_hash(const struct peak_key *k)
{
    uint64_t w[10];
    memcpy(w, k, sizeof w);
    uint64_t h = 1469598103934665603ULL; /* FNV-1a over the key's words */
    for (int i = 0; i < 10; i++)
        h = (h ^ w[i]) * 1099511628211ULL;
    /* the doubles' low bits are mostly zero: fold the high bits down
     * (splitmix64's finaliser) before the table takes h modulo its size */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

/* The chunks of the first n forward and backward units of an interleaved
 * order (oc_schedule_unit: they depend on p and v alone), kept for the
 * next walks of the same (p, v): the walk reads them for every unit. */
#define SEQ_WAYS 8
static struct seq_entry {
    int64_t p, v, n;
    int32_t *fwd, *bwd;
} seq_cache[SEQ_WAYS];
static int seq_next;

static const struct seq_entry *unit_chunks(const struct oc_layout *l, int64_t n)
{
    const int64_t p = l->pp, v = oc_place_interleaved_chunks(l);
    struct seq_entry *e = NULL;
    for (int i = 0; i < SEQ_WAYS && !e; i++)
        if (seq_cache[i].fwd && seq_cache[i].p == p && seq_cache[i].v == v)
            e = &seq_cache[i];
    if (e && e->n >= n)
        return e;
    if (!e) {
        e = &seq_cache[seq_next];
        seq_next = (seq_next + 1) % SEQ_WAYS;
    }
    free(e->fwd);
    free(e->bwd);
    e->p = p, e->v = v, e->n = n > 0 ? n : 1;
    e->fwd = oc_xmalloc((size_t)e->n * sizeof *e->fwd);
    e->bwd = oc_xmalloc((size_t)e->n * sizeof *e->bwd);
    for (int64_t k = 0; k < e->n; k++) {
        e->fwd[k] = oc_schedule_unit(l, k, 0).chunk;
        e->bwd[k] = oc_schedule_unit(l, k, 1).chunk;
    }
    return e;
}

/* Interleaved 1F1B: replay stage `stage`'s unit order (Megatron-LM's,
 * oc_schedule_warmup and oc_schedule_unit) and return the largest sum of
 * in-flight chunk activations (and, through *logits, the logits held at
 * that point): warm-up forwards, then one forward and one backward
 * alternately, then the remaining backwards. Chunk sizes depend only on the
 * chunk, so which micro-batch a unit carries does not matter here. */
static double interleaved_peak(const struct oc_model *m,
                               const struct oc_layout *l, int64_t stage,
                               double *logits_at_peak)
{
    const int64_t mb = oc_layout_num_micro_batches(l);
    const int64_t total = mb * oc_place_interleaved_chunks(l);
    const int64_t warm = oc_schedule_warmup(l, mb, stage);
    const double logit_bytes =
        oc_place_stage_has_head(l, stage) ? oc_mem_logits_bytes(m, l) : 0.0;

    const int64_t v = oc_place_chunks_per_stage(l);
    /* The steady phase repeats with period p*v: the chunk of forward
     * warm+j and of backward j are periodic in j (oc_schedule_unit), and
     * one period runs every chunk p times in each direction, so the
     * in-flight counts after j and j + p*v are the same; the cool-down only
     * frees. One period therefore sees every state the walk reaches. */
    const int64_t steady = total - warm < l->pp * v ? total - warm : l->pp * v;
    /* The chunks' figures from their parts (placement.h): every chunk of
     * a stage holds n_i/v layers; the embedding is global chunk 0 (this
     * stage's chunk 0 or none), the head the last (chunk v-1 or none). */
    struct peak_key key;
    memset(&key, 0, sizeof key); /* the hash reads every byte */
    key.p = l->pp, key.v = v, key.warm = warm, key.steady = steady;
    key.ke = oc_place_holds_embed(l, stage, 0) ? 0 : -1;
    key.kh = oc_place_holds_head(l, stage, v - 1) ? v - 1 : -1;
    key.layers = chunk_layers_bytes(m, l, oc_place_chunk_layers(l, m, stage, 0).count);
    key.embed = key.ke >= 0 ? oc_mem_embed_activation_bytes(m, l) : 0.0;
    key.head = key.kh >= 0 ? oc_mem_head_activation_bytes(m, l) : 0.0;
    key.logits = logit_bytes;
    if (!peak_cache)
        peak_cache = oc_xcalloc(PEAK_WAYS, sizeof *peak_cache);
    struct peak_entry *e = &peak_cache[peak_hash(&key) % PEAK_WAYS];
    /* unevenv (placement.h): chunks of different layers, each its own
     * figure, and a key that does not say so: no cache */
    const int uneven = l->uneven_chunks != 0;
    if (!uneven && e->used && memcmp(&e->k, &key, sizeof key) == 0) {
        *logits_at_peak = e->best_logits;
        return e->best;
    }
    struct chunk_fig small[16];
    struct chunk_fig *c = v <= 16 ? small : oc_xcalloc((size_t)v, sizeof *c);
    for (int64_t k = 0; k < v; k++) {
        const double layers =
            uneven ? chunk_layers_bytes(m, l, oc_place_chunk_layers(l, m, stage, k).count)
                   : key.layers;
        c[k].act = chunk_activation_bytes(m, l, stage, k, layers);
        c[k].logits = oc_place_holds_head(l, stage, k) ? logit_bytes : 0.0;
    }
    const struct seq_entry *u = unit_chunks(l, warm + steady);
    struct walk w = {0};
    for (int64_t k = 0; k < warm; k++)
        walk_forward(&w, &c[u->fwd[k]]);
    for (int64_t j = 0; j < steady; j++) {
        walk_forward(&w, &c[u->fwd[warm + j]]);
        walk_backward(&w, &c[u->bwd[j]]);
    }
    OC_ASSERT(w.units == warm);
    /* The replay and the closed-form count must agree. */
    OC_ASSERT(w.max_units == oc_mem_inflight(l, stage));
    if (!uneven) {
        e->k = key;
        e->best = w.best, e->best_logits = w.best_logits;
        e->used = 1;
    }
    if (c != small)
        free(c);
    *logits_at_peak = w.best_logits;
    return w.best;
}

void oc_memory_stage(const struct oc_model *m, const struct oc_layout *l,
                     int64_t stage, struct oc_mem_breakdown *out)
{
    OC_ASSERT(out != NULL);
    OC_ASSERT(stage >= 0 && stage < l->pp);
    const int64_t mb = oc_layout_num_micro_batches(l);

    out->stage = stage;
    out->params = oc_mem_stage_params(m, l, stage);
    /* ZeRO (Rajbhandari et al. 2020) section 3.1: 2 + 2 + 12 bytes per
     * parameter in mixed precision (4 + 4 + 8 in fp32), the optimizer's
     * sharded over d by ZeRO-1. */
    const double np = (double)out->params;
    const struct oc_mem_param_bytes pb = oc_mem_param_bytes(l);
    out->weights_bytes = pb.weight * np;
    out->grads_bytes = pb.grad * np;
    out->optimizer_bytes = pb.optimizer * np;
    /* ZeRO section 5: stage 1 shards the optimizer states, stage 2 the
     * gradients too, stage 3 the weights too, over the data-parallel group
     * (with CP Megatron-LM's DP x CP group: d*c ranks hold the same
     * parameters; ZeRO-2/3 with CP is refused by oc_layout_validate). */
    const double d = (double)l->dp * (double)(l->cp > 1 ? l->cp : 1);
    if (l->zero >= 1)
        out->optimizer_bytes /= d;
    if (l->zero >= 2)
        out->grads_bytes /= d;
    if (l->zero >= 3)
        out->weights_bytes /= d;
    /* gradient compression's state (compress.h), counted with the
     * optimizer's: the schedule allocates it as an optimizer buffer */
    out->compress_bytes = oc_gc_mem_bytes(m, l, stage);
    out->optimizer_bytes += out->compress_bytes;
    out->zero_transient_bytes = oc_mem_zero_transient_bytes(m, l, stage);
    out->inflight = oc_mem_inflight(l, stage);

    if (l->schedule == OC_SCHED_INTERLEAVED) {
        out->activations_bytes =
            interleaved_peak(m, l, stage, &out->logits_bytes);
    } else {
        /* GPipe and 1F1B: every in-flight micro-batch runs the whole stage,
         * so on stage 0 each carries the embedding's activations and on
         * stage p-1 the head's and the logits. */
        const int64_t v = oc_place_chunks_per_stage(l);
        const int64_t mbs = out->inflight / v; /* micro-batches in flight */
        OC_ASSERT(mbs <= mb);
        out->activations_bytes =
            (double)out->inflight *
            chunk_layers_bytes(m, l, oc_place_chunk_layers(l, m, stage, 0).count);
        out->logits_bytes = 0;
        if (oc_place_stage_has_embed(l, stage))
            out->activations_bytes +=
                (double)mbs * oc_mem_embed_activation_bytes(m, l);
        if (oc_place_stage_has_head(l, stage)) {
            out->activations_bytes +=
                (double)mbs * oc_mem_head_activation_bytes(m, l);
            out->logits_bytes = (double)mbs * oc_mem_logits_bytes(m, l);
        }
    }
    out->total_bytes = out->weights_bytes + out->grads_bytes +
                       out->optimizer_bytes + out->zero_transient_bytes +
                       out->activations_bytes + out->logits_bytes;
}

double oc_memory_peak(const struct oc_model *m, const struct oc_layout *l,
                      int64_t *worst_stage)
{
    double best = -1;
    int64_t worst = 0;
    for (int64_t i = 0; i < l->pp; i++) {
        struct oc_mem_breakdown b;
        oc_memory_stage(m, l, i, &b);
        if (b.total_bytes > best) {
            best = b.total_bytes;
            worst = i;
        }
    }
    if (worst_stage)
        *worst_stage = worst;
    return best;
}
