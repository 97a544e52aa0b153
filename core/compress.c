/* compress.c: the compressed and the amortised DP gradient exchange (see
 * compress.h): layout parts, rules, wire bytes, kernels and memory. */
#define _POSIX_C_SOURCE 200809L
#include "compress.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "layout.h"
#include "memory.h"
#include "placement.h"
#include "schedule.h"

/* The fp32 residual of error feedback, per element (Seide et al. 2014;
 * Karimireddy et al. 2019, "Error feedback fixes SignSGD"). */
#define EF_BYTES 4.0
/* The error-feedback accumulate, per element: read the gradient (g
 * bytes) and the fp32 residual, write the sum back into the residual. */
#define EF_PASS(g) ((g) + 2.0 * EF_BYTES)

int oc_gc_on(const struct oc_layout *l)
{
    return l->gc != OC_GC_NONE || l->sync_every > 1;
}

/* "123" -> 123 in *v (any value, 0 too, so the caller names the range);
 * -1 when s is not a decimal integer that fits. */
static int int_of(const char *s, int64_t *v)
{
    if (!*s)
        return -1;
    for (const char *c = s; *c; c++)
        if (*c < '0' || *c > '9')
            return -1;
    errno = 0;
    char *end;
    long long x = strtoll(s, &end, 10);
    if (*end || errno)
        return -1;
    *v = x;
    return 0;
}

int oc_gc_parse_part(struct oc_layout *l, const char *part, int *is_sync,
                     struct oc_status *st)
{
    char q[OC_QUOTE_MAX];
    int64_t v;
    if (strncmp(part, "sync", 4) == 0 && part[4] >= '0' && part[4] <= '9') {
        if (int_of(part + 4, &v) != 0 || v < 1)
            return oc_fail(st, "'%s': local SGD synchronises every K steps, K an integer "
                               ">= 1 (e.g. sync4)", oc_quote(q, sizeof q, part));
        l->sync_every = v > 1 ? v : 0; /* sync1 is the default, every step */
        *is_sync = 1;
        return 1;
    }
    if (strncmp(part, "gc=", 3) != 0)
        return 0;
    const char *k = part + 3;
    *is_sync = 0;
    if (strcmp(k, "none") == 0) {
        l->gc = OC_GC_NONE, l->gc_density = 0, l->gc_rank = 0;
    } else if (strcmp(k, "q8") == 0 || strcmp(k, "q1") == 0) {
        l->gc = k[1] == '8' ? OC_GC_Q8 : OC_GC_Q1, l->gc_density = 0, l->gc_rank = 0;
    } else if (strncmp(k, "psgd", 4) == 0) {
        if (int_of(k + 4, &v) != 0 || v < 1)
            return oc_fail(st, "'%s': PowerSGD needs a rank, an integer >= 1 (e.g. "
                               "gc=psgd4)", oc_quote(q, sizeof q, part));
        l->gc = OC_GC_POWERSGD, l->gc_rank = v, l->gc_density = 0;
    } else if (strncmp(k, "topk", 4) == 0) {
        char *end;
        errno = 0;
        const double d = k[4] >= '0' && k[4] <= '9' ? strtod(k + 4, &end) : -1;
        if (d < 0 || *end || errno || !(d > 0 && d <= 1))
            return oc_fail(st, "'%s': top-k needs a density in (0, 1], the fraction of "
                               "gradient elements kept, in decimals (e.g. gc=topk0.01)",
                           oc_quote(q, sizeof q, part));
        l->gc = OC_GC_TOPK, l->gc_density = d, l->gc_rank = 0;
    } else {
        return oc_fail(st, "'%s': unknown gradient compression (known: gc=none, "
                           "gc=topk<D>, gc=q8, gc=q1, gc=psgd<R>)",
                       oc_quote(q, sizeof q, part));
    }
    return 1;
}

/* The shortest fixed-point decimals that read back as d (no exponent:
 * its '-' would split the layout string). */
static void density_text(double d, char *buf, size_t n)
{
    for (int prec = 1; prec <= 20; prec++) {
        snprintf(buf, n, "%.*f", prec, d);
        if (strtod(buf, NULL) == d)
            break;
    }
    /* "0.0100" cannot happen (the shortest wins); trailing zeros of
     * "1.0" are kept as written */
}

