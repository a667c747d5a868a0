// Turns the measurements of run.js into Markdown tables and checks the
// speed targets.

const DEFAULT_OURS = 'ours wasm-simd highway';
// The relaxed-SIMD build's default, the build Chrome/Edge 114+ and Node 22+
// load; the targets are judged on DEFAULT_OURS and note this one beside it.
const RELAXED_OURS = 'ours wasm-relaxed highway';

const fmt = (x, digits = 2) => {
  if (x === undefined || x === null || Number.isNaN(x)) return '-';
  if (x >= 100) return x.toFixed(0);
  if (x >= 10) return x.toFixed(1);
  return x.toFixed(digits);
};
const ms = (x) => {
  if (x === undefined || x === null || Number.isNaN(x)) return '-';
  if (x >= 1000) return x.toFixed(0);
  if (x >= 100) return x.toFixed(1);
  if (x >= 1) return x.toFixed(2);
  return x.toFixed(3);
};
const speed = (x) => (x === undefined || x === null || !Number.isFinite(x) ? '-' : `${x >= 10 ? x.toFixed(0) : x.toFixed(1)}x`);

function timedEntry(r, name) {
  const e = r?.entries.find((x) => x.name === name);
  return e && e.median !== undefined && !e.error ? e : null;
}

// The fastest float32 implementation whose name starts with `prefix` (the
// storage types' rows have their own targets).
function bestOf(r, prefix, storage = null) {
  let best = null;
  for (const e of r?.entries ?? []) {
    if ((e.storage?.weights ?? null) !== storage) continue;
    if (e.name.startsWith(prefix) && e.median !== undefined && !e.error) {
      if (!best || e.median < best.median) best = e;
    }
  }
  return best;
}

/** Native: best table of ours per workload, and per-table results. */
function nativeOurs(report) {
  const kb = report.native?.kernelsBench;
  const byWorkload = new Map();
  let gemmBest = null;
  for (const x of kb?.results ?? []) {
    if (x.kind === 'attention') {
      const cur = byWorkload.get(x.what);
      if (!cur || x.median < cur.median) byWorkload.set(x.what, x);
    } else if (x.kind === 'gemm' && x.what === '128x768x768') {
      if (!gemmBest || x.median < gemmBest.median) gemmBest = x;
    }
  }
  return { byWorkload, gemmBest };
}

function ortNodeFor(report, name) {
  const r = report.native?.ortNode?.results?.find((x) => x.workload === name);
  return r ?? null;
}

/**
 * fp32 FMA peak of one core: 1 x GHz x FMA ports x lanes x 2, at the
 * nominal clock (the TSC's, /proc/cpuinfo) and at the clock the core really
 * ran at, taken from fma_peak's measured FMA throughput (ports: 2 FMA units,
 * as on every AVX-512 server core since Skylake-SP Gold/Platinum; the
 * measured throughput, far above 1 port at any clock this CPU reaches,
 * confirms it).
 */
export function derivePeak(meta, native) {
  const ghz = (meta.cpu.mhz || 0) / 1000;
  const lanes = meta.cpu.avx512 ? 16 : meta.cpu.avx2 ? 8 : 4;
  const key = meta.cpu.avx512 ? 'fma512_gflops' : meta.cpu.avx2 ? 'fma256_gflops' : 'fma128_gflops';
  const ports = 2;
  const values = [];
  if (native?.fma && !native.fma.error) values.push(native.fma[key]);
  for (const r of native?.gemm?.rounds ?? []) values.push(r.fmaBefore[key], r.fmaAfter[key]);
  const sorted = values.filter((x) => x > 0).sort((a, b) => a - b);
  const measured = sorted.length ? sorted[sorted.length >> 1] : null;
  return {
    ghz,
    ports,
    lanes,
    key,
    nominal: 1 * ghz * ports * lanes * 2,
    measured,
    measuredRange: sorted.length ? [sorted[0], sorted[sorted.length - 1]] : null,
    effectiveGhz: measured ? measured / (ports * lanes * 2) : null,
    formula: `1 core x ${ghz.toFixed(2)} GHz x ${ports} FMA ports x ${lanes} fp32 lanes x 2 FLOP/FMA`,
  };
}

/** GEMM 128x768x768: best table per sandwich, efficiency vs the FMA throughput around it. */
export function gemmEfficiency(meta, native) {
  const peak = derivePeak(meta, native);
  const rounds = native?.gemm?.rounds ?? [];
  const per = rounds.map((r) => {
    const [table, gflops] = Object.entries(r.gflops).sort((a, b) => b[1] - a[1])[0];
    const around = (r.fmaBefore[peak.key] + r.fmaAfter[peak.key]) / 2;
    return { table, gflops, around, efficiency: gflops / around, nominalEfficiency: gflops / peak.nominal };
  });
  if (!per.length) return null;
  per.sort((a, b) => a.efficiency - b.efficiency);
  return { ...per[per.length >> 1], rounds: per.length, peak };
}

function previewBest(report, kind) {
  const rows = report.decodePreview?.[kind];
  if (!Array.isArray(rows)) return null;
  const ok = rows.filter((r) => r.maxAbsDiff === null || r.maxAbsDiff <= 1e-3);
  return ok.length ? ok.reduce((a, b) => (a.median_ms <= b.median_ms ? a : b)) : null;
}

