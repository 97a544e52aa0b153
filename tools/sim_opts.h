/* sim_opts.h: turn the shared --fidelity/--collective/--platform/--cfg flags
 * into replay options, checking what SimGrid would abort on. */
#ifndef OC_SIM_OPTS_H
#define OC_SIM_OPTS_H

#include "options.h"
#include "replay.h"

int oc_opts_replay(const struct oc_opts *o, struct oc_replay_opts *ro,
                   struct oc_status *st);

#endif
