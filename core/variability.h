/* variability.h: stragglers and jitter (issue 14, item 2). The pure part:
 * the --variability spec, the seeded counter-based random numbers the
 * replay draws its per-op noise from, the choice of the persistently slow
 * devices, the statistics of N sampled steps, and one closed form (the
 * expected maximum of n iid log-normal times) the tests and the guide use.
 * What it is not: the simulation (sim/replay_var.c applies these numbers to
 * a replay) or the command (tools/cmd_simulate_var.c).
 *
 *   struct oc_variability v;
 *   if (oc_var_parse("compute=0.05,slow=0.01,slowdown=1.5,link=0.1", &v, st) != 0)
 *       ...one line, exit 2...
 *   v.seed = 7;
 *   double x = oc_var_compute_mult(&v, step, rank, op);   // mean 1
 *
 * Spec: comma-separated key=value, each key at most once:
 *   compute=CV    per-op compute noise: every COMPUTE op of every rank of
 *                 every step takes its nominal time times an independent
 *                 log-normal X with E[X] = 1 and sd(X)/E[X] = CV.
 *   slow=F        a fraction F in [0, 1] of the devices is persistently
 *                 slow: round(F x world) of them (half up), chosen from the
 *                 seed alone (the same in every step).
 *   slowdown=K    their compute takes K >= 1 times as long. Required with
 *                 slow > 0: there is no published typical slowdown to
 *                 default to (a throttled GPU, a degraded NVLink, a noisy
 *                 neighbour differ by far), so the user states it.
 *   link=CV       link bandwidth jitter: in every step every link's
 *                 bandwidth is its nominal divided by an independent
 *                 log-normal of mean 1 and this CV (held for the step).
 *
 * Why mean 1 and not median 1: the cost model's op times stand for the
 * mean of a kernel's measured times (the calibration averages repeats), so
 * a mean-1 multiplier leaves every op's expected time where the cost model
 * puts it, and the loss reported is only what the synchronisation points
 * (the max over ranks at every collective and pipeline hand-off) make of
 * the spread. With median 1 the expected op time would grow by
 * exp(sigma^2/2) = sqrt(1 + CV^2), which is a bias of the cost model, not a
 * straggler effect.
 *
 * Random numbers: counter-based, so a value depends only on its key
 * (seed, step, rank, op index, lane), never on the order the simulation
 * asks for it: splitmix64's finaliser (Steele, Lea and Flood 2014, "Fast
 * splittable pseudorandom number generators", OOPSLA) applied to the key
 * words in turn; normals by Box-Muller (Box and Muller 1958) from two
 * lanes. Deterministic across machines (IEEE doubles, libm's log, cos,
 * exp).
 */
#ifndef OC_VARIABILITY_H
#define OC_VARIABILITY_H

#include <stdint.h>

#include "status.h"

/* CV bound: 10 (a log-normal of CV 10 has sigma 2.1: one op in a thousand
 * 1000x its median); beyond it a spec is a typo, not a cluster. */
#define OC_VAR_CV_MAX 10.0
/* slowdown bound: a device 100x slower is a failure, not a straggler
 * (item 3 of issue 14, ocsim goodput). */
#define OC_VAR_SLOWDOWN_MAX 100.0

struct oc_variability {
    double compute_cv; /* per-op compute noise, >= 0 */
    double slow_frac;  /* fraction of slow devices, [0, 1] */
    double slowdown;   /* their compute factor, >= 1 */
    double link_cv;    /* link bandwidth jitter, >= 0 */
    uint64_t seed;
};

/* Parses a spec (above) into *v (seed 0). Returns 0, or -1 with one line. */
int oc_var_parse(const char *spec, struct oc_variability *v, struct oc_status *st);

/* 1 when v changes anything (a CV > 0, or a slowdown > 1 on >= 1 device of
 * `world`). */
int oc_var_active(const struct oc_variability *v, int64_t world);

/* The counter-based hash of (seed, a, b, c, d) and its uniform in (0, 1). */
uint64_t oc_var_hash(uint64_t seed, uint64_t a, uint64_t b, uint64_t c, uint64_t d);
double oc_var_uniform(uint64_t h);

/* A log-normal of mean 1 and coefficient of variation cv, from the standard
 * normal z: exp(sigma z - sigma^2 / 2), sigma^2 = ln(1 + cv^2). cv 0: 1. */
double oc_var_lognormal(double cv, double z);

/* The standard normal of key (seed, step, rank, op) by Box-Muller. */
double oc_var_normal(uint64_t seed, int64_t step, int64_t rank, int64_t op);

/* Compute op `op` of rank `rank` in step `step`: the noise times the
 * slowdown when slow[rank] (slow may be NULL: none). Exactly 1 when the
 * CV is 0 and the rank is not slow. */
double oc_var_compute_mult(const struct oc_variability *v, const unsigned char *slow,
                           int64_t step, int64_t rank, int64_t op);

/* A link's bandwidth divisor in step `step` (mean 1, CV link_cv), keyed by
 * the link's name. Exactly 1 when link_cv is 0. */
double oc_var_link_div(const struct oc_variability *v, int64_t step, const char *name);

/* The number of slow devices among world: round(slow_frac x world), half up. */
int64_t oc_var_slow_count(const struct oc_variability *v, int64_t world);
/* A world-sized 0/1 array (to free): the devices with the slow_count
 * smallest hashes of (seed, rank) are slow. NULL when there are none. */
unsigned char *oc_var_slow_set(const struct oc_variability *v, int64_t world);

/* Statistics of n step times (n >= 1): the mean, and quantiles by linear
 * interpolation between order statistics (Hyndman and Fan 1996, type 7;
 * numpy's default). */
struct oc_var_stats {
    int64_t n;
    double mean, p50, p99, min, max;
};
void oc_var_stats(const double *x, int64_t n, struct oc_var_stats *out);

/* E[max of n iid log-normals of mean 1 and CV cv]:
 *   integral of exp(sigma z - sigma^2/2) n Phi(z)^(n-1) phi(z) dz
 * by Simpson's rule on z in [-12, 12] (4000 intervals). The tails left
 * out: above 12 at most n (1 - Phi(12 - sigma)), 3e-17 for n = 1e6 and
 * cv = 10 (sigma 2.15); below -12 the weight Phi^(n-1) phi is below
 * phi(12) = 5e-32. For n = 2 it equals 2 Phi(sigma / sqrt 2) (the test
 * pins it). */
double oc_var_expected_max(int64_t n, double cv);

#endif