export function evaluateTargets(report) {
  const t = [];
  const wasm = new Map(report.wasm.map((r) => [r.workload.name, r]));
  const add = (target, status, detail) => t.push({ target, status, detail });
  const ours = (name) => timedEntry(wasm.get(name), DEFAULT_OURS);
  const relaxedNote = (name, peer) => {
    const rx = timedEntry(wasm.get(name), RELAXED_OURS);
    return rx ? `; relaxed-SIMD build ${speed(peer.median / rx.median)} (${ms(rx.median)} ms)` : '';
  };

  for (const name of ['S1', 'S2', 'S4', 'C1', 'D1']) {
    const need = name === 'D1' ? 2 : 1.5;
    const label = `>= ${need}x onnxruntime-web on ${name}`;
    const r = wasm.get(name);
    if (!r) continue;
    const o = ours(name);
    const peer = bestOf(r, 'ort-web');
    const pv = name === 'D1' ? previewBest(report, 'wasm') : null;
    if (!o) {
      add(label, 'n/a', name === 'D1'
        ? 'ours n/a (KV cache pending in the JS API)' + (pv && peer
          ? `; preview through the C++ API in wasm: ${ms(pv.median_ms)} ms = ${speed(peer.median / pv.median_ms)} vs ${peer.name} ${ms(peer.median)} ms`
          : '')
        : 'ours not timed');
    } else if (!peer) add(label, 'n/a', 'onnxruntime-web not timed');
    else {
      const s = peer.median / o.median;
      add(label, s >= need ? 'met' : 'missed',
        `${speed(s)}: ours ${ms(o.median)} ms vs ${peer.name} ${ms(peer.median)} ms` +
        relaxedNote(name, peer));
    }
  }
  if (wasm.has('S4') && wasm.has('S4c') && ours('S4') && ours('S4c')) {
    const f = ours('S4c').median / ours('S4').median;
    add('S4c <= 0.8x the time of S4', f <= 0.8 ? 'met' : 'missed',
      `S4c/S4 = ${f.toFixed(2)} (${ms(ours('S4c').median)} / ${ms(ours('S4').median)} ms)`);
  }
  if (wasm.has('S2') && wasm.has('S3') && ours('S2') && ours('S3')) {
    const f = ours('S3').median / ours('S2').median;
    add('S3 < S2', f < 1 ? 'met' : 'missed',
      `S3/S2 = ${f.toFixed(2)} (${ms(ours('S3').median)} / ${ms(ours('S2').median)} ms)`);
  }
  for (const r of report.wasm) {
    if (r.workload.oursOnly) continue;
    const name = r.workload.name;
    const label = `>= 3x tfjs-wasm on ${name}`;
    const o = ours(name);
    const peer = timedEntry(r, 'tfjs-wasm');
    if (!o) add(label, 'n/a', name === 'D1' ? 'ours n/a (KV cache pending)' : 'ours not timed');
    else if (!peer) add(label, 'n/a', 'tfjs-wasm not timed');
    else {
      const s = peer.median / o.median;
      add(label, s >= 3 ? 'met' : 'missed', `${speed(s)}: ${ms(o.median)} vs ${ms(peer.median)} ms` +
        relaxedNote(name, peer));
    }
  }
  if (report.native) {
    const { byWorkload } = nativeOurs(report);
    for (const name of ['S2', 'S4', 'C1']) {
      if (!wasm.has(name)) continue;
      const label = `native best target >= 1.0x onnxruntime-node on ${name}`;
      const o = byWorkload.get(name);
      const peer = bestOf(ortNodeFor(report, name), 'ort-node');
      if (!o || !peer) add(label, 'n/a', 'not measured');
      else {
        const s = peer.median / o.median;
        add(label, s >= 1 ? 'met' : 'missed',
          `${s.toFixed(2)}x: ours ${o.table} ${ms(o.median)} ms vs ${peer.name} ${ms(peer.median)} ms`);
      }
    }
    const g = gemmEfficiency(report.meta, report.native);
    if (g) {
      add('GEMM 768x768x128 >= 70% of fp32 FMA peak', g.efficiency >= 0.7 ? 'met' : 'missed',
        `${g.table}: ${g.gflops.toFixed(0)} GFLOP/s = ${(g.efficiency * 100).toFixed(1)}% of the ` +
        `${g.around.toFixed(0)} GFLOP/s FMA throughput measured around it ` +
        `(${(g.nominalEfficiency * 100).toFixed(0)}% of the ${g.peak.nominal.toFixed(1)} GFLOP/s nominal peak)`);
    }
  }
  storageTargets(wasm, add);
  const pool = new Map((report.pool?.rows ?? []).map((r) => [r.workload, r]));
  for (const name of ['S2', 'S4', 'S4c', 'C1']) {
    const r = pool.get(name);
    if (r) {
      add(`pool of 2 >= 1.7x our synchronous 1 thread on ${name}`, r.speedup >= 1.7 ? 'met' : 'missed',
        `${r.speedup.toFixed(2)}x: ${ms(r.poolMs)} ms vs ${ms(r.syncMs)} ms`);
    }
  }
  const poolD1 = pool.get('D1');
  if (poolD1) {
    const ratio = poolD1.poolMs / poolD1.syncMs;
    add('pool of 2: D1 <= 0.7x the synchronous time per token', ratio <= 0.7 ? 'met' : 'missed',
      `${ratio.toFixed(2)}x: ${ms(poolD1.poolMs)} ms vs ${ms(poolD1.syncMs)} ms`);
  }
  const busy = pool.get('S2')?.mainThreadMsPerCall;
  if (busy !== undefined) {
    add('pool: calling thread busy < 1 ms per S2 forward', busy < 1 ? 'met' : 'missed',
      `${busy.toFixed(2)} ms of JS on the calling thread per call`);
  }
  const th = report.threads;
  if (th && !th.error) {
    const n = th.threads;
    const twm = new Map(th.wasm.map((r) => [r.workload.name, r]));
    for (const name of ['S2', 'S4', 'C1']) {
      const r = twm.get(name);
      const o = timedEntry(r, `${DEFAULT_OURS}, ${n} threads`);
      const peer = bestOf(r, 'ort-web');
      if (o && peer) {
        const x = peer.median / o.median;
        add(`wasm, ${n} threads: >= 1.5x onnxruntime-web with ${n} threads on ${name}`,
          x >= 1.5 ? 'met' : 'missed', `${x.toFixed(2)}x: ours ${ms(o.median)} ms vs ${peer.name} ${ms(peer.median)} ms`);
      }
    }
    for (const name of ['S2', 'S4', 'S4c', 'C1']) {
      const r = twm.get(name);
      const one = timedEntry(r, DEFAULT_OURS);
      const many = timedEntry(r, `${DEFAULT_OURS}, ${n} threads`);
      if (one && many) {
        const x = one.median / many.median;
        add(`ours 1 -> ${n} threads >= 1.8x on ${name} (wasm SIMD)`, x >= 1.8 ? 'met' : 'missed',
          `${x.toFixed(2)}x: ${ms(one.median)} -> ${ms(many.median)} ms`);
      }
    }
    const nativeOursRows = new Map((th.native?.ours?.rows ?? []).map((r) => [r.workload, r]));
    for (const name of ['S2', 'S4', 'C1']) {
      const o = nativeOursRows.get(name);
      const peer = bestOf(th.native?.ortNode?.results?.find((x) => x.workload === name), 'ort-node');
      if (o && peer) {
        const x = peer.median / o.manyMs;
        add(`native, ${n} threads: >= 1.0x onnxruntime-node with ${n} threads on ${name}`,
          x >= 1 ? 'met' : 'missed', `${x.toFixed(2)}x: ours ${ms(o.manyMs)} ms vs ${peer.name} ${ms(peer.median)} ms`);
      }
    }
  }
  const v = report.native?.variants;
  if (v && !v.error) {
    add('sliding window [1024, 0] on L1 >= 6x no window (native, 1 thread)',
      v.windowSpeedup >= 6 ? 'met' : 'missed', `${v.windowSpeedup}x`);
    add('D1 attention with 2 kv heads <= 0.4x 12 (native, 1 thread)',
      v.gqaRatio <= 0.4 ? 'met' : 'missed', `${v.gqaRatio}x`);
    add('RoPE adds <= 5% to S2 (native, 1 thread)', v.ropeOverhead <= 0.05 ? 'met' : 'missed',
      `${(v.ropeOverhead * 100).toFixed(1)}%`);
  }
  t.push(...trainingTargets(report.training));
  for (const [label, size] of [['default SIMD .wasm <= 200 KB', report.meta.sizes.simdWasm],
    ['relaxed-SIMD .wasm <= 200 KB', report.meta.sizes.relaxedWasm]]) {
    if (size) {
      add(label, size <= 200 * 1000 ? 'met' : 'missed', `${(size / 1000).toFixed(1)} kB (${size} bytes)`);
    }
  }
  return t;
}

