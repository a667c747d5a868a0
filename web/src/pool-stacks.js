// The pool's TransformerStack: its layers are the pool's blocks, each placed
// as a block is (split over the workers sublayer by sublayer, or whole in
// the worker holding the fewest layers), its final norm held by worker 0; a
// call runs the layers in turn (a layer's window from config.layerWindows),
// then the final norm. Its checks and errors are the synchronous stack's,
// as every split object's (pool-split-object.js): a layer's error, which
// names the block, is made again by worker 0's synchronous stack.
import { readBlockForwardOptions, readCaches, readIncrementalOptions } from './blocks.js';
import { readCacheOptions } from './caches.js';
import { OPTION_KEYS } from './option-keys.js';
import { ARGUMENTS, tensor, whole } from './pool-arguments.js';
import { standIn } from './pool-key-values.js';
import { checkReceivers } from './pool-object.js';
import { SplitObject } from './pool-split-object.js';
import { SublayerNorm } from './pool-sublayer-parts.js';
import { readTensor } from './tensors.js';

const KIND = 'TransformerStack';

// The stand-ins of a stack's caches for worker 0's synchronous stack: one
// per cache, the same one where a cache is given twice.
function cachesStandIn(caches) {
  if (!Array.isArray(caches)) return caches;
  const made = new Map();
  return caches.map((c) => {
    if (!made.has(c)) made.set(c, standIn(c));
    return made.get(c);
  });
}

class TransformerStack extends SplitObject {
  #layers;
  #finalNorm; // a SublayerNorm in worker 0, or undefined

  constructor(context, given, resolved, layers, finalNorm) {
    super(context, KIND, given, resolved, finalNorm === undefined ? layers
      : [...layers, finalNorm]);
    this.#layers = layers;
    this.#finalNorm = finalNorm;
  }

  // Its layers' placement.
  get placement() { return this.#layers[0].placement; }

  // Worker 0's synchronous stack judges the weights whole first; then each
  // layer's go to its block.
  setWeights(weights) {
    return this.run('setWeights', false, [weights], [ARGUMENTS.TransformerStack.weights],
      async (where, [w]) => {
        await this.synchronousError(where, 'setWeights', [w], {});
        await Promise.all([...this.#layers.map((layer, i) => layer.setWeights(w.layers[i])),
          this.#finalNorm?.setWeights(w.finalNorm, 'finalNorm')]);
        this.weightsSet();
      });
  }

  // The options of layer i: the caller's, with the layer's window.
  #layerOptions(i, options) {
    const windows = this.config.layerWindows;
    return windows === undefined ? options : { ...options, window: windows[i] };
  }

  // h after the layers, through the final norm.
  async #finish(where, h, shape) {
    const data = this.#finalNorm === undefined ? h.data
      : (await this.#finalNorm.call('input', [where, h]))[0];
    return { data, shape: [...shape] };
  }

  forward(x, options) {
    return this.run('forward', true, [x, options], [tensor, ARGUMENTS.stackOptions],
      async (where, [x, options]) => {
        readTensor(where, 'x', x);
        readBlockForwardOptions(where, options, OPTION_KEYS.StackForwardOptions);
        let h = x;
        for (const [i, layer] of this.#layers.entries()) {
          h = await layer.forward(h, this.#layerOptions(i, options));
        }
        return this.#finish(where, h, x.shape);
      });
  }

  // One KVCache per layer, in order.
  createKVCaches(options) {
    return this.run('createKVCaches', false, [options], [ARGUMENTS.cacheOptions],
      async (where, [options]) => {
        readCacheOptions(where, options);
        const made = [];
        try {
          for (const layer of this.#layers) made.push(await layer.createKVCache(options));
        } catch (e) {
          await Promise.all(made.map((c) => c.dispose()));
          throw e;
        }
        return made;
      });
  }

  // A failed step leaves every cache as it was.
  forwardIncremental(x, caches, options) {
    return this.run('forwardIncremental', true, [x, caches, options],
      [tensor, whole, ARGUMENTS.selfAttentionOptions], async (where, [x, caches, options]) => {
        readTensor(where, 'x', x);
        readCaches(where, caches, this.#layers.length);
        readIncrementalOptions(where, options);
        // One cache per layer: a cache given twice is the synchronous error.
        if (new Set(caches).size !== caches.length) {
          await this.synchronousError(where, 'forwardIncremental',
            [x, cachesStandIn(caches), options], { zeroWeights: true });
        }
        const before = caches.map((c) => (c.disposed ? 0 : c.length));
        let h = x;
        try {
          for (const [i, layer] of this.#layers.entries()) {
            h = await layer.forwardIncremental(h, caches[i], this.#layerOptions(i, options));
          }
          return await this.#finish(where, h, x.shape);
        } catch (e) {
          await Promise.all(caches.map((c, i) => (!c.disposed && c.length > before[i]
            ? c.truncate(before[i]) : undefined)));
          throw e;
        }
      }, ([x, caches, options]) => [x, cachesStandIn(caches), options]);
  }
}

checkReceivers(TransformerStack, KIND);

// A stack of the pool of `context`, its layers made by
// createLayerBlock(blockConfig) (a pooled block, placed); given: its config
// as the caller gave it; resolved: as worker 0's synchronous stack reports
// it.
export async function createStack(context, given, resolved, createLayerBlock) {
  const c = resolved.config;
  const { numLayers, layerWindows, finalNorm, ...blockConfig } = given;
  const made = [];
  try {
    for (let i = 0; i < c.numLayers; ++i) made.push(await createLayerBlock(blockConfig));
    const norm = c.finalNorm
      ? await SublayerNorm.create({ context, workers: context.workers, shards: [{ worker: 0 }] },
        { dModel: c.dModel, eps: c.eps, norm: c.norm, placement: 'pre', layerForm: false,
          backend: c.backend })
      : undefined;
    return new TransformerStack(context, given, resolved, made, norm);
  } catch (e) {
    await Promise.all(made.map((layer) => layer.dispose()));
    throw e;
  }
}
