// A model folder opened in the explorer: its layers, its tokenizer, and a
// run of one layer's self-attention on the visitor's tokens. The tokens are
// embedded from the checkpoint (explorer-hf-types.js says how, per
// model_type); the layers below the chosen one run on them in the page's
// pool (`pool.fromPretrained` of each layer), so the attention sees the
// hidden states it sees in the model; the layer's attention comes from
// `pool.fromPretrained` of its attention module and returns every head's
// weights and its own part of the output (z_h W_O^h).
import { loadCheckpoint } from '../../index.js';
import { MODEL_TYPES, declaredLayers } from './explorer-hf-types.js';

/** At most this many tokens go in (the heatmaps stay readable). */
export const MAX_MODEL_TOKENS = 64;


/** Why the model cannot be explored as it is, shown to the visitor. */
export class ModelError extends Error {}

// Every forward of the explorer asks for the heads' weights, the scores the
// softmax took (-Infinity where masked) and each head's own output.
const RETURNS = { returnAttnWeights: true, returnScores: true, returnPerHeadOutput: true };

// The layers in the file: `list`.N (under encoder./decoder. with sides), in
// order, each { prefix, side, index }.
function findLayers(names, spec) {
  const pattern = spec.sides
    ? new RegExp(`^((?:.*?\\.)?(encoder|decoder)\\.${spec.list}\\.(\\d+))\\.`)
    : new RegExp(`^((?:.*?\\.)?${spec.list}\\.(\\d+))\\.`);
  const found = new Map();
  for (const name of names) {
    const m = pattern.exec(name);
    if (!m) continue;
    const side = spec.sides ? m[2] : '';
    found.set(m[1], { prefix: m[1], side, index: Number(spec.sides ? m[3] : m[2]) });
  }
  const sideOrder = (s) => ['', 'encoder', 'decoder'].indexOf(s);
  return [...found.values()].sort((a, b) => sideOrder(a.side) - sideOrder(b.side) || a.index - b.index);
}

// The checkpoint's name of `name` (which may hold SIDE) under `base`.
const named = (base, name, side) => base + name.replace('SIDE', side);

/** A model folder (explorer-folder.js's readModelFolder) ready to run in `pool`. */
export class OpenModel {
  /**
   * Up to this size of weights the layers below and the attentions shown
   * stay loaded in the pool between inputs; a larger model loads each
   * layer below for its run and frees it, and keeps only the attention
   * shown, so that its layers never all sit in the workers' memory at once.
   */
  static keepLayersBytes = 512 * 2 ** 20;

