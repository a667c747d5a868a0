// Tensors as JS passes them ({ data: Float32Array, shape }), read into what
// the glue takes, and the size checks the JS side makes against them.
import { describe, float32 } from './arguments.js';

// {data, shape} -> {data, batch, tokens, features, rank}
export function readTensor(where, name, t) {
  if (t === null || typeof t !== 'object' || ArrayBuffer.isView(t) || Array.isArray(t)) {
    throw new TypeError(`${where}: ${name}: expected a tensor ` +
      `{ data: Float32Array, shape: number[] }, got ${describe(t)}`);
  }
  float32(where, `${name}.data`, t.data);
  const shape = t.shape;
  if (!Array.isArray(shape)) {
    throw new TypeError(`${where}: ${name}.shape: expected an array ` +
      `[batch, tokens, features] or [tokens, features], got ${describe(shape)}`);
  }
  if (shape.length !== 2 && shape.length !== 3) {
    throw new RangeError(`${where}: ${name}.shape: expected [batch, tokens, features] ` +
      `or [tokens, features], got ${describe(shape)}`);
  }
  shape.forEach((d, i) => {
    if (typeof d !== 'number' || !Number.isInteger(d) || d < 0 || d > 0xffffffff) {
      throw new RangeError(`${where}: ${name}.shape[${i}]: expected a non-negative ` +
        `integer, got ${describe(d)}`);
    }
  });
  const length = shape.reduce((a, b) => a * b, 1);
  if (t.data.length !== length) {
    throw new RangeError(`${where}: ${name}: data has ${t.data.length} values but shape ` +
      `${describe(shape)} needs ${length}`);
  }
  const [batch, tokens, features] = shape.length === 3 ? shape : [1, ...shape];
  return { data: t.data, batch, tokens, features, rank: shape.length };
}

// A mask the JS side can check against the shapes it knows: [batch, tokens].
export function checkMaskLength(where, name, mask, batch, tokens) {
  if (mask !== undefined && mask.length !== batch * tokens) {
    throw new RangeError(`${where}: ${name}: expected ${batch * tokens} values for shape ` +
      `[${batch}, ${tokens}], got ${mask.length}`);
  }
}

// Checks a layer input against the layer's width (messages name it as JS
// sees it, before C++ would name the attention's query).
export function checkActivation(where, name, t, dModel) {
  if (t.features !== dModel) {
    throw new RangeError(`${where}: ${name}.features: expected ${dModel} (dModel), ` +
      `got ${t.features}`);
  }
  for (const d of ['batch', 'tokens']) {
    if (t[d] === 0) throw new RangeError(`${where}: ${name}.${d}: must be > 0, got 0`);
  }
}
