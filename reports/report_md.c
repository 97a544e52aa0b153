/* report_md.c: report.md of a sweep and the ranked table for stdout (see
 * report_md.h). The explanation of the chosen layout is derived from the
 * metrics differences only; it states facts (times, fractions, placements)
 * and the closed-form bubble as a cross-check, never a cause it cannot see.
 */
#define _POSIX_C_SOURCE 200809L
#include "report_md.h"

#include "compress.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "closed_form.h"
#include "format.h"
#include "layout.h"
#include "outfile.h"
#include "paths.h" /* oc_mkdir_p */
#include "placement.h"
#include "report_confidence.h"
#include "schedule.h"

/* ------------------------------------------------------------------ */
/* Small helpers                                                        */

struct sb {
    char *buf;
    size_t n, len;
};

static void sb_add(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sb *b, const char *fmt, ...)
{
    if (b->n == 0 || b->len >= b->n - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->buf + b->len, b->n - b->len, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    b->len += (size_t)k;
    if (b->len >= b->n)
        b->len = b->n - 1;
}

static const char *si(char *buf, size_t n, double v, const char *unit)
{
    return oc_fmt_si(buf, n, v, unit);
}

static const char *pct(char *buf, size_t n, double frac)
{
    snprintf(buf, n, "%.1f%%", 100.0 * frac);
    return buf;
}

struct row_cells {
    char rank[24], layout[96], tps[32], step[32], mfu[16], bubble[16], exposed[32],
        mem[32], fits[8];
};

static void cells(const struct oc_metrics *m, int64_t rank, struct row_cells *c)
{
    snprintf(c->rank, sizeof c->rank, "%lld", (long long)rank);
    oc_layout_format(&m->layout, c->layout, sizeof c->layout);
    si(c->tps, sizeof c->tps, m->tokens_per_s, "tok/s");
    si(c->step, sizeof c->step, m->step_time_s, "s");
    pct(c->mfu, sizeof c->mfu, m->mfu);
    pct(c->bubble, sizeof c->bubble, m->bubble_fraction);
    si(c->exposed, sizeof c->exposed, m->exposed_comm_s, "s");
    si(c->mem, sizeof c->mem, m->peak_mem_bytes, "B");
    snprintf(c->fits, sizeof c->fits, "%s", m->fits ? "yes" : "no");
}

static int64_t *ranked(const struct oc_metrics *mt, int64_t n, int64_t *nfit)
{
    int64_t *order = oc_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *order);
    *nfit = oc_report_rank(mt, n, order);
    return order;
}

/* ------------------------------------------------------------------ */
/* Table on a stream                                                    */

void oc_report_print_table(FILE *f, const struct oc_metrics *mt, int64_t n, int64_t top)
{
    int64_t nfit;
    int64_t *order = ranked(mt, n, &nfit);
    int64_t k = top < 1 || top > n ? n : top;
    int w = 6; /* "layout" */
    for (int64_t i = 0; i < k; i++) {
        char lay[96];
        oc_layout_format(&mt[order[i]].layout, lay, sizeof lay);
        if ((int)strlen(lay) > w)
            w = (int)strlen(lay);
    }
    fprintf(f, "%4s  %-*s  %12s  %9s  %6s  %6s  %9s  %9s  %4s\n", "#", w, "layout",
            "tokens/s", "step", "MFU", "bubble", "exp.comm", "peak mem", "fits");
    for (int64_t i = 0; i < k; i++) {
        struct row_cells c;
        cells(&mt[order[i]], i + 1, &c);
        fprintf(f, "%4s  %-*s  %12s  %9s  %6s  %6s  %9s  %9s  %4s\n", c.rank, w, c.layout,
                c.tps, c.step, c.mfu, c.bubble, c.exposed, c.mem, c.fits);
    }
    if (k < n)
        fprintf(f, "      ... %lld more layouts (%lld of %lld fit in memory)\n",
                (long long)(n - k), (long long)nfit, (long long)n);
    free(order);
}

/* ------------------------------------------------------------------ */
/* Explanation                                                          */

enum comp { COMP_COMPUTE, COMP_BUBBLE, COMP_EXPOSED, COMP_OTHER, NCOMP };
static const char *const comp_name[NCOMP] = {"compute", "pipeline bubble",
                                             "exposed communication", "other time"};

/* Per GPU seconds of a step split as in core/metrics.h: compute and exposed
 * communication are means over ranks, the bubble is bubble_fraction x step,
 * other is what is left (uneven stages, overlapped work). */
static void components(const struct oc_metrics *m, double c[NCOMP])
{
    c[COMP_COMPUTE] = m->compute_s;
    c[COMP_BUBBLE] = m->bubble_fraction * m->step_time_s;
    c[COMP_EXPOSED] = m->exposed_comm_s;
    c[COMP_OTHER] = m->step_time_s - c[COMP_COMPUTE] - c[COMP_BUBBLE] - c[COMP_EXPOSED];
}

