/* replay_steady.c: the steady-state fold of the replay (symmetry in time,
 * opts.steady; replay.h).
 *
 * A 1F1B pipeline of m micro-batches spends most of a step in its steady
 * state: every stage alternates one forward and one backward, and in a
 * deterministic simulation the whole machine then repeats itself from
 * one micro-batch to the next (from one group of p micro-batches to the
 * next under the interleaved schedule, whose unit order repeats with that
 * period), shifted in time by a period P. So a run with m1 < m
 * micro-batches (the reduced run) holds every distinct event of the
 * full run: the full run is the reduced run with D = m - m1 micro-batches
 * more of steady state inserted, each period a copy shifted by P. The
 * fold runs the reduced replay, checks that it did repeat itself, and
 * writes the full schedule's timeline from it (oc_rp_steady_unfold, for a
 * caller that keeps the timeline); core/step_metrics.h then derives every
 * figure from that timeline as from a full replay. A caller that wants
 * the figures alone reads the same op times rank by rank, without the
 * full schedule (oc_rp_steady_figures: the same doubles). The
 * simulation's cost then grows with p (and v), not with m: llama2-70b
 * tp1-pp16-dp1-cp4 with 512 micro-batches simulates 53.
 *
 * The plan (oc_rp_steady_plan), K the period in micro-batches (1; p when
 * interleaved), W the micro-batches a stage's warm-up or cool-down spans
 * (p; 2p when interleaved: (p-1)*2 + (v-1)*p chunk-forwards):
 *   c0 = W + K                  the window's first micro-batch (one period
 *                               after the warm-up, to settle)
 *   c1 = c0 + p + 2K            the verified micro-batches are [c0, c1):
 *                               each mb j + K is mb j shifted by P
 *   m1 = c1 + K + W + K         the reduced run (rounded up to K)
 * and the fold is used where 2 * m1 <= m (else the full run is as cheap).
 *
 * The unfold (oc_rp_steady_unfold): full micro-batch i is the reduced
 *   i            shifted by 0        when i < c1
 *   c1 - K + (i - c1) % K    by ((i - c1) / K + 1) P  when c1 <= i < c1 + D
 *   i - D        by (D / K) P        when i >= c1 + D
 * and the n-th op of a rank with micro-batch i is the n-th op of that
 * rank with the image micro-batch (checked: same kind, phase, part,
 * sizes, costs, peer). Ops of no micro-batch (the optimizer step, the DP
 * reduction, ZeRO's step ops, WAIT) are matched in order: shifted by 0
 * before the window, by (D / K) P after it; one inside the window breaks
 * the fold.
 *
 * Why a copy is exact, and what is checked (in the reduced run, on every
 * recorded rank):
 *   - periodicity: every op of micro-batch j + K starts and ends P after
 *     the same op of micro-batch j, for every j in [c0, c1) (to 1e-9 of
 *     the step);
 *   - a repeating state: there is a moment A such that every op in
 *     flight during [A - Lmax, A] (Lmax the longest op of the window) has
 *     a micro-batch in [c0, c1) and every op in flight at A + P one in
 *     [c0 + K, c1 + K), i.e.
 *       max(t_lo + Lmax, e0 - P) < s1
 *     with t_lo the last end of an op before the window, e0 the last end
 *     of an op of micro-batches [c0, c0 + K), s1 the first start of an op
 *     of micro-batch c1 or later (or of no micro-batch after the window).
 * Then the simulation's state at A + P (the actors' positions, the flows
 * and computations in flight with their progress, which depends only on
 * what shared their resources since they started) is the state at A
 * shifted by P with every micro-batch renumbered by K, and SimGrid being
 * deterministic, what follows a state depends on the state and on the op
 * lists ahead. The full run's op lists are the reduced run's until the
 * reduced run's cool-down, which comes after s1 (the window ends before
 * it): so the full run passes through the same state at A and at A + P,
 * and from there repeats the period as long as its op lists do, D / K
 * periods more than the reduced run, before it enters the same cool-down
 * from the same state, shifted by (D / K) P. Where a check fails the
 * caller runs the full replay (replay.c), and the debug log of category
 * ocsim_steady says why.
 */
#define _POSIX_C_SOURCE 200809L

#include "replay_priv.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mbsplit.h"
#include "sim_log.h"
#include "step_metrics.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_steady, ocsim,
                                "ocsim: the replay's steady-state fold (where it holds)");

static int64_t round_up(int64_t x, int64_t k) { return (x + k - 1) / k * k; }

