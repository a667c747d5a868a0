// A Hugging Face config.json and a prefix -> what fromPretrained builds:
// which object (MultiHeadAttention, TransformerEncoderLayer,
// TransformerDecoderLayer or TransformerBlock), its config, the
// loadCheckpoint layout its tensors are named in, and the forward options
// the model runs it with (causal for decoder-only models, their window,
// scale and soft-cap). One entry per model_type says where its layers and
// attentions are and how its fields read. A part the objects lack is an
// Error naming the model type, the part and the field, never an object that
// computes something else.
import { describe } from './arguments.js';
import { configReader, needLayer } from './pretrained-fields.js';

/**
 * What one prefix builds (a Builder's undefined: nothing there).
 * @typedef {{ kind: string, layout: string, config: object, forwardOptions: object }} Built
 * @typedef {(r: any, place: any) => Built | undefined} Builder
 * A model type: the name of its layer list (`sides`: under encoder. and
 * decoder.), the buffers no layout takes, what its layer and its attention
 * modules build, and the other parts a prefix may name, with why they are
 * not built.
 * @typedef {{ list: string, sides?: boolean, buffers?: RegExp, layer: Builder,
 *   attentions?: Record<string, Builder>, parts?: Record<string, string>,
 *   stack?: (r: any) => Built }} Model
 * Which layers slide: see readWindow.
 * @typedef {{ layerTypes: boolean,
 *   rule: (r: any) => (layer: number | undefined) => string }} Slides
 */

const MHA = 'MultiHeadAttention';
const ENCODER = 'TransformerEncoderLayer';
const DECODER = 'TransformerDecoderLayer';
const BLOCK = 'TransformerBlock';
const STACK = 'TransformerStack';

/**
 * A whole model of `model`'s blocks (options.prefix omitted): a stack of
 * config.num_hidden_layers of them (`layers`: the field naming the count),
 * each layer's window its own, and the model's final norm.
 */
function stackOf(model, layers = 'num_hidden_layers') {
  return (r) => {
    const count = r.size(layers);
    const built = Array.from({ length: count }, (_, layer) => model.layer(r, { layer,
      prefix: `${model.list}.${layer}` }));
    const windows = built.map((b) => b.forwardOptions.window ?? [-1, -1]);
    const { window, ...forwardOptions } = built[0].forwardOptions;
    const sliding = windows.some((w) => w[0] !== -1 || w[1] !== -1);
    return { kind: STACK, layout: built[0].layout,
      config: { ...built[0].config, numLayers: count, finalNorm: true,
        ...(sliding ? { layerWindows: windows } : {}) },
      forwardOptions };
  };
}

// A block's sublayer list: attention then an MLP (`mlp`: 'ffn' or
// 'gated_ffn'), both normed as `norm` says ('pre', 'sandwich'), the MLP
// beside the attention when `parallel`.
const sublayers = (mlp, { norm = 'pre', parallel = false } = {}) => [
  { mixer: 'self_attention', norm }, { mixer: mlp, norm, ...(parallel ? { parallel } : {}) }];

/**
 * The forward options: causal always said; the rest only where the model
 * sets them.
 * @param {boolean} causal
 * @param {{ window?: number[], scale?: number, softcap?: number }} [scores]
 */
function forward(causal, { window, scale, softcap } = {}) {
  return { causal, ...(window === undefined ? {} : { window }),
    ...(scale === undefined ? {} : { scale }), ...(softcap === undefined ? {} : { softcap }) };
}

// ---------------------------------------------------------------------------
// Encoders and GPT-2 (LayerNorm, one activation: the objects' own layers)
// ---------------------------------------------------------------------------

const bertLayer = (r) => {
  const positions = r.text('position_embedding_type', 'absolute');
  if (positions !== 'absolute') {
    throw r.lacks(`relative position scores (config.position_embedding_type ` +
      `${describe(positions)})`);
  }
  if (r.flag('add_cross_attention', false)) {
    throw r.lacks('a layer with cross-attention (config.add_cross_attention: true)');
  }
  return {
    kind: ENCODER, layout: 'bert',
    config: { dModel: r.size('hidden_size'), numHeads: r.size('num_attention_heads'),
      ffnDim: r.size('intermediate_size'), activation: r.activation('hidden_act', 'gelu'),
      eps: r.positive('layer_norm_eps', 1e-12), normFirst: false },
    // BertLMHeadModel's self-attention is causal.
    forwardOptions: forward(r.flag('is_decoder', false)),
  };
};

