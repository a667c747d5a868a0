// Writes safetensors files in tests, so that checkpoints are made from the
// golden cases at run time instead of downloaded. The float16 and bfloat16
// encoders round to nearest, ties to even, as torch's .half() and
// .bfloat16() do; the decoders are written from the formats' definitions,
// independently of the package's.

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function bitsOf(x) {
  f32[0] = x;
  return u32[0];
}

// Drops the low `shift` bits of `value`, rounding to nearest, ties to even.
function roundShift(value, shift) {
  const kept = Math.floor(value / 2 ** shift);
  const rest = value - kept * 2 ** shift;
  const half = 2 ** (shift - 1);
  return rest > half || (rest === half && kept % 2 === 1) ? kept + 1 : kept;
}

export function floatToHalf(x) {
  const b = bitsOf(x);
  const sign = (b >>> 16) & 0x8000;
  const exponent = (b >>> 23) & 0xff;
  const fraction = b & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (fraction === 0 ? 0 : 0x200);
  const e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // A half subnormal: fraction * 2^-24 with the implicit bit made explicit.
    if (e < -10) return sign;
    return sign | roundShift(fraction | 0x800000, 14 - e);
  }
  // A carry out of the fraction rounds up into the exponent, as it should.
  return sign | roundShift((e << 23) | fraction, 13);
}

export function floatToBfloat16(x) {
  const b = bitsOf(x);
  if ((b & 0x7f800000) === 0x7f800000 && (b & 0x7fffff) !== 0) return (b >>> 16) | 0x40;
  return roundShift(b, 16) & 0xffff;
}

export function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0x1f) return f === 0 ? sign * Infinity : NaN;
  return e === 0 ? sign * f * 2 ** -24 : sign * (1 + f / 1024) * 2 ** (e - 15);
}

export function bfloat16ToFloat(h) {
  const view = new DataView(new ArrayBuffer(4));
  view.setUint16(0, h, false);
  return view.getFloat32(0, false);
}

// What a value of `dtype` holds after the round trip through it.
export function roundTo(dtype, data) {
  if (dtype === 'F32') return Float32Array.from(data);
  if (dtype === 'F16') return Float32Array.from(data, (x) => halfToFloat(floatToHalf(x)));
  return Float32Array.from(data, (x) => bfloat16ToFloat(floatToBfloat16(x)));
}

function encode(dtype, data) {
  if (dtype === 'F32') return new Uint8Array(Float32Array.from(data).buffer);
  const halves = Uint16Array.from(data, dtype === 'F16' ? floatToHalf : floatToBfloat16);
  return new Uint8Array(halves.buffer);
}

/**
 * tensors: { name: { data: Float32Array, shape, dtype?: 'F32' | 'F16' | 'BF16' }
 * or { bytes: Uint8Array, shape, dtype } for raw data }, written in order.
 * header: changes applied to the JSON header before it is written.
 */
export function writeSafetensors(tensors, { metadata, header: edit } = {}) {
  const header = metadata ? { __metadata__: metadata } : {};
  const blobs = [];
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    const bytes = t.bytes ?? encode(t.dtype ?? 'F32', t.data);
    header[name] = { dtype: t.dtype ?? 'F32', shape: t.shape, data_offsets: [offset, offset + bytes.length] };
    blobs.push(bytes);
    offset += bytes.length;
  }
  edit?.(header);
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let at = 8 + json.length;
  for (const b of blobs) { out.set(b, at); at += b.length; }
  return out;
}
