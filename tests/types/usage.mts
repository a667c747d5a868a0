// Every public name of web/index.d.ts in use, compiled by `npm run test:types`
// (tsc --noEmit --strict; never run). The @ts-expect-error lines are misuses
// that must not compile: tsc fails if one of them does. coverage.test.mjs
// checks that this file names every member the .d.ts declares.
import createDefault, {
  createAttentionModule, wasmRelaxedSimdSupported, wasmSimdSupported,
  type ActivationName, type AttentionModule, type AttentionModuleOptions, type AttentionOptions,
  type AttentionResult, type AttentionResultFor, type BackendName, type BroadcastMask,
  type BuildName, type DecoderForwardOptions, type EncoderForwardOptions, type SelfAttentionOptions,
  type FeedForwardWeights, type ForwardOptions, type ForwardResult, type ForwardResultFor,
  type IncrementalForwardOptions, type KVCache, type KVCacheOptions,
  type LayerAttentionWeights, type LayerNormOptions, type RopeConfig,
  type CausalAlignmentName, type LayerNormWeights, type MemoryStats,
  type MultiHeadAttention, type MultiHeadAttentionConfig, type MultiHeadAttentionConstructor,
  type MultiHeadAttentionWeights, type PrecomputedKeyValue, type PrecomputeOptions,
  type PyTorchMultiheadAttentionState, type ResolvedMultiHeadAttentionConfig,
  type ResolvedTransformerLayerConfig, type Tensor, type TransformerDecoderLayer,
  type TransformerDecoderLayerConstructor, type TransformerDecoderLayerWeights,
  type TransformerEncoderLayer, type TransformerEncoderLayerConstructor,
  type TransformerEncoderLayerWeights, type TransformerLayerBase, type TransformerLayerConfig,
  type URLLike, type BytesByCacheType, type BytesByWeightType, type HalfBits, type Int8Weights,
  type Q4Weights,
  type TorchMatrix, type WeightMatrix, type WeightTypeName, type CacheTypeName,
  type ScoresStageName, type AttentionEntryOptions, type AttentionOnlyModule,
} from '../../web/index.js';
import createAttentionOnlyDefault, { createAttentionModule as createAttentionOnly }
  from '../../web/attention.js';
import {
  dequantizeQ4, ggufQ4Weights, matMulNBitsQ4Weights, Q4_BLOCK_BYTES, Q4_BLOCK_ROWS,
  type GgufTensorInfo, type MatMulNBitsWeights,
} from '../../web/quantized-weights.js';
import {
  type AdamOptions, type AttentionWeightGradients, type BlockNormGradients,
  type FeedForwardGradients, type GatedFeedForwardGradients, type MixtureOfExpertsGradients,
  type SublayerGradients,
  type TransformerBlockGradients, type TransformerStackGradients,
  type LayerNormGradients, type MultiHeadAttentionGradients, type Optimizer,
  type OptimizerConstructor, type SGDOptions, type Trainable,
  type TransformerDecoderLayerGradients, type TransformerEncoderLayerGradients,
  type TinyTransformer, type TinyTransformerConfig, type TinyTransformerConstructor,
  type ResolvedTinyTransformerConfig, type TokenIds, type TinyForwardOptions,
  type TinyForwardResult, type TinyTransformerWeights, type TinyTransformerLayerWeights,
} from '../../web/index.js';
import {
  createAttentionPool, type AttentionPool, type PooledKVCache, type PooledMultiHeadAttention,
  type PooledPrecomputedKeyValue, type PooledTransformerDecoderLayer,
  type PooledTransformerEncoderLayer, type PooledTransformerLayerBase, type PooledLayerOptions,
} from '../../web/index.js';
import {
  loadCheckpoint, parseSafetensors, readSafetensors, SafetensorsFile, type CheckpointLayout,
  type CheckpointTensor, type CheckpointTensors, type LoadCheckpointOptions,
  type LoadCheckpointResult, type PyTorchTransformerDecoderLayerState,
  type PyTorchTransformerEncoderLayerState, type ResponseLike, type SafetensorsDtype,
  type SafetensorsTensorInfo, type CheckpointBitsTensor, type SafetensorsOptions,
  type FromPretrainedOptions, type HuggingFaceConfig, type PretrainedAttention,
  type PretrainedDecoderLayer, type PretrainedEncoderLayer, type PretrainedModule,
  type PooledPretrainedModule, type PretrainedBlock, type PretrainedStack,
} from '../../web/index.js';
import type { ResolvedAttentionFields } from '../../web/index.js';
import {
  type BlockForwardOptions, type BlockNormWeights, type BlockTrainingForwardOptions,
  type GatedFeedForwardWeights, type MixerName, type MixtureOfExpertsWeights,
  type ModuleChoices, type NormKindName,
  type NormPlacementName, type PooledPlacedObject, type PooledTransformerBlock,
  type PooledTransformerStack, type QkNormConfig,
  type ResolvedActivationName, type ResolvedTransformerBlockConfig,
  type ResolvedTransformerStackConfig, type StackForwardOptions,
  type StackTrainingForwardOptions, type SublayerConfig,
  type SublayerWeights, type TransformerBlock, type TransformerBlockConfig,
  type TransformerBlockConstructor, type TransformerBlockWeights, type TransformerStack,
  type TransformerStackConfig, type TransformerStackConstructor, type TransformerStackWeights,
} from '../../web/index.js';

const f32 = (n: number) => new Float32Array(n);
const mask = (n: number) => new Uint8Array(n).fill(1);

// The module.
const backend: BackendName = 'highway';
const wasmPath: URLLike = { href: 'file:///opt/simd-attention/dist/' };
const moduleOptions: AttentionModuleOptions = {
  backend, simd: wasmSimdSupported(), relaxedSimd: wasmRelaxedSimdSupported(), threads: 2, wasmPath,
};
const create: typeof createAttentionModule = createDefault;
void create({ wasmPath: '/opt/simd-attention/dist' });
const sa: AttentionModule = await createAttentionModule(moduleOptions);
// The attention entry: the same options but training, a module with attention alone.
const entryOptions: AttentionEntryOptions = { backend, threads: 1, wasmPath };
const createLean: typeof createAttentionOnly = createAttentionOnlyDefault;
const lean: AttentionOnlyModule = await createLean(entryOptions);
const everyModuleIsOne: AttentionOnlyModule = sa;
void everyModuleIsOne;
// @ts-expect-error the attention entry has no training build
void createAttentionOnly({ training: true });
// @ts-expect-error its module has no layers
void lean.TransformerBlock;
void new lean.MultiHeadAttention({ dModel: 8, numHeads: 2 });
const build: BuildName = sa.build;
const moduleFacts: [string, boolean, string[], string] = [sa.backend, sa.simd, sa.backends,
  sa.kernels];
