/* search.c: the knob space of `ocsim sweep` (see search.h). */
#include "search.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "placement.h"
#include "stage_split.h"
#include "batch.h"
#include "status.h"

#define MAXV 64     /* knob values of one dimension */
#define MAXSPLIT OC_SEARCH_MAX_SPLIT

void oc_search_space_default(struct oc_search_space *s, int64_t cards,
                             const struct oc_layout *base)
{
    memset(s, 0, sizeof *s);
    s->cards = cards;
    s->base = *base;
    s->micro_batches[0] = 1;
    s->micro_batches[1] = 2;
    s->micro_batches[2] = 4;
    s->n_micro_batches = 3;
    s->max_cp = 16;
}

struct emit {
    int64_t n; /* candidates so far (of the visited units) */
    int part, nparts; /* visit the units u with u % nparts == part */
    int64_t unit;     /* units so far (visited or not) */
    int64_t cur;      /* the unit being visited */
    struct oc_search_counts c;
    const struct oc_search_space *s;
    const struct oc_model *m;
    const struct oc_topology *t;
    void (*fn)(void *ctx, const struct oc_search_set *g);
    void *ctx;
};

static int fixed(const struct oc_search_space *s, unsigned bit)
{
    return (s->fixed & bit) != 0;
}

/* Hands set g (its index and ranges filled here) to the visitor. */
static void emit_set(struct emit *e, struct oc_search_set *g)
{
    g->index = e->n;
    g->unit = e->cur;
    e->n += (int64_t)g->norder * g->ncoll * g->nsplit;
    const int64_t v[5] = {g->layout.tp, g->layout.cp, g->layout.pp, g->layout.dp,
                          g->layout.vchunks};
    for (int i = 0; i < 5; i++) {
        e->c.lo[i] = v[i] < e->c.lo[i] ? v[i] : e->c.lo[i];
        e->c.hi[i] = v[i] > e->c.hi[i] ? v[i] : e->c.hi[i];
    }
    e->fn(e->ctx, g);
}

void oc_search_set_layout(const struct oc_search_set *g, int iorder, int icoll, int isplit,
                          struct oc_layout *out)
{
    OC_ASSERT(iorder >= 0 && iorder < g->norder && icoll >= 0 && icoll < g->ncoll &&
              isplit >= 0 && isplit < g->nsplit);
    *out = g->layout;
    out->order = g->order[iorder];
    out->coll = g->coll[icoll];
    out->first_stage_layers = g->first[isplit];
    out->last_stage_layers = g->last[isplit];
}

/* The recompute choices of layout l: (mode, k) pairs. k of a quarter, a
 * half and three quarters of the smallest chunk's layers, distinct, in
 * [1, layers - 1] (k = all layers is plain full recompute). Returns the
 * count; *full gets what a searched recompute would have without the
 * canonical skips (for the no-op count: the same here). */
static int recompute_options(const struct emit *e, const struct oc_layout *l,
                             enum oc_recompute mode[], int64_t k[])
{
    const struct oc_search_space *s = e->s;
    if (fixed(s, OC_LAYOUT_NAMED_RECOMPUTE)) {
        mode[0] = s->base.recompute;
        k[0] = s->base.recompute_layers;
        return 1;
    }
    int n = 0;
    const enum oc_recompute modes[] = {OC_RECOMPUTE_NONE, OC_RECOMPUTE_SELECTIVE,
                                       OC_RECOMPUTE_FULL};
    for (int i = 0; i < 3; i++)
        mode[n] = modes[i], k[n++] = 0;
    int64_t lpc = e->m->num_hidden_layers;
    const int64_t v = oc_place_chunks_per_stage(l);
    for (int64_t st = 0; st < l->pp; st++)
        for (int64_t c = 0; c < v; c++) {
            int64_t x = oc_place_chunk_layers(l, e->m, st, c).count;
            if (x < lpc)
                lpc = x;
        }
    const int64_t ks[] = {lpc / 4, lpc / 2, (3 * lpc) / 4};
    for (int i = 0; i < 3; i++) {
        if (ks[i] < 1 || ks[i] >= lpc || (n > 3 && k[n - 1] == ks[i]))
            continue;
        mode[n] = OC_RECOMPUTE_FULL, k[n++] = ks[i];
    }
    return n;
}

