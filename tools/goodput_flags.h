/* goodput_flags.h: the flags of `ocsim goodput` alone (cmd_goodput_flags.c):
 * times with units (90s, 30m, 2h, 1.5d, 500steps), sizes and bandwidths
 * (1.2TB, 50GB/s, 400Gb/s), failure rates (2e-5/gpu-hour), and ocsim-exec's
 * output for its measured saves. They are taken out of argv before the
 * shared flags (cli/options.c) parse the rest.
 *
 *   struct oc_goodput_flags g = ...defaults...;
 *   char **rest = ...argc + 1 slots...;
 *   if (oc_goodput_flags_split(argc, argv, &g, rest, &nrest, &st) != 0) ...one line, exit 2...
 *   oc_opts_parse(&o, nrest, rest, groups, &st);
 */
#ifndef OC_GOODPUT_FLAGS_H
#define OC_GOODPUT_FLAGS_H

#include <stdint.h>

#include "status.h"

/* --trials's bound; with cmd_goodput.c's SEGMENTS_MAX it keeps a run to
 * seconds. */
#define OC_GOODPUT_TRIALS_MAX 100000
/* --days's bound: a century; a run is months. */
#define OC_GOODPUT_DAYS_MAX 36500.0

/* The flags of this command alone (0: not given). */
struct oc_goodput_flags {
    double step_s;        /* --step-time */
    double days;          /* --days (30) */
    double failures;      /* --failures F in --days */
    double mtbf_s;        /* --mtbf */
    double rate;          /* --failure-rate, per unit below */
    int rate_per_node;    /* 1: per node-hour, 0: per GPU-hour */
    double interval_s;    /* --interval; 0: the best */
    double interval_steps; /* --interval Nsteps */
    double save_s, load_s; /* --save-time, --load-time; < 0: from the size */
    double ckpt_bytes;    /* --checkpoint-size; 0: from the layout */
    double wbw_node, wbw_total, rbw_node, rbw_total;
    double restart_s;     /* --restart-time */
    int64_t trials;
    uint64_t seed;
    int source_count;     /* how many of --failures, --mtbf, --failure-rate */
    const char *exec_log; /* --exec-log: ocsim-exec's output, its saves */
    int64_t exec_saves;   /* the saves found in it */
};

/* Takes the flags above (--name V or --name=V) out of argv into g; *rest
 * gets argv[0] and every other argument, in order. A flag given twice, a
 * bad value, two failure rates or two save times: -1 with one line. */
int oc_goodput_flags_split(int argc, char **argv, struct oc_goodput_flags *g, char **rest,
                           int *nrest, struct oc_status *st);

/* g->exec_log: g->save_s becomes the mean of its "checkpoint: saved ... in
 * T" lines (exec/ckpt_save.c), g->exec_saves their count; -1 with one line
 * when the file cannot be read or holds no such line. */
int oc_goodput_flags_exec_log(struct oc_goodput_flags *g, struct oc_status *st);

#endif
