// MultiHeadAttention: config, weights, forward options and results.

import type { KVCache, KVCacheOptions, PrecomputeOptions, PrecomputedKeyValue } from './caches.js';
import type { BroadcastMask, ScoresStageName } from './scaled-dot-product-attention.js';
import type {
  CacheTypeName, Tensor, TorchMatrix, WeightMatrix, WeightTypeName,
} from './tensors.js';
import type { MultiHeadAttentionGradients } from './training.js';

/**
 * A norm's kind: LayerNorm, RMSNorm, RMSNorm in Gemma's `x * (1 + weight)` form, or
 * LayerNorm in that form (Nemotron's LayerNorm1P).
 */
export type NormKindName = 'layer_norm' | 'rms_norm' | 'gemma_rms_norm' | 'layer_norm_1p';

/** `MultiHeadAttentionConfig.qkNorm`. */
export interface QkNormConfig {
  /** An RMSNorm kind; default `'rms_norm'`. */
  kind?: 'rms_norm' | 'gemma_rms_norm';
  /** Default 1e-6. */
  eps?: number;
}

export interface MultiHeadAttentionConfig {
  /** Model width d_model (features of the queries and of the output). */
  dModel: number;
  /** Number of heads H; must divide dModel (head width d_k = dModel / H). */
  numHeads: number;
  /** Features of the keys (cross-attention from another width). Default dModel. */
  kDim?: number;
  /** Features of the values. Default dModel. */
  vDim?: number;
  /**
   * Per-head query/key width d_k. Default dModel / numHeads; any other width
   * makes numHeads * headDim differ from dModel (e.g. some heads of a wider
   * model, as a worker of a head-sharded pool holds them).
   */
  headDim?: number;
  /** Per-head value width d_v. Default headDim. */
  headDimV?: number;
  /**
   * Key/value heads (grouped-query attention; 1 = multi-query): divides
   * numHeads; query head h reads key/value head h / (numHeads / numKvHeads).
   * wK is `[kDim, numKvHeads*headDim]`, wV `[vDim, numKvHeads*headDimV]`, and
   * KV caches hold only these heads. Default numHeads.
   */
  numKvHeads?: number;
  /**
   * Rotary position embedding of the projected queries and keys. Default
   * none. The training build refuses it (RangeError: no backward yet).
   */
  rope?: RopeConfig;
  /**
   * QK-norm (Qwen3, Gemma 3, OLMo 2): each head of the projected queries and
   * keys RMS-normalized over its headDim features and scaled by
   * `weights.qNorm` / `weights.kNorm`, after the bias and before `rope`.
   * Default none. The training build refuses it in a training forward.
   */
  qkNorm?: QkNormConfig;
  /** Whether the four projections have biases. Default true. */
  bias?: boolean;
  /** Backend for this object (`'highway'`, `'xsimd'`, `'scalar'`); default the module's `backend`. */
  backend?: string;
  /**
   * Threads a forward runs on, the caller's included. Results are
   * bit-identical for every count. Default (and 0): the module's `threads`;
   * otherwise 1 or the module's `threads` (a RangeError else: the workers
   * are started with the module, see `AttentionModuleOptions.threads`).
   */
  threads?: number;
  /**
   * How wQ, wK, wV and wO are held in memory (`WeightTypeName`). Default
   * `'f32'`, the training build's only one (a RangeError for the others:
   * its optimizers update float32 weights).
   */
  weights?: WeightTypeName;
  /**
   * How this attention's KV caches and precomputed keys/values hold them
   * (`CacheTypeName`). Default `'f32'`, the training build's only one. A
   * projected key or value beyond the type's range is a RangeError naming
   * the projection.
   */
  cacheType?: CacheTypeName;
}

/** How a causal mask aligns queries with keys when Tq != Tk. */
export type CausalAlignmentName = 'none' | 'top-left' | 'bottom-right';

/**
 * Rotary position embedding: feature pairs of each head rotated by
 * `pos * base^(-2i / rotaryDim)`; features from rotaryDim on stay as they are.
 */
