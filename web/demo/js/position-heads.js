// Attention heads built by hand from the sinusoidal positional encoding, so
// that what they attend to is known: the current token, the previous one or
// the first. The explorer and the walk-through build theirs with these.
//
// The heads read sine/cosine pairs of the encoding, PE(p)_2f = sin(p w_f),
// PE(p)_2f+1 = cos(p w_f), from input features that hold nothing else. Their
// keys are those features as they are; the query decides the pattern.

/** w_f of positionalEncoding(t, width) for each pair index f. */
export const encodingFrequencies = (width, pairs) => pairs.map((f) => 10000 ** (-(2 * f) / width));

/**
 * The query scale alpha that makes the intended key's score beat every other
 * key's by `gap` before the softmax. Query and key match with
 * alpha / sqrt(dk) * sum_f cos(w_f * delta): the sum is the number of pairs at
 * delta = 0 and at most `runnerUp` for any other offset up to maxOffset.
 */
export function positionQueryScale(omega, { gap, dk, maxOffset }) {
  const similarity = (delta) => omega.reduce((s, w) => s + Math.cos(w * delta), 0);
  let runnerUp = -Infinity;
  for (let d = 1; d <= maxOffset; d++) runnerUp = Math.max(runnerUp, similarity(d));
  const margin = omega.length - runnerUp;
  return { alpha: (gap * Math.sqrt(dk)) / margin, runnerUp, margin };
}

/**
 * Writes one head's position features into wK (X @ W layout, `cols` columns):
 * input feature inputs[c] becomes key feature col0 + c.
 */
export function writePositionKey({ wK, cols, inputs, col0 }) {
  inputs.forEach((row, c) => { wK[row * cols + col0 + c] = 1; });
}

/**
 * Writes one head's query (wQ, X @ W layout with `cols` columns, and bQ) for
 * a pattern, facing keys written by writePositionKey with the same inputs:
 * - 'self': alpha * PE(i), best key i;
 * - 'previous': each (sin, cos) pair rotated back by one step, which turns
 *   PE(i) into PE(i - 1) (sin(a - b) = sin a cos b - cos a sin b,
 *   cos(a - b) = cos a cos b + sin a sin b): best key i - 1;
 * - 'first': the constant alpha * PE(0) = alpha * (0, 1, 0, 1, ...) from the
 *   bias alone: best key 0.
 */
export function writePositionQuery(pattern, { wQ, bQ, cols, inputs, col0, omega, alpha }) {
  const set = (row, col, v) => { wQ[row * cols + col0 + col] = v; };
  omega.forEach((w, f) => {
    const [s, c] = [2 * f, 2 * f + 1];
    if (pattern === 'self') {
      set(inputs[s], s, alpha);
      set(inputs[c], c, alpha);
    } else if (pattern === 'previous') {
      set(inputs[s], s, alpha * Math.cos(w));
      set(inputs[c], s, -alpha * Math.sin(w));
      set(inputs[s], c, alpha * Math.sin(w));
      set(inputs[c], c, alpha * Math.cos(w));
    } else if (pattern === 'first') {
      bQ[col0 + c] = alpha;
    } else {
      throw new Error(`unknown position pattern ${pattern}`);
    }
  });
}

/** The key each query row of a pattern must pick (null: the keys have none such). */
export function expectedArgmax(pattern, tq, tk) {
  return Array.from({ length: tq }, (_, i) => {
    if (pattern === 'first') return 0;
    if (pattern === 'self') return i < tk ? i : null;
    if (pattern === 'previous') return i - 1 < tk ? Math.max(0, i - 1) : null;
    return null;
  });
}