  constructor(folder, { module, pool, Tokenizer }) {
    const { config, file } = folder;
    const type = config.model_type;
    if (typeof type !== 'string') throw new ModelError('config.json has no model_type');
    const spec = MODEL_TYPES.get(type);
    if (spec === undefined) {
      throw new ModelError(`model_type '${type}' is not one the explorer reads (it reads ${[...MODEL_TYPES.keys()].join(', ')})`);
    }
    Object.assign(this, { config, file, type, spec, module, pool, folder });
    this.tensors = new Map();
    this.objects = new Map();
    this.states = { key: null, bySide: new Map() };
    const layers = findLayers(file.names, spec);
    if (layers.length === 0) {
      throw new ModelError(`no ${spec.sides ? '{encoder,decoder}.' : ''}${spec.list}.N tensors in the weights ` +
        `(a ${type} model's layers): the file holds ${file.names.slice(0, 5).join(', ')}${file.names.length > 5 ? ', \u2026' : ''}`);
    }
    this.layers = layers.map((layer) => ({ ...layer, ...this.#feeding(layer) }));
    this.tokenizer = folder.tokenizer && Tokenizer ? new Tokenizer(folder.tokenizer.json, folder.tokenizer.config) : null;
  }

  /** `name` (a layer or side may be part of it) as a Float32Array with its shape, read once. */
  tensor(name) {
    if (!this.tensors.has(name)) {
      if (!this.file.names.includes(name)) throw new ModelError(`the weights have no '${name}'`);
      const t = this.file.tensor(name);
      this.tensors.set(name, { data: t.data instanceof Float32Array ? t.data : Float32Array.from(t.data), shape: t.shape });
    }
    return this.tensors.get(name);
  }

  // How the explorer feeds a layer: `fed` 'layers' (the embeddings through
  // the layers below), 'embeddings' (straight from the embeddings: the
  // layers below need more than text), or null with `why`.
  #feeding({ side }) {
    const { spec } = this;
    if (spec.noText) return { fed: null, why: spec.noText };
    if (spec.sides && !spec.textSides.includes(side)) {
      return { fed: null, why: `the ${this.type} ${side} reads ${this.type === 'whisper' ? 'audio' : 'no tokens'}, not text` };
    }
    return { fed: !spec.sides || spec.chainSides.includes(side) ? 'layers' : 'embeddings' };
  }

  /** The layer's name as listed: its prefix, and what feeds it. */
  label(layer) {
    if (layer.fed === null) return `${layer.prefix} (${layer.why})`;
    return layer.fed === 'embeddings' ? `${layer.prefix} (on the embeddings)` : layer.prefix;
  }

  /** One line about the model: type, layers, width, heads, what the folder had. */
  summary() {
    const { config, layers } = this;
    const sides = this.spec.sides ? ['encoder', 'decoder'] : [''];
    const counts = sides.map((side) => {
      const held = layers.filter((l) => l.side === side).length;
      const declared = declaredLayers(config, side);
      const what = `${held} ${side ? `${side} ` : ''}layer${held === 1 ? '' : 's'}`;
      return declared !== undefined && declared !== held ? `${what} (config.json: ${declared})` : what;
    }).filter((s) => !s.startsWith('0 '));
    return `${this.type}: ${counts.join(', ')}, ${this.folder.names.join(' + ')}, ` +
      `${(this.folder.bytes / 2 ** 20).toFixed(1)} MiB; ` +
      (this.tokenizer ? 'text through its tokenizer.json' : 'no tokenizer.json: type token ids');
  }

  // The token embeddings' tensor names for `side`: { base (the model's own
  // prefix), tokens }.
  #embeddingNames(side) {
    const { names } = this.file;
    for (const candidate of this.spec.embeddings.tokens) {
      const want = candidate.replace('SIDE', side);
      const hits = names.filter((n) => n === want || n.endsWith(`.${want}`)).sort((a, b) => a.length - b.length);
      if (hits.length) return { base: hits[0].slice(0, hits[0].length - want.length), tokens: hits[0] };
    }
    throw new ModelError(`no token embeddings (${this.spec.embeddings.tokens.map((c) => `'${c.replace('SIDE', side)}'`).join(' or ')}) in the weights`);
  }

  /** The number of token ids the embeddings take, and the most tokens a sequence may have. */
  limits(layer) {
    const { spec } = this;
    const names = this.#embeddingNames(layer.side);
    const vocab = this.file.info(names.tokens).shape[0];
    let tokens = MAX_MODEL_TOKENS;
    const { positions } = spec.embeddings;
    if (positions) {
      const rows = this.file.info(named(names.base, positions.name, layer.side)).shape[0];
      tokens = Math.min(tokens, rows - (positions.first?.(this.config) ?? 0));
    }
    return { vocab, tokens };
  }

  /** The embeddings of `ids` for `side`, [T * d]: from the checkpoint, as the model makes them. */
  embed(ids, side) {
    const { spec: { embeddings: e }, config } = this;
    const { base, tokens } = this.#embeddingNames(side);
    const table = this.tensor(tokens);
    const [vocab, d] = table.shape;
    const x = new Float32Array(ids.length * d);
    const scale = e.scale?.(config) ?? 1;
    const positions = e.positions ? this.tensor(named(base, e.positions.name, side)) : null;
    const first = e.positions?.first?.(config) ?? 0;
    const tokenType = e.tokenType && this.file.names.includes(base + e.tokenType) ? this.tensor(base + e.tokenType) : null;
    ids.forEach((id, i) => {
      if (id >= vocab) throw new ModelError(`token id ${id} is past the embeddings' ${vocab} rows`);
      for (let c = 0; c < d; c++) {
        // In transformers' order: (word + token type) + position.
        let v = Math.fround(table.data[id * d + c] * scale);
        if (tokenType) v = Math.fround(v + tokenType.data[c]);
        if (positions) v = Math.fround(v + positions.data[(first + i) * d + c]);
        x[i * d + c] = v;
      }
    });
    if (!e.norm) return x;
    return this.#layerNorm(x, d, named(base, e.norm.name, side), e.norm.eps(config));
  }

  // LayerNorm of each row of x by the module's layerNorm, with `name`'s weight and bias.
  #layerNorm(x, d, name, eps) {
    const gamma = this.tensor(`${name}.weight`).data;
    const bias = `${name}.bias`;
    const beta = this.file.names.includes(bias) ? this.tensor(bias).data : new Float32Array(d);
    return this.module.layerNorm({ data: x, shape: [x.length / d, d] }, { gamma, beta, eps }).data;
  }

