// attention(q, k, v, options): scaled dot-product attention on heads that
// are already projected (PyTorch's scaled_dot_product_attention, ONNX's
// Attention), over the module's wasm instance. Types are checked here;
// shapes and values in C++ (bindings/sdpa_binding.cc), whose messages name
// the options as the user spelt them.
import { additiveValues, booleanValues, describe, float32, integers, optionalBoolean,
  optionalLengths, optionalMask, optionalNumber, optionalSize, optionsObject, readBackend,
  readQueryOffset, readReturnScores, shapedMask, tensor } from './arguments.js';
import { unwrap } from './errors.js';
import { OPTION_KEYS } from './option-keys.js';

// attention() of one module (wasm instance).
export function makeScaledDotProductAttention(wasm, defaultBackend) {
  return function attention(q, k, v, options) {
    const where = 'attention';
    const o = optionsObject(where, options, OPTION_KEYS.AttentionOptions);
    if (o.causal !== undefined && typeof o.causal !== 'string') {
      throw new TypeError(`${where}: options.causal: expected 'none', 'top-left' or ` +
        `'bottom-right', got ${describe(o.causal)}`);
    }
    const attnMask = shapedMask(where, 'options.attnMask', o.attnMask, additiveValues);
    const boolMask = shapedMask(where, 'options.boolMask', o.boolMask, booleanValues);
    const heads = [['q', q], ['k', k], ['v', v]].map(([name, t]) =>
      tensor(where, name, t, (w, n, d) => float32(w, n, d)));
    const r = unwrap(wasm, where, wasm.attention(...heads, {
      causal: o.causal ?? 'none',
      scale: optionalNumber(where, 'options.scale', o.scale),
      softcap: optionalNumber(where, 'options.softcap', o.softcap),
      window: o.window === undefined ? undefined
        : integers(where, 'options.window', o.window, 2),
      attnMask: attnMask.data,
      attnMaskShape: attnMask.shape,
      boolMask: boolMask.data,
      boolMaskShape: boolMask.shape,
      keyPaddingMask: optionalMask(where, 'options.keyPaddingMask', o.keyPaddingMask),
      kvLengths: optionalLengths(where, 'options.kvLengths', o.kvLengths),
      queryOffset: readQueryOffset(where, o.queryOffset),
      numHeads: optionalSize(where, 'options.numHeads', o.numHeads),
      numKvHeads: o.numKvHeads === undefined ? undefined
        : optionalSize(where, 'options.numKvHeads', o.numKvHeads),
      returnAttnWeights: optionalBoolean(where, 'options.returnAttnWeights',
        o.returnAttnWeights, false),
      ...readReturnScores(where, o.returnScores),
      backend: readBackend(where, o, defaultBackend),
    }));
    const out = {
      output: {
        data: r.output,
        shape: heads[0].shape.length === 4 ? [r.batch, r.heads, r.tq, r.headDimV]
          : [r.batch, r.tq, r.heads * r.headDimV],
      },
    };
    const probsShape = [r.batch, r.heads, r.tq, r.tk];
    if (r.attnWeights) out.attnWeights = { data: r.attnWeights, shape: probsShape };
    if (r.scores) out.scores = { data: r.scores, shape: [...probsShape] };
    return out;
  };
}
