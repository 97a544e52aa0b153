/* runner.c: one rank's op list run for real, op by op (see runner.h):
 * the runner's set-up and tear-down, and the measured metrics of a step
 * from every rank's op times. runner_priv.h lists the runner's other
 * files: the step's walk over the ops (runner_step.c), the activation
 * buffers and the parts' calls (runner_parts.c), the DP buckets and ZeRO-1
 * (runner_dp.c), the compressed DP exchange (runner_gc.c).
 *
 * What the runner is not: model math (model/gpt.c), numerics (the
 * kernels), communication or timing (the backends: cpu/backend_cpu.c,
 * cuda/backend_cuda.c), the parameter arena (params.c), the program around
 * it (main.c, launch.c, out_*.c; options: cli/), the definitions of the step's
 * figures (core/step_metrics.h).
 */
#include "runner_priv.h"

#include <stdlib.h>
#include <string.h>

#include "placement.h"
#include "step_metrics.h"
#include "timeline.h"

/* ------------------------------------------------------------------ */
/* Set-up                                                               */

void oc_runner_param_opts(const struct oc_layout *l, const struct oc_model *m,
                          int64_t tp_rank, int64_t stage, uint64_t seed,
                          int64_t *layers, struct oc_params_opts *o)
{
    int64_t n = 0;
    for (int64_t c = 0; c < oc_place_chunks_per_stage(l); c++) {
        const struct oc_layer_range lr = oc_place_chunk_layers(l, m, stage, c);
        for (int64_t j = 0; j < lr.count; j++)
            layers[n++] = lr.first + j;
    }
    memset(o, 0, sizeof *o);
    o->tp = l->tp;
    o->tp_rank = tp_rank;
    o->layers = layers;
    o->nlayers = n;
    o->has_embed = oc_place_stage_has_embed(l, stage);
    o->has_head = oc_place_stage_has_head(l, stage);
    o->seed = seed;
}

int oc_runner_init(struct oc_runner *r, const struct oc_model *m,
                   const struct oc_schedule *s, struct oc_backend *b,
                   const struct oc_runner_opts *o, struct oc_status *st)
{
    memset(r, 0, sizeof *r);
    r->model = m;
    r->sched = s;
    r->l = &s->layout;
    r->b = b;
    r->ctl = b->ctl;
    r->o = *o;
    r->rank = b->ctl->rank;
    r->me = oc_layout_coord(r->l, r->rank);
    r->ops = &s->ranks[r->rank];
    r->nops = r->ops->n;
    r->call_op = -1;
    r->tied = -1;
    const struct oc_layout *l = r->l;
    OC_ASSERT(o->steps >= 1);
    if (l->schedule != OC_SCHED_INTERLEAVED && l->vchunks != 1)
        return oc_fail(st, "exec: v%lld needs the interleaved schedule",
                       (long long)l->vchunks);
    if (oc_gpt_check_layout(m, l, st) != 0)
        return -1;
    if (oc_gpt_dims_layout(&r->d, m, l, r->me.tp, st) != 0)
        return -1;
    r->t = l->tp;
    r->pp = l->pp;
    r->dp = l->dp;
    r->m = s->num_micro_batches;
    r->v = l->vchunks;
    /* every chunk of a stage holds as many layers (placement.h) */
    r->lc = oc_place_chunk_layers(l, m, r->me.pp, 0).count;
    r->N = r->d.B * r->d.T;
    r->C = r->d.C;
    r->S = oc_gpt_stream_floats(&r->d);
    r->A = oc_gpt_attn_act_floats(&r->d);
    r->Aatt = oc_gpt_att_floats(&r->d);
    r->M = oc_gpt_mlp_act_floats(&r->d);
    r->H = oc_gpt_head_act_floats(&r->d);
    const int64_t S = r->S;
    r->per_layer = oc_gpt_layer_kept_floats(&r->d, l->recompute);
    /* The head's gradient is of grad_scale * the sum of token losses; with
     * the DP sum of gradients this is the gradient of the global batch's
     * mean loss (gpt.h, "Gradients"). */
    r->grad_scale = (float)(1.0 / ((double)l->global_batch * (double)l->seq_length));

    int64_t *layers = oc_xmalloc((size_t)m->num_hidden_layers * sizeof *layers);
    struct oc_params_opts po;
    oc_runner_param_opts(l, m, r->me.tp, r->me.pp, o->seed, layers, &po);
    /* ZeRO-1: AdamW's moments for this DP rank's slices only (params.h) */
    const int64_t opt_d = l->zero ? l->dp : 1;
    int rc = oc_params_init_sharded(&r->p, m, &po, opt_d, opt_d > 1 ? r->me.dp : 0, st);
    free(layers);
    if (rc != 0)
        return -1;
    if (b->ops->params_adopt(b, &r->p, st) != 0)
        return -1;
    oc_rn_account(r, OC_BUF_WEIGHTS, (double)r->p.n * sizeof(float));
    oc_rn_account(r, OC_BUF_GRADS, (double)r->p.n * sizeof(float));
    oc_rn_account(r, OC_BUF_OPTIMIZER, oc_params_optimizer_bytes(&r->p));
    /* data: its own stream, keyed apart from the weights' */
    if (oc_synth_init(&r->syn, m->vocab_size, o->seed + 1, st) != 0)
        return -1;

    const size_t units = (size_t)(r->m * r->v);
    r->act = oc_xcalloc(units, sizeof *r->act);
    r->send_act = oc_xcalloc(units, sizeof *r->send_act);
    r->send_grad = oc_xcalloc(units, sizeof *r->send_grad);
    r->logits = oc_xcalloc((size_t)r->m, sizeof *r->logits);
    r->gs = oc_rn_mem_get(r, OC_BUF_COMM, S);
    if (oc_gpt_reserve(&b->kernels, &r->d, st) != 0)
        return -1;
    r->work = oc_rn_mem_get(r, OC_BUF_ACTIVATIONS, oc_gpt_work_floats(&b->kernels, &r->d));
    if (r->p.has_head)
        r->losses = oc_rn_mem_get(r, OC_BUF_LOGITS, r->m * r->N);
    if (l->recompute == OC_RECOMPUTE_FULL)
        r->shared = oc_rn_mem_get(r, OC_BUF_ACTIVATIONS, r->A + r->M + 2 * S);
    else if (l->recompute == OC_RECOMPUTE_SELECTIVE)
        r->shared = oc_rn_mem_get(r, OC_BUF_ACTIVATIONS, r->Aatt);
    r->tok = oc_xmalloc((size_t)(r->m * r->N) * sizeof *r->tok);
    r->tgt = oc_xmalloc((size_t)(r->m * r->N) * sizeof *r->tgt);
    r->tok_b = b->ops->alloc(b, r->m * r->N * (int64_t)sizeof *r->tok_b);
    r->tgt_b = b->ops->alloc(b, r->m * r->N * (int64_t)sizeof *r->tgt_b);

    oc_rn_buckets_init(r);
    if (oc_rn_gc_init(r, st) != 0)
        return -1;
    int64_t tn = 0;
    if (oc_params_tied_grad(&r->p, &tn) &&
        oc_place_tied_allreduce(l, m, r->me.pp)) {
        const struct oc_param_tensor *t =
            oc_params_tensor(&r->p, r->p.has_embed ? OC_P_WTE : OC_P_LMW, -1);
        r->tied = t - r->p.t;
    }

    const size_t times = (size_t)r->nops; /* one step's (runner.h) */
    r->start_s = oc_xcalloc(times, sizeof *r->start_s);
    r->end_s = oc_xcalloc(times, sizeof *r->end_s);
    r->inner_s = oc_xcalloc(times, sizeof *r->inner_s);
    return 0;
}

