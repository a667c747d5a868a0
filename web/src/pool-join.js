// What the pool (pool.js) and its workers (pool-worker.js) share: the joins
// of a split call's results, which the worker that gathers the call's parts
// makes, and errors as messages.

const product = (dims) => dims.reduce((a, b) => a * b, 1);

// Tensors that differ only in the size of axis `axis`, joined along it.
export function joinAxis(tensors, axis) {
  if (tensors.length === 1) return tensors[0];
  const shape = [...tensors[0].shape];
  const outer = product(shape.slice(0, axis));
  const inner = product(shape.slice(axis + 1));
  shape[axis] = tensors.reduce((n, t) => n + t.shape[axis], 0);
  const data = new Float32Array(product(shape));
  let at = 0;
  for (let o = 0; o < outer; ++o) {
    for (const t of tensors) {
      const n = t.shape[axis] * inner;
      data.set(t.data.subarray(o * n, o * n + n), at);
      at += n;
    }
  }
  return { data, shape };
}

// The parts' results of one call as one, in worker order: an attention's
// ({ output, ... }) with the partial outputs summed and the rest joined
// along the head axis (the third from last); an FFN's ({ data }) summed.
// sum(partials, attention) adds the partial outputs (Float32Arrays, b_O or
// b2 in the first) in worker order, so that a result does not depend on
// which worker answered first, and checks an attention's sum
// (pool-parts.js, sumPartials).
export function joinResults(parts, sum) {
  if (parts[0].output === undefined) return { data: sum(parts.map((p) => p.data), false) };
  const output = { ...parts[0].output, data: sum(parts.map((p) => p.output.data), true) };
  const result = { output };
  for (const key of ['attnWeights', 'scores', 'perHeadOutput', 'q', 'k', 'v', 'headOutput']) {
    if (parts[0][key] !== undefined) {
      result[key] = joinAxis(parts.map((p) => p[key]), parts[0][key].shape.length - 3);
    }
  }
  return result;
}

// The errors that reading a caller's argument threw (a getter's, a
// Proxy's: see pool-arguments.js), and those made again from them in
// another thread: a call throws them as they are, as the synchronous API
// does, not named after a part of a layer.
const CALLERS = new WeakSet();

export function markFromCaller(e) {
  if (e !== null && (typeof e === 'object' || typeof e === 'function')) CALLERS.add(e);
  return e;
}

export function fromCaller(e) {
  return CALLERS.has(e);
}

// An error as a message carries it, and back with its class (and whether it
// came from the caller).
export function errorMessage(e) {
  const name = e instanceof TypeError ? 'TypeError' : e instanceof RangeError ? 'RangeError' : 'Error';
  return { name, message: String(e?.message ?? e), ...(CALLERS.has(e) && { fromCaller: true }) };
}

export function rebuild({ name, message, fromCaller: caller }) {
  const Class = name === 'TypeError' ? TypeError : name === 'RangeError' ? RangeError : Error;
  const error = new Class(message);
  if (caller) CALLERS.add(error);
  return error;
}
