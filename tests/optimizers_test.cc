// SGD with momentum and Adam/AdamW: the fused kernels of every table against
// the update rules in double over a few steps; Optimizer::Step on a
// MultiHeadAttention (padded heads, bias) equal to SetWeights of the weights
// the rule gives from the gradients its Backward returned; training loops
// whose loss falls (an attention fitted to another's outputs, an encoder and
// a decoder layer, a Llama-like block); Step on blocks (every norm kind, the
// gated FFN's fused matrix, Gemma's stored gamma) equal to SetWeights of
// the rule's weights; errors, and steps refused before they would make a
// value or a moment non-finite.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "dispatch/dispatch.h"
#include "gradient_util.h"
#include "random_block.h"
#include "random_mha.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/optimizers.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/tiny_model.h"
#include "simd_attention/transformer_block.h"
#include "simd_attention/transformer_layers.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

// The rules in double (kernels/optimizer.h, torch.optim's).
struct Sgd64 {
  SgdOptions o;
  std::vector<double> buf;
  size_t steps = 0;
  void Step(std::vector<double>& w, const std::vector<float>& g) {
    buf.resize(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      double d = g[i] + o.weight_decay * w[i];
      if (o.momentum > 0) {
        buf[i] = steps == 0 ? d : o.momentum * buf[i] + d;
        d = o.nesterov ? d + o.momentum * buf[i] : buf[i];
      }
      w[i] -= o.lr * d;
    }
    ++steps;
  }
};

struct Adam64 {
  AdamOptions o;
  std::vector<double> m, v;
  size_t steps = 0;
  void Step(std::vector<double>& w, const std::vector<float>& g) {
    m.resize(w.size());
    v.resize(w.size());
    ++steps;
    const double bc1 = 1 - std::pow(o.beta1, double(steps));
    const double bc2 = 1 - std::pow(o.beta2, double(steps));
    for (size_t i = 0; i < w.size(); ++i) {
      double d = g[i];
      if (o.decoupled_weight_decay) {
        w[i] *= 1 - o.lr * o.weight_decay;
      } else {
        d += o.weight_decay * w[i];
      }
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * d;
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * d * d;
      w[i] -= o.lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + o.eps);
    }
  }
};

const SgdOptions kSgd = {.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true};
const AdamOptions kAdam = {.lr = 0.01, .weight_decay = 0.1};
const AdamOptions kAdamW = {.lr = 0.01, .weight_decay = 0.1, .decoupled_weight_decay = true};

// ---------------------------------------------------------------------------
// The kernels: three steps with fresh gradients, 37 elements (whole vectors
// and a tail on every table), against the rules in double.

class OptimizerKernels : public TableTest {};

TEST_P(OptimizerKernels, FollowTheRulesInDouble) {
  const TrainingKernels& t = TrainingKernelsFor(table());
  const size_t n = 37;
  std::mt19937 rng(4);
  const std::vector<float> w0 = RandomVector(n, 1.0f, rng);
  for (const SgdOptions& o : {kSgd, SgdOptions{.lr = 0.05}, SgdOptions{.lr = 0.1, .momentum = 0.5}}) {
    std::vector<float> w = w0, buf(n);
    std::vector<double> w64 = ToDouble(w0);
    Sgd64 rule{o};
    for (size_t step = 0; step < 3; ++step) {
      const std::vector<float> g = RandomVector(n, 1.0f, rng);
      t.sgd({w.data(), g.data(), o.momentum > 0 ? buf.data() : nullptr, n, float(o.lr),
             float(o.momentum), float(o.weight_decay), o.nesterov, step == 0});
      rule.Step(w64, g);
      EXPECT_TRUE(AllNear(w, w64, 4e-7 * (1 + MaxAbs(w64)))) << "sgd, step " << step;
    }
  }
  for (const AdamOptions& o : {kAdam, kAdamW}) {
    std::vector<float> w = w0, m(n), v(n);
    std::vector<double> w64 = ToDouble(w0);
    Adam64 rule{o};
    for (size_t step = 0; step < 3; ++step) {
      const std::vector<float> g = RandomVector(n, 1.0f, rng);
      const double bc1 = 1 - std::pow(o.beta1, double(step + 1));
      const double bc2 = 1 - std::pow(o.beta2, double(step + 1));
      t.adam({w.data(), g.data(), m.data(), v.data(), n, float(o.beta1), float(o.beta2),
              float(o.eps), o.decoupled_weight_decay ? 0.0f : float(o.weight_decay),
              o.decoupled_weight_decay ? float(1 - o.lr * o.weight_decay) : 1.0f,
              float(o.lr / bc1), float(1 / std::sqrt(bc2))});
      rule.Step(w64, g);
      // The step is lr-sized whatever g is: relative error of the update
      // (a few u) times lr, plus w's own rounding.
      EXPECT_TRUE(AllNear(w, w64, 4e-7 * (1 + MaxAbs(w64)))) << "adam, step " << step;
    }
  }
}

