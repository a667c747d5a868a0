// What a pool worker runs in its module's wasm that the module's public API
// has not: some hidden units of a layer's or block's FFN or gated FFN
// (FfnBinding, GatedFfnBinding in bindings/ffn_binding.cc), the norms and
// residual sum around one sublayer of a split layer or block
// (SublayerNormBinding in bindings/sublayer_norm_binding.cc) and the sum of
// a split call's partial outputs (sumPartials,
// bindings/partial_sum_binding.cc).
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

// Some hidden units of an FFN (`kind` FeedForward) or a gated FFN
// (GatedFeedForward), config { dModel, ffnDim (the shard's units),
// activation, backend, weights }.
function feedForward(kind, Binding) {
  return (wasm, config) => {
    const raw = make(wasm, wasm[Binding], kind, config);
    return {
      // the shard's weights, the matrices in the glue's form (a Float32Array,
      // as every bias, goes as it is)
      setWeights: (w) => unwrap(wasm, `${kind}.setWeights`, raw.setWeights(
        Object.fromEntries(Object.entries(w).map(([key, v]) => [key, glueMatrix(v)])))),
      // x { data: rows of dModel } -> { data: the rows' outputs }
      forward: (x) => ({ data: unwrap(wasm, `${kind}.forward`, raw.forward(x.data)) }),
      dispose: () => raw.delete(),
    };
  };
}

const PARTS = {
  FeedForward: feedForward('FeedForward', 'FfnBinding'),
  GatedFeedForward: feedForward('GatedFeedForward', 'GatedFfnBinding'),
  // config { dModel, eps, norm, placement, layerForm, backend }. Its
  // messages name `where`, the layer's method that runs it.
  SublayerNorm(wasm, config) {
    const raw = make(wasm, wasm.SublayerNormBinding, 'BlockNorm', config);
    return {
      normFirst: raw.normsInput(),
      // w { gamma, beta? } named `name`; a sandwich's output norm's `out`,
      // `outName`
      setWeights: (w, name, out = {}, outName = '') => unwrap(wasm, 'BlockNorm.setWeights',
        raw.setWeights(w, name, out, outName)),
      // x { data, shape }: the sublayer's input (pre, sandwich), as x's data
      input: (where, x) => unwrap(wasm, where, raw.input(readTensor(where, 'x', x))),
      // residual + y (Float32Arrays), normed as the placement says
      join: (where, residual, y, sublayer) => unwrap(wasm, where,
        raw.join(residual, y, sublayer)),
      dispose: () => raw.delete(),
    };
  },
};

// Whether `kind` is one of the parts above (else a class of the module).
export function isPoolPart(kind) {
  return Object.hasOwn(PARTS, kind);
}

// Whether the norm kind `norm` (a resolved config's) has a shift, beta.
export function normHasShift(module, norm) {
  return wasmOf.get(module).normHasShift(norm);
}

// A part of `kind` (see isPoolPart) of `module`'s wasm.
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
