/* fuzz_model.c: libFuzzer target of the model reader (core/model.c:
 * oc_model_parse, the config.json of Hugging Face from memory).
 *
 * What it asserts: a reader that fails leaves the model zeroed and names
 * the problem in one clean line (fz_check_msg); one that succeeds gives a
 * model that passes its own check (oc_model_check), whose parameter counts
 * are positive, add up (embedding + layers + head = total) and whose
 * FLOPs at the model's full context are finite and positive (signed
 * overflow there is the sanitizer's to report).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "model.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fz_init_known();
    return 0;
}

static void check_model(const struct oc_model *m)
{
    struct oc_status st = {{0}};
    FZ_CHECK(oc_model_check(m, "fuzz", &st) == 0,
             "oc_model_parse accepted a model its own check refuses: %s", st.msg);
    FZ_CHECK(m->name[0] && memchr(m->name, '\0', sizeof m->name), "model without a name");
    FZ_CHECK(oc_model_head_dim(m) >= 1 && oc_model_kv_dim(m) >= 1, "head size < 1");
    int64_t layer = oc_model_layer_params(m), emb = oc_model_embedding_params(m),
            head = oc_model_head_params(m), total = oc_model_params_total(m);
    FZ_CHECK(layer > 0 && emb > 0 && head >= 0 && total > 0,
             "parameter counts: layer %lld, embedding %lld, head %lld, total %lld",
             (long long)layer, (long long)emb, (long long)head, (long long)total);
    FZ_CHECK(total == emb + layer * m->num_hidden_layers + head,
             "parameters do not add up: %lld != %lld + %lld*%lld + %lld", (long long)total,
             (long long)emb, (long long)layer, (long long)m->num_hidden_layers,
             (long long)head);
    for (int64_t tp = 1; tp <= 8; tp *= 2)
        if (m->num_attention_heads % tp == 0 && m->num_key_value_heads % tp == 0 &&
            m->intermediate_size % tp == 0)
            FZ_CHECK(oc_model_layer_params_tp(m, tp) > 0, "layer parameters at tp%lld",
                     (long long)tp);
    int64_t s = m->max_position_embeddings;
    double f = oc_model_layer_fwd_flops(m, 1, s) + oc_model_head_fwd_flops(m, 1, s);
    FZ_CHECK(isfinite(f) && f > 0, "forward FLOPs %g", f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    struct oc_model m;
    struct oc_status st = {{0}};
    if (oc_model_parse((const char *)data, n, "fuzz/config.json", &m, &st) != 0) {
        char *s = fz_text(data, n < 200 ? n : 200);
        fz_check_msg("oc_model_parse", &st, s);
        free(s);
        static const struct oc_model zero;
        FZ_CHECK(memcmp(&m, &zero, sizeof m) == 0, "a failed read left a model behind");
        return 0;
    }
    check_model(&m);
    return 0;
}