// Ours on `build` ('wasm-simd' or 'wasm-relaxed', highway) with a storage
// type (label as storage.js's: 'f16', 'int8', 'f16+cache', ...; 'f32').
function oursStored(r, build, label) {
  const name = `ours ${build} highway`;
  if (label === 'f32') return timedEntry(r, name);
  const [weights, cache] = label.split('+');
  return timedEntry(r, `${name}, ${weights} weights${cache ? '+cache' : ''}`);
}

// The storage types' targets: D1 with float16 weights and cache >= 2x
// onnxruntime-web in float32, D1 with int8 weights >= 1.3x onnxruntime-web's
// faster int8 graph, S2 with int8 weights no slower than float32.
function storageTargets(wasm, add) {
  const judge = (label, need, name, ours, peerOf) => {
    const r = wasm.get(name);
    if (!r) return;
    const o = oursStored(r, 'wasm-simd', ours);
    const peer = peerOf(r, 'wasm-simd');
    if (!o || !peer) {
      add(label, 'n/a', `${o ? peer?.name ?? 'the peer' : 'ours'} not timed`);
      return;
    }
    const x = peer.median / o.median;
    const rx = oursStored(r, 'wasm-relaxed', ours);
    const rxPeer = peerOf(r, 'wasm-relaxed');
    add(label, x >= need ? 'met' : 'missed', `${x.toFixed(2)}x: ours ${ms(o.median)} ms vs ${peer.name} ` +
      `${ms(peer.median)} ms${rx && rxPeer ? `; relaxed-SIMD build ${(rxPeer.median / rx.median).toFixed(2)}x ` +
        `(${ms(rx.median)} vs ${ms(rxPeer.median)} ms)` : ''}`);
  };
  judge('D1, f16 weights and cache: >= 2x onnxruntime-web (fp32)', 2, 'D1', 'f16+cache',
    (r) => bestOf(r, 'ort-web'));
  judge('D1, int8 weights: >= 1.3x onnxruntime-web int8', 1.3, 'D1', 'int8',
    (r) => bestOf(r, 'ort-web', 'int8'));
  judge('S2, int8 weights: no slower than f32 (>= 1.0x)', 1, 'S2', 'int8',
    (r, build) => oursStored(r, build, 'f32'));
}

const STORAGE_LABELS = ['f32', 'f16', 'bf16', 'int8', 'f16+cache', 'bf16+cache'];

/**
 * The storage types' tables: ours per type and build in wasm against
 * onnxruntime-web's float32 (faster graph), float16 and int8 graphs, then
 * natively (weight_types_bench) against onnxruntime-node's.
 */
function storageTables(report) {
  const lines = [];
  const rows = [];
  const cell = (e, base) => (e ? `${ms(e.median)}${base && e !== base ? ` (${(base.median / e.median).toFixed(2)}x)` : ''}` : '-');
  const peerCells = (r, prefix) => {
    const fp32 = bestOf(r, prefix);
    const fp16 = bestOf(r, prefix, 'f16');
    const int8 = bestOf(r, prefix, 'int8');
    return { fp32, cells: [fp32 ? `${ms(fp32.median)} (${fp32.name.slice(prefix.length + 1)})` : '-',
      cell(fp16), int8 ? `${ms(int8.median)} (${int8.name.slice(prefix.length + 6)})` : '-'], int8 };
  };
  for (const r of report.wasm) {
    if (!r.entries.some((e) => e.storage)) continue;
    const peers = peerCells(r, 'ort-web');
    for (const build of ['wasm-simd', 'wasm-relaxed']) {
      const f32 = oursStored(r, build, 'f32');
      const typed = STORAGE_LABELS.map((t) => oursStored(r, build, t));
      if (!typed.some(Boolean)) continue;
      const best16 = oursStored(r, build, r.workload.cacheLen > 0 ? 'f16+cache' : 'f16');
      const int8 = oursStored(r, build, 'int8');
      rows.push([r.workload.name, build, ...typed.map((e) => cell(e, f32)), ...peers.cells,
        best16 && peers.fp32 ? speed(peers.fp32.median / best16.median) : '-',
        int8 && peers.int8 ? speed(peers.int8.median / int8.median) : '-']);
    }
  }
  if (!rows.length) return '';
  lines.push('**Storage types, WebAssembly, Node, 1 thread** (median ms; in brackets the speed against the same ' +
    'build in f32; `+cache`: the KV cache in the type too; each output checked against f32 within the type\'s ' +
    'bound before timing; onnxruntime-web\'s int8 graphs take the weights as our package quantizes them)');
  lines.push('');
  lines.push(table(['workload', 'ours', ...STORAGE_LABELS, 'ort-web fp32 (faster graph)', 'ort-web fp16',
    'ort-web int8 (faster graph)', 'ours f16 (D1: +cache) vs ort-web fp32', 'ours int8 vs ort-web int8'], rows));
  lines.push('');
  const st = report.native?.storage;
  if (st) {
    lines.push('**Storage types, native, 1 thread** (`weight_types_bench --data`: the same weights and inputs, ' +
      'interleaved, median ms and the speed against f32; onnxruntime-node on the same graphs)');
    lines.push('');
    if (st.error) lines.push(`failed: ${st.error}`);
    else {
      const nrows = [];
      for (const name of [...new Set(st.rows.map((x) => x.workload))]) {
        const get = (t) => st.rows.find((x) => x.workload === name && x.type === t && !x.error);
        const f32 = get('f32');
        const on = ortNodeFor(report, name);
        const peers = peerCells(on, 'ort-node');
        const best16 = get(name === 'D1' ? 'f16+cache' : 'f16');
        nrows.push([name, ...STORAGE_LABELS.map((t) => {
          const e = get(t);
          const failed = st.rows.find((x) => x.workload === name && x.type === t && x.error);
          if (failed) return 'mismatch';
          return e ? `${ms(e.ms)}${e !== f32 && f32 ? ` (${(f32.ms / e.ms).toFixed(2)}x)` : ''}` : '-';
        }), ...peers.cells,
        best16 && peers.fp32 ? speed(peers.fp32.median / best16.ms) : '-',
        get('int8') && peers.int8 ? speed(peers.int8.median / get('int8').ms) : '-']);
      }
      lines.push(table(['workload', ...STORAGE_LABELS, 'ort-node fp32 (faster graph)', 'ort-node fp16',
        'ort-node int8 (faster graph)', 'ours f16 (D1: +cache) vs ort-node fp32', 'ours int8 vs ort-node int8'], nrows));
      lines.push('');
    }
  }
  return lines.join('\n');
}

