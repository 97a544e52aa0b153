/* test_exec_ckpt.c: the checkpoint's file side (exec/ckpt_format.h,
 * exec/ckpt_io.h), with values by hand:
 *
 * - SHA-256 against FIPS 180-2's example ("abc"), of a buffer, of a file
 *   and of what an atomic file wrote; an atomic file leaves no temporary,
 *   an abandoned one nothing;
 * - names of shards and step folders; the model's fingerprint follows the
 *   numbers, not the name;
 * - the manifest: written, read back field by field; a missing field, an
 *   unknown version and a broken file each refused with one line naming it;
 * - a shard's header: its bytes (magic, little-endian length, the data at
 *   a multiple of 64), read back; a tensor that does not fit is refused;
 *   built from a TP shard with ZeRO-1 slices;
 * - pieces: a ZeRO slice of a row-split block into a column-split block,
 *   a range of the destination, the gate | up halves of a GLU block, and
 *   the local row of a global row.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt_format.h"
#include "ckpt_io.h"
#include "params.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* SHA-256 and files                                                    */

static void test_sha256(void)
{
    char hex[OC_CKPT_SHA_HEX];
    /* FIPS 180-2, appendix B.1 */
    oc_sha256_hex("abc", 3, hex);
    CU_ASSERT_STRING_EQUAL(hex,
                           "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    /* incremental = one buffer */
    struct oc_sha256 h;
    oc_sha256_init(&h);
    oc_sha256_update(&h, "a", 1);
    oc_sha256_update(&h, "bc", 2);
    char hex2[OC_CKPT_SHA_HEX];
    oc_sha256_final(&h, hex2);
    CU_ASSERT_STRING_EQUAL(hex, hex2);
}

static void test_atomic_file(void)
{
    struct oc_status st = {{0}};
    struct oc_ckpt_file f;
    char path[512], tmp[sizeof f.out.tmp];
    snprintf(path, sizeof path, "%s/a.bin", oc_test_dir);
    CU_ASSERT_EQUAL_FATAL(oc_ckpt_file_open(&f, oc_test_dir, "a.bin", &st), 0);
    snprintf(tmp, sizeof tmp, "%s", f.out.tmp);
    CU_ASSERT_PTR_NOT_NULL(strstr(tmp, "/.a.bin.")); /* a hidden temporary beside it */
    struct stat sb;
    CU_ASSERT_EQUAL(stat(tmp, &sb), 0);   /* written under the temporary */
    CU_ASSERT_NOT_EQUAL(stat(path, &sb), 0);
    CU_ASSERT_EQUAL(oc_ckpt_file_write(&f, "ab", 2, &st), 0);
    CU_ASSERT_EQUAL(oc_ckpt_file_write(&f, "c", 1, &st), 0);
    CU_ASSERT_EQUAL(f.bytes, 3);
    CU_ASSERT_EQUAL_FATAL(oc_ckpt_file_commit(&f, &st), 0);
    CU_ASSERT_NOT_EQUAL(stat(tmp, &sb), 0); /* renamed */
    CU_ASSERT_STRING_EQUAL(f.sha256,
                           "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    char hex[OC_CKPT_SHA_HEX];
    int64_t bytes = 0;
    CU_ASSERT_EQUAL(oc_sha256_file(path, hex, &bytes, &st), 0);
    CU_ASSERT_EQUAL(bytes, 3);
    CU_ASSERT_STRING_EQUAL(hex, f.sha256);
    char *text = oc_ckpt_read_text(path, &st);
    CU_ASSERT_STRING_EQUAL(text, "abc");
    free(text);

    /* abandoned: neither the temporary nor the name */
    CU_ASSERT_EQUAL_FATAL(oc_ckpt_file_open(&f, oc_test_dir, "b.bin", &st), 0);
    snprintf(tmp, sizeof tmp, "%s", f.out.tmp);
    CU_ASSERT_EQUAL(oc_ckpt_file_write(&f, "x", 1, &st), 0);
    oc_ckpt_file_abandon(&f);
    snprintf(path, sizeof path, "%s/b.bin", oc_test_dir);
    CU_ASSERT_NOT_EQUAL(stat(tmp, &sb), 0);
    CU_ASSERT_NOT_EQUAL(stat(path, &sb), 0);
    /* a folder that does not exist: one line naming the file */
    oc_test_expect_fail(oc_ckpt_file_open(&f, "/nonexistent-ocsim", "c.bin", &st), st.msg,
                        (const char *const[]){"/nonexistent-ocsim/c.bin",
                                              "cannot write", NULL});
}

/* ------------------------------------------------------------------ */
/* Names and the model's fingerprint                                    */

static void test_names(void)
{
    struct oc_ckpt_coord c = {.rank = 3, .tp = 1, .pp = 0, .dp = 1, .nchunks = 2,
                              .chunks = {0, 2}};
    char b[128];
    oc_ckpt_shard_name(&c, b, sizeof b);
    CU_ASSERT_STRING_EQUAL(b, "shard-tp1-pp0-dp1-c0.2-r00003.bin");
    oc_ckpt_step_name(10, b, sizeof b);
    CU_ASSERT_STRING_EQUAL(b, "step-000010");
    oc_ckpt_coord_words(&c, b, sizeof b);
    CU_ASSERT_STRING_EQUAL(b, "rank 3 (tp1 pp0 dp1 chunks 0.2)");
    struct oc_ckpt_coord d = c;
    CU_ASSERT(oc_ckpt_coord_equal(&c, &d));
    d.chunks[1] = 1;
    CU_ASSERT(!oc_ckpt_coord_equal(&c, &d));
}

static void test_model_sha(void)
{
    struct oc_model a, b;
    oc_test_tiny_model(&a);
    b = a;
    char ha[OC_CKPT_SHA_HEX], hb[OC_CKPT_SHA_HEX];
    oc_ckpt_model_sha256(&a, ha);
    snprintf(b.name, sizeof b.name, "renamed");
    oc_ckpt_model_sha256(&b, hb);
    CU_ASSERT_STRING_EQUAL(ha, hb);     /* the name is not the config */
    b.intermediate_size = 128;
    oc_ckpt_model_sha256(&b, hb);
    CU_ASSERT_STRING_NOT_EQUAL(ha, hb);
    b = a;
    b.rope_theta = 500000;
    oc_ckpt_model_sha256(&b, hb);
    CU_ASSERT_STRING_NOT_EQUAL(ha, hb);
    CU_ASSERT_EQUAL(strlen(ha), 64);
}

/* ------------------------------------------------------------------ */
/* The manifest                                                         */

static struct oc_ckpt_manifest hand_manifest(struct oc_ckpt_shard sh[2])
{
    struct oc_ckpt_manifest mf;
    memset(&mf, 0, sizeof mf);
    mf.step = 7;
    snprintf(mf.model_name, sizeof mf.model_name, "tiny");
    memset(mf.model_sha256, 'a', 64);
    snprintf(mf.layout, sizeof mf.layout, "tp1-pp2-dp1-mb1-1f1b");
    mf.tp = 1, mf.pp = 2, mf.dp = 1, mf.vchunks = 1, mf.micro_batch = 1;
    mf.shard_optimizer = 0;
    mf.overlap_grad_reduce = 1;
    snprintf(mf.schedule, sizeof mf.schedule, "1f1b");
    snprintf(mf.recompute, sizeof mf.recompute, "selective");
    snprintf(mf.order, sizeof mf.order, "tp-dp-pp");
    snprintf(mf.precision_run, sizeof mf.precision_run, "fp32");
    snprintf(mf.precision_gemm, sizeof mf.precision_gemm, "bf16");
    snprintf(mf.backend, sizeof mf.backend, "cuda");
    mf.seed = 42;
    mf.global_batch = 8, mf.seq_length = 32;
    mf.lr = 1e-3, mf.beta1 = 0.9, mf.beta2 = 0.95, mf.eps = 1e-8, mf.weight_decay = 0.1;
    for (int i = 0; i < 2; i++) {
        memset(&sh[i], 0, sizeof sh[i]);
        sh[i].at = (struct oc_ckpt_coord){.rank = i, .pp = i, .nchunks = 1, .chunks = {i}};
        oc_ckpt_shard_name(&sh[i].at, sh[i].file, sizeof sh[i].file);
        sh[i].bytes = 1000 + i;
        memset(sh[i].sha256, i ? 'c' : 'b', 64);
    }
    mf.nshards = 2;
    mf.shards = sh;
    return mf;
}

static void test_manifest_round_trip(void)
{
    struct oc_ckpt_shard sh[2];
    struct oc_ckpt_manifest mf = hand_manifest(sh), back;
    char *text = oc_ckpt_manifest_json(&mf);
    struct oc_status st = {{0}};
    /* the data position and the moments' counter are the step */
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"next_sample\": 56"));  /* 7 * 8 */
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"data_seed\": 43"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"t\": 7"));
    CU_ASSERT_EQUAL_FATAL(oc_ckpt_manifest_parse(&back, text, "m.json", &st), 0);
    CU_ASSERT_EQUAL(back.step, 7);
    CU_ASSERT_STRING_EQUAL(back.model_name, "tiny");
    CU_ASSERT_STRING_EQUAL(back.model_sha256, mf.model_sha256);
    CU_ASSERT_STRING_EQUAL(back.layout, "tp1-pp2-dp1-mb1-1f1b");
    CU_ASSERT(back.tp == 1 && back.pp == 2 && back.dp == 1 && back.vchunks == 1);
    CU_ASSERT_EQUAL(back.shard_optimizer, 0);
    CU_ASSERT_EQUAL(back.sequence_parallel, 0);
    CU_ASSERT_EQUAL(back.overlap_grad_reduce, 1);
    CU_ASSERT_STRING_EQUAL(back.schedule, "1f1b");
    CU_ASSERT_STRING_EQUAL(back.recompute, "selective");
    CU_ASSERT_STRING_EQUAL(back.order, "tp-dp-pp");
    CU_ASSERT_STRING_EQUAL(back.precision_run, "fp32");
    CU_ASSERT_STRING_EQUAL(back.precision_gemm, "bf16");
    CU_ASSERT_STRING_EQUAL(back.backend, "cuda");
    CU_ASSERT_EQUAL(back.seed, 42);
    CU_ASSERT(back.global_batch == 8 && back.seq_length == 32);
    CU_ASSERT_EQUAL(back.lr, 1e-3); /* 17 digits: exact */
    CU_ASSERT_EQUAL(back.beta2, 0.95);
    CU_ASSERT_EQUAL_FATAL(back.nshards, 2);
    CU_ASSERT_STRING_EQUAL(back.shards[1].file, "shard-tp0-pp1-dp0-c1-r00001.bin");
    CU_ASSERT(oc_ckpt_coord_equal(&back.shards[1].at, &sh[1].at));
    CU_ASSERT_EQUAL(back.shards[1].bytes, 1001);
    CU_ASSERT_STRING_EQUAL(back.shards[1].sha256, sh[1].sha256);
    oc_ckpt_manifest_free(&back);
    free(text);
}

