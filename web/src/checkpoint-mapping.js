// Checkpoint tensors -> the weights of a MultiHeadAttention or a layer, from
// PyTorch's state_dict names and Hugging Face's common layouts. Each layout
// is a table from the checkpoint's names to PyTorch's (nn.MultiheadAttention,
// nn.TransformerEncoderLayer, nn.TransformerDecoderLayer); the object's
// setWeightsFromPyTorch does the rest (C++ for MultiHeadAttention). Only
// what the checkpoint alone knows is checked here: which names are there,
// and the shapes its header declares, which setWeightsFromPyTorch never
// sees (it reads flat arrays, so a transposed [E, 3E] would pass as
// [3E, E]).
//
// F16 and BF16 tensors read as their bits (a SafetensorsFile read with
// keep16Bit, or { data: Uint16Array, dtype } entries) stay bits for the
// weight matrices of an object whose config.weights is their type; every
// other tensor becomes float32 here.
import { checkObject, describe, float32, integers, optionsObject } from './arguments.js';
import { OPTION_KEYS } from './option-keys.js';
import { BLOCK_LAYOUTS, blockWeights, layoutNames, STACK_LAYOUTS } from './block-checkpoint.js';
import { attentionWeightsFromPyTorch } from './pytorch-attention-state.js';
import { attentionShapes, layerShapes } from './pytorch-layer-state.js';
import { widen16Bit } from './safetensors.js';

// The config.weights that holds each 16-bit dtype as it is. A Map, since
// a checkpoint's dtype is the user's string.
const HELD_AS = new Map([['F16', 'f16'], ['BF16', 'bf16']]);
// PyTorch's names of the weight matrices (the rest are biases and norms).
const isBits = (v) => Object.prototype.toString.call(v) === '[object Uint16Array]';
const isMatrix = (name) => /(proj_weight|proj\.weight|linear\d\.weight)$/.test(name);

const copy = (to, from) => ({ to, from: [from] });
// GPT-2's Conv1D stores [in, out], the transpose of a Linear weight.
const conv1d = (to, from) => ({ to, from: [from], conv1d: true });
const concat = (to, ...from) => ({ to, from });
// GPT-NeoX's query_key_value rows hold each head's q, k and v in turn.
const byHead = (to, from) => ({ to, from: [from], byHead: true });

// One attention block as nn.MultiheadAttention's names after `to`, from the
// checkpoint's after `at`; has(name) says whether the checkpoint holds one.
const ATTENTION_LAYOUTS = {
  pytorch: (to, at, has) => [
    ...(has(`${at}in_proj_weight`) || !has(`${at}q_proj_weight`)
      ? [copy(`${to}in_proj_weight`, `${at}in_proj_weight`)]
      : ['q', 'k', 'v'].map((x) => copy(`${to}${x}_proj_weight`, `${at}${x}_proj_weight`))),
    copy(`${to}in_proj_bias`, `${at}in_proj_bias`),
    copy(`${to}out_proj.weight`, `${at}out_proj.weight`),
    copy(`${to}out_proj.bias`, `${at}out_proj.bias`),
  ],
  // Separate projections: BART, Whisper, OPT, ...
  separate: (to, at) => separate(to, at, ['q_proj.', 'k_proj.', 'v_proj.', 'out_proj.']),
  bert: (to, at) => separate(to, at,
    ['self.query.', 'self.key.', 'self.value.', 'output.dense.']),
  // q, k, v packed as in in_proj_weight: timm's ViT.
  fused: (to, at) => [
    copy(`${to}in_proj_weight`, `${at}qkv.weight`), copy(`${to}in_proj_bias`, `${at}qkv.bias`),
    copy(`${to}out_proj.weight`, `${at}proj.weight`), copy(`${to}out_proj.bias`, `${at}proj.bias`),
  ],
  gpt2: (to, at) => [
    conv1d(`${to}in_proj_weight`, `${at}c_attn.weight`),
    copy(`${to}in_proj_bias`, `${at}c_attn.bias`),
    conv1d(`${to}out_proj.weight`, `${at}c_proj.weight`),
    copy(`${to}out_proj.bias`, `${at}c_proj.bias`),
  ],
  // Llama, Mistral, Qwen2, Gemma: the output is o_proj.
  llama: (to, at) => separate(to, at, ['q_proj.', 'k_proj.', 'v_proj.', 'o_proj.']),
  // Phi-3: the rows of q, then k, then v in one qkv_proj (grouped K/V
  // heads as in_proj_weight has them).
  phi3: (to, at) => [
    copy(`${to}in_proj_weight`, `${at}qkv_proj.weight`),
    copy(`${to}in_proj_bias`, `${at}qkv_proj.bias`),
    copy(`${to}out_proj.weight`, `${at}o_proj.weight`), copy(`${to}out_proj.bias`, `${at}o_proj.bias`),
  ],
  distilbert: (to, at) => separate(to, at, ['q_lin.', 'k_lin.', 'v_lin.', 'out_lin.']),
  // Hugging Face's ViT (timm's is 'fused').
  vit: (to, at) => separate(to, at,
    ['attention.query.', 'attention.key.', 'attention.value.', 'output.dense.']),
  gpt_neox: (to, at) => [
    byHead(`${to}in_proj_weight`, `${at}query_key_value.weight`),
    byHead(`${to}in_proj_bias`, `${at}query_key_value.bias`),
    copy(`${to}out_proj.weight`, `${at}dense.weight`), copy(`${to}out_proj.bias`, `${at}dense.bias`),
  ],
};

