/* cost.c: the compute cost model: seconds for GEMMs by shape, for
 * memory-bound kernels by bytes, and the per-layer table of every
 * (part, phase) for one micro-batch on one TP rank (see cost.h).
 *
 * It is a roofline with wave quantization, not a kernel simulator: each
 * kernel runs alone at the device's sustained rate; fused epilogues (bias
 * adds) are free; communication is not here (the schedule emits it as
 * separate ops).
 *
 * Letters: T = b*s tokens (rows of the TP GEMMs), Tn = rows of the norm,
 * residual and dropout kernels (T, or T/t under sequence parallelism),
 * h hidden, hd head dim, a/k heads/KV heads per TP rank, f intermediate per
 * TP rank, V vocabulary rows per TP rank.
 */
#include "cost.h"

#include "compress.h"

#include <math.h>
#include <string.h>

#include "cost_overhead.h"
#include "memory.h"
#include "placement.h"
#include "status.h"

/* Output tile one SM computes per wave (NVIDIA, "Matrix Multiplication
 * Background User's Guide", sections on tile and wave quantization). */
#define OC_TILE 128

/* The schedule's optimizer op carries 28 bytes per updated parameter in
 * hbm_bytes (core/schedule.c: AdamW's own traffic); the cost counts the
 * parameters from it and prices the whole step per parameter
 * (cost_overhead.h: gradient copies, norm, AdamW, parameter copies). */
#define OC_ADAM_BYTES_PER_PARAM 28.0

double oc_cost_mem_Bps(const struct oc_topology *t)
{
    return t->calib_mem_Bps > 0 ? t->calib_mem_Bps : t->device.hbm_bandwidth_Bps;
}

/* Bytes of one GEMM operand element: the gemm's, 16-bit when not given. */
static double operand_bytes(struct oc_gemm g)
{
    return g.elem_bytes > 0 ? g.elem_bytes : 2.0;
}

static double gemm_flops(struct oc_gemm g)
{
    return 2.0 * (double)g.m * (double)g.n * (double)g.k * (double)g.batch;
}

static int64_t ceil_div(int64_t x, int64_t y)
{
    OC_ASSERT(y > 0);
    return (x + y - 1) / y;
}

/* Arithmetic time of a GEMM, ignoring its operand traffic. Peak times the
 * sustained efficiency times the wave-quantization efficiency
 * tiles / (waves * SMs): a partial last wave leaves SMs idle. A partial
 * tile counts as a whole tile in the wave count; within a wave we do not
 * charge the partial tile's waste, because libraries pick smaller tiles
 * for thin shapes. A calibrated rate (measured at the model's shapes)
 * replaces the whole estimate. */
static double gemm_compute_s(const struct oc_topology *t, struct oc_gemm g)
{
    if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0)
        return 0;
    const double flops = gemm_flops(g);
    if (t->calib_gemm_flops > 0)
        return flops / t->calib_gemm_flops;
    const struct oc_device *dev = &t->device;
    OC_ASSERT(dev->sm_count > 0 && dev->peak_flops_16bit > 0 &&
              dev->gemm_efficiency > 0);
    const int64_t tiles =
        ceil_div(g.m, OC_TILE) * ceil_div(g.n, OC_TILE) * g.batch;
    const int64_t waves = ceil_div(tiles, dev->sm_count);
    const double quant = (double)tiles / ((double)waves * (double)dev->sm_count);
    return flops / (dev->peak_flops_16bit * dev->gemm_efficiency * quant);
}

double oc_cost_gemm_s(const struct oc_topology *t, struct oc_gemm g)
{
    if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.batch <= 0)
        return 0;
    /* Roofline: the slower of the arithmetic and reading A and B and
     * writing C once, one operand element each. */
    const double bytes = operand_bytes(g) *
                         ((double)g.m * (double)g.k + (double)g.k * (double)g.n +
                          (double)g.m * (double)g.n) *
                         (double)g.batch;
    const double compute_s = gemm_compute_s(t, g);
    const double memory_s = bytes / oc_cost_mem_Bps(t);
    return compute_s > memory_s ? compute_s : memory_s;
}

