/* sweep_groups.c: what a sweep on node groups of unlike devices
 * (core/topology.h "node_groups") says the slower groups cost.
 *
 * The best fitting layouts of the sweep are simulated again on the same
 * cluster made of one group's node type only (oc_topology_group_view: every
 * node a node of that group, the same card count), each with its own stage
 * split and with the even split (a split balanced for unlike devices is
 * unbalanced on like ones; the faster of the two is kept), and with every
 * DP replica's micro-batches equal (core/mbsplit.h). The chosen
 * layout's step against the fastest all-one-kind step is "what the slow
 * group costs"; the top layouts on both go into groups.{dat,gp,png}.
 *
 * What it is not: a second sweep of the all-one-kind cluster (its best
 * layout may differ; `ocsim sweep --topology dgx-h100` finds it).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "plot_groups.h"
#include "plots.h"
#include "replay.h"
#include "sweep_groups.h"

/* The layouts of the plot, at most. */
#define OC_GROUPS_TOP 8

/* The step of l on view v: the faster of l's split and the even one
 * (where the even one is legal); 0 where neither simulates. */
static double step_on(const struct oc_opts *o, const struct oc_replay_opts *ro,
                      const struct oc_topology *v, const struct oc_layout *l)
{
    struct oc_metrics mt;
    struct oc_status st = {{0}};
    double best = 0;
    /* like devices: every replica alike, so the even micro-batch split
     * (core/mbsplit.h: a speed split of the mixed cluster would idle the
     * replicas it gave fewer) */
    struct oc_layout own = *l;
    memset(own.mbs, 0, sizeof own.mbs);
    l = &own;
    struct oc_layout even = *l;
    even.first_stage_layers = even.last_stage_layers = 0;
    const int n = (l->first_stage_layers > 0 || l->last_stage_layers > 0) &&
                          o->model.num_hidden_layers % (l->pp * (l->vchunks > 1 ? l->vchunks : 1)) == 0
                      ? 2
                      : 1;
    for (int i = 0; i < n; i++) {
        if (oc_replay_run_forked(&o->model, v, i ? &even : l, ro, &mt, 600.0, &st) != 0)
            continue;
        if (best == 0 || mt.step_time_s < best)
            best = mt.step_time_s;
    }
    return best;
}

/* The group whose all-one-kind step of layout 0 is the shortest. */
static int fastest_group(const struct oc_opts *o, const double *step0)
{
    int f = 0;
    for (int g = 1; g < o->topo.n_groups; g++)
        if (step0[g] > 0 && (step0[f] <= 0 || step0[g] < step0[f]))
            f = g;
    return f;
}

/* Appends the section to dir/report.md. */
static void append_report(const char *dir, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/report.md", dir);
    FILE *f = fopen(path, "a");
    if (!f)
        return;
    fprintf(f, "\n## Node groups\n\n%s\n", text);
    if (fclose(f) != 0)
        fprintf(stderr, "ocsim sweep: warning: %s: cannot append the node groups\n", path);
}

int oc_sweep_groups_cost(const struct oc_opts *o, const struct oc_replay_opts *ro,
                         const struct oc_metrics *res, int64_t nfit, const char *dir)
{
    if (o->topo.n_groups < 2 || nfit < 1)
        return 0;
    double step0[OC_MAX_NODE_GROUPS];
    struct oc_topology v[OC_MAX_NODE_GROUPS];
    for (int g = 0; g < o->topo.n_groups; g++) {
        oc_topology_group_view(&o->topo, g, &v[g]);
        step0[g] = step_on(o, ro, &v[g], &res[0].layout);
    }
    const int fg = fastest_group(o, step0);
    char name[128], text[2048];
    oc_layout_format(&res[0].layout, name, sizeof name);
    size_t k = (size_t)snprintf(text, sizeof text, "%s takes %.3g s a step on %s.", name,
                                res[0].step_time_s, o->topo.name);
    for (int g = 0; g < o->topo.n_groups && k < sizeof text; g++)
        k += (size_t)snprintf(text + k, sizeof text - k,
                              " On %lld x %s alone (every node of group %s) it takes %.3g s.",
                              (long long)o->cards, v[g].device.name, o->topo.groups[g].name,
                              step0[g]);
    if (step0[fg] > 0 && k < sizeof text)
        snprintf(text + k, sizeof text - k,
                 " The slower groups cost %.1f%% of the step against all %s (the faster of "
                 "the layout's own split and the even one there).",
                 100.0 * (res[0].step_time_s / step0[fg] - 1.0), o->topo.groups[fg].name);
    printf("node groups: %s\n", text);
    if (!dir)
        return 0;
    append_report(dir, text);
    const int n = nfit < OC_GROUPS_TOP ? (int)nfit : OC_GROUPS_TOP;
    double fast[OC_GROUPS_TOP];
    fast[0] = step0[fg];
    for (int i = 1; i < n; i++)
        fast[i] = step_on(o, ro, &v[fg], &res[i].layout);
    struct oc_status st = {{0}};
    char title[256], all[160];
    snprintf(title, sizeof title, "%s: the best layouts on %lld cards of %s, and on %lld of %s",
             o->model.name, (long long)o->cards, o->topo.device.name, (long long)o->cards,
             o->topo.groups[fg].device.name);
    snprintf(all, sizeof all, "all %s", o->topo.groups[fg].device.name);
    if (oc_plot_groups(dir, title, o->topo.name, all, res, n, fast, &st) < 0)
        fprintf(stderr, "ocsim sweep: warning: %s\n", st.msg);
    return 0;
}
