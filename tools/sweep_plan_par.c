/* sweep_plan_par.c: the sweep's plan on several cores (sweep_plan_part.h):
 * the parts' worker processes, and the merge of the parts into the plan
 * the serial walk makes. Processes, not threads: the closed forms keep
 * caches in static storage (core/memory.c, core/bound_walk.c), and a
 * forked part needs nothing of the others until it hands its result
 * back, through an unlinked temporary file. */
#define _POSIX_C_SOURCE 200809L
#include "sweep_plan_part.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sweep_journal.h"
#include "sweep_mpi.h"

#define MAX_PARTS 64

int oc_plan_jobs(const struct oc_opts *o)
{
    const long cores = oc_sweep_mpi_cores(); /* what this process may run on */
    long n = o->jobs > 0 && o->jobs < cores ? (long)o->jobs : cores;
    const char *e = getenv("OCSIM_PLAN_JOBS");
    if (e && *e) {
        char *end = NULL;
        errno = 0;
        const long v = strtol(e, &end, 10);
        if (errno || *end || v < 1)
            fprintf(stderr, "ocsim sweep: warning: OCSIM_PLAN_JOBS='%.32s' is not a "
                            "positive count: ignored\n", e);
        else
            n = v;
    }
    return n > MAX_PARTS ? MAX_PARTS : (int)n;
}

/* ---- a part through a file ------------------------------------------- */

static int put(FILE *f, const void *p, size_t size, int64_t n)
{
    return n <= 0 || fwrite(p, size, (size_t)n, f) == (size_t)n ? 0 : -1;
}

static int get(FILE *f, void **p, size_t size, int64_t n)
{
    *p = oc_xmalloc(size * (size_t)(n > 0 ? n : 1));
    return n <= 0 || fread(*p, size, (size_t)n, f) == (size_t)n ? 0 : -1;
}

/* The part as it is (its pointers meaningless to the reader), then its
 * arrays. Items carry no reason nor metrics yet (NULL). */
static int part_write(FILE *f, const struct oc_plan_part *pt)
{
    const struct oc_plan *p = &pt->pl;
    if (put(f, pt, sizeof *pt, 1) || put(f, p->items, sizeof *p->items, p->n) ||
        put(f, p->examples, sizeof *p->examples, 3) || put(f, pt->unit_id, sizeof *pt->unit_id, pt->nunits) ||
        put(f, pt->unit_first, sizeof *pt->unit_first, pt->nunits))
        return -1;
    return fflush(f) == 0 ? 0 : -1;
}

static int part_read(FILE *f, struct oc_plan_part *pt)
{
    memset(pt, 0, sizeof *pt);
    if (fread(pt, sizeof *pt, 1, f) != 1) {
        memset(pt, 0, sizeof *pt);
        return -1;
    }
    struct oc_plan *p = &pt->pl;
    p->items = NULL, p->examples = NULL, pt->unit_id = pt->unit_first = NULL;
    int rc = 0;
    rc |= get(f, (void **)&p->items, sizeof *p->items, p->n);
    rc |= get(f, (void **)&p->examples, sizeof *p->examples, 3);
    rc |= get(f, (void **)&pt->unit_id, sizeof *pt->unit_id, pt->nunits);
    rc |= get(f, (void **)&pt->unit_first, sizeof *pt->unit_first, pt->nunits);
    pt->unit_cap = pt->nunits;
    return rc;
}

/* Part w of n built in a child, which writes it into f and exits 0 (1
 * when the write failed): the child's id, or -1 when there is none (the
 * caller then builds the part itself). */
static pid_t part_fork(FILE *f, int w, int n, const struct oc_opts *o,
                       const struct oc_search_space *s)
{
    const pid_t pid = fork();
    if (pid != 0)
        return pid;
    struct oc_plan_part pt;
    oc_plan_part_build(&pt, o, s, NULL, w, n);
    _exit(part_write(f, &pt) == 0 ? 0 : 1);
}

