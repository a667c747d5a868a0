// TransformerStack's Backward on every kernel table: a three-layer Llama-like
// stack (RMSNorm, SwiGLU, RoPE and QK-norm, a window on one layer, a final
// norm), a two-layer Gemma 2-like one (sandwich norms, Gemma's 1 + w in the
// final norm too) and a two-layer post-LN encoder with padding, against the
// float64 stack reference (reference/block_backward_reference), which
// central differences check in turn; 1, 2 and 3 threads bit-identical; each
// layer's gradients are its block's own; errors.
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

struct StackCase {
  const char* name;
  StackConfig config;
  size_t batch, tokens;
  bool causal, padding;
};

StackConfig Stack(BlockConfig block, size_t layers, bool final_norm,
                  std::vector<std::array<int64_t, 2>> windows = {}) {
  return {std::move(block), layers, std::move(windows), final_norm};
}

// Widths that are no multiple of the vectors, so every kernel's tail runs.
std::vector<StackCase> Cases() {
  BlockConfig llama = MakeBlockConfig(24, 4, 2, 20, NormKind::kRmsNorm, Activation::kSilu,
                                      {{M::kSelfAttention, P::kPre},
                                       {M::kGatedFeedForward, P::kPre}});
  llama.rope = {RopeStyle::kHalf, 10000.0, 0};
  llama.qk_norm = {true, NormKind::kRmsNorm, 1e-6};
  return {
      {"llama_rope_qk_norm_3_layers", Stack(llama, 3, true, {{-1, -1}, {3, 0}, {-1, -1}}), 2,
       9, true, false},
      {"gemma2_sandwich_2_layers",
       Stack(MakeBlockConfig(20, 2, 1, 28, NormKind::kGemmaRmsNorm, Activation::kGeluTanh,
                             {{M::kSelfAttention, P::kSandwich},
                              {M::kGatedFeedForward, P::kSandwich}}),
             2, true),
       1, 11, true, false},
      {"post_ln_encoder_2_layers",
       Stack(MakeBlockConfig(24, 2, 2, 20, NormKind::kLayerNorm, Activation::kGeluErf,
                             {{M::kSelfAttention, P::kPost}, {M::kFeedForward, P::kPost}}),
             2, false),
       2, 7, false, true},
  };
}

std::vector<std::string> CaseNames() { return CaseNamesOf(Cases()); }

StackCase FindCase(const std::string& name) { return CaseNamed(Cases(), name); }

// A stack's weights, input and d_output, in float and double.
struct Problem {
  StackCase c;
  StackConfig config;  // resolved
  MhaConfig attention;
  std::vector<std::vector<OwnedSublayer>> layers;
  std::vector<float> final_gamma, final_beta;
  OwnedTensor x;
  std::vector<uint8_t> key_padding;
  std::vector<float> d_output;
  StackProblem64 doubles;

  std::vector<std::vector<SublayerWeights>> Views() const {
    std::vector<std::vector<SublayerWeights>> v;
    for (const auto& layer : layers) v.push_back(simd_attention::testing::Views(layer));
    return v;
  }
  NormWeights FinalNorm() const { return {final_gamma, final_beta}; }
  BlockOptions Options() const {
    BlockOptions o;
    o.causal = c.causal;
    o.key_padding_mask = key_padding;
    o.training = true;
    return o;
  }
  Tensor3 DOutput() const { return {d_output, x.batch, x.tokens, x.features}; }
};