export interface RopeConfig {
  /** 'half' pairs i with i + rotaryDim/2 (GPT-NeoX, Llama); 'interleaved' 2i with 2i+1 (GPT-J). */
  style: 'half' | 'interleaved';
  /** Default 10000. */
  base?: number;
  /** Even, <= headDim; default headDim. */
  rotaryDim?: number;
}

/**
 * What every object holding attentions reports of its resolved config (the
 * fields C++'s config field list gives each of them, and its heads' width).
 */
export interface ResolvedAttentionFields {
  dModel: number;
  numHeads: number;
  numKvHeads: number;
  /** d_k (default dModel / numHeads). */
  headDim: number;
  rope?: Required<RopeConfig>;
  backend: string;
  threads: number;
  weights: WeightTypeName;
  cacheType: CacheTypeName;
}

/** A config with every default filled in. */
export interface ResolvedMultiHeadAttentionConfig extends ResolvedAttentionFields {
  kDim: number;
  vDim: number;
  headDimV: number;
  qkNorm?: Required<QkNormConfig>;
  bias: boolean;
}

/**
 * Weights in the `X @ W` layout: rows are inputs, columns outputs, i.e. the
 * transpose of `torch.nn.Linear.weight`. Head h owns columns
 * `h*d_k .. (h+1)*d_k-1` of wQ and wK, columns `h*d_v ..` of wV and rows
 * `h*d_v .. (h+1)*d_v-1` of wO. Biases are required when `config.bias` is
 * true (the default) and must be omitted when it is false. The matrices
 * may come in the object's `config.weights` type (`WeightMatrix`); the
 * biases are float32.
 */
export interface MultiHeadAttentionWeights {
  /** `[dModel, H*d_k]` */
  wQ: WeightMatrix;
  /** `[kDim, H*d_k]` */
  wK: WeightMatrix;
  /** `[vDim, H*d_v]` */
  wV: WeightMatrix;
  /** `[H*d_v, dModel]` */
  wO: WeightMatrix;
  /** `[H*d_k]` */
  bQ?: Float32Array;
  /** `[H*d_k]` */
  bK?: Float32Array;
  /** `[H*d_v]` */
  bV?: Float32Array;
  /** `[dModel]` */
  bO?: Float32Array;
  /** `[headDim]`: QK-norm's scale of each query head; with `config.qkNorm` only. */
  qNorm?: Float32Array;
  /** `[headDim]`: QK-norm's scale of each key head; with `config.qkNorm` only. */
  kNorm?: Float32Array;
}

/**
 * `torch.nn.MultiheadAttention.state_dict()` entries as flat Float32Arrays
 * (e.g. `t.detach().float().contiguous().numpy().ravel()`), in PyTorch's own
 * `[out, in]` layout; they are transposed on loading. Give either
 * `in_proj_weight` (when kDim == vDim == dModel) or all three of
 * `q_proj_weight`, `k_proj_weight`, `v_proj_weight`. The output projection may
 * be named with a dot as in the state_dict or with an underscore.
 * `bias_k`/`bias_v` (add_bias_kv) are not supported. The weight matrices
 * of an object whose `config.weights` is `'f16'` or `'bf16'` may be that
 * type's bits (`TorchMatrix`), transposed as bits, never widened.
 */
export interface PyTorchMultiheadAttentionState {
  /** `[2*H*d_k + H*d_v, dModel]`: rows of W_q, then W_k, then W_v. */
  in_proj_weight?: TorchMatrix;
  /** `[H*d_k, dModel]` */
  q_proj_weight?: TorchMatrix;
  /** `[H*d_k, kDim]` */
  k_proj_weight?: TorchMatrix;
  /** `[H*d_v, vDim]` */
  v_proj_weight?: TorchMatrix;
  /** `[2*H*d_k + H*d_v]`: b_q, b_k, b_v. Required when config.bias. */
  in_proj_bias?: Float32Array;
  /** `[dModel, H*d_v]` (also accepted as `'out_proj.weight'`). */
  out_proj_weight?: TorchMatrix;
  'out_proj.weight'?: TorchMatrix;
  /** `[dModel]` (also accepted as `'out_proj.bias'`). Required when config.bias. */
  out_proj_bias?: Float32Array;
  'out_proj.bias'?: Float32Array;
}

