/* sweep_journal.c: the identity and the records of a sweep's journal (see
 * sweep_journal.h). */
#define _POSIX_C_SOURCE 200809L
#include "sweep_journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC_LINE "ocsim sweep journal 1"
#define RECORD_MAGIC 0x6f63736aU /* "ocsj" */
/* The metrics without the stage rows, then nstages of them. */
#define FIXED_BYTES offsetof(struct oc_metrics, stage)

/* ---- identity ---------------------------------------------------------- */

void oc_sweep_id_add(struct oc_sweep_id *id, const char *key, const char *fmt, ...)
{
    OC_ASSERT(id && key && fmt && id->n < OC_SWEEP_ID_MAX);
    OC_ASSERT(strlen(key) < sizeof id->key[0] && !strchr(key, ' '));
    snprintf(id->key[id->n], sizeof id->key[0], "%s", key);
    char *v = id->value[id->n];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof id->value[0], fmt, ap);
    va_end(ap);
    for (char *c = v; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    id->n++;
}

/* FNV-1a 64: offset basis 14695981039346656037, prime 1099511628211
 * (Fowler, Noll, Vo; the parameters of draft-eastlake-fnv). */
struct fnv {
    uint64_t h;
};

static void fnv_bytes(struct fnv *f, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        f->h ^= c[i];
        f->h *= 1099511628211ULL;
    }
}

static void fnv_i64(struct fnv *f, int64_t v)
{
    fnv_bytes(f, &v, sizeof v);
}

static void fnv_f64(struct fnv *f, double v)
{
    fnv_bytes(f, &v, sizeof v);
}

static void fnv_str(struct fnv *f, const char *s)
{
    fnv_i64(f, (int64_t)strlen(s));
    fnv_bytes(f, s, strlen(s));
}

#define FNV_INIT {14695981039346656037ULL}

uint64_t oc_hash_model(const struct oc_model *m)
{
    struct fnv f = FNV_INIT;
    fnv_str(&f, m->name);
    fnv_str(&f, m->model_type);
    const int64_t ints[] = {m->arch, m->hidden_size, m->num_attention_heads,
                            m->num_key_value_heads, m->num_hidden_layers,
                            m->intermediate_size, m->vocab_size,
                            m->max_position_embeddings, m->gated_mlp, m->has_bias,
                            m->learned_pos_emb, m->norm_params_per_h,
                            m->tie_word_embeddings, m->has_dropout,
                            m->rope_scaling.original_max_position_embeddings};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        fnv_i64(&f, ints[i]);
    fnv_f64(&f, m->rms_norm_eps);
    fnv_f64(&f, m->rope_theta);
    fnv_str(&f, m->rope_scaling.type);
    fnv_f64(&f, m->rope_scaling.factor);
    fnv_f64(&f, m->rope_scaling.low_freq_factor);
    fnv_f64(&f, m->rope_scaling.high_freq_factor);
    return f.h;
}

uint64_t oc_hash_topology(const struct oc_topology *t)
{
    struct fnv f = FNV_INIT;
    const char *names[] = {t->name, t->device.name, t->intra_name, t->nic_name,
                           t->inter_name};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        fnv_str(&f, names[i]);
    const int64_t ints[] = {t->gpus_per_node, t->device.sm_count, t->nics_per_node,
                            t->switch_levels};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        fnv_i64(&f, ints[i]);
    const double dbl[] = {t->device.peak_flops_16bit, t->device.memory_bytes,
                          t->device.hbm_bandwidth_Bps, t->device.gemm_efficiency,
                          t->intra_bandwidth_Bps, t->intra_latency_s,
                          t->nic_bandwidth_Bps, t->nic_latency_s, t->inter_latency_s,
                          t->oversubscription, t->calib_gemm_flops, t->calib_mem_Bps,
                          t->calib_act_bytes, t->calib_optimizer_s_per_param,
                          t->calib_embed_fwd_s_per_token, t->calib_embed_bwd_s_per_token};
    for (size_t i = 0; i < sizeof dbl / sizeof dbl[0]; i++)
        fnv_f64(&f, dbl[i]);
    for (int i = 0; i < OC_CALIB_PARTS; i++)
        fnv_f64(&f, t->calib_part_flops[i]);
    /* node groups (none: the hash of a file without them, as before) */
    for (int g = 0; g < t->n_groups; g++) {
        const struct oc_node_group *ng = &t->groups[g];
        fnv_str(&f, ng->name);
        fnv_i64(&f, ng->nodes);
        fnv_i64(&f, ng->device.sm_count);
        const double gd[] = {ng->device.peak_flops_16bit, ng->device.memory_bytes,
                             ng->device.hbm_bandwidth_Bps, ng->device.gemm_efficiency,
                             ng->intra_bandwidth_Bps, ng->intra_latency_s,
                             ng->intra_achieved_Bps, ng->nic_bandwidth_Bps, ng->nic_latency_s};
        for (size_t i = 0; i < sizeof gd / sizeof gd[0]; i++)
            fnv_f64(&f, gd[i]);
    }
    return f.h;
}

