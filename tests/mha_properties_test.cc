// Algebraic properties of multi-head attention that hold whatever the
// weights: checked on random problems through every kernel table, so a
// target that agrees with the reference only by luck on the golden cases
// still has to get the structure right.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "random_mha.h"
#include "simd_attention/multi_head_attention.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

// Values are O(1) (see RandomWeights); float rounding stays far below this.
constexpr double kTol = 1e-4;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

MhaConfig Config(size_t d_model, size_t num_heads) {
  MhaConfig c;
  c.d_model = d_model;
  c.num_heads = num_heads;
  return c;
}

MhaOptions WithEverything(MhaOptions options) {
  options.need_weights = true;
  options.need_per_head_output = true;
  return options;
}

// Index of attn_weights[b, h, i, j].
size_t WeightIndex(const MhaResult& r, size_t heads, size_t b, size_t h,
                   size_t i, size_t j) {
  return ((b * heads + h) * r.tq + i) * r.tk + j;
}

bool AllFinite(std::span<const float> values) {
  return std::all_of(values.begin(), values.end(),
                     [](float x) { return std::isfinite(x); });
}

class MhaProperties : public TableTest {};

TEST_P(MhaProperties, SelfAttentionEqualsCrossAttentionWithSameInput) {
  std::mt19937 rng(1);
  const MhaProblem p = RandomProblem(Config(24, 3), 2, 9, 9, rng);
  MultiHeadAttention mha(p.config, table());
  mha.SetWeights(p.weights.View());
  const Tensor3 x = p.query.View();
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "no mask");
    MhaOptions options = WithEverything({});
    options.causal = causal;
    ExpectResultNear(mha.Forward(x, options), mha.Forward(x, x, x, options),
                     kTol);
  }
}

// The workspace grows and is reused across calls; nothing may leak from a
// larger earlier call into a smaller later one.
TEST_P(MhaProperties, ReusedObjectMatchesFreshOneAcrossSizes) {
  std::mt19937 rng(13);
  const MhaConfig config = Resolve(Config(20, 4));
  const OwnedWeights weights = RandomWeights(config, rng);
  const size_t sizes[][3] = {{3, 90, 70}, {1, 2, 5}, {2, 33, 1}, {3, 90, 70}};
  MultiHeadAttention reused(config, table());
  reused.SetWeights(weights.View());
  for (const auto& [batch, tq, tk] : sizes) {
    SCOPED_TRACE(::testing::Message()
                 << "B=" << batch << " Tq=" << tq << " Tk=" << tk);
    MhaProblem p{config, weights, RandomTensor(batch, tq, 20, rng),
                 RandomTensor(batch, tk, 20, rng),
                 RandomTensor(batch, tk, 20, rng)};
    MhaOptions options = WithEverything({});
    options.causal = tq <= tk;
    ExpectResultNear(reused.Forward(p.query.View(), p.key.View(),
                                    p.value.View(), options),
                     RunKernels(table(), p, options), kTol);
  }
}

TEST_P(MhaProperties, OutputIsSumOfPerHeadOutputsPlusBias) {
  std::mt19937 rng(2);
  MhaConfig config = Config(32, 4);
  config.head_dim_v = 5;  // concat width 20 != d_model: W_O is not square
  const MhaProblem p = RandomProblem(config, 2, 7, 11, rng);
  const size_t heads = 4, d = 32;
  const MhaResult r = RunKernels(table(), p, WithEverything({}));
  ASSERT_EQ(r.per_head_output.size(), r.batch * heads * r.tq * d);
  std::vector<float> sum(r.output.size());
  for (size_t b = 0; b < r.batch; ++b) {
    for (size_t i = 0; i < r.tq; ++i) {
      for (size_t n = 0; n < d; ++n) {
        double total = p.weights.b_o[n];
        for (size_t h = 0; h < heads; ++h) {
          total += r.per_head_output[((b * heads + h) * r.tq + i) * d + n];
        }
        sum[(b * r.tq + i) * d + n] = static_cast<float>(total);
      }
    }
  }
  EXPECT_TRUE(AllNear(r.output, sum, kTol));
}

// Token j of batch item b of the result is token perms[b][j] of `t`.
OwnedTensor PermuteTokens(const OwnedTensor& t,
                          const std::vector<std::vector<size_t>>& perms) {
  OwnedTensor out = t;
  for (size_t b = 0; b < t.batch; ++b) {
    for (size_t j = 0; j < t.tokens; ++j) {
      std::copy_n(&t.data[(b * t.tokens + perms[b][j]) * t.features],
                  t.features, &out.data[(b * t.tokens + j) * t.features]);
    }
  }
  return out;
}

