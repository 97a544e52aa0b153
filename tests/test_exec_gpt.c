/* test_exec_gpt.c: the executor's model (exec/model/gpt.c) on the cpu
 * kernels (kernels/cpu/), params.c and data.c.
 *
 * - init: a weight element has the same value in a t=1 tensor and in its
 *   TP shard; gathering shards reproduces the t=1 arena bitwise.
 * - data: a sample's tokens do not depend on the batch split; the walk
 *   follows the permutation at the stated rate; entropy by hand.
 * - TP equivalence: t = 1, 2, 4 shards run in-process in lockstep, driven
 *   op by op by the schedule's op list (tp<t>-pp1-dp1); losses and every
 *   gathered gradient equal t = 1's within 1e-5 (L2 relative per tensor),
 *   and every part asks for exactly the TP all-reduces the schedule emits
 *   after it.
 * - recompute (full, selective) gives bitwise the same losses and gradients.
 * - callback mode from t threads gives bitwise the lockstep results; a
 *   failing callback makes the part return -1.
 * - finite differences confirm the backward at t = 1.
 * - tied embedding split over two pipeline stages: wte and the head's copy
 *   start equal; their gradients sum to the one-stage gradient.
 * - AdamW matches a step worked by hand; 50 steps on the synthetic task
 *   make the loss fall.
 * - unsupported models and layouts are refused with one line.
 * Gains and biases are moved off 1 and 0 (perturb_vectors) so that bias
 * handling under TP is tested, not hidden by zeros.
 */
#define _POSIX_C_SOURCE 200809L
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "gpt.h"
#include "ops_cpu.h"
#include "params.h"
#include "schedule.h"
#include "test_util.h"

#define SEED 20240607ULL

/* The kernels every part runs on (stateless: the threads share them). */
static struct oc_kernels K;
#define TMAX 4
#define LMAX 8

static struct oc_model tiny(int64_t L)
{
    struct oc_model m;
    struct oc_status st = {{0}};
    int rc = oc_model_load("tiny", &m, &st);
    if (rc != 0)
        fprintf(stderr, "\n  cannot load tiny: %s\n", st.msg);
    OC_ASSERT(rc == 0);
    m.num_hidden_layers = L;
    return m;
}

/* ------------------------------------------------------------------ */
/* One TP shard holding the whole model (one pipeline stage)            */

struct shard {
    struct oc_gpt_dims d;
    struct oc_params p;
    enum oc_recompute rc;
    int64_t N, C, L;
    float *x;      /* (2L+1, N, C) residual stream: x[0] embedding out,
                      x[2l+1] attention l out, x[2l+2] MLP l out */
    float *dx;     /* (N, C) gradient flowing back, in place */
    float *rin;    /* (N, C) full recompute: the MLP input (shared) */
    float *junk;   /* (N, C) full recompute: the recomputed MLP output */
    float *actmem;
    float *att_scratch; /* selective: the shared attention probabilities */
    struct oc_gpt_attn_act attn[LMAX];
    struct oc_gpt_mlp_act mlp[LMAX];
    struct oc_gpt_head_act head;
    float *work;
    float *losses; /* (N) */
    const int32_t *tok, *tgt; /* (N) */
    float grad_scale;
};

#define X(s, i) ((s)->x + (int64_t)(i) * (s)->N * (s)->C)

static void shard_init(struct shard *s, const struct oc_model *m, int64_t t,
                       int64_t r, int64_t B, int64_t T, enum oc_recompute rc)
{
    memset(s, 0, sizeof *s);
    struct oc_status st = {{0}};
    OC_ASSERT(oc_gpt_dims_init(&s->d, m, t, r, B, T, &st) == 0);
    int64_t layers[LMAX];
    OC_ASSERT(m->num_hidden_layers <= LMAX);
    for (int64_t l = 0; l < m->num_hidden_layers; l++)
        layers[l] = l;
    struct oc_params_opts o = {t, r, layers, m->num_hidden_layers, 1, 1, SEED};
    OC_ASSERT(oc_params_init(&s->p, m, &o, &st) == 0);
    s->rc = rc;
    s->N = B * T;
    s->C = m->hidden_size;
    s->L = m->num_hidden_layers;
    const int64_t NC = s->N * s->C;
    s->x = oc_xcalloc((size_t)((2 * s->L + 1) * NC), sizeof(float));
    s->dx = oc_xcalloc((size_t)NC, sizeof(float));
    s->rin = oc_xcalloc((size_t)NC, sizeof(float));
    s->junk = oc_xcalloc((size_t)NC, sizeof(float));
    OC_ASSERT(oc_gpt_reserve(&K, &s->d, &st) == 0);
    s->work = oc_xcalloc((size_t)oc_gpt_work_floats(&K, &s->d), sizeof(float));
    s->losses = oc_xcalloc((size_t)s->N, sizeof(float));

    const int64_t A = oc_gpt_attn_act_floats(&s->d);
    const int64_t Aatt = oc_gpt_att_floats(&s->d);
    const int64_t M = oc_gpt_mlp_act_floats(&s->d);
    const int64_t H = oc_gpt_head_act_floats(&s->d);
    if (rc == OC_RECOMPUTE_FULL) {
        /* Only the layer inputs x[2l] are kept: one act of each part,
         * shared by every layer; the MLP input is the shared rin. */
        s->actmem = oc_xcalloc((size_t)(A + M + H), sizeof(float));
        for (int64_t l = 0; l < s->L; l++) {
            oc_gpt_attn_act_bind(&s->attn[l], &s->d, X(s, 2 * l), s->actmem);
            oc_gpt_mlp_act_bind(&s->mlp[l], &s->d, s->rin, s->actmem + A);
        }
        oc_gpt_head_act_bind(&s->head, &s->d, X(s, 2 * s->L), s->actmem + A + M);
        return;
    }
    int64_t per = rc == OC_RECOMPUTE_SELECTIVE ? A - Aatt : A;
    s->actmem = oc_xcalloc((size_t)(s->L * (per + M) + H), sizeof(float));
    s->att_scratch = oc_xcalloc((size_t)Aatt, sizeof(float));
    float *mem = s->actmem;
    for (int64_t l = 0; l < s->L; l++) {
        oc_gpt_attn_act_bind(&s->attn[l], &s->d, X(s, 2 * l), mem);
        if (rc == OC_RECOMPUTE_SELECTIVE)
            s->attn[l].att = s->att_scratch; /* laid out last: past `per` */
        mem += per;
        oc_gpt_mlp_act_bind(&s->mlp[l], &s->d, X(s, 2 * l + 1), mem);
        mem += M;
    }
    oc_gpt_head_act_bind(&s->head, &s->d, X(s, 2 * s->L), mem);
}

