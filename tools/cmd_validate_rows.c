/* cmd_validate_rows.c: reading and checking the rows of `ocsim validate`'s
 * tables (validate_rows.h): each row's layout columns become `ocsim
 * simulate`'s flags and go through its parser, model and topology loading
 * and layout check; the model may be given by its config.json dimensions. */
#define _POSIX_C_SOURCE 200809L
#include "validate_rows.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "layout.h"
#include "sim_opts.h"

/* The columns passed to ocsim simulate's parser as flags. */
enum vkind { V_INT, V_STR, V_BOOL, V_PREC };
static const struct vcol {
    const char *col, *flag;
    enum vkind kind;
    const char *neg; /* V_BOOL: the flag of "no" (NULL: nothing) */
} cols[] = {
    {"cards", "cards", V_INT, NULL},
    {"layout", "layout", V_STR, NULL},
    {"tp", "tp", V_INT, NULL},
    {"pp", "pp", V_INT, NULL},
    {"dp", "dp", V_INT, NULL},
    {"cp", "cp", V_INT, NULL},
    {"micro_batch", "micro-batch", V_INT, NULL},
    {"global_batch", "global-batch", V_INT, NULL},
    {"seq", "seq", V_INT, NULL},
    {"schedule", "schedule", V_STR, NULL},
    {"vchunks", "vchunks", V_INT, NULL},
    {"recompute", "recompute", V_STR, NULL},
    {"recompute_layers", "recompute-num-layers", V_INT, NULL},
    {"sequence_parallel", "sequence-parallel", V_BOOL, "no-sequence-parallel"},
    {"zero", "zero-stage", V_STR, NULL},
    {"overlap_grad_reduce", "overlap-grad-reduce", V_BOOL, "no-overlap-grad-reduce"},
    {"tp_comm_overlap", "tp-comm-overlap", V_BOOL, "no-tp-comm-overlap"},
    {"overlap_param_gather", "overlap-param-gather", V_BOOL, "no-overlap-param-gather"},
    {"uneven_chunks", "uneven-virtual-chunks", V_BOOL, "no-uneven-virtual-chunks"},
    {"grad_reduce_in_fp32", "grad-reduce-in-fp32", V_BOOL, "no-grad-reduce-in-fp32"},
    {"attention", "attention", V_STR, NULL},
    {"rank_order", "rank-order", V_STR, NULL},
    {"allow_cross_node_tp", "allow-cross-node-tp", V_BOOL, NULL},
    {"precision", NULL, V_PREC, NULL},
    {"collective", "collective", V_STR, NULL},
    {"fidelity", "fidelity", V_STR, NULL},
    {"reserve", "reserve", V_STR, NULL},
};
#define NCOLS (sizeof cols / sizeof cols[0])

/* Columns read otherwise (the model's dimensions, the measurement). */
static const char *const other_cols[] = {
    "name", "notes", "model", "topology", "quantity", "unit", "measured", "source", "stage",
    "hidden_size", "num_attention_heads", "num_hidden_layers", "vocab_size",
    "intermediate_size", "num_key_value_heads", "max_position_embeddings", "model_type",
    "hidden_act", "tie_word_embeddings", "bytes"};

const char *const oc_val_q_names[Q_N] = {
    "step_time",          "tflops_per_gpu",     "memory_states",      "memory_activations",
    "memory_peak",        "layer_forward_time", "layer_backward_time", "allreduce_busbw"};

/* Header names compared without case, '-' as '_'. */
static int col_of(const struct oc_csv_table *t, const char *name)
{
    for (int c = 0; c < t->ncols; c++) {
        const char *h = oc_csv_table_header(t, c);
        size_t i = 0;
        for (; h[i] && name[i]; i++) {
            const char a = h[i] == '-' ? '_' : (char)tolower((unsigned char)h[i]);
            if (a != name[i])
                break;
        }
        if (!h[i] && !name[i])
            return c;
    }
    return -1;
}

/* The cell of column `name` in data row r, "" when the column is absent. */
static const char *cell(const struct oc_csv_table *t, int64_t r, const char *name)
{
    const int c = col_of(t, name);
    return c < 0 ? "" : oc_csv_table_cell(t, r, c);
}

static int is_yes(const char *s, int *yes)
{
    static const char *const y[] = {"yes", "true", "1", "on"}, *const n[] = {"no", "false",
                                                                            "0", "off"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, y[i]) == 0)
            return *yes = 1, 0;
        if (strcasecmp(s, n[i]) == 0)
            return *yes = 0, 0;
    }
    return -1;
}

