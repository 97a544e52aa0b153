/* ops_csv.c: per-op rows of a timeline (see ops_csv.h). */
#include "ops_csv.h"

#include "csv_table.h"

const char *const oc_ops_csv_cols[] = {
    "rank", "op", "kind", "phase", "part", "mb", "stage", "chunk",
    "layer_first", "layer_count", "coll", "group", "count", "peer", "bytes",
    "flops", "start_s", "end_s",
};
const int oc_ops_csv_ncols = (int)(sizeof oc_ops_csv_cols / sizeof oc_ops_csv_cols[0]);

int oc_ops_csv_write(const char *path, const struct oc_timeline *tl,
                     struct oc_status *st)
{
    struct oc_csv c;
    if (oc_csv_open(&c, path, oc_ops_csv_cols, oc_ops_csv_ncols, st) != 0)
        return -1;
    const struct oc_schedule *s = tl->sched;
    for (int64_t r = 0; r < tl->nranks; r++) {
        if (!tl->start_s[r])
            continue;
        for (int64_t i = 0; i < s->ranks[r].n; i++) {
            const struct oc_op *op = &s->ranks[r].ops[i];
            if (op->kind == OC_OP_ALLOC || op->kind == OC_OP_FREE)
                continue;
            int comm = op->kind == OC_OP_COLLECTIVE;
            oc_csv_field_i64(&c, r);
            oc_csv_field_i64(&c, i);
            oc_csv_field_str(&c, oc_op_kind_name((enum oc_op_kind)op->kind));
            oc_csv_field_str(&c, oc_phase_name((enum oc_phase)op->phase));
            oc_csv_field_str(&c, oc_part_name((enum oc_part)op->part));
            oc_csv_field_i64(&c, op->mb);
            oc_csv_field_i64(&c, op->stage);
            oc_csv_field_i64(&c, op->chunk);
            oc_csv_field_i64(&c, op->layer_first);
            oc_csv_field_i64(&c, op->layer_count);
            oc_csv_field_str(&c, comm ? oc_coll_name((enum oc_coll_kind)op->coll) : "");
            oc_csv_field_str(&c, comm ? oc_group_name((enum oc_group)op->group) : "");
            oc_csv_field_i64(&c, op->count);
            oc_csv_field_i64(&c, op->kind == OC_OP_SEND || op->kind == OC_OP_RECV ? op->peer : -1);
            oc_csv_field_f64(&c, op->bytes);
            oc_csv_field_f64(&c, op->flops);
            oc_csv_field_f64(&c, tl->start_s[r][i]);
            oc_csv_field_f64(&c, tl->end_s[r][i]);
            oc_csv_end_row(&c);
        }
    }
    return oc_csv_close(&c, st);
}
