/* cmd_validate.c: `ocsim validate TABLE.csv...` predicts every row of
 * validation tables (published, measured runs) and compares: predicted
 * against measured per row with the error, the mean absolute percentage
 * error (MAPE) per table, DIR/validation.csv and the plot (reports/
 * validate_report.h). --mape X exits 1 when a table's MAPE is above X.
 *
 * A table is a CSV file, one measured run per row (docs/validation.md has
 * the format and the development set, validation/):
 *   - measured, unit, source: the number, its unit and where it comes from
 *     (every row names its source). Units: s/step (s, s/iter), ms/step,
 *     TFLOP/s (model FLOPs per GPU, core/closed_form.h's count, which is
 *     Megatron-LM's without recompute), GiB, GB, MiB, GB/s.
 *   - quantity: step_time, tflops_per_gpu (both simulated, as `ocsim
 *     simulate` does), memory_states (weights, gradients and optimizer
 *     states), memory_activations, memory_peak (core/memory.h, as `ocsim
 *     memory`; of the pipeline stage in column `stage`, default 0),
 *     layer_forward_time, layer_backward_time (one layer's ops in the
 *     full-fidelity replay's timeline), allreduce_busbw (one all-reduce of
 *     column `bytes` over `cards` GPUs, no model or layout:
 *     cmd_validate_coll.c). May be left out for s, ms, TFLOP/s and GB/s.
 *   - model: a shipped model name or a config.json path, or the
 *     config.json dimensions in columns of their names (hidden_size,
 *     num_attention_heads, num_hidden_layers, vocab_size, and optionally
 *     intermediate_size, num_key_value_heads, max_position_embeddings
 *     (default: seq), model_type (default gpt2), hidden_act,
 *     tie_word_embeddings).
 *   - topology: a shipped name or a path (relative paths of model and
 *     topology are relative to the table's folder).
 *   - the layout: the columns of `ocsim simulate`'s flags (cols[] below:
 *     cards, layout, tp, pp, dp, cp, micro_batch, global_batch, seq,
 *     schedule, vchunks, recompute, ...); a row goes through the same
 *     parser, layout check and replay as `ocsim simulate` with those flags.
 *   - name (a label), notes, and any other column: read as text or not at
 *     all (the columns not read are listed on stderr once per table).
 * Every row is read and checked before any simulation runs: bad input is
 * one line naming the file, the line and the column, exit 2.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "engine.h"
#include "memory.h"
#include "paths.h"
#include "validate_rows.h"

static void help(void)
{
    puts("usage: ocsim validate TABLE.csv [TABLE.csv ...] [--out DIR] [--mape X]\n"
         "                      [--fidelity fast|full|sym] [--max-cards N]\n\n"
         "Predicts every row of validation tables (measured training runs: step time,\n"
         "TFLOP/s per GPU, memory per GPU, one layer's forward or backward time, or an\n"
         "all-reduce's bus bandwidth) with the simulator and the memory model, and\n"
         "prints predicted against measured per row with the error (predicted - measured)\n"
         "/ measured, and the mean absolute percentage error (MAPE) per table. Writes\n"
         "DIR/validation.csv and DIR/validation.png and .svg (default DIR: out/validate).\n\n"
         "  --mape X        exit 1 when a table's MAPE is above X percent\n"
         "  --fidelity F    the simulation's fidelity where a row has no column\n"
         "                  'fidelity' (default sym, as ocsim sweep)\n"
         "  --max-cards N   skip (and list) the rows of more than N GPUs\n\n"
         "The table format (columns named after ocsim simulate's flags) is in\n"
         "docs/validation.md; the development set is validation/*.csv.");
}

static int parse_args(int argc, char **argv, struct vargs *a, struct oc_status *st)
{
    memset(a, 0, sizeof *a);
    a->out = "out/validate";
    a->fidelity = "sym";
    a->mape = -1;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        char q[OC_QUOTE_MAX];
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0)
            return 1;
        if (s[0] != '-') {
            if (a->ntables == (int)(sizeof a->tables / sizeof a->tables[0]))
                return oc_fail(st, "at most 64 tables");
            a->tables[a->ntables++] = s;
            continue;
        }
        if (i + 1 >= argc)
            return oc_fail(st, "%s needs a value (see --help)", oc_quote(q, sizeof q, s));
        const char *v = argv[++i];
        char *end;
        errno = 0;
        if (strcmp(s, "--out") == 0) {
            if (!*v)
                return oc_fail(st, "--out: an empty value (expected a path)");
            a->out = v;
        } else if (strcmp(s, "--fidelity") == 0) {
            if (strcmp(v, "fast") && strcmp(v, "full") && strcmp(v, "sym"))
                return oc_fail(st, "--fidelity: unknown mode '%s' (known: fast, full, sym)",
                               oc_quote(q, sizeof q, v));
            a->fidelity = v;
        } else if (strcmp(s, "--mape") == 0) {
            a->mape = strtod(v, &end);
            if (end == v || *end || errno || !(a->mape >= 0) || !isfinite(a->mape))
                return oc_fail(st, "--mape: '%s' is not a percentage >= 0",
                               oc_quote(q, sizeof q, v));
        } else if (strcmp(s, "--max-cards") == 0) {
            a->max_cards = strtoll(v, &end, 10);
            if (end == v || *end || errno || a->max_cards < 1)
                return oc_fail(st, "--max-cards: '%s' is not a positive integer",
                               oc_quote(q, sizeof q, v));
        } else {
            return oc_fail(st, "unknown option '%s' (see --help)", oc_quote(q, sizeof q, s));
        }
    }
    if (a->ntables == 0)
        return oc_fail(st, "a validation table is required (ocsim validate TABLE.csv; "
                           "see --help)");
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* In a child: one layer's forward and backward (with its recompute)
 * seconds, micro-batch 0, on rank 0: the sum of its layer-grain ops
 * (compute and the TP collectives between them) in the replay's timeline.
 * The layer is the middle one of those rank 0 holds (no embedding or head
 * in it). */
