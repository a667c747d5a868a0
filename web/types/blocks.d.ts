// Transformer blocks as lists of sublayers, and stacks of them.

import type {
  CausalAlignmentName, MultiHeadAttentionWeights, NormKindName, QkNormConfig,
  ResolvedAttentionFields, RopeConfig,
} from './attention.js';
import type { KVCache, KVCacheOptions } from './caches.js';
import type {
  ActivationName, FeedForwardWeights, ResolvedActivationName, SelfAttentionOptions,
} from './layers.js';
import type { CacheTypeName, Tensor, WeightMatrix, WeightTypeName } from './tensors.js';
import type { TransformerBlockGradients, TransformerStackGradients } from './training.js';

/** What a sublayer computes. */
export type MixerName = 'self_attention' | 'cross_attention' | 'ffn' | 'gated_ffn' | 'moe';

/**
 * Where a sublayer's norm sits, h being the residual stream: `'pre'`
 * h + f(norm(h)) (GPT-2, Llama), `'post'` norm(h + f(h)) (BERT),
 * `'sandwich'` h + outputNorm(f(norm(h))) (Gemma 2), `'none'` h + f(h).
 */
export type NormPlacementName = 'pre' | 'post' | 'sandwich' | 'none';

/** One entry of `TransformerBlockConfig.sublayers`. */
export interface SublayerConfig {
  mixer: MixerName;
  /** Default `'pre'`. */
  norm?: NormPlacementName;
  /**
   * Reads the same input as the sublayer before it, both outputs added to it
   * (GPT-J, GPT-NeoX's parallel residual): h + f(norm1(h)) + g(norm2(h)).
   * Not with `'post'` norms. Default false.
   */
  parallel?: boolean;
}

export interface TransformerBlockConfig {
  /** Model width. */
  dModel: number;
  /** Query heads of the attentions. */
  numHeads: number;
  /** Key/value heads (grouped-query attention). Default numHeads. */
  numKvHeads?: number;
  /** Per-head width. Default dModel / numHeads. */
  headDim?: number;
  /** Hidden units of the FFN and gated-FFN sublayers and of each expert (required when there is one). */
  ffnDim?: number;
  /** Experts of the `'moe'` sublayers (required with one; at least 1). */
  numExperts?: number;
  /** The experts each token goes to, its router's top k (1 to numExperts). Default 2 (Mixtral's). */
  expertsPerToken?: number;
  /**
   * Divide the chosen experts' probabilities by their sum, so that each
   * token's weights sum to 1: Mixtral's; Qwen2-MoE and OLMoE
   * (`norm_topk_prob: false`) do not. Default true.
   */
  normalizeTopK?: boolean;
  /** The FFN's activation, or the gated FFN's gate's (`'silu'`: SwiGLU). Default `'relu'`. */
  activation?: ActivationName;
  /** Every sublayer's norm. Default `'layer_norm'`. */
  norm?: NormKindName;
  /** The norms' epsilon. Default 1e-5. */
  eps?: number;
  /** Rotary positions of the self-attentions. */
  rope?: RopeConfig;
  /** QK-norm of the self-attentions (`weights...attention.qNorm/kNorm`). */
  qkNorm?: QkNormConfig;
  /** The block, in order: e.g. Llama's `[{ mixer: 'self_attention' }, { mixer: 'gated_ffn' }]`. */
  sublayers: SublayerConfig[];
  /** Default the module's `backend`. */
  backend?: string;
  /** As `MultiHeadAttentionConfig.threads`. */
  threads?: number;
  /** How every weight matrix is held. Default `'f32'`. */
  weights?: WeightTypeName;
  /** How KV caches hold keys and values. Default `'f32'`. */
  cacheType?: CacheTypeName;
}

/** A block config with every default filled in. */
export interface ResolvedTransformerBlockConfig extends ResolvedAttentionFields {
  ffnDim: number;
  numExperts: number;
  expertsPerToken: number;
  normalizeTopK: boolean;
  activation: ResolvedActivationName;
  norm: NormKindName;
  eps: number;
  qkNorm?: Required<QkNormConfig>;
  sublayers: Required<SublayerConfig>[];
}

/** A norm's scale (`[dModel]`) and, for `'layer_norm'` only, its shift. */
export interface BlockNormWeights {
  gamma: Float32Array;
  beta?: Float32Array;
}

/** `down(act(x W_gate + b_gate) * (x W_up + b_up)) + b_down`, `X @ W`; omitted biases are zero. */
export interface GatedFeedForwardWeights {
  /** `[dModel, ffnDim]` */
  wGate: WeightMatrix;
  /** `[dModel, ffnDim]` */
  wUp: WeightMatrix;
  /** `[ffnDim, dModel]` */
  wDown: WeightMatrix;
  bGate?: Float32Array;
  bUp?: Float32Array;
  bDown?: Float32Array;
}

/**
 * A sparse mixture of gated-FFN experts (Mixtral's): each token goes to the
 * `expertsPerToken` experts whose softmax of `x router` is highest, its
 * output their outputs weighted by those probabilities.
 */
export interface MixtureOfExpertsWeights {
  /** `[dModel, numExperts]`, `X @ W`, no bias; float32 whatever `config.weights`. */
  router: Float32Array;
  /** One per expert, each in `config.weights`' type. */
  experts: GatedFeedForwardWeights[];
}

