/* exec_gpt_fixtures.c: the tiny model, the cpu kernel table and the
 * one-stage TP shard that the suites of the executor's model share (see
 * exec_gpt_fixtures.h). */
#define _POSIX_C_SOURCE 200809L
#include "exec_gpt_fixtures.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "test_util.h"

struct oc_kernels K;

int gpt_suite_init(void)
{
    /* OpenBLAS may thread its GEMMs; one thread keeps every run bitwise
     * the same and leaves the shared cores to others. */
    openblas_set_num_threads(1);
    K = oc_kernels_cpu();
    return 0;
}

static struct oc_model shipped(const char *name, int64_t L)
{
    struct oc_model m;
    struct oc_status st = {{0}};
    int rc = oc_model_load(name, &m, &st);
    if (rc != 0)
        fprintf(stderr, "\n  cannot load %s: %s\n", name, st.msg);
    OC_ASSERT(rc == 0);
    m.num_hidden_layers = L;
    return m;
}

struct oc_model tiny(int64_t L)
{
    return shipped("tiny", L);
}

struct oc_model llama_tiny(int64_t L)
{
    return shipped("llama-tiny", L);
}

/* ------------------------------------------------------------------ */
/* One TP shard holding the whole model (one pipeline stage)            */

void shard_init(struct shard *s, const struct oc_model *m, int64_t t,
                int64_t r, int64_t B, int64_t T, enum oc_recompute rc)
{
    shard_init_v(s, m, t, r, B, T, rc, CLASSIC);
}

void shard_init_v(struct shard *s, const struct oc_model *m, int64_t t,
                  int64_t r, int64_t B, int64_t T, enum oc_recompute rc,
                  struct variant v)
{
    memset(s, 0, sizeof *s);
    struct oc_status st = {{0}};
    OC_ASSERT(oc_gpt_dims_init(&s->d, m, t, r, B, T, &st) == 0);
    oc_gpt_dims_knobs(&s->d, v.attention, v.sp);
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
    s->S = oc_gpt_stream_floats(&s->d);
    s->x = oc_xcalloc((size_t)((2 * s->L + 1) * s->S), sizeof(float));
    s->dx = oc_xcalloc((size_t)s->S, sizeof(float));
    s->rin = oc_xcalloc((size_t)s->S, sizeof(float));
    s->junk = oc_xcalloc((size_t)s->S, sizeof(float));
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
        if (rc == OC_RECOMPUTE_SELECTIVE) /* laid out last: past `per` */
            oc_gpt_attn_act_scores_at(&s->attn[l], &s->d, s->att_scratch);
        mem += per;
        oc_gpt_mlp_act_bind(&s->mlp[l], &s->d, X(s, 2 * l + 1), mem);
        mem += M;
    }
    oc_gpt_head_act_bind(&s->head, &s->d, X(s, 2 * s->L), mem);
}