static void shard_free(struct shard *s)
{
    free(s->att_scratch);
    free(s->actmem);
    free(s->losses);
    free(s->work);
    free(s->junk);
    free(s->rin);
    free(s->dx);
    free(s->x);
    oc_params_free(&s->p);
}

/* The call for one COMPUTE op of the schedule. */
static int part_call(struct shard *s, struct oc_gpt_call *c,
                     const struct oc_op *op)
{
    const int64_t l = op->layer_first;
    const int full = s->rc == OC_RECOMPUTE_FULL;
    float *attn_out = full ? s->rin : X(s, 2 * l + 1);
    switch ((enum oc_phase)op->phase) {
    case OC_PHASE_FWD:
        switch ((enum oc_part)op->part) {
        case OC_PART_EMBED:
            return oc_gpt_embed_fwd(&K, c, &s->d, &s->p, s->tok, X(s, 0));
        case OC_PART_ATTN:
            return oc_gpt_attn_fwd(&K, c, &s->d, &s->p, l, &s->attn[l], attn_out);
        case OC_PART_MLP:
            return oc_gpt_mlp_fwd(&K, c, &s->d, &s->p, l, &s->mlp[l],
                                  X(s, 2 * l + 2));
        case OC_PART_HEAD:
            return oc_gpt_head_fwd(&K, c, &s->d, &s->p, &s->head, s->tgt,
                                   s->losses);
        default:
            break;
        }
        break;
    case OC_PHASE_RECOMPUTE:
        if (op->part == OC_PART_ATTN && s->rc == OC_RECOMPUTE_SELECTIVE) {
            oc_gpt_attn_scores(&K, &s->d, &s->attn[l]);
            return OC_GPT_DONE;
        }
        if (op->part == OC_PART_ATTN && full) /* rebuilds rin */
            return oc_gpt_attn_fwd(&K, c, &s->d, &s->p, l, &s->attn[l], s->rin);
        if (op->part == OC_PART_MLP && full)
            return oc_gpt_mlp_fwd(&K, c, &s->d, &s->p, l, &s->mlp[l], s->junk);
        break;
    case OC_PHASE_BWD:
        switch ((enum oc_part)op->part) {
        case OC_PART_HEAD:
            return oc_gpt_head_bwd(&K, c, &s->d, &s->p, &s->head, s->tgt,
                                   s->grad_scale, s->dx, s->work);
        case OC_PART_MLP:
            return oc_gpt_mlp_bwd(&K, c, &s->d, &s->p, l, &s->mlp[l], s->dx,
                                  s->dx, s->work);
        case OC_PART_ATTN:
            return oc_gpt_attn_bwd(&K, c, &s->d, &s->p, l, &s->attn[l], s->dx,
                                   s->dx, s->work);
        case OC_PART_EMBED:
            return oc_gpt_embed_bwd(&K, c, &s->d, &s->p, s->tok, s->dx);
        default:
            break;
        }
        break;
    default:
        break;
    }
    OC_ASSERT(0); /* an op the one-stage schedule does not emit */
    return -1;
}

/* acc = acc (op) x, element-wise; the one reduction used by both the
 * lockstep and the threaded all-reduce, always in rank order. */
static void combine(float *acc, const float *x, int64_t n, enum oc_gpt_reduce op)
{
    for (int64_t i = 0; i < n; i++)
        acc[i] = op == OC_GPT_SUM ? acc[i] + x[i] : fmaxf(acc[i], x[i]);
}

/* Runs one COMPUTE op on t shards in step mode, reducing their requests
 * in rank order; returns the number of all-reduces. */
static int64_t lockstep(struct shard *sh, int64_t t, const struct oc_op *op)
{
    struct oc_gpt_call c[TMAX];
    memset(c, 0, sizeof c);
    int64_t nreq = 0;
    for (;;) {
        int rc[TMAX] = {0};
        for (int64_t r = 0; r < t; r++)
            rc[r] = part_call(&sh[r], &c[r], op);
        for (int64_t r = 1; r < t; r++) {
            CU_ASSERT_EQUAL(rc[r], rc[0]);
            CU_ASSERT_EQUAL(c[r].n, c[0].n);
            CU_ASSERT_EQUAL(c[r].op, c[0].op);
        }
        if (rc[0] == OC_GPT_DONE)
            break;
        OC_ASSERT(rc[0] == OC_GPT_REDUCE);
        float *acc = oc_xmalloc((size_t)c[0].n * sizeof *acc);
        memcpy(acc, c[0].buf, (size_t)c[0].n * sizeof *acc);
        for (int64_t r = 1; r < t; r++)
            combine(acc, c[r].buf, c[0].n, c[0].op);
        for (int64_t r = 0; r < t; r++)
            memcpy(c[r].buf, acc, (size_t)c[0].n * sizeof *acc);
        free(acc);
        nreq++;
        CU_ASSERT_EQUAL(c[0].nreduce, nreq);
    }
    return nreq;
}

/* A tp<t>-pp1-dp1 layout of one micro-batch of B sequences of length T. */
static struct oc_schedule one_stage_schedule(const struct oc_model *m, int64_t t,
                                             int64_t B, int64_t T,
                                             enum oc_recompute rc)
{
    struct oc_layout l;
    oc_layout_default(&l);
    l.tp = t;
    l.micro_batch = B;
    l.global_batch = B;
    l.seq_length = T;
    l.recompute = rc;
    l.sequence_parallel = 0;
    l.shard_optimizer = 0;
    l.overlap_grad_reduce = 0;
    struct oc_status st = {{0}};
    OC_ASSERT(oc_gpt_check_layout(m, &l, &st) == 0);
    struct oc_schedule s;
    OC_ASSERT(oc_schedule_build(&s, m, &l, NULL, &st) == 0);
    return s;
}

/* Forward and backward of one micro-batch on t shards, walking rank 0's op
 * list (every TP rank of the stage has the same list). Each COMPUTE op's
 * all-reduces must be the TP collectives (count included) that follow it
 * before the next COMPUTE op. */
static void run_schedule(struct shard *sh, int64_t t, const struct oc_model *m,
                         int64_t B, int64_t T, enum oc_recompute rc)
{
    struct oc_schedule s = one_stage_schedule(m, t, B, T, rc);
    int64_t pending = 0, computes = 0;
    for (int64_t i = 0; i < s.ranks[0].n; i++) {
        const struct oc_op *op = &s.ranks[0].ops[i];
        if (op->kind == OC_OP_COMPUTE) {
            CU_ASSERT_EQUAL(pending, 0);
            if (op->phase == OC_PHASE_OPTIMIZER)
                continue;
            pending = lockstep(sh, t, op);
            computes++;
        } else if (op->kind == OC_OP_COLLECTIVE && op->group == OC_GROUP_TP) {
            pending -= op->count;
            CU_ASSERT(pending >= 0);
        }
    }
    CU_ASSERT_EQUAL(pending, 0);
    /* embed, head and 2 parts per layer, forward and backward, plus the
     * recompute ops: 2 per layer (full) or 1 (selective) */
    int64_t L = m->num_hidden_layers;
    int64_t expect = 2 * (2 + 2 * L) +
                     (rc == OC_RECOMPUTE_FULL ? 2 * L
                      : rc == OC_RECOMPUTE_SELECTIVE ? L : 0);
    CU_ASSERT_EQUAL(computes, expect);
    oc_schedule_free(&s);
}

