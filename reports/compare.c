/* compare.c: prediction against measurement (see compare.h): the error
 * convention, the verdict, and oc_compare_run, which reads both sides
 * (compare_read.c), picks the row of a sweep, builds the metric and class
 * rows and pairs the ops (compare_pair.c). What is shown of it is in
 * compare_report.c.
 *
 * What it is not: a statistics package. Errors are plain relative errors
 * of totals; the scatter plot shows the spread per op for a person to read.
 */
#define _POSIX_C_SOURCE 200809L
#include "compare.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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
/* The comparison                                                       */

/* The unit each metric row is printed in (oc_cmp_metric_name gives its
 * name). */
static const char *const metric_units[OC_CMP_NMETRICS] = {
    [OC_CMP_STEP_TIME] = "s",     [OC_CMP_TOKENS_PER_S] = "tok/s",
    [OC_CMP_MFU] = "",            [OC_CMP_BUBBLE_FRACTION] = "",
    [OC_CMP_COMPUTE] = "s",       [OC_CMP_TP_COMM] = "s",
    [OC_CMP_PP_COMM] = "s",       [OC_CMP_DP_COMM] = "s",
    [OC_CMP_EXPOSED_COMM] = "s",  [OC_CMP_PEAK_MEM] = "B",
};

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
        char l[256], q[OC_QUOTE_MAX], q1[OC_QUOTE_MAX];
        oc_cmp_layout_str(one, l, sizeof l);
        return oc_fail(st, "%s: no row with the layout of %s (%s)", oc_quote(q, sizeof q, path),
                       oc_quote(q1, sizeof q1, one_path), l);
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
    char qp[OC_QUOTE_MAX], qm[OC_QUOTE_MAX];
    if (np > 1 && nm > 1) {
        oc_fail(st, "%s and %s both hold several layouts; give one of them as a "
                    "simulate.csv or measured.csv",
                oc_quote(qp, sizeof qp, c->pred_metrics), oc_quote(qm, sizeof qm, c->meas_metrics));
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
            oc_cmp_layout_str(&c->pred, a, sizeof a);
            oc_cmp_layout_str(&c->meas, b, sizeof b);
            oc_fail(st, "%s and %s are different layouts (%s; %s)",
                    oc_quote(qp, sizeof qp, c->pred_metrics),
                    oc_quote(qm, sizeof qm, c->meas_metrics), a, b);
            goto out;
        }
    }
    if (strcmp(c->pred.recompute, c->meas.recompute) != 0)
        note(c, "recompute differs: predicted with %s, measured with %s",
             c->pred.recompute, c->meas.recompute);

    const double tol = o->tolerance_pct;
    for (int m = 0; m < OC_CMP_NMETRICS; m++) {
        struct oc_cmp_row *r = add_row(c, oc_cmp_metric_name((enum oc_cmp_metric)m),
                                       metric_units[m], c->pred.v[m], c->meas.v[m]);
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
            snprintf(name, sizeof name, "%s_s", oc_cmp_class_name((enum oc_cmp_class)k));
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
