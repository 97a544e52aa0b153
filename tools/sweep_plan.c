/* sweep_plan.c: see sweep_plan.h. */
#include "sweep_plan.h"

#include "bound_groups.h"

#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <string.h>

#include "bound.h"
#include "cost.h"
#include "format.h"
#include "memory.h"
#include "reserve.h"
#include "sweep_journal.h"
#include "sweep_plan_part.h"

void oc_sweep_space(const struct oc_opts *o, struct oc_search_space *s)
{
    oc_search_space_default(s, o->cards, &o->layout);
    s->fixed = o->fixed;
    if (o->core_knobs) {
        /* --core-knobs: tp x pp x dp, the micro-batch sizes, 1f1b and
         * interleaved with two chunks, and the stage splits, every other
         * knob at its value (oc_layout_default's or the flag's): the space
         * of the sweep before issue 12, seconds where the full one takes
         * tens of seconds to minutes (docs/benchmarks.md). */
        s->fixed |= OC_LAYOUT_NAMED_RECOMPUTE | OC_LAYOUT_NAMED_SP | OC_LAYOUT_NAMED_ZERO |
                    OC_LAYOUT_NAMED_OVERLAP | OC_LAYOUT_NAMED_ORDER | OC_LAYOUT_NAMED_COLL |
                    OC_LAYOUT_NAMED_CP;
        if (!(o->fixed & (OC_LAYOUT_NAMED_SCHEDULE | OC_LAYOUT_NAMED_V))) {
            s->fixed |= OC_LAYOUT_NAMED_SCHEDULE;
            s->n_schedules = 2;
            s->schedules[0] = OC_SCHED_1F1B, s->vchunks[0] = 1;
            s->schedules[1] = OC_SCHED_INTERLEAVED, s->vchunks[1] = 2;
        }
    }
    s->batch_tolerance = o->batch_tolerance;
    s->even_stages = o->even_stages;
    s->n_compress = o->n_compress; /* --compression (core/compress.h) */
    memcpy(s->compress, o->compress, sizeof s->compress);
    s->platform_file = o->platform_file != NULL;
    s->n_micro_batches = o->n_micro_batches < OC_SEARCH_MAX_MB ? o->n_micro_batches
                                                               : OC_SEARCH_MAX_MB;
    memcpy(s->micro_batches, o->micro_batches,
           (size_t)s->n_micro_batches * sizeof s->micro_batches[0]);
    if (o->fixed & OC_LAYOUT_NAMED_SCHEDULE) {
        s->n_schedules = o->n_schedules;
        memcpy(s->schedules, o->schedules, (size_t)o->n_schedules * sizeof o->schedules[0]);
        memcpy(s->vchunks, o->vchunks, (size_t)o->n_schedules * sizeof o->vchunks[0]);
    } else if (o->fixed & OC_LAYOUT_NAMED_V) {
        /* --vchunks V alone: interleaved at that depth */
        s->n_schedules = 1;
        s->schedules[0] = o->layout.schedule;
        s->vchunks[0] = o->layout.vchunks;
    }
}