uint64_t oc_hash_layouts(const struct oc_layout *l, const int64_t *index, int64_t n)
{
    struct fnv f = FNV_INIT;
    for (int64_t i = 0; i < n; i++) {
        const struct oc_layout *x = &l[i];
        const int64_t v[] = {index[i], x->tp, x->cp, x->pp, x->dp, x->micro_batch,
                             x->global_batch, x->seq_length, x->schedule, x->vchunks,
                             x->recompute, x->recompute_layers, x->sequence_parallel,
                             x->zero, x->overlap_grad_reduce, x->attention, x->order,
                             x->coll, x->allow_cross_node_tp, x->precision,
                             x->first_stage_layers, x->last_stage_layers};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
            fnv_i64(&f, v[k]);
    }
    return f.h;
}

int oc_hash_file(const char *path, uint64_t *hash, struct oc_status *st)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return oc_fail(st, "%s: cannot read: %s", path, strerror(errno));
    struct fnv f = FNV_INIT;
    unsigned char buf[65536];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, fp)) > 0)
        fnv_bytes(&f, buf, k);
    int bad = ferror(fp);
    fclose(fp);
    if (bad)
        return oc_fail(st, "%s: read error", path);
    *hash = f.h;
    return 0;
}

/* ---- the file ---------------------------------------------------------- */

struct record_head {
    uint32_t magic;
    uint32_t nstages;
    int64_t index;
    uint64_t hash; /* FNV-1a of index, then the payload */
};

static uint64_t record_hash(int64_t index, const void *payload, size_t n)
{
    struct fnv f = FNV_INIT;
    fnv_i64(&f, index);
    fnv_bytes(&f, payload, n);
    return f.h;
}

static void format_line(char *buf, size_t n)
{
    snprintf(buf, n, "format %zu+%zu", (size_t)FIXED_BYTES, sizeof(struct oc_stage_metrics));
}

/* Writes n bytes and flushes them to the kernel: a record is in the file
 * whole, or the reader finds it cut. */
static int put(struct oc_sweep_journal *j, const void *p, size_t n, struct oc_status *st)
{
    if (fwrite(p, 1, n, j->f) != n || fflush(j->f) != 0)
        return oc_fail(st, "%s: cannot write: %s", j->path, strerror(errno));
    return 0;
}

int oc_sweep_journal_create(struct oc_sweep_journal *j, const char *path,
                            const struct oc_sweep_id *id, struct oc_status *st)
{
    snprintf(j->path, sizeof j->path, "%s", path);
    j->f = fopen(path, "wb");
    if (!j->f)
        return oc_fail(st, "%s: cannot write: %s", path, strerror(errno));
    size_t cap = 64 + (size_t)id->n * (sizeof id->key[0] + sizeof id->value[0] + 2);
    char *text = oc_xmalloc(cap);
    char fmt[64];
    format_line(fmt, sizeof fmt);
    size_t len = (size_t)snprintf(text, cap, "%s\n%s\n", MAGIC_LINE, fmt);
    for (int i = 0; i < id->n; i++)
        len += (size_t)snprintf(text + len, cap - len, "%s %s\n", id->key[i], id->value[i]);
    len += (size_t)snprintf(text + len, cap - len, "end\n");
    int rc = put(j, text, len, st);
    free(text);
    if (rc != 0) {
        fclose(j->f);
        j->f = NULL;
        unlink(path);
    }
    return rc;
}