const threading: [number, string | undefined] = [sa.threads, sa.threadsUnavailable];
const threadsRunning: Promise<void> = sa.threadsReady; // every thread started
const stats: MemoryStats = sa.memoryStats();
const weightBytes: BytesByWeightType = stats.weightBytes;
const cacheBytes: BytesByCacheType = stats.cacheBytes;
const bytes: number[] = [stats.heapBytes, stats.maxHeapBytes, stats.allocatedBytes,
  stats.jsHandles, weightBytes.f32, weightBytes.f16, weightBytes.bf16, weightBytes.int8,
  weightBytes.q4, cacheBytes.f32, cacheBytes.f16, cacheBytes.bf16,
  cacheBytes.int8];

// MultiHeadAttention.
const MHA: MultiHeadAttentionConstructor = sa.MultiHeadAttention;
const rope: RopeConfig = { style: 'half', base: 10000, rotaryDim: 4 };
const mhaConfig: MultiHeadAttentionConfig = {
  dModel: 8, numHeads: 2, kDim: 8, vDim: 8, headDim: 4, headDimV: 4, numKvHeads: 1, rope,
  bias: true, backend: sa.backend, threads: 1, weights: 'f32', cacheType: 'f16',
  qkNorm: { eps: 1e-6 },
};
const mha: MultiHeadAttention = new MHA(mhaConfig);
const isMha: boolean = mha instanceof MHA && MHA.prototype === Object.getPrototypeOf(mha);
const resolved: ResolvedMultiHeadAttentionConfig = mha.config;
const dims: number[] = [resolved.dModel, resolved.numHeads, resolved.kDim, resolved.vDim,
  resolved.headDim, resolved.headDimV, resolved.numKvHeads];
const resolvedRope: string | undefined = resolved.rope?.style;
const resolvedQkNorm: number | undefined = resolved.qkNorm?.eps;
const mhaFacts: [boolean, string, string, boolean, number, WeightTypeName, CacheTypeName] = [
  resolved.bias, resolved.backend, mha.kernels, mha.disposed, resolved.threads, resolved.weights,
  resolved.cacheType];
const weights: MultiHeadAttentionWeights = {
  wQ: f32(64), wK: f32(64), wV: f32(64), wO: f32(64), bQ: f32(8), bK: f32(8), bV: f32(8),
  bO: f32(8), qNorm: f32(4), kNorm: f32(4),
};
mha.setWeights(weights);
// Weights already in the storage type: float16/bfloat16 bits, int8 values and scales.
const halfBits: HalfBits = new Uint16Array(64);
const int8: Int8Weights = { values: new Int8Array(64), scales: f32(8) };
const stored: WeightMatrix[] = [halfBits, int8, f32(64)];
const narrow = new sa.MultiHeadAttention({ dModel: 8, numHeads: 2, weights: 'int8' });
narrow.setWeights({ ...weights, wQ: int8, wK: stored[2] });
new sa.MultiHeadAttention({ dModel: 8, numHeads: 2, weights: 'q4' }).setWeights(weights);
// q4 blocks: a GGUF q4_0 tensor's, or converted from MatMulNBits' initializers.
const tensorInfo: GgufTensorInfo = { name: 'blk.0.attn_q.weight', shape: [32n, 8n], dtype: 2 };
const q4: Q4Weights = ggufQ4Weights(tensorInfo, new Uint8Array(8 * Q4_BLOCK_BYTES));
const nBits: MatMulNBitsWeights = { B: new Uint8Array(8 * 16), scales: new Uint16Array(8), K: 32,
  N: 8, blockSize: 32, zeroPoints: new Uint8Array(8), bits: 4 };
const q4Dequantized: Float32Array = dequantizeQ4(matMulNBitsQ4Weights(nBits).q4, Q4_BLOCK_ROWS, 8);
new sa.MultiHeadAttention({ dModel: 32, numHeads: 1, weights: 'q4' })
  .setWeights({ ...weights, wQ: q4, wK: q4Dequantized });
// @ts-expect-error: q4 blocks are bytes
ggufQ4Weights(tensorInfo, new Int8Array(144));
const torchBits: TorchMatrix = new Uint16Array(192);
new sa.MultiHeadAttention({ dModel: 8, numHeads: 2, weights: 'bf16' })
  .setWeightsFromPyTorch({ in_proj_weight: torchBits, 'out_proj.weight': halfBits });
const torchState: PyTorchMultiheadAttentionState = {
  in_proj_weight: f32(192), q_proj_weight: f32(64), k_proj_weight: f32(64),
  v_proj_weight: f32(64), in_proj_bias: f32(24), out_proj_weight: f32(64),
  'out_proj.weight': f32(64), out_proj_bias: f32(8), 'out_proj.bias': f32(8),
};
mha.setWeightsFromPyTorch(torchState);

const x: Tensor = { data: f32(40), shape: [5, 8] };
const forwardOptions: ForwardOptions = {
  causal: true, keyPaddingMask: mask(5), attnMask: f32(25), returnAttnWeights: true,
  returnPerHeadOutput: true, returnIntermediates: true, window: [4, 0], scale: 0.5, softcap: 30,
  positionOffset: 2, kvLengths: [5], boolMask: { data: mask(25), shape: [1, 1, 5, 5] },
  returnScores: true, queryOffset: 0,
};
const r: ForwardResult = mha.forward(x, x, x, forwardOptions);
const topLeft: CausalAlignmentName = 'top-left';
mha.forward(x, x, x, { causal: topLeft });
const outputs: (Tensor | undefined)[] = [r.output, r.attnWeights, r.scores, r.perHeadOutput,
  r.q, r.k, r.v, r.headOutput];
mha.forward(x);

const precomputeOptions: PrecomputeOptions = { keyPaddingMask: mask(5) };
const kv: PrecomputedKeyValue = mha.precomputeKeyValue(x, precomputeOptions);
const kvFacts: [number, number, boolean] = [kv.batch, kv.tokens, kv.disposed];
mha.forward(x, kv, undefined, { keyPaddingMask: mask(5) });

