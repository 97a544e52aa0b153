/* test_util.h: the one runner every CUnit suite shares.
 *
 *   static CU_TestInfo tests[] = { {"bubble", test_bubble}, CU_TEST_INFO_NULL };
 *   static CU_SuiteInfo suites[] = { {"closed_form", NULL, NULL, NULL, NULL, tests},
 *                                    CU_SUITE_INFO_NULL };
 *   int main(void) { return oc_test_run(suites); }
 *
 * Exits non-zero when any assertion failed (CU_basic_run_tests does not).
 */
#ifndef OC_TEST_UTIL_H
#define OC_TEST_UTIL_H

#include <CUnit/Basic.h>

int oc_test_run(CU_SuiteInfo *suites);

/* |a - b| <= rel * |b| (or <= rel when b == 0). */
#define OC_ASSERT_REL(a, b, rel)                                               \
    CU_ASSERT_DOUBLE_EQUAL((a), (b), ((b) != 0 ? fabs((double)(b)) : 1.0) * (rel))

#endif
