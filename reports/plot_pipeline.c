/* plot_pipeline.c: the Gantt chart of one simulated (or measured) step,
 * "pipeline" in plots.h: one row per pipeline stage, a box per run of a
 * micro-batch's work, communication as thinner boxes, overlapped transfers
 * in a strip under the row, micro-batch numbers on the boxes wide enough.
 *
 * What it is not: a timeline (core/timeline.h holds the op intervals this
 * draws), nor the gnuplot runner or the file helpers (plots.c,
 * plot_write.h). It reads the timeline and the schedule; it derives no
 * metric (a gap in a row is the bubble only to the eye).
 */
#define _POSIX_C_SOURCE 200809L
#include "plots.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paths.h" /* oc_mkdir_p */
#include "placement.h"
#include "plot_write.h"


/* SENDs of one peer to one receiver, by tag, to find when a RECV's data
 * started to move. */
struct send_entry {
    int64_t tag;
    double start_s;
};
struct send_index {
    int64_t sender, receiver;
    int64_t n;
    struct send_entry *e;
};

static int cmp_send(const void *pa, const void *pb)
{
    const struct send_entry *a = pa, *b = pb;
    return (a->tag > b->tag) - (a->tag < b->tag);
}

static void send_index_build(struct send_index *x, const struct oc_timeline *tl,
                             int64_t sender, int64_t receiver)
{
    const struct oc_rank_ops *ro = &tl->sched->ranks[sender];
    x->sender = sender;
    x->receiver = receiver;
    x->n = 0;
    x->e = NULL;
    if (!tl->start_s[sender])
        return;
    x->e = oc_xmalloc((size_t)(ro->n > 0 ? ro->n : 1) * sizeof *x->e);
    for (int64_t i = 0; i < ro->n; i++)
        if (ro->ops[i].kind == OC_OP_SEND && ro->ops[i].peer == receiver)
            x->e[x->n++] = (struct send_entry){ro->ops[i].tag, tl->start_s[sender][i]};
    qsort(x->e, (size_t)x->n, sizeof *x->e, cmp_send);
}

/* Start of the SEND matching a RECV from `sender` with `tag`, or NAN. */
static double send_start(const struct send_index *x, int64_t tag)
{
    int64_t lo = 0, hi = x->n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (x->e[mid].tag < tag)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < x->n && x->e[lo].tag == tag ? x->e[lo].start_s : NAN;
}

enum gantt_kind { G_FWD, G_BWD, G_RECOMP, G_OPT, G_TP, G_PP, G_DP, G_WAIT, G_NKIND };
static const char *const gantt_word[G_NKIND] = {"F", "B", "R", "opt", "tp", "pp", "dp", "wait"};
static const char *const gantt_title[G_NKIND] = {
    "forward", "backward", "recompute", "optimizer", "TP collective",
    "pipeline transfer", "DP / embedding collective", "wait for async comm"};
static const char *const gantt_color[G_NKIND] = {
    OC_GP_FWD, OC_GP_BWD, OC_GP_RECOMP, OC_GP_OPT, OC_GP_TP, OC_GP_PP, OC_GP_DP, OC_GP_WAIT};

static int gantt_kind_of(const struct oc_op *op)
{
    switch ((enum oc_op_kind)op->kind) {
    case OC_OP_COMPUTE:
        switch ((enum oc_phase)op->phase) {
        case OC_PHASE_FWD: return G_FWD;
        case OC_PHASE_BWD: return G_BWD;
        case OC_PHASE_RECOMPUTE: return G_RECOMP;
        case OC_PHASE_OPTIMIZER: return G_OPT;
        }
        return G_FWD;
    case OC_OP_SEND:
    case OC_OP_RECV: return G_PP;
    case OC_OP_COLLECTIVE: return op->group == OC_GROUP_TP ? G_TP : G_DP;
    case OC_OP_WAIT: return G_WAIT;
    default: return -1;
    }
}

/* Row geometry (the y axis runs downwards, stage 0 on top): compute fills
 * the row, blocking communication is a thinner box inside it, transfers
 * that overlap compute a strip under it. */
#define ROW_COMP_LO (-0.40)
#define ROW_COMP_HI 0.22
#define ROW_SYNC_LO (-0.24)
#define ROW_SYNC_HI 0.06
#define ROW_SIDE_LO 0.27
#define ROW_SIDE_HI 0.40

struct gbox {
    double a, b;
    int kind;
    int64_t op;
};
struct glabel {
    double x, y;
    char text[24];
};

/* One row being written: the current run of a micro-batch's forward
 * (backward, recompute) work, which becomes one box, with the TP
 * collectives that interrupt it drawn on top when at least 1/1000 of the
 * step wide (thinner ones are part of the run's box); the labels. */
