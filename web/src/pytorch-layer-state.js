// torch.nn.TransformerEncoderLayer / TransformerDecoderLayer state_dicts ->
// the layers' setWeights groups (X @ W layout), and the PyTorch shapes of
// every entry, which the checkpoint mapping also checks declared shapes
// against. MultiHeadAttention's conversion is C++'s (src/api/pytorch_weights.cc);
// the wasm builds have none for the layers, so the transposes are done
// here, each after checking its entry's length, without which a transpose
// would scramble the values instead of failing. Values are C++'s to judge
// (setWeights).
import { checkObject, float32, torchMatrix } from './arguments.js';
import { OPTION_KEYS } from './option-keys.js';

const ATTENTION_SEPARATE = ['q_proj_weight', 'k_proj_weight', 'v_proj_weight'];
const LINEAR = ['weight', 'bias'];

// The attention blocks and norms of each layer, by their state_dict names.
const LAYER_PARTS = {
  TransformerEncoderLayer: { attention: { self_attn: 'attention' }, norms: 2 },
  TransformerDecoderLayer: {
    attention: { self_attn: 'selfAttention', multihead_attn: 'crossAttention' }, norms: 3,
  },
};

/**
 * PyTorch shapes ([out, in] for a Linear weight) of one attention block's
 * entries: config { dModel, numHeads, numKvHeads, headDim, headDimV?, kDim?,
 * vDim? } as the object resolved it.
 */
export function attentionShapes(config) {
  const e = config.dModel;
  const q = config.numHeads * config.headDim;
  const k = config.numKvHeads * config.headDim;
  const v = config.numKvHeads * (config.headDimV ?? config.headDim);
  return {
    in_proj_weight: [q + k + v, e],
    q_proj_weight: [q, e],
    k_proj_weight: [k, config.kDim ?? e],
    v_proj_weight: [v, config.vDim ?? e],
    in_proj_bias: [q + k + v],
    'out_proj.weight': [e, config.numHeads * (config.headDimV ?? config.headDim)],
    'out_proj.bias': [e],
  };
}

/** PyTorch shapes of every state_dict entry a layer of `kind` may have. */
export function layerShapes(kind, config) {
  const { dModel: e, ffnDim: f } = config;
  const shapes = {};
  for (const block of Object.keys(LAYER_PARTS[kind].attention)) {
    for (const [name, shape] of Object.entries(attentionShapes(config))) {
      shapes[`${block}.${name}`] = shape;
    }
  }
  Object.assign(shapes, {
    'linear1.weight': [f, e], 'linear1.bias': [f], 'linear2.weight': [e, f], 'linear2.bias': [e],
  });
  for (let i = 1; i <= LAYER_PARTS[kind].norms; i++) {
    for (const key of LINEAR) shapes[`norm${i}.${key}`] = [e];
  }
  return shapes;
}

function count(shape) {
  return shape.reduce((n, d) => n * d, 1);
}

// Rows [row0, row0 + rows) of src [*, cols], transposed: -> [cols, rows],
// in src's type (float16/bfloat16 bits stay bits).
export function transposeRows(src, row0, rows, cols) {
  const out = new /** @type {Float32ArrayConstructor} */ (src.constructor)(rows * cols);
  for (let r = 0; r < rows; r++) {
    const from = (row0 + r) * cols;
    for (let c = 0; c < cols; c++) out[c * rows + r] = src[from + c];
  }
  return out;
}

/**
 * A layer's state_dict (flat Float32Arrays in PyTorch's layout; the weight
 * matrices may be float16/bfloat16 bits, see torchMatrix) -> the groups of
 * its setWeights. config: the layer's resolved config.
 */
export function layerWeightsFromPyTorch(where, kind, config, state) {
  const shapes = layerShapes(kind, config);
  const names = OPTION_KEYS[`PyTorch${kind}State`];
  checkObject(where, 'state', state);
  for (const key of Object.keys(state)) {
    if (!names.includes(key)) {
      throw new TypeError(`${where}: state: unknown key '${key}' (expected the ` +
        `nn.${kind} state_dict names: ${names.join(', ')})`);
    }
  }
  const entry = (name, why, matrix = false) => {
    if (state[name] === undefined) {
      throw new TypeError(`${where}: ${name}: missing (${why})`);
    }
    const data = (matrix ? torchMatrix : float32)(where, name, state[name]);
    const shape = shapes[name];
    if (data.length !== count(shape)) {
      throw new RangeError(`${where}: ${name}: expected ${count(shape)} values for shape ` +
        `[${shape.join(', ')}] (PyTorch layout), got ${data.length}`);
    }
    return data;
  };
  const always = 'every layer has it';
  // [out, in] -> [in, out]
  const linear = (name) => transposeRows(entry(name, always, true), 0, ...shapes[name]);

  const weights = {};
  for (const [block, group] of Object.entries(LAYER_PARTS[kind].attention)) {
    const at = (n) => `${block}.${n}`;
    const packed = state[at('in_proj_weight')] !== undefined;
    const separate = ATTENTION_SEPARATE.filter((n) => state[at(n)] !== undefined);
    if (packed && separate.length > 0) {
      throw new TypeError(`${where}: ${at('in_proj_weight')}: given together with ` +
        `${at(separate[0])}; pass either the packed or the separate weights`);
    }
    const e = config.dModel;
    const kv = config.numKvHeads * config.headDim;
    let wQ;
    let wK;
    let wV;
    if (packed) {
      const w = entry(at('in_proj_weight'), always, true);
      wQ = transposeRows(w, 0, e, e);
      wK = transposeRows(w, e, kv, e);
      wV = transposeRows(w, e + kv, kv, e);
    } else {
      const why = `give ${at('in_proj_weight')} or all of ` +
        ATTENTION_SEPARATE.map(at).join(', ');
      // Every absent one is reported before any given one is read.
      const absent = ATTENTION_SEPARATE.find((n) => state[at(n)] === undefined);
      if (absent !== undefined) entry(at(absent), why, true);
      [wQ, wK, wV] = ATTENTION_SEPARATE.map((n) =>
        transposeRows(entry(at(n), why, true), 0, ...shapes[at(n)]));
    }
    const b = entry(at('in_proj_bias'), always);
    weights[group] = {
      wQ, wK, wV, wO: linear(at('out_proj.weight')),
      bQ: b.slice(0, e), bK: b.slice(e, e + kv), bV: b.slice(e + kv),
      bO: entry(at('out_proj.bias'), always),
    };
  }
  weights.ffn = {
    w1: linear('linear1.weight'), b1: entry('linear1.bias', always),
    w2: linear('linear2.weight'), b2: entry('linear2.bias', always),
  };
  for (let i = 1; i <= LAYER_PARTS[kind].norms; i++) {
    weights[`norm${i}`] = {
      gamma: entry(`norm${i}.weight`, always), beta: entry(`norm${i}.bias`, always),
    };
  }
  return weights;
}
