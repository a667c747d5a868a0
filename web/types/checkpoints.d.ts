// Checkpoints: safetensors files, PyTorch and Hugging Face weight names, loadCheckpoint.

import type { TransformerBlock, TransformerStack } from './blocks.js';
import type { MultiHeadAttention } from './attention.js';
import type { TransformerDecoderLayer, TransformerEncoderLayer } from './layers.js';
import type { URLLike } from './module.js';
import type {
  PooledMultiHeadAttention, PooledTransformerBlock, PooledTransformerDecoderLayer,
  PooledTransformerEncoderLayer,
} from './pool.js';
import type { TorchMatrix } from './tensors.js';

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
  'phi3' | 'distilbert' | 'vit' | 'gpt_neox' | 'gptj';

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
  target: MultiHeadAttention | TransformerEncoderLayer | TransformerDecoderLayer |
    TransformerBlock | TransformerStack,
  checkpoint: CheckpointTensors, options?: LoadCheckpointOptions,
): LoadCheckpointResult;
/** Into a pool's object: resolves once its weights are set. */
export function loadCheckpoint(
  target: PooledMultiHeadAttention | PooledTransformerEncoderLayer | PooledTransformerDecoderLayer |
    PooledTransformerBlock,
  checkpoint: CheckpointTensors, options?: LoadCheckpointOptions,
): Promise<LoadCheckpointResult>;
