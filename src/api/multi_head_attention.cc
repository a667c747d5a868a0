#include "simd_attention/multi_head_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "api/attention_call.h"
#include "checks/checked_size.h"
#include "dispatch/dispatch.h"
#include "kernels/attention.h"
#include "kernels/rope.h"
#include "kernels/weight_packing.h"
#include "storage/packed_weights.h"
#include "layers/norms.h"
#include "layers/partial_outputs.h"
#include "simd_attention/thread_pool.h"
#include "threading/parallel.h"
#include "threading/runs_on.h"
#include "training/training_hooks.h"
#include "training/training_module.h"
#include "checks/validate.h"
#include "storage/zero_filled.h"

namespace simd_attention {
namespace {

// QK-norm's kinds: those without a shift.
constexpr bool WithoutBeta(const NormKindTraits& row) { return !row.has_beta; }
constexpr ChoiceList kQkNormChoices =
    ChoicesOf(kNormKinds, &NormKindTraits::name, true, &WithoutBeta);

size_t RoundUp(size_t x, size_t multiple) {
  return (x + multiple - 1) / multiple * multiple;
}

MhaConfig Resolve(MhaConfig c) {
  const ArgNames& n = ResolveNames(c);
  CheckPositive(ConfigName(n.d_model), c.d_model);
  CheckPositive(ConfigName(n.num_heads), c.num_heads);
  if (c.head_dim == 0 && c.d_model % c.num_heads != 0) {
    ThrowInvalidArgument({"config.", n.d_model, ": must be divisible by ", n.num_heads, " (",
                          std::to_string(c.num_heads), "), got ", std::to_string(c.d_model)});
  }
  if (!Traits(c.cache_type).in_caches) {
    ThrowInvalidArgument({ConfigName(n.cache_type), ": expected ", kCacheTypeChoices.view(),
                          ", got ", StorageTypeName(c.cache_type)});
  }
  if constexpr (kTrainingModule) {
    // The training module holds what its optimizers update, float32 weights.
    const auto refuse = [](const char* name, WeightType type, const char* what) {
      if (type != WeightType::kF32) {
        RefuseInTrainingModule(ConfigName(name), "float32", StorageTypeName(type), what);
      }
    };
    refuse(n.weights, c.weights, "float16, bfloat16 and int8 weights");
    refuse(n.cache_type, c.cache_type, "float16, bfloat16 and int8 KV caches");
  }
  if (c.kdim == 0) c.kdim = c.d_model;
  if (c.vdim == 0) c.vdim = c.d_model;
  if (c.head_dim == 0) c.head_dim = c.d_model / c.num_heads;
  if (c.head_dim_v == 0) c.head_dim_v = c.head_dim;
  if (c.num_kv_heads == 0) c.num_kv_heads = c.num_heads;
  if (c.num_heads % c.num_kv_heads != 0) {
    ThrowInvalidArgument({"config.", n.num_kv_heads, ": must divide ", n.num_heads, " (",
                          std::to_string(c.num_heads), "), got ", std::to_string(c.num_kv_heads)});
  }
  if (c.rope.style != RopeStyle::kNone) {
    if (c.rope.rotary_dim == 0) c.rope.rotary_dim = c.head_dim;
    if (c.rope.rotary_dim % 2 != 0 || c.rope.rotary_dim > c.head_dim) {
      ThrowInvalidArgument({"config.", n.rope_rotary_dim, ": expected an even number <= ",
                            n.head_dim, " (", std::to_string(c.head_dim), "), got ",
                            std::to_string(c.rope.rotary_dim)});
    }
    if (!(c.rope.base > 0) || !(c.rope.base < 1e300)) {
      ThrowInvalidArgument({"config.", n.rope_base, ": expected a finite number > 0, got ",
                            NumberString(c.rope.base)});
    }
  }
  if (c.qk_norm.enabled) {
    if (Traits(c.qk_norm.kind).has_beta) {
      ThrowInvalidArgument({ConfigName(n.qk_norm_kind), ": expected ", kQkNormChoices.view(),
                            ", got '", Traits(c.qk_norm.kind).name, "'"});
    }
    CheckEps(ConfigName(n.qk_norm_eps), c.qk_norm.eps);
  }
  if (c.threads == 0) c.threads = ThreadPool::DefaultThreads();
  // The weight matrices must be allocatable before anything pads them.
  for (const char* d : {n.head_dim, n.head_dim_v}) {
    const size_t width = d == n.head_dim ? c.head_dim : c.head_dim_v;
    if (ProductOf({c.num_heads, width}).overflow) {
      throw SizeLimitError(Cat({"config.", d, ": ", n.num_heads, " * ", d, " = ",
                                std::to_string(c.num_heads), " * ", std::to_string(width),
                                " overflows a 64-bit size"}));
    }
  }
  const size_t hk = c.num_heads * c.head_dim, hv = c.num_heads * c.head_dim_v;
  const std::string heads_k = Cat({"(", n.num_heads, " * ", n.head_dim, ")"});
  const std::string heads_v = Cat({"(", n.num_heads, " * ", n.head_dim_v, ")"});
  const std::string kv_k = Cat({"(", n.num_kv_heads, " * ", n.head_dim, ")"});
  const std::string kv_v = Cat({"(", n.num_kv_heads, " * ", n.head_dim_v, ")"});
  CheckedCount(n.w_q, {{n.d_model, c.d_model}, {heads_k.c_str(), hk}});
  CheckedCount(n.w_k, {{n.kdim, c.kdim}, {kv_k.c_str(), c.num_kv_heads * c.head_dim}});
  CheckedCount(n.w_v, {{n.vdim, c.vdim}, {kv_v.c_str(), c.num_kv_heads * c.head_dim_v}});
  CheckedCount(n.w_o, {{heads_v.c_str(), hv}, {n.d_model, c.d_model}});
  return c;
}

// w [rows, heads * d] -> [rows, heads * d_pad], each head's columns followed
// by zero columns, so every head starts on a whole vector.
std::vector<float> PadHeadColumns(const char* what, std::span<const float> w,
                                  size_t rows, size_t heads, size_t d, size_t d_pad) {
  std::vector<float> out(
      CheckedCount(what, {{"rows", rows}, {"heads", heads}, {"padded head width", d_pad}}),
      0.0f);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t h = 0; h < heads; ++h) {
      std::copy_n(w.data() + (r * heads + h) * d, d,
                  out.data() + (r * heads + h) * d_pad);
    }
  }
  return out;
}