double oc_cost_membound_s(const struct oc_topology *t, double bytes)
{
    OC_ASSERT(oc_cost_mem_Bps(t) > 0);
    return bytes / oc_cost_mem_Bps(t);
}

/* Shapes of one layer on one TP rank for one micro-batch. */
struct dims {
    double T, Tn;          /* rows of TP GEMMs; rows of replicated kernels */
    int64_t rows;          /* T as an integer, for GEMM shapes */
    int64_t s, b, h, hd;   /* s: the rank's query rows, s/cp (layout.h) */
    int64_t skv;           /* keys each query attends: all s (ring attention) */
    int64_t a, k, f, V;    /* per TP rank: heads, KV heads, intermediate, vocab */
    int dropout, gated, flash, rope, learned_pos;
    double e;              /* bytes per activation element (layout.h) */
    double g;              /* bytes per gradient-buffer element (memory.h) */
    double mem_Bps;        /* memory-bound kernels' sustained bandwidth */
};

/* Seconds for memory-bound kernels that move `bytes`: the calibrated
 * bandwidth where measured, else the sustained fraction of HBM
 * (cost_overhead.h). */
static double sustained_Bps(const struct oc_topology *t, const struct oc_cost_overheads *o)
{
    if (t->calib_mem_Bps > 0)
        return t->calib_mem_Bps;
    OC_ASSERT(o->mem_efficiency > 0 && o->mem_efficiency <= 1);
    return t->device.hbm_bandwidth_Bps * o->mem_efficiency;
}

static void dims_init(struct dims *d, const struct oc_model *m,
                      const struct oc_layout *l, const struct oc_topology *t,
                      const struct oc_cost_overheads *o)
{
    OC_ASSERT(l->tp >= 1);
    memset(d, 0, sizeof *d);
    d->mem_Bps = sustained_Bps(t, o);
    OC_ASSERT(d->mem_Bps > 0);
    /* Context parallelism: a rank holds s/c tokens; its attention scores
     * are those queries against all s keys, the c K/V blocks of the ring
     * (schedule_cp.h). */
    d->s = oc_layout_local_seq(l);
    d->skv = l->seq_length;
    d->b = l->micro_batch;
    d->rows = d->s * d->b;
    d->T = (double)d->rows;
    d->Tn = l->sequence_parallel ? d->T / (double)l->tp : d->T;
    d->h = m->hidden_size;
    d->hd = oc_model_head_dim(m);
    /* Megatron-LM splits heads, the MLP and the vocabulary over t; a KV head
     * is replicated when there are fewer KV heads than ranks. */
    d->a = ceil_div(m->num_attention_heads, l->tp);
    d->k = ceil_div(m->num_key_value_heads, l->tp);
    d->f = ceil_div(m->intermediate_size, l->tp);
    d->V = ceil_div(m->vocab_size, l->tp);
    d->dropout = m->has_dropout != 0;
    d->gated = m->gated_mlp != 0;
    d->flash = l->attention == OC_ATTN_FLASH;
    d->rope = !m->learned_pos_emb;
    d->learned_pos = m->learned_pos_emb != 0;
    d->e = oc_layout_act_bytes(l);
    d->g = oc_mem_grads_fp32(l) ? 4.0 : d->e;
}

/* Time and GEMM FLOPs accumulated over a part's kernels. */
struct acc {
    double s;
    double flops;
};

static void add_gemm(struct acc *c, const struct oc_topology *t, struct oc_gemm g)
{
    c->s += oc_cost_gemm_s(t, g);
    c->flops += gemm_flops(g);
}

static void add_mem(struct acc *c, const struct dims *d, double bytes)
{
    c->s += bytes / d->mem_Bps;
}

