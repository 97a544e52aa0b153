/* fuzz_check.c: the shared checks of the fuzz targets (fuzz_check.h). */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_MAX_KNOWN 16

static struct {
    char id[32];
    int said; /* reported once on stderr */
} known[FZ_MAX_KNOWN];
static int nknown, known_read;
const char *fz_current_input;

void fz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (fz_current_input)
        fprintf(stderr, "fuzz: the input was %s\n", fz_current_input);
    abort();
}

void fz_allow(const char *ids)
{
    const char *p = ids;
    while (p && *p) {
        size_t len = strcspn(p, ", \t\n");
        if (len > 0 && len < sizeof known[0].id && nknown < FZ_MAX_KNOWN) {
            memcpy(known[nknown].id, p, len);
            known[nknown].id[len] = '\0';
            known[nknown].said = 0;
            nknown++;
        }
        p += len;
        p += strspn(p, ", \t\n");
    }
}

void fz_init_known(void)
{
    if (known_read)
        return;
    known_read = 1;
    fz_allow(getenv("OCSIM_FUZZ_ALLOW"));
}

int fz_allowed(const char *id)
{
    fz_init_known();
    for (int i = 0; i < nknown; i++)
        if (strcmp(known[i].id, id) == 0) {
            if (!known[i].said)
                fprintf(stderr, "fuzz: known defect '%s' tolerated (fuzz/known.txt)\n", id);
            known[i].said = 1;
            return 1;
        }
    return 0;
}

int fz_utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        unsigned min, cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            len = 2, min = 0x80, cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3, min = 0x800, cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4, min = 0x10000, cp = c & 0x07;
        } else {
            return 0;
        }
        if (i + len > n)
            return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += len;
    }
    return 1;
}

/* s with every byte outside printable ASCII as \xHH, cut to fit. */
static void escaped(const char *s, char *out, size_t n)
{
    size_t k = 0;
    for (; s && *s && k + 5 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c < 0x7f && c != '\\')
            out[k++] = (char)c;
        else
            k += (size_t)snprintf(out + k, n - k, "\\x%02x", c);
    }
    out[k] = '\0';
}

/* fz_allowed, and with $OCSIM_FUZZ_REPORT set a line for every message
 * tolerated (to list where the known defect shows: replay a corpus). */
static int tolerated(const char *id, const char *what, const char *msg)
{
    if (!fz_allowed(id))
        return 0;
    if (getenv("OCSIM_FUZZ_REPORT"))
        fprintf(stderr, "fuzz: tolerated %s in %s: %s\n", id, what, msg);
    return 1;
}

void fz_check_msg(const char *what, const struct oc_status *st, const char *input)
{
    char in[256], msg[4 * OC_MSG_MAX];
    escaped(input, in, sizeof in);
    const char *end = memchr(st->msg, '\0', sizeof st->msg);
    FZ_CHECK(end, "%s: message not NUL-terminated (input '%s')", what, in);
    FZ_CHECK(st->msg[0], "%s: failed with an empty message (input '%s')", what, in);
    escaped(st->msg, msg, sizeof msg);
    const char *ctrl = NULL;
    for (const char *p = st->msg; *p && !ctrl; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            ctrl = p;
    if (ctrl && !tolerated("msg-ctrl", what, msg))
        fz_fail("%s: message holds control character 0x%02x (input '%s'): %s", what,
                (unsigned char)*ctrl, in, msg);
    if (!fz_utf8_valid((const unsigned char *)st->msg, (size_t)(end - st->msg)) &&
        !tolerated("msg-utf8", what, msg))
        fz_fail("%s: message is not valid UTF-8 (input '%s'): %s", what, in, msg);
}

char *fz_text(const uint8_t *data, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        fz_fail("out of memory copying %zu bytes", n);
    if (n)
        memcpy(s, data, n);
    s[n] = '\0';
    return s;
}
