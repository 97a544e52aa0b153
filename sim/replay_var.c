/* replay_var.c: stragglers and jitter applied to one replay (the numbers
 * are core/variability.h's; replay.h says what the options do). What it
 * is not: the sampling of many steps or their statistics (the caller runs
 * one replay per step, tools/cmd_simulate_var.c).
 *
 * Compute: rank rk's COMPUTE op i costs its nominal time times
 * oc_var_compute_mult(step, rank, i). In fast mode a simulated rank stands
 * for its TP group (replay.h), whose members run op i in lockstep between
 * TP collectives: the group takes the slowest member's time, the maximum of
 * the members' multipliers (each keyed by the member's own rank). So FAST
 * and FULL draw the same numbers for a rank; they differ in the grain (a
 * FAST COMPUTE op is a model chunk's forward or backward, a FULL one a
 * layer's), and the noise is per op of the grain that runs.
 *
 * Links: every link of the platform gets bandwidth / oc_var_link_div(step,
 * its name) for the whole step, through SimGrid's sg_link_set_bandwidth
 * (which also the route figures read, so fast mode's TP sleeps see it,
 * and so does the AUTO collective choice, coll.h, which picks on route
 * bandwidth: a jittered step may pick another algorithm, as NCCL's tuner
 * would not, since it reads no live bandwidth; a known difference).
 */
#include "replay_priv.h"

#include <simgrid/link.h>
#include <xbt/sysdep.h>

void oc_rp_var_costs(const struct replay *R, const struct rrank *rk, double *c)
{
    const struct oc_variability *v = R->var;
    const int64_t members = R->fast ? R->l->tp : 1;
    struct oc_coord mc = rk->c;
    for (int64_t i = 0; i < rk->ops->n; i++) {
        if (rk->ops->ops[i].kind != OC_OP_COMPUTE)
            continue;
        double x = 0;
        for (int64_t k = 0; k < members; k++) {
            int64_t r = rk->rank;
            if (R->fast) {
                mc.tp = k;
                r = oc_layout_rank(R->l, mc);
            }
            const double y = oc_var_compute_mult(v, R->slow, R->var_step, r, i);
            x = y > x ? y : x;
        }
        c[i] *= x;
    }
}

void oc_rp_var_links(const struct replay *R)
{
    if (R->var->link_cv <= 0)
        return;
    const size_t n = sg_link_count();
    sg_link_t *links = sg_link_list();
    for (size_t i = 0; i < n; i++) {
        const double div = oc_var_link_div(R->var, R->var_step, sg_link_get_name(links[i]));
        sg_link_set_bandwidth(links[i], sg_link_get_bandwidth(links[i]) / div);
    }
    xbt_free(links);
}