/* One micro-batch of the synthetic task. */
struct batch {
    int64_t B, T;
    int32_t *tok, *tgt;
};

static struct batch make_batch(int64_t V, int64_t g0, int64_t B, int64_t T)
{
    struct batch b = {B, T, oc_xmalloc((size_t)(B * T) * sizeof(int32_t)),
                      oc_xmalloc((size_t)(B * T) * sizeof(int32_t))};
    struct oc_synth syn;
    struct oc_status st = {{0}};
    OC_ASSERT(oc_synth_init(&syn, V, SEED, &st) == 0);
    oc_synth_batch(&syn, g0, B, T, b.tok, b.tgt);
    oc_synth_free(&syn);
    return b;
}

static void batch_free(struct batch *b)
{
    free(b->tok);
    free(b->tgt);
}

/* Moves gains and biases off their init values (1 and 0) so that a bias
 * added on every TP rank instead of once, or a gain applied twice, shows.
 * The shift is a function of the global element only, so every layout
 * gets the same model. */
static void perturb_vectors(struct oc_params *p)
{
    for (int64_t i = 0; i < p->nt; i++) {
        const struct oc_param_tensor *t = &p->t[i];
        if (t->gcols != 1)
            continue;
        /* gains by up to 0.1; biases by up to 0.01, small next to the
         * residual stream at init (elements ~0.02*sqrt(2)) */
        int gain = t->kind == OC_P_LN1W || t->kind == OC_P_LN2W ||
                   t->kind == OC_P_LNFW;
        float amp = gain ? 0.1f : 0.01f;
        for (int64_t r = 0; r < t->rows; r++)
            p->w[t->offset + r] +=
                amp * sinf(0.7f * (float)(t->row0 + r + 1) +
                           (float)(3 * t->kind + 5 * t->layer));
    }
}

/* t shards of model m, fed batch b, fwd + bwd through the schedule. */
static void shards_run(struct shard *sh, int64_t t, const struct oc_model *m,
                       const struct batch *b, enum oc_recompute rc)
{
    for (int64_t r = 0; r < t; r++) {
        shard_init(&sh[r], m, t, r, b->B, b->T, rc);
        perturb_vectors(&sh[r].p);
        sh[r].tok = b->tok;
        sh[r].tgt = b->tgt;
        sh[r].grad_scale = 1.0f / (float)(b->B * b->T);
    }
    run_schedule(sh, t, m, b->B, b->T, rc);
}