int oc_rp_steady_plan(const struct oc_layout *l, struct oc_rp_steady *sp)
{
    memset(sp, 0, sizeof *sp);
    if (l->schedule != OC_SCHED_1F1B && l->schedule != OC_SCHED_INTERLEAVED)
        return 0; /* gpipe: its backward phase starts after all m forwards */
    if (oc_mbs_on(l))
        return 0; /* unequal counts per replica (mbsplit.h): the reduced run
                     would need one reduction per count; the full replay runs */
    const int64_t p = l->pp, m = oc_layout_num_micro_batches(l);
    const int inter = l->schedule == OC_SCHED_INTERLEAVED;
    const int64_t K = inter ? p : 1, W = inter ? 2 * p : p;
    sp->K = K;
    sp->c0 = round_up(W + K, K);
    sp->c1 = sp->c0 + round_up(p + 2 * K, K);
    sp->m1 = round_up(sp->c1 + K + W + K, K);
    sp->D = m - sp->m1;
    return p > 1 && 2 * sp->m1 <= m && sp->D % K == 0;
}

/* The reduced micro-batch of full micro-batch i, and its periods of shift. */
static int64_t image_mb(const struct oc_rp_steady *sp, int64_t i, int64_t *periods)
{
    if (i < sp->c1) {
        *periods = 0;
        return i;
    }
    if (i >= sp->c1 + sp->D) {
        *periods = sp->D / sp->K;
        return i - sp->D;
    }
    *periods = (i - sp->c1) / sp->K + 1;
    return sp->c1 - sp->K + (i - sp->c1) % sp->K;
}

/* The same op but for its micro-batch and tag (and so its time). */
static int alike(const struct oc_op *x, const struct oc_op *y)
{
    return x->kind == y->kind && x->phase == y->phase && x->part == y->part &&
           x->coll == y->coll && x->group == y->group && x->buf == y->buf &&
           x->p2p == y->p2p && x->async == y->async && x->stage == y->stage &&
           x->chunk == y->chunk && x->layer_first == y->layer_first &&
           x->layer_count == y->layer_count && x->count == y->count &&
           x->flops == y->flops && x->hbm_bytes == y->hbm_bytes && x->bytes == y->bytes &&
           ((x->kind != OC_OP_SEND && x->kind != OC_OP_RECV) || x->peer == y->peer);
}

/* One rank's ops grouped by micro-batch: at[first[j] .. first[j + 1]) are
 * the indices of micro-batch j's ops in order; none[] those of no
 * micro-batch. */
struct bymb {
    int64_t *first, *at, *none, nnone;
    int64_t lo, hi; /* the window's first and last op (check_reduced) */
};

static void bymb_init(struct bymb *b, const struct oc_rank_ops *ro, int64_t m)
{
    b->first = oc_xcalloc((size_t)(m + 2), sizeof *b->first);
    b->at = oc_xmalloc((size_t)(ro->n > 0 ? ro->n : 1) * sizeof *b->at);
    b->none = oc_xmalloc((size_t)(ro->n > 0 ? ro->n : 1) * sizeof *b->none);
    b->nnone = 0;
    for (int64_t i = 0; i < ro->n; i++)
        if (ro->ops[i].mb >= 0)
            b->first[ro->ops[i].mb + 2]++;
    for (int64_t j = 0; j < m; j++)
        b->first[j + 2] += b->first[j + 1];
    for (int64_t i = 0; i < ro->n; i++) {
        const int32_t mb = ro->ops[i].mb;
        if (mb >= 0)
            b->at[b->first[mb + 1]++] = i;
        else
            b->none[b->nnone++] = i;
    }
}

static void bymb_free(struct bymb *b)
{
    free(b->first);
    free(b->at);
    free(b->none);
}

static int fail(char *why, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return -1;
}

/* The checks of the file comment on the reduced run: the period P, and
 * the class of each op of no micro-batch (0 before the window, 1 after). */