TEST_P(MhaProperties, PermutingKeyValueRowsTogetherLeavesOutputUnchanged) {
  std::mt19937 rng(3);
  const size_t batch = 3, tq = 5, tk = 70, heads = 2;  // two key blocks
  const MhaProblem p = RandomProblem(Config(16, heads), batch, tq, tk, rng);
  std::vector<std::vector<size_t>> perms(batch, std::vector<size_t>(tk));
  for (std::vector<size_t>& perm : perms) {  // a different one per batch item
    std::iota(perm.begin(), perm.end(), size_t{0});
    std::shuffle(perm.begin(), perm.end(), rng);
  }
  MhaProblem permuted = p;
  permuted.key = PermuteTokens(p.key, perms);
  permuted.value = PermuteTokens(p.value, perms);
  const MhaResult original = RunKernels(table(), p, WithEverything({}));
  const MhaResult shuffled = RunKernels(table(), permuted, WithEverything({}));
  EXPECT_TRUE(AllNear(shuffled.output, original.output, kTol));
  EXPECT_TRUE(AllNear(shuffled.per_head_output, original.per_head_output, kTol));
  // The weights move with their keys.
  std::vector<float> expected_weights(original.attn_weights.size());
  for (size_t b = 0; b < batch; ++b) {
    for (size_t h = 0; h < heads; ++h) {
      for (size_t i = 0; i < tq; ++i) {
        for (size_t j = 0; j < tk; ++j) {
          expected_weights[WeightIndex(original, heads, b, h, i, j)] =
              original.attn_weights[WeightIndex(original, heads, b, h, i,
                                                perms[b][j])];
        }
      }
    }
  }
  EXPECT_TRUE(AllNear(shuffled.attn_weights, expected_weights, kTol));
}

TEST_P(MhaProperties, CausalWithOneQueryEqualsNoMask) {
  std::mt19937 rng(4);
  // T = 1 self-attention, and one query against many keys (a decoding step):
  // bottom-right alignment lets the last query see every key.
  for (size_t tk : {1, 9}) {
    SCOPED_TRACE(::testing::Message() << "Tk=" << tk);
    const MhaProblem p = RandomProblem(Config(12, 3), 2, 1, tk, rng);
    MhaOptions causal = WithEverything({});
    causal.causal = true;
    ExpectResultNear(RunKernels(table(), p, causal),
                     RunKernels(table(), p, WithEverything({})), kTol);
  }
}

// softmax(Q K^T / sqrt(d)) V W_O + b_o for one head, written out in plain
// double loops independent of both the kernels and the reference.
std::vector<float> SingleHeadByHand(const MhaProblem& p) {
  const OwnedWeights& w = p.weights;
  const size_t d = p.config.d_model, batch = p.query.batch;
  const size_t tq = p.query.tokens, tk = p.key.tokens;
  const auto project = [d](const OwnedTensor& x, const std::vector<float>& m,
                           const std::vector<float>& bias, size_t row) {
    std::vector<double> y(d);
    for (size_t n = 0; n < d; ++n) {
      y[n] = bias[n];
      for (size_t i = 0; i < x.features; ++i) {
        y[n] += double(x.data[row * x.features + i]) * m[i * d + n];
      }
    }
    return y;
  };
  std::vector<float> out(batch * tq * d);
  for (size_t b = 0; b < batch; ++b) {
    for (size_t i = 0; i < tq; ++i) {
      const std::vector<double> q = project(p.query, w.w_q, w.b_q, b * tq + i);
      std::vector<double> scores(tk);
      std::vector<std::vector<double>> values(tk);
      for (size_t j = 0; j < tk; ++j) {
        const std::vector<double> k = project(p.key, w.w_k, w.b_k, b * tk + j);
        values[j] = project(p.value, w.w_v, w.b_v, b * tk + j);
        scores[j] = std::inner_product(q.begin(), q.end(), k.begin(), 0.0) /
                    std::sqrt(double(d));
      }
      const double top = *std::max_element(scores.begin(), scores.end());
      double total = 0;
      for (double& s : scores) total += (s = std::exp(s - top));
      std::vector<double> z(d, 0.0);
      for (size_t j = 0; j < tk; ++j) {
        for (size_t e = 0; e < d; ++e) z[e] += scores[j] / total * values[j][e];
      }
      for (size_t n = 0; n < d; ++n) {
        double y = w.b_o[n];
        for (size_t e = 0; e < d; ++e) y += z[e] * w.w_o[e * d + n];
        out[(b * tq + i) * d + n] = static_cast<float>(y);
      }
    }
  }
  return out;
}