INSTANTIATE_ON_EVERY_TABLE(OptimizerKernels);

// ---------------------------------------------------------------------------
// Step(MultiHeadAttention) updates the packed weights in place: after each
// step its forward equals that of a fresh object given the weights the rule
// computes in double from the gradients Backward returned.

struct Weights64 {
  std::vector<double> w[8];  // w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o
  explicit Weights64(const OwnedWeights& o) {
    const std::vector<float>* v[8] = {&o.w_q, &o.w_k, &o.w_v, &o.w_o,
                                      &o.b_q, &o.b_k, &o.b_v, &o.b_o};
    for (int i = 0; i < 8; ++i) w[i] = ToDouble(*v[i]);
  }
  OwnedWeights Floats() const {
    OwnedWeights o;
    std::vector<float>* v[8] = {&o.w_q, &o.w_k, &o.w_v, &o.w_o, &o.b_q, &o.b_k, &o.b_v, &o.b_o};
    for (int i = 0; i < 8; ++i) v[i]->assign(w[i].begin(), w[i].end());
    return o;
  }
};

const std::vector<float>* GradientOf(const MhaGradients& g, int i) {
  const std::vector<float>* v[8] = {&g.d_w_q, &g.d_w_k, &g.d_w_v, &g.d_w_o,
                                    &g.d_b_q, &g.d_b_k, &g.d_b_v, &g.d_b_o};
  return v[i];
}

template <class Rule>
void ExpectStepsFollowRule(const KernelTable& table, Optimizer& optimizer, Rule rule_proto) {
  std::mt19937 rng(9);
  // Heads of 5 and 3: padded to whole vectors on every SIMD table.
  const MhaConfig config = MultiHeadAttention(MhaConfig{
      .d_model = 15, .num_heads = 3, .head_dim = 5, .head_dim_v = 3}).config();
  const OwnedWeights w0 = RandomWeights(config, rng);
  const OwnedTensor x = RandomTensor(2, 6, config.d_model, rng);
  const std::vector<float> d_output = RandomVector(x.data.size(), 1.0f, rng);
  MultiHeadAttention mha(config, table);
  mha.SetWeights(w0.View());
  Weights64 w64(w0);
  std::vector<Rule> rules(8, rule_proto);
  MhaOptions training;
  training.training = true;
  for (int step = 0; step < 3; ++step) {
    mha.Forward(x.View(), training);
    const MhaGradients g = mha.Backward({d_output, x.batch, x.tokens, x.features});
    optimizer.Step(mha);
    for (int i = 0; i < 8; ++i) rules[i].Step(w64.w[i], *GradientOf(g, i));
    const OwnedWeights expected = w64.Floats();
    MultiHeadAttention fresh(config, table);
    fresh.SetWeights(expected.View());
    const std::vector<float> want = fresh.Forward(x.View()).output;
    // Outputs of the same weights to within their rounding (float32 updates
    // against double ones, then the forward's own rounding).
    EXPECT_TRUE(AllNear(mha.Forward(x.View()).output, want, ScaledTolerance(want, 2e-5)))
        << "step " << step;
  }
}

class OptimizerStep : public TableTest {};

TEST_P(OptimizerStep, SgdUpdatesPackedWeights) {
  Sgd sgd(kSgd);
  ExpectStepsFollowRule(table(), sgd, Sgd64{kSgd});
}

TEST_P(OptimizerStep, AdamUpdatesPackedWeights) {
  Adam adam(kAdam);
  ExpectStepsFollowRule(table(), adam, Adam64{kAdam});
}

TEST_P(OptimizerStep, AdamWUpdatesPackedWeights) {
  Adam adamw(kAdamW);
  ExpectStepsFollowRule(table(), adamw, Adam64{kAdamW});
}

INSTANTIATE_ON_EVERY_TABLE(OptimizerStep);

// ---------------------------------------------------------------------------
// Training loops: the loss (mean squared error against a target) falls.

double MseGradient(const std::vector<float>& y, const std::vector<float>& target,
                   std::vector<float>& d_output) {
  double loss = 0;
  d_output.resize(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const double e = double(y[i]) - double(target[i]);
    loss += e * e;
    d_output[i] = float(2 * e / double(y.size()));
  }
  return loss / double(y.size());
}

// `steps` steps of `optimizer` on `object` towards `target` by the mean
// squared error, `forward` running the object's training forward on x: the
// loss, recorded as `name`, falls below `factor` times its first value.
template <class Object, class Forward>
void ExpectLossFalls(const char* name, Object& object, Optimizer& optimizer, int steps,
                     const OwnedTensor& x, const std::vector<float>& target, double factor,
                     Forward forward) {
  std::vector<float> d_output;
  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    last = MseGradient(forward(), target, d_output);
    if (step == 0) first = last;
    object.Backward({d_output, x.batch, x.tokens, x.features});
    optimizer.Step(object);
  }
  ::testing::Test::RecordProperty(name, std::to_string(first) + " -> " + std::to_string(last));
  EXPECT_LT(last, factor * first) << name << " " << first << " -> " << last;
}

