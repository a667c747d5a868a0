// The fields of the configs of the objects holding attentions (MhaConfig,
// LayerConfig, BlockConfig), each named once with the key the JS package
// gives it (as gemma.cpp's VisitFields). The JS glue reads and reports
// configs through this list, and C++ builds one config from another through
// it (a block's from a layer's, an attention's from a block's), so a field
// added here reaches both.
#pragma once

namespace simd_attention {

// The JS key of cache_type, which the glue tells apart by its address (its
// names are those of a KV cache's types, not of a weight's).
inline constexpr char kCacheTypeKey[] = "cacheType";

// Calls visit(key, c.field...) for each field of `c`: those every config
// holding attentions has, then those each of `c` has, in this order (as
// info() lists them).
template <class Visit, class... Config>
void VisitConfigFields(const Visit& visit, Config&... c) {
  visit("dModel", c.d_model...);
  visit("numHeads", c.num_heads...);
  visit("numKvHeads", c.num_kv_heads...);
  visit("rope", c.rope...);
  visit("backend", c.backend...);
  visit("threads", c.threads...);
  visit("weights", c.weights...);
  visit(kCacheTypeKey, c.cache_type...);
  if constexpr ((requires { c.kdim; } && ...)) visit("kDim", c.kdim...);
  if constexpr ((requires { c.vdim; } && ...)) visit("vDim", c.vdim...);
  if constexpr ((requires { c.head_dim; } && ...)) visit("headDim", c.head_dim...);
  if constexpr ((requires { c.head_dim_v; } && ...)) visit("headDimV", c.head_dim_v...);
  if constexpr ((requires { c.ffn_dim; } && ...)) visit("ffnDim", c.ffn_dim...);
  if constexpr ((requires { c.norm_first; } && ...)) visit("normFirst", c.norm_first...);
  if constexpr ((requires { c.activation; } && ...)) visit("activation", c.activation...);
  if constexpr ((requires { c.norm; } && ...)) visit("norm", c.norm...);
  if constexpr ((requires { c.eps; } && ...)) visit("eps", c.eps...);
  if constexpr ((requires { c.qk_norm; } && ...)) visit("qkNorm", c.qk_norm...);
  if constexpr ((requires { c.bias; } && ...)) visit("bias", c.bias...);
  if constexpr ((requires { c.num_experts; } && ...)) {
    visit("numExperts", c.num_experts...);
    visit("expertsPerToken", c.experts_per_token...);
    visit("normalizeTopK", c.normalize_top_k...);
  }
}

// `to` with every field it shares with `from` and its message names
// copied; its other fields as they were.
template <class From, class To>
void CopySharedFields(const From& from, To& to) {
  VisitConfigFields([](const char*, const auto& source, auto& target) { target = source; }, from,
                    to);
  to.names = from.names;
}

}  // namespace simd_attention
