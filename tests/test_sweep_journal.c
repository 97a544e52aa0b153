/* test_sweep_journal.c: the journal `ocsim sweep --resume` continues from
 * (reports/sweep_journal.h): records come back bit for bit, another
 * sweep's journal is refused naming what differs, a cut or damaged tail is
 * dropped and said, and the identity hashes see the fields they cover.
 * Files go to the suite's scratch folder.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sweep_journal.h"
#include "test_util.h"

static int init(void) { return oc_test_dir_make("journal"); }

static void id_of(struct oc_sweep_id *id, long long cards, const char *knobs)
{
    memset(id, 0, sizeof *id);
    oc_sweep_id_add(id, "cards", "%lld", cards);
    oc_sweep_id_add(id, "knobs", "%s", knobs);
}

/* A metrics record with n stages whose every figure is distinct. */
static void metrics_of(struct oc_metrics *mt, int64_t n, double base)
{
    memset(mt, 0, sizeof *mt);
    oc_layout_default(&mt->layout);
    mt->layout.pp = n;
    mt->step_time_s = base;
    mt->tokens_per_s = base * 1000 + 0.1; /* not a %.9g round trip */
    mt->fits = 1;
    mt->nstages = n;
    for (int64_t s = 0; s < n; s++) {
        mt->stage[s].compute_s = base + (double)s / 3;
        mt->stage[s].bubble_s = base / 7 + (double)s;
        mt->stage[s].peak_mem_bytes = 1e9 * (double)(s + 1);
    }
}

struct got {
    int64_t n;
    int64_t index[4];
    struct oc_metrics mt[4];
};

static void on_record(void *ctx, int64_t index, const struct oc_metrics *mt)
{
    struct got *g = ctx;
    if (g->n < 4) {
        g->index[g->n] = index;
        g->mt[g->n] = *mt;
    }
    g->n++;
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static void write_two(const char *path, struct oc_metrics *a, struct oc_metrics *b)
{
    struct oc_sweep_id id;
    id_of(&id, 8, "zero1=1 sp=1");
    struct oc_sweep_journal j;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_sweep_journal_create(&j, path, &id, &st), 0);
    metrics_of(a, 3, 1.25);
    metrics_of(b, 1, 2.5);
    CU_ASSERT_EQUAL(oc_sweep_journal_append(&j, 5, a, &st), 0);
    CU_ASSERT_EQUAL(oc_sweep_journal_append(&j, 2, b, &st), 0);
    CU_ASSERT_EQUAL(oc_sweep_journal_append(&j, 5, b, &st), 0); /* a duplicate: ignored */
    CU_ASSERT_EQUAL(oc_sweep_journal_close(&j, &st), 0);
}

/* What each case starts from: the two records of write_two in the
 * suite's folder under `name`, the identity they were written with. */
struct fixture {
    char path[512];
    struct oc_metrics *a, *b;
    struct oc_sweep_id id;
    struct got *g;
};

static void fixture_make(struct fixture *x, const char *name)
{
    snprintf(x->path, sizeof x->path, "%s/%s", oc_test_dir, name);
    x->a = calloc(2, sizeof *x->a);
    x->b = x->a + 1;
    write_two(x->path, x->a, x->b);
    id_of(&x->id, 8, "zero1=1 sp=1");
    x->g = calloc(1, sizeof *x->g);
}

static void fixture_free(struct fixture *x)
{
    free(x->g);
    free(x->a);
}

static void test_round_trip(void)
{
    struct fixture x;
    fixture_make(&x, "rt.journal");
    const char *path = x.path;
    struct oc_metrics *a = x.a, *b = x.b;
    struct oc_sweep_id id = x.id;
    struct got *g = x.g;
    struct oc_sweep_journal j;
    struct oc_status st = {{0}};
    int64_t dropped = -1;
    CU_ASSERT_EQUAL(oc_sweep_journal_resume(&j, path, &id, 6, on_record, g, &dropped, &st), 2);
    CU_ASSERT_EQUAL(dropped, 0);
    CU_ASSERT_EQUAL(g->n, 2);
    CU_ASSERT_EQUAL(g->index[0], 5);
    CU_ASSERT_EQUAL(g->index[1], 2);
    /* Bit for bit, stage rows past nstages zero as in a fresh struct. */
    CU_ASSERT(memcmp(&g->mt[0], a, sizeof *a) == 0);
    CU_ASSERT(memcmp(&g->mt[1], b, sizeof *b) == 0);
    /* The resumed journal appends after what it kept. */
    CU_ASSERT_EQUAL(oc_sweep_journal_append(&j, 0, b, &st), 0);
    CU_ASSERT_EQUAL(oc_sweep_journal_close(&j, &st), 0);
    memset(g, 0, sizeof *g);
    CU_ASSERT_EQUAL(oc_sweep_journal_resume(&j, path, &id, 6, on_record, g, &dropped, &st), 3);
    CU_ASSERT_EQUAL(g->index[2], 0);
    oc_sweep_journal_close(&j, &st);
    /* An index past the candidates is damage: reading stops before it. */
    memset(g, 0, sizeof *g);
    CU_ASSERT_EQUAL(oc_sweep_journal_resume(&j, path, &id, 5, on_record, g, &dropped, &st), 0);
    CU_ASSERT(dropped > 0);
    oc_sweep_journal_close(&j, &st);
    fixture_free(&x);
}

