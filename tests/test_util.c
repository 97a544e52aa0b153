/* test_util.c: the runner, the scratch folder, file helpers and the models
 * and layouts that the CUnit suites share (see test_util.h). */
#define _XOPEN_SOURCE 700
#include "test_util.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int oc_test_run(CU_SuiteInfo *suites)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    if (CU_register_suites(suites) != CUE_SUCCESS) {
        CU_cleanup_registry();
        return 2;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures();
    unsigned run = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    return (failed != 0 || run == 0) ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* The scratch folder                                                   */

char oc_test_dir[256];

int oc_test_dir_make(const char *tag)
{
    snprintf(oc_test_dir, sizeof oc_test_dir, "/tmp/ocsim-test-%s-XXXXXX", tag);
    return mkdtemp(oc_test_dir) ? 0 : -1;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

int oc_test_dir_remove(void)
{
    const char *keep = getenv("OCSIM_TEST_KEEP");
    if (keep && keep[0] == '1') {
        fprintf(stderr, "kept %s\n", oc_test_dir);
        return 0;
    }
    /* depth first, links not followed: the folder's own files only */
    nftw(oc_test_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Files and messages                                                   */

char *oc_test_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    fclose(f);
    return s;
}

void oc_test_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

long oc_test_output_bytes(void (*fn)(void *arg), void *arg)
{
    char tmp[] = "/tmp/ocsim-test-output-XXXXXX";
    int fd = mkstemp(tmp);
    CU_ASSERT_FATAL(fd >= 0);
    fflush(stdout);
    fflush(stderr);
    int out = dup(1), err = dup(2);
    dup2(fd, 1);
    dup2(fd, 2);
    fn(arg);
    fflush(stdout);
    fflush(stderr);
    dup2(out, 1);
    dup2(err, 2);
    close(out);
    close(err);
    off_t size = lseek(fd, 0, SEEK_END);
    close(fd);
    unlink(tmp);
    return (long)size;
}

void oc_test_msg_has(const char *msg, const char *want)
{
    int ok = strstr(msg, want) != NULL;
    CU_ASSERT(ok);
    if (!ok)
        fprintf(stderr, "\n  message '%s' lacks '%s'\n", msg, want);
}

void oc_test_expect_ok(int rc, const char *msg)
{
    CU_ASSERT_EQUAL(rc, 0);
    if (rc != 0)
        fprintf(stderr, "\n  unexpected failure: %s\n", msg);
}

int oc_test_msg_is_clean(const char *msg)
{
    const unsigned char *u = (const unsigned char *)msg;
    while (*u) {
        unsigned c = *u, cp, min;
        size_t len;
        if (c < 0x20 || c == 0x7f)
            return 0;
        if (c < 0x80) {
            u++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            len = 2, min = 0x80, cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3, min = 0x800, cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4, min = 0x10000, cp = c & 0x07;
        } else {
            return 0;
        }
        for (size_t k = 1; k < len; k++) {
            if ((u[k] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (u[k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        u += len;
    }
    return 1;
}

void oc_test_expect_fail(int rc, const char *msg, const char *const *subs)
{
    CU_ASSERT_EQUAL(rc, -1);
    CU_ASSERT(msg[0] != '\0');
    CU_ASSERT(oc_test_msg_is_clean(msg));
    for (int i = 0; subs[i]; i++)
        oc_test_msg_has(msg, subs[i]);
}

/* ------------------------------------------------------------------ */
/* Models and layouts                                                   */

struct oc_model oc_test_gpt(const char *name, int64_t h, int64_t a, int64_t L,
                            int64_t f, int64_t V, int64_t P)
{
    struct oc_model m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "%s", name);
    strcpy(m.model_type, "gpt2");
    m.arch = OC_ARCH_GPT;
    m.hidden_size = h;
    m.num_attention_heads = a;
    m.num_key_value_heads = a;
    m.num_hidden_layers = L;
    m.intermediate_size = f;
    m.vocab_size = V;
    m.max_position_embeddings = P;
    m.gated_mlp = 0;
    m.has_bias = 1;
    m.learned_pos_emb = 1;
    m.norm_params_per_h = 2;
    m.tie_word_embeddings = 1;
    m.has_dropout = 1;
    return m;
}

void oc_test_tiny_model(struct oc_model *m)
{
    *m = oc_test_gpt("tiny", 64, 4, 8, 256, 512, 128);
}

struct oc_layout oc_test_layout(int64_t t, int64_t p, int64_t d, int64_t b,
                                int64_t G, int64_t s)
{
    struct oc_layout l;
    memset(&l, 0, sizeof l);
    l.tp = t;
    l.pp = p;
    l.dp = d;
    l.micro_batch = b;
    l.global_batch = G;
    l.seq_length = s;
    l.schedule = OC_SCHED_1F1B;
    l.vchunks = 1;
    l.recompute = OC_RECOMPUTE_NONE;
    l.attention = OC_ATTN_CLASSIC;
    l.order = OC_ORDER_TP_DP_PP;
    /* 16-bit gradients, 2 bytes per gradient in memory and in the DP
     * collectives: the hand-worked byte counts of the schedule, memory and
     * replay suites are written for them. Megatron-LM's bf16 default (fp32
     * gradients, layout.h grad_fp32 = 0) is tested on its own (test_memory,
     * test_cost). */
    l.grad_fp32 = -1;
    return l;
}
