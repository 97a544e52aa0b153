/* backend_cuda_mem.c: the cuda backend's memory (backend_cuda.c has the
 * backend, backend_cuda_priv.h its files): stream-ordered allocations on
 * the compute stream, copies, the parameter arena moved to the device
 * (params_adopt / params_release), the device-memory high-water mark, and
 * the notes that tell the kernels' bf16 copy of the weights to recast.
 *
 * What it is not: the pool's set-up (backend_cuda.c), the kernels' own
 * scratch (kernels/cuda/ops_cuda.c), or what the arena holds (params.c).
 */
#include "backend_cuda_priv.h"

#include <stdint.h>
#include <stdlib.h>

#include "check.h"

/* ------------------------------------------------------------------ */
/* Accounting and the kernels' bf16 copy of the weights                 */

void oc_cuda_be_count_malloc(struct oc_cuda_be *x, double bytes)
{
    x->malloc_bytes += bytes;
    if (x->malloc_bytes > x->malloc_high_bytes)
        x->malloc_high_bytes = x->malloc_bytes;
}

/* The fp32 weights changed: the kernels' bf16 copy must be recast. */
void oc_cuda_be_weights_changed(struct oc_cuda_be *x)
{
    x->kt.ops->weights_changed(x->kt.ctx);
}

/* A write to the fp32 weights outside AdamW and the all-gather (upload,
 * copy, zero into p->w): the bf16 copy must be recast. */
static void note_write(struct oc_cuda_be *x, const void *dst, int64_t bytes)
{
    if (!x->p)
        return;
    const uintptr_t w = (uintptr_t)x->p->w, d = (uintptr_t)dst;
    const uintptr_t w_end = w + (uintptr_t)x->p->n * sizeof(float);
    if (d < w_end && d + (uintptr_t)bytes > w)
        oc_cuda_be_weights_changed(x);
}

/* ------------------------------------------------------------------ */
/* Memory                                                               */

void *oc_cuda_be_alloc(struct oc_backend *b, int64_t bytes)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    OC_ASSERT(bytes >= 0);
    void *p = NULL;
    /* never NULL (backend.h): a zero-byte request still gets an address */
    cudaCheck(cudaMallocAsync(&p, (size_t)(bytes > 0 ? bytes : 1), x->compute));
    OC_ASSERT(p);
    return p;
}

void oc_cuda_be_free(struct oc_backend *b, void *p)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    if (p)
        cudaCheck(cudaFreeAsync(p, x->compute));
}

void oc_cuda_be_zero(struct oc_backend *b, void *p, int64_t bytes)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    OC_ASSERT(bytes >= 0);
    if (bytes == 0)
        return;
    note_write(x, p, bytes);
    cudaCheck(cudaMemsetAsync(p, 0, (size_t)bytes, x->compute));
}

void oc_cuda_be_copy(struct oc_backend *b, void *dst, const void *src,
                     int64_t bytes)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    OC_ASSERT(bytes >= 0);
    if (bytes == 0)
        return;
    note_write(x, dst, bytes);
    cudaCheck(cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDeviceToDevice,
                              x->compute));
}

void oc_cuda_be_upload(struct oc_backend *b, void *dst, const void *host,
                       int64_t bytes)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    OC_ASSERT(bytes >= 0);
    if (bytes == 0)
        return;
    note_write(x, dst, bytes);
    cudaCheck(cudaMemcpyAsync(dst, host, (size_t)bytes, cudaMemcpyHostToDevice,
                              x->compute));
    cudaCheck(cudaStreamSynchronize(x->compute));
}

void oc_cuda_be_download(struct oc_backend *b, void *host, const void *src,
                         int64_t bytes)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    OC_ASSERT(bytes >= 0);
    if (bytes == 0)
        return;
    cudaCheck(cudaMemcpyAsync(host, src, (size_t)bytes, cudaMemcpyDeviceToHost,
                              x->compute));
    cudaCheck(cudaStreamSynchronize(x->compute));
}

/* params.c allocates w, g, m and v as four host blocks (oc_xmalloc /
 * oc_xcalloc) and oc_params_free frees each with free(), which accepts
 * NULL: after params_release it frees nothing of ours. w and g are the
 * whole arena (n floats); m and v the optimizer states' nopt floats, this
 * DP rank's slices under ZeRO-1 (params.h): the fp32 weights stay whole
 * because they are the compute weights (the norms, embeddings and biases
 * read them, the bf16 GEMM copy is cast from them, the all-gather fills
 * them), and there is no separate master copy to shard. */
