/* cost_overhead.c: kernel launches, the sustained HBM fraction and the
 * optimizer step's bytes (see cost_overhead.h for the model and the
 * kernel-count sources). */
#include "cost_overhead.h"

#include "memory.h"
#include "status.h"

/* GPU-side gap per kernel when the host runs ahead: 1 us. NVIDIA, "Getting
 * Started with CUDA Graphs" (A. Gray, NVIDIA Technical Blog, 2019): a
 * chain of short kernels of 2.9 us each ran at 3.8 us per kernel with the
 * launches overlapped (no synchronisation between them), about 0.9 us of
 * launch gap per kernel on the GPU (graphs cut it to about 3.4 us). ESTIMATE:
 * V100 in the source; taken for A100 and H100 alike. */
#define OC_KERNEL_GAP_S 1.0e-6

/* Host time to issue one kernel from PyTorch eager mode: 10 us. ESTIMATE:
 * the same post measured 9.6 us per kernel with the host in the loop
 * (launch plus synchronisation), and PyTorch adds its dispatcher and the
 * Python of Megatron's modules on top (PyTorch's "Accelerating PyTorch with
 * CUDA Graphs", 2021, puts eager per-op CPU overhead at microseconds to
 * tens of microseconds). It only binds when a part's kernels are shorter
 * than their issue (small models, small micro-batches). */
#define OC_HOST_OP_S 10.0e-6

/* Sustained fraction of the HBM datasheet bandwidth that streaming kernels
 * reach: 0.9. Measured on this project's H200: a device-to-device copy
 * through PyTorch moved about 4.3 TB/s (read plus write) of the datasheet's
 * 4.8 (.library/device/KINDS.md, 2026-10-28 and 2026-11-04), 0.896; STREAM
 * copy and triad on A100 and H100 reach about 90 % of the datasheet
 * likewise (BabelStream, Deakin et al., "Evaluating attainable memory
 * bandwidth of parallel programming models via BabelStream", 2018, and its
 * later GPU results). ESTIMATE for the A100 and H100 of the validation
 * rows: the same fraction. */
#define OC_MEM_EFFICIENCY 0.9

struct oc_cost_overheads oc_cost_overheads_default(void)
{
    return (struct oc_cost_overheads){OC_KERNEL_GAP_S, OC_HOST_OP_S, OC_MEM_EFFICIENCY};
}

struct oc_cost_overheads oc_cost_overheads_none(void)
{
    return (struct oc_cost_overheads){0.0, 0.0, 1.0};
}

/* Core attention's kernels (cost_overhead.h). */
static int64_t core_kernels(const struct oc_model *m, const struct oc_layout *l,
                            int backward)
{
    const int64_t drop = m->has_dropout ? 1 : 0;
    if (l->attention == OC_ATTN_FLASH)
        return backward ? 3 : 1;
    /* QK^T, fused scale-mask-softmax, dropout, PV; backward 2 GEMMs each
     * for QK^T and PV, the dropout's and the softmax's gradient. */
    return backward ? 4 + 1 + drop : 3 + drop;
}

int64_t oc_cost_kernels(const struct oc_model *m, const struct oc_layout *l,
                        enum oc_part part, enum oc_phase phase)
{
    const int64_t rope = m->learned_pos_emb ? 0 : 2;
    const int64_t bias = m->has_bias ? 1 : 0;
    switch (phase) {
    case OC_PHASE_FWD:
        switch (part) {
        case OC_PART_ATTN: return 5 + rope + core_kernels(m, l, 0);
        case OC_PART_MLP: return 5;
        case OC_PART_EMBED:
            return 1 + (m->learned_pos_emb ? 1 : 0) + (m->has_dropout ? 1 : 0);
        case OC_PART_HEAD: return 2 + 10;
        default: return 0;
        }
    case OC_PHASE_BWD:
        switch (part) {
        /* norm 2, two GEMMs 2 + bias each, bias-dropout-add 1, residual
         * gradient sum 1, rotary, core attention */
        case OC_PART_ATTN: return 2 + 2 * (2 + bias) + 1 + 1 + rope + core_kernels(m, l, 1);
        /* norm 2, two GEMMs 2 + bias each, activation 1, bias-dropout-add
         * 1, residual gradient sum 1 */
        case OC_PART_MLP: return 2 + 2 * (2 + bias) + 1 + 1 + 1;
        case OC_PART_EMBED: return 3;
        case OC_PART_HEAD: return 4 + 2 + 2;
        default: return 0;
        }
    case OC_PHASE_RECOMPUTE:
        if (part != OC_PART_ATTN && part != OC_PART_MLP)
            return 0;
        if (l->recompute == OC_RECOMPUTE_FULL)
            return oc_cost_kernels(m, l, part, OC_PHASE_FWD);
        if (l->recompute == OC_RECOMPUTE_SELECTIVE && part == OC_PART_ATTN)
            return core_kernels(m, l, 0);
        return 0;
    default:
        return 0;
    }
}

double oc_cost_launch_s(const struct oc_cost_overheads *o, double gpu_s, int64_t n)
{
    OC_ASSERT(o && n >= 0);
    const double gpu = gpu_s + (double)n * o->kernel_gap_s;
    const double host = (double)n * o->host_op_s;
    return gpu > host ? gpu : host;
}

double oc_cost_optimizer_bytes_per_param(const struct oc_layout *l)
{
    /* cost_overhead.h, "The optimizer step". */
    const double norm = 4.0, adam = 28.0;
    if (l->precision == OC_PREC_FP32)
        return norm + adam;
    const double copy_grads = oc_mem_grads_fp32(l) ? 0.0 : 6.0;
    const double unscale = l->precision == OC_PREC_FP16 ? 8.0 : 0.0;
    const double copy_params = 6.0;
    return copy_grads + unscale + norm + adam + copy_params;
}

double oc_cost_zero_grad_bytes(const struct oc_layout *l, double params)
{
    /* the rank's gradient buffer, as memory.c sizes it (sharded over d*c
     * under ZeRO-2 and 3) */
    double g = oc_mem_param_bytes(l).grad * params;
    if (l->zero >= 2 && l->dp > 1)
        g /= (double)l->dp * (double)(l->cp > 1 ? l->cp : 1);
    return g;
}
