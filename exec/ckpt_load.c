/* ckpt_load.c: the collective load of a checkpoint (see ckpt.h): rank 0's
 * checks of the manifest against the run and the folder, every rank's
 * checks of its share of the shards, the agreement on the first problem,
 * and each rank's tensors read by global position from whichever shards
 * hold them.
 */
#define _POSIX_C_SOURCE 200809L
#include "ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt_format.h"
#include "ckpt_io.h"
#include "format.h"
#include "wait_clock.h"

enum { LOAD_OK = 0, LOAD_FAILED = 1, LOAD_REFUSED = 2 };

/* ------------------------------------------------------------------ */
/* Rank 0: the manifest against the run and the folder                 */

/* The checkpoint's folder: arg itself when it holds a manifest, else the
 * folder DIR/latest names. */
static int resolve(const char *arg, char *dir, size_t n, struct oc_status *st)
{
    char path[4300];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", arg, OC_CKPT_MANIFEST);
    if (stat(path, &sb) == 0) {
        snprintf(dir, n, "%s", arg);
        return 0;
    }
    snprintf(path, sizeof path, "%s/%s", arg, OC_CKPT_LATEST);
    struct oc_status ignored;
    char *latest = oc_ckpt_read_text(path, &ignored);
    if (!latest)
        return oc_fail(st, "--load %s: no %s there and no %s file naming one", arg,
                       OC_CKPT_MANIFEST, OC_CKPT_LATEST);
    latest[strcspn(latest, "\n")] = '\0';
    int rc = 0;
    if (!*latest || strchr(latest, '/'))
        rc = oc_fail(st, "--load %s: %s does not name a step folder ('%s')", arg,
                     OC_CKPT_LATEST, latest);
    else
        snprintf(dir, n, "%s/%s", arg, latest);
    snprintf(path, sizeof path, "%s/%s", dir, OC_CKPT_MANIFEST);
    if (rc == 0 && stat(path, &sb) != 0)
        rc = oc_fail(st, "--load %s: %s names %s, which has no %s", arg, OC_CKPT_LATEST,
                     latest, OC_CKPT_MANIFEST);
    free(latest);
    return rc;
}

/* Model, precision and data position: the run must be the saved one's. */
static int check_run(const char *dir, const struct oc_ckpt_manifest *mf,
                     const struct oc_ckpt_manifest *run, struct oc_status *st)
{
    if (strcmp(mf->model_sha256, run->model_sha256) != 0 ||
        strcmp(mf->model_name, run->model_name) != 0)
        return oc_fail(st, "checkpoint %s: another model: it holds '%s' (config sha256 "
                           "%.12s), this run is '%s' (%.12s)", dir, mf->model_name,
                       mf->model_sha256, run->model_name, run->model_sha256);
    if (strcmp(mf->precision_run, run->precision_run) != 0 ||
        strcmp(mf->precision_gemm, run->precision_gemm) != 0)
        return oc_fail(st, "checkpoint %s: another precision: it was saved by a %s run "
                           "with %s GEMMs, this run is %s with %s GEMMs", dir,
                       mf->precision_run, mf->precision_gemm, run->precision_run,
                       run->precision_gemm);
    if (mf->global_batch != run->global_batch || mf->seq_length != run->seq_length)
        return oc_fail(st, "checkpoint %s: its data position is in batches of %lld x %lld "
                           "tokens, this run's are %lld x %lld (give the same "
                           "--global-batch and --seq to resume)", dir,
                       (long long)mf->global_batch, (long long)mf->seq_length,
                       (long long)run->global_batch, (long long)run->seq_length);
    return 0;
}

/* The shard list: one per rank of the saved layout, in rank order, each
 * named by its place. */
static int check_list(const char *dir, const struct oc_ckpt_manifest *mf,
                      struct oc_status *st)
{
    const int64_t world = mf->tp * mf->pp * mf->dp;
    if (mf->nshards != world)
        return oc_fail(st, "checkpoint %s: the manifest lists %lld shards for %s (%lld "
                           "ranks)", dir, (long long)mf->nshards, mf->layout,
                       (long long)world);
    char name[OC_CKPT_NAME_MAX];
    for (int64_t i = 0; i < mf->nshards; i++) {
        const struct oc_ckpt_shard *s = &mf->shards[i];
        oc_ckpt_shard_name(&s->at, name, sizeof name);
        if (s->at.rank != i || strcmp(name, s->file) != 0)
            return oc_fail(st, "checkpoint %s: the manifest's shard %lld is %s, its place "
                               "says %s", dir, (long long)i, s->file, name);
    }
    return 0;
}

