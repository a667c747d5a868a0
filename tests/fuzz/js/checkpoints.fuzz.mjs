// A randomized fuzz of the package's checkpoint reading, driven by
// fast-check for a bounded time (tests/fuzz/README.md):
//   node tests/fuzz/js/checkpoints.fuzz.mjs [seconds]   (default 30; SEED=n repeats a run)
// Targets: parseSafetensors on random bytes, on mutated seed files and on
// crafted headers; readSafetensors over a stream in random chunks, which
// must agree with parseSafetensors; loadCheckpoint on mutated real
// checkpoints (../shared/hf-models) with random options. Every input must
// either succeed or throw an Error whose message starts with the function
// that judged it ("parseSafetensors: ...", "loadCheckpoint: ..."): an engine
// error from inside the package ("x is not a function"), a slow input or a
// crash fails the run. scripts/fuzz.sh runs this under a wall-clock timeout
// and a heap limit, so a hang or unbounded memory fails it too.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { createAttentionModule, loadCheckpoint, parseSafetensors, readSafetensors }
  from '../../../web/index.js';
import { writeSafetensors } from '../../js/support/safetensors-writer.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const modelsDir = process.env.SA_HF_MODELS_DIR ?? path.resolve(here, '../../../../shared/hf-models');
const seconds = Number(process.argv[2] ?? 30);
const seed = process.env.SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.SEED);
// One input may take this long; more is reported as a hang.
const SLOW_MS = 2000;

// The functions whose messages the package composes; anything else thrown
// (a TypeError from the engine, a RangeError of a typed array) is a bug.
const OUR_MESSAGE = new RegExp('^(parseSafetensors|readSafetensors|loadCheckpoint|' +
  'SafetensorsFile\\.\\w+|(MultiHeadAttention|TransformerEncoderLayer|' +
  'TransformerDecoderLayer)\\.\\w+): ');

function judge(what, error) {
  if (!(error instanceof Error) || !OUR_MESSAGE.test(error.message)) {
    const e = new Error(`${what}: threw what the package did not compose: ` +
      `${error?.constructor?.name}: ${error?.message ?? String(error)}`);
    e.stack += `\ncaused by ${error?.stack}`;
    throw e;
  }
}

function timed(what, fn) {
  const start = performance.now();
  try {
    return fn();
  } catch (error) {
    judge(what, error);
    return undefined;
  } finally {
    const ms = performance.now() - start;
    if (ms > SLOW_MS) throw new Error(`${what}: one input took ${ms.toFixed(0)} ms`);
  }
}

// ---------------------------------------------------------------------------
// Seeds: the reference files, and small files written here
// ---------------------------------------------------------------------------

const cases = JSON.parse(fs.readFileSync(path.join(modelsDir, 'cases.json'), 'utf8'));
const seedFiles = fs.readdirSync(modelsDir).filter((f) => f.endsWith('.safetensors')).sort()
  .map((f) => new Uint8Array(fs.readFileSync(path.join(modelsDir, f))));
const crafted = [
  writeSafetensors({}),
  writeSafetensors({ a: { data: Float32Array.of(1, 2, 3), shape: [3] } }, { metadata: { format: 'pt' } }),
  writeSafetensors({
    'q.weight': { data: Float32Array.of(1, 2, 3, 4), shape: [2, 2], dtype: 'F16' },
    'k.weight': { data: Float32Array.of(5, 6, 7, 8), shape: [2, 2], dtype: 'BF16' },
    ids: { dtype: 'I64', shape: [2], bytes: new Uint8Array(16) },
    empty: { data: new Float32Array(0), shape: [0, 4] },
  }),
];
const seeds = [...crafted, ...seedFiles];

const headerEnd = (bytes) => 8 + Number(new DataView(bytes.buffer, bytes.byteOffset, 8)
  .getBigUint64(0, true));

// Names and values a header or an option may hold, the tricky ones included.
const WORDS = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', '__metadata__',
  'F32', 'F16', 'BF16', 'I64', 'U8', 'BOOL', 'F8_E4M3', 'pytorch', 'separate', 'bert', 'fused',
  'gpt2', 'weight', 'bias', 'q_proj', 'k_proj', 'self_attn', 'in_proj_weight', 'data_offsets',
  'dtype', 'shape', '', '.', 'layers.1', 'decoder.layers.1'];
