/* bound_walk.c: the bound's unit walk and its cache (see bound_walk.h). */
#include "bound_walk.h"

#include <stdlib.h>
#include <string.h>

#include "placement.h"
#include "schedule.h"
#include "status.h"

static double dmax(double a, double b) { return a > b ? a : b; }

/* The stages' unit orders (oc_schedule_stage_order) of the last layout
 * asked, kept for the next: they read the schedule, p, v and m alone, and
 * a sweep bounds the knob variants of one (p, v, m, schedule) one after
 * the other. One entry, this process's (the sweep plans in one thread);
 * still reachable at exit, not a leak. */
static struct {
    enum oc_schedule_kind sched;
    int64_t p, v, m;
    struct oc_unit **ord;
    int64_t *cnt;
} orders;

static void stage_orders(const struct oc_layout *l, int64_t nm, struct oc_unit ***ord,
                         int64_t **cnt)
{
    const int64_t p = l->pp, v = oc_place_interleaved_chunks(l);
    if (!orders.ord || orders.sched != l->schedule || orders.p != p || orders.v != v ||
        orders.m != nm) {
        for (int64_t i = 0; orders.ord && i < orders.p; i++)
            free(orders.ord[i]);
        free(orders.ord);
        free(orders.cnt);
        orders.sched = l->schedule, orders.p = p, orders.v = v, orders.m = nm;
        orders.ord = oc_xcalloc((size_t)p, sizeof *orders.ord);
        orders.cnt = oc_xcalloc((size_t)p, sizeof *orders.cnt);
        for (int64_t i = 0; i < p; i++)
            orders.cnt[i] = oc_schedule_stage_order(l, nm, i, &orders.ord[i]);
    }
    *ord = orders.ord;
    *cnt = orders.cnt;
}

/* A walk done: its inputs (the key) and results. The knob variants of one
 * layout that share a walk are at most a few dozen candidates apart in the
 * enumeration (search.h: ZeRO and overlap outside the rank order,
 * collective and splits), with a few distinct walks between. */
#define WALK_WAYS 64
struct entry {
    int used, ok;
    enum oc_schedule_kind sched;
    int64_t p, v, nm;
    uint64_t hash;
    size_t cap;  /* doubles allocated in key (4G + 1) and res (2p + 2G) */
    double *key; /* f[G], b[G], hop[G-1], layers[G], layer_b, rs */
    double *res; /* clk[p], bend[G], bstart[G], zend[p] */
};

static struct {
    struct entry e[WALK_WAYS];
    int next;
    /* the walk's scratch: the end of every unit, forward and backward */
    double *fe, *be;
    int64_t *pos;
    size_t cap_units, cap_pos;
} cache;

static uint64_t hash_key(const double *x, size_t n)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a over the doubles' bits */
    for (size_t i = 0; i < n; i++) {
        uint64_t u;
        memcpy(&u, &x[i], sizeof u);
        h = (h ^ u) * 1099511628211ULL;
    }
    return h;
}

/* The walk of path_bound_s (bound.c says what each step charges) into e's
 * results. */
