// How the pool splits each mixer a block's sublayer may have (the names of
// module.choices.mixer, C++'s kMixerKinds): an attention by key/value-head
// groups, each worker's query heads with them; a feed-forward network by
// hidden units. A block whose sublayers name a mixer without a row here
// runs whole in one worker (pool-layer-placement.js); such a mixer has its
// zero weights in WHOLE_MIXER_ZEROS, for the stand-ins.
//   group: the key of the mixer's weights in the block's sublayer weights
//   attention: { memory }: an attention, over a memory (cross-attention:
//     no rotary positions or QK-norm, as C++'s AttentionConfig) or not
//   ffn: the FFN's weights by how they split: `columns` [dModel, ffnDim]
//     by columns, `unitBiases` [ffnDim] by entries, `rows` [ffnDim, dModel]
//     by rows (the same units' together), `outputBias` [dModel] with the
//     first group; `part`, the worker's part that runs a group of units
//     (pool-parts.js)
export const MIXER_SPLITS = {
  self_attention: { group: 'attention', attention: { memory: false } },
  cross_attention: { group: 'attention', attention: { memory: true } },
  ffn: { group: 'ffn', ffn: { part: 'FeedForward', columns: ['w1'], unitBiases: ['b1'],
    rows: ['w2'], outputBias: 'b2' } },
  gated_ffn: { group: 'gatedFfn', ffn: { part: 'GatedFeedForward', columns: ['wGate', 'wUp'],
    unitBiases: ['bGate', 'bUp'], rows: ['wDown'], outputBias: 'bDown' } },
};

// The zero weights of each mixer without a split above (which runs whole),
// for the stand-ins below: [its group, its weights given the resolved
// config and zeros(n)].
const WHOLE_MIXER_ZEROS = {
  moe: ({ dModel: d, ffnDim: f, numExperts: e }, zeros) => ['moe', { router: zeros(d * e),
    experts: Array.from({ length: e }, () => ({ wGate: zeros(d * f), wUp: zeros(d * f),
      wDown: zeros(f * d) })) }],
};

// Zero weights of a block or a stack of `config` (resolved), every bias
// given, for worker 0's synchronous stand-in of a split block or a pooled
// stack; withShift: whether its norm kind has a beta.
export function zeroBlockWeights(config, withShift) {
  if (config.numLayers !== undefined) {
    const { numLayers, finalNorm, ...block } = config;
    const layer = zeroBlockWeights(block, withShift);
    return { layers: Array.from({ length: numLayers }, () => layer),
      ...(finalNorm ? { finalNorm: layer.sublayers[0].norm } : {}) };
  }
  const { dModel: d, numHeads, numKvHeads, headDim, ffnDim: f, qkNorm } = config;
  const zeros = (n) => new Float32Array(n);
  const norm = () => (withShift ? { gamma: zeros(d), beta: zeros(d) } : { gamma: zeros(d) });
  return {
    sublayers: config.sublayers.map(({ mixer }) => {
      if (MIXER_SPLITS[mixer] === undefined) {
        const [group, w] = WHOLE_MIXER_ZEROS[mixer](config, zeros);
        return { norm: norm(), outputNorm: norm(), [group]: w };
      }
      const { group, attention, ffn } = MIXER_SPLITS[mixer];
      let w;
      if (attention !== undefined) {
        const [q, kv] = [numHeads * headDim, numKvHeads * headDim];
        w = { wQ: zeros(d * q), wK: zeros(d * kv), wV: zeros(d * kv), wO: zeros(q * d),
          bQ: zeros(q), bK: zeros(kv), bV: zeros(kv), bO: zeros(d),
          ...(qkNorm !== undefined && !attention.memory
            ? { qNorm: zeros(headDim), kNorm: zeros(headDim) } : {}) };
      } else {
        w = Object.fromEntries([...[...ffn.columns, ...ffn.rows].map((key) => [key, d * f]),
          ...ffn.unitBiases.map((key) => [key, f]), [ffn.outputBias, d]]
          .map(([key, n]) => [key, zeros(n)]));
      }
      // An output norm a sublayer without one ignores.
      return { norm: norm(), outputNorm: norm(), [group]: w };
    }),
  };
}
