/* block.h: what a decoder family changes in the executor's model, as one
 * table per family (struct oc_gpt_block): the norm, the position signal
 * inside attention, the MLP's activation, and the family's numbers in the
 * dims. The parts (gpt.c) are written once over it: the same kernel calls,
 * TP all-reduces and buffers for every family, with the family's few
 * operations called through the table; a tensor the family lacks (a bias,
 * the position table) reads as NULL (oc_params_w_opt), which the kernels
 * take for "none".
 *
 *   const struct oc_gpt_block *b = d->blk;        // set by oc_gpt_dims_init
 *   b->norm_fwd(k, d, ln, mean, rstd, in, w, bias, N);
 *   b->qk_fwd(k, d, qkv);                         // RoPE, or nothing
 *   b->act_fwd(k, d, hg, h);                      // GELU, or SwiGLU
 *
 * Families (the arch of core/model.h, the table's row in gpt_dims.c):
 *   GPT-2 (gpt.c)    LayerNorm (mean, rstd kept), learned positions added
 *                    to the embedding (nothing inside attention), GELU on
 *                    an MLP of width f.
 *   Llama (llama.c)  RMSNorm (rstd kept, mean NULL), rotary embedding on q
 *                    and k after the QKV linear, SwiGLU on gate | up (the
 *                    up projection 2f wide).
 *
 * What it is not: a model interface for the runner (gpt.h is that; a
 * runner never sees a family) or a kernel (the hooks call the table of
 * kernels/ops.h and never loop over elements). Private to exec/model/.
 */
#ifndef OC_EXEC_MODEL_BLOCK_H
#define OC_EXEC_MODEL_BLOCK_H

#include <stdint.h>

#include "gpt.h"

struct oc_gpt_block {
    const char *name;
    int norm_stats; /* floats a norm keeps per row: 2 (mean, rstd) or 1 (rstd) */
    int mlp_up;     /* the MLP's up projection is mlp_up * f wide: 1 or 2 */
    /* Can the family's kernels run model m? 0, or -1 with st->msg (one
     * line: an unsupported rope_scaling, a head size RoPE cannot take). */
    int (*check)(const struct oc_model *m, struct oc_status *st);
    /* The family's fields of d (RMSNorm's eps, the rotary frequencies),
     * after the shared ones. */
    void (*dims)(struct oc_gpt_dims *d, const struct oc_model *m);
    /* out (N,C) = norm(in) * w (+ b), keeping mean (may be NULL: RMSNorm)
     * and rstd (N); backward adds to din, dw and db (NULL: none). */
    void (*norm_fwd)(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                     float *out, float *mean, float *rstd, const float *in,
                     const float *w, const float *b, int64_t N);
    void (*norm_bwd)(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                     float *din, float *dw, float *db, const float *dout,
                     const float *in, const float *w, const float *mean,
                     const float *rstd, int64_t N);
    /* Positions inside attention, on the q and k of qkv (B,T,nkv,g+2,HS)
     * after the QKV linear (forward) and on dqkv before its backward. */
    void (*qk_fwd)(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                   float *qkv);
    void (*qk_bwd)(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                   float *dqkv);
    /* hg (B*T, f) = act(h (B*T, mlp_up*f)). */
    void (*act_fwd)(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                    float *hg, const float *h);
    /* work holds d(hg) (B*T*f floats at its start); returns where d(h)
     * (B*T, mlp_up*f) is: in place, or further into work, within
     * act_work_floats. */
    float *(*act_bwd)(const struct oc_kernels *k, const struct oc_gpt_dims *d,
                      float *work, const float *h);
    int64_t (*act_work_floats)(const struct oc_kernels *k, const struct oc_gpt_dims *d);
};

extern const struct oc_gpt_block oc_gpt_block_gpt2;  /* gpt.c */
extern const struct oc_gpt_block oc_gpt_block_llama; /* llama.c */

/* n floats rounded up to the kernels' alignment (ops.h's align_floats):
 * where the next piece of a work buffer may start. */
int64_t oc_gpt_piece(const struct oc_kernels *k, int64_t n);
/* Floats of one token's q, k, v here: nkv groups of g queries, a key and
 * a value (3 * nh * HS without GQA); gpt_dims.c. */
int64_t oc_gpt_qkv_width(const struct oc_gpt_dims *d);

#endif