function separate(to, at, [q, k, v, o]) {
  return [
    copy(`${to}q_proj_weight`, `${at}${q}weight`), copy(`${to}k_proj_weight`, `${at}${k}weight`),
    copy(`${to}v_proj_weight`, `${at}${v}weight`),
    concat(`${to}in_proj_bias`, `${at}${q}bias`, `${at}${k}bias`, `${at}${v}bias`),
    copy(`${to}out_proj.weight`, `${at}${o}weight`), copy(`${to}out_proj.bias`, `${at}${o}bias`),
  ];
}

// A Linear (or LayerNorm) `to` from `from`.
const linear = (to, from) => [copy(`${to}.weight`, `${from}.weight`), copy(`${to}.bias`, `${from}.bias`)];
const gpt2Linear = (to, from) =>
  [conv1d(`${to}.weight`, `${from}.weight`), copy(`${to}.bias`, `${from}.bias`)];
const attention = (layout, to, at) => (has) => ATTENTION_LAYOUTS[layout](to, at, has);
// An encoder layer whose checkpoint holds its self-attention after `at` and
// its norm1, linear1, linear2 and norm2 under the names given (its linears
// read by `fc`: GPT-2's are Conv1Ds).
const encoder = (layout, at, [norm1, linear1, linear2, norm2], fc = linear) => [
  attention(layout, 'self_attn.', at), ...linear('norm1', norm1), ...fc('linear1', linear1),
  ...fc('linear2', linear2), ...linear('norm2', norm2)];