/* Backward of C(m x n) = A(m x k) B(k x n): the input gradient
 * dA = dC B^T (m x k, inner n) and the weight gradient dB = A^T dC
 * (k x n, inner m), each as many FLOPs as the forward. */
static struct oc_gemm dgrad(struct oc_gemm g)
{
    return (struct oc_gemm){.m = g.m, .n = g.k, .k = g.n, .batch = g.batch,
                            .elem_bytes = g.elem_bytes};
}
static struct oc_gemm wgrad(struct oc_gemm g)
{
    return (struct oc_gemm){.m = g.k, .n = g.n, .k = g.m, .batch = g.batch,
                            .elem_bytes = g.elem_bytes};
}
struct oc_gemm oc_gemm_dgrad(struct oc_gemm g) { return dgrad(g); }
struct oc_gemm oc_gemm_wgrad(struct oc_gemm g) { return wgrad(g); }

/* The two GEMMs of core attention, batched over heads and sequences:
 * scores S = Q K^T (s x s, inner hd) and weighted values O = P V
 * (s x hd, inner s). */
static struct oc_gemm scores_gemm(const struct dims *d)
{
    return (struct oc_gemm){.m = d->s, .n = d->skv, .k = d->hd, .batch = d->a * d->b,
                            .elem_bytes = d->e};
}
static struct oc_gemm values_gemm(const struct dims *d)
{
    return (struct oc_gemm){.m = d->s, .n = d->hd, .k = d->skv, .batch = d->a * d->b,
                            .elem_bytes = d->e};
}

/* Core attention: scores, softmax (and its dropout), weighted values. */
static void core_attention(struct acc *c, const struct oc_topology *t,
                           const struct dims *d, int backward)
{
    const struct oc_gemm sc = scores_gemm(d), va = values_gemm(d);
    if (d->flash) {
        /* A fused kernel (Dao et al. 2022) keeps S and P on chip: its time
         * is its arithmetic, or its I/O (Q, K, V in, O and the fp32
         * log-sum-exp out; backward also reads O, dO and writes dQ, dK, dV)
         * when that is slower. Backward recomputes S (FlashAttention-2,
         * section 3.1.2): five GEMMs against the forward's two. */
        const double lse = 4.0 * (double)d->a * d->T;
        const double q = d->e * d->T * (double)(d->a * d->hd);
        /* K and V: all s keys pass through (the ring's c blocks). */
        const double kv = d->e * d->T * (double)d->skv / (double)d->s *
                          (double)(d->k * d->hd);
        double compute_s, io_bytes, flops;
        if (!backward) {
            compute_s = gemm_compute_s(t, sc) + gemm_compute_s(t, va);
            flops = gemm_flops(sc) + gemm_flops(va);
            io_bytes = q + 2.0 * kv + q + lse;
        } else {
            const struct oc_gemm g[5] = {sc, dgrad(sc), wgrad(sc), dgrad(va),
                                         wgrad(va)};
            compute_s = 0;
            flops = 0;
            for (int i = 0; i < 5; i++) {
                compute_s += gemm_compute_s(t, g[i]);
                flops += gemm_flops(g[i]);
            }
            /* read Q K V O dO lse, write dQ dK dV */
            io_bytes = q + 2.0 * kv + q + q + lse + q + 2.0 * kv;
        }
        const double io_s = io_bytes / d->mem_Bps;
        c->s += compute_s > io_s ? compute_s : io_s;
        c->flops += flops;
        return;
    }
    /* Classic: the s x s scores go through HBM. Softmax reads and writes
     * them (e bytes each way, 2 for 16-bit; scale and causal mask fused, as
     * Megatron-LM's FusedScaleMaskSoftmax); dropout reads, writes and
     * stores a 1-byte mask. Backward runs each kernel's gradient, charged
     * twice the bytes. */
    const double ss = (double)(d->a * d->b) * (double)d->s * (double)d->skv;
    double mem = 2.0 * d->e * ss + (d->dropout ? (2.0 * d->e + 1.0) * ss : 0.0);
    if (!backward) {
        add_gemm(c, t, sc);
        add_gemm(c, t, va);
    } else {
        add_gemm(c, t, dgrad(sc));
        add_gemm(c, t, wgrad(sc));
        add_gemm(c, t, dgrad(va));
        add_gemm(c, t, wgrad(va));
        mem *= 2.0;
    }
    add_mem(c, d, mem);
}