/* ||a - b|| / ||b|| */
static double rel_l2(const float *a, const float *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = (double)a[i] - (double)b[i];
        num += e * e;
        den += (double)b[i] * (double)b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Gradients of t shards gathered into the layout of `whole` (a t=1
 * shard's params). */
static float *gather_grads(const struct shard *sh, int64_t t,
                           const struct oc_params *whole)
{
    float *g = oc_xcalloc((size_t)whole->n, sizeof *g);
    for (int64_t r = 0; r < t; r++)
        oc_params_put_whole(&sh[r].p, sh[r].p.g, whole, g);
    return g;
}

/* ------------------------------------------------------------------ */
/* Tests                                                                */

/* The QKV weight of layer 3 (tiny, L = 8, C = 64: global shape (192, 64)).
 * At t = 2, shard 1 holds rows [96, 192): global row 101 is its local row
 * 5. attprojw (64, 64) is split by columns: shard 1 holds [32, 64), so
 * global (5, 39) is its local (5, 7). */
static void test_init_counter(void)
{
    struct oc_model m = tiny(8);
    struct oc_status st = {{0}};
    int64_t layers[] = {3};
    struct oc_params one, two;
    struct oc_params_opts o1 = {1, 0, layers, 1, 0, 0, SEED};
    struct oc_params_opts o2 = {2, 1, layers, 1, 0, 0, SEED};
    CU_ASSERT_EQUAL_FATAL(oc_params_init(&one, &m, &o1, &st), 0);
    CU_ASSERT_EQUAL_FATAL(oc_params_init(&two, &m, &o2, &st), 0);

    const float *q1 = oc_params_w(&one, OC_P_QKVW, 3); /* (192, 64) */
    const float *q2 = oc_params_w(&two, OC_P_QKVW, 3); /* (96, 64) */
    float want = oc_params_init_value(&m, SEED, OC_P_QKVW, 3, 101, 7);
    CU_ASSERT_EQUAL(q1[101 * 64 + 7], want);
    CU_ASSERT_EQUAL(q2[5 * 64 + 7], want);
    CU_ASSERT(want != 0.0f);
    /* uniform std 0.02: |value| < 0.02*sqrt(3) = 0.034641 */
    CU_ASSERT(fabsf(want) < 0.034641f);

    const float *p1 = oc_params_w(&one, OC_P_ATTPROJW, 3); /* (64, 64) */
    const float *p2 = oc_params_w(&two, OC_P_ATTPROJW, 3); /* (64, 32) */
    CU_ASSERT_EQUAL(p1[5 * 64 + 39], p2[5 * 32 + 7]);
    /* scaled std 0.02/sqrt(2*8) = 0.005: |value| < 0.005*sqrt(3) = 0.0086603,
     * and the sample std of 4096 values is within 5% of 0.005 */
    double ss = 0;
    float amax = 0;
    for (int64_t i = 0; i < 64 * 64; i++) {
        ss += (double)p1[i] * p1[i];
        amax = fmaxf(amax, fabsf(p1[i]));
    }
    CU_ASSERT(amax < 0.0086603f);
    OC_ASSERT_REL(sqrt(ss / 4096), 0.005, 0.05);

    /* gains 1, biases 0; qkvb of shard 1 is rows [96, 192) of zeros */
    CU_ASSERT_EQUAL(oc_params_w(&two, OC_P_LN1W, 3)[17], 1.0f);
    CU_ASSERT_EQUAL(oc_params_w(&two, OC_P_LN2B, 3)[17], 0.0f);
    CU_ASSERT_EQUAL(oc_params_tensor(&two, OC_P_QKVB, 3)->rows, 96);
    CU_ASSERT_EQUAL(oc_params_tensor(&two, OC_P_QKVB, 3)->row0, 96);
    CU_ASSERT_EQUAL(oc_params_w(&two, OC_P_QKVB, 3)[5], 0.0f);
    /* a layer-3 value is not the layer-2 value of the same position */
    CU_ASSERT(oc_params_init_value(&m, SEED, OC_P_QKVW, 2, 101, 7) != want);
    oc_params_free(&two);
    oc_params_free(&one);

    /* Four t = 4 shards of the whole model gather to the t = 1 arena,
     * bitwise. Arena size of one shard, by hand (C 64, F 256, V 512, P 128,
     * L 2, tied): wte 128*64 + wpe 128*64 = 16384; per layer ln1 2*64 +
     * qkvw 48*64 + qkvb 48 + attprojw 64*16 + attprojb 64 + ln2 2*64 +
     * fcw 64*64 + fcb 64 + fcprojw 64*64 + fcprojb 64 = 12784; lnf 128:
     * 16384 + 2*12784 + 128 = 42080 floats. */
    struct oc_model m2 = tiny(2);
    int64_t all[] = {0, 1};
    struct oc_params whole, q[4];
    struct oc_params_opts ow = {1, 0, all, 2, 1, 1, SEED};
    CU_ASSERT_EQUAL_FATAL(oc_params_init(&whole, &m2, &ow, &st), 0);
    float *g = oc_xcalloc((size_t)whole.n, sizeof *g);
    for (int64_t r = 0; r < 4; r++) {
        struct oc_params_opts o = {4, r, all, 2, 1, 1, SEED};
        CU_ASSERT_EQUAL_FATAL(oc_params_init(&q[r], &m2, &o, &st), 0);
        CU_ASSERT_EQUAL(q[r].n, 42080);
        oc_params_put_whole(&q[r], q[r].w, &whole, g);
    }
    CU_ASSERT(memcmp(g, whole.w, (size_t)whole.n * sizeof *g) == 0);
    /* take_full is the inverse of put_full */
    const struct oc_param_tensor *tq = oc_params_tensor(&q[2], OC_P_FCPROJW, 1);
    const struct oc_param_tensor *tw = oc_params_tensor(&whole, OC_P_FCPROJW, 1);
    float *back = oc_xcalloc((size_t)q[2].n, sizeof *back);
    oc_params_take_full(&q[2], back, tq, whole.w + tw->offset);
    CU_ASSERT(memcmp(back + tq->offset, q[2].w + tq->offset,
                     (size_t)(tq->rows * tq->cols) * sizeof *back) == 0);
    free(back);
    for (int64_t r = 0; r < 4; r++)
        oc_params_free(&q[r]);
    free(g);
    oc_params_free(&whole);
}

static void test_data(void)
{
    struct oc_synth s;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_synth_init(&s, 512, 7, &st), 0);
    const int64_t T = 32;
    int32_t in8[8 * 32], tg8[8 * 32], in4[4 * 32], tg4[4 * 32], in1[32], tg1[32];
    /* step 1 of G = 8 as one batch of 8 ... */
    oc_synth_batch(&s, 8, 8, T, in8, tg8);
    /* ... as d = 2 ranks x m = 2 micro-batches x b = 2: rank 1, mb 0, row 1
     * is global index 1*8 + 1*(8/2) + 0*2 + 1 = 13, row 5 of the batch */
    int64_t g = oc_synth_sample_index(1, 8, 2, 1, 2, 0, 2, 1);
    CU_ASSERT_EQUAL(g, 13);
    oc_synth_sample(&s, g, T, in1, tg1);
    CU_ASSERT(memcmp(in1, in8 + 5 * T, sizeof in1) == 0);
    CU_ASSERT(memcmp(tg1, tg8 + 5 * T, sizeof tg1) == 0);
    /* ... and as two batches of 4 */
    oc_synth_batch(&s, 12, 4, T, in4, tg4);
    CU_ASSERT(memcmp(in4, in8 + 4 * T, sizeof in4) == 0);
    /* every index of the step is hit once: (dp, mb, row) -> [8, 16) */
    int hit[8] = {0};
    for (int64_t r = 0; r < 2; r++)
        for (int64_t mb = 0; mb < 2; mb++)
            for (int64_t row = 0; row < 2; row++)
                hit[oc_synth_sample_index(1, 8, 2, r, 2, mb, 2, row) - 8]++;
    for (int i = 0; i < 8; i++)
        CU_ASSERT_EQUAL(hit[i], 1);

    /* targets are the inputs shifted by one */
    for (int64_t i = 0; i + 1 < T; i++)
        CU_ASSERT_EQUAL(tg1[i], in1[i + 1]);
    /* perm is a permutation */
    int seen[512] = {0};
    for (int i = 0; i < 512; i++)
        seen[s.perm[i]]++;
    int ok = 1;
    for (int i = 0; i < 512; i++)
        ok &= seen[i] == 1;
    CU_ASSERT(ok);
    /* P(next = perm[prev]) = 0.9 + 0.1/512 = 0.900195; over 400*32 =
     * 12800 transitions the std of the rate is sqrt(.9*.1/12800) = 0.0027:
     * 0.02 is 7 std. */
    int64_t follow = 0, n = 0;
    for (int64_t k = 0; k < 400; k++) {
        oc_synth_sample(&s, k, T, in1, tg1);
        for (int64_t i = 0; i < T; i++, n++)
            follow += tg1[i] == s.perm[in1[i]];
    }
    CU_ASSERT_DOUBLE_EQUAL((double)follow / (double)n, 0.900195, 0.02);
    /* H = -q ln q - 511 r ln r, r = 0.1/512 = 1.953125e-4,
     * q = 0.9001953125: -q ln q = 0.9001953125 * 0.1051435 = 0.0946497;
     * -511 r ln r = 0.0998047 * 8.5408636 = 0.8524184; H = 0.947068 nats
     * (vs ln 512 = 6.238325). */
    OC_ASSERT_REL(oc_synth_entropy(&s), 0.947068, 1e-5);
    /* another seed, another permutation */
    struct oc_synth s2;
    CU_ASSERT_EQUAL_FATAL(oc_synth_init(&s2, 512, 8, &st), 0);
    CU_ASSERT(memcmp(s.perm, s2.perm, 512 * sizeof *s.perm) != 0);
    oc_synth_free(&s2);
    oc_synth_free(&s);
    CU_ASSERT_EQUAL(oc_synth_init(&s, 1, 7, &st), -1);
    CU_ASSERT(strstr(st.msg, "vocabulary 1") != NULL);
}

/* TP equivalence over L = 2 layers, B = 2, T = 32 (64 tokens). */
static void test_tp_equivalence(void)
{
    struct oc_model m = tiny(2);
    struct batch b = make_batch(m.vocab_size, 0, 2, 32);
    static struct shard ref[1], sh[TMAX];
    shards_run(ref, 1, &m, &b, OC_RECOMPUTE_NONE);

    /* At init the logits are small (|lnf| ~ sqrt(64) = 8 times weights of
     * std 0.02: logit std ~ 0.16), so the mean loss is ln 512 = 6.2383 plus
     * about var/2 = 0.013: within 0.05 of 6.25. */
    double ref_loss = 0;
    for (int64_t i = 0; i < ref[0].N; i++)
        ref_loss += ref[0].losses[i];
    ref_loss /= (double)ref[0].N;
    CU_ASSERT_DOUBLE_EQUAL(ref_loss, 6.25, 0.05);

    for (int64_t t = 2; t <= 4; t *= 2) {
        shards_run(sh, t, &m, &b, OC_RECOMPUTE_NONE);
        for (int64_t r = 0; r < t; r++) {
            /* every rank has the same losses after the all-reduces */
            CU_ASSERT(memcmp(sh[r].losses, sh[0].losses,
                             (size_t)sh[0].N * sizeof(float)) == 0);
            CU_ASSERT(rel_l2(sh[r].losses, ref[0].losses, ref[0].N) < 1e-5);
            /* and the same input gradient of the embedding */
            CU_ASSERT(rel_l2(sh[r].dx, ref[0].dx, ref[0].N * ref[0].C) < 1e-5);
        }
        float *g = gather_grads(sh, t, &ref[0].p);
        for (int64_t i = 0; i < ref[0].p.nt; i++) {
            const struct oc_param_tensor *tt = &ref[0].p.t[i];
            int64_t n = tt->rows * tt->cols;
            double e = rel_l2(g + tt->offset, ref[0].p.g + tt->offset, n);
            CU_ASSERT(e < 1e-5);
            if (e >= 1e-5)
                fprintf(stderr, "\n  t=%lld %s layer %lld: rel %.3g\n",
                        (long long)t, oc_param_name(tt->kind),
                        (long long)tt->layer, e);
        }
        /* replicated tensors get the same gradient on every rank, bitwise */
        for (int64_t i = 0; i < sh[0].p.nt; i++) {
            const struct oc_param_tensor *tt = &sh[0].p.t[i];
            if (tt->rows != tt->grows || tt->cols != tt->gcols)
                continue;
            for (int64_t r = 1; r < t; r++)
                CU_ASSERT(memcmp(sh[r].p.g + tt->offset, sh[0].p.g + tt->offset,
                                 (size_t)(tt->rows * tt->cols) * sizeof(float)) == 0);
        }
        free(g);
        for (int64_t r = 0; r < t; r++)
            shard_free(&sh[r]);
    }
    /* every gradient tensor is non-trivial at t = 1 (the checks above are
     * not comparing zeros), biases of the QKV included */
    for (int64_t i = 0; i < ref[0].p.nt; i++) {
        const struct oc_param_tensor *tt = &ref[0].p.t[i];
        double ss = 0;
        for (int64_t j = 0; j < tt->rows * tt->cols; j++)
            ss += (double)ref[0].p.g[tt->offset + j] * ref[0].p.g[tt->offset + j];
        CU_ASSERT(ss > 0);
    }
    shard_free(&ref[0]);
    batch_free(&b);
}

/* Full and selective recompute: bitwise the same losses and gradients as
 * keeping everything, at t = 1 and t = 2. */
static void test_recompute_bitwise(void)
{
    struct oc_model m = tiny(2);
    struct batch b = make_batch(m.vocab_size, 3, 2, 32);
    static struct shard base[2], other[2];
    for (int64_t t = 1; t <= 2; t++) {
        shards_run(base, t, &m, &b, OC_RECOMPUTE_NONE);
        enum oc_recompute modes[] = {OC_RECOMPUTE_FULL, OC_RECOMPUTE_SELECTIVE};
        for (int k = 0; k < 2; k++) {
            shards_run(other, t, &m, &b, modes[k]);
            for (int64_t r = 0; r < t; r++) {
                CU_ASSERT(memcmp(other[r].p.g, base[r].p.g,
                                 (size_t)base[r].p.n * sizeof(float)) == 0);
                CU_ASSERT(memcmp(other[r].losses, base[r].losses,
                                 (size_t)base[r].N * sizeof(float)) == 0);
                CU_ASSERT(memcmp(other[r].dx, base[r].dx,
                                 (size_t)(base[r].N * base[r].C) * sizeof(float)) == 0);
                shard_free(&other[r]);
            }
        }
        for (int64_t r = 0; r < t; r++)
            shard_free(&base[r]);
    }
    batch_free(&b);
}

/* Callback mode: t = 2 threads, each walking its own op list, with an
 * in-process all-reduce (barrier, rank-order sum by rank 0). */
struct tgroup {
    pthread_barrier_t bar;
    float *bufs[TMAX];
    float *acc;
    int64_t t;
};

struct tmember {
    struct tgroup *g;
    int64_t rank;
    struct shard *s;
    const struct oc_schedule *sched;
    int rc;
};

static int tgroup_allreduce(void *ctx, float *buf, int64_t n,
                            enum oc_gpt_reduce op)
{
    struct tmember *me = ctx;
    struct tgroup *g = me->g;
    g->bufs[me->rank] = buf;
    pthread_barrier_wait(&g->bar);
    if (me->rank == 0) {
        g->acc = oc_xmalloc((size_t)n * sizeof(float));
        memcpy(g->acc, g->bufs[0], (size_t)n * sizeof(float));
        for (int64_t r = 1; r < g->t; r++)
            combine(g->acc, g->bufs[r], n, op);
    }
    pthread_barrier_wait(&g->bar);
    memcpy(buf, g->acc, (size_t)n * sizeof(float));
    pthread_barrier_wait(&g->bar);
    if (me->rank == 0)
        free(g->acc);
    return 0;
}

static void *tmember_main(void *arg)
{
    struct tmember *me = arg;
    struct oc_gpt_comm comm = {me, tgroup_allreduce};
    const struct oc_rank_ops *ops = &me->sched->ranks[me->rank];
    for (int64_t i = 0; i < ops->n && me->rc == 0; i++) {
        const struct oc_op *op = &ops->ops[i];
        if (op->kind != OC_OP_COMPUTE || op->phase == OC_PHASE_OPTIMIZER)
            continue;
        struct oc_gpt_call c = {.comm = &comm};
        me->rc = part_call(me->s, &c, op);
    }
    return NULL;
}

static void test_callback_threads(void)
{
    struct oc_model m = tiny(2);
    struct batch b = make_batch(m.vocab_size, 5, 2, 32);
    static struct shard step[2], cb[2];
    shards_run(step, 2, &m, &b, OC_RECOMPUTE_NONE);

    struct oc_schedule s = one_stage_schedule(&m, 2, 2, 32, OC_RECOMPUTE_NONE);
    struct tgroup g;
    memset(&g, 0, sizeof g);
    g.t = 2;
    pthread_barrier_init(&g.bar, NULL, 2);
    struct tmember mem[2];
    pthread_t th[2];
    for (int64_t r = 0; r < 2; r++) {
        shard_init(&cb[r], &m, 2, r, 2, 32, OC_RECOMPUTE_NONE);
        perturb_vectors(&cb[r].p);
        cb[r].tok = b.tok;
        cb[r].tgt = b.tgt;
        cb[r].grad_scale = 1.0f / 64.0f;
        mem[r] = (struct tmember){&g, r, &cb[r], &s, 0};
    }
    for (int64_t r = 0; r < 2; r++)
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[r], NULL, tmember_main, &mem[r]), 0);
    for (int64_t r = 0; r < 2; r++)
        pthread_join(th[r], NULL);
    pthread_barrier_destroy(&g.bar);
    for (int64_t r = 0; r < 2; r++) {
        CU_ASSERT_EQUAL(mem[r].rc, 0);
        CU_ASSERT(memcmp(cb[r].p.g, step[r].p.g,
                         (size_t)step[r].p.n * sizeof(float)) == 0);
        CU_ASSERT(memcmp(cb[r].losses, step[r].losses,
                         (size_t)step[r].N * sizeof(float)) == 0);
        shard_free(&cb[r]);
        shard_free(&step[r]);
    }
    oc_schedule_free(&s);
    batch_free(&b);
}