static int layer_child(void *arg, struct oc_sim_buf *out, struct oc_status *st)
{
    const struct vrow *v = arg;
    struct oc_metrics mt;
    struct oc_schedule s;
    struct oc_timeline tl;
    memset(&s, 0, sizeof s);
    memset(&tl, 0, sizeof tl);
    int rc = oc_replay_run(&v->o.model, &v->o.topo, &v->o.layout, &v->ro, &mt, &s, &tl, st);
    if (rc == 0) {
        const struct oc_rank_ops *ops = &s.ranks[0];
        int32_t lo = INT32_MAX, hi = -1;
        for (int64_t i = 0; i < ops->n; i++) {
            const struct oc_op *op = &ops->ops[i];
            if (op->kind == OC_OP_COMPUTE && op->layer_count == 1 && op->layer_first >= 0) {
                lo = op->layer_first < lo ? op->layer_first : lo;
                hi = op->layer_first > hi ? op->layer_first : hi;
            }
        }
        double t[2] = {0, 0};
        const int32_t k = lo + (hi - lo) / 2;
        for (int64_t i = 0; hi >= 0 && i < ops->n; i++) {
            const struct oc_op *op = &ops->ops[i];
            if (op->layer_first != k || op->layer_count != 1 || op->mb != 0 ||
                (op->kind != OC_OP_COMPUTE && op->kind != OC_OP_COLLECTIVE))
                continue;
            const double d = tl.end_s[0][i] - tl.start_s[0][i];
            if (op->phase == OC_PHASE_FWD)
                t[0] += d;
            else if (op->phase == OC_PHASE_BWD || op->phase == OC_PHASE_RECOMPUTE)
                t[1] += d;
        }
        if (hi < 0)
            rc = oc_fail(st, "rank 0 holds no layer");
        else
            oc_sim_buf_append(out, t, sizeof t);
    }
    oc_timeline_free(&tl);
    oc_schedule_free(&s);
    return rc;
}

