// The pool's MultiHeadAttention, split by heads. The output is
// sum_h z_h W_O^h + b_O, and head h needs only its own columns of W_Q, W_K,
// W_V and its own rows of W_O. Worker i holds a contiguous group of
// key/value heads with their query heads (groups differ by at most one) as
// an attention of its own (config.headDim), the first group with b_O, the
// others without. A call goes to each of its workers at once; the others
// send their partial outputs to the first, which adds them in worker order
// (so a result does not depend on which worker finished first) and answers:
// one message back per call, and no adding on the calling thread. Its KV
// caches and precomputed K/V live in the workers, sharded by the same heads
// (pool-key-values.js). It is also the attention of a split layer's
// sublayers (pool-split-layers.js), whose calls carry SUBLAYER.
import { checkObject, float32, weightMatrix } from './arguments.js';
import { readCacheOptions } from './caches.js';
import { OPTION_KEYS } from './option-keys.js';
import { ARGUMENTS, copyArguments, plainMember, POOL_OBJECTS, tensor, whole, withMembers }
  from './pool-arguments.js';
import { isKeyValues, KVCache, poolObject, PrecomputedKeyValue, standIn }
  from './pool-key-values.js';
import { checkReceivers, ConfiguredObject } from './pool-object.js';
import { hasHeadAxis, headSlice, splitUnits } from './pool-split.js';
import { attentionWeightsFromPyTorch } from './pytorch-attention-state.js';
import { readTensor } from './tensors.js';
import { columns, fits, quantizedWhole, rowRange } from './weight-forms.js';

// The key of a split layer's sublayer request ({ norm, name, where }: see
// pool-worker.js) in the options of its attention's call; not an option: a
// symbol, which no structured clone or checkObject sees.
export const SUBLAYER = Symbol('sublayer');

// The arguments of an attention's call, copied (copyArguments), unless the
// call is a sublayer of a split layer (its options carry SUBLAYER): then
// they are the layer's copies, or data of the pool's own.
function copiedUnlessSublayer(args, schemas) {
  let internal = false;
  try {
    internal = Object.hasOwn(Object(args.at(-1)), SUBLAYER);
  } catch {
    // a caller's Proxy that throws: not the pool's options
  }
  return internal ? () => args : copyArguments(args, schemas);
}

// Its shards: [{ worker, heads: [from, to), kvHeads: [from, to) }].
class MultiHeadAttention extends ConfiguredObject {
  #hasWeights = false;

  constructor(context, config, kernels, shards) {
    super(context, context.newRef(), shards, { config, kernels });
  }

  // Runs body(where, copies) as the next call on the attention, `method`
  // its name and `taken` its arguments' copies (copyArguments). A disposed
  // object, or one without weights when the method needs them, says so
  // through the synchronous object of worker 0, which checks that first.
  #run(method, needsWeights, taken, body) {
    const where = `MultiHeadAttention.${method}`;
    return this.enqueue(async () => {
      this.workers.check(where);
      await (this.disposed || (needsWeights && !this.#hasWeights)
        ? this.workers.all([this.shards[0].worker],
          () => ({ op: 'call', ref: this.ref, method, args: [] }))
        : null);
      return body(where, taken());
    });
  }

