/* job.h: one run of ocsim-exec as its parts see it: the flags, the model
 * and topology, the schedule, the backend's registry entry and the output
 * folder, filled by main.c before any rank starts and then shared
 * read-only by the ranks of one process (the threads of a local run).
 *
 *   struct oc_exec_job j;   // main.c fills it, then per rank:
 *   oc_out_measured(&ctl, &j, &runner, peak, &st);        // out_measured.h
 *   oc_out_weights(&ctl, &j, &runner, w, &differ, &max, &st); // out_weights.h
 *
 * What it is not: a rank's state (the runner's, runner.h).
 */
#ifndef OC_EXEC_JOB_H
#define OC_EXEC_JOB_H

#include "backends.h"
#include "options.h"
#include "schedule.h"
#include "timeout.h"

struct oc_exec_job {
    struct oc_opts o;          /* the flags (cli/options.h); model, topology loaded */
    struct oc_schedule sched;  /* the layout's op lists (none for --calibrate) */
    const struct oc_backend_entry *backend; /* --backend's entry (backends.h) */
    struct oc_backend_job bjob; /* what the backend's hooks are given */
    const char *out;           /* the output folder */
    char lname[128];           /* the layout, formatted (oc_layout_format) */
    struct oc_timeout timeout; /* the deadline of one wait (timeout.h) */
};

#endif