static void test_manifest_refusals(void)
{
    struct oc_ckpt_shard sh[2];
    struct oc_ckpt_manifest mf = hand_manifest(sh), back;
    char *text = oc_ckpt_manifest_json(&mf);
    struct oc_status st = {{0}};
    char *t = strdup(text);
    memcpy(strstr(t, "\"step\""), "\"stxp\"", 6);
    oc_test_expect_fail(oc_ckpt_manifest_parse(&back, t, "m.json", &st), st.msg,
                        (const char *const[]){"m.json", "'step' is missing", NULL});
    strcpy(t, text);
    memcpy(strstr(t, "\"version\": 1"), "\"version\": 9", 12);
    oc_test_expect_fail(oc_ckpt_manifest_parse(&back, t, "m.json", &st), st.msg,
                        (const char *const[]){"m.json", "version 9", NULL});
    strcpy(t, text);
    memcpy(strstr(t, "\"bytes\": 1001"), "\"bytes\": \"01\"", 13);
    oc_test_expect_fail(oc_ckpt_manifest_parse(&back, t, "m.json", &st), st.msg,
                        (const char *const[]){"'bytes' must be an integer", "(shard 1)", NULL});
    oc_test_expect_fail(oc_ckpt_manifest_parse(&back, "{\"format\": ", "m.json", &st),
                        st.msg, (const char *const[]){"m.json:1:", NULL});
    free(t);
    free(text);
}

