/* p2p_order.h: the order rules of pipeline messages, and the check that a
 * schedule's SEND / RECV ops obey them and cannot deadlock. Pure over the
 * op lists (no GPU, no NCCL, no MPI), so a CPU-only build checks every
 * schedule against the rules of the cuda backend.
 *
 *   struct oc_schedule s;                  // oc_schedule_build (schedule.h)
 *   if (oc_p2p_check_order(&s, OC_P2P_RULES_DIRECTION, &st) != 0)
 *       ...st.msg: the pair out of order, or the waits of the deadlock...
 *   int q = oc_p2p_stream_of(me, peer);    // OC_P2P_UP: to a higher rank
 *
 * What it is not: the schedule (schedule.h builds the op lists) or a
 * backend (the cuda backend, exec/cuda/backend_cuda.c, runs its messages
 * under these rules and calls oc_p2p_check_order before a schedule runs;
 * the cpu backend's MPI_Isend / MPI_Irecv match by tag and need no order).
 *
 * The rules (the cuda backend's; its file comment says why they are so):
 *
 * Pairing. NCCL pairs the sends and receives between two ranks by their
 * order, not by tag (NCCL user guide, "Point-to-point communication"): the
 * n-th SEND of rank A to rank B is the partner of the n-th RECV of B from
 * A. A schedule is well paired when, for every ordered pair (A, B), A's
 * SENDs to B carry the tags of B's RECVs from A, in the same order, and as
 * many (the tag is the schedule's name of the message, schedule.h).
 *
 * Streams. Each message is its own ncclSend / ncclRecv on the stream of
 * its direction at both ends: up when it travels to a higher world rank,
 * down to a lower one (oc_p2p_stream_of). A stream is FIFO: an ncclSend
 * holds it until the peer's matching ncclRecv runs, and the other way.
 *
 * Programs. Each rank reaches its ops in list order; a run of SEND / RECV
 * ops (ALLOC / FREE may sit between) ends at the next other op or the
 * list's end, and the program passes that point only once the run's
 * receives completed (the compute stream waits for them, and every later
 * op follows the compute stream); at a WAIT only once every earlier send
 * completed (the host waits). A message completes together with its
 * partner, both at the head of their streams. TP / DP / EMBED collectives
 * run on other communicators and are not modelled (an op like a compute
 * op here).
 */
#ifndef OC_P2P_ORDER_H
#define OC_P2P_ORDER_H

#include <stdint.h>

#include "schedule.h"
#include "status.h"

/* The stream of a pipeline message, the same at both ends. */
enum oc_p2p_stream {
    OC_P2P_UP,   /* from a lower to a higher world rank */
    OC_P2P_DOWN, /* from a higher to a lower world rank */
    OC_P2P_STREAMS
};

/* The stream of a message from world rank `from` to world rank `to`
 * (from != to). */
enum oc_p2p_stream oc_p2p_stream_of(int64_t from, int64_t to);

/* How the messages join the streams, for the deadlock check. */
enum oc_p2p_rules {
    /* the cuda backend: two FIFO streams per rank, up and down; a message
     * joins its stream when the program reaches it and is the head once the
     * earlier messages there completed */
    OC_P2P_RULES_DIRECTION,
    /* the cuda backend's former design: one FIFO stream per rank; a run is
     * one NCCL group, joining the stream at the run's end; its messages can
     * pair once the group heads the stream, and it leaves it when all did
     * (kept to show, in a test, that the interleaved schedule deadlocks
     * under it) */
    OC_P2P_RULES_GROUPED,
};

/* The pairing rule: for every pair (a, q) of ranks, a's SENDs to q carry
 * the tags of q's RECVs from a, in the same order, and as many. 0, or -1
 * with st->msg naming the pair and the first mismatch ("rank 0 sends fewer
 * messages to rank 1 ...", "pipeline messages from rank 0 to rank 1 are
 * out of order ..."). */
int oc_p2p_check_pairs(const struct oc_schedule *s, struct oc_status *st);

/* Simulates the whole schedule's pipeline messages under `rules` (linear
 * in the ops, apart from pairing inside a group). 0 if every message
 * completes; -1 with st->msg "pipeline messages would deadlock ...",
 * naming the cycle of ranks and ops that wait for each other, in one line.
 * Assumes the pairs' counts match (oc_p2p_check_pairs checks that); a
 * message without partner is reported as a deadlock too. */
int oc_p2p_check_deadlock(const struct oc_schedule *s, enum oc_p2p_rules rules,
                          struct oc_status *st);

/* Both: oc_p2p_check_pairs, then oc_p2p_check_deadlock under `rules`. */
int oc_p2p_check_order(const struct oc_schedule *s, enum oc_p2p_rules rules,
                       struct oc_status *st);

#endif
