// Where the pool puts a layer or block: split over its workers
// (pool-split-layers.js, pool-split-blocks.js) or whole in one of them
// (pool-whole-layers.js), as options.placement says, by default as the cost
// rule below picks.
import { checkObject, describe } from './arguments.js';
import { OPTION_KEYS } from './option-keys.js';
import { ARGUMENTS, copyArguments } from './pool-arguments.js';
import { MIXER_SPLITS } from './pool-block-mixers.js';
import { splitUnits } from './pool-split.js';
import { canSplitBlock, createSplitBlock } from './pool-split-blocks.js';
import { createStack } from './pool-stacks.js';
import { createSplitLayer } from './pool-split-layers.js';
import { createWholeLayer } from './pool-whole-layers.js';

// Where a layer or block goes when the caller does not say: whole in one
// worker, or split over the workers (attention by heads, FFN by hidden
// units). Split, a call computes on every worker at once but makes one
// round trip to the workers per sublayer instead of one, each waiting for
// the workers' parts to reach the one that sums them. So it is split iff the
// compute that splitting takes off the busiest worker, for the tokens of a
// typical call, exceeds those extra round trips:
//   saved = tokens * (A * (1 - maxHeads / kvHeads) + M 2 d f (1 - maxUnits / f))
//   split iff saved > (sublayers - 1) * ROUND_TRIP_FLOPS
// where A = attentions * 4 d (d + kvWidth) is the attentions' projections
// per token (the scores, which grow with the keys, are left out: they only
// favour splitting), M the FFNs' matrices (2 an FFN, 3 a gated one), f =
// ffnDim, maxHeads / maxUnits the most key/value heads / hidden units one
// worker holds, tokens = ENCODER_CALL_TOKENS for an encoder layer (a batch
// of sequences per call) and 1 for a decoder layer or a block (a decoding
// step, the common call of the decoder-only blocks blocks are made for).
// ROUND_TRIP_FLOPS is what one core computes while a call goes to the
// workers and back: 0.22 ms per round trip of a pool of 2 in Node at ~29
// GFLOP/s of the SIMD build's layer (measured on a d = 256 encoder layer),
// about 6.4e6. So a BERT-base encoder (768, 3072) is split, a d = 64 one
// stays whole, and decoders stay whole up to d ~ 1024 (a step's compute
// barely covers two more round trips).
const ROUND_TRIP_FLOPS = 6.4e6;
const ENCODER_CALL_TOKENS = 64;

// shape { attentions, ffnMatrices, sublayers, tokens } as above.
function placementByCost(c, workers, { attentions, ffnMatrices, sublayers, tokens }) {
  if (workers === 1) return 'whole';
  const most = (units) => Math.max(...splitUnits(units, workers).map(({ from, to }) => to - from));
  const d = c.dModel;
  const f = c.ffnDim;
  const kvSplit = 1 - most(c.numKvHeads) / c.numKvHeads;
  const perToken = attentions * 4 * d * (d + c.numKvHeads * c.headDim) * kvSplit +
    (ffnMatrices > 0 ? ffnMatrices * 2 * d * f * (1 - most(f) / f) : 0);
  return tokens * perToken > (sublayers - 1) * ROUND_TRIP_FLOPS ? 'split' : 'whole';
}

function layerPlacement(kind, c, workers) {
  const encoder = kind === 'TransformerEncoderLayer';
  const attentions = encoder ? 1 : 2;
  return placementByCost(c, workers, { attentions, ffnMatrices: 2, sublayers: attentions + 1,
    tokens: encoder ? ENCODER_CALL_TOKENS : 1 });
}

// A block's placement by the cost rule, from its sublayers' mixers.
function blockPlacement(c, workers) {
  const splits = c.sublayers.map(({ mixer }) => MIXER_SPLITS[mixer]);
  return placementByCost(c, workers, {
    attentions: splits.filter((s) => s.attention !== undefined).length,
    ffnMatrices: splits.reduce((n, { ffn }) => n +
      (ffn === undefined ? 0 : ffn.columns.length + ffn.rows.length), 0),
    sublayers: splits.length,
    tokens: 1,
  });
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

// The config and placement given for an object of `kind` of the pool of
// `context`, copied (`schema`: the config's) and type-checked (`keys`: the
// config's), and the config as worker 0's synchronous object resolves it:
// { config, placement (as given), chosen ('split', 'whole' or undefined),
// resolved }.
async function readCreation(context, kind, givenConfig, givenPlacement, schema, keys) {
  const { workers } = context;
  const taken = copyArguments([givenConfig, givenPlacement], [schema, ARGUMENTS.placement]);
  workers.check(kind);
  const [config, placement] = taken();
  checkObject(kind, 'config', config, keys);
  const chosen = readPlacement(kind, placement);
  const [resolved] = await workers.all([0], () => ({ op: 'check', kind, config }));
  return { config, placement, chosen, resolved };
}

// A TransformerBlock of the pool of `context`, placed as `givenPlacement`
// ({ placement }) says, whole where the pool cannot split it
// (canSplitBlock).
export async function createBlock(context, givenConfig, givenPlacement) {
  const kind = 'TransformerBlock';
  const { config, chosen, resolved } = await readCreation(context, kind, givenConfig,
    givenPlacement, ARGUMENTS.blockConfig, OPTION_KEYS.TransformerBlockConfig);
  if (canSplitBlock(resolved.config) &&
      (chosen ?? blockPlacement(resolved.config, context.workers.count)) === 'split') {
    return createSplitBlock(context, config, resolved);
  }
  return createWholeLayer(context, kind, config);
}

// A TransformerStack of the pool of `context`, each layer a block placed as
// `givenPlacement` says (createBlock).
export async function createPooledStack(context, givenConfig, givenPlacement) {
  const { config, placement, resolved } = await readCreation(context, 'TransformerStack',
    givenConfig, givenPlacement, ARGUMENTS.blockConfig, OPTION_KEYS.TransformerStackConfig);
  return createStack(context, config, resolved,
    (blockConfig) => createBlock(context, blockConfig, placement));
}

// A TransformerEncoderLayer or TransformerDecoderLayer (`kind`) of the pool
// of `context`, placed as `givenPlacement` ({ placement }) says.
export async function createLayer(context, kind, givenConfig, givenPlacement) {
  const { config, chosen, resolved } = await readCreation(context, kind, givenConfig,
    givenPlacement, ARGUMENTS.layerConfig, OPTION_KEYS.TransformerLayerConfig);
  if ((chosen ?? layerPlacement(kind, resolved.config, context.workers.count)) === 'split') {
    return createSplitLayer(context, kind, config, resolved);
  }
  return createWholeLayer(context, kind, config);
}