/* The folder against the list: a listed shard missing, a shard not listed. */
static int check_listing(const char *dir, const struct oc_ckpt_manifest *mf,
                         struct oc_status *st)
{
    char path[4300];
    struct stat sb;
    for (int64_t i = 0; i < mf->nshards; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, mf->shards[i].file);
        if (stat(path, &sb) != 0)
            return oc_fail(st, "checkpoint %s: missing shard %s (the manifest lists %lld)",
                           dir, mf->shards[i].file, (long long)mf->nshards);
    }
    DIR *d = opendir(dir);
    if (!d)
        return oc_fail(st, "checkpoint %s: cannot list: %s", dir, strerror(errno));
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        const size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, "shard-", 6) != 0 || n < 10 ||
            strcmp(e->d_name + n - 4, ".bin") != 0)
            continue;
        int listed = 0;
        for (int64_t i = 0; i < mf->nshards && !listed; i++)
            listed = strcmp(mf->shards[i].file, e->d_name) == 0;
        if (!listed)
            rc = oc_fail(st, "checkpoint %s: extra shard %s (not in the manifest's %lld)",
                         dir, e->d_name, (long long)mf->nshards);
    }
    closedir(d);
    return rc;
}

/* Rank 0's part: LOAD_OK with the manifest's text and folder, or the code
 * and st->msg. */
static int head(const struct oc_exec_job *j, const struct oc_runner *r, char *dir,
                size_t n, char **text, struct oc_status *st)
{
    if (resolve(j->o.exec.load_dir, dir, n, st) != 0)
        return LOAD_REFUSED;
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, OC_CKPT_MANIFEST);
    if (!(*text = oc_ckpt_read_text(path, st)))
        return LOAD_FAILED;
    struct oc_ckpt_manifest mf, run;
    if (oc_ckpt_manifest_parse(&mf, *text, path, st) != 0)
        return LOAD_REFUSED;
    oc_ckpt_run_manifest(j, r, 0, &run);
    int rc = check_run(dir, &mf, &run, st) != 0 || check_list(dir, &mf, st) != 0 ||
                     check_listing(dir, &mf, st) != 0
                 ? LOAD_REFUSED
                 : LOAD_OK;
    oc_ckpt_manifest_free(&mf);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Every rank: its share of the shards                                  */

/* An open shard with its header. */
struct src {
    FILE *f;
    char path[4300];
    struct oc_ckpt_header h;
    int64_t data;  /* byte offset of w */
    int64_t size;  /* of the file */
};

static void src_close(struct src *s)
{
    if (s->f)
        fclose(s->f);
    oc_ckpt_header_free(&s->h);
    memset(s, 0, sizeof *s);
}

/* Opens dir/file and reads its header: LOAD_OK, or the code and st->msg
 * (a header cut short in a file shorter than the manifest's count is a
 * truncated shard; otherwise an unreadable one is corrupted). */
