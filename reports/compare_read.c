/* compare_read.c: the inputs of `ocsim compare` (see compare.h): where a
 * side's files are, the metrics rows of simulate.csv / measured.csv /
 * sweep.csv, the op rows of ops.csv, and the op classes with their mean
 * seconds per rank.
 *
 * What it is not: the CSV parser (csv_read.c, csv_table.c), nor the writers
 * of these files (metrics_csv.c, ops_csv.c), nor the comparison itself
 * (compare.c). It checks what compare relies on (the columns present, the
 * names core/schedule.h prints, end after start) and nothing more.
 */
#define _POSIX_C_SOURCE 200809L
#include "compare.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "csv_read.h"
#include "csv_table.h"
#include "schedule.h"

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
    char q[OC_QUOTE_MAX];
    metrics_path[0] = ops_path[0] = '\0';
    if (stat(arg, &sb) != 0)
        return oc_fail(st, "%s: %s", oc_quote(q, sizeof q, arg), strerror(errno));
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
        return oc_fail(st, "%s: holds no simulate.csv, measured.csv or sweep.csv",
                       oc_quote(q, sizeof q, arg));
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

/* The layout columns of row r: the sizes at least 1, the schedule and the
 * recompute mode names ocsim writes (layout.h), so that a mistyped or
 * foreign layout is refused rather than compared or called "different". */
static int read_knobs(const struct oc_csv_table *t, int64_t r, const int *kc,
                      struct oc_cmp_metrics *x, struct oc_status *st)
{
    int64_t *iv[] = {&x->tp, &x->pp, &x->dp, &x->micro_batch,
                     &x->num_micro_batches, &x->vchunks};
    for (int j = 0; j < K_SCHED; j++) {
        if (oc_csv_table_i64(t, r, kc[j], iv[j], st) != 0)
            return -1;
        if (*iv[j] < 1)
            return oc_fail(st, "%s:%lld: column '%s' must be at least 1 (got %lld)",
                           t->path, (long long)oc_csv_table_line(t, r), knob_names[j],
                           (long long)*iv[j]);
    }
    const char *sched = oc_csv_table_cell(t, r, kc[K_SCHED]);
    const char *recomp = oc_csv_table_cell(t, r, kc[K_RECOMP]);
    enum oc_schedule_kind sk;
    enum oc_recompute rk;
    int bad = -1;
    const char *known = NULL;
    if (oc_schedule_from_name(sched, &sk) != 0)
        bad = K_SCHED, known = "gpipe, 1f1b, interleaved";
    else if (oc_recompute_from_name(recomp, &rk) != 0)
        bad = K_RECOMP, known = "none, selective, full";
    char q[OC_QUOTE_MAX];
    if (bad >= 0)
        return oc_fail(st, "%s:%lld: column '%s': '%s' is not one of the names ocsim "
                           "writes (%s)",
                       t->path, (long long)oc_csv_table_line(t, r), knob_names[bad],
                       oc_quote(q, sizeof q, oc_csv_table_cell(t, r, kc[bad])), known);
    snprintf(x->schedule, sizeof x->schedule, "%s", sched);
    snprintf(x->recompute, sizeof x->recompute, "%s", recomp);
    return 0;
}

/* A compared quantity must be a finite number, not negative, and a step
 * time (and so tokens per second) above zero: NaN or inf passed as "within
 * tolerance" (an n/a error), a zero step time gave an error of -inf
 * (issue 11, defect 3). bubble_fraction is a fraction of the step. */
static int check_metric(const struct oc_csv_table *t, int64_t r, int col, int m,
                        double v, struct oc_status *st)
{
    const int positive = m == OC_CMP_STEP_TIME || m == OC_CMP_TOKENS_PER_S;
    const double hi = m == OC_CMP_BUBBLE_FRACTION ? 1.0 : INFINITY;
    if (isfinite(v) && (positive ? v > 0 : v >= 0) && v <= hi)
        return 0;
    char qc[OC_QUOTE_MAX];
    const long long line = (long long)oc_csv_table_line(t, r);
    const char *name = metric_names[m];
    oc_quote(qc, sizeof qc, oc_csv_table_cell(t, r, col));
    if (!isfinite(v))
        return oc_fail(st, "%s:%lld: column '%s': '%s' is not a finite number (a measured or "
                           "predicted quantity must be one)", t->path, line, name, qc);
    if (v > hi)
        return oc_fail(st, "%s:%lld: column '%s': '%s' is above 1 (it is a fraction of the "
                           "step)", t->path, line, name, qc);
    return oc_fail(st, "%s:%lld: column '%s': '%s' %s", t->path, line, name, qc,
                   positive ? "is not positive (a step takes time; an error relative to it "
                              "needs it above zero)"
                            : "is negative");
}

