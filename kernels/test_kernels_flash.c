/* test_kernels_flash.c: the cuda table's fused attention (flash_attn_fwd,
 * flash_attn_bwd: kernels/cuda/flash_attention.cu) against the cpu
 * table's (kernels/cpu/attention_flash_cpu.c, the reference); part of
 * kernels_gpu (test_kernels.c runs it, only where a GPU is).
 *
 * Shapes: T across several 16-row blocks and 32-row tiles with tails (37,
 * 45, 100, 129) and T = 1; HS 16, 64, 128 (Llama's), 256 (the largest; its
 * forward and backward take more than 48 KiB of shared memory, as the
 * backward does from HS 128); g = nh/nkv = 1, 2 and 3; B 1 and 2. Inputs:
 * qkv uniform on [-2, 2) (scores of std ~1.3, so the row max moves across
 * tiles and the online rescaling matters), dy on [-1, 1).
 *
 * Tolerances (test_kernels.c's measure, max error / max |reference|):
 *   TOL_F32 (1e-5) in fp32: the same products, sums in another order
 *     (the row max, l and D by butterflies, y scaled by 1/l at the end
 *     instead of each p), CUDA's expf and logf within 2 ulp;
 *   TOL_F32 in bf16 too: the cpu table runs on the bf16 roundings of qkv
 *     and dy while the device keeps the unrounded values and rounds them
 *     itself as it stages them, so both multiply the same operands. A
 *     kernel that skipped or botched the rounding would be off by ~1e-3.
 * The backward runs from the cpu's y and lse, so that it is checked alone;
 * its outputs start as NaN on the device, so every dq, dk, dv must be
 * written. Two runs of the backward with g = 2 must agree bit for bit (no
 * atomics: the g heads of a KV group add up in one block, in order).
 */
#include <stdio.h>
#include <stdlib.h>

#include "test_kernels.h"

struct flash_shape {
    int64_t B, T, nh, nkv, HS;
};

static const struct flash_shape SHAPES[] = {
    {2, 37, 4, 2, 16},   /* g 2; 2 blocks + 5 rows, 1 tile + 5 rows */
    {2, 100, 2, 2, 64},  /* g 1: the classic layout (B,T,nh,3,HS) */
    {1, 129, 4, 2, 128}, /* Llama's head size, 5 key tiles, 1 row past 4 */
    {2, 45, 6, 2, 128},  /* g 3, B 2 at HS 128 */
    {1, 50, 2, 1, 256},  /* the largest head size */
    {2, 1, 2, 1, 64},    /* one token: y = v, lse = the one score */
};
enum { NSHAPES = sizeof SHAPES / sizeof SHAPES[0] };
static const struct flash_shape REPEAT = {2, 70, 4, 2, 64}; /* flash_repeat's */

/* "what B2 T37 nh4/2 HS16 f32" */
static void shape_name(char *name, size_t n, const char *what,
                       const struct flash_shape *s, int bf16)
{
    snprintf(name, n, "%s B%lld T%lld nh%lld/%lld HS%lld %s", what, (long long)s->B,
             (long long)s->T, (long long)s->nh, (long long)s->nkv, (long long)s->HS,
             bf16 ? "bf16" : "f32");
}

/* The host side of p rounded to bf16; the device keeps the unrounded
 * values. */
static void round_host(struct pair *p)
{
    for (int64_t i = 0; i < p->n; i++)
        p->h[i] = f32_of(bf16_of(p->h[i]));
}

static int64_t qkv_floats(const struct flash_shape *s)
{
    return s->B * s->T * s->nkv * (s->nh / s->nkv + 2) * s->HS;
}