static int check_reduced(const struct oc_schedule *sr, const struct oc_timeline *tl1,
                         const struct oc_rp_steady *sp, struct bymb *b, double *P_out,
                         char *why, size_t nwhy)
{
    const int64_t K = sp->K, c0 = sp->c0, c1 = sp->c1;
    double P = -1.0, tol = 0.0, t_lo = 0.0, e0 = 0.0, s_hi = INFINITY, lmax = 0.0;
    for (int64_t r = 0; r < sr->nranks; r++)
        for (int64_t i = 0; tl1->end_s[r] && i < sr->ranks[r].n; i++)
            tol = fmax(tol, tl1->end_s[r][i]);
    tol *= 1e-9; /* of the step */
    for (int64_t r = 0; r < sr->nranks; r++) {
        if (!tl1->start_s[r])
            continue;
        const struct oc_rank_ops *ro = &sr->ranks[r];
        const double *st = tl1->start_s[r], *en = tl1->end_s[r];
        struct bymb *B = &b[r];
        for (int64_t j = c0; j < c1; j++) {
            const int64_t n = B->first[j + 1] - B->first[j];
            if (B->first[j + K + 1] - B->first[j + K] != n)
                return fail(why, nwhy, "rank %" PRId64 ": micro-batches %" PRId64 " and %" PRId64
                            " have %" PRId64 " and %" PRId64 " ops", r, j, j + K, n,
                            B->first[j + K + 1] - B->first[j + K]);
            for (int64_t q = 0; q < n; q++) {
                const int64_t x = B->at[B->first[j] + q], y = B->at[B->first[j + K] + q];
                if (!alike(&ro->ops[x], &ro->ops[y]))
                    return fail(why, nwhy, "rank %" PRId64 ": op %" PRId64 " of micro-batch %"
                                PRId64 " differs from micro-batch %" PRId64 "'s", r, q, j + K, j);
                if (P < 0)
                    P = st[y] - st[x];
                if (fabs(st[y] - st[x] - P) > tol || fabs(en[y] - en[x] - P) > tol)
                    return fail(why, nwhy, "rank %" PRId64 ": micro-batch %" PRId64 " op %" PRId64
                                " is %.9g s after micro-batch %" PRId64 "'s, the period %.9g s",
                                r, j + K, q, st[y] - st[x], j, P);
            }
        }
        for (int64_t j = c0; j < c1 + K; j++)
            for (int64_t q = B->first[j]; q < B->first[j + 1]; q++) {
                const int64_t x = B->at[q];
                lmax = fmax(lmax, en[x] - st[x]);
                if (j < c0 + K)
                    e0 = fmax(e0, en[x]);
            }
        for (int64_t q = 0; q < B->first[c0]; q++)
            t_lo = fmax(t_lo, en[B->at[q]]);
        for (int64_t q = B->first[c1]; q < B->first[sp->m1]; q++)
            s_hi = fmin(s_hi, st[B->at[q]]);
        /* ops of no micro-batch: before every op of the window, or after */
        int64_t lo = ro->n, hi = -1;
        for (int64_t q = B->first[c0]; q < B->first[c1 + K]; q++) {
            lo = B->at[q] < lo ? B->at[q] : lo;
            hi = B->at[q] > hi ? B->at[q] : hi;
        }
        B->lo = lo;
        B->hi = hi;
        for (int64_t q = 0; q < B->nnone; q++) {
            const int64_t x = B->none[q];
            if (x < lo)
                t_lo = fmax(t_lo, en[x]);
            else if (x > hi)
                s_hi = fmin(s_hi, st[x]);
            else
                return fail(why, nwhy, "rank %" PRId64 ": op %" PRId64 " of no micro-batch "
                            "lies in the window", r, x);
        }
    }
    if (!(P > 0))
        return fail(why, nwhy, "no period (P = %g s)", P);
    if (!(fmax(t_lo + lmax, e0 - P) < s_hi))
        return fail(why, nwhy, "no moment of repeating state: last end before the window "
                    "%.6g s + longest op %.6g s, first period's last end %.6g s - P %.6g s, "
                    "first start after %.6g s", t_lo, lmax, e0, P, s_hi);
    *P_out = P;
    return 0;
}

/* Rank r's full list F read against its reduced list A (grouped in B):
 * each op's image y in A and its periods of shift, and its times (the
 * image's shifted by periods * P) into S and E; img and per, where given,
 * keep y and the periods. 0, or -1 with why when an op has no image or
 * differs from it. seen: m counters, zeroed here. */