static size_t arena_bytes(const struct oc_params *p)
{
    return (size_t)(2 * p->n + 2 * (p->nopt > 0 ? p->nopt : 1)) * sizeof(float);
}

int oc_cuda_be_params_adopt(struct oc_backend *b, struct oc_params *p,
                            struct oc_status *st)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    OC_ASSERT(!x->p && p && p->w && p->g && p->m && p->v && p->n > 0);
    cudaCheck(cudaSetDevice(x->device));
    const size_t bytes = (size_t)p->n * sizeof(float);
    const size_t opt_bytes = (size_t)(p->nopt > 0 ? p->nopt : 1) * sizeof(float);
    const size_t size[4] = {bytes, bytes, opt_bytes, opt_bytes};
    float *dev[4] = {NULL, NULL, NULL, NULL}; /* w, g, m, v */
    for (int k = 0; k < 4; k++) {
        cudaError_t e = cudaMalloc((void **)&dev[k], size[k]);
        if (e == cudaErrorMemoryAllocation) {
            /* not sticky (as ops_cuda.c's device_alloc): clear, report */
            (void)cudaGetLastError();
            for (int j = 0; j < k; j++)
                cudaCheck(cudaFree(dev[j]));
            return oc_fail(st, "cuda: out of device memory for the parameter "
                               "arena (%.1f MiB)",
                           (double)arena_bytes(p) / (1024.0 * 1024.0));
        }
        cudaCheck(e);
    }
    float *dw = dev[0], *dg = dev[1], *dm = dev[2], *dv = dev[3];
    cudaCheck(cudaMemcpyAsync(dw, p->w, bytes, cudaMemcpyHostToDevice, x->compute));
    cudaCheck(cudaMemsetAsync(dg, 0, bytes, x->compute));
    cudaCheck(cudaMemsetAsync(dm, 0, opt_bytes, x->compute));
    cudaCheck(cudaMemsetAsync(dv, 0, opt_bytes, x->compute));
    cudaCheck(cudaStreamSynchronize(x->compute));

    /* The kernels' bf16 mirror is made of the device arena; on failure p
     * gets its host arrays back, unchanged. */
    float *hw = p->w, *hg = p->g, *hm = p->m, *hv = p->v;
    p->w = dw;
    p->g = dg;
    p->m = dm;
    p->v = dv;
    x->p = p;
    if (oc_cuda_kernels_weights(&x->kern, p->w, p->n, st) != 0) {
        p->w = hw;
        p->g = hg;
        p->m = hm;
        p->v = hv;
        x->p = NULL;
        cudaCheck(cudaFree(dv));
        cudaCheck(cudaFree(dm));
        cudaCheck(cudaFree(dg));
        cudaCheck(cudaFree(dw));
        return -1;
    }
    free(hv);
    free(hm);
    free(hg);
    free(hw);
    oc_cuda_be_count_malloc(x, (double)arena_bytes(p));
    return 0;
}

void oc_cuda_be_params_release(struct oc_backend *b, struct oc_params *p)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    if (!x->p)
        return;
    OC_ASSERT(p == x->p);
    /* the arena may still be in use by enqueued work */
    cudaCheck(cudaStreamSynchronize(x->compute));
    x->malloc_bytes -= (double)arena_bytes(p);
    (void)oc_cuda_kernels_weights(&x->kern, NULL, 0, NULL); /* frees the copy */
    cudaCheck(cudaFree(p->v));
    cudaCheck(cudaFree(p->m));
    cudaCheck(cudaFree(p->g));
    cudaCheck(cudaFree(p->w));
    p->w = p->g = p->m = p->v = NULL;
    x->p = NULL;
}

double oc_cuda_be_mem_peak_bytes(struct oc_backend *b)
{
    struct oc_cuda_be *x = oc_cuda_be_of(b);
    uint64_t high = 0; /* cuuint64_t (cuda.h) */
    cudaCheck(cudaMemPoolGetAttribute(x->pool, cudaMemPoolAttrUsedMemHigh, &high));
    /* the arena and cuBLAS's workspace, and the kernels' bf16 weights and
     * scratch: all live from params_adopt to the end of the run */
    return (double)high + x->malloc_high_bytes + x->kern.bytes_high;
}
