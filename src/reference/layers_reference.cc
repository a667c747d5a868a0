#include "reference/layers_reference.h"

#include <cmath>

namespace simd_attention {
namespace {

MhaConfig AttentionConfig(const LayerConfig& c) {
  MhaConfig m;
  m.d_model = m.kdim = m.vdim = c.d_model;
  m.num_heads = c.num_heads;
  m.head_dim = m.head_dim_v = c.d_model / c.num_heads;
  m.num_kv_heads = c.num_kv_heads != 0 ? c.num_kv_heads : c.num_heads;
  m.rope = c.rope;
  if (m.rope.style != RopeStyle::kNone && m.rope.rotary_dim == 0) m.rope.rotary_dim = m.head_dim;
  return m;
}

std::vector<float> Add(std::span<const float> a, std::span<const float> b) {
  std::vector<float> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}

// post-LN: norm(x + f(x)); pre-LN: x + f(norm(x)).
template <class F>
std::vector<float> Residual(const LayerConfig& c, const NormWeights& norm,
                            const std::vector<float>& x, F&& f) {
  if (c.norm_first) return Add(x, f(ReferenceLayerNorm(x, c.d_model, norm, c.eps)));
  return ReferenceLayerNorm(Add(x, f(x)), c.d_model, norm, c.eps);
}

}  // namespace

double ReferenceActivation(Activation act, double x) {
  switch (act) {
    case Activation::kRelu:
      return x > 0 ? x : 0;
    case Activation::kGeluTanh:
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case Activation::kGeluErf:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case Activation::kSilu:
      return x / (1 + std::exp(-x));
  }
  return x;
}

std::vector<double> ReferenceLayerNorm64(std::span<const double> x, size_t d,
                                         std::span<const double> gamma,
                                         std::span<const double> beta, double eps) {
  std::vector<double> out(x.size());
  for (size_t r = 0; r < x.size() / d; ++r) {
    double mean = 0, var = 0;
    for (size_t i = 0; i < d; ++i) mean += x[r * d + i];
    mean /= double(d);
    for (size_t i = 0; i < d; ++i) var += (x[r * d + i] - mean) * (x[r * d + i] - mean);
    const double inv = 1 / std::sqrt(var / double(d) + eps);
    for (size_t i = 0; i < d; ++i) out[r * d + i] = (x[r * d + i] - mean) * inv * gamma[i] + beta[i];
  }
  return out;
}

std::vector<float> ReferenceLayerNorm(std::span<const float> x, size_t d,
                                      const NormWeights& w, float eps) {
  const std::vector<double> x64(x.begin(), x.end()), gamma(w.gamma.begin(), w.gamma.end()),
      beta(w.beta.begin(), w.beta.end());
  const std::vector<double> out = ReferenceLayerNorm64(x64, d, gamma, beta, eps);
  return {out.begin(), out.end()};
}

std::vector<float> ReferenceFeedForward(std::span<const float> x, size_t d,
                                        size_t ffn_dim, Activation act,
                                        const FfnWeights& w) {
  const size_t rows = x.size() / d;
  std::vector<float> out(rows * d);
  std::vector<double> hidden(ffn_dim);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < ffn_dim; ++j) {
      double acc = w.b1[j];
      for (size_t i = 0; i < d; ++i) acc += double(x[r * d + i]) * w.w1[i * ffn_dim + j];
      hidden[j] = ReferenceActivation(act, acc);
    }
    for (size_t n = 0; n < d; ++n) {
      double acc = w.b2[n];
      for (size_t j = 0; j < ffn_dim; ++j) acc += hidden[j] * w.w2[j * d + n];
      out[r * d + n] = float(acc);
    }
  }
  return out;
}

std::vector<float> ReferenceEncoderLayer(const LayerConfig& c, const MhaWeights& attention,
                                         const FfnWeights& ffn, const NormWeights& norm1,
                                         const NormWeights& norm2, const Tensor3& x,
                                         const EncoderOptions& options) {
  MhaOptions mha = SelfAttentionMhaOptions(options.self_attention);
  mha.causal = options.causal;
  mha.key_padding_mask = options.key_padding_mask;
  std::vector<float> h(x.data.begin(), x.data.end());
  h = Residual(c, norm1, h, [&](const std::vector<float>& in) {
    const Tensor3 t{in, x.batch, x.tokens, x.features};
    return ReferenceAttention(AttentionConfig(c), attention, t, t, t, mha).output;
  });
  return Residual(c, norm2, h, [&](const std::vector<float>& in) {
    return ReferenceFeedForward(in, c.d_model, c.ffn_dim, c.activation, ffn);
  });
}

std::vector<float> ReferenceDecoderLayer(
    const LayerConfig& c, const MhaWeights& self_attention,
    const MhaWeights& cross_attention, const FfnWeights& ffn,
    const NormWeights& norm1, const NormWeights& norm2, const NormWeights& norm3,
    const Tensor3& x, const Tensor3& memory, const DecoderOptions& options) {
  MhaOptions self = SelfAttentionMhaOptions(options.self_attention);
  self.causal = options.causal;
  self.key_padding_mask = options.key_padding_mask;
  MhaOptions cross;
  cross.key_padding_mask = options.memory_key_padding_mask;
  std::vector<float> h(x.data.begin(), x.data.end());
  h = Residual(c, norm1, h, [&](const std::vector<float>& in) {
    const Tensor3 t{in, x.batch, x.tokens, x.features};
    return ReferenceAttention(AttentionConfig(c), self_attention, t, t, t, self).output;
  });
  h = Residual(c, norm2, h, [&](const std::vector<float>& in) {
    const Tensor3 t{in, x.batch, x.tokens, x.features};
    MhaConfig cross_config = AttentionConfig(c);
    cross_config.rope = {};  // the memory has no positions relative to the queries
    return ReferenceAttention(cross_config, cross_attention, t, memory, memory, cross)
        .output;
  });
  return Residual(c, norm3, h, [&](const std::vector<float>& in) {
    return ReferenceFeedForward(in, c.d_model, c.ffn_dim, c.activation, ffn);
  });
}

}  // namespace simd_attention