static void test_refused(void)
{
    struct fixture x;
    fixture_make(&x, "other.journal");
    const char *path = x.path;
    struct got *g = x.g;
    struct oc_sweep_journal j;
    struct oc_status st = {{0}};
    int64_t dropped;
    struct oc_sweep_id id;
    id_of(&id, 16, "zero1=1 sp=1");
    CU_ASSERT_EQUAL(oc_sweep_journal_resume(&j, path, &id, 6, on_record, g, &dropped, &st), -1);
    oc_test_msg_has(st.msg, "other.journal belongs to another sweep: its cards differs ('8' "
                            "there, '16' here)");
    id_of(&id, 8, "zero1=1 sp=0");
    CU_ASSERT_EQUAL(oc_sweep_journal_resume(&j, path, &id, 6, on_record, g, &dropped, &st), -1);
    oc_test_msg_has(st.msg, "its knobs differs ('sp=1' there, 'sp=0' here)");
    id_of(&id, 8, "zero1=1 sp=1");
    oc_sweep_id_add(&id, "extra", "x");
    CU_ASSERT_EQUAL(oc_sweep_journal_resume(&j, path, &id, 6, on_record, g, &dropped, &st), -1);
    oc_test_msg_has(st.msg, "is another kind of sweep (its line 'end' where this one has 'extra')");
    CU_ASSERT_EQUAL(g->n, 0);

    char bad[600];
    snprintf(bad, sizeof bad, "%s/not.journal", oc_test_dir);
    oc_test_write_file(bad, "tp,pp,dp\n1,2,3\n");
    CU_ASSERT_EQUAL(oc_sweep_journal_resume(&j, bad, &id, 6, on_record, g, &dropped, &st), -1);
    oc_test_msg_has(st.msg, "not.journal is not a sweep journal");
    snprintf(bad, sizeof bad, "%s/none.journal", oc_test_dir);
    CU_ASSERT_EQUAL(oc_sweep_journal_resume(&j, bad, &id, 6, on_record, g, &dropped, &st), -1);
    oc_test_msg_has(st.msg, "none.journal: no such file: no sweep to resume there");
    /* Control characters in a value stay out of the one-line header. */
    id_of(&id, 8, "a\nb\tc");
    CU_ASSERT_STRING_EQUAL(id.value[1], "a?b?c");
    fixture_free(&x);
}

/* A record cut short (SIGKILL while writing, a full disk) or damaged ends
 * the journal there: the whole records before it come back, the rest is
 * cut from the file and counted. */
static void test_damaged_tail(void)
{
    struct fixture x;
    fixture_make(&x, "cut.journal");
    const char *path = x.path;
    const struct oc_metrics *a = x.a;
    struct oc_sweep_id id = x.id;
    struct got *g = x.g;
    const long whole = file_size(path);
    struct oc_sweep_journal j;
    struct oc_status st = {{0}};
    int64_t dropped;
    /* The duplicate (index 5 again, one stage) loses 10 bytes: it is the
     * part dropped, the two records before it stay. */
    CU_ASSERT_EQUAL_FATAL(truncate(path, whole - 10), 0);
    CU_ASSERT_EQUAL(oc_sweep_journal_resume(&j, path, &id, 6, on_record, g, &dropped, &st), 2);
    const long third = (whole - 10) - file_size(path);
    CU_ASSERT_EQUAL(dropped, third);
    CU_ASSERT(third > 0 && third < whole / 2);
    oc_sweep_journal_close(&j, &st);

    /* A flipped byte inside the second record: only the first comes back. */
    FILE *f = fopen(path, "r+b");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fseek(f, -20, SEEK_END);
    int c = fgetc(f);
    fseek(f, -20, SEEK_END);
    fputc(c ^ 0x40, f);
    fclose(f);
    memset(g, 0, sizeof *g);
    CU_ASSERT_EQUAL(oc_sweep_journal_resume(&j, path, &id, 6, on_record, g, &dropped, &st), 1);
    CU_ASSERT_EQUAL(g->index[0], 5);
    CU_ASSERT(memcmp(&g->mt[0], a, sizeof *a) == 0);
    oc_sweep_journal_close(&j, &st);
    fixture_free(&x);
}

