/* replay_sym.c: the symmetric mode of the replay (OC_SIM_SYM, replay.h):
 * fast mode restricted to one data-parallel replica. On the generated
 * platform of a uniform cluster every DP replica of a layout runs the
 * same op lists at the same times, so replica dp 0 stands for all of
 * them: only its TP-rank-0 ranks are actors (p of them, p*c with context
 * parallelism), and what the other replicas did on links replica 0 uses is
 * charged to replica 0's flows. A rank's image is the rank of replica 0
 * with its pp and cp at TP rank 0 (image_of); by the symmetry every rank
 * does what its image does, when its image does it.
 *   - a message across nodes (PP, the CP ring's K/V, a collective's step)
 *     carries ksym times its bytes, ksym the ranks of the stage and CP
 *     rank on the sender's NIC (the larger of both ends): the ranks whose
 *     image it is there, as fast mode's k counts the TP group's. A NIC
 *     then carries the load of all the lockstepped flows of that stage
 *     (max-min sharing of m equal flows on a link = one flow of m times
 *     the bytes; the simulated ranks of a stage on one NIC, several with
 *     CP, stand for as many ranks each, so their scaled flows share it as
 *     the real ones do);
 *   - a collective of a group with members in other replicas (the DP x CP
 *     gradient group, ZeRO's reduce-scatter and all-gather, the async
 *     buckets) runs the algorithm fast mode would pick, on its rings (the
 *     flat ring; the hierarchical ring's ring inside each node and across
 *     nodes). A ring step of a simulated member i goes to the image y of
 *     its successor, and y's step comes from the image of y's
 *     predecessor, which is i (checked): with CP, replica 0's c members
 *     sit on the ring as a block, and the step the block's last member
 *     sends into replica 1 goes to the block's first, which by symmetry
 *     receives the same step from replica dp-1 at that moment. The one
 *     message loads i's outgoing links as the real step does, and y's
 *     incoming links as the real step into y does; it crosses nodes
 *     exactly when the real one does (checked), so it also takes as long.
 *     Where y is i itself (one member of replica 0 on the ring: always
 *     without CP, and on the hierarchical ring's ring across nodes with
 *     all of replica 0's members on one node), the step is one message to
 *     i's twin host (platform.h) through i's own outgoing and incoming
 *     links: by symmetry its successor's incoming links carry what its
 *     own do, and its predecessor's outgoing links what its own do.
 * The cost then grows with the pipeline's op lists, not with DP.
 *
 * Folding the CP ring (tried first where cp > 1, R->cpfold): CP rank 0
 * of each stage of replica 0 stands for its whole CP group too, the
 * image of a rank then also has CP rank 0. It holds when, beyond the
 * checks below (with ksym counting every rank of the stage on the NIC,
 * whatever its CP rank), every CP rank of replica 0 runs its image's ops
 * (kinds, sizes, tags, peers of the same images: cp_ops_alike) and every
 * CP ring hop crosses nodes as its image's own hop does (so the hops are
 * all of one kind). A ring step is then one message from the rank to its
 * twin of the hop's kind (ksym times the bytes across nodes), received
 * there by its ring helper (replay_rank.c): it loads the rank's outgoing
 * links as its real step does and its incoming links as the step from
 * its predecessor, sent at the same moment, does. The other CP ranks'
 * timeline rows are copies of their image's (replay.c), so each ring
 * step's SEND finds its RECV. Where the fold does not hold (a CP group
 * on two nodes with hops of both kinds: tp4-pp2-dp2-cp4 on 8-GPU nodes)
 * every CP rank of replica 0 is simulated as before; the debug log says
 * which, and why.
 *   llama2-70b tp1-pp16-dp1-cp4-mb1-1f1b-rnone on 64 (h100-100g): 64
 * actors -> 16, the simulation 2.49 -> 0.78 user s, every figure equal
 * (sym_fast.sh, test_sim_cp.c).
 *
 * One node's replicas (R->dpmod > 1, tried where replica 0 alone does
 * not hold): where a replica's stage is smaller than a node, the D
 * replicas that share replica 0's nodes (node_replicas) stand for all,
 * the image of DP rank d being d mod D. A flat ring across nodes with
 * several members per node is then alike under a shift by one node
 * (not by one replica: the members before a node boundary receive
 * through the NIC, the others over NVLink, so their steps are timed
 * differently). The block's last member sends into the next node: its
 * step goes to the image of its successor, the block's first, on the
 * same node, but into that one's ~in twin host (platform.h), out
 * through the sender's NIC and in through the receiver's, as the real
 * step from the previous node arrives there (coll.h, struct
 * oc_coll_in); ksym counts the ranks on the NIC with the same image.
 *   gpt-22b tp1-pp1-dp64-mb1-zero3-coll=ring on 64 dgx-a100: 64 actors
 * -> 8, 6.09 -> 0.85 user s, every figure equal. The ~in twin also takes
 * replica 0's CP block into the next node on a flat ring (one replica
 * per node): llama2-70b tp1-pp16-dp8-cp8-mb1-1f1b-rnone-coll=ring on
 * 1024 fell back to fast mode (32.9 user s), now 3.2. The default
 * 1024-card sweep (`ocsim sweep --cards 1024`): its 76 simulations
 * 422 -> 200 s wall on a loaded 2-core machine, sweep.csv byte-identical;
 * what still falls back there is the tree (16 of the 76, 7.5-8 s each).
 *
 * It holds (oc_rp_sym_plan checks each, else fast mode runs, and the
 * reason goes to the debug log of category ocsim_sym and R->sym_why):
 *   - every TP group is inside one node (fast mode's TP sleeps; fast
 *     mode itself then simulates every rank). Where fast mode simulates
 *     every rank only because its check of the NICs is stricter (it asks
 *     every NIC, not only those replica 0 uses, to match: eight NICs per
 *     node, TP 8), the symmetric mode's own checks below hold instead and
 *     it stands for that every-rank run;
 *   - every rank has its image's ksym, as many members of its TP group on
 *     its NIC as its image (fast mode's factor, which times the hiding of
 *     reductions), and the same kind of pipeline hops and CP ring hops
 *     (inside a node or across) as its image;
 *   - the simulated ranks of one stage on one NIC have equal ksym;
 *   - on every NIC that replica 0 uses, every rank is of a stage whose
 *     replica-0 rank uses that NIC (so the scaled flows stand for all of
 *     its traffic), and when uplinks are shared (switch_levels > 1 with
 *     oversubscription) the same on every node replica 0 uses;
 *   - every collective of such a group is a flat ring, a hierarchical
 *     ring (same count on every node) or a multi-rail ring (its ring
 *     inside each node and its ring (k, j) -> (k+1, j+1) across, coll.h's
 *     OC_COLL_RING_DIAG; gpt-22b tp1-pp1-dp64-zero3 --collective rails on
 *     64 dgx-a100: 19 hosts, 1.2 s wall against fast mode's 20.1, every figure
 *     equal), or NVLS inside one node where one member stands for all
 *     (one loop step), on whose rings every member's hop
 *     crosses nodes as its image's does and the images match up as above
 *     (oc_coll_sym_ok), except that a hop across nodes may have an
 *     image inside a node: the step then goes to the receiver's ~in twin
 *     (coll.h), out and in through the NICs (with CP, tp1-pp4-dp2-cp8 on
 *     64 with --collective ring: the hop from replica 0's block into
 *     replica 1 crosses nodes, its image, back to the block's first
 *     member, does not). So a flat ring across nodes with several
 *     replicas per node needs one node's replicas (below), and falls back
 *     where those do not tile it, as do a replica that straddles nodes
 *     unlike another (tp1-pp3-dp4-cp4, tp-pp-dp, on 48), a tree, whose
 *     members are not alike, and a broadcast.
 * What differs from fast mode then: the ring's chunks of floor(S(c+1)/N)
 * - floor(Sc/N) bytes differ by a byte between positions; replica 0's
 * sizes stand for all (1e-10 s per step on 12.5 GB/s), and a step
 * received from an image carries the image's chunk, not the real
 * predecessor's.
 */