// BertAttention adds the residual and a LayerNorm to its attention's
// output; BertSelfAttention has no output projection.
const bertParts = {
  attention: 'adds the residual and a LayerNorm (attention.output.LayerNorm) to the ' +
    'attention\'s output, which a MultiHeadAttention does not',
  'attention.self': 'has no output projection (attention.output.dense), which a ' +
    'MultiHeadAttention has',
};

const BERT = { list: 'layer', layer: bertLayer, parts: bertParts };

const DISTILBERT = {
  list: 'layer',
  layer: (r) => ({
    kind: ENCODER, layout: 'distilbert',
    // DistilBERT's LayerNorms have eps 1e-12, not from its config.
    config: { dModel: r.size('dim'), numHeads: r.size('n_heads'), ffnDim: r.size('hidden_dim'),
      activation: r.activation('activation', 'gelu'), eps: 1e-12, normFirst: false },
    forwardOptions: forward(false),
  }),
  attentions: {
    attention: (r) => ({ kind: MHA, layout: 'distilbert',
      config: { dModel: r.size('dim'), numHeads: r.size('n_heads') }, forwardOptions: forward(false) }),
  },
};

// GPT-2's scores: divided by sqrt(head_dim) unless scale_attn_weights is
// false, and by layer + 1 with scale_attn_by_inverse_layer_idx.
function gpt2Scale(r, layer) {
  const weights = r.flag('scale_attn_weights', true);
  const byLayer = r.flag('scale_attn_by_inverse_layer_idx', false);
  if (weights && !byLayer) return undefined;
  const scale = weights ? 1 / Math.sqrt(r.quotient('n_embd', 'n_head')) : 1;
  return byLayer
    ? scale / (needLayer(r.at, layer, 'the scale (config.scale_attn_by_inverse_layer_idx)') + 1)
    : scale;
}

// Buffers older checkpoints saved beside the weights, which no layout
// takes: causal masks (attn.bias, attn.masked_bias) and rotary inverse
// frequencies.
const MASK_BUFFERS = /(^|\.)attn\.(bias|masked_bias)$/;
const ROTARY_BUFFERS = /(^|\.)rotary_emb\.inv_freq$/;

const GPT2 = {
  list: 'h',
  buffers: MASK_BUFFERS,
  layer: (r, place) => {
    if (r.flag('add_cross_attention', false)) {
      throw r.lacks('a block with cross-attention (config.add_cross_attention: true)');
    }
    const dModel = r.size('n_embd');
    return {
      kind: ENCODER, layout: 'gpt2',
      config: { dModel, numHeads: r.size('n_head'), ffnDim: r.size('n_inner', 4 * dModel),
        activation: r.activation('activation_function', 'gelu_new'),
        eps: r.positive('layer_norm_epsilon', 1e-5), normFirst: true },
      forwardOptions: forward(true, { scale: gpt2Scale(r, place.layer) }),
    };
  },
  attentions: {
    attn: (r, place) => ({ kind: MHA, layout: 'gpt2',
      config: { dModel: r.size('n_embd'), numHeads: r.size('n_head') },
      forwardOptions: forward(true, { scale: gpt2Scale(r, place.layer) }) }),
  },
};

// BART and Whisper: encoder.layers.N and decoder.layers.N; LayerNorms of
// torch's default eps.
function seq2seq(normFirst) {
  const heads = (r, side) => r.size(`${side}_attention_heads`);
  return {
    list: 'layers',
    sides: true,
    layer: (r, place) => ({
      kind: place.side === 'decoder' ? DECODER : ENCODER, layout: 'separate',
      config: { dModel: r.size('d_model'), numHeads: heads(r, place.side),
        ffnDim: r.size(`${place.side}_ffn_dim`), activation: r.activation('activation_function', 'gelu'),
        eps: 1e-5, normFirst },
      forwardOptions: forward(place.side === 'decoder'),
    }),
    attentions: {
      self_attn: (r, place) => ({ kind: MHA, layout: 'separate',
        config: { dModel: r.size('d_model'), numHeads: heads(r, place.side) },
        forwardOptions: forward(place.side === 'decoder') }),
      // A decoder layer's cross-attention.
      encoder_attn: (r, place) => (place.side !== 'decoder' ? undefined
        : { kind: MHA, layout: 'separate',
          config: { dModel: r.size('d_model'), numHeads: heads(r, place.side) },
          forwardOptions: forward(false) }),
    },
  };
}