/* FILE:LINE of data row r (the message prefix of every row error). */
static void where(const struct oc_csv_table *t, int64_t r, char *buf, size_t n)
{
    snprintf(buf, n, "%.1000s:%lld", t->path, (long long)oc_csv_table_line(t, r));
}

/* A relative path in a cell: relative to the table's folder. Names without
 * '/' are shipped names (models/, topologies/). */
static const char *resolve(const char *table, const char *v, char *buf, size_t n)
{
    const char *slash = strrchr(table, '/');
    if (!strchr(v, '/') || v[0] == '/' || !slash)
        return v;
    snprintf(buf, n, "%.*s/%s", (int)(slash - table), table, v);
    return buf;
}

/* The columns of the layout into argv (which points into the table). */
static int layout_argv(const struct oc_csv_table *t, int64_t r, const struct vargs *a,
                       char **argv, int *argc, struct oc_status *st)
{
    char w[1100];
    where(t, r, w, sizeof w);
    static char flagbuf[NCOLS][48];
    int n = 0;
    argv[n++] = "validate";
    for (size_t i = 0; i < NCOLS; i++) {
        const int c = col_of(t, cols[i].col);
        const char *v = c < 0 ? "" : oc_csv_table_cell(t, r, c);
        if (!*v)
            continue;
        char q[OC_QUOTE_MAX];
        int64_t iv;
        int yes;
        switch (cols[i].kind) {
        case V_INT:
            if (oc_csv_table_i64(t, r, c, &iv, st) != 0)
                return -1;
            snprintf(flagbuf[i], sizeof flagbuf[i], "--%s", cols[i].flag);
            argv[n++] = flagbuf[i];
            argv[n++] = (char *)v; /* the parser takes the text */
            break;
        case V_STR:
            snprintf(flagbuf[i], sizeof flagbuf[i], "--%s", cols[i].flag);
            argv[n++] = flagbuf[i];
            argv[n++] = (char *)v;
            break;
        case V_BOOL:
            if (is_yes(v, &yes) != 0)
                return oc_fail(st, "%s: column '%s': '%s' is not yes or no", w, cols[i].col,
                               oc_quote(q, sizeof q, v));
            if (yes || cols[i].neg) {
                snprintf(flagbuf[i], sizeof flagbuf[i], "--%s",
                         yes ? cols[i].flag : cols[i].neg);
                argv[n++] = flagbuf[i];
            }
            break;
        case V_PREC:
            if (strcmp(v, "bf16") && strcmp(v, "fp16") && strcmp(v, "fp32"))
                return oc_fail(st, "%s: column 'precision': '%s' is not bf16, fp16 or fp32", w,
                               oc_quote(q, sizeof q, v));
            snprintf(flagbuf[i], sizeof flagbuf[i], "--%s", v);
            argv[n++] = flagbuf[i];
            break;
        }
    }
    if (col_of(t, "fidelity") < 0 || !*cell(t, r, "fidelity")) {
        argv[n++] = "--fidelity";
        argv[n++] = (char *)a->fidelity;
    }
    argv[n] = NULL;
    *argc = n;
    return 0;
}

