/* fuzz_check.h: what every fuzz target of fuzz/ shares: the checks of the
 * bad-input contract on a reader's answer, and the list of known defects a
 * run tolerates.
 *
 *   int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
 *       char *s = fz_text(data, n);                 // NUL-terminated copy
 *       struct oc_status st = {{0}};
 *       if (reader(s, &x, &st) != 0) fz_check_msg("reader", &st, s);
 *       else FZ_CHECK(x.n >= 0, "reader: n %lld", (long long)x.n);
 *       free(s);
 *       return 0;
 *   }
 *
 * A check that fails prints one "fuzz: ..." line and aborts, which
 * libFuzzer (or the replay driver, replay_main.c) reports as a crash with
 * the input saved. Memory errors, undefined behaviour and leaks are the
 * sanitizers' part (-fsanitize=fuzzer,address,undefined).
 *
 * Known defects: fuzz/known.txt lists defects found and not yet fixed, one
 * a line, by an id ("msg-ctrl"); a run tolerates the ids given in
 * $OCSIM_FUZZ_ALLOW (comma separated; tools/fuzz.sh and the replay driver
 * fill it from known.txt), so that the fuzzer goes on looking for new ones.
 * The ids the targets know:
 *   msg-ctrl        a failure's message holds a control character (a
 *                   newline, an escape) copied from the input
 *   msg-utf8        a failure's message is not valid UTF-8
 *   world-overflow  tp*pp*dp of a parsed layout overflows int64 (the
 *                   layout target then skips oc_layout_validate)
 * With $OCSIM_FUZZ_REPORT set, every message tolerated is printed (replay
 * a grown corpus to see every place a known defect shows).
 * Deleting a line from known.txt makes its regression inputs
 * (fuzz/regressions/) fail again until the defect is fixed.
 */
#ifndef OC_FUZZ_CHECK_H
#define OC_FUZZ_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* libFuzzer's entry points (every target defines both). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

/* The file being replayed (replay_main.c), named by fz_fail; NULL under
 * libFuzzer, which saves the input itself. */
extern const char *fz_current_input;

/* Prints "fuzz: <message>" (and the input's file when replaying) and
 * aborts. */
void fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
#define FZ_CHECK(cond, ...)                                                    \
    do {                                                                       \
        if (!(cond))                                                           \
            fz_fail(__VA_ARGS__);                                              \
    } while (0)

/* Adds the ids of a comma-separated list to the tolerated defects
 * (fz_init_known reads $OCSIM_FUZZ_ALLOW once). */
void fz_allow(const char *ids);
void fz_init_known(void);
/* 1 when the known defect `id` is tolerated (the first time, says so on
 * stderr); 0 when it must be reported. */
int fz_allowed(const char *id);

/* A failure's message: not empty, one line, NUL-terminated inside
 * OC_MSG_MAX, no control characters (msg-ctrl), valid UTF-8 (msg-utf8).
 * `what` names the call in the report; `input` (may be NULL) is printed
 * escaped beside it. */
void fz_check_msg(const char *what, const struct oc_status *st, const char *input);

/* 1 when s[0..n) is valid UTF-8 (no overlongs, no surrogates). */
int fz_utf8_valid(const unsigned char *s, size_t n);

/* A NUL-terminated copy of the input (free it). Bytes after an embedded
 * NUL are kept in the copy but a C-string reader does not see them. */
char *fz_text(const uint8_t *data, size_t n);

#endif
