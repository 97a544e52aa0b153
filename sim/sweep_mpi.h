/* sweep_mpi.h: one sweep spread over the ranks of an MPI launcher
 * (`mpirun -np K ocsim sweep ...`, `srun ocsim sweep ...`). Rank 0 plans,
 * hands out layouts and writes every output; the other ranks serve: each
 * simulates the layouts it is sent on its own cores (its own --jobs
 * workers, each forking SimGrid children, as a single-process sweep does)
 * and sends back the metrics or the error line. The results are the same
 * bytes (the sweep journal's record, reports/sweep_journal.h) as a local
 * simulation's, so sweep.csv is byte-identical to the single-process one.
 *
 *   int rank;
 *   if (oc_sweep_mpi_world(&rank) > 1 && rank > 0)   // a serving rank
 *       return oc_sweep_mpi_serve(&model, &topo, &ro, jobs, NULL);
 *   rc = ...the sweep: oc_sweep_run uses the other ranks by itself...;
 *   return oc_sweep_mpi_end(rc);                      // rank 0: servers exit
 *
 * Where MPI lives: in one proxy process per rank, the program
 * ocsim-mpi-proxy (sweep_mpi_proxy.c), which ocsim forks and execs; it
 * alone calls MPI (MPI_Init, Isend, Iprobe/Recv, MPI_Finalize) and relays
 * messages to its parent over a socketpair (SOCK_SEQPACKET: one message
 * per packet). Why:
 * - fork(): ocsim forks the sweep's workers and their SimGrid children;
 *   it never initialised MPI, so no fork copies an MPI library's state
 *   (memory registered by InfiniBand transports, progress threads, PMIx
 *   sockets: the reason Open MPI calls fork() after MPI_Init unsafe with
 *   some transports), and the children need no care about it.
 * - linking: libsimgrid exports the MPI API itself (SMPI), so in ocsim's
 *   process MPI_Init binds to SimGrid's ("Your MPI program was not
 *   properly initialized", seen here with libmpi linked into ocsim), and
 *   dlopen'ing libmpi would need its ABI by hand (MPI_Comm is a pointer
 *   in Open MPI, an int in MPICH). A program of its own, linked with
 *   libmpi and nothing else, has neither problem; ocsim does not link
 *   libmpi, and a plain run never starts the proxy (only a rank of a
 *   launched world of more than one does). Without MPI at build time the
 *   program is not built, and a launched `ocsim sweep` refuses with one
 *   line.
 * - a launcher identifies its processes by their environment (PMIx/PMI
 *   variables), so a child of the launched process may be the MPI
 *   process, as under `mpirun sh -c ./prog`.
 * The proxy polls (MPI_Iprobe, then poll(2) on the socket for 1 ms):
 * Open MPI's blocking calls spin a core, and a rank's cores belong to its
 * simulations (a proxy uses about 2% of one core).
 *
 * Jobs per rank: --jobs (the same on every rank), or the cores this
 * process may run on (sched_getaffinity: what mpirun's binding or Slurm's
 * --cpus-per-task gave it).
 *
 * Failures: a serving rank that cannot set up (a model file missing on its
 * node) says so in its hello; rank 0 prints one warning line and leaves it
 * out. Serving proxies send a heartbeat every second; a rank not heard for
 * OCSIM_SWEEP_MPI_TIMEOUT_S seconds (default 60) is lost: rank 0 says so
 * in one warning line, hands its layouts in flight out again (to its own
 * workers or another rank: the sweep still ends whole), never waits on it
 * again, and ends without MPI_Finalize, so the launcher ends the job. A rank
 * killed outright ends the job through the launcher (mpirun and srun kill
 * the others; rank 0's journal keeps what finished, for --resume): no
 * rank hangs. Remote ranks are used only by a sweep whose
 * model, topology and simulation options hash like those the servers
 * parsed (the same command line): another caller of oc_sweep_run in the
 * same process (a perturbed model) runs locally. sweep.h's test hooks
 * act in each rank on its own local indices.
 */