// runPoolBench's rows (pool.js) as a Markdown table.
export function poolTable({ workers, rows }) {
  const lines = [`| workload | synchronous, 1 thread (ms) | pool of ${workers} (ms) | speed-up |` +
    ' main thread busy per call (ms) |', '|---|---:|---:|---:|---:|'];
  for (const r of rows) {
    lines.push(`| ${r.workload} | ${ms(r.syncMs)} | ${ms(r.poolMs)} | ${r.speedup.toFixed(2)}x | ` +
      `${r.mainThreadMsPerCall?.toFixed(2) ?? ''} |`);
  }
  return lines.join('\n');
}

// The threadCounts section's table: a row per workload and count.
function threadCountsTable(report) {
  const { counts, runs, pools } = report.threadCounts;
  const runAt = new Map(runs.map((r) => [r.threads, r]));
  const oneThread = runs.find((r) => r.native?.ours?.rows);
  const rows = [];
  const names = [...new Set(runs.flatMap((r) => r.wasm?.map((x) => x.workload.name) ?? []))];
  for (const name of names) {
    for (const n of counts) {
      const run = runAt.get(n);
      // Count 1 without its own run: the single-thread sections' numbers.
      const r = run ? run.wasm?.find((x) => x.workload.name === name)
        : report.wasm?.find((x) => x.workload.name === name);
      const suffix = n > 1 ? `, ${n} threads` : '';
      const nodeResults = run ? run.native?.ortNode?.results : report.native?.ortNode?.results;
      const node = bestOf(nodeResults?.find((x) => x.workload === name), 'ort-node');
      const native = n > 1 ? run?.native?.ours?.rows?.find((x) => x.workload === name)?.manyMs
        : oneThread?.native.ours.rows.find((x) => x.workload === name)?.oneMs;
      const pool = pools.find((p) => p.workers === n)?.rows?.find((x) => x.workload === name);
      rows.push([name, String(n), run?.error ?? ms(timedEntry(r, `${DEFAULT_OURS}${suffix}`)?.median),
        ms(timedEntry(r, `${RELAXED_OURS}${suffix}`)?.median), ms(bestOf(r, 'ort-web')?.median),
        ms(native), ms(node?.median), ms(pool?.poolMs)]);
    }
  }
  const failed = pools.filter((p) => p.error).map((p) => `pool of ${p.workers}: ${p.error}`);
  return table(['workload', 'threads', 'ours wasm-simd', 'ours wasm-relaxed',
    'ort-web (best graph)', 'ours native', 'ort-node (best)', 'pool of as many workers'], rows) +
    (failed.length ? `\n\n${failed.join('; ')}` : '');
}

function table(header, rows) {
  const out = [`| ${header.join(' | ')} |`, `|${header.map((h, i) => (i === 0 ? '---' : '---:')).join('|')}|`];
  for (const r of rows) out.push(`| ${r.join(' | ')} |`);
  return out.join('\n');
}

