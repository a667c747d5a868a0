// The fields of a Hugging Face config.json, read as transformers reads them
// (its defaults where a field is absent or null), each checked and named in
// the message when wrong: sizes, numbers, activation names, RoPE (5.x's
// rope_parameters and 4.x's rope_theta / rope_scaling /
// partial_rotary_factor), and each layer's attention type (sliding or full).
// What the package's objects cannot compute is an Error naming the model
// type, the part and the field.
import { describe } from './arguments.js';

// transformers' activation names (ACT2FN) -> the layers' ActivationName.
// gelu_new, gelu_pytorch_tanh and gelu_fast are the same tanh form.
const ACTIVATIONS = new Map([['gelu', 'gelu'], ['gelu_python', 'gelu'], ['relu', 'relu'],
  ['gelu_new', 'gelu_tanh'], ['gelu_pytorch_tanh', 'gelu_tanh'], ['gelu_fast', 'gelu_tanh'],
  ['silu', 'silu'], ['swish', 'silu']]);

/**
 * A reader of `config` (an object with a string model_type) for the
 * messages of `where`.
 */
export function configReader(where, config) {
  const type = config.model_type;
  const at = `${where}: ${type}`;
  const given = (field) => Object.hasOwn(config, field) && config[field] !== null &&
    config[field] !== undefined;
  // fallback: a value or a function of none, called only when needed.
  const orFallback = (field, fallback, read) => {
    if (given(field)) return read(config[field]);
    const value = typeof fallback === 'function' ? fallback() : fallback;
    if (value === undefined) read(undefined);
    return value;
  };
  const wrong = (field, expected, v) =>
    new TypeError(`${at}: config.${field}: expected ${expected}, got ${describe(v)}`);

  const r = {
    type,
    config,
    given,
    at,
    /** An Error: `part` is not in this package (`detail`: why, what to do). */
    lacks(part, detail) {
      return new Error(`${at}: ${part} is not supported by this package` +
        `${detail === undefined ? '' : `: ${detail}`}`);
    },
    size: (field, fallback) => orFallback(field, fallback, (v) => {
      if (!Number.isInteger(v) || v <= 0) throw wrong(field, 'a positive integer', v);
      return v;
    }),
    // A non-negative integer (a layer count, a first layer).
    count: (field, fallback) => orFallback(field, fallback, (v) => {
      if (!Number.isInteger(v) || v < 0) throw wrong(field, 'a non-negative integer', v);
      return v;
    }),
    positive: (field, fallback) => orFallback(field, fallback, (v) => {
      if (typeof v !== 'number' || !(v > 0) || v === Infinity) {
        throw wrong(field, 'a positive finite number', v);
      }
      return v;
    }),
    flag: (field, fallback) => orFallback(field, fallback, (v) => {
      if (typeof v !== 'boolean') throw wrong(field, 'a boolean', v);
      return v;
    }),
    text: (field, fallback) => orFallback(field, fallback, (v) => {
      if (typeof v !== 'string') throw wrong(field, 'a string', v);
      return v;
    }),
    // hidden_size / num_attention_heads, which must divide.
    quotient(numerator, denominator) {
      const n = r.size(numerator);
      const d = r.size(denominator);
      if (n % d !== 0) {
        throw new RangeError(`${at}: config.${numerator} ${n} is not a multiple of ` +
          `config.${denominator} ${d}`);
      }
      return n / d;
    },
    /** The layers' ActivationName for the activation `field` names. */
    activation(field, fallback) {
      const name = r.text(field, fallback);
      if (!ACTIVATIONS.has(name)) {
        throw new Error(`${at}: config.${field}: the activation ${describe(name)} is not ` +
          `supported by this package's layers (${[...ACTIVATIONS.keys()].join(', ')})`);
      }
      return ACTIVATIONS.get(name);
    },
    rope: (headDim, options) => readRope(r, at, headDim, options),
    window: (layer, slides) => readWindow(r, at, layer, slides),
  };
  return r;
}

// An object field ({} when absent or null).
function objectField(r, at, field) {
  if (!r.given(field)) return {};
  const v = r.config[field];
  if (typeof v !== 'object' || Array.isArray(v)) {
    throw new TypeError(`${at}: config.${field}: expected an object, got ${describe(v)}`);
  }
  return v;
}

/**
 * config.rope ({ style, base, rotaryDim }) of a head `headDim` wide, or
 * undefined when no feature rotates.
 * options: style ('half' or 'interleaved'); the legacy top-level fields of
 * the base and of the rotated fraction, and that fraction's default.
 */
