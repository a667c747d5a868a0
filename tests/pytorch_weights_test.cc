// FromTorchState (src/pytorch_weights.h): every `mha` golden case's weights,
// rearranged the way torch.nn.MultiheadAttention's state_dict stores them
// (Linear [out, in]; q, k, v packed in in_proj_weight when kdim == vdim ==
// d_model, separate otherwise; biases packed in in_proj_bias), come back as
// exactly the golden X @ W weights and reproduce the golden outputs. Plus the
// errors for state_dicts that do not fit the config.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "golden.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/pytorch_weights.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

// [rows, cols] -> [cols, rows]
std::vector<float> Transpose(std::span<const float> w, size_t rows, size_t cols) {
  std::vector<float> out(w.size());
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) out[c * rows + r] = w[r * cols + c];
  }
  return out;
}

std::vector<float> Concat(std::initializer_list<std::span<const float>> parts) {
  std::vector<float> out;
  for (auto p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// A case's weights as a PyTorch state_dict; owns the arrays state() views.
struct TorchState {
  std::vector<float> in_proj_weight, q, k, v, in_proj_bias, out_w, out_b;
  bool packed = false, bias = false;

  TorchState(const MhaConfig& c, const MhaWeights& w) {
    const size_t hk = c.d_model, hv = c.num_heads * c.head_dim_v;
    q = Transpose(w.w_q, c.d_model, hk);
    k = Transpose(w.w_k, c.kdim, hk);
    v = Transpose(w.w_v, c.vdim, hv);
    packed = c.kdim == c.d_model && c.vdim == c.d_model;
    if (packed) in_proj_weight = Concat({q, k, v});
    out_w = Transpose(w.w_o, hv, c.d_model);
    bias = c.bias;
    if (bias) {
      in_proj_bias = Concat({w.b_q, w.b_k, w.b_v});
      out_b.assign(w.b_o.begin(), w.b_o.end());
    }
  }

  TorchMhaState state() const {
    TorchMhaState s;
    if (packed) {
      s.in_proj_weight = in_proj_weight;
    } else {
      s.q_proj_weight = q;
      s.k_proj_weight = k;
      s.v_proj_weight = v;
    }
    s.out_proj_weight = out_w;
    if (bias) {
      s.in_proj_bias = in_proj_bias;
      s.out_proj_bias = out_b;
    }
    return s;
  }
};

void ExpectSame(std::span<const float> got, std::span<const float> want,
                const char* name) {
  EXPECT_EQ(std::vector<float>(got.begin(), got.end()),
            std::vector<float>(want.begin(), want.end()))
      << name;
}

class GoldenPyTorch : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenPyTorch, ConvertsBackToTheGoldenWeights) {
  const GoldenCase c = LoadGoldenCase(GetParam());
  const MhaCaseInputs in = MhaInputs(c);
  const TorchState torch(in.config, in.weights);
  // The raw config (kdim etc. as the case gives them), resolved inside.
  const OwnedMhaWeights owned = FromTorchState(in.config, torch.state());
  const MhaWeights w = owned.weights();
  ExpectSame(w.w_q, in.weights.w_q, "w_q");
  ExpectSame(w.w_k, in.weights.w_k, "w_k");
  ExpectSame(w.w_v, in.weights.w_v, "w_v");
  ExpectSame(w.w_o, in.weights.w_o, "w_o");
  ExpectSame(w.b_q, in.weights.b_q, "b_q");
  ExpectSame(w.b_k, in.weights.b_k, "b_k");
  ExpectSame(w.b_v, in.weights.b_v, "b_v");
  ExpectSame(w.b_o, in.weights.b_o, "b_o");
}

TEST_P(GoldenPyTorch, ReproducesTheGoldenOutputs) {
  const GoldenCase c = LoadGoldenCase(GetParam());
  const MhaCaseInputs in = MhaInputs(c);
  const TorchState torch(in.config, in.weights);
  MultiHeadAttention mha(in.config);
  mha.SetWeights(FromTorchState(mha.config(), torch.state()).weights());
  const MhaResult r = mha.Forward(in.query, in.key, in.value, in.options);
  EXPECT_TRUE(AllNear(r.output, c.Tensor("output").f32, c.tolerance)) << "output";
  EXPECT_TRUE(AllNear(r.attn_weights, c.Tensor("attn_weights").f32, c.tolerance))
      << "attn_weights";
  EXPECT_TRUE(AllNear(r.per_head_output, c.Tensor("per_head_output").f32, c.tolerance))
      << "per_head_output";
}

INSTANTIATE_TEST_SUITE_P(Cases, GoldenPyTorch, ::testing::ValuesIn(GoldenCaseNames("mha")),
                         CaseParamName);

// A small config with random-free weights: values do not matter here.
struct Small {
  MhaConfig config;
  std::vector<float> in_w = std::vector<float>(3 * 8 * 8, 0.5f);
  std::vector<float> sep = std::vector<float>(8 * 8, 0.5f);
  std::vector<float> in_b = std::vector<float>(3 * 8, 0.5f);
  std::vector<float> out_w = std::vector<float>(8 * 8, 0.5f);
  std::vector<float> out_b = std::vector<float>(8, 0.5f);
  Small() {
    config.d_model = 8;
    config.num_heads = 2;
  }
  TorchMhaState Packed() const {
    TorchMhaState s;
    s.in_proj_weight = in_w;
    s.in_proj_bias = in_b;
    s.out_proj_weight = out_w;
    s.out_proj_bias = out_b;
    return s;
  }
};

void ExpectInvalid(const MhaConfig& config, const TorchMhaState& s,
                   const std::string& message) {
  try {
    FromTorchState(config, s);
    ADD_FAILURE() << "no exception; expected: " << message;
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(e.what(), message);
  }
}

TEST(PyTorchWeightsErrors, WrongLengthNamesTheEntryAndShape) {
  Small s;
  TorchMhaState st = s.Packed();
  std::vector<float> short_w(10);
  st.in_proj_weight = short_w;
  ExpectInvalid(s.config, st,
                "in_proj_weight: expected 192 values for shape [24, 8] (PyTorch "
                "layout), got 10");
  st = s.Packed();
  st.out_proj_bias = short_w;
  ExpectInvalid(s.config, st,
                "out_proj.bias: expected 8 values for shape [8] (PyTorch layout), got 10");
}

TEST(PyTorchWeightsErrors, MissingOrContradictoryEntries) {
  Small s;
  TorchMhaState st = s.Packed();
  st.in_proj_weight.reset();
  ExpectInvalid(s.config, st,
                "q_proj_weight: missing (give in_proj_weight or all of "
                "q_proj_weight, k_proj_weight, v_proj_weight)");
  st = s.Packed();
  st.q_proj_weight = s.sep;
  ExpectInvalid(s.config, st,
                "in_proj_weight: given together with q_proj_weight/k_proj_weight/"
                "v_proj_weight; pass either the packed or the separate weights");
  st = s.Packed();
  st.out_proj_weight.reset();
  ExpectInvalid(s.config, st,
                "out_proj.weight: missing (the output projection is always needed)");
  st = s.Packed();
  st.in_proj_bias.reset();
  ExpectInvalid(s.config, st, "in_proj_bias: missing (config.bias is true)");
  MhaConfig no_bias = s.config;
  no_bias.bias = false;
  ExpectInvalid(no_bias, s.Packed(),
                "in_proj_bias: config.bias is false, so no bias may be given; got 24 values");
}

TEST(PyTorchWeightsErrors, PackedWeightsNeedEqualWidths) {
  Small s;
  MhaConfig c = s.config;
  c.kdim = 4;
  ExpectInvalid(c, s.Packed(),
                "in_proj_weight: PyTorch packs q, k and v only when kdim == vdim == "
                "d_model (here kdim = 4, vdim = 8, d_model = 8); pass q_proj_weight, "
                "k_proj_weight and v_proj_weight");
  c = s.config;
  c.num_heads = 3;
  ExpectInvalid(c, s.Packed(),
                "config: d_model (8) must be a positive multiple of num_heads (3)");
}

TEST(PyTorchWeights, SeparateProjectionsTransposeEachOne) {
  // q_proj_weight [E, E] with q[r][c] = r * E + c must become w_q[c][r].
  Small s;
  std::vector<float> q(64), k(64), v(64);
  for (size_t i = 0; i < 64; ++i) {
    q[i] = float(i);
    k[i] = float(100 + i);
    v[i] = float(200 + i);
  }
  TorchMhaState st;
  st.q_proj_weight = q;
  st.k_proj_weight = k;
  st.v_proj_weight = v;
  st.out_proj_weight = s.out_w;
  st.in_proj_bias = s.in_b;
  st.out_proj_bias = s.out_b;
  const OwnedMhaWeights w = FromTorchState(s.config, st);
  for (size_t r = 0; r < 8; ++r) {
    for (size_t c = 0; c < 8; ++c) {
      EXPECT_EQ(w.w_q[c * 8 + r], q[r * 8 + c]);
      EXPECT_EQ(w.w_k[c * 8 + r], k[r * 8 + c]);
      EXPECT_EQ(w.w_v[c * 8 + r], v[r * 8 + c]);
    }
  }
}

}  // namespace
}  // namespace simd_attention::testing