std::unique_ptr<Problem> MakeProblem(const StackCase& c, uint32_t seed) {
  auto p = std::make_unique<Problem>();
  p->c = c;
  p->config = TransformerStack(c.config).config();
  p->attention = BlockAttentionConfig(p->config.block);
  std::mt19937 rng(seed);
  const BlockConfig& b = p->config.block;
  const size_t d = b.d_model;
  for (size_t i = 0; i < c.config.num_layers; ++i) {
    p->layers.push_back(RandomBlockWeights(b, true, rng));
    std::vector<SublayerProblem64> layer;
    for (const OwnedSublayer& w : p->layers.back()) layer.push_back(SublayerDoubles(w));
    p->doubles.layers.push_back(std::move(layer));
  }
  if (c.config.final_norm) {
    // Gemma's stored gamma - 1 around 0; the others' scales around 1.
    p->final_gamma = Around(d, Traits(b.norm).plus_one ? 0.0f : 1.0f, rng);
    if (Traits(b.norm).has_beta) p->final_beta = Around(d, 0.5f, rng);
    p->doubles.final_gamma = ToDouble(p->final_gamma);
    p->doubles.final_beta = ToDouble(p->final_beta);
  }
  p->x = RandomTensor(c.batch, c.tokens, d, rng);
  if (c.padding) p->key_padding = RandomKeyPadding(c.batch, c.tokens, 0.7, rng);
  p->d_output = RandomVector(c.batch * c.tokens * d, 1.0f, rng);
  SetDoubleInputs(*p);
  return p;
}

StackBackward64 Reference(const Problem& p, bool with_gradients = true) {
  MhaOptions self;
  self.causal = p.c.causal;
  self.key_padding_mask = p.key_padding;
  const std::vector<double> d_output = ToDouble(p.d_output);
  return ReferenceStackBackward(p.config, p.attention, p.doubles, self,
                                with_gradients ? std::span<const double>(d_output)
                                               : std::span<const double>());
}

// The block backward test's chain, per layer, and the final norm's four
// reductions over d_model.
size_t ChainLength(const Problem& p) {
  const BlockConfig& c = p.config.block;
  const size_t layer = c.sublayers.size() * 8 * c.d_model + c.d_model + 2 * c.ffn_dim +
                       MhaChainLength(p.attention, p.c.batch, p.c.tokens, p.c.tokens) +
                       p.c.batch * p.c.tokens;
  return p.config.num_layers * layer + 4 * c.d_model;
}

struct StackRun {
  std::vector<float> output;
  StackGradients gradients;
};

StackRun RunStack(const Problem& p, const KernelTable& table, std::shared_ptr<ThreadPool> pool) {
  TransformerStack stack(p.c.config, table, std::move(pool));
  stack.SetWeights(p.Views(), p.FinalNorm());
  StackRun r;
  r.output = stack.Forward(p.x.View(), p.Options());
  stack.Backward(p.DOutput(), r.gradients);
  return r;
}

// Every gradient the stack returns with the reference's, by name.
std::vector<GradientPair> Pairs(const Problem& p, const StackGradients& g,
                                const StackBackward64& e) {
  std::vector<GradientPair> out = {{"d_input", &g.d_input, &e.d_input}};
  if (p.config.final_norm) {
    out.push_back({"final_norm.d_gamma", &g.final_norm.d_gamma, &e.d_final_gamma});
    out.push_back({"final_norm.d_beta", &g.final_norm.d_beta, &e.d_final_beta});
  }
  for (size_t i = 0; i < p.config.num_layers; ++i) {
    AddSublayerPairs(p.config.block, "layers[" + std::to_string(i) + "].", g.layers[i],
                     e.layers[i], out);
  }
  return out;
}

class StackBackwardReference : public TableCaseTest {};

