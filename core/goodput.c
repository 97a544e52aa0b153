/* goodput.c: checkpoint intervals, expected goodput and the seeded
 * failure simulation of goodput.h. Pure functions: no I/O, no globals. */
#include "goodput.h"

#include <math.h>
#include <stdlib.h>

#include "memory.h"
#include "status.h"

double oc_goodput_young_interval(double save_s, double mtbf_s)
{
    OC_ASSERT(save_s >= 0 && mtbf_s > 0);
    return sqrt(2.0 * save_s * mtbf_s);
}

double oc_goodput_daly_interval(double save_s, double mtbf_s)
{
    OC_ASSERT(save_s >= 0 && mtbf_s > 0);
    if (save_s >= 2.0 * mtbf_s)
        return mtbf_s;
    const double x = save_s / (2.0 * mtbf_s);
    return sqrt(2.0 * save_s * mtbf_s) * (1.0 + sqrt(x) / 3.0 + x / 9.0) - save_s;
}

double oc_goodput_expected(const struct oc_goodput_params *p, double tau_s)
{
    OC_ASSERT(p->mtbf_s > 0 && p->save_s >= 0 && p->restart_s >= 0 && tau_s > 0);
    const double m = p->mtbf_s;
    /* M e^(R/M) (e^((tau + delta)/M) - 1); expm1 keeps the digits when
     * tau + delta << M */
    const double wall = m * exp(p->restart_s / m) * expm1((tau_s + p->save_s) / m);
    return isfinite(wall) && wall > 0 ? tau_s / wall : 0.0;
}

double oc_goodput_best_interval(const struct oc_goodput_params *p)
{
    /* golden-section search on log(tau) over [1e-6 M, 10 M]: the closed
     * form rises then falls in tau (or only falls when delta = 0, and the
     * search ends at the low end) */
    const double phi = 0.5 * (sqrt(5.0) - 1.0);
    double a = log(1e-6 * p->mtbf_s), b = log(10.0 * p->mtbf_s);
    double c = b - phi * (b - a), d = a + phi * (b - a);
    double gc = oc_goodput_expected(p, exp(c)), gd = oc_goodput_expected(p, exp(d));
    for (int i = 0; i < 200 && b - a > 1e-12; i++) {
        if (gc >= gd) {
            b = d, d = c, gd = gc;
            c = b - phi * (b - a);
            gc = oc_goodput_expected(p, exp(c));
        } else {
            a = c, c = d, gc = gd;
            d = a + phi * (b - a);
            gd = oc_goodput_expected(p, exp(d));
        }
    }
    return exp(0.5 * (a + b));
}

/* splitmix64 (Steele, Lea and Flood 2014, "Fast splittable pseudorandom
 * number generators"; the constants of Vigna's reference code), as
 * core/perturb.c draws its perturbations. */
static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The wall time to the next failure: exponential of mean M (a Poisson
 * process), from a uniform in (0, 1) that is never 0. */
static double next_gap(uint64_t *s, double mtbf_s)
{
    const double u = ((double)(splitmix64(s) >> 11) + 0.5) / 9007199254740992.0;
    return -mtbf_s * log(u);
}

/* Restarting from time *t until R seconds pass without a failure, or the
 * horizon: the time it took goes to r->restart_s. */
static void restart(const struct oc_goodput_params *p, double h, uint64_t *s, double *t,
                    double *fail, struct oc_goodput_run *r)
{
    const double t0 = *t;
    for (;;) {
        const double end = *t + p->restart_s;
        if (*fail < end && *fail < h) {
            r->failures++;
            *t = *fail;
            *fail += next_gap(s, p->mtbf_s);
            continue;
        }
        *t = end < h ? end : h;
        break;
    }
    r->restart_s += *t - t0;
}

