/* coll_tree.c: the tree (coll.h's descriptor oc_coll_tree), NCCL-style:
 * inside each node a chain from its first member (the node's leader) to
 * its last; across nodes a binary tree of the leaders in node order (node
 * k's parent is node (k-1)/2). A single binary tree, not NCCL's two
 * complementary ones (Sanders et al. 2009): the root's links carry the
 * whole buffer, which matters little for the small messages the tree is
 * chosen for. Four phases over that tree:
 *   reduce     pipelined in C chunks (opts.chunk_bytes): per chunk, take
 *              it from every child at once, reduce (oc_coll_reduce), then
 *              pass the sum up without waiting (the next chunk's receives
 *              go on);
 *   broadcast  pipelined: per chunk, receive it from the parent, pass it
 *              to every child;
 *   scatter    store and forward: receive from the parent one message of
 *              the S/N shards of every member of this subtree, pass each
 *              child its subtree's shards;
 *   gather     the reverse: take each child's subtree shards, pass them
 *              up with this member's own in one message.
 * All-reduce = reduce + broadcast (NCCL); reduce-scatter = reduce +
 * scatter and all-gather = gather + broadcast, the short-vector
 * compositions of Chan et al. 2007. All-reduce applies to every group;
 * reduce-scatter and all-gather only across nodes (inside one node the
 * tree only adds hops to the ring, and NCCL's tree serves all-reduce
 * alone). Closed forms: oc_cf_tree_* (core/closed_form.h). */
#define _POSIX_C_SOURCE 200809L

#include "coll.h"

#include <inttypes.h>
#include <math.h>

#include <simgrid/comm.h>

#include "sim_log.h"

XBT_LOG_NEW_DEFAULT_SUBCATEGORY(ocsim_coll_tree, ocsim_coll,
                                "ocsim: tree collectives");

/* Member me's place in the tree: its parent (-1 at the root) and up to
 * three children (the next member of its chain; for a leader the leaders
 * of nodes 2k+1 and 2k+2), with the hops to and from them. */
struct tree_pos {
    int64_t parent, child[3], nchild;
    struct oc_coll_hop up_out, down_in;        /* to / from the parent */
    struct oc_coll_hop up_in[3], down_out[3];  /* from / to each child */
};

static void tree_links(const struct oc_sim_group *g, int64_t me, int64_t *parent,
                       int64_t child[3], int64_t *nchild)
{
    const int64_t k = g->node[me], j = g->local[me], c = oc_coll_node_count(g, k);
    *parent = -1;
    *nchild = 0;
    if (j > 0)
        *parent = oc_coll_node_member(g, k, j - 1);
    else if (k > 0)
        *parent = oc_coll_node_member(g, (k - 1) / 2, 0);
    if (j + 1 < c)
        child[(*nchild)++] = oc_coll_node_member(g, k, j + 1);
    for (int64_t ck = 2 * k + 1; j == 0 && ck <= 2 * k + 2 && ck < g->nodes; ck++)
        child[(*nchild)++] = oc_coll_node_member(g, ck, 0);
}

static struct tree_pos tree_pos_of(const struct oc_coll_tx *tx, int64_t me)
{
    struct tree_pos t;
    tree_links(tx->g, me, &t.parent, t.child, &t.nchild);
    for (int64_t i = 0; i < t.nchild; i++) {
        t.up_in[i] = oc_coll_hop(tx, t.child[i], me);
        t.down_out[i] = oc_coll_hop(tx, me, t.child[i]);
    }
    if (t.parent >= 0) {
        t.up_out = oc_coll_hop(tx, me, t.parent);
        t.down_in = oc_coll_hop(tx, t.parent, me);
    }
    return t;
}

/* Bytes of the shards of member v's subtree: member u's shard is chunk u
 * of S cut in N (oc_coll_chunk_bytes). */
static int64_t subtree_bytes(const struct oc_sim_group *g, int64_t S, int64_t v)
{
    int64_t parent, child[3], nchild, sum = oc_coll_chunk_bytes(S, g->size, v);
    tree_links(g, v, &parent, child, &nchild);
    for (int64_t i = 0; i < nchild; i++)
        sum += subtree_bytes(g, S, child[i]);
    return sum;
}

/* One step up: take one message from every child at once, then pass
 * up_bytes to the parent without waiting (the next step's receives go
 * on). A chunk of the reduce (reduce: the children's chunks of up_bytes
 * summed into this member's, oc_coll_reduce, hidden by the slowest
 * child's hop), or the whole gather (reduce 0). */
