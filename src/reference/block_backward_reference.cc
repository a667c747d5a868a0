#include "reference/block_backward_reference.h"

#include <cmath>

#include "reference/layers_backward_reference.h"
#include "reference/layers_reference.h"
#include "reference/linear_reference.h"
#include "reference/moe_reference.h"

namespace simd_attention {
namespace {

using Vec = std::vector<double>;

Vec Add(const Vec& a, const Vec& b) {
  Vec out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
  return out;
}

// A row's centre (its mean for LayerNorm, 0 for the RMSNorm kinds) and
// 1 / sqrt(mean((x - centre)^2) + eps).
void Moments(const BlockConfig& c, const double* x, double& centre, double& inv) {
  const size_t d = c.d_model;
  centre = 0;
  if (Traits(c.norm).has_beta) {
    for (size_t i = 0; i < d; ++i) centre += x[i];
    centre /= double(d);
  }
  double spread = 0;
  for (size_t i = 0; i < d; ++i) spread += (x[i] - centre) * (x[i] - centre);
  inv = 1 / std::sqrt(spread / double(d) + c.eps);
}

double Scale(const BlockConfig& c, const Vec& gamma, size_t i) {
  return (Traits(c.norm).plus_one ? 1.0 : 0.0) + gamma[i];
}

// y_i = s_i (x_i - centre) inv + beta_i, s = gamma (+ 1 for Gemma's kind).
Vec Norm(const BlockConfig& c, const Vec& x, const Vec& gamma, const Vec& beta) {
  const size_t d = c.d_model;
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / d; ++r) {
    const double* xr = &x[r * d];
    double centre, inv;
    Moments(c, xr, centre, inv);
    for (size_t i = 0; i < d; ++i) {
      y[r * d + i] = Scale(c, gamma, i) * (xr[i] - centre) * inv + (beta.empty() ? 0 : beta[i]);
    }
  }
  return y;
}

// dx given dy, by the chain rule through the centre and the variance term
// by term (the centre's terms only where it is the mean); d_gamma (that of
// the stored gamma: d s / d gamma = 1) and d_beta (with a shift) summed.
Vec NormBackward(const BlockConfig& c, const Vec& x, const Vec& gamma, const Vec& dy,
                 Vec& d_gamma, Vec& d_beta) {
  const size_t d = c.d_model;
  const bool mean = Traits(c.norm).has_beta;
  Vec dx(x.size());
  d_gamma.assign(d, 0.0);
  d_beta.assign(mean ? d : 0, 0.0);
  for (size_t r = 0; r < x.size() / d; ++r) {
    const double* xr = &x[r * d];
    const double* g = &dy[r * d];
    double centre, inv;
    Moments(c, xr, centre, inv);
    // var = mean((x - centre)^2), inv = (var + eps)^-1/2:
    // dL/dvar = sum_i g_i s_i (x_i - centre) (-1/2) inv^3,
    // dL/dcentre = sum_i -g_i s_i inv (its var term is 0),
    // dx_i = g_i s_i inv + dL/dvar 2 (x_i - centre) / d + dL/dcentre / d.
    double d_var = 0, d_centre = 0;
    for (size_t i = 0; i < d; ++i) {
      const double s = Scale(c, gamma, i);
      d_var += g[i] * s * (xr[i] - centre) * -0.5 * inv * inv * inv;
      d_centre += -g[i] * s * inv;
      d_gamma[i] += g[i] * (xr[i] - centre) * inv;
      if (mean) d_beta[i] += g[i];
    }
    for (size_t i = 0; i < d; ++i) {
      dx[r * d + i] = g[i] * Scale(c, gamma, i) * inv + d_var * 2 * (xr[i] - centre) / double(d) +
                      (mean ? d_centre / double(d) : 0.0);
    }
  }
  return dx;
}

}  // namespace

