// TransformerBlock and TransformerStack: the blocks of today's models as
// sublayer lists (Llama, Qwen3's QK-norm, Gemma 2's sandwich norms, GPT-J's
// parallel attention and MLP, post-LN encoders, decoders with
// cross-attention, the tiny model's norm-free layers) against the double
// reference on every kernel table; the encoder layer as an instance of the
// block; decoding token by token equal to the causal forward, through one
// block and a stack; the RMSNorm and gated-product kernels; configuration
// and weight errors; the mixture of experts (Mixtral, OLMoE) on every
// storage type of its experts and every thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "random_block.h"
#include "random_mha.h"
#include "reference/block_reference.h"
#include "reference/layers_reference.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/transformer_block.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

constexpr double kBlockTol = 1e-4;  // float kernels against the double reference
constexpr double kTol = 1e-5;       // one float path against another

// The blocks of today's models, small.
struct BlockCase {
  const char* name;
  BlockConfig config;
  bool attention_bias;
  bool causal;
  SelfAttentionOptions self;
};

// 32 wide, 48 FFN units.
BlockConfig Base(size_t heads, size_t kv_heads, NormKind norm, Activation act,
                 std::vector<Sublayer> sublayers) {
  return MakeBlockConfig(32, heads, kv_heads, 48, norm, act, std::move(sublayers));
}

std::vector<BlockCase> Cases() {
  using M = MixerKind;
  using P = NormPlacement;
  std::vector<BlockCase> cases;
  {  // Llama: RMSNorm before GQA attention with RoPE and before SwiGLU.
    BlockConfig c = Base(4, 2, NormKind::kRmsNorm, Activation::kSilu,
                         {{M::kSelfAttention, P::kPre}, {M::kGatedFeedForward, P::kPre}});
    c.rope = {RopeStyle::kHalf, 10000.0, 0};
    cases.push_back({"llama", c, false, true, {}});
  }
  {  // Qwen3: the same with QK-norm, biases on q/k/v.
    BlockConfig c = Base(4, 2, NormKind::kRmsNorm, Activation::kSilu,
                         {{M::kSelfAttention, P::kPre}, {M::kGatedFeedForward, P::kPre}});
    c.rope = {RopeStyle::kHalf, 1e6, 0};
    c.qk_norm = {true, NormKind::kRmsNorm, 1e-6};
    cases.push_back({"qwen3", c, true, true, {}});
  }
  {  // Gemma 2: (1 + w) RMSNorms around both sublayers, GeGLU, window,
     // soft-cap and scale.
    BlockConfig c = Base(4, 2, NormKind::kGemmaRmsNorm, Activation::kGeluTanh,
                         {{M::kSelfAttention, P::kSandwich}, {M::kGatedFeedForward, P::kSandwich}});
    c.rope = {RopeStyle::kHalf, 10000.0, 0};
    SelfAttentionOptions o;
    o.window = {3, 0};
    o.softcap = 50.0;
    o.scale = 0.25;
    cases.push_back({"gemma2", c, false, true, o});
  }
  {  // Nemotron: LayerNorm1P ((1 + w) LayerNorms) before attention with
     // partial RoPE and before the FFN.
    BlockConfig c = Base(4, 2, NormKind::kLayerNorm1p, Activation::kRelu,
                         {{M::kSelfAttention, P::kPre}, {M::kFeedForward, P::kPre}});
    c.rope = {RopeStyle::kHalf, 10000.0, 4};
    cases.push_back({"nemotron_layer_norm_1p", c, false, true, {}});
  }
  {  // GPT-J: attention and MLP side by side, interleaved partial RoPE.
    BlockConfig c = Base(4, 4, NormKind::kLayerNorm, Activation::kGeluTanh,
                         {{M::kSelfAttention, P::kPre}, {M::kFeedForward, P::kPre, true}});
    c.rope = {RopeStyle::kInterleaved, 10000.0, 4};
    cases.push_back({"gptj_parallel", c, false, true, {}});
  }
  {  // The tiny model's layers: no norms, h + f(h).
    BlockConfig c = Base(4, 4, NormKind::kLayerNorm, Activation::kRelu,
                         {{M::kSelfAttention, P::kNone}, {M::kFeedForward, P::kNone}});
    cases.push_back({"no_norm", c, true, true, {}});
  }
  {  // Mixtral: RMSNorm before GQA attention with RoPE and before a sparse
     // mixture of SwiGLU experts, each token's top 2 of 4 renormalized.
    BlockConfig c = Base(4, 2, NormKind::kRmsNorm, Activation::kSilu,
                         {{M::kSelfAttention, P::kPre}, {M::kMixtureOfExperts, P::kPre}});
    c.rope = {RopeStyle::kHalf, 1e6, 0};
    c.num_experts = 4;
    cases.push_back({"mixtral", c, false, true, {}});
  }
  {  // OLMoE: QK-norm, the top 3 of 5 experts' probabilities as they are
     // (norm_topk_prob false).
    BlockConfig c = Base(4, 4, NormKind::kRmsNorm, Activation::kSilu,
                         {{M::kSelfAttention, P::kPre}, {M::kMixtureOfExperts, P::kPre}});
    c.rope = {RopeStyle::kHalf, 10000.0, 0};
    c.qk_norm = {true, NormKind::kRmsNorm, 1e-6};
    c.num_experts = 5;
    c.experts_per_token = 3;
    c.normalize_top_k = false;
    cases.push_back({"olmoe", c, false, true, {}});
  }
  {  // BERT: post-LN encoder layer.
    BlockConfig c = Base(4, 4, NormKind::kLayerNorm, Activation::kGeluErf,
                         {{M::kSelfAttention, P::kPost}, {M::kFeedForward, P::kPost}});
    cases.push_back({"post_ln_encoder", c, true, false, {}});
  }
  return cases;
}

