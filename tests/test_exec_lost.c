/* test_exec_lost.c: the board of exec/lost.h without MPI or signals: the
 * end claimed once (the first line is printed and marks the stream, the
 * second stays silent and marks nothing), the mark's words with the steps
 * completed, and a stopped process named with its op (a forked child
 * stopped with SIGSTOP). The signal handlers themselves run under mpirun
 * in tests/exec_faults.sh.
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lost.h"
#include "test_util.h"

static int suite_init(void) { return oc_test_dir_make("lost"); }

static void test_claim_and_mark(void)
{
    void *mem = calloc(1, oc_lost_board_bytes(3));
    oc_lost_board_attach(mem, 3, 1);
    struct oc_lost_slot *s0 = oc_lost_slot_take(0, 0);
    struct oc_lost_slot *s1 = oc_lost_slot_take(1, 5);
    char path[512];
    snprintf(path, sizeof path, "%s/loss.csv.partial", oc_test_dir);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    oc_lost_stream(fileno(f), 5);
    fputs("step,loss\n1,6.25\n2,6.21\n", f);
    fflush(f);
    oc_lost_stream_row();
    oc_lost_stream_row();
    /* rank 5 ends first: it prints, and its line marks the stream */
    CU_ASSERT_EQUAL(oc_lost_end(s1, "rank 5 timed out after 3 s in op 7 (recv) of step 3"), 1);
    CU_ASSERT_EQUAL(s1->state, OC_LOST_ENDED);
    CU_ASSERT_EQUAL(oc_lost_end(s0, "rank 0 timed out after 3 s in op 9 (send) of step 3"), 0);
    oc_lost_stream_done();
    fclose(f);
    char *text = oc_test_read_file(path);
    CU_ASSERT_STRING_EQUAL(text, "step,loss\n1,6.25\n2,6.21\n"
                                 "# partial: 2 of 5 steps completed; rank 5 timed out after "
                                 "3 s in op 7 (recv) of step 3\n");
    free(text);
    oc_lost_done(s0);
    oc_lost_board_detach();
    free(mem);
}

/* A non-claimant holding the stream marks it with the claimant's line. */
static void test_mark_is_the_claimants(void)
{
    void *mem = calloc(1, oc_lost_board_bytes(2));
    oc_lost_board_attach(mem, 2, 1);
    struct oc_lost_slot *s0 = oc_lost_slot_take(0, 0);
    struct oc_lost_slot *s1 = oc_lost_slot_take(1, 1);
    CU_ASSERT_EQUAL(oc_lost_end(s1, "rank 1 failed op 4 (fwd attn mb 0 layer 0): x"), 1);
    char path[512];
    snprintf(path, sizeof path, "%s/second.partial", oc_test_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CU_ASSERT_FATAL(fd >= 0);
    oc_lost_stream(fd, 3);
    CU_ASSERT_EQUAL(oc_lost_end(s0, "rank 0 timed out after 1 s in the end of step 1"), 0);
    oc_lost_stream_done();
    close(fd);
    char *text = oc_test_read_file(path);
    CU_ASSERT_STRING_EQUAL(text, "# partial: 0 of 3 steps completed; rank 1 failed op 4 "
                                 "(fwd attn mb 0 layer 0): x\n");
    free(text);
    oc_lost_board_detach();
    free(mem);
}

static void test_stopped(void)
{
    void *mem = calloc(1, oc_lost_board_bytes(2));
    oc_lost_board_attach(mem, 2, 1);
    (void)oc_lost_slot_take(0, 0);
    struct oc_lost_slot *s1 = oc_lost_slot_take(1, 3);
    char buf[512];
    oc_lost_stopped(buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, ""); /* slot 1 is this process: not stopped */
    const pid_t child = fork();
    CU_ASSERT_FATAL(child >= 0);
    if (child == 0) {
        raise(SIGSTOP);
        _exit(0);
    }
    int status = 0;
    CU_ASSERT_EQUAL_FATAL(waitpid(child, &status, WUNTRACED), child);
    CU_ASSERT(WIFSTOPPED(status));
    s1->pid = child;
    oc_lost_post(s1, "op 7 (recv act mb 0 from rank 1) of step 2");
    oc_lost_stopped(buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "; rank 3 is stopped (SIGSTOP) in op 7 (recv act mb 0 from "
                                "rank 1) of step 2");
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    oc_lost_board_detach();
    free(mem);
}

static CU_TestInfo tests[] = {
    {"the end claimed once, the stream marked", test_claim_and_mark},
    {"the mark is the claimant's", test_mark_is_the_claimants},
    {"a stopped rank named", test_stopped},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"exec_lost", suite_init, oc_test_dir_remove, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