/* Whether some collective group of l has two or more ranks: TP, CP, DP, or
 * the tied embedding's between two stages. */
static int has_group(const struct oc_layout *l, const struct oc_model *m)
{
    return l->tp > 1 || l->cp > 1 || l->dp > 1 ||
           (l->pp > 1 && oc_place_tied_allreduce(l, m, 0));
}

/* Whether every collective group of l (TP, CP, the DP x CP gradient
 * group and ZeRO's, the tied embedding's) lies inside one node, aligned:
 * the simulator's automatic choice then runs the ring on each (sim/coll.c:
 * inside one node only the ring), so forcing the ring is a no-op. Rank
 * order (layout.h): TP fastest, then CP, then DP and PP (tp-dp-pp) or PP
 * and DP (tp-pp-dp); a group whose members span an aligned block of B
 * consecutive ranks is inside a node when B divides gpn. */
static int groups_in_nodes(const struct oc_layout *l, const struct oc_model *m,
                           const struct oc_topology *t)
{
    const int64_t gpn = t->gpus_per_node > 0 ? t->gpus_per_node : 1;
    const int64_t cp = l->cp > 1 ? l->cp : 1, U = l->tp * cp;
#define IN_NODE(B) ((B) <= gpn && gpn % (B) == 0)
    if (!IN_NODE(l->tp) || !IN_NODE(U))
        return 0;
    if (l->dp > 1) {
        const int64_t B = l->order == OC_ORDER_TP_DP_PP ? U * l->dp : U * l->pp * l->dp;
        if (!IN_NODE(B))
            return 0;
    }
    if (l->pp > 1 && oc_place_tied_allreduce(l, m, 0)) {
        const int64_t B = l->order == OC_ORDER_TP_DP_PP ? U * l->dp * l->pp : U * l->pp;
        if (!IN_NODE(B))
            return 0;
    }
#undef IN_NODE
    return 1;
}

/* Every candidate of one structural layout (tp, cp, pp, dp, micro-batch,
 * schedule set): the remaining knobs, canonical, then the stage splits. */
/* The stage splits of candidate l (stage_split.h, with the topology's
 * costs and memory), or the even one alone under even_stages. */
static int splits(const struct emit *e, const struct oc_layout *l, int64_t f[], int64_t la[])
{
    if (e->s->even_stages) {
        f[0] = la[0] = 0;
        return 1;
    }
    return oc_stage_split_options_on(e->m, l, e->t, f, la, MAXSPLIT);
}

