// Tensors as JS passes them ({ data: Float32Array, shape }), read into what
// the glue takes. Their types are checked here; whether the data fits the
// shape and the shape the call, in C++.
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
  const [batch, tokens, features] = shape.length === 3 ? shape : [1, ...shape];
  return { data: t.data, batch, tokens, features, rank: shape.length };
}
