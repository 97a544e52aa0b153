/* out_weights.c: see out_weights.h. */
#define _POSIX_C_SOURCE 200809L
#include "out_weights.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"
#include "params.h"

/* weights.bin and weights.txt of the whole model (out_weights.h says the
 * format). */
static int write_weights(const char *dir, const struct oc_params *w, struct oc_status *st)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/weights.bin", dir);
    struct oc_outfile of;
    if (oc_outfile_open(&of, path, st) != 0)
        return -1;
    int64_t nt = w->nt;
    int ok = oc_outfile_write(&of, "OCSIMWT1", 8, st) == 0 &&
             oc_outfile_write(&of, &nt, sizeof nt, st) == 0;
    for (int64_t i = 0; ok && i < nt; i++) {
        const struct oc_param_tensor *t = &w->t[i];
        char name[16] = {0};
        snprintf(name, sizeof name, "%s", oc_param_name(t->kind));
        int64_t meta[3] = {t->layer, t->rows, t->cols};
        ok = oc_outfile_write(&of, name, 16, st) == 0 &&
             oc_outfile_write(&of, meta, sizeof meta, st) == 0;
    }
    ok = ok && oc_outfile_write(&of, w->w, sizeof *w->w * (size_t)w->n, st) == 0;
    if (!ok) {
        oc_outfile_abandon(&of);
        return -1;
    }
    if (oc_outfile_commit(&of, st) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/weights.txt", dir);
    if (oc_outfile_open(&of, path, st) != 0)
        return -1;
    FILE *f = of.f;
    fprintf(f, "# weights.bin: 8 bytes \"OCSIMWT1\", int64 tensor count, per tensor\n"
               "# {char name[16]; int64 layer, rows, cols}, then the fp32 values of\n"
               "# every tensor in this order (row-major, host byte order).\n"
               "# name layer rows cols first_float\n");
    for (int64_t i = 0; i < nt; i++) {
        const struct oc_param_tensor *t = &w->t[i];
        fprintf(f, "%s %lld %lld %lld %lld\n", oc_param_name(t->kind), (long long)t->layer,
                (long long)t->rows, (long long)t->cols, (long long)t->offset);
    }
    return oc_outfile_commit(&of, st);
}

/* Writes shard tensor t (values src) into whole's tensor of the same name
 * (a tied lmw copy into wte), comparing bitwise with the values an earlier
 * shard already put there (a TP replica of a replicated tensor, the other
 * stage's copy of a tied embedding); written[] marks the floats put so far.
 * Returns the floats that differed; *maxdiff their largest difference. */
static int64_t put_checked(const struct oc_params *shard, const struct oc_param_tensor *t,
                           const float *src, const struct oc_params *whole,
                           unsigned char *written, double *maxdiff)
{
    enum oc_param_kind k = t->kind;
    if (k == OC_P_LMW && shard->model.tie_word_embeddings)
        k = OC_P_WTE;
    const struct oc_param_tensor *w = oc_params_tensor(whole, k, t->layer);
    OC_ASSERT(w->rows == t->grows && w->cols == t->gcols);
    int64_t differ = 0;
    for (int64_t r = 0; r < t->rows; r++)
        for (int64_t c = 0; c < t->cols; c++) {
            int64_t at = w->offset + oc_params_global_row(t, r) * t->gcols + t->col0 + c;
            float v = src[t->offset + r * t->cols + c];
            if (written[at] && memcmp(&whole->w[at], &v, sizeof v) != 0) {
                differ++;
                double d = fabs((double)whole->w[at] - (double)v);
                if (d > *maxdiff)
                    *maxdiff = d;
            }
            whole->w[at] = v;
            written[at] = 1;
        }
    return differ;
}

/* Rank 0 collects the weights of the DP-rank-0 replica, stage by stage
 * from the last to the first, so that a tied embedding ends up as the
 * first stage's copy. Copies that should be equal (TP replicas of
 * replicated tensors, the tied embedding on the first and last stage) are
 * compared on the way; *differ counts the floats that were not bitwise
 * equal. w: this rank's weights (host). */