void oc_plan_parts_forked(struct oc_plan_part *parts, int n, const struct oc_opts *o,
                          const struct oc_search_space *s)
{
    OC_ASSERT(n >= 1 && n <= MAX_PARTS);
    FILE *f[MAX_PARTS] = {0};
    pid_t pid[MAX_PARTS] = {0};
    fflush(NULL); /* nothing buffered twice */
    for (int w = 1; w < n; w++) {
        f[w] = tmpfile();
        pid[w] = f[w] ? part_fork(f[w], w, n, o, s) : -1;
    }
    oc_plan_part_build(&parts[0], o, s, NULL, 0, n);
    for (int w = 1; w < n; w++) {
        int status = 0, ok = pid[w] > 0;
        while (ok && waitpid(pid[w], &status, 0) < 0)
            ok = errno == EINTR;
        ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (ok && (fseek(f[w], 0, SEEK_SET) != 0 || part_read(f[w], &parts[w]) != 0)) {
            oc_plan_part_free(&parts[w]);
            ok = 0;
        }
        if (!ok) /* no child, or it failed: the same part here */
            oc_plan_part_build(&parts[w], o, s, NULL, w, n);
        if (f[w])
            fclose(f[w]);
    }
}

/* ---- the merge ---------------------------------------------------------- */

/* The part whose next unit (cu[w]: each part's next) comes first in the
 * walk, -1 when none is left. */
static int next_unit(const struct oc_plan_part *parts, int n, const int64_t *cu)
{
    int best = -1;
    for (int w = 0; w < n; w++)
        if (cu[w] < parts[w].nunits &&
            (best < 0 || parts[w].unit_id[cu[w]] < parts[best].unit_id[cu[best]]))
            best = w;
    return best;
}

/* The end of unit k of part pt in its numbering. */
static int64_t unit_end(const struct oc_plan_part *pt, int64_t k)
{
    return k + 1 < pt->nunits ? pt->unit_first[k + 1] : pt->pl.ncand;
}

/* The units' first candidates in the serial numbering: first[w][k] for
 * unit k of part w, malloc'd; *ncand gets the candidates of all. */
static int64_t **global_firsts(const struct oc_plan_part *parts, int n, int64_t *ncand)
{
    int64_t **first = oc_xcalloc((size_t)n, sizeof *first);
    int64_t cu[MAX_PARTS] = {0};
    for (int w = 0; w < n; w++)
        first[w] = oc_xcalloc((size_t)(parts[w].nunits ? parts[w].nunits : 1), sizeof **first);
    int64_t at = 0;
    for (int w; (w = next_unit(parts, n, cu)) >= 0;) {
        const int64_t k = cu[w]++;
        first[w][k] = at;
        at += unit_end(&parts[w], k) - parts[w].unit_first[k];
    }
    *ncand = at;
    return first;
}

/* The parts' items in the walk's order (by unit, then as each part has
 * them), numbered as the serial walk numbers them. */
static void merge_items(struct oc_plan *p, const struct oc_plan_part *parts, int n,
                        int64_t **first)
{
    int64_t total = 0, cu[MAX_PARTS] = {0}, ci[MAX_PARTS] = {0};
    for (int w = 0; w < n; w++)
        total += parts[w].pl.n;
    p->items = oc_xcalloc((size_t)(total ? total : 1), sizeof *p->items);
    for (int w; (w = next_unit(parts, n, cu)) >= 0;) {
        const struct oc_plan_part *pt = &parts[w];
        const int64_t k = cu[w]++, end = unit_end(pt, k);
        for (; ci[w] < pt->pl.n && pt->pl.items[ci[w]].cand < end; ci[w]++) {
            struct item *it = &p->items[p->n++];
            *it = pt->pl.items[ci[w]];
            it->cand = first[w][k] + (it->cand - pt->unit_first[k]);
        }
    }
    OC_ASSERT(p->n == total);
}

/* Candidate c of part pt in the serial numbering. */
static int64_t global_cand(const struct oc_plan_part *pt, const int64_t *first, int64_t c)
{
    int64_t lo = 0, hi = pt->nunits; /* the last unit starting at or before c */
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (pt->unit_first[mid] <= c)
            lo = mid;
        else
            hi = mid;
    }
    OC_ASSERT(pt->nunits > 0 && pt->unit_first[lo] <= c);
    return first[lo] + (c - pt->unit_first[lo]);
}

/* An example of some part (illegal: i in its examples; a miss: in its
 * misses), for the merge's sorts. */
struct miss_ref {
    const struct oc_plan_part *pt;
    int i;
    int64_t cand;
};

static int cmp_miss(const void *pa, const void *pb)
{
    const struct miss_ref *a = pa, *b = pb;
    const double x = a->pt->miss[a->i].peak_mem_bytes, y = b->pt->miss[b->i].peak_mem_bytes;
    if (x != y)
        return x < y ? -1 : 1;
    const int c = strcmp(a->pt->miss_label[a->i], b->pt->miss_label[b->i]);
    return c ? c : (a->cand < b->cand ? -1 : a->cand > b->cand);
}

