/* coll_sym.c: the symmetric fidelity's side of the collectives (coll.h):
 * the rings each algorithm runs (oc_coll_ring_nbr), whether the fold can
 * run an algorithm on a group's images (oc_coll_sym_ok) and the loops and
 * ~in receivers a simulated member needs (oc_coll_sym_loops);
 * sim/replay_sym.c has the argument. Moved out of coll.c (twelfth
 * session), which keeps the table, the choice and the transport. */
#include "coll.h"

int64_t oc_coll_ring_nbr(const struct oc_sim_group *g, enum oc_coll_ring_kind k,
                         int64_t i, int d)
{
    OC_ASSERT(i >= 0 && i < g->size && (d == 1 || d == -1));
    switch (k) {
    case OC_COLL_RING_INTRA: {
        const int64_t n = g->node[i], c = oc_coll_node_count(g, n);
        return oc_coll_node_member(g, n, (g->local[i] + d + c) % c);
    }
    case OC_COLL_RING_INTER: {
        OC_ASSERT(g->per_node >= 1);
        const int64_t M = g->nodes;
        return oc_coll_node_member(g, (g->node[i] + d + M) % M, g->local[i]);
    }
    case OC_COLL_RING_DIAG: {
        OC_ASSERT(g->per_node >= 1);
        const int64_t M = g->nodes, L = g->per_node;
        return oc_coll_node_member(g, (g->node[i] + d + M) % M, (g->local[i] + d + L) % L);
    }
    case OC_COLL_RING_FLAT:
    default:
        return (i + d + g->size) % g->size;
    }
}

/* The rings algorithm a runs on g (oc_coll_sym_ok's); their count, 0 for
 * an algorithm the symmetric fidelity does not run. */
static int sym_rings(const struct oc_sim_group *g, const struct oc_coll_algo *a,
                     enum oc_coll_ring_kind k[2])
{
    if (a == &oc_coll_ring) {
        k[0] = OC_COLL_RING_FLAT;
        return 1;
    }
    if (a == &oc_coll_hier && g->per_node >= 1) {
        k[0] = OC_COLL_RING_INTRA;
        k[1] = OC_COLL_RING_INTER;
        return 2;
    }
    if (a == &oc_coll_rails && g->per_node >= 1) {
        /* a step: the chunks of L-1 channels to the node neighbour, one
         * across to (k+1, j+1) (coll_rails.c) */
        k[0] = OC_COLL_RING_INTRA;
        k[1] = OC_COLL_RING_DIAG;
        return 2;
    }
    return 0;
}

/* NVLS under the fold: every member's image one member (its exchange is
 * then one step to its loop inside the node, coll_nvls.c). */
static int sym_nvls_ok(const struct oc_sim_group *g, const int64_t *image)
{
    for (int64_t i = 1; i < g->size; i++)
        if (image[i] != image[0])
            return 0;
    return 1;
}

static int crosses(const struct oc_sim_group *g, int64_t i, int64_t j)
{
    return g->node[i] != g->node[j];
}

int oc_coll_sym_ok(const struct oc_sim_group *g, const struct oc_coll_algo *a,
                   const int64_t *image)
{
    if (g->size < 2)
        return 1;
    if (a == &oc_coll_nvls)
        return sym_nvls_ok(g, image);
    enum oc_coll_ring_kind k[2];
    const int nk = sym_rings(g, a, k);
    if (nk == 0)
        return 0;
    for (int r = 0; r < nk; r++)
        for (int64_t i = 0; i < g->size; i++) {
            const int64_t nx = oc_coll_ring_nbr(g, k[r], i, 1), im = image[i];
            const int cross = crosses(g, i, nx);
            if (cross != crosses(g, im, oc_coll_ring_nbr(g, k[r], im, 1)))
                return 0;
            if (im != i)
                continue;
            const int64_t y = image[nx];
            if (image[oc_coll_ring_nbr(g, k[r], y, -1)] != i)
                return 0;
            /* a step across nodes to an image on i's node goes to the
             * image's ~in twin; the other way round has no route */
            if (y != i && !cross && crosses(g, i, y))
                return 0;
        }
    return 1;
}

int oc_coll_sym_loops(const struct oc_sim_group *g, const int64_t *image, int64_t i)
{
    OC_ASSERT(image[i] == i);
    /* the hierarchical ring applies; the multi-rail ring too */
    const int both = g->per_node >= 1, rails = g->per_node >= 2 && g->nodes >= 2;
    const enum oc_coll_ring_kind k[4] = {OC_COLL_RING_FLAT, OC_COLL_RING_INTRA,
                                         OC_COLL_RING_INTER, OC_COLL_RING_DIAG};
    const int64_t n[4] = {g->size, oc_coll_node_count(g, g->node[i]), g->nodes, g->size};
    int need = 0;
    for (int r = 0; r < (rails ? 4 : both ? 3 : 1); r++) {
        if (n[r] < 2)
            continue;
        const int64_t nx = oc_coll_ring_nbr(g, k[r], i, 1);
        if (image[nx] == i)
            need |= crosses(g, i, nx) ? 2 : 1;
        const int64_t pv = oc_coll_ring_nbr(g, k[r], i, -1), pi = image[pv];
        if (pi != i && crosses(g, pv, i) && !crosses(g, pi, i))
            need |= 4;
    }
    return need;
}
