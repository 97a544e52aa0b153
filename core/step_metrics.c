/* step_metrics.c: a step's metrics from a timeline (see step_metrics.h,
 * which defines every figure computed here). */
#include "step_metrics.h"

#include <string.h>

static int is_async(const struct oc_op *op)
{
    return op->kind == OC_OP_COLLECTIVE && op->async;
}

static double rank_end(const struct oc_rank_ops *ro, const double *end)
{
    double e = 0;
    for (int64_t i = 0; i < ro->n; i++)
        if (ro->ops[i].kind != OC_OP_SEND && !is_async(&ro->ops[i]) && end[i] > e)
            e = end[i];
    return e;
}

static double running_peak(const struct oc_rank_ops *ro)
{
    double mem = 0, peak = 0;
    for (int64_t i = 0; i < ro->n; i++) {
        if (ro->ops[i].kind == OC_OP_ALLOC) {
            mem += ro->ops[i].bytes;
            if (mem > peak)
                peak = mem;
        } else if (ro->ops[i].kind == OC_OP_FREE) {
            mem -= ro->ops[i].bytes;
        }
    }
    return peak;
}

/* The message of op i of rank r (a SEND or RECV): its SEND's start (sent),
 * its RECV's start (posted) and end (arrived). 0 when the other end is
 * not recorded. */
struct tl_msg {
    const struct oc_timeline *tl;
    int64_t *const *partner;
    int64_t r;
};

static int message(void *ctx, int64_t i, double *sent, double *posted, double *arrived)
{
    const struct tl_msg *c = ctx;
    const struct oc_timeline *tl = c->tl;
    const int64_t r = c->r;
    const struct oc_op *op = &tl->sched->ranks[r].ops[i];
    const int64_t j = c->partner[r][i];
    if (j < 0 || !tl->start_s[op->peer])
        return 0;
    const int recv = op->kind == OC_OP_RECV;
    const int64_t sr = recv ? op->peer : r, si = recv ? j : i;
    const int64_t rr = recv ? r : op->peer, ri = recv ? i : j;
    *sent = tl->start_s[sr][si];
    *posted = tl->start_s[rr][ri];
    *arrived = tl->end_s[rr][ri];
    return 1;
}

void oc_step_rank_figures(const struct oc_rank_ops *ro, const double *S, const double *E,
                          const double *I, const double *peak_mem, oc_step_msg_fn msg,
                          void *ctx, struct oc_rank_fig *f)
{
    memset(f, 0, sizeof *f);
    f->end = rank_end(ro, E);
    double sent, posted, arrived;
    /* The ops the rank waits through, in list order. */
    for (int64_t i = 0; i < ro->n; i++) {
        const struct oc_op *op = &ro->ops[i];
        const double dur = E[i] - S[i], inner = I ? I[i] : 0;
        if (op->kind == OC_OP_COMPUTE)
            f->compute += dur;
        else if (inner != 0)
            f->compute += inner;
        switch ((enum oc_op_kind)op->kind) {
        case OC_OP_RECV: {
            if (op->p2p == OC_P2P_KV) {
                /* A ring step's receive runs from its post (with the
                 * step's send) to the block's arrival, alongside the
                 * step's compute: the rank waits only for the rest. */
                int64_t k = i - 1;
                while (k >= 0 && ro->ops[k].kind == OC_OP_SEND)
                    k--;
                const double from = k >= 0 && E[k] > S[i] ? E[k] : S[i];
                f->exposed += E[i] > from ? E[i] - from : 0;
                break;
            }
            double wait = 0;
            if (msg(ctx, i, &sent, &posted, &arrived)) {
                wait = (sent < E[i] ? sent : E[i]) - S[i];
                if (wait < 0)
                    wait = 0;
            }
            f->bubble += wait;
            f->exposed += dur - wait;
            break;
        }
        case OC_OP_COLLECTIVE:
            if (op->async)
                break;
            if (op->group == OC_GROUP_TP)
                f->tp += dur - inner;
            else
                f->dp += dur - inner;
            f->exposed += dur - inner;
            break;
        case OC_OP_WAIT:
            f->exposed += dur;
            break;
        default:
            break;
        }
    }
    /* What runs on after the rank moved on: transfers, async collectives. */
    for (int64_t i = 0; i < ro->n; i++) {
        const struct oc_op *op = &ro->ops[i];
        if (op->kind == OC_OP_SEND && msg(ctx, i, &sent, &posted, &arrived)) {
            const double pp = arrived - (sent > posted ? sent : posted);
            /* a context-parallel ring step is its own class */
            if (op->p2p == OC_P2P_KV)
                f->cp += pp > 0 ? pp : 0;
            else
                f->pp += pp > 0 ? pp : 0;
        } else if (is_async(op)) {
            if (op->group == OC_GROUP_TP)
                f->tp += E[i] - S[i];
            else
                f->dp += E[i] - S[i];
        }
    }
    f->peak_mem = peak_mem ? *peak_mem : running_peak(ro);
}

