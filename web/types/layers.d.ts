// Transformer layers: encoder and decoder, their configs and weights.

import type { CausalAlignmentName, ResolvedAttentionFields, RopeConfig } from './attention.js';
import type { KVCache, KVCacheOptions, PrecomputeOptions, PrecomputedKeyValue } from './caches.js';
import type {
  PyTorchTransformerDecoderLayerState, PyTorchTransformerEncoderLayerState,
} from './checkpoints.js';
import type { BroadcastMask } from './scaled-dot-product-attention.js';
import type { CacheTypeName, Tensor, WeightMatrix, WeightTypeName } from './tensors.js';
import type {
  TransformerDecoderLayerGradients, TransformerEncoderLayerGradients,
} from './training.js';

/**
 * Activation of the position-wise FFN (and of a gated FFN's gate).
 * `'gelu'` and `'gelu_erf'` are the exact (erf) GELU, as torch's `'gelu'`;
 * `'silu'` (also `'swish'`) is x * sigmoid(x), SwiGLU's. The module's
 * `choices.activation` lists them.
 */
export type ActivationName = 'relu' | 'gelu' | 'gelu_erf' | 'gelu_tanh' | 'silu' | 'swish';

/** An activation as a resolved config reports it (aliases resolved). */
export type ResolvedActivationName = 'relu' | 'gelu' | 'gelu_tanh' | 'silu';

export interface TransformerLayerConfig {
  /** Model width; numHeads must divide it. */
  dModel: number;
  /** Attention heads (d_k = d_v = dModel / numHeads). */
  numHeads: number;
  /** Hidden width of the FFN. */
  ffnDim: number;
  /**
   * Pre-LN (`h = x + MHA(LN1(x)); out = h + FFN(LN2(h))`) instead of the
   * default post-LN (`h = LN1(x + MHA(x)); out = LN2(h + FFN(h))`), as torch's `norm_first`.
   */
  normFirst?: boolean;
  /** Default `'relu'`. */
  activation?: ActivationName;
  /** LayerNorm epsilon, default 1e-5. */
  eps?: number;
  /** Backend for this layer; default the module's `backend`. */
  backend?: string;
  /** As `MultiHeadAttentionConfig.threads`: default (and 0) the module's `threads`. */
  threads?: number;
  /**
   * Key/value heads of the attentions, as `MultiHeadAttentionConfig.numKvHeads`
   * (their wK, wV are `[dModel, numKvHeads*dModel/numHeads]`). Default numHeads.
   */
  numKvHeads?: number;
  /**
   * Rotary positions of the self-attention (not the decoder's
   * cross-attention). The training build refuses them (RangeError).
   */
  rope?: RopeConfig;
  /**
   * How the attentions' and the FFN's weight matrices are held
   * (`WeightTypeName`). Default `'f32'`, the training build's only one.
   */
  weights?: WeightTypeName;
  /**
   * How the decoder's KV cache and precomputed memory hold keys and values
   * (`CacheTypeName`). Default `'f32'`, the training build's only one.
   */
  cacheType?: CacheTypeName;
}

/** A layer config with every default filled in. */
export interface ResolvedTransformerLayerConfig extends ResolvedAttentionFields {
  ffnDim: number;
  normFirst: boolean;
  /** `'relu'`, `'gelu'` (also for `'gelu_erf'`), `'gelu_tanh'` or `'silu'` (also for `'swish'`). */
  activation: ResolvedActivationName;
  eps: number;
}

/**
 * An attention sublayer's weights, `X @ W` layout as for
 * `MultiHeadAttention.setWeights`; inside a layer every matrix is
 * `[dModel, dModel]` and every bias `[dModel]`, all required. The matrices
 * may come in the layer's `config.weights` type (`WeightMatrix`).
 */
export interface LayerAttentionWeights {
  wQ: WeightMatrix;
  wK: WeightMatrix;
  wV: WeightMatrix;
  wO: WeightMatrix;
  bQ: Float32Array;
  bK: Float32Array;
  bV: Float32Array;
  bO: Float32Array;
}

/**
 * The FFN `act(x W1 + b1) W2 + b2`, `X @ W` layout (the transpose of
 * torch's `linear1.weight` / `linear2.weight`); w1 and w2 may come in the
 * layer's `config.weights` type (`WeightMatrix`).
 */
