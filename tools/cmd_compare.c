/* cmd_compare.c: `ocsim compare PREDICTED MEASURED` holds a prediction
 * (ocsim simulate) against a measurement (ocsim-exec) per metric, per op
 * class and per op (reports/compare.h), prints the table and, with --out,
 * writes compare.csv and the scatter plot. Exit code 0 within tolerance,
 * 1 beyond it, 2 on bad input. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "compare.h"
#include "paths.h"

static void help(void)
{
    printf("usage: ocsim compare PREDICTED MEASURED [--tolerance P] [--out DIR]\n"
           "                     [--check-memory] [--no-render]\n\n"
           "Compares a prediction with a measurement of the same layout. PREDICTED and\n"
           "MEASURED are folders (their simulate.csv, else measured.csv, else sweep.csv,\n"
           "and ops.csv when present) or metrics CSV files. For a sweep.csv the row with\n"
           "the other side's layout is taken.\n\n"
           "Prints per metric and per op class (forward, backward, optimizer, TP, PP, DP,\n"
           "bubble; memory is peak_mem_bytes) the predicted and measured values and the\n"
           "error in percent, error = (measured - predicted) / measured * 100\n"
           "(positive: the prediction is low). Op classes are mean seconds per rank from\n"
           "the two ops.csv. Ops are paired one to one when both ops.csv hold the same\n"
           "schedule at the same grain, else compute is summed per (stage, micro-batch,\n"
           "chunk, phase) and divided by the ranks of the stage present; the output\n"
           "says which.\n\n"
           "  --tolerance P     percent (default %g). Checked: step_time_s, and each op\n"
           "                    class that is at least %.0f%% of the step on either side;\n"
           "                    other rows are reported only.\n"
           "  --check-memory    also check peak_mem_bytes against the tolerance\n"
           "  --out DIR         write DIR/compare.csv and DIR/scatter.png, .svg, .gp, .dat\n"
           "                    (predicted against measured seconds per op, log-log,\n"
           "                    with y = x and the tolerance band)\n"
           "  --no-render       write the plot's script and data, do not run gnuplot\n\n"
           "Exit code: 0 within tolerance, 1 beyond it, 2 bad input (a missing file or\n"
           "column, a number that does not parse, two different layouts).\n",
           OC_CMP_TOLERANCE_PCT_DEFAULT, 100 * OC_CMP_SIGNIFICANT);
}

enum { O_TOL = 256, O_OUT, O_MEM, O_NORENDER, O_HELP };

int oc_cmd_compare(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"tolerance", required_argument, 0, O_TOL},
        {"out", required_argument, 0, O_OUT},
        {"check-memory", no_argument, 0, O_MEM},
        {"no-render", no_argument, 0, O_NORENDER},
        {"help", no_argument, 0, O_HELP},
        {0, 0, 0, 0},
    };
    struct oc_compare_opts o = OC_COMPARE_OPTS_DEFAULT;
    struct oc_plot_opts po = OC_PLOT_OPTS_DEFAULT;
    const char *out = NULL, *tol = NULL;
    char q[OC_QUOTE_MAX], q2[OC_QUOTE_MAX];
    opterr = 0;
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        /* a flag given twice must say the same (issue 11, defect 8) */
        const char **seen = ch == O_TOL ? &tol : ch == O_OUT ? &out : NULL;
        if (seen && *seen && strcmp(*seen, optarg) != 0) {
            fprintf(stderr, "ocsim compare: --%s %s and --%s %s disagree (give one)\n",
                    ch == O_TOL ? "tolerance" : "out", oc_quote(q, sizeof q, *seen),
                    ch == O_TOL ? "tolerance" : "out", oc_quote(q2, sizeof q2, optarg));
            return 2;
        }
        switch (ch) {
        case O_TOL: {
            char *end;
            errno = 0;
            double v = strtod(optarg, &end);
            if (end == optarg || *end || errno || !isfinite(v) || v <= 0) {
                fprintf(stderr, "ocsim compare: --tolerance: '%s' is not a positive "
                                "number of percent\n",
                        oc_quote(q, sizeof q, optarg));
                return 2;
            }
            o.tolerance_pct = v;
            tol = optarg;
            break;
        }
        case O_OUT: out = optarg; break;
        case O_MEM: o.check_memory = 1; break;
        case O_NORENDER: po.no_render = 1; break;
        case 'h':
        case O_HELP: help(); return 0;
        case ':':
            fprintf(stderr, "ocsim compare: %s needs a value\n",
                    oc_quote(q, sizeof q, argv[optind - 1]));
            return 2;
        default:
            fprintf(stderr, "ocsim compare: unknown option '%s' (see ocsim compare --help)\n",
                    oc_quote(q, sizeof q, argv[optind - 1]));
            return 2;
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "ocsim compare: give PREDICTED and MEASURED (got %d argument%s; "
                        "see ocsim compare --help)\n",
                argc - optind, argc - optind == 1 ? "" : "s");
        return 2;
    }
    o.predicted = argv[optind];
    o.measured = argv[optind + 1];

    struct oc_status st = {{0}};
    struct oc_compare c;
    if (oc_compare_run(&o, &c, &st) != 0) {
        fprintf(stderr, "ocsim compare: %s\n", st.msg);
        return 2;
    }
    /* An --out that cannot be made is bad input: said before the table, so
     * that exit 2 prints nothing on stdout. */
    if (out && oc_mkdir_p(out, &st) != 0) {
        fprintf(stderr, "ocsim compare: %s\n", st.msg);
        oc_compare_free(&c);
        return 2;
    }
    oc_compare_print(stdout, &c);
    int rc = c.nfail ? 1 : 0;
    if (out) {
        char path[4200];
        snprintf(path, sizeof path, "%s/compare.csv", out);
        if (oc_compare_write_csv(path, &c, &st) != 0) {
            fprintf(stderr, "ocsim compare: %s\n", st.msg);
            oc_compare_free(&c);
            return 2;
        }
        int prc = oc_compare_plot(out, &c, &po, &st);
        if (prc < 0) {
            fprintf(stderr, "ocsim compare: %s\n", st.msg);
            oc_compare_free(&c);
            return 2;
        }
        if (prc > 0)
            fprintf(stderr, "ocsim compare: warning: %s\n", st.msg);
        /* No image named that was not made (a warning above said why). */
        printf("wrote %s/compare.csv%s\n", out,
               c.pairs.n > 0 ? (po.no_render || prc > 0 ? ", scatter.gp, scatter.dat"
                                                        : ", scatter.png, .svg, .gp, .dat")
                             : "");
    }
    oc_compare_free(&c);
    return rc;
}