class BlockVsReference : public TableTest {};

TEST_P(BlockVsReference, EveryModelBlock) {
  for (const BlockCase& bc : Cases()) {
    SCOPED_TRACE(bc.name);
    std::mt19937 rng(7);
    TransformerBlock block(bc.config, table(), SharedThreadPool(1));
    const BlockConfig& c = block.config();
    const std::vector<OwnedSublayer> owned = RandomBlockWeights(c, bc.attention_bias, rng);
    block.SetWeights(Views(owned));
    const OwnedTensor x = RandomTensor(2, 7, c.d_model, rng);
    BlockOptions o;
    o.causal = bc.causal;
    o.self_attention = bc.self;
    const std::vector<float> y = block.Forward(x.View(), o);
    const std::vector<float> expected = ReferenceBlock(c, Views(owned), x.View(), {}, o);
    EXPECT_TRUE(AllNear(y, expected, kBlockTol));
  }
}

TEST_P(BlockVsReference, DecoderWithCrossAttention) {
  using M = MixerKind;
  using P = NormPlacement;
  std::mt19937 rng(11);
  BlockConfig config = Base(4, 4, NormKind::kLayerNorm, Activation::kRelu,
                            {{M::kSelfAttention, P::kPre},
                             {M::kCrossAttention, P::kPre},
                             {M::kFeedForward, P::kPre}});
  TransformerBlock block(config, table(), SharedThreadPool(1));
  const std::vector<OwnedSublayer> owned = RandomBlockWeights(block.config(), true, rng);
  block.SetWeights(Views(owned));
  const OwnedTensor x = RandomTensor(2, 5, 32, rng), memory = RandomTensor(2, 9, 32, rng);
  const std::vector<uint8_t> padding = RandomKeyPadding(2, 9, 0.7, rng);
  BlockOptions o;
  o.causal = true;
  o.memory_key_padding_mask = padding;
  EXPECT_TRUE(AllNear(block.Forward(x.View(), memory.View(), o),
                      ReferenceBlock(block.config(), Views(owned), x.View(), memory.View(), o),
                      kBlockTol));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { block.Forward(x.View(), o); },
                                                {"memory", "cross_attention"}));
}