// Each object's layouts: a list of attention blocks (functions of has) and
// entries. The activation, norm placement and eps are the config's: BERT,
// BART: post-LN, GELU; GPT-2: normFirst, 'gelu_tanh', causal; ViT: normFirst, GELU.
const LAYOUTS = {
  MultiHeadAttention: Object.fromEntries(Object.keys(ATTENTION_LAYOUTS).map((name) =>
    [name, [attention(name, '', '')]])),
  TransformerEncoderLayer: {
    pytorch: [attention('pytorch', 'self_attn.', 'self_attn.'), ...linear('linear1', 'linear1'),
      ...linear('linear2', 'linear2'), ...linear('norm1', 'norm1'), ...linear('norm2', 'norm2')],
    separate: encoder('separate', 'self_attn.',
      ['self_attn_layer_norm', 'fc1', 'fc2', 'final_layer_norm']),
    bert: encoder('bert', 'attention.',
      ['attention.output.LayerNorm', 'intermediate.dense', 'output.dense', 'output.LayerNorm']),
    fused: encoder('fused', 'attn.', ['norm1', 'mlp.fc1', 'mlp.fc2', 'norm2']),
    gpt2: encoder('gpt2', 'attn.', ['ln_1', 'mlp.c_fc', 'mlp.c_proj', 'ln_2'], gpt2Linear),
    distilbert: encoder('distilbert', 'attention.',
      ['sa_layer_norm', 'ffn.lin1', 'ffn.lin2', 'output_layer_norm']),
    vit: encoder('vit', 'attention.',
      ['layernorm_before', 'intermediate.dense', 'output.dense', 'layernorm_after']),
    // The sequential form (use_parallel_residual: false).
    gpt_neox: encoder('gpt_neox', 'attention.',
      ['input_layernorm', 'mlp.dense_h_to_4h', 'mlp.dense_4h_to_h', 'post_attention_layernorm']),
  },
  TransformerDecoderLayer: {
    pytorch: [attention('pytorch', 'self_attn.', 'self_attn.'),
      attention('pytorch', 'multihead_attn.', 'multihead_attn.'), ...linear('linear1', 'linear1'),
      ...linear('linear2', 'linear2'), ...linear('norm1', 'norm1'), ...linear('norm2', 'norm2'),
      ...linear('norm3', 'norm3')],
    separate: [attention('separate', 'self_attn.', 'self_attn.'),
      attention('separate', 'multihead_attn.', 'encoder_attn.'),
      ...linear('norm1', 'self_attn_layer_norm'), ...linear('norm2', 'encoder_attn_layer_norm'),
      ...linear('linear1', 'fc1'), ...linear('linear2', 'fc2'),
      ...linear('norm3', 'final_layer_norm')],
  },
};

// Which object `target` is, by its methods (class names do not survive
// minifiers).
function targetKind(where, target) {
  const has = (m) => target !== null && typeof target === 'object' && typeof target[m] === 'function';
  if (has('forwardIncremental') && has('createKVCache') && !has('precomputeKeyValue') &&
      !has('precomputeMemory')) {
    return 'TransformerBlock';
  }
  if (has('forwardIncremental') && has('createKVCaches')) return 'TransformerStack';
  if (has('setWeightsFromPyTorch') && has('precomputeKeyValue')) return 'MultiHeadAttention';
  if (has('setWeightsFromPyTorch') && has('precomputeMemory')) return 'TransformerDecoderLayer';
  if (has('setWeightsFromPyTorch') && has('forward')) return 'TransformerEncoderLayer';
  throw new TypeError(`${where}: target: expected a MultiHeadAttention, ` +
    `TransformerEncoderLayer, TransformerDecoderLayer, TransformerBlock or TransformerStack, ` +
    `got ${describe(target)}`);
}

/**
 * Whether `checkpoint` is taken as a SafetensorsFile: by its members (one
 * from another copy of the package passes); anything else is an object of
 * tensors.
 */
export function isTensorFile(checkpoint) {
  return checkpoint !== null && typeof checkpoint === 'object' &&
    Array.isArray(checkpoint.names) && checkpoint.names.every((n) => typeof n === 'string') &&
    typeof checkpoint.tensor === 'function' && typeof checkpoint.info === 'function';
}