void shard_free(struct shard *s)
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
int part_call(struct shard *s, struct oc_gpt_call *c,
              const struct oc_op *op)
{
    const int64_t l = op->layer_first;
    const int full = s->rc == OC_RECOMPUTE_FULL;
    float *attn_out = full ? s->rin : X(s, 2 * l + 1);
    switch ((enum oc_phase)op->phase) {
    case OC_PHASE_FWD:
        switch ((enum oc_part)op->part) {
        case OC_PART_EMBED:
            return oc_gpt_embed_fwd(&K, c, &s->d, &s->p, s->tok, X(s, 0), s->work);
        case OC_PART_ATTN:
            return oc_gpt_attn_fwd(&K, c, &s->d, &s->p, l, &s->attn[l], attn_out,
                                   s->work);
        case OC_PART_MLP:
            return oc_gpt_mlp_fwd(&K, c, &s->d, &s->p, l, &s->mlp[l],
                                  X(s, 2 * l + 2), s->work);
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
            return oc_gpt_attn_fwd(&K, c, &s->d, &s->p, l, &s->attn[l], s->rin,
                                   s->work);
        if (op->part == OC_PART_MLP && full)
            return oc_gpt_mlp_fwd(&K, c, &s->d, &s->p, l, &s->mlp[l], s->junk,
                                  s->work);
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
            return oc_gpt_embed_bwd(&K, c, &s->d, &s->p, s->tok, s->dx, s->work);
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
void combine(float *acc, const float *x, int64_t n, enum oc_gpt_reduce op)
{
    for (int64_t i = 0; i < n; i++)
        acc[i] = op == OC_GPT_SUM ? acc[i] + x[i] : fmaxf(acc[i], x[i]);
}

/* One collective of the t shards' calls c, in rank order. */
static void collective(struct oc_gpt_call *c, int64_t t)
{
    const int64_t n = c[0].n, cnt = n / t;
    switch (c[0].coll) {
    case OC_GPT_ALLREDUCE: {
        float *acc = oc_xmalloc((size_t)n * sizeof *acc);
        memcpy(acc, c[0].buf, (size_t)n * sizeof *acc);
        for (int64_t r = 1; r < t; r++)
            combine(acc, c[r].buf, n, c[0].op);
        for (int64_t r = 0; r < t; r++)
            memcpy(c[r].buf, acc, (size_t)n * sizeof *acc);
        free(acc);
        return;
    }
    case OC_GPT_ALLGATHER:
        /* in place: rank r's block is at its place in its own buffer */
        for (int64_t r = 0; r < t; r++) {
            CU_ASSERT_PTR_EQUAL(c[r].shard, c[r].buf + r * cnt);
            for (int64_t q = 0; q < t; q++)
                if (q != r)
                    memcpy(c[q].buf + r * cnt, c[r].shard, (size_t)cnt * sizeof(float));
        }
        return;
    case OC_GPT_REDUCESCATTER: {
        float *acc = oc_xmalloc((size_t)n * sizeof *acc);
        memcpy(acc, c[0].buf, (size_t)n * sizeof *acc);
        for (int64_t r = 1; r < t; r++)
            combine(acc, c[r].buf, n, OC_GPT_SUM);
        for (int64_t r = 0; r < t; r++) {
            /* the shard is its own memory, not inside the summed buffer */
            CU_ASSERT(c[r].shard + cnt <= c[r].buf || c[r].shard >= c[r].buf + n);
            memcpy(c[r].shard, acc + r * cnt, (size_t)cnt * sizeof *acc);
        }
        free(acc);
        return;
    }
    }
    OC_ASSERT(0);
}

static enum oc_coll_kind coll_kind(enum oc_gpt_coll c)
{
    return c == OC_GPT_ALLGATHER       ? OC_COLL_ALLGATHER
           : c == OC_GPT_REDUCESCATTER ? OC_COLL_REDUCESCATTER
                                       : OC_COLL_ALLREDUCE;
}

int64_t lockstep_req(struct shard *sh, int64_t t, const struct oc_op *op,
                     struct request *req)
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
            CU_ASSERT_EQUAL(c[r].coll, c[0].coll);
            CU_ASSERT_EQUAL(c[r].n, c[0].n);
            CU_ASSERT_EQUAL(c[r].op, c[0].op);
        }
        if (rc[0] == OC_GPT_DONE)
            break;
        OC_ASSERT(rc[0] == OC_GPT_REDUCE);
        collective(c, t);
        if (req && nreq < REQ_MAX)
            req[nreq] = (struct request){coll_kind(c[0].coll), c[0].n};
        nreq++;
        CU_ASSERT_EQUAL(c[0].nreduce, nreq);
    }
    return nreq;
}

int64_t lockstep(struct shard *sh, int64_t t, const struct oc_op *op)
{
    return lockstep_req(sh, t, op, NULL);
}

/* A tp<t>-pp1-dp1 layout of one micro-batch of B sequences of length T. */
struct oc_schedule one_stage_schedule(const struct oc_model *m, int64_t t,
                                      int64_t B, int64_t T,
                                      enum oc_recompute rc)
{
    return one_stage_schedule_v(m, t, B, T, rc, CLASSIC);
}