const cacheOptions: KVCacheOptions = { batch: 1, maxLength: 16 };
const cache: KVCache = mha.createKVCache(cacheOptions);
const incrementalOptions: IncrementalForwardOptions = {
  keyPaddingMask: mask(5), attnMask: f32(25), returnAttnWeights: true,
  returnPerHeadOutput: true, returnIntermediates: true, window: [4, 0], scale: 0.5, softcap: 30,
  kvLengths: Uint32Array.of(5), boolMask: mask(25), returnScores: true,
};
mha.forwardIncremental(x, cache, incrementalOptions);
const logits: Tensor = mha.forward(x, x, x, { returnScores: true }).scores;
const capped: Tensor = mha.forward(x, x, x, { returnScores: 'capped' }).scores;

// Results typed by their options: what was asked for with `true` is there.
const probabilities: Float32Array = mha.forward(x, x, x, { returnAttnWeights: true })
  .attnWeights.data;
const contributions: Tensor = mha.forward(x, kv, undefined, { returnPerHeadOutput: true })
  .perHeadOutput;
const stepped: ForwardResultFor<true, false, true> = mha.forwardIncremental(x, cache,
  { returnAttnWeights: true, returnIntermediates: true });
const requested: Tensor[] = [stepped.attnWeights, stepped.q, stepped.k, stepped.v,
  stepped.headOutput, contributions, logits, capped];
const cacheFacts: number[] = [cache.batch, cache.maxLength, cache.length];
const saved: [Tensor, Tensor] = [cache.keys(), cache.values()];
cache.truncate(cache.length - 1);
cache.reset();
cache.append(...saved);
const cacheDisposed: boolean = cache.disposed;

// Layers.
const attention: LayerAttentionWeights = {
  wQ: f32(64), wK: f32(64), wV: f32(64), wO: f32(64), bQ: f32(8), bK: f32(8), bV: f32(8),
  bO: f32(8),
};
const ffn: FeedForwardWeights = { w1: f32(128), b1: f32(16), w2: f32(128), b2: f32(8) };
const norm: LayerNormWeights = { gamma: f32(8), beta: f32(8) };
const activation: ActivationName = 'gelu_tanh';
const layerConfig: TransformerLayerConfig = {
  dModel: 8, numHeads: 2, ffnDim: 16, normFirst: true, activation, eps: 1e-6, backend, threads: 0,
  numKvHeads: 1, rope: { style: 'interleaved' }, weights: 'f16', cacheType: 'bf16',
};

const Encoder: TransformerEncoderLayerConstructor = sa.TransformerEncoderLayer;
const encoder: TransformerEncoderLayer = new Encoder(layerConfig);
const encoderWeights: TransformerEncoderLayerWeights = { attention, ffn, norm1: norm,
  norm2: norm };
encoder.setWeights(encoderWeights);
const encoderOptions: EncoderForwardOptions = { keyPaddingMask: mask(5), causal: false,
  window: [2, -1], scale: 0.5, softcap: 20, attnMask: f32(25),
  boolMask: { data: mask(25), shape: [1, 1, 5, 5] }, kvLengths: [5] };
const encoded: Tensor = encoder.forward(x, encoderOptions);
const isEncoder: boolean = Encoder.prototype === Object.getPrototypeOf(encoder);

const Decoder: TransformerDecoderLayerConstructor = sa.TransformerDecoderLayer;
const decoder: TransformerDecoderLayer = new Decoder({ dModel: 8, numHeads: 2, ffnDim: 16 });
const decoderWeights: TransformerDecoderLayerWeights = {
  selfAttention: attention, crossAttention: attention, ffn, norm1: norm, norm2: norm,
  norm3: norm,
};
decoder.setWeights(decoderWeights);
const decoderOptions: DecoderForwardOptions = {
  causal: true, keyPaddingMask: mask(5), memoryKeyPaddingMask: mask(5),
};
decoder.forward(x, encoded, decoderOptions);
const memory: PrecomputedKeyValue = decoder.precomputeMemory(encoded, { keyPaddingMask: mask(5) });
decoder.forward(x, memory, { causal: 'top-left' });
encoder.forward(x, { causal: 'bottom-right' });
const decoderCache: KVCache = decoder.createKVCache({ batch: 1, maxLength: 8 });
const step: Tensor = decoder.forwardIncremental(x, decoderCache, memory);
const selfAttentionOptions: SelfAttentionOptions = { window: [3, 0], softcap: 30 };
decoder.forwardIncremental(x, decoderCache, encoded, selfAttentionOptions);
const isDecoder: boolean = Decoder.prototype === Object.getPrototypeOf(decoder);

// Both layer kinds through their common interface.
for (const layer of [encoder, decoder] as TransformerLayerBase[]) {
  const c: ResolvedTransformerLayerConfig = layer.config;
  const facts: unknown[] = [c.dModel, c.numHeads, c.headDim, c.ffnDim, c.normFirst,
    c.activation, c.eps, c.backend, c.threads, c.numKvHeads, c.rope?.rotaryDim, c.weights,
    c.cacheType, layer.kernels, layer.disposed];
  void facts;
  layer.dispose();
}

// Functions of the module.
const pe: Tensor = sa.positionalEncoding(5, 8);
const layerNormOptions: LayerNormOptions = { gamma: f32(8), beta: f32(8), eps: 1e-5, backend };
const normed: Tensor = sa.layerNorm(pe, layerNormOptions);
// int8 weights quantized as setWeights quantizes them, in the form it takes.
const quantized: Int8Weights = sa.quantizeInt8(f32(64), 8, 8);
narrow.setWeights({ ...weights, wO: quantized });

// Attention on projected heads: 4-D head-major with grouped-query heads, and
// 3-D token-major split by numHeads / numKvHeads.
const qHeads: Tensor = { data: f32(2 * 4 * 5 * 8), shape: [2, 4, 5, 8] };
const kvHeads: Tensor = { data: f32(2 * 2 * 5 * 8), shape: [2, 2, 5, 8] };
const allowed: BroadcastMask<Uint8Array> = { data: mask(2 * 5 * 5), shape: [2, 1, 5, 5] };
const attentionOptions: AttentionOptions = {
  causal: 'top-left', scale: 0.5, softcap: 30, window: [2, 0], attnMask: f32(25),
  boolMask: allowed, keyPaddingMask: mask(10), kvLengths: [5, 4], queryOffset: [0, 1],
  numHeads: 4, numKvHeads: 2, returnAttnWeights: false, returnScores: false, backend,
};
const attended: AttentionResult = sa.attention(qHeads, kvHeads, kvHeads, attentionOptions);
const tokens: Tensor = { data: f32(5 * 8), shape: [1, 5, 8] };
const tokenMajor: AttentionResultFor<true, true> = sa.attention(tokens, tokens, tokens,
  { numHeads: 2, causal: 'bottom-right', returnAttnWeights: true, returnScores: true });