/* Nodes spanned by the `g` group of rank 0 (GPU r on node r / gpus_per_node). */
static int64_t group_nodes(const struct oc_layout *l, enum oc_group g, int64_t gpn)
{
    int64_t world = oc_layout_world(l);
    if (gpn < 1 || world < 1)
        return 1;
    int64_t *mem = oc_xmalloc((size_t)world * sizeof *mem);
    int64_t k = oc_schedule_group(l, 0, g, mem, world);
    if (k > world)
        k = world;
    int64_t nn = (world + gpn - 1) / gpn, count = 0;
    unsigned char *seen = oc_xcalloc((size_t)nn, 1);
    for (int64_t i = 0; i < k; i++) {
        int64_t node = mem[i] / gpn;
        if (node >= 0 && node < nn && !seen[node]) {
            seen[node] = 1;
            count++;
        }
    }
    free(seen);
    free(mem);
    return count > 0 ? count : 1;
}

/* Stage boundaries (s, s+1) of the pipeline of TP 0, DP 0 that cross nodes. */
static int64_t pp_crossings(const struct oc_layout *l, int64_t gpn)
{
    int64_t n = 0;
    for (int64_t s = 0; s + 1 < l->pp; s++) {
        int64_t a = oc_layout_rank(l, (struct oc_coord){0, s, 0, 0});
        int64_t b = oc_layout_rank(l, (struct oc_coord){0, s + 1, 0, 0});
        n += a / gpn != b / gpn;
    }
    return n;
}

static void network_name(const struct oc_topology *t, char *buf, size_t n)
{
    char bw[32];
    si(bw, sizeof bw, t->nic_bandwidth_Bps * 8, "b/s");
    snprintf(buf, n, "the %s network (%lld NIC%s per node)", bw, (long long)t->nics_per_node,
             t->nics_per_node > 1 ? "s" : "");
}

static void fabric_name(const struct oc_topology *t, char *buf, size_t n)
{
    char bw[32];
    snprintf(buf, n, "%s (%s per GPU)", t->intra_name[0] ? t->intra_name : "the node fabric",
             si(bw, sizeof bw, t->intra_bandwidth_Bps, "B/s"));
}

/* "its DP groups (dp8) span 2 nodes over ..." / "... stay in one node on ..." */
static void placement(struct sb *b, const char *whose, const struct oc_layout *l,
                      enum oc_group g, const struct oc_topology *t)
{
    char net[128], fab[128];
    network_name(t, net, sizeof net);
    fabric_name(t, fab, sizeof fab);
    const char *gname = g == OC_GROUP_TP ? "TP" : "DP";
    int64_t size = g == OC_GROUP_TP ? l->tp : l->dp;
    if (size <= 1) {
        sb_add(b, "%s has no %s group (%s1)", whose, gname, g == OC_GROUP_TP ? "tp" : "dp");
        return;
    }
    int64_t nodes = group_nodes(l, g, t->gpus_per_node);
    if (nodes > 1)
        sb_add(b, "%s %s groups (%s%lld) span %lld nodes and cross %s", whose, gname,
               g == OC_GROUP_TP ? "tp" : "dp", (long long)size, (long long)nodes, net);
    else
        sb_add(b, "%s %s groups (%s%lld) stay inside one node on %s", whose, gname,
               g == OC_GROUP_TP ? "tp" : "dp", (long long)size, fab);
}

