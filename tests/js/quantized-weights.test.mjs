// 4-bit weights that files hold, loaded into 'q4' objects as their blocks
// (simd-attention/quantized-weights): GGUF q4_0 tensors from a GGUF file
// written here and parsed with @huggingface/gguf, and onnxruntime's
// MatMulNBits initializers, both quantized here from random float32
// weights (support/quantized-files.mjs). On every backend of every build, a
// MultiHeadAttention and a TransformerBlock given the blocks forward
// bit-identically to the same objects given the float32 weights the blocks
// hold (which q4 quantizes into the same blocks), and within q4's bound of
// float32 on the original weights; the pool splits the blocks along whole
// blocks. Conversions that q4 cannot hold exactly are refused by name, and
// so are bad blocks, by C++ through setWeights.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gguf } from '@huggingface/gguf';
import { dequantizeQ4, ggufQ4Weights, matMulNBitsQ4Weights }
  from '../../web/src/quantized-weights.js';
import { expectError } from './support/errors.mjs';
import { randomFloats } from './support/layers.mjs';
import { backendMatrix, loadBuilds, track } from './support/modules.mjs';
import { simdModule, startPools } from './support/pools.mjs';
import { ggufQ4_0, matMulNBits, writeGguf } from './support/quantized-files.mjs';
import { CHAINED_PRODUCTS, expectWithin } from './support/weight-types.mjs';

const builds = await loadBuilds();
const matrix = backendMatrix(builds);
const pools = startPools([2]);

const D = 64;
const HEADS = 2;
const KV_HEADS = 2;
const HEAD_DIM = 32;
const T = 5;
const GGML_Q4_0 = 2;

const mhaConfig = { dModel: D, numHeads: HEADS, bias: true };
// The attention's matrices [rows, cols] (X @ W), their torch [out, in] in GGUF.
const MHA_SHAPES = { wQ: [D, D], wK: [D, D], wV: [D, D], wO: [D, D] };
const mhaFloats = (seed) => ({
  ...Object.fromEntries(Object.entries(MHA_SHAPES).map(([key, [r, c]], i) =>
    [key, randomFloats(r * c, seed + i)])),
  bQ: randomFloats(D, seed + 10, 0.1), bK: randomFloats(D, seed + 11, 0.1),
  bV: randomFloats(D, seed + 12, 0.1), bO: randomFloats(D, seed + 13, 0.1),
});

const blockConfig = (ffnDim) => ({ dModel: D, numHeads: HEADS, numKvHeads: KV_HEADS, ffnDim,
  activation: 'silu', norm: 'rms_norm', eps: 1e-6, rope: { style: 'half' },
  sublayers: [{ mixer: 'self_attention' }, { mixer: 'gated_ffn' }] });
const blockShapes = (f) => ({
  wQ: [D, D], wK: [D, KV_HEADS * HEAD_DIM], wV: [D, KV_HEADS * HEAD_DIM], wO: [D, D],
  wGate: [D, f], wUp: [D, f], wDown: [f, D],
});
// A block's weights with each matrix from `matrices` { key: matrix }.
const blockWeights = (m) => ({ sublayers: [
  { norm: { gamma: randomFloats(D, 5).map((v) => 1 + v) },
    attention: { wQ: m.wQ, wK: m.wK, wV: m.wV, wO: m.wO } },
  { norm: { gamma: randomFloats(D, 6).map((v) => 1 + v) },
    gatedFfn: { wGate: m.wGate, wUp: m.wUp, wDown: m.wDown } },
] });

const input = (seed) => ({ data: randomFloats(T * D, seed), shape: [1, T, D] });

// A GGUF file of `shapes`' matrices quantized to q4_0 from random floats,
// parsed with @huggingface/gguf: { floats (the originals), held (what the
// blocks hold), given ({ q4 } per matrix, from ggufQ4Weights) }.
const ggufFiles = fs.mkdtempSync(path.join(os.tmpdir(), 'simd-attention-gguf-'));
afterAll(() => fs.rmSync(ggufFiles, { recursive: true, force: true }));
async function fromGguf(shapes, seed) {
  const floats = {}, held = {}, tensors = {};
  for (const [i, [key, [rows, cols]]] of Object.entries(shapes).entries()) {
    floats[key] = randomFloats(rows * cols, seed + i);
    const q = ggufQ4_0(floats[key], rows, cols);
    held[key] = q.floats;
    tensors[`${key}.weight`] = { type: GGML_Q4_0, shape: [rows, cols], bytes: q.bytes };
  }
  const file = path.join(ggufFiles, `${seed}.gguf`);
  fs.writeFileSync(file, writeGguf(tensors));
  const { tensorInfos, tensorDataOffset } = await gguf(file, { allowLocalFile: true });
  const bytes = fs.readFileSync(file);
  const given = {};
  for (const info of tensorInfos) {
    const [rows, cols] = info.shape.map(Number);
    const at = Number(tensorDataOffset + info.offset);
    given[info.name.replace('.weight', '')] =
      ggufQ4Weights(info, new Uint8Array(bytes.subarray(at, at + rows * cols / 32 * 18)));
  }
  return { floats, held, given };
}

