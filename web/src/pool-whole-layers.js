// The pool's layers placed whole: each runs in one worker (the pool's
// choice: the one holding the fewest layers), its caches and memories held
// there too; a call is one round trip, the layer's checks and messages the
// worker's synchronous layer's own.
import { checkObject } from './arguments.js';
import { readSharedAttentionOptions } from './attention.js';
import { readCacheOptions } from './caches.js';
import { OPTION_KEYS } from './option-keys.js';
import { ARGUMENTS, copyArguments, tensor, whole } from './pool-arguments.js';
import { isKeyValues, KVCache, poolObject, PrecomputedKeyValue } from './pool-key-values.js';
import { checkReceivers, ConfiguredObject } from './pool-object.js';
import { readTensor } from './tensors.js';

// Its one shard, { worker }, holds its caches and memories too.
class Layer extends ConfiguredObject {
  #kind;
  #hasWeights = false;

  // made: its config and kernels, as its worker's synchronous layer reports them.
  constructor(context, ref, kind, worker, made) {
    super(context, ref, [{ worker }], made);
    this.#kind = kind;
  }

  get placement() { return 'whole'; }

  get kind() { return this.#kind; }

  // Runs `method` in the layer's worker as the next call on the layer,
  // on its arguments `given` copied now by `schemas`. prepare(where,
  // copies) checks what is cheap on this side and returns { args, made?,
  // around? }: made, the pooled object the call fills; around(job), what
  // runs the job (a cache's step). A disposed layer, or one without
  // weights when the method needs them, says so from the worker, which
  // checks that first.
  invoke(method, needsWeights, given, schemas, prepare) {
    const where = `${this.#kind}.${method}`;
    const taken = copyArguments(given, schemas);
    return this.enqueue(async () => {
      this.workers.check(where);
      if (this.disposed || (needsWeights && !this.#hasWeights)) await this.call(method);
      const { args, made, around = (job) => job() } = prepare(where, taken());
      const [value] = await around(() => this.call(method, args, undefined, made?.ref));
      // setWeights and setWeightsFromPyTorch
      if (method.startsWith('setWeights')) this.#hasWeights = true;
      return made ?? value;
    });
  }

  // A tensor (type-checked), or a pooled object held as this layer holds its own.
  argument(where, name, v, Class) {
    if (isKeyValues(v)) return poolObject(where, name, v, Class, this);
    readTensor(where, name, v);
    return v;
  }

  setWeights(weights) {
    return this.invoke('setWeights', false, [weights], [ARGUMENTS[this.#kind].weights],
      (where, [w]) => {
        checkObject(where, 'weights', w);
        return { args: [w] };
      });
  }

  released() { this.context.layersHeld[this.shards[0].worker] -= 1; }
}

// The encoder and decoder layers, which take a torch state_dict too.
class TorchLayer extends Layer {
  setWeightsFromPyTorch(state) {
    return this.invoke('setWeightsFromPyTorch', false, [state],
      [ARGUMENTS[this.kind].state], (where, [s]) => {
        checkObject(where, 'state', s);
        return { args: [s] };
      });
  }
}

class TransformerEncoderLayer extends TorchLayer {
  forward(x, options) {
    return this.invoke('forward', true, [x, options], [tensor, ARGUMENTS.encoderOptions],
      (where, args) => {
        readTensor(where, 'x', args[0]);
        return { args };
      });
  }
}

class TransformerDecoderLayer extends TorchLayer {
  forward(x, memory, options) {
    return this.invoke('forward', true, [x, memory, options],
      [tensor, tensor, ARGUMENTS.decoderOptions], (where, [x, memory, options]) => {
        readTensor(where, 'x', x);
        return {
          args: [x, this.argument(where, 'memory', memory, PrecomputedKeyValue), options],
        };
      });
  }

  forwardIncremental(x, cache, memory, options) {
    return this.invoke('forwardIncremental', true, [x, cache, memory, options],
      [tensor, whole, tensor, ARGUMENTS.selfAttentionOptions],
      (where, [x, cache, memory, options]) => {
        const { tokens } = readTensor(where, 'x', x);
        // The options before the cache, as the synchronous layer reads them.
        if (options !== undefined) {
          checkObject(where, 'options', options, OPTION_KEYS.SelfAttentionOptions);
          readSharedAttentionOptions(where, options);
        }
        const ref = poolObject(where, 'cache', cache, KVCache, this);
        return {
          args: [x, ref, this.argument(where, 'memory', memory, PrecomputedKeyValue), options],
          around: (job) => cache.step(job, (length) => length + tokens),
        };
      });
  }

  createKVCache(options) {
    return this.invoke('createKVCache', false, [options], [ARGUMENTS.cacheOptions],
      (where, args) => {
        const { batch, maxLength } = readCacheOptions(where, args[0]);
        return { args, made: new KVCache(this.context, this.shards, batch, maxLength) };
      });
  }

  precomputeMemory(memory, options) {
    return this.invoke('precomputeMemory', true, [memory, options],
      [tensor, ARGUMENTS.precomputeOptions], (where, args) => {
        const m = readTensor(where, 'memory', args[0]);
        return {
          args, made: new PrecomputedKeyValue(this.context, this.shards, m.batch, m.tokens),
        };
      });
  }
}

// A block (a layer as a list of sublayers) whole in one worker.
class TransformerBlock extends Layer {
  // forward(x, options) or, for a block with cross-attention, forward(x,
  // memory, options): as the synchronous block tells them apart.
  forward(x, memoryOrOptions, options) {
    const memory = options !== undefined || ArrayBuffer.isView(memoryOrOptions?.data);
    const [given, schemas] = memory
      ? [[x, memoryOrOptions, options], [tensor, tensor, ARGUMENTS.blockOptions]]
      : [[x, memoryOrOptions], [tensor, ARGUMENTS.blockOptions]];
    return this.invoke('forward', true, given, schemas, (where, args) => {
      readTensor(where, 'x', args[0]);
      return { args };
    });
  }

  forwardIncremental(x, cache, options) {
    return this.invoke('forwardIncremental', true, [x, cache, options],
      [tensor, whole, ARGUMENTS.selfAttentionOptions], (where, [x, cache, options]) => {
        const { tokens } = readTensor(where, 'x', x);
        const ref = poolObject(where, 'cache', cache, KVCache, this);
        return { args: [x, ref, options], around: (job) => cache.step(job, (n) => n + tokens) };
      });
  }

  createKVCache(options) {
    return this.invoke('createKVCache', false, [options], [ARGUMENTS.cacheOptions],
      (where, args) => {
        const { batch, maxLength } = readCacheOptions(where, args[0]);
        return { args, made: new KVCache(this.context, this.shards, batch, maxLength) };
      });
  }
}

checkReceivers(TransformerEncoderLayer, 'TransformerEncoderLayer');
checkReceivers(TransformerDecoderLayer, 'TransformerDecoderLayer');
checkReceivers(TransformerBlock, 'TransformerBlock');

// A layer of `kind` whole in the worker of the pool of `context` holding the
// fewest layers; config: as given, checked by worker 0 already.
export async function createWholeLayer(context, kind, config) {
  const { workers, layersHeld } = context;
  const worker = layersHeld.indexOf(Math.min(...layersHeld));
  const ref = context.newRef();
  const [made] = await workers.all([worker], () => ({ op: 'new', ref, kind, config }));
  layersHeld[worker] += 1;
  const Class = { TransformerEncoderLayer, TransformerDecoderLayer, TransformerBlock }[kind];
  return new Class(context, ref, kind, worker, made);
}
