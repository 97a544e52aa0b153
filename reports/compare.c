/* compare.c: prediction against measurement (see compare.h): reading the
 * metrics and ops CSVs back, per-class totals, pairing ops, the verdict,
 * the table, compare.csv and the scatter plot.
 *
 * What it is not: a statistics package. Errors are plain relative errors
 * of totals; the scatter plot shows the spread per op for a person to read.
 */
#define _POSIX_C_SOURCE 200809L
#include "compare.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csv_read.h"
#include "csv_table.h"
#include "format.h"
#include "paths.h"
#include "schedule.h"

/* ------------------------------------------------------------------ */
/* Errors and verdicts                                                  */

static int is_zero(double v) { return fabs(v) <= OC_CMP_ZERO; }

double oc_cmp_error_pct(double pred, double meas)
{
    if (!isfinite(pred) || !isfinite(meas) || (is_zero(pred) && is_zero(meas)))
        return NAN;
    if (is_zero(meas)) /* (0 - p) / 0: the sign of -p */
        return pred > 0 ? -INFINITY : INFINITY;
    /* The convention of compare.h: relative to the measurement. */
    return (meas - pred) / meas * 100.0;
}

int oc_cmp_within(double err_pct, double tol_pct)
{
    return isnan(err_pct) || fabs(err_pct) <= tol_pct;
}

/* ------------------------------------------------------------------ */
/* Finding the files                                                    */

static int is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

int oc_cmp_locate(const char *arg, char *metrics_path, size_t nm, char *ops_path,
                  size_t no, struct oc_status *st)
{
    struct stat sb;
    metrics_path[0] = ops_path[0] = '\0';
    if (stat(arg, &sb) != 0)
        return oc_fail(st, "%s: %s", arg, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) {
        snprintf(metrics_path, nm, "%s", arg);
        return 0;
    }
    static const char *const names[] = {"simulate.csv", "measured.csv", "sweep.csv"};
    char p[4096];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", arg, names[i]);
        if (is_file(p)) {
            snprintf(metrics_path, nm, "%s", p);
            break;
        }
    }
    if (!metrics_path[0])
        return oc_fail(st, "%s: holds no simulate.csv, measured.csv or sweep.csv", arg);
    snprintf(p, sizeof p, "%s/ops.csv", arg);
    if (is_file(p))
        snprintf(ops_path, no, "%s", p);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Metrics files                                                        */

static const char *const metric_names[OC_CMP_NMETRICS] = {
    [OC_CMP_STEP_TIME] = "step_time_s",
    [OC_CMP_TOKENS_PER_S] = "tokens_per_s",
    [OC_CMP_MFU] = "mfu",
    [OC_CMP_BUBBLE_FRACTION] = "bubble_fraction",
    [OC_CMP_COMPUTE] = "compute_s",
    [OC_CMP_TP_COMM] = "tp_comm_s",
    [OC_CMP_PP_COMM] = "pp_comm_s",
    [OC_CMP_DP_COMM] = "dp_comm_s",
    [OC_CMP_EXPOSED_COMM] = "exposed_comm_s",
    [OC_CMP_PEAK_MEM] = "peak_mem_bytes",
};

static const char *const metric_units[OC_CMP_NMETRICS] = {
    [OC_CMP_STEP_TIME] = "s",     [OC_CMP_TOKENS_PER_S] = "tok/s",
    [OC_CMP_MFU] = "",            [OC_CMP_BUBBLE_FRACTION] = "",
    [OC_CMP_COMPUTE] = "s",       [OC_CMP_TP_COMM] = "s",
    [OC_CMP_PP_COMM] = "s",       [OC_CMP_DP_COMM] = "s",
    [OC_CMP_EXPOSED_COMM] = "s",  [OC_CMP_PEAK_MEM] = "B",
};

const char *oc_cmp_metric_name(enum oc_cmp_metric m)
{
    OC_ASSERT((int)m >= 0 && m < OC_CMP_NMETRICS);
    return metric_names[m];
}

enum { K_TP, K_PP, K_DP, K_MB, K_M, K_V, K_SCHED, K_RECOMP, K_N };
static const char *const knob_names[K_N] = {
    "tp", "pp", "dp", "micro_batch", "num_micro_batches", "vchunks", "schedule", "recompute",
};

static int blank(const char *s)
{
    for (; *s; s++)
        if (*s != ' ' && *s != '\t' && *s != '\r')
            return 0;
    return 1;
}

