// createAttentionPool: attention split by heads, layers and blocks by heads and FFN units.

import type {
  BlockForwardOptions, ResolvedTransformerBlockConfig, ResolvedTransformerStackConfig,
  StackForwardOptions, TransformerBlockConfig, TransformerBlockWeights, TransformerStackConfig,
  TransformerStackWeights,
} from './blocks.js';
import type {
  ForwardOptions, ForwardResultFor, IncrementalForwardOptions, MultiHeadAttention,
  MultiHeadAttentionConfig, MultiHeadAttentionWeights, PyTorchMultiheadAttentionState,
  ResolvedMultiHeadAttentionConfig,
} from './attention.js';
import type { KVCacheOptions, PrecomputeOptions } from './caches.js';
import type {
  CheckpointTensors, PyTorchTransformerDecoderLayerState, PyTorchTransformerEncoderLayerState,
} from './checkpoints.js';
import type {
  DecoderForwardOptions, EncoderForwardOptions, LayerNormOptions, ResolvedTransformerLayerConfig,
  SelfAttentionOptions, TransformerDecoderLayer, TransformerDecoderLayerWeights,
  TransformerEncoderLayer, TransformerEncoderLayerWeights, TransformerLayerConfig,
} from './layers.js';
import type { BuildName, URLLike } from './module.js';
import type {
  FromPretrainedOptions, HuggingFaceConfig, PooledPretrainedModule,
} from './pretrained.js';
import type { AttentionOptions, AttentionResultFor, ScoresStageName }
  from './scaled-dot-product-attention.js';
import type { Int8Weights, Tensor } from './tensors.js';

/**
 * Starts `workers` workers (Node `worker_threads`, module Web Workers), each
 * with its own wasm instance; see the README's "Worker pool". Needs no
 * SharedArrayBuffer. Rejects as createAttentionModule for a build that
 * cannot load.
 */
export function createAttentionPool(options: {
  /**
   * Workers to start: 1 to 4 per logical processor (as
   * `AttentionModuleOptions.threads`; more rejects with a RangeError).
   */
  workers: number;
  /** The build every worker loads. Default: the fastest this engine runs. */
  build?: BuildName;
  /** Default backend of the pool's objects. */
  backend?: string;
  /** As createAttentionModule's; a relative path is resolved against the page. */
  wasmPath?: string | URLLike;
}): Promise<AttentionPool>;

/**
 * Workers whose objects' methods return promises of the synchronous API's
 * results and reject with its errors. Calls on one object run in order. A
 * method copies its arguments before it returns (copies, not transfers: the
 * caller may write into its arrays at once and keeps them). A worker that
 * dies rejects every pending call and marks the pool `dead`.
 */
