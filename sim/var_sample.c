/* var_sample.c: the ideal step and N sampled steps of one layout
 * (var_sample.h). */
#include "var_sample.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int oc_var_sample(const struct oc_model *m, const struct oc_topology *t,
                  const struct oc_layout *l, const struct oc_replay_opts *ro,
                  const struct oc_variability *v, int64_t n, double wall_limit_s,
                  double *ideal_s, double *step_s, struct oc_metrics *mt_ideal,
                  struct oc_status *st)
{
    OC_ASSERT(m && t && l && ro && v && n >= 0 && ideal_s && (n == 0 || step_s));
    struct oc_replay_opts r = *ro;
    struct oc_variability ideal = {.slowdown = 1, .seed = v->seed};
    r.var = &ideal;
    r.var_step = 0;
    struct oc_metrics *mt = oc_xmalloc(sizeof *mt);
    int rc = oc_replay_run_forked(m, t, l, &r, mt, wall_limit_s, st);
    if (rc == 0) {
        *ideal_s = mt->step_time_s;
        if (mt_ideal)
            *mt_ideal = *mt;
    }
    r.var = v;
    for (int64_t i = 0; i < n && rc == 0; i++) {
        r.var_step = i;
        struct oc_status s2 = {{0}};
        rc = oc_replay_run_forked(m, t, l, &r, mt, wall_limit_s, &s2);
        if (rc != 0)
            oc_fail(st, "step %" PRId64 ": %s", i, s2.msg);
        else
            step_s[i] = mt->step_time_s;
    }
    free(mt);
    return rc;
}
