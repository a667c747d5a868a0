// What each head of the training page's model does, measured: where its
// attention on the example goes (the previous token; the token after the
// current token's earlier occurrence) and how asymmetric its query-key
// bilinear form W_Q^h W_K^h^T is. The worker computes them; the page shows them.

/** A head whose mean attention on a role's key is at least this has the role. */
export const ROLE_THRESHOLD = 0.4;

export const ROLES = {
  previous: { name: 'previous-token head' },
  induction: { name: 'induction head' },
};

/**
 * Each query's key for each role on a row of `tokens` (-1: none): t - 1 for
 * the previous token; for induction, j + 1 where j is the latest earlier
 * occurrence of token t, when that key is neither t - 1 nor t (where the
 * two roles would point at the same key).
 */
export function roleKeys(tokens) {
  const previous = [];
  const induction = [];
  const seen = new Map();
  tokens.forEach((token, t) => {
    previous.push(t - 1);
    const j = seen.get(token);
    induction.push(j !== undefined && j + 1 < t - 1 ? j + 1 : -1);
    seen.set(token, t);
  });
  return { previous, induction };
}

/** Mean weight on each query's role key of one head's [T, T] attention (null: no such query). */
function meanOnKeys(weights, offset, T, keys) {
  let sum = 0;
  let count = 0;
  keys.forEach((key, t) => {
    if (key < 0) return;
    sum += weights[offset + t * T + key];
    count++;
  });
  return count ? sum / count : null;
}

/**
 * Per layer, per head: { previous, induction } scores (mean attention on the
 * role's key) from the attention weights of one row ([1, H, T, T] per layer)
 * and the role each head plays (the larger score at or above the threshold,
 * or null).
 */
export function headRoles(attnWeights, tokens, numHeads) {
  const T = tokens.length;
  const keys = roleKeys(tokens);
  return attnWeights.map((weights) => Array.from({ length: numHeads }, (_, h) => {
    const scores = {};
    for (const role of Object.keys(ROLES)) scores[role] = meanOnKeys(weights, h * T * T, T, keys[role]);
    const [best] = Object.keys(ROLES).filter((r) => scores[r] !== null)
      .sort((a, b) => scores[b] - scores[a]);
    return { ...scores, role: best !== undefined && scores[best] >= ROLE_THRESHOLD ? best : null };
  }));
}

/**
 * ||A - A^T||_F / ||A||_F of A = W_Q^h W_K^h^T ([dModel, dModel]; wQ and wK
 * are [dModel, dModel] in X @ W layout, head h owning columns h*dk ..): 0 for
 * a symmetric form (Q and K alike: tokens attend to tokens like themselves),
 * 2 for an antisymmetric one; independent random W_Q and W_K give about
 * sqrt(2). Per layer, per head.
 */
export function asymmetries(layers, dModel, numHeads) {
  const dk = dModel / numHeads;
  const a = new Float64Array(dModel * dModel);
  return layers.map(({ wQ, wK }) => Array.from({ length: numHeads }, (_, h) => {
    a.fill(0);
    for (let i = 0; i < dModel; i++) {
      for (let j = 0; j < dModel; j++) {
        let s = 0;
        for (let c = h * dk; c < (h + 1) * dk; c++) s += wQ[i * dModel + c] * wK[j * dModel + c];
        a[i * dModel + j] = s;
      }
    }
    let all = 0;
    let anti = 0;
    for (let i = 0; i < dModel; i++) {
      for (let j = 0; j < dModel; j++) {
        all += a[i * dModel + j] ** 2;
        anti += (a[i * dModel + j] - a[j * dModel + i]) ** 2;
      }
    }
    return all > 0 ? Math.sqrt(anti / all) : 0;
  }));
}
