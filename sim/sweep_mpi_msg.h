/* sweep_mpi_msg.h: the messages of the MPI sweep (sim/sweep_mpi.h), shared
 * by ocsim (sweep_mpi*.c) and the proxy program ocsim-mpi-proxy
 * (sweep_mpi_proxy.c), which is all that includes it besides them.
 *
 * A message is a head and a payload, the same bytes on the socketpair
 * between a parent and its proxy and in MPI between proxies. From the
 * parent, head.peer is the destination rank (OC_MPI_SELF: the proxy
 * itself); to the parent, the sender's rank. head.seq numbers rank 0's
 * sweeps with remote ranks, so a late message of an earlier sweep is known.
 *
 *   rank 0 -> server: RUN (index, n, wall limit; payload the layout),
 *                     NOMORE, STOP, EXIT
 *   server -> rank 0: HELLO (payload struct oc_mpi_hello), OK (payload the
 *                     journal record of the metrics), ERR (the error line)
 *   proxy -> parent:  LOST (peer: a rank not heard for the timeout)
 *   proxy <-> proxy:  BEAT (every second, server to rank 0; not relayed)
 *   parent -> proxy:  BYE (peer OC_MPI_SELF: finish and finalize)
 *   proxy -> proxy:   FIN (server to rank 0: its parent said BYE)
 *
 * The proxy program: ocsim-mpi-proxy SOCK_FD STOP_FD RANK SIZE TIMEOUT_S. */
#ifndef OC_SIM_SWEEP_MPI_MSG_H
#define OC_SIM_SWEEP_MPI_MSG_H

#include <stdint.h>

#include "metrics.h"
#include "status.h"

#define OC_MPI_MAGIC 0x6f63736dU /* "ocsm" */
#define OC_MPI_SELF (-1)
#define OC_MPI_TAG 4242

enum oc_mpi_type {
    OC_MPI_HELLO = 1, OC_MPI_RUN, OC_MPI_NOMORE, OC_MPI_STOP, OC_MPI_EXIT,
    OC_MPI_OK, OC_MPI_ERR, OC_MPI_LOST, OC_MPI_BEAT, OC_MPI_BYE, OC_MPI_FIN
};

struct oc_mpi_head {
    uint32_t magic, type;
    int32_t peer, seq;
    int64_t index, n;
    double wall_limit_s;
};

struct oc_mpi_hello {
    int32_t ok, jobs;
    uint64_t setup_hash;    /* oc_mpi_setup_hash of what it parsed */
    char format[64];        /* oc_sweep_record_format: the same build */
    char host[64];
    char msg[OC_MSG_MAX];   /* why it cannot serve (ok 0) */
};

/* The largest message: a head and a whole record (sweep_journal.h: its
 * head, at most 32 bytes, and at most the whole struct). */
#define OC_MPI_MSG_MAX (sizeof(struct oc_mpi_head) + 64 + sizeof(struct oc_metrics))

#endif
