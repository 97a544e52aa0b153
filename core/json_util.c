/* json_util.c: typed, range-checked field access over jansson, with one-line
 * error messages that name the file, the field and the rule (see
 * json_util.h). It knows nothing about models or topologies. */
#define _POSIX_C_SOURCE 200809L
#include "json_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What both loaders do once jansson has parsed (or failed). The name and
 * jansson's text are quoted: err->text quotes the token jansson did not
 * expect, the file's bytes (control characters, broken UTF-8) included. */
static json_t *loaded(json_t *root, const json_error_t *err, const char *name,
                      struct oc_status *st)
{
    char q[OC_QUOTE_MAX], qt[OC_QUOTE_MAX];
    if (!root) {
        oc_fail(st, "%s:%d:%d: %s", oc_quote(q, sizeof q, name), err->line, err->column,
                oc_quote(qt, sizeof qt, err->text));
        return NULL;
    }
    if (!json_is_object(root)) {
        oc_fail(st, "%s: must hold a JSON object ({...}), not %s", oc_quote(q, sizeof q, name),
                oc_json_type_name(root));
        json_decref(root);
        return NULL;
    }
    return root;
}

json_t *oc_json_load_file(const char *path, struct oc_status *st)
{
    char q[OC_QUOTE_MAX];
    FILE *f = fopen(path, "r");
    if (!f) {
        oc_fail(st, "%s: cannot open (%s)", oc_quote(q, sizeof q, path), strerror(errno));
        return NULL;
    }
    json_error_t err;
    json_t *root = json_loadf(f, JSON_REJECT_DUPLICATES, &err);
    fclose(f);
    return loaded(root, &err, path, st);
}

json_t *oc_json_load_buffer(const char *text, size_t n, const char *name,
                            struct oc_status *st)
{
    json_error_t err;
    json_t *root = json_loadb(text, n, JSON_REJECT_DUPLICATES, &err);
    return loaded(root, &err, name, st);
}

struct oc_json_obj oc_json_root(json_t *root, const char *file)
{
    struct oc_json_obj o;
    o.obj = root;
    o.path = file;
    oc_quote(o.file, sizeof o.file, file);
    o.prefix[0] = '\0';
    return o;
}

const char *oc_json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "true/false";
    case JSON_NULL: return "null";
    }
    return "an unknown JSON value";
}

void oc_json_field_name(const struct oc_json_obj *o, const char *key,
                        char *out, size_t n)
{
    /* prefix holds names the code asked for, shorter than n - 16: the key
     * takes the rest, quoted to fit, so that no cut splits a character */
    size_t pre = strlen(o->prefix);
    OC_ASSERT(n >= pre + 16);
    if (pre) {
        memcpy(out, o->prefix, pre);
        out[pre++] = '.';
    }
    size_t room = n - pre < OC_QUOTE_MAX ? n - pre : OC_QUOTE_MAX;
    oc_quote(out + pre, room, key);
}

void oc_json_fmt_num(double v, char *out, size_t n)
{
    /* The shortest %g that reads back as v, so 1000001 is not shown as 1e6. */
    char tmp[64];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    /* "2e+12" -> "2e12", "1e-05" -> "1e-5" */
    char *e = strchr(tmp, 'e');
    if (e) {
        char *src = e + 1, *dst = e + 1;
        if (*src == '+')
            src++;
        else if (*src == '-')
            *dst++ = *src++;
        while (*src == '0' && src[1] != '\0')
            src++;
        memmove(dst, src, strlen(src) + 1);
    }
    snprintf(out, n, "%s", tmp);
}

int oc_json_has(const struct oc_json_obj *o, const char *key)
{
    json_t *v = json_object_get(o->obj, key);
    return v && !json_is_null(v);
}

/* Look a field up. Returns 1 with *v set when present, 0 when absent and
 * optional, -1 (st filled) when absent and required. */
static int lookup(const struct oc_json_obj *o, const char *key, int required,
                  json_t **v, int *found, struct oc_status *st)
{
    *v = json_object_get(o->obj, key);
    int present = *v && !json_is_null(*v);
    if (found)
        *found = present;
    if (present)
        return 1;
    if (!required)
        return 0;
    char name[160];
    oc_json_field_name(o, key, name, sizeof name);
    if (*v)
        return oc_fail(st, "%s: field '%s' is missing (it is null)", o->file,
                       name);
    return oc_fail(st, "%s: field '%s' is missing", o->file, name);
}