TEST_P(MhaProperties, OneHeadIsSingleHeadAttention) {
  std::mt19937 rng(5);
  const MhaProblem p = RandomProblem(Config(6, 1), 2, 3, 5, rng);
  const std::vector<float> expected = SingleHeadByHand(p);
  EXPECT_TRUE(AllNear(RunKernels(table(), p, {}).output, expected, kTol));
}

// Every (b, h, i) row of the weights in `rows` is exactly zero, its
// per-head outputs are zero and its output row is b_o; nothing is NaN.
void ExpectFullyMaskedRows(const MhaProblem& p, const MhaResult& r,
                           const std::vector<std::pair<size_t, size_t>>& rows) {
  const size_t heads = p.config.num_heads, d = p.config.d_model;
  EXPECT_TRUE(AllFinite(r.output));
  EXPECT_TRUE(AllFinite(r.attn_weights));
  EXPECT_TRUE(AllFinite(r.per_head_output));
  for (const auto& [b, i] : rows) {
    SCOPED_TRACE(::testing::Message() << "batch " << b << " query " << i);
    for (size_t h = 0; h < heads; ++h) {
      for (size_t j = 0; j < r.tk; ++j) {
        EXPECT_EQ(r.attn_weights[WeightIndex(r, heads, b, h, i, j)], 0.0f);
      }
      for (size_t n = 0; n < d; ++n) {
        EXPECT_EQ(r.per_head_output[((b * heads + h) * r.tq + i) * d + n], 0.0f);
      }
    }
    const std::span<const float> row(&r.output[(b * r.tq + i) * d], d);
    EXPECT_TRUE(AllNear(row, p.weights.b_o, 1e-6));
  }
}

TEST_P(MhaProperties, FullyPaddedBatchItemGivesZeroWeightsAndBiasOutput) {
  std::mt19937 rng(6);
  const size_t batch = 2, tq = 4, tk = 70;  // tk spans two key blocks
  const MhaProblem p = RandomProblem(Config(20, 2), batch, tq, tk, rng);
  std::vector<uint8_t> padding(batch * tk, 1);
  std::fill_n(padding.begin() + tk, tk, 0);  // batch item 1: no real key
  std::vector<std::pair<size_t, size_t>> masked_rows;
  for (size_t i = 0; i < tq; ++i) masked_rows.emplace_back(1, i);
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "no causal");
    MhaOptions options = WithEverything({});
    options.key_padding_mask = padding;
    options.causal = causal;
    const MhaResult expected = RunReference(p, options);
    const MhaResult r = RunKernels(table(), p, options);
    ExpectFullyMaskedRows(p, r, masked_rows);
    ExpectResultNear(r, expected, kTol);  // batch item 0 is unaffected
  }
}

TEST_P(MhaProperties, QueriesBeforeFirstKeyUnderCausalGetZeros) {
  std::mt19937 rng(7);
  // Tq > Tk, bottom-right aligned: query i sees keys j <= i - 3, so queries
  // 0..2 see none.
  const MhaProblem p = RandomProblem(Config(16, 4), 2, 5, 2, rng);
  MhaOptions options = WithEverything({});
  options.causal = true;
  const MhaResult expected = RunReference(p, options);
  const MhaResult r = RunKernels(table(), p, options);
  ExpectFullyMaskedRows(p, r, {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}});
  ExpectResultNear(r, expected, kTol);
}

TEST_P(MhaProperties, RowOfMinusInfinityMaskGetsZeros) {
  std::mt19937 rng(8);
  const size_t tq = 3, tk = 6;
  const MhaProblem p = RandomProblem(Config(12, 2), 2, tq, tk, rng);
  std::vector<float> mask = RandomAdditiveMask(tq * tk, 0.0, rng);
  std::fill_n(mask.begin() + 1 * tk, tk, kNegInf);  // query 1 sees nothing
  MhaOptions options = WithEverything({});
  options.attn_mask = mask;
  const MhaResult expected = RunReference(p, options);
  const MhaResult r = RunKernels(table(), p, options);
  ExpectFullyMaskedRows(p, r, {{0, 1}, {1, 1}});
  ExpectResultNear(r, expected, kTol);
}

