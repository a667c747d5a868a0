// Incremental decoding: MultiHeadAttention::ForwardIncremental with a
// KVCache must give what one full causal Forward over the whole sequence
// gives, however the tokens are split into calls, rolled back or restored;
// PrecomputeKeyValue must give what direct cross-attention gives; and misuse
// is rejected with a message naming the numbers involved, leaving the cache
// as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "golden.h"
#include "incremental_util.h"
#include "random_mha.h"
#include "reference/sdpa_reference.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/weight_type.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

// Incremental and full runs use the same kernels but different GEMM and
// attention tilings (1 query row vs T), so they agree to float rounding,
// not bit for bit.
constexpr double kTol = 1e-5;
// Against the double-precision reference.
constexpr double kRefTol = 1e-4;

MhaConfig SelfConfig(size_t d_model, size_t num_heads) {
  MhaConfig c;
  c.d_model = d_model;
  c.num_heads = num_heads;
  return c;
}

MhaOptions Causal() {
  MhaOptions o;
  o.causal = true;
  return o;
}

MhaOptions CausalWithWeights() {
  MhaOptions o = Causal();
  o.need_weights = true;
  return o;
}

// ---------------------------------------------------------------------------
// Golden self_causal: PyTorch's masked self-attention, fed one token at a
// time.

class KVCacheGolden : public TableTest {
 protected:
  void SetUp() override {
    case_ = LoadGoldenCase("self_causal");
    in_ = MhaInputs(case_);
    ASSERT_TRUE(in_.options.causal) << "self_causal is no longer causal";
  }

  GoldenCase case_;
  MhaCaseInputs in_;
};

TEST_P(KVCacheGolden, TokenByTokenEqualsFullCausalForward) {
  const Tensor3& x = in_.query;
  const size_t heads = in_.config.num_heads;
  MultiHeadAttention mha(in_.config, table());
  mha.SetWeights(in_.weights);
  const MhaResult full = mha.Forward(x, CausalWithWeights());
  // The full run is the thing compared against, so pin it to PyTorch.
  ASSERT_TRUE(AllNear(full.output, case_.Tensor("output").f32, case_.tolerance));
  ASSERT_TRUE(
      AllNear(full.attn_weights, case_.Tensor("attn_weights").f32, case_.tolerance));

  // Weights are optional per step; the output must not depend on asking.
  for (const bool need_weights : {false, true}) {
    SCOPED_TRACE(need_weights ? "with weights" : "without weights");
    KVCache cache = mha.CreateKVCache(x.batch, x.tokens);
    MhaOptions step_options;
    step_options.need_weights = need_weights;
    for (size_t t = 0; t < x.tokens; ++t) {
      SCOPED_TRACE("token " + std::to_string(t));
      const MhaResult step =
          mha.ForwardIncremental(Tokens(x, t, 1).View(), cache, step_options);
      EXPECT_EQ(cache.length(), t + 1);
      EXPECT_EQ(step.tq, 1u);
      EXPECT_EQ(step.tk, t + 1);
      EXPECT_TRUE(AllNear(step.output,
                          TokenRows(full.output, x.batch, x.tokens, in_.config.d_model,
                                    t, 1),
                          kTol));
      if (need_weights) {
        // Probabilities over keys 0..t: exactly row t of the full matrix.
        EXPECT_TRUE(AllNear(step.attn_weights, CausalWeightRows(full, heads, t, 1), kTol));
      } else {
        EXPECT_TRUE(step.attn_weights.empty());
      }
    }
  }
}

TEST_P(KVCacheGolden, ChunkedIncrementalEqualsFullCausalForward) {
  const Tensor3& x = in_.query;
  ASSERT_GT(x.tokens, 8u);
  // A 5-token prompt, a 3-token chunk, then single tokens to the end: chunks
  // after the first have queries that see cached keys and each other.
  std::vector<size_t> chunks = {5, 3};
  for (size_t t = 8; t < x.tokens; ++t) chunks.push_back(1);
  const size_t heads = in_.config.num_heads;
  MultiHeadAttention mha(in_.config, table());
  mha.SetWeights(in_.weights);
  const MhaResult full = mha.Forward(x, CausalWithWeights());
  KVCache cache = mha.CreateKVCache(x.batch, x.tokens);
  MhaOptions options;
  options.need_weights = true;
  std::vector<float> concatenated;
  size_t begin = 0;
  for (const size_t n : chunks) {
    SCOPED_TRACE("chunk at " + std::to_string(begin));
    const MhaResult step = mha.ForwardIncremental(Tokens(x, begin, n).View(), cache, options);
    EXPECT_TRUE(AllNear(step.attn_weights, CausalWeightRows(full, heads, begin, n), kTol));
    concatenated.insert(concatenated.end(), step.output.begin(), step.output.end());
    begin += n;
  }
  EXPECT_EQ(cache.length(), x.tokens);
  // Batch 1, so the concatenation is token-major like the full output.
  ASSERT_EQ(x.batch, 1u);
  EXPECT_TRUE(AllNear(concatenated, full.output, kTol));
  EXPECT_TRUE(AllNear(concatenated, case_.Tensor("output").f32, case_.tolerance));
}

// ---------------------------------------------------------------------------
// Every type a cache holds, against the float64 reference on the keys and
// values it holds (need_intermediates: the query projection and the cache's
// rows, widened exactly, so the reference sees what the kernel read). A
// decoding step's dot products read a 16-bit cache's rows in registers; a
// chunk of many queries widens them into the kernel's scratch for its GEMM.
//
// The bound, float32's worst case (u = 2^-24) per query of a head, with dk
// its width, nk the keys it sees and S = max_j sum_d |scale q_d k_jd|:
//   |z - z_ref| <= max |v| u (2 (dk + 2) S + 3 nk + 16).
// Each score errs by at most (dk + 2) u S (the scaled query and the scale
// rounded, a dot product of dk terms), which moves the softmax's weights by
// at most twice that in total, so the output by twice that times max |v|;
// the sums of p_j and of p_j v_j (products rounded too where there is no
// fused multiply-add) err by at most (nk + 1) u of sum p_j |v_j| each, the
// rescales between key blocks by u each (nk / 64 + 1 of them); exp's 1.6e-7
// relative error and the final division add less than 16u.

