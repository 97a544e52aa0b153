/* closed_form.c: the textbook formulas of DESIGN.md as pure functions, and a
 * step-time estimate built from them (see closed_form.h).
 *
 * The estimate assumes what the formulas assume: transformer stages that
 * differ only in their layer count (first/last) and in the embedding and
 * LM head of the first and last stage, an uncontended ring per collective, TP and pipeline communication on the critical path,
 * and DP gradient reduction after the last backward (or overlapped with
 * the last micro-batch's backward). The simulator models more.
 *
 * Size: about 900 lines, over the ~800 guideline since issue 13's terms
 * (DP buckets, CP ring, TP and parameter-gather overlap) went into the
 * step estimate. The seam: the formulas (the first ~600 lines, pure
 * functions of their arguments) stay; the step estimate (dp_exposed_time_s
 * onwards: oc_cf_step and the helpers only it calls) would move to
 * closed_form_step.c. Not split in the tenth session, for want of time to
 * re-run the closed-form and cross-check tests after the move.
 */
#include "closed_form.h"

#include "tp_overlap.h"

#include "compress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "memory.h"
#include "nccl_model.h"
#include "placement.h"
#include "schedule.h"
#include "schedule_bucket.h"
#include "schedule_cp.h"
#include "schedule_pgather.h"
#include "status.h"

double oc_cf_bubble_fraction(int64_t p, int64_t m, int64_t v)
{
    OC_ASSERT(p >= 1 && m >= 1 && v >= 1);
    /* Narayanan et al. 2021, section 2.2.1 (1F1B: (p-1)/m of ideal time,
     * so (p-1)/(m+p-1) of the step) and 2.2.2 (interleaved: divided by v). */
    return (double)(p - 1) / ((double)(v * m) + (double)(p - 1));
}

double oc_cf_reduce_exposed_s(double bytes, int64_t reads, double mem_Bps,
                              double hidden_s)
{
    OC_ASSERT(bytes >= 0 && reads >= 1);
    if (!(mem_Bps > 0))
        return 0;
    /* reads chunks in, one out, through memory (closed_form.h) */
    const double reduce_s = (double)(reads + 1) * bytes / mem_Bps;
    return reduce_s > hidden_s ? reduce_s - hidden_s : 0;
}

/* What the reductions of a ring's N-1 reduce-scatter steps add: each step
 * reduces a chunk of S/N that took l + S/(N*B) to arrive (closed_form.h). */
static double ring_reduce_exposed_s(int64_t n, double bytes, double bw_Bps,
                                    double lat_s, double mem_Bps)
{
    const double c = bytes / (double)n;
    return (double)(n - 1) * oc_cf_reduce_exposed_s(c, 2, mem_Bps, lat_s + c / bw_Bps);
}

double oc_cf_ring_allreduce_s(int64_t n, double bytes, double bw_Bps,
                              double lat_s, double mem_Bps)
{
    OC_ASSERT(n >= 1);
    if (n == 1)
        return 0;
    OC_ASSERT(bw_Bps > 0);
    /* Patarasuk and Yuan 2009: reduce-scatter then all-gather, each
     * N-1 steps of S/N bytes. */
    const double f = (double)(n - 1) / (double)n;
    return 2.0 * f * bytes / bw_Bps + 2.0 * (double)(n - 1) * lat_s +
           ring_reduce_exposed_s(n, bytes, bw_Bps, lat_s, mem_Bps);
}

double oc_cf_ring_allgather_s(int64_t n, double bytes, double bw_Bps,
                              double lat_s)
{
    OC_ASSERT(n >= 1);
    if (n == 1)
        return 0;
    OC_ASSERT(bw_Bps > 0);
    /* Thakur et al. 2005, ring all-gather: N-1 steps of S/N bytes. */
    const double f = (double)(n - 1) / (double)n;
    return f * bytes / bw_Bps + (double)(n - 1) * lat_s;
}

double oc_cf_ring_reducescatter_s(int64_t n, double bytes, double bw_Bps,
                                  double lat_s, double mem_Bps)
{
    /* The mirror of the all-gather: same steps, same bytes; and the
     * reductions. */
    if (n == 1)
        return 0;
    return oc_cf_ring_allgather_s(n, bytes, bw_Bps, lat_s) +
           ring_reduce_exposed_s(n, bytes, bw_Bps, lat_s, mem_Bps);
}

double oc_cf_hier_allreduce_s(const struct oc_cf_levels *v, double bytes)
{
    OC_ASSERT(v && v->per_node >= 1 && v->nodes >= 1);
    /* Mikami et al. 2018: reduce-scatter in the node, all-reduce of the
     * S/L shard across nodes, all-gather in the node (the mirror of the
     * reduce-scatter: same steps, same bytes, no reduction). */
    double t = 0;
    if (v->per_node > 1)
        t += oc_cf_ring_reducescatter_s(v->per_node, bytes, v->intra_bw_Bps,
                                        v->intra_lat_s, v->mem_Bps) +
             oc_cf_ring_allgather_s(v->per_node, bytes, v->intra_bw_Bps, v->intra_lat_s);
    if (v->nodes > 1)
        t += oc_cf_ring_allreduce_s(v->nodes, bytes / (double)v->per_node,
                                    v->inter_bw_Bps, v->inter_lat_s, v->mem_Bps);
    return t;
}

double oc_cf_hier_reducescatter_s(const struct oc_cf_levels *v, double bytes)
{
    OC_ASSERT(v && v->per_node >= 1 && v->nodes >= 1);
    /* The first half of the 2D all-reduce: S in the node, then the S/L
     * shard across nodes. */
    double t = 0;
    if (v->per_node > 1)
        t += oc_cf_ring_reducescatter_s(v->per_node, bytes, v->intra_bw_Bps,
                                        v->intra_lat_s, v->mem_Bps);
    if (v->nodes > 1)
        t += oc_cf_ring_reducescatter_s(v->nodes, bytes / (double)v->per_node,
                                        v->inter_bw_Bps, v->inter_lat_s, v->mem_Bps);
    return t;
}

