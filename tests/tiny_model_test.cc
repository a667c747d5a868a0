// TinyTransformer: the gradient of every parameter group against central
// differences of its loss on every kernel table; Weights/SetWeights round
// trips; its layers as attention and FFN composed by hand; determinism
// (same seed and steps, same bits, on 1, 2 or 3 threads); errors; and
// training with Adam: the copy-previous-token task to >= 99% and the
// induction task to >= 90% accuracy on fresh batches within a bounded
// number of steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gradient_util.h"
#include "simd_attention/errors.h"
#include "simd_attention/optimizers.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/tiny_model.h"
#include "test_util.h"

namespace simd_attention::testing {
namespace {

// ---------------------------------------------------------------------------
// Tasks, drawn from std::mt19937 by modulo (the standard distributions give
// other numbers under emscripten's libc++; the engine does not).

struct Batch {
  std::vector<int32_t> tokens, targets;  // [batch, tokens_per_row]
  size_t batch = 0, tokens_per_row = 0;
};

int32_t Draw(std::mt19937& rng, size_t n) { return int32_t(rng() % n); }

// Random tokens; target[t] = token[t - 1] from t = 1 (t = 0 is not scored).
Batch CopyPreviousTask(std::mt19937& rng, size_t batch, size_t tokens, size_t vocab) {
  Batch b{{}, {}, batch, tokens};
  for (size_t r = 0; r < batch; ++r) {
    for (size_t t = 0; t < tokens; ++t) {
      b.tokens.push_back(Draw(rng, vocab));
      b.targets.push_back(t == 0 ? -1 : b.tokens[b.tokens.size() - 2]);
    }
  }
  return b;
}

// The induction task: rows of 2 max_length tokens holding a sequence s of
// min_length .. max_length distinct tokens shown twice, at a random place
// among other distinct tokens. Each token of the second copy but its last is
// scored on predicting the next, which only its earlier occurrence tells:
// find where the current token was, and copy the token after it. The random
// length and place leave no fixed offset (with a fixed length L, one
// positional head looking L - 1 tokens back would solve it without
// induction, in one layer). vocab >= 2 max_length - min_length.
Batch InductionTask(std::mt19937& rng, size_t batch, size_t min_length, size_t max_length,
                    size_t vocab) {
  const size_t tokens = 2 * max_length;
  Batch b{{}, {}, batch, tokens};
  std::vector<int32_t> pool(vocab);
  for (size_t r = 0; r < batch; ++r) {
    for (size_t i = 0; i < vocab; ++i) pool[i] = int32_t(i);
    for (size_t i = 0; i + 1 < vocab; ++i) {
      std::swap(pool[i], pool[i + size_t(Draw(rng, vocab - i))]);
    }
    const size_t length = min_length + size_t(Draw(rng, max_length - min_length + 1));
    const size_t start = size_t(Draw(rng, tokens - 2 * length + 1));
    // pool[0, length) is s; the others fill the rest of the row.
    const int32_t* other = pool.data() + length;
    for (size_t t = 0; t < tokens; ++t) {
      const bool in_copy = t >= start && t < start + 2 * length;
      b.tokens.push_back(in_copy ? pool[(t - start) % length] : *other++);
      const bool scored = t >= start + length && t + 1 < start + 2 * length;
      b.targets.push_back(scored ? pool[(t + 1 - start) % length] : -1);
    }
  }
  return b;
}

// ---------------------------------------------------------------------------
// Every parameter group of a TinyModelWeights, named, in one order.

std::vector<std::pair<std::string, std::vector<float>*>> Groups(TinyModelWeights& w) {
  std::vector<std::pair<std::string, std::vector<float>*>> out{{"embedding", &w.embedding}};
  for (size_t l = 0; l < w.layers.size(); ++l) {
    TinyLayerWeights& lw = w.layers[l];
    const std::string at = "layers[" + std::to_string(l) + "].";
    for (auto [name, v] : {std::pair{"w_q", &lw.w_q}, {"w_k", &lw.w_k}, {"w_v", &lw.w_v},
                           {"w_o", &lw.w_o}, {"b_q", &lw.b_q}, {"b_k", &lw.b_k},
                           {"b_v", &lw.b_v}, {"b_o", &lw.b_o}, {"w1", &lw.w1}, {"b1", &lw.b1},
                           {"w2", &lw.w2}, {"b2", &lw.b2}}) {
      if (!v->empty()) out.emplace_back(at + name, v);
    }
  }
  out.emplace_back("unembedding", &w.unembedding);
  out.emplace_back("unembedding_bias", &w.unembedding_bias);
  return out;
}

// vocab 7, d_model 12 in 2 heads of 6 (padded to whole vectors on every
// SIMD table, so the unpacking drops padding), 2 layers.
TinyModelConfig SmallConfig(size_t ffn_dim) {
  return {.vocab = 7, .d_model = 12, .num_heads = 2, .num_layers = 2, .max_tokens = 6,
          .ffn_dim = ffn_dim, .activation = Activation::kGeluTanh, .seed = 5};
}

// ---------------------------------------------------------------------------
// Gradients: every parameter against central differences of the loss.

class TinyGradients : public TableTest {};

TEST_P(TinyGradients, MatchCentralDifferences) {
  for (size_t ffn_dim : {size_t(0), size_t(10)}) {
    SCOPED_TRACE("ffn_dim " + std::to_string(ffn_dim));
    const TinyModelConfig config = SmallConfig(ffn_dim);
    std::mt19937 rng(11);
    Batch b = CopyPreviousTask(rng, 2, 5, config.vocab);
    b.targets[3] = -1;  // a row position not scored, besides t = 0
    b.targets[7] = 6;
    TinyTransformer model(config, table());
    const TinyModelResult r =
        model.Forward(b.tokens, b.targets, b.batch, b.tokens_per_row, {.training = true});
    ASSERT_EQ(r.counted, 7u);
    model.Backward();
    TinyModelWeights gradients = model.Gradients();
    TinyModelWeights weights = model.Weights();
    TinyTransformer probe(config, table());
    auto loss = [&]() {
      probe.SetWeights(weights);
      return probe.Forward(b.tokens, b.targets, b.batch, b.tokens_per_row).loss;
    };
    ASSERT_EQ(loss(), r.loss);  // SetWeights(Weights()) computes the same bits
    // eps 1e-2 on weights of about 0.3. The loss is a double sum over
    // float32 logits, each a few u off: its rounding noise (about 1e-7 here)
    // becomes at most 1e-5 in a difference. The truncation error, eps^2 / 6
    // times a third derivative, reaches 3e-5 on the unembedding, whose
    // gradients (up to 0.8) the relative part covers. The absolute part,
    // 1e-4, is well under the smallest groups' gradients (W_Q, W_K: 4e-3 at
    // most), so a missing or misplaced term fails anywhere.
    constexpr float kEps = 1e-2f;
    auto named_gradients = Groups(gradients);
    auto named_weights = Groups(weights);
    ASSERT_EQ(named_weights.size(), named_gradients.size());
    ASSERT_EQ(named_weights.size(), 2 + config.num_layers * (ffn_dim > 0 ? 12 : 8) + 1);
    for (size_t group = 0; group < named_weights.size(); ++group) {
      const auto& [name, w] = named_weights[group];
      const std::vector<float>& g = *named_gradients[group].second;
      ASSERT_EQ(g.size(), w->size()) << name;
      double largest = 0;
      for (size_t i = 0; i < w->size(); ++i) {
        const float saved = (*w)[i];
        (*w)[i] = saved + kEps;
        const double plus = loss();
        (*w)[i] = saved - kEps;
        const double minus = loss();
        (*w)[i] = saved;
        const double difference = (plus - minus) / (2.0 * double(kEps));
        const double error = std::fabs(difference - double(g[i]));
        largest = std::max(largest, std::fabs(difference));
        ASSERT_LE(error, 1e-4 + 1e-2 * std::fabs(difference))
            << name << "[" << i << "]: backward " << g[i] << ", central difference "
            << difference;
      }
      // b_k shifts a query's scores all alike, which the softmax ignores: its
      // gradient is zero (to rounding), and checked as such above.
      if (name.ends_with("b_k")) continue;
      EXPECT_GT(largest, 1e-3) << name << ": a group whose gradient is zero checks nothing";
    }
  }
}

INSTANTIATE_ON_EVERY_TABLE(TinyGradients);

// ---------------------------------------------------------------------------
// Determinism: the same seed and steps give the same bits, on 1 or 2 threads.

void ExpectSameWeights(const TinyModelWeights& a, const TinyModelWeights& b) {
  TinyModelWeights x = a, y = b;
  auto gx = Groups(x), gy = Groups(y);
  ASSERT_EQ(gx.size(), gy.size());
  for (size_t i = 0; i < gx.size(); ++i) EXPECT_EQ(*gx[i].second, *gy[i].second) << gx[i].first;
}

// 20 Adam steps on the copy task.
TinyModelWeights Trained(TinyTransformer& model) {
  Adam adam({.lr = 3e-3});
  std::mt19937 rng(3);
  for (int step = 0; step < 20; ++step) {
    const Batch b = CopyPreviousTask(rng, 8, 12, model.config().vocab);
    model.Forward(b.tokens, b.targets, b.batch, b.tokens_per_row, {.training = true});
    model.Backward();
    adam.Step(model);
  }
  return model.Weights();
}

TEST(TinyModel, SameSeedSameStepsSameWeights) {
  TinyModelConfig config = SmallConfig(16);
  config.max_tokens = 12;
  TinyTransformer a(config), b(config);
  ExpectSameWeights(a.Weights(), b.Weights());
  const TinyModelWeights trained = Trained(a);
  ExpectSameWeights(Trained(b), trained);
#if SA_HAVE_THREADS  // a wasm build without threads runs one
  // Pools that split even the smallest loop, every thread running.
  for (size_t threads : {2, 3}) {
    TinyTransformer c(config, a.kernels(),
                      std::make_shared<ThreadPool>(threads, 0.0, 0.0,
                                                   ThreadPool::Start::kNow, threads));
    EXPECT_EQ(c.config().threads, threads);
    SCOPED_TRACE(std::to_string(threads) + " threads");
    ExpectSameWeights(Trained(c), trained);
  }
#endif
  // Another seed, other weights; Reset to the first, the first's.
  config.seed = 6;
  TinyTransformer c(config);
  EXPECT_NE(c.Weights().embedding, b.Weights().embedding);
  c.Reset(SmallConfig(16).seed);
  ExpectSameWeights(c.Weights(), TinyTransformer(SmallConfig(16)).Weights());
}

TEST(TinyModel, InitializationFollowsTorchDefaults) {
  TinyModelConfig config = SmallConfig(10);
  config.vocab = 64;
  config.d_model = 64;
  config.num_heads = 4;
  const TinyModelWeights w = TinyTransformer(config).Weights();
  // Linear: uniform in +-1/sqrt(fan_in), filling most of it.
  auto expect_uniform = [](const std::vector<float>& v, double fan_in, const char* name) {
    const double bound = 1 / std::sqrt(fan_in);
    EXPECT_LE(MaxAbs(v), bound) << name;
    EXPECT_GT(MaxAbs(v), 0.9 * bound) << name;
  };
  expect_uniform(w.layers[0].w_q, 64, "w_q");
  expect_uniform(w.layers[1].b_o, 64, "b_o");
  expect_uniform(w.layers[0].w2, 10, "w2");
  expect_uniform(w.unembedding, 64, "unembedding");
  // The embedding: N(0, 1), as nn.Embedding's, within sampling error over
  // 4096 draws.
  double sum = 0, squares = 0;
  for (float x : w.embedding) {
    sum += x;
    squares += double(x) * x;
  }
  const double n = double(w.embedding.size());
  EXPECT_NEAR(sum / n, 0.0, 0.05);
  EXPECT_NEAR(std::sqrt(squares / n), 1.0, 0.05);
}

// ---------------------------------------------------------------------------
// Results that need no training.

TEST(TinyModel, ForwardShapesLossAndAccuracy) {
  const TinyModelConfig config = SmallConfig(0);
  TinyTransformer model(config);
  std::mt19937 rng(8);
  const Batch b = CopyPreviousTask(rng, 3, 6, config.vocab);
  const TinyModelResult r =
      model.Forward(b.tokens, b.targets, b.batch, b.tokens_per_row, {.need_weights = true});
  ASSERT_EQ(r.logits.size(), 3u * 6 * config.vocab);
  ASSERT_EQ(r.attn_weights.size(), config.num_layers);
  ASSERT_EQ(r.attn_weights[0].size(), 3u * config.num_heads * 6 * 6);
  EXPECT_EQ(r.counted, 15u);
  // The loss and accuracy from the logits, in double.
  double loss = 0;
  size_t correct = 0;
  for (size_t row = 0; row < b.tokens.size(); ++row) {
    if (b.targets[row] < 0) continue;
    const float* z = r.logits.data() + row * config.vocab;
    double sum = 0;
    for (size_t i = 0; i < config.vocab; ++i) sum += std::exp(double(z[i]));
    loss += std::log(sum) - z[b.targets[row]];
    correct += std::max_element(z, z + config.vocab) - z == b.targets[row] ? 1 : 0;
  }
  EXPECT_NEAR(r.loss, loss / 15, 1e-6);
  EXPECT_DOUBLE_EQ(r.accuracy, double(correct) / 15);
  // Causal: query 0 sees key 0 alone.
  EXPECT_FLOAT_EQ(r.attn_weights[1][0], 1.0f);
  // A row's logits do not depend on the tokens after it.
  Batch changed = b;
  changed.tokens[5] = (changed.tokens[5] + 1) % int32_t(config.vocab);
  const TinyModelResult r2 = model.Forward(changed.tokens, changed.targets, b.batch, 6);
  EXPECT_TRUE(std::equal(r.logits.begin(), r.logits.begin() + 5 * config.vocab,
                         r2.logits.begin()));
}

// Each layer is x += MHA(x) (causal, with biases), then x += FFN(x), with
// no norm: the model's logits and attention weights as a MultiHeadAttention
// and a FeedForward composed by hand give them from its weights.
TEST(TinyModel, LayersAddAttentionAndFeedForwardWithoutNorms) {
  const TinyModelConfig config = SmallConfig(10);
  TinyTransformer model(config);
  const TinyModelWeights w = model.Weights();
  const size_t d = config.d_model, v = config.vocab, rows = 2 * 5;
  std::mt19937 rng(4);
  const Batch b = CopyPreviousTask(rng, 2, 5, v);
  const TinyModelResult r =
      model.Forward(b.tokens, b.targets, b.batch, b.tokens_per_row, {.need_weights = true});

  const std::vector<float> positions = PositionalEncoding(5, d);
  std::vector<float> x(rows * d);
  for (size_t row = 0; row < rows; ++row) {
    for (size_t i = 0; i < d; ++i) {
      x[row * d + i] = w.embedding[size_t(b.tokens[row]) * d + i] + positions[row % 5 * d + i];
    }
  }
  MhaConfig m;
  m.d_model = d;
  m.num_heads = config.num_heads;
  std::vector<float> ffn_out(rows * d);
  for (size_t l = 0; l < config.num_layers; ++l) {
    const TinyLayerWeights& lw = w.layers[l];
    MultiHeadAttention attention(m, model.kernels(), SharedThreadPool(1));
    attention.SetWeights(lw.Attention());
    MhaOptions o;
    o.causal = true;
    o.need_weights = true;
    const MhaResult out = attention.Forward({x, 2, 5, d}, o);
    EXPECT_EQ(out.attn_weights, r.attn_weights[l]) << "layer " << l;
    for (size_t i = 0; i < x.size(); ++i) x[i] += out.output[i];
    FeedForward ffn(d, config.ffn_dim, config.activation, model.kernels());
    ffn.SetWeights(lw.Ffn());
    ffn.Forward(x.data(), rows, ffn_out.data());
    for (size_t i = 0; i < x.size(); ++i) x[i] += ffn_out[i];
  }
  for (size_t row = 0; row < rows; ++row) {
    for (size_t j = 0; j < v; ++j) {
      double z = w.unembedding_bias[j];
      for (size_t i = 0; i < d; ++i) z += double(x[row * d + i]) * w.unembedding[i * v + j];
      EXPECT_NEAR(r.logits[row * v + j], z, 1e-5 * std::max(1.0, std::fabs(z)))
          << "row " << row << ", logit " << j;
    }
  }
}

TEST(TinyModel, NothingScored) {
  TinyTransformer model(SmallConfig(10));
  const std::vector<int32_t> tokens{1, 2, 3, 4}, targets(4, -1);
  const TinyModelResult r = model.Forward(tokens, targets, 2, 2, {.training = true});
  EXPECT_EQ(r.loss, 0.0);
  EXPECT_EQ(r.accuracy, 0.0);
  EXPECT_EQ(r.counted, 0u);
  model.Backward();
  TinyModelWeights g = model.Gradients();
  for (const auto& [name, v] : Groups(g)) {
    EXPECT_EQ(MaxAbs(*v), 0.0) << name;
  }
}

// ---------------------------------------------------------------------------
// Errors: named, and the model stays usable.

TEST(TinyModelErrors, Config) {
  auto refused = [](TinyModelConfig c, std::initializer_list<std::string_view> fragments) {
    return ThrowsWith<std::invalid_argument>([&] { TinyTransformer model(c); }, fragments);
  };
  const TinyModelConfig ok = SmallConfig(0);
  for (auto [field, name] :
       {std::pair{&TinyModelConfig::vocab, "config.vocab"}, {&TinyModelConfig::d_model, "config.d_model"},
        {&TinyModelConfig::num_heads, "config.num_heads"},
        {&TinyModelConfig::num_layers, "config.num_layers"},
        {&TinyModelConfig::max_tokens, "config.max_tokens"}}) {
    TinyModelConfig c = ok;
    c.*field = 0;
    EXPECT_TRUE(refused(c, {name, "> 0", "got 0"}));
  }
  TinyModelConfig c = ok;
  c.num_heads = 5;
  EXPECT_TRUE(refused(c, {"config.d_model", "divisible by num_heads (5)", "got 12"}));
  c = ok;
  c.vocab = SIZE_MAX / 4;
  EXPECT_TRUE(ThrowsWith<SizeLimitError>([&] { TinyTransformer model(c); }, {"embedding"}));
}

TEST(TinyModelErrors, ForwardBackwardAndWeights) {
  const TinyModelConfig config = SmallConfig(10);
  TinyTransformer model(config);
  std::mt19937 rng(4);
  const Batch b = CopyPreviousTask(rng, 2, 4, config.vocab);
  const TinyModelResult before = model.Forward(b.tokens, b.targets, 2, 4);
  auto forward_refused = [&](std::vector<int32_t> tokens, std::vector<int32_t> targets,
                             size_t batch, size_t t,
                             std::initializer_list<std::string_view> fragments) {
    return ThrowsWith<std::invalid_argument>(
        [&] { model.Forward(tokens, targets, batch, t, {.training = true}); }, fragments);
  };
  EXPECT_TRUE(forward_refused(b.tokens, b.targets, 0, 4, {"batch", "> 0", "got 0"}));
  EXPECT_TRUE(forward_refused(b.tokens, b.targets, 1, 0, {"tokens_per_row", "got 0"}));
  EXPECT_TRUE(forward_refused(std::vector<int32_t>(14), std::vector<int32_t>(14), 2, 7,
                              {"tokens_per_row", "1 .. 6 (config.max_tokens)", "got 7"}));
  EXPECT_TRUE(forward_refused(b.tokens, b.targets, 2, 3, {"tokens", "expected 6", "got 8"}));
  EXPECT_TRUE(forward_refused(b.tokens, {1, 2}, 2, 4, {"targets", "expected 8", "got 2"}));
  std::vector<int32_t> bad = b.tokens;
  bad[5] = 7;
  EXPECT_TRUE(forward_refused(bad, b.targets, 2, 4,
                              {"tokens: element 5 is 7", "[0, 7)", "config.vocab"}));
  bad[5] = -1;
  EXPECT_TRUE(forward_refused(bad, b.targets, 2, 4, {"tokens: element 5 is -1"}));
  bad = b.targets;
  bad[2] = -2;
  EXPECT_TRUE(forward_refused(b.tokens, bad, 2, 4,
                              {"targets: element 2 is -2", "-1 (not scored) or", "[0, 7)"}));
  bad[2] = 7;
  EXPECT_TRUE(forward_refused(b.tokens, bad, 2, 4, {"targets: element 2 is 7"}));
  EXPECT_EQ(model.Forward(b.tokens, b.targets, 2, 4).logits, before.logits);

  // Backward and an optimizer step need what comes before them.
  Adam adam({.lr = 1e-3});
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { model.Backward(); },
                                           {"expected the last forward to be a training one"}));
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { model.Gradients(); }, {"expected a backward"}));
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { adam.Step(model); },
                                           {"expected a backward"}));
  model.Forward(b.tokens, b.targets, 2, 4, {.training = true});
  model.Forward(b.tokens, b.targets, 2, 4);  // not training: the state is gone
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { model.Backward(); },
                                           {"expected the last forward to be a training one"}));
  model.Forward(b.tokens, b.targets, 2, 4, {.training = true});
  model.Backward();
  model.Backward();  // the state stays for another call
  adam.Step(model);
  EXPECT_TRUE(ThrowsWith<std::logic_error>([&] { model.Backward(); },
                                           {"expected the last forward to be a training one"}));
  EXPECT_NE(model.Forward(b.tokens, b.targets, 2, 4).logits, before.logits);

  // SetWeights: named, and nothing changes when refused.
  const TinyModelWeights w = model.Weights();
  TinyModelWeights wrong = w;
  wrong.layers.pop_back();
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>(
      [&] { model.SetWeights(wrong); }, {"weights.layers", "expected 2", "config.num_layers", "got 1"}));
  wrong = w;
  wrong.layers[1].w_q.pop_back();
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { model.SetWeights(wrong); },
                                                {"weights.layers[1].w_q", "[12, 12]", "got 143"}));
  wrong = w;
  wrong.unembedding_bias[3] = NAN;
  wrong.embedding[0] = 1;  // not applied either
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { model.SetWeights(wrong); },
                                                {"weights.unembedding_bias", "element 3", "NaN"}));
  wrong = w;
  wrong.layers[0].w1.clear();
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { model.SetWeights(wrong); },
                                                {"weights.layers[0].w1", "got 0"}));
  ExpectSameWeights(model.Weights(), w);
  TinyTransformer attention_only(SmallConfig(0));
  wrong = attention_only.Weights();
  wrong.layers[0].b2 = {1.0f};
  EXPECT_TRUE(ThrowsWith<std::invalid_argument>([&] { attention_only.SetWeights(wrong); },
                                                {"weights.layers[0].b2", "got 1"}));
}