TEST_P(StackBackwardReference, MatchesFloat64) {
  const auto p = MakeProblem(FindCase(case_name()), 17);
  const StackRun r = RunStack(*p, table(), SharedThreadPool(1));
  const StackBackward64 e = Reference(*p);
  ASSERT_EQ(r.gradients.layers.size(), p->config.num_layers);
  double max_abs = 0;
  for (const GradientPair& pair : Pairs(*p, r.gradients, e)) {
    max_abs = std::max(max_abs, MaxAbs(*pair.expected));
  }
  const double bound = FloatBound(ChainLength(*p), max_abs);
  EXPECT_TRUE(AllNear(r.output, e.output, bound)) << "output";
  size_t compared = 0;
  for (const GradientPair& pair : Pairs(*p, r.gradients, e)) {
    // Both empty where the layer has no such weight (an RMSNorm's beta, a
    // mixer of another kind).
    EXPECT_EQ(pair.actual->size(), pair.expected->size()) << pair.name;
    EXPECT_TRUE(AllNear(*pair.actual, *pair.expected, bound)) << pair.name;
    compared += pair.expected->empty() ? 0 : 1;
  }
  EXPECT_GE(compared, 6 * p->config.num_layers);
}

INSTANTIATE_TEST_SUITE_P(Cases, StackBackwardReference,
                         ::testing::ValuesIn(OnEveryTable(CaseNames())), TableCaseParamName);

