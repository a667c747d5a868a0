#include "simd_attention/scaled_dot_product_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "api/attention_call.h"
#include "checks/checked_size.h"
#include "dispatch/kernel_table.h"
#include "kernels/attention.h"
#include "simd_attention/thread_pool.h"
#include "threading/parallel.h"
#include "threading/runs_on.h"
#include "checks/validate.h"

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
    ThrowInvalidArgument({what, ": expected every dimension > 0, got shape ", ShapeOf(t, layout)});
  }
  CheckLength(what, t.data.size(), {t.batch, t.heads, t.tokens, t.head_dim});
  CheckFinite(what, t.data);
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
    ThrowInvalidArgument({heads_name, ": must divide the ", Str(features), " ", what,
                          " features, got ", Str(heads)});
  }
  return {data, batch, heads, tokens, features / heads};
}

ScaledDotProductAttention::ScaledDotProductAttention(const SdpaConfig& config)
    : ScaledDotProductAttention(config, BestKernels(config.backend)) {}

ScaledDotProductAttention::ScaledDotProductAttention(const SdpaConfig& config,
                                                     const KernelTable& kernels,
                                                     std::shared_ptr<ThreadPool> pool)
    : config_(config), kernels_(&kernels), pool_(std::move(pool)) {
  ResolveNames(config_);
  if (config_.threads == 0) config_.threads = ThreadPool::DefaultThreads();
  pool_ = RunsOn(config_, kernels, std::move(pool_));
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
    ThrowInvalidArgument({"k, v: expected the batch of q (", Str(batch), ")", shapes()});
  }
  if (v.heads != kv_heads || v.tokens != tk) {
    ThrowInvalidArgument(
        {"v: expected the heads and tokens of k (", Str(kv_heads), ", ", Str(tk), ")", shapes()});
  }
  if (k.head_dim != d) {
    ThrowInvalidArgument({"k: expected the head width of q (", Str(d), ")", shapes()});
  }
  if (heads % kv_heads != 0) {
    ThrowInvalidArgument({"k: its heads (", Str(kv_heads), ") must divide the heads of q (",
                          Str(heads), "): query head h uses key/value head h / (Hq / Hkv)",
                          shapes()});
  }
  const AttentionCall call(n, CallOptionsOf(o, o.causal), batch, heads, tq, tk, d);
  call.CheckScoreRange(MaxAbs(q.data), MaxAbs(k.data), "q and k are too large in magnitude");

  SdpaResult r{.batch = batch, .heads = heads, .tq = tq, .tk = tk, .head_dim_v = dv};
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
  // Floats of a padded copy of `rows` head rows, none where no copy is made.
  const auto copy_floats = [](bool pad, const char* what, size_t rows, size_t width) -> size_t {
    return pad ? CheckedCount(what, {{"rows", rows}, {"padded head width", width}}) : 0;
  };
  const size_t q_floats = copy_floats(pad_k, "padded q", batch * heads * tq, dk_pad);
  const size_t k_floats = copy_floats(pad_k, "padded k", batch * kv_heads * tk, dk_pad);
  const size_t v_floats = copy_floats(pad_v, "padded v", batch * kv_heads * tk, dv_pad);
  const size_t z_floats = copy_floats(pad_v, "padded output", batch * heads * tq, dv_pad);
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

  // Work items: (batch, head, chunk of whole query blocks), as in
  // MultiHeadAttention: a chunk starting at query q0 shifts the diagonal by
  // q0 and so computes what the whole head would.
  const size_t group = heads / kv_heads;
  ParallelAttention(*pool_, batch, heads, tq, call.HeadNs(dk_pad),
                    [&](size_t b, size_t h, size_t q0, size_t q1, size_t thread) {
    const size_t g = h / group;
    AttentionArgs a{};
    a.q = qh.Head(b, h) + q0 * qh.ld;
    a.ldq = qh.ld;
    a.k = kh.Head(b, g);
    a.ldk = kh.ld;
    a.v = vh.Head(b, g);
    a.ldv = vh.ld;
    a.dk = dk_pad;
    a.dv = dv_pad;
    call.Set(a, b, h, q0, q1);
    a.z = z_head(b, h) + q0 * ldz;
    a.ldz = ldz;
    const size_t probs_at = ((b * heads + h) * tq + q0) * tk;
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
  CheckComputed(kAttentionOutput, r.output, "v is too large in magnitude");
  return r;
}

}  // namespace simd_attention
