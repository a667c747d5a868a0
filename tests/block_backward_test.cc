// TransformerBlock's Backward on every kernel table: blocks of every norm
// kind (LayerNorm, RMSNorm, Gemma's 1 + w), placement (pre, post, sandwich),
// mixer (self- and cross-attention, FFN, gated FFN with SiLU and both
// GELUs, mixtures of experts with and without renormalized weights, experts
// that no token chose), rotary positions and QK-norm, and sublayers side by side, against
// the float64 block reference (reference/block_backward_reference), which
// central differences check in turn; 1, 2 and 3 threads bit-identical; the encoder layer's gradients
// equal its block's; errors.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "block_gradients.h"
#include "gradient_util.h"
#include "random_block.h"
#include "random_mha.h"
#include "reference/block_backward_reference.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/transformer_block.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

using M = MixerKind;
using P = NormPlacement;

struct BackwardCase {
  const char* name;
  BlockConfig config;
  size_t batch, tokens, memory_tokens;  // memory_tokens 0: no cross-attention
  bool causal, padding;
  SelfAttentionOptions self;
};

// Llama 3 / Qwen3's attention: half-style RoPE and QK-norm.
BlockConfig Rotary(BlockConfig c) {
  c.rope = {RopeStyle::kHalf, 10000.0, 0};
  c.qk_norm = {true, NormKind::kRmsNorm, 1e-6};
  return c;
}

// A block's moe sublayers with E experts, each token's top k.
BlockConfig Moe(BlockConfig c, size_t experts, size_t top_k, bool normalize) {
  c.num_experts = experts;
  c.experts_per_token = top_k;
  c.normalize_top_k = normalize;
  return c;
}

// Widths that are no multiple of the vectors, so every kernel's tail runs.
std::vector<BackwardCase> Cases() {
  SelfAttentionOptions gemma;
  gemma.window = {3, 0};
  gemma.softcap = 30.0;
  gemma.scale = 0.3;
  return {
      {"llama_rms_swiglu",
       MakeBlockConfig(24, 4, 2, 20, NormKind::kRmsNorm, Activation::kSilu,
              {{M::kSelfAttention, P::kPre}, {M::kGatedFeedForward, P::kPre}}),
       2, 9, 0, true, false, {}},
      {"llama_rope_qk_norm",
       Rotary(MakeBlockConfig(24, 4, 2, 20, NormKind::kRmsNorm, Activation::kSilu,
                              {{M::kSelfAttention, P::kPre}, {M::kGatedFeedForward, P::kPre}})),
       2, 9, 0, true, false, {}},
      {"gemma2_sandwich_geglu",
       MakeBlockConfig(20, 2, 1, 28, NormKind::kGemmaRmsNorm, Activation::kGeluTanh,
              {{M::kSelfAttention, P::kSandwich}, {M::kGatedFeedForward, P::kSandwich}}),
       1, 11, 0, true, false, gemma},
      {"nemotron_layer_norm_1p",
       MakeBlockConfig(16, 4, 2, 24, NormKind::kLayerNorm1p, Activation::kRelu,
              {{M::kSelfAttention, P::kPre}, {M::kFeedForward, P::kPre}}),
       2, 7, 0, true, false, {}},
      {"gptj_parallel_padding",
       MakeBlockConfig(16, 4, 4, 36, NormKind::kLayerNorm, Activation::kGeluErf,
              {{M::kSelfAttention, P::kPre}, {M::kFeedForward, P::kPre, true}}),
       2, 7, 0, true, true, {}},
      {"post_ln_encoder_relu",
       MakeBlockConfig(24, 2, 2, 20, NormKind::kLayerNorm, Activation::kRelu,
              {{M::kSelfAttention, P::kPost}, {M::kFeedForward, P::kPost}}),
       2, 13, 0, false, true, {}},
      {"decoder_rms_cross_sandwich_ffn",
       MakeBlockConfig(20, 4, 2, 24, NormKind::kRmsNorm, Activation::kGeluErf,
              {{M::kSelfAttention, P::kPre},
               {M::kCrossAttention, P::kPost},
               {M::kFeedForward, P::kSandwich}}),
       2, 6, 9, true, true, {}},
      {"no_norm_tiny_model_layer",
       MakeBlockConfig(16, 2, 2, 20, NormKind::kLayerNorm, Activation::kGeluTanh,
              {{M::kSelfAttention, P::kNone}, {M::kFeedForward, P::kNone}}),
       2, 7, 0, true, false, {}},
      {"mixtral_moe",
       Moe(Rotary(MakeBlockConfig(24, 4, 2, 20, NormKind::kRmsNorm, Activation::kSilu,
                                  {{M::kSelfAttention, P::kPre},
                                   {M::kMixtureOfExperts, P::kPre}})),
           4, 2, true),
       2, 9, 0, true, false, {}},
      {"olmoe_unnormalized_top3",
       Moe(MakeBlockConfig(20, 2, 2, 12, NormKind::kRmsNorm, Activation::kGeluTanh,
                           {{M::kSelfAttention, P::kPre}, {M::kMixtureOfExperts, P::kSandwich}}),
           5, 3, false),
       2, 6, 0, true, false, {}},
      {"top1_of_8_most_unchosen",  // at most 3 of the 8 experts have a token
       Moe(MakeBlockConfig(16, 2, 2, 12, NormKind::kLayerNorm, Activation::kSilu,
                           {{M::kMixtureOfExperts, P::kPre}}),
           8, 1, false),
       1, 3, 0, false, false, {}},
      {"three_side_by_side",
       MakeBlockConfig(16, 2, 2, 12, NormKind::kLayerNorm, Activation::kSilu,
              {{M::kSelfAttention, P::kPre},
               {M::kGatedFeedForward, P::kSandwich, true},
               {M::kFeedForward, P::kPre, true},
               {M::kFeedForward, P::kPost}}),
       1, 8, 0, false, false, {}},
  };
}

