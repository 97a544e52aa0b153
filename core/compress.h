/* compress.h: gradient compression and less frequent synchronisation of
 * the DP gradient reduction, as layout knobs (issue 14 item 4).
 *
 *   struct oc_gc_plan p;
 *   oc_gc_plan(&model, &layout, stage, &p);   // the exchange of one rank
 *   for (i < p.n) { kernel p.step[i] (hbm bytes, flops), then collective }
 *   then the final kernel (decompression); p.mem_bytes of extra state.
 *
 * Layout string parts (Megatron-LM has no such flags; the names are
 * ocsim's, each printed by oc_layout_format where it differs from the
 * default so a sweep.csv label pastes back into --layout):
 *   gc=none          the uncompressed reduction (default)
 *   gc=topk<D>       top-k (or thresholded) sparsification keeping a
 *                    fraction D in (0, 1] of each rank's gradient elements,
 *                    with error feedback; D in plain decimals (topk0.001)
 *   gc=q8, gc=q1     8-bit and 1-bit quantisation with error feedback
 *   gc=psgd<R>       PowerSGD of rank R >= 1
 *   sync<K>          local SGD: parameters averaged every K >= 1 steps
 *                    (sync1 is the default, every step)
 *
 * What each costs, per rank of a stage with N gradient elements (the
 * stage's parameters on one rank), gradient group d (DP x CP), gradient
 * element g bytes (oc_mem_param_bytes(l).grad):
 *   topk  Lin et al. 2018 (Deep Gradient Compression), Aji & Heafield
 *         2017: each rank keeps K = ceil(D*N) (index, value) pairs, 8 bytes
 *         each (int32 index + fp32 value, as DGC's exchange), and the pairs
 *         are exchanged by ALL-GATHER (the ranks' index sets differ, so no
 *         reduction applies on the wire): the gathered buffer is d*K*8
 *         bytes, growing with d. Error feedback keeps one fp32 residual
 *         per element.
 *   q8/q1 Seide et al. 2014 (1-bit SGD) with error feedback; on the wire
 *         the compressed all-reduce of Tang et al. 2021 (1-bit Adam,
 *         section 4: each rank's compressed buffer split in d chunks, an
 *         all-to-all, each rank averages and recompresses its chunk with a
 *         server-side error, an all-gather): 2(d-1)/d times the compressed
 *         buffer per rank, the bytes of a ring all-reduce of N*b/8 bytes
 *         plus one fp32 scale per chunk, charged as such an all-reduce.
 *         Error feedback: the worker's fp32 residual (N) and the server's
 *         (N/d).
 *   psgd  Vogels et al. 2019 (PowerSGD): each weight matrix M (n x m) of the
 *         rank is approximated as P Q^T: P = M Q (n x r), all-reduce P,
 *         orthogonalise, Q = M^T P (m x r), all-reduce Q; all matrices'
 *         P in one buffer and all Q in another (as the paper's code and
 *         PyTorch's powerSGD_hook batch them), fp32; 1-D tensors (norms,
 *         biases) all-reduced uncompressed first. Memory: the fp32 residual
 *         of each matrix element and the P and Q buffers (Q is kept across
 *         steps, the warm start).
 *   syncK Stich 2019 (Local SGD converges fast and communicates little):
 *         each replica steps alone, the parameters are averaged (a full
 *         all-reduce at the gradient element size) once per K steps. ocsim
 *         reports the mean step: the all-reduce's bytes divided by K are
 *         charged in every step (its latency is charged whole: an
 *         over-estimate of (K-1)/K of one all-reduce's latency).
 * The tied embedding's all-reduce between the first and the last stage
 * (Megatron-LM's embedding group) stays uncompressed.
 * The compressed exchange runs after the last backward, not overlapped
 * with it (the gradient buckets of --overlap-grad-reduce are not used),
 * as 1-bit Adam's compressed all-reduce runs in the optimizer step:
 * pessimistic where a DDP communication hook overlaps it per bucket.
 *
 * Kernels: memory-bound passes over the gradient (bytes per element
 * below, in compress.c, each sourced or marked ESTIMATE), PowerSGD's
 * GEMMs also by their FLOPs at the device's sustained GEMM rate.
 *
 * Convergence is NOT modelled: a compressed or local-SGD step is priced,
 * not the extra steps it may need to reach the same loss.
 *
 * Refused (oc_gc_check, one reason): compression with ZeRO-2/3 (their
 * per-unit reduce-scatters have no compressed form here); local SGD with
 * ZeRO >= 1 (a replica that steps alone needs its whole optimizer) or with
 * compression (one or the other).
 */
