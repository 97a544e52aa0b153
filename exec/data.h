/* data.h: the executor's synthetic training data, the same for every layout.
 *
 *   struct oc_synth s;
 *   if (oc_synth_init(&s, model.vocab_size, 42, &st) != 0) ...
 *   int32_t in[B*T], tgt[B*T];
 *   int64_t g0 = oc_synth_sample_index(step, G, d, dp_rank, m, mb, b, 0);
 *   oc_synth_batch(&s, g0, b, T, in, tgt);        // rows g0 .. g0+b-1
 *   double floor = oc_synth_entropy(&s);          // best possible loss
 *   oc_synth_free(&s);
 *
 * The task: a noisy walk along a fixed random permutation of the
 * vocabulary. A sequence starts at a random token; each next token is
 * perm[previous] with probability `follow`, else uniform over V. A model
 * that learns the bigram table perm reaches the per-token entropy (below),
 * far under log(V). Every draw comes from splitmix64 keyed by (seed,
 * global sample index, position), so a sample's tokens do not depend on
 * how the global batch is split over DP ranks and micro-batches.
 *
 * What this file is not: a data loader for real text.
 */
#ifndef OC_EXEC_DATA_H
#define OC_EXEC_DATA_H

#include <stdint.h>

#include "status.h"

#define OC_SYNTH_FOLLOW 0.9 /* default probability of following perm */

struct oc_synth {
    int64_t V;       /* vocabulary */
    uint64_t seed;
    double follow;   /* probability that next = perm[previous] */
    int32_t *perm;   /* (V) the next-token map, a permutation */
};

/* V >= 2. Sets follow to OC_SYNTH_FOLLOW (change it before use if wanted). */
int oc_synth_init(struct oc_synth *s, int64_t V, uint64_t seed,
                  struct oc_status *st);
void oc_synth_free(struct oc_synth *s);

/* Sample g (global index over the whole run, from 0): T+1 tokens of the
 * walk; in = tokens 0..T-1, targets = tokens 1..T. in, targets: (T). */
void oc_synth_sample(const struct oc_synth *s, int64_t g, int64_t T,
                     int32_t *in, int32_t *targets);

/* Samples g0 .. g0+B-1 as rows of in, targets: (B, T). */
void oc_synth_batch(const struct oc_synth *s, int64_t g0, int64_t B, int64_t T,
                    int32_t *in, int32_t *targets);

/* Global index of row `row` of micro-batch `mb` on DP rank `dp_rank` at
 * step `step` (from 0), with global batch G = d*m*b sequences: the step's
 * samples are [step*G, (step+1)*G); DP rank r takes G/d consecutive ones
 * (Megatron-LM's split), micro-batch mb of it b consecutive ones. */
int64_t oc_synth_sample_index(int64_t step, int64_t G, int64_t d,
                              int64_t dp_rank, int64_t m, int64_t mb,
                              int64_t b, int64_t row);

/* Entropy in nats of a target given its predecessor, the lowest expected
 * cross-entropy: q = follow + (1-follow)/V for perm[prev], r = (1-follow)/V
 * for each other token; H = -q ln q - (V-1) r ln r. */
double oc_synth_entropy(const struct oc_synth *s);

#endif
