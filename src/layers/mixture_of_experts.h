// A sparse mixture of gated-FFN experts (MixtralSparseMoeBlock): the router
// x W_router scores every expert, a softmax over all of them in float32
// gives their probabilities, each row goes to its top k (ties: the lower
// index), weighted by those probabilities (divided by their sum when
// normalized). Each expert runs once, on the rows routed to it gathered
// into one GEMM's rows (an expert no row chose costs nothing), and each
// row sums its experts' weighted outputs in expert order, so the result
// does not depend on the threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "dispatch/dispatch.h"
#include "layers/gated_feed_forward.h"
#include "simd_attention/packed_matrix.h"
#include "simd_attention/thread_pool.h"
#include "simd_attention/trainable.h"
#include "simd_attention/training_only.h"
#include "simd_attention/transformer_block.h"

namespace simd_attention {

// What a training forward keeps for the backward (held by the block's
// record): the routing, and each expert's gathered rows and outputs.
struct MoeRecord {
  std::vector<float> input;          // [rows, d_model]: the router's input
  std::vector<float> probabilities;  // [rows, E]
  std::vector<uint32_t> chosen;      // [rows, k]: each row's experts, in index order
  std::vector<float> weights;        // [rows, k]: their weights
  std::vector<FfnRecord> experts;    // [E]: each expert's forward on its rows
  std::vector<float> outputs;        // [rows, k, d_model]: each chosen expert's output
};

class MixtureOfExperts {
 public:
  // The experts of `config` (d_model -> ffn_dim -> d_model, held as its
  // weights), messages naming its fields as config.names does.
  MixtureOfExperts(const BlockConfig& config, const KernelTable& kernels,
                   std::shared_ptr<ThreadPool> pool);
  MixtureOfExperts(MixtureOfExperts&&) noexcept;
  ~MixtureOfExperts();
  // Messages name router and experts[e].gated_ffn.<weight>. Not all or
  // nothing (the block sets a new one's).
  void SetWeights(const MoeWeights& w);
  void Forward(const float* x, size_t rows, float* out, MoeRecord* record = nullptr);
  // d_x [rows, d_model] and the gradients given d_out, from the record of a
  // training Forward of `rows` rows with the current weights; the routing
  // as the forward chose it.
  void Backward(const MoeRecord& record, const float* d_out, size_t rows, float* d_x,
                MoeGradients& g);
  // The router ("router"), then each expert's as GatedFeedForward names
  // them after "experts[e].".
  void TrainableParameters(std::vector<Parameter>& out, std::string_view prefix);
  void ParametersUpdated();
  size_t WeightBytes() const;

 private:
  // Each row's experts and their weights into `chosen` and `weights` [rows,
  // k], probabilities [rows, E] from the logits in place.
  void Route(float* logits, size_t rows, std::vector<uint32_t>& chosen,
             std::vector<float>& weights) const;

  // The slots (row * k + j) of `chosen` [slots] that name `expert` into
  // `members`, in order; their count.
  static size_t Members(const uint32_t* chosen, size_t slots, size_t expert, size_t* members);

  size_t d_model_, ffn_dim_, num_experts_, top_k_;
  bool normalize_;
  const ArgNames* names_;
  const KernelTable* kernels_;
  std::shared_ptr<ThreadPool> pool_;
  PackedMatrix router_;
  std::vector<GatedFeedForward> experts_;
  // Workspaces, grown: the logits, the routing, an expert's rows and outputs.
  std::vector<float> logits_, weights_, rows_in_, rows_out_;
  std::vector<uint32_t> chosen_;
  std::vector<size_t> members_;
  // Training (training_only.h): W_router^T, the router's gradient packed as
  // the router, workspaces.
  struct Training;
  TrainingOnly<Training> training_;
};

}  // namespace simd_attention