const word = fc.oneof(fc.constantFrom(...WORDS), fc.string({ maxLength: 12 }));
const jsonValue = fc.oneof(word, fc.integer({ min: -2, max: 70 }),
  fc.constantFrom(2 ** 53, 2 ** 31, -0, 0.5, 1e300, null, true),
  fc.array(fc.integer({ min: -1, max: 40 }), { maxLength: 4 }), fc.object({ maxDepth: 1 }));

// ---------------------------------------------------------------------------
// parseSafetensors and readSafetensors
// ---------------------------------------------------------------------------

// Random bytes, or random bytes after a plausible header length.
const randomBytes = fc.oneof(fc.uint8Array({ maxLength: 200 }),
  fc.tuple(fc.integer({ min: 0, max: 300 }), fc.uint8Array({ maxLength: 300 })).map(([n, rest]) => {
    const out = new Uint8Array(8 + rest.length);
    new DataView(out.buffer).setBigUint64(0, BigInt(n), true);
    out.set(rest, 8);
    return out;
  }));

// A seed with byte edits in its first bytes (the header, mostly), cut or lengthened.
const mutatedSeed = fc.record({
  seedIndex: fc.nat(seeds.length - 1),
  edits: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
  cut: fc.option(fc.nat(), { nil: undefined }),
  extra: fc.nat(16),
}).map(({ seedIndex, edits, cut, extra }) => {
  const s = seeds[seedIndex];
  const reach = Math.min(s.length, headerEnd(s) + 64);
  const out = new Uint8Array(s.length + extra);
  out.set(s);
  for (const [at, v] of edits) out[at % reach] = v;
  return cut === undefined ? out : out.subarray(0, cut % (out.length + 1));
});

// A header of random entries (tricky names, fields and values), each field
// sometimes written twice, then data of about the size it declares.
const craftedHeader = fc.record({
  entries: fc.uniqueArray(fc.tuple(word, fc.record({
    dtype: fc.oneof(fc.constantFrom('F32', 'F16', 'BF16', 'I64', 'U8'), jsonValue),
    shape: fc.oneof(fc.array(fc.nat(4), { maxLength: 3 }), jsonValue),
    data_offsets: fc.oneof(fc.tuple(fc.nat(64), fc.nat(64)), jsonValue),
  }, { requiredKeys: [] })), { maxLength: 5, selector: ([name]) => name }),
  repeat: fc.option(fc.nat(), { nil: undefined }),
  dataBytes: fc.nat(200),
}).map(({ entries, repeat, dataBytes }) => {
  const parts = entries.map(([name, e]) => `${JSON.stringify(name)}:${JSON.stringify(e)}`);
  if (repeat !== undefined && parts.length > 0) parts.push(parts[repeat % parts.length]);
  const json = new TextEncoder().encode(`{${parts.join(',')}}`);
  const out = new Uint8Array(8 + json.length + dataBytes);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  return out;
});

const anyFile = fc.oneof(randomBytes, mutatedSeed, craftedHeader);

// Bytes per element of each dtype, from the format's definition.
const BYTES = { F32: 4, F16: 2, BF16: 2, F64: 8, I64: 8, I32: 4, I16: 2, I8: 1, U64: 8, U32: 4,
  U16: 2, U8: 1, BOOL: 1, F8_E4M3: 1, F8_E5M2: 1 };

const parses = fc.property(anyFile, fc.boolean(), (bytes, keep16Bit) => {
  const file = timed('parseSafetensors', () => parseSafetensors(bytes, { keep16Bit }));
  if (file === undefined) return;
  // What parses holds its tensors' bytes exactly, each once (no alias, no
  // gap, nothing after), and reads every tensor of a converted dtype.
  let sum = 0;
  for (const name of file.names) {
    const { dtype, shape } = file.info(name);
    sum += shape.reduce((n, d) => n * d, 1) * BYTES[dtype];
    timed(`tensor ${name} (${dtype})`, () => file.tensor(name));
  }
  if (sum !== bytes.length - headerEnd(bytes)) {
    throw new Error(`parseSafetensors accepted tensors of ${sum} bytes in all in ` +
      `${bytes.length - headerEnd(bytes)} bytes of data`);
  }
});