// The same from MatMulNBits initializers of `blockSize`, with its explicit
// zero points (8) or none.
function fromMatMulNBits(shapes, seed, blockSize, zeroPoints) {
  const floats = {}, held = {}, given = {};
  for (const [i, [key, [rows, cols]]] of Object.entries(shapes).entries()) {
    floats[key] = randomFloats(rows * cols, seed + i);
    const node = matMulNBits(floats[key], rows, cols, blockSize, { zeroPoints });
    held[key] = node.floats;
    given[key] = matMulNBitsQ4Weights(node);
  }
  return { floats, held, given };
}

const sources = [
  ['a GGUF file', (shapes, seed) => fromGguf(shapes, seed)],
  ['MatMulNBits, no zero points', async (shapes, seed) => fromMatMulNBits(shapes, seed, 32, false)],
  ['MatMulNBits, zero points 8', async (shapes, seed) => fromMatMulNBits(shapes, seed, 32, true)],
];

describe.each(matrix)('%s build, %s backend', (_, backend, module) => {
  test.each(sources)('a MultiHeadAttention from %s', async (__, load) => {
    const m = await load(MHA_SHAPES, 100);
    const biases = mhaFloats(100);
    const forward = (weights, type) => {
      const mha = track(new module.MultiHeadAttention({ ...mhaConfig, backend, weights: type }));
      mha.setWeights({ ...biases, ...weights });
      return mha.forward(input(1)).output.data;
    };
    const got = forward(m.given, 'q4');
    expect(got).toEqual(forward(m.held, 'q4'));
    expectWithin('MultiHeadAttention', 'q4', got, forward(m.floats, 'f32'),
      CHAINED_PRODUCTS.mha);
  });

  test.each(sources)('a TransformerBlock from %s', async (__, load) => {
    const m = await load(blockShapes(96), 200);
    const forward = (weights, type) => {
      const block = track(new module.TransformerBlock({ ...blockConfig(96), backend,
        weights: type }));
      block.setWeights(blockWeights(weights));
      return block.forward(input(2), { causal: true }).data;
    };
    const got = forward(m.given, 'q4');
    expect(got).toEqual(forward(m.held, 'q4'));
    // Attention's three chained products and the gated FFN's two.
    expectWithin('TransformerBlock', 'q4', got, forward(m.floats, 'f32'),
      CHAINED_PRODUCTS.encoder);
  });
});

test('MatMulNBits blocks of 64 and 128 convert exactly: each 32 rows a block of their scale', () => {
  for (const blockSize of [64, 128]) {
    const w = randomFloats(128 * 3, blockSize);
    const node = matMulNBits(w, 128, 3, blockSize, { zeroPoints: true });
    expect(dequantizeQ4(matMulNBitsQ4Weights(node).q4, 128, 3)).toEqual(node.floats);
  }
  // K need not fill its last block of blockSize: rows 96..127 are padding.
  const w = randomFloats(96 * 2, 3);
  const node = matMulNBits(w, 96, 2, 64);
  expect(dequantizeQ4(matMulNBitsQ4Weights(node).q4, 96, 2)).toEqual(node.floats);
});