// Rows of H heads where strides `s` put them -> [B, H, T, d].
std::vector<float> HeadMajor(const char* what, const float* src, size_t batch,
                             size_t tokens, size_t heads, size_t d, const KVStrides& s) {
  std::vector<float> out(CheckedCount(
      what, {{"batch", batch}, {"heads", heads}, {"tokens", tokens}, {"head width", d}}));
  for (size_t b = 0; b < batch; ++b) {
    for (size_t h = 0; h < heads; ++h) {
      for (size_t t = 0; t < tokens; ++t) {
        std::copy_n(src + b * s.batch + h * s.head + t * s.row, d,
                    out.data() + ((b * heads + h) * tokens + t) * d);
      }
    }
  }
  return out;
}

// A projection's scan judged (overflow, then the range of the type it is
// stored as), named "the <which> projection <source> W_<w> + b_<w>"; its
// largest magnitude. One copy for keys and values.
double JudgeProjection(const ComputedScan& scan, std::span<const float> values,
                       const char* which, const char* source, const char* w, WeightType store,
                       const std::string& cache_type) {
  const std::string what = Cat({"the ", which, " projection ", source, " W_", w, " + b_", w});
  const double max_abs = scan.Judge(what, values, kTooLarge);
  CheckStorableMax(what, max_abs, store, cache_type);
  return max_abs;
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(const MhaConfig& config)
    : MultiHeadAttention(config, BestKernels(config.backend)) {}

MultiHeadAttention::MultiHeadAttention(const MhaConfig& config, const KernelTable& kernels,
                                       std::shared_ptr<ThreadPool> pool)
    : config_(Resolve(config)), kernels_(&kernels), pool_(std::move(pool)) {
  pool_ = RunsOn(config_, kernels, std::move(pool_));
  layout_.heads = config_.num_kv_heads;
  layout_.dk = head_dim();
  layout_.dk_pad = RoundUp(layout_.dk, kernels.lanes);
  layout_.dv = config_.head_dim_v;
  layout_.dv_pad = RoundUp(layout_.dv, kernels.lanes);
}

PackedMatrix MultiHeadAttention::PackProjection(const char* name, std::span<const float> w,
                                                const StoredMatrix& stored,
                                                std::span<const float> b, size_t rows,
                                                size_t heads, size_t head_in,
                                                size_t head_out) const {
  const WeightValues read = ReadWeight(name, w, stored, config_.weights, rows, heads * head_in,
                                       ConfigName(config_.names->weights));
  const auto pad = [&](const char* what, std::span<const float> x, size_t x_rows) {
    return x.empty() ? std::vector<float>{}
                     : PadHeadColumns(what, x, x_rows, heads, head_in, head_out);
  };
  // Given scales: int8's one row, q4's a row per block of rows.
  const size_t scale_rows = read.scales.size() / (heads * head_in);
  return PackWeights(*kernels_, pad("padded weights", read.values, rows),
                     pad("padded scales", read.scales, scale_rows), pad("padded bias", b, 1),
                     rows, heads * head_out, config_.weights);
}

void MultiHeadAttention::SetWeights(const MhaWeights& w) {
  const MhaConfig& c = config_;
  const ArgNames& n = *c.names;
  const size_t hk = c.num_heads * head_dim();
  const size_t hv = c.num_heads * c.head_dim_v;
  const size_t kv_k = c.num_kv_heads * head_dim(), kv_v = c.num_kv_heads * c.head_dim_v;
  const struct {
    const char* name;
    std::span<const float> values;
    size_t length;
  } biases[] = {{n.b_q, w.b_q, hk},
                {n.b_k, w.b_k, kv_k},
                {n.b_v, w.b_v, kv_v},
                {n.b_o, w.b_o, c.d_model}};
  for (const auto& b : biases) {
    if (c.bias) {
      CheckLength(b.name, b.values.size(), {b.length});
    } else if (!b.values.empty()) {
      throw std::invalid_argument(std::string(b.name) + ": " + ConfigName(n.bias) +
                                  " is false, so no bias may be given; got " +
                                  std::to_string(b.values.size()) + " values");
    }
    CheckFinite(b.name, b.values);
  }
  std::vector<float> q_norm, k_norm;
  if (c.qk_norm.enabled) {
    q_norm = NormScales(n.q_norm, w.q_norm, head_dim(), c.qk_norm.kind);
    k_norm = NormScales(n.k_norm, w.k_norm, head_dim(), c.qk_norm.kind);
  } else {
    for (const auto& [name, values] : {std::pair{n.q_norm, w.q_norm}, {n.k_norm, w.k_norm}}) {
      if (!values.empty()) {
        ThrowInvalidArgument({name, ": config.", n.qk_norm_kind, " is not set, so none may be "
                              "given; got ", std::to_string(values.size()), " values"});
      }
    }
  }
  // Packed aside, so that a weight refused leaves the object as it was.
  PackedMatrix q = PackProjection(n.w_q, w.w_q, w.stored_w_q, w.b_q, c.d_model, c.num_heads,
                                  head_dim(), layout_.dk_pad);
  PackedMatrix k = PackProjection(n.w_k, w.w_k, w.stored_w_k, w.b_k, c.kdim, c.num_kv_heads,
                                  head_dim(), layout_.dk_pad);
  PackedMatrix v = PackProjection(n.w_v, w.w_v, w.stored_w_v, w.b_v, c.vdim, c.num_kv_heads,
                                  c.head_dim_v, layout_.dv_pad);
  // W_O's rows follow Z's padded head layout: zero rows under the padding;
  // its scales are per column (d_model), unpadded.
  const WeightValues wo_read = ReadWeight(n.w_o, w.w_o, w.stored_w_o, c.weights, hv, c.d_model,
                                          ConfigName(n.weights));
  const size_t rows_o = c.num_heads * layout_.dv_pad;
  // Padding rows would move given q4 blocks off whole blocks of W_O's rows.
  if (!w.stored_w_o.q4.empty() && rows_o != hv) {
    ThrowInvalidArgument({n.w_o, ".q4: q4 blocks are taken as they are only where the head "
                          "width of values (", std::to_string(c.head_dim_v), ") is a multiple of "
                          "this backend's ", std::to_string(kernels_->lanes), " lanes; give W_O "
                          "as float32 to have it quantized"});
  }
  std::vector<float> wo(
      CheckedCount("padded output projection", {{"padded rows", rows_o}, {n.d_model, c.d_model}}),
      0.0f);
  for (size_t h = 0; h < c.num_heads; ++h) {
    std::copy_n(wo_read.values.data() + h * c.head_dim_v * c.d_model, c.head_dim_v * c.d_model,
                wo.data() + h * layout_.dv_pad * c.d_model);
  }
  o_ = PackWeights(*kernels_, wo, wo_read.scales, c.bias ? w.b_o : std::span<const float>{},
                   rows_o, c.d_model, c.weights);
  q_ = std::move(q);
  k_ = std::move(k);
  v_ = std::move(v);
  q_norm_ = std::move(q_norm);
  k_norm_ = std::move(k_norm);
  const bool plus_one = c.qk_norm.enabled && Traits(c.qk_norm.kind).plus_one;
  stored_q_norm_.assign(w.q_norm.begin(), plus_one ? w.q_norm.end() : w.q_norm.begin());
  stored_k_norm_.assign(w.k_norm.begin(), plus_one ? w.k_norm.end() : w.k_norm.begin());
  has_weights_ = true;
  // Its gradients would mix the old weights with the new (a program that
  // never trains never makes this state: only a training forward does).
  DropTraining(backward_);
  DropTraining(training_);
}

const float* MultiHeadAttention::RopeAngles(size_t pos0, size_t tokens) {
  const RopeConfig& rope = config_.rope;
  const bool interleaved = rope.style == RopeStyle::kInterleaved;
  const size_t r = rope.rotary_dim, row = RopeTableRow(r, interleaved);
  // Kept rows grow from position 0 while the new ones are few against the
  // call's own (a decoder's step adds one); in blocks of 64 positions.
  if (pos0 <= rope_positions_ && tokens <= rope_positions_ - pos0) {
    return rope_angles_.data() + pos0 * row;
  }
  if (pos0 <= rope_positions_ + 4 * tokens + 256) {
    const size_t end = (pos0 + tokens + 63) / 64 * 64;
    rope_angles_.resize(CheckedCount("rotary angles", {{"positions", end}, {"angles", row}}));
    FillRopeAngles(rope.base, r, interleaved, rope_positions_, end - rope_positions_,
                   rope_angles_.data() + rope_positions_ * row);
    rope_positions_ = end;
    return rope_angles_.data() + pos0 * row;
  }
  rope_call_angles_.resize(CheckedCount("rotary angles", {{"tokens", tokens}, {"angles", row}}));
  FillRopeAngles(rope.base, r, interleaved, pos0, tokens, rope_call_angles_.data());
  return rope_call_angles_.data();
}

void MultiHeadAttention::Project(const float* x, size_t batch, size_t tokens, const PackedMatrix& p,
                                 float* out, size_t ldc, ComputedScan& scan,
                                 const size_t* rotate_from, const float* head_norm) {
  const RopeConfig& rope = config_.rope;
  const bool rotate = rotate_from != nullptr && rope.style != RopeStyle::kNone;
  const bool interleaved = rope.style == RopeStyle::kInterleaved;
  const size_t dk = layout_.dk_pad, rows = batch * tokens;
  struct Written {
    const KernelTable* kernels;
    bool rotate;
    const float* head_norm;
    size_t head_dim;
    float norm_eps;
    RopeArgs args;  // x: batch item 0's row 0
    size_t batch, batch_floats, rows;
    ComputedScan* scan;
  };
  const Written written{kernels_,
                        rotate,
                        head_norm,
                        config_.head_dim,
                        static_cast<float>(config_.qk_norm.eps),
                        {.x = out,
                         .ld = ldc,
                         .tokens = tokens,
                         .heads = 0,
                         .head_stride = dk,
                         .rotary_dim = rope.rotary_dim,
                         .interleaved = interleaved,
                         .table = rotate ? RopeAngles(*rotate_from, tokens) : nullptr,
                         .table_ld = RopeTableRow(rope.rotary_dim, interleaved)},
                        batch,
                        tokens * ldc,
                        rows,
                        &scan};
  // Normalized or rotated: units of whole heads and whole GEMM panels, so
  // that a task turns only heads it wrote (64-float heads on 32-float panels
  // give a head a unit); else a task's columns at once.
  const GemmEpilogue then{
      rotate || head_norm != nullptr ? std::lcm(dk, kernels_->panel_width) : 0,
      [](const void* context, size_t row0, size_t row1, size_t col0, size_t col1) {
        const Written& w = *static_cast<const Written*>(context);
        if (w.head_norm != nullptr) {
          // Each row's heads in [col0, col1) as rows of head_dim, dk apart.
          const size_t heads = (col1 - col0) / w.args.head_stride;
          for (size_t r = row0; r < row1; ++r) {
            const size_t b = r / w.args.tokens, t = r % w.args.tokens;
            float* row = w.args.x + b * w.batch_floats + t * w.args.ld + col0;
            w.kernels->rms_norm(row, heads, w.head_dim, w.args.head_stride, w.head_norm,
                                w.norm_eps, row);
          }
        }
        if (w.rotate) {
          RopeArgs a = w.args;
          a.heads = (col1 - col0) / a.head_stride;
          for (size_t b = 0; b < w.batch; ++b) {
            a.x = w.args.x + b * w.batch_floats + col0;
            w.kernels->rope(a);
          }
        }
        w.scan->Scan(w.args.x + row0 * w.args.ld + col0, row1 - row0, w.args.ld, col1 - col0);
      },
      &written,
      rotate};  // positions run along a batch item's rows
  ParallelMultiplyPacked(*pool_, *kernels_, x, rows, p, out, ldc, &then);
}

void MultiHeadAttention::CheckReady() const {
  if (!has_weights_) {
    throw std::logic_error("MultiHeadAttention: forward before SetWeights");
  }
}

AttentionCall MultiHeadAttention::Call(const Tensor3& query, size_t tk,
                                       const MhaOptions& o) const {
  const CausalAlignment causal =
      !o.causal ? CausalAlignment::kNone
      : o.causal_alignment == CausalAlignment::kTopLeft ? CausalAlignment::kTopLeft
                                                        : CausalAlignment::kBottomRight;
  return AttentionCall(*config_.names, CallOptionsOf(o, causal), query.batch, config_.num_heads,
                       query.tokens, tk, head_dim());
}

MhaResult MultiHeadAttention::PrepareResult(const Tensor3& query, size_t tk,
                                            const MhaOptions& options) const {
  const size_t batch = query.batch, tq = query.tokens, heads = config_.num_heads;
  const ArgNames& n = *config_.names;
  MhaResult r;
  r.batch = batch;
  r.tq = tq;
  r.tk = tk;
  ZeroFilled(r.output, CheckedCount(
      "output", {{"batch", batch}, {"tokens", tq}, {n.d_model, config_.d_model}}));
  const std::initializer_list<Dim> probs_dims = {
      {"batch", batch}, {n.num_heads, heads}, {"query tokens", tq}, {"key tokens", tk}};
  if (options.need_weights) ZeroFilled(r.attn_weights, CheckedCount("attention weights", probs_dims));
  if (options.need_scores) ZeroFilled(r.scores, CheckedCount("scores", probs_dims));
  if (options.need_per_head_output) {
    ZeroFilled(r.per_head_output, CheckedCount(
        "per-head output",
        {{"batch", batch}, {n.num_heads, heads}, {"tokens", tq}, {n.d_model, config_.d_model}}));
  }
  return r;
}

MhaResult MultiHeadAttention::Forward(const Tensor3& x,
                                      const MhaOptions& options) {
  return Forward(x, x, x, options);
}

MhaResult MultiHeadAttention::Forward(const Tensor3& query, const Tensor3& key,
                                      const Tensor3& value,
                                      const MhaOptions& options) {
  CheckReady();
  const MhaConfig& c = config_;
  const ArgNames& n = *c.names;
  CheckTensor("query", query, c.d_model, n.d_model);
  // Self-attention passes one tensor three times: check its values once.
  auto same = [](const Tensor3& a, const Tensor3& b) {
    return a.data.data() == b.data.data() && a.data.size() == b.data.size();
  };
  CheckTensor("key", key, c.kdim, n.kdim, same(key, query));
  CheckTensor("value", value, c.vdim, n.vdim, same(value, key) || same(value, query));
  CheckEqual("key.batch", key.batch, query.batch, "query.batch");
  CheckEqual("value.batch", value.batch, query.batch, "query.batch");
  CheckEqual("value.tokens", value.tokens, key.tokens, "key.tokens");
  const AttentionCall call = Call(query, key.tokens, options);
  MhaResult result = PrepareResult(query, key.tokens, options);
  const bool training = TrainingRequested(options.training);
  if (training) SaveForBackward(query, key, value, options);

  // Self-attention's keys sit at the queries' positions; other keys from 0.
  const size_t key_pos0 = same(key, query) ? options.position_offset : 0;
  const ProjectedKV kv = ProjectKeysValues(key, value, key_pos0, "key", "value",
                                           WeightType::kF32);
  return Attend(query,
                KVView{kv.k, kv.v, WeightType::kF32, key.tokens,
                       TokenMajor(key.tokens, layout_.key_row(), layout_.dk_pad),
                       TokenMajor(key.tokens, layout_.value_row(), layout_.dv_pad),
                       kv.max_abs_key},
                call, options, options.position_offset, std::move(result));
}

MultiHeadAttention::ProjectedKV MultiHeadAttention::ProjectKeysValues(
    const Tensor3& key, const Tensor3& value, size_t key_pos0, const char* key_source,
    const char* value_source, WeightType store) {
  const size_t rows = key.batch * key.tokens;  // <= key.data.size()
  const std::string rows_name = Cat({key_source, ".batch * ", key_source, ".tokens"});
  const size_t need = CheckedCount(
      "projected keys and values",
      {{rows_name.c_str(), rows},
       {"padded key and value row", layout_.key_row() + layout_.value_row()}});
  if (kv_workspace_.size() < need) kv_workspace_.resize(need);
  ProjectedKV kv;
  kv.k = kv_workspace_.data();
  kv.v = kv.k + rows * layout_.key_row();
  ComputedScan key_scan, value_scan;
  Project(key.data.data(), key.batch, key.tokens, k_, kv.k, layout_.key_row(), key_scan,
          &key_pos0, KeyNorm());
  Project(value.data.data(), value.batch, value.tokens, v_, kv.v, layout_.value_row(),
          value_scan);
  const std::string cache_type = ConfigName(config_.names->cache_type);
  kv.max_abs_key = JudgeProjection(key_scan, {kv.k, rows * layout_.key_row()}, "key",
                                   key_source, "k", store, cache_type);
  JudgeProjection(value_scan, {kv.v, rows * layout_.value_row()}, "value", value_source, "v",
                  store, cache_type);
  return kv;
}

PrecomputedKV MultiHeadAttention::PrecomputeKeyValue(
    const Tensor3& memory, std::span<const uint8_t> key_padding_mask) {
  if constexpr (kTrainingModule) RefuseInTrainingModule("precomputed keys and values");
  CheckReady();
  const ArgNames& n = *config_.names;
  if (config_.kdim != config_.vdim) {
    ThrowInvalidArgument({"memory: serves as keys and values, so ", n.kdim, " (",
                          std::to_string(config_.kdim), ") must equal ", n.vdim, " (",
                          std::to_string(config_.vdim), ")"});
  }
  CheckTensor("memory", memory, config_.kdim, n.kdim);
  PrecomputedKV kv(layout_, memory.batch, memory.tokens, config_.cache_type);
  if (!key_padding_mask.empty()) {
    CheckLength(n.key_padding_mask, key_padding_mask.size(),
                {memory.batch, memory.tokens});
    kv.key_padding_.assign(key_padding_mask.begin(), key_padding_mask.end());
  }
  const ProjectedKV p =
      ProjectKeysValues(memory, memory, 0, "memory", "memory", config_.cache_type);
  const size_t rows = memory.batch * memory.tokens;
  kv.k_.Store(0, p.k, rows * layout_.key_row());
  kv.v_.Store(0, p.v, rows * layout_.value_row());
  kv.max_abs_key_ = p.max_abs_key;
  return kv;
}

namespace {

void CheckLayout(const char* what, const KVLayout& given, const KVLayout& own) {
  if (given.heads != own.heads || given.dk != own.dk || given.dv != own.dv ||
      given.dk_pad != own.dk_pad || given.dv_pad != own.dv_pad) {
    auto describe = [](const KVLayout& l) {
      return Cat({std::to_string(l.heads), " heads of d_k ", std::to_string(l.dk), ", d_v ",
                  std::to_string(l.dv), " (padded ", std::to_string(l.dk_pad), ")"});
    };
    ThrowInvalidArgument(
        {what, ": made by an attention with ", describe(given), ", this one has ", describe(own)});
  }
}

}  // namespace

MhaResult MultiHeadAttention::Forward(const Tensor3& query,
                                      const PrecomputedKV& kv,
                                      const MhaOptions& options) {
  CheckReady();
  if (TrainingRequested(options.training)) RefuseTraining("Forward(query, precomputed)");
  CheckLayout("precomputed key/value", kv.layout_, layout_);
  CheckTensor("query", query, config_.d_model, config_.names->d_model);
  CheckEqual("query.batch", query.batch, kv.batch(), "batch of the precomputed memory");
  MhaOptions with_mask = options;
  if (options.key_padding_mask.empty()) with_mask.key_padding_mask = kv.key_padding_;
  const AttentionCall call = Call(query, kv.tokens(), with_mask);
  MhaResult result = PrepareResult(query, kv.tokens(), with_mask);
  return Attend(query,
                KVView{kv.k_.at(0), kv.v_.at(0), kv.type(), kv.tokens(),
                       TokenMajor(kv.tokens(), layout_.key_row(), layout_.dk_pad),
                       TokenMajor(kv.tokens(), layout_.value_row(), layout_.dv_pad),
                       kv.max_abs_key_, kv.k_.scale_at(0), kv.v_.scale_at(0)},
                call, with_mask, options.position_offset, std::move(result));
}

KVCache MultiHeadAttention::CreateKVCache(size_t batch, size_t max_length) const {
  if constexpr (kTrainingModule) RefuseInTrainingModule("KV caches");
  return KVCache(layout_, batch, max_length, config_.cache_type, *config_.names);
}

MhaResult MultiHeadAttention::ForwardIncremental(const Tensor3& x,
                                                 KVCache& cache,
                                                 const MhaOptions& options) {
  CheckReady();
  if (TrainingRequested(options.training)) RefuseTraining("ForwardIncremental");
  CheckLayout("KV cache", cache.layout_, layout_);
  const ArgNames& n = *config_.names;
  if (config_.kdim != config_.d_model || config_.vdim != config_.d_model) {
    ThrowInvalidArgument({"incremental self-attention needs ", n.kdim, " == ", n.vdim,
                          " == ", n.d_model, " (", std::to_string(config_.d_model), "), got ",
                          n.kdim, " ", std::to_string(config_.kdim), ", ", n.vdim, " ",
                          std::to_string(config_.vdim)});
  }
  CheckTensor("x", x, config_.d_model, n.d_model);
  CheckEqual("x.batch", x.batch, cache.batch(), "batch of the KV cache");
  cache.CheckRoom(x.tokens);
  const size_t tk = cache.length() + x.tokens;
  MhaOptions causal = options;
  causal.causal = true;
  causal.causal_alignment = CausalAlignment::kBottomRight;
  const AttentionCall call = Call(x, tk, causal);
  MhaResult result = PrepareResult(x, tk, causal);
  // Projected aside, checked, then stored in the cache's rows past its
  // length: it never holds a non-finite value, so its keys() and values()
  // can always be appended again, and a step that fails adds nothing.
  const ProjectedKV p = ProjectKeysValues(x, x, cache.length(), "x", "x", cache.type());
  cache.StoreRows(p.k, p.v, x.tokens);
  const double max_abs_key = std::max(cache.max_abs_key_, p.max_abs_key);
  MhaResult r = Attend(x,
                       KVView{cache.k_.at(0), cache.v_.at(0), cache.type(), tk,
                              cache.key_strides(), cache.value_strides(), max_abs_key,
                              cache.k_.scale_at(0), cache.v_.scale_at(0)},
                       call, causal, cache.length(), std::move(result));
  // Only a step that succeeded adds its tokens.
  cache.length_ = tk;
  cache.max_abs_key_ = max_abs_key;
  return r;
}

MhaResult MultiHeadAttention::Attend(const Tensor3& query, const KVView& kv,
                                     const AttentionCall& call, const MhaOptions& options,
                                     size_t query_pos0, MhaResult r) {
  const MhaConfig& c = config_;
  const size_t heads = c.num_heads, group = c.num_heads / c.num_kv_heads;
  const size_t batch = query.batch, tq = query.tokens, tk = kv.tk;
  const size_t dk = layout_.dk_pad, dv = layout_.dv_pad;
  // Q and Z rows hold every query head; K and V rows the key/value heads.
  const size_t ld_q = heads * dk, ld_z = heads * dv;
  const size_t scratch = kernels_->attention_scratch_floats(dk, dv);
  const size_t threads = pool_->threads();
  const size_t need = CheckedCount("projected queries and head outputs",
                                   {{"query.batch * query.tokens", batch * tq},
                                    {"padded query and output row", ld_q + ld_z}}) +
                      scratch * threads;
  if (workspace_.size() < need) workspace_.resize(need);
  float* q = workspace_.data();
  float* z = q + batch * tq * ld_q;
  float* attention_scratch = z + batch * tq * ld_z;
  // Only Forward(query, key, value) trains; the others refused it.
  const bool training = TrainingRequested(options.training);
  if (!training) DropTraining(training_);
  float* stats = training ? training_->softmax_stats.data() : nullptr;  // [B, H, Tq, 2]
  ComputedScan query_scan;
  Project(query.data.data(), batch, tq, q_, q, ld_q, query_scan, &query_pos0, QueryNorm());
  const double max_abs_query = query_scan.Judge("the query projection query W_q + b_q",
                                                {q, batch * tq * ld_q}, kTooLarge);
  call.CheckScoreRange(max_abs_query, kv.max_abs_key,
                       "the query and key inputs or weights are too large in magnitude");

  // Work items as ParallelAttention hands them out (see AttentionCall::HeadNs).
  const size_t heads_total = batch * heads;
  ParallelAttention(*pool_, batch, heads, tq, call.HeadNs(dk),
                    [&](size_t b, size_t h, size_t q0, size_t q1, size_t thread) {
    const size_t kvh = h / group;
    AttentionArgs a{};
    a.q = q + (b * tq + q0) * ld_q + h * dk;
    a.ldq = ld_q;
    const size_t bytes = simd_attention::WeightBytes(kv.type);
    a.k = static_cast<const char*>(kv.k) + (b * kv.k_at.batch + kvh * kv.k_at.head) * bytes;
    a.ldk = kv.k_at.row;
    a.v = static_cast<const char*>(kv.v) + (b * kv.v_at.batch + kvh * kv.v_at.head) * bytes;
    a.ldv = kv.v_at.row;
    a.kv_type = kv.type;
    if (kv.k_scales != nullptr) {  // a scale per padded head row
      a.k_scales = kv.k_scales + (b * kv.k_at.batch + kvh * kv.k_at.head) / dk;
      a.v_scales = kv.v_scales + (b * kv.v_at.batch + kvh * kv.v_at.head) / dv;
      a.ld_scales = kv.k_at.row / dk;
    }
    a.dk = dk;
    a.dv = dv;
    call.Set(a, b, h, q0, q1);
    a.z = z + (b * tq + q0) * ld_z + h * dv;
    a.ldz = ld_z;
    const size_t probs_at = ((b * heads + h) * tq + q0) * tk;
    a.probs = options.need_weights ? r.attn_weights.data() + probs_at : nullptr;
    a.scores = options.need_scores ? r.scores.data() + probs_at : nullptr;
    a.scratch = attention_scratch + thread * scratch;
    a.softmax_stats = stats == nullptr ? nullptr : stats + ((b * heads + h) * tq + q0) * 2;
    kernels_->attention(a);
  });

  if (options.need_intermediates) {
    const KVLayout& l = layout_;
    r.q = HeadMajor("q", q, batch, tq, heads, l.dk, TokenMajor(tq, ld_q, dk));
    // A narrow cache's rows widened first (whole batch items).
    const auto widened = [&](const void* rows, const float* scales, const KVStrides& at,
                             size_t row) {
      std::vector<float> out(kv.type == WeightType::kF32 ? 0 : batch * at.batch);
      if (out.empty()) return out;
      if (HeldType(kv.type) == WeightType::kInt8) {
        DequantizeInt8Rows(static_cast<const int8_t*>(rows), scales, out.size(), row, out.data());
      } else {
        WidenBits(static_cast<const uint16_t*>(rows), out.size(), kv.type, out.data());
      }
      return out;
    };
    const std::vector<float> wide_k = widened(kv.k, kv.k_scales, kv.k_at, dk),
                             wide_v = widened(kv.v, kv.v_scales, kv.v_at, dv);
    const auto* k = wide_k.empty() ? static_cast<const float*>(kv.k) : wide_k.data();
    const auto* v = wide_v.empty() ? static_cast<const float*>(kv.v) : wide_v.data();
    r.k = HeadMajor("k", k, batch, tk, l.heads, l.dk, kv.k_at);
    r.v = HeadMajor("v", v, batch, tk, l.heads, l.dv, kv.v_at);
    r.head_output = HeadMajor("head output", z, batch, tq, heads, l.dv, TokenMajor(tq, ld_z, dv));
  }

  // Z's rows are H * d_v padded floats, W_O's packed rows as many.
  ComputedScan output_scan;
  Project(z, batch, tq, o_, r.output.data(), c.d_model, output_scan);
  output_scan.Judge(kOutputProjection, r.output, kTooLarge);

  if (options.need_per_head_output) {
    // Head h's contribution z_h W_O^h: W_O's packed rows of that head, one
    // GEMM of 2 * tq * d_v * d_model FLOPs per (batch, head).
    const double gemm_ns = 2.0 * double(tq) * double(dv) * double(c.d_model) / 50.0;
    const Split split = SplitWork(*pool_, gemm_ns * double(heads_total), heads_total);
    ParallelRanges(*pool_, heads_total, split, [&](size_t begin, size_t end) {
      for (size_t item = begin; item < end; ++item) {
        const size_t b = item / heads, h = item % heads;
        RunGemm(*kernels_, {.a = z + b * tq * ld_z + h * dv,
                            .lda = ld_z,
                            .m = tq,
                            .k = dv,
                            .packed_b = o_.data(),
                            .packed_rows = o_.rows,
                            .k_begin = h * dv,
                            .n = c.d_model,
                            .packed_bias = nullptr,
                            .c = r.per_head_output.data() + (b * heads + h) * tq * c.d_model,
                            .ldc = c.d_model,
                            .weight_type = o_.type,
                            .packed_scales = o_.packed_scales()});
      }
    });
    CheckComputed("the per-head output z_h W_o^h", r.per_head_output, kTooLarge);
  }
  if (training) {
    // The record takes the projections its backward reads; the workspaces
    // get the buffers of its last ones in exchange, so nothing is copied.
    training_->projected.swap(workspace_);
    training_->projected_kv.swap(kv_workspace_);
    training_->ready = true;
  }
  return r;
}

}  // namespace simd_attention