std::vector<std::string> CaseNames() { return CaseNamesOf(Cases()); }

BackwardCase FindCase(const std::string& name) { return CaseNamed(Cases(), name); }

// A block's weights, inputs and d_output, in float and double.
struct Problem {
  BackwardCase c;
  BlockConfig config;  // resolved
  MhaConfig attention;
  std::vector<OwnedSublayer> weights;
  OwnedTensor x, memory;
  std::vector<uint8_t> key_padding, memory_padding;
  std::vector<float> d_output;
  BlockProblem64 doubles;

  std::vector<SublayerWeights> Views() const { return simd_attention::testing::Views(weights); }
  BlockOptions Options() const {
    BlockOptions o;
    o.causal = c.causal;
    o.key_padding_mask = key_padding;
    o.memory_key_padding_mask = memory_padding;
    o.self_attention = c.self;
    o.training = true;
    return o;
  }
  Tensor3 DOutput() const { return {d_output, x.batch, x.tokens, x.features}; }
};

std::unique_ptr<Problem> MakeProblem(const BackwardCase& c, uint32_t seed) {
  auto p = std::make_unique<Problem>();
  p->c = c;
  p->config = TransformerBlock(c.config).config();
  p->attention = BlockAttentionConfig(p->config);
  std::mt19937 rng(seed);
  const size_t d = c.config.d_model;
  p->weights = RandomBlockWeights(p->config, true, rng);
  for (const OwnedSublayer& w : p->weights) p->doubles.sublayers.push_back(SublayerDoubles(w));
  p->x = RandomTensor(c.batch, c.tokens, d, rng);
  if (c.memory_tokens != 0) p->memory = RandomTensor(c.batch, c.memory_tokens, d, rng);
  if (c.padding) {
    p->key_padding = RandomKeyPadding(c.batch, c.tokens, 0.7, rng);
    if (c.memory_tokens != 0) {
      p->memory_padding = RandomKeyPadding(c.batch, c.memory_tokens, 0.7, rng);
    }
  }
  p->d_output = RandomVector(c.batch * c.tokens * d, 1.0f, rng);
  SetDoubleInputs(*p);
  return p;
}

BlockBackward64 Reference(const Problem& p, bool with_gradients = true) {
  const BlockOptions o = p.Options();
  MhaOptions self = SelfAttentionMhaOptions(o.self_attention);
  self.causal = o.causal;
  self.causal_alignment = o.causal_alignment;
  self.key_padding_mask = o.key_padding_mask;
  MhaOptions cross;
  cross.key_padding_mask = o.memory_key_padding_mask;
  const std::vector<double> d_output = ToDouble(p.d_output);
  return ReferenceBlockBackward(p.config, p.attention, p.doubles, self, cross,
                                with_gradients ? std::span<const double>(d_output)
                                               : std::span<const double>());
}

