// Int8 weights as our package quantizes a float32 matrix at setWeights
// (src/kernels/weight_packing.cc, Int8ColumnScales and QuantizeColumns):
// symmetric per output column, scale = max |w[:, j]| / 127 in float32 (1
// for a zero column), q = w / scale rounded to nearest, ties to even. The
// onnxruntime int8 graphs take these; run.js checks that our package given
// them as { values, scales } computes what it computes from the floats.
export function quantizeInt8(w, rows, cols) {
  const scales = new Float32Array(cols);
  for (let j = 0; j < cols; j++) {
    let largest = 0;
    for (let k = 0; k < rows; k++) largest = Math.max(largest, Math.abs(w[k * cols + j]));
    scales[j] = largest > 0 ? largest / 127 : 1;
  }
  const values = new Int8Array(rows * cols);
  for (let i = 0; i < rows * cols; i++) {
    const x = Math.fround(w[i] / scales[i % cols]);
    const r = Math.round(x);
    // Math.round takes halves up; nearbyint takes them to even.
    const even = r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
    values[i] = Math.max(-127, Math.min(127, even));
  }
  return { values, scales };
}

/** The four projection matrices of a workload's data (makeData), quantized. */
export function int8Weights(data) {
  const out = {};
  for (const m of ['wq', 'wk', 'wv', 'wo']) out[m] = quantizeInt8(data[m], data.d, data.d);
  return out;
}
