/* calib_topology.c: a calibrated topology from a base topology and the
 * measured figures, and its JSON file (see calib_topology.h). Every field
 * of struct oc_topology is written, so the file stands alone; the JSON
 * layout is the one core/topology.h reads. Numbers are written with six
 * significant digits: a measurement is not more precise than that, and
 * the file stays readable.
 */
#include "calib_topology.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backends.h" /* the backends' names */
#include "outfile.h"

int oc_calib_topology(const struct oc_topology *base, const struct oc_calib_measured *m,
                      struct oc_topology *out, struct oc_status *st)
{
    if (m->ranks < 1)
        return oc_fail(st, "calibration: %lld ranks (need at least 1)", (long long)m->ranks);
    if (!(m->gemm_flops > 0) || !isfinite(m->gemm_flops))
        return oc_fail(st, "calibration: the GEMM rate was not measured (%g FLOP/s)",
                       m->gemm_flops);
    if (!(m->mem_Bps > 0) || !isfinite(m->mem_Bps))
        return oc_fail(st, "calibration: the memory bandwidth was not measured (%g B/s)",
                       m->mem_Bps);
    const int gpu = m->backend == OC_CALIB_CUDA;
    const double act_bytes = gpu ? OC_CALIB_CUDA_ACT_BYTES : OC_CALIB_CPU_ACT_BYTES;
    *out = *base;
    out->gpus_per_node = m->ranks;
    if (m->cpu_name[0])
        snprintf(out->device.name, sizeof out->device.name, "%s", m->cpu_name);
    if (m->keep_peak) {
        /* A GPU: the peak stays the datasheet's, so MFU stays relative to
         * it; the measured rate is its sustained fraction (calib_topology.h). */
        const double peak = base->device.peak_flops_16bit;
        if (!(peak > 0) || !isfinite(peak))
            return oc_fail(st, "calibration: topology %s has no device peak (%g FLOP/s) "
                               "to keep",
                           base->name, peak);
        if (m->gemm_flops > peak)
            return oc_fail(st, "calibration: the measured GEMM rate %.4g FLOP/s is above "
                               "the peak of topology %s (%.4g FLOP/s): is it this "
                               "device's topology?",
                           m->gemm_flops, base->name, peak);
        out->device.gemm_efficiency = m->gemm_flops / peak;
    } else {
        /* On the cpu backend the "peak" is the measured sustained rate
         * (calib_topology.h), so its sustained fraction is 1. */
        out->device.peak_flops_16bit = m->gemm_flops;
        out->device.gemm_efficiency = 1.0;
    }
    if (m->cores_per_rank > 0)
        out->device.sm_count = m->cores_per_rank;
    if (m->memory_bytes > 0)
        out->device.memory_bytes = m->memory_bytes;
    out->device.hbm_bandwidth_Bps = m->mem_Bps;
    if (m->p2p_Bps > 0) {
        snprintf(out->intra_name, sizeof out->intra_name, "%s point-to-point (measured)",
                 gpu ? "NCCL" : "MPI");
        /* As measured: the schedule counts the run's element size (the
         * layout's precision, fp32 for the executor's runs). */
        out->intra_bandwidth_Bps = m->p2p_Bps;
        out->intra_latency_s = m->p2p_latency_s;
        /* the measurement is what the library achieves: it replaces the
         * base's estimate of NCCL's rate (topology.h) */
        out->intra_achieved_Bps = 0;
    }
    /* NCCL's rate and its latency and protocol terms (core/nccl_model.h)
     * describe NCCL: kept from the base on GPUs, dropped for the cpu
     * executor's MPI */
    if (!gpu) {
        out->intra_achieved_Bps = 0;
        out->nccl_version = 0;
    }
    out->calib_gemm_flops = m->gemm_flops;
    out->calib_mem_Bps = m->mem_Bps;
    out->calib_act_bytes = act_bytes;
    if (m->parts_measured) {
        for (int k = 0; k < OC_CALIB_PARTS; k++)
            if (!(m->part_flops[k] > 0) || !isfinite(m->part_flops[k]))
                return oc_fail(st, "calibration: the rate of part %s was not measured (%g FLOP/s)",
                               oc_calib_part_key((enum oc_calib_part)k), m->part_flops[k]);
        const double rest[3] = {m->embed_fwd_s_per_token, m->embed_bwd_s_per_token,
                                m->optimizer_s_per_param};
        for (int k = 0; k < 3; k++)
            if (!(rest[k] > 0) || !isfinite(rest[k]))
                return oc_fail(st, "calibration: the %s was not measured (%g s)",
                               k == 2 ? "optimizer's time per parameter"
                                      : "embedding's time per token", rest[k]);
        memcpy(out->calib_part_flops, m->part_flops, sizeof out->calib_part_flops);
        out->calib_embed_fwd_s_per_token = m->embed_fwd_s_per_token;
        out->calib_embed_bwd_s_per_token = m->embed_bwd_s_per_token;
        out->calib_optimizer_s_per_param = m->optimizer_s_per_param;
    }
    return oc_topology_check(out, "calibrated topology", st);
}

