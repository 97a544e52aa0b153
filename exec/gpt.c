/* gpt.c: one TP shard of the GPT-style decoder, part by part (see gpt.h).
 *
 * The kernels follow llm.c's CPU reference (karpathy/llm.c, train_gpt2.c:
 * layernorm, attention, gelu forward and backward), with GEMMs through
 * cblas_sgemm and the tensor-parallel split of Megatron-LM (Shoeybi et al.
 * 2019, section 3, figure 3). Every part is a small state machine over its
 * communication points (gpt.h, "Communication"): a `switch (c->step)` with
 * one case per stretch of local work, all locals set before the switch.
 *
 * What this file is not: a fast CPU kernel library (the loops are plain and
 * sequential, for determinism and for reading).
 */
#include "gpt.h"

#include <cblas.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#define LN_EPS 1e-5f /* GPT-2's layer_norm_epsilon */

enum {
    PART_EMBED_FWD = 1,
    PART_EMBED_BWD,
    PART_ATTN_FWD,
    PART_ATTN_BWD,
    PART_MLP_FWD,
    PART_MLP_BWD,
    PART_HEAD_FWD,
    PART_HEAD_BWD,
};

/* ------------------------------------------------------------------ */
/* Sizes                                                                */

int oc_gpt_dims_init(struct oc_gpt_dims *d, const struct oc_model *m,
                     int64_t tp, int64_t tp_rank, int64_t B, int64_t T,
                     struct oc_status *st)
{
    memset(d, 0, sizeof *d);
    if (oc_params_check_model(m, tp, st) != 0)
        return -1;
    if (tp_rank < 0 || tp_rank >= tp)
        return oc_fail(st, "exec: TP rank %lld is outside [0, %lld)",
                       (long long)tp_rank, (long long)tp);
    if (B < 1 || T < 1)
        return oc_fail(st, "exec: micro-batch %lld x sequence %lld is empty",
                       (long long)B, (long long)T);
    if (T > m->max_position_embeddings)
        return oc_fail(st, "exec: sequence length %lld exceeds the %lld "
                           "positions of model '%s'",
                       (long long)T, (long long)m->max_position_embeddings,
                       m->name);
    int64_t widest = m->intermediate_size > m->vocab_size ? m->intermediate_size
                                                          : m->vocab_size;
    if (B * T > INT_MAX / 4 || widest > INT_MAX / 4)
        return oc_fail(st, "exec: %lld tokens x %lld columns exceed the "
                           "BLAS int range", (long long)(B * T),
                       (long long)widest);
    d->B = B;
    d->T = T;
    d->C = m->hidden_size;
    d->NH = m->num_attention_heads;
    d->HS = d->C / d->NH;
    d->F = m->intermediate_size;
    d->V = m->vocab_size;
    d->P = m->max_position_embeddings;
    d->L = m->num_hidden_layers;
    d->tp = tp;
    d->tp_rank = tp_rank;
    d->nh = d->NH / tp;
    d->f = d->F / tp;
    d->v = d->V / tp;
    d->v0 = tp_rank * d->v;
    return 0;
}

int oc_gpt_check_layout(const struct oc_model *m, const struct oc_layout *l,
                        struct oc_status *st)
{
    if (oc_params_check_model(m, l->tp, st) != 0)
        return -1;
    if (l->sequence_parallel && l->tp > 1)
        return oc_fail(st, "exec: sequence parallelism is not supported by "
                           "the executor yet; use 'nosp'");
    if (l->seq_length > m->max_position_embeddings)
        return oc_fail(st, "exec: sequence length %lld exceeds the %lld "
                           "positions of model '%s'",
                       (long long)l->seq_length,
                       (long long)m->max_position_embeddings, m->name);
    return 0;
}

int64_t oc_gpt_att_floats(const struct oc_gpt_dims *d)
{
    return d->B * d->nh * d->T * d->T;
}

