// The native half of the benchmark, run from run.js as child processes:
//   - build/native/bench/kernels_bench (Google Benchmark, JSON): our
//     kernels per backend and target, repetitions randomly interleaved;
//   - fma_peak (bench/js/native/fma_peak.c, built by scripts/bench.sh):
//     measured fp32 throughput per vector width;
//   - native_ort.js: onnxruntime-node on the same graphs;
//   - variants_bench and sdpa_bench: what grouped-query heads, rotary
//     positions and a sliding window cost or save (one thread).
import { execFile, fork } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { summarize } from '../../web/bench-kit/timing.js';

const execFileP = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '../..');

// The variants' figures: { gqaRatio, ropeOverhead, windowSpeedup, lines }
// (ratios as the two programs print them, lines their whole output).
export async function runVariantsBench({ quick }) {
  const run = async (name, args) => {
    const exe = path.join(repoRoot, 'build/native/bench', name);
    if (!existsSync(exe)) throw new Error(`${exe} not built (bash scripts/build.sh native)`);
    return (await execFileP(exe, args, { maxBuffer: 1 << 20 })).stdout;
  };
  try {
    const variants = await run('variants_bench', ['--rounds', quick ? '9' : '31']);
    const sdpa = await run('sdpa_bench', ['--rounds', quick ? '1' : '3']);
    const number = (text, pattern) => Number(text.match(pattern)?.[1]);
    return {
      gqaRatio: number(variants, /kv heads\s+[\d.]+ ms\s+\(([\d.]+)x/),
      ropeOverhead: number(variants, /with rope\s+[\d.]+ ms\s+\(\+?(-?[\d.]+)%/) / 100,
      windowSpeedup: number(sdpa, /speed-up ([\d.]+)x/),
      lines: `${variants}${sdpa}`.trimEnd().split('\n'),
    };
  } catch (e) {
    return { error: e.message };
  }
}

// Our forward natively on 1 and `threads` threads (threads_bench, every
// workload but L1, interleaved): { rows: [{ workload, oneMs, manyMs }] }.
export async function runThreadsBench({ threads, quick }) {
  const exe = path.join(repoRoot, 'build/native/bench/threads_bench');
  if (!existsSync(exe)) return { error: `${exe} not built (bash scripts/build.sh native)` };
  try {
    const { stdout } = await execFileP(exe, ['--threads', String(threads),
      '--rounds', quick ? '5' : '15'], { maxBuffer: 1 << 20 });
    const rows = [...stdout.matchAll(/^\| (\w+) \| ([\d.]+) \| ([\d.]+) \| [\d.]+x \| yes \|$/gm)]
      .map((m) => ({ workload: m[1], oneMs: Number(m[2]), manyMs: Number(m[3]) }));
    return { threads, rows };
  } catch (e) {
    return { error: String(e.message ?? e).split('\n')[0] };
  }
}

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

/**
 * GEMM 128x768x768 (M=128, K=768, N=768: the S2 projection; "768x768x128")
 * of every table, each run sandwiched between two fma_peak measurements so
 * that its efficiency is taken against the FMA throughput the core has at
 * that moment (this VM's clock moves between about 2.6 and 3.6 GHz).
 */
export async function runGemmEfficiency({ quick }) {
  const exe = path.join(repoRoot, 'build/native/bench/kernels_bench');
  if (!existsSync(exe)) return { error: 'kernels_bench not built' };
  const rounds = [];
  for (let i = 0; i < (quick ? 1 : 3); i++) {
    const before = await runFmaPeak();
    const out = path.join(os.tmpdir(), `kernels_gemm_${process.pid}.json`);
    try {
      await execFileP(exe, [
        '--benchmark_filter=^gemm/.*/128x768x768$',
        `--benchmark_min_time=${quick ? 0.1 : 0.2}`,
        `--benchmark_out=${out}`,
        '--benchmark_out_format=json',
      ], { maxBuffer: 64 << 20 });
      const json = JSON.parse(await readFile(out, 'utf8'));
      const after = await runFmaPeak();
      const gflops = {};
      for (const b of json.benchmarks) gflops[b.name.split('/')[1]] = b['GFLOP/s'] / 1e9;
      rounds.push({ fmaBefore: before, fmaAfter: after, gflops });
    } catch (e) {
      return { error: String(e.message ?? e).split('\n')[0] };
    } finally {
      await rm(out, { force: true });
    }
  }
  return { rounds };
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
