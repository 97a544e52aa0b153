/* compare.h: a prediction (ocsim simulate) held against a measurement
 * (ocsim-exec): per metric, per op class and per op, with the error in
 * percent, a tolerance verdict, a table, compare.csv and a scatter plot.
 *
 *   struct oc_compare_opts o = OC_COMPARE_OPTS_DEFAULT;
 *   o.predicted = "out/simulate";  o.measured = "out/exec";
 *   struct oc_compare c;
 *   if (oc_compare_run(&o, &c, &st) != 0) ...bad input: st.msg, exit 2...
 *   oc_compare_print(stdout, &c);
 *   oc_compare_write_csv("out/cmp/compare.csv", &c, &st);
 *   oc_compare_plot("out/cmp", &c, &plot_opts, &st);   // scatter.{gp,dat,png,svg}
 *   int exit_code = c.nfail ? 1 : 0;
 *   oc_compare_free(&c);
 *
 * Inputs. Each side is a directory or a CSV file. A directory gives its
 * simulate.csv, else measured.csv, else sweep.csv, and its ops.csv when
 * present; a file gives only the metrics (no per-op comparison). A metrics
 * file with several rows (sweep.csv) is searched for the row whose layout
 * knobs (tp, pp, dp, micro_batch, num_micro_batches, schedule, vchunks)
 * are those of the other side's single row; rows without a step time
 * (layouts the sweep rejected) are skipped. Two different layouts are bad
 * input; a different recompute setting is only noted.
 *
 * Error convention: error_pct = (measured - predicted) / measured * 100.
 * Positive: the prediction is too low (optimistic for times); negative:
 * too high. When both values are ~0 (|v| <= OC_CMP_ZERO) or one is not a
 * finite number the error is n/a; measured ~0 with a predicted value is an
 * infinite error.
 *
 * Rows, in order:
 *   metrics    step_time_s, tokens_per_s, mfu, bubble_fraction, compute_s,
 *              tp_comm_s, pp_comm_s, dp_comm_s, exposed_comm_s,
 *              peak_mem_bytes, from the metrics files.
 *   classes    (when both sides have ops.csv) mean seconds per rank, i.e.
 *              the sum of the op durations over the ranks present in the
 *              file divided by their number, of:
 *                forward_s    COMPUTE ops of phase fwd
 *                backward_s   COMPUTE ops of phase bwd and recompute
 *                optimizer_s  COMPUTE ops of phase optimizer
 *                tp_s         COLLECTIVEs of the TP group
 *                pp_s         SENDs and RECVs (a RECV's duration includes
 *                             its wait for the sender, as recorded)
 *                dp_s         COLLECTIVEs of the DP and embedding groups
 *              and, from the metrics files, bubble_s = bubble_fraction x
 *              step_time_s. The memory class is the peak_mem_bytes metric
 *              (ops.csv carries no ALLOC/FREE rows).
 *
 * Verdict (--tolerance P, percent, default 15): a row is checked when it is
 * step_time_s, or a class row in seconds whose share of the step is at
 * least OC_CMP_SIGNIFICANT (5 %) on either side (max of predicted/predicted
 * step and measured/measured step), or peak_mem_bytes with check_memory.
 * A checked row passes when |error_pct| <= P. Every other row is reported
 * only: a class that is 1 % of the step may be 50 % off without changing
 * which layout is best. c.nfail counts the checked rows that fail.
 *
 * Per-op pairing, for the scatter plot (x predicted, y measured seconds):
 *   by op         when both ops.csv hold the same (rank, op) keys with the
 *                 same kind, phase, part and mb (the same schedule at the
 *                 same grain, e.g. simulate --fidelity full against the
 *                 executor): one point per op.
 *   by aggregate  otherwise (the simulator's fast mode runs chunk grain and
 *                 records one rank per TP group; the executor layer grain
 *                 and every rank): COMPUTE ops summed per (stage, mb, chunk,
 *                 phase), recompute counted as bwd (chunk grain merges it),
 *                 divided by the ranks of that stage present in the file
 *                 (mean per rank, so one rank per TP group and all ranks
 *                 compare), one point per key present on both sides.
 *
 * Where it is: compare.c (the error convention, the verdict, the run),
 * compare_read.c (locating and reading both sides, op classes),
 * compare_pair.c (the pairing), compare_report.c (table, CSV, scatter).
 */
