/* test_outfile.c: core/outfile.h, an output file written whole or not at
 * all: nothing under the final name before the commit, the temporary
 * hidden beside it, an earlier file kept intact by a failed write, every
 * failure naming the final file and the reason, a rewind, devices written
 * in place; and csv_table.h's tables on top of it.
 *
 * A full disk is a file size limit here (setrlimit RLIMIT_FSIZE with
 * SIGXFSZ ignored, so that write(2) fails with EFBIG): any user may lower
 * it and raise it back. tests/fault_disk.sh fills real disks.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csv_table.h"
#include "outfile.h"
#include "test_util.h"

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* Files in the scratch folder whose name ends with ".tmp". */
static int temporaries(void)
{
    DIR *d = opendir(oc_test_dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t k = strlen(e->d_name);
        n += k > 4 && strcmp(e->d_name + k - 4, ".tmp") == 0;
    }
    if (d)
        closedir(d);
    return n;
}

/* Files may grow to `bytes` (RLIM_INFINITY: back to what it was). */
static struct rlimit saved;
static void limit_files(rlim_t bytes)
{
    if (bytes == RLIM_INFINITY) {
        CU_ASSERT_EQUAL(setrlimit(RLIMIT_FSIZE, &saved), 0);
        signal(SIGXFSZ, SIG_DFL);
        return;
    }
    CU_ASSERT_EQUAL_FATAL(getrlimit(RLIMIT_FSIZE, &saved), 0);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit r = {bytes, saved.rlim_max};
    CU_ASSERT_EQUAL_FATAL(setrlimit(RLIMIT_FSIZE, &r), 0);
}

static void test_commit(void)
{
    struct oc_status st = {{0}};
    char path[512];
    snprintf(path, sizeof path, "%s/a.csv", oc_test_dir);
    struct oc_outfile o;
    CU_ASSERT_EQUAL_FATAL(oc_outfile_open(&o, path, &st), 0);
    /* The temporary: hidden, beside the final name, named after it. */
    char want[600];
    snprintf(want, sizeof want, "%s/.a.csv.%ld.", oc_test_dir, (long)getpid());
    CU_ASSERT_EQUAL(strncmp(o.tmp, want, strlen(want)), 0);
    CU_ASSERT(exists(o.tmp));
    fprintf(o.f, "x,y\n1,2\n");
    CU_ASSERT_EQUAL(oc_outfile_check(&o, &st), 0);
    CU_ASSERT(!exists(path)); /* nothing under the name before the commit */
    char tmp[sizeof o.tmp];
    snprintf(tmp, sizeof tmp, "%s", o.tmp);
    CU_ASSERT_EQUAL(oc_outfile_commit(&o, &st), 0);
    CU_ASSERT(!exists(tmp));
    char *text = oc_test_read_file(path);
    CU_ASSERT_STRING_EQUAL(text, "x,y\n1,2\n");
    free(text);

    /* Two files open for one name (two runs into one folder) do not share
     * a temporary; the last commit wins, whole. */
    struct oc_outfile a, b;
    CU_ASSERT_EQUAL_FATAL(oc_outfile_open(&a, path, &st), 0);
    CU_ASSERT_EQUAL_FATAL(oc_outfile_open(&b, path, &st), 0);
    CU_ASSERT_STRING_NOT_EQUAL(a.tmp, b.tmp);
    fputs("from a\n", a.f);
    fputs("from b\n", b.f);
    CU_ASSERT_EQUAL(oc_outfile_commit(&a, &st), 0);
    CU_ASSERT_EQUAL(oc_outfile_commit(&b, &st), 0);
    text = oc_test_read_file(path);
    CU_ASSERT_STRING_EQUAL(text, "from b\n");
    free(text);

    /* Abandoned: the earlier file stays as it was, no temporary. */
    CU_ASSERT_EQUAL_FATAL(oc_outfile_open(&o, path, &st), 0);
    fputs("half a ro", o.f);
    oc_outfile_abandon(&o);
    text = oc_test_read_file(path);
    CU_ASSERT_STRING_EQUAL(text, "from b\n");
    free(text);
    CU_ASSERT_EQUAL(temporaries(), 0);
}