/* ------------------------------------------------------------------ */
/* A shard's header                                                     */

static struct oc_ckpt_header hand_header(struct oc_ckpt_tensor *t)
{
    struct oc_ckpt_header h;
    memset(&h, 0, sizeof h);
    h.step = 5;
    memset(h.model_sha256, 'd', 64);
    h.at = (struct oc_ckpt_coord){.rank = 1, .tp = 1, .nchunks = 1, .chunks = {0}};
    h.nw = 12;
    h.nopt = 6;
    /* (4, 6) split by rows over TP 2, rank 1: rows [2, 4); ZeRO-1 over 2,
     * slice 1 of its 12 floats: [6, 12) */
    *t = (struct oc_ckpt_tensor){"qkvw", 3, 4, 6, 2, 0, 2, 6, 1, 0, 6, 12, 0};
    h.nt = 1;
    h.t = t;
    return h;
}

static void test_header_bytes(void)
{
    struct oc_ckpt_tensor t;
    struct oc_ckpt_header h = hand_header(&t), back;
    size_t n = 0;
    unsigned char *buf = oc_ckpt_header_encode(&h, &n);
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL(memcmp(buf, "OCSIMSHD", 8), 0);
    CU_ASSERT_EQUAL(n % 64, 0);
    uint64_t len = 0;
    for (int i = 0; i < 8; i++)
        len |= (uint64_t)buf[8 + i] << (8 * i);
    CU_ASSERT_EQUAL(len, n - 16);
    CU_ASSERT_EQUAL(buf[16], '{');
    CU_ASSERT_EQUAL(buf[n - 1] == ' ' || buf[n - 1] == '}', 1);
    /* the file: header, 12 + 2 * 6 floats */
    CU_ASSERT_EQUAL(oc_ckpt_header_file_bytes(&h), (int64_t)n + 24 * 4);
    CU_ASSERT_EQUAL_FATAL(oc_ckpt_header_decode(&back, buf, n, "s.bin", &st), 0);
    CU_ASSERT_EQUAL(back.step, 5);
    CU_ASSERT(oc_ckpt_coord_equal(&back.at, &h.at));
    CU_ASSERT(back.nw == 12 && back.nopt == 6 && back.nt == 1);
    CU_ASSERT_STRING_EQUAL(back.t[0].name, "qkvw");
    CU_ASSERT(back.t[0].layer == 3 && back.t[0].grows == 4 && back.t[0].gcols == 6);
    CU_ASSERT(back.t[0].row0 == 2 && back.t[0].col0 == 0 && back.t[0].rows == 2 &&
              back.t[0].cols == 6 && back.t[0].parts == 1);
    CU_ASSERT(back.t[0].opt_lo == 6 && back.t[0].opt_hi == 12 && back.t[0].opt_off == 0);
    oc_ckpt_header_free(&back);

    /* cut short, and not a shard */
    oc_test_expect_fail(oc_ckpt_header_decode(&back, buf, n - 20, "s.bin", &st), st.msg,
                        (const char *const[]){"s.bin", "cut short", NULL});
    buf[0] = 'X';
    oc_test_expect_fail(oc_ckpt_header_decode(&back, buf, n, "s.bin", &st), st.msg,
                        (const char *const[]){"s.bin: not a shard", NULL});
    free(buf);
    /* a block past its global rows */
    t.row0 = 3;
    buf = oc_ckpt_header_encode(&h, &n);
    oc_test_expect_fail(oc_ckpt_header_decode(&back, buf, n, "s.bin", &st), st.msg,
                        (const char *const[]){"tensor qkvw of layer 3 does not fit", NULL});
    free(buf);
}