void oc_gc_label(const struct oc_layout *l, char *buf, size_t n)
{
    char d[32];
    switch (l->gc) {
    case OC_GC_TOPK:
        density_text(l->gc_density, d, sizeof d);
        snprintf(buf, n, "gc=topk%s", d);
        break;
    case OC_GC_Q8: snprintf(buf, n, "gc=q8"); break;
    case OC_GC_Q1: snprintf(buf, n, "gc=q1"); break;
    case OC_GC_POWERSGD: snprintf(buf, n, "gc=psgd%lld", (long long)l->gc_rank); break;
    default: snprintf(buf, n, "gc=none"); break;
    }
}

int oc_gc_check(const struct oc_layout *l, struct oc_status *st)
{
    char g[48];
    oc_gc_label(l, g, sizeof g);
    if ((unsigned)l->gc > OC_GC_POWERSGD)
        return oc_fail(st, "unknown gradient compression %d", l->gc);
    if (l->gc == OC_GC_TOPK && !(l->gc_density > 0 && l->gc_density <= 1))
        return oc_fail(st, "top-k density %g is not in (0, 1]", l->gc_density);
    if (l->gc == OC_GC_POWERSGD && l->gc_rank < 1)
        return oc_fail(st, "PowerSGD rank %lld is below 1", (long long)l->gc_rank);
    if (l->sync_every < 0)
        return oc_fail(st, "local SGD every %lld steps: K must be at least 1",
                       (long long)l->sync_every);
    if (l->gc != OC_GC_NONE && l->zero >= 2)
        return oc_fail(st, "%s with ZeRO stage %d is not modelled (its per-layer "
                           "reduce-scatters have no compressed form here; use zero0 or "
                           "zero1)", g, l->zero);
    if (l->sync_every > 1 && l->gc != OC_GC_NONE)
        return oc_fail(st, "sync%lld with %s: local SGD and gradient compression together "
                           "are not modelled (choose one)", (long long)l->sync_every, g);
    if (l->sync_every > 1 && l->zero >= 1)
        return oc_fail(st, "sync%lld (local SGD) needs zero0: a replica that steps alone "
                           "between synchronisations holds its whole optimizer (got "
                           "ZeRO stage %d)", (long long)l->sync_every, l->zero);
    return 0;
}

/* One TP rank's weight matrices of a layer (Megatron-LM's fused shapes:
 * QKV [h x (a + 2k)*hd/t], output [a*hd/t x h], fc1 [h x f/t] (2f/t
 * gated), fc2 [f/t x h]): the sums of their rows (n) and columns (m) at
 * rank r (each matrix's min(r, n, m)), and their elements. */
struct mats {
    double rows_r, cols_r, elems;
};

static void add_mat(struct mats *s, double n, double m, double r)
{
    const double rr = fmin(r, fmin(n, m));
    s->rows_r += n * rr;
    s->cols_r += m * rr;
    s->elems += n * m;
}

static struct mats layer_mats(const struct oc_model *m, int64_t t, double r)
{
    struct mats s = {0, 0, 0};
    const double h = (double)m->hidden_size, hd = (double)oc_model_head_dim(m);
    const double a = (double)m->num_attention_heads, k = (double)m->num_key_value_heads;
    const double f = (double)m->intermediate_size, td = (double)t;
    add_mat(&s, h, (a + 2.0 * k) * hd / td, r);
    add_mat(&s, a * hd / td, h, r);
    add_mat(&s, h, (m->gated_mlp ? 2.0 : 1.0) * f / td, r);
    add_mat(&s, f / td, h, r);
    return s;
}