#ifndef OC_COMPARE_H
#define OC_COMPARE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plots.h"
#include "status.h"

#define OC_CMP_TOLERANCE_PCT_DEFAULT 15.0
#define OC_CMP_SIGNIFICANT 0.05 /* share of the step a checked class reaches */
#define OC_CMP_ZERO 1e-12       /* |v| at or below: ~0 */

/* ------------------------------------------------------------------ */
/* Building blocks (exposed for tests)                                  */

/* (meas - pred) / meas * 100; NAN when both are ~0 or one is not finite;
 * -inf or +inf when only meas is ~0. */
double oc_cmp_error_pct(double pred, double meas);
/* |err| <= tol_pct; an n/a error (NAN) passes. */
int oc_cmp_within(double err_pct, double tol_pct);

/* Where a side's files are: metrics always, ops ("" when none). */
int oc_cmp_locate(const char *arg, char *metrics_path, size_t nm, char *ops_path,
                  size_t no, struct oc_status *st);

enum oc_cmp_metric {
    OC_CMP_STEP_TIME, OC_CMP_TOKENS_PER_S, OC_CMP_MFU, OC_CMP_BUBBLE_FRACTION,
    OC_CMP_COMPUTE, OC_CMP_TP_COMM, OC_CMP_PP_COMM, OC_CMP_DP_COMM,
    OC_CMP_EXPOSED_COMM, OC_CMP_PEAK_MEM, OC_CMP_NMETRICS
};
/* The column name in the metrics schema ("step_time_s", ...). */
const char *oc_cmp_metric_name(enum oc_cmp_metric m);

/* One row of the metrics schema (reports/metrics_csv.h). */
struct oc_cmp_metrics {
    int64_t tp, pp, dp, micro_batch, num_micro_batches, vchunks;
    char schedule[32], recompute[32];
    double v[OC_CMP_NMETRICS];
    int64_t line; /* in the file */
};

/* Reads every row of a metrics file that has a step time. The knob
 * columns and the OC_CMP_NMETRICS columns must be present; rows with an
 * empty step_time_s are skipped (a sweep's rejected layouts). *out is
 * malloc'd (free it), *n its rows. */
int oc_cmp_metrics_read(const char *path, struct oc_cmp_metrics **out, int64_t *n,
                        struct oc_status *st);
/* The same from len bytes in memory; `name` stands for the path. */
int oc_cmp_metrics_read_mem(const char *name, const char *data, size_t len,
                            struct oc_cmp_metrics **out, int64_t *n,
                            struct oc_status *st);
/* Same layout knobs (recompute not included). */
int oc_cmp_same_layout(const struct oc_cmp_metrics *a, const struct oc_cmp_metrics *b);
/* The layout of a row as messages and the table name it: "tp2-pp2-dp1-mb1,
 * 4 micro-batches, 1f1b, recompute selective" (" v=2" after the schedule
 * when interleaved). */
void oc_cmp_layout_str(const struct oc_cmp_metrics *m, char *buf, size_t n);

enum oc_cmp_class {
    OC_CMP_FWD, OC_CMP_BWD, OC_CMP_OPT, OC_CMP_TP, OC_CMP_PP, OC_CMP_DP,
    OC_CMP_NCLASS,
    OC_CMP_OTHER = OC_CMP_NCLASS /* WAIT, a collective of no group */
};
const char *oc_cmp_class_name(enum oc_cmp_class c); /* "forward", ... */

/* One row of ops.csv (reports/ops_csv.h), what compare needs of it. */
struct oc_cmp_op {
    int64_t rank, op;
    int32_t mb, stage, chunk;
    uint8_t kind, phase, part, group; /* enums of core/schedule.h */
    double dur_s;                     /* end_s - start_s */
};

struct oc_cmp_ops {
    int64_t n;
    struct oc_cmp_op *ops; /* sorted by (rank, op) */
};

/* Reads an ops.csv; kind, phase, part and group must be names that
 * core/schedule.h prints, end_s >= start_s. */
int oc_cmp_ops_read(const char *path, struct oc_cmp_ops *ops, struct oc_status *st);
int oc_cmp_ops_read_mem(const char *name, const char *data, size_t len,
                        struct oc_cmp_ops *ops, struct oc_status *st);
