/* cmd_goodput.c: `ocsim goodput`, failures, checkpoints and goodput of a
 * long run of one layout: the checkpoint's size and save time from the
 * layout's model state, the job's mean time between failures, the best
 * checkpoint interval (Young, Daly), the expected useful fraction of wall
 * time (core/goodput.h) and a seeded simulation of the run with Poisson
 * failures over many trials; goodput.csv, trials.csv and a plot of goodput
 * against the interval in --out.
 *
 * Its own flags (goodput_flag) are taken out of argv first; the rest
 * (--cards, --model, the layout, the simulation's) go to cli/options.c as
 * `ocsim simulate` parses them. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "csv_table.h"
#include "format.h"
#include "goodput.h"
#include "goodput_flags.h"
#include "options.h"
#include "paths.h"
#include "plot_goodput.h"
#include "replay.h"
#include "sim_opts.h"

#define GROUPS (OC_OPT_LAYOUT | OC_OPT_OUT | OC_OPT_SIM | OC_OPT_RESERVE)

/* The most segments (checkpoint intervals) the simulation steps through at
 * one interval, over all trials: a few nanoseconds each, seconds in all.
 * So the best interval is taken at least horizon * trials / SEGMENTS_MAX
 * (8.6 s for 1000 trials of 30 days: only a save time near zero puts the
 * optimum there), the curve starts at horizon * CURVE_TRIALS_MAX *
 * CURVE_MAX / SEGMENTS_MAX (74 s in 30 days: its points share the
 * budget), and an asked interval beyond the budget is refused, as are
 * more failures than the budget (a restart is stepped through per
 * failure). */
#define SEGMENTS_MAX 3e8
/* Points of the interval curve, and trials per point (fewer than --trials:
 * the curve shows the trend, the asked interval gets the full count). */
#define CURVE_POINTS 41
#define CURVE_TRIALS_MAX 200
#define CURVE_MAX (CURVE_POINTS + 2)


static void help(void)
{
    puts("usage: ocsim goodput --cards N --layout tp8-pp4-dp2 [--model M] [--topology T]\n"
         "                     [--step-time T] [--days 30] [--failures F | --mtbf T |\n"
         "                     --failure-rate R[/gpu-hour|/node-hour]] [--interval T]\n"
         "                     [--save-time T] [--restart-time T] [--out DIR] [...]\n\n"
         "Failures, checkpoints and goodput of a long run of one layout. The checkpoint\n"
         "is the layout's model state (weights and optimizer states per rank, as\n"
         "`ocsim memory` sizes them, sharded as the layout shards them); its save\n"
         "takes the busiest node's bytes over the node's storage bandwidth or the\n"
         "whole over the file system's, whichever is longer. Failures are a Poisson\n"
         "process of the job's MTBF. Prints the best interval (Young 1974, Daly\n"
         "2006 and the exact optimum of Daly's expected time), the expected useful\n"
         "fraction of wall time at the asked interval and at the best, and the\n"
         "distribution over --trials seeded simulations of --days (mean, p5, p50,\n"
         "p95). Writes DIR/goodput.csv (goodput against interval), DIR/trials.csv\n"
         "(one row per trial at the asked interval) and DIR/goodput.png and .svg\n"
         "(default DIR: out/goodput). Exit code 0, or 2 on bad input.\n\n"
         "Times take a unit: 90s, 30m (or 30min), 2h, 1.5d; a bare number is seconds.\n"
         "Sizes: 1.2TB, 800GB; bandwidths: 50GB/s, 400Gb/s (bits), a bare number\n"
         "bytes or bytes per second.\n\n"
         "Goodput options:\n"
         "  --step-time T       one training step (default: simulated, as `ocsim\n"
         "                      simulate` does); intervals round to whole steps\n"
         "  --days D            the run's length (30)\n"
         "  --failures F        F failures over --days: MTBF = days / F (the seeds'\n"
         "                      case: --days 30 --failures 17)\n"
         "  --mtbf T            the job's mean time between failures\n"
         "  --failure-rate R    failures per GPU-hour (R/gpu-hour) or per node-hour\n"
         "                      (R/node-hour); default 1.97e-5/gpu-hour, Llama 3's\n"
         "                      419 interruptions in 54 days on 16,384 GPUs (Dubey et\n"
         "                      al. 2024, section 3.3.4)\n"
         "  --interval T        compute between checkpoints (T, or Nsteps); default\n"
         "                      the best\n"
         "  --save-time T       a measured blocking save (ocsim-exec --save prints\n"
         "                      \"checkpoint: saved ... in T\"); default size / bandwidth\n"
         "  --exec-log FILE     ocsim-exec's output: the mean of its measured saves\n"
         "  --load-time T       a measured load; default size / read bandwidth\n"
         "  --checkpoint-size B the whole checkpoint (default: the layout's state)\n"
         "  --write-bw-node BW  storage write bandwidth per node (50GB/s, ESTIMATE)\n"
         "  --write-bw-total BW the file system's aggregate write (2TB/s, Llama 3)\n"
         "  --read-bw-node BW   per node read (50GB/s)\n"
         "  --read-bw-total BW  aggregate read (2TB/s)\n"
         "  --restart-time T    failure to restart beyond loading (10m, ESTIMATE)\n"
         "  --trials N          simulated runs (1000; at most 100000)\n"
         "  --seed S            the failures' seed (1): same seed, same numbers\n");
    oc_opts_print_help(stdout, GROUPS);
}

