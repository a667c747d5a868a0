// What the training build's block and stack tests share: a small Llama
// block (Llama 3 with Qwen3's QK-norm) and its random weights, their
// gradients checked against central differences of the object's own
// forward, and a fit by an optimizer.
import { randomFloats } from './layers.mjs';

// 6-feature heads (a tail past the vectors), grouped heads.
export const D = 24;
export const HEADS = 4;
export const KV_HEADS = 2;
export const HEAD_DIM = D / HEADS;
export const F = 20;
export const LLAMA_BLOCK = {
  dModel: D, numHeads: HEADS, numKvHeads: KV_HEADS, ffnDim: F, activation: 'silu',
  norm: 'rms_norm', eps: 1e-5, rope: { style: 'half', base: 500 },
  qkNorm: { kind: 'rms_norm', eps: 1e-6 },
  sublayers: [{ mixer: 'self_attention' }, { mixer: 'gated_ffn' }],
};

/** The weights of a LLAMA_BLOCK drawn from `seed`: scales around 1. */
export function llamaBlockWeights(seed) {
  const m = (n, s) => randomFloats(n, seed + s, 0.3);
  const scales = (n, s) => m(n, s).map((v) => 1 + v);
  const kv = KV_HEADS * HEAD_DIM;
  return { sublayers: [
    { norm: { gamma: scales(D, 1) },
      attention: { wQ: m(D * D, 2), wK: m(D * kv, 3), wV: m(D * kv, 4), wO: m(D * D, 5),
        qNorm: scales(HEAD_DIM, 6), kNorm: scales(HEAD_DIM, 7) } },
    { norm: { gamma: scales(D, 8) },
      gatedFfn: { wGate: m(D * F, 9), wUp: m(D * F, 10), wDown: m(F * D, 11) } },
  ] };
}

/** sum(output * dOutput) in double. */
export const dot = (a, b) => a.reduce((s, v, i) => s + v * b[i], 0);

/**
 * The gradients of `object` (a block or stack given `weights`) at x, given
 * dOutput, against central differences of sum(forward(x, options) *
 * dOutput) at the three largest entries of each probe [name, values (in
 * weights or x), gradient].
 */
export function expectCentralDifferences(object, weights, x, options, dOutput, probes) {
  const loss = () => dot(object.forward(x, options).data, dOutput);
  // float32's forward rounds the loss by ~1e-6 of itself, so h = 1e-2
  // keeps the difference quotient's error near 1e-4 and the curvature's
  // h^2 below it.
  const h = 1e-2;
  const at = (values, i, value) => {
    values[i] = value;
    object.setWeights(weights);
    return loss();
  };
  for (const [name, values, gradient] of probes) {
    expect([name, gradient.length]).toEqual([name, values.length]);
    const largest = [...gradient.keys()]
      .sort((a, b) => Math.abs(gradient[b]) - Math.abs(gradient[a])).slice(0, 3);
    let worst = 0;
    for (const i of largest) {
      const keep = values[i];
      const numeric = (at(values, i, keep + h) - at(values, i, keep - h)) / (2 * h);
      at(values, i, keep);
      worst = Math.max(worst, Math.abs(numeric - gradient[i]) / Math.max(1, Math.abs(numeric)));
    }
    expect([name, worst < 2e-3]).toEqual([name, true]);
  }
}

/**
 * `steps` steps of `optimizer` fitting `object` (a block or stack) at x to
 * `target` by the mean squared error, forward with `options`; the loss
 * before each step.
 */
export function fitLosses(object, optimizer, x, options, target, steps) {
  const losses = [];
  for (let step = 0; step < steps; step++) {
    const y = object.forward(x, { ...options, training: true });
    const diff = y.data.map((v, i) => v - target[i]);
    losses.push(dot(diff, diff) / diff.length);
    object.backward({ data: diff.map((v) => (2 * v) / diff.length), shape: y.shape });
    optimizer.step(object);
  }
  return losses;
}