/* A callback that fails makes the part return -1 and resets the call. */
static int failing_allreduce(void *ctx, float *buf, int64_t n,
                             enum oc_gpt_reduce op)
{
    (void)buf, (void)n, (void)op;
    (*(int *)ctx)++;
    return -1;
}

static void test_callback_failure(void)
{
    struct oc_model m = tiny(1);
    struct batch b = make_batch(m.vocab_size, 0, 1, 8);
    static struct shard s;
    shard_init(&s, &m, 2, 0, 1, 8, OC_RECOMPUTE_NONE);
    int calls = 0;
    struct oc_gpt_comm comm = {&calls, failing_allreduce};
    struct oc_gpt_call c = {.comm = &comm};
    CU_ASSERT_EQUAL(oc_gpt_embed_fwd(&K, &c, &s.d, &s.p, b.tok, X(&s, 0)), -1);
    CU_ASSERT_EQUAL(calls, 1);
    CU_ASSERT_EQUAL(c.step, 0);
    shard_free(&s);
    batch_free(&b);
}

/* Mean loss of one t = 1 forward, summed in double. */
static double fwd_loss(struct shard *s, const struct oc_model *m, int64_t B,
                       int64_t T)
{
    struct oc_schedule sc = one_stage_schedule(m, 1, B, T, OC_RECOMPUTE_NONE);
    for (int64_t i = 0; i < sc.ranks[0].n; i++) {
        const struct oc_op *op = &sc.ranks[0].ops[i];
        if (op->kind == OC_OP_COMPUTE && op->phase == OC_PHASE_FWD)
            lockstep(s, 1, op);
    }
    oc_schedule_free(&sc);
    double sum = 0;
    for (int64_t i = 0; i < s->N; i++)
        sum += s->losses[i];
    return sum / (double)s->N;
}