double oc_cf_hier_allgather_s(const struct oc_cf_levels *v, double bytes)
{
    /* The second half in reverse: the S/L shard across nodes, then S in
     * the node; the same sums as the reduce-scatter without reductions. */
    struct oc_cf_levels free_reduce = *v;
    free_reduce.mem_Bps = 0;
    return oc_cf_hier_reducescatter_s(&free_reduce, bytes);
}

double oc_cf_pipeline_s(int64_t chunks, int64_t hops_a, double step_a_s,
                        int64_t hops_b, double step_b_s)
{
    OC_ASSERT(chunks >= 1 && hops_a >= 0 && hops_b >= 0);
    if (hops_a + hops_b == 0)
        return 0;
    const double C = (double)chunks;
    /* One kind of hop: Pjesivac-Grbovic et al. 2007, (P-1 + C-1) steps. */
    if (hops_a == 0 || hops_b == 0)
        return ((double)(hops_a + hops_b) + C - 1) * (hops_a > 0 ? step_a_s : step_b_s);
    /* Unequal hops: the first chunk crosses every hop, each later one
     * leaves the path one step of the slowest hop after the previous. */
    return (double)hops_a * step_a_s + (double)hops_b * step_b_s +
           (C - 1) * fmax(step_a_s, step_b_s);
}

double oc_cf_chain_broadcast_s(int64_t n, double bytes, int64_t chunks,
                               double bw_Bps, double lat_s)
{
    OC_ASSERT(n >= 1 && chunks >= 1);
    if (n == 1)
        return 0;
    OC_ASSERT(bw_Bps > 0);
    /* A pipeline of N-1 equal hops (oc_cf_pipeline_s). */
    const double C = (double)chunks;
    return ((double)(n - 1) + C - 1) * (lat_s + bytes / (C * bw_Bps));
}

static int64_t floor_log2(int64_t x)
{
    int64_t d = 0;
    while (x > 1) {
        x /= 2;
        d++;
    }
    return d;
}

/* Nodes below node y of a binary heap of m nodes (y included), counted
 * level by level: the descendants of y on a level form one run. */
static int64_t heap_subtree(int64_t m, int64_t y)
{
    int64_t n = 0;
    for (int64_t lo = y, hi = y; lo < m; lo = 2 * lo + 1, hi = 2 * hi + 2)
        n += (hi < m ? hi : m - 1) - lo + 1;
    return n;
}

/* The tree's tree hops charge twice their bytes when a leader takes two
 * child nodes at once over its NIC (closed_form.h). */
static double tree_fan_in(const struct oc_cf_levels *v)
{
    return v->nodes > 2 ? 2 : 1;
}

/* The time of one chunk of c bytes over a chain hop and over a tree hop
 * (0 where the group has none). */
static void tree_steps(const struct oc_cf_levels *v, double c, double *step_chain,
                       double *step_tree)
{
    *step_chain = *step_tree = 0;
    if (v->per_node > 1)
        *step_chain = v->intra_lat_s + c / v->intra_bw_Bps;
    if (v->nodes > 1)
        *step_tree = v->inter_lat_s + tree_fan_in(v) * c / v->inter_bw_Bps;
}

/* One pipelined phase (reduce up or broadcast down) over the deepest
 * path: L-1 chain hops and floor(log2 M) tree hops, chunks of S/C. */
static double tree_pipeline_s(const struct oc_cf_levels *v, double bytes,
                              int64_t chunks)
{
    double step_chain, step_tree;
    tree_steps(v, bytes / (double)chunks, &step_chain, &step_tree);
    return oc_cf_pipeline_s(chunks, v->per_node - 1, step_chain, floor_log2(v->nodes),
                            step_tree);
}

/* One store-and-forward phase (scatter down or gather up): every node's
 * chain, where the hop to member j carries the shards of members j..L-1,
 * plus the slowest path of the leaders' tree, where the hop to node y
 * carries the shards of the L members of every node below y. The path
 * to a leaf of the heap is the longest of its branch. */
static double tree_store_forward_s(const struct oc_cf_levels *v, double bytes)
{
    const int64_t L = v->per_node, M = v->nodes;
    const double shard = bytes / (double)(L * M);
    const double chain = (double)(L - 1) * v->intra_lat_s +
                         0.5 * (double)L * (double)(L - 1) * shard / v->intra_bw_Bps;
    double worst = 0;
    for (int64_t x = M - 1; x > 0 && 2 * x + 1 >= M; x--) {
        double t = 0;
        for (int64_t y = x; y > 0; y = (y - 1) / 2)
            t += v->inter_lat_s + tree_fan_in(v) * (double)(L * heap_subtree(M, y)) *
                                      shard / v->inter_bw_Bps;
        worst = fmax(worst, t);
    }
    return (L > 1 ? chain : 0) + worst;
}

/* Child nodes of node y in a binary heap of m nodes. */
static int64_t heap_children(int64_t m, int64_t y)
{
    return (2 * y + 1 < m) + (2 * y + 2 < m);
}

/* The reduce up the tree, pipelined in chunks of S/C, with the reductions
 * (closed_form.h): along the deepest path (to the last node's last member)
 * each chain hop is received by a member with one child, each tree hop by
 * a leader with its chain child and its child nodes; the chunks are paced
 * by the slowest stage, a chain member's or the root's. Without exposed
 * reductions it is the broadcast's pipeline, to the bit. */