static void powersgd(const struct oc_model *m, const struct oc_layout *l, int64_t stage,
                     double N, double g, struct oc_gc_plan *p)
{
    const double r = (double)l->gc_rank, h = (double)m->hidden_size;
    const double L = (double)oc_place_stage_layers(l, m, stage);
    const struct mats one = layer_mats(m, l->tp, r);
    const double lp = (double)oc_model_layer_params_tp(m, l->tp);
    /* the layers' matrices, and the stage's other parameters (embedding,
     * LM head: vocabulary/t x h tables) as one matrix of h columns; what
     * is left (norms, biases) goes uncompressed */
    struct mats s = {one.rows_r * L, one.cols_r * L, one.elems * L};
    const double extra = N - lp * L;
    if (extra >= h * h)
        add_mat(&s, floor(extra / h), h, r);
    const double vec = fmax(N - s.elems, 0.0);
    const double Pn = s.rows_r, Qn = s.cols_r, M = s.elems;
    /* GEMM FLOPs: P = M Q and Q = M^T P, 2*n*m*r each, and the
     * decompression P Q^T, 2*n*m*r (Vogels et al. 2019, Algorithm 1);
     * Gram-Schmidt of P: 2*n*r^2. With min(r, n, m) per matrix these are
     * 2*r*elems at the rank asked (an upper bound at most r). */
    const double gemm = 2.0 * r * M;
    int i = 0;
    if (vec > 0)
        p->step[i++] = (struct oc_gc_step){0, 0, OC_COLL_ALLREDUCE, g * vec};
    /* EF accumulate, then P = M Q reads M (fp32) */
    p->step[i++] = (struct oc_gc_step){EF_PASS(g) * M + 4.0 * M + 4.0 * Pn, gemm,
                                       OC_COLL_ALLREDUCE, 4.0 * Pn};
    /* orthogonalise P (read, write), Q = M^T P reads M */
    p->step[i++] = (struct oc_gc_step){8.0 * Pn + 4.0 * M + 4.0 * Qn,
                                       gemm + 2.0 * r * Pn, OC_COLL_ALLREDUCE, 4.0 * Qn};
    p->n = i;
    /* decompress P Q^T into the gradient (g), residual M - P Q^T: read
     * the residual, write it */
    p->final_bytes = (g + 2.0 * EF_BYTES) * M;
    p->final_flops = gemm;
    p->mem_bytes = EF_BYTES * M + 4.0 * (Pn + Qn);
}

void oc_gc_plan(const struct oc_model *m, const struct oc_layout *l, int64_t stage,
                struct oc_gc_plan *p)
{
    memset(p, 0, sizeof *p);
    const double N = (double)oc_mem_stage_params(m, l, stage);
    const double g = oc_mem_param_bytes(l).grad;
    const double d = (double)(l->dp * (l->cp > 1 ? l->cp : 1));
    p->elements = N;
    if (d < 2) /* no exchange, nothing to compress */
        return;
    if (l->sync_every > 1) {
        /* Stich 2019: one all-reduce of the parameters every K steps,
         * charged at 1/K per step (the mean step, compress.h); no extra
         * state (the parameters are averaged in place) */
        p->step[p->n++] =
            (struct oc_gc_step){0, 0, OC_COLL_ALLREDUCE, g * N / (double)l->sync_every};
        return;
    }
    switch (l->gc) {
    case OC_GC_TOPK: {
        const double K = ceil(l->gc_density * N);
        /* EF accumulate; select (OC_GC_SELECT_READS of the fp32 sum); per
         * kept element read its value, write the pair, zero its residual */
        const double pack = EF_PASS(g) * N + OC_GC_SELECT_READS * 4.0 * N +
                            (4.0 + OC_GC_PAIR_BYTES + 4.0) * K;
        p->mem_bytes = EF_BYTES * N;
        p->step[p->n++] =
            (struct oc_gc_step){pack, 0, OC_COLL_ALLGATHER, d * K * OC_GC_PAIR_BYTES};
        /* decompress: zero the dense gradient, then scatter-add the d*K
         * gathered pairs (read the pair, read and write the element;
         * ESTIMATE: random 32-byte sectors not counted) */
        p->final_bytes = g * N + d * K * (OC_GC_PAIR_BYTES + 2.0 * g);
        return;
    }
    case OC_GC_Q8:
    case OC_GC_Q1: {
        const double bits = l->gc == OC_GC_Q8 ? 8.0 : 1.0, c = bits / 8.0;
        /* worker: EF accumulate, one read for the scale (Seide et al.
         * 2014 / Tang et al. 2021 scale by a norm of the chunk), one read
         * to quantise writing the codes and the new residual */
        const double pack = EF_PASS(g) * N + 4.0 * N + (4.0 + c + EF_BYTES) * N;
        p->mem_bytes = EF_BYTES * N + EF_BYTES * N / d;
        /* the compressed buffer and one fp32 scale per chunk */
        p->step[p->n++] = (struct oc_gc_step){pack, 0, OC_COLL_ALLREDUCE, c * N + 4.0 * d};
        /* server (its N/d chunk): read the d ranks' codes of it, add and
         * update the server residual, write its codes; then every rank
         * decodes the gathered buffer into the gradient */
        p->final_bytes = c * N + (N / d) * (2.0 * EF_BYTES + c) + (c + g) * N;
        return;
    }
    case OC_GC_POWERSGD:
        powersgd(m, l, stage, N, g, p);
        return;
    default:
        p->step[p->n++] = (struct oc_gc_step){0, 0, OC_COLL_ALLREDUCE, g * N};
        return;
    }
}

