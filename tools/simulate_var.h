/* simulate_var.h: `ocsim simulate --variability SPEC` (stragglers and
 * jitter, core/variability.h): N seeded steps, one replay each, and their
 * statistics against the ideal step (tools/cmd_simulate_var.c). */
#ifndef OC_SIMULATE_VAR_H
#define OC_SIMULATE_VAR_H

#include "options.h"
#include "replay.h"

/* At most this many sampled steps: each is a replay in a child process
 * (0.1 s for llama2-70b on 64 cards in fast mode, replay.h), so 1e5 is
 * hours already; more is a typo. */
#define OC_VAR_MAX_STEPS 100000

/* Checks the flags of OC_OPT_VAR (before anything is loaded): 0, or -1 and
 * one line. *v is the parsed spec with the seed. */
int oc_simulate_var_check(const struct oc_opts *o, struct oc_variability *v,
                          struct oc_status *st);
/* What both `simulate` and `sweep` read of o->variability (given): the
 * spec, --steps at most OC_VAR_MAX_STEPS, the seed. 0, or -1 and one line. */
int oc_var_spec_read(const struct oc_opts *o, struct oc_variability *v, struct oc_status *st);

/* Runs the ideal step and o->exec.steps noisy ones, prints the figures,
 * writes DIR/variability.csv (one row per step) and
 * DIR/variability_summary.csv. Returns the exit code (0, or 2 with one
 * line on stderr). */
int oc_simulate_var_run(const struct oc_opts *o, const struct oc_replay_opts *ro,
                        const struct oc_variability *v, const char *out);

#endif