int64_t oc_gpt_attn_act_floats(const struct oc_gpt_dims *d)
{
    int64_t N = d->B * d->T;
    return N * d->C + 2 * N + N * 3 * d->nh * d->HS + N * d->nh * d->HS +
           oc_gpt_att_floats(d);
}

int64_t oc_gpt_mlp_act_floats(const struct oc_gpt_dims *d)
{
    int64_t N = d->B * d->T;
    return N * d->C + 2 * N + 2 * N * d->f;
}

int64_t oc_gpt_head_act_floats(const struct oc_gpt_dims *d)
{
    int64_t N = d->B * d->T;
    return N * d->C + 2 * N + N * d->v + 3 * N;
}

/* Hands out consecutive pieces of mem. */
static float *carve(float **mem, int64_t n)
{
    float *p = *mem;
    *mem += n;
    return p;
}

void oc_gpt_attn_act_bind(struct oc_gpt_attn_act *a, const struct oc_gpt_dims *d,
                          float *in, float *mem)
{
    int64_t N = d->B * d->T;
    a->in = in;
    a->ln = carve(&mem, N * d->C);
    a->mean = carve(&mem, N);
    a->rstd = carve(&mem, N);
    a->qkv = carve(&mem, N * 3 * d->nh * d->HS);
    a->y = carve(&mem, N * d->nh * d->HS);
    a->att = carve(&mem, oc_gpt_att_floats(d));
}

void oc_gpt_mlp_act_bind(struct oc_gpt_mlp_act *a, const struct oc_gpt_dims *d,
                         float *in, float *mem)
{
    int64_t N = d->B * d->T;
    a->in = in;
    a->ln = carve(&mem, N * d->C);
    a->mean = carve(&mem, N);
    a->rstd = carve(&mem, N);
    a->h = carve(&mem, N * d->f);
    a->hg = carve(&mem, N * d->f);
}

void oc_gpt_head_act_bind(struct oc_gpt_head_act *a, const struct oc_gpt_dims *d,
                          float *in, float *mem)
{
    int64_t N = d->B * d->T;
    a->in = in;
    a->ln = carve(&mem, N * d->C);
    a->mean = carve(&mem, N);
    a->rstd = carve(&mem, N);
    a->probs = carve(&mem, N * d->v);
    a->lmax = carve(&mem, N);
    a->sumexp = carve(&mem, N);
    a->tlogit = carve(&mem, N);
}

/* Attention backward: dy, dqkv, dln and 2*T of row scratch; MLP: dhg and
 * dln; head: dlogits and dln. */
int64_t oc_gpt_work_floats(const struct oc_gpt_dims *d)
{
    int64_t N = d->B * d->T;
    int64_t attn = N * d->nh * d->HS + N * 3 * d->nh * d->HS + N * d->C + 2 * d->T;
    int64_t mlp = N * d->f + N * d->C;
    int64_t head = N * d->v + N * d->C;
    int64_t w = attn > mlp ? attn : mlp;
    return w > head ? w : head;
}

/* ------------------------------------------------------------------ */
/* Calls                                                                */

static void call_begin(struct oc_gpt_call *c, int part)
{
    if (c->step == 0) {
        c->part = part;
        c->nreduce = 0;
    } else {
        OC_ASSERT(c->part == part); /* resumed with another part's function */
    }
}

static int call_done(struct oc_gpt_call *c)
{
    c->step = 0;
    c->buf = NULL;
    c->n = 0;
    return OC_GPT_DONE;
}

/* Ask for an all-reduce of b[0..cnt) and resume at case `next`: in step
 * mode return to the caller, in callback mode do it here and go on. */
#define REDUCE(c, next, b, cnt, o)                                             \
    do {                                                                       \
        (c)->step = (next);                                                    \
        (c)->buf = (b);                                                        \
        (c)->n = (cnt);                                                        \
        (c)->op = (o);                                                         \
        (c)->nreduce++;                                                        \
        if (!(c)->comm)                                                        \
            return OC_GPT_REDUCE;                                              \
        if ((c)->comm->allreduce((c)->comm->ctx, (b), (cnt), (o)) != 0) {      \
            (c)->step = 0;                                                     \
            return -1;                                                         \
        }                                                                      \
    } while (0)

