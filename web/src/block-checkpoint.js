// A Hugging Face layer's tensors -> TransformerBlock.setWeights' weights.
// Each layout names, for every sublayer of the block's config, where its
// norm, its mixer's matrices and biases live in the checkpoint (nn.Linear
// [out, in] rows, transposed here to the X @ W layout); a fused tensor
// (Phi-3's qkv_proj and gate_up_proj, GPT-NeoX's query_key_value) is read
// as the row ranges each part owns. A bias the checkpoint lacks is left out
// (zero); a weight it lacks is an error naming it.
import { transposeRows } from './pytorch-layer-state.js';

/**
 * A tensor of the layout: `name` (after the prefix), the [out, in] or [n]
 * shape the checkpoint must declare, and for a fused one the row ranges
 * ([first, count] pairs) this part takes.
 * @typedef {{ name: string, shape: number[], rows?: number[][], bias?: boolean }} Source
 */

const linear = (name, out, inputs, rows) => ({ name: `${name}.weight`, shape: [out, inputs], rows });
const bias = (name, out, rows) => ({ name: `${name}.bias`, shape: [out], rows, bias: true });
const vector = (name, n) => ({ name, shape: [n] });

// The sizes a layout's names are checked against.
function sizes(config) {
  const { dModel: d, numHeads: h, numKvHeads: kv, headDim: hd, ffnDim: f } = config;
  return { d, f, hd, q: h * hd, kv: kv * hd };
}

// An attention under `at` with separate q, k, v and output projections.
function separateAttention(at, [qn, kn, vn, on], config, qkNorm) {
  const { d, q, kv, hd } = sizes(config);
  return {
    wQ: linear(`${at}${qn}`, q, d), wK: linear(`${at}${kn}`, kv, d),
    wV: linear(`${at}${vn}`, kv, d), wO: linear(`${at}${on}`, d, q),
    bQ: bias(`${at}${qn}`, q), bK: bias(`${at}${kn}`, kv), bV: bias(`${at}${vn}`, kv),
    bO: bias(`${at}${on}`, d),
    ...(qkNorm ? { qNorm: vector(`${at}q_norm.weight`, hd), kNorm: vector(`${at}k_norm.weight`, hd) }
      : {}),
  };
}

// Phi-3: one qkv_proj, rows q, then k, then v.
function fusedAttention(at, config) {
  const { d, q, kv } = sizes(config);
  const all = q + 2 * kv;
  const part = (first, count) => linear(`${at}qkv_proj`, all, d, [[first, count]]);
  return {
    wQ: part(0, q), wK: part(q, kv), wV: part(q + kv, kv), wO: linear(`${at}o_proj`, d, q),
    bO: bias(`${at}o_proj`, d),
  };
}

// GPT-NeoX: query_key_value holds each head's q, k and v rows in turn.
function byHeadAttention(at, config) {
  const { d, hd } = sizes(config);
  const heads = config.numHeads;
  const part = (j) => Array.from({ length: heads }, (_, h) => [(3 * h + j) * hd, hd]);
  const all = 3 * heads * hd;
  return {
    wQ: linear(`${at}query_key_value`, all, d, part(0)),
    wK: linear(`${at}query_key_value`, all, d, part(1)),
    wV: linear(`${at}query_key_value`, all, d, part(2)),
    bQ: bias(`${at}query_key_value`, all, part(0)), bK: bias(`${at}query_key_value`, all, part(1)),
    bV: bias(`${at}query_key_value`, all, part(2)),
    wO: linear(`${at}dense`, d, heads * hd), bO: bias(`${at}dense`, d),
  };
}

const norm = (name, d, withBeta) => ({ gamma: vector(`${name}.weight`, d),
  ...(withBeta ? { beta: { ...vector(`${name}.bias`, d), bias: true } } : {}) });

const gated = (at, config, fused) => {
  const { d, f } = sizes(config);
  // Biases only where the model has them (Llama's mlp_bias).
  return fused
    ? { wGate: linear(`${at}gate_up_proj`, 2 * f, d, [[0, f]]),
      wUp: linear(`${at}gate_up_proj`, 2 * f, d, [[f, f]]), wDown: linear(`${at}down_proj`, d, f),
      bGate: bias(`${at}gate_up_proj`, 2 * f, [[0, f]]),
      bUp: bias(`${at}gate_up_proj`, 2 * f, [[f, f]]), bDown: bias(`${at}down_proj`, d) }
    : { wGate: linear(`${at}gate_proj`, f, d), wUp: linear(`${at}up_proj`, f, d),
      wDown: linear(`${at}down_proj`, d, f), bGate: bias(`${at}gate_proj`, f),
      bUp: bias(`${at}up_proj`, f), bDown: bias(`${at}down_proj`, d) };
};

const ffn = (up, down, config) => {
  const { d, f } = sizes(config);
  return { w1: linear(up, f, d), b1: bias(up, f), w2: linear(down, d, f), b2: bias(down, d) };
};