static void expand_knobs(struct emit *e, const struct oc_layout *b0)
{
    const struct oc_search_space *s = e->s;
    const struct oc_topology *t = e->t;
    const struct oc_layout *B = &s->base;
    const int64_t world = b0->tp * b0->cp * b0->pp * b0->dp;
    const int one_node = world <= t->gpus_per_node;
    enum oc_recompute rmode[8];
    int64_t rk[8];
    const int nr = recompute_options(e, b0, rmode, rk);

    int sp[2], nsp = 0, zero[4], nz = 0, ovl[2], no = 0, nor = 0, ncoll = 0;
    enum oc_rank_order order[2];
    enum oc_coll_choice coll[4];
    if (fixed(s, OC_LAYOUT_NAMED_SP) || b0->tp == 1)
        sp[nsp++] = B->sequence_parallel;
    else
        sp[nsp++] = 1, sp[nsp++] = 0;
    if (fixed(s, OC_LAYOUT_NAMED_ZERO) || b0->dp == 1)
        zero[nz++] = B->zero;
    else
        for (int z = 0; z < 4; z++)
            zero[nz++] = z;
    if (fixed(s, OC_LAYOUT_NAMED_OVERLAP) || b0->dp == 1)
        ovl[no++] = B->overlap_grad_reduce;
    else
        ovl[no++] = 1, ovl[no++] = 0;
    const int64_t gpn = t->gpus_per_node > 0 ? t->gpus_per_node : 1;
    const int whole_nodes = !s->platform_file && (b0->tp * (b0->cp > 1 ? b0->cp : 1)) % gpn == 0;
    if (fixed(s, OC_LAYOUT_NAMED_ORDER) || b0->pp == 1 || b0->dp == 1 || one_node || whole_nodes)
        order[nor++] = B->order;
    else
        order[nor++] = OC_ORDER_TP_DP_PP, order[nor++] = OC_ORDER_TP_PP_DP;
    if (fixed(s, OC_LAYOUT_NAMED_COLL) || !has_group(b0, e->m)) {
        coll[ncoll++] = B->coll;
    } else {
        coll[ncoll++] = OC_COLL_CHOICE_AUTO;
        /* every group inside a node: auto runs the ring, and the two-level
         * ring has one level, the ring (sim/coll_hier.c) */
        if (!groups_in_nodes(b0, e->m, t)) {
            coll[ncoll++] = OC_COLL_CHOICE_RING;
            coll[ncoll++] = OC_COLL_CHOICE_HIER;
        }
        coll[ncoll++] = OC_COLL_CHOICE_TREE;
    }
    /* the no-op variants: the full product less the one generated */
    int64_t full = (int64_t)nr;
    full *= fixed(s, OC_LAYOUT_NAMED_SP) ? 1 : 2;
    full *= fixed(s, OC_LAYOUT_NAMED_ZERO) ? 1 : 4;
    full *= fixed(s, OC_LAYOUT_NAMED_OVERLAP) ? 1 : 2;
    full *= fixed(s, OC_LAYOUT_NAMED_ORDER) ? 1 : 2;
    full *= fixed(s, OC_LAYOUT_NAMED_COLL) ? 1 : 4;
    /* --compression: its values where a gradient group exists */
    const int ngc = s->n_compress > 0 && b0->dp * b0->cp > 1 ? s->n_compress : 1;
    full *= s->n_compress > 0 ? s->n_compress : 1;
    e->c.noop += full - (int64_t)nr * nsp * nz * no * nor * ncoll * ngc;

    struct oc_search_set g;
    memset(&g, 0, sizeof g);
    g.norder = nor;
    g.ncoll = ncoll;
    memcpy(g.order, order, sizeof order);
    memcpy(g.coll, coll, sizeof coll);
    int64_t first0[MAXSPLIT], last0[MAXSPLIT];
    int ns = 0;
    for (int ir = 0; ir < nr; ir++)
        for (int isp = 0; isp < nsp; isp++)
            for (int iz = 0; iz < nz; iz++)
                for (int ig = 0; ig < ngc; ig++)
                for (int io = 0; io < no; io++) {
                    struct oc_layout l = *b0;
                    if (s->n_compress > 0 && b0->dp * b0->cp > 1)
                        oc_gc_apply(&l, &s->compress[ig]);
                    l.recompute = rmode[ir];
                    l.recompute_layers = rk[ir];
                    l.sequence_parallel = sp[isp];
                    l.zero = zero[iz];
                    l.overlap_grad_reduce = ovl[io];
                    l.order = order[0];
                    l.coll = coll[0];
                    /* the splits read the memory (recompute, SP, ZeRO,
                     * overlap under ZeRO-3) and the cost table, not the
                     * rank order or the collective algorithm: one call
                     * per knob set; none: one candidate per variant with
                     * the base's split (validate says why) */
                    /* memory reads the overlap under ZeRO-3 alone (the
                     * transient prefetch, memory.h), the cost table never:
                     * the other overlap values share io = 0's splits */
                    if (io == 0 || l.zero == 3)
                        ns = splits(e, &l, first0, last0);
                    memcpy(g.first, first0, sizeof first0);
                    memcpy(g.last, last0, sizeof last0);
                    if (ns == 0) {
                        g.first[0] = l.first_stage_layers;
                        g.last[0] = l.last_stage_layers;
                    }
                    g.nsplit = ns > 0 ? ns : 1;
                    l.first_stage_layers = g.first[0];
                    l.last_stage_layers = g.last[0];
                    g.layout = l;
                    emit_set(e, &g);
                }
}

