// attention(q, k, v, options): attention on projected heads.

import type { CausalAlignmentName } from './attention.js';
import type { BackendName } from './module.js';
import type { Tensor } from './tensors.js';

/**
 * A mask with its shape, broadcast to `[B, H, Tq, Tk]` from `[Tq, Tk]`,
 * `[B, 1, Tq, Tk]`, `[1, H, Tq, Tk]` or `[B, H, Tq, Tk]`. Its last
 * dimension may be less than `Tk`: the keys past it are masked (as ONNX
 * pads such a mask with -Infinity).
 */
export interface BroadcastMask<T extends Float32Array | Uint8Array> {
  data: T;
  shape: number[];
}

/**
 * Options of `attention(q, k, v, options)`. `q`, `k`, `v` are 4-D
 * head-major `[B, Hq, Tq, d]`, `[B, Hkv, Tk, d]`, `[B, Hkv, Tk, dv]` or all
 * 3-D token-major `[B, T, H*d]` (then `numHeads`, and `numKvHeads` if
 * different, say how to split the features). `Hkv` divides `Hq`: query head
 * h uses key/value head `h / (Hq / Hkv)` (grouped-query attention; keys and
 * values are never copied per query head). Every mask combines: a key is
 * attended only if every mask allows it; a query row with no visible key
 * gets zero weights and a zero output. Wrong shapes and values are
 * RangeErrors naming the option, the expected and the given value.
 */
export interface AttentionOptions {
  /**
   * `'top-left'`: query i sees keys j <= i (PyTorch's `is_causal`, ONNX
   * `Attention` without a cache); `'bottom-right'`: j <= i + Tk - Tq (the last
   * query sees every key, as `MultiHeadAttention`'s `causal: true` and
   * decoding with a cache). Default `'none'`.
   */
  causal?: CausalAlignmentName;
  /** Multiplies q·k. Default `1 / sqrt(d)`. */
  scale?: number;
  /** c > 0: scores become `c * tanh(scores / c)` after the scale, before the masks. Default: none. */
  softcap?: number;
  /**
   * `[left, right]`: key j is visible to query i iff `i' - left <= j <= i' + right`,
   * with `i' = i` (or `i + Tk - Tq` for `'bottom-right'`, or
   * `queryOffset + i`); -1 = unbounded on that side. Keys outside are never
   * computed. Default `[-1, -1]`.
   */
  window?: [number, number];
  /**
   * Where query 0 sits among the keys: query i sits at `i' = queryOffset + i`
   * for the causal mask (`j <= i'`) and the window, in place of the
   * alignment's `i'`. One integer for every batch item or one per item
   * (`[B]`), any sign (a query with `i' < 0` sees no key). Needs `causal` or
   * `window`. ONNX `Attention`'s `is_causal`: the past length with a past
   * cache; `kvLengths[b] - Tq` with `nonpad_kv_seqlen`.
   */
  queryOffset?: number | number[] | Int32Array;
  /** Added to the scaled scores (may hold -Infinity); a Float32Array alone is `[Tq, Tk]`. */
  attnMask?: Float32Array | BroadcastMask<Float32Array>;
  /** 1 = may attend, 0 = masked (PyTorch's convention for boolean `attn_mask`); alone `[Tq, Tk]`. */
  boolMask?: Uint8Array | BroadcastMask<Uint8Array>;
  /** `[B*Tk]`, 1 = real token, 0 = padding. */
  keyPaddingMask?: Uint8Array;
  /** `[B]`: batch item b attends to its first `kvLengths[b]` keys only (ONNX `nonpad_kv_seqlen`). */
  kvLengths?: number[] | Uint32Array | Int32Array;
  /** Query heads of a 3-D (token-major) `q`. */
  numHeads?: number;
  /** Key/value heads of a 3-D `k` and `v`. Default `numHeads`. */
  numKvHeads?: number;
  /** Also return the softmax probabilities. */
  returnAttnWeights?: boolean;
  /**
   * Also return the scores: `true` or `'masked'`, those the softmax takes
   * (scaled, capped, masked: -Infinity where masked); `'scaled'`, `scale * q·k`;
   * `'capped'`, after the softcap (ONNX `qk_matmul_output_mode` 2, 0 and 1).
   * `'scaled'` and `'capped'` hold every key, masked or not.
   */
  returnScores?: boolean | ScoresStageName;
  /** Backend of this call. Default: the module's. */
  backend?: BackendName;
}

/** Fresh arrays owned by the caller. */
export interface AttentionResult {
  /** `[B, Hq, Tq, dv]`, or `[B, Tq, Hq*dv]` for 3-D inputs. */
  output: Tensor;
  /** `[B, Hq, Tq, Tk]`, with `returnAttnWeights`. */
  attnWeights?: Tensor;
  /** `[B, Hq, Tq, Tk]`, with `returnScores`. */
  scores?: Tensor;
}

/** The scores `returnScores` may ask for: before the softcap, before the masks, or after both. */
export type ScoresStageName = 'scaled' | 'capped' | 'masked';

/** The result of `attention` whose options set `returnAttnWeights` to `A` and `returnScores` to `S`. */
export type AttentionResultFor<A extends boolean, S extends boolean | ScoresStageName> =
  AttentionResult &
  ([A] extends [true] ? { attnWeights: Tensor } : unknown) &
  ([S] extends [true | ScoresStageName] ? { scores: Tensor } : unknown);
