// What the worker pool's tests share: pools of the SIMD build, one per
// worker count, started before a file's tests and disposed after them; the
// synchronous module their results are compared with; random tensors.
import { randomFloats } from './layers.mjs';
import { createAttentionModule, createAttentionPool } from './modules.mjs';

// The module the pools are compared with: their build (each worker runs
// one thread), one thread.
export function simdModule() {
  return createAttentionModule({ simd: true, relaxedSimd: false, threads: 1 });
}

// { [workers]: a pool of that many workers } for each count of `sizes`,
// filled before the file's first test and disposed after its last.
export function startPools(sizes) {
  const pools = {};
  beforeAll(async () => {
    for (const workers of sizes) pools[workers] = await createAttentionPool({ workers, build: 'simd' });
  });
  afterAll(async () => {
    for (const pool of Object.values(pools)) await pool.dispose();
  });
  return pools;
}

// A tensor of `shape` with random values in [-0.5, 0.5) from `seed`.
export const randomTensor = (shape, seed) =>
  ({ data: randomFloats(shape.reduce((a, b) => a * b, 1), seed), shape });