#define _POSIX_C_SOURCE 200809L

#include "replay_priv.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/semaphore.h>

#include "sim_log.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_sym, ocsim,
                                "ocsim: the replay's symmetric mode (which ran, and why)");

/* The image of rank r: TP rank 0, DP rank 0 (DP rank dp mod R->dpmod
 * where one node's replicas stand for all), and CP rank 0 where the CP
 * ring is folded (R->cpfold). */
static int64_t image_of(const struct replay *R, int64_t r)
{
    struct oc_coord c = oc_layout_coord(R->l, r);
    c.tp = 0;
    c.dp = R->dpmod > 1 ? c.dp % R->dpmod : 0;
    if (R->cpfold)
        c.cp = 0;
    return oc_layout_rank(R->l, c);
}

int64_t oc_rp_sym_image(const struct replay *R, int64_t r)
{
    return image_of(R, r);
}

int64_t *oc_rp_sym_twins(const struct replay *R, int64_t *n)
{
    const int64_t world = oc_layout_world(R->l);
    int64_t *v = oc_xmalloc((size_t)(world > 0 ? world : 1) * sizeof *v);
    *n = 0;
    for (int64_t r = 0; r < world; r++)
        if (image_of(R, r) == r)
            v[(*n)++] = r;
    return v;
}

