/* options_values.h: the value parsers of the flag table (options_values.c),
 * shared by options.c alone: each checks one flag's value and fills *out,
 * or returns -1 with one line in st naming the flag and what is wrong. */
#ifndef OC_OPTIONS_VALUES_H
#define OC_OPTIONS_VALUES_H

#include <stdint.h>

#include "options.h"
#include "status.h"

int oc_optv_positive(const char *flag, const char *s, int64_t *out, struct oc_status *st);
int oc_optv_at_least(const char *flag, const char *s, int64_t lo, int64_t *out,
                     struct oc_status *st);
int oc_optv_positive_real(const char *flag, const char *s, double *out, struct oc_status *st);
int oc_optv_tolerance_value(const char *s, double *out, struct oc_status *st);
int oc_optv_timeout_value(const char *s, double *out, struct oc_status *st);
int oc_optv_byte_size(const char *flag, const char *s, int64_t *out, struct oc_status *st);
int oc_optv_int_list(const char *flag, const char *s, int64_t *out, int *n, struct oc_status *st);
int oc_optv_schedule_list(struct oc_opts *o, const char *s, struct oc_status *st);
int oc_optv_cards_value(struct oc_opts *o, const char *val, struct oc_status *st);

#endif