/* The header of a real shard: tiny's layer 3 at TP 2, rank 1, with the
 * moments of DP slice 1 of 2. */
static void test_header_of_params(void)
{
    struct oc_model m;
    oc_test_tiny_model(&m);
    int64_t layers[] = {3};
    struct oc_params_opts o = {2, 1, layers, 1, 0, 0, 7};
    struct oc_params p;
    struct oc_status st = {{0}};
    CU_ASSERT_EQUAL_FATAL(oc_params_init_sharded(&p, &m, &o, 2, 1, &st), 0);
    struct oc_ckpt_coord at = {.rank = 5, .tp = 1, .pp = 1, .dp = 1, .nchunks = 1,
                               .chunks = {1}};
    struct oc_ckpt_header h;
    char sha[OC_CKPT_SHA_HEX] = "00";
    oc_ckpt_header_of(&h, &p, &at, 9, sha);
    CU_ASSERT_EQUAL(h.nw, p.n);
    CU_ASSERT_EQUAL(h.nopt, p.nopt);
    CU_ASSERT_EQUAL_FATAL(h.nt, p.nt);
    const struct oc_param_tensor *q = oc_params_tensor(&p, OC_P_QKVW, 3);
    const struct oc_ckpt_tensor *t = &h.t[q - p.t];
    /* qkvw (192, 64) rows split: rank 1 holds [96, 192); its 96*64 = 6144
     * floats' DP slice 1 of 2 is [3072, 6144) */
    CU_ASSERT_STRING_EQUAL(t->name, "qkvw");
    CU_ASSERT(t->grows == 192 && t->gcols == 64 && t->row0 == 96 && t->rows == 96);
    CU_ASSERT(t->opt_lo == 3072 && t->opt_hi == 6144);
    CU_ASSERT_EQUAL(t->offset, q->offset);
    CU_ASSERT_EQUAL(t->opt_off, p.opt_off[q - p.t]);
    oc_ckpt_header_free(&h);
    oc_params_free(&p);
}

