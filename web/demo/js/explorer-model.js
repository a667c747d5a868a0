// The explorer's attention layer: d_model = 64, 8 heads, three of them built
// by hand from the sinusoidal positional encoding so that their pattern is
// known, and the sentence's tokens and embeddings.
import { randn, hashString, requireFunction, mixColour, PALETTE } from './common.js';
import { encodingFrequencies, positionQueryScale, writePositionKey, writePositionQuery } from './position-heads.js';

export const D = 64;
export const H = 8;
export const DK = D / H;
export const MAX_TOKENS = 32;
/** Dimensions 0..POS_DIMS-1 (the 4 fastest sine/cosine pairs) carry position only. */
export const POS_DIMS = DK;
export const PAIRS = POS_DIMS / 2;
/** Softmax gap (in the exponent) between a built head's best key and the runner-up. */
export const TARGET_GAP = 12;
/** The numbers of key/value heads offered: each divides H. */
export const KV_CHOICES = [8, 4, 2, 1];

const POS_INPUTS = Array.from({ length: POS_DIMS }, (_, c) => c);
export const OMEGA = encodingFrequencies(D, Array.from({ length: PAIRS }, (_, f) => f));
// Offsets up to twice the longest sentence: enough for cross-attention too.
export const { alpha: ALPHA, runnerUp: RUNNER_UP, margin: MARGIN } =
  positionQueryScale(OMEGA, { gap: TARGET_GAP, dk: DK, maxOffset: 2 * MAX_TOKENS + 1 });

export const HEADS = [
  { name: 'previous token', pattern: 'previous', built: true },
  { name: 'current token', pattern: 'self', built: true },
  { name: 'first token', pattern: 'first', built: true },
  ...Array.from({ length: H - 3 }, () => ({ name: 'random weights', pattern: 'random', built: false })),
];

/** The key/value head query head h of `heads` reads: h / (heads / Hkv). */
export const kvHeadOf = (h, kvHeads, heads = H) => Math.floor(h / (heads / kvHeads));

/**
 * Heads that share a key/value head share a colour family: kv head g's hue,
 * from dark to light across its query heads (one kv head per query head: the
 * plain palette, repeated past its ten colours).
 */
export function headColour(h, kvHeads, heads = H) {
  const group = heads / kvHeads;
  const base = PALETTE[kvHeadOf(h, kvHeads, heads) % PALETTE.length];
  return group === 1 ? base : mixColour(base, -0.35 + (0.8 * (h % group)) / (group - 1));
}

/**
 * The weights (X @ W layout: rows = input features, columns = outputs) for
 * kvHeads key/value heads. Every query head has its own query weights; kv
 * head g takes the key and value weights of its group's first query head
 * (g * H / kvHeads) as it would have with a kv head of its own. The built
 * heads all key on the same position features, so they keep their pattern
 * however the heads are grouped.
 */
export function buildWeights(kvHeads) {
  const kvCols = kvHeads * DK;
  const w = {
    wQ: new Float32Array(D * D), wK: new Float32Array(D * kvCols), wV: new Float32Array(D * kvCols),
    wO: randn(D * D, 1 / Math.sqrt(D), 302),
    bQ: new Float32Array(D), bK: new Float32Array(kvCols), bV: new Float32Array(kvCols), bO: new Float32Array(D),
  };
  const valuesOfAll = randn(D * D, 1 / Math.sqrt(D), 301); // as if each query head had its own
  const copyColumns = (from, fromCols, fromCol0, to, toCols, toCol0) => {
    for (let r = 0; r < D; r++) {
      for (let c = 0; c < DK; c++) to[r * toCols + toCol0 + c] = from[r * fromCols + fromCol0 + c];
    }
  };
  HEADS.forEach((head, h) => {
    if (head.built) {
      writePositionQuery(head.pattern, { wQ: w.wQ, bQ: w.bQ, cols: D, inputs: POS_INPUTS, col0: h * DK, omega: OMEGA, alpha: ALPHA });
    } else {
      // Random query projections of every input feature.
      copyColumns(randn(D * DK, 0.2, 400 + h), DK, 0, w.wQ, D, h * DK);
    }
  });
  for (let g = 0; g < kvHeads; g++) {
    const first = g * (H / kvHeads);
    if (HEADS[first].built) writePositionKey({ wK: w.wK, cols: kvCols, inputs: POS_INPUTS, col0: g * DK });
    else copyColumns(randn(D * DK, 0.2, 500 + first), DK, 0, w.wK, kvCols, g * DK);
    copyColumns(valuesOfAll, D, first * DK, w.wV, kvCols, g * DK);
  }
  return w;
}

export function tokenize(text) {
  const all = text.match(/[\p{L}\p{N}]+(?:['\u2019][\p{L}]+)*|[^\s\p{L}\p{N}]/gu) ?? [];
  return { tokens: all.slice(0, MAX_TOKENS), dropped: Math.max(0, all.length - MAX_TOKENS) };
}

// Word embedding (seeded by the word) in dimensions POS_DIMS..D-1, plus the
// library's sinusoidal positional encoding in all D dimensions.
export function embed(module, tokens) {
  const t = tokens.length;
  const pe = requireFunction(module, 'positionalEncoding')(t, D);
  if (pe.data.length !== t * D) {
    throw new Error(`positionalEncoding(${t}, ${D}) returned ${pe.data.length} values, expected ${t * D}`);
  }
  const x = Float32Array.from(pe.data);
  tokens.forEach((word, i) => {
    const e = randn(D - POS_DIMS, 0.5, hashString(word.toLowerCase()));
    for (let c = POS_DIMS; c < D; c++) x[i * D + c] += e[c - POS_DIMS];
  });
  return x;
}