// The checkpoint as { names, shape(name) (undefined if not declared),
// tensor(name) -> { data, dtype? } }: a SafetensorsFile, or an object of
// Float32Array or { data, shape, dtype? } entries.
function readCheckpoint(where, checkpoint) {
  if (isTensorFile(checkpoint)) {
    return {
      names: checkpoint.names,
      shape: (name) => checkpoint.info(name).shape,
      tensor: (name) => checkpoint.tensor(name),
    };
  }
  checkObject(where, 'checkpoint', checkpoint);
  const entry = (name) => {
    const v = checkpoint[name];
    const at = `checkpoint['${name}']`;
    if (ArrayBuffer.isView(v)) return { data: float32(where, at, v) };
    if (v === null || typeof v !== 'object') {
      throw new TypeError(`${where}: ${at}: expected a Float32Array or ` +
        `{ data: Float32Array, shape }, got ${describe(v)}`);
    }
    const shape = integers(where, `${at}.shape`, v.shape);
    // 'F32' too: what SafetensorsFile.tensor() gives passes as it is.
    if (v.dtype === undefined || v.dtype === 'F32') {
      return { data: float32(where, `${at}.data`, v.data), shape };
    }
    if (!HELD_AS.has(v.dtype) || !isBits(v.data)) {
      throw new TypeError(`${where}: ${at}: expected { data: Uint16Array, dtype: 'F16' or ` +
        `'BF16' } with a dtype, got dtype ${describe(v.dtype)} and data ${describe(v.data)}`);
    }
    return { data: v.data, shape, dtype: v.dtype };
  };
  return {
    names: Object.keys(checkpoint),
    shape: (name) => entry(name).shape,
    tensor: entry,
  };
}

// The first `count` names quoted, and ', ...' when there are more.
const quoteSome = (names, count, more = true) => names.slice(0, count).map((n) => `'${n}'`)
  .join(', ') + (more && names.length > count ? ', ...' : '');

const sameShape = (a, b) => a.length === b.length && a.every((d, i) => d === b[i]);
const shapeString = (s) => `[${s.join(', ')}]`;

// [rows, cols] -> [cols, rows], in data's type (bits stay bits).
function transpose(data, rows, cols) {
  const out = new /** @type {Float32ArrayConstructor} */ (data.constructor)(data.length);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c];
  }
  return out;
}

// GPT-NeoX's [heads, (q, k, v), headDim, cols] rows -> in_proj's
// [(q, k, v), heads, headDim, cols], in data's type. want: in_proj's shape.
function qkvFromHeads(where, name, data, config, want) {
  const { numHeads: heads, numKvHeads, headDim } = config;
  if (numKvHeads !== heads || (config.headDimV ?? headDim) !== headDim) {
    throw new RangeError(`${where}: ${name}: holds each head's q, k and v together, which ` +
      `needs as many key/value heads as query heads and one head width (the object has ` +
      `numHeads ${heads}, numKvHeads ${numKvHeads})`);
  }
  const count = want.reduce((n, d) => n * d, 1);
  if (data.length !== count) {
    throw new RangeError(`${where}: ${name}: expected ${count} values for shape ` +
      `${shapeString(want)}, got ${data.length}`);
  }
  const out = new /** @type {Float32ArrayConstructor} */ (data.constructor)(data.length);
  const block = headDim * (want[1] ?? 1);
  for (let h = 0; h < heads; h++) {
    for (let j = 0; j < 3; j++) {
      const from = (3 * h + j) * block;
      out.set(data.subarray(from, from + block), (j * heads + h) * block);
    }
  }
  return out;
}

function concatenate(arrays) {
  const out = new Float32Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) { out.set(a, at); at += a.length; }
  return out;
}

// The checkpoint's own name and index of its first NaN or infinity: the
// object's check would see it only after the transposes and
// concatenations, at another index of another name. The index is in the
// tensor's declared shape (row-major), or flat when it has none.
function checkFinite(where, name, shape, data, dtype) {
  // float32 bits, or 16-bit ones, whose exponent bits are all ones.
  const [bits, exponent] = isBits(data) ? [data, dtype === 'BF16' ? 0x7f80 : 0x7c00]
    : [new Uint32Array(data.buffer, data.byteOffset, data.length), 0x7f800000];
  let i = 0;
  while (i < bits.length && (bits[i] & exponent) !== exponent) i++;
  if (i === bits.length) return;
  const value = isBits(data) ? widen16Bit(dtype, data.subarray(i, i + 1))[0] : data[i];
  const dims = shape !== undefined && shape.length > 0 &&
    shape.reduce((n, d) => n * d, 1) === data.length ? shape : [data.length];
  const index = [];
  for (let d = dims.length - 1, rest = i; d >= 0; rest = Math.floor(rest / dims[d]), d--) {
    index.unshift(rest % dims[d]);
  }
  throw new RangeError(`${where}: ${name}[${index.join(', ')}] is ` +
    `${Number.isNaN(value) ? 'NaN' : value > 0 ? '+Infinity' : '-Infinity'}`);
}