// ONNX's qk_matmul_output: the scores before the softcap and the masks.
const stage: ScoresStageName = 'scaled';
const scaled: AttentionResultFor<false, 'scaled'> = sa.attention(tokens, tokens, tokens,
  { numHeads: 2, causal: 'top-left', queryOffset: 3, returnScores: stage });
const attentionOutputs: (Tensor | undefined)[] = [attended.output, attended.attnWeights,
  attended.scores, tokenMajor.attnWeights, tokenMajor.scores, scaled.scores];

// Training: the training build, backward passes and optimizers.
const trainer: AttentionModule = await createAttentionModule({ training: true });
const trainable = new trainer.MultiHeadAttention({ dModel: 8, numHeads: 2 });
trainable.setWeights(weights);
trainable.forward(x, undefined, undefined, { training: true, causal: true });
const mhaGradients: MultiHeadAttentionGradients = trainable.backward(x);
const attentionGradients: AttentionWeightGradients = mhaGradients;
const gradientArrays: (Float32Array | undefined)[] = [attentionGradients.dWQ,
  attentionGradients.dWK, attentionGradients.dWV, attentionGradients.dWO, attentionGradients.dBQ,
  attentionGradients.dBK, attentionGradients.dBV, attentionGradients.dBO,
  attentionGradients.dQNorm, attentionGradients.dKNorm];
const inputGradients: (Tensor | undefined)[] = [mhaGradients.dQuery, mhaGradients.dKey,
  mhaGradients.dValue, mhaGradients.dInput];
const trainEncoder = new trainer.TransformerEncoderLayer({ dModel: 8, numHeads: 2, ffnDim: 16 });
trainEncoder.setWeights(encoderWeights);
trainEncoder.forward(x, { training: true });
const encoderGradients: TransformerEncoderLayerGradients = trainEncoder.backward(x);
const ffnGradients: FeedForwardGradients = encoderGradients.ffn;
const normGradients: LayerNormGradients = encoderGradients.norm1;
const layerGradients: unknown[] = [encoderGradients.dInput, encoderGradients.attention,
  encoderGradients.norm2, ffnGradients.dW1, ffnGradients.dB1, ffnGradients.dW2, ffnGradients.dB2,
  normGradients.dGamma, normGradients.dBeta];
const trainDecoder = new trainer.TransformerDecoderLayer({ dModel: 8, numHeads: 2, ffnDim: 16 });
trainDecoder.setWeights(decoderWeights);
trainDecoder.forward(x, x, { training: true });
const decoderGradients: TransformerDecoderLayerGradients = trainDecoder.backward(x);
const decoderGradientParts: unknown[] = [decoderGradients.dInput, decoderGradients.dMemory,
  decoderGradients.selfAttention, decoderGradients.crossAttention, decoderGradients.ffn,
  decoderGradients.norm1, decoderGradients.norm2, decoderGradients.norm3];
const trainBlock: TransformerBlock = new trainer.TransformerBlock({ dModel: 8, numHeads: 2,
  rope: { style: 'half' }, qkNorm: { kind: 'rms_norm' },
  sublayers: [{ mixer: 'self_attention' }, { mixer: 'gated_ffn' }] });
const blockTraining: BlockTrainingForwardOptions = { causal: true, training: true };
trainBlock.forward(x, blockTraining);
const blockGradients: TransformerBlockGradients = trainBlock.backward(x);
const sublayerGradients: SublayerGradients = blockGradients.sublayers[0];
const blockNormGradients: BlockNormGradients = sublayerGradients.norm;
const gatedGradients: GatedFeedForwardGradients | undefined = sublayerGradients.gatedFfn;
const moeGradients: MixtureOfExpertsGradients | undefined = sublayerGradients.moe;
const expertGradients: GatedFeedForwardGradients[] | undefined = moeGradients?.experts;
const blockGradientParts: unknown[] = [blockGradients.dInput, blockGradients.dMemory,
  sublayerGradients.outputNorm, sublayerGradients.attention, sublayerGradients.ffn,
  blockNormGradients.dGamma, blockNormGradients.dBeta, gatedGradients?.dWGate,
  gatedGradients?.dWUp, gatedGradients?.dWDown, gatedGradients?.dBGate, gatedGradients?.dBUp,
  gatedGradients?.dBDown, moeGradients?.dRouter, expertGradients];
const trainStack: TransformerStack = new trainer.TransformerStack({ dModel: 8, numHeads: 2,
  norm: 'rms_norm', sublayers: [{ mixer: 'self_attention' }, { mixer: 'gated_ffn' }],
  numLayers: 2, finalNorm: true });
const stackTraining: StackTrainingForwardOptions = { causal: true, training: true };
trainStack.forward(x, stackTraining);
const stackGradients: TransformerStackGradients = trainStack.backward(x);
const stackGradientParts: unknown[] = [stackGradients.dInput,
  stackGradients.layers[1].sublayers[0].attention, stackGradients.finalNorm?.dGamma];
const sgdOptions: SGDOptions = { lr: 0.1, momentum: 0.9, weightDecay: 1e-4, nesterov: true };
const adamOptions: AdamOptions = { lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8,
  weightDecay: 0.01, decoupledWeightDecay: true };
const SGD: OptimizerConstructor<SGDOptions> = trainer.SGD;
const sgd: Optimizer = new SGD(sgdOptions);
const adam: Optimizer = new trainer.Adam(adamOptions);
const sgdLr: number = new SGD().options.lr;
const adamOptionsUsed: Required<AdamOptions> = new trainer.Adam().options;
const adamBetas: [number, number] = [adamOptionsUsed.beta1, adamOptionsUsed.beta2];
void [sgdLr, adamBetas];
for (const target of [trainable, trainEncoder, trainDecoder, trainBlock,
  trainStack] as Trainable[]) {
  adam.step(target);
}
sgd.step(trainable);
const tinyConfig: TinyTransformerConfig = { vocab: 16, dModel: 32, numHeads: 2, numLayers: 2,
  maxTokens: 24, ffnDim: 64, activation: 'gelu', seed: 1, backend: 'highway' };