size_t oc_sweep_record_size(const struct oc_metrics *mt)
{
    OC_ASSERT(mt->nstages >= 0 && mt->nstages <= OC_MAX_STAGES);
    return sizeof(struct record_head) + FIXED_BYTES + (size_t)mt->nstages * sizeof mt->stage[0];
}

void oc_sweep_record_encode(unsigned char *buf, int64_t index, const struct oc_metrics *mt)
{
    const size_t payload = oc_sweep_record_size(mt) - sizeof(struct record_head);
    struct record_head h = {RECORD_MAGIC, (uint32_t)mt->nstages, index, 0};
    memcpy(buf + sizeof h, mt, payload);
    h.hash = record_hash(index, buf + sizeof h, payload);
    memcpy(buf, &h, sizeof h);
}

size_t oc_sweep_record_decode(const unsigned char *data, size_t len, int64_t n_index,
                              int64_t *index, struct oc_metrics *mt)
{
    struct record_head h;
    if (len < sizeof h)
        return 0;
    memcpy(&h, data, sizeof h);
    if (h.magic != RECORD_MAGIC || h.nstages > OC_MAX_STAGES || h.index < 0 ||
        h.index >= n_index)
        return 0;
    size_t payload = FIXED_BYTES + (size_t)h.nstages * sizeof mt->stage[0];
    if (len - sizeof h < payload || record_hash(h.index, data + sizeof h, payload) != h.hash)
        return 0;
    memset(mt, 0, sizeof *mt);
    memcpy(mt, data + sizeof h, payload);
    if (mt->nstages != (int64_t)h.nstages)
        return 0;
    *index = h.index;
    return sizeof h + payload;
}

void oc_sweep_record_format(char *buf, size_t n)
{
    format_line(buf, n);
}

int oc_sweep_journal_append(struct oc_sweep_journal *j, int64_t index,
                            const struct oc_metrics *mt, struct oc_status *st)
{
    OC_ASSERT(j->f);
    const size_t size = oc_sweep_record_size(mt);
    unsigned char *buf = oc_xmalloc(size);
    oc_sweep_record_encode(buf, index, mt);
    int rc = put(j, buf, size, st);
    free(buf);
    return rc;
}

int oc_sweep_journal_close(struct oc_sweep_journal *j, struct oc_status *st)
{
    if (!j->f)
        return 0;
    int rc = 0;
    if (fflush(j->f) != 0 || fsync(fileno(j->f)) != 0)
        rc = oc_fail(st, "%s: cannot write: %s", j->path, strerror(errno));
    if (fclose(j->f) != 0 && rc == 0)
        rc = oc_fail(st, "%s: cannot write: %s", j->path, strerror(errno));
    j->f = NULL;
    return rc;
}

/* ---- resume ------------------------------------------------------------ */