/* The member index of every member's replica-0 image in group g (n
 * members, ranks m): image[i] = i for the members of replica 0. The
 * images are searched among those (cp of them at most in the gradient
 * group), not among all n. */
static void group_images(const struct replay *R, const int64_t *m, int64_t n,
                         int64_t *image)
{
    int64_t *own = oc_xmalloc((size_t)(n > 0 ? n : 1) * sizeof *own), nown = 0;
    for (int64_t i = 0; i < n; i++)
        if (image_of(R, m[i]) == m[i])
            own[nown++] = i;
    for (int64_t i = 0; i < n; i++) {
        const int64_t img = image_of(R, m[i]);
        image[i] = -1;
        for (int64_t j = 0; j < nown && image[i] < 0; j++)
            if (m[own[j]] == img)
                image[i] = own[j];
        OC_ASSERT(image[i] >= 0); /* a group of (tp, pp) holds its images */
    }
    free(own);
}

/* Every collective of replica 0's ranks on a group reaching other
 * replicas: can the rings run it on images and loops (oc_coll_sym_ok)?
 * 1, or 0 with why. Each rank's groups are built once (by enum oc_group)
 * and each op picks on them. */
#define SYM_GROUPS 16
static int coll_ok(struct replay *R, int64_t *buf, int64_t cap)
{
    const struct oc_layout *l = R->l;
    int ok = 1;
    int64_t *image = oc_xmalloc((size_t)(SYM_GROUPS * cap) * sizeof *image);
    for (int64_t r = 0; ok && r < R->world; r++) {
        if (image_of(R, r) != r)
            continue;
        struct oc_sim_group g[SYM_GROUPS];
        signed char state[SYM_GROUPS] = {0}; /* 0 unseen, 1 inside replica 0, 2 built */
        const struct oc_rank_ops *ro = &R->s->ranks[r];
        for (int64_t i = 0; ok && i < ro->n; i++) {
            const struct oc_op *op = &ro->ops[i];
            if (op->kind != OC_OP_COLLECTIVE || op->group == OC_GROUP_TP)
                continue;
            OC_ASSERT(op->group < SYM_GROUPS);
            int64_t *im = image + op->group * cap;
            if (state[op->group] == 0) {
                const int64_t n = oc_schedule_group(l, r, (enum oc_group)op->group, buf, cap);
                OC_ASSERT(n <= cap);
                int cross = 0;
                for (int64_t j = 0; j < n; j++)
                    cross |= image_of(R, buf[j]) != buf[j];
                state[op->group] = 1;
                struct oc_status st = {{0}};
                if (cross && oc_sim_group_init(&g[op->group], "symcheck", buf, n, R->plat,
                                               &st) != 0) {
                    snprintf(R->sym_why, sizeof R->sym_why, "%.150s", st.msg);
                    ok = 0;
                    break;
                }
                if (cross) {
                    state[op->group] = 2;
                    group_images(R, buf, n, im);
                }
            }
            if (state[op->group] != 2)
                continue;
            const struct oc_sim_group *G = &g[op->group];
            if (op->coll == OC_COLL_BROADCAST) {
                snprintf(R->sym_why, sizeof R->sym_why, "a broadcast across replicas");
                ok = 0;
                break;
            }
            const struct oc_coll_algo *a = oc_coll_pick(
                G, (enum oc_coll_kind)op->coll, R->copts.algo, (double)llround(op->bytes),
                &R->copts);
            if (!oc_coll_sym_ok(G, a, im)) {
                snprintf(R->sym_why, sizeof R->sym_why,
                         "the %s of %s on a group of %" PRId64 " on %" PRId64
                         " nodes is not alike for every member",
                         a->name, oc_coll_name((enum oc_coll_kind)op->coll), G->size, G->nodes);
                ok = 0;
            }
        }
        for (int k = 0; k < SYM_GROUPS; k++)
            if (state[k] == 2)
                oc_sim_group_free(&g[k]);
    }
    free(image);
    return ok;
}