/**
 * The options of one attention call that `forward` and `forwardIncremental`
 * share; Tq and Tk are the call's queries and keys.
 */
interface AttentionCallOptions {
  /**
   * `[B*Tk]`, 1 = real token that may be attended, 0 = padding. (This is the
   * opposite of PyTorch's key_padding_mask, where true means "ignore".)
   * A query whose keys are all masked gets zero attention (output = bO).
   */
  keyPaddingMask?: Uint8Array;
  /** `[B]`: batch item b attends to its first `kvLengths[b]` keys only (with `keyPaddingMask`, both apply). */
  kvLengths?: number[] | Uint32Array | Int32Array;
  /**
   * Added to the scaled scores; may hold -Infinity. A Float32Array alone is
   * `[Tq, Tk]` or `[B, H, Tq, Tk]` by its length; with a shape it broadcasts
   * from `[Tq, Tk]`, `[B, 1, Tq, Tk]`, `[1, H, Tq, Tk]` or `[B, H, Tq, Tk]`
   * (the last dimension may be less than Tk: the keys past it masked).
   */
  attnMask?: Float32Array | BroadcastMask<Float32Array>;
  /** 1 = may attend, 0 = masked (PyTorch's convention for boolean `attn_mask` in `scaled_dot_product_attention`); shapes as `attnMask`. */
  boolMask?: Uint8Array | BroadcastMask<Uint8Array>;
  /** Also return the softmax probabilities of every head. */
  returnAttnWeights?: boolean;
  /**
   * Also return the scores: `true` or `'masked'`, those the softmax takes
   * (scaled, capped, masked: -Infinity where masked); `'scaled'` or
   * `'capped'`, before the softcap or after it, for every key masked or not
   * (as `attention()`'s).
   */
  returnScores?: boolean | ScoresStageName;
  /** Also return each head's contribution z_h W_O^h in model space. */
  returnPerHeadOutput?: boolean;
  /**
   * Also return the per-head intermediate tensors `q`, `k`, `v` and
   * `headOutput` (z_h = P_h V_h), for inspecting and teaching: copies that
   * cost time and memory, so off by default.
   */
  returnIntermediates?: boolean;
  /**
   * Key window `[left, right]` around each query's diagonal (i + Tk - Tq
   * when causal, else i): key j is visible iff i' - left <= j <= i' + right;
   * -1 = unbounded. Keys outside are never computed. Default [-1, -1].
   */
  window?: [number, number] | readonly number[];
  /** Multiplies q . k; default 1 / sqrt(headDim). */
  scale?: number;
  /** c > 0: scores become c * tanh(scores / c) after the scale, before masks. */
  softcap?: number;
}

export interface ForwardOptions extends AttentionCallOptions {
  /**
   * Causal mask: `true` or 'bottom-right': query i attends to keys
   * j <= i + (Tk - Tq) (aligned as when decoding with a cache; j <= i when
   * Tq == Tk); 'top-left': j <= i (PyTorch's is_causal, ONNX Attention
   * without a cache); `false` or 'none': no causal mask.
   */
  causal?: boolean | CausalAlignmentName;
  /**
   * Query i sits at key position `queryOffset + i` for the causal mask and
   * the window, in place of the alignment's: one integer, or one per batch
   * item (as `attention()`'s). Needs `causal` or `window`.
   */
  queryOffset?: number | number[] | Int32Array;
  /**
   * Rotary position of the first query (and, in self-attention, key), as
   * after this many earlier tokens. Default 0.
   */
  positionOffset?: number;
  /**
   * Keep what `backward()` needs (the inputs, masks and each query's softmax
   * statistics) until the next forward, `setWeights` or optimizer step.
   * Training build only; not with a PrecomputedKeyValue or rotary positions,
   * and the weights must be `'f32'`. Default false.
   */
  training?: boolean;
}