// A post-LN encoder layer is the block [post self-attention, post FFN]: the
// same kernels in the same order, so the same floats.
TEST_P(BlockVsReference, EncoderLayerIsABlockInstance) {
  for (const bool norm_first : {false, true}) {
    std::mt19937 rng(3);
    const NormPlacement placement = norm_first ? NormPlacement::kPre : NormPlacement::kPost;
    BlockConfig config = Base(4, 4, NormKind::kLayerNorm, Activation::kGeluErf,
                              {{MixerKind::kSelfAttention, placement},
                               {MixerKind::kFeedForward, placement}});
    TransformerBlock block(config, table(), SharedThreadPool(1));
    const std::vector<OwnedSublayer> w = RandomBlockWeights(block.config(), true, rng);
    block.SetWeights(Views(w));
    // The block's sizes, activation and eps.
    const LayerConfig lc{.d_model = 32, .num_heads = 4, .ffn_dim = 48, .norm_first = norm_first,
                         .activation = Activation::kGeluErf};
    TransformerEncoderLayer layer(lc, table(), SharedThreadPool(1));
    layer.SetWeights(w[0].attention.View(), {w[1].w1, w[1].b1, w[1].w2, w[1].b2},
                     {w[0].gamma, w[0].beta}, {w[1].gamma, w[1].beta});
    const OwnedTensor x = RandomTensor(2, 6, 32, rng);
    EXPECT_TRUE(AllNear(block.Forward(x.View()), layer.Forward(x.View()), 1e-6));
  }
}

TEST_P(BlockVsReference, IncrementalEqualsCausalForward) {
  for (const BlockCase& bc : Cases()) {
    if (!bc.causal) continue;
    SCOPED_TRACE(bc.name);
    std::mt19937 rng(5);
    TransformerBlock block(bc.config, table(), SharedThreadPool(1));
    block.SetWeights(Views(RandomBlockWeights(block.config(), bc.attention_bias, rng)));
    const size_t batch = 2, tokens = 6, d = block.config().d_model;
    const OwnedTensor x = RandomTensor(batch, tokens, d, rng);
    BlockOptions o;
    o.causal = true;
    o.self_attention = bc.self;
    const std::vector<float> full = block.Forward(x.View(), o);
    KVCache cache = block.CreateKVCache(batch, tokens);
    std::vector<float> stepped(full.size());
    for (size_t t = 0; t < tokens; ++t) {
      std::vector<float> step(batch * d);
      for (size_t b = 0; b < batch; ++b) {
        std::copy_n(x.data.data() + (b * tokens + t) * d, d, step.data() + b * d);
      }
      const std::vector<float> y = block.ForwardIncremental({step, batch, 1, d}, cache, bc.self);
      for (size_t b = 0; b < batch; ++b) {
        std::copy_n(y.data() + b * d, d, stepped.data() + (b * tokens + t) * d);
      }
    }
    EXPECT_EQ(cache.length(), tokens);
    EXPECT_TRUE(AllNear(stepped, full, kTol));
  }
}