/* ---- the run's parameters -------------------------------------------------- */

/* What the command derives before simulating. */
struct plan {
    double step_s;
    int step_simulated;
    double tokens_per_step; /* global batch x sequence length */
    double mtbf_s;
    char mtbf_why[160];
    struct oc_goodput_ckpt ckpt;
    double save_s, load_s;
    struct oc_goodput_params p;
    double horizon_s;
    double tau_s;          /* asked (or best) interval, whole steps */
    double young_s, daly_s, best_s;  /* best_s: whole steps */
    int best_clamped;      /* 1: raised to the simulation's grain, 2: cut
                              to half the run */
};

/* tau rounded to whole steps (at least one) when the step is known. */
static double whole_steps(double tau_s, double step_s)
{
    if (step_s <= 0)
        return tau_s;
    const double k = floor(tau_s / step_s + 0.5);
    return (k < 1 ? 1 : k) * step_s;
}

static void plan_mtbf(const struct oc_opts *o, const struct oc_goodput_flags *g, struct plan *pl)
{
    const int64_t nodes = oc_topology_nodes(&o->topo, o->cards);
    if (g->failures > 0) {
        pl->mtbf_s = g->days * 86400 / g->failures;
        snprintf(pl->mtbf_why, sizeof pl->mtbf_why, "%g failures in %g days (--failures)",
                 g->failures, g->days);
    } else if (g->mtbf_s > 0) {
        pl->mtbf_s = g->mtbf_s;
        snprintf(pl->mtbf_why, sizeof pl->mtbf_why, "--mtbf");
    } else if (g->rate > 0 && g->rate_per_node) {
        pl->mtbf_s = 3600 / (g->rate * (double)nodes);
        snprintf(pl->mtbf_why, sizeof pl->mtbf_why, "%.3g per node-hour x %lld nodes",
                 g->rate, (long long)nodes);
    } else {
        const double r = g->rate > 0 ? g->rate : OC_GOODPUT_RATE_PER_GPU_HOUR;
        pl->mtbf_s = 3600 / (r * (double)o->cards);
        snprintf(pl->mtbf_why, sizeof pl->mtbf_why, "%.3g per GPU-hour x %lld GPUs%s", r,
                 (long long)o->cards,
                 g->rate > 0 ? "" : " (Llama 3: 419 in 54 days on 16,384 GPUs)");
    }
}

