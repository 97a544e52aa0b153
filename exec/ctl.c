/* ctl.c: the control plane's calls, dispatched to the implementation's
 * table (see ctl.h). What this file is: argument checks shared by both
 * implementations and the dispatch. What it is not: an implementation
 * (ctl_local.c: threads of one process; ctl_mpi.c: MPI).
 */
#define _POSIX_C_SOURCE 200809L
#include "ctl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void oc_ctl_set_what(struct oc_ctl *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->what, sizeof c->what, fmt, ap);
    va_end(ap);
    oc_lost_post(c->slot, c->what);
}

/* A call with a rank outside the ctl, a negative size or a missing buffer
 * is a bug of the caller (every rank computes the same arguments). */
static void check_ready(const struct oc_ctl *c)
{
    OC_ASSERT(c != NULL && c->ops != NULL);
}

int oc_ctl_is_mpi(const struct oc_ctl *c)
{
    check_ready(c);
    return strcmp(c->ops->name, "mpi") == 0;
}

int oc_ctl_barrier(struct oc_ctl *c, struct oc_status *st)
{
    check_ready(c);
    return c->ops->barrier(c, st);
}

int oc_ctl_bcast(struct oc_ctl *c, void *buf, int64_t bytes, int root,
                 struct oc_status *st)
{
    check_ready(c);
    OC_ASSERT(root >= 0 && root < c->size);
    OC_ASSERT(bytes >= 0 && (bytes == 0 || buf != NULL));
    return c->ops->bcast(c, buf, bytes, root, st);
}

int oc_ctl_gather(struct oc_ctl *c, const void *send, void *recv, int64_t bytes,
                  int root, struct oc_status *st)
{
    check_ready(c);
    OC_ASSERT(root >= 0 && root < c->size);
    OC_ASSERT(bytes >= 0 && (bytes == 0 || send != NULL));
    OC_ASSERT(c->rank != root || bytes == 0 || recv != NULL);
    return c->ops->gather(c, send, recv, bytes, root, st);
}

int oc_ctl_send(struct oc_ctl *c, const void *buf, int64_t bytes, int dest,
                int tag, struct oc_status *st)
{
    check_ready(c);
    OC_ASSERT(dest >= 0 && dest < c->size && tag >= 0);
    OC_ASSERT(bytes >= 0 && (bytes == 0 || buf != NULL));
    return c->ops->send(c, buf, bytes, dest, tag, st);
}

int oc_ctl_recv(struct oc_ctl *c, void *buf, int64_t bytes, int src, int tag,
                struct oc_status *st)
{
    check_ready(c);
    OC_ASSERT(src >= 0 && src < c->size && tag >= 0);
    OC_ASSERT(bytes >= 0 && (bytes == 0 || buf != NULL));
    return c->ops->recv(c, buf, bytes, src, tag, st);
}

void oc_ctl_abort(struct oc_ctl *c, int code)
{
    fflush(stdout);
    fflush(stderr);
    if (c != NULL && c->ops != NULL)
        c->ops->abort(c, code);
    /* The implementation's abort does not return; should it, the process
     * still ends with the code asked for. */
    _exit(code);
}

void oc_ctl_free(struct oc_ctl *c)
{
    if (c == NULL || c->ops == NULL)
        return;
    oc_lost_done(c->slot); /* a SIGTERM from here on finds it done */
    c->slot = NULL;
    c->ops->free(c);
    c->ops = NULL;
    c->impl = NULL;
}
