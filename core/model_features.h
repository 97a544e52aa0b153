/* model_features.h: the config.json features ocsim does not model, found
 * and refused by name (private to core/model.c, like json_util.h).
 *
 *   if (oc_model_refuse_unmodelled(&o, "mistral", OC_ARCH_LLAMA, st) != 0)
 *       return -1;   // "x.json: field 'num_local_experts' is 8: a mixture
 *                    //  of experts, which ocsim does not model"
 *
 * What it is: a table of the keys of Hugging Face configs that change what
 * a step computes or sends (experts, sliding-window attention, biases the
 * Llama-style block has not, parallel attention and MLP, partial rotary
 * embeddings, cross-attention), each with the value that turns the
 * feature on and, where the config class turns it on by default, that
 * default. A config that has one is refused with one line naming the key,
 * never read as the dense model it resembles (a Mixtral config relabelled
 * "mistral" was simulated with its experts ignored).
 *
 * What it is not: a list of every key transformers knows. Keys that do not
 * change the compute (torch_dtype, bos_token_id, pretraining_tp,
 * initializer_range, use_cache, rope_scaling, ...) are not looked at, and
 * a feature flag set to its off value (sliding_window null,
 * attention_bias false, num_local_experts 0) is accepted.
 */
#ifndef OC_MODEL_FEATURES_H
#define OC_MODEL_FEATURES_H

#include "json_util.h"
#include "model.h"

/* 0, or -1 with st naming the first unmodelled feature of o (a config of
 * `model_type`, whose block is `arch`). */
int oc_model_refuse_unmodelled(const struct oc_json_obj *o, const char *model_type,
                               enum oc_arch arch, struct oc_status *st);

/* hidden_act (or activation_function) of a block: 0 when ocsim models it
 * (GELU variants, and SiLU / Swish / SwiGLU, which make the MLP gated; the
 * Llama-style block only SiLU), -1 naming it otherwise. `act` "" is the
 * config class's default `dflt` (NULL: a modelled one). `key` is the
 * field it came from. */
int oc_model_check_activation(const struct oc_json_obj *o, const char *key,
                              const char *act, const char *dflt, enum oc_arch arch,
                              struct oc_status *st);

#endif