/* The members of rank r's TP group on r's NIC: fast mode's factor
 * (replay_setup.c's nic_factors), which times the reductions' hiding. */
static int64_t tp_on_nic(const struct replay *R, int64_t K, int64_t r, int64_t *buf,
                         int64_t cap)
{
    const int64_t n = oc_schedule_group(R->l, r, OC_GROUP_TP, buf, cap);
    OC_ASSERT(n <= cap);
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++)
        k += buf[i] / R->gpn == r / R->gpn && buf[i] % K == r % K;
    return k;
}

/* ksym of every rank, and the placement checks of the file comment. */
static int placement_ok(struct replay *R, const struct oc_topology *t, int64_t *buf,
                        int64_t cap)
{
    const struct oc_layout *l = R->l;
    const int64_t world = R->world, gpn = R->gpn, p = l->pp, cn = l->cp > 1 ? l->cp : 1;
    const int64_t K = t->nics_per_node > 0 ? t->nics_per_node : 1;
    const int64_t nodes = (world + gpn - 1) / gpn;
    const int shared_up = t->switch_levels > 1 && t->oversubscription > 1;
    const int64_t dm = R->dpmod > 1 ? R->dpmod : 1;
    int64_t *cnt = oc_xcalloc((size_t)(nodes * K * p * cn * dm), sizeof *cnt);
    int64_t *first = oc_xcalloc((size_t)(nodes * K * p), sizeof *first);
    unsigned char *rep_nic = oc_xcalloc((size_t)(nodes * K), 1);
    unsigned char *rep_node = oc_xcalloc((size_t)nodes, 1);
#define NIC_OF(r) (((r) / gpn) * K + (r) % K)
    /* ksym: the ranks on its NIC with its image (of its stage and CP
     * rank; folded, of every CP rank; with R->dpmod, of its DP rank mod
     * dpmod), those its image stands for there */
    const int fold = R->cpfold;
#define CNT_OF(r, c) \
    cnt[(((NIC_OF(r) * p + (c).pp) * cn + (fold ? 0 : (c).cp)) * dm) + (c).dp % dm]
    for (int64_t r = 0; r < world; r++) {
        const struct oc_coord c = oc_layout_coord(l, r);
        CNT_OF(r, c)++;
    }
    for (int64_t r = 0; r < world; r++) {
        const struct oc_coord c = oc_layout_coord(l, r);
        R->ksym[r] = CNT_OF(r, c);
        if (image_of(R, r) == r) {
            rep_nic[NIC_OF(r)] = 1;
            rep_node[r / gpn] = 1;
        }
    }
    int ok = 1;
    for (int64_t r = 0; ok && r < world; r++) {
        const int64_t img = image_of(R, r);
        const struct oc_coord c = oc_layout_coord(l, r);
        if (R->ksym[r] != R->ksym[img]) {
            snprintf(R->sym_why, sizeof R->sym_why,
                     "rank %" PRId64 " shares its NIC with %" PRId64 " ranks of its stage, "
                     "its replica-0 image %" PRId64 " with %" PRId64,
                     r, R->ksym[r], img, R->ksym[img]);
            ok = 0;
        }
        if (ok && tp_on_nic(R, K, r, buf, cap) != tp_on_nic(R, K, img, buf, cap)) {
            snprintf(R->sym_why, sizeof R->sym_why,
                     "rank %" PRId64 " and its replica-0 image %" PRId64 " share their NICs "
                     "with different counts of their TP groups", r, img);
            ok = 0;
        }
        /* the simulated ranks of one stage on a NIC (several with CP)
         * send lockstepped flows there that max-min shares equally: they
         * must stand for as many ranks each */
        const int64_t fi = NIC_OF(r) * p + c.pp;
        if (ok && img == r) {
            if (first[fi] == 0)
                first[fi] = R->ksym[r];
            else if (first[fi] != R->ksym[r]) {
                snprintf(R->sym_why, sizeof R->sym_why,
                         "the replica-0 ranks of stage %" PRId64 " on one NIC stand for "
                         "different counts of ranks (%" PRId64 " and %" PRId64 ")",
                         c.pp, first[fi], R->ksym[r]);
                ok = 0;
            }
        }
        /* its pipeline hops (the next stage, and the wrap of interleaving)
         * and its CP ring's hops; folded, a CP hop against its image's
         * own (the image's peer is its own image: the hops are then all
         * of one kind) */
        for (int64_t dir = 0; ok && dir < 4; dir++) {
            struct oc_coord q = c;
            if (dir < 2) {
                q.pp = c.pp + (dir ? -1 : 1);
                if (q.pp < 0 || q.pp >= p) {
                    if (l->vchunks < 2 || p < 2)
                        continue;
                    q.pp = (q.pp + p) % p;
                }
            } else {
                if (cn < 2)
                    continue;
                q.cp = (c.cp + (dir == 2 ? 1 : cn - 1)) % cn;
            }
            const int64_t peer = oc_layout_rank(l, q);
            int64_t pimg = image_of(R, peer);
            if (fold && dir >= 2) {
                struct oc_coord qi = oc_layout_coord(l, img);
                qi.cp = (qi.cp + (dir == 2 ? 1 : cn - 1)) % cn;
                pimg = oc_layout_rank(l, qi);
            }
            if ((r / gpn == peer / gpn) != (img / gpn == pimg / gpn)) {
                snprintf(R->sym_why, sizeof R->sym_why,
                         "the %s hop %" PRId64 " -> %" PRId64 " and its replica-0 "
                         "image differ in crossing nodes", dir < 2 ? "pipeline" : "CP ring",
                         r, peer);
                ok = 0;
            }
        }
        /* a rank on a NIC (node, with shared uplinks) that replica 0 uses
         * is stood for by its image there */
        const int on_rep = rep_nic[NIC_OF(r)] || (shared_up && rep_node[r / gpn]);
        if (ok && on_rep && NIC_OF(img) != NIC_OF(r)) {
            snprintf(R->sym_why, sizeof R->sym_why,
                     "rank %" PRId64 " uses a NIC (or uplink) of replica 0 but its image "
                     "%" PRId64 " another one", r, img);
            ok = 0;
        }
    }
#undef NIC_OF
#undef CNT_OF
    free(cnt);
    free(first);
    free(rep_nic);
    free(rep_node);
    return ok;
}

