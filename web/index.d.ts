// Type definitions for simd-attention (hand-written; the implementation is
// index.js over the Embind glue in dist/).

declare global {
  interface SymbolConstructor {
    /** Explicit resource management (`using`); polyfilled by the package when missing. */
    readonly dispose: unique symbol;
  }
}

/**
 * A dense float32 tensor, row-major. Activations are `[batch, tokens,
 * features]`; a 2-D `[tokens, features]` tensor means batch = 1 ("unbatched").
 */
export interface Tensor {
  data: Float32Array;
  shape: number[];
}

/** Names of the SIMD backends a build can contain. */
export type BackendName = 'highway' | 'xsimd' | 'scalar';

export interface AttentionModuleOptions {
  /**
   * Backend of the MultiHeadAttention objects this module creates unless
   * their config says otherwise. Default: the fastest available, i.e.
   * `backends[0]` (`'highway'`). An unknown name or one not compiled into
   * the build rejects with a RangeError.
   */
  backend?: BackendName;
  /**
   * `true` forces the SIMD build (rejects if the engine lacks WebAssembly
   * SIMD), `false` forces the non-SIMD build. Default: the SIMD build when
   * `WebAssembly.validate` accepts a SIMD module.
   */
  simd?: boolean;
  /**
   * Folder (Node: a path or `file:` URL; browsers: a URL, relative ones
   * resolved against the document) holding `simd_attention_simd.wasm` and
   * `simd_attention_nosimd.wasm`, for apps that serve the files themselves.
   * Default: the package's own `dist/`, found relative to the module
   * (`import.meta.url`).
   */
  wasmPath?: string | URLLike;
}

/** A `URL` (typed structurally so that no DOM or Node typings are needed). */
export interface URLLike {
  readonly href: string;
}

/**
 * Loads the wasm build (SIMD or not) and resolves to a module whose
 * `MultiHeadAttention` class runs on it. Each call instantiates a separate
 * wasm instance with its own heap.
 *
 * Rejects with a TypeError/RangeError for bad options, and with an Error when
 * the engine lacks WebAssembly (exception handling) or the .wasm cannot be
 * loaded.
 */
export function createAttentionModule(options?: AttentionModuleOptions): Promise<AttentionModule>;
export default createAttentionModule;

/** Whether this JS engine runs WebAssembly SIMD (the check the loader uses). */
export function wasmSimdSupported(): boolean;

/** Heap statistics of one module's wasm instance, in bytes. */
export interface MemoryStats {
  /** Current size of the wasm memory (it only grows). */
  heapBytes: number;
  /** The most the wasm memory may grow to (2 GiB). */
  maxHeapBytes: number;
  /** Bytes currently allocated by the C++ side (malloc). */
  allocatedBytes: number;
  /** JS values the wasm side holds handles to (Embind); stays flat unless something leaks. */
  jsHandles: number;
}

export interface AttentionModule {
  /** Default backend of new MultiHeadAttention objects. */
  readonly backend: string;
  /** Whether this is the wasm SIMD build. */
  readonly simd: boolean;
  /** Backends compiled into this build, fastest first. */
  readonly backends: string[];
  /** Kernel table of the default backend, e.g. `"highway:WASM"` or `"scalar"`. */
  readonly kernels: string;
  /** Multi-head attention running on this module's wasm instance. */
  readonly MultiHeadAttention: MultiHeadAttentionConstructor;
  /** Heap statistics, e.g. to watch for leaks. */
  memoryStats(): MemoryStats;
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
  /** Per-head value width d_v. Default dModel / numHeads. */
  headDimV?: number;
  /** Whether the four projections have biases. Default true. */
  bias?: boolean;
  /** Backend for this object (`'highway'`, `'xsimd'`, `'scalar'`); default the module's `backend`. */
  backend?: string;
}

/** A config with every default filled in. */
export interface ResolvedMultiHeadAttentionConfig {
  dModel: number;
  numHeads: number;
  kDim: number;
  vDim: number;
  /** d_k = dModel / numHeads. */
  headDim: number;
  headDimV: number;
  bias: boolean;
  backend: string;
}

/**
 * Weights in the `X @ W` layout: rows are inputs, columns outputs, i.e. the
 * transpose of `torch.nn.Linear.weight`. Head h owns columns
 * `h*d_k .. (h+1)*d_k-1` of wQ and wK, columns `h*d_v ..` of wV and rows
 * `h*d_v .. (h+1)*d_v-1` of wO. Biases are required when `config.bias` is
 * true (the default) and must be omitted when it is false.
 */
