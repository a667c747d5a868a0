// torch.nn.MultiheadAttention's state_dict -> the X @ W weights of
// MhaWeights. Layout conversion only (transposes and row slices), no
// arithmetic, so the result is bit-exact.
//
// PyTorch stores Linear weights as [out, in] (y = x W^T + b); this library
// uses X @ W with W = [in, out], i.e. the transpose. nn.MultiheadAttention
// keeps q, k and v either packed in in_proj_weight [3E, E] (rows: q; k; v)
// when kdim == vdim == embed_dim, or separately as q_proj_weight [E, E],
// k_proj_weight [E, kdim], v_proj_weight [E, vdim]. in_proj_bias [3E] is
// always packed. out_proj.weight is [E, E], out_proj.bias [E].
// Here the head widths may differ (head_dim_v): q/k rows are H*d_k, v rows
// H*d_v, and out_proj.weight is [E, H*d_v].
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "simd_attention/multi_head_attention.h"

namespace simd_attention {

// The state_dict entries, flat and row-major in PyTorch's layout; an entry
// that is not in the state_dict stays std::nullopt.
struct TorchMhaState {
  std::optional<std::span<const float>> in_proj_weight, q_proj_weight,
      k_proj_weight, v_proj_weight, in_proj_bias, out_proj_weight,
      out_proj_bias;
};

// Owns converted weights; weights() views them (valid while this lives).
struct OwnedMhaWeights {
  std::vector<float> w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o;
  MhaWeights weights() const;
};

// The weights of an attention with `config` (defaults of kdim, vdim and
// head_dim_v resolved as MultiHeadAttention does). Throws
// std::invalid_argument naming the state_dict entry, the expected and the
// given size for anything that does not fit: either in_proj_weight or all
// three separate projections, out_proj.weight always, and the biases exactly
// when config.bias. Values are not checked here (SetWeights does).
OwnedMhaWeights FromTorchState(const MhaConfig& config,
                               const TorchMhaState& state);

}  // namespace simd_attention
