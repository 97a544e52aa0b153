/* runner_priv.h: what the files of the runner share, and nothing else:
 * the DP bucket and request structs that runner.h only names, and the
 * functions one file of the runner calls in another (prefix oc_rn_).
 *
 *   runner.c        set-up and tear-down, the measured metrics of a step
 *   runner_step.c   a step: the walk over the op list, each op's handler,
 *                   the backend's marks around it
 *   runner_parts.c  where the activations of (micro-batch, chunk, layer)
 *                   live, and the model part's call with them bound
 *   runner_dp.c     the DP buckets, ZeRO-1's slices, reduce-scatter and
 *                   all-gather, the optimizer over this rank's slice, the
 *                   embedding all-reduce, the outstanding requests
 *   runner_gc.c     the compressed DP exchange (gc=topk<D>, q8, q1)
 *
 * What it is not: an interface for anything outside the runner (main.c,
 * the tests and the backends use runner.h and backend.h).
 *
 *   float *f = oc_rn_mem_get(r, OC_BUF_COMM, n);   // counted by buffer kind
 *   ...
 *   oc_rn_mem_put(r, OC_BUF_COMM, &f, n);          // f = NULL
 */
#ifndef OC_EXEC_RUNNER_PRIV_H
#define OC_EXEC_RUNNER_PRIV_H

#include <stdint.h>

#include "runner.h"

/* One DP reduction bucket: the tensors whose gradients are final after the
 * last backward of one chunk (overlap_grad_reduce), or all of them. */
struct oc_runner_bucket {
    int64_t *tensors; /* indices into p.t, arena order */
    int64_t nt;
    int64_t lo, hi;   /* arena range of the gradients (contiguous) */
    int64_t *counts;  /* (d) floats of each DP rank's slices */
    int64_t blk;      /* the largest of them: the reduce-scatter's block */
    float *pack;      /* reduce-scatter input: d blocks of blk, rank-major */
    float *mine;      /* reduce-scatter output: this rank's block */
    int in_flight;
    int sp_summed;    /* this step's SP-partial gradients are summed over TP */
    int64_t chunk, layer_first; /* overlap: the schedule's bucket it is
                                   (schedule_bucket.h), else -1 */
};

enum { PEND_SEND, PEND_BUCKET };

struct oc_runner_pending {
    void *req;        /* the backend's request */
    int kind;
    int64_t op;       /* op index in the list */
    float **slot;     /* SEND: its buffer, freed on completion */
    int64_t bucket;   /* BUCKET */
};

/* runner_parts.c: memory by buffer kind (live bytes and high-water marks) */
void oc_rn_account(struct oc_runner *r, enum oc_buf k, double bytes);
float *oc_rn_mem_get(struct oc_runner *r, enum oc_buf k, int64_t floats);
void oc_rn_mem_put(struct oc_runner *r, enum oc_buf k, float **p, int64_t floats);

/* runner_parts.c: where things are, and the parts (runner.h's header
 * comment has the buffers of one (micro-batch, chunk)) */
int64_t oc_rn_unit(const struct oc_runner *r, int64_t mb, int64_t c);
int64_t oc_rn_chunk_layer0(const struct oc_runner *r, int64_t c);
int64_t oc_rn_block_floats(const struct oc_runner *r, int64_t c);
float *oc_rn_block(struct oc_runner *r, int64_t mb, int64_t c);
float *oc_rn_attn_in(struct oc_runner *r, int64_t mb, int64_t c, int64_t j);
void oc_rn_bind_attn(struct oc_runner *r, int64_t mb, int64_t c, int64_t j,
                     struct oc_gpt_attn_act *a);
int oc_rn_part_call(struct oc_runner *r, const struct oc_op *op,
                    struct oc_gpt_call *c);

/* runner_dp.c: buckets, requests, the optimizer and the DP / EMBED ops */
void oc_rn_buckets_init(struct oc_runner *r);
void oc_rn_buckets_free(struct oc_runner *r);
void oc_rn_pend_add(struct oc_runner *r, const struct oc_runner_pending *p);
void oc_rn_poll_pending(struct oc_runner *r);
int oc_rn_wait_pending(struct oc_runner *r, int64_t i, struct oc_status *st);
int oc_rn_optimizer(struct oc_runner *r, struct oc_status *st);
int oc_rn_run_dp(struct oc_runner *r, int64_t i, const struct oc_op *op,
                 struct oc_status *st);
int oc_rn_run_embed(struct oc_runner *r, const struct oc_op *op, struct oc_status *st);
/* runner_dp.c: sequence parallelism's partial gradients of every bucket
 * summed over TP (once a step; what a bucket's reduction does first). */
int oc_rn_sp_sum_all(struct oc_runner *r, struct oc_status *st);

/* runner_gc.c: the compressed DP exchange. init: r->gc for a layout with
 * gradient compression and d > 1 (else NULL), its residuals allocated;
 * compute: the COMPUTE op before (pack) or after (unpack) the exchange;
 * exchange: the DP collective between them. */
int oc_rn_gc_init(struct oc_runner *r, struct oc_status *st);
void oc_rn_gc_free(struct oc_runner *r);
int oc_rn_gc_compute(struct oc_runner *r, const struct oc_op *op, struct oc_status *st);
int oc_rn_gc_exchange(struct oc_runner *r, int64_t i, const struct oc_op *op,
                      struct oc_status *st);

#endif
