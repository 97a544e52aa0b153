/* status.c: error strings, the quoting of user text in them, and checked
 * allocation (see status.h).
 *
 * Both oc_quote and oc_fail walk their text one unit at a time: a unit is
 * one character (a valid UTF-8 sequence, RFC 3629 section 3: no overlong
 * form, no surrogate, nothing above U+10FFFF) or one byte that is not
 * part of one. Each unit becomes its shown form (itself or an escape), and
 * cuts happen only between units.
 */
#include "status.h"

#include <stdarg.h>
#include <string.h>

/* The longest shown form of a unit: "\u2028" or "\xff" (6 bytes), or a
 * 4-byte character. */
#define UNIT_MAX 8

/* Code points shown as \uXXXX: C1 controls (CSI is U+009B), the line and
 * paragraph separators, and the bidirectional controls that reorder what
 * a terminal shows (the "Trojan Source" characters). */
static int hidden_code_point(unsigned cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
           (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* Length of the valid UTF-8 sequence at s (1..4) with its code point in
 * *cp, or 0 when s does not start one. s is NUL-terminated, so a cut
 * sequence stops at the NUL, which is no continuation byte. */
static size_t utf8_seq(const unsigned char *s, unsigned *cp)
{
    unsigned c = s[0], min;
    size_t len;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xe0) == 0xc0) {
        len = 2, min = 0x80, *cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3, min = 0x800, *cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        len = 4, min = 0x10000, *cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t k = 1; k < len; k++) {
        if ((s[k] & 0xc0) != 0x80)
            return 0;
        *cp = (*cp << 6) | (s[k] & 0x3f);
    }
    if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
        return 0;
    return len;
}

/* The unit at s (s[0] != 0): its shown form into out (NUL-terminated, at
 * most UNIT_MAX - 1 bytes) and its length in *shown; returns the bytes of
 * s it covers. quote_backslash: oc_quote's \\ for a backslash (oc_fail
 * keeps backslashes, which may be the escapes of a quoted text). */
static size_t unit(const char *s, int quote_backslash, char out[UNIT_MAX], size_t *shown)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned cp = 0;
    size_t len = utf8_seq(u, &cp);
    int k;
    if (len == 0) {
        k = snprintf(out, UNIT_MAX, "\\x%02x", u[0]);
        len = 1;
    } else if (cp == '\n') {
        k = snprintf(out, UNIT_MAX, "\\n");
    } else if (cp == '\t') {
        k = snprintf(out, UNIT_MAX, "\\t");
    } else if (cp == '\r') {
        k = snprintf(out, UNIT_MAX, "\\r");
    } else if (cp < 0x20 || cp == 0x7f) {
        k = snprintf(out, UNIT_MAX, "\\x%02x", cp);
    } else if (cp == '\\' && quote_backslash) {
        k = snprintf(out, UNIT_MAX, "\\\\");
    } else if (hidden_code_point(cp)) {
        k = snprintf(out, UNIT_MAX, "\\u%04x", cp);
    } else {
        memcpy(out, s, len);
        out[len] = '\0';
        k = (int)len;
    }
    *shown = (size_t)k;
    return len;
}

/* The shown length of all of s. */
static size_t shown_length(const char *s, int quote_backslash)
{
    char u[UNIT_MAX];
    size_t total = 0, w;
    while (*s) {
        s += unit(s, quote_backslash, u, &w);
        total += w;
    }
    return total;
}

/* Writes the shown form of s into buf (n bytes, n >= 8): whole when it
 * fits n - 1 bytes; else the start and, with keep_tail, the end with "..."
 * between (both callers keep the end today). */
static void show(char *buf, size_t n, const char *s, int quote_backslash, int keep_tail)
{
    OC_ASSERT(n >= 8);
    char u[UNIT_MAX];
    size_t w, at = 0;
    const size_t total = shown_length(s, quote_backslash);
    const int whole = total <= n - 1;
    /* Room for the start: all of it, or what leaves "..." and the end. */
    const size_t room = n - 1 - 3;
    const size_t head_room = whole ? n - 1 : keep_tail ? (room + 1) / 2 : room;
    size_t before = 0; /* shown bytes of the units passed */
    while (*s) {
        size_t len = unit(s, quote_backslash, u, &w);
        if (at + w > head_room)
            break;
        memcpy(buf + at, u, w);
        at += w;
        before += w;
        s += len;
    }
    if (!whole) {
        memcpy(buf + at, "...", 3);
        at += 3;
        /* The end: the units after the first one whose remaining shown
         * length fits what is left. */
        while (keep_tail && *s && total - before > n - 1 - at) {
            s += unit(s, quote_backslash, u, &w);
            before += w;
        }
        while (keep_tail && *s) {
            s += unit(s, quote_backslash, u, &w);
            memcpy(buf + at, u, w);
            at += w;
        }
    }
    buf[at] = '\0';
}

char *oc_quote(char *buf, size_t n, const char *text)
{
    show(buf, n, text ? text : "(null)", 1, 1);
    return buf;
}

size_t oc_utf8_fit(const char *s, size_t max)
{
    size_t at = 0;
    unsigned cp;
    while (s[at]) {
        size_t len = utf8_seq((const unsigned char *)s + at, &cp);
        len = len ? len : 1; /* a byte that is not UTF-8 is a unit of its own */
        if (at + len > max)
            break;
        at += len;
    }
    return at;
}

int oc_fail(struct oc_status *st, const char *fmt, ...)
{
    if (!st)
        return -1;
    /* Formatted whole first (an argument may be st->msg, and a long path
     * must not push the reason at the end out), then stored safe: one line
     * of valid UTF-8, its start and its end when it is too long. */
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *raw = oc_xmalloc(len > 0 ? (size_t)len + 1 : 1);
    raw[0] = '\0';
    if (len > 0)
        vsnprintf(raw, (size_t)len + 1, fmt, ap2);
    va_end(ap2);
    show(st->msg, sizeof st->msg, raw, 0, 1);
    free(raw);
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
