/* ckpt_format.c: a checkpoint's names, the model's fingerprint, the
 * manifest and a shard's header as JSON (jansson), and the piece copy of
 * resharding (see ckpt_format.h).
 */
#define _POSIX_C_SOURCE 200809L
#include "ckpt_format.h"

#include <jansson.h>
#include <string.h>

#include "ckpt_io.h"

/* ------------------------------------------------------------------ */
/* Names                                                                */

static void chunks_words(const struct oc_ckpt_coord *c, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int64_t i = 0; i < c->nchunks && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? "." : "",
                               (long long)c->chunks[i]);
}

void oc_ckpt_shard_name(const struct oc_ckpt_coord *c, char *buf, size_t n)
{
    char ch[OC_CKPT_MAX_CHUNKS * 8];
    chunks_words(c, ch, sizeof ch);
    snprintf(buf, n, "shard-tp%lld-pp%lld-dp%lld-c%s-r%05lld.bin", (long long)c->tp,
             (long long)c->pp, (long long)c->dp, ch, (long long)c->rank);
}

void oc_ckpt_step_name(int64_t step, char *buf, size_t n)
{
    snprintf(buf, n, "step-%06lld", (long long)step);
}

int oc_ckpt_coord_equal(const struct oc_ckpt_coord *a, const struct oc_ckpt_coord *b)
{
    if (a->rank != b->rank || a->tp != b->tp || a->pp != b->pp || a->dp != b->dp ||
        a->nchunks != b->nchunks)
        return 0;
    for (int64_t i = 0; i < a->nchunks; i++)
        if (a->chunks[i] != b->chunks[i])
            return 0;
    return 1;
}

void oc_ckpt_coord_words(const struct oc_ckpt_coord *c, char *buf, size_t n)
{
    char ch[OC_CKPT_MAX_CHUNKS * 8];
    chunks_words(c, ch, sizeof ch);
    snprintf(buf, n, "rank %lld (tp%lld pp%lld dp%lld chunks %s)", (long long)c->rank,
             (long long)c->tp, (long long)c->pp, (long long)c->dp, ch);
}

/* ------------------------------------------------------------------ */
/* The model's fingerprint                                              */

void oc_ckpt_model_sha256(const struct oc_model *m, char hex[OC_CKPT_SHA_HEX])
{
    char text[1024];
    const struct oc_rope_scaling *r = &m->rope_scaling;
    snprintf(text, sizeof text,
             "arch=%d\nhidden_size=%lld\nnum_attention_heads=%lld\n"
             "num_key_value_heads=%lld\nnum_hidden_layers=%lld\n"
             "intermediate_size=%lld\nvocab_size=%lld\nmax_position_embeddings=%lld\n"
             "gated_mlp=%d\nhas_bias=%d\nlearned_pos_emb=%d\nnorm_params_per_h=%d\n"
             "tie_word_embeddings=%d\nhas_dropout=%d\nrms_norm_eps=%.17g\n"
             "rope_theta=%.17g\nrope_scaling.type=%s\nrope_scaling.factor=%.17g\n"
             "rope_scaling.low_freq_factor=%.17g\nrope_scaling.high_freq_factor=%.17g\n"
             "rope_scaling.original_max_position_embeddings=%lld\n",
             (int)m->arch, (long long)m->hidden_size, (long long)m->num_attention_heads,
             (long long)m->num_key_value_heads, (long long)m->num_hidden_layers,
             (long long)m->intermediate_size, (long long)m->vocab_size,
             (long long)m->max_position_embeddings, m->gated_mlp, m->has_bias,
             m->learned_pos_emb, m->norm_params_per_h, m->tie_word_embeddings,
             m->has_dropout, m->rms_norm_eps, m->rope_theta, r->type, r->factor,
             r->low_freq_factor, r->high_freq_factor,
             (long long)r->original_max_position_embeddings);
    oc_sha256_hex(text, strlen(text), hex);
}

/* ------------------------------------------------------------------ */
/* Reading JSON: each getter names the field in its one line            */

struct rd {
    char where[OC_QUOTE_MAX]; /* the file, for messages (oc_quote) */
    struct oc_status *st;
};

