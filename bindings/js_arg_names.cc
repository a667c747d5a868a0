#include "js_arg_names.h"

namespace simd_attention::bindings {

const ArgNames& JsArgNames() {
  static constexpr ArgNames kNames{
      .d_model = "dModel",
      .num_heads = "numHeads",
      .kdim = "kDim",
      .vdim = "vDim",
      .head_dim = "headDim",
      .head_dim_v = "headDimV",
      .num_kv_heads = "numKvHeads",
      .rope_rotary_dim = "rope.rotaryDim",
      .rope_base = "rope.base",
      .bias = "bias",
      .ffn_dim = "ffnDim",
      .eps = "eps",
      .threads = "threads",
      .weights = "weights",
      .cache_type = "cacheType",
      .w_q = "wQ",
      .w_k = "wK",
      .w_v = "wV",
      .w_o = "wO",
      .b_q = "bQ",
      .b_k = "bK",
      .b_v = "bV",
      .b_o = "bO",
      .key_padding_mask = "options.keyPaddingMask",
      .attn_mask = "options.attnMask",
      .memory_key_padding_mask = "options.memoryKeyPaddingMask",
      .max_length = "maxLength",
      .self_attention = "selfAttention",
      .cross_attention = "crossAttention",
      .layer_norm_gamma = "options.gamma",
      .layer_norm_beta = "options.beta",
      .layer_norm_eps = "options.eps",
      .query_heads = "options.numHeads",
      .kv_heads = "options.numKvHeads",
      .causal = "options.causal",
      .scale = "options.scale",
      .softcap = "options.softcap",
      .window = "options.window",
      .attn_mask_shape = "options.attnMask.shape",
      .bool_mask = "options.boolMask",
      .bool_mask_shape = "options.boolMask.shape",
      .kv_lengths = "options.kvLengths",
      .d_output = "dOutput",
      .weight_decay = "weightDecay",
  };
  return kNames;
}

}  // namespace simd_attention::bindings
