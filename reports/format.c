/* format.c: SI formatting (see format.h). */
#include "format.h"

#include <math.h>
#include <stdio.h>

char *oc_fmt_si(char *buf, size_t n, double v, const char *unit)
{
    static const char *const prefix[] = {"p", "n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
    if (v == 0 || !isfinite(v)) {
        snprintf(buf, n, "%g %s", v, unit);
        return buf;
    }
    int e = (int)floor(log10(fabs(v)) / 3.0);
    if (e < -4)
        e = -4;
    if (e > 6)
        e = 6;
    double s = v / pow(10.0, 3.0 * e);
    /* 999.95 would print as 1000 with one decimal: move up a prefix. */
    if (fabs(s) >= 999.95 && e < 6) {
        e++;
        s /= 1000.0;
    }
    const char *fmt = fabs(s) >= 100 ? "%.0f %s%s" : fabs(s) >= 10 ? "%.1f %s%s" : "%.2f %s%s";
    snprintf(buf, n, fmt, s, prefix[e + 4], unit);
    return buf;
}
