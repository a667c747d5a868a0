// D1 through the C++ API's KV cache, which the JS package does not expose
// yet: bench/js/native/decode_bench.cc, built natively and with Emscripten
// by scripts/bench.sh (or bench/js/tools/decode_bench.sh). Separate
// processes, not interleaved with the peers: a preview, reported apart from
// the table.
import { execFile } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { WORKLOADS, makeData } from '../../web/bench-kit/workloads.js';
import { writeFloatFiles } from './storage.js';

const execFileP = promisify(execFile);

/**
 * Writes D1's shape (`shape`: d_model, heads, cached tokens) and its weights
 * and inputs (raw float32 files) for decode_bench.
 */
export function writeDecodeData(dir) {
  const data = makeData(WORKLOADS.find((w) => w.name === 'D1'));
  writeFloatFiles(dir, data, ['wq', 'wk', 'wv', 'wo', 'bq', 'bk', 'bv', 'bo', 'xpast', 'xq']);
  writeFileSync(path.join(dir, 'shape'), `${data.d} ${data.heads} ${data.cacheLen}\n`);
  return data;
}

/** reference: the first two output values every implementation must give. */
export async function runDecodePreview(repoRoot, reference) {
  const dir = path.join(os.tmpdir(), `sa-d1-${process.pid}`);
  writeDecodeData(dir);
  const result = {};
  const runs = [
    ['native', path.join(repoRoot, 'build/bench-js/decode_bench'), []],
    ['wasm', process.execPath, [path.join(repoRoot, 'build/bench-js/decode_bench.js')]],
  ];
  for (const [kind, exe, pre] of runs) {
    const target = pre[0] ?? exe;
    if (!existsSync(target)) {
      result[kind] = { error: `${path.relative(repoRoot, target)} not built` };
      continue;
    }
    try {
      const { stdout } = await execFileP(exe, [...pre, dir], { maxBuffer: 1 << 20 });
      result[kind] = JSON.parse(stdout).map((r) => ({
        ...r,
        maxAbsDiff: reference ? Math.max(Math.abs(r.out0 - reference[0]), Math.abs(r.out1 - reference[1])) : null,
      }));
    } catch (e) {
      result[kind] = { error: String(e.message ?? e).split('\n')[0] };
    }
  }
  return result;
}
