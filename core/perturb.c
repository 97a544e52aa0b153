/* perturb.c: the confidence of a sweep's choice under perturbed cost
 * parameters (see perturb.h for the model and what scales with what).
 *
 * The default spreads (OC_PERTURB_SPREAD_DEFAULT, log-normal sigmas):
 * - compute 0.12: issue 13's comparison of ocsim with published runs
 *   (../shared/validation: Megatron-LM, Megatron-Core, MT-NLG, Llama 3)
 *   found the step time 6-13 % off on average; a log-normal's mean
 *   |ln c| is s x sqrt(2/pi) = 0.8 s, so s = 0.12 gives 9.6 %, the middle
 *   of that range, and single runs up to ~50 % off sit near 3.4 s.
 * - network 0.30 and TP 0.20: communication is where the model is least
 *   sure; docs/validation-cpu.md measured DP communication 32 % and
 *   exposed communication 46 % off on one layout whose step time was
 *   4.5 % off. TP runs on the node fabric, whose bus bandwidth the
 *   topology files take from nccl-tests (../shared/validation/
 *   nccl_allreduce_busbw_8gpu.csv), so it gets the smaller spread.
 * - layout 0.05: the part of the error that differs between layouts;
 *   docs/validation-cpu.md's two models on the same machine and script
 *   were off by +4.5 % and +1.7 %, and five runs of one layout spread
 *   over 3-6 %.
 */
#include "perturb.h"

#include <math.h>
#include <string.h>

#include "status.h"

/* splitmix64 (Steele, Lea and Flood 2014, "Fast splittable pseudorandom
 * number generators"; the constants of Vigna's reference code). */
static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A uniform in (0, 1): the top 53 bits, never 0. */
static double uniform(uint64_t *s)
{
    return ((double)(splitmix64(s) >> 11) + 0.5) / 9007199254740992.0;
}

/* A standard normal, Box-Muller (one of the pair; the other is dropped so
 * that every draw uses two uniforms, whatever came before). */
static double normal(uint64_t *s)
{
    const double u1 = uniform(s), u2 = uniform(s);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static double lognormal(uint64_t *s, double sigma)
{
    const double z = normal(s);
    return sigma > 0 ? exp(sigma * z) : 1.0;
}

double oc_perturb_step(const struct oc_metrics *mt, const struct oc_perturb_factors *f)
{
    const double step = mt->step_time_s;
    const double compute = mt->compute_s;
    const double bubble = mt->bubble_fraction * step;
    const double exposed = mt->exposed_comm_s;
    double other = step - compute - bubble - exposed;
    if (other < 0)
        other = 0;
    const double tp = mt->tp_comm_s, net = mt->pp_comm_s + mt->dp_comm_s;
    const double tp_share = tp + net > 0 ? tp / (tp + net) : 0;
    const double e_tp = exposed * tp_share, e_net = exposed - e_tp;
    return f->layout * (f->compute * (compute + bubble + other) + f->tp * e_tp +
                        f->net * e_net);
}

/* Whether two results are the same in everything the step model reads. */
static int same_result(const struct oc_metrics *a, const struct oc_metrics *b)
{
    return a->step_time_s == b->step_time_s && a->compute_s == b->compute_s &&
           a->bubble_fraction == b->bubble_fraction && a->exposed_comm_s == b->exposed_comm_s &&
           a->tp_comm_s == b->tp_comm_s && a->pp_comm_s == b->pp_comm_s &&
           a->dp_comm_s == b->dp_comm_s && a->tokens_per_s == b->tokens_per_s;
}

void oc_perturb_run(const struct oc_metrics *mt, int64_t n, int64_t draws, uint64_t seed,
                    const struct oc_perturb_spread *sp, struct oc_perturb_result *out)
{
    OC_ASSERT(n >= 0 && draws >= 0 && (mt || n == 0));
    memset(out, 0, sizeof *out);
    out->n = n < OC_PERTURB_TOP ? n : OC_PERTURB_TOP;
    out->draws = draws;
    out->seed = seed;
    out->spread = *sp;
    out->chosen_worst_ratio = 1;
    for (int64_t i = 0; i < out->n; i++) {
        out->layout[i] = mt[i].layout;
        out->tokens_per_s[i] = mt[i].tokens_per_s;
    }
    if (out->n == 0)
        return;
    uint64_t s = seed;
    double tok[OC_PERTURB_TOP];
    for (int64_t r = 0; r < draws; r++) {
        struct oc_perturb_factors f;
        f.compute = lognormal(&s, sp->compute);
        f.tp = lognormal(&s, sp->tp);
        f.net = lognormal(&s, sp->net);
        int64_t best = 0;
        double fl[OC_PERTURB_TOP];
        for (int64_t i = 0; i < out->n; i++) {
            /* A variant the simulator ran to the same result bit for bit
             * (a collective choice the automatic one made anyway, an
             * overlap with nothing to hide) has the same op mix, so it
             * shares its twin's layout factor instead of parting from it
             * by chance; the draw is made all the same, so the stream of
             * the other layouts does not move. */
            fl[i] = lognormal(&s, sp->layout);
            for (int64_t j = 0; j < i; j++)
                if (same_result(&mt[i], &mt[j])) {
                    fl[i] = fl[j];
                    break;
                }
            f.layout = fl[i];
            const double step = oc_perturb_step(&mt[i], &f);
            /* tokens per step are the layout's own (its global batch) */
            tok[i] = step > 0 ? mt[i].tokens_per_s * mt[i].step_time_s / step : 0;
            if (tok[i] > tok[best])
                best = i;
        }
        out->best[best]++;
        for (int64_t i = 0; i < out->n; i++)
            out->within[i] += tok[i] >= (1 - OC_PERTURB_WITHIN) * tok[best];
        if (tok[best] > 0 && tok[0] / tok[best] < out->chosen_worst_ratio)
            out->chosen_worst_ratio = tok[0] / tok[best];
    }
}