static double tree_reduce_s(const struct oc_cf_levels *v, double bytes, int64_t chunks)
{
    const int64_t L = v->per_node, M = v->nodes;
    const double c = bytes / (double)chunks;
    double step_chain, step_tree;
    tree_steps(v, c, &step_chain, &step_tree);
    /* a leader's incoming hops arrive together: the slowest hides */
    const double leader_in = fmax(step_chain, step_tree);
    const double x_chain = L > 1 ? oc_cf_reduce_exposed_s(c, 2, v->mem_Bps, step_chain) : 0;
    const int64_t k_root = (L > 1) + heap_children(M, 0);
    const double x_root =
        M > 1 ? oc_cf_reduce_exposed_s(c, k_root + 1, v->mem_Bps, leader_in) : 0;
    double first = (double)(L - 1) * (step_chain + x_chain), x_path = 0;
    for (int64_t y = (M - 2) / 2; M > 1 && y >= 0; y = y > 0 ? (y - 1) / 2 : -1) {
        const int64_t k = (L > 1) + heap_children(M, y);
        const double x = oc_cf_reduce_exposed_s(c, k + 1, v->mem_Bps, leader_in);
        first += step_tree + x;
        x_path += x;
    }
    if (x_chain == 0 && x_root == 0 && x_path == 0)
        return tree_pipeline_s(v, bytes, chunks);
    const double pace = fmax(L > 1 ? step_chain + x_chain : 0,
                             M > 1 ? leader_in + x_root : 0);
    return first + (double)(chunks - 1) * pace;
}

static void tree_check(const struct oc_cf_levels *v, int64_t chunks)
{
    OC_ASSERT(v && v->per_node >= 1 && v->nodes >= 1 && chunks >= 1);
    OC_ASSERT(v->per_node == 1 || v->intra_bw_Bps > 0);
    OC_ASSERT(v->nodes == 1 || v->inter_bw_Bps > 0);
}

double oc_cf_tree_allreduce_s(const struct oc_cf_levels *v, double bytes,
                              int64_t chunks)
{
    tree_check(v, chunks);
    /* Reduce up, then broadcast down: two pipelined phases, equal but for
     * the reductions. */
    return tree_reduce_s(v, bytes, chunks) + tree_pipeline_s(v, bytes, chunks);
}

double oc_cf_tree_reducescatter_s(const struct oc_cf_levels *v, double bytes,
                                  int64_t chunks)
{
    tree_check(v, chunks);
    return tree_reduce_s(v, bytes, chunks) + tree_store_forward_s(v, bytes);
}

double oc_cf_tree_allgather_s(const struct oc_cf_levels *v, double bytes,
                              int64_t chunks)
{
    tree_check(v, chunks);
    return tree_store_forward_s(v, bytes) + tree_pipeline_s(v, bytes, chunks);
}

double oc_busbw_allreduce(int64_t n, double bytes, double time_s)
{
    OC_ASSERT(n >= 1 && time_s > 0);
    /* nccl-tests doc/PERFORMANCE.md: busbw = algbw * 2(n-1)/n. */
    return bytes / time_s * 2.0 * (double)(n - 1) / (double)n;
}

double oc_busbw_allgather(int64_t n, double bytes, double time_s)
{
    OC_ASSERT(n >= 1 && time_s > 0);
    /* nccl-tests doc/PERFORMANCE.md: busbw = algbw * (n-1)/n. */
    return bytes / time_s * (double)(n - 1) / (double)n;
}

double oc_cf_model_flops_per_step(const struct oc_model *m,
                                  const struct oc_layout *l)
{
    /* Chowdhery et al. 2022, appendix B: forward + backward = 3 forwards;
     * recomputation is not model FLOPs. */
    const double per_seq =
        (double)m->num_hidden_layers *
            oc_model_layer_fwd_flops(m, 1, l->seq_length) +
        oc_model_head_fwd_flops(m, 1, l->seq_length);
    return 3.0 * (double)l->global_batch * per_seq;
}

/* Which of a rank's coordinates pick its group, for group_link. */
enum cf_group { CF_TP, CF_PP, CF_DP, CF_CP };

static int64_t cf_cp(const struct oc_layout *l)
{
    return l->cp > 1 ? l->cp : 1;
}

static int64_t other_key(const struct oc_layout *l, struct oc_coord c,
                         enum cf_group g)
{
    /* The coordinates that stay fixed inside a group name the group (the
     * DP group holds the DP x CP ranks, schedule.h). */
    const int64_t cp = cf_cp(l);
    switch (g) {
    case CF_TP: return (c.pp * l->dp + c.dp) * cp + c.cp;
    case CF_PP: return (c.tp * l->dp + c.dp) * cp + c.cp;
    case CF_CP: return (c.tp * l->pp + c.pp) * l->dp + c.dp;
    case CF_DP:
    default: return c.tp * l->pp + c.pp;
    }
}

static struct oc_coord member(const struct oc_layout *l, enum cf_group g, int64_t i)
{
    struct oc_coord c = {0, 0, 0, 0};
    if (g == CF_TP)
        c.tp = i;
    else if (g == CF_PP)
        c.pp = i;
    else if (g == CF_CP)
        c.cp = i;
    else
        c.dp = i / cf_cp(l), c.cp = i % cf_cp(l);
    return c;
}

/* Per-hop bandwidth and latency of the ring (or pipeline chain) of group
 * kind g that holds rank 0, under the layout's rank order. All on one
 * node: the node fabric. Otherwise the hop between nodes bounds the ring;
 * each group with a member on a node runs its own flow through the NICs
 * at once, so the flows per node are the number of distinct groups of
 * that kind among the node's ranks (for example 8 DP rings for TP 8 on
 * 8-GPU nodes); see oc_topology_inter_Bps. Node 0 stands for every node
 * (the layouts are uniform). *across (may be NULL) says whether the ring
 * leaves the node. */
