// Where the pool puts a layer: split over its workers (pool-split-layers.js)
// or whole in one of them (pool-whole-layers.js), as options.placement says,
// by default as the cost rule below picks.
import { checkObject, describe } from './arguments.js';
import { OPTION_KEYS } from './option-keys.js';
import { ARGUMENTS, copyArguments } from './pool-arguments.js';
import { splitUnits } from './pool-split.js';
import { createSplitLayer } from './pool-split-layers.js';
import { createWholeLayer } from './pool-whole-layers.js';

// Where a layer goes when the caller does not say: whole in one worker, or
// split over the workers (attention by heads, FFN by hidden units). Split,
// a call computes on every worker at once but makes one round trip to the
// workers per sublayer (encoder 2, decoder 3) instead of one, each waiting
// for the workers' parts to reach the one that sums them. So a layer is
// split iff the compute that splitting takes off the busiest worker, for the
// tokens of a typical call, exceeds those extra round trips:
//   saved = tokens * (A * (1 - maxHeads / kvHeads) + 4 d f (1 - maxUnits / f))
//   split iff saved > (sublayers - 1) * ROUND_TRIP_FLOPS
// where A = attentions * 4 d (d + kvWidth) is the attentions' projections
// per token (the scores, which grow with the keys, are left out: they only
// favour splitting), f = ffnDim, maxHeads / maxUnits the most key/value
// heads / hidden units one worker holds, tokens = ENCODER_CALL_TOKENS for an
// encoder (a batch of sequences per call) and 1 for a decoder (a decoding
// step, its common call). ROUND_TRIP_FLOPS is what one core computes while
// a call goes to the workers and back: 0.22 ms per round trip of a pool of 2
// in Node at ~29 GFLOP/s of the SIMD build's layer (measured on a
// d = 256 encoder layer), about 6.4e6. So a BERT-base encoder (768, 3072) is
// split, a d = 64 one stays whole, and decoders stay whole up to d ~ 1024
// (a step's compute barely covers two more round trips).
const ROUND_TRIP_FLOPS = 6.4e6;
const ENCODER_CALL_TOKENS = 64;

function layerPlacement(kind, c, workers) {
  if (workers === 1) return 'whole';
  const most = (units) => Math.max(...splitUnits(units, workers).map(({ from, to }) => to - from));
  const d = c.dModel;
  const f = c.ffnDim;
  const encoder = kind === 'TransformerEncoderLayer';
  const attentions = encoder ? 1 : 2;
  const perToken = attentions * 4 * d * (d + c.numKvHeads * c.headDim) *
    (1 - most(c.numKvHeads) / c.numKvHeads) + 4 * d * f * (1 - most(f) / f);
  const tokens = encoder ? ENCODER_CALL_TOKENS : 1;
  return tokens * perToken > attentions * ROUND_TRIP_FLOPS ? 'split' : 'whole';
}

// options.placement of a pool's layer: 'split', 'whole' or undefined (the
// cost rule's choice).
function readPlacement(where, options) {
  if (options === undefined) return undefined;
  checkObject(where, 'options', options, OPTION_KEYS.PooledLayerOptions);
  const { placement } = options;
  if (placement !== undefined && placement !== 'split' && placement !== 'whole') {
    throw new TypeError(`${where}: options.placement: expected 'split' or 'whole', got ` +
      `${describe(placement)}`);
  }
  return placement;
}

// A TransformerBlock of the pool of `context`, whole in one worker; worker 0
// checks its config first, as the synchronous block.
export async function createBlock(context, givenConfig) {
  const kind = 'TransformerBlock';
  const taken = copyArguments([givenConfig], [ARGUMENTS.blockConfig]);
  context.workers.check(kind);
  const [config] = taken();
  checkObject(kind, 'config', config, OPTION_KEYS.TransformerBlockConfig);
  await context.workers.all([0], () => ({ op: 'check', kind, config }));
  return createWholeLayer(context, kind, config);
}

// A TransformerEncoderLayer or TransformerDecoderLayer (`kind`) of the pool
// of `context`, placed as `givenPlacement` ({ placement }) says.
export async function createLayer(context, kind, givenConfig, givenPlacement) {
  const { workers } = context;
  const taken = copyArguments([givenConfig, givenPlacement],
    [ARGUMENTS.layerConfig, ARGUMENTS.placement]);
  workers.check(kind);
  const [config, placement] = taken();
  checkObject(kind, 'config', config, OPTION_KEYS.TransformerLayerConfig);
  const chosen = readPlacement(kind, placement);
  // Worker 0 checks the config and resolves it, as the synchronous layer.
  const [resolved] = await workers.all([0], () => ({ op: 'check', kind, config }));
  if ((chosen ?? layerPlacement(kind, resolved.config, workers.count)) === 'split') {
    return createSplitLayer(context, kind, config, resolved);
  }
  return createWholeLayer(context, kind, config);
}