/* ------------------------------------------------------------------ */
/* Kernels (llm.c CPU reference; cblas for GEMMs)                       */

/* out (N,OC) = inp (N,IC) @ w^T, w (OC,IC), + bias (OC) if given. */
static void matmul_fwd(float *out, const float *inp, const float *w,
                       const float *bias, int64_t N, int64_t IC, int64_t OC)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)OC,
                (int)IC, 1.0f, inp, (int)IC, w, (int)IC, 0.0f, out, (int)OC);
    if (bias)
        for (int64_t i = 0; i < N; i++)
            for (int64_t o = 0; o < OC; o++)
                out[i * OC + o] += bias[o];
}

/* dinp (N,IC) = dout (N,OC) @ w (OC,IC) (written); dw (OC,IC) +=
 * dout^T @ inp; dbias (OC) += column sums of dout. */
static void matmul_bwd(float *dinp, float *dw, float *dbias, const float *dout,
                       const float *inp, const float *w, int64_t N, int64_t IC,
                       int64_t OC)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)N, (int)IC,
                (int)OC, 1.0f, dout, (int)OC, w, (int)IC, 0.0f, dinp, (int)IC);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)OC, (int)IC,
                (int)N, 1.0f, dout, (int)OC, inp, (int)IC, 1.0f, dw, (int)IC);
    if (dbias)
        for (int64_t i = 0; i < N; i++)
            for (int64_t o = 0; o < OC; o++)
                dbias[o] += dout[i * OC + o];
}

/* LayerNorm (Ba et al. 2016) over the last dimension C. */
static void layernorm_fwd(float *out, float *mean, float *rstd, const float *inp,
                          const float *w, const float *b, int64_t N, int64_t C)
{
    for (int64_t i = 0; i < N; i++) {
        const float *x = inp + i * C;
        float m = 0.0f;
        for (int64_t j = 0; j < C; j++)
            m += x[j];
        m /= (float)C;
        float v = 0.0f;
        for (int64_t j = 0; j < C; j++) {
            float xm = x[j] - m;
            v += xm * xm;
        }
        v /= (float)C;
        float s = 1.0f / sqrtf(v + LN_EPS);
        float *o = out + i * C;
        for (int64_t j = 0; j < C; j++)
            o[j] = (s * (x[j] - m)) * w[j] + b[j];
        mean[i] = m;
        rstd[i] = s;
    }
}

/* dinp += LayerNorm backward of dout; dw, db += . */
static void layernorm_bwd(float *dinp, float *dw, float *db, const float *dout,
                          const float *inp, const float *w, const float *mean,
                          const float *rstd, int64_t N, int64_t C)
{
    for (int64_t i = 0; i < N; i++) {
        const float *dy = dout + i * C, *x = inp + i * C;
        float *dx = dinp + i * C;
        const float m = mean[i], s = rstd[i];
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (int64_t j = 0; j < C; j++) {
            float norm = (x[j] - m) * s;
            float dnorm = w[j] * dy[j];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean /= (float)C;
        dnorm_norm_mean /= (float)C;
        for (int64_t j = 0; j < C; j++) {
            float norm = (x[j] - m) * s;
            float dnorm = w[j] * dy[j];
            db[j] += dy[j];
            dw[j] += norm * dy[j];
            dx[j] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
        }
    }
}

/* GELU, tanh approximation (Hendrycks & Gimpel 2016, eq. in section 2). */
#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */
static void gelu_fwd(float *out, const float *inp, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float x = inp[i];
        float cube = 0.044715f * x * x * x;
        out[i] = 0.5f * x * (1.0f + tanhf(GELU_K * (x + cube)));
    }
}