/* Every TP group inside one node (fast mode's TP sleeps are exact only
 * there)? */
static int tp_in_nodes(const struct replay *R, int64_t *buf, int64_t cap)
{
    for (int64_t r = 0; r < R->world; r++) {
        if (oc_layout_coord(R->l, r).tp != 0)
            continue;
        const int64_t n = oc_schedule_group(R->l, r, OC_GROUP_TP, buf, cap);
        OC_ASSERT(n <= cap);
        for (int64_t i = 0; i < n; i++)
            if (buf[i] / R->gpn != r / R->gpn)
                return 0;
    }
    return 1;
}

/* The generated platform's route figures by class (platform.h), from the
 * topology, as SimGrid sums and takes the minimum along the route; hosts
 * all NULL: enough for oc_sim_group_init on a generated platform. */
static void paper_platform(struct oc_sim_platform *P, const struct oc_topology *t,
                           int64_t cards)
{
    memset(P, 0, sizeof *P);
    const int64_t g = t->gpus_per_node;
    P->cards = cards;
    P->gpus_per_node = g;
    P->generated = 1;
    P->hosts = oc_xcalloc((size_t)cards, sizeof *P->hosts);
    P->has_intra = g > 1 && cards > 1;
    P->intra_lat_s = t->intra_latency_s / 2 + t->intra_latency_s / 2;
    P->intra_bw_Bps = oc_topology_intra_Bps(t);
    P->has_inter = cards > g;
    if (P->has_inter) {
        const int over = t->switch_levels > 1 && t->oversubscription > 1;
        const double up_lat = (double)(2 * t->switch_levels - 1) * t->inter_latency_s / 2;
        const double up_bw = (double)t->nics_per_node * t->nic_bandwidth_Bps /
                             (over ? t->oversubscription : 1);
        P->inter_lat_s = t->nic_latency_s / 2 + up_lat + up_lat + t->nic_latency_s / 2;
        P->inter_bw_Bps = fmin(t->nic_bandwidth_Bps, up_bw);
    }
}