// The same for a block or a stack of width 20: Adam at lr 0.01 over 60
// causal training forwards of a random [2, 8, 20] x towards a random target
// (the next draws of `rng`), to below half the first loss.
template <class Object>
void ExpectCausalLossFalls(const char* name, Object& object, std::mt19937& rng) {
  const OwnedTensor x = RandomTensor(2, 8, 20, rng), target = RandomTensor(2, 8, 20, rng);
  Adam adam({.lr = 0.01});
  BlockOptions o;
  o.causal = true;
  o.training = true;
  ExpectLossFalls(name, object, adam, 60, x, target.data, 0.5,
                  [&] { return object.Forward(x.View(), o); });
}

// One set of defaults, torch.optim's, which the JS package reports through
// an optimizer's options; an optimizer keeps the options it was made with.
TEST(OptimizerOptions, DefaultsAreTorchsAndAreKept) {
  EXPECT_EQ(Sgd(SgdOptions{}).options().lr, 1e-3);
  EXPECT_EQ(SgdOptions{}.momentum, 0);
  EXPECT_EQ(SgdOptions{}.weight_decay, 0);
  EXPECT_FALSE(SgdOptions{}.nesterov);
  const AdamOptions adam = Adam(AdamOptions{}).options();
  EXPECT_EQ(adam.lr, 1e-3);
  EXPECT_EQ(adam.beta1, 0.9);
  EXPECT_EQ(adam.beta2, 0.999);
  EXPECT_EQ(adam.eps, 1e-8);
  const Sgd sgd({.lr = 0.5, .momentum = 0.25, .nesterov = true});
  EXPECT_EQ(sgd.options().lr, 0.5);
  EXPECT_EQ(sgd.options().momentum, 0.25);
  EXPECT_TRUE(sgd.options().nesterov);
}

TEST(TrainingLoop, AttentionFitsAnotherAttentionsOutputs) {
  std::mt19937 rng(21);
  const MhaConfig config = MultiHeadAttention(MhaConfig{.d_model = 16, .num_heads = 4}).config();
  MultiHeadAttention teacher(config), student(config);
  const OwnedWeights teacher_weights = RandomWeights(config, rng);
  const OwnedWeights student_weights = RandomWeights(config, rng);
  teacher.SetWeights(teacher_weights.View());
  student.SetWeights(student_weights.View());
  const OwnedTensor x = RandomTensor(4, 12, config.d_model, rng);
  MhaOptions options;
  options.causal = true;
  const std::vector<float> target = teacher.Forward(x.View(), options).output;
  options.training = true;
  Adam adam({.lr = 0.01});
  ExpectLossFalls("loss", student, adam, 300, x, target, 0.05,
                  [&] { return student.Forward(x.View(), options).output; });
}

TEST(TrainingLoop, LayersLossFalls) {
  std::mt19937 rng(22);
  LayerConfig config{.d_model = 16, .num_heads = 2, .ffn_dim = 32, .norm_first = true,
                     .activation = Activation::kGeluErf};
  const MhaConfig attention =
      MultiHeadAttention(MhaConfig{.d_model = 16, .num_heads = 2}).config();
  const OwnedWeights self = RandomWeights(attention, rng), cross = RandomWeights(attention, rng);
  const std::vector<float> w1 = RandomVector(16 * 32, 0.25f, rng), b1(32);
  const std::vector<float> w2 = RandomVector(32 * 16, 0.18f, rng), b2(16);
  const std::vector<float> gamma(16, 1.0f), beta(16, 0.0f);
  const FfnWeights ffn{w1, b1, w2, b2};
  const NormWeights norm{gamma, beta};
  const OwnedTensor x = RandomTensor(2, 8, 16, rng), memory = RandomTensor(2, 5, 16, rng);
  const OwnedTensor target = RandomTensor(2, 8, 16, rng);

  TransformerEncoderLayer encoder(config);
  encoder.SetWeights(self.View(), ffn, norm, norm);
  Sgd sgd({.lr = 0.05, .momentum = 0.9});
  EncoderOptions eo;
  eo.training = true;
  ExpectLossFalls("encoder_loss", encoder, sgd, 60, x, target.data, 0.5,
                  [&] { return encoder.Forward(x.View(), eo); });

  config.norm_first = false;
  TransformerDecoderLayer decoder(config);
  decoder.SetWeights(self.View(), cross.View(), ffn, norm, norm, norm);
  Adam adamw({.lr = 0.01, .weight_decay = 0.01, .decoupled_weight_decay = true});
  DecoderOptions d_options;
  d_options.training = true;
  ExpectLossFalls("decoder_loss", decoder, adamw, 60, x, target.data, 0.5,
                  [&] { return decoder.Forward(x.View(), memory.View(), d_options); });
}

// ---------------------------------------------------------------------------
// Errors.

