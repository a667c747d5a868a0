// q4 weights given as GGUF q4_0 blocks (StoredMatrix::q4), on every kernel
// table: taken as they are, they pack into the panels that q4 packing
// makes from the float32 weights the blocks were quantized from, so the
// forward is bit-identical; what they cannot be is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <random>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "kernels/gemm.h"  // PanelBytes
#include "kernels/q4_layout.h"
#include "kernels/q4_packing.h"
#include "random_mha.h"
#include "simd_attention/multi_head_attention.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

// w [rows, cols] quantized as q4 packing quantizes it, as GGUF holds the
// transpose [cols, rows]: a panel one column wide is a column's blocks,
// each 16 bytes of nibbles in GGUF's order, then the scale that GGUF puts
// first.
std::vector<uint8_t> GgufQ4_0(const std::vector<float>& w, size_t rows, size_t cols) {
  const size_t block = Q4BlockBytes(1);
  std::vector<uint8_t> panels(cols * PanelBytes(WeightType::kQ4, rows, 1)), out(panels.size());
  PackQ4(w.data(), rows, cols, 1, panels.data());
  for (size_t b = 0; b < panels.size() / block; ++b) {
    std::memcpy(out.data() + b * block, panels.data() + b * block + kQ4BlockPairs, 2);
    std::memcpy(out.data() + b * block + 2, panels.data() + b * block, kQ4BlockPairs);
  }
  return out;
}

MhaConfig Config(size_t head_dim_v) {
  MhaConfig c;
  c.d_model = 64;
  c.num_heads = 2;
  c.head_dim = 32;
  c.head_dim_v = head_dim_v;
  c.weights = WeightType::kQ4;
  return c;
}

struct Weights {
  std::vector<float> w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o;
  MhaWeights view() const { return {w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o}; }
};

Weights RandomWeights(const MhaConfig& c, std::mt19937& rng) {
  const size_t hk = c.num_heads * c.head_dim, hv = c.num_heads * c.head_dim_v;
  return {RandomVector(c.d_model * hk, 1.0f, rng), RandomVector(c.d_model * hk, 1.0f, rng),
          RandomVector(c.d_model * hv, 1.0f, rng), RandomVector(hv * c.d_model, 1.0f, rng),
          RandomVector(hk, 0.1f, rng),             RandomVector(hk, 0.1f, rng),
          RandomVector(hv, 0.1f, rng),             RandomVector(c.d_model, 0.1f, rng)};
}

// Whether mha.SetWeights refuses `w` with W_Q given as the q4 blocks `q4`
// instead, by an std::invalid_argument whose message holds each of `message`.
bool RefusesQueryBlocks(MultiHeadAttention& mha, const Weights& w, const std::vector<uint8_t>& q4,
                        std::initializer_list<std::string_view> message) {
  MhaWeights given = w.view();
  given.w_q = {};
  given.stored_w_q.q4 = q4;
  return ThrowsWith<std::invalid_argument>([&] { mha.SetWeights(given); }, message);
}

class Q4Blocks : public TableTest {};

TEST_P(Q4Blocks, GivenBlocksForwardAsTheFloatsTheyWereQuantizedFrom) {
  std::mt19937 rng(7);
  const MhaConfig c = Config(32);
  const Weights w = RandomWeights(c, rng);
  const std::vector<float> x = RandomVector(2 * 5 * c.d_model, 1.0f, rng);
  const Tensor3 in{x, 2, 5, c.d_model};
  MultiHeadAttention from_floats(c, table());
  from_floats.SetWeights(w.view());
  const std::vector<uint8_t> q = GgufQ4_0(w.w_q, 64, 64), k = GgufQ4_0(w.w_k, 64, 64),
                             v = GgufQ4_0(w.w_v, 64, 64), o = GgufQ4_0(w.w_o, 64, 64);
  MhaWeights blocks = w.view();
  blocks.w_q = blocks.w_k = blocks.w_v = blocks.w_o = {};
  blocks.stored_w_q.q4 = q;
  blocks.stored_w_k.q4 = k;
  blocks.stored_w_v.q4 = v;
  blocks.stored_w_o.q4 = o;
  MultiHeadAttention from_blocks(c, table());
  from_blocks.SetWeights(blocks);
  EXPECT_EQ(from_blocks.Forward(in).output, from_floats.Forward(in).output);
}

