// scripts/wasm_relaxed_opcodes.mjs, the rewriter behind the relaxed-SIMD
// build: on hand-assembled modules (every kind of immediate the decoder has
// to step over, the draft fma opcode's bytes hidden inside immediates,
// exception handling), on the shipped builds, and as the command line the
// build runs. Also what the rewritten opcode computes, a * b + c, on its own
// and inside the relaxed build's projections.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  rewriteRelaxedOpcodes, WasmRewriteError,
} from '../../scripts/wasm_relaxed_opcodes.mjs';
import { repoRoot, webDir } from './support/golden.mjs';
import { createAttentionModule } from './support/modules.mjs';

const FMA_DRAFT = [0xfd, 0xaf, 0x01]; // f32x4.fma, LLVM 14
const FMA_STANDARD = [0xfd, 0x85, 0x02]; // f32x4.relaxed_madd

const leb = (n) => {
  const out = [];
  do {
    const b = n & 0x7f;
    n >>>= 7;
    out.push(n ? b | 0x80 : b);
  } while (n);
  return out;
};
const vec = (items) => [...leb(items.length), ...items.flat()];
const section = (id, bytes) => [id, ...leb(bytes.length), ...bytes];
const body = (locals, code) => {
  const b = [...vec(locals), ...code, 0x0b];
  return [...leb(b.length), ...b];
};
const f32 = (x) => [...new Uint8Array(new Float32Array([x]).buffer)];
const f64 = (x) => [...new Uint8Array(new Float64Array([x]).buffer)];
const i32 = (n) => [0x41, ...leb(n)]; // non-negative n only
const memarg = (align, offset) => [...leb(align), ...leb(offset)];
const simd = (op, ...imm) => [0xfd, ...leb(op), ...imm];

// A module with two functions: run() computes mem[48..63] = fma(mem[0..15],
// mem[16..31], mem[32..47]) as f32x4, using `fma` for the opcode; shapes()
// is never called and holds one instruction of each immediate kind, plus
// `extra` (bytes spliced in). Tag 0 has type () -> ().
function assemble(fma, extra = []) {
  const load = (offset) => [...i32(0), ...simd(0x00, ...memarg(4, offset))];
  const run = [
    ...i32(0), ...load(0), ...load(16), ...load(32), ...fma,
    ...simd(0x0b, ...memarg(4, 48)), // v128.store
  ];
  const shapes = [
    // Where a byte search would find the draft fma but there is none: inside
    // a v128.const, inside a memory offset (LEB 0xfd 0xaf 0x01 = 22525) and
    // inside an i8x16.shuffle's preceding constant.
    ...simd(0x0c, ...FMA_DRAFT, ...new Array(13).fill(0)), 0x1a, // v128.const, drop
    ...i32(0), ...simd(0x00, 0x04, ...FMA_DRAFT), 0x21, 0, // v128.load offset=22525, local.set 0
    0x20, 0, 0x20, 0, ...simd(0x0d, ...Array.from({ length: 16 }, (_, i) => 31 - i)), 0x22, 0, 0x1a,
    ...i32(0), 0x20, 0, ...simd(0x56, ...memarg(2, 8), 3), 0x1a, // v128.load32_lane lane 3
    ...i32(0), 0x20, 0, ...simd(0x5a, ...memarg(2, 0), 1), // v128.store32_lane
    0x20, 0, ...simd(0x1f, 3), 0x1a, // f32x4.extract_lane 3
    0x20, 0, 0x20, 0, 0x20, 0, ...fma, 0x1a,
    0x20, 0, ...simd(0xe0), 0x1a, // f32x4.abs
    // Constants, select with a type, br_table, if/else, loop.
    0x42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f, 0x1a, // i64.const -2^63
    0x41, 0x7f, 0x1a, // i32.const -1
    0x43, ...f32(1.5), 0x1a, 0x44, ...f64(-2.25), 0x1a,
    ...i32(1), ...i32(2), ...i32(0), 0x1c, 0x01, 0x7f, 0x1a, // select (result i32)
    0x02, 0x40, 0x02, 0x40, ...i32(0), 0x0e, 0x02, 0x00, 0x01, 0x00, 0x0b, 0x0b, // br_table
    ...i32(1), 0x04, 0x7f, ...i32(2), 0x05, ...i32(3), 0x0b, 0x1a, // if (result i32) else
    0x03, 0x40, 0x0b, // loop
    // Bulk memory and saturating truncation (0xfc).
    ...i32(0), ...i32(0), ...i32(4), 0xfc, 0x0b, 0x00, // memory.fill
    ...i32(0), ...i32(16), ...i32(4), 0xfc, 0x0a, 0x00, 0x00, // memory.copy
    0x43, ...f32(3.5), 0xfc, 0x00, 0x1a, // i32.trunc_sat_f32_s
    0x3f, 0x00, 0x40, 0x00, 0x1a, // memory.size, memory.grow
    0xd0, 0x70, 0xd1, 0x1a, // ref.null func, ref.is_null
    // Exception handling: try/catch/catch_all, throw, rethrow, delegate.
    0x06, 0x40, 0x08, 0x00, 0x07, 0x00, 0x19, 0x09, 0x00, 0x0b, // try throw catch catch_all rethrow
    0x02, 0x40, 0x06, 0x40, 0x01, 0x18, 0x00, 0x0b, // block try nop delegate 0 end
    0x02, 0x40, 0x10, 0x00, 0x0b, // block call 0 end
    ...extra,
  ];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec([[0x60, 0x00, 0x00]])), // type 0: () -> ()
    ...section(3, vec([[0x00], [0x00]])), // two functions of type 0
    ...section(5, vec([[0x00, 0x01]])), // memory: 1 page
    ...section(13, vec([[0x00, 0x00]])), // tag 0: type 0
    ...section(7, vec([[...vec([...'run'].map((c) => c.charCodeAt(0))), 0x00, 0x00],
      [...vec([...'mem'].map((c) => c.charCodeAt(0))), 0x02, 0x00]])),
    ...section(10, vec([body([], run), body([[0x01, 0x7b]], shapes)])), // local 0: v128
  ]);
}