TEST(OptimizerErrors, NamedAndRecoverable) {
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([] { Sgd({.lr = 0}); },
                                                {"options.lr", "> 0", "got 0"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([] { Sgd({.lr = 0.1, .momentum = -1}); },
                                                {"options.momentum", ">= 0", "got -1"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([] { Sgd({.lr = 0.1, .nesterov = true}); },
                                                {"options.nesterov", "momentum"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([] { Adam({.beta1 = 1}); },
                                                {"options.beta1", "[0, 1)", "got 1"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([] { Adam({.eps = NAN}); },
                                                {"options.eps", "got NaN"}));
  // 0 in float32, the type the kernel adds it in: 0 / 0 for a zero gradient.
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [] { Adam({.eps = 1e-60}); },
      {"options.eps: expected a finite number > 0 that float32 can hold (1.4e-45 to 3.4e38), "
       "got 1e-60"}));
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([] { Adam({.weight_decay = -0.5}); },
                                                {"options.weight_decay", "got -0.5"}));

  std::mt19937 rng(2);
  const MhaConfig config = MultiHeadAttention(MhaConfig{.d_model = 8, .num_heads = 2}).config();
  const OwnedWeights w = RandomWeights(config, rng);
  const OwnedTensor x = RandomTensor(1, 4, 8, rng);
  MultiHeadAttention mha(config);
  mha.SetWeights(w.View());
  Adam adam({});
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { adam.Step(mha); },
                                           {"expected a backward since the weights last changed"}));
  MhaOptions training;
  training.training = true;
  mha.Forward(x.View(), training);
  const std::vector<float> ones(x.data.size(), 1.0f);
  mha.Backward({ones, x.batch, x.tokens, x.features});
  adam.Step(mha);
  // A step releases the training state: Backward needs a new training forward.
  EXPECT_TRUE(ThrowsWith<std::logic_error>(
      [&] { mha.Backward({ones, x.batch, x.tokens, x.features}); },
      {"expected the last forward to be a training one"}));
  // SetWeights drops the gradients.
  mha.SetWeights(w.View());
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { adam.Step(mha); }, {"expected a backward since the weights last changed"}));
}

// ---------------------------------------------------------------------------
// A step whose values or moments would not be finite is refused, by name,
// and changes nothing.

// check_only computes what the step would write, through the same code,
// and says which results would not be finite, writing nothing: in a whole
// vector (element 3) and in the tail (element 36) alike.
TEST_P(OptimizerKernels, CheckOnlyFindsWhatWouldNotBeFiniteAndWritesNothing) {
  const TrainingKernels& t = TrainingKernelsFor(table());
  const size_t n = 37;
  std::mt19937 rng(5);
  const std::vector<float> w0 = RandomVector(n, 1.0f, rng), g0 = RandomVector(n, 1.0f, rng);
  for (const size_t at : {size_t{3}, size_t{36}}) {
    std::vector<float> w = w0, g = g0, buf(n, 0.5f), m(n, 0.5f), v(n, 0.5f);
    const auto unchanged = [&] {
      return w == w0 && buf == std::vector<float>(n, 0.5f) && m == buf && v == buf;
    };
    const SgdArgs sgd{w.data(), g.data(), buf.data(), n, 0.1f, 0.9f, 0.0f, false, false, true};
    EXPECT_EQ(t.sgd(sgd), 0u);
    g[at] = 3e38f;  // 0.9 * 0.5 + 3e38 is finite; 1 - 10 * that is not
    SgdArgs big_lr = sgd;
    big_lr.lr = 10.0f;
    EXPECT_EQ(t.sgd(big_lr), unsigned{kNewWeight}) << at;
    // The momentum buffer itself: 0.9 * 3e38 + 3e38, and so the value.
    std::fill(buf.begin(), buf.end(), 3e38f);
    EXPECT_EQ(t.sgd(sgd), unsigned{kNewSlot0 | kNewWeight}) << at;
    std::fill(buf.begin(), buf.end(), 0.5f);
    // Adam: the gradient's square overflows v (1e20^2 = 1e40); m and the
    // value stay finite (v = inf makes the update 0).
    g = g0;
    g[at] = 1e20f;
    const AdamArgs adam{w.data(), g.data(), m.data(), v.data(), n, 0.9f, 0.999f, 1e-8f, 0.0f,
                        1.0f, 0.01f, 1.0f, true};
    EXPECT_EQ(t.adam(adam), unsigned{kNewSlot1}) << at;
    // An infinite step size (lr / (1 - beta1) past float32): every value.
    g = g0;
    AdamArgs huge = adam;
    huge.step_size = INFINITY;
    EXPECT_EQ(t.adam(huge), unsigned{kNewWeight}) << at;
    EXPECT_TRUE(unchanged()) << at;
  }
}