/* The schedules of a structural layout: the fixed list, or 1f1b and
 * interleaved with every v >= 2 such that the layers divide p*v. p = 1
 * makes interleaving a no-op. */
static int schedule_options(struct emit *e, int64_t pp, enum oc_schedule_kind k[],
                            int64_t v[])
{
    const struct oc_search_space *s = e->s;
    if (fixed(s, OC_LAYOUT_NAMED_SCHEDULE) || fixed(s, OC_LAYOUT_NAMED_V)) {
        int n = 0;
        for (int i = 0; i < s->n_schedules && n < MAXV; i++)
            k[n] = s->schedules[i], v[n++] = s->vchunks[i];
        return n;
    }
    int n = 0;
    k[n] = OC_SCHED_1F1B, v[n++] = 1;
    const int64_t L = e->m->num_hidden_layers;
    for (int64_t d = 2; d <= L && n < MAXV; d++) {
        if (L % d != 0)
            continue;
        if (pp == 1 || L % (pp * d) != 0) {
            e->c.noop += pp == 1;
            continue;
        }
        k[n] = OC_SCHED_INTERLEAVED, v[n++] = d;
    }
    return n;
}

/* The structural part of one candidate, with every other knob at its
 * most permissive value: refused, it stands for all its variants. */
static int structural_ok(struct emit *e, const struct oc_layout *l, char *why, size_t n)
{
    struct oc_layout p = *l;
    p.zero = 0;
    p.recompute = OC_RECOMPUTE_NONE;
    p.recompute_layers = 0;
    p.sequence_parallel = 0;
    p.tp_comm_overlap = 0; /* it needs sequence parallelism */
    p.overlap_param_gather = 0; /* it needs zero1 and ovl */
    p.overlap_grad_reduce = 0;
    p.coll = OC_COLL_CHOICE_AUTO;
    int64_t f[MAXSPLIT], la[MAXSPLIT];
    if (oc_stage_split_options(e->m, &p, f, la, 1) > 0) /* the first alone */
        p.first_stage_layers = f[0], p.last_stage_layers = la[0];
    struct oc_status st = {{0}};
    if (oc_layout_validate(&p, e->m, e->t, e->s->cards, &st) == 0)
        return 1;
    snprintf(why, n, "%s", st.msg);
    return 0;
}

static void structural(struct emit *e, int64_t tp, int64_t cp, int64_t pp, int64_t dp)
{
    const struct oc_search_space *s = e->s;
    enum oc_schedule_kind sk[MAXV];
    int64_t sv[MAXV];
    /* the no-op interleavings it counts belong to the structural's first
     * unit (oc_search_run_part) */
    const int64_t noop0 = e->c.noop;
    const int nsched = schedule_options(e, pp, sk, sv);
    if (e->unit % e->nparts != e->part)
        e->c.noop = noop0;
    for (int i = 0; i < s->n_micro_batches; i++)
        for (int j = 0; j < nsched; j++) {
            e->cur = e->unit++;
            if (e->cur % e->nparts != e->part)
                continue;
            struct oc_layout l = s->base;
            l.tp = tp, l.cp = cp, l.pp = pp, l.dp = dp;
            l.micro_batch = s->micro_batches[i];
            l.schedule = sk[j];
            l.vchunks = sv[j];
            if (s->batch_tolerance > 0) {
                int64_t g = oc_batch_nearest(&l, s->base.global_batch, s->batch_tolerance);
                if (g > 0)
                    l.global_batch = g;
            }
            char why[OC_MSG_MAX];
            if (!structural_ok(e, &l, why, sizeof why)) {
                struct oc_search_set g;
                memset(&g, 0, sizeof g);
                g.layout = l;
                g.norder = g.ncoll = g.nsplit = 1;
                g.order[0] = l.order;
                g.coll[0] = l.coll;
                g.first[0] = l.first_stage_layers;
                g.last[0] = l.last_stage_layers;
                g.refused = why;
                emit_set(e, &g);
            } else {
                expand_knobs(e, &l);
            }
        }
}