const VIT = {
  list: 'layer',
  layer: (r) => ({
    kind: ENCODER, layout: 'vit',
    config: { dModel: r.size('hidden_size'), numHeads: r.size('num_attention_heads'),
      ffnDim: r.size('intermediate_size'), activation: r.activation('hidden_act', 'gelu'),
      eps: r.positive('layer_norm_eps', 1e-12), normFirst: true },
    forwardOptions: forward(false),
  }),
  attentions: {
    // q, k and v lack biases with qkv_bias: false (loaded as zeros); the
    // output projection always has one.
    attention: (r) => ({ kind: MHA, layout: 'vit',
      config: { dModel: r.size('hidden_size'), numHeads: r.size('num_attention_heads') },
      forwardOptions: forward(false) }),
  },
  parts: { 'attention.attention': 'has no output projection (attention.output.dense), which a ' +
    'MultiHeadAttention has' },
};

// ---------------------------------------------------------------------------
// Rotary decoder-only models
// ---------------------------------------------------------------------------

// GPT-J rotates the first rotary_dim features of each head, pairs (2i,
// 2i+1), base 10000 (fixed in transformers).
function gptjRope(r) {
  const headDim = r.quotient('n_embd', 'n_head');
  const rotaryDim = r.size('rotary_dim', headDim);
  return { style: 'interleaved', base: 10000, ...(rotaryDim === headDim ? {} : { rotaryDim }) };
}

const GPTJ = {
  list: 'h',
  buffers: MASK_BUFFERS,
  // Attention and MLP side by side from one LayerNorm (ln_1).
  layer: (r) => {
    const dModel = r.size('n_embd');
    return { kind: BLOCK, layout: 'gptj',
      config: { dModel, numHeads: r.size('n_head'), ffnDim: r.size('n_inner', 4 * dModel),
        activation: r.activation('activation_function', 'gelu_new'), norm: 'layer_norm',
        eps: r.positive('layer_norm_epsilon', 1e-5), rope: gptjRope(r),
        sublayers: sublayers('ffn', { parallel: true }) },
      forwardOptions: forward(true) };
  },
  attentions: {
    attn: (r) => ({ kind: MHA, layout: 'separate',
      config: { dModel: r.size('n_embd'), numHeads: r.size('n_head'), bias: false,
        rope: gptjRope(r) },
      forwardOptions: forward(true) }),
  },
};

const neoxRope = (r) => r.rope(r.quotient('hidden_size', 'num_attention_heads'), {
  baseFields: ['rotary_emb_base', 'rope_theta'], fractionFields: ['rotary_pct',
    'partial_rotary_factor'], fraction: 0.25 });

const GPT_NEOX = {
  list: 'layers',
  buffers: /(^|\.)(attention\.(bias|masked_bias)|rotary_emb\.inv_freq)$/,
  layer: (r) => {
    // x + attention(ln1(x)) + mlp(ln2(x)): a block whose MLP runs beside.
    if (r.flag('use_parallel_residual', true)) {
      return { kind: BLOCK, layout: 'gpt_neox',
        config: { dModel: r.size('hidden_size'), numHeads: r.size('num_attention_heads'),
          ffnDim: r.size('intermediate_size'), activation: r.activation('hidden_act', 'gelu'),
          norm: 'layer_norm', eps: r.positive('layer_norm_eps', 1e-5), rope: neoxRope(r),
          sublayers: sublayers('ffn', { parallel: true }) },
        forwardOptions: forward(true) };
    }
    return {
      kind: ENCODER, layout: 'gpt_neox',
      config: { dModel: r.size('hidden_size'), numHeads: r.size('num_attention_heads'),
        ffnDim: r.size('intermediate_size'), activation: r.activation('hidden_act', 'gelu'),
        eps: r.positive('layer_norm_eps', 1e-5), normFirst: true, rope: neoxRope(r) },
      forwardOptions: forward(true),
    };
  },
  attentions: {
    attention: (r) => ({ kind: MHA, layout: 'gpt_neox',
      config: { dModel: r.size('hidden_size'), numHeads: r.size('num_attention_heads'),
        bias: r.flag('attention_bias', true), rope: neoxRope(r) },
      forwardOptions: forward(true) }),
  },
};

// Which layers slide (readWindow): from config.layer_types where the model
// reads it, else by the rule its config class derives them with.
const SLIDING = 'sliding_attention';
const FULL = 'full_attention';
/** @type {Slides} */
const ALL_SLIDE = { layerTypes: false,
  rule: (r) => () => (r.given('sliding_window') ? SLIDING : FULL) };
