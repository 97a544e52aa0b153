/* json_util.h: private helpers over jansson for the model and topology
 * readers (core/model.c, core/topology.c). Not a public API: nothing outside
 * core/ should include it.
 *
 *   json_t *root = oc_json_load_file(path, st);      // "FILE:LINE:COL: text"
 *   if (!root) return -1;
 *   struct oc_json_obj o = oc_json_root(root, path);
 *   int64_t h;
 *   if (oc_json_int(&o, "hidden_size", OC_JSON_REQUIRED, 1, 1000000, &h,
 *                   NULL, st) != 0) ...
 *   json_decref(root);
 *
 * Every failure fills st->msg with one line naming the file, the field and
 * the rule broken, for example
 *   models/x.json: field 'hidden_size' must be a positive integer (got -5)
 *   models/x.json: field 'hidden_size' is missing
 *   models/x.json: field 'hidden_size' must be an integer, not a string
 *   models/x.json: field 'hidden_size' is absurd (2e12 > 1e6)
 * A JSON null counts as absent (Hugging Face writes "n_inner": null).
 * Every text of the file a message shows (its name, a key) is escaped
 * and shortened (oc_quote). These helpers never print.
 */
#ifndef OC_JSON_UTIL_H
#define OC_JSON_UTIL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

enum { OC_JSON_OPTIONAL = 0, OC_JSON_REQUIRED = 1 };

/* A JSON object being read, and how its fields are named in messages. */
struct oc_json_obj {
    json_t *obj;       /* borrowed from the document */
    const char *path;  /* the file, as the user named it */
    char file[OC_QUOTE_MAX]; /* the same for messages (oc_quote) */
    char prefix[64];   /* "device" for fields inside "device"; "" at top level */
};

/* Parse a file. Returns a new reference, or NULL with st->msg
 * "FILE: cannot open (reason)", "FILE:LINE:COL: <jansson text>" or
 * "FILE: must hold a JSON object ({...}), not an array". Duplicate keys are
 * a parse error. FILE and jansson's text (which quotes the token it did
 * not expect) are escaped and shortened (oc_quote). */
json_t *oc_json_load_file(const char *path, struct oc_status *st);
/* The same from n bytes in memory (a fuzzer's input, a test's text);
 * `name` stands for the file in messages. */
json_t *oc_json_load_buffer(const char *text, size_t n, const char *name,
                            struct oc_status *st);

/* The top-level object of a document loaded from `file`. */
struct oc_json_obj oc_json_root(json_t *root, const char *file);

/* Is key present and not null? */
int oc_json_has(const struct oc_json_obj *o, const char *key);

/* Getters. Each returns 0 or -1 (st filled). An optional field that is
 * absent leaves *out untouched and sets *found (when not NULL) to 0. */

/* An integer in [min, absurd_max]. A real with an integral value (8192.0,
 * 1e4) is accepted; 64.5 is not. Below min: "must be a positive integer"
 * (min 1), "must be a non-negative integer" (min 0) or "must be an integer
 * >= min"; above absurd_max: "is absurd (X > MAX)". */
int oc_json_int(const struct oc_json_obj *o, const char *key, int required,
                int64_t min, int64_t absurd_max, int64_t *out, int *found,
                struct oc_status *st);

/* The rule a real number must follow. lo/hi are hard limits of meaning
 * (an efficiency is in (0, 1]); absurd_lo/absurd_hi catch values no real
 * machine or model has, most often a wrong unit (100 for 100 Gb/s where
 * bytes per second are asked). Use -INFINITY / INFINITY for "none". */
struct oc_json_rule {
    double lo;
    int lo_open; /* 1: value > lo; 0: value >= lo */
    double hi;
    int hi_open; /* 1: value < hi; 0: value <= hi */
    double absurd_lo;
    double absurd_hi;
    const char *unit; /* named in an "absurd" message, e.g. "bytes per second"; may be NULL */
};

int oc_json_num(const struct oc_json_obj *o, const char *key, int required,
                const struct oc_json_rule *rule, double *out, int *found,
                struct oc_status *st);

/* The same rules on a value already read (for oc_model_check and
 * oc_topology_check on structs built in code); `name` is the field. */
int oc_json_check_int(const char *file, const char *name, double x,
                      int64_t min, int64_t absurd_max, struct oc_status *st);
int oc_json_check_num(const char *file, const char *name, double x,
                      const struct oc_json_rule *rule, struct oc_status *st);

/* A string of at most n-1 bytes; longer is an error. */
int oc_json_str(const struct oc_json_obj *o, const char *key, int required,
                char *out, size_t n, int *found, struct oc_status *st);

/* true or false. */
int oc_json_bool(const struct oc_json_obj *o, const char *key, int required,
                 int *out, int *found, struct oc_status *st);

/* A nested object; child->prefix becomes "<prefix>.<key>" (or "<key>"). */
int oc_json_obj_field(const struct oc_json_obj *o, const char *key,
                      int required, struct oc_json_obj *child, int *found,
                      struct oc_status *st);

/* Every key of o must be one of `known` (NULL-terminated) or start with '_'
 * (a comment). Catches typos such as "bandwith_Bps". */
int oc_json_known_keys(const struct oc_json_obj *o, const char *const *known,
                       struct oc_status *st);

/* The name of a field in messages: "device.sm_count" or "hidden_size";
 * the key escaped and shortened (oc_quote: a key is the file's text). */
void oc_json_field_name(const struct oc_json_obj *o, const char *key,
                        char *out, size_t n);

/* A number as %g, without the '+' and leading zeros of the exponent:
 * 2e12, 1e6, 0.75, 12.5e9 -> "1.25e10". */
void oc_json_fmt_num(double v, char *out, size_t n);

/* "a string", "an integer", "a real number", "true/false", "an object",
 * "an array", "null". */
const char *oc_json_type_name(const json_t *v);

#endif