BlockBackward64 ReferenceBlockBackward(const BlockConfig& c, const MhaConfig& attention,
                                       const BlockProblem64& p, const MhaOptions& self_options,
                                       const MhaOptions& cross_options,
                                       std::span<const double> d_output) {
  const size_t d = c.d_model, f = c.ffn_dim, rows = p.batch * p.tokens;
  const size_t n = c.sublayers.size();
  BlockBackward64 r;
  r.sublayers.resize(n);
  const auto self = [&](size_t k) { return c.sublayers[k].mixer == MixerKind::kSelfAttention; };
  // Cross-attention keeps no rotary positions or QK-norm (the block's).
  MhaConfig cross_attention = attention;
  cross_attention.rope = {};
  cross_attention.qk_norm = {};
  const auto config = [&](size_t k) -> const MhaConfig& {
    return self(k) ? attention : cross_attention;
  };
  const auto problem = [&](size_t k, const Vec& in) {
    MhaProblem64 m = p.sublayers[k].attention;
    m.batch = p.batch;
    m.tq = p.tokens;
    m.tk = self(k) ? p.tokens : p.memory_tokens;
    m.query = in;
    m.key = m.value = self(k) ? in : p.memory;
    m.key_pos0 = self(k) ? self_options.position_offset : 0;
    return m;
  };
  const auto gated_parts = [&](const SublayerProblem64& w, const Vec& in, Vec& gate, Vec& up) {
    gate = Linear64(in, rows, d, w.w_gate, w.b_gate, f);
    up = Linear64(in, rows, d, w.w_up, w.b_up, f);
  };
  const auto gated = [&](const SublayerProblem64& w, const Vec& in) {
    Vec gate, up;
    gated_parts(w, in, gate, up);
    for (size_t i = 0; i < gate.size(); ++i) {
      gate[i] = ReferenceActivation(c.activation, gate[i]) * up[i];
    }
    return Linear64(gate, rows, f, w.w_down, w.b_down, d);
  };
  // dx given dy; the weights' gradients into g.
  const auto gated_backward = [&](const SublayerProblem64& w, const Vec& in, const Vec& dy,
                                  SublayerBackward64& g) {
    Vec gate, up, dx;
    gated_parts(w, in, gate, up);
    Vec h(gate.size()), dh;
    for (size_t i = 0; i < h.size(); ++i) {
      h[i] = ReferenceActivation(c.activation, gate[i]) * up[i];
    }
    LinearBackward64(h, rows, f, w.w_down, !w.b_down.empty(), dy, d, dh, g.d_w_down, g.d_b_down);
    Vec d_gate(h.size()), d_up(h.size()), dx_up;
    for (size_t i = 0; i < h.size(); ++i) {
      d_gate[i] = dh[i] * up[i] * ReferenceActivationDerivative(c.activation, gate[i]);
      d_up[i] = dh[i] * ReferenceActivation(c.activation, gate[i]);
    }
    LinearBackward64(in, rows, d, w.w_gate, !w.b_gate.empty(), d_gate, f, dx, g.d_w_gate,
                     g.d_b_gate);
    LinearBackward64(in, rows, d, w.w_up, !w.b_up.empty(), d_up, f, dx_up, g.d_w_up, g.d_b_up);
    return Add(dx, dx_up);
  };
  const size_t experts = c.num_experts, top_k = c.experts_per_token;
  const auto route = [&](const SublayerProblem64& w, const Vec& in) {
    return RouteMoe64(Linear64(in, rows, d, w.router, Vec{}, experts), rows, experts, top_k,
                      c.normalize_top_k);
  };
  const auto mixer = [&](size_t k, const Vec& in) -> Vec {
    const SublayerProblem64& w = p.sublayers[k];
    switch (c.sublayers[k].mixer) {
      case MixerKind::kSelfAttention:
      case MixerKind::kCrossAttention:
        return ReferenceMhaBackward(config(k), problem(k, in),
                                    self(k) ? self_options : cross_options, {})
            .output;
      case MixerKind::kFeedForward: {
        Vec h = Linear64(in, rows, d, w.w1, w.b1, f);
        for (double& v : h) v = ReferenceActivation(c.activation, v);
        return Linear64(h, rows, f, w.w2, w.b2, d);
      }
      case MixerKind::kGatedFeedForward:
        return gated(w, in);
      case MixerKind::kMixtureOfExperts: {
        const MoeRouting64 m = route(w, in);
        Vec out(rows * d, 0.0);
        for (size_t e = 0; e < experts; ++e) {  // every expert on every row, for brevity
          const Vec y = gated(w.experts[e], in);
          for (size_t j = 0; j < rows * top_k; ++j) {
            const size_t row = j / top_k * d;
            if (m.chosen[j] != e) continue;
            for (size_t i = 0; i < d; ++i) out[row + i] += m.weights[j] * y[row + i];
          }
        }
        return out;
      }
    }
    return {};
  };
  // dx at the mixer's input given dy at its output; its weights' gradients.
  const auto mixer_backward = [&](size_t k, const Vec& in, const Vec& dy) -> Vec {
    const SublayerProblem64& w = p.sublayers[k];
    SublayerBackward64& g = r.sublayers[k];
    Vec dx;
    switch (c.sublayers[k].mixer) {
      case MixerKind::kSelfAttention:
      case MixerKind::kCrossAttention: {
        g.attention = ReferenceMhaBackward(config(k), problem(k, in),
                                           self(k) ? self_options : cross_options, dy);
        const MhaBackward64& a = g.attention;
        if (self(k)) return Add(Add(a.d_query, a.d_key), a.d_value);
        if (r.d_memory.empty()) r.d_memory.assign(a.d_key.size(), 0.0);
        r.d_memory = Add(r.d_memory, Add(a.d_key, a.d_value));
        return a.d_query;
      }
      case MixerKind::kFeedForward: {
        const Vec pre = Linear64(in, rows, d, w.w1, w.b1, f);
        Vec h = pre, dh;
        for (double& v : h) v = ReferenceActivation(c.activation, v);
        LinearBackward64(h, rows, f, w.w2, !w.b2.empty(), dy, d, dh, g.d_w2, g.d_b2);
        for (size_t i = 0; i < dh.size(); ++i) {
          dh[i] *= ReferenceActivationDerivative(c.activation, pre[i]);
        }
        LinearBackward64(in, rows, d, w.w1, !w.b1.empty(), dh, f, dx, g.d_w1, g.d_b1);
        return dx;
      }
      case MixerKind::kGatedFeedForward:
        return gated_backward(w, in, dy, g);
      case MixerKind::kMixtureOfExperts: {
        const MoeRouting64 m = route(w, in);
        // Each expert's output gradient (its weight times dy, on the rows
        // that chose it) and the weights' gradients dy . y_e.
        Vec dw(rows * top_k, 0.0);
        dx.assign(rows * d, 0.0);
        g.experts.resize(experts);
        for (size_t e = 0; e < experts; ++e) {
          const Vec y = gated(w.experts[e], in);
          Vec dy_e(rows * d, 0.0);
          for (size_t j = 0; j < rows * top_k; ++j) {
            const size_t row = j / top_k * d;
            if (m.chosen[j] != e) continue;
            for (size_t i = 0; i < d; ++i) {
              dy_e[row + i] = m.weights[j] * dy[row + i];
              dw[j] += dy[row + i] * y[row + i];
            }
          }
          dx = Add(dx, gated_backward(w.experts[e], in, dy_e, g.experts[e]));
        }
        // Back through the renormalization and the softmax to the logits.
        Vec dz(rows * experts, 0.0), dx_router, no_bias;
        for (size_t row = 0; row < rows; ++row) {
          const double* p = &m.probabilities[row * experts];
          double chosen = 0, weighted = 0, dot = 0;
          for (size_t j = row * top_k; j < (row + 1) * top_k; ++j) {
            chosen += p[m.chosen[j]];
            weighted += dw[j] * m.weights[j];
          }
          for (size_t j = row * top_k; j < (row + 1) * top_k; ++j) {
            const double dp = c.normalize_top_k ? (dw[j] - weighted) / chosen : dw[j];
            dz[row * experts + m.chosen[j]] = dp;
            dot += dp * p[m.chosen[j]];
          }
          for (size_t e = 0; e < experts; ++e) {
            dz[row * experts + e] = p[e] * (dz[row * experts + e] - dot);
          }
        }
        LinearBackward64(in, rows, d, w.router, false, dz, experts, dx_router, g.d_router,
                         no_bias);
        return Add(dx, dx_router);
      }
    }
    return dx;
  };
  // The end of the group of sublayers side by side that starts at i.
  const auto group_end = [&](size_t i) {
    size_t end = i + 1;
    while (end < n && c.sublayers[end].parallel) ++end;
    return end;
  };

  // Forward, keeping each sublayer's norm inputs and its mixer's input.
  std::vector<Vec> norm_in(n), mixer_in(n), out_norm_in(n);
  Vec h = p.x;
  for (size_t i = 0; i < n;) {
    const size_t end = group_end(i);
    Vec sum = h;
    for (size_t k = i; k < end; ++k) {
      const SublayerProblem64& w = p.sublayers[k];
      const NormPlacement placement = c.sublayers[k].norm;
      if (placement == NormPlacement::kPost || placement == NormPlacement::kNone) {
        mixer_in[k] = h;
      } else {
        norm_in[k] = h;
        mixer_in[k] = Norm(c, h, w.gamma, w.beta);
      }
      Vec out = mixer(k, mixer_in[k]);
      if (placement == NormPlacement::kSandwich) {
        out_norm_in[k] = out;
        out = Norm(c, out, w.out_gamma, w.out_beta);
      }
      sum = Add(sum, out);
      if (placement == NormPlacement::kPost) {
        norm_in[k] = sum;
        sum = Norm(c, sum, w.gamma, w.beta);
      }
    }
    h = std::move(sum);
    i = end;
  }
  r.output = h;
  if (d_output.empty()) return r;

  // The groups in reverse.
  std::vector<size_t> starts;
  for (size_t i = 0; i < n; i = group_end(i)) starts.push_back(i);
  Vec g(d_output.begin(), d_output.end());
  for (size_t s = starts.size(); s-- > 0;) {
    const size_t i = starts[s], end = group_end(i);
    Vec dh = g;
    for (size_t k = i; k < end; ++k) {
      const SublayerProblem64& w = p.sublayers[k];
      SublayerBackward64& sg = r.sublayers[k];
      if (c.sublayers[k].norm == NormPlacement::kPost) {
        const Vec ds = NormBackward(c, norm_in[k], w.gamma, g, sg.d_gamma, sg.d_beta);
        dh = Add(ds, mixer_backward(k, mixer_in[k], ds));
        continue;
      }
      Vec dy = g;
      if (c.sublayers[k].norm == NormPlacement::kSandwich) {
        dy = NormBackward(c, out_norm_in[k], w.out_gamma, g, sg.d_out_gamma, sg.d_out_beta);
      }
      const Vec dm = mixer_backward(k, mixer_in[k], dy);
      dh = Add(dh, c.sublayers[k].norm == NormPlacement::kNone
                       ? dm
                       : NormBackward(c, norm_in[k], w.gamma, dm, sg.d_gamma, sg.d_beta));
    }
    g = std::move(dh);
  }
  r.d_input = g;
  return r;
}