static void set_num(json_t *o, const char *k, double v) { json_object_set_new(o, k, json_real(v)); }
static void set_int(json_t *o, const char *k, int64_t v) { json_object_set_new(o, k, json_integer(v)); }
static void set_str(json_t *o, const char *k, const char *v) { json_object_set_new(o, k, json_string(v)); }

static void set_fmt(json_t *o, const char *k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_fmt(json_t *o, const char *k, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    set_str(o, k, buf);
}

/* What measured the figures, in the words of "description" and "sources". */
struct words {
    int gpu;             /* the cuda calibration (else the cpu one) */
    const char *backend; /* its name in the registry (backends.h) */
    char who[256];       /* "measured by ocsim-exec ... on HOST DATE, N ranks" */
    char gemm[512];      /* what the GEMM rate is */
};

static void words_init(struct words *w, const struct oc_calib_measured *m)
{
    w->gpu = m->backend == OC_CALIB_CUDA;
    w->backend = w->gpu ? OC_BACKEND_CUDA_NAME : OC_BACKEND_CPU_NAME;
    char flag[64] = "";
    if (w->gpu) /* the cpu backend is the default: no flag */
        snprintf(flag, sizeof flag, "--backend %s ", w->backend);
    snprintf(w->who, sizeof w->who, "measured by ocsim-exec %s--calibrate on %s %s, %lld %s%s",
             flag, m->host[0] ? m->host : "this machine", m->date, (long long)m->ranks,
             w->gpu ? "GPU" : "rank", m->ranks == 1 ? "" : "s");
    snprintf(w->gemm, sizeof w->gemm, "%s rate per %s, all %ss running at once (%s)",
             w->gpu ? "cuBLAS GEMM" : "fp32 cblas_sgemm", w->gpu ? "GPU" : "rank",
             w->gpu ? "GPU" : "rank",
             m->gemm_what[0] ? m->gemm_what : "the model's GEMM shapes");
}

/* The topology's own fields: every field of t, in core/topology.h's layout. */
static json_t *topology_json(const struct oc_topology *t, const struct oc_topology *base,
                             const struct oc_calib_measured *m, const struct words *w)
{
    json_t *root = json_object();
    set_str(root, "name", t->name);
    set_fmt(root, "description",
            w->gpu ? "%s, calibrated: %lld GPU%s on %s (one rank per GPU, NCCL, all on one "
                     "node). Fields not measured are those of topology %s."
                   : "%s, calibrated: %lld MPI rank%s on %s (one 'GPU' per rank, all on one "
                     "node). Fields not measured are those of topology %s.",
            base->name, (long long)m->ranks, m->ranks == 1 ? "" : "s",
            m->host[0] ? m->host : "this machine", base->name);
    set_int(root, "gpus_per_node", t->gpus_per_node);

    json_t *dev = json_object();
    set_str(dev, "name", t->device.name);
    set_num(dev, "peak_flops_16bit", t->device.peak_flops_16bit);
    set_num(dev, "memory_bytes", t->device.memory_bytes);
    set_num(dev, "hbm_bandwidth_Bps", t->device.hbm_bandwidth_Bps);
    set_int(dev, "sm_count", t->device.sm_count);
    set_num(dev, "gemm_efficiency", t->device.gemm_efficiency);
    json_object_set_new(root, "device", dev);

    json_t *intra = json_object();
    set_str(intra, "name", t->intra_name);
    set_num(intra, "bandwidth_Bps", t->intra_bandwidth_Bps);
    set_num(intra, "latency_s", t->intra_latency_s);
    if (t->intra_achieved_Bps > 0)
        set_num(intra, "achieved_Bps", t->intra_achieved_Bps);
    json_object_set_new(root, "intra_node", intra);

    json_t *nic = json_object();
    set_str(nic, "name", t->nic_name);
    set_int(nic, "count_per_node", t->nics_per_node);
    set_num(nic, "bandwidth_Bps", t->nic_bandwidth_Bps);
    set_num(nic, "latency_s", t->nic_latency_s);
    json_object_set_new(root, "nic", nic);

    json_t *inter = json_object();
    set_str(inter, "name", t->inter_name);
    set_num(inter, "latency_s", t->inter_latency_s);
    set_int(inter, "switch_levels", t->switch_levels);
    set_num(inter, "oversubscription", t->oversubscription);
    json_object_set_new(root, "inter_node", inter);
    if (t->nccl_version > 0) {
        json_t *nc = json_object();
        set_num(nc, "version", t->nccl_version);
        json_object_set_new(root, "nccl", nc);
    }

    json_t *cal = json_object();
    set_num(cal, "gemm_flops", t->calib_gemm_flops);
    set_num(cal, "mem_Bps", t->calib_mem_Bps);
    set_num(cal, "activation_bytes", t->calib_act_bytes);
    if (m->parts_measured) {
        set_num(cal, "optimizer_s_per_param", t->calib_optimizer_s_per_param);
        json_t *rates = json_object();
        for (int k = 0; k < OC_CALIB_PARTS; k++)
            set_num(rates, oc_calib_part_key((enum oc_calib_part)k), t->calib_part_flops[k]);
        json_object_set_new(cal, "part_flops_per_s", rates);
        json_t *tok = json_object();
        set_num(tok, "embed_fwd", t->calib_embed_fwd_s_per_token);
        set_num(tok, "embed_bwd", t->calib_embed_bwd_s_per_token);
        json_object_set_new(cal, "part_s_per_token", tok);
    }
    json_object_set_new(root, "calibration", cal);
    return root;
}

/* "sources" of the device's fields. */
static void sources_device(json_t *src, const struct oc_topology *t,
                           const struct oc_topology *base, const struct oc_calib_measured *m,
                           const struct words *w)
{
    const int gpu = w->gpu;
    set_fmt(src, "gpus_per_node", "%s: %s", w->who,
            gpu ? "one rank per GPU of this one machine"
                : "every rank is one 'GPU' of this one machine");
    if (m->cpu_name[0])
        set_fmt(src, "device.name", "%s: %s", w->who,
                gpu ? "the GPU's name (cudaGetDeviceProperties)"
                    : "the CPU model (/proc/cpuinfo)");
    if (m->keep_peak) {
        set_fmt(src, "device.peak_flops_16bit",
                "topology %s's, kept (the datasheet's dense 16-bit rate), so MFU stays "
                "relative to it; the measured rate is calibration.gemm_flops",
                base->name);
        set_fmt(src, "device.gemm_efficiency",
                "%s: calibration.gemm_flops / device.peak_flops_16bit = %.4g / %.4g",
                w->who, m->gemm_flops, t->device.peak_flops_16bit);
    } else {
        set_fmt(src, "device.peak_flops_16bit",
                "%s: %s. On the %s backend 'peak' is this measured rate, so MFU is "
                "relative to it.",
                w->who, w->gemm, w->backend);
        set_str(src, "device.gemm_efficiency",
                "1: the peak above is already a measured, sustained rate");
    }
    if (m->cores_per_rank > 0)
        set_fmt(src, "device.sm_count", "%s: %s", w->who,
                gpu ? "the GPU's streaming multiprocessors (cudaGetDeviceProperties)"
                    : "online cores / ranks (not used by the cost model once "
                      "calibration.gemm_flops is set)");
    if (m->memory_bytes > 0)
        set_fmt(src, "device.memory_bytes", "%s: %s", w->who,
                gpu ? "the GPU's global memory (cudaGetDeviceProperties)"
                    : "physical RAM (sysconf) / ranks");
    set_fmt(src, "device.hbm_bandwidth_Bps", "%s: %s", w->who,
            gpu ? "device-to-device cudaMemcpyAsync of a buffer of at least 4x the L2 "
                  "cache and 256 MiB, counted as 2x its bytes (read + write, as "
                  "nvbandwidth and STREAM's copy count), per GPU with all GPUs running, "
                  "best of several runs"
                : "STREAM-style triad a[i] = b[i] + s*c[i] over fp64 arrays much larger "
                  "than the caches, 24 bytes per element (2 reads, 1 write; McCalpin's "
                  "STREAM counting), per rank with all ranks running, best of several "
                  "runs");
}

/* "sources" of the network's and the calibration's fields. */
static void sources_rest(json_t *src, const struct oc_topology *t,
                         const struct oc_topology *base, const struct oc_calib_measured *m,
                         const struct words *w)
{
    const int gpu = w->gpu;
    if (m->p2p_Bps > 0) {
        const char *pp = gpu ? "NCCL ping-pong (ncclSend / ncclRecv) between GPUs 0 and 1"
                             : "MPI ping-pong between ranks 0 and 1";
        set_fmt(src, "intra_node.bandwidth_Bps",
                "%s: %s at the pipeline's message (one "
                "activation, %.0f bytes of fp32, %.4g s one way): B = S / (t(S) - "
                "latency) = %.4g B/s, written as measured: the schedule counts the "
                "run's element size, %.0f bytes for the %s executor's runs (simulate "
                "them with --fp32) (%.4g B/s at the largest message)",
                w->who, pp, m->p2p_msg_bytes, m->p2p_msg_s, t->intra_bandwidth_Bps,
                t->calib_act_bytes, w->backend, m->p2p_large_Bps);
        set_fmt(src, "intra_node.latency_s",
                "%s: %s, half the round trip of an 8-byte message", w->who, pp);
    }
    if (m->keep_peak)
        set_fmt(src, "calibration.gemm_flops", "%s: %s", w->who, w->gemm);
    else
        set_fmt(src, "calibration.gemm_flops", "%s: as device.peak_flops_16bit", w->who);
    set_fmt(src, "calibration.mem_Bps", "%s: as device.hbm_bandwidth_Bps", w->who);
    set_str(src, "calibration.activation_bytes",
            gpu ? "4: the cuda executor keeps and sends activations in fp32, bf16 only "
                  "for GEMM operands (kernels/cuda/ops_cuda.h); a record: predictions "
                  "take the layout's precision (--fp32 for the executor's runs)"
                : "4: the cpu executor computes and sends fp32 (exec/model/gpt.h); a "
                  "record: predictions take the layout's precision (--fp32 for the "
                  "executor's runs)");
    if (m->parts_measured) {
        const char *pre = "oc_gpt";
        set_fmt(src, "calibration.part_flops_per_s",
                "%s: %s. Rate = the FLOPs the schedule gives the op "
                "(oc_cost_sched_flops) / its measured time; attn_recompute is the "
                "selective recompute of the scores (%s_attn_scores on the %s kernels)",
                w->who, m->parts_what, pre, w->backend);
        set_fmt(src, "calibration.part_s_per_token",
                "%s: %s_embed_fwd and _bwd as in calibration.part_flops_per_s, "
                "seconds / (micro-batch * seq) tokens",
                w->who, pre);
        set_fmt(src, "calibration.optimizer_s_per_param",
                "%s: %s over the shard's whole arena as in "
                "calibration.part_flops_per_s, seconds / parameters",
                w->who, "oc_params_adamw");
    }
    if (m->allreduce_bytes > 0)
        set_fmt(src, "_allreduce",
                "%s: %s (float sum) of %.0f bytes: busbw %.4g B/s "
                "(nccl-tests: algbw * 2(n-1)/n); smallest all-reduce %.3g s",
                w->who, gpu ? "ncclAllReduce" : "MPI_Allreduce", m->allreduce_bytes,
                m->allreduce_busbw_Bps, m->allreduce_latency_s);
    set_fmt(src, "_base", "fields not listed here are those of topology %s", base->name);
}

int oc_calib_write_topology(const char *path, const struct oc_topology *base,
                            const struct oc_calib_measured *m, struct oc_status *st)
{
    struct oc_topology t;
    if (oc_calib_topology(base, m, &t, st) != 0)
        return -1;
    struct words w;
    words_init(&w, m);
    json_t *root = topology_json(&t, base, m, &w);
    json_t *src = json_object();
    sources_device(src, &t, base, m, &w);
    sources_rest(src, &t, base, m, &w);
    json_object_set_new(root, "sources", src);
    int rc = 0;
    /* Whole or not at all (outfile.h): the text as json_dump_file writes it. */
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
    OC_ASSERT(text);
    rc = oc_outfile_write_all(path, text, strlen(text), st);
    free(text);
    json_decref(root);
    return rc;
}