#ifndef OC_COMPRESS_H
#define OC_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "status.h"
#include "topology.h"

struct oc_layout;

enum oc_gc_kind { OC_GC_NONE, OC_GC_TOPK, OC_GC_Q8, OC_GC_Q1, OC_GC_POWERSGD };

/* Bytes of one kept (index, value) pair of top-k: int32 index + fp32
 * value (Lin et al. 2018's exchange; Renggli et al. 2019 SparCML too). */
#define OC_GC_PAIR_BYTES 8.0
/* ESTIMATE: reads of the fp32 accumulator to select the top k. A radix
 * select (Alabi et al. 2012, "Fast k-selection algorithms for GPUs")
 * reads the data once per digit pass until the k-th bucket is small; DGC
 * samples 0.1-1% to pick a threshold and then reads once to compare and
 * once to compact. 3 reads. */
#define OC_GC_SELECT_READS 3.0

/* Parse one layout part that is a compression knob ("gc=..." or
 * "sync<K>") into l. Returns 1 and sets *is_sync (1 for sync, 0 for gc);
 * 0 when the part is neither (l untouched); -1 with one line in st when it
 * is one of them with a bad value (density outside (0, 1], rank or K below
 * 1, not a number). */
int oc_gc_parse_part(struct oc_layout *l, const char *part, int *is_sync,
                     struct oc_status *st);
/* "gc=topk0.01", "gc=q1", "gc=psgd4", "gc=none" (the gc knob of l). */
void oc_gc_label(const struct oc_layout *l, char *buf, size_t n);
/* The rules: density in (0, 1], rank >= 1, K >= 1 (sync_every 0 is the
 * default, every step), and the refusals above. One line into st. */
int oc_gc_check(const struct oc_layout *l, struct oc_status *st);
/* 1 when l's DP gradient exchange is compressed or amortised (gc or
 * sync > 1): its reduction is what oc_gc_plan gives. */
int oc_gc_on(const struct oc_layout *l);

/* One value of the compression knobs, as `ocsim sweep --compression LIST`
 * searches them: none, topk<D>, q8, q1, psgd<R>, sync<K> (the "gc="
 * prefix optional). */
struct oc_gc_setting {
    int gc;
    double density;
    int64_t rank, sync_every;
};
#define OC_GC_MAX_LIST 8
/* Parse a comma-separated list into out[0..*n) (at most max, no repeats);
 * -1 with one line naming the bad entry. */
int oc_gc_parse_list(const char *list, struct oc_gc_setting *out, int max, int *n,
                     struct oc_status *st);
/* Set l's compression knobs to s. */
void oc_gc_apply(struct oc_layout *l, const struct oc_gc_setting *s);

#define OC_GC_MAX_STEPS 3
struct oc_gc_step {
    double kernel_bytes; /* HBM bytes of the kernel before the collective */
    double kernel_flops; /* its GEMM FLOPs (PowerSGD) */
    int coll;            /* enum oc_coll_kind */
    double bytes;        /* the collective's buffer S (schedule.h's op.bytes) */
};
struct oc_gc_plan {
    int n;
    struct oc_gc_step step[OC_GC_MAX_STEPS];
    double final_bytes, final_flops; /* the kernel after the last collective */
    double mem_bytes;    /* error-feedback residuals, PowerSGD's P and Q */
    double elements;     /* N: the gradient elements the exchange covers */
};
/* The DP exchange of one rank of `stage` (d = DP x CP > 1 assumed by the
 * caller; d = 1 gives n = 0 and no memory). */
void oc_gc_plan(const struct oc_model *m, const struct oc_layout *l, int64_t stage,
                struct oc_gc_plan *p);
/* The extra memory of one rank of `stage` (oc_gc_plan's mem_bytes). */
double oc_gc_mem_bytes(const struct oc_model *m, const struct oc_layout *l, int64_t stage);
/* The ops of oc_gc_plan for one rank of `stage`, in order, through put
 * (core/schedule.c's sink): per step a COMPUTE op (phase BWD, part ALL:
 * hbm_bytes and flops; cost.c times it by oc_gc_kernel_s) when it has
 * work, then the DP COLLECTIVE; then the final kernel. */
struct oc_op;
void oc_gc_put_ops(const struct oc_model *m, const struct oc_layout *l, int64_t stage,
                   void (*put)(void *k, const struct oc_op *op), void *k);
/* Seconds of a compression kernel: bytes at the memory-bound bandwidth
 * plus flops at the device's sustained GEMM rate. */
double oc_gc_kernel_s(const struct oc_topology *t, double bytes, double flops);

#endif