/* The forward GEMMs of a part other than core attention; returns how many. */
static int part_gemms(const struct dims *d, enum oc_part part, struct oc_gemm *g)
{
    switch (part) {
    case OC_PART_ATTN:
        /* Column-parallel QKV (h -> (a + 2k) * hd per rank) and
         * row-parallel output projection (a * hd per rank -> h). */
        g[0] = (struct oc_gemm){d->rows, (d->a + 2 * d->k) * d->hd, d->h, 1, d->e};
        g[1] = (struct oc_gemm){d->rows, d->h, d->a * d->hd, 1, d->e};
        return 2;
    case OC_PART_MLP:
        /* Up projection h -> f per rank (gate and up fused into one GEMM of
         * width 2f, as Megatron-LM's linear_fc1 does for SwiGLU), down
         * projection f -> h. */
        g[0] = (struct oc_gemm){d->rows, (d->gated ? 2 : 1) * d->f, d->h, 1, d->e};
        g[1] = (struct oc_gemm){d->rows, d->h, d->f, 1, d->e};
        return 2;
    case OC_PART_HEAD:
        /* Vocab-parallel logits: h -> V/t (Shoeybi et al. 2019, section 3). */
        g[0] = (struct oc_gemm){d->rows, d->V, d->h, 1, d->e};
        return 1;
    default:
        return 0;
    }
}

/* Bytes through HBM of a part's memory-bound kernels (core attention
 * excluded), forward or backward. Counted per kernel, with e bytes per
 * activation element (2 for 16-bit; the numbers below are for e = 2): a
 * norm reads and writes an h-wide tensor (2e*Tn*h = 4*Tn*h), a residual add
 * reads two and writes one (3e*Tn*h = 6*Tn*h), a dropout reads, writes and
 * stores a 1-byte mask ((2e+1)*Tn*h = 5*Tn*h). After attention and after
 * the MLP the dropout and the residual add are one fused kernel
 * (Megatron-LM's default --bias-dropout-fusion,
 * megatron/core/fusions/fused_bias_dropout.py): it reads the branch and
 * the residual, writes the sum and the mask, (3e+1)*Tn*h = 7*Tn*h, not
 * the two kernels' 11*Tn*h. Backward of these runs their gradients: twice
 * the bytes. */