static void group_link_x(const struct oc_layout *l, const struct oc_topology *t,
                         enum cf_group g, double *bw_Bps, double *lat_s, int *across)
{
    if (across)
        *across = 0;
    const int64_t n = g == CF_TP ? l->tp : g == CF_PP ? l->pp : g == CF_CP ? cf_cp(l)
                                                                   : l->dp * cf_cp(l);
    const int64_t r0 = oc_layout_rank(l, member(l, g, 0));
    int one_node = 1;
    for (int64_t i = 1; i < n && one_node; i++)
        one_node = oc_topology_same_node(t, r0, oc_layout_rank(l, member(l, g, i)));
    if (one_node) {
        *bw_Bps = oc_topology_intra_Bps(t);
        *lat_s = t->intra_latency_s;
        return;
    }
    const int64_t world = oc_layout_world(l);
    const int64_t on_node = t->gpus_per_node < world ? t->gpus_per_node : world;
    int64_t flows = 0;
    for (int64_t r = 0; r < on_node; r++) {
        const int64_t key = other_key(l, oc_layout_coord(l, r), g);
        int seen = 0;
        for (int64_t q = 0; q < r && !seen; q++)
            seen = other_key(l, oc_layout_coord(l, q), g) == key;
        flows += !seen;
    }
    *bw_Bps = oc_topology_inter_Bps(t, flows > 0 ? flows : 1);
    *lat_s = oc_topology_inter_latency_s(t);
    if (across)
        *across = 1;
}

static void group_link(const struct oc_layout *l, const struct oc_topology *t,
                       enum cf_group g, double *bw_Bps, double *lat_s)
{
    group_link_x(l, t, g, bw_Bps, lat_s, NULL);
}

/* Pipeline (Narayanan et al. 2021, section 2.2): with uniform stages,
 * m*v chunk units of (compute + communication) stretched by the bubble:
 * (m*v + p - 1) units. Stages differ when the embedding (stage 0) and the
 * head (stage p-1) add their time, and when the stages hold different
 * numbers of layers (first/last, placement.h). With U_i the time of one
 * micro-batch on stage i (its n_i layers of layer_s, its v chunks' sends
 * of chunk_s, and the embedding or head), the pipeline runs at the pace of
 * its slowest stage:
 *   step = max_j ( m * U_j + (U_0 + ... + U_{j-1}) / vb )
 * (vb: v for the interleaved schedule, else 1). Derivation, for vb = 1:
 * stage j runs m forwards and m backwards, m * U_j, one after another; its
 * first forward waits for micro-batch 1's forwards on the stages before
 * it, and after its last backward the backwards of the stages before it
 * run; so the step is at least m * U_j + sum_{i<j} U_i for every j. It is
 * exactly that when the bounding stage j is never starved, which holds
 * when the stages after j are no slower (with uniform stages or the head's
 * stage the slowest, j = p - 1 and the form is (m*v + p - 1) * unit); when
 * a slower stage comes first (a heavy first stage), it waits for the
 * first backward from the stages after it and the step is somewhat longer
 * (test_sim_replay.c holds both cases against the simulator). The
 * interleaved schedule's fill and drain are chunks, 1/v of a stage. */
static double pipeline_time_s(const struct oc_model *m, const struct oc_layout *l,
                              int64_t mb, int64_t v, int64_t vb, double layer_s,
                              double chunk_s, double embed_s, double head_s,
                              const double *pg_s)
{
    double best_s = 0, before_s = 0, pg_before_s = 0;
    for (int64_t j = 0; j < l->pp; j++) {
        double u = (double)oc_place_stage_layers(l, m, j) * layer_s +
                   (double)v * chunk_s;
        if (oc_place_stage_has_embed(l, j))
            u += embed_s;
        if (oc_place_stage_has_head(l, j))
            u += head_s;
        /* --overlap-param-gather: what stage j's first forward loses to
         * its gathers (pg_stage_s) delays it and every stage after it */
        const double pg = pg_s ? pg_s[j] : 0.0;
        const double t = (double)mb * u + before_s / (double)vb + pg_before_s + pg;
        if (t > best_s)
            best_s = t;
        before_s += u;
        pg_before_s += pg;
    }
    return best_s;
}

/* The parameters of the largest stage (with an even split the embedding's
 * or the head's; with first/last possibly a middle one). */
static int64_t largest_stage_params(const struct oc_model *m,
                                    const struct oc_layout *l)
{
    int64_t params = 0;
    for (int64_t i = 0; i < l->pp; i++) {
        const int64_t n = oc_mem_stage_params(m, l, i);
        params = n > params ? n : params;
    }
    return params;
}

/* One ring collective of the ZeRO-2/3 DP traffic: nccl 0 the plain ring,
 * 1 NCCL's terms inside a node, 2 across nodes (nccl_model.h). */
static double zero_ring_s(int nccl, enum oc_coll_kind kind, int64_t d, double bytes,
                          double bw_Bps, double lat_s, double mem_Bps)
{
    return oc_nccl_ring_s(nccl > 0, kind, d, bytes, bw_Bps, lat_s, mem_Bps, nccl == 2, NULL);
}

double oc_cf_zero_dp_comm_nccl_s(const struct oc_model *m, const struct oc_layout *l,
                                 int64_t stage, double bw_Bps, double lat_s, double mem_Bps,
                                 int nccl)
{
    const int64_t d = l->dp;
    if (l->zero < 2 || d <= 1)
        return 0;
    const struct oc_mem_param_bytes pb = oc_mem_param_bytes(l);
    const double P = (double)oc_model_layer_params_tp(m, l->tp);
    const enum oc_coll_kind RS = OC_COLL_REDUCESCATTER, AG = OC_COLL_ALLGATHER;
    double unit_s = 0; /* one micro-batch, every chunk of the stage */
    for (int64_t c = 0; c < oc_place_chunks_per_stage(l); c++) {
        const double E = oc_mem_chunk_extra_params(m, l, stage, c);
        const double n = (double)oc_place_chunk_layers(l, m, stage, c).count;
        if (E > 0)
            unit_s += zero_ring_s(nccl, RS, d, pb.grad * E, bw_Bps, lat_s, mem_Bps);
        unit_s += n * zero_ring_s(nccl, RS, d, pb.grad * P, bw_Bps, lat_s, mem_Bps);
        if (l->zero == 3) {
            if (E > 0)
                unit_s += 2.0 * zero_ring_s(nccl, AG, d, pb.weight * E, bw_Bps, lat_s, 0);
            unit_s += 2.0 * n * zero_ring_s(nccl, AG, d, pb.weight * P, bw_Bps, lat_s, 0);
        }
    }
    double s = (double)oc_layout_num_micro_batches(l) * unit_s;
    if (l->zero == 2)
        s += zero_ring_s(nccl, AG, d, pb.weight * (double)oc_mem_stage_params(m, l, stage),
                         bw_Bps, lat_s, 0);
    return s;
}