export interface FeedForwardWeights {
  /** `[dModel, ffnDim]` */
  w1: WeightMatrix;
  /** `[ffnDim]` */
  b1: Float32Array;
  /** `[ffnDim, dModel]` */
  w2: WeightMatrix;
  /** `[dModel]` */
  b2: Float32Array;
}

/** A LayerNorm's weight (`gamma`, torch's `weight`) and bias (`beta`), each `[dModel]`. */
export interface LayerNormWeights {
  gamma: Float32Array;
  beta: Float32Array;
}

export interface LayerNormOptions extends LayerNormWeights {
  /** Default 1e-5. */
  eps?: number;
  /** Backend of the kernel; default the module's `backend`. */
  backend?: string;
}

/** torch: `self_attn`, `linear1`/`linear2`, `norm1`, `norm2`. */
export interface TransformerEncoderLayerWeights {
  attention: LayerAttentionWeights;
  ffn: FeedForwardWeights;
  norm1: LayerNormWeights;
  norm2: LayerNormWeights;
}

/** torch: `self_attn`, `multihead_attn`, `linear1`/`linear2`, `norm1`..`norm3`. */
export interface TransformerDecoderLayerWeights {
  selfAttention: LayerAttentionWeights;
  crossAttention: LayerAttentionWeights;
  ffn: FeedForwardWeights;
  /** After (post-LN) or before (pre-LN) the self-attention. */
  norm1: LayerNormWeights;
  /** Around the cross-attention. */
  norm2: LayerNormWeights;
  /** Around the FFN. */
  norm3: LayerNormWeights;
}

/**
 * A layer's self-attention options besides `causal` and `keyPaddingMask`,
 * with `ForwardOptions`' meaning (Mistral's window, Gemma 2's soft-cap, ...).
 */
export interface SelfAttentionOptions {
  /** Key window `[left, right]` around each query's diagonal; -1 = unbounded. */
  window?: [number, number] | readonly number[];
  /** Multiplies q . k; default 1 / sqrt(headDim). */
  scale?: number;
  /** c > 0: scores become c * tanh(scores / c) after the scale, before masks. */
  softcap?: number;
  /** Added to the scaled scores: `[T*T]` or `[B*H*T*T]` values, or `{ data, shape }` that broadcasts. */
  attnMask?: Float32Array | BroadcastMask<Float32Array>;
  /** 1 = may attend, 0 = masked; shapes as `attnMask`. */
  boolMask?: Uint8Array | BroadcastMask<Uint8Array>;
  /** `[B]`: batch item b attends to its first `kvLengths[b]` keys only. */
  kvLengths?: number[] | Uint32Array | Int32Array;
}

export interface EncoderForwardOptions extends SelfAttentionOptions {
  /** `[B*T]`, 1 = real token, 0 = padding (the opposite of torch's src_key_padding_mask). */
  keyPaddingMask?: Uint8Array;
  /**
   * Causal self-attention (query i sees keys <= i). The values
   * `MultiHeadAttention` takes: over T queries and T keys `true`,
   * 'top-left' and 'bottom-right' all mean j <= i; `false` or 'none': none.
   * Default false.
   */
  causal?: boolean | CausalAlignmentName;
  /**
   * Keep what `backward()` needs until the next forward, `setWeights` or
   * optimizer step. Training build only (`'f32'` weights, no rotary
   * positions). Default false.
   */
  training?: boolean;
}

export interface DecoderForwardOptions extends SelfAttentionOptions {
  /**
   * Causal self-attention, default **true** (torch's tgt_is_causal with a
   * square subsequent mask); the values of `EncoderForwardOptions.causal`.
   */
  causal?: boolean | CausalAlignmentName;
  /** `[B*T]` over x's tokens, 1 = real token. */
  keyPaddingMask?: Uint8Array;
  /**
   * `[B*S]` over the memory's tokens, 1 = real token. With a
   * PrecomputedKeyValue memory it replaces the object's own mask.
   */
  memoryKeyPaddingMask?: Uint8Array;
  /**
   * As the encoder's: keep what `backward()` needs. Training build only;
   * the memory must be a tensor, not a PrecomputedKeyValue. Default false.
   */
  training?: boolean;
}

