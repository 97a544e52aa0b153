/* fuzz_ckpt_header.c: libFuzzer target of a checkpoint shard's header
 * (exec/ckpt_format.c: oc_ckpt_header_length on the first 16 bytes,
 * oc_ckpt_header_decode on the whole input as the first bytes of a shard).
 *
 * What it asserts: a decode that fails leaves the header empty and names
 * the problem in one clean line (fz_check_msg); one that succeeds gives
 * tensors inside their global shape and the shard's arenas (the promise
 * of ckpt_format.h, checked again here with overflow-safe arithmetic), a
 * file size (oc_ckpt_header_file_bytes) at least the header's, an
 * encoding (oc_ckpt_header_encode) that decodes back to the same header,
 * and each tensor's block copied onto itself (oc_ckpt_piece_copy,
 * counting) covers exactly its moments' range.
 */
#include <stdlib.h>
#include <string.h>

#include "ckpt_format.h"
#include "fuzz_check.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fz_init_known();
    return 0;
}

static int fits(const struct oc_ckpt_header *h, const struct oc_ckpt_tensor *t)
{
    int64_t n, end, oend;
    if (t->grows <= 0 || t->gcols <= 0 || t->parts < 1 || t->rows < 0 || t->cols < 0 ||
        t->row0 < 0 || t->col0 < 0 || t->offset < 0 || t->opt_lo < 0 || t->opt_off < 0)
        return 0;
    if (__builtin_mul_overflow(t->rows, t->cols, &n) ||
        __builtin_add_overflow(t->offset, n, &end) || end > h->nw)
        return 0;
    if (t->rows / t->parts > t->grows / t->parts - t->row0 || t->cols > t->gcols - t->col0)
        return 0;
    if (t->opt_hi < t->opt_lo || t->opt_hi > n ||
        __builtin_add_overflow(t->opt_off, t->opt_hi - t->opt_lo, &oend) || oend > h->nopt)
        return 0;
    return 1;
}

static int same_header(const struct oc_ckpt_header *a, const struct oc_ckpt_header *b)
{
    if (a->step != b->step || strcmp(a->model_sha256, b->model_sha256) ||
        !oc_ckpt_coord_equal(&a->at, &b->at) || a->nw != b->nw || a->nopt != b->nopt ||
        a->nt != b->nt)
        return 0;
    for (int64_t i = 0; i < a->nt; i++) {
        const struct oc_ckpt_tensor *x = &a->t[i], *y = &b->t[i];
        if (strcmp(x->name, y->name) || x->layer != y->layer || x->grows != y->grows ||
            x->gcols != y->gcols || x->row0 != y->row0 || x->col0 != y->col0 ||
            x->rows != y->rows || x->cols != y->cols || x->parts != y->parts ||
            x->offset != y->offset || x->opt_lo != y->opt_lo || x->opt_hi != y->opt_hi ||
            x->opt_off != y->opt_off)
            return 0;
    }
    return 1;
}

static void check_header(const struct oc_ckpt_header *h)
{
    FZ_CHECK(h->step >= 0 && h->nw >= 0 && h->nopt >= 0 && h->nt >= 0,
             "header accepted with step %lld nw %lld nopt %lld", (long long)h->step,
             (long long)h->nw, (long long)h->nopt);
    for (int64_t i = 0; i < h->nt; i++) {
        const struct oc_ckpt_tensor *t = &h->t[i];
        FZ_CHECK(fits(h, t), "tensor %lld (%s) accepted outside its shape or the arenas",
                 (long long)i, t->name);
        /* Its moments' range copied onto itself: every float, once. Only
         * small blocks: the copy walks the range row by row. */
        if (t->rows <= 4096) {
            struct oc_ckpt_piece a = {oc_ckpt_tensor_block(t), t->opt_lo, t->opt_hi, NULL};
            struct oc_ckpt_piece b = a;
            int64_t got = oc_ckpt_piece_copy(&a, &b);
            FZ_CHECK(got == t->opt_hi - t->opt_lo, "tensor %lld copied onto itself: %lld of %lld",
                     (long long)i, (long long)got, (long long)(t->opt_hi - t->opt_lo));
        }
    }
    size_t n;
    unsigned char *enc = oc_ckpt_header_encode(h, &n);
    FZ_CHECK(n % OC_CKPT_ALIGN == 0 && n >= 16, "encoded header of %zu bytes", n);
    int64_t bytes = oc_ckpt_header_file_bytes(h);
    FZ_CHECK(bytes >= (int64_t)n, "file of %lld bytes under a header of %zu",
             (long long)bytes, n);
    struct oc_ckpt_header back;
    struct oc_status st = {{0}};
    FZ_CHECK(oc_ckpt_header_decode(&back, enc, n, "encoded", &st) == 0,
             "an encoded header does not decode: %s", st.msg);
    FZ_CHECK(same_header(h, &back), "an encoded header decodes differently");
    oc_ckpt_header_free(&back);
    free(enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    struct oc_status st = {{0}};
    char *shown = fz_text(data, n < 200 ? n : 200);
    if (n >= 16) {
        uint64_t len;
        if (oc_ckpt_header_length(data, "shard.bin", &len, &st) != 0)
            fz_check_msg("oc_ckpt_header_length", &st, shown);
    }
    struct oc_ckpt_header h;
    if (oc_ckpt_header_decode(&h, data, n, "shard-tp0-pp0-dp0-c0-r00000.bin", &st) != 0) {
        fz_check_msg("oc_ckpt_header_decode", &st, shown);
        FZ_CHECK(!h.t && h.nt == 0, "a failed decode left tensors behind");
    } else {
        check_header(&h);
        oc_ckpt_header_free(&h);
    }
    free(shown);
    return 0;
}
