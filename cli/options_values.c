/* options_values.c: the flag values of options.c's table, parsed and
 * checked (integers, reals, percentages, timeouts, byte sizes, lists, the
 * schedule list, the card list or range); see options_values.h. */
#define _POSIX_C_SOURCE 200809L
#include "options_values.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A positive integer option value, no junk, no overflow. */
int oc_optv_positive(const char *flag, const char *s, int64_t *out,
                     struct oc_status *st)
{
    errno = 0;
    char *end;
    char q[OC_QUOTE_MAX];
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || (errno && errno != ERANGE))
        return oc_fail(st, "--%s: '%s' is not an integer", flag, oc_quote(q, sizeof q, s));
    if (v <= 0)
        return oc_fail(st, "--%s must be positive (got %s)", flag, oc_quote(q, sizeof q, s));
    if (errno == ERANGE || v > OC_LAYOUT_MAX_CARDS)
        return oc_fail(st, "--%s %s is out of range (at most %lld)", flag,
                       oc_quote(q, sizeof q, s), OC_LAYOUT_MAX_CARDS);
    *out = v;
    return 0;
}

/* An integer option value of at least lo, no junk, no overflow (no upper
 * bound: --seed; --steps checks its own). */
int oc_optv_at_least(const char *flag, const char *s, int64_t lo, int64_t *out,
                     struct oc_status *st)
{
    errno = 0;
    char *end;
    char q[OC_QUOTE_MAX];
    long long v = strtoll(s, &end, 10);
    if (end == s || *end)
        return oc_fail(st, "--%s: '%s' is not an integer", flag, oc_quote(q, sizeof q, s));
    if (errno == ERANGE && v > 0)
        return oc_fail(st, "--%s %s is out of range (at most %lld)", flag,
                       oc_quote(q, sizeof q, s), (long long)INT64_MAX);
    if (errno || v < lo)
        return oc_fail(st, "--%s must be at least %lld (got %s)", flag, (long long)lo,
                       oc_quote(q, sizeof q, s));
    *out = v;
    return 0;
}

/* A positive real option value up to 1e9 (--lr). Each way to
 * miss says which: not a number, not positive, or past the bound. */
int oc_optv_positive_real(const char *flag, const char *s, double *out,
                          struct oc_status *st)
{
    errno = 0;
    char *end;
    char q[OC_QUOTE_MAX];
    double v = strtod(s, &end);
    if (end == s || *end || isnan(v))
        return oc_fail(st, "--%s: '%s' is not a number", flag, oc_quote(q, sizeof q, s));
    if (!(v > 0))
        return oc_fail(st, "--%s must be positive (got %s)", flag, oc_quote(q, sizeof q, s));
    if (v > 1e9)
        return oc_fail(st, "--%s %s is out of range (at most 1e9)", flag,
                       oc_quote(q, sizeof q, s));
    *out = v;
    return 0;
}

/* --batch-tolerance: a percentage, "5%" or "5", in [0, 50]: how far from
 * --global-batch a layout's batch may be (core/batch.h), as a fraction. */
int oc_optv_tolerance_value(const char *s, double *out, struct oc_status *st)
{
    errno = 0;
    char *end;
    char q[OC_QUOTE_MAX];
    const double v = strtod(s, &end);
    oc_quote(q, sizeof q, s);
    if (end != s && *end == '%')
        end++;
    if (end == s || *end || isnan(v) || errno)
        return oc_fail(st, "--batch-tolerance: '%s' is not a percentage (e.g. 5%% or 5)", q);
    if (!(v >= 0) || v > 50)
        return oc_fail(st, "--batch-tolerance %s: must be between 0%% and 50%%", q);
    *out = v / 100.0;
    return 0;
}

/* --timeout: "auto" (0: exec/timeout.h chooses) or seconds in (0,
 * OC_EXEC_MAX_TIMEOUT_S]. */