static struct rd rd_make(const char *where, struct oc_status *st)
{
    struct rd d;
    oc_quote(d.where, sizeof d.where, where);
    d.st = st;
    return d;
}

static json_t *field(const struct rd *d, json_t *o, const char *key, int type,
                     const char *what)
{
    json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    if (!v) {
        oc_fail(d->st, "%s: field '%s' is missing", d->where, key);
        return NULL;
    }
    if ((int)json_typeof(v) != type && !(type == JSON_REAL && json_is_integer(v)) &&
        !(type == JSON_TRUE && json_is_boolean(v))) {
        oc_fail(d->st, "%s: field '%s' must be %s", d->where, key, what);
        return NULL;
    }
    return v;
}

static int get_i64(const struct rd *d, json_t *o, const char *key, int64_t min,
                   int64_t *out)
{
    json_t *v = field(d, o, key, JSON_INTEGER, "an integer");
    if (!v)
        return -1;
    *out = (int64_t)json_integer_value(v);
    if (*out < min)
        return oc_fail(d->st, "%s: field '%s' must be >= %lld (got %lld)", d->where, key,
                       (long long)min, (long long)*out);
    return 0;
}

static int get_str(const struct rd *d, json_t *o, const char *key, char *out, size_t n)
{
    json_t *v = field(d, o, key, JSON_STRING, "a string");
    if (!v)
        return -1;
    if (strlen(json_string_value(v)) >= n)
        return oc_fail(d->st, "%s: field '%s' is longer than %zu bytes", d->where, key,
                       n - 1);
    snprintf(out, n, "%s", json_string_value(v));
    return 0;
}

static int get_real(const struct rd *d, json_t *o, const char *key, double *out)
{
    json_t *v = field(d, o, key, JSON_REAL, "a number");
    if (!v)
        return -1;
    *out = json_number_value(v);
    return 0;
}

static int get_bool(const struct rd *d, json_t *o, const char *key, int *out)
{
    json_t *v = field(d, o, key, JSON_TRUE, "true or false");
    if (!v)
        return -1;
    *out = json_is_true(v);
    return 0;
}

static json_t *get_obj(const struct rd *d, json_t *o, const char *key)
{
    return field(d, o, key, JSON_OBJECT, "an object");
}

/* The array at key, of at most max entries. */
static json_t *get_arr(const struct rd *d, json_t *o, const char *key, size_t max)
{
    json_t *v = field(d, o, key, JSON_ARRAY, "an array");
    if (v && json_array_size(v) > max) {
        oc_fail(d->st, "%s: field '%s' has %zu entries, more than %zu", d->where, key,
                json_array_size(v), max);
        return NULL;
    }
    return v;
}

/* "format" and "version" of a document. */
static int check_format(const struct rd *d, json_t *root, const char *format)
{
    char f[64];
    int64_t version;
    if (get_str(d, root, "format", f, sizeof f) != 0 ||
        get_i64(d, root, "version", 1, &version) != 0)
        return -1;
    char q[OC_QUOTE_MAX];
    if (strcmp(f, format) != 0)
        return oc_fail(d->st, "%s: format '%s', not '%s'", d->where, oc_quote(q, sizeof q, f),
                       format);
    if (version != OC_CKPT_VERSION)
        return oc_fail(d->st, "%s: version %lld; this ocsim-exec reads version %d",
                       d->where, (long long)version, OC_CKPT_VERSION);
    return 0;
}

