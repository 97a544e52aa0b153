/* ckpt_save.c: the collective save of a checkpoint (see ckpt.h): rank 0's
 * folder, every rank's shard, rank 0's manifest, the rename that
 * publishes it, DIR/latest and the pruning of older checkpoints.
 */
#define _POSIX_C_SOURCE 200809L
#include "ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt_format.h"
#include "ckpt_io.h"
#include "format.h"
#include "paths.h"
#include "placement.h"
#include "wait_clock.h"

int oc_ckpt_due(const struct oc_exec_flags *x, int64_t done, int last)
{
    if (!x->save_dir)
        return 0;
    return last || (x->save_every > 0 && done % x->save_every == 0);
}

/* ------------------------------------------------------------------ */
/* What the run is                                                      */

static void coord_of(const struct oc_layout *l, int64_t rank, struct oc_ckpt_coord *at)
{
    const struct oc_coord me = oc_layout_coord(l, rank);
    memset(at, 0, sizeof *at);
    at->rank = rank;
    at->tp = me.tp;
    at->pp = me.pp;
    at->dp = me.dp;
    at->nchunks = oc_place_chunks_per_stage(l);
    OC_ASSERT(at->nchunks <= OC_CKPT_MAX_CHUNKS);
    for (int64_t c = 0; c < at->nchunks; c++)
        at->chunks[c] = oc_place_global_chunk(l, me.pp, c);
}

void oc_ckpt_rank_coord(const struct oc_runner *r, struct oc_ckpt_coord *at)
{
    coord_of(r->l, r->rank, at);
}

void oc_ckpt_run_manifest(const struct oc_exec_job *j, const struct oc_runner *r,
                          int64_t step, struct oc_ckpt_manifest *mf)
{
    const struct oc_layout *l = &j->o.layout;
    memset(mf, 0, sizeof *mf);
    mf->step = step;
    snprintf(mf->model_name, sizeof mf->model_name, "%s", j->o.model.name);
    oc_ckpt_model_sha256(&j->o.model, mf->model_sha256);
    snprintf(mf->layout, sizeof mf->layout, "%s", j->lname);
    mf->tp = l->tp;
    mf->pp = l->pp;
    mf->dp = l->dp;
    mf->vchunks = l->vchunks;
    mf->micro_batch = l->micro_batch;
    mf->shard_optimizer = r->p.opt_d > 1;
    mf->sequence_parallel = l->sequence_parallel;
    mf->overlap_grad_reduce = l->overlap_grad_reduce;
    snprintf(mf->schedule, sizeof mf->schedule, "%s", oc_schedule_name(l->schedule));
    snprintf(mf->recompute, sizeof mf->recompute, "%s", oc_recompute_name(l->recompute));
    snprintf(mf->order, sizeof mf->order, "%s", oc_order_name(l->order));
    const char *run = oc_precision_name(l->precision);
    snprintf(mf->precision_run, sizeof mf->precision_run, "%s", run);
    /* the GEMM operands: --precision where the backend has the choice
     * (cuda), else the run's (backends.h) */
    snprintf(mf->precision_gemm, sizeof mf->precision_gemm, "%s",
             j->backend->precision_choice ? j->bjob.precision : run);
    snprintf(mf->backend, sizeof mf->backend, "%s", j->backend->name);
    mf->seed = j->o.exec.seed;
    mf->global_batch = l->global_batch;
    mf->seq_length = l->seq_length;
    mf->lr = r->o.adamw.lr;
    mf->beta1 = r->o.adamw.beta1;
    mf->beta2 = r->o.adamw.beta2;
    mf->eps = r->o.adamw.eps;
    mf->weight_decay = r->o.adamw.weight_decay;
}

/* ------------------------------------------------------------------ */
/* Every rank: its shard                                                */

/* What a rank tells rank 0 of its shard (raw bytes through the gather:
 * the same program on every rank). */
struct shard_rec {
    int32_t ok;
    int64_t bytes;
    char sha256[OC_CKPT_SHA_HEX];
    char msg[OC_MSG_MAX + 64]; /* "rank R: " and a message */
};

static int write_all(struct oc_ckpt_file *f, const unsigned char *head, size_t nhead,
                     const float *w, int64_t nw, const float *m, const float *v,
                     int64_t nopt, int die, struct oc_status *st)
{
    if (oc_ckpt_file_write(f, head, nhead, st) != 0)
        return -1;
    if (die) { /* the test hook: half of the weights, then gone */
        oc_ckpt_file_write(f, w, (size_t)(nw / 2) * sizeof *w, st);
        fflush(f->out.f);
        raise(SIGKILL);
    }
    if (oc_ckpt_file_write(f, w, (size_t)nw * sizeof *w, st) != 0 ||
        oc_ckpt_file_write(f, m, (size_t)nopt * sizeof *m, st) != 0 ||
        oc_ckpt_file_write(f, v, (size_t)nopt * sizeof *v, st) != 0)
        return -1;
    return 0;
}

