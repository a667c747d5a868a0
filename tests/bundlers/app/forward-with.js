// One forward of a golden case with the module an entry's
// createAttentionModule (`create`) makes: the case arrives as plain arrays
// (structured-clone and JSON friendly). Imports no entry, so that a page of
// the attention entry holds nothing of the main one.
const f32 = (values) => Float32Array.from(values);
const tensor = (t) => t && { data: f32(t.data), shape: t.shape };

export async function forwardWith(create, { config, weights, query, key, value, options }) {
  const sa = await create();
  const mha = new sa.MultiHeadAttention(config);
  try {
    mha.setWeights(Object.fromEntries(Object.entries(weights).map(([k, v]) => [k, f32(v)])));
    const r = mha.forward(tensor(query), tensor(key), tensor(value),
      { ...options, returnAttnWeights: true });
    return { build: sa.build, output: Array.from(r.output.data),
      attnWeights: Array.from(r.attnWeights.data) };
  } finally {
    mha.dispose();
  }
}
