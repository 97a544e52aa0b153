/* emu_nccl.cpp: NCCL for one rank, as the emulator provides it
 * (kernels/emu/README.md): the calls exec/cuda makes, with the declarations
 * of the real <nccl.h>, so ocsim-exec-emu runs the cuda backend on one
 * emulated GPU (tp1-pp1-dp1). A communicator of one rank: the collectives
 * are copies (an all-reduce of one rank is its input; all-gather and
 * reduce-scatter likewise), on device memory that the runtime's registry
 * checks. Non-blocking communicators are ready at once.
 *
 * What it is not: NCCL between ranks. A communicator of more than one rank
 * is refused (ncclInvalidUsage, with ncclGetLastError saying why), and so
 * are point-to-point calls, which one rank never makes.
 */
#include "emu_internal.h"

#include <nccl.h>
#include <stdio.h>
#include <string.h>

#define EMU_NCCL_MAGIC 0x6e63636cu

struct ncclComm {
    unsigned magic;
};

namespace {

thread_local char t_last[256];

ncclResult_t fail(ncclResult_t rc, const char *what)
{
    snprintf(t_last, sizeof t_last, "ocsim-emu: %s", what);
    return rc;
}

bool comm_ok(ncclComm_t c)
{
    return c && c->magic == EMU_NCCL_MAGIC;
}

size_t type_bytes(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8:
    case ncclUint8:
        return 1;
    case ncclFloat16:
    case ncclBfloat16:
        return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
        return 4;
    default:
        return 8;
    }
}

/* recv = send for one rank, both in device memory. */
ncclResult_t one_rank_copy(const char *call, const void *send, void *recv, size_t count,
                           ncclDataType_t t, ncclComm_t c, cudaStream_t s)
{
    if (!comm_ok(c))
        return fail(ncclInvalidArgument, "not a communicator");
    if (!emu_stream_ok(s))
        return fail(ncclInvalidArgument, "not a stream");
    const size_t bytes = count * type_bytes(t);
    if (bytes == 0)
        return ncclSuccess;
    if (!emu_dev_range(send, bytes) || !emu_dev_range(recv, bytes))
        emu_fail("%s: %zu bytes at %p or %p are not inside one device allocation", call,
                 bytes, send, recv);
    if (send != recv)
        memmove(recv, send, bytes);
    return ncclSuccess;
}

} // namespace

ncclResult_t ncclGetVersion(int *version)
{
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "ocsim-emu one rank");
    return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t *config)
{
    (void)id, (void)config;
    *comm = nullptr;
    if (nranks != 1 || rank != 0)
        return fail(ncclInvalidUsage, "the emulator runs NCCL for one rank only");
    *comm = new ncclComm{EMU_NCCL_MAGIC};
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    return ncclCommInitRankConfig(comm, nranks, id, rank, nullptr);
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config)
{
    (void)key, (void)config;
    if (!comm_ok(comm))
        return fail(ncclInvalidArgument, "not a communicator");
    *newcomm = color == NCCL_SPLIT_NOCOLOR ? nullptr : new ncclComm{EMU_NCCL_MAGIC};
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    if (!comm_ok(comm))
        return fail(ncclInvalidArgument, "not a communicator");
    *count = 1;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    if (!comm_ok(comm))
        return fail(ncclInvalidArgument, "not a communicator");
    *rank = 0;
    return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *state)
{
    if (!comm_ok(comm))
        return fail(ncclInvalidArgument, "not a communicator");
    *state = ncclSuccess;
    return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    return comm_ok(comm) ? ncclSuccess : fail(ncclInvalidArgument, "not a communicator");
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (!comm_ok(comm))
        return fail(ncclInvalidArgument, "not a communicator");
    comm->magic = 0;
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    return ncclCommDestroy(comm);
}

const char *ncclGetErrorString(ncclResult_t rc)
{
    switch (rc) {
    case ncclSuccess:
        return "no error";
    case ncclInvalidArgument:
        return "invalid argument";
    case ncclInvalidUsage:
        return "invalid usage";
    case ncclInProgress:
        return "NCCL operation in progress";
    default:
        return "an error of the emulated NCCL";
    }
}

const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return t_last;
}

ncclResult_t ncclGroupStart(void)
{
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
    return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t t,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t s)
{
    (void)op;
    return one_rank_copy("ncclAllReduce", send, recv, count, t, comm, s);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t count, ncclDataType_t t,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t s)
{
    (void)op;
    return one_rank_copy("ncclReduceScatter", send, recv, count, t, comm, s);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t count, ncclDataType_t t,
                           ncclComm_t comm, cudaStream_t s)
{
    return one_rank_copy("ncclAllGather", send, recv, count, t, comm, s);
}

ncclResult_t ncclSend(const void *send, size_t count, ncclDataType_t t, int peer,
                      ncclComm_t comm, cudaStream_t s)
{
    (void)send, (void)count, (void)t, (void)peer, (void)comm, (void)s;
    return fail(ncclInvalidUsage, "ncclSend: one rank has no peer (the emulator runs one rank)");
}

ncclResult_t ncclRecv(void *recv, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t s)
{
    (void)recv, (void)count, (void)t, (void)peer, (void)comm, (void)s;
    return fail(ncclInvalidUsage, "ncclRecv: one rank has no peer (the emulator runs one rank)");
}