  setWeights(weights) {
    return this.#run('setWeights', false, copyArguments([weights], [ARGUMENTS.mhaWeights]),
      async (where, [weights]) => {
        const c = this.config;
        // Weights that are not of the types or sizes it takes are judged
        // whole, for the synchronous message (its checks' order).
        const judgeWhole = () => this.workers.all([0], () => ({ op: 'check',
          kind: 'MultiHeadAttention', config: c, weights }));
        const w = {};
        try {
          checkObject(where, 'weights', weights, OPTION_KEYS.MultiHeadAttentionWeights);
          for (const key of OPTION_KEYS.MultiHeadAttentionWeights) {
            w[key] = /^w[A-Z]/.test(key) ? weightMatrix(where, key, weights[key])
              : float32(where, key, weights[key], true);
          }
        } catch (e) {
          await judgeWhole();
          throw e;
        }
        const shapes = {
          wQ: [c.dModel, c.numHeads * c.headDim], wK: [c.kDim, c.numKvHeads * c.headDim],
          wV: [c.vDim, c.numKvHeads * c.headDimV], wO: [c.numHeads * c.headDimV, c.dModel],
        };
        if (c.bias) {
          Object.assign(shapes, { bQ: [1, c.numHeads * c.headDim],
            bK: [1, c.numKvHeads * c.headDim], bV: [1, c.numKvHeads * c.headDimV],
            bO: [1, c.dModel] });
        }
        if (c.qkNorm !== undefined) {
          Object.assign(shapes, { qNorm: [1, c.headDim], kNorm: [1, c.headDim] });
        }
        const fitting = (key) => (shapes[key] === undefined ? w[key] === undefined
          : w[key] !== undefined && fits(w[key], shapes[key], c.weights));
        if (!OPTION_KEYS.MultiHeadAttentionWeights.every(fitting)) await judgeWhole();
        await this.#apply(w);
      });
  }

  // An nn.MultiheadAttention state_dict. Its conversion is C++'s, which
  // takes whole attentions only: worker 0's synchronous object judges the
  // state first, and the accepted state is transposed here and split.
  setWeightsFromPyTorch(state) {
    return this.#run('setWeightsFromPyTorch', false, copyArguments([state], [ARGUMENTS.mhaState]),
      async (where, [state]) => {
        checkObject(where, 'state', state);
        await this.workers.all([0], () => ({ op: 'check', kind: 'MultiHeadAttention',
          config: this.config, method: 'setWeightsFromPyTorch', args: [state] }));
        await this.#apply(attentionWeightsFromPyTorch(this.config, state));
      });
  }

  // Weights that fit, split by heads and sent (W_O by rows, int8 quantized
  // whole first: see quantizedWhole); b_O goes to worker 0 alone, so that
  // the caller only adds the partial outputs.
  async #apply(given) {
    const c = this.config;
    const group = c.numHeads / c.numKvHeads;
    const weights = { ...given, wO: await quantizedWhole(given.wO,
      [c.numHeads * c.headDimV, c.dModel], c.weights, this.shards.length,
      this.context.quantizeInt8) };
    const parts = this.shards.map((shard) => this.#shardWeights(weights, shard, group));
    if (c.bias) parts[0].bO = Float32Array.from(weights.bO);
    await this.sendWeights(parts);
    this.#hasWeights = true;
  }

  // The weights of one shard's heads, b_O zero (see #apply).
  #shardWeights(w, { kvHeads: [k0, k1] }, group) {
    const c = this.config;
    const [q0, q1] = [k0 * group, k1 * group];
    const [dk, dv] = [c.headDim, c.headDimV];
    const out = {
      wQ: columns(w.wQ, c.dModel, c.numHeads * dk, q0 * dk, q1 * dk),
      wK: columns(w.wK, c.kDim, c.numKvHeads * dk, k0 * dk, k1 * dk),
      wV: columns(w.wV, c.vDim, c.numKvHeads * dv, k0 * dv, k1 * dv),
      wO: rowRange(w.wO, c.dModel, q0 * dv, q1 * dv),
    };
    if (c.bias) {
      Object.assign(out, {
        bQ: w.bQ.slice(q0 * dk, q1 * dk), bK: w.bK.slice(k0 * dk, k1 * dk),
        bV: w.bV.slice(k0 * dv, k1 * dv), bO: new Float32Array(c.dModel),
      });
    }
    // QK-norm's scales are every head's: each shard gets them whole.
    if (c.qkNorm !== undefined) Object.assign(out, { qNorm: w.qNorm.slice(), kNorm: w.kNorm.slice() });
    return out;
  }

  // Runs `method` on every shard with the options' masks sliced to the
  // shard's heads where they have a head axis (see headSlice): the results
  // joined, or a split layer's next input when the options carry its
  // sublayer (options[SUBLAYER]). Options that are not an object go as
  // they are, for the workers' synchronous objects to refuse after what
  // they check first. `given`: the arguments with the pool's objects in
  // them, for #asWhole.
  #attend(where, method, given, optionsAt, batch, tq, tk) {
    const args = given.map((arg) => (POOL_OBJECTS.has(arg) ? { poolRef: arg.ref } : arg));
    const options = args[optionsAt];
    const heads = this.config.numHeads;
    const slice = (mask, s) => headSlice(mask, batch, heads, tq, tk, s.heads[0], s.heads[1]);
    const [attnMask, boolMask] = ['attnMask', 'boolMask'].map((k) => plainMember(options, k));
    const sliced = [attnMask, boolMask].some((mask) => hasHeadAxis(mask, batch, heads, tq, tk));
    const sublayer = plainMember(options, SUBLAYER);
    const run = () => this.gather(method, args, sliced ? (s) => {
      const shardArgs = [...args];
      shardArgs[optionsAt] = withMembers(options, { attnMask: slice(attnMask, s),
        boolMask: slice(boolMask, s) });
      return shardArgs;
    } : undefined, sublayer);
    // A split layer makes its sublayers' errors again as its own.
    return sublayer === undefined ? this.#asWhole(where, method, given, run) : run();
  }

  // run()'s value, or its error as worker 0's whole synchronous attention
  // of this config (zero weights, empty stand-ins of the caches and
  // memories) refuses `method` on `given`: a shard judges with its own
  // heads (a mask's sizes name them). Where the whole one takes the call
  // (an overflow that depends on the real weights), the shards' error
  // stands.
  async #asWhole(where, method, given, run) {
    try {
      return await run();
    } catch (error) {
      if (this.shards.length === 1 || this.workers.dead) throw error;
      let reproduced;
      try {
        await this.workers.all([0], () => ({ op: 'check', kind: 'MultiHeadAttention',
          config: this.config, zeroWeights: true, method, args: given.map(standIn) }));
      } catch (e) {
        reproduced = e;
      }
      throw reproduced?.message.startsWith(`${where}: `) ? reproduced : error;
    }
  }

  forward(query, key, value, options) {
    return this.#run('forward', true, copiedUnlessSublayer([query, key, value, options],
      [tensor, tensor, tensor, ARGUMENTS.forwardOptions]),
      async (where, [query, key, value, options]) => {
        const q = readTensor(where, 'query', query);
        if (isKeyValues(key)) {
          poolObject(where, 'key', key, PrecomputedKeyValue, this);
          return this.#attend(where, 'forward', [query, key, value, options], 3,
            q.batch, q.tokens, key.tokens);
        }
        // As the synchronous forward: a value without its key is its error.
        const selfAttention = key === undefined || key === null || key === query;
        const k = selfAttention ? q : readTensor(where, 'key', key);
        if (!selfAttention && value !== undefined && value !== null && value !== key) {
          readTensor(where, 'value', value);
        }
        return this.#attend(where, 'forward', [query, key, value, options], 3,
          q.batch, q.tokens, k.tokens);
      });
  }

  createKVCache(options) {
    return this.#run('createKVCache', false, copyArguments([options], [ARGUMENTS.cacheOptions]),
      async (where, [options]) => {
        const { batch, maxLength } = readCacheOptions(where, options);
        const cache = new KVCache(this.context, this.shards, batch, maxLength, this.config);
        // (A shard names its own heads' sizes in its errors.)
        await this.#asWhole(where, 'createKVCache', [options],
          () => this.call('createKVCache', [options], undefined, cache.ref));
        return cache;
      });
  }

  forwardIncremental(x, cache, options) {
    return this.#run('forwardIncremental', true, copiedUnlessSublayer([x, cache, options],
      [tensor, whole, ARGUMENTS.incrementalOptions]),
      async (where, [x, cache, options]) => {
        const t = readTensor(where, 'x', x);
        poolObject(where, 'cache', cache, KVCache, this);
        return cache.step((length) => this.#attend(where, 'forwardIncremental',
          [x, cache, options], 2, t.batch, t.tokens, length + t.tokens),
        (length) => length + t.tokens);
      });
  }

  precomputeKeyValue(memory, options) {
    return this.#run('precomputeKeyValue', true, copyArguments([memory, options],
      [tensor, ARGUMENTS.precomputeOptions]),
      async (where, [memory, options]) => {
        const m = readTensor(where, 'memory', memory);
        const kv = new PrecomputedKeyValue(this.context, this.shards, m.batch, m.tokens);
        await this.#asWhole(where, 'precomputeKeyValue', [memory, options],
          () => this.call('precomputeKeyValue', [memory, options], undefined, kv.ref));
        return kv;
      });
  }
}