static void knob_diff(struct sb *b, const struct oc_layout *x, const struct oc_layout *y)
{
    int k = 0;
#define KNOB(cond, ...)                                                        \
    do {                                                                       \
        if (cond) {                                                            \
            sb_add(b, "%s", k++ ? ", " : " Knobs that differ: ");              \
            sb_add(b, __VA_ARGS__);                                            \
        }                                                                      \
    } while (0)
    KNOB(x->tp != y->tp, "tp %lld vs %lld", (long long)x->tp, (long long)y->tp);
    KNOB(x->pp != y->pp, "pp %lld vs %lld", (long long)x->pp, (long long)y->pp);
    KNOB(x->dp != y->dp, "dp %lld vs %lld", (long long)x->dp, (long long)y->dp);
    KNOB(x->micro_batch != y->micro_batch, "micro-batch %lld vs %lld sequences",
         (long long)x->micro_batch, (long long)y->micro_batch);
    const int64_t vx = oc_place_interleaved_chunks(x), vy = oc_place_interleaved_chunks(y);
    KNOB(x->schedule != y->schedule || vx != vy, "schedule %s%s vs %s%s",
         oc_schedule_name(x->schedule), vx > 1 ? " (v>1)" : "",
         oc_schedule_name(y->schedule), vy > 1 ? " (v>1)" : "");
    KNOB(x->recompute != y->recompute, "recompute %s vs %s", oc_recompute_name(x->recompute),
         oc_recompute_name(y->recompute));
    KNOB(x->sequence_parallel != y->sequence_parallel, "sequence parallel %s vs %s",
         x->sequence_parallel ? "on" : "off", y->sequence_parallel ? "on" : "off");
    KNOB(x->overlap_grad_reduce != y->overlap_grad_reduce, "overlapped DP reduction %s vs %s",
         x->overlap_grad_reduce ? "on" : "off", y->overlap_grad_reduce ? "on" : "off");
    /* uneven stages (placement.h): the first and last stage's layers, 0 even */
    KNOB(x->first_stage_layers != y->first_stage_layers ||
             x->last_stage_layers != y->last_stage_layers,
         "first/last stage layers %lld/%lld vs %lld/%lld (0: as the middle stages)",
         (long long)x->first_stage_layers, (long long)x->last_stage_layers,
         (long long)y->first_stage_layers, (long long)y->last_stage_layers);
    KNOB(x->global_batch != y->global_batch, "global batch %lld vs %lld sequences",
         (long long)x->global_batch, (long long)y->global_batch);
    /* the DP exchange (core/compress.h); its convergence is not modelled */
    char gx[48], gy[48];
    oc_gc_label(x, gx, sizeof gx);
    oc_gc_label(y, gy, sizeof gy);
    KNOB(x->gc != y->gc || x->gc_density != y->gc_density || x->gc_rank != y->gc_rank,
         "gradient compression %s vs %s (convergence not modelled)", gx + 3, gy + 3);
    KNOB(x->sync_every != y->sync_every,
         "synchronisation every %lld vs %lld steps (local SGD; convergence not modelled)",
         (long long)(x->sync_every > 1 ? x->sync_every : 1),
         (long long)(y->sync_every > 1 ? y->sync_every : 1));
#undef KNOB
    if (k)
        sb_add(b, ".");
}

/* Facts behind a component that differs. */
static void detail(struct sb *b, enum comp c, const struct oc_metrics *x,
                   const struct oc_metrics *y, const struct oc_topology *t)
{
    char s1[32], s2[32];
    const struct oc_layout *lx = &x->layout, *ly = &y->layout;
    switch (c) {
    case COMP_BUBBLE: {
        /* Narayanan et al. 2021, section 2.2: (p-1)/(v*m + p-1). */
        double fx = oc_cf_bubble_fraction(lx->pp, x->num_micro_batches,
                                          oc_place_interleaved_chunks(lx));
        double fy = oc_cf_bubble_fraction(ly->pp, y->num_micro_batches,
                                          oc_place_interleaved_chunks(ly));
        char a[16], bb[16], cx[16], cy[16];
        sb_add(b,
               " With pp%lld and %lld micro-batches per step its pipeline idles %s of the "
               "step, against %s for pp%lld with %lld; the closed form (p-1)/(v*m+p-1) "
               "gives %s and %s.",
               (long long)lx->pp, (long long)x->num_micro_batches,
               pct(a, sizeof a, x->bubble_fraction), pct(bb, sizeof bb, y->bubble_fraction),
               (long long)ly->pp, (long long)y->num_micro_batches, pct(cx, sizeof cx, fx),
               pct(cy, sizeof cy, fy));
        return;
    }
    case COMP_EXPOSED: {
        double d[3] = {y->tp_comm_s - x->tp_comm_s, y->pp_comm_s - x->pp_comm_s,
                       y->dp_comm_s - x->dp_comm_s};
        int k = 0;
        for (int i = 1; i < 3; i++)
            if (fabs(d[i]) > fabs(d[k]))
                k = i;
        static const char *const what[3] = {"TP collectives", "pipeline transfers",
                                            "DP gradient reduction"};
        const double vx[3] = {x->tp_comm_s, x->pp_comm_s, x->dp_comm_s};
        const double vy[3] = {y->tp_comm_s, y->pp_comm_s, y->dp_comm_s};
        sb_add(b, " The largest communication difference is in the %s: %s vs %s per GPU per "
                  "step (totals, overlapped or not).",
               what[k], si(s1, sizeof s1, vx[k], "s"), si(s2, sizeof s2, vy[k], "s"));
        if (!t)
            return;
        if (k == 1) {
            char net[128];
            network_name(t, net, sizeof net);
            int64_t cx = pp_crossings(lx, t->gpus_per_node);
            int64_t cy = pp_crossings(ly, t->gpus_per_node);
            sb_add(b, " %lld of its %lld stage boundaries cross %s, against %lld of %lld.",
                   (long long)cx, (long long)(lx->pp - 1), net, (long long)cy,
                   (long long)(ly->pp - 1));
            return;
        }
        enum oc_group g = k == 0 ? OC_GROUP_TP : OC_GROUP_DP;
        sb_add(b, " ");
        placement(b, "Its", lx, g, t);
        sb_add(b, "; ");
        placement(b, "the runner-up's", ly, g, t);
        sb_add(b, ".");
        return;
    }
    case COMP_COMPUTE: {
        sb_add(b, " The work per GPU is the same model split differently, so the compute "
                  "time differs through GEMM shapes and recomputation");
        if (lx->recompute != ly->recompute)
            sb_add(b, " (recompute %s vs %s)", oc_recompute_name(lx->recompute),
                   oc_recompute_name(ly->recompute));
        else if (lx->tp != ly->tp || lx->micro_batch != ly->micro_batch)
            sb_add(b, " (each GEMM split %lld vs %lld ways, on micro-batches of %lld vs %lld "
                      "sequences)",
                   (long long)lx->tp, (long long)ly->tp, (long long)lx->micro_batch,
                   (long long)ly->micro_batch);
        sb_add(b, ".");
        return;
    }
    case COMP_OTHER:
        sb_add(b, " This is step time not covered by the mean compute, bubble and exposed "
                  "communication of a GPU: mostly uneven stages (the first and last stage "
                  "also run the embedding and the LM head) that make the other stages wait.");
        return;
    case NCOMP: break;
    }
}