double oc_cf_zero_dp_comm_s(const struct oc_model *m, const struct oc_layout *l,
                            int64_t stage, double bw_Bps, double lat_s, double mem_Bps)
{
    return oc_cf_zero_dp_comm_nccl_s(m, l, stage, bw_Bps, lat_s, mem_Bps, 0);
}

/* ZeRO-2/3 (schedule_zero.h) reduce, and ZeRO-3 gathers, per layer and
 * micro-batch: the DP time of the larger of the embedding's and the
 * head's stage into out->dp_comm_s; returns the part the step waits for.
 * Without overlap all of it; with overlap the blocking gathers (ZeRO-3:
 * the first layer of each of the 2*m*v chunk units) and what the step's
 * backward (ZeRO-2) or its whole compute (ZeRO-3) does not hide. An
 * estimate, not a bound. Needs out->fwd_chunk_s and bwd_chunk_s. */
static double zero_exposed_time_s(const struct oc_model *m, const struct oc_layout *l,
                                  double bw, double lat, double mem_Bps, int64_t v, int nccl,
                                  struct oc_cf_step *out)
{
    int64_t stage = oc_place_embed(l).stage;
    if (oc_mem_stage_params(m, l, oc_place_head(l).stage) > oc_mem_stage_params(m, l, stage))
        stage = oc_place_head(l).stage;
    out->dp_comm_s = oc_cf_zero_dp_comm_nccl_s(m, l, stage, bw, lat, mem_Bps, nccl);
    if (!l->overlap_grad_reduce)
        return out->dp_comm_s;
    const double mv = (double)(oc_layout_num_micro_batches(l) * v);
    const double layer_w =
        oc_mem_param_bytes(l).weight * (double)oc_model_layer_params_tp(m, l->tp);
    const double blocking =
        l->zero == 3 ? 2.0 * mv * zero_ring_s(nccl, OC_COLL_ALLGATHER, l->dp, layer_w, bw, lat, 0)
                     : 0.0;
    const double hide = mv * (out->bwd_chunk_s + (l->zero == 3 ? out->fwd_chunk_s : 0.0));
    const double rest = out->dp_comm_s - blocking - hide;
    return blocking + (rest > 0 ? rest : 0.0);
}

/* --overlap-grad-reduce without ZeRO-2/3: Megatron-Core's DP buckets
 * (schedule_bucket.h) of `stage`, fired during the last micro-batch's
 * backward of each chunk as the schedule issues them. That backward of each
 * chunk runs back to back (chunk v-1 first, chunk 0 last, as the stage's
 * last units; the schedule may leave gaps between them, which only hide
 * more), layer_s per layer (backward, recompute, TP collectives), the head's
 * backward before the chunk's layers and the embedding's after; a bucket's
 * ring starts once its last layer is done and the bucket before it is over
 * (one DP stream). nccl: 0 no NCCL terms, 1 on a ring inside a node, 2
 * across nodes (nccl_model.h). Sets *total_s to the buckets' rings; returns
 * what runs past the end of the last backward. */
static double dp_buckets_exposed_s(const struct oc_model *m, const struct oc_layout *l,
                                   const struct oc_cost *c, int64_t stage, int64_t dg,
                                   double bw, double lat, double mem_Bps, double layer_s,
                                   int nccl, enum oc_coll_kind kind, double *total_s)
{
    struct oc_dp_bucket *b = oc_xmalloc((size_t)oc_dp_buckets_cap(m, l) * sizeof *b);
    const double grad = oc_mem_param_bytes(l).grad;
    double now = 0, free_at = 0;
    *total_s = 0;
    for (int64_t ch = oc_place_chunks_per_stage(l) - 1; ch >= 0; ch--) {
        const int64_t nb = oc_dp_buckets(m, l, stage, ch, oc_dp_bucket_size(l), b);
        for (int64_t j = 0; j < nb; j++) {
            now += (double)b[j].layer_count * layer_s +
                   (b[j].head ? c->part_s[OC_PART_HEAD][OC_PHASE_BWD] : 0.0) +
                   (b[j].embed ? c->part_s[OC_PART_EMBED][OC_PHASE_BWD] : 0.0);
            const double r = oc_nccl_ring_s(nccl > 0, kind, dg, grad * b[j].params,
                                            bw, lat, mem_Bps, nccl == 2, NULL);
            free_at = (free_at > now ? free_at : now) + r;
            *total_s += r;
        }
    }
    free(b);
    return free_at > now ? free_at - now : 0.0;
}

/* The first stage of the most parameters (largest_stage_params's). */
static int64_t largest_stage(const struct oc_model *m, const struct oc_layout *l)
{
    int64_t best = 0;
    for (int64_t i = 1; i < l->pp; i++)
        if (oc_mem_stage_params(m, l, i) > oc_mem_stage_params(m, l, best))
            best = i;
    return best;
}

/* Gradient compression or local SGD (compress.h) on the DP gradient
 * group: each step's collective by the same ring closed form (an
 * all-gather of top-k's pairs, the all-reduces of the others) into
 * out->dp_comm_s, and the compression kernels; none overlapped (the
 * exchange runs after the last backward). Returns what the step waits for. */
