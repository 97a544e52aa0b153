/* test_kernels_llama.c: kernels_gpu's comparisons of the Llama block's
 * kernels (RMSNorm, SwiGLU, rotary embedding) between the cuda and the cpu
 * kernel tables, with test_kernels.c's helpers and tolerances
 * (test_kernels.h); the grouped-query attention cases are with the other
 * attention checks in test_kernels.c.
 */
#include <math.h>
#include <stdlib.h>

#include "test_kernels.h"

/* ------------------------------------------------------------------ */
/* The Llama block: RMSNorm, SwiGLU, rotary embedding                   */

static void test_rmsnorm(void)
{
    const int64_t N = 67, C = 200;
    const float eps = 1e-5f;
    struct pair x = prand(N * C, 2, 0.5f), w = prand(C, 0.5f, 1);
    struct pair out = pout(N * C), rstd = pout(N);
    CPU.ops->rmsnorm_fwd(CPU.ctx, out.h, rstd.h, x.h, w.h, N, C, eps);
    GPU.ops->rmsnorm_fwd(GPU.ctx, out.d, rstd.d, x.d, w.d, N, C, eps);
    pcheck("rmsnorm_fwd out", &out, TOL_F32);
    pcheck("rmsnorm_fwd rstd", &rstd, TOL_F32);
    psync(&rstd); /* backward from the cpu's rstd; dinp and dw add */
    struct pair dy = prand(N * C, 1, 0), g = prand(N * C, 1, 0), gw = prand(C, 1, 0);
    CPU.ops->rmsnorm_bwd(CPU.ctx, g.h, gw.h, dy.h, x.h, w.h, rstd.h, N, C);
    GPU.ops->rmsnorm_bwd(GPU.ctx, g.d, gw.d, dy.d, x.d, w.d, rstd.d, N, C);
    pcheck("rmsnorm_bwd dinp (+=)", &g, TOL_F32);
    pcheck("rmsnorm_bwd dw (+=)", &gw, TOL_F32);
    pfree(&gw), pfree(&g), pfree(&dy), pfree(&rstd), pfree(&out), pfree(&w), pfree(&x);
}

static void test_swiglu(void)
{
    const int64_t N = 53, f = 177;
    struct pair h = prand(N * 2 * f, 6, 0), out = pout(N * f);
    struct pair dout = prand(N * f, 1, 0), dh = pout(N * 2 * f);
    CPU.ops->swiglu_fwd(CPU.ctx, out.h, h.h, N, f);
    GPU.ops->swiglu_fwd(GPU.ctx, out.d, h.d, N, f);
    pcheck("swiglu_fwd", &out, TOL_F32);
    CPU.ops->swiglu_bwd(CPU.ctx, dh.h, dout.h, h.h, N, f);
    GPU.ops->swiglu_bwd(GPU.ctx, dh.d, dout.d, h.d, N, f);
    pcheck("swiglu_bwd dgate | dup", &dh, TOL_F32);
    pfree(&dh), pfree(&dout), pfree(&out), pfree(&h);
}

/* Frequencies as Llama's (theta 10000) on a GQA qkv; positions up to 99
 * turn by up to 99 rad, where cosf and sinf of CUDA and glibc may differ
 * by an ulp or two. */
static void test_rope(void)
{
    const int64_t B = 2, T = 100, nh = 6, nkv = 2, HS = 24;
    struct oc_rope r = {.pairs = HS / 2};
    for (int64_t i = 0; i < r.pairs; i++)
        r.inv_freq[i] = (float)(1.0 / pow(10000.0, (double)(2 * i) / (double)HS));
    const int64_t n = B * T * nkv * (nh / nkv + 2) * HS;
    struct pair qkv = prand(n, 1, 0);
    CPU.ops->rope_fwd(CPU.ctx, qkv.h, &r, B, T, nh, nkv, HS);
    GPU.ops->rope_fwd(GPU.ctx, qkv.d, &r, B, T, nh, nkv, HS);
    pcheck("rope_fwd (q, k turned; v as it was)", &qkv, TOL_F32);
    psync(&qkv);
    CPU.ops->rope_bwd(CPU.ctx, qkv.h, &r, B, T, nh, nkv, HS);
    GPU.ops->rope_bwd(GPU.ctx, qkv.d, &r, B, T, nh, nkv, HS);
    pcheck("rope_bwd (turned back)", &qkv, TOL_F32);
    pfree(&qkv);
}

void test_kernels_llama(void)
{
    test_rmsnorm();
    test_swiglu();
    test_rope();
}
