// MultiHeadAttention's training state and backward pass: the gradients of
// the inputs and of every weight and bias, given dL/d(output).
//
// Forward: P = Xq Wq + bq, Xk Wk + bk, Xv Wv + bv; Q and K normalized per
// head (QK-norm) and rotated (RoPE) when configured; Z = attention(Q, K, V),
// Y = Z Wo + bo. Backward, in the padded head layout of the forward:
//   dWo = Z^T dY, dbo = 1^T dY, dZ = dY Wo^T
//   dQ, dK, dV = the attention kernel's backward (kernels/attention_backward.h)
//   RoPE: dQ, dK turned back by the same angles (a rotation's transpose)
//   QK-norm: RMSNorm's backward over every head, given the projections
//     before it, which the backward projects again rather than keep
//   dW = X^T dP, db = 1^T dP, dX = dP W^T for each projection P
// Every product is the GEMM kernel on packed panels: W^T is packed once per
// SetWeights; X^T with a row of ones under it is the A of one GEMM that
// yields dW and db together, its B the packed gradient.
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "api/attention_call.h"
#include "checks/checked_size.h"
#include "dispatch/dispatch.h"
#include "dispatch/kernel_table.h"
#include "training/gradients.h"
#include "simd_attention/multi_head_attention.h"
#include "simd_attention/thread_pool.h"
#include "threading/parallel.h"
#include "checks/validate.h"

namespace simd_attention {
namespace {

template <class T>
std::vector<T> Copy(std::span<const T> s) {
  return std::vector<T>(s.begin(), s.end());
}

}  // namespace

void MultiHeadAttention::RefuseTraining(const char* forward) {
  throw std::invalid_argument(Cat({"options.training: ", forward,
                                   " keeps nothing for Backward, expected false, got true "
                                   "(train through Forward(x) or Forward(query, key, value))"}));
}

void MultiHeadAttention::ReleaseTraining() { training_.reset(); }

void MultiHeadAttention::SaveForBackward(const Tensor3& query, const Tensor3& key,
                                         const Tensor3& value, const MhaOptions& o) {
  if (config_.weights != WeightType::kF32) {
    // An optimizer updates the float32 panels in place; narrow ones would
    // round every step away.
    throw std::invalid_argument(Cat({"options.training: training expects ",
                                     ConfigName(CppArgNames().weights), " float32, got ",
                                     StorageTypeName(config_.weights)}));
  }
  if (training_ == nullptr) training_ = MakeTrainingOnly<TrainingState>();
  TrainingState& t = *training_;
  t.ready = false;
  t.self = query.data.data() == key.data.data() && key.data.data() == value.data.data() &&
           query.data.size() == key.data.size() && key.data.size() == value.data.size();
  t.batch = query.batch;
  t.tq = query.tokens;
  t.tk = key.tokens;
  // As Forward places them: self-attention's keys at the queries' positions.
  t.query_pos0 = o.position_offset;
  t.key_pos0 = query.data.data() == key.data.data() && query.data.size() == key.data.size()
                   ? o.position_offset
                   : 0;
  t.query.assign(query.data.begin(), query.data.end());
  t.key.clear();
  t.value.clear();
  if (!t.self) {
    t.key.assign(key.data.begin(), key.data.end());
    t.value.assign(value.data.begin(), value.data.end());
  }
  t.softmax_stats.resize(CheckedCount("softmax statistics",
                                       {{"batch", query.batch},
                                        {config_.names->num_heads, config_.num_heads},
                                        {"query tokens", query.tokens},
                                        {"statistics per query", 2}}));
  t.attn_mask = Copy(o.attn_mask);
  t.bool_mask = Copy(o.bool_mask);
  t.key_padding_mask = Copy(o.key_padding_mask);
  t.kv_lengths = Copy(o.kv_lengths);
  t.query_offset = Copy(o.query_offset);
  t.options = o;
  t.options.attn_mask = {};
  t.options.bool_mask = {};
  t.options.key_padding_mask = {};
  t.options.kv_lengths = {};
  t.options.query_offset = {};
}

void MultiHeadAttention::TrainableParameters(std::vector<Parameter>& out,
                                             std::string_view prefix) {
  if (backward_ == nullptr || !backward_->has_gradients) {
    ThrowNoGradients();
  }
  BackwardState& b = *backward_;
  const ArgNames& n = *config_.names;
  const std::pair<const char*, const char*> names[] = {
      {n.w_q, n.b_q}, {n.w_k, n.b_k}, {n.w_v, n.b_v}, {n.w_o, n.b_o}};
  const std::pair<PackedMatrix*, PackedMatrix*> matrices[] = {
      {&q_, &b.grad_q}, {&k_, &b.grad_k}, {&v_, &b.grad_v}, {&o_, &b.grad_o}};
  for (size_t i = 0; i < 4; ++i) {
    auto [p, g] = matrices[i];
    out.push_back({p->w.data(), g->w.data(), p->w.size(), Cat({prefix, names[i].first})});
    if (config_.bias) {
      out.push_back(
          {p->bias.data(), g->bias.data(), p->bias.size(), Cat({prefix, names[i].second})});
    }
  }
  if (config_.qk_norm.enabled) {
    // A kind stored as gamma - 1 updates what was given (ParametersUpdated
    // adds the 1 again).
    const bool stored = Traits(config_.qk_norm.kind).plus_one;
    std::vector<float>& q_norm = stored ? stored_q_norm_ : q_norm_;
    std::vector<float>& k_norm = stored ? stored_k_norm_ : k_norm_;
    out.push_back({q_norm.data(), b.grad_q_norm.data(), q_norm.size(), Cat({prefix, n.q_norm})});
    out.push_back({k_norm.data(), b.grad_k_norm.data(), k_norm.size(), Cat({prefix, n.k_norm})});
  }
}

void MultiHeadAttention::ParametersUpdated() {
  if (backward_ != nullptr) backward_->has_transposed = false;
  if (config_.qk_norm.enabled && Traits(config_.qk_norm.kind).plus_one) {
    for (size_t i = 0; i < q_norm_.size(); ++i) {
      q_norm_[i] = stored_q_norm_[i] + 1.0f;
      k_norm_[i] = stored_k_norm_[i] + 1.0f;
    }
  }
  ReleaseTraining();
}

void MultiHeadAttention::UnrotateGradient(float* d, size_t batch, size_t tokens, size_t heads,
                                          size_t ld, size_t pos0) {
  const RopeConfig& rope = config_.rope;
  const bool interleaved = rope.style == RopeStyle::kInterleaved;
  const RopeArgs args{.x = d,
                      .ld = ld,
                      .tokens = 1,
                      .heads = heads,
                      .head_stride = layout_.dk_pad,
                      .rotary_dim = rope.rotary_dim,
                      .interleaved = interleaved,
                      .table = RopeAngles(pos0, tokens),
                      .table_ld = RopeTableRow(rope.rotary_dim, interleaved)};
  const TrainingKernels& training = TrainingKernelsFor(*kernels_);
  // Rows are independent: a row at a time, each with its position's angles.
  const size_t rows = batch * tokens;
  const Split split = SplitWork(*pool_, 1.0 * double(rows * heads * rope.rotary_dim), rows);
  ParallelRanges(*pool_, rows, split, [&](size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r) {
      RopeArgs a = args;
      a.x = d + r * ld;
      a.table = args.table + (r % tokens) * args.table_ld;
      training.rope_backward(a);
    }
  });
}

