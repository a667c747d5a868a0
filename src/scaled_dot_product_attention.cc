#include "simd_attention/scaled_dot_product_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "checked_size.h"
#include "dispatch/kernel_table.h"
#include "kernels/attention.h"
#include "simd_attention/thread_pool.h"
#include "threading/parallel.h"
#include "validate.h"

namespace simd_attention {
namespace {

size_t RoundUp(size_t x, size_t multiple) {
  return (x + multiple - 1) / multiple * multiple;
}

std::string Str(size_t x) { return std::to_string(x); }

// The shape as the caller laid it out: [B, H, T, d] or [B, T, H * d].
std::string ShapeOf(const HeadsTensor& t, HeadLayout layout) {
  if (layout == HeadLayout::kHeadMajor) {
    return ShapeString({t.batch, t.heads, t.tokens, t.head_dim});
  }
  return Cat({"[", Str(t.batch), ", ", Str(t.tokens), ", ", Str(t.heads), " * ",
              Str(t.head_dim), "]"});
}

void CheckHeads(const char* what, const HeadsTensor& t, HeadLayout layout) {
  if (t.batch == 0 || t.heads == 0 || t.tokens == 0 || t.head_dim == 0) {
    throw std::invalid_argument(Cat({what, ": expected every dimension > 0, got shape ",
                                     ShapeOf(t, layout)}));
  }
  CheckLength(what, t.data.size(), {t.batch, t.heads, t.tokens, t.head_dim});
  CheckFinite(what, t.data);
}

// A number the caller gives as a double that the kernels take as a float:
// finite and within float32's range.
bool FloatHolds(double x) {
  return std::isfinite(x) && std::fabs(x) <= double(std::numeric_limits<float>::max());
}

// The batches and heads a mask has, 1 where it broadcasts.
struct MaskDims {
  size_t batch = 1, heads = 1;
  // Offset of (b, h)'s [Tq, Tk] slice.
  size_t Offset(size_t b, size_t h, size_t tq, size_t tk) const {
    return ((batch > 1 ? b : 0) * heads + (heads > 1 ? h : 0)) * tq * tk;
  }
};

// A mask's shape: [Tq, Tk] (also when empty) or [B or 1, H or 1, Tq, Tk].
MaskDims CheckMaskShape(const char* shape_name, std::span<const size_t> shape,
                        size_t batch, size_t heads, size_t tq, size_t tk) {
  if (shape.empty()) return {};
  const bool ok2 = shape.size() == 2 && shape[0] == tq && shape[1] == tk;
  const bool ok4 = shape.size() == 4 && (shape[0] == batch || shape[0] == 1) &&
                   (shape[1] == heads || shape[1] == 1) && shape[2] == tq && shape[3] == tk;
  if (ok2) return {};
  if (ok4) return {shape[0], shape[1]};
  std::string given = "[";
  for (size_t i = 0; i < shape.size(); ++i) given += (i ? ", " : "") + Str(shape[i]);
  throw std::invalid_argument(Cat(
      {shape_name, ": expected a shape that broadcasts to [B, H, Tq, Tk] = ",
       ShapeString({batch, heads, tq, tk}), ": [Tq, Tk] = ", ShapeString({tq, tk}),
       ", [B or 1, H or 1, Tq, Tk] = [", Str(batch), " or 1, ", Str(heads), " or 1, ", Str(tq),
       ", ", Str(tk), "]; got ", given, "]"}));
}

// Scores scale * q . k of rows with |q_i| <= max_q, |k_i| <= max_k are at most
// |scale| * d * max_q * max_k in magnitude. Beyond float32's range a score
// (or a partial sum, soft-capped or not) could be +-inf and the softmax would
// turn inf - inf into NaN, so such inputs are refused instead.
void CheckScoreRange(double scale, size_t d, double max_q, double max_k) {
  const double bound = std::fabs(scale) * double(d) * max_q * max_k;
  if (bound > double(std::numeric_limits<float>::max())) {
    throw std::range_error(Cat(
        {"attention scores may overflow float32: |scale| * head_dim * max|q| * max|k| = ",
         NumberString(std::fabs(scale)), " * ", Str(d), " * ", NumberString(max_q), " * ",
         NumberString(max_k), " = ", NumberString(bound), " exceeds ",
         NumberString(std::numeric_limits<float>::max()),
         "; q and k are too large in magnitude: scale them down"}));
  }
}

// A head of q, k or v as the kernel reads it: rows of `ld` floats from `data`
// of which the first d_pad are the head, zero-padded to whole vectors.
struct KernelHeads {
  const float* data;
  size_t ld;
  size_t heads;
  size_t tokens;
  size_t d_pad;
  HeadLayout layout;
  const float* Head(size_t b, size_t h) const {
    return layout == HeadLayout::kHeadMajor ? data + (b * heads + h) * tokens * ld
                                            : data + b * tokens * ld + h * d_pad;
  }
};

}  // namespace

HeadsTensor SplitHeads(std::span<const float> data, size_t batch, size_t tokens,
                       size_t features, size_t heads, const char* what,
                       const char* heads_name) {
  CheckPositive(heads_name, heads);
  if (features % heads != 0) {
    throw std::invalid_argument(Cat({heads_name, ": must divide the ", Str(features), " ",
                                     what, " features, got ", Str(heads)}));
  }
  return {data, batch, heads, tokens, features / heads};
}

ScaledDotProductAttention::ScaledDotProductAttention(const SdpaConfig& config)
    : ScaledDotProductAttention(config, BestKernels(config.backend)) {}

ScaledDotProductAttention::ScaledDotProductAttention(const SdpaConfig& config,
                                                     const KernelTable& kernels,
                                                     std::shared_ptr<ThreadPool> pool)
    : config_(config), kernels_(&kernels), pool_(std::move(pool)) {
  if (config_.names == nullptr) config_.names = &CppArgNames();
  if (config_.threads == 0) config_.threads = ThreadPool::HardwareThreads();
  if (pool_ == nullptr) pool_ = SharedThreadPool(config_.threads);
  config_.threads = pool_->threads();
  config_.backend = kernels.backend;
}

SdpaResult ScaledDotProductAttention::Forward(const HeadsTensor& q, const HeadsTensor& k,
                                              const HeadsTensor& v, const SdpaOptions& o) {
  const ArgNames& n = *config_.names;
  const HeadLayout layout = o.layout;
  CheckHeads("q", q, layout);
  CheckHeads("k", k, layout);
  CheckHeads("v", v, layout);
  const size_t batch = q.batch, heads = q.heads, tq = q.tokens, tk = k.tokens;
  const size_t kv_heads = k.heads, d = q.head_dim, dv = v.head_dim;
  auto shapes = [&] {
    return Cat({"; got q ", ShapeOf(q, layout), ", k ", ShapeOf(k, layout), ", v ",
                ShapeOf(v, layout)});
  };
  if (k.batch != batch || v.batch != batch) {
    throw std::invalid_argument(Cat({"k, v: expected the batch of q (", Str(batch), ")",
                                     shapes()}));
  }
  if (v.heads != kv_heads || v.tokens != tk) {
    throw std::invalid_argument(
        Cat({"v: expected the heads and tokens of k (", Str(kv_heads), ", ", Str(tk), ")",
             shapes()}));
  }
  if (k.head_dim != d) {
    throw std::invalid_argument(
        Cat({"k: expected the head width of q (", Str(d), ")", shapes()}));
  }
  if (heads % kv_heads != 0) {
    throw std::invalid_argument(
        Cat({"k: its heads (", Str(kv_heads), ") must divide the heads of q (", Str(heads),
             "): query head h uses key/value head h / (Hq / Hkv)", shapes()}));
  }
  if (o.scale && !FloatHolds(*o.scale)) {
    throw std::invalid_argument(Cat({n.scale, ": expected a finite number float32 holds, got ",
                                     NumberString(*o.scale)}));
  }
  if (o.softcap && !(*o.softcap > 0 && FloatHolds(*o.softcap))) {
    throw std::invalid_argument(Cat({n.softcap, ": expected a finite number > 0, got ",
                                     NumberString(*o.softcap)}));
  }
  for (size_t side = 0; side < 2; ++side) {
    if (o.window[side] < -1) {
      throw std::invalid_argument(Cat({n.window, "[", Str(side),
                                       "]: expected -1 (unbounded) or a number >= 0, got ",
                                       std::to_string(o.window[side])}));
    }
  }
  const MaskDims attn_dims =
      CheckMaskShape(n.attn_mask_shape, o.attn_mask_shape, batch, heads, tq, tk);
  const MaskDims bool_dims =
      CheckMaskShape(n.bool_mask_shape, o.bool_mask_shape, batch, heads, tq, tk);
  if (!o.attn_mask.empty()) {
    CheckLength(n.attn_mask, o.attn_mask.size(), {attn_dims.batch, attn_dims.heads, tq, tk});
    CheckMask(n.attn_mask, o.attn_mask);
  }
  if (!o.bool_mask.empty()) {
    CheckLength(n.bool_mask, o.bool_mask.size(), {bool_dims.batch, bool_dims.heads, tq, tk});
  }
  if (!o.key_padding_mask.empty()) {
    CheckLength(n.key_padding_mask, o.key_padding_mask.size(), {batch, tk});
  }
  if (!o.kv_lengths.empty()) {
    CheckLength(n.kv_lengths, o.kv_lengths.size(), {batch});
    for (size_t b = 0; b < batch; ++b) {
      if (o.kv_lengths[b] > tk) {
        throw std::invalid_argument(Cat({n.kv_lengths, "[", Str(b), "]: expected at most Tk (",
                                         Str(tk), "), got ", Str(o.kv_lengths[b])}));
      }
    }
  }
  const double scale = o.scale ? *o.scale : 1.0 / std::sqrt(double(d));
  CheckScoreRange(scale, d, MaxAbs(q.data), MaxAbs(k.data));

  SdpaResult r;
  r.batch = batch;
  r.heads = heads;
  r.tq = tq;
  r.tk = tk;
  r.head_dim_v = dv;
  r.output.resize(CheckedCount(
      "output", {{"batch", batch}, {"heads", heads}, {"query tokens", tq}, {"head_dim_v", dv}}));
  const std::initializer_list<Dim> probs_dims = {
      {"batch", batch}, {"heads", heads}, {"query tokens", tq}, {"key tokens", tk}};
  if (o.need_weights) r.attn_weights.resize(CheckedCount("attention weights", probs_dims));
  if (o.need_scores) r.scores.resize(CheckedCount("scores", probs_dims));

  // The kernel reads and writes heads padded to whole vectors: heads whose
  // width is not a whole number of vectors are copied into padded ones.
  const size_t lanes = kernels_->lanes;
  const size_t dk_pad = RoundUp(d, lanes), dv_pad = RoundUp(dv, lanes);
  const bool pad_k = dk_pad != d, pad_v = dv_pad != dv;
  const size_t scratch = kernels_->attention_scratch_floats(dk_pad, dv_pad);
  const size_t threads = pool_->threads();
  const size_t q_floats = pad_k ? CheckedCount("padded q", {{"rows", batch * heads * tq},
                                                            {"padded head width", dk_pad}})
                                : 0;
  const size_t k_floats = pad_k ? CheckedCount("padded k", {{"rows", batch * kv_heads * tk},
                                                            {"padded head width", dk_pad}})
                                : 0;
  const size_t v_floats = pad_v ? CheckedCount("padded v", {{"rows", batch * kv_heads * tk},
                                                            {"padded head width", dv_pad}})
                                : 0;
  const size_t z_floats = pad_v ? CheckedCount("padded output", {{"rows", batch * heads * tq},
                                                                 {"padded head width", dv_pad}})
                                : 0;
  const size_t key_valid_bytes =
      o.kv_lengths.empty() ? 0 : CheckedCount("key padding", {{"batch", batch}, {"Tk", tk}}, 1);
  const size_t need = q_floats + k_floats + v_floats + z_floats + scratch * threads;
  if (workspace_.size() < need) workspace_.resize(need);
  float* padded = workspace_.data();
  auto heads_of = [&](const HeadsTensor& t, size_t d_pad, bool pad) {
    if (!pad) {
      const size_t ld = layout == HeadLayout::kHeadMajor ? t.head_dim : t.heads * t.head_dim;
      return KernelHeads{t.data.data(), ld, t.heads, t.tokens, d_pad, layout};
    }
    // -> head-major, each row zero-padded.
    float* out = padded;
    padded += t.batch * t.heads * t.tokens * d_pad;
    for (size_t b = 0; b < t.batch; ++b) {
      for (size_t h = 0; h < t.heads; ++h) {
        for (size_t i = 0; i < t.tokens; ++i) {
          const float* src =
              layout == HeadLayout::kHeadMajor
                  ? t.data.data() + ((b * t.heads + h) * t.tokens + i) * t.head_dim
                  : t.data.data() + ((b * t.tokens + i) * t.heads + h) * t.head_dim;
          float* dst = out + ((b * t.heads + h) * t.tokens + i) * d_pad;
          std::copy_n(src, t.head_dim, dst);
          std::fill(dst + t.head_dim, dst + d_pad, 0.0f);
        }
      }
    }
    return KernelHeads{out, d_pad, t.heads, t.tokens, d_pad, HeadLayout::kHeadMajor};
  };
  const KernelHeads qh = heads_of(q, dk_pad, pad_k);
  const KernelHeads kh = heads_of(k, dk_pad, pad_k);
  const KernelHeads vh = heads_of(v, dv_pad, pad_v);
  float* z_padded = padded;
  float* attention_scratch = z_padded + z_floats;
  // The kernel writes whole vectors: into the output itself when its heads
  // are whole vectors wide, else into padded rows copied out after.
  const bool z_head_major = pad_v || layout == HeadLayout::kHeadMajor;
  const size_t ldz = pad_v ? dv_pad : layout == HeadLayout::kHeadMajor ? dv : heads * dv;
  auto z_head = [&](size_t b, size_t h) {
    float* z = pad_v ? z_padded : r.output.data();
    return z_head_major ? z + (b * heads + h) * tq * ldz : z + b * tq * ldz + h * dv;
  };

  // Valid lengths become key padding, so fully padded key blocks are skipped.
  std::vector<uint8_t> key_valid(key_valid_bytes);
  for (size_t b = 0; b < batch && !o.kv_lengths.empty(); ++b) {
    for (size_t j = 0; j < tk; ++j) {
      key_valid[b * tk + j] =
          j < o.kv_lengths[b] &&
          (o.key_padding_mask.empty() || o.key_padding_mask[b * tk + j] != 0);
    }
  }
  const uint8_t* key_padding = !key_valid.empty()             ? key_valid.data()
                               : !o.key_padding_mask.empty() ? o.key_padding_mask.data()
                                                             : nullptr;

  // The window [left, right] and the causal mask bound keys relative to one
  // diagonal, i' = i (+ Tk - Tq bottom-right); a bound of Tq + Tk or more
  // bounds nothing, so larger ones are clamped to it.
  const ptrdiff_t reach = static_cast<ptrdiff_t>(tq + tk);
  const ptrdiff_t left = std::min<int64_t>(o.window[0], reach);
  const ptrdiff_t right = std::min<int64_t>(o.window[1], reach);
  const bool causal = o.causal != CausalAlignment::kNone;
  const ptrdiff_t diagonal =
      o.causal == CausalAlignment::kBottomRight
          ? static_cast<ptrdiff_t>(tk) - static_cast<ptrdiff_t>(tq)
          : 0;
  const float softcap = o.softcap ? static_cast<float>(*o.softcap) : 0.0f;

  // Work items: (batch, head, chunk of whole query blocks), as in
  // MultiHeadAttention: a chunk starting at query q0 shifts the diagonal by
  // q0 and so computes what the whole head would. Cost model: 4 * tq * keys
  // * d FLOPs per head at ~40 GFLOP/s, keys the visible ones per query.
  double keys = double(tk);
  if (causal) keys = std::min(keys, double(tk) / 2 + 1);
  if (left >= 0) {
    const ptrdiff_t ahead = causal ? 0 : std::max<ptrdiff_t>(right, 0);
    keys = std::min(keys, double(left + ahead + 1));
  }
  const size_t group = heads / kv_heads;
  const double head_ns = 4.0 * double(tq) * keys * double(dk_pad) / 40.0;
  ParallelAttention(*pool_, batch, heads, tq, head_ns, [&](size_t b, size_t h, size_t q0,
                                                          size_t q1, size_t thread) {
    const size_t g = h / group;
    AttentionArgs a{};
    a.q = qh.Head(b, h) + q0 * qh.ld;
    a.ldq = qh.ld;
    a.k = kh.Head(b, g);
    a.ldk = kh.ld;
    a.v = vh.Head(b, g);
    a.ldv = vh.ld;
    a.tq = q1 - q0;
    a.tk = tk;
    a.dk = dk_pad;
    a.dv = dv_pad;
    a.scale = static_cast<float>(scale);
    a.causal = causal || right >= 0;
    a.causal_diagonal = diagonal + static_cast<ptrdiff_t>(q0);
    a.window_right = causal ? 0 : right;
    a.sliding = left >= 0;
    a.window_left = left;
    a.softcap = softcap;
    a.key_valid = key_padding == nullptr ? nullptr : key_padding + b * tk;
    const size_t rows_before = q0 * tk;
    if (!o.attn_mask.empty()) {
      a.additive_mask = o.attn_mask.data() + attn_dims.Offset(b, h, tq, tk) + rows_before;
      a.mask_ld = tk;
    }
    if (!o.bool_mask.empty()) {
      a.boolean_mask = o.bool_mask.data() + bool_dims.Offset(b, h, tq, tk) + rows_before;
      a.boolean_mask_ld = tk;
    }
    a.z = z_head(b, h) + q0 * ldz;
    a.ldz = ldz;
    const size_t probs_at = (b * heads + h) * tq * tk + rows_before;
    a.probs = o.need_weights ? r.attn_weights.data() + probs_at : nullptr;
    a.scores = o.need_scores ? r.scores.data() + probs_at : nullptr;
    a.scratch = attention_scratch + thread * scratch;
    kernels_->attention(a);
  });

  if (pad_v) {
    for (size_t b = 0; b < batch; ++b) {
      for (size_t h = 0; h < heads; ++h) {
        for (size_t i = 0; i < tq; ++i) {
          float* dst = layout == HeadLayout::kHeadMajor
                           ? r.output.data() + ((b * heads + h) * tq + i) * dv
                           : r.output.data() + ((b * tq + i) * heads + h) * dv;
          std::copy_n(z_padded + ((b * heads + h) * tq + i) * dv_pad, dv, dst);
        }
      }
    }
  }
  return r;
}

}  // namespace simd_attention
