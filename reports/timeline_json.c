/* timeline_json.c: a timeline as a Chrome trace-event JSON file (see
 * timeline_json.h). Written with fprintf one event per line: no JSON tree is
 * built, so memory stays flat whatever the number of ops. What it is not: a
 * reader; tests parse the output back with jansson.
 *
 * Format: Google's "Trace Event Format" document (JSON Object Format,
 * complete events "X", counter events "C", metadata events "M" with
 * process_name, thread_name, process_sort_index, thread_sort_index).
 */
#include "timeline_json.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "format.h"
#include "outfile.h"

/* ------------------------------------------------------------------ */
/* Names                                                                */

void oc_json_fputs(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f); /* UTF-8 passes through unchanged */
        }
    }
    fputc('"', f);
}

/* "L8-15", "L8", or "" when the op covers no layer. */
static void layers_str(const struct oc_op *op, char *buf, size_t n)
{
    if (op->layer_first < 0 || op->layer_count <= 0)
        buf[0] = '\0';
    else if (op->layer_count == 1)
        snprintf(buf, n, "L%d", (int)op->layer_first);
    else
        snprintf(buf, n, "L%d-%d", (int)op->layer_first,
                 (int)(op->layer_first + op->layer_count - 1));
}

void oc_trace_op_name(const struct oc_op *op, char *buf, size_t n)
{
    char b[32], lay[32];
    int k;
    switch ((enum oc_op_kind)op->kind) {
    case OC_OP_COMPUTE: {
        if (op->phase == OC_PHASE_OPTIMIZER) {
            snprintf(buf, n, "optimizer");
            return;
        }
        const char *ph = op->phase == OC_PHASE_FWD   ? "F"
                         : op->phase == OC_PHASE_BWD ? "B"
                                                     : "R";
        k = op->mb >= 0 ? snprintf(buf, n, "%s mb%d c%d", ph, (int)op->mb, (int)op->chunk)
                        : snprintf(buf, n, "%s c%d", ph, (int)op->chunk);
        if (k < 0 || (size_t)k >= n)
            return;
        layers_str(op, lay, sizeof lay);
        switch ((enum oc_part)op->part) {
        case OC_PART_CHUNK:
            if (lay[0])
                snprintf(buf + k, n - (size_t)k, " %s", lay);
            break;
        case OC_PART_ATTN:
        case OC_PART_MLP:
            snprintf(buf + k, n - (size_t)k, " %s%s%s", oc_part_name(op->part),
                     lay[0] ? " " : "", lay);
            break;
        default:
            snprintf(buf + k, n - (size_t)k, " %s", oc_part_name(op->part));
        }
        return;
    }
    case OC_OP_COLLECTIVE:
        oc_fmt_si(b, sizeof b, op->bytes, "B");
        if (op->count > 1)
            snprintf(buf, n, "%s %s %s x%d", oc_coll_name(op->coll),
                     oc_group_name(op->group), b, (int)op->count);
        else
            snprintf(buf, n, "%s %s %s", oc_coll_name(op->coll),
                     oc_group_name(op->group), b);
        return;
    case OC_OP_SEND:
    case OC_OP_RECV: {
        int send = op->kind == OC_OP_SEND;
        snprintf(buf, n, "%s %s mb%d %s %lld", send ? "send" : "recv",
                 op->p2p == OC_P2P_ACT ? "act" : op->p2p == OC_P2P_KV ? "kv" : "grad",
                 (int)op->mb,
                 send ? "->" : "<-", (long long)op->peer);
        return;
    }
    case OC_OP_WAIT:
        snprintf(buf, n, "wait");
        return;
    case OC_OP_ALLOC:
    case OC_OP_FREE:
        oc_fmt_si(b, sizeof b, op->bytes, "B");
        snprintf(buf, n, "%s %s %s", oc_op_kind_name(op->kind),
                 oc_buf_name(op->buf), b);
        return;
    }
    snprintf(buf, n, "op%d", (int)op->kind);
}