class NarrowCacheReference : public TableTest {};

// The largest |error| / bound of each head and query of a step.
double WorstErrorOverBound(const MhaResult& r, const MhaConfig& config, size_t batch,
                           size_t tq) {
  const size_t heads = config.num_heads, dk = config.d_model / heads, dv = dk;
  const size_t tk = r.k.size() / (batch * heads * dk);
  SdpaOptions o;
  o.causal = CausalAlignment::kBottomRight;
  const HeadsTensor q{r.q, batch, heads, tq, dk}, k{r.k, batch, heads, tk, dk},
      v{r.v, batch, heads, tk, dv};
  const SdpaResult want = ReferenceScaledDotProductAttention(q, k, v, o);
  const double scale = 1.0 / std::sqrt(double(dk)), u = 0x1p-24;
  double worst = 0;
  for (size_t bh = 0; bh < batch * heads; ++bh) {
    for (size_t i = 0; i < tq; ++i) {
      const size_t nk = tk - tq + i + 1;
      double s = 0, max_v = 0;
      for (size_t j = 0; j < nk; ++j) {
        double dot = 0;
        for (size_t d = 0; d < dk; ++d) {
          dot += std::fabs(scale * r.q[(bh * tq + i) * dk + d] * r.k[(bh * tk + j) * dk + d]);
        }
        s = std::max(s, dot);
        for (size_t d = 0; d < dv; ++d) {
          max_v = std::max(max_v, double(std::fabs(r.v[(bh * tk + j) * dv + d])));
        }
      }
      const double bound = max_v * u * (2 * (dk + 2) * s + 3 * nk + 16);
      for (size_t d = 0; d < dv; ++d) {
        const size_t at = (bh * tq + i) * dv + d;
        worst = std::max(worst, std::fabs(double(r.head_output[at]) - want.output[at]) / bound);
      }
    }
  }
  return worst;
}

// Decoding steps over a cache of `type` (a prompt, one token, three) with
// W_Q and b_Q times `query_scale` and W_K and b_K divided by it (the same
// scores), each step's output within float32's bound of the float64 result
// on the rows the cache holds.
void ExpectStepsWithinBound(const KernelTable& table, WeightType type, float query_scale) {
  // Head width 40: whole vectors of 4 and 8 lanes, padded on 16; over 150
  // keys, so full key blocks and a tail that is not a multiple of four.
  constexpr size_t kBatch = 2, kPrompt = 150, kDModel = 80, kHeads = 2;
  std::mt19937 rng(41);
  MhaConfig config = Resolve(MhaConfig{.d_model = kDModel, .num_heads = kHeads});
  config.cache_type = type;
  OwnedWeights w = RandomWeights(config, rng);
  for (float& x : w.w_q) x *= query_scale;
  for (float& x : w.b_q) x *= query_scale;
  for (float& x : w.w_k) x /= query_scale;
  for (float& x : w.b_k) x /= query_scale;
  MultiHeadAttention mha(config, table);
  mha.SetWeights(w.View());
  KVCache cache = mha.CreateKVCache(kBatch, kPrompt + 4);
  MhaOptions o;
  o.need_intermediates = true;
  std::printf("%s cache, largest |error| / bound per step:", Traits(type).name);
  for (const size_t n : {kPrompt, size_t{1}, size_t{3}}) {
    const OwnedTensor x = RandomTensor(kBatch, n, kDModel, rng);
    const MhaResult r = mha.ForwardIncremental(x.View(), cache, o);
    const double worst = WorstErrorOverBound(r, mha.config(), kBatch, n);
    std::printf(" %zu tokens %.3g", n, worst);
    EXPECT_LE(worst, 1.0) << n << " tokens";
    EXPECT_GT(worst, 0.0) << n << " tokens";  // float32 differed from float64: it was compared
  }
  std::printf("\n");
}

TEST_P(NarrowCacheReference, StepsStayWithinFloat32sBoundOfTheHeldRows) {
  for (const WeightTypeTraits& t : kWeightTypes) {
    if (!t.in_caches) continue;
    SCOPED_TRACE(t.name);
    ExpectStepsWithinBound(table(), t.value, 1.0f);
  }
}

// Queries of |q| / sqrt(d_k) past 2^16 (and keys of float16's subnormals):
// float16's rebias, times 2^112, cannot move onto them (it would overflow),
// and the step widens its keys some other way: still the float cache's
// scores.
TEST_P(NarrowCacheReference, QueriesTooLargeToTakeFloat16sRebias) {
  ExpectStepsWithinBound(table(), WeightType::kF16, 0x1p22f);
}

// ---------------------------------------------------------------------------
// Random problems: batch > 1, masks, rollback, export and restore.

class KVCacheRandom : public TableTest {
 protected:
  static constexpr size_t kBatch = 2, kTokens = 10, kDModel = 24, kHeads = 3;

  void SetUp() override {
    std::mt19937 rng(7);
    problem_ = SelfAttentionProblem(kBatch, kTokens, rng);
    // Draft tokens that are later rejected: different from the real ones.
    draft_ = RandomTensor(kBatch, 4, kDModel, rng);
  }

  MultiHeadAttention Make(const KernelTable& table) const {
    MultiHeadAttention mha(problem_.config, table);
    mha.SetWeights(problem_.weights.View());
    return mha;
  }

  Tensor3 X() const { return problem_.query.View(); }

  // Self-attention: the tokens are query, key and value alike, so the
  // reference sees what Forward(x) and the cache see.
  static MhaProblem SelfAttentionProblem(size_t batch, size_t tokens, std::mt19937& rng) {
    MhaProblem p = RandomProblem(SelfConfig(kDModel, kHeads), batch, tokens, tokens, rng);
    p.key = p.value = p.query;
    return p;
  }

  // Rows begin..begin+n-1 of a [kBatch, kTokens, kDModel] output.
  static std::vector<float> Rows(const std::vector<float>& full, size_t begin, size_t n) {
    return TokenRows(full, kBatch, kTokens, kDModel, begin, n);
  }

