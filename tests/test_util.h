/* test_util.h: what every CUnit suite shares: the runner, a relative
 * assertion, a suite's scratch folder, whole-file read and write, the check
 * of one error message, and the models and layouts the suites fill in code.
 *
 *   static int init(void) { return oc_test_dir_make("compare"); }
 *   static CU_TestInfo tests[] = { {"bubble", test_bubble}, CU_TEST_INFO_NULL };
 *   static CU_SuiteInfo suites[] = {
 *       {"compare", init, oc_test_dir_remove, NULL, NULL, tests},
 *       CU_SUITE_INFO_NULL };
 *   int main(void) { return oc_test_run(suites); }
 *
 * oc_test_run exits non-zero when any assertion failed (CU_basic_run_tests
 * does not) or when no test ran. What it is not: a test; the helpers assert
 * only what their comment says, each such check one CUnit assertion.
 */
#ifndef OC_TEST_UTIL_H
#define OC_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <CUnit/Basic.h>

#include "layout.h"
#include "model.h"

int oc_test_run(CU_SuiteInfo *suites);

/* |a - b| <= rel * |b| (or <= rel when b == 0). */
#define OC_ASSERT_REL(a, b, rel)                                               \
    CU_ASSERT_DOUBLE_EQUAL((a), (b), ((b) != 0 ? fabs((double)(b)) : 1.0) * (rel))

/* ---- the suite's scratch folder ---------------------------------------- */

/* The folder, once oc_test_dir_make has made it. */
extern char oc_test_dir[256];
/* Make /tmp/ocsim-test-<tag>-XXXXXX into oc_test_dir: 0, or -1 (CUnit's
 * suite init fails then). */
int oc_test_dir_make(const char *tag);
/* Remove oc_test_dir and all in it (a suite clean function); with
 * OCSIM_TEST_KEEP=1 keep it and say where it is. Returns 0. */
int oc_test_dir_remove(void);

/* ---- files --------------------------------------------------------------- */

/* The whole file, NUL-terminated (free it), or NULL where it cannot be read. */
char *oc_test_read_file(const char *path);
/* Write `text` to `path`; asserts (fatally) that the file opened. */
void oc_test_write_file(const char *path, const char *text);

/* The bytes fn(arg) writes to stdout and stderr while it runs (both sent to
 * a temporary file meanwhile), for "library code never prints". Asserts
 * (fatally) that the file could be made. */
long oc_test_output_bytes(void (*fn)(void *arg), void *arg);

/* ---- messages ------------------------------------------------------------ */

/* One assertion: `msg` contains `want`; prints both where it does not. */
void oc_test_msg_has(const char *msg, const char *want);
/* One assertion: a call that must succeed returned 0; prints msg where
 * it did not. */
void oc_test_expect_ok(int rc, const char *msg);
/* 1 when msg is one line of valid UTF-8 with no control character (the
 * bad-input contract's line, as the fuzz targets check it). */
int oc_test_msg_is_clean(const char *msg);
/* A call that must fail: rc is -1 and msg is one non-empty line, clean
 * (oc_test_msg_is_clean), that holds each of the NULL-terminated subs
 * (3 + n assertions). */
void oc_test_expect_fail(int rc, const char *msg, const char *const *subs);

/* ---- models and layouts filled in code ---------------------------------- */

/* A GPT-2/3-style model (LayerNorm with weight and bias, biases, GELU MLP of
 * width f, learned positions, dropout, tied embeddings): hidden h, heads a
 * (as many key/value heads), L layers, vocabulary V, P positions. */
struct oc_model oc_test_gpt(const char *name, int64_t h, int64_t a, int64_t L,
                            int64_t f, int64_t V, int64_t P);
/* The tiny GPT the schedule and report suites share, the same dimensions as
 * models/tiny.json: h 64, a 4, L 8, f 256, V 512, P 128. */
void oc_test_tiny_model(struct oc_model *m);
/* tp t, pp p, dp d, micro-batch b, global batch G, sequence s; 1F1B, one
 * chunk, no recompute, classic attention, tp-dp-pp rank order, 16-bit
 * gradients (grad_fp32 -1), the rest 0 (bf16, no sequence parallelism, no
 * ZeRO, no overlap). */
struct oc_layout oc_test_layout(int64_t t, int64_t p, int64_t d, int64_t b,
                                int64_t G, int64_t s);

#endif