// The reference itself: central differences of sum(output * d_output) in
// double against its gradients, for the input, the final norm and a sample
// of each layer's parameters, on small versions of the cases.
TEST_P(ReferenceGradients, MatchFiniteDifferences) {
  const auto p = MakeProblem(SmallCase(FindCase(GetParam()), 4), 5);
  ExpectReferenceGradients(*p, Reference, [&](const auto& check, auto& q, const auto& e) {
    check("final_gamma", q.final_gamma, e.d_final_gamma, 1);
    check("final_beta", q.final_beta, e.d_final_beta, 1);
    for (size_t i = 0; i < q.layers.size(); ++i) {
      for (size_t k = 0; k < q.layers[i].size(); ++k) {
        SublayerProblem64& w = q.layers[i][k];
        const SublayerBackward64& g = e.layers[i][k];
        const std::string at =
            "layers[" + std::to_string(i) + "].sublayers[" + std::to_string(k) + "].";
        check(at + "gamma", w.gamma, g.d_gamma, 5);
        check(at + "out_gamma", w.out_gamma, g.d_out_gamma, 5);
        check(at + "w_k", w.attention.w_k, g.attention.d_w_k, 13);
        check(at + "q_norm", w.attention.q_norm, g.attention.d_q_norm, 2);
        check(at + "w1", w.w1, g.d_w1, 17);
        check(at + "w_up", w.w_up, g.d_w_up, 17);
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Cases, ReferenceGradients, ::testing::ValuesIn(CaseNames()),
                         CaseParamName);

class StackBackwardLayers : public TableTest {};

// The stack's gradients are its layers' own: each layer's block, run alone
// on the layer before's output and given the layer after's d_input, gives
// the same bits.
TEST_P(StackBackwardLayers, EachLayersGradientsAreItsBlocks) {
  const auto p = MakeProblem(FindCase("post_ln_encoder_2_layers"), 23);
  const StackRun stack = RunStack(*p, table(), SharedThreadPool(1));
  std::vector<TransformerBlock> blocks;
  std::vector<float> h = p->x.data;
  for (size_t i = 0; i < p->layers.size(); ++i) {
    blocks.emplace_back(p->config.block, table(), SharedThreadPool(1));
    blocks[i].SetWeights(simd_attention::testing::Views(p->layers[i]));
    h = blocks[i].Forward({h, p->x.batch, p->x.tokens, p->x.features}, p->Options());
  }
  EXPECT_EQ(h, stack.output);
  std::vector<float> d = p->d_output;
  for (size_t i = blocks.size(); i-- > 0;) {
    SCOPED_TRACE(i);
    const BlockGradients g = blocks[i].Backward({d, p->x.batch, p->x.tokens, p->x.features});
    const SublayerGradients &a = g.sublayers[0], &b = stack.gradients.layers[i][0];
    EXPECT_EQ(b.attention.d_w_q, a.attention.d_w_q);
    EXPECT_EQ(b.attention.d_b_v, a.attention.d_b_v);
    EXPECT_EQ(b.norm.d_gamma, a.norm.d_gamma);
    EXPECT_EQ(stack.gradients.layers[i][1].ffn.d_w2, g.sublayers[1].ffn.d_w2);
    d = g.d_input;
  }
  EXPECT_EQ(stack.gradients.d_input, d);
}

INSTANTIATE_ON_EVERY_TABLE(StackBackwardLayers);

#if SA_HAVE_THREADS  // a wasm build without threads runs one
// Every split the stack's backward makes gives the same bits as one thread.
class StackBackwardThreads : public TableTest {};

TEST_P(StackBackwardThreads, BitIdenticalForOneTwoThreeThreads) {
  // Large enough that the GEMMs, the attention and the norms split.
  StackCase c = FindCase("llama_rope_qk_norm_3_layers");
  c.config.block.d_model = 64;
  c.config.block.ffn_dim = 160;
  c.batch = 2;
  c.tokens = 50;
  c.padding = true;
  const auto p = MakeProblem(c, 3);
  const StackRun one = RunStack(*p, table(), SharedThreadPool(1));
  for (size_t threads : {2, 3}) {
    const StackRun many = RunStack(*p, table(), SharedThreadPool(threads));
    EXPECT_EQ(many.output, one.output) << threads;
    EXPECT_EQ(many.gradients.d_input, one.gradients.d_input) << threads;
    EXPECT_EQ(many.gradients.final_norm.d_gamma, one.gradients.final_norm.d_gamma) << threads;
    for (size_t i = 0; i < one.gradients.layers.size(); ++i) {
      for (size_t k = 0; k < one.gradients.layers[i].size(); ++k) {
        const SublayerGradients &a = one.gradients.layers[i][k],
                                &b = many.gradients.layers[i][k];
        EXPECT_EQ(b.norm.d_gamma, a.norm.d_gamma) << i << " " << k;
        EXPECT_EQ(b.attention.d_w_q, a.attention.d_w_q) << i << " " << k;
        EXPECT_EQ(b.attention.d_w_v, a.attention.d_w_v) << i << " " << k;
        EXPECT_EQ(b.attention.d_q_norm, a.attention.d_q_norm) << i << " " << k;
        EXPECT_EQ(b.gated_ffn.d_w_gate, a.gated_ffn.d_w_gate) << i << " " << k;
        EXPECT_EQ(b.gated_ffn.d_w_down, a.gated_ffn.d_w_down) << i << " " << k;
      }
    }
  }
}

INSTANTIATE_ON_EVERY_TABLE(StackBackwardThreads);
#endif

class StackBackwardErrors : public TableTest {};

TEST_P(StackBackwardErrors, RefusesWhatItCannotDifferentiate) {
  const auto p = MakeProblem(FindCase("llama_rope_qk_norm_3_layers"), 29);
  TransformerStack stack(p->c.config, table(), SharedThreadPool(1));
  BlockOptions o = p->Options();
  ExpectRecordErrors(
      stack, p->DOutput(),
      [&](bool training) {
        o.training = training;
        stack.Forward(p->x.View(), o);
      },
      [&] { stack.SetWeights(p->Views(), p->FinalNorm()); });

  // Weights an optimizer could not update.
  StackConfig narrow = p->c.config;
  narrow.block.weights = WeightType::kBF16;
  TransformerStack bf16(narrow, table(), SharedThreadPool(1));
  bf16.SetWeights(p->Views(), p->FinalNorm());
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { bf16.Forward(p->x.View(), o); },
                                                {"options.training", "float32", "bfloat16"}));
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { bf16.Backward(p->DOutput()); },
                                           {"expected the last forward to be a training one"}));
  // Still usable for inference.
  o.training = false;
  EXPECT_EQ(bf16.Forward(p->x.View(), o).size(), p->x.data.size());
}

INSTANTIATE_ON_EVERY_TABLE(StackBackwardErrors);

}  // namespace
}  // namespace simd_attention::testing