// An attention whose b_o[0] is 3.35e38: a gradient of -1e38 there (d_output
// -2.5e37 in column 0 of each of 4 rows) would take it to 3.45e38. W_o's
// column 0 is zero, so that no other gradient is large. The SGD step is
// refused naming b_o, and the weights and the momentum stay as they were:
// the next steps match those of a twin that never took it. So for Adam,
// whose second moment a gradient of 1e30 would overflow.
TEST_P(OptimizerStep, AStepThatWouldOverflowChangesNothing) {
  std::mt19937 rng(6);
  const MhaConfig config = MultiHeadAttention(MhaConfig{.d_model = 8, .num_heads = 2}).config();
  OwnedWeights w = RandomWeights(config, rng);
  w.b_o[0] = 3.35e38f;
  for (size_t r = 0; r < 8; ++r) w.w_o[r * 8] = 0.0f;
  const OwnedTensor x = RandomTensor(1, 4, 8, rng);
  const std::vector<float> small = RandomVector(x.data.size(), 1e-3f, rng);
  std::vector<float> huge_sgd(x.data.size(), 0.0f), huge_adam(x.data.size(), 1e30f);
  for (size_t r = 0; r < 4; ++r) huge_sgd[r * 8] = -2.5e37f;
  MhaOptions training;
  training.training = true;
  const auto step = [&](MultiHeadAttention& mha, Optimizer& o, const std::vector<float>& d) {
    mha.Forward(x.View(), training);
    mha.Backward({d, 1, 4, 8});
    o.Step(mha);
  };
  const auto check = [&](Optimizer& a_opt, Optimizer& b_opt, const std::vector<float>& huge,
                         const std::string& message) {
    MultiHeadAttention a(config, table()), b(config, table());
    a.SetWeights(w.View());
    b.SetWeights(w.View());
    step(a, a_opt, small);
    step(b, b_opt, small);
    const std::vector<float> before = a.Forward(x.View()).output;
    a.Forward(x.View(), training);
    a.Backward({huge, 1, 4, 8});
    EXPECT_TRUE(ThrowsWith<std::range_error>([&] { a_opt.Step(a); }, {message}));
    EXPECT_EQ(a.Forward(x.View()).output, before);
    for (int i = 0; i < 2; ++i) {
      step(a, a_opt, small);
      step(b, b_opt, small);
      EXPECT_EQ(a.Forward(x.View()).output, b.Forward(x.View()).output) << message;
    }
  };
  Sgd sgd_a({.lr = 0.1, .momentum = 0.9}), sgd_b({.lr = 0.1, .momentum = 0.9});
  check(sgd_a, sgd_b, huge_sgd,
        "b_o: SGD step refused: options.lr times its update would overflow float32; no weight or "
        "optimizer state changed");
  Adam adam_a({.lr = 0.01}), adam_b({.lr = 0.01});
  check(adam_a, adam_b, huge_adam,
        ": Adam step refused: its second moment (the gradients' squares: gradients beyond 1.8e19 "
        "in magnitude) would overflow float32; no weight or optimizer state changed");
}

// Parameters are named as SetWeights names them, with the object's names
// (config.names): an lr past float32 makes every update overflow, so the
// first parameter is named.
TEST(OptimizerErrors, NameTheParameterAsSetWeightsDoes) {
  std::mt19937 rng(7);
  const MhaConfig attention = MultiHeadAttention(MhaConfig{.d_model = 8, .num_heads = 2}).config();
  const OwnedWeights self = RandomWeights(attention, rng), cross = RandomWeights(attention, rng);
  const std::vector<float> w1 = RandomVector(8 * 16, 0.3f, rng), b1(16);
  const std::vector<float> w2 = RandomVector(16 * 8, 0.25f, rng), b2(8);
  const std::vector<float> gamma(8, 1.0f), beta(8, 0.0f);
  const OwnedTensor x = RandomTensor(1, 3, 8, rng), memory = RandomTensor(1, 2, 8, rng);
  const std::vector<float> d(x.data.size(), 0.5f);
  const Tensor3 d_output{d, 1, 3, 8};
  Adam adam({.lr = 3.5e38}), adamw({.lr = 3.5e38, .decoupled_weight_decay = true});
  // The step refused, naming the object's first parameter.
  const auto refused = [](Optimizer& optimizer, Trainable& object, const std::string& first) {
    return ThrowsWith<std::range_error>(
        [&] { optimizer.Step(object); },
        {first + " step refused: options.lr times its update would overflow float32; no weight "
                 "or optimizer state changed"});
  };

  MultiHeadAttention mha(attention);
  mha.SetWeights(self.View());
  mha.Forward(x.View(), {.training = true});
  mha.Backward(d_output);
  EXPECT_TRUE(refused(adam, mha, "w_q: Adam"));

  const LayerConfig config{.d_model = 8, .num_heads = 2, .ffn_dim = 16};
  TransformerEncoderLayer encoder(config);
  encoder.SetWeights(self.View(), {w1, b1, w2, b2}, {gamma, beta}, {gamma, beta});
  encoder.Forward(x.View(), {.training = true});
  encoder.Backward(d_output);
  EXPECT_TRUE(refused(adamw, encoder, "attention.w_q: AdamW"));
  // The layer keeps its gradients: a usable optimizer steps it.
  Sgd({.lr = 0.01}).Step(encoder);

  TransformerDecoderLayer decoder(config);
  decoder.SetWeights(self.View(), cross.View(), {w1, b1, w2, b2}, {gamma, beta}, {gamma, beta},
                     {gamma, beta});
  decoder.Forward(x.View(), memory.View(), {.training = true});
  decoder.Backward(d_output);
  EXPECT_TRUE(refused(adam, decoder, "self_attention.w_q: Adam"));

  TinyTransformer model(
      TinyModelConfig{.vocab = 6, .d_model = 8, .num_heads = 2, .num_layers = 1, .max_tokens = 4});
  const std::vector<int32_t> tokens = {1, 2, 3, 4}, targets = {2, 3, 4, 5};
  model.Forward(tokens, targets, 1, 4, {.training = true});
  model.Backward();
  EXPECT_TRUE(refused(adam, model, "weights.embedding: Adam"));
}

