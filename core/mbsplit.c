/* mbsplit.c: unequal micro-batch counts per DP replica (see mbsplit.h):
 * the label part, its rules, the largest-remainder apportionment and the
 * speed split from each replica's devices. */
#include "mbsplit.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bound_groups.h"

int oc_mbs_on(const struct oc_layout *l) { return l->mbs[0].len > 0; }

int64_t oc_mbs_replica(const struct oc_layout *l, int64_t dp)
{
    if (!oc_mbs_on(l)) {
        const int64_t per = l->dp * l->micro_batch;
        return per > 0 ? l->global_batch / per : 0;
    }
    for (int i = 0; i < OC_MBS_MAX_RUNS && l->mbs[i].len > 0; i++) {
        if (dp < l->mbs[i].len)
            return l->mbs[i].count;
        dp -= l->mbs[i].len;
    }
    OC_ASSERT(!"a replica inside the split's runs");
    return 0;
}

static int64_t extreme(const struct oc_layout *l, int most)
{
    int64_t x = oc_mbs_replica(l, 0);
    for (int i = 1; oc_mbs_on(l) && i < OC_MBS_MAX_RUNS && l->mbs[i].len > 0; i++) {
        const int64_t y = l->mbs[i].count;
        x = most ? (y > x ? y : x) : (y < x ? y : x);
    }
    return x;
}

int64_t oc_mbs_min(const struct oc_layout *l) { return extreme(l, 0); }
int64_t oc_mbs_max(const struct oc_layout *l) { return extreme(l, 1); }

/* Appends k replicas of count c to the runs (merged with the last run
 * when equal); -1 past OC_MBS_MAX_RUNS runs or OC_MBS_MAX_COUNT replicas
 * in one run. */
static int push(struct oc_mbs_run *runs, int *n, int64_t c, int64_t k)
{
    if (*n > 0 && runs[*n - 1].count == c) {
        if (runs[*n - 1].len + k > OC_MBS_MAX_COUNT)
            return -1;
        runs[*n - 1].len = (uint16_t)(runs[*n - 1].len + k);
        return 0;
    }
    if (*n == OC_MBS_MAX_RUNS || k > OC_MBS_MAX_COUNT)
        return -1;
    runs[*n].count = (uint16_t)c;
    runs[*n].len = (uint16_t)k;
    (*n)++;
    return 0;
}

int oc_mbs_distinct(const struct oc_layout *l, int64_t *counts)
{
    if (!oc_mbs_on(l)) {
        counts[0] = oc_mbs_replica(l, 0);
        return 1;
    }
    int nc = 0;
    for (int i = 0; i < OC_MBS_MAX_RUNS && l->mbs[i].len > 0; i++) {
        int seen = 0;
        for (int k = 0; k < nc; k++)
            seen |= counts[k] == l->mbs[i].count;
        if (!seen)
            counts[nc++] = l->mbs[i].count;
    }
    return nc;
}

int oc_mbs_count_index(const struct oc_layout *l, const int64_t *counts, int nc,
                       int64_t dp)
{
    const int64_t c = oc_mbs_replica(l, dp);
    for (int k = 0; k < nc; k++)
        if (counts[k] == c)
            return k;
    OC_ASSERT(!"a replica's count among the distinct ones");
    return 0;
}

/* "12" or "12x3" at *s: the count and its repetitions; advances *s. */
static int read_run(const char **s, long long *v, long long *k)
{
    char *end;
    if (!isdigit((unsigned char)**s))
        return -1;
    errno = 0;
    *v = strtoll(*s, &end, 10);
    *k = 1;
    if (errno || *v < 0 || *v > OC_MBS_MAX_COUNT)
        return -1;
    if (*end == 'x') {
        const char *r = end + 1;
        if (!isdigit((unsigned char)*r))
            return -1;
        *k = strtoll(r, &end, 10);
        if (errno || *k < 1 || *k > OC_MBS_MAX_COUNT)
            return -1;
    }
    *s = end;
    return 0;
}

