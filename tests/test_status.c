/* test_status.c: oc_quote and oc_fail (core/status.h), the one place that
 * makes user text safe in a message: escapes worked out by hand, cuts
 * between characters that keep the start and the end, and oc_fail keeping
 * any message one line of valid UTF-8.
 */
#include <string.h>

#include "status.h"
#include "test_util.h"

static void expect_quote(const char *text, size_t n, const char *want)
{
    char buf[256];
    CU_ASSERT_FATAL(n <= sizeof buf);
    oc_quote(buf, n, text);
    if (strcmp(buf, want) != 0)
        fprintf(stderr, "\noc_quote(%zu): got '%s', want '%s'\n", n, buf, want);
    CU_ASSERT_STRING_EQUAL(buf, want);
    CU_ASSERT(strlen(buf) < n);
    CU_ASSERT(oc_test_msg_is_clean(buf));
}

static void test_escapes(void)
{
    expect_quote("tp8-pp8-dp1", 64, "tp8-pp8-dp1");
    expect_quote("", 64, "");
    expect_quote(NULL, 64, "(null)");
    expect_quote("a\nb\tc\rd", 64, "a\\nb\\tc\\rd");
    /* ESC [ 3 1 m (red), DEL, and a backslash */
    expect_quote("\x1b[31mred\x7f\\", 64, "\\x1b[31mred\\x7f\\\\");
    /* é (c3 a9) and € (e2 82 ac) and 😀 (f0 9f 98 80) pass as they are */
    expect_quote("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 64,
                 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    /* not UTF-8: a stray continuation byte, a cut sequence, an overlong
     * '/' (c0 af), a surrogate (ed a0 80), ff */
    expect_quote("a\x80z", 64, "a\\x80z");
    expect_quote("\xe2\x82", 64, "\\xe2\\x82");
    expect_quote("\xc0\xaf", 64, "\\xc0\\xaf");
    expect_quote("\xed\xa0\x80", 64, "\\xed\\xa0\\x80");
    expect_quote("\xff", 64, "\\xff");
    /* CSI as a C1 control (c2 9b), the line separator, RIGHT-TO-LEFT
     * OVERRIDE (e2 80 ae) */
    expect_quote("\xc2\x9b" "2J", 64, "\\u009b2J");
    expect_quote("x\xe2\x80\xa8y\xe2\x80\xaez", 64, "x\\u2028y\\u202ez");
}

/* Too long: the start and the end around "...", n - 1 bytes at most, never
 * inside a character or an escape. */
static void test_shortened(void)
{
    /* 26 letters into 16 bytes: 15 shown = 6 + "..." + 6 */
    expect_quote("abcdefghijklmnopqrstuvwxyz", 16, "abcdef...uvwxyz");
    /* exactly 15 fit whole */
    expect_quote("abcdefghijklmno", 16, "abcdefghijklmno");
    /* "é" is 2 bytes: 6 bytes of start hold 3 of them, the end takes 3 */
    expect_quote("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 16,
                 "\xc3\xa9\xc3\xa9\xc3\xa9...\xc3\xa9\xc3\xa9\xc3\xa9");
    /* "€" is 3 bytes: two fit the 6 of the start, the end the last two */
    expect_quote("\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac", 16,
                 "\xe2\x82\xac\xe2\x82\xac...\xe2\x82\xac\xe2\x82\xac");
    /* an escape (\n, 2 bytes) is not cut: "abcde" + "\n" would need 7 of
     * the 6 bytes of the start; the end then has 7 */
    expect_quote("abcde\nfghijklmnopqrstuvwxyz", 16, "abcde...tuvwxyz");
    /* a 160-byte name of "é" into OC_QUOTE_MAX: 62 + 3 + 62 bytes */
    char name[161];
    for (int i = 0; i < 80; i++)
        memcpy(name + 2 * i, "\xc3\xa9", 2);
    name[160] = '\0';
    char buf[OC_QUOTE_MAX];
    oc_quote(buf, sizeof buf, name);
    CU_ASSERT_EQUAL(strlen(buf), 62 + 3 + 62);
    CU_ASSERT(oc_test_msg_is_clean(buf));
    /* a long path keeps its file name */
    char path[600];
    memset(path, 'd', sizeof path);
    memcpy(path, "/tmp/", 5);
    strcpy(path + 580, "/sweep.csv");
    oc_quote(buf, sizeof buf, path);
    CU_ASSERT(strlen(buf) <= OC_QUOTE_MAX - 1);
    CU_ASSERT_NSTRING_EQUAL(buf, "/tmp/ddd", 8);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "ddd...ddd"));
    CU_ASSERT_STRING_EQUAL(buf + strlen(buf) - 10, "/sweep.csv");
}

/* oc_fail stores one line of valid UTF-8 whatever it is given, keeps the
 * backslashes of a quoted text, and may take st->msg as an argument. */
static void test_fail_is_safe(void)
{
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_fail(&st, "bad '%s'", "a\nb\x1b[2J\xff"), -1);
    CU_ASSERT_STRING_EQUAL(st.msg, "bad 'a\\nb\\x1b[2J\\xff'");
    char q[OC_QUOTE_MAX];
    oc_fail(&st, "bad '%s'", oc_quote(q, sizeof q, "a\nb"));
    CU_ASSERT_STRING_EQUAL(st.msg, "bad 'a\\nb'");
    oc_fail(&st, "%s (shard %d)", st.msg, 3);
    CU_ASSERT_STRING_EQUAL(st.msg, "bad 'a\\nb' (shard 3)");
    /* A reason after 4000 bytes of an unquoted path: the message keeps
     * its start and its end (the reason), cut between characters. */
    char big[4001];
    for (int i = 0; i < 2000; i++)
        memcpy(big + 2 * i, "\xc3\xa9", 2);
    big[4000] = '\0';
    oc_fail(&st, "/x%s: cannot write: No space left on device", big);
    CU_ASSERT(strlen(st.msg) <= OC_MSG_MAX - 1);
    CU_ASSERT(oc_test_msg_is_clean(st.msg));
    CU_ASSERT_NSTRING_EQUAL(st.msg, "/x\xc3\xa9", 4);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "..."));
    const char *end = ": cannot write: No space left on device";
    CU_ASSERT_STRING_EQUAL(st.msg + strlen(st.msg) - strlen(end), end);
    CU_ASSERT_EQUAL(oc_fail(NULL, "x"), -1);
}

static CU_TestInfo status_tests[] = {
    {"oc_quote escapes", test_escapes},
    {"oc_quote shortens between characters", test_shortened},
    {"oc_fail keeps one clean line", test_fail_is_safe},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"status", NULL, NULL, NULL, NULL, status_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