void oc_report_explain(char *buf, size_t n, const struct oc_metrics *x,
                       const struct oc_metrics *y, const struct oc_topology *t)
{
    struct sb b = {buf, n, 0};
    if (n)
        buf[0] = '\0';
    char lx[96], ly[96], s1[32], s2[32], s3[32], p1[16], p2[16], p3[16];
    oc_layout_format(&x->layout, lx, sizeof lx);
    double cx[NCOMP], cy[NCOMP];
    components(x, cx);
    if (!y) {
        sb_add(&b, "**%s** is the only simulated layout that fits in memory: %s, step %s, "
                   "MFU %s. Of its step, compute takes %s, the pipeline bubble %s and "
                   "exposed communication %s.",
               lx, si(s1, sizeof s1, x->tokens_per_s, "tok/s"),
               si(s2, sizeof s2, x->step_time_s, "s"), pct(p1, sizeof p1, x->mfu),
               pct(p2, sizeof p2, x->step_time_s > 0 ? cx[COMP_COMPUTE] / x->step_time_s : 0),
               pct(p3, sizeof p3, x->bubble_fraction),
               pct(s3, sizeof s3, x->step_time_s > 0 ? cx[COMP_EXPOSED] / x->step_time_s : 0));
        return;
    }
    oc_layout_format(&y->layout, ly, sizeof ly);
    components(y, cy);
    double gain = y->tokens_per_s > 0 ? x->tokens_per_s / y->tokens_per_s - 1 : 0;
    double dstep = y->step_time_s - x->step_time_s;
    sb_add(&b, "**%s** delivers %s, %.1f%% more than the runner-up **%s** (%s): its step "
               "takes %s against %s",
           lx, si(s1, sizeof s1, x->tokens_per_s, "tok/s"), 100.0 * gain, ly,
           si(s2, sizeof s2, y->tokens_per_s, "tok/s"),
           si(s3, sizeof s3, x->step_time_s, "s"), si(p1, sizeof p1, y->step_time_s, "s"));
    /* Which component saves the most time (the differences add up to the
     * step-time difference, by the definition of "other"). */
    double d[NCOMP];
    int k = 0;
    for (int i = 0; i < NCOMP; i++) {
        d[i] = cy[i] - cx[i];
        if (d[i] > d[k])
            k = i;
    }
    if (dstep > 0 && d[k] > 0) {
        sb_add(&b, ", %s shorter. Most of the difference is %s: %s vs %s per GPU",
               si(s1, sizeof s1, dstep, "s"), comp_name[k], si(s2, sizeof s2, cx[k], "s"),
               si(s3, sizeof s3, cy[k], "s"));
        /* When other components go the other way, this one saves more than
         * the whole gap; say so rather than print "150% of the gap". */
        if (d[k] <= dstep * 1.005)
            sb_add(&b, " (%.0f%% of the gap).", 100.0 * d[k] / dstep);
        else
            sb_add(&b, " (it saves %s, more than the whole gap).", si(s1, sizeof s1, d[k], "s"));
        detail(&b, (enum comp)k, x, y, t);
        for (int i = 0; i < NCOMP; i++)
            if (d[i] < 0 && -d[i] > 0.05 * dstep)
                sb_add(&b, " It gives back %s in %s (%s vs %s).", si(s1, sizeof s1, -d[i], "s"),
                       comp_name[i], si(s2, sizeof s2, cx[i], "s"),
                       si(s3, sizeof s3, cy[i], "s"));
    } else {
        sb_add(&b, ".");
    }
    knob_diff(&b, &x->layout, &y->layout);
    if (x->device_mem_bytes > 0)
        sb_add(&b, " Peak memory %s per GPU of %s (%.0f%%).",
               si(s1, sizeof s1, x->peak_mem_bytes, "B"),
               si(s2, sizeof s2, x->device_mem_bytes, "B"),
               100.0 * x->peak_mem_bytes / x->device_mem_bytes);
    if (gain < 0.01)
        sb_add(&b, " The two are within 1%%, which is inside the accuracy of the model: "
                   "treat them as equal and prefer the one that is simpler to run or "
                   "leaves more memory headroom.");
}

