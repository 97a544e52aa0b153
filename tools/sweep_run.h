/* sweep_run.h: the state of one `ocsim sweep` run (private to
 * tools/cmd_sweep.c, which plans and simulates, and tools/sweep_results.c,
 * which writes it up: the ranked sweep.csv, the table and the chosen
 * layout on stdout, the confidence, report.md and the plots, the
 * closing counts). Not an API: the two files share it to stay under the
 * project's file size.
 */
#ifndef OC_SWEEP_RUN_H
#define OC_SWEEP_RUN_H

#include <stdint.h>

#include "csv_table.h"
#include "metrics.h"
#include "options.h"
#include "perturb.h"
#include "status.h"
#include "sweep_journal.h"
#include "sweep_plan.h"
#include "sweep_twins.h"

struct run {
    struct oc_plan plan;
    struct item *items;  /* plan.items: the candidates to simulate */
    int64_t n;           /* items */
    struct oc_prune prune;
    int prune_on;        /* not --no-prune */
    int64_t handed;      /* simulations handed out */
    int64_t *sim_index;  /* sweep index -> item index */
    int64_t total, done;
    struct oc_csv csv;
    struct oc_sweep_journal journal;
    int journal_failed;  /* an append failed (warned once) */
    int progress;        /* stderr is a terminal */
    double t0;
    double device_mem_bytes;
    double plan_s; /* oc_plan_build's wall time */
    /* forced-collective variants that share their auto variant's result
     * (sweep_twins.h); off under OCSIM_TEST_NO_TWINS=1 */
    int share;
    struct oc_twins twins;
    const int64_t *pass;  /* the second pass's sweep indices, or NULL */
    int64_t *second;      /* forced variants to simulate: handed out from
                             second[taken] on in the first pass, the rest
                             in the second pass */
    int64_t nsecond, taken, nshared;
};

/* The ranked results for the report and the plots: the simulated layouts'
 * metrics in res, the failed ones and the plan's examples of the rejected
 * in rej, and how many of each kind. */
struct results {
    struct oc_metrics *res;
    struct oc_rejected_layout *rej;
    int64_t nres, nfit, nfail, ninvalid, noom, nrej, npending, npruned;
};

/* cmd_sweep.c: an item's row of sweep.csv: simulated, or failed or pruned
 * (no figures); label: its layout label, NULL: formatted for the row. */
void oc_sweep_item_row(const struct run *r, struct oc_csv *c, const struct item *it,
                       const char *label);

/* sweep_results.c, in the order the sweep calls them: */
/* sweep.csv in rank order, put under its name; sorts r->items. */
int oc_sweep_write_ranked(struct run *r, struct oc_status *st);
/* The ranked results (to free: x->res, x->rej). */
void oc_sweep_results_gather(struct results *x, const struct run *r);
/* The confidence of the choice (core/perturb.h); 0 when off or nothing fits. */
int oc_sweep_confidence(const struct oc_opts *o, const struct results *x,
                        struct oc_perturb_result *c);
/* The table and the chosen layout on stdout, report.md and the plots into
 * out (NULL: none); 0, or 2 when the report could not be written. */
int oc_sweep_report(const struct oc_opts *o, const struct run *r, int argc, char **argv,
                    const char *out, const struct results *x, double wall, int sig,
                    const struct oc_perturb_result *conf);
/* The closing counts on stdout and where the files are (NULL: not written). */
void oc_sweep_summary(const struct results *x, const struct run *r, double wall, int sig,
                      const char *out, const char *path);

#endif
