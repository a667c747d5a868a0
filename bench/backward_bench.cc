// The training path's costs on S2- and S4-shaped self-attention (and their
// causal twins), one thread, interleaved rounds, medians:
//  - the training forward (MhaOptions::training: copies of the inputs, each
//    query's log-sum-exp) against the inference forward (target: <= +10%);
//  - Backward(d_output, gradients) alone, into one MhaGradients reused as a
//    training loop would, and its ratio to the inference forward (it
//    does about twice the forward's FLOPs: 2.5x is the package's target).
// And an encoder layer (post-LN, ReLU; BERT-base-like widths at 128 tokens):
// its training forward against the inference forward, its Backward, and
// one Adam step over its packed weights.
//
//   build/native/bench/backward_bench [--rounds R] [--json FILE]
//
// --json writes the medians (ms) for `npm run bench`'s training rows.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/random_fill.h"
#include "bench/timing.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/optimizers.h"
#include "simd_attention/transformer_layers.h"

namespace simd_attention::bench {
namespace {

struct Shape {
  const char* name;
  size_t d_model, heads, tokens;
  bool causal;
};

// One row of --json's output, or nothing without --json.
struct JsonRows {
  FILE* file = nullptr;
  const char* separator = "";

  void Row(const char* name, double forward, double training, double backward) {
    if (!file) return;
    std::fprintf(file, "%s    {\"name\": \"%s\", \"forward_ms\": %.6f, \"training_forward_ms\": %.6f, "
                 "\"backward_ms\": %.6f}", separator, name, forward, training, backward);
    separator = ",\n";
  }
};

void Run(const Shape& s, size_t rounds, JsonRows& json) {
  const size_t dm = s.d_model;
  const std::vector<float> x = RandomVector(s.tokens * dm, 1.0f, 1);
  const std::vector<float> dy = RandomVector(s.tokens * dm, 1.0f, 2);
  const float bound = 1.0f / std::sqrt(float(dm));
  const std::vector<float> w = RandomVector(dm * dm, bound, 3), b = RandomVector(dm, bound, 4);
  const MhaConfig config{.d_model = dm, .num_heads = s.heads};
  MultiHeadAttention inference(config), training(config);
  for (MultiHeadAttention* m : {&inference, &training}) m->SetWeights({w, w, w, w, b, b, b, b});
  const Tensor3 input{x, 1, s.tokens, dm};
  const Tensor3 d_output{dy, 1, s.tokens, dm};
  MhaOptions plain, train;
  plain.causal = train.causal = s.causal;
  train.training = true;
  // One MhaGradients reused, as a training loop would; the first Backward
  // also packs W^T, once per SetWeights.
  MhaGradients gradients;
  training.Forward(input, train);
  training.Backward(d_output, gradients);

  std::vector<double> forward_ms, training_ms, backward_ms;
  for (size_t round = 0; round < rounds; ++round) {
    forward_ms.push_back(Ms([&] {
      if (inference.Forward(input, plain).output.empty()) std::abort();
    }));
    training_ms.push_back(Ms([&] {
      if (training.Forward(input, train).output.empty()) std::abort();
    }));
    backward_ms.push_back(Ms([&] {
      training.Backward(d_output, gradients);
      if (gradients.d_input.empty()) std::abort();
    }));
  }
  const double f = Median(forward_ms), t = Median(training_ms), g = Median(backward_ms);
  std::printf("  %-4s forward %7.3f ms  training forward %7.3f ms (%+5.1f%%; target <= +10%%)"
              "  backward %7.3f ms (%.2fx the forward)\n",
              s.name, f, t, 100.0 * (t / f - 1.0), g, g / f);
  json.Row(s.name, f, t, g);
}

void RunLayer(size_t rounds, JsonRows& json) {
  const size_t dm = 768, ffn = 3072, tokens = 128;
  const std::vector<float> x = RandomVector(tokens * dm, 1.0f, 1);
  const std::vector<float> dy = RandomVector(tokens * dm, 1.0f, 2);
  const float bound = 1.0f / std::sqrt(float(dm)), bound2 = 1.0f / std::sqrt(float(ffn));
  const std::vector<float> w = RandomVector(dm * dm, bound, 3), b = RandomVector(dm, bound, 4);
  const std::vector<float> w1 = RandomVector(dm * ffn, bound, 5), b1 = RandomVector(ffn, bound, 6);
  const std::vector<float> w2 = RandomVector(ffn * dm, bound2, 7), b2 = RandomVector(dm, bound2, 8);
  const std::vector<float> gamma(dm, 1.0f), beta(dm, 0.0f);
  const LayerConfig config{.d_model = dm, .num_heads = 12, .ffn_dim = ffn};
  TransformerEncoderLayer inference(config), training(config);
  for (TransformerEncoderLayer* l : {&inference, &training}) {
    l->SetWeights({w, w, w, w, b, b, b, b}, {w1, b1, w2, b2}, {gamma, beta}, {gamma, beta});
  }
  const Tensor3 input{x, 1, tokens, dm};
  const Tensor3 d_output{dy, 1, tokens, dm};
  EncoderOptions train;
  train.training = true;
  EncoderGradients gradients;
  // A tiny learning rate: the weights stay as they are for the timing.
  Adam adam({.lr = 1e-12});
  training.Forward(input, train);
  training.Backward(d_output, gradients);  // packs W^T once
  std::vector<double> forward_ms, training_ms, backward_ms, after_step_ms, step_ms;
  for (size_t round = 0; round < rounds; ++round) {
    forward_ms.push_back(Ms([&] {
      if (inference.Forward(input).empty()) std::abort();
    }));
    training_ms.push_back(Ms([&] {
      if (training.Forward(input, train).empty()) std::abort();
    }));
    backward_ms.push_back(Ms([&] { training.Backward(d_output, gradients); }));
  }
  // A training loop's Backward follows a step, which leaves W^T to re-pack.
  adam.Step(training);  // sizes the moments
  for (size_t round = 0; round < rounds; ++round) {
    training.Forward(input, train);
    after_step_ms.push_back(Ms([&] { training.Backward(d_output, gradients); }));
    step_ms.push_back(Ms([&] { adam.Step(training); }));
  }
  const double f = Median(forward_ms), t = Median(training_ms), g = Median(backward_ms);
  std::printf("  encoder layer (768, 12 heads, ffn 3072, 128 tokens): forward %7.3f ms  training "
              "forward %7.3f ms (%+5.1f%%)  backward %7.3f ms (%.2fx), after a step %7.3f ms  "
              "Adam step %6.3f ms\n",
              f, t, 100.0 * (t / f - 1.0), g, g / f, Median(after_step_ms), Median(step_ms));
  json.Row("encoder layer", f, t, g);
}

int Main(int argc, char** argv) {
  size_t rounds = 31;
  const char* json_path = nullptr;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 < argc && !std::strcmp(argv[i], "--rounds")) {
      rounds = std::strtoul(argv[i + 1], nullptr, 10);
    } else if (i + 1 < argc && !std::strcmp(argv[i], "--json")) {
      json_path = argv[i + 1];
    } else {
      std::fprintf(stderr, "usage: backward_bench [--rounds R] [--json FILE]\n");
      return 2;
    }
  }
  if (rounds == 0) rounds = 1;
  const char* kernels = DescribeKernels(BestKernels(Backend::kHighway)).name;
  std::printf("backward_bench: %s, 1 thread, %zu rounds (medians)\n", kernels, rounds);
  JsonRows json;
  if (json_path && !(json.file = std::fopen(json_path, "w"))) {
    std::fprintf(stderr, "backward_bench: cannot write %s\n", json_path);
    return 1;
  }
  if (json.file) std::fprintf(json.file, "{\"kernels\": \"%s\", \"rounds\": %zu, \"rows\": [\n", kernels, rounds);
  for (const Shape& s : {Shape{"S2", 768, 12, 128, false}, Shape{"S3", 768, 12, 128, true},
                         Shape{"S4", 384, 6, 512, false}, Shape{"S4c", 384, 6, 512, true}}) {
    Run(s, rounds, json);
  }
  RunLayer(rounds, json);
  if (json.file) {
    std::fprintf(json.file, "\n]}\n");
    std::fclose(json.file);
  }
  return 0;
}

}  // namespace
}  // namespace simd_attention::bench

int main(int argc, char** argv) { return simd_attention::bench::Main(argc, argv); }
