/* calibrate_cuda_priv.h: what the files of the cuda calibration share,
 * and nothing else: one rank's calibration run (struct cal) and the
 * helpers one file calls in another (prefix oc_ccal_: cuda calibration).
 *
 *   calibrate_cuda.c        the run, this node, the control plane (one
 *                           verdict, statistics over the ranks), HBM
 *   calibrate_cuda_gemm.c   the GEMM rate at the model's shapes
 *   calibrate_cuda_parts.c  the cuda executor's parts, per-part rates
 *   calibrate_cuda_nccl.c   NCCL ping-pong and all-reduce bus bandwidth
 *
 * What it is not: an interface for anything outside the calibration
 * (main.c uses calibrate_cuda.h).
 *
 *   void *buf;
 *   struct oc_status ls = {{0}};
 *   int rc = oc_ccal_dev_alloc(&buf, bytes, "the ping-pong", &ls);
 *   if (oc_ccal_together(c, rc, &ls) != 0) ...   // every rank, one message
 */
#ifndef OC_EXEC_CALIBRATE_CUDA_PRIV_H
#define OC_EXEC_CALIBRATE_CUDA_PRIV_H

#include <stdint.h>

#include "calibrate_cuda.h"
#include "calib_plan.h"
#include "ops_cuda.h"

#define MIB (1024.0 * 1024.0)

/* One calibration run on one rank. */
struct cal {
    const struct oc_cuda_calib_opts *o;
    struct oc_ctl *ctl;
    struct oc_nccl *nccl; /* NULL or unused with one rank */
    int rank, size;
    int device;
    struct cudaDeviceProp prop;
    cudaStream_t stream;
    struct oc_cuda_blas blas;
    cudaEvent_t e0, e1;
};

/* calibrate_cuda.c */
double oc_ccal_elapsed_s(cudaEvent_t a, cudaEvent_t b);
int oc_ccal_dev_alloc(void **p, double bytes, const char *what, struct oc_status *st);
int oc_ccal_together(struct cal *c, int rc, struct oc_status *st);
int oc_ccal_stats(struct cal *c, const double *v, int n, double *mean, double *lo,
                  double *hi, struct oc_status *st);

/* The measurements: 0, or -1 with st->msg (on every rank). */
int oc_ccal_measure_gemm(struct cal *c, struct oc_calib_measured *m, struct oc_status *st);
int oc_ccal_measure_parts(struct cal *c, struct oc_calib_measured *m, struct oc_status *st);
int oc_ccal_measure_p2p(struct cal *c, struct oc_calib_measured *m, struct oc_status *st);
int oc_ccal_measure_allreduce(struct cal *c, struct oc_calib_measured *m,
                              struct oc_status *st);

#endif
