/* wait_clock.h: the monotonic clock of the executor and the pacing of
 * every wait loop (MPI requests in mpi_wait.c, CUDA events and NCCL
 * communicators in cuda/comm_nccl.c); the cpu backend's op timing reads
 * the same clock. (Named so, not poll.h, so that it does not shadow POSIX
 * <poll.h> on the executor's include path.)
 *
 *   const double t0 = oc_now_s();
 *   long sleep_ns = 0;
 *   while (!done()) {
 *       if (oc_now_s() - t0 > timeout_s) ...fail...
 *       oc_wait_pace(oc_now_s() - t0, &sleep_ns);
 *   }
 *
 * What it is not: a deadline or a message (each caller says what timed out).
 */
#ifndef OC_EXEC_WAIT_CLOCK_H
#define OC_EXEC_WAIT_CLOCK_H

/* Seconds of CLOCK_MONOTONIC (never jumps with the wall clock). */
double oc_now_s(void);

/* One pause of a wait that has lasted waited_s: sched_yield for the first
 * millisecond (a message that is about to arrive is not delayed), then
 * sleeps doubling from 10 us to 1 ms (*sleep_ns, 0 at the start), so that
 * a rank that waits long (a pipeline bubble) leaves the cores to the ranks
 * that compute. */
void oc_wait_pace(double waited_s, long *sleep_ns);

#endif
