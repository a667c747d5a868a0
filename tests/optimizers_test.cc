// SGD with momentum and Adam/AdamW: the fused kernels of every table against
// the update rules in double over a few steps; Optimizer::Step on a
// MultiHeadAttention (padded heads, bias) equal to SetWeights of the weights
// the rule gives from the gradients its Backward returned; training loops
// whose loss falls (an attention fitted to another's outputs, an encoder and
// a decoder layer); errors.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "dispatch/dispatch.h"
#include "gradient_util.h"
#include "random_mha.h"
#include "simd_attention/optimizers.h"
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
      EXPECT_TRUE(Near(w, w64, 4e-7 * (1 + MaxAbs(w64)))) << "sgd, step " << step;
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
      EXPECT_TRUE(Near(w, w64, 4e-7 * (1 + MaxAbs(w64)))) << "adam, step " << step;
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
    const MhaGradients g = mha.Backward(d_output);
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
  std::vector<float> d_output;
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    last = MseGradient(student.Forward(x.View(), options).output, target, d_output);
    if (step == 0) first = last;
    student.Backward(d_output);
    adam.Step(student);
  }
  RecordProperty("loss", std::to_string(first) + " -> " + std::to_string(last));
  EXPECT_LT(last, 0.05 * first) << "loss " << first << " -> " << last;
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
  std::vector<float> d_output;

  TransformerEncoderLayer encoder(config);
  encoder.SetWeights(self.View(), ffn, norm, norm);
  Sgd sgd({.lr = 0.05, .momentum = 0.9});
  EncoderOptions eo;
  eo.training = true;
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    last = MseGradient(encoder.Forward(x.View(), eo), target.data, d_output);
    if (step == 0) first = last;
    encoder.Backward(d_output);
    sgd.Step(encoder);
  }
  RecordProperty("encoder_loss", std::to_string(first) + " -> " + std::to_string(last));
  EXPECT_LT(last, 0.5 * first) << "encoder loss " << first << " -> " << last;

  config.norm_first = false;
  TransformerDecoderLayer decoder(config);
  decoder.SetWeights(self.View(), cross.View(), ffn, norm, norm, norm);
  Adam adamw({.lr = 0.01, .weight_decay = 0.01, .decoupled_weight_decay = true});
  DecoderOptions d_options;
  d_options.training = true;
  for (int step = 0; step < 60; ++step) {
    last = MseGradient(decoder.Forward(x.View(), memory.View(), d_options), target.data, d_output);
    if (step == 0) first = last;
    decoder.Backward(d_output);
    adamw.Step(decoder);
  }
  RecordProperty("decoder_loss", std::to_string(first) + " -> " + std::to_string(last));
  EXPECT_LT(last, 0.5 * first) << "decoder loss " << first << " -> " << last;
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
  mha.Backward(std::vector<float>(x.data.size(), 1.0f));
  adam.Step(mha);
  // A step releases the training state: Backward needs a new training forward.
  EXPECT_TRUE(ThrowsWith<std::logic_error>(
      [&] { mha.Backward(std::vector<float>(x.data.size(), 1.0f)); },
      {"expected the last forward to be a training one"}));
  // SetWeights drops the gradients.
  mha.SetWeights(w.View());
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { adam.Step(mha); }, {"expected a backward since the weights last changed"}));
}

}  // namespace
}  // namespace simd_attention::testing