// The bytes as a Response whose body comes in chunks of random sizes.
function chunked(bytes, sizes) {
  let at = 0;
  let i = 0;
  return new Response(new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) { controller.close(); return; }
      const n = 1 + (sizes[i++ % sizes.length] ?? bytes.length);
      controller.enqueue(bytes.slice(at, at + n));
      at += n;
    },
  }));
}

const streams = fc.asyncProperty(anyFile, fc.array(fc.nat(40), { maxLength: 6 }),
  async (bytes, sizes) => {
    const parsed = timed('parseSafetensors', () => parseSafetensors(bytes));
    let read;
    try {
      read = await readSafetensors(chunked(bytes, sizes));
    } catch (error) {
      judge('readSafetensors', error);
    }
    if ((parsed === undefined) !== (read === undefined)) {
      throw new Error(`parseSafetensors ${parsed ? 'accepts' : 'refuses'} what readSafetensors ` +
        `over a stream ${read ? 'accepts' : 'refuses'}`);
    }
    if (parsed !== undefined && JSON.stringify(parsed.names) !== JSON.stringify(read.names)) {
      throw new Error('parseSafetensors and readSafetensors read different tensors');
    }
  });

// ---------------------------------------------------------------------------
// loadCheckpoint
// ---------------------------------------------------------------------------

const sa = await createAttentionModule();

// The blocks of the reference models that a layout maps, with their
// configs from cases.json; the tensors under the block's prefix.
const BLOCKS = ['bert', 'gpt2', 'bart_encoder', 'whisper_decoder'].map((name) => {
  const c = cases[name];
  const file = parseSafetensors(fs.readFileSync(path.join(modelsDir, `${name}.safetensors`)));
  const prefix = `${c.prefix}.`;
  const tensors = file.names.filter((n) => n.startsWith(prefix)).map((n) => ({
    name: n, ...file.tensor(n),
  }));
  const config = { dModel: c.dModel, numHeads: c.numHeads, ffnDim: c.ffnDim,
    activation: c.activation, eps: c.eps, normFirst: c.normFirst };
  const Layer = name.includes('decoder') ? sa.TransformerDecoderLayer : sa.TransformerEncoderLayer;
  return { name, prefix, tensors, config, Layer };
});

// One edit of a checkpoint's list of { name, data, shape, dtype }.
const edit = fc.oneof(
  fc.record({ op: fc.constant('drop'), at: fc.nat() }),
  fc.record({ op: fc.constant('rename'), at: fc.nat(), to: word, keep: fc.boolean() }),
  fc.record({ op: fc.constant('alias'), at: fc.nat(), to: word }),
  fc.record({ op: fc.constant('reshape'), at: fc.nat(),
    shape: fc.array(fc.nat(200), { maxLength: 2 }) }),
  fc.record({ op: fc.constant('transpose'), at: fc.nat() }),
  fc.record({ op: fc.constant('dtype'), at: fc.nat(), dtype: fc.constantFrom('F16', 'BF16', 'I64') }),
  fc.record({ op: fc.constant('value'), at: fc.nat(), index: fc.nat(),
    value: fc.constantFrom(NaN, Infinity, -Infinity, 1e30, 7e4, -0) }),
);

function applyEdits(tensors, edits) {
  const out = tensors.map((t) => ({ ...t }));
  for (const e of edits) {
    if (out.length === 0) break;
    const i = e.at % out.length;
    const t = out[i];
    if (e.op === 'drop') out.splice(i, 1);
    else if (e.op === 'rename') {
      const cut = t.name.lastIndexOf('.');
      t.name = e.keep && cut >= 0 ? `${t.name.slice(0, cut)}.${e.to}` : e.to;
    } else if (e.op === 'alias') out.push({ ...t, name: e.to });
    else if (e.op === 'reshape') t.shape = e.shape;
    else if (e.op === 'transpose') t.shape = [...t.shape].reverse();
    else if (e.op === 'dtype') t.dtype = e.dtype;
    else if (t.data.length > 0) {
      t.data = Float32Array.from(t.data);
      t.data[e.index % t.data.length] = e.value;
    }
  }
  return out;
}