static int src_open(struct src *s, const char *dir, const struct oc_ckpt_shard *e,
                    struct oc_status *st)
{
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s/%s", dir, e->file);
    struct stat sb;
    if (stat(s->path, &sb) != 0 || !(s->f = fopen(s->path, "rb"))) {
        oc_fail(st, "checkpoint %s: missing shard %s", dir, e->file);
        return LOAD_REFUSED;
    }
    s->size = (int64_t)sb.st_size;
    const int short_file = s->size < e->bytes;
    unsigned char first[16];
    uint64_t len = 0;
    struct oc_status why = {{0}};
    unsigned char *buf = NULL;
    int ok = s->size >= 16 && fread(first, 1, 16, s->f) == 16 &&
             oc_ckpt_header_length(first, e->file, &len, &why) == 0 &&
             (int64_t)(16 + len) <= s->size;
    if (ok) {
        buf = oc_xmalloc((size_t)(16 + len));
        memcpy(buf, first, 16);
        ok = fread(buf + 16, 1, (size_t)len, s->f) == len &&
             oc_ckpt_header_decode(&s->h, buf, (size_t)(16 + len), e->file, &why) == 0;
        free(buf);
    }
    if (ok) {
        s->data = (int64_t)(16 + len);
        return LOAD_OK;
    }
    if (short_file)
        oc_fail(st, "checkpoint %s: truncated shard %s: %lld bytes, the manifest says %lld",
                dir, e->file, (long long)s->size, (long long)e->bytes);
    else
        oc_fail(st, "checkpoint %s: corrupted shard %s: %s", dir, e->file,
                why.msg[0] ? why.msg : "its header cannot be read");
    src_close(s);
    return LOAD_REFUSED;
}

/* One shard's checks, in the order that names the cause best: place
 * (reordered), checkpoint, size (truncated), SHA-256 (corrupted). */
static int verify_shard(const char *dir, const struct oc_ckpt_manifest *mf,
                        const struct oc_ckpt_shard *e, struct oc_status *st)
{
    struct src s;
    int rc = src_open(&s, dir, e, st);
    if (rc != LOAD_OK)
        return rc;
    char words[160], sha[OC_CKPT_SHA_HEX];
    int64_t bytes = 0;
    oc_ckpt_coord_words(&s.h.at, words, sizeof words);
    if (!oc_ckpt_coord_equal(&s.h.at, &e->at))
        rc = oc_fail(st, "checkpoint %s: reordered shard: %s holds the shard of %s", dir,
                     e->file, words);
    else if (s.h.step != mf->step || strcmp(s.h.model_sha256, mf->model_sha256) != 0)
        rc = oc_fail(st, "checkpoint %s: shard %s is of another checkpoint (step %lld, "
                         "model %.12s; the manifest's: step %lld, model %.12s)", dir,
                     e->file, (long long)s.h.step, s.h.model_sha256, (long long)mf->step,
                     mf->model_sha256);
    else if (s.size < e->bytes)
        rc = oc_fail(st, "checkpoint %s: truncated shard %s: %lld bytes, the manifest says "
                         "%lld", dir, e->file, (long long)s.size, (long long)e->bytes);
    else if (s.size != e->bytes || s.size != oc_ckpt_header_file_bytes(&s.h))
        rc = oc_fail(st, "checkpoint %s: corrupted shard %s: %lld bytes, the manifest says "
                         "%lld and its header %lld", dir, e->file, (long long)s.size,
                     (long long)e->bytes, (long long)oc_ckpt_header_file_bytes(&s.h));
    src_close(&s);
    if (rc != LOAD_OK)
        return LOAD_REFUSED;
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, e->file);
    if (oc_sha256_file(path, sha, &bytes, st) != 0)
        return LOAD_FAILED;
    if (strcmp(sha, e->sha256) == 0)
        return LOAD_OK;
    oc_fail(st, "checkpoint %s: corrupted shard %s: SHA-256 %.16s..., the manifest says "
                "%.16s...", dir, e->file, sha, e->sha256);
    return LOAD_REFUSED;
}

/* ------------------------------------------------------------------ */
/* Agreement                                                            */

struct problem {
    int64_t at;     /* shard (or rank) it concerns; INT64_MAX: none */
    int32_t code;   /* LOAD_* */
    char msg[OC_MSG_MAX];
};

/* Every rank's problem to rank 0, the first by `at` back to every rank:
 * the code (st->msg its line). */
static int agree(struct oc_ctl *c, const struct problem *mine, struct oc_status *st)
{
    struct problem *all = c->rank == 0 ? oc_xmalloc((size_t)c->size * sizeof *all) : NULL;
    struct problem first = *mine;
    int rc = oc_ctl_gather(c, mine, all, (int64_t)sizeof *mine, 0, st);
    for (int q = 0; rc == 0 && c->rank == 0 && q < c->size; q++)
        if (all[q].code != LOAD_OK && (first.code == LOAD_OK || all[q].at < first.at))
            first = all[q];
    free(all);
    if (rc != 0 || oc_ctl_bcast(c, &first, (int64_t)sizeof first, 0, st) != 0)
        return LOAD_FAILED;
    if (first.code != LOAD_OK)
        oc_fail(st, "%s", first.msg);
    return first.code;
}