static void plan_ckpt(const struct oc_opts *o, const struct oc_goodput_flags *g, struct plan *pl)
{
    oc_goodput_ckpt_size(&o->model, &o->layout, o->topo.gpus_per_node, &pl->ckpt);
    if (g->ckpt_bytes > 0) {
        /* the given size, spread over the writers as the layout's is */
        const double k = pl->ckpt.total_bytes > 0 ? g->ckpt_bytes / pl->ckpt.total_bytes : 0;
        pl->ckpt.total_bytes = g->ckpt_bytes;
        pl->ckpt.max_node_bytes *= k;
        pl->ckpt.max_rank_bytes *= k;
    }
    pl->save_s = g->save_s >= 0 ? g->save_s
                                : oc_goodput_io_s(&pl->ckpt, g->wbw_node, g->wbw_total);
    pl->load_s = g->load_s >= 0 ? g->load_s
                                : oc_goodput_io_s(&pl->ckpt, g->rbw_node, g->rbw_total);
}

static int plan_step(const struct oc_opts *o, const struct oc_goodput_flags *g, struct plan *pl,
                     struct oc_status *st)
{
    if (g->step_s > 0) {
        pl->step_s = g->step_s;
        return 0;
    }
    struct oc_replay_opts ro;
    struct oc_metrics mt;
    if (oc_opts_replay(o, &ro, st) != 0)
        return -1;
    fflush(stdout);
    if (oc_replay_run_forked(&o->model, &o->topo, &o->layout, &ro, &mt, 0, st) != 0)
        return -1;
    if (!(mt.step_time_s > 0 && isfinite(mt.step_time_s)))
        return oc_fail(st, "the simulation gave no step time (give --step-time)");
    pl->step_s = mt.step_time_s;
    pl->step_simulated = 1;
    return 0;
}

static int make_plan(const struct oc_opts *o, const struct oc_goodput_flags *g, struct plan *pl,
                     struct oc_status *st)
{
    memset(pl, 0, sizeof *pl);
    if (plan_step(o, g, pl, st) != 0)
        return -1;
    pl->tokens_per_step = (double)o->layout.global_batch * (double)o->layout.seq_length;
    plan_mtbf(o, g, pl);
    plan_ckpt(o, g, pl);
    pl->horizon_s = g->days * 86400;
    pl->p.mtbf_s = pl->mtbf_s;
    pl->p.save_s = pl->save_s;
    pl->p.restart_s = g->restart_s + pl->load_s;
    pl->young_s = oc_goodput_young_interval(pl->save_s, pl->mtbf_s);
    pl->daly_s = oc_goodput_daly_interval(pl->save_s, pl->mtbf_s);
    /* the exact optimum, then the better of its two neighbouring whole steps */
    const double b = oc_goodput_best_interval(&pl->p);
    const double lo = whole_steps(b, pl->step_s), hi = lo + pl->step_s;
    pl->best_s = pl->step_s > 0 && oc_goodput_expected(&pl->p, hi) >
                                       oc_goodput_expected(&pl->p, lo) ? hi : lo;
    /* within what the simulation steps through and the run's half (an
     * optimum beyond it: fewer than about two failures expected) */
    const double n = (double)(g->trials > CURVE_TRIALS_MAX ? g->trials : CURVE_TRIALS_MAX);
    const double grain = pl->horizon_s * n / SEGMENTS_MAX;
    if (pl->best_s < grain) {
        pl->best_s = whole_steps(grain, pl->step_s);
        pl->best_clamped = 1;
    }
    if (pl->best_s > pl->horizon_s / 2) {
        /* whole steps, rounded down (a step is shorter than the run: the
         * interval check below holds it) */
        pl->best_s = fmax(1, floor(pl->horizon_s / 2 / pl->step_s)) * pl->step_s;
        pl->best_clamped = 2;
    }
    if (g->interval_steps > 0)
        pl->tau_s = g->interval_steps * pl->step_s;
    else if (g->interval_s > 0)
        pl->tau_s = whole_steps(g->interval_s, pl->step_s);
    else
        pl->tau_s = pl->best_s;
    if (pl->tau_s >= pl->horizon_s)
        return oc_fail(st, "a checkpoint interval of %g h (whole steps of %g s) is not "
                           "shorter than the run (--days %g)", pl->tau_s / 3600, pl->step_s,
                       g->days);
    const double fails = pl->horizon_s / pl->mtbf_s;
    if (fails * (double)g->trials > SEGMENTS_MAX)
        return oc_fail(st, "an MTBF of %.3g s is %.3g failures in %g days; x %lld trials is "
                           "more than %.0e to simulate (fewer --trials or failures)",
                       pl->mtbf_s, fails, g->days, (long long)g->trials, SEGMENTS_MAX);
    const double segs = pl->horizon_s / (pl->tau_s + pl->save_s);
    if ((g->interval_s > 0 || g->interval_steps > 0) && segs * (double)g->trials > SEGMENTS_MAX)
        return oc_fail(st, "--trials %lld runs of %.3g checkpoints each is more than %.0e "
                           "intervals to simulate (fewer --trials, a longer --interval or "
                           "fewer --days)", (long long)g->trials, segs, SEGMENTS_MAX);
    return 0;
}