struct grow {
    FILE *f;
    int64_t stage;
    double step_s;
    int vchunks;
    int present[G_NKIND];
    int active;
    int kind;
    int32_t mb, chunk;
    int64_t first_op;
    double start_s, end_s;
    struct gbox *tp;
    int64_t ntp, captp;
    struct glabel *lab;
    int64_t nlab, caplab;
    int64_t nboxes;
};

static void gbox_write(struct grow *g, double a, double b, int k, int side, int64_t op)
{
    double lo = k <= G_OPT ? ROW_COMP_LO : side ? ROW_SIDE_LO : ROW_SYNC_LO;
    double hi = k <= G_OPT ? ROW_COMP_HI : side ? ROW_SIDE_HI : ROW_SYNC_HI;
    double s = (double)g->stage;
    g->present[k] = 1;
    fprintf(g->f, "%lld %.4f %.4f %.9g %.9g %ld %s %lld\n", (long long)g->stage, s + lo, s + hi,
            a, b, oc_gp_rgb(gantt_color[k]), gantt_word[k], (long long)op);
    g->nboxes++;
}

/* Ends the current run: its box, the TP boxes inside it, and its label
 * when the box is wide enough to hold it (at 1200 px, about 1000 px of
 * plot, a character of the 7-point font takes about 0.5% of the step's
 * width; plus a margin of 1.5 characters). */
static void grun_flush(struct grow *g)
{
    if (!g->active)
        return;
    gbox_write(g, g->start_s, g->end_s, g->kind, 0, g->first_op);
    for (int64_t i = 0; i < g->ntp; i++)
        gbox_write(g, g->tp[i].a, g->tp[i].b, G_TP, 0, g->tp[i].op);
    g->ntp = 0;
    char text[24];
    if (g->vchunks > 1)
        snprintf(text, sizeof text, "%d.%d", (int)g->mb, (int)g->chunk);
    else
        snprintf(text, sizeof text, "%d", (int)g->mb);
    if (g->end_s - g->start_s >= g->step_s * 0.005 * ((double)strlen(text) + 1.5)) {
        if (g->nlab == g->caplab) {
            g->caplab = g->caplab ? 2 * g->caplab : 64;
            g->lab = oc_xrealloc(g->lab, (size_t)g->caplab * sizeof *g->lab);
        }
        struct glabel *l = &g->lab[g->nlab++];
        l->x = (g->start_s + g->end_s) / 2;
        l->y = (double)g->stage + (ROW_COMP_LO + ROW_COMP_HI) / 2;
        snprintf(l->text, sizeof l->text, "%s", text);
    }
    g->active = 0;
}

/* The rank drawn for a stage: TP 0, DP 0, else whoever stands in for it,
 * else any recorded rank of the stage; -1 if none. *shown is that rank's
 * own id (the one in the label). */
static int64_t stage_source(const struct oc_timeline *tl, const struct oc_layout *l,
                            int64_t stage, int64_t *shown)
{
    struct oc_coord c = {0, stage, 0, 0};
    int64_t r = oc_layout_rank(l, c);
    *shown = r;
    if (tl->start_s[r])
        return r;
    if (tl->proxy[r] >= 0 && tl->proxy[r] < tl->nranks && tl->start_s[tl->proxy[r]])
        return tl->proxy[r];
    for (c.dp = 0; c.dp < l->dp; c.dp++)
        for (c.tp = 0; c.tp < l->tp; c.tp++) {
            int64_t q = oc_layout_rank(l, c);
            if (tl->start_s[q])
                return q;
        }
    return -1;
}


/* What the chart is drawn from: per stage the rank drawn (src, -1: none)
 * and the rank it stands for (shown), the step's length, the layout's
 * name; then what pipeline.dat held (the kinds drawn, the labels). */
struct chart {
    const struct oc_timeline *tl;
    const struct oc_layout *l;
    int64_t *src, *shown;
    double step_s;
    char lay[96];
    int present[G_NKIND];
    int64_t nlabels;
};

/* Fills c->src, c->shown and c->step_s (the end of the last timed op of a
 * drawn rank). Returns the number of rows drawn. */
static int64_t chart_rows(struct chart *c)
{
    const struct oc_timeline *tl = c->tl;
    int64_t rows = 0;
    c->step_s = 0;
    for (int64_t s = 0; s < c->l->pp; s++) {
        c->src[s] = stage_source(tl, c->l, s, &c->shown[s]);
        if (c->src[s] < 0)
            continue;
        rows++;
        const struct oc_rank_ops *ro = &tl->sched->ranks[c->src[s]];
        const double *t1 = tl->end_s[c->src[s]];
        for (int64_t i = 0; i < ro->n; i++)
            if (isfinite(t1[i]) && t1[i] > c->step_s)
                c->step_s = t1[i];
    }
    return rows;
}