/** @type {Slides} */
const NONE_SLIDE = { layerTypes: false, rule: () => () => FULL };
// Qwen2/3: with use_sliding_window, the layers from max_window_layers on.
/** @type {Slides} */
const LATER_SLIDE = { layerTypes: true,
  rule: (r) => (layer) => {
    if (!r.flag('use_sliding_window', false) || !r.given('sliding_window')) return FULL;
    const first = r.count('max_window_layers', 28);
    return needLayer(r.at, layer, 'the sliding window (config.max_window_layers)') >= first
      ? SLIDING : FULL;
  } };
// Gemma 2: the even layers.
/** @type {Slides} */
const EVEN_SLIDE = { layerTypes: true,
  rule: (r) => (layer) => (needLayer(r.at, layer, 'the sliding window (every other layer)') %
    2 === 0 ? SLIDING : FULL) };

/**
 * A Llama-style model: layers.N.self_attn (q_proj, k_proj, v_proj, o_proj
 * or Phi-3's qkv_proj) with grouped K/V heads and RoPE (rotate_half), and
 * layers.N a block of RMSNorm (`norm`), that attention and a gated MLP;
 * Gemma 2 norms before and after both (`sandwich`), Qwen3 normalizes each
 * head of q and k (`qkNorm`).
 * @param {{ layout?: string, bias?: (r: any) => boolean, slides?: Slides,
 *   scores?: (r: any, headDim: number) => object, norm?: string, sandwich?: boolean,
 *   qkNorm?: boolean, activation?: string }} model
 * @returns {Model}
 */
function llamaLike({ layout = 'llama', bias = (r) => r.flag('attention_bias', false),
  slides = NONE_SLIDE, scores = () => ({}), norm = 'rms_norm', sandwich = false,
  qkNorm = false, activation = 'hidden_act' }) {
  // The attention's config and forward options of layer `place.layer`.
  const attention = (r, place) => {
    if (r.flag('use_bidirectional_attention', false)) {
      throw r.lacks('bidirectional attention (config.use_bidirectional_attention: true)');
    }
    const numHeads = r.size('num_attention_heads');
    const headDim = r.size('head_dim', () => r.quotient('hidden_size', 'num_attention_heads'));
    const eps = r.positive('rms_norm_eps', 1e-6);
    return {
      config: { dModel: r.size('hidden_size'), numHeads,
        numKvHeads: r.size('num_key_value_heads', numHeads), headDim, rope: r.rope(headDim),
        ...(qkNorm ? { qkNorm: { kind: norm, eps } } : {}) },
      forwardOptions: forward(true, { window: r.window(place.layer, slides),
        ...scores(r, headDim) }),
    };
  };
  return {
    list: 'layers',
    buffers: ROTARY_BUFFERS,
    layer: (r, place) => {
      const a = attention(r, place);
      return { kind: BLOCK, layout: layout === 'phi3' ? 'phi3' : 'llama',
        config: { ...a.config, ffnDim: r.size('intermediate_size'),
          // Gemma names its activation hidden_activation (hidden_act is legacy).
          activation: r.activation(r.given(activation) ? activation : 'hidden_act', 'silu'),
          norm, eps: r.positive('rms_norm_eps', 1e-6),
          sublayers: sublayers('gated_ffn', { norm: sandwich ? 'sandwich' : 'pre' }) },
        forwardOptions: a.forwardOptions };
    },
    attentions: {
      self_attn: (r, place) => {
        const a = attention(r, place);
        return { kind: MHA, layout, config: { ...a.config, bias: bias(r) },
          forwardOptions: a.forwardOptions };
      },
    },
  };
}


// Gemma 2: scores scaled by query_pre_attn_scalar ** -0.5 and soft-capped.
const gemma2Scores = (r) => ({
  scale: r.positive('query_pre_attn_scalar', 256) ** -0.5,
  softcap: r.given('attn_logit_softcapping') ? r.positive('attn_logit_softcapping') : undefined,
});

// Every model_type fromPretrained reads. A Map: model_type is the user's
// string.
const MODELS = new Map(/** @type {[string, Model][]} */ ([
  ['bert', BERT],
  ['roberta', BERT],
  ['distilbert', DISTILBERT],
  ['vit', VIT],
  ['gpt2', GPT2],
  ['bart', seq2seq(false)],
  ['whisper', seq2seq(true)],
  ['gptj', GPTJ],
  ['gpt_neox', GPT_NEOX],
  ['llama', llamaLike({})],
  ['mistral', llamaLike({ bias: () => false, slides: ALL_SLIDE })],
  // q, k and v have biases, o_proj none (loaded as zeros).
  ['qwen2', llamaLike({ bias: () => true, slides: LATER_SLIDE })],
  ['qwen3', llamaLike({ slides: LATER_SLIDE, qkNorm: true })],
  // RMSNorm in Gemma's x * (1 + weight) form.
  ['gemma', llamaLike({ norm: 'gemma_rms_norm', activation: 'hidden_activation' })],
  ['gemma2', llamaLike({ norm: 'gemma_rms_norm', activation: 'hidden_activation',
    sandwich: true, slides: EVEN_SLIDE, scores: gemma2Scores })],
  ['phi3', llamaLike({ layout: 'phi3', bias: () => false, slides: ALL_SLIDE })],
]));