struct oc_schedule one_stage_schedule_v(const struct oc_model *m, int64_t t,
                                        int64_t B, int64_t T,
                                        enum oc_recompute rc, struct variant v)
{
    struct oc_layout l;
    oc_layout_default(&l);
    l.tp = t;
    l.micro_batch = B;
    l.global_batch = B;
    l.seq_length = T;
    l.recompute = rc;
    l.attention = v.attention;
    l.sequence_parallel = v.sp;
    l.zero = 0;
    l.overlap_grad_reduce = 0;
    struct oc_status st = {{0}};
    OC_ASSERT(oc_gpt_check_layout(m, &l, &st) == 0);
    struct oc_schedule s;
    OC_ASSERT(oc_schedule_build(&s, m, &l, NULL, &st) == 0);
    return s;
}

/* The collectives a part asked for (got) against the ones the schedule
 * lists around its COMPUTE op (want): kind, and values at the layout's
 * element size (fp32 for the cross-entropy's). */
static void same_requests(const struct request *got, int64_t ngot,
                          const struct request *want, int64_t nwant)
{
    CU_ASSERT_EQUAL(ngot, nwant);
    for (int64_t k = 0; k < ngot && k < nwant && k < REQ_MAX; k++) {
        CU_ASSERT_EQUAL(got[k].coll, want[k].coll);
        CU_ASSERT_EQUAL(got[k].n, want[k].n);
    }
}

/* Forward and backward of one micro-batch on t shards, walking rank 0's op
 * list (every TP rank of the stage has the same list). Each COMPUTE op's
 * collectives must be the TP collectives the schedule lists around it:
 * an all-gather right before it (sequence parallelism), then those after
 * it up to the next op of another kind, in order, kind and size. */
static void run_schedule(struct shard *sh, int64_t t, const struct oc_model *m,
                         int64_t B, int64_t T, enum oc_recompute rc, struct variant v)
{
    struct oc_schedule s = one_stage_schedule_v(m, t, B, T, rc, v);
    const double e = oc_layout_act_bytes(&s.layout);
    const struct oc_op *ops = s.ranks[0].ops;
    struct request got[REQ_MAX], want[REQ_MAX];
    int64_t ngot = 0, nwant = 0, computes = 0;
    for (int64_t i = 0; i < s.ranks[0].n; i++) {
        const struct oc_op *op = &ops[i];
        if (op->kind == OC_OP_COLLECTIVE && op->group == OC_GROUP_TP) {
            const int ce = op->part == OC_PART_HEAD && op->phase == OC_PHASE_FWD &&
                           op->coll == OC_COLL_ALLREDUCE;
            for (int32_t k = 0; k < op->count; k++, nwant++)
                if (nwant < REQ_MAX)
                    want[nwant] = (struct request){(enum oc_coll_kind)op->coll,
                                                   (int64_t)(op->bytes / (ce ? 4.0 : e))};
        }
        if (op->kind != OC_OP_COMPUTE || op->phase == OC_PHASE_OPTIMIZER)
            continue;
        /* the all-gather just before this op is this op's */
        const int before = i > 0 && ops[i - 1].kind == OC_OP_COLLECTIVE &&
                           ops[i - 1].group == OC_GROUP_TP &&
                           ops[i - 1].coll == OC_COLL_ALLGATHER;
        if (computes > 0)
            same_requests(got, ngot, want, nwant - before);
        else
            CU_ASSERT_EQUAL(nwant - before, 0);
        if (before)
            want[0] = want[nwant - 1];
        nwant = before;
        ngot = lockstep_req(sh, t, op, got);
        computes++;
    }
    same_requests(got, ngot, want, nwant);
    /* embed, head and 2 parts per layer, forward and backward, plus the
     * recompute ops: 2 per layer (full) or 1 (selective) */
    int64_t L = m->num_hidden_layers;
    int64_t expect = 2 * (2 + 2 * L) +
                     (rc == OC_RECOMPUTE_FULL ? 2 * L
                      : rc == OC_RECOMPUTE_SELECTIVE ? L : 0);
    CU_ASSERT_EQUAL(computes, expect);
    oc_schedule_free(&s);
}

