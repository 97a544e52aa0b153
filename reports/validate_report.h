/* validate_report.h: what `ocsim validate` (tools/cmd_validate.c) writes
 * after its rows ran: DIR/validation.csv (one row per table row, predicted
 * against measured with the error) and the plot DIR/validation.{gp,dat,png,
 * svg} (measured on x, predicted on y, log-log, one series per table, y = x
 * and the +-10 % band).
 *
 * What it is not: the reading of the tables or the simulations (the
 * command's); a row arrives here finished.
 *
 * The error of a row is (predicted - measured) / measured in the row's own
 * quantity: for a step time a negative error is an optimistic prediction,
 * for a throughput a positive one.
 */
#ifndef OC_VALIDATE_REPORT_H
#define OC_VALIDATE_REPORT_H

#include <stdint.h>

#include "plots.h"
#include "status.h"

enum oc_val_state {
    OC_VAL_OK,      /* predicted and compared */
    OC_VAL_SKIPPED, /* left out by a filter (--max-cards): said, not counted */
    OC_VAL_FAILED,  /* the simulation failed (message in note) */
};

struct oc_val_row {
    const char *table;   /* the table's path */
    int64_t line;        /* the line of the row in the table */
    char label[128];     /* the row's name column, or "row N" */
    char quantity[32];   /* step_time, tflops_per_gpu, memory_* */
    char unit[24];       /* as the table wrote it */
    char layout[160];    /* oc_layout_format */
    char model[128];
    char topology[64];
    int64_t cards;
    double measured;     /* in the table's unit */
    double predicted;    /* in the same unit */
    double error_pct;    /* 100 * (predicted - measured) / measured */
    double runtime_s;    /* wall time of the prediction */
    int fits;            /* the predicted peak memory fits the device */
    enum oc_val_state state;
    char source[512];
    char note[512];      /* why skipped or failed; "does not fit" */
};

/* Writes path (validation.csv), whole or not at all. */
int oc_val_write_csv(const char *path, const struct oc_val_row *rows, int64_t n,
                     struct oc_status *st);
/* The plot of the OC_VAL_OK rows into dir: 0, 1 (scripts written, not
 * rendered: st->msg for a warning), -1 (st->msg). */
int oc_val_plot(const char *dir, const struct oc_val_row *rows, int64_t n,
                const struct oc_plot_opts *po, struct oc_status *st);

#endif