void oc_cmp_ops_free(struct oc_cmp_ops *ops);
enum oc_cmp_class oc_cmp_class_of(const struct oc_cmp_op *op);
/* Mean seconds per rank of each class: sum over the ops / ranks present.
 * Returns the number of ranks present. */
int64_t oc_cmp_class_totals(const struct oc_cmp_ops *ops, double s[OC_CMP_NCLASS]);

enum oc_cmp_pairing { OC_CMP_PAIR_NONE, OC_CMP_PAIR_OP, OC_CMP_PAIR_AGGREGATE };
const char *oc_cmp_pairing_name(enum oc_cmp_pairing p); /* "by op", ... */

struct oc_cmp_point {
    char label[64];  /* "r3 op17 compute fwd attn mb0" or "stage 1 mb 2 chunk 0 bwd" */
    enum oc_cmp_class cls;
    double pred_s, meas_s;
};

struct oc_cmp_pairs {
    enum oc_cmp_pairing mode;
    int64_t n;
    struct oc_cmp_point *pts;
    int64_t unmatched_pred, unmatched_meas; /* aggregate keys on one side only */
};

/* Chooses the pairing (see the top of this file) and fills `out`. */
void oc_cmp_pair(const struct oc_cmp_ops *pred, const struct oc_cmp_ops *meas,
                 struct oc_cmp_pairs *out);
void oc_cmp_pairs_free(struct oc_cmp_pairs *p);

/* ------------------------------------------------------------------ */
/* The comparison                                                       */

struct oc_cmp_row {
    char name[32];     /* metric or class row name */
    const char *unit;  /* "s", "B", "tok/s", "" */
    double pred, meas;
    double err_pct;    /* NAN: n/a */
    int checked;       /* counts for the verdict */
    int within;        /* |err_pct| <= tolerance (1 when not checked) */
};

#define OC_CMP_MAX_ROWS 32
#define OC_CMP_MAX_NOTES 6

struct oc_compare {
    char pred_metrics[1024], meas_metrics[1024];
    char pred_ops[1024], meas_ops[1024]; /* "" when absent */
    struct oc_cmp_metrics pred, meas;    /* the rows compared */
    double tolerance_pct;
    int nrows;
    struct oc_cmp_row rows[OC_CMP_MAX_ROWS];
    int64_t pred_ranks, meas_ranks;      /* ranks present in each ops.csv */
    struct oc_cmp_pairs pairs;           /* mode NONE without ops */
    int nfail;                           /* checked rows beyond tolerance */
    int nnotes;
    char notes[OC_CMP_MAX_NOTES][OC_MSG_MAX];
};

struct oc_compare_opts {
    const char *predicted, *measured; /* directory or CSV file */
    double tolerance_pct;             /* > 0 */
    int check_memory;                 /* peak_mem_bytes counts for the verdict */
};
#define OC_COMPARE_OPTS_DEFAULT                                                \
    ((struct oc_compare_opts){.predicted = NULL, .measured = NULL,              \
                              .tolerance_pct = OC_CMP_TOLERANCE_PCT_DEFAULT,   \
                              .check_memory = 0})

/* Reads both sides and fills `c`. -1 with st->msg on bad input (a missing
 * file, a missing column, a number that does not parse, two layouts). */
int oc_compare_run(const struct oc_compare_opts *o, struct oc_compare *c,
                   struct oc_status *st);
void oc_compare_free(struct oc_compare *c);
/* The row by name, or NULL. */
const struct oc_cmp_row *oc_compare_row(const struct oc_compare *c, const char *name);

/* The fixed-width table, the pairing used and the verdict. */
void oc_compare_print(FILE *f, const struct oc_compare *c);
/* compare.csv: metric,predicted,measured,error_pct,within with '#' lines
 * naming the inputs, the convention and the pairing. within is "yes" or
 * "no" for a checked row, "n/a" when the error is n/a, "-" for a row that
 * is reported only. */
int oc_compare_write_csv(const char *path, const struct oc_compare *c,
                         struct oc_status *st);
/* scatter.{gp,dat,png,svg} in `dir`: one point per pair, coloured by
 * class, log-log, the line y = x and the tolerance band. Returns as the
 * plots.h functions: 0, 1 (not rendered, st->msg a warning), -1. No pair:
 * nothing written, 0. */
int oc_compare_plot(const char *dir, const struct oc_compare *c,
                    const struct oc_plot_opts *po, struct oc_status *st);

#endif
