/* backends.h: the registry of the executor's backends: one table
 * (backends.c), one entry per backend, and the only place that names them.
 * ocsim-exec looks --backend up here and asks the entry everything that
 * differs between backends: whether this build has it and this machine
 * can run it, how its ranks are launched, its default precision and the
 * layout precision of its runs, its
 * words, whether an MFU against the topology's GPU peak means anything,
 * and its init, calibration, network measurement and schedule check. So nothing else compares
 * a backend's name, and a new backend is one entry here plus its folder
 * (exec/cpu/, exec/cuda/).
 *
 *   const struct oc_backend_entry *e = oc_backend_find(name);
 *   if (!e) ...oc_backend_names(known, sizeof known): "cpu, cuda"...
 *   if (!e->built) ...this build lacks it (e->needs were missing)...
 *   if (e->available && !e->available()) ...e->unavailable...
 *   struct oc_backend b;
 *   if (e->init(&b, &ctl, &job, &st) != 0) ...
 *   ... oc_runner_init(&r, &model, &sched, &b, &ro, &st) ...
 *   b.ops->free_backend(&b);
 *
 * What it is not: the backend interface the runner drives (backend.h) or a
 * backend (the hooks live in each backend's folder).
 */
#ifndef OC_EXEC_BACKENDS_H
#define OC_EXEC_BACKENDS_H

#include <stddef.h>

#include "backend.h"
#include "ctl.h"
#include "layout.h"
#include "model.h"
#include "netbw.h"
#include "schedule.h"
#include "status.h"
#include "topology.h"

/* The backends' names: the keys of the table, and the words of the files
 * that name the backend that measured them (calib_topology.c). */
#define OC_BACKEND_CPU_NAME "cpu"
#define OC_BACKEND_CUDA_NAME "cuda"

/* What a backend's init and calibration are given (read-only, shared by
 * the ranks of one process). */
struct oc_backend_job {
    const struct oc_model *model;
    const struct oc_layout *layout;
    const struct oc_topology *topo; /* the calibration's base */
    const char *precision;          /* "bf16" | "fp32" (--precision) */
    double timeout_s;               /* the deadline of one wait */
};

struct oc_backend_entry {
    const char *name;        /* --backend NAME */
    const char *summary;     /* one line: what it runs on */
    int built;               /* compiled into this ocsim-exec */
    const char *needs;       /* what building it needs (when not built) */
    /* Whether this machine can run it (NULL: always), and why not. */
    int (*available)(void);
    const char *unavailable;
    /* Launch: 1 when, in an MPI build, its ranks are MPI processes even
     * without mpirun (cpu: one process per rank); 0 when MPI starts only
     * under a launcher and the ranks are otherwise threads. */
    int mpi_always;
    /* Without MPI: 1 when one process runs every rank of the layout as a
     * thread (cuda: one per GPU), 0 when it runs one rank. */
    int threads_are_ranks;
    const char *device_words;      /* "GPUs": the ranks in output lines */
    const char *precision_default; /* when --precision is not given */
    int precision_choice;          /* --precision changes its GEMMs */
    /* The layout precision of its runs (layout.h): the element size of the
     * activations it keeps and sends and of the gradients it reduces,
     * whatever --precision says of its GEMM operands. */
    enum oc_precision run_precision;
    int mfu_against_peak;          /* its MFU against the topology's GPU
                                      peak means something (a CPU's does not) */
    int runs_gc;                   /* its runner runs gc=topk<D>, q8 and q1
                                      (its backend has b->gc and dp_alltoall) */
    /* Collective over the ctl's ranks: the backend of this rank for
     * job->layout (b->ops->free_backend frees all of it). */
    int (*init)(struct oc_backend *b, struct oc_ctl *c, const struct oc_backend_job *job,
                struct oc_status *st);
    /* Collective: measures this machine, rank 0 writes out_path (the
     * calibrated topology, calib_topology.h) and prints its tables. */
    int (*calibrate)(struct oc_ctl *c, const struct oc_backend_job *job,
                     const char *out_path, struct oc_status *st);
    /* Collective: measures the network between the map's nodes over the
     * backend's transport (netbw.h: MPI, NCCL); rank 0 prints the tables
     * and writes o->out_path; r (may be NULL) filled on every rank. */
    int (*netbw)(struct oc_ctl *c, const struct oc_netbw_opts *o,
                 const struct oc_net_map *map, struct oc_netbw_result *r,
                 struct oc_status *st);
    /* Refuses a schedule this backend cannot run (NULL: any), before any
     * work; pure (no device). */
    int (*check_schedule)(const struct oc_schedule *s, struct oc_status *st);
};

/* The entry named name, or NULL. Entries of backends this build lacks are
 * there too (built = 0), so that the message can say so. */
const struct oc_backend_entry *oc_backend_find(const char *name);
/* The entry of --backend's default (the first). */
const struct oc_backend_entry *oc_backend_default(void);
/* The names, in table order, joined by ", " into buf. */
void oc_backend_names(char *buf, size_t n);

#endif