function readOptions(where, options) {
  const o = optionsObject(where, options, OPTION_KEYS.LoadCheckpointOptions);
  if (o.prefix !== undefined && typeof o.prefix !== 'string') {
    throw new TypeError(`${where}: options.prefix: expected a string, got ${describe(o.prefix)}`);
  }
  if (o.allowUnused !== undefined && typeof o.allowUnused !== 'boolean') {
    throw new TypeError(`${where}: options.allowUnused: expected a boolean, got ` +
      `${describe(o.allowUnused)}`);
  }
  // 'layers.3' means the tensors of layers.3, not also those of layers.30.
  const prefix = o.prefix === undefined || o.prefix === '' || o.prefix.endsWith('.')
    ? o.prefix ?? '' : `${o.prefix}.`;
  return { prefix, layout: o.layout, allowUnused: o.allowUnused ?? false };
}

// The entries of `layout`, or of the layout whose names the checkpoint
// holds most of.
function pickLayout(where, kind, layouts, requested, has) {
  const entriesOf = (name) => layouts[name].flatMap((e) => (typeof e === 'function' ? e(has) : [e]));
  if (requested !== undefined) {
    if (!(typeof requested === 'string' && Object.hasOwn(layouts, requested))) {
      throw new TypeError(`${where}: options.layout: expected one of ` +
        `${Object.keys(layouts).map((n) => `'${n}'`).join(', ')} for a ${kind}, got ` +
        `${describe(requested)}`);
    }
    return { layout: requested, entries: entriesOf(requested) };
  }
  let best = { layout: undefined, entries: [], found: 0 };
  for (const layout of Object.keys(layouts)) {
    const entries = entriesOf(layout);
    const found = entries.flatMap((e) => e.from).filter(has).length;
    if (found > best.found) best = { layout, entries, found };
  }
  return best;
}

// One tensor's values: 16-bit bits kept when `keepBits` (a matrix the
// object holds in their type), else float32; its NaN or infinity named.
function tensorValues(where, ckpt, name, declared, keepBits) {
  const { data, dtype } = ckpt.tensor(name);
  checkFinite(where, name, declared, data, dtype);
  if (!isBits(data) || keepBits) return data;
  return widen16Bit(dtype, data);
}

// The layout of a block of `config` whose tensors are `under` (names after
// the prefix): the one requested, or the one whose names it holds most of.
function blockLayout(where, config, requested, under, prefix, kind) {
  const layouts = Object.keys(BLOCK_LAYOUTS);
  if (requested !== undefined) {
    if (!(typeof requested === 'string' && layouts.includes(requested))) {
      throw new TypeError(`${where}: options.layout: expected one of ` +
        `${layouts.map((n) => `'${n}'`).join(', ')} for a ${kind}, got ${describe(requested)}`);
    }
    return requested;
  }
  let layout;
  let found = 0;
  for (const name of layouts) {
    let names;
    try {
      names = layoutNames(name, config);
    } catch {
      continue;  // a layout of another sublayer list
    }
    const count = names.filter((n) => under.has(n)).length;
    if (count > found) [layout, found] = [name, count];
  }
  if (layout === undefined) {
    throw new RangeError(`${where}: no ${kind} layout (${layouts.join(', ')}) knows ` +
      `the tensors under prefix '${prefix}': ${quoteSome([...under], 5)}`);
  }
  return layout;
}

// A reader of the block tensors under `prefix` for blockWeights: records
// what it read (used, with the prefix) and the biases it lacks.
function blockReader(where, ckpt, config, layout, kind, used, zeroBiases) {
  return (prefix, under) => (source) => {
    const full = `${prefix}${source.name}`;
    if (!under.has(source.name)) {
      if (source.bias) {
        zeroBiases.push(full);
        return undefined;
      }
      throw new RangeError(`${where}: missing '${full}' (layout '${layout}' of a ${kind})`);
    }
    const declared = ckpt.shape(full);
    if (declared !== undefined && !sameShape(declared, source.shape)) {
      throw new RangeError(`${where}: ${full}: expected shape ${shapeString(source.shape)} ` +
        `(this ${kind}'s), got ${shapeString(declared)}`);
    }
    used.add(full);
    const keepBits = source.shape.length === 2 &&
      HELD_AS.get(ckpt.tensor(full).dtype) === config.weights;
    return tensorValues(where, ckpt, full, declared, keepBits);
  };
}