/* Predicts one row (a simulation in a child, or the memory model). */
static void run_row(struct vrow *v, struct oc_val_row *out, const struct vargs *a)
{
    const struct oc_opts *o = &v->o;
    if (a->max_cards && o->cards > a->max_cards) {
        out->state = OC_VAL_SKIPPED;
        snprintf(out->note, sizeof out->note, "skipped: %lld cards > --max-cards %lld",
                 (long long)o->cards, (long long)a->max_cards);
        return;
    }
    const double t0 = now_s();
    out->fits = 1;
    if (v->q == Q_BUSBW) {
        struct oc_status st = {{0}};
        double bw = 0;
        if (oc_val_allreduce_busbw(v, &bw, &st) != 0) {
            out->state = OC_VAL_FAILED;
            snprintf(out->note, sizeof out->note, "failed: %.490s", st.msg);
            out->runtime_s = now_s() - t0;
            return;
        }
        out->predicted = bw / v->scale;
    } else if (v->q == Q_LAYER_FWD || v->q == Q_LAYER_BWD) {
        struct oc_sim_buf res = {0};
        struct oc_status st = {{0}};
        if (oc_sim_fork_run(layer_child, v, NULL, &res, &st) != 0 ||
            res.len != 2 * sizeof(double)) {
            out->state = OC_VAL_FAILED;
            snprintf(out->note, sizeof out->note, "failed: %.490s",
                     st.msg[0] ? st.msg : "the simulation returned no result");
            oc_sim_buf_free(&res);
            out->runtime_s = now_s() - t0;
            return;
        }
        const double *t = (const double *)res.data;
        out->predicted = t[v->q == Q_LAYER_BWD] / v->scale;
        oc_sim_buf_free(&res);
    } else if (v->q == Q_STEP || v->q == Q_TFLOPS) {
        struct oc_metrics mt;
        struct oc_status st = {{0}};
        if (oc_replay_run_forked(&o->model, &o->topo, &o->layout, &v->ro, &mt, 0, &st) != 0) {
            out->state = OC_VAL_FAILED;
            snprintf(out->note, sizeof out->note, "failed: %.490s", st.msg);
            out->runtime_s = now_s() - t0;
            return;
        }
        out->predicted = v->q == Q_STEP ? mt.step_time_s / v->scale : mt.tflops_per_gpu;
        out->fits = mt.fits;
    } else {
        struct oc_mem_breakdown b;
        oc_memory_stage(&o->model, &o->layout, v->stage, &b);
        const double bytes =
            v->q == Q_MEM_STATES ? b.weights_bytes + b.grads_bytes + b.optimizer_bytes
            : v->q == Q_MEM_ACT  ? b.activations_bytes + b.logits_bytes
                                 : b.total_bytes;
        out->predicted = bytes / v->scale;
        out->fits = b.total_bytes <= o->topo.device.memory_bytes;
    }
    out->runtime_s = now_s() - t0;
    out->error_pct = 100.0 * (out->predicted - out->measured) / out->measured;
    out->state = OC_VAL_OK;
    if (!out->fits)
        snprintf(out->note, sizeof out->note, "predicted not to fit the device");
}

static void print_row(const struct oc_val_row *r)
{
    printf("  %5lld %-22.22s %6lld %12.5g %12.5g %-9.9s", (long long)r->line, r->label,
           (long long)r->cards, r->measured,
           r->state == OC_VAL_OK ? r->predicted : NAN, r->unit);
    if (r->state == OC_VAL_OK)
        printf(" %+7.1f%% %7.1f s  %s%s%s\n", r->error_pct, r->runtime_s, r->layout,
               r->note[0] ? "  (" : "", r->note[0] ? "predicted not to fit)" : "");
    else
        printf("      -- %7.1f s  %s  %s\n", r->runtime_s, r->layout, r->note);
    fflush(stdout);
}

