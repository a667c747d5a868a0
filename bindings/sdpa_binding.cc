// The module function behind attention() of web/src/scaled-dot-product-
// attention.js: ScaledDotProductAttention on heads given from JS. The JS side
// has checked types (Float32Array, Uint8Array, integers, strings) and passes
// {data, shape} tensors and the options under the user's names; shapes and
// values are judged here and in the C++ API, with the package's names.
#include <emscripten/bind.h>

#include <string>
#include <vector>

#include "checked_size.h"
#include "glue.h"
#include "js_arg_names.h"
#include "simd_attention/scaled_dot_product_attention.h"

namespace simd_attention::bindings {
namespace {

// A JS array of integers (types checked by the JS side) that are at least
// `min` and safe integers (|x| < 2^53), so that they convert exactly.
std::vector<double> Integers(const std::string& name, const val& array, double min) {
  std::vector<double> out(array["length"].as<size_t>());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = array[i].as<double>();
    if (!(out[i] >= min && out[i] < 9007199254740992.0)) {
      throw std::invalid_argument(name + "[" + std::to_string(i) + "]: expected an integer in [" +
                                  NumberString(min) + ", 2^53), got " + NumberString(out[i]));
    }
  }
  return out;
}

std::vector<size_t> Sizes(const std::string& name, const val& array) {
  const std::vector<double> numbers = Integers(name, array, 0);
  return std::vector<size_t>(numbers.begin(), numbers.end());
}

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
    SdpaOptions options;
    options.layout = rank == 4 ? HeadLayout::kHeadMajor : HeadLayout::kTokenMajor;
    options.causal = ParseCausal(o["causal"].as<std::string>());
    if (Given(o["scale"])) options.scale = o["scale"].as<double>();
    if (Given(o["softcap"])) options.softcap = o["softcap"].as<double>();
    if (Given(o["window"])) {
      const std::vector<double> w = Integers(n.window, o["window"], -9007199254740991.0);
      options.window = {static_cast<int64_t>(w[0]), static_cast<int64_t>(w[1])};
    }
    const std::vector<float> attn_mask = CopyFloatsIfGiven(o, "attnMask");
    options.attn_mask = attn_mask;
    if (Given(o["attnMaskShape"])) {
      options.attn_mask_shape = Sizes(n.attn_mask_shape, o["attnMaskShape"]);
    }
    const std::vector<uint8_t> bool_mask = CopyBytesIfGiven(o, "boolMask");
    options.bool_mask = bool_mask;
    if (Given(o["boolMaskShape"])) {
      options.bool_mask_shape = Sizes(n.bool_mask_shape, o["boolMaskShape"]);
    }
    const std::vector<uint8_t> key_padding = CopyBytesIfGiven(o, "keyPaddingMask");
    options.key_padding_mask = key_padding;
    const std::vector<size_t> lengths =
        Given(o["kvLengths"]) ? Sizes(n.kv_lengths, o["kvLengths"]) : std::vector<size_t>{};
    options.kv_lengths = lengths;
    options.need_weights = o["returnAttnWeights"].as<bool>();
    options.need_scores = o["returnScores"].as<bool>();

    ScaledDotProductAttention sdpa(
        {.backend = ParseBackend(o["backend"].as<std::string>()), .names = &n});
    const SdpaResult r = sdpa.Forward(q.heads, k.heads, v.heads, options);
    val out = val::object();
    out.set("batch", r.batch);
    out.set("heads", r.heads);
    out.set("tq", r.tq);
    out.set("tk", r.tk);
    out.set("headDimV", r.head_dim_v);
    out.set("output", ToFloat32Array(r.output));
    if (options.need_weights) out.set("attnWeights", ToFloat32Array(r.attn_weights));
    if (options.need_scores) out.set("scores", ToFloat32Array(r.scores));
    return out;
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(simd_attention_sdpa) {
  emscripten::function("attention", &Attention);
}

}  // namespace simd_attention::bindings
