/* batch.c: see batch.h. */
#include "batch.h"

#include <math.h>

int64_t oc_batch_nearest(const struct oc_layout *l, int64_t target, double tol)
{
    if (target < 1 || tol < 0 || l->dp < 1 || l->micro_batch < 1)
        return 0;
    /* the step of G: DP*mb, times PP when the micro-batch count must be a
     * multiple of PP */
    int64_t step = l->dp * l->micro_batch;
    if (l->schedule == OC_SCHED_INTERLEAVED)
        step *= l->pp;
    const int64_t lo = target / step * step, hi = lo + step;
    const double slack = tol * (double)target;
    const double dlo = (double)(target - lo), dhi = (double)(hi - target);
    int64_t best = 0;
    if (lo >= step && dlo <= slack)
        best = lo;
    if (dhi <= slack && (!best || dhi <= dlo))
        best = hi;
    return best;
}
