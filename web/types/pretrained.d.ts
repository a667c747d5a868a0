// fromPretrained: a Hugging Face model's layer or attention from its config.json.

import type {
  BlockForwardOptions, StackForwardOptions, TransformerBlock, TransformerStack,
} from './blocks.js';
import type { ForwardOptions, IncrementalForwardOptions, MultiHeadAttention } from './attention.js';
import type { LoadCheckpointResult } from './checkpoints.js';
import type {
  DecoderForwardOptions, EncoderForwardOptions, SelfAttentionOptions, TransformerDecoderLayer,
  TransformerEncoderLayer,
} from './layers.js';
import type {
  PooledMultiHeadAttention, PooledTransformerBlock, PooledTransformerDecoderLayer,
  PooledTransformerEncoderLayer, PooledTransformerStack,
} from './pool.js';
import type { CacheTypeName, WeightTypeName } from './tensors.js';

/**
 * A parsed Hugging Face `config.json`: its `model_type` (one of `bert`,
 * `roberta`, `distilbert`, `vit`, `gpt2`, `bart`, `whisper`, `gptj`,
 * `gpt_neox`, `llama`, `mistral`, `qwen2`, `qwen3`, `gemma`, `gemma2`,
 * `phi3`) and the fields transformers 4 or 5 writes.
 */
export type HuggingFaceConfig = { model_type: string; [field: string]: unknown };

export interface FromPretrainedOptions {
  /**
   * The layer (`'model.layers.3'`, `'encoder.layer.1'`, `'h.1'`,
   * `'decoder.layers.0'`) or attention (`'model.layers.3.self_attn'`,
   * `'h.0.attn'`, `'transformer.layer.1.attention'`,
   * `'decoder.layers.0.encoder_attn'`) to build. Omitted: the whole model as a
   * `TransformerStack`, for the decoder-only models whose layers are blocks
   * (Llama, Mistral, Qwen2/3, Gemma 1/2, Phi-3, GPT-J, GPT-NeoX); an Error
   * for the others.
   */
  prefix?: string;
  /** The object's `config.backend`. */
  backend?: string;
  /** The object's `config.weights`. */
  weights?: WeightTypeName;
  /** The object's `config.cacheType`. */
  cacheType?: CacheTypeName;
}

/** What `fromPretrained` resolves to for an attention (`M`: the pool's from `pool.fromPretrained`). */
export interface PretrainedAttention<M = MultiHeadAttention> {
  kind: 'MultiHeadAttention';
  module: M;
  /**
   * The options the model's forward uses: `causal` (true for decoder-only
   * models and decoder self-attention), and where the config sets them
   * `window` (`[sliding_window - 1, 0]`), `scale` and `softcap`. Spread
   * them into a call's own options (masks, ...).
   */
  forwardOptions: ForwardOptions;
  /** A causal attention's: `forwardOptions` for `forwardIncremental` (no `causal`). */
  incrementalOptions?: IncrementalForwardOptions;
  /** What `loadCheckpoint` loaded. */
  loaded: LoadCheckpointResult;
}

/** What `fromPretrained` resolves to for an encoder layer (BERT, GPT-2's block, ...). */
export interface PretrainedEncoderLayer<M = TransformerEncoderLayer> {
  kind: 'TransformerEncoderLayer';
  module: M;
  /** As `PretrainedAttention.forwardOptions` (GPT-2's block: `causal: true`). */
  forwardOptions: EncoderForwardOptions;
  loaded: LoadCheckpointResult;
}

/** What `fromPretrained` resolves to for a decoder layer (BART's, Whisper's). */
export interface PretrainedDecoderLayer<M = TransformerDecoderLayer> {
  kind: 'TransformerDecoderLayer';
  module: M;
  forwardOptions: DecoderForwardOptions;
  /** `forwardOptions` for `forwardIncremental` (no `causal`). */
  incrementalOptions?: SelfAttentionOptions;
  loaded: LoadCheckpointResult;
}

/**
 * What `fromPretrained` resolves to for a block (Llama, Mistral, Qwen,
 * Gemma, Phi-3 layers; GPT-J's and GPT-NeoX's parallel ones).
 */
export interface PretrainedBlock<M = TransformerBlock> {
  kind: 'TransformerBlock';
  module: M;
  forwardOptions: BlockForwardOptions;
  /** A causal block's: `forwardOptions` for `forwardIncremental` (no `causal`). */
  incrementalOptions?: SelfAttentionOptions;
  loaded: LoadCheckpointResult;
}

/**
 * What `fromPretrained` resolves to without `options.prefix`: the whole
 * model's layers as a stack (the decoder-only models whose layers are
 * blocks), its final norm included; `loaded.unused` lists what the stack
 * does not take (embeddings, a head).
 */
export interface PretrainedStack<M = TransformerStack> {
  kind: 'TransformerStack';
  module: M;
  forwardOptions: StackForwardOptions;
  /** `forwardOptions` for `forwardIncremental` (no `causal`). */
  incrementalOptions?: SelfAttentionOptions;
  loaded: LoadCheckpointResult;
}

export type PretrainedModule = PretrainedAttention | PretrainedEncoderLayer |
  PretrainedDecoderLayer | PretrainedBlock | PretrainedStack;

/** What `pool.fromPretrained` resolves to. */
export type PooledPretrainedModule = PretrainedAttention<PooledMultiHeadAttention> |
  PretrainedEncoderLayer<PooledTransformerEncoderLayer> |
  PretrainedDecoderLayer<PooledTransformerDecoderLayer> | PretrainedBlock<PooledTransformerBlock> |
  PretrainedStack<PooledTransformerStack>;
