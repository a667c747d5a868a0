#include "simd_attention/pytorch_weights.h"

#include <stdexcept>
#include <string>

#include "checks/checked_size.h"
#include "checks/validate.h"

namespace simd_attention {
namespace {

using Entry = std::optional<std::span<const float>>;

// v holds [rows, cols] (cols 1 for a vector, shown as [rows]).
void ExpectLength(const char* name, std::span<const float> v, size_t rows, size_t cols) {
  const Product expected = ProductOf({rows, cols});
  if (expected.overflow || v.size() != expected.value) {
    ThrowInvalidArgument({name, ": expected ", ProductString(expected), " values for shape ",
                          cols == 1 ? ShapeString({rows}) : ShapeString({rows, cols}),
                          " (PyTorch layout), got ", std::to_string(v.size())});
  }
}

// Rows [row0, row0 + rows) of src [*, cols], transposed: -> [cols, rows].
std::vector<float> TransposeRows(std::span<const float> src, size_t row0,
                                 size_t rows, size_t cols) {
  std::vector<float> out(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) {
      out[c * rows + r] = src[(row0 + r) * cols + c];
    }
  }
  return out;
}

std::span<const float> Required(const Entry& v, const char* name, const char* why) {
  if (!v) {
    ThrowInvalidArgument({name, ": missing (", why, ")"});
  }
  return *v;
}

// kdim, vdim and head_dim_v as MultiHeadAttention resolves them.
MhaConfig Resolve(MhaConfig c) {
  const ArgNames& n = ResolveNames(c);
  if (c.d_model == 0 || c.num_heads == 0 || c.d_model % c.num_heads != 0) {
    ThrowInvalidArgument({"config: ", n.d_model, " (", std::to_string(c.d_model),
                          ") must be a positive multiple of ", n.num_heads, " (",
                          std::to_string(c.num_heads), ")"});
  }
  if (c.kdim == 0) c.kdim = c.d_model;
  if (c.vdim == 0) c.vdim = c.d_model;
  if (c.head_dim != 0 && c.head_dim * c.num_heads != c.d_model) {
    ThrowInvalidArgument({"config: nn.MultiheadAttention's heads are ", n.d_model, " / ",
                          n.num_heads, " wide, got ", n.head_dim, " ", std::to_string(c.head_dim)});
  }
  if (c.head_dim_v == 0) c.head_dim_v = c.d_model / c.num_heads;
  // Bounds every row count below (2 * d_model + num_heads * head_dim_v
  // cannot wrap once both products fit).
  CheckedCount("in_proj_weight", {{n.d_model, c.d_model}, {n.d_model, c.d_model}});
  CheckedCount("v_proj_weight",
               {{n.num_heads, c.num_heads}, {n.head_dim_v, c.head_dim_v}, {n.vdim, c.vdim}});
  CheckedCount("k_proj_weight", {{n.d_model, c.d_model}, {n.kdim, c.kdim}});
  return c;
}

}  // namespace

MhaWeights OwnedMhaWeights::weights() const {
  return MhaWeights{w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o};
}

OwnedMhaWeights FromTorchState(const MhaConfig& config, const TorchMhaState& s) {
  const MhaConfig c = Resolve(config);
  const size_t e = c.d_model;
  const size_t hk = c.d_model;  // num_heads * head_dim, head_dim = E / H
  const size_t hv = c.num_heads * c.head_dim_v;
  OwnedMhaWeights w;

  const bool packed = s.in_proj_weight.has_value();
  const bool separate = s.q_proj_weight || s.k_proj_weight || s.v_proj_weight;
  if (packed && separate) {
    throw std::invalid_argument(
        "in_proj_weight: given together with q_proj_weight/k_proj_weight/"
        "v_proj_weight; pass either the packed or the separate weights");
  }
  if (packed) {
    if (c.kdim != e || c.vdim != e) {
      const ArgNames& n = *c.names;
      ThrowInvalidArgument({"in_proj_weight: PyTorch packs q, k and v only when ", n.kdim,
                            " == ", n.vdim, " == ", n.d_model, " (here ", n.kdim, " = ",
                            std::to_string(c.kdim), ", ", n.vdim, " = ", std::to_string(c.vdim),
                            ", ", n.d_model, " = ", std::to_string(e),
                            "); pass q_proj_weight, k_proj_weight and v_proj_weight"});
    }
    const std::span<const float> in = *s.in_proj_weight;
    ExpectLength("in_proj_weight", in, 2 * hk + hv, e);
    w.w_q = TransposeRows(in, 0, hk, e);
    w.w_k = TransposeRows(in, hk, hk, e);
    w.w_v = TransposeRows(in, 2 * hk, hv, e);
  } else {
    const char* why = "give in_proj_weight or all of q_proj_weight, "
                      "k_proj_weight, v_proj_weight";
    const auto q = Required(s.q_proj_weight, "q_proj_weight", why);
    const auto k = Required(s.k_proj_weight, "k_proj_weight", why);
    const auto v = Required(s.v_proj_weight, "v_proj_weight", why);
    ExpectLength("q_proj_weight", q, hk, e);
    ExpectLength("k_proj_weight", k, hk, c.kdim);
    ExpectLength("v_proj_weight", v, hv, c.vdim);
    w.w_q = TransposeRows(q, 0, hk, e);
    w.w_k = TransposeRows(k, 0, hk, c.kdim);
    w.w_v = TransposeRows(v, 0, hv, c.vdim);
  }

  const auto out = Required(s.out_proj_weight, "out_proj.weight",
                            "the output projection is always needed");
  ExpectLength("out_proj.weight", out, e, hv);
  w.w_o = TransposeRows(out, 0, e, hv);

  if (c.bias) {
    const char* why = "config.bias is true";
    const auto in_b = Required(s.in_proj_bias, "in_proj_bias", why);
    ExpectLength("in_proj_bias", in_b, 2 * hk + hv, 1);
    w.b_q.assign(in_b.begin(), in_b.begin() + hk);
    w.b_k.assign(in_b.begin() + hk, in_b.begin() + 2 * hk);
    w.b_v.assign(in_b.begin() + 2 * hk, in_b.end());
    const auto out_b = Required(s.out_proj_bias, "out_proj.bias", why);
    ExpectLength("out_proj.bias", out_b, e, 1);
    w.b_o.assign(out_b.begin(), out_b.end());
  } else {
    auto reject = [](const char* name, const Entry& v) {
      if (v) {
        ThrowInvalidArgument({name, ": config.bias is false, so no bias may be given; got ",
                              std::to_string(v->size()), " values"});
      }
    };
    reject("in_proj_bias", s.in_proj_bias);
    reject("out_proj.bias", s.out_proj_bias);
  }
  return w;
}

}  // namespace simd_attention
