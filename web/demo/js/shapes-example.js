// The walk-through's worked example (B = 2, T = 10, d_model = 512, 8 heads of
// 64): two short sentences, not noise, and three heads built by hand so that
// the scores and the softmax show patterns one can read: the previous token,
// the same word, the first token. Heads 3-7 are random.
import { randn, hashString, requireFunction } from './common.js';
import { encodingFrequencies, positionQueryScale, writePositionKey, writePositionQuery } from './position-heads.js';

export const B = 2;
export const T = 10;
export const D = 512;
export const H = 8;
export const DK = D / H;
export const TK_CROSS = 16;
/** The numbers of key/value heads the page shows: one per query head, and grouped. */
export const KV_CHOICES = [8, 2];

export const SENTENCES = [
  'the cat sat on the mat and the dog sat',
  'the dog saw a bird and the bird saw it',
].map((s) => s.split(' '));
/** The second sequence of cross-attention (an encoder's input, here: words). */
export const MEMORY_SENTENCES = [
  'the cat that sat on the mat is small and the dog on the rug was',
  'a bird and a dog saw the cat and the bird saw a dog on it',
].map((s) => s.split(' '));

export const HEADS = [
  { name: 'previous token', built: true },
  { name: 'same word', built: true },
  { name: 'first token', built: true },
  ...Array.from({ length: H - 3 }, () => ({ name: 'random', built: false })),
];

// Features 0-63 hold the position alone (the words leave them empty); the
// built heads read its pairs 0, 8, 16, 24, the four whose frequencies are
// the explorer's (1, 0.75, 0.56, 0.42): faster pairs tell neighbours apart.
const POS_FEATURES = 64;
const POS_INPUTS = [0, 8, 16, 24].flatMap((f) => [2 * f, 2 * f + 1]);
const OMEGA = encodingFrequencies(D, [0, 8, 16, 24]);
const { alpha: ALPHA } = positionQueryScale(OMEGA, { gap: 12, dk: DK, maxOffset: 2 * TK_CROSS + 1 });
// The word features the same-word head compares: key features 8-63.
const WORD_INPUTS = Array.from({ length: DK - POS_INPUTS.length }, (_, c) => POS_FEATURES + c);
const WORD_SCALE = 1.5;
/** Same-word query scale: the same word scores about 16 above another before the softmax. */
const BETA = (16 * Math.sqrt(DK)) / (WORD_INPUTS.length * WORD_SCALE ** 2);

/** Word embeddings (seeded by the word) plus the library's sinusoidal positional encoding. */
function embed(module, sentences) {
  const t = sentences[0].length;
  const pe = requireFunction(module, 'positionalEncoding')(t, D).data;
  const x = new Float32Array(sentences.length * t * D);
  sentences.forEach((words, b) => words.forEach((word, i) => {
    const row = (b * t + i) * D;
    x.set(pe.subarray(i * D, (i + 1) * D), row);
    const e = randn(D - POS_FEATURES, WORD_SCALE, hashString(word));
    for (let c = POS_FEATURES; c < D; c++) x[row + c] += e[c - POS_FEATURES];
  }));
  return x;
}

/**
 * X @ W weights for kvHeads key/value heads. Kv head g takes the key and
 * value weights of its group's first query head; the built heads share one
 * kind of key (position features 0-7, word features 8-63), each query reading
 * its part, so they keep their pattern however the heads are grouped.
 */
function weights(kvHeads) {
  const kvCols = kvHeads * DK;
  const w = {
    wQ: new Float32Array(D * D), wK: new Float32Array(D * kvCols), wV: new Float32Array(D * kvCols),
    wO: randn(D * D, 1 / Math.sqrt(D), 14),
    bQ: new Float32Array(D), bK: new Float32Array(kvCols), bV: new Float32Array(kvCols), bO: randn(D, 0.02, 18),
  };
  const valuesOfAll = randn(D * D, 1 / Math.sqrt(D), 13);
  const copyColumns = (from, fromCols, fromCol0, to, toCols, toCol0) => {
    for (let r = 0; r < D; r++) {
      for (let c = 0; c < DK; c++) to[r * toCols + toCol0 + c] = from[r * fromCols + fromCol0 + c];
    }
  };
  const position = { wQ: w.wQ, bQ: w.bQ, cols: D, inputs: POS_INPUTS, omega: OMEGA, alpha: ALPHA };
  writePositionQuery('previous', { ...position, col0: 0 });
  WORD_INPUTS.forEach((row, c) => { w.wQ[row * D + DK + POS_INPUTS.length + c] = BETA; });
  writePositionQuery('first', { ...position, col0: 2 * DK });
  for (let h = 3; h < H; h++) copyColumns(randn(D * DK, 1 / Math.sqrt(D), 400 + h), DK, 0, w.wQ, D, h * DK);
  for (let g = 0; g < kvHeads; g++) {
    const first = g * (H / kvHeads);
    if (HEADS[first].built) {
      writePositionKey({ wK: w.wK, cols: kvCols, inputs: [...POS_INPUTS, ...WORD_INPUTS], col0: g * DK });
    } else {
      copyColumns(randn(D * DK, 1 / Math.sqrt(D), 500 + first), DK, 0, w.wK, kvCols, g * DK);
    }
    copyColumns(valuesOfAll, D, first * DK, w.wV, kvCols, g * DK);
  }
  return w;
}

/** The example's inputs, and weights and config per number of key/value heads. */
export function example(module) {
  return {
    X: embed(module, SENTENCES),
    MEMORY: embed(module, MEMORY_SENTENCES),
    weights: Object.fromEntries(KV_CHOICES.map((kv) => [kv, weights(kv)])),
    config: Object.fromEntries(KV_CHOICES.map((kv) => [kv, { dModel: D, numHeads: H, numKvHeads: kv }])),
  };
}
