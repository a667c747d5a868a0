// simd_attention_inference, the library without the training code
// (src/training/training_hooks.h), linked alone: its forwards run, and
// every way to train is refused by name. That this binary links at all
// shows the forwards need nothing from src/training/.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "simd_attention/multi_head_attention.h"
#include "simd_attention/transformer_block.h"

namespace simd_attention {
namespace {

constexpr char kRefusal[] = "options.training: expected false in a build without training";

template <class F>
std::string InvalidArgumentOf(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

constexpr size_t kD = 8;

TEST(InferenceLibrary, AttentionRunsAndRefusesTraining) {
  MhaConfig c;
  c.d_model = kD;
  c.num_heads = 2;
  MultiHeadAttention mha(c);
  const std::vector<float> w(kD * kD, 0.125f), b(kD, 0.25f);
  MhaWeights weights;
  weights.w_q = weights.w_k = weights.w_v = weights.w_o = w;
  weights.b_q = weights.b_k = weights.b_v = weights.b_o = b;
  mha.SetWeights(weights);
  std::vector<float> x(2 * 3 * kD);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.01f * float(i);
  const Tensor3 input{x, 2, 3, kD};
  const MhaResult r = mha.Forward(input);
  ASSERT_EQ(r.output.size(), x.size());
  for (float v : r.output) EXPECT_TRUE(std::isfinite(v));

  MhaOptions training;
  training.training = true;
  EXPECT_NE(InvalidArgumentOf([&] { mha.Forward(input, training); }).find(kRefusal),
            std::string::npos);
  KVCache cache = mha.CreateKVCache(2, 4);
  EXPECT_NE(InvalidArgumentOf([&] { mha.ForwardIncremental(input, cache, training); })
                .find(kRefusal),
            std::string::npos);
  std::vector<Parameter> parameters;
  EXPECT_NE(InvalidArgumentOf([&] { mha.TrainableParameters(parameters, ""); }).find(kRefusal),
            std::string::npos);
  // Still usable.
  EXPECT_EQ(mha.Forward(input).output, r.output);
}

TEST(InferenceLibrary, BlockRunsAndRefusesTraining) {
  BlockConfig c;
  c.d_model = kD;
  c.num_heads = 2;
  c.ffn_dim = 4;
  c.sublayers = {{MixerKind::kFeedForward, NormPlacement::kNone}};
  TransformerBlock block(c);
  const std::vector<float> w1(kD * 4, 0.5f), w2(4 * kD, -0.25f);
  SublayerWeights s;
  s.ffn.w1 = w1;
  s.ffn.w2 = w2;
  block.SetWeights(std::vector<SublayerWeights>{s});
  const std::vector<float> x(3 * kD, 1.0f);
  // relu(1 * 8 * 0.5) = 4 per hidden unit; 4 units * 4 * -0.25 = -4.
  const std::vector<float> y = block.Forward({x, 1, 3, kD});
  for (float v : y) EXPECT_FLOAT_EQ(v, 1.0f - 4.0f);

  BlockOptions training;
  training.training = true;
  EXPECT_NE(InvalidArgumentOf([&] { block.Forward({x, 1, 3, kD}, training); }).find(kRefusal),
            std::string::npos);
  EXPECT_EQ(block.Forward({x, 1, 3, kD}), y);
}

TEST(InferenceLibrary, StackRunsAndRefusesTraining) {
  StackConfig c;
  c.block.d_model = kD;
  c.block.num_heads = 2;
  c.block.ffn_dim = 4;
  c.block.sublayers = {{MixerKind::kFeedForward, NormPlacement::kNone}};
  c.num_layers = 2;
  TransformerStack stack(c);
  const std::vector<float> w1(kD * 4, 0.5f), w2(4 * kD, -0.125f);
  SublayerWeights s;
  s.ffn.w1 = w1;
  s.ffn.w2 = w2;
  const std::vector<std::vector<SublayerWeights>> layers(2, std::vector<SublayerWeights>{s});
  stack.SetWeights(layers);
  const std::vector<float> x(3 * kD, 1.0f);
  // Layer 0: relu(8 * 0.5) = 4 per hidden unit, 4 * 4 * -0.125 = -2: 1 - 2 = -1;
  // layer 1: relu(-4) = 0, so -1 stays.
  const std::vector<float> y = stack.Forward({x, 1, 3, kD});
  for (float v : y) EXPECT_FLOAT_EQ(v, -1.0f);

  BlockOptions training;
  training.training = true;
  EXPECT_NE(InvalidArgumentOf([&] { stack.Forward({x, 1, 3, kD}, training); }).find(kRefusal),
            std::string::npos);
  std::vector<Parameter> parameters;
  EXPECT_NE(InvalidArgumentOf([&] { stack.TrainableParameters(parameters, ""); })
                .find(kRefusal),
            std::string::npos);
  // Still usable.
  EXPECT_EQ(stack.Forward({x, 1, 3, kD}), y);
}

}  // namespace
}  // namespace simd_attention
