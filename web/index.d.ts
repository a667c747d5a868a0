// Type definitions for simd-attention, hand-written; the implementation is
// index.js and src/ over the Embind glue in dist/. tests/types checks them
// against the code (`npm run test:types`): the option keys the JS accepts,
// and a typed use of every declaration.

declare global {
  interface SymbolConstructor {
    /** Explicit resource management (`using`); polyfilled by the package when missing. */
    readonly dispose: unique symbol;
    /** `await using` of the worker pool's objects; polyfilled likewise. */
    readonly asyncDispose: unique symbol;
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
   * `backends[0]` (`'highway'`). `'scalar'` is the non-SIMD build's alone:
   * without `simd` or `relaxedSimd` it loads that build. An unknown name or
   * one not compiled into the build rejects with a RangeError.
   */
  backend?: BackendName;
  /**
   * `true` forces a SIMD build (rejects if the engine lacks WebAssembly
   * SIMD): the relaxed-SIMD one where the engine has relaxed SIMD and
   * `relaxedSimd` is not `false`, else the SIMD one. `false` forces the
   * non-SIMD build. Default: a SIMD build when `WebAssembly.validate` accepts
   * a SIMD module.
   */
  simd?: boolean;
  /**
   * `true` forces the relaxed-SIMD build, whose matrix products use relaxed
   * SIMD's fused multiply-add (rejects if the engine lacks relaxed SIMD, and
   * with `simd: false`); `false` never loads it. Default: the relaxed-SIMD
   * build when `WebAssembly.validate` accepts a relaxed-SIMD module (Chrome
   * and Edge 114+, Node 22+, Node 20 with `--experimental-wasm-relaxed-simd`).
   */
  relaxedSimd?: boolean;
  /**
   * Threads the module runs on, the caller's included: above 1, a threaded
   * build of the SIMD or relaxed-SIMD build (shared memory; `threads - 1`
   * Web Workers, or Node `worker_threads`, started with the module), whose
   * objects split each call over them with results bit-identical to one
   * thread. It needs `SharedArrayBuffer`, and in browsers a cross-origin
   * isolated page (COOP: same-origin, COEP: require-corp). Default: the
   * logical processors, at most 4, and 1 where threads are impossible
   * (`threadsUnavailable` says why). Given explicitly (0 = every logical
   * processor) and impossible, it rejects with an Error saying why. 1: the
   * single-thread build. At most 4 per logical processor
   * (`navigator.hardwareConcurrency`, Node's `os.availableParallelism()`):
   * more rejects with a RangeError before any worker starts. The threaded
   * builds have the `'highway'` backend only: with another `backend` and no
   * `threads`, the single-thread build.
   */
  threads?: number;
  /**
   * Folder (Node: a path or `file:` URL; browsers: a URL, relative ones
   * resolved against the document) holding `simd_attention_relaxed.wasm`,
   * `simd_attention_simd.wasm`, `simd_attention_nosimd.wasm` (and
   * `simd_attention_training.wasm`), for apps
   * that serve the files themselves.
   * Default: the package's own `dist/`, found relative to the module
   * (`import.meta.url`).
   */
  wasmPath?: string | URLLike;
  /**
   * `true` loads the training build: the SIMD build (highway backend, one
   * thread) whose objects also train: `forward(..., { training: true })`,
   * `backward(dOutput)`, and the optimizers `SGD` and `Adam`. It rejects
   * with `simd: false`, `relaxedSimd: true` or `threads` above 1, and where
   * the engine lacks WebAssembly SIMD. That build leaves out what only
   * inference uses, each refused by name: weights and cache types other than
   * `'f32'`, `rope`, KV caches, precomputed keys and values, `attention()`.
   * Default `false`: the other builds refuse `training: true` and
   * `backward()`, naming this option.
   */
  training?: boolean;
}

/** A `URL` (typed structurally so that no DOM or Node typings are needed). */
export interface URLLike {
  readonly href: string;
}

/**
 * Loads a wasm build (the fastest the engine runs: relaxed SIMD, SIMD, or
 * neither) and resolves to a module whose
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

/** Whether this JS engine runs WebAssembly relaxed SIMD (the check the loader uses). */
export function wasmRelaxedSimdSupported(): boolean;

/**
 * The package's wasm builds: `'relaxed-simd'` (wasm SIMD with relaxed SIMD's
 * fused multiply-add), `'simd'` (wasm SIMD), `'nosimd'`, and `'training'`
 * (wasm SIMD with the backward passes and the optimizers; `training: true`).
 */
export type BuildName = 'relaxed-simd' | 'simd' | 'nosimd' | 'training';

/** Heap statistics of one module's wasm instance, in bytes. */
export interface MemoryStats {
  /** Current size of the wasm memory (it only grows). */
  heapBytes: number;
  /** The most the wasm memory may grow to (2 GiB). */
  maxHeapBytes: number;
  /** Bytes the C++ side holds (its allocations, counted as made: back to the same number once an object is freed). */
  allocatedBytes: number;
  /**
   * Bytes of the weight matrices the module's live objects hold, by storage
   * type (`config.weights`; int8 with its column scales; biases and norms
   * apart), summed over the objects whose weights are set; back to 0 once
   * they are disposed.
   */
  weightBytes: BytesByWeightType;
  /** Bytes of the live KV caches and precomputed keys/values, by storage type (`cacheType`). */
  cacheBytes: BytesByCacheType;
  /** JS values the wasm side holds handles to (Embind); stays flat unless something leaks. */
  jsHandles: number;
}

/** Bytes per weight storage type (`WeightTypeName`). */
export interface BytesByWeightType {
  f32: number;
  f16: number;
  bf16: number;
  int8: number;
}

/** Bytes per KV cache storage type (`CacheTypeName`). */
export interface BytesByCacheType {
  f32: number;
  f16: number;
  bf16: number;
}

/**
 * How an object holds its weight matrices (wQ, wK, wV, wO; a layer's FFN w1
 * and w2): `'f32'` 4 bytes a weight; `'f16'` (IEEE half) and `'bf16'`
 * (bfloat16) 2 bytes, rounded to nearest even at setWeights; `'int8'` 1 byte,
 * symmetric per output column (`w = value * scale[column]`, `scale =
 * max|w| / 127`) plus a float32 scale per column. Biases and LayerNorm
 * parameters stay float32, and so does the arithmetic: the kernels widen
 * each weight as they load it.
 */
export type WeightTypeName = 'f32' | 'f16' | 'bf16' | 'int8';

/**
 * How KV caches and precomputed keys/values hold keys and values: `'f32'`
 * 4 bytes a value, `'f16'` and `'bf16'` 2 (rounded to nearest even as they
 * are stored); the attention kernel widens them a key block at a time.
 */
export type CacheTypeName = 'f32' | 'f16' | 'bf16';

/**
 * float16 or bfloat16 values as their bits: a `Uint16Array`, or a
 * `Float16Array` where the engine has one (read as its bits).
 */
export type HalfBits = Uint16Array |
  (ArrayBufferView & { readonly length: number; readonly [Symbol.toStringTag]: 'Float16Array' });

/** int8 weights as a quantized checkpoint holds them: `w[r, c] = values[r * cols + c] * scales[c]`. */
export interface Int8Weights {
  /** `[rows, cols]`, row-major, in the matrix's `X @ W` layout. */
  values: Int8Array;
  /** `[cols]`: one finite scale per output column. */
  scales: Float32Array;
}

/**
 * A weight matrix: float32 values, stored in the object's `config.weights`
 * at setWeights (int8: quantized per column), or values already in that
 * type, taken as they are: `HalfBits` for `'f16'` / `'bf16'` (the object's
 * type says which), `Int8Weights` for `'int8'`. A form that does not match
 * `config.weights` is a RangeError naming the weight (`wQ: int8 values
 * given, but config.weights is float16`); float32 values beyond float16's
 * range (65504) for `'f16'` are one too.
 */
export type WeightMatrix = Float32Array | HalfBits | Int8Weights;

/** A PyTorch weight matrix: float32, or the bits of an object's `'f16'` / `'bf16'` weights. */
export type TorchMatrix = Float32Array | HalfBits;

export interface AttentionModule {
  /** Default backend of new MultiHeadAttention objects. */
  readonly backend: string;
  /** Which build this module runs on. */
  readonly build: BuildName;
  /** Whether the build uses wasm SIMD (`'relaxed-simd'` and `'simd'`). */
  readonly simd: boolean;
  /** Backends compiled into this build, fastest first. */
  readonly backends: string[];
  /** Kernel table of the default backend, e.g. `"highway:WASM"` or `"scalar"`. */
  readonly kernels: string;
  /**
   * Threads the module runs on (1, or those of a threaded build); the
   * default `threads` of its objects and of `attention()`.
   */
  readonly threads: number;
  /**
   * Why the module runs on one thread although `threads` was not given,
   * e.g. `"the page is not cross-origin isolated: serve it with COOP:
   * same-origin and COEP: require-corp ..."`; undefined otherwise.
   */
  readonly threadsUnavailable: string | undefined;
  /**
   * Resolves once every thread of a threaded build runs (at once for one
   * thread). The module resolves before its workers have loaded; calls made
   * until then run on the threads that run, the calling thread alone at
   * first, with the same results. Await it before timing calls. It never
   * rejects: a worker that fails is reported on the console and counts as
   * done; it resolves too when the module is disposed.
   */
  readonly threadsReady: Promise<void>;
  /**
   * Disposes every object of the module and ends a threaded build's
   * workers. The module stays usable on one thread. Node ends its process
   * without it: the workers do not keep it alive.
   */
  dispose(): void;
  /** Multi-head attention running on this module's wasm instance. */
  readonly MultiHeadAttention: MultiHeadAttentionConstructor;
  /** `torch.nn.TransformerEncoderLayer` (dropout 0, batch-first). */
  readonly TransformerEncoderLayer: TransformerEncoderLayerConstructor;
  /** `torch.nn.TransformerDecoderLayer` (dropout 0, batch-first), with incremental decoding. */
  readonly TransformerDecoderLayer: TransformerDecoderLayerConstructor;
  /**
   * One layer or attention of a Hugging Face model (`options.prefix`) as
   * this module's object: configured from `config` (the parsed
   * `config.json`), its weights loaded from `file` (`loadCheckpoint` in the
   * model's layout), with the forward options the model runs it with. What
   * the objects cannot compute (RMSNorm, gated MLPs, QK-norm, scaled RoPE,
   * a whole model) is an Error naming the model type, the part and the
   * config field (a rejection); see the README's table. Async: the
   * package's browser bundle loads this code when it is first called.
   */
  fromPretrained(config: HuggingFaceConfig, file: CheckpointTensors,
    options?: FromPretrainedOptions): Promise<PretrainedModule>;
  /**
   * Sinusoidal positional encoding `[t, dModel]`:
   * `PE[p, 2i] = sin(p / 10000^(2i/dModel))`, `PE[p, 2i+1] = cos(p / 10000^(2i/dModel))`.
   * Add it to token embeddings before the first layer. RangeError unless
   * both are positive integers.
   */
  positionalEncoding(t: number, dModel: number): Tensor;
  /**
   * LayerNorm over the last dimension: `(x - mean) / sqrt(var + eps) * gamma + beta`
   * per row of `x` (`[B, T, D]` or `[T, D]`; `gamma`, `beta` are `[D]`).
   * Returns a new tensor of x's shape.
   */
  layerNorm(x: Tensor, options: LayerNormOptions): Tensor;
  /**
   * `matrix` `[rows, cols]` (row-major, the `X @ W` layout) as int8 weights,
   * quantized per column exactly as setWeights quantizes a Float32Array for
   * `config.weights: 'int8'` (`scale = max|w| / 127` over the column, 1 for
   * an all-zero one; `value = w / scale` rounded to nearest, ties to even):
   * setWeights given the result holds the same weights. A RangeError names
   * `matrix` (a length other than `rows * cols`, a value that is not
   * finite), `rows` or `cols` (0).
   */
  quantizeInt8(matrix: Float32Array, rows: number, cols: number): Int8Weights;
  /**
   * Scaled dot-product attention on heads that are already projected, as
   * PyTorch's `scaled_dot_product_attention` and ONNX's `Attention`; see
   * {@link AttentionOptions} and the README's "Attention on projected heads".
   * Not in the training build, where it has no backward (an Error).
   */
  attention<A extends boolean = false, S extends boolean = false>(
    q: Tensor, k: Tensor, v: Tensor,
    options?: AttentionOptions & { returnAttnWeights?: A; returnScores?: S },
  ): AttentionResultFor<A, S>;
  /** Heap statistics, e.g. to watch for leaks. */
  memoryStats(): MemoryStats;
  /** `torch.optim.SGD`; constructing one needs the training build. */
  readonly SGD: OptimizerConstructor<SGDOptions>;
  /** `torch.optim.Adam` (AdamW with `decoupledWeightDecay`); needs the training build. */
  readonly Adam: OptimizerConstructor<AdamOptions>;
  /** A tiny trainable language model around the attention; needs the training build. */
  readonly TinyTransformer: TinyTransformerConstructor;
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

/** A config with every default filled in. */
export interface ResolvedMultiHeadAttentionConfig {
  dModel: number;
  numHeads: number;
  kDim: number;
  vDim: number;
  /** d_k (default dModel / numHeads). */
  headDim: number;
  headDimV: number;
  numKvHeads: number;
  rope?: Required<RopeConfig>;
  bias: boolean;
  backend: string;
  threads: number;
  weights: WeightTypeName;
  cacheType: CacheTypeName;
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

export interface ForwardOptions {
  /**
   * Causal mask: `true` or 'bottom-right': query i attends to keys
   * j <= i + (Tk - Tq) (aligned as when decoding with a cache; j <= i when
   * Tq == Tk); 'top-left': j <= i (PyTorch's is_causal, ONNX Attention
   * without a cache); `false` or 'none': no causal mask.
   */
  causal?: boolean | CausalAlignmentName;
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
   * from `[Tq, Tk]`, `[B, 1, Tq, Tk]`, `[1, H, Tq, Tk]` or `[B, H, Tq, Tk]`.
   */
  attnMask?: Float32Array | BroadcastMask<Float32Array>;
  /** 1 = may attend, 0 = masked (PyTorch's convention for boolean `attn_mask` in `scaled_dot_product_attention`); shapes as `attnMask`. */
  boolMask?: Uint8Array | BroadcastMask<Uint8Array>;
  /** Also return the softmax probabilities of every head. */
  returnAttnWeights?: boolean;
  /** Also return the scores the softmax takes (scaled, capped, masked: -Infinity where masked). */
  returnScores?: boolean;
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
  /** `[B, H, Tq, Tk]`, with `returnScores`: what the softmax takes (scaled, capped, masked: -Infinity where masked). */
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
  S extends boolean = false> =
  ForwardResult &
  ([A] extends [true] ? { attnWeights: Tensor } : unknown) &
  ([S] extends [true] ? { scores: Tensor } : unknown) &
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
  forward<A extends boolean = false, P extends boolean = false, I extends boolean = false, S extends boolean = false>(query: Tensor,
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
  forward<A extends boolean = false, P extends boolean = false, I extends boolean = false, S extends boolean = false>(query: Tensor,
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
  forwardIncremental<A extends boolean = false, P extends boolean = false, I extends boolean = false, S extends boolean = false>(x: Tensor,
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

// ---------------------------------------------------------------------------
// KV cache and precomputed keys/values
// ---------------------------------------------------------------------------

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

/** Options of `MultiHeadAttention.forwardIncremental` (causal is implied). */
export interface IncrementalForwardOptions {
  /** `[B*(length+n)]` over everything cached plus the new tokens; 1 = real token. */
  keyPaddingMask?: Uint8Array;
  /** `[B]`: batch item b attends to its first `kvLengths[b]` of the `length+n` keys only. */
  kvLengths?: number[] | Uint32Array | Int32Array;
  /** Added to the scaled scores: `[n*(length+n)]` or `[B*H*n*(length+n)]`, or with a shape that broadcasts (see ForwardOptions). */
  attnMask?: Float32Array | BroadcastMask<Float32Array>;
  /** 1 = may attend, 0 = masked; shapes as `attnMask`. */
  boolMask?: Uint8Array | BroadcastMask<Uint8Array>;
  /** Also return the probabilities over every cached token, `[B, H, n, length+n]`. */
  returnAttnWeights?: boolean;
  /** Also return the scores the softmax takes, `[B, H, n, length+n]`. */
  returnScores?: boolean;
  /** Also return each head's contribution, `[B, H, n, dModel]`. */
  returnPerHeadOutput?: boolean;
  /**
   * Also return `q` `[B, H, n, d_k]`, `k` `[B, H, length+n, d_k]` and `v`
   * `[B, H, length+n, d_v]` (everything cached, the new tokens included) and
   * `headOutput` `[B, H, n, d_v]`.
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

export interface MultiHeadAttentionConstructor {
  /** Throws a RangeError for an invalid config or an unknown backend. */
  new (config: MultiHeadAttentionConfig): MultiHeadAttention;
  readonly prototype: MultiHeadAttention;
}

// ---------------------------------------------------------------------------
// Transformer layers
// ---------------------------------------------------------------------------

/** Activation of the position-wise FFN. `'gelu'` and `'gelu_erf'` are the exact (erf) GELU, as torch's `'gelu'`. */
export type ActivationName = 'relu' | 'gelu' | 'gelu_erf' | 'gelu_tanh';

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
export interface ResolvedTransformerLayerConfig {
  dModel: number;
  numHeads: number;
  /** dModel / numHeads. */
  headDim: number;
  ffnDim: number;
  normFirst: boolean;
  /** `'relu'`, `'gelu'` (also for `'gelu_erf'`) or `'gelu_tanh'`. */
  activation: 'relu' | 'gelu' | 'gelu_tanh';
  eps: number;
  backend: string;
  threads: number;
  numKvHeads: number;
  rope?: Required<RopeConfig>;
  weights: WeightTypeName;
  cacheType: CacheTypeName;
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

// ---------------------------------------------------------------------------
// attention(q, k, v, options): attention on projected heads
// ---------------------------------------------------------------------------

/**
 * A mask with its shape, broadcast to `[B, H, Tq, Tk]` from `[Tq, Tk]`,
 * `[B, 1, Tq, Tk]`, `[1, H, Tq, Tk]` or `[B, H, Tq, Tk]`.
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
   * with `i' = i` (or `i + Tk - Tq` for `'bottom-right'`); -1 = unbounded on
   * that side. Keys outside are never computed. Default `[-1, -1]`.
   */
  window?: [number, number];
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
  /** Also return the scores the softmax takes (scaled, capped, masked: -Infinity where masked). */
  returnScores?: boolean;
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

/** The result of `attention` whose options set `returnAttnWeights` to `A` and `returnScores` to `S`. */
export type AttentionResultFor<A extends boolean, S extends boolean> =
  AttentionResult &
  ([A] extends [true] ? { attnWeights: Tensor } : unknown) &
  ([S] extends [true] ? { scores: Tensor } : unknown);

// ---------------------------------------------------------------------------
// createAttentionPool: attention split by heads, layers by heads and FFN units
// ---------------------------------------------------------------------------

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
  /** The module's `positionalEncoding`, run on the next worker in turn. */
  positionalEncoding(t: number, dModel: number): Promise<Tensor>;
  /** The module's `layerNorm`, run on the next worker in turn. */
  layerNorm(x: Tensor, options: LayerNormOptions): Promise<Tensor>;
  /** The module's `attention`, run whole on the next worker in turn. */
  attention<A extends boolean = false, S extends boolean = false>(
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

/**
 * MultiHeadAttention split by heads: the workers' partial outputs added in
 * worker order, then `bO`; the rest joined along the head axis.
 */
export interface PooledMultiHeadAttention {
  readonly config: ResolvedMultiHeadAttentionConfig;
  readonly kernels: string;
  readonly disposed: boolean;
  setWeights(w: MultiHeadAttentionWeights): Promise<void>;
  /**
   * As MultiHeadAttention's: judged whole by worker 0's synchronous object,
   * then transposed and split by heads.
   */
  setWeightsFromPyTorch(state: PyTorchMultiheadAttentionState): Promise<void>;
  forward<A extends boolean = false, P extends boolean = false, I extends boolean = false, S extends boolean = false>(query: Tensor,
    precomputed: PooledPrecomputedKeyValue, value?: undefined,
    options?: ForwardOptions & { returnAttnWeights?: A; returnPerHeadOutput?: P; returnIntermediates?: I; returnScores?: S }):
    Promise<ForwardResultFor<A, P, I, S>>;
  // The tensor overload last, as in MultiHeadAttention.
  forward<A extends boolean = false, P extends boolean = false, I extends boolean = false, S extends boolean = false>(query: Tensor,
    key?: Tensor, value?: Tensor, options?: ForwardOptions & { returnAttnWeights?: A; returnPerHeadOutput?: P; returnIntermediates?: I; returnScores?: S }):
    Promise<ForwardResultFor<A, P, I, S>>;
  createKVCache(options: KVCacheOptions): Promise<PooledKVCache>;
  forwardIncremental<A extends boolean = false, P extends boolean = false, I extends boolean = false, S extends boolean = false>(x: Tensor,
    cache: PooledKVCache, options?: IncrementalForwardOptions & { returnAttnWeights?: A; returnPerHeadOutput?: P; returnIntermediates?: I; returnScores?: S }):
    Promise<ForwardResultFor<A, P, I, S>>;
  precomputeKeyValue(memory: Tensor, options?: PrecomputeOptions): Promise<PooledPrecomputedKeyValue>;
  dispose(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
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

export interface PooledTransformerLayerBase {
  readonly config: ResolvedTransformerLayerConfig;
  readonly kernels: string;
  readonly disposed: boolean;
  /** Where the pool put the layer (PooledLayerOptions). */
  readonly placement: 'split' | 'whole';
  dispose(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

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
 * A KVCache held by a pool's workers as the object that made it holds its
 * heads; it serves only objects held the same way.
 */
export interface PooledKVCache {
  readonly batch: number;
  readonly maxLength: number;
  /** Tokens cached as of the last call that finished. Throws once disposed. */
  readonly length: number;
  readonly disposed: boolean;
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
  dispose(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A PrecomputedKeyValue held by a pool's workers, as a PooledKVCache. */
export interface PooledPrecomputedKeyValue {
  readonly batch: number;
  readonly tokens: number;
  readonly disposed: boolean;
  dispose(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

// ---------------------------------------------------------------------------
// Checkpoints: safetensors files, PyTorch and Hugging Face weight names
// ---------------------------------------------------------------------------

/**
 * An `nn.TransformerEncoderLayer` state_dict as flat Float32Arrays in
 * PyTorch's layout (`[out, in]` for a Linear weight). The attention's
 * projections are `in_proj_weight` or all three of `q_proj_weight`,
 * `k_proj_weight`, `v_proj_weight`; everything else is required. The
 * weight matrices may be the bits of the layer's `'f16'` / `'bf16'` weights
 * (`TorchMatrix`).
 */
export interface PyTorchTransformerEncoderLayerState {
  /** `[3*dModel, dModel]` (with numKvHeads: `[dModel + 2*numKvHeads*headDim, dModel]`). */
  'self_attn.in_proj_weight'?: TorchMatrix;
  'self_attn.q_proj_weight'?: TorchMatrix;
  'self_attn.k_proj_weight'?: TorchMatrix;
  'self_attn.v_proj_weight'?: TorchMatrix;
  'self_attn.in_proj_bias': Float32Array;
  'self_attn.out_proj.weight': TorchMatrix;
  'self_attn.out_proj.bias': Float32Array;
  /** `[ffnDim, dModel]` */
  'linear1.weight': TorchMatrix;
  'linear1.bias': Float32Array;
  /** `[dModel, ffnDim]` */
  'linear2.weight': TorchMatrix;
  'linear2.bias': Float32Array;
  'norm1.weight': Float32Array;
  'norm1.bias': Float32Array;
  'norm2.weight': Float32Array;
  'norm2.bias': Float32Array;
}

/** An `nn.TransformerDecoderLayer` state_dict, as the encoder's plus the cross-attention and norm3. */
export interface PyTorchTransformerDecoderLayerState extends PyTorchTransformerEncoderLayerState {
  'multihead_attn.in_proj_weight'?: TorchMatrix;
  'multihead_attn.q_proj_weight'?: TorchMatrix;
  'multihead_attn.k_proj_weight'?: TorchMatrix;
  'multihead_attn.v_proj_weight'?: TorchMatrix;
  'multihead_attn.in_proj_bias': Float32Array;
  'multihead_attn.out_proj.weight': TorchMatrix;
  'multihead_attn.out_proj.bias': Float32Array;
  'norm3.weight': Float32Array;
  'norm3.bias': Float32Array;
}

/** The element types of safetensors; F32, F16 and BF16 convert to float32 (F16 and BF16 may stay 16-bit: keep16Bit). */
export type SafetensorsDtype = 'F32' | 'F16' | 'BF16' | 'F64' | 'I64' | 'I32' | 'I16' | 'I8' |
  'U64' | 'U32' | 'U16' | 'U8' | 'BOOL' | 'F8_E4M3' | 'F8_E5M2';

/** A tensor's entry in a safetensors header. */
export interface SafetensorsTensorInfo {
  dtype: SafetensorsDtype;
  shape: number[];
}

/** A tensor read from a checkpoint, converted to float32 (a fresh copy). */
export interface CheckpointTensor extends SafetensorsTensorInfo {
  data: Float32Array;
}

/** An F16 or BF16 tensor kept 16-bit (keep16Bit): its bits (a fresh copy). */
export interface CheckpointBitsTensor {
  dtype: 'F16' | 'BF16';
  shape: number[];
  data: Uint16Array;
}

export interface SafetensorsOptions {
  /**
   * Read F16 and BF16 tensors as their bits (`CheckpointBitsTensor`)
   * instead of converting them to float32: for objects whose
   * `config.weights` is that type, which then hold them as they are
   * (`loadCheckpoint` passes them on as bits), and to keep the file's
   * tensors at 2 bytes in JS memory. Default false.
   */
  keep16Bit?: boolean;
}

/**
 * A parsed safetensors file. The header is checked when parsed (a wrong
 * header, a truncated file, a dtype or shape that does not fit its bytes,
 * tensors whose bytes overlap or leave a gap, a name or field given twice,
 * bytes after the last tensor: each an error naming the tensor); a tensor
 * is converted when read.
 */
export declare class SafetensorsFile<Keep16Bit extends boolean = false> {
  private constructor();
  /** The header's `__metadata__`; `{}` when absent. */
  readonly metadata: Record<string, string>;
  /** The tensors' names, in the header's order. */
  readonly names: string[];
  /** Whether F16 and BF16 tensors are read as their bits (`SafetensorsOptions`). */
  readonly keep16Bit: Keep16Bit;
  has(name: string): boolean;
  info(name: string): SafetensorsTensorInfo;
  /**
   * F32, F16 and BF16 as float32 (exactly), or with keep16Bit F16 and BF16
   * as their bits; another dtype is a TypeError naming the tensor.
   */
  tensor(name: string): Keep16Bit extends true ? CheckpointTensor | CheckpointBitsTensor
    : CheckpointTensor;
}

/** What readSafetensors takes for a fetch `Response` (no DOM typings needed). */
export interface ResponseLike {
  readonly ok: boolean;
  readonly status: number;
  readonly url: string;
  readonly headers: unknown;
  /** Read as a stream when present, no further than the file's header declares. */
  readonly body?: { getReader(): unknown } | null;
  arrayBuffer(): Promise<ArrayBuffer>;
}

/** Parses a safetensors file's bytes; the file keeps a reference to them. */
export function parseSafetensors<Keep16Bit extends boolean = false>(
  bytes: ArrayBuffer | ArrayBufferView, options?: SafetensorsOptions & { keep16Bit?: Keep16Bit },
): SafetensorsFile<Keep16Bit>;

/**
 * Reads a safetensors file from its bytes, a fetch `Response`, or in Node a
 * file path or `file:` URL (read with a dynamic import of `node:fs`, which
 * browser bundles never contain). A file or a body is read no further than
 * its header declares: one longer than declared, or endless, is an error.
 */
export function readSafetensors<Keep16Bit extends boolean = false>(
  source: ArrayBuffer | ArrayBufferView | ResponseLike | string | URLLike,
  options?: SafetensorsOptions & { keep16Bit?: Keep16Bit },
): Promise<SafetensorsFile<Keep16Bit>>;

/**
 * Tensor names: `'pytorch'` (torch.nn's state_dict names), `'separate'`
 * (`q_proj`, `k_proj`, `v_proj`, `out_proj`: BART and its kin, GPT-J), `'bert'`
 * (`attention.self.query`, ..., `attention.output.dense`), `'fused'` (timm's
 * ViT: `attn.qkv`, `attn.proj`), `'gpt2'` (`attn.c_attn`, `attn.c_proj`,
 * Conv1D weights), `'distilbert'` (`attention.q_lin`, ..., `sa_layer_norm`,
 * `ffn.lin1`), `'vit'` (Hugging Face's: `attention.attention.query`,
 * `layernorm_before`), `'gpt_neox'` (`attention.query_key_value`, each
 * head's q, k and v rows in turn; `attention.dense`). Attentions only:
 * `'llama'` (`q_proj`, `k_proj`, `v_proj`, `o_proj`: Llama, Mistral, Qwen,
 * Gemma), `'phi3'` (`qkv_proj`: q, then k, then v rows; `o_proj`). The
 * decoder layer has `'pytorch'` and `'separate'`.
 */
export type CheckpointLayout = 'pytorch' | 'separate' | 'bert' | 'fused' | 'gpt2' | 'llama' |
  'phi3' | 'distilbert' | 'vit' | 'gpt_neox';

export interface LoadCheckpointOptions {
  /** The object's tensors are those named `prefix + name` (`'layers.3'` means `'layers.3.'`). */
  prefix?: string;
  /** Default: the layout most of the names under the prefix belong to. */
  layout?: CheckpointLayout;
  /** Tensors under the prefix that the layout does not take are an error unless true. */
  allowUnused?: boolean;
}

export interface LoadCheckpointResult {
  layout: CheckpointLayout;
  /** The checkpoint's tensors that were loaded. */
  tensors: string[];
  /** Tensors under the prefix left out (only with allowUnused). */
  unused: string[];
  /** Biases the layout names that the checkpoint lacks, loaded as zeros (a Linear made with bias=False). */
  zeroBiases: string[];
}

/**
 * Tensors by name: a SafetensorsFile or flat arrays (with their shapes, to
 * be checked; F16 and BF16 tensors as their bits with their dtype).
 */
export type CheckpointTensors = SafetensorsFile<boolean> |
  Record<string, Float32Array | { data: Float32Array; shape: number[]; dtype?: 'F32' } |
    CheckpointBitsTensor>;

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
   * `'decoder.layers.0.encoder_attn'`) to build. Required: a whole model
   * is not supported yet (an Error).
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

export type PretrainedModule = PretrainedAttention | PretrainedEncoderLayer | PretrainedDecoderLayer;

/** What `pool.fromPretrained` resolves to. */
export type PooledPretrainedModule = PretrainedAttention<PooledMultiHeadAttention> |
  PretrainedEncoderLayer<PooledTransformerEncoderLayer> |
  PretrainedDecoderLayer<PooledTransformerDecoderLayer>;

/**
 * Sets the weights of `target` from a checkpoint's tensors: missing weights,
 * extra and mis-shaped tensors, and NaN or infinite values are errors naming
 * the checkpoint's tensors; a missing bias is zero. Norm placement,
 * activation and eps are the target's config (BERT and BART: post-LN,
 * GELU; GPT-2: normFirst, 'gelu_tanh', causal; ViT: normFirst, GELU).
 * Tensors read as bits (keep16Bit) stay bits for the weight matrices of a
 * target whose `config.weights` is their type (F16: `'f16'`, BF16:
 * `'bf16'`); every other tensor becomes float32.
 */
export function loadCheckpoint(
  target: MultiHeadAttention | TransformerEncoderLayer | TransformerDecoderLayer,
  checkpoint: CheckpointTensors, options?: LoadCheckpointOptions,
): LoadCheckpointResult;
/** Into a pool's object: resolves once its weights are set. */
export function loadCheckpoint(
  target: PooledMultiHeadAttention | PooledTransformerEncoderLayer | PooledTransformerDecoderLayer,
  checkpoint: CheckpointTensors, options?: LoadCheckpointOptions,
): Promise<LoadCheckpointResult>;

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

/** What an optimizer updates: an object of the same module with a backward since its weights changed. */
export type Trainable = MultiHeadAttention | TransformerEncoderLayer | TransformerDecoderLayer |
  TinyTransformer;

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

