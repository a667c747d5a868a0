#include "api/attention_call.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "checks/checked_size.h"
#include "checks/validate.h"

namespace simd_attention {
namespace {

std::string Str(size_t x) { return std::to_string(x); }

// A number the caller gives as a double that the kernels take as a float:
// finite and within float32's range.
bool FloatHolds(double x) {
  return std::isfinite(x) && std::fabs(x) <= double(std::numeric_limits<float>::max());
}

// A mask given without a shape: [Tq, Tk], or [B, H, Tq, Tk] by its length.
MaskDims InferMaskDims(const char* name, size_t given, size_t batch, size_t heads, size_t tq,
                       size_t tk) {
  const Product shared = ProductOf({tq, tk}), per_head = ProductOf({batch, heads, tq, tk});
  if (!shared.overflow && given == shared.value) return {1, 1, tk};
  if (!per_head.overflow && given == per_head.value) return {batch, heads, tk};
  ThrowInvalidArgument({name, ": expected ", ProductString(shared), " values for ",
                        ShapeString({tq, tk}), " or ", ProductString(per_head), " for ",
                        ShapeString({batch, heads, tq, tk}), ", got ", Str(given)});
}

// A mask given with a shape: [Tq, Tk] or [B or 1, H or 1, Tq, Tk], Tk or
// fewer keys (ONNX pads a narrower mask with -inf), and as many values.
MaskDims CheckMaskShape(const char* name, const char* shape_name, size_t given,
                        std::span<const size_t> shape, size_t batch, size_t heads, size_t tq,
                        size_t tk) {
  const size_t keys = shape.empty() ? 0 : shape.back();
  const bool keys_ok = keys >= 1 && keys <= tk;
  const bool ok2 = shape.size() == 2 && shape[0] == tq && keys_ok;
  const bool ok4 = shape.size() == 4 && (shape[0] == batch || shape[0] == 1) &&
                   (shape[1] == heads || shape[1] == 1) && shape[2] == tq && keys_ok;
  if (!ok2 && !ok4) {
    std::string got = "[";
    for (size_t i = 0; i < shape.size(); ++i) got += (i ? ", " : "") + Str(shape[i]);
    ThrowInvalidArgument({shape_name, ": expected a shape that broadcasts to [B, H, Tq, Tk] = ",
                          ShapeString({batch, heads, tq, tk}), ": [Tq, Tk] = ",
                          ShapeString({tq, tk}), ", [B or 1, H or 1, Tq, Tk] = [", Str(batch),
                          " or 1, ", Str(heads), " or 1, ", Str(tq), ", ", Str(tk),
                          "], the last dimension from 1 to Tk (the keys past it masked); got ",
                          got, "]"});
  }
  const MaskDims dims = ok4 ? MaskDims{shape[0], shape[1], keys} : MaskDims{1, 1, keys};
  CheckLength(name, given, {dims.batch, dims.heads, tq, keys});
  return dims;
}

MaskDims MaskDimsOf(const char* name, const char* shape_name, size_t given,
                   std::span<const size_t> shape, size_t batch, size_t heads, size_t tq,
                   size_t tk) {
  return shape.empty() ? InferMaskDims(name, given, batch, heads, tq, tk)
                       : CheckMaskShape(name, shape_name, given, shape, batch, heads, tq, tk);
}

}  // namespace

AttentionCall::AttentionCall(const ArgNames& n, const CallOptions& o, size_t batch,
                             size_t heads, size_t tq, size_t tk, size_t head_dim)
    : tq_(tq), tk_(tk), head_dim_(head_dim), causal_(o.causal), scores_stage_(o.scores_stage),
      masked_from_(tk) {
  if (o.scale && !FloatHolds(*o.scale)) {
    ThrowInvalidArgument(
        {n.scale, ": expected a finite number float32 holds, got ", NumberString(*o.scale)});
  }
  if (o.softcap && !(*o.softcap > 0 && FloatHolds(*o.softcap))) {
    ThrowInvalidArgument(
        {n.softcap, ": expected a finite number > 0, got ", NumberString(*o.softcap)});
  }
  for (size_t side = 0; side < 2; ++side) {
    if (o.window[side] < -1) {
      ThrowInvalidArgument({n.window, "[", Str(side),
                            "]: expected -1 (unbounded) or a number >= 0, got ",
                            std::to_string(o.window[side])});
    }
  }
  if (!o.attn_mask.empty()) {
    attn_dims_ = MaskDimsOf(n.attn_mask, n.attn_mask_shape, o.attn_mask.size(),
                           o.attn_mask_shape, batch, heads, tq, tk);
    CheckMask(n.attn_mask, o.attn_mask);
    attn_mask_ = o.attn_mask;
    masked_from_ = attn_dims_.keys;
  } else if (!o.attn_mask_shape.empty()) {
    ThrowInvalidArgument({n.attn_mask_shape, ": given without ", n.attn_mask});
  }
  if (!o.bool_mask.empty()) {
    bool_dims_ = MaskDimsOf(n.bool_mask, n.bool_mask_shape, o.bool_mask.size(),
                           o.bool_mask_shape, batch, heads, tq, tk);
    bool_mask_ = o.bool_mask;
    masked_from_ = std::min(masked_from_, bool_dims_.keys);
  } else if (!o.bool_mask_shape.empty()) {
    ThrowInvalidArgument({n.bool_mask_shape, ": given without ", n.bool_mask});
  }
  if (!o.key_padding_mask.empty()) {
    CheckLength(n.key_padding_mask, o.key_padding_mask.size(), {batch, tk});
    key_padding_ = o.key_padding_mask;
  }
  if (!o.kv_lengths.empty()) {
    CheckLength(n.kv_lengths, o.kv_lengths.size(), {batch});
    for (size_t b = 0; b < batch; ++b) {
      if (o.kv_lengths[b] > tk) {
        ThrowInvalidArgument({n.kv_lengths, "[", Str(b), "]: expected at most Tk (", Str(tk),
                              "), got ", Str(o.kv_lengths[b])});
      }
    }
    key_valid_.resize(CheckedCount("key padding", {{"batch", batch}, {"Tk", tk}}, 1));
    for (size_t b = 0; b < batch; ++b) {
      for (size_t j = 0; j < tk; ++j) {
        key_valid_[b * tk + j] = j < o.kv_lengths[b] &&
                                 (key_padding_.empty() || key_padding_[b * tk + j] != 0);
      }
    }
    key_padding_ = key_valid_;
  }
  scale_ = static_cast<float>(o.scale ? *o.scale : 1.0 / std::sqrt(double(head_dim)));
  softcap_ = o.softcap ? static_cast<float>(*o.softcap) : 0.0f;
  // A bound of Tq + Tk or more bounds nothing (and would not fit a
  // ptrdiff_t in wasm32), so larger ones are clamped to it; so are query
  // offsets (in Set), past which every key or none is visible.
  const int64_t reach = static_cast<int64_t>(tq + tk);
  left_ = static_cast<ptrdiff_t>(std::min(o.window[0], reach));
  right_ = static_cast<ptrdiff_t>(std::min(o.window[1], reach));
  if (!o.query_offset.empty()) {
    if (o.query_offset.size() != 1 && o.query_offset.size() != batch) {
      ThrowInvalidArgument({n.query_offset, ": expected 1 value (every batch item's) or B = ",
                            Str(batch), " (one each), got ", Str(o.query_offset.size())});
    }
    if (o.causal == CausalAlignment::kNone && left_ < 0 && right_ < 0) {
      ThrowInvalidArgument({n.query_offset, ": given without ", n.causal, " or ", n.window,
                            ", the frontiers it places"});
    }
    query_offset_ = o.query_offset;
  }
}

// Scores scale * q . k of rows with |q_i| <= max_q and |k_i| <= max_k are at
// most |scale| * d * max_q * max_k in magnitude. Above float32's largest
// value a score (or a partial sum, soft-capped or not) could be +-inf and the
// softmax's running max would turn inf - inf into NaN, so such inputs are
// refused instead of computed wrong.
void AttentionCall::CheckScoreRange(double max_q, double max_k, const char* too_large) const {
  const double scale = std::fabs(double(scale_));
  const double bound = scale * double(head_dim_) * max_q * max_k;
  if (bound > double(std::numeric_limits<float>::max())) {
    throw std::range_error(Cat(
        {"attention scores may overflow float32: |scale| * head_dim * max|q| * max|k| = ",
         NumberString(scale), " * ", Str(head_dim_), " * ", NumberString(max_q), " * ",
         NumberString(max_k), " = ", NumberString(bound), " exceeds ",
         NumberString(std::numeric_limits<float>::max()), "; ", too_large,
         ": scale them down"}));
  }
}

double AttentionCall::HeadNs(size_t d) const {
  const bool causal = causal_ != CausalAlignment::kNone;
  double keys = double(tk_);
  if (causal) keys = std::min(keys, double(tk_) / 2 + 1);
  if (left_ >= 0) {
    const ptrdiff_t ahead = causal ? 0 : std::max<ptrdiff_t>(right_, 0);
    keys = std::min(keys, double(left_ + ahead + 1));
  }
  // Plus the head's key and value rows read once at ~20 GB/s: a decoding
  // step's attention is all cache traffic (D1 reads 3.1 MB of it for 2 x 0.2
  // MFLOP per head), which the FLOPs alone put under the parallel threshold.
  return 4.0 * double(tq_) * keys * double(d) / 40.0 + keys * 2.0 * double(d) * 4.0 / 20.0;
}

void AttentionCall::Set(AttentionArgs& a, size_t b, size_t h, size_t q0, size_t q1) const {
  // The causal mask and the window bound keys relative to one diagonal,
  // i' = i (+ Tk - Tq bottom-right, or + the item's query offset): the
  // kernel's causal bound is the window's right edge (0 when causal), its
  // sliding bound the left edge.
  const bool causal = causal_ != CausalAlignment::kNone;
  const int64_t reach = static_cast<int64_t>(tq_ + tk_);
  const ptrdiff_t diagonal =
      !query_offset_.empty()
          ? static_cast<ptrdiff_t>(
                std::clamp(query_offset_[query_offset_.size() == 1 ? 0 : b], -reach, reach))
      : causal_ == CausalAlignment::kBottomRight
          ? static_cast<ptrdiff_t>(tk_) - static_cast<ptrdiff_t>(tq_)
          : 0;
  a.tq = q1 - q0;
  a.tk = tk_;
  a.scale = scale_;
  a.softcap = softcap_;
  a.causal = causal || right_ >= 0;
  a.causal_diagonal = diagonal + static_cast<ptrdiff_t>(q0);
  a.window_right = causal ? 0 : right_;
  a.sliding = left_ >= 0;
  a.window_left = left_;
  a.key_valid = key_padding_.empty() ? nullptr : key_padding_.data() + b * tk_;
  a.masked_from = masked_from_;
  if (!attn_mask_.empty()) {
    a.additive_mask = attn_mask_.data() + attn_dims_.Offset(b, h, tq_) + q0 * attn_dims_.keys;
    a.mask_ld = attn_dims_.keys;
  }
  if (!bool_mask_.empty()) {
    a.boolean_mask = bool_mask_.data() + bool_dims_.Offset(b, h, tq_) + q0 * bool_dims_.keys;
    a.boolean_mask_ld = bool_dims_.keys;
  }
  a.scores_stage = scores_stage_;
}

}  // namespace simd_attention
