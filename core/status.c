/* status.c: error strings and checked allocation (see status.h). */
#include "status.h"

#include <stdarg.h>

int oc_fail(struct oc_status *st, const char *fmt, ...)
{
    if (st) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(st->msg, sizeof st->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static void *oom(size_t n, const char *file, int line)
{
    fprintf(stderr, "ocsim: out of memory allocating %zu bytes at %s:%d\n", n,
            file, line);
    abort();
}

void *oc_xmalloc_(size_t n, const char *file, int line)
{
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n, file, line);
}

void *oc_xcalloc_(size_t count, size_t size, const char *file, int line)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    return p ? p : oom(count * size, file, line);
}

void *oc_xrealloc_(void *p, size_t n, const char *file, int line)
{
    void *q = realloc(p, n ? n : 1);
    return q ? q : oom(n, file, line);
}