const Tiny: TinyTransformerConstructor = trainer.TinyTransformer;
const tiny: TinyTransformer = new Tiny(tinyConfig);
const tinyResolved: ResolvedTinyTransformerConfig = tiny.config;
const ids: TokenIds = { data: new Int32Array(24), shape: [2, 12] };
const tinyOptions: TinyForwardOptions = { targets: new Int32Array(24), training: true,
  returnAttnWeights: true };
const tinyResult: TinyForwardResult = tiny.forward(ids, tinyOptions);
const tinyFacts: unknown[] = [tinyResult.loss, tinyResult.accuracy, tinyResult.counted,
  tinyResult.logits, tinyResult.attnWeights, tinyResolved.vocab, tinyResolved.dModel,
  tinyResolved.numHeads, tinyResolved.numLayers, tinyResolved.maxTokens, tinyResolved.ffnDim,
  tinyResolved.activation, tinyResolved.seed, tinyResolved.backend, tiny.kernels, tiny.disposed];
tiny.backward();
adam.step(tiny);
const tinyWeights: TinyTransformerWeights = tiny.getWeights();
const tinyLayer: TinyTransformerLayerWeights = tinyWeights.layers[0];
const tinyArrays: (Float32Array | undefined)[] = [tinyWeights.embedding, tinyWeights.unembedding,
  tinyWeights.unembeddingBias, tinyLayer.wQ, tinyLayer.wK, tinyLayer.wV, tinyLayer.wO,
  tinyLayer.bQ, tinyLayer.bK, tinyLayer.bV, tinyLayer.bO, tinyLayer.w1, tinyLayer.b1,
  tinyLayer.w2, tinyLayer.b2];
tiny.setWeights(tiny.gradients());
tiny.reset(2);
tiny.dispose();
tiny[Symbol.dispose]();
void [tinyFacts, tinyArrays];
const optimizerFacts: boolean[] = [sgd.disposed, adam.disposed];
sgd.dispose();
adam[Symbol.dispose]();
trainer.dispose();
void [gradientArrays, inputGradients, layerGradients, decoderGradientParts, blockGradientParts,
  stackGradientParts, optimizerFacts];
// @ts-expect-error: an optimizer steps a trainable object, not a tensor
adam.step(x);
// @ts-expect-error: Adam's betas are two options
void new trainer.Adam({ betas: [0.9, 0.999] });

// dispose() and `using`.
for (const o of [kv, cache, memory, decoderCache]) o.dispose();
mha[Symbol.dispose]();
encoder[Symbol.dispose]();
decoder[Symbol.dispose]();
kv[Symbol.dispose]();
cache[Symbol.dispose]();
{
  using scoped = new sa.MultiHeadAttention({ dModel: 8, numHeads: 2, bias: false });
  scoped.setWeights({ wQ: f32(64), wK: f32(64), wV: f32(64), wO: f32(64) });
}
mha.dispose();

export const used = [build, moduleFacts, threading, threadsRunning, bytes, isMha, dims, resolvedRope, resolvedQkNorm, mhaFacts, outputs, kvFacts,
  cacheFacts, cacheDisposed, isEncoder, isDecoder, step, normed, probabilities, requested,
  attentionOutputs];

// The worker pool: the same calls, as promises.
const pool: AttentionPool = await createAttentionPool({ workers: 2, build, backend: 'highway',
  wasmPath });
const poolFacts: [number, boolean, string, BuildName, boolean, readonly string[], string] = [
  pool.workers, pool.dead, pool.backend, pool.build, pool.simd, pool.backends, pool.kernels];
const pooled: PooledMultiHeadAttention = await pool.MultiHeadAttention(mhaConfig);
const pooledFacts: [ResolvedMultiHeadAttentionConfig, string, boolean] = [pooled.config,
  pooled.kernels, pooled.disposed];
await pooled.setWeights(weights);
const pooledResult: ForwardResultFor<true, false, false> = await pooled.forward(x, x, x,
  { causal: true, returnAttnWeights: true });
const pooledCache: PooledKVCache = await pooled.createKVCache({ batch: 1, maxLength: 4 });
const pooledStep: ForwardResult = await pooled.forwardIncremental(x, pooledCache);
const pooledCacheFacts: [number, number, number, boolean, Tensor, Tensor] = [pooledCache.batch,
  pooledCache.maxLength, pooledCache.length, pooledCache.disposed, await pooledCache.keys(),
  await pooledCache.values()];
await pooledCache.truncate(1);
await pooledCache.reset();
await pooledCache.append(x, x);
const pooledMemory: PooledPrecomputedKeyValue = await pooled.precomputeKeyValue(x);
const pooledCross: ForwardResult = await pooled.forward(x, pooledMemory);
const pooledMemoryFacts: number[] = [pooledMemory.batch, pooledMemory.tokens];
const pooledMemoryDisposed: boolean = pooledMemory.disposed;
await pooledMemory.dispose();
await pooledCache[Symbol.asyncDispose]();
await pooledCache.dispose();
await pooledMemory[Symbol.asyncDispose]();
const pooledLoaded: Promise<LoadCheckpointResult> = loadCheckpoint(pooled, { in_proj_weight: f32(192) });
await pooled.setWeightsFromPyTorch(torchState);
await pooled[Symbol.asyncDispose]();
await pooled.dispose();
const split: PooledLayerOptions = { placement: 'split' };
const pooledEncoder: PooledTransformerEncoderLayer = await pool.TransformerEncoderLayer(layerConfig,
  split);
await pooledEncoder.setWeights(encoderWeights);
const pooledEncoded: Tensor = await pooledEncoder.forward(x, { causal: true });
const pooledDecoder: PooledTransformerDecoderLayer = await pool.TransformerDecoderLayer(layerConfig,
  { placement: 'whole' });
await pooledDecoder.setWeights(decoderWeights);
const pooledDecoderCache: PooledKVCache = await pooledDecoder.createKVCache({ batch: 1, maxLength: 4 });
const pooledDecoderMemory: PooledPrecomputedKeyValue = await pooledDecoder.precomputeMemory(x);
const pooledDecoded: Tensor[] = [await pooledDecoder.forward(x, pooledDecoderMemory),
  await pooledDecoder.forwardIncremental(x, pooledDecoderCache, x)];
const pooledLayer: PooledTransformerLayerBase = pooledDecoder;
const pooledLayerFacts: [ResolvedTransformerLayerConfig, string, boolean, 'split' | 'whole'] = [
  pooledLayer.config, pooledLayer.kernels, pooledLayer.disposed, pooledLayer.placement];
