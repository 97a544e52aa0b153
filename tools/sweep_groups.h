/* sweep_groups.h: on node groups of unlike devices, what the slower groups
 * cost the sweep's choice (tools/sweep_groups.c).
 *
 *   oc_sweep_groups_cost(&o, &ro, x.res, x.nfit, out);  // after report.md
 *
 * Prints "node groups: ..." on stdout, appends a "Node groups" section to
 * dir/report.md and draws dir/groups.png (reports/plot_groups.h); nothing
 * without groups or without a fitting layout. dir NULL: stdout only.
 */
#ifndef OC_SWEEP_GROUPS_H
#define OC_SWEEP_GROUPS_H

#include <stdint.h>

#include "metrics.h"
#include "options.h"
#include "replay.h"

int oc_sweep_groups_cost(const struct oc_opts *o, const struct oc_replay_opts *ro,
                         const struct oc_metrics *res, int64_t nfit, const char *dir);

#endif