  // What the layer's attention reads: h itself (post-LN layers), or h
  // through the norm the layer puts before its attention. The package's
  // layers apply that norm inside; the page applies it to see the attention
  // alone (RMSNorm computed here, LayerNorm by the module's layerNorm).
  #attentionInput(h, layer, d) {
    const norm = this.spec.preNorm;
    if (!norm) return h;
    const name = `${layer.prefix}.${norm.name}`;
    const eps = norm.eps(this.config);
    if (norm.kind === 'layer') return this.#layerNorm(h, d, name, eps);
    const w = this.tensor(`${name}.weight`).data;
    const out = new Float32Array(h.length);
    for (let r = 0; r < h.length / d; r++) {
      let sum = 0;
      for (let c = 0; c < d; c++) sum += h[r * d + c] ** 2;
      const inv = 1 / Math.sqrt(Math.fround(sum / d) + eps);
      for (let c = 0; c < d; c++) {
        const gain = norm.kind === 'gemma' ? 1 + w[c] : w[c];
        out[r * d + c] = Math.fround(Math.fround(h[r * d + c] * inv) * gain);
      }
    }
    return out;
  }

  #keeps() {
    return this.folder.bytes <= OpenModel.keepLayersBytes;
  }

  // Frees the pool's object for `key`, if it holds one.
  async #free(key) {
    const made = this.objects.get(key);
    this.objects.delete(key);
    try {
      await (await made)?.module.dispose();
    } catch {
      // A load that failed left nothing to free.
    }
  }

  // The pool's object for `prefix` (a layer, or an attention), made once.
  #object(key, make) {
    if (!this.objects.has(key)) {
      const made = make();
      this.objects.set(key, made);
      // A failed load is tried again next time, not kept.
      made.catch(() => this.objects.delete(key));
    }
    return this.objects.get(key);
  }

  #layerObject(layer) {
    return this.#object(layer.prefix, () => this.pool.fromPretrained(this.config, this.file, { prefix: layer.prefix }));
  }

  // BERT's attention module adds its residual and LayerNorm, which
  // fromPretrained refuses to build as an attention: its projections are
  // loaded into a MultiHeadAttention, the LayerNorm left out.
  #attentionObject(layer) {
    const { spec, config, pool, file } = this;
    const prefix = `${layer.prefix}.${spec.attention}`;
    return this.#object(prefix, async () => {
      if (spec.attentionLayout !== 'bert') return pool.fromPretrained(config, file, { prefix });
      const module = await pool.MultiHeadAttention({ dModel: config.hidden_size, numHeads: config.num_attention_heads });
      try {
        await loadCheckpoint(module, file, { prefix, layout: 'bert', allowUnused: true });
      } catch (e) {
        await module.dispose();
        throw e;
      }
      return { module, forwardOptions: { causal: Boolean(config.is_decoder) } };
    });
  }

  // The hidden states entering `layer` for `ids`: the embeddings, through
  // the layers below when it is fed by them. Kept per input, so that
  // another layer of the same input runs only the layers not yet run.
  async #hiddenState(ids, layer) {
    const key = ids.join(' ');
    if (this.states.key !== key) this.states = { key, bySide: new Map() };
    const side = layer.side;
    if (!this.states.bySide.has(side)) this.states.bySide.set(side, [this.embed(ids, side)]);
    const states = this.states.bySide.get(side);
    if (layer.fed === 'embeddings') return states[0];
    const below = this.layers.filter((l) => l.side === side && l.index < layer.index);
    const keep = this.#keeps();
    for (let k = states.length - 1; k < below.length; k++) {
      const { module, forwardOptions } = await this.#layerObject(below[k]);
      const d = states[0].length / ids.length;
      const out = await module.forward({ data: states[k], shape: [1, ids.length, d] }, forwardOptions);
      states.push(out.data);
      if (!keep) await this.#free(below[k].prefix);
    }
    return states[below.length];
  }

  /**
   * Runs `layer`'s attention on `ids` (labels: the tokens' names): the run
   * the explorer draws, with the hidden states, the attention's input and
   * output, and the prefixes of the objects it holds in the pool, for
   * whoever checks them.
   */
  async run(layer, ids, labels) {
    if (layer.fed === null) throw new ModelError(`${layer.prefix}: ${layer.why}`);
    const attention = `${layer.prefix}.${this.spec.attention}`;
    if (!this.#keeps()) for (const key of [...this.objects.keys()]) if (key !== attention) await this.#free(key);
    const h = await this.#hiddenState(ids, layer);
    const d = h.length / ids.length;
    const input = this.#attentionInput(h, layer, d);
    const { module, forwardOptions } = await this.#attentionObject(layer);
    const r = await module.forward({ data: input, shape: [1, ids.length, d] }, undefined, undefined,
      { ...forwardOptions, ...RETURNS });
    const { numHeads, numKvHeads, dModel } = module.config;
    return {
      source: 'model', prefix: layer.prefix, fed: layer.fed, ids: [...ids], forwardOptions,
      tq: ids.length, tk: ids.length, queries: labels, keys: labels, fitScale: true,
      numHeads, kvHeads: numKvHeads ?? numHeads, dModel,
      heads: Array.from({ length: numHeads }, () => ({ name: '', pattern: 'model', built: false, tag: null })),
      probs: r.attnWeights.data, scores: r.scores.data, perHead: r.perHeadOutput.data, output: r.output.data,
      hidden: h, input, held: [...this.objects.keys()],
    };
  }

  /** Frees every object the model made in the pool. */
  async dispose() {
    for (const key of [...this.objects.keys()]) await this.#free(key);
  }
}