/* ---- simulation and output -------------------------------------------------- */

/* The trials at one interval: the useful fractions into frac (n), the
 * sums of the runs' parts into *sum. */
static void run_trials(const struct plan *pl, double tau_s, uint64_t seed, int64_t n,
                       double *frac, struct oc_goodput_run *sum)
{
    memset(sum, 0, sizeof *sum);
    for (int64_t i = 0; i < n; i++) {
        struct oc_goodput_run r;
        oc_goodput_simulate(&pl->p, tau_s, pl->horizon_s, seed, i, &r);
        frac[i] = r.useful_s / pl->horizon_s;
        sum->useful_s += r.useful_s;
        sum->save_s += r.save_s;
        sum->lost_s += r.lost_s;
        sum->restart_s += r.restart_s;
        sum->failures += r.failures;
    }
}

static const char *minutes(char *b, size_t n, double s)
{
    if (s < 120)
        snprintf(b, n, "%.1f s", s);
    else if (s < 3 * 3600)
        snprintf(b, n, "%.1f min", s / 60);
    else
        snprintf(b, n, "%.2f h", s / 3600);
    return b;
}

static void print_interval(const struct plan *pl, const char *what, double tau_s,
                           const double *frac, int64_t n, const struct oc_goodput_run *sum)
{
    char b[32];
    const double e = oc_goodput_expected(&pl->p, tau_s);
    struct oc_goodput_stats s;
    double *v = oc_xmalloc((size_t)n * sizeof *v);
    memcpy(v, frac, (size_t)n * sizeof *v);
    oc_goodput_stats(v, n, &s);
    free(v);
    printf("%s %s", what, minutes(b, sizeof b, tau_s));
    if (pl->step_s > 0)
        printf(" (%.0f steps)", floor(tau_s / pl->step_s + 0.5));
    printf(": expected goodput %.2f%%, lost %.2f%% (%.1f h of %.0f h)\n", 100 * e,
           100 * (1 - e), (1 - e) * pl->horizon_s / 3600, pl->horizon_s / 3600);
    const double h = pl->horizon_s * (double)n;
    printf("  simulated: mean %.2f%%, p5 %.2f%%, p50 %.2f%%, p95 %.2f%%; %.1f failures per "
           "run\n", 100 * s.mean, 100 * s.p5, 100 * s.p50, 100 * s.p95,
           (double)sum->failures / (double)n);
    printf("  lost, mean: saves %.2f%%, work redone %.2f%%, restarts %.2f%%\n",
           100 * sum->save_s / h, 100 * sum->lost_s / h, 100 * sum->restart_s / h);
    /* the useful fraction as training done: steps, and their tokens, to
     * four digits in one unit so that the spread shows */
    const double steps = pl->horizon_s / pl->step_s, tok = s.mean * steps * pl->tokens_per_step;
    static const char *const unit[] = {"", " k", " M", " G", " T", " P"};
    int u = 0;
    while (u < 5 && tok >= 1e3 * pow(1e3, u))
        u++;
    const double k = pow(1e3, u) / (steps * pl->tokens_per_step);
    printf("  useful work: mean %.0f steps, %.4g%s tokens (p5 %.4g%s, p95 %.4g%s)\n",
           s.mean * steps, s.mean / k, unit[u], s.p5 / k, unit[u], s.p95 / k, unit[u]);
}

