/* sweep_twins.c: see sweep_twins.h. */
#include "sweep_twins.h"

#include <stdlib.h>
#include <string.h>

#include "status.h"

/* Every field but the collective algorithm. */
static int cmp_but_coll(const struct oc_layout *a, const struct oc_layout *b)
{
    return oc_layout_cmp_except(a, b, OC_LAYOUT_NAMED_COLL);
}

static const struct item *sort_items;
static const int64_t *sort_order;

/* By layout but coll, then auto first, then sweep index. */
static int cmp_idx(const void *pa, const void *pb)
{
    const int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    const struct oc_layout *la = &sort_items[sort_order[a]].layout;
    const struct oc_layout *lb = &sort_items[sort_order[b]].layout;
    const int c = cmp_but_coll(la, lb);
    if (c)
        return c;
    const int aa = la->coll != OC_COLL_CHOICE_AUTO, ab = lb->coll != OC_COLL_CHOICE_AUTO;
    if (aa != ab)
        return aa - ab;
    return a < b ? -1 : a > b;
}

void oc_twins_init(struct oc_twins *tw, const struct item *items, const int64_t *order,
                   int64_t k)
{
    memset(tw, 0, sizeof *tw);
    const size_t n = (size_t)(k > 0 ? k : 1);
    tw->n = k;
    tw->sib = oc_xmalloc(n * sizeof *tw->sib);
    tw->st = oc_xcalloc(n, 1);
    tw->same = oc_xcalloc(n, sizeof *tw->same);
    tw->coll = oc_xmalloc(n * sizeof *tw->coll);
    tw->first = oc_xmalloc(n * sizeof *tw->first);
    tw->next = oc_xmalloc(n * sizeof *tw->next);
    int64_t *v = oc_xmalloc(n * sizeof *v);
    for (int64_t j = 0; j < k; j++) {
        v[j] = j;
        tw->sib[j] = tw->first[j] = tw->next[j] = -1;
        tw->coll[j] = items[order[j]].layout.coll;
    }
    sort_items = items, sort_order = order;
    qsort(v, (size_t)k, sizeof *v, cmp_idx);
    sort_items = NULL, sort_order = NULL;
    for (int64_t a = 0; a < k;) {
        int64_t b = a + 1;
        while (b < k && cmp_but_coll(&items[order[v[a]]].layout, &items[order[v[b]]].layout) == 0)
            b++;
        if (tw->coll[v[a]] == OC_COLL_CHOICE_AUTO)
            for (int64_t i = b - 1; i > a; i--) {
                tw->sib[v[i]] = v[a];
                tw->next[v[i]] = tw->first[v[a]];
                tw->first[v[a]] = v[i];
            }
        a = b;
    }
    free(v);
}

enum oc_twin_answer oc_twins_ask(struct oc_twins *tw, int64_t j)
{
    const int64_t s = tw->sib[j];
    if (tw->st[j] == 4)
        tw->nwait--;
    if (s >= 0 && tw->st[s] == 1) {
        tw->st[j] = 4;
        tw->nwait++;
        return OC_TWIN_WAIT;
    }
    if (s >= 0 && tw->st[s] == 2 && (tw->same[s] >> tw->coll[j] & 1u)) {
        tw->st[j] = 2;
        tw->same[j] = 0;
        return OC_TWIN_SHARE;
    }
    tw->st[j] = 1;
    return OC_TWIN_RUN;
}

int64_t oc_twins_source(const struct oc_twins *tw, int64_t j)
{
    return tw->sib[j];
}

void oc_twins_done(struct oc_twins *tw, int64_t j, const struct oc_metrics *mt)
{
    tw->st[j] = mt ? 2 : 3;
    tw->same[j] = mt ? mt->coll_same : 0;
}

int64_t oc_twins_next(const struct oc_twins *tw, int64_t j, int64_t w)
{
    return w < 0 ? tw->first[j] : tw->next[w];
}

int oc_twins_waiting(const struct oc_twins *tw, int64_t w)
{
    return tw->st[w] == 4;
}

int64_t oc_twins_nwaiting(const struct oc_twins *tw)
{
    return tw->nwait;
}

void oc_twins_free(struct oc_twins *tw)
{
    free(tw->sib);
    free(tw->st);
    free(tw->same);
    free(tw->coll);
    free(tw->first);
    free(tw->next);
    memset(tw, 0, sizeof *tw);
}