/* Folding the CP ring: does every CP rank of replica 0 run its image's
 * ops (CP rank 0 of its stage), the same kinds, sizes, costs and tags,
 * with peers of the same images? 1, or 0 with why. */
static int cp_ops_alike(struct replay *R)
{
    const struct oc_layout *l = R->l;
    for (int64_t r = 0; r < R->world; r++) {
        const struct oc_coord c = oc_layout_coord(l, r);
        if (c.tp != 0 || c.dp >= R->dpmod || c.cp == 0)
            continue;
        const int64_t img = image_of(R, r);
        const struct oc_rank_ops *a = &R->s->ranks[r], *b = &R->s->ranks[img];
        int64_t bad = a->n != b->n ? 0 : -1;
        for (int64_t i = 0; bad < 0 && i < a->n; i++) {
            const struct oc_op *x = &a->ops[i], *y = &b->ops[i];
            int same = x->kind == y->kind && x->phase == y->phase && x->part == y->part &&
                       x->coll == y->coll && x->group == y->group && x->buf == y->buf &&
                       x->p2p == y->p2p && x->async == y->async && x->mb == y->mb &&
                       x->stage == y->stage && x->chunk == y->chunk &&
                       x->layer_first == y->layer_first && x->layer_count == y->layer_count &&
                       x->count == y->count && x->flops == y->flops &&
                       x->hbm_bytes == y->hbm_bytes && x->bytes == y->bytes;
            if (same && (x->kind == OC_OP_SEND || x->kind == OC_OP_RECV))
                same = x->tag == y->tag &&
                       image_of(R, x->peer) == image_of(R, y->peer);
            if (!same)
                bad = i;
        }
        if (bad >= 0) {
            snprintf(R->sym_why, sizeof R->sym_why,
                     "rank %" PRId64 "'s op %" PRId64 " differs from its CP rank 0's", r, bad);
            return 0;
        }
    }
    return 1;
}

/* The checks of the file comment, with or without the fold (R->cpfold). */
static int plan_holds(struct replay *R, const struct oc_topology *t, int64_t *buf,
                      int64_t cap)
{
    if (!tp_in_nodes(R, buf, cap)) {
        snprintf(R->sym_why, sizeof R->sym_why,
                 "a TP group across nodes (fast mode simulates every rank)");
        return 0;
    }
    return (!R->cpfold || cp_ops_alike(R)) && placement_ok(R, t, buf, cap) &&
           coll_ok(R, buf, cap);
}

/* The replicas whose ranks of a stage share a node with replica 0's
 * (DP rank mod this is the image of one node's replicas), 1 when a
 * replica's stage fills a node or more or they do not tile DP. */
static int64_t node_replicas(const struct replay *R)
{
    const struct oc_layout *l = R->l;
    const int64_t cn = l->cp > 1 ? l->cp : 1;
    const int64_t block = l->tp * cn * (l->order == OC_ORDER_TP_PP_DP ? l->pp : 1);
    if (block >= R->gpn || R->gpn % block != 0)
        return 1;
    const int64_t d = R->gpn / block;
    return d < l->dp && l->dp % d == 0 ? d : 1;
}

