/* schedule_fixtures.h: what the suites of the schedule core share
 * (test_schedule, test_schedule_order, test_schedule_memory): a spread of
 * layouts, counters over one rank's op list, and the checkers that hold a
 * whole schedule against its rules, written here independently of core:
 *
 * - check_p2p: every SEND has exactly one RECV with the same (peer, tag,
 *   bytes);
 * - check_collectives: every member of a group issues the same sequence of
 *   collectives;
 * - simulate: a round-robin replay of the ranks (a RECV waits for its SEND,
 *   a blocking collective for every member, a WAIT for the rank's async
 *   ones) that must reach the end of every list.
 *
 *   struct oc_model m;  oc_test_tiny_model(&m);
 *   for (int i = 0; i < NCONFIGS; i++) {
 *       struct oc_layout l = make_layout(&configs[i]);
 *       struct oc_schedule s;  build(&s, &m, &l, OC_GRAIN_LAYER);
 *       CU_ASSERT(simulate(&s, 0));  oc_schedule_free(&s);
 *   }
 *
 * What it is not: a test. build asserts (fatally) that the schedule built;
 * nothing else here asserts.
 */
#ifndef OC_SCHEDULE_FIXTURES_H
#define OC_SCHEDULE_FIXTURES_H

#include <stdint.h>

#include "layout.h"
#include "model.h"
#include "schedule.h"

/* A layout in one line: tp t, pp p, dp d, m micro-batches per pipeline
 * (global batch m*d, micro-batch 1, sequence 32), the schedule with v
 * chunks, sequence parallelism, recompute, ZeRO-1, overlapped gradient
 * reduction, rank order. */
struct cfg {
    int64_t t, p, d, m;
    enum oc_schedule_kind sched;
    int64_t v;
    int sp;
    enum oc_recompute rc;
    int shard, overlap;
    enum oc_rank_order order;
};

struct oc_layout make_layout(const struct cfg *c);

/* A spread of layouts: every schedule, m below, at and above p, SP on and
 * off, each recompute mode, both rank orders, ZeRO-1 and overlap. */
extern const struct cfg configs[];
#define NCONFIGS 14

/* oc_schedule_build with grain g and memory ops; asserts (fatally) that
 * it built. */
void build(struct oc_schedule *s, const struct oc_model *m,
           const struct oc_layout *l, enum oc_grain g);

/* Ops of one rank matching kind/phase/part (-1: any). */
int64_t count_ops(const struct oc_rank_ops *r, int kind, int phase, int part);
/* Sum of `count` over collectives of one kind, group and payload (bytes
 * -1: any). */
int64_t count_coll(const struct oc_rank_ops *r, int coll, int group,
                   double bytes);
int64_t rank_of(const struct oc_layout *l, int64_t tp, int64_t pp, int64_t dp);

/* The number of messages when every SEND has exactly one RECV with the
 * same (peer, tag, bytes) and keys are unique; -1 on a mismatch. */
int64_t check_p2p(const struct oc_schedule *s);
/* 1 when every member of each group issues the same collectives (kind,
 * bytes, count, async) in the same order, and ranks outside the embedding
 * group hold no embedding all-reduce; else 0. */
int check_collectives(const struct oc_schedule *s);
/* 1 when the round-robin replay reaches the end of every rank's list;
 * blocking_send 1 makes a SEND wait for its receiver (rendezvous). */
int simulate(const struct oc_schedule *s, int blocking_send);

#endif