static double part_mem_bytes(const struct dims *d, enum oc_part part,
                             int backward)
{
    const double h = (double)d->h, e = d->e;
    const double norm = 2.0 * e * d->Tn * h;
    const double residual = 3.0 * e * d->Tn * h;
    const double dropout = d->dropout ? (2.0 * e + 1.0) * d->Tn * h : 0.0;
    /* the fused bias-dropout-add (above): the residual's bytes and the mask */
    const double bda = residual + (d->dropout ? d->Tn * h : 0.0);
    double fwd = 0;
    switch (part) {
    case OC_PART_ATTN:
        fwd = norm + bda;
        /* Rotary embedding reads and writes Q and K (Su et al. 2021). */
        if (d->rope)
            fwd += 2.0 * e * d->T * (double)((d->a + d->k) * d->hd);
        return backward ? 2.0 * fwd : fwd;
    case OC_PART_MLP:
        /* GELU reads and writes f-wide (2e*T*f = 4*T*f); SwiGLU reads gate
         * and up and writes their product (3e*T*f = 6*T*f). */
        fwd = norm + bda +
              (d->gated ? 3.0 : 2.0) * e * d->T * (double)d->f;
        return backward ? 2.0 * fwd : fwd;
    case OC_PART_EMBED:
        /* Gather: read T rows of the (vocab-parallel) table, write T*h
         * (2e*T*h); add the learned positions (read e*T*h more); dropout.
         * Backward: the scatter-add reads the gradient and
         * read-modify-writes the rows, charged as twice the forward; and
         * the table's gradient is dense: PyTorch's embedding backward
         * (aten/src/ATen/native/cuda/Embedding.cu,
         * embedding_dense_backward_cuda) allocates it zeroed, V/t x h
         * elements of e bytes, every micro-batch, and Megatron's DDP
         * (distributed_data_parallel.py, the param hook's
         * param.main_grad.add_(param.grad)) adds it into the gradient
         * buffer: read e, read and write g (4 with fp32 gradients, else
         * e). (2e + 2g) per table element: 12 bytes for bf16 with fp32
         * gradients. As recalled from both files; not in the 2020 code
         * base, which had no main_grad (its one micro-batch per step
         * makes it 0.1 % of those steps). */
        fwd = 2.0 * e * d->T * h + (d->learned_pos ? e * d->T * h : 0.0) +
              dropout;
        return backward ? 2.0 * fwd + (2.0 * e + 2.0 * d->g) * (double)d->V * h : fwd;
    case OC_PART_HEAD: {
        /* Final norm, then Megatron-LM's vocab-parallel cross-entropy over
         * the T x V/t logits in fp32 (megatron/core/tensor_parallel/
         * cross_entropy.py, core_r0.8.0, as recalled: check against the
         * file): calculate_logits_max casts (.float(): read e = 2, write 4)
         * and takes the max (read 4); calculate_predicted_logits subtracts
         * the max in place (vocab_parallel_logits -= logits_max: read 4,
         * write 4), then exp in place (read 4, write 4) and sum (read 4);
         * calculate_cross_entropy_loss normalises in place (exp_logits.div_:
         * read 4, write 4): 38 bytes per logit (36 + e). Backward
         * (calculate_gradients): grad_input.mul_(grad_output) in place (read
         * 4, write 4; the one-hot subtraction touches one logit a row),
         * then the cast's gradient to the activation type (read 4, write e
         * = 2) = 14 bytes per logit, plus the norm's gradient. */
        const double logits = d->T * (double)d->V;
        return backward ? 2.0 * norm + (12.0 + e) * logits
                        : norm + (36.0 + e) * logits;
    }
    default:
        return 0;
    }
}

/* Time (and GEMM FLOPs) of one part, one layer, one micro-batch. */
static struct acc part_cost(const struct dims *d, const struct oc_layout *l,
                            const struct oc_topology *t, enum oc_part part,
                            enum oc_phase phase)
{
    struct acc c = {0, 0};
    struct oc_gemm g[4];
    const int ng = part_gemms(d, part, g);
    switch (phase) {
    case OC_PHASE_FWD:
        for (int i = 0; i < ng; i++)
            add_gemm(&c, t, g[i]);
        add_mem(&c, d, part_mem_bytes(d, part, 0));
        if (part == OC_PART_ATTN)
            core_attention(&c, t, d, 0);
        break;
    case OC_PHASE_BWD:
        for (int i = 0; i < ng; i++) {
            add_gemm(&c, t, dgrad(g[i]));
            add_gemm(&c, t, wgrad(g[i]));
        }
        add_mem(&c, d, part_mem_bytes(d, part, 1));
        if (part == OC_PART_ATTN)
            core_attention(&c, t, d, 1);
        break;
    case OC_PHASE_RECOMPUTE:
        /* Korthikanti et al. 2022, section 5: full recompute reruns the
         * layer's forward; selective reruns core attention only. The
         * embedding and the head are never recomputed (Megatron-LM
         * checkpoints transformer layers only). */
        if (part != OC_PART_ATTN && part != OC_PART_MLP)
            break;
        if (l->recompute == OC_RECOMPUTE_FULL)
            c = part_cost(d, l, t, part, OC_PHASE_FWD);
        else if (l->recompute == OC_RECOMPUTE_SELECTIVE && part == OC_PART_ATTN)
            core_attention(&c, t, d, 0);
        break;
    default:
        break;
    }
    return c;
}