test('what q4 cannot hold exactly is refused, naming the value', () => {
  const node = matMulNBits(randomFloats(64 * 2, 4), 64, 2, 32, { zeroPoints: true });
  const where = 'matMulNBitsQ4Weights';
  expectError(() => matMulNBitsQ4Weights({ ...node, bits: 8 }), RangeError,
    `${where}: bits: expected 4, got 8`);
  const sixteen = matMulNBits(randomFloats(64 * 2, 4), 64, 2, 16);
  expectError(() => matMulNBitsQ4Weights(sixteen), RangeError,
    `${where}: blockSize: expected a multiple of 32 (q4 blocks hold 32 rows a scale), got 16`);
  const zeroPoints = Uint8Array.of(0x88, 0x87);
  expectError(() => matMulNBitsQ4Weights({ ...node, zeroPoints }), RangeError,
    `${where}: zeroPoints: q4 blocks are symmetric (zero point 8); column 1's block 0 has 7`);
  const scales = Float32Array.of(0.1, 0.25, 0.5, 1);
  expectError(() => matMulNBitsQ4Weights({ ...node, scales }), RangeError,
    `${where}: scales: q4 blocks hold finite float16 scales; scale 0 (column 0's block 0) is ` +
    `${Math.fround(0.1)}`);
  expectError(() => matMulNBitsQ4Weights({ ...node, K: 48 }), RangeError,
    `${where}: K: expected a positive multiple of 32, got 48`);
  expectError(() => matMulNBitsQ4Weights({ ...node, B: node.B.subarray(1) }), RangeError,
    `${where}: B: expected 64 values, got 63`);
  // float32 scales that float16 holds are taken.
  const exact = { ...node, scales: Float32Array.of(0.125, -0.25, 0.5, 3) };
  expect(dequantizeQ4(matMulNBitsQ4Weights(exact).q4, 64, 2)[0])
    .toBe(((node.B[0] & 15) - 8) * 0.125);

  expectError(() => dequantizeQ4(new Uint8Array(71), 64, 2), RangeError,
    'dequantizeQ4: q4: expected 72 bytes for [64, 2], got 71');
  expectError(() => dequantizeQ4(new Uint8Array(72), 48, 2), RangeError,
    'dequantizeQ4: rows: expected a positive multiple of 32, got 48');

  const info = { name: 'blk.0.attn_q.weight', shape: [64n, 2n], dtype: GGML_Q4_0 };
  const bytes = new Uint8Array(2 * 2 * 18);
  expect(ggufQ4Weights(info, bytes).q4).toBe(bytes);
  expectError(() => ggufQ4Weights({ ...info, dtype: 8 }, bytes), RangeError,
    "ggufQ4Weights: tensor 'blk.0.attn_q.weight': q8_0 has a scale per 32 weights, which " +
    "config.weights 'int8' (one scale per column) cannot hold exactly; dequantize it to " +
    'float32 to have it quantized again');
  expectError(() => ggufQ4Weights({ ...info, dtype: 3 }, bytes), RangeError,
    "ggufQ4Weights: tensor 'blk.0.attn_q.weight': expected ggml type q4_0 (2), got 3");
  expectError(() => ggufQ4Weights(info, bytes.subarray(1)), RangeError,
    "ggufQ4Weights: tensor 'blk.0.attn_q.weight': expected 72 bytes for shape [64, 2], got 71");
  expectError(() => ggufQ4Weights(null, bytes), TypeError,
    'ggufQ4Weights: tensor: expected its info ({ name, shape, dtype }), got null');
  expectError(() => ggufQ4Weights({ shape: [64n, 2n], dtype: GGML_Q4_0 }, [1]), TypeError,
    "ggufQ4Weights: tensor: data: expected a Uint8Array of the tensor's bytes, got [1]");
  expectError(() => ggufQ4Weights({ ...info, shape: undefined }, bytes), TypeError,
    "ggufQ4Weights: tensor 'blk.0.attn_q.weight': shape: expected an array, got undefined");
  expectError(() => ggufQ4Weights({ ...info, shape: [48n, 2n] }, bytes), RangeError,
    "ggufQ4Weights: tensor 'blk.0.attn_q.weight': expected a matrix [in, out] of in a " +
    'multiple of 32, got shape [48, 2]');
});