// The edited tensors as a file (written, then parsed, maybe keeping bits)
// or as an object of arrays, as loadCheckpoint takes either; or as an
// object that only looks like a file.
function checkpointOf(tensors, form) {
  const seen = new Set();
  const unique = tensors.filter((t) => !seen.has(t.name) && seen.add(t.name));
  if (form === 'object') {
    return Object.fromEntries(unique.map((t) => [t.name,
      t.dtype === 'F32' ? { data: t.data, shape: t.shape }
        : { data: t.data, shape: t.shape, dtype: t.dtype }]));
  }
  const entries = Object.fromEntries(unique.map((t) => {
    const count = t.shape.reduce((n, d) => n * d, 1);
    // A shape the data does not fill is written with the bytes it declares.
    if (t.dtype === 'I64' || count !== t.data.length) {
      const bytesPer = { F32: 4, F16: 2, BF16: 2, I64: 8 }[t.dtype];
      return [t.name, { dtype: t.dtype, shape: t.shape, bytes: new Uint8Array(count * bytesPer) }];
    }
    return [t.name, { data: t.data, shape: t.shape, dtype: t.dtype }];
  }));
  const file = parseSafetensors(writeSafetensors(entries), { keep16Bit: form === 'bits' });
  // Something with a file's names and tensor() but not all of its members.
  return form === 'lookalike' ? { names: file.names, tensor: (n) => file.tensor(n) } : file;
}

// Mostly options that get past their own checks, so that the mapping runs.
const options = fc.record({
  prefix: fc.oneof({ arbitrary: fc.constant('block'), weight: 8 }, word, jsonValue),
  layout: fc.oneof({ arbitrary: fc.constant(undefined), weight: 6 },
    { arbitrary: fc.constantFrom('pytorch', 'separate', 'bert', 'fused', 'gpt2'), weight: 3 },
    word, jsonValue),
  allowUnused: fc.oneof({ arbitrary: fc.boolean(), weight: 8 }, jsonValue),
}, { requiredKeys: [] });

const loads = fc.property(fc.nat(BLOCKS.length - 1), fc.array(edit, { maxLength: 4 }),
  fc.constantFrom('file', 'bits', 'object', 'lookalike'), fc.constantFrom('f32', 'f16', 'bf16'),
  options,
  (blockIndex, edits, form, weights, opts) => {
    const block = BLOCKS[blockIndex];
    const tensors = applyEdits(block.tensors, edits);
    const checkpoint = timed('writing the checkpoint', () => checkpointOf(tensors, form));
    if (checkpoint === undefined) return;
    const o = opts.prefix === 'block' ? { ...opts, prefix: block.prefix } : opts;
    const layer = new block.Layer({ ...block.config, weights });
    try {
      const result = timed('loadCheckpoint', () => loadCheckpoint(layer, checkpoint, o));
      if (result !== undefined && !Array.isArray(result.tensors)) {
        throw new Error('loadCheckpoint returned no list of tensors');
      }
    } finally {
      layer.dispose();
    }
  });

// ---------------------------------------------------------------------------

const TARGETS = [
  ['parseSafetensors', parses, 0.3],
  ['readSafetensors (a stream in chunks)', streams, 0.2],
  ['loadCheckpoint', loads, 0.5],
];
console.log(`fuzz: checkpoints (fast-check ${fc.__version}) for ${seconds} s, SEED=${seed}, ` +
  `${seeds.length} seed files`);
let failed = false;
for (const [name, property, share] of TARGETS) {
  const run = await fc.check(property, {
    seed, numRuns: Number.MAX_SAFE_INTEGER, interruptAfterTimeLimit: seconds * share * 1000,
  });
  if (run.failed) {
    failed = true;
    console.log(`fuzz: ${name}: FAILED\n${fc.defaultReportMessage(run)}`);
  } else {
    console.log(`fuzz: ${name}: ${run.numRuns} inputs, passed`);
  }
}
if (failed) {
  console.log(`fuzz: checkpoints FAILED; repeat with SEED=${seed}`);
  process.exit(1);
}
console.log('fuzz: checkpoints passed');