/* d[i] = gelu'(inp[i]) * d[i], in place. */
static void gelu_bwd(float *d, const float *inp, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float x = inp[i];
        float cube = 0.044715f * x * x * x;
        float arg = GELU_K * (x + cube);
        float th = tanhf(arg);
        float ch = coshf(arg);
        float sech2 = 1.0f / (ch * ch);
        float grad = 0.5f * (1.0f + th) +
                     x * 0.5f * sech2 * GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
        d[i] *= grad;
    }
}

/* Offsets into qkv (B,T,nh,3,HS), y (B,T,nh,HS), att (B,nh,T,T). */
#define QKV_AT(d, b, t, h) ((((b) * (d)->T + (t)) * (d)->nh + (h)) * 3 * (d)->HS)
#define Y_AT(d, b, t, h) ((((b) * (d)->T + (t)) * (d)->nh + (h)) * (d)->HS)
#define ATT_AT(d, b, h, t) ((((b) * (d)->nh + (h)) * (d)->T + (t)) * (d)->T)

void oc_gpt_attn_scores(const struct oc_gpt_dims *d, struct oc_gpt_attn_act *a)
{
    const int64_t HS = d->HS, T = d->T;
    const float scale = 1.0f / sqrtf((float)HS); /* Vaswani et al. 2017 */
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t h = 0; h < d->nh; h++)
            for (int64_t t = 0; t < T; t++) {
                const float *q = a->qkv + QKV_AT(d, b, t, h);
                float *row = a->att + ATT_AT(d, b, h, t);
                float maxv = -FLT_MAX;
                for (int64_t t2 = 0; t2 <= t; t2++) {
                    const float *k = a->qkv + QKV_AT(d, b, t2, h) + HS;
                    float dot = 0.0f;
                    for (int64_t i = 0; i < HS; i++)
                        dot += q[i] * k[i];
                    dot *= scale;
                    row[t2] = dot;
                    if (dot > maxv)
                        maxv = dot;
                }
                float sum = 0.0f;
                for (int64_t t2 = 0; t2 <= t; t2++) {
                    float e = expf(row[t2] - maxv);
                    row[t2] = e;
                    sum += e;
                }
                float inv = 1.0f / sum;
                for (int64_t t2 = 0; t2 <= t; t2++)
                    row[t2] *= inv;
                for (int64_t t2 = t + 1; t2 < T; t2++)
                    row[t2] = 0.0f; /* causal mask */
            }
}

/* y = att @ v per head. */
static void attn_values(const struct oc_gpt_dims *d, struct oc_gpt_attn_act *a)
{
    const int64_t HS = d->HS;
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t t = 0; t < d->T; t++)
            for (int64_t h = 0; h < d->nh; h++) {
                float *y = a->y + Y_AT(d, b, t, h);
                const float *row = a->att + ATT_AT(d, b, h, t);
                for (int64_t i = 0; i < HS; i++)
                    y[i] = 0.0f;
                for (int64_t t2 = 0; t2 <= t; t2++) {
                    const float *v = a->qkv + QKV_AT(d, b, t2, h) + 2 * HS;
                    float w = row[t2];
                    for (int64_t i = 0; i < HS; i++)
                        y[i] += w * v[i];
                }
            }
}