test('bad blocks are refused by C++ through setWeights, naming the weight; the object stays', async () => {
  const module = builds.simd;
  const m = await fromGguf(MHA_SHAPES, 300);
  const biases = mhaFloats(300);
  const mha = track(new module.MultiHeadAttention({ ...mhaConfig, weights: 'q4' }));
  mha.setWeights({ ...biases, ...m.given });
  const before = mha.forward(input(3)).output.data;
  const where = 'MultiHeadAttention.setWeights';
  const q4 = m.given.wK.q4;
  expectError(() => mha.setWeights({ ...biases, ...m.given, wK: { q4: q4.subarray(18) } }),
    RangeError, `${where}: wK.q4 (18 bytes per block of 32 rows of a column): expected 2304 ` +
    'values for shape [64, 2, 18], got 2286');
  // Column 1's block 1: block 3 of the bytes, its scale a float16 infinity.
  const infinite = q4.slice();
  infinite.set([0x00, 0x7c], 18 * 3);
  expectError(() => mha.setWeights({ ...biases, ...m.given, wK: { q4: infinite } }), RangeError,
    `${where}: wK.q4 block scales: element 3 is +Infinity`);
  expectError(() => mha.setWeights({ ...biases, ...m.given, wK: { q4: new Int8Array(2304) } }),
    TypeError, `${where}: wK.q4: expected a Uint8Array, got Int8Array(2304)`);
  expectError(() => mha.setWeights({ ...biases, ...m.given, wK: { q4, scales: 1 } }),
    TypeError, `${where}: wK: unknown key 'scales' (expected q4)`);
  expect(mha.forward(input(3)).output.data).toEqual(before);

  const int8 = track(new module.MultiHeadAttention({ ...mhaConfig, weights: 'int8' }));
  expectError(() => int8.setWeights({ ...biases, ...m.given }), RangeError,
    `${where}: wQ: q4 blocks given, but config.weights is int8`);
  // 48 rows are not whole blocks of 32.
  const narrow = track(new module.MultiHeadAttention({ dModel: 48, numHeads: 2, bias: false,
    weights: 'q4' }));
  expectError(() => narrow.setWeights({ wQ: { q4: new Uint8Array(48 * 18) },
    wK: randomFloats(48 * 48, 1), wV: randomFloats(48 * 48, 2), wO: randomFloats(48 * 48, 3) }),
  RangeError, `${where}: wQ: q4 blocks run along its 48 rows, which must be a multiple of 32 ` +
    "(GGUF q4_0's block)");
});

// The pool splits q4 blocks by columns and along whole blocks of rows (a
// worker's rows off whole blocks go as the float32 weights they hold, which
// it quantizes as it does float32 weights): the pooled object forwards as
// the same pool given the float32 weights the blocks hold, and within q4's
// bound of the synchronous float32 object (each worker rounds the
// activations of its own heads or hidden units to int16, so the pool's sums
// are not the synchronous object's, as tests/js/pool-weight-types.test.mjs
// says of q4).
describe('through the pool', () => {
  let sync;
  beforeAll(async () => { sync = await simdModule(); });

  test('a MultiHeadAttention split by heads, W_O along whole blocks', async () => {
    const m = await fromGguf(MHA_SHAPES, 400);
    const biases = mhaFloats(400);
    const pooled = async (weights) => {
      const mha = await pools[2].MultiHeadAttention({ ...mhaConfig, weights: 'q4' });
      try {
        await mha.setWeights({ ...biases, ...weights });
        return (await mha.forward(input(4))).output.data;
      } finally {
        await mha.dispose();
      }
    };
    const got = await pooled(m.given);
    expect(got).toEqual(await pooled(m.held));
    const mha = track(new sync.MultiHeadAttention({ ...mhaConfig }));
    mha.setWeights({ ...biases, ...m.floats });
    expectWithin('pooled MultiHeadAttention', 'q4', got, mha.forward(input(4)).output.data,
      CHAINED_PRODUCTS.mha);
  });

  // ffnDim 128: each worker 64 hidden units, W_down's rows whole blocks;
  // 96: 48 each, off whole blocks.
  test.each([128, 96])('a TransformerBlock split, ffnDim %i', async (f) => {
    const m = await fromGguf(blockShapes(f), 500 + f);
    const pooled = async (weights) => {
      const block = await pools[2].TransformerBlock({ ...blockConfig(f), weights: 'q4' },
        { placement: 'split' });
      try {
        await block.setWeights(blockWeights(weights));
        return (await block.forward(input(5), { causal: true })).data;
      } finally {
        await block.dispose();
      }
    };
    const got = await pooled(m.given);
    expect(got).toEqual(await pooled(m.held));
    const block = track(new sync.TransformerBlock(blockConfig(f)));
    block.setWeights(blockWeights(m.floats));
    expectWithin('pooled TransformerBlock', 'q4', got,
      block.forward(input(5), { causal: true }).data, CHAINED_PRODUCTS.encoder);
  });
});