static double gc_exposed_s(const struct oc_model *m, const struct oc_layout *l,
                           const struct oc_topology *t, int64_t dg, double bw, double lat,
                           int across, struct oc_cf_step *out)
{
    struct oc_gc_plan p;
    oc_gc_plan(m, l, largest_stage(m, l), &p);
    double kern = oc_gc_kernel_s(t, p.final_bytes, p.final_flops);
    out->dp_comm_s = 0;
    for (int i = 0; i < p.n; i++) {
        out->dp_comm_s += oc_nccl_ring_s(t->nccl_version > 0, (enum oc_coll_kind)p.step[i].coll,
                                         dg, p.step[i].bytes, bw, lat, oc_cost_mem_Bps(t),
                                         across, NULL);
        kern += oc_gc_kernel_s(t, p.step[i].kernel_bytes, p.step[i].kernel_flops);
    }
    return out->dp_comm_s + kern;
}

/* DP: a ring all-reduce of the gradients of `params` parameters (memory.h's
 * bytes per gradient, the run's precision)
 * (reduce-scatter plus all-gather when the optimizer is sharded: the same
 * bytes) into out->dp_comm_s; returns the part of it the step waits for.
 * Needs out->bwd_chunk_s; layer_s: one layer's backward with its recompute
 * and TP collectives. */
static double dp_exposed_time_s(const struct oc_model *m, const struct oc_layout *l,
                                const struct oc_topology *t, const struct oc_cost *c,
                                int64_t params, int64_t v, double layer_s,
                                struct oc_cf_step *out)
{
    const int64_t dg = l->dp * cf_cp(l); /* the DP x CP gradient group */
    if (dg <= 1)
        return 0;
    double bw, lat;
    int across;
    group_link_x(l, t, CF_DP, &bw, &lat, &across);
    if (oc_gc_on(l))
        return gc_exposed_s(m, l, t, dg, bw, lat, across, out);
    /* NCCL's latencies and protocols where the topology asks (nccl_model.h) */
    out->dp_comm_s = oc_nccl_ring_s(t->nccl_version > 0, OC_COLL_ALLREDUCE, dg,
                                    oc_mem_param_bytes(l).grad * (double)params, bw, lat,
                                    oc_cost_mem_Bps(t), across, NULL);
    if (l->zero >= 2)
        return zero_exposed_time_s(m, l, bw, lat, oc_cost_mem_Bps(t), v,
                                   t->nccl_version > 0 ? 1 + across : 0, out);
    /* Megatron-Core's --overlap-grad-reduce starts each bucket during the
     * last micro-batch's backward (earlier micro-batches only accumulate)
     * once its layers are done: what the rest of that backward hides. */
    /* (the sharded optimizer's reduce-scatter and all-gather as one
     * all-reduce of the gradient bytes, unless --overlap-param-gather
     * takes the gather into the forward: pg_stage_s) */
    if (l->overlap_grad_reduce)
        return dp_buckets_exposed_s(m, l, c, largest_stage(m, l), dg, bw, lat,
                                    oc_cost_mem_Bps(t), layer_s,
                                    t->nccl_version > 0 ? 1 + across : 0,
                                    oc_pg_on(l) ? OC_COLL_REDUCESCATTER : OC_COLL_ALLREDUCE,
                                    &out->dp_comm_s);
    return out->dp_comm_s;
}

double oc_cf_cp_ring_s(int64_t cp, double bytes, double bw_Bps, double lat_s)
{
    OC_ASSERT(cp >= 1 && bw_Bps > 0);
    return (double)(cp - 1) * (lat_s + bytes / bw_Bps);
}

double oc_cf_cp_ring_exposed_s(int64_t cp, double bytes, double bw_Bps, double lat_s,
                               double attn_s)
{
    OC_ASSERT(cp >= 1 && bw_Bps > 0);
    const double x = lat_s + bytes / bw_Bps, a = attn_s / (double)cp;
    return x > a ? (double)(cp - 1) * (x - a) : 0.0;
}

/* The CP ring of one chunk's layers, one micro-batch: its transfers into
 * *ring_s, and what of them the step waits for (returned). Forward and
 * full recompute send K/V, backward K/V and dK/dV (schedule_cp.h). */
static double cp_ring_chunk_s(const struct oc_model *m, const struct oc_layout *l,
                              const struct oc_topology *t, const struct oc_cost *c,
                              double lpc, double rfrac, double *ring_s)
{
    *ring_s = 0;
    const int64_t cp = cf_cp(l);
    if (cp <= 1)
        return 0;
    double bw, lat;
    group_link(l, t, CF_CP, &bw, &lat);
    struct oc_cp_ring r;
    oc_cp_ring_init(&r, m, l, 0);
    const enum oc_phase ph[3] = {OC_PHASE_FWD, OC_PHASE_BWD, OC_PHASE_RECOMPUTE};
    double exposed = 0;
    for (int k = 0; k < (l->recompute == OC_RECOMPUTE_FULL ? 3 : 2); k++) {
        /* full recompute reruns the forward's attention, ring included */
        const enum oc_phase run = ph[k] == OC_PHASE_RECOMPUTE ? OC_PHASE_FWD : ph[k];
        const double bytes = oc_cp_step_bytes(&r, ph[k]);
        /* rfull<k>: only the recomputed layers rerun the ring */
        const double layers = ph[k] == OC_PHASE_RECOMPUTE ? rfrac * lpc : lpc;
        *ring_s += layers * oc_cf_cp_ring_s(cp, bytes, bw, lat);
        exposed += layers * oc_cf_cp_ring_exposed_s(cp, bytes, bw, lat,
                                                    c->part_s[OC_PART_ATTN][run]);
    }
    return exposed;
}

