// Training: gradients and optimizers.

import type { MultiHeadAttention } from './attention.js';
import type { TransformerBlock, TransformerStack } from './blocks.js';
import type { TransformerDecoderLayer, TransformerEncoderLayer } from './layers.js';
import type { Tensor } from './tensors.js';
import type { TinyTransformer } from './tiny-model.js';

/**
 * The gradients of an attention's weights and biases, in `setWeights`'
 * layout (`X @ W`); the biases' when the attention has them.
 */
export interface AttentionWeightGradients {
  dWQ: Float32Array;
  dWK: Float32Array;
  dWV: Float32Array;
  dWO: Float32Array;
  dBQ?: Float32Array;
  dBK?: Float32Array;
  dBV?: Float32Array;
  dBO?: Float32Array;
  /** With `config.qkNorm`: QK-norm's scales' (as given to `setWeights`). */
  dQNorm?: Float32Array;
  dKNorm?: Float32Array;
}

/**
 * `MultiHeadAttention.backward(dOutput)`: the gradients of the loss whose
 * gradient at the output is `dOutput`, with respect to the last (training)
 * forward's inputs and to every weight. Tensors are shaped as the inputs
 * were (unbatched when `dOutput` is 2-D).
 */
export interface MultiHeadAttentionGradients extends AttentionWeightGradients {
  dQuery: Tensor;
  dKey: Tensor;
  dValue: Tensor;
  /** Self-attention (`forward(x)`): the input's gradient, dQuery + dKey + dValue. */
  dInput?: Tensor;
}

export interface FeedForwardGradients {
  dW1: Float32Array;
  dB1: Float32Array;
  dW2: Float32Array;
  dB2: Float32Array;
}

export interface LayerNormGradients {
  dGamma: Float32Array;
  dBeta: Float32Array;
}

/** `TransformerEncoderLayer.backward(dOutput)`, named as `setWeights`' groups. */
export interface TransformerEncoderLayerGradients {
  dInput: Tensor;
  attention: AttentionWeightGradients;
  ffn: FeedForwardGradients;
  norm1: LayerNormGradients;
  norm2: LayerNormGradients;
}

/** `TransformerDecoderLayer.backward(dOutput)`, named as `setWeights`' groups. */
export interface TransformerDecoderLayerGradients {
  dInput: Tensor;
  dMemory: Tensor;
  selfAttention: AttentionWeightGradients;
  crossAttention: AttentionWeightGradients;
  ffn: FeedForwardGradients;
  norm1: LayerNormGradients;
  norm2: LayerNormGradients;
  norm3: LayerNormGradients;
}

export interface GatedFeedForwardGradients {
  dWGate: Float32Array;
  dWUp: Float32Array;
  dWDown: Float32Array;
  dBGate: Float32Array;
  dBUp: Float32Array;
  dBDown: Float32Array;
}

/** A mixture of experts', the routing as the forward chose it; an expert no token chose: zeros. */
export interface MixtureOfExpertsGradients {
  dRouter: Float32Array;
  experts: GatedFeedForwardGradients[];
}

/** A block norm's: `dBeta` for a LayerNorm only. */
export interface BlockNormGradients {
  dGamma: Float32Array;
  dBeta?: Float32Array;
}

/** One sublayer's, named as `SublayerWeights`: its norms and its mixer's group. */
export interface SublayerGradients {
  norm: BlockNormGradients;
  outputNorm?: BlockNormGradients;
  attention?: AttentionWeightGradients;
  ffn?: FeedForwardGradients;
  gatedFfn?: GatedFeedForwardGradients;
  moe?: MixtureOfExpertsGradients;
}

/** `TransformerBlock.backward(dOutput)`. */
export interface TransformerBlockGradients {
  dInput: Tensor;
  /** With cross-attention sublayers: the memory's. */
  dMemory?: Tensor;
  /** One entry per sublayer, in order. */
  sublayers: SublayerGradients[];
}

/** `TransformerStack.backward(dOutput)`: grouped as `setWeights` takes the weights. */
export interface TransformerStackGradients {
  dInput: Tensor;
  /** One entry per layer, in order. */
  layers: { sublayers: SublayerGradients[] }[];
  /** With `config.finalNorm`: the final norm's (`dBeta` for a LayerNorm). */
  finalNorm?: BlockNormGradients;
}

/** What an optimizer updates: an object of the same module with a backward since its weights changed. */
export type Trainable = MultiHeadAttention | TransformerEncoderLayer | TransformerDecoderLayer |
  TransformerBlock | TransformerStack | TinyTransformer;

/** `torch.optim.SGD`'s options (dampening 0). */
export interface SGDOptions {
  /** Learning rate, a finite number > 0. Default 1e-3. */
  lr?: number;
  /** Momentum >= 0 (0: plain SGD). Default 0. */
  momentum?: number;
  /** L2 penalty added to the gradient, >= 0. Default 0. */
  weightDecay?: number;
  /** Nesterov momentum (needs momentum > 0). Default false. */
  nesterov?: boolean;
}

/** `torch.optim.Adam`'s options. */
export interface AdamOptions {
  /** Learning rate, a finite number > 0. Default 1e-3. */
  lr?: number;
  /** Decay of the first moment, in [0, 1). Default 0.9. */
  beta1?: number;
  /** Decay of the second moment, in [0, 1). Default 0.999. */
  beta2?: number;
  /** Added to the second moment's square root, > 0. Default 1e-8. */
  eps?: number;
  /** Weight decay >= 0: L2 added to the gradient, or AdamW's with decoupledWeightDecay. Default 0. */
  weightDecay?: number;
  /** AdamW: decay the weights by lr * weightDecay instead of adding to the gradient. Default false. */
  decoupledWeightDecay?: boolean;
}

/**
 * An optimizer: fused SIMD updates of an object's packed weights in place,
 * from its last `backward()`, keeping its moments per object. Owns wasm
 * memory: `dispose()` (or `using`) when done.
 */
export interface Optimizer<O = SGDOptions | AdamOptions> {
  /**
   * The options it steps with: those given, and the defaults (C++'s, as
   * documented on `SGDOptions` and `AdamOptions`) for the rest.
   * Error once disposed.
   */
  readonly options: Required<O>;
  /**
   * One update of every weight, bias and LayerNorm parameter of `target`.
   * Error without a backward since its weights last changed. After it the
   * target needs a new training forward before its next backward.
   */
  step(target: Trainable): void;
  readonly disposed: boolean;
  dispose(): void;
  [Symbol.dispose](): void;
}

export interface OptimizerConstructor<O> {
  /** RangeError for an option out of range (naming it); Error outside the training build. */
  new (options?: O): Optimizer<O>;
}