/* A coordinate's fields inside object o. */
static int get_coord(const struct rd *d, json_t *o, struct oc_ckpt_coord *c)
{
    memset(c, 0, sizeof *c);
    json_t *ch;
    if (get_i64(d, o, "rank", 0, &c->rank) != 0 || get_i64(d, o, "tp", 0, &c->tp) != 0 ||
        get_i64(d, o, "pp", 0, &c->pp) != 0 || get_i64(d, o, "dp", 0, &c->dp) != 0 ||
        !(ch = get_arr(d, o, "chunks", OC_CKPT_MAX_CHUNKS)))
        return -1;
    c->nchunks = (int64_t)json_array_size(ch);
    for (int64_t i = 0; i < c->nchunks; i++) {
        json_t *v = json_array_get(ch, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return oc_fail(d->st, "%s: field 'chunks' must hold non-negative integers",
                           d->where);
        c->chunks[i] = (int64_t)json_integer_value(v);
    }
    return 0;
}

static void put_coord(json_t *o, const struct oc_ckpt_coord *c)
{
    json_object_set_new(o, "rank", json_integer(c->rank));
    json_object_set_new(o, "tp", json_integer(c->tp));
    json_object_set_new(o, "pp", json_integer(c->pp));
    json_object_set_new(o, "dp", json_integer(c->dp));
    json_t *ch = json_array();
    for (int64_t i = 0; i < c->nchunks; i++)
        json_array_append_new(ch, json_integer(c->chunks[i]));
    json_object_set_new(o, "chunks", ch);
}

static json_t *parse_root(const char *text, size_t n, const char *where,
                          struct oc_status *st)
{
    json_error_t e;
    char q[OC_QUOTE_MAX], qt[OC_QUOTE_MAX];
    json_t *root = json_loadb(text, n, JSON_REJECT_DUPLICATES, &e);
    if (!root) {
        /* e.text quotes the token jansson did not expect, as the file has it */
        oc_fail(st, "%s:%d:%d: %s", oc_quote(q, sizeof q, where), e.line, e.column,
                oc_quote(qt, sizeof qt, e.text));
        return NULL;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        oc_fail(st, "%s: must hold a JSON object", oc_quote(q, sizeof q, where));
        return NULL;
    }
    return root;
}

/* ------------------------------------------------------------------ */
/* The manifest                                                         */

static json_t *manifest_layout(const struct oc_ckpt_manifest *mf)
{
    json_t *l = json_object();
    json_object_set_new(l, "string", json_string(mf->layout));
    json_object_set_new(l, "tp", json_integer(mf->tp));
    json_object_set_new(l, "pp", json_integer(mf->pp));
    json_object_set_new(l, "dp", json_integer(mf->dp));
    json_object_set_new(l, "vchunks", json_integer(mf->vchunks));
    json_object_set_new(l, "micro_batch", json_integer(mf->micro_batch));
    json_object_set_new(l, "schedule", json_string(mf->schedule));
    json_object_set_new(l, "recompute", json_string(mf->recompute));
    json_object_set_new(l, "sequence_parallel", json_boolean(mf->sequence_parallel));
    json_object_set_new(l, "shard_optimizer", json_boolean(mf->shard_optimizer));
    json_object_set_new(l, "overlap_grad_reduce", json_boolean(mf->overlap_grad_reduce));
    json_object_set_new(l, "order", json_string(mf->order));
    return l;
}

char *oc_ckpt_manifest_json(const struct oc_ckpt_manifest *mf)
{
    json_t *root = json_object();
    json_object_set_new(root, "format", json_string(OC_CKPT_FORMAT));
    json_object_set_new(root, "version", json_integer(OC_CKPT_VERSION));
    json_object_set_new(root, "step", json_integer(mf->step));
    json_object_set_new(root, "model",
                        json_pack("{s:s, s:s}", "name", mf->model_name, "config_sha256",
                                  mf->model_sha256));
    json_object_set_new(root, "layout", manifest_layout(mf));
    json_object_set_new(root, "precision",
                        json_pack("{s:s, s:s, s:s, s:s}", "run", mf->precision_run, "gemm",
                                  mf->precision_gemm, "weights", "fp32", "optimizer",
                                  "fp32"));
    json_object_set_new(root, "backend", json_string(mf->backend));
    /* the data and the weights are counter-based (data.h, params.h): their
     * whole generator state is the seed and the position */
    json_object_set_new(root, "data",
                        json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "generator",
                                  "synthetic walk, splitmix64 keyed by (seed, sample, "
                                  "position)", "seed", (json_int_t)(mf->seed + 1),
                                  "global_batch", (json_int_t)mf->global_batch,
                                  "seq_length", (json_int_t)mf->seq_length, "next_step",
                                  (json_int_t)mf->step, "next_sample",
                                  (json_int_t)(mf->step * mf->global_batch)));
    json_object_set_new(root, "rng",
                        json_pack("{s:s, s:I, s:I}", "state",
                                  "none beyond the seeds and the data position",
                                  "weights_seed", (json_int_t)mf->seed, "data_seed",
                                  (json_int_t)(mf->seed + 1)));
    json_object_set_new(root, "optimizer",
                        json_pack("{s:s, s:I, s:f, s:f, s:f, s:f, s:f}", "name", "adamw",
                                  "t", (json_int_t)mf->step, "lr", mf->lr, "beta1",
                                  mf->beta1, "beta2", mf->beta2, "eps", mf->eps,
                                  "weight_decay", mf->weight_decay));
    json_t *sh = json_array();
    for (int64_t i = 0; i < mf->nshards; i++) {
        const struct oc_ckpt_shard *s = &mf->shards[i];
        json_t *o = json_object();
        json_object_set_new(o, "file", json_string(s->file));
        put_coord(o, &s->at);
        json_object_set_new(o, "bytes", json_integer(s->bytes));
        json_object_set_new(o, "sha256", json_string(s->sha256));
        json_array_append_new(sh, o);
    }
    json_object_set_new(root, "shards", sh);
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
    json_decref(root);
    OC_ASSERT(text);
    return text;
}