/* dqkv (written) from dy; scratch: 2*T floats. */
static void attn_bwd(const struct oc_gpt_dims *d, const struct oc_gpt_attn_act *a,
                     const float *dy, float *dqkv, float *scratch)
{
    const int64_t HS = d->HS, T = d->T;
    const float scale = 1.0f / sqrtf((float)HS);
    float *datt = scratch, *dpre = scratch + T;
    memset(dqkv, 0, (size_t)(d->B * T * 3 * d->nh * HS) * sizeof *dqkv);
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t h = 0; h < d->nh; h++) {
                const float *row = a->att + ATT_AT(d, b, h, t);
                const float *q = a->qkv + QKV_AT(d, b, t, h);
                float *dq = dqkv + QKV_AT(d, b, t, h);
                const float *dyr = dy + Y_AT(d, b, t, h);
                /* y = sum_t2 att[t2] v[t2] */
                for (int64_t t2 = 0; t2 <= t; t2++) {
                    const float *v = a->qkv + QKV_AT(d, b, t2, h) + 2 * HS;
                    float *dv = dqkv + QKV_AT(d, b, t2, h) + 2 * HS;
                    float s = 0.0f;
                    for (int64_t i = 0; i < HS; i++) {
                        s += v[i] * dyr[i];
                        dv[i] += row[t2] * dyr[i];
                    }
                    datt[t2] = s;
                }
                /* softmax: dpre = att * (datt - sum(att * datt)) */
                float dot = 0.0f;
                for (int64_t t2 = 0; t2 <= t; t2++)
                    dot += row[t2] * datt[t2];
                for (int64_t t2 = 0; t2 <= t; t2++)
                    dpre[t2] = row[t2] * (datt[t2] - dot);
                /* pre = scale * q . k[t2] */
                for (int64_t t2 = 0; t2 <= t; t2++) {
                    const float *k = a->qkv + QKV_AT(d, b, t2, h) + HS;
                    float *dk = dqkv + QKV_AT(d, b, t2, h) + HS;
                    float g = dpre[t2] * scale;
                    for (int64_t i = 0; i < HS; i++) {
                        dq[i] += k[i] * g;
                        dk[i] += q[i] * g;
                    }
                }
            }
}

/* ------------------------------------------------------------------ */
/* Embedding                                                            */

