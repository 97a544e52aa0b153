/* reserve.h: the memory a training process keeps on each GPU besides the
 * model's tensors (which core/memory.h counts): the CUDA context, NCCL's
 * buffers for every communicator the rank belongs to, cuBLAS's workspaces
 * and the caching allocator's fragmentation. "Fits" everywhere in ocsim
 * means peak + reserve <= device memory (oc_reserve_fits).
 *
 *   struct oc_reserve r;
 *   oc_reserve_layout(&model, &layout, &topo, peak_bytes, &r);
 *   printf("reserve %.1f GB, margin %.1f GB\n", r.total_bytes / 1e9,
 *          (topo.device.memory_bytes - peak_bytes - r.total_bytes) / 1e9);
 *
 * The setting is topo.reserve (topology.h; the commands' --reserve and
 * --fragmentation, cli/options.h): OC_RESERVE_AUTO sums the terms below,
 * OC_RESERVE_FIXED takes its bytes as the whole reserve (--reserve 6GB;
 * --reserve 0 is the old verdict, the tensors alone).
 *
 * The terms of OC_RESERVE_AUTO, per GPU (each constant with its source in
 * reserve.c; docs/guide.md, "Memory reserve"):
 * - CUDA context: OC_RESERVE_CUDA_CONTEXT_BYTES, an assumption (no vendor
 *   document gives a size; it depends on the driver, the GPU and how many
 *   kernels are loaded).
 * - NCCL: per collective communicator of more than one rank, channels x
 *   (Simple + LL128 + LL buffer) for the one ring connection whose buffers
 *   a rank holds; per pipeline neighbour, the point-to-point channels x
 *   NCCL_BUFFSIZE. Communicators (Megatron-LM's parallel_state): TP, CP,
 *   DP (DP x CP with context parallelism), the model-parallel group (TP x
 *   PP, gradient-norm all-reduce), the embedding group (first and last
 *   stage, tied embeddings only), the pipeline neighbours.
 * - cuBLAS: two workspaces (PyTorch's cuBLAS handle and Transformer
 *   Engine's cuBLASLt), the size the cuBLAS documentation recommends:
 *   32 MiB on Hopper, 4 MiB on earlier GPUs.
 * - Fragmentation: topo.reserve.fragmentation x the peak of the tensors.
 * The worst stage's reserve is the layout's (stages differ only in the
 * pipeline neighbours and the embedding group).
 */
#ifndef OC_RESERVE_H
#define OC_RESERVE_H

#include <stdint.h>

#include "layout.h"
#include "model.h"
#include "topology.h"

/* The default of --fragmentation (an assumption; reserve.c, docs). */
#define OC_RESERVE_FRAGMENTATION_DEFAULT 0.10

struct oc_reserve {
    double cuda_context_bytes;
    double nccl_bytes;
    int64_t nccl_communicators; /* collective ones (not the p2p neighbours) */
    double cublas_bytes;
    double fragmentation_bytes;
    double total_bytes;         /* the sum, or the fixed setting */
};

/* NCCL's buffers of one rank of `stage` (bytes), and in *ncomm (may be
 * NULL) how many collective communicators it counts. */
double oc_reserve_nccl_bytes(const struct oc_model *m, const struct oc_layout *l,
                             int64_t stage, int64_t *ncomm);
/* The reserve of one rank of `stage` whose tensors peak at peak_bytes. */
void oc_reserve_stage(const struct oc_model *m, const struct oc_layout *l,
                      const struct oc_topology *t, int64_t stage, double peak_bytes,
                      struct oc_reserve *out);
/* The largest stage reserve of the layout (the layout's reserve). */
void oc_reserve_layout(const struct oc_model *m, const struct oc_layout *l,
                       const struct oc_topology *t, double peak_bytes,
                       struct oc_reserve *out);
/* 1 when peak + reserve fits the device. */
int oc_reserve_fits(const struct oc_topology *t, double peak_bytes, double reserve_bytes);
/* Whether the device is a Hopper GPU (H100, H200, H800, GH200) by name. */
int oc_reserve_is_hopper(const struct oc_device *d);
/* "6GB", "512MiB", "6e9", "0" -> bytes (SI suffixes k M G T with B,
 * binary KiB MiB GiB TiB); -1 with st->msg on anything else. */
int oc_reserve_parse_bytes(const char *s, double *out, struct oc_status *st);

#endif