static int parse_manifest_head(const struct rd *d, json_t *root,
                               struct oc_ckpt_manifest *mf)
{
    json_t *model, *layout, *prec, *data, *rng, *opt;
    int64_t seed;
    if (check_format(d, root, OC_CKPT_FORMAT) != 0 ||
        get_i64(d, root, "step", 0, &mf->step) != 0 || !(model = get_obj(d, root, "model")) ||
        get_str(d, model, "name", mf->model_name, sizeof mf->model_name) != 0 ||
        get_str(d, model, "config_sha256", mf->model_sha256, sizeof mf->model_sha256) != 0 ||
        !(layout = get_obj(d, root, "layout")) ||
        get_str(d, layout, "string", mf->layout, sizeof mf->layout) != 0 ||
        get_i64(d, layout, "tp", 1, &mf->tp) != 0 || get_i64(d, layout, "pp", 1, &mf->pp) != 0 ||
        get_i64(d, layout, "dp", 1, &mf->dp) != 0 ||
        get_i64(d, layout, "vchunks", 1, &mf->vchunks) != 0 ||
        get_i64(d, layout, "micro_batch", 1, &mf->micro_batch) != 0 ||
        get_str(d, layout, "schedule", mf->schedule, sizeof mf->schedule) != 0 ||
        get_str(d, layout, "recompute", mf->recompute, sizeof mf->recompute) != 0 ||
        get_bool(d, layout, "sequence_parallel", &mf->sequence_parallel) != 0 ||
        get_bool(d, layout, "shard_optimizer", &mf->shard_optimizer) != 0 ||
        get_bool(d, layout, "overlap_grad_reduce", &mf->overlap_grad_reduce) != 0 ||
        get_str(d, layout, "order", mf->order, sizeof mf->order) != 0 ||
        !(prec = get_obj(d, root, "precision")) ||
        get_str(d, prec, "run", mf->precision_run, sizeof mf->precision_run) != 0 ||
        get_str(d, prec, "gemm", mf->precision_gemm, sizeof mf->precision_gemm) != 0 ||
        get_str(d, root, "backend", mf->backend, sizeof mf->backend) != 0 ||
        !(data = get_obj(d, root, "data")) ||
        get_i64(d, data, "global_batch", 1, &mf->global_batch) != 0 ||
        get_i64(d, data, "seq_length", 1, &mf->seq_length) != 0 ||
        !(rng = get_obj(d, root, "rng")) || get_i64(d, rng, "weights_seed", 0, &seed) != 0 ||
        !(opt = get_obj(d, root, "optimizer")) || get_real(d, opt, "lr", &mf->lr) != 0 ||
        get_real(d, opt, "beta1", &mf->beta1) != 0 ||
        get_real(d, opt, "beta2", &mf->beta2) != 0 || get_real(d, opt, "eps", &mf->eps) != 0 ||
        get_real(d, opt, "weight_decay", &mf->weight_decay) != 0)
        return -1;
    mf->seed = (uint64_t)seed;
    return 0;
}