/* The disk fills: the commit fails naming the final file and the reason;
 * the earlier file is intact and no temporary is left. */
static void test_full(void)
{
    struct oc_status st = {{0}};
    char path[512];
    snprintf(path, sizeof path, "%s/full.csv", oc_test_dir);
    oc_test_write_file(path, "the earlier run's table\n");
    char row[100];
    memset(row, 'x', sizeof row - 1);
    row[sizeof row - 1] = '\0';

    limit_files(4096);
    struct oc_outfile o;
    CU_ASSERT_EQUAL_FATAL(oc_outfile_open(&o, path, &st), 0);
    for (int i = 0; i < 200; i++) /* 20 kB */
        fprintf(o.f, "%d,%s\n", i, row);
    oc_test_expect_fail(oc_outfile_commit(&o, &st), st.msg,
                        (const char *const[]){path, "cannot write", strerror(EFBIG), NULL});
    /* The same through oc_outfile_write and a streaming check. */
    CU_ASSERT_EQUAL_FATAL(oc_outfile_open(&o, path, &st), 0);
    static char big[8192];
    CU_ASSERT_EQUAL(oc_outfile_write(&o, big, 2000, &st), 0);
    oc_test_expect_fail(oc_outfile_write(&o, big, sizeof big, &st), st.msg,
                        (const char *const[]){path, strerror(EFBIG), NULL});
    oc_test_expect_fail(oc_outfile_check(&o, &st), st.msg,
                        (const char *const[]){path, strerror(EFBIG), NULL});
    CU_ASSERT_EQUAL(oc_outfile_commit(&o, &st), -1);
    /* A table: the row that does not fit is seen at its end, the close
     * names the file. */
    struct oc_csv c;
    static const char *const cols[] = {"i", "row"};
    CU_ASSERT_EQUAL_FATAL(oc_csv_open(&c, path, cols, 2, &st), 0);
    int first_bad = -1;
    for (int i = 0; i < 200; i++) {
        oc_csv_field_i64(&c, i);
        oc_csv_field_str(&c, row);
        if (oc_csv_end_row(&c) != 0 && first_bad < 0)
            first_bad = i;
    }
    /* Each row is flushed at its end: the header (6 bytes), rows 0-9 (102
     * bytes each) and 10-38 (103) make 4013 bytes; row 39 would end at
     * 4116, past the 4096 allowed. */
    CU_ASSERT_EQUAL(first_bad, 39);
    oc_test_expect_fail(oc_csv_close(&c, &st), st.msg,
                        (const char *const[]){path, strerror(EFBIG), NULL});
    limit_files(RLIM_INFINITY);

    char *text = oc_test_read_file(path);
    CU_ASSERT_STRING_EQUAL(text, "the earlier run's table\n");
    free(text);
    CU_ASSERT_EQUAL(temporaries(), 0);
}

/* A table streamed as rows finish, rewritten in another order: the same
 * temporary, only the second version under the name. */
static void test_rewind(void)
{
    struct oc_status st = {{0}};
    char path[512];
    snprintf(path, sizeof path, "%s/ranked.csv", oc_test_dir);
    struct oc_csv c;
    static const char *const cols[] = {"layout", "tokens_per_s"};
    CU_ASSERT_EQUAL_FATAL(oc_csv_open(&c, path, cols, 2, &st), 0);
    const char *names[] = {"b", "a", "c"};
    const int tps[] = {2, 3, 1};
    for (int i = 0; i < 3; i++) {
        oc_csv_field_str(&c, names[i]);
        oc_csv_field_i64(&c, tps[i]);
        CU_ASSERT_EQUAL(oc_csv_end_row(&c), 0);
    }
    CU_ASSERT(!exists(path));
    CU_ASSERT_EQUAL_FATAL(oc_csv_restart(&c, &st), 0);
    const int order[] = {1, 0, 2};
    for (int i = 0; i < 3; i++) {
        oc_csv_field_str(&c, names[order[i]]);
        oc_csv_field_i64(&c, tps[order[i]]);
        oc_csv_end_row(&c);
    }
    CU_ASSERT_EQUAL(oc_csv_close(&c, &st), 0);
    char *text = oc_test_read_file(path);
    CU_ASSERT_STRING_EQUAL(text, "layout,tokens_per_s\na,3\nb,2\nc,1\n");
    free(text);
    CU_ASSERT_EQUAL(temporaries(), 0);
}