/** One sublayer's weights: its norm, and its mixer's (the group of its kind). */
export interface SublayerWeights {
  /** Omitted (or ignored) for norm `'none'`. */
  norm?: BlockNormWeights;
  /** The norm after the mixer, for `'sandwich'`. */
  outputNorm?: BlockNormWeights;
  /** As `MultiHeadAttention.setWeights`'s; here an omitted bias is zero. */
  attention?: MultiHeadAttentionWeights;
  /** Biases optional (zero). */
  ffn?: Partial<FeedForwardWeights> & Pick<FeedForwardWeights, 'w1' | 'w2'>;
  gatedFfn?: GatedFeedForwardWeights;
  moe?: MixtureOfExpertsWeights;
}

export interface TransformerBlockWeights {
  /** One entry per sublayer, in order. */
  sublayers: SublayerWeights[];
}

export interface StackForwardOptions extends SelfAttentionOptions {
  /** The self-attentions' causal mask. Default false. */
  causal?: boolean | CausalAlignmentName;
  /** `[batch, tokens]`, 1 = real token. */
  keyPaddingMask?: Uint8Array;
  /** Rotary position of the first token. Default 0. */
  positionOffset?: number;
}

export interface StackTrainingForwardOptions extends StackForwardOptions {
  /**
   * Keep what `backward` needs: each layer's record and the final norm's
   * input (training build; float32 weights). Default false.
   */
  training?: boolean;
}

export interface BlockForwardOptions extends StackForwardOptions {
  /** `[batch, memoryTokens]` of the memory, for cross-attention sublayers. */
  memoryKeyPaddingMask?: Uint8Array;
}

export interface BlockTrainingForwardOptions extends BlockForwardOptions {
  /**
   * Keep what `backward` needs (training build; float32 weights). Default
   * false.
   */
  training?: boolean;
}

/**
 * A transformer block as an ordered list of sublayers (the blocks of Llama,
 * Mistral, Qwen, Gemma, Phi-3, GPT-J, GPT-NeoX, BERT, ...). Owns wasm
 * memory: `dispose()` when done.
 */
export interface TransformerBlock {
  readonly config: ResolvedTransformerBlockConfig;
  readonly kernels: string;
  readonly disposed: boolean;
  /** All or nothing: after an error the block keeps its old weights. */
  setWeights(weights: TransformerBlockWeights): void;
  /** x `[batch, tokens, dModel]` (or 2-D) -> the same shape. */
  forward(x: Tensor, options?: BlockTrainingForwardOptions): Tensor;
  /** With a memory `[batch, memoryTokens, dModel]` for cross-attention sublayers. */
  forward(x: Tensor, memory: Tensor, options?: BlockTrainingForwardOptions): Tensor;
  /**
   * The gradients of the last forward, a training one, given `dOutput`
   * (training build). Error without one since the weights last changed.
   */
  backward(dOutput: Tensor): TransformerBlockGradients;
  /** A cache for the block's one self-attention sublayer. */
  createKVCache(options: KVCacheOptions): KVCache;
  /** New tokens through the block, attending over `cache` and themselves; a failed step leaves the cache as it was. */
  forwardIncremental(x: Tensor, cache: KVCache, options?: SelfAttentionOptions): Tensor;
  dispose(): void;
  [Symbol.dispose](): void;
}

export interface TransformerBlockConstructor {
  /** Throws a RangeError for an invalid config (naming the field). */
  new (config: TransformerBlockConfig): TransformerBlock;
}

export interface TransformerStackConfig extends TransformerBlockConfig {
  /** Blocks in the stack. */
  numLayers: number;
  /** Each layer's self-attention window `[left, right]` (-1 unbounded), e.g. Gemma 2's alternation. */
  layerWindows?: (readonly number[])[];
  /** A norm after the last block (a decoder model's last norm). Default false. */
  finalNorm?: boolean;
}

export interface ResolvedTransformerStackConfig extends ResolvedTransformerBlockConfig {
  numLayers: number;
  finalNorm: boolean;
  layerWindows?: number[][];
}

export interface TransformerStackWeights {
  /** One entry per layer. */
  layers: TransformerBlockWeights[];
  /** With `config.finalNorm`. */
  finalNorm?: BlockNormWeights;
}

/** N blocks of one config with a KV cache per layer: a whole decoding step in one call. */
export interface TransformerStack {
  readonly config: ResolvedTransformerStackConfig;
  readonly kernels: string;
  readonly disposed: boolean;
  setWeights(weights: TransformerStackWeights): void;
  forward(x: Tensor, options?: StackTrainingForwardOptions): Tensor;
  /**
   * The gradients of the last forward, a training one, given `dOutput`:
   * back through the final norm and the layers in reverse (training build).
   * Error without one since the weights last changed.
   */
  backward(dOutput: Tensor): TransformerStackGradients;
  /** One KVCache per layer, in order (not in the training build: an Error). */
  createKVCaches(options: KVCacheOptions): KVCache[];
  /** New tokens through every layer; a failed step leaves every cache as it was. */
  forwardIncremental(x: Tensor, caches: KVCache[], options?: SelfAttentionOptions): Tensor;
  dispose(): void;
  [Symbol.dispose](): void;
}

export interface TransformerStackConstructor {
  new (config: TransformerStackConfig): TransformerStack;
}