static void print_plan(const struct oc_opts *o, const struct oc_goodput_flags *g,
                       const struct plan *pl)
{
    char name[128], b[6][32];
    oc_layout_format(&o->layout, name, sizeof name);
    printf("# %s, %s on %lld x %s (%lld node%s), %g days\n", o->model.name, name,
           (long long)o->cards, o->topo.device.name, (long long)pl->ckpt.nodes,
           pl->ckpt.nodes > 1 ? "s" : "", g->days);
    printf("step time     %s (%s)\n", oc_fmt_si(b[0], 32, pl->step_s, "s"),
           pl->step_simulated ? "simulated" : "--step-time");
    printf("failures      MTBF %.3g h: %s; %.1f expected in the run\n", pl->mtbf_s / 3600,
           pl->mtbf_why, pl->horizon_s / pl->mtbf_s);
    printf("checkpoint    %s%s, %lld writing ranks, busiest node %s\n",
           oc_fmt_si(b[1], 32, pl->ckpt.total_bytes, "B"),
           g->ckpt_bytes > 0 ? " (--checkpoint-size)" : " (weights + optimizer states)",
           (long long)pl->ckpt.writers, oc_fmt_si(b[2], 32, pl->ckpt.max_node_bytes, "B"));
    char from[64] = "";
    if (g->exec_saves > 0)
        snprintf(from, sizeof from, " (--exec-log: mean of %lld saves)",
                 (long long)g->exec_saves);
    else if (g->save_s >= 0)
        snprintf(from, sizeof from, " (--save-time)");
    printf("save          %s%s; load %s%s; restart %s + load = %s\n",
           oc_fmt_si(b[3], 32, pl->save_s, "s"), from,
           oc_fmt_si(b[4], 32, pl->load_s, "s"), g->load_s >= 0 ? " (--load-time)" : "",
           minutes(b[5], 32, g->restart_s), minutes(b[0], 32, pl->p.restart_s));
    printf("best interval Young %s, Daly %s, exact %s%s\n", minutes(b[1], 32, pl->young_s),
           minutes(b[2], 32, pl->daly_s), minutes(b[3], 32, pl->best_s),
           pl->best_clamped == 1   ? " (the simulation's grain: the optimum is shorter)"
           : pl->best_clamped == 2 ? " (half the run: the optimum is longer)"
                                   : "");
}

static const char *const curve_cols[] = {
    "interval_s", "interval_steps", "expected_goodput", "sim_mean", "sim_p5", "sim_p50",
    "sim_p95", "failures_mean",
};
static const char *const trial_cols[] = {
    "trial", "failures", "useful_s", "save_s", "lost_s", "restart_s", "goodput",
};

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The curve's intervals: CURVE_POINTS log-spaced from best/20 to best*20
 * (at most half the run), in whole steps, with the best and the asked
 * one among them; sorted, each once. Returns how many (<= CURVE_MAX). */
