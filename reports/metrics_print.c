/* metrics_print.c: shared text output of a step's metrics (see
 * metrics_print.h). */
#include "metrics_print.h"

#include "format.h"

void oc_metrics_print_time_split(FILE *f, const struct oc_metrics *mt)
{
    char b[4][32];
    fprintf(f, "  bubble           %.1f%% of the step (mean over stages)\n",
            100 * mt->bubble_fraction);
    fprintf(f, "  compute          %s per rank\n", oc_fmt_si(b[0], 32, mt->compute_s, "s"));
    char cp[48] = "";
    if (mt->layout.cp > 1) /* the context-parallel ring (schedule_cp.h) */
        snprintf(cp, sizeof cp, ", CP %s", oc_fmt_si(b[0], 32, mt->cp_comm_s, "s"));
    fprintf(f, "  communication    TP %s, PP %s, DP %s%s; exposed %s\n",
            oc_fmt_si(b[0], 32, mt->tp_comm_s, "s"), oc_fmt_si(b[1], 32, mt->pp_comm_s, "s"),
            oc_fmt_si(b[2], 32, mt->dp_comm_s, "s"), cp,
            oc_fmt_si(b[3], 32, mt->exposed_comm_s, "s"));
}

void oc_metrics_print_stages(FILE *f, const struct oc_metrics *mt)
{
    char b[6][32];
    fprintf(f, "%6s %10s %8s %10s %10s %10s %10s %10s\n", "stage", "compute", "bubble",
            "tp_comm", "pp_comm", "dp_comm", "exposed", "peak_mem");
    for (int64_t s = 0; s < mt->nstages; s++) {
        const struct oc_stage_metrics *g = &mt->stage[s];
        fprintf(f, "%6lld %10s %7.1f%% %10s %10s %10s %10s %10s\n", (long long)s,
                oc_fmt_si(b[0], 32, g->compute_s, "s"),
                mt->step_time_s > 0 ? 100 * g->bubble_s / mt->step_time_s : 0.0,
                oc_fmt_si(b[1], 32, g->tp_comm_s, "s"), oc_fmt_si(b[2], 32, g->pp_comm_s, "s"),
                oc_fmt_si(b[3], 32, g->dp_comm_s, "s"),
                oc_fmt_si(b[4], 32, g->exposed_comm_s, "s"),
                oc_fmt_si(b[5], 32, g->peak_mem_bytes, "B"));
    }
}