/* One shape on the fp32 (bf16 0) or bf16 (1) cuda table. */
static void flash_one(const struct flash_shape *s, int bf16)
{
    const struct oc_kernels *G = bf16 ? &GPU16 : &GPU;
    const int64_t nq = qkv_floats(s), ny = s->B * s->T * s->nh * s->HS;
    const int64_t nl = s->B * s->nh * s->T;
    char name[96];
    struct pair qkv = prand(nq, 2, 0), dy = prand(ny, 1, 0);
    struct pair y = pout(ny), lse = pout(nl), dq = pout(nq);
    if (bf16)
        round_host(&qkv), round_host(&dy);

    CPU.ops->flash_attn_fwd(CPU.ctx, y.h, lse.h, qkv.h, s->B, s->T, s->nh, s->nkv, s->HS);
    G->ops->flash_attn_fwd(G->ctx, y.d, lse.d, qkv.d, s->B, s->T, s->nh, s->nkv, s->HS);
    shape_name(name, sizeof name, "flash_fwd y  ", s, bf16);
    pcheck(name, &y, TOL_F32);
    shape_name(name, sizeof name, "flash_fwd lse", s, bf16);
    pcheck(name, &lse, TOL_F32);

    psync(&y), psync(&lse); /* the backward from the cpu's forward */
    CPU.ops->flash_attn_bwd(CPU.ctx, dq.h, qkv.h, y.h, lse.h, dy.h, s->B, s->T, s->nh,
                            s->nkv, s->HS);
    G->ops->flash_attn_bwd(G->ctx, dq.d, qkv.d, y.d, lse.d, dy.d, s->B, s->T, s->nh,
                           s->nkv, s->HS);
    shape_name(name, sizeof name, "flash_bwd dqkv", s, bf16);
    pcheck(name, &dq, TOL_F32);
    pfree(&dq), pfree(&lse), pfree(&y), pfree(&dy), pfree(&qkv);
}

/* The backward twice on the device: the same bits. */
static void flash_repeat(void)
{
    const struct flash_shape s = REPEAT;
    const int64_t nq = qkv_floats(&s), ny = s.B * s.T * s.nh * s.HS;
    struct pair qkv = prand(nq, 2, 0), dy = prand(ny, 1, 0);
    struct pair y = pout(ny), lse = pout(s.B * s.nh * s.T), dq = pout(nq);
    GPU16.ops->flash_attn_fwd(GPU16.ctx, y.d, lse.d, qkv.d, s.B, s.T, s.nh, s.nkv, s.HS);
    GPU16.ops->flash_attn_bwd(GPU16.ctx, dq.d, qkv.d, y.d, lse.d, dy.d, s.B, s.T, s.nh,
                              s.nkv, s.HS);
    down(dq.h, dq.d, (size_t)nq * sizeof(float));
    GPU16.ops->zero(GPU16.ctx, dq.d, nq);
    GPU16.ops->flash_attn_bwd(GPU16.ctx, dq.d, qkv.d, y.d, lse.d, dy.d, s.B, s.T, s.nh,
                              s.nkv, s.HS);
    pcheck("flash_bwd twice: the same bits (g 2, bf16)", &dq, TOL_EXACT);
    pfree(&dq), pfree(&lse), pfree(&y), pfree(&dy), pfree(&qkv);
}

void test_flash_attention(void)
{
    /* the backward's scratch (B*nh*T floats): B, T, nh at their largest */
    struct oc_kernel_sizes sz = {.att_B = REPEAT.B, .att_T = REPEAT.T, .att_nh = REPEAT.nh};
    for (int i = 0; i < NSHAPES; i++) {
        sz.att_B = SHAPES[i].B > sz.att_B ? SHAPES[i].B : sz.att_B;
        sz.att_T = SHAPES[i].T > sz.att_T ? SHAPES[i].T : sz.att_T;
        sz.att_nh = SHAPES[i].nh > sz.att_nh ? SHAPES[i].nh : sz.att_nh;
    }
    OC_ASSERT(GPU.ops->reserve(GPU.ctx, &sz, NULL) == 0);
    OC_ASSERT(GPU16.ops->reserve(GPU16.ctx, &sz, NULL) == 0);
    for (int i = 0; i < NSHAPES; i++)
        for (int bf16 = 0; bf16 <= 1; bf16++)
            flash_one(&SHAPES[i], bf16);
    flash_repeat();
}