checkReceivers(MultiHeadAttention, 'MultiHeadAttention');

// A MultiHeadAttention of the pool of `context`, split by heads over its
// workers; worker 0's synchronous object checks and resolves the config.
export async function createMultiHeadAttention(context, givenConfig) {
  const { workers } = context;
  const where = 'MultiHeadAttention';
  const taken = copyArguments([givenConfig], [ARGUMENTS.mhaConfig]);
  workers.check(where);
  const [config] = taken();
  checkObject(where, 'config', config, OPTION_KEYS.MultiHeadAttentionConfig);
  const [{ config: resolved, kernels }] = await workers.all([0],
    () => ({ op: 'check', kind: 'MultiHeadAttention', config }));
  const { numHeads, numKvHeads, headDim, headDimV } = resolved;
  const group = numHeads / numKvHeads;
  const shards = splitUnits(numKvHeads, workers.count).map(({ worker, from, to }) => ({
    worker, kvHeads: [from, to], heads: [from * group, to * group],
  }));
  const mha = new MultiHeadAttention(context, resolved, kernels, shards);
  await workers.all(shards.map((s) => s.worker), (i) => ({
    op: 'new', ref: mha.ref, kind: 'MultiHeadAttention',
    config: { ...config, numHeads: (shards[i].kvHeads[1] - shards[i].kvHeads[0]) * group,
      numKvHeads: shards[i].kvHeads[1] - shards[i].kvHeads[0], headDim, headDimV },
  }));
  return mha;
}
