// The module function behind attention() of web/src/scaled-dot-product-
// attention.js: ScaledDotProductAttention on heads given from JS. The JS side
// has checked types (Float32Array, Uint8Array, integers, strings) and passes
// {data, shape} tensors and the options under the user's names; shapes and
// values are judged here and in the C++ API, with the package's names.
#include <emscripten/bind.h>

#include <string>
#include <vector>

#include "glue.h"
#include "js_arg_names.h"
#include "simd_attention/scaled_dot_product_attention.h"
#include "training/training_module.h"
#include "checks/validate.h"

namespace simd_attention::bindings {
namespace {

// q, k or v: 4-D [B, H, T, d] as it is, 3-D [B, T, H*d] split into `heads`.
struct JsHeads {
  std::vector<float> data;
  HeadsTensor heads;
  JsHeads(const char* what, const val& js, size_t rank, size_t count, const char* count_name)
      : data(CopyFloats(js["data"])) {
    const std::vector<size_t> s = Sizes(std::string(what) + ".shape", js["shape"]);
    if (s.size() != rank) {
      throw std::invalid_argument(std::string(what) + ".shape: expected " +
                                  std::to_string(rank) + " dimensions as q has, got " +
                                  std::to_string(s.size()));
    }
    heads = rank == 4 ? HeadsTensor{data, s[0], s[1], s[2], s[3]}
                      : SplitHeads(data, s[0], s[1], s[2], count, what, count_name);
  }
};

val Attention(const val& q_js, const val& k_js, const val& v_js, const val& o) {
  // Attention on heads projected elsewhere has no backward here: the
  // training module leaves it out (training_module.h).
  if constexpr (kTrainingModule) {
    return Guard([] { RefuseInTrainingModule("attention() calls"); });
  }
  return Guard([&] {
    const ArgNames& n = JsArgNames();
    const size_t rank = q_js["shape"]["length"].as<size_t>();
    if (rank != 3 && rank != 4) {
      throw std::invalid_argument("q.shape: expected [B, H, Tq, d] (head-major) or "
                                  "[B, Tq, H * d] (token-major), got " +
                                  std::to_string(rank) + " dimensions");
    }
    const size_t q_heads = SizeOf(o, "numHeads");
    const size_t kv_heads = Given(o["numKvHeads"]) ? SizeOf(o, "numKvHeads") : q_heads;
    const JsHeads q("q", q_js, rank, q_heads, n.query_heads);
    const JsHeads k("k", k_js, rank, kv_heads, n.kv_heads);
    const JsHeads v("v", v_js, rank, kv_heads, n.kv_heads);
    JsForwardOptions<SdpaOptions> js_options(o);
    SdpaOptions& options = js_options.options;
    options.layout = rank == 4 ? HeadLayout::kHeadMajor : HeadLayout::kTokenMajor;
    options.causal = ParseCausal(o["causal"].as<std::string>());

    // threads 0: the module's (one thread, or a threaded build's pool).
    ScaledDotProductAttention sdpa({.backend = ParseBackend(o["backend"].as<std::string>()),
                                    .threads = 0, .names = &n});
    SdpaResult r = sdpa.Forward(q.heads, k.heads, v.heads, options);
    val out = SizesToJs({{"batch", r.batch}, {"heads", r.heads}, {"tq", r.tq}, {"tk", r.tk},
                         {"headDimV", r.head_dim_v}});
    SetAttentionArrays(out, r, options);
    return out;
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(simd_attention_sdpa) {
  emscripten::function("attention", &Attention);
}

}  // namespace simd_attention::bindings
