// The parts of a split layer's or block's sublayers besides the pool's
// MultiHeadAttention: an FFN or gated FFN split by hidden units, and the
// norms and residual sum of a sublayer, held by the workers of its mixer.
import { PoolObject } from './pool-object.js';
import { splitUnits } from './pool-split.js';
import { columns, quantizedWhole, rowRange } from './weight-forms.js';

// Hidden units [from, to) of an FFN (or gated FFN: `split`, a row's ffn of
// MIXER_SPLITS, pool-block-mixers.js) in each of its workers: a contiguous
// group each (groups differ by at most one unit), with their columns of the
// column matrices, entries of the unit biases and rows of the row matrices;
// the output bias goes with the first group.
export class FeedForwardShards extends PoolObject {
  #d;
  #units;
  #type; // config.weights
  #split;

  constructor(context, shards, dModel, units, type, split) {
    super(context, context.newRef(), shards);
    this.#d = dModel;
    this.#units = units;
    this.#type = type;
    this.#split = split;
  }

  // config: the layer's or block's, as its synchronous object resolved it,
  // sent whole (the glue reads what an FFN takes), each worker's ffnDim its
  // units.
  static async create(context, config, split) {
    const { dModel, ffnDim, weights } = config;
    const shards = splitUnits(ffnDim, context.workers.count).map(({ worker, from, to }) =>
      ({ worker, units: [from, to] }));
    const ffn = new FeedForwardShards(context, shards, dModel, ffnDim, weights, split);
    await context.workers.all(shards.map((s) => s.worker), (i) => ({
      op: 'new', ref: ffn.ref, kind: split.part,
      config: { ...config, ffnDim: shards[i].units[1] - shards[i].units[0] },
    }));
    return ffn;
  }

  // Weights that fit, by the split's keys (int8 row matrices quantized
  // whole first: see quantizedWhole); a bias not given is zeros, so that
  // the partial outputs add up to the FFN's output.
  async setWeights(w) {
    const [d, f] = [this.#d, this.#units];
    const { columns: cols, unitBiases, rows, outputBias } = this.#split;
    const whole = {};
    for (const key of rows) {
      whole[key] = await quantizedWhole(w[key], [f, d], this.#type, this.shards.length,
        this.context.quantizeInt8);
    }
    const bias = (key, n) => w[key] ?? new Float32Array(n);
    return this.sendWeights(this.shards.map(({ units: [from, to] }, i) => ({
      ...Object.fromEntries(cols.map((key) => [key, columns(w[key], d, f, from, to)])),
      ...Object.fromEntries(unitBiases.map((key) => [key, bias(key, f).slice(from, to)])),
      ...Object.fromEntries(rows.map((key) => [key, rowRange(whole[key], d, from, to)])),
      [outputBias]: i === 0 ? Float32Array.from(bias(outputBias, d)) : new Float32Array(d),
    })));
  }

  // The FFN as a sublayer: h { data, shape } -> the next h.
  forward(h, sublayer) {
    return this.gather('forward', [h], undefined, sublayer);
  }
}

// The norms and residual sum of one sublayer, held by each worker of the
// sublayer's part (pool-worker.js, SublayerNorm).
export class SublayerNorm extends PoolObject {
  constructor(context, shards) {
    super(context, context.newRef(), shards);
  }

  // config { dModel, eps, norm, placement, layerForm, backend }
  // (bindings/sublayer_norm_binding.cc).
  static async create(part, config) {
    const norm = new SublayerNorm(part.context, part.shards);
    await part.workers.all(part.shards.map((s) => s.worker), () => ({
      op: 'new', ref: norm.ref, kind: 'SublayerNorm', config,
    }));
    return norm;
  }

  // w { gamma, beta? }, named `name` ('norm1', ...) as in the layer; a
  // sandwich's output norm's `out`, named `outName`.
  setWeights(w, name, out, outName) {
    return this.workers.all(this.shards.map((s) => s.worker),
      () => ({ op: 'call', ref: this.ref, method: 'setWeights', args: [w, name, out, outName] }));
  }
}
