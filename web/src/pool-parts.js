// What a pool worker runs in its module's wasm that the module's public API
// has not: some hidden units of a layer's FFN (FfnBinding in
// bindings/layer_binding.cc), the residual sum and LayerNorm around one
// sublayer of a split layer (SublayerNormBinding in
// bindings/sublayer_norm_binding.cc) and the sum of a split call's partial
// outputs (sumPartials, bindings/partial_sum_binding.cc).
// createAttentionModule registers its module's wasm, and only pool-worker.js
// asks. The pool hands them weights and rows of a layer whose config the
// synchronous objects have accepted; C++ checks the rest.
import { glueMatrix } from './arguments.js';
import { unwrap } from './errors.js';
import { readTensor } from './tensors.js';

const wasmOf = new WeakMap(); // module -> its wasm

export function registerPoolParts(module, wasm) {
  wasmOf.set(module, wasm);
}

// A wasm object of class `Binding` made from `config`, deleted if C++
// refused to make it.
function make(wasm, Binding, kind, config) {
  const raw = new Binding(config);
  try {
    unwrap(wasm, kind, raw.takeError());
  } catch (e) {
    raw.delete();
    throw e;
  }
  return raw;
}

const PARTS = {
  // config { dModel, ffnDim (the shard's units), activation, backend, weights }
  FeedForward(wasm, config) {
    const raw = make(wasm, wasm.FfnBinding, 'FeedForward', config);
    const where = 'FeedForward';
    return {
      // { w1 [dModel, units], b1 [units], w2 [units, dModel], b2 [dModel] }
      setWeights: (w) => unwrap(wasm, `${where}.setWeights`,
        raw.setWeights({ ...w, w1: glueMatrix(w.w1), w2: glueMatrix(w.w2) })),
      // x { data: rows of dModel } -> { data: the rows' outputs }
      forward: (x) => ({ data: unwrap(wasm, `${where}.forward`, raw.forward(x.data)) }),
      dispose: () => raw.delete(),
    };
  },
  // config { dModel, eps, normFirst, backend }. Its messages name `where`,
  // the layer's method that runs it.
  SublayerNorm(wasm, config) {
    const raw = make(wasm, wasm.SublayerNormBinding, 'LayerNorm', config);
    return {
      normFirst: config.normFirst,
      // w { gamma, beta }; name: the layer's ('norm1', ...)
      setWeights: (w, name) => unwrap(wasm, 'LayerNorm.setWeights', raw.setWeights(w, name)),
      // x { data, shape }: the sublayer's input (pre-LN), as x's data
      input: (where, x) => unwrap(wasm, where, raw.input(readTensor(where, 'x', x))),
      // h + y (Float32Arrays), then normalized (post-LN)
      join: (where, h, y, sublayer) => unwrap(wasm, where, raw.join(h, y, sublayer)),
      dispose: () => raw.delete(),
    };
  },
};

// A part of `kind` ('FeedForward' or 'SublayerNorm') of `module`'s wasm.
export function newPoolPart(module, kind, config) {
  return PARTS[kind](wasmOf.get(module), config);
}

// The workers' partial outputs (Float32Arrays, in worker order) summed in
// that order by `module`'s wasm into a new array; an attention's
// (`attention` true) sum that overflowed float32 is refused as the
// attention's output would be, the message after `where`.
export function sumPartials(module, where, partials, attention) {
  const wasm = wasmOf.get(module);
  return unwrap(wasm, where, wasm.sumPartials(partials, attention, module.backend));
}
