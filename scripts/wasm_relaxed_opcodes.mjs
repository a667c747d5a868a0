// Rewrites the pre-standard relaxed-SIMD fused multiply-add that emcc 3.1.6
// emits into the standard one, in place:
//
//   node scripts/wasm_relaxed_opcodes.mjs FILE.wasm...
//
// Why: emcc 3.1.6's LLVM 14 encodes `__builtin_wasm_fma_f32x4` (-mrelaxed-simd)
// as f32x4.fma, 0xfd 0xaf 0x01, an opcode from a draft of the relaxed-SIMD
// proposal that engines no longer accept; the standard f32x4.relaxed_madd is
// 0xfd 0x85 0x02 (0x105). Both take a, b, c from the stack in the same order
// and relaxed_madd computes a * b + c (tests/js/relaxed-opcodes.test.mjs checks
// it on a rewritten module). The two encodings have the same length, so
// nothing else in the file moves.
//
// Why a decoder and not a byte search: 0xfd 0xaf 0x01 also occurs inside
// immediates (a v128.const, an i32.const, a memory offset) and in data. Every
// instruction of every function body is decoded, so only real opcodes are
// touched, and anything the decoder does not know (another pre-standard
// relaxed opcode, a prefix it has no table for) stops it with an error
// instead of being passed through. The result is checked with
// WebAssembly.validate before the file is replaced; on Node 20 that needs
// --experimental-wasm-relaxed-simd (scripts/node-wasm.sh adds it when the
// node has it).

import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { wasmRelaxedSimdSupported } from '../web/index.js';

export class WasmRewriteError extends Error {
  constructor(message) {
    super(message);
    this.name = 'WasmRewriteError';
  }
}

const hex = (n) => `0x${n.toString(16).padStart(2, '0')}`;

// ---------------------------------------------------------------------------
// Opcode tables
// ---------------------------------------------------------------------------

// Immediate kinds: what follows an opcode.
const NONE = 0;
const U32 = 1; // one LEB128 index (local, global, function, label, tag, ...)
const U32X2 = 2; // two indices (call_indirect: type, table; table.copy ...)
const MEMARG = 3; // alignment (+ memory index), offset
const MEMARG_LANE = 4; // memarg, then a lane index byte
const LANE = 5; // one lane index byte
const BYTES16 = 6; // v128.const: 16 bytes
const SHUFFLE = 7; // i8x16.shuffle: 16 lane indices < 32
const BLOCKTYPE = 8; // block, loop, if, try
const BR_TABLE = 9; // vector of labels, default label
const SELECT_T = 10; // vector of value types
const I32 = 11; // signed LEB128, 32 bits
const I64 = 12; // signed LEB128, 64 bits
const F32 = 13; // 4 bytes
const F64 = 14; // 8 bytes
const REFTYPE = 15; // ref.null: funcref or externref
const MEMIDX = 16; // memory.size/grow: a memory index (0x00 single memory)