int oc_json_check_int(const char *file, const char *name, double x,
                      int64_t min, int64_t absurd_max, struct oc_status *st)
{
    /* Compared as doubles so that a huge real cannot overflow int64. */
    char got[64], lim[64];
    oc_json_fmt_num(x, got, sizeof got);
    if (x < (double)min) {
        if (min == 1)
            return oc_fail(st, "%s: field '%s' must be a positive integer (got %s)",
                           file, name, got);
        if (min == 0)
            return oc_fail(st, "%s: field '%s' must be a non-negative integer (got %s)",
                           file, name, got);
        return oc_fail(st, "%s: field '%s' must be an integer >= %lld (got %s)",
                       file, name, (long long)min, got);
    }
    if (x > (double)absurd_max) {
        oc_json_fmt_num((double)absurd_max, lim, sizeof lim);
        return oc_fail(st, "%s: field '%s' is absurd (%s > %s)", file, name,
                       got, lim);
    }
    return 0;
}

int oc_json_int(const struct oc_json_obj *o, const char *key, int required,
                int64_t min, int64_t absurd_max, int64_t *out, int *found,
                struct oc_status *st)
{
    json_t *v;
    int r = lookup(o, key, required, &v, found, st);
    if (r <= 0)
        return r;
    char name[160], got[64];
    oc_json_field_name(o, key, name, sizeof name);
    double x;
    if (json_is_integer(v)) {
        x = (double)json_integer_value(v);
    } else if (json_is_real(v)) {
        x = json_real_value(v);
        if (x != floor(x)) {
            oc_json_fmt_num(x, got, sizeof got);
            return oc_fail(st, "%s: field '%s' must be an integer (got %s)",
                           o->file, name, got);
        }
    } else {
        return oc_fail(st, "%s: field '%s' must be an integer, not %s",
                       o->file, name, oc_json_type_name(v));
    }
    if (oc_json_check_int(o->file, name, x, min, absurd_max, st))
        return -1;
    *out = json_is_integer(v) ? (int64_t)json_integer_value(v) : (int64_t)x;
    return 0;
}

/* "must be a positive number", "must be >= 1", "must be in (0, 1]". */
static void rule_text(const struct oc_json_rule *r, char *out, size_t n)
{
    char lo[64], hi[64];
    oc_json_fmt_num(r->lo, lo, sizeof lo);
    oc_json_fmt_num(r->hi, hi, sizeof hi);
    int has_lo = isfinite(r->lo), has_hi = isfinite(r->hi);
    if (has_lo && has_hi)
        snprintf(out, n, "must be in %s%s, %s%s", r->lo_open ? "(" : "[", lo,
                 hi, r->hi_open ? ")" : "]");
    else if (has_lo && r->lo == 0.0)
        snprintf(out, n, "must be a %s number",
                 r->lo_open ? "positive" : "non-negative");
    else if (has_lo)
        snprintf(out, n, "must be %s %s", r->lo_open ? ">" : ">=", lo);
    else if (has_hi)
        snprintf(out, n, "must be %s %s", r->hi_open ? "<" : "<=", hi);
    else
        snprintf(out, n, "must be a finite number");
}

int oc_json_check_num(const char *file, const char *name, double x,
                      const struct oc_json_rule *rule, struct oc_status *st)
{
    char got[64], lim[64], text[192];
    oc_json_fmt_num(x, got, sizeof got);
    int bad = !isfinite(x) || (rule->lo_open ? !(x > rule->lo) : !(x >= rule->lo)) ||
              (rule->hi_open ? !(x < rule->hi) : !(x <= rule->hi));
    if (bad) {
        rule_text(rule, text, sizeof text);
        return oc_fail(st, "%s: field '%s' %s (got %s)", file, name, text, got);
    }
    const char *unit = rule->unit ? rule->unit : "";
    const char *sep = rule->unit ? "; the unit is " : "";
    if (x > rule->absurd_hi) {
        oc_json_fmt_num(rule->absurd_hi, lim, sizeof lim);
        return oc_fail(st, "%s: field '%s' is absurd (%s > %s%s%s)", file,
                       name, got, lim, sep, unit);
    }
    if (x < rule->absurd_lo) {
        oc_json_fmt_num(rule->absurd_lo, lim, sizeof lim);
        return oc_fail(st, "%s: field '%s' is absurd (%s < %s%s%s)", file,
                       name, got, lim, sep, unit);
    }
    return 0;
}

