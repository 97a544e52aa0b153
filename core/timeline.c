/* timeline.c: per-op times parallel to a schedule (see timeline.h). */
#include "timeline.h"

#include <string.h>

void oc_timeline_init(struct oc_timeline *tl, const struct oc_schedule *s,
                      const unsigned char *record)
{
    memset(tl, 0, sizeof *tl);
    tl->sched = s;
    tl->nranks = s->nranks;
    tl->start_s = oc_xcalloc((size_t)s->nranks, sizeof *tl->start_s);
    tl->end_s = oc_xcalloc((size_t)s->nranks, sizeof *tl->end_s);
    tl->proxy = oc_xmalloc((size_t)s->nranks * sizeof *tl->proxy);
    for (int64_t r = 0; r < s->nranks; r++) {
        if (record && !record[r]) {
            tl->proxy[r] = -1;
            continue;
        }
        size_t n = (size_t)s->ranks[r].n;
        tl->start_s[r] = oc_xcalloc(n, sizeof(double));
        tl->end_s[r] = oc_xcalloc(n, sizeof(double));
        tl->proxy[r] = r;
    }
}

void oc_timeline_free(struct oc_timeline *tl)
{
    for (int64_t r = 0; r < tl->nranks; r++) {
        free(tl->start_s[r]);
        free(tl->end_s[r]);
    }
    free(tl->start_s);
    free(tl->end_s);
    free(tl->proxy);
    memset(tl, 0, sizeof *tl);
}