const pooledFunctions: [Tensor, Tensor, Tensor] = [await pool.positionalEncoding(4, 8),
  await pool.layerNorm(x, { gamma: f32(8), beta: f32(8) }),
  (await pool.attention(tokens, tokens, tokens, { numHeads: 2, returnScores: true })).scores];
const pooledQuantized: Int8Weights = await pool.quantizeInt8(f32(64), 8, 8);
await pooledEncoder[Symbol.asyncDispose]();
await pooledLayer.dispose();
await pool[Symbol.asyncDispose]();
await pool.dispose();
sa.dispose(); // ends a threaded build's workers

export const poolUsed = [poolFacts, pooledFacts, pooledResult, pooledStep, pooledCacheFacts,
  pooledCross, pooledMemoryFacts, pooledMemoryDisposed, pooledEncoded, pooledDecoded,
  pooledLayerFacts, pooledFunctions, pooledQuantized, pooledLoaded];

// Misuses that must not compile.
// @ts-expect-error: misspelled option
mha.forward(x, x, x, { retrunAttnWeights: true });
// @ts-expect-error: misspelled option next to a correct one
mha.forward(x, x, x, { causal: true, returnAttnWieghts: true });
// @ts-expect-error: attnWeights was not asked for, so it may be undefined
void mha.forward(x, x, x, { returnPerHeadOutput: true }).attnWeights.data;
// @ts-expect-error: nor when the flag is only known to be a boolean
void mha.forward(x, x, x, forwardOptions).attnWeights.data;
// @ts-expect-error: the intermediates were not asked for
void mha.forwardIncremental(x, cache, { returnAttnWeights: true }).q.data;
// @ts-expect-error: causal is implied in forwardIncremental
mha.forwardIncremental(x, cache, { causal: true });
// @ts-expect-error: tensor data must be a Float32Array
mha.forward({ data: new Float64Array(40), shape: [5, 8] });
// @ts-expect-error: a tensor, not its data
mha.forward(f32(40));
// @ts-expect-error: masks are Uint8Arrays
mha.forward(x, x, x, { keyPaddingMask: [1, 1, 1, 1, 1] });
// @ts-expect-error: value must be omitted with precomputed keys/values
mha.forward(x, kv, x);
// @ts-expect-error: numHeads is required
void new sa.MultiHeadAttention({ dModel: 8 });
// @ts-expect-error: misspelled config key
void new sa.MultiHeadAttention({ dModel: 8, numHeads: 2, headDimv: 4 });
// @ts-expect-error: wQ is required
mha.setWeights({ wK: f32(64), wV: f32(64), wO: f32(64) });
// @ts-expect-error: not a state_dict name
mha.setWeightsFromPyTorch({ 'in_proj.weight': f32(192) });
// @ts-expect-error: maxLength is required
mha.createKVCache({ batch: 1 });
// @ts-expect-error: a PrecomputedKeyValue is not a cache
mha.forwardIncremental(x, kv);
// @ts-expect-error: unknown backend name for the module
void createAttentionModule({ backend: 'neon' });
// @ts-expect-error: relaxedSimd is a boolean
void createAttentionModule({ relaxedSimd: 'auto' });
// @ts-expect-error: misspelled module option
void createAttentionModule({ wasmPaht: './dist' });
// @ts-expect-error: build is read-only
sa.build = 'simd';
// @ts-expect-error: misspelled weight type
void new sa.MultiHeadAttention({ dModel: 8, numHeads: 2, weights: 'fp16' });
// @ts-expect-error: caches hold no q4
void new sa.MultiHeadAttention({ dModel: 8, numHeads: 2, cacheType: 'q4' });
// @ts-expect-error: misspelled weight type of a layer
void new sa.TransformerEncoderLayer({ dModel: 8, numHeads: 2, ffnDim: 16, weights: 'float16' });
// @ts-expect-error: int8 weights need their scales
narrow.setWeights({ ...weights, wQ: { values: new Int8Array(64) } });
// @ts-expect-error: a file read without keep16Bit gives float32 only
const notBits: Uint16Array = file.tensor('w').data;
// @ts-expect-error: unknown activation
void new sa.TransformerEncoderLayer({ dModel: 8, numHeads: 2, ffnDim: 16, activation: 'mish' });
// Checkpoints: a layer's state_dict, safetensors files and their mapping.
const encoderState: PyTorchTransformerEncoderLayerState = {
  'self_attn.in_proj_weight': f32(192), 'self_attn.q_proj_weight': f32(64),
  'self_attn.k_proj_weight': f32(64), 'self_attn.v_proj_weight': f32(64),
  'self_attn.in_proj_bias': f32(24), 'self_attn.out_proj.weight': f32(64),
  'self_attn.out_proj.bias': f32(8), 'linear1.weight': f32(128), 'linear1.bias': f32(16),
  'linear2.weight': f32(128), 'linear2.bias': f32(8), 'norm1.weight': f32(8),
  'norm1.bias': f32(8), 'norm2.weight': f32(8), 'norm2.bias': f32(8),
};
encoder.setWeightsFromPyTorch(encoderState);
const decoderState: PyTorchTransformerDecoderLayerState = {
  ...encoderState, 'multihead_attn.in_proj_weight': f32(192),
  'multihead_attn.q_proj_weight': f32(64), 'multihead_attn.k_proj_weight': f32(64),
  'multihead_attn.v_proj_weight': f32(64), 'multihead_attn.in_proj_bias': f32(24),
  'multihead_attn.out_proj.weight': f32(64), 'multihead_attn.out_proj.bias': f32(8),
  'norm3.weight': f32(8), 'norm3.bias': f32(8),
};
export const pooledFromPyTorch = (encoderPart: PooledTransformerEncoderLayer,
  decoderPart: PooledTransformerDecoderLayer): Promise<void[]> => Promise.all([
  encoderPart.setWeightsFromPyTorch(encoderState), decoderPart.setWeightsFromPyTorch(decoderState)]);
decoder.setWeightsFromPyTorch(decoderState);
const response: ResponseLike = {
  ok: true, status: 200, url: 'https://example.invalid/model.safetensors', headers: {},
  body: null, arrayBuffer: async () => new ArrayBuffer(8),
};
const file: SafetensorsFile = await readSafetensors(response);
const parsed: SafetensorsFile = parseSafetensors(new Uint8Array(8));
const keep: SafetensorsOptions = { keep16Bit: true };
const bitsFile: SafetensorsFile<true> = parseSafetensors(new Uint8Array(8), { keep16Bit: true });
const maybeBits: CheckpointTensor | CheckpointBitsTensor = bitsFile.tensor('w');
const keptFacts: [boolean, boolean, string, number[], Float32Array | Uint16Array] = [
  bitsFile.keep16Bit, file.keep16Bit, maybeBits.dtype, maybeBits.shape, maybeBits.data];