  // Tokens begin..kTokens-1 of X fed one at a time into `cache`: each step
  // gives its row of the straight causal run.
  void ExpectTokenByTokenFrom(size_t begin, MultiHeadAttention& mha, KVCache& cache,
                              const MhaResult& straight) const {
    for (size_t t = begin; t < kTokens; ++t) {
      SCOPED_TRACE("token " + std::to_string(t));
      const MhaResult step = mha.ForwardIncremental(Tokens(X(), t, 1).View(), cache);
      EXPECT_TRUE(AllNear(step.output, Rows(straight.output, t, 1), kTol));
    }
  }

  MhaProblem problem_;
  OwnedTensor draft_;
};

TEST_P(KVCacheRandom, FullCausalForwardMatchesReference) {
  // The anchor for the other tests here: the full run itself is right.
  const MhaResult expected = RunReference(problem_, Causal());
  MultiHeadAttention mha = Make(table());
  ExpectResultNear(mha.Forward(X(), Causal()), expected, kRefTol);
}

TEST_P(KVCacheRandom, PrefixTruncateContinueEqualsStraightRun) {
  MultiHeadAttention mha = Make(table());
  const MhaResult straight = mha.Forward(X(), Causal());

  KVCache cache = mha.CreateKVCache(kBatch, kTokens);
  const MhaResult all = mha.ForwardIncremental(X(), cache);
  EXPECT_TRUE(AllNear(all.output, straight.output, kTol));
  const std::vector<float> keys = cache.Keys(), values = cache.Values();

  cache.Truncate(6);
  EXPECT_EQ(cache.length(), 6u);
  EXPECT_EQ(cache.Keys().size(), kBatch * 6 * kDModel);
  const MhaResult again = mha.ForwardIncremental(Tokens(X(), 6, 4).View(), cache);
  EXPECT_EQ(cache.length(), kTokens);
  EXPECT_EQ(again.tk, kTokens);
  EXPECT_TRUE(AllNear(again.output, Rows(straight.output, 6, 4), kTol));
  EXPECT_TRUE(AllNear(cache.Keys(), keys, kTol));
  EXPECT_TRUE(AllNear(cache.Values(), values, kTol));
}

TEST_P(KVCacheRandom, RejectedDraftIsForgottenAfterTruncate) {
  // Speculative decoding: 4 draft tokens are appended, rejected by rolling
  // back, and the real tokens follow. Nothing of the draft may leak in.
  MultiHeadAttention mha = Make(table());
  const MhaResult straight = mha.Forward(X(), Causal());

  KVCache cache = mha.CreateKVCache(kBatch, kTokens);
  mha.ForwardIncremental(Tokens(X(), 0, 6).View(), cache);
  const MhaResult draft = mha.ForwardIncremental(draft_.View(), cache);
  // The draft changed the answer, so agreement below is not vacuous.
  EXPECT_FALSE(AllNear(draft.output, Rows(straight.output, 6, 4), 1e-3));
  cache.Truncate(6);
  ExpectTokenByTokenFrom(6, mha, cache, straight);
}

TEST_P(KVCacheRandom, ResetThenReuseStartsAfresh) {
  MultiHeadAttention mha = Make(table());
  KVCache cache = mha.CreateKVCache(kBatch, kTokens);
  mha.ForwardIncremental(draft_.View(), cache);
  cache.Reset();
  EXPECT_EQ(cache.length(), 0u);
  EXPECT_TRUE(cache.Keys().empty());
  EXPECT_TRUE(cache.Values().empty());
  EXPECT_EQ(cache.max_length(), kTokens);
  EXPECT_EQ(cache.batch(), kBatch);

  // A whole max_length fits again after the reset.
  ExpectTokenByTokenFrom(0, mha, cache, mha.Forward(X(), Causal()));
}

TEST_P(KVCacheRandom, BatchWithKeyPaddingTokenByToken) {
  // Three sequences with different padding: the mask given to each step
  // covers everything cached plus the new token, [B, length + n].
  constexpr size_t kB = 3, kT = 8;
  std::mt19937 rng(11);
  const MhaProblem p = SelfAttentionProblem(kB, kT, rng);
  const std::vector<uint8_t> mask = RandomKeyPadding(kB, kT, 0.6, rng);
  MhaOptions full_options = CausalWithWeights();
  full_options.key_padding_mask = mask;
  const MhaResult reference = RunReference(p, full_options);
  const Tensor3 x = p.query.View();
  MultiHeadAttention mha(p.config, table());
  mha.SetWeights(p.weights.View());
  const MhaResult full = mha.Forward(x, full_options);
  ExpectResultNear(full, reference, kRefTol);

  KVCache cache = mha.CreateKVCache(kB, kT);
  for (size_t t = 0; t < kT; ++t) {
    SCOPED_TRACE("token " + std::to_string(t));
    const std::vector<uint8_t> step_mask = MaskPrefix(mask, kB, kT, t + 1);
    MhaOptions options;
    options.need_weights = true;
    options.key_padding_mask = step_mask;
    const MhaResult step = mha.ForwardIncremental(Tokens(x, t, 1).View(), cache, options);
    EXPECT_TRUE(AllNear(step.output, TokenRows(full.output, kB, kT, kDModel, t, 1), kTol));
    EXPECT_TRUE(AllNear(step.attn_weights, CausalWeightRows(full, kHeads, t, 1), kTol));
  }
}

// K projection X W_k + b_k of tokens [B, T, d] in plain loops: [B, T, H*d_k].
std::vector<float> ProjectByHand(const Tensor3& x, std::span<const float> w,
                                 std::span<const float> bias, size_t cols) {
  const size_t rows = x.batch * x.tokens, d = x.features;
  std::vector<float> out(rows * cols);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < cols; ++j) {
      double acc = bias[j];
      for (size_t i = 0; i < d; ++i) acc += double(x.data[r * d + i]) * w[i * cols + j];
      out[r * cols + j] = float(acc);
    }
  }
  return out;
}