TEST_P(BlockVsReference, StackDecodesAsItsCausalForward) {
  std::mt19937 rng(9);
  StackConfig sc;
  sc.block = Cases()[0].config;  // Llama
  sc.num_layers = 3;
  sc.layer_windows = {{2, 0}, {-1, -1}, {2, 0}};  // alternating, as Gemma 2
  sc.final_norm = true;
  TransformerStack stack(sc);
  std::vector<std::vector<OwnedSublayer>> owned;
  std::vector<std::vector<SublayerWeights>> views;
  for (size_t i = 0; i < 3; ++i) {
    owned.push_back(RandomBlockWeights(stack.config().block, false, rng));
  }
  for (const auto& o : owned) views.push_back(Views(o));
  const std::vector<float> final_gamma = Around(32, 1.0f, rng);
  stack.SetWeights(views, {final_gamma, {}});
  const size_t batch = 1, tokens = 5, d = 32;
  const OwnedTensor x = RandomTensor(batch, tokens, d, rng);
  BlockOptions o;
  o.causal = true;
  const std::vector<float> full = stack.Forward(x.View(), o);
  // Layer by layer through the reference, each with its window.
  std::vector<float> h = x.data;
  for (size_t i = 0; i < 3; ++i) {
    BlockOptions li = o;
    li.self_attention.window = sc.layer_windows[i];
    h = ReferenceBlock(stack.layer(i).config(), views[i], {h, batch, tokens, d}, {}, li);
  }
  for (size_t r = 0; r < batch * tokens; ++r) {  // the final RMSNorm
    double squares = 0;
    for (size_t j = 0; j < d; ++j) squares += double(h[r * d + j]) * h[r * d + j];
    const double inv = 1 / std::sqrt(squares / double(d) + 1e-6);
    for (size_t j = 0; j < d; ++j) h[r * d + j] = float(h[r * d + j] * inv * final_gamma[j]);
  }
  EXPECT_TRUE(AllNear(full, h, kBlockTol));

  std::vector<KVCache> caches = stack.CreateKVCaches(batch, tokens);
  std::vector<float> stepped;
  for (size_t t = 0; t < tokens; ++t) {
    const std::vector<float> step(x.data.begin() + t * d, x.data.begin() + (t + 1) * d);
    const std::vector<float> y = stack.ForwardIncremental({step, batch, 1, d}, caches);
    stepped.insert(stepped.end(), y.begin(), y.end());
  }
  EXPECT_TRUE(AllNear(stepped, full, kTol));
  // A failed step leaves every cache as it was.
  const std::vector<float> bad(d, std::nanf(""));
  EXPECT_THROW(stack.ForwardIncremental({bad, batch, 1, d}, caches), std::invalid_argument);
  for (const KVCache& c : caches) EXPECT_EQ(c.length(), tokens);
}

// A Mixtral-like block [pre self-attention, pre moe] (top 2 of 4 experts).
BlockConfig MoeConfig(size_t ffn_dim) {
  using M = MixerKind;
  using P = NormPlacement;
  BlockConfig c = MakeBlockConfig(32, 4, 2, ffn_dim, NormKind::kRmsNorm, Activation::kSilu,
                                  {{M::kSelfAttention, P::kPre}, {M::kMixtureOfExperts, P::kPre}});
  c.rope = {RopeStyle::kHalf, 10000.0, 0};
  c.num_experts = 4;
  return c;
}

// The experts' weights held in each storage type: near the float32
// reference as the type rounds (q4's blocks of 32 rows: ffn_dim 64), in
// fewer bytes; the router stays float32.
TEST_P(BlockVsReference, MixtureOfExpertsInEveryStorageType) {
  std::mt19937 rng(21);
  BlockConfig c = MoeConfig(64);
  const std::vector<OwnedSublayer> owned = RandomBlockWeights(TransformerBlock(c).config(),
                                                              false, rng);
  const OwnedTensor x = RandomTensor(2, 5, 32, rng);
  BlockOptions o;
  o.causal = true;
  size_t f32_bytes = 0;
  for (const WeightTypeTraits& type : kWeightTypes) {
    SCOPED_TRACE(type.name);
    c.weights = type.value;
    TransformerBlock block(c, table(), SharedThreadPool(1));
    block.SetWeights(Views(owned));
    const double tol = type.value == WeightType::kF32 ? kBlockTol
                       : type.value == WeightType::kQ4 ? 0.15 : 0.03;
    EXPECT_TRUE(AllNear(block.Forward(x.View(), o),
                        ReferenceBlock(block.config(), Views(owned), x.View(), {}, o), tol));
    if (type.value == WeightType::kF32) f32_bytes = block.WeightBytes();
    EXPECT_LE(block.WeightBytes(), f32_bytes);
  }
}

// Each row sums its experts in expert order: the same floats on 1 to 3
// threads, whatever rows each expert gathers.
#if SA_HAVE_THREADS  // a wasm build without threads runs one
TEST_P(BlockVsReference, MixtureOfExpertsIndependentOfThreads) {
  std::mt19937 rng(23);
  const BlockConfig c = MoeConfig(48);
  const std::vector<OwnedSublayer> owned = RandomBlockWeights(TransformerBlock(c).config(),
                                                              true, rng);
  const OwnedTensor x = RandomTensor(3, 11, 32, rng);
  std::vector<float> first;
  for (const size_t threads : {1u, 2u, 3u}) {
    TransformerBlock block(c, table(), SharedThreadPool(threads));
    block.SetWeights(Views(owned));
    const std::vector<float> y = block.Forward(x.View());
    if (first.empty()) first = y;
    EXPECT_EQ(y, first) << threads << " threads";
  }
}
#endif  // SA_HAVE_THREADS

