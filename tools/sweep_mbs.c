/* sweep_mbs.c: unequal micro-batch counts per DP replica in a sweep on
 * node groups (core/mbsplit.h, sweep_mbs.h).
 *
 * The knob is searched after the sweep's passes rather than inside
 * core/search.c's product: its speed value is one layout per candidate
 * (the split follows from the candidate's other knobs and the devices),
 * it can only help a layout whose replicas run on unlike devices, and the
 * unequal split turns off the symmetric fidelity and the steady-state
 * fold (each such simulation replays every micro-batch of every
 * replica). So the speed variants of the OC_MBS_TOP fastest fitting
 * layouts are simulated, added to the ranked items (sweep.csv, the
 * table, report.md) as layouts of their own, and each is compared with
 * its even original: "speed-weighted micro-batches: 1.19x over even".
 *
 * What it is not: a search of every candidate's speed split (a layout
 * outside the top ones whose speed split would beat them is missed), nor
 * of lists other than the speed split.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bound.h"
#include "bound_groups.h"
#include "mbsplit.h"
#include "sweep_mbs.h"

#define OC_MBS_TOP OC_SWEEP_MBS_TOP

struct pass {
    struct oc_metrics *mt; /* per speed variant, or NULL */
};

static void done(void *ctx, int64_t index, const struct oc_metrics *mt, const char *err)
{
    (void)err;
    struct pass *p = ctx;
    if (mt) {
        p[index].mt = oc_xmalloc(sizeof *mt);
        *p[index].mt = *mt;
    }
}

static int cmp_step(const void *a, const void *b)
{
    const struct item *x = *(const struct item *const *)a, *y = *(const struct item *const *)b;
    const double s = x->mt->step_time_s, t = y->mt->step_time_s;
    return s < t ? -1 : s > t;
}

/* The fitting simulated items, fastest first, at most OC_MBS_TOP with a
 * speed split of their own into lay[] (and their items' indices into
 * src[]). */
static int pick(const struct run *r, const struct oc_opts *o, int64_t *src,
                struct oc_layout *lay)
{
    struct item **fit = oc_xcalloc((size_t)(r->n ? r->n : 1), sizeof *fit);
    int64_t nf = 0;
    for (int64_t i = 0; i < r->n; i++)
        if (r->items[i].state == IT_SIMULATED && r->items[i].mt->fits &&
            !oc_mbs_on(&r->items[i].layout))
            fit[nf++] = &r->items[i];
    qsort(fit, (size_t)nf, sizeof *fit, cmp_step);
    int n = 0;
    for (int64_t i = 0; i < nf && n < OC_MBS_TOP; i++) {
        struct oc_layout l = fit[i]->layout;
        struct oc_status st = {{0}};
        if (oc_mbs_speed(&l, &o->model, &o->topo, &st) != 0 || !oc_mbs_on(&l) ||
            oc_layout_validate(&l, &o->model, &o->topo, o->cards, &st) != 0)
            continue; /* replicas alike, or no legal split: nothing to try */
        src[n] = fit[i] - r->items;
        lay[n++] = l;
    }
    free(fit);
    return n;
}

/* Item of a simulated speed variant, after src's. */
static void add_item(struct run *r, const struct oc_opts *o, const struct item *src,
                     const struct oc_layout *l, struct oc_metrics *mt)
{
    r->items = r->plan.items = oc_xrealloc(r->items, (size_t)(r->n + 1) * sizeof *r->items);
    struct item *it = &r->items[r->n++];
    r->plan.n = r->n;
    memset(it, 0, sizeof *it);
    it->layout = *l;
    it->cand = src->cand;
    it->state = IT_SIMULATED;
    it->cf_peak_bytes = src->cf_peak_bytes;
    struct oc_bound bd;
    oc_bound_step(&o->model, l, &o->topo, &bd);
    it->bound_s = fmax(bd.step_s, oc_bound_groups_s(&o->model, l, &o->topo));
    it->mt = mt;
    oc_sweep_item_row(r, &r->csv, it, NULL);
}

