/* sweep_mpi_priv.h: what the parts of the MPI sweep share (sweep_mpi.c:
 * rank 0 and the process-wide state; sweep_mpi_serve.c: a serving rank;
 * sweep_mpi_proxy.c, the program ocsim-mpi-proxy, has only the messages:
 * sweep_mpi_msg.h). Not for other modules. */
#ifndef OC_SIM_SWEEP_MPI_PRIV_H
#define OC_SIM_SWEEP_MPI_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "metrics.h"
#include "sweep_mpi_msg.h"
#include "model.h"
#include "replay.h"
#include "status.h"
#include "topology.h"

/* The process-wide transport (one proxy per process life). */
struct oc_mpi_state {
    int started;     /* the proxy was forked */
    int rank, size;
    pid_t pid;       /* the proxy */
    int sock;        /* the parent's end of the socketpair, -1: gone */
    int stop_rd;     /* readable after a STOP came (serving ranks) */
    double timeout_s;/* OCSIM_SWEEP_MPI_TIMEOUT_S */
};
extern struct oc_mpi_state oc_mpi_g;

/* Forks and execs the proxy program (sweep_mpi_proxy.c: ocsim-mpi-proxy
 * next to ocsim, or $OCSIM_MPI_PROXY) on its socketpair and stop pipe.
 * 0, or -1 with st->msg. */
int oc_mpi_start(struct oc_status *st);
/* BYE to the proxy, which finalizes; it is reaped. */
void oc_mpi_finish(void);

/* One message to the socket (head, then n payload bytes). 0 or -1. */
int oc_mpi_send(int sock, const struct oc_mpi_head *h, const void *payload, size_t n);
/* One message into buf (cap bytes); timeout_ms < 0: wait. Returns its
 * length, 0 on timeout, -1 when the other end is gone or it is damaged. */
ssize_t oc_mpi_recv(int sock, void *buf, size_t cap, int timeout_ms);

/* FNV-1a 64 of the model, the topology and the simulation options: two
 * ranks that hash alike simulate a layout alike. */
uint64_t oc_mpi_setup_hash(const struct oc_model *m, const struct oc_topology *t,
                           const struct oc_replay_opts *ro);

#endif
