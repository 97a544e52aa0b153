/* step_metrics.h: the one definition of what a training step cost, from a
 * timeline of op intervals (timeline.h). The simulator (sim/replay.c) and
 * the executor (exec/runner.c, both backends) each fill a timeline and
 * call oc_step_metrics, so a prediction and a measurement are the same
 * figures computed the same way, and `ocsim compare` holds like against
 * like.
 *
 * What it is not: a clock (the producers say when ops ran), or the figures
 * that follow from the step time (tokens/s, TFLOP/s, MFU, whether it fits:
 * oc_metrics_finish, metrics.h).
 *
 *   struct oc_metrics mt;
 *   oc_metrics_init(&mt, &layout);
 *   oc_step_metrics(&tl, &mt);              // step time, stage table
 *   oc_metrics_finish(&mt, &model, &topo);  // means, tokens/s, MFU
 *
 * Definitions. Op i of rank r has its kind, group and `async` flag from
 * tl->sched and its interval [start, end] (+ inner, 0 when tl->inner_s is
 * NULL) from the timeline; timeline.h says what the ends mean. For a
 * pipeline message, its SEND and RECV are matched by (sender, tag)
 * (oc_timeline_partners): sent = the SEND's start, posted = the RECV's
 * start, arrived = the RECV's end. dur = end - start. Only recorded ranks
 * count: a rank with NULL times (stood for by its proxy) adds nothing, so
 * the means below are over the recorded ranks.
 *
 *   end(r)       the latest end of r's ops other than SENDs and async
 *                collectives: those run on after the rank moved on, and
 *                the schedule's WAIT completes them before the optimizer.
 *   step_time_s  max over ranks of end(r): from the step's start (time 0)
 *                to the end of the last rank's last op.
 *   compute      sum over COMPUTE ops of dur, + inner of the other ops.
 *   bubble       pipeline wait + end-of-step idle: sum over RECVs of
 *                wait = max(0, min(sent, arrived) - posted), the part of a
 *                RECV before its data was sent (a RECV whose SEND is not
 *                recorded: 0), + (step_time_s - end(r)). A slow link's
 *                transfer time is NOT bubble: a RECV posted at 1 whose
 *                data was sent at 2 and arrived at 5 waits 1 (bubble) and
 *                transfers 3 (exposed).
 *   exposed_comm time r is blocked in communication that is not pipeline
 *                wait: sum over RECVs of dur - wait, over blocking
 *                COLLECTIVEs of dur - inner, over WAITs of dur. Async
 *                collectives are not exposed (they overlap the ops after
 *                them); the part of them compute does not hide shows up
 *                in the WAIT.
 *   tp_comm      sum of dur - inner over r's blocking TP collectives, then
 *                of dur over its async TP collectives (whether or not they
 *                overlap compute).
 *   dp_comm      the same over DP and EMBED collectives.
 *   pp_comm      sum over r's SENDs of max(0, arrived - max(sent,
 *                posted)): a message's transfer, from when both ends were
 *                ready to its arrival (the RECV's wait, by then counted
 *                as bubble, is not in it). Counted on the sender: a RECV
 *                adds no pp_comm.
 *   cp_comm      the same over r's context-parallel ring SENDs (p2p
 *                OC_P2P_KV, schedule_cp.h), which pp_comm leaves out. A
 *                ring RECV's row runs from its post (with the step's SEND)
 *                to the block's arrival, so it may overlap the step's
 *                compute; it adds to exposed only its end beyond the end
 *                of the op before it (not a SEND), and no bubble.
 *   peak_mem     tl->peak_mem_bytes[r] when measured, else the largest
 *                running sum (from 0, in list order) of r's ALLOC bytes
 *                minus FREE bytes.
 * ALLOC and FREE take no time; a SEND takes none of the rank's (its time
 * is the transfer, pp_comm).
 *
 * Per stage (the table of struct oc_metrics): compute, bubble, tp/pp/dp
 * and exposed comm are means over the stage's recorded ranks, peak_mem the
 * max. Sums run in list order, the blocking collectives before the async
 * ones, over ranks in rank order (the order fixes the last bits).
 */
#ifndef OC_STEP_METRICS_H
#define OC_STEP_METRICS_H

#include "metrics.h"
#include "timeline.h"

/* Fills mt->step_time_s and mt->stage[0..pp-1] (zeroed first) by the
 * definitions above; mt was initialised with oc_metrics_init on the
 * schedule's layout. Every stage needs a recorded rank. */
void oc_step_metrics(const struct oc_timeline *tl, struct oc_metrics *mt);

/* The same, for a producer that holds one rank's ops and times at a time
 * (sim/replay_steady.c's folded figures): each recorded rank's figures
 * by oc_step_rank_figures, then oc_step_metrics_ranks over them. */
struct oc_rank_fig {
    double end, compute, bubble, exposed, tp, pp, dp, cp, peak_mem;
};
/* The message of the rank's op i (a SEND or a RECV): 1 with its SEND's
 * start (sent), its RECV's start (posted) and end (arrived); 0 when its
 * other end is not recorded. */
typedef int (*oc_step_msg_fn)(void *ctx, int64_t i, double *sent, double *posted,
                              double *arrived);
/* One rank's figures but the end-of-step idle (bubble), which needs the
 * step time: its ops ro, their times S, E (and I: inner, or NULL), its
 * measured peak memory (NULL: the running sum). */
void oc_step_rank_figures(const struct oc_rank_ops *ro, const double *S, const double *E,
                          const double *I, const double *peak_mem, oc_step_msg_fn msg,
                          void *ctx, struct oc_rank_fig *f);
/* The step time and stage table from f[r] of the R ranks with rec[r]
 * (their bubble gets the end-of-step idle). */
void oc_step_metrics_ranks(const struct oc_layout *l, int64_t R, const unsigned char *rec,
                           struct oc_rank_fig *f, struct oc_metrics *mt);

#endif