#ifndef OC_SIM_SWEEP_MPI_H
#define OC_SIM_SWEEP_MPI_H

#include <stdint.h>

#include "layout.h"
#include "metrics.h"
#include "model.h"
#include "replay.h"
#include "status.h"
#include "topology.h"

/* The world a launcher started this process in, from its environment
 * (OMPI_COMM_WORLD_SIZE/RANK: Open MPI's mpirun; PMI_SIZE/PMI_RANK: MPICH
 * hydra, Slurm's PMI-2; SLURM_STEP_NUM_TASKS/SLURM_PROCID: an srun step,
 * not the batch script). Returns the size (1: no launcher), *rank (0). */
int oc_sweep_mpi_world(int *rank);

/* The cores this process may run on (sched_getaffinity), at least 1. */
int oc_sweep_mpi_cores(void);

/* A serving rank's stdout to /dev/null (rank 0 alone prints; call it
 * before the setup, whose --help would print). */
void oc_sweep_mpi_quiet(void);

/* A serving rank's life: stdout to /dev/null, the proxy started, a hello
 * to rank 0 (m NULL: setup failed, with setup_err its one line), then the
 * layouts simulated until rank 0 says exit. Returns the exit code (0: a
 * serving rank's failures are rank 0's to report). */
int oc_sweep_mpi_serve(const struct oc_model *m, const struct oc_topology *t,
                       const struct oc_replay_opts *ro, int jobs, const char *setup_err);

/* Rank 0, at the end of the command whatever rc it ends with: tells the
 * serving ranks to exit (starting the proxy if no sweep did: a flag
 * refused on rank 0), finalizes. Returns rc. No-op outside a launcher. */
int oc_sweep_mpi_end(int rc);

/* ---- for sim/sweep.c: the remote job slots of one oc_sweep_run ------ */

struct oc_sweep_remote;

/* *r: the serving ranks for a sweep of n layouts of (m, t, ro), or NULL
 * (not rank 0 of a launched world, or the servers parsed other inputs).
 * Starts the proxy and waits for the hellos on the first call. Returns 0,
 * or -1 with st->msg (MPI asked for but not built in). */
int oc_sweep_remote_begin(struct oc_sweep_remote **r, const struct oc_model *m,
                          const struct oc_topology *t, const struct oc_replay_opts *ro,
                          double wall_limit_s, int64_t n, int local_jobs,
                          struct oc_status *st);
/* The descriptor to poll for POLLIN (results), -1 once the proxy is gone. */
int oc_sweep_remote_fd(const struct oc_sweep_remote *r);
/* Serving ranks are 1..size-1; has_free: it may take one more layout. */
int oc_sweep_remote_size(const struct oc_sweep_remote *r);
int oc_sweep_remote_has_free(const struct oc_sweep_remote *r, int rank);
void oc_sweep_remote_give(struct oc_sweep_remote *r, int rank, int64_t index,
                          const struct oc_layout *l);
/* No more layouts this sweep: every rank told. */
void oc_sweep_remote_close(struct oc_sweep_remote *r);
/* Layouts handed out whose results have not come back. */
int64_t oc_sweep_remote_outstanding(const struct oc_sweep_remote *r);

/* Called for each result: mt on success, else err; lost: the layout did
 * not come back (its rank was lost, or rank 0's proxy died) and is to be
 * handed out again. */
typedef void (*oc_sweep_remote_fn)(void *ctx, int rank, int64_t index,
                                   const struct oc_metrics *mt, const char *err, int lost);
/* Takes what the descriptor has (call when readable). */
void oc_sweep_remote_read(struct oc_sweep_remote *r, oc_sweep_remote_fn fn, void *ctx);
/* The sweep is over; stopped: the ranks with layouts in flight are told
 * to drop them (their late results are ignored). */
void oc_sweep_remote_end(struct oc_sweep_remote *r, int stopped);

#endif