static int image_rank(const struct oc_rp_steady *sp, int64_t r, const struct oc_rank_ops *F,
                      const struct oc_rank_ops *A, const struct bymb *B,
                      const struct oc_timeline *tl1, double P, int64_t m, int64_t *seen,
                      double *S, double *E, int64_t *img, int64_t *per, char *why, size_t nwhy)
{
    memset(seen, 0, (size_t)m * sizeof *seen);
    int64_t nnone = 0;
    for (int64_t x = 0; x < F->n; x++) {
        const struct oc_op *op = &F->ops[x];
        int64_t y, periods;
        if (op->mb >= 0) {
            const int64_t i1 = image_mb(sp, op->mb, &periods);
            const int64_t n = seen[op->mb]++;
            if (n >= B->first[i1 + 1] - B->first[i1])
                return fail(why, nwhy, "rank %" PRId64 ": micro-batch %d has more ops than "
                            "its image %" PRId64, r, op->mb, i1);
            y = B->at[B->first[i1] + n];
        } else {
            if (nnone >= B->nnone)
                return fail(why, nwhy, "rank %" PRId64 ": more ops of no micro-batch", r);
            y = B->none[nnone++];
            /* after the window in the reduced run: after the inserted
             * periods here */
            periods = y > B->hi ? sp->D / sp->K : 0;
        }
        if (!alike(op, &A->ops[y]))
            return fail(why, nwhy, "rank %" PRId64 ": op %" PRId64 " differs from its "
                        "image %" PRId64 " in the reduced run", r, x, y);
        S[x] = tl1->start_s[r][y] + (double)periods * P;
        E[x] = tl1->end_s[r][y] + (double)periods * P;
        if (img) {
            img[x] = y;
            per[x] = periods;
        }
    }
    if (nnone != B->nnone)
        return fail(why, nwhy, "rank %" PRId64 ": %" PRId64 " ops of no micro-batch, the "
                    "reduced run %" PRId64, r, nnone, B->nnone);
    return 0;
}

/* The reduced run's recorded ranks grouped by micro-batch, and the checks
 * (check_reduced): 0 with P, or -1 with why. b: R entries, freed by
 * bymb_all_free whatever the result. */
static int reduced_checked(const struct oc_schedule *s1, const struct oc_timeline *tl1,
                           const struct oc_rp_steady *sp, struct bymb *b, double *P,
                           char *why, size_t nwhy)
{
    for (int64_t r = 0; r < s1->nranks; r++)
        if (tl1->start_s[r])
            bymb_init(&b[r], &s1->ranks[r], s1->num_micro_batches);
    return check_reduced(s1, tl1, sp, b, P, why, nwhy);
}

static void bymb_all_free(const struct oc_timeline *tl1, struct bymb *b)
{
    for (int64_t r = 0; r < tl1->nranks; r++)
        if (tl1->start_s[r])
            bymb_free(&b[r]);
    free(b);
}

int oc_rp_steady_unfold(const struct oc_schedule *s1, const struct oc_timeline *tl1,
                        const struct oc_schedule *s, struct oc_timeline *tl,
                        const struct oc_rp_steady *sp, char *why, size_t nwhy)
{
    OC_ASSERT(s1->nranks == s->nranks && tl1->nranks == s1->nranks);
    const int64_t R = s->nranks, m = s->num_micro_batches, m1 = s1->num_micro_batches;
    OC_ASSERT(m1 == sp->m1 && m == m1 + sp->D);
    unsigned char *record = oc_xcalloc((size_t)R, 1);
    for (int64_t r = 0; r < R; r++)
        record[r] = tl1->start_s[r] != NULL;
    oc_timeline_init(tl, s, record);
    free(record);
    memcpy(tl->proxy, tl1->proxy, (size_t)R * sizeof *tl->proxy);

    struct bymb *b = oc_xcalloc((size_t)R, sizeof *b);
    double P = 0.0;
    int rc = reduced_checked(s1, tl1, sp, b, &P, why, nwhy);
    int64_t *seen = oc_xcalloc((size_t)(m > 0 ? m : 1), sizeof *seen);
    for (int64_t r = 0; rc == 0 && r < R; r++)
        if (tl1->start_s[r])
            rc = image_rank(sp, r, &s->ranks[r], &s1->ranks[r], &b[r], tl1, P, m, seen,
                            tl->start_s[r], tl->end_s[r], NULL, NULL, why, nwhy);
    free(seen);
    bymb_all_free(tl1, b);
    if (rc != 0)
        oc_timeline_free(tl);
    else
        XBT_DEBUG("steady-state fold: %" PRId64 " of %" PRId64 " micro-batches simulated, "
                  "period %.9g s", m1, m, P);
    return rc;
}

/* A message of the full run read from the reduced one: the other end of
 * op i (image y) is the image's partner shifted by the same periods (both
 * ends carry one micro-batch, so one image micro-batch and one shift). */
struct fold_msg {
    const struct oc_rank_ops *ro;
    const double *S, *E;
    const int64_t *img, *per;
    int64_t r;
    int64_t *const *partner1;
    const struct oc_timeline *tl1;
    double P;
};