/**
 * Results are fresh arrays owned by the caller (never views onto the wasm
 * heap). Shapes are batched (`[B, ...]`) when the query was 3-D, unbatched
 * (no leading B) when it was 2-D. A call types its result as
 * `ForwardResultFor` its options: the tensors asked for are not optional.
 */
export interface ForwardResult {
  /** `[B, Tq, dModel]` */
  output: Tensor;
  /** `[B, H, Tq, Tk]`, with `returnAttnWeights`. */
  attnWeights?: Tensor;
  /** `[B, H, Tq, Tk]`, with `returnScores`: by default what the softmax takes (scaled, capped, masked: -Infinity where masked). */
  scores?: Tensor;
  /** `[B, H, Tq, dModel]`, with `returnPerHeadOutput`: output = sum over h + bO. */
  perHeadOutput?: Tensor;
  /**
   * `[B, H, Tq, d_k]`, with `returnIntermediates`: the projected queries
   * query·wQ + bQ, split into heads (head h = columns h*d_k .. of the
   * projection).
   */
  q?: Tensor;
  /**
   * `[B, H, Tk, d_k]`, with `returnIntermediates`: the projected keys, split
   * into heads. With a PrecomputedKeyValue, its keys; with
   * `forwardIncremental`, every key in the cache (Tk = length + n).
   */
  k?: Tensor;
  /** `[B, H, Tk, d_v]`, with `returnIntermediates`: the projected values, split into heads. */
  v?: Tensor;
  /**
   * `[B, H, Tq, d_v]`, with `returnIntermediates`: each head's output
   * z_h = P_h V_h (attnWeights times v), before the output projection:
   * perHeadOutput's head h = z_h times rows h*d_v .. of wO.
   */
  headOutput?: Tensor;
}

/**
 * The result of a forward whose options set `returnAttnWeights`,
 * `returnPerHeadOutput`, `returnIntermediates` and `returnScores` to (the
 * types) `A`, `P`, `I` and `S`: what was asked for with a literal `true` is present, not
 * optional, e.g. `mha.forward(x, m, undefined, { returnAttnWeights: true })`
 * has `attnWeights: Tensor`.
 */
export type ForwardResultFor<A extends boolean, P extends boolean, I extends boolean,
  S extends boolean | ScoresStageName = false> =
  ForwardResult &
  ([A] extends [true] ? { attnWeights: Tensor } : unknown) &
  ([S] extends [true | ScoresStageName] ? { scores: Tensor } : unknown) &
  ([P] extends [true] ? { perHeadOutput: Tensor } : unknown) &
  ([I] extends [true] ? { q: Tensor; k: Tensor; v: Tensor; headOutput: Tensor } : unknown);

/**
 * Multi-head self- and cross-attention. Owns wasm memory: call `dispose()`
 * (or declare it with `using`) when done. Errors: TypeError for a wrong type
 * (e.g. data that is not a Float32Array), RangeError for a wrong size, shape
 * or value and for a heap that cannot grow, Error for a call before
 * setWeights or after dispose; each message names the argument, what was
 * expected and what was given. The object stays usable after an error.
 */