/* ------------------------------------------------------------------ */
/* report.md                                                            */

static int file_exists(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* The candidates rejected before simulation of each class (OC_REJECT_RULE,
 * OC_REJECT_MEMORY) and the failed simulations (OC_REJECT_FAILED), from
 * ctx's counts or from rej. */
static void rejected_counts(const struct oc_report_ctx *c, const struct oc_rejected_layout *rej,
                            int64_t nrej, int64_t count[3])
{
    count[0] = count[1] = count[2] = 0;
    for (int64_t i = 0; i < nrej; i++)
        count[rej[i].kind <= OC_REJECT_FAILED ? rej[i].kind : 0]++;
    if (c->rejected_counted) {
        count[OC_REJECT_RULE] = c->rejected_rule;
        count[OC_REJECT_MEMORY] = c->rejected_memory;
    }
}

static void md_setup(FILE *f, const struct oc_report_ctx *c, int64_t n, int64_t nfit,
                     int64_t nrej, int64_t failed)
{
    char a[32], b[32], d[32];
    fputs("## Setup\n\n| | |\n|---|---|\n", f);
    if (c->model) {
        const struct oc_model *m = c->model;
        fprintf(f,
                "| Model | %s (%s, %s parameters, %lld layers, hidden %lld, %lld heads, "
                "%lld KV heads, vocabulary %lld) |\n",
                m->name, m->model_type,
                si(a, sizeof a, (double)oc_model_params_total(m), ""),
                (long long)m->num_hidden_layers, (long long)m->hidden_size,
                (long long)m->num_attention_heads, (long long)m->num_key_value_heads,
                (long long)m->vocab_size);
    }
    if (c->topo) {
        const struct oc_topology *t = c->topo;
        char net[128], fab[128];
        network_name(t, net, sizeof net);
        fabric_name(t, fab, sizeof fab);
        fprintf(f,
                "| Cluster | %lld GPUs: %lld node%s of %lld x %s (%s 16-bit peak, %s); "
                "inside a node %s; between nodes %s (topology %s) |\n",
                (long long)c->cards, (long long)oc_topology_nodes(t, c->cards),
                oc_topology_nodes(t, c->cards) > 1 ? "s" : "", (long long)t->gpus_per_node,
                t->device.name, si(a, sizeof a, t->device.peak_flops_16bit, "FLOP/s"),
                si(b, sizeof b, t->device.memory_bytes, "B"), fab, net, t->name);
    } else {
        fprintf(f, "| Cluster | %lld GPUs |\n", (long long)c->cards);
    }
    fprintf(f, "| Batch | %lld sequences of %lld tokens = %s tokens per step |\n",
            (long long)c->global_batch, (long long)c->seq_length,
            si(d, sizeof d, (double)c->global_batch * (double)c->seq_length, ""));
    fprintf(f, "| Method | %s |\n", c->method ? c->method : "simulated");
    if (failed == 0 && c->pending == 0)
        fprintf(f, "| Layouts | %lld candidates: %lld simulated (%lld fit in memory), %lld "
                   "rejected before simulation",
                (long long)(n + nrej + c->pruned), (long long)n, (long long)nfit, (long long)nrej);
    else
        fprintf(f, "| Layouts | %lld candidates: %lld simulated (%lld fit in memory), %lld "
                   "failed in simulation, %lld rejected before simulation",
                (long long)(n + nrej + c->pending + c->pruned), (long long)n, (long long)nfit,
                (long long)failed, (long long)(nrej - failed));
    if (c->pending > 0)
        fprintf(f, ", %lld not simulated (interrupted)", (long long)c->pending);
    if (c->pruned > 0)
        fprintf(f, ", %lld pruned by their closed-form lower bound (more than the "
                   "%d-th best step; sweep.csv lists them with the bound)",
                (long long)c->pruned, c->top_n >= 1 ? c->top_n : 20);
    if (c->wall_s > 0)
        fprintf(f, "; sweep took %s", si(a, sizeof a, c->wall_s, "s"));
    fputs(" |\n", f);
    if (c->search_ranges)
        fprintf(f, "| Knobs searched | %s; %lld no-op variants skipped (knob values that "
                   "cannot change the run) |\n",
                c->search_ranges, (long long)c->noop);
    fputs("\n", f);
}

static void md_table(FILE *f, const struct oc_metrics *mt, int64_t n, const int64_t *order,
                     int64_t nfit, const struct oc_report_ctx *c)
{
    int64_t top = c->top_n >= 1 ? c->top_n : 20;
    int64_t k = n < top ? n : top;
    fprintf(f, "## Ranking\n\nFitting layouts first, by tokens/s; %s.\n\n",
            k < n ? "the best ones" : "all simulated layouts");
    fputs("| # | layout | tokens/s | step | MFU | bubble | exposed comm | peak mem/GPU | fits |\n"
          "|--:|---|--:|--:|--:|--:|--:|--:|:-:|\n",
          f);
    for (int64_t i = 0; i < k; i++) {
        struct row_cells r;
        cells(&mt[order[i]], i + 1, &r);
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.rank, r.layout, r.tps,
                r.step, r.mfu, r.bubble, r.exposed, r.mem, r.fits);
    }
    if (k < n)
        fprintf(f, "\n%lld more layouts (%lld of %lld fit)%s%s%s.\n", (long long)(n - k),
                (long long)nfit, (long long)n, c->csv_name ? ": see [" : "",
                c->csv_name ? c->csv_name : "", c->csv_name ? "]" : "");
    else if (c->csv_name)
        fprintf(f, "\nEvery column of every layout: [%s](%s).\n", c->csv_name, c->csv_name);
    fputs("\nColumns: tokens/s of the whole job; step time; MFU = model FLOPs per step / "
          "(step time x GPUs x peak) (Chowdhery et al. 2022, appendix B); bubble = mean "
          "fraction of the step a GPU waits on its pipeline neighbours; exposed comm = mean "
          "time per GPU blocked in communication that does not overlap compute; peak mem = "
          "the worst rank's peak.\n\n",
          f);
}