/* The table of a file (data NULL) or of len bytes in memory named path. */
static int read_table(const char *path, const char *data, size_t len,
                      struct oc_csv_table *t, struct oc_status *st)
{
    return data ? oc_csv_read_mem(path, data, len, t, st) : oc_csv_read(path, t, st);
}

static int metrics_read(const char *path, const char *data, size_t len,
                        struct oc_cmp_metrics **out, int64_t *n, struct oc_status *st)
{
    *out = NULL;
    *n = 0;
    struct oc_csv_table t;
    if (read_table(path, data, len, &t, st) != 0)
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
        if (read_knobs(&t, r, kc, x, st) != 0) {
            free(rows);
            goto fail;
        }
        for (int m = 0; m < OC_CMP_NMETRICS; m++)
            if (oc_csv_table_f64(&t, r, mc[m], &x->v[m], st) != 0 ||
                check_metric(&t, r, mc[m], m, x->v[m], st) != 0) {
                free(rows);
                goto fail;
            }
        x->line = oc_csv_table_line(&t, r);
        k++;
    }
    if (k == 0) {
        free(rows);
        oc_fail(st, "%s: no row with a step time (nothing was simulated or measured)", t.path);
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

int oc_cmp_metrics_read(const char *path, struct oc_cmp_metrics **out, int64_t *n,
                        struct oc_status *st)
{
    return metrics_read(path, NULL, 0, out, n, st);
}

int oc_cmp_metrics_read_mem(const char *name, const char *data, size_t len,
                            struct oc_cmp_metrics **out, int64_t *n,
                            struct oc_status *st)
{
    return metrics_read(name, data ? data : "", len, out, n, st);
}

int oc_cmp_same_layout(const struct oc_cmp_metrics *a, const struct oc_cmp_metrics *b)
{
    return a->tp == b->tp && a->pp == b->pp && a->dp == b->dp &&
           a->micro_batch == b->micro_batch &&
           a->num_micro_batches == b->num_micro_batches && a->vchunks == b->vchunks &&
           strcmp(a->schedule, b->schedule) == 0;
}

void oc_cmp_layout_str(const struct oc_cmp_metrics *m, char *buf, size_t n)
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
    char qh[OC_QUOTE_MAX], qc[OC_QUOTE_MAX];
    if (v < 0)
        return oc_fail(st, "%s:%lld: column '%s': '%s' is not one of the names ocsim writes",
                       t->path, (long long)oc_csv_table_line(t, r),
                       oc_quote(qh, sizeof qh, oc_csv_table_header(t, col)),
                       oc_quote(qc, sizeof qc, s));
    *out = (uint8_t)v;
    return 0;
}

static int ops_read(const char *path, const char *data, size_t len,
                    struct oc_cmp_ops *ops, struct oc_status *st)
{
    memset(ops, 0, sizeof *ops);
    struct oc_csv_table t;
    if (read_table(path, data, len, &t, st) != 0)
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
                    t.path, (long long)oc_csv_table_line(&t, r));
            goto fail;
        }
        if (!isfinite(a) || !isfinite(b)) {
            oc_fail(st, "%s:%lld: column '%s': %.9g is not a finite number", t.path,
                    (long long)oc_csv_table_line(&t, r), isfinite(a) ? "end_s" : "start_s",
                    isfinite(a) ? b : a);
            goto fail;
        }
        if (b < a) {
            oc_fail(st, "%s:%lld: end_s %.9g before start_s %.9g", t.path,
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
            oc_fail(st, "%s: rank %lld op %lld appears twice", t.path,
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

int oc_cmp_ops_read(const char *path, struct oc_cmp_ops *ops, struct oc_status *st)
{
    return ops_read(path, NULL, 0, ops, st);
}

int oc_cmp_ops_read_mem(const char *name, const char *data, size_t len,
                        struct oc_cmp_ops *ops, struct oc_status *st)
{
    return ops_read(name, data ? data : "", len, ops, st);
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