const char *oc_trace_op_category(const struct oc_op *op)
{
    switch ((enum oc_op_kind)op->kind) {
    case OC_OP_COMPUTE: return "compute";
    case OC_OP_SEND:
    case OC_OP_RECV: return "pp";
    case OC_OP_COLLECTIVE: return op->group == OC_GROUP_TP ? "tp" : "dp";
    case OC_OP_WAIT: return "wait";
    case OC_OP_ALLOC:
    case OC_OP_FREE: return NULL;
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Writer                                                               */

struct writer {
    FILE *f;
    int first; /* no event written yet: no comma before the next */
    struct oc_trace_stats *s;
};

static void begin_event(struct writer *w)
{
    fputs(w->first ? "\n" : ",\n", w->f);
    w->first = 0;
}

/* A number for JSON: %.9g is enough for what ocsim computes; JSON has no
 * NaN or infinity, so those become null. */
static void num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fputs("null", f);
}

static void meta(struct writer *w, const char *what, int64_t pid, int64_t tid,
                 const char *name, int64_t sort_index)
{
    begin_event(w);
    fprintf(w->f, "{\"ph\":\"M\",\"pid\":%lld,\"tid\":%lld,\"name\":\"%s\",\"args\":{",
            (long long)pid, (long long)tid, what);
    if (name) {
        fputs("\"name\":", w->f);
        oc_json_fputs(w->f, name);
    } else {
        fprintf(w->f, "\"sort_index\":%lld", (long long)sort_index);
    }
    fputs("}}", w->f);
    w->s->metadata_events++;
}

/* Seconds to microseconds rounded to the nanosecond, so that ts + dur of one
 * event and ts of the next agree to the printed digit. */
static double to_us(double s) { return round(s * 1e9) / 1e3; }

static void op_args(FILE *f, const struct oc_op *op, int64_t i)
{
    char lay[32];
    fprintf(f, "\"op\":%lld", (long long)i);
    if (op->mb >= 0)
        fprintf(f, ",\"mb\":%d", (int)op->mb);
    if (op->kind == OC_OP_COMPUTE) {
        fprintf(f, ",\"phase\":\"%s\",\"part\":\"%s\",\"chunk\":%d",
                oc_phase_name(op->phase), oc_part_name(op->part), (int)op->chunk);
        layers_str(op, lay, sizeof lay);
        if (lay[0])
            fprintf(f, ",\"layers\":\"%s\"", lay + 1); /* without the 'L' */
        fputs(",\"flops\":", f);
        num(f, op->flops);
        fputs(",\"hbm_bytes\":", f);
        num(f, op->hbm_bytes);
        return;
    }
    if (op->kind == OC_OP_WAIT)
        return;
    fprintf(f, ",\"chunk\":%d,\"bytes\":", (int)op->chunk);
    num(f, op->bytes);
    if (op->kind == OC_OP_COLLECTIVE)
        fprintf(f, ",\"count\":%d,\"group\":\"%s\",\"async\":%d", (int)op->count,
                oc_group_name(op->group), (int)op->async);
    else
        fprintf(f, ",\"peer\":%lld", (long long)op->peer);
}

static void complete(struct writer *w, int64_t pid, int64_t tid, double ts_us,
                     double dur_us, const struct oc_op *op, int64_t i)
{
    char name[128];
    oc_trace_op_name(op, name, sizeof name);
    begin_event(w);
    fprintf(w->f, "{\"ph\":\"X\",\"pid\":%lld,\"tid\":%lld,\"ts\":%.3f,\"dur\":%.3f,\"name\":",
            (long long)pid, (long long)tid, ts_us, dur_us);
    oc_json_fputs(w->f, name);
    fprintf(w->f, ",\"cat\":\"%s\",\"args\":{", oc_trace_op_category(op));
    op_args(w->f, op, i);
    fputs("}}", w->f);
    w->s->complete_events++;
}

static int64_t pid_of(const struct oc_layout *l, const struct oc_trace_opts *o,
                      int64_t rank)
{
    if (o->group == OC_TRACE_BY_NODE)
        return rank / o->gpus_per_node + 1;
    return oc_layout_coord(l, rank).pp + 1;
}

/* Comm threads of one rank: lane k is free again once its last transfer
 * ended (greedy interval partitioning, so lanes = most transfers at once). */
struct lanes {
    double *end_us;
    int64_t n, cap;
};

static int64_t lane_take(struct lanes *ln, double ts_us, double end_us, int *is_new)
{
    *is_new = 0;
    for (int64_t k = 0; k < ln->n; k++)
        if (ln->end_us[k] <= ts_us) {
            ln->end_us[k] = end_us;
            return k;
        }
    if (ln->n == ln->cap) {
        ln->cap = ln->cap ? 2 * ln->cap : 4;
        ln->end_us = oc_xrealloc(ln->end_us, (size_t)ln->cap * sizeof *ln->end_us);
    }
    ln->end_us[ln->n] = end_us;
    *is_new = 1;
    return ln->n++;
}

static void write_rank(struct writer *w, const struct oc_timeline *tl,
                       const struct oc_layout *l, const struct oc_trace_opts *o,
                       int64_t r, struct lanes *ln)
{
    const struct oc_rank_ops *ro = &tl->sched->ranks[r];
    const double *st = tl->start_s[r], *en = tl->end_s[r];
    int64_t pid = pid_of(l, o, r), tid = r + 1;
    struct oc_coord c = oc_layout_coord(l, r);
    char name[96];
    snprintf(name, sizeof name, "rank %lld (tp%lld pp%lld dp%lld)", (long long)r,
             (long long)c.tp, (long long)c.pp, (long long)c.dp);
    meta(w, "thread_name", pid, tid, name, 0);
    meta(w, "thread_sort_index", pid, tid, NULL, r * 1000);

    char mem_name[48];
    snprintf(mem_name, sizeof mem_name, "memory rank %lld", (long long)r);
    double mem_bytes = 0, prev_end_us = -INFINITY;
    ln->n = 0;
    for (int64_t i = 0; i < ro->n; i++) {
        const struct oc_op *op = &ro->ops[i];
        int finite = isfinite(st[i]) && isfinite(en[i]);
        if (!finite)
            w->s->dropped_events++;
        if (op->kind == OC_OP_ALLOC || op->kind == OC_OP_FREE) {
            /* The running sum counts every event, timed or not. */
            mem_bytes += op->kind == OC_OP_ALLOC ? op->bytes : -op->bytes;
            if (!o->memory || !finite)
                continue;
            double ts = to_us(st[i]);
            begin_event(w);
            fprintf(w->f, "{\"ph\":\"C\",\"pid\":%lld,\"tid\":%lld,\"ts\":%.3f,\"name\":",
                    (long long)pid, (long long)tid, ts);
            oc_json_fputs(w->f, mem_name);
            fputs(",\"args\":{\"bytes\":", w->f);
            num(w->f, mem_bytes);
            fputs("}}", w->f);
            w->s->counter_events++;
            continue;
        }
        if (!finite)
            continue;
        double ts = to_us(st[i]), te = to_us(en[i]);
        if (te <= ts)
            continue;
        int side = op->kind == OC_OP_SEND ||
                   (op->kind == OC_OP_COLLECTIVE && op->async);
        if (side) {
            int is_new;
            int64_t k = lane_take(ln, ts, te, &is_new);
            int64_t ltid = (k + 1) * tl->nranks + r + 1;
            if (is_new) {
                if (k == 0)
                    snprintf(name, sizeof name, "rank %lld comm", (long long)r);
                else
                    snprintf(name, sizeof name, "rank %lld comm %lld", (long long)r,
                             (long long)k + 1);
                meta(w, "thread_name", pid, ltid, name, 0);
                meta(w, "thread_sort_index", pid, ltid, NULL, r * 1000 + k + 1);
                w->s->comm_threads++;
            }
            complete(w, pid, ltid, ts, te - ts, op, i);
            continue;
        }
        if (ts < prev_end_us) {
            ts = prev_end_us;
            w->s->clamped_events++;
            if (te <= ts)
                continue;
        }
        complete(w, pid, tid, ts, te - ts, op, i);
        prev_end_us = te;
    }
}

static void write_other(struct writer *w, const struct oc_timeline *tl,
                        const struct oc_layout *l, const struct oc_trace_opts *o,
                        double step_s)
{
    FILE *f = w->f;
    char lay[128];
    oc_layout_format(l, lay, sizeof lay);
    fputs("\"otherData\":{\"generator\":\"ocsim\",\"layout\":", f);
    oc_json_fputs(f, lay);
    fprintf(f, ",\"ranks\":%lld,\"micro_batches\":%lld,\"step_time_s\":",
            (long long)tl->nranks, (long long)tl->sched->num_micro_batches);
    num(f, step_s);
    fprintf(f, ",\"time_unit\":\"us\",\"grouping\":\"%s\"",
            o->group == OC_TRACE_BY_NODE ? "node" : "stage");
    if (o->title) {
        fputs(",\"title\":", f);
        oc_json_fputs(f, o->title);
    }
    if (o->source) {
        fputs(",\"source\":", f);
        oc_json_fputs(f, o->source);
    }
    fprintf(f, ",\"clamped_events\":%lld,\"dropped_events\":%lld,\"not_recorded_count\":%lld",
            (long long)w->s->clamped_events, (long long)w->s->dropped_events,
            (long long)w->s->ranks_skipped);
    if (w->s->ranks_skipped > 0) {
        char note[512];
        int k = snprintf(note, sizeof note,
                         "%lld of %lld ranks have no times of their own and are not "
                         "written; each ran the same ops as the rank standing in for "
                         "it (rank->stand-in:",
                         (long long)w->s->ranks_skipped, (long long)tl->nranks);
        int shown = 0;
        for (int64_t r = 0; r < tl->nranks && k > 0 && (size_t)k < sizeof note - 40; r++) {
            if (tl->start_s[r])
                continue;
            if (shown == 8) {
                k += snprintf(note + k, sizeof note - (size_t)k, " ...");
                break;
            }
            k += snprintf(note + k, sizeof note - (size_t)k, "%s %lld->%lld",
                          shown ? "," : "", (long long)r, (long long)tl->proxy[r]);
            shown++;
        }
        if (k > 0 && (size_t)k < sizeof note - 2)
            snprintf(note + k, sizeof note - (size_t)k, ")");
        fputs(",\"not_recorded\":", f);
        oc_json_fputs(f, note);
    }
    fputs("}", f);
}

int oc_timeline_json_fwrite(FILE *f, const struct oc_timeline *tl,
                            const struct oc_layout *l,
                            const struct oc_trace_opts *opts,
                            struct oc_trace_stats *stats, struct oc_status *st)
{
    OC_ASSERT(f && tl && tl->sched);
    if (!l)
        l = &tl->sched->layout;
    OC_ASSERT(oc_layout_world(l) == tl->nranks && tl->sched->nranks == tl->nranks);
    struct oc_trace_opts o = opts ? *opts : OC_TRACE_OPTS_DEFAULT;
    if (o.group == OC_TRACE_BY_NODE && o.gpus_per_node < 1)
        return oc_fail(st, "trace grouped by node needs gpus_per_node >= 1 (got %lld)",
                       (long long)o.gpus_per_node);
    struct oc_trace_stats s;
    memset(&s, 0, sizeof s);
    struct writer w = {.f = f, .first = 1, .s = &s};

    fputs("{\"traceEvents\":[", f);
    /* Processes that hold at least one recorded rank, named and ordered. */
    int64_t nproc = o.group == OC_TRACE_BY_NODE
                        ? (tl->nranks + o.gpus_per_node - 1) / o.gpus_per_node
                        : l->pp;
    unsigned char *used = oc_xcalloc((size_t)nproc, 1);
    double step_s = 0;
    for (int64_t r = 0; r < tl->nranks; r++) {
        if (!tl->start_s[r]) {
            s.ranks_skipped++;
            continue;
        }
        used[pid_of(l, &o, r) - 1] = 1;
        for (int64_t i = 0; i < tl->sched->ranks[r].n; i++)
            if (isfinite(tl->end_s[r][i]) && tl->end_s[r][i] > step_s)
                step_s = tl->end_s[r][i];
    }
    for (int64_t p = 0; p < nproc; p++) {
        if (!used[p])
            continue;
        char name[48];
        snprintf(name, sizeof name, "%s %lld",
                 o.group == OC_TRACE_BY_NODE ? "node" : "stage", (long long)p);
        meta(&w, "process_name", p + 1, 0, name, 0);
        meta(&w, "process_sort_index", p + 1, 0, NULL, p);
    }
    free(used);

    struct lanes ln = {0};
    for (int64_t r = 0; r < tl->nranks; r++) {
        if (!tl->start_s[r])
            continue;
        write_rank(&w, tl, l, &o, r, &ln);
        s.ranks_written++;
    }
    free(ln.end_us);
    fputs("\n],\n\"displayTimeUnit\":\"ms\",\n", f);
    write_other(&w, tl, l, &o, step_s);
    fputs("}\n", f);
    if (stats)
        *stats = s;
    if (ferror(f))
        return oc_fail(st, "writing the trace failed");
    return 0;
}

int oc_timeline_json_write(const char *path, const struct oc_timeline *tl,
                           const struct oc_layout *l,
                           const struct oc_trace_opts *opts,
                           struct oc_trace_stats *stats, struct oc_status *st)
{
    struct oc_outfile of;
    if (oc_outfile_open(&of, path, st) != 0)
        return -1;
    /* Full buffering in large blocks: one fprintf per event stays cheap. */
    setvbuf(of.f, NULL, _IOFBF, 1 << 16);
    int rc = oc_timeline_json_fwrite(of.f, tl, l, opts, stats, st);
    if (rc != 0 && ferror(of.f)) /* a write failed: the commit names the reason */
        return oc_outfile_commit(&of, st);
    if (rc != 0) {
        char msg[OC_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", st ? st->msg : "");
        oc_outfile_abandon(&of);
        return oc_fail(st, "%s: %s", path, msg);
    }
    return oc_outfile_commit(&of, st);
}