unsigned char *oc_rp_sym_only(const struct replay *R)
{
    /* image_of's replicas: dp mod node_replicas at most (oc_rp_sym_plan
     * tries replica 0, then one node's replicas) */
    const int64_t dn = node_replicas(R);
    unsigned char *only = oc_xcalloc((size_t)R->world, 1);
    for (int64_t r = 0; r < R->world; r++) {
        const struct oc_coord c = oc_layout_coord(R->l, r);
        only[r] = c.tp == 0 && c.dp < dn;
    }
    return only;
}

void oc_rp_sym_plan(struct replay *R, const struct oc_topology *t)
{
    R->sym = 0;
    R->cpfold = 0;
    R->dpmod = 1;
    R->sym_why[0] = R->fold_why[0] = '\0';
    if (!R->sym_asked)
        return;
    /* the gradient group holds dp*cp ranks */
    const int64_t d = R->l->dp * (R->l->cp > 1 ? R->l->cp : 1);
    const int64_t cap = (R->l->tp > d ? R->l->tp : d) + 2;
    int64_t *buf = oc_xmalloc((size_t)cap * sizeof *buf);
    struct oc_sim_platform paper;
    paper_platform(&paper, t, R->world);
    const struct oc_sim_platform *real = R->plat;
    R->plat = &paper;
    R->ksym = oc_xcalloc((size_t)R->world, sizeof *R->ksym);
    /* replica 0, else the replicas on its node (a flat ring across nodes
     * with several members per node); CP rank 0 of each stage for its CP
     * group first, else every CP rank */
    const int64_t dn = node_replicas(R);
    char why1[sizeof R->sym_why] = "";
    for (int64_t dm = 1; !R->sym && dm <= dn; dm = dm == dn ? dn + 1 : dn) {
        R->dpmod = dm;
        if (R->l->cp > 1) {
            R->cpfold = 1;
            if (plan_holds(R, t, buf, cap))
                R->sym = 1;
            else {
                if (dm == 1)
                    snprintf(R->fold_why, sizeof R->fold_why, "%s", R->sym_why);
                R->cpfold = 0;
            }
        }
        if (!R->sym && plan_holds(R, t, buf, cap))
            R->sym = 1;
        if (dm == 1 && !R->sym)
            snprintf(why1, sizeof why1, "%s", R->sym_why);
    }
    if (!R->sym) {
        R->dpmod = 1;
        snprintf(R->sym_why, sizeof R->sym_why, "%s", why1); /* replica 0's reason */
    }
    R->plat = real;
    free(paper.hosts);
    free(buf);
}

int oc_rp_sym_recheck(struct replay *R, int64_t *buf, int64_t cap, struct oc_status *st)
{
    /* logged here: the log settings apply once the engine started */
    if (R->sym_asked && !R->sym)
        XBT_DEBUG("symmetric mode falls back to fast mode: %s", R->sym_why);
    else if (R->sym && R->dpmod == 1)
        XBT_DEBUG("symmetric mode: replica 0 stands for all %" PRId64 " replicas, on %zu "
                  "hosts", R->l->dp, sg_host_count());
    else if (R->sym)
        XBT_DEBUG("symmetric mode: replicas 0..%" PRId64 " (one node's) stand for all %" PRId64
                  " replicas, on %zu hosts", R->dpmod - 1, R->l->dp, sg_host_count());
    if (R->sym && R->cpfold)
        XBT_DEBUG("symmetric mode: CP rank 0 stands for its CP group of %" PRId64, R->l->cp);
    else if (R->sym_asked && R->fold_why[0])
        XBT_DEBUG("symmetric mode: the CP ring is not folded: %s", R->fold_why);
    if (!R->sym || coll_ok(R, buf, cap))
        return 0;
    return oc_fail(st, "symmetric mode: on the loaded platform %s (run --fidelity fast)",
                   R->sym_why);
}

