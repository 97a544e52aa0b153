/* format.h: numbers for people: SI prefixes, fixed widths.
 *
 *   char b[32];
 *   oc_fmt_si(b, sizeof b, 62.1e9, "B");   // "62.1 GB"
 *   oc_fmt_si(b, sizeof b, 4.2e-3, "s");   // "4.2 ms"
 */
#ifndef OC_FORMAT_H
#define OC_FORMAT_H

#include <stddef.h>

/* Three significant digits with an SI prefix (p n u m - k M G T P E). */
char *oc_fmt_si(char *buf, size_t n, double v, const char *unit);

#endif
