// An nn.MultiheadAttention state_dict that a synchronous MultiHeadAttention
// has already accepted (src/api/pytorch_weights.cc judges and converts it
// there), transposed into setWeights' X @ W layout, for the pool, which
// splits the result by heads: the C++ conversion takes whole attentions only.
import { transposeRows } from './pytorch-layer-state.js';

// config: the attention's resolved config.
export function attentionWeightsFromPyTorch(config, state) {
  const { dModel: e, numHeads, numKvHeads, headDim, headDimV, kDim, vDim } = config;
  const [q, k, v] = [numHeads * headDim, numKvHeads * headDim, numKvHeads * headDimV];
  const packed = state.in_proj_weight;
  const weights = packed === undefined
    ? {
      wQ: transposeRows(state.q_proj_weight, 0, q, e),
      wK: transposeRows(state.k_proj_weight, 0, k, kDim),
      wV: transposeRows(state.v_proj_weight, 0, v, vDim),
    }
    : {
      wQ: transposeRows(packed, 0, q, e),
      wK: transposeRows(packed, q, k, e),
      wV: transposeRows(packed, q + k, v, e),
    };
  weights.wO = transposeRows(state['out_proj.weight'] ?? state.out_proj_weight, 0, e,
    numHeads * headDimV);
  if (config.bias) {
    const b = state.in_proj_bias;
    Object.assign(weights, { bQ: b.slice(0, q), bK: b.slice(q, q + k), bV: b.slice(q + k),
      bO: state['out_proj.bias'] ?? state.out_proj_bias });
  }
  return weights;
}