/* What cannot be replaced by a rename, and names that are not files. */
static void test_special(void)
{
    struct oc_status st = {{0}};
    struct oc_outfile o;
    /* A device is written in place (a rename would replace /dev/null). */
    CU_ASSERT_EQUAL_FATAL(oc_outfile_open(&o, "/dev/null", &st), 0);
    CU_ASSERT_EQUAL(o.direct, 1);
    fputs("gone\n", o.f);
    CU_ASSERT_EQUAL(oc_outfile_commit(&o, &st), 0);
    struct stat sb;
    CU_ASSERT(stat("/dev/null", &sb) == 0 && S_ISCHR(sb.st_mode));
    /* /dev/full: in place too, and its error is reported. */
    if (exists("/dev/full")) {
        CU_ASSERT_EQUAL_FATAL(oc_outfile_open(&o, "/dev/full", &st), 0);
        fputs("x\n", o.f);
        oc_test_expect_fail(oc_outfile_commit(&o, &st), st.msg,
                            (const char *const[]){"/dev/full: cannot write",
                                                  strerror(ENOSPC), NULL});
    }
    /* A folder, a missing folder. */
    oc_test_expect_fail(oc_outfile_open(&o, oc_test_dir, &st), st.msg,
                        (const char *const[]){oc_test_dir, "it is a folder", NULL});
    char path[600];
    snprintf(path, sizeof path, "%s/no/such/x.csv", oc_test_dir);
    oc_test_expect_fail(oc_outfile_open(&o, path, &st), st.msg,
                        (const char *const[]){path, strerror(ENOENT), NULL});
    /* A path longer than a message keeps the reason: its tail is shown. */
    char lng[3000];
    int k = snprintf(lng, sizeof lng, "%s/", oc_test_dir);
    for (; k < 2900; k += 10)
        memcpy(lng + k, "deep/path/", 10);
    snprintf(lng + k, sizeof lng - (size_t)k, "end.csv");
    oc_test_expect_fail(oc_outfile_open(&o, lng, &st), st.msg,
                        (const char *const[]){"...", "path/end.csv: cannot write",
                                              strerror(ENOENT), NULL});
}

/* A file another program wrote (gnuplot's image), put under its name. */
static void test_publish(void)
{
    struct oc_status st = {{0}};
    char tmp[512], path[512];
    snprintf(tmp, sizeof tmp, "%s/.img.x.tmp", oc_test_dir);
    snprintf(path, sizeof path, "%s/img.png", oc_test_dir);
    oc_test_write_file(tmp, "PNG");
    CU_ASSERT_EQUAL(oc_outfile_publish(tmp, path, &st), 0);
    CU_ASSERT(!exists(tmp));
    char *text = oc_test_read_file(path);
    CU_ASSERT_STRING_EQUAL(text, "PNG");
    free(text);
    oc_test_expect_fail(oc_outfile_publish(tmp, path, &st), st.msg,
                        (const char *const[]){path, strerror(ENOENT), NULL});
    CU_ASSERT_EQUAL(oc_outfile_write_all(path, "whole", 5, &st), 0);
    text = oc_test_read_file(path);
    CU_ASSERT_STRING_EQUAL(text, "whole");
    free(text);
}

static int suite_init(void) { return oc_test_dir_make("outfile"); }

static CU_TestInfo tests[] = {
    {"commit, two writers, abandon", test_commit},
    {"a full disk", test_full},
    {"a table rewritten in another order", test_rewind},
    {"devices, folders, long paths", test_special},
    {"publish and write_all", test_publish},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"outfile", suite_init, oc_test_dir_remove, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