/* Where the box of a RECV of rank r that ran [a, b] starts: when the
 * matching SEND started, if later than a (the wait before it is bubble, left
 * empty), else a. idx caches the SENDs of up to four senders. */
static double recv_box_start(const struct oc_timeline *tl, int64_t r, const struct oc_op *op,
                             double a, double b, struct send_index idx[4], int *nidx)
{
    if (op->kind != OC_OP_RECV || op->peer < 0 || op->peer >= tl->nranks)
        return a;
    int j;
    for (j = 0; j < *nidx; j++)
        if (idx[j].sender == op->peer)
            break;
    if (j == *nidx && *nidx < 4)
        send_index_build(&idx[(*nidx)++], tl, op->peer, r);
    if (j < *nidx) {
        double ss = send_start(&idx[j], op->tag);
        if (isfinite(ss) && ss > a)
            a = ss < b ? ss : b;
    }
    return a;
}

/* The boxes of row g->stage from rank r's timed ops. */
static void gantt_row(struct grow *g, const struct oc_timeline *tl, int64_t r)
{
    const struct oc_rank_ops *ro = &tl->sched->ranks[r];
    const double *t0 = tl->start_s[r], *t1 = tl->end_s[r];
    struct send_index idx[4];
    int nidx = 0;
    g->active = 0;
    g->ntp = 0;
    for (int64_t i = 0; i < ro->n; i++) {
        const struct oc_op *op = &ro->ops[i];
        int k = gantt_kind_of(op);
        if (k < 0 || !isfinite(t0[i]) || !isfinite(t1[i]))
            continue;
        double a = t0[i], b = t1[i];
        if (op->kind == OC_OP_COMPUTE && (k == G_FWD || k == G_BWD || k == G_RECOMP) &&
            op->mb >= 0) {
            if (g->active && g->kind == k && g->mb == op->mb && g->chunk == op->chunk) {
                g->end_s = b > g->end_s ? b : g->end_s;
                continue;
            }
            grun_flush(g);
            g->active = 1;
            g->kind = k;
            g->mb = op->mb;
            g->chunk = op->chunk;
            g->first_op = i;
            g->start_s = a;
            g->end_s = b;
            continue;
        }
        int side = op->kind == OC_OP_SEND || (op->kind == OC_OP_COLLECTIVE && op->async);
        if (k == G_TP && !side && g->active && op->mb == g->mb) {
            /* A TP collective inside the run extends it. */
            g->end_s = b > g->end_s ? b : g->end_s;
            if (b - a >= g->step_s * 1e-3) {
                if (g->ntp == g->captp) {
                    g->captp = g->captp ? 2 * g->captp : 16;
                    g->tp = oc_xrealloc(g->tp, (size_t)g->captp * sizeof *g->tp);
                }
                g->tp[g->ntp++] = (struct gbox){a, b, G_TP, i};
            }
            continue;
        }
        if (b <= a)
            continue;
        a = recv_box_start(tl, r, op, a, b, idx, &nidx);
        if (!side)
            grun_flush(g); /* blocking work of another kind ends the run */
        if (b > a)
            gbox_write(g, a, b, k, side, i);
    }
    grun_flush(g);
    for (int j = 0; j < nidx; j++)
        free(idx[j].e);
}

/* pipeline.dat: index 0 the boxes of every row, index 1 the labels; sets
 * c->present and c->nlabels. */
static int chart_dat(const char *dir, struct chart *c, struct oc_status *st)
{
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "pipeline.dat", st);
    if (!f)
        return -1;
    fprintf(f,
            "# pipeline.dat: %s, one row per pipeline stage (TP rank 0, DP rank 0)\n"
            "# index 0, boxes: stage y_lo y_hi start_s end_s rgb kind op (first op of a run)\n"
            "#   kind: F B R opt (compute), tp pp dp wait (communication)\n",
            c->lay);
    struct grow g;
    memset(&g, 0, sizeof g);
    g.f = f;
    g.step_s = c->step_s;
    g.vchunks = (int)oc_place_interleaved_chunks(c->l);
    for (int64_t s = 0; s < c->l->pp; s++) {
        if (c->src[s] < 0)
            continue;
        g.stage = s;
        gantt_row(&g, c->tl, c->src[s]);
    }
    /* index 1: micro-batch numbers (mb.chunk when interleaved). */
    fprintf(f, "\n\n# index 1, labels: x_s y text (micro-batch, .chunk when interleaved)\n");
    for (int64_t i = 0; i < g.nlab; i++)
        fprintf(f, "%.9g %.9g \"%s\"\n", g.lab[i].x, g.lab[i].y, g.lab[i].text);
    c->nlabels = g.nlab;
    memcpy(c->present, g.present, sizeof c->present);
    free(g.tp);
    free(g.lab);
    return oc_gp_close(&of, st);
}