// What is left under `prefix` once `used` is taken: an error unless allowed.
function unusedUnder(where, kind, layout, prefix, names, used, allowUnused) {
  const unused = names.filter((n) => n.startsWith(prefix) && !used.has(n));
  if (unused.length > 0 && !allowUnused) {
    throw new RangeError(`${where}: ${unused.length} tensor${unused.length === 1 ? '' : 's'} ` +
      `under prefix '${prefix}' not part of a ${kind} in layout '${layout}': ` +
      `${quoteSome(unused, 5)}; set options.prefix to the object's own tensors, ` +
      'or options.allowUnused: true');
  }
  return unused;
}

// A result, or a promise of it for a pool's object.
const settled = (done, result) => (typeof done?.then === 'function'
  ? done.then(() => result) : result);

// loadCheckpoint for a TransformerBlock.
function loadBlock(where, target, ckpt, { prefix, requested, allowUnused, under }) {
  const kind = 'TransformerBlock';
  const { config } = target;
  const layout = blockLayout(where, config, requested, under, prefix, kind);
  const used = new Set();
  const zeroBiases = [];
  const read = blockReader(where, ckpt, config, layout, kind, used, zeroBiases);
  const { weights } = blockWeights(layout, config, read(prefix, under));
  const unused = unusedUnder(where, kind, layout, prefix, ckpt.names, used, allowUnused);
  return settled(target.setWeights(weights), { layout, tensors: [...used], unused,
    zeroBiases: [...new Set(zeroBiases)] });
}

// loadCheckpoint for a TransformerStack: its layers `<root><list>.<i>.` and
// its final norm `<root><finalNorm>`, the root found from the names (a
// base model's '' or a causal LM's 'model.', 'transformer.', ...) unless
// options.prefix gives it.
function loadStack(where, target, ckpt, { prefix, requested, allowUnused }) {
  const kind = 'TransformerStack';
  const { config } = target;
  const underOf = (p) => new Set(ckpt.names.filter((n) => n.startsWith(p))
    .map((n) => n.slice(p.length)));
  // The layout from the first layer's names, under each candidate root.
  const lists = [...new Set(Object.values(STACK_LAYOUTS).map((s) => s.list))];
  let root = prefix;
  let list;
  for (const name of ckpt.names) {
    if (!name.startsWith(prefix)) continue;
    const m = lists.map((l) => name.indexOf(`${l}.0.`)).find((i) => i >= prefix.length);
    if (m === undefined) continue;
    root = name.slice(0, m);
    list = lists.find((l) => name.startsWith(`${root}${l}.0.`));
    break;
  }
  if (list === undefined) {
    throw new RangeError(`${where}: no layer 0 of a TransformerStack (${lists.map((l) =>
      `'…${l}.0.'`).join(', ')}) under prefix '${prefix}'`);
  }
  const layout = blockLayout(where, config, requested, underOf(`${root}${list}.0.`),
    `${root}${list}.0.`, kind);
  const stack = STACK_LAYOUTS[layout];
  const used = new Set();
  const zeroBiases = [];
  const read = blockReader(where, ckpt, config, layout, kind, used, zeroBiases);
  const layers = [];
  for (let i = 0; i < config.numLayers; i++) {
    const at = `${root}${stack.list}.${i}.`;
    layers.push(blockWeights(layout, config, read(at, underOf(at))).weights);
  }
  const finalNorm = {};
  for (const [key, suffix] of [['gamma', 'weight'], ['beta', 'bias']]) {
    const name = `${stack.finalNorm}.${suffix}`;
    const data = read(root, underOf(root))({ name, shape: [config.dModel], bias: key === 'beta' });
    if (data !== undefined) finalNorm[key] = data;
  }
  const unused = unusedUnder(where, kind, layout, root, ckpt.names, used, allowUnused);
  return settled(target.setWeights({ layers, finalNorm }), { layout, tensors: [...used],
    unused, zeroBiases: [...new Set(zeroBiases)] });
}

