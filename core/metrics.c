/* metrics.c: derived figures of a step (see metrics.h). */
#include "metrics.h"

#include <string.h>

#include "closed_form.h"
#include "reserve.h"

void oc_metrics_init(struct oc_metrics *mt, const struct oc_layout *l)
{
    memset(mt, 0, sizeof *mt);
    mt->layout = *l;
    mt->num_micro_batches = oc_layout_num_micro_batches(l);
    OC_ASSERT(l->pp >= 1 && l->pp <= OC_MAX_STAGES);
    mt->nstages = l->pp;
}

void oc_metrics_finish(struct oc_metrics *mt, const struct oc_model *m,
                       const struct oc_topology *t)
{
    const struct oc_layout *l = &mt->layout;
    double n = (double)mt->nstages;
    double bubble = 0;
    mt->compute_s = mt->tp_comm_s = mt->pp_comm_s = mt->dp_comm_s = mt->cp_comm_s = 0;
    mt->exposed_comm_s = 0;
    mt->peak_mem_bytes = 0;
    mt->peak_mem_stage = 0;
    /* Every stage has the same number of ranks (t*d), so the mean over
     * ranks is the mean over stages. */
    for (int64_t s = 0; s < mt->nstages; s++) {
        const struct oc_stage_metrics *g = &mt->stage[s];
        bubble += g->bubble_s;
        mt->compute_s += g->compute_s;
        mt->tp_comm_s += g->tp_comm_s;
        mt->pp_comm_s += g->pp_comm_s;
        mt->dp_comm_s += g->dp_comm_s;
        mt->cp_comm_s += g->cp_comm_s;
        mt->exposed_comm_s += g->exposed_comm_s;
        if (g->peak_mem_bytes > mt->peak_mem_bytes) {
            mt->peak_mem_bytes = g->peak_mem_bytes;
            mt->peak_mem_stage = s;
        }
    }
    mt->compute_s /= n;
    mt->tp_comm_s /= n;
    mt->pp_comm_s /= n;
    mt->dp_comm_s /= n;
    mt->cp_comm_s /= n;
    mt->exposed_comm_s /= n;
    double step = mt->step_time_s;
    mt->bubble_fraction = step > 0 ? bubble / n / step : 0;
    double world = (double)oc_layout_world(l);
    if (step > 0) {
        mt->tokens_per_s = (double)l->global_batch * (double)l->seq_length / step;
        double flops = oc_cf_model_flops_per_step(m, l);
        mt->tflops_per_gpu = flops / step / world / 1e12;
        /* node groups: against the sum of the ranks' own peaks */
        mt->mfu = t->n_groups > 1 ? flops / (step * oc_topology_peak_sum(t, (int64_t)world))
                                  : flops / (step * world * t->device.peak_flops_16bit);
    }
    mt->device_mem_bytes = t->device.memory_bytes;
    struct oc_reserve r;
    oc_reserve_layout(m, l, t, mt->peak_mem_bytes, &r);
    mt->reserve_bytes = r.total_bytes;
    mt->fits = oc_reserve_fits(t, mt->peak_mem_bytes, r.total_bytes);
}