export function renderMarkdown(report) {
  const { meta } = report;
  const lines = [];
  const cpu = meta.cpu;
  lines.push(`Measured ${meta.date.slice(0, 16).replace('T', ' ')} UTC (commit ${meta.commit})` +
    `${meta.quick ? ', --quick' : ''}: ${cpu.model}, ${cpu.cpus} vCPUs (${cpu.hypervisor ?? 'bare metal'}), ` +
    `${cpu.mhz} MHz, L1d ${cpu.l1d}, L2 ${cpu.l2}, L3 ${cpu.l3}; Node ${meta.node} (V8 ${meta.v8}` +
    `${meta.nodeFlags?.length ? `, ${meta.nodeFlags.join(' ')}` : ''}); ` +
    Object.entries(meta.versions).map(([k, v]) => `${k} ${v}`).join(', ') +
    `. Load average ${meta.loadAvgStart.map((x) => x.toFixed(1)).join('/')} at start, ` +
    `${(meta.loadAvgEnd ?? []).map((x) => x.toFixed(1)).join('/')} at the end; ${meta.seconds?.toFixed(0)} s.`);
  lines.push('');

  // Summary: wasm, one row per workload.
  const impls = [];
  for (const r of report.wasm) {
    for (const e of r.entries) if (!e.storage && !impls.includes(e.name)) impls.push(e.name);
  }
  lines.push('**WebAssembly, Node, 1 thread** (median ms per forward; in brackets: how many times faster ours ' +
    `\`${DEFAULT_OURS}\` is)`);
  lines.push('');
  const summaryRows = report.wasm.map((r) => {
    const o = timedEntry(r, DEFAULT_OURS);
    return [
      r.workload.name,
      fmt(r.workload.flops / 1e9, 3),
      ...impls.map((name) => {
        const e = r.entries.find((x) => x.name === name);
        if (!e) return '';
        if (e.na) return e.na;
        if (e.error) return e.error.startsWith('output differs') ? 'mismatch' : 'error';
        if (name === DEFAULT_OURS || !o) return `**${ms(e.median)}**`;
        return `${ms(e.median)} (${speed(e.median / o.median)})`;
      }),
    ];
  });
  lines.push(table(['workload', 'GFLOP', ...impls], summaryRows));
  lines.push('');

  // Details.
  lines.push('<details><summary>Details: p25-p75, GFLOP/s, output check, samples</summary>');
  lines.push('');
  const detailRows = [];
  for (const r of report.wasm) {
    const o = timedEntry(r, DEFAULT_OURS);
    for (const e of r.entries) {
      if (e.na) {
        detailRows.push([r.workload.name, e.name, e.na, '', '', '', '', '', '']);
        continue;
      }
      if (e.error && e.median === undefined) {
        detailRows.push([r.workload.name, e.name, e.error, '', '', '', '', '', '']);
        continue;
      }
      detailRows.push([
        r.workload.name,
        e.name + (e.kernels ? ` (${e.kernels})` : ''),
        ms(e.median),
        `${ms(e.p25)}-${ms(e.p75)}`,
        fmt(e.gflops),
        ms(e.cpuMedian),
        o && e !== o ? speed(e.median / o.median) : '',
        e.maxAbsDiff === undefined ? '' : e.maxAbsDiff.toExponential(1),
        `${e.n}${e.rounds ? ` / ${e.rounds}` : ''}`,
      ]);
    }
  }
  lines.push(table(['workload', 'implementation', 'median ms', 'p25-p75 ms', 'GFLOP/s', 'CPU ms', 'ours faster',
    `max abs diff vs ${report.wasm.some((r) => r.reference?.startsWith('plain')) ? 'ours (D1: plain JS)' : 'ours'}`,
    'samples / rounds'], detailRows));
  lines.push('');
  const shared = report.wasm.filter((r) => r.contention > 1.05);
  lines.push('CPU ms: the process\'s CPU time per call, all threads (median); a wall time well above it means ' +
    'the core was shared with other work during the run (such a workload is timed again, up to twice, and the ' +
    'least disturbed run kept). Speed-ups compare medians of interleaved rounds.' +
    (shared.length ? ` Still disturbed (median wall/CPU): ${shared.map((r) => `${r.workload.name} ${r.contention.toFixed(2)}`).join(', ')}.` : ''));
  lines.push('');
  lines.push('</details>');
  lines.push('');

  const storage = storageTables(report);
  if (storage) lines.push(storage);

  const l1 = report.wasm.find((r) => r.workload.name === 'L1');
  if (l1) {
    const e = l1.entries[0];
    if (e.error && e.median === undefined) lines.push(`**L1** (T = 16384, causal, ours only): failed: ${e.error}`);
    else {
      lines.push(`**L1** (T = 16384, d_model 256, 4 heads, causal; ours only, SIMD build, ${e.name.replace('ours wasm-simd ', '')}): ` +
        `completes in ${(e.median / 1000).toFixed(2)} s per forward (${fmt(e.gflops)} GFLOP/s counted as if dense; ` +
        `first call ${(e.firstCallMs / 1000).toFixed(2)} s); peak wasm heap ${(e.peakHeapBytes / 2 ** 20).toFixed(0)} MiB ` +
        `of the ${(e.maxHeapBytes / 2 ** 20).toFixed(0)} MiB maximum (fresh instance; ${(e.heapBefore / 2 ** 20).toFixed(0)} MiB at start); ` +
        `rows 0, 8191, 16383 within ${e.maxAbsDiff.toExponential(1)} of a double-precision JS reference.`);
    }
    lines.push('');
  }

  if (report.decodePreview) {
    const pw = previewBest(report, 'wasm');
    const pn = previewBest(report, 'native');
    const d1 = report.wasm.find((r) => r.workload.name === 'D1');
    const ortWeb = bestOf(d1, 'ort-web');
    const ortNode = bestOf(ortNodeFor(report, 'D1'), 'ort-node');
    const part = (p, peer, label) => (p ? `${label} ${p.table} ${ms(p.median_ms)} ms (p25-p75 ${ms(p.p25_ms)}-${ms(p.p75_ms)})` +
      (peer ? `, ${speed(peer.median / p.median_ms)} vs ${peer.name}` : '') : `${label}: not measured`);
    const pkgD1 = timedEntry(d1, DEFAULT_OURS);
    lines.push('**D1 through the C++ API** (`bench/js/native/decode_bench.cc`: `ForwardIncremental` on a 512-token ' +
      'KV cache, its own process, not interleaved; output checked against the plain JS one; it also runs in wasm, which kernels_bench does not): ' +
      `${part(pn, ortNode, 'native')}; ${part(pw, ortWeb, 'wasm-simd128')}` +
      (pkgD1 ? ` (through the package: ${ms(pkgD1.median)} ms, in the table).` : ' (the package itself: n/a above).'));
    lines.push('');
  }

  if (report.pool) {
    lines.push('**Worker pool** (`createAttentionPool({ workers: 2 })`, SIMD build, highway; ' +
      '`bench/js/pool.js`: each worker its heads, interleaved with the synchronous API on one thread)');
    lines.push('');
    lines.push(report.pool.error ? `failed: ${report.pool.error}` : poolTable(report.pool));
    lines.push('');
  }

  if (report.threads) {
    const th = report.threads;
    lines.push(`**${th.threads ?? 2} threads** (a child process: ours on the threaded builds, ` +
      'onnxruntime-web with `numThreads` and onnxruntime-node with `intraOpNumThreads` set to it; ' +
      'each workload interleaved with ours on one thread; natively `threads_bench`)');
    lines.push('');
    if (th.error) lines.push(`failed: ${th.error}`);
    else {
      const n = th.threads;
      const nat = new Map((th.native?.ours?.rows ?? []).map((r) => [r.workload, r]));
      lines.push(table(['workload', 'ours 1 thread', `ours ${n} threads`, `relaxed ${n} threads`,
        `ort-web ${n} threads (best graph)`, 'ours speed-up', `native ours 1 / ${n} threads`,
        `ort-node ${n} threads (best)`],
      th.wasm.map((r) => {
        const name = r.workload.name;
        const one = timedEntry(r, DEFAULT_OURS);
        const many = timedEntry(r, `${DEFAULT_OURS}, ${n} threads`);
        const relaxed = timedEntry(r, `${RELAXED_OURS}, ${n} threads`);
        const peer = bestOf(r, 'ort-web');
        const node = bestOf(th.native?.ortNode?.results?.find((x) => x.workload === name), 'ort-node');
        const o = nat.get(name);
        return [name, ms(one?.median), ms(many?.median), ms(relaxed?.median), ms(peer?.median),
          one && many ? speed(one.median / many.median) : '-',
          o ? `${ms(o.oneMs)} / ${ms(o.manyMs)}` : '-', ms(node?.median)];
      })));
    }
    lines.push('');
  }

  if (report.threadCounts) {
    lines.push(`**Every thread count** (\`--threads ${report.threadCounts.counts.join(',')}\`: ` +
      'the threads runs above, one child process per count, ours and onnxruntime-web interleaved ' +
      'in each; natively `threads_bench` and onnxruntime-node with `intraOpNumThreads`; the pool ' +
      'of as many workers, SIMD build, against the synchronous API), median ms');
    lines.push('');
    lines.push(threadCountsTable(report));
    lines.push('');
  }

  if (report.native?.variants) {
    const v = report.native.variants;
    lines.push('**Attention variants** (native, one thread: `variants_bench`, `sdpa_bench`)');
    lines.push('');
    lines.push(v.error ? `failed: ${v.error}` : ['```', ...v.lines, '```'].join('\n'));
    lines.push('');
  }

  if (report.native) {
    const n = report.native;
    const { byWorkload } = nativeOurs(report);
    lines.push('**Native, 1 thread** (ours: `kernels_bench`, Google Benchmark, median of repetitions; ' +
      `onnxruntime-node ${meta.versions['onnxruntime-node']}, CPU EP, 1 intra-op thread)`);
    lines.push('');
    if (n.kernelsBench?.error) lines.push(`kernels_bench: ${n.kernelsBench.error}`);
    if (n.ortNode?.error) lines.push(`onnxruntime-node: ${n.ortNode.error}`);
    const rows = [];
    for (const r of report.wasm) {
      if (r.workload.oursOnly) continue;
      const name = r.workload.name;
      const o = byWorkload.get(name);
      const on = ortNodeFor(report, name);
      const cell = (label) => {
        const e = on?.entries.find((x) => x.name === label);
        if (!e) return '-';
        if (e.error) return e.error.startsWith('output differs') ? 'mismatch' : 'error';
        return `${ms(e.median)} (${ms(e.p25)}-${ms(e.p75)})`;
      };
      const best = bestOf(on, 'ort-node');
      const pv = name === 'D1' ? previewBest(report, 'native') : null;
      if (!o && pv) {
        rows.push([name, `${ms(pv.median_ms)} (${ms(pv.p25_ms)}-${ms(pv.p75_ms)})`, `${pv.table} (decode_bench)`,
          fmt(r.workload.flops / (pv.median_ms * 1e6)), cell('ort-node MHA op'), cell('ort-node plain'),
          best ? speed(best.median / pv.median_ms) : '-']);
        continue;
      }
      rows.push([
        name,
        o ? `${ms(o.median)} (${ms(o.p25)}-${ms(o.p75)})` : '-',
        o ? o.table : '',
        o ? fmt(r.workload.flops / (o.median * 1e6)) : '',
        cell('ort-node MHA op'),
        cell('ort-node plain'),
        o && best ? speed(best.median / o.median) : '-',
      ]);
    }
    lines.push(table(['workload', 'ours best, ms (p25-p75)', 'target', 'GFLOP/s', 'ort-node MHA op, ms',
      'ort-node plain, ms', 'ours faster'], rows));
    lines.push('');
    // Per table.
    const kb = n.kernelsBench?.results ?? [];
    const tables = [...new Set(kb.map((x) => x.table))];
    const cols = [...new Set(kb.filter((x) => x.kind === 'attention').map((x) => x.what))];
    if (tables.length) {
      lines.push('<details><summary>Native, every backend and target (median ms; GEMM in GFLOP/s)</summary>');
      lines.push('');
      lines.push(table(['table', 'GEMM 128x768x768', ...cols], tables.map((tb) => {
        const g = kb.find((x) => x.table === tb && x.kind === 'gemm');
        return [tb, g ? fmt((2 * 128 * 768 * 768) / (g.median * 1e6)) : '-',
          ...cols.map((c) => ms(kb.find((x) => x.table === tb && x.what === c)?.median))];
      })));
      lines.push('');
      lines.push('</details>');
      lines.push('');
    }
    const peak = derivePeak(meta, n);
    const g = gemmEfficiency(meta, n);
    if (peak.measured) {
      lines.push(`**fp32 FMA peak, one core**: ${peak.formula} = **${peak.nominal.toFixed(1)} GFLOP/s** at the ` +
        `nominal clock. Measured with \`fma_peak\` (${peak.key.replace('_gflops', '')}, 12 independent chains): ` +
        `${peak.measuredRange[0].toFixed(0)}-${peak.measuredRange[1].toFixed(0)} GFLOP/s, median ` +
        `${peak.measured.toFixed(0)} = ${peak.ports} ports x ${peak.lanes} lanes x 2 at ` +
        `${peak.effectiveGhz.toFixed(2)} GHz: the VM's core runs above its nominal clock. ` +
        (n.fma && !n.fma.error ? `Other widths: 256-bit FMA ${n.fma.fma256_gflops}, 128-bit FMA ${n.fma.fma128_gflops}, ` +
          `128-bit mul+add (all that wasm-simd128 has: no FMA) ${n.fma.muladd128_gflops} GFLOP/s. ` : '') +
        (g ? `GEMM 768x768x128 (M=128, K=N=768), best table ${g.table}: ${g.gflops.toFixed(0)} GFLOP/s = ` +
          `**${(g.efficiency * 100).toFixed(1)}%** of the FMA throughput measured just before and after it ` +
          `(${g.around.toFixed(0)} GFLOP/s; median of ${g.rounds}), ${(g.nominalEfficiency * 100).toFixed(0)}% of the nominal peak.` : ''));
      lines.push('');
    }
  }

  const s = meta.sizes;
  if (s.simdWasm) {
    lines.push(`Sizes: SIMD build ${(s.simdWasm / 1000).toFixed(1)} kB .wasm + ${(s.simdJs / 1000).toFixed(1)} kB .js; ` +
      (s.relaxedWasm ? `relaxed-SIMD ${(s.relaxedWasm / 1000).toFixed(1)} kB + ${(s.relaxedJs / 1000).toFixed(1)} kB; ` : '') +
      `non-SIMD ${(s.nosimdWasm / 1000).toFixed(1)} kB + ${(s.nosimdJs / 1000).toFixed(1)} kB (uncompressed).`);
    lines.push('');
  }

  if (report.training) lines.push(trainingSection(report.training), '');
  if (report.llamaStack) {
    lines.push(report.llamaStack.entries ? llamaStackSection(report.llamaStack)
      : `**A Llama-shaped decoding step**: failed: ${report.llamaStack.error}`, '');
  }

  lines.push('**Speed targets**');
  lines.push('');
  lines.push(table(['target', 'status', 'measured'], report.targets.map((x) => [x.target,
    x.status === 'met' ? 'met' : x.status === 'missed' ? '**missed**' : x.status, x.detail])));
  lines.push('');
  return lines.join('\n');
}