static struct oc_coll_loop *loop_new(struct replay *R, const struct oc_sim_group *g,
                                     int64_t rank, int net)
{
    sg_host_t twin = net ? R->plat->twin_net[rank] : R->plat->twin_nv[rank];
    OC_ASSERT(twin);
    struct oc_coll_loop *L = oc_xcalloc(1, sizeof *L);
    char name[160];
    snprintf(name, sizeof name, "%s:loop%s%" PRId64, g->name, net ? "net" : "nv", rank);
    L->mb = sg_mailbox_by_name(name);
    L->go = sg_sem_init(0);
    L->scale = net ? R->ksym[rank] : 1;
    if (R->nloops == R->cap_loops) {
        R->cap_loops = R->cap_loops ? 2 * R->cap_loops : 16;
        R->loops = oc_xrealloc(R->loops, (size_t)R->cap_loops * sizeof *R->loops);
        R->loop_owner =
            oc_xrealloc(R->loop_owner, (size_t)R->cap_loops * sizeof *R->loop_owner);
    }
    R->loops[R->nloops] = L;
    R->loop_owner[R->nloops++] = rank;
    oc_sim_actor_create(net ? "twin-net" : "twin-nv", twin, oc_coll_loop_main, L);
    return L;
}

static struct oc_coll_in *in_new(struct replay *R, int64_t rank)
{
    sg_host_t host = R->plat->twin_in ? R->plat->twin_in[rank] : NULL;
    OC_ASSERT(host);
    struct oc_coll_in *I = oc_xcalloc(1, sizeof *I);
    I->go = sg_sem_init(0);
    I->done = sg_sem_init(0);
    if (R->nins == R->cap_ins) {
        R->cap_ins = R->cap_ins ? 2 * R->cap_ins : 16;
        R->ins = oc_xrealloc(R->ins, (size_t)R->cap_ins * sizeof *R->ins);
        R->in_owner = oc_xrealloc(R->in_owner, (size_t)R->cap_ins * sizeof *R->in_owner);
    }
    R->ins[R->nins] = I;
    R->in_owner[R->nins++] = rank;
    oc_sim_actor_create("twin-in", host, oc_coll_in_main, I);
    return I;
}

void oc_rp_sym_loops(struct replay *R, struct rgroup *G)
{
    const struct oc_sim_group *g = &G->g;
    const int64_t n = g->size;
    G->image = oc_xmalloc((size_t)n * sizeof *G->image);
    G->loops = oc_xcalloc((size_t)(2 * n), sizeof *G->loops);
    group_images(R, g->ranks, n, G->image);
    for (int64_t i = 0; i < n; i++) {
        OC_ASSERT((G->image[i] == i) == (R->sim_of[g->ranks[i]] >= 0));
        if (G->image[i] != i)
            continue;
        const int need = oc_coll_sym_loops(g, G->image, i);
        if (need & 1)
            G->loops[i] = loop_new(R, g, g->ranks[i], 0);
        if (need & 2)
            G->loops[n + i] = loop_new(R, g, g->ranks[i], 1);
        if (need & 4) {
            if (!G->ins)
                G->ins = oc_xcalloc((size_t)n, sizeof *G->ins);
            G->ins[i] = in_new(R, g->ranks[i]);
        }
    }
    G->tx.image = G->image;
    G->tx.loop_nv = G->loops;
    G->tx.loop_net = G->loops + n;
    G->tx.in = G->ins;
}

void oc_rp_sym_stop(struct rrank *rk)
{
    const struct replay *R = rk->R;
    for (int64_t i = 0; i < R->nloops; i++)
        if (R->loop_owner[i] == rk->rank)
            oc_coll_loop_stop(R->loops[i]);
    for (int64_t i = 0; i < R->nins; i++)
        if (R->in_owner[i] == rk->rank)
            oc_coll_in_stop(R->ins[i]);
}

void oc_rp_sym_free(struct replay *R)
{
    for (int64_t i = 0; i < R->nloops; i++) {
        sg_sem_destroy(R->loops[i]->go);
        free(R->loops[i]);
    }
    free(R->loops);
    free(R->loop_owner);
    R->loops = NULL;
    R->loop_owner = NULL;
    R->nloops = R->cap_loops = 0;
    for (int64_t i = 0; i < R->nins; i++) {
        sg_sem_destroy(R->ins[i]->go);
        sg_sem_destroy(R->ins[i]->done);
        free(R->ins[i]);
    }
    free(R->ins);
    free(R->in_owner);
    R->ins = NULL;
    R->in_owner = NULL;
    R->nins = R->cap_ins = 0;
}
