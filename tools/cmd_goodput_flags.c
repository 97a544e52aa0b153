/* cmd_goodput_flags.c: the flags of `ocsim goodput` alone (goodput_flags.h). */
#include "goodput_flags.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A finite number at the start of s; *end after it. */
static int number(const char *s, double *v, const char **end)
{
    char *e;
    *v = strtod(s, &e);
    *end = e;
    return e != s && isfinite(*v) ? 0 : -1;
}

/* "90s", "30m", "2h", "1.5d", "600" (seconds); "500steps" into *steps when
 * steps is not NULL. */
static int duration(const char *flag, const char *s, double *out, double *steps,
                    struct oc_status *st)
{
    char q[OC_QUOTE_MAX];
    const char *u;
    double v;
    if (number(s, &v, &u) == 0 && v > 0) {
        static const struct {
            const char *unit;
            double s;
        } units[] = {{"", 1},     {"s", 1},      {"m", 60},   {"min", 60},
                     {"h", 3600}, {"d", 86400}};
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (strcmp(u, units[i].unit) == 0) {
                *out = v * units[i].s;
                return 0;
            }
        if (steps && strcmp(u, "steps") == 0 && v == floor(v)) {
            *steps = v;
            return 0;
        }
    }
    return oc_fail(st, "--%s: '%s' is not a positive time (90s, 30m, 2h, 1.5d%s)", flag,
                   oc_quote(q, sizeof q, s), steps ? ", 500steps" : "");
}

/* "1.2TB", "800GB", "50GB/s", "400Gb/s" (bits), a bare number of bytes. */
static int bytes_value(const char *flag, const char *s, int rate, double *out,
                       struct oc_status *st)
{
    char q[OC_QUOTE_MAX];
    const char *u;
    double v;
    if (number(s, &v, &u) == 0 && v > 0) {
        double mult = 1;
        if (*u && strchr("kMGTP", *u)) {
            static const char pre[] = "kMGTP";
            mult = pow(1e3, (double)(strchr(pre, *u) - pre) + 1);
            u++;
        }
        if (*u == 'b' || *u == 'B') {
            if (*u == 'b')
                mult /= 8;
            u++;
        } else if (*u && mult != 1) {
            u = "?";
        }
        if (strcmp(u, rate ? "/s" : "") == 0 || (!*u && mult == 1)) {
            *out = v * mult;
            return 0;
        }
    }
    return oc_fail(st, "--%s: '%s' is not a positive %s", flag, oc_quote(q, sizeof q, s),
                   rate ? "bandwidth (50GB/s, 400Gb/s)" : "size (1.2TB, 800GB)");
}

/* "2e-5", "2e-5/gpu-hour", "1.6e-4/node-hour". */
static int rate_value(const char *s, struct oc_goodput_flags *g, struct oc_status *st)
{
    char q[OC_QUOTE_MAX];
    const char *u;
    double v;
    if (number(s, &v, &u) == 0 && v > 0) {
        if (!*u || strcmp(u, "/gpu-hour") == 0) {
            g->rate = v, g->rate_per_node = 0;
            return 0;
        }
        if (strcmp(u, "/node-hour") == 0) {
            g->rate = v, g->rate_per_node = 1;
            return 0;
        }
    }
    return oc_fail(st, "--failure-rate: '%s' is not a positive rate (2e-5/gpu-hour, "
                       "1.6e-4/node-hour)", oc_quote(q, sizeof q, s));
}

static int nonneg_duration(const char *flag, const char *s, double *out,
                           struct oc_status *st)
{
    if (strcmp(s, "0") == 0) {
        *out = 0;
        return 0;
    }
    return duration(flag, s, out, NULL, st);
}

/* One of this command's flags into g: 0 taken, 1 not one of ours, -1 bad. */
static int goodput_flag(struct oc_goodput_flags *g, const char *name, const char *v,
                        struct oc_status *st)
{
    char q[OC_QUOTE_MAX];
    if (strcmp(name, "step-time") == 0)
        return duration(name, v, &g->step_s, NULL, st);
    if (strcmp(name, "days") == 0) {
        const char *e;
        if (number(v, &g->days, &e) != 0 || *e || !(g->days > 0 && g->days <= OC_GOODPUT_DAYS_MAX))
            return oc_fail(st, "--days: '%s' is not a number of days in (0, %g]",
                           oc_quote(q, sizeof q, v), OC_GOODPUT_DAYS_MAX);
        return 0;
    }
    if (strcmp(name, "failures") == 0) {
        const char *e;
        g->source_count++;
        if (number(v, &g->failures, &e) != 0 || *e || !(g->failures > 0))
            return oc_fail(st, "--failures: '%s' is not a positive number of failures",
                           oc_quote(q, sizeof q, v));
        return 0;
    }
    if (strcmp(name, "mtbf") == 0)
        return g->source_count++, duration(name, v, &g->mtbf_s, NULL, st);
    if (strcmp(name, "failure-rate") == 0)
        return g->source_count++, rate_value(v, g, st);
    if (strcmp(name, "interval") == 0)
        return duration(name, v, &g->interval_s, &g->interval_steps, st);
    if (strcmp(name, "save-time") == 0)
        return nonneg_duration(name, v, &g->save_s, st);
    if (strcmp(name, "load-time") == 0)
        return nonneg_duration(name, v, &g->load_s, st);
    if (strcmp(name, "restart-time") == 0)
        return nonneg_duration(name, v, &g->restart_s, st);
    if (strcmp(name, "exec-log") == 0) {
        if (!*v)
            return oc_fail(st, "--exec-log: an empty value (expected a path)");
        g->exec_log = v;
        return 0;
    }
    if (strcmp(name, "checkpoint-size") == 0)
        return bytes_value(name, v, 0, &g->ckpt_bytes, st);
    if (strcmp(name, "write-bw-node") == 0)
        return bytes_value(name, v, 1, &g->wbw_node, st);
    if (strcmp(name, "write-bw-total") == 0)
        return bytes_value(name, v, 1, &g->wbw_total, st);
    if (strcmp(name, "read-bw-node") == 0)
        return bytes_value(name, v, 1, &g->rbw_node, st);
    if (strcmp(name, "read-bw-total") == 0)
        return bytes_value(name, v, 1, &g->rbw_total, st);
    if (strcmp(name, "trials") == 0 || strcmp(name, "seed") == 0) {
        char *e;
        const long long n = strtoll(v, &e, 10);
        const int trials = name[0] == 't';
        if (e == v || *e || n < (trials ? 1 : 0) || (trials && n > OC_GOODPUT_TRIALS_MAX))
            return trials ? oc_fail(st, "--trials: '%s' is not a number of trials in [1, %d]",
                                    oc_quote(q, sizeof q, v), OC_GOODPUT_TRIALS_MAX)
                          : oc_fail(st, "--seed: '%s' is not a non-negative integer",
                                    oc_quote(q, sizeof q, v));
        if (trials)
            g->trials = n;
        else
            g->seed = (uint64_t)n;
        return 0;
    }
    return 1;
}