/**
 * Sets `target`'s weights from the tensors of `checkpoint` under
 * options.prefix, in options.layout or the layout their names show.
 * Returns { layout, tensors (the names used), unused, zeroBiases (those
 * absent, taken as zeros) }, or a promise of it
 * for an object of a worker pool.
 */
export function loadCheckpoint(target, checkpoint, options) {
  const where = 'loadCheckpoint';
  const kind = targetKind(where, target);
  const ckpt = readCheckpoint(where, checkpoint);
  const { prefix, layout: requested, allowUnused } = readOptions(where, options);
  const under = new Set(ckpt.names.filter((n) => n.startsWith(prefix)).map((n) => n.slice(prefix.length)));
  const has = (name) => under.has(name);
  if (kind === 'TransformerBlock') {
    return loadBlock(where, target, ckpt, { prefix, requested, allowUnused, under });
  }
  if (kind === 'TransformerStack') return loadStack(where, target, ckpt, { prefix, requested, allowUnused });
  const { layout, entries } = pickLayout(where, kind, LAYOUTS[kind], requested, has);
  const full = (name) => `${prefix}${name}`;
  if (layout === undefined) {
    const layouts = Object.keys(LAYOUTS[kind]).join(', ');
    // Tensors under the prefix, none of them named as a layout names them:
    // the prefix may be right, the names are of a model this package lacks.
    if (under.size > 0) {
      const names = [...under];
      throw new RangeError(`${where}: no ${kind} layout (${layouts}) knows the ` +
        `${names.length} tensor${names.length === 1 ? '' : 's'} under prefix '${prefix}': ` +
        `${quoteSome(names, 5)}`);
    }
    throw new RangeError(`${where}: no tensor of a ${kind} layout (${layouts}) under prefix ` +
      `'${prefix}'; the checkpoint's ${ckpt.names.length} tensors start ` +
      `${quoteSome(ckpt.names, 3, false)}: set options.prefix`);
  }

  const { bias, ...config } = target.config;
  const shapes = kind === 'MultiHeadAttention' ? attentionShapes(config) : layerShapes(kind, config);
  // A MultiHeadAttention with bias: false has none to take.
  const wanted = entries.filter((e) => bias !== false || !e.to.endsWith('bias'));
  const names = wanted.flatMap((e) => e.from);
  // A bias the checkpoint lacks is zero: the model was made without it
  // (nn.Linear(bias=False), Whisper's k_proj). A weight is always needed.
  const missing = names.filter((n) => !has(n) && !n.endsWith('bias'));
  if (missing.length > 0) {
    throw new RangeError(`${where}: missing ${missing.map((n) => `'${full(n)}'`).join(', ')} ` +
      `(layout '${layout}' of a ${kind})`);
  }
  const used = new Set(names.filter(has));
  // QK-norm's scales, [headDim] each, under the attention's own names.
  const qkNames = kind === 'MultiHeadAttention' && config.qkNorm !== undefined
    ? { qNorm: 'q_norm.weight', kNorm: 'k_norm.weight' } : {};
  for (const name of Object.values(qkNames)) {
    if (!has(name)) {
      throw new RangeError(`${where}: missing '${full(name)}' (the scales of this ` +
        `attention's config.qkNorm, layout '${layout}')`);
    }
    used.add(name);
  }
  const zeroBiases = names.filter((n) => !has(n)).map(full);
  const unused = [...under].filter((n) => !used.has(n)).map(full);
  if (unused.length > 0 && !allowUnused) {
    throw new RangeError(`${where}: ${unused.length} tensor${unused.length === 1 ? '' : 's'} ` +
      `under prefix '${prefix}' not part of a ${kind} in layout '${layout}': ` +
      `${quoteSome(unused, 5)}; set options.prefix to the object's own tensors, ` +
      'or options.allowUnused: true');
  }

  const { weights: held } = config;
  const values = (name, to, declared) =>
    tensorValues(where, ckpt, name, declared, isMatrix(to) && HELD_AS.get(ckpt.tensor(name).dtype) === held);
  const state = {};
  for (const e of wanted) {
    const expected = shapes[e.to];
    // The parts of a concatenated in_proj_bias are the q, k and v biases.
    const partShapes = e.from.length === 1 ? [e.conv1d ? [...expected].reverse() : expected]
      : ['q', 'k', 'v'].map((x) => [shapes[e.to.replace('in_proj_bias', `${x}_proj_weight`)][0]]);
    const parts = e.from.map((name, i) => {
      const want = partShapes[i];
      if (!has(name)) return new Float32Array(want[0]);
      const declared = ckpt.shape(full(name));
      if (declared !== undefined && !sameShape(declared, want)) {
        throw new RangeError(`${where}: ${full(name)}: expected shape ${shapeString(want)} ` +
          `(${e.conv1d ? `Conv1D, the transpose of PyTorch's ${e.to}` : `PyTorch's ${e.to}`} ` +
          `of this ${kind}), got ${shapeString(declared)}`);
      }
      const data = values(full(name), e.to, declared);
      if (e.byHead) return qkvFromHeads(where, full(name), data, config, want);
      if (!e.conv1d) return data;
      if (data.length !== want[0] * want[1]) {
        throw new RangeError(`${where}: ${full(name)}: expected ${want[0] * want[1]} values ` +
          `for shape ${shapeString(want)} (Conv1D), got ${data.length}`);
      }
      return transpose(data, want[0], want[1]);
    });
    state[e.to] = parts.length === 1 ? parts[0] : concatenate(parts);
  }

  // Names the checkpoint's tensors beside PyTorch's name in the message.
  const named = (error) => {
    const e = wanted.find((x) => error.message.includes(`: ${x.to}:`));
    if (e === undefined) return error;
    const names = e.from.map((n) => `'${full(n)}'`).join(' + ');
    return new error.constructor(`${where}: checkpoint tensor ${names}: ${error.message}`,
      { cause: error });
  };
  // C++'s conversion is nn.MultiheadAttention's: as many key/value heads as
  // query heads, dModel / numHeads wide, no QK-norm. Other attentions
  // (grouped K/V heads, Gemma's wider heads, Qwen3's QK-norm) take the
  // transposes done here, their lengths checked first.
  const torchShaped = kind !== 'MultiHeadAttention' || (config.numKvHeads === config.numHeads &&
    config.numHeads * config.headDim === config.dModel && config.qkNorm === undefined);
  const qkNorm = Object.fromEntries(Object.entries(qkNames).map(([key, name]) =>
    [key, tensorValues(where, ckpt, full(name), ckpt.shape(full(name)), false)]));
  if (!torchShaped) {
    for (const e of wanted) {
      const count = shapes[e.to].reduce((n, d) => n * d, 1);
      if (state[e.to].length !== count) {
        throw new RangeError(`${where}: checkpoint tensor ` +
          `${e.from.map((n) => `'${full(n)}'`).join(' + ')}: expected ${count} values for shape ` +
          `${shapeString(shapes[e.to])} (PyTorch's ${e.to} of this ${kind}), got ` +
          `${state[e.to].length}`);
      }
    }
  }
  let done;
  try {
    done = torchShaped ? target.setWeightsFromPyTorch(state)
      : target.setWeights({ ...attentionWeightsFromPyTorch(target.config, state), ...qkNorm });
  } catch (error) {
    throw named(error);
  }
  const result = { layout, tensors: [...used].map(full), unused, zeroBiases };
  // A worker pool's object sets its weights asynchronously: then a promise.
  return typeof done?.then === 'function'
    ? done.then(() => result, (error) => { throw named(error); })
    : result;
}
