// KV caches and precomputed keys/values.

import type { Tensor } from './tensors.js';

/** Options of `createKVCache`. */
export interface KVCacheOptions {
  /** Sequences decoded side by side; every `forwardIncremental` input must have this batch. */
  batch: number;
  /** Tokens the cache can hold. It is allocated once; a step past it is a RangeError. */
  maxLength: number;
}

/**
 * Projected keys and values of the tokens seen so far, for autoregressive
 * self-attention (`forwardIncremental`). Made by `createKVCache()` of a
 * MultiHeadAttention or a TransformerDecoderLayer; usable with any attention
 * of the same head layout in the same module (another layout, or another
 * module, is an error). The values are tied to the weights that projected
 * them: after `setWeights`, start a new cache (or `reset()`).
 *
 * Owns wasm memory: call `dispose()` (or declare it with `using`). Any use
 * after `dispose()` throws an Error.
 */
export interface KVCache {
  /** Batch the cache was created for. */
  readonly batch: number;
  /** Capacity in tokens. */
  readonly maxLength: number;
  /** Tokens cached now (0 .. maxLength). */
  readonly length: number;
  /** Whether dispose() was called. */
  readonly disposed: boolean;
  /**
   * Appends n already-projected tokens: `keys [B, n, H*d_k]` and
   * `values [B, n, H*d_v]` (token-major; a 2-D `[n, ...]` tensor means B = 1),
   * e.g. what `keys()` / `values()` of another cache returned, to restore a
   * saved prompt. RangeError naming the numbers if they do not fit (the
   * cache is then unchanged).
   */
  append(keys: Tensor, values: Tensor): void;
  /** A copy of the cached keys, `[B, length, H*d_k]`. */
  keys(): Tensor;
  /** A copy of the cached values, `[B, length, H*d_v]`. */
  values(): Tensor;
  /**
   * Rolls back to the first `n` tokens (0 <= n <= length), e.g. to drop a
   * rejected draft or a beam's tail. RangeError otherwise.
   */
  truncate(n: number): void;
  /** Empties the cache (length 0), keeping its memory. */
  reset(): void;
  /** Frees the wasm memory; later calls throw. Calling it again does nothing. */
  dispose(): void;
  [Symbol.dispose](): void;
}

/** Options of `precomputeKeyValue` / `precomputeMemory`. */
export interface PrecomputeOptions {
  /**
   * `[B*S]` over the memory's tokens, 1 = real token, 0 = padding. It
   * applies whenever the object is used, unless that call passes its own
   * mask.
   */
  keyPaddingMask?: Uint8Array;
}

/**
 * An encoder memory's cross-attention keys and values, projected once and
 * reused by every decoding step: pass it where a key (MultiHeadAttention
 * `forward(query, precomputed)`) or a memory (TransformerDecoderLayer) is
 * expected. Usable with any attention of the same head layout in the same
 * module; its values are tied to the weights that projected them.
 *
 * Owns wasm memory: call `dispose()` (or declare it with `using`). Any use
 * after `dispose()` throws an Error.
 */
export interface PrecomputedKeyValue {
  /** Batch of the memory. */
  readonly batch: number;
  /** Tokens of the memory (S). */
  readonly tokens: number;
  /** Whether dispose() was called. */
  readonly disposed: boolean;
  /** Frees the wasm memory; later uses throw. Calling it again does nothing. */
  dispose(): void;
  [Symbol.dispose](): void;
}