int oc_optv_timeout_value(const char *s, double *out, struct oc_status *st)
{
    if (strcmp(s, "auto") == 0) {
        *out = 0;
        return 0;
    }
    errno = 0;
    char *end;
    char q[OC_QUOTE_MAX];
    const double v = strtod(s, &end);
    oc_quote(q, sizeof q, s);
    if (end == s || *end || isnan(v))
        return oc_fail(st, "--timeout: '%s' is not a number of seconds or 'auto'", q);
    if (!(v > 0))
        return oc_fail(st, "--timeout %s: a wait needs more than 0 seconds (or 'auto')", q);
    if (v > OC_EXEC_MAX_TIMEOUT_S)
        return oc_fail(st, "--timeout %s: at most %.0f seconds (a week) per wait; "
                           "'auto' derives it from the prediction", q, OC_EXEC_MAX_TIMEOUT_S);
    *out = v;
    return 0;
}

/* A message size: an integer with an optional binary suffix (K, M, G, as
 * nccl-tests' -e 64M), from 8 B to 1 GiB. */
int oc_optv_byte_size(const char *flag, const char *s, int64_t *out, struct oc_status *st)
{
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    int shift = 0;
    if (end != s && (*end == 'K' || *end == 'k'))
        shift = 10, end++;
    else if (end != s && *end == 'M')
        shift = 20, end++;
    else if (end != s && *end == 'G')
        shift = 30, end++;
    char q[OC_QUOTE_MAX];
    if (end == s || *end || errno || v < 0 || v > (1LL << 30))
        return oc_fail(st, "--%s: '%s' is not a size (bytes, or with K, M or G)", flag,
                       oc_quote(q, sizeof q, s));
    v <<= shift;
    if (v < 8 || v > (1LL << 30))
        return oc_fail(st, "--%s %s: the largest message must be in [8 B, 1 GiB]", flag,
                       oc_quote(q, sizeof q, s));
    *out = v;
    return 0;
}

/* A list value split in place by strtok_r: a heap copy, so that no buffer
 * size cuts a long list short. */
static char *list_copy(const char *s)
{
    size_t n = strlen(s) + 1;
    char *b = oc_xmalloc(n);
    memcpy(b, s, n);
    return b;
}

/* "1,2,4" -> list of positive integers, at most OC_MAX_LIST, none twice. */
int oc_optv_int_list(const char *flag, const char *s, int64_t *out, int *n,
                     struct oc_status *st)
{
    char *buf = list_copy(s);
    int rc = 0;
    *n = 0;
    char *save = NULL;
    for (char *p = strtok_r(buf, ",", &save); p && rc == 0;
         p = strtok_r(NULL, ",", &save)) {
        int64_t v;
        if (*n == OC_MAX_LIST)
            rc = oc_fail(st, "--%s: at most %d values", flag, OC_MAX_LIST);
        else if (oc_optv_positive(flag, p, &v, st) != 0)
            rc = -1;
        for (int i = 0; rc == 0 && i < *n; i++)
            if (out[i] == v)
                rc = oc_fail(st, "--%s: %lld is listed twice", flag, (long long)v);
        if (rc == 0)
            out[(*n)++] = v;
    }
    free(buf);
    if (rc == 0 && *n == 0)
        rc = oc_fail(st, "--%s: empty list", flag);
    return rc;
}

/* One candidate schedule into o's list: at most OC_MAX_LIST, none twice
 * (`entry` is what the user wrote for it, for the message). */
static int add_schedule(struct oc_opts *o, int *n, enum oc_schedule_kind k, int64_t v,
                        const char *entry, struct oc_status *st)
{
    if (*n == OC_MAX_LIST)
        return oc_fail(st, "--schedule: at most %d schedules ('all' counts three)",
                       OC_MAX_LIST);
    for (int i = 0; i < *n; i++)
        if (o->schedules[i] == k && o->vchunks[i] == v) {
            char q[OC_QUOTE_MAX];
            if (k == OC_SCHED_INTERLEAVED)
                return oc_fail(st, "--schedule: interleaved:%lld is listed twice (by '%s')",
                               (long long)v, oc_quote(q, sizeof q, entry));
            return oc_fail(st, "--schedule: %s is listed twice (by '%s')",
                           oc_schedule_name(k), oc_quote(q, sizeof q, entry));
        }
    o->schedules[*n] = k;
    o->vchunks[(*n)++] = v;
    return 0;
}