double oc_cost_sched_flops(const struct oc_model *m, const struct oc_layout *l,
                           enum oc_part part, enum oc_phase phase)
{
    OC_ASSERT(l->tp >= 1);
    const double td = (double)l->tp * (double)(l->cp > 1 ? l->cp : 1),
                 b = (double)l->micro_batch, h = (double)m->hidden_size;
    /* schedule.c: under context parallelism every part's FLOPs divide by
     * c too, selective recompute's s/c queries against all s keys. */
    const double s = (double)l->seq_length, sq = (double)oc_layout_local_seq(l);
    double fwd;
    /* schedule.c: the part's forward FLOPs (model.c) over t, backward
     * twice that (Narayanan et al. 2021, section 5.1), the embedding 0. */
    switch (part) {
    case OC_PART_ATTN:
        fwd = oc_model_attn_fwd_flops(m, l->micro_batch, l->seq_length) / td;
        break;
    case OC_PART_MLP:
        fwd = oc_model_mlp_fwd_flops(m, l->micro_batch, l->seq_length) / td;
        break;
    case OC_PART_HEAD:
        fwd = oc_model_head_fwd_flops(m, l->micro_batch, l->seq_length) / td;
        break;
    default:
        return 0;
    }
    switch (phase) {
    case OC_PHASE_FWD:
        return fwd;
    case OC_PHASE_BWD:
        return 2.0 * fwd;
    case OC_PHASE_RECOMPUTE:
        /* Full recompute reruns the layer's forward; selective reruns
         * QK^T and softmax*V, 4*b*s^2*h/t (Korthikanti et al. 2022,
         * section 5). The head is never recomputed. */
        if (part == OC_PART_HEAD)
            return 0;
        if (l->recompute == OC_RECOMPUTE_FULL)
            return fwd;
        if (l->recompute == OC_RECOMPUTE_SELECTIVE && part == OC_PART_ATTN)
            return 4.0 * b * sq * s * h / (double)l->tp;
        return 0;
    default:
        return 0;
    }
}

/* The measured rate of (part, phase) in the calibration, 0 when absent.
 * RECOMPUTE: full recompute runs the forward's code, so it has the
 * forward's rate; selective has its own (attn_recompute). */
static double calib_rate(const struct oc_topology *t, const struct oc_layout *l,
                         enum oc_part part, enum oc_phase phase)
{
    int fwd, bwd;
    switch (part) {
    case OC_PART_ATTN: fwd = OC_CALIB_ATTN_FWD; bwd = OC_CALIB_ATTN_BWD; break;
    case OC_PART_MLP: fwd = OC_CALIB_MLP_FWD; bwd = OC_CALIB_MLP_BWD; break;
    case OC_PART_HEAD: fwd = OC_CALIB_HEAD_FWD; bwd = OC_CALIB_HEAD_BWD; break;
    default: return 0;
    }
    switch (phase) {
    case OC_PHASE_FWD: return t->calib_part_flops[fwd];
    case OC_PHASE_BWD: return t->calib_part_flops[bwd];
    case OC_PHASE_RECOMPUTE:
        if (l->recompute == OC_RECOMPUTE_FULL)
            return t->calib_part_flops[fwd];
        if (l->recompute == OC_RECOMPUTE_SELECTIVE && part == OC_PART_ATTN)
            return t->calib_part_flops[OC_CALIB_ATTN_RECOMPUTE];
        return 0;
    default:
        return 0;
    }
}

void oc_cost_init(struct oc_cost *c, const struct oc_model *m,
                  const struct oc_layout *l, const struct oc_topology *t)
{
    const struct oc_cost_overheads o = oc_cost_overheads_default();
    oc_cost_init_with(c, m, l, t, &o);
}

