/* out_measured.c: see out_measured.h. */
#define _POSIX_C_SOURCE 200809L
#include "out_measured.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "metrics_csv.h"
#include "metrics_print.h"
#include "ops_csv.h"
#include "timeline_json.h"

/* Rank 0's copy of every rank's times: all[displs[q] ...] holds rank q's
 * start, end and inner times of every step ((3, steps, n_q)), hw[q *
 * (OC_BUF_COUNT + 1) ...] its memory peaks by buffer kind and the total. */
struct gathered {
    double *all, *hw;
    int64_t *displs;
};

static void gathered_free(struct gathered *g)
{
    free(g->hw);
    free(g->all);
    free(g->displs);
}

/* Every rank's op times of every step and memory peaks to rank 0 (g
 * filled on rank 0 only). */
static int gather(struct oc_ctl *c, const struct oc_schedule *s, int64_t steps,
                  const struct oc_runner *r, double device_peak, struct gathered *g,
                  struct oc_status *st)
{
    const int64_t R = s->nranks, n = r->nops;
    const int64_t per = 3 * steps; /* start, end, inner per op and step */
    const int tag = 11;
    double *mine = oc_xmalloc((size_t)(per * n) * sizeof *mine);
    memcpy(mine, r->start_s, (size_t)(steps * n) * sizeof *mine);
    memcpy(mine + steps * n, r->end_s, (size_t)(steps * n) * sizeof *mine);
    memcpy(mine + 2 * steps * n, r->inner_s, (size_t)(steps * n) * sizeof *mine);
    memset(g, 0, sizeof *g);
    int rc = 0;
    oc_ctl_set_what(c, "gathering the op times");
    if (c->rank == 0) {
        g->displs = oc_xmalloc((size_t)R * sizeof *g->displs);
        int64_t pos = 0;
        for (int64_t q = 0; q < R; q++) {
            g->displs[q] = pos;
            pos += per * s->ranks[q].n;
        }
        g->all = oc_xmalloc((size_t)pos * sizeof *g->all);
        memcpy(g->all, mine, (size_t)(per * n) * sizeof *g->all);
        for (int64_t q = 1; q < R && rc == 0; q++)
            rc = oc_ctl_recv(c, g->all + g->displs[q],
                             per * s->ranks[q].n * (int64_t)sizeof *g->all, (int)q, tag, st);
    } else {
        rc = oc_ctl_send(c, mine, per * n * (int64_t)sizeof *mine, 0, tag, st);
    }
    double hw_mine[OC_BUF_COUNT + 1];
    memcpy(hw_mine, r->mem_hw_bytes, sizeof r->mem_hw_bytes);
    hw_mine[OC_BUF_COUNT] = device_peak > 0 ? device_peak : r->mem_hw_total_bytes;
    g->hw = c->rank == 0 ? oc_xmalloc((size_t)R * sizeof hw_mine) : NULL;
    oc_ctl_set_what(c, "gathering the memory peaks");
    if (rc == 0)
        rc = oc_ctl_gather(c, hw_mine, g->hw, (int64_t)sizeof hw_mine, 0, st);
    free(mine);
    return rc;
}

/* mt = the step metrics averaged over the steps after the first (all of
 * them with one step); S and E are left pointing at the last step's start
 * and end times of each rank. */
static void mean_metrics(const struct oc_schedule *s, int64_t steps, const struct gathered *g,
                         double **S, double **E, struct oc_metrics *mt)
{
    const int64_t R = s->nranks;
    double **In = oc_xmalloc((size_t)R * sizeof *In);
    double *peak = oc_xmalloc((size_t)R * sizeof *peak);
    for (int64_t q = 0; q < R; q++)
        peak[q] = g->hw[q * (OC_BUF_COUNT + 1) + OC_BUF_COUNT];
    struct oc_metrics *one = oc_xmalloc(sizeof *one);
    oc_metrics_init(mt, &s->layout);
    const int64_t first = steps > 1 ? 1 : 0, used = steps - first;
    for (int64_t k = first; k < steps; k++) {
        for (int64_t q = 0; q < R; q++) {
            const int64_t nq = s->ranks[q].n;
            double *base = g->all + g->displs[q];
            S[q] = base + k * nq;
            E[q] = base + steps * nq + k * nq;
            In[q] = base + 2 * steps * nq + k * nq;
        }
        oc_metrics_init(one, &s->layout);
        oc_runner_step_metrics(s, S, E, In, peak, one);
        mt->step_time_s += one->step_time_s / (double)used;
        for (int64_t k2 = 0; k2 < mt->nstages; k2++) {
            struct oc_stage_metrics *a = &mt->stage[k2];
            const struct oc_stage_metrics *b = &one->stage[k2];
            a->compute_s += b->compute_s / (double)used;
            a->bubble_s += b->bubble_s / (double)used;
            a->tp_comm_s += b->tp_comm_s / (double)used;
            a->pp_comm_s += b->pp_comm_s / (double)used;
            a->dp_comm_s += b->dp_comm_s / (double)used;
            a->exposed_comm_s += b->exposed_comm_s / (double)used;
            a->peak_mem_bytes = b->peak_mem_bytes;
        }
    }
    free(one);
    free(peak);
    free(In);
}