TEST_P(KVCacheRandom, KeysAndValuesAreTheProjectionsOfTheTokens) {
  // Keys()/Values() are the app-facing export format: unpadded, token-major,
  // exactly X W + b as PyTorch's in_proj would give.
  const std::vector<float> keys =
      ProjectByHand(X(), problem_.weights.w_k, problem_.weights.b_k, kDModel);
  const std::vector<float> values =
      ProjectByHand(X(), problem_.weights.w_v, problem_.weights.b_v, kDModel);
  MultiHeadAttention mha = Make(table());
  KVCache cache = mha.CreateKVCache(kBatch, kTokens + 3);
  mha.ForwardIncremental(Tokens(X(), 0, 4).View(), cache);
  mha.ForwardIncremental(Tokens(X(), 4, 6).View(), cache);
  EXPECT_TRUE(AllNear(cache.Keys(), keys, ScaledTolerance(keys, kTol)));
  EXPECT_TRUE(AllNear(cache.Values(), values, ScaledTolerance(values, kTol)));
}

TEST_P(KVCacheRandom, HoldsEachHeadsRowsOneAfterAnother) {
  // A decoding step reads one head's keys and values as one stream: the
  // cache is head-major, [B, H, max_length, padded head], whatever order
  // (token-major) its rows come and go in.
  MultiHeadAttention mha = Make(table());
  const size_t max_length = kTokens + 3, heads = mha.config().num_kv_heads;
  KVCache cache = mha.CreateKVCache(kBatch, max_length);
  const KVStrides k = cache.key_strides(), v = cache.value_strides();
  const size_t dk_pad = k.row, dv_pad = v.row;
  EXPECT_GE(dk_pad, kDModel / mha.config().num_heads);
  EXPECT_EQ(k.head, max_length * dk_pad);
  EXPECT_EQ(k.batch, heads * max_length * dk_pad);
  EXPECT_EQ(v.head, max_length * dv_pad);
  EXPECT_EQ(v.batch, heads * max_length * dv_pad);
}

TEST_P(KVCacheRandom, ExportedThenAppendedCacheEqualsOriginal) {
  constexpr size_t kPrompt = 7;
  const OwnedTensor next = Tokens(X(), kPrompt, 1);
  MultiHeadAttention original = Make(table());
  KVCache cache = original.CreateKVCache(kBatch, kTokens + 2);
  original.ForwardIncremental(Tokens(X(), 0, 4).View(), cache);
  original.ForwardIncremental(Tokens(X(), 4, 3).View(), cache);
  const std::vector<float> keys = cache.Keys(), values = cache.Values();
  ASSERT_EQ(keys.size(), kBatch * kPrompt * kDModel);
  ASSERT_EQ(values.size(), kBatch * kPrompt * kDModel);

  // A separate instance with the same weights and a cache of another
  // capacity (so its batch stride differs) restores the prompt.
  MultiHeadAttention restored = Make(table());
  KVCache copy = restored.CreateKVCache(kBatch, kTokens);
  copy.Append(keys, values, kPrompt);
  EXPECT_EQ(copy.length(), kPrompt);
  // Restoring is a copy, so it is exact.
  EXPECT_TRUE(AllNear(copy.Keys(), keys, 0));
  EXPECT_TRUE(AllNear(copy.Values(), values, 0));

  MhaOptions options;
  options.need_weights = true;
  const MhaResult a = original.ForwardIncremental(next.View(), cache, options);
  const MhaResult b = restored.ForwardIncremental(next.View(), copy, options);
  EXPECT_TRUE(AllNear(b.output, a.output, 0));
  EXPECT_TRUE(AllNear(b.attn_weights, a.attn_weights, 0));
  EXPECT_EQ(copy.length(), cache.length());

  // The exported format has no padding, so a prompt cached on one target
  // restores on every other (a different vector width and padding).
  for (const KernelTable* other : AllKernelTables()) {
    SCOPED_TRACE(std::string("restored on ") + other->name);
    MultiHeadAttention elsewhere = Make(*other);
    KVCache moved = elsewhere.CreateKVCache(kBatch, kTokens);
    moved.Append(keys, values, kPrompt);
    EXPECT_TRUE(AllNear(moved.Keys(), keys, 0));
    const MhaResult c = elsewhere.ForwardIncremental(next.View(), moved, options);
    EXPECT_TRUE(AllNear(c.output, a.output, kTol));
  }
}

TEST_P(KVCacheRandom, AppendInSeveralPiecesEqualsOneAppend) {
  // Keys/values of [B, n, F] are batch-major: appending n1 then n2 tokens
  // must interleave them per batch item, not per call.
  MultiHeadAttention mha = Make(table());
  KVCache source = mha.CreateKVCache(kBatch, kTokens);
  mha.ForwardIncremental(X(), source);
  const std::vector<float> keys = source.Keys(), values = source.Values();

  KVCache pieces = mha.CreateKVCache(kBatch, kTokens);
  pieces.Append(TokenRows(keys, kBatch, kTokens, kDModel, 0, 3),
                TokenRows(values, kBatch, kTokens, kDModel, 0, 3), 3);
  pieces.Append(TokenRows(keys, kBatch, kTokens, kDModel, 3, 7),
                TokenRows(values, kBatch, kTokens, kDModel, 3, 7), 7);
  EXPECT_TRUE(AllNear(pieces.Keys(), keys, 0));
  EXPECT_TRUE(AllNear(pieces.Values(), values, 0));
}

// ---------------------------------------------------------------------------
// int8 caches: each head's row of one token quantized on its own
// (kv_cache.h), so each held value lies within max |row| / 254 of the
// float it came from. A score then moves by at most D = scale * sum_d
// |q_d| max |k row| / 254, each softmax weight by a factor within
// e^(+-2D), so a head's output by at most max |v| (e^(2D) - 1 + 1 / 254)
// (the weights sum to 1; each value within max |v| / 254), plus float32's
// rounding.

MultiHeadAttention WithCache(const MhaProblem& p, WeightType cache_type,
                             const KernelTable& table) {
  MhaConfig config = p.config;
  config.cache_type = cache_type;
  MultiHeadAttention mha(config, table);
  mha.SetWeights(p.weights.View());
  return mha;
}

// Each [B, T, H * d] row of `got` within max |row of want| / 254 of `want`.
void ExpectWithinRowScale(const std::vector<float>& got, const std::vector<float>& want,
                          size_t d) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < want.size(); r += d) {
    double largest = 0;
    for (size_t i = r; i < r + d; ++i) largest = std::max(largest, double(std::fabs(want[i])));
    for (size_t i = r; i < r + d; ++i) {
      ASSERT_LE(std::fabs(double(got[i]) - want[i]), largest / 254 * (1 + 1e-6)) << "element " << i;
    }
  }
}