/* Central differences (f(w+e) - f(w-e)) / 2e on the entry of largest
 * gradient of several tensors. The forward is fp32: with e = 1e-3 the
 * rounding of the loss (~1e-7 relative) is already a few % of the small
 * LayerNorm gradients; e = 1e-2 keeps both it and the O(e^2) truncation
 * under 0.2% here, so 1% agreement is asked. */
static void test_finite_difference(void)
{
    struct oc_model m = tiny(2);
    const int64_t B = 2, T = 16;
    struct batch b = make_batch(m.vocab_size, 11, B, T);
    static struct shard s;
    shards_run(&s, 1, &m, &b, OC_RECOMPUTE_NONE);
    const struct {
        enum oc_param_kind k;
        int64_t layer;
    } probe[] = {
        {OC_P_WTE, -1},     {OC_P_WPE, -1},      {OC_P_QKVW, 0},
        {OC_P_QKVB, 1},     {OC_P_ATTPROJW, 1},  {OC_P_LN1W, 0},
        {OC_P_FCW, 1},      {OC_P_FCPROJB, 0},   {OC_P_LN2B, 1},
        {OC_P_LNFW, -1},
    };
    for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
        const struct oc_param_tensor *tt =
            oc_params_tensor(&s.p, probe[i].k, probe[i].layer);
        int64_t n = tt->rows * tt->cols, best = 0;
        for (int64_t j = 1; j < n; j++)
            if (fabsf(s.p.g[tt->offset + j]) > fabsf(s.p.g[tt->offset + best]))
                best = j;
        float *w = s.p.w + tt->offset + best;
        const float w0 = *w, eps = 1e-2f;
        *w = w0 + eps;
        double lp = fwd_loss(&s, &m, B, T);
        *w = w0 - eps;
        double lm = fwd_loss(&s, &m, B, T);
        *w = w0;
        double fd = (lp - lm) / (2.0 * (double)eps);
        double an = s.p.g[tt->offset + best];
        CU_ASSERT(fabs(an) > 1e-5);
        CU_ASSERT(fabs(fd - an) <= 1e-2 * fabs(an));
        if (!(fabs(fd - an) <= 1e-2 * fabs(an)))
            fprintf(stderr, "\n  %s[%lld]: analytic %.6g, numeric %.6g\n",
                    oc_param_name(tt->kind), (long long)best, an, fd);
    }
    shard_free(&s);
    batch_free(&b);
}

/* Tied embedding over two pipeline stages (stage 0: embedding + layer 0;
 * stage 1: layer 1 + head) at t = 1, called in callback mode with no
 * communication needed. */