void oc_cost_init_with(struct oc_cost *c, const struct oc_model *m,
                       const struct oc_layout *l, const struct oc_topology *t,
                       const struct oc_cost_overheads *o)
{
    OC_ASSERT(c && m && l && t && o);
    memset(c, 0, sizeof *c);
    c->topo = t;
    c->ovh = *o;
    struct dims d;
    dims_init(&d, m, l, t, o);
    const enum oc_part parts[] = {OC_PART_EMBED, OC_PART_ATTN, OC_PART_MLP,
                                  OC_PART_HEAD};
    const enum oc_phase phases[] = {OC_PHASE_FWD, OC_PHASE_BWD,
                                    OC_PHASE_RECOMPUTE};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        for (size_t j = 0; j < sizeof phases / sizeof phases[0]; j++) {
            const enum oc_part pa = parts[i];
            const enum oc_phase ph = phases[j];
            /* A measured rate replaces the roofline: the FLOPs the schedule
             * gives the op over the rate measured for that part and phase
             * (topology.h, "calibration"). The embedding has no FLOPs: its
             * tokens at the measured seconds per token. */
            const double rate = calib_rate(t, l, pa, ph);
            const double per_token = pa != OC_PART_EMBED ? 0
                                     : ph == OC_PHASE_FWD ? t->calib_embed_fwd_s_per_token
                                     : ph == OC_PHASE_BWD ? t->calib_embed_bwd_s_per_token
                                                          : 0;
            if (rate > 0)
                c->part_s[pa][ph] = oc_cost_sched_flops(m, l, pa, ph) / rate;
            else if (per_token > 0)
                c->part_s[pa][ph] = d.T * per_token;
            else
                /* the estimate: the kernels' roofline time, then their
                 * launches (cost_overhead.h) */
                c->part_s[pa][ph] = oc_cost_launch_s(o, part_cost(&d, l, t, pa, ph).s,
                                                     oc_cost_kernels(m, l, pa, ph));
        }
    c->optimizer_s_per_param = t->calib_optimizer_s_per_param > 0
                                   ? t->calib_optimizer_s_per_param
                                   : oc_cost_optimizer_bytes_per_param(l) / d.mem_Bps;
    c->zero_grad_s_per_param = oc_cost_zero_grad_bytes(l, 1.0) / d.mem_Bps;
}

double oc_cost_zero_grad_s(const struct oc_cost *c, double params)
{
    return c->topo->calib_optimizer_s_per_param > 0 ? 0.0 : params * c->zero_grad_s_per_param;
}

