// TinyTransformer: a tiny trainable language model.

import type { ActivationName } from './layers.js';
import type { BackendName } from './module.js';
import type { Tensor } from './tensors.js';

export interface TinyTransformerConfig {
  /** Token ids are 0 .. vocab - 1. */
  vocab: number;
  dModel: number;
  /** Divides dModel. */
  numHeads: number;
  numLayers: number;
  /** The longest row `forward` takes (the positions' table). */
  maxTokens: number;
  /** Hidden units of each layer's FFN; 0 (default): attention-only layers. */
  ffnDim?: number;
  /** The FFN's activation. Default 'relu'. */
  activation?: ActivationName;
  /** Seed of the initial weights (the same on every platform). Default 0. */
  seed?: number;
  backend?: BackendName;
}

/** The config with defaults filled in, and the kernels in use. */
export interface ResolvedTinyTransformerConfig extends Required<TinyTransformerConfig> {
  backend: BackendName;
}

/** Token ids: `[batch, tokens]` or `[tokens]`. */
export interface TokenIds {
  data: Int32Array;
  shape: number[];
}

export interface TinyForwardOptions {
  /** Next-token targets, tokens' length: an id to score, -1 not scored. */
  targets?: Int32Array;
  /** Keep what `backward()` needs. Default false. */
  training?: boolean;
  /** Return each layer's attention probabilities. Default false. */
  returnAttnWeights?: boolean;
}

export interface TinyForwardResult {
  /** Mean softmax cross-entropy over the scored positions (0 if none). */
  loss: number;
  /** Share of scored positions whose largest logit is the target. */
  accuracy: number;
  /** Scored positions. */
  counted: number;
  /** `[B, T, vocab]` (unbatched for 1-D tokens). */
  logits: Tensor;
  /** Per layer `[B, numHeads, T, T]`, with `returnAttnWeights`. */
  attnWeights?: Tensor[];
}

/** One layer's weights, X @ W layout (head h owns columns h*dModel/numHeads ... of wQ, wK, wV). */
export interface TinyTransformerLayerWeights {
  wQ: Float32Array;
  wK: Float32Array;
  wV: Float32Array;
  wO: Float32Array;
  bQ: Float32Array;
  bK: Float32Array;
  bV: Float32Array;
  bO: Float32Array;
  /** The FFN's, with `ffnDim` > 0. */
  w1?: Float32Array;
  b1?: Float32Array;
  w2?: Float32Array;
  b2?: Float32Array;
}

export interface TinyTransformerWeights {
  /** `[vocab, dModel]` */
  embedding: Float32Array;
  layers: TinyTransformerLayerWeights[];
  /** `[dModel, vocab]` */
  unembedding: Float32Array;
  /** `[vocab]` */
  unembeddingBias: Float32Array;
}

/**
 * A tiny language model to watch attention learn: token embedding +
 * sinusoidal positions, `numLayers` causal self-attention layers (each
 * `x += MHA(x)`, then `x += FFN(x)` with `ffnDim`), logits `x U + c`, softmax
 * cross-entropy. Trained by `SGD` / `Adam` (`step(model)`). Owns wasm
 * memory: `dispose()` (or `using`).
 */
export interface TinyTransformer {
  readonly config: ResolvedTinyTransformerConfig;
  readonly kernels: string;
  readonly disposed: boolean;
  /** RangeError for an id outside the vocabulary, a target outside [-1, vocab) or too many tokens. */
  forward(tokens: TokenIds, options?: TinyForwardOptions): TinyForwardResult;
  /** The gradients of the last training forward's loss. Error without one. */
  backward(): void;
  /** Every weight drawn again from `seed`; drops what was kept for training. */
  reset(seed: number): void;
  getWeights(): TinyTransformerWeights;
  /** RangeError for a wrong length or count (naming it); the model stays as it was. */
  setWeights(weights: TinyTransformerWeights): void;
  /** The last backward's gradients, in the weights' layout. */
  gradients(): TinyTransformerWeights;
  dispose(): void;
  [Symbol.dispose](): void;
}

export interface TinyTransformerConstructor {
  /** Error outside the training build; RangeError for a bad config (naming the field). */
  new (config: TinyTransformerConfig): TinyTransformer;
}