// ---------------------------------------------------------------------------
// Step(TransformerBlock): every parameter it lists is updated as the rule
// says, in the layout SetWeights takes: after an SGD step (weight decay
// included, which decays Gemma's stored gamma, not its 1 + gamma, in the
// block's norms and in QK-norm's) the block
// computes what a fresh block given the rule's weights computes.

// w - lr (g + weight_decay w), in double, for every weight of a block with
// its gradient (the attentions' from the MhaGradients of the same names).
void SgdStep(std::vector<OwnedSublayer>& sublayers, const BlockGradients& g, double lr,
             double weight_decay) {
  const auto step = [&](std::vector<float>& w, const std::vector<float>& d) {
    ASSERT_EQ(w.size(), d.size());
    for (size_t i = 0; i < w.size(); ++i) {
      w[i] = float(double(w[i]) - lr * (double(d[i]) + weight_decay * double(w[i])));
    }
  };
  for (size_t k = 0; k < sublayers.size(); ++k) {
    OwnedSublayer& w = sublayers[k];
    const SublayerGradients& d = g.sublayers[k];
    step(w.gamma, d.norm.d_gamma);
    step(w.beta, d.norm.d_beta);
    step(w.out_gamma, d.output_norm.d_gamma);
    step(w.out_beta, d.output_norm.d_beta);
    if (!w.attention.w_q.empty()) {
      OwnedWeights& a = w.attention;
      for (int i = 0; i < 8; ++i) {
        std::vector<float>* v[8] = {&a.w_q, &a.w_k, &a.w_v, &a.w_o,
                                    &a.b_q, &a.b_k, &a.b_v, &a.b_o};
        step(*v[i], *GradientOf(d.attention, i));
      }
      step(w.q_norm, d.attention.d_q_norm);
      step(w.k_norm, d.attention.d_k_norm);
    }
    step(w.w1, d.ffn.d_w1);
    step(w.b1, d.ffn.d_b1);
    step(w.w2, d.ffn.d_w2);
    step(w.b2, d.ffn.d_b2);
    step(w.w_gate, d.gated_ffn.d_w_gate);
    step(w.b_gate, d.gated_ffn.d_b_gate);
    step(w.w_up, d.gated_ffn.d_w_up);
    step(w.b_up, d.gated_ffn.d_b_up);
    step(w.w_down, d.gated_ffn.d_w_down);
    step(w.b_down, d.gated_ffn.d_b_down);
  }
}

// Heads of 5: padded on every SIMD table.
BlockConfig SmallBlock(NormKind norm, Activation act, std::vector<Sublayer> sublayers) {
  return MakeBlockConfig(20, 4, 2, 12, norm, act, std::move(sublayers));
}

class BlockStep : public TableTest {};