class BlockKernels : public TableTest {};

TEST_P(BlockKernels, RmsNormAndGatedProduct) {
  std::mt19937 rng(1);
  for (const size_t d : {1u, 7u, 16u, 37u}) {
    const size_t rows = 3, ld = d + 5;
    std::vector<float> x = RandomVector(rows * ld, 3.0f, rng);
    const std::vector<float> gamma = Around(d, 1.0f, rng);
    std::vector<float> out = x, expected = x;
    table().rms_norm(x.data(), rows, d, ld, gamma.data(), 1e-5f, out.data());
    for (size_t r = 0; r < rows; ++r) {
      double squares = 0;
      for (size_t i = 0; i < d; ++i) squares += double(x[r * ld + i]) * x[r * ld + i];
      const double inv = 1 / std::sqrt(squares / double(d) + 1e-5);
      for (size_t i = 0; i < d; ++i) expected[r * ld + i] = float(x[r * ld + i] * inv * gamma[i]);
    }
    EXPECT_TRUE(AllNear(out, expected, 1e-5)) << "d = " << d;  // the gaps untouched too

    for (const Activation act : {Activation::kSilu, Activation::kGeluTanh, Activation::kGeluErf,
                                 Activation::kRelu}) {
      std::vector<float> gate_up = RandomVector(rows * 2 * d, 12.0f, rng);
      std::vector<float> product(rows * d), want(rows * d);
      for (size_t r = 0; r < rows; ++r) {
        for (size_t i = 0; i < d; ++i) {
          want[r * d + i] = float(ReferenceActivation(act, gate_up[r * 2 * d + i]) *
                                  gate_up[r * 2 * d + d + i]);
        }
      }
      // (The kernel activates the gate in place.)
      table().gated_activation(act, gate_up.data(), rows, d, 2 * d, product.data());
      EXPECT_TRUE(AllNear(product, want, 2e-4 * 12)) << Traits(act).name << " d = " << d;
    }
  }
  // SiLU far out: no overflow, no NaN, the limits x and 0.
  std::vector<float> far = {-100.0f, -30.0f, 30.0f, 100.0f, 0.0f, -0.0f, 1e-30f, -1e-30f};
  std::vector<float> silu = far;
  table().activation(Activation::kSilu, silu.data(), silu.size());
  for (size_t i = 0; i < far.size(); ++i) {
    EXPECT_NEAR(silu[i], ReferenceActivation(Activation::kSilu, far[i]), 1e-6) << far[i];
  }
}

class BlockErrors : public TableTest {};

