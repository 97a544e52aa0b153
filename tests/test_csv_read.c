/* test_csv_read.c: the CSV reader under `ocsim compare`
 * (reports/csv_read.h): quotes, comments, line numbers, typed cells and
 * the one-line errors it gives, on text written here and on the
 * hand-written measurement in tests/data/compare/meas.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv_read.h"
#include "test_util.h"

#define DATA OC_TEST_DATA "/compare"

static void test_csv_quotes_comments(void)
{
    /* Line 1 a comment, 2 the header, 3 a row with a quoted comma and
     * doubled quotes, 4 a comment, 5 blank, 6-8 one row whose quoted
     * field spans three lines (its "#" line is data, not a comment) and
     * ends in CRLF, 9 a row with an empty field and no final newline. */
    static const char text[] = "# written by hand\n"
                               "a,b,c\n"
                               "1,\"x, y\",\"say \"\"hi\"\"\"\n"
                               "# between rows\n"
                               "\n"
                               "2,\"multi\n"
                               "# not a comment\n"
                               "line\",3\r\n"
                               "3,,z";
    struct oc_csv_table t;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_csv_read_mem("t.csv", text, strlen(text), &t, &st), 0);
    CU_ASSERT_EQUAL(t.ncols, 3);
    CU_ASSERT_EQUAL_FATAL(t.nrows, 3);
    CU_ASSERT_STRING_EQUAL(oc_csv_table_header(&t, 2), "c");
    CU_ASSERT_STRING_EQUAL(oc_csv_table_cell(&t, 0, 1), "x, y");
    CU_ASSERT_STRING_EQUAL(oc_csv_table_cell(&t, 0, 2), "say \"hi\"");
    CU_ASSERT_STRING_EQUAL(oc_csv_table_cell(&t, 1, 1), "multi\n# not a comment\nline");
    CU_ASSERT_STRING_EQUAL(oc_csv_table_cell(&t, 1, 2), "3");
    CU_ASSERT_STRING_EQUAL(oc_csv_table_cell(&t, 2, 1), "");
    CU_ASSERT_STRING_EQUAL(oc_csv_table_cell(&t, 2, 2), "z");
    CU_ASSERT_EQUAL(t.line[0], 2);
    CU_ASSERT_EQUAL(oc_csv_table_line(&t, 0), 3);
    CU_ASSERT_EQUAL(oc_csv_table_line(&t, 1), 6);
    CU_ASSERT_EQUAL(oc_csv_table_line(&t, 2), 9);
    CU_ASSERT_EQUAL(oc_csv_table_col(&t, "b"), 1);
    CU_ASSERT_EQUAL(oc_csv_table_col(&t, "B"), -1);
    int64_t i = 0;
    double d = 0;
    CU_ASSERT_EQUAL(oc_csv_table_i64(&t, 1, 2, &i, &st), 0);
    CU_ASSERT_EQUAL(i, 3);
    CU_ASSERT_EQUAL(oc_csv_table_f64(&t, 1, 2, &d, &st), 0);
    CU_ASSERT_EQUAL(d, 3.0);
    oc_csv_table_free(&t);
    CU_ASSERT_PTR_NULL(t.text);

    /* A file: the fixture's two '#' lines are skipped and its quoted
     * reason keeps its comma and quotes. */
    CU_ASSERT_EQUAL_FATAL(oc_csv_read(DATA "/meas/measured.csv", &t, &st), 0);
    CU_ASSERT_EQUAL(t.nrows, 1);
    CU_ASSERT_EQUAL(t.ncols, 22);
    CU_ASSERT_EQUAL(oc_csv_table_line(&t, 0), 4);
    CU_ASSERT_STRING_EQUAL(oc_csv_table_cell(&t, 0, oc_csv_table_col(&t, "reason")),
                           "measured, mean of \"3\" steps");
    oc_csv_table_free(&t);
}

/* `text` must fail to read with a message containing `want`. */
static void read_fails(const char *text, const char *want)
{
    struct oc_csv_table t;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_csv_read_mem("x.csv", text, strlen(text), &t, &st), -1);
    oc_test_msg_has(st.msg, want);
    CU_ASSERT_EQUAL(t.nrows, 0);
    oc_csv_table_free(&t);
}

static void test_csv_errors(void)
{
    read_fails("a,b\n1,2\n1,2,3\n", "x.csv:3: 3 fields, the header has 2");
    read_fails("a,b\n# c\n1\n", "x.csv:3: 1 field, the header has 2");
    read_fails("", "x.csv: no header line");
    read_fails("# only a comment\n\n", "x.csv: no header line");
    read_fails("a\n\"abc\n", "x.csv:2: malformed CSV (a quoted field is not closed)");
    read_fails("a\nab\"c\n", "x.csv:2: malformed CSV");

    struct oc_csv_table t;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_csv_read("/nonexistent/x.csv", &t, &st), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(st.msg, "/nonexistent/x.csv: cannot read"));

    static const char text[] = "name,v,n\nx,abc,1.5\ny,,7\nz,1e999,99999999999999999999\n";
    CU_ASSERT_EQUAL_FATAL(oc_csv_read_mem("x.csv", text, strlen(text), &t, &st), 0);
    int col;
    CU_ASSERT_EQUAL(oc_csv_table_need(&t, "nope", &col, &st), -1);
    CU_ASSERT_STRING_EQUAL(st.msg, "x.csv: no column 'nope'");
    double d;
    int64_t i;
    CU_ASSERT_EQUAL(oc_csv_table_f64(&t, 0, 1, &d, &st), -1);
    CU_ASSERT_STRING_EQUAL(st.msg, "x.csv:2: column 'v': 'abc' is not a number");
    CU_ASSERT_EQUAL(oc_csv_table_f64(&t, 1, 1, &d, &st), -1);
    CU_ASSERT_STRING_EQUAL(st.msg, "x.csv:3: column 'v' is empty, a number is needed");
    CU_ASSERT_EQUAL(oc_csv_table_f64(&t, 2, 1, &d, &st), -1); /* overflows */
    CU_ASSERT_EQUAL(oc_csv_table_i64(&t, 0, 2, &i, &st), -1);
    CU_ASSERT_STRING_EQUAL(st.msg, "x.csv:2: column 'n': '1.5' is not an integer");
    CU_ASSERT_EQUAL(oc_csv_table_i64(&t, 2, 2, &i, &st), -1); /* > INT64_MAX */
    CU_ASSERT_EQUAL(oc_csv_table_f64(&t, 0, 2, &d, &st), 0);
    CU_ASSERT_EQUAL(d, 1.5);
    oc_csv_table_free(&t);
}


static CU_TestInfo csv_tests[] = {
    {"quotes, comments, line numbers", test_csv_quotes_comments},
    {"errors", test_csv_errors},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"csv_read", NULL, NULL, NULL, NULL, csv_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