// The longest chain of the block's backward (gradient_util.h's bound): per
// sublayer its norms' reductions over d_model (four each, two norms at
// most), the FFNs' over d_model and ffn_dim (the gated one's two), the
// attention's own chain, the weight gradients' over the rows.
size_t ChainLength(const Problem& p) {
  const BlockConfig& c = p.config;
  const size_t keys = std::max(p.c.tokens, p.c.memory_tokens);
  return c.sublayers.size() * 8 * c.d_model + c.d_model + 2 * c.ffn_dim +
         MhaChainLength(p.attention, p.c.batch, p.c.tokens, keys) + p.c.batch * keys;
}

struct BlockRun {
  std::vector<float> output;
  BlockGradients gradients;
};

BlockRun RunBlock(const Problem& p, const KernelTable& table, std::shared_ptr<ThreadPool> pool) {
  TransformerBlock block(p.c.config, table, std::move(pool));
  block.SetWeights(p.Views());
  BlockRun r;
  r.output = p.c.memory_tokens == 0 ? block.Forward(p.x.View(), p.Options())
                                    : block.Forward(p.x.View(), p.memory.View(), p.Options());
  block.Backward(p.DOutput(), r.gradients);
  return r;
}

// Every gradient the block returns with the reference's, by name.
std::vector<GradientPair> Pairs(const Problem& p, const BlockGradients& g,
                                const BlockBackward64& e) {
  std::vector<GradientPair> out = {{"d_input", &g.d_input, &e.d_input}};
  if (p.c.memory_tokens != 0) out.push_back({"d_memory", &g.d_memory, &e.d_memory});
  AddSublayerPairs(p.config, "", g.sublayers, e.sublayers, out);
  return out;
}

class BlockBackwardReference : public TableCaseTest {};

