// The training page's tasks, generated on the fly, and its model sizes. A
// task makes rows of token ids with a target per position (the token the
// model should predict there; -1: not scored) from a generator of integers,
// so the worker draws fresh batches from a seeded one and the page's fixed
// example is the same on every visit.
import { rng } from './common.js';

/** Token names on the page: one character each. */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij';

/** `n` distinct tokens of [0, vocab), in random order. */
function distinct(draw, vocab, n) {
  const pool = Array.from({ length: vocab }, (_, i) => i);
  for (let i = 0; i < n; i++) {
    const j = i + draw(vocab - i);
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return pool.slice(0, n);
}

// Each task: its vocabulary, the model it trains best with (natively
// measured: tests/tiny_model_test.cc), the lengths offered, the row length
// of a length, and `row(draw, length, tokens, targets, fixed)`, which fills
// one row; `fixed` asks for the page's example (a typical row, not a drawn
// one where drawing would leave a degenerate case).
export const TASKS = {
  copy: {
    name: 'Copy the previous token',
    vocab: 16,
    model: 'l1h2d32',
    goal: 0.99,
    lengths: [8, 16, 24, 32],
    length: 16,
    lengthLabel: (n) => `rows of ${n} tokens`,
    rowTokens: (n) => n,
    label: (t) => ALPHABET[t],
    // Random tokens; at position t the answer is token t - 1 (t = 0 has none).
    row(draw, n, tokens, targets) {
      for (let t = 0; t < n; t++) {
        tokens[t] = draw(this.vocab);
        targets[t] = t === 0 ? -1 : tokens[t - 1];
      }
    },
  },
  reverse: {
    name: 'Reverse a sequence',
    vocab: 16,
    model: 'l1h2d32',
    goal: 0.99,
    lengths: [4, 6, 8, 10],
    length: 6,
    lengthLabel: (n) => `sequences of ${n} tokens (rows of ${2 * n + 1})`,
    rowTokens: (n) => 2 * n + 1,
    // Token 0 is the separator.
    label: (t) => (t === 0 ? '|' : ALPHABET[t - 1]),
    // s (n tokens of 1 .. vocab - 1), the separator, then s reversed: from
    // the separator on, each position predicts the next token of the
    // reversed half, which is in s at the mirrored position.
    row(draw, n, tokens, targets) {
      for (let t = 0; t < n; t++) tokens[t] = 1 + draw(this.vocab - 1);
      tokens[n] = 0;
      for (let k = 0; k < n; k++) tokens[n + 1 + k] = tokens[n - 1 - k];
      for (let t = 0; t < 2 * n + 1; t++) targets[t] = t >= n && t < 2 * n ? tokens[t + 1] : -1;
    },
  },
  induction: {
    name: 'Induction (a sequence repeated)',
    vocab: 32,
    model: 'l2h2d64',
    goal: 0.9,
    minLength: 4,
    lengths: [8, 12, 16],
    length: 12,
    lengthLabel: (n) => `sequences of 4 to ${n} tokens (rows of ${2 * n})`,
    rowTokens: (n) => 2 * n,
    label: (t) => ALPHABET[t],
    // Rows of 2n distinct tokens but for a sequence s of 4 .. n tokens shown
    // twice at a random place: each token of the second copy but its last
    // predicts the next, which only its earlier occurrence tells. The random
    // length and place leave no fixed offset to learn instead (a head looking
    // a constant number of tokens back would do with a fixed length).
    row(draw, n, tokens, targets, fixed) {
      const rowLength = 2 * n;
      const length = fixed ? n - 4 : this.minLength + draw(n - this.minLength + 1);
      const start = fixed ? 2 : draw(rowLength - 2 * length + 1);
      const pool = distinct(draw, this.vocab, rowLength - length);
      let other = length;
      for (let t = 0; t < rowLength; t++) {
        const inCopy = t >= start && t < start + 2 * length;
        tokens[t] = inCopy ? pool[(t - start) % length] : pool[other++];
        const scored = t >= start + length && t + 1 < start + 2 * length;
        targets[t] = scored ? pool[(t + 1 - start) % length] : -1;
      }
    },
  },
};

/** The model sizes offered: layers, heads, d_model. */
export const MODELS = {
  l1h2d32: { numLayers: 1, numHeads: 2, dModel: 32 },
  l1h4d64: { numLayers: 1, numHeads: 4, dModel: 64 },
  l2h2d64: { numLayers: 2, numHeads: 2, dModel: 64 },
  l2h4d64: { numLayers: 2, numHeads: 4, dModel: 64 },
};

export const modelLabel = ({ numLayers, numHeads, dModel }) =>
  `${numLayers} ${numLayers === 1 ? 'layer' : 'layers'}, ${numHeads} heads, d_model ${dModel}`;

/** An integer generator over [0, n) from a seed. */
export function integers(seed) {
  const next = rng(seed);
  return (n) => Math.floor(next() * n);
}

/** `batch` fresh rows of `task` at `length`: { tokens: { data, shape }, targets }. */
export function makeBatch(task, draw, batch, length) {
  const n = task.rowTokens(length);
  const data = new Int32Array(batch * n);
  const targets = new Int32Array(batch * n);
  for (let b = 0; b < batch; b++) {
    task.row(draw, length, data.subarray(b * n, (b + 1) * n), targets.subarray(b * n, (b + 1) * n));
  }
  return { tokens: { data, shape: [batch, n] }, targets };
}

/** The page's example of `task` at `length`: one row, the same every time. */
export function makeExample(task, length) {
  const n = task.rowTokens(length);
  const tokens = new Int32Array(n);
  const targets = new Int32Array(n);
  task.row(integers(20240521), length, tokens, targets, true);
  return { tokens, targets };
}
