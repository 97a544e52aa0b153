/* perturb.h: how sure the choice of a sweep is. The cost model has errors
 * (compute rates, network bandwidth and latency, overheads); this module
 * re-evaluates the best layouts under seeded, deterministic perturbations
 * of those costs and counts how often the chosen layout (the first) stays
 * the best, and how often it is within OC_PERTURB_WITHIN of the best.
 *
 *   struct oc_perturb_spread sp = OC_PERTURB_SPREAD_DEFAULT;
 *   struct oc_perturb_result r;
 *   oc_perturb_run(fitting, n, 200, 1234, &sp, &r);  // fitting: rank order
 *   printf("best in %.0f%%, within 2%% in %.0f%%\n",
 *          100.0 * r.best[0] / r.draws, 100.0 * r.within[0] / r.draws);
 *
 * The re-evaluation is first order, from each layout's simulated
 * breakdown (core/metrics.h, means over ranks), not a new simulation:
 *
 *   step' = g x [ c x (compute + bubble + other) + k_tp x E_tp + k_net x E_net ]
 *
 * - compute (compute_s) scales with the compute factor c: every compute
 *   op's time is its FLOPs and bytes over the rates the factor stands for,
 *   and the per-op overheads the simulator charges ride on the same ops.
 * - bubble (bubble_fraction x step) scales with c too: a pipeline bubble
 *   is stages waiting for other stages' compute ((p-1) forward-backward
 *   slots in 1F1B, Narayanan et al. 2021, section 2.2).
 * - other (step - compute - bubble - exposed, at least 0) scales with c.
 * - exposed communication (exposed_comm_s) is split between TP and the
 *   network in proportion to tp_comm_s and pp_comm_s + dp_comm_s, and each
 *   share scales with its factor: k_tp for the node fabric TP runs on,
 *   k_net for the DP and PP traffic that crosses nodes. Linear in the
 *   exposed part: a faster network cannot hide more than was exposed, and
 *   a slower one that would expose hidden traffic is not seen (the model
 *   understates how much overlapped layouts lose on a slow network).
 * - g is one factor per layout and draw: what the model gets wrong for one
 *   layout and not another (GEMM shapes, kernel choice); layouts whose
 *   simulated results are equal bit for bit (variants that ran the same
 *   ops) share one g, the first's.
 * c, k_tp and k_net are shared by every layout of a draw (an error of the
 *   cost model moves all layouts together); each is log-normal, exp(s x z)
 *   with z standard normal, median 1. The spreads s are
 *   OC_PERTURB_SPREAD_DEFAULT, from the validation errors
 *   (docs/guide.md, "Confidence of the choice").
 *
 * Deterministic: the draws come from one splitmix64 stream of the seed, in
 * a fixed order (c, k_tp, k_net, then g of each layout), so the same input
 * gives the same counts on every machine.
 */
#ifndef OC_PERTURB_H
#define OC_PERTURB_H

#include <stdint.h>

#include "metrics.h"

/* Layouts re-evaluated: the chosen one and its closest rivals. */
#define OC_PERTURB_TOP 10
/* "Within 2 % of the best": tokens/s at least (1 - 0.02) x the best's. */
#define OC_PERTURB_WITHIN 0.02

struct oc_perturb_spread {
    double compute; /* log-normal sigma of c */
    double tp;      /* of k_tp */
    double net;     /* of k_net */
    double layout;  /* of g */
};
/* perturb.c and docs/guide.md say where each comes from. */
#define OC_PERTURB_SPREAD_DEFAULT {0.12, 0.20, 0.30, 0.05}

struct oc_perturb_factors {
    double compute, tp, net, layout;
};

struct oc_perturb_result {
    int64_t draws;
    int64_t n;                         /* layouts re-evaluated, <= OC_PERTURB_TOP */
    uint64_t seed;
    struct oc_perturb_spread spread;
    struct oc_layout layout[OC_PERTURB_TOP];
    double tokens_per_s[OC_PERTURB_TOP]; /* as simulated */
    int64_t best[OC_PERTURB_TOP];      /* draws in which layout i is the best */
    int64_t within[OC_PERTURB_TOP];    /* draws in which it is within 2 % */
    double chosen_worst_ratio;         /* lowest tokens/s of the chosen / the best's */
};

/* One layout's step time under the factors f (the model above). */
double oc_perturb_step(const struct oc_metrics *mt, const struct oc_perturb_factors *f);

/* The first min(n, OC_PERTURB_TOP) of mt (fitting layouts in rank order,
 * the chosen first) under `draws` perturbed cost models. Ties go to the
 * lower index. n == 0 gives an empty result (out->n 0). */
void oc_perturb_run(const struct oc_metrics *mt, int64_t n, int64_t draws, uint64_t seed,
                    const struct oc_perturb_spread *sp, struct oc_perturb_result *out);

#endif