int oc_ckpt_manifest_parse(struct oc_ckpt_manifest *mf, const char *text,
                           const char *where, struct oc_status *st)
{
    memset(mf, 0, sizeof *mf);
    const struct rd d = rd_make(where, st);
    json_t *root = parse_root(text, strlen(text), where, st);
    if (!root)
        return -1;
    json_t *sh;
    int rc = parse_manifest_head(&d, root, mf);
    if (rc == 0 && !(sh = get_arr(&d, root, "shards", (size_t)1 << 24)))
        rc = -1;
    if (rc == 0) {
        mf->nshards = (int64_t)json_array_size(sh);
        mf->shards = oc_xcalloc((size_t)(mf->nshards > 0 ? mf->nshards : 1),
                                sizeof *mf->shards);
    }
    for (int64_t i = 0; rc == 0 && i < mf->nshards; i++) {
        struct oc_ckpt_shard *s = &mf->shards[i];
        json_t *o = json_array_get(sh, (size_t)i);
        if (get_str(&d, o, "file", s->file, sizeof s->file) != 0 ||
            get_coord(&d, o, &s->at) != 0 || get_i64(&d, o, "bytes", 0, &s->bytes) != 0 ||
            get_str(&d, o, "sha256", s->sha256, sizeof s->sha256) != 0) {
            char why[OC_MSG_MAX];
            snprintf(why, sizeof why, "%s", st->msg);
            rc = oc_fail(st, "%s (shard %lld)", why, (long long)i);
        }
    }
    json_decref(root);
    if (rc != 0)
        oc_ckpt_manifest_free(mf);
    return rc;
}

void oc_ckpt_manifest_free(struct oc_ckpt_manifest *mf)
{
    free(mf->shards);
    memset(mf, 0, sizeof *mf);
}

/* ------------------------------------------------------------------ */
/* A shard's header                                                     */

void oc_ckpt_header_of(struct oc_ckpt_header *h, const struct oc_params *p,
                       const struct oc_ckpt_coord *at, int64_t step,
                       const char model_sha256[OC_CKPT_SHA_HEX])
{
    memset(h, 0, sizeof *h);
    h->step = step;
    snprintf(h->model_sha256, sizeof h->model_sha256, "%s", model_sha256);
    h->at = *at;
    h->nw = p->n;
    h->nopt = p->nopt;
    h->nt = p->nt;
    h->t = oc_xcalloc((size_t)(p->nt > 0 ? p->nt : 1), sizeof *h->t);
    for (int64_t i = 0; i < p->nt; i++) {
        const struct oc_param_tensor *s = &p->t[i];
        struct oc_ckpt_tensor *t = &h->t[i];
        snprintf(t->name, sizeof t->name, "%s", oc_param_name(s->kind));
        t->layer = s->layer;
        t->grows = s->grows;
        t->gcols = s->gcols;
        t->row0 = s->row0;
        t->col0 = s->col0;
        t->rows = s->rows;
        t->cols = s->cols;
        t->parts = s->parts;
        t->offset = s->offset;
        oc_params_slice(s->rows * s->cols, p->opt_d, p->opt_j, &t->opt_lo, &t->opt_hi);
        t->opt_off = p->opt_off[i];
    }
}

void oc_ckpt_header_free(struct oc_ckpt_header *h)
{
    free(h->t);
    memset(h, 0, sizeof *h);
}

static json_t *ints(int n, const int64_t *v)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