int oc_sweep_mbs_pass(struct run *r, const struct oc_opts *o, const struct oc_sweep_opts *so,
                      struct oc_sweep_mbs *out, struct oc_status *st)
{
    memset(out, 0, sizeof *out);
    if (o->topo.n_groups < 2 || (o->mbsplit && strcmp(o->mbsplit, "even") == 0))
        return 0;
    int64_t src[OC_MBS_TOP];
    struct oc_layout lay[OC_MBS_TOP];
    const int n = pick(r, o, src, lay);
    if (n == 0)
        return 0;
    struct pass p[OC_MBS_TOP] = {{0}};
    struct oc_sweep_opts s = *so;
    s.on_done = done;
    s.more = NULL;
    s.ctx = p;
    const int rc = oc_sweep_run(lay, n, &o->model, &o->topo, &s, st);
    for (int i = 0; i < n; i++) {
        /* by index: add_item moves the items */
        const struct item it = r->items[src[i]];
        if (!p[i].mt)
            continue;
        struct oc_sweep_mbs_pair *q = &out->pair[out->n++];
        q->even = it.layout;
        q->speed = lay[i];
        q->even_s = it.mt->step_time_s;
        q->speed_s = p[i].mt->step_time_s;
        q->speed_fits = p[i].mt->fits;
        add_item(r, o, &it, &lay[i], p[i].mt);
    }
    return rc;
}

/* The line: the chosen layout's speed split against its even original,
 * or the best pair's when the chosen layout runs the even split. */
static int line(const struct oc_sweep_mbs *m, const struct oc_metrics *chosen, char *buf,
                size_t n)
{
    const struct oc_sweep_mbs_pair *q = NULL;
    for (int i = 0; i < m->n && !q; i++)
        if (oc_layout_cmp_except(&m->pair[i].speed, &chosen->layout, 0) == 0 ||
            oc_layout_cmp_except(&m->pair[i].even, &chosen->layout, 0) == 0)
            q = &m->pair[i];
    for (int i = 0; i < m->n && !q; i++)
        if (!q || m->pair[i].speed_s < q->speed_s)
            q = &m->pair[i];
    if (!q)
        return 0;
    char e[192], s[192], counts[96];
    oc_layout_format(&q->even, e, sizeof e);
    oc_layout_format(&q->speed, s, sizeof s);
    oc_mbs_format(&q->speed, counts, sizeof counts);
    snprintf(buf, n,
             "speed-weighted micro-batches: %.2fx over even (%s: %.4g s a step with "
             "micro-batches %s over its DP replicas, against %.4g s for %s, every replica "
             "%lld)%s",
             q->even_s / q->speed_s, s, q->speed_s, counts, q->even_s, e,
             (long long)oc_layout_num_micro_batches(&q->even),
             oc_mbs_on(&chosen->layout) ? "; the chosen layout runs the speed split"
                                        : "; the chosen layout runs the even split");
    return 1;
}

static void write_csv(const struct oc_sweep_mbs *m, const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/mbsplit.csv", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "ocsim sweep: warning: %s: cannot write\n", path);
        return;
    }
    fprintf(f, "layout_even,layout_speed,micro_batches_per_replica,step_even_s,"
               "step_speed_s,gain,speed_fits\n");
    for (int i = 0; i < m->n; i++) {
        const struct oc_sweep_mbs_pair *q = &m->pair[i];
        char e[192], s[192], c[96];
        oc_layout_format(&q->even, e, sizeof e);
        oc_layout_format(&q->speed, s, sizeof s);
        oc_mbs_format(&q->speed, c, sizeof c);
        fprintf(f, "%s,%s,%s,%.9g,%.9g,%.6f,%d\n", e, s, c, q->even_s, q->speed_s,
                q->even_s / q->speed_s, q->speed_fits);
    }
    if (fclose(f) != 0)
        fprintf(stderr, "ocsim sweep: warning: %s: cannot write\n", path);
}

void oc_sweep_mbs_report(const struct oc_sweep_mbs *m, const struct oc_metrics *chosen,
                         const char *dir)
{
    char text[1024];
    if (!chosen || !line(m, chosen, text, sizeof text))
        return;
    printf("%s\n", text);
    if (!dir)
        return;
    write_csv(m, dir);
    char path[4096];
    snprintf(path, sizeof path, "%s/report.md", dir);
    FILE *f = fopen(path, "a");
    if (!f)
        return;
    fprintf(f, "\n## Micro-batches per DP replica\n\n%s. Each of the %d fastest fitting "
               "layouts with replicas on unlike devices was simulated again with each "
               "replica's micro-batches in proportion to its speed (mbsplit.csv).\n",
            text, m->n);
    if (fclose(f) != 0)
        fprintf(stderr, "ocsim sweep: warning: %s: cannot append\n", path);
}