// One-byte opcodes: name and immediates. Wasm 2.0 (MVP, sign extension,
// multi-value, reference types, bulk memory via 0xfc) plus tail calls and
// legacy exception handling (try/catch/catch_all/throw/rethrow/delegate,
// what -fwasm-exceptions compiles to).
const OPS = new Map([
  [0x00, ['unreachable', NONE]], [0x01, ['nop', NONE]],
  [0x02, ['block', BLOCKTYPE]], [0x03, ['loop', BLOCKTYPE]], [0x04, ['if', BLOCKTYPE]],
  [0x05, ['else', NONE]], [0x06, ['try', BLOCKTYPE]], [0x07, ['catch', U32]],
  [0x08, ['throw', U32]], [0x09, ['rethrow', U32]], [0x0b, ['end', NONE]],
  [0x0c, ['br', U32]], [0x0d, ['br_if', U32]], [0x0e, ['br_table', BR_TABLE]],
  [0x0f, ['return', NONE]], [0x10, ['call', U32]], [0x11, ['call_indirect', U32X2]],
  [0x12, ['return_call', U32]], [0x13, ['return_call_indirect', U32X2]],
  [0x18, ['delegate', U32]], [0x19, ['catch_all', NONE]],
  [0x1a, ['drop', NONE]], [0x1b, ['select', NONE]], [0x1c, ['select', SELECT_T]],
  [0x20, ['local.get', U32]], [0x21, ['local.set', U32]], [0x22, ['local.tee', U32]],
  [0x23, ['global.get', U32]], [0x24, ['global.set', U32]],
  [0x25, ['table.get', U32]], [0x26, ['table.set', U32]],
  [0x3f, ['memory.size', MEMIDX]], [0x40, ['memory.grow', MEMIDX]],
  [0x41, ['i32.const', I32]], [0x42, ['i64.const', I64]],
  [0x43, ['f32.const', F32]], [0x44, ['f64.const', F64]],
  [0xd0, ['ref.null', REFTYPE]], [0xd1, ['ref.is_null', NONE]], [0xd2, ['ref.func', U32]],
]);
['i32.load', 'i64.load', 'f32.load', 'f64.load', 'i32.load8_s', 'i32.load8_u', 'i32.load16_s',
  'i32.load16_u', 'i64.load8_s', 'i64.load8_u', 'i64.load16_s', 'i64.load16_u', 'i64.load32_s',
  'i64.load32_u', 'i32.store', 'i64.store', 'f32.store', 'f64.store', 'i32.store8', 'i32.store16',
  'i64.store8', 'i64.store16', 'i64.store32'].forEach((name, i) => OPS.set(0x28 + i, [name, MEMARG]));
// Numeric instructions without immediates: i32.eqz .. f64.reinterpret_i64,
// then the sign-extension operators i32.extend8_s .. i64.extend32_s.
for (let op = 0x45; op <= 0xc4; op++) OPS.set(op, [`numeric ${hex(op)}`, NONE]);

// 0xfc prefix: saturating truncation and bulk memory / table operations.
const FC_OPS = new Map([
  ...[0, 1, 2, 3, 4, 5, 6, 7].map((op) => [op, [`trunc_sat ${op}`, NONE]]),
  [8, ['memory.init', U32X2]], [9, ['data.drop', U32]], [10, ['memory.copy', U32X2]],
  [11, ['memory.fill', U32]], [12, ['table.init', U32X2]], [13, ['elem.drop', U32]],
  [14, ['table.copy', U32X2]], [15, ['table.grow', U32]], [16, ['table.size', U32]],
  [17, ['table.fill', U32]],
]);

// 0xfe prefix: the threads proposal (the threaded builds, -pthread):
// memory.atomic.notify / wait32 / wait64, atomic.fence (one reserved zero
// byte), then the atomic loads, stores and read-modify-writes 0x10-0x4e,
// all with a memarg.
const FE_OPS = new Map([
  [0, ['memory.atomic.notify', MEMARG]], [1, ['memory.atomic.wait32', MEMARG]],
  [2, ['memory.atomic.wait64', MEMARG]], [3, ['atomic.fence', LANE]],
]);
for (let op = 0x10; op <= 0x4e; op++) FE_OPS.set(op, [`atomic ${hex(op)}`, MEMARG]);

// 0xfd prefix: the SIMD proposal as standardised (Wasm 2.0), plus the
// standard relaxed-SIMD opcodes 0x100-0x113 (left as they are).
const SIMD_OPS = new Map();
const simd = (op, name, kind = NONE) => SIMD_OPS.set(op, [name, kind]);
[
  'v128.load', 'v128.load8x8_s', 'v128.load8x8_u', 'v128.load16x4_s', 'v128.load16x4_u',
  'v128.load32x2_s', 'v128.load32x2_u', 'v128.load8_splat', 'v128.load16_splat',
  'v128.load32_splat', 'v128.load64_splat', 'v128.store',
].forEach((name, i) => simd(0x00 + i, name, MEMARG));
simd(0x0c, 'v128.const', BYTES16);
simd(0x0d, 'i8x16.shuffle', SHUFFLE);
['i8x16.swizzle', 'i8x16.splat', 'i16x8.splat', 'i32x4.splat', 'i64x2.splat', 'f32x4.splat',
  'f64x2.splat'].forEach((name, i) => simd(0x0e + i, name));