static int curve_intervals(const struct plan *pl, double *tau)
{
    /* the curve's points share one budget of SEGMENTS_MAX */
    const double grain = pl->horizon_s * CURVE_TRIALS_MAX * CURVE_MAX / SEGMENTS_MAX;
    const double lo = log(fmax(pl->best_s / 20, grain)),
                 hi = log(fmin(pl->best_s * 20, pl->horizon_s / 2));
    int n = 0;
    for (int i = 0; i < CURVE_POINTS; i++)
        tau[n++] = whole_steps(exp(lo + (hi - lo) * i / (CURVE_POINTS - 1)), pl->step_s);
    tau[n++] = pl->best_s;
    tau[n++] = pl->tau_s;
    qsort(tau, (size_t)n, sizeof *tau, cmp_double);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (k == 0 || tau[i] > tau[k - 1] * (1 + 1e-12))
            tau[k++] = tau[i];
    return k;
}

/* goodput.csv and the plot's points: the closed form and the simulation
 * (CURVE_TRIALS_MAX trials at most) at each interval of curve_intervals. */
static int write_curve(const char *out, const struct plan *pl, const struct oc_goodput_flags *g,
                       struct oc_goodput_point *pts, int *npts, struct oc_status *st)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/goodput.csv", out);
    struct oc_csv c = {0};
    if (oc_csv_open(&c, path, curve_cols, 8, st) != 0)
        return -1;
    const int64_t n = g->trials < CURVE_TRIALS_MAX ? g->trials : CURVE_TRIALS_MAX;
    double *frac = oc_xmalloc((size_t)n * sizeof *frac);
    double taus[CURVE_MAX];
    *npts = curve_intervals(pl, taus);
    for (int i = 0; i < *npts; i++) {
        const double tau = taus[i];
        struct oc_goodput_run sum;
        struct oc_goodput_stats s;
        run_trials(pl, tau, g->seed, n, frac, &sum);
        oc_goodput_stats(frac, n, &s);
        pts[i] = (struct oc_goodput_point){tau, oc_goodput_expected(&pl->p, tau), s.mean,
                                           s.p5, s.p95};
        oc_csv_field_f64(&c, tau);
        oc_csv_field_f64(&c, pl->step_s > 0 ? floor(tau / pl->step_s + 0.5) : 0);
        oc_csv_field_f64(&c, pts[i].expected);
        oc_csv_field_f64(&c, s.mean);
        oc_csv_field_f64(&c, s.p5);
        oc_csv_field_f64(&c, s.p50);
        oc_csv_field_f64(&c, s.p95);
        oc_csv_field_f64(&c, (double)sum.failures / (double)n);
        oc_csv_end_row(&c);
    }
    free(frac);
    return oc_csv_close(&c, st);
}

static int write_trials(const char *out, const struct plan *pl, const struct oc_goodput_flags *g,
                        struct oc_status *st)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/trials.csv", out);
    struct oc_csv c = {0};
    if (oc_csv_open(&c, path, trial_cols, 7, st) != 0)
        return -1;
    for (int64_t i = 0; i < g->trials; i++) {
        struct oc_goodput_run r;
        oc_goodput_simulate(&pl->p, pl->tau_s, pl->horizon_s, g->seed, i, &r);
        oc_csv_field_i64(&c, i);
        oc_csv_field_i64(&c, r.failures);
        oc_csv_field_f64(&c, r.useful_s);
        oc_csv_field_f64(&c, r.save_s);
        oc_csv_field_f64(&c, r.lost_s);
        oc_csv_field_f64(&c, r.restart_s);
        oc_csv_field_f64(&c, r.useful_s / pl->horizon_s);
        oc_csv_end_row(&c);
    }
    return oc_csv_close(&c, st);
}