int oc_goodput_flags_split(int argc, char **argv, struct oc_goodput_flags *g, char **rest,
                           int *nrest, struct oc_status *st)
{
    char seen[16][64] = {{0}};
    int nseen = 0;
    *nrest = 0;
    rest[(*nrest)++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || !a[2]) {
            rest[(*nrest)++] = argv[i];
            continue;
        }
        char name[64];
        const char *eq = strchr(a, '=');
        const size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), a + 2);
        const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
        struct oc_goodput_flags probe = *g;
        struct oc_status pst = {{0}};
        int rc = goodput_flag(&probe, name, val ? val : "", &pst);
        if (rc == 1) {
            rest[(*nrest)++] = argv[i];
            continue;
        }
        if (!val)
            return oc_fail(st, "--%s needs a value", name);
        for (int k = 0; k < nseen; k++)
            if (strcmp(seen[k], name) == 0)
                return oc_fail(st, "--%s is given twice (give it once)", name);
        if (nseen < 16)
            snprintf(seen[nseen++], sizeof seen[0], "%s", name);
        if (rc != 0) {
            *st = pst;
            return -1;
        }
        *g = probe;
        if (!eq)
            i++;
    }
    if (g->source_count > 1)
        return oc_fail(st, "--failures, --mtbf and --failure-rate each set the failure "
                           "rate (give one)");
    if (g->exec_log && g->save_s >= 0)
        return oc_fail(st, "--save-time and --exec-log each set the save time (give one)");
    return 0;
}

/* The seconds of one "checkpoint: saved DIR/step-N, K shards, SIZE in TIME
 * (R s/GB)" line of ocsim-exec (exec/ckpt_save.c; TIME as oc_fmt_si
 * writes it, "850 ms", "12.3 s"), or -1. */
static double saved_line_s(const char *line)
{
    const char *in = strstr(line, " in "), *p;
    while (in && (p = strstr(in + 4, " in ")) != NULL)
        in = p;
    if (!in)
        return -1;
    char *e;
    const double v = strtod(in + 4, &e);
    if (e == in + 4 || !(v >= 0))
        return -1;
    while (*e == ' ')
        e++;
    static const char pre[] = "pnum";
    static const double mult[] = {1e-12, 1e-9, 1e-6, 1e-3};
    double k = 1;
    if (*e && strchr(pre, *e) && e[1] == 's')
        k = mult[strchr(pre, *e) - pre], e++;
    return *e == 's' && (e[1] == ' ' || e[1] == '\n' || !e[1]) ? v * k : -1;
}

/* --exec-log FILE: the mean of the saves ocsim-exec --save reported. */
int oc_goodput_flags_exec_log(struct oc_goodput_flags *g, struct oc_status *st)
{
    char q[OC_QUOTE_MAX];
    FILE *f = fopen(g->exec_log, "r");
    if (!f)
        return oc_fail(st, "--exec-log %s: cannot read: %s",
                       oc_quote(q, sizeof q, g->exec_log), strerror(errno));
    char line[8192];
    double sum = 0;
    int64_t n = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "checkpoint: saved ", 18) == 0) {
            const double t = saved_line_s(line);
            if (t < 0) {
                fclose(f);
                return oc_fail(st, "--exec-log %s: a 'checkpoint: saved' line without "
                                   "its time", oc_quote(q, sizeof q, g->exec_log));
            }
            sum += t, n++;
        }
    fclose(f);
    if (n == 0)
        return oc_fail(st, "--exec-log %s: no 'checkpoint: saved' line (run ocsim-exec "
                           "with --save)", oc_quote(q, sizeof q, g->exec_log));
    g->save_s = sum / (double)n;
    g->exec_saves = n;
    return 0;
}