['i8x16.extract_lane_s', 'i8x16.extract_lane_u', 'i8x16.replace_lane', 'i16x8.extract_lane_s',
  'i16x8.extract_lane_u', 'i16x8.replace_lane', 'i32x4.extract_lane', 'i32x4.replace_lane',
  'i64x2.extract_lane', 'i64x2.replace_lane', 'f32x4.extract_lane', 'f32x4.replace_lane',
  'f64x2.extract_lane', 'f64x2.replace_lane'].forEach((name, i) => simd(0x15 + i, name, LANE));
// Comparisons, bitwise operators, any_true: 0x23 .. 0x53.
for (let op = 0x23; op <= 0x53; op++) simd(op, `simd ${hex(op)}`);
['v128.load8_lane', 'v128.load16_lane', 'v128.load32_lane', 'v128.load64_lane',
  'v128.store8_lane', 'v128.store16_lane', 'v128.store32_lane', 'v128.store64_lane',
].forEach((name, i) => simd(0x54 + i, name, MEMARG_LANE));
simd(0x5c, 'v128.load32_zero', MEMARG);
simd(0x5d, 'v128.load64_zero', MEMARG);
// Arithmetic and conversions, 0x5e .. 0xff, without immediates; the holes
// are opcodes the standard left unassigned (several of them held the draft
// relaxed-SIMD instructions, see PRESTANDARD_RELAXED).
const SIMD_HOLES = new Set([0x9a, 0xa2, 0xa5, 0xa6, 0xaf, 0xb0, 0xb2, 0xb3, 0xb4, 0xbb, 0xc2,
  0xc5, 0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2, 0xee]);
for (let op = 0x5e; op <= 0xff; op++) if (!SIMD_HOLES.has(op)) simd(op, `simd ${hex(op)}`);
['i8x16.relaxed_swizzle', 'i32x4.relaxed_trunc_f32x4_s', 'i32x4.relaxed_trunc_f32x4_u',
  'i32x4.relaxed_trunc_f64x2_s_zero', 'i32x4.relaxed_trunc_f64x2_u_zero', 'f32x4.relaxed_madd',
  'f32x4.relaxed_nmadd', 'f64x2.relaxed_madd', 'f64x2.relaxed_nmadd', 'i8x16.relaxed_laneselect',
  'i16x8.relaxed_laneselect', 'i32x4.relaxed_laneselect', 'i64x2.relaxed_laneselect',
  'f32x4.relaxed_min', 'f32x4.relaxed_max', 'f64x2.relaxed_min', 'f64x2.relaxed_max',
  'i16x8.relaxed_q15mulr_s', 'i16x8.relaxed_dot_i8x16_i7x16_s',
  'i32x4.relaxed_dot_i8x16_i7x16_add_s'].forEach((name, i) => simd(0x100 + i, name));

// The draft encoding (LLVM 14) and the standard one of the f32x4 fused
// multiply-add.
const PRESTANDARD_FMA = 0xaf;
const RELAXED_MADD = 0x105;

// What LLVM 14 (-mrelaxed-simd) encodes in the holes above, from
// `llvm-mc -triple=wasm32 -mattr=+simd128,+relaxed-simd -show-encoding`.
// Only f32x4.fma has a rewrite; the others have no one-to-one standard form
// here that this project needs, so meeting one is an error.
const PRESTANDARD_RELAXED = new Map([
  [0xa2, 'i8x16.relaxed_swizzle'], [0xa5, 'i32x4.relaxed_trunc_f32x4_s'],
  [0xa6, 'i32x4.relaxed_trunc_f32x4_u'], [0xc5, 'i32x4.relaxed_trunc_f64x2_s_zero'],
  [0xc6, 'i32x4.relaxed_trunc_f64x2_u_zero'], [0xaf, 'f32x4.fma'], [0xb0, 'f32x4.fms'],
  [0xcf, 'f64x2.fma'], [0xd0, 'f64x2.fms'], [0xb2, 'i8x16.laneselect'],
  [0xb3, 'i16x8.laneselect'], [0xd2, 'i32x4.laneselect'], [0xd3, 'i64x2.laneselect'],
  [0xb4, 'f32x4.relaxed_min'], [0xe2, 'f32x4.relaxed_max'], [0xd4, 'f64x2.relaxed_min'],
  [0xee, 'f64x2.relaxed_max'],
]);