void sp_grads_sum(struct shard *sh, int64_t t)
{
    for (int64_t i = 0; i < sh[0].p.nt; i++) {
        const struct oc_param_tensor *tt = &sh[0].p.t[i];
        if (!oc_gpt_sp_partial_grad(&sh[0].d, tt->kind))
            continue;
        const int64_t n = tt->rows * tt->cols;
        float *acc = oc_xmalloc((size_t)n * sizeof *acc);
        memcpy(acc, sh[0].p.g + tt->offset, (size_t)n * sizeof *acc);
        for (int64_t r = 1; r < t; r++)
            combine(acc, sh[r].p.g + tt->offset, n, OC_GPT_SUM);
        for (int64_t r = 0; r < t; r++)
            memcpy(sh[r].p.g + tt->offset, acc, (size_t)n * sizeof *acc);
        free(acc);
    }
}

struct batch make_batch(int64_t V, int64_t g0, int64_t B, int64_t T)
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

void batch_free(struct batch *b)
{
    free(b->tok);
    free(b->tgt);
}

/* Moves gains and biases off their init values (1 and 0) so that a bias
 * added on every TP rank instead of once, or a gain applied twice, shows.
 * The shift is a function of the global element only, so every layout
 * gets the same model. */
void perturb_vectors(struct oc_params *p)
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
void shards_run(struct shard *sh, int64_t t, const struct oc_model *m,
                const struct batch *b, enum oc_recompute rc)
{
    shards_run_v(sh, t, m, b, rc, CLASSIC);
}

void shards_run_v(struct shard *sh, int64_t t, const struct oc_model *m,
                  const struct batch *b, enum oc_recompute rc, struct variant v)
{
    for (int64_t r = 0; r < t; r++) {
        shard_init_v(&sh[r], m, t, r, b->B, b->T, rc, v);
        perturb_vectors(&sh[r].p);
        sh[r].tok = b->tok;
        sh[r].tgt = b->tgt;
        sh[r].grad_scale = 1.0f / (float)(b->B * b->T);
    }
    run_schedule(sh, t, m, b->B, b->T, rc, v);
    sp_grads_sum(sh, t);
}

/* ||a - b|| / ||b|| */
double rel_l2(const float *a, const float *b, int64_t n)
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
float *gather_grads(const struct shard *sh, int64_t t,
                    const struct oc_params *whole)
{
    float *g = oc_xcalloc((size_t)whole->n, sizeof *g);
    for (int64_t r = 0; r < t; r++)
        oc_params_put_whole(&sh[r].p, sh[r].p.g, whole, g);
    return g;
}

/* ------------------------------------------------------------------ */
/* Checks the suites of both families run                              */