/* ------------------------------------------------------------------ */
/* Pieces                                                               */

static struct oc_param_tensor block(int64_t grows, int64_t gcols, int64_t rows, int64_t cols,
                                    int64_t row0, int64_t col0, int64_t parts)
{
    struct oc_param_tensor t;
    memset(&t, 0, sizeof t);
    t.grows = grows, t.gcols = gcols, t.rows = rows, t.cols = cols;
    t.row0 = row0, t.col0 = col0, t.parts = parts;
    return t;
}

/* Global (4, 6) with element (r, c) = 10r + c. Source: rows [2, 4) (row
 * split, TP rank 1), its floats [3, 9): 23 24 25 30 31 32. Destination:
 * columns [3, 6) (column split, TP rank 1): (r, c) at r*3 + c-3. Only
 * 23, 24, 25 are in both, at 6, 7, 8. */
static void test_piece_rows_to_cols(void)
{
    float sbuf[6] = {23, 24, 25, 30, 31, 32}, dbuf[12];
    for (int i = 0; i < 12; i++)
        dbuf[i] = -1;
    struct oc_ckpt_piece src = {block(4, 6, 2, 6, 2, 0, 1), 3, 9, sbuf};
    struct oc_ckpt_piece dst = {block(4, 6, 4, 3, 0, 3, 1), 0, 12, NULL};
    CU_ASSERT_EQUAL(oc_ckpt_piece_copy(&src, &dst), 3); /* count only */
    dst.buf = dbuf;
    CU_ASSERT_EQUAL(oc_ckpt_piece_copy(&src, &dst), 3);
    CU_ASSERT(dbuf[6] == 23 && dbuf[7] == 24 && dbuf[8] == 25);
    CU_ASSERT(dbuf[5] == -1 && dbuf[9] == -1);
    /* the destination's slice [7, 12): 24 and 25 at its 0 and 1 */
    float part[5] = {-1, -1, -1, -1, -1};
    struct oc_ckpt_piece dst2 = {block(4, 6, 4, 3, 0, 3, 1), 7, 12, part};
    CU_ASSERT_EQUAL(oc_ckpt_piece_copy(&src, &dst2), 2);
    CU_ASSERT(part[0] == 24 && part[1] == 25 && part[2] == -1);
}