const VALTYPES = new Set([0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f]);
const SECTION_NAMES = ['custom', 'type', 'import', 'function', 'table', 'memory', 'global',
  'export', 'start', 'element', 'code', 'data', 'datacount', 'tag'];

// ---------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------

class Reader {
  constructor(bytes, pos, end) {
    this.bytes = bytes;
    this.pos = pos;
    this.end = end;
    this.instruction = ''; // whose immediates are being read
    this.where = ''; // which function body
  }

  fail(message, at = this.pos) {
    const inside = this.instruction ? ` in ${this.instruction}` : '';
    throw new WasmRewriteError(`${message}${inside} at byte offset ${at}${this.where}`);
  }

  u8() {
    if (this.pos >= this.end) this.fail('unexpected end of data');
    return this.bytes[this.pos++];
  }

  skip(n) {
    if (this.pos + n > this.end) this.fail(`unexpected end of data (${n} bytes wanted)`);
    this.pos += n;
  }

  // Unsigned LEB128 of at most `bits` bits (values past 2^53 lose precision;
  // only 64-bit memory offsets can be that large, and they are not used).
  uleb(bits = 32) {
    const start = this.pos;
    let result = 0;
    for (let shift = 0; ; shift += 7) {
      if (shift >= bits) this.fail(`LEB128 longer than ${bits} bits`, start);
      const b = this.u8();
      if (bits - shift < 7 && (b & 0x7f) >> (bits - shift)) {
        this.fail(`LEB128 value out of ${bits}-bit range`, start);
      }
      result += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return result;
    }
  }

  // Signed LEB128 of at most `bits` bits (only its length matters here).
  sleb(bits) {
    const start = this.pos;
    for (let shift = 0; ; shift += 7) {
      if (shift >= bits) this.fail(`signed LEB128 longer than ${bits} bits`, start);
      if (!(this.u8() & 0x80)) return;
    }
  }
}

function readMemarg(r) {
  const align = r.uleb();
  if (align & 0x40) r.uleb(); // multi-memory: a memory index follows
  r.uleb(64); // offset (64 bits under memory64)
}

function readBlocktype(r) {
  const b = r.bytes[r.pos];
  if (b === 0x40 || VALTYPES.has(b)) r.pos++;
  else r.sleb(33); // a type index, as a non-negative s33
}

// Steps over the immediates of `instruction` ([name, kind]).
function readImmediates(r, [name, kind]) {
  r.instruction = name;
  readImmediatesOfKind(r, kind);
  r.instruction = '';
}

function readImmediatesOfKind(r, kind) {
  switch (kind) {
    case NONE: return;
    case U32: r.uleb(); return;
    case U32X2: r.uleb(); r.uleb(); return;
    case MEMARG: readMemarg(r); return;
    case MEMARG_LANE: readMemarg(r); r.u8(); return;
    case LANE: r.u8(); return;
    case BYTES16: r.skip(16); return;
    case SHUFFLE:
      for (let i = 0; i < 16; i++) {
        if (r.u8() >= 32) r.fail('lane index >= 32', r.pos - 1);
      }
      return;
    case BLOCKTYPE: readBlocktype(r); return;
    case BR_TABLE: for (let n = r.uleb(); n >= 0; n--) r.uleb(); return;
    case SELECT_T:
      for (let n = r.uleb(); n > 0; n--) {
        if (!VALTYPES.has(r.u8())) r.fail('unknown value type in select', r.pos - 1);
      }
      return;
    case I32: r.sleb(32); return;
    case I64: r.sleb(64); return;
    case F32: r.skip(4); return;
    case F64: r.skip(8); return;
    case REFTYPE: {
      const type = r.u8();
      if (type !== 0x70 && type !== 0x6f) r.fail('unknown reference type', r.pos - 1);
      return;
    }
    case MEMIDX: r.uleb(); return;
    default: throw new Error(`immediate kind ${kind}`);
  }
}