TEST_P(KVCacheRandom, Int8CacheHoldsEachRowWithinItsScale) {
  MultiHeadAttention f32 = WithCache(problem_, WeightType::kF32, table());
  MultiHeadAttention int8 = WithCache(problem_, WeightType::kInt8, table());
  KVCache exact = f32.CreateKVCache(kBatch, kTokens), held = int8.CreateKVCache(kBatch, kTokens);
  f32.ForwardIncremental(X(), exact);
  int8.ForwardIncremental(Tokens(X(), 0, 4).View(), held);
  int8.ForwardIncremental(Tokens(X(), 4, 6).View(), held);
  EXPECT_EQ(held.type(), WeightType::kInt8);
  const size_t d = kDModel / kHeads;
  ExpectWithinRowScale(held.Keys(), exact.Keys(), d);
  ExpectWithinRowScale(held.Values(), exact.Values(), d);
  EXPECT_FALSE(AllNear(held.Keys(), exact.Keys(), 0));  // rounded: the bound was tested
  // A byte a value plus a float scale per head row of keys and of values.
  const size_t rows = kBatch * kTokens * kHeads;
  EXPECT_EQ(held.bytes(), exact.bytes() / 4 + 2 * rows * sizeof(float));
}

// The largest |error| / bound of the head outputs `got` ([B * H, nq, d],
// queries q0.. of `want`) against `want`, a float32 run with intermediates
// over tq queries and tk keys; query i sees keys up to tk - tq + i when
// causal, else all.
double Int8ErrorOverBound(const std::vector<float>& got, const MhaResult& want, size_t bh_count,
                          size_t tq, size_t tk, size_t d, size_t q0, size_t nq, bool causal) {
  const double scale = 1.0 / std::sqrt(double(d));
  double worst = 0;
  for (size_t bh = 0; bh < bh_count; ++bh) {
    for (size_t i = q0; i < q0 + nq; ++i) {
      const float* q = want.q.data() + (bh * tq + i) * d;
      const size_t visible = causal ? tk - tq + i + 1 : tk;
      double max_score_move = 0, max_v = 0;
      for (size_t j = 0; j < visible; ++j) {
        const float* k = want.k.data() + (bh * tk + j) * d;
        const float* v = want.v.data() + (bh * tk + j) * d;
        double q1 = 0, kmax = 0;
        for (size_t e = 0; e < d; ++e) {
          q1 += std::fabs(q[e]);
          kmax = std::max(kmax, double(std::fabs(k[e])));
          max_v = std::max(max_v, double(std::fabs(v[e])));
        }
        max_score_move = std::max(max_score_move, scale * q1 * kmax / 254);
      }
      const double bound = max_v * (std::expm1(2 * max_score_move) + 1.0 / 254 + 1e-5);
      for (size_t e = 0; e < d; ++e) {
        const double err = std::fabs(double(got[(bh * nq + i - q0) * d + e]) -
                                     want.head_output[(bh * tq + i) * d + e]);
        worst = std::max(worst, err / bound);
      }
    }
  }
  return worst;
}

TEST_P(KVCacheRandom, Int8CacheRoundsToNearestEven) {
  // A head's row of largest magnitude 127 has scale 1: each value rounded
  // to an integer, ties to even; a row of zeros stays zeros.
  MultiHeadAttention mha = WithCache(problem_, WeightType::kInt8, table());
  KVCache cache = mha.CreateKVCache(kBatch, 1);
  const std::vector<float> row = {127, 2.5f, -2.5f, 1.5f, 0.5f, -0.5f, 3.5f, -126.7f};
  const std::vector<float> held = {127, 2, -2, 2, 0, 0, 4, -127};
  std::vector<float> keys, values, want;
  for (size_t r = 0; r < kBatch * kHeads; ++r) {
    keys.insert(keys.end(), row.begin(), row.end());
    want.insert(want.end(), held.begin(), held.end());
  }
  values.assign(keys.size(), 0.0f);
  cache.Append(keys, values, 1);
  EXPECT_EQ(cache.Keys(), want);
  EXPECT_EQ(cache.Values(), values);
}

TEST_P(KVCacheRandom, Int8CacheHoldsRowsNearFloat32sLargestFinite) {
  // float32's largest / 127 rounds up: 127 times it would be infinite.
  MultiHeadAttention mha = WithCache(problem_, WeightType::kInt8, table());
  KVCache cache = mha.CreateKVCache(kBatch, 1);
  const float top = std::numeric_limits<float>::max();
  std::vector<float> keys(kBatch * kDModel, 1.0f);
  keys[0] = top;
  keys[1] = -top;
  const std::vector<float> values = keys;
  cache.Append(keys, values, 1);
  for (const std::vector<float>& held : {cache.Keys(), cache.Values()}) {
    for (size_t i = 0; i < held.size(); ++i) {
      ASSERT_TRUE(std::isfinite(held[i])) << i;
      EXPECT_LE(std::fabs(held[i] - keys[i]), top / 254) << i;
    }
  }
}

TEST_P(KVCacheRandom, Int8DecodingStaysWithinItsBoundOfTheCausalForward) {
  MultiHeadAttention f32 = WithCache(problem_, WeightType::kF32, table());
  MultiHeadAttention int8 = WithCache(problem_, WeightType::kInt8, table());
  MhaOptions o = Causal();
  o.need_intermediates = true;
  const MhaResult full = f32.Forward(X(), o);
  KVCache cache = int8.CreateKVCache(kBatch, kTokens);
  const size_t d = kDModel / kHeads;
  double worst = 0;
  for (size_t t = 0; t < kTokens; ++t) {
    MhaOptions step_options;
    step_options.need_intermediates = true;
    const MhaResult step = int8.ForwardIncremental(Tokens(X(), t, 1).View(), cache, step_options);
    worst = std::max(worst, Int8ErrorOverBound(step.head_output, full, kBatch * kHeads, kTokens,
                                               kTokens, d, t, 1, true));
  }
  std::printf("int8 cache: largest |error| / bound %.3g\n", worst);
  EXPECT_LE(worst, 1.0);
  EXPECT_GT(worst, 0.0);
}