// Llama, Mistral, Qwen2/3, Gemma, Phi-3: input_layernorm, self_attn,
// post_attention_layernorm, mlp; Gemma 2 has a norm before and after both.
function llamaLayout(config) {
  const { d } = sizes(config);
  const phi3 = config.layout === 'phi3';
  const attention = phi3 ? fusedAttention('self_attn.', config)
    : separateAttention('self_attn.', ['q_proj', 'k_proj', 'v_proj', 'o_proj'], config,
      config.qkNorm !== undefined);
  const sandwich = config.sublayers[0].norm === 'sandwich';
  return [
    { norm: norm('input_layernorm', d),
      ...(sandwich ? { outputNorm: norm('post_attention_layernorm', d) } : {}), attention },
    { norm: norm(sandwich ? 'pre_feedforward_layernorm' : 'post_attention_layernorm', d),
      ...(sandwich ? { outputNorm: norm('post_feedforward_layernorm', d) } : {}),
      gatedFfn: gated('mlp.', config, phi3) },
  ];
}

export const BLOCK_LAYOUTS = {
  llama: llamaLayout,
  phi3: (config) => llamaLayout({ ...config, layout: 'phi3' }),
  // GPT-J: attention and MLP side by side from one LayerNorm (ln_1).
  gptj: (config) => {
    const { d } = sizes(config);
    return [
      { norm: norm('ln_1', d, true), attention: separateAttention('attn.',
        ['q_proj', 'k_proj', 'v_proj', 'out_proj'], config, false) },
      { norm: norm('ln_1', d, true), ffn: ffn('mlp.fc_in', 'mlp.fc_out', config) },
    ];
  },
  // GPT-NeoX with use_parallel_residual: each side its own LayerNorm.
  gpt_neox: (config) => {
    const { d } = sizes(config);
    return [
      { norm: norm('input_layernorm', d, true), attention: byHeadAttention('attention.', config) },
      { norm: norm('post_attention_layernorm', d, true),
        ffn: ffn('mlp.dense_h_to_4h', 'mlp.dense_4h_to_h', config) },
    ];
  },
};

// A whole model of a block layout: its layers' list and its final norm,
// under the model's root.
export const STACK_LAYOUTS = {
  llama: { list: 'layers', finalNorm: 'norm' },
  phi3: { list: 'layers', finalNorm: 'norm' },
  gptj: { list: 'h', finalNorm: 'ln_f' },
  gpt_neox: { list: 'layers', finalNorm: 'final_layer_norm' },
};

/** Every source name of a layout, for picking the one a checkpoint holds. */
export function layoutNames(layout, config) {
  return BLOCK_LAYOUTS[layout](config).flatMap((sub) => Object.values(sub)
    .flatMap((group) => Object.values(group).map((s) => s.name)));
}

/**
 * The block's weights in `layout`, each tensor from read(source) (its data
 * as the checkpoint holds it, or undefined when a bias is absent):
 * { weights, sources (every Source read, for the result's names) }.
 * @param {(s: Source) => (Float32Array | Uint16Array | undefined)} read
 */
export function blockWeights(layout, config, read) {
  const sources = [];
  const sublayers = BLOCK_LAYOUTS[layout](config).map((sub) => Object.fromEntries(
    Object.entries(sub).map(([group, keys]) => [group, Object.fromEntries(
      Object.entries(keys).flatMap(([key, source]) => {
        sources.push(source);
        const data = read(source);
        if (data === undefined) return [];
        const rows = source.rows ?? [[0, source.shape[0]]];
        if (source.shape.length === 1) {
          if (source.rows === undefined) return [[key, data]];
          return [[key, concatenate(rows.map(([first, n]) => data.subarray(first, first + n)))]];
        }
        const cols = source.shape[1];
        // X @ W: [in, out], the rows taken turned into columns.
        const parts = rows.map(([first, n]) => transposeRows(data, first, n, cols));
        return [[key, parts.length === 1 ? parts[0] : interleave(parts, cols)]];
      }))])));
  return { weights: { sublayers }, sources };
}

function concatenate(arrays) {
  const out = new /** @type {Float32ArrayConstructor} */ (arrays[0].constructor)(
    arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) { out.set(a, at); at += a.length; }
  return out;
}

// [in, n_i] column blocks side by side -> [in, sum n_i].
function interleave(parts, rows) {
  const widths = parts.map((p) => p.length / rows);
  const total = widths.reduce((a, b) => a + b, 0);
  const out = new /** @type {Float32ArrayConstructor} */ (parts[0].constructor)(rows * total);
  for (let r = 0; r < rows; r++) {
    let at = r * total;
    parts.forEach((p, i) => {
      out.set(p.subarray(r * widths[i], (r + 1) * widths[i]), at);
      at += widths[i];
    });
  }
  return out;
}