/* The comparison of check_tp_like_ref on shards sh that ran. */
static void tp_like_ref(const struct shard *ref, const struct shard *sh, int64_t t)
{
    for (int64_t r = 0; r < t; r++) {
        /* every rank has the same losses after the all-reduces */
        CU_ASSERT(memcmp(sh[r].losses, sh[0].losses, (size_t)sh[0].N * sizeof(float)) == 0);
        CU_ASSERT(rel_l2(sh[r].losses, ref->losses, ref->N) < 1e-5);
        /* and the same input gradient of the embedding (its rows here) */
        CU_ASSERT(rel_l2(sh[r].dx, ref->dx + sh[r].d.s0 * ref->C, sh[r].S) < 1e-5);
    }
    float *g = gather_grads(sh, t, &ref->p);
    for (int64_t i = 0; i < ref->p.nt; i++) {
        const struct oc_param_tensor *tt = &ref->p.t[i];
        double e = rel_l2(g + tt->offset, ref->p.g + tt->offset, tt->rows * tt->cols);
        CU_ASSERT(e < 1e-5);
        if (e >= 1e-5)
            fprintf(stderr, "\n  t=%lld %s layer %lld: rel %.3g\n", (long long)t,
                    oc_param_name(tt->kind), (long long)tt->layer, e);
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
}

void check_tp_like_ref(const struct shard *ref, const struct oc_model *m,
                       const struct batch *b, int64_t t)
{
    check_tp_like_ref_v(ref, m, b, t, CLASSIC);
}

void check_tp_like_ref_v(const struct shard *ref, const struct oc_model *m,
                         const struct batch *b, int64_t t, struct variant v)
{
    static struct shard sh[TMAX];
    OC_ASSERT(t >= 1 && t <= TMAX);
    shards_run_v(sh, t, m, b, OC_RECOMPUTE_NONE, v);
    CU_ASSERT_EQUAL(sh[0].d.sp, v.sp && t > 1);
    CU_ASSERT_EQUAL(sh[0].d.flash, v.attention == OC_ATTN_FLASH);
    tp_like_ref(ref, sh, t);
    for (int64_t r = 0; r < t; r++)
        shard_free(&sh[r]);
}

void check_grads_nonzero(const struct shard *s)
{
    for (int64_t i = 0; i < s->p.nt; i++) {
        const struct oc_param_tensor *tt = &s->p.t[i];
        double ss = 0;
        for (int64_t j = 0; j < tt->rows * tt->cols; j++)
            ss += (double)s->p.g[tt->offset + j] * s->p.g[tt->offset + j];
        CU_ASSERT(ss > 0);
    }
}

void check_recompute_bitwise(const struct oc_model *m, const struct batch *b)
{
    check_recompute_bitwise_v(m, b, CLASSIC);
}

void check_recompute_bitwise_v(const struct oc_model *m, const struct batch *b,
                               struct variant v)
{
    static struct shard base[2], other[2];
    for (int64_t t = 1; t <= 2; t++) {
        shards_run_v(base, t, m, b, OC_RECOMPUTE_NONE, v);
        enum oc_recompute modes[] = {OC_RECOMPUTE_FULL, OC_RECOMPUTE_SELECTIVE};
        for (int k = 0; k < 2; k++) {
            shards_run_v(other, t, m, b, modes[k], v);
            for (int64_t r = 0; r < t; r++) {
                CU_ASSERT(memcmp(other[r].p.g, base[r].p.g,
                                 (size_t)base[r].p.n * sizeof(float)) == 0);
                CU_ASSERT(memcmp(other[r].losses, base[r].losses,
                                 (size_t)base[r].N * sizeof(float)) == 0);
                CU_ASSERT(memcmp(other[r].dx, base[r].dx,
                                 (size_t)base[r].S * sizeof(float)) == 0);
                shard_free(&other[r]);
            }
        }
        for (int64_t r = 0; r < t; r++)
            shard_free(&base[r]);
    }
}

void check_flash_like_classic(const struct oc_model *m, const struct batch *b)
{
    static struct shard fl[1], cl[1];
    shards_run_v(fl, 1, m, b, OC_RECOMPUTE_NONE, FLASH);
    shards_run_v(cl, 1, m, b, OC_RECOMPUTE_NONE, CLASSIC);
    CU_ASSERT(memcmp(fl[0].losses, cl[0].losses, (size_t)cl[0].N * sizeof(float)) == 0);
    double worst = 0;
    for (int64_t i = 0; i < cl[0].p.nt; i++) {
        const struct oc_param_tensor *tt = &cl[0].p.t[i];
        const double e = rel_l2(fl[0].p.g + tt->offset, cl[0].p.g + tt->offset,
                                tt->rows * tt->cols);
        worst = e > worst ? e : worst;
        CU_ASSERT(e < 1e-5);
    }
    fprintf(stderr, " [flash vs classic: gradients within %.2g] ", worst);
    CU_ASSERT(worst > 0);
    CU_ASSERT(rel_l2(fl[0].dx, cl[0].dx, cl[0].S) < 1e-5);
    shard_free(&fl[0]);
    shard_free(&cl[0]);
}

double mean_loss(const struct shard *s)
{
    double sum = 0;
    for (int64_t i = 0; i < s->N; i++)
        sum += s->losses[i];
    return sum / (double)s->N;
}

double fwd_loss(struct shard *s, const struct oc_model *m, int64_t B, int64_t T)
{
    struct oc_schedule sc = one_stage_schedule(m, 1, B, T, OC_RECOMPUTE_NONE);
    for (int64_t i = 0; i < sc.ranks[0].n; i++) {
        const struct oc_op *op = &sc.ranks[0].ops[i];
        if (op->kind == OC_OP_COMPUTE && op->phase == OC_PHASE_FWD)
            lockstep(s, 1, op);
    }
    oc_schedule_free(&sc);
    return mean_loss(s);
}

/* The forward is fp32: with e = 1e-3 the rounding of the loss (~1e-7
 * relative) is already a few % of the small norm gradients; e = 1e-2
 * keeps both it and the O(e^2) truncation under 0.2% here, so 1%
 * agreement is asked. */
void check_fd(struct shard *s, const struct oc_model *m, int64_t B, int64_t T,
              enum oc_param_kind k, int64_t layer, int64_t r0, int64_t r1)
{
    const struct oc_param_tensor *tt = oc_params_tensor(&s->p, k, layer);
    const int64_t lo = r0 * tt->cols, hi = (r1 ? r1 : tt->rows) * tt->cols;
    int64_t best = lo;
    for (int64_t j = lo + 1; j < hi; j++)
        if (fabsf(s->p.g[tt->offset + j]) > fabsf(s->p.g[tt->offset + best]))
            best = j;
    float *w = s->p.w + tt->offset + best;
    const float w0 = *w, eps = 1e-2f;
    *w = w0 + eps;
    double lp = fwd_loss(s, m, B, T);
    *w = w0 - eps;
    double lm = fwd_loss(s, m, B, T);
    *w = w0;
    double fd = (lp - lm) / (2.0 * (double)eps);
    double an = s->p.g[tt->offset + best];
    CU_ASSERT(fabs(an) > 1e-5);
    CU_ASSERT(fabs(fd - an) <= 1e-2 * fabs(an));
    if (!(fabs(fd - an) <= 1e-2 * fabs(an)))
        fprintf(stderr, "\n  %s layer %lld [%lld]: analytic %.6g, numeric %.6g\n",
                oc_param_name(tt->kind), (long long)layer, (long long)best, an, fd);
}

void check_loss_falls(const struct oc_model *m)
{
    const int64_t B = 8, T = 32, steps = 50;
    static struct shard s;
    shard_init(&s, m, 1, 0, B, T, OC_RECOMPUTE_NONE);
    struct oc_synth syn;
    struct oc_status st = {{0}};
    OC_ASSERT(oc_synth_init(&syn, m->vocab_size, SEED, &st) == 0);
    int32_t *tok = oc_xmalloc((size_t)(B * T) * sizeof *tok);
    int32_t *tgt = oc_xmalloc((size_t)(B * T) * sizeof *tgt);
    s.tok = tok;
    s.tgt = tgt;
    s.grad_scale = 1.0f / (float)(B * T);
    struct oc_schedule sc = one_stage_schedule(m, 1, B, T, OC_RECOMPUTE_NONE);
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
        const double loss = mean_loss(&s);
        if (k == 0)
            first = loss;
        last = loss;
        oc_params_adamw(&K, &s.p, &h, k + 1);
    }
    fprintf(stderr, " [loss %.3f -> %.3f] ", first, last);
    /* from about ln 512 = 6.24 (see test_exec_gpt.c's tp_equivalence) */
    CU_ASSERT_DOUBLE_EQUAL(first, 6.25, 0.05);
    CU_ASSERT(last < 0.7 * first);
    oc_schedule_free(&sc);
    free(tgt);
    free(tok);
    oc_synth_free(&syn);
    shard_free(&s);
}