// The training rows (training.js): their targets and their section.
const BACKWARD_LIMIT = 2.5; // the backward's time over the training forward's
const TRAINING_FORWARD_LIMIT = 0.1; // the training forward's cost over a plain forward
const STEP_SPEEDUP = 3; // tfjs-wasm's training step over ours

function trainingTargets(tr) {
  const t = [];
  const add = (target, status, detail) => t.push({ target, status, detail });
  const percent = (x) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;
  // f, training, b: the medians (ms); cpu: the same of CPU time, where known.
  const backward = (name, where, f, training, b, cpu) => {
    add(`${where}: backward <= ${BACKWARD_LIMIT}x the training forward on ${name}`,
      b / training <= BACKWARD_LIMIT ? 'met' : 'missed',
      `${(b / training).toFixed(2)}x: ${ms(b)} vs ${ms(training)} ms (${(b / f).toFixed(2)}x the plain forward)` +
      (cpu ? `; CPU time ${(cpu.b / cpu.training).toFixed(2)}x` : ''));
    add(`${where}: training forward <= +${TRAINING_FORWARD_LIMIT * 100}% over the plain forward on ${name}`,
      training / f - 1 <= TRAINING_FORWARD_LIMIT ? 'met' : 'missed',
      `${percent(training / f - 1)}: ${ms(training)} vs ${ms(f)} ms` +
      (cpu ? `; CPU time ${percent(cpu.training / cpu.f - 1)}` : ''));
  };
  for (const r of tr?.ratios ?? []) {
    const [f, training, b] = [r.forward, r['training forward'], r.backward];
    if (r.error) add(`wasm: backward and training forward on ${r.workload}`, 'n/a', r.error);
    else {
      backward(r.workload, 'wasm (training build)', f.median, training.median, b.median,
        { f: f.cpuMedian, training: training.cpuMedian, b: b.cpuMedian });
      const inference = r['inference build'];
      if (inference) {
        t[t.length - 1].detail += `; ${percent(training.median / inference.median - 1)} over the ` +
          `inference build's forward (${ms(inference.median)} ms)`;
      }
    }
  }
  for (const r of tr?.native?.rows ?? []) {
    if (['S2', 'S4'].includes(r.name)) {
      backward(r.name, `native (${tr.native.kernels})`, r.forward_ms, r.training_forward_ms, r.backward_ms);
    }
  }
  const st = tr?.step;
  if (st) {
    const label = `training step on ${st.workload} (forward, backward, Adam) >= ${STEP_SPEEDUP}x tfjs-wasm`;
    if (st.error) add(label, 'n/a', st.error);
    else {
      const x = st.tfjs.median / st.ours.median;
      add(label, x >= STEP_SPEEDUP ? 'met' : 'missed', `${speed(x)}: ${ms(st.ours.median)} vs ${ms(st.tfjs.median)} ms` +
        `; CPU time ${speed(st.tfjs.cpuMedian / st.ours.cpuMedian)}`);
    }
  }
  const l1 = tr?.l1;
  if (l1) {
    add('L1 backward completes in wasm within the default memory', l1.error ? 'missed' : 'met', l1.error ??
      `backward ${(l1.backwardMs / 1000).toFixed(1)} s; peak heap ${(l1.peakHeapBytes / 2 ** 20).toFixed(0)} MiB ` +
      `of ${(l1.maxHeapBytes / 2 ** 20).toFixed(0)} MiB`);
  }
  return t;
}