int oc_mbs_parse(struct oc_layout *l, const char *list, struct oc_status *st)
{
    char q[OC_QUOTE_MAX];
    struct oc_mbs_run v[OC_MBS_MAX_RUNS];
    memset(v, 0, sizeof v);
    if (strcmp(list, "even") == 0) {
        memcpy(l->mbs, v, sizeof v);
        return 0;
    }
    int n = 0;
    for (const char *s = list;;) {
        long long c, k;
        if (read_run(&s, &c, &k) != 0 || (*s && *s != '/'))
            return oc_fail(st, "micro-batch split '%s': expected counts joined by '/' "
                               "(a run of k equal counts <m>x<k>, each at most %d), e.g. 12/4 "
                               "or 6x2/2x2",
                           oc_quote(q, sizeof q, list), OC_MBS_MAX_COUNT);
        if (c < 1)
            return oc_fail(st, "micro-batch split '%s': a replica's count is 0 (each "
                               "replica runs at least one micro-batch)",
                           oc_quote(q, sizeof q, list));
        if (push(v, &n, c, k) != 0)
            return oc_fail(st, "micro-batch split '%s': more than %d runs of equal counts "
                               "(the layout's label stays short)",
                           oc_quote(q, sizeof q, list), OC_MBS_MAX_RUNS);
        if (!*s)
            break;
        s++;
    }
    memcpy(l->mbs, v, sizeof v);
    return 0;
}

void oc_mbs_format(const struct oc_layout *l, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < OC_MBS_MAX_RUNS && l->mbs[i].len > 0 && k < n; i++) {
        const int w = l->mbs[i].len > 1
                          ? snprintf(buf + k, n - k, "%s%dx%d", i ? "/" : "",
                                     (int)l->mbs[i].count, (int)l->mbs[i].len)
                          : snprintf(buf + k, n - k, "%s%d", i ? "/" : "", (int)l->mbs[i].count);
        if (w < 0)
            return;
        k += (size_t)w;
    }
}

int oc_mbs_check(const struct oc_layout *l, struct oc_status *st)
{
    if (!oc_mbs_on(l))
        return 0;
    char list[OC_MSG_MAX / 2];
    oc_mbs_format(l, list, sizeof list);
    int64_t n = 0, sum = 0;
    int runs = 0;
    while (runs < OC_MBS_MAX_RUNS && l->mbs[runs].len > 0) {
        n += l->mbs[runs].len;
        sum += (int64_t)l->mbs[runs].len * l->mbs[runs].count;
        runs++;
    }
    if (n != l->dp)
        return oc_fail(st, "micro-batch split mbs=%s names %lld replicas, DP is %lld",
                       list, (long long)n, (long long)l->dp);
    if (sum * l->micro_batch != l->global_batch)
        return oc_fail(st, "micro-batch split mbs=%s: %lld micro-batches x micro-batch "
                           "size %lld = %lld sequences, not the global batch %lld",
                       list, (long long)sum, (long long)l->micro_batch,
                       (long long)(sum * l->micro_batch), (long long)l->global_batch);
    if (runs == 1)
        return oc_fail(st, "micro-batch split mbs=%s is the even split (leave the "
                           "mbs= part out)", list);
    for (int i = 0; l->schedule == OC_SCHED_INTERLEAVED && i < runs; i++)
        if (l->mbs[i].count % l->pp != 0)
            return oc_fail(st, "micro-batch split mbs=%s: the interleaved schedule "
                               "needs each replica's micro-batches a multiple of PP "
                               "%lld (%d is not)",
                           list, (long long)l->pp, (int)l->mbs[i].count);
    if (l->zero >= 2)
        return oc_fail(st, "micro-batch split mbs=%s: ZeRO-%d reduces (and gathers) "
                           "over DP per micro-batch, which needs one count on "
                           "every replica (zero0 or zero1)", list, l->zero);
    return 0;
}