// Encodes `value` as unsigned LEB128 in exactly `length` bytes (padded with
// continuation bytes), so a rewritten opcode keeps its size.
function writePaddedLeb(bytes, at, length, value) {
  let v = value;
  for (let i = 0; i < length; i++) {
    bytes[at + i] = (v & 0x7f) | (i < length - 1 ? 0x80 : 0);
    v >>>= 7;
  }
  if (v !== 0) throw new Error(`${value} does not fit in ${length} LEB128 bytes`);
}

// Decodes one function body [pos, end); rewrites pre-standard f32x4.fma in
// `out`. Returns counts.
function rewriteBody(bytes, out, pos, end, where) {
  const r = new Reader(bytes, pos, end);
  r.where = where;
  for (let groups = r.uleb(); groups > 0; groups--) {
    r.uleb(); // how many locals of
    if (!VALTYPES.has(r.u8())) r.fail('unknown local type', r.pos - 1);
  }
  let depth = 1; // the function's own block
  let instructions = 0;
  let rewritten = 0;
  let standard = 0;
  while (depth > 0) {
    const at = r.pos;
    const op = r.u8();
    instructions++;
    if (op === 0xfd) {
      const subAt = r.pos;
      const sub = r.uleb();
      const known = SIMD_OPS.get(sub);
      if (known) {
        if (sub >= 0x100) standard++;
        readImmediates(r, known);
      } else if (sub === PRESTANDARD_FMA) {
        writePaddedLeb(out, subAt, r.pos - subAt, RELAXED_MADD);
        rewritten++;
      } else if (PRESTANDARD_RELAXED.has(sub)) {
        r.fail(`pre-standard relaxed-SIMD opcode 0xfd ${hex(sub)} ` +
          `(${PRESTANDARD_RELAXED.get(sub)}, LLVM 14's encoding): only f32x4.fma has a ` +
          'rewrite (to f32x4.relaxed_madd); engines reject the others', at);
      } else {
        r.fail(`unknown SIMD opcode 0xfd ${hex(sub)}`, at);
      }
    } else if (op === 0xfc || op === 0xfe) {
      const sub = r.uleb();
      const known = (op === 0xfc ? FC_OPS : FE_OPS).get(sub);
      if (!known) r.fail(`unknown opcode ${hex(op)} ${sub}`, at);
      readImmediates(r, known);
    } else {
      const known = OPS.get(op);
      if (!known) r.fail(`unknown opcode ${hex(op)}`, at);
      readImmediates(r, known);
      if (known[1] === BLOCKTYPE) depth++;
      else if (op === 0x0b || op === 0x18) depth--; // end; delegate ends its try
    }
  }
  if (r.pos !== end) {
    r.fail(`function body ends ${end - r.pos} bytes after its final end instruction`);
  }
  return { instructions, rewritten, standard };
}

/**
 * Decodes a wasm binary and returns a copy in which every pre-standard
 * f32x4.fma (0xfd 0xaf 0x01) is the standard f32x4.relaxed_madd
 * (0xfd 0x85 0x02). Every other byte is unchanged. Throws WasmRewriteError on
 * anything it cannot decode, on any other pre-standard relaxed-SIMD opcode
 * and on an opcode it does not know.
 *
 * @param {Uint8Array} bytes
 * @returns {{ bytes: Uint8Array, rewritten: number, standardRelaxed: number,
 *   functions: number, instructions: number }}
 */