static int fold_message(void *ctx, int64_t i, double *sent, double *posted, double *arrived)
{
    const struct fold_msg *c = ctx;
    const struct oc_op *op = &c->ro->ops[i];
    const int64_t j = c->partner1[c->r][c->img[i]];
    if (j < 0 || !c->tl1->start_s[op->peer])
        return 0;
    const double ps = c->tl1->start_s[op->peer][j] + (double)c->per[i] * c->P;
    if (op->kind == OC_OP_RECV) {
        *sent = ps;
        *posted = c->S[i];
        *arrived = c->E[i];
    } else {
        *sent = c->S[i];
        *posted = ps;
        *arrived = c->tl1->end_s[op->peer][j] + (double)c->per[i] * c->P;
    }
    return 1;
}

/* Buffers for one rank of the full run, grown as needed. */
struct fold_rank {
    struct oc_rank_ops ro;
    double *S, *E;
    int64_t *img, *per, cap;
};

static void fold_rank_fit(struct fold_rank *w)
{
    if (w->ro.n <= w->cap)
        return;
    w->cap = w->ro.n;
    w->S = oc_xrealloc(w->S, (size_t)w->cap * sizeof *w->S);
    w->E = oc_xrealloc(w->E, (size_t)w->cap * sizeof *w->E);
    w->img = oc_xrealloc(w->img, (size_t)w->cap * sizeof *w->img);
    w->per = oc_xrealloc(w->per, (size_t)w->cap * sizeof *w->per);
}

static void fold_rank_free(struct fold_rank *w)
{
    free(w->ro.ops);
    free(w->S);
    free(w->E);
    free(w->img);
    free(w->per);
}

int oc_rp_steady_figures(const struct oc_model *m, const struct oc_layout *l,
                         const struct oc_schedule_opts *so, const struct oc_schedule *s1,
                         const struct oc_timeline *tl1, const struct oc_rp_steady *sp,
                         struct oc_metrics *mt, struct oc_status *st, char *why,
                         size_t nwhy)
{
    struct oc_schedule_builder *bld;
    if (oc_schedule_builder_new(&bld, m, l, so, st) != 0)
        return -1;
    const int64_t R = s1->nranks, nm = oc_schedule_builder_micro_batches(bld);
    OC_ASSERT(oc_schedule_builder_ranks(bld) == R && tl1->nranks == R);
    OC_ASSERT(s1->num_micro_batches == sp->m1 && nm == sp->m1 + sp->D);
    struct bymb *b = oc_xcalloc((size_t)R, sizeof *b);
    double P = 0.0;
    int rc = reduced_checked(s1, tl1, sp, b, &P, why, nwhy) == 0 ? 0 : 1;
    int64_t **partner1 = rc == 0 ? oc_timeline_partners(s1) : NULL;
    struct oc_rank_fig *f = oc_xcalloc((size_t)R, sizeof *f);
    unsigned char *rec = oc_xcalloc((size_t)R, 1);
    int64_t *seen = oc_xcalloc((size_t)(nm > 0 ? nm : 1), sizeof *seen);
    struct fold_rank w;
    memset(&w, 0, sizeof w);
    for (int64_t r = 0; rc == 0 && r < R; r++) {
        if (!tl1->start_s[r])
            continue;
        oc_schedule_builder_rank(bld, r, &w.ro);
        fold_rank_fit(&w);
        if (image_rank(sp, r, &w.ro, &s1->ranks[r], &b[r], tl1, P, nm, seen, w.S, w.E, w.img,
                       w.per, why, nwhy) != 0) {
            rc = 1;
            break;
        }
        struct fold_msg c = {&w.ro, w.S, w.E, w.img, w.per, r, partner1, tl1, P};
        rec[r] = 1;
        oc_step_rank_figures(&w.ro, w.S, w.E, NULL, NULL, fold_message, &c, &f[r]);
    }
    if (rc == 0) {
        oc_step_metrics_ranks(l, R, rec, f, mt);
        XBT_DEBUG("steady-state fold: %" PRId64 " of %" PRId64 " micro-batches simulated, "
                  "period %.9g s (figures rank by rank)", sp->m1, nm, P);
    }
    fold_rank_free(&w);
    free(seen);
    free(rec);
    free(f);
    if (partner1)
        oc_timeline_partners_free(partner1, R);
    bymb_all_free(tl1, b);
    oc_schedule_builder_free(bld);
    return rc;
}
