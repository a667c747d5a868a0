// The pool's transformer layers split over its workers: each attention by
// heads (the pool's sharded MultiHeadAttention, with its sharded KV cache and
// precomputed memory), the FFN by hidden units (worker i holds a contiguous
// group of them: its W1 columns, b1 entries and W2 rows; groups differ by at
// most one unit), and the residual adds and LayerNorms here, in the caller,
// where the partial outputs are summed anyway. Per sublayer the caller sends
// the sublayer's input to every worker and adds what comes back in worker
// order (then b_O or b2), so a result does not depend on which worker
// answered first.
//
// The math is the synchronous layers' (src/transformer_layers.cc):
//   post-LN: h = LN(h + f(h)) for each sublayer f
//   pre-LN:  h = h + f(LN(h))
// each sum checked for float32 overflow before it goes on, LayerNorm
// (x - mean) / sqrt(var + eps) * gamma + beta with eps as float32.
//
// Errors: types are checked here by the synchronous API's own functions;
// shapes and values by the workers' objects. An error from a worker names
// the part that refused (a MultiHeadAttention), so the synchronous error is
// made again by worker 0 on a whole synchronous layer of the same config
// (zero weights, empty stand-ins of the caches and memories) for the same
// arguments; when that one does not fail (an overflow that depends on the
// real weights), the worker's error stands.
import { checkObject, optionalBoolean, optionalMask } from './arguments.js';
import { readCacheOptions } from './caches.js';
import { readLayerWeights } from './layers.js';
import { DECODER_WEIGHT_GROUPS, ENCODER_WEIGHT_GROUPS, OPTION_KEYS } from './option-keys.js';
import { layerWeightsFromPyTorch } from './pytorch-layer-state.js';
import { readTensor } from './tensors.js';
import { columns, fits, rowRange } from './weight-forms.js';

const TOO_LARGE = 'the inputs or weights are too large in magnitude';

// Rows of `d` floats normalized as the C++ kernel does (float64 here, then
// rounded once to float32: within float32 rounding of the kernel's result).
function layerNorm(x, d, { gamma, beta }, eps) {
  const out = new Float32Array(x.length);
  for (let row = 0; row < x.length; row += d) {
    let sum = 0;
    for (let i = 0; i < d; ++i) sum += x[row + i];
    const mean = sum / d;
    let squares = 0;
    for (let i = 0; i < d; ++i) squares += (x[row + i] - mean) ** 2;
    const inv = 1 / Math.sqrt(squares / d + eps);
    for (let i = 0; i < d; ++i) out[row + i] = (x[row + i] - mean) * inv * gamma[i] + beta[i];
  }
  return out;
}

// h += y, then the synchronous layer's overflow check of the sum.
function addResidual(where, sublayer, h, y) {
  for (let i = 0; i < h.length; ++i) h[i] += y[i];
  for (let i = 0; i < h.length; ++i) {
    if (!Number.isFinite(h[i])) {
      const value = Number.isNaN(h[i]) ? 'NaN' : h[i] > 0 ? '+Infinity' : '-Infinity';
      throw new RangeError(`${where}: ${sublayer} overflowed float32 (element ${i} is ` +
        `${value}); ${TOO_LARGE}`);
    }
  }
}

// Whether every weight has the shape the config gives it and values the
// layer's config.weights takes (see fits): if not, the synchronous layer
// says what is wrong.
function weightsFit(weights, shapes, type) {
  return Object.entries(shapes).every(([group, keys]) => Object.entries(keys).every(
    ([key, shape]) => fits(weights[group][key], shape, type)));
}

