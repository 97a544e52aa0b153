/* cmd_simulate_var.c: `ocsim simulate --variability SPEC --steps N --seed S`:
 * stragglers and jitter. Step s (0..N-1) is one replay with the seeded
 * noise of core/variability.h (sim/replay_var.c applies it), each in a
 * child process as every replay; the ideal step is the same replay with
 * every CV 0 and no slow device (bit for bit today's FAST or FULL replay
 * without the steady-state fold). Reports the mean, p50 and p99 step time
 * and the loss of the mean against the ideal, and writes the per-step
 * times. What it is not: a sweep (the ranking by expected throughput is
 * not built; see docs/guide.md). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv_table.h"
#include "format.h"
#include "simulate_var.h"
#include "var_sample.h"
#include "variability.h"

int oc_simulate_var_check(const struct oc_opts *o, struct oc_variability *v,
                          struct oc_status *st)
{
    if (!o->variability) {
        if (o->exec.steps_given)
            return oc_fail(st, "--steps samples steps under --variability, which is missing");
        if (o->exec.seed_given)
            return oc_fail(st, "--seed seeds --variability, which is missing");
        return 0;
    }
    return oc_var_spec_read(o, v, st);
}

int oc_var_spec_read(const struct oc_opts *o, struct oc_variability *v, struct oc_status *st)
{
    if (oc_var_parse(o->variability, v, st) != 0)
        return -1;
    if (o->exec.steps_given && o->exec.steps > OC_VAR_MAX_STEPS)
        return oc_fail(st, "--steps %lld: at most %d sampled steps", (long long)o->exec.steps,
                       OC_VAR_MAX_STEPS);
    v->seed = o->exec.seed;
    return 0;
}

static int write_csvs(const char *out, const double *x, int64_t n, double ideal,
                      const struct oc_variability *v, int64_t nslow,
                      const struct oc_var_stats *s, struct oc_status *st)
{
    char path[4200];
    struct oc_csv c = {0};
    static const char *const cols[] = {"step", "step_time_s", "vs_ideal"};
    snprintf(path, sizeof path, "%s/variability.csv", out);
    if (oc_csv_open(&c, path, cols, 3, st) != 0)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        oc_csv_field_i64(&c, i);
        oc_csv_field_f64(&c, x[i]);
        oc_csv_field_f64(&c, x[i] / ideal);
        oc_csv_end_row(&c);
    }
    if (oc_csv_close(&c, st) != 0)
        return -1;
    static const char *const scols[] = {
        "steps", "seed", "compute_cv", "slow_fraction", "slow_devices", "slowdown", "link_cv",
        "ideal_s", "mean_s", "p50_s", "p99_s", "min_s", "max_s", "loss_mean"};
    snprintf(path, sizeof path, "%s/variability_summary.csv", out);
    struct oc_csv c2 = {0};
    if (oc_csv_open(&c2, path, scols, 14, st) != 0)
        return -1;
    oc_csv_field_i64(&c2, n);
    oc_csv_field_i64(&c2, (int64_t)v->seed);
    oc_csv_field_f64(&c2, v->compute_cv);
    oc_csv_field_f64(&c2, v->slow_frac);
    oc_csv_field_i64(&c2, nslow);
    oc_csv_field_f64(&c2, v->slowdown);
    oc_csv_field_f64(&c2, v->link_cv);
    const double f[] = {ideal, s->mean, s->p50, s->p99, s->min, s->max, s->mean / ideal - 1};
    for (int i = 0; i < 7; i++)
        oc_csv_field_f64(&c2, f[i]);
    oc_csv_end_row(&c2);
    return oc_csv_close(&c2, st);
}

static void print_slow(const struct oc_variability *v, int64_t world)
{
    unsigned char *slow = oc_var_slow_set(v, world);
    const int64_t n = oc_var_slow_count(v, world);
    if (!slow) {
        printf("no slow device");
        if (v->slow_frac > 0)
            printf(" (%g x %" PRId64 " rounds to 0)", v->slow_frac, world);
        return;
    }
    printf("%" PRId64 " of %" PRId64 " devices %gx slower (rank", n, world, v->slowdown);
    int64_t shown = 0;
    for (int64_t r = 0; r < world && shown < 8; r++)
        if (slow[r])
            printf("%s %" PRId64, shown++ ? "," : "", r);
    printf("%s)", n > 8 ? ", ..." : "");
    free(slow);
}

int oc_simulate_var_run(const struct oc_opts *o, const struct oc_replay_opts *ro,
                        const struct oc_variability *v, const char *out)
{
    struct oc_status st = {{0}};
    const int64_t n = o->exec.steps_given ? o->exec.steps : 100;
    const int64_t world = oc_layout_world(&o->layout);
    struct oc_metrics mt;
    double ideal = 0;
    double *x = oc_xmalloc((size_t)n * sizeof *x);
    fflush(stdout);
    if (oc_var_sample(&o->model, &o->topo, &o->layout, ro, v, n, 0, &ideal, x, &mt, &st) !=
        0) {
        fprintf(stderr, "ocsim simulate: %s\n", st.msg);
        free(x);
        return 2;
    }
    const double tokens = mt.tokens_per_s * ideal; /* tokens per step */
    struct oc_replay_opts r = *ro;
    r.var = v;
    struct oc_var_stats s;
    oc_var_stats(x, n, &s);

    char name[128], b[8][32];
    oc_layout_format(&o->layout, name, sizeof name);
    printf("%s, %s on %lld x %s, global batch %lld, seq %lld\n", o->model.name, name,
           (long long)o->cards, o->topo.device.name, (long long)o->layout.global_batch,
           (long long)o->layout.seq_length);
    printf("variability: compute CV %g, link CV %g, ", v->compute_cv, v->link_cv);
    print_slow(v, world);
    printf("; seed %llu, %lld steps\n", (unsigned long long)v->seed, (long long)n);
    printf("fidelity: %s, every micro-batch simulated (the symmetric mode and the steady-state\n"
           "  fold assume alike replicas and periods: off under variability)\n",
           oc_replay_fidelity_used(&r) == OC_SIM_FULL ? "full" : "fast");
    printf("  ideal step       %s (no noise)\n", oc_fmt_si(b[0], 32, ideal, "s"));
    printf("  mean step        %s   %+.2f%% against the ideal\n",
           oc_fmt_si(b[1], 32, s.mean, "s"), 100 * (s.mean / ideal - 1));
    printf("  p50 step         %s   %+.2f%%\n", oc_fmt_si(b[2], 32, s.p50, "s"),
           100 * (s.p50 / ideal - 1));
    printf("  p99 step         %s   %+.2f%%\n", oc_fmt_si(b[3], 32, s.p99, "s"),
           100 * (s.p99 / ideal - 1));
    printf("  min / max        %s / %s\n", oc_fmt_si(b[4], 32, s.min, "s"),
           oc_fmt_si(b[5], 32, s.max, "s"));
    printf("  tokens/s (mean)  %s   ideal %s\n", oc_fmt_si(b[6], 32, tokens / s.mean, ""),
           oc_fmt_si(b[7], 32, tokens / ideal, ""));
    int rc = write_csvs(out, x, n, ideal, v, oc_var_slow_count(v, world), &s, &st);
    free(x);
    if (rc != 0) {
        fprintf(stderr, "ocsim simulate: %s\n", st.msg);
        return 2;
    }
    printf("wrote %s/variability.csv, %s/variability_summary.csv\n", out, out);
    return 0;
}