const float* MultiHeadAttention::NormBackward(const float* x, size_t rows,
                                              const PackedMatrix& projection, size_t heads,
                                              size_t ld, const std::vector<float>& scales,
                                              const float* d_normed,
                                              std::vector<float>& packed_d_scales,
                                              std::vector<float>& d_scales) {
  BackwardState& state = *backward_;
  const size_t n = rows * ld;
  if (state.pre_norm.size() < n) state.pre_norm.resize(n);
  if (state.d_pre_norm.size() < n) state.d_pre_norm.resize(n);
  // The projection as the forward's GEMM wrote it, before its epilogue.
  ParallelMultiplyPacked(*pool_, *kernels_, x, rows, projection, state.pre_norm.data(), ld);
  // Every head a row of head_dim, a padded head apart. The kernel never
  // writes the padding, so it stays zero (as resize made it) in the
  // gradient, as the padded weight columns' gradients must be.
  const size_t d = config_.head_dim;
  packed_d_scales.resize(d);
  RmsNormRowsBackward(*pool_, *kernels_, state.pre_norm.data(), rows * heads, d, layout_.dk_pad,
                      scales.data(), static_cast<float>(config_.qk_norm.eps), d_normed,
                      state.d_pre_norm.data(), state.norm_dy_xhat, packed_d_scales.data());
  d_scales.assign(packed_d_scales.begin(), packed_d_scales.end());
  return state.d_pre_norm.data();
}

MhaGradients MultiHeadAttention::Backward(const Tensor3& d_output) {
  MhaGradients g;
  Backward(d_output, g);
  return g;
}