void [keep, keptFacts, readSafetensors('model.safetensors', keep)];
const fromPath: Promise<SafetensorsFile> = readSafetensors('model.safetensors');
const dtype: SafetensorsDtype = 'BF16';
const info: SafetensorsTensorInfo = { dtype, shape: file.info('w').shape };
const read: CheckpointTensor = file.tensor('w');
const fileFacts: [Record<string, string>, string[], boolean, Float32Array] =
  [parsed.metadata, file.names, file.has(info.dtype), read.data];
const layout: CheckpointLayout = 'bert';
const loadOptions: LoadCheckpointOptions = { prefix: 'encoder.layer.3', layout, allowUnused: true };
const flat: CheckpointTensors = { 'linear1.weight': f32(128), 'norm1.weight': { data: f32(8), shape: [8] } };
const loaded: LoadCheckpointResult = loadCheckpoint(encoder, file, loadOptions);
const loadedFacts: [CheckpointLayout, string[], string[], string[]] = [loaded.layout,
  loaded.tensors, loaded.unused, loaded.zeroBiases];
loadCheckpoint(mha, flat);
// @ts-expect-error: a layout the package does not know
loadCheckpoint(decoder, file, { layout: 'mpt' });
const llamaLayout: CheckpointLayout = 'llama';
void loadCheckpoint(mha, file, { layout: llamaLayout });

// Blocks as lists of sublayers, and stacks of them.
const choices: ModuleChoices = sa.choices;
const choiceLists: (readonly string[])[] = [choices.activation, choices.norm, choices.mixer,
  choices.normPlacement, choices.weights, choices.cacheType, choices.causal,
  choices.returnScores];
const mixer: MixerName = 'gated_ffn';
const moeMixer: MixerName = 'moe';
const placement: NormPlacementName = 'sandwich';
const normKind: NormKindName = 'rms_norm';
const qkNorm: QkNormConfig = { kind: 'rms_norm', eps: 1e-6 };
const sublayerList: SublayerConfig[] = [{ mixer: 'self_attention', norm: 'pre' },
  { mixer, norm: placement, parallel: false }, { mixer: moeMixer }];
const blockConfig: TransformerBlockConfig = { dModel: 8, numHeads: 2, numKvHeads: 1, headDim: 4,
  ffnDim: 16, numExperts: 2, expertsPerToken: 1, normalizeTopK: false, activation: 'silu',
  norm: normKind, eps: 1e-6, rope, qkNorm, sublayers: sublayerList, backend: 'highway',
  threads: 1, weights: 'f32', cacheType: 'f16' };
const Block: TransformerBlockConstructor = sa.TransformerBlock;
const block: TransformerBlock = new Block(blockConfig);
const blockResolved: ResolvedTransformerBlockConfig = block.config;
const resolvedActivation: ResolvedActivationName = blockResolved.activation;
// What every object holding attentions reports alike.
const attentionFields: ResolvedAttentionFields[] = [resolved, encoder.config, blockResolved];
void attentionFields;
void [blockResolved.dModel, blockResolved.numHeads, blockResolved.numKvHeads,
  blockResolved.headDim, blockResolved.ffnDim, blockResolved.numExperts,
  blockResolved.expertsPerToken, blockResolved.normalizeTopK, blockResolved.norm, blockResolved.eps,
  blockResolved.rope, blockResolved.qkNorm, blockResolved.sublayers, blockResolved.weights,
  blockResolved.cacheType, blockResolved.backend, blockResolved.threads, block.kernels,
  block.disposed, resolvedActivation, choiceLists];
const blockNorm: BlockNormWeights = { gamma: f32(8), beta: undefined };
const blockAttention: MultiHeadAttentionWeights = { wQ: f32(64), wK: f32(32), wV: f32(32),
  wO: f32(64), bQ: f32(8), bK: f32(4), bV: f32(4), bO: f32(8), qNorm: f32(4), kNorm: f32(4) };
const gatedFfn: GatedFeedForwardWeights = { wGate: f32(128), wUp: f32(128), wDown: f32(128),
  bGate: f32(16), bUp: f32(16), bDown: f32(8) };
const moe: MixtureOfExpertsWeights = { router: f32(16), experts: [gatedFfn, gatedFfn] };
const sublayerWeights: SublayerWeights[] = [{ norm: blockNorm, outputNorm: blockNorm,
  attention: blockAttention }, { norm: blockNorm, outputNorm: blockNorm, gatedFfn,
  ffn: { w1: f32(128), w2: f32(128) } }, { norm: blockNorm, moe }];
const blockWeights: TransformerBlockWeights = { sublayers: sublayerWeights };
block.setWeights(blockWeights);
const blockOptions: BlockForwardOptions = { causal: true, keyPaddingMask: mask(5),
  memoryKeyPaddingMask: mask(5), positionOffset: 0, window: [3, 0] };
const blockOut: Tensor = block.forward(x, blockOptions);
void block.forward(x, x, blockOptions);
const blockCache: KVCache = block.createKVCache({ batch: 1, maxLength: 8 });
void [blockOut, block.forwardIncremental(x, blockCache, { window: [3, 0] })];
block.dispose();
block[Symbol.dispose]();
const stackConfig: TransformerStackConfig = { ...blockConfig, numLayers: 2,
  layerWindows: [[3, 0], [-1, -1]], finalNorm: true };
const Stack: TransformerStackConstructor = sa.TransformerStack;
const stack: TransformerStack = new Stack(stackConfig);
const stackResolved: ResolvedTransformerStackConfig = stack.config;
void [stackResolved.numLayers, stackResolved.finalNorm, stackResolved.layerWindows,
  stack.kernels, stack.disposed];
const stackWeights: TransformerStackWeights = { layers: [blockWeights, blockWeights],
  finalNorm: blockNorm };
stack.setWeights(stackWeights);
const stackOptions: StackForwardOptions = { causal: true, keyPaddingMask: mask(5),
  positionOffset: 0 };
const stackCaches: KVCache[] = stack.createKVCaches({ batch: 1, maxLength: 8 });
void [stack.forward(x, stackOptions), stack.forwardIncremental(x, stackCaches, { window: [3, 0] })];
stack.dispose();
stack[Symbol.dispose]();
// @ts-expect-error: a block's sublayers are required
void new sa.TransformerBlock({ dModel: 8, numHeads: 2 });
// @ts-expect-error: an unknown mixer
void new sa.TransformerBlock({ dModel: 8, numHeads: 2, sublayers: [{ mixer: 'attention' }] });