TEST_P(KVCacheRandom, Int8CacheTruncatedOrRestoredContinuesAsTheOriginal) {
  MultiHeadAttention mha = WithCache(problem_, WeightType::kInt8, table());
  KVCache cache = mha.CreateKVCache(kBatch, kTokens);
  const MhaResult straight = mha.ForwardIncremental(X(), cache);
  const std::vector<float> keys = cache.Keys(), values = cache.Values();
  // The rows kept are untouched, the rows after them stored afresh: the
  // same numbers (the outputs from 4 queries, not 10: to float rounding).
  cache.Truncate(6);
  const MhaResult again = mha.ForwardIncremental(Tokens(X(), 6, 4).View(), cache);
  EXPECT_TRUE(AllNear(again.output, Rows(straight.output, 6, 4), kTol));
  EXPECT_TRUE(AllNear(cache.Keys(), keys, 0));
  EXPECT_TRUE(AllNear(cache.Values(), values, 0));

  // Exported rows quantize again to the same integers; a row's scale, from
  // its largest value exported, may move by a rounding.
  KVCache copy = mha.CreateKVCache(kBatch, kTokens + 1);
  copy.Append(TokenRows(keys, kBatch, kTokens, kDModel, 0, 7),
              TokenRows(values, kBatch, kTokens, kDModel, 0, 7), 7);
  EXPECT_TRUE(AllNear(copy.Keys(), TokenRows(keys, kBatch, kTokens, kDModel, 0, 7),
                      ScaledTolerance(keys, 1e-6)));
  EXPECT_TRUE(AllNear(copy.Values(), TokenRows(values, kBatch, kTokens, kDModel, 0, 7),
                      ScaledTolerance(values, 1e-6)));
  const MhaResult next = mha.ForwardIncremental(Tokens(X(), 7, 3).View(), copy);
  EXPECT_TRUE(AllNear(next.output, Rows(straight.output, 7, 3), kTol));
}

// ---------------------------------------------------------------------------
// Precomputed cross-attention keys and values.

class PrecomputedKVTest : public TableTest {
 protected:
  // kdim == vdim (memory is both keys and values) but != d_model, so the
  // memory's own width is what gets projected.
  static constexpr size_t kBatch = 2, kTq = 3, kTk = 5;

  void SetUp() override {
    std::mt19937 rng(21);
    MhaConfig config = SelfConfig(16, 2);
    config.kdim = config.vdim = 12;
    problem_ = RandomProblem(config, kBatch, kTq, kTk, rng);
    // key == value: the precomputed path projects one memory tensor.
    problem_.value = problem_.key;
    other_query_ = RandomTensor(kBatch, 4, 16, rng);
  }

  Tensor3 Memory() const { return problem_.key.View(); }

  MhaProblem problem_;
  OwnedTensor other_query_;
  // Different per batch item and from each other; key 0 real in both.
  const std::vector<uint8_t> mask_a_ = {1, 1, 0, 1, 0, /**/ 1, 0, 1, 1, 1};
  const std::vector<uint8_t> mask_b_ = {1, 0, 1, 1, 1, /**/ 1, 1, 1, 0, 0};
};

TEST_P(PrecomputedKVTest, EqualsDirectCrossAttention) {
  MhaOptions plain;
  plain.need_weights = true;
  plain.need_per_head_output = true;
  const MhaResult reference = RunReference(problem_, plain);
  MultiHeadAttention mha(problem_.config, table());
  mha.SetWeights(problem_.weights.View());
  const PrecomputedKV kv = mha.PrecomputeKeyValue(Memory());
  EXPECT_EQ(kv.batch(), kBatch);
  EXPECT_EQ(kv.tokens(), kTk);
  const MhaResult direct = mha.Forward(problem_.query.View(), Memory(), Memory(), plain);
  const MhaResult pre = mha.Forward(problem_.query.View(), kv, plain);
  ExpectResultNear(pre, direct, kTol);
  ExpectResultNear(pre, reference, kRefTol);

  // Reusable: a second query (another decoding step) against the same K/V.
  const MhaResult again = mha.Forward(other_query_.View(), kv, plain);
  ExpectResultNear(again, mha.Forward(other_query_.View(), Memory(), Memory(), plain),
                   kTol);
}

// Precomputed int8 rows are token-major, a scale per head of each token:
// the attention reads each head's scales that far apart.
TEST_P(PrecomputedKVTest, Int8StaysWithinItsBoundOfFloat32) {
  MhaOptions o;
  o.need_intermediates = true;
  const auto run = [&](WeightType cache_type) {
    MhaConfig config = problem_.config;
    config.cache_type = cache_type;
    MultiHeadAttention mha(config, table());
    mha.SetWeights(problem_.weights.View());
    const PrecomputedKV kv = mha.PrecomputeKeyValue(Memory());
    EXPECT_EQ(kv.type(), cache_type);
    return mha.Forward(problem_.query.View(), kv, o);
  };
  const MhaResult want = run(WeightType::kF32), got = run(WeightType::kInt8);
  const size_t heads = problem_.config.num_heads, d = problem_.config.d_model / heads;
  const double worst =
      Int8ErrorOverBound(got.head_output, want, kBatch * heads, kTq, kTk, d, 0, kTq, false);
  std::printf("int8 precomputed: largest |error| / bound %.3g\n", worst);
  EXPECT_LE(worst, 1.0);
  EXPECT_GT(worst, 0.0);
}