int oc_gpt_embed_fwd(struct oc_gpt_call *c, const struct oc_gpt_dims *d,
                     const struct oc_params *p, const int32_t *tokens,
                     float *out)
{
    call_begin(c, PART_EMBED_FWD);
    const int64_t N = d->B * d->T, C = d->C;
    const float *wte = oc_params_w(p, OC_P_WTE, -1); /* (v, C) */
    const float *wpe = oc_params_w(p, OC_P_WPE, -1); /* (P, C) */
    switch (c->step) {
    case 0:
        /* VocabParallelEmbedding: rows outside [v0, v0+v) are zero here and
         * come from the other ranks through the all-reduce. */
        for (int64_t i = 0; i < N; i++) {
            int64_t tok = tokens[i];
            OC_ASSERT(tok >= 0 && tok < d->V);
            float *o = out + i * C;
            if (tok >= d->v0 && tok < d->v0 + d->v)
                memcpy(o, wte + (tok - d->v0) * C, (size_t)C * sizeof *o);
            else
                memset(o, 0, (size_t)C * sizeof *o);
        }
        if (d->tp > 1)
            REDUCE(c, 1, out, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        /* positions are replicated: added once, after the all-reduce */
        for (int64_t i = 0; i < N; i++) {
            const float *pe = wpe + (i % d->T) * C;
            float *o = out + i * C;
            for (int64_t j = 0; j < C; j++)
                o[j] += pe[j];
        }
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

int oc_gpt_embed_bwd(struct oc_gpt_call *c, const struct oc_gpt_dims *d,
                     struct oc_params *p, const int32_t *tokens,
                     const float *dout)
{
    call_begin(c, PART_EMBED_BWD);
    OC_ASSERT(c->step == 0);
    const int64_t N = d->B * d->T, C = d->C;
    float *dwte = oc_params_g(p, OC_P_WTE, -1); /* (v, C) */
    float *dwpe = oc_params_g(p, OC_P_WPE, -1); /* (P, C) */
    for (int64_t i = 0; i < N; i++) {
        int64_t tok = tokens[i];
        OC_ASSERT(tok >= 0 && tok < d->V);
        const float *g = dout + i * C;
        float *pe = dwpe + (i % d->T) * C;
        for (int64_t j = 0; j < C; j++)
            pe[j] += g[j];
        if (tok >= d->v0 && tok < d->v0 + d->v) {
            float *te = dwte + (tok - d->v0) * C;
            for (int64_t j = 0; j < C; j++)
                te[j] += g[j];
        }
    }
    return call_done(c);
}

/* ------------------------------------------------------------------ */
/* Attention                                                            */

int oc_gpt_attn_fwd(struct oc_gpt_call *c, const struct oc_gpt_dims *d,
                    const struct oc_params *p, int64_t layer,
                    struct oc_gpt_attn_act *a, float *out)
{
    call_begin(c, PART_ATTN_FWD);
    OC_ASSERT(out != a->in);
    const int64_t N = d->B * d->T, C = d->C;
    const int64_t cl = d->nh * d->HS; /* C/t */
    const float *ln1w = oc_params_w(p, OC_P_LN1W, layer);
    const float *ln1b = oc_params_w(p, OC_P_LN1B, layer);
    const float *qkvw = oc_params_w(p, OC_P_QKVW, layer);         /* (3C/t, C) */
    const float *qkvb = oc_params_w(p, OC_P_QKVB, layer);         /* (3C/t) */
    const float *projw = oc_params_w(p, OC_P_ATTPROJW, layer);    /* (C, C/t) */
    const float *projb = oc_params_w(p, OC_P_ATTPROJB, layer);    /* (C) */
    switch (c->step) {
    case 0:
        layernorm_fwd(a->ln, a->mean, a->rstd, a->in, ln1w, ln1b, N, C);
        /* column-parallel QKV: the local heads only */
        matmul_fwd(a->qkv, a->ln, qkvw, qkvb, N, C, 3 * cl);
        oc_gpt_attn_scores(d, a);
        attn_values(d, a);
        /* row-parallel projection: a partial sum over the local heads */
        matmul_fwd(out, a->y, projw, NULL, N, cl, C);
        if (d->tp > 1)
            REDUCE(c, 1, out, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        /* RowParallelLinear adds its bias after the all-reduce; then the
         * residual. */
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < C; j++)
                out[i * C + j] = out[i * C + j] + projb[j] + a->in[i * C + j];
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

int oc_gpt_attn_bwd(struct oc_gpt_call *c, const struct oc_gpt_dims *d,
                    struct oc_params *p, int64_t layer,
                    const struct oc_gpt_attn_act *a, const float *dout,
                    float *din, float *work)
{
    call_begin(c, PART_ATTN_BWD);
    const int64_t N = d->B * d->T, C = d->C;
    const int64_t cl = d->nh * d->HS; /* C/t */
    float *dy = work;                 /* (N, C/t) */
    float *dqkv = dy + N * cl;        /* (N, 3C/t) */
    float *dln = dqkv + N * 3 * cl;   /* (N, C) */
    float *scratch = dln + N * C;     /* (2T) */
    const float *ln1w = oc_params_w(p, OC_P_LN1W, layer);
    const float *qkvw = oc_params_w(p, OC_P_QKVW, layer);
    const float *projw = oc_params_w(p, OC_P_ATTPROJW, layer);
    switch (c->step) {
    case 0:
        /* projection: dy = dout @ projw; dprojw += dout^T y; dprojb +=
         * sum(dout), the same on every TP rank (replicated bias) */
        matmul_bwd(dy, oc_params_g(p, OC_P_ATTPROJW, layer),
                   oc_params_g(p, OC_P_ATTPROJB, layer), dout, a->y, projw, N,
                   cl, C);
        attn_bwd(d, a, dy, dqkv, scratch);
        /* column-parallel QKV: its input gradient is a partial sum over the
         * local heads (Megatron-LM's f operator: all-reduce in backward) */
        matmul_bwd(dln, oc_params_g(p, OC_P_QKVW, layer),
                   oc_params_g(p, OC_P_QKVB, layer), dqkv, a->ln, qkvw, N, C,
                   3 * cl);
        if (d->tp > 1)
            REDUCE(c, 1, dln, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        if (din != dout)
            memcpy(din, dout, (size_t)(N * C) * sizeof *din); /* residual */
        layernorm_bwd(din, oc_params_g(p, OC_P_LN1W, layer),
                      oc_params_g(p, OC_P_LN1B, layer), dln, a->in, ln1w,
                      a->mean, a->rstd, N, C);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

/* ------------------------------------------------------------------ */
/* MLP                                                                  */

int oc_gpt_mlp_fwd(struct oc_gpt_call *c, const struct oc_gpt_dims *d,
                   const struct oc_params *p, int64_t layer,
                   struct oc_gpt_mlp_act *a, float *out)
{
    call_begin(c, PART_MLP_FWD);
    OC_ASSERT(out != a->in);
    const int64_t N = d->B * d->T, C = d->C, f = d->f;
    const float *ln2w = oc_params_w(p, OC_P_LN2W, layer);
    const float *ln2b = oc_params_w(p, OC_P_LN2B, layer);
    const float *fcw = oc_params_w(p, OC_P_FCW, layer);         /* (f, C) */
    const float *fcb = oc_params_w(p, OC_P_FCB, layer);         /* (f) */
    const float *projw = oc_params_w(p, OC_P_FCPROJW, layer);   /* (C, f) */
    const float *projb = oc_params_w(p, OC_P_FCPROJB, layer);   /* (C) */
    switch (c->step) {
    case 0:
        layernorm_fwd(a->ln, a->mean, a->rstd, a->in, ln2w, ln2b, N, C);
        matmul_fwd(a->h, a->ln, fcw, fcb, N, C, f); /* column-parallel */
        gelu_fwd(a->hg, a->h, N * f);
        matmul_fwd(out, a->hg, projw, NULL, N, f, C); /* row-parallel */
        if (d->tp > 1)
            REDUCE(c, 1, out, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < C; j++)
                out[i * C + j] = out[i * C + j] + projb[j] + a->in[i * C + j];
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

int oc_gpt_mlp_bwd(struct oc_gpt_call *c, const struct oc_gpt_dims *d,
                   struct oc_params *p, int64_t layer,
                   const struct oc_gpt_mlp_act *a, const float *dout,
                   float *din, float *work)
{
    call_begin(c, PART_MLP_BWD);
    const int64_t N = d->B * d->T, C = d->C, f = d->f;
    float *dh = work;        /* (N, f): d(hg), then d(h) in place */
    float *dln = dh + N * f; /* (N, C) */
    const float *ln2w = oc_params_w(p, OC_P_LN2W, layer);
    const float *fcw = oc_params_w(p, OC_P_FCW, layer);
    const float *projw = oc_params_w(p, OC_P_FCPROJW, layer);
    switch (c->step) {
    case 0:
        matmul_bwd(dh, oc_params_g(p, OC_P_FCPROJW, layer),
                   oc_params_g(p, OC_P_FCPROJB, layer), dout, a->hg, projw, N,
                   f, C);
        gelu_bwd(dh, a->h, N * f);
        matmul_bwd(dln, oc_params_g(p, OC_P_FCW, layer),
                   oc_params_g(p, OC_P_FCB, layer), dh, a->ln, fcw, N, C, f);
        if (d->tp > 1)
            REDUCE(c, 1, dln, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        if (din != dout)
            memcpy(din, dout, (size_t)(N * C) * sizeof *din);
        layernorm_bwd(din, oc_params_g(p, OC_P_LN2W, layer),
                      oc_params_g(p, OC_P_LN2B, layer), dln, a->in, ln2w,
                      a->mean, a->rstd, N, C);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

/* ------------------------------------------------------------------ */
/* Head: final norm, LM head, vocab-parallel cross-entropy              */

int oc_gpt_head_fwd(struct oc_gpt_call *c, const struct oc_gpt_dims *d,
                    const struct oc_params *p, struct oc_gpt_head_act *a,
                    const int32_t *targets, float *losses)
{
    call_begin(c, PART_HEAD_FWD);
    const int64_t N = d->B * d->T, C = d->C, v = d->v;
    const float *lnfw = oc_params_w(p, OC_P_LNFW, -1);
    const float *lnfb = oc_params_w(p, OC_P_LNFB, -1);
    const float *lmw = oc_params_w(p, OC_P_LMW, -1); /* (v, C), or wte */
    switch (c->step) {
    case 0:
        layernorm_fwd(a->ln, a->mean, a->rstd, a->in, lnfw, lnfb, N, C);
        matmul_fwd(a->probs, a->ln, lmw, NULL, N, C, v); /* column-parallel */
        for (int64_t i = 0; i < N; i++) {
            const float *row = a->probs + i * v;
            float m = -FLT_MAX;
            for (int64_t j = 0; j < v; j++)
                if (row[j] > m)
                    m = row[j];
            a->lmax[i] = m;
        }
        /* Megatron-LM tensor_parallel/cross_entropy.py: the max over the
         * whole vocabulary, */
        if (d->tp > 1)
            REDUCE(c, 1, a->lmax, N, OC_GPT_MAX);
        /* fallthrough */
    case 1:
        for (int64_t i = 0; i < N; i++) {
            float *row = a->probs + i * v;
            const float m = a->lmax[i];
            int64_t tgt = targets[i];
            OC_ASSERT(tgt >= 0 && tgt < d->V);
            a->tlogit[i] = (tgt >= d->v0 && tgt < d->v0 + v)
                               ? row[tgt - d->v0] - m : 0.0f;
            float s = 0.0f;
            for (int64_t j = 0; j < v; j++) {
                float e = expf(row[j] - m);
                row[j] = e;
                s += e;
            }
            a->sumexp[i] = s;
        }
        /* the target's logit (held by one rank), */
        if (d->tp > 1)
            REDUCE(c, 2, a->tlogit, N, OC_GPT_SUM);
        /* fallthrough */
    case 2:
        /* and the sum of exponentials. */
        if (d->tp > 1)
            REDUCE(c, 3, a->sumexp, N, OC_GPT_SUM);
        /* fallthrough */
    case 3:
        for (int64_t i = 0; i < N; i++) {
            float *row = a->probs + i * v;
            const float s = a->sumexp[i];
            losses[i] = logf(s) - a->tlogit[i];
            for (int64_t j = 0; j < v; j++)
                row[j] /= s;
        }
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}

int oc_gpt_head_bwd(struct oc_gpt_call *c, const struct oc_gpt_dims *d,
                    struct oc_params *p, const struct oc_gpt_head_act *a,
                    const int32_t *targets, float grad_scale, float *din,
                    float *work)
{
    call_begin(c, PART_HEAD_BWD);
    const int64_t N = d->B * d->T, C = d->C, v = d->v;
    float *dlogits = work;        /* (N, v) */
    float *dln = dlogits + N * v; /* (N, C) */
    const float *lnfw = oc_params_w(p, OC_P_LNFW, -1);
    const float *lmw = oc_params_w(p, OC_P_LMW, -1);
    switch (c->step) {
    case 0:
        /* d loss / d logit = softmax - onehot(target) (Bishop 2006, eq.
         * 4.109), scaled */
        for (int64_t i = 0; i < N; i++) {
            const float *pr = a->probs + i * v;
            float *dl = dlogits + i * v;
            for (int64_t j = 0; j < v; j++)
                dl[j] = pr[j] * grad_scale;
            int64_t tgt = targets[i];
            if (tgt >= d->v0 && tgt < d->v0 + v)
                dl[tgt - d->v0] -= grad_scale;
        }
        matmul_bwd(dln, oc_params_g(p, OC_P_LMW, -1), NULL, dlogits, a->ln,
                   lmw, N, C, v);
        /* column-parallel LM head: input gradient summed over the vocab
         * shards */
        if (d->tp > 1)
            REDUCE(c, 1, dln, N * C, OC_GPT_SUM);
        /* fallthrough */
    case 1:
        memset(din, 0, (size_t)(N * C) * sizeof *din);
        layernorm_bwd(din, oc_params_g(p, OC_P_LNFW, -1),
                      oc_params_g(p, OC_P_LNFB, -1), dln, a->in, lnfw, a->mean,
                      a->rstd, N, C);
        break;
    default:
        OC_ASSERT(0);
    }
    return call_done(c);
}