void oc_item_reason(struct item *it, const char *fmt, ...)
{
    char buf[OC_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    free(it->reason);
    it->reason = oc_xmalloc(strlen(buf) + 1);
    strcpy(it->reason, buf);
}

const char *oc_item_reason_of(const struct item *it)
{
    return it->reason ? it->reason : "";
}

/* The last closed-form results, reused by the next candidates that differ
 * only in knobs they do not read (the search emits the collective
 * algorithm, the rank order and the overlap innermost). */
#define MEM_WAYS 32 /* the stage splits of one knob set vary innermost */
struct plan_cache {
    /* memory.c reads none of order, coll, overlap (but under ZeRO-3) */
    struct oc_layout mem_key[MEM_WAYS];
    double peak[MEM_WAYS];
    int64_t stage[MEM_WAYS];
    int mem_n, mem_next;
    struct oc_layout cost_key;  /* cost.c reads tp, cp, b, s, SP, recompute,
                                   attention, precision, fp32 gradients (the
                                   optimizer's bytes, cost_overhead.c) */
    struct oc_cost cost;
    int cost_ok;
};

static struct oc_layout mem_key(const struct oc_layout *l)
{
    struct oc_layout k = *l;
    k.order = OC_ORDER_TP_DP_PP;
    k.coll = OC_COLL_CHOICE_AUTO;
    if (k.zero != 3) /* memory.c reads the overlap under ZeRO-3 only */
        k.overlap_grad_reduce = 0;
    return k;
}

static struct oc_layout cost_key(const struct oc_layout *l)
{
    struct oc_layout k;
    memset(&k, 0, sizeof k);
    k.tp = l->tp, k.cp = l->cp, k.micro_batch = l->micro_batch;
    k.seq_length = l->seq_length, k.sequence_parallel = l->sequence_parallel;
    k.recompute = l->recompute, k.recompute_layers = l->recompute_layers;
    k.attention = l->attention, k.precision = l->precision;
    k.grad_fp32 = l->grad_fp32;
    return k;
}

/* The closed-form peak of legal layout l (from the cache when a layout
 * of the same memory had it), its worst stage and its reserve; returns 1
 * when peak + reserve fit the device. */
static int closed_form_fits(struct plan_cache *pc, const struct oc_opts *o,
                            const struct oc_layout *l, double *peak, int64_t *stage,
                            double *reserve)
{
    struct oc_layout k = mem_key(l);
    int w = -1;
    for (int i = 0; i < pc->mem_n && w < 0; i++)
        if (memcmp(&k, &pc->mem_key[i], sizeof k) == 0)
            w = i;
    if (w >= 0) {
        *peak = pc->peak[w];
        *stage = pc->stage[w];
    } else {
        *peak = oc_memory_peak(&o->model, l, stage);
        w = pc->mem_next;
        pc->mem_next = (pc->mem_next + 1) % MEM_WAYS;
        pc->mem_n += pc->mem_n < MEM_WAYS;
        pc->mem_key[w] = k, pc->peak[w] = *peak, pc->stage[w] = *stage;
    }
    struct oc_reserve rs;
    oc_reserve_layout(&o->model, l, &o->topo, *peak, &rs);
    *reserve = rs.total_bytes;
    return oc_reserve_fits(&o->topo, *peak, rs.total_bytes);
}

/* Why a legal layout is not simulated: its closed-form peak and the
 * reserve (core/reserve.h) exceed the device. */
void oc_plan_oom_reason(char *buf, size_t n, const struct oc_opts *o, int64_t stage,
                        double peak, double reserve)
{
    char need[32], res[32], have[32];
    snprintf(buf, n, "out of memory: stage %lld needs %s per GPU + %s reserve, the %s has %s",
             (long long)stage, oc_fmt_si(need, sizeof need, peak, "B"),
             oc_fmt_si(res, sizeof res, reserve, "B"), o->topo.device.name,
             oc_fmt_si(have, sizeof have, o->topo.device.memory_bytes, "B"));
}

/* ---- dominated variants (sweep_plan.h) -------------------------------- */

/* Orders layouts by every knob but recompute, so that the recompute
 * variants of one layout are adjacent. */
static int cmp_but_recompute(const struct oc_layout *a, const struct oc_layout *b)
{
    return oc_layout_cmp_except(a, b, OC_LAYOUT_NAMED_RECOMPUTE);
}

static const struct oc_plan *dom_plan;

static int cmp_dom(const void *pa, const void *pb)
{
    const int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    const int c = cmp_but_recompute(&dom_plan->items[a].layout, &dom_plan->items[b].layout);
    return c ? c : (a < b ? -1 : a > b);
}

/* The recomputed layers of a full-recompute variant, for the order
 * "fewer recomputed layers": rfull<k> is k, plain full every layer. */
static int64_t rfull_k(const struct oc_layout *l)
{
    return l->recompute_layers > 0 ? l->recompute_layers : INT64_MAX;
}

/* Whether variant d is dominated by one of the group g[0..n) (pending:
 * fits by the closed form): a variant without recompute fits and d
 * recomputes; or d is a full recompute and one of fewer layers fits. */
static int dominated(const struct oc_plan *p, const int64_t *g, int64_t n,
                     const struct oc_layout *d)
{
    for (int64_t i = 0; i < n; i++) {
        const struct oc_layout *a = &p->items[g[i]].layout;
        if (a->recompute == OC_RECOMPUTE_NONE && d->recompute != OC_RECOMPUTE_NONE)
            return 1;
        if (a->recompute == OC_RECOMPUTE_FULL && d->recompute == OC_RECOMPUTE_FULL &&
            rfull_k(a) < rfull_k(d))
            return 1;
    }
    return 0;
}

/* The indices of the pending items (IT_PENDING) in plan order, malloc'd;
 * *k gets their count. */
static int64_t *pending_items(const struct oc_plan *p, int64_t *k)
{
    int64_t *v = oc_xcalloc((size_t)(p->n ? p->n : 1), sizeof *v);
    *k = 0;
    for (int64_t i = 0; i < p->n; i++)
        if (p->items[i].state == IT_PENDING)
            v[(*k)++] = i;
    return v;
}

/* Marks the dominated pending items (sweep_plan.h) and returns their
 * count. */
static int64_t mark_dominated(struct oc_plan *p)
{
    int64_t k;
    int64_t *v = pending_items(p, &k);
    /* The recompute variants of a layout share its structural knobs (tp,
     * cp, pp, dp, micro-batch, schedule), which the enumeration keeps
     * outside recompute (search.h): each run of items with the same
     * structural knobs holds whole groups, and is sorted alone. */
    dom_plan = p;
    for (int64_t a = 0; a < k;) {
        const struct oc_layout *x = &p->items[v[a]].layout;
        int64_t b = a + 1;
        for (; b < k; b++) {
            const struct oc_layout *y = &p->items[v[b]].layout;
            if (y->tp != x->tp || y->cp != x->cp || y->pp != x->pp || y->dp != x->dp ||
                y->micro_batch != x->micro_batch || y->schedule != x->schedule ||
                y->vchunks != x->vchunks)
                break;
        }
        qsort(v + a, (size_t)(b - a), sizeof *v, cmp_dom);
        a = b;
    }
    dom_plan = NULL;
    unsigned char *dom = oc_xcalloc((size_t)(k ? k : 1), 1);
    for (int64_t a = 0; a < k;) {
        int64_t b = a + 1;
        while (b < k && cmp_but_recompute(&p->items[v[a]].layout, &p->items[v[b]].layout) == 0)
            b++;
        for (int64_t i = a; i < b && b - a > 1; i++)
            dom[i] = (unsigned char)dominated(p, v + a, b - a, &p->items[v[i]].layout);
        a = b;
    }
    int64_t nd = 0;
    for (int64_t i = 0; i < k; i++)
        if (dom[i]) {
            p->items[v[i]].state = IT_DOMINATED;
            nd++;
        }
    free(dom);
    free(v);
    return nd;
}

/* A part of the plan while the search walks its units. */
struct build {
    struct oc_plan_part *pt;
    struct oc_plan *p; /* &pt->pl */
    const struct oc_opts *o;
    const struct oc_plan_rejected *rej;
    struct plan_cache *pc;
    int64_t cap;
};

/* An illegal candidate l, number cand (refused: the structural reason,
 * NULL: validate says why) as one of the first three examples and to the
 * hook. */
static void rejected_illegal(struct build *b, const struct oc_layout *l, int64_t cand,
                             const char *refused)
{
    const int example = b->p->counts.illegal < 3;
    b->p->counts.illegal++;
    if (!example && !b->rej)
        return;
    struct oc_status st = {{0}};
    if (!refused) {
        oc_layout_validate(l, &b->o->model, &b->o->topo, b->o->cards, &st);
        refused = st.msg;
    }
    if (example) {
        b->pt->ex_cand[b->p->nexamples] = cand;
        struct oc_rejected_layout *x = &b->p->examples[b->p->nexamples++];
        x->layout = *l;
        x->kind = OC_REJECT_RULE;
        x->peak_mem_bytes = -1;
        x->device_mem_bytes = b->o->topo.device.memory_bytes;
        snprintf(x->reason, sizeof x->reason, "%s", refused);
    }
    if (b->rej)
        b->rej->fn(b->rej->ctx, l, -1, refused);
}

/* An out-of-memory candidate l, number cand: among the closest misses
 * when its (peak, label) is below the worst kept. */
static void keep_miss(struct oc_plan_part *b, const struct oc_layout *l, int64_t cand,
                      double peak, int64_t stage, double reserve)
{
    if (b->nmiss == OC_PLAN_MISSES && peak > b->miss[b->nmiss - 1].peak_mem_bytes)
        return;
    char lab[192];
    oc_layout_format(l, lab, sizeof lab);
    int i = b->nmiss;
    while (i > 0 && (b->miss[i - 1].peak_mem_bytes > peak ||
                     (b->miss[i - 1].peak_mem_bytes == peak &&
                      strcmp(b->miss_label[i - 1], lab) > 0)))
        i--;
    if (i == OC_PLAN_MISSES)
        return;
    const int last = b->nmiss < OC_PLAN_MISSES ? b->nmiss++ : OC_PLAN_MISSES - 1;
    for (int j = last; j > i; j--) {
        b->miss[j].layout = b->miss[j - 1].layout;
        b->miss[j].peak_mem_bytes = b->miss[j - 1].peak_mem_bytes;
        memcpy(b->miss_label[j], b->miss_label[j - 1], sizeof b->miss_label[j]);
        b->miss_stage[j] = b->miss_stage[j - 1];
        b->miss_reserve[j] = b->miss_reserve[j - 1];
        b->miss_cand[j] = b->miss_cand[j - 1];
    }
    b->miss[i].layout = *l;
    b->miss[i].peak_mem_bytes = peak;
    memcpy(b->miss_label[i], lab, sizeof lab);
    b->miss_stage[i] = stage;
    b->miss_reserve[i] = reserve;
    b->miss_cand[i] = cand;
}

/* A set's unit, noted when it is the first of its unit. */
static void note_unit(struct oc_plan_part *pt, const struct oc_search_set *g)
{
    if (pt->nunits > 0 && pt->unit_id[pt->nunits - 1] == g->unit)
        return;
    if (pt->nunits == pt->unit_cap) {
        pt->unit_cap = pt->unit_cap ? 2 * pt->unit_cap : 256;
        pt->unit_id = oc_xrealloc(pt->unit_id, (size_t)pt->unit_cap * sizeof *pt->unit_id);
        pt->unit_first =
            oc_xrealloc(pt->unit_first, (size_t)pt->unit_cap * sizeof *pt->unit_first);
    }
    pt->unit_id[pt->nunits] = g->unit;
    pt->unit_first[pt->nunits++] = g->index;
}

/* The rejected candidate (io, ic, k) of set g, number cand: only what an
 * example or the hook needs. */
static void plan_rejected(struct build *b, const struct oc_search_set *g, int io, int ic, int k,
                          int64_t cand, int legal, double peak, int64_t stage, double reserve)
{
    struct oc_plan_part *pt = b->pt;
    if (legal && !b->rej && pt->nmiss == OC_PLAN_MISSES &&
        peak > pt->miss[OC_PLAN_MISSES - 1].peak_mem_bytes)
        return;
    if (!legal && !b->rej && b->p->counts.illegal >= 3) {
        b->p->counts.illegal++;
        return;
    }
    struct oc_layout v;
    oc_search_set_layout(g, io, ic, k, &v);
    if (!legal) {
        rejected_illegal(b, &v, cand, g->refused);
        return;
    }
    keep_miss(pt, &v, cand, peak, stage, reserve);
    if (b->rej) {
        char why[OC_MSG_MAX];
        oc_plan_oom_reason(why, sizeof why, b->o, stage, peak, reserve);
        b->rej->fn(b->rej->ctx, &v, peak, why);
    }
}

/* One knob set of the search (search.h): each split judged once (legal,
 * then fits), its rank-order and collective variants counted, or kept as
 * items (in candidate order) when they fit. */
static void plan_set(void *ctx, const struct oc_search_set *g)
{
    struct build *b = ctx;
    struct oc_plan *p = b->p;
    note_unit(b->pt, g);
    const int64_t nvar = (int64_t)g->norder * g->ncoll;
    int legal[OC_SEARCH_MAX_SPLIT], fits[OC_SEARCH_MAX_SPLIT], nfit = 0;
    double peak[OC_SEARCH_MAX_SPLIT], reserve[OC_SEARCH_MAX_SPLIT];
    int64_t stage[OC_SEARCH_MAX_SPLIT];
    for (int k = 0; k < g->nsplit; k++) {
        struct oc_layout l;
        oc_search_set_layout(g, 0, 0, k, &l);
        legal[k] = !g->refused &&
                   oc_layout_validate(&l, &b->o->model, &b->o->topo, b->o->cards, NULL) == 0;
        peak[k] = -1, reserve[k] = 0, stage[k] = 0;
        fits[k] = legal[k] && closed_form_fits(b->pc, b->o, &l, &peak[k], &stage[k], &reserve[k]);
        nfit += fits[k];
        p->noom += legal[k] && !fits[k] ? nvar : 0;
    }
    if (p->n + nvar * nfit > b->cap) {
        b->cap = b->cap ? 2 * b->cap : 4096;
        while (b->cap < p->n + nvar * nfit)
            b->cap *= 2;
        p->items = oc_xrealloc(p->items, (size_t)b->cap * sizeof *p->items);
    }
    for (int io = 0; io < g->norder; io++)
        for (int ic = 0; ic < g->ncoll; ic++)
            for (int k = 0; k < g->nsplit; k++) {
                const int64_t cand = g->index + ((int64_t)io * g->ncoll + ic) * g->nsplit + k;
                if (!fits[k]) {
                    plan_rejected(b, g, io, ic, k, cand, legal[k], peak[k], stage[k],
                                  reserve[k]);
                    continue;
                }
                struct item *it = &p->items[p->n++];
                memset(it, 0, sizeof *it);
                oc_search_set_layout(g, io, ic, k, &it->layout);
                it->cand = cand;
                it->state = IT_PENDING;
                it->cf_peak_bytes = peak[k];
                it->bound_s = -1;
            }
}

/* The bounds of the pending items; the dominated ones dropped (to the
 * hook). */
static void plan_bounds(struct oc_plan *p, const struct oc_opts *o, struct plan_cache *pc,
                        const struct oc_plan_rejected *rej)
{
    int64_t kept = 0;
    for (int64_t i = 0; i < p->n; i++) {
        struct item *it = &p->items[i];
        if (it->state == IT_DOMINATED) {
            if (rej)
                rej->fn(rej->ctx, &it->layout, it->cf_peak_bytes,
                        "dominated: a variant with less recompute fits");
            continue;
        }
        struct oc_layout ck = cost_key(&it->layout);
        if (!pc->cost_ok || memcmp(&ck, &pc->cost_key, sizeof ck) != 0) {
            oc_cost_init(&pc->cost, &o->model, &it->layout, &o->topo);
            pc->cost_key = ck, pc->cost_ok = 1;
        }
        /* (no two items share a layout: the bound of each is its own; the
         * critical path's walk is what its knob variants share,
         * core/bound_walk.h) */
        struct oc_bound bd;
        oc_bound_step_cost(&o->model, &it->layout, &o->topo, &pc->cost, &bd);
        it->bound_s = bd.step_s;
        if (o->topo.n_groups > 1) /* each rank's device (bound_groups.h) */
            it->bound_s = fmax(it->bound_s, oc_bound_groups_s(&o->model, &it->layout, &o->topo));
        p->items[kept++] = *it;
    }
    p->n = kept;
    p->items = oc_xrealloc(p->items, (size_t)(kept ? kept : 1) * sizeof *p->items);
}

void oc_plan_part_build(struct oc_plan_part *pt, const struct oc_opts *o,
                        const struct oc_search_space *s, const struct oc_plan_rejected *rej,
                        int part, int nparts)
{
    memset(pt, 0, sizeof *pt);
    struct oc_plan *p = &pt->pl;
    p->examples = oc_xcalloc(3, sizeof *p->examples);
    struct build b = {.pt = pt, .p = p, .o = o, .rej = rej};
    b.pc = oc_xcalloc(1, sizeof *b.pc);
    struct oc_search_counts n;
    p->ncand = oc_search_run_part(s, &o->model, &o->topo, plan_set, &b, &n, part, nparts);
    n.illegal = p->counts.illegal; /* counted by plan_set */
    p->counts = n;
    p->ndominated = o->keep_dominated ? 0 : mark_dominated(p);
    plan_bounds(p, o, b.pc, rej);
    free(b.pc);
}

void oc_plan_part_free(struct oc_plan_part *pt)
{
    oc_plan_free(&pt->pl);
    free(pt->unit_id);
    free(pt->unit_first);
    memset(pt, 0, sizeof *pt);
}

void oc_plan_build(struct oc_plan *p, const struct oc_opts *o, const struct oc_search_space *s,
                   const struct oc_plan_rejected *rej)
{
    /* the hook's calls come in candidate order: one part */
    const int n = rej ? 1 : oc_plan_jobs(o);
    struct oc_plan_part *parts = oc_xcalloc((size_t)n, sizeof *parts);
    if (n == 1)
        oc_plan_part_build(&parts[0], o, s, rej, 0, 1);
    else
        oc_plan_parts_forked(parts, n, o, s);
    oc_plan_merge(p, parts, n, o, s);
    p->parts = n;
    for (int i = 0; i < n; i++)
        oc_plan_part_free(&parts[i]);
    free(parts);
}

struct item *oc_plan_item(const struct oc_plan *p, int64_t cand)
{
    int64_t lo = 0, hi = p->n;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (p->items[mid].cand < cand)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->n && p->items[lo].cand == cand ? &p->items[lo] : NULL;
}

void oc_plan_free(struct oc_plan *p)
{
    for (int64_t i = 0; i < p->n; i++) {
        free(p->items[i].mt);
        free(p->items[i].reason);
    }
    free(p->items);
    free(p->examples);
    p->items = NULL;
    p->examples = NULL;
    p->n = p->nexamples = 0;
}

/* Seconds per token: what the ranking compares (tokens/s), as a bound or
 * a result. */
static double per_token(const struct oc_layout *l, double step_s)
{
    return step_s / ((double)l->global_batch * (double)l->seq_length);
}

static const struct oc_plan *sort_plan;

static int cmp_bound(const void *pa, const void *pb)
{
    const struct item *a = &sort_plan->items[*(const int64_t *)pa];
    const struct item *b = &sort_plan->items[*(const int64_t *)pb];
    double ka = per_token(&a->layout, a->bound_s), kb = per_token(&b->layout, b->bound_s);
    if (ka != kb)
        return ka < kb ? -1 : 1;
    return a->cand < b->cand ? -1 : a->cand > b->cand;
}

int64_t *oc_plan_order(const struct oc_plan *p, int64_t *n)
{
    int64_t k;
    int64_t *v = pending_items(p, &k);
    sort_plan = p;
    qsort(v, (size_t)k, sizeof *v, cmp_bound);
    sort_plan = NULL;
    *n = k;
    return v;
}

void oc_prune_init(struct oc_prune *pr, int64_t top)
{
    pr->top = top > 0 ? top : 1;
    pr->best = oc_xcalloc((size_t)pr->top, sizeof *pr->best);
    pr->best_step = oc_xcalloc((size_t)pr->top, sizeof *pr->best_step);
    pr->n = 0;
}

void oc_prune_free(struct oc_prune *pr)
{
    free(pr->best);
    free(pr->best_step);
}

void oc_prune_add(struct oc_prune *pr, const struct oc_metrics *mt)
{
    if (!mt->fits || !(mt->step_time_s > 0) || !isfinite(mt->step_time_s))
        return;
    const double k = per_token(&mt->layout, mt->step_time_s);
    if (pr->n == pr->top && k >= pr->best[pr->n - 1])
        return;
    int64_t i = pr->n < pr->top ? pr->n++ : pr->n - 1;
    while (i > 0 && pr->best[i - 1] > k) {
        pr->best[i] = pr->best[i - 1];
        pr->best_step[i] = pr->best_step[i - 1];
        i--;
    }
    pr->best[i] = k;
    pr->best_step[i] = mt->step_time_s;
}

int oc_prune_stops(const struct oc_prune *pr, const struct item *it)
{
    return pr->n == pr->top && per_token(&it->layout, it->bound_s) > pr->best[pr->n - 1];
}

void oc_prune_mark(const struct oc_prune *pr, struct item *it)
{
    it->state = IT_PRUNED;
}

void oc_prune_reason(const struct oc_prune *pr, const struct item *it, char *buf, size_t n)
{
    const int64_t N = pr->top;
    const char *sfx = N % 10 == 1 && N % 100 != 11   ? "st"
                      : N % 10 == 2 && N % 100 != 12 ? "nd"
                      : N % 10 == 3 && N % 100 != 13 ? "rd"
                                                     : "th";
    snprintf(buf, n, "pruned: bound %.6g s > %lld%s best %.6g s", it->bound_s, (long long)N,
             sfx, pr->n ? pr->best_step[pr->n - 1] : 0.0);
}