int64_t oc_search_run(const struct oc_search_space *s, const struct oc_model *m,
                      const struct oc_topology *t,
                      void (*fn)(void *ctx, const struct oc_search_set *g), void *ctx,
                      struct oc_search_counts *counts)
{
    return oc_search_run_part(s, m, t, fn, ctx, counts, 0, 1);
}

int64_t oc_search_run_part(const struct oc_search_space *s, const struct oc_model *m,
                           const struct oc_topology *t,
                           void (*fn)(void *ctx, const struct oc_search_set *g), void *ctx,
                           struct oc_search_counts *counts, int part, int nparts)
{
    OC_ASSERT(nparts >= 1 && part >= 0 && part < nparts);
    struct emit e = {.s = s, .m = m, .t = t, .fn = fn, .ctx = ctx, .part = part,
                     .nparts = nparts};
    for (int i = 0; i < 5; i++)
        e.c.lo[i] = INT64_MAX, e.c.hi[i] = INT64_MIN;
    const int64_t N = s->cards;
    for (int64_t tp = 1; tp <= N; tp++) {
        if (N % tp || (fixed(s, OC_LAYOUT_NAMED_TP) && tp != s->base.tp))
            continue;
        for (int64_t cp = 1; cp <= N / tp; cp++) {
            if ((N / tp) % cp || (fixed(s, OC_LAYOUT_NAMED_CP) ? cp != s->base.cp
                                                               : cp > s->max_cp))
                continue;
            for (int64_t pp = 1; pp <= N / tp / cp; pp++) {
                if ((N / tp / cp) % pp || (fixed(s, OC_LAYOUT_NAMED_PP) && pp != s->base.pp))
                    continue;
                const int64_t dp = N / tp / cp / pp;
                if (fixed(s, OC_LAYOUT_NAMED_DP) && dp != s->base.dp)
                    continue;
                structural(&e, tp, cp, pp, dp);
            }
        }
    }
    e.c.candidates = e.n;
    if (counts)
        *counts = e.c;
    return e.n;
}

/* oc_search_enumerate's visitor: every candidate of the set, validated. */
struct all {
    struct oc_candidate *v;
    int64_t n, cap, illegal;
    const struct oc_search_space *s;
    const struct oc_model *m;
    const struct oc_topology *t;
};

static void all_set(void *ctx, const struct oc_search_set *g)
{
    struct all *a = ctx;
    for (int io = 0; io < g->norder; io++)
        for (int ic = 0; ic < g->ncoll; ic++)
            for (int k = 0; k < g->nsplit; k++) {
                if (a->n == a->cap) {
                    a->cap = a->cap ? 2 * a->cap : 256;
                    a->v = oc_xrealloc(a->v, (size_t)a->cap * sizeof *a->v);
                }
                struct oc_candidate *c = &a->v[a->n++];
                oc_search_set_layout(g, io, ic, k, &c->layout);
                struct oc_status st = {{0}};
                if (g->refused) {
                    c->valid = 0;
                    snprintf(c->reason, sizeof c->reason, "%s", g->refused);
                } else {
                    c->valid = oc_layout_validate(&c->layout, a->m, a->t, a->s->cards, &st) == 0;
                    snprintf(c->reason, sizeof c->reason, "%s", c->valid ? "" : st.msg);
                }
                a->illegal += !c->valid;
            }
}

int64_t oc_search_enumerate(const struct oc_search_space *s, const struct oc_model *m,
                            const struct oc_topology *t, struct oc_candidate **out,
                            struct oc_search_counts *counts)
{
    struct all a = {.s = s, .m = m, .t = t};
    struct oc_search_counts n;
    oc_search_run(s, m, t, all_set, &a, &n);
    n.illegal = a.illegal;
    if (counts)
        *counts = n;
    *out = a.v ? a.v : oc_xmalloc(sizeof *a.v);
    return a.n;
}

/* ---- the ranges, for the summary and report.md ------------------------- */

/* "lo-hi" of one knob over the candidates (counts' range i), with
 * "(fixed)" when the knob was. */