void oc_goodput_simulate(const struct oc_goodput_params *p, double tau_s, double horizon_s,
                         uint64_t seed, int64_t trial, struct oc_goodput_run *out)
{
    OC_ASSERT(p->mtbf_s > 0 && p->save_s >= 0 && p->restart_s >= 0 && tau_s > 0 &&
              horizon_s > 0 && trial >= 0);
    struct oc_goodput_run r = {0};
    /* the trial's own stream: the seed, then the trial number mixed in */
    uint64_t s = seed;
    s = splitmix64(&s) ^ (uint64_t)trial * 0xd1b54a32d192ed03ULL;
    (void)splitmix64(&s);
    const double h = horizon_s;
    double t = 0, fail = next_gap(&s, p->mtbf_s);
    while (t < h) {
        const double end = t + tau_s + p->save_s;
        if (fail < end && fail < h) {
            /* the segment is undone: its compute and any save begun */
            r.lost_s += fail - t;
            r.failures++;
            t = fail;
            fail += next_gap(&s, p->mtbf_s);
            restart(p, h, &s, &t, &fail, &r);
            continue;
        }
        if (end <= h) {
            r.useful_s += tau_s;
            r.save_s += p->save_s;
        } else {
            /* the horizon inside the segment: a clean stop keeps the
             * compute done (the final save is not charged) */
            const double done = h - t;
            r.useful_s += done < tau_s ? done : tau_s;
            r.save_s += done > tau_s ? done - tau_s : 0;
        }
        t = end;
    }
    *out = r;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The p-th percentile of sorted v: linear between the closest ranks
 * (Hyndman and Fan 1996, definition 7; numpy's default). */
static double percentile(const double *v, int64_t n, double pct)
{
    const double pos = pct / 100.0 * (double)(n - 1);
    const int64_t i = (int64_t)floor(pos);
    if (i + 1 >= n)
        return v[n - 1];
    return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

void oc_goodput_stats(double *v, int64_t n, struct oc_goodput_stats *out)
{
    OC_ASSERT(n > 0);
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += v[i];
    out->mean = sum / (double)n;
    out->p5 = percentile(v, n, 5);
    out->p50 = percentile(v, n, 50);
    out->p95 = percentile(v, n, 95);
    out->min = v[0];
    out->max = v[n - 1];
}

/* What one rank of `stage` writes, as the replica that writes the
 * replicated state (first) or as another. */
struct stage_bytes {
    double first, other;
};

static struct stage_bytes stage_bytes(const struct oc_model *m, const struct oc_layout *l,
                                      int64_t stage)
{
    struct oc_mem_breakdown b;
    oc_memory_stage(m, l, stage, &b);
    const struct oc_mem_param_bytes pb = oc_mem_param_bytes(l);
    const double n = (double)b.params;
    /* sharded where memory.h divides it (ZeRO, with more than one replica) */
    const int w_sharded = b.weights_bytes < 0.999 * n * pb.weight;
    const int o_sharded = b.optimizer_bytes < 0.999 * n * pb.optimizer;
    struct stage_bytes s;
    s.first = b.weights_bytes + b.optimizer_bytes;
    s.other = (w_sharded ? b.weights_bytes : 0) + (o_sharded ? b.optimizer_bytes : 0);
    return s;
}

void oc_goodput_ckpt_size(const struct oc_model *m, const struct oc_layout *l,
                          int64_t gpus_per_node, struct oc_goodput_ckpt *out)
{
    OC_ASSERT(gpus_per_node > 0);
    const int64_t world = oc_layout_world(l);
    struct stage_bytes *sb = oc_xcalloc((size_t)l->pp, sizeof *sb);
    for (int64_t s = 0; s < l->pp; s++)
        sb[s] = stage_bytes(m, l, s);
    struct oc_goodput_ckpt c = {0};
    c.nodes = (world + gpus_per_node - 1) / gpus_per_node;
    double node = 0;
    for (int64_t r = 0; r < world; r++) {
        const struct oc_coord k = oc_layout_coord(l, r);
        const double b = k.dp == 0 && k.cp == 0 ? sb[k.pp].first : sb[k.pp].other;
        c.total_bytes += b;
        c.writers += b > 0;
        if (b > c.max_rank_bytes)
            c.max_rank_bytes = b;
        node += b;
        if ((r + 1) % gpus_per_node == 0 || r + 1 == world) {
            if (node > c.max_node_bytes)
                c.max_node_bytes = node;
            node = 0;
        }
    }
    free(sb);
    *out = c;
}

double oc_goodput_io_s(const struct oc_goodput_ckpt *c, double node_Bps, double total_Bps)
{
    OC_ASSERT(node_Bps > 0 && total_Bps > 0);
    const double a = c->max_node_bytes / node_Bps, b = c->total_bytes / total_Bps;
    return a > b ? a : b;
}