TEST_P(Q4Blocks, RefusedBlocksNameTheArgumentAndLeaveTheObjectAsItWas) {
  std::mt19937 rng(8);
  const MhaConfig c = Config(32);
  const Weights w = RandomWeights(c, rng);
  const std::vector<float> x = RandomVector(5 * c.d_model, 1.0f, rng);
  const Tensor3 in{x, 1, 5, c.d_model};
  MultiHeadAttention mha(c, table());
  mha.SetWeights(w.view());
  const std::vector<float> before = mha.Forward(in).output;
  std::vector<uint8_t> q = GgufQ4_0(w.w_q, 64, 64);
  EXPECT_TRUE(RefusesQueryBlocks(mha, w, std::vector<uint8_t>(q.begin(), q.end() - 1),
                                 {"w_q.q4 (18 bytes per block of 32 rows of a column): expected "
                                  "2304 values for shape [64, 2, 18], got 2303"}));
  q[18 * 3 + 1] = 0x7c;  // column 1's block 1, block 3 of the bytes: float16 infinity
  q[18 * 3] = 0;
  EXPECT_TRUE(RefusesQueryBlocks(mha, w, q, {"w_q.q4 block scales: element 3 is +Infinity"}));
  q[18 * 3] = 1;  // NaN
  EXPECT_TRUE(RefusesQueryBlocks(mha, w, q, {"w_q.q4 block scales: element 3 is NaN"}));
  EXPECT_EQ(mha.Forward(in).output, before);

  MhaConfig f16 = c;
  f16.weights = WeightType::kF16;
  MultiHeadAttention narrow(f16, table());
  EXPECT_TRUE(
      RefusesQueryBlocks(narrow, w, q, {"w_q: q4 blocks given, but config.weights is float16"}));
}

TEST_P(Q4Blocks, RowsOffWholeBlocksAreRefused) {
  std::mt19937 rng(9);
  MhaConfig c = Config(32);
  c.d_model = 48;
  const Weights w = RandomWeights(c, rng);
  MultiHeadAttention mha(c, table());
  EXPECT_TRUE(RefusesQueryBlocks(
      mha, w, std::vector<uint8_t>(64 * 2 * 18),
      {"w_q: q4 blocks run along its 48 rows, which must be a multiple of 32"}));
}

// W_O's rows are padded per head to whole vectors where d_v is not a
// multiple of the lanes: blocks given there would no longer cover whole
// blocks of the packed rows, so they are refused (a one-lane table pads
// nothing and takes them).
TEST_P(Q4Blocks, OutputProjectionOffWholeVectorsIsRefused) {
  std::mt19937 rng(10);
  MhaConfig c = Config(2);
  c.num_heads = 16;
  c.head_dim = 2;
  const Weights w = RandomWeights(c, rng);
  const std::vector<uint8_t> o = GgufQ4_0(w.w_o, 32, 64);
  MhaWeights given = w.view();
  given.w_o = {};
  given.stored_w_o.q4 = o;
  MultiHeadAttention mha(c, table());
  if (table().lanes == 1) {
    mha.SetWeights(given);
  } else {
    EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
        [&] { mha.SetWeights(given); },
        {"w_o.q4: q4 blocks are taken as they are only where the head width of values (2) is a "
         "multiple of this backend's ", " lanes; give W_O as float32 to have it quantized"}));
  }
}

INSTANTIATE_ON_EVERY_TABLE(Q4Blocks);

}  // namespace
}  // namespace simd_attention::testing
