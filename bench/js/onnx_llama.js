// A Llama-shaped decoder stack as one ONNX graph, built in memory with
// onnx.js's protobuf helpers, as onnxruntime's own Llama exports
// (onnxruntime-genai's builder) write it: per layer
//
//   SimplifiedLayerNormalization (RMSNorm) -> MatMul q, k, v ->
//   com.microsoft GroupQueryAttention (grouped-query, rotate-half RoPE from
//   cos/sin caches, causal over past + new keys) -> MatMul o -> Add;
//   SimplifiedLayerNormalization -> MatMul gate, up -> gate * Sigmoid(gate)
//   * up (SwiGLU) -> MatMul down -> Add
//
// and a last SimplifiedLayerNormalization. The weights are the ones our
// TransformerStack.setWeights takes (X @ W, no biases), so both compute the
// same function. With `form: 'integer'` the weights are int8, quantized as
// our package quantizes them (int8.js), and every MatMul is
// DynamicQuantizeLinear (the activation to uint8, one scale and zero point
// per tensor, shared by the MatMuls that read it) -> MatMulInteger -> Cast
// -> Mul by the activation scale times the column scales, as onnxruntime's
// quantize_dynamic writes transformers.js's q8 models (its optimizer fuses
// them into DynamicQuantizeMatMul). Its MatMulNBits with 8 bits
// (onnxruntime-genai's int8) ran this stack some 8x slower than the float32
// graph in wasm, so it is not among them.
//
// Inputs: "x" [1, T, d]; per layer l "past_key_l", "past_value_l" [1, Hkv,
// P, dh] (BNSH, keys after RoPE, as GroupQueryAttention returns them);
// "seqlens_k" [1] int32 (P + T - 1) and "total_sequence_length" (scalar
// int32, P + T). Outputs: "output" [1, T, d] and "present_key_l",
// "present_value_l" [1, Hkv, P + T, dh].
import { FLOAT, GraphBuilder, INT32 } from './onnx.js';
import { quantizeInt8 } from './int8.js';

// x [.., K] @ w [K, N] in the 'integer' form; quantized: a Map of the
// activations already quantized.
function matMulInteger(g, quantized, x, name, w, k, n) {
  if (!quantized.has(x)) quantized.set(x, g.op('DynamicQuantizeLinear', [x], {}, { outputs: 3 }));
  const [xq, xScale, xZero] = quantized.get(x);
  const { values, scales } = quantizeInt8(w, k, n);
  const product = g.op('MatMulInteger', [xq, g.int8Init(name, [k, n], values),
    xZero, g.int8Init(`${name}_zero`, [n], new Int8Array(n))]);
  const scale = g.op('Mul', [xScale, g.floatInit(`${name}_scale`, [n], scales)]);
  return g.op('Mul', [g.op('Cast', [product], { to: { i: FLOAT } }), scale]);
}

/**
 * cfg: { dModel, numHeads, numKvHeads, headDim, ffnDim, numLayers, eps,
 * ropeBase, maxPositions }; weights: { layers: [{ sublayers: [{ norm,
 * attention }, { norm, gatedFfn }] }], finalNorm }.
 */
export function llamaStackModel(cfg, weights, { form } = {}) {
  const { dModel: d, numHeads: H, numKvHeads: Hkv, headDim: dh, ffnDim: f, numLayers, eps } = cfg;
  if (numLayers !== weights.layers.length) {
    throw new Error(`llamaStackModel: numLayers ${numLayers}, but weights for ${weights.layers.length} layers`);
  }
  const g = new GraphBuilder();
  const rmsNorm = (x, name, gamma) => g.op('SimplifiedLayerNormalization',
    [x, g.floatInit(name, [d], gamma)], { axis: { i: -1 }, epsilon: { f: eps } });
  const quantized = new Map();
  const matmul = {
    integer: (x, name, w, k, n) => matMulInteger(g, quantized, x, name, w, k, n),
  }[form] ?? ((x, name, w, k, n) => g.op('MatMul', [x, g.floatInit(name, [k, n], w)]));

  // The rotary caches: cos and sin of position p times base^(-2i/dh), i < dh/2.
  const half = dh / 2;
  const cos = new Float32Array(cfg.maxPositions * half);
  const sin = new Float32Array(cfg.maxPositions * half);
  for (let p = 0; p < cfg.maxPositions; p++) {
    for (let i = 0; i < half; i++) {
      const angle = p * cfg.ropeBase ** (-2 * i / dh);
      cos[p * half + i] = Math.cos(angle);
      sin[p * half + i] = Math.sin(angle);
    }
  }
  const cosCache = g.floatInit('cos_cache', [cfg.maxPositions, half], cos);
  const sinCache = g.floatInit('sin_cache', [cfg.maxPositions, half], sin);
  const seqlensK = g.input('seqlens_k', [1], INT32);
  const total = g.input('total_sequence_length', [], INT32);

  let h = g.input('x', [1, 'T', d]);
  weights.layers.forEach((layer, l) => {
    const [a, m] = layer.sublayers;
    const n = rmsNorm(h, `l${l}_attn_norm`, a.norm.gamma);
    const q = matmul(n, `l${l}_wq`, a.attention.wQ, d, H * dh);
    const k = matmul(n, `l${l}_wk`, a.attention.wK, d, Hkv * dh);
    const v = matmul(n, `l${l}_wv`, a.attention.wV, d, Hkv * dh);
    const pastK = g.input(`past_key_${l}`, [1, Hkv, 'P', dh]);
    const pastV = g.input(`past_value_${l}`, [1, Hkv, 'P', dh]);
    const [z] = g.op('GroupQueryAttention', [q, k, v, pastK, pastV, seqlensK, total, cosCache, sinCache], {
      num_heads: { i: H }, kv_num_heads: { i: Hkv }, do_rotary: { i: 1 }, rotary_interleaved: { i: 0 },
      scale: { f: 1 / Math.sqrt(dh) },
    }, { domain: 'com.microsoft', outputs: 3 });
    const node = g.nodes[g.nodes.length - 1];
    node.outs[1] = `present_key_${l}`;
    node.outs[2] = `present_value_${l}`;
    g.output(`present_key_${l}`, [1, Hkv, 'S', dh]);
    g.output(`present_value_${l}`, [1, Hkv, 'S', dh]);
    h = g.op('Add', [h, matmul(z, `l${l}_wo`, a.attention.wO, H * dh, d)]);

    const n2 = rmsNorm(h, `l${l}_ffn_norm`, m.norm.gamma);
    const gate = matmul(n2, `l${l}_wgate`, m.gatedFfn.wGate, d, f);
    const up = matmul(n2, `l${l}_wup`, m.gatedFfn.wUp, d, f);
    const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);
    h = g.op('Add', [h, matmul(act, `l${l}_wdown`, m.gatedFfn.wDown, f, d)]);
  });
  rmsNorm(h, 'final_norm', weights.finalNorm.gamma);
  g.nodes[g.nodes.length - 1].outs[0] = 'output';
  g.output('output', [1, 'T', d], FLOAT);
  return g.encode([
    ['', 17],
    ['com.microsoft', 1],
  ]);
}
