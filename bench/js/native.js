// The native half of the benchmark, run from run.js as child processes:
//   - build/native/bench/kernels_bench (Google Benchmark, JSON): our
//     kernels per backend and target, repetitions randomly interleaved;
//   - fma_peak (bench/js/native/fma_peak.c, built by scripts/bench.sh):
//     measured fp32 throughput per vector width;
//   - native_ort.js: onnxruntime-node on the same graphs.
import { execFile, fork } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { summarize } from './timing.js';

const execFileP = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '../..');

export async function runKernelsBench({ quick, workloads }) {
  const exe = path.join(repoRoot, 'build/native/bench/kernels_bench');
  if (!existsSync(exe)) return { error: `${exe} not built (bash scripts/build.sh native)` };
  const out = path.join(os.tmpdir(), `kernels_bench_${process.pid}.json`);
  const names = workloads.join('|');
  const args = [
    `--benchmark_filter=^(attention/.*/(${names})|gemm/.*/128x768x768)$`,
    `--benchmark_min_time=${quick ? 0.05 : 0.1}`,
    `--benchmark_repetitions=${quick ? 2 : 5}`,
    '--benchmark_enable_random_interleaving=true',
    `--benchmark_out=${out}`,
    '--benchmark_out_format=json',
    '--benchmark_format=console',
  ];
  try {
    await execFileP(exe, args, { maxBuffer: 64 << 20 });
    const json = JSON.parse(await readFile(out, 'utf8'));
    const groups = new Map();
    for (const b of json.benchmarks) {
      if (b.run_type !== 'iteration') continue;
      const scale = { ns: 1e-6, us: 1e-3, ms: 1, s: 1e3 }[b.time_unit];
      if (!groups.has(b.run_name)) groups.set(b.run_name, []);
      groups.get(b.run_name).push(b.real_time * scale);
    }
    const results = [];
    for (const [name, times] of groups) {
      const [kind, table, what] = name.split('/');
      results.push({ kind, table, what, ...summarize(times) });
    }
    return { context: json.context, results, command: [exe, ...args.slice(0, 4)].join(' ') };
  } catch (e) {
    return { error: String(e.message ?? e).split('\n')[0] };
  } finally {
    await rm(out, { force: true });
  }
}

export async function runFmaPeak() {
  const exe = path.join(repoRoot, 'build/bench-js/fma_peak');
  if (!existsSync(exe)) return { error: 'fma_peak not built (scripts/bench.sh builds it)' };
  try {
    const { stdout } = await execFileP(exe);
    return JSON.parse(stdout);
  } catch (e) {
    return { error: String(e.message ?? e).split('\n')[0] };
  }
}

/** references: {workloadName: Float32Array (ours' output)}. */
export function runOrtNode({ names, references, timing, tolerance }) {
  return new Promise((resolve) => {
    const child = fork(path.join(here, 'native_ort.js'), [], { serialization: 'advanced' });
    let answered = false;
    child.on('message', (m) => {
      answered = true;
      resolve(m.ok ? m : { error: m.error });
    });
    child.on('exit', (code) => {
      if (!answered) resolve({ error: `onnxruntime-node child exited with ${code}` });
    });
    child.send({ names, references, timing, tolerance });
  });
}
