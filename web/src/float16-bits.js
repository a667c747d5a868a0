// float16 bits widened to float32 bits, which safetensors' F16 tensors
// (safetensors.js) and the q4 blocks' scales (float16.js) share: a file of
// its own so that the main entry, which reads safetensors, carries this
// alone and not the rest of float16.js, which only the pool and the
// quantized-weights entry use.

// IEEE half -> float32 bits, exactly (every half is a float32; a NaN keeps
// its payload).
export function float16ToFloat32Bits(h) {
  const sign = (h & 0x8000) << 16;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0x1f) return sign | 0x7f800000 | (fraction << 13); // inf, NaN
  if (exponent !== 0) return sign | ((exponent + 112) << 23) | (fraction << 13);
  if (fraction === 0) return sign; // +-0
  // Subnormal half: normalise the fraction into a float32 exponent.
  let e = 113;
  let f = fraction;
  while ((f & 0x400) === 0) { f <<= 1; e--; }
  return sign | (e << 23) | ((f & 0x3ff) << 13);
}