static void set_problem(struct problem *p, int64_t at, int code, const struct oc_status *st)
{
    if (code == LOAD_OK || (p->code != LOAD_OK && p->at <= at))
        return;
    p->at = at;
    p->code = code;
    snprintf(p->msg, sizeof p->msg, "%s", st->msg);
}

/* ------------------------------------------------------------------ */
/* Every rank: its tensors from the shards that hold them               */

/* The blocks (and moment ranges) already read for one tensor: replicas
 * (DP copies of the weights, TP copies of a whole tensor and its moments,
 * the moments without ZeRO-1) are read once. */
struct seen {
    int64_t (*k)[6];
    int64_t n, cap;
};

static int seen_add(struct seen *s, const struct oc_ckpt_tensor *t, int64_t lo, int64_t hi)
{
    const int64_t key[6] = {t->row0, t->col0, t->rows, t->cols, lo, hi};
    for (int64_t i = 0; i < s->n; i++)
        if (memcmp(s->k[i], key, sizeof key) == 0)
            return 0;
    if (s->n == s->cap)
        s->k = oc_xrealloc(s->k, (size_t)(s->cap = s->cap ? 2 * s->cap : 16) * sizeof *s->k);
    memcpy(s->k[s->n++], key, sizeof key);
    return 1;
}

/* The host copies a rank fills before they go to the backend. */
struct dest {
    float *w, *m, *v;
    float *tmp;        /* a source block read from a file */
    int64_t tmp_cap;
};

static float *tmp_of(struct dest *d, int64_t n)
{
    if (n > d->tmp_cap)
        d->tmp = oc_xrealloc(d->tmp, (size_t)(d->tmp_cap = n) * sizeof *d->tmp);
    return d->tmp;
}

/* Copies what shard s's tensor e holds of `dst` (a piece of w, m or v):
 * the floats [lo, hi) of e's block, at `at` floats from w's start in
 * the file. Returns the floats copied, or -1 (st). */
static int64_t take(struct src *s, const struct oc_ckpt_tensor *e, int64_t lo, int64_t hi,
                    int64_t at, struct dest *d, struct oc_ckpt_piece *dst, struct oc_status *st)
{
    struct oc_ckpt_piece src = {oc_ckpt_tensor_block(e), lo, hi, NULL};
    float *buf = dst->buf;
    dst->buf = NULL;
    const int64_t n = oc_ckpt_piece_copy(&src, dst); /* how much, first */
    dst->buf = buf;
    if (n == 0)
        return 0;
    src.buf = tmp_of(d, hi - lo);
    if (oc_ckpt_read_at(s->f, s->data + at * (int64_t)sizeof(float), src.buf,
                        (size_t)(hi - lo) * sizeof(float), s->path, st) != 0)
        return -1;
    return oc_ckpt_piece_copy(&src, dst);
}

/* Tensor i of the rank: its weights and its moments' slice, from every
 * source tensor of the same global name. */