/* Prints the table's summary; returns its MAPE (NAN without a row). */
static double summary(const struct oc_val_row *rows, int64_t n)
{
    double sum = 0, sum_signed = 0, worst = 0;
    int64_t k = 0, worst_line = 0, skipped = 0, failed = 0;
    for (int64_t i = 0; i < n; i++) {
        if (rows[i].state == OC_VAL_SKIPPED)
            skipped++;
        if (rows[i].state == OC_VAL_FAILED)
            failed++;
        if (rows[i].state != OC_VAL_OK)
            continue;
        const double e = rows[i].error_pct;
        sum += fabs(e);
        sum_signed += e;
        if (fabs(e) >= fabs(worst))
            worst = e, worst_line = rows[i].line;
        k++;
    }
    if (k == 0) {
        printf("  MAPE: no row compared (%lld skipped, %lld failed)\n", (long long)skipped,
               (long long)failed);
        return NAN;
    }
    printf("  MAPE %.1f%% over %lld rows (mean signed error %+.1f%%; worst line %lld, "
           "%+.1f%%)", sum / (double)k, (long long)k, sum_signed / (double)k,
           (long long)worst_line, worst);
    if (skipped || failed)
        printf("; %lld skipped, %lld failed", (long long)skipped, (long long)failed);
    printf("\n");
    return sum / (double)k;
}

int oc_cmd_validate(int argc, char **argv)
{
    struct vargs a;
    struct oc_status st = {{0}};
    const int prc = parse_args(argc, argv, &a, &st);
    if (prc == 1) {
        help();
        return 0;
    }
    if (prc != 0) {
        fprintf(stderr, "ocsim validate: %s\n", st.msg);
        return 2;
    }
    struct oc_csv_table tabs[64];
    memset(tabs, 0, sizeof tabs);
    struct vrow *vr = NULL;
    struct oc_val_row *rows = NULL;
    int64_t n = 0;
    int rc = 0;
    if (oc_val_read_tables(&a, tabs, &vr, &rows, &n, &st) != 0 || oc_mkdir_p(a.out, &st) != 0) {
        fprintf(stderr, "ocsim validate: %s\n", st.msg);
        rc = 2;
        goto done;
    }
    for (int i = 0; i < a.ntables; i++) /* after the checks: exit 2 is one line */
        oc_val_note_unread(&tabs[i]);
    int64_t k = 0, failed = 0;
    for (int i = 0; i < a.ntables; i++) {
        printf("%s: %lld rows\n  %5s %-22s %6s %12s %12s %-9s %8s %9s  %s\n", tabs[i].path,
               (long long)tabs[i].nrows, "line", "name", "cards", "measured", "predicted",
               "unit", "error", "runtime", "layout");
        const int64_t first = k;
        for (int64_t r = 0; r < tabs[i].nrows; r++, k++) {
            run_row(&vr[k], &rows[k], &a);
            failed += rows[k].state == OC_VAL_FAILED;
            print_row(&rows[k]);
        }
        const double mape = summary(rows + first, k - first);
        if (a.mape >= 0 && isfinite(mape) && mape > a.mape) {
            printf("  MAPE %.1f%% is above --mape %g%%\n", mape, a.mape);
            rc = 1;
        }
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/validation.csv", a.out);
    if (oc_val_write_csv(path, rows, n, &st) != 0) {
        fprintf(stderr, "ocsim validate: %s\n", st.msg);
        rc = 2;
        goto done;
    }
    struct oc_plot_opts po = OC_PLOT_OPTS_DEFAULT;
    const int plrc = oc_val_plot(a.out, rows, n, &po, &st);
    if (plrc < 0) {
        fprintf(stderr, "ocsim validate: %s\n", st.msg);
        rc = 2;
        goto done;
    }
    if (plrc > 0)
        fprintf(stderr, "ocsim validate: warning: %s\n", st.msg);
    printf("wrote %s, %s/validation.%s\n", path, a.out, plrc > 0 ? "gp" : "png");
    if (failed) {
        fprintf(stderr, "ocsim validate: %lld rows failed to simulate (see above)\n",
                (long long)failed);
        if (rc == 0)
            rc = 1;
    }
done:
    for (int i = 0; i < a.ntables; i++)
        oc_csv_table_free(&tabs[i]);
    free(vr);
    free(rows);
    return rc;
}