function readRope(r, at, headDim, { style = 'half', baseFields = ['rope_theta'],
  fractionFields = ['partial_rotary_factor'], fraction = 1 } = {}) {
  const parameters = objectField(r, at, 'rope_parameters');
  const scaling = objectField(r, at, 'rope_scaling');
  // Gemma 3's form: parameters per attention type.
  const perType = Object.keys(parameters).find((k) => parameters[k] !== null &&
    typeof parameters[k] === 'object');
  if (perType !== undefined) {
    throw r.lacks(`RoPE parameters per attention type (config.rope_parameters.${perType})`);
  }
  for (const [field, o] of [['rope_parameters', parameters], ['rope_scaling', scaling]]) {
    const key = ['rope_type', 'type'].find((k) => Object.hasOwn(o, k) && o[k] !== null);
    // 'default' is unscaled; so is rope_parameters without a type.
    if (key === undefined ? field === 'rope_parameters' || !r.given(field) : o[key] === 'default') {
      continue;
    }
    throw new Error(`${at}: RoPE scaling ${key === undefined ? '' : `${describe(o[key])} `}` +
      `(config.${field}${key === undefined ? '' : `.${key}`}) is not supported by this ` +
      "package: its RoPE is unscaled ('default')");
  }
  // rope_parameters first (transformers 5), then the legacy fields.
  const nested = (field, fallback) => (Object.hasOwn(parameters, field) &&
    parameters[field] !== null ? readNested(at, field, parameters[field]) : fallback());
  const legacy = (fields, fallback) => {
    const field = fields.find(r.given);
    return field === undefined ? fallback : r.positive(field);
  };
  const base = nested('rope_theta', () => legacy(baseFields, 10000));
  const share = nested('partial_rotary_factor', () => legacy(fractionFields, fraction));
  if (share > 1) {
    throw new RangeError(`${at}: partial_rotary_factor ${share}: expected at most 1 (the ` +
      'fraction of each head that rotates)');
  }
  // transformers: int(head_dim * partial_rotary_factor); none of a head
  // rotates when that is 0 (config.rope's rotaryDim 0 would mean all).
  const rotaryDim = Math.floor(headDim * share);
  if (rotaryDim === 0) return undefined;
  return rotaryDim === headDim ? { style, base } : { style, base, rotaryDim };
}

function readNested(at, field, v) {
  if (typeof v !== 'number' || !(v > 0) || v === Infinity) {
    throw new TypeError(`${at}: config.rope_parameters.${field}: expected a positive finite ` +
      `number, got ${describe(v)}`);
  }
  return v;
}

/**
 * The forward window of layer `layer` (its index, or undefined when the
 * prefix names none): [sliding_window - 1, 0] for a sliding layer (query i
 * sees keys i - sliding_window + 1 .. i), undefined for a full one.
 * slides: { layerTypes (whether the model reads config.layer_types, which
 * transformers 5 writes), rule (r -> layer -> 'sliding_attention' or
 * 'full_attention', as the model's config class derives it otherwise) }.
 */
function readWindow(r, at, layer, { layerTypes, rule }) {
  let type;
  if (layerTypes && r.given('layer_types')) {
    const types = r.config.layer_types;
    if (!Array.isArray(types) || !types.every((t) => typeof t === 'string')) {
      throw new TypeError(`${at}: config.layer_types: expected an array of strings, got ` +
        `${describe(types)}`);
    }
    if (types.length > 0 && types.every((t) => t === types[0])) {
      [type] = types;
    } else {
      const index = needLayer(at, layer, 'config.layer_types');
      if (index >= types.length) {
        throw new RangeError(`${at}: config.layer_types has ${types.length} entries, none ` +
          `for layer ${index}`);
      }
      type = types[index];
    }
  } else {
    type = rule(r)(layer);
  }
  if (type === 'full_attention') return undefined;
  if (type !== 'sliding_attention') {
    throw new Error(`${at}: the attention type ${describe(type)} (config.layer_types) is not ` +
      "supported by this package ('full_attention', 'sliding_attention')");
  }
  return [r.size('sliding_window') - 1, 0];
}

/** The layer index `layer`, which `why` needs: an Error when the prefix names none. */
export function needLayer(at, layer, why) {
  if (layer === undefined) {
    throw new RangeError(`${at}: ${why} differs between layers, and the prefix names no layer ` +
      'number: give the prefix with its layer (e.g. \'layers.3.self_attn\')');
  }
  return layer;
}