TEST_P(PrecomputedKVTest, MaskFromPrecomputeAppliesUnlessOptionsGiveOne) {
  MhaOptions with_a, with_b;
  with_a.need_weights = with_b.need_weights = true;
  with_a.key_padding_mask = mask_a_;
  with_b.key_padding_mask = mask_b_;
  const MhaResult reference_a = RunReference(problem_, with_a);
  const MhaResult reference_b = RunReference(problem_, with_b);
  // The two masks must lead to different answers for the override to show.
  ASSERT_FALSE(AllNear(reference_a.output, reference_b.output, 1e-3));
  MhaOptions no_mask;
  no_mask.need_weights = true;
  MultiHeadAttention mha(problem_.config, table());
  mha.SetWeights(problem_.weights.View());
  const PrecomputedKV kv = mha.PrecomputeKeyValue(Memory(), mask_a_);
  const MhaResult direct_a = mha.Forward(problem_.query.View(), Memory(), Memory(), with_a);
  const MhaResult direct_b = mha.Forward(problem_.query.View(), Memory(), Memory(), with_b);
  {
    SCOPED_TRACE("mask from PrecomputeKeyValue");
    const MhaResult pre = mha.Forward(problem_.query.View(), kv, no_mask);
    ExpectResultNear(pre, direct_a, kTol);
    ExpectResultNear(pre, reference_a, kRefTol);
  }
  {
    SCOPED_TRACE("mask from options overrides");
    const MhaResult pre = mha.Forward(problem_.query.View(), kv, with_b);
    ExpectResultNear(pre, direct_b, kTol);
    ExpectResultNear(pre, reference_b, kRefTol);
  }
  {
    SCOPED_TRACE("unmasked precompute, mask from options");
    const PrecomputedKV unmasked = mha.PrecomputeKeyValue(Memory());
    ExpectResultNear(mha.Forward(problem_.query.View(), unmasked, with_a), direct_a, kTol);
  }
}

// ---------------------------------------------------------------------------
// Errors: a clear message with the numbers, and nothing changed.

class KVCacheErrors : public TableTest {
 protected:
  static constexpr size_t kBatch = 2, kTokens = 6, kDModel = 16, kHeads = 2;

  void SetUp() override {
    std::mt19937 rng(5);
    problem_ = RandomProblem(SelfConfig(kDModel, kHeads), kBatch, kTokens, kTokens, rng);
  }

  MultiHeadAttention Make(const KernelTable& table, const MhaConfig& config) const {
    std::mt19937 rng(6);
    MultiHeadAttention mha(config, table);
    mha.SetWeights(RandomWeights(Resolve(config), rng).View());
    return mha;
  }

  MultiHeadAttention Make(const KernelTable& table) const {
    MultiHeadAttention mha(problem_.config, table);
    mha.SetWeights(problem_.weights.View());
    return mha;
  }

  Tensor3 X() const { return problem_.query.View(); }

  // `mha` refuses to decode X's first token into `cache`, with a message
  // naming `fragments`, and the cache stays empty.
  void ExpectFirstStepRefused(MultiHeadAttention& mha, KVCache& cache,
                              std::initializer_list<std::string_view> fragments) {
    EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
        [&] { mha.ForwardIncremental(Tokens(X(), 0, 1).View(), cache); }, fragments));
    EXPECT_EQ(cache.length(), 0u);
  }

  // The cache holds tokens 0..length-1 of X, unchanged by a rejected call:
  // same length, same keys, and token `length` continues the straight run.
  void ExpectCacheIntact(MultiHeadAttention& mha, KVCache& cache, size_t length,
                         const std::vector<float>& keys) {
    EXPECT_EQ(cache.length(), length);
    EXPECT_TRUE(AllNear(cache.Keys(), keys, 0));
    const MhaResult straight = mha.Forward(X(), Causal());
    const MhaResult step = mha.ForwardIncremental(Tokens(X(), length, 1).View(), cache);
    EXPECT_TRUE(AllNear(step.output,
                        TokenRows(straight.output, kBatch, kTokens, kDModel, length, 1), kTol));
  }

  MhaProblem problem_;
};

TEST_P(KVCacheErrors, OverflowIsALengthErrorAndLeavesTheCacheAsItWas) {
  MultiHeadAttention mha = Make(table());
  KVCache cache = mha.CreateKVCache(kBatch, 4);
  mha.ForwardIncremental(Tokens(X(), 0, 3).View(), cache);
  const std::vector<float> keys = cache.Keys();
  const std::vector<float> values = cache.Values();
  EXPECT_TRUE(ThrowsWith<std::length_error>(
      [&] { mha.ForwardIncremental(Tokens(X(), 3, 2).View(), cache); },
      {"KV cache full", "3 of 4", "add 2"}));
  EXPECT_EQ(cache.length(), 3u);
  EXPECT_TRUE(AllNear(cache.Values(), values, 0));

  // Append overflows the same way.
  const std::vector<float> two(kBatch * 2 * kDModel, 0.5f);
  EXPECT_TRUE(ThrowsWith<std::length_error>([&] { cache.Append(two, two, 2); },
                                            {"KV cache full", "3 of 4", "add 2"}));
  ExpectCacheIntact(mha, cache, 3, keys);  // fills the last slot

  EXPECT_TRUE(ThrowsWith<std::length_error>(
      [&] { mha.ForwardIncremental(Tokens(X(), 4, 1).View(), cache); },
      {"KV cache full", "4 of 4", "add 1"}));
  EXPECT_EQ(cache.length(), 4u);
}

TEST_P(KVCacheErrors, MismatchedBatch) {
  MultiHeadAttention mha = Make(table());
  KVCache cache = mha.CreateKVCache(kBatch, kTokens);
  mha.ForwardIncremental(Tokens(X(), 0, 2).View(), cache);
  const std::vector<float> keys = cache.Keys();
  std::mt19937 rng(1);
  const OwnedTensor three = RandomTensor(3, 1, kDModel, rng);
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { mha.ForwardIncremental(three.View(), cache); },
      {"x.batch", "expected 2", "batch of the KV cache", "got 3"}));
  ExpectCacheIntact(mha, cache, 2, keys);
}

TEST_P(KVCacheErrors, CacheOrMemoryOfAnotherHeadLayout) {
  MultiHeadAttention mha = Make(table());
  MultiHeadAttention four_heads = Make(table(), SelfConfig(kDModel, 4));
  KVCache foreign = four_heads.CreateKVCache(kBatch, kTokens);
  ExpectFirstStepRefused(mha, foreign, {"KV cache", "4 heads of d_k 4", "2 heads of d_k 8"});

  const PrecomputedKV memory = four_heads.PrecomputeKeyValue(X());
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { mha.Forward(X(), memory); },
      {"precomputed key/value", "4 heads", "2 heads"}));

  // Same heads, different d_v: also a different layout.
  MultiHeadAttention other_dv =
      Make(table(), {.d_model = kDModel, .num_heads = kHeads, .head_dim_v = 5});
  KVCache dv_cache = other_dv.CreateKVCache(kBatch, kTokens);
  ExpectFirstStepRefused(mha, dv_cache, {"KV cache", "d_v 5", "d_v 8"});
}