static void test_tied_pipeline_split(void)
{
    struct oc_model m = tiny(2);
    CU_ASSERT_EQUAL_FATAL(m.tie_word_embeddings, 1);
    const int64_t B = 2, T = 16, N = B * T, C = 64;
    struct batch b = make_batch(m.vocab_size, 21, B, T);
    static struct shard one;
    shards_run(&one, 1, &m, &b, OC_RECOMPUTE_NONE);

    struct oc_status st = {{0}};
    int64_t l0[] = {0}, l1[] = {1};
    struct oc_params s0, s1;
    struct oc_params_opts o0 = {1, 0, l0, 1, 1, 0, SEED};
    struct oc_params_opts o1 = {1, 0, l1, 1, 0, 1, SEED};
    CU_ASSERT_EQUAL_FATAL(oc_params_init(&s0, &m, &o0, &st), 0);
    CU_ASSERT_EQUAL_FATAL(oc_params_init(&s1, &m, &o1, &st), 0);
    perturb_vectors(&s0);
    perturb_vectors(&s1);
    CU_ASSERT_EQUAL(s1.head_uses_wte, 0);
    CU_ASSERT_EQUAL(one.p.head_uses_wte, 1);
    /* the head's copy starts equal to wte */
    CU_ASSERT(memcmp(oc_params_w(&s0, OC_P_WTE, -1), oc_params_w(&s1, OC_P_LMW, -1),
                     512 * 64 * sizeof(float)) == 0);
    int64_t n0, n1, n2;
    float *g0 = oc_params_tied_grad(&s0, &n0);
    float *g1 = oc_params_tied_grad(&s1, &n1);
    CU_ASSERT_PTR_EQUAL(g0, oc_params_g(&s0, OC_P_WTE, -1));
    CU_ASSERT_PTR_EQUAL(g1, oc_params_g(&s1, OC_P_LMW, -1));
    CU_ASSERT_EQUAL(n0, 512 * 64);
    CU_ASSERT_EQUAL(n1, 512 * 64);
    CU_ASSERT_PTR_NULL(oc_params_tied_grad(&one.p, &n2));
    CU_ASSERT_EQUAL(n2, 0);

    struct oc_gpt_dims d;
    CU_ASSERT_EQUAL_FATAL(oc_gpt_dims_init(&d, &m, 1, 0, B, T, &st), 0);
    float *x = oc_xcalloc((size_t)(5 * N * C), sizeof *x); /* 5 streams */
    float *dx = oc_xcalloc((size_t)(N * C), sizeof *dx);
    float *work = oc_xcalloc((size_t)oc_gpt_work_floats(&K, &d), sizeof *work);
    float *losses = oc_xcalloc((size_t)N, sizeof *losses);
    int64_t A = oc_gpt_attn_act_floats(&d), M = oc_gpt_mlp_act_floats(&d);
    float *mem = oc_xcalloc((size_t)(2 * (A + M) + oc_gpt_head_act_floats(&d)),
                            sizeof *mem);
    struct oc_gpt_attn_act at[2];
    struct oc_gpt_mlp_act ml[2];
    struct oc_gpt_head_act hd;
    for (int l = 0; l < 2; l++) {
        oc_gpt_attn_act_bind(&at[l], &d, x + 2 * l * N * C, mem + l * (A + M));
        oc_gpt_mlp_act_bind(&ml[l], &d, x + (2 * l + 1) * N * C,
                            mem + l * (A + M) + A);
    }
    oc_gpt_head_act_bind(&hd, &d, x + 4 * N * C, mem + 2 * (A + M));
    struct oc_gpt_call c = {0};
    const float scale = 1.0f / (float)N;
    /* stage 0 forward; x + 2NC is what it would send */
    CU_ASSERT_EQUAL(oc_gpt_embed_fwd(&K, &c, &d, &s0, b.tok, x), OC_GPT_DONE);
    CU_ASSERT_EQUAL(oc_gpt_attn_fwd(&K, &c, &d, &s0, 0, &at[0], x + N * C), 0);
    CU_ASSERT_EQUAL(oc_gpt_mlp_fwd(&K, &c, &d, &s0, 0, &ml[0], x + 2 * N * C), 0);
    /* stage 1 forward and backward */
    CU_ASSERT_EQUAL(oc_gpt_attn_fwd(&K, &c, &d, &s1, 1, &at[1], x + 3 * N * C), 0);
    CU_ASSERT_EQUAL(oc_gpt_mlp_fwd(&K, &c, &d, &s1, 1, &ml[1], x + 4 * N * C), 0);
    CU_ASSERT_EQUAL(oc_gpt_head_fwd(&K, &c, &d, &s1, &hd, b.tgt, losses), 0);
    CU_ASSERT_EQUAL(c.nreduce, 0);
    CU_ASSERT(memcmp(losses, one.losses, (size_t)N * sizeof *losses) == 0);
    CU_ASSERT_EQUAL(oc_gpt_head_bwd(&K, &c, &d, &s1, &hd, b.tgt, scale, dx, work), 0);
    CU_ASSERT_EQUAL(oc_gpt_mlp_bwd(&K, &c, &d, &s1, 1, &ml[1], dx, dx, work), 0);
    CU_ASSERT_EQUAL(oc_gpt_attn_bwd(&K, &c, &d, &s1, 1, &at[1], dx, dx, work), 0);
    /* stage 0 backward from the received gradient dx */
    CU_ASSERT_EQUAL(oc_gpt_mlp_bwd(&K, &c, &d, &s0, 0, &ml[0], dx, dx, work), 0);
    CU_ASSERT_EQUAL(oc_gpt_attn_bwd(&K, &c, &d, &s0, 0, &at[0], dx, dx, work), 0);
    CU_ASSERT_EQUAL(oc_gpt_embed_bwd(&K, &c, &d, &s0, b.tok, dx), 0);
    const float *want = oc_params_g(&one.p, OC_P_WTE, -1);
    /* neither share alone is the total: the sum matters (seen: 0.88 and
     * 0.50 away from it) */
    CU_ASSERT(rel_l2(g0, want, n0) > 0.2);
    CU_ASSERT(rel_l2(g1, want, n1) > 0.2);
    /* the EMBED-group all-reduce: g0 + g1 on both stages */
    for (int64_t i = 0; i < n0; i++) {
        float sum = g0[i] + g1[i];
        g0[i] = sum;
        g1[i] = sum;
    }
    CU_ASSERT(rel_l2(g0, want, n0) < 1e-6);
    CU_ASSERT(rel_l2(g1, want, n1) < 1e-6);
    /* every other gradient of the two stages matches the one-stage one */
    const struct oc_params *stage[2] = {&s0, &s1};
    for (int k = 0; k < 2; k++)
        for (int64_t i = 0; i < stage[k]->nt; i++) {
            const struct oc_param_tensor *tt = &stage[k]->t[i];
            if (tt->kind == OC_P_WTE || tt->kind == OC_P_LMW)
                continue;
            const struct oc_param_tensor *to =
                oc_params_tensor(&one.p, tt->kind, tt->layer);
            CU_ASSERT(rel_l2(stage[k]->g + tt->offset, one.p.g + to->offset,
                             tt->rows * tt->cols) < 1e-6);
        }
    free(mem);
    free(losses);
    free(work);
    free(dx);
    free(x);
    oc_params_free(&s1);
    oc_params_free(&s0);
    shard_free(&one);
    batch_free(&b);
}

/* 50 AdamW steps at t = 1 on the synthetic task (L = 2, B = 8, T = 32, a
 * new batch each step) take the loss from about ln 512 = 6.24 to below 70%
 * of its first value. */