/** Members both layer kinds have. */
export interface TransformerLayerBase {
  readonly config: ResolvedTransformerLayerConfig;
  /** The kernel table in use, e.g. `"highway:WASM"`. */
  readonly kernels: string;
  readonly disposed: boolean;
  /** Frees the wasm memory; later calls throw. Calling it again does nothing. */
  dispose(): void;
  [Symbol.dispose](): void;
}

/**
 * `torch.nn.TransformerEncoderLayer` (batch-first, dropout 0). Owns wasm
 * memory: `dispose()` when done. Errors as for MultiHeadAttention; weight
 * errors name the entry (`ffn.w1: expected 2048 values for shape [32, 64], got 3`).
 */
export interface TransformerEncoderLayer extends TransformerLayerBase {
  /**
   * Copies the weights. All or nothing: after an error the layer keeps its
   * previous weights.
   */
  setWeights(weights: TransformerEncoderLayerWeights): void;
  /**
   * The same from an `nn.TransformerEncoderLayer` state_dict (PyTorch's
   * `[out, in]` layout, transposed on loading); errors name the entry.
   */
  setWeightsFromPyTorch(state: PyTorchTransformerEncoderLayerState): void;
  /** `x [B, T, dModel]` (or `[T, dModel]`) -> a tensor of the same shape. */
  forward(x: Tensor, options?: EncoderForwardOptions): Tensor;
  /**
   * The gradients of the last forward, a training one, given the loss's
   * gradient at its output (`dOutput`, the output's shape). Training build
   * only; Error without a training forward, RangeError for a wrong shape or
   * a non-finite value.
   */
  backward(dOutput: Tensor): TransformerEncoderLayerGradients;
}

/**
 * `torch.nn.TransformerDecoderLayer` (batch-first, dropout 0): masked
 * self-attention, cross-attention over an encoder memory, FFN, each with
 * residual + LayerNorm. Owns wasm memory: `dispose()` when done.
 */
export interface TransformerDecoderLayer extends TransformerLayerBase {
  /** Copies the weights; all or nothing. */
  setWeights(weights: TransformerDecoderLayerWeights): void;
  /** The same from an `nn.TransformerDecoderLayer` state_dict. */
  setWeightsFromPyTorch(state: PyTorchTransformerDecoderLayerState): void;
  /**
   * `x [B, T, dModel]` attending (causally by default) to itself and to
   * `memory`: a tensor `[B, S, dModel]` or a PrecomputedKeyValue made by
   * `precomputeMemory` (the cheap way to run many calls on one memory).
   * Returns a tensor of x's shape.
   */
  forward(x: Tensor, memory: Tensor | PrecomputedKeyValue, options?: DecoderForwardOptions): Tensor;
  /** As the encoder's, with the memory's gradient too. */
  backward(dOutput: Tensor): TransformerDecoderLayerGradients;
  /**
   * One decoding step: `n >= 1` new tokens `x [B, n, dModel]` against the
   * self-attention `cache` (from this layer's `createKVCache`, which grows by
   * n) and the memory (best precomputed once with `precomputeMemory`; a
   * tensor is projected anew on every call). Token by token this equals the
   * rows of the causal `forward`. A full cache is a RangeError, and a failed
   * step leaves the cache unchanged.
   */
  forwardIncremental(x: Tensor, cache: KVCache, memory: PrecomputedKeyValue | Tensor,
    options?: SelfAttentionOptions): Tensor;
  /** An empty self-attention cache for `forwardIncremental` (not in the training build: an Error). */
  createKVCache(options: KVCacheOptions): KVCache;
  /**
   * The memory's cross-attention keys/values, projected once with this
   * layer's weights (not in the training build: an Error).
   */
  precomputeMemory(memory: Tensor, options?: PrecomputeOptions): PrecomputedKeyValue;
}

export interface TransformerEncoderLayerConstructor {
  /** Throws a RangeError for an invalid config (e.g. numHeads not dividing dModel). */
  new (config: TransformerLayerConfig): TransformerEncoderLayer;
  readonly prototype: TransformerEncoderLayer;
}

export interface TransformerDecoderLayerConstructor {
  /** Throws a RangeError for an invalid config. */
  new (config: TransformerLayerConfig): TransformerDecoderLayer;
  readonly prototype: TransformerDecoderLayer;
}
