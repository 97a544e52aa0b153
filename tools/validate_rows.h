/* validate_rows.h: the rows of `ocsim validate`'s tables, read and checked
 * (tools/cmd_validate_rows.c): the format is cmd_validate.c's comment and
 * docs/validation.md. The command (cmd_validate.c) runs and reports them.
 *
 *   struct oc_csv_table tabs[n];  struct vrow *vr;  struct oc_val_row *rows;
 *   if (oc_val_read_tables(&a, tabs, &vr, &rows, &nrows, &st) != 0) ...exit 2...
 */
#ifndef OC_VALIDATE_ROWS_H
#define OC_VALIDATE_ROWS_H

#include <stdint.h>

#include "collective.h"
#include "csv_read.h"
#include "options.h"
#include "replay.h"
#include "validate_report.h"

/* What a row measured (oc_val_q_names: its name in the column 'quantity'). */
enum vq {
    Q_STEP,       /* step time: simulated (the fidelity of --fidelity) */
    Q_TFLOPS,     /* model TFLOP/s per GPU: simulated */
    Q_MEM_STATES, /* weights + gradients + optimizer states of a stage: memory.h */
    Q_MEM_ACT,    /* activations (and logits) a stage keeps at its peak: memory.h */
    Q_MEM_PEAK,   /* the stage's total, the reserve excluded: memory.h */
    Q_LAYER_FWD,  /* one layer's forward (compute + TP communication), one
                     micro-batch: simulated at layer grain (full fidelity) */
    Q_LAYER_BWD,  /* the same for its backward, with its recompute */
    Q_BUSBW,      /* an all-reduce's nccl-tests bus bandwidth: simulated
                     (cmd_validate_coll.c) */
    Q_N
};
extern const char *const oc_val_q_names[Q_N];

/* One row, read and checked. */
struct vrow {
    struct oc_opts o; /* model and topology loaded, layout checked */
    struct oc_replay_opts ro;
    enum vq q;
    double scale;     /* the unit in the quantity's base unit (s, TFLOP/s, bytes) */
    int64_t stage;
    double bytes;          /* Q_BUSBW: the all-reduce's buffer (column 'bytes') */
    enum oc_sim_algo algo; /* Q_BUSBW: column 'collective', auto by default */
};

struct vargs {
    const char *out, *fidelity;
    double mape; /* < 0: none */
    int64_t max_cards; /* 0: none */
    const char *tables[64];
    int ntables;
};

/* Reads every table and checks every row (nothing simulated yet): 0, or
 * -1 with st->msg, one line naming the file, the line and the column. */
int oc_val_read_tables(const struct vargs *a, struct oc_csv_table *tabs, struct vrow **vr,
                       struct oc_val_row **rows, int64_t *nrows, struct oc_status *st);
/* Q_BUSBW: the simulated all-reduce of row v as nccl-tests' bus bandwidth,
 * bytes/s (cmd_validate_coll.c). 0, or -1 with st->msg. */
int oc_val_allreduce_busbw(const struct vrow *v, double *busbw_Bps, struct oc_status *st);
/* Lists once on stderr the columns of t that nothing reads. */
void oc_val_note_unread(const struct oc_csv_table *t);

#endif