int oc_json_num(const struct oc_json_obj *o, const char *key, int required,
                const struct oc_json_rule *rule, double *out, int *found,
                struct oc_status *st)
{
    json_t *v;
    int r = lookup(o, key, required, &v, found, st);
    if (r <= 0)
        return r;
    char name[160];
    oc_json_field_name(o, key, name, sizeof name);
    if (!json_is_number(v))
        return oc_fail(st, "%s: field '%s' must be a number, not %s", o->file,
                       name, oc_json_type_name(v));
    double x = json_number_value(v);
    if (oc_json_check_num(o->file, name, x, rule, st))
        return -1;
    *out = x;
    return 0;
}

int oc_json_str(const struct oc_json_obj *o, const char *key, int required,
                char *out, size_t n, int *found, struct oc_status *st)
{
    json_t *v;
    int r = lookup(o, key, required, &v, found, st);
    if (r <= 0)
        return r;
    char name[160];
    oc_json_field_name(o, key, name, sizeof name);
    if (!json_is_string(v))
        return oc_fail(st, "%s: field '%s' must be a string, not %s", o->file,
                       name, oc_json_type_name(v));
    size_t len = json_string_length(v);
    if (len + 1 > n)
        return oc_fail(st, "%s: field '%s' is too long (%zu > %zu characters)",
                       o->file, name, len, n - 1);
    memcpy(out, json_string_value(v), len);
    out[len] = '\0';
    return 0;
}

int oc_json_bool(const struct oc_json_obj *o, const char *key, int required,
                 int *out, int *found, struct oc_status *st)
{
    json_t *v;
    int r = lookup(o, key, required, &v, found, st);
    if (r <= 0)
        return r;
    if (!json_is_boolean(v)) {
        char name[160];
        oc_json_field_name(o, key, name, sizeof name);
        return oc_fail(st, "%s: field '%s' must be true or false, not %s",
                       o->file, name, oc_json_type_name(v));
    }
    *out = json_is_true(v);
    return 0;
}

int oc_json_obj_field(const struct oc_json_obj *o, const char *key,
                      int required, struct oc_json_obj *child, int *found,
                      struct oc_status *st)
{
    json_t *v;
    int r = lookup(o, key, required, &v, found, st);
    if (r <= 0)
        return r;
    char name[160];
    oc_json_field_name(o, key, name, sizeof name);
    if (!json_is_object(v))
        return oc_fail(st, "%s: field '%s' must be an object ({...}), not %s",
                       o->file, name, oc_json_type_name(v));
    child->obj = v;
    child->path = o->path;
    memcpy(child->file, o->file, sizeof child->file);
    size_t len = strlen(name);
    if (len >= sizeof child->prefix)
        len = sizeof child->prefix - 1;
    memcpy(child->prefix, name, len);
    child->prefix[len] = '\0';
    return 0;
}

int oc_json_known_keys(const struct oc_json_obj *o, const char *const *known,
                       struct oc_status *st)
{
    const char *key;
    json_t *v;
    json_object_foreach(o->obj, key, v) {
        if (key[0] == '_')
            continue;
        int ok = 0;
        for (int i = 0; known[i]; i++)
            if (strcmp(key, known[i]) == 0)
                ok = 1;
        if (ok)
            continue;
        char name[160], list[384];
        size_t used = 0;
        list[0] = '\0';
        for (int i = 0; known[i] && used < sizeof list; i++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s",
                                     i ? ", " : "", known[i]);
        oc_json_field_name(o, key, name, sizeof name);
        return oc_fail(st, "%s: field '%s' is unknown (known here: %s)",
                       o->file, name, list);
    }
    return 0;
}
