/* reserve.c: the per-GPU memory reserve (see reserve.h). Every constant
 * carries its source; where no document gives a number the constant says
 * it is an assumption, and docs/guide.md ("Memory reserve") repeats it. */
#define _POSIX_C_SOURCE 200809L
#include "reserve.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

#define MiB 1048576.0

/* CUDA context, per process and GPU: an assumption, 512 MiB. No NVIDIA
 * document states a size: it grows with the kernels loaded (lazy loading,
 * CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2 per the CUDA C++
 * Programming Guide, "Lazy Loading", loads them on first use). Measure it
 * as nvidia-smi's memory of a process that created its context and loaded
 * the training libraries, and pass the total with --reserve BYTES. */
#define OC_RESERVE_CUDA_CONTEXT_BYTES (512.0 * MiB)

/* NCCL, from its environment-variable documentation (docs.nvidia.com/
 * deeplearning/nccl/user-guide/docs/env.html): NCCL_BUFFSIZE, "the size
 * of the buffer used by NCCL when communicating data between pairs of
 * GPUs", default 4194304 (4 MiB), per channel and connection, for the
 * Simple protocol. The LL and LL128 protocols have buffers of their own,
 * sized in NCCL's source (src/include/device.h): DEFAULT_LL_BUFFSIZE =
 * NCCL_LL_LINES_PER_THREAD (8) x NCCL_LL_MAX_NTHREADS (512) x NCCL_STEPS
 * (8) x 16-byte lines = 524288; DEFAULT_LL128_BUFFSIZE =
 * NCCL_LL128_ELEMS_PER_THREAD (120) x NCCL_LL128_MAX_NTHREADS (640) x
 * NCCL_STEPS (8) x 8 bytes = 4915200. */
#define NCCL_BUFFSIZE_BYTES 4194304.0
#define NCCL_LL_BUFFSIZE_BYTES 524288.0
#define NCCL_LL128_BUFFSIZE_BYTES 4915200.0
/* Channels of a collective communicator: 32, NCCL's MAXCHANNELS (the
 * ceiling of NCCL_MAX_NCHANNELS in the same documentation), which NVLink
 * nodes reach (an H100 node's NCCL_DEBUG=INFO log reports "32 coll
 * channels"); an upper estimate where NCCL picks fewer (one NIC). */
#define NCCL_COLL_CHANNELS 32.0
/* Point-to-point channels per remote peer: NCCL_NCHANNELS_PER_NET_PEER,
 * default 2 (same documentation); pipeline neighbours sit on other nodes
 * in Megatron's rank order. Point-to-point uses the Simple protocol. */
#define NCCL_P2P_CHANNELS 2.0

/* cuBLAS workspace: the cuBLAS documentation (cublasSetWorkspace())
 * recommends 32 MiB on Hopper and 4 MiB on earlier architectures;
 * Transformer Engine sizes its cuBLASLt workspace the same way
 * (get_cublas_workspace_size_bytes). Two: PyTorch's handle and TE's. */
#define CUBLAS_WORKSPACE_HOPPER_BYTES (32.0 * MiB)
#define CUBLAS_WORKSPACE_OTHER_BYTES (4.0 * MiB)
#define CUBLAS_WORKSPACES 2.0

/* One collective communicator, per rank: a ring connects every rank to
 * its successor, and each connection's buffers (Simple, LL128, LL) live
 * on one of its two ends (the receiver for NCCL's P2P and NET
 * transports), so a rank holds one connection's buffers per channel.
 * Trees and NVLS would add more; not counted. */
static double coll_comm_bytes(void)
{
    return NCCL_COLL_CHANNELS *
           (NCCL_BUFFSIZE_BYTES + NCCL_LL128_BUFFSIZE_BYTES + NCCL_LL_BUFFSIZE_BYTES);
}