export function makePooledLayers({ workers, PoolObject, KVCache, PrecomputedKeyValue, poolObject,
  newRef, splitUnits, sumPartials, createMultiHeadAttention }) {
  // Hidden units [from, to) of a layer's FFN in each of its workers.
  class FeedForwardShards extends PoolObject {
    #d;
    #units;
    #b2;

    constructor(shards, dModel, units) {
      super(newRef(), shards);
      this.#d = dModel;
      this.#units = units;
    }

    static async create({ dModel, ffnDim, activation, backend, weights }) {
      const shards = splitUnits(ffnDim, workers.count).map(({ worker, from, to }) =>
        ({ worker, units: [from, to] }));
      const ffn = new FeedForwardShards(shards, dModel, ffnDim);
      await workers.all(shards.map((s) => s.worker), (i) => ({
        op: 'new', ref: ffn.ref, kind: 'FeedForward',
        config: { dModel, ffnDim: shards[i].units[1] - shards[i].units[0], activation, backend,
          weights },
      }));
      return ffn;
    }

    // Each worker's W1 columns, b1 entries and W2 rows, and a zero b2 (added
    // once by the pool).
    async setWeights({ w1, b1, w2, b2 }) {
      const [d, f] = [this.#d, this.#units];
      const parts = this.shards.map(({ units: [from, to] }) => ({
        w1: columns(w1, d, f, from, to), b1: b1.slice(from, to),
        w2: rowRange(w2, d, from, to), b2: new Float32Array(d),
      }));
      await this.sendWeights(parts);
      this.#b2 = Float32Array.from(b2);
    }

    // rows [n * dModel] -> the FFN's output, the workers' partial outputs
    // added in worker order, then b2.
    async forward(rows) {
      const parts = await this.call('forward', [{ data: rows }]);
      return sumPartials(parts.map((p) => p.data), this.#b2);
    }
  }

  // What the encoder and decoder share: parts, weights, the sublayers run
  // here, and the synchronous errors.
  class PooledLayer extends PoolObject {
    #kind;
    #given; // the config as given, for worker 0's synchronous layer
    #config;
    #kernels;
    #parts; // { attentions: [MultiHeadAttention...], ffn }
    #norms = [];
    #hasWeights = false;

    constructor(kind, given, { config, kernels }, parts) {
      super(newRef(), []);
      this.#kind = kind;
      this.#given = given;
      this.#config = config;
      this.#kernels = kernels;
      this.#parts = parts;
    }

    get config() { return this.#config; }
    get kernels() { return this.#kernels; }
    get placement() { return 'split'; }

    // Disposing of the layer disposes of its parts, which hold its objects
    // in the workers (the layer has none of its own).
    released() {
      const { attentions, ffn } = this.#parts;
      return Promise.all([...attentions, ffn].map((part) => part.dispose()));
    }

    // Runs body(where) as the next call on the layer. A disposed layer, or
    // one without weights when the method needs them, says so as the
    // synchronous one does; any error of a worker is made again as the
    // synchronous layer's (see the top of this file). sent(): the call's
    // arguments as worker 0's synchronous layer takes them.
    run(method, needsWeights, body, sent) {
      const where = `${this.#kind}.${method}`;
      return this.enqueue(async () => {
        workers.check(where);
        if (this.disposed || (needsWeights && !this.#hasWeights)) {
          await this.#synchronousError(where, method, [], { disposed: this.disposed });
        }
        try {
          return await body(where);
        } catch (e) {
          if (e.message.startsWith(`${where}: `) || workers.dead) throw e;
          return this.#synchronousError(where, method, sent(), { zeroWeights: needsWeights }, e);
        }
      });
    }

    // Throws what worker 0's synchronous layer throws for `method` on
    // `args` (in `state`), if that is an error of `where`; else `error`, if
    // any. Returns when the synchronous layer accepts the call and there is
    // no error to keep.
    async #synchronousError(where, method, args, state, error) {
      let reproduced;
      try {
        await workers.all([0], () => ({ op: 'check', kind: this.#kind, config: this.#given,
          method, args, ...state }));
      } catch (e) {
        reproduced = e;
      }
      if (reproduced?.message.startsWith(`${where}: `)) throw reproduced;
      if (error !== undefined) throw error;
      if (reproduced !== undefined) throw reproduced;
    }

    // Weights as the synchronous layer takes them: { group: { key: array } }.
    setWeightsOf(where, weights, groups) {
      const c = this.#config;
      const w = readLayerWeights(where, weights, groups);
      const kv = c.numKvHeads * c.headDim;
      const [d, f] = [c.dModel, c.ffnDim];
      const attention = { wQ: [d, d], wK: [d, kv], wV: [d, kv], wO: [d, d], bQ: [1, d],
        bK: [1, kv], bV: [1, kv], bO: [1, d] };
      const norm = { gamma: [1, d], beta: [1, d] };
      const shapes = Object.fromEntries(Object.keys(groups).map((group) => [group,
        group.startsWith('norm') ? norm : group === 'ffn'
          ? { w1: [d, f], b1: [1, f], w2: [f, d], b2: [1, d] } : attention]));
      return { w, fits: weightsFit(w, shapes, c.weights) };
    }

    // Sends weights that fit to the parts; keeps the norms here.
    async apply(w, attentionGroups, normGroups) {
      const { attentions, ffn } = this.#parts;
      await Promise.all([...attentions.map((a, i) => a.setWeights(w[attentionGroups[i]])),
        ffn.setWeights(w.ffn)]);
      this.#norms = normGroups.map((group) => ({ gamma: Float32Array.from(w[group].gamma),
        beta: Float32Array.from(w[group].beta) }));
      this.#hasWeights = true;
    }

    setWeightsWith(method, convert, groups, attentionGroups, normGroups, argument) {
      return this.run(method, false, async (where) => {
        const { w, fits } = this.setWeightsOf(where, convert(where), groups);
        if (!fits) {
          // All or nothing: nothing is sent before the synchronous layer
          // names what it refuses.
          await this.#synchronousError(where, method, [argument], {});
        }
        await this.apply(w, attentionGroups, normGroups);
      }, () => [argument]);
    }

    // x {data, shape} through the sublayers [{ name, run(input tensor) ->
    // Promise<Float32Array> }], each with its norm, as the synchronous layer.
    async sublayers(where, x, steps) {
      const { dModel: d, normFirst } = this.#config;
      const eps = Math.fround(this.#config.eps);
      let h = Float32Array.from(x.data);
      for (const [i, { name, run }] of steps.entries()) {
        const norm = this.#norms[i];
        if (normFirst) {
          addResidual(where, name, h, await run({ data: layerNorm(h, d, norm, eps),
            shape: x.shape }));
        } else {
          addResidual(where, name, h, await run({ data: h, shape: x.shape }));
          h = layerNorm(h, d, norm, eps);
        }
      }
      return { data: h, shape: [...x.shape] };
    }

    ffnStep() {
      return { name: 'the feed-forward sublayer', run: (input) => this.#parts.ffn.forward(input.data) };
    }
  }

  class TransformerEncoderLayer extends PooledLayer {
    #attention;

    constructor(given, resolved, parts) {
      super('TransformerEncoderLayer', given, resolved, parts);
      [this.#attention] = parts.attentions;
    }

    setWeights(weights) {
      return this.setWeightsWith('setWeights', () => weights, ENCODER_WEIGHT_GROUPS,
        ['attention'], ['norm1', 'norm2'], weights);
    }

    setWeightsFromPyTorch(state) {
      return this.setWeightsWith('setWeightsFromPyTorch', (where) => layerWeightsFromPyTorch(where,
        'TransformerEncoderLayer', this.config, state), ENCODER_WEIGHT_GROUPS, ['attention'],
      ['norm1', 'norm2'], state);
    }

    forward(x, options) {
      return this.run('forward', true, async (where) => {
        readTensor(where, 'x', x);
        const o = options === undefined ? {} : options;
        checkObject(where, 'options', o, OPTION_KEYS.EncoderForwardOptions);
        const causal = optionalBoolean(where, 'options.causal', o.causal, false);
        const attention = { ...o, causal };
        return this.sublayers(where, x, [
          { name: 'the self-attention sublayer', run: async (input) =>
            (await this.#attention.forward(input, undefined, undefined, attention)).output.data },
          this.ffnStep(),
        ]);
      }, () => [x, options]);
    }
  }

  const MEMORY_FROM = 'precomputeMemory()';

  class TransformerDecoderLayer extends PooledLayer {
    #self;
    #cross;

    constructor(given, resolved, parts) {
      super('TransformerDecoderLayer', given, resolved, parts);
      [this.#self, this.#cross] = parts.attentions;
    }

    setWeights(weights) {
      return this.setWeightsWith('setWeights', () => weights, DECODER_WEIGHT_GROUPS,
        ['selfAttention', 'crossAttention'], ['norm1', 'norm2', 'norm3'], weights);
    }

    setWeightsFromPyTorch(state) {
      return this.setWeightsWith('setWeightsFromPyTorch', (where) => layerWeightsFromPyTorch(where,
        'TransformerDecoderLayer', this.config, state), DECODER_WEIGHT_GROUPS,
      ['selfAttention', 'crossAttention'], ['norm1', 'norm2', 'norm3'], state);
    }

    // memory: a pooled PrecomputedKeyValue of this layer's layout, or a tensor.
    #memory(where, memory) {
      if (memory instanceof PoolObject) {
        poolObject(where, 'memory', memory, PrecomputedKeyValue, MEMORY_FROM, this.#cross.shards);
        return { precomputed: memory };
      }
      readTensor(where, 'memory', memory);
      return { tensor: memory };
    }

    // The steps after the self-attention: cross-attention over `kv` (a
    // pooled PrecomputedKeyValue, or a tensor) with its key padding, the FFN.
    #crossAndFfn(kv, keyPaddingMask) {
      const options = keyPaddingMask === undefined ? {} : { keyPaddingMask };
      return [
        { name: 'the cross-attention sublayer', run: async (input) =>
          (await this.#cross.forward(input, kv, kv instanceof PoolObject ? undefined : kv,
            options)).output.data },
        this.ffnStep(),
      ];
    }

    forward(x, memory, options) {
      return this.run('forward', true, async (where) => {
        readTensor(where, 'x', x);
        const m = this.#memory(where, memory);
        const o = options === undefined ? {} : options;
        checkObject(where, 'options', o, OPTION_KEYS.DecoderForwardOptions);
        const causal = optionalBoolean(where, 'options.causal', o.causal, true);
        const memoryMask = optionalMask(where, 'options.memoryKeyPaddingMask',
          o.memoryKeyPaddingMask);
        const { memoryKeyPaddingMask, ...self } = o;
        return this.sublayers(where, x, [
          { name: 'the self-attention sublayer', run: async (input) =>
            (await this.#self.forward(input, undefined, undefined, { ...self, causal })).output.data },
          ...this.#crossAndFfn(m.precomputed ?? m.tensor, memoryMask),
        ]);
      }, () => [x, this.#standIn(memory), options]);
    }

    forwardIncremental(x, cache, memory, options) {
      return this.run('forwardIncremental', true, async (where) => {
        const { tokens } = readTensor(where, 'x', x);
        poolObject(where, 'cache', cache, KVCache, 'createKVCache()', this.#self.shards);
        const m = this.#memory(where, memory);
        const o = options === undefined ? {} : options;
        checkObject(where, 'options', o, OPTION_KEYS.SelfAttentionOptions);
        const before = cache.disposed ? 0 : cache.length;
        // A memory tensor is projected for this step only, as synchronously.
        const kv = m.precomputed ?? await this.#cross.precomputeKeyValue(m.tensor);
        let attended = false;
        try {
          return await this.sublayers(where, x, [
            { name: 'the self-attention sublayer', run: async (input) => {
              const r = await this.#self.forwardIncremental(input, cache, o);
              attended = true;
              return r.output.data;
            } },
            ...this.#crossAndFfn(kv),
          ]);
        } catch (e) {
          // The tokens the self-attention added go out again.
          if (attended && cache.length === before + tokens) await cache.truncate(before);
          throw e;
        } finally {
          if (m.precomputed === undefined) await kv.dispose();
        }
      }, () => [x, this.#standIn(cache), this.#standIn(memory), options]);
    }

    createKVCache(options) {
      return this.run('createKVCache', false, async (where) => {
        readCacheOptions(where, options);
        return this.#self.createKVCache(options);
      }, () => [options]);
    }

    precomputeMemory(memory, options) {
      return this.run('precomputeMemory', true, async (where) => {
        readTensor(where, 'memory', memory);
        return this.#cross.precomputeKeyValue(memory, options);
      }, () => [memory, options]);
    }

    // A pooled cache or memory as worker 0's synchronous layer takes it: an
    // empty one of its sizes (see pool-worker.js).
    #standIn(v) {
      if (v instanceof KVCache) {
        return { standIn: 'KVCache', batch: v.batch, maxLength: v.maxLength,
          length: v.disposed ? 0 : v.length, disposed: v.disposed };
      }
      if (v instanceof PrecomputedKeyValue) {
        return { standIn: 'PrecomputedKeyValue', batch: v.batch, tokens: v.tokens,
          disposed: v.disposed };
      }
      return v;
    }
  }

  // A layer of `kind` split over the workers; resolved: its config and
  // kernels as worker 0's synchronous layer reports them.
  async function createPooledLayer(kind, given, resolved) {
    const c = resolved.config;
    const attention = { dModel: c.dModel, numHeads: c.numHeads, numKvHeads: c.numKvHeads,
      backend: c.backend, weights: c.weights, cacheType: c.cacheType };
    const made = [];
    try {
      // The decoder's cross-attention has no rotary positions (as in C++).
      for (const config of kind === 'TransformerEncoderLayer' ? [{ ...attention, rope: c.rope }]
        : [{ ...attention, rope: c.rope }, attention]) {
        if (config.rope === undefined) delete config.rope;
        made.push(await createMultiHeadAttention(config));
      }
      const ffn = await FeedForwardShards.create(c);
      const Class = kind === 'TransformerEncoderLayer' ? TransformerEncoderLayer
        : TransformerDecoderLayer;
      return new Class(given, resolved, { attentions: made, ffn });
    } catch (e) {
      await Promise.all(made.map((part) => part.dispose()));
      throw e;
    }
  }

  return { createPooledLayer, TransformerEncoderLayer, TransformerDecoderLayer };
}
