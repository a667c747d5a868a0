// q4 weights for the benchmark: the workload's float32 matrices quantized
// to GGUF q4_0 blocks with ggml's rule (tests/js/support/quantized-files.mjs),
// which our package takes as they are ({ q4 }), and the same blocks as
// onnxruntime's MatMulNBits 4-bit initializers, so both hold the same
// weights.
import { ggufQ4_0 } from '../../tests/js/support/quantized-files.mjs';
import { halfToFloat } from '../../tests/js/support/safetensors-writer.mjs';

/** The four projection matrices of a workload's data (makeData) as { q4 } blocks. */
export function q4Weights(data) {
  const out = {};
  for (const m of ['wq', 'wk', 'wv', 'wo']) out[m] = { q4: ggufQ4_0(data[m], data.d, data.d).bytes };
  return out;
}

/**
 * q4 blocks of a [K, N] matrix as MatMulNBits' B (uint8 [N, K / 32, 16]:
 * weight 2i of a block in byte i's low nibble, 2i + 1 in its high one) and
 * float32 scales [N, K / 32] (the blocks' float16 scales, exactly); the
 * zero point is the default, 8.
 */
export function matMulNBits4(q4, K, N) {
  const blocks = N * K / 32;
  const B = new Uint8Array(blocks * 16), scales = new Float32Array(blocks);
  const view = new DataView(q4.buffer, q4.byteOffset, q4.byteLength);
  for (let b = 0; b < blocks; b++) {
    scales[b] = halfToFloat(view.getUint16(b * 18, true));
    const q = (k) => (k < 16 ? q4[b * 18 + 2 + k] & 15 : q4[b * 18 + 2 + k - 16] >> 4);
    for (let i = 0; i < 16; i++) B[b * 16 + i] = q(2 * i) | (q(2 * i + 1) << 4);
  }
  return { B, scales };
}
