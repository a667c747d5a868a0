#include "reference/layers_backward_reference.h"

#include <cmath>

#include "reference/layers_reference.h"

namespace simd_attention {
namespace {

struct Norm64 {
  const std::vector<double>& gamma;
  const std::vector<double>& beta;
};

// dx of LayerNorm at x given dy, by the chain rule through mean and
// variance written out term by term; d_gamma, d_beta added to.
std::vector<double> LayerNormBackward64(const std::vector<double>& x, size_t d, Norm64 w,
                                        double eps, const std::vector<double>& dy,
                                        std::vector<double>& d_gamma,
                                        std::vector<double>& d_beta) {
  std::vector<double> dx(x.size());
  d_gamma.assign(d, 0.0);
  d_beta.assign(d, 0.0);
  for (size_t r = 0; r < x.size() / d; ++r) {
    const double* xr = &x[r * d];
    const double* g = &dy[r * d];
    double mean = 0, var = 0;
    for (size_t i = 0; i < d; ++i) mean += xr[i];
    mean /= double(d);
    for (size_t i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= double(d);
    const double sigma = std::sqrt(var + eps);
    // y_i = gamma_i (x_i - mean) / sigma + beta_i:
    // dL/dvar = sum_i g_i gamma_i (x_i - mean) (-1/2) sigma^-3,
    // dL/dmean = sum_i -g_i gamma_i / sigma (+ dL/dvar * d var/d mean = 0),
    // dx_i = g_i gamma_i / sigma + dL/dvar 2 (x_i - mean) / d + dL/dmean / d.
    double d_var = 0, d_mean = 0;
    for (size_t i = 0; i < d; ++i) {
      d_var += g[i] * w.gamma[i] * (xr[i] - mean) * -0.5 / (sigma * sigma * sigma);
      d_mean += -g[i] * w.gamma[i] / sigma;
      d_gamma[i] += g[i] * (xr[i] - mean) / sigma;
      d_beta[i] += g[i];
    }
    for (size_t i = 0; i < d; ++i) {
      dx[r * d + i] = g[i] * w.gamma[i] / sigma + d_var * 2 * (xr[i] - mean) / double(d) +
                      d_mean / double(d);
    }
  }
  return dx;
}

std::vector<double> Add(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}

// The sublayers f_i of a layer: forward(in) and backward(in, dy) -> dx.
enum class Sublayer { kSelf, kCross, kFfn };

}  // namespace

double ReferenceActivationDerivative(Activation act, double x) {
  switch (act) {
    case Activation::kRelu:
      return x > 0 ? 1 : 0;
    case Activation::kGeluTanh: {
      const double c = std::sqrt(2 / M_PI);
      const double t = std::tanh(c * (x + 0.044715 * x * x * x));
      return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
    }
    case Activation::kGeluErf:
      return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) +
             x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    case Activation::kSilu: {
      const double s = 1 / (1 + std::exp(-x));
      return s + x * s * (1 - s);
    }
  }
  return 1;
}

LayerBackward64 ReferenceLayerBackward(const LayerConfig& c, const MhaConfig& attention,
                                       const LayerProblem64& p, const MhaOptions& self_options,
                                       const MhaOptions& cross_options,
                                       std::span<const double> d_output) {
  const size_t d = c.d_model, f = c.ffn_dim, rows = p.batch * p.tokens;
  const bool decoder = !p.memory.empty();
  std::vector<Sublayer> sublayers = {Sublayer::kSelf, Sublayer::kFfn};
  if (decoder) sublayers.insert(sublayers.begin() + 1, Sublayer::kCross);
  LayerBackward64 r;
  auto problem = [&](Sublayer s, const std::vector<double>& in) {
    MhaProblem64 m = s == Sublayer::kSelf ? p.self_attention : p.cross_attention;
    m.batch = p.batch;
    m.tq = p.tokens;
    m.tk = s == Sublayer::kSelf ? p.tokens : p.memory_tokens;
    m.query = in;
    m.key = m.value = s == Sublayer::kSelf ? in : p.memory;
    return m;
  };
  auto forward = [&](Sublayer s, const std::vector<double>& in) {
    if (s == Sublayer::kFfn) {
      std::vector<double> h = Linear64(in, rows, d, p.w1, p.b1, f);
      for (double& v : h) v = ReferenceActivation(c.activation, v);
      return Linear64(h, rows, f, p.w2, p.b2, d);
    }
    const MhaOptions& o = s == Sublayer::kSelf ? self_options : cross_options;
    return ReferenceMhaBackward(attention, problem(s, in), o, {}).output;
  };
  auto backward = [&](Sublayer s, const std::vector<double>& in, const std::vector<double>& dy) {
    std::vector<double> dx;
    if (s == Sublayer::kFfn) {
      const std::vector<double> a = Linear64(in, rows, d, p.w1, p.b1, f);
      std::vector<double> h = a;
      for (double& v : h) v = ReferenceActivation(c.activation, v);
      std::vector<double> dh, da;
      LinearBackward64(h, rows, f, p.w2, true, dy, d, dh, r.d_w2, r.d_b2);
      for (size_t i = 0; i < dh.size(); ++i) {
        dh[i] *= ReferenceActivationDerivative(c.activation, a[i]);
      }
      LinearBackward64(in, rows, d, p.w1, true, dh, f, dx, r.d_w1, r.d_b1);
      return dx;
    }
    const bool self = s == Sublayer::kSelf;
    MhaBackward64& g = self ? r.self_attention : r.cross_attention;
    g = ReferenceMhaBackward(attention, problem(s, in), self ? self_options : cross_options, dy);
    if (self) return Add(Add(g.d_query, g.d_key), g.d_value);
    r.d_memory = Add(g.d_key, g.d_value);
    return g.d_query;
  };

  // Forward, keeping each sublayer's LayerNorm input and f's input.
  std::vector<std::vector<double>> norm_in(sublayers.size()), f_in(sublayers.size());
  std::vector<double> h = p.x;
  for (size_t i = 0; i < sublayers.size(); ++i) {
    const Norm64 norm{p.gamma[i], p.beta[i]};
    if (c.norm_first) {
      norm_in[i] = h;
      f_in[i] = ReferenceLayerNorm64(h, d, norm.gamma, norm.beta, c.eps);
      h = Add(h, forward(sublayers[i], f_in[i]));
    } else {
      f_in[i] = h;
      norm_in[i] = Add(h, forward(sublayers[i], h));
      h = ReferenceLayerNorm64(norm_in[i], d, norm.gamma, norm.beta, c.eps);
    }
  }
  r.output = h;
  if (d_output.empty()) return r;

  std::vector<double> g(d_output.begin(), d_output.end());
  for (size_t i = sublayers.size(); i-- > 0;) {
    const Norm64 norm{p.gamma[i], p.beta[i]};
    if (c.norm_first) {
      const std::vector<double> df = backward(sublayers[i], f_in[i], g);
      g = Add(g, LayerNormBackward64(norm_in[i], d, norm, c.eps, df, r.d_gamma[i], r.d_beta[i]));
    } else {
      const std::vector<double> ds =
          LayerNormBackward64(norm_in[i], d, norm, c.eps, g, r.d_gamma[i], r.d_beta[i]);
      g = Add(ds, backward(sublayers[i], f_in[i], ds));
    }
  }
  r.d_input = g;
  return r;
}

}  // namespace simd_attention