export interface MultiHeadAttention {
  /** The config with defaults filled in. */
  readonly config: ResolvedMultiHeadAttentionConfig;
  /** The kernel table in use, e.g. `"highway:WASM"`. */
  readonly kernels: string;
  /** Whether dispose() was called. */
  readonly disposed: boolean;
  /** Copies (and packs) the weights; see MultiHeadAttentionWeights for the layout. */
  setWeights(w: MultiHeadAttentionWeights): void;
  /** Loads PyTorch's nn.MultiheadAttention weights (transposing them). */
  setWeightsFromPyTorch(state: PyTorchMultiheadAttentionState): void;
  /**
   * Cross-attention of `query` over keys/values projected once by
   * `precomputeKeyValue` (value must be omitted). Same results as passing the
   * memory tensor itself; the options' `keyPaddingMask`, if given, replaces
   * the one the object was made with.
   */
  forward<A extends boolean = false, P extends boolean = false, I extends boolean = false, S extends boolean | ScoresStageName = false>(query: Tensor,
    precomputed: PrecomputedKeyValue, value?: undefined,
    options?: ForwardOptions & { returnAttnWeights?: A; returnPerHeadOutput?: P; returnIntermediates?: I; returnScores?: S }): ForwardResultFor<A, P, I, S>;
  // The precomputed overload comes first: a call that matches neither is
  // reported against the last one (TypeScript 7 names only that one), which
  // should be the tensor overload, so that a misspelled option is what the
  // message names.
  /**
   * Attention of `query` ([B, Tq, dModel]) over `key` ([B, Tk, kDim]) and
   * `value` ([B, Tk, vDim]). `key` omitted (or the query itself):
   * self-attention; `value` omitted: value = key. Inputs are copied, never
   * kept.
   */
  forward<A extends boolean = false, P extends boolean = false, I extends boolean = false, S extends boolean | ScoresStageName = false>(query: Tensor,
    key?: Tensor, value?: Tensor, options?: ForwardOptions & { returnAttnWeights?: A; returnPerHeadOutput?: P; returnIntermediates?: I; returnScores?: S }):
    ForwardResultFor<A, P, I, S>;
  /**
   * An empty cache of this attention's keys/values for `forwardIncremental`.
   * Needs no weights. RangeError for a zero batch or maxLength. The training
   * build has no KV caches (an Error).
   */
  createKVCache(options: KVCacheOptions): KVCache;
  /**
   * Self-attention of `n >= 1` new tokens `x` (`[B, n, dModel]`, B = the
   * cache's batch): projects their keys and values into the cache, then
   * attends causally over everything it holds, so feeding a sequence token by
   * token gives the rows of `forward(x, undefined, undefined, { causal: true })`.
   * Needs kDim == vDim == dModel. A full cache is a RangeError naming the
   * numbers, and a failed call leaves the cache unchanged.
   */
  forwardIncremental<A extends boolean = false, P extends boolean = false, I extends boolean = false, S extends boolean | ScoresStageName = false>(x: Tensor,
    cache: KVCache, options?: IncrementalForwardOptions & { returnAttnWeights?: A; returnPerHeadOutput?: P; returnIntermediates?: I; returnScores?: S }):
    ForwardResultFor<A, P, I, S>;
  /**
   * Projects `memory` (`[B, S, kDim]`, used as keys and values; needs
   * kDim == vDim) once, for cross-attention of many queries:
   * `forward(query, precomputed)`. The training build has no precomputed
   * keys and values (an Error).
   */
  precomputeKeyValue(memory: Tensor, options?: PrecomputeOptions): PrecomputedKeyValue;
  /**
   * The gradients of the last forward, a training one (`training: true`),
   * given the loss's gradient at its output (`dOutput`, the output's
   * shape). Training build only. Error without a training forward since the
   * weights last changed, RangeError for a wrong shape or a non-finite value.
   */
  backward(dOutput: Tensor): MultiHeadAttentionGradients;
  /** Frees the wasm memory; later calls throw. Calling it again does nothing. */
  dispose(): void;
  [Symbol.dispose](): void;
}

/**
 * Options of `MultiHeadAttention.forwardIncremental` (causal is implied), as
 * `forward`'s with Tq = n, the new tokens, and Tk = length + n, everything
 * cached with them: e.g. `keyPaddingMask` is `[B*(length+n)]` and
 * `returnIntermediates` returns `k` and `v` of every cached token.
 */
export interface IncrementalForwardOptions extends AttentionCallOptions {}

export interface MultiHeadAttentionConstructor {
  /** Throws a RangeError for an invalid config or an unknown backend. */
  new (config: MultiHeadAttentionConfig): MultiHeadAttention;
  readonly prototype: MultiHeadAttention;
}