/* --overlap-param-gather (schedule_pgather.h): what `stage`'s first
 * forward loses to its chain of weight gathers (oc_pg_chain_exposed_s),
 * each bucket's gather a ring all-gather over the DP x CP group and its
 * forward layer_fwd_s per layer (with its TP collectives) plus the
 * embedding's or the head's. Chunk 0's first gather is exposed on stage 0
 * only: a later stage waits for its first activation at least as long as
 * the stage before it ran its own chain, whose first bucket is about as
 * large; a later chunk's is issued during the chunk before it. Sets
 * *total_s to the gathers' rings. An estimate (the simulator replays the
 * chain against the real schedule). */
static double pg_stage_s(const struct oc_model *m, const struct oc_layout *l,
                         const struct oc_topology *t, const struct oc_cost *c,
                         int64_t stage, double layer_fwd_s, double *total_s)
{
    const int64_t dg = l->dp * cf_cp(l);
    double bw, lat;
    int across;
    group_link_x(l, t, CF_DP, &bw, &lat, &across);
    const int nc = t->nccl_version > 0;
    const double w = oc_mem_param_bytes(l).weight;
    struct oc_pg_item *it = oc_xmalloc((size_t)oc_pg_chain_cap(m, l) * sizeof *it);
    const int64_t n = oc_pg_chain(m, l, stage, it);
    double *g = oc_xmalloc((size_t)n * sizeof *g), *f = oc_xmalloc((size_t)n * sizeof *f);
    for (int64_t i = 0; i < n; i++) {
        g[i] = oc_nccl_ring_s(nc, OC_COLL_ALLGATHER, dg, w * it[i].b.params, bw, lat, 0,
                              across, NULL);
        f[i] = (double)it[i].b.layer_count * layer_fwd_s +
               (it[i].b.embed ? c->part_s[OC_PART_EMBED][OC_PHASE_FWD] : 0.0) +
               (it[i].b.head ? c->part_s[OC_PART_HEAD][OC_PHASE_FWD] : 0.0);
        *total_s += g[i];
    }
    double lost = 0;
    for (int64_t i = 0, j; i < n; i = j) {
        for (j = i; j < n && it[j].chunk == it[i].chunk; j++)
            ;
        const double arrive = stage == 0 && it[i].chunk == 0 ? 0.0 : g[i];
        lost += oc_pg_chain_exposed_s(g + i, f + i, j - i, arrive);
    }
    free(g);
    free(f);
    free(it);
    return lost;
}

/* --overlap-param-gather: each stage's loss (pg_stage_s) in a new array
 * of p; *total_s the largest stage's gathers (dp_comm_s is its rank's). */
static double *pg_stages_s(const struct oc_model *m, const struct oc_layout *l,
                           const struct oc_topology *t, const struct oc_cost *c,
                           double layer_fwd_s, double *total_s)
{
    double *pg_s = oc_xmalloc((size_t)l->pp * sizeof *pg_s);
    const int64_t big = largest_stage(m, l);
    for (int64_t j = 0; j < l->pp; j++) {
        double total = 0;
        pg_s[j] = pg_stage_s(m, l, t, c, j, layer_fwd_s, &total);
        if (j == big)
            *total_s = total;
    }
    return pg_s;
}