TEST_P(BlockStep, SgdUpdatesEveryParameterAsTheRuleSays) {
  using M = MixerKind;
  using P = NormPlacement;
  // Gemma 3's: QK-norm stored as gamma - 1 too, RoPE over 4 of 5 features.
  BlockConfig gemma =
      SmallBlock(NormKind::kGemmaRmsNorm, Activation::kGeluTanh,
                 {{M::kSelfAttention, P::kSandwich}, {M::kGatedFeedForward, P::kSandwich}});
  gemma.rope = {RopeStyle::kHalf, 10000.0, 4};
  gemma.qk_norm = {true, NormKind::kGemmaRmsNorm, 1e-6};
  const BlockConfig configs[] = {
      gemma,
      SmallBlock(NormKind::kLayerNorm, Activation::kSilu,
                 {{M::kSelfAttention, P::kPre},
                  {M::kGatedFeedForward, P::kPre, true},
                  {M::kCrossAttention, P::kPost},
                  {M::kFeedForward, P::kPre}}),
  };
  for (const BlockConfig& config : configs) {
    SCOPED_TRACE(Traits(config.norm).name);
    std::mt19937 rng(12);
    std::vector<OwnedSublayer> w = RandomBlockWeights(config, true, rng);
    const OwnedTensor x = RandomTensor(2, 5, 20, rng), memory = RandomTensor(2, 3, 20, rng);
    const std::vector<float> d_output = RandomVector(x.data.size(), 1.0f, rng);
    TransformerBlock block(config, table(), SharedThreadPool(1));
    block.SetWeights(Views(w));
    BlockOptions o;
    o.causal = true;
    o.training = true;
    block.Forward(x.View(), memory.View(), o);
    const BlockGradients g = block.Backward({d_output, x.batch, x.tokens, x.features});
    const double lr = 0.05, weight_decay = 0.2;
    Sgd({.lr = lr, .weight_decay = weight_decay}).Step(block);
    SgdStep(w, g, lr, weight_decay);
    TransformerBlock fresh(config, table(), SharedThreadPool(1));
    fresh.SetWeights(Views(w));
    o.training = false;
    const std::vector<float> want = fresh.Forward(x.View(), memory.View(), o);
    EXPECT_TRUE(AllNear(block.Forward(x.View(), memory.View(), o), want,
                        ScaledTolerance(want, 2e-5)));
    // The record went with the old weights; the gradients stay for another
    // step, as every object's.
    EXPECT_TRUE(ThrowsWith<std::logic_error>(
        [&] { block.Backward({d_output, x.batch, x.tokens, x.features}); },
        {"expected the last forward to be a training one"}));
  }
}

INSTANTIATE_ON_EVERY_TABLE(BlockStep);

TEST(TrainingLoop, LlamaBlockLossFalls) {
  using M = MixerKind;
  using P = NormPlacement;
  std::mt19937 rng(31);
  const BlockConfig config =
      SmallBlock(NormKind::kRmsNorm, Activation::kSilu,
                 {{M::kSelfAttention, P::kPre}, {M::kGatedFeedForward, P::kPre}});
  const std::vector<OwnedSublayer> w = RandomBlockWeights(config, true, rng);
  TransformerBlock block(config);
  block.SetWeights(Views(w));
  ExpectCausalLossFalls("block_loss", block, rng);
}

TEST(OptimizerErrors, BlockParametersNamedAsSetWeightsNamesThem) {
  using M = MixerKind;
  using P = NormPlacement;
  std::mt19937 rng(8);
  BlockConfig config = SmallBlock(NormKind::kRmsNorm, Activation::kSilu,
                                  {{M::kGatedFeedForward, P::kPre}, {M::kSelfAttention, P::kPre}});
  const std::vector<OwnedSublayer> w = RandomBlockWeights(config, true, rng);
  const OwnedTensor x = RandomTensor(1, 3, 20, rng);
  const std::vector<float> d(x.data.size(), 0.5f);
  TransformerBlock block(config);
  block.SetWeights(Views(w));
  Adam adam({.lr = 0.01});
  EXPECT_TRUE(ThrowsWith<std::logic_error>(
      [&] { adam.Step(block); }, {"expected a backward since the weights last changed"}));
  BlockOptions o;
  o.training = true;
  block.Forward(x.View(), o);
  block.Backward({d, 1, 3, 20});
  // An lr past float32 makes every update overflow: the first is named.
  Adam huge({.lr = 3.5e38});
  EXPECT_TRUE(ThrowsWith<std::range_error>([&] { huge.Step(block); },
                                           {"sublayers[0] (gated_ffn): gated_ffn.w_gate, "
                                            "sublayers[0] (gated_ffn): gated_ffn.w_up: Adam step "
                                            "refused"}));
  // Every parameter in the sublayers' order, each mixer's before its norm's,
  // named as SetWeights' messages name them; the fused gate and up matrix
  // after both.
  std::vector<Parameter> parameters;
  block.TrainableParameters(parameters, "block.");
  std::vector<std::string> names;
  for (const Parameter& p : parameters) names.push_back(p.name);
  const std::vector<std::string> expected = {
      "block.sublayers[0] (gated_ffn): gated_ffn.w_gate, "
      "block.sublayers[0] (gated_ffn): gated_ffn.w_up",
      "block.sublayers[0] (gated_ffn): gated_ffn.b_gate, "
      "block.sublayers[0] (gated_ffn): gated_ffn.b_up",
      "block.sublayers[0] (gated_ffn): gated_ffn.w_down",
      "block.sublayers[0] (gated_ffn): gated_ffn.b_down",
      "block.sublayers[0] (gated_ffn): norm.gamma",
      "block.sublayers[1] (self_attention): w_q",
      "block.sublayers[1] (self_attention): b_q",
      "block.sublayers[1] (self_attention): w_k",
      "block.sublayers[1] (self_attention): b_k",
      "block.sublayers[1] (self_attention): w_v",
      "block.sublayers[1] (self_attention): b_v",
      "block.sublayers[1] (self_attention): w_o",
      "block.sublayers[1] (self_attention): b_o",
      "block.sublayers[1] (self_attention): norm.gamma"};
  EXPECT_EQ(names, expected);
  // The block keeps its gradients: a usable optimizer steps it.
  adam.Step(block);
  // New weights drop them.
  block.SetWeights(Views(w));
  EXPECT_TRUE(ThrowsWith<std::logic_error>(
      [&] { adam.Step(block); }, {"expected a backward since the weights last changed"}));
}

