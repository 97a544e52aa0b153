/* sim_opts.c: replay options from command-line flags (see sim_opts.h). */
#include "sim_opts.h"

#include <string.h>

#include "collective.h"
#include "engine.h"
#include "platform.h"

int oc_opts_replay(const struct oc_opts *o, struct oc_replay_opts *ro,
                   struct oc_status *st)
{
    memset(ro, 0, sizeof *ro);
    ro->fidelity = strcmp(o->fidelity, "full") == 0  ? OC_SIM_FULL
                   : strcmp(o->fidelity, "sym") == 0 ? OC_SIM_SYM
                                                     : OC_SIM_FAST;
    if (oc_sim_algo_from_name(o->collective, &ro->algo, st) != 0)
        return -1;
    ro->coarse = o->coarse;
    ro->steady = !o->no_steady;
    for (int i = 0; i < o->n_cfg; i++)
        if (oc_sim_cfg_check(o->cfg[i], st) != 0)
            return -1;
    ro->cfg = o->cfg;
    ro->n_cfg = o->n_cfg;
    if (o->log && oc_sim_log_check(o->log, st) != 0)
        return -1;
    ro->log = o->log;
    if (o->platform_file) {
        if (oc_sim_platform_check_file(o->platform_file, st) != 0)
            return -1;
        ro->platform_file = o->platform_file;
    } else if (oc_sim_platform_check_topology(&o->topo, o->cards, st) != 0) {
        return -1;
    }
    return 0;
}