void oc_cf_step(const struct oc_model *m, const struct oc_layout *l,
                const struct oc_topology *t, struct oc_cf_step *out)
{
    OC_ASSERT(m && l && t && out);
    memset(out, 0, sizeof *out);
    const int64_t p = l->pp, tp = l->tp, d = l->dp;
    const int64_t v = oc_place_chunks_per_stage(l);
    const int64_t mb = oc_layout_num_micro_batches(l);
    /* layers of the largest chunk (every chunk's when even) */
    const double lpc = (double)oc_place_max_chunk_layers(l, m);
    /* an s*b*h activation, e bytes per element (the run's precision) */
    const double sbh = (double)oc_layout_local_seq(l) * (double)l->micro_batch *
                       (double)m->hidden_size; /* s/c tokens under CP */
    const double e = oc_layout_act_bytes(l);

    /* Compute per layer and per (largest) chunk from the cost model (no
     * embedding, no head). */
    struct oc_cost c;
    oc_cost_init(&c, m, l, t);
    /* rfull<k>: the share of the largest chunk's layers that recompute
     * (all of them under full recompute; selective recompute is in the
     * recompute phase's own cost) */
    const double rfrac = l->recompute == OC_RECOMPUTE_FULL
                             ? (double)oc_mem_recomputed_layers(l, (int64_t)lpc) /
                                   (lpc > 0 ? lpc : 1.0)
                             : 1.0;
    const double layer_fwd_s = c.part_s[OC_PART_ATTN][OC_PHASE_FWD] +
                               c.part_s[OC_PART_MLP][OC_PHASE_FWD];
    const double layer_bwd_s = c.part_s[OC_PART_ATTN][OC_PHASE_BWD] +
                               c.part_s[OC_PART_MLP][OC_PHASE_BWD] +
                               rfrac * (c.part_s[OC_PART_ATTN][OC_PHASE_RECOMPUTE] +
                                        c.part_s[OC_PART_MLP][OC_PHASE_RECOMPUTE]);
    out->fwd_chunk_s = lpc * layer_fwd_s;
    out->bwd_chunk_s = lpc * layer_bwd_s;

    /* TP (Shoeybi et al. 2019, section 3): two all-reduces of s*b*h
     * values per layer forward and two backward; with sequence parallelism
     * each becomes an all-gather plus a reduce-scatter, the same bytes on a
     * ring (Korthikanti section 4.2.2). Full recompute reruns the forward's
     * two. */
    double tp_layer_s = 0, tp_bwd_layer_s = 0;
    if (tp > 1) {
        double bw, lat;
        int across;
        group_link_x(l, t, CF_TP, &bw, &lat, &across);
        /* rfull<k>: two more in the recomputed layers only */
        const double rec = 2.0 * (double)oc_mem_recomputed_layers(l, (int64_t)lpc) /
                           (lpc > 0 ? lpc : 1.0);
        /* with NCCL's latencies and protocols where the topology asks
         * (nccl_model.h): per call, so under sequence parallelism the
         * all-gather and the reduce-scatter each pay theirs (without them
         * the pair costs the all-reduce) */
        const int nc = t->nccl_version > 0;
        const double mem = oc_cost_mem_Bps(t);
        const double ar =
            nc && l->sequence_parallel
                ? oc_nccl_ring_s(nc, OC_COLL_ALLGATHER, tp, e * sbh, bw, lat, mem, across, NULL) +
                      oc_nccl_ring_s(nc, OC_COLL_REDUCESCATTER, tp, e * sbh, bw, lat, mem,
                                     across, NULL)
                : oc_nccl_ring_s(nc, OC_COLL_ALLREDUCE, tp, e * sbh, bw, lat, mem, across, NULL);
        tp_layer_s = (4.0 + rec) * ar;
        tp_bwd_layer_s = (2.0 + rec) * ar; /* the backward's and the recompute's */
        /* --tp-comm-overlap: each all-gather and reduce-scatter less what
         * its GEMM hides (tp_overlap.h); the pair's split as the
         * simulator's (without NCCL's terms the ring's two halves) */
        struct oc_tpo tpo;
        oc_tpo_init(&tpo, m, l, t);
        if (tpo.on) {
            const double ag = nc ? oc_nccl_ring_s(nc, OC_COLL_ALLGATHER, tp, e * sbh, bw, lat,
                                                  mem, across, NULL)
                                 : 0.5 * ar;
            const double rs = ar - ag;
            const double f = oc_tpo_layer_s(&tpo, OC_PHASE_FWD, ag, rs);
            const double b = oc_tpo_layer_s(&tpo, OC_PHASE_BWD, ag, rs);
            tp_layer_s = f + b + 0.5 * rec * f;
            tp_bwd_layer_s = b + 0.5 * rec * f;
        }
    }
    const double tp_chunk_s = lpc * tp_layer_s;

    /* PP: per chunk and micro-batch one send of the activations forward and
     * one of their gradient backward, s*b*h values (/t with
     * sequence parallelism), at the slowest stage-to-stage hop. */
    double pp_chunk_s = 0;
    if (p > 1) {
        double bw, lat;
        group_link(l, t, CF_PP, &bw, &lat);
        const double bytes = e * sbh / (l->sequence_parallel ? (double)tp : 1.0);
        pp_chunk_s = 2.0 * (lat + bytes / bw);
    }

    /* CP: the ring of K/V blocks of every layer's attention, overlapped
     * with its steps (cp_ring_exposed_s). */
    double cp_chunk_s = 0;
    const double cp_exposed_chunk_s = cp_ring_chunk_s(m, l, t, &c, lpc, rfrac, &cp_chunk_s);
    /* per layer, as the pipeline adds it up stage by stage */
    const double cp_exposed_layer_s = lpc > 0 ? cp_exposed_chunk_s / lpc : 0;

    /* The pipeline: m*v chunk units stretched by the bubble (see
     * pipeline_time_s). */
    const int64_t vb = oc_place_interleaved_chunks(l);
    out->bubble_fraction = oc_cf_bubble_fraction(p, mb, vb);
    const double embed_s = c.part_s[OC_PART_EMBED][OC_PHASE_FWD] +
                           c.part_s[OC_PART_EMBED][OC_PHASE_BWD];
    const double head_s = c.part_s[OC_PART_HEAD][OC_PHASE_FWD] +
                          c.part_s[OC_PART_HEAD][OC_PHASE_BWD];
    const int pg = oc_pg_on(l);
    double pg_total_s = 0;
    double *pg_s =
        pg ? pg_stages_s(m, l, t, &c, layer_fwd_s + tp_layer_s - tp_bwd_layer_s, &pg_total_s)
           : NULL;
    const double pipeline_s =
        pipeline_time_s(m, l, mb, v, vb,
                        layer_fwd_s + layer_bwd_s + tp_layer_s + cp_exposed_layer_s,
                        pp_chunk_s, embed_s, head_s, pg_s);
    free(pg_s);
    out->tp_comm_s = (double)(mb * v) * tp_chunk_s;
    out->pp_comm_s = (double)(mb * v) * pp_chunk_s;
    out->cp_comm_s = (double)(mb * v) * cp_chunk_s;

    /* DP: the gradients of the largest stage, which finishes last. */
    const int64_t params = largest_stage_params(m, l);
    /* one layer's backward as the schedule runs it: its compute and
     * recompute, and their TP collectives (tp_bwd_layer_s) */
    const double dp_exposed_s =
        dp_exposed_time_s(m, l, t, &c, params, v, layer_bwd_s + tp_bwd_layer_s, out);
    if (pg)
        out->dp_comm_s += pg_total_s;

    /* Optimizer: memory-bound (cost.h, cost_overhead.h), over the
     * parameters this rank updates (1/d of them when sharded), and the
     * zero_grad of the stage's gradient buffer. */
    out->optimizer_s = c.optimizer_s_per_param * (double)params /
                           (l->zero ? (double)(d * cf_cp(l)) : 1.0) +
                       oc_cost_zero_grad_s(&c, (double)params);

    out->step_s = pipeline_s + dp_exposed_s + out->optimizer_s;
    out->tokens_per_s =
        (double)l->global_batch * (double)l->seq_length / out->step_s;
    /* MFU (Chowdhery et al. 2022, appendix B): model FLOPs over the peak
     * of every GPU for the step. */
    out->mfu = oc_cf_model_flops_per_step(m, l) /
               (out->step_s * (double)oc_layout_world(l) *
                t->device.peak_flops_16bit);
}
