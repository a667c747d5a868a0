// The names error messages give arguments, config fields and options.
//
// Every message is composed once, in C++, with the names its reader knows:
// the C++ API's own (CppArgNames(), the default) or a binding's, which it
// passes in the config (the JS package passes its camelCase names, defined
// in bindings/). No layer above rewrites a message.
#pragma once

namespace simd_attention {

struct ArgNames {
  // MhaConfig, LayerConfig fields (messages prefix "config.")
  const char* d_model;
  const char* num_heads;
  const char* kdim;
  const char* vdim;
  const char* head_dim;
  const char* head_dim_v;
  const char* num_kv_heads;
  const char* rope_rotary_dim;
  const char* rope_base;
  const char* bias;
  const char* ffn_dim;
  const char* num_experts;
  const char* experts_per_token;
  const char* eps;
  const char* threads;
  const char* weights;
  const char* cache_type;
  const char* qk_norm_kind;
  const char* qk_norm_eps;
  // MhaWeights
  const char* w_q;
  const char* w_k;
  const char* w_v;
  const char* w_o;
  const char* b_q;
  const char* b_k;
  const char* b_v;
  const char* b_o;
  const char* q_norm;
  const char* k_norm;
  // MhaOptions
  const char* key_padding_mask;
  const char* attn_mask;
  // DecoderOptions
  const char* memory_key_padding_mask;
  // CreateKVCache
  const char* max_length;
  // The layers' parts: their attentions' weights are named
  // "<self_attention>.<w_q>".
  const char* self_attention;
  const char* cross_attention;
  // LayerNormForward's arguments
  const char* layer_norm_gamma;
  const char* layer_norm_beta;
  const char* layer_norm_eps;
  // ScaledDotProductAttention
  const char* query_heads;  // heads of a token-major q
  const char* kv_heads;     // heads of a token-major k and v
  const char* causal;
  const char* scale;
  const char* softcap;
  const char* window;
  const char* attn_mask_shape;
  const char* bool_mask;
  const char* bool_mask_shape;
  const char* kv_lengths;
  const char* query_offset;
  // Training: Backward's argument, an optimizer option, the tiny model's
  // config fields, its row length and weight.
  const char* d_output;
  const char* weight_decay;
  const char* vocab;
  const char* num_layers;
  // TransformerStack's config fields
  const char* layer_windows;
  const char* final_norm;
  const char* max_tokens;
  const char* tokens_per_row;
  const char* unembedding_bias;
};

// w_q, key_padding_mask, config.d_model ...: the C++ API's names.
const ArgNames& CppArgNames();

// The names of a config's messages (any struct with a `names` field): its
// own, or CppArgNames(), which it then holds, where it gives none.
template <class Config>
const ArgNames& ResolveNames(Config& c) {
  if (c.names == nullptr) c.names = &CppArgNames();
  return *c.names;
}

}  // namespace simd_attention