TEST_P(MhaProperties, MinusInfinityAboveDiagonalEqualsCausal) {
  std::mt19937 rng(9);
  // 70 queries: three query blocks, two key blocks.
  for (size_t t : {5, 70}) {
    SCOPED_TRACE(::testing::Message() << "T=" << t);
    const MhaProblem p = RandomProblem(Config(24, 3), 2, t, t, rng);
    std::vector<float> upper(t * t, 0.0f);
    for (size_t i = 0; i < t; ++i) {
      std::fill(upper.begin() + i * t + i + 1, upper.begin() + (i + 1) * t,
                kNegInf);
    }
    MhaOptions additive = WithEverything({});
    additive.attn_mask = upper;
    MhaOptions causal = WithEverything({});
    causal.causal = true;
    ExpectResultNear(RunKernels(table(), p, additive),
                     RunKernels(table(), p, causal), kTol);
  }
}

TEST_P(MhaProperties, PerHeadAdditiveMaskMatchesReference) {
  std::mt19937 rng(10);
  const size_t batch = 2, heads = 3, tq = 6, tk = 9;
  const MhaProblem p = RandomProblem(Config(18, heads), batch, tq, tk, rng);
  const std::vector<float> mask =
      RandomAdditiveMask(batch * heads * tq * tk, 0.3, rng);
  MhaOptions options = WithEverything({});
  options.attn_mask = mask;
  const MhaResult expected = RunReference(p, options);
  // The mask must act per (batch, head): the same problem with only the
  // first [Tq, Tk] slice broadcast would differ.
  MhaOptions broadcast = options;
  broadcast.attn_mask = std::span<const float>(mask).first(tq * tk);
  ASSERT_FALSE(AllNear(RunReference(p, broadcast).output, expected.output, kTol));
  ExpectResultNear(RunKernels(table(), p, options), expected, kTol);
}