const float *oc_runner_weights(struct oc_runner *r)
{
    if (!r->w_host)
        r->w_host = oc_xmalloc((size_t)r->p.n * sizeof *r->w_host);
    r->b->ops->download(r->b, r->w_host, r->p.w, r->p.n * (int64_t)sizeof *r->w_host);
    return r->w_host;
}

void oc_runner_free(struct oc_runner *r)
{
    if (!r->ops)
        return;
    struct oc_backend *b = r->b;
    void (*bfree)(struct oc_backend *, void *) = b->ops->free;
    free(r->inner_s);
    free(r->end_s);
    free(r->start_s);
    free(r->pend);
    oc_rn_gc_free(r);
    if (r->bk)
        oc_rn_buckets_free(r);
    free(r->tgt);
    free(r->tok);
    bfree(b, r->tgt_b);
    bfree(b, r->tok_b);
    free(r->w_host);
    bfree(b, r->shared);
    bfree(b, r->losses);
    bfree(b, r->work);
    bfree(b, r->gs);
    for (int64_t i = 0; i < r->m * r->v; i++) {
        if (r->act)
            bfree(b, r->act[i]);
        if (r->send_act)
            bfree(b, r->send_act[i]);
        if (r->send_grad)
            bfree(b, r->send_grad[i]);
    }
    for (int64_t i = 0; r->logits && i < r->m; i++)
        bfree(b, r->logits[i]);
    free(r->logits);
    free(r->send_grad);
    free(r->send_act);
    free(r->act);
    oc_synth_free(&r->syn);
    if (r->p.w)
        b->ops->params_release(b, &r->p);
    oc_params_free(&r->p);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------ */
/* Measured metrics                                                     */

void oc_runner_step_metrics(const struct oc_schedule *s, double *const *start,
                            double *const *end, double *const *inner,
                            const double *peak_mem, struct oc_metrics *mt)
{
    /* The measured intervals as a timeline (core/timeline.h): a RECV's
     * time includes its wait for the data; a SEND's and an async
     * collective's end are when the rank saw them complete. */
    struct oc_timeline tl;
    oc_timeline_init(&tl, s, NULL);
    oc_timeline_measured(&tl);
    for (int64_t r = 0; r < s->nranks; r++) {
        const size_t n = (size_t)s->ranks[r].n * sizeof(double);
        memcpy(tl.start_s[r], start[r], n);
        memcpy(tl.end_s[r], end[r], n);
        memcpy(tl.inner_s[r], inner[r], n);
        tl.peak_mem_bytes[r] = peak_mem ? peak_mem[r] : 0;
    }
    oc_step_metrics(&tl, mt);
    oc_timeline_send_arrivals(&tl);
    for (int64_t r = 0; r < s->nranks; r++)
        memcpy(end[r], tl.end_s[r], (size_t)s->ranks[r].n * sizeof(double));
    oc_timeline_free(&tl);
}