static int write_memory(const char *path, const struct oc_schedule *s,
                        const double *hw, struct oc_status *st)
{
    static const char *const cols[] = {"rank", "buf", "high_water_bytes"};
    struct oc_csv c;
    if (oc_csv_open(&c, path, cols, 3, st) != 0)
        return -1;
    for (int64_t r = 0; r < s->nranks; r++)
        for (int k = 0; k <= OC_BUF_COUNT; k++) {
            oc_csv_field_i64(&c, r);
            oc_csv_field_str(&c, k < OC_BUF_COUNT ? oc_buf_name((enum oc_buf)k) : "total");
            oc_csv_field_f64(&c, hw[r * (OC_BUF_COUNT + 1) + k]);
            oc_csv_end_row(&c);
        }
    return oc_csv_close(&c, st);
}

/* ops.csv and timeline.json of the last step (S, E: its times; its SEND
 * ends are the arrivals), memory.csv of the peaks hw between them. */
static int write_files(const struct oc_exec_job *j, double *const *S, double *const *E,
                       const double *hw, struct oc_status *st)
{
    const struct oc_schedule *s = &j->sched;
    struct oc_timeline tl;
    oc_timeline_init(&tl, s, NULL);
    for (int64_t q = 0; q < s->nranks; q++)
        for (int64_t i = 0; i < s->ranks[q].n; i++) {
            tl.start_s[q][i] = S[q][i];
            tl.end_s[q][i] = E[q][i];
        }
    char path[4200];
    snprintf(path, sizeof path, "%s/ops.csv", j->out);
    int rc = oc_ops_csv_write(path, &tl, st);
    snprintf(path, sizeof path, "%s/memory.csv", j->out);
    if (rc == 0)
        rc = write_memory(path, s, hw, st);
    char title[512], name[128];
    oc_layout_format(&s->layout, name, sizeof name);
    snprintf(title, sizeof title, "%s, %s on %lld %s, step %lld (measured)",
             j->o.model.name, name, (long long)s->nranks, j->backend->device_words,
             (long long)j->o.exec.steps);
    struct oc_trace_opts to = OC_TRACE_OPTS_DEFAULT;
    to.title = title;
    to.source = "measured";
    to.gpus_per_node = j->o.topo.gpus_per_node;
    snprintf(path, sizeof path, "%s/timeline.json", j->out);
    if (rc == 0)
        rc = oc_timeline_json_write(path, &tl, &s->layout, &to, NULL, st);
    oc_timeline_free(&tl);
    return rc;
}

static void print_metrics(const struct oc_exec_job *j, const struct oc_metrics *mt,
                          int64_t steps_used, int device_peak)
{
    char b[8][32], name[128];
    oc_layout_format(&mt->layout, name, sizeof name);
    printf("%s, %s on %lld %s (measured), global batch %lld, seq %lld, "
           "%lld micro-batches\n",
           j->o.model.name, name, (long long)j->o.cards, j->backend->device_words,
           (long long)mt->layout.global_batch, (long long)mt->layout.seq_length,
           (long long)mt->num_micro_batches);
    printf("  step time        %s (mean of %lld step%s)\n",
           oc_fmt_si(b[0], 32, mt->step_time_s, "s"), (long long)steps_used,
           steps_used == 1 ? "" : "s");
    printf("  tokens/s         %s\n", oc_fmt_si(b[1], 32, mt->tokens_per_s, ""));
    if (j->backend->mfu_against_peak) /* a CPU's MFU against a GPU's peak: no */
        printf("  model TFLOP/s    %.4g per GPU, MFU %.2f%% of the %s's dense bf16 %s "
               "(--topology)\n",
               mt->tflops_per_gpu, 100.0 * mt->mfu, j->o.topo.device.name,
               oc_fmt_si(b[2], 32, j->o.topo.device.peak_flops_16bit, "FLOP/s"));
    oc_metrics_print_time_split(stdout, mt);
    printf("  peak memory      %s on stage %lld (%s)\n",
           oc_fmt_si(b[7], 32, mt->peak_mem_bytes, "B"), (long long)mt->peak_mem_stage,
           device_peak ? "device high-water mark: the stream-ordered pool's used "
                         "memory and every cudaMalloc"
                       : "allocated by the executor, fp32");
    oc_metrics_print_stages(stdout, mt);
}

int oc_out_measured(struct oc_ctl *c, const struct oc_exec_job *j, const struct oc_runner *r,
                    double device_peak_bytes, struct oc_status *st)
{
    const struct oc_schedule *s = &j->sched;
    const int64_t steps = j->o.exec.steps;
    struct gathered g;
    int rc = gather(c, s, steps, r, device_peak_bytes, &g, st);
    if (rc != 0 || c->rank != 0) {
        gathered_free(&g);
        return rc;
    }
    double **S = oc_xmalloc((size_t)s->nranks * sizeof *S);
    double **E = oc_xmalloc((size_t)s->nranks * sizeof *E);
    struct oc_metrics *mt = oc_xmalloc(sizeof *mt);
    mean_metrics(s, steps, &g, S, E, mt);
    oc_metrics_finish(mt, &j->o.model, &j->o.topo);
    char path[4200];
    struct oc_csv csv;
    snprintf(path, sizeof path, "%s/measured.csv", j->out);
    rc = oc_metrics_csv_open(&csv, path, st);
    if (rc == 0) {
        oc_metrics_csv_row(&csv, mt, "");
        rc = oc_csv_close(&csv, st);
    }
    if (rc == 0)
        rc = write_files(j, S, E, g.hw, st);
    if (rc == 0)
        print_metrics(j, mt, steps > 1 ? steps - 1 : steps, device_peak_bytes > 0);
    free(mt);
    free(E);
    free(S);
    gathered_free(&g);
    return rc;
}