int oc_out_weights(struct oc_ctl *c, const struct oc_exec_job *j, const struct oc_runner *r,
                   const float *w, int64_t *differ, double *maxdiff, struct oc_status *st)
{
    const struct oc_model *m = &j->o.model;
    const struct oc_layout *l = &j->o.layout;
    const int tag = 7;
    *differ = 0;
    *maxdiff = 0;
    oc_ctl_set_what(c, "gathering the weights");
    if (c->rank != 0) {
        if (r->me.dp != 0)
            return 0;
        return oc_ctl_send(c, w, r->p.n * (int64_t)sizeof *w, 0, tag, st);
    }
    const int64_t L = m->num_hidden_layers;
    int64_t *layers = oc_xmalloc((size_t)L * sizeof *layers);
    for (int64_t i = 0; i < L; i++)
        layers[i] = i;
    struct oc_params whole;
    struct oc_params_opts wo = {1, 0, layers, L, 1, 1, j->o.exec.seed};
    if (oc_params_init(&whole, m, &wo, st) != 0) {
        free(layers);
        return -1;
    }
    unsigned char *written = oc_xcalloc((size_t)whole.n, 1);
    int rc = 0;
    for (int64_t stage = l->pp - 1; stage >= 0 && rc == 0; stage--)
        for (int64_t tp = 0; tp < l->tp && rc == 0; tp++) {
            struct oc_coord q = {tp, stage, 0, 0};
            int64_t src = oc_layout_rank(l, q);
            struct oc_params sh;
            struct oc_params_opts so;
            oc_runner_param_opts(l, m, tp, stage, j->o.exec.seed, layers, &so);
            if (oc_params_init(&sh, m, &so, st) != 0) {
                rc = -1;
                break;
            }
            if (src == 0)
                memcpy(sh.w, w, (size_t)sh.n * sizeof *sh.w);
            else
                rc = oc_ctl_recv(c, sh.w, sh.n * (int64_t)sizeof *sh.w, (int)src, tag, st);
            for (int64_t i = 0; rc == 0 && i < sh.nt; i++)
                *differ += put_checked(&sh, &sh.t[i], sh.w, &whole, written, maxdiff);
            oc_params_free(&sh);
        }
    for (int64_t i = 0; rc == 0 && i < whole.n; i++)
        OC_ASSERT(written[i]); /* every float of the model came from a rank */
    if (rc == 0)
        rc = write_weights(j->out, &whole, st);
    free(written);
    oc_params_free(&whole);
    free(layers);
    return rc;
}

/* FNV-1a over the weight arena (Fowler, Noll, Vo): DP replicas must hold
 * bitwise the same weights after every step. */
static uint64_t arena_hash(const float *w, int64_t n)
{
    uint64_t h = 1469598103934665603ULL;
    const unsigned char *b = (const unsigned char *)w;
    for (size_t i = 0; i < (size_t)n * sizeof *w; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* Rank 0: the number of ranks whose weights differ from their DP rank 0
 * replica's. */
int oc_out_dp_replicas(struct oc_ctl *c, const struct oc_layout *l, const struct oc_runner *r,
                       const float *w, int64_t *differ, struct oc_status *st)
{
    uint64_t h = arena_hash(w, r->p.n);
    uint64_t *all = c->rank == 0 ? oc_xmalloc((size_t)c->size * sizeof *all) : NULL;
    oc_ctl_set_what(c, "comparing the DP replicas");
    int rc = oc_ctl_gather(c, &h, all, (int64_t)sizeof h, 0, st);
    *differ = 0;
    if (rc == 0 && c->rank == 0)
        for (int64_t q = 0; q < c->size; q++) {
            struct oc_coord k = oc_layout_coord(l, q);
            k.dp = 0;
            if (all[q] != all[oc_layout_rank(l, k)])
                (*differ)++;
        }
    free(all);
    return rc;
}