static void test_training_loss_falls(void)
{
    struct oc_model m = tiny(2);
    const int64_t B = 8, T = 32, steps = 50;
    static struct shard s;
    shard_init(&s, &m, 1, 0, B, T, OC_RECOMPUTE_NONE);
    struct oc_synth syn;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_synth_init(&syn, m.vocab_size, SEED, &st), 0);
    int32_t *tok = oc_xmalloc((size_t)(B * T) * sizeof *tok);
    int32_t *tgt = oc_xmalloc((size_t)(B * T) * sizeof *tgt);
    s.tok = tok;
    s.tgt = tgt;
    s.grad_scale = 1.0f / (float)(B * T);
    struct oc_schedule sc = one_stage_schedule(&m, 1, B, T, OC_RECOMPUTE_NONE);
    const struct oc_adamw h = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f};
    double first = 0, last = 0;
    for (int64_t k = 0; k < steps; k++) {
        oc_synth_batch(&syn, k * B, B, T, tok, tgt);
        oc_params_zero_grad(&s.p);
        for (int64_t i = 0; i < sc.ranks[0].n; i++) {
            const struct oc_op *op = &sc.ranks[0].ops[i];
            if (op->kind == OC_OP_COMPUTE && op->phase != OC_PHASE_OPTIMIZER)
                lockstep(&s, 1, op);
        }
        double loss = 0;
        for (int64_t i = 0; i < s.N; i++)
            loss += s.losses[i];
        loss /= (double)s.N;
        if (k == 0)
            first = loss;
        last = loss;
        oc_params_adamw(&K, &s.p, &h, k + 1, 0, s.p.n);
    }
    fprintf(stderr, " [loss %.3f -> %.3f] ", first, last);
    CU_ASSERT_DOUBLE_EQUAL(first, 6.25, 0.05);
    CU_ASSERT(last < 0.7 * first);
    oc_schedule_free(&sc);
    free(tgt);
    free(tok);
    oc_synth_free(&syn);
    shard_free(&s);
}

/* AdamW by hand on one element: g = 0.5, w = 1, lr 0.1, b1 0.9, b2 0.999,
 * eps 0, wd 0.01 at step 1: m = 0.05, v = 0.00025, mhat = 0.5, vhat = 0.25,
 * w = 1 - 0.1*0.01*1 - 0.1 * 0.5/0.5 = 0.899 (decayed tensor) and 0.9 for
 * a bias (no decay). */
static void test_adamw_by_hand(void)
{
    struct oc_model m = tiny(1);
    int64_t l[] = {0};
    struct oc_params p;
    struct oc_status st = {{0}};
    struct oc_params_opts o = {1, 0, l, 1, 0, 0, SEED};
    CU_ASSERT_EQUAL_FATAL(oc_params_init(&p, &m, &o, &st), 0);
    float *w = oc_params_w(&p, OC_P_FCW, 0), *b = oc_params_w(&p, OC_P_FCB, 0);
    w[3] = 1.0f;
    b[3] = 1.0f;
    oc_params_g(&p, OC_P_FCW, 0)[3] = 0.5f;
    oc_params_g(&p, OC_P_FCB, 0)[3] = 0.5f;
    const struct oc_adamw h = {0.1f, 0.9f, 0.999f, 0.0f, 0.01f};
    oc_params_adamw(&K, &p, &h, 1, 0, p.n);
    CU_ASSERT_DOUBLE_EQUAL(w[3], 0.899, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(b[3], 0.9, 1e-6);
    /* a range that excludes fcb leaves it alone */
    const struct oc_param_tensor *tb = oc_params_tensor(&p, OC_P_FCB, 0);
    oc_params_adamw(&K, &p, &h, 2, 0, tb->offset);
    CU_ASSERT_EQUAL(b[3], 0.9f);
    oc_params_free(&p);
}

static void test_refusals(void)
{
    struct oc_status st = {{0}};
    struct oc_model m = tiny(2);
    struct oc_model g = m;
    g.num_key_value_heads = 2;
    CU_ASSERT_EQUAL(oc_params_check_model(&g, 1, &st), -1);
    CU_ASSERT(strstr(st.msg, "grouped-query") != NULL);
    struct oc_model ll = m;
    ll.arch = OC_ARCH_LLAMA;
    CU_ASSERT_EQUAL(oc_params_check_model(&ll, 1, &st), -1);
    CU_ASSERT(strstr(st.msg, "GPT style") != NULL);
    CU_ASSERT_EQUAL(oc_params_check_model(&m, 8, &st), -1); /* 4 heads */
    CU_ASSERT(strstr(st.msg, "heads 4") != NULL);
    struct oc_model v = m;
    v.vocab_size = 514;
    CU_ASSERT_EQUAL(oc_params_check_model(&v, 4, &st), -1);
    CU_ASSERT(strstr(st.msg, "vocabulary 514") != NULL);

    struct oc_layout l;
    oc_layout_default(&l); /* sequence parallel on by default */
    l.tp = 2;
    l.seq_length = 32;
    CU_ASSERT_EQUAL(oc_gpt_check_layout(&m, &l, &st), -1);
    CU_ASSERT(strstr(st.msg, "sequence parallelism") != NULL);
    l.sequence_parallel = 0;
    CU_ASSERT_EQUAL(oc_gpt_check_layout(&m, &l, &st), 0);
    l.seq_length = 129; /* P = 128 */
    CU_ASSERT_EQUAL(oc_gpt_check_layout(&m, &l, &st), -1);
    CU_ASSERT(strstr(st.msg, "129") != NULL);
    struct oc_gpt_dims d;
    CU_ASSERT_EQUAL(oc_gpt_dims_init(&d, &m, 2, 2, 1, 8, &st), -1);
    CU_ASSERT(strstr(st.msg, "TP rank 2") != NULL);

    int64_t bad[] = {0, 0};
    struct oc_params p;
    struct oc_params_opts o = {1, 0, bad, 2, 0, 0, SEED};
    CU_ASSERT_EQUAL(oc_params_init(&p, &m, &o, &st), -1);
    CU_ASSERT(strstr(st.msg, "twice") != NULL);
    bad[1] = 2;
    CU_ASSERT_EQUAL(oc_params_init(&p, &m, &o, &st), -1);
    CU_ASSERT(strstr(st.msg, "layer 2") != NULL);
}

static int suite_init(void)
{
    /* OpenBLAS may thread its GEMMs; one thread keeps every run bitwise
     * the same and leaves the shared cores to others. */
    openblas_set_num_threads(1);
    K = oc_kernels_cpu();
    return 0;
}

static CU_TestInfo tests[] = {
    {"init_counter", test_init_counter},
    {"data", test_data},
    {"tp_equivalence", test_tp_equivalence},
    {"recompute_bitwise", test_recompute_bitwise},
    {"callback_threads", test_callback_threads},
    {"callback_failure", test_callback_failure},
    {"finite_difference", test_finite_difference},
    {"tied_pipeline_split", test_tied_pipeline_split},
    {"adamw_by_hand", test_adamw_by_hand},
    {"training_loss_falls", test_training_loss_falls},
    {"refusals", test_refusals},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"exec_gpt", suite_init, NULL, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void)
{
    return oc_test_run(suites);
}