TEST_P(KVCacheErrors, AppendWithWrongLengthsOrValues) {
  MultiHeadAttention mha = Make(table());
  KVCache cache = mha.CreateKVCache(kBatch, kTokens);
  mha.ForwardIncremental(Tokens(X(), 0, 2).View(), cache);
  const std::vector<float> keys = cache.Keys();
  const std::vector<float> good(kBatch * 1 * kDModel, 0.25f);
  const std::vector<float> short_by_one(good.size() - 1, 0.25f);
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { cache.Append(short_by_one, good, 1); },
      {"keys", "expected 32", "[2, 1, 16]", "got 31"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { cache.Append(good, short_by_one, 1); },
      {"values", "expected 32", "[2, 1, 16]", "got 31"}));
  // Right lengths for 1 token, but n says 2.
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { cache.Append(good, good, 2); },
                                                {"keys", "[2, 2, 16]", "got 32"}));
  std::vector<float> nan = good;
  nan[5] = std::nanf("");
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { cache.Append(good, nan, 1); },
                                                {"values", "element 5", "NaN"}));
  ExpectCacheIntact(mha, cache, 2, keys);
}

TEST_P(KVCacheErrors, TruncateBeyondLength) {
  MultiHeadAttention mha = Make(table());
  KVCache cache = mha.CreateKVCache(kBatch, kTokens);
  mha.ForwardIncremental(Tokens(X(), 0, 3).View(), cache);
  const std::vector<float> keys = cache.Keys();
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { cache.Truncate(4); },
                                                {"n: expected at most the cache's length (3), got 4"}));
  cache.Truncate(3);  // to the current length: allowed, a no-op
  ExpectCacheIntact(mha, cache, 3, keys);
}

TEST_P(KVCacheErrors, CacheOfNoCapacityOrBatch) {
  MultiHeadAttention mha = Make(table());
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { mha.CreateKVCache(kBatch, 0); },
                                                {"max_length: must be > 0, got 0"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { mha.CreateKVCache(0, 4); },
                                                {"batch: must be > 0, got 0"}));
}

TEST_P(KVCacheErrors, IncrementalNeedsSelfAttentionWidths) {
  MultiHeadAttention cross = Make(table(), {.d_model = kDModel, .num_heads = kHeads, .kdim = 12});
  KVCache cache = cross.CreateKVCache(kBatch, kTokens);
  ExpectFirstStepRefused(
      cross, cache,
      {"incremental self-attention needs kdim == vdim == d_model (16), got kdim 12, vdim 16"});

  MultiHeadAttention cross_v = Make(table(), {.d_model = kDModel, .num_heads = kHeads, .vdim = 10});
  KVCache cache_v = cross_v.CreateKVCache(kBatch, kTokens);
  ExpectFirstStepRefused(cross_v, cache_v,
                         {"incremental self-attention needs", "got kdim 16, vdim 10"});
}

TEST_P(KVCacheErrors, PrecomputeNeedsEqualKeyAndValueWidths) {
  MhaConfig config = SelfConfig(kDModel, kHeads);
  config.kdim = 12;
  config.vdim = 10;
  MultiHeadAttention mha = Make(table(), config);
  std::mt19937 rng(2);
  const OwnedTensor memory = RandomTensor(kBatch, 3, 12, rng);
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { mha.PrecomputeKeyValue(memory.View()); }, {"kdim (12)", "vdim (10)"}));
}

TEST_P(KVCacheErrors, BadPrecomputeOrPrecomputedForwardArguments) {
  MultiHeadAttention mha = Make(table());
  const std::vector<uint8_t> short_mask(kBatch * kTokens - 1, 1);
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { mha.PrecomputeKeyValue(X(), short_mask); },
      {"key_padding_mask", "[2, 6]", "got 11"}));
  const PrecomputedKV kv = mha.PrecomputeKeyValue(X());
  const OwnedTensor one = Tokens(Tensor3{problem_.query.data, 1, kTokens, kDModel}, 0, 1);
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { mha.Forward(one.View(), kv); },
      {"query.batch", "expected 2", "precomputed memory", "got 1"}));
}

TEST_P(KVCacheErrors, IncrementalMaskMustCoverCacheAndNewTokens) {
  MultiHeadAttention mha = Make(table());
  KVCache cache = mha.CreateKVCache(kBatch, kTokens);
  mha.ForwardIncremental(Tokens(X(), 0, 3).View(), cache);
  const std::vector<float> keys = cache.Keys();
  // A mask of the new token only, [2, 1], where [2, 4] is needed.
  const std::vector<uint8_t> new_only(kBatch, 1);
  MhaOptions options;
  options.key_padding_mask = new_only;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { mha.ForwardIncremental(Tokens(X(), 3, 1).View(), cache, options); },
      {"key_padding_mask", "[2, 4]", "got 2"}));
  // A non-finite token is rejected before anything is projected.
  OwnedTensor bad = Tokens(X(), 3, 1);
  bad.data[7] = std::nanf("");
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { mha.ForwardIncremental(bad.View(), cache); }, {"x", "element 7", "NaN"}));
  ExpectCacheIntact(mha, cache, 3, keys);
}

TEST_P(KVCacheErrors, IncrementalBeforeSetWeights) {
  MultiHeadAttention mha(problem_.config, table());
  KVCache cache = mha.CreateKVCache(kBatch, kTokens);
  EXPECT_TRUE(ThrowsWith<std::logic_error>(
      [&] { mha.ForwardIncremental(Tokens(X(), 0, 1).View(), cache); }, {"SetWeights"}));
  EXPECT_EQ(cache.length(), 0u);
}

INSTANTIATE_ON_EVERY_TABLE(NarrowCacheReference);
INSTANTIATE_ON_EVERY_TABLE(KVCacheGolden);
INSTANTIATE_ON_EVERY_TABLE(KVCacheRandom);
INSTANTIATE_ON_EVERY_TABLE(PrecomputedKVTest);
INSTANTIATE_ON_EVERY_TABLE(KVCacheErrors);

}  // namespace
}  // namespace simd_attention::testing