function trainingSection(tr) {
  const lines = ['**Training** (`bench/js/training.js`: the training build, `createAttentionModule({ training: true })`, ' +
    'SIMD, one thread; median ms of interleaved rounds, p25-p75 in brackets)', ''];
  const cell = (e) => (e ? `${ms(e.median)} (${ms(e.p25)}-${ms(e.p75)})` : '-');
  if (tr.ratios.length) {
    const ratio = (a, b, key) => `${(a[key] / b[key]).toFixed(2)}x`;
    lines.push(table(['workload', 'inference build forward', 'plain forward', 'training forward', 'backward',
      'backward / training forward', 'training forward / plain', 'the same in CPU time', 'wall / CPU'],
    tr.ratios.map((r) => (r.error
      ? [r.workload, r.error, '', '', '', '', '', '', '']
      : [r.workload, cell(r['inference build']), cell(r.forward), cell(r['training forward']), cell(r.backward),
        ratio(r.backward, r['training forward'], 'median'), ratio(r['training forward'], r.forward, 'median'),
        `${ratio(r.backward, r['training forward'], 'cpuMedian')}, ${ratio(r['training forward'], r.forward, 'cpuMedian')}`,
        r.contention.toFixed(2)]))));
    lines.push('');
    lines.push('The backward runs on the object of the training forwards (its gradients copied to JS, as ' +
      '`backward()` returns them); the plain forward on a second object of the same build, the inference ' +
      'build\'s (SIMD, highway) on a third; before timing, ' +
      'the training forward\'s output is checked against the plain one and the backward for finite, ' +
      'bit-identical gradients on two calls.');
    lines.push('');
  }
  const st = tr.step;
  if (st) {
    if (st.error && !st.checks) lines.push(`Training step: failed: ${st.error}`);
    else {
      const c = st.checks;
      const rel = (k) => `${(c[k].maxAbsDiff / c[k].scale).toExponential(1)}`;
      const grads = Object.keys(c).filter((k) => k.startsWith('d'));
      lines.push(`Training step on ${st.workload} (training forward, \`backward(dOutput)\`, \`Adam.step\`; ` +
        `Adam lr ${st.adam.lr}, betas ${st.adam.beta1}/${st.adam.beta2}, eps ${st.adam.eps}) against tfjs-wasm's ` +
        '(`tf.variableGrads` of sum(output * dOutput) over the input and the weights, `tf.train.adam`\'s ' +
        '`applyGradients`): ' + (st.error ? st.error
        : `ours ${cell(st.ours)} ms, tfjs-wasm ${cell(st.tfjs)} ms: **${speed(st.tfjs.median / st.ours.median)}** ` +
          `(wall/CPU ${st.contention.toFixed(2)}).`));
      lines.push('');
      lines.push(`Checked first, one step from the same weights, max |diff| over max |value| (tolerance ${st.tolerance}): ` +
        `output ${rel('output')}; gradients ${grads.map((k) => `${k} ${rel(k)}`).join(', ')}; ` +
        `weights after the step: tfjs's against Adam's first step from its gradients ` +
        `${c.tfjsWeightsAfterStep.maxAbsDiff.toExponential(1)} (elementwise, tolerance 1e-6), ours through their ` +
        `forward against a fresh object holding that step from our gradients ${rel('oursWeightsAfterStep')}, ` +
        `and against tfjs's forward after its step ${rel('afterStepVsTfjs')} (the step moved the output by ` +
        `${c.stepMoved.toExponential(1)}).`);
    }
    lines.push('');
  }
  const l1 = tr.l1;
  if (l1) {
    lines.push(l1.error && l1.backwardMs === undefined
      ? `**L1 backward**: failed: ${l1.error}`
      : `**L1 backward** (T = 16384, d_model 256, 4 heads, causal; once, in a fresh module): training forward ` +
        `${(l1.forwardMs / 1000).toFixed(2)} s, backward ${(l1.backwardMs / 1000).toFixed(2)} s; peak wasm heap ` +
        `${(l1.peakHeapBytes / 2 ** 20).toFixed(0)} MiB of the ${(l1.maxHeapBytes / 2 ** 20).toFixed(0)} MiB maximum ` +
        `(${(l1.heapBefore / 2 ** 20).toFixed(0)} MiB at start); gradients finite: ${l1.finite}; dBO against ` +
        `dOutput's column sums: ${l1.dBO.maxAbsDiff.toExponential(1)}.`);
    lines.push('');
  }
  const nat = tr.native;
  if (nat) {
    lines.push(nat.error ? `Native backward_bench: ${nat.error}` : `Native (\`backward_bench\`, ${nat.kernels}, ` +
      `1 thread, medians of ${nat.rounds} interleaved rounds; the encoder layer: 768 wide, FFN 3072, 128 tokens):`);
    if (!nat.error) {
      lines.push('');
      lines.push(table(['shape', 'forward', 'training forward', 'backward', 'backward / training forward',
        'training forward / plain'], nat.rows.map((r) => [r.name, ms(r.forward_ms), ms(r.training_forward_ms),
        ms(r.backward_ms), `${(r.backward_ms / r.training_forward_ms).toFixed(2)}x`,
        `${(r.training_forward_ms / r.forward_ms).toFixed(3)}x`])));
    }
    lines.push('');
  }
  return lines.join('\n').trimEnd();
}