/* A GLU block: global (8, 2) as gate rows [0, 4) | up rows [4, 8). TP 2
 * rank 1 holds rows 2, 3 of each half: global rows 2, 3, 6, 7. */
static void test_piece_glu(void)
{
    struct oc_param_tensor whole = block(8, 2, 8, 2, 0, 0, 2);
    struct oc_param_tensor half = block(8, 2, 4, 2, 2, 0, 2);
    CU_ASSERT_EQUAL(oc_ckpt_local_row(&half, 2), 0);
    CU_ASSERT_EQUAL(oc_ckpt_local_row(&half, 3), 1);
    CU_ASSERT_EQUAL(oc_ckpt_local_row(&half, 6), 2);
    CU_ASSERT_EQUAL(oc_ckpt_local_row(&half, 7), 3);
    CU_ASSERT_EQUAL(oc_ckpt_local_row(&half, 4), -1);
    CU_ASSERT_EQUAL(oc_ckpt_local_row(&half, 1), -1);
    CU_ASSERT_EQUAL(oc_ckpt_local_row(&whole, 5), 5);
    float w[16], out[8];
    for (int i = 0; i < 16; i++)
        w[i] = (float)i; /* row r: 2r, 2r+1 */
    struct oc_ckpt_piece src = {whole, 0, 16, w}, dst = {half, 0, 8, out};
    CU_ASSERT_EQUAL(oc_ckpt_piece_copy(&src, &dst), 8);
    const float want[8] = {4, 5, 6, 7, 12, 13, 14, 15};
    CU_ASSERT_EQUAL(memcmp(out, want, sizeof want), 0);
    /* and back: the half's rows land in their global rows only */
    float back[16];
    for (int i = 0; i < 16; i++)
        back[i] = -1;
    struct oc_ckpt_piece src2 = {half, 0, 8, out}, dst2 = {whole, 0, 16, back};
    CU_ASSERT_EQUAL(oc_ckpt_piece_copy(&src2, &dst2), 8);
    CU_ASSERT(back[4] == 4 && back[15] == 15 && back[0] == -1 && back[9] == -1);
}

static int init(void) { return oc_test_dir_make("ckpt"); }

static CU_TestInfo tests[] = {
    {"SHA-256", test_sha256},
    {"atomic file", test_atomic_file},
    {"names", test_names},
    {"model fingerprint", test_model_sha},
    {"manifest round trip", test_manifest_round_trip},
    {"manifest refusals", test_manifest_refusals},
    {"header bytes", test_header_bytes},
    {"header of params", test_header_of_params},
    {"piece rows to cols", test_piece_rows_to_cols},
    {"piece glu", test_piece_glu},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"exec_ckpt", init, oc_test_dir_remove, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) { return oc_test_run(suites); }