unsigned char *oc_ckpt_header_encode(const struct oc_ckpt_header *h, size_t *n)
{
    json_t *root = json_object();
    json_object_set_new(root, "format", json_string(OC_CKPT_SHARD_FORMAT));
    json_object_set_new(root, "version", json_integer(OC_CKPT_VERSION));
    json_object_set_new(root, "step", json_integer(h->step));
    json_object_set_new(root, "model_sha256", json_string(h->model_sha256));
    put_coord(root, &h->at);
    json_object_set_new(root, "dtype", json_string("f32"));
    json_object_set_new(root, "byte_order", json_string("little"));
    json_object_set_new(root, "nw", json_integer(h->nw));
    json_object_set_new(root, "nopt", json_integer(h->nopt));
    json_t *ts = json_array();
    for (int64_t i = 0; i < h->nt; i++) {
        const struct oc_ckpt_tensor *t = &h->t[i];
        const int64_t global[] = {t->grows, t->gcols};
        const int64_t block[] = {t->row0, t->col0, t->rows, t->cols, t->parts};
        const int64_t opt[] = {t->opt_lo, t->opt_hi, t->opt_off};
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(t->name));
        json_object_set_new(o, "layer", json_integer(t->layer));
        json_object_set_new(o, "global", ints(2, global));
        json_object_set_new(o, "block", ints(5, block));
        json_object_set_new(o, "offset", json_integer(t->offset));
        json_object_set_new(o, "opt", ints(3, opt));
        json_array_append_new(ts, o);
    }
    json_object_set_new(root, "tensors", ts);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    OC_ASSERT(text);
    const size_t len = strlen(text);
    const size_t total = (16 + len + OC_CKPT_ALIGN - 1) / OC_CKPT_ALIGN * OC_CKPT_ALIGN;
    unsigned char *buf = oc_xmalloc(total);
    memcpy(buf, OC_CKPT_SHARD_MAGIC, 8);
    const uint64_t hlen = (uint64_t)(total - 16);
    for (int i = 0; i < 8; i++) /* little-endian, whatever the host */
        buf[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + 16, text, len);
    memset(buf + 16 + len, ' ', total - 16 - len);
    free(text);
    *n = total;
    return buf;
}

int oc_ckpt_header_length(const unsigned char first[16], const char *where,
                          uint64_t *len, struct oc_status *st)
{
    char q[OC_QUOTE_MAX];
    if (memcmp(first, OC_CKPT_SHARD_MAGIC, 8) != 0)
        return oc_fail(st, "%s: not a shard (no %s at its start)", oc_quote(q, sizeof q, where),
                       OC_CKPT_SHARD_MAGIC);
    *len = 0;
    for (int i = 0; i < 8; i++)
        *len |= (uint64_t)first[8 + i] << (8 * i);
    if (*len > ((uint64_t)1 << 32))
        return oc_fail(st, "%s: a header of %llu bytes is absurd", oc_quote(q, sizeof q, where),
                       (unsigned long long)*len);
    return 0;
}

/* The n integers of array key into v. */
static int get_ints(const struct rd *d, json_t *o, const char *key, int n, int64_t *v)
{
    json_t *a = get_arr(d, o, key, (size_t)n);
    if (!a)
        return -1;
    if (json_array_size(a) != (size_t)n)
        return oc_fail(d->st, "%s: field '%s' must hold %d integers", d->where, key, n);
    for (int i = 0; i < n; i++) {
        json_t *x = json_array_get(a, (size_t)i);
        if (!json_is_integer(x))
            return oc_fail(d->st, "%s: field '%s' must hold %d integers", d->where, key, n);
        v[i] = (int64_t)json_integer_value(x);
    }
    return 0;
}

/* Tensor t lies inside its global shape, w, m and v. */
static int check_tensor(const struct rd *d, const struct oc_ckpt_header *h,
                        const struct oc_ckpt_tensor *t)
{
    const int64_t n = t->rows * t->cols;
    const int ok = t->grows > 0 && t->gcols > 0 && t->parts >= 1 && t->rows >= 0 &&
                   t->cols >= 0 && t->rows % t->parts == 0 && t->grows % t->parts == 0 &&
                   t->row0 >= 0 && t->row0 + t->rows / t->parts <= t->grows / t->parts &&
                   t->col0 >= 0 && t->col0 + t->cols <= t->gcols && t->offset >= 0 &&
                   t->offset + n <= h->nw && t->opt_lo >= 0 && t->opt_lo <= t->opt_hi &&
                   t->opt_hi <= n && t->opt_off >= 0 &&
                   t->opt_off + (t->opt_hi - t->opt_lo) <= h->nopt;
    char q[OC_QUOTE_MAX];
    if (!ok)
        return oc_fail(d->st, "%s: tensor %s of layer %lld does not fit its shape or the "
                              "shard's arenas", d->where, oc_quote(q, sizeof q, t->name),
                       (long long)t->layer);
    return 0;
}