void oc_step_metrics(const struct oc_timeline *tl, struct oc_metrics *mt)
{
    const struct oc_schedule *s = tl->sched;
    const int64_t R = tl->nranks;
    OC_ASSERT(R == s->nranks);
    int64_t **partner = tl->partner ? tl->partner : oc_timeline_partners(s);
    struct oc_rank_fig *f = oc_xcalloc((size_t)R, sizeof *f);
    unsigned char *rec = oc_xcalloc((size_t)R, 1);
    for (int64_t r = 0; r < R; r++)
        if (tl->start_s[r]) {
            struct tl_msg c = {tl, partner, r};
            rec[r] = 1;
            oc_step_rank_figures(&s->ranks[r], tl->start_s[r], tl->end_s[r],
                                 tl->inner_s ? tl->inner_s[r] : NULL,
                                 tl->peak_mem_bytes ? &tl->peak_mem_bytes[r] : NULL, message,
                                 &c, &f[r]);
        }
    oc_step_metrics_ranks(&s->layout, R, rec, f, mt);
    free(rec);
    free(f);
    if (partner != tl->partner)
        oc_timeline_partners_free(partner, R);
}

void oc_step_metrics_ranks(const struct oc_layout *l, int64_t R, const unsigned char *rec,
                           struct oc_rank_fig *f, struct oc_metrics *mt)
{
    const int64_t P = l->pp;
    OC_ASSERT(P == mt->nstages);
    double step = 0;
    for (int64_t r = 0; r < R; r++)
        if (rec[r] && f[r].end > step)
            step = f[r].end;
    mt->step_time_s = step;
    int64_t *count = oc_xcalloc((size_t)P, sizeof *count);
    memset(mt->stage, 0, (size_t)P * sizeof mt->stage[0]);
    for (int64_t r = 0; r < R; r++) {
        if (!rec[r])
            continue;
        const int64_t k = oc_layout_coord(l, r).pp;
        struct oc_stage_metrics *g = &mt->stage[k];
        f[r].bubble += step - f[r].end;
        count[k]++;
        g->compute_s += f[r].compute;
        g->bubble_s += f[r].bubble;
        g->tp_comm_s += f[r].tp;
        g->pp_comm_s += f[r].pp;
        g->dp_comm_s += f[r].dp;
        g->cp_comm_s += f[r].cp;
        g->exposed_comm_s += f[r].exposed;
        if (f[r].peak_mem > g->peak_mem_bytes)
            g->peak_mem_bytes = f[r].peak_mem;
    }
    for (int64_t k = 0; k < P; k++) {
        OC_ASSERT(count[k] > 0);
        struct oc_stage_metrics *g = &mt->stage[k];
        const double n = (double)count[k];
        g->compute_s /= n;
        g->bubble_s /= n;
        g->tp_comm_s /= n;
        g->pp_comm_s /= n;
        g->dp_comm_s /= n;
        g->cp_comm_s /= n;
        g->exposed_comm_s /= n;
    }
    free(count);
}