// A Hugging Face layer or attention from its config.json.
const hfConfig: HuggingFaceConfig = { model_type: 'llama', hidden_size: 64 };
const pretrainedOptions: FromPretrainedOptions = { prefix: 'model.layers.3.self_attn',
  backend, weights: 'f16', cacheType: 'f16' };
const pretrained: PretrainedModule = await sa.fromPretrained(hfConfig, file, pretrainedOptions);
if (pretrained.kind === 'MultiHeadAttention') {
  const built: PretrainedAttention = pretrained;
  const out: ForwardResult = built.module.forward(x, x, x, built.forwardOptions);
  const step: IncrementalForwardOptions | undefined = built.incrementalOptions;
  void [out, step, built.loaded.zeroBiases];
} else if (pretrained.kind === 'TransformerEncoderLayer') {
  const built: PretrainedEncoderLayer = pretrained;
  void [built.module.forward(x, built.forwardOptions), built.loaded];
} else if (pretrained.kind === 'TransformerBlock') {
  const built: PretrainedBlock = pretrained;
  void [built.module.forward(x, built.forwardOptions), built.incrementalOptions, built.loaded];
} else if (pretrained.kind === 'TransformerStack') {
  const built: PretrainedStack = pretrained;
  void [built.module.forward(x, built.forwardOptions), built.incrementalOptions, built.loaded];
} else {
  const built: PretrainedDecoderLayer = pretrained;
  const step: SelfAttentionOptions | undefined = built.incrementalOptions;
  void [built.module.forward(x, x, built.forwardOptions), step, built.loaded];
}
// @ts-expect-error: the object's config takes no layout
void sa.fromPretrained(hfConfig, file, { prefix: 'h.1', layout: 'gpt2' });
// @ts-expect-error: it resolves to the object, not returns it
void sa.fromPretrained(hfConfig, file, pretrainedOptions).module;
const pooledPretrained: PooledPretrainedModule = await pool.fromPretrained(hfConfig, file,
  pretrainedOptions);
if (pooledPretrained.kind === 'MultiHeadAttention') {
  const out: ForwardResult = await pooledPretrained.module.forward(x, x, x,
    pooledPretrained.forwardOptions);
  void out;
} else if (pooledPretrained.kind === 'TransformerDecoderLayer') {
  const layer: PooledTransformerDecoderLayer = pooledPretrained.module;
  void [layer, pooledPretrained.incrementalOptions];
} else if (pooledPretrained.kind === 'TransformerBlock') {
  const pooledBlock: PooledTransformerBlock = pooledPretrained.module;
  const pooledBlockCache: PooledKVCache = await pooledBlock.createKVCache({ batch: 1,
    maxLength: 8 });
  await pooledBlock.setWeights(blockWeights);
  void [await pooledBlock.forward(x, blockOptions), await pooledBlock.forward(x, x),
    await pooledBlock.forwardIncremental(x, pooledBlockCache), pooledBlock.config,
    pooledBlock.kernels, pooledBlock.disposed, pooledBlock.placement];
  await pooledBlock.dispose();
  await pooledBlock[Symbol.asyncDispose]();
  void await pool.TransformerBlock(blockConfig, { placement: 'split' });
} else if (pooledPretrained.kind === 'TransformerStack') {
  const pooledStack: PooledTransformerStack = pooledPretrained.module;
  const placed: PooledPlacedObject<ResolvedTransformerStackConfig> = pooledStack;
  void placed;
  const pooledCaches: PooledKVCache[] = await pooledStack.createKVCaches({ batch: 1,
    maxLength: 8 });
  await pooledStack.setWeights(stackWeights);
  void [await pooledStack.forward(x, { causal: true }),
    await pooledStack.forwardIncremental(x, pooledCaches), pooledStack.config.numLayers,
    pooledStack.placement, pooledStack.kernels, pooledStack.disposed];
  await pooledStack.dispose();
  await pooledStack[Symbol.asyncDispose]();
  void await pool.TransformerStack(stackConfig, { placement: 'whole' });
} else {
  const layer: PooledTransformerEncoderLayer = pooledPretrained.module;
  void layer;
}
// @ts-expect-error: an encoder state_dict needs its FFN
encoder.setWeightsFromPyTorch({ 'self_attn.in_proj_weight': f32(192) });
void [fromPath, fileFacts, loadedFacts];

// @ts-expect-error: ffnDim is required
void new sa.TransformerDecoderLayer({ dModel: 8, numHeads: 2 });
// @ts-expect-error: an encoder has no memory mask
encoder.forward(x, { memoryKeyPaddingMask: mask(5) });
// @ts-expect-error: a KVCache is not a memory
decoder.forward(x, decoderCache);
// @ts-expect-error: every weight group is required
encoder.setWeights({ attention, ffn, norm1: norm });
// @ts-expect-error: inside a layer the attention biases are required
encoder.setWeights({ attention: weights, ffn, norm1: norm, norm2: norm });
// @ts-expect-error: layerNorm needs gamma and beta
sa.layerNorm(x, { eps: 1e-5 });
// @ts-expect-error: misspelled attention option
sa.attention(qHeads, kvHeads, kvHeads, { sofcap: 30 });
// @ts-expect-error: the causal alignment is named, not a boolean
sa.attention(qHeads, kvHeads, kvHeads, { causal: true });
// @ts-expect-error: the scores were not asked for
void sa.attention(qHeads, kvHeads, kvHeads, { returnAttnWeights: true }).scores.data;
// @ts-expect-error: positionalEncoding takes numbers
sa.positionalEncoding('5', 8);
// @ts-expect-error: quantizeInt8 takes float32 values
sa.quantizeInt8([1, 2], 1, 2);
// @ts-expect-error: the truncation length is a number
cache.truncate('2');
// @ts-expect-error: a KVCache's batch is read-only
cache.batch = 2;
// @ts-expect-error: the pool's methods return promises
void pooled.forward(x).output;
// @ts-expect-error: a synchronous KVCache is not the pool's
void pooled.forwardIncremental(x, cache);
// @ts-expect-error: the thread count is a number
void createAttentionModule({ threads: '2' });
// @ts-expect-error: a module's thread count is read-only
sa.threads = 4;
// @ts-expect-error: the pool needs its worker count
void createAttentionPool({ build: 'simd' });
