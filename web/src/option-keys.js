// Every key the package accepts in an options, config or weights object, in
// the order its messages list them. One table, keyed by the name of the
// interface in index.d.ts that documents the same object, so that a test
// (tests/types/option-keys.test.mjs) can compare both with the TypeScript
// compiler: a key renamed on one side only fails there.

const ATTENTION_WEIGHTS = ['wQ', 'wK', 'wV', 'wO', 'bQ', 'bK', 'bV', 'bO'];
const FEED_FORWARD_WEIGHTS = ['w1', 'b1', 'w2', 'b2'];
const LAYER_NORM_WEIGHTS = ['gamma', 'beta'];
// The weights that are matrices: they may come in config.weights' type.
export const WEIGHT_MATRICES = ['wQ', 'wK', 'wV', 'wO', 'w1', 'w2'];
// QK-norm's scales, [headDim] each (config.qkNorm).
const QK_NORM_WEIGHTS = ['qNorm', 'kNorm'];
// What every block config names (TransformerBlock, TransformerStack).
const BLOCK_CONFIG = ['dModel', 'numHeads', 'numKvHeads', 'headDim', 'ffnDim', 'numExperts',
  'expertsPerToken', 'normalizeTopK', 'activation', 'norm', 'eps', 'rope', 'qkNorm', 'sublayers',
  'backend', 'threads', 'weights', 'cacheType'];
// A layer's self-attention options besides causal and key padding.
const SELF_ATTENTION_OPTIONS = ['window', 'scale', 'softcap', 'attnMask', 'boolMask',
  'kvLengths'];

// nn.MultiheadAttention's state_dict names inside a torch layer.
const TORCH_LAYER_ATTENTION = ['in_proj_weight', 'q_proj_weight', 'k_proj_weight',
  'v_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias'];
const torchLayerState = (attentions, norms) => [
  ...attentions.flatMap((a) => TORCH_LAYER_ATTENTION.map((k) => `${a}.${k}`)),
  'linear1.weight', 'linear1.bias', 'linear2.weight', 'linear2.bias',
  ...norms.flatMap((n) => [`${n}.weight`, `${n}.bias`]),
];

// A layer's weights: group -> the keys of that group.
export const ENCODER_WEIGHT_GROUPS = {
  attention: ATTENTION_WEIGHTS, ffn: FEED_FORWARD_WEIGHTS, norm1: LAYER_NORM_WEIGHTS,
  norm2: LAYER_NORM_WEIGHTS,
};
export const DECODER_WEIGHT_GROUPS = {
  selfAttention: ATTENTION_WEIGHTS, crossAttention: ATTENTION_WEIGHTS,
  ffn: FEED_FORWARD_WEIGHTS, norm1: LAYER_NORM_WEIGHTS, norm2: LAYER_NORM_WEIGHTS,
  norm3: LAYER_NORM_WEIGHTS,
};