static int walk(const struct oc_layout *l, int64_t nm, const double *f, const double *b,
                const double *hop, const double *zk, struct entry *e)
{
    const int64_t p = l->pp, G = p * oc_place_chunks_per_stage(l);
    double *clk = e->res, *bend = e->res + p, *bstart = e->res + p + G;
    double *zend = e->res + p + 2 * G;
    /* the ZeRO stream (zk: layers[G], layer_b, rs; the key's tail) */
    const double layer_b = zk[G], rs = zk[G + 1];
    if ((size_t)(nm * G) > cache.cap_units) {
        cache.cap_units = (size_t)(nm * G);
        free(cache.fe);
        free(cache.be);
        cache.fe = oc_xmalloc(cache.cap_units * sizeof *cache.fe);
        cache.be = oc_xmalloc(cache.cap_units * sizeof *cache.be);
    }
    if ((size_t)p > cache.cap_pos) {
        cache.cap_pos = (size_t)p;
        free(cache.pos);
        cache.pos = oc_xmalloc(cache.cap_pos * sizeof *cache.pos);
    }
    double *fe = cache.fe, *be = cache.be;
    int64_t *pos = cache.pos;
    for (int64_t i = 0; i < p; i++)
        clk[i] = 0, pos[i] = 0, zend[i] = 0;
    for (int64_t g = 0; g < G; g++)
        bend[g] = bstart[g] = 0;
    for (int64_t k = 0; k < nm * G; k++)
        fe[k] = be[k] = -1;
    struct oc_unit **ord;
    int64_t *cnt;
    stage_orders(l, nm, &ord, &cnt);
    int64_t left = 0;
    for (int64_t i = 0; i < p; i++)
        left += cnt[i];
    for (int progress = 1; left > 0 && progress;) {
        progress = 0;
        for (int64_t i = 0; i < p; i++) {
            while (pos[i] < cnt[i]) {
                const struct oc_unit u = ord[i][pos[i]];
                const int64_t g = (int64_t)u.chunk * p + i, k = (int64_t)u.mb * G + g;
                /* the producer's end, and the message's time */
                double ready, h = 0;
                if (!u.backward) {
                    ready = g == 0 ? 0 : fe[k - 1];
                    h = g == 0 ? 0 : hop[g - 1];
                } else if (g == G - 1) {
                    ready = fe[k];
                } else {
                    ready = be[k + 1];
                    h = hop[g];
                }
                if (ready < 0)
                    break;
                /* the transfer starts once both ends are there: the send
                 * at the producer's end, the RECV when this stage reaches
                 * it, after its previous unit (schedule.c: RECV, work,
                 * SEND per unit; SimGrid's mailboxes meet both ends) */
                const double start = dmax(clk[i], ready) + h;
                clk[i] = start + (u.backward ? b[g] : f[g]);
                if (u.backward) {
                    be[k] = clk[i];
                    bend[g] = clk[i];
                    bstart[g] = start;
                    for (int64_t q = 0; rs > 0 && q < (int64_t)zk[g]; q++)
                        zend[i] = dmax(zend[i], start + (double)(q + 1) * layer_b) + rs;
                } else {
                    fe[k] = clk[i];
                }
                pos[i]++;
                left--;
                progress = 1;
            }
        }
    }
    return left == 0;
}

int oc_bound_walk_run(const struct oc_layout *l, int64_t nm, const double *f, const double *b,
                      const double *hop, const struct oc_bound_zstream *zs,
                      struct oc_bound_walk *out)
{
    const int64_t p = l->pp, v = oc_place_chunks_per_stage(l), G = p * v;
    const size_t nk = (size_t)(4 * G + 1);
    /* the key in one array: hashed and compared whole */
    static double *key;
    static size_t key_cap;
    if (nk > key_cap) {
        key_cap = nk;
        free(key);
        key = oc_xmalloc(key_cap * sizeof *key);
    }
    memcpy(key, f, (size_t)G * sizeof *key);
    memcpy(key + G, b, (size_t)G * sizeof *key);
    memcpy(key + 2 * G, hop, (size_t)(G - 1) * sizeof *key);
    double *zk = key + 3 * G - 1;
    for (int64_t g = 0; g < G; g++)
        zk[g] = zs && zs->rs > 0 ? zs->layers[g] : 0;
    zk[G] = zs && zs->rs > 0 ? zs->layer_b : 0;
    zk[G + 1] = zs && zs->rs > 0 ? zs->rs : 0;
    const uint64_t h = hash_key(key, nk);
    struct entry *e = NULL;
    for (int i = 0; i < WALK_WAYS && !e; i++) {
        struct entry *c = &cache.e[i];
        if (c->used && c->hash == h && c->sched == l->schedule && c->p == p && c->v == v &&
            c->nm == nm && memcmp(c->key, key, nk * sizeof *key) == 0)
            e = c;
    }
    if (!e) {
        e = &cache.e[cache.next];
        cache.next = (cache.next + 1) % WALK_WAYS;
        const size_t need = (size_t)(4 * G + 1) > (size_t)(2 * p + 2 * G)
                                ? (size_t)(4 * G + 1)
                                : (size_t)(2 * p + 2 * G);
        if (need > e->cap) {
            e->cap = need;
            free(e->key);
            free(e->res);
            e->key = oc_xmalloc(need * sizeof *e->key);
            e->res = oc_xmalloc(need * sizeof *e->res);
        }
        e->used = 0; /* until the walk is in */
        e->ok = walk(l, nm, f, b, hop, zk, e);
        memcpy(e->key, key, nk * sizeof *key);
        e->sched = l->schedule, e->p = p, e->v = v, e->nm = nm, e->hash = h;
        e->used = 1;
    }
    if (!e->ok)
        return 0;
    out->clk = e->res;
    out->bend = e->res + p;
    out->bstart = e->res + p + G;
    out->zend = e->res + p + 2 * G;
    return 1;
}