static int cmp_cand(const void *pa, const void *pb)
{
    const struct miss_ref *a = pa, *b = pb;
    return a->cand < b->cand ? -1 : a->cand > b->cand;
}

/* The examples: the first three illegal candidates over all parts, then
 * the OC_PLAN_MISSES closest misses (by peak, label, candidate). */
static void merge_examples(struct oc_plan *p, const struct oc_plan_part *parts, int n,
                           int64_t **first, const struct oc_opts *o)
{
    struct miss_ref ex[3 * MAX_PARTS];
    int nex = 0;
    for (int w = 0; w < n; w++)
        for (int i = 0; i < parts[w].pl.nexamples; i++)
            ex[nex++] = (struct miss_ref){&parts[w], i,
                                          global_cand(&parts[w], first[w], parts[w].ex_cand[i])};
    qsort(ex, (size_t)nex, sizeof *ex, cmp_cand);
    for (int k = 0; k < nex && k < 3; k++)
        p->examples[p->nexamples++] = ex[k].pt->pl.examples[ex[k].i];
    struct miss_ref *m = oc_xcalloc((size_t)n * OC_PLAN_MISSES, sizeof *m);
    int nm = 0;
    for (int w = 0; w < n; w++)
        for (int i = 0; i < parts[w].nmiss; i++)
            m[nm++] = (struct miss_ref){&parts[w], i,
                                        global_cand(&parts[w], first[w], parts[w].miss_cand[i])};
    qsort(m, (size_t)nm, sizeof *m, cmp_miss);
    for (int k = 0; k < nm && k < OC_PLAN_MISSES; k++) {
        const struct oc_plan_part *pt = m[k].pt;
        struct oc_rejected_layout *x = &p->examples[p->nexamples++];
        *x = pt->miss[m[k].i];
        x->kind = OC_REJECT_MEMORY;
        x->device_mem_bytes = o->topo.device.memory_bytes;
        oc_plan_oom_reason(x->reason, sizeof x->reason, o, pt->miss_stage[m[k].i],
                           x->peak_mem_bytes, pt->miss_reserve[m[k].i]);
    }
    free(m);
}

/* The counts of all parts: sums, and the ranges' extremes. */
static void merge_counts(struct oc_plan *p, const struct oc_plan_part *parts, int n)
{
    struct oc_search_counts *c = &p->counts;
    for (int i = 0; i < 5; i++)
        c->lo[i] = INT64_MAX, c->hi[i] = INT64_MIN;
    for (int w = 0; w < n; w++) {
        const struct oc_plan *q = &parts[w].pl;
        c->candidates += q->counts.candidates;
        c->illegal += q->counts.illegal;
        c->noop += q->counts.noop;
        for (int i = 0; i < 5; i++) {
            c->lo[i] = q->counts.lo[i] < c->lo[i] ? q->counts.lo[i] : c->lo[i];
            c->hi[i] = q->counts.hi[i] > c->hi[i] ? q->counts.hi[i] : c->hi[i];
        }
        p->noom += q->noom;
        p->ndominated += q->ndominated;
    }
}

void oc_plan_merge(struct oc_plan *p, struct oc_plan_part *parts, int n,
                   const struct oc_opts *o, const struct oc_search_space *s)
{
    memset(p, 0, sizeof *p);
    p->examples = oc_xcalloc(3 + OC_PLAN_MISSES, sizeof *p->examples);
    int64_t **first = global_firsts(parts, n, &p->ncand);
    merge_counts(p, parts, n);
    OC_ASSERT(p->counts.candidates == p->ncand);
    merge_items(p, parts, n, first);
    oc_search_describe(s, &p->counts, p->ranges, sizeof p->ranges);
    if (p->ndominated > 0) {
        const size_t k = strlen(p->ranges);
        snprintf(p->ranges + k, sizeof p->ranges - k,
                 "; %lld dominated variants skipped (more recompute where less fits)",
                 (long long)p->ndominated);
    }
    merge_examples(p, parts, n, first, o);
    int64_t *idx = oc_xcalloc((size_t)(p->n ? p->n : 1), sizeof *idx);
    struct oc_layout *lay = oc_xcalloc((size_t)(p->n ? p->n : 1), sizeof *lay);
    for (int64_t i = 0; i < p->n; i++)
        idx[i] = p->items[i].cand, lay[i] = p->items[i].layout;
    p->layouts_hash = oc_hash_layouts(lay, idx, p->n);
    free(lay);
    free(idx);
    for (int w = 0; w < n; w++)
        free(first[w]);
    free(first);
}
