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
 *
 * Text the user wrote (a path, a layout string, a JSON key or value, a CSV
 * cell) goes into a message through oc_quote, which escapes it and shortens
 * it so that the reason around it stays in the message:
 *
 *   char q[OC_QUOTE_MAX];
 *   return oc_fail(st, "layout '%s': part 'x' not understood", oc_quote(q, sizeof q, s));
 *
 * oc_fail itself keeps every message one line of valid UTF-8 whatever it is
 * given (a control byte becomes \xNN, a cut never splits a character), so
 * a text that reaches it unquoted cannot break the one-line contract, and
 * it shortens a long message in its middle; oc_quote still decides what of
 * a long text is shown, so that a message with two texts keeps both.
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
 * `return oc_fail(st, "...")` reads naturally. The message is made safe as
 * it is stored: control characters escaped (\n, \t, \r, \xNN), bytes that
 * are not UTF-8 as \xNN, and a message longer than OC_MSG_MAX - 1 bytes
 * shortened as oc_quote shortens (its start and its end around "...", cut
 * between characters), so that a reason after a long unquoted path stays.
 * An argument may be st->msg itself ("%s (shard 3)", st->msg). */
int oc_fail(struct oc_status *st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The bytes a quoted user text takes in a message, NUL included: with two
 * of them a message keeps well over 200 bytes for its reason. */
#define OC_QUOTE_MAX 128

/* Writes `text` into buf (n bytes, n >= 8) as it is shown in a message,
 * and returns buf:
 *   - ASCII control characters as \n, \t, \r or \xNN, and a backslash as
 *     \\, so that the message stays one line and no terminal escape passes;
 *   - bytes that are not UTF-8 (a stray continuation byte, a cut or
 *     overlong sequence, a surrogate) as \xNN, one per byte;
 *   - the C1 controls U+0080..U+009F, the line and paragraph separators
 *     U+2028/U+2029 and the bidirectional controls U+200E/F, U+202A..E,
 *     U+2066..9 as \uXXXX (they move the cursor or reorder what is shown);
 *   - every other character as it is;
 *   - when the result does not fit n - 1 bytes, its start and its end with
 *     "..." between them, cut between characters (never inside a UTF-8
 *     sequence or an escape), so that a long path keeps its file name.
 * text NULL is shown as "(null)". */
char *oc_quote(char *buf, size_t n, const char *text);

/* The length of the longest start of s, at most max bytes, that does not
 * end inside a UTF-8 character (for a name copied into a fixed buffer:
 * "%.*s" would cut a 160-byte UTF-8 name mid-character). */
size_t oc_utf8_fit(const char *s, size_t max);

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
