// attention(q, k, v, options): scaled dot-product attention on heads that
// are already projected (PyTorch's scaled_dot_product_attention, ONNX's
// Attention), over the module's wasm instance. Types are checked here;
// shapes and values in C++ (bindings/sdpa_binding.cc), whose messages name
// the options as the user spelt them.
import { checkObject, describe, float32, integers, optionalBoolean, optionalMask,
  optionalNumber, optionalSize, readBackend } from './arguments.js';
import { unwrap } from './errors.js';
import { OPTION_KEYS } from './option-keys.js';

// {data, shape} with data of `check`'s type.
function tensor(where, name, t, check) {
  if (t === null || typeof t !== 'object' || ArrayBuffer.isView(t) || Array.isArray(t)) {
    throw new TypeError(`${where}: ${name}: expected a tensor { data, shape: number[] }, ` +
      `got ${describe(t)}`);
  }
  return { data: check(where, `${name}.data`, t.data), shape: integers(where, `${name}.shape`, t.shape) };
}

// C++ reads an empty array as "not given", so an empty one is refused here,
// the one place that can tell them apart (as arguments.js does for masks).
function nonEmpty(where, name, v) {
  if (v !== undefined && v.length === 0) {
    throw new RangeError(`${where}: ${name}: given with no values; omit the option instead`);
  }
  return v;
}

const float32Data = (where, name, v) => nonEmpty(where, name, float32(where, name, v));
function bytes(where, name, v) {
  if (!(ArrayBuffer.isView(v) && Object.prototype.toString.call(v) === '[object Uint8Array]')) {
    throw new TypeError(`${where}: ${name}: expected a Uint8Array (1 = may attend, ` +
      `0 = masked), got ${describe(v)}`);
  }
  return nonEmpty(where, name, v);
}

// A mask given as its data alone ([Tq, Tk]) or as a tensor with its shape.
function mask(where, name, v, check) {
  if (v === undefined) return {};
  if (ArrayBuffer.isView(v)) return { data: check(where, name, v) };
  return tensor(where, name, v, check);
}


// attention() of one module (wasm instance).
export function makeScaledDotProductAttention(wasm, defaultBackend) {
  return function attention(q, k, v, options) {
    const where = 'attention';
    const o = options === undefined ? {} : options;
    checkObject(where, 'options', o, OPTION_KEYS.AttentionOptions);
    if (o.causal !== undefined && typeof o.causal !== 'string') {
      throw new TypeError(`${where}: options.causal: expected 'none', 'top-left' or ` +
        `'bottom-right', got ${describe(o.causal)}`);
    }
    const attnMask = mask(where, 'options.attnMask', o.attnMask, float32Data);
    const boolMask = mask(where, 'options.boolMask', o.boolMask, bytes);
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
      kvLengths: o.kvLengths === undefined ? undefined
        : nonEmpty(where, 'options.kvLengths', integers(where, 'options.kvLengths', o.kvLengths)),
      numHeads: optionalSize(where, 'options.numHeads', o.numHeads),
      numKvHeads: o.numKvHeads === undefined ? undefined
        : optionalSize(where, 'options.numKvHeads', o.numKvHeads),
      returnAttnWeights: optionalBoolean(where, 'options.returnAttnWeights',
        o.returnAttnWeights, false),
      returnScores: optionalBoolean(where, 'options.returnScores', o.returnScores, false),
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