TEST_P(BlockErrors, ConfigAndWeights) {
  using M = MixerKind;
  using P = NormPlacement;
  const auto make = [&](BlockConfig c) { TransformerBlock b(c, table(), SharedThreadPool(1)); };
  BlockConfig c = Base(4, 2, NormKind::kRmsNorm, Activation::kSilu, {});
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { make(c); },
                                                {"config.sublayers", "at least one"}));
  c.sublayers = {{M::kFeedForward, P::kPre, true}};
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { make(c); },
                                                {"config.sublayers[0].parallel", "first"}));
  c.sublayers = {{M::kSelfAttention, P::kPost}, {M::kFeedForward, P::kPost, true}};
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { make(c); },
                                                {"config.sublayers[1].parallel", "'post'"}));
  c.sublayers = {{M::kSelfAttention, P::kPre}};
  c.qk_norm = {true, NormKind::kLayerNorm, 1e-6};
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { make(c); }, {"config.qk_norm.kind", "'rms_norm' or 'gemma_rms_norm'",
                         "got 'layer_norm'"}));
  c.qk_norm = {};
  c.eps = 0;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { make(c); }, {"config.eps"}));
  c.eps = 1e-6;
  c.sublayers = {{M::kSelfAttention, P::kPre}, {M::kGatedFeedForward, P::kPre}};
  c.ffn_dim = 0;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { make(c); }, {"config.ffn_dim"}));

  c.ffn_dim = 48;
  std::mt19937 rng(2);
  TransformerBlock block(c, table(), SharedThreadPool(1));
  std::vector<OwnedSublayer> w = RandomBlockWeights(block.config(), false, rng);
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { block.SetWeights(std::vector<SublayerWeights>{w[0].View()}); },
      {"weights", "expected 2", "got 1"}));
  w[1].beta = std::vector<float>(32, 0.0f);  // RMSNorm has no shift
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { block.SetWeights(Views(w)); },
                                                {"sublayers[1] (gated_ffn)", "norm.beta",
                                                 "rms_norm has no shift"}));
  w[1].beta.clear();
  w[1].w_down.pop_back();
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { block.SetWeights(Views(w)); },
                                                {"sublayers[1] (gated_ffn)", "w_down"}));
  // Nothing set yet: still no weights, and the block stays usable.
  const OwnedTensor x = RandomTensor(1, 3, 32, rng);
  EXPECT_THROW(block.Forward(x.View()), std::logic_error);
  w[1].w_down.push_back(0.5f);
  block.SetWeights(Views(w));
  EXPECT_EQ(block.Forward(x.View()).size(), 3u * 32);

  // A mixture of experts: at least one expert, each token's at most all.
  c.sublayers = {{M::kSelfAttention, P::kPre}, {M::kMixtureOfExperts, P::kPre}};
  c.num_experts = 0;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { make(c); },
                                                {"config.num_experts", "> 0", "got 0"}));
  c.num_experts = 3;
  c.experts_per_token = 4;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { make(c); }, {"config.experts_per_token", "expected 1 to config.num_experts (3)",
                         "got 4"}));
  c.experts_per_token = 0;
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { make(c); },
                                                {"config.experts_per_token", "got 0"}));
  c.experts_per_token = 2;
  TransformerBlock moe(c, table(), SharedThreadPool(1));
  w = RandomBlockWeights(moe.config(), false, rng);
  w[1].experts.pop_back();
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { moe.SetWeights(Views(w)); },
      {"sublayers[1] (moe): experts", "expected 3 (config.num_experts), got 2"}));
  w = RandomBlockWeights(moe.config(), false, rng);
  w[1].router.pop_back();
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { moe.SetWeights(Views(w)); },
                                                {"sublayers[1] (moe): router", "96"}));
  w[1].router.push_back(0.5f);
  w[1].experts[2].w_up.pop_back();
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { moe.SetWeights(Views(w)); },
                                                {"sublayers[1] (moe): experts[2].", "w_up"}));
  EXPECT_THROW(moe.Forward(x.View()), std::logic_error);  // still no weights
  w[1].experts[2].w_up.push_back(0.5f);
  moe.SetWeights(Views(w));
  EXPECT_EQ(moe.Forward(x.View()).size(), 3u * 32);

  // A sublayer without a norm ignores norm weights, as one without an
  // output norm ignores those.
  c.sublayers = {{M::kSelfAttention, P::kNone}, {M::kGatedFeedForward, P::kPre}};
  TransformerBlock plain(c, table(), SharedThreadPool(1));
  w = RandomBlockWeights(plain.config(), false, rng);
  plain.SetWeights(Views(w));
  const std::vector<float> y = plain.Forward(x.View());
  w[0].gamma = std::vector<float>(7, 1.0f);  // not even d_model long
  w[0].out_gamma = std::vector<float>(7, 1.0f);
  plain.SetWeights(Views(w));
  EXPECT_EQ(plain.Forward(x.View()), y);
}

INSTANTIATE_ON_EVERY_TABLE(BlockVsReference);
INSTANTIATE_ON_EVERY_TABLE(BlockKernels);
INSTANTIATE_ON_EVERY_TABLE(BlockErrors);

}  // namespace
}  // namespace simd_attention::testing
