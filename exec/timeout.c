/* timeout.c: see timeout.h. */
#include "timeout.h"

#include <stdio.h>
#include <string.h>

#include "closed_form.h"
#include "memory.h"
#include "status.h"

/* The bytes of the largest checkpoint shard (ckpt.h: fp32 weights, 4
 * bytes per parameter, and AdamW's two fp32 moments, 8, sharded over DP
 * under ZeRO-1) of the stage holding the most parameters. */
static double largest_shard_bytes(const struct oc_model *m, const struct oc_layout *l)
{
    int64_t params = 0;
    for (int64_t s = 0; s < l->pp; s++) {
        const int64_t p = oc_mem_stage_params(m, l, s);
        if (p > params)
            params = p;
    }
    const double moments = l->zero ? 8.0 / (double)l->dp : 8.0;
    return (4.0 + moments) * (double)params;
}

void oc_timeout_plan(struct oc_timeout *to, double given_s, double max_s,
                     const struct oc_model *m, const struct oc_layout *l,
                     const struct oc_topology *t, int save, int load)
{
    OC_ASSERT(to && given_s >= 0 && max_s >= OC_TIMEOUT_FLOOR_S);
    memset(to, 0, sizeof *to);
    if (given_s > 0) {
        to->timeout_s = given_s;
        return;
    }
    to->automatic = 1;
    if (m && l && t) {
        struct oc_cf_step e;
        oc_cf_step(m, l, t, &e);
        to->step_s = e.step_s;
        snprintf(to->topology, sizeof to->topology, "%s", t->name);
        if (save || load) {
            to->ckpt_bytes = largest_shard_bytes(m, l);
            to->ckpt_load = load;
            to->ckpt_s = to->ckpt_bytes / 1e9 *
                         (load ? OC_TIMEOUT_CKPT_LOAD_S_PER_GB : OC_TIMEOUT_CKPT_SAVE_S_PER_GB);
        }
    }
    const double longest_s = to->ckpt_s > to->step_s ? to->ckpt_s : to->step_s;
    double v = OC_TIMEOUT_FACTOR * longest_s;
    if (v < OC_TIMEOUT_FLOOR_S)
        v = OC_TIMEOUT_FLOOR_S;
    if (v > max_s) {
        v = max_s;
        to->capped = 1;
    }
    to->timeout_s = v;
}

/* "1.23 ms", "4.56 s", "12 us": three digits and a unit. */
static const char *fmt_s(char *b, size_t n, double s)
{
    if (s >= 100.0)
        snprintf(b, n, "%.0f s", s);
    else if (s >= 1.0 || s == 0)
        snprintf(b, n, "%.3g s", s);
    else if (s >= 1e-3)
        snprintf(b, n, "%.3g ms", s * 1e3);
    else
        snprintf(b, n, "%.3g us", s * 1e6);
    return b;
}

void oc_timeout_describe(const struct oc_timeout *to, char *buf, size_t n)
{
    char v[32], w[32], f[32];
    fmt_s(v, sizeof v, to->timeout_s);
    if (!to->automatic) {
        snprintf(buf, n, "%s per wait (--timeout)", v);
        return;
    }
    if (to->step_s <= 0) {
        snprintf(buf, n, "%s per wait (auto: the floor; nothing predicted for this mode)", v);
        return;
    }
    /* what the longest predicted wait is */
    char longest[256];
    if (to->ckpt_s > to->step_s)
        snprintf(longest, sizeof longest, "a checkpoint shard's %s of %.3g GB, %s at %g s/GB",
                 to->ckpt_load ? "read" : "write", to->ckpt_bytes / 1e9,
                 fmt_s(w, sizeof w, to->ckpt_s),
                 to->ckpt_load ? OC_TIMEOUT_CKPT_LOAD_S_PER_GB : OC_TIMEOUT_CKPT_SAVE_S_PER_GB);
    else
        snprintf(longest, sizeof longest, "the predicted step, %s on %s",
                 fmt_s(w, sizeof w, to->step_s), to->topology);
    const double times = OC_TIMEOUT_FACTOR * (to->ckpt_s > to->step_s ? to->ckpt_s : to->step_s);
    if (to->capped)
        snprintf(buf, n, "%s per wait (auto: the most allowed; %g x %s, is %s)", v,
                 OC_TIMEOUT_FACTOR, longest, fmt_s(f, sizeof f, times));
    else if (times < OC_TIMEOUT_FLOOR_S)
        snprintf(buf, n, "%s per wait (auto: the floor; %g x %s, is less)", v,
                 OC_TIMEOUT_FACTOR, longest);
    else
        snprintf(buf, n, "%s per wait (auto: %g x %s)", v, OC_TIMEOUT_FACTOR, longest);
}
