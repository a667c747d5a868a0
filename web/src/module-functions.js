// The module's functions that own nothing: positionalEncoding, layerNorm,
// quantizeInt8.
import { checkObject, float32, readBackend, readEps, requiredSize } from './arguments.js';
import { unwrap } from './errors.js';
import { OPTION_KEYS } from './option-keys.js';
import { readTensor } from './tensors.js';

// positionalEncoding, layerNorm and quantizeInt8 of one module (wasm instance).
export function makeModuleFunctions(wasm, defaultBackend) {
  function positionalEncoding(t, dModel) {
    const where = 'positionalEncoding';
    requiredSize(where, 't', t);
    requiredSize(where, 'dModel', dModel);
    return { data: unwrap(wasm, where, wasm.positionalEncoding(t, dModel)), shape: [t, dModel] };
  }

  function layerNorm(x, options) {
    const where = 'layerNorm';
    const t = readTensor(where, 'x', x);
    checkObject(where, 'options', options, OPTION_KEYS.LayerNormOptions);
    const data = unwrap(wasm, where, wasm.layerNorm(t, {
      gamma: float32(where, 'options.gamma', options.gamma),
      beta: float32(where, 'options.beta', options.beta),
      eps: readEps(where, 'options.eps', options.eps),
      backend: readBackend(where, options, defaultBackend),
    }));
    return { data, shape: [...x.shape] };
  }

  // matrix [rows, cols] as int8 weights { values, scales }, quantized per
  // column as setWeights quantizes a Float32Array for config.weights 'int8'.
  function quantizeInt8(matrix, rows, cols) {
    const where = 'quantizeInt8';
    float32(where, 'matrix', matrix);
    requiredSize(where, 'rows', rows);
    requiredSize(where, 'cols', cols);
    return unwrap(wasm, where, wasm.quantizeInt8(matrix, rows, cols));
  }

  return { positionalEncoding, layerNorm, quantizeInt8 };
}