static int decode_tensor(const struct rd *d, json_t *o, struct oc_ckpt_tensor *t)
{
    int64_t global[2] = {0}, block[5] = {0}, opt[3] = {0};
    if (get_str(d, o, "name", t->name, sizeof t->name) != 0 ||
        get_i64(d, o, "layer", -1, &t->layer) != 0 ||
        get_ints(d, o, "global", 2, global) != 0 || get_ints(d, o, "block", 5, block) != 0 ||
        get_i64(d, o, "offset", 0, &t->offset) != 0 || get_ints(d, o, "opt", 3, opt) != 0)
        return -1;
    t->grows = global[0];
    t->gcols = global[1];
    t->row0 = block[0];
    t->col0 = block[1];
    t->rows = block[2];
    t->cols = block[3];
    t->parts = block[4];
    t->opt_lo = opt[0];
    t->opt_hi = opt[1];
    t->opt_off = opt[2];
    /* Bounds before check_tensor's arithmetic, so that no sum or product of
     * these overflows int64 (libFuzzer's ckpt_header found 512 x 6.5e17):
     * a dimension below 2^31 (a tensor side; products stay below 2^62), an
     * arena offset below 2^40 floats (4 TiB). */
    const int64_t dim_max = (int64_t)1 << 31, off_max = (int64_t)1 << 40;
    const struct { const char *what; int64_t v, max; } b[] = {
        {"global", t->grows, dim_max}, {"global", t->gcols, dim_max},
        {"block", t->row0, dim_max},   {"block", t->col0, dim_max},
        {"block", t->rows, dim_max},   {"block", t->cols, dim_max},
        {"block", t->parts, dim_max},  {"offset", t->offset, off_max},
        {"opt", t->opt_lo, off_max},   {"opt", t->opt_hi, off_max},
        {"opt", t->opt_off, off_max},
    };
    for (size_t i = 0; i < sizeof b / sizeof *b; i++)
        if (b[i].v < 0 || b[i].v > b[i].max) {
            char q[OC_QUOTE_MAX];
            return oc_fail(d->st, "%s: tensor %s: field '%s' holds %lld (from 0 to %lld)",
                           d->where, oc_quote(q, sizeof q, t->name), b[i].what,
                           (long long)b[i].v, (long long)b[i].max);
        }
    return 0;
}

static int decode_body(const struct rd *d, json_t *root, struct oc_ckpt_header *h)
{
    char dtype[16], order[16];
    json_t *ts;
    if (check_format(d, root, OC_CKPT_SHARD_FORMAT) != 0 ||
        get_i64(d, root, "step", 0, &h->step) != 0 ||
        get_str(d, root, "model_sha256", h->model_sha256, sizeof h->model_sha256) != 0 ||
        get_coord(d, root, &h->at) != 0 || get_str(d, root, "dtype", dtype, sizeof dtype) != 0 ||
        get_str(d, root, "byte_order", order, sizeof order) != 0 ||
        get_i64(d, root, "nw", 0, &h->nw) != 0 || get_i64(d, root, "nopt", 0, &h->nopt) != 0 ||
        !(ts = get_arr(d, root, "tensors", (size_t)1 << 24)))
        return -1;
    char qd[OC_QUOTE_MAX], qo[OC_QUOTE_MAX];
    if (strcmp(dtype, "f32") != 0 || strcmp(order, "little") != 0)
        return oc_fail(d->st, "%s: dtype %s, byte order %s; this ocsim-exec reads f32, "
                              "little", d->where, oc_quote(qd, sizeof qd, dtype),
                       oc_quote(qo, sizeof qo, order));
    h->nt = (int64_t)json_array_size(ts);
    h->t = oc_xcalloc((size_t)(h->nt > 0 ? h->nt : 1), sizeof *h->t);
    for (int64_t i = 0; i < h->nt; i++)
        if (decode_tensor(d, json_array_get(ts, (size_t)i), &h->t[i]) != 0 ||
            check_tensor(d, h, &h->t[i]) != 0)
            return -1;
    return 0;
}