/* The model of a row: column `model`, or the config.json dimensions. */
static int row_model(const struct oc_csv_table *t, int64_t r, struct oc_model *m,
                     struct oc_status *st)
{
    char w[1100], buf[4200], q[OC_QUOTE_MAX];
    where(t, r, w, sizeof w);
    const char *name = cell(t, r, "model");
    if (*name)
        return oc_model_load(resolve(t->path, name, buf, sizeof buf), m, st);
    static const char *const need[] = {"hidden_size", "num_attention_heads",
                                       "num_hidden_layers", "vocab_size"};
    static const char *const opt[] = {"intermediate_size", "num_key_value_heads",
                                      "max_position_embeddings"};
    for (int i = 0; i < 4; i++)
        if (!*cell(t, r, need[i]))
            return oc_fail(st, "%s: no model: give column 'model' (a shipped name or a "
                               "config.json) or the column '%s' and the other dimensions",
                           w, need[i]);
    char js[2048];
    int n = snprintf(js, sizeof js, "{\"_name_or_path\": \"dims\"");
    const char *label = cell(t, r, "name");
    int safe = *label != 0 && strlen(label) < 100;
    for (const char *p = label; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
            safe = 0;
    if (safe)
        n = snprintf(js, sizeof js, "{\"_name_or_path\": \"%s\"", label);
    /* The integer dimensions; max_position_embeddings defaults to seq. */
    for (int i = 0; i < 7; i++) {
        const char *k = i < 4 ? need[i] : opt[i - 4];
        int c = col_of(t, k);
        if ((c < 0 || !*oc_csv_table_cell(t, r, c)) &&
            strcmp(k, "max_position_embeddings") == 0)
            c = col_of(t, "seq");
        if (c < 0 || !*oc_csv_table_cell(t, r, c))
            continue;
        int64_t iv;
        if (oc_csv_table_i64(t, r, c, &iv, st) != 0)
            return -1;
        n += snprintf(js + n, sizeof js - (size_t)n, ", \"%s\": %lld", k, (long long)iv);
    }
    static const char *const strs[] = {"model_type", "hidden_act"};
    for (int i = 0; i < 2; i++) {
        const char *v = cell(t, r, strs[i]);
        if (i == 0 && !*v)
            v = "gpt2";
        if (!*v)
            continue;
        for (const char *p = v; *p; p++)
            if (!isalnum((unsigned char)*p) && !strchr("._-", *p))
                return oc_fail(st, "%s: column '%s': '%s' is not a name", w, strs[i],
                               oc_quote(q, sizeof q, v));
        n += snprintf(js + n, sizeof js - (size_t)n, ", \"%s\": \"%s\"", strs[i], v);
    }
    const char *tie = cell(t, r, "tie_word_embeddings");
    if (*tie) {
        int yes;
        if (is_yes(tie, &yes) != 0)
            return oc_fail(st, "%s: column 'tie_word_embeddings': '%s' is not yes or no", w,
                           oc_quote(q, sizeof q, tie));
        n += snprintf(js + n, sizeof js - (size_t)n, ", \"tie_word_embeddings\": %s",
                      yes ? "true" : "false");
    }
    snprintf(js + n, sizeof js - (size_t)n, "}");
    return oc_model_parse(js, strlen(js), w, m, st);
}

/* The measured quantity of a row: quantity, unit, value. */
static int row_measure(const struct oc_csv_table *t, int64_t r, struct vrow *v,
                       double *measured, struct oc_status *st)
{
    char w[1100], q[OC_QUOTE_MAX];
    where(t, r, w, sizeof w);
    static const struct {
        const char *unit;
        int mem; /* 0 time, 1 throughput, 2 memory, 3 bandwidth */
        double scale;
    } units[] = {
        {"s", 0, 1},         {"s/step", 0, 1},     {"s/iter", 0, 1},
        {"ms", 0, 1e-3},     {"ms/step", 0, 1e-3}, {"ms/iter", 0, 1e-3},
        {"tflop/s", 1, 1},   {"tflop/s/gpu", 1, 1}, {"tflops", 1, 1},
        {"gib", 2, 1073741824.0}, {"gb", 2, 1e9},  {"mib", 2, 1048576.0},
        {"gb/s", 3, 1e9},
    };
    const char *u = cell(t, r, "unit");
    int k = -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcasecmp(u, units[i].unit) == 0)
            k = (int)i;
    if (k < 0)
        return oc_fail(st, "%s: column 'unit': unknown unit '%s' (known: s/step, ms/step, "
                           "TFLOP/s, GiB, GB, MiB, GB/s)", w, oc_quote(q, sizeof q, u));
    v->scale = units[k].scale;
    const char *qs = cell(t, r, "quantity");
    int qi = -1;
    for (int i = 0; i < Q_N; i++)
        if (strcmp(qs, oc_val_q_names[i]) == 0)
            qi = i;
    if (!*qs && units[k].mem != 2)
        qi = units[k].mem == 0 ? Q_STEP : units[k].mem == 1 ? Q_TFLOPS : Q_BUSBW;
    if (qi < 0)
        return oc_fail(st, "%s: column 'quantity': '%s' is not one of step_time, "
                           "tflops_per_gpu, memory_states, memory_activations, memory_peak, "
                           "layer_forward_time, layer_backward_time, allreduce_busbw",
                       w, oc_quote(q, sizeof q, qs));
    const int kind = qi == Q_TFLOPS                           ? 1
                     : qi >= Q_MEM_STATES && qi <= Q_MEM_PEAK ? 2
                     : qi == Q_BUSBW                          ? 3
                                                              : 0;
    if (kind != units[k].mem)
        return oc_fail(st, "%s: column 'unit': '%s' is not a unit of %s", w,
                       oc_quote(q, sizeof q, u), oc_val_q_names[qi]);
    v->q = (enum vq)qi;
    const int c = col_of(t, "measured");
    if (oc_csv_table_f64(t, r, c, measured, st) != 0)
        return -1;
    if (!(*measured > 0) || !isfinite(*measured))
        return oc_fail(st, "%s: column 'measured': %g is not a positive number", w, *measured);
    v->stage = 0;
    const int cs = col_of(t, "stage");
    if (cs >= 0 && *oc_csv_table_cell(t, r, cs) &&
        oc_csv_table_i64(t, r, cs, &v->stage, st) != 0)
        return -1;
    return 0;
}