int oc_cmp_metrics_read(const char *path, struct oc_cmp_metrics **out, int64_t *n,
                        struct oc_status *st)
{
    *out = NULL;
    *n = 0;
    struct oc_csv_table t;
    if (oc_csv_read(path, &t, st) != 0)
        return -1;
    int kc[K_N], mc[OC_CMP_NMETRICS];
    for (int k = 0; k < K_N; k++)
        if (oc_csv_table_need(&t, knob_names[k], &kc[k], st) != 0)
            goto fail;
    for (int m = 0; m < OC_CMP_NMETRICS; m++)
        if (oc_csv_table_need(&t, metric_names[m], &mc[m], st) != 0)
            goto fail;
    struct oc_cmp_metrics *rows =
        oc_xcalloc(t.nrows > 0 ? (size_t)t.nrows : 1, sizeof *rows);
    int64_t k = 0;
    for (int64_t r = 0; r < t.nrows; r++) {
        if (blank(oc_csv_table_cell(&t, r, mc[OC_CMP_STEP_TIME])))
            continue; /* a layout the sweep did not simulate */
        struct oc_cmp_metrics *x = &rows[k];
        int64_t *iv[] = {&x->tp, &x->pp, &x->dp, &x->micro_batch,
                         &x->num_micro_batches, &x->vchunks};
        for (int j = 0; j < K_SCHED; j++)
            if (oc_csv_table_i64(&t, r, kc[j], iv[j], st) != 0) {
                free(rows);
                goto fail;
            }
        snprintf(x->schedule, sizeof x->schedule, "%s", oc_csv_table_cell(&t, r, kc[K_SCHED]));
        snprintf(x->recompute, sizeof x->recompute, "%s", oc_csv_table_cell(&t, r, kc[K_RECOMP]));
        for (int m = 0; m < OC_CMP_NMETRICS; m++)
            if (oc_csv_table_f64(&t, r, mc[m], &x->v[m], st) != 0) {
                free(rows);
                goto fail;
            }
        x->line = oc_csv_table_line(&t, r);
        k++;
    }
    if (k == 0) {
        free(rows);
        oc_fail(st, "%s: no row with a step time (nothing was simulated or measured)", path);
        goto fail;
    }
    oc_csv_table_free(&t);
    *out = rows;
    *n = k;
    return 0;
fail:
    oc_csv_table_free(&t);
    return -1;
}

int oc_cmp_same_layout(const struct oc_cmp_metrics *a, const struct oc_cmp_metrics *b)
{
    return a->tp == b->tp && a->pp == b->pp && a->dp == b->dp &&
           a->micro_batch == b->micro_batch &&
           a->num_micro_batches == b->num_micro_batches && a->vchunks == b->vchunks &&
           strcmp(a->schedule, b->schedule) == 0;
}

static void layout_str(const struct oc_cmp_metrics *m, char *buf, size_t n)
{
    char v[32] = "";
    if (m->vchunks > 1)
        snprintf(v, sizeof v, " v=%lld", (long long)m->vchunks);
    snprintf(buf, n, "tp%lld-pp%lld-dp%lld-mb%lld, %lld micro-batch%s, %s%s, recompute %s",
             (long long)m->tp, (long long)m->pp, (long long)m->dp,
             (long long)m->micro_batch, (long long)m->num_micro_batches,
             m->num_micro_batches == 1 ? "" : "es", m->schedule, v, m->recompute);
}

/* ------------------------------------------------------------------ */
/* ops.csv                                                              */

static const char *const class_names[OC_CMP_NCLASS + 1] = {
    [OC_CMP_FWD] = "forward", [OC_CMP_BWD] = "backward", [OC_CMP_OPT] = "optimizer",
    [OC_CMP_TP] = "tp",       [OC_CMP_PP] = "pp",        [OC_CMP_DP] = "dp",
    [OC_CMP_OTHER] = "other",
};

const char *oc_cmp_class_name(enum oc_cmp_class c)
{
    OC_ASSERT((int)c >= 0 && c <= OC_CMP_OTHER);
    return class_names[c];
}

/* The enum value whose schedule.h name is `s`, or -1. */
static int enum_of(const char *s, const char *(*name)(int), int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name(i), s) == 0)
            return i;
    return -1;
}
static const char *kind_nm(int i) { return oc_op_kind_name((enum oc_op_kind)i); }
static const char *phase_nm(int i) { return oc_phase_name((enum oc_phase)i); }
static const char *part_nm(int i) { return oc_part_name((enum oc_part)i); }
static const char *group_nm(int i) { return oc_group_name((enum oc_group)i); }

static int cmp_rank_op(const void *pa, const void *pb)
{
    const struct oc_cmp_op *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return (a->op > b->op) - (a->op < b->op);
}

enum { C_RANK, C_OP, C_KIND, C_PHASE, C_PART, C_MB, C_STAGE, C_CHUNK, C_GROUP,
       C_START, C_END, C_N };
static const char *const ops_cols[C_N] = {
    "rank", "op", "kind", "phase", "part", "mb", "stage", "chunk", "group",
    "start_s", "end_s",
};

/* One named cell as an enum of schedule.h. */
static int ops_enum(const struct oc_csv_table *t, int64_t r, int col,
                    const char *(*name)(int), int n, const char *empty_is,
                    uint8_t *out, struct oc_status *st)
{
    const char *s = oc_csv_table_cell(t, r, col);
    if (empty_is && blank(s))
        s = empty_is;
    int v = enum_of(s, name, n);
    if (v < 0)
        return oc_fail(st, "%s:%lld: column '%s': '%s' is not one of the names ocsim writes",
                       t->path, (long long)oc_csv_table_line(t, r),
                       oc_csv_table_header(t, col), s);
    *out = (uint8_t)v;
    return 0;
}