export interface MultiHeadAttentionWeights {
  /** `[dModel, H*d_k]` */
  wQ: Float32Array;
  /** `[kDim, H*d_k]` */
  wK: Float32Array;
  /** `[vDim, H*d_v]` */
  wV: Float32Array;
  /** `[H*d_v, dModel]` */
  wO: Float32Array;
  /** `[H*d_k]` */
  bQ?: Float32Array;
  /** `[H*d_k]` */
  bK?: Float32Array;
  /** `[H*d_v]` */
  bV?: Float32Array;
  /** `[dModel]` */
  bO?: Float32Array;
}

/**
 * `torch.nn.MultiheadAttention.state_dict()` entries as flat Float32Arrays
 * (e.g. `t.detach().float().contiguous().numpy().ravel()`), in PyTorch's own
 * `[out, in]` layout; they are transposed on loading. Give either
 * `in_proj_weight` (when kDim == vDim == dModel) or all three of
 * `q_proj_weight`, `k_proj_weight`, `v_proj_weight`. The output projection may
 * be named with a dot as in the state_dict or with an underscore.
 * `bias_k`/`bias_v` (add_bias_kv) are not supported.
 */
export interface PyTorchMultiheadAttentionState {
  /** `[2*H*d_k + H*d_v, dModel]`: rows of W_q, then W_k, then W_v. */
  in_proj_weight?: Float32Array;
  /** `[H*d_k, dModel]` */
  q_proj_weight?: Float32Array;
  /** `[H*d_k, kDim]` */
  k_proj_weight?: Float32Array;
  /** `[H*d_v, vDim]` */
  v_proj_weight?: Float32Array;
  /** `[2*H*d_k + H*d_v]`: b_q, b_k, b_v. Required when config.bias. */
  in_proj_bias?: Float32Array;
  /** `[dModel, H*d_v]` (also accepted as `'out_proj.weight'`). */
  out_proj_weight?: Float32Array;
  'out_proj.weight'?: Float32Array;
  /** `[dModel]` (also accepted as `'out_proj.bias'`). Required when config.bias. */
  out_proj_bias?: Float32Array;
  'out_proj.bias'?: Float32Array;
}

export interface ForwardOptions {
  /**
   * Causal mask: query i attends to keys j <= i + (Tk - Tq) (bottom-right
   * aligned, as when decoding with a cache; j <= i when Tq == Tk).
   */
  causal?: boolean;
  /**
   * `[B*Tk]`, 1 = real token that may be attended, 0 = padding. (This is the
   * opposite of PyTorch's key_padding_mask, where true means "ignore".)
   * A query whose keys are all masked gets zero attention (output = bO).
   */
  keyPaddingMask?: Uint8Array;
  /** Added to the scaled scores: `[Tq*Tk]` or `[B*H*Tq*Tk]`; may hold -Infinity. */
  attnMask?: Float32Array;
  /** Also return the softmax probabilities of every head. */
  returnAttnWeights?: boolean;
  /** Also return each head's contribution z_h W_O^h in model space. */
  returnPerHeadOutput?: boolean;
}

/**
 * Results are fresh arrays owned by the caller (never views onto the wasm
 * heap). Shapes are batched (`[B, ...]`) when the query was 3-D, unbatched
 * (no leading B) when it was 2-D.
 */
export interface ForwardResult {
  /** `[B, Tq, dModel]` */
  output: Tensor;
  /** `[B, H, Tq, Tk]`, with `returnAttnWeights`. */
  attnWeights?: Tensor;
  /** `[B, H, Tq, dModel]`, with `returnPerHeadOutput`: output = sum over h + bO. */
  perHeadOutput?: Tensor;
}

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
   * Attention of `query` ([B, Tq, dModel]) over `key` ([B, Tk, kDim]) and
   * `value` ([B, Tk, vDim]). `key` omitted (or the query itself):
   * self-attention; `value` omitted: value = key. Inputs are copied, never
   * kept.
   */
  forward(query: Tensor, key?: Tensor, value?: Tensor, options?: ForwardOptions): ForwardResult;
  /** Frees the wasm memory; later calls throw. Calling it again does nothing. */
  dispose(): void;
  [Symbol.dispose](): void;
}

export interface MultiHeadAttentionConstructor {
  /** Throws a RangeError for an invalid config or an unknown backend. */
  new (config: MultiHeadAttentionConfig): MultiHeadAttention;
  readonly prototype: MultiHeadAttention;
}