// The models a whole stack of blocks is built for (options.prefix omitted).
for (const type of ['llama', 'mistral', 'qwen2', 'qwen3', 'gemma', 'gemma2', 'phi3', 'gptj']) {
  const model = MODELS.get(type);
  model.stack = stackOf(model, type === 'gptj' ? 'n_layer' : 'num_hidden_layers');
}
{
  const neox = MODELS.get('gpt_neox');
  neox.stack = (r) => {
    if (!r.flag('use_parallel_residual', true)) {
      throw r.lacks('a whole model with config.use_parallel_residual: false (its layers are ' +
        'encoder layers, not blocks): load its layers one by one');
    }
    return stackOf(neox)(r);
  };
}

// prefix -> { prefix (without a final dot), layer (its number), list (the
// name before it), side (the one before that), part (after it) }.
function parsePrefix(prefix) {
  const path = prefix.endsWith('.') ? prefix.slice(0, -1) : prefix;
  const parts = path.split('.');
  let i = parts.length - 1;
  while (i >= 0 && !/^\d+$/.test(parts[i])) i--;
  return { prefix: path, layer: i < 0 ? undefined : Number(parts[i]), list: parts[i - 1],
    side: parts[i - 2], part: parts.slice(i + 1).join('.') };
}

/**
 * What fromPretrained builds for `config` (a parsed config.json) at
 * `prefix`: { kind, layout, config, forwardOptions, buffers (a RegExp of
 * the names to leave out, or undefined) }.
 */
export function pretrainedModule(where, config, prefix) {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new TypeError(`${where}: config: expected the parsed config.json, an object, got ` +
      `${describe(config)}`);
  }
  const type = config.model_type;
  if (typeof type !== 'string') {
    throw new TypeError(`${where}: config.model_type: expected a string, got ${describe(type)}`);
  }
  const model = MODELS.get(type);
  if (model === undefined) {
    throw new Error(`${where}: model_type ${describe(type)} is not supported (supported: ` +
      `${[...MODELS.keys()].join(', ')})`);
  }
  const layerName = `…${model.sides ? '{encoder,decoder}.' : ''}${model.list}.N`;
  const list = [`a layer ('${layerName}')`,
    ...Object.keys(model.attentions ?? {}).map((a) => `an attention ('${layerName}.${a}')`)];
  // 'a, b or c'
  const names = `${list.slice(0, -1).join(', ')} or ${list[list.length - 1]}`;
  if (prefix === undefined || prefix === '') {
    if (model.stack !== undefined) return { ...model.stack(configReader(where, config)), buffers: model.buffers };
    throw new Error(`${where}: ${type}: options.prefix: a whole model is supported for ` +
      `the decoder-only models whose layers are blocks (${[...MODELS].filter(([, m]) => m.stack)
        .map(([t]) => t).join(', ')}), not ${type}: name ${names}`);
  }
  const place = parsePrefix(prefix);
  const r = configReader(where, config);
  const listed = place.layer !== undefined && place.list === model.list &&
    (!model.sides || ['encoder', 'decoder'].includes(place.side));
  // An attention's own tensors may be given without their layer's prefix.
  const part = place.layer === undefined ? place.prefix : place.part;
  const attention = Object.hasOwn(model.attentions ?? {}, part) ? model.attentions[part] : undefined;
  let spec;
  if (listed && part === '') {
    spec = model.layer(r, place);
  } else if (attention !== undefined && (listed || (place.layer === undefined && !model.sides))) {
    spec = attention(r, place);
  } else if (listed && Object.hasOwn(model.parts ?? {}, part)) {
    throw new Error(`${where}: ${type}: '${place.prefix}' ${model.parts[part]}: load its ` +
      `layer, '${place.prefix.slice(0, -part.length - 1)}'`);
  }
  if (spec === undefined) {
    throw new RangeError(`${where}: ${type}: options.prefix '${prefix}' names none of what ` +
      `fromPretrained builds: ${names}`);
  }
  return { ...spec, buffers: model.buffers };
}