// ---------------------------------------------------------------------------
// Step(TransformerStack): every layer's parameters and the final norm's.

StackConfig SmallLlamaStack(size_t layers) {
  using M = MixerKind;
  using P = NormPlacement;
  StackConfig c;
  c.block = SmallBlock(NormKind::kRmsNorm, Activation::kSilu,
                       {{M::kSelfAttention, P::kPre}, {M::kGatedFeedForward, P::kPre}});
  c.block.rope = {RopeStyle::kHalf, 10000.0, 4};  // of heads of 5
  c.block.qk_norm = {true, NormKind::kRmsNorm, 1e-6};
  c.num_layers = layers;
  c.final_norm = true;
  return c;
}

// Layer i's weights and the final norm's, each of stack `c`.
struct StackWeights {
  std::vector<std::vector<OwnedSublayer>> layers;
  std::vector<float> final_gamma;

  StackWeights(const StackConfig& c, std::mt19937& rng)
      : final_gamma(Around(c.block.d_model, 1.0f, rng)) {
    for (size_t i = 0; i < c.num_layers; ++i) {
      layers.push_back(RandomBlockWeights(c.block, false, rng));
    }
  }
  void SetOn(TransformerStack& stack) const {
    std::vector<std::vector<SublayerWeights>> views;
    for (const auto& layer : layers) views.push_back(Views(layer));
    stack.SetWeights(views, {final_gamma, {}});
  }
};

TEST(TrainingLoop, LlamaStackLossFalls) {
  std::mt19937 rng(32);
  const StackConfig config = SmallLlamaStack(3);
  TransformerStack stack(config);
  StackWeights(stack.config(), rng).SetOn(stack);
  ExpectCausalLossFalls("stack_loss", stack, rng);
}

TEST(OptimizerErrors, StackParametersNamedAsSetWeightsNamesThem) {
  std::mt19937 rng(9);
  TransformerStack stack(SmallLlamaStack(2));
  const StackWeights w(stack.config(), rng);
  w.SetOn(stack);
  const OwnedTensor x = RandomTensor(1, 3, 20, rng);
  const std::vector<float> d(x.data.size(), 0.5f);
  Adam adam({.lr = 0.01});
  EXPECT_TRUE(ThrowsWith<std::logic_error>(
      [&] { adam.Step(stack); }, {"expected a backward since the weights last changed"}));
  BlockOptions o;
  o.training = true;
  stack.Forward(x.View(), o);
  stack.Backward({d, 1, 3, 20});
  // Each layer's under its index, as SetWeights' messages name them, then
  // the final norm's.
  std::vector<Parameter> parameters;
  stack.TrainableParameters(parameters, "");
  std::vector<std::string> names;
  for (const Parameter& p : parameters) names.push_back(p.name);
  // Per layer: the attention's 4 matrices and 4 biases (zeros, trained), its
  // QK-norm scales and norm, the gated FFN's 4 and its norm.
  ASSERT_EQ(names.size(), 2 * 16 + 1);
  EXPECT_EQ(names[0], "layers[0].sublayers[0] (self_attention): w_q");
  EXPECT_EQ(names[8], "layers[0].sublayers[0] (self_attention): q_norm");
  EXPECT_EQ(names[16], "layers[1].sublayers[0] (self_attention): w_q");
  EXPECT_EQ(names[31], "layers[1].sublayers[1] (gated_ffn): norm.gamma");
  EXPECT_EQ(names[32], "final_norm.gamma");
  // An lr past float32 makes every update overflow: the first is named.
  Adam huge({.lr = 3.5e38});
  EXPECT_TRUE(ThrowsWith<std::range_error>(
      [&] { huge.Step(stack); },
      {"layers[0].sublayers[0] (self_attention): w_q: Adam step refused"}));
  // A step moves every layer's weights and the final norm's.
  const auto values = [&](size_t i) {
    return std::vector<float>(parameters[i].value, parameters[i].value + parameters[i].size);
  };
  std::vector<std::vector<float>> before;
  for (size_t i = 0; i < parameters.size(); ++i) before.push_back(values(i));
  adam.Step(stack);
  for (size_t i : {0, 8, 14, 16, 30, 32}) EXPECT_NE(values(i), before[i]) << names[i];
  // The record went with the old weights; new weights drop the gradients.
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { stack.Backward({d, 1, 3, 20}); },
                                           {"expected the last forward to be a training one"}));
  w.SetOn(stack);
  EXPECT_TRUE(ThrowsWith<std::logic_error>(
      [&] { adam.Step(stack); }, {"expected a backward since the weights last changed"}));
}

}  // namespace
}  // namespace simd_attention::testing