static void pass_up(const struct oc_coll_tx *tx, const struct tree_pos *t, int64_t up_bytes,
                    int reduce, struct oc_coll_comms *sends)
{
    sg_comm_t recvs[3];
    double hidden_s = 0;
    for (int64_t i = 0; i < t->nchild; i++) {
        recvs[i] = oc_coll_get_async(&t->up_in[i]);
        if (reduce && oc_coll_hop_s(&t->up_in[i], up_bytes) > hidden_s)
            hidden_s = oc_coll_hop_s(&t->up_in[i], up_bytes);
    }
    if (t->nchild > 0) {
        sg_comm_wait_all(recvs, (size_t)t->nchild);
        if (reduce)
            oc_coll_reduce(tx, up_bytes, t->nchild + 1, hidden_s, 1);
    }
    if (t->parent >= 0)
        oc_coll_comms_push(sends, oc_coll_put(&t->up_out, up_bytes));
}

/* One step down: take one message from the parent, then pass child i
 * down_bytes[i]. A chunk of the broadcast, or the whole scatter. */
static void pass_down(const struct tree_pos *t, const int64_t down_bytes[3],
                      struct oc_coll_comms *sends)
{
    if (t->parent >= 0)
        oc_coll_get(&t->down_in);
    for (int64_t i = 0; i < t->nchild; i++)
        oc_coll_comms_push(sends, oc_coll_put(&t->down_out[i], down_bytes[i]));
}

static int tree_applies(const struct oc_sim_group *g, enum oc_coll_kind kind)
{
    if (kind == OC_COLL_ALLREDUCE)
        return 1;
    return (kind == OC_COLL_REDUCESCATTER || kind == OC_COLL_ALLGATHER) && g->nodes > 1;
}

static double tree_estimate_s(const struct oc_sim_group *g, enum oc_coll_kind kind,
                              double bytes, const struct oc_sim_coll_opts *o)
{
    OC_ASSERT(tree_applies(g, kind));
    if (g->size < 2)
        return 0;
    /* The longest chain stands for every node's (closed_form.h assumes
     * the same number on each). */
    int64_t longest = 1;
    for (int64_t k = 0; k < g->nodes; k++)
        if (oc_coll_node_count(g, k) > longest)
            longest = oc_coll_node_count(g, k);
    const struct oc_cf_levels v = oc_coll_levels(g, longest, &g->intra, &g->tree, o);
    const int64_t C = oc_coll_pipeline_chunks(llround(bytes), o);
    switch (kind) {
    case OC_COLL_ALLREDUCE: return oc_cf_tree_allreduce_s(&v, bytes, C);
    case OC_COLL_REDUCESCATTER: return oc_cf_tree_reducescatter_s(&v, bytes, C);
    case OC_COLL_ALLGATHER:
    default:
        return oc_cf_tree_allgather_s(&v, bytes, C);
    }
}

static void tree_run(const struct oc_coll_tx *tx, int64_t me, const struct oc_coll_call *c)
{
    const struct oc_sim_group *g = tx->g;
    OC_ASSERT(tree_applies(g, c->kind));
    XBT_DEBUG("%s of %" PRId64 " bytes on %s, member %" PRId64, oc_coll_name(c->kind),
              c->bytes, g->name, me);
    const struct tree_pos t = tree_pos_of(tx, me);
    const int64_t S = c->bytes, C = oc_coll_pipeline_chunks(S, tx->o);
    /* Sends are waited for at the end: a member passes a chunk on and goes
     * on receiving the next. */
    struct oc_coll_comms sends = {0};
    if (c->kind == OC_COLL_ALLGATHER)
        pass_up(tx, &t, subtree_bytes(g, S, me), 0, &sends); /* gather */
    else
        for (int64_t ch = 0; ch < C; ch++) /* reduce */
            pass_up(tx, &t, oc_coll_chunk_bytes(S, C, ch), 1, &sends);
    int64_t down[3];
    if (c->kind == OC_COLL_REDUCESCATTER) { /* scatter */
        for (int64_t i = 0; i < t.nchild; i++)
            down[i] = subtree_bytes(g, S, t.child[i]);
        pass_down(&t, down, &sends);
    } else {
        for (int64_t ch = 0; ch < C; ch++) { /* broadcast */
            for (int64_t i = 0; i < t.nchild; i++)
                down[i] = oc_coll_chunk_bytes(S, C, ch);
            pass_down(&t, down, &sends);
        }
    }
    oc_coll_comms_wait(&sends);
    oc_coll_comms_free(&sends);
}

const struct oc_coll_algo oc_coll_tree = {
    .id = OC_SIM_ALGO_TREE,
    .name = "tree",
    .applies = tree_applies,
    .estimate_s = tree_estimate_s,
    .run = tree_run,
};