static void md_rejected(FILE *f, const struct oc_report_ctx *c,
                        const struct oc_rejected_layout *rej, int64_t nrej)
{
    fputs("## Rejected layouts\n\n", f);
    int64_t count[3];
    rejected_counts(c, rej, nrej, count);
    if (count[0] + count[1] + count[2] == 0) {
        fputs("None: every candidate was simulated.\n\n", f);
        return;
    }
    static const enum oc_reject_kind kinds[] = {OC_REJECT_RULE, OC_REJECT_MEMORY,
                                                OC_REJECT_FAILED};
    static const char *const why[] = {
        "breaks a layout rule (divisibility, TP inside a node, ...)",
        "valid, but its closed-form peak memory exceeds the device",
        "the simulation failed (see the reason)"};
    fputs("| reason | layouts |\n|---|--:|\n", f);
    for (int k = 0; k < 3; k++)
        if (count[k])
            fprintf(f, "| %s: %s | %lld |\n", oc_reject_kind_name(kinds[k]), why[k],
                    (long long)count[k]);
    fputs(c->rejected_counted ? "\nExamples (the first illegal ones of the enumeration, the "
                                "closest misses of memory):\n\n"
                              : "\nExamples:\n\n",
          f);
    for (int k = 0; k < 3; k++) {
        int shown = 0;
        for (int64_t i = 0; i < nrej && shown < 3; i++) {
            if (rej[i].kind != kinds[k])
                continue;
            char lay[96];
            oc_layout_format(&rej[i].layout, lay, sizeof lay);
            fprintf(f, "- `%s`: %s\n", lay, rej[i].reason);
            shown++;
        }
    }
    if (c->rejected_csv)
        fprintf(f, "\nEvery rejected candidate with its reason: [%s](%s).\n", c->rejected_csv,
                c->rejected_csv);
    else if (c->rejected_counted)
        fputs("\nThey are counted, not listed: `--rejected-csv` writes every one with its "
              "reason to rejected.csv.\n",
              f);
    fputc('\n', f);
}

/* A failure's reason class: the message without the "simulation failed: "
 * that sweep.csv puts first, up to its first ": " (what comes after is the
 * quoted detail: SimGrid's line, the actors that never finished), and a
 * deadlock without its time. */
static void failure_class(const char *reason, char *cls, size_t n)
{
    static const char prefix[] = "simulation failed: ";
    if (strncmp(reason, prefix, sizeof prefix - 1) == 0)
        reason += sizeof prefix - 1;
    if (strncmp(reason, "simulation deadlocked", 21) == 0) {
        snprintf(cls, n, "simulation deadlocked");
        return;
    }
    const char *colon = strstr(reason, ": ");
    size_t k = colon ? (size_t)(colon - reason) : strlen(reason);
    snprintf(cls, n, "%.*s", (int)(k < 100 ? k : 100), reason);
}

