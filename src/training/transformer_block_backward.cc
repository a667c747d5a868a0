// TransformerBlock's backward: the sublayer list walked in reverse, each
// sublayer from its record of the training forward (transformer_block_parts.h).
// With d = dL/d(the sublayer's output), N its norm, f its mixer, N2 the
// norm after it:
//   pre,      y = h + f(N(h)):        dh = d + N'(f'(d))
//   sandwich, y = h + N2(f(N(h))):    dh = d + N'(f'(N2'(d)))
//   post,     y = N(h + f(h)):        ds = N'(d), dh = ds + f'(ds)
//   none,     y = h + f(h):           dh = d + f'(d)
// Sublayers side by side (parallel) read one h and add to it: each one's
// term is added to one dh. Element-wise sums through the kernel table,
// each split so that the result does not depend on the threads.
#include <stdexcept>
#include <string>

#include "checks/validate.h"
#include "dispatch/dispatch.h"
#include "layers/transformer_block_parts.h"
#include "threading/parallel.h"
#include "training/gradients.h"

namespace simd_attention {
namespace {

// out += x, split across the pool (element-wise: any split is exact).
void AddTo(ThreadPool& pool, const KernelTable& k, std::vector<float>& out,
           const std::vector<float>& x) {
  ParallelElementwise(pool, out.size(), 0.1, [&](size_t begin, size_t end) {
    k.add(out.data() + begin, x.data() + begin, end - begin, out.data() + begin);
  });
}

}  // namespace

TransformerBlock::Record& TransformerBlock::StartRecord(size_t batch, size_t tokens) {
  if (config_.weights != WeightType::kF32) {
    // An optimizer updates the float32 panels in place; narrow ones would
    // round every step away.
    throw std::invalid_argument(Cat({"options.training: training expects ",
                                     ConfigName(config_.names->weights), " float32, got ",
                                     StorageTypeName(config_.weights)}));
  }
  if (record_ == nullptr) record_ = MakeTrainingOnly<Record>();
  Record& r = *record_;
  r.ready = false;
  r.batch = batch;
  r.tokens = tokens;
  r.sublayers.resize(parts_.size());
  return r;
}

BlockGradients TransformerBlock::Backward(const Tensor3& d_output) {
  BlockGradients g;
  Backward(d_output, g);
  return g;
}

void TransformerBlock::MixerBackward(size_t k, const std::vector<float>& d,
                                     std::vector<float>& dx, BlockGradients& g) {
  Part& p = parts_[k];
  SublayerGradients& s = g.sublayers[k];
  const Record& r = *record_;
  const size_t rows = r.batch * r.tokens;
  if (p.attention != nullptr) {
    MhaGradients& a = s.attention;
    p.attention->Backward({d, r.batch, r.tokens, config_.d_model}, a);
    if (p.sublayer.mixer == MixerKind::kSelfAttention) {
      dx.assign(a.d_input.begin(), a.d_input.end());
      return;
    }
    dx.assign(a.d_query.begin(), a.d_query.end());
    if (g.d_memory.empty()) {
      g.d_memory.assign(a.d_key.begin(), a.d_key.end());
    } else {
      AddTo(*pool_, *kernels_, g.d_memory, a.d_key);
    }
    AddTo(*pool_, *kernels_, g.d_memory, a.d_value);
  } else if (p.ffn != nullptr) {
    p.ffn->Backward(r.sublayers[k].ffn, d.data(), rows, dx.data(), s.ffn);
  } else if (p.gated_ffn != nullptr) {
    p.gated_ffn->Backward(r.sublayers[k].ffn, d.data(), rows, dx.data(), s.gated_ffn);
  } else {
    p.moe->Backward(r.sublayers[k].moe, d.data(), rows, dx.data(), s.moe);
  }
}

void TransformerBlock::Backward(const Tensor3& d_output, BlockGradients& g) {
  if (record_ == nullptr || !record_->ready) ThrowNoTrainingForward();
  Record& r = *record_;
  CheckOutputGradient(config_.names->d_output, d_output, r.batch, r.tokens, config_.d_model);
  r.has_gradients = false;  // until this one is complete
  const size_t rows = r.batch * r.tokens, n = rows * config_.d_model;
  g.sublayers.resize(parts_.size());
  g.d_memory.clear();
  // d: dL/d(the output of the sublayers after the current group).
  std::vector<float>& d = g.d_input;
  d.assign(d_output.data.begin(), d_output.data.end());
  std::vector<float> a(n), b(n), sum;
  for (size_t end = parts_.size(); end > 0;) {
    size_t begin = end - 1;
    while (begin > 0 && parts_[begin].sublayer.parallel) --begin;
    if (Traits(parts_[begin].sublayer.norm).sum_norm) {  // post: alone in its group
      Part& p = parts_[begin];
      p.norm.Backward(r.sublayers[begin].norm_input.data(), rows, d.data(), a.data(),
                      g.sublayers[begin].norm);
      MixerBackward(begin, a, b, g);
      AddTo(*pool_, *kernels_, a, b);
      d.swap(a);
    } else {
      // Each sublayer of the group adds its term to dh = d; with one
      // sublayer, d itself once the term is computed.
      const bool parallel = end - begin > 1;
      if (parallel) sum = d;
      for (size_t k = begin; k < end; ++k) {
        Part& p = parts_[k];
        const SublayerRecord& s = r.sublayers[k];
        const std::vector<float>* dy = &d;
        if (p.output_norm != nullptr) {
          p.output_norm->Backward(s.output_norm_input.data(), rows, d.data(), b.data(),
                                  g.sublayers[k].output_norm);
          dy = &b;
        }
        MixerBackward(k, *dy, a, g);
        if (Traits(p.sublayer.norm).input_norm) {
          p.norm.Backward(s.norm_input.data(), rows, a.data(), b.data(), g.sublayers[k].norm);
          a.swap(b);
        }
        AddTo(*pool_, *kernels_, parallel ? sum : d, a);
      }
      if (parallel) d.swap(sum);
    }
    end = begin;
  }
  CheckComputed("the gradients", g.d_input, kGradientTooLarge);
  CheckComputed("the gradients", g.d_memory, kGradientTooLarge);
  r.has_gradients = true;
}

void TransformerBlock::TrainableParameters(std::vector<Parameter>& out,
                                           std::string_view prefix) {
  if (record_ == nullptr || !record_->has_gradients) ThrowNoGradients();
  for (Part& p : parts_) {
    const PartNames& n = p.names;
    const std::string mixer = Cat({prefix, n.mixer});
    if (p.attention != nullptr) p.attention->TrainableParameters(out, mixer);
    if (p.ffn != nullptr) p.ffn->TrainableParameters(out, mixer + n.ffn);
    if (p.gated_ffn != nullptr) p.gated_ffn->TrainableParameters(out, mixer + "gated_ffn.");
    if (p.moe != nullptr) p.moe->TrainableParameters(out, mixer);
    if (HasNorm(p.sublayer.norm)) p.norm.TrainableParameters(out, Cat({prefix, n.norm, "."}));
    if (p.output_norm != nullptr) {
      p.output_norm->TrainableParameters(out, Cat({prefix, n.output_norm, "."}));
    }
  }
}

void TransformerBlock::ParametersUpdated() {
  for (Part& p : parts_) {
    if (HasNorm(p.sublayer.norm)) p.norm.ParametersUpdated();
    if (p.output_norm != nullptr) p.output_norm->ParametersUpdated();
    if (p.attention != nullptr) p.attention->ParametersUpdated();
    if (p.ffn != nullptr) p.ffn->WeightsUpdated();
    if (p.gated_ffn != nullptr) p.gated_ffn->ParametersUpdated();
    if (p.moe != nullptr) p.moe->ParametersUpdated();
  }
  if (record_ != nullptr) record_->ready = false;
}

}  // namespace simd_attention
