// The storage types in the benchmark: our weights held as float16, bfloat16
// and int8 (config.weights) and, on D1, the KV cache as float16 or bfloat16
// beside weights of that type (config.cacheType), against onnxruntime's
// float16 graph and its int8 paths (peers/ortweb.js), on the workloads of
// the rows; natively through weight_types_bench. Every output is
// checked against float32 within its type's bound before it is timed.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { WORKLOADS, makeData } from '../../web/bench-kit/workloads.js';
import { maxAbsDiff } from '../../web/bench-kit/timing.js';
import { expectWithin } from '../../tests/js/support/weight-types.mjs';

const execFileP = promisify(execFile);

export const STORAGE_WORKLOADS = ['S1', 'S2', 'C1', 'D1'];

// Our storage types: { weights, cacheType?, label }; cacheType only where
// there is a cache (D1).
export function storageTypes(w) {
  const types = ['f16', 'bf16', 'int8'].map((weights) => ({ weights, label: weights }));
  if (w.cacheLen > 0) {
    for (const t of ['f16', 'bf16']) types.push({ weights: t, cacheType: t, label: `${t}+cache` });
  }
  return types;
}

// Chained products whose rounding the bound counts (tests/js/support/
// weight-types.mjs: 2u per product, of the output's scale). Ours: Q or K,
// V, W_O (3); a cache of the type rounds K and V once more (+2).
// onnxruntime's float16 graph keeps every tensor between its ops in
// float16: the inputs, Q/K/V, the scores, the probabilities, Z and the
// output each round once more (+6).
// onnxruntime's int8 graphs also quantize each activation tensor (the
// inputs of Q, of K and V, and Z before W_O) to uint8 per tensor: a step of
// (max(a, 0) - min(a, 0)) / 255 <= 2 max|a| / 255, so each element errs by
// at most max|a| / 255 ~ u max|a| (u = 2^-8), not u |a_k| as a weight
// does: such a product errs by u max|a| sum |w_k| instead of u sum |a_k
// w_k|, r = max|a| / mean|a| times more (2 for these uniform inputs, 3-4
// for Z, a mix of value rows): 3 products of 1 + r = 5 units each.
export const PRODUCTS = { weights: 3, cache: 2, ortFp16: 9, ortInt8: 15 };

/**
 * got against float32's `want` within the bound of `type` (f16, bf16, int8)
 * for `products` chained products: { maxAbsDiff, error } (error: why it
 * is not timed, or undefined).
 */
export function checkStored(what, type, products, got, want) {
  const diff = maxAbsDiff(got, want);
  try {
    expectWithin(what, type, got, want, products);
    return { maxAbsDiff: diff };
  } catch (e) {
    return { maxAbsDiff: diff, error: `${e.message}; not timed` };
  }
}

/** Writes data[key] of each key as a raw float32 file in `dir`. */
export function writeFloatFiles(dir, data, keys) {
  mkdirSync(dir, { recursive: true });
  for (const k of keys) {
    if (data[k]) writeFileSync(path.join(dir, k), Buffer.from(data[k].buffer, data[k].byteOffset, data[k].byteLength));
  }
}

/**
 * Natively: weight_types_bench on the same weights and inputs as the wasm
 * side. references: { workload: ours' float32 output in wasm }; the native
 * float32 output must match it (tolerance), each type float32's within its
 * bound. { rows: [{ workload, type, ms, weightBytes, maxAbsDiff, error? }] }.
 */
export async function runNativeStorage({ repoRoot, names, references, tolerance, quick }) {
  const exe = path.join(repoRoot, 'build/native/bench/weight_types_bench');
  if (!existsSync(exe)) return { error: `${exe} not built (bash scripts/build.sh native)` };
  const dir = path.join(os.tmpdir(), `sa-storage-${process.pid}`);
  try {
    const todo = STORAGE_WORKLOADS.filter((n) => names.includes(n));
    for (const name of todo) {
      writeFloatFiles(path.join(dir, name), makeData(WORKLOADS.find((w) => w.name === name)),
        ['wq', 'wk', 'wv', 'wo', 'bq', 'bk', 'bv', 'bo', 'xq', 'xkv', 'xpast']);
    }
    await execFileP(exe, ['--data', dir, '--rounds', quick ? '5' : '15'], { maxBuffer: 1 << 20 });
    const rows = JSON.parse(readFileSync(path.join(dir, 'results.json'), 'utf8'))
      .filter((r) => todo.includes(r.workload));
    for (const r of rows) {
      const out = (t) => {
        const b = readFileSync(path.join(dir, r.workload, `out-${t}`));
        return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
      };
      if (r.type === 'f32') {
        const diff = maxAbsDiff(out('f32'), references[r.workload]);
        r.maxAbsDiff = diff;
        if (!(diff <= tolerance)) r.error = `output differs from ours in wasm by ${diff}`;
        continue;
      }
      const [weights, cache] = r.type.split('+');
      const products = PRODUCTS.weights + (cache ? PRODUCTS.cache : 0);
      const c = checkStored(`native ${r.workload} ${r.type}`, weights, products, out(r.type), out('f32'));
      Object.assign(r, c);
    }
    return { rows };
  } catch (e) {
    return { error: String(e.message ?? e).split('\n')[0] };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