void MultiHeadAttention::Backward(const Tensor3& d_output_tensor, MhaGradients& g) {
  if (training_ == nullptr || !training_->ready) {
    ThrowNoTrainingForward();
  }
  const TrainingState& t = *training_;
  const MhaConfig& c = config_;
  CheckOutputGradient(c.names->d_output, d_output_tensor, t.batch, t.tq, c.d_model);
  const std::span<const float> d_output = d_output_tensor.data;
  if (backward_ == nullptr) backward_ = MakeTrainingOnly<BackwardState>();
  BackwardState& state = *backward_;
  state.has_gradients = false;  // until this one is complete
  if (!state.has_transposed) {
    state.q_t = PackTransposed(*kernels_, q_);
    state.k_t = PackTransposed(*kernels_, k_);
    state.v_t = PackTransposed(*kernels_, v_);
    state.o_t = PackTransposed(*kernels_, o_);
    state.has_transposed = true;
  }
  MhaOptions options = t.options;
  options.attn_mask = t.attn_mask;
  options.bool_mask = t.bool_mask;
  options.key_padding_mask = t.key_padding_mask;
  options.kv_lengths = t.kv_lengths;
  options.query_offset = t.query_offset;
  const Tensor3 query{t.query, t.batch, t.tq, c.d_model};
  const AttentionCall call = Call(query, t.tk, options);

  const size_t heads = c.num_heads, kv_heads = c.num_kv_heads, group = heads / kv_heads;
  const size_t batch = t.batch, tq = t.tq, tk = t.tk;
  const size_t dk = layout_.dk_pad, dv = layout_.dv_pad;
  const size_t ld_q = heads * dk, ld_z = heads * dv;
  const size_t ld_k = layout_.key_row(), ld_v = layout_.value_row();
  const size_t rows_q = batch * tq, rows_k = batch * tk;
  // The record's projections (as Attend laid them out in its workspaces).
  const float* q = t.projected.data();
  const float* z = q + rows_q * ld_q;
  const float* k = t.projected_kv.data();
  const float* v = k + rows_k * ld_k;
  const std::span<const float> xq = t.query;
  const std::span<const float> xk = t.self ? xq : std::span<const float>(t.key);
  const std::span<const float> xv = t.self ? xq : std::span<const float>(t.value);

  const TrainingKernels& training = TrainingKernelsFor(*kernels_);
  const size_t scratch = training.attention_backward_scratch_floats(dk, dv);
  const size_t need =
      CheckedCount("attention gradients", {{"batch * query tokens", rows_q},
                                           {"padded dZ and dQ rows", ld_z + ld_q}}) +
      CheckedCount("key and value gradients", {{"batch * key tokens", rows_k},
                                               {"padded dK and dV rows", ld_k + ld_v}}) +
      scratch * pool_->threads();
  if (state.grad_workspace.size() < need) state.grad_workspace.resize(need);
  float* dz = state.grad_workspace.data();
  float* dq = dz + rows_q * ld_z;
  float* dkey = dq + rows_q * ld_q;
  float* dval = dkey + rows_k * ld_k;
  float* attention_scratch = dval + rows_k * ld_v;
  std::fill_n(dkey, rows_k * (ld_k + ld_v), 0.0f);

  // W_O: dWo, dbo from Z^T dY; dZ = dY Wo^T.
  const float* o_grads = WeightGradients(*pool_, *kernels_, state.weight_workspace, z, rows_q, ld_z,
                                         c.bias, d_output.data(), c.d_model);
  PackGradient(*kernels_, o_grads, ld_z, c.d_model, c.bias, state.grad_o.w, state.grad_o.bias);
  const HeadDims model{1, c.d_model, c.d_model};
  Unpad(o_grads, c.d_model, {heads, c.head_dim_v, dv}, model, g.d_w_o);
  if (c.bias) Unpad(o_grads + ld_z * c.d_model, c.d_model, {1, 1, 1}, model, g.d_b_o);
  ParallelMultiplyPacked(*pool_, *kernels_, d_output.data(), rows_q, state.o_t, dz, ld_z);

  // The attention: a task per (batch item, key/value head), whose query
  // heads add into its dK and dV in turn, so the sums never depend on threads.
  const size_t items = batch * kv_heads;
  const double ns = 2.5 * call.HeadNs(dk) * double(group * items);
  const Split split = SplitWork(*pool_, ns, items);
  const size_t tasks = split.tasks;
  pool_->Run(tasks, split.threads, [&](size_t task, size_t thread) {
    for (size_t item = items * task / tasks; item < items * (task + 1) / tasks; ++item) {
      const size_t b = item / kv_heads, kvh = item % kv_heads;
      for (size_t h = kvh * group; h < (kvh + 1) * group; ++h) {
        AttentionBackwardArgs a{};
        AttentionArgs& f = a.forward;
        // Each gradient is laid out as its tensor: one offset and stride serve both.
        const size_t at_q = b * tq * ld_q + h * dk, at_z = b * tq * ld_z + h * dv;
        const size_t at_k = b * tk * ld_k + kvh * dk, at_v = b * tk * ld_v + kvh * dv;
        f.q = q + at_q;
        f.k = k + at_k;
        f.v = v + at_v;
        f.z = const_cast<float*>(z) + at_z;
        f.ldq = a.ld_d_q = ld_q;
        f.ldk = a.ld_d_k = ld_k;
        f.ldv = a.ld_d_v = ld_v;
        f.ldz = a.ld_d_out = ld_z;
        f.dk = dk;
        f.dv = dv;
        call.Set(f, b, h, 0, tq);
        a.softmax_stats = t.softmax_stats.data() + (b * heads + h) * tq * 2;
        a.d_out = dz + at_z;
        a.d_q = dq + at_q;
        a.d_k = dkey + at_k;
        a.d_v = dval + at_v;
        a.scratch = attention_scratch + thread * scratch;
        training.attention_backward(a);
      }
    }
  });

  // RoPE, then QK-norm, backwards: dQ and dK become the gradients of the
  // projections.
  const float* dq_projected = dq;
  const float* dk_projected = dkey;
  g.d_q_norm.clear();
  g.d_k_norm.clear();
  if (c.rope.style != RopeStyle::kNone) {
    UnrotateGradient(dq, batch, tq, heads, ld_q, t.query_pos0);
    UnrotateGradient(dkey, batch, tk, kv_heads, ld_k, t.key_pos0);
  }
  if (c.qk_norm.enabled) {
    dq_projected = NormBackward(xq.data(), rows_q, q_, heads, ld_q, q_norm_, dq,
                                state.grad_q_norm, g.d_q_norm);
    // The gradient of Q before the norm stays in d_pre_norm while K's
    // takes the other buffers: dQ's own storage holds it from here.
    std::copy_n(dq_projected, rows_q * ld_q, dq);
    dq_projected = dq;
    dk_projected = NormBackward(xk.data(), rows_k, k_, kv_heads, ld_k, k_norm_, dkey,
                                state.grad_k_norm, g.d_k_norm);
  }

  // The projections: dW, db and dX of each.
  struct Projection {
    std::span<const float> x;
    size_t in, rows, heads, d, pad;
    const float* d_out;
    const PackedMatrix& transposed;
    PackedMatrix& packed_gradient;
    std::vector<float>&d_x, &d_w, &d_b;
  };
  const Projection projections[] = {
      {xq, c.d_model, rows_q, heads, c.head_dim, dk, dq_projected, state.q_t, state.grad_q,
       g.d_query, g.d_w_q, g.d_b_q},
      {xk, c.kdim, rows_k, kv_heads, c.head_dim, dk, dk_projected, state.k_t, state.grad_k,
       g.d_key, g.d_w_k, g.d_b_k},
      {xv, c.vdim, rows_k, kv_heads, c.head_dim_v, dv, dval, state.v_t, state.grad_v, g.d_value, g.d_w_v,
       g.d_b_v}};
  for (const Projection& p : projections) {
    const size_t n = p.heads * p.pad;
    const float* grads = WeightGradients(*pool_, *kernels_, state.weight_workspace, p.x.data(),
                                         p.rows, p.in, c.bias, p.d_out, n);
    PackGradient(*kernels_, grads, p.in, n, c.bias, p.packed_gradient.w, p.packed_gradient.bias);
    const HeadDims columns{p.heads, p.d, p.pad};
    Unpad(grads, n, {1, p.in, p.in}, columns, p.d_w);
    if (c.bias) Unpad(grads + p.in * n, n, {1, 1, 1}, columns, p.d_b);
    Sized(p.d_x, p.x.size());
    ParallelMultiplyPacked(*pool_, *kernels_, p.d_out, p.rows, p.transposed, p.d_x.data(), p.in);
  }
  g.d_input.clear();
  if (t.self) {
    Sized(g.d_input, xq.size());
    kernels_->add(g.d_query.data(), g.d_key.data(), xq.size(), g.d_input.data());
    kernels_->add(g.d_input.data(), g.d_value.data(), xq.size(), g.d_input.data());
  }
  if (!c.bias) {
    for (std::vector<float>* b : {&g.d_b_q, &g.d_b_k, &g.d_b_v, &g.d_b_o}) b->clear();
  }
  for (const std::vector<float>* d : {&g.d_query, &g.d_key, &g.d_value, &g.d_w_q, &g.d_w_k,
                                      &g.d_w_v, &g.d_w_o, &g.d_q_norm, &g.d_k_norm}) {
    CheckComputed("the gradients", *d, kGradientTooLarge);
  }
  state.has_gradients = true;
}

}  // namespace simd_attention