int64_t oc_report_failures(char *buf, size_t n, const struct oc_rejected_layout *rej,
                           int64_t nrej, int64_t attempted, int markdown)
{
    enum { CLASSES = 4 };
    char cls[CLASSES][128], c[128];
    int64_t count[CLASSES] = {0}, total = 0, other = 0;
    int ncls = 0;
    const struct oc_rejected_layout *first = NULL;
    for (int64_t i = 0; i < nrej; i++) {
        if (rej[i].kind != OC_REJECT_FAILED)
            continue;
        if (!first)
            first = &rej[i];
        total++;
        failure_class(rej[i].reason, c, sizeof c);
        int k = 0;
        while (k < ncls && strcmp(cls[k], c) != 0)
            k++;
        if (k == ncls && ncls < CLASSES)
            snprintf(cls[ncls++], sizeof cls[0], "%s", c);
        if (k < ncls)
            count[k]++;
        else
            other++;
    }
    if (n > 0)
        buf[0] = '\0';
    if (total == 0)
        return 0;
    struct sb b = {buf, n, 0};
    sb_add(&b, "%lld of %lld simulation%s failed (", (long long)total, (long long)attempted,
           attempted == 1 ? "" : "s");
    for (int k = 0; k < ncls; k++)
        sb_add(&b, "%s%lld x %s", k ? "; " : "", (long long)count[k], cls[k]);
    if (other)
        sb_add(&b, "; %lld x other reasons", (long long)other);
    char lay[96];
    oc_layout_format(&first->layout, lay, sizeof lay);
    static const char prefix[] = "simulation failed: ";
    const char *why = first->reason;
    if (strncmp(why, prefix, sizeof prefix - 1) == 0)
        why += sizeof prefix - 1;
    const char *q = markdown ? "`" : "";
    sb_add(&b, "); the first, %s%s%s: %s", q, lay, q, why);
    return total;
}

/* At the top of an interrupted sweep's report, or one where simulations
 * failed: what the tables below do not hold. */
static void md_status(FILE *f, const struct oc_report_ctx *c, int64_t n,
                      const struct oc_rejected_layout *rej, int64_t nrej)
{
    int64_t count[3];
    rejected_counts(c, rej, nrej, count);
    const int64_t failed = count[OC_REJECT_FAILED],
                  before = count[OC_REJECT_RULE] + count[OC_REJECT_MEMORY];
    if (c->interrupted_by)
        fprintf(f, "**Interrupted by %s: %lld of %lld layouts simulated.** The tables and "
                   "plots below hold those (the %lld rejected before simulation are "
                   "counted); the other %lld were not simulated. The same command with "
                   "`--resume` finishes the sweep.\n\n",
                c->interrupted_by, (long long)(n + failed), (long long)(n + failed + c->pending),
                (long long)before, (long long)c->pending);
    char *text = oc_xmalloc(2048);
    if (oc_report_failures(text, 2048, rej, nrej, n + failed, 1) > 0)
        fprintf(f, "**Simulations failed:** %s. The ranking holds the layouts whose "
                   "simulation ended; the failed ones are listed with their reasons under "
                   "Rejected layouts and in the table.\n\n",
                text);
    free(text);
}

static void md_plots(FILE *f, const char *dir, int no_plots, const char *warning)
{
    static const char *const names[] = {"throughput", "breakdown", "memory", "bubble"};
    static const char *const caps[] = {
        "Tokens per second of the layouts that fit, best first",
        "Where each step goes per GPU: compute, bubble, exposed communication, other",
        "Peak memory per GPU against the device",
        "Bubble fraction against micro-batches per step, with the closed form"};
    fputs("## Plots\n\n", f);
    if (no_plots) {
        fputs("Not made (plots were turned off).\n\n", f);
        return;
    }
    if (warning && warning[0])
        fprintf(f, "Not rendered: %s. The gnuplot scripts (`NAME.gp`) and data (`NAME.dat`) "
                   "are in this folder.\n\n",
                warning);
    int any = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char png[64], gp[64];
        snprintf(png, sizeof png, "%s.png", names[i]);
        snprintf(gp, sizeof gp, "%s.gp", names[i]);
        if (file_exists(dir, png)) {
            fprintf(f, "%s ([svg](%s.svg), [script](%s)):\n\n![%s](%s)\n\n", caps[i],
                    names[i], gp, caps[i], png);
            any = 1;
        } else if (file_exists(dir, gp)) {
            fprintf(f, "- %s: `%s` (not rendered)\n", caps[i], gp);
            any = 1;
        }
    }
    if (!any)
        fputs("No plot: no layout was simulated.\n", f);
    fputc('\n', f);
}