// ---------------------------------------------------------------------------
// Training with Adam at a fixed seed: steps until the accuracy on a fresh
// batch reaches the goal, each counted when it does.

// Sequences of 4 to 12 tokens, rows of 24.
constexpr size_t kInductionMinLength = 4, kInductionMaxLength = 12;
// About twice the steps measured at these seeds on every native table (200
// and 280; other seeds took 180-240 and 270-310).
constexpr size_t kCopyStepBound = 400;
constexpr size_t kInductionStepBound = 600;

// Trains a model of `config` with Adam (lr 3e-3) on batches from
// `task(rng)` until four fresh batches (so that one lucky batch does not end
// the run), checked every 10 steps, reach `goal`: expected within `bound`
// steps. Prints the steps, seconds and accuracy.
void ExpectTrains(const char* name, const TinyModelConfig& config, double goal, size_t bound,
                  const std::function<Batch(std::mt19937&)>& task) {
  TinyTransformer model(config);
  Adam adam({.lr = 3e-3});
  std::mt19937 rng(2);
  size_t steps = 0;
  double accuracy = 0;
  const auto start = std::chrono::steady_clock::now();
  while (steps < bound && accuracy < goal) {
    const Batch b = task(rng);
    model.Forward(b.tokens, b.targets, b.batch, b.tokens_per_row, {.training = true});
    model.Backward();
    adam.Step(model);
    if (++steps % 10 != 0) continue;
    size_t counted = 0;
    double correct = 0;
    for (int i = 0; i < 4; ++i) {
      const Batch test = task(rng);
      const TinyModelResult r =
          model.Forward(test.tokens, test.targets, test.batch, test.tokens_per_row);
      counted += r.counted;
      correct += r.accuracy * double(r.counted);
    }
    accuracy = correct / double(counted);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string text = std::to_string(steps) + " steps, " + std::to_string(seconds) +
                           " s, accuracy " + std::to_string(accuracy);
  ::testing::Test::RecordProperty(name, text);
  std::printf("%s: %s\n", name, text.c_str());
  EXPECT_GE(accuracy, goal) << name << ": " << text;
}

TEST(TinyModelTraining, CopiesThePreviousToken) {
  const TinyModelConfig config{.vocab = 16, .d_model = 32, .num_heads = 2, .num_layers = 1,
                               .max_tokens = 16, .seed = 1};
  ExpectTrains("copy", config, 0.99, kCopyStepBound, [&](std::mt19937& rng) {
    return CopyPreviousTask(rng, 16, 16, config.vocab);
  });
}

TEST(TinyModelTraining, LearnsInduction) {
  const TinyModelConfig config{.vocab = 32, .d_model = 64, .num_heads = 2, .num_layers = 2,
                               .max_tokens = 24, .seed = 1};
  ExpectTrains("induction", config, 0.9, kInductionStepBound, [&](std::mt19937& rng) {
    return InductionTask(rng, 16, kInductionMinLength, kInductionMaxLength, config.vocab);
  });
}

}  // namespace
}  // namespace simd_attention::testing