int oc_ckpt_header_decode(struct oc_ckpt_header *h, const unsigned char *buf,
                          size_t n, const char *where, struct oc_status *st)
{
    memset(h, 0, sizeof *h);
    uint64_t len = 0;
    char q[OC_QUOTE_MAX];
    if (n < 16)
        return oc_fail(st, "%s: %zu bytes are less than a shard's first 16",
                       oc_quote(q, sizeof q, where), n);
    if (oc_ckpt_header_length(buf, where, &len, st) != 0)
        return -1;
    if (n < 16 + len)
        return oc_fail(st, "%s: the header is cut short (%zu of %llu bytes)",
                       oc_quote(q, sizeof q, where), n - 16,
                       (unsigned long long)len);
    json_t *root = parse_root((const char *)buf + 16, (size_t)len, where, st);
    if (!root)
        return -1;
    const struct rd d = rd_make(where, st);
    int rc = decode_body(&d, root, h);
    json_decref(root);
    if (rc != 0)
        oc_ckpt_header_free(h);
    return rc;
}

int64_t oc_ckpt_header_file_bytes(const struct oc_ckpt_header *h)
{
    size_t n;
    unsigned char *head = oc_ckpt_header_encode(h, &n);
    free(head);
    return (int64_t)n + (h->nw + 2 * h->nopt) * (int64_t)sizeof(float);
}

/* ------------------------------------------------------------------ */
/* Pieces                                                               */

struct oc_param_tensor oc_ckpt_tensor_block(const struct oc_ckpt_tensor *t)
{
    struct oc_param_tensor b;
    memset(&b, 0, sizeof b);
    b.layer = t->layer;
    b.rows = t->rows;
    b.cols = t->cols;
    b.row0 = t->row0;
    b.col0 = t->col0;
    b.parts = t->parts;
    b.grows = t->grows;
    b.gcols = t->gcols;
    return b;
}

int64_t oc_ckpt_local_row(const struct oc_param_tensor *t, int64_t g)
{
    const int64_t gper = t->grows / t->parts, per = t->rows / t->parts;
    const int64_t part = g / gper, r = g % gper;
    if (g < 0 || g >= t->grows || r < t->row0 || r >= t->row0 + per)
        return -1;
    return part * per + r - t->row0;
}

/* Walks src's rows in its range: the part of a row that dst holds is one
 * run of dst's flat floats (same global row, consecutive global columns),
 * clipped to dst's range. */
int64_t oc_ckpt_piece_copy(const struct oc_ckpt_piece *src, struct oc_ckpt_piece *dst)
{
    const struct oc_param_tensor *s = &src->t, *t = &dst->t;
    OC_ASSERT(s->grows == t->grows && s->gcols == t->gcols);
    if (src->hi <= src->lo || dst->hi <= dst->lo || s->cols == 0 || t->cols == 0)
        return 0;
    int64_t copied = 0;
    for (int64_t r = src->lo / s->cols; r <= (src->hi - 1) / s->cols; r++) {
        const int64_t rd = oc_ckpt_local_row(t, oc_params_global_row(s, r));
        if (rd < 0)
            continue;
        /* the row's columns in src's range, as global columns */
        int64_t a = src->lo - r * s->cols, b = src->hi - r * s->cols;
        a = (a > 0 ? a : 0) + s->col0;
        b = (b < s->cols ? b : s->cols) + s->col0;
        /* within dst's columns */
        if (a < t->col0)
            a = t->col0;
        if (b > t->col0 + t->cols)
            b = t->col0 + t->cols;
        if (a >= b)
            continue;
        /* dst's flat run, clipped to its range */
        int64_t f = rd * t->cols + (a - t->col0), e = f + (b - a);
        const int64_t skip = f < dst->lo ? dst->lo - f : 0;
        f += skip;
        if (e > dst->hi)
            e = dst->hi;
        if (f >= e)
            continue;
        const int64_t sf = r * s->cols + (a - s->col0) + skip;
        if (dst->buf)
            memcpy(dst->buf + (f - dst->lo), src->buf + (sf - src->lo),
                   (size_t)(e - f) * sizeof(float));
        copied += e - f;
    }
    return copied;
}