/* The rank's weights and moments from backend memory into `part`. */
static void write_shard(const struct oc_exec_job *j, struct oc_runner *r, const char *part,
                        int64_t done, const struct oc_ckpt_hook *hook, struct shard_rec *rec)
{
    struct oc_status st = {{0}};
    struct oc_ckpt_coord at;
    oc_ckpt_rank_coord(r, &at);
    char name[OC_CKPT_NAME_MAX], sha[OC_CKPT_SHA_HEX];
    oc_ckpt_shard_name(&at, name, sizeof name);
    oc_ckpt_model_sha256(&j->o.model, sha);
    struct oc_ckpt_header h;
    oc_ckpt_header_of(&h, &r->p, &at, done, sha);
    size_t nhead;
    unsigned char *head = oc_ckpt_header_encode(&h, &nhead);
    oc_ckpt_header_free(&h);

    const struct oc_params *p = &r->p;
    const float *w = oc_runner_weights(r);
    const size_t opt_bytes = (size_t)p->nopt * sizeof(float);
    float *m = oc_xmalloc(opt_bytes > 0 ? opt_bytes : 1);
    float *v = oc_xmalloc(opt_bytes > 0 ? opt_bytes : 1);
    r->b->ops->download(r->b, m, p->m, (int64_t)opt_bytes);
    r->b->ops->download(r->b, v, p->v, (int64_t)opt_bytes);

    memset(rec, 0, sizeof *rec);
    struct oc_ckpt_file f;
    const int die = hook && hook->die_rank == r->rank && hook->die_step == done;
    int rc = oc_ckpt_file_open(&f, part, name, &st);
    if (rc == 0) {
        rc = write_all(&f, head, nhead, w, p->n, m, v, p->nopt, die, &st);
        if (rc != 0)
            oc_ckpt_file_abandon(&f);
        else
            rc = oc_ckpt_file_commit(&f, &st);
    }
    free(v);
    free(m);
    free(head);
    rec->ok = rc == 0;
    if (rc == 0) {
        rec->bytes = f.bytes;
        memcpy(rec->sha256, f.sha256, sizeof rec->sha256);
    } else {
        snprintf(rec->msg, sizeof rec->msg, "rank %lld: %s", (long long)r->rank, st.msg);
    }
}

/* ------------------------------------------------------------------ */
/* Rank 0: the folder, the manifest, latest, pruning                    */

/* A fresh DIR/step-N.partial (a crashed save's is removed first). */
static int prepare(const char *dir, const char *part, struct oc_status *st)
{
    if (oc_mkdir_p(dir, st) != 0 || oc_ckpt_remove_dir(part, st) != 0)
        return -1;
    if (mkdir(part, 0777) != 0)
        return oc_fail(st, "%s: cannot create folder: %s", part, strerror(errno));
    return oc_fsync_dir(dir, st);
}