int oc_cmp_ops_read(const char *path, struct oc_cmp_ops *ops, struct oc_status *st)
{
    memset(ops, 0, sizeof *ops);
    struct oc_csv_table t;
    if (oc_csv_read(path, &t, st) != 0)
        return -1;
    int c[C_N];
    for (int k = 0; k < C_N; k++)
        if (oc_csv_table_need(&t, ops_cols[k], &c[k], st) != 0) {
            oc_csv_table_free(&t);
            return -1;
        }
    struct oc_cmp_op *v = oc_xcalloc(t.nrows > 0 ? (size_t)t.nrows : 1, sizeof *v);
    for (int64_t r = 0; r < t.nrows; r++) {
        struct oc_cmp_op *o = &v[r];
        int64_t mb, stage, chunk;
        double a, b;
        if (oc_csv_table_i64(&t, r, c[C_RANK], &o->rank, st) ||
            oc_csv_table_i64(&t, r, c[C_OP], &o->op, st) ||
            oc_csv_table_i64(&t, r, c[C_MB], &mb, st) ||
            oc_csv_table_i64(&t, r, c[C_STAGE], &stage, st) ||
            oc_csv_table_i64(&t, r, c[C_CHUNK], &chunk, st) ||
            ops_enum(&t, r, c[C_KIND], kind_nm, OC_OP_WAIT + 1, NULL, &o->kind, st) ||
            ops_enum(&t, r, c[C_PHASE], phase_nm, OC_PHASE_OPTIMIZER + 1, NULL, &o->phase, st) ||
            ops_enum(&t, r, c[C_PART], part_nm, OC_PART_ALL + 1, NULL, &o->part, st) ||
            ops_enum(&t, r, c[C_GROUP], group_nm, OC_GROUP_EMBED + 1, "none", &o->group, st) ||
            oc_csv_table_f64(&t, r, c[C_START], &a, st) ||
            oc_csv_table_f64(&t, r, c[C_END], &b, st))
            goto fail;
        if (o->rank < 0 || o->op < 0 || stage < 0 || chunk < 0 || mb < -1 ||
            mb > INT32_MAX || stage > INT32_MAX || chunk > INT32_MAX) {
            oc_fail(st, "%s:%lld: rank, op, stage and chunk must be >= 0 and mb >= -1",
                    path, (long long)oc_csv_table_line(&t, r));
            goto fail;
        }
        if (!isfinite(a) || !isfinite(b) || b < a) {
            oc_fail(st, "%s:%lld: end_s %.9g before start_s %.9g", path,
                    (long long)oc_csv_table_line(&t, r), b, a);
            goto fail;
        }
        o->mb = (int32_t)mb;
        o->stage = (int32_t)stage;
        o->chunk = (int32_t)chunk;
        o->dur_s = b - a;
    }
    qsort(v, (size_t)t.nrows, sizeof *v, cmp_rank_op);
    for (int64_t r = 1; r < t.nrows; r++)
        if (v[r].rank == v[r - 1].rank && v[r].op == v[r - 1].op) {
            oc_fail(st, "%s: rank %lld op %lld appears twice", path,
                    (long long)v[r].rank, (long long)v[r].op);
            goto fail;
        }
    ops->n = t.nrows;
    ops->ops = v;
    oc_csv_table_free(&t);
    return 0;
fail:
    free(v);
    oc_csv_table_free(&t);
    return -1;
}

void oc_cmp_ops_free(struct oc_cmp_ops *ops)
{
    free(ops->ops);
    ops->ops = NULL;
    ops->n = 0;
}

enum oc_cmp_class oc_cmp_class_of(const struct oc_cmp_op *op)
{
    switch (op->kind) {
    case OC_OP_COMPUTE:
        if (op->phase == OC_PHASE_FWD)
            return OC_CMP_FWD;
        if (op->phase == OC_PHASE_OPTIMIZER)
            return OC_CMP_OPT;
        return OC_CMP_BWD; /* bwd and recompute */
    case OC_OP_SEND:
    case OC_OP_RECV:
        return OC_CMP_PP;
    case OC_OP_COLLECTIVE:
        if (op->group == OC_GROUP_TP)
            return OC_CMP_TP;
        if (op->group == OC_GROUP_DP || op->group == OC_GROUP_EMBED)
            return OC_CMP_DP;
        return OC_CMP_OTHER;
    default:
        return OC_CMP_OTHER;
    }
}

int64_t oc_cmp_class_totals(const struct oc_cmp_ops *ops, double s[OC_CMP_NCLASS])
{
    for (int k = 0; k < OC_CMP_NCLASS; k++)
        s[k] = 0;
    int64_t nranks = 0;
    for (int64_t i = 0; i < ops->n; i++) {
        const struct oc_cmp_op *o = &ops->ops[i];
        if (i == 0 || o->rank != ops->ops[i - 1].rank) /* sorted by rank */
            nranks++;
        enum oc_cmp_class c = oc_cmp_class_of(o);
        if (c != OC_CMP_OTHER)
            s[c] += o->dur_s;
    }
    for (int k = 0; k < OC_CMP_NCLASS && nranks > 0; k++)
        s[k] /= (double)nranks; /* mean per rank */
    return nranks;
}

/* ------------------------------------------------------------------ */
/* Pairing                                                              */

const char *oc_cmp_pairing_name(enum oc_cmp_pairing p)
{
    switch (p) {
    case OC_CMP_PAIR_NONE: return "none";
    case OC_CMP_PAIR_OP: return "by op";
    case OC_CMP_PAIR_AGGREGATE: return "by aggregate";
    }
    return "?";
}