static int load_tensor(const struct oc_params *p, int64_t i, struct src *srcs, int64_t ns,
                       struct dest *d, struct oc_status *st)
{
    const struct oc_param_tensor *t = &p->t[i];
    /* a tied LM head copy holds wte's values (and moments): read wte's */
    const char *name = t->kind == OC_P_LMW && p->model.tie_word_embeddings
                           ? oc_param_name(OC_P_WTE)
                           : oc_param_name(t->kind);
    int64_t lo, hi, got_w = 0, got_opt = 0;
    oc_params_slice(t->rows * t->cols, p->opt_d, p->opt_j, &lo, &hi);
    struct oc_ckpt_piece w = {*t, 0, t->rows * t->cols, d->w + t->offset};
    struct oc_ckpt_piece m = {*t, lo, hi, d->m + p->opt_off[i]};
    struct oc_ckpt_piece v = {*t, lo, hi, d->v + p->opt_off[i]};
    struct seen sw = {0}, so = {0};
    int64_t n;
    int rc = 0;
    for (int64_t q = 0; rc == 0 && q < ns; q++) {
        const struct oc_ckpt_header *h = &srcs[q].h;
        for (int64_t k = 0; rc == 0 && k < h->nt; k++) {
            const struct oc_ckpt_tensor *e = &h->t[k];
            if (strcmp(e->name, name) != 0 || e->layer != t->layer)
                continue;
            if (e->grows != t->grows || e->gcols != t->gcols) {
                rc = oc_fail(st, "%s: tensor %s of layer %lld is (%lld, %lld), this run's "
                                 "(%lld, %lld)", srcs[q].path, name, (long long)t->layer,
                             (long long)e->grows, (long long)e->gcols, (long long)t->grows,
                             (long long)t->gcols);
                break;
            }
            if (seen_add(&sw, e, 0, 0)) {
                if ((n = take(&srcs[q], e, 0, e->rows * e->cols, e->offset, d, &w, st)) < 0)
                    rc = -1;
                got_w += n;
            }
            if (rc == 0 && seen_add(&so, e, e->opt_lo, e->opt_hi)) {
                int64_t nm = take(&srcs[q], e, e->opt_lo, e->opt_hi, h->nw + e->opt_off, d,
                                  &m, st);
                int64_t nv = nm < 0 ? -1 : take(&srcs[q], e, e->opt_lo, e->opt_hi,
                                                h->nw + h->nopt + e->opt_off, d, &v, st);
                if (nv < 0)
                    rc = -1;
                got_opt += nv;
            }
        }
    }
    free(sw.k);
    free(so.k);
    if (rc == 0 && (got_w != t->rows * t->cols || got_opt != hi - lo))
        rc = oc_fail(st, "the checkpoint lacks part of tensor %s of layer %lld: %lld of %lld "
                         "weights and %lld of %lld moments found", name, (long long)t->layer,
                     (long long)got_w, (long long)(t->rows * t->cols), (long long)got_opt,
                     (long long)(hi - lo));
    return rc;
}

/* Every tensor of the rank from the shards into d: LOAD_OK or a code. */
static int load_all(const char *dir, const struct oc_ckpt_manifest *mf,
                    const struct oc_params *p, struct dest *d, struct oc_status *st)
{
    struct src *srcs = oc_xcalloc((size_t)mf->nshards, sizeof *srcs);
    int rc = LOAD_OK;
    for (int64_t q = 0; rc == LOAD_OK && q < mf->nshards; q++)
        rc = src_open(&srcs[q], dir, &mf->shards[q], st);
    for (int64_t i = 0; rc == LOAD_OK && i < p->nt; i++)
        if (load_tensor(p, i, srcs, mf->nshards, d, st) != 0)
            rc = LOAD_REFUSED;
    for (int64_t q = 0; q < mf->nshards; q++)
        src_close(&srcs[q]);
    free(srcs);
    return rc;
}

/* ------------------------------------------------------------------ */
/* The load                                                             */

/* Rank 0's verdict, the folder and the manifest to every rank. */
static int share_head(struct oc_ctl *c, const struct oc_exec_job *j,
                      const struct oc_runner *r, char *dir, size_t n,
                      struct oc_ckpt_manifest *mf, struct oc_status *st)
{
    struct {
        int32_t code;
        int64_t len;
        char msg[OC_MSG_MAX];
    } h = {LOAD_OK, 0, ""};
    char *text = NULL;
    if (c->rank == 0) {
        h.code = head(j, r, dir, n, &text, st);
        h.len = text ? (int64_t)strlen(text) + 1 : 0;
        snprintf(h.msg, sizeof h.msg, "%s", h.code == LOAD_OK ? "" : st->msg);
    }
    oc_ctl_set_what(c, "the manifest of --load %s", j->o.exec.load_dir);
    if (oc_ctl_bcast(c, &h, (int64_t)sizeof h, 0, st) != 0 ||
        (h.code == LOAD_OK && oc_ctl_bcast(c, dir, (int64_t)n, 0, st) != 0)) {
        free(text);
        return LOAD_FAILED;
    }
    if (h.code != LOAD_OK) {
        free(text);
        oc_fail(st, "%s", h.msg);
        return h.code;
    }
    if (c->rank != 0)
        text = oc_xmalloc((size_t)h.len);
    int rc = oc_ctl_bcast(c, text, h.len, 0, st) != 0 ? LOAD_FAILED : LOAD_OK;
    if (rc == LOAD_OK && oc_ckpt_manifest_parse(mf, text, dir, st) != 0)
        rc = LOAD_FAILED; /* rank 0 parsed the same text */
    free(text);
    return rc;
}

