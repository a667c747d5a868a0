// forward.js's forward on an attention pool of 2 workers: the package
// starts its own worker script, which each bundler must find and ship.
import { createAttentionPool } from 'simd-attention';

const f32 = (values) => Float32Array.from(values);
const tensor = (t) => t && { data: f32(t.data), shape: t.shape };

export async function forwardInPool({ config, weights, query, key, value, options }) {
  const pool = await createAttentionPool({ workers: 2 });
  try {
    const mha = await pool.MultiHeadAttention(config);
    await mha.setWeights(Object.fromEntries(Object.entries(weights).map(([k, v]) => [k, f32(v)])));
    const r = await mha.forward(tensor(query), tensor(key), tensor(value),
      { ...options, returnAttnWeights: true });
    return { build: pool.build, output: Array.from(r.output.data),
      attnWeights: Array.from(r.attnWeights.data) };
  } finally {
    await pool.dispose();
  }
}
