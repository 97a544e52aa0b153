/* fuzz_ckpt_manifest.c: libFuzzer target of the checkpoint manifest
 * (exec/ckpt_format.c: oc_ckpt_manifest_parse, manifest.json as text).
 *
 * What it asserts: a parse that fails leaves the manifest empty and names
 * the problem in one clean line (fz_check_msg); one that succeeds gives
 * tp, pp, dp, vchunks, micro-batch, global batch and sequence >= 1, step
 * >= 0, nshards >= 0 with the shards' coordinates and sizes >= 0, and
 * prints (oc_ckpt_manifest_json) a manifest that parses back to the same
 * fields.
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

static int same_shards(const struct oc_ckpt_manifest *a, const struct oc_ckpt_manifest *b)
{
    if (a->nshards != b->nshards)
        return 0;
    for (int64_t i = 0; i < a->nshards; i++) {
        const struct oc_ckpt_shard *x = &a->shards[i], *y = &b->shards[i];
        if (strcmp(x->file, y->file) || strcmp(x->sha256, y->sha256) ||
            x->bytes != y->bytes || !oc_ckpt_coord_equal(&x->at, &y->at))
            return 0;
    }
    return 1;
}

static int same_manifest(const struct oc_ckpt_manifest *a, const struct oc_ckpt_manifest *b)
{
    return a->step == b->step && !strcmp(a->model_name, b->model_name) &&
           !strcmp(a->model_sha256, b->model_sha256) && !strcmp(a->layout, b->layout) &&
           a->tp == b->tp && a->pp == b->pp && a->dp == b->dp && a->vchunks == b->vchunks &&
           a->micro_batch == b->micro_batch && a->shard_optimizer == b->shard_optimizer &&
           a->sequence_parallel == b->sequence_parallel &&
           a->overlap_grad_reduce == b->overlap_grad_reduce &&
           !strcmp(a->schedule, b->schedule) && !strcmp(a->recompute, b->recompute) &&
           !strcmp(a->order, b->order) && !strcmp(a->precision_run, b->precision_run) &&
           !strcmp(a->precision_gemm, b->precision_gemm) && !strcmp(a->backend, b->backend) &&
           a->seed == b->seed && a->global_batch == b->global_batch &&
           a->seq_length == b->seq_length && a->lr == b->lr && a->beta1 == b->beta1 &&
           a->beta2 == b->beta2 && a->eps == b->eps && a->weight_decay == b->weight_decay &&
           same_shards(a, b);
}

static void check_manifest(const struct oc_ckpt_manifest *mf)
{
    FZ_CHECK(mf->step >= 0 && mf->tp >= 1 && mf->pp >= 1 && mf->dp >= 1 &&
                 mf->vchunks >= 1 && mf->micro_batch >= 1 && mf->global_batch >= 1 &&
                 mf->seq_length >= 1 && mf->nshards >= 0,
             "manifest accepted with step %lld tp%lld pp%lld dp%lld", (long long)mf->step,
             (long long)mf->tp, (long long)mf->pp, (long long)mf->dp);
    for (int64_t i = 0; i < mf->nshards; i++) {
        const struct oc_ckpt_shard *s = &mf->shards[i];
        FZ_CHECK(s->bytes >= 0 && s->at.rank >= 0 && s->at.nchunks >= 0 &&
                     s->at.nchunks <= OC_CKPT_MAX_CHUNKS,
                 "shard %lld accepted with bytes %lld", (long long)i, (long long)s->bytes);
        char name[256];
        oc_ckpt_coord_words(&s->at, name, sizeof name);
        oc_ckpt_shard_name(&s->at, name, sizeof name);
    }
    char *text = oc_ckpt_manifest_json(mf);
    struct oc_ckpt_manifest back;
    struct oc_status st = {{0}};
    FZ_CHECK(oc_ckpt_manifest_parse(&back, text, "printed", &st) == 0,
             "a manifest printed back does not parse: %s", st.msg);
    FZ_CHECK(same_manifest(mf, &back), "a manifest printed back reads differently");
    oc_ckpt_manifest_free(&back);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    char *s = fz_text(data, n);
    struct oc_ckpt_manifest mf;
    struct oc_status st = {{0}};
    if (oc_ckpt_manifest_parse(&mf, s, "step-000001/manifest.json", &st) != 0) {
        fz_check_msg("oc_ckpt_manifest_parse", &st, s);
        FZ_CHECK(!mf.shards && mf.nshards == 0, "a failed parse left shards behind");
    } else {
        check_manifest(&mf);
        oc_ckpt_manifest_free(&mf);
    }
    free(s);
    return 0;
}
