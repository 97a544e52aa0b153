/* sweep_stop.h: SIGINT and SIGTERM turned into the stop descriptor of a
 * sweep (sweep.h: opts.stop_fd), for a command that writes up what it has
 * when the user stops it instead of dying half-way.
 *
 *   if (oc_sweep_stop_catch(&st) != 0) ...           // handlers installed
 *   so.stop_fd = oc_sweep_stop_fd();
 *   int rc = oc_sweep_run(..., &so, &st);             // 1: stopped
 *   int sig = rc == 1 ? oc_sweep_stop_signal() : 0;   // SIGINT or SIGTERM
 *   oc_sweep_stop_ignore();                           // the write-up
 *
 * The handler writes a byte to a self-pipe (a flag alone could be set just
 * before poll sleeps) and keeps the first signal. A signal inherited as
 * ignored (nohup, a background job of a script) stays ignored: that caller
 * asked for it. oc_sweep_stop_ignore ignores both from then on, for the
 * process and what it execs (an ignored signal stays ignored across exec:
 * gnuplot included), so a second Ctrl-C cannot cut a file half-written.
 *
 * What it is not: the stopping of the workers (sweep.c does that). One
 * process-wide state: catch once per sweep (oc_sweep_stop_release between
 * two).
 */
#ifndef OC_SIM_SWEEP_STOP_H
#define OC_SIM_SWEEP_STOP_H

#include "status.h"

/* Creates the self-pipe and installs the handlers. 0, or -1 with st->msg. */
int oc_sweep_stop_catch(struct oc_status *st);

/* The pipe's read end (readable once a signal came), for opts.stop_fd. */
const int *oc_sweep_stop_fd(void);

/* The first signal caught (SIGINT or SIGTERM), 0 when none. */
int oc_sweep_stop_signal(void);

/* Both signals ignored from here on (those caught); the pipe closed. */
void oc_sweep_stop_ignore(void);

/* After oc_sweep_stop_ignore, between two sweeps of one command (`ocsim
 * sweep --cards LIST`): the signals caught before are back to their
 * default action, so that the next oc_sweep_stop_catch installs its
 * handlers again (one ignored on entry stays ignored). */
void oc_sweep_stop_release(void);

#endif
