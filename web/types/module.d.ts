// The module: createAttentionModule, its options, the builds, heap statistics.

import type {
  CausalAlignmentName, MultiHeadAttention, MultiHeadAttentionConstructor, NormKindName,
} from './attention.js';
import type {
  MixerName, NormPlacementName, TransformerBlockConstructor, TransformerStackConstructor,
} from './blocks.js';
import type { CheckpointTensors } from './checkpoints.js';
import type {
  ActivationName, LayerNormOptions, TransformerDecoderLayer, TransformerDecoderLayerConstructor,
  TransformerEncoderLayer, TransformerEncoderLayerConstructor,
} from './layers.js';
import type { FromPretrainedOptions, HuggingFaceConfig, PretrainedModule } from './pretrained.js';
import type { AttentionOptions, AttentionResultFor, ScoresStageName }
  from './scaled-dot-product-attention.js';
import type { CacheTypeName, Int8Weights, Tensor, WeightTypeName } from './tensors.js';
import type { TinyTransformer, TinyTransformerConstructor } from './tiny-model.js';
import type { AdamOptions, OptimizerConstructor, SGDOptions } from './training.js';

declare global {
  interface SymbolConstructor {
    /** Explicit resource management (`using`); polyfilled by the package when missing. */
    readonly dispose: unique symbol;
    /** `await using` of the worker pool's objects; polyfilled likewise. */
    readonly asyncDispose: unique symbol;
  }
}

/** `AttentionModule.choices`: the names of each config field, in the order messages list them. */
export interface ModuleChoices {
  readonly activation: readonly ActivationName[];
  readonly norm: readonly NormKindName[];
  readonly mixer: readonly MixerName[];
  readonly normPlacement: readonly NormPlacementName[];
  readonly weights: readonly WeightTypeName[];
  readonly cacheType: readonly CacheTypeName[];
  readonly causal: readonly CausalAlignmentName[];
  /** The stages `attention()`'s `returnScores` names. */
  readonly returnScores: readonly ScoresStageName[];
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
   * isolated page (COOP: same-origin, COEP: require-corp). Default (and 0):
   * the physical cores, at most 16, and 1 where threads are impossible
   * (`threadsUnavailable` says why). Given explicitly and impossible, it
   * rejects with an Error saying why. Workers beyond the logical processors
   * are not started: the count splits calls, the processors run them. 1: the
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
   * type (`config.weights`; int8 with its column scales, q4 with its block
   * scales; biases and norms apart), summed over the objects whose weights are set; back to 0 once
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
  q4: number;
}

/** Bytes per KV cache storage type (`CacheTypeName`). */
export interface BytesByCacheType {
  f32: number;
  f16: number;
  bf16: number;
  int8: number;
}

/**
 * The options of the attention entry's `createAttentionModule`
 * (`simd-attention/attention`): the main entry's but `training`.
 */
export interface AttentionEntryOptions extends Omit<AttentionModuleOptions, 'training'> {}

/**
 * What every module has: the module of the attention entry
 * (`simd-attention/attention`), for a page that runs attention alone. It
 * loads a build that binds only this (about a third smaller) where one fits
 * its options: one thread, WebAssembly SIMD, the highway backend; elsewhere
 * the main entry's build.
 */
export interface AttentionOnlyModule {
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
   * Every name each config field takes, from the C++ tables that judge
   * them (an unknown name is a RangeError listing these).
   */
  readonly choices: ModuleChoices;
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
  attention<A extends boolean = false, S extends boolean | ScoresStageName = false>(
    q: Tensor, k: Tensor, v: Tensor,
    options?: AttentionOptions & { returnAttnWeights?: A; returnScores?: S },
  ): AttentionResultFor<A, S>;
  /** Heap statistics, e.g. to watch for leaks. */
  memoryStats(): MemoryStats;
}

/** The main entry's module: every class of the package, on builds that bind them all. */
export interface AttentionModule extends AttentionOnlyModule {
  /** `torch.nn.TransformerEncoderLayer` (dropout 0, batch-first). */
  readonly TransformerEncoderLayer: TransformerEncoderLayerConstructor;
  /** `torch.nn.TransformerDecoderLayer` (dropout 0, batch-first), with incremental decoding. */
  readonly TransformerDecoderLayer: TransformerDecoderLayerConstructor;
  /** A block as a list of sublayers (the training build trains it, without its cache). */
  readonly TransformerBlock: TransformerBlockConstructor;
  /** N blocks with a KV cache per layer (the training build trains it, without the caches). */
  readonly TransformerStack: TransformerStackConstructor;
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
  /** `torch.optim.SGD`; constructing one needs the training build. */
  readonly SGD: OptimizerConstructor<SGDOptions>;
  /** `torch.optim.Adam` (AdamW with `decoupledWeightDecay`); needs the training build. */
  readonly Adam: OptimizerConstructor<AdamOptions>;
  /** A tiny trainable language model around the attention; needs the training build. */
  readonly TinyTransformer: TinyTransformerConstructor;
}