export function rewriteRelaxedOpcodes(bytes) {
  if (!(bytes instanceof Uint8Array)) {
    throw new TypeError(`expected the bytes of a wasm module (Uint8Array), got ${typeof bytes}`);
  }
  const magic = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  if (bytes.length < 8 || magic.some((b, i) => bytes[i] !== b)) {
    throw new WasmRewriteError('not a WebAssembly binary (version 1): the first 8 bytes ' +
      `are ${Array.from(bytes.subarray(0, 8), hex).join(' ') || 'missing'}`);
  }
  const out = Uint8Array.from(bytes);
  const r = new Reader(bytes, 8, bytes.length);
  const totals = { rewritten: 0, standardRelaxed: 0, functions: 0, instructions: 0 };
  let declared = null; // function section's count
  let sawCode = false;
  while (r.pos < r.end) {
    const sectionAt = r.pos;
    const id = r.u8();
    const size = r.uleb();
    const start = r.pos;
    const end = start + size;
    if (id >= SECTION_NAMES.length) r.fail(`unknown section id ${id}`, sectionAt);
    if (end > bytes.length) {
      r.fail(`${SECTION_NAMES[id]} section (${size} bytes) runs past the end of the file`, sectionAt);
    }
    if (id === 3) {
      declared = new Reader(bytes, start, end).uleb();
    } else if (id === 10) {
      if (sawCode) r.fail('a second code section', sectionAt);
      sawCode = true;
      const c = new Reader(bytes, start, end);
      const count = c.uleb();
      if (declared !== null && count !== declared) {
        c.fail(`code section has ${count} bodies, function section declares ${declared}`, sectionAt);
      }
      for (let i = 0; i < count; i++) {
        const size = c.uleb();
        const bodyStart = c.pos;
        c.skip(size);
        const counts = rewriteBody(bytes, out, bodyStart, c.pos,
          ` (function body ${i} of ${count}, which starts at byte offset ${bodyStart})`);
        totals.functions++;
        totals.instructions += counts.instructions;
        totals.rewritten += counts.rewritten;
        totals.standardRelaxed += counts.standard;
      }
      if (c.pos !== end) c.fail('code section has bytes after its last function body');
    }
    r.pos = end;
  }
  if (declared !== null && !sawCode && declared > 0) {
    throw new WasmRewriteError(`the function section declares ${declared} functions but there is no code section`);
  }
  return { bytes: out, ...totals };
}

/** Checks the rewritten bytes with the engine; throws with its reason. */
export function validateRelaxed(bytes) {
  // The package's own probe module carries the standard relaxed_madd
  // encoding this tool writes.
  if (!wasmRelaxedSimdSupported()) {
    throw new WasmRewriteError('this node does not validate relaxed SIMD, so the result cannot ' +
      'be checked: run it with --experimental-wasm-relaxed-simd (Node 20; scripts/node-wasm.sh ' +
      'adds it when the node has it) or use Node 22+');
  }
  if (WebAssembly.validate(bytes)) return;
  try {
    new WebAssembly.Module(bytes);
  } catch (e) {
    throw new WasmRewriteError(`the rewritten module does not validate: ${e.message}`);
  }
  throw new WasmRewriteError('the rewritten module does not validate');
}

function main(files) {
  if (files.length === 0 || files.some((f) => f.startsWith('-'))) {
    console.error('usage: node scripts/wasm_relaxed_opcodes.mjs FILE.wasm...\n' +
      'Rewrites pre-standard f32x4.fma (0xfd 0xaf 0x01, LLVM 14) to f32x4.relaxed_madd ' +
      '(0xfd 0x85 0x02) in place, after checking the result with WebAssembly.validate.');
    return 2;
  }
  for (const file of files) {
    try {
      const input = fs.readFileSync(file);
      const result = rewriteRelaxedOpcodes(new Uint8Array(input.buffer, input.byteOffset, input.length));
      validateRelaxed(result.bytes);
      if (result.rewritten > 0) {
        fs.writeFileSync(`${file}.tmp`, result.bytes, { mode: fs.statSync(file).mode });
        fs.renameSync(`${file}.tmp`, file);
      }
      console.log(`wasm_relaxed_opcodes: ${file}: rewrote ${result.rewritten} f32x4.fma ` +
        `(0xfd 0xaf 0x01) to f32x4.relaxed_madd (0xfd 0x85 0x02); ${result.functions} ` +
        `function bodies, ${result.instructions} instructions decoded` +
        (result.standardRelaxed ? `, ${result.standardRelaxed} standard relaxed-SIMD ` +
          'instructions left as they were' : '') + '; validates');
    } catch (e) {
      console.error(`wasm_relaxed_opcodes: ${file}: ${e.message}`);
      return 1;
    }
  }
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  process.exitCode = main(process.argv.slice(2));
}
