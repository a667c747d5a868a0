// float16 values from their bits and back, for the q4 blocks' scales
// (GGUF q4_0 holds them as float16).
import { float16ToFloat32Bits } from './float16-bits.js';

const scratchBits = new Uint32Array(1);
const scratchFloat = new Float32Array(scratchBits.buffer);

// The value of float16 `bits`.
export function float16Value(bits) {
  scratchBits[0] = float16ToFloat32Bits(bits);
  return scratchFloat[0];
}

function roundHalfEven(v) {
  const f = Math.floor(v), r = v - f;
  return r > 0.5 || (r === 0.5 && f % 2 === 1) ? f + 1 : f;
}

// The bits of the float16 nearest `x` (ties to even, as C++ narrows a
// float16 scale; beyond float16's range, an infinity).
export function float16Bits(x) {
  if (Number.isNaN(x)) return 0x7e00;
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0, a = Math.abs(x);
  if (a >= 65520) return sign | 0x7c00;
  if (a < 2 ** -14) return sign | roundHalfEven(a * 2 ** 24);  // 1024: the smallest normal
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) --e;
  else if (2 ** (e + 1) <= a) ++e;
  // A significand that rounds up to 2048 carries into the exponent.
  return sign | (((e + 15) << 10) + roundHalfEven(a * 2 ** (10 - e)) - 1024);
}