double oc_gc_mem_bytes(const struct oc_model *m, const struct oc_layout *l, int64_t stage)
{
    if (!oc_gc_on(l))
        return 0;
    struct oc_gc_plan p;
    oc_gc_plan(m, l, stage, &p);
    return p.mem_bytes;
}

double oc_gc_kernel_s(const struct oc_topology *t, double bytes, double flops)
{
    double s = bytes > 0 ? oc_cost_membound_s(t, bytes) : 0;
    if (flops > 0) {
        const double rate = t->calib_gemm_flops > 0
                                ? t->calib_gemm_flops
                                : t->device.peak_flops_16bit * t->device.gemm_efficiency;
        s += flops / rate;
    }
    return s;
}

static struct oc_op gc_op(enum oc_op_kind kind, int64_t stage)
{
    struct oc_op o;
    memset(&o, 0, sizeof o);
    o.kind = (uint8_t)kind;
    o.phase = OC_PHASE_BWD;
    o.part = OC_PART_ALL;
    o.mb = -1;
    o.stage = (int32_t)stage;
    o.layer_first = -1;
    o.count = 1;
    o.peer = o.tag = -1;
    return o;
}

void oc_gc_put_ops(const struct oc_model *m, const struct oc_layout *l, int64_t stage,
                   void (*put)(void *k, const struct oc_op *op), void *k)
{
    struct oc_gc_plan p;
    oc_gc_plan(m, l, stage, &p);
    for (int i = 0; i < p.n; i++) {
        if (p.step[i].kernel_bytes > 0 || p.step[i].kernel_flops > 0) {
            struct oc_op c = gc_op(OC_OP_COMPUTE, stage);
            c.hbm_bytes = p.step[i].kernel_bytes;
            c.flops = p.step[i].kernel_flops;
            put(k, &c);
        }
        struct oc_op o = gc_op(OC_OP_COLLECTIVE, stage);
        o.coll = (uint8_t)p.step[i].coll;
        o.group = OC_GROUP_DP;
        o.bytes = p.step[i].bytes;
        put(k, &o);
    }
    if (p.final_bytes > 0 || p.final_flops > 0) {
        struct oc_op c = gc_op(OC_OP_COMPUTE, stage);
        c.hbm_bytes = p.final_bytes;
        c.flops = p.final_flops;
        put(k, &c);
    }
}

void oc_gc_apply(struct oc_layout *l, const struct oc_gc_setting *s)
{
    l->gc = s->gc;
    l->gc_density = s->density;
    l->gc_rank = s->rank;
    l->sync_every = s->sync_every;
}

int oc_gc_parse_list(const char *list, struct oc_gc_setting *out, int max, int *n,
                     struct oc_status *st)
{
    char q[OC_QUOTE_MAX];
    char buf[256];
    if (!list || !*list || strlen(list) >= sizeof buf)
        return oc_fail(st, "--compression: expected a list such as none,topk0.01,q1,psgd4,sync4 "
                           "(got '%s')", oc_quote(q, sizeof q, list ? list : ""));
    strcpy(buf, list);
    *n = 0;
    char *save = NULL;
    for (char *e = strtok_r(buf, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
        char part[64];
        if (strncmp(e, "gc=", 3) == 0 || strncmp(e, "sync", 4) == 0)
            snprintf(part, sizeof part, "%s", e);
        else
            snprintf(part, sizeof part, "gc=%s", e);
        struct oc_layout l;
        memset(&l, 0, sizeof l);
        int is_sync = 0;
        const int rc = oc_gc_parse_part(&l, part, &is_sync, st);
        if (rc < 0)
            return oc_fail(st, "--compression: %s", st->msg);
        if (rc == 0)
            return oc_fail(st, "--compression: '%s' is not one of none, topk<D>, q8, q1, "
                               "psgd<R>, sync<K>", oc_quote(q, sizeof q, e));
        if (*n >= max)
            return oc_fail(st, "--compression: more than %d values", max);
        const struct oc_gc_setting s = {l.gc, l.gc_density, l.gc_rank, l.sync_every};
        for (int i = 0; i < *n; i++)
            if (out[i].gc == s.gc && out[i].density == s.density && out[i].rank == s.rank &&
                out[i].sync_every == s.sync_every)
                return oc_fail(st, "--compression: '%s' given twice", oc_quote(q, sizeof q, e));
        out[(*n)++] = s;
    }
    if (*n == 0)
        return oc_fail(st, "--compression: an empty list");
    return 0;
}
