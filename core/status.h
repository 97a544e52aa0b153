/* status.h: how library code reports a failure to its caller.
 *
 *   struct oc_status st = {0};
 *   if (oc_model_load("models/llama2-70b.json", &m, &st) != 0) {
 *       fprintf(stderr, "ocsim: %s\n", st.msg);   // one line, names file and field
 *       return 2;                                  // only main decides to exit
 *   }
 *
 * Library code never prints and never exits. A function that can fail on
 * user input returns 0 on success and -1 on failure, and fills st->msg with
 * one line (no trailing newline) naming what is wrong. Broken invariants
 * (programming errors) use OC_ASSERT, which stays on in release builds.
 */
#ifndef OC_STATUS_H
#define OC_STATUS_H

#include <stdio.h>
#include <stdlib.h>

#define OC_MSG_MAX 512

struct oc_status {
    char msg[OC_MSG_MAX];
};

/* Fill st->msg printf-style; st may be NULL. Always returns -1 so that
 * `return oc_fail(st, "...")` reads naturally. */
int oc_fail(struct oc_status *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Asserts that stay on under NDEBUG: a broken invariant is a bug in ocsim. */
#define OC_ASSERT(cond)                                                        \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "ocsim: internal error at %s:%d: %s\n", __FILE__,  \
                    __LINE__, #cond);                                          \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* Allocation that cannot fail silently: out of memory is an environment
 * failure reported with file and line. */
void *oc_xmalloc_(size_t n, const char *file, int line);
void *oc_xcalloc_(size_t count, size_t size, const char *file, int line);
void *oc_xrealloc_(void *p, size_t n, const char *file, int line);
#define oc_xmalloc(n) oc_xmalloc_((n), __FILE__, __LINE__)
#define oc_xcalloc(c, s) oc_xcalloc_((c), (s), __FILE__, __LINE__)
#define oc_xrealloc(p, n) oc_xrealloc_((p), (n), __FILE__, __LINE__)

#endif
