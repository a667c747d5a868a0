// Embind class behind MultiHeadAttention of web/index.js. The JS layer has
// already checked types (Float32Array, integers, booleans) and normalised
// shapes to {data, batch, tokens, features}; shapes and values are checked
// here by the C++ API, whose messages reach JS unchanged (see glue.h).
#include "mha_binding.h"

#include <emscripten/bind.h>

#include <memory>
#include <string>
#include <utility>

#include "glue.h"
#include "held_bytes.h"
#include "js_arg_names.h"
#include "kv_binding.h"
#include "register_class.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/pytorch_weights.h"

namespace simd_attention::bindings {

MhaBinding::MhaBinding(const val& config)
    : Owned("MultiHeadAttention", &ConfigFromJs<MhaConfig>, config) {}

val MhaBinding::info() const {
  return Guard([&] {
    const MhaConfig& c = Checked().config();
    return ConfigInfo(c, c.head_dim, Checked().kernels());
  });
}

val MhaBinding::setWeights(const val& w) {
  return Guard([&] {
    MultiHeadAttention& mha = Checked();
    mha.SetWeights(JsMhaWeights(w).weights);
    CountWeights();
  });
}

val MhaBinding::setWeightsFromPyTorch(const val& state) {
  return Guard([&] {
    MultiHeadAttention& mha = Checked();
    std::vector<float> copies[7];
    const char* keys[7] = {"in_proj_weight", "q_proj_weight",   "k_proj_weight", "v_proj_weight",
                           "in_proj_bias",   "out_proj_weight", "out_proj_bias"};
    TorchMhaState s;
    std::optional<std::span<const float>>* entries[7] = {
        &s.in_proj_weight, &s.q_proj_weight,   &s.k_proj_weight, &s.v_proj_weight,
        &s.in_proj_bias,   &s.out_proj_weight, &s.out_proj_bias};
    // A matrix given as float16/bfloat16 bits goes through the conversion
    // as integers, which a float holds exactly, so that its checks and
    // transposes apply to the bits themselves.
    bool bits[7] = {};
    for (int i = 0; i < 7; ++i) {
      const val v = state[keys[i]];
      if (!Given(v)) continue;
      JsMatrix m(v);
      bits[i] = m.form == JsMatrix::Form::kBits;
      const std::span<const uint16_t> b = m.stored().bits;
      copies[i] = std::move(m.floats);
      if (bits[i]) copies[i].resize(b.size());
      for (size_t k = 0; k < b.size(); ++k) copies[i][k] = b[k];
      *entries[i] = std::span<const float>(copies[i]);
    }
    const OwnedMhaWeights w = FromTorchState(mha.config(), s);
    MhaWeights weights = w.weights();
    // W_Q, W_K, W_V, W_O converted from bits go back to bits.
    const bool from_bits[4] = {bits[0] || bits[1], bits[0] || bits[2], bits[0] || bits[3], bits[5]};
    const std::vector<float>* converted[4] = {&w.w_q, &w.w_k, &w.w_v, &w.w_o};
    std::span<const float>* floats[4] = {&weights.w_q, &weights.w_k, &weights.w_v, &weights.w_o};
    StoredMatrix* stored[4] = {&weights.stored_w_q, &weights.stored_w_k, &weights.stored_w_v,
                               &weights.stored_w_o};
    std::unique_ptr<uint16_t[]> narrow[4];
    for (int m = 0; m < 4; ++m) {
      if (!from_bits[m]) continue;
      const std::vector<float>& f = *converted[m];
      narrow[m].reset(new uint16_t[f.size()]);
      for (size_t k = 0; k < f.size(); ++k) narrow[m][k] = static_cast<uint16_t>(f[k]);
      stored[m]->bits = {narrow[m].get(), f.size()};
      *floats[m] = {};
    }
    mha.SetWeights(weights);
    CountWeights();
  });
}

val MhaBinding::forward(const val& query, const val& key, const val& value, const val& options) {
  return Guard([&] {
    MultiHeadAttention& mha = Checked();
    const JsForwardOptions<MhaOptions> o(options);
    const Input q(query);
    MhaResult r;
    if (!Given(key)) {
      r = mha.Forward(q.tensor, o.options);
    } else {
      const Input k(key);
      if (!Given(value)) {
        r = mha.Forward(q.tensor, k.tensor, k.tensor, o.options);
      } else {
        const Input v(value);
        r = mha.Forward(q.tensor, k.tensor, v.tensor, o.options);
      }
    }
    return ResultToJs(std::move(r), o.options);
  });
}

val MhaBinding::forwardPrecomputed(const val& query, const PrecomputedBinding& kv,
                                   const val& options) {
  return Guard([&] {
    MultiHeadAttention& mha = Checked();
    const JsForwardOptions<MhaOptions> o(options);
    const Input q(query);
    return ResultToJs(mha.Forward(q.tensor, kv.Checked(), o.options), o.options);
  });
}

val MhaBinding::precomputeKeyValue(PrecomputedBinding& into, const val& memory, const val& mask) {
  return into.Fill(memory, mask, [&](const Tensor3& m, const std::vector<uint8_t>& bytes) {
    return Checked().PrecomputeKeyValue(m, bytes);
  });
}

val MhaBinding::createKVCache(KVCacheBinding& into, size_t batch, size_t max_length) {
  return into.Fill([&] { return Checked().CreateKVCache(batch, max_length); });
}

val MhaBinding::forwardIncremental(const val& x, KVCacheBinding& cache, const val& options) {
  return Guard([&] {
    MultiHeadAttention& mha = Checked();
    KVCache& c = cache.Checked();
    const JsForwardOptions<MhaOptions> o(options);
    const Input in(x);
    return ResultToJs(mha.ForwardIncremental(in.tensor, c, o.options), o.options);
  });
}

void MhaBinding::CountWeights() {
  weight_bytes_.Set(Checked().config().weights, Checked().WeightBytes());
}

EMSCRIPTEN_BINDINGS(simd_attention_mha) {
  auto mha = RegisterConfiguredClass<MhaBinding>("MhaBinding")
                 .function("setWeightsFromPyTorch", &MhaBinding::setWeightsFromPyTorch)
                 .function("precomputeKeyValue", &MhaBinding::precomputeKeyValue);
  RegisterDecoding(mha);
}

}  // namespace simd_attention::bindings
