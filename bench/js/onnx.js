// Builds the ONNX models of the benchmark in memory, hand-encoding the
// protobuf wire format (no model files, no protobuf library): only the few
// fields of onnx.proto that these graphs use.
//
//   mhaContribModel(w):  MatMul/Add projections -> com.microsoft
//                        MultiHeadAttention -> MatMul/Add output projection
//   plainModel(w):       MatMul/Add projections -> Reshape/Transpose ->
//                        MatMul -> Mul(scale) [-> Add(causal mask)] ->
//                        Softmax -> MatMul -> Transpose/Reshape -> MatMul/Add
//
// Both take the same weights as our API (X @ W layout) and compute the same
// function; D1 (decode step) variants take the already projected K/V cache.
// mhaContribModel may also run in float16 (`form` 'fp16': inputs cast to
// float16, weights and biases float16 initializers, the output cast back),
// or with int8 projections (`form` 'integer' or 'nbits'; `w.int8` holds
// each matrix as { values, scales }, symmetric per output column as our
// package quantizes them):
//   'integer': DynamicQuantizeLinear (the activations to uint8, one scale
//              and zero point per tensor) -> MatMulInteger -> Cast -> Mul by
//              the activation scale times the column scales -> Add bias, as
//              onnxruntime's quantize_dynamic writes it (transformers.js's
//              q8 models); onnxruntime fuses it into DynamicQuantizeMatMul
//   'nbits':   com.microsoft MatMulNBits with bits = 8 (q + 128 as uint8,
//              the default zero point 128, the column's scale in each of its
//              K blocks), accuracy_level 4: the activations quantized to
//              int8 per block, integer dot products
// or with 4-bit projections (`form` 'nbits4'; `w.q4` holds each matrix as
// our q4 blocks, bench/js/q4.js): MatMulNBits with bits = 4, blocks of 32,
// the blocks' scales and the default zero point 8, accuracy_level 4

import { floatToHalf } from '../../tests/js/support/safetensors-writer.mjs';
import { matMulNBits4 } from './q4.js';