StackBackward64 ReferenceStackBackward(const StackConfig& config, const MhaConfig& attention,
                                       const StackProblem64& p, const MhaOptions& self_options,
                                       std::span<const double> d_output) {
  const BlockConfig& c = config.block;
  const size_t n = p.layers.size();
  // Each layer's forward from the one before it, keeping its input.
  std::vector<BlockProblem64> layers(n);
  std::vector<MhaOptions> options(n, self_options);
  Vec h = p.x;
  for (size_t i = 0; i < n; ++i) {
    if (!config.layer_windows.empty()) options[i].window = config.layer_windows[i];
    layers[i] = {p.batch, p.tokens, 0, h, {}, p.layers[i]};
    h = ReferenceBlockBackward(c, attention, layers[i], options[i], {}, {}).output;
  }
  StackBackward64 r;
  r.output = config.final_norm ? Norm(c, h, p.final_gamma, p.final_beta) : h;
  if (d_output.empty()) return r;
  Vec g(d_output.begin(), d_output.end());
  if (config.final_norm) g = NormBackward(c, h, p.final_gamma, g, r.d_final_gamma, r.d_final_beta);
  r.layers.resize(n);
  for (size_t i = n; i-- > 0;) {
    BlockBackward64 b = ReferenceBlockBackward(c, attention, layers[i], options[i], {}, g);
    r.layers[i] = std::move(b.sublayers);
    g = std::move(b.d_input);
  }
  r.d_input = std::move(g);
  return r;
}

}  // namespace simd_attention