double oc_reserve_nccl_bytes(const struct oc_model *m, const struct oc_layout *l,
                             int64_t stage, int64_t *ncomm)
{
    const int64_t cp = l->cp > 1 ? l->cp : 1;
    int64_t n = 0;
    n += l->tp > 1;                 /* TP */
    n += cp > 1;                    /* CP */
    n += l->dp * cp > 1;            /* DP (with CP: Megatron's DP x CP group) */
    n += l->tp * l->pp > 1;         /* model parallel: the gradient norm */
    n += l->pp > 1 && m->tie_word_embeddings &&
         (stage == 0 || stage == l->pp - 1); /* embedding group */
    /* pipeline neighbours: interleaving wraps stage p-1 to stage 0 */
    int64_t peers = 0;
    if (l->pp > 1) {
        const int wrap = l->schedule == OC_SCHED_INTERLEAVED && l->vchunks > 1;
        peers = (stage > 0 || wrap) + (stage < l->pp - 1 || wrap);
        if (l->pp == 2 && wrap)
            peers = 1; /* the one other stage is both neighbours */
    }
    if (ncomm)
        *ncomm = n;
    return (double)n * coll_comm_bytes() +
           (double)peers * NCCL_P2P_CHANNELS * NCCL_BUFFSIZE_BYTES;
}

int oc_reserve_is_hopper(const struct oc_device *d)
{
    static const char *const names[] = {"H100", "H200", "H800", "GH200"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strstr(d->name, names[i]))
            return 1;
    return 0;
}

void oc_reserve_stage(const struct oc_model *m, const struct oc_layout *l,
                      const struct oc_topology *t, int64_t stage, double peak_bytes,
                      struct oc_reserve *out)
{
    memset(out, 0, sizeof *out);
    const struct oc_reserve_setting *s = &t->reserve;
    if (s->mode == OC_RESERVE_FIXED) {
        out->total_bytes = s->bytes;
        return;
    }
    out->cuda_context_bytes = OC_RESERVE_CUDA_CONTEXT_BYTES;
    out->nccl_bytes = oc_reserve_nccl_bytes(m, l, stage, &out->nccl_communicators);
    out->cublas_bytes = CUBLAS_WORKSPACES * (oc_reserve_is_hopper(&t->device)
                                                 ? CUBLAS_WORKSPACE_HOPPER_BYTES
                                                 : CUBLAS_WORKSPACE_OTHER_BYTES);
    out->fragmentation_bytes = s->fragmentation * (peak_bytes > 0 ? peak_bytes : 0);
    out->total_bytes = out->cuda_context_bytes + out->nccl_bytes + out->cublas_bytes +
                       out->fragmentation_bytes;
}

void oc_reserve_layout(const struct oc_model *m, const struct oc_layout *l,
                       const struct oc_topology *t, double peak_bytes,
                       struct oc_reserve *out)
{
    oc_reserve_stage(m, l, t, 0, peak_bytes, out);
    for (int64_t s = 1; s < l->pp; s++) {
        struct oc_reserve r;
        oc_reserve_stage(m, l, t, s, peak_bytes, &r);
        if (r.total_bytes > out->total_bytes)
            *out = r;
    }
}

int oc_reserve_fits(const struct oc_topology *t, double peak_bytes, double reserve_bytes)
{
    return peak_bytes + reserve_bytes <= t->device.memory_bytes;
}

int oc_reserve_parse_bytes(const char *s, double *out, struct oc_status *st)
{
    static const struct {
        const char *suffix;
        double scale;
    } units[] = {{"", 1},           {"B", 1},          {"kB", 1e3},        {"KB", 1e3},
                 {"MB", 1e6},       {"GB", 1e9},       {"TB", 1e12},       {"KiB", 1024.0},
                 {"MiB", MiB},      {"GiB", 1024 * MiB}, {"TiB", 1024 * 1024 * MiB}};
    char q[OC_QUOTE_MAX];
    errno = 0;
    char *end;
    const double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v) || v < 0)
        return oc_fail(st, "'%s' is not a size (bytes, or a number with kB, MB, GB, TB, "
                           "KiB, MiB, GiB or TiB)", oc_quote(q, sizeof q, s));
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].suffix) == 0) {
            *out = v * units[i].scale;
            if (*out > 1e15)
                return oc_fail(st, "'%s' is out of range (at most 1 PB)",
                               oc_quote(q, sizeof q, s));
            return 0;
        }
    char q2[OC_QUOTE_MAX];
    return oc_fail(st, "'%s': unknown unit '%s' (known: B, kB, MB, GB, TB, KiB, MiB, GiB, "
                       "TiB)", oc_quote(q, sizeof q, s), oc_quote(q2, sizeof q2, end));
}
