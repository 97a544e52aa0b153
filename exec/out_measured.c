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

void oc_out_steps_init(struct oc_out_steps *a, const struct oc_schedule *s, int64_t steps,
                       int rank)
{
    memset(a, 0, sizeof *a);
    a->s = s;
    a->steps = steps;
    a->rank = rank;
    if (rank != 0)
        return;
    const int64_t R = s->nranks;
    a->displs = oc_xmalloc((size_t)R * sizeof *a->displs);
    int64_t pos = 0;
    for (int64_t q = 0; q < R; q++) {
        a->displs[q] = pos;
        pos += 3 * s->ranks[q].n; /* start, end, inner */
    }
    a->all = oc_xmalloc((size_t)pos * sizeof *a->all);
    a->S = oc_xmalloc((size_t)R * sizeof *a->S);
    a->E = oc_xmalloc((size_t)R * sizeof *a->E);
    a->In = oc_xmalloc((size_t)R * sizeof *a->In);
    for (int64_t q = 0; q < R; q++) {
        const int64_t nq = s->ranks[q].n;
        a->S[q] = a->all + a->displs[q];
        a->E[q] = a->S[q] + nq;
        a->In[q] = a->S[q] + 2 * nq;
    }
    a->mt = oc_xmalloc(sizeof *a->mt);
    a->one = oc_xmalloc(sizeof *a->one);
    oc_metrics_init(a->mt, &s->layout);
}

void oc_out_steps_free(struct oc_out_steps *a)
{
    free(a->one);
    free(a->mt);
    free(a->In);
    free(a->E);
    free(a->S);
    free(a->all);
    free(a->displs);
    memset(a, 0, sizeof *a);
}

/* mt += one / used: the mean of the steps after the first (all of them
 * with one step), summed in step order. */
static void add_to_mean(struct oc_metrics *mt, const struct oc_metrics *one, double used)
{
    mt->step_time_s += one->step_time_s / used;
    for (int64_t k = 0; k < mt->nstages; k++) {
        struct oc_stage_metrics *a = &mt->stage[k];
        const struct oc_stage_metrics *b = &one->stage[k];
        a->compute_s += b->compute_s / used;
        a->bubble_s += b->bubble_s / used;
        a->tp_comm_s += b->tp_comm_s / used;
        a->pp_comm_s += b->pp_comm_s / used;
        a->dp_comm_s += b->dp_comm_s / used;
        a->exposed_comm_s += b->exposed_comm_s / used;
    }
}

int oc_out_steps_add(struct oc_ctl *c, struct oc_out_steps *a, const struct oc_runner *r,
                     struct oc_status *st)
{
    const struct oc_schedule *s = a->s;
    const int64_t n = r->nops, k = a->seen++;
    OC_ASSERT(k < a->steps);
    const int tag = 11;
    oc_ctl_set_what(c, "gathering the op times of step %lld", (long long)r->step + 1);
    if (c->rank != 0) {
        /* start, end and inner times, one message (rank 0 cuts it) */
        double *mine = oc_xmalloc((size_t)(3 * n) * sizeof *mine);
        memcpy(mine, r->start_s, (size_t)n * sizeof *mine);
        memcpy(mine + n, r->end_s, (size_t)n * sizeof *mine);
        memcpy(mine + 2 * n, r->inner_s, (size_t)n * sizeof *mine);
        int rc = oc_ctl_send(c, mine, 3 * n * (int64_t)sizeof *mine, 0, tag, st);
        free(mine);
        return rc;
    }
    memcpy(a->S[0], r->start_s, (size_t)n * sizeof *a->all);
    memcpy(a->E[0], r->end_s, (size_t)n * sizeof *a->all);
    memcpy(a->In[0], r->inner_s, (size_t)n * sizeof *a->all);
    for (int64_t q = 1; q < s->nranks; q++)
        if (oc_ctl_recv(c, a->S[q], 3 * s->ranks[q].n * (int64_t)sizeof *a->all, (int)q,
                        tag, st) != 0)
            return -1;
    /* Every step's metrics, so that the SEND ends of the last step kept
     * for ops.csv are arrivals; the first step is left out of the mean
     * (warm-up) unless it is the only one. The peaks come at the end
     * (oc_out_measured). */
    const int64_t first = a->steps > 1 ? 1 : 0;
    oc_metrics_init(a->one, &s->layout);
    oc_runner_step_metrics(s, a->S, a->E, a->In, NULL, a->one);
    if (k >= first)
        add_to_mean(a->mt, a->one, (double)(a->steps - first));
    return 0;
}

/* Every rank's memory peaks by buffer kind and the total (device_peak > 0
 * replaces the executor's own total) to rank 0's hw[q * (OC_BUF_COUNT +
 * 1) ...]. */
static int gather_peaks(struct oc_ctl *c, const struct oc_runner *r, double device_peak,
                        double *hw, struct oc_status *st)
{
    double hw_mine[OC_BUF_COUNT + 1];
    memcpy(hw_mine, r->mem_hw_bytes, sizeof r->mem_hw_bytes);
    hw_mine[OC_BUF_COUNT] = device_peak > 0 ? device_peak : r->mem_hw_total_bytes;
    oc_ctl_set_what(c, "gathering the memory peaks");
    return oc_ctl_gather(c, hw_mine, hw, (int64_t)sizeof hw_mine, 0, st);
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

int oc_out_measured(struct oc_ctl *c, const struct oc_exec_job *j, struct oc_out_steps *a,
                    const struct oc_runner *r, double device_peak_bytes,
                    struct oc_status *st)
{
    const struct oc_schedule *s = &j->sched;
    const int64_t R = s->nranks, steps = a->steps;
    OC_ASSERT(a->seen == steps);
    double *hw = c->rank == 0 ? oc_xmalloc((size_t)R * (OC_BUF_COUNT + 1) * sizeof *hw)
                              : NULL;
    int rc = gather_peaks(c, r, device_peak_bytes, hw, st);
    if (rc != 0 || c->rank != 0) {
        free(hw);
        return rc;
    }
    /* The stage peaks of the mean: the last step's metrics again with
     * every rank's peak (its SEND ends are arrivals already: the same) */
    double *peak = oc_xmalloc((size_t)R * sizeof *peak);
    for (int64_t q = 0; q < R; q++)
        peak[q] = hw[q * (OC_BUF_COUNT + 1) + OC_BUF_COUNT];
    oc_metrics_init(a->one, &s->layout);
    oc_runner_step_metrics(s, a->S, a->E, a->In, peak, a->one);
    free(peak);
    struct oc_metrics *mt = a->mt;
    for (int64_t k = 0; k < mt->nstages; k++)
        mt->stage[k].peak_mem_bytes = a->one->stage[k].peak_mem_bytes;
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
        rc = write_files(j, a->S, a->E, hw, st);
    if (rc == 0)
        print_metrics(j, mt, steps > 1 ? steps - 1 : steps, device_peak_bytes > 0);
    free(hw);
    return rc;
}
