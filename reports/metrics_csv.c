/* metrics_csv.c: rows of the metrics schema (see metrics_csv.h). */
#include "metrics_csv.h"

const char *const oc_metrics_csv_cols[] = {
    "tp", "pp", "dp", "micro_batch", "num_micro_batches", "schedule", "vchunks",
    "recompute", "step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu",
    "bubble_fraction", "compute_s", "tp_comm_s", "pp_comm_s", "dp_comm_s",
    "exposed_comm_s", "peak_mem_bytes", "device_mem_bytes", "fits", "reason",
    "global_batch", "layout",
};
const int oc_metrics_csv_ncols =
    (int)(sizeof oc_metrics_csv_cols / sizeof oc_metrics_csv_cols[0]);

int oc_metrics_csv_open(struct oc_csv *c, const char *path, struct oc_status *st)
{
    return oc_csv_open(c, path, oc_metrics_csv_cols, oc_metrics_csv_ncols, st);
}

static void knobs(struct oc_csv *c, const struct oc_layout *l, int64_t m)
{
    oc_csv_field_i64(c, l->tp);
    oc_csv_field_i64(c, l->pp);
    oc_csv_field_i64(c, l->dp);
    oc_csv_field_i64(c, l->micro_batch);
    oc_csv_field_i64(c, m);
    oc_csv_field_str(c, oc_schedule_name(l->schedule));
    oc_csv_field_i64(c, l->vchunks);
    oc_csv_field_str(c, oc_recompute_name(l->recompute));
}

/* After the reason: the global batch the row ran (it may differ from
 * --global-batch under --batch-tolerance) and the layout's label, which
 * names every knob (first/last stage layers among them) and pastes into
 * --layout. */
static void tail(struct oc_csv *c, const struct oc_layout *l, const char *label)
{
    char buf[256];
    if (!label) {
        oc_layout_format(l, buf, sizeof buf);
        label = buf;
    }
    oc_csv_field_i64(c, l->global_batch);
    oc_csv_field_str(c, label);
}

/* sweep.csv's column after the shared ones: the candidate's closed-form
 * lower bound (core/bound.h), empty where none was computed */
static void sweep_tail(struct oc_csv *c, double bound_s)
{
    if (bound_s >= 0)
        oc_csv_field_f64(c, bound_s);
    else
        oc_csv_field_str(c, "");
}

int oc_metrics_csv_open_sweep(struct oc_csv *c, const char *path, struct oc_status *st)
{
    /* static: the table keeps the names to write the header again
     * (oc_csv_restart) */
    static const char *cols[64];
    int n = 0;
    for (int i = 0; i < oc_metrics_csv_ncols; i++)
        cols[n++] = oc_metrics_csv_cols[i];
    cols[n++] = "bound_s";
    return oc_csv_open(c, path, cols, n, st);
}

static void row_fields(struct oc_csv *c, const struct oc_metrics *mt, const char *reason,
                       const char *label)
{
    knobs(c, &mt->layout, mt->num_micro_batches);
    const double v[] = {mt->step_time_s, mt->tokens_per_s, mt->tflops_per_gpu,
                        mt->mfu, mt->bubble_fraction, mt->compute_s,
                        mt->tp_comm_s, mt->pp_comm_s, mt->dp_comm_s,
                        mt->exposed_comm_s, mt->peak_mem_bytes,
                        mt->device_mem_bytes};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        oc_csv_field_f64(c, v[i]);
    oc_csv_field_i64(c, mt->fits);
    oc_csv_field_str(c, reason ? reason : "");
    tail(c, &mt->layout, label);
}

void oc_metrics_csv_row(struct oc_csv *c, const struct oc_metrics *mt,
                        const char *reason)
{
    row_fields(c, mt, reason, NULL);
    oc_csv_end_row(c);
}

void oc_sweep_csv_row(struct oc_csv *c, const struct oc_metrics *mt, const char *reason,
                      double bound_s, const char *label)
{
    row_fields(c, mt, reason, label);
    sweep_tail(c, bound_s);
    oc_csv_end_row(c);
}

static void rejected_fields(struct oc_csv *c, const struct oc_layout *l,
                            double peak_mem_bytes, double device_mem_bytes,
                            const char *reason, const char *label)
{
    int64_t m = oc_layout_num_micro_batches(l);
    knobs(c, l, l->global_batch % (l->dp * l->micro_batch) ? 0 : m);
    for (int i = 0; i < 10; i++) /* step_time_s .. exposed_comm_s */
        oc_csv_field_str(c, "");
    if (peak_mem_bytes >= 0)
        oc_csv_field_f64(c, peak_mem_bytes);
    else
        oc_csv_field_str(c, "");
    oc_csv_field_f64(c, device_mem_bytes);
    oc_csv_field_i64(c, 0);
    oc_csv_field_str(c, reason);
    tail(c, l, label);
}

void oc_metrics_csv_row_rejected(struct oc_csv *c, const struct oc_layout *l,
                                 double peak_mem_bytes, double device_mem_bytes,
                                 const char *reason)
{
    rejected_fields(c, l, peak_mem_bytes, device_mem_bytes, reason, NULL);
    oc_csv_end_row(c);
}

void oc_sweep_csv_row_rejected(struct oc_csv *c, const struct oc_layout *l,
                               double peak_mem_bytes, double device_mem_bytes,
                               const char *reason, double bound_s, const char *label)
{
    rejected_fields(c, l, peak_mem_bytes, device_mem_bytes, reason, label);
    sweep_tail(c, bound_s);
    oc_csv_end_row(c);
}
