/* stage_split.c: the uneven splits worth trying (see stage_split.h for the
 * options and their sources).
 *
 * How: every legal split is (f, k, e), the layers of the first stage, of
 * each middle stage and of the last (p == 2: no middle; every count a
 * multiple of v, at least v; f + (p-2)*k + e = L). A stage's time and its
 * memory depend only on its own layer count and on whether it is the
 * first, a middle or the last stage, so the search walks every (k, f) and
 * reads each stage's figures from per-count tables: at most 3*L/v memory
 * evaluations per layout.
 *
 * What it is not: the rule of legal splits (placement.h, which the options
 * pass) or the enumeration of layouts (layout.c, search.c).
 */
#include "stage_split.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "memory.h"
#include "placement.h"
#include "status.h"

/* The first, a middle and the last stage. */
enum { ST_FIRST, ST_MID, ST_LAST, ST_N };

struct split {
    int64_t f, k, e;
};

/* What the search weighs. */
struct ctx {
    const struct oc_model *m;
    const struct oc_layout *l;
    int64_t L, p, v;
    /* time of a layer on the first, a middle and the last stage (one
     * value thrice on one node type; node groups: each class's slowest
     * device), of the embedding and of the head */
    double layer_w[ST_N], embed_w, head_w;
    double *mem[ST_N];               /* peak bytes by layer count, <0: unknown */
    /* stage_mem's even model and layout (its layer count set per call) */
    struct oc_model even_m;
    struct oc_layout even_l;
};

int oc_stage_group_slowest(const struct oc_topology *t, const struct oc_layout *l,
                           const double w[], int64_t first, int64_t end)
{
    int best = -1;
    const int64_t world = oc_layout_world(l);
    for (int64_t r = 0; r < world; r++) {
        const int64_t st = oc_layout_coord(l, r).pp;
        if (st < first || st >= end)
            continue;
        const int g = oc_topology_group_of_rank(t, r);
        if (best < 0 || w[g] > w[best])
            best = g;
    }
    return best < 0 ? 0 : best;
}

/* The larger of two loads or peaks (finite, never NaN: fmax's NaN rule
 * is not needed, and its call was a tenth of the search). */
static double dmax(double a, double b) { return a > b ? a : b; }

/* The time weights from the cost model (cost.h), one micro-batch: a
 * layer's ATTN + MLP forward, backward and recompute; the embedding's and
 * the head's (with the loss) forward and backward. */
static void weights_from_cost(struct ctx *x, const struct oc_topology *t)
{
    struct oc_cost c;
    oc_cost_init(&c, x->m, x->l, t);
    const enum oc_phase ph[] = {OC_PHASE_FWD, OC_PHASE_BWD, OC_PHASE_RECOMPUTE};
    double lw = 0;
    x->embed_w = x->head_w = 0;
    for (int i = 0; i < 3; i++) {
        lw += c.part_s[OC_PART_ATTN][ph[i]] + c.part_s[OC_PART_MLP][ph[i]];
        x->embed_w += c.part_s[OC_PART_EMBED][ph[i]];
        x->head_w += c.part_s[OC_PART_HEAD][ph[i]];
    }
    x->layer_w[ST_FIRST] = x->layer_w[ST_MID] = x->layer_w[ST_LAST] = lw;
}

/* Node groups (topology.h): each stage class's weights from the slowest
 * device its ranks land on (oc_stage_group_slowest), the embedding's from
 * stage 0's, the head's from stage p-1's. */