TEST_P(BlockBackwardReference, MatchesFloat64) {
  const auto p = MakeProblem(FindCase(case_name()), 17);
  const BlockRun r = RunBlock(*p, table(), SharedThreadPool(1));
  const BlockBackward64 e = Reference(*p);
  double max_abs = 0;
  for (const GradientPair& pair : Pairs(*p, r.gradients, e)) {
    max_abs = std::max(max_abs, MaxAbs(*pair.expected));
  }
  const double bound = FloatBound(ChainLength(*p), max_abs);
  EXPECT_TRUE(AllNear(r.output, e.output, bound)) << "output";
  for (const GradientPair& pair : Pairs(*p, r.gradients, e)) {
    EXPECT_FALSE(pair.expected->empty() && pair.name.find("d_beta") == std::string::npos)
        << pair.name;
    EXPECT_TRUE(AllNear(*pair.actual, *pair.expected, bound)) << pair.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BlockBackwardReference,
                         ::testing::ValuesIn(OnEveryTable(CaseNames())), TableCaseParamName);

// The reference itself: central differences of sum(output * d_output) in
// double against its gradients, for the inputs and a sample of every
// parameter, on small versions of the cases.
TEST_P(ReferenceGradients, MatchFiniteDifferences) {
  const auto p = MakeProblem(SmallCase(FindCase(GetParam()), 3), 5);
  ExpectReferenceGradients(*p, Reference, [&](const auto& check, auto& q, const auto& e) {
    if (p->c.memory_tokens != 0) check("memory", q.memory, e.d_memory, 1);
    for (size_t k = 0; k < p->c.config.sublayers.size(); ++k) {
      SublayerProblem64& w = q.sublayers[k];
      const SublayerBackward64& g = e.sublayers[k];
      const std::string at = "sublayers[" + std::to_string(k) + "].";
      check(at + "gamma", w.gamma, g.d_gamma, 3);
      check(at + "beta", w.beta, g.d_beta, 3);
      check(at + "out_gamma", w.out_gamma, g.d_out_gamma, 3);
      check(at + "out_beta", w.out_beta, g.d_out_beta, 3);
      if (Traits(p->c.config.sublayers[k].mixer).attention) {
        check(at + "w_q", w.attention.w_q, g.attention.d_w_q, 7);
        check(at + "b_o", w.attention.b_o, g.attention.d_b_o, 3);
        check(at + "q_norm", w.attention.q_norm, g.attention.d_q_norm, 1);
        check(at + "k_norm", w.attention.k_norm, g.attention.d_k_norm, 1);
      }
      check(at + "w1", w.w1, g.d_w1, 11);
      check(at + "b1", w.b1, g.d_b1, 5);
      check(at + "w2", w.w2, g.d_w2, 11);
      check(at + "w_gate", w.w_gate, g.d_w_gate, 11);
      check(at + "b_gate", w.b_gate, g.d_b_gate, 5);
      check(at + "w_up", w.w_up, g.d_w_up, 11);
      check(at + "b_up", w.b_up, g.d_b_up, 5);
      check(at + "w_down", w.w_down, g.d_w_down, 11);
      check(at + "b_down", w.b_down, g.d_b_down, 5);
      check(at + "router", w.router, g.d_router, 3);
      for (size_t e = 0; e < w.experts.size(); ++e) {
        const std::string expert = at + "experts[" + std::to_string(e) + "].";
        check(expert + "w_gate", w.experts[e].w_gate, g.experts[e].d_w_gate, 11);
        check(expert + "w_up", w.experts[e].w_up, g.experts[e].d_w_up, 11);
        check(expert + "w_down", w.experts[e].w_down, g.experts[e].d_w_down, 11);
        check(expert + "b_down", w.experts[e].b_down, g.experts[e].d_b_down, 5);
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Cases, ReferenceGradients, ::testing::ValuesIn(CaseNames()),
                         CaseParamName);

#if SA_HAVE_THREADS  // a wasm build without threads runs one
// Every split the block's backward makes gives the same bits as one thread.
class BlockBackwardThreads : public TableTest {};

TEST_P(BlockBackwardThreads, BitIdenticalForOneTwoThreeThreads) {
  // Large enough that the GEMMs, the attention and the norms split.
  const BackwardCase cases[] = {
      {"llama", Rotary(MakeBlockConfig(64, 4, 2, 256, NormKind::kRmsNorm, Activation::kSilu,
                                       {{M::kSelfAttention, P::kPre},
                                        {M::kGatedFeedForward, P::kPre}})),
       2, 70, 0, true, true, {}},
      {"decoder", MakeBlockConfig(64, 4, 4, 256, NormKind::kGemmaRmsNorm, Activation::kGeluTanh,
                         {{M::kSelfAttention, P::kSandwich},
                          {M::kCrossAttention, P::kPost},
                          {M::kFeedForward, P::kPre}}),
       2, 70, 50, true, true, {}},
      {"mixtral", Moe(Rotary(MakeBlockConfig(64, 4, 2, 256, NormKind::kRmsNorm,
                                             Activation::kSilu,
                                             {{M::kSelfAttention, P::kPre},
                                              {M::kMixtureOfExperts, P::kPre}})),
                      4, 2, true),
       2, 70, 0, true, true, {}},
  };
  for (const BackwardCase& c : cases) {
    SCOPED_TRACE(c.name);
    const auto p = MakeProblem(c, 3);
    const BlockRun one = RunBlock(*p, table(), SharedThreadPool(1));
    for (size_t threads : {2, 3}) {
      const BlockRun many = RunBlock(*p, table(), SharedThreadPool(threads));
      EXPECT_EQ(many.output, one.output) << threads;
      EXPECT_EQ(many.gradients.d_input, one.gradients.d_input) << threads;
      EXPECT_EQ(many.gradients.d_memory, one.gradients.d_memory) << threads;
      for (size_t k = 0; k < one.gradients.sublayers.size(); ++k) {
        const SublayerGradients &a = one.gradients.sublayers[k], &b = many.gradients.sublayers[k];
        EXPECT_EQ(b.norm.d_gamma, a.norm.d_gamma) << k;
        EXPECT_EQ(b.output_norm.d_gamma, a.output_norm.d_gamma) << k;
        EXPECT_EQ(b.attention.d_w_q, a.attention.d_w_q) << k;
        EXPECT_EQ(b.attention.d_w_k, a.attention.d_w_k) << k;
        EXPECT_EQ(b.attention.d_q_norm, a.attention.d_q_norm) << k;
        EXPECT_EQ(b.attention.d_k_norm, a.attention.d_k_norm) << k;
        EXPECT_EQ(b.ffn.d_w1, a.ffn.d_w1) << k;
        EXPECT_EQ(b.gated_ffn.d_w_gate, a.gated_ffn.d_w_gate) << k;
        EXPECT_EQ(b.gated_ffn.d_w_down, a.gated_ffn.d_w_down) << k;
        EXPECT_EQ(b.moe.d_router, a.moe.d_router) << k;
        for (size_t e = 0; e < a.moe.experts.size(); ++e) {
          EXPECT_EQ(b.moe.experts[e].d_w_gate, a.moe.experts[e].d_w_gate) << k << " " << e;
          EXPECT_EQ(b.moe.experts[e].d_w_down, a.moe.experts[e].d_w_down) << k << " " << e;
        }
      }
    }
  }
}

INSTANTIATE_ON_EVERY_TABLE(BlockBackwardThreads);
#endif

class BlockBackwardLayers : public TableTest {};

// The encoder layer's backward, pre-LN and post-LN, gives its block's
// gradients.
TEST_P(BlockBackwardLayers, EncoderLayerGradientsAreItsBlocks) {
  for (const bool norm_first : {false, true}) {
    SCOPED_TRACE(norm_first ? "pre-LN" : "post-LN");
    const P placement = norm_first ? P::kPre : P::kPost;
    const BackwardCase c{"encoder",
                         MakeBlockConfig(24, 4, 4, 40, NormKind::kLayerNorm, Activation::kGeluTanh,
                                {{M::kSelfAttention, placement}, {M::kFeedForward, placement}}),
                         2, 9, 0, true, true, {}};
    const auto p = MakeProblem(c, 23);
    const BlockRun block = RunBlock(*p, table(), SharedThreadPool(1));
    const LayerConfig lc{.d_model = 24, .num_heads = 4, .ffn_dim = 40, .norm_first = norm_first,
                         .activation = Activation::kGeluTanh};
    TransformerEncoderLayer layer(lc, table(), SharedThreadPool(1));
    const std::vector<OwnedSublayer>& w = p->weights;
    layer.SetWeights(w[0].attention.View(), {w[1].w1, w[1].b1, w[1].w2, w[1].b2},
                     {w[0].gamma, w[0].beta}, {w[1].gamma, w[1].beta});
    EncoderOptions o;
    o.causal = true;
    o.key_padding_mask = p->key_padding;
    o.training = true;
    EXPECT_EQ(layer.Forward(p->x.View(), o), block.output);
    const EncoderGradients g = layer.Backward(p->DOutput());
    const BlockGradients& b = block.gradients;
    EXPECT_EQ(g.d_input, b.d_input);
    EXPECT_EQ(g.attention.d_w_q, b.sublayers[0].attention.d_w_q);
    EXPECT_EQ(g.attention.d_b_o, b.sublayers[0].attention.d_b_o);
    EXPECT_EQ(g.norm1.d_gamma, b.sublayers[0].norm.d_gamma);
    EXPECT_EQ(g.norm2.d_beta, b.sublayers[1].norm.d_beta);
    EXPECT_EQ(g.ffn.d_w1, b.sublayers[1].ffn.d_w1);
    EXPECT_EQ(g.ffn.d_b2, b.sublayers[1].ffn.d_b2);
  }
}

INSTANTIATE_ON_EVERY_TABLE(BlockBackwardLayers);

class BlockBackwardErrors : public TableTest {};

TEST_P(BlockBackwardErrors, RefusesWhatItCannotDifferentiate) {
  const auto p = MakeProblem(FindCase("llama_rms_swiglu"), 29);
  TransformerBlock block(p->c.config, table(), SharedThreadPool(1));
  BlockOptions o = p->Options();
  ExpectRecordErrors(
      block, p->DOutput(),
      [&](bool training) {
        o.training = training;
        block.Forward(p->x.View(), o);
      },
      [&] { block.SetWeights(p->Views()); });

  // Weights an optimizer could not update.
  BlockConfig narrow = p->c.config;
  narrow.sublayers = {{M::kGatedFeedForward, P::kPre}};
  narrow.weights = WeightType::kBF16;
  TransformerBlock bf16(narrow, table(), SharedThreadPool(1));
  bf16.SetWeights(std::vector<SublayerWeights>{p->weights[1].View()});
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { bf16.Forward(p->x.View(), o); },
                                                {"options.training", "float32", "bfloat16"}));
  // Still usable for inference.
  o.training = false;
  EXPECT_EQ(bf16.Forward(p->x.View(), o).size(), p->x.data.size());
}

INSTANTIATE_ON_EVERY_TABLE(BlockBackwardErrors);

}  // namespace
}  // namespace simd_attention::testing