static int report(const char *out, const struct oc_opts *o, const struct oc_goodput_flags *g,
                  const struct plan *pl, struct oc_status *st)
{
    print_plan(o, g, pl);
    double *frac = oc_xmalloc((size_t)g->trials * sizeof *frac);
    struct oc_goodput_run sum;
    const int asked = g->interval_s > 0 || g->interval_steps > 0;
    if (asked) {
        run_trials(pl, pl->tau_s, g->seed, g->trials, frac, &sum);
        print_interval(pl, "asked interval", pl->tau_s, frac, g->trials, &sum);
    }
    run_trials(pl, pl->best_s, g->seed, g->trials, frac, &sum);
    print_interval(pl, "best interval ", pl->best_s, frac, g->trials, &sum);
    free(frac);
    if (asked)
        printf("checkpointing every %s instead of %s: %+.2f points of goodput (%+.1f h of "
               "useful work in %g days)\n", minutes((char[32]){0}, 32, pl->best_s),
               minutes((char[32]){0}, 32, pl->tau_s),
               100 * (oc_goodput_expected(&pl->p, pl->best_s) -
                      oc_goodput_expected(&pl->p, pl->tau_s)),
               (oc_goodput_expected(&pl->p, pl->best_s) -
                oc_goodput_expected(&pl->p, pl->tau_s)) * pl->horizon_s / 3600, g->days);
    printf("(%lld trials, seed %llu)\n", (long long)g->trials, (unsigned long long)g->seed);
    struct oc_goodput_point pts[CURVE_MAX];
    int npts = 0;
    if (write_curve(out, pl, g, pts, &npts, st) != 0 || write_trials(out, pl, g, st) != 0)
        return -1;
    char title[640], name[128];
    oc_layout_format(&o->layout, name, sizeof name);
    snprintf(title, sizeof title, "%s, %s on %lld x %s: MTBF %.3g h, save %.3g s, restart "
             "%.3g min, %g days", o->model.name, name, (long long)o->cards,
             o->topo.device.name, pl->mtbf_s / 3600, pl->save_s, pl->p.restart_s / 60,
             g->days);
    struct oc_status pst = {{0}};
    const int prc = oc_plot_goodput(out, pts, npts, asked ? pl->tau_s : 0, pl->best_s, title,
                                    NULL, &pst);
    if (prc < 0)
        return oc_fail(st, "%s", pst.msg);
    if (prc > 0)
        fprintf(stderr, "ocsim goodput: warning: %s\n", pst.msg);
    printf("wrote %s/goodput.csv, %s/trials.csv, %s/goodput.%s\n", out, out, out,
           prc > 0 ? "gp" : "png");
    return 0;
}

int oc_cmd_goodput(int argc, char **argv)
{
    struct oc_goodput_flags g = {.days = 30, .save_s = -1, .load_s = -1,
                       .wbw_node = OC_GOODPUT_WRITE_BW_NODE,
                       .wbw_total = OC_GOODPUT_WRITE_BW_TOTAL,
                       .rbw_node = OC_GOODPUT_READ_BW_NODE,
                       .rbw_total = OC_GOODPUT_READ_BW_TOTAL,
                       .restart_s = OC_GOODPUT_RESTART_S, .trials = 1000, .seed = 1};
    struct oc_opts o;
    struct oc_status st = {{0}};
    char **rest = oc_xcalloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0, rc = 2;
    oc_opts_default(&o);
    if (oc_goodput_flags_split(argc, argv, &g, rest, &nrest, &st) != 0 ||
        oc_opts_parse(&o, nrest, rest, GROUPS, &st) != 0 ||
        (!o.help && g.exec_log && oc_goodput_flags_exec_log(&g, &st) != 0))
        goto bad;
    if (o.help) {
        help();
        free(rest);
        return 0;
    }
    if (oc_opts_load(&o, &st) != 0 ||
        oc_layout_validate(&o.layout, &o.model, &o.topo, o.cards, &st) != 0)
        goto bad;
    struct plan pl;
    const char *out = o.out_dir ? o.out_dir : "out/goodput";
    if (make_plan(&o, &g, &pl, &st) != 0 || oc_mkdir_p(out, &st) != 0)
        goto bad;
    rc = report(out, &o, &g, &pl, &st) == 0 ? 0 : 2;
    if (rc == 0) {
        free(rest);
        return 0;
    }
bad:
    fprintf(stderr, "ocsim goodput: %s\n", st.msg);
    free(rest);
    return 2;
}