/* An all-reduce row (Q_BUSBW): cards, bytes, topology and optionally
 * collective; no model, no layout. */
static int read_coll_row(const struct oc_csv_table *t, int64_t r, struct vrow *v,
                         struct oc_val_row *out, struct oc_status *st)
{
    char w[1100], buf[4200], m[OC_MSG_MAX];
    where(t, r, w, sizeof w);
    static const char *const need[] = {"cards", "bytes"};
    int64_t iv[2];
    for (int i = 0; i < 2; i++) {
        const int c = col_of(t, need[i]);
        if (c < 0)
            return oc_fail(st, "%s: no column '%s' (an allreduce_busbw row needs it)", w,
                           need[i]);
        if (oc_csv_table_i64(t, r, c, &iv[i], st) != 0)
            return -1;
        if (iv[i] < (i == 0 ? 2 : 1))
            return oc_fail(st, "%s: column '%s': %lld is not %s", w, need[i],
                           (long long)iv[i], i == 0 ? "a group of 2 GPUs or more"
                                                    : "a positive size");
    }
    oc_opts_default(&v->o);
    v->o.cards = iv[0];
    v->bytes = (double)iv[1];
    const char *alg = cell(t, r, "collective");
    if (oc_sim_algo_from_name(*alg ? alg : "auto", &v->algo, st) != 0) {
        snprintf(m, sizeof m, "%s", st->msg);
        return oc_fail(st, "%s: column 'collective': %s", w, m);
    }
    if (oc_topology_load(resolve(t->path, cell(t, r, "topology"), buf, sizeof buf), &v->o.topo,
                         st) != 0) {
        snprintf(m, sizeof m, "%s", st->msg);
        return oc_fail(st, "%s: column 'topology': %s", w, m);
    }
    snprintf(out->layout, sizeof out->layout, "all-reduce of %lld bytes over %lld GPUs",
             (long long)iv[1], (long long)iv[0]);
    snprintf(out->model, sizeof out->model, "-");
    snprintf(out->topology, sizeof out->topology, "%.60s", v->o.topo.name);
    out->cards = iv[0];
    return 0;
}