static void weights_from_groups(struct ctx *x, const struct oc_topology *t)
{
    struct ctx g;
    double lw[OC_MAX_NODE_GROUPS], ew[OC_MAX_NODE_GROUPS], hw[OC_MAX_NODE_GROUPS];
    for (int i = 0; i < t->n_groups; i++) {
        struct oc_topology view;
        oc_topology_group_view(t, i, &view);
        g = *x;
        weights_from_cost(&g, &view);
        lw[i] = g.layer_w[ST_FIRST], ew[i] = g.embed_w, hw[i] = g.head_w;
    }
    const int64_t p = x->p;
    const int g0 = oc_stage_group_slowest(t, x->l, lw, 0, 1);
    const int ge = oc_stage_group_slowest(t, x->l, lw, p - 1, p);
    const int gm = p > 2 ? oc_stage_group_slowest(t, x->l, lw, 1, p - 1) : g0;
    x->layer_w[ST_FIRST] = lw[g0], x->embed_w = ew[g0];
    x->layer_w[ST_LAST] = lw[ge], x->head_w = hw[ge];
    x->layer_w[ST_MID] = lw[gm];
}

/* Without a device: FLOPs (model.h), backward twice the forward
 * (Narayanan et al. 2021, section 5.1), full recompute one more forward,
 * selective the 4*b*s^2*h of the scores (Korthikanti et al. 2022,
 * section 5); the embedding, a gather, none. */
static void weights_from_flops(struct ctx *x)
{
    const struct oc_layout *l = x->l;
    const double fl = oc_model_layer_fwd_flops(x->m, l->micro_batch, l->seq_length);
    const double s = (double)l->seq_length, b = (double)l->micro_batch;
    double lw = 3.0 * fl;
    if (l->recompute == OC_RECOMPUTE_FULL)
        lw += fl;
    else if (l->recompute == OC_RECOMPUTE_SELECTIVE)
        lw += 4.0 * b * s * s * (double)x->m->hidden_size;
    x->layer_w[ST_FIRST] = x->layer_w[ST_MID] = x->layer_w[ST_LAST] = lw;
    x->embed_w = 0;
    x->head_w = 3.0 * oc_model_head_fwd_flops(x->m, l->micro_batch, l->seq_length);
}

/* The peak bytes of stage class `st` holding n layers. A stage's memory
 * depends on its own layers only (memory.h), so it is the stage of an
 * even split of p*n layers; a middle stage is stage 1, which of the
 * middle stages holds the most micro-batches in flight. */
static double stage_mem(struct ctx *x, int st, int64_t n)
{
    OC_ASSERT(n >= 1 && n <= x->L);
    if (x->mem[st][n] >= 0)
        return x->mem[st][n];
    x->even_m.num_hidden_layers = x->p * n;
    const int64_t stage = st == ST_FIRST ? 0 : st == ST_MID ? 1 : x->p - 1;
    struct oc_mem_breakdown b;
    oc_memory_stage(&x->even_m, &x->even_l, stage, &b);
    x->mem[st][n] = b.total_bytes;
    return b.total_bytes;
}

static double split_peak(struct ctx *x, struct split s)
{
    double peak = dmax(stage_mem(x, ST_FIRST, s.f), stage_mem(x, ST_LAST, s.e));
    if (x->p > 2)
        peak = dmax(peak, stage_mem(x, ST_MID, s.k));
    return peak;
}

/* The loads of the three stage classes under weights (lw of a layer per
 * class, ew, hw); their most and the sum of squares over all p stages. */
static void loads(const struct ctx *x, struct split s, const double lw[ST_N], double ew,
                  double hw, double *most, double *sumsq)
{
    const double a = (double)s.f * lw[ST_FIRST] + ew, c = (double)s.e * lw[ST_LAST] + hw;
    const double b = (double)s.k * lw[ST_MID];
    *most = dmax(a, c);
    *sumsq = a * a + c * c;
    if (x->p > 2) {
        *most = dmax(*most, b);
        *sumsq += (double)(x->p - 2) * b * b;
    }
}

/* Megatron-LM's units: a layer, the embedding and the head one each. */
static const double ones[ST_N] = {1.0, 1.0, 1.0};

/* What one objective ranks by: lexicographic keys, smaller first. */
enum objective { OBJ_TIME, OBJ_EMBED, OBJ_MEMORY };

struct score {
    double key[3];
};

