/* lost.h: what ocsim-exec says and marks when its job ends early: the rank
 * that was lost (killed, crashed) named by a survivor, and the streamed
 * output (loss.csv.partial) marked partial.
 *
 * A rank that dies leaves the others waiting; the launcher (mpirun, srun)
 * then ends them, Open MPI with SIGCONT and SIGTERM (SIGKILL later), Slurm
 * with SIGCONT and SIGTERM. Before this file only the launcher's own
 * message named the dead rank. Here every rank of a node posts, in memory
 * the node's ranks share (the board: an MPI shared window, ctl_mpi.c; one
 * process's memory for ctl_local.c), its pid and what it is doing
 * (oc_ctl_set_what: "op 17 (recv act mb 3 from rank 1) of step 2"). On
 * SIGTERM or SIGINT a survivor reads the board: a rank whose slot says it
 * runs while its process is gone (no such pid, or a zombie) was lost.
 * Every rank leaves its slot marked before its process goes (done at the
 * end, ended by die() or by the signal), so a survivor that exits first is
 * never taken for a lost one.
 *
 * One line per node: whoever ends the job first claims the end on the
 * board (an atomic compare-and-swap) with its reason and prints it; the
 * others stay silent. That is a rank that ends the job itself (a timeout,
 * a failure: exec/main.c's die(), oc_lost_end) or the first survivor
 * whose SIGTERM handler runs: "rank 1 was lost in op 17 (...) of step 2:
 * its process is gone (killed or crashed), the job is ended" (exit code
 * OC_LOST_EXIT), or with no rank lost "interrupted (SIGTERM) while rank 0
 * was in ..." (exit 130). The process holding the stream (rank 0) appends
 * the claimed reason to it: "# partial: 6 of 100 steps completed; <why>".
 *
 * What it is not: a detector of ranks on other nodes (pids are per node:
 * a survivor there says the job was interrupted) or a way to carry on
 * without the lost rank (MPI cannot: the job ends).
 *
 *   oc_lost_handlers_install();     // main, once
 *   // rank 0, once the stream is open (flushed after every row):
 *   oc_lost_stream(fileno(f), steps);
 *   ... each step: its row written and flushed, then oc_lost_stream_row() ...
 *   oc_lost_stream_done();          // then close and rename it yourself
 *   // a rank that ends the job (the stream marked where it is held):
 *   if (oc_lost_end(c->slot, line)) fputs(line, stderr);
 */
#ifndef OC_EXEC_LOST_H
#define OC_EXEC_LOST_H

#include <stddef.h>
#include <stdint.h>

/* A survivor's exit code when a rank was lost (main.c's list of codes). */
#define OC_LOST_EXIT 4

/* RUNNING: the only state in which a gone process means a lost rank. */
enum oc_lost_state { OC_LOST_EMPTY, OC_LOST_RUNNING, OC_LOST_DONE, OC_LOST_ENDED };

/* One rank's slot on the board (written by its rank only). */
struct oc_lost_slot {
    volatile int64_t pid;
    volatile int32_t rank;
    volatile int32_t state; /* enum oc_lost_state */
    char what[256];         /* what it is doing (oc_ctl_set_what) */
    char why[512];          /* ENDED: the line it ended the job with */
};

/* Bytes of a board of n slots (the header holds who claimed the end). */
size_t oc_lost_board_bytes(int nslots);
/* Makes mem (oc_lost_board_bytes(nslots), shared by the node's ranks) the
 * process's board; called by every rank of the node with the same memory,
 * and by exactly one of them with init = 1 before the others read it (the
 * caller's barrier). ctl_mpi.c and ctl_local.c do it. */
void oc_lost_board_attach(void *mem, int nslots, int init);
/* The program's choice (ocsim-exec's main): SIGTERM and SIGINT end the
 * process as the header says (without a board: their default action). */
void oc_lost_handlers_install(void);
/* The slot of local rank i (its rank's ctl keeps it: ctl.h), filled as
 * running with this process's pid. */
struct oc_lost_slot *oc_lost_slot_take(int i, int rank);
/* Posts what the rank is doing (ctl.c's oc_ctl_set_what). */
void oc_lost_post(struct oc_lost_slot *s, const char *what);
/* The rank is done (its slot no longer counts); the last one out detaches
 * the board (oc_lost_board_detach) before its memory goes. */
void oc_lost_done(struct oc_lost_slot *s);
void oc_lost_board_detach(void);

/* The rank ends the job on purpose with `line` (without a newline): 1
 * when it is the first of its node to do so (it prints the line), 0 when
 * another rank already did (it stays silent). The stream, where this
 * process holds it, is marked with the first one's line. s NULL: 1. */
int oc_lost_end(struct oc_lost_slot *s, const char *line);
/* "; rank 1 is stopped (SIGSTOP) in op 7 (...) of step 2" for each rank
 * of the node whose process is stopped, or "" (a timeout's message). */
void oc_lost_stopped(char *buf, size_t n);

/* The process's streamed output: fd open on its temporary name, `steps`
 * rows to come, each flushed and then counted with oc_lost_stream_row; an
 * early end appends "# partial: K of `steps` steps completed; <why>" and
 * syncs it, under the temporary name. Done: the caller closes and renames
 * it. */
void oc_lost_stream(int fd, int64_t steps);
void oc_lost_stream_row(void);
void oc_lost_stream_done(void);

#endif