const count = (bytes, pattern) =>
  bytes.reduce((n, _, i) => n + (pattern.every((b, j) => bytes[i + j] === b) ? 1 : 0), 0);

describe('rewriteRelaxedOpcodes', () => {
  const draft = assemble(FMA_DRAFT);
  const standard = assemble(FMA_STANDARD);

  test('the draft module really hides the draft bytes in immediates', () => {
    expect(count(draft, FMA_DRAFT)).toBe(4); // 2 opcodes, 2 inside immediates
    expect(WebAssembly.validate(draft)).toBe(false);
    expect(WebAssembly.validate(standard)).toBe(true);
  });

  test('rewrites exactly the two fma opcodes; every other byte stays', () => {
    const r = rewriteRelaxedOpcodes(draft);
    expect(r.rewritten).toBe(2);
    expect(r.standardRelaxed).toBe(0);
    expect(r.functions).toBe(2);
    expect(Array.from(r.bytes)).toEqual(Array.from(standard));
    expect(count(r.bytes, FMA_DRAFT)).toBe(2); // the immediates
    expect(Array.from(draft)).toEqual(Array.from(assemble(FMA_DRAFT))); // input untouched
  });

  test('a second pass leaves the standard opcode alone', () => {
    const r = rewriteRelaxedOpcodes(standard);
    expect([r.rewritten, r.standardRelaxed]).toEqual([0, 2]);
    expect(Array.from(r.bytes)).toEqual(Array.from(standard));
  });

  test('a padded LEB128 opcode keeps its length', () => {
    const padded = assemble([0xfd, 0xaf, 0x81, 0x00]);
    const r = rewriteRelaxedOpcodes(padded);
    expect(r.rewritten).toBe(2);
    expect(Array.from(r.bytes)).toEqual(Array.from(assemble([0xfd, 0x85, 0x82, 0x00])));
    expect(WebAssembly.validate(r.bytes)).toBe(true);
  });

  // The rewritten opcode on this engine computes a * b + c, with a, b, c in
  // the order they were pushed (the order of __builtin_wasm_fma_f32x4's
  // arguments), not a + b * c as an earlier draft's qfma did.
  test('the rewritten fma computes a * b + c', async () => {
    const { instance } = await WebAssembly.instantiate(rewriteRelaxedOpcodes(draft).bytes);
    const mem = new Float32Array(instance.exports.mem.buffer, 0, 16);
    const a = [2, -1.5, 3, 0.5];
    const b = [3, 4, -2, 8];
    const c = [5, 1, 7, -1];
    mem.set([...a, ...b, ...c]);
    instance.exports.run();
    expect(Array.from(mem.subarray(12, 16))).toEqual(a.map((x, i) => x * b[i] + c[i]));
    expect(Array.from(mem.subarray(12, 16))).toEqual([11, -5, 1, 3]);
  });

  // The threaded builds (-pthread) hold the threads proposal's atomics.
  test('decodes atomics (0xfe prefix) and leaves them as they are', () => {
    const atomics = [...i32(0), ...i32(0), 0xfe, 0x00, ...memarg(2, 8), 0x1a, // notify, drop
      0xfe, 0x03, 0x00, // atomic.fence
      ...i32(0), 0xfe, 0x10, ...memarg(2, 0), 0x1a]; // i32.atomic.load, drop
    const r = rewriteRelaxedOpcodes(assemble(FMA_DRAFT, atomics));
    expect(r.rewritten).toBe(rewriteRelaxedOpcodes(assemble(FMA_DRAFT)).rewritten);
    expect(Array.from(r.bytes)).toEqual(Array.from(assemble(FMA_STANDARD, atomics)));
  });

  test.each([
    ['another draft relaxed opcode', simd(0xb0), /^pre-standard relaxed-SIMD opcode 0xfd 0xb0 \(f32x4\.fms, LLVM 14's encoding\): only f32x4\.fma has a rewrite/],
    ['a draft laneselect', simd(0xd3), /^pre-standard relaxed-SIMD opcode 0xfd 0xd3 \(i64x2\.laneselect/],
    ['an unassigned SIMD opcode', simd(0x9a), /^unknown SIMD opcode 0xfd 0x9a /],
    ['an unknown one-byte opcode', [0x14], /^unknown opcode 0x14 /],
    ['an unassigned atomic opcode', [0xfe, 0x04], /^unknown opcode 0xfe 4 /],
    ['an unknown 0xfc opcode', [0xfc, 0x12], /^unknown opcode 0xfc 18 /],
  ])('refuses %s, naming where it is', (_, bad, message) => {
    const bytes = assemble(FMA_DRAFT, bad);
    let error;
    try {
      rewriteRelaxedOpcodes(bytes);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(WasmRewriteError);
    expect(error.message).toMatch(message);
    const at = Number(/ at byte offset (\d+) \(function body 1 of 2, which starts at byte offset \d+\)$/
      .exec(error.message)?.[1]);
    // `extra` ends the last body, the last section: just before its final end.
    expect(at).toBe(bytes.length - 1 - bad.length);
  });

  test.each([
    ['bytes that are not wasm', new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]),
      'not a WebAssembly binary (version 1): the first 8 bytes are 0x7f 0x45 0x4c 0x46 0x02 0x01 0x01 0x00'],
    ['an empty file', new Uint8Array(0),
      'not a WebAssembly binary (version 1): the first 8 bytes are missing'],
  ])('refuses %s', (_, bytes, message) => {
    expect(() => rewriteRelaxedOpcodes(bytes)).toThrow(new WasmRewriteError(message));
  });

  test('refuses a truncated module and a body without its end', () => {
    const draftBytes = assemble(FMA_DRAFT);
    expect(() => rewriteRelaxedOpcodes(draftBytes.subarray(0, draftBytes.length - 5)))
      .toThrow(/^code section \(\d+ bytes\) runs past the end of the file at byte offset \d+$/);
    // The last body loses its final end: the decoder runs into the body's limit.
    const cut = Uint8Array.from(draftBytes);
    cut[cut.length - 1] = 0x01; // nop instead of end
    expect(() => rewriteRelaxedOpcodes(cut))
      .toThrow(/^unexpected end of data at byte offset \d+ \(function body 1 of 2/);
    // Immediates cut short or out of range: the error names the instruction.
    const cutShuffle = assemble(FMA_DRAFT, [0x20, 0, 0x20, 0, ...simd(0x0d, 1, 2, 3)]);
    expect(() => rewriteRelaxedOpcodes(cutShuffle))
      .toThrow(/^unexpected end of data in i8x16\.shuffle at byte offset \d+ \(function body 1 of 2/);
    const lanes = Array.from({ length: 16 }, (_, i) => (i === 5 ? 32 : i));
    const badShuffle = assemble(FMA_DRAFT, [0x20, 0, 0x20, 0, ...simd(0x0d, ...lanes), 0x1a]);
    expect(() => rewriteRelaxedOpcodes(badShuffle))
      .toThrow(/^lane index >= 32 in i8x16\.shuffle at byte offset \d+ \(function body 1 of 2/);
    expect(() => rewriteRelaxedOpcodes([0, 97, 115, 109])).toThrow(new TypeError(
      'expected the bytes of a wasm module (Uint8Array), got object'));
  });
});

describe('the shipped builds', () => {
  const decode = (file) => {
    const b = fs.readFileSync(path.join(webDir, 'dist', file));
    return rewriteRelaxedOpcodes(new Uint8Array(b.buffer, b.byteOffset, b.length));
  };

  test.each(['simd_attention_relaxed.wasm', 'simd_attention_relaxed_threads.wasm'])(
    '%s holds standard relaxed_madd and nothing left to rewrite', (file) => {
      const r = decode(file);
      expect(r.rewritten).toBe(0);
      // The GEMM tiles and attention of Highway, inlined many times.
      expect(r.standardRelaxed).toBeGreaterThan(50);
      expect(r.functions).toBeGreaterThan(300);
    });

  test.each(['simd_attention_simd.wasm', 'simd_attention_simd_threads.wasm',
    'simd_attention_nosimd.wasm'])(
    '%s has no relaxed SIMD', (file) => {
      const r = decode(file);
      expect([r.rewritten, r.standardRelaxed]).toEqual([0, 0]);
      expect(r.functions).toBeGreaterThan(300);
    });

  // The library's MulAdd on the relaxed build: X W_q + b_q of small integers
  // is exact in float32 whether or not the multiply-add is fused, so the
  // projected q must equal the integer product exactly. If the builtin's
  // operands reached relaxed_madd in another order (a + b * c), the GEMM's
  // accumulator would be multiplied instead of added to. The package's
  // relaxed build carries highway alone; xsimd's relaxed kernels are tested
  // by the relaxed tree's C++ tests.
  test('relaxed build: integer projections come out exact', async () => {
    const backend = 'highway';
    const sa = await createAttentionModule({ relaxedSimd: true, threads: 1 });
    expect(sa.backends).toEqual([backend]);
    const d = 16;
    const heads = 2;
    const t = 7;
    const ints = (n, seed) => Float32Array.from({ length: n }, (_, i) => ((i * 7 + seed) % 9) - 4);
    const w = ints(d * d, 1);
    const b = ints(d, 2);
    const x = ints(t * d, 3);
    const mha = new sa.MultiHeadAttention({ dModel: d, numHeads: heads, backend });
    try {
      expect(mha.kernels).toBe('highway:WASM');
      mha.setWeights({ wQ: w, wK: w, wV: w, wO: w, bQ: b, bK: b, bV: b, bO: b });
      const { q } = mha.forward({ data: x, shape: [1, t, d] }, undefined, undefined,
        { returnIntermediates: true });
      const dk = d / heads;
      const want = new Float32Array(heads * t * dk);
      for (let h = 0; h < heads; h++) {
        for (let i = 0; i < t; i++) {
          for (let j = 0; j < dk; j++) {
            let sum = b[h * dk + j];
            for (let k = 0; k < d; k++) sum += x[i * d + k] * w[k * d + h * dk + j];
            want[(h * t + i) * dk + j] = sum;
          }
        }
      }
      expect(q.shape).toEqual([1, heads, t, dk]);
      expect(Array.from(q.data)).toEqual(Array.from(want));
      expect(want.some((v) => Math.abs(v) > 20)).toBe(true);
    } finally {
      mha.dispose();
    }
  });

  test("the feature probe uses the opcode the tool writes (its relaxed_madd encoding)", () => {
    const source = fs.readFileSync(path.join(webDir, 'src', 'features.js'), 'utf8');
    const bytes = /const RELAXED_SIMD_PROBE = new Uint8Array\(\[([^\]]*)\]\)/.exec(source)[1]
      .replace(/\/\/.*$/gm, '').split(',').map((x) => x.trim()).filter(Boolean).map(Number);
    expect(bytes.slice(-4, -1)).toEqual([0xfd, 0x85, 0x02]);
    expect(WebAssembly.validate(Uint8Array.from(bytes))).toBe(true);
  });
});

describe('the command line', () => {
  const tool = path.join(repoRoot, 'scripts', 'wasm_relaxed_opcodes.mjs');
  const launcher = path.join(repoRoot, 'scripts', 'node-wasm.sh');
  let dir;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sa-relaxed-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const cli = (...files) => {
    try {
      const stdout = execFileSync('bash', [launcher, tool, ...files],
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      return { status: 0, stdout, stderr: '' };
    } catch (e) {
      return { status: e.status, stdout: e.stdout, stderr: e.stderr };
    }
  };

  test('rewrites a file in place and says how many', () => {
    const file = path.join(dir, 'm.wasm');
    fs.writeFileSync(file, assemble(FMA_DRAFT));
    const r = cli(file);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`wasm_relaxed_opcodes: ${file}: rewrote 2 f32x4.fma (0xfd 0xaf 0x01) ` +
      'to f32x4.relaxed_madd (0xfd 0x85 0x02); 2 function bodies, ' +
      `${rewriteRelaxedOpcodes(assemble(FMA_DRAFT)).instructions} instructions decoded; validates\n`);
    expect(Array.from(fs.readFileSync(file))).toEqual(Array.from(assemble(FMA_STANDARD)));
  });

  test('fails, and leaves the file alone, on what it cannot rewrite', () => {
    const file = path.join(dir, 'bad.wasm');
    const bytes = assemble(FMA_DRAFT, simd(0xb0));
    fs.writeFileSync(file, bytes);
    const r = cli(file);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^wasm_relaxed_opcodes: ${file}: pre-standard ` +
      'relaxed-SIMD opcode 0xfd 0xb0 '));
    expect(Array.from(fs.readFileSync(file))).toEqual(Array.from(bytes));
    expect(cli(path.join(dir, 'missing.wasm')).stderr)
      .toBe(`wasm_relaxed_opcodes: ${dir}/missing.wasm: ENOENT: no such file or directory, ` +
        `open '${dir}/missing.wasm'\n`);
    expect(cli().status).toBe(2);
  });

  // scripts/wasm_link_relaxed.sh, CMake's linker launcher in the relaxed
  // tree, around a stand-in "linker" that writes NAME.js and NAME.wasm.
  function linkThroughLauncher(wasmBytes) {
    const wasm = path.join(dir, 'linked.wasm');
    const js = path.join(dir, 'linked.js');
    fs.writeFileSync(path.join(dir, 'input.wasm'), wasmBytes);
    const link = `cp ${dir}/input.wasm ${wasm} && echo glue > ${js}`;
    let status = 0;
    try {
      execFileSync('bash', [path.join(repoRoot, 'scripts', 'wasm_link_relaxed.sh'), 'sh', '-c', link,
        '-o', js], { stdio: 'pipe' });
    } catch (e) {
      status = e.status;
    }
    return { status, js: fs.existsSync(js), wasm: fs.existsSync(wasm) && Array.from(fs.readFileSync(wasm)) };
  }

  test('the link launcher rewrites what the link wrote', () => {
    expect(linkThroughLauncher(assemble(FMA_DRAFT)))
      .toEqual({ status: 0, js: true, wasm: Array.from(assemble(FMA_STANDARD)) });
  });

  test('the link launcher deletes the outputs of a link it cannot rewrite', () => {
    expect(linkThroughLauncher(assemble(FMA_DRAFT, simd(0xb0))))
      .toEqual({ status: 1, js: false, wasm: false });
  });

  test('fails when the rewritten module does not validate', () => {
    const file = path.join(dir, 'invalid.wasm');
    // Decodes fine but does not type-check: f32x4.abs of an i32.
    fs.writeFileSync(file, assemble(FMA_DRAFT, [...i32(1), ...simd(0xe0), 0x1a]));
    const r = cli(file);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^wasm_relaxed_opcodes: ${file}: the rewritten module ` +
      'does not validate: WebAssembly.Module\\(\\): Compiling function #1 failed: '));
  });
});