static struct score score_of(struct ctx *x, struct split s, enum objective o)
{
    struct score r;
    double most, sq;
    switch (o) {
    case OBJ_EMBED:
        loads(x, s, ones, 1.0, 1.0, &most, &sq);
        r.key[0] = most;
        r.key[1] = sq;
        r.key[2] = split_peak(x, s);
        break;
    case OBJ_MEMORY:
        r.key[0] = split_peak(x, s);
        loads(x, s, x->layer_w, x->embed_w, x->head_w, &most, &sq);
        r.key[1] = most;
        r.key[2] = sq;
        break;
    case OBJ_TIME:
    default:
        loads(x, s, x->layer_w, x->embed_w, x->head_w, &most, &sq);
        r.key[0] = most;
        r.key[1] = sq;
        r.key[2] = split_peak(x, s);
        break;
    }
    return r;
}

/* a before b: keys compared with a relative tolerance (sums of
 * floating-point seconds), then the fewer layers on the first stage. */
static int better(struct score a, struct split sa, struct score b, struct split sb)
{
    for (int i = 0; i < 3; i++) {
        const double tol = 1e-9 * dmax(fabs(a.key[i]), fabs(b.key[i]));
        if (a.key[i] < b.key[i] - tol)
            return 1;
        if (a.key[i] > b.key[i] + tol)
            return 0;
    }
    return sa.f < sb.f;
}

/* Calls fn on every legal split (stage_split.c's head comment). */
typedef void (*visit_fn)(struct ctx *x, struct split s, void *arg);

static void each_split(struct ctx *x, visit_fn fn, void *arg)
{
    const int64_t L = x->L, v = x->v, p = x->p;
    if (p == 2) {
        for (int64_t f = v; f <= L - v; f += v)
            fn(x, (struct split){f, 0, L - f}, arg);
        return;
    }
    for (int64_t k = v; (p - 2) * k <= L - 2 * v; k += v) {
        const int64_t r = L - (p - 2) * k;
        for (int64_t f = v; f <= r - v; f += v)
            fn(x, (struct split){f, k, r - f}, arg);
    }
}

/* The best split of one objective, optionally only among those whose
 * peak is at most limit_bytes (<= 0: any). */
struct best {
    enum objective o;
    double limit_bytes;
    int found;
    struct split s;
    struct score sc;
};

/* 1 when (a0, a1) is worse than (b0, b1) by better()'s rule: at the first
 * key that differs beyond the tolerance, a is the larger. */
static int worse2(double a0, double a1, const struct score *b)
{
    const double a[2] = {a0, a1};
    for (int i = 0; i < 2; i++) {
        const double tol = 1e-9 * dmax(fabs(a[i]), fabs(b->key[i]));
        if (a[i] > b->key[i] + tol)
            return 1;
        if (a[i] < b->key[i] - tol)
            return 0;
    }
    return 0;
}

static void consider(struct ctx *x, struct split s, void *arg)
{
    struct best *b = arg;
    /* The time and embed objectives rank by the loads first, the peak
     * last: a split worse on the loads than the best found cannot be
     * chosen whatever its peak, which is then not computed (each is an
     * oc_memory_stage call: most of the search's time). */
    if (b->found && b->o != OBJ_MEMORY) {
        double most, sq;
        if (b->o == OBJ_EMBED)
            loads(x, s, ones, 1.0, 1.0, &most, &sq);
        else
            loads(x, s, x->layer_w, x->embed_w, x->head_w, &most, &sq);
        if (worse2(most, sq, &b->sc))
            return;
    }
    if (b->limit_bytes > 0 && split_peak(x, s) > b->limit_bytes)
        return;
    const struct score sc = score_of(x, s, b->o);
    if (!b->found || better(sc, s, b->sc, b->s)) {
        b->found = 1;
        b->s = s;
        b->sc = sc;
    }
}

static int best_split(struct ctx *x, enum objective o, double limit_bytes,
                      struct split *out)
{
    struct best b = {o, limit_bytes, 0, {0, 0, 0}, {{0, 0, 0}}};
    each_split(x, consider, &b);
    *out = b.s;
    return b.found;
}