static size_t range_i64(char *buf, size_t len, const char *name,
                        const struct oc_search_counts *n, int i, int is_fixed)
{
    const int64_t lo = n->lo[i], hi = n->hi[i];
    if (n->candidates == 0 || lo > hi)
        return (size_t)snprintf(buf, len, "%s -", name);
    if (lo == hi)
        return (size_t)snprintf(buf, len, "%s %lld%s", name, (long long)lo,
                                is_fixed ? " (fixed)" : "");
    return (size_t)snprintf(buf, len, "%s %lld-%lld", name, (long long)lo, (long long)hi);
}

void oc_search_describe(const struct oc_search_space *s, const struct oc_search_counts *n,
                        char *buf, size_t len)
{
    size_t k = 0;
#define ADD(...) (k += k < len ? (size_t)snprintf(buf + k, len - k, __VA_ARGS__) : 0)
#define RANGE(nm, i, bit)                                                    \
    do {                                                                     \
        if (k < len)                                                         \
            k += range_i64(buf + k, len - k, nm, n, i, fixed(s, bit));       \
        ADD(", ");                                                           \
    } while (0)
    RANGE("tp", 0, OC_LAYOUT_NAMED_TP);
    RANGE("cp", 1, OC_LAYOUT_NAMED_CP);
    RANGE("pp", 2, OC_LAYOUT_NAMED_PP);
    RANGE("dp", 3, OC_LAYOUT_NAMED_DP);
    ADD("mb ");
    for (int i = 0; i < s->n_micro_batches; i++)
        ADD("%s%lld", i ? "|" : "", (long long)s->micro_batches[i]);
    ADD(", ");
    if (fixed(s, OC_LAYOUT_NAMED_SCHEDULE) || fixed(s, OC_LAYOUT_NAMED_V)) {
        ADD("schedule ");
        for (int i = 0; i < s->n_schedules; i++)
            ADD("%s%s%s", i ? "|" : "", oc_schedule_name(s->schedules[i]),
                s->schedules[i] == OC_SCHED_INTERLEAVED ? "" : "");
        ADD(" (fixed)");
    } else {
        RANGE("schedule 1f1b|interleaved v", 4, 0);
        k -= k >= 2 ? 2 : 0;
        buf[k] = '\0';
    }
    ADD("; recompute %s", fixed(s, OC_LAYOUT_NAMED_RECOMPUTE)
                              ? oc_recompute_name(s->base.recompute)
                              : "none|selective|full|full of k layers");
    ADD(fixed(s, OC_LAYOUT_NAMED_RECOMPUTE) ? " (fixed)" : "");
    ADD("; sp %s", fixed(s, OC_LAYOUT_NAMED_SP)
                       ? (s->base.sequence_parallel ? "on (fixed)" : "off (fixed)")
                       : "on|off");
    if (fixed(s, OC_LAYOUT_NAMED_ZERO))
        ADD("; zero %d (fixed)", s->base.zero);
    else
        ADD("; zero 0|1|2|3");
    ADD("; overlap %s", fixed(s, OC_LAYOUT_NAMED_OVERLAP)
                            ? (s->base.overlap_grad_reduce ? "on (fixed)" : "off (fixed)")
                            : "on|off");
    if (fixed(s, OC_LAYOUT_NAMED_ORDER))
        ADD("; order %s (fixed)", oc_order_name(s->base.order));
    else
        ADD("; order tp-dp-pp|tp-pp-dp");
    if (fixed(s, OC_LAYOUT_NAMED_COLL))
        ADD("; coll %s (fixed)", oc_coll_choice_name(s->base.coll));
    else
        ADD("; coll auto|ring|hier|tree");
    for (int i = 0; i < s->n_compress; i++) { /* --compression (compress.h) */
        struct oc_layout g = s->base;
        oc_gc_apply(&g, &s->compress[i]);
        char lab[40];
        if (g.sync_every > 1)
            snprintf(lab, sizeof lab, "sync%lld", (long long)g.sync_every);
        else
            oc_gc_label(&g, lab, sizeof lab);
        ADD("%s%s", i ? "|" : "; compression ", lab + (g.sync_every > 1 ? 0 : 3));
    }
#undef RANGE
#undef ADD
    if (k >= len && len > 0)
        buf[len - 1] = '\0';
}