static int same_schedule(const struct oc_cmp_ops *a, const struct oc_cmp_ops *b)
{
    if (a->n != b->n || a->n == 0)
        return 0;
    for (int64_t i = 0; i < a->n; i++) {
        const struct oc_cmp_op *x = &a->ops[i], *y = &b->ops[i];
        if (x->rank != y->rank || x->op != y->op || x->kind != y->kind ||
            x->phase != y->phase || x->part != y->part || x->mb != y->mb)
            return 0;
    }
    return 1;
}

/* One compute op folded into its aggregate key. */
struct agg {
    int32_t stage, mb, chunk, phase;
    int64_t rank;
    double dur_s;
};

static int cmp_agg_key(const struct agg *a, const struct agg *b)
{
    if (a->stage != b->stage)
        return a->stage < b->stage ? -1 : 1;
    if (a->mb != b->mb)
        return a->mb < b->mb ? -1 : 1;
    if (a->chunk != b->chunk)
        return a->chunk < b->chunk ? -1 : 1;
    return (a->phase > b->phase) - (a->phase < b->phase);
}

static int cmp_agg(const void *pa, const void *pb) { return cmp_agg_key(pa, pb); }

static int cmp_stage_rank(const void *pa, const void *pb)
{
    const struct agg *a = pa, *b = pb;
    if (a->stage != b->stage)
        return a->stage < b->stage ? -1 : 1;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* The (stage, mb, chunk, phase) sums of a side, each divided by the ranks
 * of its stage present: sorted, unique keys in *out (malloc'd). */
static int64_t aggregate(const struct oc_cmp_ops *ops, struct agg **out)
{
    struct agg *v = oc_xmalloc((size_t)(ops->n > 0 ? ops->n : 1) * sizeof *v);
    int64_t n = 0;
    for (int64_t i = 0; i < ops->n; i++) {
        const struct oc_cmp_op *o = &ops->ops[i];
        if (o->kind != OC_OP_COMPUTE)
            continue;
        /* Chunk grain merges the recompute into the backward op. */
        int32_t ph = o->phase == OC_PHASE_RECOMPUTE ? OC_PHASE_BWD : o->phase;
        v[n++] = (struct agg){o->stage, o->mb, o->chunk, ph, o->rank, o->dur_s};
    }
    /* Ranks present per stage. */
    int32_t maxstage = -1;
    for (int64_t i = 0; i < n; i++)
        if (v[i].stage > maxstage)
            maxstage = v[i].stage;
    int64_t *ranks = oc_xcalloc((size_t)maxstage + 2, sizeof *ranks);
    struct agg *sr = oc_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *sr);
    memcpy(sr, v, (size_t)n * sizeof *sr);
    qsort(sr, (size_t)n, sizeof *sr, cmp_stage_rank);
    for (int64_t i = 0; i < n; i++)
        if (i == 0 || sr[i].stage != sr[i - 1].stage || sr[i].rank != sr[i - 1].rank)
            ranks[sr[i].stage]++;
    free(sr);
    /* Sum per key. */
    qsort(v, (size_t)n, sizeof *v, cmp_agg);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        if (k > 0 && cmp_agg_key(&v[k - 1], &v[i]) == 0)
            v[k - 1].dur_s += v[i].dur_s;
        else
            v[k++] = v[i];
    }
    for (int64_t i = 0; i < k; i++)
        v[i].dur_s /= (double)ranks[v[i].stage];
    free(ranks);
    *out = v;
    return k;
}

static void push_point(struct oc_cmp_pairs *p, int64_t *cap, const char *label,
                       enum oc_cmp_class cls, double pred_s, double meas_s)
{
    if (p->n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        p->pts = oc_xrealloc(p->pts, (size_t)*cap * sizeof *p->pts);
    }
    struct oc_cmp_point *q = &p->pts[p->n++];
    snprintf(q->label, sizeof q->label, "%s", label);
    q->cls = cls;
    q->pred_s = pred_s;
    q->meas_s = meas_s;
}

void oc_cmp_pair(const struct oc_cmp_ops *pred, const struct oc_cmp_ops *meas,
                 struct oc_cmp_pairs *out)
{
    memset(out, 0, sizeof *out);
    int64_t cap = 0;
    char label[64];
    if (same_schedule(pred, meas)) {
        out->mode = OC_CMP_PAIR_OP;
        for (int64_t i = 0; i < pred->n; i++) {
            const struct oc_cmp_op *x = &pred->ops[i];
            snprintf(label, sizeof label, "r%lld op%lld %s %s %s mb%d",
                     (long long)x->rank, (long long)x->op,
                     oc_op_kind_name((enum oc_op_kind)x->kind),
                     oc_phase_name((enum oc_phase)x->phase),
                     oc_part_name((enum oc_part)x->part), x->mb);
            push_point(out, &cap, label, oc_cmp_class_of(x), x->dur_s,
                       meas->ops[i].dur_s);
        }
        return;
    }
    out->mode = OC_CMP_PAIR_AGGREGATE;
    struct agg *a, *b;
    int64_t na = aggregate(pred, &a), nb = aggregate(meas, &b);
    int64_t i = 0, j = 0;
    while (i < na || j < nb) {
        int c = i == na ? 1 : j == nb ? -1 : cmp_agg_key(&a[i], &b[j]);
        if (c < 0) {
            out->unmatched_pred++, i++;
            continue;
        }
        if (c > 0) {
            out->unmatched_meas++, j++;
            continue;
        }
        snprintf(label, sizeof label, "stage %d mb %d chunk %d %s", a[i].stage,
                 a[i].mb, a[i].chunk, oc_phase_name((enum oc_phase)a[i].phase));
        enum oc_cmp_class cls = a[i].phase == OC_PHASE_FWD         ? OC_CMP_FWD
                                : a[i].phase == OC_PHASE_OPTIMIZER ? OC_CMP_OPT
                                                                   : OC_CMP_BWD;
        push_point(out, &cap, label, cls, a[i].dur_s, b[j].dur_s);
        i++, j++;
    }
    free(a);
    free(b);
}