/* The layout's (first, last) of split s: (0, 0) when every stage holds
 * L/p; a count equal to the middle stages' left out (placement.h: a stage
 * not named is a middle one). */
static void canonical(const struct ctx *x, struct split s, int64_t *f, int64_t *e)
{
    if (x->p == 2) {
        *f = s.f == s.e ? 0 : s.f;
        *e = s.f == s.e ? 0 : s.e;
        return;
    }
    *f = s.f == s.k ? 0 : s.f;
    *e = s.e == s.k ? 0 : s.e;
}

/* Appends (f, e) unless it is there already; returns the new count. */
static int add(int n, int cap, int64_t first[], int64_t last[], int64_t f, int64_t e)
{
    for (int i = 0; i < n; i++)
        if (first[i] == f && last[i] == e)
            return n;
    if (n >= cap)
        return n;
    first[n] = f;
    last[n] = e;
    return n + 1;
}

int oc_stage_split_options_on(const struct oc_model *m, const struct oc_layout *l,
                              const struct oc_topology *t, int64_t first[],
                              int64_t last[], int cap)
{
    const int64_t L = m->num_hidden_layers, p = l->pp;
    const int64_t v = oc_place_chunks_per_stage(l);
    if (cap < 1 || p < 1 || L < 1)
        return 0;
    int n = 0;
    if (L % (p * v) == 0)
        n = add(n, cap, first, last, 0, 0);
    /* uneven: PP >= 2, every stage v layers at least, L a multiple of v;
     * the options after the cap-th are not looked for (search.c's
     * structural test takes the first alone) */
    if (n >= cap || p < 2 || L > OC_SPLIT_MAX_LAYERS || L < p * v || L % v != 0)
        return n;
    struct ctx x = {m, l, L, p, v, {0, 0, 0}, 0, 0, {NULL, NULL, NULL}, *m, *l};
    x.even_l.first_stage_layers = x.even_l.last_stage_layers = 0;
    for (int i = 0; i < ST_N; i++) {
        x.mem[i] = oc_xmalloc((size_t)(L + 1) * sizeof *x.mem[i]);
        for (int64_t j = 0; j <= L; j++)
            x.mem[i][j] = -1;
    }
    /* a topology without a device's rates (a test's) weighs by FLOPs */
    if (t && t->n_groups > 1)
        weights_from_groups(&x, t);
    else if (t && t->device.peak_flops_16bit > 0 && oc_cost_mem_Bps(t) > 0)
        weights_from_cost(&x, t);
    else
        weights_from_flops(&x);
    struct split s;
    int64_t f, e;
    /* 2: time, under the device's memory when known */
    const double limit = t && t->device.memory_bytes > 0 ? t->device.memory_bytes : 0;
    const int time_fits = best_split(&x, OBJ_TIME, limit, &s);
    if (time_fits) {
        canonical(&x, s, &f, &e);
        n = add(n, cap, first, last, f, e);
    }
    /* 3: Megatron-LM's embedding and loss as one layer each */
    if (n < cap && best_split(&x, OBJ_EMBED, 0, &s)) {
        canonical(&x, s, &f, &e);
        n = add(n, cap, first, last, f, e);
    }
    /* 4: the lowest peak: where no split fits the device (it is then the
     * closest to fitting), or without a device. Where the time option
     * fits, a split of lower memory is only slower. */
    if (n < cap && (limit <= 0 || !time_fits) && best_split(&x, OBJ_MEMORY, 0, &s)) {
        canonical(&x, s, &f, &e);
        n = add(n, cap, first, last, f, e);
    }
    for (int i = 0; i < ST_N; i++)
        free(x.mem[i]);
    return n;
}

int oc_stage_split_options(const struct oc_model *m, const struct oc_layout *l,
                           int64_t first[], int64_t last[], int cap)
{
    return oc_stage_split_options_on(m, l, NULL, first, last, cap);
}