export const OPTION_KEYS = {
  AttentionModuleOptions: ['backend', 'simd', 'relaxedSimd', 'threads', 'wasmPath', 'training'],
  AttentionEntryOptions: ['backend', 'simd', 'relaxedSimd', 'threads', 'wasmPath'],
  MultiHeadAttentionConfig: ['dModel', 'numHeads', 'kDim', 'vDim', 'headDim', 'headDimV',
    'numKvHeads', 'rope', 'qkNorm', 'bias', 'backend', 'threads', 'weights', 'cacheType'],
  RopeConfig: ['style', 'base', 'rotaryDim'],
  QkNormConfig: ['kind', 'eps'],
  MultiHeadAttentionWeights: [...ATTENTION_WEIGHTS, ...QK_NORM_WEIGHTS],
  Int8Weights: ['values', 'scales'],
  Q4Weights: ['q4'],
  PyTorchMultiheadAttentionState: ['in_proj_weight', 'q_proj_weight', 'k_proj_weight',
    'v_proj_weight', 'in_proj_bias', 'out_proj_weight', 'out_proj.weight', 'out_proj_bias',
    'out_proj.bias'],
  ForwardOptions: ['causal', 'keyPaddingMask', 'kvLengths', 'attnMask', 'boolMask',
    'returnAttnWeights', 'returnScores', 'returnPerHeadOutput', 'returnIntermediates', 'window',
    'scale', 'softcap', 'queryOffset', 'positionOffset', 'training'],
  IncrementalForwardOptions: ['keyPaddingMask', 'kvLengths', 'attnMask', 'boolMask',
    'returnAttnWeights', 'returnScores', 'returnPerHeadOutput', 'returnIntermediates', 'window',
    'scale', 'softcap'],
  KVCacheOptions: ['batch', 'maxLength'],
  PrecomputeOptions: ['keyPaddingMask'],
  TransformerLayerConfig: ['dModel', 'numHeads', 'ffnDim', 'normFirst', 'activation', 'eps',
    'backend', 'threads', 'numKvHeads', 'rope', 'weights', 'cacheType'],
  LayerAttentionWeights: ATTENTION_WEIGHTS,
  FeedForwardWeights: FEED_FORWARD_WEIGHTS,
  LayerNormWeights: LAYER_NORM_WEIGHTS,
  LayerNormOptions: ['gamma', 'beta', 'eps', 'backend'],
  TransformerEncoderLayerWeights: Object.keys(ENCODER_WEIGHT_GROUPS),
  TransformerDecoderLayerWeights: Object.keys(DECODER_WEIGHT_GROUPS),
  EncoderForwardOptions: ['keyPaddingMask', 'causal', ...SELF_ATTENTION_OPTIONS, 'training'],
  DecoderForwardOptions: ['causal', 'keyPaddingMask', 'memoryKeyPaddingMask',
    ...SELF_ATTENTION_OPTIONS, 'training'],
  SelfAttentionOptions: SELF_ATTENTION_OPTIONS,
  TransformerBlockConfig: BLOCK_CONFIG,
  SublayerConfig: ['mixer', 'norm', 'parallel'],
  TransformerStackConfig: [...BLOCK_CONFIG, 'numLayers', 'layerWindows', 'finalNorm'],
  TransformerBlockWeights: ['sublayers'],
  BlockNormWeights: LAYER_NORM_WEIGHTS,
  SublayerWeights: ['norm', 'outputNorm', 'attention', 'ffn', 'gatedFfn', 'moe'],
  GatedFeedForwardWeights: ['wGate', 'wUp', 'wDown', 'bGate', 'bUp', 'bDown'],
  MixtureOfExpertsWeights: ['router', 'experts'],
  TransformerStackWeights: ['layers', 'finalNorm'],
  BlockForwardOptions: ['causal', 'keyPaddingMask', 'memoryKeyPaddingMask', 'positionOffset',
    ...SELF_ATTENTION_OPTIONS],
  BlockTrainingForwardOptions: ['causal', 'keyPaddingMask', 'memoryKeyPaddingMask',
    'positionOffset', ...SELF_ATTENTION_OPTIONS, 'training'],
  StackForwardOptions: ['causal', 'keyPaddingMask', 'positionOffset', ...SELF_ATTENTION_OPTIONS],
  StackTrainingForwardOptions: ['causal', 'keyPaddingMask', 'positionOffset',
    ...SELF_ATTENTION_OPTIONS, 'training'],
  PyTorchTransformerEncoderLayerState: torchLayerState(['self_attn'], ['norm1', 'norm2']),
  PyTorchTransformerDecoderLayerState: torchLayerState(['self_attn', 'multihead_attn'],
    ['norm1', 'norm2', 'norm3']),
  LoadCheckpointOptions: ['prefix', 'layout', 'allowUnused'],
  FromPretrainedOptions: ['prefix', 'backend', 'weights', 'cacheType'],
  SafetensorsOptions: ['keep16Bit'],
  PooledLayerOptions: ['placement'],
  SGDOptions: ['lr', 'momentum', 'weightDecay', 'nesterov'],
  TinyTransformerConfig: ['vocab', 'dModel', 'numHeads', 'numLayers', 'maxTokens', 'ffnDim',
    'activation', 'seed', 'backend'],
  TinyForwardOptions: ['targets', 'training', 'returnAttnWeights'],
  TinyTransformerWeights: ['embedding', 'layers', 'unembedding', 'unembeddingBias'],
  TinyTransformerLayerWeights: [...ATTENTION_WEIGHTS, ...FEED_FORWARD_WEIGHTS],
  AdamOptions: ['lr', 'beta1', 'beta2', 'eps', 'weightDecay', 'decoupledWeightDecay'],
  AttentionOptions: ['causal', 'scale', 'softcap', 'window', 'attnMask', 'boolMask',
    'keyPaddingMask', 'kvLengths', 'queryOffset', 'numHeads', 'numKvHeads', 'returnAttnWeights',
    'returnScores', 'backend'],
};