int oc_mbs_apportion(const double *w, int64_t n, int64_t total, int64_t step,
                     int64_t *out)
{
    if (n < 1 || step < 1 || total % step != 0 || total < n * step)
        return -1;
    double sum = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!(w[i] > 0))
            return -1;
        sum += w[i];
    }
    /* Hamilton's method in units of `step`: each quota's whole part, then
     * one more unit to each of the largest remainders; a replica left
     * below one unit gets it from the one with the most. */
    const int64_t units = total / step;
    int64_t given = 0;
    double *rem = malloc((size_t)n * sizeof *rem);
    OC_ASSERT(rem);
    for (int64_t i = 0; i < n; i++) {
        const double quota = (double)units * w[i] / sum;
        const int64_t whole = (int64_t)quota;
        out[i] = whole;
        rem[i] = quota - (double)whole;
        given += whole;
    }
    for (; given < units; given++) {
        int64_t best = 0;
        for (int64_t i = 1; i < n; i++)
            if (rem[i] > rem[best])
                best = i;
        out[best]++;
        rem[best] = -1.0;
    }
    for (int64_t i = 0; i < n; i++)
        while (out[i] < 1) {
            int64_t most = 0;
            for (int64_t j = 1; j < n; j++)
                if (out[j] > out[most])
                    most = j;
            out[most]--;
            out[i]++;
        }
    free(rem);
    for (int64_t i = 0; i < n; i++)
        out[i] *= step;
    return 0;
}

void oc_mbs_periods(const struct oc_model *m, const struct oc_layout *l,
                    const struct oc_topology *t, double *period_s)
{
    const int ng = t->n_groups > 0 ? t->n_groups : 1;
    double *stage = malloc((size_t)(ng * l->pp) * sizeof *stage);
    OC_ASSERT(stage);
    oc_bound_groups_stage_mb_s(m, l, t, stage);
    for (int64_t r = 0; r < l->dp; r++)
        period_s[r] = 0;
    const int64_t world = oc_layout_world(l);
    for (int64_t k = 0; k < world; k++) {
        const struct oc_coord c = oc_layout_coord(l, k);
        const int g = t->n_groups > 0 ? oc_topology_group_of_rank(t, k) : 0;
        const double s = stage[g * l->pp + c.pp];
        period_s[c.dp] = s > period_s[c.dp] ? s : period_s[c.dp];
    }
    free(stage);
}

int oc_mbs_speed(struct oc_layout *l, const struct oc_model *m,
                 const struct oc_topology *t, struct oc_status *st)
{
    memset(l->mbs, 0, sizeof l->mbs);
    if (l->dp < 2)
        return 0;
    if (l->zero >= 2)
        return oc_fail(st, "micro-batch split speed: ZeRO-%d reduces over DP per "
                           "micro-batch, which needs one count on every replica "
                           "(zero0 or zero1)", l->zero);
    double *period = oc_xmalloc((size_t)l->dp * sizeof *period);
    double *w = oc_xmalloc((size_t)l->dp * sizeof *w);
    int64_t *out = oc_xmalloc((size_t)l->dp * sizeof *out);
    oc_mbs_periods(m, l, t, period);
    for (int64_t r = 0; r < l->dp; r++)
        w[r] = 1.0 / period[r];
    const int64_t step = l->schedule == OC_SCHED_INTERLEAVED ? l->pp : 1;
    int rc = 0;
    struct oc_mbs_run v[OC_MBS_MAX_RUNS];
    memset(v, 0, sizeof v);
    int n = 0;
    if (l->micro_batch < 1 || l->global_batch % l->micro_batch != 0 ||
        oc_mbs_apportion(w, l->dp, l->global_batch / l->micro_batch, step, out) != 0)
        rc = oc_fail(st, "micro-batch split speed: the global batch %lld in "
                         "micro-batches of %lld cannot give each of %lld replicas "
                         "%lld or more", (long long)l->global_batch,
                     (long long)l->micro_batch, (long long)l->dp, (long long)step);
    for (int64_t r = 0; rc == 0 && r < l->dp; r++)
        if (out[r] > OC_MBS_MAX_COUNT || push(v, &n, out[r], 1) != 0)
            rc = oc_fail(st, "micro-batch split speed: the split of %lld replicas has "
                             "more than %d runs of equal counts or a count above %d",
                         (long long)l->dp, OC_MBS_MAX_RUNS, OC_MBS_MAX_COUNT);
    if (rc == 0 && n > 1) /* one run: every replica alike, the even split */
        memcpy(l->mbs, v, sizeof v);
    free(period);
    free(w);
    free(out);
    return rc;
}