TEST_P(MhaProperties, AttentionWeightsAreADistributionOverVisibleKeys) {
  std::mt19937 rng(11);
  const size_t batch = 3, heads = 2, tq = 40, tk = 75;
  const MhaProblem p = RandomProblem(Config(16, heads), batch, tq, tk, rng);
  const std::vector<uint8_t> padding = RandomKeyPadding(batch, tk, 0.6, rng);
  MhaOptions options = WithEverything({});
  options.causal = true;  // with key 0 always real, no row is fully masked
  options.key_padding_mask = padding;
  const MhaResult r = RunKernels(table(), p, options);
  ASSERT_EQ(r.attn_weights.size(), batch * heads * tq * tk);
  for (size_t b = 0; b < batch; ++b) {
    for (size_t h = 0; h < heads; ++h) {
      for (size_t i = 0; i < tq; ++i) {
        SCOPED_TRACE(::testing::Message()
                     << "b=" << b << " h=" << h << " i=" << i);
        double sum = 0;
        for (size_t j = 0; j < tk; ++j) {
          const float w = r.attn_weights[WeightIndex(r, heads, b, h, i, j)];
          const bool visible = padding[b * tk + j] != 0 && j <= i + tk - tq;
          if (visible) {
            EXPECT_GE(w, 0.0f) << "key " << j;
          } else {
            EXPECT_EQ(w, 0.0f) << "hidden key " << j;
          }
          sum += w;
        }
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
    }
  }
}

TEST_P(MhaProperties, CausalWithFewerQueriesThanKeysIsBottomRightAligned) {
  std::mt19937 rng(12);
  const size_t batch = 2, heads = 2, tq = 5, tk = 12;
  const MhaProblem p = RandomProblem(Config(16, heads), batch, tq, tk, rng);
  MhaOptions options = WithEverything({});
  options.causal = true;
  const MhaResult expected = RunReference(p, options);
  const MhaResult r = RunKernels(table(), p, options);
  ExpectResultNear(r, expected, kTol);
  // Independent of the reference: query i sees exactly keys 0..i+7.
  for (size_t b = 0; b < batch; ++b) {
    for (size_t h = 0; h < heads; ++h) {
      for (size_t i = 0; i < tq; ++i) {
        for (size_t j = 0; j < tk; ++j) {
          const float w = r.attn_weights[WeightIndex(r, heads, b, h, i, j)];
          if (j <= i + tk - tq) {
            EXPECT_GT(w, 0.0f) << "b=" << b << " h=" << h << " i=" << i
                               << " j=" << j;
          } else {
            EXPECT_EQ(w, 0.0f) << "b=" << b << " h=" << h << " i=" << i
                               << " j=" << j;
          }
        }
      }
    }
  }
}

// The intermediates follow the specification stage by stage: q, k, v are the
// projections split into heads; z_h = P_h V_h; per-head output = z_h W_O^h.
TEST_P(MhaProperties, IntermediatesFollowTheStages) {
  std::mt19937 rng(21);
  MhaConfig config = Config(20, 4);
  config.head_dim_v = 3;
  config.kdim = 7;
  config.vdim = 9;
  const MhaProblem p = RandomProblem(Resolve(config), 2, 5, 6, rng);
  const size_t B = 2, H = 4, tq = 5, tk = 6, dk = 5, dv = 3, d = 20;
  // X W + b, plainly: [rows, n].
  auto linear = [](const std::vector<float>& x, size_t rows, size_t in,
                   const std::vector<float>& w, const std::vector<float>& b, size_t n) {
    std::vector<double> y(rows * n);
    for (size_t r = 0; r < rows; ++r) {
      for (size_t j = 0; j < n; ++j) {
        double acc = b[j];
        for (size_t i = 0; i < in; ++i) acc += double(x[r * in + i]) * w[i * n + j];
        y[r * n + j] = acc;
      }
    }
    return y;
  };
  const std::vector<double> q = linear(p.query.data, B * tq, d, p.weights.w_q, p.weights.b_q, H * dk);
  const std::vector<double> k = linear(p.key.data, B * tk, 7, p.weights.w_k, p.weights.b_k, H * dk);
  const std::vector<double> v = linear(p.value.data, B * tk, 9, p.weights.w_v, p.weights.b_v, H * dv);
  MultiHeadAttention mha(p.config, table());
  mha.SetWeights(p.weights.View());
  MhaOptions options = WithEverything({});
  options.need_intermediates = true;
  const MhaResult r = mha.Forward(p.query.View(), p.key.View(), p.value.View(), options);
  ASSERT_EQ(r.q.size(), B * H * tq * dk);
  ASSERT_EQ(r.k.size(), B * H * tk * dk);
  ASSERT_EQ(r.v.size(), B * H * tk * dv);
  ASSERT_EQ(r.head_output.size(), B * H * tq * dv);
  for (size_t b = 0; b < B; ++b) {
    for (size_t h = 0; h < H; ++h) {
      for (size_t t = 0; t < tq; ++t) {
        for (size_t e = 0; e < dk; ++e) {
          EXPECT_NEAR(r.q[((b * H + h) * tq + t) * dk + e], q[(b * tq + t) * H * dk + h * dk + e], kTol);
        }
        for (size_t e = 0; e < dv; ++e) {
          double z = 0;  // P_h V_h from the returned weights and values
          for (size_t j = 0; j < tk; ++j) {
            z += r.attn_weights[WeightIndex(r, H, b, h, t, j)] * r.v[((b * H + h) * tk + j) * dv + e];
          }
          EXPECT_NEAR(r.head_output[((b * H + h) * tq + t) * dv + e], z, kTol);
        }
        for (size_t n = 0; n < d; ++n) {
          double contribution = 0;  // z_h W_O^h
          for (size_t e = 0; e < dv; ++e) {
            contribution += r.head_output[((b * H + h) * tq + t) * dv + e] * p.weights.w_o[(h * dv + e) * d + n];
          }
          EXPECT_NEAR(r.per_head_output[((b * H + h) * tq + t) * d + n], contribution, kTol);
        }
      }
      for (size_t t = 0; t < tk; ++t) {
        for (size_t e = 0; e < dk; ++e) {
          EXPECT_NEAR(r.k[((b * H + h) * tk + t) * dk + e], k[(b * tk + t) * H * dk + h * dk + e], kTol);
        }
        for (size_t e = 0; e < dv; ++e) {
          EXPECT_NEAR(r.v[((b * H + h) * tk + t) * dv + e], v[(b * tk + t) * H * dv + h * dv + e], kTol);
        }
      }
    }
  }
}

INSTANTIATE_ON_EVERY_TABLE(MhaProperties);

}  // namespace
}  // namespace simd_attention::testing
