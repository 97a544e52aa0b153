/* log_check.c: the check of SimGrid log settings (--log, $OCSIM_LOG) before
 * SimGrid sees them (see engine.h, oc_sim_log_check). SimGrid's xbt log
 * control aborts the process with a backtrace on a setting it cannot parse
 * (an unknown priority, a missing '.', an appender whose file cannot be
 * opened), which breaks the one-line contract of a bad input; this file
 * refuses those settings with one line instead.
 *
 * The grammar is xbt_log_control_set's (SimGrid 3.32, src/xbt/log.cpp, and
 * its documentation "Logging support"): settings separated by spaces, each
 * CATEGORY.OPTION:VALUE (or =VALUE), the category up to the first '.',
 * OPTION one of threshold, additivity, appender, format (this check takes
 * their usual spellings: thres, thresh, threshold, add, additivity, app,
 * appender, fmt, format), a threshold one of the priority names (any case),
 * an appender file:PATH, rollfile:SIZE:PATH or splitfile:SIZE:PATH.
 *
 * What it is not: a parser of the format directives (SimGrid prints an
 * unknown one as it is) or a check that the category exists (SimGrid
 * accepts a category declared later). */
#define _POSIX_C_SOURCE 200809L
#include "engine.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* The option's kind, or -1. */
enum { LOG_THRES, LOG_ADD, LOG_APP, LOG_FMT };

static int option_kind(const char *s, size_t n)
{
    static const struct { const char *name; int kind; } opts[] = {
        {"thres", LOG_THRES}, {"thresh", LOG_THRES}, {"threshold", LOG_THRES},
        {"add", LOG_ADD},     {"additivity", LOG_ADD}, {"app", LOG_APP},
        {"appender", LOG_APP}, {"fmt", LOG_FMT},      {"format", LOG_FMT},
    };
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        if (strlen(opts[i].name) == n && strncmp(opts[i].name, s, n) == 0)
            return opts[i].kind;
    return -1;
}

/* SimGrid's priority names (xbt/log.h, e_xbt_log_priority_t), any case. */
static int is_priority(const char *v)
{
    static const char *const names[] = {"none",    "trace", "debug", "verbose",
                                        "info",    "warning", "error", "critical"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(v, names[i]) == 0)
            return 1;
    return 0;
}

/* An appender: file:PATH, rollfile:SIZE:PATH or splitfile:SIZE:PATH, whose
 * folder exists (SimGrid aborts when it cannot open the file). */
static int check_appender(const char *tok, const char *v, struct oc_status *st)
{
    const char *path = NULL;
    if (strncmp(v, "file:", 5) == 0) {
        path = v + 5;
    } else if (strncmp(v, "rollfile:", 9) == 0 || strncmp(v, "splitfile:", 10) == 0) {
        path = strchr(strchr(v, ':') + 1, ':');
        path = path ? path + 1 : "";
    } else {
        return oc_fail(st, "--log %.80s: the appender must be file:PATH, rollfile:SIZE:PATH "
                           "or splitfile:SIZE:PATH", tok);
    }
    if (!*path)
        return oc_fail(st, "--log %.80s: the appender names no file", tok);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return 0; /* the current folder */
    if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return oc_fail(st, "--log %.80s: the log file's folder %.80s does not exist", tok, dir);
    return 0;
}

/* One CATEGORY.OPTION:VALUE setting. */
static int check_setting(const char *tok, struct oc_status *st)
{
    size_t name_n = strcspn(tok, ".:= ");
    const char *opt = tok + name_n;
    if (name_n == 0 || *opt != '.')
        return oc_fail(st, "--log %.80s: expected CATEGORY.SETTING:VALUE, for example "
                           "ocsim_replay.thres:debug", tok);
    for (size_t i = 0; i < name_n; i++) {
        const char c = tok[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_'))
            return oc_fail(st, "--log %.80s: a category name holds letters, digits and _ only",
                           tok);
    }
    opt++;
    const size_t opt_n = strcspn(opt, ":= ");
    const char *val = opt + opt_n;
    if (*val != ':' && *val != '=')
        return oc_fail(st, "--log %.80s: expected CATEGORY.SETTING:VALUE, for example "
                           "ocsim_replay.thres:debug", tok);
    val++;
    switch (option_kind(opt, opt_n)) {
    case LOG_THRES:
        if (!is_priority(val))
            return oc_fail(st, "--log %.80s: unknown priority '%.40s' (known: trace, debug, "
                               "verbose, info, warning, error, critical)", tok, val);
        return 0;
    case LOG_APP:
        return check_appender(tok, val, st);
    case LOG_ADD:
    case LOG_FMT:
        return 0;
    }
    return oc_fail(st, "--log %.80s: unknown setting '%.*s' (known: thres, add, app, fmt)", tok,
                   (int)(opt_n > 40 ? 40 : opt_n), opt);
}

int oc_sim_log_check(const char *spec, struct oc_status *st)
{
    OC_ASSERT(spec);
    char tok[512];
    const char *p = spec;
    int n = 0;
    while (*p) {
        while (*p == ' ')
            p++;
        const size_t len = strcspn(p, " ");
        if (len == 0)
            break;
        if (len >= sizeof tok)
            return oc_fail(st, "--log: a setting of %zu characters is absurd", len);
        memcpy(tok, p, len);
        tok[len] = '\0';
        if (check_setting(tok, st) != 0)
            return -1;
        n++;
        p += len;
    }
    if (n == 0)
        return oc_fail(st, "--log: no setting given (for example ocsim_replay.thres:debug)");
    return 0;
}