static int is_step_name(const char *s, int64_t *step)
{
    if (strncmp(s, "step-", 5) != 0 || strlen(s) != 11)
        return 0;
    for (const char *p = s + 5; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    *step = strtoll(s + 5, NULL, 10);
    return 1;
}

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* --save-keep K: removes all but the newest K complete step folders. */
static int prune(const char *dir, int64_t keep, struct oc_status *st)
{
    DIR *d = opendir(dir);
    if (!d)
        return oc_fail(st, "%s: cannot list: %s", dir, strerror(errno));
    int64_t *steps = NULL, n = 0, cap = 0, s;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (is_step_name(e->d_name, &s)) {
            if (n == cap)
                steps = oc_xrealloc(steps, (size_t)(cap = cap ? 2 * cap : 16) * sizeof *steps);
            steps[n++] = s;
        }
    closedir(d);
    if (n > 0)
        qsort(steps, (size_t)n, sizeof *steps, cmp_i64);
    int rc = 0;
    char name[32], path[4200];
    for (int64_t i = 0; rc == 0 && i + keep < n; i++) {
        oc_ckpt_step_name(steps[i], name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        rc = oc_ckpt_remove_dir(path, st);
    }
    free(steps);
    return rc;
}

/* Manifest into part, part renamed to final, DIR/latest, pruning. */
static int publish(const struct oc_exec_job *j, const struct oc_runner *r, int64_t done,
                   const struct shard_rec *all, int world, struct oc_status *st)
{
    const char *dir = j->o.exec.save_dir;
    char name[32], part[4200], final[4200], old[4200], latest[64];
    oc_ckpt_step_name(done, name, sizeof name);
    snprintf(part, sizeof part, "%s/%s.partial", dir, name);
    snprintf(final, sizeof final, "%s/%s", dir, name);
    snprintf(old, sizeof old, "%s/%s.old", dir, name);
    for (int q = 0; q < world; q++)
        if (!all[q].ok)
            return oc_fail(st, "%s", all[q].msg);
    struct oc_ckpt_manifest mf;
    oc_ckpt_run_manifest(j, r, done, &mf);
    mf.nshards = world;
    mf.shards = oc_xcalloc((size_t)world, sizeof *mf.shards);
    for (int q = 0; q < world; q++) {
        struct oc_ckpt_shard *s = &mf.shards[q];
        coord_of(r->l, q, &s->at);
        oc_ckpt_shard_name(&s->at, s->file, sizeof s->file);
        s->bytes = all[q].bytes;
        memcpy(s->sha256, all[q].sha256, sizeof s->sha256);
    }
    char *text = oc_ckpt_manifest_json(&mf);
    oc_ckpt_manifest_free(&mf);
    int rc = oc_ckpt_write_text(part, OC_CKPT_MANIFEST, text, st);
    free(text);
    if (rc != 0)
        return -1;
    /* an older step-N (a run that went back to an earlier checkpoint) */
    struct stat sb;
    const int had_old = stat(final, &sb) == 0;
    if (had_old) {
        if (oc_ckpt_remove_dir(old, st) != 0)
            return -1;
        if (rename(final, old) != 0)
            return oc_fail(st, "%s: cannot move aside the older checkpoint of this "
                               "step: %s", final, strerror(errno));
    }
    if (rename(part, final) != 0)
        return oc_fail(st, "%s: cannot rename to %s: %s", part, final, strerror(errno));
    snprintf(latest, sizeof latest, "%s\n", name);
    if (oc_fsync_dir(dir, st) != 0 ||
        oc_ckpt_write_text(dir, OC_CKPT_LATEST, latest, st) != 0 ||
        (had_old && oc_ckpt_remove_dir(old, st) != 0))
        return -1;
    return j->o.exec.save_keep > 0 ? prune(dir, j->o.exec.save_keep, st) : 0;
}

/* ------------------------------------------------------------------ */
/* The save                                                             */

struct verdict {
    int32_t ok;
    char msg[OC_MSG_MAX + 64]; /* "checkpoint step-N: " and a message */
};

/* rank 0's verdict (ok, or its message) to every rank */
static int agree(struct oc_ctl *c, struct verdict *v, struct oc_status *st)
{
    if (oc_ctl_bcast(c, v, (int64_t)sizeof *v, 0, st) != 0)
        return -1;
    return v->ok ? 0 : oc_fail(st, "%s", v->msg);
}

int oc_ckpt_save(struct oc_ctl *c, const struct oc_exec_job *j, struct oc_runner *r,
                 int64_t done, const struct oc_ckpt_hook *hook, struct oc_status *st)
{
    const char *dir = j->o.exec.save_dir;
    char name[32], part[4200];
    oc_ckpt_step_name(done, name, sizeof name);
    snprintf(part, sizeof part, "%s/%s.partial", dir, name);
    const double t0 = oc_now_s();
    struct verdict v = {1, ""};
    if (c->rank == 0 && prepare(dir, part, st) != 0) {
        v.ok = 0;
        snprintf(v.msg, sizeof v.msg, "checkpoint %s: %s", name, st->msg);
    }
    oc_ctl_set_what(c, "the start of checkpoint %s", name);
    if (agree(c, &v, st) != 0)
        return -1;

    struct shard_rec mine;
    write_shard(j, r, part, done, hook, &mine);
    struct shard_rec *all =
        c->rank == 0 ? oc_xmalloc((size_t)c->size * sizeof *all) : NULL;
    oc_ctl_set_what(c, "the shards of checkpoint %s", name);
    if (oc_ctl_gather(c, &mine, all, (int64_t)sizeof mine, 0, st) != 0) {
        free(all);
        return -1;
    }
    int64_t bytes = 0;
    if (c->rank == 0) {
        for (int q = 0; q < c->size; q++)
            bytes += all[q].bytes;
        if (publish(j, r, done, all, c->size, st) != 0) {
            v.ok = 0;
            snprintf(v.msg, sizeof v.msg, "checkpoint %s: %s", name, st->msg);
        }
    }
    free(all);
    oc_ctl_set_what(c, "the manifest of checkpoint %s", name);
    if (agree(c, &v, st) != 0)
        return -1;
    if (c->rank == 0) {
        const double s = oc_now_s() - t0;
        char bs[32], ts[32];
        printf("checkpoint: saved %s/%s, %d shards, %s in %s (%.3g s/GB)\n", dir, name,
               c->size, oc_fmt_si(bs, sizeof bs, (double)bytes, "B"),
               oc_fmt_si(ts, sizeof ts, s, "s"), bytes > 0 ? s / ((double)bytes / 1e9) : 0);
        fflush(stdout);
    }
    return 0;
}