// --- protobuf wire format -------------------------------------------------
class Writer {
  constructor() {
    this.parts = [];
    this.length = 0;
  }
  bytes(u8) {
    this.parts.push(u8);
    this.length += u8.length;
  }
  varint(v) {
    // v: non-negative integer (< 2^53) or BigInt
    let x = BigInt(v);
    const out = [];
    do {
      let b = Number(x & 0x7fn);
      x >>= 7n;
      if (x > 0n) b |= 0x80;
      out.push(b);
    } while (x > 0n);
    this.bytes(Uint8Array.from(out));
  }
  tag(field, wire) {
    this.varint((field << 3) | wire);
  }
  int(field, v) {
    this.tag(field, 0);
    // negative int64 as two's complement
    this.varint(v < 0 ? (1n << 64n) + BigInt(v) : v);
  }
  float(field, v) {
    this.tag(field, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    this.bytes(b);
  }
  lenDelim(field, u8) {
    this.tag(field, 2);
    this.varint(u8.length);
    this.bytes(u8);
  }
  string(field, s) {
    this.lenDelim(field, new TextEncoder().encode(s));
  }
  message(field, build) {
    const w = new Writer();
    build(w);
    this.lenDelim(field, w.finish());
  }
  finish() {
    const out = new Uint8Array(this.length);
    let o = 0;
    for (const p of this.parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  }
}

export const FLOAT = 1;
const UINT8 = 2;
const INT8 = 3;
export const INT32 = 6;
const INT64 = 7;
const FLOAT16 = 10;

// TensorProto: dims=1, data_type=2, name=8, raw_data=9
function tensorProto(w, name, dims, dataType, raw) {
  for (const d of dims) w.int(1, d);
  w.int(2, dataType);
  w.string(8, name);
  w.lenDelim(9, raw);
}

// ValueInfoProto: name=1, type=2 { tensor_type=1 { elem_type=1, shape=2 { dim=1 { dim_value=1 |
// dim_param=2 } } } }; a string dim is a named (symbolic) one.
function valueInfo(w, name, dims, elemType) {
  w.string(1, name);
  w.message(2, (t) =>
    t.message(1, (tt) => {
      tt.int(1, elemType);
      tt.message(2, (s) => {
        for (const d of dims) s.message(1, (dim) => (typeof d === 'string' ? dim.string(2, d) : dim.int(1, d)));
      });
    }),
  );
}

// AttributeProto: name=1, f=2, i=3, ints=8, type=20 (FLOAT=1, INT=2, INTS=7)
function attribute(w, name, value) {
  w.string(1, name);
  if (Array.isArray(value)) {
    for (const v of value) w.int(8, v);
    w.int(20, 7);
  } else if (Number.isInteger(value.i)) {
    w.int(3, value.i);
    w.int(20, 2);
  } else {
    w.float(2, value.f);
    w.int(20, 1);
  }
}

export class GraphBuilder {
  constructor() {
    this.nodes = [];
    this.inits = [];
    this.inputs = [];
    this.outputs = [];
    this.counter = 0;
  }
  input(name, dims, elemType = FLOAT) {
    this.inputs.push([name, dims, elemType]);
    return name;
  }
  output(name, dims, elemType = FLOAT) {
    this.outputs.push([name, dims, elemType]);
  }
  floatInit(name, dims, data) {
    const copy = Float32Array.from(data);
    this.inits.push([name, dims, FLOAT, new Uint8Array(copy.buffer)]);
    return name;
  }
  // float32 values rounded to float16 (to nearest even, as our package)
  halfInit(name, dims, data) {
    const bits = Uint16Array.from(data, floatToHalf);
    this.inits.push([name, dims, FLOAT16, new Uint8Array(bits.buffer)]);
    return name;
  }
  int8Init(name, dims, values, type = INT8) {
    const copy = type === INT8 ? Int8Array.from(values) : Uint8Array.from(values);
    this.inits.push([name, dims, type, new Uint8Array(copy.buffer)]);
    return name;
  }
  int64Init(name, values) {
    const b = new BigInt64Array(values.map((v) => BigInt(v)));
    this.inits.push([name, [values.length], INT64, new Uint8Array(b.buffer)]);
    return name;
  }
  // op(opType, inputs, attrs, {domain, outputs})
  op(opType, inputs, attrs = {}, { domain = '', outputs = 1 } = {}) {
    const outs = [];
    for (let i = 0; i < outputs; i++) outs.push(`${opType.toLowerCase()}_${this.counter++}`);
    this.nodes.push({ opType, inputs, outs, attrs, domain });
    return outputs === 1 ? outs[0] : outs;
  }
  // NodeProto: input=1, output=2, name=3, op_type=4, attribute=5, domain=7
  encode(opsets) {
    const m = new Writer();
    m.int(1, 8); // ir_version
    m.string(2, 'simd-attention-bench'); // producer_name
    for (const [domain, version] of opsets) {
      m.message(8, (o) => {
        o.string(1, domain);
        o.int(2, version);
      });
    }
    m.message(7, (g) => {
      for (const n of this.nodes) {
        g.message(1, (nw) => {
          for (const i of n.inputs) nw.string(1, i);
          for (const o of n.outs) nw.string(2, o);
          nw.string(3, n.outs[0] + '_node');
          nw.string(4, n.opType);
          for (const [k, v] of Object.entries(n.attrs)) nw.message(5, (a) => attribute(a, k, v));
          if (n.domain) nw.string(7, n.domain);
        });
      }
      g.string(2, 'mha');
      for (const [name, dims, type, raw] of this.inits) {
        g.message(5, (t) => tensorProto(t, name, dims, type, raw));
      }
      for (const [name, dims, type] of this.inputs) g.message(11, (v) => valueInfo(v, name, dims, type));
      for (const [name, dims, type] of this.outputs) g.message(12, (v) => valueInfo(v, name, dims, type));
    });
    return m.finish();
  }
}

// The projections, float32 or of the form `kind` (see the top):
// (x, 'q' | 'k' | 'v' | 'o') -> x W + b.
function projector(g, w, kind) {
  const d = w.d;
  if (kind === 'fp16') {
    return (x, m) => g.op('Add', [g.op('MatMul', [x, g.halfInit(`w${m}`, [d, d], w[`w${m}`])]),
      g.halfInit(`b${m}`, [d], w[`b${m}`])]);
  }
  const bias = (y, m) => g.op('Add', [y, g.floatInit(`b${m}`, [d], w[`b${m}`])]);
  if (!kind) return (x, m) => bias(g.op('MatMul', [x, g.floatInit(`w${m}`, [d, d], w[`w${m}`])]), m);
  if (kind === 'integer') {
    // One quantization per activation tensor (K and V share theirs).
    const quantized = new Map();
    return (x, m) => {
      if (!quantized.has(x)) quantized.set(x, g.op('DynamicQuantizeLinear', [x], {}, { outputs: 3 }));
      const [xq, xScale, xZero] = quantized.get(x);
      const { values, scales } = w.int8[`w${m}`];
      const product = g.op('MatMulInteger', [xq, g.int8Init(`w${m}`, [d, d], values), xZero,
        g.int8Init(`w${m}_zero`, [d], new Int8Array(d))]);
      const scale = g.op('Mul', [xScale, g.floatInit(`w${m}_scale`, [d], scales)]);
      return bias(g.op('Mul', [g.op('Cast', [product], { to: { i: FLOAT } }), scale]), m);
    };
  }
  if (kind === 'nbits4') {
    return (x, m) => {
      const { B, scales } = matMulNBits4(w.q4[`w${m}`].q4, d, d);
      const y = g.op('MatMulNBits', [x, g.int8Init(`w${m}`, [d, d / 32, 16], B, UINT8),
        g.floatInit(`w${m}_scale`, [d, d / 32], scales)],
      { K: { i: d }, N: { i: d }, bits: { i: 4 }, block_size: { i: 32 }, accuracy_level: { i: 4 } },
      { domain: 'com.microsoft' });
      return bias(y, m);
    };
  }
  // MatMulNBits: B [N, K / block, block] of uint8, scales [N, K / block];
  // the block the largest power of two (at most 256) dividing K.
  let block = 256;
  while (d % block) block /= 2;
  return (x, m) => {
    const { values, scales } = w.int8[`w${m}`];
    const b = new Uint8Array(d * d);
    const s = new Float32Array(d * (d / block));
    for (let n = 0; n < d; n++) {
      for (let k = 0; k < d; k++) b[n * d + k] = values[k * d + n] + 128;
      s.fill(scales[n], n * (d / block), (n + 1) * (d / block));
    }
    const y = g.op('MatMulNBits', [x, g.int8Init(`w${m}`, [d, d / block, block], b, UINT8),
      g.floatInit(`w${m}_scale`, [d, d / block], s)],
    { K: { i: d }, N: { i: d }, bits: { i: 8 }, block_size: { i: block }, accuracy_level: { i: 4 } },
    { domain: 'com.microsoft' });
    return bias(y, m);
  };
}

// Causal (bottom-right aligned, like ours): query i sees keys j <= i + (tk - tq).
function causalMask(tq, tk) {
  const m = new Float32Array(tq * tk);
  for (let i = 0; i < tq; i++) {
    for (let j = i + (tk - tq) + 1; j < tk; j++) m[i * tk + j] = -1e9;
  }
  return m;
}

/**
 * The com.microsoft MultiHeadAttention contrib op between MatMul/Add
 * projections. Inputs: "query" [1,Tq,d] and, for cross-attention, "kv"
 * [1,Tk,d]; for the decode step (cacheLen > 0) "past_key"/"past_value"
 * [1,H,cacheLen,dh] (already projected). Output "output" [1,Tq,d].
 */
export function mhaContribModel(w, { form } = {}) {
  const { d, heads: H, tq, tk, cross, causal, cacheLen = 0 } = w;
  if (form === 'fp16' && causal) throw new Error('the float16 graph takes no causal mask');
  const g = new GraphBuilder();
  const project = projector(g, w, form);
  // The float16 graph takes float32 inputs as the others and casts them.
  const input = (name, dims) => (form === 'fp16'
    ? g.op('Cast', [g.input(name, dims)], { to: { i: FLOAT16 } }) : g.input(name, dims));
  const xq = input('query', [1, tq, d]);
  const xkv = cross ? input('kv', [1, tk, d]) : xq;
  const q = project(xq, 'q');
  const k = project(xkv, 'k');
  const v = project(xkv, 'v');
  // inputs: query, key, value, bias, key_padding_mask, attention_bias, past_key, past_value
  const ins = [q, k, v];
  const attrs = { num_heads: { i: H } };
  if (causal) {
    // An additive [1,1,Tq,Tk] bias: the CPU kernel's `unidirectional`
    // attribute is top-left aligned for Tq != Tk, ours is bottom-right.
    const totalK = tk;
    ins.push('', '', g.floatInit('causal_bias', [1, 1, tq, totalK], causalMask(tq, totalK)));
  }
  let outputs = 1;
  if (cacheLen > 0) {
    while (ins.length < 6) ins.push('');
    ins.push(input('past_key', [1, H, cacheLen, d / H]), input('past_value', [1, H, cacheLen, d / H]));
    outputs = 3;
  }
  let z = g.op('MultiHeadAttention', ins, attrs, { domain: 'com.microsoft', outputs });
  if (outputs > 1) z = z[0];
  const out = project(z, 'o');
  if (form === 'fp16') g.op('Cast', [out], { to: { i: FLOAT } });
  else g.op('Identity', [out]);
  g.nodes[g.nodes.length - 1].outs[0] = 'output';
  g.output('output', [1, tq, d]);
  return g.encode([
    ['', 17],
    ['com.microsoft', 1],
  ]);
}

/**
 * The same attention from standard ops. For the decode step the cache
 * arrives as "past_key"/"past_value" [1,cacheLen,d] (projected) and is
 * concatenated with the new token's K/V.
 */
export function plainModel(w) {
  const { d, heads: H, tq, tk, cross, causal, cacheLen = 0 } = w;
  const dh = d / H;
  const g = new GraphBuilder();
  const project = projector(g, w);
  const xq = g.input('query', [1, tq, d]);
  const xkv = cross ? g.input('kv', [1, tk - cacheLen, d]) : xq;
  const q = project(xq, 'q');
  let k = project(xkv, 'k');
  let v = project(xkv, 'v');
  if (cacheLen > 0) {
    k = g.op('Concat', [g.input('past_key', [1, cacheLen, d]), k], { axis: { i: 1 } });
    v = g.op('Concat', [g.input('past_value', [1, cacheLen, d]), v], { axis: { i: 1 } });
  }
  const split = g.int64Init('split_shape', [1, -1, H, dh]);
  const merge = g.int64Init('merge_shape', [1, -1, d]);
  const qh = g.op('Transpose', [g.op('Reshape', [q, split])], { perm: [0, 2, 1, 3] });
  const kt = g.op('Transpose', [g.op('Reshape', [k, split])], { perm: [0, 2, 3, 1] });
  const vh = g.op('Transpose', [g.op('Reshape', [v, split])], { perm: [0, 2, 1, 3] });
  let s = g.op('Mul', [g.op('MatMul', [qh, kt]), g.floatInit('scale', [], [1 / Math.sqrt(dh)])]);
  if (causal) s = g.op('Add', [s, g.floatInit('causal_mask', [tq, tk], causalMask(tq, tk))]);
  const p = g.op('Softmax', [s], { axis: { i: -1 } });
  const z = g.op('Reshape', [g.op('Transpose', [g.op('MatMul', [p, vh])], { perm: [0, 2, 1, 3] }), merge]);
  const out = project(z, 'o');
  g.op('Identity', [out]);
  g.nodes[g.nodes.length - 1].outs[0] = 'output';
  g.output('output', [1, tq, d]);
  return g.encode([['', 17]]);
}