static void print_loaded(const struct oc_exec_job *j, const char *dir,
                         const struct oc_ckpt_manifest *mf, double s)
{
    int64_t bytes = 0;
    for (int64_t i = 0; i < mf->nshards; i++)
        bytes += mf->shards[i].bytes;
    char bs[32], ts[32];
    printf("checkpoint: loaded %s (step %lld, %lld shards, %s verified) in %s (%.3g s/GB)",
           dir, (long long)mf->step, (long long)mf->nshards,
           oc_fmt_si(bs, sizeof bs, (double)bytes, "B"), oc_fmt_si(ts, sizeof ts, s, "s"),
           bytes > 0 ? s / ((double)bytes / 1e9) : 0);
    if (strcmp(mf->layout, j->lname) != 0)
        printf(", resharded from %s to %s", mf->layout, j->lname);
    printf("\n");
    fflush(stdout);
}

int oc_ckpt_load(struct oc_ctl *c, const struct oc_exec_job *j, struct oc_runner *r,
                 struct oc_status *st)
{
    const double t0 = oc_now_s();
    char dir[4096] = "";
    struct oc_ckpt_manifest mf;
    memset(&mf, 0, sizeof mf);
    int rc = share_head(c, j, r, dir, sizeof dir, &mf, st);
    if (rc != LOAD_OK)
        return rc;
    /* rank q checks the shards q, q + world, ... */
    struct problem mine = {INT64_MAX, LOAD_OK, ""};
    for (int64_t i = c->rank; i < mf.nshards; i += c->size)
        set_problem(&mine, i, verify_shard(dir, &mf, &mf.shards[i], st), st);
    oc_ctl_set_what(c, "the shards' checks of --load %s", j->o.exec.load_dir);
    rc = agree(c, &mine, st);
    /* then each rank's tensors */
    struct oc_params *p = &r->p;
    struct dest d = {0};
    if (rc == LOAD_OK) {
        d.w = oc_xmalloc((size_t)p->n * sizeof *d.w);
        d.m = oc_xmalloc((size_t)(p->nopt > 0 ? p->nopt : 1) * sizeof *d.m);
        d.v = oc_xmalloc((size_t)(p->nopt > 0 ? p->nopt : 1) * sizeof *d.v);
        mine = (struct problem){INT64_MAX, LOAD_OK, ""};
        set_problem(&mine, c->rank, load_all(dir, &mf, p, &d, st), st);
        oc_ctl_set_what(c, "the tensors of --load %s", j->o.exec.load_dir);
        rc = agree(c, &mine, st);
    }
    if (rc == LOAD_OK) {
        const struct oc_backend_ops *B = r->b->ops;
        B->upload(r->b, p->w, d.w, p->n * (int64_t)sizeof *d.w);
        B->upload(r->b, p->m, d.m, p->nopt * (int64_t)sizeof *d.m);
        B->upload(r->b, p->v, d.v, p->nopt * (int64_t)sizeof *d.v);
        r->o.first_step = mf.step;
        /* the data position is the checkpoint's: its stream (data.h), not
         * the one a different --seed would key */
        if (mf.seed != r->o.seed) {
            oc_synth_free(&r->syn);
            if (oc_synth_init(&r->syn, r->model->vocab_size, mf.seed + 1, st) != 0)
                rc = LOAD_FAILED;
            r->o.seed = mf.seed;
        }
    }
    if (rc == LOAD_OK) {
        if (c->rank == 0)
            print_loaded(j, dir, &mf, oc_now_s() - t0);
    }
    free(d.tmp);
    free(d.v);
    free(d.m);
    free(d.w);
    oc_ckpt_manifest_free(&mf);
    return rc;
}