/* Reads and checks row r of t into v and the row's report fields. */
static int read_row(const struct oc_csv_table *t, int64_t r, const struct vargs *a,
                    struct vrow *v, struct oc_val_row *out, struct oc_status *st)
{
    char w[1100], buf[4200];
    where(t, r, w, sizeof w);
    memset(out, 0, sizeof *out);
    out->table = t->path;
    out->line = oc_csv_table_line(t, r);
    const char *label = cell(t, r, "name");
    snprintf(out->label, sizeof out->label, "%.*s", (int)oc_utf8_fit(label, 120), label);
    if (!*label)
        snprintf(out->label, sizeof out->label, "line %lld", (long long)out->line);
    const char *src = cell(t, r, "source");
    if (!*src)
        return oc_fail(st, "%s: column 'source' is empty (every row names where its "
                           "number comes from)", w);
    snprintf(out->source, sizeof out->source, "%.*s", (int)oc_utf8_fit(src, 500), src);
    if (row_measure(t, r, v, &out->measured, st) != 0)
        return -1;
    snprintf(out->quantity, sizeof out->quantity, "%s", oc_val_q_names[v->q]);
    snprintf(out->unit, sizeof out->unit, "%.20s", cell(t, r, "unit"));
    const char *topo = cell(t, r, "topology");
    if (!*topo)
        return oc_fail(st, "%s: column 'topology' is empty (the cluster the run was "
                           "measured on)", w);
    if (v->q == Q_BUSBW)
        return read_coll_row(t, r, v, out, st);
    char *argv[2 * NCOLS + 4];
    int argc = 0;
    if (layout_argv(t, r, a, argv, &argc, st) != 0)
        return -1;
    oc_opts_default(&v->o);
    struct oc_opts *o = &v->o;
    char m[OC_MSG_MAX];
    if (oc_opts_parse(o, argc, argv, OC_OPT_LAYOUT | OC_OPT_SIM | OC_OPT_RESERVE, st) != 0) {
        snprintf(m, sizeof m, "%s", st->msg);
        /* Name the column of the first flag the parser's message names. */
        const char *col = NULL, *at = NULL;
        for (size_t i = 0; i < NCOLS; i++) {
            char f[64];
            snprintf(f, sizeof f, "--%s", cols[i].flag ? cols[i].flag : "");
            const char *p = cols[i].flag ? strstr(m, f) : NULL;
            const char e = p ? p[strlen(f)] : 0;
            if (p && (e == ' ' || e == ':' || e == 0) && (!at || p < at))
                at = p, col = cols[i].col;
        }
        if (col)
            return oc_fail(st, "%s: column '%s': %s", w, col, m);
        return oc_fail(st, "%s: %s (the columns are ocsim simulate's flags)", w, m);
    }
    if (row_model(t, r, &o->model, st) != 0)
        return -1;
    if (oc_topology_load(resolve(t->path, topo, buf, sizeof buf), &o->topo, st) != 0) {
        snprintf(m, sizeof m, "%s", st->msg);
        return oc_fail(st, "%s: column 'topology': %s", w, m);
    }
    if (o->layout.seq_length == 0)
        o->layout.seq_length = o->model.max_position_embeddings;
    o->topo.reserve = o->reserve;
    char name[160];
    oc_layout_format(&o->layout, name, sizeof name);
    if (oc_layout_validate(&o->layout, &o->model, &o->topo, o->cards, st) != 0 ||
        oc_opts_replay(o, &v->ro, st) != 0) {
        snprintf(m, sizeof m, "%s", st->msg);
        return oc_fail(st, "%s: layout %s: %s", w, name, m);
    }
    /* A layer's own time needs the layer-grain schedule: full fidelity. */
    if (v->q == Q_LAYER_FWD || v->q == Q_LAYER_BWD)
        v->ro.fidelity = OC_SIM_FULL;
    if (v->stage < 0 || v->stage >= o->layout.pp)
        return oc_fail(st, "%s: column 'stage': %lld is not a pipeline stage of %s", w,
                       (long long)v->stage, name);
    snprintf(out->layout, sizeof out->layout, "%s", name);
    snprintf(out->model, sizeof out->model, "%s", o->model.name);
    snprintf(out->topology, sizeof out->topology, "%.60s", o->topo.name);
    out->cards = o->cards;
    return 0;
}

/* The columns of t that nothing reads, listed once on stderr. */
void oc_val_note_unread(const struct oc_csv_table *t)
{
    char list[600] = "";
    size_t n = 0;
    for (int c = 0; c < t->ncols; c++) {
        int known = 0;
        for (size_t i = 0; i < NCOLS && !known; i++)
            known = col_of(t, cols[i].col) == c;
        for (size_t i = 0; i < sizeof other_cols / sizeof other_cols[0] && !known; i++)
            known = col_of(t, other_cols[i]) == c;
        if (!known && n < sizeof list - 80)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%.60s", n ? ", " : "",
                                  oc_csv_table_header(t, c));
    }
    if (n)
        fprintf(stderr, "ocsim validate: note: %s: columns not read: %s\n", t->path, list);
}

int oc_val_read_tables(const struct vargs *a, struct oc_csv_table *tabs, struct vrow **vr,
                       struct oc_val_row **rows, int64_t *nrows, struct oc_status *st)
{
    int64_t total = 0;
    for (int i = 0; i < a->ntables; i++) {
        if (oc_csv_read(a->tables[i], &tabs[i], st) != 0)
            return -1;
        if (tabs[i].nrows == 0)
            return oc_fail(st, "%s: no rows", tabs[i].path);
        static const char *const need[] = {"measured", "unit", "source", "topology"};
        for (int k = 0; k < 4; k++)
            if (col_of(&tabs[i], need[k]) < 0)
                return oc_fail(st, "%s: no column '%s'", tabs[i].path, need[k]);
        if (col_of(&tabs[i], "cards") < 0)
            return oc_fail(st, "%s: no column 'cards' (the number of GPUs)", tabs[i].path);
        total += tabs[i].nrows;
    }
    *vr = calloc((size_t)total, sizeof **vr);
    *rows = calloc((size_t)total, sizeof **rows);
    OC_ASSERT(*vr && *rows);
    int64_t k = 0;
    for (int i = 0; i < a->ntables; i++)
        for (int64_t r = 0; r < tabs[i].nrows; r++, k++)
            if (read_row(&tabs[i], r, a, &(*vr)[k], &(*rows)[k], st) != 0)
                return -1;
    *nrows = total;
    return 0;
}
