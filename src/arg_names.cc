#include "simd_attention/arg_names.h"

namespace simd_attention {

const ArgNames& CppArgNames() {
  static constexpr ArgNames kNames{
      .d_model = "d_model",
      .num_heads = "num_heads",
      .kdim = "kdim",
      .vdim = "vdim",
      .head_dim = "head_dim",
      .head_dim_v = "head_dim_v",
      .num_kv_heads = "num_kv_heads",
      .rope_rotary_dim = "rope.rotary_dim",
      .rope_base = "rope.base",
      .bias = "bias",
      .ffn_dim = "ffn_dim",
      .eps = "eps",
      .threads = "threads",
      .weights = "weights",
      .cache_type = "cache_type",
      .w_q = "w_q",
      .w_k = "w_k",
      .w_v = "w_v",
      .w_o = "w_o",
      .b_q = "b_q",
      .b_k = "b_k",
      .b_v = "b_v",
      .b_o = "b_o",
      .key_padding_mask = "key_padding_mask",
      .attn_mask = "attn_mask",
      .memory_key_padding_mask = "memory_key_padding_mask",
      .max_length = "max_length",
      .self_attention = "self_attention",
      .cross_attention = "cross_attention",
      .layer_norm_gamma = "gamma",
      .layer_norm_beta = "beta",
      .layer_norm_eps = "eps",
      .query_heads = "q.heads",
      .kv_heads = "k.heads",
      .causal = "causal",
      .scale = "scale",
      .softcap = "softcap",
      .window = "window",
      .attn_mask_shape = "attn_mask_shape",
      .bool_mask = "bool_mask",
      .bool_mask_shape = "bool_mask_shape",
      .kv_lengths = "kv_lengths",
      .d_output = "d_output",
      .weight_decay = "weight_decay",
  };
  return kNames;
}

}  // namespace simd_attention