/* The y axis: one tic per drawn stage, naming the rank drawn. */
static void chart_ytics(FILE *f, const struct chart *c)
{
    fprintf(f, "set ytics (");
    int first = 1;
    for (int64_t s = 0; s < c->l->pp; s++) {
        if (c->src[s] < 0)
            continue;
        if (c->src[s] == c->shown[s])
            fprintf(f, "%s\"stage %lld, rank %lld\" %lld", first ? "" : ", ", (long long)s,
                    (long long)c->shown[s], (long long)s);
        else
            fprintf(f, "%s\"stage %lld, rank %lld (as %lld)\" %lld", first ? "" : ", ",
                    (long long)s, (long long)c->src[s], (long long)c->shown[s], (long long)s);
        first = 0;
    }
    fprintf(f, ")\n");
}

/* pipeline.gp: time in s, ms or us after the step's start, a row per
 * stage, the key of the kinds drawn. */
static int chart_gp(const char *dir, const struct chart *c, const struct oc_plot_opts *po,
                    struct oc_status *st)
{
    const int64_t p = c->l->pp;
    double u = 1;
    const char *unit = "s";
    if (c->step_s < 2e-3) {
        u = 1e6;
        unit = "us";
    } else if (c->step_s < 2) {
        u = 1e3;
        unit = "ms";
    }
    int h = (int)(160 + 60 * p);
    if (h < po->height_px)
        h = po->height_px;
    if (h > 4000)
        h = 4000;
    struct oc_outfile of;
    FILE *f = oc_gp_open(&of, dir, "pipeline.gp", st);
    if (!f)
        return -1;
    oc_gp_script_begin(f, "pipeline", "Gantt chart of one step, one row per pipeline stage",
                       "ocsim", po->width_px, h);
    fprintf(f, "u = %g  # seconds to %s\n", u, unit);
    if (po->title) {
        fputs("set title ", f);
        oc_gp_str(f, po->title);
        fputc('\n', f);
    } else {
        fprintf(f,
                "set title \"Pipeline of one step, %s, %lld micro-batches: one row per "
                "stage; gaps are bubbles\"\n",
                c->lay, (long long)c->tl->sched->num_micro_batches);
    }
    fprintf(f,
            "set xlabel \"time since the start of the step (%s)\"\n"
            "set xrange [0:%.9g]\n"
            "set yrange [%lld.5:-0.5]\n"
            "set grid xtics\n"
            "set style fill solid 1.0 noborder\n"
            "set key outside bottom center horizontal\n",
            unit, c->step_s * u, (long long)p - 1);
    chart_ytics(f, c);
    fprintf(f, "plot 'pipeline.dat' index 0 using (($4+$5)/2*u):(($2+$3)/2):($4*u):($5*u):2:3:6 "
               "with boxxyerror lc rgb variable notitle");
    if (c->nlabels > 0)
        fprintf(f, ", \\\n     '' index 1 using ($1*u):2:3 with labels tc rgb 'white' "
                   "font \",7\" notitle");
    for (int k = 0; k < G_NKIND; k++)
        if (c->present[k])
            fprintf(f, ", \\\n     keyentry with boxes lc rgb '%s' title '%s'", gantt_color[k],
                    gantt_title[k]);
    fputc('\n', f);
    oc_gp_script_end(f, "pipeline", po->width_px, h);
    return oc_gp_close(&of, st);
}

int oc_plot_pipeline(const char *dir, const struct oc_timeline *tl,
                     const struct oc_layout *l, const struct oc_plot_opts *o,
                     struct oc_status *st)
{
    OC_ASSERT(dir && tl && tl->sched);
    if (!l)
        l = &tl->sched->layout;
    OC_ASSERT(oc_layout_world(l) == tl->nranks);
    struct oc_plot_opts po = oc_plot_opts_fill(o);
    if (oc_mkdir_p(dir, st) != 0)
        return -1;
    oc_gp_remove(dir, "pipeline");
    struct chart c;
    memset(&c, 0, sizeof c);
    c.tl = tl;
    c.l = l;
    c.src = oc_xmalloc((size_t)l->pp * sizeof *c.src);
    c.shown = oc_xmalloc((size_t)l->pp * sizeof *c.shown);
    oc_layout_format(l, c.lay, sizeof c.lay);
    int rc;
    if (chart_rows(&c) == 0 || c.step_s <= 0)
        rc = oc_fail(st, "pipeline plot: the timeline holds no timed ops");
    else
        rc = chart_dat(dir, &c, st) != 0 || chart_gp(dir, &c, &po, st) != 0 ? -1 : 0;
    free(c.src);
    free(c.shown);
    if (rc != 0)
        return -1;
    static const char *const names[] = {"pipeline"};
    return oc_plot_render(dir, &po, names, 1, st);
}