export interface AttentionPool {
  readonly workers: number;
  /** Whether a worker died (every call then rejects). */
  readonly dead: boolean;
  readonly backend: string;
  readonly build: BuildName;
  readonly simd: boolean;
  readonly backends: readonly string[];
  readonly kernels: string;
  /** A MultiHeadAttention split by heads over the workers. */
  MultiHeadAttention(config: MultiHeadAttentionConfig): Promise<PooledMultiHeadAttention>;
  /**
   * A TransformerEncoderLayer split over the workers or run whole in the
   * worker holding the fewest layers (`options.placement`).
   */
  TransformerEncoderLayer(config: TransformerLayerConfig, options?: PooledLayerOptions):
    Promise<PooledTransformerEncoderLayer>;
  /** A TransformerDecoderLayer, placed as TransformerEncoderLayer. */
  TransformerDecoderLayer(config: TransformerLayerConfig, options?: PooledLayerOptions):
    Promise<PooledTransformerDecoderLayer>;
  /**
   * A TransformerBlock split over the workers sublayer by sublayer, or run
   * whole in the worker holding the fewest layers (`options.placement`; a
   * block of more than one self-attention is held whole).
   */
  TransformerBlock(config: TransformerBlockConfig, options?: PooledLayerOptions):
    Promise<PooledTransformerBlock>;
  /**
   * A TransformerStack whose layers are the pool's blocks, each placed as
   * `TransformerBlock` places it (`options.placement`); its final norm in
   * one worker.
   */
  TransformerStack(config: TransformerStackConfig, options?: PooledLayerOptions):
    Promise<PooledTransformerStack>;
  /** The module's `positionalEncoding`, run on the next worker in turn. */
  positionalEncoding(t: number, dModel: number): Promise<Tensor>;
  /** The module's `layerNorm`, run on the next worker in turn. */
  layerNorm(x: Tensor, options: LayerNormOptions): Promise<Tensor>;
  /** The module's `attention`, run whole on the next worker in turn. */
  attention<A extends boolean = false, S extends boolean | ScoresStageName = false>(
    q: Tensor, k: Tensor, v: Tensor,
    options?: AttentionOptions & { returnAttnWeights?: A; returnScores?: S },
  ): Promise<AttentionResultFor<A, S>>;
  /** The module's `quantizeInt8`, run on the next worker in turn. */
  quantizeInt8(matrix: Float32Array, rows: number, cols: number): Promise<Int8Weights>;
  /**
   * The module's `fromPretrained`, the object the pool's (placed as this
   * pool's constructors place it), its weights loaded by `loadCheckpoint`
   * in its workers; an object whose weights do not load is disposed.
   */
  fromPretrained(config: HuggingFaceConfig, file: CheckpointTensors,
    options?: FromPretrainedOptions): Promise<PooledPretrainedModule>;
  /** Terminates the workers; pending and later calls reject. */
  dispose(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** What every object the pool's workers hold has. */
interface PooledObject {
  readonly disposed: boolean;
  dispose(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * MultiHeadAttention split by heads: the workers' partial outputs added in
 * worker order, then `bO`; the rest joined along the head axis.
 */
export interface PooledMultiHeadAttention extends PooledObject {
  readonly config: ResolvedMultiHeadAttentionConfig;
  readonly kernels: string;
  setWeights(w: MultiHeadAttentionWeights): Promise<void>;
  /**
   * As MultiHeadAttention's: judged whole by worker 0's synchronous object,
   * then transposed and split by heads.
   */
  setWeightsFromPyTorch(state: PyTorchMultiheadAttentionState): Promise<void>;
  forward<A extends boolean = false, P extends boolean = false, I extends boolean = false, S extends boolean | ScoresStageName = false>(query: Tensor,
    precomputed: PooledPrecomputedKeyValue, value?: undefined,
    options?: ForwardOptions & { returnAttnWeights?: A; returnPerHeadOutput?: P; returnIntermediates?: I; returnScores?: S }):
    Promise<ForwardResultFor<A, P, I, S>>;
  // The tensor overload last, as in MultiHeadAttention.
  forward<A extends boolean = false, P extends boolean = false, I extends boolean = false, S extends boolean | ScoresStageName = false>(query: Tensor,
    key?: Tensor, value?: Tensor, options?: ForwardOptions & { returnAttnWeights?: A; returnPerHeadOutput?: P; returnIntermediates?: I; returnScores?: S }):
    Promise<ForwardResultFor<A, P, I, S>>;
  createKVCache(options: KVCacheOptions): Promise<PooledKVCache>;
  forwardIncremental<A extends boolean = false, P extends boolean = false, I extends boolean = false, S extends boolean | ScoresStageName = false>(x: Tensor,
    cache: PooledKVCache, options?: IncrementalForwardOptions & { returnAttnWeights?: A; returnPerHeadOutput?: P; returnIntermediates?: I; returnScores?: S }):
    Promise<ForwardResultFor<A, P, I, S>>;
  precomputeKeyValue(memory: Tensor, options?: PrecomputeOptions): Promise<PooledPrecomputedKeyValue>;
}

/**
 * Where a pool puts a layer: `'split'`, each attention by heads and the FFN
 * by hidden units over the workers, residual adds and LayerNorms on the
 * calling thread (one round trip per sublayer); `'whole'`, in one worker
 * (one round trip per call). Default: the README's cost rule (round trips
 * against the compute splitting takes off the busiest worker).
 */
export interface PooledLayerOptions {
  placement?: 'split' | 'whole';
}

export interface PooledTransformerLayerBase
  extends PooledPlacedObject<ResolvedTransformerLayerConfig> {}

export interface PooledTransformerEncoderLayer extends PooledTransformerLayerBase {
  setWeights(weights: TransformerEncoderLayerWeights): Promise<void>;
  setWeightsFromPyTorch(state: PyTorchTransformerEncoderLayerState): Promise<void>;
  forward(x: Tensor, options?: EncoderForwardOptions): Promise<Tensor>;
}

/**
 * Its caches and precomputed memories stay in the workers, held as its
 * attentions are (split by heads, or whole in its worker).
 */
export interface PooledTransformerDecoderLayer extends PooledTransformerLayerBase {
  setWeights(weights: TransformerDecoderLayerWeights): Promise<void>;
  setWeightsFromPyTorch(state: PyTorchTransformerDecoderLayerState): Promise<void>;
  forward(x: Tensor, memory: Tensor | PooledPrecomputedKeyValue, options?: DecoderForwardOptions):
    Promise<Tensor>;
  forwardIncremental(x: Tensor, cache: PooledKVCache, memory: PooledPrecomputedKeyValue | Tensor,
    options?: SelfAttentionOptions): Promise<Tensor>;
  createKVCache(options: KVCacheOptions): Promise<PooledKVCache>;
  precomputeMemory(memory: Tensor, options?: PrecomputeOptions): Promise<PooledPrecomputedKeyValue>;
}

/**
 * What the pool's layers, blocks and stacks share: their config as the
 * synchronous one resolves it (`C`), where the pool put them.
 */
export interface PooledPlacedObject<C> extends PooledObject {
  readonly config: C;
  readonly kernels: string;
  /** Where the pool put it (PooledLayerOptions). */
  readonly placement: 'split' | 'whole';
}

/**
 * A TransformerBlock of the pool, split over its workers or whole in one;
 * its caches held as its self-attention is.
 */
export interface PooledTransformerBlock extends PooledPlacedObject<ResolvedTransformerBlockConfig> {
  setWeights(weights: TransformerBlockWeights): Promise<void>;
  forward(x: Tensor, options?: BlockForwardOptions): Promise<Tensor>;
  forward(x: Tensor, memory: Tensor, options?: BlockForwardOptions): Promise<Tensor>;
  forwardIncremental(x: Tensor, cache: PooledKVCache, options?: SelfAttentionOptions):
    Promise<Tensor>;
  createKVCache(options: KVCacheOptions): Promise<PooledKVCache>;
}

/**
 * A KVCache held by a pool's workers as the object that made it holds its
 * heads; it serves only objects held the same way.
 */
export interface PooledKVCache extends PooledObject {
  readonly batch: number;
  readonly maxLength: number;
  /** Tokens cached as of the last call that finished. Throws once disposed. */
  readonly length: number;
  /** `[B, length, H*d_k]`, gathered from the workers. */
  keys(): Promise<Tensor>;
  /** `[B, length, H*d_v]`. */
  values(): Promise<Tensor>;
  truncate(n: number): Promise<void>;
  reset(): Promise<void>;
  /**
   * As KVCache.append: keys `[B, n, H*d_k]` and values `[B, n, H*d_v]`, each
   * worker given its heads' features.
   */
  append(keys: Tensor, values: Tensor): Promise<void>;
}

/** A PrecomputedKeyValue held by a pool's workers, as a PooledKVCache. */
export interface PooledPrecomputedKeyValue extends PooledObject {
  readonly batch: number;
  readonly tokens: number;
}

/** A TransformerStack of the pool: its layers the pool's blocks, its caches theirs. */
export interface PooledTransformerStack extends PooledPlacedObject<ResolvedTransformerStackConfig> {
  setWeights(weights: TransformerStackWeights): Promise<void>;
  forward(x: Tensor, options?: StackForwardOptions): Promise<Tensor>;
  /** One cache per layer, in order. */
  createKVCaches(options: KVCacheOptions): Promise<PooledKVCache[]>;
  /** A failed step leaves every cache as it was. */
  forwardIncremental(x: Tensor, caches: PooledKVCache[], options?: SelfAttentionOptions):
    Promise<Tensor>;
}