// The 12-layer Llama-shaped decoding step (decode_llama_stack.js).
export function llamaStackSection(r, cpuModel) {
  const c = r.config;
  const lines = [`**A ${c.numLayers}-layer Llama-shaped decoding step** (\`bench/js/decode_llama_stack.js\`: ` +
    `RMSNorm, grouped-query attention with RoPE, SwiGLU; d_model ${c.dModel}, ${c.numHeads} heads, ` +
    `${c.numKvHeads} KV heads of ${c.headDim}, FFN ${c.ffnDim}; ${c.promptLength} tokens cached of ${c.cacheLength}, ` +
    'one new token; ours `TransformerStack.forwardIncremental`, one call for every layer, against onnxruntime-web ' +
    'on the same stack as one graph with its `GroupQueryAttention` op; interleaved, median ms per step' +
    `${cpuModel ? `; ${cpuModel}` : ''}; load average ${r.loadAvg.map((l) => l[0].toFixed(1)).join(' -> ')})`, ''];
  if (r.error) lines.push(`Check failed: ${r.error}.`, '');
  // The faster of onnxruntime's graphs of a type.
  const ort = (weights) => r.entries.filter((e) => !e.ours && e.weights === weights && e.median !== undefined)
    .sort((a, b) => a.median - b.median)[0];
  const [ortF32, ortInt8] = [ort('f32'), ort('int8')];
  const against = (peer, e) => (peer ? `${(peer.median / e.median).toFixed(2)}x` : '');
  lines.push(table(['implementation', 'ms per step', 'p25-p75', 'ms per layer', 'weight MB', 'ort-web f32 / this',
    'ort-web int8 / this', 'CPU / wall', 'max abs diff'], r.entries.map((e) => (e.median === undefined
    ? [e.name, e.error ?? 'not timed', '', '', '', '', '', '', '']
    : [e.name, ms(e.median), `${ms(e.p25)}-${ms(e.p75)}`, ms(e.median / c.numLayers),
      e.bytes ? (e.bytes / 1e6).toFixed(0) : '', against(ortF32, e), against(ortInt8, e),
      (e.cpuMedian / e.median).toFixed(2), e.maxAbsDiff.toExponential(1)]))));
  lines.push('');
  lines.push(`Checked first: ours fed the ${c.promptLength}-token prompt token by token equals its causal forward ` +
    `(max abs diff ${r.checks.tokenByToken?.toExponential(1)}); onnxruntime-web's float32 graph, given ours' caches ` +
    `and decoding on its own presents, equals ours step by step (${r.checks.ortDecoding?.toExponential(1) ?? 'not run'}); ` +
    'max abs diff: each row\'s step against ours in float32, float32 rows within 1e-3, f16 and int8 weights within ' +
    'their bound over 5 chained products a layer (onnxruntime\'s int8, which also quantizes its activations, 5 times ' +
    'that). "ort-web ... / this": how many times faster this row is than the faster of onnxruntime-web\'s graphs of ' +
    'that type.');
  return lines.join('\n');
}