static int read_file(const char *path, unsigned char **data, size_t *len,
                     struct oc_status *st)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return oc_fail(st, "--resume: %s: %s", path,
                       errno == ENOENT ? "no such file: no sweep to resume there"
                                       : strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return oc_fail(st, "--resume: %s: not a regular file", path);
    }
    *data = oc_xmalloc((size_t)sb.st_size + 1);
    size_t got = 0;
    while (got < (size_t)sb.st_size) {
        ssize_t k = read(fd, *data + got, (size_t)sb.st_size - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    *len = got;
    return 0;
}

/* The next header line of the text part, or NULL at the end of the data. */
static const char *next_line(const unsigned char *data, size_t len, size_t *pos,
                             char *line, size_t n)
{
    if (*pos >= len)
        return NULL;
    const unsigned char *nl = memchr(data + *pos, '\n', len - *pos);
    if (!nl)
        return NULL;
    size_t k = (size_t)(nl - (data + *pos));
    snprintf(line, n, "%.*s", (int)(k < n - 1 ? k : n - 1), (const char *)data + *pos);
    *pos += k + 1;
    return line;
}

/* The first space-separated word where two identity values differ (a
 * knob, a name, a content hash), each cut to fit n. */
static void first_difference(const char *a, const char *b, char *wa, char *wb, size_t n)
{
    for (;;) {
        size_t la = strcspn(a, " "), lb = strcspn(b, " ");
        if (la != lb || strncmp(a, b, la) != 0 || (!a[la] && !b[lb])) {
            snprintf(wa, n, "%.*s", (int)(la < n - 1 ? la : n - 1), a);
            snprintf(wb, n, "%.*s", (int)(lb < n - 1 ? lb : n - 1), b);
            return;
        }
        a += la + (a[la] ? 1 : 0);
        b += lb + (b[lb] ? 1 : 0);
    }
}

/* Compares the text part with id; leaves *pos after "end". */
static int check_header(const char *path, const unsigned char *data, size_t len,
                        size_t *pos, const struct oc_sweep_id *id, struct oc_status *st)
{
    char line[512], want[64];
    if (!next_line(data, len, pos, line, sizeof line) || strcmp(line, MAGIC_LINE) != 0)
        return oc_fail(st, "--resume: %s is not a sweep journal (no '%s' line)", path,
                       MAGIC_LINE);
    format_line(want, sizeof want);
    if (!next_line(data, len, pos, line, sizeof line) || strcmp(line, want) != 0)
        return oc_fail(st, "--resume: %s was written by another build of ocsim (%.40s, this "
                           "one %s): run the sweep again without --resume",
                       path, line, want);
    for (int i = 0; i < id->n; i++) {
        if (!next_line(data, len, pos, line, sizeof line))
            return oc_fail(st, "--resume: %s ends inside its header", path);
        size_t kl = strlen(id->key[i]);
        if (strncmp(line, id->key[i], kl) != 0 || line[kl] != ' ')
            return oc_fail(st, "--resume: %s is another kind of sweep (its line '%.40s' "
                               "where this one has '%s'): run it without --resume",
                           path, line, id->key[i]);
        if (strcmp(line + kl + 1, id->value[i]) != 0) {
            char theirs[64], ours[64];
            first_difference(line + kl + 1, id->value[i], theirs, ours, sizeof ours);
            return oc_fail(st, "--resume: %s belongs to another sweep: its %s differs ('%s' "
                               "there, '%s' here); run without --resume to start over",
                           path, id->key[i], theirs, ours);
        }
    }
    if (!next_line(data, len, pos, line, sizeof line) || strcmp(line, "end") != 0)
        return oc_fail(st, "--resume: %s is another kind of sweep (its line '%.40s' where "
                           "this one's header ends): run it without --resume",
                       path, line);
    return 0;
}

/* Calls fn for each whole record from *pos; returns the count, *pos left
 * after the last whole record. */
static int64_t read_records(const unsigned char *data, size_t len, size_t *pos,
                            int64_t n_index, oc_sweep_journal_fn fn, void *ctx)
{
    struct oc_metrics *mt = oc_xmalloc(sizeof *mt);
    unsigned char *seen = oc_xcalloc((size_t)(n_index > 0 ? n_index : 1), 1);
    int64_t count = 0;
    int64_t index;
    size_t k;
    while ((k = oc_sweep_record_decode(data + *pos, len - *pos, n_index, &index, mt)) > 0) {
        *pos += k;
        if (!seen[index]) {
            seen[index] = 1;
            fn(ctx, index, mt);
            count++;
        }
    }
    free(seen);
    free(mt);
    return count;
}

int64_t oc_sweep_journal_resume(struct oc_sweep_journal *j, const char *path,
                                const struct oc_sweep_id *id, int64_t n_index,
                                oc_sweep_journal_fn fn, void *ctx, int64_t *dropped_bytes,
                                struct oc_status *st)
{
    snprintf(j->path, sizeof j->path, "%s", path);
    j->f = NULL;
    *dropped_bytes = 0;
    unsigned char *data = NULL;
    size_t len = 0, pos = 0;
    if (read_file(path, &data, &len, st) != 0)
        return -1;
    if (check_header(path, data, len, &pos, id, st) != 0) {
        free(data);
        return -1;
    }
    int64_t count = read_records(data, len, &pos, n_index, fn, ctx);
    free(data);
    *dropped_bytes = (int64_t)(len - pos);
    j->f = fopen(path, "r+b");
    if (!j->f || ftruncate(fileno(j->f), (off_t)pos) != 0 || fseek(j->f, 0, SEEK_END) != 0) {
        int e = errno;
        if (j->f)
            fclose(j->f);
        j->f = NULL;
        return oc_fail(st, "%s: cannot write: %s", path, strerror(e));
    }
    return count;
}