/* One entry of --schedule: "all", "interleaved[:v]", "gpipe", ... */
static int schedule_entry(struct oc_opts *o, int *n, char *p, struct oc_status *st)
{
    int64_t v = 1;
    enum oc_schedule_kind k;
    char *colon = strchr(p, ':');
    if (colon) {
        *colon = '\0';
        if (oc_optv_positive("schedule", colon + 1, &v, st) != 0)
            return -1;
    }
    if (strcmp(p, "all") == 0) {
        if (colon)
            return oc_fail(st, "--schedule: 'all' takes no ':v'");
        return add_schedule(o, n, OC_SCHED_GPIPE, 1, "all", st) ||
               add_schedule(o, n, OC_SCHED_1F1B, 1, "all", st) ||
               add_schedule(o, n, OC_SCHED_INTERLEAVED, 2, "all", st) ? -1 : 0;
    }
    char q[OC_QUOTE_MAX];
    if (oc_schedule_from_name(p, &k) != 0)
        return oc_fail(st, "--schedule: unknown schedule '%s' (known: gpipe, "
                           "1f1b, interleaved[:v], all)", oc_quote(q, sizeof q, p));
    if (k == OC_SCHED_INTERLEAVED && !colon)
        v = o->layout.vchunks > 1 ? o->layout.vchunks : 2;
    if (k != OC_SCHED_INTERLEAVED && colon)
        return oc_fail(st, "--schedule: only interleaved takes ':v' (got '%s:%lld')",
                       oc_quote(q, sizeof q, p), (long long)v);
    return add_schedule(o, n, k, v, p, st);
}

/* "1f1b,interleaved:2,gpipe" -> schedules with their v. */
int oc_optv_schedule_list(struct oc_opts *o, const char *s, struct oc_status *st)
{
    char *buf = list_copy(s);
    int n = 0, rc = 0;
    char *save = NULL;
    for (char *p = strtok_r(buf, ",", &save); p && rc == 0;
         p = strtok_r(NULL, ",", &save))
        rc = schedule_entry(o, &n, p, st);
    free(buf);
    if (rc == 0 && n == 0)
        rc = oc_fail(st, "--schedule: empty list");
    if (rc == 0)
        o->n_schedules = n;
    return rc;
}

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* --cards: N, a list "32,48,64", or a range "A-B" (A, 2A, 4A, ... up to
 * B) or "A-B:S" (A, A+S, ... up to B); at most OC_MAX_LIST counts, none
 * twice, sorted. o->cards is the smallest (the only one for N). Whether
 * the command takes more than one is oc_opts_parse's check. */
int oc_optv_cards_value(struct oc_opts *o, const char *val, struct oc_status *st)
{
    /* a leading '-' is a sign (oc_optv_positive() refuses it), not a range */
    const char *dash = val[0] ? strchr(val + 1, '-') : NULL;
    char q[OC_QUOTE_MAX];
    if (!dash && !strchr(val, ',')) {
        if (oc_optv_positive("cards", val, &o->cards_list[0], st) != 0)
            return -1;
        o->n_cards = 1;
    } else if (!dash) {
        if (oc_optv_int_list("cards", val, o->cards_list, &o->n_cards, st) != 0)
            return -1;
    } else {
        char *buf = list_copy(val);
        char *colon = strchr(buf, ':');
        buf[dash - val] = '\0';
        if (colon)
            *colon = '\0';
        int64_t a, b, step = 0;
        int rc = oc_optv_positive("cards", buf, &a, st) || oc_optv_positive("cards", buf + (dash - val) + 1, &b, st) ||
                 (colon && oc_optv_positive("cards", colon + 1, &step, st)) ? -1 : 0;
        free(buf);
        if (rc != 0)
            return -1;
        if (b < a)
            return oc_fail(st, "--cards %s: the range ends below its start",
                           oc_quote(q, sizeof q, val));
        o->n_cards = 0;
        for (int64_t c = a; c <= b; c = step ? c + step : c * 2) {
            if (o->n_cards == OC_MAX_LIST)
                return oc_fail(st, "--cards %s: more than %d card counts",
                               oc_quote(q, sizeof q, val), OC_MAX_LIST);
            o->cards_list[o->n_cards++] = c;
        }
    }
    qsort(o->cards_list, (size_t)o->n_cards, sizeof o->cards_list[0], cmp_i64);
    o->cards = o->cards_list[0];
    return 0;
}