double oc_cost_op_s(const struct oc_cost *c, const struct oc_op *op,
                    const struct oc_layout *l, const struct oc_model *m)
{
    OC_ASSERT(op->kind == OC_OP_COMPUTE);
    /* The optimizer step is memory-bound: the schedule puts the bytes it
     * moves (28 per parameter the rank updates, fewer parameters when the
     * optimizer is sharded) in hbm_bytes, and we time those. */
    if (op->phase == OC_PHASE_OPTIMIZER) {
        /* The parameters (28 bytes each in hbm_bytes) at the step's seconds
         * per parameter (measured, or cost_overhead.h's bytes at the
         * sustained bandwidth), and the zero_grad of the stage's gradient
         * buffer that the next step starts with (not in a calibrated
         * figure: the calibration times the update alone). */
        return op->hbm_bytes / OC_ADAM_BYTES_PER_PARAM * c->optimizer_s_per_param +
               oc_cost_zero_grad_s(c, (double)oc_mem_stage_params(m, l, op->stage));
    }
    OC_ASSERT(op->phase <= OC_PHASE_RECOMPUTE);
    /* a pass over all of the rank's gradients outside the optimizer: the
     * compression kernels of the DP exchange (compress.h) */
    if (op->part == OC_PART_ALL)
        return oc_gc_kernel_s(c->topo, op->hbm_bytes, op->flops);
    const int ph = op->phase;
    switch (op->part) {
    case OC_PART_ATTN:
    case OC_PART_MLP:
        /* count > 1: one of `count` slices of the part (a context-parallel
         * ring step, schedule_cp.h). */
        return c->part_s[op->part][ph] *
               (double)(op->layer_count > 1 ? op->layer_count : 1) /
               (double)(op->count > 1 ? op->count : 1);
    case OC_PART_EMBED:
    case OC_PART_HEAD:
        return c->part_s[op->part][ph];
    case OC_PART_CHUNK: {
        double s = (c->part_s[OC_PART_ATTN][ph] + c->part_s[OC_PART_MLP][ph]) *
                   (double)op->layer_count;
        /* A piece of a chunk (fewer layers than the chunk: the backward
         * split at its DP gradient buckets, schedule_bucket.h) carries the
         * embedding if it starts at the chunk's first layer, the head if it
         * ends at its last, and rfull<k>'s recompute of the chunk's first k
         * layers where it covers them. */
        int emb = 1, head = 1;
        int64_t rec = oc_mem_recomputed_layers(l, op->layer_count);
        if (op->layer_first >= 0) {
            const struct oc_layer_range lr =
                oc_place_chunk_layers(l, m, op->stage, op->chunk);
            if (op->layer_count < lr.count) {
                emb = op->layer_first == lr.first;
                head = op->layer_first + op->layer_count == lr.first + lr.count;
                rec = oc_mem_recomputed_layers(l, lr.count) - (op->layer_first - lr.first);
                rec = rec < 0 ? 0 : rec > op->layer_count ? op->layer_count : rec;
            }
        }
        /* A chunk-grain backward carries its layers' recompute, as the
         * layer grain emits it just before each layer's backward (under
         * rfull<k> the first k layers' only: memory.h). */
        if (ph == OC_PHASE_BWD)
            s += (c->part_s[OC_PART_ATTN][OC_PHASE_RECOMPUTE] +
                  c->part_s[OC_PART_MLP][OC_PHASE_RECOMPUTE]) *
                 (l->recompute == OC_RECOMPUTE_FULL ? (double)rec
                                                    : (double)op->layer_count);
        if (emb && oc_place_holds_embed(l, op->stage, op->chunk))
            s += c->part_s[OC_PART_EMBED][ph];
        if (head && oc_place_holds_head(l, op->stage, op->chunk))
            s += c->part_s[OC_PART_HEAD][ph];
        return s;
    }
    default:
        OC_ASSERT(!"compute op with a part that has no cost");
        return 0;
    }
}

/* A unit device: shapes and FLOPs need a valid one, not its figures. */
static void unit_device(struct oc_topology *t)
{
    memset(t, 0, sizeof *t);
    t->device.peak_flops_16bit = 1;
    t->device.hbm_bandwidth_Bps = 1;
    t->device.sm_count = 1;
    t->device.gemm_efficiency = 1;
}

int oc_cost_part_gemms(const struct oc_model *m, const struct oc_layout *l,
                       enum oc_part part, struct oc_gemm g[2])
{
    struct oc_topology t;
    unit_device(&t);
    struct dims d;
    const struct oc_cost_overheads o = oc_cost_overheads_none();
    dims_init(&d, m, l, &t, &o);
    struct oc_gemm all[4];
    const int n = part_gemms(&d, part, all);
    OC_ASSERT(n <= 2);
    for (int i = 0; i < n; i++)
        g[i] = all[i];
    return n;
}

double oc_cost_layer_flops(const struct oc_model *m, const struct oc_layout *l,
                           enum oc_phase phase)
{
    /* Only FLOPs are read; no device is needed, but the GEMM timing needs a
     * valid one, so use a dummy unit device. */
    struct oc_topology t;
    unit_device(&t);
    struct dims d;
    const struct oc_cost_overheads o = oc_cost_overheads_none();
    dims_init(&d, m, l, &t, &o);
    return part_cost(&d, l, &t, OC_PART_ATTN, phase).flops +
           part_cost(&d, l, &t, OC_PART_MLP, phase).flops;
}