void oc_cmp_pairs_free(struct oc_cmp_pairs *p)
{
    free(p->pts);
    memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------------ */
/* The comparison                                                       */

static void note(struct oc_compare *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(struct oc_compare *c, const char *fmt, ...)
{
    if (c->nnotes >= OC_CMP_MAX_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->notes[c->nnotes++], OC_MSG_MAX, fmt, ap);
    va_end(ap);
}

static struct oc_cmp_row *add_row(struct oc_compare *c, const char *name,
                                  const char *unit, double pred, double meas)
{
    OC_ASSERT(c->nrows < OC_CMP_MAX_ROWS);
    struct oc_cmp_row *r = &c->rows[c->nrows++];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->unit = unit;
    r->pred = pred;
    r->meas = meas;
    r->err_pct = oc_cmp_error_pct(pred, meas);
    r->checked = 0;
    r->within = 1;
    return r;
}

static void check_row(struct oc_cmp_row *r, double tol)
{
    r->checked = 1;
    r->within = oc_cmp_within(r->err_pct, tol);
}

/* Picks the row of `many` with the layout of `one`. */
static int pick(const struct oc_cmp_metrics *many, int64_t n, const char *path,
                const struct oc_cmp_metrics *one, const char *one_path,
                struct oc_cmp_metrics *out, struct oc_status *st)
{
    int64_t best = -1;
    for (int64_t i = 0; i < n; i++)
        if (oc_cmp_same_layout(&many[i], one) &&
            (best < 0 || (strcmp(many[i].recompute, one->recompute) == 0 &&
                          strcmp(many[best].recompute, one->recompute) != 0)))
            best = i;
    if (best < 0) {
        char l[256];
        layout_str(one, l, sizeof l);
        return oc_fail(st, "%s: no row with the layout of %s (%s)", path, one_path, l);
    }
    *out = many[best];
    return 0;
}

int oc_compare_run(const struct oc_compare_opts *o, struct oc_compare *c,
                   struct oc_status *st)
{
    memset(c, 0, sizeof *c);
    OC_ASSERT(o->predicted && o->measured && o->tolerance_pct > 0);
    c->tolerance_pct = o->tolerance_pct;
    if (oc_cmp_locate(o->predicted, c->pred_metrics, sizeof c->pred_metrics,
                      c->pred_ops, sizeof c->pred_ops, st) != 0 ||
        oc_cmp_locate(o->measured, c->meas_metrics, sizeof c->meas_metrics,
                      c->meas_ops, sizeof c->meas_ops, st) != 0)
        return -1;

    struct oc_cmp_metrics *pm = NULL, *mm = NULL;
    int64_t np = 0, nm = 0;
    int rc = -1;
    if (oc_cmp_metrics_read(c->pred_metrics, &pm, &np, st) != 0 ||
        oc_cmp_metrics_read(c->meas_metrics, &mm, &nm, st) != 0)
        goto out;
    if (np > 1 && nm > 1) {
        oc_fail(st, "%s and %s both hold several layouts; give one of them as a "
                    "simulate.csv or measured.csv",
                c->pred_metrics, c->meas_metrics);
        goto out;
    }
    if (np > 1) {
        c->meas = mm[0];
        if (pick(pm, np, c->pred_metrics, &c->meas, c->meas_metrics, &c->pred, st) != 0)
            goto out;
    } else if (nm > 1) {
        c->pred = pm[0];
        if (pick(mm, nm, c->meas_metrics, &c->pred, c->pred_metrics, &c->meas, st) != 0)
            goto out;
    } else {
        c->pred = pm[0];
        c->meas = mm[0];
        if (!oc_cmp_same_layout(&c->pred, &c->meas)) {
            char a[256], b[256];
            layout_str(&c->pred, a, sizeof a);
            layout_str(&c->meas, b, sizeof b);
            oc_fail(st, "%s and %s are different layouts (%s; %s)", c->pred_metrics,
                    c->meas_metrics, a, b);
            goto out;
        }
    }
    if (strcmp(c->pred.recompute, c->meas.recompute) != 0)
        note(c, "recompute differs: predicted with %s, measured with %s",
             c->pred.recompute, c->meas.recompute);

    const double tol = o->tolerance_pct;
    for (int m = 0; m < OC_CMP_NMETRICS; m++) {
        struct oc_cmp_row *r = add_row(c, metric_names[m], metric_units[m],
                                       c->pred.v[m], c->meas.v[m]);
        if (m == OC_CMP_STEP_TIME || (m == OC_CMP_PEAK_MEM && o->check_memory))
            check_row(r, tol);
    }

    /* Per class. A class counts when it is a noticeable part of the step
     * on either side. */
    const double ps = c->pred.v[OC_CMP_STEP_TIME], ms = c->meas.v[OC_CMP_STEP_TIME];
    double pcls[OC_CMP_NCLASS + 1], mcls[OC_CMP_NCLASS + 1];
    int have_ops = c->pred_ops[0] && c->meas_ops[0];
    if (!have_ops) {
        note(c, "no per-op comparison: no ops.csv with %s%s",
             c->pred_ops[0] ? "the measurement" : "the prediction",
             c->pred_ops[0] || c->meas_ops[0] ? "" : " nor the measurement");
    } else {
        struct oc_cmp_ops po, mo;
        if (oc_cmp_ops_read(c->pred_ops, &po, st) != 0)
            goto out;
        if (oc_cmp_ops_read(c->meas_ops, &mo, st) != 0) {
            oc_cmp_ops_free(&po);
            goto out;
        }
        c->pred_ranks = oc_cmp_class_totals(&po, pcls);
        c->meas_ranks = oc_cmp_class_totals(&mo, mcls);
        oc_cmp_pair(&po, &mo, &c->pairs);
        oc_cmp_ops_free(&po);
        oc_cmp_ops_free(&mo);
    }
    /* bubble_s from the metrics: bubble_fraction x step (metrics.h). */
    const double pbub = c->pred.v[OC_CMP_BUBBLE_FRACTION] * ps;
    const double mbub = c->meas.v[OC_CMP_BUBBLE_FRACTION] * ms;
    for (int k = 0; k <= OC_CMP_NCLASS; k++) {
        double pv, mv;
        char name[32];
        if (k == OC_CMP_NCLASS) {
            pv = pbub, mv = mbub;
            snprintf(name, sizeof name, "bubble_s");
        } else if (have_ops) {
            pv = pcls[k], mv = mcls[k];
            snprintf(name, sizeof name, "%s_s", class_names[k]);
        } else {
            continue;
        }
        struct oc_cmp_row *r = add_row(c, name, "s", pv, mv);
        double share = fmax(ps > 0 ? pv / ps : 0, ms > 0 ? mv / ms : 0);
        if (share >= OC_CMP_SIGNIFICANT)
            check_row(r, tol);
    }
    for (int i = 0; i < c->nrows; i++)
        c->nfail += c->rows[i].checked && !c->rows[i].within;
    rc = 0;
out:
    free(pm);
    free(mm);
    if (rc != 0)
        oc_compare_free(c);
    return rc;
}

void oc_compare_free(struct oc_compare *c)
{
    oc_cmp_pairs_free(&c->pairs);
}

const struct oc_cmp_row *oc_compare_row(const struct oc_compare *c, const char *name)
{
    for (int i = 0; i < c->nrows; i++)
        if (strcmp(c->rows[i].name, name) == 0)
            return &c->rows[i];
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Output                                                               */

static const char *fmt_val(char *b, size_t n, double v, const char *unit)
{
    if (unit[0])
        return oc_fmt_si(b, n, v, unit);
    snprintf(b, n, "%.4g", v);
    return b;
}

static const char *fmt_err(char *b, size_t n, double e)
{
    if (isnan(e))
        snprintf(b, n, "n/a");
    else if (isinf(e))
        snprintf(b, n, "%sinf", e < 0 ? "-" : "+");
    else
        snprintf(b, n, "%+.1f%%", e);
    return b;
}

static const char *verdict(const struct oc_cmp_row *r)
{
    if (isnan(r->err_pct))
        return "n/a";
    if (!r->checked)
        return "-";
    return r->within ? "yes" : "no";
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Median of |error| over the pairs with a finite error. */
static double pairs_median_abs_err(const struct oc_cmp_pairs *p, int64_t *used)
{
    double *e = oc_xmalloc((size_t)(p->n > 0 ? p->n : 1) * sizeof *e);
    int64_t k = 0;
    for (int64_t i = 0; i < p->n; i++) {
        double x = oc_cmp_error_pct(p->pts[i].pred_s, p->pts[i].meas_s);
        if (isfinite(x))
            e[k++] = fabs(x);
    }
    qsort(e, (size_t)k, sizeof *e, cmp_double);
    double med = k == 0 ? NAN : k % 2 ? e[k / 2] : 0.5 * (e[k / 2 - 1] + e[k / 2]);
    free(e);
    *used = k;
    return med;
}

static void pairing_text(const struct oc_compare *c, char *buf, size_t n)
{
    const struct oc_cmp_pairs *p = &c->pairs;
    switch (p->mode) {
    case OC_CMP_PAIR_NONE:
        snprintf(buf, n, "none (an ops.csv is missing)");
        break;
    case OC_CMP_PAIR_OP:
        snprintf(buf, n, "by op: both ops.csv hold the same (rank, op) keys with the "
                         "same kind/phase/part/mb; %lld ops",
                 (long long)p->n);
        break;
    case OC_CMP_PAIR_AGGREGATE:
        snprintf(buf, n, "by aggregate: the op lists differ (grain or ranks), so "
                         "compute is summed per (stage, mb, chunk, phase) and divided "
                         "by the ranks of the stage present (%lld predicted, %lld "
                         "measured ranks); %lld keys paired, %lld only predicted, "
                         "%lld only measured",
                 (long long)c->pred_ranks, (long long)c->meas_ranks, (long long)p->n,
                 (long long)p->unmatched_pred, (long long)p->unmatched_meas);
        break;
    }
}

void oc_compare_print(FILE *f, const struct oc_compare *c)
{
    char l[256];
    layout_str(&c->meas, l, sizeof l);
    fprintf(f, "predicted  %s%s%s\n", c->pred_metrics, c->pred_ops[0] ? ", " : "", c->pred_ops);
    fprintf(f, "measured   %s%s%s\n", c->meas_metrics, c->meas_ops[0] ? ", " : "", c->meas_ops);
    fprintf(f, "layout     %s\n", l);
    fprintf(f, "error = (measured - predicted) / measured; tolerance %.3g%% on the rows "
               "checked (step time; classes >= %.0f%% of the step)\n\n",
            c->tolerance_pct, 100 * OC_CMP_SIGNIFICANT);
    fprintf(f, "%-18s %12s %12s %9s  %s\n", "metric", "predicted", "measured", "error",
            "within");
    char a[32], b[32], e[32];
    for (int i = 0; i < c->nrows; i++) {
        const struct oc_cmp_row *r = &c->rows[i];
        if (i == OC_CMP_NMETRICS)
            fprintf(f, "per op class, mean per rank:\n");
        fprintf(f, "%-18s %12s %12s %9s  %s\n", r->name, fmt_val(a, sizeof a, r->pred, r->unit),
                fmt_val(b, sizeof b, r->meas, r->unit), fmt_err(e, sizeof e, r->err_pct),
                verdict(r));
    }
    char pt[OC_MSG_MAX];
    pairing_text(c, pt, sizeof pt);
    fprintf(f, "\npairing: %s\n", pt);
    if (c->pairs.n > 0) {
        int64_t used;
        double med = pairs_median_abs_err(&c->pairs, &used);
        if (used > 0)
            fprintf(f, "per pair: median |error| %.1f%% over %lld pairs with a finite error\n",
                    med, (long long)used);
    }
    for (int i = 0; i < c->nnotes; i++)
        fprintf(f, "note: %s\n", c->notes[i]);
    int nchecked = 0;
    for (int i = 0; i < c->nrows; i++)
        nchecked += c->rows[i].checked;
    if (c->nfail)
        fprintf(f, "BEYOND TOLERANCE: %d of %d checked rows off by more than %.3g%%\n",
                c->nfail, nchecked, c->tolerance_pct);
    else
        fprintf(f, "within tolerance: %d checked rows within %.3g%%\n", nchecked,
                c->tolerance_pct);
}

int oc_compare_write_csv(const char *path, const struct oc_compare *c,
                         struct oc_status *st)
{
    static const char *const cols[] = {"metric", "predicted", "measured", "error_pct",
                                       "within"};
    char line[2 * OC_MSG_MAX + 64];
    /* The '#' lines first (as csv_table.h's files), then the table. */
    FILE *f = fopen(path, "w");
    if (!f)
        return oc_fail(st, "%s: cannot write: %s", path, strerror(errno));
    fprintf(f, "# predicted: %s%s%s\n", c->pred_metrics, c->pred_ops[0] ? " " : "",
            c->pred_ops);
    fprintf(f, "# measured: %s%s%s\n", c->meas_metrics, c->meas_ops[0] ? " " : "",
            c->meas_ops);
    fprintf(f, "# error_pct = (measured - predicted) / measured * 100; tolerance %.6g%%; "
               "within: yes/no for checked rows, '-' reported only, n/a both ~0\n",
            c->tolerance_pct);
    pairing_text(c, line, sizeof line);
    fprintf(f, "# pairing: %s\n", line);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return oc_fail(st, "%s: writing failed", path);
    struct oc_csv csv;
    if (oc_csv_open_append(&csv, path, 5, st) != 0)
        return -1;
    oc_csv_write_header(csv.f, cols, 5);
    for (int i = 0; i < c->nrows; i++) {
        const struct oc_cmp_row *r = &c->rows[i];
        oc_csv_field_str(&csv, r->name);
        oc_csv_field_f64(&csv, r->pred);
        oc_csv_field_f64(&csv, r->meas);
        if (isnan(r->err_pct))
            oc_csv_field_str(&csv, "");
        else
            oc_csv_field_f64(&csv, r->err_pct);
        oc_csv_field_str(&csv, verdict(r));
        oc_csv_end_row(&csv);
    }
    return oc_csv_close(&csv, st);
}

/* ------------------------------------------------------------------ */
/* Scatter plot                                                         */

/* Colours as reports/plots.c draws the same kinds. */
static const char *const class_colour[OC_CMP_NCLASS + 1] = {
    [OC_CMP_FWD] = "#3b75af", [OC_CMP_BWD] = "#519e3e", [OC_CMP_OPT] = "#8c613c",
    [OC_CMP_TP] = "#6e6e6e",  [OC_CMP_PP] = "#d65f5f",  [OC_CMP_DP] = "#c44e9f",
    [OC_CMP_OTHER] = "#d5bb67",
};

static void gp_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
    fputc('"', f);
}

int oc_compare_plot(const char *dir, const struct oc_compare *c,
                    const struct oc_plot_opts *po, struct oc_status *st)
{
    static const char *const ext[] = {"gp", "dat", "png", "svg"};
    char path[4096];
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        snprintf(path, sizeof path, "%s/scatter.%s", dir, ext[i]);
        unlink(path);
    }
    const struct oc_cmp_pairs *p = &c->pairs;
    if (p->n == 0)
        return 0;
    if (oc_mkdir_p(dir, st) != 0)
        return -1;

    /* Data: one gnuplot block (index) per class present; log axes cannot
     * show a value <= 0, so such pairs are left out and counted. */
    snprintf(path, sizeof path, "%s/scatter.dat", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return oc_fail(st, "%s: cannot write: %s", path, strerror(errno));
    char pt[OC_MSG_MAX];
    pairing_text(c, pt, sizeof pt);
    fprintf(f, "# scatter.dat: predicted against measured seconds, pairing %s\n"
               "# one block per class (gnuplot index), columns: predicted_s measured_s label\n",
            pt);
    int present[OC_CMP_NCLASS + 1] = {0}, nblocks = 0, block_of[OC_CMP_NCLASS + 1];
    int64_t dropped = 0;
    double lo = INFINITY, hi = 0;
    for (int k = 0; k <= OC_CMP_NCLASS; k++) {
        int any = 0;
        for (int64_t i = 0; i < p->n; i++) {
            const struct oc_cmp_point *q = &p->pts[i];
            if ((int)q->cls != k)
                continue;
            if (!(q->pred_s > 0 && q->meas_s > 0 && isfinite(q->pred_s) &&
                  isfinite(q->meas_s))) {
                dropped++;
                continue;
            }
            if (!any) {
                if (nblocks > 0)
                    fputs("\n\n", f);
                fprintf(f, "# class %s\n", class_names[k]);
                block_of[k] = nblocks++;
                present[k] = any = 1;
            }
            fprintf(f, "%.9g %.9g ", q->pred_s, q->meas_s);
            gp_str(f, q->label);
            fputc('\n', f);
            lo = fmin(lo, fmin(q->pred_s, q->meas_s));
            hi = fmax(hi, fmax(q->pred_s, q->meas_s));
        }
    }
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return oc_fail(st, "%s: writing failed", path);
    if (nblocks == 0) /* every pair had a zero: nothing to draw */
        return 0;

    snprintf(path, sizeof path, "%s/scatter.gp", dir);
    f = fopen(path, "w");
    if (!f)
        return oc_fail(st, "%s: cannot write: %s", path, strerror(errno));
    const int w = po->width_px, h = po->height_px > 0 ? po->height_px : 700;
    const double tol = c->tolerance_pct / 100.0;
    /* Axis range: a decade-aligned square around the data. */
    double xlo = pow(10, floor(log10(lo))), xhi = pow(10, ceil(log10(hi)));
    if (xhi <= xlo)
        xhi = xlo * 10;
    fprintf(f,
            "# scatter.gp: predicted against measured time per op (or per aggregate).\n"
            "# Written by ocsim compare. Restyle it and rerun in this folder: gnuplot scatter.gp\n"
            "# Data: scatter.dat. Makes scatter.png and scatter.svg.\n"
            "set encoding utf8\n"
            "set terminal pngcairo size %d,%d font \"sans,10\" noenhanced\n"
            "set output 'scatter.png'\n",
            w, h);
    fprintf(f, "set title ");
    char title[OC_MSG_MAX + 64];
    char left_out[64] = "";
    if (dropped)
        snprintf(left_out, sizeof left_out, " (%lld with a zero time left out)",
                 (long long)dropped);
    snprintf(title, sizeof title, "Predicted vs measured, %lld pairs %s%s",
             (long long)(p->n - dropped), oc_cmp_pairing_name(p->mode), left_out);
    gp_str(f, title);
    fprintf(f,
            "\nset xlabel \"predicted (s)\"\n"
            "set ylabel \"measured (s)\"\n"
            "set logscale xy\n"
            "set format x \"%%.0s %%c\"\n"
            "set format y \"%%.0s %%c\"\n"
            "set xrange [%.6g:%.6g]\n"
            "set yrange [%.6g:%.6g]\n"
            "set size ratio -1\n"
            "set grid\n"
            "set key outside right top\n",
            xlo, xhi, xlo, xhi);
    /* The band where |error| <= tol: error = (m - p)/m, so
     * m in [p/(1 + tol), p/(1 - tol)] (compare.h's convention). */
    fprintf(f, "plot x with lines lc rgb \"black\" dt 1 title \"y = x\"");
    fprintf(f, ", x/(1+%.6g) with lines lc rgb \"#999999\" dt 2 title \"tolerance %.3g%%\"",
            tol, c->tolerance_pct);
    if (tol < 1)
        fprintf(f, ", x/(1-%.6g) with lines lc rgb \"#999999\" dt 2 notitle", tol);
    for (int k = 0; k <= OC_CMP_NCLASS; k++)
        if (present[k])
            fprintf(f, ", \\\n     'scatter.dat' index %d using 1:2 with points pt 7 ps 0.6 "
                       "lc rgb \"%s\" title \"%s\"",
                    block_of[k], class_colour[k], class_names[k]);
    fprintf(f, "\nset terminal svg size %d,%d dynamic font \"sans,10\" noenhanced "
               "background rgb 'white'\n"
               "set output 'scatter.svg'\n"
               "replot\n"
               "unset output\n",
            w, h);
    bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return oc_fail(st, "%s: writing failed", path);
    static const char *const names[] = {"scatter"};
    return oc_plot_render(dir, po, names, 1, st);
}