static void md_scope(FILE *f)
{
    fputs("## What the simulation models, and what it does not\n\n"
          "Modelled:\n\n"
          "- Every rank's ordered ops from ocsim's schedule core (the same op lists the "
          "executor runs): forward, backward, recompute and optimizer compute, pipeline "
          "sends and receives, TP, DP and embedding collectives, and memory "
          "allocations.\n"
          "- Compute time from each op's FLOPs and bytes: roofline with tile and wave "
          "quantization, capped by the device's sustained GEMM efficiency, or the measured "
          "rates of a calibrated topology.\n"
          "- Communication as SimGrid flows on a platform built from the topology (the "
          "node fabric, the NICs, the switches), collectives as their ring steps, so "
          "concurrent groups share links; pipeline dependencies, so bubbles come out of "
          "the replay rather than a formula.\n"
          "- Peak memory from the allocation events, sized by the closed form "
          "(Korthikanti et al. 2022 for activations, 16 bytes per parameter for mixed "
          "precision Adam).\n\n"
          "Not modelled:\n\n"
          "- Kernel launch, Python and framework overheads, host-side stalls, data "
          "loading, checkpointing.\n"
          "- Communication kernels slowing compute when they overlap (shared SMs and HBM "
          "bandwidth), and the algorithm, protocol and channel count NCCL actually picks.\n"
          "- Memory the allocator and libraries add exactly: it is a reserve from sources "
          "(CUDA context, NCCL buffers, cuBLAS workspaces, fragmentation as a fraction of "
          "the peak; `--reserve`), so a layout within a few GB of the memory line may "
          "still not fit in practice.\n"
          "- Stragglers, clock throttling, network congestion from other jobs, failures.\n\n"
          "These are predictions: differences of a few percent between layouts are within "
          "the model's error. Measure the chosen layout with the executor and compare "
          "before relying on it.\n",
          f);
}

int oc_report_sweep(const char *out_dir, const struct oc_metrics *mt, int64_t n,
                    const struct oc_rejected_layout *rej, int64_t nrej,
                    const struct oc_report_ctx *ctx, struct oc_status *st)
{
    OC_ASSERT(out_dir && ctx && (mt || n == 0) && (rej || nrej == 0));
    if (oc_mkdir_p(out_dir, st) != 0)
        return -1;
    char warning[OC_MSG_MAX] = "";
    int plot_rc = 0;
    if (!ctx->no_plots) {
        struct oc_status pst = {{0}};
        plot_rc = oc_plot_sweep(out_dir, mt, n, rej, nrej, ctx->plot, &pst);
        if (plot_rc < 0)
            return oc_fail(st, "%s", pst.msg);
        if (plot_rc > 0)
            snprintf(warning, sizeof warning, "%s", pst.msg);
    }

    char path[4096];
    snprintf(path, sizeof path, "%s/report.md", out_dir);
    struct oc_outfile of;
    if (oc_outfile_open(&of, path, st) != 0)
        return -1;
    FILE *f = of.f;
    int64_t nfit;
    int64_t *order = ranked(mt, n, &nfit);

    fprintf(f, "# ocsim sweep: %s on %lld x %s\n\n", ctx->model ? ctx->model->name : "model",
            (long long)ctx->cards, ctx->topo ? ctx->topo->device.name : "GPU");
    if (ctx->command_line)
        fprintf(f, "Command:\n\n```\n%s\n```\n\n", ctx->command_line);
    md_status(f, ctx, n, rej, nrej);
    int64_t count[3];
    rejected_counts(ctx, rej, nrej, count);
    md_setup(f, ctx, n, nfit, count[0] + count[1] + count[2], count[OC_REJECT_FAILED]);
    if (n > 0)
        md_table(f, mt, n, order, nfit, ctx);

    fputs("## Chosen layout\n\n", f);
    if (nfit == 0) {
        fprintf(f, "None: %s.\n\n",
                n == 0 ? "no layout could be simulated"
                       : "no simulated layout fits in the device memory");
    } else {
        char *text = oc_xmalloc(4096);
        const struct oc_metrics *best = &mt[order[0]];
        oc_report_explain(text, 4096, best, nfit > 1 ? &mt[order[1]] : NULL, ctx->topo);
        char lay[96];
        oc_layout_format(&best->layout, lay, sizeof lay);
        fprintf(f, "`%s`\n\n%s\n\n", lay, text);
        free(text);
        oc_report_memory_md(f, best, ctx->model, ctx->topo);
    }
    if (ctx->confidence)
        oc_report_confidence_md(f, ctx->confidence);
    md_rejected(f, ctx, rej, nrej);
    md_plots(f, out_dir, ctx->no_plots, warning);
    md_scope(f);
    free(order);
    if (oc_outfile_commit(&of, st) != 0)
        return -1;
    if (plot_rc > 0) {
        oc_fail(st, "%s", warning); /* a warning: report.md is complete */
        return 1;
    }
    return 0;
}