static void test_hashes(void)
{
    struct oc_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "tiny");
    m.hidden_size = 64;
    const uint64_t hm = oc_hash_model(&m);
    CU_ASSERT_EQUAL(oc_hash_model(&m), hm);
    m.hidden_size = 128;
    CU_ASSERT_NOT_EQUAL(oc_hash_model(&m), hm);
    m.hidden_size = 64;
    m.rope_scaling.factor = 8;
    CU_ASSERT_NOT_EQUAL(oc_hash_model(&m), hm);

    struct oc_topology t;
    memset(&t, 0, sizeof t);
    t.nic_bandwidth_Bps = 12.5e9;
    const uint64_t ht = oc_hash_topology(&t);
    t.nic_bandwidth_Bps = 25e9;
    CU_ASSERT_NOT_EQUAL(oc_hash_topology(&t), ht);
    t.nic_bandwidth_Bps = 12.5e9;
    t.calib_part_flops[OC_CALIB_PARTS - 1] = 1e12;
    CU_ASSERT_NOT_EQUAL(oc_hash_topology(&t), ht);

    struct oc_layout l[2];
    oc_layout_default(&l[0]);
    oc_layout_default(&l[1]);
    l[1].tp = 2;
    int64_t idx[2] = {3, 7};
    const uint64_t hl = oc_hash_layouts(l, idx, 2);
    idx[1] = 8; /* the same layouts at other indices */
    CU_ASSERT_NOT_EQUAL(oc_hash_layouts(l, idx, 2), hl);
    idx[1] = 7;
    CU_ASSERT_EQUAL(oc_hash_layouts(l, idx, 2), hl);
    l[0].zero = !l[0].zero;
    CU_ASSERT_NOT_EQUAL(oc_hash_layouts(l, idx, 2), hl);
    l[0].zero = !l[0].zero;
    /* every knob counts: cp, the collective algorithm, rfull<k> */
    l[1].cp = 2;
    CU_ASSERT_NOT_EQUAL(oc_hash_layouts(l, idx, 2), hl);
    l[1].cp = 1;
    l[1].coll = OC_COLL_CHOICE_TREE;
    CU_ASSERT_NOT_EQUAL(oc_hash_layouts(l, idx, 2), hl);
    l[1].coll = l[0].coll;
    l[1].recompute_layers = 3;
    CU_ASSERT_NOT_EQUAL(oc_hash_layouts(l, idx, 2), hl);
    l[1].recompute_layers = l[0].recompute_layers;
    CU_ASSERT_EQUAL(oc_hash_layouts(l, idx, 2), hl);
    CU_ASSERT_NOT_EQUAL(oc_hash_layouts(l, idx, 1), oc_hash_layouts(l, idx, 2));

    char path[512];
    snprintf(path, sizeof path, "%s/p.xml", oc_test_dir);
    oc_test_write_file(path, "<platform/>\n");
    uint64_t h1 = 0, h2 = 0;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(oc_hash_file(path, &h1, &st), 0);
    oc_test_write_file(path, "<platform />\n");
    CU_ASSERT_EQUAL(oc_hash_file(path, &h2, &st), 0);
    CU_ASSERT_NOT_EQUAL(h1, h2);
    /* FNV-1a 64 of the empty input is its offset basis. */
    oc_test_write_file(path, "");
    CU_ASSERT_EQUAL(oc_hash_file(path, &h1, &st), 0);
    CU_ASSERT_EQUAL(h1, 14695981039346656037ULL);
}

static CU_TestInfo tests[] = {
    {"records round trip", test_round_trip},
    {"another sweep refused", test_refused},
    {"damaged tail", test_damaged_tail},
    {"identity hashes", test_hashes},
    CU_TEST_INFO_NULL,
};
static CU_SuiteInfo suites[] = {
    {"sweep_journal", init, oc_test_dir_remove, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
